//! Review in pull requests and CI: `kapply diff -o markdown` (snapshots of
//! the demo and of a drift + hazard case, parts under `--max-bytes`),
//! repeated changes folded (report, terminal), `--exit-code=detailed`.

#[path = "common/out.rs"]
mod out;
#[path = "common/server.rs"]
mod server;
#[path = "tui_fixture/mod.rs"]
mod tui_fixture;

use kapply::fieldpath::FieldPath;
use kapply::manifest::{Manifest, Source};
use kapply::merge::{LAST_APPLIED, last_applied_annotation};
use kapply::objref::{ObjectRef, split_api_version};
use kapply::plan::report::{MIN_MAX_BYTES, PART_MARK, markdown};
use kapply::plan::{
    ObjectPlan, Plan, PlanOptions, fold, plan_object, prune_candidate, render_diff,
    render_diff_terminal,
};
use serde_json::{Value, json};
use std::path::Path;

fn manifest(object: Value, file: &str) -> Manifest {
    let api = object["apiVersion"].as_str().unwrap().to_string();
    Manifest::new(
        ObjectRef::from_object(&object).unwrap(),
        split_api_version(&api).1.to_string(),
        object,
        Source {
            file: file.into(),
            line: 1,
        },
    )
}

fn plan_against(config: Value, live: Option<&Value>) -> ObjectPlan {
    let file = format!("apps/{}.yaml", config["metadata"]["name"].as_str().unwrap());
    plan_object(&manifest(config, &file), live, &PlanOptions::default())
}

fn annotated(mut live: Value, last_applied: &Value) -> Value {
    live["metadata"]["annotations"][LAST_APPLIED] = json!(last_applied_annotation(last_applied));
    live
}

fn managed(manager: &str, time: &str, fields: Value) -> Value {
    json!({"manager": manager, "operation": "Update", "apiVersion": "apps/v1",
        "time": time, "fieldsType": "FieldsV1", "fieldsV1": fields})
}

fn deployment(ns: &str, name: &str, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "web", "image": image}]}}
        }
    })
}

/// A Deployment whose manifest moves from `from` to `to`.
fn bumped(ns: &str, name: &str, from: &str, to: &str) -> ObjectPlan {
    let la = deployment(ns, name, from);
    let live = annotated(la.clone(), &la);
    plan_against(deployment(ns, name, to), Some(&live))
}

fn configmap(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "shop"}, "data": data})
}

/// Every kind of row the report shows: drift reverts with hazards (a
/// hotfix rolled back, an autoscaler fought), a multi-line value, a
/// Secret, a create, a prune candidate, an unchanged object and one image
/// bump repeated in three Deployments.
fn drift_and_hazards() -> Plan {
    let mut objects = Vec::new();

    // A hotfix made with `kubectl set image`, replicas set by an HPA.
    let la = deployment("shop", "checkout", "shop/checkout:2.3.0");
    let mut live = annotated(la.clone(), &la);
    live["spec"]["template"]["spec"]["containers"][0]["image"] =
        json!("shop/checkout:2.3.1-hotfix");
    live["spec"]["replicas"] = json!(7);
    live["metadata"]["managedFields"] = json!([
        managed(
            "kubectl-set",
            "2026-11-20T10:04:00Z",
            json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {
                "f:image": {}}}}}}})
        ),
        managed(
            "horizontal-pod-autoscaler",
            "2026-11-20T11:30:00Z",
            json!({"f:spec": {"f:replicas": {}}})
        ),
    ]);
    objects.push(plan_against(la, Some(&live)));

    // nginx.conf edited in the manifest: a multi-line value.
    let old = "server {\n  listen 80;\n  location / {\n    proxy_pass http://checkout;\n  }\n}\n";
    let new = "server {\n  listen 8080;\n  location / {\n    proxy_pass http://checkout;\n    proxy_read_timeout 30s;\n  }\n}\n";
    let la = configmap("proxy", json!({"nginx.conf": old, "mode": "a|b"}));
    let live = annotated(la.clone(), &la);
    objects.push(plan_against(
        configmap("proxy", json!({"nginx.conf": new, "mode": "a|c"})),
        Some(&live),
    ));

    // A Secret's value changes: never shown.
    let secret = |v: &str| {
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "db", "namespace": "shop"}, "data": {"password": v}})
    };
    let la = secret("b2xkLXNlY3JldA==");
    let live = annotated(la.clone(), &la);
    objects.push(plan_against(secret("bmV3LXNlY3JldA=="), Some(&live)));

    // Created, pruned, unchanged.
    objects.push(plan_against(
        configmap("flags", json!({"beta": "true"})),
        None,
    ));
    let gone = annotated(
        configmap("old-flags", json!({"x": "1"})),
        &configmap("old-flags", json!({"x": "1"})),
    );
    objects.push(prune_candidate(
        &gone,
        "not in the manifests; label app=shop".into(),
    ));
    let same = configmap("same", json!({"k": "v"}));
    objects.push(plan_against(
        same.clone(),
        Some(&annotated(same.clone(), &same)),
    ));

    // The same image bump in three Deployments.
    for name in ["cart", "search", "payments"] {
        objects.push(bumped("shop", name, "shop/base:1.25", "shop/base:1.26"));
    }
    Plan {
        objects,
        prune_skipped: None,
    }
}

#[test]
fn markdown_of_drift_and_hazards() {
    let plan = drift_and_hazards();
    let parts = markdown(&plan, 65_000);
    assert_eq!(parts.len(), 1);
    let md = &parts[0];
    // Deterministic: the same plan gives the same bytes.
    assert_eq!(&markdown(&drift_and_hazards(), 65_000)[0], md);
    assert!(md.starts_with("<!-- kapply-diff part 1 of 1 -->\n## kapply diff\n\n"));
    assert!(
        md.contains(
            "**1 to create, 6 to update, 1 to prune** · 1 update reverts drift · \
             1 object carries hazards ⚠ · 1 unchanged (not listed)"
        ),
        "{md}"
    );
    // Secret values never appear (neither base64 nor decoded).
    for secret in [
        "b2xkLXNlY3JldA==",
        "bmV3LXNlY3JldA==",
        "old-secret",
        "new-secret",
    ] {
        assert!(!md.contains(secret), "{secret} in {md}");
    }
    // The hazards in words, under the object.
    assert!(md.contains("reverts a hotfix"), "{md}");
    assert!(md.contains("an autoscaler (horizontal-pod-autoscaler) owns spec.replicas"));
    // The multi-line value as a diff block.
    assert!(md.contains("```diff\n@@ "), "{md}");
    assert!(md.contains("\n-  listen 80;\n+  listen 8080;\n"), "{md}");
    // A `|` in a value does not break the table.
    assert!(md.contains(r#"`"a\|b"` → `"a\|c"`"#), "{md}");
    // The unchanged object is counted, not listed.
    assert!(!md.contains("shop/same"), "{md}");
    // The repeated image bump: once, carried by three Deployments.
    assert!(md.contains(
        "<code>spec.template.spec.containers[name=web].image</code> \
         <code>&quot;shop/base:1.25&quot;</code> → <code>&quot;shop/base:1.26&quot;</code> \
         in 3 Deployments"
    ));
    insta::assert_snapshot!("markdown_drift_hazard", md);
    // The README's example report is this one, as the build renders it.
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/report.md");
    if std::env::var_os("KAPPLY_WRITE_EXAMPLE").is_some() {
        std::fs::write(&example, md).unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(&example).unwrap(),
        *md,
        "examples/report.md is out of date: run with KAPPLY_WRITE_EXAMPLE=1"
    );
}

/// `kapply diff -o markdown` on the demo cluster, through the binary. It
/// reads only: every request it sends is a GET (what `--exit-code` and the
/// CI jobs in the README rely on for read-only credentials).
#[test]
fn markdown_of_the_demo() {
    let c = server::Cluster::start();
    kapply::demo::seed_api(c.server.api()).unwrap();
    kapply::demo::write_demo_manifests(&c.path("manifests")).unwrap();
    c.server.clear_requests();
    let kubeconfig = c.kubeconfig.display().to_string();
    let run = |args: &[&str]| {
        out::run(
            std::process::Command::new(env!("CARGO_BIN_EXE_kapply"))
                .current_dir(c.dir.path())
                .args(["diff", "--kubeconfig", &kubeconfig, "-f", "manifests"])
                .args(args),
        )
    };
    let md = run(&["-o", "markdown"]);
    let detailed = run(&["-o", "markdown", "--exit-code=detailed"]);
    assert_eq!(md.code, Some(1), "{md:?}");
    // The demo's ConfigMap edited with kubectl edit: a drift revert.
    assert_eq!(detailed.code, Some(3), "{detailed:?}");
    assert_eq!(md.stdout, detailed.stdout);
    let requests = c.server.requests();
    assert!(!requests.is_empty());
    let not_get: Vec<_> = requests
        .iter()
        .filter(|r| r.method != "GET")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(not_get.is_empty(), "{not_get:?}");
    insta::assert_snapshot!("markdown_demo", mask_times(&md.stdout));
}

/// RFC 3339 times (when the demo's history was written) as `<time>`.
fn mask_times(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("20") {
        let cand = &rest[i..];
        let is_time = cand.len() >= 20
            && cand.as_bytes()[4] == b'-'
            && cand.as_bytes()[10] == b'T'
            && cand.as_bytes()[19] == b'Z';
        out.push_str(&rest[..i]);
        if is_time {
            out.push_str("<time>");
            rest = &cand[20..];
        } else {
            out.push_str("20");
            rest = &cand[2..];
        }
    }
    out.push_str(rest);
    out
}

/// 2,000 changed objects, one of them larger than a part: every part fits
/// `--max-bytes`, stands alone (mark, title, summary, headings), holds
/// whole objects and whole code blocks; every object is in the table once
/// and has its details once.
#[test]
fn a_large_report_is_split_into_parts_that_stand_alone() {
    let mut objects: Vec<ObjectPlan> = (0..2000)
        .map(|i| {
            bumped(
                &format!("ns{}", i % 20),
                &format!("app-{i:04}"),
                &format!("registry.example.com/app-{i}:1.0"),
                &format!("registry.example.com/app-{i}:1.1"),
            )
        })
        .collect();
    // One ConfigMap whose change alone is larger than a part, with a
    // multi-line value (a code block that must not be cut).
    let keys = |v: &str| {
        let mut m = serde_json::Map::new();
        for k in 0..3000 {
            m.insert(format!("key-{k:04}"), json!(format!("{v}-{k}")));
        }
        m.insert(
            "script".into(),
            json!(format!("#!/bin/sh\necho {v}\n```\nexit 0\n")),
        );
        Value::Object(m)
    };
    let la = configmap("huge", keys("old"));
    objects.push(plan_against(
        configmap("huge", keys("new")),
        Some(&annotated(la.clone(), &la)),
    ));
    let plan = Plan {
        objects,
        prune_skipped: None,
    };
    let max = 65_000;
    let parts = markdown(&plan, max);
    assert!(parts.len() > 3, "{} parts", parts.len());
    let n = parts.len();
    let mut rows = std::collections::HashMap::<String, usize>::new();
    let mut details = std::collections::HashMap::<String, usize>::new();
    for (k, part) in parts.iter().enumerate() {
        assert!(part.len() <= max, "part {} has {} bytes", k + 1, part.len());
        assert!(
            part.starts_with(&format!(
                "{PART_MARK}{} of {n} -->\n## kapply diff: part {} of {n}\n\n**0 to create, 2001 to update",
                k + 1,
                k + 1
            )),
            "{}",
            &part[..200]
        );
        assert_eq!(
            part.matches("<details>").count(),
            part.matches("</details>").count(),
            "part {}",
            k + 1
        );
        // Code blocks: every fence opened is closed in the same part.
        let fences = part
            .lines()
            .filter(|l| l.starts_with("```") || l.starts_with("````"))
            .count();
        assert_eq!(fences % 2, 0, "part {}", k + 1);
        let mut in_table = false;
        for line in part.lines() {
            if line.starts_with("| | Kind |") {
                in_table = true;
            } else if in_table && line.starts_with("| ~ |") {
                let name = line.split('`').nth(1).unwrap().to_string();
                *rows.entry(name).or_default() += 1;
            } else if !line.starts_with('|') {
                in_table = false;
            }
            // A part that starts in the table gives its header again.
            if let Some(rest) = line.strip_prefix("<details><summary>~ <code>") {
                let name = rest.split("</code>").next().unwrap().to_string();
                *details.entry(name).or_default() += 1;
            }
        }
    }
    assert_eq!(rows.len(), 2001);
    assert!(rows.values().all(|&c| c == 1));
    assert_eq!(details.len(), 2001);
    assert!(details.values().all(|&c| c == 1));
    // The huge object: shortened with a note, its hazard-free rows cut.
    let huge = parts
        .iter()
        .find(|p| p.contains("<code>ConfigMap shop/huge</code>"))
        .unwrap();
    assert!(
        huge.contains("more changed fields not shown: this object is larger than a report part"),
        "{huge}"
    );
    // Every part at the smallest size accepted still fits.
    let small = markdown(&plan, MIN_MAX_BYTES);
    assert!(small.iter().all(|p| p.len() <= MIN_MAX_BYTES));
}

/// The same image bump in 100 Deployments is one change, shown once, in
/// the report and on the terminal; the piped layout (scripts) is as it
/// was, one line per object.
#[test]
fn a_change_repeated_in_100_objects_is_shown_once() {
    let mut objects: Vec<ObjectPlan> = (0..100)
        .map(|i| {
            bumped(
                &format!("team-{}", i % 4),
                &format!("web-{i:03}"),
                "nginx:1.25",
                "nginx:1.26",
            )
        })
        .collect();
    // Ten of them also change their replicas, each to its own count.
    for (i, o) in objects.iter_mut().enumerate().take(10) {
        let mut config = deployment(&o.namespace.clone().unwrap(), &o.name.clone(), "nginx:1.26");
        config["spec"]["replicas"] = json!(3 + i);
        let la = deployment(&o.namespace.clone().unwrap(), &o.name.clone(), "nginx:1.25");
        *o = plan_against(config, Some(&annotated(la.clone(), &la)));
    }
    let plan = Plan {
        objects,
        prune_skipped: None,
    };
    let image = "spec.template.spec.containers[name=web].image";
    let changes = fold::repeated_changes(&plan.objects);
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].row.path, image);
    assert_eq!(changes[0].objects, (0..100).collect::<Vec<_>>());
    assert_eq!(changes[0].carried_by(&plan.objects), "100 Deployments");

    let md = markdown(&plan, 65_000).concat();
    assert_eq!(md.matches("in 100 Deployments").count(), 1, "{md}");
    // The values once (in the change's summary), not once per object.
    assert_eq!(md.matches("&quot;nginx:1.26&quot;").count(), 1, "{md}");
    assert!(!md.contains("`\"nginx:1.26\"`"), "{md}");
    // The ten objects with their own change keep details naming the fold.
    assert_eq!(
        md.matches("repeated change #1 (under Repeated changes)")
            .count(),
        10,
        "{md}"
    );
    assert_eq!(md.matches("<details><summary>~ ").count(), 10);
    // Every object is in the list of the change, once.
    for i in 0..100 {
        assert_eq!(
            md.matches(&format!("- `Deployment team-{}/web-{i:03}`", i % 4))
                .count(),
            1
        );
    }

    let tty = render_diff_terminal(&plan, false, false);
    assert_eq!(tty.matches(&format!("≡ #1 {image}")).count(), 1, "{tty}");
    assert!(
        tty.contains("\"nginx:1.25\" → \"nginx:1.26\"  in 100 Deployments\n"),
        "{tty}"
    );
    assert_eq!(tty.matches("repeated change #1 (below)").count(), 10);
    // Objects whose only change is the repeated one are listed under it.
    assert!(!tty.contains("~ Deployment team-3/web-099"), "{tty}");
    assert!(tty.contains("web-099"), "{tty}");
    assert!(tty.contains("~ Deployment team-0/web-000  update"), "{tty}");

    let piped = render_diff(&plan, false);
    assert_eq!(piped.matches(image).count(), 100);
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The exit codes, default and detailed, on one case each: nothing to
/// change, an intended change, a drift revert, a hazard, both, an error.
#[test]
fn exit_code_table() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut la = deployment("default", "web", "nginx:1.25");
    la["spec"]["template"]["spec"]["containers"][0]["env"] = json!([{"name": "A", "value": "1"}]);
    let in_sync = annotated(la.clone(), &la);
    // Drift: replicas scaled with kubectl scale (no autoscaler: no hazard).
    let mut scaled = in_sync.clone();
    scaled["spec"]["replicas"] = json!(5);
    scaled["metadata"]["managedFields"] = json!([managed(
        "kubectl",
        "2026-11-20T10:04:00Z",
        json!({"f:spec": {"f:replicas": {}}})
    )]);
    // A hazard without drift: env A twice in the manifest. The server
    // keeps live's A=1, so alone it changes nothing but the annotation
    // (kubectl diff: 0); with the image changed too it is a change.
    let mut dup_only = la.clone();
    dup_only["spec"]["template"]["spec"]["containers"][0]["env"] =
        json!([{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]);
    let mut dup = dup_only.clone();
    dup["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.26");
    // Drift and a hazard: a hotfix rolled back.
    let mut hotfix = in_sync.clone();
    hotfix["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.25-hotfix");
    hotfix["metadata"]["managedFields"] = json!([managed(
        "kubectl-set",
        "2026-11-20T10:04:00Z",
        json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {
            "f:image": {}}}}}}})
    )]);
    let mut changed = la.clone();
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.26");
    let cases: [(&str, &Value, &Value, i32, i32); 6] = [
        ("none", &la, &in_sync, 0, 0),
        ("intended", &changed, &in_sync, 1, 1),
        ("drift", &la, &scaled, 1, 3),
        ("hazard", &dup, &in_sync, 1, 4),
        ("hazard, annotation only", &dup_only, &in_sync, 0, 4),
        ("drift+hazard", &la, &hotfix, 1, 4),
    ];
    for (name, config, live, default, detailed) in cases {
        let case = d.join(name);
        write(&case, "cfg/web.json", &config.to_string());
        write(&case, "live.json", &live.to_string());
        for (flags, want) in [
            (&[][..], default),
            (&["--exit-code=detailed"][..], detailed),
        ] {
            for output in [&[][..], &["-o", "markdown"][..]] {
                let o = out::run(
                    std::process::Command::new(env!("CARGO_BIN_EXE_kapply"))
                        .current_dir(&case)
                        .args(["diff", "-f", "cfg", "--live", "live.json"])
                        .args(flags)
                        .args(output),
                );
                assert_eq!(o.code, Some(want), "{name} {flags:?} {output:?}: {o:?}");
            }
        }
    }
    // An error is 2 in both modes, whatever else the plan holds.
    let case = d.join("error");
    write(&case, "cfg/web.json", &hotfix.to_string());
    write(&case, "cfg/bad.yaml", "kind: [unclosed\n");
    write(&case, "live.json", &hotfix.to_string());
    for flags in [&[][..], &["--exit-code=detailed"][..]] {
        let o = out::run(
            std::process::Command::new(env!("CARGO_BIN_EXE_kapply"))
                .current_dir(&case)
                .args(["diff", "-f", "cfg", "--live", "live.json"])
                .args(flags),
        );
        assert_eq!(o.code, Some(2), "{flags:?}: {o:?}");
    }
}

/// `--output-dir`: report-1.md, report-2.md, ..., the parts of an earlier,
/// longer report removed; on stdout the parts follow each other, each
/// starting with its mark.
#[test]
fn parts_are_written_to_the_output_dir() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut live = Vec::new();
    for i in 0..60 {
        let name = format!("app-{i:02}");
        let la = deployment("default", &name, &format!("img-{i}:1"));
        write(
            d,
            &format!("cfg/{name}.json"),
            &deployment("default", &name, &format!("img-{i}:2")).to_string(),
        );
        live.push(annotated(la.clone(), &la));
    }
    write(
        d,
        "live.json",
        &json!({"kind": "List", "apiVersion": "v1", "items": live}).to_string(),
    );
    write(d, "out/report-9.md", "stale");
    write(d, "out/notes.md", "kept");
    let run = |args: &[&str]| {
        out::run(
            std::process::Command::new(env!("CARGO_BIN_EXE_kapply"))
                .current_dir(d)
                .args(["diff", "-f", "cfg", "--live", "live.json", "-o", "markdown"])
                .args(["--max-bytes", "4000"])
                .args(args),
        )
    };
    let o = run(&["--output-dir", "out"]);
    assert_eq!(o.code, Some(1), "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    let stdout = run(&[]);
    let parts: Vec<String> = (1..)
        .map(|k| d.join(format!("out/report-{k}.md")))
        .take_while(|p| p.exists())
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(parts.len() >= 3, "{o:?}");
    assert!(parts.iter().all(|p| p.len() <= 4000));
    assert!(!d.join("out/report-9.md").exists());
    assert!(d.join("out/notes.md").exists());
    assert_eq!(stdout.stdout, parts.join("\n"));
    assert_eq!(stdout.stdout.matches(PART_MARK).count(), parts.len());
    // Without -o markdown there are no parts to write.
    let o = out::run(
        std::process::Command::new(env!("CARGO_BIN_EXE_kapply"))
            .current_dir(d)
            .args([
                "diff",
                "-f",
                "cfg",
                "--live",
                "live.json",
                "--output-dir",
                "out",
            ]),
    );
    assert_eq!(o.code, Some(2), "{o:?}");
    assert!(
        o.stderr
            .contains("--output-dir writes the parts of `-o markdown`"),
        "{o:?}"
    );
}

/// The TUI's changes view (`c`): each distinct change once with its count,
/// the most carried first; `Enter` on the image bump marks every object
/// carrying it, for that change alone (their other changes left out), so
/// `a` applies just the bump everywhere.
#[test]
fn the_tui_changes_view_marks_every_object_carrying_a_change() {
    use kapply::tui::app::{Confirmed, Effect, Msg, Popup};
    use kapply::tui::{App, Options};
    use tui_fixture::{code, key};
    let mut objects: Vec<ObjectPlan> = (0..5)
        .map(|i| bumped("shop", &format!("web-{i}"), "nginx:1.25", "nginx:1.26"))
        .collect();
    // web-0 also changes its replicas; api has a change of its own.
    let mut config = deployment("shop", "web-0", "nginx:1.26");
    config["spec"]["replicas"] = json!(4);
    let la = deployment("shop", "web-0", "nginx:1.25");
    objects[0] = plan_against(config, Some(&annotated(la.clone(), &la)));
    objects.push(bumped("shop", "api", "api:1", "api:2"));
    let mut app = App::new(Options::default());
    app.clock = || "12:34:56".to_string();
    app.update(Msg::Resize(120, 30));
    app.start();
    app.update(Msg::Loaded(Ok(Plan {
        objects,
        prune_skipped: None,
    })));
    app.update(key('c'));
    let Some(Popup::Changes { changes, pos }) = &app.popup else {
        panic!("no changes view: {:?}", app.popup);
    };
    assert_eq!(*pos, 0);
    let counts: Vec<(usize, &str)> = changes
        .iter()
        .map(|c| (c.objects.len(), c.path.as_str()))
        .collect();
    let image = "spec.template.spec.containers[name=web].image";
    assert_eq!(
        counts,
        [(5, image), (1, "spec.replicas"), (1, image)],
        "{changes:?}"
    );
    assert_eq!(changes[0].carried, "5 Deployments");
    assert_eq!(changes[0].values, "\"nginx:1.25\" → \"nginx:1.26\"");
    let screen = tui_fixture::text(&app);
    assert!(
        screen.contains("5 spec.template.spec.containers[name=web].image"),
        "{screen}"
    );
    assert!(
        screen.contains("\"nginx:1.25\" → \"nginx:1.26\"  in 5 Deployments [intended]"),
        "{screen}"
    );
    insta::assert_snapshot!("tui_changes_view", screen);
    // j moves, k comes back; Enter marks and closes.
    app.update(key('j'));
    assert!(matches!(app.popup, Some(Popup::Changes { pos: 1, .. })));
    app.update(key('k'));
    // A release of web-0's replicas row made before: left out now, so not
    // released either.
    let web0_id = tui_fixture::id("Deployment shop/web-0");
    app.sel
        .released
        .entry(web0_id.clone())
        .or_default()
        .insert("spec.replicas".into());
    assert!(
        app.update(code(crossterm::event::KeyCode::Enter))
            .is_empty()
    );
    assert!(app.popup.is_none());
    assert!(
        !app.sel.released.contains_key(&web0_id),
        "{:?}",
        app.sel.released
    );
    let marked: Vec<String> = app.sel.marked.iter().map(|m| m.to_string()).collect();
    assert_eq!(marked.len(), 5, "{marked:?}");
    assert!(!marked.iter().any(|m| m.contains("api")), "{marked:?}");
    // The apply sends the image row alone, web-0's replicas left out.
    let items = app.apply_items();
    assert_eq!(items.len(), 5);
    for item in &items {
        assert_eq!(
            item.accepted_fields
                .as_deref()
                .unwrap_or(&[FieldPath::from(image)]),
            [FieldPath::from(image)],
            "{}",
            item.plan.name
        );
    }
    let web0 = items.iter().find(|i| i.plan.name == "web-0").unwrap();
    assert_eq!(
        web0.accepted_fields.as_deref(),
        Some(&[FieldPath::from(image)][..])
    );
    // `a` opens the confirmation (nothing is sent without it).
    let effects = app.update(key('a'));
    assert!(
        effects.iter().all(|e| matches!(e, Effect::DryRun(_))),
        "{effects:?}"
    );
    assert!(matches!(app.confirming(), Some(Confirmed::Apply(_))));
}
