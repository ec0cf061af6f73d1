//! The one Secret masker: a Secret's values are never shown, whether in
//! the object, its last-applied annotation, a field row, a patch body, the
//! YAML view's before/after pair, a TUI cell or `kapply export` on stdout.
//! Every layer masks through here, so they all write the same `***`. No I/O.

use crate::fieldpath::FieldPath;
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

/// What a Secret value shows as.
pub const MASK: &str = "***";

/// A last-applied annotation value with the Secret values masked; text
/// that is not JSON is masked whole.
pub fn mask_recorded(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(mut v) => {
            mask_data(&mut v);
            format!("{}\n", crate::gocompat::json(&v))
        }
        Err(_) => MASK.into(),
    }
}

/// Mask the values of `data` and `stringData` of a Secret (or of its
/// recorded configuration) in place; nulls (deletions) stay null.
pub fn mask_data(v: &mut Value) {
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
            .and_then(crate::merge::last_applied_value)
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

/// Whether the field at `path` (a field-plan path: `data.password`,
/// `stringData["a.b"]`) of an object of `kind` holds Secret data.
pub fn is_secret_field(kind: &str, path: &FieldPath) -> bool {
    kind == "Secret" && ["data", "stringData"].iter().any(|f| path.is_under(f))
}

/// One side of a Secret data field row, masked: a map keeps its keys
/// (values masked, nulls kept), a null stays null, anything else is
/// [`MASK`].
pub fn mask_value(v: &Option<Value>) -> Option<Value> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_fields_are_data_and_string_data_of_secrets() {
        for p in [
            "data",
            "data.k",
            "data[\"a.b\"]",
            "stringData",
            "stringData.k",
        ] {
            assert!(is_secret_field("Secret", &p.into()), "{p}");
            assert!(!is_secret_field("ConfigMap", &p.into()), "{p}");
        }
        for p in ["metadata.name", "dataX", "type", "immutable"] {
            assert!(!is_secret_field("Secret", &p.into()), "{p}");
        }
    }

    #[test]
    fn secrets_are_masked_in_data_and_the_annotation() {
        let recorded = r#"{"apiVersion":"v1","data":{"k":"c2VjcmV0"},"kind":"Secret"}"#;
        let s = json!({"kind": "Secret", "data": {"k": "c2VjcmV0", "gone": null},
            "stringData": {"p": "hunter2"},
            "metadata": {"annotations": {LAST_APPLIED: recorded}}});
        let m = mask_secret(&s);
        assert_eq!(m["data"], json!({"k": MASK, "gone": null}));
        assert_eq!(m["stringData"], json!({"p": MASK}));
        assert_eq!(
            m["metadata"]["annotations"][LAST_APPLIED],
            "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"***\"},\"kind\":\"Secret\"}\n"
        );
        assert_eq!(mask_recorded("not json c2VjcmV0"), MASK);
        let cm = json!({"kind": "ConfigMap", "data": {"k": "v"}});
        assert_eq!(mask_secret(&cm), cm);
        assert_eq!(
            mask_value(&Some(json!({"a": "x", "b": null}))),
            Some(json!({"a": MASK, "b": null}))
        );
        assert_eq!(mask_value(&Some(json!("x"))), Some(json!(MASK)));
        assert_eq!(mask_value(&Some(Value::Null)), Some(Value::Null));
    }

    #[test]
    fn a_changed_value_shows_changed_without_its_value() {
        let before = json!({"kind": "Secret", "data": {"same": "YQ==", "changed": "Yg=="}});
        let after = json!({"kind": "Secret", "data": {"same": "YQ==", "changed": "Yw=="}});
        let (b, a) = mask_secret_pair(Some(&before), Some(&after));
        let (b, a) = (b.expect("before"), a.expect("after"));
        assert_eq!(b["data"], json!({"same": MASK, "changed": MASK_BEFORE}));
        assert_eq!(a["data"], json!({"same": MASK, "changed": MASK_AFTER}));
    }
}
