//! Who wrote which field: `metadata.managedFields` (fieldsV1) of a live
//! object, as field-plan paths. The one owner lookup of the plan, the
//! field causes, `diff` and the TUI. The format is read through
//! [`crate::managedfields`].

use crate::fieldpath::{self as path, FastHash, PathHasher};
use crate::managedfields::{self, Element};
use crate::patchmeta::{PatchMeta, Schema};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::hash::Hasher;

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

/// One owned path: its text (a range of [`FieldOwners::text`]) and its
/// managers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owned {
    start: u32,
    end: u32,
    owners: Owners,
    /// The next path with the same hash (an index into `owned`), if any.
    next: Option<u32>,
}

/// The owned paths, stored without a string allocation each: their texts
/// one after another in `text`, found by the hash of their text (paths
/// whose hashes collide are chained and told apart by their text).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct PathMap {
    text: String,
    owned: Vec<Owned>,
    /// Hash of a path's text -> the first of its `owned` entries.
    by_hash: HashMap<u64, u32, FastHash>,
}

fn hash_of(path: &str) -> u64 {
    let mut h = PathHasher::default();
    h.write(path.as_bytes());
    h.finish()
}

impl PathMap {
    fn text_of(&self, o: &Owned) -> &str {
        &self.text[o.start as usize..o.end as usize]
    }

    /// The index of `path` in `owned`, `hash` being its [`hash_of`].
    fn find(&self, path: &str, hash: u64) -> Option<usize> {
        let mut at = self.by_hash.get(&hash).copied();
        while let Some(i) = at {
            let o = &self.owned[i as usize];
            if self.text_of(o) == path {
                return Some(i as usize);
            }
            at = o.next;
        }
        None
    }

    fn get(&self, path: &str) -> Option<&Owners> {
        self.find(path, hash_of(path))
            .map(|i| &self.owned[i].owners)
    }

    /// Add `manager` to the owners of `path`.
    fn record(&mut self, path: &str, manager: u32) {
        self.record_hashed(path, hash_of(path), manager);
    }

    fn record_hashed(&mut self, path: &str, hash: u64, manager: u32) {
        if let Some(i) = self.find(path, hash) {
            self.owned[i].owners.add(manager);
            return;
        }
        let start = self.text.len() as u32;
        self.text.push_str(path);
        let index = self.owned.len() as u32;
        let next = self.by_hash.insert(hash, index);
        self.owned.push(Owned {
            start,
            end: self.text.len() as u32,
            owners: Owners::One(manager),
            next,
        });
    }

    fn is_empty(&self) -> bool {
        self.owned.is_empty()
    }

    fn iter(&self) -> impl Iterator<Item = (&str, &Owners)> {
        self.owned.iter().map(|o| (self.text_of(o), &o.owners))
    }
}

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
            .get("metadata")
            .and_then(|m| m.get("managedFields"))
            .and_then(Value::as_array)
        else {
            return out;
        };
        let str_at = |k: &str| live.get(k).and_then(Value::as_str);
        let schema = match (str_at("apiVersion"), str_at("kind")) {
            (Some(a), Some(k)) => PatchMeta::builtin().root(a, k),
            _ => None,
        };
        let mut path = String::new();
        // A Deployment's apply entry owns about 60 paths: sized once
        // instead of growing (and rehashing) from a few.
        out.by_path.by_hash.reserve(64);
        out.by_path.owned.reserve(64);
        out.by_path.text.reserve(64 * 40);
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
            .map(|(p, o)| (p, self.names(o).collect()))
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
    if !path.is_empty() {
        out.record(path, manager);
    }
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
        // Only what lies below a field needs its schema (for the merge
        // keys of list elements): a leaf (`{}`) does without the lookup.
        let inner = v.as_object().is_some_and(|c| !c.is_empty());
        let sub_schema = if let Some(raw) = k.strip_prefix("k:")
            && push_flat_keyed_element(p, raw, schema)
        {
            schema.and_then(|s| s.items())
        } else {
            match managedfields::element(k) {
                Element::Itself => {
                    record_owner(out, p, manager);
                    continue;
                }
                Element::Field(name) => {
                    path::push_key(p, name);
                    schema.filter(|_| inner).and_then(|s| s.field(name))
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
            }
        };
        walk_fields_v1(p, v, sub_schema, manager, out);
        p.truncate(len);
    }
}

/// The most keys a `k:` element read without serde_json has.
const FLAT_KEYS: usize = 4;

/// [`push_keyed_element`] for the common `k:` text (`{"name":"web"}`,
/// `{"containerPort":80,"protocol":"TCP"}`) without parsing it into a map:
/// an object of at most [`FLAT_KEYS`] distinct keys, no whitespace,
/// strings without escapes and non-negative integers in their shortest
/// form, whose text as a path is the one serde_json's value gives. Anything
/// else returns false with `p` untouched, for the general reading.
fn push_flat_keyed_element(p: &mut String, raw: &str, schema: Option<Schema>) -> bool {
    let mut keys: [(&str, &str); FLAT_KEYS] = [("", ""); FLAT_KEYS];
    let Some(n) = flat_keys(raw, &mut keys) else {
        return false;
    };
    let keys = &mut keys[..n];
    // serde_json's map is sorted by key (and takes the last of equal keys:
    // left to it).
    keys.sort_unstable_by(|a, b| a.0.cmp(b.0));
    if keys.windows(2).any(|w| w[0].0 == w[1].0) {
        return false;
    }
    let one = |p: &mut String, (k, v): (&str, &str)| {
        p.push('[');
        p.push_str(k);
        p.push('=');
        p.push_str(v);
        p.push(']');
    };
    if let Some(mk) = schema.and_then(|s| s.merge_key())
        && let Some(&kv) = keys.iter().find(|(k, _)| *k == mk)
    {
        one(p, kv);
    } else if let [kv] = keys {
        one(p, *kv);
    } else {
        p.push('[');
        for (i, (k, v)) in keys.iter().enumerate() {
            if i > 0 {
                p.push(',');
            }
            p.push_str(k);
            p.push('=');
            p.push_str(v);
        }
        p.push(']');
    }
    true
}

/// The keys and values (as a path writes them) of a flat `k:` object, see
/// [`push_flat_keyed_element`]; their number, or `None`.
fn flat_keys<'r>(raw: &'r str, out: &mut [(&'r str, &'r str); FLAT_KEYS]) -> Option<usize> {
    let mut rest = raw.strip_prefix('{')?;
    let mut n = 0;
    loop {
        if n == FLAT_KEYS {
            return None;
        }
        let (key, after) = plain_string(rest)?;
        rest = after.strip_prefix(':')?;
        let (value, after) = match rest.as_bytes().first()? {
            b'"' => plain_string(rest)?,
            _ => {
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                // Shortest form, and small enough to stay an integer.
                if digits == 0 || digits > 18 || (digits > 1 && rest.starts_with('0')) {
                    return None;
                }
                rest.split_at(digits)
            }
        };
        out[n] = (key, value);
        n += 1;
        match after.as_bytes().first()? {
            b',' => rest = &after[1..],
            b'}' if after.len() == 1 => return Some(n),
            _ => return None,
        }
    }
}

/// A JSON string at the start of `s` with no escape or control character:
/// its text and what follows it.
fn plain_string(s: &str) -> Option<(&str, &str)> {
    let body = s.strip_prefix('"')?;
    let end = body
        .bytes()
        .position(|b| b == b'"' || b == b'\\' || b < 0x20)?;
    (body.as_bytes()[end] == b'"').then(|| (&body[..end], &body[end + 1..]))
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_whose_hashes_collide_stay_apart() {
        let mut m = PathMap::default();
        m.record_hashed("spec.a", 7, 0);
        m.record_hashed("spec.b", 7, 1);
        m.record_hashed("spec.a", 7, 2);
        m.record_hashed("spec.b", 7, 1);
        let owners = |p: &str| m.find(p, 7).map(|i| m.owned[i].owners.clone());
        assert_eq!(owners("spec.a"), Some(Owners::Many(vec![0, 2])));
        assert_eq!(owners("spec.b"), Some(Owners::One(1)));
        assert_eq!(owners("spec.c"), None);
        assert_eq!(m.iter().count(), 2);
    }

    /// The `k:` texts read without serde_json name the element as the
    /// general reading does; the others are left to it.
    #[test]
    fn flat_keyed_elements_read_as_serde_json_does() {
        let meta = PatchMeta::builtin();
        let containers = meta
            .root("apps/v1", "Deployment")
            .and_then(|s| s.field("spec"))
            .and_then(|s| s.field("template"))
            .and_then(|s| s.field("spec"))
            .and_then(|s| s.field("containers"));
        let ports = containers
            .and_then(|s| s.items())
            .and_then(|s| s.field("ports"));
        assert_eq!(containers.and_then(|s| s.merge_key()), Some("name"));
        assert_eq!(ports.and_then(|s| s.merge_key()), Some("containerPort"));
        let flat = [
            r#"{"name":"web"}"#,
            r#"{"containerPort":80,"protocol":"TCP"}"#,
            r#"{"protocol":"TCP","containerPort":9090}"#,
            r#"{"port":0,"name":""}"#,
            r#"{"a":"1","b":"2","c":"3","d":"4"}"#,
            "{\"name\":\"gr\u{fc}n.x[0]\"}",
        ];
        let general = [
            r#"{"name":"a\"b"}"#,
            r#"{"name": "web"}"#,
            r#"{"containerPort":-1}"#,
            r#"{"containerPort":1.5}"#,
            r#"{"containerPort":007}"#,
            r#"{"containerPort":1234567890123456789}"#,
            r#"{"name":true}"#,
            r#"{"name":null}"#,
            r#"{"name":{"x":1}}"#,
            r#"{"name":"a","name":"b"}"#,
            r#"{"a":"1","b":"2","c":"3","d":"4","e":"5"}"#,
            r#"{}"#,
            r#"{"name":"web"} "#,
            r#"{"name":"web""#,
            r#"["web"]"#,
        ];
        for schema in [None, containers, ports] {
            for raw in flat {
                let keys: Map<String, Value> = serde_json::from_str(raw).unwrap();
                let mut want = String::from("x");
                push_keyed_element(&mut want, &keys, schema);
                let mut got = String::from("x");
                assert!(push_flat_keyed_element(&mut got, raw, schema), "{raw}");
                assert_eq!(got, want, "{raw}");
            }
            for raw in general {
                let mut got = String::from("x");
                assert!(!push_flat_keyed_element(&mut got, raw, schema), "{raw}");
                assert_eq!(got, "x");
            }
        }
    }

    /// A path several managers own lists them in the order their entries
    /// first recorded it; a field inside an owned map is owned through it.
    #[test]
    fn several_managers_in_entry_order() {
        let live = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "managedFields": [
            {"manager": "a", "time": "2026-01-01T00:00:00Z",
             "fieldsV1": {"f:spec": {"f:replicas": {}}}},
            {"manager": "b", "time": "2026-01-02T00:00:00Z",
             "fieldsV1": {"f:spec": {"f:replicas": {}, "f:paused": {}}}},
            {"manager": "a", "subresource": "scale", "time": "2026-01-03T00:00:00Z",
             "fieldsV1": {"f:spec": {"f:paused": {}, "f:selector": {}}}},
            {"manager": "c", "fieldsV1": {"f:spec": {"f:template": {"f:spec": {
                "f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}}}}}}}},
        ]}});
        let o = FieldOwners::from_live(&live);
        let of = |p: &str| o.of(p).collect::<Vec<_>>();
        assert_eq!(of("spec.replicas"), ["a", "b"]);
        assert_eq!(of("spec.paused"), ["b", "a"]);
        assert_eq!(of("spec.selector.matchLabels.app"), ["a"]);
        assert_eq!(of("spec.template.spec.containers[name=web].image"), ["c"]);
        assert_eq!(of("spec.template.spec.containers[name=web].env"), ["c"]);
        assert!(of("spec.template.spec.containers[name=other].env").is_empty());
        assert_eq!(o.others("spec.paused"), ["b", "a"]);
        let a = o.writer("a").unwrap();
        assert_eq!(a.time.as_deref(), Some("2026-01-03T00:00:00Z"));
        assert_eq!(a.subresource.as_deref(), Some("scale"));
        assert_eq!(
            o.exact().iter().map(|(p, _)| *p).collect::<Vec<_>>(),
            [
                "spec.paused",
                "spec.replicas",
                "spec.selector",
                "spec.template.spec.containers[name=web]",
                "spec.template.spec.containers[name=web].image",
            ]
        );
    }
}
