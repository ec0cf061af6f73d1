//! The plan: verdicts, warnings, partial configs, masking, rendering.

#[path = "common/kubectl.rs"]
mod kubectl;
#[path = "common/plan_json.rs"]
mod plan_json;

use kapply::manifest::{Manifest, Source};
use kapply::mask::mask_secret;
use kapply::merge::{FieldAction, LAST_APPLIED, last_applied_annotation, three_way};
use kapply::objref::{ObjectRef, split_api_version};
use kapply::patchmeta::PatchMeta;
use kapply::plan::{
    ObjectAction, ObjectPlan, Plan, PlanOptions, error_object, field_owners, partial_config,
    plan_object, prune_candidate, render_diff, render_diff_terminal, to_json,
};
use serde_json::{Value, json};

fn manifest(object: Value) -> Manifest {
    let api = object["apiVersion"].as_str().unwrap().to_string();
    Manifest::new(
        ObjectRef::from_object(&object).unwrap(),
        split_api_version(&api).1.to_string(),
        object,
        Source {
            file: "app.yaml".into(),
            line: 1,
        },
    )
}

/// The plan of `config` against `live`, with default options.
fn plan_against(config: Value, live: &Value) -> ObjectPlan {
    plan_object(&manifest(config), Some(live), &PlanOptions::default())
}

/// Asserts that some warning of `p` contains `text`.
fn assert_warns(p: &ObjectPlan, text: &str) {
    assert!(
        p.warnings.iter().any(|w| w.contains(text)),
        "no warning with {text:?}: {:?}",
        p.warnings
    );
}

fn annotated(mut live: Value, last_applied: &Value) -> Value {
    live["metadata"]["annotations"][LAST_APPLIED] = json!(last_applied_annotation(last_applied));
    live
}

fn deployment(image: &str, min_ready: Option<i64>) -> Value {
    let mut v = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nginx-deployment", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {"metadata": {"labels": {"app": "nginx"}},
                         "spec": {"containers": [{"name": "nginx", "image": image}]}}
        }
    });
    if let Some(m) = min_ready {
        v["spec"]["minReadySeconds"] = json!(m);
    }
    v
}

fn scaled_live(la: &Value) -> Value {
    let mut live = annotated(la.clone(), la);
    live["spec"]["replicas"] = json!(2);
    live["spec"]["strategy"] = json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}});
    live["metadata"]["managedFields"] = json!([
        {"manager": "kubectl-client-side-apply", "operation": "Update", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}}},
                      "f:spec": {"f:template": {"f:spec": {"f:containers": {
                          "k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:name": {},
                              "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                                  ".": {}, "f:containerPort": {}}}}}}}}}},
        {"manager": "kubectl-scale", "operation": "Update", "subresource": "scale",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
    ]);
    live
}

#[test]
fn update_unchanged_and_create_verdicts() {
    let la = deployment("nginx:1.14.2", Some(5));
    let live = scaled_live(&la);
    let opts = PlanOptions::default();

    let upd = plan_object(
        &manifest(deployment("nginx:1.16.1", None)),
        Some(&live),
        &opts,
    );
    assert_eq!(upd.action, ObjectAction::Update);
    assert_eq!(upd.source.as_deref(), Some("app.yaml:1"));
    assert!(upd.warnings.is_empty(), "{:?}", upd.warnings);
    let patch = upd.patch.as_ref().unwrap();
    assert_eq!(patch.body["spec"]["minReadySeconds"], Value::Null);
    assert_eq!(
        upd.last_applied.as_ref().unwrap()["spec"]["template"]["spec"]["containers"][0]["image"],
        json!("nginx:1.16.1")
    );
    let actions: Vec<(&str, FieldAction)> = upd
        .fields
        .iter()
        .map(|f| (f.path.as_str(), f.action))
        .collect();
    assert!(actions.contains(&("spec.replicas", FieldAction::Keep)));
    let replicas = upd
        .fields
        .iter()
        .find(|f| f.path == "spec.replicas")
        .unwrap();
    assert_eq!(
        replicas.explain(kapply::merge::Form::Reason),
        "live only: owned by another writer, kubectl-scale (not in config or last-applied)"
    );
    assert!(actions.contains(&("spec.minReadySeconds", FieldAction::Clear)));
    assert!(actions.contains(&(
        "spec.template.spec.containers[name=nginx].image",
        FieldAction::Set
    )));

    let same = plan_object(&manifest(la.clone()), Some(&live), &opts);
    assert_eq!(same.action, ObjectAction::Unchanged);
    assert_eq!(same.patch, None);

    let new = plan_object(&manifest(la.clone()), None, &opts);
    assert_eq!(new.action, ObjectAction::Create);
    assert_eq!(new.patch, None);
    assert!(new.fields.iter().all(|f| f.action == FieldAction::Set));
    assert_eq!(
        new.last_applied.as_ref().unwrap()["metadata"]["annotations"],
        json!({})
    );

    let plan = Plan {
        objects: vec![same.clone()],
        prune_skipped: None,
    };
    assert!(!plan.has_changes());
    let plan = Plan {
        objects: vec![same, upd],
        prune_skipped: None,
    };
    assert!(plan.has_changes());
}

#[test]
fn applyset_labels_are_added_to_the_config() {
    let la = deployment("nginx:1.14.2", None);
    let mut opts = PlanOptions::default();
    opts.labels.insert(
        "applyset.kubernetes.io/part-of".into(),
        "applyset-abc-v1".into(),
    );
    let p = plan_object(&manifest(la.clone()), None, &opts);
    assert_eq!(
        p.last_applied.unwrap()["metadata"]["labels"]["applyset.kubernetes.io/part-of"],
        json!("applyset-abc-v1")
    );
}

#[test]
fn missing_annotation_warns_and_deletes_nothing() {
    let mut live = deployment("nginx:1.14.2", Some(5));
    live["spec"]["replicas"] = json!(3);
    let p = plan_against(deployment("nginx:1.16.1", None), &live);
    assert_eq!(p.action, ObjectAction::Update);
    assert_eq!(p.warnings.len(), 1);
    assert!(p.warnings[0].contains("created imperatively"));
    assert!(p.warnings[0].contains("apply cannot clear what it never recorded"));
    assert!(p.fields.iter().all(|f| f.action != FieldAction::Clear));
    assert!(
        p.patch.as_ref().unwrap().body["spec"]
            .get("minReadySeconds")
            .is_none()
    );
}

#[test]
fn missing_annotation_on_a_server_side_applied_object_names_its_appliers() {
    let mut live = deployment("nginx:1.14.2", Some(5));
    live["metadata"]["managedFields"] = json!([
        {"manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
         "fieldsType": "FieldsV1", "subresource": "status", "fieldsV1": {"f:status": {}}},
        {"manager": "flux", "operation": "Apply", "apiVersion": "apps/v1",
         "fieldsType": "FieldsV1", "subresource": "scale", "fieldsV1": {"f:spec": {}}},
    ]);
    let p = plan_against(deployment("nginx:1.16.1", None), &live);
    assert_eq!(p.action, ObjectAction::Update);
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    assert!(
        p.warnings[0].contains("the object is applied server-side (by kubectl)"),
        "{}",
        p.warnings[0]
    );
    assert!(!p.warnings[0].contains("created imperatively"));
    assert!(p.fields.iter().all(|f| f.action != FieldAction::Clear));
}

#[test]
fn strategy_recreate_warning_says_retain_keys_clears_rolling_update() {
    let la = deployment("nginx:1.14.2", None);
    let live = scaled_live(&la);
    let mut config = la.clone();
    config["spec"]["strategy"] = json!({"type": "Recreate"});
    let p = plan_against(config, &live);
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    assert!(p.warnings[0].contains("$retainKeys clears it"));

    // With rollingUpdate also in the config the server rejects it.
    let mut bad = la.clone();
    bad["spec"]["strategy"] = json!({"type": "Recreate", "rollingUpdate": {"maxSurge": 1}});
    let p = plan_against(bad, &live);
    assert_warns(&p, "will reject");
}

#[test]
fn immutable_field_changes_are_warned() {
    // Deployment selector
    let la = deployment("nginx:1.14.2", None);
    let live = scaled_live(&la);
    let mut config = la.clone();
    config["spec"]["selector"]["matchLabels"]["tier"] = json!("web");
    let p = plan_against(config, &live);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.starts_with("spec.selector is immutable")),
        "{:?}",
        p.warnings
    );

    // Service clusterIP
    let svc = |ip: &str| {
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "s", "namespace": "default"},
               "spec": {"clusterIP": ip, "ports": [{"port": 80}]}})
    };
    let live = annotated(svc("10.0.0.1"), &svc("10.0.0.1"));
    let p = plan_against(svc("10.0.0.2"), &live);
    assert_warns(&p, "spec.clusterIP is immutable");

    // ConfigMap with immutable: true
    let cm = |v: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "immutable": true,
               "metadata": {"name": "c", "namespace": "default"}, "data": {"k": v}})
    };
    let live = annotated(cm("1"), &cm("1"));
    let p = plan_against(cm("2"), &live);
    assert_warns(&p, "immutable: true");

    // PVC storage class vs requests
    let pvc = |class: &str, size: &str| {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": "d", "namespace": "default"},
               "spec": {"storageClassName": class, "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": size}}}})
    };
    let live = annotated(pvc("fast", "1Gi"), &pvc("fast", "1Gi"));
    let grow = plan_against(pvc("fast", "2Gi"), &live);
    assert!(grow.warnings.is_empty(), "{:?}", grow.warnings);
    let class = plan_against(pvc("slow", "1Gi"), &live);
    assert_warns(&class, "spec.storageClassName");

    // StatefulSet volumeClaimTemplates
    let sts = |size: &str| {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
               "metadata": {"name": "db", "namespace": "default"},
               "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                        "template": {"metadata": {"labels": {"app": "db"}},
                                     "spec": {"containers": [{"name": "db", "image": "db"}]}},
                        "volumeClaimTemplates": [{"metadata": {"name": "data"},
                            "spec": {"resources": {"requests": {"storage": size}}}}]}})
    };
    let live = annotated(sts("1Gi"), &sts("1Gi"));
    let p = plan_against(sts("2Gi"), &live);
    assert_warns(&p, "spec.volumeClaimTemplates is immutable");
}

#[test]
fn invalid_annotation_is_an_error_object() {
    let mut live = deployment("nginx:1.14.2", None);
    live["metadata"]["annotations"] = json!({LAST_APPLIED: "{not json"});
    let p = plan_against(deployment("nginx:1.16.1", None), &live);
    assert_eq!(p.action, ObjectAction::Error);
    assert!(
        p.error
            .as_deref()
            .unwrap()
            .starts_with("Deployment default/nginx-deployment: ")
    );
}

#[test]
fn prune_and_error_objects() {
    let live = annotated(deployment("x", None), &deployment("x", None));
    let p = prune_candidate(&live, "not in the manifests; has the annotation".into());
    assert_eq!(p.action, ObjectAction::Prune);
    assert_eq!(p.kind, "Deployment");
    assert_eq!(p.namespace.as_deref(), Some("default"));
    assert_eq!(p.source, None);
    let e = error_object(
        "apps/v1",
        "Deployment",
        Some("default"),
        "x",
        Some("a.yaml:3".into()),
        "boom".into(),
    );
    assert_eq!(e.action, ObjectAction::Error);
    let json: Value = serde_json::from_str(&to_json(&Plan {
        objects: vec![p, e],
        prune_skipped: None,
    }))
    .unwrap();
    assert_eq!(json["objects"][0]["action"], json!("prune"));
    assert_eq!(json["objects"][1]["error"], json!("boom"));
    assert_eq!(json["objects"][1]["source"], json!("a.yaml:3"));
}

#[test]
fn partial_config_applies_only_accepted_changes() {
    let la = deployment("nginx:1.14.2", Some(5));
    let live = scaled_live(&la);
    let config = deployment("nginx:1.16.1", None);
    let accepted = vec!["spec.template.spec.containers[name=nginx].image".into()];
    let partial = partial_config(&config, Some(&la), &accepted);
    assert_eq!(partial["spec"]["minReadySeconds"], json!(5));
    assert_eq!(
        partial["spec"]["template"]["spec"]["containers"][0]["image"],
        json!("nginx:1.16.1")
    );
    let schema = PatchMeta::builtin().root("apps/v1", "Deployment");
    let tw = three_way(&partial, &live, Some(&la), schema).unwrap();
    let body = tw.patch.unwrap().body;
    assert!(body["spec"].get("minReadySeconds").is_none());
    if let Some(result) = kubectl::kubectl_patch(&live, &body, true) {
        assert_eq!(result["spec"]["minReadySeconds"], json!(5));
        assert_eq!(
            result["spec"]["template"]["spec"]["containers"][0]["image"],
            json!("nginx:1.16.1")
        );
        // The skipped change stays pending for the next apply.
        let recorded = kubectl::last_applied(&result).unwrap();
        let next = three_way(&config, &result, Some(&recorded), schema).unwrap();
        assert!(
            next.fields
                .iter()
                .any(|f| f.path == "spec.minReadySeconds" && f.action == FieldAction::Clear)
        );
    }

    // Skipping a new keyed element and accepting nothing else.
    let mut two = deployment("nginx:1.14.2", Some(5));
    two["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "sidecar", "image": "s:1"}));
    let partial = partial_config(&two, Some(&la), &[]);
    assert_eq!(partial, la);
}

fn secret(v: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
           "metadata": {"name": "db", "namespace": "default"},
           "data": {"password": v}, "stringData": {"token": "plain-token"}})
}

#[test]
fn secrets_are_masked_everywhere_shown() {
    let masked = mask_secret(&annotated(secret("c2VjcmV0"), &secret("c2VjcmV0")));
    let text = masked.to_string();
    assert!(!text.contains("c2VjcmV0"), "{text}");
    assert!(!text.contains("plain-token"), "{text}");
    assert_eq!(masked["data"]["password"], json!("***"));

    let live = annotated(secret("b2xk"), &secret("b2xk"));
    let p = plan_against(secret("bmV3"), &live);
    assert_eq!(p.action, ObjectAction::Update);
    // The plan itself keeps the real patch (it is sent) ...
    assert!(p.patch.as_ref().unwrap().body.to_string().contains("bmV3"));
    let plan = Plan {
        objects: vec![p],
        prune_skipped: None,
    };
    // ... but nothing shown contains a value.
    for shown in [
        to_json(&plan),
        render_diff(&plan, false),
        render_diff(&plan, true),
    ] {
        for secret_value in ["bmV3", "b2xk", "plain-token"] {
            assert!(!shown.contains(secret_value), "{secret_value} in {shown}");
        }
    }
    assert!(render_diff(&plan, false).contains("data.password"));
}

#[test]
fn field_owners_from_managed_fields() {
    let live = scaled_live(&deployment("nginx:1.14.2", None));
    let owners = field_owners(&live);
    assert_eq!(
        owners.get("spec.replicas").map(String::as_str),
        Some("kubectl-scale")
    );
    assert_eq!(
        owners
            .get("spec.template.spec.containers[name=nginx].image")
            .map(String::as_str),
        Some("kubectl-client-side-apply")
    );
    // Elements keyed by several fields are named by the patch merge key,
    // as the field plan names them.
    assert_eq!(
        owners
            .get("spec.template.spec.containers[name=nginx].ports[containerPort=80].containerPort")
            .map(String::as_str),
        Some("kubectl-client-side-apply")
    );
    assert_eq!(
        owners
            .get("metadata.annotations[\"kubectl.kubernetes.io/last-applied-configuration\"]")
            .map(String::as_str),
        Some("kubectl-client-side-apply")
    );
}

#[test]
fn render_diff_plain_and_coloured() {
    let la = deployment("nginx:1.14.2", Some(5));
    let live = scaled_live(&la);
    let p = plan_against(deployment("nginx:1.16.1", None), &live);
    let plan = Plan {
        objects: vec![p],
        prune_skipped: None,
    };
    let plain = render_diff(&plan, false);
    assert!(
        plain.starts_with("~ Deployment default/nginx-deployment (update)  app.yaml:1\n"),
        "{plain}"
    );
    assert!(plain.contains(
        "set   spec.template.spec.containers[name=nginx].image  last-applied: \"nginx:1.14.2\" | live: \"nginx:1.14.2\" | config: \"nginx:1.16.1\"  (config differs from live)"
    ), "{plain}");
    assert!(plain.contains(
        "clear spec.minReadySeconds  last-applied: 5 | live: 5 | config: -  (in last-applied, removed from config)"
    ), "{plain}");
    assert!(
        plain.contains("keep  spec.replicas  last-applied: - | live: 2 | config: -"),
        "{plain}"
    );
    assert!(!plain.contains('\x1b'));
    let colour = render_diff(&plan, true);
    assert!(
        colour.contains("\x1b[31mclear spec.minReadySeconds"),
        "{colour}"
    );
    assert!(colour.contains("\x1b[33mset   spec.template"), "{colour}");
}

#[test]
fn plan_json_contract() {
    let la = deployment("nginx:1.14.2", Some(5));
    let live = scaled_live(&la);
    let mut config = deployment("nginx:1.16.1", None);
    config["spec"]["paused"] = Value::Null;
    let p = plan_against(config, &live);
    let json: Value = serde_json::from_str(&to_json(&Plan {
        objects: vec![p],
        prune_skipped: None,
    }))
    .unwrap();
    let o = &json["objects"][0];
    for key in plan_json::OBJECT_KEYS {
        assert!(o.get(key).is_some(), "missing {key} in {o}");
    }
    assert!(o.get("error").is_none());
    assert_eq!(o["patch"]["type"], json!("strategic"));
    assert_eq!(o["revertsDrift"], json!(false));
    let fields = o["fields"].as_array().unwrap();
    for f in fields {
        for key in plan_json::FIELD_KEYS {
            assert!(f.get(key).is_some(), "missing {key} in {f}");
        }
    }
    let replicas = fields
        .iter()
        .find(|f| f["path"] == "spec.replicas")
        .unwrap();
    // A side with no value omits its key; an explicit null stays.
    assert!(replicas.get("config").is_none());
    assert!(replicas.get("lastApplied").is_none());
    assert_eq!(replicas["action"], json!("keep"));
    // Live has no spec.paused: the null the patch sends changes nothing
    // there, so no row says it does.
    assert!(fields.iter().all(|f| f["path"] != "spec.paused"), "{o}");
    assert_eq!(o["patch"]["body"]["spec"]["paused"], Value::Null);
    let warnings = o["warnings"].as_array().unwrap();
    assert_eq!(
        warnings,
        &vec![json!(
            "explicit null in the config (spec.paused): kubectl sends it on every apply \
             and reports the object configured even when nothing changes"
        )]
    );
}

#[test]
fn order_only_and_annotation_only_updates_are_explained() {
    // Live has a container the config does not name: kubectl re-sends the
    // element order on every apply, but the object the server holds after
    // it is live as it is: unchanged, nothing to send (kubectl diff agrees).
    let la = deployment("nginx:1.14.2", None);
    let mut live = annotated(la.clone(), &la);
    live["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "injected", "image": "sidecar:1"}));
    let p = plan_against(la.clone(), &live);
    assert_eq!(p.action, ObjectAction::Unchanged);
    assert!(p.patch.is_none());
    assert!(!p.reverts_drift);
    assert!(
        p.fields.iter().all(|f| f.action == FieldAction::Keep),
        "{:#?}",
        p.fields
    );
    // The element order is a change where it moves the config's elements.
    let mut two = la.clone();
    two["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "side", "image": "sidecar:1"}));
    let mut moved = annotated(two.clone(), &two);
    moved["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .reverse();
    let p = plan_against(two.clone(), &moved);
    assert_eq!(p.action, ObjectAction::Update);
    let order = p
        .fields
        .iter()
        .find(|f| f.path == "spec.template.spec.containers")
        .unwrap();
    assert_eq!(order.reason, kapply::merge::Reason::ElementOrder);
    assert_eq!(
        order.config,
        Some(json!([{"name": "nginx"}, {"name": "side"}]))
    );
    assert_eq!(
        order.live,
        Some(json!([{"name": "side"}, {"name": "nginx"}]))
    );
    assert!(!p.annotation_only);

    // Live already matches the config, but the annotation records an older
    // config: only the annotation is sent.
    let old = deployment("nginx:1.13", None);
    let live = annotated(la.clone(), &old);
    let p = plan_against(la.clone(), &live);
    assert_eq!(p.action, ObjectAction::Update);
    // kubectl diff leaves the annotation out: no difference there.
    assert!(p.annotation_only);
    assert_eq!(p.fields.len(), 1, "{:#?}", p.fields);
    assert_eq!(
        p.fields[0].path,
        "metadata.annotations[\"kubectl.kubernetes.io/last-applied-configuration\"]"
    );

    // For a Secret that row is masked too.
    let s_old = secret("b2xk");
    let s_new = secret("bmV3");
    let mut live = annotated(s_new.clone(), &s_old);
    live.as_object_mut().unwrap().remove("stringData");
    let mut config = s_new.clone();
    config.as_object_mut().unwrap().remove("stringData");
    let p = plan_against(config, &live);
    let shown = render_diff(
        &Plan {
            objects: vec![p],
            prune_skipped: None,
        },
        false,
    );
    assert!(
        !shown.contains("b2xk") && !shown.contains("bmV3"),
        "{shown}"
    );
    assert!(shown.contains("last-applied-configuration"), "{shown}");
}

#[test]
fn service_type_change_warns_about_type_dependent_defaults() {
    let svc = |t: &str| {
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "s", "namespace": "default"},
               "spec": {"type": t, "selector": {"app": "x"}, "ports": [{"port": 80}]}})
    };
    let mut live = annotated(svc("NodePort"), &svc("NodePort"));
    live["spec"]["clusterIP"] = json!("10.0.0.7");
    live["spec"]["ports"][0]["nodePort"] = json!(30080);
    let p = plan_against(svc("ClusterIP"), &live);
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    assert!(p.warnings[0].contains("spec.type changes from NodePort to ClusterIP"));
    assert!(p.warnings[0].contains("spec.ports[*].nodePort"));
    // The clusterIP the server allocated is not touched: no immutable warning.
    assert!(!p.warnings[0].contains("immutable"));
}

#[test]
fn partial_from_plan_skips_changes_even_where_live_drifted() {
    let la = deployment("nginx:1.14.2", Some(5));
    let mut live = scaled_live(&la);
    // Another writer changed the image; the config still says 1.14.2.
    live["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:hotfix");
    let mut config = deployment("nginx:1.14.2", None);
    config["metadata"]["labels"] = json!({"team": "web"});
    let p = plan_against(config.clone(), &live);
    let paths: Vec<&str> = p
        .fields
        .iter()
        .filter(|f| f.action != FieldAction::Keep)
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(
        paths,
        [
            "metadata.labels.team",
            "spec.minReadySeconds",
            "spec.template.spec.containers[name=nginx].image"
        ]
    );
    // Accept only the label.
    let partial = kapply::plan::partial_from_plan(&p, &["metadata.labels.team".into()]).unwrap();
    let schema = PatchMeta::builtin().root("apps/v1", "Deployment");
    let tw = three_way(&partial, &live, Some(&la), schema).unwrap();
    if let Some(result) = kubectl::kubectl_patch(&live, &tw.patch.unwrap().body, true) {
        assert_eq!(result["metadata"]["labels"]["team"], json!("web"));
        assert_eq!(result["spec"]["minReadySeconds"], json!(5));
        assert_eq!(
            result["spec"]["template"]["spec"]["containers"][0]["image"],
            json!("nginx:hotfix")
        );
        // Both skipped changes are still pending.
        let recorded = kubectl::last_applied(&result).unwrap();
        let again = three_way(&config, &result, Some(&recorded), schema).unwrap();
        let pending: Vec<(&str, FieldAction)> = again
            .fields
            .iter()
            .filter(|f| f.action != FieldAction::Keep)
            .map(|f| (f.path.as_str(), f.action))
            .collect();
        assert_eq!(
            pending,
            [
                ("spec.minReadySeconds", FieldAction::Clear),
                (
                    "spec.template.spec.containers[name=nginx].image",
                    FieldAction::Set
                )
            ]
        );
    }
}

/// The issue's example plus every other cause: data.a edited in the
/// cluster (drift, named writer and time), data.b changed in the manifest
/// (intended), data.c new, data.d removed, data.e another writer's,
/// data.f defaulted under apply's own manager.
fn drifted_configmap() -> (Value, Value) {
    let la = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "default"},
        "data": {"a": "1", "b": "1", "d": "1"}});
    let mut live = annotated(la.clone(), &la);
    live["data"] = json!({"a": "hotfix", "b": "1", "d": "1", "e": "x", "f": "y"});
    live["metadata"]["managedFields"] = json!([
        {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1",
         "time": "2026-11-19T08:00:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:data": {"f:b": {}, "f:d": {}, "f:f": {}}}},
        {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "v1",
         "time": "2026-11-20T10:04:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:data": {"f:a": {}}}},
        {"manager": "kubectl-patch", "operation": "Update", "apiVersion": "v1",
         "time": "2026-11-20T11:00:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:data": {"f:e": {}}}}
    ]);
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "default"},
        "data": {"a": "1", "b": "2", "c": "3"}});
    (config, live)
}

#[test]
fn every_field_row_has_a_cause() {
    use kapply::merge::Cause;
    let (config, live) = drifted_configmap();
    let p = plan_against(config.clone(), &live);
    let cause = |path: &str| {
        let f = p.fields.iter().find(|f| f.path == path).unwrap();
        (f.cause, f.owner.clone(), f.changed_at.clone())
    };
    assert_eq!(
        cause("data.a"),
        (
            Cause::Drift,
            Some("kubectl-edit".into()),
            Some("2026-11-20T10:04:00Z".into())
        )
    );
    assert_eq!(cause("data.b"), (Cause::Intended, None, None));
    assert_eq!(cause("data.c"), (Cause::New, None, None));
    assert_eq!(cause("data.d"), (Cause::Removed, None, None));
    assert_eq!(
        cause("data.e"),
        (Cause::OtherWriter, Some("kubectl-patch".into()), None)
    );
    // Apply's manager alone owns data.f, yet nothing names it and no
    // server defaults a ConfigMap key: apply released it.
    assert_eq!(cause("data.f"), (Cause::OtherWriter, None, None));
    let f = p.fields.iter().find(|f| f.path == "data.f").unwrap();
    assert_eq!(f.reason, kapply::merge::Reason::Released);
    assert!(p.reverts_drift);
    let drift = p.fields.iter().find(|f| f.path == "data.a").unwrap();
    assert_eq!(
        drift.explain(kapply::merge::Form::Text),
        "drift: changed by kubectl-edit at 2026-11-20T10:04:00Z; apply reverts it"
    );

    // The JSON: `cause` beside `reason`, `owner` and `changedAt` where
    // they apply, `revertsDrift` on the object.
    let json: Value = serde_json::from_str(&to_json(&Plan {
        objects: vec![p.clone()],
        prune_skipped: None,
    }))
    .unwrap();
    let o = &json["objects"][0];
    assert_eq!(o["revertsDrift"], json!(true));
    let row = |path: &str| {
        o["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .unwrap()
            .clone()
    };
    let a = row("data.a");
    assert_eq!(a["cause"], "drift");
    assert_eq!(a["owner"], "kubectl-edit");
    assert_eq!(a["changedAt"], "2026-11-20T10:04:00Z");
    assert_eq!(row("data.e")["cause"], "other-writer");
    assert_eq!(row("data.e")["owner"], "kubectl-patch");
    assert_eq!(row("data.f")["cause"], "other-writer");
    assert!(row("data.f").get("owner").is_none());
    for (path, c) in [
        ("data.b", "intended"),
        ("data.c", "new"),
        ("data.d", "removed"),
    ] {
        assert_eq!(row(path)["cause"], c, "{path}");
        assert!(row(path).get("owner").is_none(), "{path}");
    }
    for f in o["fields"].as_array().unwrap() {
        assert!(plan_json::CAUSES.contains(&f["cause"].as_str().unwrap()));
    }

    // Without the annotation, apply cannot tell a change from a drift.
    let mut bare = live.clone();
    bare["metadata"]["annotations"] = json!({});
    let p = plan_against(config.clone(), &bare);
    let a = p.fields.iter().find(|f| f.path == "data.a").unwrap();
    assert_eq!(a.cause, Cause::Unmanaged);
    assert!(!p.reverts_drift);

    // A new object: every field is new.
    let p = plan_object(&manifest(config), None, &PlanOptions::default());
    assert!(!p.fields.is_empty());
    assert!(p.fields.iter().all(|f| f.cause == Cause::New));

    // Config, live and last-applied agree except for the drift: reverting
    // it is the whole update.
    let (mut config, live) = drifted_configmap();
    config["data"] = json!({"a": "1", "b": "1", "d": "1"});
    let p = plan_against(config, &live);
    assert_eq!(p.action, ObjectAction::Update);
    assert!(p.reverts_drift);
    let changes: Vec<_> = p
        .fields
        .iter()
        .filter(|f| f.action != FieldAction::Keep)
        .map(|f| (f.path.as_str(), f.cause))
        .collect();
    assert_eq!(changes, vec![("data.a", Cause::Drift)]);
}

/// A keyed element someone deleted in the cluster is re-added: a drift
/// with no writer to name (deleted fields leave managedFields).
#[test]
fn a_deleted_element_is_drift_without_a_writer() {
    use kapply::merge::Cause;
    let mut la = deployment("nginx:1.14.2", None);
    la["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "sidecar", "image": "busybox"}));
    let mut live = annotated(la.clone(), &la);
    live["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .pop();
    let p = plan_against(la, &live);
    let f = p
        .fields
        .iter()
        .find(|f| f.path == "spec.template.spec.containers[name=sidecar]")
        .unwrap();
    assert_eq!(f.cause, Cause::Drift);
    assert_eq!(f.owner, None);
    assert_eq!(
        f.explain(kapply::merge::Form::Text),
        "drift: changed in the cluster; apply reverts it"
    );
    assert!(p.reverts_drift);
}

/// The live object after kubectl's own strategic merge of the plan's
/// patch (`kubectl patch --local`): what the hazard words must describe.
/// `None` without kubectl (the test skips; under KAPPLY_CI it fails).
fn merged_by_kubectl(p: &ObjectPlan, live: &Value) -> Option<Value> {
    let patch = p.patch.as_ref().expect("a patch");
    kubectl::kubectl_patch(live, &patch.body, true)
}

fn hazard_row<'p>(p: &'p ObjectPlan, path: &str) -> &'p kapply::merge::FieldChange {
    p.fields
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("no row {path}: {:#?}", p.fields))
}

/// One managedFields entry of `manager` owning `fields` (fieldsV1).
fn managed(manager: &str, time: &str, fields: Value) -> Value {
    json!({"manager": manager, "operation": "Update", "apiVersion": "apps/v1",
        "time": time, "fieldsType": "FieldsV1", "fieldsV1": fields})
}

const NGINX: &str = "spec.template.spec.containers[name=nginx]";

/// containerPort 53 TCP and UDP, env A twice: the patch names each pair by
/// its one merge key, so the server keeps one element; the words say which.
#[test]
fn duplicate_merge_keys_say_which_element_survives() {
    use kapply::merge::HazardKind;
    let mut la = deployment("coredns:1", None);
    let c = &mut la["spec"]["template"]["spec"]["containers"][0];
    c["ports"] = json!([{"containerPort": 53, "protocol": "TCP"}]);
    c["env"] = json!([{"name": "A", "value": "1"}]);
    let live = annotated(la.clone(), &la);
    let mut config = la.clone();
    let c = &mut config["spec"]["template"]["spec"]["containers"][0];
    c["ports"] =
        json!([{"containerPort": 53, "protocol": "TCP"}, {"containerPort": 53, "protocol": "UDP"}]);
    c["env"] = json!([{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]);
    let p = plan_against(config, &live);
    assert_eq!(p.action, ObjectAction::Update);
    let ports = hazard_row(&p, &format!("{NGINX}.ports[containerPort=53]"));
    // The patch kubectl 1.32 sends here (recorded with -v=8 against the
    // embedded server): the pair compared last-first, both elements sent.
    let sent = &p.patch.as_ref().unwrap().body["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        sent["ports"],
        json!([{"containerPort": 53, "protocol": "UDP"}, {"containerPort": 53, "protocol": "TCP"}])
    );
    assert_eq!(
        sent["env"],
        json!([{"name": "A", "value": "2"}, {"name": "A", "value": "1"}])
    );
    assert_eq!(ports.hazards.len(), 1, "{ports:#?}");
    assert_eq!(ports.hazards[0].kind, HazardKind::DuplicateMergeKey);
    assert_eq!(
        ports.hazards[0].message,
        "2 config elements share the merge key containerPort=53: client-side apply sends \
         them under that one key and the server merges them into one; live keeps \
         {\"containerPort\":53,\"protocol\":\"TCP\"} and loses {\"containerPort\":53,\"protocol\":\"UDP\"}"
    );
    let env = hazard_row(&p, &format!("{NGINX}.env[name=A]"));
    assert!(
        env.hazards[0].message.ends_with(
            "live keeps {\"name\":\"A\",\"value\":\"1\"} and loses {\"name\":\"A\",\"value\":\"2\"}"
        ),
        "{env:#?}"
    );
    let json: Value = serde_json::from_str(&to_json(&Plan {
        objects: vec![p.clone()],
        prune_skipped: None,
    }))
    .unwrap();
    let row = json["objects"][0]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == format!("{NGINX}.ports[containerPort=53]"))
        .unwrap()
        .clone();
    assert_eq!(row["hazards"][0]["kind"], "duplicate-merge-key");

    // kubectl merges the same patch the same way.
    let Some(after) = merged_by_kubectl(&p, &live) else {
        return;
    };
    let c = &after["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        c["ports"],
        json!([{"containerPort": 53, "protocol": "TCP"}])
    );
    assert_eq!(c["env"], json!([{"name": "A", "value": "1"}]));

    // A list live does not have yet is inserted whole: both survive, no
    // hazard (kubectl agrees).
    let mut bare = la.clone();
    let c = &mut bare["spec"]["template"]["spec"]["containers"][0];
    c.as_object_mut().unwrap().remove("ports");
    c.as_object_mut().unwrap().remove("env");
    let bare_live = annotated(bare.clone(), &bare);
    let mut config = bare.clone();
    config["spec"]["template"]["spec"]["containers"][0]["ports"] =
        json!([{"containerPort": 53, "protocol": "TCP"}, {"containerPort": 53, "protocol": "UDP"}]);
    let p = plan_against(config, &bare_live);
    assert!(
        p.fields.iter().all(|f| f.hazards.is_empty()),
        "{:#?}",
        p.fields
    );
    let after = merged_by_kubectl(&p, &bare_live).unwrap();
    assert_eq!(
        after["spec"]["template"]["spec"]["containers"][0]["ports"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "{after:#}"
    );
}

/// env removed from the config while live holds an element kubectl edit
/// added: the patch deletes the list whole, theirs included.
#[test]
fn a_list_removed_whole_names_the_other_writers_elements() {
    use kapply::merge::HazardKind;
    let mut la = deployment("nginx:1.14.2", None);
    la["spec"]["template"]["spec"]["containers"][0]["env"] = json!([{"name": "A", "value": "1"}]);
    let mut live = annotated(la.clone(), &la);
    live["spec"]["template"]["spec"]["containers"][0]["env"] =
        json!([{"name": "A", "value": "1"}, {"name": "EXTRA", "value": "x"}]);
    live["metadata"]["managedFields"] = json!([
        managed(
            "kubectl-client-side-apply",
            "2026-11-19T08:00:00Z",
            json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {
                "f:env": {"k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}}}}}}}}})
        ),
        managed(
            "kubectl-edit",
            "2026-11-20T10:04:00Z",
            json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {
                "f:env": {"k:{\"name\":\"EXTRA\"}": {".": {}, "f:name": {}, "f:value": {}}}}}}}}})
        ),
    ]);
    let config = deployment("nginx:1.14.2", None);
    let p = plan_against(config, &live);
    let env = hazard_row(&p, &format!("{NGINX}.env"));
    assert_eq!(env.action, FieldAction::Clear);
    assert_eq!(env.hazards.len(), 1, "{env:#?}");
    assert_eq!(env.hazards[0].kind, HazardKind::DeletesOthersElements);
    assert_eq!(
        env.hazards[0].message,
        "the list is gone from the config, so apply deletes it whole, with the elements other \
         writers added: name=EXTRA (added by kubectl-edit)"
    );
    let Some(after) = merged_by_kubectl(&p, &live) else {
        return;
    };
    let c = &after["spec"]["template"]["spec"]["containers"][0];
    assert!(c.get("env").is_none(), "EXTRA survived: {c}");

    // Only apply's own elements: removing the list loses nothing of theirs.
    let live = annotated(la.clone(), &la);
    let p = plan_against(deployment("nginx:1.14.2", None), &live);
    assert!(hazard_row(&p, &format!("{NGINX}.env")).hazards.is_empty());
}

/// args is atomic: replaced whole, so a flag added in the cluster is lost.
#[test]
fn an_atomic_list_replaced_over_another_writers_edit() {
    use kapply::merge::HazardKind;
    let mut la = deployment("nginx:1.14.2", None);
    la["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["--a"]);
    let mut live = annotated(la.clone(), &la);
    live["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["--a", "--debug"]);
    live["metadata"]["managedFields"] = json!([managed(
        "kubectl-edit",
        "2026-11-20T10:04:00Z",
        json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {
            "f:args": {}}}}}}})
    )]);
    let mut config = la.clone();
    config["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["--b"]);
    let p = plan_against(config, &live);
    let args = hazard_row(&p, &format!("{NGINX}.args"));
    assert_eq!(args.hazards.len(), 1, "{args:#?}");
    assert_eq!(args.hazards[0].kind, HazardKind::ReplacesOthersEdits);
    assert_eq!(
        args.hazards[0].message,
        "an atomic list: apply replaces it whole with the config's; lost (written by \
         kubectl-edit, never applied): \"--debug\""
    );
    let Some(after) = merged_by_kubectl(&p, &live) else {
        return;
    };
    assert_eq!(
        after["spec"]["template"]["spec"]["containers"][0]["args"],
        json!(["--b"])
    );
}

/// A hotfix image set in the cluster, and replicas an autoscaler owns:
/// both drift, both reverted.
#[test]
fn drift_reverts_a_hotfix_image_and_fights_the_autoscaler() {
    use kapply::merge::{Cause, HazardKind};
    let mut la = deployment("nginx:1.14.2", None);
    la["spec"]["replicas"] = json!(3);
    let mut live = annotated(la.clone(), &la);
    live["spec"]["replicas"] = json!(7);
    live["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.14.3-hotfix");
    live["metadata"]["managedFields"] = json!([
        managed(
            "kubectl-set",
            "2026-11-20T10:04:00Z",
            json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {
                "f:image": {}}}}}}})
        ),
        managed(
            "horizontal-pod-autoscaler",
            "2026-11-20T11:30:00Z",
            json!({"f:spec": {"f:replicas": {}}})
        ),
    ]);
    let p = plan_against(la.clone(), &live);
    assert!(p.reverts_drift);
    let image = hazard_row(&p, &format!("{NGINX}.image"));
    assert_eq!(image.cause, Cause::Drift);
    assert_eq!(image.hazards[0].kind, HazardKind::RevertsHotfix);
    assert_eq!(
        image.hazards[0].message,
        "reverts a hotfix: the image was changed in the cluster by kubectl-set at \
         2026-11-20T10:04:00Z to \"nginx:1.14.3-hotfix\"; apply rolls it back to \"nginx:1.14.2\""
    );
    let replicas = hazard_row(&p, "spec.replicas");
    assert_eq!(replicas.cause, Cause::Drift);
    assert_eq!(replicas.owner.as_deref(), Some("horizontal-pod-autoscaler"));
    assert_eq!(replicas.hazards[0].kind, HazardKind::FightsAutoscaler);
    assert_eq!(
        replicas.hazards[0].message,
        "an autoscaler (horizontal-pod-autoscaler) owns spec.replicas: apply sets it back \
         from 7 to 3, and the autoscaler scales it again; leave spec.replicas out of the config"
    );
    let Some(after) = merged_by_kubectl(&p, &live) else {
        return;
    };
    assert_eq!(after["spec"]["replicas"], 3);
    assert_eq!(
        after["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.14.2"
    );

    // An intended image change is no hotfix revert.
    let mut config = la.clone();
    config["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.16.1");
    let p = plan_against(config, &annotated(la.clone(), &la));
    assert!(hazard_row(&p, &format!("{NGINX}.image")).hazards.is_empty());
}

/// Both diff layouts carry the hazards under their field, and the cause.
#[test]
fn diff_layouts_show_hazards_under_their_field() {
    let mut la = deployment("nginx:1.14.2", None);
    la["spec"]["replicas"] = json!(3);
    let mut live = annotated(la.clone(), &la);
    live["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.14.3-hotfix");
    live["metadata"]["managedFields"] = json!([managed(
        "kubectl-set",
        "2026-11-20T10:04:00Z",
        json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {
            "f:image": {}}}}}}})
    )]);
    let plan = Plan {
        objects: vec![plan_against(la, &live)],
        prune_skipped: None,
    };
    let piped = render_diff(&plan, false);
    let image = format!(
        "    set   {NGINX}.image  last-applied: \"nginx:1.14.2\" | live: \"nginx:1.14.3-hotfix\" | \
         config: \"nginx:1.14.2\"  (config differs from live)  [drift: kubectl-set at 2026-11-20T10:04:00Z]\n      \
         hazard: reverts a hotfix: the image was changed in the cluster by kubectl-set at \
         2026-11-20T10:04:00Z to \"nginx:1.14.3-hotfix\"; apply rolls it back to \"nginx:1.14.2\"\n"
    );
    assert!(piped.contains(&image), "{piped}");
    let tty = render_diff_terminal(&plan, false, false);
    let image = format!(
        "  ! {NGINX}.image  drift: changed by kubectl-set at 2026-11-20T10:04:00Z; apply reverts it\n      \
         \"nginx:1.14.3-hotfix\" → \"nginx:1.14.2\"\n      \
         ⚠ reverts a hotfix: the image was changed in the cluster by kubectl-set"
    );
    assert!(tty.contains(&image), "{tty}");
    assert!(
        tty.starts_with(
            "~ Deployment default/nginx-deployment  update · reverts drift  app.yaml:1\n"
        ),
        "{tty}"
    );
    let colour = render_diff_terminal(&plan, true, false);
    assert!(colour.contains("\x1b[31;1m⚠ reverts a hotfix"), "{colour}");
}

/// The object-level hazard rules that the tests above leave out, with
/// their whole words, and the order in which several rules report.
#[test]
fn on_delete_job_template_and_rule_order_are_warned() {
    let sts = |strategy: Value| {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
               "metadata": {"name": "db", "namespace": "default"},
               "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                        "updateStrategy": strategy,
                        "template": {"metadata": {"labels": {"app": "db"}},
                                     "spec": {"containers": [{"name": "db", "image": "db"}]}}}})
    };
    let la = sts(json!({"type": "RollingUpdate"}));
    let mut live = annotated(la.clone(), &la);
    live["spec"]["updateStrategy"]["rollingUpdate"] = json!({"partition": 0});
    let p = plan_against(sts(json!({"type": "OnDelete"})), &live);
    assert_eq!(
        p.warnings,
        vec![
            "spec.updateStrategy.type changes to OnDelete while live has the server-defaulted \
             spec.updateStrategy.rollingUpdate, which the patch keeps: the server will reject \
             it (422); set spec.updateStrategy.rollingUpdate: null in the config"
                .to_string()
        ]
    );
    let cleared = plan_against(
        sts(json!({"type": "OnDelete", "rollingUpdate": null})),
        &live,
    );
    assert!(
        !cleared.warnings.iter().any(|w| w.contains("OnDelete")),
        "{:?}",
        cleared.warnings
    );

    let job = |image: &str, app: &str| {
        json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "j", "namespace": "default"},
               "spec": {"selector": {"matchLabels": {"app": app}},
                        "template": {"metadata": {"labels": {"app": app}},
                                     "spec": {"restartPolicy": "Never",
                                              "containers": [{"name": "j", "image": image}]}}}})
    };
    let live = annotated(job("busybox:1", "j"), &job("busybox:1", "j"));
    let p = plan_against(job("busybox:2", "k"), &live);
    // Selector before template: the rules' order.
    assert_eq!(
        p.warnings,
        vec![
            "spec.selector is immutable: the server will reject this change (422)".to_string(),
            "spec.template of a Job is immutable (except scheduling directives of a suspended \
             Job): the server will likely reject this change (422)"
                .to_string(),
        ]
    );
}

/// `ObjectPlan::is` says what comparing identities says, for a row against
/// an `ObjectRef` or another row: the group counts, the version does not,
/// and an empty namespace is none.
#[test]
fn a_row_is_the_object_its_identity_names() {
    let row = |api: &str, kind: &str, ns: Option<&str>, name: &str| {
        error_object(api, kind, ns, name, None, String::new())
    };
    let web = row("apps/v1", "Deployment", Some("demo"), "web");
    let others = [
        row("apps/v1beta1", "Deployment", Some("demo"), "web"),
        row("extensions/v1", "Deployment", Some("demo"), "web"),
        row("apps/v1", "StatefulSet", Some("demo"), "web"),
        row("apps/v1", "Deployment", Some("other"), "web"),
        row("apps/v1", "Deployment", None, "web"),
        row("apps/v1", "Deployment", Some("demo"), "api"),
        row("v1", "Namespace", Some(""), "demo"),
        row("v1", "Namespace", None, "demo"),
    ];
    for o in &others {
        assert_eq!(web.is(o), web.id() == o.id(), "{o:?}");
        assert_eq!(web.is(&o.id()), web.id() == o.id(), "{o:?}");
        assert!(o.is(o), "{o:?}");
    }
    assert!(web.is(&others[0]), "another version of the same object");
    assert!(others[6].is(&others[7]), "an empty namespace is none");
    assert!(!web.is(&others[1]));
}

/// An old annotation that differs from the config's in one string value is
/// read by putting its text in the config for the merge (not parsed): the
/// plan is the one parsing gives, which the same old config written with
/// white space (no longer one string apart) takes.
#[test]
fn an_annotation_one_string_apart_plans_as_parsed() {
    let config = |image: &str, mode: &str, annotations: Option<Value>| {
        let mut d = deployment(image, Some(5));
        d["spec"]["template"]["spec"]["containers"][0]["env"] =
            json!([{"name": "MODE", "value": mode}, {"name": "X", "value": "1"}]);
        if let Some(a) = annotations {
            d["metadata"]["annotations"] = a;
        }
        d
    };
    let news = [
        config("nginx:1.16.2", "production", None),
        config(
            "nginx:1.16.2",
            "production",
            Some(json!({"team": "a", LAST_APPLIED: "{}"})),
        ),
        config("nginx:1.16.2", "production", Some(json!({"team": "a"}))),
    ];
    // Old configs: one string changed (shorter, longer, emptied), two.
    let edits: [&[(&str, &str)]; 6] = [
        &[("/spec/template/spec/containers/0/image", "nginx:1.14")],
        &[(
            "/spec/template/spec/containers/0/env/0/value",
            "staging-with-a-longer-name",
        )],
        &[("/spec/template/spec/containers/0/env/0/value", "")],
        &[("/spec/template/spec/containers/0/env/1/name", "Y")],
        &[("/metadata/annotations/team", "b")],
        &[
            ("/spec/template/spec/containers/0/image", "nginx:1.14"),
            ("/spec/template/spec/containers/0/env/1/value", "2"),
        ],
    ];
    let olds = |new: &Value| -> Vec<Value> {
        edits
            .iter()
            .filter_map(|e| {
                let mut old = new.clone();
                if let Some(a) = old["metadata"]["annotations"].as_object_mut() {
                    a.remove(LAST_APPLIED);
                }
                for (ptr, text) in *e {
                    *old.pointer_mut(ptr)? = json!(text);
                }
                Some(old)
            })
            .collect()
    };
    let mut one_string_apart = 0;
    for new in &news {
        for old in &olds(new) {
            let live = annotated(scaled_live(old), old);
            let text = live["metadata"]["annotations"][LAST_APPLIED]
                .as_str()
                .unwrap();
            let read: Value = serde_json::from_str(text).unwrap();
            let mut pretty = live.clone();
            pretty["metadata"]["annotations"][LAST_APPLIED] =
                json!(serde_json::to_string_pretty(&read).unwrap());
            let mut edited = plan_against(new.clone(), &live);
            if edited.last_applied.as_ref() == Some(&read) {
                // The same recorded config: nothing to edit (and the white
                // space would make an update of the annotation alone).
                continue;
            }
            let mut parsed = plan_against(new.clone(), &pretty);
            let recorded = kapply::merge::Recorded::new(new);
            one_string_apart += usize::from(recorded.one_string_apart(text));
            assert!(!recorded.one_string_apart(&pretty_text(&pretty)));
            assert_eq!(
                edited.config.as_ref(),
                Some(new),
                "the config is given back"
            );
            // The live sides differ in the annotation's text alone.
            for p in [&mut edited, &mut parsed] {
                p.live = None;
                for f in &mut p.fields {
                    if f.path.as_str().contains(LAST_APPLIED) {
                        f.live = None;
                    }
                }
            }
            assert_eq!(edited, parsed, "{new}\n{old}");
        }
    }
    // The one-string edits of each config (no annotation to edit in the
    // first).
    assert_eq!(one_string_apart, 4 + 5 + 5);
}

fn pretty_text(live: &Value) -> String {
    live["metadata"]["annotations"][LAST_APPLIED]
        .as_str()
        .unwrap()
        .to_string()
}

/// Changes the config makes over changes made in the cluster: removed (a
/// scaled replicas count the config drops) and re-set (a field deleted in
/// the cluster); each says what apply throws away, and the object reverts
/// drift. A change over a value live still holds as last applied is plain.
#[test]
fn config_changes_over_cluster_changes_are_hazards() {
    use kapply::merge::{Cause, HazardKind};
    let mut la = deployment("nginx:1.14.2", Some(5));
    la["spec"]["replicas"] = json!(3);
    let mut live = scaled_live(&la);
    live["spec"]
        .as_object_mut()
        .unwrap()
        .remove("minReadySeconds");
    let mut config = deployment("nginx:1.14.2", Some(10));
    config["spec"].as_object_mut().unwrap().remove("replicas");
    let p = plan_against(config, &live);
    assert!(p.reverts_drift);
    let replicas = hazard_row(&p, "spec.replicas");
    assert_eq!(replicas.cause, Cause::Removed);
    assert_eq!(replicas.owner.as_deref(), Some("kubectl-scale"));
    assert_eq!(replicas.hazards.len(), 1, "{replicas:#?}");
    assert_eq!(
        replicas.hazards[0].kind,
        HazardKind::OverwritesClusterChange
    );
    assert_eq!(
        replicas.hazards[0].message,
        "apply deletes 2, set by kubectl-scale (last applied: 3)"
    );
    assert!(replicas.undoes_cluster_change());
    let min = hazard_row(&p, "spec.minReadySeconds");
    assert_eq!(min.cause, Cause::Intended);
    assert_eq!(
        min.hazards[0].message,
        "apply writes 10 where the field was deleted in the cluster (last applied: 5)"
    );

    // Live as last applied: an intended change, nothing overwritten.
    let live = annotated(la.clone(), &la);
    let mut config = la.clone();
    config["spec"]["minReadySeconds"] = json!(10);
    let p = plan_against(config, &live);
    assert!(!p.reverts_drift);
    let min = hazard_row(&p, "spec.minReadySeconds");
    assert!(min.hazards.is_empty(), "{min:#?}");
    assert_eq!(
        min.explain(kapply::merge::Form::Text),
        "intended: the manifest changed"
    );
}

/// A Service with port 53 UDP and TCP whose targetPorts become named: the
/// duplicate merge key hazard alone (ports is keyed, not atomic; the
/// server-defaulted targetPorts are not "written in the cluster").
#[test]
fn duplicate_service_ports_get_one_hazard() {
    use kapply::merge::HazardKind;
    let svc = |tp: Option<(&str, &str)>| {
        let mut ports = json!([{"name": "dns", "port": 53, "protocol": "UDP"},
                               {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]);
        if let Some((a, b)) = tp {
            ports[0]["targetPort"] = json!(a);
            ports[1]["targetPort"] = json!(b);
        }
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "kube-dns", "namespace": "kube-system"},
               "spec": {"selector": {"k8s-app": "kube-dns"}, "ports": ports}})
    };
    let la = svc(None);
    let mut live = annotated(la.clone(), &la);
    live["spec"]["clusterIP"] = json!("10.96.0.10");
    // Created whole, then the server defaulted each targetPort to its port.
    for p in live["spec"]["ports"].as_array_mut().unwrap() {
        p["targetPort"] = json!(53);
    }
    let p = plan_against(svc(Some(("dns", "dns-tcp"))), &live);
    let hazards: Vec<_> = p.fields.iter().flat_map(|f| &f.hazards).collect();
    assert_eq!(hazards.len(), 1, "{:#?}", p.fields);
    assert_eq!(hazards[0].kind, HazardKind::DuplicateMergeKey);
    assert!(
        !hazards[0].message.contains("written"),
        "{}",
        hazards[0].message
    );
}

/// A PrometheusRule (a custom resource: lists replaced whole) whose alert
/// was deleted in the cluster, while the config adds another: the alert
/// comes back, nothing is lost.
#[test]
fn an_alert_deleted_in_the_cluster_comes_back() {
    use kapply::merge::HazardKind;
    let rule = |alerts: &[&str]| {
        let rules: Vec<Value> = alerts
            .iter()
            .map(|a| json!({"alert": a, "expr": format!("{a}_expr > 0")}))
            .collect();
        json!({"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
               "metadata": {"name": "k8s", "namespace": "monitoring"},
               "spec": {"groups": [{"name": "g", "rules": rules}]}})
    };
    let la = rule(&["A", "B"]);
    let mut live = annotated(rule(&["A"]), &la);
    live["metadata"]["managedFields"] = json!([managed(
        "kubectl-edit",
        "2026-11-20T10:04:00Z",
        json!({"f:spec": {"f:groups": {}}})
    )]);
    let p = plan_against(rule(&["A", "B", "C"]), &live);
    let groups = hazard_row(&p, "spec.groups");
    assert_eq!(groups.hazards.len(), 1, "{groups:#?}");
    assert_eq!(groups.hazards[0].kind, HazardKind::ReplacesOthersEdits);
    assert_eq!(
        groups.hazards[0].message,
        "an atomic list: apply replaces it whole with the config's; comes back (deleted in \
         the cluster): spec.groups[name=g].rules[alert=B]={\"alert\":\"B\",\"expr\":\"B_expr \\u003e 0\"}"
    );
    // What the words say is what the result holds.
    let result = kapply::merge::predicted(&live, p.patch.as_ref(), None).unwrap();
    assert_eq!(result["spec"]["groups"][0]["rules"][1]["alert"], "B");
}

/// On a terminal, lists, maps and text over several lines read as
/// `kubectl diff` shows them: YAML (or the text) line by line, live
/// against what the apply makes of it, changes with three lines around
/// them; a Corefile, container args and a PrometheusRule's rule group.
#[test]
fn the_terminal_diff_shows_structured_values_as_line_diffs() {
    let corefile = |cache: u32| {
        format!(
            ".:53 {{\n    errors\n    health {{\n       lameduck 5s\n    }}\n    ready\n    \
             kubernetes cluster.local in-addr.arpa ip6.arpa {{\n       pods insecure\n       \
             fallthrough in-addr.arpa ip6.arpa\n       ttl 30\n    }}\n    \
             prometheus :9153\n    forward . /etc/resolv.conf\n    cache {cache}\n    loop\n    \
             reload\n    loadbalance\n}}\n"
        )
    };
    let cm = |cache| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "coredns", "namespace": "kube-system"},
            "data": {"Corefile": corefile(cache)}})
    };
    let mut la = deployment("nginx:1.14.2", None);
    la["spec"]["template"]["spec"]["containers"][0]["args"] =
        json!(["--port=80", "--log-level=info", "--metrics"]);
    let mut config = la.clone();
    config["spec"]["template"]["spec"]["containers"][0]["args"] =
        json!(["--port=8080", "--log-level=info", "--metrics"]);
    let rule = |expr: &str| {
        json!({"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": "node", "namespace": "monitoring"},
            "spec": {"groups": [{"name": "node.rules", "rules": [
                {"alert": "NodeDown", "expr": expr, "for": "5m",
                 "labels": {"severity": "critical"}}]}]}})
    };
    let plan = Plan {
        objects: vec![
            plan_against(cm(60), &annotated(cm(30), &cm(30))),
            plan_against(config, &annotated(la.clone(), &la)),
            plan_against(rule("up == 0"), &annotated(rule("up < 1"), &rule("up < 1"))),
        ],
        prune_skipped: None,
    };
    let tty = render_diff_terminal(&plan, false, false);
    // No value of these rows is one line of JSON any more.
    assert!(!tty.contains("\\n"), "{tty}");
    assert!(
        tty.contains("      -     cache 30\n      +     cache 60\n"),
        "{tty}"
    );
    insta::assert_snapshot!(tty);
    // Coloured: removed lines red, added green.
    let colour = render_diff_terminal(&plan, true, false);
    assert!(colour.contains("\x1b[31m-     cache 30\x1b[0m"), "{colour}");
    assert!(colour.contains("\x1b[32m+     cache 60\x1b[0m"), "{colour}");
}

/// Zero values the server does not store (`omitempty` fields, as
/// kube-apiserver v1.34 keeps ingress-nginx's `minReadySeconds: 0` and
/// cert-manager's subjects' `apiGroup: ""`) are no change against the live
/// object without them, and neither are the webhooks' rule scopes it
/// defaults; a value that is not zero still is.
#[test]
fn zero_values_the_server_does_not_store_are_no_change() {
    let config = deployment("nginx:1.14.2", Some(0));
    let mut live = annotated(config.clone(), &config);
    live["spec"]
        .as_object_mut()
        .unwrap()
        .remove("minReadySeconds");
    assert_eq!(plan_against(config, &live).action, ObjectAction::Unchanged);
    let config = deployment("nginx:1.14.2", Some(3));
    let p = plan_against(config, &live);
    assert_eq!(p.action, ObjectAction::Update);
    assert!(
        p.fields
            .iter()
            .any(|f| f.path == "spec.minReadySeconds" && f.action == FieldAction::Set),
        "{:?}",
        p.fields
    );

    let config = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "rb", "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": [{"apiGroup": "", "kind": "ServiceAccount", "name": "a", "namespace": "default"}]});
    let mut live = annotated(config.clone(), &config);
    live["subjects"][0]
        .as_object_mut()
        .unwrap()
        .remove("apiGroup");
    assert_eq!(plan_against(config, &live).action, ObjectAction::Unchanged);

    let config = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "v"},
        "webhooks": [{"name": "w.example.com", "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"name": "s", "namespace": "n"}},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["pods"]}]}]});
    let mut live = annotated(config.clone(), &config);
    kapply::defaults::apply(&mut live, &mut || unreachable!());
    assert_eq!(live["webhooks"][0]["rules"][0]["scope"], "*");
    assert_eq!(plan_against(config, &live).action, ObjectAction::Unchanged);
}
