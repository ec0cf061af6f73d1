//! Reading live objects by the names a kubectl user types (`deploy/web`,
//! `configmaps/x`, `widgets.demo.kapply.dev/w`), for `kapply export`.

use super::discovery::ResourceInfo;
use super::{ClusterError, Session};
use http::Method;
use serde_json::Value;

impl Session {
    /// Resolve a resource name as kubectl accepts it (`deployment`, `deploy`,
    /// `deployments.apps`, `Widget`), through the session's discovery cache:
    /// several names cost one `/apis` and one list per group version.
    pub async fn resolve_name(&self, text: &str) -> Result<ResourceInfo, ClusterError> {
        self.discovery.resolve_name(self, text).await
    }

    /// GET one object; `namespace` is used for namespaced kinds (the session's
    /// namespace when `None`).
    pub async fn get_object(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, ClusterError> {
        let ns = namespace.unwrap_or(self.namespace());
        let path = res.object_path(Some(ns), name);
        self.call(Method::GET, &path, &[], None, None).await
    }
}

impl Session {
    /// Rewrite only the last-applied annotation of an object (`kapply
    /// release`): the merge patch `kubectl apply edit-last-applied` sends
    /// (same content type, field manager and body), plus the resourceVersion
    /// the annotation was read at, so a write made since (another apply)
    /// is not overwritten: the server answers 409 instead.
    pub async fn write_last_applied(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        annotation: &str,
        resource_version: Option<&str>,
        dry_run: bool,
    ) -> Result<Value, ClusterError> {
        let ns = namespace.unwrap_or(self.namespace());
        let path = res.object_path(Some(ns), name);
        let mut metadata = serde_json::json!({
            "annotations": {crate::merge::LAST_APPLIED: annotation}
        });
        if let Some(rv) = resource_version {
            metadata["resourceVersion"] = Value::String(rv.into());
        }
        let body = serde_json::json!({ "metadata": metadata });
        let mut query = vec![
            ("fieldManager", super::FIELD_MANAGER),
            ("fieldValidation", "Strict"),
        ];
        if dry_run {
            query.push(("dryRun", "All"));
        }
        self.call(
            Method::PATCH,
            &path,
            &query,
            Some(crate::merge::PatchType::Merge.content_type()),
            Some(&body),
        )
        .await
    }
}
