//! The cluster layer: talks to a Kubernetes API server through kube-rs and
//! turns manifests plus live state into a plan, then applies, deletes and
//! prunes exactly as `kubectl apply` would (same requests, same annotation,
//! same prune decisions; see `/work/shared/reference/kubectl-apply-facts.md`).
//!
//! Entry points (used by the CLI and, through [`KubeEngine`], by the TUI):
//! - [`Session::connect`]: read the kubeconfig like kubectl and probe the server.
//! - [`Session::plan`]: discovery, one LIST per (resource, namespace), the plan,
//!   prune candidates ([`PruneOptions`]).
//! - [`Session::apply`]: server-side dry run, then create/patch per object.
//! - [`Session::delete`] and [`Session::prune`].
//!
//! Requests are sent raw (`kube::Client::send`) so the wire matches kubectl's
//! byte for byte in the parts that matter: query parameters, content types,
//! bodies (the tests compare them with real kubectl's).
//!
//! A `kapply apply --prune ...` run, as the CLI drives it:
//!
//! ```text
//! let session = Session::connect(&ClusterOptions { kubeconfig, context, namespace }).await?;
//! // the loader's default namespace is the session's
//! let loaded = manifest::load(&LoadOptions { default_namespace: session.namespace().into(), .. });
//! let prune = PruneOptions { mode: PruneMode::ApplySet { parent: "myset".into(), tooling: None } };
//! let Planned { plan, applyset, .. } = session.plan(loaded, &prune, Some(progress_tx)).await?;
//! // apply rows (not prune candidates); ApplyItem { plan, accepted_fields: None }
//! let applied = session.apply(items, &ApplyOptions { dry_run, applyset: applyset.clone(), ..Default::default() }).await;
//! // prune candidates (action Prune); with an ApplySet, call it even with none
//! let pruned = session.prune(&candidates, applyset.as_ref(), dry_run).await;
//! ```
//!
//! `-l SELECTOR` without `--prune` filters manifests: [`LabelSelector`].

mod apply;
mod applyset;
mod client;
mod deps;
mod discovery;
mod engine;
mod exec;
mod export;
mod live;
mod route;

mod ssa;
mod timeouts;
mod watch;

pub use crate::selector::{LabelSelector, SelectorError};
pub use apply::{
    ApplyOptions, DeleteOptions, Replace, Report, Stop, rows_for_apply, slim_for_apply,
    slim_for_delete,
};
pub use applyset::{ApplySet, applyset_id};
pub use discovery::ResourceInfo;
pub use engine::KubeEngine;
pub use live::{Planned, PruneMode, PruneOptions, default_prune_allowlist};
pub use route::{LiveSource, PlanError, given_from_files};
pub use ssa::{ServerSideOptions, ServerSideOutcome, ServerSidePrune, ServerSideResult};
pub use timeouts::{Timeouts, parse_request_timeout};

use http::{Method, Request};
use http_body_util::BodyExt;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How many requests are in flight at once by default (`--concurrency`):
/// enough to keep a link with a 50 ms round trip busy (LISTs, dry runs,
/// writes, deletes: an apply of 2,000 new objects is 4,040 requests, 63
/// round trips at 64, 3.2 s of waiting; at 32 it was 6.3 s, 7.9-8.1 s in
/// all), few enough for API Priority and Fairness to serve without
/// queueing a single client for long (kube-apiserver's own limits are 400
/// reads and 200 writes in flight; over HTTP/2 they share one connection).
pub const CONCURRENCY: usize = 64;
/// How often a request the server turned away with 429 (Too Many
/// Requests, API Priority and Fairness) is sent again after its
/// `Retry-After`, as client-go retries it, before it is given up on.
pub const MAX_THROTTLED: u32 = 10;
/// The longest `Retry-After` obeyed at once (a larger one is cut to it).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);
/// Page size of LIST requests (`limit`), continued with `continue`.
pub const PAGE_SIZE: usize = 500;
/// The field manager kubectl's client-side apply uses; kapply uses the same
/// so the two tools stay interchangeable on the same objects.
pub const FIELD_MANAGER: &str = "kubectl-client-side-apply";

/// Where and how to connect, as kubectl's flags say it.
#[derive(Debug, Clone, Default)]
pub struct ClusterOptions {
    /// `--kubeconfig`; else `KUBECONFIG` (several files merged); else `~/.kube/config`.
    pub kubeconfig: Option<PathBuf>,
    /// `--context`; else the current context.
    pub context: Option<String>,
    /// `-n`; else the context's namespace; else `default`.
    pub namespace: Option<String>,
    /// Limits on connecting and on each request (`--request-timeout`).
    pub timeouts: Timeouts,
    /// Requests in flight at once (`--concurrency`); 0: [`CONCURRENCY`].
    pub concurrency: usize,
    /// The largest answer read (`--max-response-bytes`); 0:
    /// [`MAX_RESPONSE_BYTES`].
    pub max_response_bytes: u64,
}

/// The largest answer (a LIST page, a GET) read by default: far above any
/// real one, and below what would run a machine out of memory.
pub const MAX_RESPONSE_BYTES: u64 = 1 << 30;

/// Errors of the cluster layer. Messages name the server or the object.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum ClusterError {
    #[error("kubeconfig: {0}")]
    Kubeconfig(String),
    /// No connection could be made: the request was not sent.
    #[error("cannot reach the Kubernetes API server at {url}: {message}")]
    Unreachable { url: String, message: String },
    /// The request was sent and no (complete) answer came within the limit:
    /// for a write, whether the server made the change is unknown.
    #[error("no answer from {url} within {}", timeouts::show(*after))]
    Timeout {
        url: String,
        after: Duration,
        /// The request was a server dry run: nothing could have been written.
        dry_run: bool,
    },
    /// The connection failed after the request was sent (reset, closed
    /// before the answer): for a write, whether it was made is unknown.
    #[error("{}", lost_text(url, how, request))]
    Lost {
        url: String,
        how: Broken,
        /// What was asked: a read (its path) or a write.
        request: Asked,
    },
    /// 401: the server refused the kubeconfig's credentials.
    #[error(
        "the server at {url} refused the credentials of context {context:?} ({message}): \
         check that context's user in the kubeconfig"
    )]
    Unauthorized {
        url: String,
        context: String,
        message: String,
    },
    /// An answer larger than `--max-response-bytes`: not read further.
    #[error(
        "the server's answer to {request} is larger than {limit} bytes (--max-response-bytes); \
         it was not read"
    )]
    TooLarge {
        /// `GET /api/v1/...`
        request: String,
        limit: u64,
    },
    /// The server answered with an error `Status`.
    #[error("{message}")]
    Api {
        code: u16,
        reason: String,
        message: String,
    },
    /// A kind the cluster does not serve (yet): an error on that object alone.
    #[error("{}", crate::ops::not_served(.0))]
    NotServed(String),
    #[error("{0}")]
    Other(String),
}

impl ClusterError {
    /// The HTTP status code of an API error, 0 otherwise.
    pub fn code(&self) -> u16 {
        match self {
            ClusterError::Api { code, .. } => *code,
            ClusterError::Unauthorized { .. } => 401,
            _ => 0,
        }
    }

    /// The server could not be talked to (unreachable, silent, connection
    /// lost, credentials refused): every further request would fail the
    /// same way, so a run stops instead of reporting each object alone.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            ClusterError::Unreachable { .. }
                | ClusterError::Timeout { .. }
                | ClusterError::Lost { .. }
                | ClusterError::Unauthorized { .. }
        )
    }

    /// A write that failed this way may or may not have been made (a read
    /// or a server dry run never changes anything).
    pub fn fate_unknown(&self) -> bool {
        matches!(
            self,
            ClusterError::Timeout { dry_run: false, .. }
                | ClusterError::Lost {
                    request: Asked::Write,
                    ..
                }
        )
    }

    /// What went wrong, without what it means for the request that failed
    /// (no "the write may or may not have been made"): for the objects not
    /// sent after it, whose fate is known.
    pub fn cause(&self) -> String {
        match self {
            ClusterError::Lost { url, how, .. } => lost_what(url, how),
            e => e.to_string(),
        }
    }

    /// What a result says of a write that failed this way and whose fate is
    /// unknown (see [`ClusterError::fate_unknown`]).
    pub fn unknown_outcome(&self) -> String {
        let why = match self {
            ClusterError::Timeout { after, .. } => {
                format!("no answer within {}", timeouts::show(*after))
            }
            // Its text already says the write's fate is unknown.
            lost @ ClusterError::Lost { .. } => return lost.to_string(),
            other => other.to_string(),
        };
        format!("{why}; the change may or may not have been made")
    }
}

/// How a connection broke once a request was on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Broken {
    /// Closed before any answer came.
    Closed,
    /// Reset (or aborted) before any answer came.
    Reset,
    /// Closed or reset while the answer was arriving.
    MidAnswer,
    /// Some other failure: its innermost reason.
    Other(String),
}

/// The request a lost connection carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// A GET of this path: nothing changed, the data could not be read.
    Read(String),
    /// A POST, PATCH, PUT or DELETE: it may or may not have been made.
    Write,
    /// A server dry run (`dryRun=All`): nothing was written either way.
    DryRun,
}

/// `the server at URL closed the connection before answering; the write
/// may or may not have been made`: what happened and what is known of it.
fn lost_text(url: &str, how: &Broken, request: &Asked) -> String {
    let what = lost_what(url, how);
    match request {
        Asked::Write => format!("{what}; the write may or may not have been made"),
        Asked::DryRun => format!("{what}; it was a server dry run: nothing was written"),
        Asked::Read(path) => format!("{what}; {path} could not be read"),
    }
}

/// How the connection broke, in words.
fn lost_what(url: &str, how: &Broken) -> String {
    match how {
        Broken::Closed => format!("the server at {url} closed the connection before answering"),
        Broken::Reset => format!("the server at {url} reset the connection before answering"),
        Broken::MidAnswer => {
            format!("the connection to the server at {url} broke in the middle of its answer")
        }
        Broken::Other(why) => {
            format!("the connection to the server at {url} failed before an answer came ({why})")
        }
    }
}

/// A kubeconfig resolved for one context: where kapply will connect, known
/// before any request is sent (the TUI shows it while it waits).
#[derive(Clone)]
pub struct Target {
    config: kube::Config,
    /// The server URL, without a trailing `/`.
    pub url: String,
    /// The context in use (`--context`, else the current one).
    pub context: String,
    /// `-n`, else the context's namespace, else `default`.
    pub namespace: String,
    explicit_namespace: bool,
    pub timeouts: Timeouts,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// The largest answer read.
    pub max_response_bytes: u64,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("url", &self.url)
            .field("context", &self.context)
            .finish()
    }
}

impl Target {
    /// Read the kubeconfig as kubectl does (no request is sent).
    pub async fn resolve(opts: &ClusterOptions) -> Result<Target, ClusterError> {
        use kube::config::{KubeConfigOptions, Kubeconfig};
        let kubeconfig = match &opts.kubeconfig {
            Some(path) => Kubeconfig::read_from(path)
                .map_err(|e| ClusterError::Kubeconfig(format!("{}: {e}", path.display())))?,
            None => Kubeconfig::read().map_err(|e| ClusterError::Kubeconfig(e.to_string()))?,
        };
        let context = opts
            .context
            .clone()
            .or_else(|| kubeconfig.current_context.clone())
            .unwrap_or_default();
        let kopts = KubeConfigOptions {
            context: opts.context.clone(),
            ..Default::default()
        };
        let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &kopts)
            .await
            .map_err(|e| ClusterError::Kubeconfig(e.to_string()))?;
        // Retries would only delay the error a user needs to see.
        config.default_retry = false;
        let t = opts.timeouts;
        config.connect_timeout = Some(t.connect);
        // Whole requests are bounded in `Session::call`; these only stop a
        // socket that stalls for longer than any request may last.
        config.read_timeout = None;
        config.write_timeout = t.read.max(t.write);
        let url = config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_string();
        let namespace = opts
            .namespace
            .clone()
            .unwrap_or_else(|| config.default_namespace.clone());
        Ok(Target {
            config,
            url,
            context,
            namespace,
            explicit_namespace: opts.namespace.is_some(),
            timeouts: opts.timeouts,
            concurrency: if opts.concurrency == 0 {
                CONCURRENCY
            } else {
                opts.concurrency
            },
            max_response_bytes: if opts.max_response_bytes == 0 {
                MAX_RESPONSE_BYTES
            } else {
                opts.max_response_bytes
            },
        })
    }
}

/// A connection to one cluster, with discovery cached for the run.
pub struct Session {
    client: kube::Client,
    url: String,
    context: String,
    namespace: String,
    explicit_namespace: bool,
    timeouts: Timeouts,
    discovery: discovery::Discovery,
    /// The token of an exec credential plugin, run by kapply (once per run,
    /// again at expiry) rather than by kube-rs.
    exec: Option<exec::ExecAuth>,
    /// Threads for the CPU work of reading and planning.
    workers: Workers,
    /// Requests in flight at once, and the permits that bound them.
    concurrency: usize,
    in_flight: tokio::sync::Semaphore,
    /// The largest answer read (`--max-response-bytes`).
    max_response_bytes: u64,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("url", &self.url)
            .field("namespace", &self.namespace)
            .finish()
    }
}

impl Session {
    /// Read the kubeconfig as kubectl does and check that the server
    /// answers (`GET /version`). An unreachable server is an error naming
    /// its URL.
    pub async fn connect(opts: &ClusterOptions) -> Result<Arc<Session>, ClusterError> {
        Session::open(&Target::resolve(opts).await?).await
    }

    /// Connect to a resolved target and check that the server answers
    /// (`GET /version`, within the read limit).
    pub async fn open(target: &Target) -> Result<Arc<Session>, ClusterError> {
        let url = target.url.clone();
        let mut config = target.config.clone();
        let exec = match config.auth_info.exec.take() {
            None => None,
            Some(e) => match exec::ExecAuth::start(e.clone()).await? {
                exec::Answer::Token(auth) => Some(*auth),
                exec::Answer::Certificate => {
                    config.auth_info.exec = Some(e);
                    None
                }
            },
        };
        let client = client::client(config).map_err(|message| ClusterError::Unreachable {
            url: url.clone(),
            message,
        })?;
        let session = Session {
            client,
            url,
            context: target.context.clone(),
            namespace: target.namespace.clone(),
            explicit_namespace: target.explicit_namespace,
            timeouts: target.timeouts,
            discovery: discovery::Discovery::default(),
            exec,
            workers: Workers::new(),
            concurrency: target.concurrency.max(1),
            in_flight: tokio::sync::Semaphore::new(target.concurrency.max(1)),
            max_response_bytes: target.max_response_bytes,
        };
        match session.call(Method::GET, "/version", &[], None, None).await {
            Ok(_) => {}
            Err(ClusterError::Api {
                code,
                reason,
                message,
            }) => {
                // Name the server: "Forbidden" alone says too little.
                return Err(ClusterError::Api {
                    code,
                    reason,
                    message: format!("{}: {message}", session.url),
                });
            }
            Err(e) => return Err(e),
        }
        Ok(Arc::new(session))
    }

    /// The limits this session's requests run under.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// How many requests this session has in flight at most.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// The server URL from the kubeconfig.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The kubeconfig context in use (empty when none is named).
    pub fn context(&self) -> &str {
        &self.context
    }

    /// The namespace in effect: `-n`, else the context's, else `default`.
    /// Pass it to the manifest loader as its default namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Forget what discovery learned (after a CustomResourceDefinition was
    /// applied, so its kinds are looked up again).
    pub fn rediscover(&self) {
        self.discovery.clear();
    }

    /// Resolve a kind to its resource through the cached discovery.
    pub async fn resource(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<ResourceInfo, ClusterError> {
        self.discovery.resolve(self, api_version, kind).await
    }

    /// One raw request. `Ok` carries the decoded JSON body (Null when empty);
    /// an error status becomes [`ClusterError::Api`] with the server's message.
    pub(crate) async fn call(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        content_type: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Value, ClusterError> {
        // Encoded as kubectl (Go) encodes it, so the bytes on the wire match
        // what kubectl sends for the same change.
        let body = body.map(go_body);
        self.call_encoded(method, path, query, content_type, body, true)
            .await
    }

    /// [`Session::call`] with the body already encoded; with `!decode`, a
    /// successful answer's body is not parsed (`Ok(Null)`): writes whose
    /// answer is not used skip decoding the object the server sends back.
    pub(crate) async fn call_encoded(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        content_type: Option<&str>,
        body: Option<bytes::Bytes>,
        decode: bool,
    ) -> Result<Value, ClusterError> {
        let body = self
            .call_bytes(method, path, query, content_type, body)
            .await?;
        Ok(if decode {
            decode_body(&body)
        } else {
            Value::Null
        })
    }

    /// [`Session::call_encoded`] answering with the body of a successful
    /// answer undecoded (empty when a write's body was lost after its
    /// status), so a large one (a LIST page) can be decoded off the async
    /// task; an error status is decoded into its [`ClusterError`] here.
    pub(crate) async fn call_bytes(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        content_type: Option<&str>,
        body: Option<bytes::Bytes>,
    ) -> Result<bytes::Bytes, ClusterError> {
        let mut uri = path.to_string();
        for (i, (k, v)) in query.iter().enumerate() {
            uri.push(if i == 0 { '?' } else { '&' });
            uri.push_str(k);
            uri.push('=');
            uri.push_str(&encode_query(v));
        }
        let mut throttled = 0;
        let (status, collected) = loop {
            let (status, retry_after, collected) = self
                .send_once(method.clone(), &uri, path, content_type, body.clone())
                .await?;
            // API Priority and Fairness turned it away before handling it
            // (nothing was done): wait as told and send it again, a few times.
            if status == http::StatusCode::TOO_MANY_REQUESTS && throttled < MAX_THROTTLED {
                throttled += 1;
                tokio::time::sleep(retry_after.min(MAX_RETRY_AFTER)).await;
                continue;
            }
            break (status, collected);
        };
        if status.is_success() {
            return Ok(collected);
        }
        let value = decode_body(&collected);
        if status == http::StatusCode::UNAUTHORIZED {
            return Err(ClusterError::Unauthorized {
                url: self.url.clone(),
                context: self.context.clone(),
                message: value
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("Unauthorized")
                    .to_string(),
            });
        }
        let message = match value.get("message").and_then(Value::as_str) {
            // A 422's causes in a line each reads, not the values Go printed.
            Some(m) => invalid_summary(m, &value).unwrap_or_else(|| m.to_string()),
            None => match &value {
                Value::String(s) if !s.trim().is_empty() => s.trim().to_string(),
                _ => format!(
                    "{} {}",
                    status.as_u16(),
                    status.canonical_reason().unwrap_or("")
                ),
            },
        };
        Err(api_error(status, &value, message))
    }
}

/// The error of a request the server refused: its code, the reason of its
/// Status body (empty without one) and the words given (for requests and
/// watches alike).
pub(crate) fn api_error(status: http::StatusCode, body: &Value, message: String) -> ClusterError {
    ClusterError::Api {
        code: status.as_u16(),
        reason: body
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        message,
    }
}

impl Session {
    /// One request, sent once when one of the session's [`CONCURRENCY`]
    /// permits is free: its status, the `Retry-After` it carries (1 s when
    /// absent) and its body (empty when a write's body was lost after a
    /// success status). The time limit runs from the send, not the wait.
    async fn send_once(
        &self,
        method: Method,
        uri: &str,
        path: &str,
        content_type: Option<&str>,
        body: Option<bytes::Bytes>,
    ) -> Result<(http::StatusCode, Duration, bytes::Bytes), ClusterError> {
        let _permit = self
            .in_flight
            .acquire()
            .await
            .map_err(|e| ClusterError::Other(format!("{uri}: {e}")))?;
        // Reads may be retried by the user at no cost; a write that times
        // out leaves its fate unknown, so it gets its own (longer) limit.
        let is_write = method != Method::GET;
        let is_delete = method == Method::DELETE;
        let limit = if is_write {
            self.timeouts.write
        } else {
            self.timeouts.read
        };
        let request_line = method.to_string();
        let mut builder = Request::builder()
            .method(method)
            .uri(uri)
            .header(http::header::ACCEPT, "application/json");
        if let Some(auth) = &self.exec {
            builder = builder.header(http::header::AUTHORIZATION, auth.header().await?);
        }
        // A server dry run (in the query, or a DELETE's DeleteOptions
        // body) writes nothing, whatever becomes of its answer.
        // (Only a DELETE's body is DeleteOptions; any other body is an
        // object, whose fields may be named anything.)
        let dry_run = is_write
            && (uri.contains("dryRun=All")
                || (is_delete
                    && body
                        .as_ref()
                        .is_some_and(|b| memchr::memmem::find(b, b"\"dryRun\"").is_some())));
        let bytes = match body {
            Some(b) => {
                builder = builder.header(
                    http::header::CONTENT_TYPE,
                    content_type.unwrap_or("application/json"),
                );
                b
            }
            None => bytes::Bytes::new(),
        };
        let request = builder
            .body(kube::client::Body::from(bytes))
            .map_err(|e| ClusterError::Other(format!("{uri}: {e}")))?;
        let deadline = limit.map(|d| (tokio::time::Instant::now() + d, d));
        let timeout = |after: Duration| ClusterError::Timeout {
            url: self.url.clone(),
            after,
            dry_run,
        };
        let asked = if dry_run {
            Asked::DryRun
        } else if is_write {
            Asked::Write
        } else {
            Asked::Read(path.to_string())
        };
        let sent = self.client.send(request);
        let response = match deadline {
            Some((at, after)) => tokio::time::timeout_at(at, sent)
                .await
                .map_err(|_| timeout(after))?,
            None => sent.await,
        }
        .map_err(|e| self.transport_error(&e, &asked))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(Duration::from_secs(1), Duration::from_secs);
        if status == http::StatusCode::UNAUTHORIZED
            && let Some(auth) = &self.exec
        {
            auth.forget().await;
        }
        // An answer is read into memory whole: one larger than the cap
        // (a hostile or broken server, a LIST gone wild) ends the request
        // with an error naming it, instead of the machine's memory.
        let limit = self.max_response_bytes;
        let too_large = || ClusterError::TooLarge {
            request: format!("{request_line} {path}"),
            limit,
        };
        let declared = response
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        // (A write the server says it made stays made, whatever its body.)
        if declared.is_some_and(|n| n > limit) && !(is_write && status.is_success()) {
            return Err(too_large());
        }
        let body = http_body_util::Limited::new(
            response.into_body(),
            usize::try_from(limit).unwrap_or(usize::MAX),
        )
        .collect();
        let read_error = |e: Box<dyn std::error::Error + Send + Sync>| {
            if e.is::<http_body_util::LengthLimitError>() {
                too_large()
            } else {
                self.lost(Broken::MidAnswer, &asked)
            }
        };
        let collected = match deadline {
            Some((at, after)) => tokio::time::timeout_at(at, body)
                .await
                .map_err(|_| timeout(after))
                .and_then(|r| r.map_err(read_error)),
            None => body.await.map_err(read_error),
        };
        let collected = match collected {
            Ok(c) => c.to_bytes(),
            // The status says the write was done; a body lost after it does
            // not undo it (and writes do not use their body).
            Err(_) if is_write && status.is_success() => bytes::Bytes::new(),
            Err(e) => return Err(e),
        };
        Ok((status, retry_after, collected))
    }
}

impl Session {
    /// A failed send: before the request left (no connection could be
    /// made) or after (the connection broke: the server may have acted).
    /// Told apart by the errors' types, never by their text.
    fn transport_error(&self, e: &kube::Error, asked: &Asked) -> ClusterError {
        use crate::transport::Cause;
        let cause = Cause::of(e);
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(s) = source {
            if let Some(h) = s.downcast_ref::<hyper_util::client::legacy::Error>()
                && h.is_connect()
            {
                let message = match cause {
                    Cause::TimedOut => format!(
                        "no connection within {}",
                        timeouts::show(self.timeouts.connect)
                    ),
                    c => c.connect_reason(),
                };
                return ClusterError::Unreachable {
                    url: self.url.clone(),
                    message,
                };
            }
            source = s.source();
        }
        let how = match cause {
            Cause::Closed => Broken::Closed,
            Cause::Reset => Broken::Reset,
            Cause::TimedOut => Broken::Other("timed out".into()),
            Cause::Refused => Broken::Other("connection refused".into()),
            Cause::Tls(t) => Broken::Other(format!("TLS: {t}")),
            Cause::Other(t) => Broken::Other(t),
        };
        self.lost(how, asked)
    }

    fn lost(&self, how: Broken, asked: &Asked) -> ClusterError {
        ClusterError::Lost {
            url: self.url.clone(),
            how,
            request: asked.clone(),
        }
    }
}

/// An answer's body as JSON: `Null` when empty, the text as a string when
/// it is not JSON (a proxy's error page).
pub(crate) fn decode_body(body: &[u8]) -> Value {
    if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
    }
}

/// CPU work of a run (decoding LIST pages, planning, rendering) handed to
/// threads off the async task, one per core, so the second core plans
/// while the first reads and writes. The threads are this pool's own, for
/// its whole life: glibc gives each thread that allocates its own arena,
/// and memory freed in one is not reused by another, so jobs spread over
/// tokio's growing blocking pool made the peak RSS of a 10,000-object
/// plan climb with every new thread. They end when the pool is dropped.
pub(crate) struct Workers {
    jobs: std::sync::mpsc::Sender<Box<dyn FnOnce() + Send>>,
    threads: usize,
}

impl Workers {
    pub(crate) fn new() -> Workers {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (jobs, queue) = std::sync::mpsc::channel::<Box<dyn FnOnce() + Send>>();
        let queue = Arc::new(std::sync::Mutex::new(queue));
        for i in 0..threads {
            let queue = Arc::clone(&queue);
            let spawned = std::thread::Builder::new()
                .name(format!("kapply-plan-{i}"))
                .spawn(move || {
                    loop {
                        // The lock is held only while waiting for a job.
                        let job = match queue.lock() {
                            Ok(q) => q.recv(),
                            Err(_) => return,
                        };
                        match job {
                            Ok(job) => job(),
                            // The pool is gone.
                            Err(_) => return,
                        }
                    }
                });
            // A thread that cannot start leaves the others (with none,
            // `run` says so).
            if spawned.is_err() {
                break;
            }
        }
        Workers { jobs, threads }
    }

    /// How many jobs run at once.
    pub(crate) fn threads(&self) -> usize {
        self.threads
    }

    /// Run `job` on a pool thread, once one is free. A job that panicked
    /// is an error (the panic message is already on stderr).
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, WorkerFailed> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job = move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            let _ = tx.send(r);
        };
        self.jobs
            .send(Box::new(job))
            .map_err(|_| WorkerFailed::Stopped)?;
        match rx.await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(_)) => Err(WorkerFailed::Panicked),
            Err(_) => Err(WorkerFailed::Stopped),
        }
    }
}

/// A job the planning threads did not finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WorkerFailed {
    #[error("planning failed: a worker thread stopped")]
    Stopped,
    /// The panic message is already on stderr.
    #[error("planning failed: a worker thread panicked")]
    Panicked,
}

/// A read whose decoding job failed fails as a read (LIST pages, the watch's relist).
impl From<WorkerFailed> for ClusterError {
    fn from(e: WorkerFailed) -> ClusterError {
        ClusterError::Other(e.to_string())
    }
}

/// The error and its sources, so a kube error is not hidden behind a
/// generic "client error" (used where no network error is involved).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// Percent-encode a query value (label selectors, continue tokens).
fn encode_query(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub(crate) use crate::objref::split_api_version;

/// Collect futures before streaming them: keeps closures out of the
/// stream's type, which the `Send` bound of boxed futures needs.
pub(crate) fn collect_vec<T>(it: impl Iterator<Item = T>) -> Vec<T> {
    it.collect()
}

/// A request body as kubectl writes it (Go's JSON).
pub(crate) fn go_body(v: &Value) -> bytes::Bytes {
    bytes::Bytes::from(crate::gocompat::json(v).into_bytes())
}

/// A 422 Invalid `Status` said short: `Deployment.apps "web" is invalid:
/// spec.selector: field is immutable` instead of the selector kube-apiserver
/// prints in Go syntax (often a kilobyte): each cause as its field and the
/// words after the value. `None` for any other status.
pub fn invalid_summary(message: &str, status: &Value) -> Option<String> {
    let causes = status.pointer("/details/causes")?.as_array()?;
    let (head, _) = message.split_once(" is invalid: ")?;
    let parts: Vec<String> = causes
        .iter()
        .filter_map(|c| {
            let text = c.get("message")?.as_str()?;
            let field = c.get("field").and_then(Value::as_str).unwrap_or_default();
            // `Invalid value: VALUE: DETAIL`: the detail; other kinds
            // (`Required value`, `Forbidden: ...`) are short already.
            // A short value (a label's) is kept: it says what is wrong.
            let words = match text.strip_prefix("Invalid value: ") {
                Some(rest) => match rest.rsplit_once(": ") {
                    Some((value, detail)) if value.chars().count() > 80 => detail,
                    _ => text,
                },
                None => text,
            };
            Some(if field.is_empty() {
                words.to_string()
            } else {
                format!("{field}: {words}")
            })
        })
        .collect();
    if parts.is_empty() {
        return None;
    }
    Some(format!("{head} is invalid: {}", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn invalid_statuses_are_said_short() {
        let big = "v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web2\"}, \
                   MatchExpressions:[]v1.LabelSelectorRequirement(nil)}";
        let message = format!(
            "Deployment.apps \"web\" is invalid: spec.selector: Invalid value: {big}: field is immutable"
        );
        let status = serde_json::json!({"kind": "Status", "code": 422, "reason": "Invalid",
            "message": message,
            "details": {"name": "web", "kind": "deployments", "causes": [
                {"reason": "FieldValueInvalid", "field": "spec.selector",
                 "message": format!("Invalid value: {big}: field is immutable")},
                {"reason": "FieldValueRequired", "field": "spec.template.spec.containers",
                 "message": "Required value"}]}});
        assert_eq!(
            super::invalid_summary(&message, &status).as_deref(),
            Some(
                "Deployment.apps \"web\" is invalid: spec.selector: field is immutable; \
                 spec.template.spec.containers: Required value"
            )
        );
        // Anything else stays as the server said it.
        let conflict =
            serde_json::json!({"reason": "Conflict", "message": "the object has been modified"});
        assert_eq!(
            super::invalid_summary("the object has been modified", &conflict),
            None
        );
    }

    use super::*;

    #[test]
    fn query_values_are_encoded() {
        assert_eq!(encode_query("app=demo,tier!=x"), "app%3Ddemo%2Ctier%21%3Dx");
        assert_eq!(encode_query("abc-1.2_~"), "abc-1.2_~");
    }
}
