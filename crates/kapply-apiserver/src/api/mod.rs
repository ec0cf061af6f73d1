//! The request handler: a plain function from (method, uri, headers, body)
//! to a response, callable without a socket.
//!
//! - `plumbing`: query decoding, responses, the pre-routing guard, body
//!   decoding, [`ApiServer::handle`].
//! - `routing`: paths to targets; the verbs on a resource, LIST.
//! - `discovery`: `/version`, group and resource lists, aggregated v2.
//! - `watch`: watches.
//! - `patch`: strategic, merge and JSON patches.
//! - `apply`: server-side apply (ownership, conflicts).
//! - `writes`: create, update, delete, and what every write goes through.
//! - `controllers`: status as if controllers ran.
//! - `table`: Tables for `kubectl get`.
//! - `subresources`: `/scale` and `/status`.

mod allocate;
mod apply;
mod controllers;
mod discovery;
mod patch;
mod plumbing;
mod routing;
mod subresources;
mod table;
mod watch;
mod writes;

pub use watch::{Watch, is_watch};
pub(crate) use writes::has_generation;

use super::resources::{self, ResourceInfo};
use super::status::ApiError;
use super::store::{self, Store};
use kapply_core::patchmeta::{PatchMeta, Schema};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Mutex;
use writes::{WriteCtx, commit};

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

/// A request as recorded; [`ApiServer::requests`] parses its body.
#[derive(Debug)]
struct Recorded {
    method: String,
    path: String,
    query: BTreeMap<String, String>,
    content_type: Option<String>,
    user_agent: Option<String>,
    body: bytes::Bytes,
}

impl Recorded {
    fn to_request(&self) -> RecordedRequest {
        let body = &self.body;
        RecordedRequest {
            method: self.method.clone(),
            path: self.path.clone(),
            query: self.query.clone(),
            content_type: self.content_type.clone(),
            user_agent: self.user_agent.clone(),
            body: if body.is_empty() {
                None
            } else {
                serde_json::from_slice::<Value>(body)
                    .ok()
                    .or_else(|| plumbing::yaml_value(body).ok())
            },
        }
    }
}

/// The API server without its socket.
#[derive(Debug, Default)]
pub struct ApiServer {
    store: Store,
    requests: Mutex<Vec<Recorded>>,
    /// Requests are not recorded (a long-running server nobody inspects:
    /// `kapply demo`).
    forget_requests: std::sync::atomic::AtomicBool,
    /// `host:port`, for `/api` serverAddressByClientCIDRs.
    address: Mutex<String>,
    /// How often a watch asked for bookmarks gets one, in ms (0: every
    /// minute, as kube-apiserver's watch cache sends them).
    bookmark_ms: std::sync::atomic::AtomicU64,
}

type Query = BTreeMap<String, String>;

/// A response body: a tree to serialize, or JSON already written (objects
/// as the store holds them).
enum Reply {
    Json(Value),
    Raw(bytes::Bytes),
}

impl From<Value> for Reply {
    fn from(v: Value) -> Reply {
        Reply::Json(v)
    }
}

/// The object as returned to clients: apiVersion of the served version.
fn out(r: &ResourceInfo, o: &Value) -> Value {
    served(r, o.clone())
}

/// [`out`] of an object no longer needed as it is.
fn served(r: &ResourceInfo, mut o: Value) -> Value {
    o["apiVersion"] = json!(r.api_version());
    o["kind"] = json!(r.kind);
    o
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
            .iter()
            .map(Recorded::to_request)
            .collect()
    }

    /// Stop recording requests (and drop those recorded).
    pub fn forget_requests(&self) {
        self.forget_requests
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.clear_requests();
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
        let old = st.get(&store::key(&r, ns.as_deref(), &name));
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

    fn notify(&self) {
        self.store.notify();
    }

    /// How often a watch with `allowWatchBookmarks=true` gets a BOOKMARK
    /// (kube-apiserver: about once a minute; tests shorten it).
    pub fn set_bookmark_interval(&self, every: std::time::Duration) {
        let ms = u64::try_from(every.as_millis()).unwrap_or(u64::MAX).max(1);
        self.bookmark_ms
            .store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// See [`ApiServer::set_bookmark_interval`].
    pub fn bookmark_interval(&self) -> std::time::Duration {
        match self.bookmark_ms.load(std::sync::atomic::Ordering::Relaxed) {
            0 => std::time::Duration::from_secs(60),
            ms => std::time::Duration::from_millis(ms),
        }
    }

    /// Forget the changes watches resume from, as etcd's compaction does:
    /// a watch from an older resourceVersion is then answered 410 Gone
    /// (`too old resource version`) and its client must LIST again.
    pub fn compact_events(&self) {
        let mut st = self.store.lock();
        st.events.clear();
        st.compacted = st.rv;
    }

    /// Wakes up when something changed.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.store.subscribe()
    }
}
