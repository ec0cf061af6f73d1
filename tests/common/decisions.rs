//! The per-field decisions' history on one server (included with
//! `#[path = "common/decisions.rs"] mod decisions;` by `server_side.rs`,
//! which resolves the decisions with the core, and `tui_server_side.rs`,
//! which makes them with keys): kubectl applies a Deployment server-side,
//! scales it and sets its image by hand; a config that changes both
//! conflicts twice; the replicas forced and the image given way, the
//! object and its managedFields are what the decisions promised.

// Each test binary uses only some of these helpers.
#![allow(dead_code)]

use serde_json::Value;
use std::path::Path;

/// The image's row path, the second conflict.
pub const IMAGE: &str = "spec.template.spec.containers[name=web].image";

/// kubectl ARGS on one server: its stdout, the run asserted to succeed.
pub type Kubectl<'a> = &'a dyn Fn(&[&str]) -> String;

/// Deployment `web` in `ns`, `replicas` of `image`.
pub fn deployment(ns: &str, replicas: u32, image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: {ns}\n\
         spec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: web}}\n  template:\n\
         \x20   metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n\
         \x20     - name: web\n        image: {image}\n"
    )
}

/// The config the reviewer applies: replicas 3 (kubectl scale set 5),
/// nginx:1.28 (kubectl set image set a hotfix).
pub fn config(ns: &str) -> String {
    deployment(ns, 3, "nginx:1.28")
}

/// The history up to the conflicts: namespace `ns` created, the Deployment
/// (2 of nginx:1.27) applied server-side by kubectl, scaled to 5 and its
/// image set to nginx:hotfix (the manifest written in `dir`). Returns the
/// live Deployment.
pub fn drifted(kubectl: Kubectl, dir: &Path, ns: &str) -> Value {
    kubectl(&["create", "namespace", ns]);
    let v1 = dir.join(format!("{ns}-v1.yaml"));
    std::fs::write(&v1, deployment(ns, 2, "nginx:1.27")).unwrap();
    kubectl(&["apply", "--server-side", "-f", v1.to_str().unwrap()]);
    kubectl(&["scale", "deployment/web", "--replicas=5", "-n", ns]);
    kubectl(&[
        "set",
        "image",
        "deployment/web",
        "web=nginx:hotfix",
        "-n",
        ns,
    ]);
    get(kubectl, ns)
}

/// The Deployment as the server holds it, managedFields included.
pub fn get(kubectl: Kubectl, ns: &str) -> Value {
    let text = kubectl(&[
        "get",
        "deployment/web",
        "-n",
        ns,
        "-o",
        "json",
        "--show-managed-fields",
    ]);
    serde_json::from_str(&text).unwrap()
}

/// After the apply of the replicas forced and the image given way: the
/// replicas are the config's and kubectl's Apply manager's (the scale's
/// claim gone), the image stays kubectl-set's, value and ownership.
pub fn assert_decided(after: &Value) {
    assert_eq!(after["spec"]["replicas"], 3, "{after:#}");
    assert_eq!(
        after["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:hotfix",
        "{after:#}"
    );
    let entry = |manager: &str, op: &str, sub: Option<&str>| -> Value {
        after["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| {
                e["manager"] == manager && e["operation"] == op && e["subresource"].as_str() == sub
            })
            .map(|e| e["fieldsV1"].clone())
            .unwrap_or(Value::Null)
    };
    let web = |fields: &Value| -> Value {
        fields["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"web\"}"].clone()
    };
    let mine = entry("kubectl", "Apply", None);
    assert!(mine["f:spec"].get("f:replicas").is_some(), "{after:#}");
    assert!(web(&mine).get("f:image").is_none(), "{after:#}");
    let scale = entry("kubectl", "Update", Some("scale"));
    assert!(scale["f:spec"].get("f:replicas").is_none(), "{after:#}");
    let theirs = entry("kubectl-set", "Update", None);
    assert!(web(&theirs).get("f:image").is_some(), "{after:#}");
}
