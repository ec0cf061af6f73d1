//! HTTP plumbing: query decoding, responses, the pre-routing guard,
//! body decoding, and [`ApiServer::handle`], the entry of every request.

use super::discovery::aggregated;
use super::watch::is_watch;
use super::{ApiServer, Query, Recorded, Reply};
use crate::status::ApiError;
use bytes::Bytes;
use http::{HeaderMap, Method, Response, StatusCode, Uri, header};
use serde_json::Value;

pub(super) fn decode(s: &str) -> String {
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
    raw_json_response(
        code,
        Bytes::from(serde_json::to_vec(body).unwrap_or_default()),
    )
}

fn raw_json_response(code: u16, body: Bytes) -> Response<Bytes> {
    let mut resp = Response::new(body);
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

/// A header's value as text; `None` when absent or not visible ASCII.
pub(super) fn header_text(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Refusals before routing. The server listens on loopback, but a web page
/// can still reach it: through DNS rebinding (a name the page controls made
/// to resolve to 127.0.0.1, sent with that name as Host), hence the Host
/// check; and through cross-site POSTs, which browsers send without asking
/// only as text/plain, form types or no type at all, hence the media type
/// check (kube-apiserver answers other types 415 too). A request without
/// Host (HTTP/1.0, or [`ApiServer::handle`] called directly) comes from no
/// browser and passes.
pub(super) fn guard(
    method: &Method,
    headers: &HeaderMap,
    content_type: Option<&str>,
) -> Result<(), ApiError> {
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

impl ApiServer {
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
        let content_type = header_text(headers, header::CONTENT_TYPE).map(str::to_string);
        let user_agent = header_text(headers, header::USER_AGENT).map(str::to_string);
        if !self
            .forget_requests
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            // The body as it came: parsed only when the requests are read.
            self.requests
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Recorded {
                    method: method.to_string(),
                    path: uri.path().to_string(),
                    query: query.clone(),
                    content_type: content_type.clone(),
                    user_agent: user_agent.clone(),
                    body: Bytes::copy_from_slice(body),
                });
        }
        if let Err(e) = guard(method, headers, content_type.as_deref()) {
            return error_response(&e);
        }
        let accept = header_text(headers, header::ACCEPT).unwrap_or_default();
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
            Ok((code, Reply::Json(v))) => json_response(code, &v),
            Ok((code, Reply::Raw(bytes))) => raw_json_response(code, bytes),
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
}

/// A YAML body, read as kube-apiserver reads it (go-yaml's YAML 1.1 rules,
/// see [`kapply_core::yaml::read_value`]).
pub(super) fn yaml_value(body: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    kapply_core::yaml::read_value(text).map_err(|e| e.to_string())
}

pub(super) fn json_body(content_type: Option<&str>, body: &[u8]) -> Result<Value, ApiError> {
    let ct = content_type.unwrap_or("application/json");
    let mime = ct.split(';').next().unwrap_or_default().trim();
    let v = match mime {
        "application/json" | "" | "*/*" => serde_json::from_slice::<Value>(body).map_err(|e| {
            ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
        })?,
        "application/vnd.kubernetes.protobuf" => crate::protobuf::decode(body).map_err(|e| {
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

pub(super) fn truncate(s: &str) -> String {
    s.chars().take(80).collect()
}
