//! Export: turn a live object into a clean manifest, so an object created
//! imperatively can be brought under declarative management (`kubectl apply`
//! of the result changes nothing but the last-applied annotation).
//!
//! Pure: no I/O. A field is dropped only when the server's defaulting
//! (`crate::defaults`) would give it back the same value, so a field a user set
//! to a non-default value is always kept.

use crate::fieldpath::Segment;
use serde_json::{Map, Value};

/// Metadata the server owns; never part of a manifest.
pub const SERVER_METADATA: &[&str] = &[
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
    "managedFields",
];

/// Annotations written by kubectl or controllers, not by the user.
const TOOL_ANNOTATIONS: &[&str] = &[
    crate::merge::LAST_APPLIED,
    "deployment.kubernetes.io/revision",
    "kubectl.kubernetes.io/restartedAt",
];

/// Stand-in for an allocated cluster IP: never equal to a live one, so an
/// exported Service keeps its `clusterIP` (it may have been chosen by the user).
const NO_IP: &str = "\u{0}unallocated";

/// The clean manifest for `live`: server metadata, status, tool annotations
/// and server-defaulted fields removed.
pub fn export(live: &Value) -> Value {
    let mut obj = live.clone();
    let Some(o) = obj.as_object_mut() else {
        return obj;
    };
    o.remove("status");
    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in SERVER_METADATA {
            meta.remove(*k);
        }
        if let Some(ann) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            for k in TOOL_ANNOTATIONS {
                ann.remove(*k);
            }
        }
        for k in ["annotations", "labels"] {
            if meta.get(k).is_some_and(empty_or_null) {
                meta.remove(k);
            }
        }
    }
    drop_null_timestamps(&mut obj);
    drop_defaults(obj)
}

/// Go's encoder writes a template's zero `metadata.creationTimestamp` as
/// `null` (kube-apiserver 1.32, and what `kubectl create` sends); it is not
/// the user's.
fn drop_null_timestamps(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut)
                && meta.get("creationTimestamp").is_some_and(Value::is_null)
            {
                meta.remove("creationTimestamp");
            }
            m.values_mut().for_each(drop_null_timestamps);
        }
        Value::Array(a) => a.iter_mut().for_each(drop_null_timestamps),
        _ => {}
    }
}

fn empty_or_null(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

fn defaulted(v: &Value) -> Value {
    let mut d = v.clone();
    crate::defaults::apply(&mut d, &mut || NO_IP.to_string());
    if let Some(o) = d.as_object_mut() {
        o.remove("status");
    }
    d
}

/// Paths of the leaves under `spec`-like content (everything but apiVersion,
/// kind and metadata). Scalars, empty maps and arrays of non-maps are leaves.
fn leaves(v: &Value, path: &mut Vec<Segment>, out: &mut Vec<Vec<Segment>>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, c) in m {
                if path.is_empty() && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                path.push(Segment::Key(k.clone()));
                leaves(c, path, out);
                path.pop();
            }
        }
        Value::Array(a) if a.iter().any(Value::is_object) => {
            for (i, c) in a.iter().enumerate() {
                path.push(Segment::Index(i));
                leaves(c, path, out);
                path.pop();
            }
        }
        _ => out.push(path.clone()),
    }
}

/// Remove the leaf at `path` (a map key only); with `prune`, also remove the
/// maps left empty above it. `None` when the path does not end in a map
/// key; else whether a map was left empty above the leaf (what `prune`
/// removes, or would have).
fn remove(v: &mut Value, path: &[Segment], prune: bool) -> Option<bool> {
    let (first, rest) = path.split_first()?;
    let child = match (first, &mut *v) {
        (Segment::Key(k), Value::Object(m)) => {
            if rest.is_empty() {
                return m.remove(k).map(|_| false);
            }
            m.get_mut(k)
        }
        (Segment::Index(i), Value::Array(a)) => {
            if rest.is_empty() {
                return None;
            }
            a.get_mut(*i)
        }
        _ => None,
    }?;
    let below = remove(child, rest, prune)?;
    let emptied = child.as_object().is_some_and(Map::is_empty);
    if prune
        && emptied
        && let (Segment::Key(k), Value::Object(m)) = (first, v)
    {
        m.remove(k);
    }
    Some(below || emptied)
}

#[cfg(test)]
thread_local! {
    /// How many candidates [`drop_defaults`] defaulted (each is a clone
    /// and a defaulting of the whole object).
    static TRIES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Greedily drop every leaf the server would default back to the same value:
/// a candidate is kept only when defaulting it yields the same object as
/// defaulting the original. Maps left empty go with the leaf, unless
/// the server needs them to default what is under them; a leaf whose
/// removal empties no map is tried once.
fn drop_defaults(obj: Value) -> Value {
    let target = defaulted(&obj);
    let mut paths = Vec::new();
    leaves(&obj, &mut Vec::new(), &mut paths);
    let mut cur = obj;
    let same = |cand: &Value| {
        #[cfg(test)]
        TRIES.with(|t| t.set(t.get() + 1));
        defaulted(cand) == target
    };
    for p in paths {
        let mut cand = cur.clone();
        let Some(emptied) = remove(&mut cand, &p, true) else {
            continue;
        };
        if same(&cand) {
            cur = cand;
        } else if emptied {
            let mut kept = cur.clone();
            remove(&mut kept, &p, false);
            if same(&kept) {
                cur = kept;
            }
        }
    }
    cur
}

/// File name for an exported object: `kind-name.yaml`, lower-case kind.
pub fn file_name(obj: &Value) -> String {
    let kind = obj["kind"].as_str().unwrap_or("object").to_lowercase();
    let name = obj["metadata"]["name"].as_str().unwrap_or("unnamed");
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{kind}-{safe}.yaml")
}

/// `text` (a multi-document YAML file) with the document that holds line
/// `line` (1-based, as a manifest source names it) replaced by `doc`; the
/// other documents and the `---` lines are kept byte for byte. `None` when
/// `line` is outside the file or on a `---` line.
pub fn replace_document(text: &str, line: usize, doc: &str) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let at = line.checked_sub(1).filter(|&i| i < lines.len())?;
    let is_sep = |l: &str| {
        l.strip_prefix("---")
            .is_some_and(|r| r.is_empty() || r.starts_with(char::is_whitespace))
    };
    if is_sep(lines[at]) {
        return None;
    }
    let start = (0..at)
        .rev()
        .find(|&i| is_sep(lines[i]))
        .map_or(0, |i| i + 1);
    let end = (at..lines.len())
        .find(|&i| is_sep(lines[i]))
        .unwrap_or(lines.len());
    // The comments heading the document (before its first key) stay.
    let start = (start..at)
        .find(|&i| {
            let l = lines[i].trim();
            !(l.is_empty() || l.starts_with('#'))
        })
        .unwrap_or(at);
    // A separator before `at` is never the file's last line: it ends
    // with a newline, so `doc` starts on a line of its own.
    let mut out: String = lines[..start].concat();
    out.push_str(doc);
    if !doc.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&lines[end..].concat());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn live_deployment() -> Value {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "uid": "u-1",
                "resourceVersion": "42", "generation": 1,
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"app": "web"},
                "annotations": {"deployment.kubernetes.io/revision": "1", "team": "a"},
                "managedFields": [{"manager": "kubectl-create"}]},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                        "imagePullPolicy": "Always"}]}}},
            "status": {"replicas": 3}});
        crate::defaults::apply(&mut d, &mut || "10.96.0.9".into());
        d
    }

    #[test]
    fn strips_server_metadata_status_and_tool_annotations() {
        let e = export(&live_deployment());
        let meta = e["metadata"].as_object().unwrap();
        let mut keys: Vec<_> = meta.keys().cloned().collect();
        keys.sort();
        assert_eq!(keys, ["annotations", "labels", "name", "namespace"]);
        assert_eq!(meta["annotations"], json!({"team": "a"}));
        assert!(e.get("status").is_none());
    }

    #[test]
    fn drops_a_templates_null_creation_timestamp() {
        let mut live = live_deployment();
        live["spec"]["template"]["metadata"]["creationTimestamp"] = Value::Null;
        let e = export(&live);
        assert_eq!(
            e["spec"]["template"]["metadata"],
            json!({"labels": {"app": "web"}})
        );
    }

    #[test]
    fn drops_defaults_keeps_user_values() {
        let live = live_deployment();
        // The defaulting really added these, so the test checks removal.
        assert_eq!(live["spec"]["revisionHistoryLimit"], 10);
        let e = export(&live);
        assert_eq!(
            e["spec"],
            json!({"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                        "imagePullPolicy": "Always"}]}}})
        );
        // Applying the export reproduces the live spec.
        assert_eq!(defaulted(&e)["spec"], live["spec"]);
    }

    #[test]
    fn each_leaf_is_tried_once_unless_it_empties_a_map() {
        let live = live_deployment();
        let mut clean = live.clone();
        clean.as_object_mut().unwrap().remove("status");
        let mut paths = Vec::new();
        leaves(&clean, &mut Vec::new(), &mut paths);
        // A second try (keeping the emptied maps) only where one is emptied.
        let emptying = paths
            .iter()
            .filter(|p| remove(&mut clean.clone(), p, false) == Some(true))
            .count();
        TRIES.with(|t| t.set(0));
        let e = export(&live);
        let tries = TRIES.with(|t| t.get());
        assert!(
            tries <= paths.len() + emptying,
            "{tries} tries for {} leaves ({emptying} emptying a map)",
            paths.len()
        );
        assert_eq!(defaulted(&e)["spec"], live["spec"]);
    }

    #[test]
    fn drops_default_replicas_keeps_non_default_strategy() {
        // replicas 1 is the default: dropped; a non-default strategy is kept.
        let mut live = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "w"},
            "spec": {"replicas": 1, "strategy": {"type": "Recreate"},
                "selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}},
                    "spec": {"containers": [{"name": "c", "image": "x:1"}]}}}});
        crate::defaults::apply(&mut live, &mut || "10.96.0.9".into());
        let e = export(&live);
        assert!(e["spec"].get("replicas").is_none());
        assert_eq!(e["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(defaulted(&e)["spec"], live["spec"]);
    }

    #[test]
    fn service_keeps_cluster_ip_drops_its_defaults() {
        let mut live = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}});
        crate::defaults::apply(&mut live, &mut || "10.96.0.7".into());
        let e = export(&live);
        assert_eq!(
            e["spec"],
            json!({"clusterIP": "10.96.0.7", "selector": {"app": "web"},
                "ports": [{"port": 80}]})
        );
    }

    #[test]
    fn secret_masked_for_terminal_clear_in_export() {
        let live = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s"}, "type": "Opaque", "data": {"k": "c2VjcmV0"}});
        let e = export(&live);
        assert_eq!(e["data"]["k"], "c2VjcmV0");
        assert!(e.get("type").is_none());
        // Printed to a terminal through the one masker.
        let m = crate::mask::mask_secret(&e);
        assert_eq!(m["data"]["k"], "***");
        assert!(!crate::yaml::to_yaml(&m).contains("c2VjcmV0"));
    }

    #[test]
    fn the_comments_heading_a_document_are_kept() {
        let text = "# web: owned by team a\n\n# keep 2 replicas\nkind: X\nb: 2\n";
        assert_eq!(
            super::replace_document(text, 4, "kind: X\nb: 9\n").as_deref(),
            Some("# web: owned by team a\n\n# keep 2 replicas\nkind: X\nb: 9\n")
        );
    }

    #[test]
    fn one_document_is_replaced_the_others_kept() {
        let text = "# first\na: 1\n---\n# the one\nkind: X\nb: 2\n--- # third\nc: 3\n";
        assert_eq!(
            super::replace_document(text, 5, "kind: X\nb: 9\n").as_deref(),
            Some("# first\na: 1\n---\n# the one\nkind: X\nb: 9\n--- # third\nc: 3\n")
        );
        assert_eq!(
            super::replace_document(text, 1, "z: 0").as_deref(),
            Some("z: 0\n---\n# the one\nkind: X\nb: 2\n--- # third\nc: 3\n")
        );
        assert_eq!(
            super::replace_document(text, 8, "c: 4\n").as_deref(),
            Some("# first\na: 1\n---\n# the one\nkind: X\nb: 2\n--- # third\nc: 4\n")
        );
        assert_eq!(super::replace_document(text, 3, "x"), None);
        assert_eq!(super::replace_document(text, 99, "x"), None);
    }

    #[test]
    fn file_names() {
        assert_eq!(file_name(&live_deployment()), "deployment-web.yaml");
        assert_eq!(
            file_name(&json!({"kind": "Foo", "metadata": {"name": "a/b"}})),
            "foo-a_b.yaml"
        );
    }
}
