//! The resource table: which kinds the server serves, under which plural
//! names, and whether they are namespaced. Custom resources join it when
//! their CustomResourceDefinition is stored.

use serde_json::{Value, json};

pub use kapply_core::resource::ResourceInfo;

/// (group, version, plural, kind, namespaced, short names, scale, status)
type Row = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    bool,
    &'static [&'static str],
    bool,
    bool,
);

const BUILTIN: &[Row] = &[
    (
        "",
        "v1",
        "namespaces",
        "Namespace",
        false,
        &["ns"],
        false,
        true,
    ),
    (
        "",
        "v1",
        "configmaps",
        "ConfigMap",
        true,
        &["cm"],
        false,
        false,
    ),
    ("", "v1", "secrets", "Secret", true, &[], false, false),
    ("", "v1", "events", "Event", true, &["ev"], false, false),
    // kubectl's default prune list names these two: they must be served.
    (
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        true,
        &["rc"],
        true,
        true,
    ),
    (
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        false,
        &["pv"],
        false,
        true,
    ),
    ("", "v1", "services", "Service", true, &["svc"], false, true),
    (
        "",
        "v1",
        "serviceaccounts",
        "ServiceAccount",
        true,
        &["sa"],
        false,
        false,
    ),
    ("", "v1", "pods", "Pod", true, &["po"], false, true),
    (
        "",
        "v1",
        "endpoints",
        "Endpoints",
        true,
        &["ep"],
        false,
        false,
    ),
    (
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        true,
        &["pvc"],
        false,
        true,
    ),
    (
        "apps",
        "v1",
        "deployments",
        "Deployment",
        true,
        &["deploy"],
        true,
        true,
    ),
    (
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        true,
        &["sts"],
        true,
        true,
    ),
    (
        "apps",
        "v1",
        "daemonsets",
        "DaemonSet",
        true,
        &["ds"],
        false,
        true,
    ),
    (
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        true,
        &["rs"],
        true,
        true,
    ),
    ("batch", "v1", "jobs", "Job", true, &[], false, true),
    (
        "batch",
        "v1",
        "cronjobs",
        "CronJob",
        true,
        &["cj"],
        false,
        true,
    ),
    (
        "networking.k8s.io",
        "v1",
        "ingresses",
        "Ingress",
        true,
        &["ing"],
        false,
        true,
    ),
    // What ingress-nginx, cert-manager and kube-prometheus releases hold.
    (
        "networking.k8s.io",
        "v1",
        "ingressclasses",
        "IngressClass",
        false,
        &[],
        false,
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        false,
        &[],
        false,
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        false,
        &[],
        false,
        false,
    ),
    // kube-prometheus's prometheus-adapter registers one (stored only: the
    // embedded server aggregates no API behind it).
    (
        "apiregistration.k8s.io",
        "v1",
        "apiservices",
        "APIService",
        false,
        &[],
        false,
        true,
    ),
    (
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "NetworkPolicy",
        true,
        &["netpol"],
        false,
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "roles",
        "Role",
        true,
        &[],
        false,
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        true,
        &[],
        false,
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        false,
        &[],
        false,
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
        &[],
        false,
        false,
    ),
    (
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        true,
        &["pdb"],
        false,
        true,
    ),
    // Served (empty: the embedded cluster has no nodes) so that
    // `kubectl create clusterrole --resource=nodes` resolves the name.
    ("", "v1", "nodes", "Node", false, &["no"], false, true),
    // `kubectl create quota` and `kubectl create priorityclass` write these.
    (
        "",
        "v1",
        "resourcequotas",
        "ResourceQuota",
        true,
        &["quota"],
        false,
        true,
    ),
    (
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "PriorityClass",
        false,
        &["pc"],
        false,
        false,
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
        false,
        true,
    ),
];

/// The built-in resources, in discovery order.
pub fn builtin() -> Vec<ResourceInfo> {
    BUILTIN
        .iter()
        .map(
            |&(group, version, plural, kind, namespaced, short, scale, status)| ResourceInfo {
                group: group.into(),
                version: version.into(),
                plural: plural.into(),
                singular: kind.to_ascii_lowercase(),
                kind: kind.into(),
                namespaced,
                short_names: short.iter().map(|s| s.to_string()).collect(),
                scale,
                status,
                custom: false,
            },
        )
        .collect()
}

/// The resources a stored CustomResourceDefinition serves (one per served
/// version); empty when the CRD is malformed.
pub fn from_crd(crd: &Value) -> Vec<ResourceInfo> {
    let spec = &crd["spec"];
    let (Some(group), Some(plural), Some(kind)) = (
        spec["group"].as_str(),
        spec["names"]["plural"].as_str(),
        spec["names"]["kind"].as_str(),
    ) else {
        return Vec::new();
    };
    let singular = spec["names"]["singular"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_ascii_lowercase());
    let namespaced = spec["scope"].as_str() != Some("Cluster");
    let short_names: Vec<String> = spec["names"]["shortNames"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    versions
        .iter()
        .filter(|v| v["served"].as_bool().unwrap_or(true))
        .filter_map(|v| v["name"].as_str())
        .map(|version| {
            let sub = &versions
                .iter()
                .find(|v| v["name"].as_str() == Some(version))
                .map(|v| v["subresources"].clone())
                .unwrap_or(Value::Null);
            ResourceInfo {
                group: group.into(),
                version: version.into(),
                plural: plural.into(),
                singular: singular.clone(),
                kind: kind.into(),
                namespaced,
                short_names: short_names.clone(),
                scale: sub.get("scale").is_some(),
                status: sub.get("status").is_some(),
                custom: true,
            }
        })
        .collect()
}

/// The APIResource entries of one resource for `/apis/<g>/<v>`.
pub fn api_resources(r: &ResourceInfo) -> Vec<Value> {
    let verbs = json!([
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch"
    ]);
    let mut main = json!({
        "name": r.plural,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": verbs,
    });
    if !r.short_names.is_empty() {
        main["shortNames"] = json!(r.short_names);
    }
    if matches!(
        r.plural.as_str(),
        "deployments"
            | "statefulsets"
            | "daemonsets"
            | "replicasets"
            | "pods"
            | "services"
            | "jobs"
            | "cronjobs"
    ) {
        main["categories"] = json!(["all"]);
    }
    let mut out = vec![main];
    if r.scale {
        out.push(json!({
            "name": format!("{}/scale", r.plural),
            "singularName": "",
            "namespaced": r.namespaced,
            "group": "autoscaling",
            "version": "v1",
            "kind": "Scale",
            "verbs": ["get", "patch", "update"],
        }));
    }
    if r.status {
        out.push(json!({
            "name": format!("{}/status", r.plural),
            "singularName": "",
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": ["get", "patch", "update"],
        }));
    }
    out
}
