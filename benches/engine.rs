//! The engine alone, no I/O: one Deployment with two containers (env,
//! ports, resources) planned against its live object as the API server
//! holds it (server defaults, managedFields, the last-applied annotation).
//! The scale issue's target: <= 50 us per object.
//! `cargo bench --bench engine`
//!
//! On a busy machine criterion's wall times wander; `KAPPLY_ENGINE_ITERS=N
//! cargo bench --bench engine` instead plans each case N times and prints
//! the CPU time this thread spent planning (from
//! `/proc/thread-self/schedstat`, Linux), which other processes do not
//! inflate.

// The binaries' allocator (src/main.rs), so the numbers are theirs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use kapply::manifest::{LoadOptions, Manifest, parse_str};
use kapply::plan::{PlanOptions, plan_object_owned};
use std::hint::black_box;
use std::path::Path;

/// The scale benchmark's Deployment (scripts/gen-scale.py), `image` for web.
fn config(image: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-0
  namespace: scale-00
  labels: {{app: web-0, tier: scale}}
spec:
  replicas: 2
  selector:
    matchLabels: {{app: web-0}}
  template:
    metadata:
      labels: {{app: web-0, tier: scale}}
    spec:
      containers:
      - name: web
        image: {image}
        ports:
        - {{containerPort: 80, name: http}}
        env:
        - {{name: MODE, value: production}}
        - {{name: INDEX, value: "0"}}
        resources:
          requests: {{cpu: 100m, memory: 128Mi}}
          limits: {{cpu: 500m, memory: 256Mi}}
      - name: sidecar
        image: busybox:1.36
        args: [sh, -c, "sleep infinity"]
        ports:
        - {{containerPort: 9090, name: metrics}}
        env:
        - {{name: TARGET, value: "http://localhost:80"}}
        resources:
          requests: {{cpu: 10m, memory: 16Mi}}
"#
    )
}

/// Read from the embedded API server after `kapply apply` created it
/// with nginx:1.26.0 (`kubectl get -o json --show-managed-fields`).
fn live() -> serde_json::Value {
    serde_json::from_str(include_str!("fixtures/deployment-live.json")).unwrap()
}

/// The scale benchmark's Deployment with `image`, loaded.
fn manifest(image: &str) -> Manifest {
    let mut loaded = parse_str(
        &config(image),
        Path::new("web.yaml"),
        &LoadOptions::default(),
    );
    loaded.manifests.remove(0)
}

const CASES: [(&str, &str); 2] = [
    ("unchanged", "nginx:1.26.0"),
    ("image changed", "nginx:1.27.1"),
];

/// CPU time of this thread so far, in nanoseconds.
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// `KAPPLY_ENGINE_ITERS=N`: CPU time per plan, without criterion.
fn cpu_time(iters: usize) {
    let live = live();
    let opts = PlanOptions::default();
    // `KAPPLY_ENGINE_BASELINE=1`: the copies only, nothing planned; the
    // difference of `perf stat -e instructions:u` between a run with and
    // one without, divided by N, is the instructions of one plan.
    let baseline = std::env::var_os("KAPPLY_ENGINE_BASELINE").is_some();
    for (what, image) in CASES {
        let m = &manifest(image);
        let (mut cpu, mut done) = (0, 0);
        while done < iters {
            // Copies made and plans dropped outside the measured span, as
            // criterion's iter_batched does.
            let lives: Vec<_> = (0..(iters - done).min(500)).map(|_| live.clone()).collect();
            let n = lives.len();
            let before = thread_cpu_ns().expect("/proc/thread-self/schedstat (Linux)");
            let plans: Vec<_> = lives
                .into_iter()
                .filter(|_| !baseline)
                .map(|l| plan_object_owned(black_box(m), Some(l), &opts))
                .collect();
            cpu += thread_cpu_ns().expect("/proc/thread-self/schedstat (Linux)") - before;
            done += n;
            drop(black_box(plans));
        }
        println!(
            "plan one Deployment ({what}): {:.1} us CPU per plan ({iters} plans)",
            cpu as f64 / iters as f64 / 1000.0
        );
    }
}

fn engine(c: &mut Criterion) {
    if let Some(n) = std::env::var("KAPPLY_ENGINE_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        cpu_time(n);
        std::process::exit(0);
    }
    let live = live();
    let opts = PlanOptions::default();
    for (what, image) in CASES {
        let m = &manifest(image);
        // The live object as a LIST hands it over (owned; the plan keeps it).
        c.bench_function(&format!("plan one Deployment ({what})"), |b| {
            b.iter_batched(
                || live.clone(),
                |live| plan_object_owned(black_box(m), Some(live), &opts),
                BatchSize::SmallInput,
            )
        });
    }
}

criterion_group!(benches, engine);
criterion_main!(benches);
