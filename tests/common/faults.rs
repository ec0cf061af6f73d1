//! Servers that misbehave, for the tests of timeouts and lost connections
//! (included with `#[path = "common/faults.rs"] mod faults;`).
//!
//! - [`silent`]: accepts connections and never answers (a proxy gone wrong).
//! - [`Faulty`]: the embedded API server's handler behind a listener whose
//!   [`Rule`] decides, request by request, to serve it, answer an error,
//!   stall after the headers, close mid-body, never answer (before or after
//!   the store changed), or die (listener and every open connection).

// Each test binary uses only some of these helpers.
#![allow(dead_code)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use kapply::server::ApiServer;
use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Accepts connections and holds them open without reading or answering.
/// Returns its URL; it lives as long as the runtime.
pub async fn silent() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    format!("http://{addr}")
}

/// Writes a kubeconfig at `path` whose one context, `context`, names the
/// server at `url` with a bearer token.
pub fn write_kubeconfig(path: &Path, url: &str, context: &str) {
    std::fs::write(
        path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {url}\n\
             contexts:\n- name: {context}\n  context:\n    cluster: c\n    user: u\n    namespace: default\n\
             current-context: {context}\nusers:\n- name: u\n  user:\n    token: t0ken\n"
        ),
    )
    .unwrap();
}

/// A request as a rule sees it.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: String,
    pub path: String,
    pub query: String,
    /// The position of this request among all requests (0-based).
    pub seq: usize,
}

impl Req {
    /// A write that changes something (not a server-side dry run).
    pub fn is_real_write(&self) -> bool {
        matches!(self.method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE")
            && !self.query.contains("dryRun=All")
    }

    /// A LIST: a GET of a collection (the last segment is a plural).
    pub fn is_list(&self, plural: &str) -> bool {
        self.method == "GET" && self.path.ends_with(&format!("/{plural}"))
    }
}

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum Action {
    /// Handle it as the embedded API server does.
    Serve,
    /// Answer this status with a `Status` body carrying `message`.
    Status(u16, String),
    /// Answer 200 and the first bytes of a body, then nothing, for ever.
    StallBody,
    /// Answer 200 and the first bytes of a body, then close the connection.
    CloseMidBody,
    /// Wait this long, then handle it as the embedded API server does (a
    /// distant or loaded server).
    Delay(std::time::Duration),
    /// Never answer (the store is not touched).
    Hang,
    /// Handle it (the store changes), then never answer.
    ServeThenHang,
    /// Handle it (the store changes), then die without answering: the
    /// listener closes and every open connection is dropped.
    ServeThenDie,
}

pub type Rule = Arc<dyn Fn(&Req) -> Action + Send + Sync>;

/// The embedded API server behind a rule.
pub struct Faulty {
    pub api: Arc<ApiServer>,
    pub url: String,
    die: watch::Sender<bool>,
    seen: Arc<AtomicUsize>,
}

impl Faulty {
    /// Serve on 127.0.0.1 (a free port) on the current runtime.
    pub async fn start(rule: impl Fn(&Req) -> Action + Send + Sync + 'static) -> Faulty {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let api = Arc::new(ApiServer::new());
        api.set_address(&addr.to_string());
        let (die, dead) = watch::channel(false);
        let seen = Arc::new(AtomicUsize::new(0));
        let rule: Rule = Arc::new(rule);
        let faulty = Faulty {
            api: api.clone(),
            url: format!("http://{addr}"),
            die: die.clone(),
            seen: seen.clone(),
        };
        tokio::spawn(accept_loop(listener, api, rule, die, dead, seen));
        faulty
    }

    /// How many requests reached the server.
    pub fn requests_seen(&self) -> usize {
        self.seen.load(Ordering::SeqCst)
    }

    /// Whether the server died (by a rule or [`Faulty::kill`]).
    pub fn is_dead(&self) -> bool {
        *self.die.borrow()
    }

    pub fn kill(&self) {
        let _ = self.die.send(true);
    }
}

async fn accept_loop(
    listener: TcpListener,
    api: Arc<ApiServer>,
    rule: Rule,
    die: watch::Sender<bool>,
    mut dead: watch::Receiver<bool>,
    seen: Arc<AtomicUsize>,
) {
    loop {
        let accepted = tokio::select! {
            _ = dead.wait_for(|d| *d) => return,
            a = listener.accept() => a,
        };
        let Ok((stream, _)) = accepted else {
            return;
        };
        let (api, rule, die, seen) = (api.clone(), rule.clone(), die.clone(), seen.clone());
        let mut dead = dead.clone();
        tokio::spawn(async move {
            let svc =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let (api, rule, die, seen) =
                        (api.clone(), rule.clone(), die.clone(), seen.clone());
                    async move { Ok::<_, Infallible>(answer(&api, &*rule, &die, &seen, req).await) }
                });
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc);
            // Dying drops the connection, mid-request or not (checked
            // first: a poll of the connection may serve a whole request).
            tokio::select! {
                biased;
                _ = dead.wait_for(|d| *d) => {}
                _ = conn => {}
            }
        });
    }
}

type Body = http_body_util::combinators::UnsyncBoxBody<Bytes, std::io::Error>;

fn full(b: impl Into<Bytes>) -> Body {
    Full::new(b.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// The first bytes of a JSON body, then `rest` (pending for ever, or an error).
fn partial(fail: bool) -> Body {
    let first = futures::stream::iter([Ok(hyper::body::Frame::data(Bytes::from_static(
        b"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{",
    )))]);
    let rest: futures::stream::BoxStream<
        'static,
        Result<hyper::body::Frame<Bytes>, std::io::Error>,
    > = if fail {
        // After a pause, so the headers and the first bytes are sent first.
        Box::pin(futures::stream::once(async {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            Err(std::io::Error::other(
                "connection closed by the test server",
            ))
        }))
    } else {
        Box::pin(futures::stream::pending())
    };
    StreamBody::new(futures::StreamExt::chain(first, rest)).boxed_unsync()
}

async fn answer(
    api: &ApiServer,
    rule: &(dyn Fn(&Req) -> Action + Send + Sync),
    die: &watch::Sender<bool>,
    seen: &AtomicUsize,
    req: hyper::Request<hyper::body::Incoming>,
) -> hyper::Response<Body> {
    let (parts, body) = req.into_parts();
    let bytes = body
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    // A dead server serves nothing, even on a connection not yet dropped.
    if *die.borrow() {
        return std::future::pending().await;
    }
    let seq = seen.fetch_add(1, Ordering::SeqCst);
    let r = Req {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        query: parts.uri.query().unwrap_or("").to_string(),
        seq,
    };
    let serve = || {
        api.handle(&parts.method, &parts.uri, &parts.headers, &bytes)
            .map(full)
    };
    match rule(&r) {
        Action::Serve => serve(),
        Action::Delay(d) => {
            tokio::time::sleep(d).await;
            serve()
        }
        a @ (Action::StallBody | Action::CloseMidBody) => {
            let mut resp = hyper::Response::new(partial(matches!(a, Action::CloseMidBody)));
            resp.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            resp
        }
        Action::Status(code, message) => {
            let reason = match code {
                401 => "Unauthorized",
                403 => "Forbidden",
                429 => "TooManyRequests",
                503 => "ServiceUnavailable",
                _ => "InternalError",
            };
            let status = serde_json::json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": message, "reason": reason, "code": code,
            });
            let mut resp = hyper::Response::new(full(status.to_string()));
            *resp.status_mut() = http::StatusCode::from_u16(code).unwrap();
            resp.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            // As API Priority and Fairness answers a request it turns away.
            if code == 429 {
                resp.headers_mut().insert(
                    http::header::RETRY_AFTER,
                    http::HeaderValue::from_static("1"),
                );
            }
            resp
        }
        Action::Hang => std::future::pending().await,
        Action::ServeThenHang => {
            let _ = serve();
            std::future::pending().await
        }
        Action::ServeThenDie => {
            let _ = serve();
            let _ = die.send(true);
            std::future::pending().await
        }
    }
}
