//! Who wrote which field: `metadata.managedFields` (fieldsV1) of a live
//! object, as field-plan paths. The one owner lookup of the plan, the
//! field causes, `diff` and the TUI. The format is read through
//! [`crate::managedfields`].

use crate::fieldpath::{self as path, FastHash};
use crate::managedfields::{self, Element};
use crate::patchmeta::{PatchMeta, Schema};
use serde_json::{Map, Value};
use std::collections::HashMap;

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

/// The managers of one path, as indexes into [`FieldOwners::managers`]:
/// one manager (nearly every path) without a vector of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Owners {
    One(u32),
    Many(Vec<u32>),
}

impl Owners {
    fn as_slice(&self) -> &[u32] {
        match self {
            Owners::One(i) => std::slice::from_ref(i),
            Owners::Many(v) => v,
        }
    }

    fn add(&mut self, m: u32) {
        match self {
            Owners::One(i) if *i != m => *self = Owners::Many(vec![*i, m]),
            Owners::Many(v) if !v.contains(&m) => v.push(m),
            _ => {}
        }
    }
}

type PathMap = HashMap<String, Owners, FastHash>;

/// The owners of a live object's fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldOwners {
    /// Manager names in managedFields order (of their first entry).
    managers: Vec<String>,
    /// Each manager's latest write, parallel to `managers`.
    writers: Vec<Writer>,
    /// Path -> managers, in managedFields order.
    by_path: PathMap,
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
        let mut path = String::new();
        // A Deployment's apply entry owns about 60 paths: sized once
        // instead of growing (and rehashing) from a few.
        out.by_path.reserve(64);
        for e in entries {
            let Some(manager) = e.get("manager").and_then(Value::as_str) else {
                continue;
            };
            let m = match out.managers.iter().position(|x| x == manager) {
                Some(i) => i,
                None => {
                    out.managers.push(manager.into());
                    out.writers.push(Writer::default());
                    out.managers.len() - 1
                }
            };
            let w = &mut out.writers[m];
            // RFC 3339 times in UTC compare as text.
            if let Some(time) = e.get("time").and_then(Value::as_str)
                && w.time.as_deref().is_none_or(|t| time > t)
            {
                w.time = Some(time.into());
            }
            if let Some(sub) = e.get("subresource").and_then(Value::as_str) {
                w.subresource = Some(sub.into());
            }
            if let Some(f) = e.get("fieldsV1") {
                path.clear();
                walk_fields_v1(&mut path, f, schema, m as u32, &mut out.by_path);
            }
        }
        out
    }

    /// Every owned path with its managers, as recorded (no ancestors),
    /// sorted by path.
    pub fn exact(&self) -> Vec<(&str, Vec<&str>)> {
        let mut out: Vec<(&str, Vec<&str>)> = self
            .by_path
            .iter()
            .map(|(p, o)| (p.as_str(), self.names(o).collect()))
            .collect();
        out.sort_unstable_by(|a, b| a.0.cmp(b.0));
        out
    }

    fn names<'s>(&'s self, o: &'s Owners) -> impl ExactSizeIterator<Item = &'s str> + Clone {
        o.as_slice()
            .iter()
            .map(|&i| self.managers[i as usize].as_str())
    }

    /// The managers of `path`, or of its nearest owned ancestor (a field
    /// inside an atomic map or list is owned through it), in managedFields
    /// order.
    pub fn of<'s>(&'s self, path: &str) -> impl ExactSizeIterator<Item = &'s str> + Clone {
        let mut p = path;
        let found = loop {
            if let Some(o) = self.by_path.get(p) {
                break o.as_slice();
            }
            match p.rfind(['.', '[']) {
                Some(cut) => p = &p[..cut],
                None => break &[],
            }
        };
        found.iter().map(|&i| self.managers[i as usize].as_str())
    }

    /// The managers of `path` other than client-side apply.
    pub fn others(&self, path: &str) -> Vec<&str> {
        self.of(path).filter(|m| !is_apply_manager(m)).collect()
    }

    /// A manager's latest write.
    pub fn writer(&self, manager: &str) -> Option<&Writer> {
        let i = self.managers.iter().position(|m| m == manager)?;
        self.writers.get(i)
    }

    /// Whether managedFields recorded anything.
    pub fn is_empty(&self) -> bool {
        self.by_path.is_empty()
    }
}

fn record_owner(out: &mut PathMap, path: &str, manager: u32) {
    if path.is_empty() {
        return;
    }
    // Nearly every path is new: hashed once, on insertion.
    out.entry(path.into())
        .and_modify(|o| o.add(manager))
        .or_insert(Owners::One(manager));
}

/// Append the path of a list element named by its fieldsV1 key
/// (`k:{...}`): by the patch merge key when the schema has one (as the
/// field plan names it), else by all its keys.
fn push_keyed_element(p: &mut String, keys: &Map<String, Value>, schema: Option<Schema>) {
    if let Some(mk) = schema.and_then(|s| s.merge_key())
        && let Some(v) = keys.get(mk)
    {
        path::push_element(p, mk, v);
        return;
    }
    if keys.len() == 1
        && let Some((k, v)) = keys.iter().next()
    {
        path::push_element(p, k, v);
        return;
    }
    p.push('[');
    for (i, (k, v)) in keys.iter().enumerate() {
        if i > 0 {
            p.push(',');
        }
        p.push_str(k);
        p.push('=');
        path::push_element_value(p, v);
    }
    p.push(']');
}

/// Record the owner of every path under `node`; `p` is the path of
/// `node`, restored on return (one buffer for the whole walk).
fn walk_fields_v1(
    p: &mut String,
    node: &Value,
    schema: Option<Schema>,
    manager: u32,
    out: &mut PathMap,
) {
    let Some(m) = node.as_object() else {
        return;
    };
    if m.is_empty() {
        record_owner(out, p, manager);
        return;
    }
    let len = p.len();
    for (k, v) in m {
        let sub_schema = match managedfields::element(k) {
            Element::Itself => {
                record_owner(out, p, manager);
                continue;
            }
            Element::Field(name) => {
                path::push_key(p, name);
                schema.and_then(|s| s.field(name))
            }
            Element::Key { keys, raw } => {
                match keys {
                    Some(keys) => push_keyed_element(p, &keys, schema),
                    None => {
                        p.push('[');
                        p.push_str(raw);
                        p.push(']');
                    }
                }
                schema.and_then(|s| s.items())
            }
            Element::Value { value, raw } => {
                p.push('[');
                match value {
                    Some(v) => path::push_element_value(p, &v),
                    None => p.push_str(raw),
                }
                p.push(']');
                None
            }
            Element::Index(i) => {
                p.push('[');
                p.push_str(i);
                p.push(']');
                schema.and_then(|s| s.items())
            }
            Element::Other(k) => {
                path::push_key(p, k);
                None
            }
        };
        walk_fields_v1(p, v, sub_schema, manager, out);
        p.truncate(len);
    }
}

/// The owners of a live object's fields, read from managedFields the
/// first time a row needs them (an object whose rows need no owner never
/// reads them), then shared by the causes and the hazards.
pub(crate) struct LazyOwners<'v> {
    live: &'v Value,
    cell: std::cell::OnceCell<FieldOwners>,
}

impl<'v> LazyOwners<'v> {
    pub fn new(live: &'v Value) -> LazyOwners<'v> {
        LazyOwners {
            live,
            cell: std::cell::OnceCell::new(),
        }
    }

    pub fn get(&self) -> &FieldOwners {
        self.cell.get_or_init(|| FieldOwners::from_live(self.live))
    }

    /// The live object the owners are read from.
    pub fn live(&self) -> &'v Value {
        self.live
    }
}
