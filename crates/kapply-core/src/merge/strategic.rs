//! Three-way strategic merge patch, the way kubectl's client-side apply
//! computes it (apimachinery `strategicpatch.CreateThreeWayMergePatch`):
//! the additions and changes from live to config, plus the deletions from
//! last-applied to config, merged into one patch.
//!
//! Go decodes JSON into `map[string]interface{}` with float64 numbers and
//! compares with `reflect.DeepEqual`; the helpers here mirror that.
//!
//! Two engines: the general path is the reference, a port of apimachinery's
//! walk (the changes and the deletions in two walks, [`diff_maps`]; keyed
//! lists sorted by printed key, [`diff_lists_of_maps`]). The fast walk
//! ([`diff3_maps`]: both patches in one walk; [`diff_keyed_short`] for
//! short keyed lists) must give what the general path gives, patch or
//! error: the property tests below hold it to that on Deployments,
//! Services, ConfigMaps, StatefulSets and a custom resource.

use super::MergeError;
use crate::gocompat::sprint;
use crate::patchmeta::{ListStrategy, Schema};
use crate::vocab::{
    DELETE_FROM_PRIMITIVE_LIST, PATCH, RETAIN_KEYS, SET_ELEMENT_ORDER, directive_list,
    list_directive,
};
use serde_json::{Map, Value};
use std::cmp::Ordering;

#[derive(Clone, Copy, Default)]
struct Opts {
    ignore_deletions: bool,
    ignore_changes: bool,
    retain_keys: bool,
    /// Lists merged by key always take the general path (sorting by
    /// printed key), never [`diff_keyed_short`]: the tests compare both.
    general_lists: bool,
}

/// Compute the patch. `original` is last-applied (empty when absent),
/// `modified` the config with the new annotation, `current` the live object.
pub fn three_way(
    original: &Map<String, Value>,
    modified: &Map<String, Value>,
    current: &Map<String, Value>,
    schema: Option<Schema<'_>>,
) -> Result<Map<String, Value>, MergeError> {
    three_way_with(original, modified, current, schema, false)
}

/// [`three_way`]; `general_lists`: see [`Opts`].
fn three_way_with(
    original: &Map<String, Value>,
    modified: &Map<String, Value>,
    current: &Map<String, Value>,
    schema: Option<Schema<'_>>,
    general_lists: bool,
) -> Result<Map<String, Value>, MergeError> {
    if !general_lists {
        // Both patches in one walk of the config; on an error, the two walks
        // below find the one kubectl reports (the changes' walk comes first).
        if let Ok((delta, deletions)) =
            diff3_maps(&Loc::ROOT, original, current, modified, schema, false)
        {
            return merge_patches(delta, deletions, schema);
        }
    }
    let delta = diff_maps(
        &Loc::ROOT,
        current,
        modified,
        schema,
        Opts {
            ignore_deletions: true,
            general_lists,
            ..Opts::default()
        },
    )?;
    let deletions = diff_maps(
        &Loc::ROOT,
        original,
        modified,
        schema,
        Opts {
            ignore_changes: true,
            general_lists,
            ..Opts::default()
        },
    )?;
    merge_patches(delta, deletions, schema)
}

/// The changes merged into the deletions: the patch.
fn merge_patches(
    delta: Patch,
    deletions: Patch,
    schema: Option<Schema<'_>>,
) -> Result<Map<String, Value>, MergeError> {
    let mut deletions = deletions.unwrap_or_default();
    if let Some(delta) = delta {
        merge_maps(&Loc::ROOT, &mut deletions, delta, schema)?;
    }
    Ok(deletions)
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Object(_) | Value::Array(_))
}

/// Go's `reflect.DeepEqual` over JSON-decoded values (numbers are float64).
pub fn deep_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| deep_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| deep_eq(v, w)))
        }
        _ => a == b,
    }
}

/// The Go dynamic type of a decoded JSON value.
pub(crate) fn type_tag(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
    }
}

/// Where a diff or merge is in the object, as a chain of keys: spelled
/// out as a field path only for an error, instead of a string built at
/// every map and list.
#[derive(Clone, Copy)]
struct Loc<'a> {
    parent: Option<&'a Loc<'a>>,
    key: &'a str,
}

impl Loc<'_> {
    const ROOT: Loc<'static> = Loc {
        parent: None,
        key: "",
    };
}

impl From<&Loc<'_>> for String {
    fn from(at: &Loc<'_>) -> String {
        match at.parent {
            None => String::new(),
            Some(p) => crate::fieldpath::key(&String::from(p), at.key),
        }
    }
}

fn child<'a>(path: &'a Loc<'a>, key: &'a str) -> Loc<'a> {
    Loc {
        parent: Some(path),
        key,
    }
}

fn field_schema<'a>(schema: Option<Schema<'a>>, key: &str) -> Option<Schema<'a>> {
    schema.and_then(|s| s.field(key))
}

/// A patch map, `None` while empty: most maps of a config differ in
/// nothing, and an empty map built and dropped at each costs more than
/// the comparison.
type Patch = Option<Map<String, Value>>;

fn put(patch: &mut Patch, key: &str, value: Value) {
    patch
        .get_or_insert_with(Map::new)
        .insert(key.to_owned(), value);
}

/// One side of a diff against the config (`current` for the changes,
/// `original` for the deletions), walked in key order beside it: both
/// maps are sorted, so no key of one is looked up in the other.
struct Side<'v> {
    /// The next key not yet passed, and the ones after it.
    head: Option<(&'v String, &'v Value)>,
    rest: serde_json::map::Iter<'v>,
    patch: Patch,
    /// A key with a non-null value only on this side (for `$retainKeys`).
    additional: bool,
    opts: Opts,
}

impl<'v> Side<'v> {
    fn new(map: &'v Map<String, Value>, opts: Opts) -> Side<'v> {
        let mut rest = map.iter();
        Side {
            head: rest.next(),
            rest,
            patch: None,
            additional: false,
            opts,
        }
    }

    /// This side's value under the config's `key`; the keys before it are
    /// only on this side.
    // Inlined: called twice per key of the config, its prologue cost as
    // much as its work.
    #[inline(always)]
    fn seek(&mut self, key: &str) -> Option<&'v Value> {
        while let Some((k, v)) = self.head {
            match key_cmp(k, key) {
                Ordering::Less => self.only_here(k, v),
                Ordering::Equal => {
                    self.head = self.rest.next();
                    return Some(v);
                }
                Ordering::Greater => return None,
            }
            self.head = self.rest.next();
        }
        None
    }

    #[inline]
    fn only_here(&mut self, key: &str, value: &Value) {
        if !self.opts.ignore_deletions {
            put(&mut self.patch, key, Value::Null);
        }
        self.additional |= !value.is_null();
    }

    /// A config key this side lacks.
    fn missing(&mut self, key: &str, mv: &Value) {
        if !self.opts.ignore_changes {
            put(&mut self.patch, key, mv.clone());
        }
    }

    /// The patch, once the config's keys are walked.
    #[inline(always)]
    fn finish(&mut self, modified: &Map<String, Value>) -> Patch {
        while let Some((k, v)) = self.head {
            self.only_here(k, v);
            self.head = self.rest.next();
        }
        if self.opts.retain_keys && (self.patch.is_some() || self.additional) {
            let mut retain: Vec<Value> = modified
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, _)| Value::String(k.clone()))
                .collect();
            if !retain.is_empty() {
                sort_scalars(&mut retain);
                put(&mut self.patch, RETAIN_KEYS, Value::Array(retain));
            }
        }
        self.patch.take()
    }
}

fn diff_maps(
    path: &Loc<'_>,
    original: &Map<String, Value>,
    modified: &Map<String, Value>,
    schema: Option<Schema<'_>>,
    opts: Opts,
) -> Result<Patch, MergeError> {
    let mut side = Side::new(original, opts);
    for (key, mv) in modified {
        match side.seek(key) {
            Some(ov) => diff_entry(path, key, ov, mv, schema, opts, &mut side.patch)?,
            None => side.missing(key, mv),
        }
    }
    Ok(side.finish(modified))
}

/// One key both maps hold, into `patch`.
fn diff_entry(
    path: &Loc<'_>,
    key: &str,
    ov: &Value,
    mv: &Value,
    schema: Option<Schema<'_>>,
    opts: Opts,
    patch: &mut Patch,
) -> Result<(), MergeError> {
    if key == PATCH {
        if let (Value::String(o), Value::String(m)) = (ov, mv) {
            if o != m {
                put(patch, key, mv.clone());
            }
            return Ok(());
        }
        return Err(MergeError::Invalid {
            path: (&child(path, key)).into(),
            message: "invalid value for $patch".into(),
        });
    }
    if type_tag(ov) != type_tag(mv) {
        if !opts.ignore_changes {
            put(patch, key, mv.clone());
        }
        return Ok(());
    }
    // The schema is looked up for maps and lists only (a scalar's is never
    // read).
    match (ov, mv) {
        (Value::Object(o), Value::Object(m)) => {
            let sub = field_schema(schema, key);
            if sub.is_some_and(|s| s.replace()) {
                if !opts.ignore_changes && !deep_eq(ov, mv) {
                    put(patch, key, mv.clone());
                }
                return Ok(());
            }
            let sub_opts = Opts {
                retain_keys: sub.is_some_and(|s| s.retain_keys()),
                ..opts
            };
            if let Some(p) = diff_maps(&child(path, key), o, m, sub, sub_opts)? {
                put(patch, key, Value::Object(p));
            }
        }
        (Value::Array(o), Value::Array(m)) => {
            let sub = field_schema(schema, key);
            slice_diff(path, key, o, m, patch, sub, opts)?;
        }
        _ => {
            if !opts.ignore_changes && !deep_eq(ov, mv) {
                put(patch, key, mv.clone());
            }
        }
    }
    Ok(())
}

/// [`diff_maps`] of the config against `current` (the changes, deletions
/// ignored) and against `original` (the deletions, changes ignored) in one
/// walk: the config's maps, and its short lists merged by key, are walked
/// once for both, and their schema looked up once.
fn diff3_maps(
    path: &Loc<'_>,
    original: &Map<String, Value>,
    current: &Map<String, Value>,
    modified: &Map<String, Value>,
    schema: Option<Schema<'_>>,
    retain_keys: bool,
) -> Result<(Patch, Patch), MergeError> {
    let mut delta = Side::new(
        current,
        Opts {
            ignore_deletions: true,
            retain_keys,
            ..Opts::default()
        },
    );
    let mut dels = Side::new(
        original,
        Opts {
            ignore_changes: true,
            retain_keys,
            ..Opts::default()
        },
    );
    for (key, mv) in modified {
        match (delta.seek(key), dels.seek(key)) {
            // Most keys hold scalars: the changes compare them, the
            // deletions (which ignore changes) have nothing to do.
            (Some(cv), Some(_)) if is_scalar(mv) && key != PATCH => {
                if !(type_tag(cv) == type_tag(mv) && deep_eq(cv, mv)) {
                    put(&mut delta.patch, key, mv.clone());
                }
            }
            (Some(cv), Some(ov)) => {
                diff3_entry(path, key, ov, cv, mv, schema, &mut delta, &mut dels)?
            }
            (cv, ov) => {
                match cv {
                    Some(cv) => {
                        diff_entry(path, key, cv, mv, schema, delta.opts, &mut delta.patch)?
                    }
                    None => delta.missing(key, mv),
                }
                match ov {
                    Some(ov) => diff_entry(path, key, ov, mv, schema, dels.opts, &mut dels.patch)?,
                    None => dels.missing(key, mv),
                }
            }
        }
    }
    Ok((delta.finish(modified), dels.finish(modified)))
}

/// One key all three maps hold: maps (not replaced whole) and short lists
/// merged by key go on in one walk, the rest as [`diff_entry`] on each side.
#[allow(clippy::too_many_arguments)]
fn diff3_entry(
    path: &Loc<'_>,
    key: &str,
    ov: &Value,
    cv: &Value,
    mv: &Value,
    schema: Option<Schema<'_>>,
    delta: &mut Side<'_>,
    dels: &mut Side<'_>,
) -> Result<(), MergeError> {
    if key != PATCH {
        match (ov, cv, mv) {
            (Value::Object(o), Value::Object(c), Value::Object(m)) => {
                let sub = field_schema(schema, key);
                if !sub.is_some_and(|s| s.replace()) {
                    let retain = sub.is_some_and(|s| s.retain_keys());
                    let (d, x) = diff3_maps(&child(path, key), o, c, m, sub, retain)?;
                    if let Some(d) = d {
                        put(&mut delta.patch, key, Value::Object(d));
                    }
                    if let Some(x) = x {
                        put(&mut dels.patch, key, Value::Object(x));
                    }
                    return Ok(());
                }
            }
            (Value::Array(o), Value::Array(c), Value::Array(m))
                if !o.is_empty() && !c.is_empty() =>
            {
                let sub = field_schema(schema, key);
                if let Some(sub) = sub
                    && let ListStrategy::MergeByKey(merge_key) = sub.list_strategy()
                    && !merge_key.is_empty()
                {
                    let lpath = child(path, key);
                    let retain = sub.retain_keys();
                    if let Some((d, x)) =
                        diff3_keyed_short(&lpath, o, c, m, sub.items(), merge_key, retain)?
                    {
                        put_lists(&mut delta.patch, key, d);
                        put_lists(&mut dels.patch, key, x);
                        return Ok(());
                    }
                }
            }
            _ => {}
        }
    }
    diff_entry(path, key, cv, mv, schema, delta.opts, &mut delta.patch)?;
    diff_entry(path, key, ov, mv, schema, dels.opts, &mut dels.patch)
}

/// Map keys in order, as `str::cmp`, deciding most pairs by their first
/// byte: the paired walks compare keys at every step, and keys of one
/// object mostly differ there (a full compare is a call to memcmp).
fn key_cmp(a: &str, b: &str) -> Ordering {
    match (a.as_bytes().first(), b.as_bytes().first()) {
        (Some(x), Some(y)) if x != y => x.cmp(y),
        _ => a.cmp(b),
    }
}

fn sort_scalars(v: &mut [Value]) {
    v.sort_by_cached_key(sprint);
}

fn slice_diff(
    path: &Loc<'_>,
    key: &str,
    original: &[Value],
    modified: &[Value],
    patch: &mut Patch,
    schema: Option<Schema<'_>>,
    opts: Opts,
) -> Result<(), MergeError> {
    let merge_key = match schema.map(|s| s.list_strategy()) {
        Some(ListStrategy::MergeByKey(k)) => k,
        Some(ListStrategy::MergePrimitive) => "",
        Some(ListStrategy::Atomic) | None => {
            if !opts.ignore_changes && !deep_eq_slices(original, modified) {
                put(patch, key, Value::Array(modified.to_vec()));
            }
            return Ok(());
        }
    };
    let sub_opts = Opts {
        retain_keys: schema.is_some_and(|s| s.retain_keys()),
        ..opts
    };
    let items = schema.and_then(|s| s.items());
    let lpath = child(path, key);
    let lists = diff_lists(&lpath, original, modified, items, merge_key, sub_opts)?;
    put_lists(patch, key, lists);
    Ok(())
}

/// A list's diff into the patch: its additions and changes, deletions from
/// a list of scalars, the order directive.
fn put_lists(patch: &mut Patch, key: &str, (add, del, order): Lists) {
    if !add.is_empty() {
        put(patch, key, Value::Array(add));
    }
    if !del.is_empty() {
        put(
            patch,
            &list_directive(DELETE_FROM_PRIMITIVE_LIST, key),
            Value::Array(del),
        );
    }
    if !order.is_empty() {
        put(
            patch,
            &list_directive(SET_ELEMENT_ORDER, key),
            Value::Array(order),
        );
    }
}

fn deep_eq_slices(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| deep_eq(x, y))
}

/// The element kind of one or more lists; lists of lists and mixed lists
/// are errors, as in Go.
fn element_kind(path: &Loc<'_>, lists: &[&[Value]]) -> Result<Option<u8>, MergeError> {
    let mut kind = None;
    for list in lists {
        for v in *list {
            let t = type_tag(v);
            if t == 4 {
                return Err(MergeError::Invalid {
                    path: path.into(),
                    message: "lists of lists are not supported".into(),
                });
            }
            match kind {
                None => kind = Some(t),
                Some(k) if k != t => {
                    return Err(MergeError::Invalid {
                        path: path.into(),
                        message: "list elements have different types".into(),
                    });
                }
                _ => {}
            }
        }
    }
    Ok(kind)
}

type Lists = (Vec<Value>, Vec<Value>, Vec<Value>);

fn diff_lists(
    path: &Loc<'_>,
    original: &[Value],
    modified: &[Value],
    items: Option<Schema<'_>>,
    merge_key: &str,
    opts: Opts,
) -> Result<Lists, MergeError> {
    if original.is_empty() {
        if modified.is_empty() || opts.ignore_changes {
            return Ok((vec![], vec![], vec![]));
        }
        return Ok((modified.to_vec(), vec![], vec![]));
    }
    if !merge_key.is_empty()
        && !opts.general_lists
        && let Some(out) = diff_keyed_short(path, original, modified, items, merge_key, opts)
    {
        return Ok(out);
    }
    let kind = element_kind(path, &[original, modified])?;
    if kind == Some(5) {
        let (mut patch_list, deletes) =
            diff_lists_of_maps(path, original, modified, items, merge_key, opts)?;
        normalize_order(path, &mut patch_list, modified, merge_key, true)?;
        let order_same = original.len() == modified.len()
            && original.iter().zip(modified).all(|(o, m)| {
                key_value(o, merge_key)
                    .zip(key_value(m, merge_key))
                    .is_some_and(|(a, b)| go_eq(a, b))
            });
        patch_list.extend(deletes);
        let mut order = vec![];
        if (!opts.ignore_changes && (!patch_list.is_empty() || !order_same))
            || (!opts.ignore_deletions && !patch_list.is_empty())
        {
            for m in modified {
                let mut e = Map::new();
                e.insert(
                    merge_key.into(),
                    key_value(m, merge_key).cloned().unwrap_or(Value::Null),
                );
                order.push(Value::Object(e));
            }
        }
        Ok((patch_list, vec![], order))
    } else {
        let (mut add, del) = diff_lists_of_scalars(original, modified, opts);
        normalize_order(path, &mut add, modified, merge_key, false)?;
        let mut order = vec![];
        if (!opts.ignore_deletions && !del.is_empty())
            || (!opts.ignore_changes && !deep_eq_slices(original, modified))
        {
            order = modified.to_vec();
        }
        Ok((add, del, order))
    }
}

fn key_value<'v>(v: &'v Value, merge_key: &str) -> Option<&'v Value> {
    v.as_object().and_then(|m| m.get(merge_key))
}

/// Go's `==` on two interface values holding scalars, as kubectl's
/// `CreateThreeWayMergePatch` compares merge keys (`diffListsOfMaps`,
/// `findMapInSliceBasedOnKeyValue`, the order checks): kubectl encodes
/// config, live and last-applied to JSON and decodes them with
/// encoding/json, so every number is a float64 and `1 == 1.0` (80.0 in a
/// config is the element keyed 80: tests/fixtures/recorded/float-merge-key,
/// recorded from kubectl; merge::strategic's
/// a_float_merge_key_is_the_same_key). The server's side of the same patch compares
/// otherwise: see `merge::apply`'s `go_eq`.
fn go_eq(a: &Value, b: &Value) -> bool {
    type_tag(a) == type_tag(b) && deep_eq(a, b)
}

fn no_merge_key(path: &Loc<'_>, merge_key: &str) -> MergeError {
    MergeError::Invalid {
        path: path.into(),
        message: format!("list element has no merge key {merge_key:?}"),
    }
}

/// A list element with its merge key as Go prints it and its position.
type Keyed<'v> = (std::borrow::Cow<'v, str>, usize, &'v Value);

fn sorted_by_key<'v>(
    path: &Loc<'_>,
    list: &'v [Value],
    merge_key: &str,
) -> Result<Vec<Keyed<'v>>, MergeError> {
    let mut out = Vec::with_capacity(list.len());
    for (i, v) in list.iter().enumerate() {
        let k = key_value(v, merge_key).ok_or_else(|| no_merge_key(path, merge_key))?;
        out.push((crate::gocompat::sprint_cow(k), i, v));
    }
    // Go sorts with Less = "i <= j" (sort.StringsAreSorted on the pair),
    // and sort.Sort's insertion sort (lists up to 12 elements) then
    // reverses every run of equal keys: elements sharing a merge key are
    // compared last-first, as kubectl does (recorded from kubectl 1.32).
    out.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    Ok(out)
}

fn diff_lists_of_maps(
    path: &Loc<'_>,
    original: &[Value],
    modified: &[Value],
    items: Option<Schema<'_>>,
    merge_key: &str,
    opts: Opts,
) -> Result<(Vec<Value>, Vec<Value>), MergeError> {
    let os = sorted_by_key(path, original, merge_key)?;
    let ms = sorted_by_key(path, modified, merge_key)?;
    let (mut i, mut j) = (0, 0);
    let mut patch = vec![];
    let mut deletes = vec![];
    while i < os.len() || j < ms.len() {
        let cmp = match (os.get(i), ms.get(j)) {
            (Some(o), Some(m)) => o.0.cmp(&m.0),
            (None, Some(_)) => Ordering::Greater,
            _ => Ordering::Less,
        };
        match cmp {
            Ordering::Equal => {
                let (o, m) = (os[i].2, ms[j].2);
                if let (Value::Object(om), Value::Object(mm)) = (o, m)
                    && let Some(mut p) = diff_maps(path, om, mm, items, opts)?
                {
                    let kv = mm.get(merge_key).cloned().unwrap_or(Value::Null);
                    p.insert(merge_key.into(), kv);
                    patch.push(Value::Object(p));
                }
                i += 1;
                j += 1;
            }
            Ordering::Greater => {
                if !opts.ignore_changes {
                    patch.push(ms[j].2.clone());
                }
                j += 1;
            }
            Ordering::Less => {
                if !opts.ignore_deletions {
                    let mut d = Map::new();
                    d.insert(PATCH.into(), Value::String("delete".into()));
                    let kv = key_value(os[i].2, merge_key)
                        .cloned()
                        .unwrap_or(Value::Null);
                    d.insert(merge_key.into(), kv);
                    deletes.push(Value::Object(d));
                }
                i += 1;
            }
        }
    }
    Ok((patch, deletes))
}

/// Lists merged by key up to this long may take [`diff_keyed_short`].
const SHORT_LIST: usize = 8;

/// The merge keys of a short list of maps, in list order, each with its map.
struct ShortKeys<'v> {
    keys: [Option<(&'v Map<String, Value>, &'v Value)>; SHORT_LIST],
    len: usize,
}

impl<'v> ShortKeys<'v> {
    /// `None` unless every element is a map with `merge_key`, every key is
    /// of the kind `kind` settles on (all strings or all numbers, across
    /// both lists) and no two keys of the list are equal.
    // Inlined: built for each list of each side, the copy of its result
    // cost about as much as the building.
    #[inline(always)]
    fn of(list: &'v [Value], merge_key: &str, kind: &mut Option<u8>) -> Option<ShortKeys<'v>> {
        if list.len() > SHORT_LIST {
            return None;
        }
        let mut out = ShortKeys {
            keys: [None; SHORT_LIST],
            len: 0,
        };
        for v in list {
            let m = v.as_object()?;
            let k = m.get(merge_key)?;
            let t = type_tag(k);
            if !matches!(t, 2 | 3) || kind.is_some_and(|kind| kind != t) {
                return None;
            }
            *kind = Some(t);
            if out.iter().any(|(_, seen)| deep_eq(seen, k)) {
                return None;
            }
            out.keys[out.len] = Some((m, k));
            out.len += 1;
        }
        Some(out)
    }

    fn iter(&self) -> impl Iterator<Item = (&'v Map<String, Value>, &'v Value)> + '_ {
        self.keys[..self.len].iter().flatten().copied()
    }
}

/// [`diff_lists`] of two short lists of maps whose merge keys are all
/// strings or all numbers, none twice in a list: what the general path
/// gives, without printing every key and sorting both lists by it. Keys of
/// one kind are equal when Go prints them the same (`%v` of a float64 is
/// its shortest exact form), so elements pair by comparing keys. `None`
/// leaves the list to the general path: other lists, and any error (which
/// the general path finds in its own order).
fn diff_keyed_short(
    path: &Loc<'_>,
    original: &[Value],
    modified: &[Value],
    items: Option<Schema<'_>>,
    merge_key: &str,
    opts: Opts,
) -> Option<Lists> {
    let mut kind = None;
    let os = ShortKeys::of(original, merge_key, &mut kind)?;
    let ms = ShortKeys::of(modified, merge_key, &mut kind)?;
    let mut diff = KeyedDiff::new(&os, opts);
    for (j, (mm, key)) in ms.iter().enumerate() {
        match diff.pair(j, key) {
            Some(om) => {
                let p = diff_maps(path, om, mm, items, opts).ok()?;
                diff.changed(p, key, merge_key);
            }
            None => diff.added(mm),
        }
    }
    Some(diff.finish(&ms, merge_key))
}

/// [`diff_keyed_short`] against `current` (the changes) and `original` (the
/// deletions) at once, an element all three lists hold walked once by
/// [`diff3_maps`]. `None` when a list is not one the short path takes.
fn diff3_keyed_short(
    path: &Loc<'_>,
    original: &[Value],
    current: &[Value],
    modified: &[Value],
    items: Option<Schema<'_>>,
    merge_key: &str,
    retain_keys: bool,
) -> Result<Option<(Lists, Lists)>, MergeError> {
    let mut kind = None;
    let (Some(os), Some(cs), Some(ms)) = (
        ShortKeys::of(original, merge_key, &mut kind),
        ShortKeys::of(current, merge_key, &mut kind),
        ShortKeys::of(modified, merge_key, &mut kind),
    ) else {
        return Ok(None);
    };
    let delta_opts = Opts {
        ignore_deletions: true,
        retain_keys,
        ..Opts::default()
    };
    let dels_opts = Opts {
        ignore_changes: true,
        retain_keys,
        ..Opts::default()
    };
    let mut delta = KeyedDiff::new(&cs, delta_opts);
    let mut dels = KeyedDiff::new(&os, dels_opts);
    for (j, (mm, key)) in ms.iter().enumerate() {
        match (delta.pair(j, key), dels.pair(j, key)) {
            (Some(cm), Some(om)) => {
                let (d, x) = diff3_maps(path, om, cm, mm, items, retain_keys)?;
                delta.changed(d, key, merge_key);
                dels.changed(x, key, merge_key);
            }
            (cm, om) => {
                match cm {
                    Some(cm) => {
                        let d = diff_maps(path, cm, mm, items, delta_opts)?;
                        delta.changed(d, key, merge_key);
                    }
                    None => delta.added(mm),
                }
                match om {
                    Some(om) => {
                        let x = diff_maps(path, om, mm, items, dels_opts)?;
                        dels.changed(x, key, merge_key);
                    }
                    None => dels.added(mm),
                }
            }
        }
    }
    Ok(Some((
        delta.finish(&ms, merge_key),
        dels.finish(&ms, merge_key),
    )))
}

/// The short path's diff of one list against the config's, built as the
/// config's elements are paired with this list's.
struct KeyedDiff<'a, 'v> {
    others: &'a ShortKeys<'v>,
    matched: [bool; SHORT_LIST],
    list: Vec<Value>,
    opts: Opts,
}

impl<'a, 'v> KeyedDiff<'a, 'v> {
    fn new(others: &'a ShortKeys<'v>, opts: Opts) -> KeyedDiff<'a, 'v> {
        KeyedDiff {
            others,
            matched: [false; SHORT_LIST],
            list: vec![],
            opts,
        }
    }

    /// This list's element with the key of the config's element `j`: most
    /// often the one at the same place.
    fn pair(&mut self, j: usize, key: &Value) -> Option<&'v Map<String, Value>> {
        let i = match self.others.keys.get(j) {
            Some(Some((_, k))) if deep_eq(k, key) => j,
            _ => self.others.iter().position(|(_, k)| deep_eq(k, key))?,
        };
        self.matched[i] = true;
        self.others.keys[i].map(|(m, _)| m)
    }

    /// A paired element's patch.
    fn changed(&mut self, p: Patch, key: &Value, merge_key: &str) {
        if let Some(mut p) = p {
            p.insert(merge_key.into(), key.clone());
            self.list.push(Value::Object(p));
        }
    }

    /// A config element this list lacks.
    fn added(&mut self, mm: &Map<String, Value>) {
        if !self.opts.ignore_changes {
            self.list.push(Value::Object(mm.clone()));
        }
    }

    fn finish(self, ms: &ShortKeys<'_>, merge_key: &str) -> Lists {
        let KeyedDiff {
            others: os,
            matched,
            list: mut patch_list,
            opts,
        } = self;
        // As normalize_order: the rest already in the config's order,
        // delete directives last, in the order of their printed keys (the
        // general path's order, which normalize_order keeps for them).
        if patch_list.iter().any(is_delete_directive) {
            let (keep, mut del): (Vec<Value>, Vec<Value>) = patch_list
                .into_iter()
                .partition(|v| !is_delete_directive(v));
            del.sort_by_cached_key(|v| key_value(v, merge_key).map(crate::gocompat::sprint));
            patch_list = keep;
            patch_list.extend(del);
        }
        if !opts.ignore_deletions {
            // Deleted in the order of their printed keys, as the general
            // path walks them.
            let mut gone: Vec<&Value> = os
                .iter()
                .zip(matched)
                .filter(|(_, m)| !m)
                .map(|((_, k), _)| k)
                .collect();
            if gone.len() > 1 {
                gone.sort_by_cached_key(|k| crate::gocompat::sprint_cow(k));
            }
            for k in gone {
                let mut d = Map::new();
                d.insert(PATCH.into(), Value::String("delete".into()));
                d.insert(merge_key.into(), k.clone());
                patch_list.push(Value::Object(d));
            }
        }
        let order_same = || {
            os.len == ms.len
                && os
                    .iter()
                    .zip(ms.iter())
                    .all(|((_, a), (_, b))| deep_eq(a, b))
        };
        let mut order = vec![];
        if (!opts.ignore_changes && (!patch_list.is_empty() || !order_same()))
            || (!opts.ignore_deletions && !patch_list.is_empty())
        {
            for (_, k) in ms.iter() {
                let mut e = Map::new();
                e.insert(merge_key.into(), k.clone());
                order.push(Value::Object(e));
            }
        }
        (patch_list, vec![], order)
    }
}

fn diff_lists_of_scalars(
    original: &[Value],
    modified: &[Value],
    opts: Opts,
) -> (Vec<Value>, Vec<Value>) {
    let mut os = original.to_vec();
    let mut ms = modified.to_vec();
    sort_scalars(&mut os);
    sort_scalars(&mut ms);
    let (mut i, mut j) = (0, 0);
    let mut add = vec![];
    let mut del: Vec<Value> = vec![];
    while i < os.len() || j < ms.len() {
        let cmp = match (os.get(i), ms.get(j)) {
            (Some(o), Some(m)) => sprint(o).cmp(&sprint(m)),
            (None, Some(_)) => Ordering::Greater,
            _ => Ordering::Less,
        };
        match cmp {
            Ordering::Equal => {
                i += 1;
                j += 1;
            }
            Ordering::Less => {
                if !opts.ignore_deletions {
                    del.push(os[i].clone());
                }
                i += 1;
            }
            Ordering::Greater => {
                if !opts.ignore_changes {
                    add.push(ms[j].clone());
                }
                j += 1;
            }
        }
    }
    (add, dedup_scalars(del))
}

/// Go's `deduplicateScalars`: a duplicate is replaced by the last element.
fn dedup_scalars(mut s: Vec<Value>) -> Vec<Value> {
    let mut i = 0;
    while i < s.len() {
        let mut j = i + 1;
        while j < s.len() {
            if go_eq(&s[i], &s[j]) {
                s.swap_remove(j);
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    s
}

fn index_in(order: &[Value], v: &Value, merge_key: &str, maps: bool) -> Option<usize> {
    fn get<'v>(x: &'v Value, merge_key: &str, maps: bool) -> Option<&'v Value> {
        if maps {
            key_value(x, merge_key)
        } else {
            Some(x)
        }
    }
    let want = get(v, merge_key, maps);
    order
        .iter()
        .position(|o| match (want, get(o, merge_key, maps)) {
            (Some(a), Some(b)) => go_eq(a, b),
            (None, None) => true,
            _ => false,
        })
}

fn is_delete_directive(v: &Value) -> bool {
    v.get(PATCH).and_then(Value::as_str) == Some("delete")
}

/// `normalizeSliceOrder`: stable sort by position in `order`, delete
/// directives last.
fn normalize_order(
    path: &Loc<'_>,
    list: &mut Vec<Value>,
    order: &[Value],
    merge_key: &str,
    maps: bool,
) -> Result<(), MergeError> {
    let mut deletes = vec![];
    if maps {
        for v in list.iter().chain(order) {
            if key_value(v, merge_key).is_none() {
                return Err(no_merge_key(path, merge_key));
            }
        }
        let (keep, del): (Vec<Value>, Vec<Value>) = std::mem::take(list)
            .into_iter()
            .partition(|v| !is_delete_directive(v));
        *list = keep;
        deletes = del;
    }
    let mut keyed: Vec<(usize, Value)> = std::mem::take(list)
        .into_iter()
        .map(|v| {
            (
                index_in(order, &v, merge_key, maps).unwrap_or(usize::MAX),
                v,
            )
        })
        .collect();
    keyed.sort_by_key(|(i, _)| *i);
    *list = keyed.into_iter().map(|(_, v)| v).collect();
    list.extend(deletes);
    Ok(())
}

/// `mergeMap` with `MergeOptions{}`, restricted to what merging the delta
/// patch into the deletions patch needs.
fn merge_maps(
    path: &Loc<'_>,
    original: &mut Map<String, Value>,
    patch: Map<String, Value>,
    schema: Option<Schema<'_>>,
) -> Result<(), MergeError> {
    let mut patch = patch;
    let orders: Vec<(String, Value)> = patch
        .iter()
        .filter_map(|(k, v)| Some((directive_list(k, SET_ELEMENT_ORDER)?.to_string(), v.clone())))
        .collect();
    for (list_key, order) in &orders {
        let order_list = order.as_array().cloned().unwrap_or_default();
        merge_ordered_list(path, original, &mut patch, list_key, &order_list, schema)?;
    }
    let mut rest = Map::new();
    for (k, v) in patch {
        if k == RETAIN_KEYS || directive_list(&k, SET_ELEMENT_ORDER).is_some() {
            if let Some(o) = original.get(&k) {
                if !deep_eq(o, &v) {
                    return Err(MergeError::Invalid {
                        path: (&child(path, &k)).into(),
                        message: "directive differs between the deletions and the changes".into(),
                    });
                }
            } else {
                original.insert(k, v);
            }
        } else {
            rest.insert(k, v);
        }
    }
    for (k, pv) in rest {
        if directive_list(&k, DELETE_FROM_PRIMITIVE_LIST).is_some() || pv.is_null() {
            original.insert(k, pv);
            continue;
        }
        let sub = field_schema(schema, &k);
        let Some(ov) = original.get_mut(&k) else {
            original.insert(k, pv);
            continue;
        };
        if type_tag(ov) != type_tag(&pv) {
            *ov = pv;
            continue;
        }
        match (ov, pv) {
            (Value::Object(o), Value::Object(p)) => {
                if sub.is_some_and(|s| s.replace()) {
                    *o = p;
                } else {
                    merge_maps(&child(path, &k), o, p, sub)?;
                }
            }
            (Value::Array(o), Value::Array(p)) => {
                let strategy = sub.map(|s| s.list_strategy());
                match strategy {
                    Some(ListStrategy::MergeByKey(mk)) => {
                        let items = sub.and_then(|s| s.items());
                        let merged = merge_slice(&child(path, &k), o, p, mk, items)?;
                        *o = merged;
                    }
                    Some(ListStrategy::MergePrimitive) => {
                        let merged = merge_slice(&child(path, &k), o, p, "", None)?;
                        *o = merged;
                    }
                    _ => *o = p,
                }
            }
            (ov, pv) => *ov = pv,
        }
    }
    Ok(())
}

fn merge_slice(
    path: &Loc<'_>,
    original: &[Value],
    patch: Vec<Value>,
    merge_key: &str,
    items: Option<Schema<'_>>,
) -> Result<Vec<Value>, MergeError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(vec![]);
    }
    let kind = element_kind(path, &[original, &patch])?;
    let maps = kind == Some(5);
    let mut merged: Vec<Value> = original.to_vec();
    if !maps {
        merged.extend(patch.iter().cloned());
        merged = dedup_scalars(merged);
    } else {
        if merge_key.is_empty() {
            return Err(MergeError::Invalid {
                path: path.into(),
                message: "cannot merge lists without merge key".into(),
            });
        }
        for pe in &patch {
            let kv = key_value(pe, merge_key).ok_or_else(|| no_merge_key(path, merge_key))?;
            let found = merged
                .iter()
                .position(|m| key_value(m, merge_key).is_some_and(|k| go_eq(k, kv)));
            match (found, pe) {
                (Some(i), Value::Object(p)) => {
                    if let Value::Object(o) = &mut merged[i] {
                        merge_maps(path, o, p.clone(), items)?;
                    }
                }
                _ => merged.push(pe.clone()),
            }
        }
    }
    let in_patch = |v: &Value| -> bool {
        if maps {
            let kv = key_value(v, merge_key);
            patch.iter().any(|p| match (kv, key_value(p, merge_key)) {
                (Some(a), Some(b)) => go_eq(a, b),
                _ => false,
            })
        } else {
            patch.iter().any(|p| go_eq(p, v))
        }
    };
    let (patch_items, server_only): (Vec<Value>, Vec<Value>) =
        merged.into_iter().partition(|v| in_patch(v));
    normalize_element_order(
        path,
        patch_items,
        server_only,
        &patch,
        original,
        merge_key,
        maps,
    )
}

/// `normalizeElementOrder`: patch items in `patch_order`, server-only items
/// in `server_order`, then `mergeSortedSlice` interleaves them, ordered by
/// `server_order` where both are found in it.
fn normalize_element_order(
    path: &Loc<'_>,
    mut patch_items: Vec<Value>,
    mut server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    maps: bool,
) -> Result<Vec<Value>, MergeError> {
    normalize_order(path, &mut patch_items, patch_order, merge_key, maps)?;
    normalize_order(path, &mut server_only, server_order, merge_key, maps)?;
    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = patch_items.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (
                    index_in(server_order, l, merge_key, maps),
                    index_in(server_order, r, merge_key, maps),
                ),
                (Some(li), Some(ri)) if li < ri
            ),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    Ok(out)
}

/// `mergePatchIntoOriginal`: a list with a `$setElementOrder` directive in
/// the changes is merged with its counterpart in the deletions and put in
/// the directive's order, the deletions' other items interleaved.
fn merge_ordered_list(
    path: &Loc<'_>,
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    list_key: &str,
    order: &[Value],
    schema: Option<Schema<'_>>,
) -> Result<(), MergeError> {
    let sub = field_schema(schema, list_key);
    let merge_key = match sub.map(|s| s.list_strategy()) {
        Some(ListStrategy::MergeByKey(k)) => Some(k.to_string()),
        Some(ListStrategy::MergePrimitive) => Some(String::new()),
        _ => None,
    };
    let ol: Vec<Value> = original
        .get(list_key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let found_original = original.get(list_key).is_some_and(Value::is_array);
    let pl = patch.remove(list_key);
    let lpath = child(path, list_key);
    let merged: Vec<Value> = match (found_original, pl) {
        (false, None) => return Ok(()),
        (true, None) => ol.clone(),
        (false, Some(Value::Array(p))) => p,
        (true, Some(Value::Array(p))) => match &merge_key {
            Some(mk) => {
                let items = sub.and_then(|s| s.items());
                merge_slice(&lpath, &ol, p, mk, items)?
            }
            None => p,
        },
        (_, Some(other)) => {
            original.insert(list_key.into(), other);
            return Ok(());
        }
    };
    let mk = merge_key.unwrap_or_default();
    let maps = element_kind(&lpath, &[&ol, &merged])? == Some(5);
    let in_order = |v: &Value| -> bool {
        if maps && !mk.is_empty() {
            let kv = key_value(v, &mk);
            order.iter().any(|o| match (kv, key_value(o, &mk)) {
                (Some(a), Some(b)) => go_eq(a, b),
                _ => false,
            })
        } else {
            order.iter().any(|o| go_eq(o, v))
        }
    };
    let (patch_items, server_only): (Vec<Value>, Vec<Value>) =
        merged.into_iter().partition(|v| in_order(v));
    let both = normalize_element_order(&lpath, patch_items, server_only, order, &ol, &mk, maps)?;
    original.insert(list_key.into(), Value::Array(both));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The paired walks (diff_maps here, merge::fields' three-way walk, the
    /// server's same_but) step through maps in key order: serde_json must
    /// keep its maps sorted (its `preserve_order` feature off).
    #[test]
    fn json_maps_iterate_in_key_order() {
        let v = json!({"b": 1, "c": 2, "a": 3});
        let keys: Vec<&str> = v
            .as_object()
            .into_iter()
            .flat_map(|m| m.keys())
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["a", "b", "c"]);
    }

    #[test]
    fn go_sprint_of_merge_keys() {
        // Go sorts merge keys by fmt.Sprintf("%v"): "443" < "80" < "8080".
        let mut v = vec![json!(8080), json!(80), json!(443), json!(9)];
        sort_scalars(&mut v);
        assert_eq!(v, vec![json!(443), json!(80), json!(8080), json!(9)]);
    }

    use proptest::prelude::*;

    /// A merge key as configs hold them: strings (`mode` 0), numbers (1),
    /// or any kind, some equal when printed ("80" and 80) or no key kind at
    /// all (2).
    fn key(mode: u8) -> BoxedStrategy<Value> {
        let strings =
            prop::sample::select(vec!["a", "b", "c", "d", "e", "80"]).prop_map(|s| json!(s));
        let numbers = prop::sample::select(vec![80, 81, 443, 8080]).prop_map(|n| json!(n));
        match mode {
            0 => strings.boxed(),
            1 => prop_oneof![8 => numbers, 1 => Just(json!(80.0))].boxed(),
            _ => prop_oneof![
                4 => strings,
                4 => numbers,
                1 => Just(json!(80.0)),
                1 => Just(json!(null)),
                1 => Just(json!(true)),
            ]
            .boxed(),
        }
    }

    /// A list element: a map with (usually) its merge key under `merge_key`,
    /// a field or two, now and then a `$patch` directive; rarely no map.
    fn element(merge_key: &'static str, mode: u8) -> impl Strategy<Value = Value> {
        let map = (
            prop::option::weighted(0.97, key(mode)),
            prop::option::of(prop::sample::select(vec!["x", "y"])),
            prop::option::of(prop::sample::select(vec!["TCP", "UDP"])),
            prop::option::weighted(
                0.1,
                prop::sample::select(vec!["delete", "delete", "replace"]),
            ),
        )
            .prop_map(move |(k, image, proto, patch)| {
                let mut m = Map::new();
                if let Some(k) = k {
                    m.insert(merge_key.into(), k);
                }
                if let Some(i) = image {
                    m.insert("image".into(), json!(i));
                }
                if let Some(p) = proto {
                    m.insert("protocol".into(), json!(p));
                }
                if let Some(p) = patch {
                    m.insert(PATCH.into(), json!(p));
                }
                Value::Object(m)
            });
        prop_oneof![
            200 => map,
            1 => Just(json!("loose")),
            1 => Just(json!([1])),
        ]
    }

    /// Up to 10 elements (longer than the short path takes), their keys
    /// of one kind mostly.
    fn list(merge_key: &'static str) -> impl Strategy<Value = Vec<Value>> {
        prop_oneof![6 => Just(0u8), 2 => Just(1u8), 1 => Just(2u8)]
            .prop_flat_map(move |mode| prop::collection::vec(element(merge_key, mode), 0..11))
    }

    /// A field's value: scalars of each kind, null, now and then a map or
    /// a list where a scalar is expected.
    fn scalar() -> impl Strategy<Value = Value> {
        prop::sample::select(vec![
            json!("1"),
            json!("2"),
            json!(1),
            json!(1.0),
            json!(2),
            json!(null),
            json!(true),
            json!({}),
            json!({"x": 1}),
            json!([1]),
        ])
    }

    /// A map of a few keys (labels, rollingUpdate), now and then with a
    /// `$patch` directive, valid or not.
    fn small_map() -> impl Strategy<Value = Value> {
        prop::collection::btree_map(
            prop::sample::select(vec!["a", "b", "c", "maxSurge", "$patch"]),
            scalar(),
            0..4,
        )
        .prop_map(|m| {
            Value::Object(
                m.into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .filter(|(k, v)| k != PATCH || v.is_string() || v.is_number())
                    .collect(),
            )
        })
    }

    /// One side of a three-way diff: a Deployment with labels, a strategy
    /// (`$retainKeys`), replicas, containers (merged by name) holding ports
    /// (merged by containerPort) and env (by name).
    fn side() -> impl Strategy<Value = Map<String, Value>> {
        (
            prop::option::weighted(0.9, list("name")),
            prop::option::weighted(0.3, list("containerPort")),
            prop::option::weighted(0.3, list("name")),
            prop::option::of(small_map()),
            prop::option::of(scalar()),
            prop::option::weighted(
                0.4,
                (
                    prop::option::of(prop::sample::select(vec![
                        json!("Recreate"),
                        json!("RollingUpdate"),
                        json!(null),
                    ])),
                    prop::option::of(small_map()),
                ),
            ),
        )
            .prop_map(|(containers, ports, env, labels, replicas, strategy)| {
                let mut containers = containers.map(Value::Array);
                // Every container holds the same ports and env: nested lists.
                if let Some(Value::Array(cs)) = &mut containers {
                    for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                        if let Some(p) = &ports {
                            c.insert("ports".into(), Value::Array(p.clone()));
                        }
                        if let Some(e) = &env {
                            c.insert("env".into(), Value::Array(e.clone()));
                        }
                    }
                }
                let mut pod = Map::new();
                if let Some(c) = containers {
                    pod.insert("containers".into(), c);
                }
                let mut spec = Map::new();
                spec.insert("template".into(), json!({"spec": pod}));
                if let Some(r) = replicas {
                    spec.insert("replicas".into(), r);
                }
                if let Some((t, ru)) = strategy {
                    let mut st = Map::new();
                    if let Some(t) = t {
                        st.insert("type".into(), t);
                    }
                    if let Some(ru) = ru {
                        st.insert("rollingUpdate".into(), ru);
                    }
                    spec.insert("strategy".into(), Value::Object(st));
                }
                let mut obj = Map::new();
                obj.insert("spec".into(), Value::Object(spec));
                if let Some(l) = labels {
                    obj.insert("metadata".into(), json!({"labels": l, "name": "w"}));
                }
                obj
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// The short path for lists merged by key gives what the general
        /// path gives (patch or error), on lists short and long, keys of
        /// every kind, repeated, missing, and elements that are no maps.
        #[test]
        fn short_keyed_lists_agree_with_the_general_path(
            original in side(),
            modified in side(),
            current in side(),
        ) {
            let schema = crate::patchmeta::PatchMeta::builtin().root("apps/v1", "Deployment");
            let fast = three_way_with(&original, &modified, &current, schema, false);
            let general = three_way_with(&original, &modified, &current, schema, true);
            prop_assert_eq!(fast, general);
        }

        /// The same with current and original derived from modified (most
        /// elements shared), as real objects are.
        #[test]
        fn short_keyed_lists_agree_on_near_copies(
            modified in side(),
            drop_o in prop::collection::vec(any::<bool>(), 11),
            drop_c in prop::collection::vec(any::<bool>(), 11),
            rev in any::<bool>(),
            extra in list("name"),
        ) {
            let derive = |drop: &[bool], more: usize| -> Map<String, Value> {
                let mut m = modified.clone();
                if let Some(Value::Array(cs)) = m
                    .get_mut("spec")
                    .and_then(|s| s.pointer_mut("/template/spec/containers"))
                {
                    let mut i = 0;
                    cs.retain(|_| {
                        i += 1;
                        !drop[i - 1]
                    });
                    if rev {
                        cs.reverse();
                    }
                    cs.extend(extra.iter().take(more).cloned());
                }
                m
            };
            let (original, current) = (derive(&drop_o, 1), derive(&drop_c, 2));
            let schema = crate::patchmeta::PatchMeta::builtin().root("apps/v1", "Deployment");
            let fast = three_way_with(&original, &modified, &current, schema, false);
            let general = three_way_with(&original, &modified, &current, schema, true);
            prop_assert_eq!(fast, general);
        }
    }

    /// One side of a three-way diff of another kind than a Deployment:
    /// Service (ports merged by port), ConfigMap (data, owner references
    /// merged by uid, finalizers), StatefulSet (containers by name, claim
    /// templates replaced whole), a custom resource (no schema).
    fn side_of(kind: &'static str) -> BoxedStrategy<Map<String, Value>> {
        let obj = |spec: Map<String, Value>, labels: Option<Value>| {
            let mut obj = Map::new();
            obj.insert("spec".into(), Value::Object(spec));
            if let Some(l) = labels {
                obj.insert("metadata".into(), json!({"labels": l, "name": "w"}));
            }
            obj
        };
        match kind {
            "Deployment" => side().boxed(),
            "Service" => (
                prop::option::weighted(0.9, list("port")),
                prop::option::of(small_map()),
                prop::option::of(scalar()),
                prop::option::of(small_map()),
            )
                .prop_map(move |(ports, selector, ty, labels)| {
                    let mut spec = Map::new();
                    let mut put = |k: &str, v: Option<Value>| {
                        if let Some(v) = v {
                            spec.insert(k.into(), v);
                        }
                    };
                    put("ports", ports.map(Value::Array));
                    put("selector", selector);
                    put("type", ty);
                    obj(spec, labels)
                })
                .boxed(),
            "ConfigMap" => (
                prop::option::of(small_map()),
                prop::option::of(small_map()),
                prop::option::weighted(0.5, list("uid")),
                prop::option::of(prop::collection::vec(
                    prop::sample::select(vec!["a", "b", "c"]).prop_map(|s| json!(s)),
                    0..4,
                )),
            )
                .prop_map(|(data, labels, owners, finalizers)| {
                    let mut md = Map::new();
                    md.insert("name".into(), json!("w"));
                    for (k, v) in [
                        ("labels", labels),
                        ("ownerReferences", owners.map(Value::Array)),
                        ("finalizers", finalizers.map(Value::Array)),
                    ] {
                        if let Some(v) = v {
                            md.insert(k.into(), v);
                        }
                    }
                    let mut obj = Map::new();
                    obj.insert("metadata".into(), Value::Object(md));
                    if let Some(d) = data {
                        obj.insert("data".into(), d);
                    }
                    obj
                })
                .boxed(),
            "StatefulSet" => (
                prop::option::weighted(0.9, list("name")),
                prop::option::weighted(0.4, list("name")),
                prop::option::of(scalar()),
                prop::option::of(small_map()),
                prop::option::of(small_map()),
            )
                .prop_map(move |(containers, claims, replicas, update, labels)| {
                    let mut spec = Map::new();
                    if let Some(c) = containers {
                        spec.insert("template".into(), json!({"spec": {"containers": c}}));
                    }
                    let mut put = |k: &str, v: Option<Value>| {
                        if let Some(v) = v {
                            spec.insert(k.into(), v);
                        }
                    };
                    put("volumeClaimTemplates", claims.map(Value::Array));
                    put("replicas", replicas);
                    put("updateStrategy", update);
                    obj(spec, labels)
                })
                .boxed(),
            _ => (
                prop::option::weighted(0.8, list("name")),
                prop::option::of(small_map()),
                prop::option::of(scalar()),
                prop::option::of(small_map()),
            )
                .prop_map(move |(parts, settings, size, labels)| {
                    let mut spec = Map::new();
                    let mut put = |k: &str, v: Option<Value>| {
                        if let Some(v) = v {
                            spec.insert(k.into(), v);
                        }
                    };
                    put("parts", parts.map(Value::Array));
                    put("settings", settings);
                    put("size", size);
                    obj(spec, labels)
                })
                .boxed(),
        }
    }

    /// The kinds [`side_of`] builds, with their API versions.
    const KINDS: [(&str, &str); 5] = [
        ("apps/v1", "Deployment"),
        ("v1", "Service"),
        ("v1", "ConfigMap"),
        ("apps/v1", "StatefulSet"),
        ("example.com/v1", "Widget"),
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1500))]
        /// The fast walk gives what the general path gives on each kind,
        /// a custom resource (no schema: maps and lists replaced whole) too.
        #[test]
        fn fast_walk_agrees_with_the_general_path_on_other_kinds(
            (api_version, kind, original, modified, current) in
                prop::sample::select(KINDS.to_vec()).prop_flat_map(|(api_version, kind)| {
                    (Just(api_version), Just(kind), side_of(kind), side_of(kind), side_of(kind))
                }),
        ) {
            let schema = crate::patchmeta::PatchMeta::builtin().root(api_version, kind);
            prop_assert_eq!(schema.is_none(), kind == "Widget");
            let fast = three_way_with(&original, &modified, &current, schema, false);
            let general = three_way_with(&original, &modified, &current, schema, true);
            prop_assert_eq!(fast, general);
        }
    }

    /// A merge key written 80.0 is the element keyed 80 on both paths (Go
    /// decodes both as float64): renamed in place, not deleted and added.
    #[test]
    fn a_float_merge_key_is_the_same_key() {
        let side = |port: Value, name: &str| {
            let v = json!({"spec": {"template": {"spec": {"containers": [
                {"name": "web", "ports": [{"containerPort": port, "name": name}]}]}}}});
            v.as_object().cloned().unwrap()
        };
        let (original, modified) = (side(json!(80), "web"), side(json!(80.0), "http"));
        let schema = crate::patchmeta::PatchMeta::builtin().root("apps/v1", "Deployment");
        for general in [false, true] {
            // Only the spelling changed: kubectl sends nothing (no order).
            let same = side(json!(80.0), "web");
            let patch = three_way_with(&original, &same, &original, schema, general).unwrap();
            assert!(patch.is_empty(), "general: {general}: {patch:?}");
            let patch = three_way_with(&original, &modified, &original, schema, general).unwrap();
            assert_eq!(
                patch["spec"]["template"]["spec"]["containers"][0]["ports"],
                json!([{"containerPort": 80.0, "name": "http"}]),
                "general: {general}"
            );
        }
    }

    #[test]
    fn delete_directives_go_last_in_key_order() {
        // Elements of the config that are delete directives, none of them
        // live: the general path sends them in the order of their keys.
        let modified = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "c", "$patch": "delete"}, {"name": "x"}, {"name": "a", "$patch": "delete"}]}}}});
        let current = json!({"spec": {"template": {"spec": {"containers": [{"name": "b"}]}}}});
        let (Value::Object(modified), Value::Object(current)) = (modified, current) else {
            unreachable!()
        };
        let schema = crate::patchmeta::PatchMeta::builtin().root("apps/v1", "Deployment");
        let fast = three_way_with(&current, &modified, &current, schema, false).unwrap();
        let general = three_way_with(&current, &modified, &current, schema, true).unwrap();
        assert_eq!(fast, general);
        assert_eq!(
            fast["spec"]["template"]["spec"]["containers"],
            json!([{"name": "x"}, {"$patch": "delete", "name": "a"}, {"$patch": "delete", "name": "c"},
                {"$patch": "delete", "name": "b"}])
        );
    }

    #[test]
    fn key_order_is_str_order() {
        let keys = [
            "",
            "a",
            "ab",
            "b",
            "$patch",
            "image",
            "imagePullPolicy",
            "é",
            "z",
        ];
        for a in keys {
            for b in keys {
                assert_eq!(key_cmp(a, b), a.cmp(b), "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn numbers_compare_as_float64() {
        assert!(deep_eq(&json!(1), &json!(1.0)));
        assert!(deep_eq(&json!({"a": [1, 2]}), &json!({"a": [1.0, 2.0]})));
        assert!(!deep_eq(&json!({"a": 1}), &json!({"a": 1, "b": null})));
    }
}
