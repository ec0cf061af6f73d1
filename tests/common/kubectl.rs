// Shared by tests/merge.rs and tests/plan.rs (included with `#[path]`).
// Runs the real kubectl as the oracle for patch semantics, offline.

use serde_json::Value;
use std::process::Command;

/// `kubectl patch --local -f LIVE --type strategic|merge -p PATCH -o json`.
/// `None` when kubectl is missing (and KAPPLY_CI is unset): the caller skips.
pub fn kubectl_patch(live: &Value, patch: &Value, strategic: bool) -> Option<Value> {
    let found = Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("KAPPLY_CI").is_none(),
            "kubectl is required when KAPPLY_CI is set"
        );
        eprintln!("kubectl not found: skipping the kubectl check");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("live.json");
    std::fs::write(&file, serde_json::to_vec(live).unwrap()).unwrap();
    let out = Command::new("kubectl")
        .args(["patch", "--local", "-f"])
        .arg(&file)
        .args(["--type", if strategic { "strategic" } else { "merge" }])
        .arg("-p")
        .arg(serde_json::to_string(patch).unwrap())
        .args(["-o", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl patch failed: {}\npatch: {patch}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}
