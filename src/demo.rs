//! The demo story of `kapply demo`, from the reference page.
//!
//! Two halves:
//! - the manifest directory the demo user reviews, kept in `assets/demo/`
//!   and compiled in ([`DEMO_FILES`], [`write_demo_manifests`]);
//! - the story's history, replayed into an embedded API server by [`seed`]:
//!   the requests kubectl 1.32 sends for each step, through
//!   [`ApiServer::handle`], so the live objects (defaults, annotations,
//!   managedFields) are whatever the server makes of them, not a copy.
//!   The manifests as first applied are in `assets/demo-history/`
//!   ([`HISTORY_FILES`]).
//!
//! The story (namespace `demo`, every object labelled `app=demo`):
//! 1. `kubectl apply -f` of the first directory: `Namespace demo`, the CRD
//!    `widgets.demo.kapply.dev`, `ConfigMap settings`, `Service nginx` (as
//!    in `assets/demo/`; in sync now but for step 6), the reference page's
//!    simple_deployment.yaml (image nginx:1.14.2, minReadySeconds 5),
//!    `Secret db-credentials` (the old password) and `ConfigMap
//!    old-settings` (whose manifest has since been removed: a prune
//!    candidate).
//! 2. `kubectl apply -f widget.yaml`: `Widget sprocket` with size 3 (a
//!    separate run: kubectl maps every object before applying, and the kind
//!    Widget exists only once the CRD does).
//! 3. `kubectl create configmap feature-flags` and `kubectl label`: never
//!    applied, so no last-applied annotation; the manifest adds a key.
//! 4. `kubectl scale deployment nginx-deployment --replicas=2`: the
//!    manifest now has nginx:1.16.1 and no minReadySeconds, so apply sets
//!    the image, clears minReadySeconds and keeps replicas. kubectl scale
//!    sends no fieldManager, so the server names the writer of
//!    `spec.replicas` after the User-Agent: manager `kubectl`, subresource
//!    `scale` (not `kubectl-scale`; recorded from kubectl 1.32).
//! 5. `kubectl patch widget sprocket --type merge`: another writer sets
//!    `spec.owner`, which apply keeps; the manifest changes `spec.size`.
//! 6. `kubectl edit configmap settings`: someone sets `LOG_LEVEL` to
//!    `debug` in the cluster while the manifest (and last-applied) still
//!    say `info`: a drift, written by `kubectl-edit`, which apply reverts.

use crate::manifest::{self, LoadOptions, Manifest};
use crate::server::{ApiServer, RunningServer};
use anyhow::{Context, anyhow, bail};
use http::{HeaderMap, HeaderValue, Method, Uri, header};
use serde_json::{Value, json};
use std::cell::RefCell;
use std::collections::BTreeMap;
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

/// The manifests that differ from `assets/demo/` as they were first applied
/// (`assets/demo-history/`); the others were applied as they are now.
pub const HISTORY_FILES: &[(&str, &str)] = &[
    (
        "04-simple_deployment.yaml",
        include_str!("../assets/demo-history/04-simple_deployment.yaml"),
    ),
    (
        "06-secret.yaml",
        include_str!("../assets/demo-history/06-secret.yaml"),
    ),
    (
        "07-widget.yaml",
        include_str!("../assets/demo-history/07-widget.yaml"),
    ),
    (
        "08-old-settings.yaml",
        include_str!("../assets/demo-history/08-old-settings.yaml"),
    ),
];

/// The User-Agent of kubectl 1.32 (as recorded from it). Requests without
/// `fieldManager` (`kubectl scale`) get their field manager from its first
/// word, `kubectl`, as on a real API server.
pub const KUBECTL_USER_AGENT: &str = "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07";

/// Write the demo manifest directory into `dir` (created if missing).
pub fn write_demo_manifests(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, text) in DEMO_FILES {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}

/// A running demo cluster: the seeded embedded server, the manifest
/// directory the user reviews, and a kubeconfig for kubectl and kapply.
pub struct Demo {
    pub server: crate::server::RunningServer,
    pub manifests: std::path::PathBuf,
    pub kubeconfig: std::path::PathBuf,
    /// Holds the manifests (and the kubeconfig unless written elsewhere).
    _dir: tempfile::TempDir,
}

impl Demo {
    /// Start the server on `port` (a free one when `None`), seed the story,
    /// write the manifests to a temporary directory and the kubeconfig to
    /// `kubeconfig_out` (default: beside the manifests). An existing
    /// `kubeconfig_out` is overwritten only when an earlier demo wrote it,
    /// or with `force`; otherwise nothing starts.
    pub async fn start(
        port: Option<u16>,
        kubeconfig_out: Option<std::path::PathBuf>,
        force: bool,
    ) -> anyhow::Result<Demo> {
        use anyhow::Context;
        if let Some(path) = &kubeconfig_out
            && !force
        {
            check_overwritable(path)?;
        }
        let server = crate::server::start(crate::server::ServerOptions {
            port,
            // A demo runs as long as the user likes; nobody reads its requests.
            forget_requests: true,
        })
        .await?;
        seed(&server).await.context("seeding the demo cluster")?;
        // Owner only: it holds the kubeconfig with the server's token.
        let mut dir = tempfile::Builder::new();
        dir.prefix("kapply-demo-");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            dir.permissions(std::fs::Permissions::from_mode(0o700));
        }
        let dir = dir.tempdir()?;
        let manifests = dir.path().join("manifests");
        write_demo_manifests(&manifests)?;
        let kubeconfig = kubeconfig_out.unwrap_or_else(|| dir.path().join("kubeconfig"));
        server
            .write_kubeconfig(&kubeconfig)
            .with_context(|| format!("writing {}", kubeconfig.display()))?;
        Ok(Demo {
            server,
            manifests,
            kubeconfig,
            _dir: dir,
        })
    }

    /// The engine the TUI uses on the demo: the demo manifests, pruning by
    /// `app=demo` (every demo object carries it, so that is safe).
    pub async fn engine(&self) -> anyhow::Result<crate::cluster::KubeEngine> {
        use crate::cluster::{ClusterOptions, KubeEngine, PruneMode, PruneOptions, Target};
        // Connecting is the TUI's first effect, as for any cluster.
        let target = Target::resolve(&ClusterOptions {
            kubeconfig: Some(self.kubeconfig.clone()),
            ..Default::default()
        })
        .await?;
        let load = crate::manifest::LoadOptions {
            paths: vec![self.manifests.clone()],
            recursive: false,
            namespace: None,
            default_namespace: String::new(),
        };
        let prune = PruneOptions {
            mode: PruneMode::Allowlist {
                selector: Some("app=demo".into()),
                all: false,
                allowlist: Vec::new(),
            },
        };
        Ok(KubeEngine::connecting(target, load, prune))
    }
}

/// Refuses to overwrite a file the demo did not write (pointed at
/// `~/.kube/config`, it would destroy a real configuration).
fn check_overwritable(path: &std::path::Path) -> anyhow::Result<()> {
    use std::io::BufRead;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => anyhow::bail!("--kubeconfig-out {}: {e}", path.display()),
    };
    let mut first = String::new();
    // Only the first line matters; a file that is not text is not ours.
    let _ = std::io::BufReader::new(file).read_line(&mut first);
    if first.trim_end() == crate::server::KUBECONFIG_MARK {
        return Ok(());
    }
    anyhow::bail!(
        "--kubeconfig-out {}: the file exists and was not written by kapply demo; \
         refusing to overwrite it (choose another path, or pass --force)",
        path.display()
    )
}

/// Replay the story's history into a freshly started server. Fails, naming
/// the object and the request, on any answer kubectl would have reported as
/// an error (e.g. when the server already holds a demo object).
pub async fn seed(server: &RunningServer) -> anyhow::Result<()> {
    seed_api(server.api())
}

/// [`seed`] without the socket: the same requests, through
/// [`ApiServer::handle`].
pub fn seed_api(api: &ApiServer) -> anyhow::Result<()> {
    let kubectl = Kubectl::new(api);
    // 1. `kubectl apply -f first/`: files in lexical order; the objects in
    //    sync now were applied as they are in assets/demo/.
    let in_sync = DEMO_FILES[..4].iter().map(|f| ("assets/demo", f));
    let older = HISTORY_FILES
        .iter()
        .filter(|(name, _)| *name != "07-widget.yaml")
        .map(|f| ("assets/demo-history", f));
    for (dir, (name, text)) in in_sync.chain(older) {
        for m in read_manifests(text, &format!("{dir}/{name}"))? {
            kubectl.apply_new(&m)?;
        }
    }
    // 2. `kubectl apply -f 07-widget.yaml` (the CRD exists now).
    for (name, text) in HISTORY_FILES.iter().filter(|(n, _)| *n == "07-widget.yaml") {
        for m in read_manifests(text, &format!("assets/demo-history/{name}"))? {
            kubectl.apply_new(&m)?;
        }
    }
    // 3. `kubectl create configmap feature-flags -n demo
    //    --from-literal=beta=true --from-literal=legacy-ui=on`
    //    (kubectl sends it as protobuf; this is the same object as JSON).
    let what = "kubectl create configmap feature-flags";
    let configmaps = kubectl.collection("v1", "ConfigMap", Some(DEMO_NAMESPACE))?;
    let flags = json!({
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "feature-flags", "namespace": DEMO_NAMESPACE,
                     "creationTimestamp": null},
        "data": {"beta": "true", "legacy-ui": "on"},
    });
    kubectl.send(
        what,
        Method::POST,
        &format!("{configmaps}?fieldManager=kubectl-create&fieldValidation=Strict"),
        Some(("application/json", &flags)),
        201,
    )?;
    // 4. `kubectl label configmap feature-flags -n demo app=demo`: GET, then
    //    the JSON merge patch between the object and the labelled object.
    let what = "kubectl label configmap feature-flags";
    let flags_path = format!("{configmaps}/feature-flags");
    kubectl.send(what, Method::GET, &flags_path, None, 200)?;
    kubectl.send(
        what,
        Method::PATCH,
        &format!("{flags_path}?fieldManager=kubectl-label"),
        Some((
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"app": "demo"}}}),
        )),
        200,
    )?;
    // 5. `kubectl scale deployment nginx-deployment -n demo --replicas=2`:
    //    GET, then a merge patch of the scale subresource, without
    //    fieldManager.
    let what = "kubectl scale deployment nginx-deployment";
    let deployment = format!(
        "{}/nginx-deployment",
        kubectl.collection("apps/v1", "Deployment", Some(DEMO_NAMESPACE))?
    );
    kubectl.send(what, Method::GET, &deployment, None, 200)?;
    kubectl.send(
        what,
        Method::PATCH,
        &format!("{deployment}/scale"),
        Some((
            "application/merge-patch+json",
            &json!({"spec": {"replicas": 2}}),
        )),
        200,
    )?;
    // 6. `kubectl patch widget sprocket -n demo --type merge
    //    -p '{"spec":{"owner":"team-a"}}'`: GET, then the patch as given.
    let what = "kubectl patch widget sprocket";
    let widget = format!(
        "{}/sprocket",
        kubectl.collection("demo.kapply.dev/v1", "Widget", Some(DEMO_NAMESPACE))?
    );
    kubectl.send(what, Method::GET, &widget, None, 200)?;
    kubectl.send(
        what,
        Method::PATCH,
        &format!("{widget}?fieldManager=kubectl-patch"),
        Some((
            "application/merge-patch+json",
            &json!({"spec": {"owner": "team-a"}}),
        )),
        200,
    )?;
    // 7. `kubectl edit configmap settings -n demo`, LOG_LEVEL info -> debug:
    //    GET, then the two-way strategic merge patch of the edit (kubectl
    //    edit leaves the last-applied annotation alone).
    let what = "kubectl edit configmap settings";
    let settings = format!("{configmaps}/settings");
    kubectl.send(what, Method::GET, &settings, None, 200)?;
    kubectl.send(
        what,
        Method::PATCH,
        &format!("{settings}?fieldManager=kubectl-edit&fieldValidation=Strict"),
        Some((
            "application/strategic-merge-patch+json",
            &json!({"data": {"LOG_LEVEL": "debug"}}),
        )),
        200,
    )?;
    Ok(())
}

/// The manifests of one compiled-in file, namespace filled in.
fn read_manifests(text: &str, file: &str) -> anyhow::Result<Vec<Manifest>> {
    let opts = LoadOptions {
        default_namespace: DEMO_NAMESPACE.into(),
        ..LoadOptions::default()
    };
    let loaded = manifest::parse_str(text, Path::new(file), &opts);
    if let Some(e) = loaded.errors.first() {
        bail!("demo seed: {e}");
    }
    Ok(loaded.manifests)
}

/// Sends requests as kubectl 1.32 does.
struct Kubectl<'a> {
    api: &'a ApiServer,
    /// Discovery answers by group version, fetched once as kubectl caches them.
    discovered: RefCell<BTreeMap<String, Value>>,
}

impl<'a> Kubectl<'a> {
    fn new(api: &'a ApiServer) -> Self {
        Kubectl {
            api,
            discovered: RefCell::new(BTreeMap::new()),
        }
    }

    /// One request: its status and JSON answer (null when not JSON).
    fn request(
        &self,
        what: &str,
        method: &Method,
        path: &str,
        body: Option<(&str, &Value)>,
    ) -> anyhow::Result<(u16, Value, String)> {
        let uri: Uri = path
            .parse()
            .with_context(|| format!("demo seed: {what}: bad request path {path:?}"))?;
        let mut headers = HeaderMap::new();
        headers.insert(
            header::USER_AGENT,
            HeaderValue::from_static(KUBECTL_USER_AGENT),
        );
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        let bytes = match body {
            Some((content_type, v)) => {
                headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_str(content_type).with_context(|| {
                        format!("demo seed: {what}: bad content type {content_type:?}")
                    })?,
                );
                serde_json::to_vec(v)?
            }
            None => Vec::new(),
        };
        let resp = self.api.handle(method, &uri, &headers, &bytes);
        let text = String::from_utf8_lossy(resp.body()).into_owned();
        let answer = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok((resp.status().as_u16(), answer, text))
    }

    /// One request whose answer must have status `expect`. `what` names the
    /// step and the object in the error.
    fn send(
        &self,
        what: &str,
        method: Method,
        path: &str,
        body: Option<(&str, &Value)>,
        expect: u16,
    ) -> anyhow::Result<Value> {
        let (status, answer, text) = self.request(what, &method, path, body)?;
        if status != expect {
            let message = answer["message"].as_str().unwrap_or(&text);
            bail!(
                "demo seed: {what}: {method} {path} answered {status} (expected {expect}): {message}"
            );
        }
        Ok(answer)
    }

    /// The collection path of a kind, found by discovery as kubectl finds it.
    fn collection(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> anyhow::Result<String> {
        let prefix = if api_version.contains('/') {
            format!("/apis/{api_version}")
        } else {
            format!("/api/{api_version}")
        };
        let what = format!("discovery of {kind} ({api_version})");
        let cached = self.discovered.borrow().get(api_version).cloned();
        let resources = match cached {
            Some(list) => list,
            None => {
                let list = self.send(&what, Method::GET, &prefix, None, 200)?;
                self.discovered
                    .borrow_mut()
                    .insert(api_version.to_string(), list.clone());
                list
            }
        };
        let resource = resources["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["kind"] == kind && r["name"].as_str().is_some_and(|n| !n.contains('/')))
            .ok_or_else(|| anyhow!("demo seed: {what}: the server does not serve it"))?;
        let plural = resource["name"].as_str().unwrap_or_default();
        Ok(match namespace {
            Some(ns) if resource["namespaced"] == true => {
                format!("{prefix}/namespaces/{ns}/{plural}")
            }
            _ => format!("{prefix}/{plural}"),
        })
    }

    /// `kubectl apply` of an object that does not exist yet: GET (404), the
    /// namespace GET kubectl makes only to word a missing-namespace error,
    /// then POST of the manifest with the last-applied annotation.
    fn apply_new(&self, m: &Manifest) -> anyhow::Result<()> {
        let what = format!("kubectl apply of {} ({})", m.id, m.source);
        let collection =
            self.collection(&m.api_version(), &m.id.kind, m.id.namespace.as_deref())?;
        let object = format!("{collection}/{}", m.id.name);
        self.send(&what, Method::GET, &object, None, 404)?;
        if let Some(ns) = &m.id.namespace {
            // Its answer does not matter: the POST reports a missing namespace.
            self.request(
                &what,
                &Method::GET,
                &format!("/api/v1/namespaces/{ns}"),
                None,
            )?;
        }
        let body = crate::merge::creation_body(&m.object());
        self.send(
            &what,
            Method::POST,
            &format!("{collection}?fieldManager=kubectl-client-side-apply&fieldValidation=Strict"),
            Some(("application/json", &body)),
            201,
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::{Cause, FieldAction, FieldChange, LAST_APPLIED, PatchType};
    use crate::plan::{self, ObjectAction, ObjectPlan, PlanOptions};
    use crate::server::ServerOptions;

    async fn seeded() -> RunningServer {
        let server = crate::server::start(ServerOptions::default())
            .await
            .unwrap();
        seed(&server).await.unwrap();
        server
    }

    /// The object as `kubectl get -o json` reads it.
    fn get(server: &RunningServer, path: &str) -> Value {
        let resp =
            server
                .api()
                .handle(&Method::GET, &path.parse().unwrap(), &HeaderMap::new(), &[]);
        assert_eq!(resp.status(), 200, "GET {path}");
        serde_json::from_slice(resp.body()).unwrap()
    }

    fn deployment(server: &RunningServer) -> Value {
        get(
            server,
            "/apis/apps/v1/namespaces/demo/deployments/nginx-deployment",
        )
    }

    fn last_applied_of(obj: &Value) -> Option<Value> {
        obj["metadata"]["annotations"][LAST_APPLIED]
            .as_str()
            .map(|s| serde_json::from_str(s).unwrap())
    }

    fn managed_entry<'v>(obj: &'v Value, manager: &str) -> &'v Value {
        obj["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["manager"] == manager)
            .unwrap_or_else(|| panic!("no managedFields entry of {manager}: {obj:#}"))
    }

    /// The current manifest of an assets/demo file.
    fn current(file: &str) -> Manifest {
        let text = DEMO_FILES
            .iter()
            .find(|(name, _)| *name == file)
            .map(|(_, text)| *text)
            .unwrap();
        let mut ms = read_manifests(text, file).unwrap();
        assert_eq!(ms.len(), 1, "{file}");
        ms.remove(0)
    }

    fn field<'p>(plan: &'p ObjectPlan, path: &str) -> &'p FieldChange {
        plan.fields
            .iter()
            .find(|f| f.path == path)
            .unwrap_or_else(|| panic!("no field {path} in {:#?}", plan.fields))
    }

    #[test]
    fn manifests_parse_as_yaml_objects() {
        assert_eq!(DEMO_FILES.len(), 8);
        for (name, text) in DEMO_FILES.iter().chain(HISTORY_FILES) {
            let v: Value = crate::yaml::read_value(text).unwrap_or_else(|e| panic!("{name}: {e}"));
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
        // The history is not part of what the user reviews.
        assert_eq!(
            std::fs::read_dir(&target).unwrap().count(),
            DEMO_FILES.len()
        );
    }

    #[test]
    fn history_is_the_older_content_of_the_same_objects() {
        for (name, old) in HISTORY_FILES {
            let old = &read_manifests(old, name).unwrap()[0];
            match DEMO_FILES.iter().find(|(n, _)| n == name) {
                Some(_) => {
                    let now = current(name);
                    assert_eq!(old.id, now.id, "{name}");
                    assert_ne!(old.object(), now.object(), "{name}");
                }
                // The prune candidate: gone from the directory.
                None => assert!(
                    !DEMO_FILES
                        .iter()
                        .any(|(_, t)| t.contains(&format!("name: {}", old.id.name))),
                    "{name}"
                ),
            }
        }
    }

    /// The demo's directory (manifests, kubeconfig with the token) and
    /// the kubeconfig are its user's only.
    #[cfg(unix)]
    #[tokio::test]
    async fn demo_files_are_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let demo = Demo::start(None, None, false).await.unwrap();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let dir = demo.manifests.parent().unwrap();
        assert_eq!(mode(dir), 0o700);
        assert_eq!(mode(&demo.kubeconfig), 0o600);
        let text = std::fs::read_to_string(&demo.kubeconfig).unwrap();
        assert!(text.contains(demo.server.token()), "{text}");
    }

    #[tokio::test]
    async fn deployment_was_applied_then_scaled() {
        let server = seeded().await;
        let dep = deployment(&server);
        assert_eq!(dep["spec"]["replicas"], 2);
        let la = last_applied_of(&dep).unwrap();
        assert_eq!(la["spec"]["minReadySeconds"], 5);
        assert_eq!(
            la["spec"]["template"]["spec"]["containers"][0]["image"],
            "nginx:1.14.2"
        );
        assert!(la["spec"].get("replicas").is_none());
        // Server defaults, not written by anyone in the story.
        assert_eq!(dep["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        assert_eq!(
            dep["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
        // `kubectl scale` sends no fieldManager: the server names the
        // manager after the User-Agent.
        let scale = managed_entry(&dep, "kubectl");
        assert_eq!(scale["subresource"], "scale");
        assert_eq!(scale["operation"], "Update");
        assert_eq!(scale["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
        let apply = managed_entry(&dep, "kubectl-client-side-apply");
        assert!(apply.get("subresource").is_none());
        assert!(apply["fieldsV1"]["f:spec"].get("f:replicas").is_none());
        assert!(
            apply["fieldsV1"]["f:spec"]
                .get("f:minReadySeconds")
                .is_some()
        );
        assert_eq!(
            plan::field_owners(&dep)
                .get("spec.replicas")
                .map(String::as_str),
            Some("kubectl")
        );
    }

    #[tokio::test]
    async fn deployment_plan_is_the_reference_walkthrough() {
        let server = seeded().await;
        let live = deployment(&server);
        let p = plan::plan_object(
            &current("04-simple_deployment.yaml"),
            Some(&live),
            &PlanOptions::default(),
        );
        assert_eq!(p.action, ObjectAction::Update, "{p:#?}");
        let replicas = field(&p, "spec.replicas");
        assert_eq!(replicas.action, FieldAction::Keep);
        assert_eq!(replicas.live, Some(json!(2)));
        assert_eq!(replicas.reason, crate::merge::Reason::OtherWriter);
        assert_eq!(replicas.owner.as_deref(), Some("kubectl"));
        // Server defaults recorded under apply's own manager say so.
        let deadline = field(&p, "spec.progressDeadlineSeconds");
        assert_eq!(deadline.action, FieldAction::Keep);
        assert_eq!(deadline.reason, crate::merge::Reason::ServerDefault);
        let min = field(&p, "spec.minReadySeconds");
        assert_eq!(min.action, FieldAction::Clear);
        assert_eq!(min.last_applied, Some(json!(5)));
        let image = field(&p, "spec.template.spec.containers[name=nginx].image");
        assert_eq!(image.action, FieldAction::Set);
        assert_eq!(image.config, Some(json!("nginx:1.16.1")));
        assert_eq!(image.live, Some(json!("nginx:1.14.2")));
    }

    #[tokio::test]
    async fn other_objects_of_the_story() {
        let server = seeded().await;
        let cm = |name: &str| {
            get(
                &server,
                &format!("/api/v1/namespaces/demo/configmaps/{name}"),
            )
        };
        // The prune candidate: applied, labelled, no manifest.
        let old = cm("old-settings");
        assert_eq!(old["metadata"]["labels"]["app"], "demo");
        assert_eq!(last_applied_of(&old).unwrap()["data"]["MODE"], "legacy");
        // Imperative: no annotation; created and labelled by kubectl.
        let flags = cm("feature-flags");
        assert!(last_applied_of(&flags).is_none(), "{flags:#}");
        assert_eq!(flags["metadata"]["labels"]["app"], "demo");
        assert_eq!(flags["data"]["legacy-ui"], "on");
        managed_entry(&flags, "kubectl-create");
        managed_entry(&flags, "kubectl-label");
        // Secret: applied with the old password.
        let secret = get(&server, "/api/v1/namespaces/demo/secrets/db-credentials");
        assert_eq!(secret["data"]["password"], "czNjcjN0");
        assert_eq!(last_applied_of(&secret).unwrap()["data"], secret["data"]);
        // Widget: applied with size 3, then spec.owner by kubectl patch.
        let w = get(
            &server,
            "/apis/demo.kapply.dev/v1/namespaces/demo/widgets/sprocket",
        );
        assert_eq!(w["spec"]["size"], 3);
        assert_eq!(w["spec"]["owner"], "team-a");
        assert!(last_applied_of(&w).unwrap()["spec"].get("owner").is_none());
        assert_eq!(
            plan::field_owners(&w).get("spec.owner").map(String::as_str),
            Some("kubectl-patch")
        );
        // The Service got its defaults from the server.
        let svc = get(&server, "/api/v1/namespaces/demo/services/nginx");
        assert_eq!(svc["spec"]["ports"][0]["protocol"], "TCP");
        assert!(svc["spec"]["clusterIP"].is_string());
    }

    /// Planning the directory the user reviews: in sync where the story
    /// says so, an update everywhere else.
    #[tokio::test]
    async fn the_directory_plans_as_the_story_says() {
        let server = seeded().await;
        for (file, _) in DEMO_FILES {
            let m = current(file);
            let live = server
                .store()
                .get(
                    &m.api_version(),
                    &m.id.kind,
                    m.id.namespace.as_deref(),
                    &m.id.name,
                )
                .unwrap_or_else(|| panic!("{} is live", m.id));
            let p = plan::plan_object(&m, Some(&live), &PlanOptions::default());
            let expected = match *file {
                "00-namespace.yaml" | "01-crd-widgets.yaml" | "03-service.yaml" => {
                    ObjectAction::Unchanged
                }
                _ => ObjectAction::Update,
            };
            assert_eq!(p.action, expected, "{file}: {p:#?}");
            match *file {
                "05-feature-flags.yaml" => {
                    assert!(p.warnings.iter().any(|w| w.contains("missing")), "{p:#?}");
                    assert_eq!(field(&p, "data.dark-mode").action, FieldAction::Set);
                    assert_eq!(field(&p, "data.legacy-ui").action, FieldAction::Keep);
                }
                "02-configmap-settings.yaml" => {
                    // Only the drift: apply reverts kubectl edit's change.
                    let changes: Vec<_> = p
                        .fields
                        .iter()
                        .filter(|f| f.action != FieldAction::Keep)
                        .collect();
                    assert_eq!(changes.len(), 1, "{p:#?}");
                    let f = changes[0];
                    assert_eq!(f.path, "data.LOG_LEVEL");
                    assert_eq!(f.cause, Cause::Drift);
                    assert_eq!(f.owner.as_deref(), Some("kubectl-edit"));
                    assert!(f.changed_at.is_some(), "{f:#?}");
                    assert_eq!(f.live, Some(json!("debug")));
                    assert_eq!(f.config, Some(json!("info")));
                    assert!(p.reverts_drift);
                }
                "06-secret.yaml" => {
                    assert_eq!(field(&p, "data.password").action, FieldAction::Set);
                }
                "07-widget.yaml" => {
                    assert_eq!(p.patch.as_ref().unwrap().kind, PatchType::Merge);
                    assert_eq!(field(&p, "spec.size").action, FieldAction::Set);
                    assert_eq!(field(&p, "spec.owner").action, FieldAction::Keep);
                }
                _ => {}
            }
        }
    }

    #[tokio::test]
    async fn seeding_twice_fails_naming_the_object() {
        let server = seeded().await;
        let err = seed(&server).await.unwrap_err().to_string();
        assert!(err.contains("Namespace demo"), "{err}");
        assert!(err.contains("assets/demo/00-namespace.yaml"), "{err}");
        assert!(err.contains("answered 200 (expected 404)"), "{err}");
    }
}
