//! Manifests from where users keep them: `-f http(s)://...` (against a
//! local HTTP server: no network here) and `-k DIR` (real kubectl's
//! kustomize on local bases and overlays), through the real binary against
//! the embedded API server.
//!
//! Tests that need kubectl skip that part without it, unless `KAPPLY_CI` is
//! set: then they fail.

#[path = "common/kubectl.rs"]
mod kubectl;
#[path = "common/out.rs"]
mod out;
#[path = "common/server.rs"]
mod server;

use kubectl::Kubectl;
use out::{Out, run};
use serde_json::Value;
use server::Cluster;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const KAPPLY: &str = env!("CARGO_BIN_EXE_kapply");

/// `kapply ARGS --kubeconfig K` in the cluster's scratch directory.
fn kapply(c: &Cluster, args: &[&str]) -> Out {
    kapply_env(c, args, &[])
}

fn kapply_env(c: &Cluster, args: &[&str], env: &[(&str, &str)]) -> Out {
    run(Command::new(KAPPLY)
        .current_dir(c.dir.path())
        .args(args)
        .arg("--kubeconfig")
        .arg(&c.kubeconfig)
        .env_remove("KUBECONFIG")
        .env_remove("NO_COLOR")
        .envs(env.iter().copied()))
}

// ---------------------------------------------------------------------------
// A local HTTP server

const DEPLOYMENT: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: from-url
spec:
  selector:
    matchLabels:
      app: from-url
  template:
    metadata:
      labels:
        app: from-url
    spec:
      containers:
      - name: web
        image: nginx:1.27
";

/// An HTML page, as a wrong link serves it: not a manifest.
const PAGE: &str =
    "<!DOCTYPE html>\n<html>\n<body>\n<p>Moved: see the new docs</p>\n</body>\n</html>\n";

/// Serves, until the test ends: `/deploy.yaml` (200), `/moved.yaml` (302
/// to it), `/missing.yaml` (404), `/gone.yaml` (301 to that 404),
/// `/page.html` (200, HTML) and `/slow.yaml` (answers after 10 s).
fn http_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream));
        }
    });
    base
}

fn serve(mut stream: TcpStream) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    // The headers, up to the blank line.
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line == "\r\n" => break,
            Ok(_) => {}
        }
    }
    let path = request_line.split(' ').nth(1).unwrap_or("/").to_string();
    let (status, extra, body) = match path.as_str() {
        "/deploy.yaml" => ("200 OK", String::new(), DEPLOYMENT),
        "/moved.yaml" => ("302 Found", "Location: /deploy.yaml\r\n".into(), ""),
        "/gone.yaml" => (
            "301 Moved Permanently",
            "Location: missing.yaml\r\n".into(),
            "",
        ),
        "/page.html" => ("200 OK", String::new(), PAGE),
        "/slow.yaml" => {
            std::thread::sleep(Duration::from_secs(10));
            ("200 OK", String::new(), DEPLOYMENT)
        }
        _ => ("404 Not Found", String::new(), "404 page not found\n"),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

// ---------------------------------------------------------------------------
// URLs

#[test]
fn url_manifests_diff_apply_and_kubectl_agrees() {
    let c = Cluster::start();
    let base = http_server();
    let url = format!("{base}/deploy.yaml");

    let diff = kapply(&c, &["diff", "-f", &url]);
    assert_eq!(diff.code, Some(1), "{diff:?}");
    // The source is URL:line.
    diff.assert_stdout(&format!("Deployment default/from-url (create)  {url}:1"));

    // A redirect is followed; the source stays the URL given.
    let moved = format!("{base}/moved.yaml");
    let applied = kapply(&c, &["apply", "--yes", "-f", &moved]);
    assert_eq!(applied.code, Some(0), "{applied:?}");
    applied.assert_stdout("Deployment default/from-url created");
    assert!(
        c.get("apps/v1", "Deployment", Some("default"), "from-url")
            .is_some()
    );
    let plan = kapply(&c, &["plan", "-f", &moved]);
    let plan: Value = serde_json::from_str(&plan.stdout).unwrap();
    assert_eq!(plan["objects"][0]["action"], "unchanged", "{plan}");
    assert_eq!(plan["objects"][0]["source"], format!("{moved}:1"));

    // kubectl, reading the same URL, sees nothing to change.
    if let Some(k) = Kubectl::find(&c.kubeconfig) {
        let d = run(&mut k.command(&["diff", "-f", &url]));
        assert_eq!(d.code, Some(0), "kubectl diff after kapply apply: {d:?}");
    }
}

#[test]
fn url_errors_name_the_url_and_the_status() {
    let c = Cluster::start();
    let base = http_server();
    c.write(
        "local.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\n",
    );

    // 404: the URL and the status; the other manifests still load.
    let missing = format!("{base}/missing.yaml");
    let out = kapply(&c, &["diff", "-f", &missing, "-f", "local.yaml"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    out.assert_stdout(&format!("error: {missing}: HTTP 404 Not Found"));
    out.assert_stdout("ConfigMap default/local (create)  local.yaml:1");

    // A redirect to a 404 says where it was sent.
    let gone = format!("{base}/gone.yaml");
    let out = kapply(&c, &["diff", "-f", &gone]);
    assert_eq!(out.code, Some(2), "{out:?}");
    out.assert_stdout(&format!(
        "error: {gone}: HTTP 404 Not Found (redirected to {missing})"
    ));

    // Not YAML: the parse error at URL:line, and nothing from that body.
    let page = format!("{base}/page.html");
    let out = kapply(&c, &["diff", "-f", &page]);
    assert_eq!(out.code, Some(2), "{out:?}");
    out.assert_stdout(&format!("{page}:"));
    assert!(!out.stdout.contains("(create)"), "{out:?}");

    // Nobody listening: the connection error, at once.
    let dead = format!("http://127.0.0.1:{}/x.yaml", server::unused_port());
    let start = Instant::now();
    let out = kapply(&c, &["diff", "-f", &dead]);
    assert_eq!(out.code, Some(2), "{out:?}");
    out.assert_stdout(&format!("error: {dead}: cannot fetch"));
    out.assert_stdout("connection refused (nothing listens at that address)");
    assert!(start.elapsed() < Duration::from_secs(10));

    // apply writes nothing when a URL cannot be read, as kubectl (and as
    // for a missing file).
    let out = kapply(&c, &["apply", "--yes", "-f", &missing, "-f", "local.yaml"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stderr(&format!(
        "nothing was written: {missing}: HTTP 404 Not Found"
    ));
    assert!(c.get("v1", "ConfigMap", Some("default"), "local").is_none());
}

#[test]
fn url_fetch_is_bounded_by_its_timeout() {
    let base = http_server();
    let slow = format!("{base}/slow.yaml");
    let rt = tokio::runtime::Runtime::new().unwrap();

    let start = Instant::now();
    let err = rt
        .block_on(kapply::inputs::fetch_url(&slow, Duration::from_millis(300)))
        .unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(err, "no complete answer within 300ms (timeout)");

    // Through the loader: a load error naming the URL; the rest loads.
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("cm.yaml");
    std::fs::write(
        &local,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\n",
    )
    .unwrap();
    let inputs = kapply::inputs::Inputs {
        load: kapply::manifest::LoadOptions {
            paths: vec![PathBuf::from(&slow), local],
            ..Default::default()
        },
        kustomize: None,
        url_timeout: Duration::from_millis(300),
    };
    let start = Instant::now();
    let loaded = rt.block_on(kapply::inputs::load(&inputs)).unwrap();
    assert!(start.elapsed() < Duration::from_secs(3));
    assert_eq!(loaded.manifests.len(), 1);
    assert_eq!(loaded.manifests[0].id.name, "local");
    assert_eq!(
        loaded.errors[0].to_string(),
        format!("{slow}: no complete answer within 300ms (timeout)")
    );
    // The same URL served at once loads, with URL:line sources per field.
    let inputs = kapply::inputs::Inputs {
        load: kapply::manifest::LoadOptions {
            paths: vec![PathBuf::from(format!("{base}/deploy.yaml"))],
            ..Default::default()
        },
        ..inputs
    };
    let loaded = rt.block_on(kapply::inputs::load(&inputs)).unwrap();
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let m = &loaded.manifests[0];
    assert_eq!(m.source.to_string(), format!("{base}/deploy.yaml:1"));
    assert_eq!(
        m.lines.get("spec.template.spec.containers[name=web].image"),
        Some(&16)
    );
}

// ---------------------------------------------------------------------------
// Kustomize

/// A base (Deployment, Service, generated ConfigMap) and a prod overlay
/// (name prefix, a strategic patch, its own generator literal).
fn write_kustomizations(c: &Cluster, mode: &str) {
    c.write(
        "base/kustomization.yaml",
        "labels:\n- pairs:\n    app: shop\n  includeSelectors: true\n\
         resources:\n- deployment.yaml\n- service.yaml\n\
         configMapGenerator:\n- name: settings\n  literals:\n  - mode=base\n",
    );
    c.write(
        "base/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  \
         template:\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n        \
         envFrom:\n        - configMapRef:\n            name: settings\n",
    );
    c.write(
        "base/service.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n",
    );
    c.write(
        "overlays/prod/kustomization.yaml",
        &format!(
            "namePrefix: prod-\nresources:\n- ../../base\n\
             patches:\n- path: replicas.yaml\n\
             configMapGenerator:\n- name: settings\n  behavior: merge\n  literals:\n  - mode={mode}\n"
        ),
    );
    c.write(
        "overlays/prod/replicas.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n",
    );
}

/// The generated ConfigMap's name, as kubectl's kustomize builds it.
fn settings_name(k: &Kubectl, c: &Cluster) -> String {
    let out = k.ok(&["kustomize", &c.path("overlays/prod").to_string_lossy()]);
    out.lines()
        .find_map(|l| l.trim().strip_prefix("name: prod-settings-"))
        .map(|h| format!("prod-settings-{h}"))
        .unwrap_or_else(|| panic!("no generated ConfigMap in {out}"))
}

#[test]
fn kustomize_overlay_diff_apply_and_prune_old_generated_configmaps() {
    let c = Cluster::start();
    let Some(k) = Kubectl::find(&c.kubeconfig) else {
        return;
    };
    write_kustomizations(&c, "prod");
    let first = settings_name(&k, &c);

    let diff = kapply(&c, &["diff", "-k", "overlays/prod"]);
    assert_eq!(diff.code, Some(1), "{diff:?}");
    diff.assert_stderr("kustomize: running `kubectl kustomize overlays/prod`");
    // Name prefix and hash suffix as kustomize made them; the source names
    // the kustomization and the document.
    diff.assert_stdout(&format!(
        "ConfigMap default/{first} (create)  overlays/prod (kustomize document 1):1"
    ));
    diff.assert_stdout(
        "Deployment default/prod-web (create)  overlays/prod (kustomize document 3):1",
    );
    diff.assert_stdout("Service default/prod-web (create)  overlays/prod (kustomize document 2):1");

    let out = kapply(
        &c,
        &[
            "apply",
            "--yes",
            "-k",
            "overlays/prod",
            "--prune",
            "-l",
            "app=shop",
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    out.assert_stdout(&format!("ConfigMap default/{first} created"));
    let dep = c
        .get("apps/v1", "Deployment", Some("default"), "prod-web")
        .unwrap();
    // The patch and the generated name's reference, as kustomize rewrote them.
    assert_eq!(dep["spec"]["replicas"], 3);
    assert_eq!(
        dep["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]["configMapRef"]["name"],
        first.as_str()
    );
    // kubectl apply -k sees nothing to do after kapply's apply.
    let d = run(&mut k.command(&["diff", "-k", "overlays/prod"]));
    assert_eq!(
        d.code,
        Some(0),
        "kubectl diff -k after kapply apply -k: {d:?}"
    );

    // A new generator value: a new hash, the old ConfigMap a prune candidate.
    write_kustomizations(&c, "prod-2");
    let second = settings_name(&k, &c);
    assert_ne!(first, second);
    let plan = kapply(
        &c,
        &["plan", "-k", "overlays/prod", "--prune", "-l", "app=shop"],
    );
    assert_eq!(plan.code, Some(0), "{plan:?}");
    let plan: Value = serde_json::from_str(&plan.stdout).unwrap();
    let action = |name: &str| {
        plan["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name && o["kind"] == "ConfigMap")
            .map(|o| o["action"].as_str().unwrap().to_string())
    };
    assert_eq!(action(&first).as_deref(), Some("prune"), "{plan}");
    assert_eq!(action(&second).as_deref(), Some("create"), "{plan}");

    let out = kapply(
        &c,
        &[
            "apply",
            "--yes",
            "-k",
            "overlays/prod",
            "--prune",
            "-l",
            "app=shop",
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    out.assert_stdout(&format!("ConfigMap default/{second} created"));
    out.assert_stdout(&format!("ConfigMap default/{first} pruned"));
    assert!(c.get("v1", "ConfigMap", Some("default"), &first).is_none());
    assert!(c.get("v1", "ConfigMap", Some("default"), &second).is_some());
    let d = run(&mut k.command(&["diff", "-k", "overlays/prod"]));
    assert_eq!(d.code, Some(0), "kubectl diff -k after the prune: {d:?}");

    // delete -k removes what the kustomization names.
    let out = kapply(&c, &["delete", "--yes", "-k", "overlays/prod"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        c.get("apps/v1", "Deployment", Some("default"), "prod-web")
            .is_none()
    );
}

#[test]
fn kustomize_errors_name_the_tool_or_show_kustomizes_message() {
    let c = Cluster::start();
    c.write(
        "broken/kustomization.yaml",
        "resources:\n- not-there.yaml\n",
    );
    c.write("ok/kustomization.yaml", "resources:\n- cm.yaml\n");
    c.write(
        "ok/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k\n",
    );

    // -f and -k together: refused, as kubectl refuses it.
    let out = kapply(&c, &["diff", "-k", "ok", "-f", "ok/cm.yaml"]);
    assert_eq!(out.code, Some(2), "{out:?}");

    // Neither kubectl nor kustomize on the PATH.
    let empty = c.path("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let out = kapply_env(
        &c,
        &["diff", "-k", "ok"],
        &[("PATH", &empty.to_string_lossy())],
    );
    assert_eq!(out.code, Some(2), "{out:?}");
    out.assert_stderr(
        "neither `kubectl` (kubectl kustomize) nor `kustomize` (kustomize build) is on the PATH",
    );

    let Some(bin) = kubectl::kubectl() else {
        return;
    };
    // kustomize's own error when the build fails.
    let out = kapply(&c, &["diff", "-k", "broken"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    out.assert_stderr("`kubectl kustomize broken` failed");
    out.assert_stderr("not-there.yaml");
    assert!(!out.stderr.contains("run.go"), "{out:?}");

    // Only a standalone `kustomize` on the PATH: `kustomize build` runs (a
    // stand-in that hands the build to kubectl's kustomize).
    let kubectl_path = which(&bin).expect("kubectl on the PATH");
    let shim_dir = c.path("kustomize-bin");
    std::fs::create_dir_all(&shim_dir).unwrap();
    let shim = shim_dir.join("kustomize");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\n[ \"$1\" = build ] || exit 3\nexec '{}' kustomize \"$2\"\n",
            kubectl_path.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = kapply_env(
        &c,
        &["diff", "-k", "ok"],
        &[("PATH", &shim_dir.to_string_lossy())],
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    out.assert_stderr("kustomize: running `kustomize build ok`");
    out.assert_stdout("ConfigMap default/k (create)  ok (kustomize document 1):1");
}

/// `name` as the shell finds it on the PATH (or an absolute path as is).
fn which(name: &str) -> Option<PathBuf> {
    let p = Path::new(name);
    if p.is_absolute() {
        return Some(p.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The TUI's engine reads `-k` and URLs on every load (the `r` reload
/// rebuilds the kustomization and fetches the URL again).
#[test]
fn the_tui_engine_loads_kustomizations_and_urls_on_every_reload() {
    use kapply::cluster::{ClusterOptions, KubeEngine, PruneOptions, Session};
    use kapply::ops::Engine;
    let c = Cluster::start();
    if kubectl::kubectl().is_none() {
        return;
    }
    write_kustomizations(&c, "prod");
    let session = c
        .block_on(Session::connect(&ClusterOptions {
            kubeconfig: Some(c.kubeconfig.clone()),
            ..Default::default()
        }))
        .unwrap();
    let inputs = kapply::inputs::Inputs {
        kustomize: Some(c.path("overlays/prod")),
        ..kapply::manifest::LoadOptions::default().into()
    };
    let engine = KubeEngine::new(session.clone(), inputs, PruneOptions::default());
    let names = |plan: &kapply::plan::Plan| {
        let mut v: Vec<String> = plan
            .objects
            .iter()
            .map(|o| format!("{} {} {:?}", o.kind, o.name, o.action))
            .collect();
        v.sort();
        v
    };
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let plan = c.block_on(engine.load(tx.clone())).unwrap();
    assert_eq!(plan.objects.len(), 3, "{:?}", names(&plan));
    assert!(
        plan.objects.iter().all(|o| o
            .source
            .as_deref()
            .is_some_and(|s| s.contains("overlays/prod (kustomize document"))),
        "{:?}",
        plan.objects.iter().map(|o| &o.source).collect::<Vec<_>>()
    );
    assert!(names(&plan).contains(&"Deployment prod-web Create".to_string()));
    // The overlay changes: the next load sees it.
    c.write(
        "overlays/prod/replicas.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 5\n",
    );
    let plan = c.block_on(engine.load(tx.clone())).unwrap();
    let dep = plan
        .objects
        .iter()
        .find(|o| o.kind == "Deployment")
        .unwrap();
    assert_eq!(dep.config.as_ref().unwrap()["spec"]["replicas"], 5);

    // A URL through the same engine.
    let base = http_server();
    let url = format!("{base}/deploy.yaml");
    let engine = KubeEngine::new(
        session,
        kapply::manifest::LoadOptions {
            paths: vec![PathBuf::from(&url)],
            ..Default::default()
        },
        PruneOptions::default(),
    );
    let plan = c.block_on(engine.load(tx)).unwrap();
    assert_eq!(plan.objects.len(), 1);
    assert_eq!(
        plan.objects[0].source.as_deref(),
        Some(&*format!("{url}:1"))
    );
}
