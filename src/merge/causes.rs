//! The cause of every field row (intended change, drift, new, removed,
//! server default, other writer, unmanaged) and its hazards: what kubectl
//! does there without saying so.

use super::owners::{LazyOwners, is_apply_manager};
use super::strategic::deep_eq;
use super::{Cause, FieldAction, FieldChange, LAST_APPLIED, Reason};
use crate::fieldpath as path;
use serde_json::Value;

/// Equal as apply sees them: an explicit null and an absent value both
/// leave the field unset.
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => deep_eq(x, y),
        (None, None) => true,
        (Some(Value::Null), None) | (None, Some(Value::Null)) => true,
        _ => false,
    }
}

/// Decide the cause (and the owner, and when it wrote) of every row, from
/// the live object's managedFields. `last_applied`: the recorded
/// configuration, `None` when the live object has no annotation.
pub fn classify(fields: &mut [FieldChange], live: &Value, last_applied: Option<&Value>) {
    classify_with(fields, &LazyOwners::new(live), last_applied);
}

/// [`classify`] with the owners read (when a row needs them) by the caller.
pub(crate) fn classify_with(
    fields: &mut [FieldChange],
    owners: &LazyOwners,
    last_applied: Option<&Value>,
) {
    let annotation = path::key("metadata.annotations", LAST_APPLIED);
    // Kept rows apply's manager alone wrote: their cause waits for the
    // server defaults, decided for all of them at once.
    let mut alone = vec![];
    for (i, f) in fields.iter_mut().enumerate() {
        f.owner = None;
        f.changed_at = None;
        if f.action == FieldAction::Keep {
            let of = owners.get().of(&f.path);
            let owned = of.len() > 0;
            let mut others = of.filter(|m| !is_apply_manager(m)).peekable();
            if owned && others.peek().is_none() {
                // Apply's manager alone wrote it, yet neither the config nor
                // last-applied names it: the server defaulted it when apply
                // wrote the object, or apply let it go (`kapply release`,
                // a hand edit of the annotation): no longer apply's, it is
                // another writer's from now on.
                alone.push(i);
            } else {
                f.cause = Cause::OtherWriter;
                f.owner = others.peek().is_some().then(|| join(others));
            }
            continue;
        }
        if last_applied.is_none() {
            f.cause = Cause::Unmanaged;
            continue;
        }
        let (c, l, a) = (f.config.as_ref(), f.live.as_ref(), f.last_applied.as_ref());
        f.cause = if f.path == annotation {
            Cause::Intended
        } else if c.is_none() {
            // Not in the config: removed from it, or dropped by
            // $retainKeys because of an intended change nearby.
            if a.is_some() {
                Cause::Removed
            } else {
                Cause::Intended
            }
        } else if a.is_none() {
            Cause::New
        } else if same(c, a) && !same(l, a) && !is_duplicates_row(f) {
            Cause::Drift
        } else {
            Cause::Intended
        };
        if f.cause == Cause::Drift {
            let owners = owners.get();
            let others = owners.others(&f.path);
            if !others.is_empty() {
                f.owner = Some(others.join(", "));
                // The latest write of the writers named: managedFields
                // keeps one time per manager entry.
                f.changed_at = others
                    .iter()
                    .filter_map(|m| owners.writer(m).and_then(|w| w.time.clone()))
                    .max();
            }
        }
    }
    let defaulted = server_defaulted(fields, &alone, owners.live());
    for (&i, defaulted) in alone.iter().zip(defaulted) {
        let f = &mut fields[i];
        if defaulted {
            f.cause = Cause::ServerDefault;
        } else {
            f.cause = Cause::OtherWriter;
            f.reason = Reason::Released;
        }
    }
}

/// Manager names joined by ", ".
fn join<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut s = String::new();
    for (i, n) in names.enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        s.push_str(n);
    }
    s
}

/// Of the kept rows `alone` (indexes into `fields`, in row order) apply's
/// manager alone owns, whether the live value is the one the server gives
/// the field when it is unset: the live object with those fields taken out
/// and defaulted again gives them back. A value the server allocates (a
/// Service's cluster IP) counts as given back. Only the part of the
/// object defaulting reads is copied (`defaults::defaultable_copy`).
fn server_defaulted(fields: &[FieldChange], alone: &[usize], live: &Value) -> Vec<bool> {
    if alone.is_empty() {
        return vec![];
    }
    let Some(mut bare) = crate::defaults::defaultable_copy(live) else {
        // A kind the server defaults nothing of.
        return vec![false; alone.len()];
    };
    // Each path read once: its steps, each with where it ends in the text.
    let paths: Vec<(&str, Steps)> = alone
        .iter()
        .map(|&i| {
            (
                fields[i].path.as_str(),
                path::read(&fields[i].path).collect(),
            )
        })
        .collect();
    take_out(&mut bare, &paths);
    let ip = live
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .unwrap_or_default();
    crate::defaults::apply(&mut bare, &mut || ip.to_string());
    // Each path followed in both objects from where its steps part from
    // the previous path's (the rows come in walk order: long common
    // prefixes). Steps that end before the first byte two paths differ
    // in are the same steps.
    let mut at: Vec<(Option<&Value>, Option<&Value>)> = vec![];
    let mut prev: &[(path::Step, usize)] = &[];
    let mut prev_text = "";
    paths
        .iter()
        .map(|(p, steps)| {
            let common = p
                .bytes()
                .zip(prev_text.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            at.truncate(prev.iter().take_while(|(_, end)| *end < common).count());
            let (mut l, mut b) = at.last().copied().unwrap_or((Some(live), Some(&bare)));
            for (step, _) in &steps[at.len()..] {
                l = l.and_then(|v| path::get_step(v, step));
                b = b.and_then(|v| path::get_step(v, step));
                at.push((l, b));
            }
            (prev, prev_text) = (steps, p);
            matches!((l, b), (Some(a), Some(b)) if deep_eq(a, b))
        })
        .collect()
}

/// A path's steps, each with the byte offset it ends at.
type Steps<'p> = Vec<(path::Step<'p>, usize)>;

/// Remove the values at `paths` (field-plan paths in row order, with their
/// steps) from `v`, the last first, as `fieldpath::remove` one by one
/// would: an index path stays valid while later ones go. Paths under one
/// parent are taken out of it with one descent.
fn take_out(v: &mut Value, paths: &[(&str, Steps)]) {
    // Where a path's parent ends in its text.
    let cut = |steps: &Steps| steps.len().checked_sub(2).map_or(0, |i| steps[i].1);
    let mut i = paths.len();
    while i > 0 {
        let (text, steps) = &paths[i - 1];
        let cut_at = cut(steps);
        let Some(((last, _), parent)) = steps.split_last() else {
            i -= 1;
            continue;
        };
        // The rows before it under the same parent, unless one names a
        // key an element of the parent is matched by (taking it out
        // would change what the parent path finds).
        let by_key = |s: &path::Step| match s {
            path::Step::Key(k) => !parent
                .iter()
                .any(|(p, _)| matches!(p, path::Step::Element(ek, _) if ek == k)),
            _ => true,
        };
        let mut j = i - 1;
        let mut group = vec![last];
        if by_key(last) {
            while j > 0 {
                let (ptext, psteps) = &paths[j - 1];
                if ptext.get(..cut_at) != Some(&text[..cut_at]) {
                    break;
                }
                match psteps.last() {
                    Some((s, _))
                        if cut(psteps) == cut_at && psteps.len() == steps.len() && by_key(s) =>
                    {
                        group.push(s);
                        j -= 1;
                    }
                    _ => break,
                }
            }
        }
        let mut node = Some(&mut *v);
        for (s, _) in parent {
            node = node.and_then(|n| path::get_step_mut(n, s));
        }
        if let Some(node) = node {
            for s in group {
                path::remove_step(node, s);
            }
        }
        i = j;
    }
}

/// Whether any field makes apply revert a change made in the cluster.
pub fn reverts_drift(fields: &[FieldChange]) -> bool {
    fields
        .iter()
        .any(|f| f.cause == Cause::Drift && f.action != FieldAction::Keep)
}

/// The row of config elements sharing a merge key (fields.rs): an element
/// path whose config side is the list of those elements. Live differing
/// from last-applied there is apply's own doing (the server kept one), not
/// a drift.
fn is_duplicates_row(f: &FieldChange) -> bool {
    f.path.ends_with(']') && f.config.as_ref().is_some_and(Value::is_array)
}
