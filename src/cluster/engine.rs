//! [`crate::ops::Engine`] over a [`Session`], for the TUI.

use super::applyset::ApplySet;
use super::{ApplyOptions, DeleteOptions, PruneOptions, Session, Target};
use crate::inputs::Inputs;
use crate::manifest::Loaded;
use crate::ops::{
    ApplyItem, Engine, ExportTarget, Exported, ObjectResult, Outcome, Progress, Propagation, Rows,
    Server,
};
use crate::plan::{ObjectPlan, Plan};
use futures::FutureExt;
use futures::future::BoxFuture;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::UnboundedSender;

/// The manifests [`Engine::manifests`] read, kept for the first load: at
/// 10,000 objects a second read costs a second and its memory twice.
enum FirstRead {
    /// Nothing read yet.
    Unread,
    /// Read by `manifests`, not yet planned.
    Ready(Loaded),
    /// A load has begun: every later load reads the files again (they may
    /// have changed), and `manifests` keeps nothing.
    Used,
}

/// Streamed rows go out as each LIST is planned, or every [`BATCH`]
/// objects, so the list fills without a rebuild per object.
const BATCH: usize = 2000;

/// The TUI's engine: a session (connected at once, or later by
/// [`Engine::connect`] from a resolved [`Target`]), where the manifests are
/// (files, URLs or a kustomization, read again on every load), and how to
/// prune. It remembers the ApplySet of the last load for apply and prune.
pub struct KubeEngine {
    /// Where to connect, for an engine made before connecting.
    target: Option<Target>,
    session: Mutex<Option<Arc<Session>>>,
    pub inputs: Inputs,
    pub prune: PruneOptions,
    applyset: Mutex<Option<ApplySet>>,
    first_read: tokio::sync::Mutex<FirstRead>,
    /// What the last load read, by (resource, namespace): what
    /// [`Engine::watch`] follows.
    followed: Mutex<Vec<super::watch::Followed>>,
}

/// Why a write was not sent: no session (the TUI offers no write then).
const NOT_CONNECTED: &str = "not connected to the cluster: nothing was sent";

impl KubeEngine {
    /// A write (or, with `dry_run`, its server dry run), each object's
    /// [`crate::ops::WriteEvent`]s sent on `events` as they happen. No
    /// dialog dry-runs a delete: that answers nothing.
    fn reporting(
        &self,
        write: crate::ops::Write,
        events: UnboundedSender<crate::ops::WriteEvent>,
        dry_run: bool,
    ) -> BoxFuture<'_, Vec<ObjectResult>> {
        use crate::ops::Write;
        async move {
            if dry_run && matches!(write, Write::Delete(..)) {
                return Vec::new();
            }
            let Some(session) = self.session() else {
                return match write {
                    Write::Apply(items) | Write::Recreate(items) => {
                        not_sent(items.iter().map(|i| i.plan.id()))
                    }
                    Write::Delete(o, _) | Write::Prune(o) => not_sent(o.iter().map(ObjectPlan::id)),
                };
            };
            let report = super::Report {
                events: Some(events),
                ..Default::default()
            };
            match write {
                Write::Apply(items) => {
                    let opts = ApplyOptions {
                        dry_run,
                        applyset: self.applyset(),
                        report,
                        force: None,
                        field_manager: None,
                    };
                    session.apply(items, &opts).await
                }
                // As `kapply apply --force`: the objects' own grace period.
                Write::Recreate(items) => {
                    let opts = ApplyOptions {
                        dry_run,
                        applyset: self.applyset(),
                        report,
                        force: Some(super::Replace {
                            grace_period: None,
                            timeout: super::Replace::WAIT,
                        }),
                        field_manager: None,
                    };
                    session.apply(items, &opts).await
                }
                Write::Delete(objects, propagation) => {
                    let opts = DeleteOptions {
                        propagation,
                        dry_run,
                        report,
                    };
                    session.delete(&objects, &opts).await
                }
                Write::Prune(objects) => {
                    let set = self.applyset();
                    session
                        .prune_reporting(&objects, set.as_ref(), dry_run, &report)
                        .await
                }
            }
        }
        .boxed()
    }

    /// An engine over a connected session. An empty
    /// `load.default_namespace` takes the session's namespace.
    pub fn new(
        session: Arc<Session>,
        inputs: impl Into<Inputs>,
        prune: PruneOptions,
    ) -> KubeEngine {
        let mut inputs = inputs.into();
        if inputs.load.default_namespace.is_empty() {
            inputs.load.default_namespace = session.namespace().to_string();
        }
        KubeEngine {
            target: None,
            session: Mutex::new(Some(session)),
            inputs,
            prune,
            applyset: Mutex::new(None),
            first_read: tokio::sync::Mutex::new(FirstRead::Unread),
            followed: Mutex::new(Vec::new()),
        }
    }

    /// An engine that connects to `target` when [`Engine::connect`] is
    /// called (no request is sent before). An empty
    /// `load.default_namespace` takes the target's namespace.
    pub fn connecting(
        target: Target,
        inputs: impl Into<Inputs>,
        prune: PruneOptions,
    ) -> KubeEngine {
        let mut inputs = inputs.into();
        if inputs.load.default_namespace.is_empty() {
            inputs.load.default_namespace = target.namespace.clone();
        }
        KubeEngine {
            target: Some(target),
            session: Mutex::new(None),
            inputs,
            prune,
            applyset: Mutex::new(None),
            first_read: tokio::sync::Mutex::new(FirstRead::Unread),
            followed: Mutex::new(Vec::new()),
        }
    }

    /// The session, once connected.
    pub fn session(&self) -> Option<Arc<Session>> {
        self.session.lock().ok().and_then(|s| s.clone())
    }

    fn applyset(&self) -> Option<ApplySet> {
        self.applyset.lock().ok().and_then(|s| s.clone())
    }

    /// The manifests for a load: those `manifests` read for the first one
    /// (waiting for that read when it is under way), else read now.
    async fn read_for_load(&self) -> Result<Loaded, String> {
        let kept = {
            let mut first = self.first_read.lock().await;
            match std::mem::replace(&mut *first, FirstRead::Used) {
                FirstRead::Ready(l) => Some(l),
                _ => None,
            }
        };
        match kept {
            Some(l) => Ok(l),
            None => crate::inputs::load(&self.inputs)
                .await
                .map_err(|e| format!("{e:#}")),
        }
    }
}

/// Every item reported not sent (no session).
fn not_sent(names: impl Iterator<Item = crate::objref::ObjectRef>) -> Vec<ObjectResult> {
    names
        .map(|n| ObjectResult::new(n, Outcome::Skipped(NOT_CONNECTED.into())))
        .collect()
}

impl Engine for KubeEngine {
    fn server(&self) -> Option<Server> {
        let (url, context, namespace) = match (&self.target, self.session()) {
            (Some(t), _) => (t.url.clone(), t.context.clone(), t.namespace.clone()),
            (None, Some(s)) => (
                s.url().to_string(),
                s.context().to_string(),
                s.namespace().to_string(),
            ),
            (None, None) => return None,
        };
        // The demo server's token rides in its URL's path: never shown.
        let url = match url.split_once(crate::server::TOKEN_PATH) {
            Some((base, _)) => base.to_string(),
            None => url,
        };
        Some(Server {
            url,
            context,
            namespace,
        })
    }

    fn prune_scope(&self) -> Option<String> {
        use crate::cluster::PruneMode;
        match &self.prune.mode {
            PruneMode::None => None,
            PruneMode::Allowlist {
                selector,
                allowlist,
                ..
            } => {
                let how = match selector {
                    Some(s) => format!("--prune -l {s}"),
                    None => "--prune --all".to_string(),
                };
                let kinds = if allowlist.is_empty() {
                    crate::cluster::default_prune_allowlist()
                } else {
                    allowlist.clone()
                };
                Some(format!(
                    "{how}; the kinds looked at: {}",
                    kinds
                        .iter()
                        .map(|k| k.rsplit('/').next().unwrap_or(k))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
            PruneMode::ApplySet { parent, .. } => Some(format!(
                "--prune --applyset {parent}; the kinds looked at: those the ApplySet records"
            )),
        }
    }

    fn connect(&self) -> BoxFuture<'_, Result<(), String>> {
        async move {
            // Made connected: nothing to do. Otherwise a fresh session each
            // time (a retry must not reuse what failed: discovery, credentials).
            let Some(target) = &self.target else {
                return Ok(());
            };
            let session = Session::open(target).await.map_err(|e| e.to_string())?;
            if let Ok(mut s) = self.session.lock() {
                *s = Some(session);
            }
            Ok(())
        }
        .boxed()
    }

    fn manifests(&self) -> BoxFuture<'_, Result<Plan, String>> {
        async move {
            // Held while reading: a load that starts meanwhile waits for
            // this read instead of making its own.
            let first = self.first_read.lock().await;
            let mut first = (!matches!(*first, FirstRead::Used)).then_some(first);
            let loaded = crate::inputs::load(&self.inputs)
                .await
                .map_err(|e| format!("{e:#}"))?;
            let rows = super::live::unplanned(&loaded);
            if let Some(first) = first.as_mut() {
                **first = FirstRead::Ready(loaded);
            }
            Ok(rows)
        }
        .boxed()
    }

    fn load(&self, progress: UnboundedSender<Progress>) -> BoxFuture<'_, Result<Plan, String>> {
        async move {
            let session = self.session().ok_or_else(|| NOT_CONNECTED.to_string())?;
            let loaded = self.read_for_load().await?;
            // The load is handed over (no copy); live objects move into the plan.
            let planned = session
                .plan(loaded, &self.prune, Some(progress))
                .await
                .map_err(|e| e.to_string())?;
            if let Ok(mut s) = self.applyset.lock() {
                *s = planned.applyset;
            }
            Ok(planned.plan)
        }
        .boxed()
    }

    fn load_rows(
        &self,
        progress: UnboundedSender<Progress>,
        rows: UnboundedSender<Rows>,
    ) -> BoxFuture<'_, Result<Plan, String>> {
        async move {
            let session = self.session().ok_or_else(|| NOT_CONNECTED.to_string())?;
            let loaded = self.read_for_load().await?;
            // Progress passes through here: each answered group is a LIST
            // done (its rows go out with it); once discovery is done the
            // planner says how many LISTs it sends.
            let lists_done = AtomicUsize::new(0);
            let lists_total = AtomicUsize::new(0);
            let total = AtomicUsize::new(loaded.manifests.len());
            let pending: Mutex<(Vec<(ObjectPlan, crate::ops::Compact)>, usize)> =
                Mutex::new((Vec::new(), 0));
            // Each row's live resourceVersion, for following the cluster.
            let versions: Mutex<Vec<Version>> = Mutex::new(Vec::new());
            let flush = || {
                let Ok(mut p) = pending.lock() else {
                    return;
                };
                if p.0.is_empty() {
                    return;
                }
                let lists_done = lists_done.load(Ordering::Relaxed);
                let _ = rows.send(Rows {
                    objects: std::mem::take(&mut p.0),
                    lists_done,
                    lists_total: lists_total.load(Ordering::Relaxed).max(lists_done),
                    planned: p.1,
                    total: total.load(Ordering::Relaxed),
                });
            };
            let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel::<Progress>();
            let counter = async {
                while let Some(p) = prx.recv().await {
                    total.store(p.total, Ordering::Relaxed);
                    lists_total.store(p.lists, Ordering::Relaxed);
                    if p.done > 0 {
                        lists_done.fetch_add(1, Ordering::Relaxed);
                        // The rows of this group (and those before it) are
                        // emitted by now: the planner waits on the next LIST.
                        flush();
                    }
                    let _ = progress.send(p);
                }
            };
            // Each row is made small where it is planned (on the planning
            // threads): its config, live object and field rows are what the
            // memory would hold at 10,000.
            let planning = session.source(&self.prune, Some(ptx)).plan_each(
                loaded,
                true,
                |p: ObjectPlan| {
                    let rv = followable(&p).then(|| {
                        let rv = p.live.as_ref().and_then(super::watch::resource_version);
                        (p.id(), p.api_version.clone(), rv)
                    });
                    (crate::plan::compact::split(p), rv)
                },
                |(row, rv)| {
                    if let (Some(v), Ok(mut vs)) = (rv, versions.lock()) {
                        vs.push(v);
                    }
                    let full = match pending.lock() {
                        Ok(mut p) => {
                            p.0.push(row);
                            p.1 += 1;
                            p.0.len() >= BATCH
                        }
                        Err(_) => false,
                    };
                    if full {
                        flush();
                    }
                },
            );
            let (planned_plan, ()) = futures::join!(planning, counter);
            let planned_plan = planned_plan.map_err(|e| e.to_string())?;
            flush();
            if let (Ok(vs), Ok(mut f)) = (versions.into_inner(), self.followed.lock()) {
                *f = followed(vs);
            }
            if let Ok(mut s) = self.applyset.lock() {
                *s = planned_plan.applyset;
            }
            Ok(planned_plan.plan)
        }
        .boxed()
    }

    fn dry_run(&self, items: Vec<ApplyItem>) -> BoxFuture<'_, Vec<ObjectResult>> {
        async move {
            let opts = ApplyOptions {
                dry_run: true,
                applyset: self.applyset(),
                ..Default::default()
            };
            match self.session() {
                Some(session) => session.apply(items, &opts).await,
                None => not_sent(items.iter().map(|i| i.plan.id())),
            }
        }
        .boxed()
    }

    fn apply(&self, items: Vec<ApplyItem>) -> BoxFuture<'_, Vec<ObjectResult>> {
        async move {
            let opts = ApplyOptions {
                dry_run: false,
                applyset: self.applyset(),
                ..Default::default()
            };
            match self.session() {
                Some(session) => session.apply(items, &opts).await,
                None => not_sent(items.iter().map(|i| i.plan.id())),
            }
        }
        .boxed()
    }

    fn apply_server_side(
        &self,
        items: Vec<crate::ops::ServerSideItem>,
        manager: String,
        dry_run: bool,
    ) -> BoxFuture<'_, Vec<ObjectResult>> {
        async move {
            let Some(session) = self.session() else {
                return not_sent(items.iter().map(|i| i.plan.id()));
            };
            let ids: Vec<_> = items.iter().map(|i| i.plan.id()).collect();
            // `force` is per request: the forced objects go in one run, the
            // others in another; the results come back in the items' order.
            let mut results: Vec<Option<ObjectResult>> = vec![None; items.len()];
            for force in [true, false] {
                let (idx, manifests): (Vec<usize>, Vec<_>) = items
                    .iter()
                    .enumerate()
                    .filter(|(_, it)| it.force == force)
                    .map(|(n, it)| (n, super::ssa::manifest_of(&it.plan, it.config.clone())))
                    .unzip();
                if manifests.is_empty() {
                    continue;
                }
                let opts = super::ServerSideOptions {
                    field_manager: manager.clone(),
                    force,
                    dry_run,
                    default_namespace: session.namespace().to_string(),
                    namespace_flag: None,
                };
                let out = session.apply_server_side(manifests, &opts, |_| {}).await;
                for (n, r) in idx.into_iter().zip(out) {
                    results[n] = Some(super::ssa::object_result(r, dry_run));
                }
            }
            results
                .into_iter()
                .zip(ids)
                .map(|(r, id)| {
                    r.unwrap_or_else(|| ObjectResult::new(id, Outcome::Skipped("not sent".into())))
                })
                .collect()
        }
        .boxed()
    }

    fn delete(
        &self,
        objects: Vec<ObjectPlan>,
        propagation: Propagation,
    ) -> BoxFuture<'_, Vec<ObjectResult>> {
        async move {
            let opts = DeleteOptions {
                propagation,
                dry_run: false,
                ..Default::default()
            };
            match self.session() {
                Some(session) => session.delete(&objects, &opts).await,
                None => not_sent(objects.iter().map(ObjectPlan::id)),
            }
        }
        .boxed()
    }

    fn dry_run_reporting(
        &self,
        write: crate::ops::Write,
        events: UnboundedSender<crate::ops::WriteEvent>,
    ) -> BoxFuture<'_, Vec<ObjectResult>> {
        self.reporting(write, events, true)
    }

    fn write_reporting(
        &self,
        write: crate::ops::Write,
        events: UnboundedSender<crate::ops::WriteEvent>,
    ) -> BoxFuture<'_, Vec<ObjectResult>> {
        self.reporting(write, events, false)
    }

    fn prune(&self, objects: Vec<ObjectPlan>) -> BoxFuture<'_, Vec<ObjectResult>> {
        async move {
            let set = self.applyset();
            match self.session() {
                Some(session) => session.prune(&objects, set.as_ref(), false).await,
                None => not_sent(objects.iter().map(ObjectPlan::id)),
            }
        }
        .boxed()
    }

    fn prune_dry_run(&self, objects: Vec<ObjectPlan>) -> BoxFuture<'_, Vec<ObjectResult>> {
        async move {
            let set = self.applyset();
            match self.session() {
                Some(session) => session.prune(&objects, set.as_ref(), true).await,
                None => not_sent(objects.iter().map(ObjectPlan::id)),
            }
        }
        .boxed()
    }

    fn watch(
        &self,
        events: UnboundedSender<crate::ops::LiveEvent>,
    ) -> BoxFuture<'_, Result<(), String>> {
        async move {
            let session = self.session().ok_or_else(|| NOT_CONNECTED.to_string())?;
            let groups = self.followed.lock().map(|f| f.clone()).unwrap_or_default();
            session
                .follow(groups, events)
                .await
                .map_err(|e| e.to_string())
        }
        .boxed()
    }

    /// The object's own manifest file when it holds nothing else (the
    /// export replaces it); otherwise `kind-name.yaml` in the manifest
    /// directory (the `-k` directory, the `-f` directory, or the directory
    /// of the `-f` file), with a note when this run will not read it back.
    fn export_target(
        &self,
        object: &ObjectPlan,
        own_file: Option<&str>,
    ) -> Result<ExportTarget, String> {
        use std::path::{Path, PathBuf};
        // Never the object's own manifest by default: it holds the pending
        // change and its comments (writing into it is asked separately).
        let _ = own_file;
        let name = crate::export::file_name(&serde_json::json!({
            "kind": object.kind, "metadata": {"name": object.name}
        }));
        let local = self
            .inputs
            .load
            .paths
            .iter()
            .find(|p| !is_url(p) && p.as_os_str() != "-");
        let (dir, mut note): (PathBuf, Option<String>) = match (&self.inputs.kustomize, local) {
            (Some(k), _) => (
                k.clone(),
                Some(format!(
                    "kustomize reads it only once it is listed under resources: in {}",
                    k.join("kustomization.yaml").display()
                )),
            ),
            (None, Some(p)) if p.is_dir() => (p.clone(), None),
            (None, Some(p)) => (
                p.parent()
                    .filter(|d| !d.as_os_str().is_empty())
                    .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
                Some(format!(
                    "this run reads {} only: pass the export with -f too",
                    p.display()
                )),
            ),
            (None, None) => (
                PathBuf::from("."),
                Some("the manifests are not local files: pass the export with -f".into()),
            ),
        };
        if let Some(src) = &object.source {
            note = Some(format!(
                "also defined at {src}: remove it there, or the reload reports it defined twice"
            ));
        }
        // A new file: `kind-name.yaml`, else `kind-name-2.yaml`, ...
        let stem = name.strip_suffix(".yaml").unwrap_or(&name).to_string();
        let path = (1..1000)
            .map(|n| match n {
                1 => dir.join(&name),
                n => dir.join(format!("{stem}-{n}.yaml")),
            })
            .find(|p| !p.exists())
            .unwrap_or_else(|| dir.join(&name));
        Ok(ExportTarget {
            path: path.display().to_string(),
            note,
        })
    }

    fn export(
        &self,
        object: ObjectPlan,
        path: String,
        overwrite: bool,
    ) -> BoxFuture<'_, Result<Exported, String>> {
        async move {
            let name = object.id();
            let session = self.session().ok_or_else(|| NOT_CONNECTED.to_string())?;
            let res = session
                .resource(&object.api_version, &object.kind)
                .await
                .map_err(|e| format!("{name}: {e}"))?;
            let live = session
                .get_object(&res, object.namespace.as_deref(), &object.name)
                .await
                .map_err(|e| format!("{name}: {e}"))?;
            let text = crate::yaml::to_yaml(&crate::export::export(&live));
            // Into an existing file (asked separately): its object's
            // document replaced, or the export added as a document; the
            // file's other documents and comments are kept, never the
            // whole file replaced.
            let into = |path: &str| match source_of(&object) {
                Some((file, line)) if same_file(file, path) => replace_in_file(path, line, &text),
                _ => append_to_file(path, &text),
            };
            if overwrite && std::path::Path::new(&path).is_file() {
                let (_, new) = into(&path)?;
                return write_export(&path, &new, true);
            }
            match write_export(&path, &text, overwrite)? {
                // What writing into it would change, for its own confirmation.
                Exported::Exists(p) => {
                    let (old, new) = into(&p)?;
                    let changes = if object.kind == "Secret" {
                        vec!["(a Secret: its values are not shown)".to_string()]
                    } else {
                        crate::text::line_changes(&old, &new)
                    };
                    Ok(Exported::Preview { path: p, changes })
                }
                done => Ok(done),
            }
        }
        .boxed()
    }
}

/// A row's identity, apiVersion and live resourceVersion.
type Version = (crate::objref::ObjectRef, String, Option<String>);

/// Whether a row is followed in the cluster: a manifest's object planned
/// against its live state (not an error row, not a prune candidate).
fn followable(p: &ObjectPlan) -> bool {
    use crate::plan::ObjectAction;
    !p.kind.is_empty()
        && matches!(
            p.action,
            ObjectAction::Create | ObjectAction::Update | ObjectAction::Unchanged
        )
}

/// The rows' identities and live resourceVersions, by (resource, namespace).
fn followed(versions: Vec<Version>) -> Vec<super::watch::Followed> {
    let mut groups: std::collections::BTreeMap<_, super::watch::Followed> =
        std::collections::BTreeMap::new();
    for (id, api_version, rv) in versions {
        let key = (api_version.clone(), id.kind.clone(), id.namespace.clone());
        let g = groups.entry(key).or_insert_with(|| super::watch::Followed {
            api_version,
            kind: id.kind.clone(),
            namespace: id.namespace.clone(),
            members: Default::default(),
        });
        g.members.insert(id.name.clone(), (id, rv));
    }
    groups.into_values().collect()
}

/// The local manifest file and line an object was read from.
fn source_of(object: &ObjectPlan) -> Option<(&str, usize)> {
    let (file, line) = object.source.as_deref()?.rsplit_once(':')?;
    let line = line.parse().ok()?;
    (!is_url(std::path::Path::new(file))).then_some((file, line))
}

fn same_file(a: &str, b: &str) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The file's text, and with the export over the document at `line` of `path`, keeping the
/// file's other documents. Refused when that document is not this one
/// object alone (a `kind: List`), or the result would not read back.
fn replace_in_file(path: &str, line: usize, doc: &str) -> Result<(String, String), String> {
    let p = std::path::Path::new(path);
    let old = std::fs::read_to_string(p).map_err(|e| format!("{path}: {e}"))?;
    let opts = crate::manifest::LoadOptions::default();
    let before = crate::manifest::parse_str(&old, p, &opts);
    let new = crate::export::replace_document(&old, line, doc)
        .ok_or_else(|| format!("{path}:{line}: no document starts there; the file changed"))?;
    let after = crate::manifest::parse_str(&new, p, &opts);
    if after.manifests.len() != before.manifests.len() || !after.errors.is_empty() {
        return Err(format!(
            "{path}:{line}: that document holds more than this object (a list?); \
             export to another file and remove the object from it by hand"
        ));
    }
    Ok((old, new))
}

/// The file's text, and with the export added as a document of its own
/// (after `---`), keeping everything the file holds.
fn append_to_file(path: &str, doc: &str) -> Result<(String, String), String> {
    let old = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut new = old.clone();
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    if !new.trim().is_empty() {
        new.push_str("---\n");
    }
    new.push_str(doc);
    Ok((old, new))
}

fn is_url(p: &std::path::Path) -> bool {
    crate::inputs::is_url(p)
}

/// Write an export; an existing file only when `overwrite` (checked by the
/// open itself, so a file created meanwhile is not lost).
fn write_export(path: &str, text: &str, overwrite: bool) -> Result<Exported, String> {
    // A file with a Secret's values is readable by its owner only.
    let private = crate::files::holds_secret(text, std::path::Path::new(path));
    match crate::files::write(
        std::path::Path::new(path),
        text.as_bytes(),
        overwrite,
        private,
    ) {
        Ok(()) => Ok(Exported::Written(path.to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Ok(Exported::Exists(path.to_string()))
        }
        Err(e) => Err(format!("{path}: {e}")),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// The TUI's export (`E`) writes a file holding a Secret owner-only,
    /// new or replacing one; other files keep the usual mode.
    #[test]
    fn an_exported_secret_is_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  k: dg==\n";
        let path = dir.path().join("secret-s.yaml");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let p = path.to_str().unwrap();
        assert!(matches!(
            write_export(p, secret, false),
            Ok(Exported::Exists(_))
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert!(matches!(
            write_export(p, secret, true),
            Ok(Exported::Written(_))
        ));
        assert_eq!(mode(&path), 0o600);
        let cm = dir.path().join("configmap-c.yaml");
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
        write_export(cm.to_str().unwrap(), text, false).unwrap();
        // As any file the user creates (umask).
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "").unwrap();
        assert_eq!(mode(&cm), mode(&plain));
    }
}
