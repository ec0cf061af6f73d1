//! Per-field decisions on a server-side apply's conflicts, which kubectl
//! cannot make (its `--force-conflicts` takes every field or none): force
//! one field (take it), or give way on one (leave it to the manager that
//! owns it). What is sent is exact: a server-side apply that leaves a field
//! out claims nothing of it (another manager owns a conflicting field, so it
//! stays theirs, value and ownership; if this manager shared it, only its
//! share is released), and `force` is per request, so it is set only when
//! every conflict left after giving way is one the reviewer forced.

use super::{
    CrdSchemas, FieldAction, Known, ManagedPath, align, applied_fields_in, display, entries,
    lookup_mut,
};
use crate::fieldpath::FieldPath;
use crate::managedfields::{Element, element, from_fields_v1};
use serde_json::Value;
use std::collections::BTreeMap;

/// A reviewer's choice on a conflict row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// Take the field: the config's value is written and ownership moves.
    Force,
    /// Leave the field to the manager that owns it: it is not sent.
    GiveWay,
}

/// The apply that carries the decisions.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The configuration without the fields given way.
    pub config: Value,
    /// `force=true`: every conflict left is one decided `Force`, and there
    /// is one at least.
    pub force: bool,
    /// Conflicts (paths as the plan shows them) nobody decided: the apply
    /// would fail on them, so it must not be sent.
    pub undecided: Vec<FieldPath>,
    /// Decisions on paths that are no conflict of this plan (the live
    /// object changed since): not used.
    pub stale: Vec<FieldPath>,
}

/// The request that applies `config` as `manager` over `live` with
/// `decisions` (by the plan's paths, `spec.template.spec.containers[name=web].image`).
pub fn resolve(
    config: &Value,
    live: Option<&Value>,
    manager: &str,
    decisions: &BTreeMap<FieldPath, Decision>,
) -> Resolved {
    resolve_in(config, live, manager, decisions, &CrdSchemas::default())
}

/// [`resolve`], a custom resource planned with its CRD's structural schema
/// from `crds` (as [`super::plan_fields_in`]).
pub fn resolve_in(
    config: &Value,
    live: Option<&Value>,
    manager: &str,
    decisions: &BTreeMap<FieldPath, Decision>,
    crds: &CrdSchemas,
) -> Resolved {
    let conflicts = |config: &Value| -> Vec<FieldPath> {
        super::plan_fields_in(config, live, manager, false, crds)
            .into_iter()
            .filter(|r| r.action == FieldAction::Conflict)
            .map(|r| r.path)
            .collect()
    };
    let before = conflicts(config);
    let stale = decisions
        .keys()
        .filter(|p| !before.contains(p))
        .cloned()
        .collect();
    let give_way: Vec<&FieldPath> = before
        .iter()
        .filter(|p| decisions.get(*p) == Some(&Decision::GiveWay))
        .collect();
    let mut reduced = config.clone();
    if !give_way.is_empty() {
        for path in applied_paths(config, live, crds) {
            let shown = display(&path);
            if give_way.iter().any(|p| p.as_str() == shown) {
                remove(&mut reduced, &path);
            }
        }
    }
    let left = conflicts(&reduced);
    let undecided: Vec<FieldPath> = left
        .iter()
        .filter(|p| decisions.get(*p) != Some(&Decision::Force))
        .cloned()
        .collect();
    Resolved {
        config: reduced,
        force: !left.is_empty() && undecided.is_empty(),
        undecided,
        stale,
    }
}

/// The FieldsV1 paths an apply of `config` claims, as the plan names them
/// (aligned with the live object's managedFields).
fn applied_paths(config: &Value, live: Option<&Value>, crds: &CrdSchemas) -> Vec<ManagedPath> {
    let empty = serde_json::json!({});
    let live = live.unwrap_or(&empty);
    let sets: Vec<_> = entries(live)
        .iter()
        .map(|e| from_fields_v1(&e["fieldsV1"]))
        .collect();
    let known: Known<'_> = sets.iter().flatten().map(Vec::as_slice).collect();
    align(applied_fields_in(config, crds), &known, live)
        .into_iter()
        .collect()
}

/// Takes the field at `path` out of `config`: a member of a map, or an
/// element of a list (a set's value, a keyed element).
fn remove(config: &mut Value, path: &[String]) {
    let Some((last, parent)) = path.split_last() else {
        return;
    };
    let Some(parent) = lookup_mut(config, parent) else {
        return;
    };
    match element(last) {
        Element::Field(name) => {
            if let Some(m) = parent.as_object_mut() {
                m.remove(name);
            }
        }
        Element::Value {
            value: Some(want), ..
        } => {
            if let Some(a) = parent.as_array_mut() {
                a.retain(|item| *item != want);
            }
        }
        Element::Key {
            keys: Some(keys), ..
        } => {
            if let Some(a) = parent.as_array_mut() {
                a.retain(|item| !super::key_matches(item, &keys));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(manager: &str, operation: &str, sub: Option<&str>, fields: Value) -> Value {
        let mut e = json!({"manager": manager, "operation": operation, "apiVersion": "apps/v1",
            "fieldsType": "FieldsV1", "fieldsV1": fields});
        if let Some(s) = sub {
            e["subresource"] = json!(s);
        }
        e
    }

    /// Applied server-side by kubectl, then scaled (kubectl, scale) and its
    /// image set (kubectl-set): both are conflicts of a config that changes them.
    fn live() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "demo", "managedFields": [
                entry("kubectl", "Apply", None, json!({"f:spec": {
                    "f:selector": {},
                    "f:template": {"f:metadata": {"f:labels": {"f:app": {}}},
                        "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {
                            ".": {}, "f:name": {}}}}}}})),
                entry("kubectl", "Update", Some("scale"), json!({"f:spec": {"f:replicas": {}}})),
                entry("kubectl-set", "Update", None, json!({"f:spec": {"f:template": {"f:spec": {
                    "f:containers": {"k:{\"name\":\"web\"}": {"f:image": {}}}}}}})),
            ]},
            "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx:hotfix"}]}}}})
    }

    fn config() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "demo"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx:1.28"}]}}}})
    }

    const IMAGE: &str = "spec.template.spec.containers[name=web].image";

    fn decide(pairs: &[(&str, Decision)]) -> BTreeMap<FieldPath, Decision> {
        pairs
            .iter()
            .map(|(p, d)| (FieldPath::from(*p), *d))
            .collect()
    }

    #[test]
    fn force_one_and_give_way_on_the_other() {
        let r = resolve(
            &config(),
            Some(&live()),
            "kubectl",
            &decide(&[
                ("spec.replicas", Decision::Force),
                (IMAGE, Decision::GiveWay),
            ]),
        );
        assert!(r.force);
        assert!(r.undecided.is_empty() && r.stale.is_empty(), "{r:?}");
        assert_eq!(r.config["spec"]["replicas"], json!(3));
        // The image is not sent; the container's identity is.
        assert_eq!(
            r.config["spec"]["template"]["spec"]["containers"],
            json!([{"name": "web"}])
        );
    }

    #[test]
    fn giving_way_on_every_conflict_sends_no_force() {
        let r = resolve(
            &config(),
            Some(&live()),
            "kubectl",
            &decide(&[
                ("spec.replicas", Decision::GiveWay),
                (IMAGE, Decision::GiveWay),
            ]),
        );
        assert!(!r.force);
        assert!(r.undecided.is_empty());
        assert!(r.config["spec"].get("replicas").is_none());
    }

    #[test]
    fn an_undecided_conflict_is_named_and_nothing_is_forced() {
        let r = resolve(
            &config(),
            Some(&live()),
            "kubectl",
            &decide(&[
                ("spec.replicas", Decision::Force),
                ("spec.paused", Decision::Force),
            ]),
        );
        assert!(!r.force);
        assert_eq!(r.undecided, vec![IMAGE.to_string()]);
        assert_eq!(r.stale, vec!["spec.paused".to_string()]);
        assert_eq!(r.config, config());
    }

    /// A custom resource's keyed list (`x-kubernetes-list-type: map`): one
    /// element's field given way is left out of that element alone; without
    /// the CRD's schema the list would be one atomic field.
    #[test]
    fn a_custom_resources_keyed_list_gives_way_element_by_element() {
        let crd = json!({"kind": "CustomResourceDefinition",
            "spec": {"group": "demo.kapply.dev", "names": {"kind": "Widget"},
                "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
                    "type": "object", "properties": {"spec": {"type": "object", "properties": {
                        "parts": {"type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "properties": {
                                "name": {"type": "string"}, "size": {"type": "integer"}}}}}}}}}}]}});
        let crds = CrdSchemas::from_crds([&crd]);
        let live = json!({"apiVersion": "demo.kapply.dev/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "demo", "managedFields": [
                entry("kapply", "Apply", None, json!({"f:spec": {"f:parts": {
                    "k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:size": {}},
                    "k:{\"name\":\"b\"}": {".": {}, "f:name": {}, "f:size": {}}}}})),
                entry("ops", "Update", None, json!({"f:spec": {"f:parts": {
                    "k:{\"name\":\"a\"}": {"f:size": {}}}}})),
            ]},
            "spec": {"parts": [{"name": "a", "size": 9}, {"name": "b", "size": 1}]}});
        let config = json!({"apiVersion": "demo.kapply.dev/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "demo"},
            "spec": {"parts": [{"name": "a", "size": 2}, {"name": "b", "size": 3}]}});
        let path = "spec.parts[name=a].size";
        let r = resolve_in(
            &config,
            Some(&live),
            "kapply",
            &decide(&[(path, Decision::GiveWay)]),
            &crds,
        );
        assert!(r.undecided.is_empty() && r.stale.is_empty(), "{r:?}");
        assert!(!r.force);
        assert_eq!(
            r.config["spec"]["parts"],
            json!([{"name": "a"}, {"name": "b", "size": 3}])
        );
    }
}
