//! Whole public releases of common cluster software, as their users apply
//! them (included with `#[path = "common/releases.rs"] mod releases;`).
//! Each is fetched from the Go module proxy by `go mod download` (Go and
//! the proxy are on CI's machine, which builds kube-apiserver from it), at
//! a pinned version, never vendored into this repository. A download that
//! fails is a failure under `KAPPLY_CI`, a skip (saying so) elsewhere.

// Each test binary uses only some of these helpers.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};

/// One release: the manifest file `file` of the Go module `module`.
pub struct Release {
    pub name: &'static str,
    pub module: &'static str,
    pub file: &'static str,
    /// `-n` for the objects that name no namespace (Argo CD's install.yaml
    /// is applied with `-n argocd`); the others name their own.
    pub namespace: Option<&'static str>,
    /// Its documentation applies it server-side (CRDs too big for the
    /// last-applied annotation's 256 KiB).
    pub server_side: bool,
    /// Placeholders the release's own tooling fills in before applying
    /// (CoreDNS's `.base` template, as its Makefile and kube-up do with sed).
    pub fill: &'static [(&'static str, &'static str)],
}

/// Argo CD, ingress-nginx, cert-manager, prometheus-operator (the core of
/// kube-prometheus) and CoreDNS. Where the proxy refuses the project's own
/// module, the release file comes from a module that carries it unchanged:
/// - ingress-nginx tags no semver versions (`controller-v1.11.0`, which the
///   proxy refuses), so its commit's pseudo-version: `deploy.yaml` of
///   controller v1.11.0;
/// - cert-manager's module carries only Helm templates; Knative Serving
///   v0.42.2 carries cert-manager v1.14.4's release `cert-manager.yaml`
///   (`third_party/cert-manager-latest`, downloaded by its script);
/// - kube-prometheus is refused (403 for every version); its operator's
///   `bundle.yaml` (CRDs, RBAC, Deployment, Service) is served;
/// - CoreDNS's deployment repository is refused; Kubernetes' own add-on
///   manifest (`cluster/addons/dns/coredns`, of the release the real API
///   server is built from, so already in Go's cache) with its placeholders
///   filled as `transforms2sed.sed` does.
pub const RELEASES: &[Release] = &[
    Release {
        name: "argo-cd",
        module: "github.com/argoproj/argo-cd/v2@v2.13.0",
        file: "manifests/install.yaml",
        namespace: Some("argocd"),
        server_side: false,
        fill: &[],
    },
    Release {
        name: "ingress-nginx",
        module: "k8s.io/ingress-nginx@v0.0.0-20240708192948-52c50467d67d",
        file: "deploy/static/provider/cloud/deploy.yaml",
        namespace: None,
        server_side: false,
        fill: &[],
    },
    Release {
        name: "cert-manager",
        module: "knative.dev/serving@v0.42.2",
        file: "third_party/cert-manager-latest/cert-manager.yaml",
        namespace: None,
        server_side: false,
        fill: &[],
    },
    Release {
        name: "prometheus-operator",
        module: "github.com/prometheus-operator/prometheus-operator@v0.85.0",
        file: "bundle.yaml",
        namespace: None,
        server_side: true,
        fill: &[],
    },
    Release {
        name: "coredns",
        module: "k8s.io/kubernetes@v1.34.4",
        file: "cluster/addons/dns/coredns/coredns.yaml.base",
        namespace: None,
        server_side: false,
        fill: &[
            ("__DNS__DOMAIN__", "cluster.local"),
            ("__DNS__SERVER__", "10.96.0.10"),
            ("__DNS__MEMORY__LIMIT__", "170Mi"),
            (
                "__MACHINE_GENERATED_WARNING__",
                "Warning: This is a file generated from the base underscore template file: coredns.yaml.base",
            ),
        ],
    },
];

/// The release by name.
pub fn release(name: &str) -> &'static Release {
    RELEASES
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no release {name}"))
}

/// The directory of `MODULE@VERSION` from the Go module proxy (`go mod
/// download`). `None` (a skip, saying why) when Go or the download fails
/// outside `KAPPLY_CI`; under it, a failure.
pub fn go_module_dir(module: &str) -> Option<PathBuf> {
    let ci = std::env::var_os("KAPPLY_CI").is_some();
    let tmp = tempfile::tempdir().unwrap();
    let out = match std::process::Command::new("go")
        .args(["mod", "download", "-json", module])
        .current_dir(tmp.path())
        .env("GOFLAGS", "-mod=mod")
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            assert!(!ci, "go is required when KAPPLY_CI is set: {e}");
            eprintln!("skipping {module}: no go ({e})");
            return None;
        }
    };
    let info: Option<Value> = serde_json::from_slice(&out.stdout).ok();
    match info.as_ref().and_then(|i| i["Dir"].as_str()) {
        Some(dir) => Some(dir.into()),
        None => {
            let why = format!(
                "go mod download {module} failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!ci, "{why}");
            eprintln!("skipping: {why}");
            None
        }
    }
}

impl Release {
    /// The release's manifest as applied: the module's file itself, or
    /// (placeholders to fill) a filled copy written in `scratch`.
    pub fn manifest(&self, scratch: &Path) -> Option<PathBuf> {
        let path = go_module_dir(self.module)?.join(self.file);
        if self.fill.is_empty() {
            return Some(path);
        }
        let mut text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for (from, to) in self.fill {
            text = text.replace(from, to);
        }
        assert!(!text.contains("__"), "{}: a placeholder left", self.name);
        let out = scratch.join(format!("{}.yaml", self.name));
        std::fs::write(&out, text).unwrap();
        Some(out)
    }
}
