//! `/openapi/v3`: documents built from the compiled-in patch metadata, with
//! the patch extensions, and PATCH operations that declare `fieldValidation`
//! (kubectl checks for it to decide on server-side validation).

use super::resources::ResourceInfo;
use kapply_core::patchmeta::{Node, PatchMeta};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// The hash part of serverRelativeURL; documents never change at run time.
const HASH: &str = "kapply0001";

/// `/openapi/v3`: one entry per built-in group version.
pub fn index(resources: &[ResourceInfo]) -> Value {
    let mut paths = Map::new();
    for r in resources.iter().filter(|r| !r.custom) {
        let gv = gv_path(r);
        paths.insert(
            gv.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{gv}?hash={HASH}")}),
        );
    }
    json!({ "paths": paths })
}

fn gv_path(r: &ResourceInfo) -> String {
    if r.group.is_empty() {
        format!("api/{}", r.version)
    } else {
        format!("apis/{}/{}", r.group, r.version)
    }
}

/// The document of one group version (`api/v1`, `apis/apps/v1`); None when
/// no built-in resource lives there.
pub fn document(gv: &str, resources: &[ResourceInfo]) -> Option<Value> {
    let served: Vec<&ResourceInfo> = resources
        .iter()
        .filter(|r| !r.custom && gv_path(r) == gv)
        .collect();
    if served.is_empty() {
        return None;
    }
    let meta = PatchMeta::builtin();
    let mut paths = Map::new();
    let mut roots = Vec::new();
    for r in &served {
        let Some(def) = meta.kinds.get(&format!("{}/{}", r.api_version(), r.kind)) else {
            continue;
        };
        roots.push(def.clone());
        let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
        let body_ref = json!({"$ref": format!("#/components/schemas/{def}")});
        let base = format!("/{gv}");
        let (collection, item) = if r.namespaced {
            (
                format!("{base}/namespaces/{{namespace}}/{}", r.plural),
                format!("{base}/namespaces/{{namespace}}/{}/{{name}}", r.plural),
            )
        } else {
            (
                format!("{base}/{}", r.plural),
                format!("{base}/{}/{{name}}", r.plural),
            )
        };
        let write_params = json!([
            query("dryRun"),
            query("fieldManager"),
            query("fieldValidation"),
        ]);
        let mut patch_params = write_params.clone();
        if let Some(a) = patch_params.as_array_mut() {
            a.push(json!({"name": "force", "in": "query", "schema": {"type": "boolean"}}));
        }
        let ok = |desc: &str| json!({"200": {"description": desc, "content": {"application/json": {"schema": body_ref}}}});
        paths.insert(
            collection,
            json!({
                "get": {"operationId": format!("list{}", r.kind), "x-kubernetes-action": "list",
                        "x-kubernetes-group-version-kind": gvk, "responses": ok("OK")},
                "post": {"operationId": format!("create{}", r.kind), "x-kubernetes-action": "post",
                         "x-kubernetes-group-version-kind": gvk, "parameters": write_params,
                         "requestBody": {"content": {"application/json": {"schema": body_ref}}},
                         "responses": ok("OK")},
            }),
        );
        let patch_body = json!({"content": {
            "application/apply-patch+yaml": {"schema": {"type": "object"}},
            "application/json-patch+json": {"schema": {"type": "object"}},
            "application/merge-patch+json": {"schema": {"type": "object"}},
            "application/strategic-merge-patch+json": {"schema": {"type": "object"}},
        }});
        paths.insert(
            item,
            json!({
                "get": {"operationId": format!("read{}", r.kind), "x-kubernetes-action": "get",
                        "x-kubernetes-group-version-kind": gvk, "responses": ok("OK")},
                "put": {"operationId": format!("replace{}", r.kind), "x-kubernetes-action": "put",
                        "x-kubernetes-group-version-kind": gvk, "parameters": write_params,
                        "requestBody": {"content": {"application/json": {"schema": body_ref}}},
                        "responses": ok("OK")},
                "patch": {"operationId": format!("patch{}", r.kind), "x-kubernetes-action": "patch",
                          "x-kubernetes-group-version-kind": gvk, "parameters": patch_params,
                          "requestBody": patch_body, "responses": ok("OK")},
                "delete": {"operationId": format!("delete{}", r.kind), "x-kubernetes-action": "delete",
                           "x-kubernetes-group-version-kind": gvk, "parameters": [query("dryRun")],
                           "responses": ok("OK")},
                "parameters": [
                    {"name": "name", "in": "path", "required": true, "schema": {"type": "string"}},
                ],
            }),
        );
    }
    // Definitions reachable from the kinds, and which kinds each root is.
    let mut gvks: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for (key, def) in &meta.kinds {
        let Some((api_version, kind)) = key.rsplit_once('/') else {
            continue;
        };
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        if roots.contains(def) {
            gvks.entry(def.clone())
                .or_default()
                .push(json!({"group": group, "version": version, "kind": kind}));
        }
    }
    let mut seen = BTreeSet::new();
    let mut todo: Vec<String> = roots;
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(node) = meta.defs().get(&name) {
            refs(node, &mut todo);
        }
    }
    let mut schemas = Map::new();
    for name in seen {
        let Some(node) = meta.defs().get(&name) else {
            continue;
        };
        let mut s = schema(node, true);
        if let Some(g) = gvks.get(&name) {
            s["x-kubernetes-group-version-kind"] = json!(g);
        }
        schemas.insert(name, s);
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": super::GIT_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

fn query(name: &str) -> Value {
    json!({"name": name, "in": "query", "uniqueItems": true, "schema": {"type": "string"}})
}

fn refs(node: &Node, out: &mut Vec<String>) {
    if let Some(r) = &node.r {
        out.push(r.clone());
    }
    for p in node.p.iter().flat_map(|p| p.values()) {
        refs(p, out);
    }
    for n in node.m.iter().chain(node.a.iter()) {
        refs(n, out);
    }
}

/// OpenAPI v3 schema of a node. `definition`: a named definition (a `$ref`
/// there would make a bare alias; never happens in the table).
fn schema(node: &Node, definition: bool) -> Value {
    let mut s = Map::new();
    if let Some(r) = &node.r {
        let target = json!({"$ref": format!("#/components/schemas/{r}")});
        if definition {
            return target;
        }
        s.insert("allOf".into(), json!([target]));
    } else if let Some(p) = &node.p {
        let props: Map<String, Value> = p
            .iter()
            .map(|(k, n)| (k.clone(), schema(n, false)))
            .collect();
        s.insert("type".into(), json!("object"));
        s.insert("properties".into(), Value::Object(props));
    } else if let Some(m) = &node.m {
        s.insert("type".into(), json!("object"));
        s.insert("additionalProperties".into(), schema(m, false));
    } else if let Some(a) = &node.a {
        s.insert("type".into(), json!("array"));
        s.insert("items".into(), schema(a, false));
    } else {
        match node.t.as_deref() {
            Some("s") => {
                s.insert("type".into(), json!("string"));
            }
            Some("i") => {
                s.insert("type".into(), json!("integer"));
                s.insert("format".into(), json!("int64"));
            }
            Some("n") => {
                s.insert("type".into(), json!("number"));
            }
            Some("b") => {
                s.insert("type".into(), json!("boolean"));
            }
            Some("x") => {
                s.insert("x-kubernetes-int-or-string".into(), json!(true));
                s.insert(
                    "anyOf".into(),
                    json!([{"type": "integer"}, {"type": "string"}]),
                );
            }
            _ => {
                s.insert("type".into(), json!("object"));
                s.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
            }
        }
    }
    if let Some(k) = &node.k {
        s.insert("x-kubernetes-patch-merge-key".into(), json!(k));
    }
    if let Some(st) = &node.s {
        s.insert("x-kubernetes-patch-strategy".into(), json!(st));
    }
    if let Some(lt) = &node.lt {
        s.insert("x-kubernetes-list-type".into(), json!(lt));
    }
    if let Some(lk) = &node.lk {
        s.insert("x-kubernetes-list-map-keys".into(), json!(lk));
    }
    Value::Object(s)
}
