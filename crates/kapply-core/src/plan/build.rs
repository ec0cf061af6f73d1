//! Building the plan of one object: the three-way merge against its live
//! object, the warnings, prune candidates and objects that failed.

use super::{ObjectAction, ObjectPlan, PlanOptions};
use super::{hazards, owners};
use crate::fieldpath as path;
use crate::manifest::Manifest;
use crate::merge::{self, LAST_APPLIED};
use crate::patchmeta::PatchMeta;
use serde_json::{Map, Value};

pub(super) fn str_at<'v>(v: &'v Value, ptr: &str) -> Option<&'v str> {
    path::pointer(v, ptr).and_then(Value::as_str)
}

pub(super) fn base_plan(
    config: &Value,
    source: Option<String>,
    action: ObjectAction,
) -> ObjectPlan {
    named_plan(
        str_at(config, "/apiVersion").unwrap_or_default().into(),
        str_at(config, "/kind").unwrap_or_default().into(),
        str_at(config, "/metadata/namespace").map(String::from),
        str_at(config, "/metadata/name").unwrap_or_default().into(),
        source,
        action,
    )
}

/// A plan of the object so named, with nothing planned yet.
fn named_plan(
    api_version: String,
    kind: String,
    namespace: Option<String>,
    name: String,
    source: Option<String>,
    action: ObjectAction,
) -> ObjectPlan {
    ObjectPlan {
        api_version,
        kind,
        namespace,
        name,
        source,
        action,
        reverts_drift: false,
        annotation_only: false,
        fields: vec![],
        patch: None,
        last_applied: None,
        warnings: vec![],
        error: None,
        kind_not_served: false,
        prune_reason: None,
        config: None,
        live: None,
    }
}

/// The last-applied configuration recorded on a live object: `Ok(None)`
/// when the annotation is absent.
pub fn recorded_last_applied(live: &Value) -> Result<Option<Value>, String> {
    merge::read_last_applied(live).map_err(|e| e.to_string())
}

/// Plan one manifest against its live object (`None`: it does not exist).
pub fn plan_object(m: &Manifest, live: Option<&Value>, opts: &PlanOptions) -> ObjectPlan {
    plan_object_owned(m, live.cloned(), opts)
}

/// [`plan_object`] taking the live object, which the plan keeps (no copy).
pub fn plan_object_owned(m: &Manifest, live: Option<Value>, opts: &PlanOptions) -> ObjectPlan {
    let (config, recorded) = match m.object_json() {
        // Read and recorded in one go from the manifest's text.
        Some(text) if opts.labels.is_empty() => merge::Recorded::decode(text)
            .unwrap_or_else(|e| panic!("reading back an object kapply wrote: {e}")),
        _ => {
            let config = labelled(m.object(), opts);
            let recorded = merge::Recorded::new(&config);
            (config, recorded)
        }
    };
    plan_recorded(m, config, recorded, live)
}

/// The config with `--labels`' labels set.
fn labelled(mut config: Value, opts: &PlanOptions) -> Value {
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
    config
}

/// [`plan_object_owned`] of the config and its [`merge::Recorded`] form.
fn plan_recorded(
    m: &Manifest,
    mut config: Value,
    recorded: merge::Recorded,
    live: Option<Value>,
) -> ObjectPlan {
    let api_version = m.api_version();
    let schema = PatchMeta::builtin().root(&api_version, &m.id.kind);
    // Named by the manifest's identity (the config's own fields may be
    // missing or of another type).
    let mut plan = named_plan(
        api_version,
        m.id.kind.clone(),
        m.id.namespace.clone(),
        m.id.name.clone(),
        Some(m.source.to_string()),
        ObjectAction::Create,
    );
    if let Some(why) = too_big_for_client_side(&config, recorded.annotation_len(), live.as_ref()) {
        plan.action = ObjectAction::Error;
        plan.error = Some(format!("{}: {why}", m.id));
        plan.config = Some(config);
        plan.live = live;
        return plan;
    }
    let Some(live) = live else {
        plan.fields = merge::create_fields(&config, schema);
        plan.last_applied = recorded.into_read_back();
        plan.config = Some(config);
        return plan;
    };
    plan_existing(m, &mut plan, &mut config, recorded, &live, schema);
    plan.config = Some(config);
    plan.live = Some(live);
    plan
}

/// kube-apiserver's limit on the total size of an object's annotations
/// (keys and values): `TotalAnnotationSizeLimitB`, 256 KiB.
pub const ANNOTATIONS_LIMIT: usize = 262_144;

/// Why client-side apply cannot write this config: its last-applied
/// annotation (`annotation_len` bytes), with the annotations the object
/// will carry besides (the config's, and those of the live object that
/// stay), would pass [`ANNOTATIONS_LIMIT`], which the server refuses
/// (`metadata.annotations: Too long`). Refused before anything is sent;
/// server-side apply records no annotation.
fn too_big_for_client_side(
    config: &Value,
    annotation_len: usize,
    live: Option<&Value>,
) -> Option<String> {
    // Cheap first: most annotations are far below the limit.
    if annotation_len + LAST_APPLIED.len() <= ANNOTATIONS_LIMIT / 2 {
        return None;
    }
    let annotations = |v: &Value| {
        v.pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let mut all = live.map(annotations).unwrap_or_default();
    all.extend(annotations(config));
    all.remove(LAST_APPLIED);
    let others: usize = all
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    let total = others + LAST_APPLIED.len() + annotation_len;
    (total > ANNOTATIONS_LIMIT).then(|| {
        format!(
            "too large for client-side apply: its {LAST_APPLIED} annotation would be \
             {annotation_len} bytes ({total} bytes with the object's other annotations), over \
             the {ANNOTATIONS_LIMIT} bytes the API server allows for all of an object's \
             annotations (it would answer metadata.annotations: Too long); nothing is sent. \
             Apply it server-side (kubectl apply --server-side), which records no annotation"
        )
    })
}

/// The plan of an object that exists: the three-way merge and its warnings.
fn plan_existing(
    m: &Manifest,
    plan: &mut ObjectPlan,
    config: &mut Value,
    recorded: merge::Recorded,
    live: &Value,
    schema: Option<crate::patchmeta::Schema<'_>>,
) {
    if merge::last_applied_value(live)
        .and_then(Value::as_str)
        .is_none()
    {
        plan.warnings.push(hazards::missing_last_applied(live));
    }
    let tw = recorded.three_way(config, live, schema);
    let config = &*config;
    match tw {
        Ok(tw) => {
            // Decided from the predicted result: a patch that leaves live
            // as it is (a `$setElementOrder` alone) is not sent.
            plan.action = if tw.changes {
                ObjectAction::Update
            } else {
                ObjectAction::Unchanged
            };
            plan.annotation_only = tw.changes && !tw.changes_live;
            plan.fields = tw.fields;
            owners::name_kept_writers(&mut plan.fields);
            plan.reverts_drift = merge::reverts_drift(&plan.fields);
            plan.last_applied = Some(tw.last_applied);
            plan.warnings.extend(hazards::warnings(
                &m.id.kind,
                config,
                live,
                tw.patch.as_ref(),
            ));
            if schema.is_some()
                && let Some(w) = hazards::explicit_nulls(config)
            {
                plan.warnings.push(w);
            }
            plan.patch = tw.patch.filter(|_| tw.changes);
        }
        Err(e) => {
            plan.action = ObjectAction::Error;
            plan.error = Some(format!("{}: {e}", m.id));
        }
    }
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
