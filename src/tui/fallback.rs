//! FALLBACKS, one function each, for helpers other work owns and that had not
//! landed when the TUI was written. The lead swaps each body for the real
//! function (named in its doc comment); callers only use these wrappers.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A colour as the highlighter returns it.
pub type Rgb = (u8, u8, u8);

/// The mask shown in place of Secret values.
pub const MASK: &str = "***";

/// SWAP: `crate::plan::mask_secret`. Masks `data`/`stringData` values of a Secret.
pub fn mask_secret(obj: &Value) -> Value {
    let mut out = obj.clone();
    if obj.get("kind").and_then(Value::as_str) != Some("Secret") {
        return out;
    }
    for field in ["data", "stringData"] {
        if let Some(Value::Object(m)) = out.get_mut(field) {
            for v in m.values_mut() {
                *v = Value::String(MASK.to_string());
            }
        }
    }
    out
}

/// SWAP: `crate::yaml::to_yaml`. YAML text for display.
pub fn to_yaml(value: &Value) -> String {
    serde_saphyr::to_string(value)
        .unwrap_or_else(|_| serde_json::to_string_pretty(value).unwrap_or_default())
}

/// SWAP: `crate::plan::field_owners`. Field path -> manager, from managedFields
/// (`fieldsV1`), in the plan's path syntax.
pub fn owners(live: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(entries) = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
    else {
        return out;
    };
    for e in entries {
        let (Some(manager), Some(fields)) = (
            e.get("manager").and_then(Value::as_str),
            e.get("fieldsV1").and_then(Value::as_object),
        ) else {
            continue;
        };
        walk_fields("", fields, manager, &mut out);
    }
    out
}

fn walk_fields(
    path: &str,
    fields: &Map<String, Value>,
    manager: &str,
    out: &mut BTreeMap<String, String>,
) {
    for (k, v) in fields {
        let child = if let Some(name) = k.strip_prefix("f:") {
            crate::merge::path::key(path, name)
        } else if let Some(key) = k.strip_prefix("k:") {
            // `k:{"name":"nginx"}` names a keyed list element.
            match serde_json::from_str::<Map<String, Value>>(key) {
                Ok(m) if m.len() == 1 => match m.iter().next() {
                    Some((mk, mv)) => crate::merge::path::element(path, mk, mv),
                    None => continue,
                },
                Ok(m) => {
                    let inner: Vec<String> = m
                        .iter()
                        .map(|(mk, mv)| match mv {
                            Value::String(s) => format!("{mk}={s}"),
                            other => format!("{mk}={other}"),
                        })
                        .collect();
                    format!("{path}[{}]", inner.join(","))
                }
                Err(_) => continue,
            }
        } else if let Some(val) = k.strip_prefix("v:") {
            format!("{path}[{val}]")
        } else if let Some(i) = k.strip_prefix("i:") {
            format!("{path}[{i}]")
        } else {
            // "." marks the element itself.
            out.entry(path.to_string())
                .or_insert_with(|| manager.to_string());
            continue;
        };
        match v.as_object() {
            Some(m) if !m.is_empty() => walk_fields(&child, m, manager, out),
            _ => {
                out.entry(child).or_insert_with(|| manager.to_string());
            }
        }
    }
}

/// SWAP: `crate::highlight::highlight_yaml`. A small YAML line colourer.
pub fn highlight_yaml(text: &str) -> Vec<Vec<(Rgb, String)>> {
    const KEY: Rgb = (102, 217, 239);
    const STR: Rgb = (166, 226, 46);
    const NUM: Rgb = (174, 129, 255);
    const PUNCT: Rgb = (248, 248, 242);
    const COMMENT: Rgb = (117, 113, 94);
    text.lines()
        .map(|line| {
            let mut spans = Vec::new();
            let trimmed = line.trim_start();
            let indent = &line[..line.len() - trimmed.len()];
            if !indent.is_empty() {
                spans.push((PUNCT, indent.to_string()));
            }
            let mut rest = trimmed;
            if let Some(r) = rest.strip_prefix("- ") {
                spans.push((PUNCT, "- ".to_string()));
                rest = r;
            }
            if rest.starts_with('#') {
                spans.push((COMMENT, rest.to_string()));
                return spans;
            }
            let value = match split_key(rest) {
                Some((key, value)) => {
                    spans.push((KEY, key.to_string()));
                    spans.push((PUNCT, ":".to_string()));
                    value
                }
                None => rest,
            };
            if !value.is_empty() {
                let v = value.trim_start();
                let colour =
                    if v.parse::<f64>().is_ok() || matches!(v, "true" | "false" | "null" | "~") {
                        NUM
                    } else {
                        STR
                    };
                spans.push((colour, value.to_string()));
            }
            spans
        })
        .collect()
}

/// `key: value` -> (key, " value"); quoted keys kept whole.
fn split_key(s: &str) -> Option<(&str, &str)> {
    let end = if s.starts_with('"') || s.starts_with('\'') {
        let q = s.chars().next()?;
        s[1..].find(q)? + 2
    } else {
        0
    };
    let idx = s[end..].find(':').map(|i| i + end)?;
    let after = &s[idx + 1..];
    if after.is_empty() || after.starts_with(' ') {
        Some((&s[..idx], after))
    } else {
        None
    }
}

/// SWAP: `crate::merge::apply::apply_strategic` / `apply_merge`. The object the
/// server would hold after the patch: an approximation that merges maps,
/// merges lists of maps by `name`, honours nulls and `$patch: delete`, and
/// drops other `$` directives.
pub fn apply_patch(live: &Value, patch: &Value) -> Value {
    match (live, patch) {
        (Value::Object(l), Value::Object(p)) => {
            let mut out = l.clone();
            for (k, v) in p {
                if k.starts_with('$') {
                    continue;
                }
                if v.is_null() {
                    out.remove(k);
                    continue;
                }
                let merged = match out.get(k) {
                    Some(existing) => apply_patch(existing, v),
                    None => strip_directives(v),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Value::Array(l), Value::Array(p)) if by_name(l) && by_name(p) => {
            let mut out = l.clone();
            for pe in p {
                let name = pe.get("name");
                let delete = pe.get("$patch").and_then(Value::as_str) == Some("delete");
                match out.iter().position(|le| le.get("name") == name) {
                    Some(i) if delete => {
                        out.remove(i);
                    }
                    Some(i) => out[i] = apply_patch(&out[i], pe),
                    None if delete => {}
                    None => out.push(strip_directives(pe)),
                }
            }
            Value::Array(out)
        }
        (_, p) => strip_directives(p),
    }
}

fn by_name(list: &[Value]) -> bool {
    !list.is_empty() && list.iter().all(|e| e.get("name").is_some())
}

fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, v)| !k.starts_with('$') && !v.is_null())
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn owners_from_managed_fields() {
        let live = json!({"metadata": {"managedFields": [
            {"manager": "kubectl-scale", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
            {"manager": "kube-controller-manager", "fieldsV1": {"f:spec": {"f:template": {"f:spec": {
                "f:containers": {"k:{\"name\":\"nginx\"}": {".": {}, "f:imagePullPolicy": {}}}}}}}}
        ]}});
        let o = owners(&live);
        assert_eq!(o["spec.replicas"], "kubectl-scale");
        assert_eq!(
            o["spec.template.spec.containers[name=nginx].imagePullPolicy"],
            "kube-controller-manager"
        );
        assert_eq!(
            o["spec.template.spec.containers[name=nginx]"],
            "kube-controller-manager"
        );
    }

    #[test]
    fn secret_masked() {
        let s = json!({"kind": "Secret", "data": {"a": "c2VjcmV0"}, "stringData": {"b": "x"}});
        let m = mask_secret(&s);
        assert_eq!(m["data"]["a"], MASK);
        assert_eq!(m["stringData"]["b"], MASK);
        let cm = json!({"kind": "ConfigMap", "data": {"a": "b"}});
        assert_eq!(mask_secret(&cm), cm);
    }

    #[test]
    fn patch_merges_by_name_and_clears() {
        let live =
            json!({"spec": {"replicas": 2, "min": 5, "c": [{"name": "a", "image": "x", "p": 1}]}});
        let patch = json!({"spec": {"min": null, "$setElementOrder/c": [{"name": "a"}],
            "c": [{"name": "a", "image": "y"}]}});
        assert_eq!(
            apply_patch(&live, &patch),
            json!({"spec": {"replicas": 2, "c": [{"name": "a", "image": "y", "p": 1}]}})
        );
    }

    #[test]
    fn highlight_splits_keys() {
        let h = highlight_yaml("a: 1\n- b: \"x\"\n");
        assert_eq!(h[0][0].1, "a");
        assert_eq!(h[1][0].1, "- ");
        assert_eq!(h[1][1].1, "b");
    }
}
