//! The request handler: a plain function from (method, uri, headers, body)
//! to a response, callable without a socket.

use super::fields::{self, Write};
use super::resources::{self, ResourceInfo};
use super::selector::{FieldSelector, LabelSelector};
use super::status::{ApiError, Cause};
use super::store::{self, State, Store};
use super::{defaults, openapi, validate};
use crate::merge::apply::{apply_merge, apply_strategic};
use crate::patchmeta::{PatchMeta, Schema};
use bytes::Bytes;
use http::{HeaderMap, Method, Response, StatusCode, Uri, header};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// One request as the server saw it, for tests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Decoded query parameters.
    pub query: BTreeMap<String, String>,
    pub content_type: Option<String>,
    /// The User-Agent header.
    #[serde(default)]
    pub user_agent: Option<String>,
    /// The body parsed as JSON (YAML for apply patches); None when empty or unparsable.
    pub body: Option<Value>,
}

/// The API server without its socket.
#[derive(Debug, Default)]
pub struct ApiServer {
    store: Store,
    requests: Mutex<Vec<RecordedRequest>>,
    /// `host:port`, for `/api` serverAddressByClientCIDRs.
    address: Mutex<String>,
}

/// A watch in progress: what it selects and how far it has got.
#[derive(Debug)]
pub struct Watch {
    resource: ResourceInfo,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
    table: bool,
    /// Events up to this resourceVersion have been sent.
    pub rv: u64,
    /// `timeoutSeconds`, capped.
    pub timeout: std::time::Duration,
}

/// `?watch=true` (or `1`) on a GET.
pub fn is_watch(method: &Method, uri: &Uri) -> bool {
    method == Method::GET
        && parse_query(uri.query())
            .get("watch")
            .is_some_and(|w| w == "true" || w == "1")
}

type Query = BTreeMap<String, String>;

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn parse_query(q: Option<&str>) -> Query {
    q.unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}

fn json_response(code: u16, body: &Value) -> Response<Bytes> {
    let text = serde_json::to_vec(body).unwrap_or_default();
    let mut resp = Response::new(Bytes::from(text));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    resp
}

fn error_response(e: &ApiError) -> Response<Bytes> {
    json_response(e.code, &e.to_status())
}

/// Media types a write (POST, PUT, PATCH) may carry: kube-apiserver's
/// serializers and patch types.
const WRITE_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// Refusals before routing. The server listens on loopback, but a web page
/// can still reach it: through DNS rebinding (a name the page controls made
/// to resolve to 127.0.0.1, sent with that name as Host), hence the Host
/// check; and through cross-site POSTs, which browsers send without asking
/// only as text/plain, form types or no type at all, hence the media type
/// check (kube-apiserver answers other types 415 too). A request without
/// Host (HTTP/1.0, or [`ApiServer::handle`] called directly) comes from no
/// browser and passes.
fn guard(method: &Method, headers: &HeaderMap, content_type: Option<&str>) -> Result<(), ApiError> {
    if let Some(host) = headers.get(header::HOST) {
        let text = String::from_utf8_lossy(host.as_bytes());
        if !is_loopback_host(&text) {
            return Err(ApiError::new(
                403,
                "Forbidden",
                format!(
                    "Host {:?} is not a loopback name or address: the embedded API server answers \
                     only requests addressed to localhost, 127.0.0.0/8 or [::1] \
                     (a guard against DNS rebinding)",
                    truncate(&text)
                ),
            ));
        }
    }
    if matches!(*method, Method::POST | Method::PUT | Method::PATCH) {
        let mime = content_type
            .and_then(|c| c.split(';').next())
            .map(|m| m.trim().to_ascii_lowercase())
            .unwrap_or_default();
        if !WRITE_TYPES.contains(&mime.as_str()) {
            let got = content_type.unwrap_or("no Content-Type");
            return Err(ApiError::unsupported_media(got, WRITE_TYPES));
        }
    }
    Ok(())
}

/// `localhost`, an address in 127.0.0.0/8 or `::1` (in brackets), each with
/// or without a port.
fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        // [v6] or [v6]:port
        let Some((addr, after)) = rest.split_once(']') else {
            return false;
        };
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(is_port)) {
            return false;
        }
        return addr
            .parse::<std::net::Ipv6Addr>()
            .is_ok_and(|a| a.is_loopback());
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if is_port(port) => name,
            Some(_) => return false,
            None => host,
        }
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|a| a.is_loopback())
}

fn is_port(s: &str) -> bool {
    !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit())
}

/// What a request path names.
struct Target {
    resource: ResourceInfo,
    namespace: Option<String>,
    name: Option<String>,
    sub: Option<String>,
}

enum PatchKind {
    Strategic,
    Merge,
    Json,
    Apply,
}

const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// Write parameters shared by create, update and patch.
struct WriteCtx<'a> {
    manager: String,
    operation: &'a str,
    subresource: Option<&'a str>,
    dry_run: bool,
    strict: bool,
    /// `fieldValidation=Warn`: unknown fields become Warning headers.
    warn: bool,
    applied: Option<fields::FieldSet>,
}

impl WriteCtx<'_> {
    /// A write that comes from inside the server (seeding, built-ins), not
    /// from a request.
    fn direct(manager: String) -> Self {
        WriteCtx {
            manager,
            operation: "Update",
            subresource: None,
            dry_run: false,
            strict: false,
            warn: false,
            applied: None,
        }
    }
}

fn is_dns_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && !s.starts_with(['-', '.'])
        && !s.ends_with(['-', '.'])
}

fn schema_of(r: &ResourceInfo) -> Option<Schema<'static>> {
    PatchMeta::builtin().root(&r.api_version(), &r.kind)
}

impl ApiServer {
    pub fn new() -> ApiServer {
        let server = ApiServer::default();
        {
            let mut st = server.store.lock();
            for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
                let obj =
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
                let ctx = WriteCtx::direct("kube-apiserver".into());
                let r = resources::builtin().remove(0);
                // Built-in namespaces are valid by construction; nothing to report.
                let _ = commit(&mut st, &r, None, obj, &ctx);
            }
        }
        server
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn set_address(&self, addr: &str) {
        *self.address.lock().unwrap_or_else(|e| e.into_inner()) = addr.to_string();
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn clear_requests(&self) {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Create or replace an object directly (seeding): defaulted, with uid,
    /// resourceVersion, timestamps and managedFields for `manager`.
    pub fn put_object_as(&self, obj: Value, manager: &str) -> Result<Value, ApiError> {
        let mut st = self.store.lock();
        let mut obj = obj;
        let (r, ns, name) = st.locate(&mut obj)?;
        let old = st
            .objects
            .get(&store::key(&r, ns.as_deref(), &name))
            .cloned();
        let ctx = WriteCtx::direct(manager.to_string());
        let result = commit(&mut st, &r, old.as_ref(), obj, &ctx);
        drop(st);
        self.notify();
        result
    }

    /// Seed an object as given: see [`Store::put_object`].
    pub fn put_object(&self, obj: Value) -> Result<Value, ApiError> {
        self.store.put_object(obj)
    }

    /// Convenience over [`ApiServer::handle`] for seeding and tests:
    /// `request("PATCH", "/apis/apps/v1/namespaces/demo/deployments/web/scale?fieldManager=kubectl-scale",
    /// Some("application/merge-patch+json"), Some(&json!({"spec": {"replicas": 2}})))`.
    /// Returns the status code and the JSON body (`Null` if not JSON).
    pub fn request(
        &self,
        method: &str,
        path_and_query: &str,
        content_type: Option<&str>,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let (Ok(method), Ok(uri)) = (
            Method::from_bytes(method.as_bytes()),
            path_and_query.parse::<Uri>(),
        ) else {
            let e = ApiError::bad_request(format!("bad request line {method} {path_and_query}"));
            return (400, e.to_status());
        };
        let mut headers = HeaderMap::new();
        if let Some(ct) = content_type.and_then(|c| header::HeaderValue::from_str(c).ok()) {
            headers.insert(header::CONTENT_TYPE, ct);
        }
        let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        let resp = self.handle(&method, &uri, &headers, &bytes);
        let code = resp.status().as_u16();
        (
            code,
            serde_json::from_slice(resp.body()).unwrap_or(Value::Null),
        )
    }

    /// Handle one request.
    pub fn handle(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Response<Bytes> {
        let query = parse_query(uri.query());
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let user_agent = headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let parsed = if body.is_empty() {
            None
        } else {
            serde_json::from_slice::<Value>(body)
                .ok()
                .or_else(|| yaml_value(body).ok())
        };
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(RecordedRequest {
                method: method.to_string(),
                path: uri.path().to_string(),
                query: query.clone(),
                content_type: content_type.clone(),
                user_agent: user_agent.clone(),
                body: parsed,
            });
        if let Err(e) = guard(method, headers, content_type.as_deref()) {
            return error_response(&e);
        }
        let accept = headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        // Like the real server: no fieldManager means the User-Agent's
        // first word ("kubectl" from "kubectl/v1.32.4 (linux/amd64) ...").
        let mut query = query;
        if !query.contains_key("fieldManager")
            && let Some(ua) = &user_agent
        {
            let prefix = ua.split('/').next().unwrap_or_default().trim();
            if !prefix.is_empty() {
                query.insert("fieldManager".into(), prefix.chars().take(128).collect());
            }
        }
        if is_watch(method, uri) {
            // Without a socket a watch ends at once: its first events, as a JSON array.
            return match self.watch_start(uri, headers) {
                Ok((_, events)) => json_response(200, &Value::Array(events)),
                Err(e) => error_response(&e),
            };
        }
        if method == Method::GET
            && (uri.path() == "/api" || uri.path() == "/apis")
            && accept.split(',').any(|a| {
                a.contains("g=apidiscovery.k8s.io")
                    && a.contains("v=v2;")
                    && a.contains("as=APIGroupDiscoveryList")
            })
        {
            let resources = self.store.lock().resources();
            let mut resp = json_response(200, &aggregated(uri.path() == "/api", &resources));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static(
                    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
                ),
            );
            return resp;
        }
        self.store.lock().warnings.clear();
        let result = self.route(
            method,
            uri.path(),
            &query,
            content_type.as_deref(),
            accept,
            body,
        );
        self.notify();
        let warnings = std::mem::take(&mut self.store.lock().warnings);
        let mut resp = match result {
            Ok((code, v)) => json_response(code, &v),
            Err(e) => error_response(&e),
        };
        for w in warnings {
            // RFC 7234 warn-code 299, as kube-apiserver sends them.
            let text = format!("299 - {}", Value::from(w));
            if let Ok(v) = header::HeaderValue::from_str(&text) {
                resp.headers_mut().append(header::WARNING, v);
            }
        }
        resp
    }

    fn notify(&self) {
        self.store.notify();
    }

    /// Wakes up when something changed.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.store.subscribe()
    }

    /// Begin a watch: check the request, and the events to send first
    /// (ADDED for every matching object, or the changes after the given
    /// resourceVersion).
    pub fn watch_start(
        &self,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Result<(Watch, Vec<Value>), ApiError> {
        let query = parse_query(uri.query());
        let segs: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
        let st = self.store.lock();
        let resources = st.resources();
        let t = match segs.as_slice() {
            ["api", "v1", rest @ ..] => target("", "v1", rest, &resources)?,
            ["apis", group, version, rest @ ..] => target(group, version, rest, &resources)?,
            _ => return Err(ApiError::method_not_allowed("WATCH")),
        };
        if t.sub.is_some() {
            return Err(ApiError::method_not_allowed("WATCH"));
        }
        let labels = LabelSelector::parse(
            query
                .get("labelSelector")
                .map(String::as_str)
                .unwrap_or_default(),
        )
        .map_err(ApiError::bad_request)?;
        let mut field_sel = query.get("fieldSelector").cloned().unwrap_or_default();
        if let Some(name) = &t.name {
            if !field_sel.is_empty() {
                field_sel.push(',');
            }
            field_sel.push_str(&format!("metadata.name={name}"));
        }
        let fields = FieldSelector::parse(&field_sel).map_err(ApiError::bad_request)?;
        let timeout = query
            .get("timeoutSeconds")
            .and_then(|t| t.parse::<u64>().ok())
            .unwrap_or(1800)
            .min(3600);
        let accept = headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let mut w = Watch {
            resource: t.resource,
            namespace: t.namespace,
            labels,
            fields,
            table: accept.contains("as=Table"),
            rv: st.rv,
            timeout: std::time::Duration::from_secs(timeout),
        };
        let since: u64 = query
            .get("resourceVersion")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if since == 0 {
            let objects: Vec<Value> = st
                .objects
                .iter()
                .filter(|(k, o)| w.selects(k, o))
                .map(|(_, o)| w.event("ADDED", o))
                .collect();
            return Ok((w, objects));
        }
        if st.events.front().is_some_and(|e| e.rv > since + 1) {
            let gone = ApiError::new(
                410,
                "Expired",
                format!("too old resource version: {since} ({})", st.rv),
            );
            return Ok((
                w,
                vec![json!({"type": "ERROR", "object": gone.to_status()})],
            ));
        }
        w.rv = since;
        let events = w.collect(&st);
        Ok((w, events))
    }

    /// The events after `w.rv` that it selects.
    pub fn watch_next(&self, w: &mut Watch) -> Vec<Value> {
        let st = self.store.lock();
        w.collect(&st)
    }

    fn route(
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
            (Some(name), Some(sub)) => {
                let k = store::key(r, ns, name);
                let Some(old) = st.objects.get(&k).cloned() else {
                    return Err(ApiError::not_found(r, name));
                };
                let manager = manager.unwrap_or_else(|| "unknown".into());
                match sub {
                    "scale" if r.scale => {
                        let current = scale_of(&old);
                        let new_scale = match *method {
                            Method::GET => return Ok((200, current)),
                            Method::PUT => json_body(content_type, body)?,
                            Method::PATCH => {
                                let kind = patch_kind(content_type)?;
                                let patch = patch_body(&kind, body)?;
                                match kind {
                                    PatchKind::Json => json_patch_apply(&current, &patch)?,
                                    _ => apply_merge(&current, &patch),
                                }
                            }
                            _ => return Err(ApiError::method_not_allowed(method.as_str())),
                        };
                        precondition(r, name, &old, &new_scale)?;
                        let replicas = new_scale["spec"]["replicas"].clone();
                        if !replicas.is_null() && !replicas.is_i64() {
                            return Err(ApiError::bad_request("spec.replicas must be an integer"));
                        }
                        let mut new = old.clone();
                        new["spec"]["replicas"] = if replicas.is_null() {
                            json!(0)
                        } else {
                            replicas
                        };
                        let ctx = WriteCtx {
                            manager,
                            operation: "Update",
                            subresource: Some("scale"),
                            dry_run,
                            strict: false,
                            warn: false,
                            applied: None,
                        };
                        let stored = write(&mut st, r, Some(&old), new, &ctx)?;
                        Ok((200, scale_of(&stored)))
                    }
                    "status" if r.status => {
                        let new_status = match *method {
                            Method::GET => return Ok((200, out(r, &old))),
                            Method::PUT => json_body(content_type, body)?["status"].clone(),
                            Method::PATCH => {
                                let kind = patch_kind(content_type)?;
                                let patch = patch_body(&kind, body)?;
                                apply_patch(r, &kind, &old, &patch)?["status"].clone()
                            }
                            _ => return Err(ApiError::method_not_allowed(method.as_str())),
                        };
                        let mut new = old.clone();
                        new["status"] = new_status;
                        if !dry_run {
                            new["metadata"]["resourceVersion"] = json!(st.next_rv());
                            st.put(k, new.clone());
                        }
                        Ok((200, out(r, &new)))
                    }
                    _ => Err(ApiError::not_found_path()),
                }
            }
        }
    }
}

impl Watch {
    fn selects(&self, key: &store::Key, o: &Value) -> bool {
        let r = &self.resource;
        key.0 == r.group
            && key.1 == r.plural
            && self.namespace.as_deref().is_none_or(|n| n == key.2)
            && self.labels.matches(o)
            && self.fields.matches(o)
    }

    fn event(&self, kind: &str, o: &Value) -> Value {
        let o = out(&self.resource, o);
        let object = if self.table {
            let list = json!({"metadata": {"resourceVersion": o["metadata"]["resourceVersion"]}, "items": [o]});
            table(&self.resource, &list)
        } else {
            o
        };
        json!({"type": kind, "object": object})
    }

    fn collect(&mut self, st: &State) -> Vec<Value> {
        let events = st
            .events
            .iter()
            .filter(|e| e.rv > self.rv && self.selects(&e.key, &e.object))
            .map(|e| self.event(e.kind, &e.object))
            .collect();
        self.rv = st.rv;
        events
    }
}

fn yaml_value(body: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    serde_saphyr::from_str::<Value>(text).map_err(|e| e.to_string())
}

/// Whether DeleteOptions ask for a dry run (`"dryRun": ["All"]`); any
/// other value is refused, as kube-apiserver refuses it.
fn delete_options_dry_run(options: &Value) -> Result<bool, ApiError> {
    let values = match &options["dryRun"] {
        Value::Null => return Ok(false),
        Value::Array(values) => values,
        other => {
            return Err(ApiError::bad_request(format!(
                "DeleteOptions: dryRun must be a list of strings, not {}",
                truncate(&other.to_string())
            )));
        }
    };
    let mut dry_run = false;
    for v in values {
        match v.as_str() {
            Some("All") => dry_run = true,
            _ => {
                return Err(ApiError::bad_request(format!(
                    "Invalid dry run value: {}: supported values: \"All\"",
                    truncate(&v.to_string())
                )));
            }
        }
    }
    Ok(dry_run)
}

fn json_body(content_type: Option<&str>, body: &[u8]) -> Result<Value, ApiError> {
    let ct = content_type.unwrap_or("application/json");
    let mime = ct.split(';').next().unwrap_or_default().trim();
    let v = match mime {
        "application/json" | "" | "*/*" => serde_json::from_slice::<Value>(body).map_err(|e| {
            ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
        })?,
        "application/vnd.kubernetes.protobuf" => super::protobuf::decode(body).map_err(|e| {
            ApiError::unsupported_media(
                &format!("{mime}: {e}"),
                &["application/json", "application/yaml"],
            )
        })?,
        "application/yaml" => {
            yaml_value(body).map_err(|e| ApiError::bad_request(format!("yaml parse error: {e}")))?
        }
        other => {
            return Err(ApiError::unsupported_media(
                other,
                &["application/json", "application/yaml"],
            ));
        }
    };
    if !v.is_object() {
        return Err(ApiError::bad_request(format!(
            "couldn't get version/kind; json parse error: the body is not an object: {}",
            truncate(&v.to_string())
        )));
    }
    Ok(v)
}

fn truncate(s: &str) -> String {
    s.chars().take(80).collect()
}

fn patch_kind(content_type: Option<&str>) -> Result<PatchKind, ApiError> {
    let ct = content_type.unwrap_or_default();
    let mime = ct.split(';').next().unwrap_or_default().trim();
    Ok(match mime {
        "application/strategic-merge-patch+json" => PatchKind::Strategic,
        "application/merge-patch+json" => PatchKind::Merge,
        "application/json-patch+json" => PatchKind::Json,
        "application/apply-patch+yaml" | "application/apply-patch+json" => PatchKind::Apply,
        other => return Err(ApiError::unsupported_media(other, PATCH_TYPES)),
    })
}

fn patch_body(kind: &PatchKind, body: &[u8]) -> Result<Value, ApiError> {
    let v = match kind {
        PatchKind::Apply => yaml_value(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?,
        _ => serde_json::from_slice::<Value>(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?,
    };
    match (kind, &v) {
        (PatchKind::Json, Value::Array(_)) => Ok(v),
        (PatchKind::Json, _) => Err(ApiError::bad_request(
            "json patch must be an array of operations",
        )),
        (_, Value::Object(_)) => Ok(v),
        _ => Err(ApiError::bad_request(format!(
            "patch is not a JSON object: {}",
            truncate(&v.to_string())
        ))),
    }
}

fn json_patch_apply(doc: &Value, patch: &Value) -> Result<Value, ApiError> {
    let p: json_patch::Patch = serde_json::from_value(patch.clone())
        .map_err(|e| ApiError::bad_request(format!("error decoding json patch: {e}")))?;
    let mut v = doc.clone();
    json_patch::patch(&mut v, &p).map_err(|e| {
        ApiError::new(
            422,
            "Invalid",
            format!("the json patch could not be applied: {e}"),
        )
    })?;
    Ok(v)
}

fn merge_strategic(r: &ResourceInfo, old: &Value, patch: &Value) -> Result<Value, ApiError> {
    match schema_of(r) {
        Some(schema) => apply_strategic(old, patch, Some(schema))
            .map_err(|e| ApiError::bad_request(format!("unable to apply the patch: {e}"))),
        None => Ok(apply_merge(old, patch)),
    }
}

fn apply_patch(
    r: &ResourceInfo,
    kind: &PatchKind,
    old: &Value,
    patch: &Value,
) -> Result<Value, ApiError> {
    match kind {
        PatchKind::Strategic => {
            if schema_of(r).is_none() {
                return Err(ApiError::unsupported_media(
                    "application/strategic-merge-patch+json",
                    &[
                        "application/json-patch+json",
                        "application/merge-patch+json",
                        "application/apply-patch+yaml",
                    ],
                ));
            }
            merge_strategic(r, old, patch)
        }
        PatchKind::Merge => Ok(apply_merge(old, patch)),
        PatchKind::Json => json_patch_apply(old, patch),
        PatchKind::Apply => merge_strategic(r, old, patch),
    }
}

/// Server-side apply: fields this manager applied before and no longer
/// applies are removed, unless another manager owns them too.
fn drop_unowned_apply_fields(old: &Value, manager: &str, applied: &fields::FieldSet) -> Value {
    let entries = old["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut mine = fields::FieldSet::new();
    let mut others = fields::FieldSet::new();
    for e in &entries {
        let set = fields::from_fields_v1(&e["fieldsV1"]);
        if e["manager"] == manager && e["operation"] == "Apply" {
            mine.extend(set);
        } else {
            others.extend(set);
        }
    }
    let mut v = old.clone();
    for p in mine.difference(applied) {
        if others.contains(p) || !p.iter().all(|pe| pe.starts_with("f:")) {
            continue;
        }
        let keys: Vec<&str> = p.iter().filter_map(|pe| pe.strip_prefix("f:")).collect();
        if let Some((last, parents)) = keys.split_last() {
            let pointer: String = parents
                .iter()
                .map(|k| format!("/{}", k.replace('~', "~0").replace('/', "~1")))
                .collect();
            if let Some(m) = v.pointer_mut(&pointer).and_then(Value::as_object_mut) {
                m.remove(*last);
            }
        }
    }
    v
}

/// Server-side apply without force: a field another manager owns with a
/// different value is a conflict (409).
fn apply_conflicts(
    r: &ResourceInfo,
    old: &Value,
    patch: &Value,
    manager: &str,
    applied: &fields::FieldSet,
) -> Result<(), ApiError> {
    let mut conflicts: Vec<(String, String)> = Vec::new();
    for e in old["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if e["manager"] == manager && e["operation"] == "Apply" {
            continue;
        }
        let owner = e["manager"].as_str().unwrap_or_default().to_string();
        let theirs = fields::from_fields_v1(&e["fieldsV1"]);
        for p in applied.intersection(&theirs) {
            if p.last().is_some_and(|pe| pe == ".") {
                continue;
            }
            if fields::lookup(old, p) != fields::lookup(patch, p) {
                conflicts.push((owner.clone(), fields::display(p)));
            }
        }
    }
    if conflicts.is_empty() {
        return Ok(());
    }
    let api_version = r.api_version();
    let lines: Vec<String> = conflicts
        .iter()
        .map(|(m, f)| format!("conflict with \"{m}\" using {api_version}: {f}"))
        .collect();
    let message = if lines.len() == 1 {
        format!("Apply failed with 1 conflict: {}", lines[0])
    } else {
        format!(
            "Apply failed with {} conflicts: {}",
            lines.len(),
            lines.join("\n")
        )
    };
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(m, f)| {
            json!({"reason": "FieldManagerConflict",
            "message": format!("conflict with \"{m}\" using {api_version}"), "field": f})
        })
        .collect();
    Err(ApiError {
        details: Some(json!({"name": old["metadata"]["name"], "group": r.group,
            "kind": r.plural, "causes": causes})),
        ..ApiError::new(409, "Conflict", message)
    })
}

/// A patch or update that carries metadata.resourceVersion must match.
/// DeleteOptions.preconditions (uid, resourceVersion), as kube-apiserver
/// checks them: 409 Conflict when the object is not the one named.
fn delete_preconditions(
    r: &ResourceInfo,
    name: &str,
    old: &Value,
    options: &Value,
) -> Result<(), ApiError> {
    for (field, label) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
        if let Some(want) = options["preconditions"][field].as_str()
            && old["metadata"][field].as_str() != Some(want)
        {
            let mut e = ApiError::conflict(r, name);
            e.message = format!(
                "Operation cannot be fulfilled on {} \"{name}\": Precondition failed: {label} in precondition: {want}, {label} in object meta: {}",
                r.qualified(),
                old["metadata"][field].as_str().unwrap_or_default()
            );
            return Err(e);
        }
    }
    Ok(())
}

fn precondition(r: &ResourceInfo, name: &str, old: &Value, new: &Value) -> Result<(), ApiError> {
    let want = &new["metadata"]["resourceVersion"];
    if let Some(w) = want.as_str()
        && !w.is_empty()
        && old["metadata"]["resourceVersion"].as_str() != Some(w)
    {
        return Err(ApiError::conflict(r, name));
    }
    Ok(())
}

fn check_identity(
    r: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    obj: &Value,
) -> Result<(), ApiError> {
    if let Some(n) = obj["metadata"]["name"].as_str()
        && n != name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        )));
    }
    if r.namespaced
        && let Some(n) = obj["metadata"]["namespace"].as_str()
        && Some(n) != ns
        && !n.is_empty()
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

/// The object as returned to clients: apiVersion of the served version.
fn out(r: &ResourceInfo, o: &Value) -> Value {
    let mut o = o.clone();
    o["apiVersion"] = json!(r.api_version());
    o["kind"] = json!(r.kind);
    o
}

fn check_type(r: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    let kind = obj["kind"].as_str().unwrap_or_default();
    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
    if !kind.is_empty() && kind != r.kind {
        return Err(ApiError::bad_request(format!(
            "{kind} in version {api_version:?} cannot be handled as a {}: the object kind does not match the resource",
            r.kind
        )));
    }
    if !api_version.is_empty() && api_version != r.api_version() {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            r.api_version()
        )));
    }
    if !obj["metadata"].is_null() && !obj["metadata"].is_object() {
        return Err(ApiError::bad_request(format!(
            "{} in version {:?} cannot be handled as a {}: metadata must be an object",
            r.kind, r.version, r.kind
        )));
    }
    obj["apiVersion"] = json!(r.api_version());
    obj["kind"] = json!(r.kind);
    Ok(())
}

fn create(
    st: &mut State,
    r: &ResourceInfo,
    ns: Option<&str>,
    mut obj: Value,
    ctx: &WriteCtx<'_>,
) -> Result<Value, ApiError> {
    check_type(r, &mut obj)?;
    if r.namespaced {
        let Some(ns) = ns else {
            return Err(ApiError::not_found_path());
        };
        match obj["metadata"]["namespace"].as_str() {
            Some(n) if !n.is_empty() && n != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => obj["metadata"]["namespace"] = json!(ns),
        }
        let nsr = &resources::builtin()[0];
        if !st.objects.contains_key(&store::key(nsr, None, ns)) {
            return Err(ApiError::namespace_not_found(ns));
        }
    } else if let Some(m) = obj["metadata"].as_object_mut() {
        m.remove("namespace");
    }
    let mut name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if name.is_empty() {
        if let Some(prefix) = obj["metadata"]["generateName"].as_str() {
            let uid = st.next_uid(prefix);
            name = format!("{prefix}{}", &uid[..5]);
            obj["metadata"]["name"] = json!(name);
        } else {
            return Err(ApiError::invalid(
                r,
                "",
                &[Cause::new(
                    "metadata.name",
                    "FieldValueRequired",
                    "Required value: name or generateName is required",
                )],
            ));
        }
    }
    if !is_dns_name(&name) {
        return Err(ApiError::invalid(
            r,
            &name,
            &[Cause::new(
                "metadata.name",
                "FieldValueInvalid",
                format!(
                    "Invalid value: {name:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
                ),
            )],
        ));
    }
    if st.objects.contains_key(&store::key(r, ns, &name)) {
        return Err(ApiError::already_exists(r, &name));
    }
    if let Some(m) = obj["metadata"].as_object_mut() {
        for k in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
        ] {
            m.remove(k);
        }
    }
    write(st, r, None, obj, ctx)
}

fn update(
    st: &mut State,
    r: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    mut obj: Value,
    ctx: &WriteCtx<'_>,
) -> Result<Value, ApiError> {
    check_type(r, &mut obj)?;
    check_identity(r, ns, name, &obj)?;
    let Some(old) = st.objects.get(&store::key(r, ns, name)).cloned() else {
        return Err(ApiError::not_found(r, name));
    };
    precondition(r, name, &old, &obj)?;
    obj["metadata"]["name"] = json!(name);
    if let Some(ns) = ns {
        obj["metadata"]["namespace"] = json!(ns);
    }
    write(st, r, Some(&old), obj, ctx)
}

/// Default, validate, stamp and store (unless dry run) a new state.
fn write(
    st: &mut State,
    r: &ResourceInfo,
    old: Option<&Value>,
    mut new: Value,
    ctx: &WriteCtx<'_>,
) -> Result<Value, ApiError> {
    let name = new["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let schema = schema_of(r);
    if (ctx.strict || ctx.warn)
        && let Some(s) = schema
    {
        let unknown = validate::unknown_fields(&new, s);
        if ctx.warn {
            st.warnings.extend(
                unknown
                    .iter()
                    .map(|u| format!("unknown field \"{}\"", u.trim_start_matches('.'))),
            );
        } else if !unknown.is_empty() {
            let list: Vec<String> = unknown
                .iter()
                .map(|u| format!("unknown field \"{}\"", u.trim_start_matches('.')))
                .collect();
            return Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: strict decoding error: {}",
                r.kind,
                r.version,
                r.kind,
                list.join(", ")
            )));
        }
    }
    // Types the real server decodes strictly: bad values fail decoding (400).
    decode_errors(r, &new)?;
    // Status belongs to the status subresource: main-resource writes keep it.
    if r.status && ctx.subresource.is_none() {
        match old {
            Some(o) if !o["status"].is_null() => new["status"] = o["status"].clone(),
            _ => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
    }
    let mut alloc = Vec::new();
    {
        let mut next_ip = || {
            let mut ip = st.next_ip();
            while st.ip_in_use(&ip) {
                ip = st.next_ip();
            }
            alloc.push(ip.clone());
            ip
        };
        defaults::apply(&mut new, &mut next_ip);
    }
    let causes = validate::validate(&new, old);
    if !causes.is_empty() {
        return Err(ApiError::invalid(r, &name, &causes));
    }
    let spec_of = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("metadata");
            m.remove("status");
        }
        v
    };
    let now = store::now();
    match old {
        Some(o) => {
            for k in ["uid", "creationTimestamp", "generation", "resourceVersion"] {
                new["metadata"][k] = o["metadata"][k].clone();
            }
            if has_generation(r) && spec_of(o) != spec_of(&new) {
                let g = o["metadata"]["generation"].as_i64().unwrap_or(1);
                new["metadata"]["generation"] = json!(g + 1);
            }
        }
        None => {
            let uid = st.next_uid(&name);
            new["metadata"]["uid"] = json!(uid);
            new["metadata"]["creationTimestamp"] = json!(now);
            if has_generation(r) {
                new["metadata"]["generation"] = json!(1);
            }
        }
    }
    // A request that rewrites managedFields (kubectl's client-side to
    // server-side apply migration) sets the baseline; otherwise the stored
    // ones are kept whatever the body says.
    let baseline = old.map(|o| {
        let mut o = o.clone();
        let sent = &new["metadata"]["managedFields"];
        if sent.is_array() && *sent != o["metadata"]["managedFields"] {
            o["metadata"]["managedFields"] = sent.clone();
        }
        o
    });
    if let Some(o) = &baseline {
        new["metadata"]["managedFields"] = o["metadata"]["managedFields"].clone();
    }
    simulate_status(r, &mut new);
    let api_version = r.api_version();
    fields::record(
        baseline.as_ref(),
        &mut new,
        schema,
        &Write {
            manager: &ctx.manager,
            operation: ctx.operation,
            subresource: ctx.subresource,
            api_version: &api_version,
            time: &now,
            applied: ctx.applied.clone(),
        },
    );
    if let Some(o) = old {
        // A write that changes nothing keeps the resourceVersion.
        let strip = |v: &Value| {
            let mut v = v.clone();
            if let Some(m) = v["metadata"].as_object_mut() {
                m.remove("resourceVersion");
                m.remove("managedFields");
            }
            v
        };
        if strip(o) == strip(&new) {
            return Ok(out(r, o));
        }
    }
    if ctx.dry_run {
        if old.is_none()
            && let Some(m) = new["metadata"].as_object_mut()
        {
            m.remove("resourceVersion");
        }
        return Ok(out(r, &new));
    }
    new["metadata"]["resourceVersion"] = json!(st.next_rv());
    if let Some(m) = new["metadata"].as_object_mut() {
        m.retain(|_, v| !v.is_null());
    }
    let ns = new["metadata"]["namespace"].as_str().map(str::to_string);
    st.put(store::key(r, ns.as_deref(), &name), new.clone());
    Ok(out(r, &new))
}

/// What fails to decode into the Go types before validation even starts.
fn decode_errors(r: &ResourceInfo, o: &Value) -> Result<(), ApiError> {
    use base64::Engine;
    let fail = |detail: String| {
        Err(ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {detail}",
            r.kind, r.version, r.kind
        )))
    };
    let md = &o["metadata"];
    for field in ["labels", "annotations"] {
        if let Some(m) = md[field].as_object()
            && let Some((k, v)) = m.iter().find(|(_, v)| !v.is_string())
        {
            return fail(format!(
                "json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{field} of type string (key {k:?})",
                json_type(v)
            ));
        }
    }
    if r.group.is_empty() && r.kind == "Secret" {
        for field in ["data"] {
            for (k, v) in o[field].as_object().into_iter().flatten() {
                let ok = v
                    .as_str()
                    .is_some_and(|s| base64::engine::general_purpose::STANDARD.decode(s).is_ok());
                if !ok {
                    return fail(format!("illegal base64 data in data[{k:?}]"));
                }
            }
        }
    }
    if r.group.is_empty()
        && r.kind == "ConfigMap"
        && let Some((k, v)) = o["data"]
            .as_object()
            .into_iter()
            .flatten()
            .find(|(_, v)| !v.is_string())
    {
        return fail(format!(
            "json: cannot unmarshal {} into Go struct field ConfigMap.data of type string (key {k:?})",
            json_type(v)
        ));
    }
    Ok(())
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Core and RBAC kinds carry no metadata.generation on a real server.
pub(crate) fn has_generation(r: &ResourceInfo) -> bool {
    !(r.group.is_empty() || r.group == "rbac.authorization.k8s.io")
}

/// Controllers do not run; workloads report their desired state as reached,
/// CRDs as established.
fn simulate_status(r: &ResourceInfo, o: &mut Value) {
    let generation = o["metadata"]["generation"].clone();
    let now = store::now();
    // A condition as a controller would set it; its times stay put while
    // it holds, so a no-op write changes nothing.
    let previous = o["status"]["conditions"].clone();
    let condition = |ty: &str, reason: &str, message: String, times: &[&str]| {
        let old = previous
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == ty && c["status"] == "True");
        let mut c = json!({"type": ty, "status": "True", "reason": reason, "message": message});
        for t in times {
            c[*t] = old.map(|o| o[*t].clone()).unwrap_or_else(|| json!(now));
        }
        c
    };
    match (r.group.as_str(), r.kind.as_str()) {
        ("batch", "Job") => {
            let n = o["spec"]["completions"].as_i64().unwrap_or(1);
            let start = o["status"]["startTime"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| now.clone());
            let times = ["lastProbeTime", "lastTransitionTime"];
            o["status"] = json!({
                "startTime": start,
                "completionTime": o["status"]["completionTime"].as_str().unwrap_or(&start),
                "succeeded": n,
                "ready": 0,
                "terminating": 0,
                "uncountedTerminatedPods": {},
                "conditions": [
                    condition("SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods".into(), &times),
                    condition("Complete", "CompletionsReached", "Reached expected number of succeeded pods".into(), &times),
                ],
            });
        }
        ("", "Pod") => {
            let times = ["lastProbeTime", "lastTransitionTime"];
            let statuses: Vec<Value> = o["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    json!({"name": c["name"], "image": c["image"], "ready": true,
                    "started": true, "restartCount": 0,
                    "state": {"running": {"startedAt": o["metadata"]["creationTimestamp"]}}})
                })
                .collect();
            let mut conditions = Vec::new();
            for ty in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
                let mut c = condition(ty, "", String::new(), &times);
                if let Some(m) = c.as_object_mut() {
                    m.remove("reason");
                    m.remove("message");
                    m.insert("lastProbeTime".into(), Value::Null);
                }
                conditions.push(c);
            }
            o["status"] = json!({
                "phase": "Running",
                "conditions": conditions,
                "containerStatuses": statuses,
                "hostIP": "10.0.0.1",
                "podIP": "10.244.0.10",
                "qosClass": "BestEffort",
                "startTime": o["metadata"]["creationTimestamp"],
            });
        }
        ("apps", "Deployment" | "StatefulSet" | "ReplicaSet") => {
            let n = o["spec"]["replicas"].as_i64().unwrap_or(1);
            let mut s = json!({"observedGeneration": generation, "replicas": n,
                "readyReplicas": n, "availableReplicas": n});
            match r.kind.as_str() {
                "Deployment" => {
                    s["updatedReplicas"] = json!(n);
                    let name = o["metadata"]["name"].as_str().unwrap_or_default();
                    let times = ["lastUpdateTime", "lastTransitionTime"];
                    s["conditions"] = json!([
                        condition(
                            "Available",
                            "MinimumReplicasAvailable",
                            "Deployment has minimum availability.".into(),
                            &times
                        ),
                        condition(
                            "Progressing",
                            "NewReplicaSetAvailable",
                            format!("ReplicaSet \"{name}\" has successfully progressed."),
                            &times
                        ),
                    ]);
                }
                "StatefulSet" => {
                    s["currentReplicas"] = json!(n);
                    s["updatedReplicas"] = json!(n);
                }
                _ => s["fullyLabeledReplicas"] = json!(n),
            }
            if n == 0 {
                // Zero counts are omitted by the real server.
                if let Some(m) = s.as_object_mut() {
                    m.retain(|k, _| {
                        k == "observedGeneration" || k == "replicas" || k == "conditions"
                    });
                }
            }
            o["status"] = s;
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            let storage: Vec<Value> = o["spec"]["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|v| v["storage"] == true)
                .map(|v| v["name"].clone())
                .collect();
            o["status"] = json!({
                "acceptedNames": o["spec"]["names"].clone(),
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                     "message": "no conflicts found"},
                    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                     "message": "the initial names have been accepted"},
                ],
                "storedVersions": storage,
            });
        }
        _ => {}
    }
}

/// Delete an object and whatever dies with it.
fn remove(st: &mut State, r: &ResourceInfo, ns: Option<&str>, name: &str) {
    let removed = st.delete(&store::key(r, ns, name));
    let doomed: Vec<store::Key> = match (r.group.as_str(), r.plural.as_str()) {
        ("", "namespaces") => st
            .objects
            .keys()
            .filter(|(_, _, ons, _)| ons == name)
            .cloned()
            .collect(),
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            let crd = removed.unwrap_or_default();
            let g = crd["spec"]["group"].as_str().unwrap_or_default();
            let p = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
            st.objects
                .keys()
                .filter(|(og, op, _, _)| og == g && op == p)
                .cloned()
                .collect()
        }
        _ => Vec::new(),
    };
    for k in doomed {
        st.delete(&k);
    }
}

fn list(st: &State, r: &ResourceInfo, ns: Option<&str>, query: &Query) -> Result<Value, ApiError> {
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

/// Human age as kubectl prints it: `45s`, `12m`, `3h`, `2d`.
fn age(created: &Value) -> String {
    let Some(t) = created
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    else {
        return "<unknown>".into();
    };
    let secs = jiff::Timestamp::now().as_second() - t.as_second();
    match secs.max(0) {
        s if s < 120 => format!("{s}s"),
        s if s < 3 * 3600 => format!("{}m", s / 60),
        s if s < 2 * 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// The extra cells of one row.
type Cells = fn(&Value) -> Vec<Value>;

/// A `meta.k8s.io/v1` Table for `kubectl get`: the usual columns of the
/// common kinds, name and age for the others.
fn table(r: &ResourceInfo, list: &Value) -> Value {
    let (columns, cells): (Vec<&str>, Cells) = match (r.group.as_str(), r.kind.as_str()) {
        ("apps", "Deployment" | "StatefulSet" | "ReplicaSet") => {
            (vec!["Ready", "Up-to-date", "Available"], |o| {
                let want = o["spec"]["replicas"].as_i64().unwrap_or(1);
                let ready = o["status"]["readyReplicas"].as_i64().unwrap_or(0);
                vec![
                    json!(format!("{ready}/{want}")),
                    json!(o["status"]["updatedReplicas"].as_i64().unwrap_or(0)),
                    json!(o["status"]["availableReplicas"].as_i64().unwrap_or(0)),
                ]
            })
        }
        ("", "Service") => (vec!["Type", "Cluster-IP", "External-IP", "Port(s)"], |o| {
            let ports: Vec<String> = o["spec"]["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| format!("{}/{}", p["port"], p["protocol"].as_str().unwrap_or("TCP")))
                .collect();
            vec![
                o["spec"]["type"].clone(),
                o["spec"]["clusterIP"].clone(),
                json!("<none>"),
                json!(if ports.is_empty() {
                    "<none>".to_string()
                } else {
                    ports.join(",")
                }),
            ]
        }),
        ("", "Secret") => (vec!["Type", "Data"], |o| {
            let n = o["data"].as_object().map(|m| m.len()).unwrap_or(0);
            vec![o["type"].clone(), json!(n)]
        }),
        ("", "ConfigMap") => (vec!["Data"], |o| {
            let n = o["data"].as_object().map(|m| m.len()).unwrap_or(0)
                + o["binaryData"].as_object().map(|m| m.len()).unwrap_or(0);
            vec![json!(n)]
        }),
        ("", "Namespace") => (vec!["Status"], |o| vec![o["status"]["phase"].clone()]),
        _ => (vec![], |_| vec![]),
    };
    let rows: Vec<Value> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            let mut c = vec![o["metadata"]["name"].clone()];
            c.extend(cells(o));
            c.push(json!(age(&o["metadata"]["creationTimestamp"])));
            json!({
                "cells": c,
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                           "metadata": o["metadata"]},
            })
        })
        .collect();
    let mut defs = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}),
    ];
    for c in columns {
        defs.push(
            json!({"name": c, "type": "string", "format": "", "description": c, "priority": 0}),
        );
    }
    defs.push(
        json!({"name": "Age", "type": "string", "format": "", "description": "Age", "priority": 0}),
    );
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": list["metadata"]["resourceVersion"]},
        "columnDefinitions": defs,
        "rows": rows,
    })
}

fn scale_of(o: &Value) -> Value {
    let md = &o["metadata"];
    let selector = o["spec"]["selector"]["matchLabels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": md["name"], "namespace": md["namespace"], "uid": md["uid"],
                     "resourceVersion": md["resourceVersion"], "creationTimestamp": md["creationTimestamp"]},
        "spec": {"replicas": o["spec"]["replicas"]},
        "status": {"replicas": o["status"]["replicas"].as_i64().unwrap_or(0), "selector": selector},
    })
}

fn target(
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

fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": super::GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// A version and its resources' discovery entries.
type VersionResources = (String, Vec<Value>);

/// Aggregated discovery (`apidiscovery.k8s.io/v2`): every group version
/// with its resources in one answer; `core`: the legacy group at `/api`.
fn aggregated(core: bool, resources: &[ResourceInfo]) -> Value {
    let mut groups: Vec<(String, Vec<VersionResources>)> = Vec::new();
    for r in resources.iter().filter(|r| r.group.is_empty() == core) {
        let mut subresources = Vec::new();
        if r.scale {
            subresources.push(json!({"subresource": "scale",
                "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                "verbs": ["get", "patch", "update"]}));
        }
        if r.status {
            subresources.push(json!({"subresource": "status",
                "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
                "verbs": ["get", "patch", "update"]}));
        }
        let main = &resources::api_resources(r)[0];
        let mut res = json!({
            "resource": r.plural,
            "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
            "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
            "singularResource": r.singular,
            "verbs": main["verbs"],
        });
        for k in ["shortNames", "categories"] {
            if let Some(v) = main.get(k) {
                res[k] = v.clone();
            }
        }
        if !subresources.is_empty() {
            res["subresources"] = json!(subresources);
        }
        let g = match groups.iter_mut().position(|(g, _)| *g == r.group) {
            Some(i) => i,
            None => {
                groups.push((r.group.clone(), Vec::new()));
                groups.len() - 1
            }
        };
        let versions = &mut groups[g].1;
        match versions.iter_mut().find(|(v, _)| *v == r.version) {
            Some((_, rs)) => rs.push(res),
            None => versions.push((r.version.clone(), vec![res])),
        }
    }
    let items: Vec<Value> = groups
        .into_iter()
        .map(|(g, versions)| {
            let versions: Vec<Value> = versions
                .into_iter()
                .map(|(v, rs)| json!({"version": v, "resources": rs, "freshness": "Current"}))
                .collect();
            json!({"metadata": {"name": g, "creationTimestamp": null}, "versions": versions})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {}, "items": items})
}

fn group_list(resources: &[ResourceInfo]) -> Value {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for r in resources.iter().filter(|r| !r.group.is_empty()) {
        match groups.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, vs)) => {
                if !vs.contains(&r.version) {
                    vs.push(r.version.clone());
                }
            }
            None => groups.push((r.group.clone(), vec![r.version.clone()])),
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(g, vs)| {
            let versions: Vec<Value> = vs
                .iter()
                .map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
                .collect();
            json!({"name": g, "versions": versions, "preferredVersion": versions[0]})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

fn resource_list(
    group: &str,
    version: &str,
    resources: &[ResourceInfo],
) -> Result<Value, ApiError> {
    let rs: Vec<Value> = resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .flat_map(resources::api_resources)
        .collect();
    if rs.is_empty() {
        return Err(ApiError::not_found_path());
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Ok(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": rs}))
}

/// Used by `new()`: create without request plumbing.
fn commit(
    st: &mut State,
    r: &ResourceInfo,
    old: Option<&Value>,
    obj: Value,
    ctx: &WriteCtx<'_>,
) -> Result<Value, ApiError> {
    match old {
        Some(o) => write(st, r, Some(o), obj, ctx),
        None => {
            let ns = obj["metadata"]["namespace"].as_str().map(str::to_string);
            create(st, r, ns.as_deref(), obj, ctx)
        }
    }
}
