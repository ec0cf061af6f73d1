//! The demo story of `kapply demo`, from the reference page.
//!
//! Two halves:
//! - the manifest directory the demo user reviews, kept in `assets/demo/`
//!   and compiled in ([`DEMO_FILES`], [`write_demo_manifests`]);
//! - the live objects an embedded API server is seeded with
//!   ([`demo_seed_objects`]), as a real API server would hold them after
//!   the story's history.
//!
//! The story (namespace `demo`, every object labelled `app=demo`):
//! - `Deployment nginx-deployment`: created by `kubectl apply` from the
//!   reference page's simple_deployment.yaml (image nginx:1.14.2,
//!   minReadySeconds 5), then `kubectl scale --replicas=2`. The manifest now
//!   has image nginx:1.16.1 and no minReadySeconds: apply sets the image,
//!   clears minReadySeconds and keeps replicas.
//! - `ConfigMap settings`, `Service nginx`, `Namespace demo` and the CRD
//!   `widgets.demo.kapply.dev`: applied and in sync (live = manifest +
//!   server defaults + annotation).
//! - `ConfigMap old-settings`: applied once, its manifest since removed: a
//!   prune candidate.
//! - `ConfigMap feature-flags`: created imperatively, no last-applied
//!   annotation; the manifest adds a key.
//! - `Secret db-credentials`: the manifest changes the password.
//! - `Widget sprocket` (custom resource): the manifest changes `spec.size`;
//!   another writer set `spec.owner`. Patched with a JSON merge patch.
//!
//! Seeding: put every value of [`demo_seed_objects`], in order (Namespace
//! and CRD first), into the server's store as it is, e.g.
//! `for obj in demo_seed_objects() { server.store().put_object(obj)?; }`;
//! the objects carry uid, resourceVersion, creationTimestamp, generation and
//! managedFields already.

use crate::merge::LAST_APPLIED;
use crate::patchmeta::{ListStrategy, PatchMeta, Schema, Shape};
use serde_json::{Map, Value, json};
use std::io;
use std::path::Path;

/// The namespace of the demo objects.
pub const DEMO_NAMESPACE: &str = "demo";

/// The demo manifest directory: file name and content, in apply order.
pub const DEMO_FILES: &[(&str, &str)] = &[
    (
        "00-namespace.yaml",
        include_str!("../assets/demo/00-namespace.yaml"),
    ),
    (
        "01-crd-widgets.yaml",
        include_str!("../assets/demo/01-crd-widgets.yaml"),
    ),
    (
        "02-configmap-settings.yaml",
        include_str!("../assets/demo/02-configmap-settings.yaml"),
    ),
    (
        "03-service.yaml",
        include_str!("../assets/demo/03-service.yaml"),
    ),
    (
        "04-simple_deployment.yaml",
        include_str!("../assets/demo/04-simple_deployment.yaml"),
    ),
    (
        "05-feature-flags.yaml",
        include_str!("../assets/demo/05-feature-flags.yaml"),
    ),
    (
        "06-secret.yaml",
        include_str!("../assets/demo/06-secret.yaml"),
    ),
    (
        "07-widget.yaml",
        include_str!("../assets/demo/07-widget.yaml"),
    ),
];

/// Write the demo manifest directory into `dir` (created if missing).
pub fn write_demo_manifests(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, text) in DEMO_FILES {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}

/// The manifest of one demo file, as JSON.
fn manifest(file: &str) -> Value {
    let text = DEMO_FILES
        .iter()
        .find(|(name, _)| *name == file)
        .map(|(_, text)| *text)
        .unwrap_or_default();
    // The assets are compiled in and checked by the tests below.
    serde_saphyr::from_str(text).expect("assets/demo manifests are valid YAML")
}

/// The last-applied annotation value kubectl writes for a config: compact
/// JSON with sorted keys and a trailing newline, `annotations: {}` when the
/// config has no other annotation. (serde_json's map is sorted.)
fn last_applied(config: &Value) -> String {
    let mut c = config.clone();
    if let Some(md) = c.get_mut("metadata").and_then(Value::as_object_mut) {
        let ann = md
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(a) = ann.as_object_mut() {
            a.remove(LAST_APPLIED);
        }
    }
    format!("{c}\n")
}

/// Server-side bookkeeping for one seeded object.
struct Meta {
    n: u32,
    created: &'static str,
    generation: Option<u32>,
}

fn stamp(obj: &mut Value, m: &Meta, managed: Vec<Value>) {
    if let Some(md) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        md.insert(
            "uid".into(),
            json!(format!("5e6d0c1a-7f3b-4c2e-9a41-{:012x}", m.n)),
        );
        md.insert("resourceVersion".into(), json!((1000 + m.n).to_string()));
        md.insert("creationTimestamp".into(), json!(m.created));
        if let Some(g) = m.generation {
            md.insert("generation".into(), json!(g));
        }
        md.insert("managedFields".into(), Value::Array(managed));
    }
}

fn add_annotation(obj: &mut Value, key: &str, value: &str) {
    if let Some(md) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        let ann = md
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(a) = ann.as_object_mut() {
            a.insert(key.to_string(), json!(value));
        }
    }
}

fn schema_of(obj: &Value) -> Option<Schema<'static>> {
    PatchMeta::builtin().root(
        obj["apiVersion"].as_str().unwrap_or_default(),
        obj["kind"].as_str().unwrap_or_default(),
    )
}

fn list_fields(list: &[Value], field: Schema<'_>) -> Value {
    let items = field.items();
    match field.list_strategy() {
        ListStrategy::MergeByKey(key) => {
            let keys = field.node().lk.clone().unwrap_or_else(|| vec![key]);
            let mut out = Map::new();
            for elem in list {
                let mut id = Map::new();
                for k in &keys {
                    if let Some(v) = elem.get(k) {
                        id.insert(k.clone(), v.clone());
                    }
                }
                let mut entry = match managed_set(elem, items) {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                entry.insert(".".into(), json!({}));
                out.insert(format!("k:{}", Value::Object(id)), Value::Object(entry));
            }
            Value::Object(out)
        }
        ListStrategy::MergePrimitive => {
            Value::Object(list.iter().map(|v| (format!("v:{v}"), json!({}))).collect())
        }
        ListStrategy::Atomic => json!({}),
    }
}

/// The managedFields set (FieldsV1) of `value`: struct fields `f:`, map
/// entries with `.`, keyed list elements `k:{..}`, set members `v:`.
fn managed_set(value: &Value, schema: Option<Schema<'_>>) -> Value {
    // LabelSelector is an atomic struct (x-kubernetes-map-type: atomic).
    let atomic = schema.is_some_and(|s| {
        s.node().r.as_deref() == Some("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector")
    });
    match value {
        Value::Object(m) if !m.is_empty() && !atomic => {
            let is_map = schema.is_some_and(|s| s.shape() == Shape::Map);
            let mut out = Map::new();
            if is_map {
                out.insert(".".into(), json!({}));
            }
            // Null fields are not tracked.
            for (k, v) in m.iter().filter(|(_, v)| !v.is_null()) {
                let sub = schema.and_then(|s| s.field(k));
                let f = match (v, sub) {
                    (Value::Array(list), Some(field)) => list_fields(list, field),
                    _ => managed_set(v, sub),
                };
                out.insert(format!("f:{k}"), f);
            }
            Value::Object(out)
        }
        _ => json!({}),
    }
}

/// One managedFields entry owning the given parts of `obj` (top-level
/// keys; `metadata` contributes only labels and annotations).
fn managed_entry(
    obj: &Value,
    manager: &str,
    time: &str,
    subresource: Option<&str>,
    parts: &[&str],
) -> Value {
    let schema = schema_of(obj);
    let mut set = Map::new();
    for part in parts {
        let Some(v) = obj.get(*part) else { continue };
        let sub = schema.and_then(|s| s.field(part));
        let v = if *part == "metadata" {
            let mut md = Map::new();
            for k in ["labels", "annotations", "finalizers"] {
                if let Some(x) = v.get(k) {
                    md.insert(k.to_string(), x.clone());
                }
            }
            Value::Object(md)
        } else {
            v.clone()
        };
        set.insert(format!("f:{part}"), managed_set(&v, sub));
    }
    let mut e = json!({
        "apiVersion": obj["apiVersion"],
        "fieldsType": "FieldsV1",
        "fieldsV1": Value::Object(set),
        "manager": manager,
        "operation": "Update",
        "time": time,
    });
    if let (Some(s), Some(m)) = (subresource, e.as_object_mut()) {
        m.insert("subresource".into(), json!(s));
    }
    e
}

/// `kubectl apply` of `config` on an empty cluster: the object as sent
/// (annotation added), before server defaults.
fn applied(config: &Value) -> Value {
    let mut live = config.clone();
    add_annotation(&mut live, LAST_APPLIED, &last_applied(config));
    live
}

/// Client-side apply's managedFields entry: everything the create set,
/// i.e. the object after defaulting, minus status.
fn apply_entry(live: &Value, time: &str) -> Value {
    let parts: Vec<&str> = live
        .as_object()
        .map(|m| {
            m.keys()
                .map(String::as_str)
                .filter(|k| !matches!(*k, "apiVersion" | "kind" | "status"))
                .collect()
        })
        .unwrap_or_default();
    managed_entry(live, "kubectl-client-side-apply", time, None, &parts)
}

fn set(obj: &mut Value, pointer: &str, value: Value) {
    if let Some(slot) = obj.pointer_mut(pointer) {
        *slot = value;
        return;
    }
    // Create the last segment on an existing parent.
    if let Some((parent, key)) = pointer.rsplit_once('/')
        && let Some(Value::Object(m)) = obj.pointer_mut(parent)
    {
        m.insert(key.to_string(), value);
    }
}

fn remove(obj: &mut Value, pointer: &str) {
    if let Some((parent, key)) = pointer.rsplit_once('/')
        && let Some(Value::Object(m)) = obj.pointer_mut(parent)
    {
        m.remove(key);
    }
}

fn merge_into(obj: &mut Value, pointer: &str, extra: Value) {
    if let (Some(Value::Object(m)), Value::Object(extra)) = (obj.pointer_mut(pointer), extra) {
        for (k, v) in extra {
            m.entry(k).or_insert(v);
        }
    }
}

/// Server defaults for a Deployment (apps/v1), as the reference page shows.
fn default_deployment(d: &mut Value) {
    merge_into(
        d,
        "/spec",
        json!({
            "progressDeadlineSeconds": 600,
            "replicas": 1,
            "revisionHistoryLimit": 10,
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
                         "type": "RollingUpdate"},
        }),
    );
    merge_into(
        d,
        "/spec/template/metadata",
        json!({"creationTimestamp": null}),
    );
    merge_into(
        d,
        "/spec/template/spec",
        json!({
            "dnsPolicy": "ClusterFirst",
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "terminationGracePeriodSeconds": 30,
        }),
    );
    if let Some(Value::Array(cs)) = d.pointer_mut("/spec/template/spec/containers") {
        for c in cs {
            merge_into(
                c,
                "",
                json!({
                    "imagePullPolicy": "IfNotPresent",
                    "resources": {},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                }),
            );
            if let Some(Value::Array(ports)) = c.get_mut("ports") {
                for p in ports {
                    merge_into(p, "", json!({"protocol": "TCP"}));
                }
            }
        }
    }
}

fn default_service(s: &mut Value, cluster_ip: &str) {
    merge_into(
        s,
        "/spec",
        json!({
            "clusterIP": cluster_ip,
            "clusterIPs": [cluster_ip],
            "internalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "sessionAffinity": "None",
            "type": "ClusterIP",
        }),
    );
    if let Some(Value::Array(ports)) = s.pointer_mut("/spec/ports") {
        for p in ports {
            merge_into(p, "", json!({"protocol": "TCP"}));
        }
    }
    set(s, "/status", json!({"loadBalancer": {}}));
}

/// The live objects of the demo story, in seeding order.
pub fn demo_seed_objects() -> Vec<Value> {
    const T0: &str = "2026-11-20T09:00:00Z";
    const T1: &str = "2026-11-20T09:05:00Z";
    const T2: &str = "2026-11-21T14:30:00Z";
    let mut out = Vec::new();

    // Namespace demo: applied, in sync.
    let ns_config = manifest("00-namespace.yaml");
    let mut ns = applied(&ns_config);
    let entry = apply_entry(&ns, T0);
    set(
        &mut ns,
        "/metadata/labels/kubernetes.io~1metadata.name",
        json!(DEMO_NAMESPACE),
    );
    set(&mut ns, "/spec", json!({"finalizers": ["kubernetes"]}));
    set(&mut ns, "/status", json!({"phase": "Active"}));
    stamp(
        &mut ns,
        &Meta {
            n: 1,
            created: T0,
            generation: None,
        },
        vec![entry],
    );
    out.push(ns);

    // The CRD: applied, in sync; the server adds conversion and status.
    let crd_config = manifest("01-crd-widgets.yaml");
    let mut crd = applied(&crd_config);
    set(&mut crd, "/spec/conversion", json!({"strategy": "None"}));
    let entry = apply_entry(&crd, T0);
    set(
        &mut crd,
        "/status",
        json!({
            "acceptedNames": {"kind": "Widget", "listKind": "WidgetList",
                              "plural": "widgets", "singular": "widget"},
            "conditions": [
                {"lastTransitionTime": T0, "message": "no conflicts found",
                 "reason": "NoConflicts", "status": "True", "type": "NamesAccepted"},
                {"lastTransitionTime": T0, "message": "the initial names have been accepted",
                 "reason": "InitialNamesAccepted", "status": "True", "type": "Established"}
            ],
            "storedVersions": ["v1"],
        }),
    );
    let status = managed_entry(&crd, "kube-apiserver", T0, Some("status"), &["status"]);
    stamp(
        &mut crd,
        &Meta {
            n: 2,
            created: T0,
            generation: Some(1),
        },
        vec![entry, status],
    );
    out.push(crd);

    // ConfigMap settings: applied, in sync.
    let mut cm = applied(&manifest("02-configmap-settings.yaml"));
    let entry = apply_entry(&cm, T0);
    stamp(
        &mut cm,
        &Meta {
            n: 3,
            created: T0,
            generation: None,
        },
        vec![entry],
    );
    out.push(cm);

    // Service nginx: applied, in sync, with the server's defaults.
    let mut svc = applied(&manifest("03-service.yaml"));
    default_service(&mut svc, "10.96.120.17");
    let mut svc_spec_only = svc.clone();
    remove(&mut svc_spec_only, "/status");
    let entry = apply_entry(&svc_spec_only, T0);
    stamp(
        &mut svc,
        &Meta {
            n: 4,
            created: T0,
            generation: None,
        },
        vec![entry],
    );
    out.push(svc);

    // Deployment: applied from the reference page's simple_deployment.yaml,
    // then scaled to 2 by `kubectl scale`.
    let mut first = manifest("04-simple_deployment.yaml");
    set(
        &mut first,
        "/spec/template/spec/containers/0/image",
        json!("nginx:1.14.2"),
    );
    set(&mut first, "/spec/minReadySeconds", json!(5));
    let mut dep = applied(&first);
    default_deployment(&mut dep);
    let mut apply_owned = dep.clone();
    remove(&mut apply_owned, "/spec/replicas");
    let entry = apply_entry(&apply_owned, T0);
    add_annotation(&mut dep, "deployment.kubernetes.io/revision", "1");
    set(&mut dep, "/spec/replicas", json!(2));
    let scale = json!({
        "apiVersion": "apps/v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:replicas": {}}},
        "manager": "kubectl-scale",
        "operation": "Update",
        "subresource": "scale",
        "time": T2,
    });
    set(
        &mut dep,
        "/status",
        json!({
            "availableReplicas": 2,
            "conditions": [
                {"lastTransitionTime": T0, "lastUpdateTime": T1,
                 "message": "ReplicaSet \"nginx-deployment-6b7f6c6f9d\" has successfully progressed.",
                 "reason": "NewReplicaSetAvailable", "status": "True", "type": "Progressing"},
                {"lastTransitionTime": T2, "lastUpdateTime": T2,
                 "message": "Deployment has minimum availability.",
                 "reason": "MinimumReplicasAvailable", "status": "True", "type": "Available"}
            ],
            "observedGeneration": 2,
            "readyReplicas": 2,
            "replicas": 2,
            "updatedReplicas": 2,
        }),
    );
    let revision = json!({
        "apiVersion": "apps/v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:annotations": {"f:deployment.kubernetes.io/revision": {}}}},
        "manager": "kube-controller-manager",
        "operation": "Update",
        "time": T1,
    });
    let status = managed_entry(
        &dep,
        "kube-controller-manager",
        T2,
        Some("status"),
        &["status"],
    );
    stamp(
        &mut dep,
        &Meta {
            n: 5,
            created: T0,
            generation: Some(2),
        },
        vec![entry, revision, scale, status],
    );
    out.push(dep);

    // ConfigMap feature-flags: `kubectl create configmap` then `kubectl
    // label`; never applied, so no annotation.
    let mut flags = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "feature-flags", "namespace": DEMO_NAMESPACE,
                     "labels": {"app": "demo"}},
        "data": {"beta": "true", "legacy-ui": "on"},
    });
    let created = managed_entry(&flags, "kubectl-create", T1, None, &["data"]);
    let labelled = managed_entry(&flags, "kubectl-label", T1, None, &["metadata"]);
    stamp(
        &mut flags,
        &Meta {
            n: 6,
            created: T1,
            generation: None,
        },
        vec![created, labelled],
    );
    out.push(flags);

    // Secret: applied with the old password.
    let mut old_secret = manifest("06-secret.yaml");
    set(&mut old_secret, "/data/password", json!("czNjcjN0"));
    let mut secret = applied(&old_secret);
    let entry = apply_entry(&secret, T0);
    stamp(
        &mut secret,
        &Meta {
            n: 7,
            created: T0,
            generation: None,
        },
        vec![entry],
    );
    out.push(secret);

    // Widget: applied with size 3; another writer set spec.owner and the
    // controller wrote status.
    let mut old_widget = manifest("07-widget.yaml");
    set(&mut old_widget, "/spec/size", json!(3));
    let mut widget = applied(&old_widget);
    let entry = apply_entry(&widget, T0);
    set(&mut widget, "/spec/owner", json!("team-a"));
    let owner = json!({
        "apiVersion": "demo.kapply.dev/v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:owner": {}}},
        "manager": "kubectl-edit",
        "operation": "Update",
        "time": T2,
    });
    set(
        &mut widget,
        "/status",
        json!({"phase": "Ready", "observedSize": 3}),
    );
    let status = managed_entry(
        &widget,
        "widget-controller",
        T1,
        Some("status"),
        &["status"],
    );
    stamp(
        &mut widget,
        &Meta {
            n: 8,
            created: T0,
            generation: Some(2),
        },
        vec![entry, owner, status],
    );
    out.push(widget);

    // ConfigMap old-settings: applied once; its manifest has been removed.
    let old_settings_config = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "old-settings", "namespace": DEMO_NAMESPACE,
                     "labels": {"app": "demo"}},
        "data": {"MODE": "legacy"},
    });
    let mut old_settings = applied(&old_settings_config);
    let entry = apply_entry(&old_settings, T0);
    stamp(
        &mut old_settings,
        &Meta {
            n: 9,
            created: T0,
            generation: None,
        },
        vec![entry],
    );
    out.push(old_settings);

    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_name<'a>(objs: &'a [Value], kind: &str, name: &str) -> &'a Value {
        objs.iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("{kind} {name} seeded"))
    }

    fn last_applied_of(obj: &Value) -> Option<Value> {
        obj["metadata"]["annotations"][LAST_APPLIED]
            .as_str()
            .map(|s| serde_json::from_str(s).unwrap())
    }

    #[test]
    fn manifests_parse_as_yaml_objects() {
        assert_eq!(DEMO_FILES.len(), 8);
        for (name, text) in DEMO_FILES {
            let v: Value = serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(v["apiVersion"].is_string(), "{name}");
            assert!(v["kind"].is_string(), "{name}");
            assert!(v["metadata"]["name"].is_string(), "{name}");
            assert_eq!(v["metadata"]["labels"]["app"], "demo", "{name}");
        }
    }

    #[test]
    fn writes_the_manifest_directory() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("manifests");
        write_demo_manifests(&target).unwrap();
        for (name, text) in DEMO_FILES {
            assert_eq!(std::fs::read_to_string(target.join(name)).unwrap(), *text);
        }
    }

    #[test]
    fn seeded_objects_are_complete_and_labelled() {
        let objs = demo_seed_objects();
        assert_eq!(objs.len(), 9);
        assert_eq!(objs[0]["kind"], "Namespace");
        assert_eq!(objs[1]["kind"], "CustomResourceDefinition");
        let mut uids = std::collections::BTreeSet::new();
        for o in &objs {
            // Round-trips as JSON.
            let text = serde_json::to_string(o).unwrap();
            assert_eq!(&serde_json::from_str::<Value>(&text).unwrap(), o);
            assert!(o["apiVersion"].is_string() && o["kind"].is_string(), "{o}");
            let md = &o["metadata"];
            assert!(md["name"].is_string(), "{o}");
            assert_eq!(md["labels"]["app"], "demo", "{}", md["name"]);
            assert!(uids.insert(md["uid"].as_str().unwrap().to_string()));
            assert!(md["resourceVersion"].is_string());
            assert!(!md["managedFields"].as_array().unwrap().is_empty());
            let cluster_scoped = matches!(
                o["kind"].as_str(),
                Some("Namespace" | "CustomResourceDefinition")
            );
            if cluster_scoped {
                assert!(md.get("namespace").is_none());
            } else {
                assert_eq!(md["namespace"], DEMO_NAMESPACE);
            }
        }
    }

    #[test]
    fn annotation_is_written_as_kubectl_writes_it() {
        let objs = demo_seed_objects();
        for o in &objs {
            let Some(text) = o["metadata"]["annotations"][LAST_APPLIED].as_str() else {
                continue;
            };
            assert!(text.ends_with("}\n"), "{text:?}");
            let la: Value = serde_json::from_str(text).unwrap();
            // Compact and sorted: serializing again gives the same text.
            assert_eq!(format!("{la}\n"), text);
            assert!(la["metadata"]["annotations"].is_object());
            assert!(la["metadata"].get("uid").is_none());
            assert!(la.get("status").is_none());
        }
        // In-sync objects: the annotation is exactly their manifest.
        for (file, kind, name) in [
            ("00-namespace.yaml", "Namespace", "demo"),
            (
                "01-crd-widgets.yaml",
                "CustomResourceDefinition",
                "widgets.demo.kapply.dev",
            ),
            ("02-configmap-settings.yaml", "ConfigMap", "settings"),
            ("03-service.yaml", "Service", "nginx"),
        ] {
            let mut expected = manifest(file);
            expected["metadata"]["annotations"] = json!({});
            assert_eq!(last_applied_of(by_name(&objs, kind, name)), Some(expected));
        }
        let la = last_applied_of(by_name(&objs, "ConfigMap", "settings")).unwrap();
        assert_eq!(
            la.to_string(),
            r#"{"apiVersion":"v1","data":{"GREETING":"hello","LOG_LEVEL":"info"},"kind":"ConfigMap","metadata":{"annotations":{},"labels":{"app":"demo"},"name":"settings","namespace":"demo"}}"#
        );
    }

    #[test]
    fn deployment_story_matches_the_reference_page() {
        let objs = demo_seed_objects();
        let dep = by_name(&objs, "Deployment", "nginx-deployment");
        let spec = &dep["spec"];
        assert_eq!(spec["replicas"], 2);
        assert_eq!(spec["minReadySeconds"], 5);
        assert_eq!(spec["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        let c = &spec["template"]["spec"]["containers"][0];
        assert_eq!(c["image"], "nginx:1.14.2");
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
        assert_eq!(
            c["ports"][0],
            json!({"containerPort": 80, "protocol": "TCP"})
        );
        let la = last_applied_of(dep).unwrap();
        assert!(la["spec"].get("replicas").is_none());
        assert_eq!(la["spec"]["minReadySeconds"], 5);
        // The manifest moved on.
        let now = manifest("04-simple_deployment.yaml");
        assert_eq!(
            now["spec"]["template"]["spec"]["containers"][0]["image"],
            "nginx:1.16.1"
        );
        assert!(now["spec"].get("minReadySeconds").is_none());
        // kubectl scale owns replicas; apply does not.
        let managed = dep["metadata"]["managedFields"].as_array().unwrap();
        let scale = managed
            .iter()
            .find(|m| m["manager"] == "kubectl-scale")
            .unwrap();
        assert_eq!(scale["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
        let apply = managed
            .iter()
            .find(|m| m["manager"] == "kubectl-client-side-apply")
            .unwrap();
        assert!(apply["fieldsV1"]["f:spec"].get("f:replicas").is_none());
        assert!(apply["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
            ["k:{\"name\":\"nginx\"}"]
            .get("f:image")
            .is_some());
    }

    #[test]
    fn other_story_objects() {
        let objs = demo_seed_objects();
        // Imperative: no annotation, manifest exists.
        let flags = by_name(&objs, "ConfigMap", "feature-flags");
        assert!(last_applied_of(flags).is_none());
        assert!(
            DEMO_FILES
                .iter()
                .any(|(_, t)| t.contains("name: feature-flags"))
        );
        // Prune candidate: annotation, no manifest.
        let old = by_name(&objs, "ConfigMap", "old-settings");
        assert!(last_applied_of(old).is_some());
        assert!(!DEMO_FILES.iter().any(|(_, t)| t.contains("old-settings")));
        // Secret: one key differs between last-applied and the manifest.
        let secret = by_name(&objs, "Secret", "db-credentials");
        let la = last_applied_of(secret).unwrap();
        let now = manifest("06-secret.yaml");
        assert_eq!(la["data"]["username"], now["data"]["username"]);
        assert_ne!(la["data"]["password"], now["data"]["password"]);
        assert_eq!(secret["data"], la["data"]);
        // Widget: a custom resource, size changed, owner set by another writer.
        let w = by_name(&objs, "Widget", "sprocket");
        assert!(
            PatchMeta::builtin()
                .root("demo.kapply.dev/v1", "Widget")
                .is_none()
        );
        assert_eq!(last_applied_of(w).unwrap()["spec"]["size"], 3);
        assert_eq!(manifest("07-widget.yaml")["spec"]["size"], 5);
        assert_eq!(w["spec"]["owner"], "team-a");
        // Service defaults.
        let svc = by_name(&objs, "Service", "nginx");
        assert_eq!(svc["spec"]["ports"][0]["protocol"], "TCP");
        assert_eq!(svc["spec"]["clusterIP"], "10.96.120.17");
    }
}
