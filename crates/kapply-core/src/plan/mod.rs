//! The plan: for every object, what apply (or prune) will do, field by field.
//! No I/O. Its JSON form (`kapply plan -o json`) is stable: scripts read it.
//!
//! - `build`: one object's plan (three-way merge, warnings), prune
//!   candidates, objects that failed.
//! - `hazards`: object-level warnings, one named rule each (per-field
//!   hazards are `merge::hazards`).
//! - `partial`: partial apply, field release (in a plan, and `kapply
//!   release` on the annotation).
//! - `mask`: Secret masking.
//! - `owners`: field owners.
//! - `render`: `kapply diff` text.
//! - `compact`: a row kept small (the TUI at scale), rebuilt on demand.
//! - `pin`: what a saved plan pins of each object (uid, resourceVersion,
//!   digests of config and change) for `apply --plan`.

pub mod block;
mod build;
pub mod compact;
pub mod fold;
mod hazards;
mod mask;
mod owners;
mod partial;
pub mod pin;
mod render;
pub mod report;

pub use build::{
    error_object, plan_object, plan_object_owned, prune_candidate, recorded_last_applied,
};
pub use mask::mask_plan;
pub use owners::field_owners;
pub use partial::{
    AnnotationRelease, ReleaseRefusal, ReleasedField, partial_config, partial_from_plan,
    partial_from_rows, release_annotation, release_from_last_applied, release_refusal,
    release_refusal_kind,
};
pub use render::{
    render_diff, render_diff_end, render_diff_object, render_diff_terminal,
    render_diff_terminal_object,
};

use crate::merge::{FieldChange, Patch};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

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
    /// Applying reverts a change made in the cluster (some field's cause
    /// is `drift`).
    #[serde(default)]
    pub reverts_drift: bool,
    /// An update that changes nothing but the last-applied annotation:
    /// `kubectl diff` (which sends the patch without it) shows no
    /// difference, so `kapply diff` does not count it a change.
    #[serde(skip)]
    pub annotation_only: bool,
    pub fields: Vec<FieldChange>,
    pub patch: Option<Patch>,
    /// The new last-applied configuration (what the annotation will hold).
    pub last_applied: Option<Value>,
    pub warnings: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The error is that the cluster does not serve the kind (yet): an
    /// apply that creates its CustomResourceDefinition first plans the
    /// object again instead of failing it.
    #[serde(skip)]
    pub kind_not_served: bool,
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

impl ObjectPlan {
    /// Which object: its group, kind, namespace and name. Displayed as
    /// `Deployment demo/nginx`, `Namespace demo`; a manifest that could not
    /// be read has no identity and says so.
    pub fn id(&self) -> crate::objref::ObjectRef {
        crate::objref::ObjectRef::new(
            &self.api_version,
            &self.kind,
            self.namespace.as_deref(),
            &self.name,
        )
    }

    /// Whether this row and `other` (a row or an [`ObjectRef`]) are one
    /// object: the same [`ObjectPlan::id`], told without building it
    /// (asked of every row of a list).
    pub fn is(&self, other: &impl Named) -> bool {
        self.parts() == other.parts()
    }
}

/// What names an object, borrowed: group, kind, namespace (an empty one
/// is none) and name, as [`crate::objref::ObjectRef`] holds them.
pub trait Named {
    fn parts(&self) -> (&str, &str, Option<&str>, &str);
}

impl Named for ObjectPlan {
    fn parts(&self) -> (&str, &str, Option<&str>, &str) {
        let group = crate::objref::split_api_version(&self.api_version).0;
        let ns = self.namespace.as_deref().filter(|n| !n.is_empty());
        (group, &self.kind, ns, &self.name)
    }
}

impl Named for crate::objref::ObjectRef {
    fn parts(&self) -> (&str, &str, Option<&str>, &str) {
        (
            &self.group,
            &self.kind,
            self.namespace.as_deref(),
            &self.name,
        )
    }
}

/// The whole plan, in manifest order, prune candidates last.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub objects: Vec<ObjectPlan>,
    /// Set when pruning was asked for but must not run on this read (see
    /// [`crate::manifest::PruneBlock`]): why, in words. Then the plan has
    /// no prune candidates.
    #[serde(
        default,
        rename = "pruneSkipped",
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_block",
        skip_deserializing
    )]
    pub prune_skipped: Option<PruneBlock>,
}

/// `pruneSkipped` in the plan JSON is the reason in words.
fn serialize_block<S: serde::Serializer>(b: &Option<PruneBlock>, s: S) -> Result<S::Ok, S::Error> {
    match b {
        Some(b) => s.serialize_str(&b.to_string()),
        None => s.serialize_none(),
    }
}

/// Options for planning one object.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// Labels kubectl adds to every object before applying (the ApplySet
    /// `applyset.kubernetes.io/part-of` label); they end up in the
    /// annotation too.
    pub labels: BTreeMap<String, String>,
}

/// Why pruning must not run. Pruning deletes what is not in the manifests,
/// so an object that could not be read (or planned) would look removed:
/// kapply, like kubectl, prunes only after a complete read and a clean apply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PruneBlock {
    /// Some manifests could not be read, parsed or built.
    #[error(
        "pruning skipped: {count} manifest{} could not be read ({first}); kapply never prunes from an incomplete read",
        plural(*count)
    )]
    Unreadable { count: usize, first: String },
    /// Nothing was read at all (an empty file, only `---`, every object
    /// left out by `-l`).
    #[error("pruning skipped: no objects passed to apply")]
    Empty,
    /// The LIST that looks for prune candidates was forbidden (403): which
    /// LIST and the server's words. kubectl diff warns and skips pruning
    /// the same way.
    #[error("pruning skipped: the prune listing was forbidden: {0}")]
    ListForbidden(String),
    /// A write of this apply failed or its fate is unknown.
    #[error(
        "pruning skipped: {count} object{} failed to apply (kubectl prunes only after a clean apply)",
        plural(*count)
    )]
    ApplyFailed { count: usize },
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

impl PruneBlock {
    /// A few words for where the TUI would show the prune count.
    pub fn short(&self) -> String {
        match self {
            PruneBlock::Unreadable { count, .. } => {
                format!(
                    "prune disabled: {count} manifest{} unreadable",
                    plural(*count)
                )
            }
            PruneBlock::Empty => "prune disabled: no objects read".to_string(),
            PruneBlock::ApplyFailed { count } => {
                format!("prune disabled: {count} failed to apply")
            }
            PruneBlock::ListForbidden(_) => "prune disabled: prune listing forbidden".to_string(),
        }
    }
}

/// Whether prune candidates may be computed after a read that gave
/// `errors` and `objects` objects (after any `-l` filtering): `Some` when
/// a manifest could not be read, parsed or built, or nothing was read.
/// Errors found later, against the cluster (a kind not served yet), leave
/// the object's identity known, so it still counts as in the manifests.
pub fn prune_block(
    errors: &[crate::manifest::ManifestError],
    objects: usize,
) -> Option<PruneBlock> {
    match errors.first() {
        Some(first) => Some(PruneBlock::Unreadable {
            count: errors.len(),
            first: first.to_string(),
        }),
        None => (objects == 0).then_some(PruneBlock::Empty),
    }
}

impl Plan {
    /// Whether applying (or pruning) would change anything: drives
    /// `kapply diff`'s exit code 1.
    pub fn has_changes(&self) -> bool {
        self.objects.iter().any(|o| {
            matches!(
                o.action,
                ObjectAction::Create | ObjectAction::Update | ObjectAction::Prune
            )
        })
    }

    /// The prune candidates, in plan order.
    pub fn prune_candidates(&self) -> impl Iterator<Item = &ObjectPlan> {
        self.objects
            .iter()
            .filter(|o| o.action == ObjectAction::Prune)
    }

    /// Whether some object could not be planned.
    pub fn has_errors(&self) -> bool {
        self.objects.iter().any(|o| o.action == ObjectAction::Error)
    }
}

/// The plan as shown to scripts (`kapply plan -o json`), Secrets masked,
/// each object with its [`pin::Pin`].
pub fn to_value(plan: &Plan) -> Value {
    to_value_saved(plan, None)
}

/// [`to_value`] with the saved plan's `header` ([`plan_header`]) last.
pub fn to_value_saved(plan: &Plan, header: Option<&Value>) -> Value {
    let objects: Vec<Value> = plan
        .objects
        .iter()
        .map(|o| object_value(o).unwrap_or(Value::Null))
        .collect();
    let mut v = serde_json::json!({ "objects": objects });
    if let Some(b) = &plan.prune_skipped {
        v["pruneSkipped"] = Value::String(b.to_string());
    }
    if let Some(h) = header {
        v[PLAN_HEADER] = h.clone();
    }
    v
}

/// The key of a saved plan's last member: the format's version and the
/// cluster it was made against.
pub const PLAN_HEADER: &str = "savedPlan";

/// The value of [`PLAN_HEADER`]: `{"version": 1, "cluster": {"server":
/// URL, "context": NAME}}`, without `cluster` for a plan made offline.
pub fn plan_header(cluster: Option<(&str, &str)>) -> Value {
    let mut h = serde_json::json!({ "version": pin::PLAN_VERSION });
    if let Some((server, context)) = cluster {
        h["cluster"] = serde_json::json!({ "server": server, "context": context });
    }
    h
}

/// The start of [`to_json`]'s text when written object by object: then
/// each object ([`json_object`]) joined by `,\n`, then [`json_end`].
pub const JSON_START: &str = "{\n  \"objects\": [\n";

/// One object as the plan's JSON and YAML show it: Secrets masked, and
/// its [`pin::Pin`] (made from the unmasked object, while it still has its
/// config and live object) as `"pin"`.
pub fn object_value(obj: &ObjectPlan) -> serde_json::Result<Value> {
    let mut v = serde_json::to_value(&*render::shown(obj))?;
    if let (Some(p), Value::Object(m)) = (pin::pin_of(obj), &mut v)
        && p != pin::Pin::default()
    {
        m.insert("pin".into(), serde_json::to_value(p)?);
    }
    Ok(v)
}

/// One object of [`to_json`], Secrets masked, indented as it sits there.
pub fn json_object(obj: &ObjectPlan) -> String {
    // Two levels deep in the document: written with the pretty printer's
    // layout from there, so no line is indented again afterwards.
    let mut out = b"    ".to_vec();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Nested::default());
    match object_value(obj).map(|v| serde::Serialize::serialize(&v, &mut ser)) {
        Ok(Ok(())) => String::from_utf8(out).unwrap_or_default(),
        _ => "    ".into(),
    }
}

/// serde_json's pretty layout (two spaces a level) for a value that sits
/// two levels deep: each line starts four spaces further in.
struct Nested {
    level: usize,
    has_value: bool,
}

impl Default for Nested {
    fn default() -> Self {
        Nested {
            level: 2,
            has_value: false,
        }
    }
}

impl Nested {
    fn newline<W: ?Sized + std::io::Write>(&self, w: &mut W, first: bool) -> std::io::Result<()> {
        w.write_all(if first { b"\n" } else { b",\n" })?;
        self.indent(w)
    }

    fn indent<W: ?Sized + std::io::Write>(&self, w: &mut W) -> std::io::Result<()> {
        for _ in 0..self.level {
            w.write_all(b"  ")?;
        }
        Ok(())
    }

    fn open<W: ?Sized + std::io::Write>(&mut self, w: &mut W, start: &[u8]) -> std::io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(start)
    }

    /// After an array element or an object member.
    fn ended_value(&mut self) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn close<W: ?Sized + std::io::Write>(&mut self, w: &mut W, end: &[u8]) -> std::io::Result<()> {
        self.level -= 1;
        if self.has_value {
            w.write_all(b"\n")?;
            self.indent(w)?;
        }
        w.write_all(end)
    }
}

impl serde_json::ser::Formatter for Nested {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.newline(w, first)
    }

    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.ended_value()
    }

    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.newline(w, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.ended_value()
    }
}

/// The end of [`to_json`]'s text written object by object (after at
/// least one object).
pub fn json_end(prune_skipped: Option<&PruneBlock>, header: Option<&Value>) -> String {
    let mut out = String::from("\n  ]");
    if let Some(b) = prune_skipped {
        out.push_str(",\n  \"pruneSkipped\": ");
        out.push_str(&Value::String(b.to_string()).to_string());
    }
    if let Some(h) = header {
        out.push_str(",\n  \"");
        out.push_str(PLAN_HEADER);
        out.push_str("\": ");
        let text = serde_json::to_string_pretty(h).unwrap_or_default();
        out.push_str(&text.replace('\n', "\n  "));
    }
    out.push_str("\n}");
    out
}

/// `kapply plan -o json` without the saved plan's header.
pub fn to_json(plan: &Plan) -> String {
    to_json_saved(plan, None)
}

/// `kapply plan -o json`: [`to_json`] with the saved plan's `header`.
pub fn to_json_saved(plan: &Plan, header: Option<&Value>) -> String {
    serde_json::to_string_pretty(&to_value_saved(plan, header)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_of_the_plan_json_is_the_whole_documents_text() {
        let config = serde_json::json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "d", "labels": {}},
            "data": {"k": "dg=="}, "list": [], "nested": [[], {}, [1, {"a": []}]]});
        let m = crate::manifest::Manifest::new(
            crate::objref::ObjectRef::from_object(&config).unwrap(),
            "v1".into(),
            config,
            crate::manifest::Source {
                file: "s.yaml".into(),
                line: 1,
            },
        );
        let mut obj = plan_object(&m, None, &PlanOptions::default());
        obj.warnings.push("w\u{7f}".into());
        let whole = Plan {
            objects: vec![obj.clone(), obj.clone()],
            prune_skipped: Some(PruneBlock::Empty),
        };
        let header = plan_header(Some(("http://127.0.0.1:1", "c")));
        let streamed = format!(
            "{JSON_START}{},\n{}{}",
            json_object(&obj),
            json_object(&obj),
            json_end(whole.prune_skipped.as_ref(), Some(&header))
        );
        assert_eq!(streamed, to_json_saved(&whole, Some(&header)));
        assert!(streamed.contains("\"pin\": {"), "{streamed}");
        assert!(!streamed.contains("dg=="), "{streamed}");
    }
}
