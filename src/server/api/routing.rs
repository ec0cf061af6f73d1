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
    remove, update,
};
use super::{ApiServer, Query, out, schema_of};
use crate::server::fields;
use crate::server::openapi;
use crate::server::resources::ResourceInfo;
use crate::server::selector::{FieldSelector, LabelSelector};
use crate::server::status::ApiError;
use crate::server::store::{self, State};
use http::Method;
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
    ) -> Result<(u16, Value), ApiError> {
        let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let resources = self.store.lock().resources();
        let get_only = || {
            if method == Method::GET {
                Ok(())
            } else {
                Err(ApiError::method_not_allowed(method.as_str()))
            }
        };
        match segs.as_slice() {
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
                Ok((200, group_list(&resources)))
            }
            ["api", "v1"] => {
                get_only()?;
                Ok((200, resource_list("", "v1", &resources)?))
            }
            ["apis", group] => {
                get_only()?;
                group_list(&resources)["groups"]
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
                Ok((200, resource_list(group, version, &resources)?))
            }
            ["openapi", "v3"] => {
                get_only()?;
                Ok((200, openapi::index(&resources)))
            }
            ["openapi", "v3", rest @ ..] => {
                get_only()?;
                openapi::document(&rest.join("/"), &resources)
                    .map(|d| (200, d))
                    .ok_or_else(ApiError::not_found_path)
            }
            ["api", "v1", rest @ ..] => {
                let t = target("", "v1", rest, &resources)?;
                self.resource(method, t, query, content_type, accept, body)
            }
            ["apis", group, version, rest @ ..] => {
                let t = target(group, version, rest, &resources)?;
                self.resource(method, t, query, content_type, accept, body)
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
    ) -> Result<(u16, Value), ApiError> {
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
        // --prune --dry-run=server`). Either place asking for a dry run makes
        // one: a missed dry run deletes for real.
        let delete_options = if *method == Method::DELETE && !body.is_empty() {
            let options = json_body(content_type.or(Some("application/json")), body)?;
            dry_run |= delete_options_dry_run(&options)?;
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
                        Ok((200, table(r, &list)))
                    } else {
                        Ok((200, list))
                    }
                }
                Method::POST => {
                    let obj = json_body(content_type, body)?;
                    let ctx = request_ctx(manager.unwrap_or_else(|| "unknown".into()), None);
                    create(&mut st, r, ns, obj, &ctx).map(|o| (201, o))
                }
                Method::DELETE => {
                    let items = list(&st, r, ns, query)?;
                    for item in items["items"].as_array().into_iter().flatten() {
                        let name = item["metadata"]["name"].as_str().unwrap_or_default();
                        let ins = item["metadata"]["namespace"].as_str();
                        if !dry_run {
                            remove(&mut st, r, ins, name);
                        }
                    }
                    Ok((200, items))
                }
                _ => Err(ApiError::method_not_allowed(method.as_str())),
            },
            (Some(name), None) => {
                let k = store::key(r, ns, name);
                match *method {
                    Method::GET => {
                        let o = st
                            .objects
                            .get(&k)
                            .map(|o| out(r, o))
                            .ok_or_else(|| ApiError::not_found(r, name))?;
                        if accept.contains("as=Table") {
                            let list = json!({"metadata": {"resourceVersion": st.rv.to_string()},
                                "items": [o]});
                            Ok((200, table(r, &list)))
                        } else {
                            Ok((200, o))
                        }
                    }
                    Method::PUT => {
                        let obj = json_body(content_type, body)?;
                        let ctx = request_ctx(manager.unwrap_or_else(|| "unknown".into()), None);
                        update(&mut st, r, ns, name, obj, &ctx).map(|o| (200, o))
                    }
                    Method::PATCH => {
                        let kind = patch_kind(content_type)?;
                        let old = st.objects.get(&k).cloned();
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
                                return create(&mut st, r, ns, obj, &ctx).map(|o| (201, o));
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
                        update(&mut st, r, ns, name, new, &ctx).map(|o| (200, o))
                    }
                    Method::DELETE => {
                        let Some(old) = st.objects.get(&k).cloned() else {
                            return Err(ApiError::not_found(r, name));
                        };
                        if let Some(options) = &delete_options {
                            delete_preconditions(r, name, &old, options)?;
                        }
                        if !dry_run {
                            remove(&mut st, r, ns, name);
                        }
                        Ok((
                            200,
                            json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                "status": "Success",
                                "details": {"name": name, "group": r.group, "kind": r.plural,
                                    "uid": old["metadata"]["uid"]}}),
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
            ),
        }
    }
}

pub(super) fn list(
    st: &State,
    r: &ResourceInfo,
    ns: Option<&str>,
    query: &Query,
) -> Result<Value, ApiError> {
    let labels = LabelSelector::parse(
        query
            .get("labelSelector")
            .map(String::as_str)
            .unwrap_or_default(),
    )
    .map_err(ApiError::bad_request)?;
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
    let matching: Vec<Value> = st
        .objects
        .iter()
        .filter(|((g, p, ons, _), _)| {
            *g == r.group && *p == r.plural && ns.is_none_or(|n| n == ons)
        })
        .map(|(_, o)| out(r, o))
        .filter(|o| labels.matches(o) && fieldsel.matches(o))
        .collect();
    let total = matching.len();
    let take = limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
    let items: Vec<Value> = matching.into_iter().skip(start).take(take).collect();
    let end = start + items.len();
    let mut metadata = json!({"resourceVersion": st.rv.to_string()});
    if end < total {
        metadata["continue"] = json!(format!("kapply-{end}"));
        metadata["remainingItemCount"] = json!(total - end);
    }
    Ok(json!({
        "kind": format!("{}List", r.kind),
        "apiVersion": r.api_version(),
        "metadata": metadata,
        "items": items,
    }))
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
