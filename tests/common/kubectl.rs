//! The real kubectl, shared by the test binaries that drive it (included
//! with `#[path = "common/kubectl.rs"] mod kubectl;`).
//!
//! Tests that need kubectl skip their kubectl part when it is absent, unless
//! `KAPPLY_CI` is set: then they fail (see `kubectl`).

// Each test binary uses only some of these helpers.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The kubectl binary (`$KAPPLY_KUBECTL`, else `kubectl`), or `None` when it
/// is absent: the caller skips its kubectl part. Panics when it is absent and
/// `KAPPLY_CI` is set, so that CI never passes by skipping.
pub fn kubectl() -> Option<String> {
    // Looked up once per test binary: the property tests call this per case.
    static FOUND: OnceLock<(String, bool)> = OnceLock::new();
    let (bin, found) = FOUND.get_or_init(|| {
        let bin = std::env::var("KAPPLY_KUBECTL").unwrap_or_else(|_| "kubectl".to_string());
        let found = Command::new(&bin)
            .args(["version", "--client"])
            .output()
            .is_ok_and(|o| o.status.success());
        (bin, found)
    });
    if *found {
        return Some(bin.clone());
    }
    assert!(
        std::env::var_os("KAPPLY_CI").is_none(),
        "kubectl ({bin}) is required when KAPPLY_CI is set"
    );
    eprintln!("skipping the kubectl part: kubectl ({bin}) not found");
    None
}

/// kubectl talking to the cluster of one kubeconfig, with nothing from the
/// environment (no `KUBECONFIG`, no `KUBECTL_APPLYSET`, no shared cache).
pub struct Kubectl {
    pub bin: String,
    pub kubeconfig: PathBuf,
}

impl Kubectl {
    /// `None` when kubectl is absent (a failure under `KAPPLY_CI`).
    pub fn find(kubeconfig: &Path) -> Option<Kubectl> {
        Some(Kubectl::new(kubectl()?, kubeconfig))
    }

    pub fn new(bin: String, kubeconfig: &Path) -> Kubectl {
        Kubectl {
            bin,
            kubeconfig: kubeconfig.to_path_buf(),
        }
    }

    /// `kubectl --kubeconfig K --cache-dir D/cache ARGS`, run in D, the
    /// kubeconfig's directory (relative paths in ARGS are relative to it).
    pub fn command(&self, args: &[&str]) -> Command {
        let dir = self.kubeconfig.parent().unwrap_or(Path::new("."));
        let mut cmd = Command::new(&self.bin);
        cmd.current_dir(dir)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(dir.join("cache"))
            .args(args)
            .env_remove("KUBECONFIG")
            .env_remove("KUBECTL_APPLYSET");
        cmd
    }

    /// `kubectl ARGS` with the extra environment `env`.
    pub fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.command(args)
            .envs(env.iter().copied())
            .output()
            .expect("run kubectl")
    }

    /// `kubectl ARGS`, which must succeed: its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_env(args, &[])
    }

    /// `kubectl ARGS` with the extra environment `env`, which must succeed:
    /// its stdout.
    pub fn ok_env(&self, args: &[&str], env: &[(&str, &str)]) -> String {
        let out = self.run(args, env);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// `kubectl patch --local -f FILE -o json ARGS`, offline: the object kubectl
/// prints, or its stderr when it fails.
pub fn patch_file(bin: &str, file: &Path, args: &[&str]) -> Result<Value, String> {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(bin)
        // Never talk to whatever cluster the developer has configured.
        .env("KUBECONFIG", dir.path().join("no-kubeconfig"))
        .args(["patch", "--local", "-o", "json", "-f"])
        .arg(file)
        .args(args)
        .output()
        .expect("run kubectl");
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).expect("kubectl prints JSON"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// `patch_file` on `live`, written to a temporary file.
pub fn patch_object(bin: &str, live: &Value, args: &[&str]) -> Result<Value, String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("live.json");
    std::fs::write(&file, serde_json::to_vec(live).unwrap()).unwrap();
    patch_file(bin, &file, args)
}

/// `kubectl patch --local -f LIVE --type strategic|merge -p PATCH -o json`,
/// which must succeed. `None` when kubectl is absent: the caller skips.
pub fn kubectl_patch(live: &Value, patch: &Value, strategic: bool) -> Option<Value> {
    let bin = kubectl()?;
    let kind = if strategic { "strategic" } else { "merge" };
    let result = patch_object(&bin, live, &["--type", kind, "-p", &patch.to_string()]);
    Some(result.unwrap_or_else(|e| panic!("kubectl patch failed: {e}\npatch: {patch}")))
}

/// The object kubectl reads from `file` (an empty merge patch, offline), or
/// its stderr when it cannot read it.
pub fn reads(bin: &str, file: &Path) -> Result<Value, String> {
    patch_file(bin, file, &["--type", "merge", "-p", "{}"])
}

/// The last-applied configuration kubectl recorded in the annotation of
/// `obj`, parsed; `None` when there is none.
pub fn last_applied(obj: &Value) -> Option<Value> {
    obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .map(|s| serde_json::from_str(s).unwrap())
}
