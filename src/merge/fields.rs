//! The field plan: per leaf (and per keyed list element) what apply does
//! and why, from the three sides and the computed patch.

use super::strategic::deep_eq;
use super::{FieldAction, FieldChange, LAST_APPLIED, Reason};
use crate::fieldpath as path;
use crate::gocompat::sprint;
use crate::patchmeta::{ListStrategy, Schema};
use crate::vocab::{RETAIN_KEYS, SET_ELEMENT_ORDER, list_directive};
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
        path,
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
    pub fn walk(
        &mut self,
        p: &str,
        c: Option<&Value>,
        l: Option<&Value>,
        a: Option<&Value>,
        schema: Option<Schema<'_>>,
        patch: Option<&Value>,
    ) {
        if noise(p) || (c.is_none() && l.is_none() && a.is_none()) {
            return;
        }
        let obj = |v: Option<&Value>| v.is_none_or(Value::is_object);
        let removed_whole = c.is_none() && a.is_some();
        let replace = schema.is_some_and(|s| s.replace());
        if obj(c) && obj(l) && obj(a) && !removed_whole && !replace {
            let before = self.rows.len();
            self.walk_map(p, c, l, a, schema, patch);
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
                    p.into(),
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
                        self.walk_keyed(p, c, l, a, &k, schema.and_then(|s| s.items()), patch);
                        return;
                    }
                }
                Some(ListStrategy::MergePrimitive) => {
                    self.primitive_list(p, c, l, a);
                    return;
                }
                _ => {}
            }
        }
        self.leaf(p, c, l, a, schema);
    }

    fn walk_map<'v>(
        &mut self,
        p: &str,
        c: Option<&'v Value>,
        l: Option<&'v Value>,
        a: Option<&'v Value>,
        schema: Option<Schema<'_>>,
        patch: Option<&Value>,
    ) {
        // Map keys in sorted order, as the objects print.
        let keys: std::collections::BTreeSet<&String> = [c, l, a]
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
            .flat_map(|m| m.keys())
            .collect();
        if keys.is_empty() {
            if let (Some(cv), None) = (c, l) {
                self.rows.push(row(
                    p.into(),
                    Some(cv),
                    None,
                    a,
                    FieldAction::Set,
                    Reason::NotInLive,
                ));
            }
            return;
        }
        let retain: Option<Vec<&str>> = patch
            .and_then(|p| p.get(RETAIN_KEYS))
            .and_then(Value::as_array)
            .map(|v| v.iter().filter_map(Value::as_str).collect());
        // Borrowed: every level of the walk reads the same three trees.
        let get = |v: Option<&'v Value>, k: &str| v.and_then(|v| v.get(k));
        for k in keys {
            let (ck, lk, ak) = (get(c, k), get(l, k), get(a, k));
            let sub = path::key(p, k);
            if noise(&sub) {
                continue;
            }
            if let Some(retain) = &retain
                && ck.is_none()
                && ak.is_none()
                && !retain.contains(&k.as_str())
            {
                if let Some(lv) = lk
                    && !lv.is_null()
                {
                    self.rows.push(row(
                        sub,
                        None,
                        Some(lv),
                        None,
                        FieldAction::Clear,
                        Reason::RetainKeysDrops,
                    ));
                }
                continue;
            }
            let sub_schema = schema.and_then(|s| s.field(k));
            let sub_patch = patch.and_then(|pv| pv.get(k));
            let before = self.rows.len();
            self.walk(&sub, ck, lk, ak, sub_schema, sub_patch);
            // kubectl re-sends the config's element order when it differs
            // from live's (live-only elements included): say so when that
            // is all that changes in the list.
            let order = patch.and_then(|pv| pv.get(list_directive(SET_ELEMENT_ORDER, k)));
            let quiet = self.rows[before..]
                .iter()
                .all(|r| r.action == FieldAction::Keep);
            if let (Some(order), true) = (order, quiet)
                && !self.merge_patch
            {
                self.rows.push(row(
                    sub,
                    Some(order),
                    lk.map(|l| key_order(l, order)).as_ref(),
                    ak.map(|a| key_order(a, order)).as_ref(),
                    FieldAction::Set,
                    Reason::ElementOrder,
                ));
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn walk_keyed<'v>(
        &mut self,
        p: &str,
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
        let key_of = |v: &Value| v.get(merge_key).cloned().unwrap_or(Value::Null);
        let mut keys: Vec<Value> = Vec::new();
        for v in cl.iter().chain(ll).chain(al) {
            let k = key_of(v);
            if !keys
                .iter()
                .any(|x| deep_eq(x, &k) && sprint(x) == sprint(&k))
            {
                keys.push(k);
            }
        }
        let same_key = |v: &Value, k: &Value| {
            let vk = v.get(merge_key).unwrap_or(&Value::Null);
            deep_eq(vk, k) && sprint(vk) == sprint(k)
        };
        let find = |list: &'v [Value], k: &Value| -> Option<&'v Value> {
            list.iter().find(|v| same_key(v, k))
        };
        let patch_list = patch
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let all = |list: &[Value], k: &Value| -> Vec<Value> {
            list.iter().filter(|v| same_key(v, k)).cloned().collect()
        };
        for k in keys {
            let (ce, le, ae) = (find(cl, &k), find(ll, &k), find(al, &k));
            let ep = path::element(p, merge_key, &k);
            // Config elements sharing a merge key: the patch names them by
            // that key only, so the server merges them into one element.
            // Shown as one row (the hazard says which survives) when the
            // patch sends them.
            // Counted first: the copies are made only for such a row.
            let dups = cl.iter().filter(|v| same_key(v, &k)).count();
            if dups > 1 && patch_list.iter().any(|v| same_key(v, &k)) {
                let dups = all(cl, &k);
                let live_all = all(ll, &k);
                let live_side = (!live_all.is_empty()).then_some(Value::Array(live_all));
                let la_all = all(al, &k);
                let la_side = (!la_all.is_empty()).then_some(Value::Array(la_all));
                self.rows.push(row(
                    ep,
                    Some(&Value::Array(dups.clone())),
                    live_side.as_ref(),
                    la_side.as_ref(),
                    FieldAction::Set,
                    Reason::SharedMergeKey {
                        count: dups.len(),
                        key: merge_key.to_string(),
                        value: path::element_value(&k),
                    },
                ));
                continue;
            }
            match (ce, le, ae) {
                (Some(cv), None, _) => self.rows.push(row(
                    ep,
                    Some(cv),
                    None,
                    ae,
                    FieldAction::Set,
                    Reason::NewElement,
                )),
                (Some(_), Some(_), _) => {
                    let pe = patch_list.iter().find(|v| same_key(v, &k));
                    self.walk(&ep, ce, le, ae, items, pe);
                }
                (None, Some(lv), Some(av)) => self.rows.push(row(
                    ep,
                    None,
                    Some(lv),
                    Some(av),
                    FieldAction::Clear,
                    Reason::RemovedElement,
                )),
                (None, Some(lv), None) => self.rows.push(row(
                    ep,
                    None,
                    Some(lv),
                    None,
                    FieldAction::Keep,
                    Reason::LiveOnlyElement,
                )),
                (None, None, _) => {}
            }
        }
    }

    /// Merge lists of scalars (finalizers): a union, values removed from
    /// the config are deleted, other writers' values stay.
    fn primitive_list<'v>(
        &mut self,
        p: &str,
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
                    self.rows
                        .push(row(p.into(), c, l, a, FieldAction::Set, Reason::MergeList));
                }
            }
            None => {
                if a.is_some() {
                    if l.is_some() {
                        self.rows
                            .push(row(p.into(), None, l, a, FieldAction::Clear, REMOVED));
                    }
                } else if l.is_some_and(|v| !v.is_null()) {
                    self.rows
                        .push(row(p.into(), None, l, None, FieldAction::Keep, LIVE_ONLY));
                }
            }
        }
    }

    fn leaf(
        &mut self,
        p: &str,
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
                    p.into(),
                    c,
                    l,
                    a,
                    FieldAction::Keep,
                    Reason::NullNotResent,
                )),
                (Some(lv), _) if !lv.is_null() => self.rows.push(row(
                    p.into(),
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
                p.into(),
                c,
                l,
                a,
                FieldAction::Clear,
                Reason::ExplicitNull,
            )),
            (Some(Value::Null), _) => self.rows.push(row(
                p.into(),
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
                        .push(row(p.into(), c, l, a, FieldAction::Set, reason));
                }
            }
            (Some(_), None) => self.rows.push(row(
                p.into(),
                c,
                None,
                a,
                FieldAction::Set,
                Reason::NotInLive,
            )),
            (None, Some(lv)) => {
                if a.is_some() {
                    self.rows
                        .push(row(p.into(), None, l, a, FieldAction::Clear, REMOVED));
                } else if !lv.is_null() {
                    self.rows
                        .push(row(p.into(), None, l, None, FieldAction::Keep, LIVE_ONLY));
                }
            }
            (None, None) => {}
        }
    }
}
