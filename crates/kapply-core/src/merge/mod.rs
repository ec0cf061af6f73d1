//! The three-way merge engine, following kubectl's client-side apply.
//! No I/O: plain functions over `serde_json::Value`.
//!
//! Inputs: the config (the file), the live object and the last-applied
//! configuration (from the annotation; `None` when absent). Outputs: the
//! field plan, the patch kubectl would send and the new annotation.

use crate::fieldpath::FieldPath;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The annotation kubectl apply keeps the last applied configuration in.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The value of an object's last-applied annotation (a string when kubectl
/// wrote it), if it has one.
pub fn last_applied_value(obj: &Value) -> Option<&Value> {
    obj.get("metadata")?.get("annotations")?.get(LAST_APPLIED)
}

/// What apply does to one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldAction {
    /// The config value differs from live: apply writes it.
    Set,
    /// In last-applied but gone from the config, or an explicit null: apply removes it.
    Clear,
    /// Live only, named by neither config nor last-applied: owned by another writer.
    Keep,
}

/// One leaf (or keyed list element) of the field plan. Serialized by
/// hand (`explain`): its `reason` is worded with the row's owner.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldChange {
    /// Dotted path; keyed list elements by key:
    /// `spec.template.spec.containers[name=nginx].image`.
    pub path: FieldPath,
    /// A side with no value is `None` (omitted in JSON), so an explicit
    /// null stays distinguishable.
    #[serde(default, deserialize_with = "present::deserialize")]
    pub config: Option<Value>,
    #[serde(default, deserialize_with = "present::deserialize")]
    pub live: Option<Value>,
    #[serde(default, deserialize_with = "present::deserialize")]
    pub last_applied: Option<Value>,
    pub action: FieldAction,
    pub reason: Reason,
    /// Why the field differs, or why it is kept (JSON `cause`).
    #[serde(default)]
    pub cause: Cause,
    /// The manager (managedFields) that wrote the live value, where the
    /// cause names one: the other writer of a kept field, the writer of
    /// a drift.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// When `owner` last wrote (managedFields `time`), for drift.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_at: Option<String>,
    /// What kubectl does here without saying so (JSON `hazards`, omitted
    /// when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hazards: Vec<Hazard>,
}

/// Why a field row exists: who made config and live differ, or whose
/// field apply keeps. Serialized as the stable `cause` key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// The config differs from last-applied: the manifest changed.
    #[default]
    Intended,
    /// Live differs from last-applied while the config still equals it:
    /// a change made in the cluster, which apply reverts.
    Drift,
    /// In the config, not in last-applied (every field of a new object).
    New,
    /// In last-applied, gone from the config: apply deletes it.
    Removed,
    /// Kept: defaulted by the server when apply wrote the object.
    ServerDefault,
    /// Kept: written by another manager (`owner`), not named by apply; or
    /// written by apply's manager alone but released by apply (not a value
    /// the server defaults, reason [`Reason::Released`]).
    OtherWriter,
    /// The live object has no last-applied annotation: apply never managed
    /// it, so it cannot tell an intended change from a drift.
    Unmanaged,
}

impl Cause {
    /// The JSON value: `intended`, `drift`, `server-default`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Intended => "intended",
            Cause::Drift => "drift",
            Cause::New => "new",
            Cause::Removed => "removed",
            Cause::ServerDefault => "server-default",
            Cause::OtherWriter => "other-writer",
            Cause::Unmanaged => "unmanaged",
        }
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of silent loss a field row risks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HazardKind {
    /// Several list elements share a merge key: apply keeps one.
    DuplicateMergeKey,
    /// A list removed from the config deletes elements other writers added.
    DeletesOthersElements,
    /// An atomic list replaced whole drops another writer's edits.
    ReplacesOthersEdits,
    /// Drift revert of a container image: a hotfix is rolled back.
    RevertsHotfix,
    /// spec.replicas set while an autoscaler owns it.
    FightsAutoscaler,
    /// The config changes a field someone changed in the cluster since the
    /// last apply: their value is replaced.
    OverwritesClusterChange,
}

/// A silent consequence of applying one field, in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hazard {
    pub kind: HazardKind,
    pub message: String,
}

impl FieldChange {
    /// Whether applying this row undoes a change made in the cluster: a
    /// drift it reverts, or a field the config changes over someone's
    /// change (hazard `overwrites-cluster-change`). The TUI marks it ↺.
    pub fn undoes_cluster_change(&self) -> bool {
        self.action != FieldAction::Keep
            && (self.cause == Cause::Drift
                || self
                    .hazards
                    .iter()
                    .any(|h| h.kind == HazardKind::OverwritesClusterChange))
    }
}

/// Serde helper: an explicit `null` reads as `Some(Value::Null)`, distinct
/// from an absent key (written so by `explain`'s `Serialize`).
mod present {
    use serde::{Deserialize, Deserializer};
    use serde_json::Value;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
        Value::deserialize(d).map(Some)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PatchType {
    /// `application/strategic-merge-patch+json` (built-in kinds)
    Strategic,
    /// `application/merge-patch+json`, RFC 7386 (custom resources)
    Merge,
}

impl PatchType {
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Strategic => "application/strategic-merge-patch+json",
            PatchType::Merge => "application/merge-patch+json",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Patch {
    #[serde(rename = "type")]
    pub kind: PatchType,
    pub body: Value,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MergeError {
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

pub mod apply;

mod causes;
mod explain;
mod fields;
mod hazards;
mod jsonmerge;
mod owners;
mod predict;
mod reason;
mod recorded;
mod strategic;

pub use causes::{classify, reverts_drift};
pub use explain::Form;
pub use hazards::{ListFacts, list_facts};
pub use owners::{APPLY_MANAGERS, FieldOwners, Writer, is_apply_manager};
pub use predict::values_at;
pub use reason::Reason;
pub use recorded::{
    BadAnnotation, LiveMergeError, Recorded, creation_body, last_applied_annotation,
    read_last_applied,
};

pub use strategic::deep_eq;

use crate::fieldpath as path;
use crate::patchmeta::Schema;
use serde_json::Map;

/// The result of the three-way merge for one object.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreeWay {
    /// Per leaf / keyed element: the three sides, the action and why.
    pub fields: Vec<FieldChange>,
    /// `None`: kubectl would send nothing (the patch is `{}`).
    pub patch: Option<Patch>,
    /// The new last-applied configuration (the annotation, parsed).
    pub last_applied: Value,
    /// The new annotation value, exactly as kubectl writes it.
    pub annotation: String,
    /// The object the server will hold after the patch differs from live
    /// (see [`predict`]): `false` when kubectl would send nothing, and when
    /// what it sends leaves live as it is (a `$setElementOrder` alone).
    pub changes: bool,
    /// The result differs from live beyond the last-applied annotation:
    /// what `kubectl diff` shows (it sends the patch without the annotation).
    pub changes_live: bool,
}

fn as_map<'v>(v: &'v Value, what: &str) -> Result<&'v Map<String, Value>, MergeError> {
    match v {
        Value::Object(m) => Ok(m),
        _ => Err(MergeError::Invalid {
            path: what.into(),
            message: "not a JSON object".into(),
        }),
    }
}

fn compute_patch(
    modified: &Value,
    live: &Value,
    last_applied: Option<&Value>,
    schema: Option<Schema>,
) -> Result<Option<Patch>, MergeError> {
    let modified = as_map(modified, "config")?;
    let current = as_map(live, "live object")?;
    let empty = Map::new();
    let original = match last_applied {
        Some(v) => as_map(v, "last-applied configuration")?,
        None => &empty,
    };
    let (kind, body) = match schema {
        Some(s) => (
            PatchType::Strategic,
            strategic::three_way(original, modified, current, Some(s))?,
        ),
        None => (
            PatchType::Merge,
            jsonmerge::three_way(original, modified, current)?,
        ),
    };
    Ok((!body.is_empty()).then_some(Patch {
        kind,
        body: Value::Object(body),
    }))
}

/// The dry-run patch `kubectl diff` sends for an existing object: the same
/// computation without the annotation update, plus the live
/// `metadata.resourceVersion`. `None`: no difference, nothing is sent.
pub fn diff_patch(
    config: &Value,
    live: &Value,
    last_applied: Option<&Value>,
    schema: Option<Schema>,
) -> Result<Option<Patch>, MergeError> {
    let mut patch = compute_patch(
        &recorded::recorded_config(config),
        live,
        last_applied,
        schema,
    )?;
    if let (Some(p), Some(rv)) = (
        patch.as_mut(),
        path::pointer(live, "/metadata/resourceVersion").cloned(),
    ) && let Some(body) = p.body.as_object_mut()
    {
        let md = body
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(md) = md.as_object_mut() {
            md.insert("resourceVersion".into(), rv);
        }
    }
    Ok(patch)
}

/// kubectl's client-side apply for one existing object: the field plan, the
/// patch it sends (strategic merge patch for built-in kinds, `schema` Some;
/// JSON merge patch for custom resources) and the new annotation.
pub fn three_way(
    config: &Value,
    live: &Value,
    last_applied: Option<&Value>,
    schema: Option<Schema>,
) -> Result<ThreeWay, MergeError> {
    three_way_recorded(Recorded::new(config), live, last_applied, schema)
}

/// [`three_way`] of a config already [`Recorded`].
fn three_way_recorded(
    recorded: Recorded,
    live: &Value,
    last_applied: Option<&Value>,
    schema: Option<Schema>,
) -> Result<ThreeWay, MergeError> {
    // One copy of the config serves as all three: the recorded config (the
    // annotation's value and the new last-applied), the same with the
    // annotation set (what the patch is computed from), and the tree the
    // field rows walk.
    let Recorded {
        value: mut recorded,
        annotation,
        ..
    } = recorded;
    recorded::set_annotation(&mut recorded, Some(annotation.clone()));
    let patch = compute_patch(&recorded, live, last_applied, schema);
    recorded::set_annotation(&mut recorded, None);
    let patch = patch?;
    let mut walker = fields::Walker::new(schema.is_none());
    // Walk the config as recorded (with `annotations: {}`), as the patch
    // was computed from it.
    walker.walk(
        Some(&recorded),
        Some(live),
        last_applied,
        schema,
        patch.as_ref().map(|p| &p.body),
    );
    // Rows are changes only where the result differs from live.
    let prediction = predict::Prediction::new(live, patch.as_ref(), schema);
    let mut listed = predict::keep_changes(&mut walker.rows, &prediction);
    // kubectl records `annotations: {}` when the config has none; on a live
    // object without annotations that map walks as a row of its own, yet
    // all the patch sends there is the annotation: the row says that.
    let empty_map = walker.rows.iter().position(|r| {
        r.path == "metadata.annotations"
            && r.live.is_none()
            && r.config
                .as_ref()
                .and_then(Value::as_object)
                .is_some_and(Map::is_empty)
    });
    if let Some(i) = empty_map {
        walker.rows.remove(i);
        listed = walker.rows.iter().any(|r| {
            r.action != FieldAction::Keep
                && (!matches!(r.reason, Reason::SharedMergeKey { .. })
                    || prediction.changes_at(&r.path))
        });
    }
    let changes_live = listed || prediction.changes_anywhere(true);
    // A patch that changes nothing but the annotation still makes an update.
    let mut changes = changes_live;
    if let (Some(p), true) = (&patch, !listed || empty_map.is_some()) {
        let old = last_applied_value(live).cloned();
        let sent = last_applied_value(&p.body).is_some();
        changes |= sent;
        if sent {
            let row = FieldChange {
                path: FieldPath::from("metadata.annotations").key(LAST_APPLIED),
                config: Some(Value::String(annotation.clone())),
                reason: if old.is_none() {
                    Reason::AddsAnnotation
                } else {
                    Reason::AnnotationOnly
                },
                live: old,
                last_applied: None,
                action: FieldAction::Set,
                cause: Cause::Intended,
                owner: None,
                changed_at: None,
                hazards: vec![],
            };
            let at = empty_map.unwrap_or(walker.rows.len());
            walker.rows.insert(at, row);
        }
    }
    // managedFields are read once, when a row first needs an owner.
    let owners = owners::LazyOwners::new(live);
    causes::classify_with(&mut walker.rows, &owners, last_applied);
    hazards::find(&mut walker.rows, &owners, patch.as_ref(), schema, &|| {
        prediction.result()
    });
    Ok(ThreeWay {
        fields: walker.rows,
        patch,
        last_applied: recorded,
        annotation,
        changes,
        changes_live,
    })
}

/// The object the server will hold once `patch` (`None`: nothing sent) is
/// applied to `live`: merged as the server merges it, then defaulted.
/// `None` when the patch cannot be merged (the server would refuse it).
pub fn predicted(live: &Value, patch: Option<&Patch>, schema: Option<Schema>) -> Option<Value> {
    predict::Prediction::new(live, patch, schema)
        .result()
        .cloned()
}

/// The field plan for an object that does not exist yet: every leaf of the
/// config is set.
pub fn create_fields(config: &Value, schema: Option<Schema>) -> Vec<FieldChange> {
    let mut walker = fields::Walker::new(schema.is_none());
    walker.walk(Some(config), None, None, schema, None);
    for row in &mut walker.rows {
        row.reason = Reason::NewObject;
        row.cause = Cause::New;
    }
    walker.rows
}
