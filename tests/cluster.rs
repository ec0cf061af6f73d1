//! End-to-end tests of the cluster layer against the embedded API server,
//! with the real kubectl for interop where noted.

#[path = "common/kubectl.rs"]
mod kubectl;
#[path = "common/server.rs"]
mod server;

use kapply::cluster::{
    ApplyOptions, ClusterError, ClusterOptions, DeleteOptions, PlanError, Planned, PruneMode,
    PruneOptions, Session, applyset_id,
};
use kapply::manifest::{LoadOptions, load};
use kapply::merge::{FieldAction, LAST_APPLIED};
use kapply::objref::ObjectRef;
use kapply::ops::{ApplyItem, ObjectResult, Progress, Propagation};
use kapply::plan::{ObjectAction, ObjectPlan, Plan};
use kapply::server::{RecordedRequest, RunningServer};
use kubectl::Kubectl;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::process::Command;

struct Env {
    server: RunningServer,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    session: Arc<Session>,
}

async fn env() -> Env {
    let (server, dir, kubeconfig) = server::start_with_kubeconfig().await;
    let session = connect(&kubeconfig, None).await;
    std::fs::create_dir(dir.path().join("m")).unwrap();
    Env {
        server,
        dir,
        kubeconfig,
        session,
    }
}

/// A session through `kubeconfig`, in `namespace` or the context's.
async fn connect(kubeconfig: &Path, namespace: Option<&str>) -> Arc<Session> {
    Session::connect(&ClusterOptions {
        kubeconfig: Some(kubeconfig.to_path_buf()),
        namespace: namespace.map(String::from),
        ..Default::default()
    })
    .await
    .unwrap()
}

/// An environment where BASIC is applied.
async fn basic_env() -> Env {
    let e = env().await;
    e.write("app.yaml", BASIC);
    let plan = e.plan().await;
    e.apply_all(&plan).await;
    e
}

impl Env {
    fn manifests(&self) -> PathBuf {
        self.dir.path().join("m")
    }

    fn write(&self, file: &str, text: &str) {
        std::fs::write(self.manifests().join(file), text).unwrap();
    }

    fn remove(&self, file: &str) {
        std::fs::remove_file(self.manifests().join(file)).unwrap();
    }

    fn load_opts(&self) -> LoadOptions {
        LoadOptions {
            paths: vec![self.manifests()],
            recursive: true,
            namespace: None,
            default_namespace: self.session.namespace().to_string(),
        }
    }

    async fn plan_with(&self, prune: &PruneOptions) -> Planned {
        let loaded = load(&self.load_opts());
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        self.session.plan(loaded, prune, None).await.unwrap()
    }

    async fn plan(&self) -> Plan {
        self.plan_with(&PruneOptions::default()).await.plan
    }

    /// The plan of the manifests by another session (no prune).
    async fn plan_by(&self, session: &Session) -> Plan {
        let loaded = load(&self.load_opts());
        session
            .plan(loaded, &PruneOptions::default(), None)
            .await
            .unwrap()
            .plan
    }

    /// A session through a copy of the kubeconfig that names `url` (a
    /// proxy in front of the server) instead of the server.
    async fn connect_via(&self, url: &str) -> Arc<Session> {
        let path = self.dir.path().join("proxy-kubeconfig");
        let text = std::fs::read_to_string(&self.kubeconfig).unwrap();
        std::fs::write(&path, text.replace(&self.server.url(), url)).unwrap();
        connect(&path, None).await
    }

    /// The requests recorded so far that `keep` keeps.
    fn requests(&self, keep: impl Fn(&RecordedRequest) -> bool) -> Vec<RecordedRequest> {
        self.server.requests().into_iter().filter(keep).collect()
    }

    async fn apply_all(&self, plan: &Plan) -> Vec<ObjectResult> {
        self.session
            .apply(items(plan), &ApplyOptions::default())
            .await
    }

    async fn dry_run_all(&self, plan: &Plan) -> Vec<ObjectResult> {
        let opts = ApplyOptions {
            dry_run: true,
            ..Default::default()
        };
        self.session.apply(items(plan), &opts).await
    }

    /// Read an object straight from the store (no request recorded).
    fn get(&self, path: &str) -> Option<Value> {
        let uri: http::Uri = path.parse().unwrap();
        let resp = self.server.api().handle(
            &http::Method::GET,
            &uri,
            &http::HeaderMap::new(),
            &bytes::Bytes::new(),
        );
        if resp.status() != 200 {
            return None;
        }
        Some(serde_json::from_slice(resp.body()).unwrap())
    }

    /// Run kubectl against the server; `None` when kubectl is missing
    /// (an error under `KAPPLY_CI`).
    async fn kubectl(&self, args: &[&str], env: &[(&str, &str)]) -> Option<(i32, String, String)> {
        let k = Kubectl::find(&self.kubeconfig)?;
        // Async: the embedded server runs on this test's runtime.
        let mut cmd = Command::from(k.command(args));
        let o = cmd.envs(env.iter().copied()).output().await.unwrap();
        Some((
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        ))
    }
}

fn items(plan: &Plan) -> Vec<ApplyItem> {
    plan.objects
        .iter()
        .filter(|o| o.action != ObjectAction::Prune)
        .map(|o| ApplyItem {
            plan: o.clone(),
            accepted_fields: None,
            released_fields: Vec::new(),
        })
        .collect()
}

fn find<'a>(plan: &'a Plan, kind: &str, name: &str) -> &'a ObjectPlan {
    plan.objects
        .iter()
        .find(|o| o.kind == kind && o.name == name)
        .unwrap_or_else(|| panic!("{kind} {name} not in plan: {plan:#?}"))
}

fn result<'a>(results: &'a [ObjectResult], object: &str) -> &'a ObjectResult {
    results
        .iter()
        .find(|r| r.object.to_string() == object)
        .unwrap_or_else(|| panic!("no result for {object}: {results:#?}"))
}

fn is_list(r: &RecordedRequest) -> bool {
    r.method == "GET" && r.query.contains_key("limit")
}

fn pruned_names(planned: &Planned) -> Vec<String> {
    let mut names: Vec<_> = planned
        .plan
        .prune_candidates()
        .map(|o| format!("{} {}", o.kind, o.name))
        .collect();
    names.sort();
    names
}

const BASIC: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: demo
  labels:
    app: demo
data:
  color: blue
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
  labels:
    app: demo
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
        ports:
        - containerPort: 80
---
apiVersion: v1
kind: Namespace
metadata:
  name: demo
";

#[tokio::test]
async fn unreachable_server_is_named() {
    let port = server::unused_port();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    server::write_kubeconfig_for(&path, &format!("http://127.0.0.1:{port}"));
    let err = Session::connect(&ClusterOptions {
        kubeconfig: Some(path),
        ..Default::default()
    })
    .await
    .unwrap_err();
    assert!(matches!(err, ClusterError::Unreachable { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains(&format!("http://127.0.0.1:{port}")),
        "message names the server: {text}"
    );
}

#[tokio::test]
async fn context_and_namespace_come_from_the_kubeconfig() {
    let e = env().await;
    assert_eq!(e.session.namespace(), "default");
    let s = Session::connect(&ClusterOptions {
        kubeconfig: Some(e.kubeconfig.clone()),
        context: Some("kapply-demo".into()),
        namespace: Some("other".into()),
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!(s.namespace(), "other");
    let err = Session::connect(&ClusterOptions {
        kubeconfig: Some(e.kubeconfig.clone()),
        context: Some("nope".into()),
        namespace: None,
        ..Default::default()
    })
    .await
    .unwrap_err();
    assert!(matches!(err, ClusterError::Kubeconfig(_)), "{err:?}");
}

#[tokio::test]
async fn create_then_unchanged_namespace_first_with_dry_run_before_writes() {
    let e = env().await;
    e.write("app.yaml", BASIC);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Progress>();
    let loaded = load(&e.load_opts());
    let plan = e
        .session
        .plan(loaded, &PruneOptions::default(), Some(tx))
        .await
        .unwrap()
        .plan;
    let mut last = None;
    while let Ok(p) = rx.try_recv() {
        last = Some(p);
    }
    let last = last.expect("progress messages");
    assert_eq!((last.done, last.total), (3, 3));
    for o in &plan.objects {
        assert_eq!(o.action, ObjectAction::Create, "{o:?}");
    }

    e.server.clear_requests();
    let results = e.apply_all(&plan).await;
    assert!(results.iter().all(|r| r.ok()), "{results:#?}");
    assert_eq!(result(&results, "Namespace demo").message(), "created");
    assert_eq!(result(&results, "Deployment demo/web").message(), "created");
    // Results come back in the order given.
    assert_eq!(results[0].object.to_string(), "ConfigMap demo/settings");

    let posts: Vec<_> = e.requests(|r| r.method == "POST");
    // Namespace first: its dry run and its write precede everything else.
    assert_eq!(posts[0].path, "/api/v1/namespaces");
    assert_eq!(
        posts[0].query.get("dryRun").map(String::as_str),
        Some("All")
    );
    assert_eq!(posts[1].path, "/api/v1/namespaces");
    assert!(!posts[1].query.contains_key("dryRun"));
    // Then the dry runs of the rest, before any of their writes.
    let first_real = posts
        .iter()
        .skip(2)
        .position(|r| !r.query.contains_key("dryRun"))
        .unwrap();
    assert_eq!(first_real, 2, "both dry runs before the writes: {posts:#?}");
    for p in &posts {
        assert_eq!(p.query["fieldManager"], "kubectl-client-side-apply");
        let body = p.body.as_ref().unwrap();
        let annotation = body["metadata"]["annotations"][LAST_APPLIED]
            .as_str()
            .unwrap();
        assert!(
            annotation.ends_with('\n'),
            "annotation as kubectl writes it"
        );
    }

    let live = e
        .get("/apis/apps/v1/namespaces/demo/deployments/web")
        .unwrap();
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.14.2"
    );

    let again = e.plan().await;
    for o in &again.objects {
        assert_eq!(o.action, ObjectAction::Unchanged, "{o:#?}");
    }
    let results = e.apply_all(&again).await;
    assert!(
        results.iter().all(|r| r.ok() && r.message() == "unchanged"),
        "{results:#?}"
    );
}

#[tokio::test]
async fn update_sends_the_engines_patch_like_kubectl() {
    let e = basic_env().await;
    e.write(
        "app.yaml",
        &BASIC
            .replace("nginx:1.14.2", "nginx:1.16.1")
            .replace("color: blue", "color: red"),
    );
    let plan = e.plan().await;
    let dep = find(&plan, "Deployment", "web");
    assert_eq!(dep.action, ObjectAction::Update);
    e.server.clear_requests();
    let results = e.apply_all(&plan).await;
    assert_eq!(
        result(&results, "Deployment demo/web").message(),
        "configured"
    );
    assert_eq!(
        result(&results, "ConfigMap demo/settings").message(),
        "configured"
    );
    assert_eq!(result(&results, "Namespace demo").message(), "unchanged");
    let patches: Vec<_> = e.requests(|r| r.method == "PATCH" && !r.query.contains_key("dryRun"));
    assert_eq!(patches.len(), 2);
    for p in &patches {
        assert_eq!(p.query["fieldManager"], "kubectl-client-side-apply");
        assert_eq!(p.query["fieldValidation"], "Strict");
        assert_eq!(
            p.content_type.as_deref(),
            Some("application/strategic-merge-patch+json")
        );
    }
    let mut body = patches
        .iter()
        .find(|p| p.path.ends_with("/deployments/web"))
        .unwrap()
        .body
        .clone()
        .unwrap();
    // kubectl's patch, with the resourceVersion the plan was made from as
    // its precondition (as `kubectl diff` sends it), instead of a GET.
    let planned_rv = dep.live.as_ref().unwrap()["metadata"]["resourceVersion"].clone();
    assert_eq!(
        body["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("resourceVersion"),
        Some(planned_rv)
    );
    if body["metadata"].as_object().unwrap().is_empty() {
        body.as_object_mut().unwrap().remove("metadata");
    }
    assert_eq!(Some(&body), dep.patch.as_ref().map(|p| &p.body));
    // Two round trips per object: the dry run and the write; no GET.
    assert_eq!(e.requests(|r| r.method == "GET").len(), 0);
    assert_eq!(e.requests(|r| r.method == "PATCH").len(), 4);
    let live = e
        .get("/apis/apps/v1/namespaces/demo/deployments/web")
        .unwrap();
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.16.1"
    );
}

#[tokio::test]
async fn kubectl_finds_nothing_to_change_after_kapply_and_the_reverse() {
    let e = env().await;
    e.write("app.yaml", BASIC);
    let plan = e.plan().await;
    let results = e.apply_all(&plan).await;
    assert!(results.iter().all(|r| r.ok()), "{results:#?}");
    let dir = e.manifests();
    let dir = dir.to_str().unwrap();
    let Some((code, out, err)) = e.kubectl(&["diff", "-f", dir], &[]).await else {
        return;
    };
    assert_eq!(code, 0, "kubectl diff after kapply apply:\n{out}\n{err}");
    let (code, out, err) = e.kubectl(&["apply", "-f", dir], &[]).await.unwrap();
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("unchanged").count(), 3, "{out}");

    // The reverse: kubectl applies a change, kapply sees nothing to do.
    // kapply's planned patch for the change is the one kubectl sends.
    e.write(
        "app.yaml",
        &BASIC
            .replace("color: blue", "color: green")
            .replace("containerPort: 80", "containerPort: 8080"),
    );
    let planned = e.plan().await;
    e.server.clear_requests();
    let (code, _, err) = e.kubectl(&["apply", "-f", dir], &[]).await.unwrap();
    assert_eq!(code, 0, "{err}");
    let kubectl_patches: Vec<_> = e.requests(|r| r.method == "PATCH");
    assert_eq!(kubectl_patches.len(), 2, "{kubectl_patches:#?}");
    for k in &kubectl_patches {
        let name = k.path.rsplit('/').next().unwrap();
        let o = planned.objects.iter().find(|o| o.name == name).unwrap();
        let patch = o.patch.as_ref().unwrap();
        assert_eq!(k.body.as_ref(), Some(&patch.body), "{name}");
        assert_eq!(k.content_type.as_deref(), Some(patch.kind.content_type()));
        assert_eq!(k.query["fieldManager"], "kubectl-client-side-apply");
        assert_eq!(k.query["fieldValidation"], "Strict");
    }
    let plan = e.plan().await;
    for o in &plan.objects {
        assert_eq!(o.action, ObjectAction::Unchanged, "{o:#?}");
    }

    // Creation: kubectl's POST and kapply's carry the same query and body.
    e.write(
        "new.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fresh\n  namespace: demo\ndata:\n  a: \"1\"\n",
    );
    let plan = e.plan().await;
    e.server.clear_requests();
    let results = e.apply_all(&plan).await;
    assert_eq!(
        result(&results, "ConfigMap demo/fresh").message(),
        "created"
    );
    let post = |reqs: Vec<RecordedRequest>| {
        reqs.into_iter()
            .find(|r| r.method == "POST" && !r.query.contains_key("dryRun"))
            .unwrap()
    };
    let ours = post(e.server.requests());
    e.session
        .delete(
            &[find(&plan, "ConfigMap", "fresh").clone()],
            &DeleteOptions::default(),
        )
        .await;
    e.server.clear_requests();
    let (code, _, err) = e.kubectl(&["apply", "-f", dir], &[]).await.unwrap();
    assert_eq!(code, 0, "{err}");
    let theirs = post(e.server.requests());
    assert_eq!(ours.path, theirs.path);
    assert_eq!(ours.query, theirs.query);
    assert_eq!(ours.body, theirs.body);
}

#[tokio::test]
async fn planning_costs_one_list_per_group_not_a_get_per_object() {
    let e = env().await;
    let mut text = String::from(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n",
    );
    for i in 0..10 {
        for ns in ["a", "b"] {
            text.push_str(&format!(
                "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm{i}\n  namespace: {ns}\ndata:\n  i: \"{i}\"\n"
            ));
        }
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s{i}\n  namespace: a\ndata:\n  k: dg==\n"
        ));
    }
    e.write("many.yaml", &text);
    let plan = e.plan().await;
    let results = e.apply_all(&plan).await;
    assert!(results.iter().all(|r| r.ok()), "{results:#?}");

    // A fresh session: its discovery cache is empty.
    let session = connect(&e.kubeconfig, None).await;
    e.server.clear_requests();
    let plan = e.plan_by(&session).await;
    assert_eq!(plan.objects.len(), 32);
    assert!(
        plan.objects
            .iter()
            .all(|o| o.action == ObjectAction::Unchanged),
        "{plan:#?}"
    );
    let reqs = e.server.requests();
    let lists: Vec<_> = reqs.iter().filter(|r| is_list(r)).collect();
    // Groups: namespaces (cluster), configmaps in a, configmaps in b, secrets in a.
    assert_eq!(lists.len(), 4, "{lists:#?}");
    let discovery: Vec<_> = reqs.iter().filter(|r| !is_list(r)).collect();
    assert_eq!(discovery.len(), 1, "one group version: {discovery:#?}");
    assert_eq!(discovery[0].path, "/api/v1");
}

#[tokio::test]
async fn lists_are_paged() {
    let e = env().await;
    let mut text = String::from("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: big\n");
    for i in 0..520 {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm{i}\n  namespace: big\n"
        ));
    }
    e.write("big.yaml", &text);
    let plan = e.plan().await;
    e.apply_all(&plan).await;
    e.server.clear_requests();
    let plan = e.plan().await;
    assert!(
        plan.objects
            .iter()
            .all(|o| o.action == ObjectAction::Unchanged),
        "every object found across pages"
    );
    let pages: Vec<_> = e.requests(|r| r.path == "/api/v1/namespaces/big/configmaps");
    assert_eq!(pages.len(), 2);
    assert_eq!(pages[0].query["limit"], "500");
    assert!(pages[1].query.contains_key("continue"));
}

/// The demo's Widget CRD (namespaced).
fn widget_crd() -> String {
    server::crd("demo.kapply.dev", "Widget", "Namespaced")
}

#[tokio::test]
async fn custom_kind_not_served_is_an_error_on_that_object_until_its_crd_is_applied() {
    let e = env().await;
    let widget = "\
apiVersion: demo.kapply.dev/v1
kind: Widget
metadata:
  name: w1
  namespace: default
spec:
  size: 3
";
    // w2 has no namespace: its scope is unknown until the CRD is served.
    e.write(
        "a-widget.yaml",
        &format!("{widget}---\napiVersion: demo.kapply.dev/v1\nkind: Widget\nmetadata:\n  name: w2\nspec:\n  size: 1\n"),
    );
    e.write(
        "b-cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  namespace: default\n",
    );
    let plan = e.plan().await;
    let w = find(&plan, "Widget", "w1");
    assert_eq!(w.action, ObjectAction::Error);
    assert_eq!(
        w.error.as_deref(),
        Some(
            "Widget.demo.kapply.dev/v1 is not served by the cluster: apply its CustomResourceDefinition first"
        )
    );
    let results = e.apply_all(&plan).await;
    assert!(!result(&results, "Widget default/w1").ok());
    assert!(
        result(&results, "Widget default/w1")
            .message()
            .contains("is not served")
    );
    assert_eq!(
        result(&results, "ConfigMap default/plain").message(),
        "created"
    );

    // With its CRD in the same run (after it in file order), the CRD goes first.
    e.write("c-crd.yaml", &widget_crd());
    let plan = e.plan().await;
    assert_eq!(find(&plan, "Widget", "w1").action, ObjectAction::Error);
    let results = e.apply_all(&plan).await;
    assert_eq!(
        result(&results, "CustomResourceDefinition widgets.demo.kapply.dev").message(),
        "created"
    );
    assert_eq!(
        result(&results, "Widget default/w1").message(),
        "created",
        "{results:#?}"
    );
    let live = e
        .get("/apis/demo.kapply.dev/v1/namespaces/default/widgets/w1")
        .unwrap();
    assert_eq!(live["spec"]["size"], 3);
    assert!(
        e.get("/apis/demo.kapply.dev/v1/namespaces/default/widgets/w2")
            .is_some(),
        "{results:#?}"
    );
    let plan = e.plan().await;
    assert_eq!(find(&plan, "Widget", "w1").action, ObjectAction::Unchanged);
    assert_eq!(find(&plan, "Widget", "w2").action, ObjectAction::Unchanged);
    assert_eq!(
        find(&plan, "Widget", "w2").namespace.as_deref(),
        Some("default")
    );
    // kubectl agrees, custom kinds included.
    let dir = e.manifests();
    if let Some((code, out, err)) = e.kubectl(&["diff", "-f", dir.to_str().unwrap()], &[]).await {
        assert_eq!(code, 0, "{out}\n{err}");
    }
}

/// What a controller does every few seconds (write status, which bumps the
/// resourceVersion) does not stop an apply whose patch is still the one
/// reviewed; a change that alters the patch does.
#[tokio::test]
async fn status_only_change_since_the_plan_still_applies() {
    let e = basic_env().await;
    e.write("app.yaml", &BASIC.replace("replicas: 2", "replicas: 3"));
    let path = "/apis/apps/v1/namespaces/demo/deployments/web";
    let plan = e.plan().await;
    let planned_rv = e.get(path).unwrap()["metadata"]["resourceVersion"].clone();
    let (code, body) = e.server.api().request(
        "PATCH",
        &format!("{path}/status"),
        Some("application/merge-patch+json"),
        Some(&json!({"status": {"observedGeneration": 1, "replicas": 2, "readyReplicas": 2}})),
    );
    assert_eq!(code, 200, "{body}");
    let live = e.get(path).unwrap();
    assert_ne!(live["metadata"]["resourceVersion"], planned_rv);
    assert_eq!(live["spec"]["replicas"], 2, "status only");
    let results = e.apply_all(&plan).await;
    let r = result(&results, "Deployment demo/web");
    assert!(r.ok(), "{results:#?}");
    assert_eq!(r.message(), "configured");
    let live = e.get(path).unwrap();
    assert_eq!(live["spec"]["replicas"], 3);

    // A spec change that alters the patch: the image was in sync when
    // planned; someone changes it, so the apply would now set it back.
    e.write("app.yaml", &BASIC.replace("replicas: 2", "replicas: 4"));
    let plan = e.plan().await;
    let (code, body) = e.server.api().request(
        "PATCH",
        &format!("{path}?fieldManager=someone"),
        Some("application/strategic-merge-patch+json"),
        Some(&json!({"spec": {"template": {"spec": {"containers": [
            {"name": "nginx", "image": "nginx:1.25"}]}}}})),
    );
    assert_eq!(code, 200, "{body}");
    let results = e.apply_all(&plan).await;
    let r = result(&results, "Deployment demo/web");
    assert!(!r.ok(), "{results:#?}");
    assert!(
        r.message().starts_with("changed since the plan")
            && r.message()
                .contains("spec.template.spec.containers[name=nginx].image"),
        "{r:?}"
    );
    let live = e.get(path).unwrap();
    assert_eq!(live["spec"]["replicas"], 3, "not written");
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.25"
    );
}

#[tokio::test]
async fn changed_since_the_plan_is_not_overwritten_and_others_still_apply() {
    let e = basic_env().await;
    e.write(
        "app.yaml",
        &BASIC
            .replace("color: blue", "color: red")
            .replace("replicas: 2", "replicas: 3"),
    );
    let plan = e.plan().await;
    // Someone else relabels the ConfigMap between plan and apply: the
    // patch would now also set the label back, which nobody reviewed.
    let mut cm = e
        .get("/api/v1/namespaces/demo/configmaps/settings")
        .unwrap();
    cm["metadata"]["labels"]["app"] = json!("other");
    e.server.api().put_object_as(cm, "someone").unwrap();
    let results = e.apply_all(&plan).await;
    let r = result(&results, "ConfigMap demo/settings");
    assert!(!r.ok());
    assert!(
        r.message().contains("changed since the plan") && r.message().contains("review again"),
        "{r:?}"
    );
    let live = e
        .get("/api/v1/namespaces/demo/configmaps/settings")
        .unwrap();
    assert_eq!(live["data"]["color"], "blue", "not overwritten");
    assert_eq!(live["metadata"]["labels"]["app"], "other");
    assert!(r.message().contains("metadata.labels.app"), "{r:?}");
    assert_eq!(
        result(&results, "Deployment demo/web").message(),
        "configured"
    );

    // A create whose object appeared meanwhile: 409 from the server.
    e.write(
        "new.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fresh\n  namespace: demo\n",
    );
    let plan = e.plan().await;
    assert_eq!(
        find(&plan, "ConfigMap", "fresh").action,
        ObjectAction::Create
    );
    e.server
        .api()
        .put_object(json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fresh","namespace":"demo"}}))
        .unwrap();
    let results = e.apply_all(&plan).await;
    let r = result(&results, "ConfigMap demo/fresh");
    assert!(!r.ok());
    assert!(r.message().contains("since the plan"), "{r:?}");
}

#[tokio::test]
async fn invalid_change_fails_in_the_dry_run_alone() {
    let e = basic_env().await;
    // The selector of a Deployment is immutable: 422.
    e.write(
        "app.yaml",
        &BASIC
            .replace("app: web", "app: web2")
            .replace("color: blue", "color: red"),
    );
    let plan = e.plan().await;
    e.server.clear_requests();
    let results = e.apply_all(&plan).await;
    let r = result(&results, "Deployment demo/web");
    assert!(!r.ok());
    assert!(r.message().contains("field is immutable"), "{r:?}");
    assert!(r.message().contains("web"), "names the object: {r:?}");
    assert_eq!(
        result(&results, "ConfigMap demo/settings").message(),
        "configured"
    );
    let real_deploy_writes = e
        .requests(|q| {
            q.method == "PATCH" && q.path.contains("deployments") && !q.query.contains_key("dryRun")
        })
        .len();
    assert_eq!(
        real_deploy_writes, 0,
        "rejected in the dry run, never written"
    );
}

#[tokio::test]
async fn server_dry_run_writes_nothing() {
    let e = env().await;
    e.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: default\n",
    );
    let plan = e.plan().await;
    let results = e.dry_run_all(&plan).await;
    assert_eq!(results[0].message(), "created (server dry run)");
    assert!(e.get("/api/v1/namespaces/default/configmaps/x").is_none());

    // A new namespace and its contents: the contents cannot be checked.
    e.write("app.yaml", BASIC);
    e.write("widgets.yaml", &format!("{}---\napiVersion: demo.kapply.dev/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: default\n", widget_crd()));
    let plan = e.plan().await;
    let results = e.dry_run_all(&plan).await;
    assert!(results.iter().all(|r| r.ok()), "{results:#?}");
    assert_eq!(
        result(&results, "Namespace demo").message(),
        "created (server dry run)"
    );
    assert_eq!(
        result(&results, "Deployment demo/web").message(),
        "not checked: namespace demo is created by this apply (server dry run)"
    );
    assert_eq!(
        result(&results, "Widget default/w").message(),
        "not checked: its CustomResourceDefinition is created by this apply (server dry run)"
    );
    assert_eq!(
        result(&results, "ConfigMap default/x").message(),
        "created (server dry run)"
    );
    assert!(e.get("/api/v1/namespaces/demo").is_none());
}

#[tokio::test]
async fn partial_apply_leaves_skipped_changes_pending() {
    let e = basic_env().await;
    e.write(
        "app.yaml",
        &BASIC
            .replace("nginx:1.14.2", "nginx:1.16.1")
            .replace("replicas: 2", "replicas: 5"),
    );
    // Someone scaled it meanwhile: live drifted from last-applied.
    let mut live = e
        .get("/apis/apps/v1/namespaces/demo/deployments/web")
        .unwrap();
    live["spec"]["replicas"] = json!(4);
    e.server.api().put_object_as(live, "kubectl-scale").unwrap();
    let plan = e.plan().await;
    let dep = find(&plan, "Deployment", "web").clone();
    let image = dep
        .fields
        .iter()
        .find(|f| f.path.as_str().ends_with("image"))
        .unwrap()
        .path
        .clone();
    let results = e
        .session
        .apply(
            vec![ApplyItem {
                plan: dep,
                accepted_fields: Some(vec![image.clone()]),
                released_fields: Vec::new(),
            }],
            &ApplyOptions::default(),
        )
        .await;
    assert_eq!(results[0].message(), "configured", "{results:?}");
    let live = e
        .get("/apis/apps/v1/namespaces/demo/deployments/web")
        .unwrap();
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.16.1"
    );
    assert_eq!(
        live["spec"]["replicas"], 4,
        "a skipped change writes nothing"
    );
    let plan = e.plan().await;
    let dep = find(&plan, "Deployment", "web");
    assert_eq!(dep.action, ObjectAction::Update);
    assert!(
        dep.fields
            .iter()
            .any(|f| f.path == "spec.replicas" && f.action == FieldAction::Set),
        "{dep:#?}"
    );
    assert!(
        !dep.fields
            .iter()
            .any(|f| f.path == image && f.action == FieldAction::Set),
        "{dep:#?}"
    );

    // An object that does not exist cannot be applied in part.
    e.write(
        "new.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fresh\n  namespace: demo\ndata:\n  a: \"1\"\n",
    );
    let plan = e.plan().await;
    let results = e
        .session
        .apply(
            vec![ApplyItem {
                plan: find(&plan, "ConfigMap", "fresh").clone(),
                accepted_fields: Some(vec!["data.a".into()]),
                released_fields: Vec::new(),
            }],
            &ApplyOptions::default(),
        )
        .await;
    assert!(!results[0].ok());
    assert!(
        results[0].message().contains("apply it whole"),
        "{results:?}"
    );
    assert!(e.get("/api/v1/namespaces/demo/configmaps/fresh").is_none());
}

/// Releasing a field the config dropped (issue 11): the annotation
/// forgets it, no deletion is sent, and kubectl agrees from then on.
#[tokio::test]
async fn released_fields_keep_their_live_value_and_leave_last_applied() {
    let e = basic_env().await;
    // Another writer (an autoscaler) takes replicas; the config drops it,
    // and the ConfigMap's only label.
    let mut live = e
        .get("/apis/apps/v1/namespaces/demo/deployments/web")
        .unwrap();
    live["spec"]["replicas"] = json!(4);
    e.server.api().put_object_as(live, "hpa").unwrap();
    e.write(
        "app.yaml",
        &BASIC
            .replace("  replicas: 2\n", "")
            .replace("  labels:\n    app: demo\ndata:", "data:"),
    );
    let plan = e.plan().await;
    let dep = find(&plan, "Deployment", "web").clone();
    let cm = find(&plan, "ConfigMap", "settings").clone();
    for (o, p) in [(&dep, "spec.replicas"), (&cm, "metadata.labels")] {
        assert!(
            o.fields
                .iter()
                .any(|f| f.path == p && f.action == FieldAction::Clear),
            "{o:#?}"
        );
    }
    // Only a clear row can be released.
    let refused = e
        .session
        .apply(
            vec![ApplyItem {
                plan: dep.clone(),
                accepted_fields: None,
                released_fields: vec!["spec.selector.matchLabels.app".into()],
            }],
            &ApplyOptions::default(),
        )
        .await;
    assert!(!refused[0].ok(), "{refused:?}");
    assert!(
        refused[0].message().contains("not a field change"),
        "{refused:?}"
    );

    e.server.clear_requests();
    let results = e
        .session
        .apply(
            vec![
                ApplyItem {
                    plan: dep,
                    accepted_fields: None,
                    released_fields: vec!["spec.replicas".into()],
                },
                ApplyItem {
                    plan: cm,
                    accepted_fields: None,
                    released_fields: vec!["metadata.labels".into()],
                },
            ],
            &ApplyOptions::default(),
        )
        .await;
    assert!(results.iter().all(|r| r.ok()), "{results:?}");
    let patches = e.requests(|r| r.method == "PATCH" && !r.query.contains_key("dryRun"));
    assert_eq!(patches.len(), 2, "{patches:?}");
    for p in &patches {
        let body = p.body.as_ref().map(Value::to_string).unwrap_or_default();
        assert!(
            !body.contains("null"),
            "a release sends no deletion: {body}"
        );
    }
    let dep = e
        .get("/apis/apps/v1/namespaces/demo/deployments/web")
        .unwrap();
    assert_eq!(dep["spec"]["replicas"], 4);
    let la = kubectl::last_applied(&dep).unwrap();
    assert!(la["spec"].get("replicas").is_none(), "{la}");
    let cm = e
        .get("/api/v1/namespaces/demo/configmaps/settings")
        .unwrap();
    assert_eq!(cm["metadata"]["labels"]["app"], "demo");
    let la = kubectl::last_applied(&cm).unwrap();
    assert!(la["metadata"].get("labels").is_none(), "{la}");

    // kubectl sees nothing to do, and its apply leaves the values alone.
    let m = e.manifests();
    let m = m.to_str().unwrap();
    let Some((code, out, err)) = e.kubectl(&["diff", "-f", m], &[]).await else {
        return;
    };
    assert_eq!(code, 0, "kubectl diff: {out}{err}");
    let (code, out, err) = e.kubectl(&["apply", "-f", m], &[]).await.unwrap();
    assert_eq!(code, 0, "kubectl apply: {out}{err}");
    let dep = e
        .get("/apis/apps/v1/namespaces/demo/deployments/web")
        .unwrap();
    assert_eq!(dep["spec"]["replicas"], 4);
    let cm = e
        .get("/api/v1/namespaces/demo/configmaps/settings")
        .unwrap();
    assert_eq!(cm["metadata"]["labels"]["app"], "demo");
    // kapply agrees too: nothing left to clear.
    let plan = e.plan().await;
    for o in &plan.objects {
        assert_eq!(o.action, ObjectAction::Unchanged, "{o:#?}");
    }
}

#[tokio::test]
async fn delete_uses_background_propagation_by_default() {
    let e = basic_env().await;
    let plan = e.plan().await;
    let cm = find(&plan, "ConfigMap", "settings").clone();
    let dep = find(&plan, "Deployment", "web").clone();
    let dep_reviewed = dep.clone();
    e.server.clear_requests();
    let results = e
        .session
        .delete(std::slice::from_ref(&cm), &DeleteOptions::default())
        .await;
    assert_eq!(results[0].message(), "deleted");
    let results = e
        .session
        .delete(
            &[dep],
            &DeleteOptions {
                propagation: Propagation::Foreground,
                dry_run: false,
                ..Default::default()
            },
        )
        .await;
    assert!(results[0].ok(), "{results:?}");
    let deletes: Vec<_> = e.requests(|r| r.method == "DELETE");
    let uid = |p: &ObjectPlan| p.live.as_ref().unwrap()["metadata"]["uid"].clone();
    assert_eq!(
        deletes[0].body,
        Some(json!({"propagationPolicy": "Background", "preconditions": {"uid": uid(&cm)}}))
    );
    assert_eq!(
        deletes[1].body,
        Some(
            json!({"propagationPolicy": "Foreground", "preconditions": {"uid": uid(&dep_reviewed)}})
        )
    );
    assert!(
        e.get("/api/v1/namespaces/demo/configmaps/settings")
            .is_none()
    );
    // Deleting what is gone reports the server's NotFound on that object.
    let results = e.session.delete(&[cm], &DeleteOptions::default()).await;
    assert!(!results[0].ok());
    assert!(results[0].message().contains("not found"), "{results:?}");
}

#[tokio::test]
async fn delete_and_prune_touch_only_the_object_reviewed() {
    let e = basic_env().await;
    let plan = e.plan().await;
    let cm = find(&plan, "ConfigMap", "settings").clone();
    // Deleted and created again under the same name after the plan.
    let path = "/api/v1/namespaces/demo/configmaps/settings";
    let before = e.get(path).unwrap();
    let (code, _) = e.server.api().request("DELETE", path, None, None);
    assert_eq!(code, 200);
    e.server
        .api()
        .put_object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "demo"}, "data": {"new": "1"}}))
        .unwrap();
    let after = e.get(path).unwrap();
    assert_ne!(before["metadata"]["uid"], after["metadata"]["uid"]);
    for prune in [false, true] {
        let results = if prune {
            e.session
                .prune(std::slice::from_ref(&cm), None, false)
                .await
        } else {
            e.session
                .delete(std::slice::from_ref(&cm), &DeleteOptions::default())
                .await
        };
        assert!(!results[0].ok(), "{results:?}");
        assert!(
            results[0].message().starts_with("changed since the plan"),
            "{results:?}"
        );
        assert_eq!(e.get(path).unwrap()["data"]["new"], "1");
    }
}

#[tokio::test]
async fn allowlist_prune_matches_kubectls_decisions() {
    let e = env().await;
    e.write("app.yaml", BASIC);
    e.write(
        "extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: old\n  namespace: demo\n  labels:\n    app: demo\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other-app\n  namespace: demo\n  labels:\n    app: other\n",
    );
    let plan = e.plan().await;
    e.apply_all(&plan).await;
    // Not applied with kapply/kubectl apply: no annotation, never pruned.
    e.server
        .api()
        .put_object(json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"manual","namespace":"demo","labels":{"app":"demo"}}}))
        .unwrap();
    e.remove("extra.yaml");
    let prune = PruneOptions {
        mode: PruneMode::Allowlist {
            selector: Some("app=demo".into()),
            all: false,
            allowlist: vec![],
        },
    };
    let planned = e.plan_with(&prune).await;
    let candidates: Vec<ObjectPlan> = planned.plan.prune_candidates().cloned().collect();
    assert_eq!(candidates.len(), 1, "{candidates:#?}");
    assert_eq!(candidates[0].name, "old");
    assert_eq!(
        candidates[0].prune_reason.as_deref(),
        Some(
            "has last-applied annotation, matches -l app=demo, kind ConfigMap in prune allowlist, not in manifests"
        )
    );
    // The Namespace has no app=demo label: -l filters it out of the manifests.
    assert!(!planned.plan.objects.iter().any(|o| o.kind == "Namespace"));

    e.server.clear_requests();
    let results = e.session.prune(&candidates, None, false).await;
    assert_eq!(results[0].message(), "pruned");
    let delete = e
        .server
        .requests()
        .into_iter()
        .find(|r| r.method == "DELETE")
        .unwrap();
    // kubectl's body, plus the uid of the object reviewed as a precondition.
    let mut body = prune_delete_body();
    body["preconditions"] = json!({"uid": candidates[0].live.as_ref().unwrap()["metadata"]["uid"]});
    assert_eq!(delete.body, Some(body));
    assert!(e.get("/api/v1/namespaces/demo/configmaps/old").is_none());
    assert!(e.get("/api/v1/namespaces/demo/configmaps/manual").is_some());
    assert!(
        e.get("/api/v1/namespaces/demo/configmaps/other-app")
            .is_some()
    );

    // Without -l or --all, prune is refused.
    let err = e
        .session
        .plan(
            load(&e.load_opts()),
            &PruneOptions {
                mode: PruneMode::Allowlist {
                    selector: None,
                    all: false,
                    allowlist: vec![],
                },
            },
            None,
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("--all"), "{err}");
}

fn applyset(parent: &str) -> PruneOptions {
    PruneOptions {
        mode: PruneMode::ApplySet {
            parent: parent.into(),
            tooling: None,
        },
    }
}

/// An environment whose session namespace is `demo` (`-n demo`), with the
/// namespace created.
async fn demo_env() -> Env {
    let e = env().await;
    let session = connect(&e.kubeconfig, Some("demo")).await;
    e.server
        .api()
        .put_object(json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"demo"}}))
        .unwrap();
    Env { session, ..e }
}

const SET: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: one
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: two
";

/// Plan, apply and prune with an ApplySet, as `kapply apply --prune --applyset` does.
async fn kapply_apply_set(e: &Env, parent: &str) -> Planned {
    kapply_apply_set_with(e, &applyset(parent)).await
}

async fn kapply_apply_set_with(e: &Env, prune: &PruneOptions) -> Planned {
    let planned = e.plan_with(prune).await;
    let results = e
        .session
        .apply(
            items(&planned.plan),
            &ApplyOptions {
                dry_run: false,
                applyset: planned.applyset.clone(),
                ..Default::default()
            },
        )
        .await;
    assert!(results.iter().all(|r| r.ok()), "{results:#?}");
    let candidates: Vec<_> = planned.plan.prune_candidates().cloned().collect();
    let results = e
        .session
        .prune(&candidates, planned.applyset.as_ref(), false)
        .await;
    assert!(results.iter().all(|r| r.ok()), "{results:#?}");
    planned
}

#[tokio::test]
async fn applyset_parent_labels_and_prune() {
    let e = demo_env().await;
    e.write("set.yaml", SET);
    let planned = kapply_apply_set(&e, "myset").await;
    let id = applyset_id("myset", "demo", "Secret", "");
    assert_eq!(planned.applyset.as_ref().unwrap().id, id);
    let parent = e.get("/api/v1/namespaces/demo/secrets/myset").unwrap();
    assert_eq!(
        parent["metadata"]["labels"]["applyset.kubernetes.io/id"],
        id.as_str()
    );
    let ann = &parent["metadata"]["annotations"];
    assert_eq!(
        ann["applyset.kubernetes.io/contains-group-kinds"],
        "ConfigMap,Deployment.apps"
    );
    assert_eq!(ann["applyset.kubernetes.io/additional-namespaces"], "");
    assert!(
        ann["applyset.kubernetes.io/tooling"]
            .as_str()
            .unwrap()
            .starts_with("kapply/")
    );
    let cm = e.get("/api/v1/namespaces/demo/configmaps/one").unwrap();
    assert_eq!(
        cm["metadata"]["labels"]["applyset.kubernetes.io/part-of"],
        id.as_str()
    );
    let annotation = kubectl::last_applied(&cm).unwrap();
    assert_eq!(
        annotation["metadata"]["labels"]["applyset.kubernetes.io/part-of"],
        id.as_str(),
        "the label is in the last-applied configuration, like kubectl"
    );

    // Keep only ConfigMap one: ConfigMap two and the Deployment kind go.
    e.write(
        "set.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n",
    );
    let planned = e.plan_with(&applyset("myset")).await;
    assert_eq!(pruned_names(&planned), ["ConfigMap two", "Deployment web"]);
    let reason = find(&planned.plan, "ConfigMap", "two")
        .prune_reason
        .clone()
        .unwrap();
    assert!(
        reason.contains(&id) && reason.contains("secrets/myset"),
        "{reason}"
    );
    kapply_apply_set(&e, "myset").await;
    assert!(e.get("/api/v1/namespaces/demo/configmaps/two").is_none());
    assert!(
        e.get("/apis/apps/v1/namespaces/demo/deployments/web")
            .is_none()
    );
    let parent = e.get("/api/v1/namespaces/demo/secrets/myset").unwrap();
    assert_eq!(
        parent["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"],
        "ConfigMap",
        "after pruning only the current kinds are recorded"
    );
}

#[tokio::test]
async fn kubectl_prunes_a_set_kapply_applied_and_the_reverse() {
    let e = demo_env().await;
    e.write("set.yaml", SET);
    e.server.clear_requests();
    // kubectl refuses a parent whose tooling names another tool, so a set
    // meant for both tools is written with kubectl's tooling value.
    kapply_apply_set_with(
        &e,
        &PruneOptions {
            mode: PruneMode::ApplySet {
                parent: "configmaps/myset".into(),
                tooling: Some("kubectl/v1.32.5".into()),
            },
        },
    )
    .await;
    let parent_writes = |reqs: Vec<RecordedRequest>| -> Vec<RecordedRequest> {
        reqs.into_iter()
            .filter(|r| r.method == "PATCH" && r.path == "/api/v1/namespaces/demo/configmaps/myset")
            .collect()
    };
    let kapply_writes = parent_writes(e.server.requests());
    let dir = e.manifests();
    let dir = dir.to_str().unwrap();
    e.write(
        "set.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n",
    );
    e.server.clear_requests();
    let args = [
        "apply",
        "-n",
        "demo",
        "--prune",
        "--applyset=configmaps/myset",
        "-f",
        dir,
    ];
    let Some((code, out, err)) = e.kubectl(&args, &[("KUBECTL_APPLYSET", "true")]).await else {
        return;
    };
    assert_eq!(code, 0, "kubectl on kapply's set:\n{out}\n{err}");
    // The parent is written the same way by both: before (recorded + new
    // kinds) and after pruning (current kinds), same query and content type.
    let kubectl_writes = parent_writes(e.server.requests());
    assert_eq!(kapply_writes.len(), 2, "{kapply_writes:#?}");
    assert_eq!(kubectl_writes.len(), 2, "{kubectl_writes:#?}");
    for (a, k) in kapply_writes.iter().zip(&kubectl_writes) {
        assert_eq!(a.query, k.query);
        assert_eq!(a.content_type, k.content_type);
        let keys = |r: &RecordedRequest| {
            let b = r.body.clone().unwrap();
            (
                b["metadata"]["labels"].clone(),
                b["metadata"]["annotations"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(keys(a), keys(k));
    }
    let kinds = |r: &RecordedRequest| {
        r.body.clone().unwrap()["metadata"]["annotations"]
            ["applyset.kubernetes.io/contains-group-kinds"]
            .clone()
    };
    assert_eq!(kinds(&kubectl_writes[0]), "ConfigMap,Deployment.apps");
    assert_eq!(kinds(&kubectl_writes[1]), "ConfigMap");
    assert!(
        e.get("/api/v1/namespaces/demo/configmaps/two").is_none(),
        "{out}"
    );
    assert!(
        e.get("/apis/apps/v1/namespaces/demo/deployments/web")
            .is_none(),
        "{out}"
    );
    assert!(e.get("/api/v1/namespaces/demo/configmaps/one").is_some());

    // The reverse: kubectl grows the set, kapply prunes it.
    e.write("set.yaml", &SET.replace("name: one", "name: three"));
    e.write(
        "one.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n",
    );
    let (code, out, err) = e
        .kubectl(&args, &[("KUBECTL_APPLYSET", "true")])
        .await
        .unwrap();
    assert_eq!(code, 0, "{out}\n{err}");
    e.remove("set.yaml");
    let planned = e.plan_with(&applyset("configmaps/myset")).await;
    assert_eq!(
        pruned_names(&planned),
        ["ConfigMap three", "ConfigMap two", "Deployment web"]
    );
    // And kapply sees kubectl's member as unchanged.
    assert_eq!(
        find(&planned.plan, "ConfigMap", "one").action,
        ObjectAction::Unchanged
    );
    kapply_apply_set(&e, "configmaps/myset").await;
    assert!(e.get("/api/v1/namespaces/demo/configmaps/three").is_none());
    assert!(e.get("/api/v1/namespaces/demo/configmaps/one").is_some());
    // kapply kept kubectl's tooling, so kubectl still manages the set.
    let parent = e.get("/api/v1/namespaces/demo/configmaps/myset").unwrap();
    let tool = parent["metadata"]["annotations"]["applyset.kubernetes.io/tooling"]
        .as_str()
        .unwrap();
    assert!(tool.starts_with("kubectl/"), "{tool}");
    let (code, out, err) = e
        .kubectl(&args, &[("KUBECTL_APPLYSET", "true")])
        .await
        .unwrap();
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("unchanged"), "{out}");
}

/// A server in front of the embedded one that answers 403 to LIST of
/// configmaps (RBAC allowing get but not list) and forwards the rest.
async fn forbidding_proxy(server: &RunningServer) -> String {
    use http_body_util::{BodyExt, Full};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let upstream = server.url();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let upstream = upstream.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let upstream = upstream.clone();
                        async move {
                            let (parts, body) = req.into_parts();
                            let bytes = body
                                .collect()
                                .await
                                .map(|c| c.to_bytes())
                                .unwrap_or_default();
                            if parts.method == http::Method::GET
                                && parts.uri.path().ends_with("/configmaps")
                            {
                                let status = json!({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,
                                    "message": "configmaps is forbidden: User \"test\" cannot list resource \"configmaps\""});
                                let mut resp = hyper::Response::new(Full::new(bytes::Bytes::from(
                                    status.to_string(),
                                )));
                                *resp.status_mut() = http::StatusCode::FORBIDDEN;
                                return Ok::<_, std::convert::Infallible>(resp);
                            }
                            Ok(forward(&upstream, parts, bytes).await)
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    format!("http://{addr}")
}

async fn forward(
    upstream: &str,
    parts: http::request::Parts,
    body: bytes::Bytes,
) -> hyper::Response<http_body_util::Full<bytes::Bytes>> {
    use http_body_util::{BodyExt, Full};
    let authority = upstream.trim_start_matches("http://").to_string();
    let stream = tokio::net::TcpStream::connect(&authority).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let mut req = hyper::Request::from_parts(parts, Full::new(body));
    req.headers_mut()
        .insert(http::header::HOST, authority.parse().unwrap());
    let resp = sender.send_request(req).await.unwrap();
    let (parts, body) = resp.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    hyper::Response::from_parts(parts, Full::new(bytes))
}

/// A proxy in front of the embedded server that sends every answer in
/// chunks without a Content-Length (as a server streaming a large LIST).
async fn chunking_proxy(server: &RunningServer) -> String {
    use http_body_util::BodyExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let upstream = server.url();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let upstream = upstream.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let upstream = upstream.clone();
                        async move {
                            let (parts, body) = req.into_parts();
                            let bytes = body
                                .collect()
                                .await
                                .map(|c| c.to_bytes())
                                .unwrap_or_default();
                            let (mut parts, body) =
                                forward(&upstream, parts, bytes).await.into_parts();
                            let whole = body.collect().await.unwrap().to_bytes();
                            parts.headers.remove(http::header::CONTENT_LENGTH);
                            let chunks: Vec<
                                Result<hyper::body::Frame<bytes::Bytes>, std::convert::Infallible>,
                            > = whole
                                .chunks(64 << 10)
                                .map(|c| {
                                    Ok(hyper::body::Frame::data(bytes::Bytes::copy_from_slice(c)))
                                })
                                .collect();
                            let body =
                                http_body_util::StreamBody::new(futures::stream::iter(chunks));
                            Ok::<_, std::convert::Infallible>(hyper::Response::from_parts(
                                parts, body,
                            ))
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    format!("http://{addr}")
}

/// An answer streamed without a Content-Length is cut at
/// `--max-response-bytes` too: the LIST fails naming itself, and nothing
/// past the cap is kept.
#[tokio::test]
async fn a_streamed_answer_over_the_cap_is_an_error_naming_the_list() {
    let e = basic_env().await;
    e.server
        .store()
        .put_object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "huge", "namespace": "demo"},
            "data": {"k": "x".repeat(3 << 20)}}))
        .unwrap();
    let url = chunking_proxy(&e.server).await;
    let path = e.dir.path().join("chunked-kubeconfig");
    let text = std::fs::read_to_string(&e.kubeconfig).unwrap();
    std::fs::write(&path, text.replace(&e.server.url(), &url)).unwrap();
    let session = Session::connect(&ClusterOptions {
        kubeconfig: Some(path),
        max_response_bytes: 1 << 20,
        ..Default::default()
    })
    .await
    .unwrap();
    let plan = e.plan_by(&session).await;
    let settings = find(&plan, "ConfigMap", "settings");
    assert_eq!(settings.action, ObjectAction::Error);
    let why = settings.error.as_deref().unwrap();
    assert!(
        why.contains(
            "the server's answer to GET /api/v1/namespaces/demo/configmaps is larger than \
             1048576 bytes (--max-response-bytes); it was not read"
        ),
        "{why}"
    );
    // The other kinds' answers are small: planned as usual.
    assert_eq!(
        find(&plan, "Deployment", "web").action,
        ObjectAction::Unchanged
    );
}

#[tokio::test]
async fn forbidden_list_falls_back_to_get() {
    let e = basic_env().await;
    e.write(
        "more.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: missing\n  namespace: demo\n",
    );
    let url = forbidding_proxy(&e.server).await;
    let session = e.connect_via(&url).await;
    e.server.clear_requests();
    let plan = e.plan_by(&session).await;
    assert_eq!(
        find(&plan, "ConfigMap", "settings").action,
        ObjectAction::Unchanged
    );
    assert_eq!(
        find(&plan, "ConfigMap", "missing").action,
        ObjectAction::Create
    );
    assert_eq!(
        find(&plan, "Deployment", "web").action,
        ObjectAction::Unchanged
    );
    let gets: Vec<_> = e
        .requests(|r| {
            r.method == "GET" && r.path.starts_with("/api/v1/namespaces/demo/configmaps/")
        })
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert_eq!(gets.len(), 2, "one GET per ConfigMap: {gets:?}");
}

/// A 403 on the LIST that looks for prune candidates skips pruning and
/// says which LIST it was (kubectl diff warns and goes on the same way);
/// the objects are still planned.
#[tokio::test]
async fn a_forbidden_prune_listing_skips_pruning() {
    let e = basic_env().await;
    let url = forbidding_proxy(&e.server).await;
    let session = e.connect_via(&url).await;
    let prune = PruneOptions {
        mode: PruneMode::Allowlist {
            selector: Some("app=demo".into()),
            all: false,
            allowlist: vec![],
        },
    };
    let planned = session
        .plan(load(&e.load_opts()), &prune, None)
        .await
        .unwrap();
    assert_eq!(
        find(&planned.plan, "ConfigMap", "settings").action,
        ObjectAction::Unchanged
    );
    assert_eq!(planned.plan.prune_candidates().count(), 0);
    let why = planned.plan.prune_skipped.as_ref().unwrap().to_string();
    assert!(
        why.starts_with(
            "pruning skipped: the prune listing was forbidden: LIST /api/v1/namespaces/demo/configmaps: "
        ) && why.contains("cannot list resource \"configmaps\""),
        "{why}"
    );
}

/// Names of the objects of `kind` in namespace demo, straight from the store.
fn names_in_demo(e: &Env, path: &str) -> Vec<String> {
    let list = e.get(path).unwrap();
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

fn prune_delete_body() -> Value {
    json!({"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"})
}

#[tokio::test]
async fn allowlist_prune_decides_what_kubectl_decides() {
    let e = env().await;
    e.write("app.yaml", BASIC);
    e.write(
        "extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: old\n  namespace: demo\n  labels:\n    app: demo\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other-app\n  namespace: demo\n  labels:\n    app: other\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: old-web\n  namespace: demo\n  labels:\n    app: demo\nspec:\n  selector:\n    matchLabels:\n      app: old\n  template:\n    metadata:\n      labels:\n        app: old\n    spec:\n      containers:\n      - name: c\n        image: busybox\n",
    );
    let plan = e.plan().await;
    let results = e.apply_all(&plan).await;
    assert!(results.iter().all(|r| r.ok()), "{results:#?}");
    e.server
        .api()
        .put_object(json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"manual","namespace":"demo","labels":{"app":"demo"}}}))
        .unwrap();
    e.remove("extra.yaml");
    e.server.clear_requests();
    // An explicit allowlist: the embedded server does not serve every kind
    // of kubectl's default list, and kubectl fails on the ones it lacks.
    let prune = PruneOptions {
        mode: PruneMode::Allowlist {
            selector: Some("app=demo".into()),
            all: false,
            allowlist: vec!["core/v1/ConfigMap".into(), "apps/v1/Deployment".into()],
        },
    };
    let planned = e.plan_with(&prune).await;
    assert_eq!(
        pruned_names(&planned),
        ["ConfigMap old", "Deployment old-web"]
    );
    let dir = e.manifests();
    let dir = dir.to_str().unwrap();
    let Some((code, out, err)) = e
        .kubectl(
            &[
                "apply",
                "-f",
                dir,
                "--prune",
                "-l",
                "app=demo",
                "--prune-allowlist=core/v1/ConfigMap",
                "--prune-allowlist=apps/v1/Deployment",
            ],
            &[],
        )
        .await
    else {
        return;
    };
    assert_eq!(code, 0, "{out}\n{err}");
    for r in e.server.requests().iter().filter(|r| r.method == "DELETE") {
        assert_eq!(r.body, Some(prune_delete_body()), "kubectl's prune DELETE");
    }
    // kubectl deleted exactly kapply's candidates.
    assert_eq!(
        names_in_demo(&e, "/api/v1/namespaces/demo/configmaps"),
        ["manual", "other-app", "settings"],
        "{out}"
    );
    assert_eq!(
        names_in_demo(&e, "/apis/apps/v1/namespaces/demo/deployments"),
        ["web"],
        "{out}"
    );
    let planned = e.plan_with(&prune).await;
    assert!(pruned_names(&planned).is_empty());

    // kubectl's default allowlist, on both sides: a Secret and a Service this time.
    e.write(
        "more.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: demo\n  labels:\n    app: demo\ndata:\n  k: dg==\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n  namespace: demo\n  labels:\n    app: demo\nspec:\n  ports:\n  - port: 80\n",
    );
    let plan = e.plan().await;
    let results = e.apply_all(&plan).await;
    assert!(results.iter().all(|r| r.ok()), "{results:#?}");
    e.remove("more.yaml");
    let defaults = PruneOptions {
        mode: PruneMode::Allowlist {
            selector: Some("app=demo".into()),
            all: false,
            allowlist: vec![],
        },
    };
    let planned = e.plan_with(&defaults).await;
    assert_eq!(pruned_names(&planned), ["Secret s", "Service svc"]);
    let (code, out, err) = e
        .kubectl(&["apply", "-f", dir, "--prune", "-l", "app=demo"], &[])
        .await
        .unwrap();
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("secret/s pruned") && out.contains("service/svc pruned"),
        "{out}"
    );
    assert_eq!(out.matches("pruned").count(), 2, "{out}");
}

#[tokio::test]
async fn the_engine_seam_plans_applies_prunes_and_deletes() {
    use kapply::cluster::KubeEngine;
    use kapply::ops::Engine;
    let e = demo_env().await;
    e.write("set.yaml", SET);
    let engine = KubeEngine::new(e.session.clone(), e.load_opts(), applyset("myset"));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let plan = engine.load(tx).await.unwrap();
    assert!(rx.try_recv().is_ok(), "progress was reported");
    assert_eq!(plan.objects.len(), 3);
    let dry = engine.dry_run(items(&plan)).await;
    assert!(
        dry.iter()
            .all(|r| r.ok() && r.message().ends_with("(server dry run)")),
        "{dry:#?}"
    );
    assert!(e.get("/api/v1/namespaces/demo/configmaps/one").is_none());
    let results = engine.apply(items(&plan)).await;
    assert!(results.iter().all(|r| r.ok()), "{results:#?}");
    assert!(e.get("/api/v1/namespaces/demo/secrets/myset").is_some());

    e.write(
        "set.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n",
    );
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let plan = engine.load(tx).await.unwrap();
    let candidates: Vec<ObjectPlan> = plan.prune_candidates().cloned().collect();
    assert_eq!(candidates.len(), 2);
    let results = engine.prune(candidates).await;
    assert!(
        results.iter().all(|r| r.ok() && r.message() == "pruned"),
        "{results:#?}"
    );
    let parent = e.get("/api/v1/namespaces/demo/secrets/myset").unwrap();
    assert_eq!(
        parent["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"],
        "ConfigMap"
    );
    let one = find(&plan, "ConfigMap", "one").clone();
    // The TUI holds it as a trait object.
    let engine: Arc<dyn Engine> = Arc::new(engine);
    let results = engine.delete(vec![one], Propagation::Orphan).await;
    assert_eq!(results[0].message(), "deleted");
    assert!(e.get("/api/v1/namespaces/demo/configmaps/one").is_none());
}

#[tokio::test]
async fn the_tui_engine_offers_no_candidate_after_an_unreadable_manifest() {
    use kapply::cluster::KubeEngine;
    use kapply::ops::Engine;
    let e = demo_env().await;
    e.write("set.yaml", SET);
    kapply_apply_set(&e, "myset").await;
    // One member's manifest is gone (a real candidate), another's is broken.
    e.write("set.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n");
    let engine = KubeEngine::new(e.session.clone(), e.load_opts(), applyset("myset"));
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let plan = engine.load(tx).await.unwrap();
    assert!(
        plan.objects.iter().all(|o| o.action != ObjectAction::Prune),
        "{plan:#?}"
    );
    let why = plan.prune_skipped.expect("prune is disabled").to_string();
    assert!(why.contains("set.yaml:4"), "{why}");
    // With the manifest mended, the same members are candidates again.
    std::fs::remove_file(e.manifests().join("set.yaml")).unwrap();
    e.write(
        "other.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n",
    );
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let plan = engine.load(tx).await.unwrap();
    assert!(plan.prune_skipped.is_none());
    assert!(plan.prune_candidates().next().is_some(), "{plan:#?}");
}

#[tokio::test]
async fn applyset_in_a_namespace_this_apply_creates() {
    let e = env().await;
    // -n fresh; the namespace itself is in the manifests.
    let session = connect(&e.kubeconfig, Some("fresh")).await;
    let e = Env { session, ..e };
    e.write(
        "all.yaml",
        &format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: fresh\n---\n{SET}---\n{}---\napiVersion: demo.kapply.dev/v1\nkind: Widget\nmetadata:\n  name: w\n", widget_crd()),
    );
    let planned = kapply_apply_set(&e, "myset").await;
    let set = planned.applyset.unwrap();
    assert!(
        set.current_kinds.contains("Widget.demo.kapply.dev"),
        "{set:?}"
    );
    let parent = e.get("/api/v1/namespaces/fresh/secrets/myset").unwrap();
    assert_eq!(
        parent["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"],
        "ConfigMap,CustomResourceDefinition.apiextensions.k8s.io,Deployment.apps,Namespace,Widget.demo.kapply.dev"
    );
    let w = e
        .get("/apis/demo.kapply.dev/v1/namespaces/fresh/widgets/w")
        .unwrap();
    assert_eq!(
        w["metadata"]["labels"]["applyset.kubernetes.io/part-of"],
        set.id.as_str()
    );
    // Dropping the widget prunes it: its kind was recorded.
    e.write(
        "all.yaml",
        &format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: fresh\n---\n{SET}---\n{}",
            widget_crd()
        ),
    );
    let planned = e.plan_with(&applyset("myset")).await;
    assert_eq!(pruned_names(&planned), ["Widget w"]);
}

/// A TCP proxy to the embedded server that can be cut, connections and
/// all (stopping the server itself leaves kept-alive connections served).
async fn cuttable_proxy(server: &RunningServer) -> (String, tokio::sync::watch::Sender<bool>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let upstream = server.url().trim_start_matches("http://").to_string();
    let (cut, watch) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let mut stop = watch.clone();
        loop {
            let accepted = tokio::select! {
                _ = stop.changed() => return,
                a = listener.accept() => a,
            };
            let Ok((mut inbound, _)) = accepted else {
                return;
            };
            let upstream = upstream.clone();
            let mut stop = watch.clone();
            tokio::spawn(async move {
                let Ok(mut outbound) = tokio::net::TcpStream::connect(&upstream).await else {
                    return;
                };
                tokio::select! {
                    _ = stop.changed() => {}
                    _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                }
            });
        }
    });
    (format!("http://{addr}"), cut)
}

#[tokio::test]
async fn a_server_gone_mid_run_is_named_on_every_object() {
    let e = env().await;
    e.write("app.yaml", BASIC);
    let (url, cut) = cuttable_proxy(&e.server).await;
    let session = e.connect_via(&url).await;
    let loaded = load(&e.load_opts());
    let plan = e.plan_by(&session).await;
    cut.send(true).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let results = session.apply(items(&plan), &ApplyOptions::default()).await;
    assert_eq!(results.len(), 3);
    for r in &results {
        assert!(!r.ok(), "{r:?}");
        assert!(
            r.message()
                .contains(&format!("cannot reach the Kubernetes API server at {url}")),
            "{r:?}"
        );
    }
    assert!(e.get("/api/v1/namespaces/demo").is_none());
    let err = session
        .plan(loaded, &PruneOptions::default(), None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, PlanError::Read(ClusterError::Unreachable { .. })),
        "{err:?}"
    );
    assert!(err.to_string().contains(&url), "{err}");
}

const GADGET: &str = "\
apiVersion: demo.kapply.dev/v1
kind: Gadget
metadata:
  name: g1
spec:
  size: 3
  color: red
";

/// The live object without what the server assigns per write.
fn comparable(mut live: Value) -> Value {
    if let Some(md) = live["metadata"].as_object_mut() {
        for k in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
            "generation",
        ] {
            md.remove(k);
        }
    }
    live
}

/// A cluster-scoped custom kind whose CRD is not among the manifests: its
/// scope comes from discovery, so neither the annotation nor the bodies
/// carry the namespace the load filled in; kapply's POST and PATCH are
/// kubectl's, byte for byte.
#[tokio::test]
async fn cluster_scoped_custom_resource_is_applied_as_kubectl_applies_it() {
    let e = env().await;
    // The CRD is applied apart: the manifests do not say the scope.
    let crd_dir = e.dir.path().join("crd");
    std::fs::create_dir(&crd_dir).unwrap();
    std::fs::write(
        crd_dir.join("crd.yaml"),
        server::crd("demo.kapply.dev", "Gadget", "Cluster"),
    )
    .unwrap();
    let crd_loaded = load(&LoadOptions {
        paths: vec![crd_dir.clone()],
        ..Default::default()
    });
    let crd_plan = e
        .session
        .plan(crd_loaded, &PruneOptions::default(), None)
        .await
        .unwrap()
        .plan;
    assert!(e.apply_all(&crd_plan).await.iter().all(|r| r.ok()));

    e.write("gadget.yaml", GADGET);
    let plan = e.plan().await;
    let g = find(&plan, "Gadget", "g1");
    assert_eq!(g.namespace, None, "{g:#?}");
    assert_eq!(g.id().to_string(), "Gadget g1");
    assert!(
        g.config.as_ref().unwrap()["metadata"]
            .get("namespace")
            .is_none(),
        "{g:#?}"
    );
    let la = g.last_applied.as_ref().unwrap();
    assert!(la["metadata"].get("namespace").is_none(), "{la}");
    e.server.clear_requests();
    let results = e.apply_all(&plan).await;
    assert_eq!(result(&results, "Gadget g1").message(), "created");
    let post = |reqs: Vec<RecordedRequest>| {
        reqs.into_iter()
            .find(|r| r.method == "POST" && !r.query.contains_key("dryRun"))
            .unwrap()
    };
    let ours = post(e.server.requests());
    assert_eq!(ours.path, "/apis/demo.kapply.dev/v1/gadgets");
    let path = "/apis/demo.kapply.dev/v1/gadgets/g1";
    let ours_live = e.get(path).unwrap();
    let annotation = ours_live["metadata"]["annotations"][LAST_APPLIED]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        annotation,
        "{\"apiVersion\":\"demo.kapply.dev/v1\",\"kind\":\"Gadget\",\"metadata\":{\"annotations\":{},\"name\":\"g1\"},\"spec\":{\"color\":\"red\",\"size\":3}}\n"
    );
    // Unchanged on the next plan: the annotation agrees with the live object.
    let plan = e.plan().await;
    assert_eq!(find(&plan, "Gadget", "g1").action, ObjectAction::Unchanged);

    // kubectl: the same POST, the same annotation, the same live object.
    let dir = e.manifests();
    let dir = dir.to_str().unwrap();
    let Some((code, _, err)) = e.kubectl(&["delete", "-f", dir], &[]).await else {
        return;
    };
    assert_eq!(code, 0, "{err}");
    assert!(e.get(path).is_none());
    e.server.clear_requests();
    let (code, out, err) = e.kubectl(&["apply", "-f", dir], &[]).await.unwrap();
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("gadget.demo.kapply.dev/g1 created"), "{out}");
    let theirs = post(e.server.requests());
    assert_eq!(ours.path, theirs.path);
    assert_eq!(ours.query, theirs.query);
    assert_eq!(
        kapply::gocompat::json(ours.body.as_ref().unwrap()),
        kapply::gocompat::json(theirs.body.as_ref().unwrap())
    );
    let theirs_live = e.get(path).unwrap();
    assert_eq!(
        theirs_live["metadata"]["annotations"][LAST_APPLIED].as_str(),
        Some(annotation.as_str())
    );
    assert_eq!(comparable(ours_live), comparable(theirs_live));

    // An update: kapply plans the PATCH kubectl sends.
    e.write(
        "gadget.yaml",
        &GADGET.replace("size: 3\n  color: red\n", "size: 4\n"),
    );
    let planned = e.plan().await;
    let g = find(&planned, "Gadget", "g1");
    assert_eq!(g.action, ObjectAction::Update);
    e.server.clear_requests();
    let (code, _, err) = e.kubectl(&["apply", "-f", dir], &[]).await.unwrap();
    assert_eq!(code, 0, "{err}");
    let patches = e.requests(|r| r.method == "PATCH");
    assert_eq!(patches.len(), 1, "{patches:#?}");
    assert_eq!(patches[0].path, path);
    let patch = g.patch.as_ref().unwrap();
    assert_eq!(
        patches[0].content_type.as_deref(),
        Some(patch.kind.content_type())
    );
    assert_eq!(
        kapply::gocompat::json(patches[0].body.as_ref().unwrap()),
        kapply::gocompat::json(&patch.body)
    );
    let plan = e.plan().await;
    assert_eq!(find(&plan, "Gadget", "g1").action, ObjectAction::Unchanged);
}

/// istio's Gateway and Gateway API's Gateway, same name and namespace, in
/// one manifest directory: two objects everywhere (plan, results, the
/// objects the server holds), never one reported for the other.
#[tokio::test]
async fn kinds_of_the_same_name_in_two_groups_are_two_objects() {
    let e = env().await;
    e.write(
        "0-crds.yaml",
        &format!(
            "{}---\n{}",
            server::crd("networking.istio.io", "Gateway", "Namespaced"),
            server::crd("gateway.networking.k8s.io", "Gateway", "Namespaced")
        ),
    );
    let gateway = |api: &str, key: &str| {
        format!(
            "apiVersion: {api}\nkind: Gateway\nmetadata:\n  name: web\n  namespace: default\nspec:\n  {key}: a\n"
        )
    };
    e.write(
        "gateways.yaml",
        &format!(
            "{}---\n{}",
            gateway("networking.istio.io/v1", "selector"),
            gateway("gateway.networking.k8s.io/v1", "gatewayClassName")
        ),
    );
    let plan = e.plan().await;
    let gateways: Vec<&ObjectPlan> = plan
        .objects
        .iter()
        .filter(|o| o.kind == "Gateway")
        .collect();
    assert_eq!(gateways.len(), 2, "{plan:#?}");
    assert_ne!(gateways[0].id(), gateways[1].id());
    // Not served yet: the CRDs come first in the same apply.
    let results = e.apply_all(&plan).await;
    let created: Vec<&ObjectResult> = results
        .iter()
        .filter(|r| r.object.kind == "Gateway")
        .collect();
    assert_eq!(created.len(), 2, "{results:#?}");
    let mut groups: Vec<&str> = created.iter().map(|r| r.object.group.as_str()).collect();
    groups.sort();
    assert_eq!(groups, ["gateway.networking.k8s.io", "networking.istio.io"]);
    assert!(
        created.iter().all(|r| r.ok() && r.message() == "created"),
        "{results:#?}"
    );
    let istio = e
        .get("/apis/networking.istio.io/v1/namespaces/default/gateways/web")
        .unwrap();
    assert_eq!(istio["spec"], json!({"selector": "a"}));
    let api = e
        .get("/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways/web")
        .unwrap();
    assert_eq!(api["spec"], json!({"gatewayClassName": "a"}));

    // One of them changes: only that one is planned and configured.
    e.write(
        "gateways.yaml",
        &format!(
            "{}---\n{}",
            gateway("networking.istio.io/v1", "selector").replace("a\n", "b\n"),
            gateway("gateway.networking.k8s.io/v1", "gatewayClassName")
        ),
    );
    let plan = e.plan().await;
    let actions: Vec<(String, ObjectAction)> = plan
        .objects
        .iter()
        .filter(|o| o.kind == "Gateway")
        .map(|o| (o.id().group, o.action))
        .collect();
    assert_eq!(
        actions,
        [
            ("networking.istio.io".to_string(), ObjectAction::Update),
            (
                "gateway.networking.k8s.io".to_string(),
                ObjectAction::Unchanged
            ),
        ]
    );
    let results = e.apply_all(&plan).await;
    let istio_ref = ObjectRef::new("networking.istio.io/v1", "Gateway", Some("default"), "web");
    let api_ref = ObjectRef::new(
        "gateway.networking.k8s.io/v1",
        "Gateway",
        Some("default"),
        "web",
    );
    let by_ref = |r: &ObjectRef| results.iter().find(|x| x.object == *r).unwrap();
    assert_eq!(by_ref(&istio_ref).message(), "configured", "{results:#?}");
    assert_eq!(by_ref(&api_ref).message(), "unchanged", "{results:#?}");
    assert_eq!(
        e.get("/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways/web")
            .unwrap()["spec"],
        json!({"gatewayClassName": "a"})
    );
}

/// The namespace is decided once, when planned: an object without one in
/// its file gets the session's (`-n`, else the context's), as kubectl
/// gives it when it maps the object. A row planned cluster-scoped whose
/// kind is namespaced when applied is refused the same way whether its
/// create body was encoded when planned or is built at apply: nothing is
/// written in a namespace the plan never showed.
#[tokio::test]
async fn the_namespace_is_the_one_planned_on_both_apply_paths() {
    let e = env().await;
    let ns = e.session.namespace().to_string();
    e.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nsless\ndata:\n  k: v\n",
    );
    let plan = e.plan().await;
    let row = find(&plan, "ConfigMap", "nsless").clone();
    assert_eq!(row.action, ObjectAction::Create);
    assert_eq!(row.namespace.as_deref(), Some(ns.as_str()));

    // As if discovery had said cluster-scoped when it was planned.
    let mut stale = row.clone();
    stale.namespace = None;
    if let Some(config) = &mut stale.config {
        config["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("namespace");
    }
    let item = |plan: ObjectPlan| ApplyItem {
        plan,
        accepted_fields: None,
        released_fields: Vec::new(),
    };
    let built = e
        .session
        .apply(vec![item(stale.clone())], &ApplyOptions::default())
        .await;
    let (slim, body) = kapply::cluster::slim_for_apply(stale);
    assert!(body.is_some(), "a create's body is encoded when planned");
    let encoded = e
        .session
        .apply_encoded(vec![(item(slim), body)], &ApplyOptions::default())
        .await;
    for results in [&built, &encoded] {
        assert_eq!(results.len(), 1);
        assert!(!results[0].ok(), "{results:#?}");
        assert!(results[0].message().contains("plan again"), "{results:#?}");
    }
    assert!(
        e.requests(|r| r.method == "POST").is_empty(),
        "nothing written"
    );

    // The row as planned is created in the namespace it shows.
    let results = e.apply_all(&plan).await;
    assert!(results.iter().all(|r| r.ok()), "{results:#?}");
    assert!(
        e.get(&format!("/api/v1/namespaces/{ns}/configmaps/nsless"))
            .is_some()
    );
}

/// A controller writing status between plan and apply moves the
/// resourceVersion, not the change: the PATCH's precondition fails (409),
/// the object is read and planned again, and the same patch is sent with
/// the new resourceVersion. A change that differs is not sent (above).
#[tokio::test]
async fn a_conflict_on_an_unchanged_patch_is_replanned_and_sent_again() {
    let e = basic_env().await;
    e.write("app.yaml", &BASIC.replace("color: blue", "color: red"));
    let plan = e.plan().await;
    let path = "/api/v1/namespaces/demo/configmaps/settings";
    let mut cm = e.get(path).unwrap();
    let before = cm["metadata"]["resourceVersion"].clone();
    cm["metadata"]["annotations"]["controller/seen"] = json!("yes");
    e.server.api().put_object_as(cm, "controller").unwrap();
    let now = e.get(path).unwrap()["metadata"]["resourceVersion"].clone();
    assert_ne!(before, now);
    e.server.clear_requests();
    let results = e.apply_all(&plan).await;
    assert_eq!(
        result(&results, "ConfigMap demo/settings").message(),
        "configured",
        "{results:#?}"
    );
    // The dry run's 409, one GET, then the dry run and the write at the new
    // resourceVersion.
    let sent: Vec<(String, Option<Value>)> = e
        .requests(|r| r.path == path)
        .into_iter()
        .map(|r| {
            (
                r.method,
                r.body.map(|b| b["metadata"]["resourceVersion"].clone()),
            )
        })
        .collect();
    let rv = |v: &Value| Some(v.clone());
    assert_eq!(
        sent,
        vec![
            ("PATCH".to_string(), rv(&before)),
            ("GET".to_string(), None),
            ("PATCH".to_string(), rv(&now)),
            ("PATCH".to_string(), rv(&now)),
        ]
    );
    let live = e.get(path).unwrap();
    assert_eq!(live["data"]["color"], "red");
    assert_eq!(live["metadata"]["annotations"]["controller/seen"], "yes");
}

/// Writes go out by kind in the order of dependence, whatever the order of
/// the manifests (each kind's all answered before the next kind's):
/// ServiceAccounts, Secrets and ConfigMaps before RBAC, Services and
/// workloads; the results still come back in the order given.
#[tokio::test]
async fn writes_go_out_in_the_order_of_dependence() {
    let e = env().await;
    let obj = |api: &str, kind: &str, name: &str, extra: &str| {
        format!(
            "apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: default\n{extra}---\n"
        )
    };
    let deploy = "spec:\n  selector:\n    matchLabels:\n      app: w\n  template:\n    metadata:\n      labels:\n        app: w\n    spec:\n      serviceAccountName: sa\n      containers:\n      - name: c\n        image: nginx\n";
    let text = [
        obj("apps/v1", "Deployment", "web", deploy),
        obj("rbac.authorization.k8s.io/v1", "RoleBinding", "rb", "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: r\nsubjects:\n- kind: ServiceAccount\n  name: sa\n"),
        obj("rbac.authorization.k8s.io/v1", "Role", "r", "rules: []\n"),
        obj("v1", "ConfigMap", "cm", ""),
        obj("v1", "ServiceAccount", "sa", ""),
        obj("v1", "Secret", "s", ""),
    ]
    .concat();
    e.write("all.yaml", &text);
    let plan = e.plan().await;
    e.server.clear_requests();
    let results = e.apply_all(&plan).await;
    assert!(results.iter().all(|r| r.ok()), "{results:#?}");
    let order: Vec<String> = results.iter().map(|r| r.object.to_string()).collect();
    assert_eq!(
        order,
        [
            "Deployment default/web",
            "RoleBinding default/rb",
            "Role default/r",
            "ConfigMap default/cm",
            "ServiceAccount default/sa",
            "Secret default/s",
        ]
    );
    let writes: Vec<String> = e
        .requests(|r| r.method == "POST" && !r.query.contains_key("dryRun"))
        .into_iter()
        .map(|r| r.path.rsplit('/').next().unwrap().to_string())
        .collect();
    assert_eq!(
        writes,
        [
            "serviceaccounts",
            "secrets",
            "configmaps",
            "roles",
            "rolebindings",
            "deployments"
        ]
    );
    // Every dry run before the first write.
    let all = e.requests(|r| r.method == "POST");
    let first_write = all
        .iter()
        .position(|r| !r.query.contains_key("dryRun"))
        .unwrap();
    assert_eq!(first_write, 6, "{all:#?}");

    // Deletes go the other way: the workload first, what it uses after.
    let plan = e.plan().await;
    e.server.clear_requests();
    let results = e
        .session
        .delete(&plan.objects, &DeleteOptions::default())
        .await;
    assert!(
        results.iter().all(|r| r.message() == "deleted"),
        "{results:#?}"
    );
    let order: Vec<String> = results.iter().map(|r| r.object.to_string()).collect();
    assert_eq!(order[0], "Deployment default/web");
    let deletes: Vec<String> = e
        .requests(|r| r.method == "DELETE")
        .into_iter()
        .map(|r| r.path.rsplit('/').nth(1).unwrap().to_string())
        .collect();
    assert_eq!(
        deletes,
        [
            "deployments",
            "rolebindings",
            "roles",
            "configmaps",
            "secrets",
            "serviceaccounts"
        ]
    );
}

/// The TUI's engine reports its dry run of many objects as the server
/// answers, for the confirmation's count: one `Done` per object, the same
/// results as returned, and nothing written.
#[tokio::test]
async fn the_engine_reports_a_dry_run_as_the_server_answers() {
    use kapply::cluster::KubeEngine;
    use kapply::ops::{Engine, Write, WriteEvent};
    let e = env().await;
    let mut text = String::new();
    for i in 0..30 {
        text.push_str(&format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dry-{i:02}\n  namespace: default\n---\n"
        ));
    }
    e.write("many.yaml", &text);
    let plan = e.plan().await;
    let engine = KubeEngine::new(e.session.clone(), e.load_opts(), PruneOptions::default());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let results = engine
        .dry_run_reporting(Write::Apply(items(&plan)), tx)
        .await;
    assert_eq!(results.len(), 30);
    assert!(
        results
            .iter()
            .all(|r| r.ok() && r.message() == "created (server dry run)"),
        "{results:#?}"
    );
    let mut done = vec![None; 30];
    while let Ok(ev) = rx.try_recv() {
        if let WriteEvent::Done(i, r) = ev {
            assert!(done[i].replace(r).is_none(), "{i} answered twice");
        }
    }
    let done: Vec<ObjectResult> = done.into_iter().map(Option::unwrap).collect();
    assert_eq!(done, results);
    // A dry run: every POST carried dryRun=All, and nothing exists.
    let posts = e.requests(|r| r.method == "POST");
    assert!(!posts.is_empty());
    assert!(
        posts
            .iter()
            .all(|r| r.query.get("dryRun").map(String::as_str) == Some("All")),
        "{posts:#?}"
    );
    assert!(
        e.plan()
            .await
            .objects
            .iter()
            .all(|o| o.action == kapply::plan::ObjectAction::Create)
    );
}

/// The TUI's engine reports an apply and a delete of many objects as they
/// go: each object's write as it is sent, its result as it is known, by
/// its position among those given; the results returned say the same.
#[tokio::test]
async fn the_engine_reports_writes_as_they_happen() {
    use kapply::cluster::KubeEngine;
    use kapply::ops::{Engine, Write, WriteEvent};
    let e = env().await;
    let mut text = String::new();
    for i in 0..40 {
        text.push_str(&format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i:02}\n  namespace: default\n---\n"
        ));
    }
    e.write("many.yaml", &text);
    let plan = e.plan().await;
    let engine = KubeEngine::new(e.session.clone(), e.load_opts(), PruneOptions::default());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let results = engine.write_reporting(Write::Apply(items(&plan)), tx).await;
    assert!(results.iter().all(ObjectResult::ok), "{results:#?}");
    let mut sent = [false; 40];
    let mut done = vec![None; 40];
    while let Ok(ev) = rx.try_recv() {
        match ev {
            WriteEvent::Sending(i) => sent[i] = true,
            WriteEvent::Done(i, r) => {
                assert!(sent[i], "{i} done before it was sent");
                assert!(done[i].replace(r).is_none(), "{i} done twice");
            }
        }
    }
    let done: Vec<ObjectResult> = done.into_iter().map(Option::unwrap).collect();
    assert_eq!(done, results);
    // The same for a delete.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let targets = e.plan().await.objects;
    let results = engine
        .write_reporting(Write::Delete(targets, Propagation::Background), tx)
        .await;
    assert!(
        results.iter().all(|r| r.message() == "deleted"),
        "{results:#?}"
    );
    let mut n = 0;
    while let Ok(ev) = rx.try_recv() {
        if let WriteEvent::Done(i, r) = ev {
            assert_eq!(r, results[i]);
            n += 1;
        }
    }
    assert_eq!(n, 40);
}
