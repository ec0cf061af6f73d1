//! The TUI while the server is slow or silent: results whose outcome is
//! unknown, the loading screen, and retrying. Driven through `App::update`
//! and rendered on ratatui's TestBackend, like tests/tui.rs.

mod tui_fixture;

use kapply::objref::ObjectRef;
use kapply::ops::ObjectResult;
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
        ObjectResult::done(
            ObjectRef::new("apps/v1", "Deployment", Some("default"), "nginx-deployment"),
            "configured",
        ),
        ObjectResult::unknown(
            ObjectRef::new("v1", "Secret", Some("demo"), "db-credentials"),
            "no answer within 60 s; the change may or may not have been made",
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
    assert_eq!(a.marked.len(), 1);
    assert_eq!(a.marked.iter().next().unwrap().name, "db-credentials");
}
