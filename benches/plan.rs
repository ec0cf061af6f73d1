//! Planning 2,000 objects in 20 namespaces against the embedded API server:
//! discovery, one LIST per (resource, namespace), three-way merge per object.
//! `cargo bench --bench plan`

// The binaries' allocator (src/main.rs), so the numbers are theirs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};
use kapply::cluster::{ApplyOptions, ClusterOptions, PruneOptions, Session};
use kapply::manifest::{LoadOptions, load};
use kapply::ops::ApplyItem;
use std::fmt::Write as _;
use std::time::Duration;

const NAMESPACES: usize = 20;
const PER_NAMESPACE: usize = 100;

/// 20 namespaces x (40 ConfigMaps + 30 Secrets + 30 Deployments).
fn manifests(dir: &std::path::Path) {
    for n in 0..NAMESPACES {
        let ns = format!("bench-{n:02}");
        let mut text = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n");
        for i in 0..PER_NAMESPACE {
            let _ = match i % 10 {
                0..4 => write!(
                    text,
                    "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: {ns}\n  labels:\n    app: bench\ndata:\n  index: \"{i}\"\n  color: blue\n"
                ),
                4..7 => write!(
                    text,
                    "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: secret-{i}\n  namespace: {ns}\ntype: Opaque\ndata:\n  token: c2VjcmV0\n"
                ),
                _ => write!(
                    text,
                    "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web-{i}\n  namespace: {ns}\nspec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app: web-{i}\n  template:\n    metadata:\n      labels:\n        app: web-{i}\n    spec:\n      containers:\n      - name: nginx\n        image: nginx:1.27\n        ports:\n        - containerPort: 80\n        env:\n        - name: MODE\n          value: bench\n"
                ),
            };
        }
        std::fs::write(dir.join(format!("{ns}.yaml")), text).unwrap();
    }
}

fn bench_plan(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mdir = dir.path().join("m");
    std::fs::create_dir(&mdir).unwrap();
    manifests(&mdir);
    let kubeconfig = dir.path().join("kubeconfig");
    let server = rt
        .block_on(kapply::server::start(Default::default()))
        .unwrap();
    server.write_kubeconfig(&kubeconfig).unwrap();
    let opts = LoadOptions {
        paths: vec![mdir.clone()],
        recursive: false,
        namespace: None,
        default_namespace: "default".into(),
    };
    let cluster = ClusterOptions {
        kubeconfig: Some(kubeconfig.clone()),
        ..Default::default()
    };
    // Create everything once, so the measured plans compare against live objects.
    rt.block_on(async {
        let session = Session::connect(&cluster).await.unwrap();
        let loaded = load(&opts);
        assert_eq!(loaded.manifests.len(), NAMESPACES * (PER_NAMESPACE + 1));
        let plan = session
            .plan(loaded, &PruneOptions::default(), None)
            .await
            .unwrap()
            .plan;
        let items = plan
            .objects
            .into_iter()
            .map(|p| ApplyItem {
                plan: p,
                accepted_fields: None,
                released_fields: Vec::new(),
            })
            .collect();
        let results = session.apply(items, &ApplyOptions::default()).await;
        assert!(results.iter().all(|r| r.ok()));
    });
    let loaded = load(&opts);

    // `KAPPLY_BENCH_KUBECTL=1`: time `kubectl diff` on the same objects once
    // (it is far too slow for criterion's samples), beside one kapply plan.
    if std::env::var_os("KAPPLY_BENCH_KUBECTL").is_some() {
        let start = std::time::Instant::now();
        let out = std::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["diff", "-f"])
            .arg(&mdir)
            .output()
            .unwrap();
        let kubectl = start.elapsed();
        let start = std::time::Instant::now();
        rt.block_on(async {
            let session = Session::connect(&cluster).await.unwrap();
            let loaded = load(&opts);
            session
                .plan(loaded, &PruneOptions::default(), None)
                .await
                .unwrap()
        });
        let kapply = start.elapsed();
        eprintln!(
            "kubectl diff (exit {:?}): {kubectl:.2?}; kapply load + plan: {kapply:.2?}",
            out.status.code()
        );
    }

    let mut group = c.benchmark_group("plan");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function(
        "2000 objects in 20 namespaces (connect + discovery + LISTs + merge)",
        |b| {
            b.iter(|| {
                rt.block_on(async {
                    let session = Session::connect(&cluster).await.unwrap();
                    let planned = session
                        .plan(loaded.clone(), &PruneOptions::default(), None)
                        .await
                        .unwrap();
                    assert_eq!(planned.plan.objects.len(), NAMESPACES * (PER_NAMESPACE + 1));
                    planned
                })
            })
        },
    );
    group.bench_function("load 2000 manifests from disk", |b| {
        b.iter(|| load(&opts).manifests.len())
    });
    group.finish();
    server.shutdown();
}

criterion_group!(benches, bench_plan);
criterion_main!(benches);
