//! The plan: for every object, what apply (or prune) will do, field by field.
//! No I/O. Its JSON form (`kapply plan -o json`) is stable: scripts read it.

use crate::merge::{FieldChange, Patch};
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObjectAction {
    Create,
    Update,
    Unchanged,
    Prune,
    Error,
}

/// One object of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectPlan {
    pub api_version: String,
    pub kind: String,
    /// `None` (JSON null) for cluster-scoped objects.
    pub namespace: Option<String>,
    pub name: String,
    /// `file:line` of the manifest; `None` for prune candidates.
    pub source: Option<String>,
    pub action: ObjectAction,
    pub fields: Vec<FieldChange>,
    pub patch: Option<Patch>,
    /// The new last-applied configuration (what the annotation will hold).
    pub last_applied: Option<Value>,
    pub warnings: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why a prune candidate is one (allowlist or ApplySet membership).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prune_reason: Option<String>,
    /// The config as read (not serialized: the plan JSON stays compact).
    #[serde(skip)]
    pub config: Option<Value>,
    /// The live object when it exists.
    #[serde(skip)]
    pub live: Option<Value>,
}

/// The whole plan, in manifest order, prune candidates last.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub objects: Vec<ObjectPlan>,
}
