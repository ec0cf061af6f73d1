//! Shell and kubectl habits: `kapply completion SHELL`, `kubectl kapply ...`
//! through the real kubectl's plugin lookup on the PATH, and a kubeconfig
//! whose user authenticates with an exec credential plugin (as EKS, GKE and
//! AKS do), which must run once per run, not once per request.
//!
//! Tests that need kubectl skip that part without it, unless `KAPPLY_CI` is
//! set: then they fail.

#[path = "common/kubectl.rs"]
mod kubectl;
#[path = "common/out.rs"]
mod out;
#[path = "common/server.rs"]
mod server;

use out::Out;
use server::Cluster;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

const KAPPLY: &str = env!("CARGO_BIN_EXE_kapply");
const PLUGIN: &str = env!("CARGO_BIN_EXE_kubectl-kapply");

/// Runs `cmd` without the ambient kubeconfig or NO_COLOR.
fn run(cmd: &mut Command) -> Out {
    out::run(cmd.env_remove("KUBECONFIG").env_remove("NO_COLOR"))
}

const CONFIGMAPS: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: one
  labels:
    app: shop
data:
  a: \"1\"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: two
  labels:
    app: shop
---
apiVersion: v1
kind: Service
metadata:
  name: web
  labels:
    app: shop
spec:
  ports:
  - port: 80
";

// ---------------------------------------------------------------------------
// Completion

#[test]
fn completion_scripts_for_every_shell() {
    for (shell, marker) in [
        ("bash", "_kapply()"),
        ("zsh", "#compdef kapply"),
        ("fish", "complete -c kapply"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let out = run(Command::new(KAPPLY).args(["completion", shell]));
        assert_eq!(out.code, Some(0), "{shell}: {out:?}");
        assert!(
            out.stdout.contains(marker),
            "{shell}: {marker:?} not in the script"
        );
        // Subcommands and the manifest flags are completed.
        for word in ["diff", "apply", "kustomize", "filename"] {
            assert!(out.stdout.contains(word), "{shell}: {word:?} not completed");
        }
    }
    let out = run(Command::new(KAPPLY).args(["completion", "tcsh"]));
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("possible values"), "{out:?}");

    // bash loads the script and registers the completion; completing
    // `kapply di` offers `diff`.
    let script =
        std::env::temp_dir().join(format!("kapply-completion-{}.bash", std::process::id()));
    std::fs::write(
        &script,
        run(Command::new(KAPPLY).args(["completion", "bash"])).stdout,
    )
    .unwrap();
    let check = format!(
        "source '{}' && complete -p kapply && COMP_WORDS=(kapply di) COMP_CWORD=1 && \
         _kapply kapply di kapply && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let out = run(Command::new("bash").args(["-c", &check]));
    std::fs::remove_file(&script).ok();
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.contains("-F _kapply kapply"), "{out:?}");
    assert!(out.stdout.lines().any(|l| l == "diff"), "{out:?}");
}

// ---------------------------------------------------------------------------
// kubectl plugin

#[test]
fn kubectl_runs_kapply_as_a_plugin_found_on_the_path() {
    let c = Cluster::start();
    let Some(bin) = kubectl::kubectl() else {
        return;
    };
    let plugins = c.path("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::os::unix::fs::symlink(PLUGIN, plugins.join("kubectl-kapply")).unwrap();
    let path = std::env::join_paths(
        std::iter::once(plugins.clone()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap();
    let kubectl = |args: &[&str]| {
        run(Command::new(&bin)
            .current_dir(c.dir.path())
            .args(args)
            .env("PATH", &path))
    };

    let list = kubectl(&["plugin", "list"]);
    assert!(list.stdout.contains("kubectl-kapply"), "{list:?}");

    let help = kubectl(&["kapply", "--help"]);
    assert_eq!(help.code, Some(0), "{help:?}");
    assert!(
        help.stdout
            .contains("Usage: kubectl kapply [OPTIONS] [PATH]..."),
        "{help:?}"
    );
    let version = kubectl(&["kapply", "--version"]);
    assert_eq!(
        version.stdout.trim(),
        format!("kapply {}", env!("CARGO_PKG_VERSION"))
    );

    c.write("m/all.yaml", CONFIGMAPS);
    let kc = c.kubeconfig.to_string_lossy().into_owned();
    let diff = kubectl(&["kapply", "diff", "--kubeconfig", &kc, "-f", "m"]);
    assert_eq!(diff.code, Some(1), "{diff:?}");
    assert!(
        diff.stdout
            .contains("ConfigMap default/one (create)  m/all.yaml:1"),
        "{diff:?}"
    );
    let apply = kubectl(&["kapply", "apply", "--yes", "--kubeconfig", &kc, "-f", "m"]);
    assert_eq!(apply.code, Some(0), "{apply:?}");
    assert!(c.get("v1", "ConfigMap", Some("default"), "one").is_some());
    // kubectl itself agrees nothing is left to apply.
    let d = kubectl(&["diff", "--kubeconfig", &kc, "-f", "m"]);
    assert_eq!(d.code, Some(0), "{d:?}");
    // Errors say which program: the plugin's usage line.
    let bad = kubectl(&["kapply", "diff", "--no-such-flag"]);
    assert_eq!(bad.code, Some(2), "{bad:?}");
    assert!(bad.stderr.contains("Usage: kubectl kapply diff"), "{bad:?}");
}

// ---------------------------------------------------------------------------
// Exec credential plugins

/// A TCP proxy in front of `upstream` that keeps every byte clients send,
/// to see the requests and their Authorization headers (the embedded server
/// records none).
fn sniffing_proxy(upstream: std::net::SocketAddr) -> (String, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keep = seen.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(upstream) else {
                continue;
            };
            let (mut c_read, mut s_write) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            let (mut s_read, mut c_write) = (server, client);
            let keep = keep.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 16384];
                while let Ok(n) = c_read.read(&mut buf) {
                    if n == 0 || s_write.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    keep.lock().unwrap().extend_from_slice(&buf[..n]);
                }
                let _ = s_write.shutdown(std::net::Shutdown::Write);
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut s_read, &mut c_write);
                let _ = c_write.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    (url, seen)
}

/// A kubeconfig for `server_url` whose user runs `plugin` (exec, v1).
fn exec_kubeconfig(path: &Path, server_url: &str, plugin: &Path) {
    std::fs::write(
        path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server_url}\n\
             contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n    namespace: default\n\
             current-context: c\nusers:\n- name: u\n  user:\n    exec:\n      \
             apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      \
             args: [\"--cluster\", \"c\"]\n      interactiveMode: Never\n",
            plugin.display()
        ),
    )
    .unwrap();
}

#[test]
fn exec_credential_plugin_runs_once_per_run() {
    let c = Cluster::start();
    let addr: std::net::SocketAddr = c
        .server
        .url()
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let (proxy_url, seen) = sniffing_proxy(addr);
    // The plugin counts its runs and prints a token valid until 2099.
    let count = c.path("plugin-runs");
    let plugin = c.path("credential-plugin.sh");
    std::fs::write(
        &plugin,
        format!(
            "#!/bin/sh\necho run >> '{}'\n\
             printf '%s' '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\
             \"status\":{{\"token\":\"tok-from-plugin\",\"expirationTimestamp\":\"2099-01-01T00:00:00Z\"}}}}'\n",
            count.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let kubeconfig = c.path("exec-kubeconfig");
    // The server's own token rides in the path (it refuses requests
    // without it); the plugin's token is the Authorization header.
    let proxied = format!(
        "{proxy_url}{}{}",
        kapply::server::TOKEN_PATH,
        c.server.token()
    );
    exec_kubeconfig(&kubeconfig, &proxied, &plugin);
    c.write("m/all.yaml", CONFIGMAPS);
    let runs = || {
        std::fs::read_to_string(&count)
            .unwrap_or_default()
            .lines()
            .count()
    };

    let kapply = |args: &[&str]| {
        run(Command::new(KAPPLY)
            .current_dir(c.dir.path())
            .args(args)
            .arg("--kubeconfig")
            .arg(&kubeconfig))
    };
    let out = kapply(&["apply", "--yes", "-f", "m", "--prune", "-l", "app=shop"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains("ConfigMap default/one created"),
        "{out:?}"
    );
    let sent = String::from_utf8_lossy(&seen.lock().unwrap()).to_lowercase();
    let requests = sent.matches(" http/1.1\r\n").count();
    let authorized = sent
        .matches("authorization: bearer tok-from-plugin\r\n")
        .count();
    // version, discovery, lists, dry runs, creates: many requests, each with
    // the plugin's token, from one run of the plugin.
    assert!(requests >= 8, "{requests} requests");
    assert_eq!(authorized, requests, "every request carries the token");
    assert_eq!(runs(), 1, "the plugin ran once for {requests} requests");

    // Each run of kapply runs it once more (nothing is cached on disk).
    let out = kapply(&["diff", "-f", "m"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(runs(), 2);

    // kubectl reads the same kubeconfig and sees what kapply applied.
    if let Some(bin) = kubectl::kubectl() {
        let k = kubectl::Kubectl::new(bin, &kubeconfig);
        let out = run(&mut k.command(&["diff", "-f", "m"]));
        assert_eq!(
            out.code,
            Some(0),
            "kubectl diff with the exec plugin: {out:?}"
        );
    }

    // An expired token is not reused: each request runs the plugin again
    // (expiry is what ends the cache).
    std::fs::write(
        &plugin,
        std::fs::read_to_string(&plugin)
            .unwrap()
            .replace("2099", "2001"),
    )
    .unwrap();
    std::fs::remove_file(&count).unwrap();
    seen.lock().unwrap().clear();
    let out = kapply(&["diff", "-f", "m"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let sent = String::from_utf8_lossy(&seen.lock().unwrap()).to_lowercase();
    let requests = sent.matches(" http/1.1\r\n").count();
    assert!(requests >= 3, "{requests} requests");
    // One run at connect, then one per request.
    assert_eq!(runs(), requests + 1);

    // A plugin that fails: its message, naming the exec, and exit 2.
    let failing = c.path("failing-plugin.sh");
    std::fs::write(
        &failing,
        "#!/bin/sh\necho 'login expired: run sso login' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&failing, std::fs::Permissions::from_mode(0o755)).unwrap();
    exec_kubeconfig(&kubeconfig, &proxy_url, &failing);
    let out = kapply(&["diff", "-f", "m"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr.contains("login expired: run sso login"),
        "{out:?}"
    );
}
