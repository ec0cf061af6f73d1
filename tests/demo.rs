//! The demo story against the real kubectl: the same history, run by
//! kubectl 1.32 on one embedded server and replayed by `demo::seed` on
//! another, must send the same writes and leave the same objects.
//!
//! Without kubectl the test skips, unless `KAPPLY_CI` is set: then it fails.

#[path = "common/kubectl.rs"]
mod kubectl;
#[path = "common/server.rs"]
mod server;

use kapply::server::{RecordedRequest, RunningServer, ServerOptions};
use kubectl::Kubectl;
use serde_json::Value;
use server::Cluster;
use std::path::Path;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The story as a person at a terminal runs it (see src/demo.rs).
fn run_story_with_kubectl(kubectl: &Kubectl, dir: &Path) {
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
    let path = |p: &Path| p.to_string_lossy().into_owned();
    kubectl.ok(&["apply", "-f", &path(&first)]);
    kubectl.ok(&["apply", "-f", &path(&dir.join("07-widget.yaml"))]);
    kubectl.ok(&[
        "create",
        "configmap",
        "feature-flags",
        "-n",
        "demo",
        "--from-literal=beta=true",
        "--from-literal=legacy-ui=on",
    ]);
    kubectl.ok(&[
        "label",
        "configmap",
        "feature-flags",
        "-n",
        "demo",
        "app=demo",
    ]);
    kubectl.ok(&[
        "scale",
        "deployment",
        "nginx-deployment",
        "-n",
        "demo",
        "--replicas=2",
    ]);
    kubectl.ok(&[
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
    // kubectl edit through an "editor" that changes one value in place.
    kubectl.ok_env(
        &["edit", "configmap", "settings", "-n", "demo"],
        &[(
            "KUBE_EDITOR",
            "sed -i -e 's/^  LOG_LEVEL: info$/  LOG_LEVEL: debug/'",
        )],
    );
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
            if let Some(status) = o.get_mut("status") {
                drop_times(status);
            }
            o
        })
        .collect();
    all.sort_by_key(|o| o.to_string());
    all
}

/// Condition times in a simulated status are the time of the write.
fn drop_times(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| !matches!(k.as_str(), "lastTransitionTime" | "lastUpdateTime"));
            m.values_mut().for_each(drop_times);
        }
        Value::Array(a) => a.iter_mut().for_each(drop_times),
        _ => {}
    }
}

#[test]
fn seed_replays_what_kubectl_does() {
    let Some(bin) = kubectl::kubectl() else {
        return;
    };
    // Both servers on the runtime of the one kubectl talks to.
    let c = Cluster::start();
    let by_seed = c
        .block_on(kapply::server::start(ServerOptions::default()))
        .unwrap();
    run_story_with_kubectl(&Kubectl::new(bin, &c.kubeconfig), c.dir.path());
    c.block_on(kapply::demo::seed(&by_seed)).unwrap();
    let by_kubectl = &c.server;

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
        if t.content_type.as_deref() == Some(PROTOBUF) {
            // `kubectl create configmap` writes protobuf; the seed sends the
            // same object as JSON (the stored objects are compared below).
            assert_eq!(o.content_type.as_deref(), Some("application/json"));
            let strip = |r: &RecordedRequest| RecordedRequest {
                content_type: None,
                body: None,
                ..r.clone()
            };
            assert_eq!(strip(o), strip(t));
        } else {
            assert_eq!(o, t);
        }
    }
    let (ours, theirs) = (objects(&by_seed), objects(by_kubectl));
    assert_eq!(ours.len(), theirs.len());
    for (o, t) in ours.iter().zip(&theirs) {
        assert_eq!(o, t, "\nours: {o:#}\ntheirs: {t:#}");
    }
}
