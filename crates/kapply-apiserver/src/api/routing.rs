//! Routing: from a request path to discovery, a resource or a subresource,
//! and the verbs on a resource (LIST included).

use super::apply::{apply_conflicts, drop_unowned_apply_fields};
use super::discovery::{group_list, resource_list, version};
use super::patch::{PatchKind, apply_patch, merge_strategic, patch_body, patch_kind};
use super::plumbing::json_body;
use super::subresources::subresource;
use super::table::table;
use super::writes::{
    WriteCtx, check_identity, create, delete_options_dry_run, delete_preconditions, precondition,
    remove, remove_read, update, update_read,
};
use super::{ApiServer, Query, Reply, out, schema_of};
use crate::fields;
use crate::openapi;
use crate::resources::ResourceInfo;
use crate::selector::FieldSelector;
use crate::status::ApiError;
use crate::store::{self, State};
use bytes::Bytes;
use http::Method;
use kapply_core::selector::LabelSelector;
use serde_json::{Value, json};

/// What a request path names.
pub(super) struct Target {
    pub(super) resource: ResourceInfo,
    pub(super) namespace: Option<String>,
    pub(super) name: Option<String>,
    pub(super) sub: Option<String>,
}

impl ApiServer {
    pub(super) fn route(
        &self,
        method: &Method,
        path: &str,
        query: &Query,
        content_type: Option<&str>,
        accept: &str,
        body: &[u8],
    ) -> Result<(u16, Reply), ApiError> {
        let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let resources = self.store.lock().resources();
        match segs.as_slice() {
            ["api", "v1", rest @ ..] if !rest.is_empty() => {
                let t = target("", "v1", rest, &resources)?;
                self.resource(method, t, query, content_type, accept, body)
            }
            ["apis", group, version, rest @ ..] if !rest.is_empty() => {
                let t = target(group, version, rest, &resources)?;
                self.resource(method, t, query, content_type, accept, body)
            }
            _ => self
                .discovery(method, &segs, &resources)
                .map(|(code, v)| (code, Reply::Json(v))),
        }
    }

    /// Everything but resources: version, health, discovery, OpenAPI.
    fn discovery(
        &self,
        method: &Method,
        segs: &[&str],
        resources: &[ResourceInfo],
    ) -> Result<(u16, Value), ApiError> {
        let get_only = || {
            if method == Method::GET {
                Ok(())
            } else {
                Err(ApiError::method_not_allowed(method.as_str()))
            }
        };
        match segs {
            ["version"] => {
                get_only()?;
                Ok((200, version()))
            }
            ["healthz"] | ["readyz"] | ["livez"] => Ok((200, json!("ok"))),
            ["api"] => {
                get_only()?;
                let addr = self
                    .address
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                Ok((
                    200,
                    json!({"kind": "APIVersions", "versions": ["v1"],
                        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr}]}),
                ))
            }
            ["apis"] => {
                get_only()?;
                Ok((200, group_list(resources)))
            }
            ["api", "v1"] => {
                get_only()?;
                Ok((200, resource_list("", "v1", resources)?))
            }
            ["apis", group] => {
                get_only()?;
                group_list(resources)["groups"]
                    .as_array()
                    .and_then(|gs| gs.iter().find(|g| g["name"] == *group).cloned())
                    .map(|mut g| {
                        g["kind"] = json!("APIGroup");
                        g["apiVersion"] = json!("v1");
                        (200, g)
                    })
                    .ok_or_else(ApiError::not_found_path)
            }
            ["apis", group, version] => {
                get_only()?;
                Ok((200, resource_list(group, version, resources)?))
            }
            ["openapi", "v3"] => {
                get_only()?;
                Ok((200, openapi::index(resources)))
            }
            ["openapi", "v3", rest @ ..] => {
                get_only()?;
                openapi::document(&rest.join("/"), resources)
                    .map(|d| (200, d))
                    .ok_or_else(ApiError::not_found_path)
            }
            _ => Err(ApiError::not_found_path()),
        }
    }

    fn resource(
        &self,
        method: &Method,
        t: Target,
        query: &Query,
        content_type: Option<&str>,
        accept: &str,
        body: &[u8],
    ) -> Result<(u16, Reply), ApiError> {
        let mut st = self.store.lock();
        let r = &t.resource;
        let ns = t.namespace.as_deref();
        let mut dry_run = query.get("dryRun").is_some_and(|v| v == "All");
        if let Some(d) = query.get("dryRun")
            && !d.is_empty()
            && d != "All"
        {
            return Err(ApiError::bad_request(format!(
                "Invalid dry run value: {d:?}: supported values: \"All\""
            )));
        }
        // A DELETE carries its options in the body (DeleteOptions), which is
        // where kubectl puts `dryRun` (`delete --dry-run=server`, `apply
        // --prune --dry-run=server`). As kube-apiserver, the query's options
        // count only when there is no body: `?dryRun=All` beside a body
        // deletes for real there, and so here.
        let delete_options = if *method == Method::DELETE && !body.is_empty() {
            let options = json_body(content_type.or(Some("application/json")), body)?;
            dry_run = delete_options_dry_run(&options)?;
            Some(options)
        } else {
            None
        };
        let strict = query.get("fieldValidation").is_some_and(|v| v == "Strict");
        let warn = query.get("fieldValidation").is_some_and(|v| v == "Warn");
        let manager = query.get("fieldManager").cloned();
        // Every write of this request shares its dry-run and validation flags.
        let request_ctx = |manager: String, applied: Option<fields::FieldSet>| WriteCtx {
            manager,
            operation: if applied.is_some() { "Apply" } else { "Update" },
            subresource: None,
            dry_run,
            strict,
            warn,
            applied,
        };
        match (t.name.as_deref(), t.sub.as_deref()) {
            (None, _) => match *method {
                Method::GET => {
                    if query.get("watch").is_some_and(|w| w == "true" || w == "1") {
                        return Err(ApiError::method_not_allowed("WATCH"));
                    }
                    let list = list(&st, r, ns, query)?;
                    if accept.contains("as=Table") {
                        Ok((200, table(r, &list.to_value()).into()))
                    } else {
                        Ok((200, Reply::Raw(list.to_json().into())))
                    }
                }
                Method::POST => {
                    let obj = json_body(content_type, body)?;
                    let ctx = request_ctx(manager.unwrap_or_else(|| "unknown".into()), None);
                    create(&mut st, r, ns, obj, &ctx).map(|o| (201, o.into()))
                }
                Method::DELETE => {
                    let items = list(&st, r, ns, query)?.to_value();
                    for item in items["items"].as_array().into_iter().flatten() {
                        let name = item["metadata"]["name"].as_str().unwrap_or_default();
                        let ins = item["metadata"]["namespace"].as_str();
                        if !dry_run {
                            remove(&mut st, r, ins, name);
                        }
                    }
                    Ok((200, items.into()))
                }
                _ => Err(ApiError::method_not_allowed(method.as_str())),
            },
            (Some(name), None) => {
                let k = store::key(r, ns, name);
                match *method {
                    Method::GET => {
                        let o = st.stored(&k).ok_or_else(|| ApiError::not_found(r, name))?;
                        if accept.contains("as=Table") {
                            let list = json!({"metadata": {"resourceVersion": st.rv.to_string()},
                                "items": [out(r, &o.value())]});
                            Ok((200, table(r, &list).into()))
                        } else {
                            // Straight from the store when it is already
                            // the object as served.
                            let reply = match o.json_as(r) {
                                Some(json) => Reply::Raw(json.clone()),
                                None => out(r, &o.value()).into(),
                            };
                            Ok((200, reply))
                        }
                    }
                    Method::PUT => {
                        let obj = json_body(content_type, body)?;
                        let ctx = request_ctx(manager.unwrap_or_else(|| "unknown".into()), None);
                        update(&mut st, r, ns, name, obj, &ctx).map(|o| (200, o.into()))
                    }
                    Method::PATCH => {
                        let kind = patch_kind(content_type)?;
                        let old = st.get(&k);
                        let is_apply = matches!(kind, PatchKind::Apply);
                        let manager = match (manager, is_apply) {
                            (Some(m), _) => m,
                            (None, true) => {
                                return Err(ApiError::bad_request(
                                    "PATCH, application/apply-patch+yaml: fieldManager is required for apply requests",
                                ));
                            }
                            (None, false) => "unknown".into(),
                        };
                        let patch = patch_body(&kind, body)?;
                        let Some(old) = old else {
                            if is_apply {
                                let applied = fields::leaves(&patch, schema_of(r));
                                let ctx = request_ctx(manager, Some(applied));
                                let mut obj = patch;
                                if obj["metadata"]["name"].is_null() {
                                    obj["metadata"]["name"] = json!(name);
                                }
                                return create(&mut st, r, ns, obj, &ctx).map(|o| (201, o.into()));
                            }
                            return Err(ApiError::not_found(r, name));
                        };
                        let (new, applied) = match kind {
                            PatchKind::Apply => {
                                check_identity(r, ns, name, &patch)?;
                                let applied = fields::leaves(&patch, schema_of(r));
                                if query.get("force").is_none_or(|f| f != "true") {
                                    apply_conflicts(r, &old, &patch, &manager, &applied)?;
                                }
                                let base = drop_unowned_apply_fields(&old, &manager, &applied);
                                (merge_strategic(r, &base, &patch)?, Some(applied))
                            }
                            _ => (apply_patch(r, &kind, &old, &patch)?, None),
                        };
                        let ctx = request_ctx(manager, applied);
                        precondition(r, name, &old, &new)?;
                        update_read(&mut st, r, ns, name, &old, new, &ctx).map(|o| (200, o.into()))
                    }
                    Method::DELETE => {
                        let Some(old) = st.get(&k) else {
                            return Err(ApiError::not_found(r, name));
                        };
                        if let Some(options) = &delete_options {
                            delete_preconditions(r, name, &old, options)?;
                        }
                        let uid = old["metadata"]["uid"].clone();
                        if !dry_run {
                            remove_read(&mut st, r, ns, name, Some(old));
                        }
                        Ok((
                            200,
                            json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                "status": "Success",
                                "details": {"name": name, "group": r.group, "kind": r.plural,
                                    "uid": uid}})
                            .into(),
                        ))
                    }
                    _ => Err(ApiError::method_not_allowed(method.as_str())),
                }
            }
            (Some(name), Some(sub)) => subresource(
                &mut st,
                r,
                ns,
                name,
                sub,
                method,
                content_type,
                body,
                manager,
                dry_run,
            )
            .map(|(code, v)| (code, v.into())),
        }
    }
}

/// A LIST answer. Items are the stored JSON as it is, unless the object
/// was written through another version of its resource (then a tree with
/// the served apiVersion).
pub(super) struct Listed {
    kind: String,
    api_version: String,
    metadata: Value,
    items: Vec<Item>,
}

enum Item {
    Raw(Bytes),
    Tree(Value),
}

impl Listed {
    /// Byte for byte what `serde_json` writes for [`Listed::to_value`]
    /// (keys sorted, compact), without building that tree.
    pub(super) fn to_json(&self) -> Vec<u8> {
        let size: usize = self
            .items
            .iter()
            .map(|i| match i {
                Item::Raw(b) => b.len() + 1,
                Item::Tree(_) => 1024,
            })
            .sum();
        let mut out = Vec::with_capacity(size + 256);
        // Writing JSON into a Vec cannot fail.
        out.extend_from_slice(b"{\"apiVersion\":");
        let _ = serde_json::to_writer(&mut out, &self.api_version);
        out.extend_from_slice(b",\"items\":[");
        for (n, item) in self.items.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            match item {
                Item::Raw(b) => out.extend_from_slice(b),
                Item::Tree(v) => {
                    let _ = serde_json::to_writer(&mut out, v);
                }
            }
        }
        out.extend_from_slice(b"],\"kind\":");
        let _ = serde_json::to_writer(&mut out, &self.kind);
        out.extend_from_slice(b",\"metadata\":");
        let _ = serde_json::to_writer(&mut out, &self.metadata);
        out.push(b'}');
        out
    }

    pub(super) fn to_value(&self) -> Value {
        let items: Vec<Value> = self
            .items
            .iter()
            .map(|i| match i {
                Item::Raw(b) => serde_json::from_slice(b).unwrap_or_default(),
                Item::Tree(v) => v.clone(),
            })
            .collect();
        json!({
            "kind": self.kind,
            "apiVersion": self.api_version,
            "metadata": self.metadata,
            "items": items,
        })
    }
}

/// The request's `labelSelector`; one that does not parse is a 400, as
/// from kube-apiserver.
pub(super) fn label_selector(query: &Query) -> Result<LabelSelector, ApiError> {
    LabelSelector::parse(
        query
            .get("labelSelector")
            .map(String::as_str)
            .unwrap_or_default(),
    )
    .map_err(|e| ApiError::bad_request(e.message))
}

pub(super) fn list(
    st: &State,
    r: &ResourceInfo,
    ns: Option<&str>,
    query: &Query,
) -> Result<Listed, ApiError> {
    let labels = label_selector(query)?;
    let fieldsel = FieldSelector::parse(
        query
            .get("fieldSelector")
            .map(String::as_str)
            .unwrap_or_default(),
    )
    .map_err(ApiError::bad_request)?;
    let limit: Option<usize> = match query.get("limit").filter(|l| !l.is_empty()) {
        Some(l) => Some(
            l.parse()
                .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?,
        ),
        None => None,
    };
    let start: usize = match query.get("continue").filter(|c| !c.is_empty()) {
        Some(c) => c
            .strip_prefix("kapply-")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| ApiError::bad_request("continue key is not valid"))?,
        None => 0,
    };
    let everything = labels.is_empty() && fieldsel.is_empty();
    let matching: Vec<Item> = st
        .of(&r.group, &r.plural, ns)
        .filter_map(|(_, o)| {
            let raw = o.json_as(r);
            if everything && let Some(b) = raw {
                return Some(Item::Raw(b.clone()));
            }
            let v = out(r, &o.value());
            if !(labels.matches(&v) && fieldsel.matches(&v)) {
                return None;
            }
            Some(match raw {
                Some(b) => Item::Raw(b.clone()),
                None => Item::Tree(v),
            })
        })
        .collect();
    let total = matching.len();
    let take = limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
    let items: Vec<Item> = matching.into_iter().skip(start).take(take).collect();
    let end = start + items.len();
    let mut metadata = json!({"resourceVersion": st.rv.to_string()});
    if end < total {
        metadata["continue"] = json!(format!("kapply-{end}"));
        metadata["remainingItemCount"] = json!(total - end);
    }
    Ok(Listed {
        kind: format!("{}List", r.kind),
        api_version: r.api_version(),
        metadata,
        items,
    })
}

pub(super) fn target(
    group: &str,
    version: &str,
    rest: &[&str],
    resources: &[ResourceInfo],
) -> Result<Target, ApiError> {
    let find = |plural: &str| {
        resources
            .iter()
            .find(|r| r.group == group && r.version == version && r.plural == plural)
            .cloned()
    };
    if !resources
        .iter()
        .any(|r| r.group == group && r.version == version)
    {
        return Err(ApiError::not_found_path());
    }
    // namespaces/<ns>/<plural>/... names a namespaced resource; otherwise the
    // path is cluster-level (which includes namespaces/<name>[/status]).
    if let ["namespaces", ns, plural, tail @ ..] = rest
        && let Some(r) = find(plural).filter(|r| r.namespaced)
        && tail.len() <= 2
    {
        return Ok(Target {
            resource: r,
            namespace: Some(ns.to_string()),
            name: tail.first().map(|s| s.to_string()),
            sub: tail.get(1).map(|s| s.to_string()),
        });
    }
    let [plural, tail @ ..] = rest else {
        return Err(ApiError::not_found_path());
    };
    let r = find(plural).ok_or_else(ApiError::not_found_path)?;
    if tail.len() > 2 || (r.namespaced && !tail.is_empty()) {
        return Err(ApiError::not_found_path());
    }
    Ok(Target {
        resource: r,
        namespace: None,
        name: tail.first().map(|s| s.to_string()),
        sub: tail.get(1).map(|s| s.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// LIST and GET send the stored bytes; they must be exactly what
    /// serializing the tree would give.
    #[test]
    fn lists_and_gets_are_written_as_their_trees_would_be() {
        let server = ApiServer::new();
        for (name, data) in [
            (
                "a",
                json!({"k": "v", "quote": "\"é\" \u{1}\n", "n": "1.50"}),
            ),
            ("b", json!({})),
            ("c", json!({"big": "x".repeat(3000)})),
        ] {
            let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
                "data": data});
            server.put_object_as(obj, "test").unwrap();
        }
        server
            .put_object_as(
                json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "web", "namespace": "default"},
                    "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                            "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}),
                "test",
            )
            .unwrap();
        let st = server.store.lock();
        let cm = st.find_kind("v1", "ConfigMap").unwrap();
        let q = |pairs: &[(&str, &str)]| -> Query {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        for (ns, query) in [
            (Some("default"), q(&[])),
            (None, q(&[])),
            (Some("default"), q(&[("limit", "2")])),
            (
                Some("default"),
                q(&[("limit", "2"), ("continue", "kapply-2")]),
            ),
            (Some("default"), q(&[("labelSelector", "app in (a,c)")])),
            (Some("other"), q(&[])),
        ] {
            let listed = list(&st, &cm, ns, &query).unwrap();
            let tree = listed.to_value();
            assert_eq!(
                String::from_utf8(listed.to_json()).unwrap(),
                serde_json::to_string(&tree).unwrap(),
                "{query:?}"
            );
        }
        let deploy = st.find_kind("apps/v1", "Deployment").unwrap();
        let listed = list(&st, &deploy, None, &q(&[])).unwrap();
        assert_eq!(listed.to_value()["items"].as_array().unwrap().len(), 1);
        assert_eq!(
            listed.to_json(),
            serde_json::to_vec(&listed.to_value()).unwrap()
        );
        drop(st);
        for path in [
            "/api/v1/namespaces/default/configmaps/a",
            "/apis/apps/v1/namespaces/default/deployments/web",
        ] {
            let uri: http::Uri = path.parse().unwrap();
            let resp = server.handle(&Method::GET, &uri, &http::HeaderMap::new(), b"");
            let v: Value = serde_json::from_slice(resp.body()).unwrap();
            assert_eq!(
                resp.body().as_ref(),
                serde_json::to_vec(&v).unwrap(),
                "{path}"
            );
            assert_eq!(v["metadata"]["name"], path.rsplit('/').next().unwrap());
        }
    }
}
