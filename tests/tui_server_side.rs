//! The TUI with `--server-side`, driven by keys through `App::update` on a
//! plan built by the core from a config and a live object with
//! managedFields (a `kubectl scale` and a `kubectl set image` that a new
//! config conflicts with): the list's marks and counts, the filter, the
//! field pane's rows, and the per-field decisions.

mod tui_fixture;

use kapply::plan::{ObjectAction, Plan, PlanOptions, plan_object_owned};
use kapply::ssa::Decision;
use kapply::tui::app::{Effect, Filter, Msg};
use kapply::tui::{App, Options, ServerSideMode};
use serde_json::{Value, json};
use tui_fixture::{key, select, text};

fn entry(manager: &str, operation: &str, sub: Option<&str>, fields: Value) -> Value {
    let mut e = json!({"manager": manager, "operation": operation, "apiVersion": "apps/v1",
        "fieldsType": "FieldsV1", "fieldsV1": fields});
    if let Some(s) = sub {
        e["subresource"] = json!(s);
    }
    e
}

/// Applied server-side by kubectl, then scaled and its image set by hand.
fn web_live() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "demo", "uid": "u-1", "managedFields": [
            entry("kubectl", "Apply", None, json!({"f:spec": {
                "f:replicas": {}, "f:selector": {},
                "f:template": {"f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {
                        ".": {}, "f:name": {}}}}}}})),
            entry("kubectl", "Update", Some("scale"), json!({"f:spec": {"f:replicas": {}}})),
            entry("kubectl-set", "Update", None, json!({"f:spec": {"f:template": {"f:spec": {
                "f:containers": {"k:{\"name\":\"web\"}": {"f:image": {}}}}}}})),
        ]},
        "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:hotfix"}]}}}})
}

const WEB: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: demo\n\
spec:\n  replicas: 3\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      \
labels:\n        app: web\n        tier: front\n    spec:\n      containers:\n      - name: web\n        \
image: nginx:1.28\n";

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: demo\ndata:\n  a: \"1\"\n";

fn cm_live() -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "demo", "uid": "u-2", "managedFields": [
            {"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]},
        "data": {"a": "1"}})
}

const NEW: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fresh\n  namespace: demo\ndata:\n  b: \"2\"\n";

fn plan() -> Plan {
    let mut objects = Vec::new();
    for (text, live) in [(WEB, Some(web_live())), (CM, Some(cm_live())), (NEW, None)] {
        let loaded =
            kapply::manifest::parse_str(text, std::path::Path::new("m.yaml"), &Default::default());
        let m = loaded.manifests.into_iter().next().expect("a manifest");
        objects.push(plan_object_owned(&m, live, &PlanOptions::default()));
    }
    Plan {
        objects,
        prune_skipped: None,
    }
}

fn app(force: bool, w: u16, h: u16) -> App {
    let mut app = App::new(Options {
        server_side: Some(ServerSideMode {
            manager: "kubectl".into(),
            force,
        }),
        ..Options::default()
    });
    app.clock = || "12:34:56".to_string();
    app.update(Msg::Resize(w, h));
    app.start();
    let after = app.update(Msg::Loaded(Ok(plan())));
    assert!(matches!(after.as_slice(), [Effect::Watch(1)]), "{after:?}");
    app
}

fn press(app: &mut App, keys: &str) -> Vec<Effect> {
    keys.chars().flat_map(|c| app.update(key(c))).collect()
}

const IMAGE: &str = "spec.template.spec.containers[name=web].image";

#[test]
fn objects_follow_the_server_side_plan_and_conflicts_are_marked() {
    let app = app(false, 120, 30);
    let actions: Vec<(String, ObjectAction)> = app
        .plan
        .objects
        .iter()
        .map(|o| (o.name.clone(), o.action))
        .collect();
    assert_eq!(
        actions,
        vec![
            ("web".to_string(), ObjectAction::Update),
            // Client-side it would be an update (no last-applied); server-side
            // kubectl already owns data.a with this value: nothing to do.
            ("cfg".to_string(), ObjectAction::Unchanged),
            ("fresh".to_string(), ObjectAction::Create),
        ]
    );
    assert_eq!(app.ssa_conflict_count(), 1);
    let screen = text(&app);
    assert!(screen.contains("≠1 conflict"), "{screen}");
    assert!(screen.contains("≠ Deployment/web"), "{screen}");
    assert!(screen.contains("= ConfigMap/cfg"), "{screen}");
}

#[test]
fn the_field_pane_shows_actions_and_owners() {
    let mut app = app(false, 140, 30);
    select(&mut app, "web");
    let rows = app.ssa_rows();
    let got: Vec<(&str, kapply::ssa::FieldAction)> = rows
        .iter()
        .map(|(r, _)| (r.path.as_str(), r.action))
        .collect();
    use kapply::ssa::FieldAction::*;
    assert_eq!(
        got,
        vec![
            ("spec.replicas", Conflict),
            ("spec.template.metadata.labels.tier", Set),
            (IMAGE, Conflict),
        ]
    );
    let screen = text(&app);
    assert!(screen.contains("server-side as \"kubectl\""), "{screen}");
    assert!(screen.contains("conflict spec.replicas"), "{screen}");
    assert!(
        screen.contains("5 → 3   owners: kubectl, kubectl (scale) → kubectl, kubectl (scale)"),
        "{screen}"
    );
    assert!(screen.contains("2 conflict(s), 2 undecided"), "{screen}");
}

#[test]
fn force_conflicts_takes_every_field() {
    let mut app = app(true, 140, 30);
    assert_eq!(app.ssa_conflict_count(), 0);
    select(&mut app, "web");
    let screen = text(&app);
    assert!(screen.contains("take     spec.replicas"), "{screen}");
    assert!(screen.contains("≠0 conflict"), "{screen}");
    assert!(screen.contains("~ Deployment/web"), "{screen}");
}

#[test]
fn the_conflict_filter_shows_conflicted_objects_only() {
    let mut app = app(false, 120, 30);
    // all → changes → create → update → in sync → prune → error → warning → conflict
    press(&mut app, "ffffffff");
    assert_eq!(app.filter, Filter::Conflict);
    assert_eq!(app.shown, 1);
    press(&mut app, "f");
    assert_eq!(app.filter, Filter::Marked);
}

#[test]
fn t_and_w_decide_a_conflict_row_and_show_it() {
    let mut app = app(false, 140, 30);
    select(&mut app, "web");
    app.update(Msg::Key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Enter,
        crossterm::event::KeyModifiers::NONE,
    )));
    // On spec.replicas (the first row): force it.
    press(&mut app, "T");
    // The label row is no conflict: nothing to decide.
    press(&mut app, "jT");
    assert!(
        app.last_result
            .as_deref()
            .is_some_and(|s| s.contains("no conflict")),
        "{:?}",
        app.last_result
    );
    // The image: give way.
    press(&mut app, "jW");
    let id = app.plan.objects[0].id();
    let decided = app.ssa.decisions.get(&id).cloned().unwrap_or_default();
    assert_eq!(decided.get("spec.replicas"), Some(&Decision::Force));
    assert_eq!(decided.get(IMAGE), Some(&Decision::GiveWay));
    let screen = text(&app);
    assert!(screen.contains("force    spec.replicas"), "{screen}");
    assert!(screen.contains("give way spec.template"), "{screen}");
    // Given way: the live value stays, its manager keeps it.
    assert!(
        screen.contains("\"nginx:hotfix\" → \"nginx:hotfix\"   owners: kubectl-set → kubectl-set"),
        "{screen}"
    );
    // Forced: the config's value, this manager's.
    assert!(
        screen.contains("5 → 3   owners: kubectl, kubectl (scale) → kubectl"),
        "{screen}"
    );
    assert!(screen.contains("2 conflict(s), 0 undecided"), "{screen}");
    // Every conflict decided: the list's mark is the update's again.
    assert!(screen.contains("~ Deployment/web"), "{screen}");
    // W again undecides it.
    press(&mut app, "W");
    assert_eq!(app.ssa.undecided(&id), 1);
}
