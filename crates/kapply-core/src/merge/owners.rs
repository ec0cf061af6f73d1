//! Who wrote which field: `metadata.managedFields` (fieldsV1) of a live
//! object, as field-plan paths. The one owner lookup of the plan, the
//! field causes, `diff` and the TUI. The format is read through
//! [`crate::managedfields`].

use crate::fieldpath as path;
use crate::managedfields::{self, Element};
use crate::patchmeta::{PatchMeta, Schema};
use serde_json::{Map, Value};
use std::cell::RefCell;
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

/// The managers of one path ([`FieldOwners::exact`]'s walk, the answer
/// of [`FieldOwners::of`]), as indexes into [`FieldOwners::managers`]: one
/// manager (nearly every path) without a vector of its own.
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

/// The owned paths of [`FieldOwners::exact`]'s walk and their managers.
type PathMap = BTreeMap<String, Owners>;

/// The owners of a live object's fields: its managedFields entries, read
/// for each path asked. A plan asks about a few paths (~17 for a
/// Deployment) while the entries own a few hundred: each question walks
/// the entries' fieldsV1 trees along the path's steps only, instead of
/// recording every owned path first.
#[derive(Debug, Clone, Default)]
pub struct FieldOwners<'v> {
    /// Manager names in managedFields order (of their first entry).
    managers: Vec<String>,
    /// Each manager's latest write, parallel to `managers`.
    writers: Vec<Writer>,
    /// The entries with a manager, in managedFields order: the manager
    /// (an index into `managers`) and its fieldsV1 (when an object).
    entries: Vec<(u32, &'v Map<String, Value>)>,
    /// The object's schema, which names the elements of keyed lists.
    schema: Option<Schema<'static>>,
    /// Per entry, the nodes the last question's leading plain steps led
    /// to: the rows ask in path order, so the next question mostly starts
    /// below them (`spec.template.spec.containers` asked once for all the
    /// containers' fields).
    trails: RefCell<Vec<Trail<'v>>>,
}

/// See [`FieldOwners::trails`].
#[derive(Debug, Clone, Default)]
struct Trail<'v> {
    /// The path last asked.
    path: String,
    /// The root, then the node each plain step of `path` led to while
    /// one child alone continued it.
    frames: Vec<Frame<'v>>,
}

#[derive(Debug, Clone, Copy)]
struct Frame<'v> {
    /// Where the node's step ends in the path.
    end: usize,
    node: &'v Map<String, Value>,
    schema: Option<Schema<'static>>,
    /// The deepest owned node above it (0: none), as `deepest`.
    owned_above: usize,
}

impl<'v> FieldOwners<'v> {
    /// Read `metadata.managedFields` of a live object (empty when absent).
    pub fn from_live(live: &'v Value) -> FieldOwners<'v> {
        let mut out = FieldOwners::default();
        let Some(entries) = live
            .get("metadata")
            .and_then(|m| m.get("managedFields"))
            .and_then(Value::as_array)
        else {
            return out;
        };
        let str_at = |k: &str| live.get(k).and_then(Value::as_str);
        out.schema = match (str_at("apiVersion"), str_at("kind")) {
            (Some(a), Some(k)) => PatchMeta::builtin().root(a, k),
            _ => None,
        };
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
            // A fieldsV1 that is not an object records nothing.
            if let Some(f) = e.get("fieldsV1").and_then(Value::as_object) {
                out.entries.push((m as u32, f));
            }
        }
        let trails = out.entries.iter().map(|&(_, f)| Trail {
            path: String::new(),
            frames: vec![Frame {
                end: 0,
                node: f,
                schema: out.schema,
                owned_above: 0,
            }],
        });
        out.trails = RefCell::new(trails.collect());
        out
    }

    /// Every owned path with its managers (in managedFields order of the
    /// first entry recording it), as recorded (no ancestors), sorted by
    /// path: every entry's fieldsV1 walked whole.
    pub fn exact(&self) -> Vec<(String, Vec<&str>)> {
        let mut by_path = PathMap::default();
        let mut path = String::new();
        for &(m, f) in &self.entries {
            path.clear();
            walk_fields_v1(&mut path, f, self.schema, m, &mut by_path);
        }
        // The map is sorted by path.
        by_path
            .into_iter()
            .map(|(p, o)| {
                let names = o.as_slice().iter();
                (
                    p,
                    names.map(|&i| self.managers[i as usize].as_str()).collect(),
                )
            })
            .collect()
    }

    /// The managers of `path`, or of its nearest owned ancestor (a field
    /// inside an atomic map or list is owned through it), in managedFields
    /// order. The ancestors are the path's text cut before a `.` or a `[`,
    /// as [`FieldOwners::exact`]'s texts are compared.
    pub fn of(&self, path: &str) -> OwnersOf<'_> {
        let mut scratch = String::new();
        // The longest owned prefix so far, and the managers of the entries
        // recording it (a shorter one loses its managers: the prefixes of
        // one path are told apart by their length).
        let mut best = 0;
        let mut owners: Option<Owners> = None;
        let mut trails = self.trails.borrow_mut();
        for (&(m, _), t) in self.entries.iter().zip(trails.iter_mut()) {
            // The last node of the trail this path leads to as well: the
            // same text up to its step's end, the step ending there.
            let common = t
                .path
                .bytes()
                .zip(path.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(t.path.len().min(path.len()));
            let keep = t
                .frames
                .iter()
                .rposition(|f| {
                    f.end == 0
                        || (f.end <= common
                            && path
                                .as_bytes()
                                .get(f.end)
                                .is_none_or(|b| matches!(b, b'.' | b'[')))
                })
                .unwrap_or(0);
            t.frames.truncate(keep + 1);
            t.path.clear();
            t.path.push_str(path);
            let Some(&from) = t.frames.last() else {
                continue;
            };
            let mut deepest = from.owned_above;
            deepest_owned(
                path,
                from.node,
                from.end,
                from.schema,
                &mut scratch,
                &mut deepest,
                Some(&mut t.frames),
            );
            if deepest == 0 || deepest < best {
                continue;
            }
            if deepest > best {
                best = deepest;
                owners = None;
            }
            match &mut owners {
                Some(o) => o.add(m),
                None => owners = Some(Owners::One(m)),
            }
        }
        OwnersOf {
            managers: &self.managers,
            found: owners,
            at: 0,
        }
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
        !self.entries.iter().any(|(_, f)| records_any(f, true))
    }
}

/// The managers of a path, see [`FieldOwners::of`].
#[derive(Debug, Clone)]
pub struct OwnersOf<'s> {
    managers: &'s [String],
    found: Option<Owners>,
    at: usize,
}

impl OwnersOf<'_> {
    fn found_slice(&self) -> &[u32] {
        self.found.as_ref().map_or(&[], Owners::as_slice)
    }
}

impl<'s> Iterator for OwnersOf<'s> {
    type Item = &'s str;

    fn next(&mut self) -> Option<&'s str> {
        let &i = self.found_slice().get(self.at)?;
        self.at += 1;
        Some(self.managers[i as usize].as_str())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.found_slice().len() - self.at;
        (n, Some(n))
    }
}

impl ExactSizeIterator for OwnersOf<'_> {}

/// Whether a fieldsV1 node records a path (`root`: the entry's own, whose
/// empty path is never recorded): [`walk_fields_v1`] records something.
fn records_any(node: &Map<String, Value>, root: bool) -> bool {
    if node.is_empty() {
        return !root;
    }
    node.iter().any(|(k, v)| {
        if k == "." {
            !root
        } else {
            // A step's text is never empty: below the root every node has
            // a path.
            v.as_object().is_some_and(|c| records_any(c, false))
        }
    })
}

/// The length of the longest prefix of `path` that ends before a `.`, a
/// `[` or at its end and that the fieldsV1 `node` records (as
/// [`walk_fields_v1`] would, with the text `path[..pos]` for `node`),
/// raised into `deepest`. Only the children whose step continues `path`
/// are visited: every recorded path's walk ancestors are prefixes of it.
fn deepest_owned<'v>(
    path: &str,
    node: &'v Map<String, Value>,
    pos: usize,
    schema: Option<Schema<'static>>,
    scratch: &mut String,
    deepest: &mut usize,
    trail: Option<&mut Vec<Frame<'v>>>,
) {
    if node.is_empty() {
        if pos > 0 {
            *deepest = (*deepest).max(pos);
        }
        return;
    }
    let rest = &path[pos..];
    // The next step of `path`: `.name` (`name` at the start) is a plain
    // key's, written by `f:name` or by a key without a known prefix (a
    // plain key has no `:` and is not `.`); every other step starts with
    // `[`. Neither: no child's step continues `path` (its end, or text no
    // step is written as).
    let plain = match rest.as_bytes().first() {
        Some(b'[') | None => None,
        Some(&first) => {
            let skip = usize::from(pos > 0);
            let name = &rest[skip..];
            let name = &name[..path::plain_len(name)];
            let end = pos + skip + name.len();
            // The whole key plain, up to the next step or the end.
            let whole = path
                .as_bytes()
                .get(end)
                .is_none_or(|b| matches!(b, b'.' | b'['));
            ((first == b'.' || pos == 0) && !name.is_empty() && whole).then_some((name, end))
        }
    };
    let bracket = rest.starts_with('[');
    // An `f:` key is written in brackets only when quoted.
    let quoted = rest.as_bytes().get(1) == Some(&b'"');
    let mut owned = false;
    // The children continuing a plain step: `f:name`, and `name`.
    let (mut field, mut other) = (None, None);
    // One pass over the keys, their lengths compared first: cheaper than
    // the map's lookups (each comparing texts with every key on its way).
    for (k, child) in node {
        if k == "." {
            owned = true;
            continue;
        }
        let Some(c) = child.as_object() else {
            // Not an object: nothing recorded below it.
            continue;
        };
        if let Some((name, _)) = plain {
            if k.len() == name.len() + 2 && k.starts_with("f:") && &k[2..] == name {
                field = Some(c);
            } else if k == name {
                other = Some(c);
            }
            continue;
        }
        if !bracket || (!quoted && k.starts_with("f:")) {
            continue;
        }
        // A step in brackets: a key that is not plain (`["a.b"]`), a list
        // element (`[name=web]`, `[0]`) or a set's value: the child's step
        // written as the full walk writes it, and compared.
        if scratch.capacity() == 0 {
            scratch.reserve(64);
        }
        scratch.clear();
        let Some(sub) = push_step(scratch, k, !c.is_empty(), schema) else {
            continue;
        };
        let end = pos + scratch.len();
        if rest.starts_with(scratch.as_str())
            && path
                .as_bytes()
                .get(end)
                .is_none_or(|b| matches!(b, b'.' | b'['))
        {
            deepest_owned(path, c, end, sub, scratch, deepest, None);
        }
    }
    if owned && pos > 0 {
        *deepest = (*deepest).max(pos);
    }
    let Some((name, end)) = plain else {
        return;
    };
    // The trail goes on while one child alone continues the path.
    let mut trail = trail.filter(|_| field.is_some() != other.is_some());
    if let Some(c) = field {
        let sub = schema.filter(|_| !c.is_empty()).and_then(|s| s.field(name));
        if let Some(t) = trail.as_deref_mut() {
            t.push(Frame {
                end,
                node: c,
                schema: sub,
                owned_above: *deepest,
            });
        }
        deepest_owned(path, c, end, sub, scratch, deepest, trail.take());
    }
    if let Some(c) = other {
        if let Some(t) = trail.as_deref_mut() {
            t.push(Frame {
                end,
                node: c,
                schema: None,
                owned_above: *deepest,
            });
        }
        deepest_owned(path, c, end, None, scratch, deepest, trail);
    }
}

fn record_owner(out: &mut PathMap, path: &str, manager: u32) {
    if path.is_empty() {
        return;
    }
    match out.get_mut(path) {
        Some(owners) => owners.add(manager),
        None => {
            out.insert(path.to_string(), Owners::One(manager));
        }
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
    node: &Map<String, Value>,
    schema: Option<Schema>,
    manager: u32,
    out: &mut PathMap,
) {
    if node.is_empty() {
        record_owner(out, p, manager);
        return;
    }
    let len = p.len();
    for (k, v) in node {
        let inner = v.as_object().is_some_and(|c| !c.is_empty());
        let Some(sub_schema) = push_step(p, k, inner, schema) else {
            record_owner(out, p, manager);
            continue;
        };
        if let Some(c) = v.as_object() {
            walk_fields_v1(p, c, sub_schema, manager, out);
        }
        p.truncate(len);
    }
}

/// Append the path step of the fieldsV1 key `k` to `p` (the path of its
/// node; a plain key is written without a `.` when `p` is empty), and
/// return the schema below it; `None` for `.` (the node itself), with `p`
/// untouched. `inner`: whether something lies below the key (a leaf needs
/// no schema lookup). The one writer of steps, for the full walk and
/// [`deepest_owned`]'s comparisons.
fn push_step<'s>(
    p: &mut String,
    k: &str,
    inner: bool,
    schema: Option<Schema<'s>>,
) -> Option<Option<Schema<'s>>> {
    if let Some(raw) = k.strip_prefix("k:")
        && push_flat_keyed_element(p, raw, schema)
    {
        return Some(schema.and_then(|s| s.items()));
    }
    Some(match managedfields::element(k) {
        Element::Itself => return None,
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
    })
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
    // As `path::push_element` writes it: a `]` in the value doubled.
    let one = |p: &mut String, (k, v): (&str, &str)| {
        p.push('[');
        p.push_str(k);
        p.push('=');
        if v.contains(']') {
            p.push_str(&v.replace(']', "]]"));
        } else {
            p.push_str(v);
        }
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
    cell: std::cell::OnceCell<FieldOwners<'v>>,
}

impl<'v> LazyOwners<'v> {
    pub fn new(live: &'v Value) -> LazyOwners<'v> {
        LazyOwners {
            live,
            cell: std::cell::OnceCell::new(),
        }
    }

    pub fn get(&self) -> &FieldOwners<'v> {
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
    use proptest::prelude::*;
    use serde_json::json;

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
            o.exact()
                .iter()
                .map(|(p, _)| p.as_str())
                .collect::<Vec<_>>(),
            [
                "spec.paused",
                "spec.replicas",
                "spec.selector",
                "spec.template.spec.containers[name=web]",
                "spec.template.spec.containers[name=web].image",
            ]
        );
    }

    /// Today's answer of [`FieldOwners::of`] from the full walk
    /// ([`FieldOwners::exact`]): the path, else its text cut before its
    /// last `.` or `[`, again and again.
    fn of_by_full_walk<'a>(exact: &'a [(String, Vec<&'a str>)], path: &str) -> Vec<&'a str> {
        let mut p = path;
        loop {
            if let Some((_, ms)) = exact.iter().find(|(q, _)| q == p) {
                return ms.clone();
            }
            match p.rfind(['.', '[']) {
                Some(cut) => p = &p[..cut],
                None => return vec![],
            }
        }
    }

    /// Compare the per-path answers with the full walk's for every owned
    /// path, each prefix of its text (cut anywhere), a few descendants and
    /// `extra` paths.
    fn assert_same_as_full_walk(live: &Value, extra: &[&str]) {
        let o = FieldOwners::from_live(live);
        let exact = o.exact();
        assert_eq!(o.is_empty(), exact.is_empty(), "{live}");
        let mut queries: Vec<String> = extra.iter().map(|q| q.to_string()).collect();
        for (p, _) in &exact {
            for (cut, _) in p.char_indices() {
                queries.push(p[..cut].to_string());
            }
            for tail in [
                "",
                ".x",
                "x",
                ".name",
                "[name=web]",
                "[0]",
                "[\"a.b\"]",
                ".",
                "[",
                "]",
                "=",
            ] {
                queries.push(format!("{p}{tail}"));
            }
        }
        for q in &queries {
            let got: Vec<&str> = o.of(q).collect();
            assert_eq!(got.len(), o.of(q).len(), "{q}");
            let want = of_by_full_walk(&exact, q);
            assert_eq!(got, want, "of({q:?}) in {live}");
            let others: Vec<&str> = want.into_iter().filter(|m| !is_apply_manager(m)).collect();
            assert_eq!(o.others(q), others, "{q}");
        }
    }

    /// The keys the generated fieldsV1 trees are made of: fields the
    /// schema knows (so keyed elements are named by their merge key),
    /// quoted keys, keyed elements of one and several keys (flat, escaped,
    /// spaced, not JSON), set values, indexes, keys of no known kind, and
    /// texts that collide (`f:a.b` and `v:"\"a.b\""` are both `["a.b"]`).
    const KEYS: &[&str] = &[
        "f:spec",
        "f:template",
        "f:containers",
        "f:ports",
        "f:env",
        "f:name",
        "f:image",
        "f:metadata",
        "f:labels",
        "f:annotations",
        "f:a.b",
        "f:x\"y",
        "f:",
        "f:k:x",
        ".",
        "name",
        "we ird",
        "",
        "k:{\"name\":\"web\"}",
        "k:{\"name\":\"a.b\"}",
        "k:{\"name\":\"x].y\"}",
        "k:{\"name\":\"a\\\"b\"}",
        "k:{\"name\": \"web\"}",
        "k:{\"containerPort\":80,\"protocol\":\"TCP\"}",
        "k:{\"protocol\":\"UDP\",\"containerPort\":80}",
        "k:{\"a\":1,\"b\":\"x\",\"c\":true}",
        "k:{\"name\":1}",
        "k:oops",
        "v:\"x\"",
        "v:\"a.b\"",
        "v:\"\\\"a.b\\\"\"",
        "v:1",
        "v:bad",
        "i:0",
        "i:12",
    ];

    fn fields_v1() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            6 => Just(json!({})),
            1 => Just(json!(null)),
            1 => Just(json!("s")),
            1 => Just(json!(1)),
        ];
        leaf.prop_recursive(5, 64, 5, |inner| {
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..5).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            })
        })
    }

    fn entry() -> impl Strategy<Value = Value> {
        (
            prop::sample::select(&["a", "b", "kubectl-client-side-apply", "hpa"][..]),
            prop::option::of(prop::sample::select(&["scale", "status"][..])),
            prop::option::of(0..9u8),
            prop_oneof![
                8 => fields_v1(),
                // The whole spec of a Deployment somewhere below.
                2 => fields_v1().prop_map(|f| json!({"f:spec": {"f:template": {"f:spec":
                    {"f:containers": {"k:{\"name\":\"web\"}": f}}}}})),
                1 => Just(json!([1])),
                1 => Just(json!(null)),
            ],
            0..8u8,
        )
            .prop_map(|(m, sub, time, f, shape)| {
                let mut e = json!({"manager": m, "operation": "Update", "fieldsV1": f});
                if let Some(sub) = sub {
                    e["subresource"] = json!(sub);
                }
                if let Some(t) = time {
                    e["time"] = json!(format!("2026-01-0{}T00:00:00Z", t + 1));
                }
                match shape {
                    0 => _ = e.as_object_mut().map(|o| o.remove("fieldsV1")),
                    1 => _ = e.as_object_mut().map(|o| o.remove("manager")),
                    _ => {}
                }
                e
            })
    }

    /// Paths no tree above is likely to own whole, and odd texts.
    const QUERIES: &[&str] = &[
        "",
        ".",
        "[",
        "spec",
        ".spec",
        "spec.",
        "spec..template",
        "spec.template.spec.containers[name=web].image",
        "spec.template.spec.containers[name=web].ports[containerPort=80]",
        "spec.containers[name=x].y].z",
        "spec[\"a.b\"].name",
        "spec[\"a\\u002eb\"]",
        "spec[\"x\\\"y\"]",
        "spec[\"\"]",
        "spec[0].name",
        "spec[12]",
        "spec[x].name",
        "spec[1]",
        "spec[a=1,b=x,c=true]",
        "spec.we ird",
        "spec[\"we ird\"]",
        "name",
        "[name=web]",
        "metadata.labels[\"a.b\"]",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// The per-path walk answers as the full walk does, whatever the
        /// managedFields hold.
        #[test]
        fn per_path_answers_match_the_full_walk(
            entries in prop::collection::vec(entry(), 0..5),
            typed in any::<bool>(),
        ) {
            let mut live = json!({"metadata": {"managedFields": entries}});
            if typed {
                live["apiVersion"] = json!("apps/v1");
                live["kind"] = json!("Deployment");
            }
            assert_same_as_full_walk(&live, QUERIES);
        }
    }

    /// The engine benchmark's live Deployment, and the same with its
    /// entry repeated by other managers (one writing a subresource).
    #[test]
    fn the_benchmark_deployment_answers_as_the_full_walk() {
        let live: Value = serde_json::from_str(include_str!(
            "../../../../benches/fixtures/deployment-live.json"
        ))
        .unwrap();
        let more = [
            "spec.template.spec.containers[name=web].env[name=MODE].value",
            "spec.template.spec.containers[name=sidecar].ports[containerPort=9090].protocol",
            "spec.template.spec.containers[name=web].resources.limits.cpu",
            "metadata.annotations[\"kubectl.kubernetes.io/last-applied-configuration\"]",
            "metadata.annotations[\"other\"]",
            "spec.template.spec.securityContext.runAsUser",
            "status.replicas",
        ];
        assert_same_as_full_walk(&live, &more);
        let o = FieldOwners::from_live(&live);
        assert!(!o.is_empty());
        assert_eq!(
            o.of("spec.template.spec.containers[name=web].image")
                .collect::<Vec<_>>(),
            ["kubectl-client-side-apply"]
        );
        let mut live2 = live.clone();
        let entries = live2["metadata"]["managedFields"].as_array_mut().unwrap();
        let mut e = entries[0].clone();
        e["manager"] = json!("hpa");
        e["subresource"] = json!("scale");
        e["fieldsV1"] = json!({"f:spec": {"f:replicas": {}}});
        entries.insert(0, e);
        let mut e = entries[1].clone();
        e["manager"] = json!("kubectl-edit");
        entries.push(e);
        assert_same_as_full_walk(&live2, &more);
        let o = FieldOwners::from_live(&live2);
        assert_eq!(
            o.of("spec.replicas").collect::<Vec<_>>(),
            ["hpa", "kubectl-client-side-apply", "kubectl-edit"]
        );
        assert_eq!(o.others("spec.replicas"), ["hpa", "kubectl-edit"]);
    }

    /// Keys written the same (`f:name` and `name`, `f:a.b` and
    /// `v:"\"a.b\""`, two elements of one merge key) own their text
    /// together, in entry order; questions asked one after another in any
    /// order answer alike.
    #[test]
    fn keys_written_alike_own_together() {
        let live = json!({"metadata": {"managedFields": [
            {"manager": "a", "fieldsV1": {"f:spec": {"f:x": {"f:name": {"f:y": {}}}}}},
            {"manager": "b", "fieldsV1": {"f:spec": {"f:x": {"name": {"f:z": {}}}}}},
            {"manager": "c", "fieldsV1": {"f:spec": {"f:x": {"f:name": {"f:y": {}},
                "name": {".": {}, "f:y": {}}, "f:a.b": {".": {}},
                "v:\"\\\"a.b\\\"\"": {"i:0": {}}}}}},
        ]}});
        let queries = [
            "spec.x.name.y",
            "spec.x.name.z",
            "spec.x.name.w",
            "spec.x[\"a.b\"]",
            "spec.x[\"a.b\"][0]",
            "spec.x[\"a.b\"].q",
            "spec.x.name",
        ];
        assert_same_as_full_walk(&live, &queries);
        let o = FieldOwners::from_live(&live);
        assert_eq!(o.of("spec.x.name.y").collect::<Vec<_>>(), ["a", "c"]);
        assert_eq!(o.of("spec.x.name.w").collect::<Vec<_>>(), ["c"]);
        assert_eq!(o.of("spec.x[\"a.b\"][0]").collect::<Vec<_>>(), ["c"]);
        for order in [queries.to_vec(), queries.iter().rev().copied().collect()] {
            let o = FieldOwners::from_live(&live);
            let exact = o.exact();
            for q in order {
                assert_eq!(
                    o.of(q).collect::<Vec<_>>(),
                    of_by_full_walk(&exact, q),
                    "{q}"
                );
            }
        }
    }

    /// A question that starts below the last one's owned node still finds
    /// that node (the trail keeps the deepest owned node above).
    #[test]
    fn owned_above_the_trail() {
        let live = json!({"metadata": {"managedFields": [
            {"manager": "a", "fieldsV1": {"f:spec": {"f:a": {".": {},
                "f:b": {"f:c": {"f:d": {}}}}}}},
        ]}});
        let o = FieldOwners::from_live(&live);
        let of = |p: &str| o.of(p).collect::<Vec<_>>();
        assert_eq!(of("spec.a.b.c.d"), ["a"]);
        assert_eq!(of("spec.a.b.c.x"), ["a"]);
        assert_eq!(of("spec.a.b.y"), ["a"]);
        assert_eq!(of("spec.a.b.c.d.e"), ["a"]);
        assert!(of("spec.z").is_empty());
        assert_same_as_full_walk(&live, &["spec.a.b.c.x", "spec.a.b.c.d.e"]);
    }

    #[test]
    fn nothing_recorded_is_empty() {
        for f in [json!({}), json!({".": {}}), json!(null), json!({"f:a": 1})] {
            let live = json!({"metadata": {"managedFields": [{"manager": "a", "fieldsV1": f}]}});
            assert!(FieldOwners::from_live(&live).is_empty(), "{f}");
        }
        let live = json!({"metadata": {"managedFields": [{"manager": "a",
            "fieldsV1": {"f:a": {}}}]}});
        assert!(!FieldOwners::from_live(&live).is_empty());
    }
}
