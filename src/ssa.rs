//! Server-side apply as `kubectl apply --server-side` does it, the parts
//! that need no server: the field managers it uses, the last-applied
//! annotation it keeps for a later return to client-side apply, and the
//! migration of a client-side applier's managedFields to the server-side
//! manager (kubectl's csaupgrade), so that fields dropped from the config
//! are released. No I/O: the cluster layer sends what these compute.

use crate::managedfields::{from_fields_v1, to_fields_v1};
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
}
