//! The embedded API server through its socket-less handler
//! (`ApiServer::handle`), plus kube-rs against the real socket.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Response, Uri, header};
use kapply::server::{ApiServer, ServerOptions};
use proptest::prelude::*;
use serde_json::{Value, json};

struct Reply {
    code: u16,
    body: Value,
}

fn call(api: &ApiServer, method: &str, uri: &str, ct: Option<&str>, body: &str) -> Reply {
    let mut headers = HeaderMap::new();
    if let Some(ct) = ct {
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
    }
    let method = Method::from_bytes(method.as_bytes()).unwrap();
    let uri: Uri = uri.parse().unwrap();
    let resp: Response<Bytes> = api.handle(&method, &uri, &headers, body.as_bytes());
    Reply {
        code: resp.status().as_u16(),
        body: serde_json::from_slice(resp.body()).unwrap_or(Value::Null),
    }
}

fn get(api: &ApiServer, uri: &str) -> Reply {
    call(api, "GET", uri, None, "")
}

/// Whether some element of the array `list` has this `name`.
fn has_name(list: &Value, name: &str) -> bool {
    list.as_array().unwrap().iter().any(|e| e["name"] == name)
}

const JSON: Option<&str> = Some("application/json");
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

fn deployment(name: &str, image: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"selector": {"matchLabels": {"app": name}}, "minReadySeconds": 5,
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "nginx", "image": image,
                    "ports": [{"containerPort": 80}]}]}}}})
}

fn create(api: &ApiServer, collection: &str, obj: &Value) -> Value {
    let r = call(api, "POST", collection, JSON, &obj.to_string());
    assert_eq!(r.code, 201, "{}", r.body);
    r.body
}

#[test]
fn create_defaults_and_stamps() {
    let api = ApiServer::new();
    let d = create(&api, DEPLOYS, &deployment("web", "nginx:1.14.2"));
    assert_eq!(d["metadata"]["generation"], 1);
    assert!(d["metadata"]["uid"].as_str().is_some_and(|u| u.len() == 36));
    assert!(d["metadata"]["resourceVersion"].as_str().is_some());
    assert!(
        d["metadata"]["creationTimestamp"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
    assert_eq!(
        d["spec"]["strategy"],
        json!({"type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Always");
    assert_eq!(pod["schedulerName"], "default-scheduler");
    let c = &pod["containers"][0];
    assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(c["ports"][0]["protocol"], "TCP");
    let mf = &d["metadata"]["managedFields"][0];
    assert_eq!(mf["operation"], "Update");
    assert!(mf["fieldsV1"]["f:spec"]["f:minReadySeconds"].is_object());

    // 409 on a second create, with kubectl's wording.
    let r = call(
        &api,
        "POST",
        DEPLOYS,
        JSON,
        &deployment("web", "x").to_string(),
    );
    assert_eq!(r.code, 409);
    assert_eq!(r.body["reason"], "AlreadyExists");
    assert_eq!(r.body["message"], "deployments.apps \"web\" already exists");
}

#[test]
fn put_conflicts_on_stale_resource_version() {
    let api = ApiServer::new();
    let d = create(&api, DEPLOYS, &deployment("web", "nginx:1"));
    let mut stale = d.clone();
    stale["metadata"]["resourceVersion"] = json!("1");
    let r = call(
        &api,
        "PUT",
        &format!("{DEPLOYS}/web"),
        JSON,
        &stale.to_string(),
    );
    assert_eq!(r.code, 409);
    assert_eq!(r.body["reason"], "Conflict");

    let mut fresh = d.clone();
    fresh["spec"]["replicas"] = json!(3);
    let r = call(
        &api,
        "PUT",
        &format!("{DEPLOYS}/web?fieldManager=me"),
        JSON,
        &fresh.to_string(),
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["generation"], 2);
    assert_ne!(
        r.body["metadata"]["resourceVersion"],
        d["metadata"]["resourceVersion"]
    );
    let entries = r.body["metadata"]["managedFields"].as_array().unwrap();
    let me = entries.iter().find(|e| e["manager"] == "me").unwrap();
    assert_eq!(me["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
}

#[test]
fn patches_of_every_kind() {
    let api = ApiServer::new();
    create(&api, DEPLOYS, &deployment("web", "nginx:1"));
    let url = format!("{DEPLOYS}/web?fieldManager=kubectl-client-side-apply");
    // Strategic: containers merge by name, explicit null clears.
    let smp = json!({"spec": {"minReadySeconds": null, "template": {"spec": {
        "$setElementOrder/containers": [{"name": "nginx"}, {"name": "side"}],
        "containers": [{"name": "side", "image": "busybox"}]}}}});
    let r = call(
        &api,
        "PATCH",
        &url,
        Some("application/strategic-merge-patch+json"),
        &smp.to_string(),
    );
    assert_eq!(r.code, 200, "{}", r.body);
    let cs = &r.body["spec"]["template"]["spec"]["containers"];
    assert_eq!(cs.as_array().unwrap().len(), 2);
    assert_eq!(cs[0]["image"], "nginx:1");
    assert_eq!(cs[1]["imagePullPolicy"], "Always");
    assert!(r.body["spec"].get("minReadySeconds").is_none());

    // Merge patch replaces the list whole.
    let mp =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "a:1"}]}}}});
    let r = call(
        &api,
        "PATCH",
        &url,
        Some("application/merge-patch+json"),
        &mp.to_string(),
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(
        r.body["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // JSON patch.
    let jp = json!([{"op": "replace", "path": "/spec/replicas", "value": 4}]);
    let r = call(
        &api,
        "PATCH",
        &url,
        Some("application/json-patch+json"),
        &jp.to_string(),
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["replicas"], 4);
    let bad = json!([{"op": "remove", "path": "/spec/nope"}]);
    assert_eq!(
        call(
            &api,
            "PATCH",
            &url,
            Some("application/json-patch+json"),
            &bad.to_string()
        )
        .code,
        422
    );

    // A resourceVersion in the patch is a precondition.
    let pre = json!({"metadata": {"resourceVersion": "1"}, "spec": {"replicas": 1}});
    let r = call(
        &api,
        "PATCH",
        &url,
        Some("application/strategic-merge-patch+json"),
        &pre.to_string(),
    );
    assert_eq!(r.code, 409);

    // Unknown patch type: 415.
    let r = call(&api, "PATCH", &url, Some("text/plain"), "{}");
    assert_eq!(r.code, 415);
    assert_eq!(r.body["reason"], "UnsupportedMediaType");
    // Missing object: 404.
    let r = call(
        &api,
        "PATCH",
        &format!("{DEPLOYS}/nope"),
        Some("application/merge-patch+json"),
        "{}",
    );
    assert_eq!(r.code, 404);
    assert_eq!(r.body["message"], "deployments.apps \"nope\" not found");
}

#[test]
fn recreate_strategy_needs_retain_keys() {
    let api = ApiServer::new();
    create(&api, DEPLOYS, &deployment("web", "nginx:1"));
    let url = format!("{DEPLOYS}/web");
    let plain = json!({"spec": {"strategy": {"type": "Recreate"}}});
    let r = call(
        &api,
        "PATCH",
        &url,
        Some("application/merge-patch+json"),
        &plain.to_string(),
    );
    assert_eq!(r.code, 422);
    assert_eq!(r.body["reason"], "Invalid");
    assert_eq!(
        r.body["message"],
        "Deployment.apps \"web\" is invalid: spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"
    );
    assert_eq!(
        r.body["details"]["causes"][0]["field"],
        "spec.strategy.rollingUpdate"
    );
    let retain = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
    let r = call(
        &api,
        "PATCH",
        &url,
        Some("application/strategic-merge-patch+json"),
        &retain.to_string(),
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["strategy"], json!({"type": "Recreate"}));
}

#[test]
fn immutable_fields_and_bad_requests() {
    let api = ApiServer::new();
    create(&api, DEPLOYS, &deployment("web", "nginx:1"));
    let sel = json!({"spec": {"selector": {"matchLabels": {"app": "other"}},
        "template": {"metadata": {"labels": {"app": "other"}}}}});
    let r = call(
        &api,
        "PATCH",
        &format!("{DEPLOYS}/web"),
        Some("application/merge-patch+json"),
        &sel.to_string(),
    );
    assert_eq!(r.code, 422);
    assert_eq!(r.body["details"]["causes"][0]["field"], "spec.selector");

    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}});
    let s = create(&api, "/api/v1/namespaces/default/services", &svc);
    let ip = s["spec"]["clusterIP"].as_str().unwrap();
    assert!(ip.starts_with("10.96."));
    assert_eq!(s["spec"]["ports"][0]["targetPort"], 80);
    assert_eq!(s["spec"]["clusterIPs"], json!([ip]));
    let r = call(
        &api,
        "PATCH",
        "/api/v1/namespaces/default/services/s",
        Some("application/merge-patch+json"),
        r#"{"spec":{"clusterIP":"10.96.9.9"}}"#,
    );
    assert_eq!(r.code, 422);

    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}});
    create(&api, "/apis/batch/v1/namespaces/default/jobs", &job);
    let r = call(
        &api,
        "PATCH",
        "/apis/batch/v1/namespaces/default/jobs/j",
        Some("application/strategic-merge-patch+json"),
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"alpine"}]}}}}"#,
    );
    assert_eq!(r.code, 422);
    assert_eq!(r.body["details"]["causes"][0]["field"], "spec.template");

    // Namespace in the body differs from the URL: 400.
    let mut other = deployment("x", "a:1");
    other["metadata"]["namespace"] = json!("kube-system");
    assert_eq!(
        call(&api, "POST", DEPLOYS, JSON, &other.to_string()).code,
        400
    );
    // Missing name: 422.
    let mut nameless = deployment("x", "a:1");
    nameless["metadata"].as_object_mut().unwrap().remove("name");
    let r = call(&api, "POST", DEPLOYS, JSON, &nameless.to_string());
    assert_eq!(r.code, 422);
    assert_eq!(r.body["details"]["causes"][0]["field"], "metadata.name");
    // Malformed JSON: 400. Unknown resource: 404. Unknown namespace: 404.
    assert_eq!(call(&api, "POST", DEPLOYS, JSON, "{not json").code, 400);
    assert_eq!(
        get(&api, "/apis/apps/v1/namespaces/default/widgets").code,
        404
    );
    let r = call(
        &api,
        "POST",
        "/apis/apps/v1/namespaces/nope/deployments",
        JSON,
        &deployment("x", "a:1").to_string(),
    );
    assert_eq!(r.code, 404);
    assert_eq!(r.body["message"], "namespaces \"nope\" not found");
    // Method not allowed.
    assert_eq!(call(&api, "DELETE", "/version", None, "").code, 405);
}

#[test]
fn immutable_configmaps_and_statefulset_specs() {
    let api = ApiServer::new();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
        "data": {"a": "1"}, "immutable": true});
    create(&api, "/api/v1/namespaces/default/configmaps", &cm);
    let url = "/api/v1/namespaces/default/configmaps/c";
    let r = call(
        &api,
        "PATCH",
        url,
        Some("application/merge-patch+json"),
        r#"{"data":{"a":"2"}}"#,
    );
    assert_eq!(r.code, 422);
    assert_eq!(r.body["details"]["causes"][0]["field"], "data");
    let r = call(
        &api,
        "PATCH",
        url,
        Some("application/merge-patch+json"),
        r#"{"metadata":{"labels":{"x":"y"}}}"#,
    );
    assert_eq!(r.code, 200, "{}", r.body);

    let mut sts = deployment("db", "postgres:16");
    sts["kind"] = json!("StatefulSet");
    sts["spec"]["serviceName"] = json!("db");
    sts["spec"]
        .as_object_mut()
        .unwrap()
        .remove("minReadySeconds");
    create(&api, "/apis/apps/v1/namespaces/default/statefulsets", &sts);
    let url = "/apis/apps/v1/namespaces/default/statefulsets/db";
    let r = call(
        &api,
        "PATCH",
        url,
        Some("application/merge-patch+json"),
        r#"{"spec":{"serviceName":"other"}}"#,
    );
    assert_eq!(r.code, 422);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("updates to statefulset spec for fields other than")
    );
    let r = call(
        &api,
        "PATCH",
        url,
        Some("application/merge-patch+json"),
        r#"{"spec":{"replicas":3}}"#,
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["podManagementPolicy"], "OrderedReady");
}

#[test]
fn controllers_are_simulated_in_status() {
    let api = ApiServer::new();
    let d = create(&api, DEPLOYS, &deployment("web", "a:1"));
    let conds = d["status"]["conditions"].as_array().unwrap();
    assert!(
        conds
            .iter()
            .any(|c| c["type"] == "Available" && c["status"] == "True")
    );
    assert_eq!(d["status"]["observedGeneration"], 1);
    // A patch that changes nothing keeps the resourceVersion.
    let r = call(
        &api,
        "PATCH",
        &format!("{DEPLOYS}/web"),
        Some("application/merge-patch+json"),
        r#"{"spec":{"replicas":1}}"#,
    );
    assert_eq!(
        r.body["metadata"]["resourceVersion"],
        d["metadata"]["resourceVersion"]
    );
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}});
    let j = create(&api, "/apis/batch/v1/namespaces/default/jobs", &job);
    assert_eq!(j["status"]["succeeded"], 1);
    assert!(
        j["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Complete")
    );
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    let p = create(&api, "/api/v1/namespaces/default/pods", &pod);
    assert_eq!(p["status"]["phase"], "Running");
    assert_eq!(p["spec"]["serviceAccountName"], "default");
}

#[test]
fn labels_and_data_are_checked() {
    let api = ApiServer::new();
    let cms = "/api/v1/namespaces/default/configmaps";
    let bad_label = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"app": "not ok!"}}});
    let r = call(&api, "POST", cms, JSON, &bad_label.to_string());
    assert_eq!(r.code, 422);
    assert_eq!(r.body["details"]["causes"][0]["field"], "metadata.labels");
    let numeric = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"port": 80}});
    let r = call(&api, "POST", cms, JSON, &numeric.to_string());
    assert_eq!(r.code, 400);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("cannot unmarshal number"),
        "{}",
        r.body
    );
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"a": "not base64!"}});
    let r = call(
        &api,
        "POST",
        "/api/v1/namespaces/default/secrets",
        JSON,
        &secret.to_string(),
    );
    assert_eq!(r.code, 400);
    let ok = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"example.com/app": "web_1.2", "empty": ""}}});
    create(&api, cms, &ok);
}

#[test]
fn strict_field_validation() {
    let api = ApiServer::new();
    let mut d = deployment("web", "nginx:1");
    d["spec"]["replicaz"] = json!(2);
    let r = call(
        &api,
        "POST",
        &format!("{DEPLOYS}?fieldValidation=Strict"),
        JSON,
        &d.to_string(),
    );
    assert_eq!(r.code, 400);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("strict decoding error: unknown field \"spec.replicaz\""),
        "{}",
        r.body
    );
    // Warn accepts it with a Warning header.
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let mut warned = d.clone();
    warned["metadata"]["name"] = json!("warned");
    let resp = api.handle(
        &Method::POST,
        &format!("{DEPLOYS}?fieldValidation=Warn").parse().unwrap(),
        &headers,
        warned.to_string().as_bytes(),
    );
    assert_eq!(resp.status().as_u16(), 201);
    assert_eq!(
        resp.headers()[header::WARNING],
        "299 - \"unknown field \\\"spec.replicaz\\\"\""
    );
    // Ignore (the default) accepts it.
    assert_eq!(call(&api, "POST", DEPLOYS, JSON, &d.to_string()).code, 201);
}

#[test]
fn list_selectors_and_paging() {
    let api = ApiServer::new();
    for (name, tier) in [("a", "web"), ("b", "db"), ("c", "web"), ("d", "cache")] {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"tier": tier}}});
        create(&api, "/api/v1/namespaces/default/configmaps", &cm);
    }
    create(
        &api,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}),
    );
    create(
        &api,
        "/api/v1/namespaces/other/configmaps",
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "e"}}),
    );
    let names = |uri: &str| -> Vec<String> {
        let r = get(&api, uri);
        assert_eq!(r.code, 200, "{uri}: {}", r.body);
        r.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    let base = "/api/v1/namespaces/default/configmaps";
    assert_eq!(
        names(&format!("{base}?labelSelector=tier%3Dweb")),
        ["a", "c"]
    );
    assert_eq!(
        names(&format!("{base}?labelSelector=tier+in+%28db%2Ccache%29")),
        ["b", "d"]
    );
    assert_eq!(
        names(&format!("{base}?labelSelector=tier%21%3Dweb")),
        ["b", "d"]
    );
    assert_eq!(
        names(&format!("{base}?labelSelector=%21tier")),
        Vec::<String>::new()
    );
    assert_eq!(names("/api/v1/configmaps?labelSelector=%21tier"), ["e"]);
    assert_eq!(
        names("/api/v1/configmaps?fieldSelector=metadata.namespace%3Dother"),
        ["e"]
    );
    assert_eq!(
        names(&format!("{base}?fieldSelector=metadata.name%3Db")),
        ["b"]
    );
    assert_eq!(
        get(&api, &format!("{base}?labelSelector=a+in+%28")).code,
        400
    );

    let r = get(&api, &format!("{base}?limit=3"));
    assert_eq!(r.body["items"].as_array().unwrap().len(), 3);
    assert_eq!(r.body["kind"], "ConfigMapList");
    assert_eq!(r.body["metadata"]["remainingItemCount"], 1);
    let cont = r.body["metadata"]["continue"].as_str().unwrap().to_string();
    assert_eq!(names(&format!("{base}?limit=3&continue={cont}")), ["d"]);
}

#[test]
fn dry_run_writes_nothing() {
    let api = ApiServer::new();
    let r = call(
        &api,
        "POST",
        &format!("{DEPLOYS}?dryRun=All"),
        JSON,
        &deployment("web", "a:1").to_string(),
    );
    assert_eq!(r.code, 201);
    assert_eq!(r.body["spec"]["replicas"], 1);
    assert_eq!(get(&api, &format!("{DEPLOYS}/web")).code, 404);
    create(&api, DEPLOYS, &deployment("web", "a:1"));
    let r = call(
        &api,
        "PATCH",
        &format!("{DEPLOYS}/web?dryRun=All"),
        Some("application/merge-patch+json"),
        r#"{"spec":{"replicas":5}}"#,
    );
    assert_eq!(r.body["spec"]["replicas"], 5);
    assert_eq!(
        call(
            &api,
            "DELETE",
            &format!("{DEPLOYS}/web?dryRun=All"),
            None,
            ""
        )
        .code,
        200
    );
    let r = get(&api, &format!("{DEPLOYS}/web"));
    assert_eq!(r.body["spec"]["replicas"], 1);
}

#[test]
fn dry_run_in_delete_options_deletes_nothing() {
    let api = ApiServer::new();
    for name in ["a", "b"] {
        create(&api, DEPLOYS, &deployment(name, "a:1"));
    }
    let dry = r#"{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"],"propagationPolicy":"Background"}"#;
    // One object, then the collection, with dryRun only in the body (as
    // kubectl sends it), then the collection with it only in the query.
    let r = call(&api, "DELETE", &format!("{DEPLOYS}/a"), JSON, dry);
    assert_eq!((r.code, &r.body["status"]), (200, &json!("Success")));
    let r = call(&api, "DELETE", DEPLOYS, JSON, dry);
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["items"].as_array().map(Vec::len), Some(2));
    let r = call(&api, "DELETE", &format!("{DEPLOYS}?dryRun=All"), None, "");
    assert_eq!(r.code, 200, "{}", r.body);
    for name in ["a", "b"] {
        assert_eq!(get(&api, &format!("{DEPLOYS}/{name}")).code, 200, "{name}");
    }
    // A value other than All is refused, and nothing is deleted.
    let r = call(
        &api,
        "DELETE",
        &format!("{DEPLOYS}/a"),
        JSON,
        r#"{"dryRun":["Bogus"]}"#,
    );
    assert_eq!(r.code, 400, "{}", r.body);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("Invalid dry run value"),
        "{}",
        r.body
    );
    assert_eq!(get(&api, &format!("{DEPLOYS}/a")).code, 200);
    // Without a dry run in the body, the same requests delete, even with
    // `?dryRun=All` beside the body: kube-apiserver reads the query's
    // options only when there is no body (kapply's prune once relied on it
    // and deleted for real there).
    let plain = r#"{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}"#;
    assert_eq!(
        call(
            &api,
            "DELETE",
            &format!("{DEPLOYS}/a?dryRun=All"),
            JSON,
            plain
        )
        .code,
        200
    );
    assert_eq!(get(&api, &format!("{DEPLOYS}/a")).code, 404);
    assert_eq!(call(&api, "DELETE", DEPLOYS, JSON, plain).code, 200);
    assert_eq!(get(&api, &format!("{DEPLOYS}/b")).code, 404);
}

#[test]
fn scale_subresource_records_its_manager() {
    let api = ApiServer::new();
    create(
        &api,
        &format!("{DEPLOYS}?fieldManager=kubectl-client-side-apply"),
        &deployment("web", "a:1"),
    );
    let r = get(&api, &format!("{DEPLOYS}/web/scale"));
    assert_eq!(r.body["kind"], "Scale");
    assert_eq!(r.body["spec"]["replicas"], 1);
    assert_eq!(r.body["status"]["selector"], "app=web");
    let r = call(
        &api,
        "PATCH",
        &format!("{DEPLOYS}/web/scale?fieldManager=kubectl-scale"),
        Some("application/merge-patch+json"),
        r#"{"spec":{"replicas":2}}"#,
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["replicas"], 2);
    let d = get(&api, &format!("{DEPLOYS}/web")).body;
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(d["metadata"]["generation"], 2);
    let entries = d["metadata"]["managedFields"].as_array().unwrap();
    let scale = entries
        .iter()
        .find(|e| e["manager"] == "kubectl-scale")
        .unwrap();
    assert_eq!(scale["subresource"], "scale");
    assert_eq!(scale["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    let csa = entries
        .iter()
        .find(|e| e["manager"] == "kubectl-client-side-apply")
        .unwrap();
    assert!(csa["fieldsV1"]["f:spec"].get("f:replicas").is_none());
}

#[test]
fn namespace_delete_cascades_and_crds_serve_kinds() {
    let api = ApiServer::new();
    create(
        &api,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tmp"}}),
    );
    create(
        &api,
        "/api/v1/namespaces/tmp/configmaps",
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
    );
    let ns = get(&api, "/api/v1/namespaces/tmp").body;
    assert_eq!(ns["status"]["phase"], "Active");
    assert_eq!(
        call(
            &api,
            "DELETE",
            "/api/v1/namespaces/tmp",
            JSON,
            r#"{"propagationPolicy":"Background"}"#
        )
        .code,
        200
    );
    assert_eq!(get(&api, "/api/v1/namespaces/tmp/configmaps/x").code, 404);

    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    assert_eq!(get(&api, "/apis/example.com/v1").code, 404);
    create(
        &api,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    );
    let groups = get(&api, "/apis").body;
    assert!(has_name(&groups["groups"], "example.com"));
    let rl = get(&api, "/apis/example.com/v1").body;
    assert_eq!(rl["resources"][0]["kind"], "Widget");
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"items": [{"name": "a"}, {"name": "b"}]}});
    create(&api, "/apis/example.com/v1/namespaces/default/widgets", &w);
    // Custom resources take merge patches, not strategic ones.
    let url = "/apis/example.com/v1/namespaces/default/widgets/w";
    let r = call(
        &api,
        "PATCH",
        url,
        Some("application/strategic-merge-patch+json"),
        "{}",
    );
    assert_eq!(r.code, 415);
    let r = call(
        &api,
        "PATCH",
        url,
        Some("application/merge-patch+json"),
        r#"{"spec":{"items":[{"name":"c"}]}}"#,
    );
    assert_eq!(r.body["spec"]["items"], json!([{"name": "c"}]));
    assert_eq!(r.body["metadata"]["generation"], 2);
    call(
        &api,
        "DELETE",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
        None,
        "",
    );
    assert_eq!(get(&api, url).code, 404);
    assert_eq!(get(&api, "/apis/example.com/v1").code, 404);
}

#[test]
fn server_side_apply_of_an_applyset_parent() {
    let api = ApiServer::new();
    let url = "/api/v1/namespaces/default/secrets/set?fieldManager=kubectl-applyset&force=false";
    let parent = |kinds: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: set\n  namespace: default\n  labels:\n    applyset.kubernetes.io/id: applyset-x-v1\n  annotations:\n    applyset.kubernetes.io/contains-group-kinds: {kinds}\n"
        )
    };
    let r = call(
        &api,
        "PATCH",
        url,
        Some("application/apply-patch+yaml"),
        &parent("ConfigMap,Deployment.apps"),
    );
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["type"], "Opaque");
    let r = call(
        &api,
        "PATCH",
        url,
        Some("application/apply-patch+yaml"),
        &parent("ConfigMap"),
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(
        r.body["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"],
        "ConfigMap"
    );
    let mf = &r.body["metadata"]["managedFields"][0];
    assert_eq!(mf["manager"], "kubectl-applyset");
    assert_eq!(mf["operation"], "Apply");
    // Another manager's field with a different value: a conflict, unless forced.
    let r = call(
        &api,
        "PATCH",
        "/api/v1/namespaces/default/secrets/set?fieldManager=other",
        Some("application/merge-patch+json"),
        r#"{"metadata":{"annotations":{"applyset.kubernetes.io/contains-group-kinds":"Service"}}}"#,
    );
    assert_eq!(r.code, 200, "{}", r.body);
    let r = call(
        &api,
        "PATCH",
        url,
        Some("application/apply-patch+yaml"),
        &parent("ConfigMap"),
    );
    assert_eq!(r.code, 409, "{}", r.body);
    assert_eq!(r.body["reason"], "Conflict");
    assert_eq!(
        r.body["details"]["causes"][0]["field"],
        ".metadata.annotations.applyset.kubernetes.io/contains-group-kinds"
    );
    let forced = url.replace("force=false", "force=true");
    let r = call(
        &api,
        "PATCH",
        &forced,
        Some("application/apply-patch+yaml"),
        &parent("ConfigMap"),
    );
    assert_eq!(r.code, 200, "{}", r.body);
    // Apply without a field manager is refused.
    let r = call(
        &api,
        "PATCH",
        "/api/v1/namespaces/default/secrets/set",
        Some("application/apply-patch+yaml"),
        &parent("ConfigMap"),
    );
    assert_eq!(r.code, 400);
}

#[test]
fn discovery_and_openapi() {
    let api = ApiServer::new();
    let v = get(&api, "/version").body;
    assert!(v["gitVersion"].as_str().unwrap().starts_with("v1.32."));
    let core = get(&api, "/api/v1").body;
    let names: Vec<&str> = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    for n in [
        "namespaces",
        "configmaps",
        "secrets",
        "services",
        "serviceaccounts",
        "pods",
        "endpoints",
        "persistentvolumeclaims",
    ] {
        assert!(names.contains(&n), "{n}");
    }
    let apps = get(&api, "/apis/apps/v1").body;
    assert!(has_name(&apps["resources"], "deployments/scale"));
    let index = get(&api, "/openapi/v3").body;
    let url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    let doc = get(&api, &url).body;
    let patch = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"]["kind"],
        "Deployment"
    );
    assert!(has_name(&patch["parameters"], "fieldValidation"));
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"][0]["kind"],
        "Deployment"
    );
    let containers = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(
        schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"]["x-kubernetes-patch-strategy"],
        "retainKeys"
    );
    assert_eq!(get(&api, "/openapi/v3/apis/nope/v1").code, 404);
}

#[test]
fn watch_without_a_socket_returns_the_first_events() {
    let api = ApiServer::new();
    create(&api, DEPLOYS, &deployment("a", "x:1"));
    let r = get(&api, &format!("{DEPLOYS}?watch=true"));
    assert_eq!(r.body[0]["type"], "ADDED");
    assert_eq!(r.body[0]["object"]["metadata"]["name"], "a");
    let rv = r.body[0]["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    call(
        &api,
        "PATCH",
        &format!("{DEPLOYS}/a"),
        Some("application/merge-patch+json"),
        r#"{"spec":{"replicas":2}}"#,
    );
    call(&api, "DELETE", &format!("{DEPLOYS}/a"), None, "");
    let r = get(&api, &format!("{DEPLOYS}?watch=1&resourceVersion={rv}"));
    let kinds: Vec<&str> = r
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["MODIFIED", "DELETED"]);
    assert_eq!(r.body[0]["object"]["spec"]["replicas"], 2);
}

#[test]
fn aggregated_discovery_v2() {
    let api = ApiServer::new();
    let mut headers = HeaderMap::new();
    headers.insert(header::ACCEPT, HeaderValue::from_static(
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json",
    ));
    let resp = api.handle(&Method::GET, &"/apis".parse().unwrap(), &headers, b"");
    assert_eq!(
        resp.headers()[header::CONTENT_TYPE],
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    let v: Value = serde_json::from_slice(resp.body()).unwrap();
    assert_eq!(v["kind"], "APIGroupDiscoveryList");
    let apps = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "apps")
        .unwrap();
    let deploy = apps["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "deployments")
        .unwrap();
    assert_eq!(deploy["scope"], "Namespaced");
    assert_eq!(deploy["subresources"][0]["subresource"], "scale");
    // A client asking for plain JSON gets the legacy list.
    let plain = get(&api, "/apis");
    assert_eq!(plain.body["kind"], "APIGroupList");
}

#[test]
fn request_convenience() {
    let api = ApiServer::new();
    let (code, d) = api.request(
        "POST",
        &format!("{DEPLOYS}?fieldManager=kubectl-client-side-apply"),
        JSON,
        Some(&deployment("web", "a:1")),
    );
    assert_eq!(code, 201, "{d}");
    let (code, s) = api.request(
        "PATCH",
        &format!("{DEPLOYS}/web/scale?fieldManager=kubectl-scale"),
        Some("application/merge-patch+json"),
        Some(&json!({"spec": {"replicas": 2}})),
    );
    assert_eq!(code, 200, "{s}");
    assert_eq!(s["spec"]["replicas"], 2);
    assert_eq!(api.request("GET", "not a uri", None, None).0, 400);
}

#[test]
fn requests_are_recorded() {
    let api = ApiServer::new();
    call(
        &api,
        "POST",
        &format!("{DEPLOYS}?fieldManager=x"),
        JSON,
        &deployment("web", "a:1").to_string(),
    );
    let reqs = api.requests();
    let r = reqs.last().unwrap();
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, DEPLOYS);
    assert_eq!(r.query.get("fieldManager").map(String::as_str), Some("x"));
    assert_eq!(r.content_type.as_deref(), Some("application/json"));
    assert_eq!(r.body.as_ref().unwrap()["metadata"]["name"], "web");
    api.clear_requests();
    assert!(api.requests().is_empty());
}

#[test]
fn seeding_through_put_object() {
    let api = ApiServer::new();
    let s = api
        .put_object(
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "stringData": {"password": "hunter2"}}),
        )
        .unwrap();
    assert_eq!(s["data"]["password"], "aHVudGVyMg==");
    assert!(s.get("stringData").is_none());
    assert_eq!(s["metadata"]["namespace"], "default");
    let got = api
        .store()
        .get("v1", "Secret", Some("default"), "s")
        .unwrap();
    assert_eq!(got["metadata"]["uid"], s["metadata"]["uid"]);
    assert!(
        api.put_object(json!({"apiVersion": "x/v1", "kind": "Nope", "metadata": {"name": "n"}}))
            .is_err()
    );
}

fn arb_method() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS",
    ])
    .prop_map(String::from)
}

fn arb_path() -> impl Strategy<Value = String> {
    let seg = prop::sample::select(vec![
        "api",
        "apis",
        "v1",
        "apps",
        "namespaces",
        "default",
        "deployments",
        "web",
        "scale",
        "status",
        "configmaps",
        "openapi",
        "v3",
        "version",
        "nope",
        "",
        "..",
        "%zz",
        "services",
        "apiextensions.k8s.io",
        "customresourcedefinitions",
    ]);
    let query = prop_oneof![
        "[a-z=&%0-9]{0,12}",
        prop::sample::select(vec![
            "watch=true",
            "watch=1&resourceVersion=3",
            "dryRun=All",
            "dryRun=Bogus",
            "fieldValidation=Strict&fieldManager=x",
            "labelSelector=a%3Db%2Cc+in+%28d%29",
            "labelSelector=%28%28",
            "fieldSelector=spec.x%3D1",
            "limit=1&continue=kapply-1",
            "limit=-3&continue=zzz",
            "timeoutSeconds=1&watch=true",
        ])
        .prop_map(String::from),
    ];
    (prop::collection::vec(seg, 0..7), query).prop_map(|(segs, q)| {
        let p = format!("/{}", segs.join("/"));
        if q.is_empty() { p } else { format!("{p}?{q}") }
    })
}

fn arb_body() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just(deployment("web", "a:1").to_string()),
        Just(r#"{"spec":{"replicas":"x","template":null}}"#.to_string()),
        Just(r#"[{"op":"add","path":"/metadata/labels/x","value":"y"}]"#.to_string()),
        Just(r#"{"metadata":{"name":5},"apiVersion":7}"#.to_string()),
        Just("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n".to_string()),
        ".{0,40}",
        any::<Vec<u8>>().prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

fn arb_ct() -> impl Strategy<Value = Option<String>> {
    prop::option::of(
        prop::sample::select(vec![
            "application/json",
            "application/yaml",
            "application/strategic-merge-patch+json",
            "application/merge-patch+json",
            "application/json-patch+json",
            "application/apply-patch+yaml",
            "text/plain",
            "application/vnd.kubernetes.protobuf",
        ])
        .prop_map(String::from),
    )
}

proptest! {
    // 256 cases by default; PROPTEST_CASES=N for a longer run.
    #[test]
    fn handler_never_panics(reqs in prop::collection::vec((arb_method(), arb_path(), arb_ct(), arb_body()), 1..8)) {
        let api = ApiServer::new();
        // A known object so item paths hit something.
        call(&api, "POST", DEPLOYS, JSON, &deployment("web", "a:1").to_string());
        for (m, p, ct, body) in reqs {
            let Ok(uri) = p.parse::<Uri>() else { continue };
            let mut headers = HeaderMap::new();
            if let Some(ct) = &ct {
                headers.insert(header::CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
            }
            let resp = api.handle(&Method::from_bytes(m.as_bytes()).unwrap(), &uri, &headers, body.as_bytes());
            let code = resp.status().as_u16();
            prop_assert!(code < 500, "{m} {p}: {code}");
            let v: Value = serde_json::from_slice(resp.body()).expect("responses are JSON");
            if code >= 400 {
                prop_assert_eq!(&v["kind"], "Status");
                prop_assert_eq!(v["code"].as_u64(), Some(code as u64));
            }
        }
    }

    #[test]
    fn malformed_bodies_are_bad_requests(body in "[^{\\[]{1,40}") {
        let api = ApiServer::new();
        let r = call(&api, "POST", DEPLOYS, JSON, &body);
        // Unparsable or non-object bodies: 400, never a write.
        prop_assert_eq!(r.code, 400);
        let r = get(&api, DEPLOYS);
        prop_assert_eq!(r.body["items"].as_array().map(Vec::len), Some(0));
    }
}

#[test]
fn kube_rs_works_against_it() {
    use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
    use kube::config::{KubeConfigOptions, Kubeconfig};
    use kube::core::GroupVersionKind;
    use kube::discovery::Discovery;

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let server = kapply::server::start(ServerOptions::default())
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        server.write_kubeconfig(&path).unwrap();
        let kc = Kubeconfig::read_from(&path).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .unwrap();
        assert_eq!(config.default_namespace, "default");
        let client = kube::Client::try_from(config).unwrap();
        let discovery = Discovery::new(client.clone()).run().await.unwrap();
        let (ar, caps) = discovery
            .resolve_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment"))
            .expect("deployments discovered");
        assert!(matches!(caps.scope, kube::discovery::Scope::Namespaced));
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
        let obj: DynamicObject = serde_json::from_value(deployment("kube", "nginx:1")).unwrap();
        let created = api.create(&PostParams::default(), &obj).await.unwrap();
        assert_eq!(created.data["spec"]["replicas"], 1);
        let got = api.get("kube").await.unwrap();
        assert_eq!(got.metadata.uid, created.metadata.uid);
        let listed = api
            .list(&ListParams::default().labels("app=kube"))
            .await
            .unwrap();
        assert_eq!(listed.items.len(), 1);
        let patched = api
            .patch(
                "kube",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": 3}})),
            )
            .await
            .unwrap();
        assert_eq!(patched.data["spec"]["replicas"], 3);
        let ssa = api
            .patch(
                "kube",
                &PatchParams::apply("kapply-test"),
                &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "kube", "labels": {"owner": "ssa"}}})),
            )
            .await
            .unwrap();
        assert_eq!(ssa.metadata.labels.unwrap()["owner"], "ssa");
        // A watch from the current resourceVersion sees the next change.
        let rv = api.list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();
        let mut events = Box::pin(api.watch(&kube::api::WatchParams::default(), &rv).await.unwrap());
        api.delete("kube", &DeleteParams::default()).await.unwrap();
        use futures::StreamExt;
        let ev = events.next().await.unwrap().unwrap();
        assert!(matches!(ev, kube::api::WatchEvent::Deleted(ref o) if o.metadata.name.as_deref() == Some("kube")), "{ev:?}");
        assert!(api.get_opt("kube").await.unwrap().is_none());
        let missing = api.get("kube").await.unwrap_err();
        assert!(
            matches!(missing, kube::Error::Api(ref s) if s.code == 404),
            "{missing:?}"
        );
        server.shutdown();
    });
}

/// One raw HTTP/1.1 request (`METHOD PATH`) over the socket, with `Host` as
/// given, the server's token (`server.token()`, or none when empty) and
/// `Content-Type` when the body is not empty: the status code and the body
/// (the response is read to its end).
fn raw_request(port: u16, token: &str, host: &str, request: &str, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let auth = if token.is_empty() {
        String::new()
    } else {
        format!("Authorization: Bearer {token}\r\n")
    };
    write!(
        s,
        "{request} HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n{}Content-Length: {}\r\n\r\n{body}",
        if body.is_empty() {
            ""
        } else {
            "Content-Type: application/json\r\n"
        },
        body.len()
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let code = resp
        .get(9..12)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {resp:?}"));
    let body = resp.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (code, body.to_string())
}

#[test]
fn foreign_host_headers_are_refused() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt
        .block_on(kapply::server::start(ServerOptions::default()))
        .unwrap();
    let port = server.port();
    let token = server.token();
    let list = "GET /api/v1/namespaces/default/configmaps";
    for host in [
        format!("127.0.0.1:{port}"),
        "127.0.0.1".to_string(),
        "127.1.2.3".to_string(),
        format!("localhost:{port}"),
        "LocalHost".to_string(),
        format!("[::1]:{port}"),
        "[::1]".to_string(),
    ] {
        let (code, body) = raw_request(port, token, &host, list, "");
        assert_eq!(code, 200, "{host}: {body}");
    }
    // DNS rebinding sends the attacker's name (or any non-loopback address).
    for host in [
        format!("evil.example:{port}"),
        "evil.example".to_string(),
        format!("localhost.evil.example:{port}"),
        format!("10.0.0.1:{port}"),
        format!("[::2]:{port}"),
        "127.0.0.1:port".to_string(),
        "[::1]x".to_string(),
    ] {
        let (code, body) = raw_request(port, token, &host, list, "");
        assert_eq!(code, 403, "{host}: {body}");
        let status: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "Forbidden");
        let message = status["message"].as_str().unwrap();
        assert!(
            message.contains("is not a loopback name or address")
                && message.contains("DNS rebinding"),
            "{message}"
        );
    }
    // A refused watch answers at once instead of streaming.
    let (code, _) = raw_request(
        port,
        token,
        "evil.example",
        "GET /api/v1/namespaces/default/configmaps?watch=true",
        "",
    );
    assert_eq!(code, 403);
    // And a refused write writes nothing.
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#;
    let post = "POST /api/v1/namespaces/default/configmaps";
    let (code, _) = raw_request(port, token, "evil.example", post, cm);
    assert_eq!(code, 403);
    let stored = || server.store().get("v1", "ConfigMap", Some("default"), "x");
    assert!(stored().is_none());
    let (code, body) = raw_request(port, token, &format!("localhost:{port}"), post, cm);
    assert_eq!(code, 201, "{body}");
    assert!(stored().is_some());
}

/// Over the socket every request needs the run's token (another user of
/// the machine can reach the port); kube-apiserver's 401 otherwise, and
/// nothing is read or written. The kubeconfig carries it, owner-only.
#[test]
fn requests_without_the_token_are_refused() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt
        .block_on(kapply::server::start(ServerOptions::default()))
        .unwrap();
    let other = rt
        .block_on(kapply::server::start(ServerOptions::default()))
        .unwrap();
    let port = server.port();
    let token = server.token();
    assert!(token.len() >= 32, "{token}");
    assert_ne!(token, other.token(), "a token per run");
    let host = format!("127.0.0.1:{port}");
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#;
    let post = "POST /api/v1/namespaces/default/configmaps";
    let secrets = "GET /api/v1/namespaces/default/secrets";
    let wrong = format!("{}x", &token[..token.len() - 1]);
    for t in ["", "kapply-demo", wrong.as_str(), other.token()] {
        for (req, body) in [
            (secrets, ""),
            (post, cm),
            ("DELETE /api/v1/namespaces/default", ""),
        ] {
            let (code, answer) = raw_request(port, t, &host, req, body);
            assert_eq!(code, 401, "{t:?} {req}: {answer}");
            let status: Value = serde_json::from_str(&answer).unwrap();
            assert_eq!(status["kind"], "Status");
            assert_eq!(status["reason"], "Unauthorized");
            assert_eq!(status["message"], "Unauthorized");
        }
    }
    // kubectl sends no credentials over http: the token is the path's
    // first steps there, stripped before the API sees the path.
    for t in ["kapply-demo", wrong.as_str(), other.token(), ""] {
        let req = format!("GET /kapply-token/{t}/api/v1/namespaces/default/secrets");
        let (code, answer) = raw_request(port, "", &host, &req, "");
        assert_eq!(code, 401, "{t:?}: {answer}");
    }
    assert!(
        server
            .store()
            .get("v1", "ConfigMap", Some("default"), "x")
            .is_none()
    );
    assert!(
        server
            .store()
            .get("v1", "Namespace", None, "default")
            .is_some()
    );
    let (code, body) = raw_request(port, token, &host, post, cm);
    assert_eq!(code, 201, "{body}");
    let by_path =
        format!("GET /kapply-token/{token}/api/v1/namespaces/default/configmaps/x?pretty=false");
    let (code, body) = raw_request(port, "", &host, &by_path, "");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"name\":\"x\""), "{body}");
    let last = server.requests().pop().unwrap();
    assert_eq!(
        last.path, "/api/v1/namespaces/default/configmaps/x",
        "{last:?}"
    );
    assert_eq!(
        server.authenticated_url(),
        format!("{}/kapply-token/{token}", server.url())
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(&path, "old").unwrap();
    server.write_kubeconfig(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(&format!("    token: {token}\n")), "{text}");
    assert!(
        text.contains(&format!("    server: {}\n", server.authenticated_url())),
        "{text}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
}

#[test]
fn writes_without_a_kubernetes_media_type_are_refused() {
    let api = ApiServer::new();
    let cms = "/api/v1/namespaces/default/configmaps";
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#;
    // What a web page may send cross-site without asking: form types,
    // text/plain, or nothing.
    for ct in [
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        for (method, uri) in [
            ("POST", cms.to_string()),
            ("PUT", format!("{cms}/x")),
            ("PATCH", format!("{cms}/x")),
        ] {
            let r = call(&api, method, &uri, ct, cm);
            assert_eq!(r.code, 415, "{method} {ct:?}: {}", r.body);
            assert_eq!(r.body["reason"], "UnsupportedMediaType");
            let message = r.body["message"].as_str().unwrap();
            assert!(message.contains("application/json"), "{message}");
        }
    }
    assert_eq!(get(&api, &format!("{cms}/x")).code, 404);
    // JSON with parameters, YAML, and the patch types pass.
    let r = call(
        &api,
        "POST",
        cms,
        Some("application/json; charset=utf-8"),
        cm,
    );
    assert_eq!(r.code, 201, "{}", r.body);
    let r = call(
        &api,
        "PATCH",
        &format!("{cms}/x"),
        Some("application/merge-patch+json"),
        r#"{"data":{"a":"b"}}"#,
    );
    assert_eq!(r.code, 200, "{}", r.body);
    let r = call(
        &api,
        "PUT",
        &format!("{cms}/x"),
        Some("application/yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: c\n",
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(get(&api, &format!("{cms}/x")).body["data"]["a"], "c");
}

/// YAML bodies are read with go-yaml's YAML 1.1 rules, as kube-apiserver
/// reads them: its YAML serializer (k8s.io/apimachinery
/// runtime/serializer/json, `Yaml: true`) and its apply patches both go
/// through sigs.k8s.io/yaml, i.e. go-yaml v2. So unquoted `yes`/`on` are
/// booleans and `0755` is octal (493), where a YAML 1.2 reader would see the
/// strings "yes"/"on" and the decimal 755.
#[test]
fn yaml_bodies_are_read_with_yaml_1_1_rules() {
    let api = ApiServer::new();
    let body = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\n\
        spec:\n  paused: yes\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      \
        labels: {app: web}\n    spec:\n      containers:\n      - name: c\n        image: nginx\n      \
        volumes:\n      - name: v\n        configMap:\n          name: c\n          defaultMode: 0755\n";
    let r = call(&api, "POST", DEPLOYS, Some("application/yaml"), body);
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"]["paused"], json!(true));
    let volume = &r.body["spec"]["template"]["spec"]["volumes"][0];
    assert_eq!(volume["configMap"]["defaultMode"], json!(493));

    // Server-side apply's YAML patch: `0644` is 420, `on` is true.
    let patch = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n\
        spec:\n  paused: on\n  template:\n    spec:\n      volumes:\n      - name: v\n        \
        configMap:\n          name: c\n          defaultMode: 0644\n";
    let r = call(
        &api,
        "PATCH",
        &format!("{DEPLOYS}/web?fieldManager=yaml-test&force=true"),
        Some("application/apply-patch+yaml"),
        patch,
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["paused"], json!(true));
    let volume = &r.body["spec"]["template"]["spec"]["volumes"][0];
    assert_eq!(volume["configMap"]["defaultMode"], json!(420));

    // A ConfigMap value written `on` unquoted is a boolean, which the Go
    // type refuses, as kube-apiserver refuses it (400).
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  enabled: on\n";
    let r = call(
        &api,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some("application/yaml"),
        cm,
    );
    assert_eq!(r.code, 400, "{}", r.body);
    let message = r.body["message"].as_str().unwrap();
    assert!(
        message
            .contains("cannot unmarshal bool into Go struct field ConfigMap.data of type string"),
        "{message}"
    );
}

/// managedFields as kube-apiserver v1.34 writes them on a create (seen on
/// it): atomic selectors owned whole, a Service's allocated cluster IPs and
/// IP families and a Namespace's finalizer owned by no manager unless the
/// request sent them.
#[test]
fn managed_fields_of_atomic_and_storage_set_fields() {
    let api = ApiServer::new();
    let fields = |o: &Value| o["metadata"]["managedFields"][0]["fieldsV1"].clone();
    let d = create(&api, DEPLOYS, &deployment("web", "nginx:1"));
    assert_eq!(fields(&d)["f:spec"]["f:selector"], json!({}), "{d}");
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], "ipFamilyPolicy": "SingleStack"}});
    let s = create(&api, "/api/v1/namespaces/default/services", &svc);
    let spec = &fields(&s)["f:spec"];
    assert_eq!(spec["f:selector"], json!({}), "{s}");
    for gone in ["f:clusterIP", "f:clusterIPs", "f:ipFamilies"] {
        assert!(spec.get(gone).is_none(), "{gone}: {s}");
    }
    assert_eq!(spec["f:ipFamilyPolicy"], json!({}), "sent: {s}");
    assert!(s["spec"]["clusterIP"].is_string(), "{s}");
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}});
    let n = create(&api, "/api/v1/namespaces", &ns);
    assert_eq!(n["spec"]["finalizers"], json!(["kubernetes"]), "{n}");
    assert!(fields(&n).get("f:spec").is_none(), "{n}");
}
