//! The engine alone, no I/O: one Deployment with two containers (env,
//! ports, resources) planned against its live object as the API server
//! holds it (server defaults, managedFields, the last-applied annotation).
//! The scale issue's target: <= 50 us per object.
//! `cargo bench --bench engine`

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use kapply::manifest::{LoadOptions, parse_str};
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

fn engine(c: &mut Criterion) {
    // Read from the embedded API server after `kapply apply` created it
    // with nginx:1.26.0 (`kubectl get -o json --show-managed-fields`).
    let live: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/deployment-live.json")).unwrap();
    let opts = PlanOptions::default();
    for (what, image) in [
        ("unchanged", "nginx:1.26.0"),
        ("image changed", "nginx:1.27.1"),
    ] {
        let loaded = parse_str(
            &config(image),
            Path::new("web.yaml"),
            &LoadOptions::default(),
        );
        let m = &loaded.manifests[0];
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
