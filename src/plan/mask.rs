//! Secret masking: values never shown, in the objects, the field rows, the
//! patch and the last-applied annotation.

use super::ObjectPlan;
use crate::fieldpath as path;
use crate::merge::LAST_APPLIED;
use serde_json::Value;

/// Mask the values of a Secret's `data` and `stringData` (and inside its
/// last-applied annotation). Other objects are returned unchanged.
pub fn mask_secret(obj: &Value) -> Value {
    if obj.get("kind").and_then(Value::as_str) != Some("Secret") {
        return obj.clone();
    }
    let mut out = obj.clone();
    mask_data(&mut out);
    if let Some(ann) = out
        .pointer_mut("/metadata/annotations")
        .and_then(|a| a.get_mut(LAST_APPLIED))
        && let Some(text) = ann.as_str()
    {
        *ann = Value::String(mask_recorded(text));
    }
    out
}

const MASK: &str = "***";

/// A last-applied annotation value with the Secret values masked; text
/// that is not JSON is masked whole.
fn mask_recorded(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(mut v) => {
            mask_data(&mut v);
            format!("{}\n", crate::gocompat::json(&v))
        }
        Err(_) => MASK.into(),
    }
}

fn mask_data(v: &mut Value) {
    for f in ["data", "stringData"] {
        if let Some(m) = v.get_mut(f).and_then(Value::as_object_mut) {
            for val in m.values_mut() {
                if !val.is_null() {
                    *val = Value::String(MASK.into());
                }
            }
        }
    }
}

/// What a changed Secret value shows as on each side of a diff, so that a
/// change stays visible without its clear value (as `kubectl diff` does).
const MASK_BEFORE: &str = "*** (before)";
const MASK_AFTER: &str = "*** (after)";

/// Mask a Secret shown before and after a change (the YAML view): values
/// equal on both sides show `***`; a value that differs shows
/// `*** (before)` and `*** (after)`. Also inside the last-applied
/// annotation. Objects that are not Secrets are returned unchanged.
pub fn mask_secret_pair(
    before: Option<&Value>,
    after: Option<&Value>,
) -> (Option<Value>, Option<Value>) {
    let is_secret =
        |v: Option<&Value>| v.and_then(|v| v.get("kind")).and_then(Value::as_str) == Some("Secret");
    if !is_secret(before) && !is_secret(after) {
        return (before.cloned(), after.cloned());
    }
    let (mut b, mut a) = (before.cloned(), after.cloned());
    // The annotations first, from the clear values.
    let recorded = |v: &Option<Value>| {
        v.as_ref()
            .and_then(|v| v.pointer("/metadata/annotations"))
            .and_then(|x| x.get(LAST_APPLIED))
            .and_then(Value::as_str)
            .map(|t| serde_json::from_str::<Value>(t).map_err(|_| ()))
    };
    let (rb, ra) = (recorded(&b), recorded(&a));
    let shown = |r: Option<Result<Value, ()>>| -> Option<String> {
        match r? {
            Ok(v) => Some(format!("{}\n", crate::gocompat::json(&v))),
            Err(()) => Some(MASK.into()),
        }
    };
    let (mut rb, mut ra) = (rb, ra);
    mask_data_pair(
        rb.as_mut().and_then(|r| r.as_mut().ok()),
        ra.as_mut().and_then(|r| r.as_mut().ok()),
    );
    for (side, text) in [(&mut b, shown(rb)), (&mut a, shown(ra))] {
        if let (Some(text), Some(ann)) = (
            text,
            side.as_mut()
                .and_then(|v| v.pointer_mut("/metadata/annotations"))
                .and_then(|x| x.get_mut(LAST_APPLIED)),
        ) {
            *ann = Value::String(text);
        }
    }
    mask_data_pair(b.as_mut(), a.as_mut());
    (b, a)
}

/// [`mask_data`] of two versions of one object, marking changed values.
fn mask_data_pair(mut before: Option<&mut Value>, mut after: Option<&mut Value>) {
    for f in ["data", "stringData"] {
        let old = before.as_ref().and_then(|v| v.get(f)).cloned();
        let new = after.as_ref().and_then(|v| v.get(f)).cloned();
        let token = |k: &str, mine: &Option<Value>, other: &Option<Value>, changed: &str| {
            let mine = mine.as_ref().and_then(|m| m.get(k));
            let other = other.as_ref().and_then(|m| m.get(k));
            match (mine, other) {
                (Some(x), Some(y)) if x != y && !y.is_null() => changed.to_string(),
                _ => MASK.to_string(),
            }
        };
        for (side, mine, other, changed) in [
            (before.as_deref_mut(), &old, &new, MASK_BEFORE),
            (after.as_deref_mut(), &new, &old, MASK_AFTER),
        ] {
            if let Some(m) = side
                .and_then(|v| v.get_mut(f))
                .and_then(Value::as_object_mut)
            {
                for (k, val) in m.iter_mut() {
                    if !val.is_null() {
                        *val = Value::String(token(k, mine, other, changed));
                    }
                }
            }
        }
    }
}

fn is_secret_value_path(p: &str) -> bool {
    ["data", "stringData"]
        .iter()
        .any(|f| p == *f || p.starts_with(&format!("{f}.")) || p.starts_with(&format!("{f}[")))
}

fn mask_value(v: &Option<Value>) -> Option<Value> {
    v.as_ref().map(|v| match v {
        Value::Null => Value::Null,
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| {
                    let masked = if x.is_null() {
                        Value::Null
                    } else {
                        Value::String(MASK.into())
                    };
                    (k.clone(), masked)
                })
                .collect(),
        ),
        _ => Value::String(MASK.into()),
    })
}

/// A copy of the object plan safe to show: Secret values masked in the
/// field rows, the patch body, the last-applied and the objects.
pub fn mask_plan(p: &ObjectPlan) -> ObjectPlan {
    if p.kind != "Secret" {
        return p.clone();
    }
    let mut out = p.clone();
    let annotation_path = path::key("metadata.annotations", LAST_APPLIED);
    for f in &mut out.fields {
        if f.path == annotation_path {
            for side in [&mut f.config, &mut f.live, &mut f.last_applied] {
                if let Some(Value::String(text)) = side {
                    *text = mask_recorded(text);
                }
            }
        }
        if is_secret_value_path(&f.path) {
            f.config = mask_value(&f.config);
            f.live = mask_value(&f.live);
            f.last_applied = mask_value(&f.last_applied);
        }
    }
    if let Some(patch) = &mut out.patch {
        let mut body = patch.body.clone();
        if let Some(m) = body.as_object_mut() {
            m.insert("kind".into(), Value::String("Secret".into()));
            let mut masked = mask_secret(&Value::Object(m.clone()));
            if let Some(mm) = masked.as_object_mut()
                && p.patch.as_ref().and_then(|x| x.body.get("kind")).is_none()
            {
                mm.remove("kind");
            }
            body = masked;
        }
        patch.body = body;
    }
    out.last_applied = out.last_applied.as_ref().map(|v| {
        let mut v = v.clone();
        mask_data(&mut v);
        v
    });
    out.config = out.config.as_ref().map(mask_secret);
    out.live = out.live.as_ref().map(mask_secret);
    out
}
