//! Following the cluster while the TUI is open: the app's side (what a
//! watch's reports do to the plan, the marks, the header and an open apply
//! confirmation), the embedded server's watch (bookmarks, 410 Gone), and
//! the real engine watching while the real kubectl changes objects.

mod tui_fixture;

#[path = "common/kubectl.rs"]
mod kubectl;
#[path = "common/server.rs"]
mod server;

use crossterm::event::KeyCode;
use kapply::ops::LiveEvent;
use kapply::plan::ObjectAction;
use kapply::tui::app::{Confirmed, Effect, Live, Msg, Popup};
use kapply::tui::{App, Options};
use serde_json::{Value, json};
use tui_fixture::{code, id, key, select};

fn app(w: u16, h: u16) -> App {
    let mut app = App::new(Options::default());
    app.clock = || "12:34:56".to_string();
    app.update(Msg::Resize(w, h));
    let _ = app.start();
    let after = app.update(Msg::Loaded(Ok(tui_fixture::plan())));
    assert!(matches!(after.as_slice(), [Effect::Watch(1)]), "{after:?}");
    app
}

/// The fixture Deployment's live object with another image, as `kubectl
/// set image` leaves it (a new resourceVersion, its manager recorded).
fn hotfixed() -> Value {
    let mut live = tui_fixture::deployment().live.unwrap();
    live["metadata"]["resourceVersion"] = json!("77");
    live["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.14-hotfix");
    live["metadata"]["managedFields"]
        .as_array_mut()
        .unwrap()
        .push(
            json!({"manager": "kubectl-set", "operation": "Update", "apiVersion": "apps/v1",
            "time": "2026-11-28T12:30:00Z",
            "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers":
                {"k:{\"name\":\"nginx\"}": {"f:image": {}}}}}}}}),
        );
    live
}

fn image_live(a: &App) -> Value {
    let i = a
        .list
        .plan
        .objects
        .iter()
        .position(|o| o.name == "nginx-deployment")
        .unwrap();
    a.object(i).unwrap().live.as_ref().unwrap()["spec"]["template"]["spec"]["containers"][0]
        ["image"]
        .clone()
}

#[test]
fn a_change_in_the_cluster_is_planned_again_and_marked() {
    let mut a = app(120, 30);
    assert_eq!(
        a.conn.live, None,
        "nothing is said before the watch reports"
    );
    a.update(Msg::Live(1, LiveEvent::Watching));
    assert_eq!(a.conn.live, Some(Live::Watching));
    select(&mut a, "nginx-deployment");
    a.update(code(KeyCode::Enter));
    let eff = a.update(Msg::Live(
        1,
        LiveEvent::Changed {
            object: id("Deployment default/nginx-deployment"),
            live: Some(hotfixed()),
        },
    ));
    assert!(eff.is_empty(), "{eff:?}");
    assert_eq!(image_live(&a), "nginx:1.14-hotfix");
    assert_eq!(
        a.conn
            .changed
            .get(&id("Deployment default/nginx-deployment")),
        Some(&"12:34:56".to_string())
    );
    let log = &a.log.last().unwrap().text;
    assert_eq!(
        log,
        "Deployment default/nginx-deployment changed in the cluster at 12:34:56: planned again \
         (still update)"
    );
    // The row now says what apply does to the hotfix (the planner's words).
    let o = a.selected().unwrap();
    let image = o
        .fields
        .iter()
        .find(|f| f.path == "spec.template.spec.containers[name=nginx].image")
        .unwrap();
    assert_eq!(image.live, Some(json!("nginx:1.14-hotfix")));
    assert_eq!(image.config, Some(json!("nginx:1.16.1")));
    let screen = tui_fixture::text(&a);
    assert!(screen.contains("watching"), "{screen}");
    assert!(
        screen.contains("Δ changed in the cluster at 12:34:56: planned again"),
        "{screen}"
    );
    insta::assert_snapshot!("changed_in_the_cluster_120x30", screen);
}

/// A recreate confirmation is withdrawn the same way: the object changed
/// in the cluster since its review is never deleted on that review.
#[test]
fn a_change_withdraws_an_open_recreate_confirmation() {
    let mut a = app(100, 30);
    a.update(Msg::Live(1, LiveEvent::Watching));
    select(&mut a, "nginx-deployment");
    a.update(key('a'));
    let dep = id("Deployment default/nginx-deployment");
    a.update(Msg::DryRunDone(vec![kapply::ops::ObjectResult::failed(
        dep.clone(),
        kapply::ops::Failure::Invalid("spec.selector: field is immutable".into()),
    )]));
    a.update(key('F'));
    assert!(
        matches!(a.confirming(), Some(Confirmed::Recreate(_))),
        "{:?}",
        a.popup
    );
    let eff = a.update(Msg::Live(
        1,
        LiveEvent::Changed {
            object: dep.clone(),
            live: Some(hotfixed()),
        },
    ));
    assert!(eff.is_empty(), "{eff:?}");
    let Some(Popup::Notice { text, .. }) = &a.popup else {
        panic!("{:?}", a.popup);
    };
    assert!(text.contains("while this recreate waited"), "{text}");
    assert!(text.contains("press F to review"), "{text}");
    // Enter closes the notice and sends nothing; F confirms the new plan anew.
    assert!(a.update(code(KeyCode::Enter)).is_empty());
    assert!(a.update(key('F')).is_empty());
    let Some(Confirmed::Recreate(items)) = a.confirming() else {
        panic!("{:?}", a.popup);
    };
    assert_eq!(
        items[0].plan.live.as_ref().unwrap()["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.14-hotfix",
        "the new plan"
    );
}

#[test]
fn a_change_withdraws_an_open_confirmation_and_the_new_plan_is_confirmed_anew() {
    let mut a = app(100, 30);
    a.update(Msg::Live(1, LiveEvent::Watching));
    select(&mut a, "nginx-deployment");
    let eff = a.update(key('a'));
    assert!(matches!(eff.as_slice(), [Effect::DryRun(_)]), "{eff:?}");
    assert!(matches!(a.confirming(), Some(Confirmed::Apply(_))));
    let eff = a.update(Msg::Live(
        1,
        LiveEvent::Changed {
            object: id("Deployment default/nginx-deployment"),
            live: Some(hotfixed()),
        },
    ));
    assert!(eff.is_empty(), "{eff:?}");
    // Enter now only closes the notice: nothing is applied.
    let Some(Popup::Notice { title, text }) = &a.popup else {
        panic!("{:?}", a.popup);
    };
    assert_eq!(*title, "changed in the cluster");
    assert!(text.contains("Nothing was sent"), "{text}");
    insta::assert_snapshot!("apply_withdrawn_100x30", tui_fixture::text(&a));
    let eff = a.update(code(KeyCode::Enter));
    assert!(eff.is_empty(), "{eff:?}");
    assert!(a.popup.is_none());
    // `a` again: the confirmation holds the new plan (the live image is
    // the hotfix) and waits for its own dry run.
    let eff = a.update(key('a'));
    let [Effect::DryRun(items)] = eff.as_slice() else {
        panic!("{eff:?}");
    };
    let live = items[0].plan.live.as_ref().unwrap();
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.14-hotfix"
    );
    assert!(
        matches!(&a.popup, Some(Popup::Confirm(c)) if matches!(c.action, Confirmed::Apply(_)) && c.waiting())
    );
    let eff = a.update(code(KeyCode::Enter));
    assert!(eff.is_empty(), "Enter waits for the new dry run: {eff:?}");
}

#[test]
fn reports_of_an_older_watch_and_changes_during_an_apply_are_left_to_the_reload() {
    let mut a = app(100, 30);
    let change = |n| {
        Msg::Live(
            n,
            LiveEvent::Changed {
                object: id("Deployment default/nginx-deployment"),
                live: Some(hotfixed()),
            },
        )
    };
    // A report of a watch an older load started.
    a.update(change(0));
    assert_eq!(image_live(&a), "nginx:1.14.2");
    // While an apply is under way (its own writes come back as changes).
    select(&mut a, "nginx-deployment");
    a.update(key('a'));
    a.update(Msg::DryRunDone(vec![tui_fixture::result(
        "Deployment default/nginx-deployment",
        true,
        "configured (server dry run)",
    )]));
    let eff = a.update(code(KeyCode::Enter));
    assert!(matches!(eff.as_slice(), [Effect::Apply(_)]), "{eff:?}");
    a.update(change(1));
    assert_eq!(image_live(&a), "nginx:1.14.2");
    assert!(a.conn.changed.is_empty());
    // The reload after it starts a new watch.
    let eff = a.update(Msg::Applied(vec![tui_fixture::result(
        "Deployment default/nginx-deployment",
        true,
        "configured",
    )]));
    assert!(matches!(eff.as_slice(), [Effect::Load]), "{eff:?}");
    let eff = a.update(Msg::Loaded(Ok(tui_fixture::plan())));
    assert!(matches!(eff.as_slice(), [Effect::Watch(2)]), "{eff:?}");
}

#[test]
fn the_header_says_watching_or_as_of_when() {
    let mut a = app(100, 30);
    // The counts' row of the header.
    let header = |a: &App| {
        tui_fixture::text(a)
            .lines()
            .find(|l| l.contains(" create "))
            .unwrap()
            .to_string()
    };
    assert!(!header(&a).contains("watching") && !header(&a).contains("live as of"));
    a.update(Msg::Live(1, LiveEvent::Watching));
    assert!(header(&a).ends_with("watching"), "{}", header(&a));
    a.clock = || "12:40:00".to_string();
    a.update(Msg::Live(
        1,
        LiveEvent::Interrupted("connection refused".into()),
    ));
    assert!(
        header(&a).ends_with("live as of 12:40:00"),
        "{}",
        header(&a)
    );
    assert_eq!(
        a.log.last().unwrap().text,
        "watch interrupted, reconnecting: connection refused"
    );
    a.update(Msg::Live(1, LiveEvent::Watching));
    assert!(header(&a).ends_with("watching"));
    a.clock = || "12:45:00".to_string();
    a.update(Msg::LiveStopped(1, "gave up".into()));
    assert!(
        header(&a).ends_with("live as of 12:45:00"),
        "{}",
        header(&a)
    );
    // A deletion in the cluster: the object is to be created again.
    a.update(Msg::Live(
        1,
        LiveEvent::Changed {
            object: id("Deployment default/nginx-deployment"),
            live: None,
        },
    ));
    let o = a
        .list
        .plan
        .objects
        .iter()
        .find(|o| o.name == "nginx-deployment")
        .unwrap();
    assert_eq!(o.action, ObjectAction::Create);
    assert_eq!(a.list.counts.create, 3);
}

/// The embedded server's watch as kube-apiserver's: BOOKMARK events when
/// asked for (and only then), and 410 Gone from a resourceVersion whose
/// changes are forgotten (compaction).
#[tokio::test]
async fn the_server_sends_bookmarks_and_410_gone() {
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
    let (server, _dir, kubeconfig) = server::start_with_kubeconfig().await;
    server
        .api()
        .set_bookmark_interval(std::time::Duration::from_millis(100));
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&kubeconfig).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let cm = |name: &str| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name}})).unwrap()
    };
    cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    let rv = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut events = cms
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    cms.create(&PostParams::default(), &cm("b")).await.unwrap();
    let added = events.next().await.unwrap().unwrap();
    let WatchEvent::Added(b) = added else {
        panic!("{added:?}");
    };
    assert_eq!(b.metadata.name.as_deref(), Some("b"));
    let bookmark = events.next().await.unwrap().unwrap();
    let WatchEvent::Bookmark(mark) = bookmark else {
        panic!("{bookmark:?}");
    };
    assert_eq!(
        Some(&mark.metadata.resource_version),
        b.metadata.resource_version.as_ref()
    );
    // No bookmark unless asked for: the next event is the next change.
    let mut plain = cms
        .watch(
            &WatchParams {
                bookmarks: false,
                ..Default::default()
            },
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    assert!(matches!(
        plain.next().await.unwrap().unwrap(),
        WatchEvent::Added(_)
    ));
    let quiet = tokio::time::timeout(std::time::Duration::from_millis(400), plain.next()).await;
    assert!(quiet.is_err(), "{quiet:?}");
    // Compacted: the old resourceVersion is gone.
    server.api().compact_events();
    let mut gone = cms
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    let e = gone.next().await.unwrap().unwrap();
    let WatchEvent::Error(status) = e else {
        panic!("{e:?}");
    };
    assert_eq!(status.code, 410);
    assert!(
        status.message.starts_with("too old resource version"),
        "{status:?}"
    );
}

/// Run an effect the way the runtime does and feed its messages back,
/// until none is left (a watch is left running: it never ends).
async fn settle(
    app: &mut App,
    engine: &std::sync::Arc<dyn kapply::ops::Engine>,
    mut effects: Vec<Effect>,
) -> Vec<Effect> {
    let mut watches = Vec::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    while let Some(e) = effects.pop() {
        if matches!(e, Effect::Watch(_)) {
            watches.push(e);
            continue;
        }
        if let Some(msg) = kapply::tui::runtime::perform(e, engine.clone(), tx.clone()).await {
            while let Ok(p) = rx.try_recv() {
                effects.extend(app.update(p));
            }
            effects.extend(app.update(msg));
        }
    }
    watches
}

/// Wait (at most 20 s) for the watch's next message that `want` accepts,
/// feeding every message to the app on the way.
async fn until(
    app: &mut App,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Msg>,
    want: impl Fn(&Msg) -> bool,
) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let msg = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .expect("the watch reported in time")
            .expect("the watch is running");
        let done = want(&msg);
        app.update(msg);
        if done {
            return;
        }
    }
}

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: c
        image: nginx:1.14
";

const CONFIGMAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: default
data:
  LOG_LEVEL: info
";

/// The real engine and the app as the runtime runs them, on the embedded
/// server, while the real kubectl changes objects: a change made after the
/// load and before the watch began (the LIST that starts it sees it), and
/// changes made while it watches are planned again at once, a deletion
/// too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_changes_made_while_the_tui_is_open_are_planned_again() {
    let (server, dir, kubeconfig) = server::start_with_kubeconfig().await;
    server
        .api()
        .set_bookmark_interval(std::time::Duration::from_millis(200));
    let Some(k) = kubectl::Kubectl::find(&kubeconfig) else {
        return;
    };
    let m = dir.path().join("m");
    std::fs::create_dir(&m).unwrap();
    std::fs::write(m.join("web.yaml"), DEPLOYMENT).unwrap();
    std::fs::write(m.join("settings.yaml"), CONFIGMAP).unwrap();
    let kubectl = |args: Vec<String>| {
        let mut cmd = tokio::process::Command::from(
            k.command(&args.iter().map(String::as_str).collect::<Vec<_>>()),
        );
        async move {
            let o = cmd.output().await.unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
    };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    kubectl(s(&["apply", "-f", m.to_str().unwrap()])).await;
    // The manifest moves on: apply would now set 1.16.
    std::fs::write(m.join("web.yaml"), DEPLOYMENT.replace("1.14", "1.16")).unwrap();

    let session = kapply::cluster::Session::connect(&kapply::cluster::ClusterOptions {
        kubeconfig: Some(kubeconfig.clone()),
        ..Default::default()
    })
    .await
    .unwrap();
    let engine: std::sync::Arc<dyn kapply::ops::Engine> =
        std::sync::Arc::new(kapply::cluster::KubeEngine::new(
            session,
            kapply::manifest::LoadOptions {
                paths: vec![m.clone()],
                ..Default::default()
            },
            Default::default(),
        ));
    let mut a = App::new(Options::default());
    a.update(Msg::Resize(120, 30));
    let start = a.start();
    let watches = settle(&mut a, &engine, start).await;
    assert!(a.conn.live_known);
    let [Effect::Watch(n)] = watches.as_slice() else {
        panic!("{watches:?}");
    };
    let n = *n;
    // Made after the load, before the watch: the watch's first LIST sees it.
    kubectl(s(&[
        "patch",
        "configmap",
        "settings",
        "-p",
        r#"{"data":{"LOG_LEVEL":"debug"}}"#,
    ]))
    .await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let watch = tokio::spawn(kapply::tui::runtime::perform(
        Effect::Watch(n),
        engine.clone(),
        tx,
    ));
    let settings = id("ConfigMap default/settings");
    until(
        &mut a,
        &mut rx,
        |m| matches!(m, Msg::Live(_, LiveEvent::Changed { object, .. }) if *object == settings),
    )
    .await;
    until(&mut a, &mut rx, |m| {
        matches!(m, Msg::Live(_, LiveEvent::Watching))
    })
    .await;
    assert_eq!(a.conn.live, Some(Live::Watching));
    let o = a
        .list
        .plan
        .objects
        .iter()
        .find(|o| o.name == "settings")
        .unwrap();
    assert_eq!(o.action, ObjectAction::Update);
    assert!(o.reverts_drift, "{o:?}");
    assert!(a.conn.changed.contains_key(&settings));

    // While watching: a hotfix made with kubectl set image.
    kubectl(s(&["set", "image", "deploy/web", "c=nginx:1.14-hotfix"])).await;
    let web = kapply::objref::ObjectRef::new("apps/v1", "Deployment", Some("default"), "web");
    until(
        &mut a,
        &mut rx,
        |m| matches!(m, Msg::Live(_, LiveEvent::Changed { object, .. }) if *object == web),
    )
    .await;
    assert!(a.conn.changed.contains_key(&web));
    select(&mut a, "web");
    let o = a.selected().unwrap();
    let image = o
        .fields
        .iter()
        .find(|f| f.path == "spec.template.spec.containers[name=c].image")
        .unwrap();
    assert_eq!(image.live, Some(json!("nginx:1.14-hotfix")));
    assert_eq!(image.config, Some(json!("nginx:1.16")));
    // Deleted with kubectl: to be created again.
    kubectl(s(&["delete", "configmap", "settings"])).await;
    until(&mut a, &mut rx, |m| {
        matches!(m, Msg::Live(_, LiveEvent::Changed { object, live: None }) if *object == settings)
    })
    .await;
    let o = a
        .list
        .plan
        .objects
        .iter()
        .find(|o| o.name == "settings")
        .unwrap();
    assert_eq!(o.action, ObjectAction::Create);
    watch.abort();
}

/// A change to another object than the selected one keeps the selected
/// one's cached views (a burst elsewhere does not rebuild them); a change
/// to the selected one makes them again.
#[test]
fn only_a_change_to_the_selected_object_makes_its_views_again() {
    let mut a = app(100, 30);
    select(&mut a, "app-config");
    let before = a.list.plan_gen;
    a.update(Msg::Live(
        1,
        LiveEvent::Changed {
            object: id("Deployment default/nginx-deployment"),
            live: Some(hotfixed()),
        },
    ));
    assert_eq!(a.list.plan_gen, before);
    assert_eq!(image_live(&a), "nginx:1.14-hotfix");
    select(&mut a, "nginx-deployment");
    let mut again = hotfixed();
    again["metadata"]["resourceVersion"] = json!("78");
    again["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.14-hotfix2");
    a.update(Msg::Live(
        1,
        LiveEvent::Changed {
            object: id("Deployment default/nginx-deployment"),
            live: Some(again),
        },
    ));
    assert!(a.list.plan_gen > before);
    assert_eq!(image_live(&a), "nginx:1.14-hotfix2");
}
