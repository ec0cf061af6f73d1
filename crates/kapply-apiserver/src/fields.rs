//! managedFields: which manager wrote which fields, in the FieldsV1 format
//! (`{"f:spec":{"f:replicas":{}}}`, keyed list elements as
//! `k:{"name":"nginx"}`). The format is read and written through
//! `managedfields`; who owns what after a write is this server's own
//! judgement.

use kapply_core::managedfields::{Element, element, field_element, key_element, value_element};
pub use kapply_core::managedfields::{FieldSet, ManagedPath, from_fields_v1, to_fields_v1};
use kapply_core::patchmeta::{ListStrategy, Schema, Shape};
use serde_json::{Map, Value, json};

/// Metadata fields the server owns, never attributed to a manager.
const SYSTEM_METADATA: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generateName",
];

/// Where a walk is, for what it skips: at the root, in the root's
/// metadata, or below.
#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Metadata,
    Below,
}

impl Level {
    /// Whether `key` here is not a manager's field: the root's apiVersion,
    /// kind and status, and the metadata the server owns.
    fn skips(self, key: &str) -> bool {
        match self {
            Level::Root => matches!(key, "apiVersion" | "kind" | "status"),
            Level::Metadata => SYSTEM_METADATA.contains(&key),
            Level::Below => false,
        }
    }

    /// The level of the value at `key` here.
    fn child(self, key: &str) -> Level {
        if self == Level::Root && key == "metadata" {
            Level::Metadata
        } else {
            Level::Below
        }
    }
}

/// The key element of a list item when the list merges by key.
fn element_key(item: &Value, schema: Option<Schema<'_>>) -> Option<String> {
    let s = schema?;
    let keys: Vec<String> = match &s.node().lk {
        Some(lk) if !lk.is_empty() => lk.clone(),
        _ => match s.list_strategy() {
            ListStrategy::MergeByKey(k) => vec![k.to_string()],
            _ => return None,
        },
    };
    let obj = item.as_object()?;
    let mut m = Map::new();
    for k in keys {
        if let Some(v) = obj.get(&k) {
            m.insert(k, v.clone());
        }
    }
    if m.is_empty() {
        return None;
    }
    Some(key_element(m))
}

fn is_set_list(schema: Option<Schema<'_>>) -> bool {
    schema.is_some_and(|s| {
        s.list_strategy() == ListStrategy::MergePrimitive || s.node().lt.as_deref() == Some("set")
    })
}

/// All leaf paths of `v`.
pub fn leaves(v: &Value, schema: Option<Schema<'_>>) -> FieldSet {
    let mut out = PathSet::default();
    walk(v, schema, Level::Root, &mut out);
    out.set
}

/// The FieldsV1 value of every leaf of `v`: `to_fields_v1(&leaves(v,
/// schema))`, written as the walk goes (a create records all of its
/// object, and a set of cloned paths per leaf was most of a create's cost).
pub fn leaves_fields_v1(v: &Value, schema: Option<Schema<'_>>) -> Value {
    let mut out = Tree::default();
    walk(v, schema, Level::Root, &mut out);
    Value::Object(out.root)
}

/// What the walk over an object's leaves writes: the set of their paths
/// ([`PathSet`]) or their FieldsV1 tree ([`Tree`]). The walk says where it
/// goes (`push`, `pop`) and which paths are leaves (`own`).
trait Leaves {
    fn push(&mut self, pe: String);
    fn pop(&mut self);
    /// The path here is a leaf.
    fn own(&mut self);
}

/// [`leaves`]' output: the path walked to, and the leaf paths.
#[derive(Default)]
struct PathSet {
    path: ManagedPath,
    set: FieldSet,
}

impl Leaves for PathSet {
    fn push(&mut self, pe: String) {
        self.path.push(pe);
    }

    fn pop(&mut self) {
        self.path.pop();
    }

    fn own(&mut self) {
        self.set.insert(self.path.clone());
    }
}

/// [`leaves_fields_v1`]'s output: the FieldsV1 map of the root, and the
/// maps open on the way to where the walk is, each with its path element
/// and whether it is a leaf. A map closes into its parent when it holds a
/// leaf (an object all of whose fields the server owns does not).
#[derive(Default)]
struct Tree {
    root: Map<String, Value>,
    open: Vec<(String, Map<String, Value>, bool)>,
}

impl Leaves for Tree {
    fn push(&mut self, pe: String) {
        self.open.push((pe, Map::new(), false));
    }

    fn pop(&mut self) {
        let Some((pe, fields, leaf)) = self.open.pop() else {
            return;
        };
        if leaf || !fields.is_empty() {
            let parent = match self.open.last_mut() {
                Some((_, m, _)) => m,
                None => &mut self.root,
            };
            merge_into(parent, pe, Value::Object(fields));
        }
    }

    fn own(&mut self) {
        // The root is no field of the FieldsV1 map (only a list at the
        // root has the path set's empty path).
        if let Some((_, _, leaf)) = self.open.last_mut() {
            *leaf = true;
        }
    }
}

/// The definitions kube-apiserver's OpenAPI marks `x-kubernetes-map-type:
/// atomic` (v1.34, of the built-in groups), which the generated patch table
/// does not carry: the field manager owns such a value whole, one leaf.
const ATOMIC_DEFS: &[&str] = &[
    "io.k8s.api.admissionregistration.v1.MatchResources",
    "io.k8s.api.admissionregistration.v1.NamedRuleWithOperations",
    "io.k8s.api.admissionregistration.v1.ParamKind",
    "io.k8s.api.admissionregistration.v1.ParamRef",
    "io.k8s.api.admissionregistration.v1.Variable",
    "io.k8s.api.core.v1.ConfigMapKeySelector",
    "io.k8s.api.core.v1.EndpointAddress",
    "io.k8s.api.core.v1.EndpointPort",
    "io.k8s.api.core.v1.FileKeySelector",
    "io.k8s.api.core.v1.LocalObjectReference",
    "io.k8s.api.core.v1.NodeSelector",
    "io.k8s.api.core.v1.NodeSelectorTerm",
    "io.k8s.api.core.v1.ObjectFieldSelector",
    "io.k8s.api.core.v1.ObjectReference",
    "io.k8s.api.core.v1.ResourceFieldSelector",
    "io.k8s.api.core.v1.ScopeSelector",
    "io.k8s.api.core.v1.SecretKeySelector",
    "io.k8s.api.core.v1.SecretReference",
    "io.k8s.api.core.v1.TopologySelectorTerm",
    "io.k8s.api.core.v1.TypedLocalObjectReference",
    "io.k8s.api.networking.v1.ServiceBackendPort",
    "io.k8s.api.rbac.v1.RoleRef",
    "io.k8s.api.rbac.v1.Subject",
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
    "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
];

/// Map fields (definition, field) the same OpenAPI marks atomic.
const ATOMIC_FIELDS: &[(&str, &str)] = &[
    ("io.k8s.api.core.v1.PodSpec", "nodeSelector"),
    ("io.k8s.api.core.v1.ReplicationControllerSpec", "selector"),
    ("io.k8s.api.core.v1.ServiceSpec", "selector"),
];

/// Whether the field `key` of a value of `parent`'s type (its schema
/// `child`) is owned whole.
fn atomic(parent: Option<Schema<'_>>, key: &str, child: Option<Schema<'_>>) -> bool {
    let def = |s: Option<Schema<'_>>| s.and_then(|s| s.node().r.clone());
    def(child).is_some_and(|d| ATOMIC_DEFS.contains(&d.as_str()))
        || def(parent).is_some_and(|d| ATOMIC_FIELDS.contains(&(d.as_str(), key)))
}

fn walk(v: &Value, schema: Option<Schema<'_>>, level: Level, out: &mut impl Leaves) {
    match v {
        Value::Object(m) if !m.is_empty() && schema.is_none_or(|s| s.shape() != Shape::Scalar) => {
            for (k, child) in m {
                if level.skips(k) {
                    continue;
                }
                out.push(field_element(k));
                let child_schema = schema.and_then(|s| s.field(k));
                if atomic(schema, k, child_schema) {
                    out.own();
                } else {
                    walk(child, child_schema, level.child(k), out);
                }
                out.pop();
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let item_schema = schema.and_then(|s| s.items());
            let keyed: Option<Vec<String>> = items.iter().map(|i| element_key(i, schema)).collect();
            if let Some(keys) = keyed {
                let whole = atomic(None, "", item_schema);
                for (item, key) in items.iter().zip(keys) {
                    out.push(key);
                    if whole {
                        // An atomic element is one leaf (an ownerReference).
                        out.own();
                    } else {
                        // The element itself is owned too (".").
                        out.push(".".into());
                        out.own();
                        out.pop();
                        walk(item, item_schema, Level::Below, out);
                    }
                    out.pop();
                }
            } else if is_set_list(schema) {
                for item in items {
                    out.push(value_element(item));
                    out.own();
                    out.pop();
                }
            } else {
                out.own();
            }
        }
        _ => {
            if level != Level::Root {
                out.own();
            }
        }
    }
}

/// Insert `sub` (a FieldsV1 map) at `key`, as the union with what is
/// there (two list elements with the same key are one path set).
fn merge_into(out: &mut Map<String, Value>, key: String, sub: Value) {
    match (out.get_mut(&key), sub) {
        (Some(Value::Object(have)), Value::Object(sub)) => {
            for (k, v) in sub {
                merge_into(have, k, v);
            }
        }
        (_, sub) => {
            out.insert(key, sub);
        }
    }
}

/// Leaf paths of `new` whose value differs from `old` (new or changed).
pub fn changed(old: &Value, new: &Value, schema: Option<Schema<'_>>) -> FieldSet {
    changed_leaves(old, new, &leaves(new, schema), schema)
}

/// [`changed`], given the leaves of `new` (`leaves(new, schema)`).
fn changed_leaves(
    old: &Value,
    new: &Value,
    new_leaves: &FieldSet,
    schema: Option<Schema<'_>>,
) -> FieldSet {
    static NULL: Value = Value::Null;
    let before = leaves(old, schema);
    let at = |v, p| lookup(v, p).unwrap_or(&NULL);
    new_leaves
        .iter()
        .filter(|p| !before.contains(*p) || at(old, p) != at(new, p))
        .cloned()
        .collect()
}

/// The value at a FieldsV1 path.
pub fn lookup<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = v;
    for pe in path {
        match element(pe) {
            Element::Field(k) => cur = cur.get(k)?,
            Element::Key { keys, .. } => {
                let key = keys?;
                cur = cur
                    .as_array()?
                    .iter()
                    .find(|item| key.iter().all(|(k, v)| item.get(k) == Some(v)))?;
            }
            Element::Value { value, .. } => {
                let val = value?;
                cur = cur.as_array()?.iter().find(|item| **item == val)?;
            }
            // The element itself.
            Element::Itself => {}
            Element::Index(_) | Element::Other(_) => return None,
        }
    }
    Some(cur)
}

/// A path as the API server prints it in conflicts:
/// `.spec.template.spec.containers[name="nginx"].image`.
pub fn display(path: &[String]) -> String {
    let mut out = String::new();
    for pe in path {
        match element(pe) {
            Element::Field(k) => {
                out.push('.');
                out.push_str(k);
            }
            Element::Key { keys, .. } => {
                let parts: Vec<String> = keys
                    .map(|m| m.iter().map(|(k, v)| format!("{k}={v}")).collect())
                    .unwrap_or_default();
                out.push_str(&format!("[{}]", parts.join(",")));
            }
            Element::Value { raw, .. } => out.push_str(&format!("[={raw}]")),
            Element::Index(_) | Element::Itself | Element::Other(_) => {}
        }
    }
    out
}

/// How a write is recorded.
pub struct Write<'a> {
    pub manager: &'a str,
    /// `Update` or `Apply`
    pub operation: &'a str,
    pub subresource: Option<&'a str>,
    pub api_version: &'a str,
    pub time: &'a str,
    /// For Apply: the fields of the applied configuration.
    pub applied: Option<FieldSet>,
}

impl Write<'_> {
    /// The time its managedFields entry records: none for a write through
    /// the `scale` subresource, whose entry kube-apiserver (v1.34) writes
    /// without a time.
    fn entry_time(&self) -> Option<&str> {
        (self.subresource != Some("scale")).then_some(self.time)
    }
}

/// Recompute `new.metadata.managedFields` from `old`'s entries and this write.
pub fn record(old: Option<&Value>, new: &mut Value, schema: Option<Schema<'_>>, w: &Write<'_>) {
    let empty = json!({});
    let old_v = old.unwrap_or(&empty);
    if old.is_none() && w.applied.is_none() {
        // A new object: every leaf is this write's (what `changed` against
        // nothing gives, all of it present), and there are no other entries.
        let all = leaves_fields_v1(new, schema);
        let entries = if all.as_object().is_none_or(Map::is_empty) {
            Vec::new()
        } else {
            vec![entry_of(w, all)]
        };
        set_entries(new, entries);
        return;
    }
    let present = leaves(new, schema);
    let owned = match &w.applied {
        Some(set) => set.clone(),
        None => changed_leaves(old_v, new, &present, schema),
    };
    let mut entries: Vec<Value> = old
        .and_then(|o| o["metadata"]["managedFields"].as_array().cloned())
        .unwrap_or_default();
    let mut found = false;
    let mut out = Vec::new();
    // A field owned but absent before (one the storage dropped past the
    // field manager) stays its owner's until a write changes it; only
    // what this write removed goes. Read when the first such path comes.
    let old_present = std::cell::OnceCell::new();
    let kept = |p: &ManagedPath| {
        present.contains(p)
            || !old_present
                .get_or_init(|| leaves(old_v, schema))
                .contains(p)
    };
    for mut e in entries.drain(..) {
        let mut set = from_fields_v1(&e["fieldsV1"]);
        let mine = e["manager"] == w.manager
            && e["operation"] == w.operation
            && e["subresource"].as_str() == w.subresource;
        if mine {
            found = true;
            if w.applied.is_some() {
                set = owned.clone();
            } else {
                set.extend(owned.iter().cloned());
            }
            if !owned.is_empty() || w.applied.is_some() {
                if let Some(t) = w.entry_time() {
                    e["time"] = json!(t);
                }
                e["apiVersion"] = json!(w.api_version);
            }
        } else {
            set.retain(|p| !owned.contains(p));
        }
        set.retain(kept);
        if set.is_empty() {
            continue;
        }
        e["fieldsV1"] = to_fields_v1(&set);
        out.push(e);
    }
    if !found {
        let mut set = owned;
        set.retain(|p| present.contains(p));
        if !set.is_empty() {
            out.push(entry(w, &set));
        }
    }
    set_entries(new, out);
}

/// Give `paths` back to the managedFields entries of `obj` whose writer
/// owned them in `old` (same manager, operation and subresource): fields
/// the server drops past its field manager stay their owners'.
pub fn keep_owned(old: &Value, obj: &mut Value, paths: &[ManagedPath]) {
    if paths.is_empty() {
        return;
    }
    let id = |e: &Value| ["manager", "operation", "subresource"].map(|k| e[k].clone());
    let owned: Vec<_> = old["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| (id(e), from_fields_v1(&e["fieldsV1"])))
        .collect();
    let Some(entries) = obj["metadata"]["managedFields"].as_array_mut() else {
        return;
    };
    for e in entries {
        let Some((_, before)) = owned.iter().find(|(i, _)| *i == id(e)) else {
            continue;
        };
        let mut set = from_fields_v1(&e["fieldsV1"]);
        let n = set.len();
        set.extend(paths.iter().filter(|p| before.contains(*p)).cloned());
        if set.len() != n {
            e["fieldsV1"] = to_fields_v1(&set);
        }
    }
}

/// Take `paths` (and what lies under them) out of every managedFields
/// entry of `obj`; an entry left with nothing goes.
pub fn disown(obj: &mut Value, paths: &[ManagedPath]) {
    if paths.is_empty() {
        return;
    }
    let Some(entries) = obj["metadata"]["managedFields"].as_array().cloned() else {
        return;
    };
    let mut out = Vec::with_capacity(entries.len());
    for mut e in entries {
        let mut set = from_fields_v1(&e["fieldsV1"]);
        set.retain(|p| !paths.iter().any(|d| p.starts_with(d)));
        if set.is_empty() {
            continue;
        }
        e["fieldsV1"] = to_fields_v1(&set);
        out.push(e);
    }
    set_entries(obj, out);
}

/// A new managedFields entry for this write.
fn entry(w: &Write<'_>, set: &FieldSet) -> Value {
    entry_of(w, to_fields_v1(set))
}

/// [`entry`] of FieldsV1 already built.
fn entry_of(w: &Write<'_>, fields_v1: Value) -> Value {
    let mut e = json!({
        "manager": w.manager,
        "operation": w.operation,
        "apiVersion": w.api_version,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields_v1,
    });
    if let Some(t) = w.entry_time() {
        e["time"] = json!(t);
    }
    if let Some(sub) = w.subresource {
        e["subresource"] = json!(sub);
    }
    e
}

fn set_entries(new: &mut Value, entries: Vec<Value>) {
    if let Some(md) = new.get_mut("metadata").and_then(Value::as_object_mut) {
        if entries.is_empty() {
            md.remove("managedFields");
        } else {
            md.insert("managedFields".into(), Value::Array(entries));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapply_core::patchmeta::PatchMeta;

    /// A create takes the short way; it records what the general way does.
    #[test]
    fn a_create_records_what_a_write_over_nothing_does() {
        let schema = PatchMeta::builtin().root("apps/v1", "Deployment");
        let w = Write {
            manager: "kubectl-client-side-apply",
            operation: "Update",
            subresource: None,
            api_version: "apps/v1",
            time: "t",
            applied: None,
        };
        let new = json!({"metadata": {"name": "d", "labels": {"a": "b"}, "annotations": {"x": "y"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [
                    {"name": "c", "image": "i", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                     "args": ["a", "b"], "env": [{"name": "E", "value": "1"}]},
                    {"name": "s", "image": "j"}]}}}});
        let (mut short, mut general) = (new.clone(), new.clone());
        record(None, &mut short, schema, &w);
        record(Some(&json!({})), &mut general, schema, &w);
        assert_eq!(short, general);
        assert!(short["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"].is_object());
        let (mut short, mut general) = (
            json!({"metadata": {"name": "e"}}),
            json!({"metadata": {"name": "e"}}),
        );
        record(None, &mut short, schema, &w);
        record(Some(&json!({})), &mut general, schema, &w);
        assert_eq!(short, general);
        assert!(short["metadata"].get("managedFields").is_none());
    }

    /// The one-walk FieldsV1 of a create is the set of its leaves written
    /// as FieldsV1, on the shapes that differ: keyed lists (a key given
    /// twice), set lists, plain lists, empty maps and lists, metadata the
    /// server owns, a map all of whose fields it owns.
    #[test]
    fn leaves_in_one_walk_are_the_leaf_set() {
        let schema = PatchMeta::builtin().root("apps/v1", "Deployment");
        let objects = [
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "status": {"replicas": 1},
                "metadata": {"name": "d", "namespace": "n", "uid": "u", "labels": {"a": "b"},
                    "finalizers": ["x", "y"], "annotations": {}},
                "spec": {"replicas": 1, "strategy": {}, "template": {"spec": {
                    "containers": [
                        {"name": "c", "image": "i", "args": ["a", "b"], "command": [],
                         "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 81}],
                         "env": [{"name": "E", "value": "1"}, {"name": "E", "value": "2"},
                             {"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]},
                        {"name": "c", "imagePullPolicy": "Always"}],
                    "volumes": [{"name": "v", "emptyDir": {}}]}}}}),
            json!({"metadata": {"name": "only-owned"}}),
            json!({"metadata": {"name": "n"}, "spec": {"list": [1, 2], "keyless": [{"a": 1}]}}),
            json!({}),
        ];
        for v in &objects {
            for s in [schema, None] {
                assert_eq!(leaves_fields_v1(v, s), to_fields_v1(&leaves(v, s)), "{v}");
            }
        }
    }

    /// The set and the tree come from one walk; they agree on the shapes
    /// the Deployment test does not reach: lists and scalars at the root,
    /// a set list with a value twice, keyed elements with nothing but their
    /// key, objects left empty once the server's fields are skipped.
    #[test]
    fn set_and_tree_agree_at_the_edges() {
        let pod = PatchMeta::builtin().root("v1", "Pod");
        let objects = [
            json!([1, 2]),
            json!([{"name": "a"}, {"name": "a", "x": 1}]),
            json!("scalar"),
            json!(null),
            json!({"metadata": {"finalizers": ["f", "f", "g"], "labels": {}}}),
            json!({"metadata": {"name": "n", "uid": "u", "resourceVersion": "1"},
                "spec": {"containers": [{"name": "c"}, {"name": "d", "ports": []}],
                    "tolerations": [{"key": "k"}], "nodeSelector": {"a": "b"}},
                "status": {"phase": "Running"}}),
            json!({"spec": {"metadata": {"name": "deep"}, "x": [[1], [2, 3]], "y": {"z": {}}}}),
        ];
        for v in &objects {
            for s in [pod, None] {
                assert_eq!(leaves_fields_v1(v, s), to_fields_v1(&leaves(v, s)), "{v}");
            }
        }
        let keyed = leaves_fields_v1(&objects[5], pod);
        assert_eq!(
            keyed["f:spec"]["f:containers"],
            json!({"k:{\"name\":\"c\"}": {".": {}, "f:name": {}},
                "k:{\"name\":\"d\"}": {".": {}, "f:name": {}, "f:ports": {}}})
        );
        assert!(keyed.get("f:metadata").is_none() && keyed.get("f:status").is_none());
    }

    /// Only the root's apiVersion, kind and status and the metadata the
    /// server owns are nobody's fields: the same keys deeper down are, in
    /// both walks.
    #[test]
    fn only_the_roots_and_metadatas_own_keys_are_skipped() {
        let v = json!({"apiVersion": "v1", "kind": "K", "status": {"a": 1},
            "metadata": {"name": "n", "uid": "u", "labels": {"name": "x"}},
            "spec": {"kind": "k", "status": "s", "name": "m", "apiVersion": "v",
                "metadata": {"uid": "w"}}});
        let path = |p: &[&str]| p.iter().map(|e| format!("f:{e}")).collect::<ManagedPath>();
        let want: FieldSet = [
            path(&["metadata", "labels", "name"]),
            path(&["spec", "kind"]),
            path(&["spec", "status"]),
            path(&["spec", "name"]),
            path(&["spec", "apiVersion"]),
            path(&["spec", "metadata", "uid"]),
        ]
        .into_iter()
        .collect();
        assert_eq!(leaves(&v, None), want);
        assert_eq!(leaves_fields_v1(&v, None), to_fields_v1(&want));
    }

    /// `changed` is what comparing every leaf's value before and after
    /// gives (a leaf not there before is changed).
    #[test]
    fn changed_leaves_are_those_whose_value_differs() {
        let schema = PatchMeta::builtin().root("apps/v1", "Deployment");
        let old = json!({"metadata": {"name": "d", "labels": {"a": "b", "gone": "x"}},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [
                {"name": "c", "image": "i", "args": ["a"], "env": [{"name": "E", "value": "1"}]}]}}}});
        let new = json!({"metadata": {"name": "d", "labels": {"a": "b", "new": "y"}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [
                {"name": "c", "image": "i", "args": ["a", "b"], "env": [{"name": "E", "value": "1"}]},
                {"name": "s", "image": "j"}]}}}});
        for s in [schema, None] {
            let value = |v: &Value, p: &ManagedPath| lookup(v, p).cloned().unwrap_or(Value::Null);
            let before = leaves(&old, s);
            let want: FieldSet = leaves(&new, s)
                .into_iter()
                .filter(|p| !before.contains(p) || value(&old, p) != value(&new, p))
                .collect();
            let got = changed(&old, &new, s);
            assert_eq!(got, want);
            assert!(got.contains(&vec!["f:spec".to_string(), "f:replicas".to_string()]));
            assert!(!got.contains(&vec![
                "f:metadata".to_string(),
                "f:labels".to_string(),
                "f:a".to_string()
            ]));
        }
    }

    #[test]
    fn scale_then_apply_keeps_owner() {
        let schema = PatchMeta::builtin().root("apps/v1", "Deployment");
        let w = |m: &'static str, sub: Option<&'static str>| Write {
            manager: m,
            operation: "Update",
            subresource: sub,
            api_version: "apps/v1",
            time: "t",
            applied: None,
        };
        let mut v1 = json!({"metadata": {"name": "d", "labels": {"a": "b"}},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        record(None, &mut v1, schema, &w("kubectl-client-side-apply", None));
        let mf = &v1["metadata"]["managedFields"][0]["fieldsV1"];
        assert_eq!(mf["f:spec"]["f:replicas"], json!({}));
        assert!(
            mf["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"]["f:image"]
                .is_object()
        );
        assert!(mf["f:metadata"].get("f:name").is_none());

        let mut v2 = v1.clone();
        v2["spec"]["replicas"] = json!(2);
        record(
            Some(&v1),
            &mut v2,
            schema,
            &w("kubectl-scale", Some("scale")),
        );
        let entries = v2["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert!(entries[0]["fieldsV1"]["f:spec"].get("f:replicas").is_none());
        assert_eq!(entries[1]["manager"], "kubectl-scale");
        assert_eq!(entries[1]["subresource"], "scale");
        assert_eq!(
            entries[1]["fieldsV1"],
            json!({"f:spec": {"f:replicas": {}}})
        );
        assert_eq!(from_fields_v1(&entries[1]["fieldsV1"]).len(), 1);
    }
}
