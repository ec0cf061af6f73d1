//! Discovery, cached for the run: group/version -> its resources. Only the
//! group versions the manifests name are asked for (one request each), so a
//! plan costs a handful of discovery requests, not a walk of every group.

use super::{ClusterError, Session, split_api_version};
use http::Method;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub use crate::resource::ResourceInfo;

pub(crate) use crate::objref::group_kind;

/// `Widget.demo.kapply.dev/v1`, `Pod/v1`: how a not-served kind is named.
pub(crate) fn kind_label(api_version: &str, kind: &str) -> String {
    let (group, version) = split_api_version(api_version);
    format!("{}/{version}", group_kind(group, kind))
}

/// A served resource and the other names kubectl accepts for it (singular,
/// short names; lower case).
type Served = (ResourceInfo, Vec<String>);

type GroupVersion = Option<Arc<Vec<Served>>>;

/// Every group and its preferred groupVersion, in the server's order.
type Groups = Arc<Vec<(String, String)>>;

#[derive(Default)]
pub(crate) struct Discovery {
    /// groupVersion -> resources; `None`: the server does not serve it.
    versions: Mutex<HashMap<String, GroupVersion>>,
    /// group -> preferred version (for ApplySet kinds recorded as `Kind.group`).
    preferred: Mutex<HashMap<String, Option<String>>>,
    /// Every group and its preferred groupVersion (`/apis`), in the
    /// server's order, once asked.
    groups: Mutex<Option<Groups>>,
}

impl Discovery {
    pub(crate) fn clear(&self) {
        if let Ok(mut v) = self.versions.lock() {
            v.clear();
        }
        if let Ok(mut p) = self.preferred.lock() {
            p.clear();
        }
        if let Ok(mut g) = self.groups.lock() {
            *g = None;
        }
    }

    /// Forget one group version, so the next lookup asks the server again.
    pub(crate) fn forget(&self, api_version: &str) {
        if let Ok(mut v) = self.versions.lock() {
            v.remove(api_version);
        }
    }

    async fn group_version(
        &self,
        session: &Session,
        api_version: &str,
    ) -> Result<GroupVersion, ClusterError> {
        if let Some(hit) = self
            .versions
            .lock()
            .ok()
            .and_then(|v| v.get(api_version).cloned())
        {
            return Ok(hit);
        }
        let path = if api_version.contains('/') {
            format!("/apis/{api_version}")
        } else {
            format!("/api/{api_version}")
        };
        let (group, version) = split_api_version(api_version);
        let entry = match session.call(Method::GET, &path, &[], None, None).await {
            Ok(list) => Some(Arc::new(parse_resources(&list, group, version))),
            Err(e) if e.code() == 404 => None,
            Err(e) => return Err(e),
        };
        if let Ok(mut v) = self.versions.lock() {
            v.insert(api_version.to_string(), entry.clone());
        }
        Ok(entry)
    }

    /// Read these group versions' resources into the cache, all at once
    /// (one round trip, not one per version against a distant server). The
    /// first error that stops a run (the server unreachable) is returned;
    /// others come back when the kinds are resolved.
    pub(crate) async fn prefetch(
        &self,
        session: &Session,
        api_versions: impl Iterator<Item = &str>,
    ) -> Result<(), ClusterError> {
        let reads = api_versions.map(|v| self.group_version(session, v));
        for r in futures::future::join_all(reads).await {
            if let Err(e) = r
                && e.is_fatal()
            {
                return Err(e);
            }
        }
        Ok(())
    }

    pub(crate) async fn resolve(
        &self,
        session: &Session,
        api_version: &str,
        kind: &str,
    ) -> Result<ResourceInfo, ClusterError> {
        let not_served = || ClusterError::NotServed(kind_label(api_version, kind));
        let resources = self
            .group_version(session, api_version)
            .await?
            .ok_or_else(not_served)?;
        resources
            .iter()
            .map(|(r, _)| r)
            .find(|r| r.kind == kind)
            .cloned()
            .ok_or_else(not_served)
    }

    /// Resolve `Kind.group` (no version) through the group's preferred version.
    pub(crate) async fn resolve_group_kind(
        &self,
        session: &Session,
        group: &str,
        kind: &str,
    ) -> Result<ResourceInfo, ClusterError> {
        let version = self.preferred_version(session, group).await?;
        match version {
            Some(v) => {
                let api_version = if group.is_empty() {
                    v
                } else {
                    format!("{group}/{v}")
                };
                self.resolve(session, &api_version, kind).await
            }
            None => Err(ClusterError::NotServed(group_kind(group, kind))),
        }
    }

    /// Resolve `RESOURCE.GROUP` (plural name) through the preferred version.
    pub(crate) async fn resolve_plural(
        &self,
        session: &Session,
        group: &str,
        plural: &str,
    ) -> Result<ResourceInfo, ClusterError> {
        let label = if group.is_empty() {
            plural.to_string()
        } else {
            format!("{plural}.{group}")
        };
        let version = self
            .preferred_version(session, group)
            .await?
            .ok_or_else(|| ClusterError::NotServed(label.clone()))?;
        let api_version = crate::objref::api_version(group, &version);
        let resources = self
            .group_version(session, &api_version)
            .await?
            .ok_or_else(|| ClusterError::NotServed(label.clone()))?;
        resources
            .iter()
            .map(|(r, _)| r)
            .find(|r| r.plural == plural)
            .cloned()
            .ok_or(ClusterError::NotServed(label))
    }

    /// Every group with its preferred groupVersion, from `/apis` (asked
    /// once per run).
    async fn groups(&self, session: &Session) -> Result<Groups, ClusterError> {
        if let Some(hit) = self.groups.lock().ok().and_then(|g| g.clone()) {
            return Ok(hit);
        }
        let list = session.call(Method::GET, "/apis", &[], None, None).await?;
        let groups: Vec<(String, String)> = list["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|g| {
                let name = g["name"].as_str()?;
                let gv = g["preferredVersion"]["groupVersion"].as_str()?;
                Some((name.to_string(), gv.to_string()))
            })
            .collect();
        let groups = Arc::new(groups);
        if let Ok(mut g) = self.groups.lock() {
            *g = Some(groups.clone());
        }
        Ok(groups)
    }

    /// Resolve a resource name as kubectl accepts it (`deployment`,
    /// `deploy`, `deployments.apps`, `Widget`; case-insensitive) through
    /// the core group and every group's preferred version, all cached:
    /// core and earlier groups win on ties.
    pub(crate) async fn resolve_name(
        &self,
        session: &Session,
        text: &str,
    ) -> Result<ResourceInfo, ClusterError> {
        let (name, group) = match text.split_once('.') {
            Some((n, g)) => (n, Some(g)),
            None => (text, None),
        };
        let mut candidates = Vec::new();
        if group.is_none_or(|g| g.is_empty() || g == "core") {
            candidates.push("v1".to_string());
        }
        for (g, gv) in self.groups(session).await?.iter() {
            if group.is_none_or(|want| want == g) {
                candidates.push(gv.clone());
            }
        }
        let lower = name.to_ascii_lowercase();
        for gv in candidates {
            let Some(resources) = self.group_version(session, &gv).await? else {
                continue;
            };
            let hit = resources.iter().find(|(r, aliases)| {
                r.kind.eq_ignore_ascii_case(name) || r.plural == lower || aliases.contains(&lower)
            });
            if let Some((r, _)) = hit {
                return Ok(r.clone());
            }
        }
        Err(ClusterError::Other(format!(
            "the server doesn't have a resource type \"{text}\""
        )))
    }

    async fn preferred_version(
        &self,
        session: &Session,
        group: &str,
    ) -> Result<Option<String>, ClusterError> {
        if group.is_empty() {
            return Ok(Some("v1".to_string()));
        }
        if let Some(hit) = self
            .preferred
            .lock()
            .ok()
            .and_then(|p| p.get(group).cloned())
        {
            return Ok(hit);
        }
        let found = match session
            .call(Method::GET, &format!("/apis/{group}"), &[], None, None)
            .await
        {
            Ok(g) => g
                .pointer("/preferredVersion/version")
                .and_then(Value::as_str)
                .or_else(|| g.pointer("/versions/0/version").and_then(Value::as_str))
                .map(str::to_string),
            Err(e) if e.code() == 404 => None,
            Err(e) => return Err(e),
        };
        if let Ok(mut p) = self.preferred.lock() {
            p.insert(group.to_string(), found.clone());
        }
        Ok(found)
    }
}

/// An `APIResourceList` into resources with their other names,
/// subresources (`pods/status`) left out.
fn parse_resources(list: &Value, group: &str, version: &str) -> Vec<Served> {
    list.get("resources")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|r| {
                    let plural = r.get("name")?.as_str()?;
                    if plural.contains('/') {
                        return None;
                    }
                    let kind = r.get("kind")?.as_str()?;
                    let mut aliases: Vec<String> = r
                        .get("shortNames")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(str::to_ascii_lowercase)
                        .collect();
                    // kubectl takes the lower-case kind as the singular
                    // where discovery leaves singularName empty.
                    match r.get("singularName").and_then(Value::as_str) {
                        Some(s) if !s.is_empty() => aliases.push(s.to_ascii_lowercase()),
                        _ => aliases.push(kind.to_ascii_lowercase()),
                    }
                    let info = ResourceInfo {
                        group: group.to_string(),
                        version: version.to_string(),
                        kind: kind.to_string(),
                        plural: plural.to_string(),
                        namespaced: r
                            .get("namespaced")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                        ..Default::default()
                    };
                    Some((info, aliases))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resource_lists_skip_subresources() {
        let list = json!({"kind":"APIResourceList","groupVersion":"apps/v1","resources":[
            {"name":"deployments","kind":"Deployment","namespaced":true},
            {"name":"deployments/status","kind":"Deployment","namespaced":true}]});
        let r: Vec<ResourceInfo> = parse_resources(&list, "apps", "v1")
            .into_iter()
            .map(|(r, _)| r)
            .collect();
        assert_eq!(r.len(), 1);
        assert_eq!(
            r[0].collection_path(Some("demo")),
            "/apis/apps/v1/namespaces/demo/deployments"
        );
        assert_eq!(
            r[0].object_path(Some("demo"), "web"),
            "/apis/apps/v1/namespaces/demo/deployments/web"
        );
        assert_eq!(r[0].group_kind(), "Deployment.apps");
    }

    #[test]
    fn cluster_scoped_paths_ignore_namespace() {
        let ns = ResourceInfo {
            group: String::new(),
            version: "v1".into(),
            kind: "Namespace".into(),
            plural: "namespaces".into(),
            namespaced: false,
            ..Default::default()
        };
        assert_eq!(ns.object_path(Some("x"), "demo"), "/api/v1/namespaces/demo");
        assert_eq!(ns.group_kind(), "Namespace");
        assert_eq!(
            kind_label("demo.kapply.dev/v1", "Widget"),
            "Widget.demo.kapply.dev/v1"
        );
    }
}
