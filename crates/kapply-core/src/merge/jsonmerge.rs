//! Three-way JSON merge patch (RFC 7386) for kinds kubectl does not know,
//! as apimachinery's `jsonmergepatch.CreateThreeWayJSONMergePatch` builds it:
//! additions and changes from live to config (nulls dropped), plus deletions
//! from last-applied to config (nulls only). Lists are replaced whole.

use super::MergeError;
use super::strategic::{deep_eq, type_tag};
use serde_json::{Map, Value};

pub fn three_way(
    original: &Map<String, Value>,
    modified: &Map<String, Value>,
    current: &Map<String, Value>,
) -> Result<Map<String, Value>, MergeError> {
    let add_change = keep_or_delete_null(&diff(current, modified), false);
    let deletions = keep_or_delete_null(&diff(original, modified), true);
    if has_conflicts(
        &Value::Object(add_change.clone()),
        &Value::Object(deletions.clone()),
    ) {
        return Err(MergeError::Invalid {
            path: "merge patch".into(),
            message: "the deletions and the changes conflict".into(),
        });
    }
    let mut patch = deletions;
    merge_into(&mut patch, add_change);
    for key in ["apiVersion", "kind"] {
        if patch.contains_key(key) {
            return Err(MergeError::Invalid {
                path: key.into(),
                message: format!("{key} cannot be changed by apply"),
            });
        }
    }
    if patch.get("metadata").and_then(|m| m.get("name")).is_some() {
        return Err(MergeError::Invalid {
            path: "metadata.name".into(),
            message: "the name cannot be changed by apply".into(),
        });
    }
    Ok(patch)
}

/// evanphx/json-patch `CreateMergePatch` for two objects.
fn diff(a: &Map<String, Value>, b: &Map<String, Value>) -> Map<String, Value> {
    let mut into = Map::new();
    for (k, bv) in b {
        let Some(av) = a.get(k) else {
            into.insert(k.clone(), bv.clone());
            continue;
        };
        if type_tag(av) != type_tag(bv) {
            into.insert(k.clone(), bv.clone());
            continue;
        }
        match (av, bv) {
            (Value::Object(am), Value::Object(bm)) => {
                let d = diff(am, bm);
                if !d.is_empty() {
                    into.insert(k.clone(), Value::Object(d));
                }
            }
            (Value::Null, Value::Null) => {}
            _ => {
                if !deep_eq(av, bv) {
                    into.insert(k.clone(), bv.clone());
                }
            }
        }
    }
    for k in a.keys() {
        if !b.contains_key(k) {
            into.insert(k.clone(), Value::Null);
        }
    }
    into
}

fn keep_or_delete_null(m: &Map<String, Value>, keep_null: bool) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in m {
        match v {
            Value::Null => {
                if keep_null {
                    out.insert(k.clone(), Value::Null);
                }
            }
            Value::Object(sub) if sub.is_empty() => {
                // An explicitly empty map is a value, not an empty patch.
                if !keep_null {
                    out.insert(k.clone(), v.clone());
                }
            }
            Value::Object(sub) => {
                let f = keep_or_delete_null(sub, keep_null);
                if !f.is_empty() {
                    out.insert(k.clone(), Value::Object(f));
                }
            }
            _ => {
                if !keep_null {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
    }
    out
}

/// mergepatch.HasConflicts: both patches set the same leaf differently.
fn has_conflicts(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Object(l), Value::Object(r)) => l
            .iter()
            .any(|(k, lv)| r.get(k).is_some_and(|rv| has_conflicts(lv, rv))),
        (Value::Object(_), _) => true,
        (Value::Array(l), Value::Array(r)) => {
            l.len() != r.len() || l.iter().zip(r).any(|(a, b)| has_conflicts(a, b))
        }
        (Value::Array(_), _) => true,
        _ => !deep_eq(left, right),
    }
}

/// Apply a merge patch without nulls onto a patch (evanphx MergePatch of two
/// patches): maps merge, everything else replaces.
fn merge_into(doc: &mut Map<String, Value>, patch: Map<String, Value>) {
    for (k, pv) in patch {
        match (doc.get_mut(&k), pv) {
            (Some(Value::Object(d)), Value::Object(p)) => merge_into(d, p),
            (_, pv) => {
                doc.insert(k, pv);
            }
        }
    }
}
