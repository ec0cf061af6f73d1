//! The operations the TUI and the CLI ask of a cluster, as data.
//!
//! The TUI's runtime calls an [`Engine`]; the cluster layer implements it
//! against a real API server (kube-rs), tests implement it with fakes.
//! Keeping this seam narrow lets `App::update` stay free of I/O.

use crate::plan::{ObjectPlan, Plan};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// Progress of long work (fetching live state), sent as it happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    pub what: String,
}

/// One object to apply: its plan, and optionally only some of its field
/// changes (partial apply: the skipped changes stay pending).
#[derive(Debug, Clone)]
pub struct ApplyItem {
    pub plan: ObjectPlan,
    /// `None`: apply the whole config. `Some(paths)`: apply last-applied
    /// plus only these field changes.
    pub accepted_fields: Option<Vec<String>>,
    /// `clear` rows released instead of cleared: dropped from the
    /// last-applied annotation, no deletion sent, the live value stays
    /// (another writer owns the field from then on).
    pub released_fields: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

/// The outcome of one object of an apply, delete or prune.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectResult {
    /// `Deployment default/nginx`
    pub object: String,
    pub ok: bool,
    /// `created`, `configured`, `unchanged`, `deleted`, `pruned`, or the
    /// server's error message.
    pub message: String,
}

/// What the TUI needs from a cluster.
pub trait Engine: Send + Sync {
    /// Read manifests and live state, and build the plan (prune candidates
    /// included when pruning is configured).
    fn load(
        &self,
        progress: tokio::sync::mpsc::UnboundedSender<Progress>,
    ) -> BoxFuture<'_, Result<Plan, String>>;
    /// Server-side dry run of an apply: what the server would say.
    fn dry_run(&self, items: Vec<ApplyItem>) -> BoxFuture<'_, Vec<ObjectResult>>;
    fn apply(&self, items: Vec<ApplyItem>) -> BoxFuture<'_, Vec<ObjectResult>>;
    /// Delete objects (the `D` key).
    fn delete(
        &self,
        objects: Vec<ObjectPlan>,
        propagation: Propagation,
    ) -> BoxFuture<'_, Vec<ObjectResult>>;
    /// Delete prune candidates (reported as pruned).
    fn prune(&self, objects: Vec<ObjectPlan>) -> BoxFuture<'_, Vec<ObjectResult>>;
}
