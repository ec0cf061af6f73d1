//! Validation the real API server performs that kubectl users meet:
//! immutable fields, the Recreate/rollingUpdate rule, required names,
//! selectors matching templates.

use super::status::Cause;
use serde_json::Value;

fn go_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

/// Check `new` (after defaulting); `old` is the stored object on updates.
pub fn validate(new: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let api_version = new["apiVersion"].as_str().unwrap_or_default();
    let kind = new["kind"].as_str().unwrap_or_default();
    let spec = &new["spec"];
    labels(&new["metadata"]["labels"], "metadata.labels", &mut causes);
    match (api_version, kind) {
        ("apps/v1", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet") => {
            workload(new, old, &mut causes);
            if kind == "StatefulSet"
                && let Some(old) = old
            {
                // Only these may change on a StatefulSet.
                let mutable = [
                    "replicas",
                    "ordinals",
                    "template",
                    "updateStrategy",
                    "persistentVolumeClaimRetentionPolicy",
                    "minReadySeconds",
                ];
                let strip = |v: &Value| {
                    let mut v = v.clone();
                    if let Some(m) = v.as_object_mut() {
                        m.retain(|k, _| !mutable.contains(&k.as_str()));
                    }
                    v
                };
                if strip(&old["spec"]) != strip(spec) {
                    causes.push(Cause::new(
                        "spec",
                        "FieldValueForbidden",
                        "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
                    ));
                }
            }
            if kind == "Deployment" {
                let strategy = &spec["strategy"];
                if strategy["type"] == "Recreate" && !strategy["rollingUpdate"].is_null() {
                    causes.push(Cause::new(
                        "spec.strategy.rollingUpdate",
                        "FieldValueForbidden",
                        "Forbidden: may not be specified when strategy `type` is 'Recreate'",
                    ));
                }
                if let Some(t) = strategy["type"].as_str()
                    && t != "Recreate"
                    && t != "RollingUpdate"
                {
                    causes.push(Cause::new(
                        "spec.strategy.type",
                        "FieldValueNotSupported",
                        format!(
                            "Unsupported value: {}: supported values: \"Recreate\", \"RollingUpdate\"",
                            go_value(&strategy["type"])
                        ),
                    ));
                }
            }
            if let Some(r) = spec.get("replicas")
                && r.as_i64().is_some_and(|r| r < 0)
            {
                causes.push(Cause::new(
                    "spec.replicas",
                    "FieldValueInvalid",
                    format!(
                        "Invalid value: {}: must be greater than or equal to 0",
                        go_value(r)
                    ),
                ));
            }
        }
        ("v1", "ConfigMap" | "Secret") => {
            if let Some(old) = old
                && old["immutable"] == true
            {
                for field in ["data", "binaryData"] {
                    if old[field] != new[field] {
                        causes.push(Cause::new(
                            field,
                            "FieldValueForbidden",
                            "Forbidden: field is immutable when `immutable` is set",
                        ));
                    }
                }
                if new["immutable"] != true {
                    causes.push(Cause::new(
                        "immutable",
                        "FieldValueForbidden",
                        "Forbidden: field is immutable when `immutable` is set",
                    ));
                }
            }
        }
        ("batch/v1", "Job") => {
            containers(&spec["template"]["spec"], "spec.template.spec", &mut causes);
            if let Some(old) = old
                && old["spec"]["template"] != spec["template"]
            {
                causes.push(Cause::new(
                    "spec.template",
                    "FieldValueInvalid",
                    format!("Invalid value: {}: field is immutable", spec["template"]),
                ));
            }
        }
        ("v1", "Pod") => containers(spec, "spec", &mut causes),
        ("v1", "Service") => {
            if let Some(old) = old {
                let before = &old["spec"]["clusterIP"];
                let after = &spec["clusterIP"];
                // An ExternalName has none (the storage dropped it).
                let released = spec["type"] == "ExternalName" && after.is_null();
                if !before.is_null() && before != after && !released {
                    causes.push(Cause::new(
                        "spec.clusterIPs[0]",
                        "FieldValueInvalid",
                        format!(
                            "Invalid value: []string{{{}}}: may not change once set",
                            go_value(after)
                        ),
                    ));
                }
            }
            if let Some(ports) = spec["ports"].as_array() {
                for (i, p) in ports.iter().enumerate() {
                    if p["port"].is_null() {
                        causes.push(Cause::new(
                            format!("spec.ports[{i}].port"),
                            "FieldValueRequired",
                            "Required value",
                        ));
                    }
                }
            }
        }
        _ => {}
    }
    causes
}

/// Label keys (`[prefix/]name`) and values, as the API server checks them:
/// one cause per reason, worded as apimachinery words it (the same checks
/// as label selectors, `kapply_core::selector`).
fn labels(labels: &Value, at: &str, causes: &mut Vec<Cause>) {
    let Some(m) = labels.as_object() else {
        return;
    };
    for (k, v) in m {
        let value = v.as_str().unwrap_or_default();
        let reasons = kapply_core::selector::qualified_name_errors(k)
            .into_iter()
            .map(|why| format!("Invalid value: {k:?}: {why}"))
            .chain(
                kapply_core::selector::label_value_errors(value)
                    .into_iter()
                    .map(|why| format!("Invalid value: {value:?}: {why}")),
            );
        for message in reasons {
            causes.push(Cause::new(at, "FieldValueInvalid", message));
        }
    }
}

fn workload(new: &Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
    let spec = &new["spec"];
    let selector = &spec["selector"];
    if selector.is_null() {
        causes.push(Cause::new(
            "spec.selector",
            "FieldValueRequired",
            "Required value",
        ));
    } else if let Some(ml) = selector["matchLabels"].as_object() {
        let labels = &spec["template"]["metadata"]["labels"];
        let ok = ml.iter().all(|(k, v)| &labels[k] == v);
        if !ok {
            causes.push(Cause::new(
                "spec.template.metadata.labels",
                "FieldValueInvalid",
                format!(
                    "Invalid value: {}: `selector` does not match template `labels`",
                    labels
                ),
            ));
        }
    }
    if let Some(old) = old
        && old["spec"]["selector"] != *selector
    {
        causes.push(Cause::new(
            "spec.selector",
            "FieldValueInvalid",
            format!("Invalid value: {selector}: field is immutable"),
        ));
    }
    containers(&spec["template"]["spec"], "spec.template.spec", causes);
}

fn containers(pod_spec: &Value, at: &str, causes: &mut Vec<Cause>) {
    seccomp(
        &pod_spec["securityContext"]["seccompProfile"],
        &format!("{at}.securityContext.seccompProfile"),
        causes,
    );
    match pod_spec["containers"].as_array() {
        Some(cs) if !cs.is_empty() => {
            for (i, c) in cs.iter().enumerate() {
                seccomp(
                    &c["securityContext"]["seccompProfile"],
                    &format!("{at}.containers[{i}].securityContext.seccompProfile"),
                    causes,
                );
                for field in ["name", "image"] {
                    if c[field].as_str().is_none_or(str::is_empty) {
                        causes.push(Cause::new(
                            format!("{at}.containers[{i}].{field}"),
                            "FieldValueRequired",
                            "Required value",
                        ));
                    }
                }
            }
        }
        _ => causes.push(Cause::new(
            format!("{at}.containers"),
            "FieldValueRequired",
            "Required value",
        )),
    }
}

/// A seccompProfile, as kube-apiserver's pod validation checks it: a type
/// is required, and a Localhost one names its profile.
fn seccomp(profile: &Value, at: &str, causes: &mut Vec<Cause>) {
    if !profile.is_object() {
        return;
    }
    match profile["type"].as_str().unwrap_or_default() {
        "" => causes.push(Cause::new(
            format!("{at}.type"),
            "FieldValueRequired",
            "Required value: type is required when seccompProfile is set",
        )),
        "Localhost"
            if profile["localhostProfile"]
                .as_str()
                .is_none_or(str::is_empty) =>
        {
            causes.push(Cause::new(
                format!("{at}.localhostProfile"),
                "FieldValueRequired",
                "Required value: must be set when seccomp type is Localhost",
            ))
        }
        _ => {}
    }
}

/// Unknown fields of a built-in kind, for `fieldValidation=Strict`
/// (`.spec.foo`-style paths as the real server reports them).
pub fn unknown_fields(obj: &Value, schema: kapply_core::patchmeta::Schema<'_>) -> Vec<String> {
    let mut out = Vec::new();
    walk_unknown(obj, schema, "", &mut out);
    out
}

fn walk_unknown(
    v: &Value,
    schema: kapply_core::patchmeta::Schema<'_>,
    at: &str,
    out: &mut Vec<String>,
) {
    use kapply_core::patchmeta::Shape;
    match (v, schema.shape()) {
        (Value::Object(m), Shape::Struct) => {
            for (k, child) in m {
                let path = format!("{at}.{k}");
                match schema.field(k) {
                    Some(s) => walk_unknown(child, s, &path, out),
                    None => out.push(path),
                }
            }
        }
        (Value::Object(m), Shape::Map) => {
            for (k, child) in m {
                if let Some(s) = schema.field(k) {
                    walk_unknown(child, s, &format!("{at}.{k}"), out);
                }
            }
        }
        (Value::Array(items), Shape::List) => {
            if let Some(s) = schema.items() {
                for (i, item) in items.iter().enumerate() {
                    walk_unknown(item, s, &format!("{at}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dep(strategy: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"app": "x"}}, "strategy": strategy,
                "template": {"metadata": {"labels": {"app": "x"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    }

    #[test]
    fn recreate_with_rolling_update_is_forbidden() {
        let c = validate(
            &dep(json!({"type": "Recreate", "rollingUpdate": {"maxSurge": 1}})),
            None,
        );
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].field, "spec.strategy.rollingUpdate");
        assert!(validate(&dep(json!({"type": "Recreate"})), None).is_empty());
    }

    #[test]
    fn label_keys_and_values_are_checked_as_selectors_check_them() {
        let long = "v".repeat(64);
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
            "labels": {"Bad_Prefix.example/ok": "x", "ok": long, "fine.example.com/a": "b"}}});
        let details: Vec<String> = validate(&cm, None)
            .into_iter()
            .map(|c| {
                assert_eq!(c.field, "metadata.labels");
                c.detail
            })
            .collect();
        // The reason the key is wrong is its prefix, as apimachinery says.
        assert_eq!(details.len(), 2, "{details:?}");
        assert!(
            details[0].starts_with(
                "Invalid value: \"Bad_Prefix.example/ok\": prefix part a lowercase RFC 1123 \
                 subdomain must consist of"
            ),
            "{details:?}"
        );
        assert_eq!(
            details[1],
            format!("Invalid value: {long:?}: must be no more than 63 characters")
        );
    }

    #[test]
    fn selector_is_immutable() {
        let old = dep(json!({}));
        let mut new = old.clone();
        new["spec"]["selector"]["matchLabels"]["app"] = json!("y");
        new["spec"]["template"]["metadata"]["labels"]["app"] = json!("y");
        let c = validate(&new, Some(&old));
        assert_eq!(c[0].field, "spec.selector");
        assert!(c[0].detail.ends_with("field is immutable"));
    }

    #[test]
    fn strict_finds_unknown_fields() {
        let meta = kapply_core::patchmeta::PatchMeta::builtin();
        let schema = meta.root("apps/v1", "Deployment").unwrap();
        let mut d = dep(json!({}));
        d["spec"]["bogus"] = json!(1);
        d["spec"]["template"]["spec"]["containers"][0]["imag"] = json!("x");
        let u = unknown_fields(&d, schema);
        assert_eq!(
            u,
            vec![".spec.bogus", ".spec.template.spec.containers[0].imag"]
        );
    }
}
