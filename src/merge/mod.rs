//! The three-way merge engine, following kubectl's client-side apply.
//! No I/O: plain functions over `serde_json::Value`.
//!
//! Inputs: the config (the file), the live object and the last-applied
//! configuration (from the annotation; `None` when absent). Outputs: the
//! field plan, the patch kubectl would send and the new annotation.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The annotation kubectl apply keeps the last applied configuration in.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What apply does to one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldAction {
    /// The config value differs from live: apply writes it.
    Set,
    /// In last-applied but gone from the config, or an explicit null: apply removes it.
    Clear,
    /// Live only, named by neither config nor last-applied: owned by another writer.
    Keep,
}

/// One leaf (or keyed list element) of the field plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldChange {
    /// Dotted path; keyed list elements by key:
    /// `spec.template.spec.containers[name=nginx].image`.
    pub path: String,
    /// A side with no value is `None` (omitted in JSON), so an explicit
    /// null stays distinguishable.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "present")]
    pub config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "present")]
    pub live: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "present")]
    pub last_applied: Option<Value>,
    pub action: FieldAction,
    pub reason: String,
}

/// Serde helper: `Some(Value::Null)` must round-trip as an explicit `null`,
/// distinct from an absent key.
mod present {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    pub fn serialize<S: Serializer>(v: &Option<Value>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => v.serialize(s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
        Value::deserialize(d).map(Some)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PatchType {
    /// `application/strategic-merge-patch+json` (built-in kinds)
    Strategic,
    /// `application/merge-patch+json`, RFC 7386 (custom resources)
    Merge,
}

impl PatchType {
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Strategic => "application/strategic-merge-patch+json",
            PatchType::Merge => "application/merge-patch+json",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Patch {
    #[serde(rename = "type")]
    pub kind: PatchType,
    pub body: Value,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MergeError {
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

pub mod apply;

/// Field paths, shared by the field plan, manifest line maps and the TUI.
/// `spec.template.spec.containers[name=nginx].image`; map keys that are not
/// plain identifiers are quoted: `metadata.annotations["example.com/x"]`.
pub mod path {
    /// Append a map key or struct field to a path.
    pub fn key(parent: &str, key: &str) -> String {
        let plain = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$');
        match (parent.is_empty(), plain) {
            (true, true) => key.to_string(),
            (false, true) => format!("{parent}.{key}"),
            (_, false) => format!("{parent}[{}]", serde_json::Value::from(key)),
        }
    }

    /// Append a keyed list element: `containers[name=nginx]`.
    pub fn element(parent: &str, merge_key: &str, value: &serde_json::Value) -> String {
        let v = match value {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        format!("{parent}[{merge_key}={v}]")
    }

    /// Append a list index (lists without a merge key, when listed per element).
    pub fn index(parent: &str, i: usize) -> String {
        format!("{parent}[{i}]")
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        #[test]
        fn formats() {
            let p = key(&key("", "spec"), "containers");
            assert_eq!(
                element(&p, "name", &"nginx".into()),
                "spec.containers[name=nginx]"
            );
            assert_eq!(
                key("metadata.annotations", "example.com/x"),
                "metadata.annotations[\"example.com/x\"]"
            );
            assert_eq!(index("args", 2), "args[2]");
        }
    }
}
