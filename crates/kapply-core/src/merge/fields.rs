//! The field plan: per leaf (and per keyed list element) what apply does
//! and why, from the three sides and the computed patch.

use super::strategic::deep_eq;
use super::{FieldAction, FieldChange, LAST_APPLIED, Reason};
use crate::fieldpath as path;
use crate::gocompat::sprint;
use crate::patchmeta::{ListStrategy, Schema};
use crate::vocab::{RETAIN_KEYS, SET_ELEMENT_ORDER};
use serde_json::Value;

/// Paths that are bookkeeping of the server or of apply itself, never shown.
fn noise(p: &str) -> bool {
    const SKIP: [&str; 8] = [
        "status",
        "metadata.managedFields",
        "metadata.resourceVersion",
        "metadata.uid",
        "metadata.generation",
        "metadata.creationTimestamp",
        "metadata.selfLink",
        "metadata.deletionTimestamp",
    ];
    // Every noisy path starts with one of these: most paths are out after
    // one comparison, without building the annotation's path.
    if !(p.starts_with("metadata") || p == "status") {
        return false;
    }
    SKIP.contains(&p)
        || p.strip_prefix("metadata.annotations[\"")
            .and_then(|r| r.strip_suffix("\"]"))
            .is_some_and(|k| k == LAST_APPLIED)
}

pub(crate) struct Walker {
    pub rows: Vec<FieldChange>,
    /// Custom resources: lists are replaced whole.
    pub merge_patch: bool,
    /// The path of the node being walked: one buffer for the whole walk,
    /// copied only into the rows.
    path: String,
    /// Scratch for the `$setElementOrder/<list>` key looked up at each list.
    directive: String,
}

fn row(
    path: String,
    c: Option<&Value>,
    l: Option<&Value>,
    a: Option<&Value>,
    action: FieldAction,
    reason: Reason,
) -> FieldChange {
    FieldChange {
        path: path.into(),
        config: c.cloned(),
        live: l.cloned(),
        last_applied: a.cloned(),
        action,
        reason,
        // Decided once all rows exist (causes::classify).
        cause: super::Cause::Intended,
        owner: None,
        changed_at: None,
        hazards: vec![],
    }
}

/// The merge key value of a list element missing it.
static NO_KEY: Value = Value::Null;

/// Whether two merge key values name the same element: equal as Go
/// compares them and printed alike. Scalars equal as Go compares them
/// print alike, so only lists and maps are printed to tell.
fn same_merge_key(a: &Value, b: &Value) -> bool {
    let scalar = |v: &Value| !(v.is_array() || v.is_object());
    deep_eq(a, b) && ((scalar(a) && scalar(b)) || sprint(a) == sprint(b))
}

/// A list reduced to what `$setElementOrder` shows: merge keys of map
/// elements (the key taken from the order list), scalars as they are.
fn key_order(list: &Value, order: &Value) -> Value {
    let key = order
        .as_array()
        .and_then(|o| o.first())
        .and_then(Value::as_object)
        .and_then(|m| m.keys().next().cloned());
    let Some(items) = list.as_array() else {
        return list.clone();
    };
    match key {
        Some(k) => Value::Array(
            items
                .iter()
                .map(|e| {
                    let mut m = serde_json::Map::new();
                    m.insert(k.clone(), e.get(&k).cloned().unwrap_or(Value::Null));
                    Value::Object(m)
                })
                .collect(),
        ),
        None => list.clone(),
    }
}

/// Null members removed, as the server does with a value inserted whole
/// (and kubectl does with a creation body).
pub(crate) fn drop_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.values_mut().for_each(drop_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

const LIVE_ONLY: Reason = Reason::LiveOnly;
const REMOVED: Reason = Reason::Removed;

impl Walker {
    pub fn new(merge_patch: bool) -> Walker {
        Walker {
            rows: Vec::new(),
            merge_patch,
            // Room for the deepest paths of most objects at once, not
            // grown by doubling while the walk descends.
            path: String::with_capacity(128),
            directive: String::new(),
        }
    }

    /// Walk the three sides at the current path (the root to begin with).
    pub fn walk(
        &mut self,
        c: Option<&Value>,
        l: Option<&Value>,
        a: Option<&Value>,
        schema: Option<Schema<'_>>,
        patch: Option<&Value>,
    ) {
        // Noise is checked per map key (walk_key): the root's path is empty
        // and a keyed element's (`x[key=v]`) is never noise.
        if c.is_none() && l.is_none() && a.is_none() {
            return;
        }
        let obj = |v: Option<&Value>| v.is_none_or(Value::is_object);
        let removed_whole = c.is_none() && a.is_some();
        let replace = schema.is_some_and(|s| s.replace());
        if obj(c) && obj(l) && obj(a) && !removed_whole && !replace {
            let before = self.rows.len();
            self.walk_map(c, l, a, schema, patch);
            // A JSON merge patch creates a map the config names even when
            // every field in it is null: the custom resource gets `{}` (a
            // typed built-in object drops it, so only custom resources).
            if self.merge_patch
                && self.rows.len() == before
                && l.is_none()
                && patch.is_some_and(Value::is_object)
                && let Some(cv) = c.filter(|cv| cv.is_object())
            {
                let mut created = cv.clone();
                drop_nulls(&mut created);
                self.rows.push(row(
                    self.path.clone(),
                    Some(&created),
                    None,
                    a,
                    FieldAction::Set,
                    Reason::NewWithoutNulls,
                ));
            }
            return;
        }
        let arr = |v: Option<&Value>| v.is_none_or(Value::is_array);
        if arr(c) && arr(l) && arr(a) && !removed_whole && !self.merge_patch {
            match schema.map(|s| s.list_strategy()) {
                Some(ListStrategy::MergeByKey(k)) => {
                    let all_maps = [c, l, a]
                        .iter()
                        .flatten()
                        .filter_map(|v| v.as_array())
                        .flatten()
                        .all(Value::is_object);
                    if all_maps {
                        self.walk_keyed(c, l, a, k, schema.and_then(|s| s.items()), patch);
                        return;
                    }
                }
                Some(ListStrategy::MergePrimitive) => {
                    self.primitive_list(c, l, a);
                    return;
                }
                Some(ListStrategy::Atomic) | None => {}
            }
        }
        self.leaf(c, l, a, schema);
    }

    fn walk_map<'v>(
        &mut self,
        c: Option<&'v Value>,
        l: Option<&'v Value>,
        a: Option<&'v Value>,
        schema: Option<Schema<'_>>,
        patch: Option<&Value>,
    ) {
        let entries =
            |v: Option<&'v Value>| v.and_then(Value::as_object).map(|m| m.iter().peekable());
        let (mut ci, mut li, mut ai) = (entries(c), entries(l), entries(a));
        let head = |it: &mut Option<std::iter::Peekable<serde_json::map::Iter<'v>>>| {
            it.as_mut().and_then(|i| i.peek()).map(|(k, _)| *k)
        };
        let no_keys = head(&mut ci).is_none() && head(&mut li).is_none() && head(&mut ai).is_none();
        if no_keys {
            if let (Some(cv), None) = (c, l) {
                self.rows.push(row(
                    self.path.clone(),
                    Some(cv),
                    None,
                    a,
                    FieldAction::Set,
                    Reason::NotInLive,
                ));
            }
            return;
        }
        // The patch's directives found in one pass over its keys: most
        // patch maps hold neither, and then no key looks them up.
        let mut retain: Option<Vec<&str>> = None;
        let mut orders = false;
        if let Some(pm) = patch.and_then(Value::as_object) {
            for (pk, pv) in pm {
                if pk == RETAIN_KEYS {
                    retain = pv
                        .as_array()
                        .map(|v| v.iter().filter_map(Value::as_str).collect());
                } else if pk.starts_with(SET_ELEMENT_ORDER) {
                    orders = true;
                }
            }
        }
        let len = self.path.len();
        // Map keys in sorted order, as the objects print: the three sorted
        // maps merged, each side's value taken as its key comes up.
        while let Some(k) = [head(&mut ci), head(&mut li), head(&mut ai)]
            .into_iter()
            .flatten()
            .min()
        {
            let take = |it: &mut Option<std::iter::Peekable<serde_json::map::Iter<'v>>>| {
                let i = it.as_mut()?;
                if i.peek().is_some_and(|(x, _)| *x == k) {
                    i.next().map(|(_, v)| v)
                } else {
                    None
                }
            };
            let (ck, lk, ak) = (take(&mut ci), take(&mut li), take(&mut ai));
            path::push_key(&mut self.path, k);
            self.walk_key(k, ck, lk, ak, schema, patch, retain.as_deref(), orders);
            self.path.truncate(len);
        }
    }

    /// One key of a map (its path pushed).
    #[allow(clippy::too_many_arguments)]
    fn walk_key(
        &mut self,
        k: &str,
        ck: Option<&Value>,
        lk: Option<&Value>,
        ak: Option<&Value>,
        schema: Option<Schema<'_>>,
        patch: Option<&Value>,
        retain: Option<&[&str]>,
        orders: bool,
    ) {
        if noise(&self.path) {
            return;
        }
        if let Some(retain) = retain
            && ck.is_none()
            && ak.is_none()
            && !retain.contains(&k)
        {
            if let Some(lv) = lk
                && !lv.is_null()
            {
                self.rows.push(row(
                    self.path.clone(),
                    None,
                    Some(lv),
                    None,
                    FieldAction::Clear,
                    Reason::RetainKeysDrops,
                ));
            }
            return;
        }
        // Only maps and lists read their schema (a scalar is a leaf either
        // way): looked up for them alone.
        let nested = |v: Option<&Value>| v.is_some_and(|v| v.is_object() || v.is_array());
        let sub_schema = if nested(ck) || nested(lk) || nested(ak) {
            schema.and_then(|s| s.field(k))
        } else {
            None
        };
        let sub_patch = patch.and_then(|pv| pv.get(k));
        let before = self.rows.len();
        self.walk(ck, lk, ak, sub_schema, sub_patch);
        // kubectl re-sends the config's element order when it differs
        // from live's (live-only elements included): say so when that
        // is all that changes in the list.
        if self.merge_patch {
            return;
        }
        let Some(pv) = patch.filter(|_| orders) else {
            return;
        };
        let quiet = self.rows[before..]
            .iter()
            .all(|r| r.action == FieldAction::Keep);
        if !quiet {
            return;
        }
        // The directive's key spelled in a buffer kept for the walk.
        let key = &mut self.directive;
        key.clear();
        key.push_str(SET_ELEMENT_ORDER);
        key.push('/');
        key.push_str(k);
        if let Some(order) = pv.get(key.as_str()) {
            self.rows.push(row(
                self.path.clone(),
                Some(order),
                lk.map(|l| key_order(l, order)).as_ref(),
                ak.map(|a| key_order(a, order)).as_ref(),
                FieldAction::Set,
                Reason::ElementOrder,
            ));
        }
    }

    fn walk_keyed<'v>(
        &mut self,
        c: Option<&'v Value>,
        l: Option<&'v Value>,
        a: Option<&'v Value>,
        merge_key: &str,
        items: Option<Schema<'_>>,
        patch: Option<&Value>,
    ) {
        let list = |v: Option<&'v Value>| -> &'v [Value] {
            v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
        };
        let (cl, ll, al) = (list(c), list(l), list(a));
        let key_of = |v: &'v Value| v.get(merge_key).unwrap_or(&NO_KEY);
        // Each element's merge key read once (every key below is matched
        // against every element).
        let keys_of = |list: &'v [Value]| -> Vec<&'v Value> { list.iter().map(key_of).collect() };
        let (ck, lk, ak) = (keys_of(cl), keys_of(ll), keys_of(al));
        let mut keys: Vec<&'v Value> = Vec::with_capacity(ck.len().max(lk.len()));
        for &k in ck.iter().chain(&lk).chain(&ak) {
            if !keys.iter().any(|x| same_merge_key(x, k)) {
                keys.push(k);
            }
        }
        let find = |list: &'v [Value], list_keys: &[&Value], k: &Value| -> Option<&'v Value> {
            let i = list_keys.iter().position(|x| same_merge_key(x, k))?;
            list.get(i)
        };
        let patch_list = patch
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let same_key =
            |v: &Value, k: &Value| same_merge_key(v.get(merge_key).unwrap_or(&NO_KEY), k);
        let all = |list: &[Value], list_keys: &[&Value], k: &Value| -> Vec<Value> {
            list.iter()
                .zip(list_keys)
                .filter(|(_, x)| same_merge_key(x, k))
                .map(|(v, _)| v.clone())
                .collect()
        };
        let len = self.path.len();
        for k in keys {
            let (ce, le, ae) = (find(cl, &ck, k), find(ll, &lk, k), find(al, &ak, k));
            path::push_element(&mut self.path, merge_key, k);
            // Config elements sharing a merge key: the patch names them by
            // that key only, so the server merges them into one element.
            // Shown as one row (the hazard says which survives) when the
            // patch sends them.
            // Counted first: the copies are made only for such a row.
            let dups = ck.iter().filter(|x| same_merge_key(x, k)).count();
            if dups > 1 && patch_list.iter().any(|v| same_key(v, k)) {
                let dups = all(cl, &ck, k);
                let live_all = all(ll, &lk, k);
                let live_side = (!live_all.is_empty()).then_some(Value::Array(live_all));
                let la_all = all(al, &ak, k);
                let la_side = (!la_all.is_empty()).then_some(Value::Array(la_all));
                self.rows.push(row(
                    self.path.clone(),
                    Some(&Value::Array(dups.clone())),
                    live_side.as_ref(),
                    la_side.as_ref(),
                    FieldAction::Set,
                    Reason::SharedMergeKey {
                        count: dups.len(),
                        key: merge_key.to_string(),
                        value: path::element_value(k),
                    },
                ));
                self.path.truncate(len);
                continue;
            }
            match (ce, le, ae) {
                (Some(cv), None, _) => self.rows.push(row(
                    self.path.clone(),
                    Some(cv),
                    None,
                    ae,
                    FieldAction::Set,
                    Reason::NewElement,
                )),
                (Some(_), Some(_), _) => {
                    let pe = patch_list.iter().find(|v| same_key(v, k));
                    self.walk(ce, le, ae, items, pe);
                }
                (None, Some(lv), Some(av)) => self.rows.push(row(
                    self.path.clone(),
                    None,
                    Some(lv),
                    Some(av),
                    FieldAction::Clear,
                    Reason::RemovedElement,
                )),
                (None, Some(lv), None) => self.rows.push(row(
                    self.path.clone(),
                    None,
                    Some(lv),
                    None,
                    FieldAction::Keep,
                    Reason::LiveOnlyElement,
                )),
                (None, None, _) => {}
            }
            self.path.truncate(len);
        }
    }

    /// Merge lists of scalars (finalizers): a union, values removed from
    /// the config are deleted, other writers' values stay.
    fn primitive_list<'v>(
        &mut self,
        c: Option<&'v Value>,
        l: Option<&'v Value>,
        a: Option<&'v Value>,
    ) {
        let items = |v: Option<&'v Value>| -> &'v [Value] {
            v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
        };
        let (cl, ll, al) = (items(c), items(l), items(a));
        let has = |list: &[Value], v: &Value| list.iter().any(|x| deep_eq(x, v));
        match c {
            Some(_) => {
                let missing = cl.iter().any(|v| !has(ll, v));
                let removed = al.iter().any(|v| !has(cl, v) && has(ll, v));
                if missing || removed {
                    self.rows.push(row(
                        self.path.clone(),
                        c,
                        l,
                        a,
                        FieldAction::Set,
                        Reason::MergeList,
                    ));
                }
            }
            None => self.not_in_config(l, a),
        }
    }

    /// A field the config leaves out, beside its live value (if any): apply
    /// clears it when last-applied has it, and keeps a live-only value.
    fn not_in_config(&mut self, l: Option<&Value>, a: Option<&Value>) {
        match (l, a) {
            (Some(_), Some(_)) => self.rows.push(row(
                self.path.clone(),
                None,
                l,
                a,
                FieldAction::Clear,
                REMOVED,
            )),
            (Some(lv), None) if !lv.is_null() => self.rows.push(row(
                self.path.clone(),
                None,
                l,
                None,
                FieldAction::Keep,
                LIVE_ONLY,
            )),
            _ => {}
        }
    }

    fn leaf(
        &mut self,
        c: Option<&Value>,
        l: Option<&Value>,
        a: Option<&Value>,
        schema: Option<Schema<'_>>,
    ) {
        let atomic_list = c.is_some_and(Value::is_array)
            && (self.merge_patch
                || schema.is_none_or(|s| s.list_strategy() == ListStrategy::Atomic));
        if self.merge_patch && c.is_some_and(Value::is_null) {
            // A JSON merge patch sends a config null only while last-applied
            // does not hold the same null.
            match (l, a) {
                (Some(lv), Some(Value::Null)) if !lv.is_null() => self.rows.push(row(
                    self.path.clone(),
                    c,
                    l,
                    a,
                    FieldAction::Keep,
                    Reason::NullNotResent,
                )),
                (Some(lv), _) if !lv.is_null() => self.rows.push(row(
                    self.path.clone(),
                    c,
                    l,
                    a,
                    FieldAction::Clear,
                    Reason::ExplicitNull,
                )),
                _ => {}
            }
            return;
        }
        match (c, l) {
            (Some(Value::Null), Some(lv)) if !lv.is_null() => self.rows.push(row(
                self.path.clone(),
                c,
                l,
                a,
                FieldAction::Clear,
                Reason::ExplicitNull,
            )),
            (Some(Value::Null), _) => self.rows.push(row(
                self.path.clone(),
                c,
                l,
                a,
                FieldAction::Clear,
                Reason::NullNothingToClear,
            )),
            (Some(cv), Some(lv)) => {
                if !deep_eq(cv, lv) {
                    let reason = if atomic_list {
                        Reason::DiffersListReplaced
                    } else {
                        Reason::Differs
                    };
                    self.rows
                        .push(row(self.path.clone(), c, l, a, FieldAction::Set, reason));
                }
            }
            (Some(_), None) => self.rows.push(row(
                self.path.clone(),
                c,
                None,
                a,
                FieldAction::Set,
                Reason::NotInLive,
            )),
            (None, _) => self.not_in_config(l, a),
        }
    }
}
