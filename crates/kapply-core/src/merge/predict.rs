//! The object the server will hold after the apply: the patch applied to
//! the live object as the API server merges it ([`super::apply`]), then
//! defaulted as the server defaults what it stores ([`crate::defaults`]).
//! A row is a change only where this result and live differ at its path,
//! and an object whose result is its live object is unchanged, whatever
//! patch kubectl would send (a `$setElementOrder` alone, an explicit null
//! of a field live lacks, a Secret's `stringData` the server folds into
//! `data`). No I/O.

use super::strategic::deep_eq;
use super::{FieldAction, FieldChange, LAST_APPLIED, Patch, PatchType, Reason, apply};
use crate::fieldpath::{self as path, FieldPath, Step};
use crate::patchmeta::Schema;
use serde_json::Value;
use std::cell::OnceCell;

/// The predicted result of one apply, built as far as a question needs it:
/// the patch is merged into a copy of only the parts of live it names
/// ([`trim`]: the rest of the result is live's, untouched), and the whole
/// result, defaulted, is made only for the rows whose difference
/// defaulting could undo and for the hazards.
pub(crate) struct Prediction<'l, 's> {
    live: &'l Value,
    patch: Option<&'l Patch>,
    schema: Option<Schema<'s>>,
    /// [`trim`] of live by the patch, and the patch merged into it (`None`:
    /// the patch could not be merged here, as the server would refuse it:
    /// nothing is decided from the result). Made at the first question a
    /// row's own sides cannot answer.
    trimmed: OnceCell<(Value, Option<Value>)>,
    /// The whole result, defaulted as the server defaults an object it
    /// stores (`None`: the merge failed).
    defaulted: OnceCell<Option<Value>>,
}

impl<'l, 's> Prediction<'l, 's> {
    pub fn new(live: &'l Value, patch: Option<&'l Patch>, schema: Option<Schema<'s>>) -> Self {
        Prediction {
            live,
            patch,
            schema,
            trimmed: OnceCell::new(),
            defaulted: OnceCell::new(),
        }
    }

    /// Live trimmed to what the patch names, and the patch merged into it;
    /// `None` without a patch.
    fn trimmed(&self) -> Option<(&Value, Option<&Value>)> {
        let p = self.patch?;
        let (t, m) = self.trimmed.get_or_init(|| {
            let t = trim(self.live, &p.body);
            let m = merge(&t, p, self.schema);
            (t, m)
        });
        Some((t, m.as_ref()))
    }

    /// The patch could not be merged: nothing is known of the result.
    fn unknown(&self) -> bool {
        matches!(self.trimmed(), Some((_, None)))
    }

    /// The result as the server will hold it (its defaults applied), or
    /// `None` when it is not known.
    pub fn result(&self) -> Option<&Value> {
        if self.unknown() {
            return None;
        }
        let Some(p) = self.patch else {
            return Some(self.live);
        };
        self.defaulted
            .get_or_init(|| merge(self.live, p, self.schema).map(|m| defaulted(&m, self.live)))
            .as_ref()
    }

    /// Whether the result differs from live at `row_path` (a field plan
    /// path; a keyed element names every element with its key). Unknown
    /// results count as changed.
    pub fn changes_at(&self, row_path: &FieldPath) -> bool {
        let Some(p) = self.patch else {
            return false;
        };
        if escapes(&p.body, row_path) {
            // Outside what the patch names: live's, untouched.
            return false;
        }
        let Some((trimmed, merged)) = self.trimmed() else {
            return false;
        };
        let Some(merged) = merged else {
            return true;
        };
        // Both trimmed alike: what the patch does not name is live's in
        // both, so they are equal exactly where the whole ones are.
        if same_values(&values_at(trimmed, row_path), &values_at(merged, row_path)) {
            return false;
        }
        let (before, raw) = (values_at(self.live, row_path), values_at(merged, row_path));
        // Defaulting fills in what is absent and folds a Secret's
        // stringData: it can only give back a value the merge removed,
        // complete a map or list, or take stringData away. A scalar the
        // merge changed stays changed.
        let may_default = raw.is_empty()
            || raw.len() != before.len()
            || raw.iter().any(|v| v.is_object() || v.is_array())
            || row_path.is_under("stringData");
        if !may_default || !crate::defaults::has_rule(self.live) {
            return true;
        }
        let Some(result) = self.result() else {
            return true;
        };
        !same_values(&before, &values_at(result, row_path))
    }

    /// Whether the result differs from live anywhere (for a patch whose
    /// rows all leave live as it is: the whole objects compared);
    /// `beyond_annotation`: the last-applied annotation left out of the
    /// comparison, as `kubectl diff` leaves it out of its patch.
    pub fn changes_anywhere(&self, beyond_annotation: bool) -> bool {
        let Some((trimmed, merged)) = self.trimmed() else {
            return false;
        };
        let Some(merged) = merged else {
            return true;
        };
        let eq = |a: &Value, b: &Value| {
            if beyond_annotation {
                eq_but_annotation(a, b)
            } else {
                deep_eq(a, b)
            }
        };
        // What the patch does not name is live's in both.
        if eq(merged, trimmed) {
            return false;
        }
        let Some(result) = self.result() else {
            return true;
        };
        if eq(result, self.live) {
            return false;
        }
        // A live object read from a file may lack what the server
        // defaults: compared as the server would hold both.
        !eq(result, &defaulted(self.live, self.live))
    }
}

/// The patch merged into `live` as the server merges it; `None` when it
/// cannot be.
fn merge(live: &Value, p: &Patch, schema: Option<Schema<'_>>) -> Option<Value> {
    match p.kind {
        PatchType::Strategic => apply::apply_strategic(live, &p.body, schema).ok(),
        PatchType::Merge => Some(apply::apply_merge(live, &p.body)),
    }
}

/// The directive keys that make a patch map act on its whole live map.
fn whole_map(patch: &serde_json::Map<String, Value>) -> bool {
    patch.contains_key(crate::vocab::PATCH) || patch.contains_key(crate::vocab::RETAIN_KEYS)
}

/// The live field a patch key acts on, and whether it acts on it whole (a
/// list directive names its list).
fn target(key: &str) -> (&str, bool) {
    for d in [
        crate::vocab::SET_ELEMENT_ORDER,
        crate::vocab::DELETE_FROM_PRIMITIVE_LIST,
    ] {
        if let Some(k) = key.strip_prefix(d).and_then(|k| k.strip_prefix('/')) {
            return (k, true);
        }
    }
    (key, false)
}

/// Of `live`, only what `patch` names: at each map level the patch merges
/// into key by key, the keys it names (their live values trimmed the same
/// way where the patch holds a map there, else copied whole); a level the
/// patch acts on whole (`$patch`, `$retainKeys`), and anything not a map,
/// copied whole. Merging the patch into this copy gives the result's
/// values where the patch acts, for a fraction of a copy of all of live
/// (managedFields, status, the fields the patch leaves alone).
fn trim(live: &Value, patch: &Value) -> Value {
    match (live, patch) {
        (Value::Object(l), Value::Object(p)) if !whole_map(p) => {
            let mut out = serde_json::Map::new();
            for (k, pv) in p {
                let (key, whole) = target(k);
                // A list and its directive name one live field: copied once.
                let Some(lv) = l.get(key).filter(|_| !out.contains_key(key)) else {
                    continue;
                };
                let v = if whole || !pv.is_object() {
                    lv.clone()
                } else {
                    trim(lv, pv)
                };
                out.insert(key.to_string(), v);
            }
            Value::Object(out)
        }
        _ => live.clone(),
    }
}

/// Whether `row_path` leads outside what [`trim`] keeps of live for
/// `patch`: a key the patch does not name, at a level it merges into key
/// by key (the result there is live's).
fn escapes(patch: &Value, row_path: &FieldPath) -> bool {
    let mut cur = patch;
    for (step, _) in row_path.steps() {
        let Value::Object(p) = cur else {
            return false;
        };
        if whole_map(p) {
            return false;
        }
        let Step::Key(k) = &step else {
            return false;
        };
        match p.get(k.as_ref()) {
            Some(v) if v.is_object() => cur = v,
            Some(_) => return false,
            None => {
                return !p.keys().any(|pk| {
                    let (t, whole) = target(pk);
                    whole && t == k.as_ref()
                });
            }
        }
    }
    false
}

/// `v` defaulted as the server defaults an object it stores; a Service
/// keeps its live cluster IP.
fn defaulted(v: &Value, live: &Value) -> Value {
    let mut out = v.clone();
    let ip = live
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    crate::defaults::apply(&mut out, &mut || ip.clone());
    out
}

/// The values a field plan path names in `v`: none, one, or several list
/// elements sharing a merge key.
pub fn values_at<'v>(v: &'v Value, row_path: &FieldPath) -> Vec<&'v Value> {
    let mut cur = vec![v];
    for (step, _) in row_path.steps() {
        let mut next = Vec::with_capacity(cur.len());
        for c in cur {
            match &step {
                Step::Element(k, want) => {
                    if let Some(items) = c.as_array() {
                        next.extend(items.iter().filter(|e| path::element_matches(e, k, want)));
                    }
                }
                s => next.extend(path::get_step(c, s)),
            }
        }
        if next.is_empty() {
            return next;
        }
        cur = next;
    }
    cur
}

/// Two objects equal but for their last-applied annotation (an
/// annotations map that holds nothing else counts as none).
fn eq_but_annotation(a: &Value, b: &Value) -> bool {
    eq_but_in(Some(a), Some(b), "metadata", |x, y| {
        eq_but_in(x, y, "annotations", |x, y| {
            eq_but_in(x, y, LAST_APPLIED, |_, _| true)
        })
    })
}

/// Two maps (absent: empty) equal key by key, `key` compared by `at`
/// (absent on a side: `None`); a map empty but for `key` counts as none.
fn eq_but_in(
    a: Option<&Value>,
    b: Option<&Value>,
    key: &str,
    at: impl Fn(Option<&Value>, Option<&Value>) -> bool,
) -> bool {
    let empty = serde_json::Map::new();
    let (Some(ma), Some(mb)) = (
        a.map_or(Some(&empty), Value::as_object),
        b.map_or(Some(&empty), Value::as_object),
    ) else {
        return a.zip(b).is_some_and(|(x, y)| deep_eq(x, y));
    };
    let rest = |m: &serde_json::Map<String, Value>| m.len() - usize::from(m.contains_key(key));
    rest(ma) == rest(mb)
        && ma
            .iter()
            .filter(|(k, _)| *k != key)
            .all(|(k, v)| mb.get(k).is_some_and(|w| deep_eq(v, w)))
        && at(ma.get(key), mb.get(key))
}

fn same_values(a: &[&Value], b: &[&Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| deep_eq(x, y))
}

/// Drop the rows that change nothing: a set or clear whose path the result
/// leaves as live holds it. Config elements sharing a merge key stay
/// (their hazard says which of them the server drops) even where live
/// ends as it was. Returns whether a row left changes live.
pub(crate) fn keep_changes(rows: &mut Vec<FieldChange>, p: &Prediction<'_, '_>) -> bool {
    let mut changes = false;
    rows.retain(|r| {
        if r.action == FieldAction::Keep {
            return true;
        }
        let changed = surely_changes(r) || p.changes_at(&r.path);
        changes |= changed;
        changed || matches!(r.reason, Reason::SharedMergeKey { .. })
    });
    changes
}

/// A row whose own sides say the result differs from live, without the
/// merge: a scalar the config sets where live holds another value or none
/// (the patch sends it, and defaulting never replaces a value that is
/// there). The common change (an image bumped) costs no prediction. A
/// zero (`0`, `false`, `""`) is left to the prediction: the server stores
/// none of an `omitempty` field ([`crate::defaults`]).
fn surely_changes(r: &FieldChange) -> bool {
    let zero = |c: &Value| c == &Value::from(0) || c == &Value::Bool(false) || c == "";
    r.action == FieldAction::Set
        && matches!(r.reason, Reason::Differs | Reason::NotInLive)
        && r.config
            .as_ref()
            .is_some_and(|c| !(c.is_null() || c.is_object() || c.is_array() || zero(c)))
        && !r.path.is_under("stringData")
}
