//! The demo story against the real kubectl: the same history, run by
//! kubectl 1.32 on one embedded server and replayed by `demo::seed` on
//! another, must send the same writes and leave the same objects.
//!
//! Without kubectl the test skips, unless `KAPPLY_CI` is set: then it fails.

use kapply::server::{RecordedRequest, RunningServer, ServerOptions};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn kubectl_bin() -> Option<String> {
    let bin = std::env::var("KAPPLY_KUBECTL").unwrap_or_else(|_| "kubectl".to_string());
    let found = Command::new(&bin)
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Some(bin);
    }
    assert!(
        std::env::var_os("KAPPLY_CI").is_none(),
        "kubectl ({bin}) is required when KAPPLY_CI is set"
    );
    eprintln!("skipping: kubectl ({bin}) not found");
    None
}

/// The story as a person at a terminal runs it (see src/demo.rs).
fn run_story_with_kubectl(bin: &str, server: &RunningServer, dir: &Path) {
    let kubeconfig = dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let first = dir.join("first");
    std::fs::create_dir_all(&first).unwrap();
    for (name, text) in &kapply::demo::DEMO_FILES[..4] {
        std::fs::write(first.join(name), text).unwrap();
    }
    for (name, text) in kapply::demo::HISTORY_FILES {
        let target = if *name == "07-widget.yaml" {
            dir.join(name)
        } else {
            first.join(name)
        };
        std::fs::write(target, text).unwrap();
    }
    // `kubectl create configmap` sends protobuf, which the embedded server
    // does not read; `kubectl create -f` of the same object sends it as JSON.
    let flags = dir.join("feature-flags.json");
    std::fs::write(
        &flags,
        r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"feature-flags","creationTimestamp":null},"data":{"beta":"true","legacy-ui":"on"}}"#,
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(bin)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--cache-dir")
            .arg(dir.join("cache"))
            .args(args)
            .env_remove("KUBECONFIG")
            .env_remove("KUBECTL_APPLYSET")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let path = |p: &Path| p.to_string_lossy().into_owned();
    run(&["apply", "-f", &path(&first)]);
    run(&["apply", "-f", &path(&dir.join("07-widget.yaml"))]);
    run(&["create", "-n", "demo", "-f", &path(&flags)]);
    run(&[
        "label",
        "configmap",
        "feature-flags",
        "-n",
        "demo",
        "app=demo",
    ]);
    run(&[
        "scale",
        "deployment",
        "nginx-deployment",
        "-n",
        "demo",
        "--replicas=2",
    ]);
    run(&[
        "patch",
        "widget",
        "sprocket",
        "-n",
        "demo",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"owner":"team-a"}}"#,
    ]);
}

/// The writes, without what kubectl's User-Agent build string adds.
fn writes(requests: Vec<RecordedRequest>) -> Vec<RecordedRequest> {
    requests
        .into_iter()
        .filter(|r| r.method != "GET")
        .map(|mut r| {
            r.user_agent = r
                .user_agent
                .map(|ua| ua.split(' ').next().unwrap_or_default().to_string());
            r
        })
        .collect()
}

/// Every stored object, without what differs between two runs (uids,
/// times, resourceVersions).
fn objects(server: &RunningServer) -> Vec<Value> {
    let mut all: Vec<Value> = server
        .store()
        .all()
        .into_iter()
        .map(|mut o| {
            let md = o["metadata"].as_object_mut().unwrap();
            for k in ["uid", "creationTimestamp", "resourceVersion"] {
                md.remove(k);
            }
            for e in md
                .get_mut("managedFields")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                e.as_object_mut().unwrap().remove("time");
            }
            o
        })
        .collect();
    all.sort_by_key(|o| o.to_string());
    all
}

#[test]
fn seed_replays_what_kubectl_does() {
    let Some(bin) = kubectl_bin() else { return };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let by_kubectl = rt
        .block_on(kapply::server::start(ServerOptions::default()))
        .unwrap();
    let by_seed = rt
        .block_on(kapply::server::start(ServerOptions::default()))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    run_story_with_kubectl(&bin, &by_kubectl, dir.path());
    rt.block_on(kapply::demo::seed(&by_seed)).unwrap();

    let theirs = writes(by_kubectl.requests());
    let ours = writes(by_seed.requests());
    // Every POST and PATCH: path, query (field managers), content type,
    // User-Agent and body.
    assert_eq!(
        ours.len(),
        theirs.len(),
        "ours: {ours:#?}\ntheirs: {theirs:#?}"
    );
    for (o, t) in ours.iter().zip(&theirs) {
        assert_eq!(o, t);
    }
    assert_eq!(objects(&by_seed), objects(&by_kubectl));
}
