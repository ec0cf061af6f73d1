//! The embedded Kubernetes API server: in memory, plain http on loopback.
//! Good enough for the real kubectl 1.32 and for kube-rs.
//!
//! - [`start`] binds 127.0.0.1 (a free port unless [`ServerOptions::port`])
//!   and serves on a tokio task; [`RunningServer::write_kubeconfig`] writes
//!   a kubeconfig (cluster/context/user `kapply-demo`, namespace default).
//! - [`ApiServer::handle`] answers one request without a socket (tests,
//!   fuzzing); [`ApiServer::request`] is the short form. Watches answered
//!   there return their first events as a JSON array; over the socket they
//!   stream.
//! - Seeding: [`Store::put_object`] stores an object as given (defaults and
//!   missing stamps added); [`ApiServer::put_object_as`] writes it as a
//!   manager would (managedFields recorded).
//! - Every request is recorded ([`RecordedRequest`]) for tests.
//!
//! Served: discovery (legacy and aggregated v2), `/openapi/v3` built from
//! the patch metadata table, the resources of [`resources::builtin`] plus
//! those of stored CRDs; GET, LIST (selectors, paging), WATCH, POST, PUT,
//! PATCH (strategic, merge, json, apply), DELETE, deletecollection,
//! dry runs (`dryRun=All` in the query, or `dryRun: ["All"]` in a DELETE's
//! DeleteOptions body, where kubectl sends it; beside a body the query's is
//! ignored, as kube-apiserver ignores it), `/scale`, `/status`; uid, resourceVersion, generation,
//! managedFields; defaulting and the validation users meet; Status errors
//! worded as kube-apiserver words them.
//!
//! Refused before routing: over the socket, a request without the run's
//! bearer token (401, as kube-apiserver answers: another user of the
//! machine can reach a loopback port, but cannot read the 0600 kubeconfig
//! that holds the token); a `Host` that is not loopback (403, DNS
//! rebinding) and a write whose Content-Type is not a Kubernetes one (415,
//! cross-site form posts); see `api::plumbing::guard`.

mod api;
use kapply_core::defaults;
pub mod fields;
mod openapi;
mod protobuf;
pub mod resources;
pub mod selector;
pub mod status;
pub mod store;
mod token;
mod validate;

pub use api::{ApiServer, RecordedRequest};
pub use status::ApiError;
pub use store::Store;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::io;
use std::path::Path;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// The Kubernetes version the server claims (kubectl's dispatcher picks
/// kubectl 1.32 from it).
pub const GIT_VERSION: &str = "v1.32.5";

/// The first line of every kubeconfig [`RunningServer::write_kubeconfig`]
/// writes: `kapply demo --kubeconfig-out` overwrites only a file that starts
/// with it (kubectl drops comments when it rewrites a kubeconfig, so a file
/// edited since has lost the mark too).
pub const KUBECONFIG_MARK: &str =
    "# kapply demo kubeconfig (written by kapply demo, which may overwrite it)";

/// Requests larger than this are refused (413).
const MAX_BODY: usize = 8 << 20;

#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// None: any free port.
    pub port: Option<u16>,
    /// Record no requests ([`RunningServer::requests`] stays empty): for a
    /// server that runs long and whose requests nobody reads.
    pub forget_requests: bool,
}

/// A server running on a tokio task until [`RunningServer::shutdown`] (or drop).
pub struct RunningServer {
    api: Arc<ApiServer>,
    addr: std::net::SocketAddr,
    /// The bearer token every request over the socket must carry: random
    /// per run, written into the kubeconfig.
    token: Arc<str>,
    stop: Option<oneshot::Sender<()>>,
}

/// Bind 127.0.0.1 and serve in the background.
pub async fn start(opts: ServerOptions) -> anyhow::Result<RunningServer> {
    let listener = TcpListener::bind(("127.0.0.1", opts.port.unwrap_or(0))).await?;
    let addr = listener.local_addr()?;
    let api = Arc::new(ApiServer::new());
    api.set_address(&addr.to_string());
    if opts.forget_requests {
        api.forget_requests();
    }
    let token: Arc<str> = new_token()?.into();
    let (stop, mut stopped) = oneshot::channel::<()>();
    let served = api.clone();
    let expected = token.clone();
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                _ = &mut stopped => break,
                a = listener.accept() => a,
            };
            let Ok((stream, _)) = accepted else {
                continue;
            };
            let api = served.clone();
            let expected = expected.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let api = api.clone();
                    let expected = expected.clone();
                    async move {
                        let Some(req) = authenticated(req, &expected) else {
                            return Ok(unauthorized());
                        };
                        Ok::<_, std::convert::Infallible>(serve(&api, req).await)
                    }
                });
                // Connection errors (client went away) concern only that client.
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(RunningServer {
        api,
        addr,
        token,
        stop: Some(stop),
    })
}

/// 32 random bytes from the operating system, as hex: the run's token.
fn new_token() -> io::Result<String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| io::Error::other("no random bytes from the operating system"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The first step of the path of every request kubectl sends: kubectl
/// (client-go) sends no credentials over plain http, so the kubeconfig's
/// server URL carries the token as its path (`http://127.0.0.1:PORT` +
/// `/kapply-token/TOKEN`), as kubectl keeps a server URL's path for every
/// request (Rancher's proxy URLs rely on it).
pub const TOKEN_PATH: &str = "/kapply-token/";

/// The request when it carries the run's token, either as
/// `Authorization: Bearer TOKEN` (kube-rs, curl) or as the first steps of
/// its path ([`TOKEN_PATH`], stripped here so the API sees its own path);
/// `None` otherwise.
fn authenticated<B>(mut req: hyper::Request<B>, expected: &str) -> Option<hyper::Request<B>> {
    let bearer = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let in_path = req
        .uri()
        .path()
        .strip_prefix(TOKEN_PATH)
        .map(|rest| rest.split_once('/').map_or((rest, ""), |(t, p)| (t, p)));
    if let Some((given, rest)) = in_path {
        if !same_secret(given, expected) {
            return None;
        }
        let query = req
            .uri()
            .query()
            .map(|q| format!("?{q}"))
            .unwrap_or_default();
        let mut parts = req.uri().clone().into_parts();
        parts.path_and_query = Some(format!("/{rest}{query}").parse().ok()?);
        *req.uri_mut() = http::Uri::from_parts(parts).ok()?;
        return Some(req);
    }
    bearer
        .is_some_and(|given| same_secret(given, expected))
        .then_some(req)
}

/// `given == expected`, compared without an early exit, so the time taken
/// says nothing of the token.
fn same_secret(given: &str, expected: &str) -> bool {
    given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// kube-apiserver's answer to a request without valid credentials.
fn unauthorized() -> hyper::Response<Body> {
    let e = ApiError::new(401, "Unauthorized", "Unauthorized");
    let mut resp = hyper::Response::new(full(Bytes::from(e.to_status().to_string())));
    *resp.status_mut() = http::StatusCode::UNAUTHORIZED;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}

type Body = http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>;

fn full(b: Bytes) -> Body {
    Full::new(b).boxed()
}

async fn serve(
    api: &Arc<ApiServer>,
    req: hyper::Request<hyper::body::Incoming>,
) -> hyper::Response<Body> {
    let (parts, body) = req.into_parts();
    let limited = http_body_util::Limited::new(body, MAX_BODY);
    let bytes = match limited.collect().await {
        Ok(c) => c.to_bytes(),
        Err(_) => {
            let e = ApiError::new(
                413,
                "RequestEntityTooLarge",
                "request body too large or unreadable",
            );
            let mut resp = hyper::Response::new(full(Bytes::from(e.to_status().to_string())));
            *resp.status_mut() = http::StatusCode::PAYLOAD_TOO_LARGE;
            return resp;
        }
    };
    if api::is_watch(&parts.method, &parts.uri) {
        // Recorded like any other request (and its error, if refused); the
        // answer streams.
        let resp = api.handle(&parts.method, &parts.uri, &parts.headers, &bytes);
        // A refused request (a foreign Host, ...) never starts a watch.
        if !resp.status().is_success() {
            return resp.map(full);
        }
        return match api.watch_start(&parts.uri, &parts.headers) {
            Ok((w, first)) => watch_response(api.clone(), w, first),
            Err(_) => resp.map(full),
        };
    }
    let resp = api.handle(&parts.method, &parts.uri, &parts.headers, &bytes);
    resp.map(full)
}

/// A watch: newline-separated events until the timeout or the client leaves.
fn watch_response(
    api: Arc<ApiServer>,
    mut w: api::Watch,
    first: Vec<serde_json::Value>,
) -> hyper::Response<Body> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(64);
    let mut changed = api.subscribe();
    tokio::spawn(async move {
        let line = |e: &serde_json::Value| Bytes::from(format!("{e}\n"));
        for e in &first {
            if tx.send(line(e)).await.is_err() {
                return;
            }
        }
        let deadline = tokio::time::sleep(w.timeout);
        tokio::pin!(deadline);
        // Bookmarks, when asked for: now and then, and one as the watch
        // ends (kube-apiserver sends one before closing a watch at its
        // timeout, so the client resumes from there).
        let every = api.bookmark_interval();
        let mut bookmarks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        bookmarks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let bookmark = tokio::select! {
                _ = &mut deadline => {
                    if let Some(b) = w.bookmark() {
                        let _ = tx.send(line(&b)).await;
                    }
                    return;
                }
                _ = tx.closed() => return,
                r = changed.changed() => if r.is_err() { return } else { None },
                _ = bookmarks.tick(), if w.bookmarks => w.bookmark(),
            };
            if let Some(b) = bookmark {
                // Changes first: the bookmark's resourceVersion covers them.
                for e in api.watch_next(&mut w) {
                    if tx.send(line(&e)).await.is_err() {
                        return;
                    }
                }
                if tx.send(line(&w.bookmark().unwrap_or(b))).await.is_err() {
                    return;
                }
                continue;
            }
            for e in api.watch_next(&mut w) {
                if tx.send(line(&e)).await.is_err() {
                    return;
                }
            }
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| {
            (
                Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(b)),
                rx,
            )
        })
    });
    let mut resp = hyper::Response::new(http_body_util::StreamBody::new(stream).boxed());
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}

impl RunningServer {
    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The bearer token requests over the socket must carry.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The URL kubectl is given: [`RunningServer::url`] with the token as
    /// its path ([`TOKEN_PATH`]).
    pub fn authenticated_url(&self) -> String {
        format!("{}{TOKEN_PATH}{}", self.url(), self.token)
    }

    /// A kubeconfig whose current context `kapply-demo` points at this
    /// server (namespace default, the run's token in the server URL's path
    /// and as the user's bearer token). Its first line is
    /// [`KUBECONFIG_MARK`]. Written readable by its owner only (0600), as
    /// it holds the token; an existing file is made 0600 too.
    pub fn write_kubeconfig(&self, path: &Path) -> io::Result<()> {
        let text = format!(
            "{KUBECONFIG_MARK}
apiVersion: v1
kind: Config
clusters:
- name: kapply-demo
  cluster:
    server: {url}
contexts:
- name: kapply-demo
  context:
    cluster: kapply-demo
    user: kapply-demo
    namespace: default
current-context: kapply-demo
users:
- name: kapply-demo
  user:
    token: {token}
preferences: {{}}
",
            url = self.authenticated_url(),
            token = self.token,
        );
        // Owner-only, new or replaced (kept apart from `crate::files`: the
        // server uses nothing of the client).
        let mut open = std::fs::OpenOptions::new();
        open.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
        let mut f = open.open(path)?;
        #[cfg(unix)]
        f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        io::Write::write_all(&mut f, text.as_bytes())
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.api.requests()
    }

    pub fn clear_requests(&self) {
        self.api.clear_requests()
    }

    /// The handler (also for requests without the socket, and for seeding
    /// with `put_object`).
    pub fn api(&self) -> &ApiServer {
        &self.api
    }

    pub fn store(&self) -> &Store {
        self.api.store()
    }

    /// Stop accepting connections.
    pub fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            // The accept loop may already be gone; nothing to do then.
            let _ = stop.send(());
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
