//! Object-level hazards: what kubectl does not tell about before the server
//! rejects the patch or silently keeps stale defaults, as the plan's
//! `warnings`. Each hazard is one named rule holding its own words; the
//! rules run in [`RULES`] order, which is the order of the warnings.
//!
//! `merge::hazards` holds the per-field hazards (a row's `hazards`: lost
//! elements, reverted hotfixes, autoscalers); these need the object's kind
//! and the patch as a whole.

use crate::fieldpath as path;
use crate::merge::{LAST_APPLIED, Patch};
use serde_json::Value;

/// What a rule looks at: the object's kind, its config and live object,
/// and the body of the patch apply sends.
struct Subject<'a> {
    kind: &'a str,
    config: &'a Value,
    live: &'a Value,
    body: &'a Value,
}

impl Subject<'_> {
    fn config_str(&self, ptr: &str) -> Option<&str> {
        path::pointer(self.config, ptr).and_then(Value::as_str)
    }

    fn live_str(&self, ptr: &str) -> Option<&str> {
        path::pointer(self.live, ptr).and_then(Value::as_str)
    }

    /// Whether the patch body names the field at `keys` (directives aside).
    fn touches(&self, keys: &[&str]) -> bool {
        let mut cur = self.body;
        for k in keys {
            match cur.get(*k) {
                Some(v) => cur = v,
                None => return false,
            }
        }
        true
    }
}

/// One hazard: its warnings for an object (none when it does not apply).
type Rule = fn(&Subject) -> Vec<String>;

/// Every rule, in the order their warnings are listed: (i) server-defaulted
/// fields whose default depends on a changed field, (ii) immutable fields.
const RULES: &[Rule] = &[
    recreate_keeps_rolling_update,
    on_delete_keeps_rolling_update,
    service_type_keeps_defaults,
    immutable_selector,
    immutable_job_template,
    immutable_cluster_ip,
    immutable_stateful_set_fields,
    immutable_claim_spec,
    immutable_config_data,
];

/// The warnings of every rule for an object whose apply sends `patch`
/// (`None`: nothing is sent, nothing can be rejected).
pub(super) fn warnings(
    kind: &str,
    config: &Value,
    live: &Value,
    patch: Option<&Patch>,
) -> Vec<String> {
    let Some(patch) = patch else {
        return vec![];
    };
    let s = Subject {
        kind,
        config,
        live,
        body: &patch.body,
    };
    // Nothing kind-specific is known about custom resources (merge
    // patches): no rule names their kinds.
    RULES.iter().flat_map(|rule| rule(&s)).collect()
}

/// A live object without the last-applied annotation: created
/// imperatively, or applied server-side (an `Apply` entry in its
/// managedFields, named, since "created imperatively" would then be false).
pub(super) fn missing_last_applied(live: &Value) -> String {
    let mut appliers: Vec<&str> = live["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["operation"] == "Apply" && e.get("subresource").is_none())
        .filter_map(|e| e["manager"].as_str())
        .collect();
    appliers.dedup();
    if appliers.is_empty() {
        return format!(
            "{LAST_APPLIED} annotation is missing: the object was created imperatively \
             (kubectl create/replace), so apply cannot clear what it never recorded; \
             nothing will be deleted and the annotation will be added"
        );
    }
    format!(
        "{LAST_APPLIED} annotation is missing: the object is applied server-side (by {}), \
         so client-side apply cannot clear what it never recorded; nothing will be deleted \
         and the annotation will be added (--server-side keeps it server-side)",
        appliers.join(", ")
    )
}

/// Explicit nulls in a config of a built-in kind: kubectl sends them on
/// every apply.
pub(super) fn explicit_nulls(config: &Value) -> Option<String> {
    // Configs rarely hold a null: found first, so the paths are built
    // only for a config that has one.
    if !has_null(config) {
        return None;
    }
    let mut nulls = vec![];
    null_paths(&mut String::new(), config, &mut nulls);
    (!nulls.is_empty()).then(|| {
        format!(
            "explicit null in the config ({}): kubectl sends it on every apply \
             and reports the object configured even when nothing changes",
            nulls.join(", ")
        )
    })
}

/// Whether [`null_paths`] finds any: a map member that is null (a null
/// list element is not one).
fn has_null(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.values().any(|x| x.is_null() || has_null(x)),
        Value::Array(a) => a.iter().any(has_null),
        _ => false,
    }
}

/// Paths of the explicit nulls in a config (keyed list elements by index).
/// `p` is the path of `v`, restored on return: one buffer for the whole
/// walk, copied only for a null.
fn null_paths(p: &mut String, v: &Value, out: &mut Vec<String>) {
    let len = p.len();
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                path::push_key(p, k);
                if x.is_null() {
                    out.push(p.clone());
                } else {
                    null_paths(p, x, out);
                }
                p.truncate(len);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                use std::fmt::Write as _;
                let _ = write!(p, "[{i}]");
                null_paths(p, x, out);
                p.truncate(len);
            }
        }
        _ => {}
    }
}

/// A Deployment's strategy changing to Recreate while live has the
/// server-defaulted rollingUpdate.
fn recreate_keeps_rolling_update(s: &Subject) -> Vec<String> {
    if s.kind != "Deployment" {
        return vec![];
    }
    let ctype = s.config_str("/spec/strategy/type");
    let ltype = s.live_str("/spec/strategy/type");
    let live_ru = path::pointer(s.live, "/spec/strategy/rollingUpdate").is_some();
    if ctype != Some("Recreate") || ltype == Some("Recreate") || !live_ru {
        return vec![];
    }
    let retained = path::pointer(
        s.body,
        &format!("/spec/strategy/{}", crate::vocab::RETAIN_KEYS),
    )
    .and_then(Value::as_array);
    let clears = retained.is_some_and(|r| !r.iter().any(|k| k == "rollingUpdate"))
        || path::pointer(s.body, "/spec/strategy/rollingUpdate") == Some(&Value::Null);
    let w = if path::pointer(s.config, "/spec/strategy/rollingUpdate").is_some_and(|v| !v.is_null())
    {
        "spec.strategy.type is Recreate but the config sets spec.strategy.rollingUpdate: \
         the server will reject it (422)"
    } else if clears {
        "spec.strategy.type changes to Recreate while live has the server-defaulted \
         spec.strategy.rollingUpdate: $retainKeys clears it, so the change succeeds"
    } else {
        "spec.strategy.type changes to Recreate while live has the server-defaulted \
         spec.strategy.rollingUpdate, which the patch keeps: the server will reject it \
         (422); set spec.strategy.rollingUpdate: null in the config"
    };
    vec![w.into()]
}

/// A StatefulSet's updateStrategy changing to OnDelete while live keeps
/// the server-defaulted rollingUpdate.
fn on_delete_keeps_rolling_update(s: &Subject) -> Vec<String> {
    if s.kind != "StatefulSet" {
        return vec![];
    }
    let ctype = s.config_str("/spec/updateStrategy/type");
    let live_ru = path::pointer(s.live, "/spec/updateStrategy/rollingUpdate").is_some();
    let cleared = path::pointer(s.body, "/spec/updateStrategy/rollingUpdate") == Some(&Value::Null);
    if ctype == Some("OnDelete") && live_ru && !cleared {
        return vec![
            "spec.updateStrategy.type changes to OnDelete while live has the server-defaulted \
             spec.updateStrategy.rollingUpdate, which the patch keeps: the server will reject \
             it (422); set spec.updateStrategy.rollingUpdate: null in the config"
                .into(),
        ];
    }
    vec![]
}

/// A Service's type changing: which fields of the old type the server
/// drops as it stores the change (those it allocated or defaulted, where
/// the update left them as they were), and which stay.
fn service_type_keeps_defaults(s: &Subject) -> Vec<String> {
    if s.kind != "Service" {
        return vec![];
    }
    let ltype = s.live_str("/spec/type").unwrap_or("ClusterIP");
    let Some(ct) = s.config_str("/spec/type").filter(|ct| *ct != ltype) else {
        return vec![];
    };
    // The object the update gives the storage: live with the patch.
    let schema = crate::patchmeta::PatchMeta::builtin().root("v1", "Service");
    let Ok(mut merged) = crate::merge::apply::apply_strategic(s.live, s.body, schema) else {
        return vec![];
    };
    let name = |f: &crate::defaults::ServiceField| match f {
        crate::defaults::ServiceField::NodePort { .. } => "spec.ports[*].nodePort".to_string(),
        crate::defaults::ServiceField::Spec(field) => format!("spec.{field}"),
    };
    let mut dropped: Vec<String> = crate::defaults::service_drops_unused(s.live, &mut merged)
        .iter()
        .map(name)
        .collect();
    dropped.dedup();
    // What stays though the new type does not use it.
    let mut stays = vec![];
    let spec = &merged["spec"];
    if ct == "ExternalName" && spec.get("clusterIP").is_some() {
        stays.push("spec.clusterIP(s)");
    }
    let node_ports = spec["ports"].as_array().into_iter().flatten();
    if matches!(ct, "ClusterIP" | "ExternalName")
        && node_ports.clone().any(|p| p.get("nodePort").is_some())
    {
        stays.push("spec.ports[*].nodePort (changed by this apply: the server will reject it)");
    }
    let mut words = format!("spec.type changes from {ltype} to {ct}");
    if !dropped.is_empty() {
        words += &format!(
            ": the server drops {} as it stores the change (kept rows of them are gone after)",
            dropped.join(", ")
        );
    }
    if !stays.is_empty() {
        words += &format!("; live keeps {}", stays.join(", "));
    }
    if dropped.is_empty() && stays.is_empty() {
        return vec![];
    }
    vec![words]
}

/// The words of every immutable-field rule.
fn immutable(field: &str) -> String {
    format!("{field} is immutable: the server will reject this change (422)")
}

/// A workload's selector.
fn immutable_selector(s: &Subject) -> Vec<String> {
    match s.kind {
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job"
            if s.touches(&["spec", "selector"]) =>
        {
            vec![immutable("spec.selector")]
        }
        _ => vec![],
    }
}

/// A Job's pod template.
fn immutable_job_template(s: &Subject) -> Vec<String> {
    if s.kind == "Job" && s.touches(&["spec", "template"]) {
        return vec![
            "spec.template of a Job is immutable (except scheduling directives of a suspended \
             Job): the server will likely reject this change (422)"
                .into(),
        ];
    }
    vec![]
}

/// A Service's allocated cluster IPs (unless it becomes ExternalName).
fn immutable_cluster_ip(s: &Subject) -> Vec<String> {
    if s.kind != "Service" {
        return vec![];
    }
    ["clusterIP", "clusterIPs"]
        .into_iter()
        .filter(|f| {
            s.touches(&["spec", f]) && path::pointer(s.live, &format!("/spec/{f}")).is_some()
        })
        .filter(|_| s.config_str("/spec/type") != Some("ExternalName"))
        .map(|f| immutable(&format!("spec.{f}")))
        .collect()
}

/// The StatefulSet fields that cannot change.
fn immutable_stateful_set_fields(s: &Subject) -> Vec<String> {
    if s.kind != "StatefulSet" {
        return vec![];
    }
    ["volumeClaimTemplates", "serviceName", "podManagementPolicy"]
        .into_iter()
        .filter(|f| s.touches(&["spec", f]))
        .map(|f| immutable(&format!("spec.{f}")))
        .collect()
}

/// A PersistentVolumeClaim's spec, except resource requests and the
/// volume attributes class.
fn immutable_claim_spec(s: &Subject) -> Vec<String> {
    let mut w = vec![];
    if s.kind != "PersistentVolumeClaim" {
        return w;
    }
    let Some(spec) = s.body.get("spec").and_then(Value::as_object) else {
        return w;
    };
    for (k, v) in spec {
        if k.starts_with('$') {
            continue;
        }
        if k == "resources" {
            let others = v
                .as_object()
                .is_some_and(|r| r.keys().any(|rk| rk != "requests" && !rk.starts_with('$')));
            if others || !v.is_object() {
                w.push(immutable("spec.resources (except requests)"));
            }
            continue;
        }
        if k == "volumeAttributesClassName" {
            continue;
        }
        w.push(immutable(&format!("spec.{k} of a PersistentVolumeClaim")));
    }
    w
}

/// The data of a ConfigMap or Secret marked `immutable: true`.
fn immutable_config_data(s: &Subject) -> Vec<String> {
    let kind = s.kind;
    if !(kind == "ConfigMap" || kind == "Secret")
        || s.live.get("immutable") != Some(&Value::Bool(true))
    {
        return vec![];
    }
    ["data", "binaryData", "stringData", "immutable"]
        .into_iter()
        .filter(|f| s.touches(&[f]))
        .map(|f| {
            format!(
                "{kind} is immutable (immutable: true): the server will reject the change of {f} (422); \
                 delete and recreate it"
            )
        })
        .collect()
}
