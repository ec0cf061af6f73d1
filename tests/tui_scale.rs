//! The TUI at scale: a load's rows arrive as they are planned, kept small
//! (no field rows, config or live object), and the selected object's rows
//! are built again on demand. Driven through `App::update` and rendered on
//! ratatui's TestBackend, like tests/tui.rs.

mod tui_fixture;

use crossterm::event::KeyCode;
use kapply::ops::Rows;
use kapply::plan::compact::split;
use kapply::plan::{ObjectAction, ObjectPlan, Plan, PlanOptions, plan_object_owned};
use kapply::tui::app::Msg;
use kapply::tui::{App, Options};
use tui_fixture::{code, key, select};

/// The fixture's objects planned for real (from their config and live
/// object, with a source each), a prune candidate and an error row: what
/// a load of the real engine hands the TUI.
fn planned() -> Vec<ObjectPlan> {
    let mut out = Vec::new();
    let fixture = [
        tui_fixture::namespace_create(),
        tui_fixture::configmap_create(),
        tui_fixture::deployment(),
        tui_fixture::service_in_sync(),
        tui_fixture::secret(),
    ];
    for (n, o) in fixture.into_iter().enumerate() {
        let config = o.config.clone().expect("a config");
        let path = std::path::PathBuf::from(format!("m/{n}-{}.yaml", o.name));
        let text = kapply::yaml::to_yaml(&config);
        let loaded =
            kapply::manifest::parse_str(&text, &path, &kapply::manifest::LoadOptions::default());
        let m = loaded.manifests.into_iter().next().expect("a manifest");
        out.push(plan_object_owned(
            &m,
            o.live.clone(),
            &PlanOptions::default(),
        ));
    }
    let live = tui_fixture::prune_candidate().live.expect("a live object");
    out.push(kapply::plan::prune_candidate(
        &live,
        "has last-applied annotation, selected by --all".into(),
    ));
    let mut error = tui_fixture::error_object();
    error.source = Some("m/9-widget.yaml:1".into());
    out.push(error);
    out
}

fn new_app(w: u16, h: u16) -> App {
    let mut a = App::new(Options::default());
    a.clock = || "12:34:56".to_string();
    a.update(Msg::Resize(w, h));
    let _ = a.start();
    a
}

/// The rows the manifests give before live state is read.
fn manifest_rows(objects: &[ObjectPlan]) -> Plan {
    let objects = objects
        .iter()
        .filter(|o| o.source.is_some())
        .map(|o| {
            let mut m = o.clone();
            if m.action != ObjectAction::Error {
                m.action = ObjectAction::Unchanged;
            }
            m.fields.clear();
            m.patch = None;
            m.last_applied = None;
            m.config = None;
            m.live = None;
            m.warnings.clear();
            m.reverts_drift = false;
            m
        })
        .collect();
    Plan {
        objects,
        prune_skipped: None,
    }
}

fn rows(objects: &[ObjectPlan], lists: (usize, usize), planned: usize, total: usize) -> Msg {
    Msg::Rows(Rows {
        objects: objects.iter().cloned().map(split).collect(),
        lists_done: lists.0,
        lists_total: lists.1,
        planned,
        total,
    })
}

#[test]
fn progress_line_and_rows_as_they_are_planned_80x24() {
    let all = planned();
    let mut a = new_app(80, 24);
    a.update(Msg::Manifests(Ok(manifest_rows(&all))));
    a.update(Msg::Connected(Ok(())));
    // The first LISTs answered: the Namespace, ConfigMap and Deployment
    // are planned, the rest still wait.
    a.update(rows(&all[..3], (2, 5), 3, 6));
    let s = tui_fixture::text(&a);
    assert!(s.contains("loading: LIST 2/5, planned 3/6"), "{s}");
    assert!(s.contains("step    LIST 2/5, planned 3/6"), "{s}");
    insta::assert_snapshot!("progress_80x24", s);
    // Planned rows show what apply would do; the others are not compared yet.
    assert!(s.contains("~ Deployment/nginx-deploymen"), "{s}");
    assert!(s.contains("? Service/nginx"), "{s}");
    assert!(s.contains("+ ConfigMap/app-config"), "{s}");
    // Rows put in place of their manifests keep the list as a rebuild
    // makes it, counts included.
    let (rows_before, counts_before) = (a.list.rows.clone(), a.list.counts);
    a.rebuild();
    assert_eq!(
        (a.list.rows.clone(), a.list.counts),
        (rows_before, counts_before)
    );
    assert_eq!(a.list.counts.update, 1);
    // Nothing destructive before the load is done.
    a.update(key('a'));
    assert!(a.popup.is_none());

    // The rest, then the end: the list is whole, with the prune candidate.
    a.update(rows(&all[3..], (5, 5), 7, 6));
    a.update(Msg::Loaded(Ok(Plan::default())));
    assert!(a.conn.live_known);
    assert_eq!(a.list.plan.objects.len(), all.len());
    for (got, want) in a.list.plan.objects.iter().zip(&all) {
        assert_eq!(got.id(), want.id());
        assert_eq!(got.action, want.action);
    }
    let s = tui_fixture::text(&a);
    let updates = all
        .iter()
        .filter(|o| o.action == ObjectAction::Update)
        .count();
    assert!(s.contains(&format!("~{updates} update")), "{s}");
    assert!(!s.contains("planned"), "{s}");
}

#[test]
fn the_selected_objects_rows_are_built_on_demand() {
    let all = planned();
    // Whole rows, as a fake engine (or an older one) hands them over.
    let mut whole = new_app(120, 40);
    whole.update(Msg::Loaded(Ok(Plan {
        objects: all.clone(),
        prune_skipped: None,
    })));
    // Streamed rows, kept small.
    let mut small = new_app(120, 40);
    small.update(Msg::Manifests(Ok(manifest_rows(&all))));
    small.update(Msg::Connected(Ok(())));
    small.update(rows(&all[..4], (3, 5), 4, 6));
    small.update(rows(&all[4..], (5, 5), 7, 6));
    small.update(Msg::Loaded(Ok(Plan::default())));

    // The plan holds no field rows, configs or live objects...
    assert!(small.list.plan.objects.iter().all(|o| o.fields.is_empty()
        && o.config.is_none()
        && o.live.is_none()
        && o.patch.is_none()));
    assert!(all.iter().any(|o| !o.fields.is_empty()));
    // ...yet every object, selected, is whole, and shows as the whole row does.
    for o in &all {
        select(&mut whole, &o.name);
        select(&mut small, &o.name);
        assert_eq!(small.selected(), Some(o), "{}", o.id());
        assert_eq!(tui_fixture::text(&small), tui_fixture::text(&whole));
        // The field table's cursor and the YAML view too.
        for m in [code(KeyCode::Tab), key('j'), key('j')] {
            small.update(m.clone());
            whole.update(m);
        }
        assert_eq!(tui_fixture::text(&small), tui_fixture::text(&whole));
        for m in [key('y'), key('j')] {
            small.update(m.clone());
            whole.update(m);
        }
        assert_eq!(tui_fixture::text(&small), tui_fixture::text(&whole));
        for m in [key('y'), code(KeyCode::Tab)] {
            small.update(m.clone());
            whole.update(m);
        }
    }
    // What apply would send is the same, marked or selected.
    for a in [&mut whole, &mut small] {
        for name in ["app-config", "nginx-deployment"] {
            select(a, name);
            a.update(key(' '));
        }
    }
    let items = |a: &App| format!("{:?}", a.apply_items());
    assert_eq!(items(&small), items(&whole));
    assert!(items(&small).contains("nginx:1.16.1"));
}

#[test]
fn a_row_planned_into_another_group_moves_there() {
    let all = planned();
    let mut a = new_app(120, 40);
    // The ConfigMap's manifest names no namespace; planning fills it in.
    let mut manifests = manifest_rows(&all);
    let cm = manifests
        .objects
        .iter_mut()
        .find(|o| o.name == "app-config")
        .expect("the ConfigMap");
    let planned_ns = cm.namespace.take().expect("a namespace");
    a.update(Msg::Manifests(Ok(manifests)));
    a.update(Msg::Connected(Ok(())));
    select(&mut a, "app-config");
    assert_eq!(group_of_cursor(&a), "(cluster)");
    a.update(rows(&all[..3], (2, 5), 3, 6));
    // Still selected, now in its namespace's group; the list as a rebuild makes it.
    assert_eq!(a.selected().map(|o| o.name.as_str()), Some("app-config"));
    assert_eq!(
        a.selected().and_then(|o| o.namespace.as_deref()),
        Some(planned_ns.as_str())
    );
    let (rows_before, counts_before) = (a.list.rows.clone(), a.list.counts);
    a.rebuild();
    assert_eq!(
        (a.list.rows.clone(), a.list.counts),
        (rows_before, counts_before)
    );
    assert_eq!(group_of_cursor(&a), planned_ns);
}

/// The group header the selected row is listed under.
fn group_of_cursor(a: &App) -> String {
    a.list.rows[..=a.sel.cursor]
        .iter()
        .rev()
        .find_map(|r| match r {
            kapply::tui::app::Row::Group(g) => Some(g.clone()),
            kapply::tui::app::Row::Object(_) => None,
        })
        .unwrap_or_default()
}
