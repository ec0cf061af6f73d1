//! The plan: for every object, what apply (or prune) will do, field by field.
//! No I/O. Its JSON form (`kapply plan -o json`) is stable: scripts read it.

use crate::merge::{FieldChange, Patch};
use crate::objref::ObjectRef;
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
    /// Applying reverts a change made in the cluster (some field's cause
    /// is `drift`).
    #[serde(default)]
    pub reverts_drift: bool,
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

impl ObjectPlan {
    /// Which object: its group, kind, namespace and name. Displayed as
    /// `Deployment demo/nginx`, `Namespace demo`; a manifest that could not
    /// be read has no identity and says so.
    pub fn id(&self) -> ObjectRef {
        ObjectRef::new(
            &self.api_version,
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

use crate::manifest::Manifest;
use crate::merge::path::{self, Segment};
use crate::merge::{self, Cause, FieldAction, LAST_APPLIED, PatchType};
use crate::patchmeta::PatchMeta;
use serde_json::Map;
use std::collections::BTreeMap;
use std::fmt::Write as _;

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

    /// Whether some object could not be planned.
    pub fn has_errors(&self) -> bool {
        self.objects.iter().any(|o| o.action == ObjectAction::Error)
    }
}

fn str_at<'v>(v: &'v Value, ptr: &str) -> Option<&'v str> {
    v.pointer(ptr).and_then(Value::as_str)
}

fn base_plan(config: &Value, source: Option<String>, action: ObjectAction) -> ObjectPlan {
    ObjectPlan {
        api_version: str_at(config, "/apiVersion").unwrap_or_default().into(),
        kind: str_at(config, "/kind").unwrap_or_default().into(),
        namespace: str_at(config, "/metadata/namespace").map(String::from),
        name: str_at(config, "/metadata/name").unwrap_or_default().into(),
        source,
        action,
        reverts_drift: false,
        fields: vec![],
        patch: None,
        last_applied: None,
        warnings: vec![],
        error: None,
        prune_reason: None,
        config: None,
        live: None,
    }
}

/// The last-applied configuration recorded on a live object: `Ok(None)`
/// when the annotation is absent.
pub fn recorded_last_applied(live: &Value) -> Result<Option<Value>, String> {
    let Some(raw) = live
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED))
        .and_then(Value::as_str)
    else {
        return Ok(None);
    };
    serde_json::from_str(raw)
        .map(Some)
        .map_err(|e| format!("the {LAST_APPLIED} annotation is not valid JSON: {e}"))
}

/// Plan one manifest against its live object (`None`: it does not exist).
pub fn plan_object(m: &Manifest, live: Option<&Value>, opts: &PlanOptions) -> ObjectPlan {
    let mut config = m.object.clone();
    if !opts.labels.is_empty()
        && let Some(md) = config.get_mut("metadata").and_then(Value::as_object_mut)
    {
        let labels = md
            .entry("labels")
            .or_insert_with(|| Value::Object(Map::new()));
        if !labels.is_object() {
            *labels = Value::Object(Map::new());
        }
        if let Some(l) = labels.as_object_mut() {
            for (k, v) in &opts.labels {
                l.insert(k.clone(), Value::String(v.clone()));
            }
        }
    }
    let api_version = m.api_version();
    let schema = PatchMeta::builtin().root(&api_version, &m.id.kind);
    let source = Some(m.source.to_string());
    let mut plan = base_plan(&config, source, ObjectAction::Create);
    plan.api_version = api_version;
    plan.kind = m.id.kind.clone();
    plan.namespace = m.id.namespace.clone();
    plan.name = m.id.name.clone();
    plan.config = Some(config.clone());
    let Some(live) = live else {
        plan.fields = merge::create_fields(&config, schema);
        plan.last_applied = serde_json::from_str(&merge::last_applied_annotation(&config)).ok();
        return plan;
    };
    plan.live = Some(live.clone());
    let last_applied = match recorded_last_applied(live) {
        Ok(v) => v,
        Err(e) => {
            plan.action = ObjectAction::Error;
            plan.error = Some(format!("{}: {e}", m.id));
            return plan;
        }
    };
    if last_applied.is_none() {
        plan.warnings.push(format!(
            "{LAST_APPLIED} annotation is missing: the object was created imperatively \
             (kubectl create/replace), so apply cannot clear what it never recorded; \
             nothing will be deleted and the annotation will be added"
        ));
    }
    match merge::three_way(&config, live, last_applied.as_ref(), schema) {
        Ok(tw) => {
            plan.action = if tw.patch.is_some() {
                ObjectAction::Update
            } else {
                ObjectAction::Unchanged
            };
            plan.fields = tw.fields;
            // Name the other writer of a kept field (the core decided
            // the cause from managedFields).
            for f in &mut plan.fields {
                match (f.action, f.cause, f.owner.as_deref()) {
                    (FieldAction::Keep, Cause::ServerDefault, _) => {
                        f.reason =
                            "live only: defaulted by the server when apply wrote the object \
                                    (not in config or last-applied)"
                                .into();
                    }
                    (FieldAction::Keep, Cause::OtherWriter, Some(owner)) => {
                        f.reason = format!(
                            "live only: owned by another writer, {owner} (not in config or last-applied)"
                        );
                    }
                    _ => {}
                }
            }
            plan.reverts_drift = merge::reverts_drift(&plan.fields);
            plan.last_applied = Some(tw.last_applied);
            plan.warnings
                .extend(hazards(&m.id.kind, &config, live, tw.patch.as_ref()));
            if schema.is_some() {
                let mut nulls = vec![];
                explicit_nulls("", &config, &mut nulls);
                if !nulls.is_empty() {
                    plan.warnings.push(format!(
                        "explicit null in the config ({}): kubectl sends it on every apply, \
                         so this object never reports unchanged",
                        nulls.join(", ")
                    ));
                }
            }
            plan.patch = tw.patch;
        }
        Err(e) => {
            plan.action = ObjectAction::Error;
            plan.error = Some(format!("{}: {e}", m.id));
        }
    }
    plan
}

/// Paths of the explicit nulls in a config (keyed list elements by index).
fn explicit_nulls(p: &str, v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let sub = path::key(p, k);
                if x.is_null() {
                    out.push(sub);
                } else {
                    explicit_nulls(&sub, x, out);
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                explicit_nulls(&path::index(p, i), x, out);
            }
        }
        _ => {}
    }
}

/// Whether the patch body names the field at `keys` (directives aside).
fn patch_touches(body: &Value, keys: &[&str]) -> bool {
    let mut cur = body;
    for k in keys {
        match cur.get(*k) {
            Some(v) => cur = v,
            None => return false,
        }
    }
    true
}

/// Warnings for hazards kubectl does not tell about before the server
/// rejects the patch or silently keeps stale defaults.
fn hazards(
    kind: &str,
    config: &Value,
    live: &Value,
    patch: Option<&crate::merge::Patch>,
) -> Vec<String> {
    let mut w = vec![];
    let Some(patch) = patch else {
        return w;
    };
    let body = &patch.body;
    let touches = |keys: &[&str]| patch_touches(body, keys);
    // (i) server-defaulted fields whose default depends on a changed field.
    if kind == "Deployment" {
        let ctype = str_at(config, "/spec/strategy/type");
        let ltype = str_at(live, "/spec/strategy/type");
        let live_ru = live.pointer("/spec/strategy/rollingUpdate").is_some();
        if ctype == Some("Recreate") && ltype != Some("Recreate") && live_ru {
            let retained = body
                .pointer("/spec/strategy/$retainKeys")
                .and_then(Value::as_array);
            let clears = retained.is_some_and(|r| !r.iter().any(|k| k == "rollingUpdate"))
                || body.pointer("/spec/strategy/rollingUpdate") == Some(&Value::Null);
            if config
                .pointer("/spec/strategy/rollingUpdate")
                .is_some_and(|v| !v.is_null())
            {
                w.push(
                    "spec.strategy.type is Recreate but the config sets spec.strategy.rollingUpdate: \
                     the server will reject it (422)"
                        .into(),
                );
            } else if clears {
                w.push(
                    "spec.strategy.type changes to Recreate while live has the server-defaulted \
                     spec.strategy.rollingUpdate: $retainKeys clears it, so the change succeeds"
                        .into(),
                );
            } else {
                w.push(
                    "spec.strategy.type changes to Recreate while live has the server-defaulted \
                     spec.strategy.rollingUpdate, which the patch keeps: the server will reject it \
                     (422); set spec.strategy.rollingUpdate: null in the config"
                        .into(),
                );
            }
        }
    }
    if kind == "StatefulSet" {
        let ctype = str_at(config, "/spec/updateStrategy/type");
        let live_ru = live.pointer("/spec/updateStrategy/rollingUpdate").is_some();
        let cleared = body.pointer("/spec/updateStrategy/rollingUpdate") == Some(&Value::Null);
        if ctype == Some("OnDelete") && live_ru && !cleared {
            w.push(
                "spec.updateStrategy.type changes to OnDelete while live has the server-defaulted \
                 spec.updateStrategy.rollingUpdate, which the patch keeps: the server will reject \
                 it (422); set spec.updateStrategy.rollingUpdate: null in the config"
                    .into(),
            );
        }
    }
    if kind == "Service" {
        let ctype = str_at(config, "/spec/type");
        let ltype = str_at(live, "/spec/type").unwrap_or("ClusterIP");
        if let Some(ct) = ctype
            && ct != ltype
        {
            let mut defaulted = vec![];
            if live.pointer("/spec/clusterIP").is_some() && ct == "ExternalName" {
                defaulted.push("spec.clusterIP(s)");
            }
            let node_ports = live
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .is_some_and(|ps| ps.iter().any(|p| p.get("nodePort").is_some()));
            if node_ports && (ct == "ClusterIP" || ct == "ExternalName") {
                defaulted.push("spec.ports[*].nodePort");
            }
            if live.pointer("/spec/healthCheckNodePort").is_some() {
                defaulted.push("spec.healthCheckNodePort");
            }
            let extra = if defaulted.is_empty() {
                String::new()
            } else {
                format!(
                    "; live has server-defaulted {} that the patch does not clear",
                    defaulted.join(", ")
                )
            };
            w.push(format!(
                "spec.type changes from {ltype} to {ct}: fields defaulted for the old type \
                     stay unless the server drops them{extra}"
            ));
        }
    }
    // (ii) immutable fields.
    let immutable = |w: &mut Vec<String>, field: &str| {
        w.push(format!(
            "{field} is immutable: the server will reject this change (422)"
        ));
    };
    match kind {
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job"
            if touches(&["spec", "selector"]) =>
        {
            immutable(&mut w, "spec.selector");
        }
        _ => {}
    }
    if kind == "Job" && touches(&["spec", "template"]) {
        w.push(
            "spec.template of a Job is immutable (except scheduling directives of a suspended \
             Job): the server will likely reject this change (422)"
                .into(),
        );
    }
    if kind == "Service" {
        for f in ["clusterIP", "clusterIPs"] {
            if touches(&["spec", f]) && live.pointer(&format!("/spec/{f}")).is_some() {
                let ctype = str_at(config, "/spec/type");
                if ctype != Some("ExternalName") {
                    immutable(&mut w, &format!("spec.{f}"));
                }
            }
        }
    }
    if kind == "StatefulSet" {
        for f in ["volumeClaimTemplates", "serviceName", "podManagementPolicy"] {
            if touches(&["spec", f]) {
                immutable(&mut w, &format!("spec.{f}"));
            }
        }
    }
    if kind == "PersistentVolumeClaim"
        && let Some(spec) = body.get("spec").and_then(Value::as_object)
    {
        for (k, v) in spec {
            if k.starts_with('$') {
                continue;
            }
            if k == "resources" {
                let others = v
                    .as_object()
                    .is_some_and(|r| r.keys().any(|rk| rk != "requests" && !rk.starts_with('$')));
                if others || !v.is_object() {
                    immutable(&mut w, "spec.resources (except requests)");
                }
                continue;
            }
            if k == "volumeAttributesClassName" {
                continue;
            }
            immutable(&mut w, &format!("spec.{k} of a PersistentVolumeClaim"));
        }
    }
    if (kind == "ConfigMap" || kind == "Secret")
        && live.get("immutable") == Some(&Value::Bool(true))
    {
        for f in ["data", "binaryData", "stringData", "immutable"] {
            if touches(&[f]) {
                w.push(format!(
                    "{kind} is immutable (immutable: true): the server will reject the change of {f} (422); \
                     delete and recreate it"
                ));
            }
        }
    }
    if patch.kind == PatchType::Merge {
        // Nothing kind-specific is known about custom resources.
    }
    w
}

/// A live object that apply would delete with `--prune`.
pub fn prune_candidate(live: &Value, reason: String) -> ObjectPlan {
    let mut plan = base_plan(live, None, ObjectAction::Prune);
    plan.prune_reason = Some(reason);
    plan.live = Some(live.clone());
    plan
}

/// An object that could not be planned (load error, cluster error).
pub fn error_object(
    api_version: &str,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
    source: Option<String>,
    error: String,
) -> ObjectPlan {
    let mut plan = base_plan(&Value::Null, source, ObjectAction::Error);
    plan.api_version = api_version.into();
    plan.kind = kind.into();
    plan.namespace = namespace.map(String::from);
    plan.name = name.into();
    plan.error = Some(error);
    plan
}

fn remove_path(v: &mut Value, segs: &[Segment]) {
    let Some((last, parent)) = segs.split_last() else {
        return;
    };
    let mut cur = v;
    for s in parent {
        let next = match s {
            Segment::Key(k) => cur.get_mut(k),
            Segment::Index(i) => cur.get_mut(*i),
            Segment::Element(k, want) => cur
                .as_array_mut()
                .and_then(|a| a.iter_mut().find(|e| path::element_matches(e, k, want))),
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    match last {
        Segment::Key(k) => {
            if let Some(m) = cur.as_object_mut() {
                m.remove(k);
            }
        }
        Segment::Index(i) => {
            if let Some(a) = cur.as_array_mut()
                && *i < a.len()
            {
                a.remove(*i);
            }
        }
        Segment::Element(k, want) => {
            if let Some(a) = cur.as_array_mut() {
                a.retain(|e| !path::element_matches(e, k, want));
            }
        }
    }
}

fn set_path(v: &mut Value, segs: &[Segment], value: Value) {
    let Some((last, parent)) = segs.split_last() else {
        *v = value;
        return;
    };
    let mut cur = v;
    for s in parent {
        let next = match s {
            Segment::Key(k) => {
                if !cur.is_object() {
                    *cur = Value::Object(Map::new());
                }
                cur.as_object_mut().map(|m| {
                    m.entry(k.clone())
                        .or_insert_with(|| Value::Object(Map::new()))
                })
            }
            Segment::Index(i) => cur.get_mut(*i),
            Segment::Element(k, want) => cur
                .as_array_mut()
                .and_then(|a| a.iter_mut().find(|e| path::element_matches(e, k, want))),
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    match last {
        Segment::Key(k) => {
            if !cur.is_object() {
                *cur = Value::Object(Map::new());
            }
            if let Some(m) = cur.as_object_mut() {
                m.insert(k.clone(), value);
            }
        }
        Segment::Index(i) => {
            if let Some(slot) = cur.get_mut(*i) {
                *slot = value;
            }
        }
        Segment::Element(k, want) => {
            if cur.is_null() {
                *cur = Value::Array(vec![]);
            }
            if let Some(a) = cur.as_array_mut() {
                match a.iter_mut().find(|e| path::element_matches(e, k, want)) {
                    Some(slot) => *slot = value,
                    None => a.push(value),
                }
            }
        }
    }
}

/// A configuration that applies only the accepted field changes: the
/// config with every change that was not accepted reverted to its
/// last-applied state, so skipped changes stay pending for the next apply
/// (the annotation records this configuration).
pub fn partial_config(config: &Value, last_applied: Option<&Value>, accepted: &[String]) -> Value {
    let live = Value::Object(Map::new());
    let schema = match (str_at(config, "/apiVersion"), str_at(config, "/kind")) {
        (Some(a), Some(k)) => PatchMeta::builtin().root(a, k),
        _ => None,
    };
    // The rows that apply could take, live aside: every difference between
    // config and last-applied.
    let rows = match merge::three_way(config, last_applied.unwrap_or(&live), last_applied, schema) {
        Ok(tw) => tw.fields,
        Err(_) => merge::create_fields(config, schema),
    };
    partial_from_rows(
        config,
        last_applied,
        accepted,
        rows.iter().map(|r| r.path.as_str()),
    )
}

/// [`partial_config`] over the paths of a plan's rows: every path not in
/// `accepted` is reverted to its last-applied value (or removed).
pub fn partial_from_rows<'r>(
    config: &Value,
    last_applied: Option<&Value>,
    accepted: &[String],
    rows: impl Iterator<Item = &'r str>,
) -> Value {
    let mut out = config.clone();
    for p in rows {
        if accepted.iter().any(|a| a == p) {
            continue;
        }
        let segs = path::parse(p);
        match last_applied.and_then(|la| path::get(la, &segs)) {
            Some(v) => set_path(&mut out, &segs, v.clone()),
            None => remove_path(&mut out, &segs),
        }
    }
    out
}

/// The configuration to apply when only `accepted` rows of an object's plan
/// (paths of `plan.fields`) are taken: every other change is reverted to
/// its live value (or dropped when live has none), so applying it changes
/// nothing else, and the next plan shows the skipped changes again.
/// Prefer this to [`partial_config`] when the plan is at hand: it also
/// skips changes where live drifted from last-applied.
pub fn partial_from_plan(plan: &ObjectPlan, accepted: &[String]) -> Option<Value> {
    let mut out = plan.config.clone()?;
    let annotation = path::key("metadata.annotations", LAST_APPLIED);
    for f in &plan.fields {
        if f.action == FieldAction::Keep
            || accepted.iter().any(|a| a == &f.path)
            || f.path == annotation
            || f.reason.starts_with("element order")
        {
            continue;
        }
        let segs = path::parse(&f.path);
        match &f.live {
            Some(v) => set_path(&mut out, &segs, v.clone()),
            None => remove_path(&mut out, &segs),
        }
    }
    Some(out)
}

/// Why `path` cannot be released on this object, or `None` when it can.
/// Only a `clear` row whose field the config leaves out can be: releasing
/// hands the live value to another writer, which needs the config to say
/// nothing about the field (an explicit null in the config is a removal
/// the config asks for).
pub fn release_refusal(plan: &ObjectPlan, path: &str) -> Option<String> {
    let Some(row) = plan.fields.iter().find(|f| f.path == path) else {
        return Some(format!("{path} is not a field change of {}", plan.id()));
    };
    if row.action != FieldAction::Clear {
        return Some(format!(
            "{path} of {} is not a clear row: only a field apply would remove can be released",
            plan.id()
        ));
    }
    let in_config = plan
        .config
        .as_ref()
        .and_then(|c| path::get(c, &path::parse(path)))
        .is_some();
    if in_config || row.last_applied.is_none() {
        return Some(format!(
            "{path} of {} is removed by the config itself (explicit null), not by leaving it out; it cannot be released",
            plan.id()
        ));
    }
    None
}

/// The last-applied configuration with the `released` paths taken out.
/// The three-way patch computed against it sends no deletion for them
/// (they are then in neither config nor last-applied: another writer's),
/// while the annotation it writes still records the config without them.
/// A parent left empty by the removal goes too when the config lacks it:
/// an empty map in last-applied and none in the config would make the
/// patch delete the whole parent, the released field with it.
pub fn release_from_last_applied(
    config: &Value,
    last_applied: Option<&Value>,
    released: &[String],
) -> Option<Value> {
    let mut out = last_applied?.clone();
    for p in released {
        let segs = path::parse(p);
        remove_path(&mut out, &segs);
        for depth in (1..segs.len()).rev() {
            let parent = &segs[..depth];
            let emptied = match path::get(&out, parent) {
                Some(Value::Object(m)) => m.is_empty(),
                Some(Value::Array(a)) => a.is_empty(),
                _ => false,
            };
            if !emptied || path::get(config, parent).is_some() {
                break;
            }
            remove_path(&mut out, parent);
        }
    }
    Some(out)
}

/// One field `kapply release` takes out of the last-applied annotation.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleasedField {
    pub path: String,
    /// Its value in the annotation (what apply would have cleared).
    pub last_applied: Value,
    /// Its live value, which stays (`None`: not set live).
    pub live: Option<Value>,
}

/// What `kapply release` writes: the live object's last-applied annotation
/// without the released fields, as `kubectl apply edit-last-applied` leaves
/// it when they are deleted by hand.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnotationRelease {
    pub fields: Vec<ReleasedField>,
    /// The new annotation value (kubectl's encoding: compact, keys sorted,
    /// trailing newline).
    pub annotation: String,
}

/// Paths that name the object rather than a field of it.
const IDENTITY_PATHS: [&str; 5] = [
    "apiVersion",
    "kind",
    "metadata",
    "metadata.name",
    "metadata.namespace",
];

/// Release `paths` (field paths as the plan writes them) from the
/// last-applied annotation of `live`. A parent the removal leaves empty
/// goes too: an empty map left in the annotation would make the next apply
/// of a config without it delete the whole map, the released field with it.
/// Errors name the object and, for a path the annotation lacks, the paths
/// it has.
pub fn release_annotation(live: &Value, paths: &[String]) -> Result<AnnotationRelease, String> {
    let plan = base_plan(live, None, ObjectAction::Unchanged);
    let name = plan.id();
    let Some(text) = live
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED))
        .and_then(Value::as_str)
    else {
        return Err(format!(
            "{name} has no {LAST_APPLIED} annotation: it is not managed by kubectl apply, so \
             no field of it can be released (`kapply export` brings it under apply)"
        ));
    };
    let la: Value = serde_json::from_str(text).map_err(|e| {
        format!("{name}: its {LAST_APPLIED} annotation is not JSON ({e}); fix it with kubectl apply edit-last-applied")
    })?;
    if paths.is_empty() {
        return Err(format!("{name}: name at least one field path to release"));
    }
    let mut fields: Vec<ReleasedField> = Vec::new();
    for p in paths {
        if fields.iter().any(|f| &f.path == p) {
            continue;
        }
        let segs = path::parse(p);
        if segs.is_empty() || IDENTITY_PATHS.contains(&p.as_str()) {
            return Err(format!(
                "{name}: {p:?} names the object, not a field of it; it cannot be released"
            ));
        }
        let Some(value) = path::get(&la, &segs) else {
            let schema = PatchMeta::builtin().root(&plan.api_version, &plan.kind);
            let mut have: Vec<String> = Vec::new();
            for f in merge::create_fields(&la, schema) {
                leaf_paths(&f.path, f.config.as_ref(), &mut have);
            }
            have.retain(|f| !IDENTITY_PATHS.contains(&f.as_str()));
            let shown = match have.len() {
                0 => "none".to_string(),
                n if n > 20 => format!("{}, ... ({n} in all)", have[..20].join(", ")),
                _ => have.join(", "),
            };
            return Err(format!(
                "{name}: {p} is not in its last-applied configuration, so apply does not own it; \
                 fields there: {shown}"
            ));
        };
        fields.push(ReleasedField {
            path: p.clone(),
            last_applied: value.clone(),
            live: path::get(live, &segs).cloned(),
        });
    }
    let released: Vec<String> = fields.iter().map(|f| f.path.clone()).collect();
    let out = release_from_last_applied(&Value::Null, Some(&la), &released).unwrap_or(la);
    let mut annotation = merge::go_json(&out);
    annotation.push('\n');
    Ok(AnnotationRelease { fields, annotation })
}

/// `path` and, for a map (a keyed list element's fields), the paths of its
/// leaves, so an error can list the paths a user would type.
fn leaf_paths(p: &str, v: Option<&Value>, out: &mut Vec<String>) {
    match v {
        Some(Value::Object(m)) if !m.is_empty() => {
            for (k, x) in m {
                leaf_paths(&path::key(p, k), Some(x), out);
            }
        }
        _ => out.push(p.to_string()),
    }
}

/// Mask the values of a Secret's `data` and `stringData` (and inside its
/// last-applied annotation). Other objects are returned unchanged.
pub fn mask_secret(obj: &Value) -> Value {
    if obj.get("kind").and_then(Value::as_str) != Some("Secret") {
        return obj.clone();
    }
    let mut out = obj.clone();
    mask_data(&mut out);
    if let Some(ann) = out
        .pointer_mut("/metadata/annotations")
        .and_then(|a| a.get_mut(LAST_APPLIED))
        && let Some(text) = ann.as_str()
    {
        *ann = Value::String(mask_recorded(text));
    }
    out
}

const MASK: &str = "***";

/// A last-applied annotation value with the Secret values masked; text
/// that is not JSON is masked whole.
fn mask_recorded(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(mut v) => {
            mask_data(&mut v);
            format!("{}\n", merge::go_json(&v))
        }
        Err(_) => MASK.into(),
    }
}

fn mask_data(v: &mut Value) {
    for f in ["data", "stringData"] {
        if let Some(m) = v.get_mut(f).and_then(Value::as_object_mut) {
            for val in m.values_mut() {
                if !val.is_null() {
                    *val = Value::String(MASK.into());
                }
            }
        }
    }
}

/// What a changed Secret value shows as on each side of a diff, so that a
/// change stays visible without its clear value (as `kubectl diff` does).
const MASK_BEFORE: &str = "*** (before)";
const MASK_AFTER: &str = "*** (after)";

/// Mask a Secret shown before and after a change (the YAML view): values
/// equal on both sides show `***`; a value that differs shows
/// `*** (before)` and `*** (after)`. Also inside the last-applied
/// annotation. Objects that are not Secrets are returned unchanged.
pub fn mask_secret_pair(
    before: Option<&Value>,
    after: Option<&Value>,
) -> (Option<Value>, Option<Value>) {
    let is_secret =
        |v: Option<&Value>| v.and_then(|v| v.get("kind")).and_then(Value::as_str) == Some("Secret");
    if !is_secret(before) && !is_secret(after) {
        return (before.cloned(), after.cloned());
    }
    let (mut b, mut a) = (before.cloned(), after.cloned());
    // The annotations first, from the clear values.
    let recorded = |v: &Option<Value>| {
        v.as_ref()
            .and_then(|v| v.pointer("/metadata/annotations"))
            .and_then(|x| x.get(LAST_APPLIED))
            .and_then(Value::as_str)
            .map(|t| serde_json::from_str::<Value>(t).map_err(|_| ()))
    };
    let (rb, ra) = (recorded(&b), recorded(&a));
    let shown = |r: Option<Result<Value, ()>>| -> Option<String> {
        match r? {
            Ok(v) => Some(format!("{}\n", merge::go_json(&v))),
            Err(()) => Some(MASK.into()),
        }
    };
    let (mut rb, mut ra) = (rb, ra);
    mask_data_pair(
        rb.as_mut().and_then(|r| r.as_mut().ok()),
        ra.as_mut().and_then(|r| r.as_mut().ok()),
    );
    for (side, text) in [(&mut b, shown(rb)), (&mut a, shown(ra))] {
        if let (Some(text), Some(ann)) = (
            text,
            side.as_mut()
                .and_then(|v| v.pointer_mut("/metadata/annotations"))
                .and_then(|x| x.get_mut(LAST_APPLIED)),
        ) {
            *ann = Value::String(text);
        }
    }
    mask_data_pair(b.as_mut(), a.as_mut());
    (b, a)
}

/// [`mask_data`] of two versions of one object, marking changed values.
fn mask_data_pair(mut before: Option<&mut Value>, mut after: Option<&mut Value>) {
    for f in ["data", "stringData"] {
        let old = before.as_ref().and_then(|v| v.get(f)).cloned();
        let new = after.as_ref().and_then(|v| v.get(f)).cloned();
        let token = |k: &str, mine: &Option<Value>, other: &Option<Value>, changed: &str| {
            let mine = mine.as_ref().and_then(|m| m.get(k));
            let other = other.as_ref().and_then(|m| m.get(k));
            match (mine, other) {
                (Some(x), Some(y)) if x != y && !y.is_null() => changed.to_string(),
                _ => MASK.to_string(),
            }
        };
        for (side, mine, other, changed) in [
            (before.as_deref_mut(), &old, &new, MASK_BEFORE),
            (after.as_deref_mut(), &new, &old, MASK_AFTER),
        ] {
            if let Some(m) = side
                .and_then(|v| v.get_mut(f))
                .and_then(Value::as_object_mut)
            {
                for (k, val) in m.iter_mut() {
                    if !val.is_null() {
                        *val = Value::String(token(k, mine, other, changed));
                    }
                }
            }
        }
    }
}

fn is_secret_value_path(p: &str) -> bool {
    ["data", "stringData"]
        .iter()
        .any(|f| p == *f || p.starts_with(&format!("{f}.")) || p.starts_with(&format!("{f}[")))
}

fn mask_value(v: &Option<Value>) -> Option<Value> {
    v.as_ref().map(|v| match v {
        Value::Null => Value::Null,
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| {
                    let masked = if x.is_null() {
                        Value::Null
                    } else {
                        Value::String(MASK.into())
                    };
                    (k.clone(), masked)
                })
                .collect(),
        ),
        _ => Value::String(MASK.into()),
    })
}

/// A copy of the object plan safe to show: Secret values masked in the
/// field rows, the patch body, the last-applied and the objects.
pub fn mask_plan(p: &ObjectPlan) -> ObjectPlan {
    if p.kind != "Secret" {
        return p.clone();
    }
    let mut out = p.clone();
    let annotation_path = path::key("metadata.annotations", LAST_APPLIED);
    for f in &mut out.fields {
        if f.path == annotation_path {
            for side in [&mut f.config, &mut f.live, &mut f.last_applied] {
                if let Some(Value::String(text)) = side {
                    *text = mask_recorded(text);
                }
            }
        }
        if is_secret_value_path(&f.path) {
            f.config = mask_value(&f.config);
            f.live = mask_value(&f.live);
            f.last_applied = mask_value(&f.last_applied);
        }
    }
    if let Some(patch) = &mut out.patch {
        let mut body = patch.body.clone();
        if let Some(m) = body.as_object_mut() {
            m.insert("kind".into(), Value::String("Secret".into()));
            let mut masked = mask_secret(&Value::Object(m.clone()));
            if let Some(mm) = masked.as_object_mut()
                && p.patch.as_ref().and_then(|x| x.body.get("kind")).is_none()
            {
                mm.remove("kind");
            }
            body = masked;
        }
        patch.body = body;
    }
    out.last_applied = out.last_applied.as_ref().map(|v| {
        let mut v = v.clone();
        mask_data(&mut v);
        v
    });
    out.config = out.config.as_ref().map(mask_secret);
    out.live = out.live.as_ref().map(mask_secret);
    out
}

/// The plan as shown to scripts (`kapply plan -o json`), Secrets masked.
pub fn to_value(plan: &Plan) -> Value {
    let masked = Plan {
        objects: plan.objects.iter().map(mask_plan).collect(),
        prune_skipped: plan.prune_skipped.clone(),
    };
    serde_json::to_value(&masked).unwrap_or(Value::Null)
}

/// `kapply plan -o json`.
pub fn to_json(plan: &Plan) -> String {
    serde_json::to_string_pretty(&to_value(plan)).unwrap_or_default()
}

/// Which manager owns which field, from `metadata.managedFields`
/// (fieldsV1): path -> manager (several managers joined by ", ").
/// [`merge::FieldOwners`] is the lookup the plan uses (nearest owned
/// ancestor, write times).
pub fn field_owners(live: &Value) -> BTreeMap<String, String> {
    merge::FieldOwners::from_live(live)
        .exact()
        .map(|(p, ms)| (p.to_string(), ms.join(", ")))
        .collect()
}

fn show(v: &Option<Value>) -> String {
    match v {
        None => "-".into(),
        Some(v) => merge::go_json(v),
    }
}

/// `kapply diff` output when piped (one line per field, for scripts): per
/// object a header (` reverts drift` at its end when it does), then per
/// field its action, path, the three sides (last-applied | live | config;
/// `-` = absent), the reason, the cause in brackets (`[intended]`,
/// `[drift: kubectl-edit at 2026-11-20T10:04:00Z]`), and a `hazard:`
/// line per hazard. ANSI colours when `color`.
/// One line of `diff` output: data escaped (no control character from a
/// manifest or the server reaches the terminal), then painted with the ANSI
/// `code` when `color` (an empty code paints nothing).
fn paint(color: bool, code: &str, s: &str) -> String {
    let s = crate::text::escape_controls(s);
    if color && !code.is_empty() {
        format!("\x1b[{code}m{s}\x1b[0m")
    } else {
        s.into_owned()
    }
}

/// An object's mark, word and colour in both `diff` layouts.
fn object_mark(action: ObjectAction) -> (&'static str, &'static str, &'static str) {
    match action {
        ObjectAction::Create => ("+", "create", "32"),
        ObjectAction::Update => ("~", "update", "33"),
        ObjectAction::Unchanged => ("=", "unchanged", "2"),
        ObjectAction::Prune => ("-", "prune", "31"),
        ObjectAction::Error => ("!", "error", "31;1"),
    }
}

pub fn render_diff(plan: &Plan, color: bool) -> String {
    let paint = |code: &str, s: &str| paint(color, code, s);
    let mut out = String::new();
    for obj in &plan.objects {
        let obj = mask_plan(obj);
        let (sym, word, code) = object_mark(obj.action);
        let id = obj.id();
        let mut header = format!("{sym} {id} ({word})");
        if let Some(src) = &obj.source {
            let _ = write!(header, "  {src}");
        }
        if let Some(r) = &obj.prune_reason {
            let _ = write!(header, "  {r}");
        }
        if obj.reverts_drift {
            header.push_str("  reverts drift");
        }
        let _ = writeln!(out, "{}", paint(&format!("{code};1"), &header));
        if let Some(e) = &obj.error {
            let _ = writeln!(out, "    {}", paint("31", &format!("error: {e}")));
        }
        for w in &obj.warnings {
            let _ = writeln!(out, "    {}", paint("35", &format!("warning: {w}")));
        }
        for f in &obj.fields {
            let (word, code) = match f.action {
                FieldAction::Set if f.live.is_none() => ("set  ", "32"),
                FieldAction::Set => ("set  ", "33"),
                FieldAction::Clear => ("clear", "31"),
                FieldAction::Keep => ("keep ", "2;34"),
            };
            let line = format!(
                "{word} {}  last-applied: {} | live: {} | config: {}  ({})  [{}]",
                f.path,
                show(&f.last_applied),
                show(&f.live),
                show(&f.config),
                f.reason,
                f.cause_tag()
            );
            let _ = writeln!(out, "    {}", paint(code, &line));
            for h in &f.hazards {
                let _ = writeln!(
                    out,
                    "      {}",
                    paint("31;1", &format!("hazard: {}", h.message))
                );
            }
        }
    }
    if let Some(why) = &plan.prune_skipped {
        let _ = writeln!(out, "{}", paint("31;1", &format!("! {why}")));
    }
    out
}

/// `kapply diff` on a terminal: per object one header line (an unchanged
/// object is just that line), then its changed fields grouped under it,
/// each marked and coloured by cause (drift stands out: `!` and its own
/// colour, so it reads without colour too), its live value and what apply
/// makes of it, and its hazards. Kept fields only with `show_kept`.
pub fn render_diff_terminal(plan: &Plan, color: bool, show_kept: bool) -> String {
    let paint = |code: &str, s: &str| paint(color, code, s);
    let mut out = String::new();
    for obj in &plan.objects {
        let obj = mask_plan(obj);
        let (sym, word, code) = object_mark(obj.action);
        let mut header = format!("{sym} {}  {word}", obj.id());
        if obj.reverts_drift {
            header.push_str(" · reverts drift");
        }
        if let Some(src) = &obj.source {
            let _ = write!(header, "  {src}");
        }
        if let Some(r) = &obj.prune_reason {
            let _ = write!(header, "  {r}");
        }
        let _ = writeln!(out, "{}", paint(&format!("{code};1"), &header));
        if let Some(e) = &obj.error {
            let _ = writeln!(out, "    {}", paint("31", &format!("error: {e}")));
        }
        for w in &obj.warnings {
            let _ = writeln!(out, "    {}", paint("35", &format!("warning: {w}")));
        }
        let unchanged = obj.action == ObjectAction::Unchanged;
        let mut kept = 0;
        for f in &obj.fields {
            let is_kept = f.action == FieldAction::Keep;
            if is_kept && !show_kept {
                kept += 1;
                continue;
            }
            let (mark, code) = match (is_kept, f.cause) {
                (true, _) => ("=", "2"),
                (false, Cause::Drift) => ("!", "1;35"),
                (false, Cause::Intended) => ("~", "33"),
                (false, Cause::New) => ("+", "32"),
                (false, Cause::Removed) => ("-", "31"),
                (false, Cause::Unmanaged) => ("?", "36"),
                (false, Cause::ServerDefault | Cause::OtherWriter) => ("~", "33"),
            };
            let head = format!("{mark} {}  {}", f.path, f.cause_text());
            let _ = writeln!(out, "  {}", paint(code, &head));
            let _ = writeln!(out, "      {}", paint("", &field_values(f)));
            for h in &f.hazards {
                let _ = writeln!(out, "      {}", paint("31;1", &format!("⚠ {}", h.message)));
            }
        }
        if kept > 0 && !unchanged {
            let s = if kept == 1 { "" } else { "s" };
            let _ = writeln!(
                out,
                "  {}",
                paint(
                    "2",
                    &format!(
                        "· {kept} kept field{s} (server defaults, other writers): --show-kept lists them"
                    )
                )
            );
        }
    }
    if let Some(why) = &plan.prune_skipped {
        let _ = writeln!(out, "{}", paint("31;1", &format!("! {why}")));
    }
    out
}

/// A field's values as a terminal diff shows them: live, then what apply
/// makes of it; last-applied too where it differs from both.
fn field_values(f: &FieldChange) -> String {
    let v = |x: &Option<Value>| match x {
        None => "(none)".to_string(),
        Some(v) => merge::go_json(v),
    };
    let mut s = match f.action {
        FieldAction::Keep => format!("{} (kept)", v(&f.live)),
        FieldAction::Clear if f.config.is_none() => format!("{} → (removed)", v(&f.live)),
        FieldAction::Set | FieldAction::Clear => format!("{} → {}", v(&f.live), v(&f.config)),
    };
    let differs = |x: &Option<Value>| match (&f.last_applied, x) {
        (Some(a), Some(b)) => !merge::deep_eq(a, b),
        (Some(_), None) => true,
        _ => false,
    };
    if f.action != FieldAction::Keep && differs(&f.live) && differs(&f.config) {
        let _ = write!(s, "   (last-applied {})", v(&f.last_applied));
    }
    s
}

#[cfg(test)]
mod diff_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn no_control_character_reaches_the_terminal_in_either_layout() {
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c\u{9b}", "namespace": "d"},
            "data": {"k\u{1b}[2J": "v\u{9b}1\u{7f}"}});
        let m = crate::manifest::Manifest {
            id: ObjectRef::from_object(&config).unwrap(),
            version: "v1".into(),
            source: crate::manifest::Source {
                file: "c.yaml".into(),
                line: 1,
            },
            object: config,
            lines: Default::default(),
        };
        let plan = Plan {
            objects: vec![plan_object(&m, None, &PlanOptions::default())],
            prune_skipped: None,
        };
        for color in [false, true] {
            for out in [
                render_diff(&plan, color),
                render_diff_terminal(&plan, color, true),
            ] {
                // Only the ANSI colour codes kapply writes itself remain.
                let data = out.replace("\x1b[", "");
                assert!(
                    !data.chars().any(|c| c.is_control() && c != '\n'),
                    "{out:?}"
                );
                assert!(out.contains("\\u{9b}"), "{out:?}");
            }
        }
    }
}

#[cfg(test)]
mod release_tests {
    use super::{release_annotation, release_from_last_applied};
    use serde_json::json;

    #[test]
    fn release_annotation_drops_the_fields_and_keeps_kubectl_encoding() {
        let la = r#"{"apiVersion":"v1","data":{"a":"1","b":"<2>"},"kind":"ConfigMap","metadata":{"annotations":{},"labels":{"app":"x"},"name":"c","namespace":"d"}}"#;
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "d", "labels": {"app": "x"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": la}},
            "data": {"a": "9", "b": "<2>"}});
        let out =
            release_annotation(&live, &["data.a".into(), "metadata.labels.app".into()]).unwrap();
        assert_eq!(
            out.annotation,
            "{\"apiVersion\":\"v1\",\"data\":{\"b\":\"\\u003c2\\u003e\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"name\":\"c\",\"namespace\":\"d\"}}\n"
        );
        assert_eq!(out.fields[0].last_applied, json!("1"));
        assert_eq!(out.fields[0].live, Some(json!("9")));

        let missing = release_annotation(&live, &["data.z".into()]).unwrap_err();
        assert!(
            missing.ends_with(
                "data.z is not in its last-applied configuration, so apply does not own it; \
                 fields there: data.a, data.b, metadata.annotations, metadata.labels.app"
            ),
            "{missing}"
        );
        assert!(
            release_annotation(&live, &["kind".into()])
                .unwrap_err()
                .contains("names the object")
        );
        let mut bare = live.clone();
        bare["metadata"]["annotations"] = json!({});
        assert!(
            release_annotation(&bare, &["data.a".into()])
                .unwrap_err()
                .starts_with(
                    "ConfigMap d/c has no kubectl.kubernetes.io/last-applied-configuration"
                )
        );
    }

    #[test]
    fn a_released_leaf_goes_with_the_parents_it_leaves_empty() {
        let config = json!({"metadata": {"name": "x"}, "data": {"b": "2"}});
        let la = json!({"metadata": {"name": "x", "labels": {"app": "a"}}, "data": {"a": "1", "b": "2"}});
        let out = release_from_last_applied(
            &config,
            Some(&la),
            &["metadata.labels.app".into(), "data.a".into()],
        );
        // `labels: {}` would make the patch delete every label.
        assert_eq!(
            out,
            Some(json!({"metadata": {"name": "x"}, "data": {"b": "2"}}))
        );
        assert_eq!(
            release_from_last_applied(&config, None, &["data.a".into()]),
            None
        );
    }
}
