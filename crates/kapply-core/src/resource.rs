//! A resource type: what a kind maps to on an API server (group, version,
//! plural name, scope). One type for the client's discovery and the
//! embedded server's resource table; the server alone fills in the
//! subresources, short names and whether a CRD defines it.

/// One served resource (a kind under one group/version).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ResourceInfo {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// The plural resource name in URLs, lower case: `deployments`.
    pub plural: String,
    pub namespaced: bool,
    /// Lower case: `deployment` (the embedded server's table only).
    pub singular: String,
    /// `deploy` (the embedded server's table only).
    pub short_names: Vec<String>,
    /// Serves the `/scale` subresource (the embedded server's table only).
    pub scale: bool,
    /// Serves the `/status` subresource (the embedded server's table only).
    pub status: bool,
    /// Defined by a CustomResourceDefinition (the embedded server's table only).
    pub custom: bool,
}

impl ResourceInfo {
    pub fn api_version(&self) -> String {
        crate::objref::api_version(&self.group, &self.version)
    }

    /// `Deployment.apps`, `ConfigMap`: how ApplySet parents record kinds.
    pub fn group_kind(&self) -> String {
        crate::objref::group_kind(&self.group, &self.kind)
    }

    /// `deployments.apps`, `configmaps`: how Status messages name the resource.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The collection URL, in `namespace` when namespaced (`None`: all namespaces).
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        let base = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        match namespace {
            Some(ns) if self.namespaced => format!("{base}/namespaces/{ns}/{}", self.plural),
            _ => format!("{base}/{}", self.plural),
        }
    }

    pub fn object_path(&self, namespace: Option<&str>, name: &str) -> String {
        format!("{}/{name}", self.collection_path(namespace))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_urls() {
        let ns = ResourceInfo {
            version: "v1".into(),
            kind: "Namespace".into(),
            plural: "namespaces".into(),
            ..Default::default()
        };
        assert_eq!(ns.object_path(Some("x"), "demo"), "/api/v1/namespaces/demo");
        assert_eq!(
            (ns.qualified(), ns.group_kind(), ns.api_version()),
            ("namespaces".into(), "Namespace".into(), "v1".into())
        );
        let d = ResourceInfo {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
            plural: "deployments".into(),
            namespaced: true,
            ..Default::default()
        };
        assert_eq!(
            d.collection_path(Some("a")),
            "/apis/apps/v1/namespaces/a/deployments"
        );
        assert_eq!(d.collection_path(None), "/apis/apps/v1/deployments");
        assert_eq!(
            (d.qualified(), d.group_kind(), d.api_version()),
            (
                "deployments.apps".into(),
                "Deployment.apps".into(),
                "apps/v1".into()
            )
        );
    }
}
