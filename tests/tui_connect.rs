//! The TUI while the server is slow or silent: results whose outcome is
//! unknown, the loading screen, and retrying. Driven through `App::update`
//! and rendered on ratatui's TestBackend, like tests/tui.rs.

mod tui_fixture;

use kapply::objref::ObjectRef;
use kapply::ops::{ObjectResult, Outcome};
use kapply::tui::app::{Effect, Msg};
use kapply::tui::{App, Options};
use tui_fixture::{key, select};

fn app(w: u16, h: u16) -> App {
    let mut app = App::new(Options::default());
    app.clock = || "12:34:56".to_string();
    app.update(Msg::Resize(w, h));
    let _ = app.start();
    app.update(Msg::Loaded(Ok(tui_fixture::plan())));
    app
}

#[test]
fn a_write_without_an_answer_is_neither_applied_nor_failed() {
    let mut a = app(100, 30);
    select(&mut a, "nginx-deployment");
    a.update(key(' '));
    select(&mut a, "db-credentials");
    a.update(key(' '));
    let eff = a.update(Msg::Applied(vec![
        ObjectResult::new(
            ObjectRef::new("apps/v1", "Deployment", Some("default"), "nginx-deployment"),
            Outcome::Configured,
        ),
        ObjectResult::new(
            ObjectRef::new("v1", "Secret", Some("demo"), "db-credentials"),
            Outcome::Unknown(
                "no answer within 60 s; the change may or may not have been made".into(),
            ),
        ),
    ]));
    // The reload shows what the server holds now.
    assert!(matches!(eff.as_slice(), [Effect::Load]), "{eff:?}");
    assert_eq!(
        a.last_result.as_deref(),
        Some("applied 1 object(s), 1 unknown (no answer)")
    );
    let entry = &a.log[1];
    assert!(!entry.ok);
    assert_eq!(
        entry.text,
        "Secret demo/db-credentials unknown: no answer within 60 s; \
         the change may or may not have been made"
    );
    assert!(!entry.text.contains("failed"), "{entry:?}");
    // Its mark stays: it is not known to be done.
    assert_eq!(a.sel.marked.len(), 1);
    assert_eq!(a.sel.marked.iter().next().unwrap().name, "db-credentials");
}

// ---------- before live state is known ----------

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use kapply::ops::Server;
use kapply::plan::{ObjectAction, Plan};
use std::sync::LazyLock;
use std::time::{Duration, Instant};
use tui_fixture::code;

static T0: LazyLock<Instant> = LazyLock::new(Instant::now);

fn t0() -> Instant {
    *T0
}

fn t7() -> Instant {
    *T0 + Duration::from_secs(7)
}

fn screen(app: &App) -> String {
    tui_fixture::text(app)
}

/// The rows an engine reads from the manifests alone: identities, no
/// fields, no live object (what `KubeEngine::manifests` returns).
fn unplanned() -> Plan {
    let mut plan = tui_fixture::plan();
    plan.objects.retain(|o| o.action != ObjectAction::Prune);
    for o in &mut plan.objects {
        if o.action != ObjectAction::Error {
            o.action = ObjectAction::Unchanged;
            o.fields.clear();
            o.patch = None;
            o.live = None;
            o.config = None;
            o.reverts_drift = false;
            o.warnings.clear();
        }
    }
    plan
}

/// The TUI as it opens against a server that does not answer yet: the
/// manifests read, connecting for 7 s.
fn waiting(w: u16, h: u16) -> App {
    let mut a = App::new(Options::default());
    a.clock = || "12:34:56".to_string();
    a.now = t0;
    a.conn.server = Some(Server {
        url: "https://10.0.0.1:6443".into(),
        context: "prod".into(),
        namespace: "default".into(),
    });
    a.update(Msg::Resize(w, h));
    let start = a.start();
    assert!(
        matches!(start.as_slice(), [Effect::ReadManifests, Effect::Connect]),
        "{start:?}"
    );
    a.update(Msg::Manifests(Ok(unplanned())));
    a.now = t7;
    a.update(Msg::Tick);
    a
}

/// The text of the right-hand pane, its lines joined by single spaces.
fn collapse(s: &str) -> String {
    s.lines()
        .filter_map(|l| l.split_once("││").map(|(_, r)| r))
        .collect::<Vec<_>>()
        .join(" ")
        .split(|c: char| c.is_whitespace() || c == '│')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_manifests_show_while_connecting() {
    let a = waiting(80, 24);
    let s = screen(&a);
    insta::assert_snapshot!("connecting_80x24", s);
    let last = s.lines().last().unwrap();
    assert!(
        last.contains("connecting to https://10.0.0.1:6443 (context prod) · 7 s"),
        "{s}"
    );
    // The cluster is named at all times; the counts line says it loads.
    assert!(
        s.starts_with(
            "kapply  context prod  server https://10.0.0.1:6443  namespace default\n\
             live state loading  6 object(s)"
        ),
        "{s}"
    );
    // Every manifest is listed, none with a verdict.
    assert!(s.contains("? Deployment/nginx-deploymen"), "{s}");
    assert!(!s.contains("+ ") && !s.contains("~ "), "{s}");
    assert!(s.contains("! Widget/thing"), "errors keep their mark: {s}");
    assert!(a.animating(), "the seconds move: ticks redraw");
}

#[test]
fn quit_works_at_every_moment_of_the_wait() {
    let ctrl_c = Msg::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    // Esc goes back and never quits, waiting or not.
    let mut a = waiting(80, 24);
    assert!(a.update(code(KeyCode::Esc)).is_empty());
    for quit in [key('q'), ctrl_c] {
        // Connecting, before the manifests are read.
        let mut a = App::new(Options::default());
        a.start();
        assert!(matches!(a.update(quit.clone()).as_slice(), [Effect::Quit]));
        // Connected, the first load under way.
        let mut a = waiting(80, 24);
        assert!(matches!(
            a.update(Msg::Connected(Ok(()))).as_slice(),
            [Effect::Load]
        ));
        assert!(matches!(a.update(quit.clone()).as_slice(), [Effect::Quit]));
        // Failed.
        let mut a = waiting(80, 24);
        a.update(Msg::Connected(Err("no answer".into())));
        assert!(matches!(a.update(quit).as_slice(), [Effect::Quit]));
    }
}

#[test]
fn nothing_destructive_is_offered_without_live_state() {
    let mut a = waiting(80, 24);
    select(&mut a, "nginx-deployment");
    for (k, what) in [('a', "apply"), ('D', "delete"), ('p', "prune")] {
        let eff = a.update(key(k));
        assert!(eff.is_empty(), "{k}: {eff:?}");
        assert!(a.popup.is_none(), "{k}: {:?}", a.popup);
        assert_eq!(
            a.last_result.as_deref(),
            Some(format!("{what} needs the live state, which is still loading").as_str())
        );
    }
    a.update(Msg::Connected(Err("refused".into())));
    // After a failure the answer reads whole at 80 columns, beside the
    // status line's own `no live state: r retries`.
    for (k, what) in [
        ('a', "apply"),
        ('D', "delete"),
        ('p', "prune"),
        ('E', "export"),
        ('f', "the status filter"),
    ] {
        a.update(key(k));
        let answer = format!("{what} needs the live state");
        assert_eq!(a.last_result.as_deref(), Some(answer.as_str()));
        let s = screen(&a);
        let status = s.lines().last().unwrap();
        // Whole, then the keys of the footer that fit.
        assert!(
            status.starts_with(&format!("no live state: r retries  {answer}  "))
                && status.ends_with("? help  q quit"),
            "{s}"
        );
    }
}

const REFUSED: &str = "the server at https://10.0.0.1:6443 refused the credentials of context \
                       \"prod\" (Unauthorized): check that context's user in the kubeconfig";

#[test]
fn a_failed_connect_shows_in_place_and_r_connects_again() {
    let mut a = waiting(80, 24);
    // `r` while waiting starts nothing more.
    assert!(a.update(key('r')).is_empty());
    a.update(Msg::Connected(Err(REFUSED.into())));
    let s = screen(&a);
    insta::assert_snapshot!("connect_failed_80x24", s);
    // The whole message reads in the pane at 80x24.
    assert!(collapse(&s).contains(REFUSED), "{s}");
    assert!(s.contains("r retries"), "{s}");
    assert!(!a.animating(), "nothing moves once it failed");
    assert_eq!(a.log[0].text, format!("connecting failed: {REFUSED}"));
    // r: connect again (and read the manifests again), waiting from zero.
    let eff = a.update(key('r'));
    assert!(
        matches!(eff.as_slice(), [Effect::ReadManifests, Effect::Connect]),
        "{eff:?}"
    );
    assert!(a.conn.failure.is_none() && a.jobs.connecting);
    assert!(screen(&a).contains("· 0 s"));
    // This time the server answers: the first load follows.
    assert!(matches!(
        a.update(Msg::Connected(Ok(()))).as_slice(),
        [Effect::Load]
    ));
    a.update(Msg::Loaded(Ok(tui_fixture::plan())));
    let s = screen(&a);
    assert!(
        s.lines().nth(1).is_some_and(|l| l.starts_with("+2 create")),
        "{s}"
    );
    assert!(!s.contains("Live state"), "{s}");
    // Once live state is known, r reloads on the same connection.
    assert!(matches!(a.update(key('r')).as_slice(), [Effect::Load]));
}

#[test]
fn a_failed_first_load_is_retried_from_the_connect() {
    let mut a = waiting(80, 24);
    a.update(Msg::Connected(Ok(())));
    a.update(Msg::Loaded(Err(REFUSED.into())));
    let s = screen(&a);
    assert!(collapse(&s).contains(REFUSED), "{s}");
    assert!(
        s.lines()
            .last()
            .unwrap()
            .starts_with("no live state: r retries"),
        "{s}"
    );
    let eff = a.update(key('r'));
    assert!(
        matches!(eff.as_slice(), [Effect::ReadManifests, Effect::Connect]),
        "{eff:?}"
    );
    // A late answer from before the retry changes nothing.
    a.update(Msg::Manifests(Ok(unplanned())));
    assert!(a.jobs.connecting && !a.conn.live_known);
}
