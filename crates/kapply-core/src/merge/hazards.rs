//! Hazards per field: what client-side apply does silently, in words.
//! Each is checked against kubectl in tests/plan.rs (the patch kubectl
//! sends, merged by kubectl's own code, must leave what the words say).

use super::owners::LazyOwners;
use super::strategic::deep_eq;
use super::{Cause, FieldAction, FieldChange, Hazard, HazardKind, Patch, PatchType, apply};
use crate::fieldpath::{self as path, FieldPath, Segment};
use crate::gocompat;
use crate::patchmeta::{ListStrategy, Schema};
use serde_json::Value;

/// The patch metadata at a field-plan path.
fn schema_at<'s>(root: Option<Schema<'s>>, segs: &[Segment]) -> Option<Schema<'s>> {
    let mut cur = root?;
    for s in segs {
        cur = match s {
            Segment::Key(k) => cur.field(k)?,
            Segment::Index(_) | Segment::Element(..) => cur.items()?,
        };
    }
    Some(cur)
}

fn owned_by(owners: &[&str]) -> String {
    if owners.is_empty() {
        String::new()
    } else {
        format!(" by {}", owners.join(", "))
    }
}

/// Whether a manager is an autoscaler (the HPA controller writes
/// spec.replicas through the scale subresource).
fn is_autoscaler(manager: &str) -> bool {
    let m = manager.to_ascii_lowercase();
    m.contains("horizontal-pod-autoscaler") || m.contains("autoscaler") || m.contains("hpa")
}

/// Find the hazards of every changed row (live: the one `owners` reads).
/// `patch`: what apply sends
/// (`None`: nothing is sent, nothing is lost).
/// `result`: the object the server will hold after the patch (defaulted;
/// `None` when unknown): what is lost and what comes back is read there.
pub(crate) fn find<'r>(
    fields: &mut [FieldChange],
    owners: &LazyOwners,
    patch: Option<&Patch>,
    schema: Option<Schema<'_>>,
    predicted: &dyn Fn() -> Option<&'r Value>,
) {
    let Some(patch) = patch else {
        return;
    };
    let live = owners.live();
    // The object as the server will merge it: a whole merge of the object,
    // needed only by the rare rows whose elements share a merge key.
    let result = std::cell::OnceCell::new();
    let merged = || {
        result
            .get_or_init(|| match patch.kind {
                PatchType::Strategic => apply::apply_strategic(live, &patch.body, schema).ok(),
                PatchType::Merge => Some(apply::apply_merge(live, &patch.body)),
            })
            .as_ref()
    };
    for f in fields.iter_mut() {
        if f.action == FieldAction::Keep {
            continue;
        }
        let segs = f.path.segments();
        if let Some(h) = duplicates(f, &segs, merged) {
            f.hazards.push(h);
        }
        let strategy = schema_at(schema, &segs).map(|s| s.list_strategy());
        // A list replaced whole: a custom resource's, or one without a
        // patch strategy; never a keyed element (config elements sharing a
        // merge key are `duplicates`' row).
        let element = matches!(segs.last(), Some(Segment::Element(..)));
        let atomic = !element
            && (patch.kind == PatchType::Merge
                || matches!(strategy, None | Some(ListStrategy::Atomic)));
        let merge_key = match strategy {
            Some(ListStrategy::MergeByKey(k)) if patch.kind == PatchType::Strategic => Some(k),
            _ => None,
        };
        if let Some(h) = removed_list(f, merge_key, owners) {
            f.hazards.push(h);
        }
        if atomic && let Some(h) = replaced_atomic(f, owners, predicted) {
            f.hazards.push(h);
        }
        if let Some(h) = hotfix(f) {
            f.hazards.push(h);
        }
        if let Some(h) = autoscaled(f, owners) {
            f.hazards.push(h);
        }
        // Said once: a list hazard already names the cluster's change.
        let said = f.hazards.iter().any(|h| {
            matches!(
                h.kind,
                HazardKind::DeletesOthersElements | HazardKind::ReplacesOthersEdits
            )
        });
        if !said && let Some(h) = overwrites(f, owners) {
            f.hazards.push(h);
        }
    }
}

/// A value as the hazards' words show it: a string as it is, anything else
/// as JSON.
fn shown(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(v) => gocompat::json(v),
        None => "-".into(),
    }
}

/// The config changes (or removes) a field whose live value someone
/// changed since the last apply: `apply replaces nginx:1.14-hotfix, set by
/// kubectl-set at T, with nginx:1.16`.
fn overwrites(f: &FieldChange, owners: &LazyOwners) -> Option<Hazard> {
    if !matches!(f.cause, Cause::Intended | Cause::Removed)
        || !super::causes::overwrites_cluster_change(f, owners)
    {
        return None;
    }
    let mut by = match &f.owner {
        Some(o) => format!("set by {o}"),
        None => "changed in the cluster".to_string(),
    };
    if let Some(t) = &f.changed_at {
        by.push_str(&format!(" at {t}"));
    }
    let was = shown(f.last_applied.as_ref());
    let message = match (&f.live, &f.config) {
        (Some(l), Some(_)) if f.action == FieldAction::Set => format!(
            "apply replaces {}, {by}, with {} (last applied: {was})",
            shown(Some(l)),
            shown(f.config.as_ref())
        ),
        (Some(l), _) => format!(
            "apply deletes {}, {by} (last applied: {was})",
            shown(Some(l))
        ),
        (None, _) => format!(
            "apply writes {} where the field was deleted in the cluster (last applied: {was})",
            shown(f.config.as_ref())
        ),
    };
    Some(Hazard {
        kind: HazardKind::OverwritesClusterChange,
        message,
    })
}

/// Config elements sharing a merge key: say which one the server keeps
/// (the merged result) and which are lost.
fn duplicates<'r>(
    f: &FieldChange,
    segs: &[Segment],
    merged: impl FnOnce() -> Option<&'r Value>,
) -> Option<Hazard> {
    let Some((Segment::Element(key, want), parent)) = segs.split_last() else {
        return None;
    };
    let dups = f.config.as_ref()?.as_array()?;
    if dups.len() < 2 {
        return None;
    }
    let kept: Vec<&Value> = merged()
        .and_then(|r| path::get(r, parent))
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter(|e| path::element_matches(e, key, want))
                .collect()
        })
        .unwrap_or_default();
    let lost: Vec<String> = dups
        .iter()
        .filter(|d| !kept.iter().any(|k| deep_eq(k, d)))
        .map(gocompat::json)
        .collect();
    // The patch may carry them all untouched (a list live does not have
    // yet is inserted whole): nothing is lost then.
    if lost.is_empty() {
        return None;
    }
    let kept_text: Vec<String> = kept.iter().map(|v| gocompat::json(v)).collect();
    let mut message = format!(
        "{} config elements share the merge key {key}={want}: client-side apply sends them \
         under that one key and the server merges them into one",
        dups.len()
    );
    if !kept_text.is_empty() {
        message.push_str(&format!("; live keeps {}", kept_text.join(", ")));
    }
    message.push_str(&format!(" and loses {}", lost.join(", ")));
    Some(Hazard {
        kind: HazardKind::DuplicateMergeKey,
        message,
    })
}

/// A list removed whole from the config: the patch deletes it, elements
/// other writers added included.
fn removed_list(f: &FieldChange, merge_key: Option<&str>, owners: &LazyOwners) -> Option<Hazard> {
    if f.action != FieldAction::Clear || f.config.is_some() {
        return None;
    }
    let live = f.live.as_ref()?.as_array()?;
    let recorded: Vec<Value> = f
        .last_applied
        .as_ref()
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut theirs = vec![];
    for e in live {
        let (name, mine) = match merge_key.and_then(|k| e.get(k).map(|v| (k, v))) {
            Some((k, v)) => (
                f.path.element(k, v).into_string(),
                recorded
                    .iter()
                    .any(|r| r.get(k).is_some_and(|x| deep_eq(x, v))),
            ),
            None => (
                format!("{}[{}]", f.path, path::element_value(e)),
                recorded.iter().any(|r| deep_eq(r, e)),
            ),
        };
        if mine {
            continue;
        }
        let who = owners.get().others(&name);
        let label = match merge_key.and_then(|k| e.get(k).map(|v| (k, v))) {
            Some((k, v)) => format!("{k}={}", path::element_value(v)),
            None => gocompat::json(e),
        };
        theirs.push(format!("{label} (added{})", owned_by(&who)));
    }
    if theirs.is_empty() {
        return None;
    }
    Some(Hazard {
        kind: HazardKind::DeletesOthersElements,
        message: format!(
            "the list is gone from the config, so apply deletes it whole, with the elements \
             other writers added: {}",
            theirs.join(", ")
        ),
    })
}

/// An atomic list replaced whole: what the result loses of live that
/// last-applied never had (another writer's edits), and what comes back
/// that was deleted in the cluster, both read from the predicted result.
fn replaced_atomic<'r>(
    f: &FieldChange,
    owners: &LazyOwners,
    predicted: &dyn Fn() -> Option<&'r Value>,
) -> Option<Hazard> {
    if f.action != FieldAction::Set || !f.config.as_ref()?.is_array() {
        return None;
    }
    f.live.as_ref()?.as_array()?;
    // The whole result is made only for such a row (most plans have none).
    let after = predicted().map(|r| super::predict::values_at(r, &f.path));
    let after = match after.as_deref() {
        Some([one]) => Some(*one),
        Some(_) => None,
        // Unknown result: the config's list is what the patch puts there.
        None => f.config.as_ref(),
    };
    let facts = list_facts(f.live.as_ref(), after, f.last_applied.as_ref());
    if facts.lost.is_empty() && facts.back.is_empty() {
        return None;
    }
    let who = owners.get().others(f.path.as_str());
    Some(Hazard {
        kind: HazardKind::ReplacesOthersEdits,
        message: facts.message(&who, f.path.as_str()),
    })
}

/// What replacing a list whole does to live, read from the result: the
/// parts of live lost that last-applied never had (other writers' edits),
/// and the parts of last-applied that were deleted in the cluster and come
/// back. Paths are relative to the list (`[name=g].rules[alert=X]`,
/// `["--debug"]`); an element named by a key its list's elements all hold
/// (`name`, `alert`, ...), else by its value or index.
#[derive(Debug, Default, PartialEq)]
pub struct ListFacts {
    pub lost: Vec<(String, Value)>,
    pub back: Vec<(String, Value)>,
}

impl ListFacts {
    /// The hazard's words; `who`: the other writers of the list, `list`:
    /// its path. An element named by its value is shown as that value.
    pub fn message(&self, who: &[&str], list: &str) -> String {
        let item = |(p, v): &(String, Value)| {
            let value = gocompat::json(v);
            // An element named by its value: the value, or where its list is.
            match p.strip_suffix(&format!("[{value}]")) {
                Some("") => value,
                Some(parent) => format!("{list}{parent}: {value}"),
                None => format!("{list}{p}={value}"),
            }
        };
        let mut s = String::from("an atomic list: apply replaces it whole with the config's");
        if !self.lost.is_empty() {
            let by = if who.is_empty() {
                " in the cluster".to_string()
            } else {
                owned_by(who)
            };
            s.push_str(&format!(
                "; lost (written{by}, never applied): {}",
                self.lost.iter().map(item).collect::<Vec<_>>().join(", ")
            ));
        }
        if !self.back.is_empty() {
            s.push_str(&format!(
                "; comes back (deleted in the cluster): {}",
                self.back.iter().map(item).collect::<Vec<_>>().join(", ")
            ));
        }
        s
    }
}

/// [`ListFacts`] of one list: live's, the result's and last-applied's.
pub fn list_facts(
    live: Option<&Value>,
    result: Option<&Value>,
    last_applied: Option<&Value>,
) -> ListFacts {
    let mut facts = ListFacts::default();
    facts_at(&mut String::new(), live, result, last_applied, &mut facts);
    facts
}

fn facts_at(
    at: &mut String,
    live: Option<&Value>,
    result: Option<&Value>,
    la: Option<&Value>,
    out: &mut ListFacts,
) {
    match (live, result) {
        (Some(l), Some(r)) if deep_eq(l, r) => {}
        (Some(Value::Object(lm)), Some(Value::Object(rm))) => {
            let keys: std::collections::BTreeSet<&String> = lm.keys().chain(rm.keys()).collect();
            let len = at.len();
            for k in keys {
                path::push_key(at, k);
                let la_k = la.and_then(|a| a.get(k.as_str()));
                facts_at(at, lm.get(k), rm.get(k), la_k, out);
                at.truncate(len);
            }
        }
        (Some(Value::Array(ll)), Some(Value::Array(rl))) => {
            let la_l = la.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            let len = at.len();
            match id_key(ll, rl) {
                Some(k) => {
                    fn find<'a>(list: &'a [Value], k: &str, id: &Value) -> Option<&'a Value> {
                        list.iter()
                            .find(|e| e.get(k).is_some_and(|x| deep_eq(x, id)))
                    }
                    let mut ids: Vec<&Value> = vec![];
                    for e in ll.iter().chain(rl) {
                        if let Some(id) = e.get(k)
                            && !ids.iter().any(|x| deep_eq(x, id))
                        {
                            ids.push(id);
                        }
                    }
                    for id in ids {
                        path::push_element(at, k, id);
                        facts_at(at, find(ll, k, id), find(rl, k, id), find(la_l, k, id), out);
                        at.truncate(len);
                    }
                }
                None => {
                    // Elements by value: live's not in the result, the
                    // result's not in live.
                    for e in ll.iter().filter(|e| !rl.iter().any(|x| deep_eq(x, e))) {
                        if !la_l.iter().any(|x| deep_eq(x, e)) {
                            out.lost.push((element_at(at, e), e.clone()));
                        }
                    }
                    for e in rl.iter().filter(|e| !ll.iter().any(|x| deep_eq(x, e))) {
                        if la_l.iter().any(|x| deep_eq(x, e)) {
                            out.back.push((element_at(at, e), e.clone()));
                        }
                    }
                }
            }
        }
        (l, r) => {
            // A value replaced, gone or new: lost where live's is not
            // last-applied's, back where the result's is last-applied's and
            // live lacks it.
            if let Some(l) = l
                && !la.is_some_and(|a| deep_eq(a, l))
            {
                out.lost.push((at.clone(), l.clone()));
            }
            if let Some(r) = r
                && la.is_some_and(|a| deep_eq(a, r))
                && l.is_none()
            {
                out.back.push((at.clone(), r.clone()));
            }
        }
    }
}

/// A list element named by its value: `at["--debug"]`, `at[{"a":1}]`.
fn element_at(at: &str, e: &Value) -> String {
    format!("{at}[{}]", gocompat::json(e))
}

/// The key that names the elements of both lists: one every element (a map)
/// holds as a scalar, unique within each list.
fn id_key<'v>(a: &'v [Value], b: &[Value]) -> Option<&'v str> {
    const KEYS: [&str; 8] = [
        "name",
        "alert",
        "record",
        "key",
        "id",
        "port",
        "containerPort",
        "mountPath",
    ];
    KEYS.iter()
        .find(|k| {
            [a, b].iter().all(|list| {
                let ids: Vec<&Value> = list
                    .iter()
                    .filter_map(|e| e.get(**k).filter(|v| !(v.is_object() || v.is_array())))
                    .collect();
                ids.len() == list.len()
                    && ids
                        .iter()
                        .enumerate()
                        .all(|(i, x)| !ids[..i].iter().any(|y| deep_eq(x, y)))
            }) && !(a.is_empty() && b.is_empty())
        })
        .copied()
}

/// `….containers[name=x].image` (or `initContainers`, `ephemeralContainers`).
fn is_container_image(p: &FieldPath) -> bool {
    matches!(
        p.segments().as_slice(),
        [.., Segment::Key(list), Segment::Element(..) | Segment::Index(_), Segment::Key(image)]
            if image == "image" && list.ends_with("ontainers")
    )
}

/// A drifted container image: someone rolled out a hotfix in the cluster.
fn hotfix(f: &FieldChange) -> Option<Hazard> {
    if f.cause != Cause::Drift || !is_container_image(&f.path) {
        return None;
    }
    let mut by = match &f.owner {
        Some(o) => format!(" by {o}"),
        None => String::new(),
    };
    if let Some(t) = &f.changed_at {
        by.push_str(&format!(" at {t}"));
    }
    Some(Hazard {
        kind: HazardKind::RevertsHotfix,
        message: format!(
            "reverts a hotfix: the image was changed in the cluster{by} to {}; apply rolls \
             it back to {}",
            f.live
                .as_ref()
                .map(gocompat::json)
                .unwrap_or_else(|| "-".into()),
            f.config
                .as_ref()
                .map(gocompat::json)
                .unwrap_or_else(|| "-".into()),
        ),
    })
}

/// spec.replicas set while an autoscaler owns it.
fn autoscaled(f: &FieldChange, owners: &LazyOwners) -> Option<Hazard> {
    if f.path != "spec.replicas" || f.action != FieldAction::Set {
        return None;
    }
    let scalers: Vec<&str> = owners
        .get()
        .others(f.path.as_str())
        .into_iter()
        .filter(|m| is_autoscaler(m))
        .collect();
    if scalers.is_empty() {
        return None;
    }
    Some(Hazard {
        kind: HazardKind::FightsAutoscaler,
        message: format!(
            "an autoscaler ({}) owns spec.replicas: apply sets it back from {} to {}, and the \
             autoscaler scales it again; leave spec.replicas out of the config",
            scalers.join(", "),
            f.live
                .as_ref()
                .map(gocompat::json)
                .unwrap_or_else(|| "-".into()),
            f.config
                .as_ref()
                .map(gocompat::json)
                .unwrap_or_else(|| "-".into()),
        ),
    })
}
