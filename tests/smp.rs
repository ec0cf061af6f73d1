//! merge::apply against the real kubectl.
//!
//! The oracle is `kubectl patch --local -f LIVE.json --type strategic|merge
//! -p PATCH -o json`, which runs apimachinery's own patch code offline.
//! Cases live in tests/fixtures/smp/*.json (`kind`, `live`, `patch`;
//! written by scripts/gen-smp-fixtures.py); no expected results are stored.
//!
//! Without kubectl these tests skip, unless `KAPPLY_CI` is set: then they fail.

#[path = "common/kubectl.rs"]
mod kubectl;

use kapply::merge::apply::{apply_merge, apply_strategic};
use kapply::patchmeta::PatchMeta;
use proptest::prelude::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// kubectl's result: `Ok(object)` or `Err(stderr)`.
fn kubectl_patch(bin: &str, live: &Value, patch: &Value, kind: &str) -> Result<Value, String> {
    let args = [
        "--show-managed-fields",
        "--type",
        kind,
        "-p",
        &patch.to_string(),
    ];
    kubectl::patch_object(bin, live, &args)
}

/// kubectl prints directive keys that were copied whole from the patch into
/// new list elements; the API server drops them when it decodes the object,
/// and apply_strategic removes them. Compare without them.
fn without_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| {
                    !(*k == "$patch"
                        || *k == "$retainKeys"
                        || k.starts_with("$setElementOrder/")
                        || k.starts_with("$deleteFromPrimitiveList/"))
                })
                .map(|(k, v)| (k.clone(), without_directives(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_directives).collect()),
        other => other.clone(),
    }
}

/// Go prints a float64 with an integral value without the fraction (80.0
/// as 80); compare numbers by value, not by spelling.
fn normalize_numbers(v: &Value) -> Value {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e15 => json!(f as i64),
            _ => v.clone(),
        },
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), normalize_numbers(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalize_numbers).collect()),
        other => other.clone(),
    }
}

fn ours(live: &Value, patch: &Value, kind: &str) -> Result<Value, String> {
    match kind {
        "merge" => Ok(apply_merge(live, patch)),
        "strategic" => {
            let api_version = live["apiVersion"].as_str().unwrap_or_default();
            let k = live["kind"].as_str().unwrap_or_default();
            let schema = PatchMeta::builtin().root(api_version, k);
            apply_strategic(live, patch, schema).map_err(|e| e.to_string())
        }
        other => panic!("unknown patch kind {other}"),
    }
}

/// The proptest configuration of the tests that run kubectl once per case:
/// KAPPLY_SMP_CASES raises the number of cases for a longer search.
fn kubectl_cases() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("KAPPLY_SMP_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(24),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Compare one case; returns a description of the mismatch, if any.
fn check(bin: &str, name: &str, live: &Value, patch: &Value, kind: &str) -> Option<String> {
    let expected = kubectl_patch(bin, live, patch, kind);
    let got = ours(live, patch, kind);
    match (expected, got) {
        // "$patch" and friends mean nothing to a JSON merge patch.
        (Ok(e), Ok(g)) if kind == "merge" && e == normalize_numbers(&g) => None,
        (Ok(e), Ok(g))
            if kind == "strategic" && without_directives(&e) == normalize_numbers(&g) =>
        {
            None
        }
        (Err(_), Err(_)) => None,
        (e, g) => Some(format!(
            "{name}: kubectl and apply differ\n  live:    {live}\n  patch:   {patch}\n  kubectl: {}\n  ours:    {}",
            e.map_or_else(|s| format!("error: {}", s.trim()), |v| v.to_string()),
            g.map_or_else(|s| format!("error: {s}"), |v| v.to_string()),
        )),
    }
}

fn fixtures() -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smp");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let case: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
            (name, case)
        })
        .collect()
}

#[test]
fn corpus_matches_kubectl() {
    let Some(bin) = kubectl::kubectl() else {
        return;
    };
    let cases = fixtures();
    assert!(cases.len() >= 20, "corpus has {} cases", cases.len());
    // kubectl runs are independent: a few threads keep this quick.
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .chunks(cases.len().div_ceil(4))
            .map(|chunk| {
                let bin = &bin;
                s.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|(name, c)| {
                            let kind = c["kind"].as_str().unwrap();
                            check(bin, name, &c["live"], &c["patch"], kind)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The corpus really exercises errors and successes (guards against a
/// corpus where kubectl fails on everything).
#[test]
fn corpus_has_successes_and_errors() {
    let cases = fixtures();
    let mut ok = 0;
    let mut err = 0;
    for (_, c) in &cases {
        match ours(&c["live"], &c["patch"], c["kind"].as_str().unwrap()) {
            Ok(v) => {
                ok += 1;
                assert_eq!(v["kind"], c["live"]["kind"]);
            }
            Err(_) => err += 1,
        }
    }
    assert!(ok >= 18 && err >= 3, "ok {ok}, errors {err}");
}

// ---------------------------------------------------------------------------
// Random patches on a Deployment.

fn live_deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "demo",
                     "labels": {"app": "web", "tier": "front"},
                     "finalizers": ["f/a", "f/x"]},
        "spec": {
            "minReadySeconds": 5, "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "nginx", "image": "nginx:1", "args": ["a", "b"],
                         "ports": [{"containerPort": 80, "protocol": "TCP"}],
                         "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                        {"name": "sidecar", "image": "envoy:1"}
                    ],
                    "tolerations": [{"key": "k", "operator": "Exists"}]
                }
            }
        }
    })
}

/// One optional scalar edit: absent, null, or a value.
fn edit<T: std::fmt::Debug + Clone + 'static>(
    values: impl Strategy<Value = T> + 'static,
) -> impl Strategy<Value = Option<Option<T>>> {
    prop_oneof![
        2 => Just(None),
        1 => Just(Some(None)),
        2 => values.prop_map(|v| Some(Some(v))),
    ]
}

fn put<T: Into<Value>>(obj: &mut serde_json::Map<String, Value>, key: &str, e: Option<Option<T>>) {
    match e {
        None => {}
        Some(None) => {
            obj.insert(key.to_string(), Value::Null);
        }
        Some(Some(v)) => {
            obj.insert(key.to_string(), v.into());
        }
    }
}

#[derive(Debug, Clone)]
enum ContainerEdit {
    Untouched,
    Delete,
    Image(String),
    ImageAndPort(String, u16),
}

#[derive(Debug, Clone)]
struct RandomPatch {
    replicas: Option<Option<u8>>,
    min_ready: Option<Option<u8>>,
    labels: Vec<(String, Option<Option<String>>)>,
    strategy: u8,
    fin_add: Vec<String>,
    fin_del: Vec<String>,
    fin_order: bool,
    containers: Vec<(String, ContainerEdit)>,
    container_order: Option<Vec<String>>,
    env: Vec<(String, Option<Option<String>>)>,
    args: Option<Option<Vec<String>>>,
    tolerations: Option<Option<u8>>,
}

fn random_patch() -> impl Strategy<Value = RandomPatch> {
    let names = || prop::sample::select(vec!["x".to_string(), "y".to_string()]);
    let labels = prop::collection::vec(
        (
            prop::sample::select(vec!["tier".to_string(), "team".into(), "new".into()]),
            edit(names()),
        ),
        0..3,
    );
    let fin = || prop::sample::subsequence(vec!["f/a", "f/b", "f/c", "f/x"], 0..3);
    let container_edit = prop_oneof![
        Just(ContainerEdit::Untouched),
        Just(ContainerEdit::Delete),
        names().prop_map(ContainerEdit::Image),
        (names(), prop::sample::select(vec![80u16, 81]))
            .prop_map(|(i, p)| ContainerEdit::ImageAndPort(i, p)),
    ];
    let containers = prop::collection::vec(
        (
            prop::sample::select(vec!["nginx".to_string(), "sidecar".into(), "extra".into()]),
            container_edit,
        ),
        0..3,
    );
    let order = prop::option::of(
        prop::sample::subsequence(vec!["nginx", "sidecar", "extra"], 0..=3)
            .prop_shuffle()
            .prop_map(|v| v.into_iter().map(String::from).collect::<Vec<_>>()),
    );
    let env = prop::collection::vec(
        (
            prop::sample::select(vec!["A".to_string(), "B".into(), "C".into()]),
            edit(names()),
        ),
        0..3,
    );
    (
        (edit(0u8..4), edit(0u8..10), labels, 0u8..4),
        (fin(), fin(), any::<bool>()),
        (containers, order, env),
        (edit(prop::collection::vec(names(), 0..3)), edit(0u8..3)),
    )
        .prop_map(
            |(
                (replicas, min_ready, labels, strategy),
                (fin_add, fin_del, fin_order),
                (containers, container_order, env),
                (args, tolerations),
            )| RandomPatch {
                replicas,
                min_ready,
                labels,
                strategy,
                fin_add: fin_add.into_iter().map(String::from).collect(),
                fin_del: fin_del.into_iter().map(String::from).collect(),
                fin_order,
                containers,
                container_order,
                env,
                args,
                tolerations,
            },
        )
}

fn build(p: &RandomPatch) -> Value {
    let mut patch = serde_json::Map::new();
    let mut metadata = serde_json::Map::new();
    let mut spec = serde_json::Map::new();
    put(&mut spec, "replicas", p.replicas);
    put(&mut spec, "minReadySeconds", p.min_ready);
    if !p.labels.is_empty() {
        let mut labels = serde_json::Map::new();
        for (k, e) in &p.labels {
            put(&mut labels, k, e.clone());
        }
        metadata.insert("labels".into(), Value::Object(labels));
    }
    match p.strategy {
        1 => {
            spec.insert(
                "strategy".into(),
                json!({"$retainKeys": ["type"], "type": "Recreate"}),
            );
        }
        2 => {
            spec.insert("strategy".into(), json!({"type": "Recreate"}));
        }
        3 => {
            spec.insert("strategy".into(), json!({"rollingUpdate": {"maxSurge": 1}}));
        }
        _ => {}
    }
    if !p.fin_add.is_empty() {
        metadata.insert("finalizers".into(), json!(p.fin_add));
        if p.fin_order {
            let mut order = vec![json!("f/a")];
            order.extend(p.fin_add.iter().filter(|f| *f != "f/a").map(|f| json!(f)));
            metadata.insert("$setElementOrder/finalizers".into(), Value::Array(order));
        }
    }
    // Adding and deleting the same value in one patch depends on Go's random
    // map order in kubectl (and never comes out of a three-way diff).
    let fin_del: Vec<&String> = p
        .fin_del
        .iter()
        .filter(|f| !p.fin_add.contains(f))
        .collect();
    if !fin_del.is_empty() {
        metadata.insert("$deleteFromPrimitiveList/finalizers".into(), json!(fin_del));
    }

    let mut pod = serde_json::Map::new();
    let mut containers = Vec::new();
    for (name, e) in &p.containers {
        let mut c = serde_json::Map::new();
        c.insert("name".into(), json!(name));
        match e {
            ContainerEdit::Untouched => {}
            ContainerEdit::Delete => {
                c.insert("$patch".into(), json!("delete"));
            }
            ContainerEdit::Image(i) => {
                c.insert("image".into(), json!(format!("{i}:2")));
            }
            ContainerEdit::ImageAndPort(i, port) => {
                c.insert("image".into(), json!(format!("{i}:2")));
                c.insert("ports".into(), json!([{"containerPort": port}]));
            }
        }
        if name == "nginx" && !matches!(e, ContainerEdit::Delete) {
            if !p.env.is_empty() {
                let env: Vec<Value> = p
                    .env
                    .iter()
                    .map(|(n, e)| match e {
                        None => json!({"name": n}),
                        Some(None) => json!({"name": n, "$patch": "delete"}),
                        Some(Some(v)) => json!({"name": n, "value": v}),
                    })
                    .collect();
                c.insert("env".into(), Value::Array(env));
            }
            put(&mut c, "args", p.args.clone());
        }
        containers.push(Value::Object(c));
    }
    if !containers.is_empty() {
        pod.insert("containers".into(), Value::Array(containers));
    }
    if let Some(order) = &p.container_order {
        let order: Vec<Value> = order.iter().map(|n| json!({"name": n})).collect();
        pod.insert("$setElementOrder/containers".into(), Value::Array(order));
    }
    match p.tolerations {
        None => {}
        Some(None) => {
            pod.insert("tolerations".into(), Value::Null);
        }
        Some(Some(n)) => {
            let list: Vec<Value> = (0..n)
                .map(|i| json!({"key": format!("t{i}"), "operator": "Exists"}))
                .collect();
            pod.insert("tolerations".into(), Value::Array(list));
        }
    }
    if !pod.is_empty() {
        spec.insert("template".into(), json!({"spec": Value::Object(pod)}));
    }
    if !metadata.is_empty() {
        patch.insert("metadata".into(), Value::Object(metadata));
    }
    if !spec.is_empty() {
        patch.insert("spec".into(), Value::Object(spec));
    }
    Value::Object(patch)
}

#[test]
fn random_deployment_patches_match_kubectl() {
    let Some(bin) = kubectl::kubectl() else {
        return;
    };
    let live = live_deployment();
    let config = kubectl_cases();
    proptest!(config, |(p in random_patch())| {
        let patch = build(&p);
        if let Some(mismatch) = check(&bin, "random", &live, &patch, "strategic") {
            prop_assert!(false, "{}", mismatch);
        }
    });
}

// ---------------------------------------------------------------------------
// The demo story.

/// kubectl reads the demo manifests to the same JSON as kapply's YAML
/// parsing (YAML 1.1 booleans, octal and the like would show here).
#[test]
fn demo_manifests_read_as_kubectl_reads_them() {
    let Some(bin) = kubectl::kubectl() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    kapply::demo::write_demo_manifests(dir.path()).unwrap();
    for (name, text) in kapply::demo::DEMO_FILES {
        let ours: Value = kapply::yaml::read_value(text).unwrap();
        let theirs =
            kubectl::reads(&bin, &dir.path().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(ours, theirs, "{name}");
    }
}

/// The reference walk-through on the seeded Deployment: the patch kubectl
/// apply sends for the new manifest, applied by kubectl and by kapply.
#[test]
fn demo_deployment_walkthrough() {
    let api = kapply::server::ApiServer::new();
    kapply::demo::seed_api(&api).unwrap();
    let live = api
        .store()
        .get("apps/v1", "Deployment", Some("demo"), "nginx-deployment")
        .unwrap();
    let patch = json!({
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}\n"}},
        "spec": {"minReadySeconds": null, "template": {"spec": {
            "$setElementOrder/containers": [{"name": "nginx"}],
            "containers": [{"image": "nginx:1.16.1", "name": "nginx"}]}}}
    });
    let schema = PatchMeta::builtin().root("apps/v1", "Deployment");
    let out = apply_strategic(&live, &patch, schema).unwrap();
    assert_eq!(out["spec"]["replicas"], 2, "kept: written by kubectl scale");
    assert!(out["spec"].get("minReadySeconds").is_none(), "cleared");
    let c = &out["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"], "nginx:1.16.1");
    assert_eq!(c["imagePullPolicy"], "IfNotPresent", "server default kept");
    if let Some(bin) = kubectl::kubectl() {
        assert_eq!(
            check(&bin, "demo-deployment", &live, &patch, "strategic"),
            None
        );
    }
}

// ---------------------------------------------------------------------------
// Arbitrary JSON: odd shapes, directives in odd places, wrong types.

fn arb_json(keys: Vec<&'static str>) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (0i64..4).prop_map(|n| json!(n)),
        prop::sample::select(vec!["a", "b", "delete", "replace", "merge", "nginx"])
            .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 24, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(prop::sample::select(keys.clone()), inner, 0..4).prop_map(
                |m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            ),
        ]
    })
}

const SMP_KEYS: &[&str] = &[
    "$patch",
    "$retainKeys",
    "$setElementOrder/containers",
    "$setElementOrder/finalizers",
    "$deleteFromPrimitiveList/finalizers",
    "$deleteFromPrimitiveList/args",
    "containers",
    "finalizers",
    "name",
    "image",
    "args",
    "ports",
    "containerPort",
    "labels",
    "env",
    "value",
];

/// A Deployment-shaped object or patch whose `spec.template.spec` and
/// `metadata` are arbitrary.
fn arb_deployment_part() -> impl Strategy<Value = Value> {
    (arb_json(SMP_KEYS.to_vec()), arb_json(SMP_KEYS.to_vec()))
        .prop_map(|(pod, md)| json!({"metadata": md, "spec": {"template": {"spec": pod}}}))
}

/// Whether some map has both `k` and `$deleteFromPrimitiveList/k`: Go
/// processes them in random map order, so kubectl's answer is not fixed.
fn order_dependent(v: &Value) -> bool {
    match v {
        Value::Object(m) => {
            m.keys().any(|k| {
                k.strip_prefix("$deleteFromPrimitiveList/")
                    .is_some_and(|base| m.contains_key(base))
            }) || m.values().any(order_dependent)
        }
        Value::Array(a) => a.iter().any(order_dependent),
        _ => false,
    }
}

#[test]
fn arbitrary_patches_never_panic() {
    let schema = PatchMeta::builtin().root("apps/v1", "Deployment");
    let config = ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(live in arb_deployment_part(), patch in arb_deployment_part())| {
        let mut live = live;
        live["apiVersion"] = json!("apps/v1");
        live["kind"] = json!("Deployment");
        // Errors are fine; panics and directives in the result are not.
        if let Ok(out) = apply_strategic(&live, &patch, schema) {
            prop_assert_eq!(without_directives(&out), out);
        }
        let _ = apply_merge(&live, &patch);
    });
}

#[test]
fn arbitrary_patches_match_kubectl() {
    let Some(bin) = kubectl::kubectl() else {
        return;
    };
    let config = kubectl_cases();
    proptest!(config, |(live in arb_deployment_part(), patch in arb_deployment_part(), merge in any::<bool>())| {
        let mut live = live;
        live["apiVersion"] = json!("apps/v1");
        live["kind"] = json!("Deployment");
        live["metadata"] = json!({"name": "x"});
        let kind = if merge { "merge" } else { "strategic" };
        prop_assume!(merge || !order_dependent(&patch));
        // A live object kubectl cannot decode into its Go type is one no API
        // server would store: outside the domain.
        if let Err(e) = kubectl_patch(&bin, &live, &json!({}), "merge") {
            prop_assume!(!e.contains("unable to decode"), "{}", e);
        }
        if let Some(mismatch) = check(&bin, "arbitrary", &live, &patch, kind) {
            prop_assert!(false, "{}", mismatch);
        }
    });
}
