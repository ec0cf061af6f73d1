//! Partial apply and release: configurations that take only some of a
//! plan's field changes, and last-applied without released fields.

use super::ObjectPlan;
use super::build::str_at;
use crate::merge::path::{self, Segment};
use crate::merge::{self, FieldAction, LAST_APPLIED};
use crate::patchmeta::PatchMeta;
use serde_json::{Map, Value};

fn remove_path(v: &mut Value, segs: &[Segment]) {
    let Some((last, parent)) = segs.split_last() else {
        return;
    };
    let mut cur = v;
    for s in parent {
        let next = match s {
            Segment::Key(k) => cur.get_mut(k),
            Segment::Index(i) => cur.get_mut(*i),
            Segment::Element(k, want) => cur
                .as_array_mut()
                .and_then(|a| a.iter_mut().find(|e| path::element_matches(e, k, want))),
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    match last {
        Segment::Key(k) => {
            if let Some(m) = cur.as_object_mut() {
                m.remove(k);
            }
        }
        Segment::Index(i) => {
            if let Some(a) = cur.as_array_mut()
                && *i < a.len()
            {
                a.remove(*i);
            }
        }
        Segment::Element(k, want) => {
            if let Some(a) = cur.as_array_mut() {
                a.retain(|e| !path::element_matches(e, k, want));
            }
        }
    }
}

fn set_path(v: &mut Value, segs: &[Segment], value: Value) {
    let Some((last, parent)) = segs.split_last() else {
        *v = value;
        return;
    };
    let mut cur = v;
    for s in parent {
        let next = match s {
            Segment::Key(k) => {
                if !cur.is_object() {
                    *cur = Value::Object(Map::new());
                }
                cur.as_object_mut().map(|m| {
                    m.entry(k.clone())
                        .or_insert_with(|| Value::Object(Map::new()))
                })
            }
            Segment::Index(i) => cur.get_mut(*i),
            Segment::Element(k, want) => cur
                .as_array_mut()
                .and_then(|a| a.iter_mut().find(|e| path::element_matches(e, k, want))),
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    match last {
        Segment::Key(k) => {
            if !cur.is_object() {
                *cur = Value::Object(Map::new());
            }
            if let Some(m) = cur.as_object_mut() {
                m.insert(k.clone(), value);
            }
        }
        Segment::Index(i) => {
            if let Some(slot) = cur.get_mut(*i) {
                *slot = value;
            }
        }
        Segment::Element(k, want) => {
            if cur.is_null() {
                *cur = Value::Array(vec![]);
            }
            if let Some(a) = cur.as_array_mut() {
                match a.iter_mut().find(|e| path::element_matches(e, k, want)) {
                    Some(slot) => *slot = value,
                    None => a.push(value),
                }
            }
        }
    }
}

/// A configuration that applies only the accepted field changes: the
/// config with every change that was not accepted reverted to its
/// last-applied state, so skipped changes stay pending for the next apply
/// (the annotation records this configuration).
pub fn partial_config(config: &Value, last_applied: Option<&Value>, accepted: &[String]) -> Value {
    let live = Value::Object(Map::new());
    let schema = match (str_at(config, "/apiVersion"), str_at(config, "/kind")) {
        (Some(a), Some(k)) => PatchMeta::builtin().root(a, k),
        _ => None,
    };
    // The rows that apply could take, live aside: every difference between
    // config and last-applied.
    let rows = match merge::three_way(config, last_applied.unwrap_or(&live), last_applied, schema) {
        Ok(tw) => tw.fields,
        Err(_) => merge::create_fields(config, schema),
    };
    partial_from_rows(
        config,
        last_applied,
        accepted,
        rows.iter().map(|r| r.path.as_str()),
    )
}

/// [`partial_config`] over the paths of a plan's rows: every path not in
/// `accepted` is reverted to its last-applied value (or removed).
pub fn partial_from_rows<'r>(
    config: &Value,
    last_applied: Option<&Value>,
    accepted: &[String],
    rows: impl Iterator<Item = &'r str>,
) -> Value {
    let mut out = config.clone();
    for p in rows {
        if accepted.iter().any(|a| a == p) {
            continue;
        }
        let segs = path::parse(p);
        match last_applied.and_then(|la| path::get(la, &segs)) {
            Some(v) => set_path(&mut out, &segs, v.clone()),
            None => remove_path(&mut out, &segs),
        }
    }
    out
}

/// The configuration to apply when only `accepted` rows of an object's plan
/// (paths of `plan.fields`) are taken: every other change is reverted to
/// its live value (or dropped when live has none), so applying it changes
/// nothing else, and the next plan shows the skipped changes again.
/// Prefer this to [`partial_config`] when the plan is at hand: it also
/// skips changes where live drifted from last-applied.
pub fn partial_from_plan(plan: &ObjectPlan, accepted: &[String]) -> Option<Value> {
    let mut out = plan.config.clone()?;
    let annotation = path::key("metadata.annotations", LAST_APPLIED);
    for f in &plan.fields {
        if f.action == FieldAction::Keep
            || accepted.iter().any(|a| a == &f.path)
            || f.path == annotation
            || f.reason.starts_with("element order")
        {
            continue;
        }
        let segs = path::parse(&f.path);
        match &f.live {
            Some(v) => set_path(&mut out, &segs, v.clone()),
            None => remove_path(&mut out, &segs),
        }
    }
    Some(out)
}

/// Why `path` cannot be released on this object, or `None` when it can.
/// Only a `clear` row whose field the config leaves out can be: releasing
/// hands the live value to another writer, which needs the config to say
/// nothing about the field (an explicit null in the config is a removal
/// the config asks for).
pub fn release_refusal(plan: &ObjectPlan, path: &str) -> Option<String> {
    let Some(row) = plan.fields.iter().find(|f| f.path == path) else {
        return Some(format!(
            "{path} is not a field change of {}",
            plan.display_name()
        ));
    };
    if row.action != FieldAction::Clear {
        return Some(format!(
            "{path} of {} is not a clear row: only a field apply would remove can be released",
            plan.display_name()
        ));
    }
    let in_config = plan
        .config
        .as_ref()
        .and_then(|c| path::get(c, &path::parse(path)))
        .is_some();
    if in_config || row.last_applied.is_none() {
        return Some(format!(
            "{path} of {} is removed by the config itself (explicit null), not by leaving it out; it cannot be released",
            plan.display_name()
        ));
    }
    None
}

/// The last-applied configuration with the `released` paths taken out.
/// The three-way patch computed against it sends no deletion for them
/// (they are then in neither config nor last-applied: another writer's),
/// while the annotation it writes still records the config without them.
/// A parent left empty by the removal goes too when the config lacks it:
/// an empty map in last-applied and none in the config would make the
/// patch delete the whole parent, the released field with it.
pub fn release_from_last_applied(
    config: &Value,
    last_applied: Option<&Value>,
    released: &[String],
) -> Option<Value> {
    let mut out = last_applied?.clone();
    for p in released {
        let segs = path::parse(p);
        remove_path(&mut out, &segs);
        for depth in (1..segs.len()).rev() {
            let parent = &segs[..depth];
            let emptied = match path::get(&out, parent) {
                Some(Value::Object(m)) => m.is_empty(),
                Some(Value::Array(a)) => a.is_empty(),
                _ => false,
            };
            if !emptied || path::get(config, parent).is_some() {
                break;
            }
            remove_path(&mut out, parent);
        }
    }
    Some(out)
}

#[cfg(test)]
mod release_tests {
    use super::release_from_last_applied;
    use serde_json::json;

    #[test]
    fn a_released_leaf_goes_with_the_parents_it_leaves_empty() {
        let config = json!({"metadata": {"name": "x"}, "data": {"b": "2"}});
        let la = json!({"metadata": {"name": "x", "labels": {"app": "a"}}, "data": {"a": "1", "b": "2"}});
        let out = release_from_last_applied(
            &config,
            Some(&la),
            &["metadata.labels.app".into(), "data.a".into()],
        );
        // `labels: {}` would make the patch delete every label.
        assert_eq!(
            out,
            Some(json!({"metadata": {"name": "x"}, "data": {"b": "2"}}))
        );
        assert_eq!(
            release_from_last_applied(&config, None, &["data.a".into()]),
            None
        );
    }
}
