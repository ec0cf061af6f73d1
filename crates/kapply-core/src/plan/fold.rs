//! Repeated changes: the same field change (same path, same live and
//! resulting value, same cause and hazards) carried by several objects,
//! found once so that `kapply diff`, the Markdown report and the TUI's
//! changes view show it once ("image nginx:1.25 → nginx:1.26 in 37
//! Deployments") instead of once per object.

use super::{ObjectAction, ObjectPlan};
use crate::fieldpath::FieldPath;
use crate::merge::{Cause, FieldAction, FieldChange};
use serde_json::Value;
use std::borrow::Borrow;
use std::collections::HashMap;

/// One change carried by at least two objects.
#[derive(Debug, Clone, PartialEq)]
pub struct RepeatedChange {
    /// The row as the first object carrying it has it (path, sides,
    /// action, cause, hazards).
    pub row: FieldChange,
    /// The objects carrying it: indexes into the objects given to
    /// [`repeated_changes`], in their order.
    pub objects: Vec<usize>,
    /// The cause in words when every object has the same words (drift by
    /// the same writer at the same time), else `None`.
    pub same_cause_text: bool,
}

/// What makes two rows one change. The owner and time are not part of it
/// (the same image bump reverted in 40 objects is one change), the cause
/// and the hazards' words are (a drift revert is not an intended change).
#[derive(PartialEq, Eq, Hash)]
struct Key {
    path: FieldPath,
    /// Set or clear (kept rows do not fold).
    clear: bool,
    cause: Cause,
    live: Option<String>,
    result: Option<String>,
    hazards: Vec<String>,
}

fn side(v: &Option<Value>) -> Option<String> {
    v.as_ref().map(crate::gocompat::json)
}

/// Whether `obj`'s rows take part in folding: updates only (a created
/// object's fields are all new, a pruned object has none), and never a
/// Secret (its values are shown masked, so two different changes would
/// read alike).
pub fn foldable(obj: &ObjectPlan) -> bool {
    obj.action == ObjectAction::Update && obj.kind != "Secret"
}

/// Whether a row is a change that can fold (not a kept field).
pub fn foldable_row(f: &FieldChange) -> bool {
    f.action != FieldAction::Keep
}

/// The changes carried by two objects or more, in the order of their first
/// appearance (so the same plan always gives the same list).
pub fn repeated_changes<O: Borrow<ObjectPlan>>(objects: &[O]) -> Vec<RepeatedChange> {
    let mut all = distinct_changes(objects);
    all.retain(|c| c.objects.len() >= 2);
    all
}

/// Every distinct change of the objects' updates (carried by one object
/// or more), in the order of their first appearance: the TUI's changes
/// view.
pub fn distinct_changes<O: Borrow<ObjectPlan>>(objects: &[O]) -> Vec<RepeatedChange> {
    let mut index: HashMap<Key, usize> = HashMap::new();
    let mut all: Vec<RepeatedChange> = Vec::new();
    for (i, obj) in objects.iter().enumerate() {
        let obj = obj.borrow();
        if !foldable(obj) {
            continue;
        }
        for f in obj.fields.iter().filter(|f| foldable_row(f)) {
            let key = Key {
                path: f.path.clone(),
                clear: f.action == FieldAction::Clear,
                cause: f.cause,
                live: side(&f.live),
                result: side(&f.config),
                hazards: f.hazards.iter().map(|h| h.message.clone()).collect(),
            };
            match index.get(&key) {
                Some(&n) => {
                    let c = &mut all[n];
                    if c.objects.last() != Some(&i) {
                        c.objects.push(i);
                    }
                    c.same_cause_text &= c.row.explain(crate::merge::Form::Text)
                        == f.explain(crate::merge::Form::Text);
                }
                None => {
                    index.insert(key, all.len());
                    all.push(RepeatedChange {
                        row: f.clone(),
                        objects: vec![i],
                        same_cause_text: true,
                    });
                }
            }
        }
    }
    all
}

/// Per object (by index), the repeated changes it carries, by path: which
/// of its rows are folded and into which change (numbered from 1).
pub fn folded_rows(changes: &[RepeatedChange]) -> HashMap<usize, HashMap<FieldPath, usize>> {
    let mut by_object: HashMap<usize, HashMap<FieldPath, usize>> = HashMap::new();
    for (n, c) in changes.iter().enumerate() {
        for &i in &c.objects {
            by_object
                .entry(i)
                .or_default()
                .insert(c.row.path.clone(), n + 1);
        }
    }
    by_object
}

impl RepeatedChange {
    /// The cause in words: the row's own when every object shares them,
    /// else the cause alone (the writers or times differ).
    pub fn cause_text(&self) -> String {
        self.cause(crate::merge::Form::Text)
    }

    /// The change's cause in `form`, worded by the rows' one home
    /// ([`FieldChange::explain_group`]).
    pub fn cause(&self, form: crate::merge::Form) -> String {
        self.row.explain_group(form, self.same_cause_text)
    }

    /// "37 Deployments", or "37 objects (30 Deployments, 7 StatefulSets)"
    /// when kinds differ.
    pub fn carried_by<O: Borrow<ObjectPlan>>(&self, objects: &[O]) -> String {
        let mut kinds: Vec<(&str, usize)> = Vec::new();
        for &i in &self.objects {
            let k = objects[i].borrow().kind.as_str();
            match kinds.iter_mut().find(|(kind, _)| *kind == k) {
                Some((_, n)) => *n += 1,
                None => kinds.push((k, 1)),
            }
        }
        let count = |(k, n): &(&str, usize)| format!("{n} {}", plural_kind(k, *n));
        match kinds.as_slice() {
            [one] => count(one),
            _ => format!(
                "{} objects ({})",
                self.objects.len(),
                kinds.iter().map(count).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

/// A kind's name for `n` objects: `Deployment`, `Deployments`,
/// `NetworkPolicies`, `Ingresses`.
pub fn plural_kind(kind: &str, n: usize) -> String {
    if n == 1 {
        return kind.to_string();
    }
    if let Some(stem) = kind.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'o', 'u'])
    {
        return format!("{stem}ies");
    }
    if kind.ends_with(['s', 'x']) || kind.ends_with("sh") || kind.ends_with("ch") {
        return format!("{kind}es");
    }
    format!("{kind}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_made_plural_as_people_write_them() {
        assert_eq!(plural_kind("Deployment", 1), "Deployment");
        assert_eq!(plural_kind("Deployment", 2), "Deployments");
        assert_eq!(plural_kind("NetworkPolicy", 3), "NetworkPolicies");
        assert_eq!(plural_kind("Ingress", 3), "Ingresses");
        assert_eq!(plural_kind("Gateway", 3), "Gateways");
    }
}
