//! Which object: group, kind, namespace and name, the one identity every
//! layer uses (manifests, the plan, the cluster layer's results, the TUI's
//! marks and selection, the CLI's plan files). No I/O.
//!
//! The version is not part of it: `apps/v1` and `apps/v1beta1` name the same
//! object, as the API server stores one object per group, kind, namespace
//! and name. The group is: istio's `Gateway` (networking.istio.io) and
//! Gateway API's `Gateway` (gateway.networking.k8s.io) are different objects.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// One object's identity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectRef {
    /// `""` for the core group.
    pub group: String,
    /// Empty only for a manifest that could not be read (no identity).
    pub kind: String,
    /// `None` for cluster-scoped objects (an empty namespace is none).
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    /// From an apiVersion (its group is kept, its version dropped), a kind,
    /// a namespace (`Some("")` is none) and a name.
    pub fn new(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> ObjectRef {
        ObjectRef {
            group: split_api_version(api_version).0.to_string(),
            kind: kind.to_string(),
            namespace: namespace.filter(|n| !n.is_empty()).map(str::to_string),
            name: name.to_string(),
        }
    }

    /// The identity of an object as found (a live object, say): apiVersion,
    /// kind, metadata.namespace (empty = none) and metadata.name; `None`
    /// when apiVersion, kind or name is missing.
    pub fn from_object(obj: &Value) -> Option<ObjectRef> {
        let md = obj.get("metadata")?;
        Some(ObjectRef::new(
            obj.get("apiVersion")?.as_str()?,
            obj.get("kind")?.as_str()?,
            md.get("namespace").and_then(Value::as_str),
            md.get("name")?.as_str()?,
        ))
    }

    /// `Deployment.apps`, `ConfigMap` for the core group: how kubectl names
    /// a kind in messages.
    pub fn group_kind(&self) -> String {
        group_kind(&self.group, &self.kind)
    }
}

/// How outputs name an object: `Deployment demo/nginx`, `Namespace demo`;
/// a manifest that could not be read has no identity and says so.
impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Through `pad`, so `{:<40}` aligns it as it does a string.
        let s = match &self.namespace {
            _ if self.kind.is_empty() => "(unreadable manifest)".to_string(),
            Some(ns) => format!("{} {}/{}", self.kind, ns, self.name),
            None => format!("{} {}", self.kind, self.name),
        };
        f.pad(&s)
    }
}

/// `("apps", "v1")` for `apps/v1`, `("", "v1")` for `v1`.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

/// `apps/v1`, or `v1` for the core group.
pub fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// `Deployment.apps`, or `ConfigMap` for the core group.
pub fn group_kind(group: &str, kind: &str) -> String {
    if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identity_ignores_the_version_but_not_the_group() {
        assert_eq!(
            ObjectRef::new("apps/v1", "Deployment", Some("d"), "w"),
            ObjectRef::new("apps/v1beta1", "Deployment", Some("d"), "w")
        );
        assert_ne!(
            ObjectRef::new("networking.istio.io/v1", "Gateway", Some("d"), "g"),
            ObjectRef::new("gateway.networking.k8s.io/v1", "Gateway", Some("d"), "g")
        );
        assert_eq!(
            ObjectRef::new("v1", "Namespace", Some(""), "a"),
            ObjectRef::new("v1", "Namespace", None, "a")
        );
    }

    #[test]
    fn display_is_what_outputs_print() {
        let r = ObjectRef::new("apps/v1", "Deployment", Some("demo"), "web");
        assert_eq!(r.to_string(), "Deployment demo/web");
        assert_eq!(r.group_kind(), "Deployment.apps");
        let r = ObjectRef::new("v1", "Namespace", None, "demo");
        assert_eq!(r.to_string(), "Namespace demo");
        assert_eq!(r.group_kind(), "Namespace");
        assert_eq!(ObjectRef::default().to_string(), "(unreadable manifest)");
    }

    #[test]
    fn from_object_reads_the_identity() {
        let o = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "demo"}});
        assert_eq!(
            ObjectRef::from_object(&o),
            Some(ObjectRef::new("apps/v1", "Deployment", Some("demo"), "web"))
        );
        assert_eq!(ObjectRef::from_object(&json!({"kind": "X"})), None);
        assert_eq!(api_version("", "v1"), "v1");
        assert_eq!(api_version("apps", "v1"), "apps/v1");
        assert_eq!(split_api_version("v1"), ("", "v1"));
    }
}
