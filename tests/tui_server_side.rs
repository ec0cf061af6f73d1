//! The TUI with `--server-side`, driven by keys through `App::update` on a
//! plan built by the core from a config and a live object with
//! managedFields (a `kubectl scale` and a `kubectl set image` that a new
//! config conflicts with): the list's marks and counts, the filter, the
//! field pane's rows, and the per-field decisions.

#[path = "common/decisions.rs"]
mod decisions;
#[path = "common/kubectl.rs"]
mod kubectl;
#[path = "common/real.rs"]
mod real;
#[path = "common/server.rs"]
mod server;
mod tui_fixture;

use decisions::IMAGE;
use kapply::fieldpath::FieldPath;
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

/// An app in `--server-side` mode as kubectl's manager (forcing when
/// `force`), not yet started.
fn server_side_app(force: bool) -> App {
    App::new(Options {
        server_side: Some(ServerSideMode {
            manager: "kubectl".into(),
            force,
        }),
        ..Options::default()
    })
}

fn app(force: bool, w: u16, h: u16) -> App {
    let mut app = server_side_app(force);
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

#[test]
fn objects_follow_the_server_side_plan_and_conflicts_are_marked() {
    let app = app(false, 120, 30);
    let actions: Vec<(String, ObjectAction)> = app
        .list
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
        screen.contains("5 → 3   owners: kubectl, kubectl (scale) (unchanged)"),
        "{screen}"
    );
    assert!(screen.contains("2 conflict(s), 2 undecided"), "{screen}");
}

#[test]
fn client_side_views_and_actions_say_they_do_not_apply() {
    let mut app = app(false, 140, 30);
    select(&mut app, "web");
    for k in ["y", "c", "F", "L"] {
        press(&mut app, k);
        assert!(!app.detail.yaml && app.popup.is_none(), "{k}");
        assert!(
            app.last_result
                .as_deref()
                .is_some_and(|s| s.contains("not with --server-side")),
            "{k}: {:?}",
            app.last_result
        );
    }
    app.update(tui_fixture::code(crossterm::event::KeyCode::Enter));
    press(&mut app, " R");
    assert!(app.sel.excluded.is_empty() && app.sel.released.is_empty());
}

/// A streamed load (rows as their LISTs answer, kept small): each batch is
/// planned server-side as it comes, and the end of the load keeps them.
#[test]
fn streamed_rows_are_planned_server_side_as_they_come() {
    let all = plan().objects;
    let mut app = server_side_app(false);
    app.update(Msg::Resize(120, 30));
    app.start();
    let manifests: Vec<_> = all
        .iter()
        .map(|o| {
            let mut m = o.clone();
            m.action = ObjectAction::Unchanged;
            m.fields.clear();
            m.patch = None;
            m.last_applied = None;
            m.live = None;
            m.warnings.clear();
            m
        })
        .collect();
    app.update(Msg::Manifests(Ok(Plan {
        objects: manifests,
        prune_skipped: None,
    })));
    app.update(Msg::Connected(Ok(())));
    let rows = |objects: &[kapply::plan::ObjectPlan], planned| {
        Msg::Rows(kapply::ops::Rows {
            objects: objects
                .iter()
                .cloned()
                .map(kapply::plan::compact::split)
                .collect(),
            lists_done: planned,
            lists_total: 3,
            planned,
            total: 3,
        })
    };
    app.update(rows(&all[..1], 1));
    assert_eq!(app.ssa_conflict_count(), 1);
    let screen = text(&app);
    assert!(screen.contains("≠ Deployment/web"), "{screen}");
    assert!(screen.contains("? ConfigMap/cfg"), "{screen}");
    app.update(rows(&all[1..], 3));
    app.update(Msg::Loaded(Ok(Plan::default())));
    let actions: Vec<ObjectAction> = app.list.plan.objects.iter().map(|o| o.action).collect();
    assert_eq!(
        actions,
        vec![
            ObjectAction::Update,
            ObjectAction::Unchanged,
            ObjectAction::Create
        ]
    );
    assert_eq!(app.ssa_conflict_count(), 1);
    // The selected row built whole from its compact form keeps the
    // server-side action.
    select(&mut app, "cfg");
    assert_eq!(
        app.selected().map(|o| o.action),
        Some(ObjectAction::Unchanged)
    );
}

/// Followed in the cluster: the scale's claim on the replicas released
/// (kubectl's Apply entry owns them alone again with the config's value)
/// is planned again server-side at once: the object's conflict on the
/// replicas is gone, the image's is left; and an open server-side
/// confirmation holding the object is withdrawn.
#[test]
fn a_change_in_the_cluster_is_planned_again_server_side() {
    use kapply::ops::LiveEvent;
    let mut app = app(false, 140, 30);
    app.update(Msg::Live(1, LiveEvent::Watching));
    select(&mut app, "web");
    app.update(tui_fixture::code(crossterm::event::KeyCode::Enter));
    press(&mut app, "TjjW");
    let effects = press(&mut app, "a");
    assert!(matches!(effects.as_slice(), [Effect::ServerSideDryRun(..)]));
    let mut live = web_live();
    live["spec"]["replicas"] = json!(3);
    live["metadata"]["managedFields"]
        .as_array_mut()
        .unwrap()
        .remove(1);
    let id = app.list.plan.objects[0].id();
    app.update(Msg::Live(
        1,
        LiveEvent::Changed {
            object: id.clone(),
            live: Some(live),
        },
    ));
    let Some(kapply::tui::app::Popup::Notice { title, .. }) = &app.popup else {
        panic!("the confirmation stays: {:?}", app.popup);
    };
    assert_eq!(*title, "changed in the cluster");
    assert_eq!(
        app.ssa.conflicts.get(&id),
        Some(&vec![FieldPath::from(IMAGE)])
    );
    // The image's decision still covers the conflict left.
    assert_eq!(app.ssa.undecided(&id), 0);
    press(&mut app, "q");
    let paths: Vec<String> = app
        .ssa_rows()
        .iter()
        .map(|(r, _)| r.path.to_string())
        .collect();
    assert_eq!(
        paths,
        vec![
            "spec.template.metadata.labels.tier".to_string(),
            IMAGE.to_string()
        ]
    );
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
    assert_eq!(app.list.filter, Filter::Conflict);
    assert_eq!(app.list.shown, 1);
    press(&mut app, "f");
    assert_eq!(app.list.filter, Filter::Marked);
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
    let id = app.list.plan.objects[0].id();
    let decided = app.ssa.decisions.get(&id).cloned().unwrap_or_default();
    assert_eq!(decided.get("spec.replicas"), Some(&Decision::Force));
    assert_eq!(decided.get(IMAGE), Some(&Decision::GiveWay));
    let screen = text(&app);
    assert!(screen.contains("force    spec.replicas"), "{screen}");
    assert!(screen.contains("give way spec.template"), "{screen}");
    // Given way: the live value stays, its manager keeps it.
    assert!(
        screen.contains("\"nginx:hotfix\" → \"nginx:hotfix\"   owners: kubectl-set (unchanged)"),
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

#[test]
fn an_undecided_conflict_is_not_sent_and_the_notice_names_it() {
    let mut app = app(false, 140, 30);
    select(&mut app, "web");
    app.update(tui_fixture::code(crossterm::event::KeyCode::Enter));
    press(&mut app, "T");
    let effects = press(&mut app, "a");
    assert!(effects.is_empty(), "{effects:?}");
    let Some(kapply::tui::app::Popup::Notice { title, text }) = &app.popup else {
        panic!("no notice: {:?}", app.popup);
    };
    assert_eq!(*title, "undecided conflicts");
    assert!(
        text.contains(&format!("Deployment demo/web: {IMAGE}")),
        "{text}"
    );
}

#[test]
fn with_force_conflicts_the_request_forces_the_whole_config() {
    let mut app = app(true, 140, 30);
    select(&mut app, "web");
    let effects = press(&mut app, "a");
    let [Effect::ServerSideDryRun(items, manager)] = effects.as_slice() else {
        panic!("{effects:?}");
    };
    assert_eq!(manager, "kubectl");
    assert!(items[0].force);
    assert_eq!(
        items[0].config["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.28"
    );
}

// ---------- against a server ----------

/// The per-field decisions' history ([`decisions`], as
/// `tests/server_side.rs` runs it) on one server, decided in the TUI: on
/// the config that changes both, it forces the replicas (T) and gives way
/// on the image (W); `a`, the server's dry run, Enter; then the object
/// and its managedFields are what the decisions promised.
fn decide_and_apply(kubeconfig: &std::path::Path, ns: &str, bin: &str, dir: &std::path::Path) {
    let kubectl = |args: &[&str]| {
        let o = std::process::Command::new(bin)
            .args(args)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .env_remove("KUBECONFIG")
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {o:?}");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let live = decisions::drifted(&kubectl, dir, ns);
    let get = || decisions::get(&kubectl, ns);

    // The TUI on the config v2 (replicas 3, nginx:1.28) against that live object.
    let v2 = decisions::config(ns);
    let loaded =
        kapply::manifest::parse_str(&v2, std::path::Path::new("m.yaml"), &Default::default());
    let m = loaded.manifests.into_iter().next().expect("a manifest");
    let plan = Plan {
        objects: vec![plan_object_owned(&m, Some(live), &PlanOptions::default())],
        prune_skipped: None,
    };
    let mut app = server_side_app(false);
    app.update(Msg::Resize(140, 40));
    app.start();
    app.update(Msg::Loaded(Ok(plan)));
    assert_eq!(app.ssa_conflict_count(), 1);
    app.update(tui_fixture::code(crossterm::event::KeyCode::Enter));
    let rows: Vec<String> = app
        .ssa_rows()
        .iter()
        .map(|(r, _)| r.path.to_string())
        .collect();
    assert_eq!(rows, vec!["spec.replicas".to_string(), IMAGE.to_string()]);
    press(&mut app, "TjW");
    let effects = press(&mut app, "a");
    let [Effect::ServerSideDryRun(items, manager)] = effects.as_slice() else {
        panic!("{effects:?}");
    };
    let (items, manager) = (items.clone(), manager.clone());
    // The request: forced, the image left out, the container's name kept.
    assert!(items[0].force);
    assert_eq!(
        items[0].config["spec"]["template"]["spec"]["containers"],
        json!([{"name": "web"}])
    );
    let popup = text(&app);
    assert!(popup.contains("force=true"), "{popup}");
    assert!(
        popup.contains("force     spec.replicas = 3 (taken from"),
        "{popup}"
    );
    assert!(
        popup.contains(&format!(
            "give way  {IMAGE} (not sent: kubectl-set keeps \"nginx:hotfix\")"
        )),
        "{popup}"
    );

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let engine = rt.block_on(async {
        let session = kapply::cluster::Session::connect(&kapply::cluster::ClusterOptions {
            kubeconfig: Some(kubeconfig.to_path_buf()),
            ..Default::default()
        })
        .await
        .unwrap();
        kapply::cluster::KubeEngine::new(
            session,
            kapply::manifest::LoadOptions::default(),
            Default::default(),
        )
    });
    use kapply::ops::Engine;
    let dry = rt.block_on(engine.apply_server_side(items.clone(), manager.clone(), true));
    let words: Vec<String> = dry
        .iter()
        .map(|r| format!("{} {}", r.object, r.message()))
        .collect();
    assert_eq!(
        words,
        vec![format!(
            "Deployment {ns}/web serverside-applied (server dry run)"
        )]
    );
    // The dry run wrote nothing.
    assert_eq!(get()["spec"]["replicas"], 5);
    app.update(Msg::ServerSideDryRunDone(dry));
    assert!(text(&app).contains("✓ Deployment"), "{}", text(&app));
    let effects = app.update(tui_fixture::code(crossterm::event::KeyCode::Enter));
    let [Effect::ServerSideApply(sent, _)] = effects.as_slice() else {
        panic!("{effects:?}");
    };
    assert_eq!(sent[0].config, items[0].config);
    let done = rt.block_on(engine.apply_server_side(sent.clone(), manager, false));
    assert_eq!(done[0].message(), "serverside-applied", "{done:?}");

    decisions::assert_decided(&get());
    drop(engine);
    drop(rt);
}

#[test]
fn decisions_made_in_the_tui_hold_on_the_embedded_server() {
    let Some(bin) = kubectl::kubectl() else {
        return;
    };
    let c = server::Cluster::start();
    decide_and_apply(&c.kubeconfig, "tui-decide", &bin, c.dir.path());
}

#[test]
fn decisions_made_in_the_tui_hold_on_the_real_server() {
    let Some(kubeconfig) = real::kubeconfig() else {
        return;
    };
    let Some(bin) = kubectl::kubectl() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ns = real::unique("tui-decide");
    decide_and_apply(&kubeconfig, &ns, &bin, dir.path());
    let _ = std::process::Command::new(&bin)
        .args(["delete", "namespace", &ns, "--wait=false", "--kubeconfig"])
        .arg(&kubeconfig)
        .output();
}

/// Key-driven screens at 80x24 and 160x45: a conflict row, forced, given
/// way, and the confirmation with the server's dry run answered.
#[test]
fn screens_of_a_conflict_resolved_per_field() {
    for (w, h) in [(80u16, 24u16), (160, 45)] {
        let mut app = app(false, w, h);
        select(&mut app, "web");
        app.update(tui_fixture::code(crossterm::event::KeyCode::Enter));
        insta::assert_snapshot!(format!("ssa_conflict_{w}x{h}"), text(&app));
        press(&mut app, "T");
        insta::assert_snapshot!(format!("ssa_force_{w}x{h}"), text(&app));
        press(&mut app, "jjW");
        insta::assert_snapshot!(format!("ssa_give_way_{w}x{h}"), text(&app));
        let effects = press(&mut app, "a");
        let [Effect::ServerSideDryRun(items, _)] = effects.as_slice() else {
            panic!("{effects:?}");
        };
        let mut ok = kapply::ops::ObjectResult::new(
            items[0].plan.id(),
            kapply::ops::Outcome::ServerSideApplied,
        );
        ok.dry_run = true;
        app.update(Msg::ServerSideDryRunDone(vec![ok]));
        insta::assert_snapshot!(format!("ssa_confirm_{w}x{h}"), text(&app));
    }
}

/// `kapply demo --server-side`: the story's `kubectl edit` of ConfigMap
/// settings (LOG_LEVEL debug, manager kubectl-edit) is a conflict for the
/// manifest's `info`; forced in the TUI and applied through the real engine
/// to the demo's embedded server, LOG_LEVEL is `info` and kubectl's, and
/// planning again finds nothing to do there.
#[test]
fn the_demo_story_has_a_conflict_to_force() {
    use kapply::ops::Engine;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let demo = rt
        .block_on(kapply::demo::Demo::start(None, None, false))
        .unwrap();
    let engine = rt.block_on(demo.engine()).unwrap();
    rt.block_on(engine.connect()).unwrap();
    let load = |app: &mut App| {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let plan = rt.block_on(engine.load(tx)).unwrap();
        app.update(Msg::Loaded(Ok(plan)));
    };
    let mut app = server_side_app(false);
    app.update(Msg::Resize(160, 45));
    app.start();
    load(&mut app);
    assert_eq!(app.ssa_conflict_count(), 1);
    let screen = text(&app);
    assert!(screen.contains("≠ ConfigMap/settings"), "{screen}");
    select(&mut app, "settings");
    app.update(tui_fixture::code(crossterm::event::KeyCode::Tab));
    let rows = app.ssa_rows();
    let (row, _) = &rows[0];
    assert_eq!(row.path, "data.LOG_LEVEL");
    assert_eq!(row.action, kapply::ssa::FieldAction::Conflict);
    assert_eq!(row.owners, vec!["kubectl-edit"]);
    assert_eq!(row.live, Some(json!("debug")));
    press(&mut app, "T");
    let effects = press(&mut app, "a");
    let [Effect::ServerSideDryRun(items, manager)] = effects.as_slice() else {
        panic!("{effects:?}");
    };
    assert!(items[0].force);
    let dry = rt.block_on(engine.apply_server_side(items.clone(), manager.clone(), true));
    assert!(dry.iter().all(|r| r.ok()), "{dry:?}");
    app.update(Msg::ServerSideDryRunDone(dry));
    let confirm = text(&app);
    assert!(
        confirm.contains("force     data.LOG_LEVEL = \"info\" (taken from kubectl-edit)"),
        "{confirm}"
    );
    let effects = app.update(tui_fixture::code(crossterm::event::KeyCode::Enter));
    let [Effect::ServerSideApply(sent, manager)] = effects.as_slice() else {
        panic!("{effects:?}");
    };
    let done = rt.block_on(engine.apply_server_side(sent.clone(), manager.clone(), false));
    assert_eq!(done[0].message(), "serverside-applied", "{done:?}");
    load(&mut app);
    let i = app
        .list
        .plan
        .objects
        .iter()
        .position(|o| o.name == "settings")
        .unwrap();
    let o = app.object(i).unwrap().clone();
    assert_eq!(o.action, ObjectAction::Unchanged, "{:?}", app.ssa_rows());
    let live = o.live.clone().unwrap();
    assert_eq!(live["data"]["LOG_LEVEL"], "info");
    let owner: Vec<&str> = live["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["fieldsV1"]["f:data"].get("f:LOG_LEVEL").is_some())
        .filter_map(|e| e["manager"].as_str())
        .collect();
    assert_eq!(owner, vec!["kubectl"], "{live:#}");
    assert_eq!(app.ssa_conflict_count(), 0);
}

/// A custom resource is planned with the schema of its CRD among the rows:
/// a keyed list (`x-kubernetes-list-type: map`) conflicts element by
/// element, not as one atomic list; giving way on one element's field
/// sends the rest.
#[test]
fn a_custom_resource_is_planned_with_its_crds_schema() {
    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
metadata:\n  name: widgets.demo.kapply.dev\nspec:\n  group: demo.kapply.dev\n  scope: Namespaced\n  \
names: {kind: Widget, plural: widgets, singular: widget}\n  versions:\n  - name: v1\n    served: true\n    \
storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          \
spec:\n            type: object\n            properties:\n              parts:\n                \
type: array\n                x-kubernetes-list-type: map\n                x-kubernetes-list-map-keys: [name]\n                \
items:\n                  type: object\n                  properties:\n                    \
name: {type: string}\n                    size: {type: integer}\n";
    const WIDGET: &str = "apiVersion: demo.kapply.dev/v1\nkind: Widget\nmetadata:\n  name: w\n  \
namespace: demo\nspec:\n  parts:\n  - {name: a, size: 2}\n  - {name: b, size: 3}\n";
    let widget_live = json!({"apiVersion": "demo.kapply.dev/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "demo", "uid": "u-3", "managedFields": [
            {"manager": "kubectl", "operation": "Apply", "apiVersion": "demo.kapply.dev/v1",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:parts": {
                "k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:size": {}},
                "k:{\"name\":\"b\"}": {".": {}, "f:name": {}, "f:size": {}}}}}},
            {"manager": "ops", "operation": "Update", "apiVersion": "demo.kapply.dev/v1",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:parts": {
                "k:{\"name\":\"a\"}": {"f:size": {}}}}}}]},
        "spec": {"parts": [{"name": "a", "size": 9}, {"name": "b", "size": 3}]}});
    let mut objects = Vec::new();
    for (text, live) in [(CRD, None), (WIDGET, Some(widget_live))] {
        let loaded =
            kapply::manifest::parse_str(text, std::path::Path::new("m.yaml"), &Default::default());
        let m = loaded.manifests.into_iter().next().expect("a manifest");
        objects.push(plan_object_owned(&m, live, &PlanOptions::default()));
    }
    let mut app = server_side_app(false);
    app.update(Msg::Resize(120, 30));
    app.start();
    app.update(Msg::Loaded(Ok(Plan {
        objects,
        prune_skipped: None,
    })));
    let id = app.list.plan.objects[1].id();
    assert_eq!(
        app.ssa.conflicts.get(&id),
        Some(&vec![FieldPath::from("spec.parts[name=a].size")]),
        "{:?}",
        app.ssa.conflicts
    );
}

/// The server-side confirmation is confirm-then-confirmed: nothing is
/// sent before Enter, Enter waits for the server's dry run, a refusal is
/// shown (its message a line each) with a retry that asks the server
/// again, and Esc sends nothing.
#[test]
fn the_confirmation_waits_for_its_dry_run_and_retries_it() {
    use crossterm::event::KeyCode;
    use kapply::ops::{Failure, ObjectResult, Outcome};
    use kapply::tui::app::Confirmed;
    use tui_fixture::code;
    // Esc: nothing sent, the dialog gone, its dry run no longer awaited.
    let mut cancelled = app(true, 140, 30);
    select(&mut cancelled, "web");
    press(&mut cancelled, "a");
    assert!(cancelled.update(code(KeyCode::Esc)).is_empty());
    assert!(cancelled.popup.is_none());
    assert!(!cancelled.animating());

    let mut app = app(true, 140, 30);
    select(&mut app, "web");
    let effects = press(&mut app, "a");
    let [Effect::ServerSideDryRun(items, _)] = effects.as_slice() else {
        panic!("{effects:?}");
    };
    let web = items[0].plan.id();
    assert!(
        matches!(app.confirming(), Some(Confirmed::ServerSideApply { manager, .. }) if manager == "kubectl")
    );
    // Enter and r before the answer: nothing.
    assert!(app.update(code(KeyCode::Enter)).is_empty());
    assert_eq!(
        app.last_result.as_deref(),
        Some("waiting for the server dry run: Enter applies once it answers")
    );
    assert!(press(&mut app, "r").is_empty());
    assert!(text(&app).contains("Esc cancel (Enter waits for the dry run)"));
    assert!(app.animating(), "the spinner turns while it waits");
    // A refusal: each line of its message, and the retry offered.
    let refusal = ObjectResult::failed(
        web.clone(),
        Failure::Server("Apply failed with 1 conflict:\n.spec.replicas".into()),
    );
    app.update(Msg::ServerSideDryRunDone(vec![refusal]));
    let s = text(&app);
    assert!(
        s.contains("  ✗ Deployment demo/web: Apply failed with 1 conflict:"),
        "{s}"
    );
    assert!(s.contains("    .spec.replicas"), "{s}");
    assert!(
        s.contains("Enter apply (refused objects fail again) · r retry dry run · Esc cancel"),
        "{s}"
    );
    assert!(!app.animating());
    // r asks again and waits again.
    let effects = press(&mut app, "r");
    assert!(
        matches!(effects.as_slice(), [Effect::ServerSideDryRun(again, m)] if again.len() == 1 && m == "kubectl"),
        "{effects:?}"
    );
    assert!(app.update(code(KeyCode::Enter)).is_empty());
    let mut ok = ObjectResult::new(web.clone(), Outcome::ServerSideApplied);
    ok.dry_run = true;
    app.update(Msg::ServerSideDryRunDone(vec![ok]));
    assert!(text(&app).contains("Enter apply · Esc cancel"));
    // Enter: the request, as the dialog showed it.
    let effects = app.update(code(KeyCode::Enter));
    assert!(
        matches!(effects.as_slice(), [Effect::ServerSideApply(sent, m)] if sent[0].plan.id() == web && sent[0].force && m == "kubectl"),
        "{effects:?}"
    );
    assert!(app.popup.is_none());
}
