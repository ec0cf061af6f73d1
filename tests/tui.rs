//! The TUI, driven by key events through `App::update` and rendered whole on
//! ratatui's TestBackend. No engine: the plan is built by hand
//! (tests/tui_fixture), effects are checked as data.

#[path = "common/kubectl.rs"]
mod kubectl;
#[path = "common/real.rs"]
mod real;
#[path = "common/server.rs"]
mod server;
mod tui_fixture;

use tui_fixture::{buffer, code, key, outcome, result, select};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use kapply::ops::{Failure, ObjectResult, Outcome, Progress, Propagation};
use kapply::tui::app::{Confirmed, Effect, Msg, Popup};
use kapply::tui::{App, Options};
use ratatui::style::Color;

fn app_with(opts: Options, w: u16, h: u16) -> App {
    let mut app = App::new(opts);
    app.clock = || "12:34:56".to_string();
    // The header names the cluster at all times.
    app.conn.server = Some(kapply::ops::Server {
        url: "https://10.0.0.1:6443".into(),
        context: "prod".into(),
        namespace: "default".into(),
    });
    app.update(Msg::Resize(w, h));
    let start = app.start();
    assert!(matches!(
        start.as_slice(),
        [Effect::ReadManifests, Effect::Connect]
    ));
    let after = app.update(Msg::Loaded(Ok(tui_fixture::plan())));
    // Once live state is read, the app follows the cluster from there.
    assert!(matches!(after.as_slice(), [Effect::Watch(1)]), "{after:?}");
    app
}

fn app(w: u16, h: u16) -> App {
    app_with(Options::default(), w, h)
}

/// Feed messages; return every effect produced, in order.
fn feed(app: &mut App, msgs: impl IntoIterator<Item = Msg>) -> Vec<Effect> {
    msgs.into_iter().flat_map(|m| app.update(m)).collect()
}

fn keys(s: &str) -> Vec<Msg> {
    s.chars().map(key).collect()
}

/// The frame as text, uids and clock times masked.
fn screen(app: &App) -> String {
    mask(&tui_fixture::text(app))
}

/// Replace uuids with `<uid>` and HH:MM:SS clock times with `<time>`.
fn mask(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let is_uuid = |w: &[char]| {
        w.len() == 36
            && w.iter().enumerate().all(|(j, c)| {
                if [8, 13, 18, 23].contains(&j) {
                    *c == '-'
                } else {
                    c.is_ascii_hexdigit()
                }
            })
    };
    let is_time = |w: &[char]| {
        w.len() == 8
            && w.iter().enumerate().all(|(j, c)| {
                if j == 2 || j == 5 {
                    *c == ':'
                } else {
                    c.is_ascii_digit()
                }
            })
    };
    while i < chars.len() {
        if i + 36 <= chars.len() && is_uuid(&chars[i..i + 36]) {
            out.push_str("<uid>");
            i += 36;
        } else if i + 8 <= chars.len()
            && is_time(&chars[i..i + 8])
            && (i == 0 || !chars[i - 1].is_ascii_digit())
        {
            out.push_str("<time>");
            i += 8;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

// ---------- screens ----------

/// The server's dry run answers for the open apply dialog: every item ok.
fn answer_dry_run(app: &mut App) {
    let Some(Confirmed::Apply(items)) = app.confirming() else {
        panic!("no apply dialog: {:?}", app.popup)
    };
    let results = items
        .iter()
        .map(|i| {
            result(
                &i.plan.id().to_string(),
                true,
                "configured (server dry run)",
            )
        })
        .collect();
    app.update(Msg::DryRunDone(results));
}

#[test]
fn list_80x24() {
    let mut a = app(80, 24);
    select(&mut a, "nginx-deployment");
    insta::assert_snapshot!("list_80x24", screen(&a));
}

#[test]
fn list_160x40() {
    let mut a = app(160, 40);
    select(&mut a, "nginx-deployment");
    insta::assert_snapshot!("list_160x40", screen(&a));
}

#[test]
fn loading_with_progress() {
    let mut a = App::new(Options::default());
    a.update(Msg::Resize(80, 24));
    a.start();
    // Connected: the first load runs; its progress shows in the pane.
    a.update(Msg::Connected(Ok(())));
    a.update(Msg::Progress(Progress {
        done: 3,
        total: 7,
        lists: 0,
        what: "GET Deployment default/nginx".to_string(),
    }));
    let s = screen(&a);
    assert!(s.contains("loading 3/7 from the server"), "{s}");
    assert!(s.contains("GET Deployment default/nginx (3/7)"), "{s}");
    insta::assert_snapshot!("loading", s);
    // A reload once live state is known says the same on the status line.
    a.update(Msg::Loaded(Ok(tui_fixture::plan())));
    a.update(key('r'));
    a.update(Msg::Progress(Progress {
        done: 3,
        total: 7,
        lists: 0,
        what: "GET Deployment default/nginx".to_string(),
    }));
    let s = screen(&a);
    assert!(
        s.contains("loading 3/7 GET Deployment default/nginx"),
        "{s}"
    );
}

#[test]
fn field_view_with_excluded_change() {
    let mut a = app(140, 30);
    select(&mut a, "nginx-deployment");
    // Tab into the field pane, go to the image change and exclude it.
    // Changes come first: row 1 is the image (row 0 the minReadySeconds clear).
    feed(&mut a, [code(KeyCode::Tab), key('j'), key(' ')]);
    let s = screen(&a);
    // Kept rows are hidden; the title counts them.
    assert!(!s.contains("spec.replicas"), "{s}");
    assert!(s.contains("· 3 kept hidden (K)"), "{s}");
    // The path as a tree: the common prefix once, the field under it.
    assert!(s.contains("│  spec "), "{s}");
    assert!(
        s.contains("│    template.spec.containers[name=nginx] "),
        "{s}"
    );
    assert!(s.contains("│□     image "), "{s}");
    insta::assert_snapshot!("fields_excluded", s);
    // K shows them, the cursor staying on the image.
    feed(&mut a, [key('K')]);
    let s = screen(&a);
    assert!(s.contains("set spec.template.spec.containers[name=nginx].image"));
    assert!(
        s.contains("replicas") && s.contains("keep  kept: another writer"),
        "{s}"
    );
    assert!(s.contains("── kept: 3 field(s)"), "{s}");
    // The box under the table shows the selected field whole.
    feed(&mut a, [key('g'), key('j'), key('j')]);
    let s = screen(&a);
    assert!(s.contains("keep spec.progressDeadlineSeconds"), "{s}");
    assert!(
        s.contains("kept: another writer owns it (kube-controller-manager) "),
        "{s}"
    );
}

#[test]
fn field_view_80x24() {
    let mut a = app(80, 24);
    select(&mut a, "nginx-deployment");
    feed(
        &mut a,
        [code(KeyCode::Enter), key('K'), key('j'), key('j'), key('j')],
    );
    insta::assert_snapshot!("fields_80x24", screen(&a));
}

/// The demo's image row: both versions read whole at 80x24 (a value that
/// does not fit wraps after a separator, never cut, even with the action
/// column beside it), and the characters that differ are emphasised.
#[test]
fn image_values_read_whole_at_every_size() {
    for (w, h) in [(80, 24), (120, 40), (200, 60)] {
        let mut a = app(w, h);
        select(&mut a, "nginx-deployment");
        // The list has focus: the field pane is narrowest.
        let s = screen(&a);
        assert!(!s.contains("ngi…"), "{w}x{h}:\n{s}");
        // At 80 columns (46 or 58 for the table, the action column
        // beside): the values wrap after `nginx:`.
        let wrapped = |s: &str| {
            let lines: Vec<&str> = s.lines().collect();
            let i = lines
                .iter()
                .position(|l| l.matches("nginx:").count() == 3)
                .unwrap_or_else(|| panic!("{s}"));
            assert!(lines[i].contains(" set "), "{s}");
            let next: Vec<&str> = lines[i + 1].split_whitespace().collect();
            assert!(next.ends_with(&["1.14.2", "1.14.2", "1.16.1", "│"]), "{s}");
        };
        if w == 80 {
            wrapped(&s);
        } else {
            assert!(s.contains("nginx:1.14.2 nginx:1.14.2 nginx:1.16.1"), "{s}");
        }
        feed(&mut a, [code(KeyCode::Tab)]);
        let s = screen(&a);
        if w == 80 {
            wrapped(&s);
        } else {
            assert!(
                s.contains("image         nginx:1.14.2 nginx:1.14.2 nginx:1.16.1"),
                "{w}x{h}:\n{s}"
            );
        }
        insta::assert_snapshot!(format!("fields_tree_{w}x{h}"), s);
        // The differing characters are bold and underlined (colour or not).
        let buf = buffer(&a);
        let y = (0..h)
            .find(|&y| row_text(&buf, y).contains("image "))
            .unwrap();
        let line = row_text(&buf, y);
        let x0 = line.chars().position(|c| c == 'n').unwrap() as u16;
        // Read down the columns: a wrapped value's versions are on the
        // row's second line.
        let emphasised: String = (x0..w)
            .flat_map(|x| [(x, y), (x, y + 1)])
            .filter(|&at| {
                let m = buf[at].modifier;
                m.contains(ratatui::style::Modifier::UNDERLINED)
                    && m.contains(ratatui::style::Modifier::BOLD)
            })
            .map(|at| buf[at].symbol().to_string())
            .collect();
        assert_eq!(emphasised, "424261", "{w}x{h}: {line}");
    }
}

fn row_text(buf: &ratatui::buffer::Buffer, y: u16) -> String {
    (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect()
}

/// A plan with an object edited in the cluster: two of its rows revert a
/// drift.
fn drift_app(opts: Options, w: u16, h: u16) -> App {
    let mut a = App::new(opts);
    a.clock = || "12:34:56".to_string();
    a.update(Msg::Resize(w, h));
    a.start();
    a.update(Msg::Loaded(Ok(kapply::plan::Plan {
        objects: vec![tui_fixture::deployment(), tui_fixture::configmap_drift()],
        ..Default::default()
    })));
    select(&mut a, "settings");
    a
}

#[test]
fn drift_rows_stand_out() {
    let mut a = drift_app(Options::default(), 160, 40);
    let s = screen(&a);
    // The list row and the pane's head say it.
    assert!(s.contains("~ ConfigMap/settings ↺ reverts drift"), "{s}");
    assert!(s.contains("update  ↺ reverts drift"), "{s}");
    // Each drift row: its mark, and the reason names the writer and time.
    for key in ["LOG_LEVEL", "MODE"] {
        let line = s
            .lines()
            .find(|l| l.contains(&format!("   {key} ")))
            .unwrap();
        assert!(line.contains("■↺ "), "{line}");
    }
    assert!(
        s.contains("drift: changed by kubectl-edit at 2026-11-20T<time>Z; a"),
        "{s}"
    );
    let workers = s.lines().find(|l| l.contains("WORKERS")).unwrap();
    assert!(
        workers.contains("■  "),
        "intended, no drift mark: {workers}"
    );
    insta::assert_snapshot!("fields_drift", s);
    // Drift rows have their own colour.
    let buf = buffer(&a);
    let y = (0..40)
        .find(|&y| row_text(&buf, y).contains("LOG_LEVEL"))
        .unwrap();
    let x = row_text(&buf, y).find("LOG_LEVEL").unwrap();
    let x = row_text(&buf, y)[..x].chars().count() as u16;
    assert_eq!(buf[(x, y)].fg, Color::LightMagenta);
    let y = (0..40)
        .find(|&y| row_text(&buf, y).contains("WORKERS"))
        .unwrap();
    let x = row_text(&buf, y).find("WORKERS").unwrap();
    let x = row_text(&buf, y)[..x].chars().count() as u16;
    assert_eq!(buf[(x, y)].fg, Color::Green);

    // n / N in the field pane move between drift rows only.
    feed(&mut a, [code(KeyCode::Tab)]);
    let path = |a: &App| {
        let o = a.selected().unwrap();
        kapply::tui::app::field_rows(o, a.detail.show_kept)[a.sel.field_cursor]
            .path
            .clone()
    };
    assert_eq!(path(&a), "data.LOG_LEVEL");
    feed(&mut a, [key('n')]);
    assert_eq!(path(&a), "data.MODE");
    feed(&mut a, [key('n')]);
    assert_eq!(path(&a), "data.MODE", "no drift row after MODE");
    assert!(
        a.last_result
            .as_deref()
            .unwrap()
            .contains("no drift row after")
    );
    feed(&mut a, [key('G'), key('N')]);
    assert_eq!(path(&a), "data.MODE");
    feed(&mut a, [key('N')]);
    assert_eq!(path(&a), "data.LOG_LEVEL");
    // In the list, n / N still move between changed objects.
    feed(&mut a, [code(KeyCode::Tab), key('N')]);
    assert_eq!(a.selected().unwrap().name, "nginx-deployment");
}

#[test]
fn drift_mark_shows_without_colour() {
    let a = drift_app(
        Options {
            color: false,
            ..Options::default()
        },
        80,
        24,
    );
    let s = screen(&a);
    assert!(s.contains("~ ↺ConfigMap/settings"), "{s}");
    assert!(s.contains("↺ reverts drift"), "{s}");
    let line = s.lines().find(|l| l.contains(" LOG_LEVEL ")).unwrap();
    assert!(line.contains("■↺ "), "{line}");
    let buf = buffer(&a);
    for cell in buf.content() {
        assert_eq!(cell.fg, Color::Reset);
    }
}

/// `K` hides and shows the kept rows; an object with only kept rows says
/// how to see them.
#[test]
fn kept_rows_toggle() {
    let mut a = app(120, 40);
    select(&mut a, "nginx-deployment");
    assert!(screen(&a).contains("3 kept hidden (K)"));
    assert_eq!(
        kapply::tui::app::field_rows(a.selected().unwrap(), a.detail.show_kept).len(),
        2
    );
    feed(&mut a, [key('K')]);
    assert!(a.detail.show_kept);
    let s = screen(&a);
    assert!(!s.contains("kept hidden"), "{s}");
    assert!(s.contains("revisionHistoryLimit"), "{s}");
    feed(&mut a, [key('K')]);
    assert!(!screen(&a).contains("revisionHistoryLimit"));
}

#[test]
fn secret_is_masked() {
    let mut a = app(120, 30);
    select(&mut a, "db-credentials");
    let s = screen(&a);
    assert!(
        !s.contains("correct-horse") && !s.contains("hunter2") && !s.contains("YWRtaW4"),
        "{s}"
    );
    assert!(s.contains("***"), "{s}");
    assert!(s.contains("stringData is re-sent"), "{s}");
    insta::assert_snapshot!("secret", s);
    feed(&mut a, [key('y')]);
    let y = screen(&a);
    assert!(
        !y.contains("correct-horse") && !y.contains("aHVudGVyMg"),
        "{y}"
    );
    insta::assert_snapshot!("secret_yaml", y);
}

/// A Secret value the apply changes shows as changed in the YAML view
/// (`*** (before)` / `*** (after)`), never in clear; an unchanged value shows `***`.
#[test]
fn yaml_view_marks_changed_secret_values() {
    let mut o = tui_fixture::secret();
    o.patch = Some(kapply::merge::Patch {
        kind: kapply::merge::PatchType::Strategic,
        body: serde_json::json!({"data": {"password": "Y29ycmVjdC1ob3JzZQ=="}}),
    });
    let (before, after) = kapply::tui::yamlview::texts(&o);
    assert!(before.contains("password: \"*** (before)\""), "{before}");
    assert!(after.contains("password: \"*** (after)\""), "{after}");
    assert!(before.contains("user: \"***\"") && after.contains("user: \"***\""));
    let mut a = App::new(Options::default());
    a.clock = || "12:34:56".to_string();
    a.update(Msg::Resize(120, 30));
    a.start();
    a.update(Msg::Loaded(Ok(kapply::plan::Plan {
        objects: vec![o],
        ..Default::default()
    })));
    feed(&mut a, [key('y')]);
    let s = screen(&a);
    assert!(
        !s.contains("aHVudGVyMg") && !s.contains("Y29ycmVjdC1ob3JzZQ") && !s.contains("YWRtaW4"),
        "{s}"
    );
    let marked = |sign: &str, token: &str| {
        s.lines()
            .any(|l| l.contains(&format!("{sign}   password: \"{token}\"")))
    };
    assert!(
        marked("-", "*** (before)") && marked("+", "*** (after)"),
        "{s}"
    );
}

#[test]
fn error_object_shows_message() {
    let mut a = app(100, 24);
    select(&mut a, "thing");
    let s = screen(&a);
    assert!(s.contains("error: no matches for kind \"Widget\""), "{s}");
    insta::assert_snapshot!("error_object", s);
}

/// An object whose last-applied annotation would pass the API server's
/// limit on annotations is an error row in the TUI too, saying why, and
/// `a` on it sends nothing (not even a dry run).
#[test]
fn an_object_too_large_for_client_side_apply_is_an_error_row() {
    let text = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: default\ndata:\n  blob: {}\n",
        "x".repeat(270_000)
    );
    let loaded =
        kapply::manifest::parse_str(&text, std::path::Path::new("big.yaml"), &Default::default());
    let big = kapply::plan::plan_object(&loaded.manifests[0], None, &Default::default());
    let mut a = App::new(Options::default());
    a.update(Msg::Resize(120, 30));
    a.start();
    a.update(Msg::Loaded(Ok(kapply::plan::Plan {
        objects: vec![big],
        prune_skipped: None,
    })));
    select(&mut a, "big");
    let s = screen(&a);
    assert!(s.contains("too large for client-side apply"), "{s}");
    let eff = feed(&mut a, [key('a')]);
    assert!(
        !eff.iter().any(|e| matches!(e, Effect::DryRun(_))),
        "{eff:?}"
    );
}

#[test]
fn yaml_view() {
    let mut a = app(120, 40);
    select(&mut a, "nginx-deployment");
    feed(&mut a, [key('y')]);
    let s = screen(&a);
    assert!(s.contains("- ") && s.contains("+ "), "{s}");
    assert!(
        s.contains("nginx:1.16.1") && s.contains("nginx:1.14.2"),
        "{s}"
    );
    // minReadySeconds is cleared: only on the live side.
    assert!(
        s.contains("-     minReadySeconds: 5") || s.contains("-   minReadySeconds: 5"),
        "{s}"
    );
    insta::assert_snapshot!("yaml_view", s);
}

#[test]
fn group_by_kind() {
    let mut a = app(80, 24);
    feed(&mut a, [key('t')]);
    insta::assert_snapshot!("group_by_kind", screen(&a));
}

#[test]
fn help_overlay() {
    let mut a = app(160, 60);
    feed(&mut a, [key('?')]);
    let s = screen(&a);
    for b in kapply::tui::keymap::BINDINGS {
        assert!(s.contains(b.label), "help lacks {}", b.label);
    }
    insta::assert_snapshot!("help", s);
    feed(&mut a, [code(KeyCode::Esc)]);
    assert!(a.popup.is_none());
}

#[test]
fn search_is_incremental() {
    let mut a = app(80, 24);
    feed(&mut a, [key('/')]);
    feed(&mut a, keys("conf"));
    let s = screen(&a);
    assert!(
        s.contains("ConfigMap/app-config") && s.contains("ConfigMap/old-config"),
        "{s}"
    );
    assert!(!s.contains("Deployment/nginx"), "{s}");
    insta::assert_snapshot!("search", s);
    // Search by namespace, then Esc clears it.
    feed(&mut a, (0..4).map(|_| code(KeyCode::Backspace)));
    feed(&mut a, keys("demo/"));
    assert_eq!(a.list.rows.len(), 2, "group + the Secret in demo");
    feed(&mut a, [code(KeyCode::Esc)]);
    assert!(a.list.search.is_empty());
    assert_eq!(
        a.list
            .rows
            .iter()
            .filter(|r| matches!(r, kapply::tui::app::Row::Object(_)))
            .count(),
        7
    );
}

#[test]
fn status_filter_cycles() {
    let mut a = app(80, 24);
    feed(&mut a, [key('f')]); // changes
    let s = screen(&a);
    assert!(s.contains("changes"));
    assert!(!s.contains("Service/nginx"), "{s}");
    insta::assert_snapshot!("filter_changes", s);
    feed(&mut a, [key('f'), key('f'), key('f'), key('f')]); // create, update, in sync, prune
    let s = screen(&a);
    assert!(
        s.contains("ConfigMap/old-config") && !s.contains("app-config"),
        "{s}"
    );
}

#[test]
fn apply_confirm_and_dry_run() {
    let mut a = app(80, 24);
    select(&mut a, "nginx-deployment");
    let eff = feed(&mut a, [key('a')]);
    assert!(matches!(eff.as_slice(), [Effect::DryRun(items)] if items.len() == 1));
    insta::assert_snapshot!("apply_confirm_pending", screen(&a));
    feed(
        &mut a,
        [Msg::DryRunDone(vec![result(
            "Deployment default/nginx-deployment",
            true,
            "configured (server dry run)",
        )])],
    );
    let s = screen(&a);
    assert!(
        s.contains("✓ Deployment default/nginx-deployment: configured (server dry run)"),
        "{s}"
    );
    insta::assert_snapshot!("apply_confirm_dry_run", s);
}

#[test]
fn enter_waits_for_the_dry_run_and_r_asks_again() {
    let mut a = app(80, 24);
    select(&mut a, "nginx-deployment");
    feed(&mut a, [key('a')]);
    // Pending: Enter sends nothing and the dialog stays.
    let eff = feed(&mut a, [code(KeyCode::Enter)]);
    assert!(eff.is_empty(), "{eff:?}");
    assert!(
        matches!(&a.popup, Some(Popup::Confirm(c)) if matches!(c.action, Confirmed::Apply(_)) && c.waiting())
    );
    assert!(screen(&a).contains("Enter waits for the dry run"));
    // A refusal is shown first, with a retry.
    feed(
        &mut a,
        [Msg::DryRunDone(vec![result(
            "Deployment default/nginx-deployment",
            false,
            "cannot reach the Kubernetes API server",
        )])],
    );
    let s = screen(&a);
    assert!(s.contains("✗ Deployment default/nginx-deployment"), "{s}");
    assert!(s.contains("r retry dry run"), "{s}");
    let eff = feed(&mut a, [key('r')]);
    assert!(
        matches!(eff.as_slice(), [Effect::DryRun(items)] if items.len() == 1),
        "{eff:?}"
    );
    assert!(
        matches!(&a.popup, Some(Popup::Confirm(c)) if matches!(c.action, Confirmed::Apply(_)) && c.waiting())
    );
    answer_dry_run(&mut a);
    let eff = feed(&mut a, [code(KeyCode::Enter)]);
    assert!(
        matches!(eff.as_slice(), [Effect::Apply(items)] if items.len() == 1),
        "{eff:?}"
    );
}

/// An apply under way says how many of its objects are done, as the
/// engine reports them; the count goes once the results are in, and a
/// count that trails them is not shown.
#[test]
fn an_apply_under_way_shows_its_progress() {
    let mut a = app(100, 24);
    select(&mut a, "nginx-deployment");
    feed(&mut a, [key('a')]);
    answer_dry_run(&mut a);
    let eff = feed(&mut a, [code(KeyCode::Enter)]);
    assert!(matches!(eff.as_slice(), [Effect::Apply(_)]), "{eff:?}");
    feed(&mut a, [Msg::WriteProgress { done: 0, total: 1 }]);
    assert!(screen(&a).contains("applying 0/1"), "{}", screen(&a));
    feed(&mut a, [Msg::WriteProgress { done: 1, total: 1 }]);
    assert!(screen(&a).contains("applying 1/1"), "{}", screen(&a));
    feed(
        &mut a,
        [Msg::Applied(vec![result(
            "Deployment default/nginx-deployment",
            true,
            "configured",
        )])],
    );
    feed(&mut a, [Msg::WriteProgress { done: 1, total: 1 }]);
    let s = screen(&a);
    assert!(!s.contains("applying"), "{s}");
    assert!(!s.contains("1/1"), "{s}");
}

/// The apply confirmation's dry run says how many objects the server has
/// answered; a count from a run for another set of objects (a dialog
/// closed since) is not shown, and the count goes with the answer.
#[test]
fn the_dry_run_under_way_shows_its_progress() {
    let mut a = app(100, 24);
    select(&mut a, "nginx-deployment");
    feed(&mut a, [key('a')]);
    let s = screen(&a);
    assert!(s.contains("waiting for the server…"), "{s}");
    assert!(!s.contains("answered"), "{s}");
    feed(&mut a, [Msg::DryRunProgress { done: 3, total: 40 }]);
    assert!(!screen(&a).contains("answered"), "{}", screen(&a));
    feed(&mut a, [Msg::DryRunProgress { done: 0, total: 1 }]);
    assert!(
        screen(&a).contains("waiting for the server… 0/1 answered"),
        "{}",
        screen(&a)
    );
    feed(&mut a, [Msg::DryRunProgress { done: 1, total: 1 }]);
    assert!(screen(&a).contains("1/1 answered"), "{}", screen(&a));
    answer_dry_run(&mut a);
    assert_eq!(a.jobs.dry_run_progress, None);
    let s = screen(&a);
    assert!(!s.contains("answered"), "{s}");
    assert!(s.contains("(server dry run)"), "{s}");
}

#[test]
fn prune_mode_screens() {
    let mut a = app(80, 24);
    feed(&mut a, [key('p')]);
    let s = screen(&a);
    assert!(
        s.contains("Candidate 1/1: ConfigMap default/old-config"),
        "{s}"
    );
    assert!(s.contains("has the last-applied annotation"), "{s}");
    insta::assert_snapshot!("prune_step", s);
    feed(&mut a, [key('y')]);
    let s = screen(&a);
    assert!(s.contains("x ConfigMap default/old-config"), "{s}");
    insta::assert_snapshot!("prune_confirm", s);
}

#[test]
fn prune_disabled_after_an_incomplete_read() {
    let mut a = app(80, 24);
    let mut plan = tui_fixture::plan();
    // What the engine gives after an unreadable manifest: no candidate.
    plan.objects
        .retain(|o| o.action != kapply::plan::ObjectAction::Prune);
    plan.prune_skipped = Some(kapply::plan::PruneBlock::Unreadable {
        count: 1,
        first: "manifests/widget.yaml:3: tabs disallowed within this context".into(),
    });
    feed(&mut a, [Msg::Loaded(Ok(plan))]);
    let s = screen(&a);
    assert!(s.contains("prune disabled: 1 manifest unreadable"), "{s}");
    assert!(!s.contains("-1 prune"), "{s}");
    // `p` explains instead of opening prune mode; Esc closes it.
    let effects = feed(&mut a, [key('p')]);
    assert!(effects.is_empty(), "{effects:?}");
    assert!(
        matches!(a.popup, Some(Popup::Notice { .. })),
        "{:?}",
        a.popup
    );
    let s = screen(&a);
    assert!(s.contains("Prune disabled"), "{s}");
    assert!(
        s.contains("pruning skipped: 1 manifest could not be read"),
        "{s}"
    );
    assert!(!s.contains("Candidate"), "{s}");
    insta::assert_snapshot!("prune_disabled_notice", s);
    feed(&mut a, [code(KeyCode::Esc)]);
    assert!(a.popup.is_none());
}

#[test]
fn delete_confirm_needs_typed_count() {
    let mut a = app(80, 24);
    select(&mut a, "nginx-deployment");
    feed(&mut a, [key(' ')]);
    select(&mut a, "nginx");
    feed(&mut a, [key(' '), key('D')]);
    assert!(
        feed(&mut a, [code(KeyCode::Enter)]).is_empty(),
        "no delete without the count"
    );
    feed(&mut a, [key('2')]);
    let s = screen(&a);
    assert!(s.contains("Type 2 to confirm: 2"), "{s}");
    insta::assert_snapshot!("delete_confirm_typed", s);
    let eff = feed(&mut a, [code(KeyCode::Enter)]);
    match eff.as_slice() {
        [Effect::Delete(objs, Propagation::Background)] => {
            let names: Vec<&str> = objs.iter().map(|o| o.name.as_str()).collect();
            assert_eq!(names, ["nginx-deployment", "nginx"]);
        }
        other => panic!("expected one delete, got {other:?}"),
    }
}

#[test]
fn log_pane_records_results() {
    let mut a = app(80, 24);
    feed(&mut a, [key('l')]);
    a.update(Msg::Applied(vec![
        result("Deployment default/nginx-deployment", true, "configured"),
        result(
            "Secret demo/db-credentials",
            false,
            "Secret \"db-credentials\" is invalid: data[x]: Invalid value",
        ),
    ]));
    a.update(Msg::Pruned(vec![result(
        "ConfigMap default/old-config",
        true,
        "pruned",
    )]));
    let s = screen(&a);
    assert!(
        s.contains("<time> ✓ Deployment default/nginx-deployment: configured"),
        "{s}"
    );
    assert!(
        s.contains("✗ Secret demo/db-credentials failed: Secret \"db-credentials\" is"),
        "{s}"
    );
    // An entry wider than the pane wraps: the cause reads.
    assert!(s.contains("invalid: data[x]: Invalid value"), "{s}");
    insta::assert_snapshot!("log", s);
}

#[test]
fn no_color_has_no_colours_but_marks() {
    let mut a = app_with(
        Options {
            color: false,
            ..Options::default()
        },
        80,
        24,
    );
    select(&mut a, "nginx-deployment");
    feed(&mut a, [key(' ')]);
    let buf = buffer(&a);
    for c in buf.content() {
        assert_eq!(c.fg, Color::Reset, "cell {:?} has a colour", c.symbol());
        assert_eq!(c.bg, Color::Reset, "cell {:?} has a colour", c.symbol());
    }
    let s = screen(&a);
    assert!(s.contains("●~ Deployment/nginx-deploy"), "{s}");
    assert!(
        s.contains("+ ConfigMap/app-config") && s.contains("- ConfigMap/old-config"),
        "{s}"
    );
    assert!(
        s.contains("= Service/nginx") && s.contains("! Widget/thing"),
        "{s}"
    );
    insta::assert_snapshot!("no_color", s);
    // The YAML view keeps its +/- marks too.
    feed(&mut a, [key('y')]);
    let buf = buffer(&a);
    assert!(
        buf.content()
            .iter()
            .all(|c| c.fg == Color::Reset && c.bg == Color::Reset)
    );
}

#[test]
fn colours_follow_status() {
    let a = app(80, 24);
    let buf = buffer(&a);
    let find = |text: &str| -> Color {
        for y in 0..buf.area.height {
            let line: String = (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect();
            if let Some(col) = line.find(text) {
                let x = line[..col].chars().count() as u16;
                return buf[(x, y)].fg;
            }
        }
        panic!("{text} not on screen");
    };
    assert_eq!(find("~ Deployment"), Color::Yellow);
    assert_eq!(find("+ ConfigMap/app-config"), Color::Green);
    assert_eq!(find("- ConfigMap/old-config"), Color::Magenta);
    assert_eq!(find("! Widget"), Color::Red);
    // A warning has its own mark, apart from an error's.
    assert_eq!(find("⚠ Secret"), Color::Yellow);
}

#[test]
fn works_after_resize() {
    let mut a = app(160, 40);
    a.update(Msg::Resize(80, 24));
    let s = screen(&a);
    assert_eq!(s.lines().count(), 24);
    assert!(s.lines().all(|l| l.chars().count() <= 80));
    a.update(Msg::Resize(40, 10));
    let s = screen(&a);
    assert_eq!(s.lines().count(), 10);
}

// ---------- effects ----------

#[test]
fn apply_sends_exactly_marked_items_and_accepted_fields() {
    let mut a = app(80, 24);
    select(&mut a, "nginx-deployment");
    feed(&mut a, [key(' ')]);
    // Exclude the minReadySeconds clear (first field) of the Deployment.
    feed(
        &mut a,
        [code(KeyCode::Tab), key('g'), key(' '), code(KeyCode::Tab)],
    );
    select(&mut a, "app-config");
    feed(&mut a, [key(' ')]);
    // The in-sync Service is not marked; the cursor sits elsewhere.
    select(&mut a, "nginx");
    let eff = feed(&mut a, [key('a')]);
    let Some(Effect::DryRun(dry)) = eff.first() else {
        panic!("expected a dry run, got {eff:?}")
    };
    answer_dry_run(&mut a);
    let eff = feed(&mut a, [code(KeyCode::Enter)]);
    let [Effect::Apply(items)] = eff.as_slice() else {
        panic!("expected one apply, got {eff:?}")
    };
    let names: Vec<&str> = items.iter().map(|i| i.plan.name.as_str()).collect();
    assert_eq!(names, ["app-config", "nginx-deployment"]);
    assert_eq!(items[0].accepted_fields, None);
    assert_eq!(
        items[1].accepted_fields.as_deref(),
        Some(&["spec.template.spec.containers[name=nginx].image".into()][..])
    );
    assert_eq!(dry.len(), items.len());
    assert!(a.popup.is_none());
}

#[test]
fn apply_current_when_nothing_marked() {
    let mut a = app(80, 24);
    select(&mut a, "db-credentials");
    feed(&mut a, [key('a')]);
    answer_dry_run(&mut a);
    let eff = feed(&mut a, [code(KeyCode::Enter)]);
    let [Effect::Apply(items)] = eff.as_slice() else {
        panic!("{eff:?}")
    };
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].plan.name, "db-credentials");
}

#[test]
fn esc_cancels_every_dialog_without_effects() {
    let mut a = app(80, 24);
    select(&mut a, "nginx-deployment");
    for open in ['a', 'D', 'p', '?'] {
        feed(&mut a, [key(open)]);
        assert!(a.popup.is_some(), "{open} opens a dialog");
        let eff = feed(&mut a, [code(KeyCode::Esc)]);
        assert!(eff.is_empty(), "Esc after {open} gave {eff:?}");
        assert!(a.popup.is_none());
    }
    // Esc with nothing open goes back, and never quits (k9s, lazygit).
    for _ in 0..3 {
        assert!(feed(&mut a, [code(KeyCode::Esc)]).is_empty());
    }
    assert!(a.popup.is_none());
}

#[test]
fn no_destructive_effect_without_confirm() {
    // Every printable key and navigation key, from the list and the field pane.
    let mut all: Vec<Msg> = (' '..='~').filter(|c| *c != 'q').map(key).collect();
    all.extend(
        [
            KeyCode::Tab,
            KeyCode::Up,
            KeyCode::Down,
            KeyCode::PageDown,
            KeyCode::Backspace,
        ]
        .map(code),
    );
    for start in ["nginx-deployment", "old-config", "app-config"] {
        for m in &all {
            let mut a = app(80, 24);
            select(&mut a, start);
            a.update(key(' '));
            let eff = a.update(m.clone());
            assert!(
                // ExportTarget only proposes a path: nothing is written.
                eff.iter().all(|e| matches!(
                    e,
                    // Edit opens an editor; the user saves, or not.
                    Effect::Load
                        | Effect::DryRun(_)
                        | Effect::ExportTarget(..)
                        | Effect::Edit { .. }
                )),
                "{m:?} on {start} gave {eff:?}"
            );
        }
    }
}

#[test]
fn prune_mode_queues_and_confirms() {
    let mut plan = tui_fixture::plan();
    let mut second = tui_fixture::prune_candidate();
    second.name = "older-config".to_string();
    let mut third = tui_fixture::prune_candidate();
    third.name = "oldest-config".to_string();
    plan.objects.push(second);
    plan.objects.push(third);
    let mut a = app(80, 24);
    a.update(Msg::Loaded(Ok(plan)));
    feed(&mut a, [key('p')]);
    assert_eq!(
        a.selected().unwrap().name,
        "old-config",
        "the candidate is selected"
    );
    assert!(feed(&mut a, [key('y')]).is_empty());
    assert_eq!(a.selected().unwrap().name, "older-config");
    // The last choice opens the confirmation and asks the server first.
    let eff = feed(&mut a, [key('n'), key('s')]);
    assert!(
        matches!(eff.as_slice(), [Effect::PruneDryRun(o)] if o.len() == 1),
        "{eff:?}"
    );
    assert!(
        matches!(&a.popup, Some(Popup::Confirm(c)) if c.waiting() && matches!(&c.action, Confirmed::Prune(objects) if objects.len() == 1))
    );
    // Enter waits for the server's answer.
    assert!(feed(&mut a, [code(KeyCode::Enter)]).is_empty());
    assert!(
        screen(&a).contains("waiting for the server"),
        "{}",
        screen(&a)
    );
    a.update(Msg::PruneDryRunDone(vec![result(
        "ConfigMap default/old-config",
        true,
        "deleted (server dry run)",
    )]));
    let dialog = popup_text(&a, "Confirm prune").unwrap();
    assert!(
        dialog.contains("✓ ConfigMap default/old-config: deleted (server dry run)"),
        "{dialog}"
    );
    let eff = feed(&mut a, [code(KeyCode::Enter)]);
    let [Effect::Prune(objs)] = eff.as_slice() else {
        panic!("{eff:?}")
    };
    assert_eq!(objs.len(), 1);
    assert_eq!(objs[0].name, "old-config");
}

#[test]
fn single_delete_needs_enter_only() {
    let mut a = app(80, 24);
    select(&mut a, "old-config");
    assert!(feed(&mut a, [key('D')]).is_empty());
    let eff = feed(&mut a, [code(KeyCode::Enter)]);
    assert!(
        matches!(eff.as_slice(), [Effect::Delete(o, _)] if o.len() == 1 && o[0].name == "old-config")
    );
}

#[test]
fn delete_of_object_not_in_cluster_is_refused() {
    let mut a = app(80, 24);
    select(&mut a, "app-config");
    feed(&mut a, [key('D')]);
    assert!(a.popup.is_none());
    assert!(
        a.last_result
            .as_deref()
            .unwrap()
            .contains("nothing to delete")
    );
}

#[test]
fn a_neutral_message_after_a_failure_is_not_drawn_as_one() {
    let mut a = app(80, 24);
    a.update(Msg::Applied(vec![result(
        "Secret demo/db-credentials",
        false,
        "forbidden",
    )]));
    a.update(Msg::Loaded(Ok(tui_fixture::plan())));
    assert!(a.last_result_failed);
    // Refusing a delete of what is not in the cluster is no failure.
    select(&mut a, "app-config");
    feed(&mut a, [key('D')]);
    assert_eq!(
        a.last_result.as_deref(),
        Some("nothing to delete (the object is not in the cluster)")
    );
    assert!(!a.last_result_failed);
    // Nor is Enter while the server dry run is still under way.
    a.update(Msg::Applied(vec![result(
        "Secret demo/db-credentials",
        false,
        "forbidden",
    )]));
    a.update(Msg::Loaded(Ok(tui_fixture::plan())));
    assert!(a.last_result_failed);
    select(&mut a, "nginx-deployment");
    feed(&mut a, [key('a'), code(KeyCode::Enter)]);
    assert!(
        matches!(&a.popup, Some(Popup::Confirm(c)) if matches!(c.action, Confirmed::Apply(_)) && c.waiting())
    );
    assert!(
        a.last_result
            .as_deref()
            .is_some_and(|r| r.starts_with("waiting for the server dry run")),
        "{:?}",
        a.last_result
    );
    assert!(!a.last_result_failed);
}

#[test]
fn results_are_logged_and_reload() {
    let mut a = app(80, 24);
    select(&mut a, "nginx-deployment");
    feed(&mut a, [key(' ')]);
    select(&mut a, "db-credentials");
    feed(&mut a, [key(' ')]);
    let eff = a.update(Msg::Applied(vec![
        result("Deployment default/nginx-deployment", true, "configured"),
        result("Secret demo/db-credentials", false, "forbidden"),
    ]));
    assert!(matches!(eff.as_slice(), [Effect::Load]), "{eff:?}");
    assert_eq!(a.log.len(), 2);
    assert!(a.log[0].ok && a.log[0].text == "Deployment default/nginx-deployment: configured");
    assert!(!a.log[1].ok && a.log[1].text.contains("failed: forbidden"));
    assert_eq!(a.log[0].time, "12:34:56");
    // Only what the engine reported ok is unmarked; the failure stays marked.
    assert_eq!(a.sel.marked.len(), 1);
    assert_eq!(a.sel.marked.iter().next().unwrap().name, "db-credentials");
    assert_eq!(
        a.last_result.as_deref(),
        Some("applied 1 object(s), 1 failed")
    );
    // While loading, `r` does not start a second load.
    assert!(feed(&mut a, [key('r')]).is_empty());
    a.update(Msg::Loaded(Ok(tui_fixture::plan())));
    assert!(matches!(
        feed(&mut a, [key('r')]).as_slice(),
        [Effect::Load]
    ));
    a.update(Msg::Loaded(Ok(tui_fixture::plan())));
    let eff = a.update(Msg::Deleted(vec![result(
        "Service default/nginx",
        true,
        "deleted",
    )]));
    assert!(matches!(eff.as_slice(), [Effect::Load]));
}

#[test]
fn load_failure_is_logged() {
    let mut a = App::new(Options::default());
    a.clock = || "01:02:03".to_string();
    a.start();
    a.update(Msg::Loaded(Err("connection refused".to_string())));
    assert_eq!(a.log[0].text, "load failed: connection refused");
    assert!(!a.log[0].ok);
}

#[test]
fn ctrl_c_quits_even_in_a_dialog() {
    let mut a = app(80, 24);
    feed(&mut a, [key('?')]);
    let eff = a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('c'),
        KeyModifiers::CONTROL,
    )));
    assert!(matches!(eff.as_slice(), [Effect::Quit]));
}

#[test]
fn stale_dry_run_is_ignored() {
    let mut a = app(80, 24);
    select(&mut a, "nginx-deployment");
    feed(&mut a, [key('a')]);
    a.update(Msg::DryRunDone(vec![result(
        "Secret demo/db-credentials",
        true,
        "configured",
    )]));
    assert!(
        matches!(&a.popup, Some(Popup::Confirm(c)) if matches!(c.action, Confirmed::Apply(_)) && c.waiting())
    );
}

#[test]
fn navigation_keys() {
    let mut a = app(80, 24);
    feed(&mut a, [key('G')]);
    assert_eq!(
        a.selected().unwrap().name,
        "db-credentials",
        "last row (namespace demo sorts last)"
    );
    feed(&mut a, [key('g')]);
    assert_eq!(
        a.selected().unwrap().name,
        "demo",
        "first row: the cluster-scoped Namespace"
    );
    // n jumps over the in-sync Service and the error to the next change.
    select(&mut a, "nginx-deployment");
    feed(&mut a, [key('n')]);
    assert_eq!(a.selected().unwrap().name, "old-config");
    feed(&mut a, [key('N')]);
    assert_eq!(a.selected().unwrap().name, "nginx-deployment");
}

#[test]
fn mouse_click_and_wheel() {
    let mut a = app(80, 24);
    let list = a.areas().list;
    // Row 0 is the "(cluster)" group, row 1 the Namespace, row 2 the "default" group.
    let click = |row: u16| {
        Msg::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: list.x + 3,
            row: list.y + 1 + row,
            modifiers: KeyModifiers::NONE,
        })
    };
    a.update(click(3));
    assert_eq!(a.selected().unwrap().name, "app-config");
    a.update(Msg::Mouse(MouseEvent {
        kind: MouseEventKind::ScrollDown,
        column: list.x + 3,
        row: list.y + 2,
        modifiers: KeyModifiers::NONE,
    }));
    assert_eq!(a.selected().unwrap().name, "thing");
}

// ---------- the runtime's effect runner, against a fake engine ----------

mod fake {
    use futures::future::BoxFuture;
    use kapply::ops::{ApplyItem, Engine, ObjectResult, Progress, Propagation};
    use kapply::plan::{ObjectAction, ObjectPlan, Plan};
    use std::sync::Mutex;

    /// Applies succeed except for Secrets; what it was sent is recorded.
    pub struct Engine1 {
        pub plan: Mutex<Plan>,
        pub calls: Mutex<Vec<String>>,
        pub applied: Mutex<Vec<ApplyItem>>,
    }

    fn name(o: &ObjectPlan) -> kapply::objref::ObjectRef {
        o.id()
    }

    impl Engine for Engine1 {
        fn load(
            &self,
            progress: tokio::sync::mpsc::UnboundedSender<Progress>,
        ) -> BoxFuture<'_, Result<Plan, String>> {
            Box::pin(async move {
                self.calls.lock().unwrap().push("load".into());
                let _ = progress.send(Progress {
                    done: 1,
                    total: 1,
                    lists: 0,
                    what: "GET".into(),
                });
                Ok(self.plan.lock().unwrap().clone())
            })
        }
        fn dry_run(&self, items: Vec<ApplyItem>) -> BoxFuture<'_, Vec<ObjectResult>> {
            Box::pin(async move {
                self.calls
                    .lock()
                    .unwrap()
                    .push(format!("dry_run {}", items.len()));
                items
                    .iter()
                    .map(|i| ObjectResult {
                        object: name(&i.plan),
                        ..super::outcome(true, "configured (server dry run)")
                    })
                    .collect()
            })
        }
        fn apply(&self, items: Vec<ApplyItem>) -> BoxFuture<'_, Vec<ObjectResult>> {
            Box::pin(async move {
                self.calls
                    .lock()
                    .unwrap()
                    .push(format!("apply {}", items.len()));
                let mut out = Vec::new();
                let mut plan = self.plan.lock().unwrap();
                for i in &items {
                    let ok = i.plan.kind != "Secret";
                    if ok {
                        for o in plan.objects.iter_mut().filter(|o| o.name == i.plan.name) {
                            o.action = ObjectAction::Unchanged;
                            o.fields.clear();
                        }
                    }
                    out.push(ObjectResult {
                        object: name(&i.plan),
                        ..super::outcome(ok, if ok { "configured" } else { "forbidden" })
                    });
                }
                self.applied.lock().unwrap().extend(items);
                out
            })
        }
        fn delete(
            &self,
            objects: Vec<ObjectPlan>,
            _p: Propagation,
        ) -> BoxFuture<'_, Vec<ObjectResult>> {
            Box::pin(async move {
                self.calls
                    .lock()
                    .unwrap()
                    .push(format!("delete {}", objects.len()));
                Vec::new()
            })
        }
        fn prune(&self, objects: Vec<ObjectPlan>) -> BoxFuture<'_, Vec<ObjectResult>> {
            Box::pin(async move {
                self.calls
                    .lock()
                    .unwrap()
                    .push(format!("prune {}", objects.len()));
                let mut plan = self.plan.lock().unwrap();
                plan.objects
                    .retain(|o| !objects.iter().any(|p| p.name == o.name));
                objects
                    .iter()
                    .map(|o| ObjectResult {
                        object: name(o),
                        ..super::outcome(true, "pruned")
                    })
                    .collect()
            })
        }
    }
}

/// Run effects through `runtime::perform` until none are left, like the
/// runtime's loop does (progress messages included).
async fn settle(
    app: &mut App,
    engine: &std::sync::Arc<dyn kapply::ops::Engine>,
    mut effects: Vec<Effect>,
) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    while let Some(e) = effects.pop() {
        // A watch runs until the next load replaces it: never settled here.
        if matches!(e, Effect::Watch(_)) {
            continue;
        }
        if let Some(msg) = kapply::tui::runtime::perform(e, engine.clone(), tx.clone()).await {
            while let Ok(p) = rx.try_recv() {
                effects.extend(app.update(p));
            }
            effects.extend(app.update(msg));
        }
    }
}

/// The real engine on the cluster of `kubeconfig`, reading the manifests
/// in `dir` (no pruning).
async fn kube_engine(
    kubeconfig: &std::path::Path,
    dir: &std::path::Path,
) -> std::sync::Arc<dyn kapply::ops::Engine> {
    let session = kapply::cluster::Session::connect(&kapply::cluster::ClusterOptions {
        kubeconfig: Some(kubeconfig.to_path_buf()),
        ..Default::default()
    })
    .await
    .unwrap();
    std::sync::Arc::new(kapply::cluster::KubeEngine::new(
        session,
        kapply::manifest::LoadOptions {
            paths: vec![dir.to_path_buf()],
            ..Default::default()
        },
        Default::default(),
    ))
}

#[tokio::test]
async fn apply_then_prune_through_the_engine() {
    let fake = std::sync::Arc::new(fake::Engine1 {
        plan: std::sync::Mutex::new(tui_fixture::plan()),
        calls: Default::default(),
        applied: Default::default(),
    });
    let engine: std::sync::Arc<dyn kapply::ops::Engine> = fake.clone();
    let mut a = App::new(Options::default());
    a.clock = || "09:00:00".to_string();
    a.update(Msg::Resize(80, 24));
    let start = a.start();
    settle(&mut a, &engine, start).await;
    assert_eq!(a.list.plan.objects.len(), 7);

    select(&mut a, "nginx-deployment");
    a.update(key(' '));
    select(&mut a, "db-credentials");
    a.update(key(' '));
    let dry = a.update(key('a'));
    settle(&mut a, &engine, dry).await;
    assert!(
        matches!(&a.popup, Some(Popup::Confirm(c)) if matches!(c.action, Confirmed::Apply(_)) && c.results().is_some_and(|r| r.len() == 2))
    );
    let apply = a.update(code(KeyCode::Enter));
    settle(&mut a, &engine, apply).await;

    let calls = fake.calls.lock().unwrap().clone();
    assert_eq!(calls, ["load", "dry_run 2", "apply 2", "load"]);
    let sent: Vec<String> = fake
        .applied
        .lock()
        .unwrap()
        .iter()
        .map(|i| i.plan.name.clone())
        .collect();
    assert_eq!(sent, ["nginx-deployment", "db-credentials"]);
    // The reloaded plan shows the Deployment in sync; the Secret failed and stays marked.
    let d = a
        .list
        .plan
        .objects
        .iter()
        .find(|o| o.name == "nginx-deployment")
        .unwrap();
    assert_eq!(d.action, kapply::plan::ObjectAction::Unchanged);
    let texts: Vec<(bool, &str)> = a.log.iter().map(|e| (e.ok, e.text.as_str())).collect();
    assert_eq!(
        texts,
        [
            (true, "Deployment default/nginx-deployment: configured"),
            (false, "Secret demo/db-credentials failed: forbidden"),
        ]
    );
    assert_eq!(a.sel.marked.len(), 1);
    assert!(
        !a.jobs.loading && a.jobs.pending.is_empty(),
        "{:?}",
        a.jobs.pending
    );

    // Prune the candidate: y, then Enter on the confirm.
    a.update(key('p'));
    // The confirmation asks the server first (a dry run of the DELETE).
    let dry = a.update(key('y'));
    assert!(
        matches!(dry.as_slice(), [Effect::PruneDryRun(_)]),
        "{dry:?}"
    );
    settle(&mut a, &engine, dry).await;
    let dialog = popup_text(&a, "Confirm prune").unwrap();
    // This engine has no cluster to ask: the dialog says so, not waits.
    assert!(
        dialog.contains("Server dry run: no cluster to ask") && !dialog.contains("waiting"),
        "{dialog}"
    );
    let prune = a.update(code(KeyCode::Enter));
    settle(&mut a, &engine, prune).await;
    assert!(a.list.plan.objects.iter().all(|o| o.name != "old-config"));
    assert_eq!(
        a.log.last().unwrap().text,
        "ConfigMap default/old-config: pruned"
    );
    assert_eq!(fake.calls.lock().unwrap().last().unwrap(), "load");
}

#[test]
fn yaml_scroll_is_clamped() {
    let mut a = app(80, 24);
    select(&mut a, "nginx-deployment");
    // z: unfolded, so the end of the object is a line of its own.
    feed(&mut a, [key('y'), key('z'), code(KeyCode::Tab), key('G')]);
    let bottom = a.detail.yaml_scroll;
    assert!(bottom > 0);
    let s = screen(&a);
    assert!(
        s.contains("readyReplicas: 2"),
        "the end of the YAML shows:\n{s}"
    );
    feed(&mut a, [key('k')]);
    assert_eq!(a.detail.yaml_scroll, bottom - 1);
    feed(&mut a, [key('G'), key('j'), key('j')]);
    assert_eq!(a.detail.yaml_scroll, bottom);
    feed(&mut a, [key('g')]);
    assert_eq!(a.detail.yaml_scroll, 0);
}

/// The YAML view folds unchanged runs (three lines of context), `z`
/// unfolds them; the last-applied annotation is one line, `L` shows it
/// whole as pretty JSON. The view is built once per object and plan.
#[test]
fn yaml_view_folds_and_shows_the_annotation() {
    let mut a = app(120, 40);
    select(&mut a, "nginx-deployment");
    feed(&mut a, [key('y')]);
    let s = screen(&a);
    assert!(s.contains("unchanged lines (z unfolds)"), "{s}");
    // The annotation changes: its summary line, before and after.
    assert!(
        s.contains("last-applied-configuration: ") && s.contains("bytes, before (L)\""),
        "{s}"
    );
    assert!(s.contains("bytes, after (L)\""), "{s}");
    assert!(!s.contains("{\"apiVersion\""), "{s}");
    // Context: the three lines before the image change show.
    assert!(s.contains("      spec:") && s.contains("+       - image: nginx:1.16.1"));
    assert!(!s.contains("status:"), "far from any change: folded\n{s}");
    let o = a.selected().unwrap();
    let v1 = a.yaml_lines(o);
    let v2 = a.yaml_lines(o);
    assert!(std::rc::Rc::ptr_eq(&v1, &v2), "built once, not per frame");
    let folded = v1.len();

    feed(&mut a, [key('z')]);
    let s = screen(&a);
    assert!(!s.contains("z unfolds"), "{s}");
    let o = a.selected().unwrap();
    assert!(a.yaml_lines(o).len() > folded);

    // Folded again, and the annotation whole: its JSON diffs line by line.
    feed(&mut a, [key('z'), key('L')]);
    let s = screen(&a);
    assert!(!s.contains(" bytes"), "{s}");
    assert!(
        s.contains("-                   \"image\": \"nginx:1.14.2\",")
            && s.contains("+                   \"image\": \"nginx:1.16.1\","),
        "{s}"
    );
    assert!(s.contains("-           \"minReadySeconds\": 5,"), "{s}");
    // A reload is a new plan: the view is built again.
    let o = a.selected().unwrap();
    let before = a.yaml_lines(o);
    a.update(Msg::Loaded(Ok(tui_fixture::plan())));
    let o = a.selected().unwrap();
    assert!(!std::rc::Rc::ptr_eq(&before, &a.yaml_lines(o)));
}

/// The field table is laid out by `update` (once per object, plan, `K`
/// and width); drawing and moving the field cursor only read it.
#[test]
fn the_field_table_is_laid_out_in_update_not_per_frame() {
    let mut a = app(120, 40);
    select(&mut a, "nginx-deployment");
    let w = usize::from(a.areas().detail.width - 2);
    let first = a.field_layout(w).unwrap();
    let _ = screen(&a);
    assert!(std::rc::Rc::ptr_eq(&first, &a.field_layout(w).unwrap()));
    feed(&mut a, [code(KeyCode::Tab), key('j'), key('j')]);
    let _ = screen(&a);
    // The list gives the focused pane room: another width, laid out once.
    let w = usize::from(a.areas().detail.width - 2);
    let focused = a.field_layout(w).unwrap();
    assert!(!std::rc::Rc::ptr_eq(&first, &focused));
    feed(&mut a, [key('j')]);
    assert!(std::rc::Rc::ptr_eq(&focused, &a.field_layout(w).unwrap()));
    feed(&mut a, [key('K')]);
    assert!(!std::rc::Rc::ptr_eq(&focused, &a.field_layout(w).unwrap()));
}

#[test]
fn apply_confirm_shows_partial_apply() {
    let mut a = app(100, 24);
    select(&mut a, "nginx-deployment");
    feed(&mut a, [code(KeyCode::Tab), key(' '), key('a')]);
    let s = screen(&a);
    assert!(
        s.contains("update (PATCH, strategic merge, partial)"),
        "{s}"
    );
    // Excluded changes fold to one line: not listed at the same weight.
    let dialog = popup_text(&a, "Confirm apply").unwrap();
    assert!(!dialog.contains("clear spec.minReadySeconds"), "{dialog}");
    assert!(
        s.contains("1 change(s) excluded: not sent, they stay pending"),
        "{s}"
    );
    // The verdict comes before what is sent.
    assert!(s.find("Server dry run:") < s.find("update (PATCH"), "{s}");
    insta::assert_snapshot!("apply_confirm_partial", s);
}

#[test]
fn changes_are_listed_before_kept_fields() {
    let o = tui_fixture::deployment();
    let rows = |kept: bool| -> Vec<String> {
        kapply::tui::app::field_rows(&o, kept)
            .iter()
            .map(|f| f.path.to_string())
            .collect()
    };
    assert_eq!(
        rows(true),
        [
            "spec.minReadySeconds",
            "spec.template.spec.containers[name=nginx].image",
            "spec.progressDeadlineSeconds",
            "spec.replicas",
            "spec.revisionHistoryLimit",
        ]
    );
    // Kept rows hidden (the default): the changes only.
    assert_eq!(
        rows(false),
        [
            "spec.minReadySeconds",
            "spec.template.spec.containers[name=nginx].image",
        ]
    );
}

#[test]
fn keep_rows_cannot_be_excluded() {
    let mut a = app(80, 24);
    select(&mut a, "nginx-deployment");
    // K shows the kept rows; the third row is progressDeadlineSeconds, the
    // first keep (changes come first).
    feed(
        &mut a,
        [code(KeyCode::Tab), key('K'), key('j'), key('j'), key(' ')],
    );
    assert!(a.sel.excluded.is_empty());
    assert!(
        a.last_result
            .as_deref()
            .unwrap()
            .contains("kept fields are not sent")
    );
}

#[test]
fn tiny_terminals_do_not_panic() {
    for (w, h) in [
        (0, 0),
        (1, 1),
        (5, 2),
        (12, 3),
        (20, 5),
        (30, 8),
        (200, 3),
        (3, 60),
    ] {
        for keys_ in ["", "?", "a", "p", "y", "l", "D", "/x"] {
            let mut a = app(80, 24);
            select(&mut a, "nginx-deployment");
            feed(&mut a, keys(keys_));
            a.update(Msg::Resize(w, h));
            let s = screen(&a);
            assert_eq!(s.lines().count(), h as usize);
        }
    }
}

#[test]
fn object_with_every_change_excluded_is_not_sent() {
    let mut a = app(80, 24);
    select(&mut a, "nginx-deployment");
    // Exclude both changes (rows 0 and 1), then apply.
    let eff = feed(
        &mut a,
        [code(KeyCode::Tab), key(' '), key('j'), key(' '), key('a')],
    );
    assert!(eff.is_empty(), "{eff:?}");
    assert!(a.popup.is_none());
    assert!(
        a.last_result
            .as_deref()
            .unwrap()
            .starts_with("nothing to apply")
    );
    // Including one again makes it applicable, with just that change.
    feed(&mut a, [key(' ')]);
    feed(&mut a, [key('a')]);
    answer_dry_run(&mut a);
    let eff = feed(&mut a, [code(KeyCode::Enter)]);
    let [Effect::Apply(items)] = eff.as_slice() else {
        panic!("{eff:?}")
    };
    assert_eq!(
        items[0].accepted_fields.as_deref(),
        Some(&["spec.template.spec.containers[name=nginx].image".into()][..])
    );
}

#[test]
fn reload_during_prune_mode_keeps_the_right_objects() {
    let mut plan = tui_fixture::plan();
    let mut second = tui_fixture::prune_candidate();
    second.name = "older-config".to_string();
    plan.objects.push(second);
    let mut a = app(80, 24);
    a.update(Msg::Loaded(Ok(plan.clone())));
    feed(&mut a, [key('p'), key('y')]);
    // A reload lands (from an earlier action) with the objects in another order.
    plan.objects.reverse();
    a.update(Msg::Loaded(Ok(plan)));
    assert_eq!(a.selected().unwrap().name, "older-config");
    feed(&mut a, [key('n'), Msg::PruneDryRunDone(Vec::new())]);
    let eff = feed(&mut a, [code(KeyCode::Enter)]);
    let [Effect::Prune(objs)] = eff.as_slice() else {
        panic!("{eff:?}")
    };
    let names: Vec<&str> = objs.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["old-config"]);
}

/// The text inside the dialog titled `title`: its rows between the borders,
/// joined with spaces and runs of blanks collapsed, so text that wrapped
/// reads as one line. None when no such dialog shows whole (frame closed).
fn popup_text(app: &App, title: &str) -> Option<String> {
    let buf = buffer(app);
    let (w, h) = (buf.area.width, buf.area.height);
    let head = format!("┌ {title} ");
    for y in 0..h {
        let row: Vec<&str> = (0..w).map(|x| buf[(x, y)].symbol()).collect();
        let line = row.concat();
        let Some(byte) = line.find(&head) else {
            continue;
        };
        let x0 = line[..byte].chars().count() as u16;
        let x1 = (x0 + 1..w).find(|&x| buf[(x, y)].symbol() == "┐")?;
        let mut rows = Vec::new();
        for yy in y + 1..h {
            match buf[(x0, yy)].symbol() {
                "└" => {
                    let bottom: String = (x0..=x1).map(|x| buf[(x, yy)].symbol()).collect();
                    assert!(
                        bottom.ends_with('┘'),
                        "frame of {title} not closed: {bottom}"
                    );
                    let text = rows.join(" ");
                    return Some(text.split_whitespace().collect::<Vec<_>>().join(" "));
                }
                "│" => {
                    assert_eq!(buf[(x1, yy)].symbol(), "│", "right border of {title}");
                    let inner: String = (x0 + 1..x1).map(|x| buf[(x, yy)].symbol()).collect();
                    rows.push(inner);
                }
                _ => return None,
            }
        }
        return None;
    }
    None
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every dialog sizes itself from its wrapped lines: nothing is cut off,
/// from 80x24 to 200x60, and none needs scrolling at these sizes.
#[test]
fn popups_show_everything_at_every_size() {
    let prune_reason = tui_fixture::prune_candidate()
        .prune_reason
        .expect("the fixture candidate has a reason");
    for (w, h) in [
        (80, 24),
        (100, 30),
        (120, 32),
        (132, 34),
        (160, 40),
        (160, 45),
        (200, 60),
    ] {
        let mut cases: Vec<(&str, App, Vec<String>)> = Vec::new();

        let mut a = app(w, h);
        feed(&mut a, [key('?')]);
        let help = kapply::tui::keymap::BINDINGS
            .iter()
            .flat_map(|b| [collapse(b.label), collapse(b.help)])
            .collect();
        // The help (keys and the legend of marks) scrolls on shorter
        // screens (help_scrolls_when_the_screen_is_short).
        if h >= 60 {
            cases.push(("Keys", a, help));
        }

        let mut a = app(w, h);
        select(&mut a, "nginx-deployment");
        feed(&mut a, [key(' ')]);
        select(&mut a, "app-config");
        feed(&mut a, [key(' '), key('a')]);
        feed(
            &mut a,
            [Msg::DryRunDone(vec![
                result(
                    "ConfigMap default/app-config",
                    true,
                    "created (server dry run)",
                ),
                result(
                    "Deployment default/nginx-deployment",
                    true,
                    "configured (server dry run)",
                ),
            ])],
        );
        cases.push((
            "Confirm apply",
            a,
            vec![
                "Apply 2 object(s)? This is what will be sent:".into(),
                "set spec.template.spec.containers[name=nginx].image = \"nginx:1.16.1\"".into(),
                "clear spec.minReadySeconds".into(),
                "✓ ConfigMap default/app-config: created (server dry run)".into(),
                "✓ Deployment default/nginx-deployment: configured (server dry run)".into(),
                "Enter apply · Esc cancel".into(),
            ],
        ));

        let mut a = app(w, h);
        select(&mut a, "nginx-deployment");
        feed(&mut a, [key(' ')]);
        select(&mut a, "nginx");
        feed(&mut a, [key(' '), key('D'), key('2')]);
        cases.push((
            "Confirm delete",
            a,
            vec![
                "Delete 2 object(s) from the cluster (propagation Background)?".into(),
                "x Deployment default/nginx-deployment".into(),
                "x Service default/nginx".into(),
                "Type 2 to confirm: 2▏".into(),
                "type the count, Enter delete · c propagation · Esc cancel".into(),
            ],
        ));

        let mut a = app(w, h);
        feed(&mut a, [key('p')]);
        cases.push((
            "Prune",
            a,
            vec![
                "Candidate 1/1: ConfigMap default/old-config".into(),
                collapse(&format!("why: {prune_reason}")),
                "labels: app=demo".into(),
                "queued 0 · kept 0 · skipped 0".into(),
                "y prune · n keep · s skip · Esc cancel".into(),
            ],
        ));

        let mut a = app(w, h);
        feed(&mut a, [key('p'), key('y')]);
        a.update(Msg::PruneDryRunDone(vec![result(
            "ConfigMap default/old-config",
            true,
            "deleted (server dry run)",
        )]));
        cases.push((
            "Confirm prune",
            a,
            vec![
                "Prune (delete) 1 object(s)?".into(),
                "x ConfigMap default/old-config".into(),
                "Enter delete · Esc cancel".into(),
            ],
        ));

        for (title, a, want) in cases {
            let text = popup_text(&a, title)
                .unwrap_or_else(|| panic!("{title} at {w}x{h}:\n{}", screen(&a)));
            for s in want {
                assert!(
                    text.contains(&s),
                    "{title} at {w}x{h} lacks {s:?}:\n{}",
                    screen(&a)
                );
            }
            assert!(!text.contains("j/k scroll"), "{title} at {w}x{h}: {text}");
        }
    }
}

/// A plan with `n` more prune candidates, old-00 .. old-NN.
fn many_candidates(n: usize) -> kapply::plan::Plan {
    let mut plan = tui_fixture::plan();
    for i in 0..n {
        let mut o = tui_fixture::prune_candidate();
        o.name = format!("old-{i:02}");
        plan.objects.push(o);
    }
    plan
}

/// A dialog taller than the screen scrolls with j/k (and the page keys),
/// says so with the lines shown, and keeps its keys and prompt in view.
#[test]
fn tall_popups_scroll_and_say_so() {
    let mut a = app(80, 24);
    a.update(Msg::Loaded(Ok(many_candidates(30))));
    // old-config and the 30 more, all queued.
    feed(&mut a, [key('p')]);
    feed(&mut a, (0..31).map(|_| key('y')));
    assert!(matches!(a.confirming(), Some(Confirmed::Prune(objects)) if objects.len() == 31));
    a.update(Msg::PruneDryRunDone(Vec::new()));
    let text = popup_text(&a, "Confirm prune").unwrap();
    // 22 rows: 2 borders, 1 footer, 19 of the 34 body lines (the dry run's
    // two first).
    assert!(
        text.contains("Enter delete · Esc cancel · j/k scroll · lines 1-19 of 34"),
        "{text}"
    );
    assert!(text.contains("Prune (delete) 31 object(s)?"), "{text}");
    assert!(!text.contains("old-29"), "{text}");

    feed(&mut a, [key('j')]);
    let text = popup_text(&a, "Confirm prune").unwrap();
    assert!(text.contains("lines 2-20 of 34"), "{text}");
    assert!(!text.contains("Prune (delete)"), "{text}");

    // Past the end stays at the end; k comes back one line.
    feed(&mut a, (0..40).map(|_| key('j')));
    assert_eq!(a.popup_scroll, 15);
    let text = popup_text(&a, "Confirm prune").unwrap();
    assert!(text.contains("lines 16-34 of 34"), "{text}");
    assert!(text.contains("x ConfigMap default/old-29"), "{text}");
    feed(&mut a, [key('k')]);
    assert_eq!(a.popup_scroll, 14);
    feed(&mut a, [code(KeyCode::Home)]);
    assert_eq!(a.popup_scroll, 0);
    feed(&mut a, [code(KeyCode::PageDown)]);
    assert_eq!(a.popup_scroll, 15, "a page is 19 rows, clamped to the end");
    // The wheel scrolls the dialog, not the list behind it.
    let cursor = a.sel.cursor;
    let wheel = |kind| {
        Msg::Mouse(MouseEvent {
            kind,
            column: 40,
            row: 12,
            modifiers: KeyModifiers::NONE,
        })
    };
    feed(&mut a, [wheel(MouseEventKind::ScrollUp)]);
    assert_eq!(a.popup_scroll, 12);
    assert_eq!(a.sel.cursor, cursor);

    // A resize that makes room shows it all, without the hint.
    a.update(Msg::Resize(120, 40));
    let text = popup_text(&a, "Confirm prune").unwrap();
    assert!(!text.contains("j/k scroll"), "{text}");
    assert!(
        text.contains("Prune (delete) 31 object(s)?") && text.contains("old-29"),
        "{text}"
    );
    a.update(Msg::Resize(80, 24));

    // Scrolling is not confirming: Enter still prunes all 31.
    let eff = feed(&mut a, [code(KeyCode::Enter)]);
    assert!(matches!(eff.as_slice(), [Effect::Prune(o)] if o.len() == 31));
}

#[test]
fn tall_delete_keeps_the_typed_prompt_in_view() {
    let mut a = app(80, 24);
    a.update(Msg::Loaded(Ok(many_candidates(30))));
    for i in 0..30 {
        select(&mut a, &format!("old-{i:02}"));
        feed(&mut a, [key(' ')]);
    }
    feed(&mut a, [key('D'), key('3')]);
    let text = popup_text(&a, "Confirm delete").unwrap();
    assert!(text.contains("Type 30 to confirm: 3▏"), "{text}");
    assert!(text.contains("j/k scroll · lines 1-17 of 31"), "{text}");
    // The prompt, keys and hint take 3 rows (the hint wraps), the body 17.
    // j scrolls; digits still type; the prompt stays.
    feed(&mut a, [key('j'), key('j'), key('0')]);
    let text = popup_text(&a, "Confirm delete").unwrap();
    assert!(text.contains("Type 30 to confirm: 30▏"), "{text}");
    assert!(text.contains("lines 3-19 of 31"), "{text}");
    let eff = feed(&mut a, [code(KeyCode::Enter)]);
    assert!(matches!(eff.as_slice(), [Effect::Delete(o, _)] if o.len() == 30));
}

#[test]
fn help_scrolls_when_the_screen_is_short() {
    let mut a = app(160, 60);
    feed(&mut a, [key('?')]);
    let text = popup_text(&a, "Keys").unwrap();
    assert!(
        !text.contains("j/k scroll"),
        "160x60 shows all of it: {text}"
    );
    a.update(Msg::Resize(80, 16));
    let text = popup_text(&a, "Keys").unwrap();
    assert!(text.contains("j/k scroll · lines 1-"), "{text}");
    feed(&mut a, [code(KeyCode::End)]);
    let text = popup_text(&a, "Keys").unwrap();
    assert!(text.contains("field change included / excluded"), "{text}");
    assert!(a.popup.is_some(), "scrolling does not close the help");
    // A new dialog starts at its top.
    feed(&mut a, [code(KeyCode::Esc), key('?')]);
    assert_eq!(a.popup_scroll, 0);
}

/// The reason column names the other writer of a kept field, or says the
/// server defaulted it when apply's own manager owns it and the value is the
/// server's default (else apply released it), and names the writer of a
/// drift (the core's cause, from managedFields).
#[test]
fn kept_reasons_name_the_writer() {
    use kapply::merge::{Cause, FieldAction, FieldChange, classify};
    use kapply::tui::ui::reason;
    use serde_json::json;
    let keep = |path: &str| FieldChange {
        path: path.into(),
        config: None,
        live: Some(json!(2)),
        last_applied: None,
        action: FieldAction::Keep,
        reason: "live only: set by another writer or defaulted".into(),
        cause: Cause::Intended,
        owner: None,
        changed_at: None,
        hazards: vec![],
    };
    let entry = |manager: &str, fields: serde_json::Value| {
        json!({"manager": manager, "operation": "Update", "apiVersion": "apps/v1",
            "time": "2026-11-20T10:04:00Z", "fieldsV1": fields})
    };
    let live = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
    "name": "web", "managedFields": [
        entry("kubectl", json!({"f:spec": {"f:replicas": {}}})),
        entry("kube-controller-manager", json!({"f:spec": {"f:template": {"f:spec": {".": {}}}}})),
        entry("kubectl-client-side-apply", json!({"f:spec": {"f:strategy": {"f:type": {}}}})),
        entry("before-first-apply", json!({"f:spec": {"f:revisionHistoryLimit": {}}})),
        entry("kubectl-edit", json!({"f:spec": {"f:minReadySeconds": {}}})),
        entry("kubectl-client-side-apply", json!({"f:spec": {"f:progressDeadlineSeconds": {}}})),
    ]},
    // Defaults as the server gives them; progressDeadlineSeconds is not
    // (released by apply).
    "spec": {"strategy": {"type": "RollingUpdate"}, "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 120}});
    let paths = [
        "spec.replicas",
        "spec.template.spec.dnsPolicy",
        "spec.strategy.type",
        "spec.revisionHistoryLimit",
        "spec.progressDeadlineSeconds",
        "metadata.labels.x",
    ];
    let mut rows: Vec<FieldChange> = paths.iter().map(|p| keep(p)).collect();
    let mut drift = keep("spec.minReadySeconds");
    drift.action = FieldAction::Set;
    drift.config = Some(json!(5));
    drift.last_applied = Some(json!(5));
    drift.live = Some(json!(9));
    drift.reason = "config differs from live".into();
    rows.push(drift);
    let mut set = keep("spec.paused");
    set.action = FieldAction::Set;
    set.config = Some(json!(true));
    set.last_applied = Some(json!(false));
    set.reason = "config differs from live".into();
    rows.push(set);
    classify(&mut rows, &live, Some(&json!({})));
    let expected = [
        "kept: another writer owns it (kubectl)",
        // An owned ancestor names the writer of what is under it.
        "kept: another writer owns it (kube-controller-manager)",
        "kept: server default",
        "kept: server default",
        "kept: released, another writer's from now on",
        // No owner known: the plan's reason as it is.
        "live only: set by another writer or defaulted",
        "drift: changed by kubectl-edit at 2026-11-20T10:04:00Z; apply reverts it",
        "config differs from live",
    ];
    for (row, want) in rows.iter().zip(expected) {
        assert_eq!(reason(row), want, "{}", row.path);
    }
}

/// Paths as a tree: never cut from the left, whatever the width; a long
/// common prefix is a header line of its own.
#[test]
fn paths_are_a_tree_never_cut_from_the_left() {
    for (w, h, tab) in [
        (80, 24, true),
        (100, 30, false),
        (132, 34, true),
        (160, 40, false),
    ] {
        let mut a = app(w, h);
        select(&mut a, "nginx-deployment");
        if tab {
            feed(&mut a, [code(KeyCode::Tab)]);
        }
        let s = screen(&a);
        assert!(
            s.contains("  template.spec.containers[name=nginx]"),
            "{w}x{h}:\n{s}"
        );
        assert!(s.contains("     image "), "{w}x{h}:\n{s}");
        assert!(!s.contains("…="), "{w}x{h}:\n{s}");
        if w >= 132 {
            // Room for the reason column.
            assert!(s.contains("config differs "), "{w}x{h}:\n{s}");
        }
    }
}

#[test]
fn delete_propagation_is_chosen_in_the_confirm() {
    let mut a = app(80, 24);
    select(&mut a, "old-config");
    feed(&mut a, [key('D')]);
    assert!(screen(&a).contains("propagation Background"));
    // c cycles Background -> Foreground -> Orphan; nothing is sent meanwhile.
    assert!(feed(&mut a, [key('c')]).is_empty());
    assert!(screen(&a).contains("propagation Foreground"));
    assert!(feed(&mut a, [key('c')]).is_empty());
    assert!(screen(&a).contains("propagation Orphan"));
    let eff = feed(&mut a, [code(KeyCode::Enter)]);
    assert!(
        matches!(eff.as_slice(), [Effect::Delete(o, Propagation::Orphan)] if o.len() == 1),
        "{eff:?}"
    );
}

#[test]
fn ticks_need_a_redraw_only_while_a_spinner_shows() {
    let mut a = app(80, 24);
    assert!(!a.animating(), "idle after the load");
    select(&mut a, "nginx-deployment");
    let eff = feed(&mut a, [key('a')]);
    assert!(matches!(eff.as_slice(), [Effect::DryRun(_)]), "{eff:?}");
    assert!(a.animating(), "waiting for the dry run");
    feed(&mut a, [code(KeyCode::Esc)]);
    assert!(!a.animating());
    let eff = feed(&mut a, [key('r')]);
    assert!(matches!(eff.as_slice(), [Effect::Load]), "{eff:?}");
    assert!(a.animating(), "reloading");
}

// ---------- Secrets: every command and view, against the embedded server ----------

/// A Secret change taken through every command of the binary (diff, plan
/// -o json / -o yaml, apply with the server's 422 for an immutable Secret,
/// delete, a manifest error) and every TUI view (field table, YAML view,
/// apply confirmation with the server dry run, log, delete confirmation):
/// no output holds a value in clear or in base64.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_values_never_shown_by_any_command_or_view() {
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let clear = [
        "alpha-clear-111",
        "token-clear-222",
        "alpha-new-333",
        "token-new-444",
        "extra-new-555",
        "tagged-clear-666",
    ];
    let (server, dir, kubeconfig) = server::start_with_kubeconfig().await;
    let d = dir.path();
    let sec = d.join("sec");
    std::fs::create_dir_all(&sec).unwrap();
    let secret = |password: &str, token: &str, extra: Option<&str>| {
        let mut s = format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: default\n\
             immutable: true\ndata:\n  password: {}\n",
            b64(password)
        );
        if let Some(e) = extra {
            s.push_str(&format!("  extra: {}\n", b64(e)));
        }
        s.push_str(&format!("stringData:\n  token: {token}\n"));
        s
    };
    let write = |text: &str| std::fs::write(sec.join("secret.yaml"), text).unwrap();
    let kc = kubeconfig.to_str().unwrap().to_string();
    let mut shown: Vec<(String, String)> = Vec::new();
    let run = |args: Vec<&str>| {
        let kc = kc.clone();
        let args: Vec<String> = args.into_iter().map(String::from).collect();
        async move {
            let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_kapply"))
                .current_dir(d)
                .args(&args)
                .arg("--kubeconfig")
                .arg(&kc)
                .env_remove("KUBECONFIG")
                .stdin(std::process::Stdio::null())
                .output()
                .await
                .unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            (
                format!("kapply {}", args.join(" ")),
                out.status.code(),
                text,
            )
        }
    };

    write(&secret(clear[0], clear[1], None));
    let (what, status, text) = run(vec!["apply", "--yes", "-f", "sec"]).await;
    assert_eq!(status, Some(0), "{what}: {text}");
    assert!(text.contains("Secret default/creds created"), "{text}");
    shown.push((what, text));

    // The change: a new password, a new key, a new stringData token.
    write(&secret(clear[2], clear[3], Some(clear[4])));
    for args in [
        vec!["diff", "-f", "sec"],
        vec!["plan", "-f", "sec", "-o", "json"],
        vec!["plan", "-f", "sec", "-o", "yaml"],
        vec!["apply", "-f", "sec"],
    ] {
        let (what, _, text) = run(args).await;
        shown.push((what, text));
    }
    let (what, status, text) = run(vec!["apply", "--yes", "-f", "sec"]).await;
    assert_ne!(status, Some(0), "{what}: {text}");
    assert!(text.contains("field is immutable"), "{what}: {text}");
    shown.push((what, text));

    // The TUI on the same change, through the real engine.
    let engine = kube_engine(&kubeconfig, &sec).await;
    let mut a = App::new(Options::default());
    a.clock = || "12:34:56".to_string();
    a.update(Msg::Resize(160, 50));
    let start = a.start();
    settle(&mut a, &engine, start).await;
    select(&mut a, "creds");
    let mut screens = vec![("list".to_string(), screen(&a))];
    let mut step = |a: &mut App, name: &str| screens.push((name.to_string(), screen(a)));
    feed(&mut a, [code(KeyCode::Enter)]);
    step(&mut a, "field table");
    feed(&mut a, [key('y')]);
    step(&mut a, "YAML view");
    feed(&mut a, [code(KeyCode::Esc)]);
    let effects = feed(&mut a, [key('a')]);
    step(&mut a, "apply confirmation");
    settle(&mut a, &engine, effects).await;
    step(&mut a, "apply confirmation, server dry run");
    let effects = feed(&mut a, [code(KeyCode::Enter)]);
    settle(&mut a, &engine, effects).await;
    step(&mut a, "after apply");
    feed(&mut a, [key('l')]);
    step(&mut a, "log");
    feed(&mut a, [key('D')]);
    step(&mut a, "delete confirmation");
    let effects = feed(&mut a, [code(KeyCode::Enter)]);
    settle(&mut a, &engine, effects).await;
    step(&mut a, "after delete");
    let log = screens.last().map(|s| s.1.clone()).unwrap_or_default();
    assert!(
        log.contains("field is immutable"),
        "the 422 is in the log:\n{log}"
    );
    for (name, text) in screens {
        shown.push((format!("TUI {name}"), text));
    }

    // Created again, then deleted by the binary.
    let (what, status, text) = run(vec!["apply", "--yes", "-f", "sec"]).await;
    assert_eq!(status, Some(0), "{what}: {text}");
    shown.push((what, text));
    let (what, status, text) = run(vec!["delete", "--yes", "-f", "sec"]).await;
    assert_eq!(status, Some(0), "{what}: {text}");
    assert!(text.contains("deleted"), "{text}");
    shown.push((what, text));

    // A manifest error inside a Secret.
    let bad = d.join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(
        bad.join("s.yaml"),
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: tagged\nstringData:\n  pin: !!int {}\n",
            clear[5]
        ),
    )
    .unwrap();
    for args in [
        vec!["diff", "-f", "bad"],
        vec!["plan", "-f", "bad", "-o", "yaml"],
        vec!["apply", "--yes", "-f", "bad"],
    ] {
        let (what, _, text) = run(args).await;
        assert!(text.contains("bad/s.yaml:6"), "{what}: {text}");
        shown.push((what, text));
    }

    for (what, text) in &shown {
        for c in clear {
            assert!(!text.contains(c), "{what} shows {c} in clear:\n{text}");
            assert!(
                !text.contains(&b64(c)),
                "{what} shows {c} in base64:\n{text}"
            );
        }
    }
    assert!(
        shown.iter().filter(|(_, t)| t.contains("***")).count() >= 5,
        "the values are shown masked somewhere"
    );
    drop(server);
}

/// Control characters in manifest values, warnings and server messages are
/// drawn escaped (`\u{9b}`), never raw and never silently dropped.
#[test]
fn control_characters_are_drawn_escaped() {
    let mut o = tui_fixture::configmap_create();
    let evil = "x\u{1b}[2J\u{9b}31m";
    o.fields[0].config = Some(serde_json::json!(evil));
    o.config.as_mut().unwrap()["data"]["LOG_LEVEL"] = serde_json::json!(evil);
    o.warnings = vec!["note \u{1b}]0;title\u{7} \u{9b}K".to_string()];
    let mut a = App::new(Options::default());
    a.clock = || "12:34:56".to_string();
    a.update(Msg::Resize(140, 30));
    a.start();
    a.update(Msg::Loaded(Ok(kapply::plan::Plan {
        objects: vec![o],
        ..Default::default()
    })));
    a.update(Msg::Applied(vec![result(
        "ConfigMap default/app-config",
        false,
        "ConfigMap \"app-config\" is invalid: \u{1b}[31mbad\u{9b}2J",
    )]));
    a.update(key('l'));
    let no_raw = |a: &App| {
        let buf = buffer(a);
        for c in buf.content() {
            assert!(
                !c.symbol().chars().any(char::is_control),
                "a raw control character in a cell: {:?}",
                c.symbol()
            );
        }
    };
    no_raw(&a);
    let s = screen(&a);
    // The table cell, the warning and the server's message in the log.
    assert!(s.contains(r"x\u{1b}[2J\u{9b}31m"), "{s}");
    assert!(s.contains(r"note \u{1b}]0;title\u{7} \u{9b}K"), "{s}");
    assert!(s.contains(r"\u{1b}[31mbad\u{9b}2J"), "{s}");
    feed(&mut a, [key('y')]);
    no_raw(&a);
    let s = screen(&a);
    assert!(
        s.contains(r"\e[2J\x9b31m") || s.contains(r"\u001b[2J\u009b31m"),
        "{s}"
    );
}

/// A row with a hazard carries `⚠` in the table, and the box under the
/// table says what will happen.
#[test]
fn hazard_rows_are_marked() {
    use kapply::merge::{Hazard, HazardKind};
    let mut o = tui_fixture::configmap_drift();
    o.fields[2].hazards.push(Hazard {
        kind: HazardKind::ReplacesOthersEdits,
        message: "replaces WORKERS whole: the edits of kubectl-edit are lost".to_string(),
    });
    let mut a = App::new(Options::default());
    a.update(Msg::Resize(120, 40));
    a.start();
    a.update(Msg::Loaded(Ok(kapply::plan::Plan {
        objects: vec![o],
        ..Default::default()
    })));
    feed(&mut a, [code(KeyCode::Tab), key('G')]);
    let s = screen(&a);
    let row = s.lines().find(|l| l.contains(" WORKERS ")).unwrap();
    assert!(row.contains("■⚠ "), "{s}");
    assert!(
        s.contains("⚠ replaces WORKERS whole: the edits of kubectl-edit are lost"),
        "{s}"
    );
}

/// TERM=dumb: no colour and plain ASCII borders, on every screen; other
/// terminals keep both.
#[test]
fn dumb_terminal_gets_no_colour_and_ascii_borders() {
    use std::ffi::OsStr;
    let dumb = Options::from_vars(None, Some(OsStr::new("dumb")));
    assert!(!dumb.color && dumb.ascii);
    let xterm = Options::from_vars(None, Some(OsStr::new("xterm-256color")));
    assert!(xterm.color && !xterm.ascii);
    let no_color = Options::from_vars(Some(OsStr::new("1")), Some(OsStr::new("xterm")));
    assert!(!no_color.color && !no_color.ascii);

    let mut a = app_with(dumb, 100, 30);
    select(&mut a, "nginx-deployment");
    let check = |a: &App, what: &str| {
        let buf = buffer(a);
        for c in buf.content() {
            assert_eq!(
                c.fg,
                Color::Reset,
                "{what}: cell {:?} has a colour",
                c.symbol()
            );
            assert_eq!(
                c.bg,
                Color::Reset,
                "{what}: cell {:?} has a colour",
                c.symbol()
            );
            assert!(
                !c.symbol()
                    .chars()
                    .any(|ch| ('\u{2500}'..='\u{257f}').contains(&ch)),
                "{what}: box drawing {:?}",
                c.symbol()
            );
        }
        let s = screen(a);
        // ASCII frames: the list's, or the help's over it.
        assert!(
            (s.contains("+ Objects") || s.contains("+ Keys")) && s.contains("|"),
            "{what}:\n{s}"
        );
    };
    check(&a, "the list");
    insta::assert_snapshot!("dumb_terminal", screen(&a));
    feed(&mut a, [code(KeyCode::Tab)]);
    check(&a, "the field pane");
    feed(&mut a, [key('y')]);
    check(&a, "the YAML view");
    feed(&mut a, [key('y'), key('?')]);
    check(&a, "the help");
    feed(&mut a, [code(KeyCode::Esc), key('p')]);
    check(&a, "the prune dialog");
}

/// istio's Gateway and Gateway API's Gateway of the same name: marked,
/// applied and reported as two objects (a result for one never clears the
/// other's mark).
#[test]
fn kinds_of_the_same_name_in_two_groups_are_two_objects() {
    let gateway = |api: &str| {
        let mut o = tui_fixture::configmap_create();
        o.api_version = api.to_string();
        o.kind = "Gateway".into();
        o.name = "web".into();
        o
    };
    let istio = gateway("networking.istio.io/v1");
    let api = gateway("gateway.networking.k8s.io/v1");
    let mut plan = tui_fixture::plan();
    plan.objects.extend([istio.clone(), api.clone()]);
    let mut a = app(160, 24);
    a.update(Msg::Loaded(Ok(plan)));
    // The list tells them apart by their group.
    let s = screen(&a);
    assert!(s.contains("Gateway.networking.istio.io/web"), "{s}");
    assert!(s.contains("Gateway.gateway.networking.k8s.io/web"), "{s}");
    assert!(s.contains("Deployment/nginx-deployment"), "{s}");
    select(&mut a, "web");
    feed(&mut a, [key(' '), key('j'), key(' ')]);
    assert_eq!(a.sel.marked.len(), 2, "{:?}", a.sel.marked);
    a.update(Msg::Applied(vec![
        ObjectResult::new(istio.id(), Outcome::Created),
        ObjectResult::failed(api.id(), Failure::Server("forbidden".into())),
    ]));
    assert_eq!(
        a.sel.marked.iter().collect::<Vec<_>>(),
        [&api.id()],
        "only the one applied is unmarked"
    );
    assert_eq!(
        a.last_result.as_deref(),
        Some("applied 1 object(s), 1 failed")
    );
    // Drawn as a failure because one is, not because of the words.
    assert!(a.last_result_failed);
    a.update(Msg::Loaded(Ok(tui_fixture::plan())));
    a.update(Msg::Applied(vec![ObjectResult::new(
        istio.id(),
        Outcome::Created,
    )]));
    assert_eq!(a.last_result.as_deref(), Some("applied 1 object(s)"));
    assert!(!a.last_result_failed);
}

// ---------- Release (R) ----------

#[test]
fn release_toggles_on_a_clear_row_and_is_listed_in_the_confirmation() {
    let mut a = app(120, 30);
    select(&mut a, "nginx-deployment");
    // Row 0 of the field pane: the minReadySeconds clear.
    feed(&mut a, [code(KeyCode::Tab), key('R')]);
    let s = screen(&a);
    assert!(s.contains("free  released: live value s"), "{s}");
    assert!(
        s.contains("released: live value stays, dropped from last-applied: another writer owns"),
        "{s}"
    );
    insta::assert_snapshot!("fields_released", s);

    // Not on a set row: the reason is shown, nothing toggles. The row is
    // in view, so the status line says only why, and reads whole at 80
    // columns.
    feed(&mut a, [key('j'), key('R')]);
    let why = "R: not a clear row: only a field apply would remove can be released";
    assert_eq!(a.last_result.as_deref(), Some(why));
    a.update(Msg::Resize(80, 24));
    let s = screen(&a);
    assert!(s.lines().last().unwrap().starts_with(why), "{s}");
    a.update(Msg::Resize(120, 30));
    assert_eq!(a.sel.released.values().map(|s| s.len()).sum::<usize>(), 1);

    // The apply sends it released, the rest whole.
    let eff = feed(&mut a, [key('a')]);
    let [Effect::DryRun(items)] = eff.as_slice() else {
        panic!("{eff:?}");
    };
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].released_fields, vec!["spec.minReadySeconds"]);
    assert_eq!(items[0].accepted_fields, None);
    let s = screen(&a);
    assert!(
        s.contains("release spec.minReadySeconds (live value 5 stays; dropped from last-applied)"),
        "{s}"
    );
    insta::assert_snapshot!("apply_confirm_released", s);
    let eff = feed(&mut a, [code(KeyCode::Esc)]);
    assert!(eff.is_empty());

    // R again: a clear once more; Space on a released row excludes it
    // (and it is no longer released).
    feed(&mut a, [key('k'), key('R')]);
    assert!(a.sel.released.is_empty());
    assert!(screen(&a).contains("spec.minReadySeconds: clear (apply removes it)"));
    feed(&mut a, [key('R'), key(' ')]);
    assert!(a.sel.released.is_empty());
    let eff = feed(&mut a, [key('a')]);
    let [Effect::DryRun(items)] = eff.as_slice() else {
        panic!("{eff:?}");
    };
    assert!(items[0].released_fields.is_empty());
    assert_eq!(
        items[0].accepted_fields.as_deref(),
        Some(&["spec.template.spec.containers[name=nginx].image".into()][..])
    );
}

/// R then apply through the real engine on the embedded server: the live
/// value stays, the annotation loses the field, and the object is in sync.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn released_field_keeps_its_live_value_through_the_engine() {
    let (server, dir, kubeconfig) = server::start_with_kubeconfig().await;
    let d = dir.path().join("m");
    std::fs::create_dir_all(&d).unwrap();
    let manifest = |extra: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\n\
             spec:\n{extra}  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      \
             labels: {{app: web}}\n    spec:\n      containers:\n      - name: c\n        image: nginx:1.27\n"
        )
    };
    std::fs::write(d.join("web.yaml"), manifest("  minReadySeconds: 7\n")).unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_kapply"))
        .args(["apply", "--yes", "-f"])
        .arg(&d)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .env_remove("KUBECONFIG")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // minReadySeconds leaves the config: a clear row, released with R.
    std::fs::write(d.join("web.yaml"), manifest("")).unwrap();

    let engine = kube_engine(&kubeconfig, &d).await;
    let mut a = App::new(Options::default());
    a.update(Msg::Resize(120, 30));
    let start = a.start();
    settle(&mut a, &engine, start).await;
    select(&mut a, "web");
    feed(&mut a, [code(KeyCode::Enter)]);
    let s = screen(&a);
    assert!(s.contains("clear"), "{s}");
    feed(&mut a, [key('R')]);
    let effects = feed(&mut a, [key('a')]);
    settle(&mut a, &engine, effects).await;
    let text = popup_text(&a, "Confirm apply").unwrap();
    assert!(
        text.contains("release spec.minReadySeconds (live value 7 stays"),
        "{text}"
    );
    assert!(text.contains("✓ Deployment default/web"), "{text}");
    let effects = feed(&mut a, [code(KeyCode::Enter)]);
    settle(&mut a, &engine, effects).await;

    let live = server
        .store()
        .get("apps/v1", "Deployment", Some("default"), "web")
        .unwrap();
    assert_eq!(live["spec"]["minReadySeconds"], 7, "{live}");
    let la = live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .unwrap();
    assert!(!la.contains("minReadySeconds"), "{la}");
    // Reloaded after the apply: nothing left to do.
    assert!(a.sel.released.is_empty());
    let web = a
        .list
        .plan
        .objects
        .iter()
        .find(|o| o.name == "web")
        .unwrap();
    assert_eq!(web.action, kapply::plan::ObjectAction::Unchanged, "{web:?}");
    // And kubectl agrees: nothing to diff, and its apply leaves the field.
    if let Some(k) = kubectl::Kubectl::find(&kubeconfig) {
        let dir = d.display().to_string();
        let diff = k.run(&["diff", "-f", &dir], &[]);
        assert_eq!(
            diff.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&diff.stdout)
        );
        k.ok(&["apply", "-f", &dir]);
        let live = server
            .store()
            .get("apps/v1", "Deployment", Some("default"), "web")
            .unwrap();
        assert_eq!(live["spec"]["minReadySeconds"], 7, "{live}");
    }
}

// ---------- Export (E) ----------

#[test]
fn export_asks_for_a_path_and_a_second_confirmation_before_overwriting() {
    let mut a = app(100, 30);
    // A managed object: refused, with why.
    select(&mut a, "nginx-deployment");
    assert!(feed(&mut a, [key('E')]).is_empty());
    assert!(
        a.last_result
            .as_deref()
            .is_some_and(|r| r.contains("E exports objects apply does not manage yet")),
        "{:?}",
        a.last_result
    );

    select(&mut a, "old-config");
    let eff = feed(&mut a, [key('E')]);
    let [Effect::ExportTarget(obj, None)] = eff.as_slice() else {
        panic!("{eff:?}");
    };
    assert_eq!(obj.name, "old-config");
    let obj = obj.clone();
    feed(
        &mut a,
        [Msg::ExportAsk(
            obj.clone(),
            Ok(kapply::ops::ExportTarget {
                path: "manifests/configmap-old-config.yaml".into(),
                note: None,
            }),
        )],
    );
    insta::assert_snapshot!("export_path", screen(&a));
    // The path is edited in place: j and k are typed, not scroll keys.
    let typed = feed(
        &mut a,
        std::iter::repeat_n(code(KeyCode::Backspace), "old-config.yaml".len())
            .chain(keys("kj.yaml"))
            .chain([code(KeyCode::Enter)]),
    );
    let [Effect::Export(o, path, false)] = typed.as_slice() else {
        panic!("{typed:?}");
    };
    assert_eq!(o.name, "old-config");
    assert_eq!(path, "manifests/configmap-kj.yaml");

    // The file exists: nothing written until y.
    feed(
        &mut a,
        [Msg::Exported(
            obj.clone(),
            Ok(kapply::ops::Exported::Exists(path.clone())),
        )],
    );
    insta::assert_snapshot!("export_overwrite", screen(&a));
    let eff = feed(&mut a, [key('n')]);
    assert!(eff.is_empty() && a.popup.is_none(), "{eff:?}");
    assert!(
        a.last_result
            .as_deref()
            .unwrap_or("")
            .contains("left as it was")
    );

    feed(
        &mut a,
        [Msg::Exported(
            obj.clone(),
            Ok(kapply::ops::Exported::Exists(path.clone())),
        )],
    );
    let eff = feed(&mut a, [key('y')]);
    assert!(
        matches!(eff.as_slice(), [Effect::Export(_, p, true)] if p == path),
        "{eff:?}"
    );
    // Written: logged, and the plan is loaded again.
    let eff = feed(
        &mut a,
        [Msg::Exported(
            obj,
            Ok(kapply::ops::Exported::Written(path.clone())),
        )],
    );
    assert!(matches!(eff.as_slice(), [Effect::Load]), "{eff:?}");
    assert!(
        a.log
            .iter()
            .any(|l| l.ok && l.text.contains("exported to manifests/configmap-kj.yaml")),
        "{:?}",
        a.log
    );
}

/// E on an object kubectl created (no annotation) through the real engine:
/// the export goes to a new file by default; written into its manifest
/// (another path, and a second confirmation) it replaces only the object's
/// document, the comments heading it kept; the
/// reload shows only the annotation to add, and applying it leaves the
/// live object unchanged apart from the annotation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_then_apply_changes_nothing_but_the_annotation() {
    let (server, dir, kubeconfig) = server::start_with_kubeconfig().await;
    let Some(k) = kubectl::Kubectl::find(&kubeconfig) else {
        return;
    };
    k.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=3",
    ]);
    let get = || {
        server
            .store()
            .get("apps/v1", "Deployment", Some("default"), "web")
            .unwrap()
    };
    let before = get();
    let d = dir.path().join("m");
    std::fs::create_dir_all(&d).unwrap();
    // The user's manifest for it: what they think it is.
    std::fs::write(
        d.join("web.yaml"),
        "# web: team a\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    \
         matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      \
         containers:\n      - name: nginx\n        image: nginx:1.28\n",
    )
    .unwrap();

    let engine = kube_engine(&kubeconfig, &d).await;
    // A prune candidate (no manifest) would go to the manifest directory.
    let mut cand = kapply::plan::ObjectPlan {
        source: None,
        ..tui_fixture::plan().objects[0].clone()
    };
    cand.kind = "ConfigMap".into();
    cand.name = "cfg".into();
    let target = engine.export_target(&cand, None).unwrap();
    assert_eq!(
        target.path,
        d.join("configmap-cfg.yaml").display().to_string()
    );

    let mut a = App::new(Options::default());
    a.update(Msg::Resize(120, 30));
    let start = a.start();
    settle(&mut a, &engine, start).await;
    select(&mut a, "web");
    let web = a.selected().unwrap();
    assert_eq!(web.action, kapply::plan::ObjectAction::Update);
    assert!(
        web.fields
            .iter()
            .any(|f| f.path.as_str().ends_with("image")),
        "{web:?}"
    );
    let effects = feed(&mut a, [key('E')]);
    settle(&mut a, &engine, effects).await;
    let text = popup_text(&a, "Export").unwrap();
    let own = d.join("web.yaml").display().to_string();
    // Not its manifest: a new file.
    let new = d.join("deployment-web.yaml").display().to_string();
    assert!(text.contains(&format!("Path: {new}")), "{text}");
    assert!(text.contains("also defined at"), "{text}");
    // Into the manifest instead: its path typed.
    a.update(Msg::Key(crossterm::event::KeyEvent::new(
        KeyCode::Char('u'),
        crossterm::event::KeyModifiers::CONTROL,
    )));
    feed(&mut a, own.chars().map(key));
    let effects = feed(&mut a, [code(KeyCode::Enter)]);
    settle(&mut a, &engine, effects).await;
    let text = popup_text(&a, "File exists").unwrap();
    assert!(text.contains(&format!("{own} exists.")), "{text}");
    assert!(text.contains("comments heading it"), "{text}");
    // What the write changes in it, before it is made.
    assert!(text.contains("What changes in it:"), "{text}");
    assert!(
        text.contains("- matchLabels: {app: web}") && text.contains("+ replicas: 3"),
        "{text}"
    );
    assert!(
        std::fs::read_to_string(d.join("web.yaml"))
            .unwrap()
            .contains("nginx:1.28"),
        "written before the second confirmation"
    );
    let effects = feed(&mut a, [key('y')]);
    settle(&mut a, &engine, effects).await;
    let exported = std::fs::read_to_string(d.join("web.yaml")).unwrap();
    assert!(
        exported.starts_with("# web: team a\n")
            && exported.contains("nginx:1.27")
            && !exported.contains("resourceVersion"),
        "{exported}"
    );
    assert!(!d.join("deployment-web.yaml").exists());

    // Reloaded: only the annotation is left to write.
    let web = a.selected().unwrap();
    assert_eq!(web.name, "web");
    let changes: Vec<&str> = web
        .fields
        .iter()
        .filter(|f| f.action != kapply::merge::FieldAction::Keep)
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(
        changes,
        ["metadata.annotations[\"kubectl.kubernetes.io/last-applied-configuration\"]"],
        "{web:?}"
    );
    let effects = feed(&mut a, [key('a')]);
    settle(&mut a, &engine, effects).await;
    let effects = feed(&mut a, [code(KeyCode::Enter)]);
    settle(&mut a, &engine, effects).await;

    let after = get();
    let la = "kubectl.kubernetes.io/last-applied-configuration";
    assert!(after["metadata"]["annotations"][la].is_string(), "{after}");
    let strip = |o: &serde_json::Value| {
        let mut o = o.clone();
        o.as_object_mut().unwrap().remove("status");
        let md = o["metadata"].as_object_mut().unwrap();
        for k in ["resourceVersion", "managedFields", "generation"] {
            md.remove(k);
        }
        if let Some(an) = md.get_mut("annotations").and_then(|a| a.as_object_mut()) {
            an.remove(la);
            if an.is_empty() {
                md.remove("annotations");
            }
        }
        o
    };
    assert_eq!(strip(&after), strip(&before));
    let web = a.selected().unwrap();
    assert_eq!(web.action, kapply::plan::ObjectAction::Unchanged, "{web:?}");

    // In a file with other objects: only its document is replaced, the
    // comment heading it kept.
    k.ok(&["create", "configmap", "cfg", "--from-literal=a=1"]);
    let other = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\ndata: {x: '1'}\n---\n";
    let app_yaml = d.join("app.detail.yaml");
    std::fs::write(
        &app_yaml,
        format!("{other}# cfg as I remember it\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata: {{a: '2'}}\n"),
    )
    .unwrap();
    let effects = feed(&mut a, [code(KeyCode::Esc), key('r')]);
    settle(&mut a, &engine, effects).await;
    select(&mut a, "cfg");
    let effects = feed(&mut a, [key('E')]);
    settle(&mut a, &engine, effects).await;
    let text = popup_text(&a, "Export").unwrap();
    let file = app_yaml.display().to_string();
    assert!(
        text.contains(&d.join("configmap-cfg.yaml").display().to_string()),
        "{text}"
    );
    a.update(Msg::Key(crossterm::event::KeyEvent::new(
        KeyCode::Char('u'),
        crossterm::event::KeyModifiers::CONTROL,
    )));
    feed(&mut a, file.chars().map(key));
    let effects = feed(&mut a, [code(KeyCode::Enter)]);
    settle(&mut a, &engine, effects).await;
    let text = popup_text(&a, "File exists").unwrap();
    assert!(
        text.contains("y replaces the document of ConfigMap default/cfg in it"),
        "{text}"
    );
    let effects = feed(&mut a, [key('y')]);
    settle(&mut a, &engine, effects).await;
    let written = std::fs::read_to_string(&app_yaml).unwrap();
    assert!(written.starts_with(other), "{written}");
    assert!(
        written.contains("name: cfg")
            && written.contains("# cfg as I remember it\n")
            && !written.contains("'2'"),
        "{written}"
    );
    // Rows of a real load are kept small: the whole row is built on demand.
    let i = a
        .list
        .plan
        .objects
        .iter()
        .position(|o| o.name == "cfg")
        .unwrap();
    let cfg = a.object(i).unwrap();
    let changes: Vec<&str> = cfg
        .fields
        .iter()
        .filter(|f| f.action != kapply::merge::FieldAction::Keep)
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(
        changes,
        ["metadata.annotations[\"kubectl.kubernetes.io/last-applied-configuration\"]"],
        "{cfg:?}"
    );
    let other = a
        .list
        .plan
        .objects
        .iter()
        .find(|o| o.name == "other")
        .unwrap();
    assert_eq!(other.action, kapply::plan::ObjectAction::Create);
}

/// The demo's Deployment at 80x24, kept fields shown: its paths are long
/// (`containers[name=nginx].terminationMessagePolicy`), yet every row keeps
/// its action column; the paths give way (cut in the middle, the field's
/// own name kept where it fits), in either focus.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_action_column_always_shows_at_80x24() {
    let demo = kapply::demo::Demo::start(None, None, false).await.unwrap();
    let engine: std::sync::Arc<dyn kapply::ops::Engine> =
        std::sync::Arc::new(demo.engine().await.unwrap());
    let mut a = App::new(Options::default());
    a.clock = || "12:34:56".to_string();
    a.update(Msg::Resize(80, 24));
    let start = a.start();
    settle(&mut a, &engine, start).await;
    select(&mut a, "nginx-deployment");
    let mut frames = Vec::new();
    // The list focused (the narrowest table), then the fields, kept shown.
    for k in [key('K'), code(KeyCode::Tab)] {
        feed(&mut a, [k]);
        let o = a.selected().unwrap();
        let inner = a.field_table_size().unwrap().0;
        let l = kapply::tui::fieldtable::layout(o, true, inner);
        assert!(l.widths[4] >= 5, "no act column at {inner}: {:?}", l.widths);
        frames.push(screen(&a));
    }
    // The last rows: the longest paths.
    let rows = a.selected().unwrap().fields.len();
    feed(&mut a, (0..rows).map(|_| key('j')));
    frames.push(screen(&a));
    let manifests = demo.manifests.display().to_string();
    let s = frames[1..].join("\n").replace(&manifests, "<manifests>");
    // The deepest, longest path: cut in the middle, its action shown.
    let line = s
        .lines()
        .find(|l| l.contains("terminati…agePolicy"))
        .unwrap_or_else(|| panic!("{s}"));
    assert!(line.contains(" keep "), "{line}");
    insta::assert_snapshot!("demo_deployment_80x24", s);
}

// ---------- issue 23: context, back and quit, first change, marks ----------

#[test]
fn esc_goes_back_and_q_asks_before_dropping_marks() {
    let mut a = app(80, 24);
    select(&mut a, "nginx-deployment");
    // Esc clears the search, then the filter, then leaves the field pane.
    feed(&mut a, keys("/nginx"));
    feed(&mut a, [code(KeyCode::Enter), key('f'), code(KeyCode::Tab)]);
    assert_eq!(a.list.search, "nginx");
    assert_eq!(a.list.filter, kapply::tui::app::Filter::Changes);
    assert_eq!(a.focus, kapply::tui::app::Focus::Fields);
    assert!(feed(&mut a, [code(KeyCode::Esc)]).is_empty());
    assert!(a.list.search.is_empty());
    assert!(feed(&mut a, [code(KeyCode::Esc)]).is_empty());
    assert_eq!(a.list.filter, kapply::tui::app::Filter::All);
    assert!(feed(&mut a, [code(KeyCode::Esc)]).is_empty());
    assert_eq!(a.focus, kapply::tui::app::Focus::List);
    // Marked, then Esc: nothing is lost.
    feed(&mut a, [key(' ')]);
    assert!(feed(&mut a, [code(KeyCode::Esc), code(KeyCode::Esc)]).is_empty());
    assert_eq!(a.sel.marked.len(), 1);
    // q asks first; n (or Esc) stays with the mark, y quits.
    assert!(feed(&mut a, [key('q')]).is_empty());
    let s = screen(&a);
    assert!(
        s.contains("Quit kapply? 1 object(s) marked for apply are dropped."),
        "{s}"
    );
    assert!(feed(&mut a, [key('n')]).is_empty());
    assert!(a.popup.is_none() && a.sel.marked.len() == 1);
    feed(&mut a, [key('q')]);
    assert!(feed(&mut a, [code(KeyCode::Esc)]).is_empty());
    feed(&mut a, [key('q')]);
    assert!(matches!(
        feed(&mut a, [key('y')]).as_slice(),
        [Effect::Quit]
    ));
    // Nothing marked: q quits at once.
    let mut b = app(80, 24);
    assert!(matches!(
        feed(&mut b, [key('q')]).as_slice(),
        [Effect::Quit]
    ));
}

#[test]
fn the_cluster_is_named_at_every_width() {
    let long = "arn:aws:eks:eu-west-1:123456789012:cluster/production-payments";
    for (w, h) in [(60, 15), (80, 24), (160, 45), (200, 60)] {
        let mut a = app(w, h);
        a.conn.server = Some(kapply::ops::Server {
            url: "https://ABCDEF0123456789.gr7.eu-west-1.eks.amazonaws.com".into(),
            context: long.into(),
            namespace: "payments".into(),
        });
        let s = screen(&a);
        let first = s.lines().next().unwrap();
        assert!(first.chars().count() <= w as usize, "{first}");
        // Never dropped: each is there, whole or cut in the middle.
        assert!(first.contains("payments"), "{w}: {first}");
        assert!(first.contains("arn:"), "{w}: {first}");
        assert!(first.contains("ABCDEF"), "{w}: {first}");
        if w == 200 {
            assert_eq!(
                first.trim_end(),
                format!(
                    "kapply  context {long}  server \
                     https://ABCDEF0123456789.gr7.eu-west-1.eks.amazonaws.com  namespace payments"
                )
            );
        } else {
            assert!(
                first.contains("ctx ") && first.contains("ns payments"),
                "{first}"
            );
        }
    }
}

#[test]
fn the_cursor_starts_on_the_first_change() {
    let mut a = App::new(Options::default());
    a.update(Msg::Resize(80, 24));
    a.start();
    let mut plan = tui_fixture::plan();
    // The Namespace listed first is in sync: the cursor skips it.
    let ns = plan
        .objects
        .iter_mut()
        .find(|o| o.kind == "Namespace")
        .unwrap();
    ns.action = kapply::plan::ObjectAction::Unchanged;
    ns.fields.clear();
    a.update(Msg::Loaded(Ok(plan)));
    assert_eq!(a.selected().unwrap().name, "app-config");
    // A reload leaves it where the user put it.
    select(&mut a, "nginx");
    a.update(key('r'));
    a.update(Msg::Loaded(Ok(tui_fixture::plan())));
    assert_eq!(a.selected().unwrap().name, "nginx");
}

#[test]
fn errors_and_warnings_have_their_own_marks_counts_and_filters() {
    let mut a = app(80, 24);
    let s = screen(&a);
    assert!(s.contains("!1 error  ⚠1 warning"), "{s}");
    assert!(
        s.contains("! Widget/thing") && s.contains("⚠ Secret/db-credentials"),
        "{s}"
    );
    use kapply::tui::app::Filter;
    while a.list.filter != Filter::Error {
        feed(&mut a, [key('f')]);
    }
    let s = screen(&a);
    assert!(
        s.contains("Objects 1/7 ns · error") && s.contains("Widget/thing"),
        "{s}"
    );
    assert!(!s.contains("Secret/db-credentials"), "{s}");
    feed(&mut a, [key('f')]);
    assert_eq!(a.list.filter, Filter::Warning);
    let s = screen(&a);
    assert!(
        s.contains("Objects 1/7 ns · warning") && s.contains("Secret/db-credentials"),
        "{s}"
    );
    assert!(!s.contains("Widget/thing"), "{s}");
}

#[test]
fn secret_rows_say_whether_the_value_changes() {
    let mut a = app(160, 45);
    select(&mut a, "db-credentials");
    feed(&mut a, [code(KeyCode::Tab)]);
    let s = screen(&a);
    let row = |name: &str| {
        s.lines()
            .find(|l| l.contains(&format!("  {name} ")))
            .unwrap_or_else(|| panic!("{name}:\n{s}"))
            .to_string()
    };
    // data.user: the same value live and in the config; password is new.
    assert!(
        row("user").contains("***") && row("user").contains("unchanged"),
        "{s}"
    );
    assert!(row("password").contains(" changed "), "{s}");
    assert!(
        !s.contains("correct-horse") && !s.contains("YWRtaW4"),
        "{s}"
    );
}

/// The README's key table and legend are the key table's
/// (`kapply::tui::keymap`): `KAPPLY_UPDATE_README=1 cargo test --test tui
/// readme_key_table` writes them.
#[test]
fn readme_key_table_is_made_from_the_key_table() {
    const BEGIN: &str = "<!-- keys: made from src/tui/keymap.rs; a test checks it -->\n";
    const END: &str = "<!-- end of keys -->\n";
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let (Some(b), Some(e)) = (readme.find(BEGIN), readme.find(END)) else {
        panic!("README.md lacks the key table's markers {BEGIN:?} .. {END:?}");
    };
    let want = format!("{BEGIN}\n{}\n", kapply::tui::keymap::readme_table());
    let have = &readme[b..e];
    if have != want && std::env::var_os("KAPPLY_UPDATE_README").is_some() {
        let new = format!("{}{want}{}", &readme[..b], &readme[e..]);
        std::fs::write(path, new).unwrap();
        return;
    }
    assert_eq!(
        have, want,
        "README.md's key table differs from the key table"
    );
}

#[test]
fn help_and_footer_come_from_the_key_table() {
    let mut a = app(160, 45);
    select(&mut a, "nginx-deployment");
    // The footer names the keys of the list, and the help and quit keys.
    let s = screen(&a);
    let last = s.lines().last().unwrap();
    for k in ["Space mark", "M mark all", "a apply", "? help", "q quit"] {
        assert!(last.contains(k), "{last}");
    }
    assert!(
        !last.contains("R release"),
        "R is the field table's: {last}"
    );
    feed(&mut a, [code(KeyCode::Tab)]);
    let s = screen(&a);
    let last = s.lines().last().unwrap();
    assert!(
        last.contains("Space include") && last.contains("R release"),
        "{last}"
    );
    // At 80 columns fewer keys fit, help and quit always.
    let mut b = app(80, 24);
    feed(&mut b, [key('l')]);
    b.update(Msg::Applied(vec![result(
        "Deployment default/nginx-deployment",
        true,
        "configured",
    )]));
    let s = screen(&b);
    let last = s.lines().last().unwrap();
    assert!(
        last.ends_with("? help  q quit") || last.contains("? help"),
        "{last}"
    );
    // The help lists every binding and the legend of every mark.
    let mut c = app(160, 60);
    feed(&mut c, [key('?')]);
    let text = popup_text(&c, "Keys").unwrap();
    for b in kapply::tui::keymap::BINDINGS {
        assert!(text.contains(b.label), "help lacks {}: {text}", b.label);
    }
    for (m, what) in kapply::tui::keymap::MARKS {
        assert!(
            text.contains(&collapse(what)) && text.contains(m),
            "legend lacks {m}"
        );
    }
}

#[test]
fn mark_all_and_unmark_all_act_on_what_is_shown() {
    let mut a = app(80, 24);
    // Only the changes: create, update, prune.
    feed(&mut a, [key('f')]);
    feed(&mut a, [key('M')]);
    let shown: Vec<String> = a
        .list
        .plan
        .objects
        .iter()
        .filter(|o| a.sel.marked.contains(&o.id()))
        .map(|o| o.name.clone())
        .collect();
    assert_eq!(shown.len(), a.list.shown, "{shown:?}");
    assert!(
        !shown.contains(&"nginx".to_string()),
        "in sync, not shown: {shown:?}"
    );
    // A search narrows it: U unmarks only the objects it shows.
    feed(&mut a, keys("/old"));
    feed(&mut a, [code(KeyCode::Enter), key('U')]);
    assert_eq!(a.sel.marked.len(), shown.len() - 1);
    assert!(a.sel.marked.iter().all(|m| m.name != "old-config"));
}

#[test]
fn e_opens_the_manifest_at_its_line_and_reloads_after() {
    let mut a = app(80, 24);
    select(&mut a, "nginx-deployment");
    let eff = feed(&mut a, [key('e')]);
    match eff.as_slice() {
        [Effect::Edit { file, line }] => {
            assert_eq!((file.as_str(), *line), ("manifests/deployment.yaml", 1));
        }
        other => panic!("{other:?}"),
    }
    // The editor exited: the manifests and live state are read again.
    let eff = feed(&mut a, [Msg::Edited(Ok(()))]);
    assert!(matches!(eff.as_slice(), [Effect::Load]), "{eff:?}");
    // An editor that failed says so and reloads nothing.
    a.update(Msg::Loaded(Ok(tui_fixture::plan())));
    let eff = feed(
        &mut a,
        [Msg::Edited(
            Err("`nope` ended with exit status: 127".into()),
        )],
    );
    assert!(eff.is_empty());
    assert!(
        screen(&a).contains("editor: `nope` ended"),
        "{}",
        screen(&a)
    );
    // $VISUAL, else $EDITOR, else vi.
    use kapply::tui::runtime::editor_from;
    assert_eq!(editor_from(Some("code -w"), Some("nano")), "code -w");
    assert_eq!(editor_from(Some(""), Some("nano")), "nano");
    assert_eq!(editor_from(None, None), "vi");
}

#[test]
fn p_says_why_there_is_no_prune_candidate() {
    let mut plan = tui_fixture::plan();
    plan.objects
        .retain(|o| o.action != kapply::plan::ObjectAction::Prune);
    for (scope, want) in [
        (None, "Pruning is not enabled for this run"),
        (
            Some("--prune -l app=demo; the kinds looked at: ConfigMap, Secret"),
            "Nothing matched",
        ),
    ] {
        let mut a = app(80, 24);
        a.conn.prune_scope = scope.map(str::to_string);
        a.update(key('r'));
        a.update(Msg::Loaded(Ok(plan.clone())));
        feed(&mut a, [key('p')]);
        let text =
            popup_text(&a, "No prune candidates").unwrap_or_else(|| panic!("{}", screen(&a)));
        assert!(text.contains(want), "{text}");
        if scope.is_none() {
            assert!(
                text.contains("--prune -l SELECTOR") && text.contains("--applyset"),
                "{text}"
            );
        } else {
            assert!(
                text.contains("the kinds looked at: ConfigMap, Secret"),
                "{text}"
            );
        }
        assert!(feed(&mut a, [code(KeyCode::Esc)]).is_empty());
        assert!(a.popup.is_none());
    }
}

/// Lists, maps and multi-line strings: a summary in the table (naming the
/// element that changed), the value as YAML or text with a line diff in the
/// box under it; at 80x24 and 160x45.
#[test]
fn structured_values_read_as_blocks_with_a_line_diff() {
    for (w, h) in [(80, 24), (160, 45)] {
        for (name, want_cell, want_diff) in [
            (
                "coredns",
                ".:53 {… (20 lines)",
                ["-     cache 30", "+     cache 60"],
            ),
            (
                "ingress-nginx-controller",
                "[7 items, [5] changed]",
                [
                    "- - --validating-webhook=:8443",
                    "+ - --validating-webhook=:9443",
                ],
            ),
            (
                "kubernetes-apps",
                "[1 item, name=kubernetes-apps",
                ["[5m]", "[10m]"],
            ),
        ] {
            let mut a = app(w, h);
            a.update(key('r'));
            a.update(Msg::Loaded(Ok(tui_fixture::structured())));
            select(&mut a, name);
            feed(&mut a, [code(KeyCode::Tab)]);
            let s = screen(&a);
            insta::assert_snapshot!(format!("structured_{name}_{w}x{h}"), s);
            if w == 160 {
                assert!(s.contains(want_cell), "{name} at {w}x{h}:\n{s}");
                for d in want_diff {
                    assert!(s.contains(d), "{name} at {w}x{h} lacks {d:?}:\n{s}");
                }
            }
            // Never one-line JSON.
            assert!(!s.contains("[\"/nginx") && !s.contains("{\"name\""), "{s}");
        }
    }
}

/// Each cell's foreground as a letter (`.` the terminal's own, `K` dark
/// grey, `k` grey, lower case the light variants), under the screen's text.
fn colour_map(app: &App) -> String {
    let buf = tui_fixture::buffer(app);
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut text = String::new();
        let mut fg = String::new();
        for x in 0..buf.area.width {
            let c = &buf[(x, y)];
            text.push_str(c.symbol());
            fg.push(match c.fg {
                Color::Reset => '.',
                Color::Red => 'R',
                Color::Green => 'G',
                Color::Yellow => 'Y',
                Color::Blue => 'B',
                Color::Magenta => 'M',
                Color::Cyan => 'C',
                Color::Gray => 'k',
                Color::DarkGray => 'K',
                Color::LightBlue => 'b',
                Color::LightYellow => 'y',
                Color::LightMagenta => 'm',
                Color::White => 'W',
                Color::Black => '0',
                Color::Rgb(..) | Color::Indexed(_) => '#',
                _ => '?',
            });
        }
        out.push_str(&format!("{text}\n{fg}\n"));
    }
    out
}

/// Colours come from the terminal's palette (named colours, its own
/// foreground), never fixed RGB; the light theme's borders and syntax
/// colours differ from the dark one's. Snapshots of both at 80x24, and
/// `auto` follows COLORFGBG.
#[test]
fn themes_use_the_palette_and_read_on_light_and_dark() {
    use kapply::tui::Options as O;
    for (name, light) in [("dark", false), ("light", true)] {
        let mut a = app_with(
            O {
                light,
                ..O::default()
            },
            80,
            24,
        );
        select(&mut a, "nginx-deployment");
        let list = colour_map(&a);
        feed(&mut a, [code(KeyCode::Tab), key('y')]);
        let yaml = colour_map(&a);
        for m in [&list, &yaml] {
            assert!(!m.contains('#'), "a fixed RGB or indexed colour:\n{m}");
        }
        // Unfocused borders: grey on dark, dark grey on light.
        let border = if light { 'K' } else { 'k' };
        // The field pane's left border, on the third screen row.
        let first_fg = list.lines().nth(5).unwrap().chars().nth(32).unwrap();
        assert_eq!(first_fg, border, "{name}:\n{list}");
        insta::assert_snapshot!(format!("theme_{name}_yaml_80x24"), yaml);
        let mut b = app_with(
            O {
                light,
                ..O::default()
            },
            160,
            45,
        );
        select(&mut b, "nginx-deployment");
        insta::assert_snapshot!(format!("theme_{name}_list_160x45"), colour_map(&b));
    }
    assert!(O::light_theme("auto", Some("0;15")));
    assert!(O::light_theme("auto", Some("default;default;7")));
    assert!(!O::light_theme("auto", Some("15;0")));
    assert!(!O::light_theme("auto", None));
    assert!(O::light_theme("light", Some("15;0")));
    assert!(!O::light_theme("dark", Some("0;15")));
}

/// A box under the field table too small for its row scrolls with
/// Ctrl-d/Ctrl-u, says which lines show, stops at both ends, and opens at
/// the top again on another row.
#[test]
fn the_box_under_the_field_table_scrolls() {
    let ctrl = |c| Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL));
    let mut a = app(80, 24);
    a.update(key('r'));
    a.update(Msg::Loaded(Ok(tui_fixture::structured())));
    select(&mut a, "coredns");
    feed(&mut a, [code(KeyCode::Tab)]);
    let first = screen(&a);
    let hint = |s: &str| {
        s.lines()
            .find_map(|l| l.find("lines ").map(|i| l[i..].to_string()))
            .unwrap_or_default()
    };
    assert!(hint(&first).starts_with("lines 1-"), "{first}");
    feed(&mut a, [ctrl('d')]);
    let down = screen(&a);
    assert!(hint(&down).starts_with("lines 4-"), "{down}");
    insta::assert_snapshot!("detail_box_scrolled_80x24", down);
    // To the end and no further.
    for _ in 0..50 {
        feed(&mut a, [ctrl('d')]);
    }
    let end = screen(&a);
    feed(&mut a, [ctrl('d')]);
    assert_eq!(screen(&a), end);
    // The last line of the row shows: `lines A-N of N`.
    let h = hint(&end);
    let (range, total) = h
        .trim_start_matches("lines ")
        .split_once(" of ")
        .unwrap_or_default();
    let total = total.split(' ').next().unwrap_or_default();
    assert_eq!(range.split('-').nth(1), Some(total), "{end}");
    // Back to the top and no further.
    for _ in 0..50 {
        feed(&mut a, [ctrl('u')]);
    }
    assert_eq!(screen(&a), first);
    // Another object's row opens at its top.
    feed(&mut a, [ctrl('d')]);
    feed(&mut a, [code(KeyCode::Tab)]);
    select(&mut a, "ingress-nginx-controller");
    feed(&mut a, [code(KeyCode::Tab)]);
    let other = screen(&a);
    assert!(hint(&other).starts_with("lines 1-"), "{other}");
}

// ---------- recreate (F): an update the server refuses as invalid ----------

const REFUSED: &str =
    "Deployment.apps \"nginx-deployment\" is invalid: spec.selector: field is immutable";

/// The dry run of the open apply dialog, the Deployment refused as
/// invalid (422), the rest ok.
fn refuse_in_dry_run(app: &mut App) {
    let Some(Confirmed::Apply(items)) = app.confirming() else {
        panic!("no apply dialog: {:?}", app.popup)
    };
    let results = items
        .iter()
        .map(|i| {
            let id = i.plan.id();
            if id.name == "nginx-deployment" {
                ObjectResult::failed(id, Failure::Invalid(REFUSED.into()))
            } else {
                result(&id.to_string(), true, "configured (server dry run)")
            }
        })
        .collect();
    app.update(Msg::DryRunDone(results));
}

/// The offer in the apply confirmation and the status line, then the
/// recreate confirmation naming the object, its uid and the downtime.
#[test]
fn recreate_offer_and_confirmation() {
    for (w, h) in [(80, 24), (160, 45)] {
        let mut a = app(w, h);
        select(&mut a, "nginx-deployment");
        feed(&mut a, [key('a')]);
        refuse_in_dry_run(&mut a);
        let offer = screen(&a);
        assert!(offer.contains("F recreates it"), "{offer}");
        assert_eq!(
            a.last_result.as_deref(),
            Some("F recreates Deployment default/nginx-deployment (refused as invalid)")
        );
        insta::assert_snapshot!(format!("recreate_offer_{w}x{h}"), offer);
        let eff = feed(&mut a, [key('F')]);
        assert!(
            eff.is_empty(),
            "nothing is sent before the confirmation: {eff:?}"
        );
        let confirm = screen(&a);
        assert!(matches!(a.confirming(), Some(Confirmed::Recreate(_))));
        assert!(
            confirm.contains("Deployment default/nginx-deployment (uid"),
            "{confirm}"
        );
        assert!(confirm.contains("downtime"), "{confirm}");
        insta::assert_snapshot!(format!("recreate_confirm_{w}x{h}"), confirm);
    }
}

/// What F does, as data: nothing without a refusal; the confirmation's
/// Enter is the only way to the `Recreate` effect, with the object's whole
/// configuration; the results, a failure after the delete said loudly;
/// `q` asks first while the recreate runs.
#[test]
fn recreate_update_and_effects() {
    let mut a = app(120, 40);
    select(&mut a, "nginx-deployment");
    // Nothing refused: F says what it is for.
    assert!(feed(&mut a, [key('F')]).is_empty());
    assert!(a.popup.is_none());
    assert!(
        a.last_result
            .as_deref()
            .is_some_and(|r| r.contains("refused as invalid")),
        "{:?}",
        a.last_result
    );
    // A partial apply refused: the recreate still sends the whole manifest.
    feed(&mut a, [code(KeyCode::Enter), key(' '), code(KeyCode::Esc)]);
    assert!(
        a.sel
            .excluded
            .contains_key(&tui_fixture::id("Deployment default/nginx-deployment"))
    );
    feed(&mut a, [key('a')]);
    refuse_in_dry_run(&mut a);
    // The footer offers it on the row too, once the dialog is closed.
    feed(&mut a, [code(KeyCode::Esc)]);
    assert!(a.recreate_offered());
    assert!(screen(&a).contains("F recreate"), "{}", screen(&a));
    // Esc in the confirmation: nothing sent.
    feed(&mut a, [key('F')]);
    assert!(matches!(a.confirming(), Some(Confirmed::Recreate(_))));
    assert!(feed(&mut a, [code(KeyCode::Esc)]).is_empty());
    assert!(a.popup.is_none());
    // Enter: the effect, with the whole configuration.
    feed(&mut a, [key('F')]);
    let eff = feed(&mut a, [code(KeyCode::Enter)]);
    let [Effect::Recreate(items)] = eff.as_slice() else {
        panic!("{eff:?}")
    };
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].plan.id().name, "nginx-deployment");
    assert_eq!(items[0].accepted_fields, None, "the whole manifest");
    assert!(items[0].released_fields.is_empty());
    assert!(a.jobs.pending.contains(&kapply::tui::app::Job::Recreating));
    // Quitting now could leave it deleted: asked first.
    assert!(feed(&mut a, [key('q')]).is_empty());
    assert!(screen(&a).contains("A recreate is under way"));
    feed(&mut a, [code(KeyCode::Esc)]);
    // Deleted and not created again: said first, loudly, and logged.
    let id = tui_fixture::id("Deployment default/nginx-deployment");
    let eff = feed(
        &mut a,
        [Msg::Recreated(vec![ObjectResult::failed(
            id.clone(),
            Failure::NotRecreated("creating it failed: quota exceeded".into()),
        )])],
    );
    assert!(matches!(eff.as_slice(), [Effect::Load]), "{eff:?}");
    assert!(a.last_result_failed);
    assert_eq!(
        a.last_result.as_deref(),
        Some("1 object(s) DELETED and not created again (l: log); recreated 0 object(s), 1 failed")
    );
    assert!(a.log.iter().any(|e| {
        !e.ok
            && e.text
                .contains("DELETED and not created again: creating it failed: quota exceeded")
    }));
    // Replaced: logged, the refusal forgotten.
    feed(&mut a, [Msg::Loaded(Ok(tui_fixture::plan()))]);
    select(&mut a, "nginx-deployment");
    assert!(a.recreate_offered(), "the refusal outlives a reload");
    feed(&mut a, [key('F')]);
    feed(&mut a, [code(KeyCode::Enter)]);
    let eff = feed(
        &mut a,
        [Msg::Recreated(vec![ObjectResult::new(
            id.clone(),
            Outcome::Replaced,
        )])],
    );
    assert!(matches!(eff.as_slice(), [Effect::Load]), "{eff:?}");
    assert_eq!(a.last_result.as_deref(), Some("recreated 1 object(s)"));
    assert!(!a.last_result_failed);
    assert!(a.log.iter().any(|e| e.ok
        && e.text
            == "Deployment default/nginx-deployment: replaced (deleted and created again: --force)"));
    assert!(!a.recreate_offered());
    assert!(a.refused.is_empty());
}

/// Through the real engine on the cluster of `kubeconfig`, in namespace
/// `ns` (created by the first apply): a Deployment whose selector changes
/// is refused (422) in the apply confirmation's dry run; F and Enter
/// delete it and create it again, with the new selector and a new uid.
/// Returns the uids before and after, as the reload read them.
async fn recreate_history(
    kubeconfig: &std::path::Path,
    dir: &std::path::Path,
    ns: &str,
) -> (String, String) {
    let m = dir.join("recreate");
    std::fs::create_dir_all(&m).unwrap();
    let web = |app: &str| {
        format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n---\n\
             apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: {ns}\n\
             spec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: {app}\n  template:\n\
             \x20   metadata:\n      labels:\n        app: {app}\n    spec:\n      containers:\n\
             \x20     - name: web\n        image: nginx:1.27\n"
        )
    };
    std::fs::write(m.join("web.yaml"), web("web")).unwrap();
    let engine = kube_engine(kubeconfig, &m).await;
    let mut a = App::new(Options::default());
    a.clock = || "12:34:56".to_string();
    a.update(Msg::Resize(120, 40));
    let start = a.start();
    settle(&mut a, &engine, start).await;
    // Both created: the namespace and the Deployment.
    let eff = feed(&mut a, [key('M'), key('a')]);
    settle(&mut a, &engine, eff).await;
    let eff = feed(&mut a, [code(KeyCode::Enter)]);
    settle(&mut a, &engine, eff).await;
    assert_eq!(
        a.last_result.as_deref(),
        Some("applied 2 object(s)"),
        "{:?}",
        a.log
    );
    let live = |a: &App| {
        // Rows are kept small: the whole one has the live object.
        let i = a
            .list
            .plan
            .objects
            .iter()
            .position(|o| o.name == "web")
            .unwrap();
        let o = a.object_owned(i).unwrap();
        let live = o.live.clone().expect("the Deployment is in the cluster");
        (o.action, live)
    };
    let (_, before) = live(&a);
    let uid = before["metadata"]["uid"].as_str().unwrap().to_string();

    // The selector changes: immutable.
    std::fs::write(m.join("web.yaml"), web("web2")).unwrap();
    let eff = feed(&mut a, [key('r')]);
    settle(&mut a, &engine, eff).await;
    select(&mut a, "web");
    let eff = feed(&mut a, [key('a')]);
    settle(&mut a, &engine, eff).await;
    let offer = screen(&a);
    assert!(offer.contains("field is immutable"), "{offer}");
    assert!(offer.contains("F recreates it"), "{offer}");
    assert!(
        a.refused.contains_key(&a.selected().unwrap().id()),
        "{offer}"
    );
    feed(&mut a, [key('F')]);
    let confirm = tui_fixture::text(&a);
    assert!(confirm.contains(&format!("(uid {uid})")), "{confirm}");
    // Esc: nothing was sent.
    feed(&mut a, [code(KeyCode::Esc)]);
    let eff = feed(&mut a, [key('r')]);
    settle(&mut a, &engine, eff).await;
    assert_eq!(
        live(&a).1["metadata"]["uid"],
        uid.as_str(),
        "nothing sent yet"
    );
    select(&mut a, "web");
    feed(&mut a, [key('F')]);
    let eff = feed(&mut a, [code(KeyCode::Enter)]);
    assert!(matches!(eff.as_slice(), [Effect::Recreate(_)]), "{eff:?}");
    settle(&mut a, &engine, eff).await;
    assert!(
        a.log.iter().any(|e| e.ok
            && e.text
                == format!("Deployment {ns}/web: replaced (deleted and created again: --force)")),
        "{:?}",
        a.log
    );
    assert_eq!(a.last_result.as_deref(), Some("recreated 1 object(s)"));
    // Reloaded after it: the new object, nothing left to do or refused.
    let (action, after) = live(&a);
    assert_eq!(
        after["spec"]["selector"]["matchLabels"]["app"], "web2",
        "{after}"
    );
    let new_uid = after["metadata"]["uid"].as_str().unwrap().to_string();
    assert_ne!(new_uid, uid, "a new object: {after}");
    assert_eq!(action, kapply::plan::ObjectAction::Unchanged);
    assert!(a.refused.is_empty());
    (uid, new_uid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recreate_replaces_a_refused_deployment_on_the_embedded_server() {
    let (server, dir, kubeconfig) = server::start_with_kubeconfig().await;
    let (_, uid) = recreate_history(&kubeconfig, dir.path(), "recreate").await;
    let stored = server
        .store()
        .get("apps/v1", "Deployment", Some("recreate"), "web")
        .expect("the Deployment is there");
    assert_eq!(stored["metadata"]["uid"], uid.as_str(), "{stored}");
    assert_eq!(stored["spec"]["selector"]["matchLabels"]["app"], "web2");
}

/// The same on a real kube-apiserver (`scripts/real-apiserver`): skipped
/// without it, a failure under CI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recreate_replaces_a_refused_deployment_on_the_real_server() {
    let Some(kubeconfig) = real::kubeconfig() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    recreate_history(&kubeconfig, dir.path(), &real::unique("recreate")).await;
}

/// Long label and annotation keys keep their whole text in the path
/// column (a key is what a row is about), on more lines where one is not
/// enough; the values wrap or are cut instead. At 160x45 each reads on
/// screen; at every width of the field table down to 80 columns, each
/// row's label lines make the whole key.
#[test]
fn long_keys_read_whole() {
    let keys = [
        "[\"checksum/config\"]",
        "[\"kubectl.kubernetes.io/default-container\"]",
        "[\"service.beta.kubernetes.io/aws-load-balancer-backend-protocol\"]",
        "[\"app.kubernetes.io/managed-by\"]",
        "[\"helm.sh/chart\"]",
        "[\"kubectl.kubernetes.io/restartedAt\"]",
    ];
    for (w, h) in [(80, 24), (160, 45)] {
        let mut a = app(w, h);
        a.update(key('r'));
        a.update(Msg::Loaded(Ok(tui_fixture::long_keys())));
        select(&mut a, "controller");
        feed(&mut a, [code(KeyCode::Tab)]);
        let s = screen(&a);
        insta::assert_snapshot!(format!("long_keys_{w}x{h}"), s);
        let o = a.selected().unwrap();
        let inner = a.field_table_size().unwrap().0;
        let l = kapply::tui::fieldtable::layout(o, false, inner);
        assert!(
            l.widths[4] >= 5,
            "the act column shows at {w}: {:?}",
            l.widths
        );
        for rl in &l.rows {
            let whole = rl.label.concat();
            assert!(
                keys.contains(&whole.as_str()),
                "{whole:?} at {w}: {:?}",
                rl.label
            );
            assert!(rl.height >= rl.label.len());
        }
        if w == 160 {
            // Whole on one line, or the prefix over the name.
            for k in keys {
                let one = s.contains(k);
                let two = k.rsplit_once('/').is_some_and(|(p, n)| {
                    s.lines()
                        .zip(s.lines().skip(1))
                        .any(|(a, b)| a.contains(&format!("{p}/")) && b.contains(n))
                });
                assert!(one || two, "{k} does not read at {w}x{h}:\n{s}");
            }
            assert!(
                s.contains("[\"kubectl.kubernetes.io/default-container\"]"),
                "{s}"
            );
        }
    }
    // Narrower panes: the keys wrap (five lines at most), never cut while
    // five lines hold them.
    let plan = tui_fixture::long_keys();
    for total in [48, 56, 64, 96, 124] {
        let l = kapply::tui::fieldtable::layout(&plan.objects[0], false, total);
        for rl in &l.rows {
            let whole = rl.label.concat();
            assert!(rl.label.len() <= 5, "{total}: {:?}", rl.label);
            assert!(keys.contains(&whole.as_str()), "{total}: {:?}", rl.label);
        }
    }
    // Narrower still, a key too long for five lines is cut in its middle:
    // its start and its end stay.
    let l = kapply::tui::fieldtable::layout(&plan.objects[0], false, 40);
    for rl in &l.rows {
        let whole = rl.label.concat();
        assert!(
            whole.starts_with("[\"") && whole.ends_with("\"]"),
            "{:?}",
            rl.label
        );
    }
}

// ---------- every confirmation: confirm, then confirmed ----------

/// Whether `e` writes to the cluster, a file, or ends the session: what
/// only a confirmation's confirm key may send.
fn destructive(e: &Effect) -> bool {
    matches!(
        e,
        Effect::Apply(_)
            | Effect::ServerSideApply(..)
            | Effect::Delete(..)
            | Effect::Prune(_)
            | Effect::Recreate(_)
            | Effect::Export(_, _, true)
            | Effect::Quit
    )
}

/// Each confirmation, opened on its own app (its dry run answered), with
/// the key that confirms it and the count to type first, if any.
fn every_confirmation() -> Vec<(&'static str, App, KeyCode, Option<&'static str>)> {
    let mut all = Vec::new();
    let mut a = app(100, 30);
    select(&mut a, "nginx-deployment");
    feed(&mut a, [key('a')]);
    answer_dry_run(&mut a);
    all.push(("apply", a, KeyCode::Enter, None));

    let mut a = app_with(
        Options {
            server_side: Some(kapply::tui::ServerSideMode {
                manager: "kapply".into(),
                force: true,
            }),
            ..Options::default()
        },
        100,
        30,
    );
    select(&mut a, "app-config");
    let eff = feed(&mut a, [key('a')]);
    let [Effect::ServerSideDryRun(items, _)] = eff.as_slice() else {
        panic!("{eff:?}");
    };
    let ok = items
        .iter()
        .map(|i| result(&i.plan.id().to_string(), true, "created (server dry run)"))
        .collect();
    a.update(Msg::ServerSideDryRunDone(ok));
    all.push(("server-side apply", a, KeyCode::Enter, None));

    let mut a = app(100, 30);
    feed(&mut a, [key('p'), key('y')]);
    a.update(Msg::PruneDryRunDone(vec![result(
        "ConfigMap default/old-config",
        true,
        "deleted (server dry run)",
    )]));
    all.push(("prune", a, KeyCode::Enter, None));

    let mut a = app(100, 30);
    select(&mut a, "nginx-deployment");
    feed(&mut a, [key(' ')]);
    select(&mut a, "nginx");
    feed(&mut a, [key(' '), key('D')]);
    all.push(("delete", a, KeyCode::Enter, Some("2")));

    let mut a = app(100, 30);
    select(&mut a, "nginx-deployment");
    feed(&mut a, [key('a')]);
    refuse_in_dry_run(&mut a);
    feed(&mut a, [key('F')]);
    all.push(("recreate", a, KeyCode::Enter, None));

    let mut a = app(100, 30);
    select(&mut a, "old-config");
    let old = a.selected().expect("old-config").clone();
    a.update(Msg::Exported(
        old,
        Ok(kapply::ops::Exported::Exists("manifests/old.yaml".into())),
    ));
    all.push(("export overwrite", a, KeyCode::Char('y'), None));

    let mut a = app(100, 30);
    feed(&mut a, [key(' '), key('q')]);
    all.push(("quit", a, KeyCode::Char('y'), None));
    all
}

/// One dialog for all of them, and the same rule for all: no key but the
/// confirm key (once the count is typed) sends the action; every other
/// key leaves the confirmation open on the same action; the confirm key
/// sends exactly it and closes the dialog.
#[test]
fn no_confirmation_acts_before_its_confirm_key() {
    let others: Vec<KeyCode> = (' '..='~')
        .map(KeyCode::Char)
        .chain([
            KeyCode::Backspace,
            KeyCode::Tab,
            KeyCode::Left,
            KeyCode::Right,
            KeyCode::Delete,
            KeyCode::F(1),
        ])
        .collect();
    let all = every_confirmation();
    assert_eq!(all.len(), 7);
    for (what, mut a, yes, count) in all {
        let Some(Popup::Confirm(c)) = &a.popup else {
            panic!("{what}: no confirmation: {:?}", a.popup);
        };
        let kind = std::mem::discriminant(&c.action);
        let (yes_keys, no_keys) = (c.yes.codes, c.no.codes);
        let extras: Vec<char> = c.extras.iter().map(|x| x.key().0).collect();
        assert!(yes_keys.contains(&yes), "{what}: {yes_keys:?}");
        for k in &others {
            // Cancel keys close it; extra keys (retry, recreate) are tested on their own.
            let skip = yes_keys.contains(k)
                || no_keys.contains(k)
                || matches!(k, KeyCode::Char(ch) if extras.contains(ch));
            if skip {
                continue;
            }
            let eff = a.update(code(*k));
            // (The effects are long: only whether one acted.)
            let acted = eff.iter().filter(|e| destructive(e)).count();
            assert_eq!(acted, 0, "{what}: {k:?} sent what it confirms");
            let Some(Popup::Confirm(c)) = &a.popup else {
                panic!("{what}: {k:?} closed it: {:?}", a.popup);
            };
            assert_eq!(std::mem::discriminant(&c.action), kind, "{what}: {k:?}");
        }
        // Digits typed above: the count is typed afresh.
        if let Some(n) = count {
            let eff = feed(&mut a, [code(yes)]);
            assert!(eff.is_empty(), "{what}: without the count: {eff:?}");
            while matches!(&a.popup, Some(Popup::Confirm(c)) if c.count.as_ref().is_some_and(|n| !n.typed.is_empty()))
            {
                a.update(code(KeyCode::Backspace));
            }
            feed(&mut a, keys(n));
        }
        let eff = a.update(code(yes));
        assert!(
            matches!(eff.as_slice(), [e] if destructive(e)),
            "{what}: {eff:?}"
        );
        assert!(a.popup.is_none(), "{what}: {:?}", a.popup);
    }
}
