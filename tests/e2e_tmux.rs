//! End to end: the real `kapply` binary in a real terminal (tmux), against
//! the embedded demo cluster (`kapply demo --kubeconfig-out FILE`). The test
//! walks the reference page's story by keystroke, reads the screen with
//! `tmux capture-pane`, and checks the cluster with plain HTTP GETs through
//! the kubeconfig the demo wrote.
//!
//! Without tmux the tests skip, unless `KAPPLY_CI` is set: then they fail.

#[path = "common/faults.rs"]
mod faults;
#[path = "common/kubectl.rs"]
mod kubectl;

use kubectl::Kubectl;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// How long one screen state may take to appear. Generous: CI machines are
/// shared, and a debug build seeds the demo and loads the plan first.
const TIMEOUT: Duration = Duration::from_secs(60);
const PROMPT: &str = "kapply-e2e$";

fn tmux_available() -> bool {
    let found = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("KAPPLY_CI").is_none(),
            "tmux is required when KAPPLY_CI is set (.ci/run installs it)"
        );
        eprintln!("skipping: tmux not found");
    }
    found
}

/// One tmux server on its own socket, running an interactive shell in a
/// window of a fixed size. Dropping it kills the server (and with it the
/// shell and kapply), also when a test fails.
struct Tmux {
    socket: String,
    /// The socket file, which tmux leaves behind when its server is killed.
    socket_path: Option<PathBuf>,
    dir: tempfile::TempDir,
}

impl Tmux {
    fn start(name: &str, width: u16, height: u16) -> Tmux {
        let dir = tempfile::Builder::new()
            .prefix("kapply-e2e-")
            .tempdir()
            .unwrap();
        // No user configuration, no status line: the pane is the whole window.
        let conf = dir.path().join("tmux.conf");
        std::fs::write(&conf, "set -g status off\n").unwrap();
        let mut t = Tmux {
            socket: format!("kapply-e2e-{}-{name}", std::process::id()),
            socket_path: None,
            dir,
        };
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&t.socket)
            .arg("-f")
            .arg(&conf)
            .args(["new-session", "-d", "-s", "e2e", "-x"])
            .arg(width.to_string())
            .arg("-y")
            .arg(height.to_string())
            .arg(format!("env PS1='{PROMPT} ' sh"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        t.socket_path = Some(PathBuf::from(t.display("#{socket_path}")));
        t
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn tmux(&self, args: &[&str]) -> Output {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Key names as tmux knows them: `j`, `Enter`, `Escape`, `Tab`.
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Text typed as is (no key-name lookup).
    fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "e2e", "-l", text]);
    }

    /// The pane's text, one string per screen line.
    fn screen(&self) -> String {
        String::from_utf8(self.tmux(&["capture-pane", "-p", "-t", "e2e"]).stdout).unwrap()
    }

    /// The pane with its attributes as escape sequences.
    fn screen_with_attributes(&self) -> String {
        String::from_utf8(self.tmux(&["capture-pane", "-p", "-e", "-t", "e2e"]).stdout).unwrap()
    }

    fn display(&self, format: &str) -> String {
        let out = self.tmux(&["display-message", "-p", "-t", "e2e", format]);
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// Poll the pane until `ok` holds; fail with the last screen otherwise.
    /// Under load tmux may catch a frame half drawn: a caller that checks
    /// more of the screen puts it all in `ok`, not in asserts after.
    fn wait_until(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            if start.elapsed() > TIMEOUT {
                panic!("timed out waiting for {what}; the screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Wait until `text` shows anywhere on the screen.
    fn wait_for(&self, text: &str) -> String {
        self.wait_until(&format!("{text:?}"), |s| s.contains(text))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
        if let Some(p) = &self.socket_path {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The texts between the box-drawing borders of every screen line, trimmed.
fn cells(screen: &str) -> impl Iterator<Item = &str> {
    screen
        .lines()
        .flat_map(|l| l.split('│'))
        .map(str::trim)
        .filter(|c| !c.is_empty())
}

fn has_cell(screen: &str, text: &str) -> bool {
    cells(screen).any(|c| c == text)
}

/// The cells right after the cell `head`, e.g. the detail lines below the
/// selected field's heading.
fn cells_after<'a>(screen: &'a str, head: &str, n: usize) -> Vec<&'a str> {
    // Cells of the list pane interleave with the detail pane's, so take the
    // next cells of the same column: those at the same offset in later lines.
    let (line_no, col) = screen
        .lines()
        .enumerate()
        .find_map(|(i, l)| {
            l.split('│')
                .position(|c| c.trim() == head)
                .map(|col| (i, col))
        })
        .unwrap_or_else(|| panic!("no cell {head:?} on the screen:\n{screen}"));
    screen
        .lines()
        .skip(line_no + 1)
        .take(n)
        .map(|l| l.split('│').nth(col).map_or("", str::trim))
        .collect()
}

/// The heading of the field detail (`keep spec.replicas`), if shown.
fn field_heading(screen: &str) -> Option<String> {
    cells(screen)
        .find(|c| {
            let words: Vec<&str> = c.split_whitespace().collect();
            words.len() == 2 && ["set", "clear", "keep"].contains(&words[0])
        })
        .map(str::to_string)
}

/// Move the field cursor (the field pane has focus) down to the field with
/// this detail heading, one awaited `j` at a time, and return the screen
/// showing it. Only moves forward: callers visit fields in table order.
fn select_field(t: &Tmux, heading: &str) -> String {
    let mut screen = t.wait_until("a field detail", |s| field_heading(s).is_some());
    for _ in 0..60 {
        let current = field_heading(&screen);
        if current.as_deref() == Some(heading) {
            return screen;
        }
        t.keys(&["j"]);
        screen = t.wait_until(
            &format!("the field cursor to move on to {heading:?}"),
            |s| field_heading(s) != current,
        );
    }
    panic!("no field {heading:?}:\n{screen}");
}

/// Selects the field with this detail heading (see `select_field`) and
/// checks the two lines under the heading: the three values and the reason.
/// Returns the screen.
fn assert_field_detail(t: &Tmux, heading: &str, expected: [&str; 2], why: &str) -> String {
    select_field(t, heading);
    // The detail lines come with the heading's frame: wait for them too.
    let screen = t.wait_until(&format!("the detail of {heading:?}"), |s| {
        field_heading(s).as_deref() == Some(heading) && cells_after(s, heading, 2) == expected
    });
    assert_eq!(
        cells_after(&screen, heading, 2),
        expected,
        "{why}\n{screen}"
    );
    screen
}

/// The width of the object list pane: it narrows while the field pane has
/// focus, which is how a screen shows where the keys go.
fn list_width(screen: &str) -> usize {
    screen
        .lines()
        .find(|l| l.starts_with("┌ Objects"))
        .and_then(|l| l.chars().position(|c| c == '┐'))
        .map_or(0, |p| p + 1)
}

/// Tab, and wait until the focus has moved (the list pane changed width).
fn switch_focus(t: &Tmux) -> String {
    let before = list_width(&t.screen());
    t.keys(&["Tab"]);
    t.wait_until("the focus to switch panes", |s| {
        let w = list_width(s);
        w != 0 && w != before
    })
}

/// Start `kapply demo` in the shell, with the environment in `env`.
fn start_demo(t: &Tmux, env: &str) -> PathBuf {
    let kubeconfig = t.path("kubeconfig");
    start_kapply(
        t,
        &format!(
            "{env} '{{bin}}' demo --kubeconfig-out '{}'",
            kubeconfig.display()
        ),
    );
    kubeconfig
}

/// Run `command` (`{bin}` stands for the kapply binary) in the shell; after
/// it exits, print its exit code and whether the terminal is back in cooked
/// mode with echo (raw mode turns both off).
fn start_kapply(t: &Tmux, command: &str) {
    let script = t.path("run.sh");
    let bin = env!("CARGO_BIN_EXE_kapply");
    std::fs::write(
        &script,
        format!(
            "{}\n\
             echo \"KAPPLY-EXIT=$?\"\n\
             stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo \
             | tr '\\n' ' ' | sed 's/^/TTY: /'\n\
             echo\n",
            command.replace("{bin}", bin)
        ),
    )
    .unwrap();
    t.wait_for(PROMPT);
    t.type_text(&format!("sh '{}'", script.display()));
    t.keys(&["Enter"]);
}

/// Quit with `q` and check that the shell is back: exit code 0, the main
/// screen, and the terminal out of raw mode.
fn quit_and_check_restored(t: &Tmux) {
    t.keys(&["q"]);
    check_restored(t, 0);
}

/// Wait for kapply to exit with `code`; check the shell is back on the main
/// screen, the terminal out of raw mode, the cursor shown, the mouse released.
fn check_restored(t: &Tmux, code: i32) {
    let screen = t.wait_for("KAPPLY-EXIT=");
    assert!(
        screen.contains(&format!("KAPPLY-EXIT={code}")),
        "kapply did not exit with {code}:\n{screen}"
    );
    let screen = t.wait_until("the shell prompt after kapply", |s| {
        s.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| l.trim() == PROMPT)
    });
    let tty = screen
        .lines()
        .find(|l| l.starts_with("TTY: "))
        .unwrap_or_else(|| panic!("no stty line:\n{screen}"));
    let flags: Vec<&str> = tty["TTY: ".len()..].split_whitespace().collect();
    assert!(
        flags.contains(&"icanon") && flags.contains(&"echo"),
        "the terminal was left in raw mode ({tty}):\n{screen}"
    );
    // The TUI drew on the alternate screen; leaving it shows the shell again.
    assert_eq!(
        t.display("#{alternate_on}"),
        "0",
        "still on the alternate screen"
    );
    assert!(
        !screen.contains("Objects"),
        "the TUI is still on screen:\n{screen}"
    );
    assert_eq!(t.display("#{cursor_flag}"), "1", "the cursor is hidden");
    assert_eq!(
        t.display("#{mouse_any_flag}"),
        "0",
        "mouse tracking is still on"
    );
}

/// The API server named by the demo's kubeconfig.
struct Cluster {
    addr: String,
    token: String,
}

impl Cluster {
    fn from_kubeconfig(path: &Path) -> Cluster {
        let text = std::fs::read_to_string(path).unwrap();
        let config: Value = kapply::yaml::read_value(&text).unwrap();
        let server = config["clusters"][0]["cluster"]["server"]
            .as_str()
            .unwrap()
            .to_string();
        let addr = server
            .strip_prefix("http://")
            .unwrap_or_else(|| panic!("the demo serves plain HTTP, not {server}"))
            // The URL's path carries the token for kubectl; this client
            // sends it as a bearer token.
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        let token = config["users"][0]["user"]["token"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        Cluster { addr, token }
    }

    /// GET `path`: the status code and the JSON body.
    fn get(&self, path: &str) -> (u16, Value) {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
             Accept: application/json\r\nConnection: close\r\n\r\n",
            self.addr, self.token
        )
        .unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap();
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("an HTTP response");
        let head = String::from_utf8_lossy(&raw[..split]).to_lowercase();
        let mut body = raw[split + 4..].to_vec();
        if head.contains("transfer-encoding: chunked") {
            body = dechunk(&body);
        }
        let status: u16 = head
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("bad status line: {head}"));
        let json = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("GET {path}: {e}: {}", String::from_utf8_lossy(&body)));
        (status, json)
    }

    fn object(&self, path: &str) -> Value {
        let (status, body) = self.get(path);
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    fn assert_gone(&self, path: &str) {
        let (status, body) = self.get(path);
        assert_eq!(status, 404, "GET {path} should be NotFound: {body}");
        assert_eq!(body["reason"], "NotFound");
    }

    fn names(&self, path: &str) -> Vec<String> {
        let list = self.object(path);
        let mut names: Vec<String> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    }
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line_end = body.windows(2).position(|w| w == b"\r\n").unwrap();
        let size_text = String::from_utf8_lossy(&body[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        body = &body[line_end + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&body[..size]);
        body = &body[size + 2..];
    }
}

/// `kubectl diff -f` of one demo manifest exits 0 (no differences). Without
/// kubectl the check is skipped, unless `KAPPLY_CI` is set: then it fails.
fn kubectl_diff_is_empty(t: &Tmux, kubeconfig: &Path, manifest: &str) {
    let Some(kubectl) = Kubectl::find(kubeconfig) else {
        return;
    };
    let (_, text) = kapply::demo::DEMO_FILES
        .iter()
        .find(|(name, _)| *name == manifest)
        .unwrap();
    let file = t.path(manifest);
    std::fs::write(&file, text).unwrap();
    let out = kubectl
        .command(&["diff", "-f"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "kubectl diff after kapply applied {manifest}:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

const DEPLOYMENT: &str = "/apis/apps/v1/namespaces/demo/deployments/nginx-deployment";

#[test]
fn the_reference_story_by_keystroke() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("story", 160, 45);
    let kubeconfig = start_demo(&t, "");
    let screen = t.wait_until("the prune candidate listed and counted", |s| {
        has_cell(s, "- ConfigMap/old-settings") && s.contains("-1 prune")
    });
    assert!(screen.contains("-1 prune"), "{screen}");
    let cluster = Cluster::from_kubeconfig(&kubeconfig);

    // Before: the live Deployment as the story left it.
    let before = cluster.object(DEPLOYMENT);
    assert_eq!(before["spec"]["replicas"], 2);
    assert_eq!(before["spec"]["minReadySeconds"], 5);

    // Find the Deployment by search, then clear the search.
    t.keys(&["/"]);
    t.type_text("nginx-deployment");
    t.keys(&["Enter"]);
    t.wait_for("Objects 1/9");
    t.keys(&["Escape"]);
    let screen = t.wait_until("all objects, the Deployment selected", |s| {
        s.contains("Objects 9/9")
            && s.contains("Deployment demo/nginx-deployment · fields")
            && has_cell(s, "~ Deployment/nginx-deployment")
            && s.contains("strategic merge patch")
    });
    assert!(
        screen.contains("Deployment demo/nginx-deployment · fields"),
        "{screen}"
    );
    assert!(
        has_cell(&screen, "~ Deployment/nginx-deployment"),
        "{screen}"
    );
    assert!(screen.contains("strategic merge patch"), "{screen}");

    // The three fields of the story, each with its detail lines, in table
    // order: the changes apply sends, then the kept fields.
    let screen = switch_focus(&t);
    assert!(
        list_width(&screen) < 48,
        "the field pane has focus:\n{screen}"
    );
    assert_field_detail(
        &t,
        "clear spec.minReadySeconds",
        [
            "last-applied 5 · live 5 · config —",
            "in last-applied, removed from config",
        ],
        "",
    );
    let image = "set spec.template.spec.containers[name=nginx].image";
    assert_field_detail(
        &t,
        image,
        [
            "last-applied \"nginx:1.14.2\" · live \"nginx:1.14.2\" · config \"nginx:1.16.1\"",
            "config differs from live",
        ],
        "",
    );
    // The path as a tree: the common prefix once, never cut; the values whole.
    let tree = |s: &str| {
        s.lines()
            .any(|l| l.contains("│    template.spec.containers[name=nginx] "))
            && s.lines().any(|l| {
                l.contains("■     image ") && l.contains("nginx:1.14.2 nginx:1.14.2 nginx:1.16.1")
            })
            && s.contains("kept hidden (K)")
    };
    let screen = t.wait_until("the image row under its tree header", tree);
    assert!(
        screen
            .lines()
            .any(|l| l.contains("│    template.spec.containers[name=nginx] ")),
        "{screen}"
    );
    assert!(
        screen
            .lines()
            .any(|l| l.contains("■     image ")
                && l.contains("nginx:1.14.2 nginx:1.14.2 nginx:1.16.1")),
        "{screen}"
    );
    // The kept fields are hidden until K shows them.
    assert!(screen.contains("kept hidden (K)"), "{screen}");
    assert!(!screen.contains("replicas"), "{screen}");
    t.keys(&["K"]);
    t.wait_for("── kept: ");
    assert_field_detail(
        &t,
        "keep spec.replicas",
        [
            "last-applied — · live 2 · config —",
            "kept: another writer owns it (kubectl)",
        ],
        "replicas belongs to another writer (kubectl scale):",
    );
    switch_focus(&t);

    // Apply: the confirm popup lists what is sent, then the server dry run.
    t.keys(&["a"]);
    let screen = t.wait_until("the apply popup with its dry run", |s| {
        s.contains("✓ Deployment demo/nginx-deployment: configured (server dry run)")
            && s.contains("Confirm apply")
            && has_cell(
                s,
                "~ Deployment demo/nginx-deployment: update (PATCH, strategic merge)",
            )
            && has_cell(s, "clear spec.minReadySeconds")
            && has_cell(
                s,
                "set   spec.template.spec.containers[name=nginx].image = \"nginx:1.16.1\"",
            )
    });
    assert!(screen.contains("Confirm apply"), "{screen}");
    assert!(
        has_cell(
            &screen,
            "~ Deployment demo/nginx-deployment: update (PATCH, strategic merge)"
        ),
        "{screen}"
    );
    assert!(has_cell(&screen, "clear spec.minReadySeconds"), "{screen}");
    assert!(
        has_cell(
            &screen,
            "set   spec.template.spec.containers[name=nginx].image = \"nginx:1.16.1\""
        ),
        "{screen}"
    );
    // The dry run wrote nothing.
    assert_eq!(cluster.object(DEPLOYMENT)["spec"]["minReadySeconds"], 5);
    t.keys(&["Enter"]);
    let screen = t.wait_until("the apply to be reported and reloaded", |s| {
        has_cell(s, "= Deployment/nginx-deployment") && s.contains("applied 1 object(s)")
    });
    assert!(screen.contains("applied 1 object(s)"), "{screen}");

    let after = cluster.object(DEPLOYMENT);
    assert_eq!(
        after["spec"]["replicas"], 2,
        "kept: scaled by another writer"
    );
    assert!(
        after["spec"].get("minReadySeconds").is_none(),
        "minReadySeconds cleared: {}",
        after["spec"]
    );
    assert_eq!(
        after["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.16.1"
    );
    // The annotation exactly as kubectl writes it for the new manifest.
    assert_eq!(
        after["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
        concat!(
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"#,
            r#""labels":{"app":"demo"},"name":"nginx-deployment","namespace":"demo"},"#,
            r#""spec":{"selector":{"matchLabels":{"app":"nginx"}},"template":{"metadata":"#,
            r#"{"labels":{"app":"nginx"}},"spec":{"containers":[{"image":"nginx:1.16.1","#,
            r#""name":"nginx","ports":[{"containerPort":80}]}]}}}}"#,
            "\n"
        )
    );

    // And the real kubectl, given the same manifest, finds nothing to change.
    kubectl_diff_is_empty(&t, &kubeconfig, "04-simple_deployment.yaml");

    // Prune mode: the candidate, why, then confirm.
    t.keys(&["p"]);
    let screen = t.wait_until("the prune candidate with its reason", |s| {
        s.contains("Candidate 1/1: ConfigMap demo/old-settings")
            && s.contains("why: has last-applied annotation, matches -l app=demo")
            && has_cell(s, "y prune · n keep · s skip · Esc cancel")
            && s.contains("prune: has last-applied annotation")
    });
    assert!(
        screen.contains("why: has last-applied annotation, matches -l app=demo"),
        "{screen}"
    );
    // The why line wraps at 160 columns; the dialog grows to fit it, so its
    // last lines still show.
    assert!(
        has_cell(&screen, "queued 0 · kept 0 · skipped 0")
            && has_cell(&screen, "y prune · n keep · s skip · Esc cancel"),
        "{screen}"
    );
    assert!(
        has_cell(
            &screen,
            "prune: has last-applied annotation, matches -l app=demo, kind ConfigMap in \
             prune allowlist, not in manifests"
        ),
        "the selected candidate's reason in the detail pane:\n{screen}"
    );
    t.keys(&["y"]);
    // Enter deletes once the server's dry run has answered (before, it
    // only says it waits): wait for the verdict, as a user reads it.
    let screen = t.wait_until("the prune confirmation with the dry run", |s| {
        s.contains("Confirm prune")
            && has_cell(s, "x ConfigMap demo/old-settings")
            && s.contains("pruned (server dry run)")
    });
    assert!(
        has_cell(&screen, "x ConfigMap demo/old-settings"),
        "{screen}"
    );
    t.keys(&["Enter"]);
    let screen = t.wait_until("the prune to be reported and reloaded", |s| {
        s.contains("pruned 1 object(s)") && s.contains("-0 prune") && !s.contains("old-settings")
    });
    assert!(!screen.contains("old-settings"), "{screen}");
    cluster.assert_gone("/api/v1/namespaces/demo/configmaps/old-settings");

    // Delete ConfigMap settings: select it, D, confirm.
    t.keys(&["/"]);
    t.type_text("configmap demo/settings");
    t.keys(&["Enter"]);
    // Typed a key at a time: only the whole name leaves one object.
    t.wait_until("the search to leave ConfigMap demo/settings", |s| {
        s.contains("Objects 1/8") && s.contains("ConfigMap demo/settings · fields")
    });
    t.keys(&["D"]);
    let screen = t.wait_until("the delete confirmation", |s| {
        s.contains("Confirm delete") && has_cell(s, "x ConfigMap demo/settings")
    });
    assert!(has_cell(&screen, "x ConfigMap demo/settings"), "{screen}");
    t.keys(&["Enter"]);
    // Its manifest is still there, so it is now to be created.
    let screen = t.wait_until("the delete to be reported and reloaded", |s| {
        s.contains("deleted 1 object(s)")
            && has_cell(s, "+ ConfigMap/settings")
            && s.contains("+1 create")
    });
    assert!(screen.contains("+1 create"), "{screen}");
    cluster.assert_gone("/api/v1/namespaces/demo/configmaps/settings");
    t.keys(&["Escape"]);
    t.wait_for("Objects 8/8");

    // The cluster afterwards: only what the walk touched changed.
    assert_eq!(
        cluster.names("/api/v1/namespaces/demo/configmaps"),
        ["feature-flags"]
    );
    assert_eq!(
        cluster.names("/apis/apps/v1/namespaces/demo/deployments"),
        ["nginx-deployment"]
    );
    assert_eq!(cluster.names("/api/v1/namespaces/demo/services"), ["nginx"]);
    assert_eq!(
        cluster.names("/api/v1/namespaces/demo/secrets"),
        ["db-credentials"]
    );
    // Not applied: the Widget keeps the size of its last apply.
    let widget = cluster.object("/apis/demo.kapply.dev/v1/namespaces/demo/widgets/sprocket");
    assert_eq!(widget["spec"]["size"], 3);
    cluster.object("/api/v1/namespaces/demo");

    quit_and_check_restored(&t);
}

/// Whether any SGR sequence in `text` sets a foreground or background colour.
fn sets_a_colour(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(start) = rest.find("\x1b[") {
        let seq = &rest[start + 2..];
        let end = seq
            .find(|c: char| !(c.is_ascii_digit() || c == ';' || c == ':'))
            .unwrap_or(seq.len());
        let (params, tail) = seq.split_at(end);
        rest = tail;
        if !tail.starts_with('m') {
            continue;
        }
        for p in params.split(';') {
            let first = p.split(':').next().unwrap_or("");
            if let Ok(n) = first.parse::<u16>() {
                // 39/49 are the defaults; everything else in these ranges is a colour.
                let colour = matches!(n, 30..=38 | 40..=48 | 90..=97 | 100..=107);
                if colour {
                    return Some(format!("\\e[{params}m"));
                }
            }
        }
    }
    None
}

#[test]
fn no_color_at_80x24_renders_and_quits() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("nocolor", 80, 24);
    start_demo(&t, "NO_COLOR=1");
    let screen = t.wait_for("Objects 9/9");
    assert!(screen.contains("? help"), "{screen}");
    assert_eq!(screen.lines().count(), 24, "{screen}");
    // Walk through the screens a small terminal has to fit: the help, the
    // field pane, the YAML view, the apply and prune popups.
    // An Escape is sent on its own and awaited: followed at once by another
    // key it would read as Alt+key, as in any terminal.
    type Check = fn(&str) -> bool;
    let steps: [(&[&str], &str, Check); 10] = [
        (&["?"], "the help", |s| s.contains("┌ Keys")),
        (&["Escape"], "the help to close", |s| !s.contains("┌ Keys")),
        // The cursor opens on the first change: g goes to the top first.
        (&["g", "j", "j", "j", "j"], "the Deployment", |s| {
            s.contains("Deployment demo/nginx-depl")
        }),
        (&["Tab"], "the field pane to take focus", |s| {
            list_width(s) == 20 && field_heading(s).is_some()
        }),
        (&["y"], "the YAML view", |s| s.contains("yaml: live")),
        (&["y"], "the field view", |s| !s.contains("yaml: live")),
        (&["Tab", "a"], "the apply popup with the dry run", |s| {
            s.contains("Confirm apply") && s.contains("(server dry run)")
        }),
        (&["Escape"], "the apply popup to close", |s| {
            !s.contains("Confirm apply")
        }),
        (&["p"], "the prune popup", |s| s.contains("Candidate 1/1")),
        (&["Escape"], "the prune popup to close", |s| {
            !s.contains("Candidate 1/1")
        }),
    ];
    for (keys, what, check) in steps {
        t.keys(keys);
        let screen = t.wait_until(what, check);
        if let Some(sgr) = sets_a_colour(&t.screen_with_attributes()) {
            panic!("NO_COLOR is set, yet {sgr} sets a colour:\n{screen}");
        }
    }
    // Marks still show without colour.
    let screen = t.screen();
    assert!(screen.contains("~ Deployment/"), "{screen}");
    assert!(screen.contains("- ConfigMap/old-settings"), "{screen}");
    quit_and_check_restored(&t);
}

/// At 80x24 the image row shows both versions whole, and the ConfigMap the
/// demo edited with `kubectl edit` reads as drift: its list row, the field
/// pane's head, the row's mark and the detail naming the writer.
#[test]
fn values_and_drift_read_at_80x24() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("drift", 80, 24);
    start_demo(&t, "");
    t.wait_for("Objects 9/9");
    t.keys(&["/"]);
    t.type_text("nginx-deployment");
    t.keys(&["Enter"]);
    t.wait_for("Objects 1/9");
    t.keys(&["Escape"]);
    t.wait_for("Objects 9/9");
    switch_focus(&t);
    // The values wrap after `nginx:` beside the action column: whole.
    let image_row = |s: &str| {
        let lines: Vec<&str> = s.lines().collect();
        let i = lines
            .iter()
            .position(|l| l.contains(" image ") && l.matches("nginx:").count() == 3)?;
        let next = lines.get(i + 1)?;
        (next.matches("1.14.2").count() == 2 && next.contains("1.16.1"))
            .then(|| lines[i].to_string())
    };
    let screen = t.wait_until("the image row's values", |s| image_row(s).is_some());
    let row = image_row(&screen).unwrap();
    assert!(row.contains(" set "), "the action shows:\n{screen}");
    assert!(!screen.contains("ngi…"), "{screen}");
    switch_focus(&t);

    t.keys(&["/"]);
    t.type_text("demo/settings");
    t.keys(&["Enter"]);
    let screen = t.wait_for("ConfigMap demo/settings · fields");
    // The list row carries the mark (no room for the words at 80 columns).
    assert!(screen.contains("~ ↺ConfigMap/settings"), "{screen}");
    assert!(screen.contains("update  ↺ reverts drift"), "{screen}");
    let row = screen
        .lines()
        .find(|l| l.contains(" LOG_LEVEL "))
        .unwrap_or_else(|| panic!("no LOG_LEVEL row:\n{screen}"));
    assert!(row.contains("■↺ "), "the drift mark:\n{screen}");
    assert!(row.contains("info") && row.contains("debug"), "{screen}");
    switch_focus(&t);
    let screen = select_field(&t, "set data.LOG_LEVEL");
    assert!(
        screen.contains("drift: changed by kubectl-edit at "),
        "the detail names the writer:\n{screen}"
    );
    assert!(screen.contains("apply reverts it"), "{screen}");
    quit_and_check_restored(&t);
}

/// A signal that ends the TUI (SIGTERM, SIGHUP, SIGINT, SIGQUIT) restores
/// the terminal, exits with the shell's code for it (128 + n) and removes
/// the demo's temporary directory.
#[test]
fn signals_restore_the_terminal_and_remove_the_demo_dir() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("signals", 100, 30);
    let tmp = t.path("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let bin = env!("CARGO_BIN_EXE_kapply");
    t.wait_for(PROMPT);
    for (signal, code) in [("TERM", 143), ("HUP", 129), ("INT", 130), ("QUIT", 131)] {
        let pidfile = t.path(&format!("{signal}.pid"));
        let script = t.path(&format!("{signal}.sh"));
        // The inner shell writes its pid, then becomes kapply (exec).
        std::fs::write(
            &script,
            format!(
                "TMPDIR='{tmp}' sh -c 'echo $$ > \"$1\"; exec \"$0\" demo --kubeconfig-out \"$2\"' \
                 '{bin}' '{pid}' '{kc}'\n\
                 echo \"KAPPLY-EXIT=$?\"\n\
                 stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo \
                 | tr '\\n' ' ' | sed 's/^/TTY: /'\n\
                 echo\n",
                tmp = tmp.display(),
                pid = pidfile.display(),
                kc = t.path(&format!("{signal}.kubeconfig")).display(),
            ),
        )
        .unwrap();
        t.type_text(&format!("clear; sh '{}'", script.display()));
        t.keys(&["Enter"]);
        t.wait_for("Objects 9/9");
        assert_eq!(t.display("#{alternate_on}"), "1", "the TUI runs");
        assert_eq!(t.display("#{mouse_any_flag}"), "1", "with the mouse");
        let dirs = |what: &str| -> Vec<String> {
            std::fs::read_dir(&tmp)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(what))
                .collect()
        };
        assert_eq!(dirs("kapply-demo-").len(), 1, "the demo's directory");
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), pid.trim()])
            .status()
            .unwrap();
        assert!(sent.success());
        check_restored(&t, code);
        assert!(
            dirs("kapply-demo-").is_empty(),
            "SIG{signal} left the demo directory behind: {:?}",
            dirs("")
        );
    }
}

/// A runtime for the fault servers of the tests below (they run on its
/// worker threads while the test drives tmux).
fn fault_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  k: v\n";

/// Against a server that accepts connections and never answers, the TUI
/// opens at once with the manifests listed, says what it waits for (the
/// URL, the context, the seconds), and `q` ends it at once, the terminal
/// restored, although the request is still out.
#[test]
fn a_silent_server_shows_the_manifests_and_q_quits_at_once() {
    if !tmux_available() {
        return;
    }
    let rt = fault_runtime();
    let url = rt.block_on(faults::silent());
    let t = Tmux::start("silent", 80, 24);
    let kubeconfig = t.path("kubeconfig");
    faults::write_kubeconfig(&kubeconfig, &url, "silent-ctx");
    std::fs::write(t.path("cm.yaml"), CM).unwrap();
    t.wait_for(PROMPT);
    let started = Instant::now();
    // A limit far longer than the test: nothing may wait for it.
    start_kapply(
        &t,
        &format!(
            "'{{bin}}' --kubeconfig '{}' -f '{}' --request-timeout 5m",
            kubeconfig.display(),
            t.path("cm.yaml").display()
        ),
    );
    let screen = t.wait_for("ConfigMap/settings");
    let shown_after = started.elapsed();
    eprintln!("the list showed after {shown_after:?}");
    assert!(
        shown_after < Duration::from_secs(10),
        "the list took {shown_after:?}:\n{screen}"
    );
    assert!(screen.contains("live state loading"), "{screen}");
    assert!(screen.contains("? ConfigMap/settings"), "{screen}");
    let status = |s: &str| s.lines().last().unwrap_or("").to_string();
    assert!(
        status(&screen).contains(&format!("connecting to {url} (context silent-ctx) · ")),
        "the status line names what it waits for:\n{screen}"
    );
    // The seconds move with the tick.
    let screen = t.wait_until("the seconds to count", |s| {
        s.lines().last().is_some_and(|l| l.contains(" · 2 s"))
    });
    assert!(screen.contains("step    connecting"), "{screen}");
    let quit = Instant::now();
    t.keys(&["q"]);
    check_restored(&t, 0);
    let took = quit.elapsed();
    eprintln!("q ended kapply after {took:?}");
    assert!(
        took < Duration::from_secs(5),
        "q took {took:?} to end kapply"
    );
}

/// A server that refuses the credentials: the message names the context
/// and says so, in place; once the server accepts them, `r` connects again
/// and the plan shows.
#[test]
fn refused_credentials_show_in_place_and_r_retries() {
    if !tmux_available() {
        return;
    }
    use std::sync::atomic::{AtomicBool, Ordering};
    let rt = fault_runtime();
    let refuse = std::sync::Arc::new(AtomicBool::new(true));
    let r = refuse.clone();
    let f = rt.block_on(faults::Faulty::start(move |_| {
        if r.load(Ordering::SeqCst) {
            faults::Action::Status(401, "Unauthorized".into())
        } else {
            faults::Action::Serve
        }
    }));
    let t = Tmux::start("refused", 80, 24);
    let kubeconfig = t.path("kubeconfig");
    faults::write_kubeconfig(&kubeconfig, &f.url, "refused-ctx");
    std::fs::write(t.path("cm.yaml"), CM).unwrap();
    start_kapply(
        &t,
        &format!(
            "'{{bin}}' --kubeconfig '{}' -f '{}'",
            kubeconfig.display(),
            t.path("cm.yaml").display()
        ),
    );
    let screen = t.wait_for("r retries");
    let pane: String = screen
        .lines()
        .filter_map(|l| {
            l.split_once("││")
                .map(|(_, r)| r.trim_end_matches('│').trim())
        })
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        pane.contains(&format!(
            "the server at {} refused the credentials of context \"refused-ctx\"",
            f.url
        )),
        "{screen}"
    );
    assert!(screen.contains("live state unknown"), "{screen}");
    // Nothing destructive while no live state is known.
    t.keys(&["a"]);
    t.wait_for("apply needs the live state");
    let seen = f.requests_seen();
    refuse.store(false, Ordering::SeqCst);
    t.keys(&["r"]);
    let screen = t.wait_for("+1 create");
    assert!(f.requests_seen() > seen, "r sent requests again");
    assert!(screen.contains("+ ConfigMap/settings"), "{screen}");
    assert!(!screen.contains("Live state"), "{screen}");
    quit_and_check_restored(&t);
}

/// As k9s and lazygit users expect: Esc with an object marked does not
/// quit (it goes back), q asks first and `n` stays, `e` opens `$EDITOR` at
/// the object's line in the terminal and the TUI comes back reloaded with
/// the edit, and `q`, `y` quits with the terminal restored. The header
/// names the demo's context, server and namespace all along.
#[test]
fn esc_goes_back_q_asks_and_e_edits() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("escq", 80, 24);
    // The "editor": records its arguments, then changes the manifest.
    let editor = t.path("editor.sh");
    let args = t.path("editor-args");
    std::fs::write(
        &editor,
        format!(
            "#!/bin/sh\necho \"$@\" > '{}'\nsed -i 's/LOG_LEVEL: info/LOG_LEVEL: trace/' \"$2\"\n",
            args.display()
        ),
    )
    .unwrap();
    start_demo(&t, &format!("VISUAL= EDITOR='sh {}'", editor.display()));
    let screen = t.wait_for("Objects 9/9");
    let head = screen.lines().next().unwrap_or_default();
    assert!(
        head.starts_with("kapply  context kapply-demo  server http://127.0.0.1:")
            && head.ends_with("namespace default"),
        "{screen}"
    );
    // The demo server's token, in its URL's path, is not shown.
    assert!(!screen.contains("kapply-token"), "{screen}");
    // The cursor opens on the first change, the drifted ConfigMap.
    let screen = t.wait_for("ConfigMap demo/settings · fields");
    // Mark it, then Esc twice: still here, the mark kept.
    t.keys(&["Space"]);
    t.wait_for("●1 marked");
    // (the counts keep their words beside "watching" at 80 columns)
    t.keys(&["Escape"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    t.keys(&["Escape"]);
    let screen2 = t.wait_until("Esc to go back, not quit", |s| s.contains("q quits"));
    assert!(screen2.contains("●1 marked"), "{screen2}\n{screen}");
    // q asks; n stays.
    t.keys(&["q"]);
    t.wait_for("Quit kapply? 1 object(s) marked for apply are dropped.");
    t.keys(&["n"]);
    t.wait_until("the question to close", |s| !s.contains("Quit kapply?"));
    // e: the editor runs on the manifest at the object's line; back in the
    // TUI, the plan is read again with the edit.
    t.keys(&["e"]);
    let screen = t.wait_until("the edit to be reloaded", |s| {
        s.lines()
            .any(|l| l.contains(" LOG_LEVEL ") && l.contains("trace"))
    });
    assert!(
        screen.contains("ConfigMap demo/settings · fields"),
        "{screen}"
    );
    let recorded = std::fs::read_to_string(&args).unwrap();
    assert!(
        recorded.trim_end().starts_with("+2 ")
            && recorded
                .trim_end()
                .ends_with("manifests/02-configmap-settings.yaml"),
        "{recorded}"
    );
    t.keys(&["q"]);
    t.wait_for("Quit kapply?");
    t.keys(&["y"]);
    check_restored(&t, 0);
}

/// `kapply apply` on a terminal: the progress line (stderr) is gone before
/// the first output line and the y/N prompt, which is the last line on the
/// screen and waits; `n` applies nothing.
#[test]
fn apply_prompt_is_the_last_line_and_waits() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("prompt", 100, 40);
    let log = t.path("demo.log");
    let kubeconfig = t.path("kubeconfig");
    start_kapply(
        &t,
        &format!(
            "'{{bin}}' demo --no-tui --kubeconfig-out '{kc}' > '{log}' 2>&1 & D=$!\n\
             while ! grep -q 'serving until' '{log}'; do sleep 0.1; done\n\
             M=$(sed -n 's/^manifests: *//p' '{log}')\n\
             '{{bin}}' apply --kubeconfig '{kc}' -f \"$M\"; s=$?; kill $D; wait $D; (exit $s)",
            kc = kubeconfig.display(),
            log = log.display()
        ),
    );
    let screen = t.wait_for("[y/N]");
    // Give a late progress message the time to show, were it to.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let screen2 = t.screen();
    let last = screen2
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    assert!(last.trim_end().ends_with("[y/N]"), "{screen2}\n{screen}");
    assert!(!screen2.contains("reading live state"), "{screen2}");
    // Each output line starts clean: nothing glued before its mark.
    for l in screen2
        .lines()
        .filter(|l| l.contains("Deployment demo/nginx"))
    {
        assert!(!l.contains("live state"), "{l}");
    }
    t.keys(&["n", "Enter"]);
    check_restored(&t, 1);
}

/// The TUI follows the cluster: open on the demo, it says `watching`; a
/// `kubectl set image` made while it is open is planned again at once and
/// said on the status line and in the field pane, with no key pressed.
#[test]
fn a_kubectl_change_shows_while_the_tui_is_open() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("watch", 120, 30);
    let kubeconfig = start_demo(&t, "");
    t.wait_for("Objects 9/9");
    t.wait_for("watching");
    let Some(k) = Kubectl::find(&kubeconfig) else {
        quit_and_check_restored(&t);
        return;
    };
    k.ok(&[
        "-n",
        "demo",
        "set",
        "image",
        "deploy/nginx-deployment",
        "nginx=nginx:1.14-hotfix",
    ]);
    let screen = t.wait_for("Deployment demo/nginx-deployment changed in the cluster at");
    assert!(screen.contains("watching"), "{screen}");
    t.keys(&["/"]);
    t.type_text("nginx-deployment");
    t.keys(&["Enter"]);
    let screen = t.wait_for("Δ changed in the cluster at");
    assert!(
        screen.contains("1.14-hotfix"),
        "the new live value shows:\n{screen}"
    );
    quit_and_check_restored(&t);
}
