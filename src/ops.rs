//! The operations the TUI and the CLI ask of a cluster, as data.
//!
//! The TUI's runtime calls an [`Engine`]; the cluster layer implements it
//! against a real API server (kube-rs), tests implement it with fakes.
//! Keeping this seam narrow lets `App::update` stay free of I/O.

use crate::plan::{ObjectPlan, Plan};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// Progress of long work (fetching live state), sent as it happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    pub what: String,
}

/// One object to apply: its plan, and optionally only some of its field
/// changes (partial apply: the skipped changes stay pending).
#[derive(Debug, Clone)]
pub struct ApplyItem {
    pub plan: ObjectPlan,
    /// `None`: apply the whole config. `Some(paths)`: apply last-applied
    /// plus only these field changes.
    pub accepted_fields: Option<Vec<String>>,
    /// `clear` rows released instead of cleared: dropped from the
    /// last-applied annotation, no deletion sent, the live value stays
    /// (another writer owns the field from then on).
    pub released_fields: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

/// The outcome of one object of an apply, delete or prune: done (`ok`),
/// failed (`!ok`: not done), or unknown (`unknown`, never `ok`: the write
/// was sent and no answer came, so it may or may not have been made).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectResult {
    /// `Deployment default/nginx`
    pub object: String,
    pub ok: bool,
    /// `created`, `configured`, `unchanged`, `deleted`, `pruned`, the
    /// server's error message, or why the outcome is unknown.
    pub message: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unknown: bool,
}

impl ObjectResult {
    /// Done: `message` says what was done (`created`, `configured`, ...).
    pub fn done(object: String, message: impl Into<String>) -> ObjectResult {
        ObjectResult {
            object,
            ok: true,
            message: message.into(),
            unknown: false,
        }
    }

    /// Not done: `message` says why.
    pub fn failed(object: String, message: impl Into<String>) -> ObjectResult {
        ObjectResult {
            object,
            ok: false,
            message: message.into(),
            unknown: false,
        }
    }

    /// Sent, but whether it was done is not known: `message` says why.
    pub fn unknown(object: String, message: impl Into<String>) -> ObjectResult {
        ObjectResult {
            object,
            ok: false,
            message: message.into(),
            unknown: true,
        }
    }
}

/// The server an engine talks to, as the TUI names it while it waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub url: String,
    /// The kubeconfig context (empty when none is named).
    pub context: String,
}

impl Server {
    /// `https://10.0.0.1:6443 (context prod)`
    pub fn describe(&self) -> String {
        if self.context.is_empty() {
            self.url.clone()
        } else {
            format!("{} (context {})", self.url, self.context)
        }
    }
}

/// What the TUI needs from a cluster.
pub trait Engine: Send + Sync {
    /// Where this engine connects, known before any request (`None`: a fake).
    fn server(&self) -> Option<Server> {
        None
    }
    /// Connect to the server (again, after a failure) and check that it
    /// answers. An engine made connected answers `Ok` at once.
    fn connect(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
    /// The manifests alone, read without the cluster: the rows the TUI lists
    /// while live state loads (their actions mean nothing yet).
    fn manifests(&self) -> BoxFuture<'_, Result<Plan, String>> {
        Box::pin(async { Ok(Plan::default()) })
    }
    /// Read manifests and live state, and build the plan (prune candidates
    /// included when pruning is configured).
    fn load(
        &self,
        progress: tokio::sync::mpsc::UnboundedSender<Progress>,
    ) -> BoxFuture<'_, Result<Plan, String>>;
    /// Server-side dry run of an apply: what the server would say.
    fn dry_run(&self, items: Vec<ApplyItem>) -> BoxFuture<'_, Vec<ObjectResult>>;
    fn apply(&self, items: Vec<ApplyItem>) -> BoxFuture<'_, Vec<ObjectResult>>;
    /// Delete objects (the `D` key).
    fn delete(
        &self,
        objects: Vec<ObjectPlan>,
        propagation: Propagation,
    ) -> BoxFuture<'_, Vec<ObjectResult>>;
    /// Delete prune candidates (reported as pruned).
    fn prune(&self, objects: Vec<ObjectPlan>) -> BoxFuture<'_, Vec<ObjectResult>>;
}
