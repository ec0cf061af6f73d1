//! Server-side apply: field ownership, conflicts, and fields a manager
//! stopped applying.

use crate::fields;
use crate::resources::ResourceInfo;
use crate::status::ApiError;
use serde_json::{Value, json};

/// Server-side apply: fields this manager applied before and no longer
/// applies are removed, unless another manager owns them too.
pub(super) fn drop_unowned_apply_fields(
    old: &Value,
    manager: &str,
    applied: &fields::FieldSet,
) -> Value {
    let entries = old["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut mine = fields::FieldSet::new();
    let mut others = fields::FieldSet::new();
    for e in &entries {
        let set = fields::from_fields_v1(&e["fieldsV1"]);
        if e["manager"] == manager && e["operation"] == "Apply" {
            mine.extend(set);
        } else {
            others.extend(set);
        }
    }
    let mut v = old.clone();
    for p in mine.difference(applied) {
        if others.contains(p) || !p.iter().all(|pe| pe.starts_with("f:")) {
            continue;
        }
        let keys: Vec<&str> = p.iter().filter_map(|pe| pe.strip_prefix("f:")).collect();
        if let Some((last, parents)) = keys.split_last() {
            let pointer: String = parents
                .iter()
                .map(|k| format!("/{}", k.replace('~', "~0").replace('/', "~1")))
                .collect();
            if let Some(m) = v.pointer_mut(&pointer).and_then(Value::as_object_mut) {
                m.remove(*last);
            }
        }
    }
    v
}

/// Server-side apply without force: a field another manager owns with a
/// different value is a conflict (409).
pub(super) fn apply_conflicts(
    r: &ResourceInfo,
    old: &Value,
    patch: &Value,
    manager: &str,
    applied: &fields::FieldSet,
) -> Result<(), ApiError> {
    let mut conflicts: Vec<(String, String)> = Vec::new();
    for e in old["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if e["manager"] == manager && e["operation"] == "Apply" {
            continue;
        }
        let owner = match e["subresource"].as_str().filter(|s| !s.is_empty()) {
            Some(sub) => format!(
                "{}\" with subresource \"{sub}",
                e["manager"].as_str().unwrap_or_default()
            ),
            None => e["manager"].as_str().unwrap_or_default().to_string(),
        };
        let theirs = fields::from_fields_v1(&e["fieldsV1"]);
        for p in applied.intersection(&theirs) {
            if p.last().is_some_and(|pe| pe == ".") {
                continue;
            }
            if fields::lookup(old, p) != fields::lookup(patch, p) {
                conflicts.push((owner.clone(), fields::display(p)));
            }
        }
    }
    // As the real server: kubectl's own manager moving from client-side
    // apply may take the fields its last-applied annotation names that
    // still hold those values (nobody changed them since); the others are
    // the conflicts reported.
    if manager == "kubectl"
        && let Some(allowed) = last_applied_fields(r, old)
    {
        conflicts.retain(|(_, f)| !allowed.contains(f));
    }
    if conflicts.is_empty() {
        return Ok(());
    }
    let api_version = r.api_version();
    let lines: Vec<String> = conflicts
        .iter()
        .map(|(m, f)| format!("conflict with \"{m}\" using {api_version}: {f}"))
        .collect();
    let message = if lines.len() == 1 {
        format!("Apply failed with 1 conflict: {}", lines[0])
    } else {
        format!(
            "Apply failed with {} conflicts: {}",
            lines.len(),
            lines.join("\n")
        )
    };
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(m, f)| {
            json!({"reason": "FieldManagerConflict",
            "message": format!("conflict with \"{m}\" using {api_version}"), "field": f})
        })
        .collect();
    Err(ApiError {
        details: Some(json!({"name": old["metadata"]["name"], "group": r.group,
            "kind": r.plural, "causes": causes})),
        ..ApiError::new(409, "Conflict", message)
    })
}

/// The fields (as conflicts name them) of the last-applied annotation of
/// `old` that still have their last-applied value: as kube-apiserver's
/// lastAppliedManager, those modified, added or removed since are taken
/// out one by one.
fn last_applied_fields(
    r: &ResourceInfo,
    old: &Value,
) -> Option<std::collections::BTreeSet<String>> {
    let text = old["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()?;
    let last: Value = serde_json::from_str(text).ok()?;
    let set = fields::leaves(&last, super::schema_of(r));
    Some(
        set.iter()
            .filter(|p| p.last().is_none_or(|pe| pe != "."))
            .filter(|p| fields::lookup(old, p) == fields::lookup(&last, p))
            .map(|p| fields::display(p))
            .collect(),
    )
}
