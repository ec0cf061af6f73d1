//! The three-way merge engine, following kubectl's client-side apply.
//! No I/O: plain functions over `serde_json::Value`.
//!
//! Inputs: the config (the file), the live object and the last-applied
//! configuration (from the annotation; `None` when absent). Outputs: the
//! field plan, the patch kubectl would send and the new annotation.

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

/// One leaf (or keyed list element) of the field plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldChange {
    /// Dotted path; keyed list elements by key:
    /// `spec.template.spec.containers[name=nginx].image`.
    pub path: String,
    /// A side with no value is `None` (omitted in JSON), so an explicit
    /// null stays distinguishable.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "present")]
    pub config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "present")]
    pub live: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "present")]
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

    /// The cause as a short tag for one-line output: `intended`,
    /// `other-writer: kubectl`, `drift: kubectl-edit at 2026-11-20T10:04:00Z`.
    pub fn cause_tag(&self) -> String {
        let mut s = self.cause.as_str().to_string();
        if let Some(o) = &self.owner {
            s.push_str(": ");
            s.push_str(o);
        }
        if let Some(t) = &self.changed_at {
            s.push_str(if self.owner.is_some() {
                " at "
            } else {
                ": at "
            });
            s.push_str(t);
        }
        s
    }

    /// The cause in words: `drift: changed by kubectl-edit at
    /// 2026-11-20T10:04:00Z; apply reverts it`.
    pub fn cause_text(&self) -> String {
        let owner = self.owner.as_deref();
        match self.cause {
            Cause::Intended | Cause::Removed
                if self.owner.is_some() || self.changed_at.is_some() =>
            {
                let mut s = String::from(if self.cause == Cause::Intended {
                    "intended: the manifest changed, over a change made in the cluster"
                } else {
                    "removed: in last-applied, not in the config, and changed in the cluster"
                });
                if let Some(o) = owner {
                    s.push_str(" by ");
                    s.push_str(o);
                }
                if let Some(t) = &self.changed_at {
                    s.push_str(" at ");
                    s.push_str(t);
                }
                s
            }
            Cause::Intended => "intended: the manifest changed".into(),
            Cause::Drift => {
                let mut s = String::from("drift: changed ");
                match owner {
                    Some(o) => {
                        s.push_str("by ");
                        s.push_str(o);
                    }
                    None => s.push_str("in the cluster"),
                }
                if let Some(t) = &self.changed_at {
                    s.push_str(" at ");
                    s.push_str(t);
                }
                s.push_str("; apply reverts it");
                s
            }
            Cause::New => "new: in the config, not in last-applied".into(),
            Cause::Removed => "removed: in last-applied, not in the config".into(),
            Cause::ServerDefault if self.reason == Reason::ServerSet => {
                "server-default: set by the server as it stored the object (owned by no \
                 writer); kept"
                    .into()
            }
            Cause::ServerDefault => "server-default: defaulted by the server; kept".into(),
            Cause::OtherWriter => match owner {
                Some(o) => format!("other-writer: {o} owns it; kept"),
                None if self.reason == Reason::Released => {
                    "other-writer: released by apply, another writer's from now on; kept".into()
                }
                None if self.reason == Reason::UnknownWriter => format!(
                    "other-writer: {} ({}); kept",
                    reason::NO_MANAGED_FIELDS,
                    reason::SHOW_OWNERS
                ),
                None => "other-writer: not in config or last-applied; kept".into(),
            },
            Cause::Unmanaged => {
                "unmanaged: no last-applied annotation, so apply cannot tell a change from a drift"
                    .into()
            }
        }
    }
}

/// Serde helper: `Some(Value::Null)` must round-trip as an explicit `null`,
/// distinct from an absent key.
mod present {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    pub fn serialize<S: Serializer>(v: &Option<Value>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => v.serialize(s),
            None => s.serialize_none(),
        }
    }

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
mod fields;
mod hazards;
mod jsonmerge;
mod owners;
mod predict;
mod reason;
mod strategic;

pub use causes::{classify, reverts_drift};
pub use hazards::{ListFacts, list_facts};
pub use owners::{APPLY_MANAGERS, FieldOwners, Writer, is_apply_manager};
pub use predict::values_at;
pub use reason::Reason;

pub use strategic::deep_eq;

use crate::fieldpath as path;
use crate::jsonread::AnnotationsAt;
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

/// The config as kubectl records it: the annotation removed from its own
/// value, and `annotations: {}` when no other annotation is left.
fn recorded_config(config: &Value) -> Value {
    let mut v = config.clone();
    // The recorded form is the point here: nothing to restore.
    let _ = Unrecord::record(&mut v);
    v
}

/// How a config was turned into its recorded form in place (see
/// [`recorded_config`]), to turn it back: so an unchanged config can stand
/// for its own last-applied configuration for a while, instead of a copy.
#[must_use = "the config stays in its recorded form unless restored"]
pub struct Unrecord(Option<Undo>);

enum Undo {
    /// `annotations` was absent: `{}` was put there.
    Remove,
    /// `annotations` was this value, not a map.
    Restore(Value),
    /// The map held this last-applied annotation, taken out.
    Reinsert(Value),
}

impl Unrecord {
    /// `v` made what [`recorded_config`] gives for it.
    pub fn record(v: &mut Value) -> Unrecord {
        let Some(md) = v.get_mut("metadata").and_then(Value::as_object_mut) else {
            return Unrecord(None);
        };
        let Some(ann) = md.get_mut("annotations") else {
            md.insert("annotations".into(), Value::Object(Map::new()));
            return Unrecord(Some(Undo::Remove));
        };
        match ann {
            Value::Object(a) => Unrecord(a.remove(LAST_APPLIED).map(Undo::Reinsert)),
            other => Unrecord(Some(Undo::Restore(std::mem::replace(
                other,
                Value::Object(Map::new()),
            )))),
        }
    }

    /// `v` as it was before [`Unrecord::record`] (maps are sorted, so a
    /// key put back is where it was).
    pub fn restore(self, v: &mut Value) {
        let Some(undo) = self.0 else { return };
        let Some(md) = v.get_mut("metadata").and_then(Value::as_object_mut) else {
            return;
        };
        match undo {
            Undo::Remove => {
                md.remove("annotations");
            }
            Undo::Restore(old) => {
                md.insert("annotations".into(), old);
            }
            Undo::Reinsert(old) => {
                if let Some(a) = md.get_mut("annotations").and_then(Value::as_object_mut) {
                    a.insert(LAST_APPLIED.into(), old);
                }
            }
        }
    }
}

/// The last-applied-configuration annotation value kubectl writes for this
/// config: compact JSON, keys sorted, trailing newline.
pub fn last_applied_annotation(config: &Value) -> String {
    Recorded::new(config).annotation
}

/// Set (`Some`) or take out (`None`) the annotation on a recorded config,
/// whose `metadata.annotations` is a map.
fn set_annotation(v: &mut Value, text: Option<String>) {
    if let Some(a) = v
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        match text {
            Some(t) => {
                a.insert(LAST_APPLIED.into(), Value::String(t));
            }
            None => {
                a.remove(LAST_APPLIED);
            }
        }
    }
}

/// The POST body kubectl sends to create the object: the manifest with the
/// annotation, null values dropped (kubectl 1.31+; they stay in the
/// annotation).
pub fn creation_body(config: &Value) -> Value {
    let Recorded {
        value: mut body,
        annotation,
        ..
    } = Recorded::new(config);
    set_annotation(&mut body, Some(annotation));
    fields::drop_nulls(&mut body);
    body
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
    let mut patch = compute_patch(&recorded_config(config), live, last_applied, schema)?;
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

/// The config as kubectl records it (the annotation's value, and the new
/// last-applied configuration) and the annotation it writes for it.
pub struct Recorded {
    value: Value,
    annotation: String,
    /// A float is written in the annotation (spelled otherwise than its
    /// value reads back: `1.0` is written `1`).
    floats: bool,
}

impl Recorded {
    /// The length in bytes of the last-applied annotation this config
    /// records.
    pub fn annotation_len(&self) -> usize {
        self.annotation.len()
    }

    pub fn new(config: &Value) -> Recorded {
        let value = recorded_config(config);
        // Room for a typical object's annotation, so it is seldom moved
        // while it grows.
        let mut annotation = String::with_capacity(1024);
        let floats = crate::gocompat::write_json_floats(&value, &mut annotation);
        annotation.push('\n');
        Recorded {
            value,
            annotation,
            floats,
        }
    }

    /// The config read from its compact JSON text (as serde_json writes
    /// it: a manifest's packed object), and the config recorded. Where the
    /// text is plain (no escape, no float, no `<`, `>`, `&` or U+2028/9) it
    /// is already the annotation kubectl writes but for `annotations: {}`:
    /// that is put in (or the text taken whole), not written from the value.
    pub fn decode(text: &str) -> serde_json::Result<(Value, Recorded)> {
        let (config, at) = crate::jsonread::from_str_marked(text)?;
        let recorded = match at.and_then(|at| annotation_from_text(&config, text, at)) {
            Some(annotation) => Recorded {
                value: recorded_config(&config),
                annotation,
                floats: false,
            },
            None => Recorded::new(&config),
        };
        Ok((config, recorded))
    }

    /// Whether `text` (a live object's annotation) reads back as exactly
    /// the recorded config: `text` is the annotation this config writes and
    /// no float in it is spelled otherwise in JSON (`1.0` is written `1`,
    /// which reads back as an integer). Then the recorded config (or the
    /// config made so by [`Unrecord::record`]) stands for it, instead of
    /// parsing `text`.
    pub fn reads_back(&self, text: &str) -> bool {
        !self.floats && text == self.annotation
    }

    /// The value `text` (a live object's annotation) reads as, when it is
    /// this config's annotation with the text of one string value changed
    /// (an image bumped), no escape in it: the recorded config with that
    /// string set, a copy instead of parsing `text`. `None` otherwise. The
    /// plan swaps the string in place instead ([`Recorded::string_edit`]);
    /// this copy is what the tests compare with parsing.
    #[cfg(test)]
    pub fn read_back_edited(&self, text: &str) -> Option<Value> {
        let mut edit = self.string_edit(text)?;
        let mut v = self.value.clone();
        edit.swap(&mut v).then_some(v)
    }

    /// Where `text` differs from this config's annotation, when it differs
    /// in the text of one string value alone, no escape in it (see
    /// [`Recorded::read_back_edited`]): that string's place and its text in
    /// `text`. `None` otherwise.
    pub fn string_edit(&self, text: &str) -> Option<StringEdit> {
        if self.floats {
            return None;
        }
        let (new, old) = (self.annotation.as_bytes(), text.as_bytes());
        let prefix = common_prefix(new, old);
        let room = new.len().min(old.len()) - prefix;
        let suffix = common_suffix(new, old).min(room);
        // The string value of the annotation the first difference is in;
        // the last one must be in it too.
        let (path, start, end) = string_at(&self.annotation, prefix)?;
        if new.len() - suffix > end {
            return None;
        }
        // Its text in `text`: the same start, the end moved by the change
        // in length; all of it read as written (no quote, escape, control).
        let old_end = (end + old.len()).checked_sub(new.len())?;
        let content = text.get(start..old_end)?;
        if content.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
            return None;
        }
        Some(StringEdit {
            path: path
                .into_iter()
                .map(|s| match s {
                    Step::Key(k) => Err(k.to_owned()),
                    Step::Index(i) => Ok(i),
                })
                .collect(),
            text: content.to_owned(),
        })
    }

    /// The annotation's value as it reads back: the recorded config itself
    /// unless a float in it is spelled otherwise in JSON.
    pub fn into_read_back(self) -> Option<Value> {
        if self.floats {
            serde_json::from_str(&self.annotation).ok()
        } else {
            Some(self.value)
        }
    }
}

/// One string value of a recorded config and another text for it (see
/// [`Recorded::string_edit`]).
pub struct StringEdit {
    /// The steps to it: a map key (`Err`) or a list index (`Ok`).
    path: Vec<Result<usize, String>>,
    text: String,
}

impl StringEdit {
    /// Swap the text of the string at this edit's place in `v` with the
    /// edit's: done twice, `v` is as it was. False (`v` untouched) where
    /// `v` holds no string there.
    pub fn swap(&mut self, v: &mut Value) -> bool {
        let mut leaf = Some(v);
        for step in &self.path {
            leaf = leaf.and_then(|l| match step {
                Err(k) => l.as_object_mut()?.get_mut(k.as_str()),
                Ok(i) => l.as_array_mut()?.get_mut(*i),
            });
        }
        match leaf {
            Some(Value::String(s)) => {
                std::mem::swap(s, &mut self.text);
                true
            }
            _ => false,
        }
    }
}

/// The annotation of the config read from `text` (see [`Recorded::decode`]),
/// from the text itself; `None` where it must be written from the value.
fn annotation_from_text(config: &Value, text: &str, at: AnnotationsAt) -> Option<String> {
    // Go escapes these (HTML and U+2028/9, E2 80 A8/9); serde_json not.
    if memchr::memchr3(b'<', b'>', b'&', text.as_bytes()).is_some()
        || memchr::memchr(0xe2, text.as_bytes()).is_some()
    {
        return None;
    }
    let md = config.get("metadata")?.as_object()?;
    let mut out = String::with_capacity(text.len() + 20);
    match md.get("annotations") {
        None => {
            out.push_str(text.get(..at.at)?);
            out.push_str(at.text);
            out.push_str(text.get(at.at..)?);
        }
        // Recorded as it is.
        Some(Value::Object(a)) if !a.contains_key(LAST_APPLIED) => out.push_str(text),
        Some(_) => return None,
    }
    out.push('\n');
    Some(out)
}

/// How many bytes `a` and `b` start with alike, compared eight at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let mut i = 0;
    while let (Some(x), Some(y)) = (a.get(i..i + 8), b.get(i..i + 8)) {
        if x != y {
            break;
        }
        i += 8;
    }
    i + a[i..]
        .iter()
        .zip(&b[i..])
        .take_while(|(x, y)| x == y)
        .count()
}

/// How many bytes `a` and `b` end with alike, compared eight at a time.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let mut n = 0;
    while n + 8 <= a.len().min(b.len())
        && a[a.len() - n - 8..a.len() - n] == b[b.len() - n - 8..b.len() - n]
    {
        n += 8;
    }
    n + a[..a.len() - n]
        .iter()
        .rev()
        .zip(b[..b.len() - n].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// One step of a path into a value: a map's key or a list's index.
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// The string value of compact JSON `text` whose text (between its quotes,
/// `start..end`) holds byte `at` (or ends there), with its path; `None`
/// when `at` is elsewhere (a key, a number, punctuation) or a key on the
/// way has an escape.
fn string_at(text: &str, at: usize) -> Option<(Vec<Step<'_>>, usize, usize)> {
    /// An open map (the key being read, `None` if escaped) or list (index).
    enum Open<'a> {
        Map(Option<&'a str>),
        List(usize),
    }
    let bytes = text.as_bytes();
    let mut open: Vec<Open> = Vec::with_capacity(8);
    let mut i = 0;
    while i <= at {
        match *bytes.get(i)? {
            b'{' => open.push(Open::Map(None)),
            b'[' => open.push(Open::List(0)),
            b'}' | b']' => {
                open.pop();
            }
            b',' => {
                if let Some(Open::List(n)) = open.last_mut() {
                    *n += 1;
                }
            }
            b'"' => {
                let start = i + 1;
                let mut j = start;
                let mut escaped = false;
                loop {
                    match *bytes.get(j)? {
                        b'"' => break,
                        b'\\' => {
                            escaped = true;
                            j += 2;
                        }
                        _ => j += 1,
                    }
                }
                let key =
                    matches!(open.last(), Some(Open::Map(_))) && bytes.get(j + 1) == Some(&b':');
                if key {
                    if let Some(Open::Map(k)) = open.last_mut() {
                        *k = (!escaped).then(|| &text[start..j]);
                    }
                } else if start <= at && at <= j {
                    let path = open
                        .iter()
                        .map(|o| match o {
                            Open::Map(k) => k.map(Step::Key),
                            Open::List(n) => Some(Step::Index(*n)),
                        })
                        .collect::<Option<Vec<_>>>()?;
                    return Some((path, start, j));
                }
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    None
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
pub fn three_way_recorded(
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
    set_annotation(&mut recorded, Some(annotation.clone()));
    let patch = compute_patch(&recorded, live, last_applied, schema);
    set_annotation(&mut recorded, None);
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
                path: path::key("metadata.annotations", LAST_APPLIED),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Configs whose metadata takes each form `recorded_config` handles.
    fn configs() -> Vec<Value> {
        vec![
            json!({"kind": "ConfigMap"}),
            json!({"kind": "ConfigMap", "metadata": "odd"}),
            json!({"metadata": {"name": "a"}}),
            json!({"metadata": {"Upper": 1, "name": "a", "labels": {"x": "y"}}}),
            json!({"metadata": {"name": "a", "annotations": {}}}),
            json!({"metadata": {"name": "a", "annotations": null}}),
            json!({"metadata": {"name": "a", "annotations": ["x"]}}),
            json!({"metadata": {"name": "a", "annotations": {"b": "c"}}}),
            json!({"metadata": {"name": "a", "annotations": {LAST_APPLIED: "{}\n"}}}),
            json!({"metadata": {"name": "a", "annotations": {LAST_APPLIED: 5, "z": "1"}}}),
        ]
    }

    #[test]
    fn unrecord_gives_the_recorded_config_and_back() {
        for config in configs() {
            let mut v = config.clone();
            let undo = Unrecord::record(&mut v);
            assert_eq!(v, recorded_config(&config), "{config}");
            undo.restore(&mut v);
            assert_eq!(v, config);
            // Key order restored too (the maps are sorted).
            assert_eq!(v.to_string(), config.to_string());
        }
    }

    /// Reading a config's text and recording it at once gives what reading
    /// it and recording the value gives, whatever the text holds.
    #[test]
    fn decode_records_as_new_does() {
        let mut all = configs();
        all.extend([
            json!({"metadata": {}}),
            json!({"metadata": {"Zeta": "1"}}),
            json!({"metadata": {"Zeta": "1", "b": 2}}),
            json!({"metadata": {"aaa": 1, "annotationz": 2, "name": "n"}}),
            json!({"metadata": {"annotations": {"x": "<&>"}}}),
            json!({"metadata": {"name": "a\u{2028}b"}}),
            json!({"metadata": {"name": "esc\"aped"}}),
            json!({"metadata": {"name": "a"}, "spec": {"n": -1}}),
            json!({"metadata": {"name": "a"}, "spec": {"f": 1.0}}),
            json!({"metadata": {"name": "é ✓"}, "spec": {"template": {"metadata": {"x": 1}}}}),
            json!({"data": {"k": "\"metadata\":{\"z\":1}"}, "metadata": {"name": "a"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"metadata": "x"}, "metadata": {"labels": {"a": "b"}, "name": "a", "namespace": "n"}}),
            json!(["not", "a", "map"]),
            json!("text"),
        ]);
        let mut deep = json!({"metadata": {"name": "a"}});
        for _ in 0..110 {
            deep = json!({"metadata": {"name": "a"}, "x": deep});
        }
        all.push(deep);
        for config in all {
            let text = serde_json::to_string(&config).unwrap();
            let (value, recorded) = Recorded::decode(&text).unwrap();
            let expected = Recorded::new(&config);
            assert_eq!(value, config, "{text}");
            assert_eq!(recorded.value, expected.value, "{text}");
            assert_eq!(recorded.annotation, expected.annotation, "{text}");
            assert_eq!(recorded.floats, expected.floats, "{text}");
        }
        // A repeated metadata key: the last is the value, and its place.
        for text in [
            r#"{"metadata":{"b":1},"metadata":{"name":"a"}}"#,
            r#"{"metadata":{"b":1},"metadata":"x"}"#,
            // Not serde_json's text of its value: written from the value.
            r#"{"metadata":{"name":"a"} }"#,
            r#"{"metadata":{"name":"a","b":1}}"#,
            r#"{"metadata":{"name":"a"},"b":{"y":1,"x":2}}"#,
            r#"{"z":1,"metadata":{"name":"a"}}"#,
        ] {
            let (value, recorded) = Recorded::decode(text).unwrap();
            let expected = Recorded::new(&value);
            assert_eq!(recorded.annotation, expected.annotation, "{text}");
        }
    }

    /// An annotation edited anywhere reads back, where the copy is made,
    /// as parsing it reads; a string value's text changed is copied.
    #[test]
    fn read_back_edited_is_what_parsing_reads() {
        let configs = [
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"app": "web"}},
                   "spec": {"replicas": 2, "template": {"spec": {"containers": [
                       {"name": "web", "image": "nginx:1.26.0", "args": ["a", "", "<c>"]},
                       {"name": "side", "image": "busybox", "env": [{"name": "X", "value": "é\"q"}]}]}}}}),
            json!({"metadata": {"name": "a", "annotations": {"k\"ey": "v", "n": "x"}}, "data": {"": "", "e": "\u{2028}"}}),
        ];
        let edits = ["", "x", "yz", "\"", "\\", "é", "1", ",", "}", "\n", "<"];
        let mut copied = 0;
        for config in configs {
            let r = Recorded::new(&config);
            let n = r.annotation.clone();
            for i in 0..=n.len() {
                for len in 0..3 {
                    for e in edits {
                        let (Some(a), Some(b)) = (n.get(..i), n.get(i + len..)) else {
                            continue;
                        };
                        let text = format!("{a}{e}{b}");
                        if let Some(v) = r.read_back_edited(&text) {
                            let parsed: Value = serde_json::from_str(&text)
                                .unwrap_or_else(|e| panic!("{text}: {e}"));
                            assert_eq!(v, parsed, "{text}");
                            copied += 1;
                        }
                    }
                }
            }
            // The image bumped: copied.
            let bumped = n.replace("nginx:1.26.0", "nginx:1.27.1");
            if bumped != n {
                let v = r.read_back_edited(&bumped).expect("a string edited");
                assert_eq!(v, serde_json::from_str::<Value>(&bumped).unwrap());
            }
        }
        assert!(copied > 100, "{copied}");
        // Floats in the annotation: parsed, never copied.
        let r = Recorded::new(&json!({"a": "x", "f": 1.0}));
        assert!(
            r.read_back_edited(&r.annotation.replace('x', "y"))
                .is_none()
        );
    }

    #[test]
    fn common_ends_are_counted_exactly() {
        let slow_prefix = |a: &[u8], b: &[u8]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
        let slow_suffix = |a: &[u8], b: &[u8]| {
            a.iter()
                .rev()
                .zip(b.iter().rev())
                .take_while(|(x, y)| x == y)
                .count()
        };
        let base = b"0123456789abcdefghijklmnopqrstuvwxyz";
        for len in 0..base.len() {
            let a = &base[..len];
            for i in 0..=len {
                let mut b = a.to_vec();
                b.insert(i, b'#');
                for (x, y) in [(a, &b[..]), (&b[..], a), (a, a)] {
                    assert_eq!(common_prefix(x, y), slow_prefix(x, y));
                    assert_eq!(common_suffix(x, y), slow_suffix(x, y));
                }
            }
        }
    }

    #[test]
    fn recorded_knows_its_floats() {
        for (config, floats) in [
            (
                json!({"metadata": {"name": "a"}, "n": [0, -1, i64::MIN, u64::MAX]}),
                false,
            ),
            (
                json!({"metadata": {"name": "a"}, "spec": {"x": [{"y": 1.0}]}}),
                true,
            ),
            (json!({"f": 0.5}), true),
        ] {
            let r = Recorded::new(&config);
            assert_eq!(r.floats, floats, "{config}");
            let mut text = crate::gocompat::json(&recorded_config(&config));
            text.push('\n');
            assert_eq!(r.annotation, text);
            // An annotation with a float does not stand for its value.
            assert_eq!(r.reads_back(&text), !floats);
            assert!(!r.reads_back("{}\n"));
        }
    }
}
