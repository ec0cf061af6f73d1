//! The operations the TUI and the CLI ask of a cluster, as data.
//!
//! The TUI's runtime calls an [`Engine`]; the cluster layer implements it
//! against a real API server (kube-rs), tests implement it with fakes.
//! Keeping this seam narrow lets `App::update` stay free of I/O.

use crate::fieldpath::FieldPath;
use crate::objref::ObjectRef;
use crate::plan::{ObjectPlan, Plan};
use futures::future::BoxFuture;

/// Progress of long work (fetching live state), sent as it happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    /// How many LIST requests the read sends (one per resource and
    /// namespace), once discovery has said; 0 before.
    pub lists: usize,
    pub what: String,
}

/// One object to apply: its plan, and optionally only some of its field
/// changes (partial apply: the skipped changes stay pending).
#[derive(Debug, Clone)]
pub struct ApplyItem {
    pub plan: ObjectPlan,
    /// `None`: apply the whole config. `Some(paths)`: apply last-applied
    /// plus only these field changes.
    pub accepted_fields: Option<Vec<FieldPath>>,
    /// `clear` rows released instead of cleared: dropped from the
    /// last-applied annotation, no deletion sent, the live value stays
    /// (another writer owns the field from then on).
    pub released_fields: Vec<FieldPath>,
}

pub use crate::vocab::Propagation;

/// One object of a server-side apply from the TUI: the configuration as
/// `crate::ssa::resolve` reduced it (fields given way left out) and
/// whether the request forces, with the decisions it carries (for the
/// confirmation).
#[derive(Debug, Clone)]
pub struct ServerSideItem {
    pub plan: ObjectPlan,
    pub config: serde_json::Value,
    pub force: bool,
    /// Each decided conflict: its row (path, values, managers) and the decision.
    pub decisions: Vec<(crate::ssa::FieldRow, crate::ssa::Decision)>,
}

/// The outcome of one object of an apply, delete or prune: done
/// ([`ObjectResult::ok`]), not done, or unknown (the write was sent and no
/// answer came, so it may or may not have been made). Its words come from
/// [`ObjectResult::message`] alone; code decides on the variants, never on
/// the words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectResult {
    /// Displayed `Deployment default/nginx`.
    pub object: ObjectRef,
    pub outcome: Outcome,
    /// The outcome is the server's dry run's answer: nothing was written
    /// (`created (server dry run)`). Not set where no request was needed
    /// (`unchanged`).
    pub dry_run: bool,
}

/// What became of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Created,
    Configured,
    /// Applied server-side (`kubectl apply --server-side`'s word).
    ServerSideApplied,
    /// `apply --force`: the server refused the patch (an immutable field),
    /// so the object was deleted and created again from its configuration.
    Replaced,
    /// Nothing to change: no write was needed.
    Unchanged,
    Deleted,
    /// Deleted as a prune candidate.
    Pruned,
    /// A dry run could not check it: what it needs is created by this same
    /// apply first (ok: nothing failed).
    NotChecked(Prerequisite),
    /// Not sent: why, in words (an earlier request failed, the ApplySet
    /// parent could not be written, no session).
    Skipped(String),
    /// Not done.
    Failed(Failure),
    /// Sent without an answer: why, in words ending in "the change may or
    /// may not have been made".
    Unknown(String),
}

/// What a dry run could not check an object without.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prerequisite {
    /// Its namespace, created by this apply.
    Namespace(String),
    /// The CustomResourceDefinition of its kind, created by this apply.
    CustomResourceDefinition,
}

/// Why an object was not done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The cluster does not serve its kind (yet): `Widget.demo.kapply.dev/v1`.
    NotServed(String),
    /// Created by someone else since the plan.
    CreatedSincePlan,
    /// Deleted since the plan.
    DeletedSincePlan,
    /// Changed since the plan: re-planned; the words say what is pending now.
    ChangedSincePlan(String),
    /// Deleted and created again since the plan (the uid precondition of a
    /// delete or prune failed): the server's words.
    Recreated { prune: bool, error: String },
    /// Refused before any request: the plan's error, a partial apply of an
    /// object that does not exist, a release that cannot be, ...
    Refused(String),
    /// The server's dry run failed in a way that stops the run: not written.
    DryRun(String),
    /// The read before the write failed: not written.
    NotApplied(String),
    /// The server's (or the connection's) error.
    Server(String),
    /// The server refused the patch of an existing object as invalid (422:
    /// an immutable field such as a Deployment's selector, a Job's
    /// template): its words. Recreating it (`apply --force`, the TUI's
    /// `F`) replaces the object instead.
    Invalid(String),
    /// `apply --force` deleted the object and could not create it again:
    /// what failed, and whether the original was restored.
    NotRecreated(String),
}

/// How a kind the cluster does not serve is reported (`kind` is
/// `Widget.demo.kapply.dev/v1`).
pub fn not_served(kind: &str) -> String {
    format!("{kind} is not served by the cluster: apply its CustomResourceDefinition first")
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::NotServed(kind) => f.write_str(&not_served(kind)),
            Failure::CreatedSincePlan => {
                f.write_str("created by someone else since the plan; re-plan and review again")
            }
            Failure::DeletedSincePlan => {
                f.write_str("deleted since the plan; re-plan and review again")
            }
            Failure::Recreated { prune, error } => write!(
                f,
                "changed since the plan: the object was deleted and created again (not the one \
                 reviewed); not {}: reload to review it ({error})",
                if *prune { "pruned" } else { "deleted" }
            ),
            Failure::DryRun(e) => write!(f, "not applied (server dry run): {e}"),
            Failure::NotApplied(e) => write!(f, "not applied: {e}"),
            Failure::NotRecreated(m) => write!(f, "DELETED and not created again: {m}"),
            Failure::ChangedSincePlan(m)
            | Failure::Refused(m)
            | Failure::Server(m)
            | Failure::Invalid(m) => f.write_str(m),
        }
    }
}

impl ObjectResult {
    pub fn new(object: ObjectRef, outcome: Outcome) -> ObjectResult {
        ObjectResult {
            object,
            outcome,
            dry_run: false,
        }
    }

    /// The same outcome, as the server's dry run's answer.
    pub fn in_dry_run(mut self) -> ObjectResult {
        self.dry_run = true;
        self
    }

    /// Not done: why.
    pub fn failed(object: ObjectRef, why: Failure) -> ObjectResult {
        ObjectResult::new(object, Outcome::Failed(why))
    }

    /// Done (a dry run's "not checked" counts: nothing failed).
    pub fn ok(&self) -> bool {
        matches!(
            self.outcome,
            Outcome::Created
                | Outcome::Configured
                | Outcome::ServerSideApplied
                | Outcome::Replaced
                | Outcome::Unchanged
                | Outcome::Deleted
                | Outcome::Pruned
                | Outcome::NotChecked(_)
        )
    }

    /// Sent, but whether it was done is not known.
    pub fn unknown(&self) -> bool {
        matches!(self.outcome, Outcome::Unknown(_))
    }

    /// What outputs say of it: `created`, `configured (server dry run)`,
    /// the server's error, why it is unknown.
    pub fn message(&self) -> String {
        let done = |word: &str| {
            if self.dry_run {
                format!("{word} (server dry run)")
            } else {
                word.to_string()
            }
        };
        match &self.outcome {
            Outcome::Created => done("created"),
            Outcome::Configured => done("configured"),
            Outcome::ServerSideApplied => done("serverside-applied"),
            Outcome::Replaced => done("replaced (deleted and created again: --force)"),
            Outcome::Unchanged => done("unchanged"),
            Outcome::Deleted => done("deleted"),
            Outcome::Pruned => done("pruned"),
            Outcome::NotChecked(Prerequisite::Namespace(ns)) => done(&format!(
                "not checked: namespace {ns} is created by this apply"
            )),
            Outcome::NotChecked(Prerequisite::CustomResourceDefinition) => {
                done("not checked: its CustomResourceDefinition is created by this apply")
            }
            Outcome::Skipped(why) | Outcome::Unknown(why) => why.clone(),
            Outcome::Failed(f) => f.to_string(),
        }
    }
}

/// How long a recreate waits for the deleted object to be gone before it
/// gives up (a Deployment's pods take their grace period).
pub const RECREATE_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

/// A run of writes, as [`Engine::write_reporting`] takes it.
#[derive(Debug, Clone)]
pub enum Write {
    Apply(Vec<ApplyItem>),
    Delete(Vec<ObjectPlan>, Propagation),
    Prune(Vec<ObjectPlan>),
    /// An apply in which an update the server refuses as invalid (422) is
    /// replaced: deleted (the reviewed uid as precondition) and created
    /// again, as `kubectl apply --force` does.
    Recreate(Vec<ApplyItem>),
}

impl Write {
    /// How many objects it writes.
    pub fn len(&self) -> usize {
        match self {
            Write::Apply(items) | Write::Recreate(items) => items.len(),
            Write::Delete(objects, _) | Write::Prune(objects) => objects.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a run of writes (apply, delete, prune) reports as it goes, by the
/// position of the item in those given: that its real write (not a dry
/// run) is being sent, and its result once known. A run that is stopped
/// can so tell what was written, what was not sent and what is unknown.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteEvent {
    Sending(usize),
    Done(usize, ObjectResult),
}

/// The server an engine talks to, as the TUI names it while it waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub url: String,
    /// The kubeconfig context (empty when none is named).
    pub context: String,
    /// The namespace objects without one go to (`-n`, else the context's,
    /// else `default`); empty when not known.
    pub namespace: String,
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
    /// How pruning is set up, in words (`--prune -l app=demo`, the kinds it
    /// looks at); `None` when pruning is not enabled.
    fn prune_scope(&self) -> Option<String> {
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
    /// [`Engine::load`], handing the objects to `rows` as they are planned
    /// (in plan order, each kept small), so the TUI lists them while the
    /// rest is read. The plan returned then holds only what was not sent
    /// (none, or the prune candidates) and `prune_skipped`. The default
    /// sends nothing and returns [`Engine::load`]'s plan.
    fn load_rows(
        &self,
        progress: tokio::sync::mpsc::UnboundedSender<Progress>,
        rows: tokio::sync::mpsc::UnboundedSender<Rows>,
    ) -> BoxFuture<'_, Result<Plan, String>> {
        drop(rows);
        self.load(progress)
    }
    /// Server-side dry run of an apply: what the server would say.
    fn dry_run(&self, items: Vec<ApplyItem>) -> BoxFuture<'_, Vec<ObjectResult>>;
    /// [`Engine::dry_run`] (or, for [`Write::Prune`], [`Engine::prune_dry_run`]),
    /// each object's [`WriteEvent::Done`] sent on `events` as the server
    /// answers it, for the confirmation's progress. The default sends none.
    fn dry_run_reporting(
        &self,
        write: Write,
        events: tokio::sync::mpsc::UnboundedSender<WriteEvent>,
    ) -> BoxFuture<'_, Vec<ObjectResult>> {
        drop(events);
        match write {
            Write::Apply(items) | Write::Recreate(items) => self.dry_run(items),
            Write::Prune(objects) => self.prune_dry_run(objects),
            // No dialog dry-runs a delete: nothing checked.
            Write::Delete(..) => Box::pin(async { Vec::new() }),
        }
    }
    fn apply(&self, items: Vec<ApplyItem>) -> BoxFuture<'_, Vec<ObjectResult>>;
    /// Apply server-side as field manager `manager` (`dry_run`: the
    /// server's dry run), each item's reduced configuration with its own
    /// `force`. An engine without a cluster refuses every item.
    fn apply_server_side(
        &self,
        items: Vec<ServerSideItem>,
        manager: String,
        dry_run: bool,
    ) -> BoxFuture<'_, Vec<ObjectResult>> {
        let _ = (manager, dry_run);
        let out = items
            .iter()
            .map(|i| {
                ObjectResult::failed(
                    i.plan.id(),
                    Failure::Refused("this engine does not apply server-side".into()),
                )
            })
            .collect();
        Box::pin(async move { out })
    }
    /// Delete objects (the `D` key).
    fn delete(
        &self,
        objects: Vec<ObjectPlan>,
        propagation: Propagation,
    ) -> BoxFuture<'_, Vec<ObjectResult>>;
    /// Delete prune candidates (reported as pruned).
    fn prune(&self, objects: Vec<ObjectPlan>) -> BoxFuture<'_, Vec<ObjectResult>>;
    /// The server's dry run of a prune: what it would say to each DELETE.
    /// An engine without a cluster answers nothing (the dialog says so).
    fn prune_dry_run(&self, objects: Vec<ObjectPlan>) -> BoxFuture<'_, Vec<ObjectResult>> {
        let _ = objects;
        Box::pin(async { Vec::new() })
    }
    /// Follow the cluster after a load: WATCH what the last load read,
    /// each (resource, namespace) from a LIST's resourceVersion, and send
    /// on `events` every object of the plan that changes (its live object
    /// now) and whether the watches are up. Runs until the task is aborted
    /// (the next load starts another) or it gives up (`Err`: why). The
    /// default follows nothing: the live state stays as the load read it.
    fn watch(
        &self,
        events: tokio::sync::mpsc::UnboundedSender<LiveEvent>,
    ) -> BoxFuture<'_, Result<(), String>> {
        drop(events);
        Box::pin(async { Err("this engine does not follow the cluster".to_string()) })
    }
    /// [`Engine::apply`], [`Engine::delete`] or [`Engine::prune`] (by
    /// `write`), each object's [`WriteEvent`]s sent on `events` as they
    /// happen, for the TUI's progress. The default sends none.
    fn write_reporting(
        &self,
        write: Write,
        events: tokio::sync::mpsc::UnboundedSender<WriteEvent>,
    ) -> BoxFuture<'_, Vec<ObjectResult>> {
        drop(events);
        match write {
            Write::Apply(items) => self.apply(items),
            Write::Delete(objects, propagation) => self.delete(objects, propagation),
            Write::Prune(objects) => self.prune(objects),
            // Only a cluster engine deletes and creates: nothing is sent.
            Write::Recreate(items) => {
                let results = items
                    .iter()
                    .map(|i| {
                        ObjectResult::failed(
                            i.plan.id(),
                            Failure::Refused("this engine cannot recreate objects".into()),
                        )
                    })
                    .collect();
                Box::pin(async move { results })
            }
        }
    }
    /// Where `E` proposes to write the export of `object` (`own_file`: the
    /// manifest file that holds it and nothing else, if any).
    fn export_target(
        &self,
        object: &ObjectPlan,
        own_file: Option<&str>,
    ) -> Result<ExportTarget, String> {
        let _ = (object, own_file);
        Err("export is not available here".into())
    }
    /// GET the object, clean it ([`crate::export::export`]) and write it to
    /// `path`; an existing file is left alone unless `overwrite`.
    fn export(
        &self,
        object: ObjectPlan,
        path: String,
        overwrite: bool,
    ) -> BoxFuture<'_, Result<Exported, String>> {
        let _ = (object, path, overwrite);
        Box::pin(async { Err("export is not available here".to_string()) })
    }
}

/// What [`Engine::watch`] reports.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveEvent {
    /// Every watch is up: the live state shown is the cluster's.
    Watching,
    /// A watch broke and is being made again (backoff): why.
    Interrupted(String),
    /// An object of the plan changed in the cluster: its live object now
    /// (`None`: deleted).
    Changed {
        object: ObjectRef,
        live: Option<serde_json::Value>,
    },
}

/// Objects a load has planned since its last [`Rows`], and how far it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rows {
    /// In plan order, each without its field rows and trees (rebuilt from
    /// the [`Compact`] when shown or acted on).
    pub objects: Vec<(ObjectPlan, Compact)>,
    /// LIST requests answered, and how many the load sends (0: not known yet).
    pub lists_done: usize,
    pub lists_total: usize,
    /// Objects planned so far (these included), and how many manifests.
    pub planned: usize,
    pub total: usize,
}

pub use crate::plan::compact::Compact;

/// Where the TUI's export (`E`) proposes to write an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportTarget {
    pub path: String,
    /// Something the user should know before writing there (the file is
    /// not read back by this run's inputs, the object is also elsewhere).
    pub note: Option<String>,
}

/// What an export did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exported {
    /// Written to this path.
    Written(String),
    /// Nothing written: the file exists (ask before overwriting).
    Exists(String),
    /// Nothing written: the file exists; writing the export into it would
    /// make these changes (`-`/`+` lines with some context), for its own
    /// confirmation.
    Preview { path: String, changes: Vec<String> },
}

/// The exit code of a run with this many failures (objects not read, not
/// written or refused): 1 when any, as kubectl's.
pub fn exit_code(failures: usize) -> u8 {
    u8::from(failures > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words outputs print, one per outcome (the CLI's stdout, the
    /// TUI's log, scripts reading them).
    #[test]
    fn outcomes_are_said_as_before() {
        let r = |o: Outcome| ObjectResult::new(ObjectRef::default(), o);
        assert_eq!(r(Outcome::Created).message(), "created");
        assert_eq!(
            r(Outcome::Configured).in_dry_run().message(),
            "configured (server dry run)"
        );
        assert_eq!(
            r(Outcome::Pruned).in_dry_run().message(),
            "pruned (server dry run)"
        );
        assert_eq!(
            r(Outcome::NotChecked(Prerequisite::Namespace("demo".into())))
                .in_dry_run()
                .message(),
            "not checked: namespace demo is created by this apply (server dry run)"
        );
        let not_served = r(Outcome::Failed(Failure::NotServed(
            "Widget.demo.kapply.dev/v1".into(),
        )));
        assert!(!not_served.ok() && !not_served.unknown());
        assert_eq!(
            not_served.message(),
            "Widget.demo.kapply.dev/v1 is not served by the cluster: apply its \
             CustomResourceDefinition first"
        );
        assert_eq!(
            r(Outcome::Failed(Failure::Recreated {
                prune: true,
                error: "409".into()
            }))
            .message(),
            "changed since the plan: the object was deleted and created again (not the one \
             reviewed); not pruned: reload to review it (409)"
        );
        let unknown = r(Outcome::Unknown("no answer".into()));
        assert!(unknown.unknown() && !unknown.ok());
        let skipped = r(Outcome::Skipped("not sent".into()));
        assert!(!skipped.ok() && !skipped.unknown());
        assert!(r(Outcome::NotChecked(Prerequisite::CustomResourceDefinition)).ok());
    }
}
