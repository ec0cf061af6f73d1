//! The embedded API server with a kubeconfig for it in a temporary
//! directory, shared by the test binaries that run kapply or kubectl
//! against it (included with `#[path = "common/server.rs"] mod server;`).

// Each test binary uses only some of these helpers.
#![allow(dead_code)]

use kapply::server::{RecordedRequest, RunningServer, ServerOptions};
use serde_json::Value;
use std::future::Future;
use std::path::{Path, PathBuf};

/// Starts the server on the current runtime and writes its kubeconfig to
/// `kubeconfig` in a new temporary directory.
pub async fn start_with_kubeconfig() -> (RunningServer, tempfile::TempDir, PathBuf) {
    let server = kapply::server::start(ServerOptions::default())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    (server, dir, kubeconfig)
}

/// The server on a runtime of its own (for tests that are not async), a
/// scratch directory and the kubeconfig in it.
pub struct Cluster {
    // Dropped before the runtime that serves it.
    pub server: RunningServer,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    rt: tokio::runtime::Runtime,
}

impl Cluster {
    pub fn start() -> Cluster {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (server, dir, kubeconfig) = rt.block_on(start_with_kubeconfig());
        Cluster {
            server,
            dir,
            kubeconfig,
            rt,
        }
    }

    /// Runs `f` on the server's runtime.
    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// `rel` in the scratch directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes `rel` in the scratch directory (and its parent directories):
    /// its path, as a kubectl argument.
    pub fn write(&self, rel: &str, text: &str) -> String {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }

    pub fn remove(&self, rel: &str) {
        std::fs::remove_file(self.path(rel)).unwrap();
    }

    /// An object straight from the store (no request recorded).
    pub fn get(
        &self,
        api_version: &str,
        kind: &str,
        ns: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        self.server.store().get(api_version, kind, ns, name)
    }

    /// Requests that could have changed something.
    pub fn writes(&self) -> Vec<RecordedRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| matches!(r.method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE"))
            .collect()
    }
}

/// A port nobody listens on: bound, noted, closed.
pub fn unused_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Writes a kubeconfig at `path` whose one context names the server at
/// `url`, with no credentials.
pub fn write_kubeconfig_for(path: &Path, url: &str) {
    std::fs::write(
        path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {url}\n\
             contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n\
             current-context: c\nusers:\n- name: u\n  user: {{}}\n"
        ),
    )
    .unwrap();
}

/// A CustomResourceDefinition of kind `kind` in `group` with `scope`
/// (`Cluster` or `Namespaced`), whose objects keep any field.
pub fn crd(group: &str, kind: &str, scope: &str) -> String {
    let singular = kind.to_lowercase();
    format!(
        "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {singular}s.{group}
spec:
  group: {group}
  scope: {scope}
  names:
    plural: {singular}s
    singular: {singular}
    kind: {kind}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"
    )
}
