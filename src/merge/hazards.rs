//! Hazards per field: what client-side apply does silently, in words.
//! Each is checked against kubectl in tests/plan.rs (the patch kubectl
//! sends, merged by kubectl's own code, must leave what the words say).

use super::owners::LazyOwners;
use super::strategic::deep_eq;
use super::{Cause, FieldAction, FieldChange, Hazard, HazardKind, Patch, PatchType, apply};
use crate::fieldpath::{self as path, Segment};
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
pub(crate) fn find(
    fields: &mut [FieldChange],
    owners: &LazyOwners,
    patch: Option<&Patch>,
    schema: Option<Schema<'_>>,
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
        let segs = path::parse(&f.path);
        if let Some(h) = duplicates(f, &segs, merged) {
            f.hazards.push(h);
        }
        let strategy = schema_at(schema, &segs).map(|s| s.list_strategy());
        let atomic =
            patch.kind == PatchType::Merge || matches!(strategy, None | Some(ListStrategy::Atomic));
        let merge_key = match strategy {
            Some(ListStrategy::MergeByKey(k)) if patch.kind == PatchType::Strategic => Some(k),
            _ => None,
        };
        if let Some(h) = removed_list(f, merge_key, owners) {
            f.hazards.push(h);
        }
        if atomic && let Some(h) = replaced_atomic(f, owners) {
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
        if !said && let Some(h) = overwrites(f) {
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
fn overwrites(f: &FieldChange) -> Option<Hazard> {
    if !matches!(f.cause, Cause::Intended | Cause::Removed)
        || !super::causes::overwrites_cluster_change(f)
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
                path::element(&f.path, k, v),
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

/// An atomic list replaced whole while live holds elements apply never
/// recorded: another writer's edits, lost.
fn replaced_atomic(f: &FieldChange, owners: &LazyOwners) -> Option<Hazard> {
    if f.action != FieldAction::Set {
        return None;
    }
    let config = f.config.as_ref()?.as_array()?;
    let live = f.live.as_ref()?.as_array()?;
    let recorded = f.last_applied.as_ref().and_then(Value::as_array);
    if recorded
        .is_some_and(|r| r.len() == live.len() && r.iter().zip(live).all(|(a, b)| deep_eq(a, b)))
    {
        return None;
    }
    let lost: Vec<String> = live
        .iter()
        .filter(|e| !config.iter().any(|c| deep_eq(c, e)))
        .filter(|e| !recorded.is_some_and(|r| r.iter().any(|x| deep_eq(x, e))))
        .map(gocompat::json)
        .collect();
    if lost.is_empty() {
        return None;
    }
    let who = owners.get().others(&f.path);
    Some(Hazard {
        kind: HazardKind::ReplacesOthersEdits,
        message: format!(
            "an atomic list: apply replaces it whole with the config's, and live holds \
             elements written{} that last-applied never had; lost: {}",
            if who.is_empty() {
                " in the cluster".to_string()
            } else {
                owned_by(&who)
            },
            lost.join(", ")
        ),
    })
}

/// `….containers[name=x].image` (or `initContainers`, `ephemeralContainers`).
fn is_container_image(p: &str) -> bool {
    matches!(
        path::parse(p).as_slice(),
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
        .others(&f.path)
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
