//! Decisions from the predicted result (issue 22): status, `diff` exit
//! code, drift, hazards and partial apply, against the embedded API server
//! with the real kubectl making the changes in the cluster, and kubectl's
//! own `diff` as the oracle of the exit code.
//!
//! Tests that need kubectl skip without it, unless `KAPPLY_CI` is set:
//! then they fail.

#[path = "common/kubectl.rs"]
mod kubectl;
#[path = "common/out.rs"]
mod out;
#[path = "common/server.rs"]
mod server;

use kubectl::Kubectl;
use out::{Out, run};
use serde_json::{Value, json};
use server::Cluster;
use std::process::{Command, Stdio};

const KAPPLY: &str = env!("CARGO_BIN_EXE_kapply");
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// `kapply ARGS --kubeconfig K` in the scratch directory.
fn kapply(c: &Cluster, args: &[&str]) -> Out {
    run(Command::new(KAPPLY)
        .current_dir(c.dir.path())
        .args(args)
        .arg("--kubeconfig")
        .arg(&c.kubeconfig)
        .env_remove("KUBECONFIG")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null()))
}

fn plan_json(c: &Cluster, file: &str) -> Value {
    let out = kapply(c, &["plan", "-f", file, "-o", "json"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

/// kubectl's `diff` exit code on `file`.
fn kubectl_diff(k: &Kubectl, file: &str) -> Option<i32> {
    run(&mut k.command(&["diff", "-f", file])).code
}

fn deployment(image: &str, extra: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: c
        image: {image}
        env:
        - {{name: A, value: \"1\"}}
{extra}"
    )
}

fn get(c: &Cluster, kind: &str, name: &str) -> Value {
    let api = if kind == "Deployment" {
        "apps/v1"
    } else {
        "v1"
    };
    c.get(api, kind, Some("default"), name).expect("exists")
}

/// Another writer adds an env var (`kubectl set env`): kubectl keeps
/// sending `$setElementOrder`, but the object it leaves is live as it is.
/// Unchanged, `diff` exits 0 as `kubectl diff` does, apply writes nothing;
/// a Secret's stringData and an explicit null of an absent field alike.
#[test]
fn an_order_only_patch_is_no_change() {
    let c = Cluster::start();
    let Some(k) = Kubectl::find(&c.kubeconfig) else {
        return;
    };
    let d = c.write("d.yaml", &deployment("nginx:1.14", ""));
    k.ok(&["apply", "-f", &d]);
    k.ok(&["set", "env", "deploy/web", "-c", "c", "EXTRA=1"]);
    let s = c.write(
        "s.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: default}\nstringData: {a: b}\n",
    );
    k.ok(&["apply", "-f", &s]);
    let n = c.write(
        "n.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nulls, namespace: default}\ndata: {a: b, c: null}\n",
    );
    k.ok(&["apply", "-f", &n]);
    for f in [&d, &s, &n] {
        assert_eq!(kubectl_diff(&k, f), Some(0), "kubectl diff {f}");
        let diff = kapply(&c, &["diff", "-f", f]);
        assert_eq!(diff.code, Some(0), "{diff:?}");
        assert!(!diff.stdout.contains("reverts drift"), "{diff:?}");
        let plan = plan_json(&c, f);
        let o = &plan["objects"][0];
        assert_eq!(o["action"], "unchanged", "{o:#}");
        assert_eq!(o["revertsDrift"], false, "{o:#}");
        assert_eq!(o["patch"], Value::Null, "{o:#}");
    }
    // Nothing is written, and EXTRA stays.
    let before = get(&c, "Deployment", "web");
    c.server.clear_requests();
    let out = kapply(&c, &["apply", "-f", &d, "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    out.assert_stdout("Deployment default/web unchanged");
    assert!(c.writes().is_empty(), "{:?}", c.writes());
    assert_eq!(get(&c, "Deployment", "web"), before);

    // A config change equal to live (replicas: 1, the default): only the
    // annotation changes. kubectl diff leaves the annotation out (exit 0);
    // apply records it.
    let d2 = c.write(
        "d2.yaml",
        &deployment("nginx:1.14", "")
            .replace("spec:\n  selector", "spec:\n  replicas: 1\n  selector"),
    );
    assert_eq!(kubectl_diff(&k, &d2), Some(0));
    let diff = kapply(&c, &["diff", "-f", &d2]);
    assert_eq!(diff.code, Some(0), "{diff:?}");
    assert_eq!(plan_json(&c, &d2)["objects"][0]["action"], "update");
    let out = kapply(&c, &["apply", "-f", &d2, "--yes"]);
    out.assert_stdout("Deployment default/web configured");
    let live = get(&c, "Deployment", "web");
    let la: Value = serde_json::from_str(
        live["metadata"]["annotations"][LAST_APPLIED]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(la["spec"]["replicas"], json!(1));
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["env"],
        json!([{"name": "A", "value": "1"}, {"name": "EXTRA", "value": "1"}])
    );

    // A real change: both exit 1.
    let d3 = c.write("d3.yaml", &deployment("nginx:1.16", ""));
    assert_eq!(kubectl_diff(&k, &d3), Some(1));
    assert_eq!(kapply(&c, &["diff", "-f", &d3]).code, Some(1));
}

/// A container removed from the manifest differs from last-applied only by
/// what the server filled in (`imagePullPolicy`, `resources: {}`, ...): no
/// "changed in the cluster" hazard and no drift reverted. Once `kubectl set
/// env` added to it, the hazard names that writer, and the apply deletes
/// the container as the words say.
#[test]
fn a_removed_element_the_server_filled_in_is_no_cluster_change() {
    let c = Cluster::start();
    let Some(k) = Kubectl::find(&c.kubeconfig) else {
        return;
    };
    let sidecar = "      - {name: b, image: busybox:1}\n";
    let d = c.write("d.yaml", &deployment("nginx:1.14", sidecar));
    k.ok(&["apply", "-f", &d]);
    let d2 = c.write("d2.yaml", &deployment("nginx:1.14", ""));
    let removed = |plan: &Value| -> Value {
        let o = &plan["objects"][0];
        o["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == "spec.template.spec.containers[name=b]")
            .unwrap_or_else(|| panic!("{o:#}"))
            .clone()
    };
    let plan = plan_json(&c, &d2);
    let row = removed(&plan);
    assert_eq!(row["action"], "clear", "{row:#}");
    assert_eq!(row["cause"], "removed", "{row:#}");
    assert!(
        row.get("hazards").is_none_or(|h| h == &json!([])),
        "{row:#}"
    );
    assert_eq!(plan["objects"][0]["revertsDrift"], false);
    assert_eq!(
        row["live"]["imagePullPolicy"], "IfNotPresent",
        "live holds the server's defaults: {row:#}"
    );

    k.ok(&["set", "env", "deploy/web", "-c", "b", "FOO=bar"]);
    let plan = plan_json(&c, &d2);
    let row = removed(&plan);
    assert_eq!(plan["objects"][0]["revertsDrift"], true);
    assert_eq!(row["owner"], "kubectl-set", "{row:#}");
    assert_eq!(
        row["hazards"][0]["kind"], "overwrites-cluster-change",
        "{row:#}"
    );
    let out = kapply(&c, &["apply", "-f", &d2, "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let containers = &get(&c, "Deployment", "web")["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers.as_array().map(Vec::len), Some(1), "{containers}");
}

/// A hotfix made in the cluster (`kubectl set image`) under a manifest
/// that changes the same field: the row stays `intended`, names the
/// writer and time, says what apply throws away, and the object reverts
/// drift.
#[test]
fn a_cluster_change_the_config_overwrites_is_named() {
    let c = Cluster::start();
    let Some(k) = Kubectl::find(&c.kubeconfig) else {
        return;
    };
    let d = c.write("d.yaml", &deployment("nginx:1.14", ""));
    k.ok(&["apply", "-f", &d]);
    k.ok(&["set", "image", "deploy/web", "c=nginx:1.14-hotfix"]);
    let live = get(&c, "Deployment", "web");
    let time = live["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["manager"] == "kubectl-set")
        .expect("kubectl set's entry")["time"]
        .as_str()
        .unwrap()
        .to_string();
    let d2 = c.write("d2.yaml", &deployment("nginx:1.16", ""));
    let plan = plan_json(&c, &d2);
    let o = &plan["objects"][0];
    assert_eq!(o["action"], "update");
    assert_eq!(o["revertsDrift"], true, "{o:#}");
    let rows: Vec<&Value> = o["fields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["action"] != "keep")
        .collect();
    let image = rows
        .iter()
        .find(|f| f["path"] == "spec.template.spec.containers[name=c].image")
        .unwrap_or_else(|| panic!("{o:#}"));
    assert_eq!(image["cause"], "intended");
    assert_eq!(image["owner"], "kubectl-set");
    assert_eq!(image["changedAt"], time.as_str());
    assert_eq!(
        image["hazards"],
        json!([{"kind": "overwrites-cluster-change",
            "message": format!("apply replaces nginx:1.14-hotfix, set by kubectl-set at {time}, \
                with nginx:1.16 (last applied: nginx:1.14)")}])
    );
    let diff = kapply(&c, &["diff", "-f", &d2]);
    assert_eq!(diff.code, Some(1));
    diff.assert_stdout("reverts drift");
    diff.assert_stdout("apply replaces nginx:1.14-hotfix, set by kubectl-set");
    // What the words say is what the apply does.
    let out = kapply(&c, &["apply", "-f", &d2, "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        get(&c, "Deployment", "web")["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.16"
    );
}

/// A partial apply sends exactly the listed changes: config v2 adds
/// `securityContext.seccompProfile.type` and bumps the image; applying the
/// image row alone (`apply --plan` without the seccomp row) leaves no
/// empty `seccompProfile: {}` in live or in the annotation, and the
/// seccomp change stays pending.
#[test]
fn a_partial_apply_leaves_no_empty_parent() {
    let c = Cluster::start();
    let Some(k) = Kubectl::find(&c.kubeconfig) else {
        return;
    };
    let d = c.write("d.yaml", &deployment("nginx:1.14", ""));
    k.ok(&["apply", "-f", &d]);
    let v2 = deployment("nginx:1.16", "").replace(
        "      containers:\n",
        "      securityContext:\n        seccompProfile:\n          type: RuntimeDefault\n      containers:\n",
    );
    let d2 = c.write("d2.yaml", &v2);
    let mut plan = plan_json(&c, &d2);
    let seccomp = "spec.template.spec.securityContext.seccompProfile.type";
    let fields = plan["objects"][0]["fields"].as_array_mut().unwrap();
    assert!(fields.iter().any(|f| f["path"] == seccomp), "{fields:#?}");
    fields.retain(|f| f["path"] != seccomp);
    let file = c.write("plan.json", &plan.to_string());
    let out = kapply(&c, &["apply", "-f", &d2, "--plan", &file, "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let live = get(&c, "Deployment", "web");
    let pod = &live["spec"]["template"]["spec"];
    assert_eq!(pod["containers"][0]["image"], "nginx:1.16");
    assert!(
        pod.get("securityContext")
            .is_none_or(|s| s.get("seccompProfile").is_none()),
        "{pod:#}"
    );
    let la: Value = serde_json::from_str(
        live["metadata"]["annotations"][LAST_APPLIED]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert!(
        la["spec"]["template"]["spec"]
            .get("securityContext")
            .is_none(),
        "{la:#}"
    );
    assert_eq!(
        la["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.16"
    );
    // The skipped change is still pending, and only it.
    let after = plan_json(&c, &d2);
    let pending: Vec<&Value> = after["objects"][0]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["action"] != "keep" && !f["path"].as_str().unwrap().contains(LAST_APPLIED))
        .map(|f| &f["path"])
        .collect();
    assert_eq!(pending, vec![&json!(seccomp)]);
    // kubectl diff of the full v2 agrees something is left.
    assert_eq!(kubectl_diff(&k, &d2), Some(1));
}
