//! Partial apply and release: configurations that take only some of a
//! plan's field changes, and last-applied without released fields.

use super::build::{base_plan, str_at};
use super::{ObjectAction, ObjectPlan};
use crate::fieldpath::{self as path, FieldPath, Segment};
use crate::merge::{self, FieldAction, LAST_APPLIED, Reason};
use crate::patchmeta::PatchMeta;
use serde_json::{Map, Value};

/// A configuration that applies only the accepted field changes: the
/// config with every change that was not accepted reverted to its
/// last-applied state, so skipped changes stay pending for the next apply
/// (the annotation records this configuration).
pub fn partial_config(
    config: &Value,
    last_applied: Option<&Value>,
    accepted: &[FieldPath],
) -> Value {
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
    partial_from_rows(config, last_applied, accepted, rows.iter().map(|r| &r.path))
}

/// [`partial_config`] over the paths of a plan's rows: every path not in
/// `accepted` is reverted to its last-applied value (or removed).
pub fn partial_from_rows<'r>(
    config: &Value,
    last_applied: Option<&Value>,
    accepted: &[FieldPath],
    rows: impl Iterator<Item = &'r FieldPath>,
) -> Value {
    let mut out = config.clone();
    for p in rows {
        if accepted.contains(p) {
            continue;
        }
        let segs = p.segments();
        match last_applied.and_then(|la| path::get(la, &segs)) {
            Some(v) => path::set(&mut out, &segs, v.clone()),
            None => remove_with_emptied(&mut out, &segs, last_applied, None),
        }
    }
    out
}

/// Take a skipped change out of a partial config, and with it each parent
/// map or list it leaves empty that last-applied does not hold: an empty
/// map the config did not ask for would be sent and recorded (a new
/// `securityContext.seccompProfile.type` skipped must not leave
/// `seccompProfile: {}`, which the server would create and validation
/// refuses). A parent last-applied and live both hold stays, empty: gone
/// from the config, the patch would delete it whole, other writers' fields
/// with it (`live` unknown: kept whenever last-applied holds it).
fn remove_with_emptied(
    out: &mut Value,
    segs: &[Segment],
    last_applied: Option<&Value>,
    live: Option<&Value>,
) {
    let non_empty = |v: Option<&Value>| match v {
        Some(Value::Object(m)) => !m.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        _ => false,
    };
    // Parents empty already (written so in the manifest) are the config's own.
    let was_filled: Vec<bool> = (1..segs.len())
        .map(|d| non_empty(path::get(out, &segs[..d])))
        .collect();
    path::remove(out, segs);
    for depth in (1..segs.len()).rev() {
        let parent = &segs[..depth];
        let emptied = was_filled[depth - 1] && !non_empty(path::get(out, parent));
        let held = last_applied.is_some_and(|la| path::get(la, parent).is_some())
            && live.is_none_or(|l| path::get(l, parent).is_some());
        if !emptied || held {
            break;
        }
        path::remove(out, parent);
    }
}

/// The configuration to apply when only `accepted` rows of an object's plan
/// (paths of `plan.fields`) are taken: every other change is reverted to
/// its live value (or dropped when live has none), so applying it changes
/// nothing else, and the next plan shows the skipped changes again.
/// Prefer this to [`partial_config`] when the plan is at hand: it also
/// skips changes where live drifted from last-applied.
pub fn partial_from_plan(plan: &ObjectPlan, accepted: &[FieldPath]) -> Option<Value> {
    let mut out = plan.config.clone()?;
    let annotation = path::key("metadata.annotations", LAST_APPLIED);
    // The last-applied the plan was made against: emptied parents it holds
    // stay (see `remove_with_emptied`).
    let last_applied = plan
        .live
        .as_ref()
        .and_then(|l| super::build::recorded_last_applied(l).ok().flatten());
    for f in &plan.fields {
        if f.action == FieldAction::Keep
            || accepted.contains(&f.path)
            || f.path == annotation
            || f.reason == Reason::ElementOrder
        {
            continue;
        }
        let segs = f.path.segments();
        match &f.live {
            Some(v) => path::set(&mut out, &segs, v.clone()),
            None => remove_with_emptied(&mut out, &segs, last_applied.as_ref(), plan.live.as_ref()),
        }
    }
    Some(out)
}

/// Why a field cannot be released (see [`release_refusal`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseRefusal {
    /// The path names no row of the object's field plan.
    NotAChange,
    /// The row is not a `clear`: apply would not remove the field.
    NotClear,
    /// The config removes the field with an explicit null.
    ExplicitNull,
}

impl ReleaseRefusal {
    /// The reason alone, for a status line where the row is in view: short
    /// enough to read whole at 80 columns.
    pub fn short(self) -> &'static str {
        match self {
            ReleaseRefusal::NotAChange => "R: not a field change",
            ReleaseRefusal::NotClear => {
                "R: not a clear row: only a field apply would remove can be released"
            }
            ReleaseRefusal::ExplicitNull => {
                "R: the config sets it to null (not left out): it cannot be released"
            }
        }
    }
}

/// Why `path` cannot be released on this object, or `None` when it can.
/// Only a `clear` row whose field the config leaves out can be: releasing
/// hands the live value to another writer, which needs the config to say
/// nothing about the field (an explicit null in the config is a removal
/// the config asks for).
pub fn release_refusal_kind(plan: &ObjectPlan, path: &FieldPath) -> Option<ReleaseRefusal> {
    let Some(row) = plan.fields.iter().find(|f| &f.path == path) else {
        return Some(ReleaseRefusal::NotAChange);
    };
    if row.action != FieldAction::Clear {
        return Some(ReleaseRefusal::NotClear);
    }
    let in_config = plan
        .config
        .as_ref()
        .and_then(|c| path::get(c, &row.path.segments()))
        .is_some();
    if in_config || row.last_applied.is_none() {
        return Some(ReleaseRefusal::ExplicitNull);
    }
    None
}

/// [`release_refusal_kind`] in words naming the field and the object.
pub fn release_refusal(plan: &ObjectPlan, path: &FieldPath) -> Option<String> {
    let id = plan.id();
    Some(match release_refusal_kind(plan, path)? {
        ReleaseRefusal::NotAChange => format!("{path} is not a field change of {id}"),
        ReleaseRefusal::NotClear => format!(
            "{path} of {id} is not a clear row: only a field apply would remove can be released"
        ),
        ReleaseRefusal::ExplicitNull => format!(
            "{path} of {id} is removed by the config itself (explicit null), not by leaving it out; it cannot be released"
        ),
    })
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
    released: &[FieldPath],
) -> Option<Value> {
    let mut out = last_applied?.clone();
    for p in released {
        let segs = p.segments();
        path::remove(&mut out, &segs);
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
            path::remove(&mut out, parent);
        }
    }
    Some(out)
}

/// One field `kapply release` takes out of the last-applied annotation.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleasedField {
    pub path: FieldPath,
    /// Its value in the annotation (what apply would have cleared).
    pub last_applied: Value,
    /// Its live value, which stays (`None`: not set live).
    pub live: Option<Value>,
}

/// What `kapply release` writes: the live object's last-applied annotation
/// without the released fields, as `kubectl apply edit-last-applied` leaves
/// it when they are deleted by hand.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnotationRelease {
    pub fields: Vec<ReleasedField>,
    /// The new annotation value (kubectl's encoding: compact, keys sorted,
    /// trailing newline).
    pub annotation: String,
}

/// Paths that name the object rather than a field of it.
const IDENTITY_PATHS: [&str; 5] = [
    "apiVersion",
    "kind",
    "metadata",
    "metadata.name",
    "metadata.namespace",
];

/// Release `paths` (field paths as the plan writes them) from the
/// last-applied annotation of `live`. A parent the removal leaves empty
/// goes too: an empty map left in the annotation would make the next apply
/// of a config without it delete the whole map, the released field with it.
/// Errors name the object and, for a path the annotation lacks, the paths
/// it has.
pub fn release_annotation(live: &Value, paths: &[String]) -> Result<AnnotationRelease, String> {
    let plan = base_plan(live, None, ObjectAction::Unchanged);
    let name = plan.id();
    let Some(text) = merge::last_applied_value(live).and_then(Value::as_str) else {
        return Err(format!(
            "{name} has no {LAST_APPLIED} annotation: it is not managed by kubectl apply, so \
             no field of it can be released (`kapply export` brings it under apply)"
        ));
    };
    let la: Value = serde_json::from_str(text).map_err(|e| {
        format!("{name}: its {LAST_APPLIED} annotation is not JSON ({e}); fix it with kubectl apply edit-last-applied")
    })?;
    if paths.is_empty() {
        return Err(format!("{name}: name at least one field path to release"));
    }
    let mut fields: Vec<ReleasedField> = Vec::new();
    for p in paths {
        // A path as the user typed it: read as a row's path is.
        let p = FieldPath::from(p.as_str());
        if fields.iter().any(|f| f.path == p) {
            continue;
        }
        let segs = p.segments();
        if segs.is_empty() || IDENTITY_PATHS.contains(&p.as_str()) {
            return Err(format!(
                "{name}: {p:?} names the object, not a field of it; it cannot be released"
            ));
        }
        // Without its merge key a list element in the annotation matches
        // no live element any more.
        if let [.., Segment::Element(key, _), Segment::Key(last)] = segs.as_slice()
            && key == last
        {
            let element = p.parent().unwrap_or_default();
            return Err(format!(
                "{name}: {p} is the key of its list element; release the element ({element}) instead"
            ));
        }
        let Some(value) = path::get(&la, &segs) else {
            let schema = PatchMeta::builtin().root(&plan.api_version, &plan.kind);
            let mut have: Vec<String> = Vec::new();
            for f in merge::create_fields(&la, schema) {
                leaf_paths(f.path.as_str(), f.config.as_ref(), &mut have);
            }
            have.retain(|f| !IDENTITY_PATHS.contains(&f.as_str()));
            let shown = match have.len() {
                0 => "none".to_string(),
                n if n > 20 => format!("{}, ... ({n} in all)", have[..20].join(", ")),
                _ => have.join(", "),
            };
            return Err(format!(
                "{name}: {p} is not in its last-applied configuration, so apply does not own it; \
                 fields there: {shown}"
            ));
        };
        fields.push(ReleasedField {
            path: p,
            last_applied: value.clone(),
            live: path::get(live, &segs).cloned(),
        });
    }
    let released: Vec<FieldPath> = fields.iter().map(|f| f.path.clone()).collect();
    let out = release_from_last_applied(&Value::Null, Some(&la), &released).unwrap_or(la);
    let mut annotation = crate::gocompat::json(&out);
    annotation.push('\n');
    Ok(AnnotationRelease { fields, annotation })
}

/// `path` and, for a map (a keyed list element's fields), the paths of its
/// leaves, so an error can list the paths a user would type.
fn leaf_paths(p: &str, v: Option<&Value>, out: &mut Vec<String>) {
    match v {
        Some(Value::Object(m)) if !m.is_empty() => {
            for (k, x) in m {
                leaf_paths(&path::key(p, k), Some(x), out);
            }
        }
        _ => out.push(p.to_string()),
    }
}

#[cfg(test)]
mod release_tests {
    use super::{release_annotation, release_from_last_applied};
    use serde_json::json;

    #[test]
    fn release_annotation_drops_the_fields_and_keeps_kubectl_encoding() {
        let la = r#"{"apiVersion":"v1","data":{"a":"1","b":"<2>"},"kind":"ConfigMap","metadata":{"annotations":{},"labels":{"app":"x"},"name":"c","namespace":"d"}}"#;
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "d", "labels": {"app": "x"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": la}},
            "data": {"a": "9", "b": "<2>"}});
        let out =
            release_annotation(&live, &["data.a".into(), "metadata.labels.app".into()]).unwrap();
        assert_eq!(
            out.annotation,
            "{\"apiVersion\":\"v1\",\"data\":{\"b\":\"\\u003c2\\u003e\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"name\":\"c\",\"namespace\":\"d\"}}\n"
        );
        assert_eq!(out.fields[0].last_applied, json!("1"));
        assert_eq!(out.fields[0].live, Some(json!("9")));

        let missing = release_annotation(&live, &["data.z".into()]).unwrap_err();
        assert!(
            missing.ends_with(
                "data.z is not in its last-applied configuration, so apply does not own it; \
                 fields there: data.a, data.b, metadata.annotations, metadata.labels.app"
            ),
            "{missing}"
        );
        assert!(
            release_annotation(&live, &["kind".into()])
                .unwrap_err()
                .contains("names the object")
        );
        let la = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"image":"i","name":"c"}]}}"#;
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": la}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}});
        assert_eq!(
            release_annotation(&pod, &["spec.containers[name=c].name".into()]).unwrap_err(),
            "Pod p: spec.containers[name=c].name is the key of its list element; \
             release the element (spec.containers[name=c]) instead"
        );
        assert!(release_annotation(&pod, &["spec.containers[name=c].image".into()]).is_ok());
        let mut bare = live.clone();
        bare["metadata"]["annotations"] = json!({});
        assert!(
            release_annotation(&bare, &["data.a".into()])
                .unwrap_err()
                .starts_with(
                    "ConfigMap d/c has no kubectl.kubernetes.io/last-applied-configuration"
                )
        );
    }

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
