#!/usr/bin/env python3
"""Generate the scale benchmark's manifests.

gen-scale.py DIR N [--changed]

20 namespaces; in each a Namespace, N/40 Deployments (two containers with env,
ports and resources) and N/40 ConfigMaps, one file per namespace and kind
(N=10000: 10,020 objects). With --changed, every fourth Deployment has a new
image (a quarter of the Deployments, as a release would).
"""

import os
import sys


def deployment(ns: str, i: int, changed: bool) -> str:
    image = "nginx:1.27.1" if changed and i % 4 == 0 else "nginx:1.26.0"
    return f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-{i}
  namespace: {ns}
  labels: {{app: web-{i}, tier: scale}}
spec:
  replicas: 2
  selector:
    matchLabels: {{app: web-{i}}}
  template:
    metadata:
      labels: {{app: web-{i}, tier: scale}}
    spec:
      containers:
      - name: web
        image: {image}
        ports:
        - {{containerPort: 80, name: http}}
        env:
        - {{name: MODE, value: production}}
        - {{name: INDEX, value: "{i}"}}
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
"""


def configmap(ns: str, i: int) -> str:
    return f"""apiVersion: v1
kind: ConfigMap
metadata:
  name: settings-{i}
  namespace: {ns}
  labels: {{tier: scale}}
data:
  color: blue
  index: "{i}"
  config.yaml: |
    server:
      port: 8080
      workers: 4
"""


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, n = sys.argv[1], int(sys.argv[2])
    changed = "--changed" in sys.argv[3:]
    per_ns = max(1, n // 40)
    for k in range(20):
        ns = f"scale-{k:02d}"
        d = os.path.join(out, ns)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "00-namespace.yaml"), "w") as f:
            f.write(f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n")
        with open(os.path.join(d, "deployments.yaml"), "w") as f:
            f.write("---\n".join(deployment(ns, i, changed) for i in range(per_ns)))
        with open(os.path.join(d, "configmaps.yaml"), "w") as f:
            f.write("---\n".join(configmap(ns, i) for i in range(per_ns)))


if __name__ == "__main__":
    main()
