//! `kapply apply --server-side` against kubectl `apply --server-side`: the
//! same history in two namespaces, one driven by kubectl, one by kapply,
//! the objects (managedFields included) compared after every step, and
//! the exit codes and error words. Against the real kube-apiserver of
//! `scripts/real-apiserver` (`KAPPLY_REAL_APISERVER_KUBECONFIG`; kubectl
//! 1.33 when installed beside 1.32) and against the embedded server, where
//! the requests themselves are compared too.
//!
//! Without kubectl or the real server these tests skip, unless `KAPPLY_CI`
//! is set: then they fail.

#[path = "common/decisions.rs"]
mod decisions;
#[path = "common/kubectl.rs"]
mod kubectl;
#[path = "common/out.rs"]
mod out;
#[path = "common/real.rs"]
mod real;
#[path = "common/server.rs"]
mod server;

use kubectl::Kubectl;
use out::{Out, run};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const KUBECTL_133: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33";

const V1: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        env:
        - {name: A, value: \"1\"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  a: \"1\"
  b: \"2\"
";

/// V1 with a new image, the env var and the ConfigMap's `b` dropped.
const V2: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.26
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  a: \"1\"
";

/// A second manager's view of the ConfigMap: `a` with another value.
const OTHER_CONFLICTING: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  a: \"9\"
";

/// A second manager's view of the ConfigMap: a key of its own.
const OTHER: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  c: \"3\"
";

/// kubectl 1.33 where found (within the skew of the 1.34 server), else
/// the PATH's.
fn reference_kubectl() -> Option<String> {
    if Path::new(KUBECTL_133).exists() {
        Some(KUBECTL_133.to_string())
    } else {
        kubectl::kubectl()
    }
}

/// A scratch dir holding a copy of `kubeconfig` (kubectl keeps its cache
/// beside its kubeconfig) and kubectl `bin` on that copy.
fn scratch(kubeconfig: &Path, bin: String) -> (tempfile::TempDir, std::path::PathBuf, Kubectl) {
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    std::fs::copy(kubeconfig, &kc).unwrap();
    let k = Kubectl::new(bin, &kc);
    (dir, kc, k)
}

/// kubectl (the reference) on a copy of the real server's kubeconfig in a
/// scratch dir ([`scratch`]); `None`: no real server or no kubectl (skip).
fn real_scratch() -> Option<(tempfile::TempDir, PathBuf, Kubectl)> {
    let kubeconfig = real::kubeconfig()?;
    let bin = reference_kubectl()?;
    Some(scratch(&kubeconfig, bin))
}

/// `history` by kubectl and by kapply on the real server, each in a
/// namespace of its own named after `prefix` (`PREFIX-k-…`, `PREFIX-a-…`).
fn on_the_real_server(prefix: &str, history: fn(&Sides)) {
    let Some((dir, kc, k)) = real_scratch() else {
        return;
    };
    let (ns_k, ns_a) = (format!("{prefix}-k"), format!("{prefix}-a"));
    history(&Sides::new(
        &k,
        &kc,
        dir.path(),
        real::unique(&ns_k),
        real::unique(&ns_a),
    ));
}

/// `history` by kubectl and by kapply on an embedded server, in namespaces
/// `PREFIX-k` and `PREFIX-a`; the server after it, for what it was sent
/// (`None`: no kubectl, skipped).
fn on_an_embedded_server(prefix: &str, history: fn(&Sides)) -> Option<server::Cluster> {
    let bin = kubectl::kubectl()?;
    let c = server::Cluster::start();
    let k = Kubectl::new(bin, &c.kubeconfig);
    let (ns_k, ns_a) = (format!("{prefix}-k"), format!("{prefix}-a"));
    history(&Sides::new(&k, &c.kubeconfig, c.dir.path(), ns_k, ns_a));
    Some(c)
}

struct Sides<'a> {
    kubectl: &'a Kubectl,
    kubeconfig: &'a Path,
    dir: &'a Path,
    ns_k: String,
    ns_a: String,
}

impl<'a> Sides<'a> {
    fn new(
        kubectl: &'a Kubectl,
        kubeconfig: &'a Path,
        dir: &'a Path,
        ns_k: String,
        ns_a: String,
    ) -> Sides<'a> {
        Sides {
            kubectl,
            kubeconfig,
            dir,
            ns_k,
            ns_a,
        }
    }

    fn file(&self, name: &str, text: &str) -> String {
        let p = self.dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }

    fn kapply(&self, args: &[&str]) -> Out {
        run(Command::new(env!("CARGO_BIN_EXE_kapply"))
            .args(args)
            .arg("--kubeconfig")
            .arg(self.kubeconfig)
            .env_remove("KUBECONFIG"))
    }

    fn kubectl(&self, args: &[&str]) -> Out {
        run(&mut self.kubectl.command(args))
    }

    /// `apply --server-side -f FILE ARGS` by kubectl in one namespace and
    /// by kapply (with `--yes`) in the other: both outcomes.
    fn apply(&self, file: &str, args: &[&str]) -> (Out, Out) {
        let mut k = vec!["apply", "--server-side", "-n", &self.ns_k, "-f", file];
        k.extend_from_slice(args);
        let mut a = vec![
            "apply",
            "--server-side",
            "--yes",
            "-n",
            &self.ns_a,
            "-f",
            file,
        ];
        a.extend_from_slice(args);
        (self.kubectl(&k), self.kapply(&a))
    }

    /// The same command run by kubectl in both namespaces.
    fn both(&self, args: &[&str]) {
        for ns in [&self.ns_k, &self.ns_a] {
            let mut full = args.to_vec();
            full.extend(["-n", ns.as_str()]);
            let o = self.kubectl(&full);
            assert_eq!(o.code, Some(0), "{full:?}: {o:?}");
        }
    }

    fn get(&self, ns: &str, what: &str) -> Value {
        let o = self.kubectl(&["get", what, "-n", ns, "-o", "json", "--show-managed-fields"]);
        assert_eq!(o.code, Some(0), "get {what}: {o:?}");
        normalize(&serde_json::from_str(&o.stdout).unwrap(), ns)
    }

    /// Both namespaces hold the same objects, managedFields included.
    fn same_objects(&self, step: &str) {
        for what in ["deployment/web", "configmap/cfg"] {
            let k = self.get(&self.ns_k, what);
            let a = self.get(&self.ns_a, what);
            assert_eq!(
                a, k,
                "{step}: {what} differs (kapply left, kubectl right):\nkapply:  {a}\nkubectl: {k}"
            );
        }
    }
}

/// What differs between equal histories in two namespaces dropped: uid,
/// resourceVersion, times, status (controllers), the namespace's name.
fn normalize(obj: &Value, ns: &str) -> Value {
    let mut obj = obj.clone();
    if let Some(m) = obj.as_object_mut() {
        m.remove("status");
    }
    if let Some(meta) = obj["metadata"].as_object_mut() {
        for key in ["uid", "resourceVersion", "creationTimestamp", "generation"] {
            meta.remove(key);
        }
        if let Some(Value::Array(entries)) = meta.get_mut("managedFields") {
            // Status writers (controllers) are not part of the history.
            entries.retain(|e| e["subresource"] != "status");
            for e in entries.iter_mut() {
                if let Some(e) = e.as_object_mut() {
                    e.remove("time");
                }
            }
        }
        if let Some(Value::Object(ann)) = meta.get_mut("annotations") {
            ann.remove("deployment.kubernetes.io/revision");
            if ann.is_empty() {
                meta.remove("annotations");
            }
        }
    }
    serde_json::from_str(&obj.to_string().replace(ns, "NS")).unwrap()
}

/// kapply's error lines name the object (`error: Deployment NS/web: ...`),
/// kubectl's do not: the rest must be kubectl's words.
fn same_error(k: &Out, a: &Out, object: &str, step: &str) {
    assert_eq!(k.code, Some(1), "{step}: kubectl {k:?}");
    assert_eq!(a.code, Some(1), "{step}: kapply {a:?}");
    let theirs = k.stderr.trim_end();
    let ours = a
        .stderr
        .replacen(&format!("error: {object}: "), "error: ", 1);
    assert_eq!(
        ours.trim_end(),
        theirs,
        "{step}: kapply's words differ from kubectl's"
    );
}

/// The history, both sides (the client-side applies before it by kubectl
/// in both namespaces).
fn history(s: &Sides) {
    let v1 = s.file("v1.yaml", V1);
    let v2 = s.file("v2.yaml", V2);
    let other_conflicting = s.file("other-conflicting.yaml", OTHER_CONFLICTING);
    let other = s.file("other.yaml", OTHER);
    for ns in [&s.ns_k, &s.ns_a] {
        let o = s.kubectl(&["create", "namespace", ns]);
        assert_eq!(o.code, Some(0), "{o:?}");
    }
    // Client-side first (kubectl in both): the objects a team moves over.
    s.both(&["apply", "-f", &v1]);
    s.same_objects("client-side apply");

    // 1. The move to server-side: kubectl migrates the client-side
    //    manager's fields, so the dropped env var and key go.
    let (k, a) = s.apply(&v2, &[]);
    assert_eq!(k.code, Some(0), "{k:?}");
    assert_eq!(a.code, Some(0), "{a:?}");
    assert_eq!(
        a.stdout,
        format!(
            "Deployment {ns}/web serverside-applied\nConfigMap {ns}/cfg serverside-applied\n",
            ns = s.ns_a
        )
    );
    s.same_objects("first server-side apply (migration)");
    let cm = s.get(&s.ns_a, "configmap/cfg");
    assert_eq!(cm["data"], serde_json::json!({"a": "1"}), "b released");

    // 2. Another writer scales: the next apply conflicts on replicas.
    s.both(&["scale", "deployment/web", "--replicas=5"]);
    let (k, a) = s.apply(&v2, &[]);
    same_error(&k, &a, &format!("Deployment {}/web", s.ns_a), "conflict");
    assert!(a.stderr.contains(".spec.replicas"), "{a:?}");
    s.same_objects("conflict");

    // 3. A forced server dry run writes nothing.
    let (k, a) = s.apply(&v2, &["--force-conflicts", "--dry-run=server"]);
    assert_eq!((k.code, a.code), (Some(0), Some(0)), "{k:?}\n{a:?}");
    a.assert_stdout("serverside-applied (server dry run)");
    s.same_objects("forced dry run");
    assert_eq!(s.get(&s.ns_a, "deployment/web")["spec"]["replicas"], 5);

    // 4. Forced: replicas taken back.
    let (k, a) = s.apply(&v2, &["--force-conflicts"]);
    assert_eq!((k.code, a.code), (Some(0), Some(0)), "{k:?}\n{a:?}");
    s.same_objects("forced");
    assert_eq!(s.get(&s.ns_a, "deployment/web")["spec"]["replicas"], 2);

    // 5. A second manager: a conflict on a value kubectl's manager owns,
    //    then a key of its own beside it.
    let (k, a) = s.apply(&other_conflicting, &["--field-manager=second"]);
    same_error(
        &k,
        &a,
        &format!("ConfigMap {}/cfg", s.ns_a),
        "second manager conflict",
    );
    let (k, a) = s.apply(&other, &["--field-manager=second"]);
    assert_eq!((k.code, a.code), (Some(0), Some(0)), "{k:?}\n{a:?}");
    s.same_objects("second manager");
    let cm = s.get(&s.ns_a, "configmap/cfg");
    assert_eq!(cm["data"], serde_json::json!({"a": "1", "c": "3"}));
}

#[test]
fn same_history_as_kubectl_on_the_real_server() {
    on_the_real_server("ssa", history);
}

#[test]
fn same_history_and_requests_as_kubectl_on_the_embedded_server() {
    let Some(c) = on_an_embedded_server("ssa", history) else {
        return;
    };
    // The writes each side sent, in order, namespace names aside: the same
    // requests (method, path, query, content type, body).
    let writes = |ns: &str| -> Vec<Value> {
        c.writes()
            .into_iter()
            .filter(|r| r.path.contains(&format!("/namespaces/{ns}/")))
            .filter(|r| r.query.contains_key("fieldManager") && r.method == "PATCH")
            .filter(|r| {
                r.content_type
                    .as_deref()
                    .is_some_and(|t| t.contains("apply-patch") || t.contains("json-patch"))
            })
            .map(|r| {
                let v = serde_json::json!({
                    "method": r.method, "path": r.path, "query": r.query,
                    "type": r.content_type, "body": r.body,
                });
                let mut v = normalize(&v, ns);
                // The migration patch carries resourceVersions and times.
                if let Some(ops) = v["body"].as_array_mut() {
                    for op in ops.iter_mut() {
                        if op["path"] == "/metadata/resourceVersion" {
                            op["value"] = Value::Null;
                        }
                        if let Some(entries) = op["value"].as_array_mut() {
                            for e in entries {
                                if let Some(e) = e.as_object_mut() {
                                    e.remove("time");
                                }
                            }
                        }
                    }
                }
                v
            })
            .collect()
    };
    // Per object, in order (kapply sends different objects at once).
    let by_object = |mut w: Vec<Value>| {
        w.sort_by_key(|r| r["path"].to_string());
        w
    };
    let (k, a) = (by_object(writes("ssa-k")), by_object(writes("ssa-a")));
    assert!(
        a.iter().any(|w| w["type"] == "application/json-patch+json"),
        "the migration was sent: {a:#?}"
    );
    assert_eq!(a, k, "kapply's requests (left) differ from kubectl's");
}

/// The value at a kapply field path (`data.a`,
/// `spec.template.spec.containers[name=web].image`) of an object.
fn at<'v>(obj: &'v Value, path: &str) -> Option<&'v Value> {
    let mut cur = obj;
    for seg in path.split('.') {
        let (name, key) = match seg.split_once('[') {
            Some((n, k)) => (n, Some(k.trim_end_matches(']'))),
            None => (seg, None),
        };
        cur = cur.get(name)?;
        if let Some(k) = key {
            // `[name=web]`, or several key fields: `[port=80,protocol=TCP]`.
            let pairs: Vec<(&str, &str)> = k.split(',').filter_map(|p| p.split_once('=')).collect();
            cur = cur.as_array()?.iter().find(|i| {
                !pairs.is_empty()
                    && pairs.iter().all(|(f, v)| {
                        i[f].as_str() == Some(v)
                            || serde_json::to_string(&i[f]).ok().as_deref() == Some(v)
                    })
            })?;
        }
    }
    Some(cur)
}

/// The server's spelling of a field in a conflict (`.spec.containers[name="web"].image`).
fn server_path(path: &str) -> String {
    let mut out = format!(".{path}");
    while let Some(start) = out.find("[") {
        let Some(end) = out[start..].find(']').map(|e| start + e) else {
            break;
        };
        let inner = &out[start + 1..end];
        let mut pairs = Vec::new();
        for pair in inner.split(',') {
            let Some((k, v)) = pair.split_once('=') else {
                break;
            };
            let quoted = if v.parse::<f64>().is_ok() {
                v.to_string()
            } else {
                format!("\"{v}\"")
            };
            pairs.push(format!("{k}={quoted}"));
        }
        if pairs.is_empty() {
            break;
        }
        out = format!(
            "{}{{{}}}{}",
            &out[..start],
            pairs.join(","),
            &out[end + 1..]
        );
    }
    out.replace('{', "[").replace('}', "]")
}

/// The local per-field plan against the real server's dry run of the same
/// apply: the conflicts it predicts are the server's (count and fields),
/// and forced, each `set`/`take` field has the config's value in the
/// server's answer, each `remove` field is gone and each `keep` field
/// stays as it was.
#[test]
fn local_server_side_plan_agrees_with_the_real_servers_dry_run() {
    let Some((dir, kc, k)) = real_scratch() else {
        return;
    };
    let s = Sides::new(&k, &kc, dir.path(), real::unique("ssa-p"), String::new());
    let ns = s.ns_k.clone();
    assert_eq!(s.kubectl(&["create", "namespace", &ns]).code, Some(0));
    let first = s.file("first.yaml", V1);
    let o = s.kapply(&["apply", "--server-side", "--yes", "-n", &ns, "-f", &first]);
    assert_eq!(o.code, Some(0), "{o:?}");
    // Other writers: a scale, a set image (client-side, kubectl-set), a
    // second server-side manager sharing a key and owning one.
    for args in [
        vec!["scale", "deployment/web", "--replicas=5"],
        vec!["set", "image", "deployment/web", "web=nginx:1.27"],
    ] {
        let mut full = args.clone();
        full.extend(["-n", ns.as_str()]);
        assert_eq!(s.kubectl(&full).code, Some(0), "{full:?}");
    }
    let second = s.file(
        "second.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  b: \"2\"\n  c: \"3\"\n",
    );
    let o = s.kubectl(&[
        "apply",
        "--server-side",
        "--field-manager=second",
        "-n",
        &ns,
        "-f",
        &second,
    ]);
    assert_eq!(o.code, Some(0), "{o:?}");
    // The next config: new image and replicas (conflicts), env and data.b
    // dropped (remove; keep for b, which the second manager owns too), a
    // new label, data.a changed; and a ConfigMap that does not exist yet.
    let next = s.file(
        "next.yaml",
        &format!(
            "{}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fresh\ndata:\n  x: \"1\"\n",
            V2.replace("nginx:1.26", "nginx:1.28")
                .replace("replicas: 2", "replicas: 3")
                .replace(
                    "labels: {app: web}\n    spec:",
                    "labels: {app: web, tier: front}\n    spec:"
                )
                .replace("  a: \"1\"", "  a: \"5\"")
        ),
    );
    let plan = |force: bool| -> Value {
        let mut args = vec!["plan", "--server-side", "-n", &ns, "-f", &next];
        if force {
            args.push("--force-conflicts");
        }
        let o = s.kapply(&args);
        assert_eq!(o.code, Some(0), "{o:?}");
        serde_json::from_str(&o.stdout).unwrap()
    };
    let rows_of = |plan: &Value, name: &str| -> Vec<Value> {
        plan["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name)
            .unwrap_or_else(|| panic!("{name} not in {plan}"))["fields"]
            .as_array()
            .unwrap()
            .clone()
    };
    let actions = |rows: &[Value]| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = rows
            .iter()
            .map(|r| {
                (
                    r["path"].as_str().unwrap().to_string(),
                    r["action"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        v.sort();
        v
    };
    // Not forced: exactly the server's conflicts.
    let unforced = plan(false);
    let web = rows_of(&unforced, "web");
    let conflicts: Vec<&Value> = web.iter().filter(|r| r["action"] == "conflict").collect();
    let o = s.kubectl(&[
        "apply",
        "--server-side",
        "--dry-run=server",
        "-n",
        &ns,
        "-f",
        &next,
    ]);
    assert_eq!(o.code, Some(1), "{o:?}");
    assert!(
        o.stderr
            .contains(&format!("Apply failed with {} conflict", conflicts.len())),
        "predicted {conflicts:?}; the server: {o:?}"
    );
    for c in &conflicts {
        let p = server_path(c["path"].as_str().unwrap());
        assert!(
            o.stderr.contains(&p),
            "{p} not among the server's conflicts: {o:?}"
        );
    }
    let (env, rest): (Vec<_>, Vec<_>) = actions(&web)
        .into_iter()
        .partition(|(p, _)| p.contains("].env"));
    assert_eq!(
        rest,
        vec![
            ("spec.replicas".to_string(), "conflict".to_string()),
            (
                "spec.template.metadata.labels.tier".to_string(),
                "set".to_string()
            ),
            (
                "spec.template.spec.containers[name=web].image".to_string(),
                "conflict".to_string()
            ),
        ],
        "{web:#?}"
    );
    assert!(
        !env.is_empty() && env.iter().all(|(_, a)| a == "remove"),
        "{env:?}"
    );
    assert!(
        web.iter()
            .any(|r| r["path"].as_str().unwrap().contains(".env") && r["action"] == "remove"),
        "{web:#?}"
    );
    assert_eq!(
        actions(&rows_of(&unforced, "cfg")),
        vec![
            ("data.a".to_string(), "set".to_string()),
            ("data.b".to_string(), "keep".to_string()),
        ]
    );
    // The diff says the same, one line per field, and exits 1.
    let o = s.kapply(&["diff", "--server-side", "-n", &ns, "-f", &next]);
    assert_eq!(o.code, Some(1), "{o:?}");
    o.assert_stdout(&format!(
        "~ Deployment {ns}/web  update (server-side as \"kubectl\")"
    ));
    // (kubectl names its scale's manager after its binary: kubectl.1.33.)
    o.assert_stdout("  conflict  spec.replicas  5 → 3  owners: kubectl");
    o.assert_stdout("  keep      data.b  \"2\" → (none)  owners: kubectl, second → second");
    o.assert_stdout(&format!("+ ConfigMap {ns}/fresh  create"));
    // Forced: the server's answer holds what the plan says.
    let forced = plan(true);
    let o = s.kubectl(&[
        "apply",
        "--server-side",
        "--dry-run=server",
        "--force-conflicts",
        "-n",
        &ns,
        "-f",
        &next,
        "-o",
        "json",
    ]);
    assert_eq!(o.code, Some(0), "{o:?}");
    let answer: Value = serde_json::from_str(&o.stdout).unwrap();
    let items = answer["items"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| vec![answer.clone()]);
    for name in ["web", "cfg", "fresh"] {
        let obj = items
            .iter()
            .find(|i| i["metadata"]["name"] == name)
            .expect("in the answer");
        let live = if name == "fresh" {
            Value::Null
        } else {
            s.get(
                &ns,
                &format!("{}/{name}", obj["kind"].as_str().unwrap().to_lowercase()),
            )
        };
        let rows = rows_of(&forced, name);
        assert!(!rows.iter().any(|r| r["action"] == "conflict"), "{rows:#?}");
        for r in &rows {
            let p = r["path"].as_str().unwrap();
            match r["action"].as_str().unwrap() {
                "set" | "take" => assert_eq!(at(obj, p), Some(&r["config"]), "{name} {p}"),
                "remove" => assert_eq!(at(obj, p), None, "{name} {p}: removed"),
                "keep" => assert_eq!(at(obj, p), at(&live, p), "{name} {p}: kept"),
                a => panic!("{a}"),
            }
        }
    }
    assert!(
        rows_of(&forced, "fresh")
            .iter()
            .all(|r| r["action"] == "set")
    );
}

/// The migration view (`plan --server-side` on objects last applied
/// client-side) against what kubectl 1.33's `apply --server-side` then
/// does on the real server: the client-side manager's fields the config
/// keeps move to kubectl (`migrate`), a changed one is taken (the server
/// lets kubectl's manager override the client-side manager while the
/// last-applied values are current), the dropped env var goes (`remove`),
/// and a dropped key another writer changed since stays for ever
/// (`stuck`: client-side apply would have deleted it).
#[test]
fn migration_view_agrees_with_kubectls_migration_on_the_real_server() {
    let Some((dir, kc, k)) = real_scratch() else {
        return;
    };
    let s = Sides::new(&k, &kc, dir.path(), real::unique("ssa-m"), String::new());
    let ns = s.ns_k.clone();
    let v1 = s.file("v1.yaml", V1);
    let v2 = s.file("v2.yaml", V2);
    for args in [
        vec!["create", "namespace", ns.as_str()],
        vec!["apply", "-n", &ns, "-f", &v1],
        vec![
            "patch",
            "-n",
            &ns,
            "configmap/cfg",
            "--type=merge",
            "-p",
            "{\"data\":{\"b\":\"7\"}}",
        ],
    ] {
        let o = s.kubectl(&args);
        assert_eq!(o.code, Some(0), "{args:?}: {o:?}");
    }
    let o = s.kapply(&["plan", "--server-side", "-n", &ns, "-f", &v2]);
    assert_eq!(o.code, Some(0), "{o:?}");
    let plan: Value = serde_json::from_str(&o.stdout).unwrap();
    let rows = |name: &str| -> Vec<Value> {
        plan["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name)
            .unwrap_or_else(|| panic!("{name} not in {plan}"))["fields"]
            .as_array()
            .unwrap()
            .clone()
    };
    let actions = |rows: &[Value]| -> Vec<(String, String)> {
        rows.iter()
            .map(|r| {
                (
                    r["path"].as_str().unwrap().to_string(),
                    r["action"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let cfg = rows("cfg");
    assert_eq!(
        actions(&cfg),
        vec![
            ("data.a".to_string(), "migrate".to_string()),
            ("data.b".to_string(), "stuck".to_string()),
        ]
    );
    assert_eq!(
        cfg[0]["owners"],
        serde_json::json!(["kubectl-client-side-apply"])
    );
    assert_eq!(cfg[0]["ownersAfter"], serde_json::json!(["kubectl"]));
    assert_eq!(cfg[1]["ownersAfter"], serde_json::json!(["kubectl-patch"]));
    let web = rows("web");
    let of = |action: &str| -> Vec<String> {
        actions(&web)
            .into_iter()
            .filter(|(_, a)| a == action)
            .map(|(p, _)| p)
            .collect()
    };
    assert_eq!(
        of("take"),
        vec!["spec.template.spec.containers[name=web].image"]
    );
    assert!(of("conflict").is_empty(), "{web:#?}");
    assert!(
        of("migrate").contains(&"spec.replicas".to_string()),
        "{web:#?}"
    );
    assert!(
        !of("remove").is_empty() && of("remove").iter().all(|p| p.contains("].env[name=A]")),
        "{web:#?}"
    );
    let o = s.kapply(&["diff", "--server-side", "-n", &ns, "-f", &v2]);
    assert_eq!(o.code, Some(1), "{o:?}");
    o.assert_stdout("  stuck     data.b  \"7\" → (none)  owners: kubectl-patch → kubectl-patch");
    o.assert_stdout(
        "  migrate   data.a  \"1\" → \"1\"  owners: kubectl-client-side-apply → kubectl",
    );

    // Offline, from the live objects as `kubectl get -o json
    // --show-managed-fields` writes them: the same plan.
    let o = s.kubectl(&[
        "get",
        "deployment/web",
        "configmap/cfg",
        "-n",
        &ns,
        "-o",
        "json",
        "--show-managed-fields",
    ]);
    assert_eq!(o.code, Some(0), "{o:?}");
    let live = s.file("live.json", &o.stdout);
    let o = s.kapply(&[
        "plan",
        "--server-side",
        "-n",
        &ns,
        "-f",
        &v2,
        "--live",
        &live,
    ]);
    assert_eq!(o.code, Some(0), "{o:?}");
    let offline: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(offline, plan, "--live plans as the cluster's objects do");

    // What kubectl's migration leaves: each field as predicted.
    let before = [s.get(&ns, "deployment/web"), s.get(&ns, "configmap/cfg")];
    let o = s.kubectl(&["apply", "--server-side", "-n", &ns, "-f", &v2]);
    assert_eq!(o.code, Some(0), "{o:?}");
    for (before, (what, rows)) in before
        .iter()
        .zip([("deployment/web", web), ("configmap/cfg", cfg)])
    {
        let after = s.get(&ns, what);
        for r in &rows {
            let p = r["path"].as_str().unwrap();
            match r["action"].as_str().unwrap() {
                "migrate" | "take" | "set" => {
                    assert_eq!(at(&after, p), Some(&r["config"]), "{what} {p}")
                }
                "remove" => assert_eq!(at(&after, p), None, "{what} {p}: removed"),
                "stuck" => assert_eq!(at(&after, p), at(before, p), "{what} {p}: stays"),
                a => panic!("{what} {p}: {a}"),
            }
        }
        // Every owner after, as predicted: the client-side manager gone,
        // the others' entries as the rows say.
        let managers: Vec<String> = after["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                format!(
                    "{} {}",
                    e["manager"].as_str().unwrap(),
                    e["operation"].as_str().unwrap()
                )
            })
            .collect();
        assert!(
            !managers
                .iter()
                .any(|m| m.starts_with("kubectl-client-side-apply")),
            "{what}: {managers:?}"
        );
        for r in &rows {
            for owner in r["ownersAfter"].as_array().unwrap() {
                let owner = owner.as_str().unwrap();
                assert!(
                    managers.iter().any(|m| m.starts_with(&format!("{owner} "))),
                    "{what} {}: {owner} not among {managers:?}",
                    r["path"]
                );
            }
        }
    }
    let cm = s.get(&ns, "configmap/cfg");
    assert_eq!(cm["data"], serde_json::json!({"a": "1", "b": "7"}));
}

/// `kapply migrate` against kubectl 1.33's `apply --server-side` on the
/// real server, from the same client-side history: the same objects and
/// managedFields after; a server dry run writes nothing; an object not
/// there, or already moved, is left alone.
#[test]
fn migrate_moves_objects_as_kubectl_on_the_real_server() {
    let Some((dir, kc, k)) = real_scratch() else {
        return;
    };
    let s = Sides::new(
        &k,
        &kc,
        dir.path(),
        real::unique("mig-k"),
        real::unique("mig-a"),
    );
    let v1 = s.file("v1.yaml", V1);
    let v2 = s.file("v2.yaml", V2);
    let with_fresh = s.file(
        "fresh.yaml",
        &format!("{V2}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fresh\ndata:\n  x: \"1\"\n"),
    );
    for ns in [&s.ns_k, &s.ns_a] {
        assert_eq!(s.kubectl(&["create", "namespace", ns]).code, Some(0));
    }
    s.both(&["apply", "-f", &v1]);
    s.both(&[
        "patch",
        "configmap/cfg",
        "--type=merge",
        "-p",
        "{\"data\":{\"b\":\"7\"}}",
    ]);
    let version = |what: &str| {
        let o = s.kubectl(&[
            "get",
            what,
            "-n",
            &s.ns_a,
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ]);
        assert_eq!(o.code, Some(0), "{o:?}");
        o.stdout
    };
    let before = (version("deployment/web"), version("configmap/cfg"));
    let o = s.kapply(&[
        "migrate",
        "--dry-run=server",
        "-n",
        &s.ns_a,
        "-f",
        &with_fresh,
    ]);
    assert_eq!(o.code, Some(0), "{o:?}");
    o.assert_stdout(&format!(
        "Deployment {}/web migrated (kubectl-client-side-apply → kubectl) (server dry run)",
        s.ns_a
    ));
    assert_eq!(
        (version("deployment/web"), version("configmap/cfg")),
        before,
        "the dry run wrote nothing"
    );

    let theirs = s.kubectl(&["apply", "--server-side", "-n", &s.ns_k, "-f", &v2]);
    assert_eq!(theirs.code, Some(0), "{theirs:?}");
    let o = s.kapply(&["migrate", "--yes", "-n", &s.ns_a, "-f", &with_fresh]);
    assert_eq!(o.code, Some(0), "{o:?}");
    assert_eq!(
        o.stdout,
        format!(
            "ConfigMap {ns}/fresh not found: nothing to migrate\n\
             Deployment {ns}/web migrated (kubectl-client-side-apply → kubectl)\n\
             ConfigMap {ns}/cfg migrated (kubectl-client-side-apply → kubectl)\n",
            ns = s.ns_a
        )
    );
    s.same_objects("migrated");
    let o = s.kubectl(&["get", "configmap/fresh", "-n", &s.ns_a]);
    assert_eq!(o.code, Some(1), "nothing else was written: {o:?}");

    // Moved already: left alone.
    let after = (version("deployment/web"), version("configmap/cfg"));
    let o = s.kapply(&["migrate", "--yes", "-n", &s.ns_a, "-f", &v2]);
    assert_eq!(o.code, Some(0), "{o:?}");
    o.assert_stdout(&format!(
        "Deployment {}/web not last applied client-side: nothing to migrate",
        s.ns_a
    ));
    assert_eq!((version("deployment/web"), version("configmap/cfg")), after);
}

/// A small deterministic generator (xorshift): the cases are reproducible
/// from the seed printed with a failure.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn coin(&mut self) -> bool {
        self.pick(2) == 0
    }
}

/// One generated config: a Deployment, a ConfigMap, a Service, a
/// StatefulSet and a Job, each choice drawn from `g`.
fn generated_config(g: &mut Gen) -> Vec<(&'static str, String)> {
    let image = format!("nginx:1.{}", 20 + g.pick(4));
    let env = if g.coin() {
        "\n        env:\n        - {name: A, value: \"1\"}".to_string()
    } else {
        String::new()
    };
    let sidecar = if g.coin() {
        "\n      - name: side\n        image: busybox:1.36".to_string()
    } else {
        String::new()
    };
    let tier = if g.coin() { ", tier: front" } else { "" };
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: {}\n  \
         selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web{tier}}}\n    \
         spec:\n      containers:\n      - name: web\n        image: {image}{env}{sidecar}\n",
        1 + g.pick(3)
    );
    let mut data = Vec::new();
    for k in ["a", "b", "c"] {
        if g.pick(3) != 0 {
            data.push(format!("{k}: \"{}\"", g.pick(3)));
        }
    }
    let configmap = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata: {{{}}}\n",
        data.join(", ")
    );
    let mut ports = vec!["{port: 80, name: http}".to_string()];
    if g.coin() {
        ports.push(format!("{{port: {}, name: extra}}", 8080 + g.pick(2)));
    }
    let service = format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\nspec:\n  selector: {{app: web}}\n  ports: [{}]\n",
        ports.join(", ")
    );
    let statefulset = format!(
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  serviceName: svc\n  \
         replicas: {}\n  selector:\n    matchLabels: {{app: db}}\n  template:\n    metadata:\n      \
         labels: {{app: db}}\n    spec:\n      containers:\n      - name: db\n        image: redis:7.{}\n",
        1 + g.pick(2),
        g.pick(3)
    );
    // A Job's template cannot change once created: only its parallelism
    // and labels are drawn.
    let job = format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: once\n  labels: {{run: \"{}\"}}\nspec:\n  \
         parallelism: {}\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      \
         - name: once\n        image: busybox:1.36\n",
        g.pick(3),
        1 + g.pick(2)
    );
    vec![
        ("deployment/web", deployment),
        ("configmap/cfg", configmap),
        ("service/svc", service),
        ("statefulset/db", statefulset),
        ("job/once", job),
    ]
}

/// Whether the server's field path `server` is the plan's `planned`: the
/// same, or the same but for the `protocol=TCP` key field the server
/// defaults in a port list's key (a new port's row names it by its port
/// alone: the server's key is not known before the server defaults it).
fn same_field(server: &str, planned: &str) -> bool {
    server == planned
        || server.replace(",protocol=TCP]", "]") == planned.replace(",protocol=TCP]", "]")
}

/// Generated configs and histories of other writers (client-side `kubectl
/// apply` of other generated configs, scales, a client-side `kubectl set
/// image` and `set env`, `kubectl label`, a second server-side manager),
/// then the local per-field plan of the next generated config against the
/// real server, object by object: not forced, the conflicts are those of
/// the server's dry run (count and fields); forced and applied by kubectl
/// (its migration included), the object after holds each `set`/`take`/
/// `migrate` (the config's value), `remove` (gone) and `keep`/`stuck` (as
/// it was), and each field's managers are the `ownersAfter` promised.
/// `KAPPLY_SSA_CASES` cases (default 16, about 95 s), `KAPPLY_SSA_SEED` to
/// replay one.
#[test]
fn generated_server_side_plans_agree_with_the_real_servers_dry_run() {
    let Some(kubeconfig) = real::kubeconfig() else {
        return;
    };
    let bin = reference_kubectl().expect("kubectl (the reference) is needed with the real server");
    let (dir, kc, k) = scratch(&kubeconfig, bin);
    let cases: u64 = std::env::var("KAPPLY_SSA_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let first_seed: u64 = std::env::var("KAPPLY_SSA_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    let mut checked = 0;
    // How many rows of each action were checked: the cases must reach them.
    let mut seen: std::collections::BTreeMap<String, usize> = Default::default();
    for case in 0..cases {
        let seed = first_seed.wrapping_add(case.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1;
        let mut g = Gen(seed);
        let s = Sides {
            kubectl: &k,
            kubeconfig: &kc,
            dir: dir.path(),
            ns_k: real::unique(&format!("ssa-g{case}")),
            ns_a: String::new(),
        };
        let ns = s.ns_k.clone();
        let ctx = format!("seed {seed} (KAPPLY_SSA_SEED={seed} KAPPLY_SSA_CASES=1)");
        assert_eq!(s.kubectl(&["create", "namespace", &ns]).code, Some(0));
        let base = generated_config(&mut g);
        let all: Vec<String> = base.iter().map(|(_, t)| t.clone()).collect();
        let f = s.file(&format!("base{case}.yaml"), &all.join("---\n"));
        let o = s.kapply(&["apply", "--server-side", "--yes", "-n", &ns, "-f", &f]);
        assert_eq!(o.code, Some(0), "{ctx}: {o:?}");
        let mut history: Vec<Vec<String>> = Vec::new();
        let own = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        // Client-side `kubectl apply` of other generated configs over the
        // server-side ones: the next plan is then the migration view.
        let client = generated_config(&mut g);
        for (what, text) in &client {
            // Not the Service: a client-side apply over an object with no
            // last-applied annotation cannot drop a port, and a new port
            // named as the old one is refused (Duplicate value).
            if !g.coin() || *what == "service/svc" {
                continue;
            }
            let file = s.file(
                &format!("client{case}-{}.yaml", what.replace('/', "-")),
                text,
            );
            history.push(own(&["apply", "-f", &file]));
        }
        if g.coin() {
            history.push(own(&["scale", "deployment/web", "--replicas=5"]));
        }
        if g.coin() {
            history.push(own(&["set", "image", "deployment/web", "web=nginx:1.27"]));
        }
        if g.coin() {
            history.push(own(&["set", "env", "deployment/web", "-c", "web", "B=2"]));
        }
        if g.coin() {
            history.push(own(&["label", "configmap/cfg", "team=x"]));
        }
        if g.coin() {
            history.push(own(&["scale", "statefulset/db", "--replicas=4"]));
        }
        if g.coin() {
            history.push(own(&["label", "job/once", "--overwrite", "run=9"]));
        }
        for h in &history {
            let mut full: Vec<&str> = h.iter().map(String::as_str).collect();
            full.extend(["-n", ns.as_str()]);
            assert_eq!(s.kubectl(&full).code, Some(0), "{ctx}: {full:?}");
        }
        if g.coin() {
            let second = s.file(
                &format!("second{case}.yaml"),
                &format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata: {{b: \"{}\", d: \"4\"}}\n",
                    g.pick(3)
                ),
            );
            let o = s.kubectl(&[
                "apply",
                "--server-side",
                "--force-conflicts",
                "--field-manager=second",
                "-n",
                &ns,
                "-f",
                &second,
            ]);
            assert_eq!(o.code, Some(0), "{ctx}: {o:?}");
            history.push(own(&["apply", "--field-manager=second"]));
        }
        let next = generated_config(&mut g);
        for (what, text) in &next {
            let file = s.file(&format!("next{case}-{}.yaml", what.replace('/', "-")), text);
            let plan = |force: bool| -> Value {
                let mut args = vec!["plan", "--server-side", "-n", &ns, "-f", &file];
                if force {
                    args.push("--force-conflicts");
                }
                let o = s.kapply(&args);
                assert_eq!(o.code, Some(0), "{ctx}: {o:?}");
                let plan: Value = serde_json::from_str(&o.stdout).unwrap();
                plan["objects"][0]["fields"]
                    .as_array()
                    .unwrap()
                    .clone()
                    .into_iter()
                    .collect()
            };
            let dry = |force: bool| {
                let mut args = vec![
                    "apply",
                    "--server-side",
                    "--dry-run=server",
                    "-n",
                    &ns,
                    "-f",
                    &file,
                    "-o",
                    "json",
                ];
                if force {
                    args.push("--force-conflicts");
                }
                s.kubectl(&args)
            };
            let why = format!("{ctx}, {what}, history {history:?}, config:\n{text}");
            // Not forced: exactly the server's conflicts.
            let rows = plan(false);
            let rows = rows.as_array().unwrap();
            for r in rows {
                *seen
                    .entry(r["action"].as_str().unwrap().to_string())
                    .or_default() += 1;
            }
            let conflicts: Vec<&Value> =
                rows.iter().filter(|r| r["action"] == "conflict").collect();
            let o = dry(false);
            if conflicts.is_empty() {
                assert_eq!(
                    o.code,
                    Some(0),
                    "no conflict predicted; {why}: {o:?}\n{rows:#?}"
                );
            } else {
                assert_eq!(
                    o.code,
                    Some(1),
                    "conflicts {conflicts:#?} predicted; {why}: {o:?}"
                );
                let n = conflicts.len();
                let words = if n == 1 {
                    "1 conflict:".to_string()
                } else {
                    format!("{n} conflicts:")
                };
                assert!(
                    o.stderr.contains(&format!("Apply failed with {words}")),
                    "predicted {conflicts:#?}; {why}: {o:?}"
                );
                for c in &conflicts {
                    let p = server_path(c["path"].as_str().unwrap());
                    assert!(
                        o.stderr.contains(&p),
                        "{p} not among the server's conflicts; {why}: {o:?}"
                    );
                }
            }
            // Forced, applied for real by kubectl (its migration of a
            // client-side applied object included): the object after holds
            // what the plan says, values and owners.
            let rows = plan(true);
            let o = dry(true);
            assert_eq!(o.code, Some(0), "{why}: {o:?}");
            let live = s.get(&ns, what);
            let o = s.kubectl(&[
                "apply",
                "--server-side",
                "--force-conflicts",
                "-n",
                &ns,
                "-f",
                &file,
            ]);
            assert_eq!(o.code, Some(0), "{why}: {o:?}");
            let after = s.get(&ns, what);
            let owners_after = |p: &str| -> Vec<String> {
                let mut v: Vec<String> = after["metadata"]["managedFields"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|e| {
                        kapply::managedfields::from_fields_v1(&e["fieldsV1"])
                            .iter()
                            .any(|fp| {
                                fp.last().is_some_and(|l| l != ".")
                                    && same_field(&kapply::ssa::display(fp), p)
                            })
                    })
                    .map(|e| {
                        let m = e["manager"].as_str().unwrap_or("").to_string();
                        match e["subresource"].as_str().filter(|s| !s.is_empty()) {
                            Some(sub) => format!("{m} ({sub})"),
                            None => m,
                        }
                    })
                    .collect();
                v.sort();
                v.dedup();
                v
            };
            for r in rows.as_array().unwrap() {
                let p = r["path"].as_str().unwrap();
                let mut promised: Vec<String> = r["ownersAfter"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|o| o.as_str().unwrap().to_string())
                    .collect();
                promised.sort();
                assert_eq!(
                    owners_after(p),
                    promised,
                    "{p}: the managers after (left) are not those promised; {why}\n{r}\n{after:#}"
                );
            }
            let answer = after;
            for r in rows.as_array().unwrap() {
                let p = r["path"].as_str().unwrap();
                if r["action"] == "take" {
                    *seen.entry("take".into()).or_default() += 1;
                }
                match r["action"].as_str().unwrap() {
                    "set" | "take" | "migrate" => {
                        assert_eq!(at(&answer, p), Some(&r["config"]), "{p} set; {why}\n{r}")
                    }
                    "remove" => assert_eq!(at(&answer, p), None, "{p} removed; {why}\n{r}"),
                    "keep" | "stuck" => {
                        assert_eq!(at(&answer, p), at(&live, p), "{p} kept; {why}\n{r}")
                    }
                    a => panic!("{a}: {why}"),
                }
            }
            checked += 1;
        }
        assert_eq!(
            s.kubectl(&["delete", "namespace", &ns, "--wait=false"])
                .code,
            Some(0)
        );
    }
    assert_eq!(checked, cases * 5);
    eprintln!("rows checked by action: {seen:?}");
    if cases >= 8 {
        for a in ["set", "conflict", "take", "remove", "keep", "migrate"] {
            assert!(
                seen.contains_key(a),
                "no {a} row in {cases} cases: {seen:?}"
            );
        }
    }
}

/// The per-field decisions' history ([`decisions`]) on one server (kubectl
/// `k` on `kubeconfig`, in namespace `ns`), resolved by the core: the
/// replicas forced and the image given way (`kapply::ssa::resolve`), the
/// request kapply then sends leaves the image out and forces. Returns the
/// Deployment as it is after.
fn decisions_history(k: &Kubectl, kubeconfig: &Path, dir: &Path, ns: &str) -> Value {
    let kubectl = |args: &[&str]| {
        let o = run(&mut k.command(args));
        assert_eq!(o.code, Some(0), "{args:?}: {o:?}");
        o.stdout
    };
    let live = decisions::drifted(&kubectl, dir, ns);
    let config = kapply::yaml::read_value(&decisions::config(ns)).unwrap();
    let conflicts: Vec<kapply::fieldpath::FieldPath> =
        kapply::ssa::plan_fields(&config, Some(&live), "kubectl", false)
            .into_iter()
            .filter(|r| r.action == kapply::ssa::FieldAction::Conflict)
            .map(|r| r.path)
            .collect();
    assert_eq!(
        conflicts,
        vec!["spec.replicas", decisions::IMAGE],
        "{live:#}"
    );
    use kapply::ssa::Decision;
    let decisions = [
        ("spec.replicas".into(), Decision::Force),
        (decisions::IMAGE.into(), Decision::GiveWay),
    ]
    .into_iter()
    .collect();
    let r = kapply::ssa::resolve(&config, Some(&live), "kubectl", &decisions);
    assert!(r.force && r.undecided.is_empty(), "{r:?}");

    // The request as kapply sends it: the reduced config, forced.
    let reduced = dir.join(format!("{ns}-resolved.json"));
    std::fs::write(&reduced, r.config.to_string()).unwrap();
    let out = run(Command::new(env!("CARGO_BIN_EXE_kapply"))
        .args(["apply", "--server-side", "--force-conflicts", "--yes", "-f"])
        .arg(&reduced)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env_remove("KUBECONFIG"));
    assert_eq!(out.code, Some(0), "{out:?}");

    let after = decisions::get(&kubectl, ns);
    decisions::assert_decided(&after);
    // Planned again, nothing conflicts and nothing is left to do but the
    // image the reviewer left to its writer.
    let rows = kapply::ssa::plan_fields(&r.config, Some(&after), "kubectl", false);
    assert!(rows.is_empty(), "{rows:#?}");
    after
}

#[test]
fn per_field_decisions_hold_on_the_real_server() {
    let Some(kubeconfig) = real::kubeconfig() else {
        return;
    };
    let Some(bin) = reference_kubectl() else {
        return;
    };
    let (dir, kc, k) = scratch(&kubeconfig, bin);
    let ns = real::unique("ssa-decide");
    decisions_history(&k, &kc, dir.path(), &ns);
    run(&mut k.command(&["delete", "namespace", &ns, "--wait=false"]));
}

#[test]
fn per_field_decisions_hold_on_the_embedded_server() {
    let Some(bin) = kubectl::kubectl() else {
        return;
    };
    let c = server::Cluster::start();
    let k = Kubectl::new(bin, &c.kubeconfig);
    decisions_history(&k, &c.kubeconfig, c.dir.path(), "ssa-decide");
}

/// The ApplySet id of parent Secret `name` in `ns` (KEP 3659's hash).
fn applyset_id_of(name: &str, ns: &str) -> String {
    kapply::cluster::applyset_id(name, ns, "Secret", "")
}

/// A ConfigMap `name` with one key.
fn set_member(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: \"{name}\"\n")
}

/// One run of `apply --server-side --prune --applyset=myset` with the
/// manifests `members` (ConfigMaps, and the Deployment of V1 when `web`),
/// by `tool` ("kubectl" or "kapply") in `ns`; its outcome.
fn applyset_apply(
    s: &Sides,
    tool: &str,
    ns: &str,
    members: &[&str],
    web: bool,
    extra: &[&str],
) -> Out {
    let mut text: Vec<String> = members.iter().map(|m| set_member(m)).collect();
    if web {
        text.push(V1.split("---").next().unwrap().to_string());
    }
    let file = s.file(&format!("set-{tool}-{ns}.yaml"), &text.join("---\n"));
    let mut args = vec![
        "apply",
        "--server-side",
        "--prune",
        "--applyset=myset",
        "-n",
        ns,
        "-f",
        &file,
    ];
    args.extend_from_slice(extra);
    match tool {
        "kubectl" => run(s.kubectl.command(&args).env("KUBECTL_APPLYSET", "true")),
        _ => {
            args.push("--yes");
            s.kapply(&args)
        }
    }
}

impl Sides<'_> {
    /// Every ConfigMap and Deployment of the set and its parent Secret in
    /// `ns`, normalized, the namespace's ApplySet id as `ID`.
    fn set_objects(&self, ns: &str) -> Vec<Value> {
        let o = self.kubectl(&[
            "get",
            "secrets,configmaps,deployments",
            "-n",
            ns,
            "-o",
            "json",
            "--show-managed-fields",
        ]);
        assert_eq!(o.code, Some(0), "{o:?}");
        let list: Value = serde_json::from_str(&o.stdout).unwrap();
        let id = applyset_id_of("myset", ns);
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            // The namespace's own root CA ConfigMap is the controllers'.
            .filter(|o| o["metadata"]["name"] != "kube-root-ca.crt")
            .map(|o| {
                let v = normalize(o, ns);
                serde_json::from_str(&v.to_string().replace(&id, "ID")).unwrap()
            })
            .collect()
    }

    fn same_sets(&self, step: &str) -> Vec<Value> {
        let k = self.set_objects(&self.ns_k);
        let a = self.set_objects(&self.ns_a);
        assert_eq!(
            a,
            k,
            "{step}: the sets differ (kapply's namespace left, kubectl's right):\n{}\n{}",
            serde_json::to_string_pretty(&a).unwrap(),
            serde_json::to_string_pretty(&k).unwrap()
        );
        k
    }
}

/// kubectl's result lines as kapply's (`configmap/x pruned` as
/// `ConfigMap NS/x pruned`), sorted; kapply's sorted.
fn same_lines(k: &Out, a: &Out, ns_k: &str, ns_a: &str, step: &str) {
    let theirs: Vec<String> = {
        let mut v: Vec<String> = k
            .stdout
            .lines()
            .map(|l| {
                let (what, verb) = l.split_once(' ').unwrap();
                let (kind, name) = what.split_once('/').unwrap();
                let kind = match kind {
                    "configmap" => "ConfigMap",
                    "deployment.apps" => "Deployment",
                    other => panic!("{step}: unexpected kind {other} in {k:?}"),
                };
                format!("{kind} {ns_k}/{name} {verb}")
            })
            .collect();
        v.sort();
        v
    };
    let mut ours: Vec<String> = a
        .stdout
        .replace(ns_a, ns_k)
        .lines()
        .map(String::from)
        .collect();
    ours.sort();
    assert_eq!(ours, theirs, "{step}: kapply {a:?}\nkubectl {k:?}");
}

/// `apply --server-side --prune --applyset`: kapply continues kubectl's
/// set and kubectl kapply's, the parent, the members and their
/// managedFields the same after each step, the same objects pruned.
fn applyset_history(s: &Sides) {
    let (nk, na) = (s.ns_k.as_str(), s.ns_a.as_str());
    for ns in [nk, na] {
        let o = s.kubectl(&["create", "namespace", ns]);
        assert_eq!(o.code, Some(0), "{o:?}");
    }
    // 1. Created by kubectl in one namespace, by kapply in the other with
    //    kubectl's tooling (so kubectl may continue it).
    let k = applyset_apply(s, "kubectl", nk, &["keep", "gone"], true, &[]);
    assert_eq!(k.code, Some(0), "{k:?}");
    let parent = s.kubectl(&["get", "secret", "myset", "-n", nk, "-o", "json"]);
    let parent: Value = serde_json::from_str(&parent.stdout).unwrap();
    let tooling = parent["metadata"]["annotations"]["applyset.kubernetes.io/tooling"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(tooling.starts_with("kubectl/"), "{parent}");
    let flag = format!("--applyset-tooling={tooling}");
    let a = applyset_apply(s, "kapply", na, &["keep", "gone"], true, &[&flag]);
    assert_eq!(a.code, Some(0), "{a:?}");
    same_lines(&k, &a, nk, na, "create");
    s.same_sets("created");

    // 2. Two members dropped: kapply prunes them as kubectl does.
    let k = applyset_apply(s, "kubectl", nk, &["keep"], false, &[]);
    let a = applyset_apply(s, "kapply", na, &["keep"], false, &[]);
    assert_eq!((k.code, a.code), (Some(0), Some(0)), "{k:?}\n{a:?}");
    same_lines(&k, &a, nk, na, "prune");
    a.assert_stdout(&format!("ConfigMap {na}/gone pruned"));
    a.assert_stdout(&format!("Deployment {na}/web pruned"));
    let left = s.same_sets("pruned");
    let names: Vec<&str> = left
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["myset", "keep"], "{left:?}");

    // 3. kubectl continues kapply's set and kapply kubectl's.
    let k = applyset_apply(s, "kapply", nk, &["keep", "added"], false, &[]);
    let a = applyset_apply(s, "kubectl", na, &["keep", "added"], false, &[]);
    assert_eq!((k.code, a.code), (Some(0), Some(0)), "{k:?}\n{a:?}");
    s.same_sets("continued by the other tool");

    // 4. A server dry run: the same words, nothing written.
    let k = applyset_apply(s, "kubectl", nk, &["added"], false, &["--dry-run=server"]);
    let a = applyset_apply(s, "kapply", na, &["added"], false, &["--dry-run=server"]);
    assert_eq!((k.code, a.code), (Some(0), Some(0)), "{k:?}\n{a:?}");
    same_lines(&k, &a, nk, na, "dry run");
    a.assert_stdout(&format!("ConfigMap {na}/keep pruned (server dry run)"));
    let after = s.same_sets("dry run");
    assert_eq!(after.len(), 3, "nothing pruned by the dry run: {after:?}");

    // 5. Without --yes (and no terminal to ask on): the prune listed, then
    //    refused, nothing written.
    let file = s.file("added.yaml", &set_member("added"));
    let ask = [
        "apply",
        "--server-side",
        "--prune",
        "--applyset=myset",
        "-n",
        na,
        "-f",
        &file,
    ];
    let o = s.kapply(&ask);
    assert_ne!(o.code, Some(0), "{o:?}");
    o.assert_stderr(&format!("- prune      ConfigMap {na}/keep"));
    o.assert_stderr("refusing to proceed without confirmation");
    assert_eq!(s.set_objects(na).len(), 3, "nothing pruned");
    s.same_sets("not confirmed");

    // 6. Then pruned by both.
    let k = applyset_apply(s, "kubectl", nk, &["added"], false, &[]);
    let a = applyset_apply(s, "kapply", na, &["added"], false, &[]);
    assert_eq!((k.code, a.code), (Some(0), Some(0)), "{k:?}\n{a:?}");
    same_lines(&k, &a, nk, na, "last prune");
    s.same_sets("last prune");

    // 7. The allowlist prune kubectl refuses with --server-side, refused
    //    in its words and exit code, before anything is sent.
    let file = s.file("one.yaml", &set_member("other"));
    let args = [
        "apply",
        "--server-side",
        "--prune",
        "--all",
        "-n",
        na,
        "-f",
        &file,
    ];
    let k = s.kubectl(&args);
    let mut with_yes = args.to_vec();
    with_yes.push("--yes");
    let a = s.kapply(&with_yes);
    assert_eq!((k.code, a.code), (Some(1), Some(1)), "{k:?}\n{a:?}");
    assert_eq!(a.stderr, k.stderr);
    assert_eq!(s.set_objects(na).len(), 2, "nothing applied");
}

#[test]
fn applyset_prune_as_kubectl_on_the_real_server() {
    on_the_real_server("aset", applyset_history);
}

#[test]
fn applyset_prune_as_kubectl_on_the_embedded_server() {
    on_an_embedded_server("aset", applyset_history);
}

/// A CRD whose schema has every list and map type server-side apply
/// distinguishes: a list keyed by two fields, a set, an atomic list, an
/// atomic map and a map field by field.
const WIDGET_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.ssacrd.kapply.dev
spec:
  group: ssacrd.kapply.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [port, protocol]
                items:
                  type: object
                  required: [port, protocol]
                  properties:
                    port: {type: integer}
                    protocol: {type: string}
                    name: {type: string}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
              args:
                type: array
                items: {type: string}
              selector:
                type: object
                x-kubernetes-map-type: atomic
                additionalProperties: {type: string}
              env:
                type: object
                additionalProperties: {type: string}
";

fn widget(spec: &str) -> String {
    format!("apiVersion: ssacrd.kapply.dev/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n{spec}")
}

/// A custom resource planned with its CRD's schema (read from the
/// cluster), against the real server's dry run: keyed list elements and
/// set members another manager shares are kept, an atomic map another
/// manager owns conflicts whole, an atomic list is set whole; forced, the
/// server's answer holds what the plan says. Without the schema the lists
/// were claimed whole and the atomic map key by key.
#[test]
fn crd_schemas_plan_as_the_real_servers_dry_run() {
    let Some((dir, kc, k)) = real_scratch() else {
        return;
    };
    let s = Sides::new(&k, &kc, dir.path(), real::unique("ssa-crd"), String::new());
    let ns = s.ns_k.clone();
    assert_eq!(s.kubectl(&["create", "namespace", &ns]).code, Some(0));
    let crd = s.file("crd.yaml", WIDGET_CRD);
    let o = s.kubectl(&["apply", "--server-side", "-f", &crd]);
    assert_eq!(o.code, Some(0), "{o:?}");
    let o = s.kubectl(&[
        "wait",
        "--for=condition=established",
        "crd/widgets.ssacrd.kapply.dev",
        "--timeout=60s",
    ]);
    assert_eq!(o.code, Some(0), "{o:?}");
    let apply_as = |manager: &str, name: &str, spec: &str| {
        let f = s.file(name, &widget(spec));
        let flag = format!("--field-manager={manager}");
        let mut o = s.kubectl(&["apply", "--server-side", &flag, "-n", &ns, "-f", &f]);
        // The kind may take a moment to be served after the CRD is established.
        for _ in 0..20 {
            if o.code == Some(0) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
            o = s.kubectl(&["apply", "--server-side", &flag, "-n", &ns, "-f", &f]);
        }
        assert_eq!(o.code, Some(0), "{manager}: {o:?}");
    };
    apply_as(
        "first",
        "first.yaml",
        "  ports:\n  - {port: 80, protocol: TCP, name: http}\n  - {port: 443, protocol: TCP, name: https}\n  tags: [a, b]\n  args: [x]\n  selector: {app: w}\n  env: {A: \"1\", B: \"2\"}\n",
    );
    apply_as(
        "second",
        "second.yaml",
        "  ports:\n  - {port: 443, protocol: TCP, name: https}\n  tags: [b, c]\n  selector: {app: w}\n  env: {B: \"2\"}\n",
    );
    let next = s.file(
        "next.yaml",
        &widget(
            "  ports:\n  - {port: 80, protocol: TCP, name: web}\n  tags: [a]\n  args: [z]\n  selector: {app: w, tier: t}\n  env: {A: \"1\"}\n",
        ),
    );
    let plan = |force: bool| -> Vec<Value> {
        let mut args = vec![
            "plan",
            "--server-side",
            "--field-manager=first",
            "-n",
            &ns,
            "-f",
            &next,
        ];
        if force {
            args.push("--force-conflicts");
        }
        let o = s.kapply(&args);
        assert_eq!(o.code, Some(0), "{o:?}");
        let plan: Value = serde_json::from_str(&o.stdout).unwrap();
        plan["objects"][0]["fields"].as_array().unwrap().clone()
    };
    let rows = plan(false);
    let mut actions: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap().to_string(),
                r["action"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    actions.sort();
    let want: Vec<(String, String)> = [
        ("spec.args", "set"),
        ("spec.env.B", "keep"),
        ("spec.ports[port=443,protocol=TCP].name", "keep"),
        ("spec.ports[port=443,protocol=TCP].port", "keep"),
        ("spec.ports[port=443,protocol=TCP].protocol", "keep"),
        ("spec.ports[port=80,protocol=TCP].name", "set"),
        ("spec.selector", "conflict"),
        ("spec.tags[=\"b\"]", "keep"),
    ]
    .iter()
    .map(|(p, a)| (p.to_string(), a.to_string()))
    .collect();
    assert_eq!(actions, want, "{rows:#?}");
    // Not forced: exactly the server's conflicts.
    let o = s.kubectl(&[
        "apply",
        "--server-side",
        "--field-manager=first",
        "--dry-run=server",
        "-n",
        &ns,
        "-f",
        &next,
    ]);
    assert_eq!(o.code, Some(1), "{o:?}");
    o.assert_stderr("Apply failed with 1 conflict");
    o.assert_stderr("conflict with \"second\": .spec.selector");
    // Forced: the server's answer holds each row.
    let rows = plan(true);
    let o = s.kubectl(&[
        "apply",
        "--server-side",
        "--field-manager=first",
        "--force-conflicts",
        "--dry-run=server",
        "-n",
        &ns,
        "-f",
        &next,
        "-o",
        "json",
        "--show-managed-fields",
    ]);
    assert_eq!(o.code, Some(0), "{o:?}");
    let answer: Value = serde_json::from_str(&o.stdout).unwrap();
    let live = s.get(&ns, "widget/w");
    for r in &rows {
        let p = r["path"].as_str().unwrap();
        match r["action"].as_str().unwrap() {
            "set" | "take" => assert_eq!(at(&answer, p), Some(&r["config"]), "{p}"),
            "remove" => assert_eq!(at(&answer, p), None, "{p}: removed"),
            "keep" => assert_eq!(at(&answer, p), at(&live, p), "{p}: kept"),
            a => panic!("{a} {p}"),
        }
    }
    assert_eq!(answer["spec"]["tags"], serde_json::json!(["a", "b", "c"]));
    assert_eq!(
        answer["spec"]["env"],
        serde_json::json!({"A": "1", "B": "2"})
    );
    let owners = |answer: &Value, manager: &str| -> Value {
        answer["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["manager"] == manager)
            .map(|e| e["fieldsV1"].clone())
            .unwrap_or(Value::Null)
    };
    // The selector moved to first whole; second keeps its port and tags.
    assert!(owners(&answer, "first")["f:spec"]["f:selector"].is_object());
    assert!(owners(&answer, "second")["f:spec"]["f:selector"].is_null());
    assert!(
        owners(&answer, "second")["f:spec"]["f:ports"]["k:{\"port\":443,\"protocol\":\"TCP\"}"]
            .is_object()
    );
}

/// Client-side `apply --field-manager=NAME`: the writes' Update entries
/// carry that name instead of kubectl-client-side-apply, as kubectl 1.33's
/// on the real server (a create, then a change and a dropped key).
#[test]
fn client_side_field_manager_as_kubectl_on_the_real_server() {
    let Some((dir, kc, k)) = real_scratch() else {
        return;
    };
    let s = Sides::new(
        &k,
        &kc,
        dir.path(),
        real::unique("csa-fm-k"),
        real::unique("csa-fm-a"),
    );
    for ns in [&s.ns_k, &s.ns_a] {
        assert_eq!(s.kubectl(&["create", "namespace", ns]).code, Some(0));
    }
    for (step, text) in [("v1", V1), ("v2", V2)] {
        let f = s.file(&format!("{step}.yaml"), text);
        let k = s.kubectl(&["apply", "--field-manager=team", "-n", &s.ns_k, "-f", &f]);
        let a = s.kapply(&[
            "apply",
            "--field-manager=team",
            "--yes",
            "-n",
            &s.ns_a,
            "-f",
            &f,
        ]);
        assert_eq!((k.code, a.code), (Some(0), Some(0)), "{step}: {k:?}\n{a:?}");
        s.same_objects(step);
        let cm = s.get(&s.ns_a, "configmap/cfg");
        let managers: Vec<&str> = cm["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(managers, ["team"], "{step}: {cm}");
    }
}
