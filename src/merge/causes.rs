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
    let defaulted = server_defaulted(fields, owners);
    for f in fields.iter_mut() {
        f.owner = None;
        f.changed_at = None;
        if f.action == FieldAction::Keep {
            let of = owners.get().of(&f.path);
            let owned = of.len() > 0;
            let others: Vec<&str> = of.filter(|m| !is_apply_manager(m)).collect();
            if owned && others.is_empty() {
                // Apply's manager alone wrote it, yet neither the config nor
                // last-applied names it: the server defaulted it when apply
                // wrote the object, or apply let it go (`kapply release`,
                // a hand edit of the annotation): no longer apply's, it is
                // another writer's from now on.
                if defaulted.contains(&f.path) {
                    f.cause = Cause::ServerDefault;
                } else {
                    f.cause = Cause::OtherWriter;
                    f.reason = Reason::Released;
                }
            } else {
                f.cause = Cause::OtherWriter;
                f.owner = (!others.is_empty()).then(|| others.join(", "));
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
}

/// The kept rows apply's manager alone owns whose live value is the one
/// the server gives the field when it is unset: the live object with those
/// fields taken out and defaulted again gives them back. A value the
/// server allocates (a Service's cluster IP) counts as given back.
fn server_defaulted(
    fields: &[FieldChange],
    owners: &LazyOwners,
) -> std::collections::HashSet<String> {
    let live = owners.live();
    let candidates: Vec<&FieldChange> = fields
        .iter()
        .filter(|f| f.action == FieldAction::Keep)
        .filter(|f| {
            let mut of = owners.get().of(&f.path);
            of.len() > 0 && of.all(is_apply_manager)
        })
        .collect();
    if candidates.is_empty() {
        return Default::default();
    }
    let mut bare = live.clone();
    // Last row first: an index path stays valid while later ones go.
    for f in candidates.iter().rev() {
        path::remove(&mut bare, &path::parse(&f.path));
    }
    let ip = live
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    crate::defaults::apply(&mut bare, &mut || ip.clone());
    candidates
        .into_iter()
        .filter(|f| {
            let segs = path::parse(&f.path);
            matches!((path::get(live, &segs), path::get(&bare, &segs)),
                (Some(a), Some(b)) if deep_eq(a, b))
        })
        .map(|f| f.path.clone())
        .collect()
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
