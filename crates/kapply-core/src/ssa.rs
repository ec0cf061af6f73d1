//! Server-side apply as `kubectl apply --server-side` does it, the parts
//! that need no server: the field managers it uses, the last-applied
//! annotation it keeps for a later return to client-side apply, and the
//! migration of a client-side applier's managedFields to the server-side
//! manager (kubectl's csaupgrade), so that fields dropped from the config
//! are released. No I/O: the cluster layer sends what these compute.

use crate::fieldpath::FieldPath;
use crate::managedfields::{from_fields_v1, to_fields_v1};

pub mod crd;
mod resolve;
pub use crd::CrdSchemas;
pub use resolve::{Decision, Resolved, resolve, resolve_in};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// kubectl's field manager for `apply --server-side` (client-side apply
/// uses `kubectl-client-side-apply`).
pub const DEFAULT_FIELD_MANAGER: &str = "kubectl";

/// The manager kubectl gives the last-applied annotation when it keeps it
/// under server-side apply.
pub const LAST_APPLIED_MANAGER: &str = "kubectl-last-applied";

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// kubectl's words under a conflict error (the server's message comes
/// first), kept word for word: users search for them.
pub const CONFLICT_HELP: &str =
    "Please review the fields above--they currently have other managers. Here
are the ways you can resolve this warning:
* If you intend to manage all of these fields, please re-run the apply
  command with the `--force-conflicts` flag.
* If you do not intend to manage all of the fields, please edit your
  manifest to remove references to the fields that should keep their
  current managers.
* You may co-own fields by updating your manifest to match the existing
  value; in this case, you'll become the manager if the other manager(s)
  stop managing the field (remove it from their configuration).
See https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts";

/// The warnings kubectl prints when a step after the apply itself fails
/// (the apply stands; the step is tried again by the next apply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrationStep {
    /// Giving the last-applied annotation to [`LAST_APPLIED_MANAGER`].
    LastApplied,
    /// The JSON patch moving the client-side manager's fields.
    ManagedFields,
    /// The apply sent again after the migration.
    Reapply,
}

impl MigrationStep {
    /// kubectl's warning line for this step failing with `error`.
    pub fn warning(self, error: &str) -> String {
        match self {
            MigrationStep::LastApplied => format!(
                "Warning: failed to migrate kubectl.kubernetes.io/last-applied-configuration for \
                 Server-Side Apply. This is non-fatal and will be retried next time you apply. \
                 Error: {error}"
            ),
            MigrationStep::ManagedFields => format!(
                "Warning: server rejected managed fields migration to Server-Side Apply. This is \
                 non-fatal and will be retried next time you apply. Error: {error}"
            ),
            MigrationStep::Reapply => format!(
                "Warning: failed to re-apply configuration after performing Server-Side Apply \
                 migration. This is non-fatal and will be retried next time you apply. Error: {error}"
            ),
        }
    }
}

fn entries(object: &Value) -> &[Value] {
    object["metadata"]["managedFields"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Whether a managedFields entry's field set holds the last-applied
/// annotation.
fn owns_last_applied(entry: &Value) -> bool {
    entry["fieldsV1"]["f:metadata"]["f:annotations"]
        .get(format!("f:{LAST_APPLIED}"))
        .is_some()
}

fn is(entry: &Value, manager: &str, operation: &str) -> bool {
    entry["manager"] == manager
        && entry["operation"] == operation
        && entry["subresource"].as_str().unwrap_or("").is_empty()
}

/// The managers whose `operation` (`Apply` or `Update`) entries own the
/// last-applied annotation, sorted.
pub fn last_applied_owners(object: &Value, operation: &str) -> BTreeSet<String> {
    entries(object)
        .iter()
        .filter(|e| e["operation"] == operation && owns_last_applied(e))
        .filter_map(|e| e["manager"].as_str().map(str::to_string))
        .collect()
}

/// The apply patch that hands the last-applied annotation of `object` (the
/// server's answer to the apply) to [`LAST_APPLIED_MANAGER`], so that the
/// annotation outlives the migration and a later client-side apply still
/// finds it. `None` where kubectl sends none: another field manager than
/// kubectl's (the server would not keep the annotation current), no
/// annotation, or an Apply manager already owns it.
pub fn keep_last_applied_patch(object: &Value, field_manager: &str) -> Option<Value> {
    if field_manager != DEFAULT_FIELD_MANAGER {
        return None;
    }
    let annotation = object["metadata"]["annotations"][LAST_APPLIED].as_str()?;
    if !last_applied_owners(object, "Apply").is_empty() {
        return None;
    }
    let mut metadata = Map::new();
    metadata.insert("annotations".into(), json!({ LAST_APPLIED: annotation }));
    metadata.insert("name".into(), object["metadata"]["name"].clone());
    if let Some(ns) = object["metadata"]["namespace"]
        .as_str()
        .filter(|ns| !ns.is_empty())
    {
        metadata.insert("namespace".into(), json!(ns));
    }
    Some(json!({
        "apiVersion": object["apiVersion"],
        "kind": object["kind"],
        "metadata": metadata,
    }))
}

/// `entries` with the fields of each client-side manager in `csa` (its
/// Update entry of the main resource) moved to the Apply entry of
/// `ssa_manager`: merged into it where it exists, else the newest such
/// Update entry becomes it. `None` when nothing moves.
pub fn upgrade_managed_fields(
    entries: &[Value],
    csa: &BTreeSet<String>,
    ssa_manager: &str,
) -> Option<Vec<Value>> {
    let mut out = entries.to_vec();
    for name in csa {
        let target = match out.iter().position(|e| is(e, ssa_manager, "Apply")) {
            Some(i) => i,
            // Entries are newest first: the first is the latest write.
            None => {
                let Some(i) = out.iter().position(|e| is(e, name, "Update")) else {
                    continue;
                };
                out[i]["manager"] = json!(ssa_manager);
                out[i]["operation"] = json!("Apply");
                i
            }
        };
        let mut union = from_fields_v1(&out[target]["fieldsV1"]);
        for e in out.iter().filter(|e| is(e, name, "Update")) {
            union.extend(from_fields_v1(&e["fieldsV1"]));
        }
        out[target]["fieldsV1"] = to_fields_v1(&union);
        out.retain(|e| !is(e, name, "Update"));
    }
    (out != entries).then_some(out)
}

/// The JSON patch kubectl sends after a server-side apply to an object
/// last applied client-side: its managedFields with the client-side
/// managers' fields moved to `ssa_manager` (see
/// [`upgrade_managed_fields`]), and its resourceVersion, so the server
/// refuses it (409) when the object changed meanwhile. `None` when there is
/// nothing to migrate.
pub fn migration_patch(object: &Value, ssa_manager: &str) -> Option<Value> {
    let csa = last_applied_owners(object, "Update");
    if csa.is_empty() {
        return None;
    }
    let upgraded = upgrade_managed_fields(entries(object), &csa, ssa_manager)?;
    Some(json!([
        {"op": "replace", "path": "/metadata/managedFields", "value": upgraded},
        {"op": "replace", "path": "/metadata/resourceVersion",
         "value": object["metadata"]["resourceVersion"]},
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csa_applied() -> Value {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": "c", "namespace": "ns", "resourceVersion": "7",
                "annotations": {LAST_APPLIED: "{\"a\":1}\n"},
                "managedFields": [
                    {"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
                     "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}},
                    {"manager": "kubectl-client-side-apply", "operation": "Update",
                     "apiVersion": "v1", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:data": {".": {}, "f:a": {}, "f:b": {}},
                       "f:metadata": {"f:annotations": {".": {}, format!("f:{LAST_APPLIED}"): {}}}}},
                ]
            }
        })
    }

    #[test]
    fn the_annotation_goes_to_its_own_manager_only_for_kubectls_manager() {
        let obj = csa_applied();
        let patch = keep_last_applied_patch(&obj, "kubectl").expect("a patch");
        assert_eq!(
            patch,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                "annotations": {LAST_APPLIED: "{\"a\":1}\n"}, "name": "c", "namespace": "ns"}})
        );
        assert_eq!(keep_last_applied_patch(&obj, "mine"), None);
        let mut owned = obj.clone();
        owned["metadata"]["managedFields"][0]["fieldsV1"] =
            json!({"f:metadata": {"f:annotations": {format!("f:{LAST_APPLIED}"): {}}}});
        assert_eq!(keep_last_applied_patch(&owned, "kubectl"), None);
    }

    #[test]
    fn client_side_fields_merge_into_the_apply_entry() {
        let patch = migration_patch(&csa_applied(), "kubectl").expect("a migration");
        let fields = &patch[0]["value"];
        assert_eq!(fields.as_array().map(Vec::len), Some(1));
        assert_eq!(fields[0]["manager"], "kubectl");
        assert_eq!(fields[0]["operation"], "Apply");
        assert_eq!(
            fields[0]["fieldsV1"],
            json!({"f:data": {".": {}, "f:a": {}, "f:b": {}},
                   "f:metadata": {"f:annotations": {".": {}, format!("f:{LAST_APPLIED}"): {}}}})
        );
        assert_eq!(
            patch[1],
            json!({"op": "replace", "path": "/metadata/resourceVersion", "value": "7"})
        );
    }

    #[test]
    fn without_an_apply_entry_the_update_entry_becomes_it() {
        let mut obj = csa_applied();
        let first = obj["metadata"]["managedFields"][1].clone();
        obj["metadata"]["managedFields"] = json!([first]);
        let patch = migration_patch(&obj, "mine").expect("a migration");
        assert_eq!(patch[0]["value"][0]["manager"], "mine");
        assert_eq!(patch[0]["value"][0]["operation"], "Apply");
        assert_eq!(patch[0]["value"][0]["fieldsV1"], first["fieldsV1"]);
    }

    #[test]
    fn nothing_to_migrate_without_a_client_side_owner() {
        let mut obj = csa_applied();
        obj["metadata"]["managedFields"]
            .as_array_mut()
            .expect("entries")
            .truncate(1);
        assert_eq!(migration_patch(&obj, "kubectl"), None);
        // A scale by kubectl (subresource) is not a client-side apply.
        let mut scaled = csa_applied();
        scaled["metadata"]["managedFields"][1]["subresource"] = json!("scale");
        let patch = migration_patch(&scaled, "kubectl");
        assert_eq!(patch, None, "an Update of a subresource is not migrated");
    }
    fn deployment_live() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ns", "managedFields": [
                {"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:spec": {
                    "f:replicas": {}, "f:selector": {},
                    "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {
                        ".": {}, "f:name": {}, "f:image": {},
                        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                            ".": {}, "f:containerPort": {}}}}}}}}}},
                {"manager": "kubectl", "operation": "Update", "subresource": "scale",
                 "fieldsV1": {"f:spec": {"f:replicas": {}}}},
            ]},
            "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.25",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}}
        })
    }

    fn deployment_config(replicas: i64, image: &str) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"containers": [{"name": "web", "image": image,
                    "ports": [{"containerPort": 80}]}]}}}
        })
    }

    fn actions(rows: &[FieldRow]) -> Vec<(String, FieldAction)> {
        rows.iter()
            .map(|r| (r.path.to_string(), r.action))
            .collect()
    }

    #[test]
    fn another_managers_value_is_a_conflict_or_taken_when_forced() {
        let live = deployment_live();
        let rows = plan_fields(
            &deployment_config(2, "nginx:1.26"),
            Some(&live),
            "kubectl",
            false,
        );
        assert_eq!(
            actions(&rows),
            vec![
                ("spec.replicas".to_string(), FieldAction::Conflict),
                (
                    "spec.template.spec.containers[name=web].image".to_string(),
                    FieldAction::Set
                ),
            ],
            "the selector is atomic and the port keyed as the server keys it: no change there"
        );
        assert_eq!(rows[0].owners, vec!["kubectl", "kubectl (scale)"]);
        assert_eq!(rows[0].live, Some(json!(5)));
        assert_eq!(rows[0].config, Some(json!(2)));
        let forced = plan_fields(
            &deployment_config(2, "nginx:1.25"),
            Some(&live),
            "kubectl",
            true,
        );
        assert_eq!(
            actions(&forced),
            vec![("spec.replicas".to_string(), FieldAction::Take)]
        );
        assert_eq!(forced[0].owners_after, vec!["kubectl"]);
        // The same value as the other manager's: shared, nothing to show.
        let same = plan_fields(
            &deployment_config(5, "nginx:1.25"),
            Some(&live),
            "kubectl",
            false,
        );
        assert_eq!(actions(&same), vec![]);
    }

    #[test]
    fn moving_from_client_side_migrates_removes_and_leaves_stuck_fields() {
        let last = "{\"data\":{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\"}}";
        let live = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {LAST_APPLIED: last}, "managedFields": [
                {"manager": "kubectl-client-side-apply", "operation": "Update",
                 "fieldsV1": {"f:data": {"f:a": {}, "f:b": {}},
                   "f:metadata": {"f:annotations": {format!("f:{LAST_APPLIED}"): {}}}}},
                {"manager": "before-first-apply", "operation": "Update",
                 "fieldsV1": {"f:data": {"f:c": {}}}},
            ]},
            "data": {"a": "1", "b": "2", "c": "3"}
        });
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c"}, "data": {"a": "1"}});
        let rows = plan_fields(&config, Some(&live), "kubectl", false);
        assert_eq!(
            actions(&rows),
            vec![
                ("data.a".to_string(), FieldAction::Migrate),
                ("data.b".to_string(), FieldAction::Remove),
                ("data.c".to_string(), FieldAction::Stuck),
            ],
            "kubectl's manager keeps the annotation under kubectl-last-applied: no row"
        );
        assert_eq!(rows[0].owners_after, vec!["kubectl"]);
        assert_eq!(rows[2].owners_after, vec!["before-first-apply"]);
        // Another manager: the annotation itself is released and goes.
        let rows = plan_fields(&config, Some(&live), "mine", false);
        assert_eq!(
            rows.iter()
                .find(|r| r.path.as_str().ends_with("last-applied-configuration"))
                .map(|r| r.action),
            Some(FieldAction::Remove)
        );
        // A changed value conflicts with the client-side manager, except
        // for kubectl's manager while the last-applied values are current.
        let changed = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c"}, "data": {"a": "9"}});
        let rows = plan_fields(&changed, Some(&live), "kubectl", false);
        assert_eq!(rows[0].action, FieldAction::Take);
        let rows = plan_fields(&changed, Some(&live), "mine", false);
        assert_eq!(
            actions(&rows),
            vec![("data.a".to_string(), FieldAction::Conflict)]
        );
    }

    #[test]
    fn dropped_fields_are_removed_unless_another_manager_owns_them() {
        let live = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "managedFields": [
                {"manager": "kubectl", "operation": "Apply",
                 "fieldsV1": {"f:data": {"f:a": {}, "f:b": {}, "f:c": {}}}},
                {"manager": "second", "operation": "Apply", "fieldsV1": {"f:data": {"f:b": {}}}},
            ]},
            "data": {"a": "1", "b": "2", "c": "3"}
        });
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c"}, "data": {"a": "1"}});
        let rows = plan_fields(&config, Some(&live), "kubectl", false);
        assert_eq!(
            actions(&rows),
            vec![
                ("data.b".to_string(), FieldAction::Keep),
                ("data.c".to_string(), FieldAction::Remove),
            ]
        );
        assert_eq!(rows[0].owners_after, vec!["second"]);
        assert!(rows[1].owners_after.is_empty());
        // Nothing live: every field is set.
        let new = plan_fields(&config, None, "kubectl", false);
        assert_eq!(
            actions(&new),
            vec![("data.a".to_string(), FieldAction::Set)]
        );
    }

    /// A Deployment as the server keeps it: a port whose key the server
    /// completed with its defaulted protocol, the selector recorded whole.
    fn ports_live() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ns", "managedFields": [
                {"manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {
                    "f:selector": {},
                    "f:template": {"f:spec": {"f:containers": {
                        "k:{\"name\":\"web\"}": {".": {}, "f:name": {}, "f:ports": {
                            "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                                ".": {}, "f:containerPort": {}, "f:name": {}}}}}}}}}},
                {"manager": "other", "operation": "Apply", "apiVersion": "apps/v1",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:selector": {}}}}
            ]},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"containers": [{"name": "web",
                    "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]}]}}
            }
        })
    }

    fn ports_config(port_name: &str, app: &str) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {
                "selector": {"matchLabels": {"app": app}},
                "template": {"spec": {"containers": [{"name": "web",
                    "ports": [{"containerPort": 80, "name": port_name}]}]}}
            }
        })
    }

    /// Found by the generated comparison with the real server: `data: {}`
    /// writes nothing of its own (the server's answer has no `data`);
    /// what changes is the keys it releases.
    #[test]
    fn an_empty_map_in_the_config_is_no_set_row_its_released_keys_are() {
        let live = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "ns", "managedFields": [
                {"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]},
            "data": {"a": "1"}
        });
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "ns"}, "data": {}});
        let rows = plan_fields(&config, Some(&live), "kubectl", false);
        let got: Vec<(&str, FieldAction)> =
            rows.iter().map(|r| (r.path.as_str(), r.action)).collect();
        assert_eq!(got, vec![("data.a", FieldAction::Remove)]);
    }

    #[test]
    fn a_port_matches_the_servers_element_and_a_selector_is_claimed_whole() {
        let live = ports_live();
        // The same values: nothing to list (the port is the server's
        // element with its defaulted protocol, not a new one).
        assert_eq!(
            plan_fields(&ports_config("http", "web"), Some(&live), "kubectl", false),
            vec![]
        );
        let rows = plan_fields(&ports_config("web", "api"), Some(&live), "kubectl", false);
        let got: Vec<(&str, FieldAction, Vec<String>)> = rows
            .iter()
            .map(|r| (r.path.as_str(), r.action, r.owners.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "spec.selector",
                    FieldAction::Conflict,
                    vec!["kubectl".to_string(), "other".to_string()]
                ),
                (
                    "spec.template.spec.containers[name=web].ports[containerPort=80,protocol=TCP].name",
                    FieldAction::Set,
                    vec!["kubectl".to_string()]
                ),
            ]
        );
        assert_eq!(rows[0].config, Some(json!({"matchLabels": {"app": "api"}})));
    }
}

/// What a server-side apply does to one field, computed from the config
/// and the live object's managedFields (structured-merge-diff's rules on
/// the built-in types' schemas: maps and structs field by field, lists
/// merged by key element by element, lists of scalars merged as sets,
/// other lists atomic).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldAction {
    /// The config's value is written (new, or changed, and nobody else owns it).
    Set,
    /// This manager owned it, the config dropped it and nobody else owns
    /// it: the server deletes it.
    Remove,
    /// This manager owned it, the config dropped it, another manager owns
    /// it too: it stays, theirs.
    Keep,
    /// Another manager owns it with another value: the apply fails unless forced.
    Conflict,
    /// As a conflict, forced: the value is written and ownership moves.
    /// Also a conflict the server lets kubectl's manager override after
    /// client-side apply (every field of the last-applied annotation still
    /// has its value).
    Take,
    /// Moving from client-side apply: the value stays, its client-side
    /// manager's ownership moves to the server-side manager.
    Migrate,
    /// The config dropped it (client-side apply would have deleted it), but
    /// only managers that never apply (`Update` entries such as
    /// `before-first-apply`, `kubectl-edit`) own it after the apply, so
    /// nobody will ever release it: it stays for ever.
    Stuck,
}

/// One field's row: its path (`spec.template.spec.containers[name=web].image`),
/// the action, the live and config values, its managers now and after.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FieldRow {
    /// As [`display`] writes it; its keys are not quoted as the client-side
    /// rows' are (`metadata.labels.app.kubernetes.io/name`), so its steps
    /// read right only for plain keys: changing that changes the output.
    pub path: FieldPath,
    pub action: FieldAction,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    /// Managers now, `manager` or `manager (subresource)`, in managedFields order.
    pub owners: Vec<String>,
    /// Managers after the apply (a conflict: unchanged, the apply fails).
    #[serde(rename = "ownersAfter")]
    pub owners_after: Vec<String>,
}

type FieldSet = crate::managedfields::FieldSet;
type ManagedPath = crate::managedfields::ManagedPath;

/// Fields the server does not track for a manager.
fn untracked(path: &[String]) -> bool {
    match path {
        [a] => matches!(a.as_str(), "f:apiVersion" | "f:kind" | "f:status"),
        [m, f, ..] if m == "f:metadata" => matches!(
            f.as_str(),
            "f:name"
                | "f:namespace"
                | "f:uid"
                | "f:resourceVersion"
                | "f:generation"
                | "f:creationTimestamp"
                | "f:managedFields"
                | "f:selfLink"
                | "f:deletionTimestamp"
        ),
        _ => path.first().is_some_and(|a| a == "f:status"),
    }
}

/// The field set an apply of `config` claims, as FieldsV1 paths; an
/// element of a list merged by key also claims itself (`.`).
pub fn applied_fields(config: &Value) -> FieldSet {
    applied_fields_in(config, &CrdSchemas::default())
}

/// [`applied_fields`], a custom resource read with its CRD's schema from
/// `crds` (without one: maps field by field, lists atomic).
pub fn applied_fields_in(config: &Value, crds: &CrdSchemas) -> FieldSet {
    let schema = match (config["apiVersion"].as_str(), config["kind"].as_str()) {
        (Some(a), Some(k)) => crate::patchmeta::PatchMeta::builtin()
            .root(a, k)
            .map(Shape::Builtin)
            .or_else(|| crds.root(a, k).map(Shape::CrdRoot)),
        _ => None,
    };
    let mut out = FieldSet::new();
    walk(config, schema, &mut Vec::new(), &mut out);
    out.retain(|p| !untracked(p));
    out
}

/// Where [`walk`] is in a type's schema: a built-in kind's (its patch
/// metadata) or a custom kind's (its CRD's structural schema; at the root,
/// `metadata` is ObjectMeta as for every kind).
#[derive(Clone, Copy)]
enum Shape<'a> {
    Builtin(crate::patchmeta::Schema<'a>),
    CrdRoot(&'a crd::Node),
    Crd(&'a crd::Node),
}

/// How a list is claimed.
enum Merge<'a> {
    Atomic,
    Set,
    Keys(Vec<&'a str>),
}

impl<'a> Shape<'a> {
    fn field(self, name: &str) -> Option<Shape<'a>> {
        match self {
            Shape::Builtin(s) => s.field(name).map(Shape::Builtin),
            Shape::CrdRoot(_) if name == "metadata" => crate::patchmeta::PatchMeta::builtin()
                .root("v1", "ConfigMap")
                .and_then(|s| s.field("metadata"))
                .map(Shape::Builtin),
            Shape::CrdRoot(n) | Shape::Crd(n) => n.field(name).map(Shape::Crd),
        }
    }

    fn items(self) -> Option<Shape<'a>> {
        match self {
            Shape::Builtin(s) => s.items().map(Shape::Builtin),
            Shape::CrdRoot(n) | Shape::Crd(n) => n.items().map(Shape::Crd),
        }
    }

    fn merge(self) -> Merge<'a> {
        use crate::patchmeta::ListStrategy;
        match self {
            Shape::Builtin(s) => match s.list_strategy() {
                ListStrategy::MergeByKey(k) => Merge::Keys(vec![k]),
                ListStrategy::MergePrimitive => Merge::Set,
                ListStrategy::Atomic => Merge::Atomic,
            },
            Shape::CrdRoot(n) | Shape::Crd(n) => match &n.list {
                crd::ListType::Map(keys) if !keys.is_empty() => {
                    Merge::Keys(keys.iter().map(String::as_str).collect())
                }
                crd::ListType::Set => Merge::Set,
                _ => Merge::Atomic,
            },
        }
    }

    /// An object claimed whole (`x-kubernetes-map-type: atomic`).
    fn atomic(self) -> bool {
        matches!(self, Shape::Crd(n) if n.atomic)
    }
}

fn walk(v: &Value, schema: Option<Shape<'_>>, path: &mut ManagedPath, out: &mut FieldSet) {
    match v {
        Value::Object(m) if !m.is_empty() && !schema.is_some_and(|s| s.atomic()) => {
            for (k, child) in m {
                path.push(crate::managedfields::field_element(k));
                walk(child, schema.and_then(|s| s.field(k)), path, out);
                path.pop();
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let merge = schema.map_or(Merge::Atomic, |s| s.merge());
            let items_schema = schema.and_then(|s| s.items());
            match merge {
                Merge::Keys(key_fields) => {
                    let mut elements = Vec::with_capacity(items.len());
                    for item in items {
                        let mut keys = Map::new();
                        for key in &key_fields {
                            // A key field left out is one the server
                            // defaults, or the list cannot be merged:
                            // claimed whole when none is there.
                            if let Some(k) = item.get(*key) {
                                keys.insert(key.to_string(), k.clone());
                            }
                        }
                        if keys.is_empty() {
                            out.insert(path.clone());
                            return;
                        }
                        elements.push((keys, item));
                    }
                    for (keys, item) in elements {
                        path.push(crate::managedfields::key_element(keys));
                        path.push(".".into());
                        out.insert(path.clone());
                        path.pop();
                        walk(item, items_schema, path, out);
                        path.pop();
                    }
                }
                Merge::Set => {
                    for item in items {
                        path.push(crate::managedfields::value_element(item));
                        out.insert(path.clone());
                        path.pop();
                    }
                }
                Merge::Atomic => {
                    out.insert(path.clone());
                }
            }
        }
        _ => {
            out.insert(path.clone());
        }
    }
}

/// Every path some manager owns, borrowed from the parsed entries.
type Known<'a> = std::collections::BTreeSet<&'a [String]>;

/// `applied` in the server's terms, as the live managedFields show them
/// where the built-in patch metadata differs from the server's schema: a
/// path under a field the server tracks whole (an atomic map such as a
/// label selector, recorded as a leaf holding a non-empty value) is that field; a list element named by fewer key
/// fields than the server's list keys (a container port: containerPort,
/// and protocol defaulted) takes the server's element with those values.
fn align(applied: FieldSet, known: &Known<'_>, live: &Value) -> FieldSet {
    use crate::managedfields::{Element, element};
    let mut out = FieldSet::new();
    for mut p in applied {
        for i in 0..p.len() {
            if !p[i].starts_with("k:") {
                continue;
            }
            let Element::Key {
                keys: Some(mine), ..
            } = element(&p[i])
            else {
                continue;
            };
            // Only the known paths under p[..i] (a range of the sorted
            // set), each distinct element at i parsed once: a scan of every
            // known path parsing each was most of a plan at 10,000 objects.
            let prefix = &p[..i];
            let mut seen: Option<&String> = None;
            let found = known
                .range::<&[String], _>((
                    std::ops::Bound::Included(&prefix),
                    std::ops::Bound::Unbounded,
                ))
                .take_while(|k| k.starts_with(prefix))
                .filter(|k| k.len() > i)
                .find_map(|k| {
                    let e = &k[i];
                    if seen == Some(e) || *e == p[i] || !e.starts_with("k:") {
                        return None;
                    }
                    seen = Some(e);
                    match element(e) {
                        Element::Key {
                            keys: Some(theirs), ..
                        } if theirs.len() > mine.len()
                            && mine.iter().all(|(f, v)| theirs.get(f) == Some(v)) =>
                        {
                            Some(e.clone())
                        }
                        _ => None,
                    }
                });
            if let Some(e) = found {
                p[i] = e;
            }
        }
        // The shortest known proper prefix of p recorded as a leaf holding
        // a non-empty value: looked up prefix by prefix, not by a scan.
        let whole = (1..p.len())
            .map(|j| &p[..j])
            .filter(|k| k.last().is_some_and(|e| e != "."))
            .filter(|k| known.contains(*k))
            // A leaf that is an empty map (`resources: {}` recorded by an
            // update) is no atomic field: its fields are claimed one by one.
            .find(|k| match lookup(live, k) {
                Some(Value::Object(m)) => !m.is_empty(),
                Some(Value::Array(a)) => !a.is_empty(),
                _ => false,
            })
            .map(<[String]>::to_vec);
        if let Some(whole) = whole {
            p = whole;
        }
        out.insert(p);
    }
    out
}

/// The value at a FieldsV1 path of an object.
pub fn lookup<'v>(v: &'v Value, path: &[String]) -> Option<&'v Value> {
    use crate::managedfields::{Element, element};
    let mut cur = v;
    for pe in path {
        cur = match element(pe) {
            Element::Field(name) => cur.get(name)?,
            Element::Key {
                keys: Some(keys), ..
            } => cur
                .as_array()?
                .iter()
                .find(|item| key_matches(item, &keys))?,
            Element::Value {
                value: Some(want), ..
            } => cur.as_array()?.iter().find(|item| **item == want)?,
            Element::Index(i) => cur.as_array()?.get(i.parse::<usize>().ok()?)?,
            Element::Itself => cur,
            _ => return None,
        };
    }
    Some(cur)
}

/// Whether a list element is the one a FieldsV1 key names: it has one of
/// the key's fields at least, and no other value for any of them. A key
/// field the item leaves out is one the server defaults (a port's
/// protocol): a config's element matches.
fn key_matches(item: &Value, keys: &serde_json::Map<String, Value>) -> bool {
    keys.iter().any(|(k, _)| item.get(k).is_some())
        && keys
            .iter()
            .all(|(k, want)| item.get(k).is_none_or(|v| v == want))
}

/// The value at a FieldsV1 path of an object, to change it (as [`lookup`]).
fn lookup_mut<'v>(v: &'v mut Value, path: &[String]) -> Option<&'v mut Value> {
    use crate::managedfields::{Element, element};
    let mut cur = v;
    for pe in path {
        cur = match element(pe) {
            Element::Field(name) => cur.get_mut(name)?,
            Element::Key {
                keys: Some(keys), ..
            } => cur
                .as_array_mut()?
                .iter_mut()
                .find(|item| key_matches(item, &keys))?,
            Element::Value {
                value: Some(want), ..
            } => cur.as_array_mut()?.iter_mut().find(|item| **item == want)?,
            Element::Index(i) => cur.as_array_mut()?.get_mut(i.parse::<usize>().ok()?)?,
            Element::Itself => cur,
            _ => return None,
        };
    }
    Some(cur)
}

/// Whether removing the field at `path` of `live` leaves it as it was
/// once the server has defaulted the object again.
fn defaulted_again(live: &Value, path: &ManagedPath) -> bool {
    use crate::managedfields::{Element, element};
    let Some((last, parent)) = path.split_last() else {
        return false;
    };
    let mut after = live.clone();
    let Some(parent) = lookup_mut(&mut after, parent) else {
        return false;
    };
    match element(last) {
        Element::Field(name) => {
            if let Some(m) = parent.as_object_mut() {
                m.remove(name);
            }
        }
        // List elements are not defaulted back.
        _ => return false,
    }
    crate::defaults::apply(&mut after, &mut String::new);
    lookup(&after, path) == lookup(live, path)
}

/// Whether removing every field of `paths` (map members) from `live`
/// together leaves each as it was once the server has defaulted the object
/// again. `false` when any is not a map member or is not restored.
fn defaulted_again_all(live: &Value, paths: &[&ManagedPath]) -> bool {
    use crate::managedfields::{Element, element};
    let mut after = live.clone();
    for path in paths {
        let Some((last, parent)) = path.split_last() else {
            return false;
        };
        let Element::Field(name) = element(last) else {
            return false;
        };
        if let Some(m) = lookup_mut(&mut after, parent).and_then(Value::as_object_mut) {
            m.remove(name);
        }
    }
    crate::defaults::apply(&mut after, &mut String::new);
    paths.iter().all(|p| lookup(&after, p) == lookup(live, p))
}

/// A FieldsV1 path as kapply writes field paths
/// (`spec.template.spec.containers[name=web].image`, `metadata.finalizers[="x"]`).
pub fn display(path: &[String]) -> String {
    use crate::managedfields::{Element, element};
    let mut out = String::new();
    for pe in path {
        match element(pe) {
            Element::Field(name) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(name);
            }
            Element::Key {
                keys: Some(keys), ..
            } => {
                let inner: Vec<String> = keys
                    .iter()
                    .map(|(k, v)| match v {
                        Value::String(s) => format!("{k}={s}"),
                        v => format!("{k}={v}"),
                    })
                    .collect();
                out.push_str(&format!("[{}]", inner.join(",")));
            }
            Element::Value { raw, .. } => out.push_str(&format!("[={raw}]")),
            Element::Index(i) => out.push_str(&format!("[{i}]")),
            Element::Itself => {}
            Element::Key { raw, .. } | Element::Other(raw) => out.push_str(&format!("[{raw}]")),
        }
    }
    out
}

/// The fields of `live`'s last-applied annotation that still have their
/// last-applied value (kube-apiserver's lastAppliedManager: the fields
/// modified, added or removed since are taken out, one by one): the
/// conflicts the server lets kubectl's own manager override. It forces the
/// apply when all its conflicts are among them; otherwise it reports only
/// the others. Empty when the annotation is missing or unreadable.
fn overridable(live: &Value, last: Option<&(Value, FieldSet)>) -> FieldSet {
    let Some((last, set)) = last else {
        return FieldSet::new();
    };
    set.iter()
        .filter(|p| {
            if p.last().is_some_and(|pe| pe == ".") {
                // A list element: still there.
                lookup(live, &p[..p.len() - 1]).is_some()
            } else {
                lookup(live, p) == lookup(last, p)
            }
        })
        .cloned()
        .collect()
}

/// The last-applied annotation of `live`, parsed.
fn last_applied(live: &Value) -> Option<Value> {
    let text = live["metadata"]["annotations"][LAST_APPLIED].as_str()?;
    serde_json::from_str(text).ok()
}

/// The annotation's own path, which the migration hands to
/// [`LAST_APPLIED_MANAGER`] (kubectl's manager) or releases (another).
fn last_applied_path() -> ManagedPath {
    vec![
        "f:metadata".into(),
        "f:annotations".into(),
        format!("f:{LAST_APPLIED}"),
    ]
}

/// The per-field plan of applying `config` server-side as `manager` over
/// `live` (`None`: it does not exist yet; every field is `set`). Only
/// fields the apply touches are listed: what changes, conflicts or is
/// released; a field claimed with the value it already has and no other
/// owner is not.
///
/// An object last applied client-side (an `Update` entry owns its
/// last-applied annotation) is planned as kubectl's whole migration: the
/// apply, the client-side managers' fields moved to `manager`, the apply
/// again. Fields of those managers the config keeps are `migrate`; fields
/// it dropped are `remove`d, or `keep` (another applier owns them), or
/// `stuck` (only managers that never apply own them, or nobody: client-side
/// apply would have deleted them, server-side apply never will).
pub fn plan_fields(
    config: &Value,
    live: Option<&Value>,
    manager: &str,
    force: bool,
) -> Vec<FieldRow> {
    plan_fields_in(config, live, manager, force, &CrdSchemas::default())
}

/// [`plan_fields`], a custom resource planned with its CRD's structural
/// schema from `crds` (keyed lists, sets, atomic maps, as the server
/// reads them).
pub fn plan_fields_in(
    config: &Value,
    live: Option<&Value>,
    manager: &str,
    force: bool,
    crds: &CrdSchemas,
) -> Vec<FieldRow> {
    let leaf = |p: &ManagedPath| p.last().is_none_or(|pe| pe != ".");
    let empty = json!({});
    let live_v = live.unwrap_or(&empty);
    let sets: Vec<FieldSet> = entries(live_v)
        .iter()
        .map(|e| from_fields_v1(&e["fieldsV1"]))
        .collect();
    // Borrowed, not cloned: copying every managed path of every object was
    // a tenth of `diff --server-side` at 10,000 objects (perf).
    let known: Known<'_> = sets.iter().flatten().map(Vec::as_slice).collect();
    let applied = align(applied_fields_in(config, crds), &known, live_v);
    // The last-applied annotation's fields, read and aligned once (the
    // server's override of kubectl's conflicts and the migration use them).
    let last = last_applied(live_v).map(|last| {
        let set = align(applied_fields_in(&last, crds), &known, live_v);
        (last, set)
    });
    let csa = last_applied_owners(live_v, "Update");
    let csa_entry = |e: &Value| {
        e["operation"] == "Update"
            && e["subresource"].as_str().unwrap_or("").is_empty()
            && e["manager"].as_str().is_some_and(|m| csa.contains(m))
    };
    // Every entry but this manager's Apply entry, with its name as shown
    // and whether it applies (and so may release fields one day).
    let mut mine = FieldSet::new();
    let mut others: Vec<(String, bool, FieldSet)> = Vec::new();
    // The client-side managers' fields, which the migration moves to `manager`.
    let mut migrated = FieldSet::new();
    for (e, set) in entries(live_v).iter().zip(sets) {
        if is(e, manager, "Apply") {
            mine = set;
            continue;
        }
        if csa_entry(e) {
            migrated.extend(set.iter().cloned());
        }
        let name = e["manager"].as_str().unwrap_or("").to_string();
        let name = match e["subresource"].as_str().filter(|s| !s.is_empty()) {
            Some(sub) => format!("{name} ({sub})"),
            None => name,
        };
        others.push((name, e["operation"] == "Apply", set));
    }
    let owners_of = |p: &ManagedPath, after_migration: bool| -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for (name, _, set) in &others {
            if after_migration && csa.contains(name) {
                continue;
            }
            if set.contains(p) && !v.contains(name) {
                v.push(name.clone());
            }
        }
        v
    };
    let appliers = |names: &[String]| {
        others
            .iter()
            .any(|(n, applies, _)| *applies && names.contains(n))
    };
    // The server forces kubectl's own manager when all its conflicts are
    // fields of an up-to-date last-applied annotation.
    let allowed = if manager == DEFAULT_FIELD_MANAGER {
        overridable(live_v, last.as_ref())
    } else {
        FieldSet::new()
    };
    let conflicting = |p: &ManagedPath| {
        lookup(live_v, p) != lookup(config, p) && others.iter().any(|(_, _, set)| set.contains(p))
    };
    let forced = force
        || applied
            .iter()
            .filter(|p| leaf(p) && conflicting(p))
            .all(|p| allowed.contains(p));
    let mut rows = Vec::new();
    for p in applied.iter().filter(|p| leaf(p)) {
        let want = lookup(config, p);
        let have = lookup(live_v, p);
        // An empty map or list in the config writes no value of its own
        // (the real server's dry run drops `data: {}`): what changes is
        // its members, released and listed as such below.
        let empty = |v: Option<&Value>| match v {
            Some(Value::Object(m)) => m.is_empty(),
            Some(Value::Array(a)) => a.is_empty(),
            _ => false,
        };
        if empty(want) && have.is_none_or(|h| h.is_object() || h.is_array()) {
            continue;
        }
        let theirs = owners_of(p, false);
        let mut now = theirs.clone();
        if mine.contains(p) {
            now.insert(0, manager.to_string());
        }
        if have == want {
            // The same value: shared with the managers that own it; a
            // client-side manager's share moves to this one.
            if !forced || !theirs.iter().any(|n| csa.contains(n)) {
                continue;
            }
            let mut after = vec![manager.to_string()];
            after.extend(owners_of(p, true));
            rows.push(FieldRow {
                path: FieldPath::new(display(p)),
                action: FieldAction::Migrate,
                live: have.cloned(),
                config: want.cloned(),
                owners: now,
                owners_after: after,
            });
            continue;
        }
        let (action, after) = if theirs.is_empty() {
            (FieldAction::Set, vec![manager.to_string()])
        } else if forced || allowed.contains(p) {
            (FieldAction::Take, vec![manager.to_string()])
        } else {
            (FieldAction::Conflict, now.clone())
        };
        rows.push(FieldRow {
            path: FieldPath::new(display(p)),
            action,
            live: have.cloned(),
            config: want.cloned(),
            owners: now,
            owners_after: after,
        });
    }
    // Released: owned by this manager before (or moved to it by the
    // migration), not claimed now; and, moving from client-side apply,
    // what client-side apply would have deleted (the annotation's fields).
    let migrating = forced && !csa.is_empty();
    let mut released: FieldSet = mine.difference(&applied).cloned().collect();
    if migrating {
        released.extend(migrated.difference(&applied).cloned());
        if let Some((last, set)) = &last {
            // An empty map written (`annotations: {}`) names no field.
            released.extend(
                set.difference(&applied)
                    .filter(|&p| !matches!(lookup(last, p), Some(Value::Object(m)) if m.is_empty()))
                    .cloned(),
            );
        }
    }
    let annotation = last_applied_path();
    // Whether every released field nobody else keeps is written again by
    // the server's defaulting: checked at once on one copy of the object
    // (when each is, removing them together is removing each alone, since
    // every other field keeps its live value); otherwise field by field.
    // A copy of the object per field was most of `diff --server-side` on
    // objects created client-side (their defaults are the creator's).
    let lone: Vec<&ManagedPath> = released
        .iter()
        .filter(|p| leaf(p) && *p != &annotation && lookup(live_v, p).is_some())
        .filter(|p| mine.contains(*p) || (migrating && migrated.contains(*p)))
        .filter(|p| owners_of(p, migrating).is_empty())
        .collect();
    let all_defaulted = lone.len() > 1 && defaulted_again_all(live_v, &lone);
    for p in released.iter().filter(|p| leaf(p)) {
        let Some(have) = lookup(live_v, p) else {
            continue;
        };
        let ours = mine.contains(p) || (migrating && migrated.contains(p));
        let mut theirs = owners_of(p, migrating);
        if *p == annotation && migrating && keep_last_applied_patch(live_v, manager).is_some() {
            // kubectl hands it to its own manager and the server keeps it
            // current: nothing to show.
            continue;
        }
        let mut now = Vec::new();
        if mine.contains(p) {
            now.push(manager.to_string());
        }
        now.extend(owners_of(p, false));
        let action = if theirs.is_empty() && ours {
            if all_defaulted || defaulted_again(live_v, p) {
                // Released, and the server's defaulting writes the same
                // value again (a field the client-side create recorded):
                // nothing to review.
                continue;
            }
            FieldAction::Remove
        } else if appliers(&theirs) {
            FieldAction::Keep
        } else {
            FieldAction::Stuck
        };
        if action == FieldAction::Remove {
            theirs.clear();
        }
        rows.push(FieldRow {
            path: FieldPath::new(display(p)),
            action,
            live: Some(have.clone()),
            config: None,
            owners: now,
            owners_after: theirs,
        });
    }
    rows
}
