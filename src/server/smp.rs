//! STAND-IN until `merge::apply::apply_strategic` lands from the apply
//! branch: a minimal strategic merge patch application (merge keys,
//! `$patch: delete`, `$retainKeys`, `$deleteFromPrimitiveList`, nulls).
//! Element order directives are not honoured (new elements are appended).

use crate::patchmeta::{ListStrategy, Schema, Shape};
use serde_json::{Map, Value};

pub fn apply_strategic(live: &Value, patch: &Value, schema: Option<Schema<'_>>) -> Value {
    merge_value(live, patch, schema)
}

fn strip(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(
            a.iter()
                .filter(|e| e.get("$patch").is_none())
                .map(strip)
                .collect(),
        ),
        other => other.clone(),
    }
}

fn merge_value(orig: &Value, patch: &Value, schema: Option<Schema<'_>>) -> Value {
    match (orig, patch) {
        (Value::Object(o), Value::Object(p))
            if schema.is_none_or(|s| s.shape() != Shape::Scalar) =>
        {
            merge_map(o, p, schema)
        }
        (Value::Array(o), Value::Array(p)) => match schema.map(|s| s.list_strategy()) {
            Some(ListStrategy::MergeByKey(key)) => {
                let items = schema.and_then(|s| s.items());
                let mut out: Vec<Value> = o.clone();
                for e in p {
                    let k = e.get(&key);
                    let pos = out.iter().position(|x| k.is_some() && x.get(&key) == k);
                    if e.get("$patch").and_then(Value::as_str) == Some("delete") {
                        if let Some(i) = pos {
                            out.remove(i);
                        }
                        continue;
                    }
                    match pos {
                        Some(i) => out[i] = merge_value(&out[i], e, items),
                        None => out.push(strip(e)),
                    }
                }
                Value::Array(out)
            }
            Some(ListStrategy::MergePrimitive) => {
                let mut out = o.clone();
                for e in p {
                    if !out.contains(e) {
                        out.push(e.clone());
                    }
                }
                Value::Array(out)
            }
            _ => strip(patch),
        },
        _ => strip(patch),
    }
}

fn merge_map(o: &Map<String, Value>, p: &Map<String, Value>, schema: Option<Schema<'_>>) -> Value {
    if p.get("$patch").and_then(Value::as_str) == Some("replace") {
        return strip(&Value::Object(p.clone()));
    }
    let mut out = o.clone();
    for (k, v) in p {
        if let Some(list) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(cur)), Value::Array(del)) = (out.get_mut(list), v) {
                cur.retain(|x| !del.contains(x));
            }
            continue;
        }
        if k.starts_with('$') {
            continue;
        }
        if v.is_null() {
            out.remove(k);
            continue;
        }
        let fs = schema.and_then(|s| s.field(k));
        let merged = match out.get(k) {
            Some(cur) => merge_value(cur, v, fs),
            None => strip(v),
        };
        out.insert(k.clone(), merged);
    }
    if let Some(Value::Array(keep)) = p.get("$retainKeys") {
        out.retain(|k, _| keep.iter().any(|x| x.as_str() == Some(k)));
    }
    Value::Object(out)
}
