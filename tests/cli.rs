//! End-to-end tests of the real `kapply` binary: offline plans against
//! `--live` files (the reference walk-through), and apply / prune / delete
//! against the embedded API server, with the real kubectl for interop.
//!
//! Tests that need kubectl skip that part without it, unless `KAPPLY_CI` is
//! set: then they fail.

#[path = "common/kubectl.rs"]
mod kubectl;
#[path = "common/out.rs"]
mod out;
#[path = "common/plan_json.rs"]
mod plan_json;
#[path = "common/server.rs"]
mod server;

use base64::Engine as _;
use kubectl::Kubectl;
use out::{Out, run};
use serde_json::{Value, json};
use server::Cluster;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

const KAPPLY: &str = env!("CARGO_BIN_EXE_kapply");
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

// ---------------------------------------------------------------------------
// Running things

/// `kapply ARGS` in `dir`, stdin not a terminal, no ambient kubeconfig or NO_COLOR.
fn kapply(dir: &Path, args: &[&str]) -> Out {
    run(Command::new(KAPPLY)
        .current_dir(dir)
        .args(args)
        .env_remove("KUBECONFIG")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null()))
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, text).unwrap();
}

fn json_out(out: &Out) -> Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {out:?}"))
}

// ---------------------------------------------------------------------------
// The reference walk-through (declarative-management.md)

const UPDATE_DEPLOYMENT: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
spec:
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.16.1 # update the image
        ports:
        - containerPort: 80
";

/// simple_deployment.yaml applied, then `kubectl scale --replicas=2`, as
/// `kubectl get deployment nginx-deployment -o yaml` prints it.
const LIVE_DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  annotations:
    deployment.kubernetes.io/revision: "1"
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"name":"nginx-deployment","namespace":"default"},"spec":{"minReadySeconds":5,"selector":{"matchLabels":{"app":"nginx"}},"template":{"metadata":{"labels":{"app":"nginx"}},"spec":{"containers":[{"image":"nginx:1.14.2","name":"nginx","ports":[{"containerPort":80}]}]}}}}
  creationTimestamp: "2026-11-22T20:00:00Z"
  generation: 2
  name: nginx-deployment
  namespace: default
  resourceVersion: "1234"
  uid: 5f0c1a2e-0000-4000-8000-000000000001
spec:
  minReadySeconds: 5
  progressDeadlineSeconds: 600
  replicas: 2
  revisionHistoryLimit: 10
  selector:
    matchLabels:
      app: nginx
  strategy:
    rollingUpdate:
      maxSurge: 25%
      maxUnavailable: 25%
    type: RollingUpdate
  template:
    metadata:
      creationTimestamp: null
      labels:
        app: nginx
    spec:
      containers:
      - image: nginx:1.14.2
        imagePullPolicy: IfNotPresent
        name: nginx
        ports:
        - containerPort: 80
          protocol: TCP
        resources: {}
        terminationMessagePath: /dev/termination-log
        terminationMessagePolicy: File
      dnsPolicy: ClusterFirst
      restartPolicy: Always
      schedulerName: default-scheduler
      securityContext: {}
      terminationGracePeriodSeconds: 30
status:
  availableReplicas: 2
  observedGeneration: 2
  readyReplicas: 2
  replicas: 2
  updatedReplicas: 2
"#;

/// The same object inside a `kind: List`, as `kubectl get -o yaml` prints
/// a list.
fn live_as_list(item: &str) -> String {
    let mut out = String::from("apiVersion: v1\nitems:\n");
    for (i, line) in item.lines().enumerate() {
        let prefix = if i == 0 { "- " } else { "  " };
        out.push_str(prefix);
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("kind: List\nmetadata:\n  resourceVersion: \"\"\n");
    out
}

fn live_value() -> Value {
    kapply::yaml::read_value(LIVE_DEPLOYMENT).unwrap()
}

/// update_deployment.yaml as kubectl records it in the annotation.
fn update_last_applied() -> Value {
    json!({"apiVersion":"apps/v1","kind":"Deployment",
        "metadata":{"annotations":{},"name":"nginx-deployment","namespace":"default"},
        "spec":{"selector":{"matchLabels":{"app":"nginx"}},
            "template":{"metadata":{"labels":{"app":"nginx"}},
                "spec":{"containers":[{"image":"nginx:1.16.1","name":"nginx",
                    "ports":[{"containerPort":80}]}]}}}})
}

/// Compact JSON, keys sorted, trailing newline: the annotation's text.
fn annotation(v: &Value) -> String {
    format!("{}\n", serde_json::to_string(v).unwrap())
}

/// A temp dir holding `cfg/update_deployment.yaml` and the live object it
/// is applied to, `live.yaml`.
fn walkthrough_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("cfg/update_deployment.yaml"),
        UPDATE_DEPLOYMENT,
    );
    write(&dir.path().join("live.yaml"), LIVE_DEPLOYMENT);
    dir
}

fn field<'p>(obj: &'p Value, path: &str) -> &'p Value {
    obj["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("no field {path} in {obj:#}"))
}

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect()
}

/// The plan JSON contract: exact keys per object and per field.
fn assert_contract(plan: &Value) {
    assert_eq!(keys(plan), BTreeSet::from(["objects", "savedPlan"]));
    assert_eq!(plan["savedPlan"]["version"], 1, "{plan:#}");
    for o in plan["objects"].as_array().unwrap() {
        let mut expected = BTreeSet::from(plan_json::OBJECT_KEYS);
        if o["action"] == "error" {
            expected.insert("error");
            assert!(o["error"].is_string(), "{o:#}");
        } else {
            // What a saved plan pins: digests (never values), uid and
            // resourceVersion of a live object.
            expected.insert("pin");
            let pin = keys(&o["pin"]);
            let allowed = BTreeSet::from(["uid", "resourceVersion", "config", "change"]);
            assert!(!pin.is_empty() && pin.is_subset(&allowed), "{o:#}");
            for d in ["config", "change"] {
                if let Some(d) = o["pin"][d].as_str() {
                    assert!(d.starts_with("sha256:") && d.len() == 71, "{d}");
                }
            }
        }
        assert_eq!(keys(o), expected, "{o:#}");
        assert!(
            ["create", "update", "unchanged", "prune", "error"]
                .contains(&o["action"].as_str().unwrap())
        );
        assert!(o["warnings"].is_array());
        if !o["patch"].is_null() {
            assert_eq!(keys(&o["patch"]), BTreeSet::from(["type", "body"]));
            assert!(["strategic", "merge"].contains(&o["patch"]["type"].as_str().unwrap()));
        }
        for f in o["fields"].as_array().unwrap() {
            let k = keys(f);
            for required in plan_json::FIELD_KEYS.iter().chain(&["reason"]) {
                assert!(k.contains(required), "{f}");
            }
            let allowed = BTreeSet::from([
                "path",
                "config",
                "live",
                "lastApplied",
                "action",
                "reason",
                "cause",
                "owner",
                "changedAt",
                "hazards",
            ]);
            assert!(k.is_subset(&allowed), "{f}");
            assert!(
                plan_json::CAUSES.contains(&f["cause"].as_str().unwrap()),
                "{f}"
            );
            assert!(["set", "clear", "keep"].contains(&f["action"].as_str().unwrap()));
            assert!(!f["reason"].as_str().unwrap().is_empty());
        }
    }
}

#[test]
fn plan_json_on_the_reference_walkthrough() {
    let dir = walkthrough_dir();
    let d = dir.path();
    write(&d.join("list.yaml"), &live_as_list(LIVE_DEPLOYMENT));
    write(
        &d.join("live.json"),
        &serde_json::to_string_pretty(&live_value()).unwrap(),
    );

    let out = kapply(
        d,
        &["plan", "-f", "cfg", "--live", "live.yaml", "-o", "json"],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let plan = json_out(&out);
    assert_contract(&plan);

    let objects = plan["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 1);
    let o = &objects[0];
    assert_eq!(o["apiVersion"], "apps/v1");
    assert_eq!(o["kind"], "Deployment");
    assert_eq!(o["namespace"], "default");
    assert_eq!(o["name"], "nginx-deployment");
    assert_eq!(o["source"], "cfg/update_deployment.yaml:1");
    assert_eq!(o["action"], "update");
    assert_eq!(o["warnings"], json!([]));

    // replicas: set by kubectl scale, absent from config and last-applied.
    let replicas = field(o, "spec.replicas");
    assert_eq!(replicas["action"], "keep");
    assert_eq!(replicas["live"], 2);
    assert_eq!(
        keys(replicas),
        BTreeSet::from(["path", "live", "action", "reason", "cause"])
    );
    assert_eq!(replicas["cause"], "other-writer");

    // minReadySeconds: in last-applied, removed from the config.
    let mrs = field(o, "spec.minReadySeconds");
    assert_eq!(mrs["action"], "clear");
    assert_eq!(mrs["live"], 5);
    assert_eq!(mrs["lastApplied"], 5);
    assert!(mrs.get("config").is_none(), "{mrs}");

    let image = field(o, "spec.template.spec.containers[name=nginx].image");
    assert_eq!(image["action"], "set");
    assert_eq!(image["config"], "nginx:1.16.1");
    assert_eq!(image["live"], "nginx:1.14.2");
    assert_eq!(image["lastApplied"], "nginx:1.14.2");

    // Only those two fields change; the rest are other writers' and kept.
    let changing: Vec<&str> = o["fields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["action"] != "keep")
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        changing,
        [
            "spec.minReadySeconds",
            "spec.template.spec.containers[name=nginx].image"
        ]
    );

    // The patch kubectl 1.32 sends for this step.
    let expected_la = update_last_applied();
    assert_eq!(o["lastApplied"], expected_la);
    assert_eq!(
        o["patch"],
        json!({"type": "strategic", "body": {
            "metadata": {"annotations": {LAST_APPLIED: annotation(&expected_la)}},
            "spec": {
                "minReadySeconds": null,
                "template": {"spec": {
                    "$setElementOrder/containers": [{"name": "nginx"}],
                    "containers": [{"image": "nginx:1.16.1", "name": "nginx"}]
                }}
            }
        }})
    );

    // The same live object inside a kind: List, or as JSON, plans the same.
    for live in ["list.yaml", "live.json"] {
        let other = kapply(d, &["plan", "-f", "cfg", "--live", live, "-o", "json"]);
        assert_eq!(other.code, Some(0), "{other:?}");
        assert_eq!(json_out(&other), plan, "--live {live}");
    }

    // -o yaml is the same document.
    let yaml = kapply(
        d,
        &["plan", "-f", "cfg", "--live", "list.yaml", "-o", "yaml"],
    );
    assert_eq!(yaml.code, Some(0), "{yaml:?}");
    let back: Value = kapply::yaml::read_value(&yaml.stdout)
        .unwrap_or_else(|e| panic!("plan -o yaml does not parse ({e}): {yaml:?}"));
    assert_eq!(back, plan);
}

/// The live object after the update was applied: what a second diff sees.
fn applied_live() -> Value {
    let mut live = live_value();
    live["spec"]
        .as_object_mut()
        .unwrap()
        .remove("minReadySeconds");
    live["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.16.1");
    live["metadata"]["annotations"][LAST_APPLIED] = json!(annotation(&update_last_applied()));
    live
}

#[test]
fn diff_exit_codes_and_plain_output() {
    let dir = walkthrough_dir();
    let d = dir.path();
    write(
        &d.join("applied.json"),
        &serde_json::to_string(&applied_live()).unwrap(),
    );

    // Changes: exit 1, piped output is plain text naming the object and fields.
    let out = kapply(d, &["diff", "-f", "cfg", "--live", "live.yaml"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(!out.stdout.contains('\x1b'), "colour on a pipe: {out:?}");
    out.assert_stdout(
        "~ Deployment default/nginx-deployment (update)  cfg/update_deployment.yaml:1",
    );
    let line = |path: &str| -> String {
        out.stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(path))
            .unwrap_or_else(|| panic!("no line for {path}: {out:?}"))
            .trim()
            .to_string()
    };
    assert!(line("spec.minReadySeconds").starts_with("clear "));
    assert!(line("spec.replicas").starts_with("keep "));
    let image = line("spec.template.spec.containers[name=nginx].image");
    assert!(image.starts_with("set "), "{image}");
    assert!(image.contains("\"nginx:1.16.1\""), "{image}");

    // In sync: the live object the apply produced. Exit 0, unchanged.
    let same = kapply(d, &["diff", "-f", "cfg", "--live", "applied.json"]);
    assert_eq!(same.code, Some(0), "{same:?}");
    same.assert_stdout("= Deployment default/nginx-deployment (unchanged)");
    let plan = json_out(&kapply(d, &["plan", "-f", "cfg", "--live", "applied.json"]));
    assert_eq!(plan["objects"][0]["action"], "unchanged");
    assert_eq!(plan["objects"][0]["patch"], Value::Null);

    // No manifests at all: an error, exit 2.
    let none = kapply(d, &["diff", "--live", "live.yaml"]);
    assert_eq!(none.code, Some(2), "{none:?}");
    none.assert_stderr("-f");
}

/// A `--live` file that cannot be read names the file and line (and
/// loads no object from it): broken or truncated JSON, JSON that is not
/// objects, broken YAML.
#[test]
fn bad_live_files_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        &d.join("cfg/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n",
    );
    let item = "    {\n      \"apiVersion\": \"v1\",\n      \"kind\": \"ConfigMap\",\n      \
                \"metadata\": {\"name\": \"a\", \"namespace\": \"default\"}\n    }";
    let cases = [
        (
            "truncated.json",
            format!(
                "{{\n  \"kind\": \"List\",\n  \"items\": [\n{item},\n    {{\n      \"kind\": \"ConfigMap\",\n"
            ),
            "truncated.json:11: EOF while parsing a value (column 1)",
        ),
        (
            "comma.json",
            format!("{{\n  \"kind\": \"List\",\n  \"items\": [\n{item},\n  ]\n}}\n"),
            "comma.json:9: trailing comma (column 3)",
        ),
        (
            "control.json",
            "{\"kind\": \"List\", \"items\": [\n  {\"metadata\": {\"name\": \"a\tb\"}}\n]}\n"
                .into(),
            "control.json:2: control character (\\u0000-\\u001F) found while parsing a string (column 27)",
        ),
        (
            "array.json",
            format!("[\n{item}\n]\n"),
            "array.json:1: document is not an object (found a list)",
        ),
        (
            "scalar.json",
            format!("{{\"kind\": \"List\", \"items\": [\n{item}\n]}}\n\"a string\"\n"),
            "scalar.json:8: document is not an object (found a string)",
        ),
        (
            "broken.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: [x\n".into(),
            "broken.yaml:6: while parsing a flow sequence, expected ',' or ']' (column 1)",
        ),
    ];
    for (file, text, message) in cases {
        write(&d.join(file), &text);
        let out = kapply(d, &["diff", "-f", "cfg", "--live", file]);
        assert_eq!(out.code, Some(2), "{file}: {out:?}");
        out.assert_stderr(&format!("error: --live: {message}"));
        assert!(out.stdout.is_empty(), "{file}: {out:?}");
    }
    // From stdin (`--live -`): named so, and a good file reads as from disk.
    let from_stdin = |file: &str| {
        Command::new(KAPPLY)
            .current_dir(d)
            .args(["diff", "-f", "cfg", "--live", "-"])
            .env_remove("KUBECONFIG")
            .env_remove("NO_COLOR")
            .stdin(std::fs::File::open(d.join(file)).unwrap())
            .output()
            .unwrap()
    };
    let out = from_stdin("truncated.json");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: --live: <stdin>:11: EOF while parsing a value (column 1)"),
        "{stderr}"
    );
    write(
        &d.join("good.json"),
        &format!("{{\n  \"kind\": \"List\",\n  \"items\": [\n{item}\n  ]\n}}\n"),
    );
    let piped = from_stdin("good.json");
    let read = kapply(d, &["diff", "-f", "cfg", "--live", "good.json"]);
    assert_eq!(read.code, Some(1), "{read:?}");
    read.assert_stdout("~ ConfigMap default/a (update)");
    assert_eq!(piped.status.code(), read.code);
    assert_eq!(String::from_utf8_lossy(&piped.stdout), read.stdout);
}

/// `kapply plan -o yaml | head`: the reader goes away early. kapply ends
/// (quietly with 141, what a shell reports for kubectl killed by SIGPIPE
/// there), never with a panic on the closed pipe.
#[test]
fn a_closed_stdout_pipe_ends_the_run_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Far more than a pipe holds (64 KiB), so a write meets the closed end
    // however fast the reader goes away.
    let mut many = String::new();
    for i in 0..300 {
        let data = format!("{{k: {}}}", "x".repeat(300));
        many.push_str("---\n");
        many.push_str(&configmap(&format!("cm-{i}"), "{app: big}", &data));
    }
    write(&d.join("cfg/all.yaml"), &many);
    write(&d.join("live.yaml"), "");
    for args in [
        &["plan", "-f", "cfg", "--live", "live.yaml", "-o", "json"][..],
        &["plan", "-f", "cfg", "--live", "live.yaml", "-o", "yaml"],
        &["diff", "-f", "cfg", "--live", "live.yaml"],
    ] {
        let mut child = Command::new(KAPPLY)
            .current_dir(d)
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read a little, as `head -c` does, then close the pipe.
        let mut first = [0u8; 16];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        // 141, what a shell reports for kubectl killed by SIGPIPE, and no
        // error text: the reader chose to stop.
        let code = out.status.code();
        assert_eq!(code, Some(141), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

#[test]
fn diff_reports_malformed_yaml_and_still_shows_the_rest() {
    let dir = walkthrough_dir();
    let d = dir.path();
    // Line 6 is not valid YAML.
    write(
        &d.join("cfg/b-broken.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\ndata:\n  key: a: b\n",
    );
    write(
        &d.join("cfg/c-after.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after\ndata:\n  k: v\n",
    );

    let out = kapply(d, &["diff", "-f", "cfg", "--live", "live.yaml"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    out.assert_stdout("cfg/b-broken.yaml:6");
    out.assert_stdout("~ Deployment default/nginx-deployment (update)");
    out.assert_stdout("+ ConfigMap default/after (create)");

    let plan = kapply(d, &["plan", "-f", "cfg", "--live", "live.yaml"]);
    assert_eq!(plan.code, Some(2), "{plan:?}");
    let plan = json_out(&plan);
    assert_contract(&plan);
    let objects = plan["objects"].as_array().unwrap();
    let err = objects
        .iter()
        .find(|o| o["action"] == "error")
        .expect("an error row");
    assert_eq!(err["source"], "cfg/b-broken.yaml:6");
    assert!(
        err["error"]
            .as_str()
            .unwrap()
            .contains("cfg/b-broken.yaml:6"),
        "{err}"
    );
    let names: BTreeSet<&str> = objects
        .iter()
        .filter(|o| o["action"] != "error")
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, BTreeSet::from(["nginx-deployment", "after"]));
}

/// Run through a pseudo-terminal (util-linux `script`), so stdout is a tty.
fn on_tty(dir: &Path, shell_cmd: &str, no_color: bool) -> Option<Out> {
    let has_script = Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_script {
        eprintln!("util-linux script not found: skipping the terminal part");
        return None;
    }
    let mut cmd = Command::new("script");
    cmd.current_dir(dir)
        .args(["-qec", shell_cmd, "/dev/null"])
        .env_remove("NO_COLOR")
        .stdin(Stdio::null());
    if no_color {
        cmd.env("NO_COLOR", "1");
    }
    Some(run(&mut cmd))
}

#[test]
fn colour_only_on_a_terminal_and_never_with_no_color() {
    let dir = walkthrough_dir();
    let d = dir.path();
    let cmd = format!("'{KAPPLY}' diff -f cfg --live live.yaml");

    let piped = kapply(d, &["diff", "-f", "cfg", "--live", "live.yaml"]);
    assert_eq!(piped.code, Some(1));
    assert!(!piped.stdout.contains('\x1b'), "{piped:?}");

    if let Some(tty) = on_tty(d, &cmd, false) {
        assert_eq!(tty.code, Some(1), "{tty:?}");
        assert!(tty.stdout.contains("\x1b["), "no colour on a tty: {tty:?}");
        let plain = on_tty(d, &cmd, true).unwrap();
        assert_eq!(plain.code, Some(1), "{plain:?}");
        plain.assert_stdout("nginx-deployment");
        assert!(
            !plain.stdout.contains('\x1b'),
            "NO_COLOR ignored: {plain:?}"
        );
    }
}

/// A ConfigMap someone edited in the cluster (data.a, by kubectl-edit)
/// whose manifest also changed (data.b), with another writer's key
/// (data.z), and a ConfigMap in sync but for another writer's key.
fn drift_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cm = |name: &str, data: Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, "data": data})
    };
    let entry = |manager: &str, time: &str, fields: Value| {
        json!({"manager": manager, "operation": "Update", "apiVersion": "v1", "time": time,
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": fields}})
    };
    let live = |name: &str, recorded: Value, data: Value, managed: Value| {
        let mut l = cm(name, data);
        // As kubectl records it: with `annotations: {}`.
        let mut recorded = cm(name, recorded);
        recorded["metadata"]["annotations"] = json!({});
        l["metadata"]["annotations"] = json!({LAST_APPLIED: annotation(&recorded)});
        l["metadata"]["managedFields"] = managed;
        l
    };
    write(
        &d.join("cfg/a-settings.yaml"),
        &serde_json::to_string(&cm("settings", json!({"a": "1", "b": "2"}))).unwrap(),
    );
    write(
        &d.join("cfg/b-same.yaml"),
        &serde_json::to_string(&cm("same", json!({"k": "v"}))).unwrap(),
    );
    let objects = json!({"apiVersion": "v1", "kind": "List", "items": [
        live("settings", json!({"a": "1", "b": "1"}), json!({"a": "hotfix", "b": "1", "z": "x"}),
            json!([entry("kubectl-client-side-apply", "2026-11-19T08:00:00Z", json!({"f:b": {}})),
                   entry("kubectl-edit", "2026-11-20T10:04:00Z", json!({"f:a": {}})),
                   entry("kubectl-patch", "2026-11-20T11:00:00Z", json!({"f:z": {}}))])),
        live("same", json!({"k": "v"}), json!({"k": "v", "z": "x"}),
            json!([entry("kubectl-patch", "2026-11-20T11:00:00Z", json!({"f:z": {}}))])),
    ]});
    write(&d.join("live.json"), &objects.to_string());
    dir
}

/// Piped, diff keeps one line per field (kept fields too) and adds the
/// cause in brackets; the object header says it reverts drift.
#[test]
fn piped_diff_carries_the_causes() {
    let dir = drift_dir();
    let out = kapply(dir.path(), &["diff", "-f", "cfg", "--live", "live.json"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stdout(
        "~ ConfigMap default/settings (update)  cfg/a-settings.yaml:1  reverts drift\n",
    );
    out.assert_stdout(
        "    set   data.a  last-applied: \"1\" | live: \"hotfix\" | config: \"1\"  \
         (config differs from live)  [drift: kubectl-edit at 2026-11-20T10:04:00Z]\n",
    );
    out.assert_stdout("    set   data.b  last-applied: \"1\" | live: \"1\" | config: \"2\"  (config differs from live)  [intended]\n");
    out.assert_stdout("    keep  data.z  last-applied: - | live: \"x\" | config: -");
    out.assert_stdout("[other-writer: kubectl-patch]\n");
    out.assert_stdout("= ConfigMap default/same (unchanged)  cfg/b-same.yaml:1\n    keep  data.z");
}

/// On a terminal: grouped per object, drift marked `!` (so it reads
/// without colour) and in its own colour, an unchanged object on one line,
/// kept fields only with --show-kept.
#[test]
fn terminal_diff_groups_by_object_and_marks_drift() {
    let dir = drift_dir();
    let d = dir.path();
    let cmd = format!("'{KAPPLY}' diff -f cfg --live live.json");
    let Some(plain) = on_tty(d, &cmd, true) else {
        return;
    };
    assert_eq!(plain.code, Some(1), "{plain:?}");
    let text = plain.stdout.replace("\r\n", "\n");
    assert!(!text.contains('\x1b'), "{text}");
    let expected = "\
~ ConfigMap default/settings  update · reverts drift  cfg/a-settings.yaml:1
  ! data.a  drift: changed by kubectl-edit at 2026-11-20T10:04:00Z; apply reverts it
      \"hotfix\" → \"1\"
  ~ data.b  intended: the manifest changed
      \"1\" → \"2\"
  · 1 kept field (server defaults, other writers): --show-kept lists them
= ConfigMap default/same  unchanged  cfg/b-same.yaml:1
";
    assert_eq!(text, expected);

    let shown = on_tty(d, &format!("{cmd} --show-kept"), true).unwrap();
    let text = shown.stdout.replace("\r\n", "\n");
    assert!(
        text.contains(
            "  = data.z  other-writer: kubectl-patch owns it; kept\n      \"x\" (kept)\n"
        ),
        "{text}"
    );
    assert!(!text.contains("--show-kept lists them"), "{text}");
    // The unchanged object lists its kept field too.
    assert_eq!(text.matches("= data.z").count(), 2, "{text}");

    let colour = on_tty(d, &cmd, false).unwrap();
    assert!(
        colour
            .stdout
            .contains("\x1b[1;35m! data.a  drift: changed by kubectl-edit"),
        "{colour:?}"
    );
    assert!(
        colour.stdout.contains("\x1b[33m~ data.b  intended"),
        "{colour:?}"
    );
}

#[test]
fn secret_values_are_masked_in_diff_and_plan() {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let secrets = [
        "supersecret123",
        "oldpassword",
        "oldsecretvalue",
        "extralive",
    ];
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        &d.join("sec/secret.yaml"),
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ndata:\n  password: {}\nstringData:\n  token: plaintexttoken42\n",
            b64("supersecret123")
        ),
    );
    let recorded = json!({"apiVersion":"v1","data":{"old":b64("oldsecretvalue"),"password":b64("oldpassword")},
        "kind":"Secret","metadata":{"annotations":{},"name":"creds","namespace":"default"}});
    let live = json!({"apiVersion":"v1","kind":"Secret",
        "metadata":{"name":"creds","namespace":"default","annotations":{LAST_APPLIED: annotation(&recorded)}},
        "data":{"old":b64("oldsecretvalue"),"password":b64("oldpassword"),"extra":b64("extralive")},
        "type":"Opaque"});
    write(&d.join("live.json"), &live.to_string());
    // Something else, so the Secret is planned as a create.
    write(&d.join("other.yaml"), LIVE_DEPLOYMENT);

    let mut shown = Vec::new();
    for live_file in ["live.json", "other.yaml"] {
        let diff = kapply(d, &["diff", "-f", "sec", "--live", live_file]);
        assert_eq!(diff.code, Some(1), "{diff:?}");
        diff.assert_stdout("Secret default/creds");
        let json = kapply(d, &["plan", "-f", "sec", "--live", live_file]);
        assert_eq!(json.code, Some(0), "{json:?}");
        let plan = json_out(&json);
        assert_contract(&plan);
        let yaml = kapply(d, &["plan", "-f", "sec", "--live", live_file, "-o", "yaml"]);
        assert_eq!(yaml.code, Some(0), "{yaml:?}");
        shown.extend([diff.stdout, json.stdout, yaml.stdout]);
    }
    let update = json_out(&Out {
        code: Some(0),
        stdout: shown[1].clone(),
        stderr: String::new(),
    });
    assert_eq!(update["objects"][0]["action"], "update");
    assert_eq!(field(&update["objects"][0], "data.old")["action"], "clear");
    assert_eq!(
        field(&update["objects"][0], "data.password")["config"],
        "***"
    );

    for text in &shown {
        assert!(text.contains("***"), "nothing masked?\n{text}");
        for s in secrets.iter().chain(&["plaintexttoken42"]) {
            assert!(!text.contains(s), "{s} shown:\n{text}");
            assert!(!text.contains(&b64(s)), "base64 of {s} shown:\n{text}");
        }
    }
}

#[test]
fn kubectl_applies_the_planned_patch_to_the_in_sync_result() {
    let Some(bin) = kubectl::kubectl() else {
        return;
    };
    let dir = walkthrough_dir();
    let d = dir.path();
    write(
        &d.join("live.json"),
        &serde_json::to_string(&live_value()).unwrap(),
    );
    let plan = json_out(&kapply(d, &["plan", "-f", "cfg", "--live", "live.json"]));
    let patch = plan["objects"][0]["patch"]["body"].to_string();
    let result = kubectl::patch_file(
        &bin,
        &d.join("live.json"),
        &["--type", "strategic", "-p", &patch],
    )
    .unwrap_or_else(|e| panic!("kubectl patch: {e}"));
    assert_eq!(result["spec"]["replicas"], 2);
    assert!(result["spec"].get("minReadySeconds").is_none());
    assert_eq!(
        result["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.16.1"
    );
    assert_eq!(result, applied_live());
    write(&d.join("after.json"), &result.to_string());
    let again = kapply(d, &["diff", "-f", "cfg", "--live", "after.json"]);
    assert_eq!(again.code, Some(0), "{again:?}");
}

// ---------------------------------------------------------------------------
// Against the embedded API server

// The shared `Cluster` as these tests use it: manifests under `m/`, kapply
// and kubectl run in the scratch directory.
impl Cluster {
    /// `kapply ARGS --kubeconfig K` in the scratch directory.
    fn kapply(&self, args: &[&str]) -> Out {
        let mut all: Vec<&str> = args.to_vec();
        all.push("--kubeconfig");
        all.push(self.kubeconfig.to_str().unwrap());
        kapply(self.dir.path(), &all)
    }

    fn configmap(&self, ns: &str, name: &str) -> Option<Value> {
        self.get("v1", "ConfigMap", Some(ns), name)
    }
}

fn configmap(name: &str, labels: &str, data: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels: {labels}\ndata: {data}\n"
    )
}

fn deployment(name: &str, app: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  selector:
    matchLabels:
      app: {app}
  template:
    metadata:
      labels:
        app: {app}
    spec:
      containers:
      - name: web
        image: nginx:1.16.1
"
    )
}

#[test]
fn apply_kubectl_diff_reapply_dry_run_and_delete() {
    let c = Cluster::start();
    c.write(
        "m/a-settings.yaml",
        &configmap("settings", "{app: x}", "{color: blue}"),
    );
    c.write("m/b-web.yaml", &deployment("web", "web"));

    let out = c.kapply(&["apply", "-f", "m", "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    out.assert_stdout("ConfigMap default/settings created");
    out.assert_stdout("Deployment default/web created");
    let cm = c.configmap("default", "settings").expect("created");
    assert_eq!(cm["data"], json!({"color": "blue"}));
    assert_eq!(
        cm["metadata"]["annotations"][LAST_APPLIED],
        annotation(
            &json!({"apiVersion":"v1","data":{"color":"blue"},"kind":"ConfigMap",
            "metadata":{"annotations":{},"labels":{"app":"x"},"name":"settings","namespace":"default"}})
        )
    );
    // Over the API too.
    let (code, web) = c.server.api().request(
        "GET",
        "/apis/apps/v1/namespaces/default/deployments/web",
        None,
        None,
    );
    assert_eq!(code, 200, "{web}");
    assert!(web["metadata"]["annotations"][LAST_APPLIED].is_string());

    // Interop: kubectl sees nothing to change.
    if let Some(k) = Kubectl::find(&c.kubeconfig) {
        let d = run(&mut k.command(&["diff", "-f", "m"]));
        assert_eq!(d.code, Some(0), "kubectl diff after kapply apply: {d:?}");
    }

    // Again: unchanged, nothing written.
    c.server.clear_requests();
    let again = c.kapply(&["apply", "-f", "m", "--yes"]);
    assert_eq!(again.code, Some(0), "{again:?}");
    again.assert_stdout("ConfigMap default/settings unchanged");
    again.assert_stdout("Deployment default/web unchanged");
    assert!(c.writes().is_empty(), "{:?}", c.writes());
    let diff = c.kapply(&["diff", "-f", "m"]);
    assert_eq!(diff.code, Some(0), "{diff:?}");

    // A server-side dry run of a change sends it, marked dryRun, and writes nothing.
    c.write(
        "m/a-settings.yaml",
        &configmap("settings", "{app: x}", "{color: red}"),
    );
    let diff = c.kapply(&["diff", "-f", "m"]);
    assert_eq!(diff.code, Some(1), "{diff:?}");
    c.server.clear_requests();
    let dry = c.kapply(&["apply", "-f", "m", "--dry-run=server", "--yes"]);
    assert_eq!(dry.code, Some(0), "{dry:?}");
    dry.assert_stderr("nothing was written");
    let writes = c.writes();
    assert!(!writes.is_empty(), "the dry run sent nothing");
    for w in &writes {
        assert_eq!(
            w.query.get("dryRun").map(String::as_str),
            Some("All"),
            "{w:?}"
        );
    }
    assert_eq!(
        c.configmap("default", "settings").unwrap()["data"]["color"],
        "blue"
    );

    // Delete.
    let del = c.kapply(&["delete", "-f", "m", "--yes"]);
    assert_eq!(del.code, Some(0), "{del:?}");
    del.assert_stdout("ConfigMap default/settings deleted");
    del.assert_stdout("Deployment default/web deleted");
    assert!(c.configmap("default", "settings").is_none());
    assert!(
        c.get("apps/v1", "Deployment", Some("default"), "web")
            .is_none()
    );
    // Deleting again finds nothing, and says so.
    let del = c.kapply(&["delete", "-f", "m", "--yes"]);
    assert_eq!(del.code, Some(0), "{del:?}");
    del.assert_stderr("ConfigMap default/settings not found");
}

#[test]
fn without_yes_and_no_terminal_nothing_is_written() {
    let c = Cluster::start();
    c.write(
        "m/settings.yaml",
        &configmap("settings", "{app: x}", "{color: blue}"),
    );

    let out = c.kapply(&["apply", "-f", "m"]);
    assert_ne!(out.code, Some(0), "{out:?}");
    out.assert_stderr("--yes");
    out.assert_stderr("not a terminal");
    assert!(c.writes().is_empty(), "{:?}", c.writes());
    assert!(c.configmap("default", "settings").is_none());

    // Same for delete.
    let created = c.kapply(&["apply", "-f", "m", "--yes"]);
    assert_eq!(created.code, Some(0), "{created:?}");
    c.server.clear_requests();
    let del = c.kapply(&["delete", "-f", "m"]);
    assert_ne!(del.code, Some(0), "{del:?}");
    del.assert_stderr("--yes");
    assert!(c.writes().is_empty(), "{:?}", c.writes());
    assert!(c.configmap("default", "settings").is_some());
}

#[test]
fn prune_by_label() {
    let c = Cluster::start();
    c.write("m/one.yaml", &configmap("one", "{app: x}", "{k: v}"));
    c.write("m/two.yaml", &configmap("two", "{app: x}", "{k: v}"));
    // Applied by kapply too, but with another label: never pruned by -l app=x.
    let other = c.dir.path().join("bystander.yaml");
    write(&other, &configmap("bystander", "{app: other}", "{k: v}"));
    let b = c.kapply(&["apply", "-f", other.to_str().unwrap(), "--yes"]);
    assert_eq!(b.code, Some(0), "{b:?}");

    let out = c.kapply(&["apply", "-f", "m", "--prune", "-l", "app=x", "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(c.configmap("default", "two").is_some());

    c.remove("m/two.yaml");
    // --prune alone is refused before anything is sent.
    c.server.clear_requests();
    let refused = c.kapply(&["apply", "-f", "m", "--prune", "--yes"]);
    assert_eq!(refused.code, Some(2), "{refused:?}");
    refused.assert_stderr("--prune needs -l SELECTOR or --all");
    assert!(c.server.requests().is_empty(), "{:?}", c.server.requests());
    assert!(c.configmap("default", "two").is_some());

    let pruned = c.kapply(&["apply", "-f", "m", "--prune", "-l", "app=x", "--yes"]);
    assert_eq!(pruned.code, Some(0), "{pruned:?}");
    pruned.assert_stderr("- prune      ConfigMap default/two");
    pruned.assert_stdout("ConfigMap default/two pruned");
    assert!(c.configmap("default", "two").is_none());
    assert!(c.configmap("default", "one").is_some());
    assert!(c.configmap("default", "bystander").is_some());
}

/// `plan -o json|yaml` is for scripts: the document on stdout and nothing
/// on stderr (as `kubectl apply --dry-run=server -o json`), whatever the
/// plan holds (an update, a create, a prune); an error still says itself
/// there, and the document still comes.
#[test]
fn plan_documents_leave_stderr_to_errors() {
    let c = Cluster::start();
    c.write("m/one.yaml", &configmap("one", "{app: x}", "{k: v}"));
    c.write("m/two.yaml", &configmap("two", "{app: x}", "{k: v}"));
    let out = c.kapply(&["apply", "-f", "m", "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    c.write("m/one.yaml", &configmap("one", "{app: x}", "{k: changed}"));
    c.write("m/three.yaml", &configmap("three", "{app: x}", "{k: v}"));
    c.remove("m/two.yaml");
    let args = ["plan", "-f", "m", "--prune", "-l", "app=x", "-o"];
    let json = c.kapply(&[&args[..], &["json"]].concat());
    assert_eq!(json.code, Some(0), "{json:?}");
    assert_eq!(json.stderr, "", "{json:?}");
    let plan = json_out(&json);
    let actions: Vec<(&str, &str)> = plan["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["name"].as_str().unwrap(), o["action"].as_str().unwrap()))
        .collect();
    assert_eq!(
        actions,
        [("one", "update"), ("three", "create"), ("two", "prune")],
        "{plan:#}"
    );
    let yaml = c.kapply(&[&args[..], &["yaml"]].concat());
    assert_eq!(yaml.code, Some(0), "{yaml:?}");
    assert_eq!(yaml.stderr, "", "{yaml:?}");
    assert_eq!(yaml.stdout, kapply::yaml::to_yaml(&plan), "{yaml:?}");

    c.write("m/zz-broken.yaml", "kind: ConfigMap\nmetadata: [\n");
    let broken = c.kapply(&[&args[..], &["json"]].concat());
    assert_eq!(broken.code, Some(2), "{broken:?}");
    broken.assert_stderr("m/zz-broken.yaml:");
    assert!(json_out(&broken)["objects"].is_array(), "{broken:?}");
}

/// `-l` refuses what kubectl refuses, in kubectl's words, before any
/// request, and accepts what kubectl accepts.
#[test]
fn label_selectors_are_checked_as_kubectl_checks_them() {
    let c = Cluster::start();
    c.write("m/one.yaml", &configmap("one", "{a: b}", "{k: v}"));
    let m = c.dir.path().join("m");
    let m = m.to_str().unwrap();
    let kubectl = Kubectl::find(&c.kubeconfig);
    for sel in [
        "a in (b", "a b", "a=b c", "=b", "a=b,", "!a=b", "a in b", "a>x", "x/=1", "a=b/c", "a,,b",
    ] {
        c.server.clear_requests();
        let out = c.kapply(&["diff", "-f", m, "-l", sel]);
        assert_eq!(out.code, Some(2), "{sel}: {out:?}");
        let ours = out
            .stderr
            .lines()
            .find_map(|l| l.strip_prefix("error: -l: "))
            .unwrap_or_else(|| panic!("{sel}: {out:?}"));
        assert!(
            ours.starts_with(&format!("the provided selector {sel:?} is not valid: ")),
            "{ours}"
        );
        assert!(c.server.requests().is_empty(), "{sel}: a request was sent");
        if let Some(k) = &kubectl {
            let theirs = k.run(&["apply", "--dry-run=client", "-f", m, "-l", sel], &[]);
            assert!(!theirs.status.success(), "{sel}");
            let theirs = String::from_utf8_lossy(&theirs.stderr);
            assert_eq!(theirs.trim_end(), format!("error: {ours}"), "{sel}");
        }
    }
    for sel in ["a in (b,)", "a!=", "a==b", " a = b ", "a in (b, c),!d"] {
        let out = c.kapply(&["diff", "-f", m, "-l", sel]);
        assert_eq!(out.code, Some(1), "{sel}: {out:?}");
        if let Some(k) = &kubectl {
            let theirs = k.run(&["apply", "--dry-run=client", "-f", m, "-l", sel], &[]);
            assert!(theirs.status.success(), "{sel}: {theirs:?}");
        }
    }
}

#[test]
fn applyset_parent_and_prune() {
    let c = Cluster::start();
    c.server
        .api()
        .put_object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}))
        .unwrap();
    c.write("m/keep.yaml", &configmap("keep", "{app: x}", "{k: v}"));
    c.write("m/gone.yaml", &configmap("gone", "{app: x}", "{k: v}"));
    let args = [
        "apply",
        "-f",
        "m",
        "--prune",
        "--applyset",
        "myset",
        "-n",
        "apps",
        "--yes",
    ];

    let out = c.kapply(&args);
    assert_eq!(out.code, Some(0), "{out:?}");
    // ID as kubectl computes it for a Secret parent myset in namespace apps.
    let digest = Sha256::digest(b"myset.apps.Secret.");
    let id = format!(
        "applyset-{}-v1",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
    );
    let parent = c
        .get("v1", "Secret", Some("apps"), "myset")
        .expect("parent Secret created");
    assert_eq!(
        parent["metadata"]["labels"]["applyset.kubernetes.io/id"],
        id
    );
    assert_eq!(
        parent["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"],
        "ConfigMap"
    );
    for name in ["keep", "gone"] {
        let cm = c.configmap("apps", name).expect("member created");
        assert_eq!(
            cm["metadata"]["labels"]["applyset.kubernetes.io/part-of"],
            id
        );
    }
    // The parent is written by server-side apply, as kubectl does.
    assert!(
        c.server.requests().iter().any(|r| r.method == "PATCH"
            && r.path == "/api/v1/namespaces/apps/secrets/myset"
            && r.content_type.as_deref() == Some("application/apply-patch+yaml")),
        "{:?}",
        c.server.requests()
    );

    c.remove("m/gone.yaml");
    let second = c.kapply(&args);
    assert_eq!(second.code, Some(0), "{second:?}");
    second.assert_stdout("ConfigMap apps/gone pruned");
    assert!(c.configmap("apps", "gone").is_none());
    assert!(c.configmap("apps", "keep").is_some());
    assert!(c.get("v1", "Secret", Some("apps"), "myset").is_some());
}

#[test]
fn unreachable_server_is_named() {
    let port = server::unused_port();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let url = format!("http://127.0.0.1:{port}");
    server::write_kubeconfig_for(&d.join("kubeconfig"), &url);
    write(
        &d.join("m/settings.yaml"),
        &configmap("settings", "{app: x}", "{k: v}"),
    );
    for args in [
        &["apply", "-f", "m", "--yes"][..],
        &["diff", "-f", "m"],
        &["delete", "-f", "m", "--yes"],
    ] {
        let mut all = args.to_vec();
        all.extend(["--kubeconfig", "kubeconfig"]);
        let out = kapply(d, &all);
        assert_ne!(out.code, Some(0), "{args:?}: {out:?}");
        assert!(
            out.stderr.contains(&url),
            "{args:?} does not name {url}: {out:?}"
        );
    }
}

#[test]
fn invalid_object_is_reported_while_the_others_apply() {
    let c = Cluster::start();
    c.write("m/web.yaml", &deployment("web", "web"));
    let out = c.kapply(&["apply", "-f", "m", "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");

    // The selector is immutable: 422 for the Deployment only.
    c.write("m/web.yaml", &deployment("web", "web2"));
    c.write("m/extra.yaml", &configmap("extra", "{app: x}", "{k: v}"));
    let out = c.kapply(&["apply", "-f", "m", "--yes"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    let err = out
        .stderr
        .lines()
        .find(|l| l.starts_with("error: Deployment default/web:"))
        .unwrap_or_else(|| panic!("no error line for the Deployment: {out:?}"));
    assert!(err.contains("immutable"), "{err}");
    // The way forward is named.
    out.assert_stderr(
        "1 update(s) refused as invalid (an immutable field): `kapply apply --force`",
    );
    out.assert_stdout("ConfigMap default/extra created");
    assert!(c.configmap("default", "extra").is_some());
    let web = c
        .get("apps/v1", "Deployment", Some("default"), "web")
        .unwrap();
    assert_eq!(web["spec"]["selector"]["matchLabels"]["app"], "web");

    // delete -f with an unreadable file: the readable objects are deleted,
    // the file is named, and the run fails.
    c.write(
        "m/zz-broken.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n",
    );
    let del = c.kapply(&["delete", "-f", "m", "--yes"]);
    assert_eq!(del.code, Some(1), "{del:?}");
    del.assert_stderr("m/zz-broken.yaml:");
    assert!(c.configmap("default", "extra").is_none());
    assert!(
        c.get("apps/v1", "Deployment", Some("default"), "web")
            .is_none()
    );
}

/// Creates, updates, unchanged objects and rows that cannot be applied,
/// mixed in one apply: each create is written from its own row (its body
/// travels with it from the plan), and only what was written is reported.
#[test]
fn a_mixed_apply_writes_each_create_from_its_own_row() {
    let c = Cluster::start();
    c.write("m/b-upd.yaml", &configmap("upd", "{app: x}", "{k: old}"));
    c.write("m/c-same.yaml", &configmap("same", "{app: x}", "{k: same}"));
    let out = c.kapply(&["apply", "-f", "m", "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");

    // Error rows first (a manifest that cannot be read, a kind the server
    // does not serve), then creates between an update and an unchanged
    // object, and a create of another kind.
    c.write(
        "m/a-bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yes\n",
    );
    c.write(
        "m/a-nope.yaml",
        "apiVersion: nope.example.com/v1\nkind: Nope\nmetadata:\n  name: nope\n",
    );
    c.write(
        "m/a-new1.yaml",
        &configmap("new1", "{app: one}", "{k: one}"),
    );
    c.write("m/b-upd.yaml", &configmap("upd", "{app: x}", "{k: new}"));
    c.write(
        "m/d-new2.yaml",
        &configmap("new2", "{app: two}", "{k: two}"),
    );
    c.write("m/e-web.yaml", &deployment("web", "web"));
    let out = c.kapply(&["apply", "-f", "m", "--yes"]);
    assert_eq!(out.code, Some(1), "the error row fails the run: {out:?}");
    out.assert_stderr("! error      (unreadable manifest): m/a-bad.yaml:4:");
    out.assert_stderr("! error      Nope default/nope: Nope.nope.example.com/v1 is not served");
    let mut lines: Vec<&str> = out.stdout.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "ConfigMap default/new1 created",
            "ConfigMap default/new2 created",
            "ConfigMap default/same unchanged",
            "ConfigMap default/upd configured",
            "Deployment default/web created",
        ],
        "{out:?}"
    );
    for (name, value) in [("new1", "one"), ("new2", "two"), ("upd", "new")] {
        let cm = c.configmap("default", name).unwrap();
        assert_eq!(cm["data"]["k"], value, "{cm}");
        let recorded: Value = serde_json::from_str(
            cm["metadata"]["annotations"][LAST_APPLIED]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(recorded["metadata"]["name"], name, "{cm}");
        assert_eq!(recorded["data"]["k"], value, "{cm}");
    }
    let web = c
        .get("apps/v1", "Deployment", Some("default"), "web")
        .unwrap();
    assert_eq!(web["spec"]["selector"]["matchLabels"]["app"], "web");
    assert!(
        c.get("nope.example.com/v1", "Nope", Some("default"), "nope")
            .is_none()
    );
}

// ---------------------------------------------------------------------------
// Prune only from a complete read: an object kapply could not read must
// never look like one to delete (kubectl skips pruning after any error).

/// `m/a`, `m/b`, `m/c`: ConfigMaps labelled app=x, applied with
/// `--prune -l app=x`; then `m/c` is removed, so `c` is a real candidate.
fn applied_abc() -> Cluster {
    let c = Cluster::start();
    for name in ["a", "b", "c"] {
        c.write(
            &format!("m/{name}.yaml"),
            &configmap(name, "{app: x}", "{k: v}"),
        );
    }
    let out = c.kapply(&["apply", "-f", "m", "--prune", "-l", "app=x", "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    c.remove("m/c.yaml");
    c
}

impl Cluster {
    /// Every ConfigMap of `names` is still on the server.
    fn assert_all_there(&self, names: &[&str]) {
        for name in names {
            assert!(
                self.configmap("default", name).is_some(),
                "ConfigMap {name} is gone"
            );
        }
    }

    /// No request that could have changed anything since the last clear.
    fn assert_no_writes(&self) {
        let writes = self.writes();
        assert!(writes.is_empty(), "{writes:?}");
    }
}

#[test]
fn a_parse_error_disables_prune_and_the_rest_still_applies() {
    let c = applied_abc();
    // A stray tab: b's file cannot be parsed.
    c.write(
        "m/b.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: b\n",
    );
    c.write("m/a.yaml", &configmap("a", "{app: x}", "{k: changed}"));

    let diff = c.kapply(&["diff", "-f", "m", "--prune", "-l", "app=x"]);
    assert_eq!(diff.code, Some(2), "{diff:?}");
    assert!(!diff.stdout.contains("(prune)"), "{diff:?}");
    diff.assert_stdout("pruning skipped: 1 manifest could not be read (m/b.yaml:4");

    let plan = c.kapply(&["plan", "-f", "m", "--prune", "-l", "app=x"]);
    let json = json_out(&plan);
    assert!(
        json["objects"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["action"] != "prune"),
        "{plan:?}"
    );
    assert!(
        json["pruneSkipped"]
            .as_str()
            .is_some_and(|s| s.contains("m/b.yaml:4")),
        "{plan:?}"
    );
    // -o yaml ends with the same key: the whole document's text.
    let yaml = c.kapply(&["plan", "-f", "m", "--prune", "-l", "app=x", "-o", "yaml"]);
    assert_eq!(yaml.stdout, kapply::yaml::to_yaml(&json), "{yaml:?}");

    c.server.clear_requests();
    let out = c.kapply(&["apply", "-f", "m", "--prune", "-l", "app=x", "--yes"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stderr("pruning skipped: 1 manifest could not be read (m/b.yaml:4");
    out.assert_stdout("ConfigMap default/a configured");
    assert!(!out.stdout.contains("pruned"), "{out:?}");
    assert!(
        c.writes().iter().all(|w| w.method != "DELETE"),
        "{:?}",
        c.writes()
    );
    c.assert_all_there(&["a", "b", "c"]);
    assert_eq!(c.configmap("default", "a").unwrap()["data"]["k"], "changed");
}

#[test]
fn a_missing_path_writes_nothing_and_prunes_nothing() {
    let c = applied_abc();
    c.server.clear_requests();
    let out = c.kapply(&[
        "apply",
        "-f",
        "/nonexistent",
        "--prune",
        "--all",
        "-n",
        "default",
        "--yes",
    ]);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stderr("/nonexistent: the path does not exist");
    out.assert_stderr("nothing was written");
    // A good path beside a typo: still nothing, as kubectl does.
    let out = c.kapply(&[
        "apply",
        "-f",
        "m",
        "-f",
        "typo-dir/",
        "--prune",
        "-l",
        "app=x",
        "--yes",
    ]);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stderr("typo-dir/: the path does not exist");
    c.assert_no_writes();
    c.assert_all_there(&["a", "b", "c"]);

    let diff = c.kapply(&[
        "diff",
        "-f",
        "m",
        "-f",
        "typo-dir/",
        "--prune",
        "-l",
        "app=x",
    ]);
    assert_eq!(diff.code, Some(2), "{diff:?}");
    assert!(!diff.stdout.contains("(prune)"), "{diff:?}");
    diff.assert_stdout("pruning skipped");
}

#[test]
fn empty_input_is_an_error_and_prunes_nothing() {
    let c = applied_abc();
    c.write("empty.yaml", "");
    c.write("dashes.yaml", "---\n---\n");
    std::fs::create_dir_all(c.path("emptydir")).unwrap();
    c.write("emptydir/README.md", "not a manifest\n");
    c.server.clear_requests();
    for (input, says) in [
        ("empty.yaml", "no objects passed to apply"),
        ("dashes.yaml", "no objects passed to apply"),
        ("emptydir", "emptydir: no manifests in this directory"),
    ] {
        for prune in [true, false] {
            let mut args = vec!["apply", "-f", input, "--yes"];
            if prune {
                args.extend(["--prune", "--all", "-n", "default"]);
            }
            let out = c.kapply(&args);
            assert_eq!(out.code, Some(1), "{input} prune={prune}: {out:?}");
            out.assert_stderr(says);
        }
        let diff = c.kapply(&["diff", "-f", input, "--prune", "-l", "app=x"]);
        assert_eq!(diff.code, Some(2), "{input}: {diff:?}");
        assert!(!diff.stdout.contains("(prune)"), "{diff:?}");
    }
    // Every manifest left out by the prune selector: nothing was read.
    let out = c.kapply(&["apply", "-f", "m", "--prune", "-l", "app=nomatch", "--yes"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stderr("no objects passed to apply");
    c.assert_no_writes();
    c.assert_all_there(&["a", "b", "c"]);
}

#[test]
fn a_failed_write_skips_prune() {
    let c = applied_abc();
    // An immutable ConfigMap whose data changes: 422 from the server.
    c.write(
        "m/frozen.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\n  labels: {app: x}\nimmutable: true\ndata: {k: v}\n",
    );
    c.write("m/c.yaml", &configmap("c", "{app: x}", "{k: v}"));
    let out = c.kapply(&["apply", "-f", "m", "--prune", "-l", "app=x", "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    c.remove("m/c.yaml");
    c.write(
        "m/frozen.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\n  labels: {app: x}\nimmutable: true\ndata: {k: other}\n",
    );
    let out = c.kapply(&["apply", "-f", "m", "--prune", "-l", "app=x", "--yes"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stderr("error: ConfigMap default/frozen:");
    out.assert_stderr("pruning skipped: 1 object failed to apply");
    assert!(!out.stdout.contains("pruned"), "{out:?}");
    c.assert_all_there(&["a", "b", "c", "frozen"]);
}

#[test]
fn applyset_prune_needs_a_complete_read_too() {
    let c = Cluster::start();
    c.write("m/keep.yaml", &configmap("keep", "{app: x}", "{k: v}"));
    c.write("m/gone.yaml", &configmap("gone", "{app: x}", "{k: v}"));
    c.write("m/web.yaml", &deployment("web", "web"));
    let args = [
        "apply",
        "-f",
        "m",
        "--prune",
        "--applyset",
        "myset",
        "--yes",
    ];
    let out = c.kapply(&args);
    assert_eq!(out.code, Some(0), "{out:?}");
    let kinds = |c: &Cluster| {
        c.get("v1", "Secret", Some("default"), "myset").unwrap()["metadata"]["annotations"]
            ["applyset.kubernetes.io/contains-group-kinds"]
            .clone()
    };
    assert_eq!(kinds(&c), "ConfigMap,Deployment.apps");

    // gone is removed, web's file becomes unreadable.
    c.remove("m/gone.yaml");
    c.write(
        "m/web.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: [\n",
    );
    let out = c.kapply(&args);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stderr("pruning skipped: 1 manifest could not be read (m/web.yaml:");
    assert!(c.configmap("default", "gone").is_some());
    assert!(
        c.get("apps/v1", "Deployment", Some("default"), "web")
            .is_some()
    );
    // The parent still remembers Deployments, so a later complete run can prune them.
    assert_eq!(kinds(&c), "ConfigMap,Deployment.apps");
}

// ---------------------------------------------------------------------------
// kapply demo

/// Kills the child if the test fails before it stops it.
struct Reaper(Option<Child>);

impl Drop for Reaper {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Starts `kapply demo --no-tui --port PORT --kubeconfig-out FILE EXTRA...`
/// and waits for its banner (at most a minute): the running child and the
/// banner lines.
fn start_demo(port: u16, kubeconfig: &Path, extra: &[&str]) -> (Reaper, Vec<String>) {
    let child = Command::new(KAPPLY)
        .args([
            "demo",
            "--no-tui",
            "--port",
            &port.to_string(),
            "--kubeconfig-out",
        ])
        .arg(kubeconfig)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reaper = Reaper(Some(child));
    let stdout = reaper.0.as_mut().unwrap().stdout.take().unwrap();

    // Read stdout on a thread, so a hung child fails the test instead of hanging it.
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut banner = Vec::new();
    loop {
        match rx.recv_timeout(std::time::Duration::from_secs(60)) {
            Ok(line) => {
                let done = line.contains("serving until Ctrl-C");
                banner.push(line);
                if done {
                    return (reaper, banner);
                }
            }
            Err(e) => {
                let mut err = String::new();
                if let Some(s) = reaper.0.as_mut().unwrap().stderr.as_mut() {
                    let _ = s.read_to_string(&mut err);
                }
                panic!("kapply demo did not start ({e}): {banner:?}\n{err}");
            }
        }
    }
}

/// Ctrl-C ends the demo cleanly.
fn interrupt_demo(mut reaper: Reaper) {
    let mut child = reaper.0.take().unwrap();
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "kapply demo after SIGINT: {status}");
}

#[test]
fn demo_serves_until_interrupted() {
    let port = server::unused_port();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("demo-kubeconfig");
    let (reaper, banner) = start_demo(port, &kubeconfig, &[]);
    let url = format!("http://127.0.0.1:{port}");
    assert!(banner.iter().any(|l| l.contains(&url)), "{banner:?}");
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(text.contains(&format!("server: {url}")), "{text}");

    // The kubeconfig holds the run's token, readable by its owner only.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&kubeconfig).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    let token = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("token: "))
        .unwrap_or_else(|| panic!("no token: {text}"));
    assert_ne!(token, "kapply-demo");
    // Plain HTTP, no kubectl needed: the seeded Deployment is there, for
    // the token's bearer only.
    let get = |auth: &str| {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            s,
            "GET /apis/apps/v1/namespaces/demo/deployments HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Connection: close\r\n\r\n"
        )
        .unwrap();
        let mut resp = String::new();
        s.read_to_string(&mut resp).unwrap();
        resp
    };
    let resp = get(&format!("Authorization: Bearer {token}\r\n"));
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    assert!(resp.contains("\"nginx-deployment\""), "{resp}");
    let resp = get("");
    assert!(resp.starts_with("HTTP/1.1 401"), "{resp}");
    assert!(!resp.contains("nginx-deployment"), "{resp}");

    if let Some(k) = Kubectl::find(&kubeconfig) {
        let out = run(&mut k.command(&["get", "deploy", "-n", "demo"]));
        assert_eq!(out.code, Some(0), "{out:?}");
        out.assert_stdout("nginx-deployment");
    }
    interrupt_demo(reaper);

    // A second demo may overwrite the kubeconfig the first one wrote.
    let port = server::unused_port();
    let (reaper, _) = start_demo(port, &kubeconfig, &[]);
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(
        text.contains(&format!("server: http://127.0.0.1:{port}")),
        "{text}"
    );
    interrupt_demo(reaper);
}

#[test]
fn demo_refuses_to_overwrite_a_kubeconfig_it_did_not_write() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("config");
    let mine = "apiVersion: v1\nkind: Config\nclusters:\n- name: prod\n  cluster:\n    server: https://prod.example:6443\n\
                contexts:\n- name: prod\n  context: {cluster: prod, user: me}\ncurrent-context: prod\nusers:\n- name: me\n  user: {}\n";
    std::fs::write(&kubeconfig, mine).unwrap();
    let out = kapply(
        dir.path(),
        &["demo", "--no-tui", "--kubeconfig-out", "config"],
    );
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    out.assert_stderr(
        "error: kapply demo: --kubeconfig-out config: the file exists and was not written by kapply demo; \
         refusing to overwrite it (choose another path, or pass --force)",
    );
    assert_eq!(std::fs::read_to_string(&kubeconfig).unwrap(), mine);

    // --force overwrites it.
    let port = server::unused_port();
    let (reaper, _) = start_demo(port, &kubeconfig, &["--force"]);
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(
        text.contains(&format!("server: http://127.0.0.1:{port}")),
        "{text}"
    );
    assert!(!text.contains("prod.example"), "{text}");
    interrupt_demo(reaper);
}

/// `apply --plan FILE` applies only what the (edited) plan lists: a change
/// removed from the file stays pending, an object missing from it is skipped.
#[test]
fn apply_with_an_edited_plan_applies_only_what_it_lists() {
    let c = Cluster::start();
    c.write(
        "m/a-settings.yaml",
        &configmap("settings", "{app: x}", "{color: blue, size: big}"),
    );
    c.write("m/b-other.yaml", &configmap("other", "{app: x}", "{k: v}"));
    let out = c.kapply(&["apply", "-f", "m", "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");

    // Two changes to settings, one to other.
    c.write(
        "m/a-settings.yaml",
        &configmap("settings", "{app: x}", "{color: green}"),
    );
    c.write("m/b-other.yaml", &configmap("other", "{app: x}", "{k: w}"));
    let mut plan = json_out(&c.kapply(&["plan", "-f", "m"]));
    // Keep only settings, and of it only the color change.
    let objects = plan["objects"].as_array_mut().unwrap();
    objects.retain(|o| o["name"] == "settings");
    let fields = objects[0]["fields"].as_array_mut().unwrap();
    assert!(
        fields
            .iter()
            .any(|f| f["path"] == "data.size" && f["action"] == "clear")
    );
    fields.retain(|f| f["path"] == "data.color");
    let file = c.dir.path().join("selected.json");
    std::fs::write(&file, serde_json::to_string(&plan).unwrap()).unwrap();

    let out = c.kapply(&[
        "apply",
        "-f",
        "m",
        "--plan",
        file.to_str().unwrap(),
        "--yes",
    ]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let settings = c.configmap("default", "settings").unwrap();
    assert_eq!(settings["data"], json!({"color": "green", "size": "big"}));
    let other = c.configmap("default", "other").unwrap();
    assert_eq!(
        other["data"],
        json!({"k": "v"}),
        "not in the plan file: skipped"
    );

    // The skipped changes are still pending.
    let plan = json_out(&c.kapply(&["plan", "-f", "m"]));
    let pending: Vec<(String, String)> = plan["objects"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|o| {
            o["fields"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["action"] != "keep")
                .map(|f| {
                    (
                        o["name"].as_str().unwrap().to_string(),
                        f["path"].as_str().unwrap().to_string(),
                    )
                })
        })
        .filter(|(_, p)| !p.starts_with("metadata"))
        .collect();
    assert!(
        pending.contains(&("settings".into(), "data.size".into())),
        "{pending:?}"
    );
    assert!(
        pending.contains(&("other".into(), "data.k".into())),
        "{pending:?}"
    );
    assert!(
        !pending.contains(&("settings".into(), "data.color".into())),
        "{pending:?}"
    );
}

/// An answer larger than `--max-response-bytes` ends its request with an
/// error naming it, instead of being read into memory whole.
#[test]
fn answers_larger_than_the_cap_are_refused_by_name() {
    let c = Cluster::start();
    let big = "x".repeat(3 << 20);
    c.server
        .store()
        .put_object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "big", "namespace": "default"}, "data": {"k": big}}))
        .unwrap();
    c.write(
        "m/settings.yaml",
        &configmap("settings", "{app: x}", "{k: v}"),
    );
    let out = c.kapply(&["diff", "-f", "m", "--max-response-bytes", "1000000"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    out.assert_stdout(
        "error: ConfigMap default/settings: the server's answer to GET \
         /api/v1/namespaces/default/configmaps is larger than 1000000 bytes \
         (--max-response-bytes); it was not read",
    );
    // The default cap (1 GiB) reads it.
    let out = c.kapply(&["diff", "-f", "m"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stdout("ConfigMap default/settings");
}

/// An object whose last-applied annotation would pass the API server's
/// 262,144-byte limit on annotations is refused before anything is sent,
/// in diff, plan and apply, with why and what to do instead; one just under
/// it is applied.
#[test]
fn an_object_too_large_for_client_side_apply_is_refused_before_sending() {
    let c = Cluster::start();
    let data = |n: usize| format!("{{blob: {}}}", "x".repeat(n));
    c.write("m/big.yaml", &configmap("big", "{app: x}", &data(270_000)));
    c.write("m/small.yaml", &configmap("small", "{app: x}", "{k: v}"));
    let why = "too large for client-side apply: its kubectl.kubernetes.io/last-applied-configuration \
               annotation would be";
    let out = c.kapply(&["diff", "-f", "m"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    out.assert_stdout(&format!("error: ConfigMap default/big: {why}"));
    out.assert_stdout("kubectl apply --server-side");
    let plan = json_out(&c.kapply(&["plan", "-f", "m", "-o", "json"]));
    let big = &plan["objects"][0];
    assert_eq!(big["action"], "error", "{big}");
    assert!(
        big["error"]
            .as_str()
            .unwrap()
            .contains("over the 262144 bytes"),
        "{big}"
    );

    c.server.clear_requests();
    let out = c.kapply(&["apply", "-f", "m", "--yes"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stderr(&format!("ConfigMap default/big: {why}"));
    out.assert_stdout("ConfigMap default/small created");
    assert!(c.configmap("default", "big").is_none());
    assert!(
        !c.writes().iter().any(|w| w.path.ends_with("/big")
            || w.body
                .as_ref()
                .is_some_and(|b| b["metadata"]["name"] == "big")),
        "{:?}",
        c.writes()
            .iter()
            .map(|w| (&w.method, &w.path))
            .collect::<Vec<_>>()
    );

    // Just under: applied; then grown over it: the update is refused too.
    c.write("m/big.yaml", &configmap("big", "{app: x}", &data(120_000)));
    let out = c.kapply(&["apply", "-f", "m", "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    c.write("m/big.yaml", &configmap("big", "{app: x}", &data(262_000)));
    let out = c.kapply(&["apply", "-f", "m", "--yes"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stderr(&format!("ConfigMap default/big: {why}"));
    let live = c.configmap("default", "big").unwrap();
    assert_eq!(live["data"]["blob"].as_str().unwrap().len(), 120_000);
}

/// Saves `kapply plan` output (with `args`) as `name` in the scratch dir.
fn save_plan(c: &Cluster, name: &str, args: &[&str]) -> String {
    let mut all = vec!["plan", "-f", "m", "-o", "json"];
    all.extend_from_slice(args);
    let out = c.kapply(&all);
    assert!(out.code == Some(0) || out.code == Some(1), "{out:?}");
    c.write(name, &out.stdout)
}

/// A saved plan pins what was reviewed: the config edited after the plan
/// (LOG_LEVEL) is refused, by name and field, and not written; the other
/// objects of the plan are applied; exit 1.
#[test]
fn a_saved_plan_refuses_a_config_edited_after_it() {
    let c = Cluster::start();
    c.write(
        "m/a-settings.yaml",
        &configmap("settings", "{app: x}", "{LOG_LEVEL: debug}"),
    );
    c.write("m/b-other.yaml", &configmap("other", "{app: x}", "{k: v}"));
    let out = c.kapply(&["apply", "-f", "m", "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    c.write(
        "m/a-settings.yaml",
        &configmap("settings", "{app: x}", "{LOG_LEVEL: info}"),
    );
    c.write("m/b-other.yaml", &configmap("other", "{app: x}", "{k: w}"));
    let plan = save_plan(&c, "plan.json", &[]);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    assert_eq!(saved["savedPlan"]["version"], 1, "{saved}");
    assert_eq!(
        saved["savedPlan"]["cluster"]["server"],
        c.server.url(),
        "{saved}"
    );
    let pin = &saved["objects"][0]["pin"];
    assert!(
        pin["uid"].is_string() && pin["resourceVersion"].is_string(),
        "{pin}"
    );

    // Reviewed, then edited (a later commit).
    c.write(
        "m/a-settings.yaml",
        &configmap("settings", "{app: x}", "{LOG_LEVEL: TAMPERED}"),
    );
    let out = c.kapply(&["apply", "-f", "m", "--plan", &plan, "--yes"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stderr(
        "error: ConfigMap default/settings: saved plan is stale: its manifest changed since the plan; \
         the change apply would send is not the one reviewed; fields not as reviewed: data.LOG_LEVEL; \
         nothing sent (make a new plan and review it)",
    );
    out.assert_stdout("ConfigMap default/other configured");
    assert_eq!(
        c.configmap("default", "settings").unwrap()["data"]["LOG_LEVEL"],
        "debug"
    );
    assert_eq!(c.configmap("default", "other").unwrap()["data"]["k"], "w");

    // Back as reviewed, but the live object changed since (kubectl edit):
    // refused too, saying so.
    c.write(
        "m/a-settings.yaml",
        &configmap("settings", "{app: x}", "{LOG_LEVEL: info}"),
    );
    let mut live = c.configmap("default", "settings").unwrap();
    live["data"]["EXTRA"] = json!("1");
    c.server.api().request(
        "PUT",
        "/api/v1/namespaces/default/configmaps/settings",
        Some("application/json"),
        Some(&live),
    );
    let out = c.kapply(&["apply", "-f", "m", "--plan", &plan, "--yes"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stderr(
        "saved plan is stale: the live object changed since the plan (resourceVersion",
    );
    assert_eq!(
        c.configmap("default", "settings").unwrap()["data"]["LOG_LEVEL"],
        "debug"
    );

    // A fresh plan applies.
    let plan = save_plan(&c, "plan2.json", &[]);
    let out = c.kapply(&["apply", "-f", "m", "--plan", &plan, "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        c.configmap("default", "settings").unwrap()["data"]["LOG_LEVEL"],
        "info"
    );

    // A plan file without the pins (an older kapply's) is refused whole.
    let mut old = saved.clone();
    old.as_object_mut().unwrap().remove("savedPlan");
    let old_file = c.write("old.json", &old.to_string());
    let out = c.kapply(&["apply", "-f", "m", "--plan", &old_file, "--yes"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    out.assert_stderr("the plan pins nothing of what was reviewed");
}

/// A prune target deleted and created again under its name since the plan
/// is not pruned: the plan pinned its uid.
#[test]
fn a_saved_plan_does_not_prune_an_object_created_again() {
    let c = Cluster::start();
    c.write("m/keep.yaml", &configmap("keep", "{app: shop}", "{k: v}"));
    c.write("m/gone.yaml", &configmap("gone", "{app: shop}", "{k: v}"));
    let prune = ["--prune", "-l", "app=shop"];
    let mut args = vec!["apply", "-f", "m", "--yes"];
    args.extend(prune);
    let out = c.kapply(&args);
    assert_eq!(out.code, Some(0), "{out:?}");
    c.remove("m/gone.yaml");
    let plan = save_plan(&c, "plan.json", &prune);
    let text = std::fs::read_to_string(&plan).unwrap();
    assert!(text.contains("\"action\": \"prune\""), "{text}");
    let old_uid = c.configmap("default", "gone").unwrap()["metadata"]["uid"].clone();

    // Deleted and created again since the plan.
    let (code, _) = c.server.api().request(
        "DELETE",
        "/api/v1/namespaces/default/configmaps/gone",
        None,
        None,
    );
    assert_eq!(code, 200);
    // By an apply (with the annotation pruning reads).
    c.write(
        "again/gone.yaml",
        &configmap("gone", "{app: shop}", "{k: new}"),
    );
    let out = c.kapply(&["apply", "-f", "again", "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let new_uid = c.configmap("default", "gone").unwrap()["metadata"]["uid"].clone();
    assert_ne!(old_uid, new_uid);

    c.server.clear_requests();
    let mut args = vec!["apply", "-f", "m", "--plan", &plan, "--yes"];
    args.extend(prune);
    let out = c.kapply(&args);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stderr(&format!(
        "error: ConfigMap default/gone: saved plan is stale: the live object was deleted and \
         created again since the plan (uid {} -> {})",
        old_uid.as_str().unwrap(),
        new_uid.as_str().unwrap()
    ));
    assert_eq!(c.configmap("default", "gone").unwrap()["data"]["k"], "new");
    assert!(
        !c.writes().iter().any(|w| w.method == "DELETE"),
        "{:?}",
        c.writes()
    );

    // A plan made now prunes it, with its uid as the DELETE's precondition.
    let plan = save_plan(&c, "plan2.json", &prune);
    let mut args = vec!["apply", "-f", "m", "--plan", &plan, "--yes"];
    args.extend(prune);
    c.server.clear_requests();
    let out = c.kapply(&args);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(c.configmap("default", "gone").is_none());
    let delete = c
        .writes()
        .into_iter()
        .find(|w| w.method == "DELETE" && w.path.ends_with("/gone"))
        .unwrap();
    let body = delete.body.unwrap_or_default();
    assert_eq!(body["preconditions"]["uid"], new_uid, "{body}");
}

/// A plan made against one cluster is refused by another, whole.
#[test]
fn a_saved_plan_is_refused_by_another_cluster() {
    let a = Cluster::start();
    let b = Cluster::start();
    for c in [&a, &b] {
        c.write(
            "m/settings.yaml",
            &configmap("settings", "{app: x}", "{k: v}"),
        );
    }
    let plan = save_plan(&a, "plan.json", &[]);
    let out = b.kapply(&["apply", "-f", "m", "--plan", &plan, "--yes"]);
    // The whole file is refused, as an argument in error.
    assert_eq!(out.code, Some(2), "{out:?}");
    out.assert_stderr(&format!(
        "the plan was made against the cluster at {} (context \"kapply-demo\"), not {} \
         (context \"kapply-demo\"); nothing applied",
        a.server.url(),
        b.server.url()
    ));
    assert!(b.configmap("default", "settings").is_none());
    assert!(b.writes().is_empty(), "{:?}", b.writes());
    // The same file on its own cluster applies.
    let out = a.kapply(&["apply", "-f", "m", "--plan", &plan, "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(a.configmap("default", "settings").is_some());
}

/// A saved plan holds no Secret value in clear (masked rows, digests),
/// yet a Secret value changed after the plan is caught.
#[test]
fn a_saved_plan_holds_no_secret_value_and_still_pins_it() {
    let c = Cluster::start();
    let secret = |v: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  labels: {{app: x}}\nstringData:\n  password: {v}\n"
        )
    };
    c.write("m/db.yaml", &secret("first-hunter2"));
    let out = c.kapply(&["apply", "-f", "m", "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    c.write("m/db.yaml", &secret("second-hunter2"));
    let plan = save_plan(&c, "plan.json", &[]);
    let text = std::fs::read_to_string(&plan).unwrap();
    for clear in ["hunter2", "c2Vjb25kLWh1bnRlcjI", "Zmlyc3QtaHVudGVy"] {
        assert!(!text.contains(clear), "{clear} in {text}");
    }
    assert!(text.contains("\"change\": \"sha256:"), "{text}");
    c.write("m/db.yaml", &secret("third-hunter2"));
    let out = c.kapply(&["apply", "-f", "m", "--plan", &plan, "--yes"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stderr(
        "error: Secret default/db: saved plan is stale: its manifest changed since the plan",
    );
    assert!(
        !out.stderr.contains("hunter2") && !out.stdout.contains("hunter2"),
        "{out:?}"
    );
    let live = c.get("v1", "Secret", Some("default"), "db").unwrap();
    let last = kubectl::last_applied(&live).unwrap();
    assert_eq!(last["stringData"]["password"], "first-hunter2");
}

/// `apply --plan FILE` with `"action": "release"` on a clear row: the
/// field leaves last-applied, its live value stays, kubectl agrees.
#[test]
fn apply_with_a_plan_releases_a_clear_row() {
    let c = Cluster::start();
    c.write(
        "m/settings.yaml",
        &configmap("settings", "{app: x}", "{color: blue, size: big}"),
    );
    let out = c.kapply(&["apply", "-f", "m", "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    c.write(
        "m/settings.yaml",
        &configmap("settings", "{app: x}", "{color: blue}"),
    );
    let mut plan = json_out(&c.kapply(&["plan", "-f", "m"]));
    let fields = plan["objects"][0]["fields"].as_array_mut().unwrap();
    let size = fields
        .iter_mut()
        .find(|f| f["path"] == "data.size" && f["action"] == "clear")
        .expect("data.size is a clear row");
    size["action"] = json!("release");
    let file = c.dir.path().join("release.json");
    std::fs::write(&file, serde_json::to_string(&plan).unwrap()).unwrap();
    let out = c.kapply(&[
        "apply",
        "-f",
        "m",
        "--plan",
        file.to_str().unwrap(),
        "--yes",
    ]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr.contains(
            "release      ConfigMap default/settings data.size: keeps the live value, drops it from last-applied"
        ),
        "{out:?}"
    );
    let live = c.configmap("default", "settings").unwrap();
    assert_eq!(live["data"], json!({"color": "blue", "size": "big"}));
    let la = kubectl::last_applied(&live).unwrap();
    assert_eq!(la["data"], json!({"color": "blue"}));
    // Nothing pending for kapply, nor for kubectl.
    let plan = json_out(&c.kapply(&["plan", "-f", "m"]));
    assert_eq!(plan["objects"][0]["action"], "unchanged", "{plan}");
    if let Some(k) = Kubectl::find(&c.kubeconfig) {
        let out = k.run(&["diff", "-f", "m"], &[]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        k.ok(&["apply", "-f", "m"]);
        let live = c.configmap("default", "settings").unwrap();
        assert_eq!(live["data"]["size"], "big");
    }

    // A release on a row that is not a clear is refused, nothing written.
    c.write(
        "m/settings.yaml",
        &configmap("settings", "{app: x}", "{color: red}"),
    );
    let mut plan = json_out(&c.kapply(&["plan", "-f", "m"]));
    for f in plan["objects"][0]["fields"].as_array_mut().unwrap() {
        if f["path"] == "data.color" {
            f["action"] = json!("release");
        }
    }
    std::fs::write(&file, serde_json::to_string(&plan).unwrap()).unwrap();
    let out = c.kapply(&[
        "apply",
        "-f",
        "m",
        "--plan",
        file.to_str().unwrap(),
        "--yes",
    ]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stdout.contains("not a clear row") || out.stderr.contains("not a clear row"),
        "{out:?}"
    );
    let live = c.configmap("default", "settings").unwrap();
    assert_eq!(live["data"]["color"], "blue");
}

/// Offline, the scope of a custom kind comes from a CRD among the --live
/// objects (or the manifests); without one the plan says it guessed.
#[test]
fn offline_scope_of_custom_kinds_from_crds_or_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let gadget =
        "apiVersion: demo.kapply.dev/v1\nkind: Gadget\nmetadata:\n  name: g1\nspec:\n  size: 4\n";
    write(&d.join("cfg/gadget.yaml"), gadget);
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.demo.kapply.dev"},
        "spec": {"group": "demo.kapply.dev", "scope": "Cluster",
            "names": {"plural": "gadgets", "kind": "Gadget"}}});
    let recorded = json!({"apiVersion": "demo.kapply.dev/v1", "kind": "Gadget",
        "metadata": {"annotations": {}, "name": "g1"}, "spec": {"size": 3}});
    let live = json!({"apiVersion": "demo.kapply.dev/v1", "kind": "Gadget",
        "metadata": {"name": "g1", "annotations": {LAST_APPLIED: annotation(&recorded)}},
        "spec": {"size": 3}});
    write(
        &d.join("live.json"),
        &json!({"apiVersion": "v1", "kind": "List", "items": [crd, live]}).to_string(),
    );
    write(
        &d.join("live-no-crd.json"),
        &serde_json::to_string(&live).unwrap(),
    );

    // The CRD among the live objects: cluster-scoped, matched, no namespace.
    let plan = json_out(&kapply(
        d,
        &["plan", "-f", "cfg", "--live", "live.json", "-o", "json"],
    ));
    let g = &plan["objects"][0];
    assert_eq!(g["namespace"], Value::Null, "{plan:#}");
    assert_eq!(g["action"], "update", "{plan:#}");
    assert_eq!(g["warnings"], json!([]), "{plan:#}");
    assert!(g["lastApplied"]["metadata"].get("namespace").is_none());
    assert_eq!(g["patch"]["body"]["spec"], json!({"size": 4}));
    let la = g["patch"]["body"]["metadata"]["annotations"][LAST_APPLIED]
        .as_str()
        .unwrap();
    assert!(!la.contains("namespace"), "{la}");

    // The CRD among the manifests does the same.
    write(&d.join("cfg/crd.json"), &crd.to_string());
    let plan = json_out(&kapply(
        d,
        &[
            "plan",
            "-f",
            "cfg",
            "--live",
            "live-no-crd.json",
            "-o",
            "json",
        ],
    ));
    let g = plan["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "Gadget")
        .unwrap();
    assert_eq!(g["namespace"], Value::Null, "{plan:#}");
    assert_eq!(g["action"], "update", "{plan:#}");
    assert_eq!(g["warnings"], json!([]), "{plan:#}");
    std::fs::remove_file(d.join("cfg/crd.json")).unwrap();

    // No CRD anywhere: planned as namespaced, and the plan says so.
    let out = kapply(d, &["diff", "-f", "cfg", "--live", "live-no-crd.json"]);
    out.assert_stdout("+ Gadget default/g1 (create)");
    out.assert_stdout(
        "warning: the scope of Gadget.demo.kapply.dev is unknown offline (no CustomResourceDefinition \
         for it among the manifests or the --live objects): planned as namespaced in \"default\"",
    );
}

/// The cluster-scoped kind of these tests.
fn gadget_crd() -> String {
    server::crd("t.kapply.dev", "Gadget", "Cluster")
}

/// g1 without a namespace, g2 with one written (which a cluster-scoped
/// object cannot have).
const GADGETS: &str = "\
apiVersion: t.kapply.dev/v1
kind: Gadget
metadata:
  name: g1
spec:
  size: 3
---
apiVersion: t.kapply.dev/v1
kind: Gadget
metadata:
  name: g2
  namespace: foo
spec:
  size: 4
";

/// The annotation of a Gadget, as kubectl 1.32 writes it for GADGETS:
/// without the namespace, written or from `-n`.
fn gadget_annotation(name: &str, size: u32) -> String {
    annotation(&json!({"apiVersion": "t.kapply.dev/v1", "kind": "Gadget",
        "metadata": {"annotations": {}, "name": name}, "spec": {"size": size}}))
}

/// A CRD of a cluster-scoped kind and objects of that kind, with and
/// without a namespace, in one apply with `-n`: while the kind is not
/// served the objects are refused by name and only the CRD is reported
/// created (kubectl 1.32 refuses them as well); once it is served they are
/// created cluster-scoped, sent without any namespace (kubectl sends none,
/// body or annotation), and nothing is left to change.
#[test]
fn custom_resources_of_a_cluster_scoped_crd_applied_with_it() {
    let c = Cluster::start();
    c.write("m/a-crd.yaml", &gadget_crd());
    c.write("m/b-gadgets.yaml", GADGETS);

    let first = c.kapply(&["apply", "-f", "m", "-n", "bar", "--yes"]);
    assert_eq!(first.code, Some(1), "{first:?}");
    assert_eq!(
        first.stdout, "CustomResourceDefinition gadgets.t.kapply.dev created\n",
        "{first:?}"
    );
    for g in ["g1", "g2"] {
        first.assert_stderr(&format!(
            "! error      Gadget {g}: Gadget.t.kapply.dev/v1 is not served by the cluster: \
             apply its CustomResourceDefinition first"
        ));
        assert!(c.get("t.kapply.dev/v1", "Gadget", None, g).is_none());
    }

    // The kind is served now.
    c.server.clear_requests();
    let second = c.kapply(&["apply", "-f", "m", "-n", "bar", "--yes"]);
    assert_eq!(second.code, Some(0), "{second:?}");
    second.assert_stdout("Gadget g1 created\n");
    second.assert_stdout("Gadget g2 created\n");
    let posts: Vec<_> = c
        .writes()
        .into_iter()
        .filter(|w| w.method == "POST" && !w.query.contains_key("dryRun"))
        .collect();
    assert_eq!(posts.len(), 2, "{posts:?}");
    for w in &posts {
        assert_eq!(w.path, "/apis/t.kapply.dev/v1/gadgets");
        let body = w.body.as_ref().unwrap();
        assert!(body["metadata"].get("namespace").is_none(), "{body}");
    }
    for (g, size) in [("g1", 3), ("g2", 4)] {
        let live = c.get("t.kapply.dev/v1", "Gadget", None, g).expect(g);
        assert!(live["metadata"].get("namespace").is_none(), "{live}");
        assert_eq!(
            live["metadata"]["annotations"][LAST_APPLIED],
            gadget_annotation(g, size)
        );
    }
    for args in [&["diff", "-f", "m", "-n", "bar"][..], &["diff", "-f", "m"]] {
        let diff = c.kapply(args);
        assert_eq!(diff.code, Some(0), "{args:?}: {diff:?}");
    }

    // Its CRD not among the manifests, a Gadget naming a namespace other
    // than -n: the cluster says cluster-scoped, so -n does not apply.
    let g3 = "apiVersion: t.kapply.dev/v1\nkind: Gadget\nmetadata:\n  name: g3\n  namespace: foo\n\
              spec:\n  size: 5\n";
    c.write("n/g3.yaml", g3);
    let out = c.kapply(&["apply", "-f", "n", "-n", "bar", "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    out.assert_stdout("Gadget g3 created\n");
    let live = c.get("t.kapply.dev/v1", "Gadget", None, "g3").unwrap();
    assert_eq!(
        live["metadata"]["annotations"][LAST_APPLIED],
        gadget_annotation("g3", 5)
    );
    // Offline, the CRD among the --live objects says so; without one the
    // kind is taken as namespaced, and -n refuses it.
    c.write("crd-live.yaml", &gadget_crd());
    c.write(
        "none.json",
        r#"{"apiVersion": "v1", "kind": "List", "items": []}"#,
    );
    let out = c.kapply(&["diff", "-f", "n", "-n", "bar", "--live", "crd-live.yaml"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stdout("+ Gadget g3 (create)  n/g3.yaml:1\n");
    let refused = "error: n/g3.yaml:5: Gadget foo/g3: the namespace from the provided object \
                   \"foo\" does not match the namespace \"bar\" given with -n";
    let out = c.kapply(&["diff", "-f", "n", "-n", "bar", "--live", "none.json"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    out.assert_stdout(refused);
    // A namespaced custom kind naming another namespace than -n: refused
    // by name and line against the cluster too, nothing written.
    let widget_crd = server::crd("t.kapply.dev", "Widget", "Namespaced");
    c.write("w/crd.yaml", &widget_crd);
    let out = c.kapply(&["apply", "-f", "w", "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    c.write("x/w.yaml", &g3.replace("Gadget", "Widget"));
    c.server.clear_requests();
    let out = c.kapply(&["apply", "-f", "x", "-n", "bar", "--yes"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stderr(
        "! error      Widget foo/g3: x/w.yaml:5: Widget foo/g3: the namespace from the provided \
         object \"foo\" does not match the namespace \"bar\" given with -n",
    );
    assert!(c.writes().is_empty(), "{:?}", c.writes());

    let Some(k) = Kubectl::find(&c.kubeconfig) else {
        return;
    };
    let d = run(&mut k.command(&["diff", "-f", "m", "-n", "bar"]));
    assert_eq!(d.code, Some(0), "kubectl diff after kapply apply: {d:?}");
    // kubectl on a cluster of its own: the same refusal, then the same objects.
    let theirs = Cluster::start();
    theirs.write("m/a-crd.yaml", &gadget_crd());
    theirs.write("m/b-gadgets.yaml", GADGETS);
    let k = Kubectl::new(k.bin, &theirs.kubeconfig);
    let first = run(&mut k.command(&["apply", "-f", "m", "-n", "bar"]));
    assert_eq!(first.code, Some(1), "{first:?}");
    assert!(
        theirs
            .get("t.kapply.dev/v1", "Gadget", None, "g1")
            .is_none()
    );
    k.ok(&["apply", "-f", "m", "-n", "bar"]);
    theirs.write("n/g3.yaml", g3);
    k.ok(&["apply", "-f", "n", "-n", "bar"]);
    theirs.write("w/crd.yaml", &widget_crd);
    k.ok(&["apply", "-f", "w"]);
    theirs.write("x/w.yaml", &g3.replace("Gadget", "Widget"));
    let out = run(&mut k.command(&["apply", "-f", "x", "-n", "bar"]));
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stderr("does not match the namespace \"bar\"");
    for (g, size) in [("g1", 3), ("g2", 4), ("g3", 5)] {
        let live = theirs.get("t.kapply.dev/v1", "Gadget", None, g).expect(g);
        assert_eq!(
            live["metadata"]["annotations"][LAST_APPLIED],
            gadget_annotation(g, size)
        );
    }
}

/// `--live` files without managedFields (`kubectl get -o json` hides
/// them): no kept field is said to be another writer's as if known. The
/// values the server gives unset fields are server defaults (without
/// saying when they were written), the rest have an unknown writer, and
/// the plan JSON, the piped diff and the terminal diff say so alike. With
/// managedFields the rows are those planned against the cluster.
#[test]
fn live_files_without_managed_fields_name_no_writer() {
    let c = Cluster::start();
    c.write(
        "m/ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  labels:\n    tier: web\n",
    );
    let out = c.kapply(&["apply", "-f", "m", "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    // Another writer's label, as `kubectl label` sends it.
    let (code, _) = c.server.api().request(
        "PATCH",
        "/api/v1/namespaces/team?fieldManager=kubectl-label",
        Some("application/merge-patch+json"),
        Some(&json!({"metadata": {"labels": {"owner": "me"}}})),
    );
    assert_eq!(code, 200);
    let (code, mut live) = c
        .server
        .api()
        .request("GET", "/api/v1/namespaces/team", None, None);
    assert_eq!(code, 200, "{live}");
    assert!(live["metadata"]["managedFields"].is_array(), "{live}");
    c.write("live-mf.json", &live.to_string());
    live["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    c.write("live.json", &live.to_string());

    let rows = |args: &[&str]| {
        let out = c.kapply(args);
        assert_eq!(out.code, Some(0), "{out:?}");
        json_out(&out)["objects"][0]["fields"].clone()
    };
    // With managedFields: what the cluster gives, owners named.
    let planned = rows(&["plan", "-f", "m", "-o", "json"]);
    assert_eq!(
        rows(&["plan", "-f", "m", "--live", "live-mf.json", "-o", "json"]),
        planned
    );
    let default_reason = "live only: defaulted by the server when apply wrote the object (not in \
                          config or last-applied)";
    assert_eq!(
        planned,
        json!([
            {"path": "metadata.labels[\"kubernetes.io/metadata.name\"]", "live": "team",
             "action": "keep", "reason": default_reason, "cause": "server-default"},
            {"path": "metadata.labels.owner", "live": "me", "action": "keep",
             "reason": "live only: owned by another writer, kubectl-label (not in config or \
                        last-applied)",
             "cause": "other-writer", "owner": "kubectl-label"},
            // No manager owns it (the server sets it as it stores a
            // Namespace, past its field manager, as kube-apiserver does).
            {"path": "spec.finalizers", "live": ["kubernetes"], "action": "keep",
             "reason": "live only: set by the server as it stored the object, owned by no \
                        writer (not in config or last-applied)",
             "cause": "server-default"},
        ])
    );

    // Without: no owner, no time of writing.
    let value_reason = "live only: the value the server gives this field when unset (not in config or last-applied)";
    let unknown_reason = "live only: writer unknown, the live object carries no managedFields (not \
                          in config or last-applied; `kubectl get --show-managed-fields -o json` \
                          shows the owners)";
    assert_eq!(
        rows(&["plan", "-f", "m", "--live", "live.json", "-o", "json"]),
        json!([
            {"path": "metadata.labels[\"kubernetes.io/metadata.name\"]", "live": "team",
             "action": "keep", "reason": value_reason, "cause": "server-default"},
            {"path": "metadata.labels.owner", "live": "me", "action": "keep",
             "reason": unknown_reason, "cause": "other-writer"},
            {"path": "spec.finalizers", "live": ["kubernetes"], "action": "keep",
             "reason": value_reason, "cause": "server-default"},
        ])
    );
    let piped = c.kapply(&["diff", "-f", "m", "--live", "live.json"]);
    assert_eq!(piped.code, Some(0), "{piped:?}");
    assert_eq!(
        piped.stdout,
        format!(
            "= Namespace team (unchanged)  m/ns.yaml:1\n\
             \x20   keep  metadata.labels[\"kubernetes.io/metadata.name\"]  last-applied: - | \
             live: \"team\" | config: -  ({value_reason})  [server-default]\n\
             \x20   keep  metadata.labels.owner  last-applied: - | live: \"me\" | config: -  \
             ({unknown_reason})  [other-writer]\n\
             \x20   keep  spec.finalizers  last-applied: - | live: [\"kubernetes\"] | config: -  \
             ({value_reason})  [server-default]\n"
        )
    );
    let cmd = format!("'{KAPPLY}' diff -f m --live live.json --show-kept");
    if let Some(tty) = on_tty(c.dir.path(), &cmd, true) {
        assert_eq!(tty.code, Some(0), "{tty:?}");
        assert_eq!(
            tty.stdout.replace("\r\n", "\n"),
            "= Namespace team  unchanged  m/ns.yaml:1\n\
             \x20 = metadata.labels[\"kubernetes.io/metadata.name\"]  server-default: defaulted by \
             the server; kept\n\
             \x20     \"team\" (kept)\n\
             \x20 = metadata.labels.owner  other-writer: writer unknown, the live object carries \
             no managedFields (`kubectl get --show-managed-fields -o json` shows the owners); kept\n\
             \x20     \"me\" (kept)\n\
             \x20 = spec.finalizers  server-default: defaulted by the server; kept\n\
             \x20     [\"kubernetes\"] (kept)\n"
        );
    }
}

/// Control characters from manifests (values, annotations, labels) and from
/// the server's messages never reach the terminal raw: `diff`, `plan` and
/// `apply` print them escaped (`\u{9b}`), JSON as `\u009b`.
#[test]
fn control_characters_are_escaped_in_every_output() {
    let c = Cluster::start();
    // YAML double quotes: \e is ESC, \x9b the C1 CSI, \x7f DEL, \a BEL.
    c.write(
        "m/fine.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fine\n  annotations:\n    \
         note: \"hi\\e]0;title\\a\\x9b31m\"\ndata:\n  k: \"v\\e[2J\\x9bK\\x7f\"\n",
    );
    // The server rejects the label and quotes it in its message.
    c.write(
        "m/evil.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: evil\n  labels:\n    \
         app: \"bad\\e[31m\\x9b2J\"\ndata:\n  k: \"\\x9b\"\n",
    );
    let raw = |s: &str| s.chars().any(|c| c.is_control() && c != '\n');
    let check = |out: &Out| {
        assert!(!raw(&out.stdout) && !raw(&out.stderr), "{:?}", out);
    };
    let diff = c.kapply(&["diff", "-f", "m"]);
    assert_eq!(diff.code, Some(1), "{diff:?}");
    check(&diff);
    diff.assert_stdout(r#"config: "v\u001b[2J\u{9b}K\u{7f}""#);
    for format in ["json", "yaml"] {
        let plan = c.kapply(&["plan", "-f", "m", "-o", format]);
        assert_eq!(plan.code, Some(0), "{plan:?}");
        check(&plan);
    }
    let plan = json_out(&c.kapply(&["plan", "-f", "m", "-o", "json"]));
    let fine = plan["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "fine")
        .unwrap();
    let k = fine["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "data.k")
        .unwrap_or_else(|| panic!("no data.k: {fine}"));
    assert_eq!(
        k["config"], "v\u{1b}[2J\u{9b}K\u{7f}",
        "the same value in JSON"
    );
    let apply = c.kapply(&["apply", "-f", "m", "--yes"]);
    assert_eq!(apply.code, Some(1), "{apply:?}");
    check(&apply);
    apply.assert_stdout("ConfigMap default/fine created");
    apply.assert_stderr(r#"Invalid value: "bad\u{1b}[31m\u{9b}2J""#);
    assert_eq!(
        c.configmap("default", "fine").unwrap()["data"]["k"],
        "v\u{1b}[2J\u{9b}K\u{7f}",
        "the value itself is applied as written"
    );
}

/// `kapply demo --no-tui` stops serving on SIGTERM, SIGHUP and SIGINT alike
/// (exit 0) and removes its temporary directory each time.
#[test]
fn demo_signals_remove_the_temporary_directory() {
    let dir = tempfile::tempdir().unwrap();
    for signal in ["TERM", "HUP", "INT"] {
        let kubeconfig = dir.path().join(format!("{signal}-kubeconfig"));
        let (mut reaper, banner) = start_demo(server::unused_port(), &kubeconfig, &[]);
        let manifests = banner
            .iter()
            .find_map(|l| l.strip_prefix("manifests:"))
            .map(|p| std::path::PathBuf::from(p.trim()))
            .unwrap_or_else(|| panic!("no manifests line: {banner:?}"));
        let tmp = manifests.parent().unwrap().to_path_buf();
        assert!(manifests.is_dir(), "{banner:?}");
        let mut child = reaper.0.take().unwrap();
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = child.wait().unwrap();
        assert!(status.success(), "kapply demo after SIG{signal}: {status}");
        assert!(!tmp.exists(), "SIG{signal} left {} behind", tmp.display());
    }
}

// ---------------------------------------------------------------------------
// Export: objects made with `kubectl create` brought under `kubectl apply`

/// spec/data/labels of a live object: what `kubectl apply` of an export must
/// leave unchanged (metadata the server owns may differ).
fn managed_content(obj: &Value) -> Value {
    let mut o = obj.clone();
    for k in ["status", "metadata"] {
        o.as_object_mut().unwrap().remove(k);
    }
    let mut ann = obj["metadata"]["annotations"].clone();
    if let Some(a) = ann.as_object_mut() {
        a.remove(LAST_APPLIED);
        if a.is_empty() {
            ann = Value::Null;
        }
    }
    json!({"body": o, "labels": obj["metadata"]["labels"], "annotations": ann})
}

/// `export -o` never replaces a file that exists (a hand-edited manifest)
/// unless `--force`, and writes a Secret's file owner-only (0600), new or
/// replaced.
#[test]
fn export_keeps_existing_files_and_writes_secrets_owner_only() {
    let c = Cluster::start();
    let store = c.server.store();
    store
        .put_object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cfg", "namespace": "default"}, "data": {"a": "1"}}))
        .unwrap();
    store
        .put_object(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "sec", "namespace": "default"},
            "data": {"password": "aHVudGVyMg=="}}))
        .unwrap();
    let edited = "# hand-edited\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n";
    c.write("out/configmap-cfg.yaml", edited);
    let out = c.kapply(&["export", "cm/cfg", "secret/sec", "-o", "out"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stderr(
        "error: cm/cfg: out/configmap-cfg.yaml exists; not overwritten (pass --force to replace it)",
    );
    assert_eq!(
        std::fs::read_to_string(c.path("out/configmap-cfg.yaml")).unwrap(),
        edited
    );
    // The other object is still exported, owner-only.
    let sec = c.path("out/secret-sec.yaml");
    assert!(
        std::fs::read_to_string(&sec)
            .unwrap()
            .contains("aHVudGVyMg==")
    );
    #[cfg(unix)]
    let mode = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    };
    #[cfg(unix)]
    assert_eq!(mode(&sec), 0o600);
    // Again: the Secret's file exists now too.
    let again = c.kapply(&["export", "secret/sec", "-o", "out"]);
    assert_eq!(again.code, Some(1), "{again:?}");
    again.assert_stderr("not overwritten (pass --force to replace it)");

    #[cfg(unix)]
    std::fs::set_permissions(&sec, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let forced = c.kapply(&["export", "cm/cfg", "secret/sec", "-o", "out", "--force"]);
    assert_eq!(forced.code, Some(0), "{forced:?}");
    let cfg = std::fs::read_to_string(c.path("out/configmap-cfg.yaml")).unwrap();
    assert!(
        !cfg.contains("hand-edited") && cfg.contains("a: \"1\""),
        "{cfg}"
    );
    #[cfg(unix)]
    {
        assert_eq!(mode(&sec), 0o600);
        assert_eq!(mode(&c.path("out/configmap-cfg.yaml")) & 0o600, 0o600);
    }
    // --force means nothing without -o.
    let refused = c.kapply(&["export", "cm/cfg", "--force"]);
    assert_eq!(refused.code, Some(2), "{refused:?}");
}

#[test]
fn export_then_kubectl_apply_changes_nothing_but_the_annotation() {
    let c = Cluster::start();
    let Some(k) = Kubectl::find(&c.kubeconfig) else {
        return;
    };
    k.ok(&[
        "create",
        "-f",
        &c.write(
            "crd.yaml",
            &std::fs::read_to_string("assets/demo/01-crd-widgets.yaml").unwrap(),
        ),
    ]);
    k.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=3",
    ]);
    // `kubectl create service|cronjob` send protobuf, which the embedded
    // server reads only for a few kinds: these are created from files.
    let svc = c.write(
        "svc.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n  ports:\n  - port: 80\n    targetPort: 8080\n",
    );
    k.ok(&["create", "-f", &svc]);
    k.ok(&["create", "configmap", "cfg", "--from-literal=a=1"]);
    k.ok(&[
        "create",
        "secret",
        "generic",
        "sec",
        "--from-literal=password=hunter2",
    ]);
    let cron = c.write(
        "cron.yaml",
        "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: tick\nspec:\n  schedule: '*/5 * * * *'\n  successfulJobsHistoryLimit: 5\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers:\n          - name: tick\n            image: busybox\n",
    );
    k.ok(&["create", "-f", &cron]);
    let sts = c.write(
        "sts.yaml",
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  serviceName: db\n  selector:\n    matchLabels: {app: db}\n  template:\n    metadata:\n      labels: {app: db}\n    spec:\n      containers:\n      - name: db\n        image: postgres:16\n",
    );
    k.ok(&["create", "-f", &sts]);
    let widget = c.write(
        "widget.yaml",
        "apiVersion: demo.kapply.dev/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 2\n  color: red\n",
    );
    k.ok(&["create", "-f", &widget]);

    let objects = [
        ("apps/v1", "Deployment", "deploy/web"),
        ("v1", "Service", "svc/web"),
        ("v1", "ConfigMap", "configmap/cfg"),
        ("v1", "Secret", "secret/sec"),
        ("batch/v1", "CronJob", "cronjobs/tick"),
        ("apps/v1", "StatefulSet", "sts/db"),
        ("demo.kapply.dev/v1", "Widget", "widget/w"),
    ];
    let get = |api: &str, kind: &str, name: &str| {
        c.get(api, kind, Some("default"), name)
            .unwrap_or_else(|| panic!("{kind}/{name} not found"))
    };
    let before: Vec<Value> = objects
        .iter()
        .map(|(api, kind, r)| get(api, kind, r.split_once('/').unwrap().1))
        .collect();
    for b in &before {
        assert!(b["metadata"]["annotations"][LAST_APPLIED].is_null(), "{b}");
    }

    // stdout: Secret values masked.
    let mut args: Vec<&str> = vec!["export"];
    args.extend(objects.iter().map(|o| o.2));
    let shown = c.kapply(&args);
    assert_eq!(shown.code, Some(0), "{shown:?}");
    assert!(!shown.stdout.contains("aHVudGVyMg=="), "{shown:?}");
    shown.assert_stdout("password: \"***\"");
    shown.assert_stderr("Secret values masked on stdout");
    assert!(!shown.stdout.contains("resourceVersion"), "{shown:?}");
    assert!(!shown.stdout.contains("revisionHistoryLimit"), "{shown:?}");

    // Files: clear values, clean metadata.
    args.extend(["-o", "exported"]);
    let out = c.kapply(&args);
    assert_eq!(out.code, Some(0), "{out:?}");
    out.assert_stderr("values written in clear to the file only");
    let dep = std::fs::read_to_string(c.path("exported/deployment-web.yaml")).unwrap();
    for gone in [
        "uid:",
        "resourceVersion",
        "managedFields",
        "status:",
        "creationTimestamp",
        "revisionHistoryLimit",
        "terminationMessagePath",
    ] {
        assert!(!dep.contains(gone), "{gone} in {dep}");
    }
    assert!(dep.contains("replicas: 3"), "{dep}");
    let sec = std::fs::read_to_string(c.path("exported/secret-sec.yaml")).unwrap();
    assert!(sec.contains("aHVudGVyMg=="), "{sec}");

    // Before kubectl applies them: each object's one change is the
    // annotation kubectl adds to an unannotated object, and the patch is
    // the one kubectl sends (Secret patches are masked in the plan).
    let plan = c.kapply(&["plan", "-f", "exported", "-o", "json"]);
    let plan: Value = serde_json::from_str(&plan.stdout).unwrap();
    let annotation_row = format!("metadata.annotations[\"{LAST_APPLIED}\"]");
    let mut planned = std::collections::BTreeMap::new();
    for o in plan["objects"].as_array().unwrap() {
        let changes: Vec<&Value> = o["fields"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["action"] != "keep")
            .collect();
        assert_eq!(changes.len(), 1, "{o}");
        assert_eq!(changes[0]["path"], annotation_row.as_str(), "{o}");
        assert_eq!(
            changes[0]["reason"],
            "adds the last-applied annotation (kubectl apply on an unannotated object)"
        );
        if o["kind"] != "Secret" {
            let plural = format!("{}s", o["kind"].as_str().unwrap().to_lowercase());
            let at = format!("/{plural}/{}", o["name"].as_str().unwrap());
            planned.insert(at, o["patch"]["body"].clone());
        }
    }
    let writes = c.writes().len();
    let applied = k.ok(&["apply", "-f", "exported"]);
    assert!(!applied.contains("created"), "{applied}");
    let sent: Vec<_> = c
        .writes()
        .into_iter()
        .skip(writes)
        .filter(|r| r.method == "PATCH")
        .collect();
    assert_eq!(sent.len(), objects.len(), "{sent:?}");
    for r in sent {
        let mut parts = r.path.rsplit('/');
        let (name, plural) = (parts.next().unwrap(), parts.next().unwrap());
        if let Some(body) = planned.remove(&format!("/{plural}/{name}")) {
            let mut theirs = r.body.clone().unwrap();
            // kapply adds the resourceVersion precondition.
            let mut ours = body;
            ours["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("resourceVersion");
            theirs["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("resourceVersion");
            assert_eq!(ours, theirs, "{}", r.path);
        }
    }
    assert!(planned.is_empty(), "not patched by kubectl: {planned:?}");
    for ((api, kind, r), b) in objects.iter().zip(&before) {
        let after = get(api, kind, r.split_once('/').unwrap().1);
        assert!(
            after["metadata"]["annotations"][LAST_APPLIED].is_string(),
            "{after}"
        );
        assert_eq!(
            managed_content(&after),
            managed_content(b),
            "{kind} changed by apply"
        );
    }
    // And kapply now sees them as managed and unchanged.
    let diff = c.kapply(&["diff", "-f", "exported"]);
    assert_eq!(diff.code, Some(0), "{diff:?}");

    // A bad name is an error naming it; the others are still exported.
    let bad = c.kapply(&["export", "nosuchkind/x", "cm/cfg"]);
    assert_eq!(bad.code, Some(1), "{bad:?}");
    bad.assert_stderr("nosuchkind/x");
    bad.assert_stdout("name: cfg");
}

// ---------------------------------------------------------------------------
// Release: a field handed from the config to another writer

fn release_deployment(name: &str, with_owned: bool) -> String {
    let (replicas, team) = if with_owned {
        ("  replicas: 2\n", "    team: a\n")
    } else {
        ("", "")
    };
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  labels:\n    app: {name}\n{team}\
         spec:\n{replicas}  selector:\n    matchLabels:\n      app: {name}\n  template:\n    metadata:\n      \
         labels:\n        app: {name}\n    spec:\n      containers:\n      - name: nginx\n        image: nginx:1.25\n"
    )
}

/// The PATCH requests that wrote `name`'s deployment.
fn patches_of(c: &Cluster, name: &str) -> Vec<kapply::server::RecordedRequest> {
    c.writes()
        .into_iter()
        .filter(|r| r.method == "PATCH" && r.path.ends_with(&format!("/deployments/{name}")))
        .collect()
}

#[test]
fn release_rewrites_last_applied_as_edit_last_applied_does_and_apply_leaves_the_field() {
    let c = Cluster::start();
    let Some(k) = Kubectl::find(&c.kubeconfig) else {
        return;
    };
    for name in ["web", "twin"] {
        let f = c.write(&format!("{name}.yaml"), &release_deployment(name, true));
        k.ok(&["apply", "-f", &f]);
        // Another writer takes replicas over.
        k.ok(&["scale", &format!("deploy/{name}"), "--replicas=5"]);
    }
    // The oracle: kubectl apply edit-last-applied, the two lines deleted by hand.
    let editor = c.write(
        "editor.sh",
        "#!/bin/sh\nsed -i -e '/^  replicas:/d' -e '/^    team:/d' \"$1\"\n",
    );
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    k.ok_env(
        &["apply", "edit-last-applied", "deploy/twin"],
        &[("KUBE_EDITOR", editor.as_str())],
    );

    // Without a terminal nor --yes: refused, nothing written.
    let before = patches_of(&c, "web").len();
    let asked = c.kapply(&["release", "deploy/web", "spec.replicas"]);
    assert_eq!(asked.code, Some(2), "{asked:?}");
    asked.assert_stderr("pass --yes");
    // --dry-run: shown, sent as a server dry run only.
    let dry = c.kapply(&[
        "release",
        "deploy/web",
        "spec.replicas",
        "metadata.labels.team",
        "--dry-run",
    ]);
    assert_eq!(dry.code, Some(0), "{dry:?}");
    dry.assert_stderr(
        "release      Deployment default/web spec.replicas: live value 5 stays; dropped from last-applied (was 2)",
    );
    dry.assert_stderr("(server dry run: nothing was written)");
    let sent = patches_of(&c, "web");
    assert_eq!(sent.len(), before + 1, "{sent:?}");
    assert_eq!(
        sent[before].query.get("dryRun").map(String::as_str),
        Some("All")
    );
    let la = |name: &str| {
        c.get("apps/v1", "Deployment", Some("default"), name)
            .unwrap()["metadata"]["annotations"][LAST_APPLIED]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(la("web").contains("\"replicas\":2"), "{}", la("web"));

    let out = c.kapply(&[
        "release",
        "deploy/web",
        "spec.replicas",
        "metadata.labels.team",
        "--yes",
    ]);
    assert_eq!(out.code, Some(0), "{out:?}");
    out.assert_stdout("Deployment default/web released spec.replicas, metadata.labels.team");

    // The same request as kubectl's (but the resourceVersion precondition),
    // and the same annotation.
    let theirs = patches_of(&c, "twin").pop().unwrap();
    let ours = patches_of(&c, "web").pop().unwrap();
    assert_eq!(ours.content_type, theirs.content_type);
    assert_eq!(ours.query, theirs.query);
    let mut body = ours.body.clone().unwrap();
    assert!(body["metadata"]["resourceVersion"].is_string(), "{body}");
    body["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    let twin = serde_json::to_string(&theirs.body.unwrap()).unwrap();
    assert_eq!(
        serde_json::to_string(&body).unwrap(),
        twin.replace("twin", "web")
    );
    assert_eq!(la("web"), la("twin").replace("twin", "web"));

    // kubectl: the config without the fields is in sync, and applying it
    // leaves the live values alone.
    let plain = c.write("web-released.yaml", &release_deployment("web", false));
    let diff = k.run(&["diff", "-f", &plain], &[]);
    assert_eq!(
        diff.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&diff.stdout)
    );
    k.ok(&["apply", "-f", &plain]);
    let live = c
        .get("apps/v1", "Deployment", Some("default"), "web")
        .unwrap();
    assert_eq!(live["spec"]["replicas"], 5, "{live}");
    assert_eq!(live["metadata"]["labels"]["team"], "a", "{live}");
}

#[test]
fn release_errors_name_the_object_and_mask_secrets() {
    let c = Cluster::start();
    let Some(k) = Kubectl::find(&c.kubeconfig) else {
        return;
    };
    let f = c.write("web.yaml", &release_deployment("web", true));
    k.ok(&["apply", "-f", &f]);
    k.ok(&["create", "configmap", "plain", "--from-literal=a=1"]);
    let sec = c.write(
        "sec.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: sec\ndata:\n  password: aHVudGVyMg==\n  user: YWRtaW4=\n",
    );
    k.ok(&["apply", "-f", &sec]);
    let writes = c.writes().len();

    let cases: [(&[&str], &str); 5] = [
        (
            &["release", "deploy/nope", "spec.replicas", "-y"],
            "error: deploy/nope: deployments.apps \"nope\" not found in namespace \"default\"",
        ),
        (
            &["release", "gadget/x", "spec.replicas", "-y"],
            "error: gadget/x: the server doesn't have a resource type \"gadget\"",
        ),
        (
            &["release", "deploy/web", "spec.paused", "-y"],
            "error: Deployment default/web: spec.paused is not in its last-applied configuration, so apply does not own it; fields there: metadata.annotations, metadata.labels.app, metadata.labels.team, spec.replicas,",
        ),
        (
            &["release", "cm/plain", "data.a", "-y"],
            "error: ConfigMap default/plain has no kubectl.kubernetes.io/last-applied-configuration annotation",
        ),
        (
            &["release", "deploy/web", "metadata.name", "-y"],
            "error: Deployment default/web: \"metadata.name\" names the object, not a field of it",
        ),
    ];
    for (args, want) in cases {
        let out = c.kapply(args);
        assert_eq!(out.code, Some(1), "{args:?}: {out:?}");
        out.assert_stderr(want);
    }
    assert_eq!(c.writes().len(), writes, "an error wrote something");

    let out = c.kapply(&["release", "secret/sec", "data.password", "-y"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    out.assert_stderr("data.password: live value *** stays; dropped from last-applied (was ***)");
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(
        !all.contains("aHVudGVyMg==") && !all.contains("hunter2"),
        "{out:?}"
    );
    let live = c.get("v1", "Secret", Some("default"), "sec").unwrap();
    assert_eq!(live["data"]["password"], "aHVudGVyMg==");
    let la = live["metadata"]["annotations"][LAST_APPLIED]
        .as_str()
        .unwrap();
    assert!(!la.contains("password") && la.contains("YWRtaW4="), "{la}");
}

/// A released field is another writer's from now on, not a server default:
/// its only owner is still apply's manager (the signature of a default),
/// but its value is not one the server gives. The words are the same in
/// `diff --show-kept` and the plan JSON; true defaults keep theirs.
#[test]
fn a_released_field_is_another_writers_not_a_server_default() {
    let c = Cluster::start();
    let with = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  \
                minReadySeconds: 5\n  selector:\n    matchLabels:\n      app: web\n  template:\n    \
                metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      \
                - name: nginx\n        image: nginx:1.25\n        readinessProbe:\n          \
                httpGet: {port: 80}\n";
    let f = c.write("web.yaml", with);
    let out = c.kapply(&["apply", "-f", &f, "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let out = c.kapply(&["release", "deploy/web", "spec.minReadySeconds", "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let f = c.write("web.yaml", &with.replace("  minReadySeconds: 5\n", ""));

    let diff = c.kapply(&["diff", "-f", &f, "--show-kept"]);
    assert_eq!(diff.code, Some(0), "{diff:?}");
    let line = |path: &str| {
        diff.stdout
            .lines()
            .find(|l| l.contains(&format!(" {path} ")))
            .unwrap_or_else(|| panic!("no {path} row: {diff:?}"))
            .to_string()
    };
    let released = line("spec.minReadySeconds");
    assert!(
        released.contains("(live only: released by apply (not in config or last-applied, not a server default): another writer's from now on)  [other-writer]"),
        "{released}"
    );
    for kept in [
        "spec.progressDeadlineSeconds",
        "spec.template.spec.containers[name=nginx].readinessProbe.periodSeconds",
        "spec.template.spec.containers[name=nginx].readinessProbe.httpGet.scheme",
    ] {
        let default = line(kept);
        assert!(default.contains("[server-default]"), "{default}");
    }

    let plan = c.kapply(&["plan", "-f", &f, "-o", "json"]);
    assert_eq!(plan.code, Some(0), "{plan:?}");
    let json: Value = serde_json::from_str(&plan.stdout).unwrap();
    let row = |path: &str| {
        json["objects"][0]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["path"] == path)
            .cloned()
            .unwrap_or_else(|| panic!("no {path} row: {json}"))
    };
    let r = row("spec.minReadySeconds");
    assert_eq!(r["cause"], "other-writer", "{r}");
    assert!(r.get("owner").is_none(), "{r}");
    assert_eq!(
        r["reason"],
        "live only: released by apply (not in config or last-applied, not a server default): \
         another writer's from now on"
    );
    assert_eq!(
        row("spec.progressDeadlineSeconds")["cause"],
        "server-default"
    );
    assert_eq!(
        row("spec.template.spec.containers[name=nginx].imagePullPolicy")["cause"],
        "server-default"
    );
}

/// `kapply export`: names resolve through the session's discovery cache
/// (one `/apis` however many objects), KIND/NAME is read as `release`
/// reads it, and a reader that goes away (`| head -1`) ends it quietly
/// with 141, as every other output.
#[test]
fn export_uses_cached_discovery_one_parser_and_ends_quietly_on_a_closed_pipe() {
    let c = Cluster::start();
    let big = "x".repeat(200 * 1024);
    let f = c.write(
        "cms.yaml",
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  k: {big}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: a\n---\n\
             apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    \
             matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    \
             spec:\n      containers:\n      - name: c\n        image: nginx:1.27\n"
        ),
    );
    let out = c.kapply(&["apply", "-f", &f, "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");

    c.server.clear_requests();
    let out = c.kapply(&[
        "export",
        "cm/a",
        "configmap/big",
        "deploy/web",
        "deployments.apps/web",
    ]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let gets: Vec<String> = c
        .server
        .requests()
        .into_iter()
        .filter(|r| {
            r.method == "GET"
                && (r.path == "/apis"
                    || r.path.starts_with("/apis/")
                    || r.path.starts_with("/api/"))
        })
        .filter(|r| !r.path.contains("/namespaces/"))
        .map(|r| r.path)
        .collect();
    let count = |p: &str| gets.iter().filter(|g| *g == p).count();
    assert_eq!(count("/apis"), 1, "{gets:?}");
    assert_eq!(count("/api/v1"), 1, "{gets:?}");
    assert_eq!(count("/apis/apps/v1"), 1, "{gets:?}");

    // The same KIND/NAME rules as release: no second `/`.
    for cmd in ["export", "release"] {
        let out =
            c.kapply(&[cmd, "cm/a/b", "data.k", "--yes"][..if cmd == "export" { 2 } else { 4 }]);
        assert_eq!(out.code, Some(1), "{cmd}: {out:?}");
        out.assert_stderr("error: cm/a/b: expected KIND/NAME, e.g. deployment/web");
    }

    // `| head -c 16`: far more than a pipe holds, the reader gone early.
    let mut child = Command::new(KAPPLY)
        .current_dir(c.dir.path())
        .args(["export", "cm/big", "cm/a", "--kubeconfig"])
        .arg(&c.kubeconfig)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

/// `diff --server-side` reads live state as the client-side diff does: one
/// LIST per (resource, namespace), no GET per object, and prints the
/// objects in manifest order whatever order the LISTs answer in; a kind
/// the server does not serve is an error line (exit 2), the rest still shown.
#[test]
fn server_side_diff_reads_by_list_and_keeps_manifest_order() {
    let c = Cluster::start();
    for ns in ["ns-a", "ns-b"] {
        c.write(
            &format!("m/{ns}.yaml"),
            &format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n"),
        );
    }
    let cm = |name: &str, ns: &str, v: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\ndata: {{k: \"{v}\"}}\n"
        )
    };
    // Interleaved across namespaces and kinds, so manifest order is not group order.
    let objects = [
        ("c1", "ns-b"),
        ("c2", "ns-a"),
        ("c3", "ns-b"),
        ("c4", "ns-a"),
    ];
    for (i, (name, ns)) in objects.iter().enumerate() {
        c.write(&format!("m/o{i}.yaml"), &cm(name, ns, "1"));
    }
    let o = c.kapply(&["apply", "--server-side", "--yes", "-f", "m"]);
    assert_eq!(o.code, Some(0), "{o:?}");
    std::fs::remove_dir_all(c.path("m")).unwrap();
    // c1 and c4 change, c2 and c3 do not, c5 is new; a kind not served.
    let mut all = String::new();
    for (name, ns) in objects {
        let v = if name == "c1" || name == "c4" {
            "2"
        } else {
            "1"
        };
        all.push_str(&cm(name, ns, v));
        all.push_str("---\n");
    }
    all.push_str(&cm("c5", "ns-a", "1"));
    all.push_str("---\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: ns-a\n---\n");
    all.push_str(&cm("c6", "ns-b", "1"));
    c.write("m/all.yaml", &all);
    c.server.clear_requests();
    let o = c.kapply(&["diff", "--server-side", "-f", "m"]);
    assert_eq!(o.code, Some(2), "{o:?}");
    let headers: Vec<&str> = o.stdout.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(
        headers,
        vec![
            "~ ConfigMap ns-b/c1  update (server-side as \"kubectl\")",
            "= ConfigMap ns-a/c2  unchanged (server-side as \"kubectl\")",
            "= ConfigMap ns-b/c3  unchanged (server-side as \"kubectl\")",
            "~ ConfigMap ns-a/c4  update (server-side as \"kubectl\")",
            "+ ConfigMap ns-a/c5  create (server-side as \"kubectl\")",
            "+ ConfigMap ns-b/c6  create (server-side as \"kubectl\")",
        ],
        "{o:?}"
    );
    o.assert_stdout("  set       data.k  \"1\" → \"2\"  owners: kubectl → kubectl");
    o.assert_stderr("error: Widget ns-a/w:");
    let reads: Vec<String> = c
        .server
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.contains("/namespaces/"))
        .map(|r| r.path.clone())
        .collect();
    let mut lists = reads.clone();
    lists.sort();
    assert_eq!(
        lists,
        vec![
            "/api/v1/namespaces/ns-a/configmaps",
            "/api/v1/namespaces/ns-b/configmaps"
        ],
        "one LIST per namespace, no GET per object: {reads:?}"
    );
    // The plan says the same, in the same order.
    let plan = json_out(&c.kapply(&["plan", "--server-side", "-f", "m", "-o", "json"]));
    let names: Vec<&str> = plan["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["c1", "c2", "c3", "c4", "c5", "c6"], "{plan}");
}

/// `diff --server-side --live` settles its objects as the client-side
/// offline diff does: `-n` is checked (an object naming another namespace
/// is an error, exit 2, the others still shown), a custom kind's scope
/// comes from a CustomResourceDefinition among the manifests, and a guessed
/// scope is warned about.
#[test]
fn server_side_offline_diff_checks_namespace_and_custom_scopes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        &d.join("m/objects.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: here\n  namespace: ns-a\ndata: {k: v}\n\
         ---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: there\n  namespace: ns-b\ndata: {k: v}\n\
         ---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: globals.example.com\n\
         spec:\n  group: example.com\n  scope: Cluster\n  names: {kind: Global, plural: globals}\n  versions: [{name: v1, served: true, storage: true}]\n\
         ---\napiVersion: example.com/v1\nkind: Global\nmetadata:\n  name: g\nspec: {x: 1}\n\
         ---\napiVersion: other.example.com/v1\nkind: Unknown\nmetadata:\n  name: u\nspec: {x: 1}\n",
    );
    write(
        &d.join("live.yaml"),
        "apiVersion: v1\nkind: List\nitems: []\n",
    );
    let out = kapply(
        d,
        &[
            "diff",
            "--server-side",
            "-f",
            "m",
            "--live",
            "live.yaml",
            "-n",
            "ns-a",
        ],
    );
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr.contains("error: ") && out.stderr.contains("ns-b"),
        "the -n mismatch is an error: {out:?}"
    );
    assert!(!out.stdout.contains("ns-b/there"), "{out:?}");
    out.assert_stdout("+ ConfigMap ns-a/here  create");
    // Cluster-scoped from the CRD among the manifests: no namespace.
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("+ Global g  create")),
        "{out:?}"
    );
    assert!(
        out.stderr.contains("warning: ")
            && out
                .stderr
                .contains("the scope of Unknown.other.example.com is unknown offline"),
        "{out:?}"
    );
    assert!(
        !out.stderr.contains("scope of Global"),
        "a known scope is not warned about: {out:?}"
    );
}
