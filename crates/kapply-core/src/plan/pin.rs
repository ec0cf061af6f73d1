//! What a saved plan (`kapply plan -o json > FILE`) pins of each object, so
//! `kapply apply --plan FILE` writes exactly what was reviewed: the live
//! object's uid and resourceVersion at plan time, and digests of the
//! config and of the change apply will send. Secret values enter only the
//! digests (SHA-256), never the file in clear.
//!
//! The digests are unsalted, so the same plan gives the same file (plans
//! are compared across runs); a value is never stored, but a guessable
//! Secret value could be confirmed against its digest by someone who knows
//! every other byte of the config: the file is as private as the review.

use super::ObjectPlan;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The version of the saved plan's format (`savedPlan.version`): what
/// [`Pin`] holds and how its digests are made. A plan file of another
/// version is refused by `apply --plan`.
pub const PLAN_VERSION: u64 = 1;

/// One object as the plan saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pin {
    /// The live object's uid (none: it did not exist).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// `sha256:HEX` of the configuration read from the manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// `sha256:HEX` of what apply sends: the patch of an update, the body
    /// (config and its last-applied annotation) of a create.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<String>,
}

fn digest(what: &str, v: &Value) -> String {
    let mut h = Sha256::new();
    // A digest of one kind of thing never equals one of another.
    h.update(format!("kapply plan v{PLAN_VERSION} {what}\n").as_bytes());
    // serde_json's maps are sorted: the text is canonical.
    h.update(v.to_string().as_bytes());
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn meta(live: &Value, key: &str) -> Option<String> {
    live.get("metadata")?.get(key)?.as_str().map(str::to_string)
}

/// The pin of a planned object (with its config and live object still in
/// it); `None` for an object that could not be planned.
pub fn pin_of(obj: &ObjectPlan) -> Option<Pin> {
    use super::ObjectAction::*;
    let live = obj.live.as_ref();
    let change = match obj.action {
        Error => return None,
        Update => obj
            .patch
            .as_ref()
            .and_then(|p| serde_json::to_value(p).ok())
            .map(|p| digest("patch", &p)),
        Create => obj.config.as_ref().map(|c| {
            let body = serde_json::json!({"config": c, "lastApplied": obj.last_applied});
            digest("create", &body)
        }),
        Unchanged | Prune => None,
    };
    Some(Pin {
        uid: live.and_then(|l| meta(l, "uid")),
        resource_version: live.and_then(|l| meta(l, "resourceVersion")),
        config: obj.config.as_ref().map(|c| digest("config", c)),
        change,
    })
}

/// Why `now` (the object planned again at apply time) is not what was
/// `reviewed`: one phrase per difference, none when it is the same.
pub fn stale(reviewed: &Pin, now: &Pin) -> Vec<String> {
    let mut why = Vec::new();
    let id = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".into());
    match (&reviewed.uid, &now.uid) {
        (Some(_), None) => why.push("the live object was deleted since the plan".to_string()),
        (None, Some(_)) => why.push("the object was created by someone since the plan".into()),
        (Some(a), Some(b)) if a != b => why.push(format!(
            "the live object was deleted and created again since the plan (uid {a} -> {b})"
        )),
        _ => {
            if reviewed.resource_version != now.resource_version {
                why.push(format!(
                    "the live object changed since the plan (resourceVersion {} -> {})",
                    id(&reviewed.resource_version),
                    id(&now.resource_version)
                ));
            }
        }
    }
    if reviewed.config != now.config {
        why.push("its manifest changed since the plan".into());
    }
    if reviewed.change != now.change {
        why.push("the change apply would send is not the one reviewed".into());
    }
    why
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{PlanOptions, plan_object};
    use serde_json::json;

    fn planned(config: Value, live: Option<Value>) -> ObjectPlan {
        let m = crate::manifest::Manifest::new(
            crate::objref::ObjectRef::from_object(&config).unwrap(),
            "v1".into(),
            config,
            crate::manifest::Source {
                file: "s.yaml".into(),
                line: 1,
            },
        );
        plan_object(&m, live.as_ref(), &PlanOptions::default())
    }

    fn secret(value: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "d"}, "data": {"k": value}})
    }

    #[test]
    fn a_changed_value_changes_config_and_change_digests_and_nothing_leaks() {
        let live = |data: &str| {
            let mut l = secret(data);
            l["metadata"]["uid"] = json!("u1");
            l["metadata"]["resourceVersion"] = json!("7");
            l
        };
        let a = pin_of(&planned(secret("aW5mbw=="), Some(live("b2xk")))).unwrap();
        let again = pin_of(&planned(secret("aW5mbw=="), Some(live("b2xk")))).unwrap();
        assert_eq!(a, again, "the same plan pins the same");
        assert!(stale(&a, &again).is_empty());
        let b = pin_of(&planned(secret("VEFNUEVSRUQ="), Some(live("b2xk")))).unwrap();
        assert_eq!(
            stale(&a, &b),
            [
                "its manifest changed since the plan",
                "the change apply would send is not the one reviewed"
            ]
        );
        let text = serde_json::to_string(&a).unwrap();
        assert!(
            !text.contains("aW5mbw==") && !text.contains("info"),
            "{text}"
        );
        assert_eq!(a.uid.as_deref(), Some("u1"));
        assert_eq!(a.resource_version.as_deref(), Some("7"));
        assert!(a.change.as_deref().unwrap().starts_with("sha256:"));
    }

    #[test]
    fn live_differences_are_named() {
        let pin = |uid: Option<&str>, rv: &str| Pin {
            uid: uid.map(str::to_string),
            resource_version: Some(rv.into()),
            ..Pin::default()
        };
        assert_eq!(
            stale(&pin(Some("a"), "1"), &pin(Some("b"), "9")),
            ["the live object was deleted and created again since the plan (uid a -> b)"]
        );
        assert_eq!(
            stale(&pin(Some("a"), "1"), &pin(Some("a"), "2")),
            ["the live object changed since the plan (resourceVersion 1 -> 2)"]
        );
        assert_eq!(
            stale(&pin(None, "1"), &pin(Some("a"), "1")),
            ["the object was created by someone since the plan"]
        );
    }
}
