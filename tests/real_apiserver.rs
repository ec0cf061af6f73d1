//! The differential suite against a real kube-apiserver
//! (`scripts/real-apiserver`, `KAPPLY_REAL_APISERVER_KUBECONFIG`): one
//! history run by the real kubectl in one namespace and by kapply in
//! another, from the same start, and the final objects compared (uid,
//! resourceVersion, creation and managedFields times, cluster IPs and the
//! namespace's own name aside). The same histories run by kubectl against
//! the embedded server hold it to the real one.
//!
//! Without the variable these tests skip, saying so; under `KAPPLY_CI` they
//! fail.

#[path = "common/kubectl.rs"]
mod kubectl;
#[path = "common/out.rs"]
mod out;
#[path = "common/real.rs"]
mod real;
#[path = "common/releases.rs"]
mod releases;
#[path = "common/server.rs"]
mod server;

use out::{Out, run};
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::process::Command;

const KAPPLY: &str = env!("CARGO_BIN_EXE_kapply");
/// Manifests say `__NS__` where each side's namespace goes (a CRD's group,
/// so that each side has its own cluster-scoped CRD).
const NS: &str = "__NS__";

#[derive(Clone, Copy, PartialEq, Debug)]
enum Tool {
    Kubectl,
    Kapply,
}

/// One tool on one server in one namespace, with its own copy of the
/// manifests in `dir`.
struct Side {
    label: String,
    tool: Tool,
    kubeconfig: PathBuf,
    ns: String,
    dir: PathBuf,
    /// Strings that differ between sides by construction, and their stand-ins.
    subst: Vec<(String, String)>,
}

struct Scenario {
    _tmp: tempfile::TempDir,
    kubectl: String,
    sides: Vec<Side>,
    /// Compare without `status` (the embedded server makes up a status its
    /// controllers would write; the real one runs no such controllers) and
    /// managedFields without their `"."` entries, which the embedded server
    /// writes for keyed list elements alone (README, "The demo cluster").
    embedded_limits: bool,
    /// Custom resource definitions to delete at the end, per kubeconfig.
    crds: Vec<(PathBuf, String)>,
    // Dropped last: an embedded server some sides talk to.
    _embedded: Option<server::Cluster>,
}

impl Scenario {
    /// kubectl and kapply against the real server, each in a namespace of
    /// its own. `None`: no real server here (a skip, or a failure under CI).
    fn kubectl_vs_kapply(name: &str) -> Option<Scenario> {
        let real = real::kubeconfig()?;
        let bin = kubectl::kubectl()?;
        Some(Scenario::new(
            name,
            bin,
            vec![
                ("kubectl", Tool::Kubectl, real.clone()),
                ("kapply", Tool::Kapply, real),
            ],
            None,
        ))
    }

    fn new(
        name: &str,
        kubectl: String,
        sides: Vec<(&str, Tool, PathBuf)>,
        embedded: Option<server::Cluster>,
    ) -> Scenario {
        let tmp = tempfile::tempdir().unwrap();
        let base = real::unique(name);
        let sides: Vec<Side> = sides
            .into_iter()
            .map(|(label, tool, kubeconfig)| {
                let ns = format!("{base}-{label}");
                let dir = tmp.path().join(label);
                std::fs::create_dir_all(&dir).unwrap();
                Side {
                    label: label.to_string(),
                    tool,
                    kubeconfig,
                    subst: vec![(ns.clone(), "NS".to_string())],
                    ns,
                    dir,
                }
            })
            .collect();
        let s = Scenario {
            _tmp: tmp,
            kubectl,
            sides,
            embedded_limits: false,
            crds: Vec::new(),
            _embedded: embedded,
        };
        for side in &s.sides {
            s.kubectl_ok(side, &["create", "namespace", &side.ns], &[]);
        }
        s
    }

    /// Writes `rel` in every side's directory, `__NS__` replaced by its namespace.
    fn write(&self, rel: &str, text: &str) {
        for side in &self.sides {
            let path = side.dir.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text.replace(NS, &side.ns)).unwrap();
        }
    }

    fn remove(&self, rel: &str) {
        for side in &self.sides {
            std::fs::remove_file(side.dir.join(rel)).unwrap();
        }
    }

    /// `kubectl --kubeconfig K -n NS ARGS` for `side`, in its directory.
    fn kubectl_cmd(&self, side: &Side, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.kubectl);
        cmd.current_dir(&side.dir)
            .arg("--kubeconfig")
            .arg(&side.kubeconfig)
            .arg("--cache-dir")
            .arg(side.dir.join(".kube-cache"))
            .args(["-n", &side.ns])
            .args(args.iter().map(|a| a.replace(NS, &side.ns)))
            .env_remove("KUBECONFIG")
            .env_remove("KUBECTL_APPLYSET");
        cmd
    }

    fn kubectl_ok(&self, side: &Side, args: &[&str], env: &[(&str, &str)]) -> String {
        let out = run(self.kubectl_cmd(side, args).envs(env.iter().copied()));
        assert_eq!(
            out.code,
            Some(0),
            "{}: kubectl {args:?}: {out:?}",
            side.label
        );
        out.stdout
    }

    /// `kapply SUBCOMMAND --kubeconfig K -n NS ARGS` for `side`.
    fn kapply_cmd(&self, side: &Side, args: &[&str]) -> Command {
        let mut cmd = Command::new(KAPPLY);
        cmd.current_dir(&side.dir)
            .arg(args[0])
            .arg("--kubeconfig")
            .arg(&side.kubeconfig)
            .args(["-n", &side.ns])
            .args(args[1..].iter().map(|a| a.replace(NS, &side.ns)))
            .env_remove("KUBECONFIG")
            .env_remove("NO_COLOR");
        cmd
    }

    /// Each side runs its tool: `kubectl ARGS` or `kapply ARGS KAPPLY_EXTRA`.
    fn each(&self, args: &[&str], kapply_extra: &[&str], env: &[(&str, &str)]) -> Vec<Out> {
        self.sides
            .iter()
            .map(|side| match side.tool {
                Tool::Kubectl => run(self.kubectl_cmd(side, args).envs(env.iter().copied())),
                Tool::Kapply => {
                    let all: Vec<&str> = args.iter().chain(kapply_extra).copied().collect();
                    run(&mut self.kapply_cmd(side, &all))
                }
            })
            .collect()
    }

    /// `apply ARGS` by each side's tool (kapply with `--yes`): all succeed,
    /// or (`ok` false) all fail.
    fn apply(&self, args: &[&str], ok: bool) -> Vec<Out> {
        self.apply_env(args, ok, &[])
    }

    fn apply_env(&self, args: &[&str], ok: bool, env: &[(&str, &str)]) -> Vec<Out> {
        let all: Vec<&str> = ["apply"].iter().chain(args).copied().collect();
        let outs = self.each(&all, &["--yes"], env);
        self.same_success(&all, &outs, ok);
        outs
    }

    fn same_success(&self, args: &[&str], outs: &[Out], ok: bool) {
        for (side, out) in self.sides.iter().zip(outs) {
            assert_eq!(
                out.code == Some(0),
                ok,
                "{} ({:?}) {args:?}: {out:?}",
                side.label,
                side.tool
            );
        }
    }

    /// `diff ARGS` by each side's tool: the same exit code (0 nothing to
    /// change, 1 changes), which is returned.
    fn diff(&self, args: &[&str]) -> i32 {
        let all: Vec<&str> = ["diff"].iter().chain(args).copied().collect();
        let outs = self.each(&all, &[], &[]);
        let first = outs[0].code.expect("diff exited");
        for (side, out) in self.sides.iter().zip(&outs) {
            assert_eq!(
                out.code,
                Some(first),
                "{} diff {args:?}: {out:?} (first: {:?})",
                side.label,
                outs[0]
            );
        }
        first
    }

    /// kubectl ARGS (drift by another writer) on every side.
    fn kubectl_all(&self, args: &[&str], env: &[(&str, &str)]) {
        for side in &self.sides {
            self.kubectl_ok(side, args, env);
        }
    }

    /// The objects `kubectl get WHAT -o json` lists on `side`, normalized.
    fn objects(&self, side: &Side, what: &[&str]) -> Vec<Value> {
        let mut args = vec!["get"];
        args.extend(what);
        args.extend(["-o", "json", "--show-managed-fields"]);
        let list: Value = serde_json::from_str(&self.kubectl_ok(side, &args, &[])).unwrap();
        let items = match list["kind"].as_str() {
            Some("List") => list["items"].as_array().cloned().unwrap_or_default(),
            _ => vec![list],
        };
        items
            .iter()
            .map(|o| {
                let mut o = real::normalize(o, &side.subst);
                if self.embedded_limits
                    && let Some(o) = o.as_object_mut()
                {
                    o.remove("status");
                    if let Some(Value::Array(entries)) = o
                        .get_mut("metadata")
                        .and_then(|m| m.get_mut("managedFields"))
                    {
                        for e in entries {
                            drop_itself(&mut e["fieldsV1"]);
                        }
                    }
                }
                // The one difference by design: the ApplySet parent names
                // the tool that wrote it (kubectl refuses a set another
                // tool manages, and so does kapply).
                if let Some(t) =
                    o["metadata"]["annotations"].get_mut("applyset.kubernetes.io/tooling")
                {
                    let tool = match side.tool {
                        Tool::Kubectl => "kubectl/",
                        Tool::Kapply => "kapply/",
                    };
                    assert!(
                        t.as_str().is_some_and(|t| t.starts_with(tool)),
                        "{}: {t}",
                        side.label
                    );
                    *t = Value::from("TOOLING");
                }
                o
            })
            .collect()
    }

    /// Every side holds the same objects of `what` (as `kubectl get` takes it).
    fn assert_same(&self, what: &[&str]) -> Vec<Value> {
        let first = self.objects(&self.sides[0], what);
        for side in &self.sides[1..] {
            let other = self.objects(side, what);
            assert!(
                first == other,
                "{what:?}: {} and {} differ:\n{}",
                self.sides[0].label,
                side.label,
                real::json_diff(&Value::Array(first.clone()), &Value::Array(other))
            );
        }
        first
    }

    /// `kapply plan ARGS` on `side`: its JSON without what a saved plan
    /// pins (uids, resourceVersions, the server), the namespace's name and
    /// times, uids and cluster IPs masked.
    fn plan(&self, side: &Side, args: &[&str]) -> Value {
        let all: Vec<&str> = ["plan"].iter().chain(args).copied().collect();
        let out = run(&mut self.kapply_cmd(side, &all));
        assert!(
            matches!(out.code, Some(0 | 1)),
            "{}: {all:?}: {out:?}",
            side.label
        );
        let mut text = out.stdout.clone();
        for (from, to) in &side.subst {
            text = text.replace(from.as_str(), to);
        }
        let mut plan: Value = serde_json::from_str(&real::mask_volatile(&text))
            .unwrap_or_else(|e| panic!("{}: {e}: {out:?}", side.label));
        if let Some(p) = plan.as_object_mut() {
            p.remove("savedPlan");
        }
        for o in plan["objects"].as_array_mut().into_iter().flatten() {
            if let Some(o) = o.as_object_mut() {
                o.remove("pin");
            }
            // Node ports the server allocated differ between servers.
            for f in o["fields"].as_array_mut().into_iter().flatten() {
                let path = f["path"].as_str().unwrap_or_default();
                let leaf = path.ends_with(".nodePort") || path.ends_with(".healthCheckNodePort");
                for side in ["config", "live", "lastApplied"] {
                    if leaf && f[side].is_number() {
                        f[side] = "NODE-PORT".into();
                    }
                    mask_node_ports(&mut f[side]);
                }
            }
        }
        plan
    }

    /// kapply plans the same on every side: actions, rows, causes, owners,
    /// hazards and patches (kapply's causes decided from the managedFields
    /// each server wrote for the same history).
    fn assert_same_plan(&self, args: &[&str]) -> Value {
        let first = self.plan(&self.sides[0], args);
        for side in &self.sides[1..] {
            let other = self.plan(side, args);
            assert!(
                first == other,
                "kapply plan {args:?}: {} and {} differ:\n{}",
                self.sides[0].label,
                side.label,
                real::json_diff(&first, &other)
            );
        }
        first
    }

    /// Applies the CRD in `rel` on every side with kubectl and waits until
    /// it is established; deleted at the end.
    fn crd(&self, rel: &str, name: &str) -> &Self {
        for side in &self.sides {
            self.kubectl_ok(side, &["apply", "-f", rel], &[]);
            self.kubectl_ok(
                side,
                &[
                    "wait",
                    "--for=condition=Established",
                    "--timeout=60s",
                    &format!("crd/{name}"),
                ],
                &[],
            );
        }
        self
    }
}

impl Drop for Scenario {
    fn drop(&mut self) {
        // Best effort: the namespace controller empties and removes them.
        for side in &self.sides {
            let _ = self
                .kubectl_cmd(side, &["delete", "namespace", &side.ns, "--wait=false"])
                .output();
        }
        for side in &self.sides {
            for (kubeconfig, name) in &self.crds {
                if kubeconfig == &side.kubeconfig {
                    let _ = self
                        .kubectl_cmd(
                            side,
                            &["delete", "crd", &name.replace(NS, &side.ns), "--wait=false"],
                        )
                        .output();
                }
            }
        }
    }
}

/// A FieldsV1 value without its `"."` entries (the embedded server writes
/// them for keyed list elements only; README, "The demo cluster").
fn drop_itself(fields: &mut Value) {
    if let Some(m) = fields.as_object_mut() {
        m.remove(".");
        for v in m.values_mut() {
            drop_itself(v);
        }
    }
}

// ---------------------------------------------------------------------------
// Manifests

const SETTINGS: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {app: x}
data:
  color: blue
  LOG_LEVEL: info
";

fn web(image: &str, min_ready: bool) -> String {
    let min_ready = if min_ready {
        "  minReadySeconds: 5\n"
    } else {
        ""
    };
    format!(
        "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {{app: x}}
spec:
  replicas: 2
{min_ready}  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: web
        image: {image}
        ports:
        - name: http
          containerPort: 80
        env:
        - name: MODE
          value: fast
      - name: sidecar
        image: busybox:1.36
        command: [sleep, infinity]
"
    )
}

const SERVICE: &str = "\
apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {app: x}
spec:
  selector: {app: web}
  ports:
  - name: http
    port: 80
    targetPort: http
  - name: metrics
    port: 9090
";

const JOB: &str = "\
apiVersion: batch/v1
kind: Job
metadata:
  name: once
  labels: {app: x}
spec:
  backoffLimit: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox:1.36
        command: [\"true\"]
";

/// Jobs with labels of their own (`JOB`), with their pod template's alone
/// and with none: kube-apiserver names each Job and its uid in the pod
/// template's labels and selector, and in the Job's labels where the Job
/// sent none.
const LABELLED_JOBS: &str = "\
apiVersion: batch/v1
kind: Job
metadata:
  name: bare
spec:
  template:
    metadata:
      labels: {tier: t}
    spec:
      restartPolicy: Never
      containers:
      - {name: c, image: busybox:1.36}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: none
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: c, image: busybox:1.36}
";

const PVC: &str = "\
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  labels: {app: x}
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
";

/// A namespaced CRD with a structural schema and a default, in a group of
/// the side's own.
const WIDGET_CRD: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.__NS__.example.com
spec:
  group: __NS__.example.com
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
              size: {type: integer, minimum: 1}
              color: {type: string, default: red}
";

fn widget(size: u32) -> String {
    format!(
        "apiVersion: __NS__.example.com/v1\nkind: Widget\nmetadata:\n  name: w1\n  labels: {{app: x}}\nspec:\n  size: {size}\n"
    )
}

const KINDS: &str = "configmaps,deployments,services,jobs,persistentvolumeclaims";

// ---------------------------------------------------------------------------
// kubectl and kapply, each from the same start

/// Apply, drift by kubectl's imperative commands, diff, apply again, a
/// server-side dry run, delete: on Deployments, Services with named ports,
/// Jobs, PVCs and a custom resource with a schema default.
#[test]
fn apply_drift_reapply_dry_run_and_delete() {
    let Some(mut s) = Scenario::kubectl_vs_kapply("life") else {
        return;
    };
    life(&mut s);
}

/// The embedded server held to the real one: each history run by kubectl
/// against the real server, and by kubectl and by kapply against the
/// embedded one, every final object compared (`status` and managedFields
/// aside: see `Scenario::embedded_limits`).
fn held(name: &str, history: fn(&mut Scenario)) {
    let Some(real) = real::kubeconfig() else {
        return;
    };
    let Some(bin) = kubectl::kubectl() else {
        return;
    };
    let embedded = server::Cluster::start();
    let kubeconfig = embedded.kubeconfig.clone();
    let mut s = Scenario::new(
        name,
        bin,
        vec![
            ("real", Tool::Kubectl, real),
            ("embedded", Tool::Kubectl, kubeconfig.clone()),
            ("embedded-kapply", Tool::Kapply, kubeconfig),
        ],
        Some(embedded),
    );
    s.embedded_limits = true;
    history(&mut s);
}

#[test]
fn embedded_held_to_real_apply_drift_reapply_dry_run_and_delete() {
    held("held-life", life);
}

#[test]
fn embedded_held_to_real_prune_by_label() {
    held("held-prune", prune_history);
}

#[test]
fn embedded_held_to_real_applyset() {
    held("held-aset", applyset_history);
}

#[test]
fn embedded_held_to_real_invalid_objects_and_immutable_fields() {
    held("held-invalid", invalid_history);
}

#[test]
fn embedded_held_to_real_export() {
    held("held-export", export_history);
}

#[test]
fn embedded_held_to_real_service_types() {
    held("held-svc", service_type_history);
}

/// `v` with the node ports in it masked (a Service port element's).
fn mask_node_ports(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if (k == "nodePort" || k == "healthCheckNodePort") && x.is_number() {
                    *x = "NODE-PORT".into();
                } else {
                    mask_node_ports(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(mask_node_ports),
        _ => {}
    }
}

#[test]
fn embedded_held_to_real_job_labels() {
    held("held-jobs", job_label_history);
}

/// Jobs as created: the labels and selector the server adds, in the Job's
/// own labels too where it sent none, owned by no writer; every plan's rows
/// have the same causes and owners. (Not the same reasons: the embedded
/// server records no `.` of a map a writer set, which the real one does of
/// `bare`'s template labels, so there the labels it added read as
/// defaulted when apply wrote them, not as set by no writer.)
fn job_label_history(s: &mut Scenario) {
    s.write("m/job.yaml", JOB);
    s.write("m/jobs.yaml", LABELLED_JOBS);
    s.apply(&["-f", "m"], true);
    s.assert_same(&["jobs"]);
    let rows = |side: &Side| -> Vec<[Value; 5]> {
        let plan = s.plan(side, &["-f", "m"]);
        let objects = plan["objects"].as_array().unwrap().iter();
        let fields = objects.flat_map(|o| {
            let rows = o["fields"].as_array().unwrap().iter();
            rows.map(|f| {
                let at = |k: &str| f.get(k).cloned().unwrap_or(Value::Null);
                [
                    o["name"].clone(),
                    at("path"),
                    at("action"),
                    at("cause"),
                    at("owner"),
                ]
            })
        });
        fields.collect()
    };
    let first = rows(&s.sides[0]);
    assert!(
        first.iter().any(|r| r[3] == "server-default")
            && first.iter().all(|r| r[3] != "other-writer"),
        "{first:#?}"
    );
    for side in &s.sides[1..] {
        assert_eq!(rows(side), first, "{} and {}", s.sides[0].label, side.label);
    }
}

/// A Service named `lb` of type `ty` (extra spec lines in `more`).
fn typed_service(ty: &str, more: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: lb\nspec:\n  type: {ty}\n{more}  \
         selector: {{app: web}}\n  ports:\n  - {{name: http, port: 80}}\n  - {{name: metrics, port: 9090}}\n"
    )
}

/// A Service whose type changes: node ports allocated as it is stored,
/// kept by an apply that leaves them out (and by one that renames a
/// port's number), the health check node port with `Local`, both dropped
/// when the type no longer uses them.
fn service_type_history(s: &mut Scenario) {
    s.write("m/lb.yaml", &typed_service("NodePort", ""));
    s.apply(&["-f", "m"], true);
    s.assert_same(&["services"]);
    let local = "  externalTrafficPolicy: Local\n";
    s.write("m/lb.yaml", &typed_service("LoadBalancer", local));
    s.apply(&["-f", "m"], true);
    s.assert_same(&["services"]);
    s.write(
        "m/lb.yaml",
        &typed_service("LoadBalancer", "").replace("port: 9090", "port: 9091"),
    );
    s.apply(&["-f", "m"], true);
    s.assert_same(&["services"]);
    // A port renumbered as the type changes: its node port goes too. The
    // plan says what the server drops.
    s.write("m/lb.yaml", &typed_service("ClusterIP", ""));
    let plan = s.assert_same_plan(&["-f", "m"]);
    let warnings = plan["objects"][0]["warnings"].to_string();
    assert!(
        warnings.contains(
            "spec.type changes from LoadBalancer to ClusterIP: the server drops \
             spec.ports[*].nodePort, spec.allocateLoadBalancerNodePorts, \
             spec.externalTrafficPolicy as it stores the change"
        ),
        "{warnings}"
    );
    s.apply(&["-f", "m"], true);
    let after = s.assert_same(&["services"]);
    let spec = &after[0]["spec"];
    for gone in [
        "nodePort",
        "allocateLoadBalancerNodePorts",
        "externalTrafficPolicy",
    ] {
        assert!(!spec.to_string().contains(gone), "{gone}: {spec}");
    }
    // An ExternalName has no cluster IP: the server drops it.
    s.write(
        "m/lb.yaml",
        &typed_service("ExternalName", "  externalName: db.example.com\n"),
    );
    let plan = s.assert_same_plan(&["-f", "m"]);
    let warnings = plan["objects"][0]["warnings"].to_string();
    assert!(
        warnings.contains(
            "the server drops spec.clusterIP, spec.clusterIPs, spec.ipFamilies, \
             spec.ipFamilyPolicy, spec.internalTrafficPolicy as it stores the change"
        ),
        "{warnings}"
    );
    s.apply(&["-f", "m"], true);
    let after = s.assert_same(&["services"]);
    let spec = &after[0]["spec"];
    for gone in ["ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"] {
        assert!(!spec.to_string().contains(gone), "{gone}: {spec}");
    }
}

#[test]
fn service_types() {
    let Some(mut s) = Scenario::kubectl_vs_kapply("svc") else {
        return;
    };
    service_type_history(&mut s);
}

fn life(s: &mut Scenario) {
    s.crds.push((
        s.sides[0].kubeconfig.clone(),
        "widgets.__NS__.example.com".into(),
    ));
    s.write("crd/widget.yaml", WIDGET_CRD);
    s.crd("crd/widget.yaml", "widgets.__NS__.example.com");
    s.write("m/settings.yaml", SETTINGS);
    s.write("m/web.yaml", &web("nginx:1.16.1", true));
    s.write("m/service.yaml", SERVICE);
    s.write("m/job.yaml", JOB);
    s.write("m/pvc.yaml", PVC);
    s.write("m/widget.yaml", &widget(1));
    let widgets = "widgets.__NS__.example.com";

    assert_eq!(s.diff(&["-f", "m"]), 1);
    s.apply(&["-f", "m"], true);
    s.assert_same(&[KINDS]);
    s.assert_same_plan(&["-f", "m"]);
    let w = s.assert_same(&[widgets]);
    assert_eq!(w[0]["spec"]["color"], "red", "the schema's default: {w:?}");
    assert_eq!(s.diff(&["-f", "m"]), 0);

    // Another writer: kubectl's imperative commands.
    s.kubectl_all(&["scale", "deployment/web", "--replicas=3"], &[]);
    s.kubectl_all(&["set", "image", "deployment/web", "web=nginx:1.17.0"], &[]);
    s.kubectl_all(
        &["set", "env", "deployment/web", "-c", "sidecar", "EXTRA=1"],
        &[],
    );
    s.kubectl_all(&["label", "configmap", "settings", "tier=gold"], &[]);
    s.kubectl_all(
        &[
            "patch",
            "service",
            "web",
            "-p",
            r#"{"spec":{"ports":[{"name":"metrics","port":9090,"targetPort":9091}]}}"#,
        ],
        &[],
    );
    s.kubectl_all(
        &[
            "patch",
            "widgets.__NS__.example.com",
            "w1",
            "--type=merge",
            "-p",
            r#"{"spec":{"size":5}}"#,
        ],
        &[],
    );
    s.kubectl_all(
        &["edit", "configmap", "settings"],
        &[(
            "KUBE_EDITOR",
            "sed -i -e s/LOG_LEVEL:\\ info/LOG_LEVEL:\\ debug/",
        )],
    );
    let cm = s.objects(&s.sides[0], &["configmap", "settings"]);
    assert_eq!(cm[0]["data"]["LOG_LEVEL"], "debug", "the edit took: {cm:?}");
    s.assert_same(&[KINDS]);
    assert_eq!(s.diff(&["-f", "m"]), 1);
    let plan = s.assert_same_plan(&["-f", "m"]);
    let causes: Vec<&str> = plan["objects"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|o| o["fields"].as_array().unwrap())
        .filter_map(|f| f["cause"].as_str())
        .collect();
    for cause in ["drift", "other-writer", "server-default"] {
        assert!(causes.contains(&cause), "{cause} not in {causes:?}");
    }

    // The manifests change the image and drop minReadySeconds.
    s.write("m/web.yaml", &web("nginx:1.18.0", false));
    s.write("m/widget.yaml", &widget(2));
    s.apply(&["-f", "m"], true);
    let after = s.assert_same(&[KINDS]);
    s.assert_same(&[widgets]);
    let dep = after.iter().find(|o| o["kind"] == "Deployment").unwrap();
    assert_eq!(dep["spec"]["replicas"], 2, "{dep}");
    assert!(dep["spec"].get("minReadySeconds").is_none(), "{dep}");
    assert_eq!(s.diff(&["-f", "m"]), 0);
    s.assert_same_plan(&["-f", "m"]);

    // A server-side dry run writes nothing.
    s.write("m/settings.yaml", &SETTINGS.replace("blue", "red"));
    s.apply(&["-f", "m", "--dry-run=server"], true);
    let cm = s.assert_same(&["configmap", "settings"]);
    assert_eq!(cm[0]["data"]["color"], "blue");

    s.each(&["delete", "-f", "m"], &["--yes"], &[]);
    let left = s.assert_same(&[KINDS]);
    assert!(left.is_empty(), "{left:?}");
}

fn configmap(name: &str, app: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels: {{app: {app}}}\ndata:\n  k: v\n"
    )
}

/// `--prune -l`: the allowlist of kinds, and a bystander with another label.
#[test]
fn prune_by_label() {
    let Some(mut s) = Scenario::kubectl_vs_kapply("prune") else {
        return;
    };
    prune_history(&mut s);
}

fn prune_history(s: &mut Scenario) {
    s.write("other/bystander.yaml", &configmap("bystander", "other"));
    s.apply(&["-f", "other"], true);
    s.write("m/one.yaml", &configmap("one", "x"));
    s.write("m/two.yaml", &configmap("two", "x"));
    s.write("m/web.yaml", &web("nginx:1.16.1", true));
    s.write("m/job.yaml", JOB);
    s.apply(&["-f", "m", "--prune", "-l", "app=x"], true);
    s.assert_same(&[KINDS]);

    s.remove("m/two.yaml");
    s.remove("m/job.yaml");
    s.remove("m/web.yaml");
    s.apply(&["-f", "m", "--prune", "-l", "app=x"], true);
    let left = s.assert_same(&[KINDS]);
    let names: Vec<&str> = left
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["bystander", "one"], "{left:?}");
}

/// The ApplySet ID kubectl gives a Secret parent `name` in `ns`.
fn applyset_id(name: &str, ns: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(format!("{name}.{ns}.Secret.").as_bytes());
    format!(
        "applyset-{}-v1",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
    )
}

/// `--prune --applyset`: the parent Secret (written by server-side apply)
/// and its members, then a member pruned.
#[test]
fn applyset_parent_and_prune() {
    let Some(mut s) = Scenario::kubectl_vs_kapply("aset") else {
        return;
    };
    applyset_history(&mut s);
}

fn applyset_history(s: &mut Scenario) {
    for side in &mut s.sides {
        let id = applyset_id("myset", &side.ns);
        side.subst.insert(0, (id, "APPLYSET-ID".into()));
    }
    let env = [("KUBECTL_APPLYSET", "true")];
    s.write("m/keep.yaml", &configmap("keep", "x"));
    s.write("m/gone.yaml", &configmap("gone", "x"));
    s.write("m/web.yaml", &web("nginx:1.16.1", true));
    let args = ["-f", "m", "--prune", "--applyset=myset"];
    s.apply_env(&args, true, &env);
    s.assert_same(&["secrets,configmaps,deployments"]);

    s.remove("m/gone.yaml");
    s.remove("m/web.yaml");
    s.apply_env(&args, true, &env);
    let left = s.assert_same(&["secrets,configmaps,deployments"]);
    let names: Vec<&str> = left
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["myset", "keep"], "{left:?}");
}

/// 422s: an invalid object (validation only the real server does) fails
/// while the rest applies; an immutable field changed fails and leaves the
/// object as it was. Both tools report the server's causes.
#[test]
fn invalid_objects_and_immutable_fields() {
    let Some(mut s) = Scenario::kubectl_vs_kapply("invalid") else {
        return;
    };
    invalid_history(&mut s);
}

fn invalid_history(s: &mut Scenario) {
    s.write("m/settings.yaml", SETTINGS);
    s.write("m/job.yaml", JOB);
    s.write(
        "m/web.yaml",
        &web("nginx:1.16.1", true).replace(
            "        env:\n",
            "        securityContext:\n          seccompProfile: {}\n        env:\n",
        ),
    );
    let outs = s.apply(&["-f", "m"], false);
    let cause = "spec.template.spec.containers[0].securityContext.seccompProfile.type: \
                 Required value: type is required when seccompProfile is set";
    for out in &outs {
        out.assert_stderr(cause);
    }
    let made = s.assert_same(&[KINDS]);
    let kinds: Vec<&str> = made.iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["ConfigMap", "Job"], "{made:?}");

    // A Job's pod template and a Deployment's selector are immutable.
    s.write("m/web.yaml", &web("nginx:1.16.1", true));
    s.apply(&["-f", "m"], true);
    s.write("m/job.yaml", &JOB.replace("busybox:1.36", "busybox:1.37"));
    s.write(
        "m/web.yaml",
        &web("nginx:1.16.1", true).replace("app: web", "app: web2"),
    );
    let outs = s.apply(&["-f", "m"], false);
    for out in &outs {
        out.assert_stderr("field is immutable");
        out.assert_stderr("spec.selector");
        out.assert_stderr("spec.template");
    }
    let after = s.assert_same(&[KINDS]);
    assert_eq!(after, made_with_web(&made, &after), "nothing changed");
    // A server-side dry run fails the same way and writes nothing.
    let outs = s.apply(&["-f", "m", "--dry-run=server"], false);
    for out in &outs {
        out.assert_stderr("field is immutable");
    }
    assert_eq!(s.assert_same(&[KINDS]), after);
    // `--force`: what the server refuses to patch is deleted and created
    // again from the manifest, by kubectl and by kapply alike.
    let outs = s.apply(&["-f", "m", "--force"], true);
    for (side, out) in s.sides.iter().zip(&outs) {
        match side.tool {
            Tool::Kubectl => {
                out.assert_stdout("deployment.apps/web configured");
                out.assert_stdout("job.batch/once configured");
            }
            Tool::Kapply => {
                out.assert_stdout("/web replaced (deleted and created again: --force)");
                out.assert_stdout("/once replaced (deleted and created again: --force)");
            }
        }
    }
    let forced = s.assert_same(&[KINDS]);
    let dep = forced
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("the Deployment is back");
    assert_eq!(
        dep["spec"]["selector"]["matchLabels"]["app"], "web2",
        "{dep}"
    );
    // And then there is nothing left to do on either side.
    assert_eq!(s.diff(&["-f", "m"]), 0);
    // Refused for another reason, the new object cannot be created either:
    // the one deleted is created again as it was, and the apply fails.
    s.write(
        "m/web.yaml",
        &web("nginx:1.16.1", true)
            .replace("app: web", "app: web2")
            .replace("replicas: 2", "replicas: -1"),
    );
    let outs = s.apply(&["-f", "m", "--force"], false);
    for out in &outs {
        out.assert_stderr("must be greater than or equal to 0");
    }
    assert_eq!(s.assert_same(&[KINDS]), forced, "restored as it was");
}

/// `made` with the Deployment `after` holds (applied between the two).
fn made_with_web(made: &[Value], after: &[Value]) -> Vec<Value> {
    let mut all = made.to_vec();
    all.extend(after.iter().filter(|o| o["kind"] == "Deployment").cloned());
    all.sort_by_key(|o| KIND_ORDER.iter().position(|k| o["kind"] == *k));
    all
}

/// The order `kubectl get KINDS` lists kinds in.
const KIND_ORDER: [&str; 5] = [
    "ConfigMap",
    "Deployment",
    "Service",
    "Job",
    "PersistentVolumeClaim",
];

/// Objects made with `kubectl create`, brought under apply with `kapply
/// export`: applied by kubectl from the export on one side and by kapply on
/// the other, they end the same, with nothing changed but the annotation.
#[test]
fn export_then_apply() {
    let Some(mut s) = Scenario::kubectl_vs_kapply("export") else {
        return;
    };
    export_history(&mut s);
}

fn export_history(s: &mut Scenario) {
    s.kubectl_all(
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx:1.16.1",
            "--replicas=2",
            "--port=80",
        ],
        &[],
    );
    s.kubectl_all(
        &["create", "service", "clusterip", "web", "--tcp=80:8080"],
        &[],
    );
    s.kubectl_all(&["create", "configmap", "cfg", "--from-literal=k=v"], &[]);
    let before = s.assert_same(&[KINDS]);
    for side in &s.sides {
        let out = run(&mut s.kapply_cmd(
            side,
            &["export", "deploy/web", "svc/web", "cm/cfg", "-o", "m"],
        ));
        assert_eq!(out.code, Some(0), "{}: {out:?}", side.label);
    }
    let plan = s.assert_same_plan(&["-f", "m"]);
    let unmanaged = plan["objects"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|o| o["fields"].as_array().unwrap())
        .filter(|f| f["cause"] == "unmanaged")
        .count();
    assert!(unmanaged > 0, "{plan}");
    s.apply(&["-f", "m"], true);
    let after = s.assert_same(&[KINDS]);
    assert_eq!(s.diff(&["-f", "m"]), 0);
    s.assert_same_plan(&["-f", "m"]);
    for (b, a) in before.iter().zip(&after) {
        assert!(a["spec"] == b["spec"], "{}", real::json_diff(b, a));
        // kube-apiserver counts a Deployment's annotation change as a new
        // generation (its update strategy compares spec and annotations).
        let bump = i64::from(a["kind"] == "Deployment");
        assert_eq!(
            a["metadata"]["generation"].as_i64(),
            b["metadata"]["generation"].as_i64().map(|g| g + bump),
            "{a}"
        );
        assert!(
            a["metadata"]["annotations"][LAST_APPLIED].is_string(),
            "{a}"
        );
    }
}

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A create planned while the object did not exist, sent after another
/// writer made it: the real server's 409 AlreadyExists, reported as a
/// change since the plan, and the other writer's object kept.
#[test]
fn create_conflict_since_the_plan() {
    use kapply::cluster::{ApplyOptions, ClusterOptions, PruneOptions, Session};
    use kapply::manifest::{LoadOptions, load};
    use kapply::ops::ApplyItem;
    let Some(real) = real::kubeconfig() else {
        return;
    };
    let Some(bin) = kubectl::kubectl() else {
        return;
    };
    let s = Scenario::new(
        "conflict",
        bin,
        vec![("kapply", Tool::Kapply, real.clone())],
        None,
    );
    s.write("m/fresh.yaml", &configmap("fresh", "x"));
    let side = &s.sides[0];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let session = Session::connect(&ClusterOptions {
            kubeconfig: Some(real),
            namespace: Some(side.ns.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
        let loaded = load(&LoadOptions {
            paths: vec![side.dir.join("m")],
            recursive: true,
            namespace: None,
            default_namespace: side.ns.clone(),
        });
        let plan = session
            .plan(loaded, &PruneOptions::default(), None)
            .await
            .unwrap()
            .plan;
        s.kubectl_ok(
            side,
            &["create", "configmap", "fresh", "--from-literal=k=theirs"],
            &[],
        );
        let items = plan
            .objects
            .iter()
            .map(|o| ApplyItem {
                plan: o.clone(),
                accepted_fields: None,
                released_fields: Vec::new(),
            })
            .collect();
        let results = session.apply(items, &ApplyOptions::default()).await;
        assert_eq!(results.len(), 1, "{results:?}");
        assert!(!results[0].ok(), "{results:?}");
        assert!(
            results[0].message().contains("since the plan"),
            "{results:?}"
        );
    });
    let cm = s.objects(side, &["configmap", "fresh"]);
    assert_eq!(cm[0]["data"]["k"], "theirs", "{cm:?}");
}

/// The same through a saved plan: `apply --plan FILE` refuses the object
/// whose live state changed since the plan (a saved plan pins what was
/// reviewed: here a create, and the object now exists), leaving the other
/// writer's value.
#[test]
fn saved_plan_create_refused_when_the_object_appeared() {
    let Some(real) = real::kubeconfig() else {
        return;
    };
    let Some(bin) = kubectl::kubectl() else {
        return;
    };
    let s = Scenario::new("saved", bin, vec![("kapply", Tool::Kapply, real)], None);
    s.write("m/fresh.yaml", &configmap("fresh", "x"));
    let side = &s.sides[0];
    let plan = run(&mut s.kapply_cmd(side, &["plan", "-f", "m"]));
    let planned: Value =
        serde_json::from_str(&plan.stdout).unwrap_or_else(|e| panic!("{e}: {plan:?}"));
    assert_eq!(planned["objects"][0]["action"], "create", "{plan:?}");
    std::fs::write(side.dir.join("plan.json"), &plan.stdout).unwrap();
    s.kubectl_ok(
        side,
        &["create", "configmap", "fresh", "--from-literal=k=theirs"],
        &[],
    );
    let out = run(&mut s.kapply_cmd(side, &["apply", "-f", "m", "--plan", "plan.json", "--yes"]));
    assert_ne!(out.code, Some(0), "{out:?}");
    let cm = s.objects(side, &["configmap", "fresh"]);
    assert_eq!(cm[0]["data"]["k"], "theirs", "{cm:?}");
}

/// An element another writer added to a list the config names keeps its
/// place: re-applying the same config changes nothing, and `kubectl diff`
/// says so (exit 0); so does kapply, which decides from the predicted
/// result (the `$setElementOrder` directive alone leaves live as it is).
#[test]
fn an_element_added_by_another_writer_changes_nothing_on_reapply() {
    let Some(s) = Scenario::kubectl_vs_kapply("order") else {
        return;
    };
    s.write("m/web.yaml", &web("nginx:1.16.1", true));
    s.apply(&["-f", "m"], true);
    s.kubectl_all(
        &["set", "env", "deployment/web", "-c", "web", "EXTRA=1"],
        &[],
    );
    s.apply(&["-f", "m"], true);
    s.assert_same(&["deployments"]);
    assert_eq!(s.diff(&["-f", "m"]), 0);
}

/// What kube-apiserver sets past its field manager, owned by no writer in
/// its managedFields (a Service's allocated cluster IPs and IP families, a
/// Namespace's finalizer), reads in kapply's plan as set by the server,
/// with no owner; another writer's field still names its writer.
#[test]
fn fields_the_real_server_sets_read_as_server_defaults() {
    let Some(s) = Scenario::kubectl_vs_kapply("alloc") else {
        return;
    };
    s.write("m/service.yaml", SERVICE);
    s.write(
        "m/lb.yaml",
        &typed_service("LoadBalancer", "  externalTrafficPolicy: Local\n"),
    );
    s.write(
        "m/namespace.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: __NS__-x\n",
    );
    s.write("m/job.yaml", JOB);
    s.write("m/jobs.yaml", LABELLED_JOBS);
    s.apply(&["-f", "m"], true);
    s.kubectl_all(&["label", "service", "web", "tier=gold"], &[]);
    let plan = s.assert_same_plan(&["-f", "m"]);
    let row = |kind: &str, path: &str| -> Value {
        plan["objects"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o.to_string().contains(&format!("\"kind\":\"{kind}\"")))
            .flat_map(|o| o["fields"].as_array().unwrap())
            .find(|f| f["path"] == path)
            .unwrap_or_else(|| panic!("{kind} {path} not in {plan:#}"))
            .clone()
    };
    for path in [
        "spec.clusterIP",
        "spec.clusterIPs",
        "spec.ipFamilies",
        "spec.ipFamilyPolicy",
    ] {
        let f = row("Service", path);
        assert_eq!(f["cause"], "server-default", "{f}");
        assert!(f.get("owner").is_none_or(Value::is_null), "{f}");
    }
    // Allocated as the load balancer was stored: no writer owns them.
    for path in [
        "spec.ports[port=80].nodePort",
        "spec.ports[port=9090].nodePort",
        "spec.healthCheckNodePort",
    ] {
        let f = plan["objects"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["name"] == "lb")
            .flat_map(|o| o["fields"].as_array().unwrap())
            .find(|f| f["path"] == path)
            .unwrap_or_else(|| panic!("lb {path} not in {plan:#}"));
        assert_eq!(f["cause"], "server-default", "{f}");
        assert_eq!(f["live"], "NODE-PORT", "{f}");
        assert!(f.get("owner").is_none_or(Value::is_null), "{f}");
    }
    let f = row("Namespace", "spec.finalizers");
    assert_eq!(f["cause"], "server-default", "{f}");
    // A Job's selector and the labels naming it: its create strategy's,
    // no writer's; a Job sent without labels gets its template's, the
    // ones its writer sent (`tier`) defaulted when apply wrote it.
    let job = |name: &str| -> Vec<Value> {
        let o = plan["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["kind"] == "Job" && o["name"] == name)
            .unwrap_or_else(|| panic!("Job {name} not in {plan:#}"));
        o["fields"].as_array().unwrap().clone()
    };
    let made = [
        r#"spec.selector.matchLabels["batch.kubernetes.io/controller-uid"]"#,
        r#"spec.template.metadata.labels["batch.kubernetes.io/controller-uid"]"#,
        r#"spec.template.metadata.labels["batch.kubernetes.io/job-name"]"#,
        "spec.template.metadata.labels.controller-uid",
        "spec.template.metadata.labels.job-name",
    ];
    let own = made[1..]
        .iter()
        .map(|p| p.replacen("spec.template.", "", 1))
        .collect::<Vec<_>>();
    for (name, paths, set) in [
        ("once", made.iter().map(|p| p.to_string()).collect(), true),
        (
            "none",
            made.iter()
                .map(|p| p.to_string())
                .chain(own.clone())
                .collect::<Vec<_>>(),
            true,
        ),
        ("bare", [made[0].to_string()].into_iter().collect(), true),
        (
            "bare",
            made[1..]
                .iter()
                .map(|p| p.to_string())
                .chain(own.clone())
                .chain(["metadata.labels.tier".to_string()])
                .collect(),
            false,
        ),
    ] {
        let fields = job(name);
        for path in &paths {
            let f = fields
                .iter()
                .find(|f| f["path"] == path.as_str())
                .unwrap_or_else(|| panic!("Job {name} {path} not in {fields:#?}"));
            assert_eq!(f["cause"], "server-default", "{name}: {f}");
            assert!(f.get("owner").is_none_or(Value::is_null), "{name}: {f}");
            let reason = f["reason"].as_str().unwrap();
            let want = if set {
                "live only: set by the server as it stored the object"
            } else {
                "live only: defaulted by the server when apply wrote the object"
            };
            assert!(reason.starts_with(want), "{name}: {f}");
        }
        // Nothing of a Job reads as another writer's or released.
        for f in &fields {
            assert_ne!(f["cause"], "other-writer", "{name}: {f}");
        }
    }
    let f = row("Service", "metadata.labels.tier");
    assert_eq!(f["cause"], "other-writer", "{f}");
    assert_eq!(f["owner"], "kubectl-label", "{f}");
    // The real server runs no namespace controller: a deleted Namespace
    // stays Terminating, so it is not waited for.
    for side in &s.sides {
        let ns = format!("{}-x", side.ns);
        s.kubectl_ok(side, &["delete", "namespace", &ns, "--wait=false"], &[]);
    }
}

/// An object applied server-side has no last-applied annotation: applied
/// client-side, kubectl warns that it will add it and deletes nothing.
/// kapply's warning names the server-side applier (not "created
/// imperatively", which would be false), the plan clears nothing, and after
/// kubectl's and kapply's client-side apply the objects are the same and
/// both diffs exit 0 (the annotation alone is no `kubectl diff` change).
#[test]
fn a_server_side_applied_object_applied_client_side() {
    let Some(s) = Scenario::kubectl_vs_kapply("ssa-csa") else {
        return;
    };
    s.write("m/web.yaml", &web("nginx:1.16.1", true));
    s.kubectl_all(&["apply", "--server-side", "-f", "m"], &[]);
    s.write("m/web.yaml", &web("nginx:1.17.0", false));
    let plan = s.assert_same_plan(&["-f", "m"]);
    let web = &plan["objects"][0];
    assert_eq!(web["action"], "update", "{web:#}");
    let warnings = web["warnings"].to_string();
    assert!(
        warnings.contains("the object is applied server-side (by kubectl)"),
        "{warnings}"
    );
    assert!(!warnings.contains("created imperatively"), "{warnings}");
    assert!(
        web["fields"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["action"] != "clear"),
        "{web:#}"
    );
    s.apply(&["-f", "m"], true);
    s.assert_same(&["deployments"]);
    assert_eq!(s.diff(&["-f", "m"]), 0);
}

/// One object of each kind the core defaults, with the parts its rules
/// reach (containers with ports and probes, volumes, templates, claims).
const DEFAULTED: &[&str] = &[
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {app: d}}\n  template:\n    metadata: {labels: {app: d}}\n    spec:\n      initContainers: [{name: init, image: busybox}]\n      containers:\n      - name: web\n        image: nginx:1.27\n        ports: [{containerPort: 80}, {containerPort: 53, protocol: UDP, name: dns}]\n        readinessProbe: {httpGet: {path: /, port: 80}}\n        livenessProbe: {tcpSocket: {port: 80}}\n        env: [{name: A, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]\n        volumeMounts: [{name: cfg, mountPath: /etc/cfg}]\n      volumes:\n      - {name: cfg, configMap: {name: c}}\n      - {name: sec, secret: {secretName: s}}\n      - {name: tmp, emptyDir: {}}\n      - {name: proj, projected: {sources: [{configMap: {name: c}}, {serviceAccountToken: {path: token}}]}}\n      - {name: api, downwardAPI: {items: [{path: podname, fieldRef: {fieldPath: metadata.name}}]}}\n",
    "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec:\n  serviceName: s\n  selector: {matchLabels: {app: s}}\n  template:\n    metadata: {labels: {app: s}}\n    spec:\n      containers: [{name: db, image: postgres:16, ports: [{containerPort: 5432}]}]\n  volumeClaimTemplates:\n  - metadata: {name: data}\n    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n",
    "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: ds}\nspec:\n  selector: {matchLabels: {app: ds}}\n  template:\n    metadata: {labels: {app: ds}}\n    spec:\n      hostNetwork: true\n      containers: [{name: agent, image: agent:1, ports: [{containerPort: 9100, hostPort: 9100}]}]\n",
    "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs}\nspec:\n  selector: {matchLabels: {app: rs}}\n  template:\n    metadata: {labels: {app: rs}}\n    spec:\n      containers: [{name: c, image: c:1}]\n",
    "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: c:1}]\n",
    "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: cj}\nspec:\n  schedule: '*/5 * * * *'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers: [{name: c, image: c:1}]\n",
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: c:1, ports: [{containerPort: 8080}]}]\n",
    "apiVersion: v1\nkind: Service\nmetadata: {name: svc}\nspec:\n  selector: {app: d}\n  ports: [{port: 80, targetPort: 8080, name: http}, {port: 53, protocol: UDP, name: dns}]\n",
    "apiVersion: v1\nkind: Service\nmetadata: {name: headless}\nspec:\n  clusterIP: None\n  selector: {app: s}\n  ports: [{port: 5432}]\n",
    "apiVersion: v1\nkind: Service\nmetadata: {name: ext}\nspec:\n  type: ExternalName\n  externalName: example.com\n",
    "apiVersion: v1\nkind: Service\nmetadata: {name: lb}\nspec:\n  type: LoadBalancer\n  externalTrafficPolicy: Local\n  selector: {app: d}\n  ports: [{port: 80, name: http}, {port: 443, name: https}]\n",
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: sa}\nspec:\n  selector: {matchLabels: {app: sa}}\n  template:\n    metadata: {labels: {app: sa}}\n    spec:\n      serviceAccountName: robot\n      containers: [{name: c, image: c:1}]\n",
    "apiVersion: v1\nkind: Secret\nmetadata: {name: sec}\nstringData: {a: b}\n",
    "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: np}\nspec:\n  podSelector: {matchLabels: {app: d}}\n  ingress: [{ports: [{port: 80}], from: [{podSelector: {}}]}]\n  egress: [{ports: [{port: 53, protocol: UDP}]}]\n",
    "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: pvc}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n",
    // Zero values of omitempty fields, which the server does not store.
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: zero}\nspec:\n  minReadySeconds: 0\n  selector: {matchLabels: {app: z}}\n  template:\n    metadata: {labels: {app: z}}\n    spec:\n      hostNetwork: false\n      hostPID: false\n      hostIPC: false\n      containers:\n      - {name: c, image: c:1, stdin: false, stdinOnce: false, tty: false, volumeMounts: [{name: v, mountPath: /v, readOnly: false}]}\n      volumes: [{name: v, emptyDir: {}}]\n",
    "apiVersion: v1\nkind: Service\nmetadata: {name: zero}\nspec:\n  publishNotReadyAddresses: false\n  ports: [{port: 80}]\n",
    "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: rb}\nroleRef: {kind: Role, name: r}\nsubjects:\n- {kind: ServiceAccount, name: a, namespace: x, apiGroup: ''}\n- {kind: User, name: u}\n- {kind: Group, name: g}\n",
    "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: __NS__-v}\nwebhooks:\n- name: v.example.com\n  sideEffects: None\n  admissionReviewVersions: [v1]\n  clientConfig: {service: {name: s, namespace: x, path: /v}}\n  rules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]\n",
    "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: __NS__-m}\nwebhooks:\n- name: m.example.com\n  sideEffects: None\n  admissionReviewVersions: [v1]\n  failurePolicy: Ignore\n  clientConfig: {url: 'https://example.com/m'}\n  rules: [{apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments], scope: Namespaced}]\n",
];

/// What a dry-run create and the core's defaulting may differ in by
/// construction: identity and times, the IPs and node ports the server
/// allocates; what is no defaulting: a Job's labels and selector made of
/// its uid, admission plugins' additions (a Pod's service account token
/// volume and tolerations, a claim's protection finalizer), the DaemonSet
/// strategy's template generation annotation (README, known limits of the
/// demo cluster), the empty status controllers would fill, and a
/// template's empty `metadata: {}` (Go writes the struct; no field is in it).
fn strip_allocated(obj: &mut Value) {
    let kind = obj["kind"].as_str().unwrap_or_default().to_string();
    if !matches!(
        kind.as_str(),
        "Pod" | "Service" | "PersistentVolumeClaim" | "Namespace"
    ) && let Some(o) = obj.as_object_mut()
    {
        o.remove("status");
    }
    match kind.as_str() {
        "Job" => {
            if let Some(m) = obj["metadata"].as_object_mut() {
                m.remove("labels");
            }
            if let Some(spec) = obj["spec"].as_object_mut() {
                spec.remove("selector");
            }
            if let Some(t) = obj
                .pointer_mut("/spec/template/metadata")
                .and_then(Value::as_object_mut)
            {
                t.remove("labels");
            }
        }
        "DaemonSet" => {
            if let Some(m) = obj["metadata"].as_object_mut() {
                m.remove("annotations");
            }
        }
        "PersistentVolumeClaim" => {
            if let Some(m) = obj["metadata"].as_object_mut() {
                m.remove("finalizers");
            }
        }
        "Pod" => {
            if let Some(spec) = obj["spec"].as_object_mut() {
                spec.remove("tolerations");
                spec.remove("volumes");
                for c in spec
                    .get_mut("containers")
                    .and_then(Value::as_array_mut)
                    .into_iter()
                    .flatten()
                {
                    if let Some(c) = c.as_object_mut() {
                        c.remove("volumeMounts");
                    }
                }
            }
        }
        _ => {}
    }
    for at in [
        "/spec/template",
        "/spec/jobTemplate",
        "/spec/jobTemplate/spec/template",
    ] {
        if let Some(t) = obj.pointer_mut(at).and_then(Value::as_object_mut)
            && t.get("metadata")
                .and_then(Value::as_object)
                .is_some_and(Map::is_empty)
        {
            t.remove("metadata");
        }
    }
    if let Some(m) = obj["metadata"].as_object_mut() {
        for k in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
            "generation",
            "namespace",
        ] {
            m.remove(k);
        }
    }
    let service = obj["kind"] == "Service";
    if let Some(spec) = obj["spec"].as_object_mut()
        && service
    {
        if spec.get("clusterIP").is_some_and(|ip| ip != "None") {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
        }
        for p in spec
            .get_mut("ports")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(p) = p.as_object_mut() {
                p.remove("nodePort");
            }
        }
        spec.remove("healthCheckNodePort");
    }
}

/// The core's defaulting rules (`kapply::defaults`: the plan's
/// server-default causes, export and the embedded server all use them)
/// held to the real server's: each object is created by a server dry run,
/// which answers with the object as the server would store it; the same
/// object defaulted by the core must be equal, allocated fields aside.
#[test]
fn the_cores_defaulting_is_the_real_servers() {
    let Some(kubeconfig) = real::kubeconfig() else {
        return;
    };
    let Some(bin) = kubectl::kubectl() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ns = real::unique("defaults");
    let kc = |args: &[&str]| {
        let mut cmd = Command::new(&bin);
        cmd.arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .env_remove("KUBECONFIG");
        let out = run(&mut cmd);
        assert_eq!(out.code, Some(0), "kubectl {args:?}: {out:?}");
        out.stdout
    };
    kc(&["create", "namespace", &ns]);
    let mut problems = Vec::new();
    for (i, text) in DEFAULTED.iter().enumerate() {
        let path = dir.path().join(format!("{i}.yaml"));
        // Cluster-scoped objects are named after the namespace.
        let text = &text.replace(NS, &ns);
        std::fs::write(&path, text).unwrap();
        let answer = kc(&[
            "create",
            "--dry-run=server",
            "-o",
            "json",
            "-n",
            &ns,
            "-f",
            path.to_str().unwrap(),
        ]);
        let mut theirs: Value = serde_json::from_str(&answer).unwrap();
        let mut ours = kapply::yaml::read_value(text).unwrap();
        if theirs["metadata"].get("namespace").is_some() {
            ours["metadata"]["namespace"] = Value::String(ns.clone());
        }
        kapply::defaults::apply(&mut ours, &mut || "10.96.0.10".to_string());
        strip_allocated(&mut theirs);
        strip_allocated(&mut ours);
        if theirs != ours {
            problems.push(format!(
                "{} {}: core vs real server:\n{}",
                theirs["kind"],
                theirs["metadata"]["name"],
                real::json_diff(&ours, &theirs)
            ));
        }
    }
    kc(&["delete", "namespace", &ns, "--wait=false"]);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ---------------------------------------------------------------------------
// Whole public releases: the truth on real projects

/// One release on the real server, driven by kapply and the real kubectl.
struct OnReal {
    kubectl: String,
    kubeconfig: PathBuf,
    rel: &'static releases::Release,
    file: String,
    /// The manifest without its Namespaces (see `new`).
    deletable: String,
    _scratch: tempfile::TempDir,
}

impl OnReal {
    /// The release's manifest and a clean start: whatever an earlier run
    /// left of it is deleted (its names are the release's own, fixed).
    /// `None`: no real server, kubectl or download here (a skip, or a
    /// failure under `KAPPLY_CI`).
    fn new(name: &str) -> Option<OnReal> {
        let kubeconfig = real::kubeconfig()?;
        let kubectl = kubectl::kubectl()?;
        let rel = releases::release(name);
        let scratch = tempfile::tempdir().unwrap();
        let file = rel.manifest(scratch.path())?.to_str().unwrap().to_string();
        // The release without its Namespaces, for the deletes: a deleted
        // namespace stays Terminating for minutes while the namespace
        // controller works through the other tests' (a run after would
        // fail to create in it), so the release's namespaces are kept.
        let text = std::fs::read_to_string(&file).unwrap();
        let mut namespaces = Vec::new();
        let mut docs = Vec::new();
        for doc in text.split("\n---") {
            match doc.lines().find_map(|l| l.strip_prefix("kind: ")) {
                Some("Namespace") => namespaces.extend(
                    kapply::yaml::read_value(doc)
                        .ok()
                        .and_then(|v| v["metadata"]["name"].as_str().map(String::from)),
                ),
                _ => docs.push(doc),
            }
        }
        let deletable = scratch.path().join("deletable.yaml");
        std::fs::write(&deletable, docs.join("\n---")).unwrap();
        namespaces.extend(rel.namespace.map(String::from));
        let r = OnReal {
            kubectl,
            kubeconfig,
            rel,
            file,
            deletable: deletable.to_str().unwrap().to_string(),
            _scratch: scratch,
        };
        // An earlier run's namespace still going away: waited for.
        for ns in &namespaces {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
            loop {
                let out = run(&mut r.kubectl_cmd(&[
                    "get",
                    "namespace",
                    ns,
                    "--ignore-not-found",
                    "-o",
                    "jsonpath={.status.phase}",
                ]));
                if out.stdout != "Terminating" {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "{name}: namespace {ns} still Terminating after 10 minutes"
                );
                std::thread::sleep(std::time::Duration::from_secs(2));
            }
        }
        r.delete(&["--ignore-not-found", "--wait", "--timeout=120s"]);
        if let Some(ns) = rel.namespace {
            let out = run(&mut r.kubectl_cmd(&["create", "namespace", ns]));
            assert!(
                out.code == Some(0) || out.stderr.contains("AlreadyExists"),
                "{out:?}"
            );
        }
        Some(r)
    }

    /// `kubectl delete ARGS` of the release's objects but its Namespaces.
    fn delete(&self, args: &[&str]) {
        self.kubectl_on(&self.deletable, &[&["delete"], args].concat());
    }

    /// `kubectl ARGS` on this server (`-n` for a release that names no
    /// namespace of its own).
    fn kubectl_cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.kubectl);
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .env_remove("KUBECONFIG")
            .env_remove("KUBECTL_APPLYSET");
        if let Some(ns) = self.rel.namespace {
            cmd.args(["-n", ns]);
        }
        cmd
    }

    /// `kubectl VERB -f FILE ARGS...` (the release's manifest), succeeding.
    fn kubectl(&self, args: &[&str]) -> Out {
        self.kubectl_on(&self.file, args)
    }

    /// `kubectl VERB -f FILE ARGS...`, succeeding.
    fn kubectl_on(&self, file: &str, args: &[&str]) -> Out {
        let mut all = vec![args[0], "-f", file];
        all.extend(&args[1..]);
        let out = run(&mut self.kubectl_cmd(&all));
        assert_eq!(
            out.code,
            Some(0),
            "{}: kubectl {all:?}: {out:?}",
            self.rel.name
        );
        out
    }

    /// `kapply VERB -f FILE ARGS...`: its output, whatever its exit code.
    fn kapply(&self, args: &[&str]) -> Out {
        let mut cmd = Command::new(KAPPLY);
        cmd.arg(args[0])
            .args(["-f", &self.file, "--kubeconfig"])
            .arg(&self.kubeconfig)
            .args(&args[1..])
            .env_remove("KUBECONFIG")
            .env_remove("NO_COLOR");
        if let Some(ns) = self.rel.namespace {
            cmd.args(["-n", ns]);
        }
        run(&mut cmd)
    }

    /// The release's objects as the server holds them, by kind, namespace
    /// and name.
    fn objects(&self) -> Vec<(String, Value)> {
        let out = self.kubectl(&["get", "-o", "json", "--show-managed-fields"]);
        let list: Value = serde_json::from_str(&out.stdout).unwrap();
        let items = match list["kind"].as_str() {
            Some("List") => list["items"].as_array().cloned().unwrap_or_default(),
            _ => vec![list],
        };
        items.into_iter().map(|o| (object_id(&o), o)).collect()
    }

    /// Drift by the real kubectl's imperative commands on the release's
    /// first Deployment (scale, set image, set env), first Service (label)
    /// and first ConfigMap, else ClusterRole (annotate); what was done.
    fn drift(&self, objects: &[(String, Value)]) -> Vec<String> {
        let first = |kind: &str| objects.iter().map(|(_, o)| o).find(|o| o["kind"] == kind);
        let mut done = Vec::new();
        let mut imperative = |args: &[&str]| {
            let out = run(&mut self.kubectl_cmd(args));
            assert_eq!(
                out.code,
                Some(0),
                "{}: kubectl {args:?}: {out:?}",
                self.rel.name
            );
            done.push(args.join(" "));
        };
        let ns_of = |o: &Value| {
            o["metadata"]["namespace"]
                .as_str()
                .unwrap_or("")
                .to_string()
        };
        if let Some(d) = first("Deployment") {
            let name = format!("deployment/{}", d["metadata"]["name"].as_str().unwrap());
            let ns = ns_of(d);
            let container = d["spec"]["template"]["spec"]["containers"][0]["name"]
                .as_str()
                .unwrap();
            imperative(&["scale", &name, "--replicas=3", "--namespace", &ns]);
            imperative(&[
                "set",
                "image",
                &name,
                &format!("{container}=registry.example/drift:1"),
                "--namespace",
                &ns,
            ]);
            imperative(&["set", "env", &name, "KAPPLY_DRIFT=1", "--namespace", &ns]);
        }
        if let Some(s) = first("Service") {
            let name = format!("service/{}", s["metadata"]["name"].as_str().unwrap());
            imperative(&["label", &name, "drift=yes", "--namespace", &ns_of(s)]);
        }
        if let Some(c) = first("ConfigMap") {
            let name = format!("configmap/{}", c["metadata"]["name"].as_str().unwrap());
            imperative(&["annotate", &name, "drift=yes", "--namespace", &ns_of(c)]);
        } else if let Some(c) = first("ClusterRole") {
            let name = format!("clusterrole/{}", c["metadata"]["name"].as_str().unwrap());
            imperative(&["annotate", &name, "drift=yes"]);
        }
        done
    }
}

/// `Kind namespace/name` of an object (`Kind name` when cluster-scoped).
fn object_id(o: &Value) -> String {
    let kind = o["kind"].as_str().unwrap_or_default();
    let name = o["metadata"]["name"].as_str().unwrap_or_default();
    match o["metadata"]["namespace"]
        .as_str()
        .filter(|n| !n.is_empty())
    {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// What a write changes besides the fields themselves: the version,
/// managedFields, the generation (bumped by a spec change) and the
/// last-applied annotation (checked on its own).
fn without_bookkeeping(o: &Value) -> Value {
    let mut o = o.clone();
    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in ["resourceVersion", "managedFields", "generation"] {
            meta.remove(key);
        }
        if let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            a.remove(LAST_APPLIED);
            if a.is_empty() {
                meta.remove("annotations");
            }
        }
    }
    o
}

/// `before` with the plan's rows for it carried out (`set`: the config's
/// value, `clear`/`remove`: gone, `keep`: as it was): what the plan says
/// the apply makes of the object.
fn predicted(before: &Value, rows: &[Value]) -> Value {
    use kapply::fieldpath;
    let mut out = without_bookkeeping(before);
    for row in rows {
        let path = fieldpath::parse(row["path"].as_str().unwrap());
        match row["action"].as_str() {
            Some("set" | "take") => fieldpath::set(&mut out, &path, row["config"].clone()),
            Some("clear" | "remove") => fieldpath::remove(&mut out, &path),
            _ => {}
        }
    }
    out
}

/// Each row of `plan_obj` held to the object the apply made: a `set` row's
/// config value is there, a cleared one is gone, a kept one is unchanged;
/// and nothing else changed. The contradictions, in words.
fn contradictions(id: &str, plan_obj: &Value, before: &Value, after: &Value) -> Vec<String> {
    use kapply::fieldpath;
    let mut found = Vec::new();
    let rows = plan_obj["fields"].as_array().cloned().unwrap_or_default();
    for row in &rows {
        let path = row["path"].as_str().unwrap();
        let now = fieldpath::get(after, &fieldpath::parse(path));
        let was = fieldpath::get(before, &fieldpath::parse(path));
        let ok = match row["action"].as_str() {
            Some("set" | "take") => now == row.get("config"),
            Some("clear" | "remove") => now.is_none(),
            _ => now == was,
        };
        if !ok {
            found.push(format!(
                "{id}: {path}: the plan said {} ({}), the apply left {}",
                row["action"],
                row.get("config").map_or("-".into(), Value::to_string),
                now.map_or("nothing".into(), Value::to_string)
            ));
        }
    }
    let want = predicted(before, &rows);
    let got = without_bookkeeping(after);
    if want != got {
        found.push(format!(
            "{id}: the apply changed what no row said:\n{}",
            real::json_diff(&want, &got)
        ));
    }
    found
}

/// Whole public releases on the real server (`tests/common/releases.rs`):
/// kapply applies the release (after which kubectl's and kapply's `diff`
/// both find nothing to do), the real kubectl drifts it (`scale`, `set
/// image`, `set env`, `label`, `annotate`), then what kapply says the next
/// `kubectl apply` does (`diff`'s exit code, `plan -o json`: each object's
/// action and each field's row) is held to what the real kubectl's apply
/// then does to every object: `configured` exactly where kapply planned an
/// update, each row's value there after, nothing changed that no row names,
/// and the last-applied annotation the one kapply planned.
fn truth_on_release(name: &str) {
    let Some(r) = OnReal::new(name) else {
        return;
    };
    let out = r.kapply(&["apply", "--yes"]);
    assert_eq!(out.code, Some(0), "{name}: kapply apply: {out:?}");
    let out = r.kapply(&["diff"]);
    assert_eq!(
        out.code,
        Some(0),
        "{name}: kapply diff after its apply: {out:?}"
    );
    let out = run(&mut r.kubectl_cmd(&["diff", "-f", &r.file]));
    assert_eq!(
        out.code,
        Some(0),
        "{name}: kubectl diff after kapply's apply: {out:?}"
    );

    let drift = r.drift(&r.objects());
    assert!(!drift.is_empty(), "{name}: nothing to drift");
    let kapply_diff = r.kapply(&["diff"]);
    let kubectl_diff = run(&mut r.kubectl_cmd(&["diff", "-f", &r.file]));
    assert_eq!(
        kapply_diff.code, kubectl_diff.code,
        "{name}: after {drift:?}: kapply diff {kapply_diff:?}\nkubectl diff {kubectl_diff:?}"
    );
    let plan = r.kapply(&["plan", "-o", "json"]);
    assert!(matches!(plan.code, Some(0 | 1)), "{name}: {plan:?}");
    let plan: Value = serde_json::from_str(&plan.stdout).unwrap();
    let before = r.objects();
    let applied = r.kubectl(&["apply"]);
    let after = r.objects();

    let mut found = Vec::new();
    for (id, b) in &before {
        let Some(p) = plan["objects"].as_array().unwrap().iter().find(|p| {
            p["kind"] == b["kind"]
                && p["name"] == b["metadata"]["name"]
                && p["namespace"].as_str().unwrap_or("")
                    == b["metadata"]["namespace"].as_str().unwrap_or("")
        }) else {
            found.push(format!("{id}: not in kapply's plan"));
            continue;
        };
        let (_, a) = after.iter().find(|(i, _)| i == id).unwrap();
        let changed = a["metadata"]["resourceVersion"] != b["metadata"]["resourceVersion"];
        match (p["action"].as_str(), changed) {
            (Some("update"), true) | (Some("unchanged"), false) => {}
            (action, _) => found.push(format!(
                "{id}: kapply planned {action:?}, kubectl's apply {}",
                if changed {
                    "changed it"
                } else {
                    "left it unchanged"
                }
            )),
        }
        if changed {
            let annotation = a["metadata"]["annotations"][LAST_APPLIED]
                .as_str()
                .and_then(|t| serde_json::from_str::<Value>(t).ok());
            if p["kind"] != "Secret" && annotation.as_ref() != p.get("lastApplied") {
                found.push(format!(
                    "{id}: last-applied: kapply planned {}, kubectl wrote {annotation:?}",
                    p["lastApplied"]
                ));
            }
        }
        // Secret values are masked in the plan: only their action is held.
        if b["kind"] != "Secret" {
            found.extend(contradictions(id, p, b, a));
        }
    }
    assert!(
        found.is_empty(),
        "{name}: after {drift:?}, kapply's plan and kubectl's apply disagree:\n{}\n--- kubectl apply\n{}",
        found.join("\n"),
        applied.stdout
    );
    // The drift kapply named is what the commands did.
    let objects = plan["objects"].as_array().unwrap();
    let rows: Vec<&Value> = objects
        .iter()
        .flat_map(|o| o["fields"].as_array().into_iter().flatten())
        .collect();
    let image = rows.iter().find(|f| {
        f["path"].as_str().is_some_and(|p| p.ends_with("].image")) && f["cause"] == "drift"
    });
    if drift.iter().any(|d| d.starts_with("set image")) {
        let image = image.unwrap_or_else(|| panic!("{name}: no image drift row: {plan}"));
        assert_eq!(image["owner"], "kubectl-set", "{image}");
        assert_eq!(image["live"], "registry.example/drift:1", "{image}");
    }
    r.delete(&["--wait=false"]);
}

#[test]
fn truth_on_release_argo_cd() {
    truth_on_release("argo-cd");
}

#[test]
fn truth_on_release_ingress_nginx() {
    truth_on_release("ingress-nginx");
}

#[test]
fn truth_on_release_cert_manager() {
    truth_on_release("cert-manager");
}

#[test]
fn truth_on_release_coredns() {
    truth_on_release("coredns");
}

/// `truth_on_release` for a release applied server-side
/// (prometheus-operator's bundle, whose CRDs are too big for client-side
/// apply): kapply applies it with `--server-side`, both tools' `diff
/// --server-side` find nothing to do, the real kubectl drifts it; then the
/// conflicts `kapply plan --server-side` names are the ones the real
/// `kubectl apply --server-side` refuses with, and with `--force-conflicts`
/// its rows are held to what kubectl's forced apply does to every object.
fn truth_on_release_server_side(name: &str) {
    let Some(r) = OnReal::new(name) else {
        return;
    };
    assert!(r.rel.server_side, "{name}");
    let out = r.kapply(&["apply", "--server-side", "--yes"]);
    assert_eq!(out.code, Some(0), "{name}: kapply apply: {out:?}");
    let out = r.kapply(&["diff", "--server-side"]);
    assert_eq!(
        out.code,
        Some(0),
        "{name}: kapply diff after its apply: {out:?}"
    );
    let out = run(&mut r.kubectl_cmd(&["diff", "--server-side", "-f", &r.file]));
    assert_eq!(
        out.code,
        Some(0),
        "{name}: kubectl diff after kapply's apply: {out:?}"
    );

    let drift = r.drift(&r.objects());
    assert!(!drift.is_empty(), "{name}: nothing to drift");
    let plan_of = |args: &[&str]| -> Value {
        let mut all = vec!["plan", "--server-side", "-o", "json"];
        all.extend(args);
        let out = r.kapply(&all);
        assert!(matches!(out.code, Some(0 | 1)), "{name}: {all:?}: {out:?}");
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
    };
    let rows_of = |plan: &Value, action: &str| -> Vec<String> {
        let mut rows: Vec<String> = plan["objects"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|o| o["fields"].as_array().into_iter().flatten())
            .filter(|f| f["action"] == action)
            .map(|f| f["path"].as_str().unwrap().to_string())
            .collect();
        rows.sort();
        rows
    };
    // Unforced: the conflicts kapply names are those kubectl is refused.
    let conflicts = rows_of(&plan_of(&[]), "conflict");
    assert!(!conflicts.is_empty(), "{name}: no conflict after {drift:?}");
    let before = r.objects();
    let refused = run(&mut r.kubectl_cmd(&["apply", "--server-side", "-f", &r.file]));
    assert_ne!(refused.code, Some(0), "{name}: {refused:?}");
    let mut said: Vec<String> = refused
        .stderr
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- ."))
        .map(|p| p.replace('"', ""))
        .collect();
    said.sort();
    assert_eq!(conflicts, said, "{name}: {refused:?}");
    // The refused apply changed nothing of the objects kapply planned.
    let unchanged = r.objects();
    for ((id, b), (_, a)) in before.iter().zip(&unchanged) {
        if b["kind"] == "Deployment" {
            assert_eq!(
                without_bookkeeping(b),
                without_bookkeeping(a),
                "{id}: changed by a refused apply"
            );
        }
    }

    // Forced: every row held to the result.
    let plan = plan_of(&["--force-conflicts"]);
    let taken = rows_of(&plan, "take");
    assert_eq!(taken, conflicts, "{name}: forced, the conflicts are taken");
    let before = r.objects();
    r.kubectl(&["apply", "--server-side", "--force-conflicts"]);
    let after = r.objects();
    let mut found = Vec::new();
    for (id, b) in &before {
        let Some(p) = plan["objects"].as_array().unwrap().iter().find(|p| {
            p["kind"] == b["kind"]
                && p["name"] == b["metadata"]["name"]
                && p["namespace"].as_str().unwrap_or("")
                    == b["metadata"]["namespace"].as_str().unwrap_or("")
        }) else {
            found.push(format!("{id}: not in kapply's plan"));
            continue;
        };
        let (_, a) = after.iter().find(|(i, _)| i == id).unwrap();
        let changed = a["metadata"]["resourceVersion"] != b["metadata"]["resourceVersion"];
        let planned = p["fields"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f["action"] != "keep"));
        if planned != changed {
            found.push(format!(
                "{id}: kapply planned {} (rows {}), kubectl's apply {}",
                p["action"],
                p["fields"],
                if changed {
                    "changed it"
                } else {
                    "left it unchanged"
                }
            ));
        }
        found.extend(contradictions(id, p, b, a));
    }
    assert!(
        found.is_empty(),
        "{name}: after {drift:?}, kapply's server-side plan and kubectl's apply disagree:\n{}",
        found.join("\n")
    );
    r.delete(&["--wait=false"]);
}

#[test]
fn truth_on_release_prometheus_operator() {
    truth_on_release_server_side("prometheus-operator");
}
