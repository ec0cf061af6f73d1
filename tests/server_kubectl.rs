//! The real kubectl against the embedded API server.
//!
//! Without kubectl these tests skip, unless `KAPPLY_CI` is set: then they
//! fail. `recorded_patches` also keeps tests/fixtures/recorded/*.json: the
//! PATCH bodies real kubectl sends for a few scenarios, with their inputs
//! (config, live object before, last-applied), for the merge engine's
//! cross-check. `KAPPLY_RECORD=1 cargo test --test server_kubectl recorded`
//! re-records them; otherwise the test checks kubectl still sends the same.

#[path = "common/kubectl.rs"]
mod kubectl;
#[path = "common/releases.rs"]
mod releases;
#[path = "common/server.rs"]
mod server;

use kubectl::Kubectl;
use serde_json::{Value, json};
use server::Cluster;
use std::path::{Path, PathBuf};

/// The embedded server, and kubectl configured for it; `None` when kubectl
/// is absent (a failure under `KAPPLY_CI`).
fn setup() -> Option<(Kubectl, Cluster)> {
    let bin = kubectl::kubectl()?;
    let c = Cluster::start();
    Some((Kubectl::new(bin, &c.kubeconfig), c))
}

const SIMPLE: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
spec:
  selector:
    matchLabels:
      app: nginx
  minReadySeconds: 5
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
        ports:
        - containerPort: 80
";

fn update_yaml() -> String {
    SIMPLE
        .replace("nginx:1.14.2", "nginx:1.16.1")
        .replace("  minReadySeconds: 5\n", "")
}

#[test]
fn reference_walkthrough() {
    let Some((k, c)) = setup() else { return };
    let simple = c.write("simple_deployment.yaml", SIMPLE);
    let update = c.write("update_deployment.yaml", &update_yaml());

    // diff before anything exists: differences, exit 1.
    assert_eq!(k.run(&["diff", "-f", &simple], &[]).status.code(), Some(1));
    let out = k.ok(&["apply", "-f", &simple]);
    assert_eq!(out.trim(), "deployment.apps/nginx-deployment created");
    assert_eq!(k.run(&["diff", "-f", &simple], &[]).status.code(), Some(0));

    // get -o yaml shows what the server defaulted.
    let yaml = k.ok(&["get", "-f", &simple, "-o", "yaml"]);
    for needle in [
        "kubectl.kubernetes.io/last-applied-configuration",
        "replicas: 1",
        "revisionHistoryLimit: 10",
        "progressDeadlineSeconds: 600",
        "maxSurge: 25%",
        "type: RollingUpdate",
        "imagePullPolicy: IfNotPresent",
        "terminationMessagePath: /dev/termination-log",
        "protocol: TCP",
        "dnsPolicy: ClusterFirst",
        "restartPolicy: Always",
        "schedulerName: default-scheduler",
    ] {
        assert!(yaml.contains(needle), "{needle} missing from:\n{yaml}");
    }

    // rollout status needs a watch.
    let out = k.run(
        &[
            "rollout",
            "status",
            "deployment/nginx-deployment",
            "--timeout=20s",
        ],
        &[],
    );
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("successfully rolled out"));
    assert!(
        String::from_utf8_lossy(&out.stderr).is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = k.ok(&[
        "wait",
        "--for=condition=Available",
        "deployment/nginx-deployment",
        "--timeout=20s",
    ]);
    assert!(out.contains("condition met"), "{out}");

    assert!(
        k.ok(&["scale", "deployment/nginx-deployment", "--replicas=2"])
            .contains("scaled")
    );
    let live = c
        .get("apps/v1", "Deployment", Some("default"), "nginx-deployment")
        .unwrap();
    assert_eq!(live["spec"]["replicas"], 2);
    // kubectl scale sends no fieldManager; like the real server, the
    // manager is the User-Agent's first word, on the scale subresource.
    let owner = live["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["fieldsV1"]["f:spec"].get("f:replicas").is_some())
        .unwrap()
        .clone();
    assert_eq!(owner["manager"], "kubectl");
    assert_eq!(owner["subresource"], "scale");

    assert_eq!(k.run(&["diff", "-f", &update], &[]).status.code(), Some(1));
    assert_eq!(
        k.ok(&["apply", "-f", &update]).trim(),
        "deployment.apps/nginx-deployment configured"
    );
    let live = c
        .get("apps/v1", "Deployment", Some("default"), "nginx-deployment")
        .unwrap();
    assert_eq!(
        live["spec"]["replicas"], 2,
        "replicas set by kubectl scale are kept"
    );
    assert!(
        live["spec"].get("minReadySeconds").is_none(),
        "minReadySeconds is cleared"
    );
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.16.1"
    );
    let annotation = kubectl::last_applied(&live).unwrap();
    assert_eq!(
        annotation["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.16.1"
    );
    assert!(annotation["spec"].get("minReadySeconds").is_none());
    assert_eq!(k.run(&["diff", "-f", &update], &[]).status.code(), Some(0));
    assert_eq!(
        k.ok(&["apply", "-f", &update]).trim(),
        "deployment.apps/nginx-deployment unchanged"
    );

    // kubectl delete -f, then the object is gone.
    let out = k.ok(&["delete", "-f", &update]);
    assert!(out.contains("deleted"), "{out}");
    assert!(
        c.get("apps/v1", "Deployment", Some("default"), "nginx-deployment")
            .is_none()
    );
    let out = k.run(&["get", "-f", &update], &[]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NotFound")
            || String::from_utf8_lossy(&out.stderr).contains("not found")
    );
}

#[test]
fn recreate_strategy_through_apply_and_patch() {
    let Some((k, c)) = setup() else { return };
    let simple = c.write("d.yaml", SIMPLE);
    k.ok(&["apply", "-f", &simple]);
    // A merge patch of the type alone keeps the defaulted rollingUpdate: 422.
    let out = k.run(
        &[
            "patch",
            "deployment",
            "nginx-deployment",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"strategy":{"type":"Recreate"}}}"#,
        ],
        &[],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"),
        "{err}"
    );
    // apply sends $retainKeys and succeeds.
    let recreate = SIMPLE.replace(
        "  minReadySeconds: 5\n",
        "  minReadySeconds: 5\n  strategy:\n    type: Recreate\n",
    );
    let file = c.write("d.yaml", &recreate);
    k.ok(&["apply", "-f", &file]);
    let live = c
        .get("apps/v1", "Deployment", Some("default"), "nginx-deployment")
        .unwrap();
    assert_eq!(live["spec"]["strategy"], json!({"type": "Recreate"}));
}

#[test]
fn prune_with_allowlist() {
    let Some((k, c)) = setup() else { return };
    let cm = |name: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels:\n    app: x\ndata:\n  k: v\n"
        )
    };
    c.write("p/a.yaml", &cm("a"));
    c.write("p/b.yaml", &cm("b"));
    let dir = c.path("p").to_string_lossy().into_owned();
    // Applied without the label: not a prune candidate.
    let other = c.write(
        "other.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n",
    );
    k.ok(&["apply", "-f", &other]);
    let args = [
        "apply",
        "-f",
        &dir,
        "-l",
        "app=x",
        "--prune",
        "--prune-allowlist=core/v1/ConfigMap",
    ];
    let out = k.ok(&args);
    assert!(
        out.contains("configmap/a created") && out.contains("configmap/b created"),
        "{out}"
    );
    c.remove("p/b.yaml");
    let out = k.ok(&args);
    assert!(out.contains("configmap/b pruned"), "{out}");
    assert!(out.contains("configmap/a unchanged"), "{out}");
    assert!(c.get("v1", "ConfigMap", Some("default"), "b").is_none());
    assert!(c.get("v1", "ConfigMap", Some("default"), "a").is_some());
    assert!(c.get("v1", "ConfigMap", Some("default"), "other").is_some());

    // Without --prune-allowlist kubectl lists its default kinds (all served).
    c.remove("p/a.yaml");
    c.write("p/svc.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  labels:\n    app: x\nspec:\n  ports:\n  - port: 80\n");
    let out = k.ok(&["apply", "-f", &dir, "-l", "app=x", "--prune"]);
    assert!(out.contains("service/s created"), "{out}");
    assert!(out.contains("configmap/a pruned"), "{out}");
}

#[test]
fn applyset_prunes_removed_members() {
    let Some((k, c)) = setup() else { return };
    let ns = c.write(
        "ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: demo\n",
    );
    k.ok(&["apply", "-f", &ns]);
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\ndata:\n  k: v\n";
    let dep = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - {name: c, image: nginx}\n";
    c.write("set/cm.yaml", cm);
    c.write("set/dep.yaml", dep);
    let dir = c.path("set").to_string_lossy().into_owned();
    let env = [("KUBECTL_APPLYSET", "true")];
    let args = [
        "apply",
        "-n",
        "demo",
        "--prune",
        "--applyset=myset",
        "-f",
        &dir,
    ];
    let out = k.ok_env(&args, &env);
    assert!(out.contains("deployment.apps/web created"), "{out}");
    let parent = c
        .get("v1", "Secret", Some("demo"), "myset")
        .expect("parent Secret created");
    let id = parent["metadata"]["labels"]["applyset.kubernetes.io/id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(id.starts_with("applyset-") && id.ends_with("-v1"));
    assert_eq!(
        parent["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"],
        "ConfigMap,Deployment.apps"
    );
    let member = c.get("apps/v1", "Deployment", Some("demo"), "web").unwrap();
    assert_eq!(
        member["metadata"]["labels"]["applyset.kubernetes.io/part-of"],
        id.as_str()
    );

    c.remove("set/dep.yaml");
    let out = k.ok_env(&args, &env);
    assert!(out.contains("deployment.apps/web pruned"), "{out}");
    assert!(
        c.get("apps/v1", "Deployment", Some("demo"), "web")
            .is_none()
    );
    assert!(c.get("v1", "ConfigMap", Some("demo"), "keep").is_some());
    let parent = c.get("v1", "Secret", Some("demo"), "myset").unwrap();
    assert_eq!(
        parent["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"],
        "ConfigMap"
    );
    assert_eq!(
        parent["metadata"]["managedFields"][0]["manager"],
        "kubectl-applyset"
    );
}

/// One recorded scenario: objects applied first, then the config whose
/// PATCH is recorded.
struct Scenario {
    name: &'static str,
    description: &'static str,
    setup: Vec<Value>,
    /// kubectl commands run between setup and the recorded apply.
    between: Vec<Vec<&'static str>>,
    config: Value,
}

fn simple_deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nginx-deployment"},
        "spec": {"selector": {"matchLabels": {"app": "nginx"}}, "minReadySeconds": 5,
            "template": {"metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.14.2",
                    "ports": [{"containerPort": 80}]}]}}}})
}

fn scenarios() -> Vec<Scenario> {
    let mut update = simple_deployment();
    update["spec"]
        .as_object_mut()
        .unwrap()
        .remove("minReadySeconds");
    update["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.16.1");

    let mut two = simple_deployment();
    two["spec"]["template"]["spec"]["containers"] = json!([
        {"name": "nginx", "image": "nginx:1.14.2"},
        {"name": "sidecar", "image": "busybox:1.36", "args": ["sleep", "3600"]}]);
    let mut reordered = two.clone();
    reordered["spec"]["template"]["spec"]["containers"] = json!([
        {"name": "logger", "image": "fluentd:1"},
        {"name": "nginx", "image": "nginx:1.16.1"}]);

    let mut recreate = simple_deployment();
    recreate["spec"]["strategy"] = json!({"type": "Recreate"});

    let mut null_cfg = simple_deployment();
    null_cfg["spec"]["minReadySeconds"] = Value::Null;
    null_cfg["metadata"]["labels"] = json!({"team": null, "app": "nginx"});

    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"size": 3, "color": "red", "parts": [{"name": "a", "count": 1}, {"name": "b", "count": 2}]}});
    let widget2 = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"size": 4, "parts": [{"name": "a", "count": 5}]}});

    let cm1 = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "labels": {"a": "1", "b": "2"}},
        "data": {"one": "1", "two": "2"}});
    let cm2 = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "labels": {"a": "1"}, "annotations": {"note": "x"}},
        "data": {"one": "1", "three": "3"}});

    let svc1 = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}});
    let svc2 = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}});

    let dns = |ports: Value, env: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "dns"},
            "spec": {"selector": {"matchLabels": {"app": "dns"}},
                "template": {"metadata": {"labels": {"app": "dns"}},
                    "spec": {"containers": [{"name": "dns", "image": "coredns:1.11",
                        "ports": ports, "env": env}]}}}})
    };
    let tcp = json!({"containerPort": 53, "protocol": "TCP", "name": "dns-tcp"});
    let udp = json!({"containerPort": 53, "protocol": "UDP", "name": "dns"});
    let env1 = json!([{"name": "MODE", "value": "a"}]);
    let ports_setup = dns(json!([tcp]), env1.clone());
    let ports_config = dns(json!([tcp, udp]), env1.clone());
    let env_config = dns(
        json!([tcp]),
        json!([{"name": "MODE", "value": "a"}, {"name": "MODE", "value": "b"}]),
    );

    let gadget_crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Cluster",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let gadget = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
        "spec": {"size": 3, "color": "red"}});
    let gadget2 = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
        "spec": {"size": 4}});

    // A merge key written 80.0 in the config: kubectl decodes every number
    // of the three sides as float64 before it diffs, so it is the element
    // keyed 80 (its port renamed), not another one.
    let web = |port: Value, name: &str| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                        "ports": [{"containerPort": port, "name": name}]}]}}}})
    };

    vec![
        Scenario {
            name: "float-merge-key",
            description: "containerPort 80 applied, then 80.0 (JSON) with the port renamed: kubectl diffs it as the same element",
            setup: vec![web(json!(80), "web")],
            between: vec![],
            config: web(json!(80.0), "http"),
        },
        Scenario {
            name: "duplicate-merge-key-ports",
            description: "two container ports share containerPort 53 (TCP, UDP): kubectl sends both",
            setup: vec![ports_setup.clone()],
            between: vec![],
            config: ports_config,
        },
        Scenario {
            name: "duplicate-merge-key-env",
            description: "the same env name twice: kubectl sends both",
            setup: vec![ports_setup],
            between: vec![],
            config: env_config,
        },
        Scenario {
            name: "cluster-scoped-custom-resource",
            description: "a cluster-scoped custom resource: no namespace in the annotation or the patch",
            setup: vec![gadget_crd, gadget],
            between: vec![],
            config: gadget2,
        },
        Scenario {
            name: "walkthrough-update",
            description: "reference page: simple_deployment applied, kubectl scale --replicas=2, update_deployment applied",
            setup: vec![simple_deployment()],
            between: vec![vec!["scale", "deployment/nginx-deployment", "--replicas=2"]],
            config: update,
        },
        Scenario {
            name: "containers-by-name",
            description: "containers keyed by name: one removed, one changed, one added before it",
            setup: vec![two],
            between: vec![],
            config: reordered,
        },
        Scenario {
            name: "strategy-recreate",
            description: "strategy type Recreate over a defaulted RollingUpdate ($retainKeys)",
            setup: vec![simple_deployment()],
            between: vec![],
            config: recreate,
        },
        Scenario {
            name: "explicit-null",
            description: "explicit nulls in the config (minReadySeconds, a label)",
            setup: vec![simple_deployment()],
            between: vec![],
            config: null_cfg,
        },
        Scenario {
            name: "custom-resource-merge",
            description: "a custom resource: JSON merge patch, lists of maps replaced whole",
            setup: vec![crd, widget],
            between: vec![],
            config: widget2,
        },
        Scenario {
            name: "configmap-labels-data",
            description: "ConfigMap: a label and a data key removed, a key and an annotation added",
            setup: vec![cm1],
            between: vec![],
            config: cm2,
        },
        Scenario {
            name: "service-ports",
            description: "Service ports merged by port: one removed, targetPort set",
            setup: vec![svc1],
            between: vec![],
            config: svc2,
        },
    ]
}

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recorded")
}

fn record(k: &Kubectl, c: &Cluster, s: &Scenario) -> Value {
    for (i, obj) in s.setup.iter().enumerate() {
        let f = c.write(&format!("{}-setup-{i}.json", s.name), &obj.to_string());
        k.ok(&["apply", "-f", &f]);
    }
    for cmd in &s.between {
        k.ok(cmd);
    }
    let api_version = s.config["apiVersion"].as_str().unwrap();
    let kind = s.config["kind"].as_str().unwrap();
    let name = s.config["metadata"]["name"].as_str().unwrap();
    let namespaced = !["Namespace", "CustomResourceDefinition", "Gadget"].contains(&kind);
    let ns = namespaced.then_some("default");
    let live = c.get(api_version, kind, ns, name).expect("set up");
    let last_applied = kubectl::last_applied(&live);
    let f = c.write(&format!("{}-config.json", s.name), &s.config.to_string());
    c.server.clear_requests();
    k.ok(&["apply", "-f", &f]);
    let after = c.get(api_version, kind, ns, name).expect("applied");
    let patches: Vec<_> = c
        .server
        .requests()
        .into_iter()
        .filter(|r| r.method == "PATCH")
        .collect();
    assert_eq!(
        patches.len(),
        1,
        "{}: one PATCH expected, got {patches:?}",
        s.name
    );
    let p = &patches[0];
    let patch_type = match p.content_type.as_deref() {
        Some("application/strategic-merge-patch+json") => "strategic",
        Some("application/merge-patch+json") => "merge",
        other => panic!("{}: unexpected patch type {other:?}", s.name),
    };
    // The embedded server merged the patch as apimachinery does: the lists
    // (server defaults aside) are those of `kubectl patch --local` of the
    // body on the object before.
    let body = p.body.as_ref().expect("a JSON body");
    let local = kubectl::patch_object(
        &k.bin,
        &live,
        &["--type", patch_type, "-p", &body.to_string()],
    )
    .unwrap_or_else(|e| panic!("{}: kubectl patch --local: {e}", s.name));
    if s.name.starts_with("duplicate-merge-key") {
        let lists = |o: &Value| {
            let c = &o["spec"]["template"]["spec"]["containers"][0];
            (c["ports"].clone(), c["env"].clone())
        };
        assert_eq!(lists(&after), lists(&local), "{}", s.name);
    } else if kind == "Gadget" {
        assert_eq!(after["spec"], local["spec"], "{}", s.name);
        assert!(after["metadata"].get("namespace").is_none(), "{after}");
    }
    // The config as kapply reads it: namespace filled in for namespaced kinds.
    let mut config = s.config.clone();
    if namespaced {
        config["metadata"]["namespace"] = json!("default");
    }
    json!({
        "name": s.name,
        "description": s.description,
        "config": config,
        "live": live,
        "lastApplied": last_applied,
        "patchType": patch_type,
        "query": p.query,
        "body": p.body,
    })
}

#[test]
fn recorded_patches() {
    let Some((k, c)) = setup() else { return };
    let rerecord = std::env::var_os("KAPPLY_RECORD").is_some();
    let dir = fixture_dir();
    std::fs::create_dir_all(&dir).unwrap();
    for s in scenarios() {
        let rec = record(&k, &c, &s);
        let path = dir.join(format!("{}.json", s.name));
        if rerecord || !path.exists() {
            std::fs::write(&path, serde_json::to_string_pretty(&rec).unwrap() + "\n").unwrap();
            continue;
        }
        let saved: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        // Live objects carry uids and timestamps; the body must not change.
        assert_eq!(
            saved["body"], rec["body"],
            "{}: kubectl now sends a different patch",
            s.name
        );
        assert_eq!(saved["patchType"], rec["patchType"], "{}", s.name);
        assert_eq!(saved["config"], rec["config"], "{}", s.name);
        assert_eq!(saved["lastApplied"], rec["lastApplied"], "{}", s.name);
    }
}

#[test]
fn imperative_creates_and_tables() {
    let Some((k, c)) = setup() else { return };
    // kubectl create sends protobuf for these kinds.
    k.ok(&["create", "namespace", "imp"]);
    k.ok(&[
        "create",
        "configmap",
        "cm",
        "-n",
        "imp",
        "--from-literal=a=b",
    ]);
    k.ok(&[
        "create",
        "secret",
        "generic",
        "s",
        "-n",
        "imp",
        "--from-literal=password=hunter2",
    ]);
    let cm = c.get("v1", "ConfigMap", Some("imp"), "cm").unwrap();
    assert_eq!(cm["data"], json!({"a": "b"}));
    assert!(
        cm["metadata"].get("annotations").is_none(),
        "no last-applied annotation"
    );
    let s = c.get("v1", "Secret", Some("imp"), "s").unwrap();
    assert_eq!(s["data"]["password"], "aHVudGVyMg==");
    assert_eq!(s["type"], "Opaque");
    k.ok(&[
        "create",
        "deployment",
        "web",
        "-n",
        "imp",
        "--image=nginx:1.25",
        "--port=80",
        "--replicas=2",
    ]);
    let d = c.get("apps/v1", "Deployment", Some("imp"), "web").unwrap();
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(d["spec"]["selector"]["matchLabels"]["app"], "web");
    let container = &d["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx:1.25");
    assert_eq!(container["ports"][0]["containerPort"], 80);
    assert!(
        d["spec"].get("minReadySeconds").is_none(),
        "zero values are omitted"
    );
    let table = k.ok(&["get", "configmap,secret", "-n", "imp"]);
    assert!(table.contains("DATA"), "{table}");
    assert!(table.contains("configmap/cm"), "{table}");
    assert!(table.contains("Opaque"), "{table}");
    let dep = c.write("d.yaml", SIMPLE);
    k.ok(&["apply", "-f", &dep]);
    let table = k.ok(&["get", "deployments"]);
    assert!(table.contains("READY") && table.contains("1/1"), "{table}");
}

/// Every `kubectl create` subcommand (but `token`) and `kubectl run`: what the
/// server stores holds everything kubectl's `--dry-run=client -o json` of
/// the same command shows, with the same values (server defaults may add
/// more). Most of these send protobuf, so this checks the decoder field by
/// field against kubectl's own JSON encoding of the object it sent.
#[test]
fn every_imperative_create_stores_what_kubectl_sent() {
    let Some((k, c)) = setup() else { return };
    // The comparison itself notices a changed, missing or extra element.
    assert!(holds(&json!({"a": [1]}), &json!({"a": [2]}), "").is_err());
    assert!(holds(&json!({}), &json!({"a": null}), "").is_err());
    assert!(holds(&json!({"a": [1, 2]}), &json!({"a": [1]}), "").is_err());
    let cert = c.write("tls.crt", TLS_CERT);
    let key = c.write("tls.key", TLS_KEY);
    let tls = ["--cert", cert.as_str(), "--key", key.as_str()];
    let commands: Vec<Vec<&str>> = vec![
        vec!["create", "namespace", "imp"],
        vec!["create", "configmap", "cm", "--from-literal=a=b"],
        vec![
            "create",
            "secret",
            "generic",
            "s",
            "--from-literal=p=x",
            "--type=Opaque",
        ],
        vec![
            "create",
            "secret",
            "docker-registry",
            "reg",
            "--docker-username=u",
            "--docker-password=p",
            "--docker-server=r.io",
        ],
        [&["create", "secret", "tls", "tls"][..], &tls[..]].concat(),
        vec!["create", "serviceaccount", "sa1"],
        vec![
            "create",
            "deployment",
            "web",
            "--image=nginx:1.25",
            "--port=80",
            "--replicas=0",
        ],
        vec![
            "create",
            "service",
            "clusterip",
            "web",
            "--tcp=80:8080",
            "--tcp=443",
        ],
        vec![
            "create",
            "service",
            "clusterip",
            "headless",
            "--clusterip=None",
        ],
        vec![
            "create",
            "service",
            "nodeport",
            "np",
            "--tcp=80:8080",
            "--node-port=30080",
        ],
        vec!["create", "service", "loadbalancer", "lb", "--tcp=443:8443"],
        vec![
            "create",
            "service",
            "externalname",
            "ext",
            "--external-name=example.com",
        ],
        vec![
            "create",
            "cronjob",
            "tick",
            "--image=busybox",
            "--schedule=*/5 * * * *",
            "--restart=Never",
            "--",
            "date",
        ],
        vec![
            "create",
            "job",
            "once",
            "--image=busybox",
            "--",
            "echo",
            "hi",
        ],
        vec!["create", "job", "manual", "--from=cronjob/tick"],
        vec![
            "create",
            "role",
            "reader",
            "--verb=get,list",
            "--resource=pods,deployments.apps",
            "--resource-name=a",
        ],
        vec![
            "create",
            "clusterrole",
            "logs",
            "--verb=get",
            "--resource=nodes,pods",
            "--non-resource-url=/logs/*",
        ],
        vec!["create", "clusterrole", "agg", "--aggregation-rule=foo=bar"],
        vec![
            "create",
            "rolebinding",
            "rb",
            "--role=reader",
            "--user=alice",
            "--group=devs",
            "--serviceaccount=default:sa1",
        ],
        vec![
            "create",
            "clusterrolebinding",
            "crb",
            "--clusterrole=logs",
            "--user=bob",
        ],
        vec![
            "create",
            "quota",
            "q",
            "--hard=cpu=1,memory=1G,pods=2",
            "--scopes=BestEffort",
        ],
        vec![
            "create",
            "priorityclass",
            "high",
            "--value=1000",
            "--description=important",
            "--preemption-policy=Never",
        ],
        vec![
            "create",
            "priorityclass",
            "low",
            "--value=-5",
            "--global-default=true",
        ],
        vec![
            "create",
            "poddisruptionbudget",
            "pdb",
            "--selector=app=web",
            "--min-available=1",
        ],
        vec![
            "create",
            "poddisruptionbudget",
            "pdb2",
            "--selector=app=web",
            "--max-unavailable=50%",
        ],
        vec![
            "create",
            "ingress",
            "ing",
            "--class=nginx",
            "--annotation=a=b",
            "--rule=foo.com/bar=svc1:8080,tls=secret1",
            "--rule=/path*=svc2:http",
            "--default-backend=defsvc:http",
        ],
        vec![
            "run",
            "pod1",
            "--image=nginx",
            "--port=80",
            "--labels=app=x",
            "--env=A=B",
            "--restart=Never",
            "--",
            "sleep",
            "1",
        ],
    ];
    for args in &commands {
        // Output flags go before `--`, after which everything is the command.
        let at = args.iter().position(|a| *a == "--").unwrap_or(args.len());
        let with =
            |extra: &[&'static str]| -> Vec<&str> { [&args[..at], extra, &args[at..]].concat() };
        let sent: Value = serde_json::from_str(&k.ok(&with(&["--dry-run=client", "-o", "json"])))
            .unwrap_or_else(|e| panic!("{args:?}: dry-run output: {e}"));
        let name = k.ok(&with(&["-o", "name"]));
        let stored: Value = serde_json::from_str(&k.ok(&["get", name.trim(), "-o", "json"]))
            .unwrap_or_else(|e| panic!("{args:?}: get output: {e}"));
        if let Err(path) = holds(&stored, &sent, "") {
            panic!("{args:?}: stored object differs at {path}\nsent:   {sent}\nstored: {stored}");
        }
    }
}

/// `kubectl create token` (a protobuf TokenRequest on serviceaccounts/token)
/// prints a JWT whose claims name the ServiceAccount, audience and lifetime;
/// a lifetime under 10 minutes is refused as kube-apiserver refuses it.
#[test]
fn create_token_for_a_service_account() {
    let Some((k, _c)) = setup() else { return };
    k.ok(&["create", "serviceaccount", "robot"]);
    let token = k.ok(&[
        "create",
        "token",
        "robot",
        "--duration=2h",
        "--audience=api",
    ]);
    let parts: Vec<&str> = token.trim().split('.').collect();
    assert_eq!(parts.len(), 3, "{token}");
    let claims =
        base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, parts[1])
            .unwrap_or_else(|e| panic!("{token}: {e}"));
    let claims: Value = serde_json::from_slice(&claims).unwrap();
    assert_eq!(claims["sub"], "system:serviceaccount:default:robot");
    assert_eq!(claims["aud"], json!(["api"]));
    let life = claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap();
    assert_eq!(life, 7200, "{claims}");
    let short = k.run(&["create", "token", "robot", "--duration=1m"], &[]);
    assert!(!short.status.success());
    let err = String::from_utf8_lossy(&short.stderr);
    assert!(err.contains("less than 10 minutes"), "{err}");
    let missing = k.run(&["create", "token", "nobody"], &[]);
    assert!(String::from_utf8_lossy(&missing.stderr).contains("not found"));
}

/// `Ok` when `stored` holds every field of `sent` with the same value, but
/// what the server owns (status, the top-level creationTimestamp).
fn holds(stored: &Value, sent: &Value, path: &str) -> Result<(), String> {
    match (stored, sent) {
        (Value::Object(st), Value::Object(se)) => {
            for (key, v) in se {
                let p = format!("{path}.{key}");
                if p == ".status" || p == ".metadata.creationTimestamp" {
                    continue;
                }
                // A zero time kubectl sends as null is not stored (nor
                // printed) by kube-apiserver: a template's creationTimestamp.
                if key == "creationTimestamp" && v.is_null() {
                    continue;
                }
                holds(st.get(key).unwrap_or(&Value::Null), v, &p)?;
                if !st.contains_key(key) {
                    return Err(format!("{p} (missing)"));
                }
            }
            Ok(())
        }
        (Value::Array(st), Value::Array(se)) if st.len() == se.len() => st
            .iter()
            .zip(se)
            .enumerate()
            .try_for_each(|(i, (a, b))| holds(a, b, &format!("{path}[{i}]"))),
        (a, b) if a == b => Ok(()),
        _ => Err(path.to_string()),
    }
}

/// A self-signed P-256 pair made for this test (kubectl checks that they match).
const TLS_CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBgzCCASmgAwIBAgIUP/nzn/e/G0da4FbMTlbNba+q7g0wCgYIKoZIzj0EAwIw
FjEUMBIGA1UEAwwLa2FwcGx5LXRlc3QwIBcNMjYxMTIzMTIxNTUzWhgPMjEyNjEw
MzAxMjE1NTNaMBYxFDASBgNVBAMMC2thcHBseS10ZXN0MFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAEdjQLlGogs5WtGhsCZVHWXlFXdgClDEIQD2HCUxMb5O5YgOLc
S2gybABpHIHLNzkkVJ64pg2DwVikgQC9zA7lOaNTMFEwHQYDVR0OBBYEFLgU79so
HLQ1f/0swE2iaAt/tQSLMB8GA1UdIwQYMBaAFLgU79soHLQ1f/0swE2iaAt/tQSL
MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIhAMseOsWAiSaxXKgE
ne/aSFYvE14H6DJKCxahI/EhdtDIAiBA1v+fIF9Fz2UvQlEzBe+puUGaGTHv4fiq
o+AJsBXNPg==
-----END CERTIFICATE-----
";
const TLS_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgFR8faAjOA/ueNzNL
qypgNEl0/uiKn7VtPeS+SXfp1dihRANCAAR2NAuUaiCzla0aGwJlUdZeUVd2AKUM
QhAPYcJTExvk7liA4txLaDJsAGkcgcs3OSRUnrimDYPBWKSBAL3MDuU5
-----END PRIVATE KEY-----
";

/// The demo story seeded into the server behaves under real kubectl as
/// the story says: apply changes the image, clears minReadySeconds, keeps
/// the scaled replicas, reverts the kubectl edit of ConfigMap settings
/// (the drift); the in-sync objects are unchanged.
#[test]
fn demo_story_under_kubectl() {
    let Some((k, c)) = setup() else { return };
    kapply::demo::seed_api(c.server.api()).unwrap();
    let dir = c.path("demo");
    kapply::demo::write_demo_manifests(&dir).unwrap();
    let dir = dir.to_string_lossy().into_owned();
    let live = c
        .get("apps/v1", "Deployment", Some("demo"), "nginx-deployment")
        .unwrap();
    assert_eq!(live["spec"]["replicas"], 2);
    assert_eq!(k.run(&["diff", "-f", &dir], &[]).status.code(), Some(1));
    let out = k.ok(&["apply", "-f", &dir]);
    for line in [
        "namespace/demo unchanged",
        "configmap/settings configured",
        "service/nginx unchanged",
        "deployment.apps/nginx-deployment configured",
    ] {
        assert!(out.contains(line), "{line} missing from:\n{out}");
    }
    let settings = c.get("v1", "ConfigMap", Some("demo"), "settings").unwrap();
    assert_eq!(settings["data"]["LOG_LEVEL"], "info", "drift reverted");
    let live = c
        .get("apps/v1", "Deployment", Some("demo"), "nginx-deployment")
        .unwrap();
    assert_eq!(live["spec"]["replicas"], 2);
    assert!(live["spec"].get("minReadySeconds").is_none());
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.16.1"
    );
    assert_eq!(
        k.run(&["diff", "-f", &dir], &[]).status.code(),
        Some(0),
        "in sync after apply"
    );
}

/// Every served kind: apply creates it, a second apply changes nothing,
/// diff is clean, delete removes it.
#[test]
fn every_kind_applies_cleanly() {
    let Some((k, c)) = setup() else { return };
    let pod =
        "spec:\n  restartPolicy: Never\n  containers:\n  - name: c\n    image: busybox:1.36\n";
    let tmpl = |indent: &str| {
        format!(
            "{indent}template:\n{indent}  metadata:\n{indent}    labels:\n{indent}      app: k\n{indent}  spec:\n{indent}    restartPolicy: Never\n{indent}    containers:\n{indent}    - name: c\n{indent}      image: busybox:1.36\n"
        )
    };
    let workload_tmpl = tmpl("  ").replace("      restartPolicy: Never\n", "");
    let docs = vec![
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: k\n".to_string(),
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: k\nstringData:\n  a: b\n".to_string(),
        format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: k\n{pod}"),
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: k\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n".to_string(),
        "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: k\n".to_string(),
        format!("apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: k\nspec:\n  serviceName: k\n  selector:\n    matchLabels:\n      app: k\n{workload_tmpl}"),
        format!("apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: k\nspec:\n  selector:\n    matchLabels:\n      app: k\n{workload_tmpl}"),
        format!("apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: k\nspec:\n  selector:\n    matchLabels:\n      app: k\n{workload_tmpl}"),
        format!("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: k\nspec:\n{}", tmpl("  ")),
        format!("apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: k\nspec:\n  schedule: \"*/5 * * * *\"\n  jobTemplate:\n    spec:\n{}", tmpl("      ")),
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: k\nspec:\n  rules:\n  - host: k.example.com\n    http:\n      paths:\n      - path: /\n        pathType: Prefix\n        backend:\n          service:\n            name: k\n            port:\n              number: 80\n".to_string(),
        "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: k\nspec:\n  podSelector: {}\n  policyTypes: [Ingress]\n".to_string(),
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: k\nrules:\n- apiGroups: [\"\"]\n  resources: [pods]\n  verbs: [get]\n".to_string(),
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: k\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: k\nsubjects:\n- kind: ServiceAccount\n  name: k\n".to_string(),
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: kapply-k\nrules:\n- apiGroups: [\"\"]\n  resources: [pods]\n  verbs: [list]\n".to_string(),
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: kapply-k\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: kapply-k\nsubjects:\n- kind: ServiceAccount\n  name: k\n  namespace: default\n".to_string(),
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: k\nspec:\n  minAvailable: 1\n  selector:\n    matchLabels:\n      app: k\n".to_string(),
    ];
    for (i, doc) in docs.iter().enumerate() {
        let kind = doc
            .lines()
            .nth(1)
            .unwrap()
            .trim_start_matches("kind: ")
            .to_string();
        let f = c.write(&format!("k{i}.yaml"), doc);
        let out = k.ok(&["apply", "-f", &f]);
        assert!(out.contains("created"), "{kind}: {out}");
        let out = k.ok(&["apply", "-f", &f]);
        // Secret stringData is folded into data, so it is re-sent every time;
        // a PDB's selector has patchStrategy replace, so kubectl's patch is
        // never empty (as against a real server).
        let expect = if kind == "Secret" || kind == "PodDisruptionBudget" {
            "configured"
        } else {
            "unchanged"
        };
        assert!(out.contains(expect), "{kind} second apply: {out}");
        if kind != "Secret" {
            assert_eq!(
                k.run(&["diff", "-f", &f], &[]).status.code(),
                Some(0),
                "{kind} diff"
            );
        }
        let out = k.ok(&["delete", "-f", &f]);
        assert!(out.contains("deleted"), "{kind}: {out}");
    }
}

/// `kubectl delete --dry-run=server` and `kubectl apply --prune
/// --dry-run=server` put `dryRun: ["All"]` in the DELETE body
/// (DeleteOptions), not in the query: the server must honour it there.
#[test]
fn server_dry_run_delete_and_prune_leave_objects_in_place() {
    let Some((k, c)) = setup() else { return };
    let cm = |name: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels:\n    app: x\ndata:\n  k: v\n"
        )
    };
    let a = c.write("p/a.yaml", &cm("a"));
    c.write("p/b.yaml", &cm("b"));
    let dir = c.path("p").to_string_lossy().into_owned();
    k.ok(&["apply", "-f", &dir]);
    let present = |name: &str| c.get("v1", "ConfigMap", Some("default"), name).is_some();

    c.server.clear_requests();
    let out = k.ok(&["delete", "--dry-run=server", "-f", &a]);
    assert_eq!(out.trim(), "configmap \"a\" deleted (server dry run)");
    let out = k.ok(&["delete", "--dry-run=server", "configmap", "-l", "app=x"]);
    assert!(
        out.contains("configmap \"b\" deleted (server dry run)"),
        "{out}"
    );
    let deletes = c.writes();
    assert_eq!(deletes.len(), 3, "{deletes:#?}");
    for d in &deletes {
        assert_eq!(d.method, "DELETE");
        assert_eq!(d.query.get("dryRun"), None, "{d:?}");
        assert_eq!(d.body.as_ref().unwrap()["dryRun"], json!(["All"]), "{d:?}");
    }
    assert!(present("a") && present("b"));

    c.remove("p/b.yaml");
    let prune = ["apply", "--prune", "-l", "app=x", "-f", &dir];
    let out = k.ok(&[&prune[..], &["--dry-run=server"]].concat());
    assert!(out.contains("configmap/b pruned (server dry run)"), "{out}");
    assert!(present("a") && present("b"));

    // Without the dry run, the same commands delete.
    let out = k.ok(&prune);
    assert!(out.contains("configmap/b pruned"), "{out}");
    assert!(!present("b"));
    let out = k.ok(&["delete", "-f", &a]);
    assert_eq!(out.trim(), "configmap \"a\" deleted");
    assert!(!present("a"));
}

/// `kubectl get` prints, for every built-in kind the server serves, the
/// columns it prints against a real API server (the server's Table), and
/// `-o wide` adds the wide ones.
#[test]
fn kubectl_get_prints_each_kinds_columns() {
    let Some((k, c)) = setup() else { return };
    k.ok(&[
        "apply",
        "-f",
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/table-kinds.yaml"
        ),
    ]);
    k.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=2",
    ]);
    let svc = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n  ports:\n  - port: 80\n";
    let f = c.dir.path().join("svc.yaml");
    std::fs::write(&f, svc).unwrap();
    k.ok(&["apply", "-f", f.to_str().unwrap()]);
    k.ok(&[
        "create",
        "configmap",
        "cfg",
        "--from-literal=a=1",
        "--from-literal=b=2",
    ]);
    k.ok(&["create", "secret", "generic", "sec", "--from-literal=p=x"]);

    // (resource, header words, words of its row)
    let cases: [(&str, &str, &str); 17] = [
        (
            "deployment/web",
            "NAME READY UP-TO-DATE AVAILABLE AGE",
            "web 2/2 2 2",
        ),
        ("statefulset/sts", "NAME READY AGE", "sts"),
        (
            "daemonset/ds",
            "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE",
            "ds",
        ),
        ("job/j", "NAME STATUS COMPLETIONS DURATION AGE", "j"),
        (
            "cronjob/cj",
            "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE",
            "cj */5 * * * * <none> False 0 <none>",
        ),
        (
            "service/web",
            "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE",
            "web ClusterIP 10.96.0.2 <none> 80/TCP",
        ),
        (
            "ingress/ing",
            "NAME CLASS HOSTS ADDRESS PORTS AGE",
            "ing nginx a.example.com 80",
        ),
        ("networkpolicy/np", "NAME POD-SELECTOR AGE", "np app=web"),
        (
            "pdb/pdb",
            "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE",
            "pdb 1 N/A",
        ),
        ("role/r", "NAME CREATED AT", "r 20"),
        ("rolebinding/rb", "NAME ROLE AGE", "rb Role/r"),
        ("serviceaccount/sa", "NAME SECRETS AGE", "sa 0"),
        (
            "pvc/pvc",
            "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE",
            "pvc",
        ),
        ("configmap/cfg", "NAME DATA AGE", "cfg 2"),
        ("secret/sec", "NAME TYPE DATA AGE", "sec Opaque 1"),
        (
            "resourcequota/q",
            "NAME AGE REQUEST LIMIT",
            "pods: 0/10 limits.cpu: 0/2",
        ),
        (
            "priorityclass/high",
            "NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY",
            "high 1000 false",
        ),
    ];
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    for (what, header, row) in cases {
        let out = k.ok(&["get", what]);
        let mut lines = out.lines();
        assert_eq!(
            words(lines.next().unwrap_or_default()),
            header,
            "{what}:\n{out}"
        );
        let line = words(lines.next().unwrap_or_default());
        assert!(line.contains(row), "{what}: {row:?} not in\n{out}");
    }
    let out = k.ok(&["get", "deployment/web", "-o", "wide"]);
    assert_eq!(
        words(out.lines().next().unwrap()),
        "NAME READY UP-TO-DATE AVAILABLE AGE CONTAINERS IMAGES SELECTOR",
        "{out}"
    );
    assert!(words(&out).contains("nginx nginx:1.27 app=web"), "{out}");
    let out = k.ok(&["get", "rolebinding/rb", "-o", "wide"]);
    assert!(words(&out).ends_with("default/default"), "{out}");
}

/// A kind without metadata.generation (a ConfigMap) has none after an
/// update either: `kubectl diff` (a server dry run of the PATCH) shows only
/// the data change, and the stored object has no `generation: null`.
#[test]
fn an_update_adds_no_generation_to_a_kind_without_one() {
    let Some((k, c)) = setup() else { return };
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gen\ndata:\n  a: \"1\"\n";
    let file = c.write("cm.yaml", cm);
    k.ok(&["apply", "-f", &file]);
    let file = c.write("cm.yaml", &cm.replace("\"1\"", "\"2\""));
    let out = k.run(&["diff", "-f", &file], &[]);
    let diff = String::from_utf8_lossy(&out.stdout);
    assert!(diff.contains("+  a: \"2\""), "{diff}");
    assert!(!diff.contains("generation"), "{diff}");
    k.ok(&["apply", "-f", &file]);
    let live = c.get("v1", "ConfigMap", Some("default"), "gen").unwrap();
    assert_eq!(live["data"]["a"], json!("2"));
    assert!(live["metadata"].get("generation").is_none(), "{live}");
}

/// Manifests of real releases load unchanged into the embedded server with
/// real kubectl and with kapply: IngressClass, the webhook configurations,
/// RBAC names such as `system:coredns` (path segment names, as
/// kube-apiserver validates RBAC names); other kinds keep their rules.
#[test]
fn release_manifests_load_with_kubectl_and_kapply() {
    let Some((k, c)) = setup() else { return };
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/releases/cluster-kinds.yaml"
    );
    let out = k.ok(&["apply", "-f", file]);
    for made in [
        "ingressclass.networking.k8s.io/nginx created",
        "validatingwebhookconfiguration.admissionregistration.k8s.io/ingress-nginx-admission created",
        "mutatingwebhookconfiguration.admissionregistration.k8s.io/cert-manager-webhook created",
        "clusterrole.rbac.authorization.k8s.io/system:coredns created",
        "clusterrolebinding.rbac.authorization.k8s.io/system:coredns created",
        "apiservice.apiregistration.k8s.io/v1beta1.metrics.k8s.io created",
    ] {
        assert!(out.contains(made), "{out}");
    }
    // kubectl and kapply both find nothing left to do.
    let diff = k.run(&["diff", "-f", file], &[]);
    assert_eq!(diff.status.code(), Some(0), "{diff:?}");
    let kapply = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_kapply"))
            .args(args)
            .arg("--kubeconfig")
            .arg(&c.kubeconfig)
            .output()
            .unwrap()
    };
    let out = kapply(&["diff", "-f", file]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // kapply creates them the same way on a fresh server.
    let fresh = Cluster::start();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kapply"))
        .args(["apply", "--yes", "-f", file, "--kubeconfig"])
        .arg(&fresh.kubeconfig)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let k2 = Kubectl::new(kubectl::kubectl().unwrap(), &fresh.kubeconfig);
    let names = k2.ok(&[
        "get",
        "clusterroles,ingressclasses,apiservices",
        "-o",
        "name",
    ]);
    assert!(
        names.contains("clusterrole.rbac.authorization.k8s.io/system:coredns")
            && names.contains("ingressclass.networking.k8s.io/nginx")
            && names.contains("apiservice.apiregistration.k8s.io/v1beta1.metrics.k8s.io"),
        "{names}"
    );
    // Other kinds keep kube-apiserver's rules, in its words.
    let bad = k.run(&["create", "configmap", "system:x"], &[]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("a lowercase RFC 1123 subdomain"), "{err}");
    let bad = k.run(&["create", "namespace", "a.b"], &[]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("a lowercase RFC 1123 label"), "{err}");
    let bad = k.run(&["create", "service", "clusterip", "1web", "--tcp=80"], &[]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("a DNS-1035 label"), "{err}");
}

/// Whole public releases (`tests/common/releases.rs`: Argo CD,
/// ingress-nginx, cert-manager, prometheus-operator, CoreDNS) load
/// unchanged into a fresh embedded server: with real kubectl (`apply`, or
/// `apply --server-side` where the release's docs say so for its big CRDs)
/// and with kapply (`apply --yes`, the same way), after which `kubectl diff`
/// and `kapply diff` both exit 0 and both servers hold the same objects. A
/// refusal fails the test with the tool's output, which names the object.
#[test]
fn public_releases_load_whole_with_kubectl_and_kapply() {
    let scratch = tempfile::tempdir().unwrap();
    for rel in releases::RELEASES {
        let Some(path) = rel.manifest(scratch.path()) else {
            continue;
        };
        let path = path.to_str().unwrap();
        let Some((k, _by_kubectl)) = setup() else {
            return;
        };
        let by_kapply = Cluster::start();
        let k2 = Kubectl::new(kubectl::kubectl().unwrap(), &by_kapply.kubeconfig);
        let mut args = vec!["-f", path];
        if let Some(ns) = rel.namespace {
            k.ok(&["create", "namespace", ns]);
            k2.ok(&["create", "namespace", ns]);
            args.extend(["-n", ns]);
        }
        if rel.server_side {
            args.push("--server-side");
        }
        let with = |verb: &'static str| -> Vec<&str> {
            std::iter::once(verb).chain(args.iter().copied()).collect()
        };
        let out = k.run(&with("apply"), &[]);
        assert!(
            out.status.success(),
            "{}: kubectl apply: {}{}",
            rel.name,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let out = k.run(&with("diff"), &[]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: kubectl diff after apply: {}{}",
            rel.name,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let kapply = |verb: &'static str, extra: &[&str]| {
            std::process::Command::new(env!("CARGO_BIN_EXE_kapply"))
                .args(with(verb))
                .args(extra)
                .arg("--kubeconfig")
                .arg(&by_kapply.kubeconfig)
                .env_remove("KUBECONFIG")
                .output()
                .unwrap()
        };
        let out = kapply("apply", &["--yes"]);
        assert!(
            out.status.success(),
            "{}: kapply apply: {}{}",
            rel.name,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let out = kapply("diff", &[]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: kapply diff after apply: {}{}",
            rel.name,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // The same objects on both servers (names; kubectl lists them).
        let names = |k: &Kubectl| {
            let mut get = vec!["get", "-f", path, "-o", "name"];
            if let Some(ns) = rel.namespace {
                get.extend(["-n", ns]);
            }
            let mut names: Vec<String> = k.ok(&get).lines().map(String::from).collect();
            names.sort();
            names
        };
        let made = names(&k);
        assert!(made.len() > 5, "{}: {made:?}", rel.name);
        assert_eq!(made, names(&k2), "{}", rel.name);
    }
}
