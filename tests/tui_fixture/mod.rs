//! A hand-built plan for the TUI's tests, screenshots and benchmark: the
//! reference page's story (a Deployment whose replicas were scaled by
//! another writer, minReadySeconds removed from the config, a new image),
//! plus a create, an object in sync, a prune candidate, a Secret and an error.
#![allow(dead_code)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use kapply::merge::{Cause, FieldAction, FieldChange, LAST_APPLIED, Patch, PatchType, classify};
use kapply::ops::ObjectResult;
use kapply::plan::{ObjectAction, ObjectPlan, Plan};
use kapply::tui::App;
use kapply::tui::app::Msg;
use serde_json::{Value, json};

fn field(
    path: &str,
    last: Option<Value>,
    live: Option<Value>,
    config: Option<Value>,
    action: FieldAction,
    reason: &str,
) -> FieldChange {
    let created = last.is_none() && live.is_none();
    FieldChange {
        path: path.into(),
        config,
        live,
        last_applied: last,
        action,
        reason: reason.into(),
        // Objects with a live side get their causes from the core
        // (kapply::merge::classify), as a real plan does.
        cause: if created { Cause::New } else { Cause::Intended },
        owner: None,
        changed_at: None,
        hazards: Vec::new(),
    }
}

fn object(
    api_version: &str,
    kind: &str,
    ns: Option<&str>,
    name: &str,
    action: ObjectAction,
) -> ObjectPlan {
    ObjectPlan {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        namespace: ns.map(str::to_string),
        name: name.to_string(),
        source: None,
        action,
        reverts_drift: false,
        annotation_only: false,
        fields: Vec::new(),
        patch: None,
        last_applied: None,
        warnings: Vec::new(),
        error: None,
        kind_not_served: false,
        prune_reason: None,
        config: None,
        live: None,
    }
}

fn meta(ns: Option<&str>, name: &str, uid: &str) -> Value {
    let mut m = json!({"name": name, "uid": uid, "resourceVersion": "1042",
        "creationTimestamp": "2026-11-22T10:00:00Z"});
    if let Some(ns) = ns {
        m["namespace"] = json!(ns);
    }
    m
}

pub fn deployment() -> ObjectPlan {
    let config = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nginx-deployment", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "nginx"}},
            "template": {"metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.16.1",
                    "ports": [{"containerPort": 80}]}]}}}});
    let old_last = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"annotations": {}, "name": "nginx-deployment", "namespace": "default"},
        "spec": {"minReadySeconds": 5, "selector": {"matchLabels": {"app": "nginx"}},
            "template": {"metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [{"image": "nginx:1.14.2", "name": "nginx",
                    "ports": [{"containerPort": 80}]}]}}}});
    let mut m = meta(
        Some("default"),
        "nginx-deployment",
        "6f1c2a9e-0b7d-4c1e-9a55-1b2c3d4e5f60",
    );
    m["annotations"] = json!({LAST_APPLIED: format!("{}\n", old_last)});
    m["generation"] = json!(2);
    m["managedFields"] = json!([
        {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "apps/v1",
         "fieldsV1": {"f:spec": {"f:minReadySeconds": {}, "f:template": {"f:spec": {"f:containers":
            {"k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}},
        {"manager": "kubectl-scale", "operation": "Update", "apiVersion": "apps/v1",
         "subresource": "scale", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
         "fieldsV1": {"f:spec": {"f:progressDeadlineSeconds": {}, "f:revisionHistoryLimit": {}}}}
    ]);
    let live = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": m,
        "spec": {"replicas": 2, "minReadySeconds": 5, "progressDeadlineSeconds": 600,
            "revisionHistoryLimit": 10, "selector": {"matchLabels": {"app": "nginx"}},
            "template": {"metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.14.2",
                    "imagePullPolicy": "IfNotPresent", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}},
        "status": {"replicas": 2, "readyReplicas": 2}});
    let img = "spec.template.spec.containers[name=nginx].image";
    let mut o = object(
        "apps/v1",
        "Deployment",
        Some("default"),
        "nginx-deployment",
        ObjectAction::Update,
    );
    o.source = Some("manifests/deployment.yaml:1".to_string());
    o.fields = vec![
        field(
            "spec.minReadySeconds",
            Some(json!(5)),
            Some(json!(5)),
            None,
            FieldAction::Clear,
            "in last-applied, removed from the config",
        ),
        field(
            "spec.progressDeadlineSeconds",
            None,
            Some(json!(600)),
            None,
            FieldAction::Keep,
            "live only: set by another writer or defaulted",
        ),
        field(
            "spec.replicas",
            None,
            Some(json!(2)),
            None,
            FieldAction::Keep,
            "live only: set by another writer or defaulted",
        ),
        field(
            "spec.revisionHistoryLimit",
            None,
            Some(json!(10)),
            None,
            FieldAction::Keep,
            "live only: set by another writer or defaulted",
        ),
        field(
            img,
            Some(json!("nginx:1.14.2")),
            Some(json!("nginx:1.14.2")),
            Some(json!("nginx:1.16.1")),
            FieldAction::Set,
            "config differs from live",
        ),
    ];
    let mut new_last = config.clone();
    new_last["metadata"]["annotations"] = json!({});
    o.last_applied = Some(new_last.clone());
    o.patch = Some(Patch {
        kind: PatchType::Strategic,
        body: json!({"metadata": {"annotations": {LAST_APPLIED: format!("{new_last}\n")}},
            "spec": {"minReadySeconds": null, "template": {"spec": {
                "$setElementOrder/containers": [{"name": "nginx"}],
                "containers": [{"image": "nginx:1.16.1", "name": "nginx"}]}}}}),
    });
    classify(&mut o.fields, &live, Some(&old_last));
    o.config = Some(config);
    o.live = Some(live);
    o
}

pub fn configmap_create() -> ObjectPlan {
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "app-config", "namespace": "default"},
        "data": {"LOG_LEVEL": "info", "MODE": "demo"}});
    let mut o = object(
        "v1",
        "ConfigMap",
        Some("default"),
        "app-config",
        ObjectAction::Create,
    );
    o.source = Some("manifests/config.yaml:1".to_string());
    o.fields = vec![
        field(
            "data.LOG_LEVEL",
            None,
            None,
            Some(json!("info")),
            FieldAction::Set,
            "new object",
        ),
        field(
            "data.MODE",
            None,
            None,
            Some(json!("demo")),
            FieldAction::Set,
            "new object",
        ),
    ];
    o.config = Some(config);
    o
}

pub fn service_in_sync() -> ObjectPlan {
    let config = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "nginx", "namespace": "default"},
        "spec": {"selector": {"app": "nginx"}, "ports": [{"port": 80}]}});
    let live = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": meta(Some("default"), "nginx", "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"),
        "spec": {"selector": {"app": "nginx"}, "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
            "clusterIP": "10.96.0.12", "type": "ClusterIP"}});
    let mut o = object(
        "v1",
        "Service",
        Some("default"),
        "nginx",
        ObjectAction::Unchanged,
    );
    o.source = Some("manifests/service.yaml:1".to_string());
    o.config = Some(config);
    o.live = Some(live);
    o
}

pub fn prune_candidate() -> ObjectPlan {
    let mut m = meta(
        Some("default"),
        "old-config",
        "7d3e4f50-6a7b-4c8d-9e0f-a1b2c3d4e5f6",
    );
    m["labels"] = json!({"app": "demo"});
    m["annotations"] = json!({LAST_APPLIED: "{}\n"});
    let live =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": m, "data": {"stale": "yes"}});
    let mut o = object(
        "v1",
        "ConfigMap",
        Some("default"),
        "old-config",
        ObjectAction::Prune,
    );
    o.prune_reason = Some(
        "matches -l app=demo, has the last-applied annotation, not in the manifests".to_string(),
    );
    o.live = Some(live);
    o
}

pub fn secret() -> ObjectPlan {
    let live = json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": meta(Some("demo"), "db-credentials", "9c8b7a6d-5e4f-4321-8fed-cba987654321"),
        "data": {"password": "aHVudGVyMg==", "user": "YWRtaW4="}});
    let config = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "db-credentials", "namespace": "demo"},
        "stringData": {"password": "correct-horse"}, "data": {"user": "YWRtaW4="}});
    let mut o = object(
        "v1",
        "Secret",
        Some("demo"),
        "db-credentials",
        ObjectAction::Update,
    );
    o.source = Some("manifests/secret.yaml:1".to_string());
    o.fields = vec![
        field(
            "data.user",
            Some(json!("YWRtaW4=")),
            Some(json!("YWRtaW4=")),
            Some(json!("YWRtaW4=")),
            FieldAction::Set,
            "stringData is folded into data by the server",
        ),
        field(
            "stringData.password",
            Some(json!("hunter2")),
            None,
            Some(json!("correct-horse")),
            FieldAction::Set,
            "stringData is never stored: always re-sent",
        ),
    ];
    o.warnings = vec![
        "stringData is re-sent on every apply: this object never reports unchanged".to_string(),
    ];
    o.patch = Some(Patch {
        kind: PatchType::Strategic,
        body: json!({"stringData": {"password": "correct-horse"}}),
    });
    o.config = Some(config);
    o.live = Some(live);
    o
}

pub fn namespace_create() -> ObjectPlan {
    let mut o = object("v1", "Namespace", None, "demo", ObjectAction::Create);
    o.source = Some("manifests/namespace.yaml:1".to_string());
    o.fields = vec![field(
        "metadata.labels.team",
        None,
        None,
        Some(json!("web")),
        FieldAction::Set,
        "new object",
    )];
    o.config = Some(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "demo", "labels": {"team": "web"}}}));
    o
}

pub fn error_object() -> ObjectPlan {
    let mut o = object(
        "example.com/v1",
        "Widget",
        Some("default"),
        "thing",
        ObjectAction::Error,
    );
    o.source = Some("manifests/widget.yaml:3".to_string());
    o.error = Some(
        "no matches for kind \"Widget\" in version \"example.com/v1\": install its CRD first"
            .to_string(),
    );
    o
}

/// The whole fixture plan, in manifest order, prune candidates last.
pub fn plan() -> Plan {
    Plan {
        objects: vec![
            namespace_create(),
            configmap_create(),
            deployment(),
            service_in_sync(),
            secret(),
            error_object(),
            prune_candidate(),
        ],
        prune_skipped: None,
    }
}

/// A large plan for the benchmark: `n` objects over 50 namespaces.
pub fn big_plan(n: usize) -> Plan {
    let base = [
        deployment(),
        configmap_create(),
        service_in_sync(),
        prune_candidate(),
    ];
    let objects = (0..n)
        .map(|i| {
            let mut o = base[i % base.len()].clone();
            o.name = format!("{}-{i:05}", o.name);
            o.namespace = Some(format!("ns-{:02}", i % 50));
            o
        })
        .collect();
    Plan {
        objects,
        prune_skipped: None,
    }
}

/// A key press as the runtime delivers it.
pub fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

pub fn code(c: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

/// Move the selection to the object named `name`, by keys.
pub fn select(app: &mut App, name: &str) {
    app.update(key('g'));
    for _ in 0..app.list.rows.len() {
        if app.selected().is_some_and(|o| o.name == name) {
            return;
        }
        app.update(key('j'));
    }
    panic!("no object {name}");
}

/// A ConfigMap edited in the cluster (`kubectl edit`): two values drifted
/// from what was applied, one changed in the manifest. Not in `plan()`:
/// tests of the drift rows add it.
pub fn configmap_drift() -> ObjectPlan {
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "default"},
        "data": {"LOG_LEVEL": "info", "MODE": "web", "WORKERS": "4"}});
    let last = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"annotations": {}, "name": "settings", "namespace": "default"},
        "data": {"LOG_LEVEL": "info", "MODE": "web", "WORKERS": "2"}});
    let mut m = meta(
        Some("default"),
        "settings",
        "3e4f5a6b-7c8d-4e9f-8a0b-1c2d3e4f5a6b",
    );
    m["annotations"] = json!({LAST_APPLIED: format!("{last}\n")});
    m["managedFields"] = json!([
        {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1",
         "time": "2026-11-20T09:00:00Z",
         "fieldsV1": {"f:data": {".": {}, "f:WORKERS": {}}}},
        {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "v1",
         "time": "2026-11-20T10:04:00Z",
         "fieldsV1": {"f:data": {"f:LOG_LEVEL": {}, "f:MODE": {}}}}
    ]);
    let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": m,
        "data": {"LOG_LEVEL": "debug", "MODE": "web-hotfix", "WORKERS": "2"}});
    let mut o = object(
        "v1",
        "ConfigMap",
        Some("default"),
        "settings",
        ObjectAction::Update,
    );
    o.source = Some("manifests/settings.yaml:1".to_string());
    o.fields = vec![
        field(
            "data.LOG_LEVEL",
            Some(json!("info")),
            Some(json!("debug")),
            Some(json!("info")),
            FieldAction::Set,
            "config differs from live",
        ),
        field(
            "data.MODE",
            Some(json!("web")),
            Some(json!("web-hotfix")),
            Some(json!("web")),
            FieldAction::Set,
            "config differs from live",
        ),
        field(
            "data.WORKERS",
            Some(json!("2")),
            Some(json!("2")),
            Some(json!("4")),
            FieldAction::Set,
            "config differs from live",
        ),
    ];
    classify(&mut o.fields, &live, Some(&last));
    o.reverts_drift = kapply::merge::reverts_drift(&o.fields);
    o.patch = Some(Patch {
        kind: PatchType::Strategic,
        body: json!({"data": {"LOG_LEVEL": "info", "MODE": "web", "WORKERS": "4"}}),
    });
    o.config = Some(config);
    o.live = Some(live);
    o
}

/// The fixture object shown as `shown` (`Deployment default/nginx`,
/// `Namespace demo`): Deployments are in apps, the rest in the core group.
pub fn id(shown: &str) -> kapply::objref::ObjectRef {
    let (kind, rest) = shown.split_once(' ').expect("Kind name");
    let (ns, name) = match rest.split_once('/') {
        Some((ns, name)) => (Some(ns), name),
        None => (None, rest),
    };
    let api_version = if kind == "Deployment" {
        "apps/v1"
    } else {
        "v1"
    };
    kapply::objref::ObjectRef::new(api_version, kind, ns, name)
}

/// A result as the engine reports it: `message` is what outputs print
/// (`configured`, `created (server dry run)`, or, when not `ok`, the
/// server's error).
pub fn result(object: &str, ok: bool, message: &str) -> ObjectResult {
    ObjectResult {
        object: id(object),
        ..outcome(ok, message)
    }
}

/// The outcome whose words are `message`.
pub fn outcome(ok: bool, message: &str) -> ObjectResult {
    use kapply::ops::Outcome;
    let (word, dry_run) = match message.strip_suffix(" (server dry run)") {
        Some(w) => (w, true),
        None => (message, false),
    };
    let outcome = match word {
        _ if !ok => Outcome::Failed(kapply::ops::Failure::Server(message.into())),
        "created" => Outcome::Created,
        "configured" => Outcome::Configured,
        "unchanged" => Outcome::Unchanged,
        "deleted" => Outcome::Deleted,
        "pruned" => Outcome::Pruned,
        other => panic!("not an outcome: {other}"),
    };
    ObjectResult {
        object: Default::default(),
        outcome,
        dry_run,
    }
}

/// The frame the app draws at its size.
pub fn buffer(app: &App) -> ratatui::buffer::Buffer {
    let (w, h) = (app.size.width, app.size.height);
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
    term.draw(|f| f.render_widget(app, f.area())).unwrap();
    term.backend().buffer().clone()
}

/// The frame as text: a line a row, trailing blanks trimmed.
pub fn text(app: &App) -> String {
    let buf = buffer(app);
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        for x in 0..buf.area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Real objects with structured values (issue 23): CoreDNS's Corefile (a
/// multi-line string), a container's args (a list) and a PrometheusRule's
/// rule group (a list of maps).
pub fn structured() -> Plan {
    let old_corefile = ".:53 {\n    errors\n    health {\n       lameduck 5s\n    }\n    ready\n    \
        kubernetes cluster.local in-addr.arpa ip6.arpa {\n       pods insecure\n       \
        fallthrough in-addr.arpa ip6.arpa\n       ttl 30\n    }\n    prometheus :9153\n    \
        forward . /etc/resolv.conf {\n       max_concurrent 1000\n    }\n    cache 30\n    \
        loop\n    reload\n    loadbalance\n}\n";
    let new_corefile = old_corefile
        .replace("cache 30", "cache 60")
        .replace("    loop\n", "    log\n    loop\n");
    let mut coredns = object(
        "v1",
        "ConfigMap",
        Some("kube-system"),
        "coredns",
        ObjectAction::Update,
    );
    coredns.source = Some("coredns/configmap.yaml:1".into());
    coredns.fields = vec![field(
        "data.Corefile",
        Some(json!(old_corefile)),
        Some(json!(old_corefile)),
        Some(json!(new_corefile)),
        FieldAction::Set,
        "config differs from live",
    )];
    let args = |v: &str| {
        json!([
            "/nginx-ingress-controller",
            "--election-id=ingress-nginx-leader",
            "--controller-class=k8s.io/ingress-nginx",
            "--ingress-class=nginx",
            "--configmap=$(POD_NAMESPACE)/ingress-nginx-controller",
            format!("--validating-webhook={v}"),
            "--validating-webhook-certificate=/usr/local/certificates/cert",
        ])
    };
    let mut controller = object(
        "apps/v1",
        "Deployment",
        Some("ingress-nginx"),
        "ingress-nginx-controller",
        ObjectAction::Update,
    );
    controller.source = Some("ingress-nginx/deploy.yaml:412".into());
    controller.fields = vec![field(
        "spec.template.spec.containers[name=controller].args",
        Some(args(":8443")),
        Some(args(":8443")),
        Some(args(":9443")),
        FieldAction::Set,
        "config differs from live",
    )];
    let group = |expr: &str| {
        json!([{"name": "kubernetes-apps", "rules": [
            {"alert": "KubePodCrashLooping",
             "expr": expr,
             "for": "15m",
             "labels": {"severity": "warning"}},
            {"alert": "KubePodNotReady",
             "expr": "sum by (namespace, pod) (kube_pod_status_phase{phase=~\"Pending|Unknown\"}) > 0",
             "for": "15m",
             "labels": {"severity": "warning"}}]}])
    };
    let mut rule = object(
        "monitoring.coreos.com/v1",
        "PrometheusRule",
        Some("monitoring"),
        "kubernetes-apps",
        ObjectAction::Update,
    );
    rule.source = Some("kube-prometheus/kubernetes-rules.yaml:1".into());
    rule.fields = vec![field(
        "spec.groups",
        Some(group(
            "max_over_time(kube_pod_container_status_waiting_reason{reason=\"CrashLoopBackOff\"}[5m]) >= 1",
        )),
        Some(group(
            "max_over_time(kube_pod_container_status_waiting_reason{reason=\"CrashLoopBackOff\"}[5m]) >= 1",
        )),
        Some(group(
            "max_over_time(kube_pod_container_status_waiting_reason{reason=\"CrashLoopBackOff\"}[10m]) >= 1",
        )),
        FieldAction::Set,
        "config differs from live",
    )];
    Plan {
        objects: vec![coredns, controller, rule],
        prune_skipped: None,
    }
}

/// A Helm-made Deployment whose labels and annotations have long keys
/// (`service.beta.kubernetes.io/...`, `kubectl.kubernetes.io/...`) and long
/// values (a checksum): the path column keeps each key readable.
pub fn long_keys() -> Plan {
    let sum = |c: char| {
        c.to_string().repeat(8) + "0f3c9a7e51b2d4c6a8e0f1b3d5c7e9a2b4d6f8a0c2e4b6d8f0a1c3e5b7d9f1a3"
    };
    let mut o = object(
        "apps/v1",
        "Deployment",
        Some("ingress-nginx"),
        "controller",
        ObjectAction::Update,
    );
    o.source = Some("ingress-nginx/deploy.yaml:380".into());
    o.live = Some(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": meta(Some("ingress-nginx"), "controller", "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d")}));
    o.fields = vec![
        field(
            "metadata.annotations[\"checksum/config\"]",
            Some(json!(sum('a'))),
            Some(json!(sum('a'))),
            Some(json!(sum('b'))),
            FieldAction::Set,
            "config differs from live",
        ),
        field(
            "metadata.annotations[\"kubectl.kubernetes.io/default-container\"]",
            None,
            None,
            Some(json!("controller")),
            FieldAction::Set,
            "not in live",
        ),
        field(
            "metadata.annotations[\"service.beta.kubernetes.io/aws-load-balancer-backend-protocol\"]",
            Some(json!("tcp")),
            Some(json!("tcp")),
            Some(json!("http")),
            FieldAction::Set,
            "config differs from live",
        ),
        field(
            "metadata.labels[\"app.kubernetes.io/managed-by\"]",
            Some(json!("Helm")),
            Some(json!("Helm")),
            None,
            FieldAction::Clear,
            "in last-applied, removed from the config",
        ),
        field(
            "metadata.labels[\"helm.sh/chart\"]",
            Some(json!("ingress-nginx-4.11.2")),
            Some(json!("ingress-nginx-4.11.2")),
            Some(json!("ingress-nginx-4.11.3")),
            FieldAction::Set,
            "config differs from live",
        ),
        field(
            "spec.template.metadata.annotations[\"kubectl.kubernetes.io/restartedAt\"]",
            Some(json!("2026-11-20T09:00:00Z")),
            Some(json!("2026-11-27T14:31:07Z")),
            Some(json!("2026-11-20T09:00:00Z")),
            FieldAction::Set,
            "config differs from live",
        ),
    ];
    Plan {
        objects: vec![o],
        prune_skipped: None,
    }
}
