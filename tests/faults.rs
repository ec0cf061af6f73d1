//! The real `kapply` binary against servers that misbehave: silent, stalled,
//! cut mid-body, refusing credentials, failing writes, dying mid-apply.
//! Limits are short (`--request-timeout 1s`) so the suite stays fast; the
//! tests assert what is reported, not how long it took (a guard only stops
//! a run that would hang).

#[path = "common/faults.rs"]
mod faults;
#[path = "common/out.rs"]
mod out;

use faults::{Action, Faulty, Req};
use out::Out;
use serde_json::json;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const KAPPLY: &str = env!("CARGO_BIN_EXE_kapply");

/// A run that takes longer than this is a hang: the test fails.
const GUARD: Duration = Duration::from_secs(120);

/// A runtime for the servers, a scratch directory and a kubeconfig.
struct Env {
    rt: tokio::runtime::Runtime,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

const CONTEXT: &str = "faulty-ctx";

impl Env {
    fn new() -> Env {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        Env {
            rt,
            dir,
            kubeconfig,
        }
    }

    /// The embedded server behind `rule`, and the kubeconfig pointed at it.
    fn faulty(&self, rule: impl Fn(&Req) -> Action + Send + Sync + 'static) -> Faulty {
        let f = self.rt.block_on(Faulty::start(rule));
        faults::write_kubeconfig(&self.kubeconfig, &f.url, CONTEXT);
        f
    }

    fn write(&self, name: &str, text: &str) -> String {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }

    /// Run kapply with the kubeconfig; fail the test if it does not end.
    fn kapply(&self, args: &[&str]) -> Out {
        let mut child = Command::new(KAPPLY)
            .args(args)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn kapply");
        // Read both pipes while waiting, so a large output cannot block it.
        let mut so = child.stdout.take().unwrap();
        let mut se = child.stderr.take().unwrap();
        let out_t = std::thread::spawn(move || {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut so, &mut s).ok();
            s
        });
        let err_t = std::thread::spawn(move || {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut se, &mut s).ok();
            s
        });
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > GUARD {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "kapply {args:?} did not end within {GUARD:?}: stderr so far:\n{}",
                    err_t.join().unwrap()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Out {
            code: status.code(),
            stdout: out_t.join().unwrap(),
            stderr: err_t.join().unwrap(),
        }
    }
}

fn configmap(name: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\ndata:\n  k: \"{value}\"\n---\n"
    )
}

/// Store an object as someone else created it (no last-applied annotation).
fn seed(f: &Faulty, name: &str, value: &str) {
    let (code, body) = f.api.request(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some("application/json"),
        Some(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, "data": {"k": value}})),
    );
    assert_eq!(code, 201, "{body}");
}

fn stored(f: &Faulty, name: &str) -> Option<serde_json::Value> {
    f.api.store().get("v1", "ConfigMap", Some("default"), name)
}

#[test]
fn a_server_that_never_answers_is_given_up_on() {
    let env = Env::new();
    let url = env.rt.block_on(faults::silent());
    faults::write_kubeconfig(&env.kubeconfig, &url, CONTEXT);
    let f = env.write("cm.yaml", &configmap("a", "1"));
    for cmd in [&["diff"][..], &["plan"], &["apply", "--yes"]] {
        let mut args = cmd.to_vec();
        args.extend(["-f", &f, "--request-timeout", "1s"]);
        let out = env.kapply(&args);
        assert_eq!(out.code, Some(2), "{cmd:?}: {out:?}");
        assert!(
            out.stderr
                .contains(&format!("no answer from {url} within 1 s")),
            "{cmd:?}: {out:?}"
        );
    }
    // kubectl's spellings of the value: plain seconds, and with a unit.
    let out = env.kapply(&["diff", "-f", &f, "--request-timeout", "1"]);
    assert!(out.stderr.contains("within 1 s"), "{out:?}");
    let out = env.kapply(&["diff", "-f", &f, "--request-timeout", "500ms"]);
    assert!(out.stderr.contains("within 0.5 s"), "{out:?}");
    let out = env.kapply(&["diff", "-f", &f, "--request-timeout", "soon"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("invalid timeout value"), "{out:?}");
}

#[test]
fn a_list_that_stalls_after_its_headers_is_given_up_on() {
    let env = Env::new();
    let f = env.faulty(|r| {
        if r.is_list("configmaps") {
            Action::StallBody
        } else {
            Action::Serve
        }
    });
    let file = env.write("cm.yaml", &configmap("a", "1"));
    let out = env.kapply(&["diff", "-f", &file, "--request-timeout", "1s"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr
            .contains(&format!("no answer from {} within 1 s", f.url)),
        "{out:?}"
    );
}

#[test]
fn a_connection_closed_mid_body_is_reported() {
    let env = Env::new();
    let f = env.faulty(|r| {
        if r.is_list("configmaps") {
            Action::CloseMidBody
        } else {
            Action::Serve
        }
    });
    let file = env.write("cm.yaml", &configmap("a", "1"));
    let out = env.kapply(&["diff", "-f", &file, "--request-timeout", "5s"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr.contains(&format!(
            "the connection to the server at {} broke in the middle of its answer; \
             /api/v1/namespaces/default/configmaps could not be read",
            f.url
        )),
        "{out:?}"
    );
    assert_no_library_text(&out);
}

/// hyper's own words say what the library was doing, not what happened:
/// none reaches the user.
fn assert_no_library_text(out: &Out) {
    for raw in [
        "error sending request",
        "connection closed before message completed",
        "client error (",
        "os error",
    ] {
        assert!(
            !out.stderr.contains(raw) && !out.stdout.contains(raw),
            "{raw:?} reached the user: {out:?}"
        );
    }
}

#[test]
fn a_refused_connection_and_a_failed_tls_handshake_are_said_plainly() {
    let env = Env::new();
    let file = env.write("cm.yaml", &configmap("a", "1"));
    // Nobody listens.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    faults::write_kubeconfig(&env.kubeconfig, &url, CONTEXT);
    let out = env.kapply(&["diff", "-f", &file]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr.contains(&format!(
            "cannot reach the Kubernetes API server at {url}: connection refused"
        )),
        "{out:?}"
    );
    assert_no_library_text(&out);
    // TLS spoken to a server that answers plain HTTP.
    let f = env.rt.block_on(Faulty::start(|_| Action::Serve));
    let https = f.url.replace("http://", "https://");
    faults::write_kubeconfig(&env.kubeconfig, &https, CONTEXT);
    let out = env.kapply(&["diff", "-f", &file]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr.contains(&format!(
            "cannot reach the Kubernetes API server at {https}: the TLS handshake failed ("
        )),
        "{out:?}"
    );
    assert_no_library_text(&out);
}

#[test]
fn refused_credentials_name_the_context() {
    let env = Env::new();
    // /version answers (it does for anyone on a real cluster); discovery does not.
    let _f = env.faulty(|r| {
        if r.path == "/version" {
            Action::Serve
        } else {
            Action::Status(401, "Unauthorized".into())
        }
    });
    let file = env.write("cm.yaml", &configmap("a", "1"));
    let out = env.kapply(&["diff", "-f", &file]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr
            .contains(&format!("refused the credentials of context \"{CONTEXT}\"")),
        "{out:?}"
    );
    // One message, not one per object.
    assert_eq!(out.stderr.matches("refused the credentials").count(), 1);
}

#[test]
fn a_forbidden_list_falls_back_to_get() {
    let env = Env::new();
    let f = env.faulty(|r| {
        if r.is_list("configmaps") {
            Action::Status(
                403,
                "configmaps is forbidden: User \"u\" cannot list resource \"configmaps\"".into(),
            )
        } else {
            Action::Serve
        }
    });
    seed(&f, "b", "old");
    let file = env.write("cm.yaml", &(configmap("a", "1") + &configmap("b", "new")));
    let out = env.kapply(&["diff", "-f", &file]);
    assert_eq!(out.code, Some(1), "changes, no error: {out:?}");
    assert!(out.stdout.contains("ConfigMap default/a"), "{out:?}");
    assert!(out.stdout.contains("\"old\""), "b read by GET: {out:?}");
}

#[test]
fn server_errors_on_writes_are_failures_with_the_servers_message() {
    // A POST names its object only in its body, which rules do not see:
    // b and c exist already and fail on their PATCH.
    let env = Env::new();
    let f = env.faulty(|r| match (r.method.as_str(), r.is_real_write()) {
        ("PATCH", true) if r.path.ends_with("/configmaps/b") => {
            Action::Status(500, "etcdserver: request timed out".into())
        }
        ("PATCH", true) if r.path.ends_with("/configmaps/c") => Action::Status(
            503,
            "the server is currently unable to handle the request".into(),
        ),
        ("DELETE", true) if r.path.ends_with("/configmaps/d") => {
            Action::Status(500, "internal error deleting d".into())
        }
        _ => Action::Serve,
    });
    for (n, v) in [("b", "old"), ("c", "old"), ("d", "old")] {
        seed(&f, n, v);
    }
    let file = env.write(
        "cm.yaml",
        &(configmap("a", "1") + &configmap("b", "new") + &configmap("c", "new")),
    );
    let out = env.kapply(&["apply", "-f", &file, "--yes"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stdout.contains("ConfigMap default/a created"),
        "{out:?}"
    );
    assert!(
        out.stderr
            .contains("error: ConfigMap default/b: etcdserver: request timed out"),
        "{out:?}"
    );
    assert!(
        out.stderr.contains(
            "error: ConfigMap default/c: the server is currently unable to handle the request"
        ),
        "{out:?}"
    );
    assert!(!out.stdout.contains("default/b configured"), "{out:?}");
    assert!(stored(&f, "a").is_some());
    assert_eq!(stored(&f, "b").unwrap()["data"]["k"], "old");
    assert_eq!(stored(&f, "c").unwrap()["data"]["k"], "old");
    let dfile = env.write("d.yaml", &configmap("d", "old"));
    let out = env.kapply(&["delete", "-f", &dfile, "--yes"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains("error: ConfigMap default/d: internal error deleting d"),
        "{out:?}"
    );
    assert!(stored(&f, "d").is_some());
}

#[test]
fn a_write_without_an_answer_is_reported_unknown() {
    let env = Env::new();
    let f = env.faulty(|r| match (r.method.as_str(), r.is_real_write()) {
        // Never reaches the store.
        ("PATCH", true) if r.path.ends_with("/configmaps/a") => Action::Hang,
        // Reaches the store; the answer never comes.
        ("PATCH", true) if r.path.ends_with("/configmaps/b") => Action::ServeThenHang,
        ("DELETE", true) if r.path.ends_with("/configmaps/d") => Action::ServeThenHang,
        _ => Action::Serve,
    });
    for n in ["a", "b", "c", "d"] {
        seed(&f, n, "old");
    }
    let file = env.write(
        "cm.yaml",
        &(configmap("a", "new") + &configmap("b", "new") + &configmap("c", "new")),
    );
    let out = env.kapply(&["apply", "-f", &file, "--yes", "--request-timeout", "1s"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    for n in ["a", "b"] {
        assert!(
            out.stderr.contains(&format!(
                "unknown: ConfigMap default/{n}: no answer within 1 s; \
                 the change may or may not have been made"
            )),
            "{n}: {out:?}"
        );
        assert!(
            !out.stdout.contains(&format!("default/{n} ")),
            "{n} reported done: {out:?}"
        );
    }
    assert!(
        out.stdout.contains("ConfigMap default/c configured"),
        "{out:?}"
    );
    assert!(
        out.stderr.contains("2 object(s) with an unknown outcome"),
        "{out:?}"
    );
    // What the server holds: a untouched, b changed (both "unknown" was right).
    assert_eq!(stored(&f, "a").unwrap()["data"]["k"], "old");
    assert_eq!(stored(&f, "b").unwrap()["data"]["k"], "new");
    assert_eq!(stored(&f, "c").unwrap()["data"]["k"], "new");

    let dfile = env.write("d.yaml", &configmap("d", "old"));
    let out = env.kapply(&["delete", "-f", &dfile, "--yes", "--request-timeout", "1s"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains(
            "unknown: ConfigMap default/d: no answer within 1 s; the change may or may not have been made"
        ),
        "{out:?}"
    );
    assert!(stored(&f, "d").is_none(), "the DELETE was served");
}

/// A server dry run that gets no answer wrote nothing, and objects never
/// sent were never written: neither is worded as a write whose fate is
/// unknown ("may or may not have been made").
#[test]
fn a_failed_dry_run_and_objects_not_sent_say_nothing_was_written() {
    let env = Env::new();
    let f = env.faulty(|r| {
        let dry_run = r.query.contains("dryRun=All");
        match r.method.as_str() {
            "PATCH" if dry_run && r.path.ends_with("/configmaps/a") => Action::ServeThenDie,
            _ => Action::Serve,
        }
    });
    for n in ["a", "b", "c"] {
        seed(&f, n, "old");
    }
    let file = env.write(
        "cm.yaml",
        &(configmap("a", "new") + &configmap("b", "new") + &configmap("c", "new")),
    );
    let out = env.kapply(&["apply", "-f", &file, "--yes", "--request-timeout", "5s"]);
    assert!(f.is_dead(), "{out:?}");
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(!out.stderr.contains("may or may not"), "{}", out.stderr);
    assert!(!out.stderr.contains("unknown"), "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "error: ConfigMap default/a: not applied (server dry run): the server at {} \
             closed the connection before answering; it was a server dry run: nothing was written",
            f.url
        )),
        "{}",
        out.stderr
    );
    // The others: never sent (the cause named alone), or their own dry
    // run failed (the dry runs go out together): lost, or refused
    // connection by the dead server. None says "may or may not" (above).
    for n in ["b", "c"] {
        let line = out
            .stderr
            .lines()
            .find(|l| l.starts_with(&format!("error: ConfigMap default/{n}: ")))
            .unwrap_or_else(|| panic!("{n}: {}", out.stderr));
        assert!(
            line.contains(": not sent, an earlier request failed: ")
                || line.contains(": not applied (server dry run): "),
            "{line}"
        );
    }
    for n in ["a", "b", "c"] {
        assert_eq!(stored(&f, n).unwrap()["data"]["k"], "old", "{n}");
        assert!(
            out.stderr
                .contains(&format!("error: ConfigMap default/{n}: ")),
            "{n}: {}",
            out.stderr
        );
    }
    assert_no_library_text(&out);
}

#[test]
fn a_release_dry_run_without_an_answer_is_an_error_not_unknown() {
    let env = Env::new();
    let f = env.faulty(|r| {
        if r.method == "PATCH" && r.query.contains("dryRun=All") {
            Action::Hang
        } else {
            Action::Serve
        }
    });
    let file = env.write("r.yaml", &configmap("r", "v"));
    let out = env.kapply(&["apply", "-f", &file, "--yes"]);
    assert!(out.code == Some(0) || out.code == Some(1), "{out:?}");
    let out = env.kapply(&[
        "release",
        "cm/r",
        "data.k",
        "--dry-run",
        "--yes",
        "--request-timeout",
        "1s",
    ]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains(&format!(
            "error: ConfigMap default/r: no answer from {} within 1 s",
            f.url
        )),
        "{out:?}"
    );
    assert!(!out.stderr.contains("may or may not"), "{out:?}");
}

#[test]
fn a_server_killed_mid_apply_of_2000_objects_is_reported_object_by_object() {
    const N: usize = 2000;
    const DIE_AT: usize = 700;
    let env = Env::new();
    let writes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = writes.clone();
    let f = env.faulty(move |r| {
        if !r.is_real_write() {
            return Action::Serve;
        }
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        match (n + 1).cmp(&DIE_AT) {
            std::cmp::Ordering::Less => Action::Serve,
            std::cmp::Ordering::Equal => Action::ServeThenDie,
            // Counted after the fatal write but let in before the death
            // was flagged (another worker thread, while this one was
            // descheduled on a loaded machine): a dead server stores
            // nothing more, so they hang until their connection drops.
            std::cmp::Ordering::Greater => Action::Hang,
        }
    });
    let mut text = String::new();
    for i in 0..N {
        text.push_str(&configmap(&format!("cm-{i:04}"), "v"));
    }
    let file = env.write("many.yaml", &text);
    // The fault is a death, not a stall: the limit only has to outlast a
    // loaded machine (a write timed out before the death would be an
    // unknown of its own, not the one this test is about).
    let out = env.kapply(&["apply", "-f", &file, "--yes", "--request-timeout", "30s"]);
    assert!(f.is_dead(), "the server died: {out:?}");
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let (mut created, mut failed, mut unknown) = (0, 0, 0);
    for i in 0..N {
        let name = format!("cm-{i:04}");
        let object = format!("ConfigMap default/{name}");
        let done = out.stdout.contains(&format!("{object} created\n"));
        let not = out.stderr.contains(&format!("error: {object}: "));
        let unsure = out.stderr.contains(&format!("unknown: {object}: "));
        assert_eq!(
            [done, not, unsure].iter().filter(|b| **b).count(),
            1,
            "{object} reported exactly once: done {done}, failed {not}, unknown {unsure}"
        );
        let held = stored(&f, &name).is_some();
        if done {
            created += 1;
            assert!(held, "{object} reported created, not on the server");
        }
        if not {
            failed += 1;
            assert!(!held, "{object} reported not applied, but on the server");
        }
        if unsure {
            unknown += 1;
        }
    }
    eprintln!("created {created}, failed {failed}, unknown {unknown}");
    assert_eq!(created + failed + unknown, N);
    // The one the server handled before dying never got its answer.
    assert!(unknown >= 1, "{}", out.stderr);
    // kapply writes CONCURRENCY (64, its default) at a time, so at most 64
    // connections are open when the server dies. Each can leave one write
    // unknown (in flight then, or sent on it before kapply saw it closed),
    // no more: every later write is refused, reported failed.
    const CONCURRENCY: usize = 64;
    assert!(unknown <= CONCURRENCY, "unknown {unknown}: {}", out.stderr);
    // Writes before the fatal one were answered but for those in flight
    // with it; after it, only those already in flight were served.
    assert!(created >= DIE_AT - CONCURRENCY, "created {created}");
    assert!(created < DIE_AT + CONCURRENCY, "created {created}");
    // So all the rest failed cleanly.
    assert!(failed > N - DIE_AT - 2 * CONCURRENCY, "failed {failed}");
    assert!(
        out.stderr.contains("not applied"),
        "failures say nothing was applied"
    );
    // The write the server handled before dying: what is known of it.
    assert!(
        out.stderr.contains(&format!(
            "the server at {} closed the connection before answering; \
             the write may or may not have been made",
            f.url
        )),
        "{}",
        out.stderr
    );
    assert_no_library_text(&out);
}

/// Start kapply with the kubeconfig, its output read while it runs.
fn spawn_kapply(env: &Env, args: &[&str]) -> (std::process::Child, OutputReaders) {
    let mut child = Command::new(KAPPLY)
        .args(args)
        .arg("--kubeconfig")
        .arg(&env.kubeconfig)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kapply");
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            r.read_to_string(&mut s).ok();
            s
        })
    };
    let out = read(Box::new(child.stdout.take().unwrap()));
    let err = read(Box::new(child.stderr.take().unwrap()));
    (child, (out, err))
}

type OutputReaders = (
    std::thread::JoinHandle<String>,
    std::thread::JoinHandle<String>,
);

/// Wait for the child (within [`GUARD`]) and collect its output.
fn wait_kapply(mut child: std::process::Child, (out, err): OutputReaders) -> Out {
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "kapply did not end within {GUARD:?}: {}",
                err.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Out {
        code: status.code(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// SIGINT (Ctrl-C) and SIGTERM (a CI runner cancelling the job) in the
/// middle of a slowed apply of 200 objects, then of a delete: kapply stops
/// sending, lets the requests in flight finish, and says of every object
/// what became of it; what it says matches what the server holds. It exits
/// with the signal's code.
#[test]
fn a_signal_mid_apply_stops_it_and_every_object_is_accounted_for() {
    const N: usize = 200;
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let env = Env::new();
        let writes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = writes.clone();
        let f = env.faulty(move |r| {
            if !r.is_real_write() {
                return Action::Serve;
            }
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Action::Delay(Duration::from_millis(100))
        });
        let mut text = String::new();
        for i in 0..N {
            text.push_str(&configmap(&format!("cm-{i:03}"), "v"));
        }
        let file = env.write("many.yaml", &text);
        // 4 at a time, 100 ms each: the apply would take 5 s.
        let args = ["apply", "-f", &file, "--yes", "--concurrency", "4"];
        let (child, readers) = spawn_kapply(&env, &args);
        let start = Instant::now();
        while writes.load(std::sync::atomic::Ordering::SeqCst) < 40 {
            assert!(start.elapsed() < GUARD, "the writes never started");
            std::thread::sleep(Duration::from_millis(5));
        }
        let pid = child.id().to_string();
        assert!(
            Command::new("kill")
                .args([&format!("-{signal}"), &pid])
                .status()
                .unwrap()
                .success()
        );
        let out = wait_kapply(child, readers);
        assert_eq!(out.code, Some(code), "SIG{signal}: {out:?}");
        let (mut created, mut not_sent) = (0, 0);
        for i in 0..N {
            let name = format!("cm-{i:03}");
            let object = format!("ConfigMap default/{name}");
            let done = out.stdout.contains(&format!("{object} created\n"));
            let skipped = out.stderr.contains(&format!(
                "error: {object}: not applied: not sent: interrupted by SIG{signal}\n"
            ));
            let unsure = out.stderr.contains(&format!("unknown: {object}: "));
            assert_eq!(
                [done, skipped, unsure].iter().filter(|b| **b).count(),
                1,
                "SIG{signal}: {object} reported exactly once: {out:?}"
            );
            let held = stored(&f, &name).is_some();
            if done {
                created += 1;
                assert!(held, "{object} reported created, not on the server");
            }
            if skipped {
                not_sent += 1;
                assert!(!held, "{object} reported not sent, but on the server");
            }
        }
        // Stopped in the middle: some written, the rest never sent.
        assert!((40..N).contains(&created), "SIG{signal}: created {created}");
        assert!(not_sent > 0, "SIG{signal}: {out:?}");
        // The requests in flight (100 ms each) were waited for.
        assert!(
            !out.stderr.contains("unknown:"),
            "SIG{signal}: {}",
            out.stderr
        );
        assert!(
            out.stderr.contains(&format!(
                "interrupted by SIG{signal}: {created} written, {not_sent} not sent, 0 unknown"
            )),
            "SIG{signal}: {}",
            out.stderr
        );
        // The results came out in the order of the objects.
        let lines: Vec<&str> = out.stdout.lines().collect();
        let mut sorted = lines.clone();
        sorted.sort();
        assert_eq!(lines, sorted);

        // The same for a delete.
        writes.store(0, std::sync::atomic::Ordering::SeqCst);
        let args = ["delete", "-f", &file, "--yes", "--concurrency", "4"];
        let (child, readers) = spawn_kapply(&env, &args);
        let start = Instant::now();
        while writes.load(std::sync::atomic::Ordering::SeqCst) < 20 {
            assert!(start.elapsed() < GUARD, "the deletes never started");
            std::thread::sleep(Duration::from_millis(5));
        }
        let pid = child.id().to_string();
        assert!(
            Command::new("kill")
                .args([&format!("-{signal}"), &pid])
                .status()
                .unwrap()
                .success()
        );
        let out = wait_kapply(child, readers);
        assert_eq!(out.code, Some(code), "delete, SIG{signal}: {out:?}");
        let mut deleted = 0;
        for i in 0..created {
            let name = format!("cm-{i:03}");
            let object = format!("ConfigMap default/{name}");
            let done = out.stdout.contains(&format!("{object} deleted\n"));
            let skipped = out.stderr.contains(&format!(
                "error: {object}: not sent: interrupted by SIG{signal}\n"
            ));
            assert!(done ^ skipped, "delete, SIG{signal}: {object}: {out:?}");
            assert_eq!(stored(&f, &name).is_none(), done, "{object}");
            deleted += usize::from(done);
        }
        assert!(
            deleted >= 20 && deleted < created,
            "deleted {deleted} of {created}"
        );
    }
}

/// A write that API Priority and Fairness turns away (429 with
/// Retry-After) is sent again after the wait and succeeds; one turned away
/// every time is given up on after a few tries and reported not applied.
#[test]
fn a_throttled_write_waits_for_retry_after_and_is_sent_again() {
    let env = Env::new();
    let tries = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = tries.clone();
    let f = env.faulty(move |r| {
        if r.method == "POST"
            && r.path.ends_with("/configmaps")
            && r.is_real_write()
            && counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 2
        {
            return Action::Status(429, "too many requests, please try again later".into());
        }
        Action::Serve
    });
    let file = env.write("cm.yaml", &configmap("a", "v"));
    let start = Instant::now();
    let out = env.kapply(&["apply", "-f", &file, "--yes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains("ConfigMap default/a created"),
        "{out:?}"
    );
    assert_eq!(tries.load(std::sync::atomic::Ordering::SeqCst), 3);
    // Retry-After: 1, twice.
    assert!(
        start.elapsed() >= Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert!(stored(&f, "a").is_some());
}
