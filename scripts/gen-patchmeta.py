#!/usr/bin/env python3
"""Regenerate assets/patchmeta.json from the Kubernetes OpenAPI definitions.

The PyPI package kubernetes-validate ships `_definitions.json` per Kubernetes
version. We keep only what apply needs: the shape of every type (which field is
a struct, a map, a list or a scalar) and the patch extensions
(x-kubernetes-patch-merge-key, x-kubernetes-patch-strategy, list-type,
list-map-keys). The 1.8 MB source is downloaded into a temporary directory and
never committed.

Usage: scripts/gen-patchmeta.py [K8S_VERSION]   (default 1.32.0)
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import zipfile

VERSION = sys.argv[1] if len(sys.argv) > 1 else "1.32.0"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "assets", "patchmeta.json")

SCALARS = {"string": "s", "integer": "i", "number": "n", "boolean": "b"}


def load_definitions():
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.check_call(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "kubernetes-validate", "-d", tmp])
        wheel = glob.glob(os.path.join(tmp, "*.whl"))[0]
        with zipfile.ZipFile(wheel) as z:
            name = f"kubernetes_validate/kubernetes-json-schema/v{VERSION}-local/_definitions.json"
            return json.loads(z.read(name))["$defs"]


def ref_name(ref):
    return ref.rsplit("/", 1)[-1]


def types_of(schema):
    t = schema.get("type")
    if t is None:
        return []
    if isinstance(t, str):
        return [t]
    return [x for x in t if x != "null"]


def node(schema):
    """Compact a property schema into a node (see crates/kapply-core/src/patchmeta.rs for the format)."""
    out = {}
    if "$ref" in schema:
        out["r"] = ref_name(schema["$ref"])
    elif "allOf" in schema and len(schema["allOf"]) == 1 and "$ref" in schema["allOf"][0]:
        out["r"] = ref_name(schema["allOf"][0]["$ref"])
    else:
        ts = types_of(schema)
        if "array" in ts:
            out["a"] = node(schema.get("items", {}))
        elif "object" in ts:
            if "properties" in schema:
                out["p"] = {k: node(v) for k, v in sorted(schema["properties"].items())}
            elif isinstance(schema.get("additionalProperties"), dict):
                out["m"] = node(schema["additionalProperties"])
            else:
                out["t"] = "o"
        elif len(ts) == 1 and ts[0] in SCALARS:
            out["t"] = SCALARS[ts[0]]
        elif "oneOf" in schema or "anyOf" in schema or schema.get("format") == "int-or-string":
            out["t"] = "x"  # int-or-string and friends: a scalar
        else:
            out["t"] = "x"
    if "x-kubernetes-patch-merge-key" in schema:
        out["k"] = schema["x-kubernetes-patch-merge-key"]
    if "x-kubernetes-patch-strategy" in schema:
        out["s"] = schema["x-kubernetes-patch-strategy"]
    if "x-kubernetes-list-type" in schema:
        out["lt"] = schema["x-kubernetes-list-type"]
    if "x-kubernetes-list-map-keys" in schema:
        out["lk"] = schema["x-kubernetes-list-map-keys"]
    return out


def main():
    defs = load_definitions()
    out_defs = {}
    kinds = {}
    for name, schema in sorted(defs.items()):
        compact = node(schema)
        if "p" not in compact and "t" not in compact and "m" not in compact and "a" not in compact and "r" not in compact:
            compact["t"] = "o"
        out_defs[name] = compact
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            if name.endswith("List") or gvk.get("kind") in ("DeleteOptions", "WatchEvent", "Status"):
                continue
            group, version, kind = gvk.get("group", ""), gvk["version"], gvk["kind"]
            api_version = f"{group}/{version}" if group else version
            kinds.setdefault(f"{api_version}/{kind}", name)
    doc = {"kubernetesVersion": VERSION, "kinds": dict(sorted(kinds.items())), "defs": out_defs}
    with open(OUT, "w") as f:
        json.dump(doc, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print(f"wrote {OUT}: {len(kinds)} kinds, {len(out_defs)} definitions, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
