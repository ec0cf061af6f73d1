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
use crate::fieldpath::{self as path, Step};
use crate::patchmeta::Schema;
use serde_json::Value;
use std::cell::OnceCell;

/// The predicted result of one apply, built as far as a question needs it:
/// the merge is made once; the server's defaults only for the rows whose
/// difference defaulting could undo.
pub(crate) struct Prediction<'l> {
    live: &'l Value,
    /// The patch merged into live, without defaults; `None` when there is
    /// no patch (the result is live).
    merged: Option<Value>,
    /// The patch could not be merged here (the server would refuse it, or
    /// this merge does not know how): nothing is decided from the result.
    unknown: bool,
    /// `merged` defaulted as the server defaults an object it stores.
    defaulted: OnceCell<Value>,
}

impl<'l> Prediction<'l> {
    pub fn new(live: &'l Value, patch: Option<&Patch>, schema: Option<Schema<'_>>) -> Self {
        let (merged, unknown) = match patch {
            None => (None, false),
            Some(p) => match p.kind {
                PatchType::Strategic => match apply::apply_strategic(live, &p.body, schema) {
                    Ok(v) => (Some(v), false),
                    Err(_) => (None, true),
                },
                PatchType::Merge => (Some(apply::apply_merge(live, &p.body)), false),
            },
        };
        Prediction {
            live,
            merged,
            unknown,
            defaulted: OnceCell::new(),
        }
    }

    /// The result as the server will hold it (its defaults applied), or
    /// `None` when it is not known.
    pub fn result(&self) -> Option<&Value> {
        if self.unknown {
            return None;
        }
        Some(match &self.merged {
            None => self.live,
            Some(m) => self.defaulted.get_or_init(|| defaulted(m, self.live)),
        })
    }

    /// Whether the result differs from live at `row_path` (a field plan
    /// path; a keyed element names every element with its key). Unknown
    /// results count as changed.
    pub fn changes_at(&self, row_path: &str) -> bool {
        if self.unknown {
            return true;
        }
        let Some(merged) = &self.merged else {
            return false;
        };
        let (before, raw) = (values_at(self.live, row_path), values_at(merged, row_path));
        if same_values(&before, &raw) {
            return false;
        }
        // Defaulting fills in what is absent and folds a Secret's
        // stringData: it can only give back a value the merge removed,
        // complete a map or list, or take stringData away. A scalar the
        // merge changed stays changed.
        let may_default = raw.is_empty()
            || raw.len() != before.len()
            || raw.iter().any(|v| v.is_object() || v.is_array())
            || row_path.starts_with("stringData");
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
        if self.unknown {
            return true;
        }
        let Some(merged) = &self.merged else {
            return false;
        };
        let eq = |a: &Value, b: &Value| {
            if beyond_annotation {
                eq_but_annotation(a, b)
            } else {
                deep_eq(a, b)
            }
        };
        if eq(merged, self.live) {
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
pub fn values_at<'v>(v: &'v Value, row_path: &str) -> Vec<&'v Value> {
    let mut cur = vec![v];
    for (step, _) in path::read(row_path) {
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
pub(crate) fn keep_changes(rows: &mut Vec<FieldChange>, p: &Prediction<'_>) -> bool {
    let mut changes = false;
    rows.retain(|r| {
        if r.action == FieldAction::Keep {
            return true;
        }
        let changed = p.changes_at(&r.path);
        changes |= changed;
        changed || matches!(r.reason, Reason::SharedMergeKey { .. })
    });
    changes
}
