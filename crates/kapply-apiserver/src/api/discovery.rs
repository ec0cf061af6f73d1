//! Discovery: `/version`, legacy group and resource lists, aggregated v2.

use crate::resources::{self, ResourceInfo};
use crate::status::ApiError;
use serde_json::{Value, json};

pub(super) fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": crate::GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// A version and its resources' discovery entries.
type VersionResources = (String, Vec<Value>);

/// Aggregated discovery (`apidiscovery.k8s.io/v2`): every group version
/// with its resources in one answer; `core`: the legacy group at `/api`.
pub(super) fn aggregated(core: bool, resources: &[ResourceInfo]) -> Value {
    let mut groups: Vec<(String, Vec<VersionResources>)> = Vec::new();
    for r in resources.iter().filter(|r| r.group.is_empty() == core) {
        let mut subresources = Vec::new();
        if r.scale {
            subresources.push(json!({"subresource": "scale",
                "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                "verbs": ["get", "patch", "update"]}));
        }
        if r.status {
            subresources.push(json!({"subresource": "status",
                "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
                "verbs": ["get", "patch", "update"]}));
        }
        let main = &resources::api_resources(r)[0];
        let mut res = json!({
            "resource": r.plural,
            "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
            "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
            "singularResource": r.singular,
            "verbs": main["verbs"],
        });
        for k in ["shortNames", "categories"] {
            if let Some(v) = main.get(k) {
                res[k] = v.clone();
            }
        }
        if !subresources.is_empty() {
            res["subresources"] = json!(subresources);
        }
        let g = match groups.iter_mut().position(|(g, _)| *g == r.group) {
            Some(i) => i,
            None => {
                groups.push((r.group.clone(), Vec::new()));
                groups.len() - 1
            }
        };
        let versions = &mut groups[g].1;
        match versions.iter_mut().find(|(v, _)| *v == r.version) {
            Some((_, rs)) => rs.push(res),
            None => versions.push((r.version.clone(), vec![res])),
        }
    }
    let items: Vec<Value> = groups
        .into_iter()
        .map(|(g, versions)| {
            let versions: Vec<Value> = versions
                .into_iter()
                .map(|(v, rs)| json!({"version": v, "resources": rs, "freshness": "Current"}))
                .collect();
            json!({"metadata": {"name": g, "creationTimestamp": null}, "versions": versions})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {}, "items": items})
}

pub(super) fn group_list(resources: &[ResourceInfo]) -> Value {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for r in resources.iter().filter(|r| !r.group.is_empty()) {
        match groups.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, vs)) => {
                if !vs.contains(&r.version) {
                    vs.push(r.version.clone());
                }
            }
            None => groups.push((r.group.clone(), vec![r.version.clone()])),
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(g, vs)| {
            let versions: Vec<Value> = vs
                .iter()
                .map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
                .collect();
            json!({"name": g, "versions": versions, "preferredVersion": versions[0]})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub(super) fn resource_list(
    group: &str,
    version: &str,
    resources: &[ResourceInfo],
) -> Result<Value, ApiError> {
    let rs: Vec<Value> = resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .flat_map(resources::api_resources)
        .collect();
    if rs.is_empty() {
        return Err(ApiError::not_found_path());
    }
    let gv = kapply_core::objref::api_version(group, version);
    Ok(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": rs}))
}
