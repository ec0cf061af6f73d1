//! Reading live objects by the names a kubectl user types (`deploy/web`,
//! `configmaps/x`, `widgets.demo.kapply.dev/w`), for `kapply export`.

use super::discovery::ResourceInfo;
use super::{ClusterError, Session};
use http::Method;
use serde_json::Value;

/// Does discovery entry `r` answer to `name` (kind, plural, singular or a
/// short name, case-insensitive)?
fn names_match(r: &Value, name: &str) -> bool {
    let eq = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .is_some_and(|s| s.eq_ignore_ascii_case(name))
    };
    eq(r.get("kind"))
        || eq(r.get("name"))
        || eq(r.get("singularName"))
        || r.get("shortNames")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|s| eq(Some(s))))
}

impl Session {
    /// Resolve a resource name as kubectl accepts it (`deployment`, `deploy`,
    /// `deployments.apps`, `Widget`), through the core group and every
    /// group's preferred version. Core and earlier groups win on ties.
    pub async fn resolve_name(&self, text: &str) -> Result<ResourceInfo, ClusterError> {
        let (name, group) = match text.split_once('.') {
            Some((n, g)) => (n, Some(g)),
            None => (text, None),
        };
        let mut candidates: Vec<(String, String)> = Vec::new();
        if group.is_none_or(|g| g.is_empty() || g == "core") {
            candidates.push((String::new(), "v1".into()));
        }
        let groups = self.call(Method::GET, "/apis", &[], None, None).await?;
        for g in groups["groups"].as_array().into_iter().flatten() {
            let gname = g["name"].as_str().unwrap_or_default();
            if group.is_some_and(|want| want != gname) {
                continue;
            }
            if let Some(gv) = g["preferredVersion"]["groupVersion"].as_str() {
                candidates.push((gname.to_string(), gv.to_string()));
            }
        }
        for (gname, gv) in candidates {
            let path = if gname.is_empty() {
                format!("/api/{gv}")
            } else {
                format!("/apis/{gv}")
            };
            let list = match self.call(Method::GET, &path, &[], None, None).await {
                Ok(l) => l,
                Err(e) if e.code() == 404 => continue,
                Err(e) => return Err(e),
            };
            let version = gv.rsplit('/').next().unwrap_or(&gv).to_string();
            for r in list["resources"].as_array().into_iter().flatten() {
                let plural = r["name"].as_str().unwrap_or_default();
                if plural.contains('/') || !names_match(r, name) {
                    continue;
                }
                let Some(kind) = r["kind"].as_str() else {
                    continue;
                };
                return Ok(ResourceInfo {
                    group: gname.clone(),
                    version,
                    kind: kind.to_string(),
                    plural: plural.to_string(),
                    namespaced: r["namespaced"].as_bool().unwrap_or(false),
                    ..Default::default()
                });
            }
        }
        Err(ClusterError::Other(format!(
            "the server doesn't have a resource type \"{text}\""
        )))
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
