//! Who wrote which field: `metadata.managedFields` (fieldsV1) of a live
//! object, as field-plan paths. The one owner lookup of the plan, the
//! field causes, `diff` and the TUI. The format is read through
//! [`crate::managedfields`].

use crate::fieldpath as path;
use crate::managedfields::{self, Element};
use crate::patchmeta::{ListStrategy, PatchMeta, Schema};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The managers client-side apply writes as: a field they own that
/// last-applied never named was defaulted by the server when apply wrote
/// the object.
pub const APPLY_MANAGERS: [&str; 2] = ["kubectl-client-side-apply", "before-first-apply"];

/// Whether `manager` is client-side apply itself.
pub fn is_apply_manager(manager: &str) -> bool {
    APPLY_MANAGERS.contains(&manager)
}

/// One managedFields entry's identity, beyond its fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Writer {
    /// When the manager last wrote (RFC 3339), when recorded.
    pub time: Option<String>,
    /// `scale`, `status`: the subresource the manager wrote through.
    pub subresource: Option<String>,
}

/// The owners of a live object's fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldOwners {
    /// Path -> managers, in managedFields order.
    by_path: BTreeMap<String, Vec<String>>,
    /// Manager -> its latest write.
    writers: BTreeMap<String, Writer>,
}

impl FieldOwners {
    /// Read `metadata.managedFields` of a live object (empty when absent).
    pub fn from_live(live: &Value) -> FieldOwners {
        let mut out = FieldOwners::default();
        let Some(entries) = live
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array)
        else {
            return out;
        };
        let str_at = |p: &str| live.pointer(p).and_then(Value::as_str);
        let schema = match (str_at("/apiVersion"), str_at("/kind")) {
            (Some(a), Some(k)) => PatchMeta::builtin().root(a, k),
            _ => None,
        };
        for e in entries {
            let Some(manager) = e.get("manager").and_then(Value::as_str) else {
                continue;
            };
            let time = e.get("time").and_then(Value::as_str).map(String::from);
            let w = out.writers.entry(manager.into()).or_default();
            // RFC 3339 times in UTC compare as text.
            if time.is_some() && (w.time.is_none() || time > w.time) {
                w.time = time;
            }
            if let Some(sub) = e.get("subresource").and_then(Value::as_str) {
                w.subresource = Some(sub.into());
            }
            if let Some(f) = e.get("fieldsV1") {
                walk_fields_v1("", f, schema, manager, &mut out.by_path);
            }
        }
        out
    }

    /// Every owned path with its managers, as recorded (no ancestors).
    pub fn exact(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.by_path.iter().map(|(p, m)| (p.as_str(), m.as_slice()))
    }

    /// The managers of `path`, or of its nearest owned ancestor (a field
    /// inside an atomic map or list is owned through it).
    pub fn of(&self, path: &str) -> &[String] {
        let mut p = path;
        loop {
            if let Some(o) = self.by_path.get(p) {
                return o;
            }
            match p.rfind(['.', '[']) {
                Some(cut) => p = &p[..cut],
                None => return &[],
            }
        }
    }

    /// The managers of `path` other than client-side apply.
    pub fn others(&self, path: &str) -> Vec<&str> {
        self.of(path)
            .iter()
            .map(String::as_str)
            .filter(|m| !is_apply_manager(m))
            .collect()
    }

    /// A manager's latest write.
    pub fn writer(&self, manager: &str) -> Option<&Writer> {
        self.writers.get(manager)
    }

    /// Whether managedFields recorded anything.
    pub fn is_empty(&self) -> bool {
        self.by_path.is_empty()
    }
}

fn record_owner(out: &mut BTreeMap<String, Vec<String>>, path: &str, manager: &str) {
    if path.is_empty() {
        return;
    }
    let entry = out.entry(path.into()).or_default();
    if !entry.iter().any(|x| x == manager) {
        entry.push(manager.into());
    }
}

/// The path of a list element named by its fieldsV1 key (`k:{...}`): by
/// the patch merge key when the schema has one (as the field plan names
/// it), else by all its keys.
fn keyed_element(p: &str, keys: &Map<String, Value>, schema: Option<Schema>) -> String {
    if let Some(ListStrategy::MergeByKey(mk)) = schema.map(|s| s.list_strategy())
        && let Some(v) = keys.get(&mk)
    {
        return path::element(p, &mk, v);
    }
    if keys.len() == 1
        && let Some((k, v)) = keys.iter().next()
    {
        return path::element(p, k, v);
    }
    let parts: Vec<String> = keys
        .iter()
        .map(|(k, v)| format!("{k}={}", path::element_value(v)))
        .collect();
    format!("{p}[{}]", parts.join(","))
}

fn walk_fields_v1(
    p: &str,
    node: &Value,
    schema: Option<Schema>,
    manager: &str,
    out: &mut BTreeMap<String, Vec<String>>,
) {
    let Some(m) = node.as_object() else {
        return;
    };
    if m.is_empty() {
        record_owner(out, p, manager);
        return;
    }
    for (k, v) in m {
        let (sub, sub_schema) = match managedfields::element(k) {
            Element::Itself => {
                record_owner(out, p, manager);
                continue;
            }
            Element::Field(name) => (path::key(p, name), schema.and_then(|s| s.field(name))),
            Element::Key { keys, raw } => {
                let items = schema.and_then(|s| s.items());
                match keys {
                    Some(keys) => (keyed_element(p, &keys, schema), items),
                    None => (format!("{p}[{raw}]"), items),
                }
            }
            Element::Value { value, raw } => {
                let v = value.unwrap_or_else(|| Value::String(raw.into()));
                (format!("{p}[{}]", path::element_value(&v)), None)
            }
            Element::Index(i) => (format!("{p}[{i}]"), schema.and_then(|s| s.items())),
            Element::Other(k) => (path::key(p, k), None),
        };
        walk_fields_v1(&sub, v, sub_schema, manager, out);
    }
}
