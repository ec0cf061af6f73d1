//! What the cluster layer uses from the manifest and merge/plan work, in one
//! place. TEMPORARY stand-ins with the agreed signatures until those
//! branches are merged; then this file becomes plain re-exports.
#![allow(dead_code)]

use crate::merge::{LAST_APPLIED, Patch, PatchType};
use crate::patchmeta::Schema;
use crate::plan::{ObjectAction, ObjectPlan};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectId {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectId {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl std::fmt::Display for ObjectId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Source {
    pub file: PathBuf,
    pub line: usize,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

#[derive(Debug, Clone)]
pub struct Manifest {
    pub id: ObjectId,
    pub object: Value,
    pub source: Source,
    pub lines: BTreeMap<String, usize>,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct ManifestError(pub String);

#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    pub paths: Vec<PathBuf>,
    pub recursive: bool,
    pub namespace: Option<String>,
    pub default_namespace: String,
}

#[derive(Debug, Default)]
pub struct Loaded {
    pub manifests: Vec<Manifest>,
    pub errors: Vec<ManifestError>,
}

pub fn load(_opts: &LoadOptions) -> Loaded {
    Loaded::default()
}

#[derive(Debug, Clone, Default)]
pub struct PlanOptions {}

pub struct ThreeWay {
    pub fields: Vec<crate::merge::FieldChange>,
    pub patch: Option<Patch>,
    pub last_applied: Value,
    pub annotation: String,
}

pub fn three_way(
    config: &Value,
    _live: &Value,
    _last_applied: Option<&Value>,
    _schema: Option<Schema<'_>>,
) -> Result<ThreeWay, crate::merge::MergeError> {
    Ok(ThreeWay {
        fields: vec![],
        patch: Some(Patch {
            kind: PatchType::Merge,
            body: config.clone(),
        }),
        last_applied: config.clone(),
        annotation: config.to_string(),
    })
}

pub fn creation_body(config: &Value) -> Value {
    let mut body = config.clone();
    body["metadata"]["annotations"][LAST_APPLIED] = Value::String(config.to_string());
    body
}

pub fn plan_object(m: &Manifest, live: Option<&Value>, _opts: &PlanOptions) -> ObjectPlan {
    ObjectPlan {
        api_version: m.id.api_version(),
        kind: m.id.kind.clone(),
        namespace: m.id.namespace.clone(),
        name: m.id.name.clone(),
        source: Some(m.source.to_string()),
        action: if live.is_some() {
            ObjectAction::Update
        } else {
            ObjectAction::Create
        },
        fields: vec![],
        patch: None,
        last_applied: Some(m.object.clone()),
        warnings: vec![],
        error: None,
        prune_reason: None,
        config: Some(m.object.clone()),
        live: live.cloned(),
    }
}

pub fn prune_candidate(live: &Value, reason: String) -> ObjectPlan {
    let s = |p: &str| {
        live.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    ObjectPlan {
        api_version: s("/apiVersion"),
        kind: s("/kind"),
        namespace: live
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_string),
        name: s("/metadata/name"),
        source: None,
        action: ObjectAction::Prune,
        fields: vec![],
        patch: None,
        last_applied: None,
        warnings: vec![],
        error: None,
        prune_reason: Some(reason),
        config: None,
        live: Some(live.clone()),
    }
}

pub fn partial_config(
    config: &Value,
    _last_applied: Option<&Value>,
    _accepted: &[String],
) -> Value {
    config.clone()
}
