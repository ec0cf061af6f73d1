//! Applying, deleting and pruning, object by object, as kubectl does on the
//! wire; with a server-side dry run first and an optimistic-concurrency check
//! kubectl does not have.

use super::applyset::ApplySet;
use super::deps::{
    creation_body, partial_config, partial_from_plan, release_from_last_applied, release_refusal,
    three_way,
};
use super::discovery::ResourceInfo;
use super::live::fill_type;
use super::{ClusterError, FIELD_MANAGER, Session, collect_vec, go_body};
use crate::fieldpath::{FieldPath, Step};
use crate::merge::{LAST_APPLIED, Patch};
use crate::objref::ObjectRef;
use crate::ops::{
    ApplyItem, Failure, ObjectResult, Outcome, Prerequisite, Propagation, WriteEvent,
};
use crate::patchmeta::PatchMeta;
use crate::plan::{ObjectAction, ObjectPlan};
use futures::StreamExt;
use http::Method;
use serde_json::{Value, json};

/// How to apply.
#[derive(Debug, Clone, Default)]
pub struct ApplyOptions {
    /// Only the server-side dry run (`--dry-run=server`): nothing is written.
    pub dry_run: bool,
    /// The ApplySet the plan was made for ([`super::Planned::applyset`]): its
    /// parent is written (recorded kinds + current ones) before the members.
    pub applyset: Option<ApplySet>,
    /// Where results go as they are known, and how to stop the run.
    pub report: Report,
    /// `--force`: an update the server refuses as invalid is replaced.
    pub force: Option<Replace>,
    /// `--field-manager`: the manager of the writes' Update entries
    /// (`None`: kubectl's `kubectl-client-side-apply`).
    pub field_manager: Option<String>,
}

impl ApplyOptions {
    fn manager(&self) -> &str {
        self.field_manager.as_deref().unwrap_or(FIELD_MANAGER)
    }
}

/// `apply --force`, with kubectl's meaning: an object whose patch the
/// server refuses as invalid (422: an immutable field such as a
/// Deployment's selector) is deleted and created again from its
/// configuration. Unlike kubectl, the delete carries the reviewed uid as
/// its precondition, so an object created again by someone else since the
/// plan is not the one deleted; a 409 (changed since the plan) is never
/// replaced.
#[derive(Debug, Clone, Default)]
pub struct Replace {
    /// `gracePeriodSeconds` of the delete (`--grace-period`); none: the
    /// object's own.
    pub grace_period: Option<i64>,
    /// How long to wait for the object to be gone before creating it
    /// again (`--timeout`).
    pub timeout: std::time::Duration,
}

impl Replace {
    /// How long a replace waits for the deleted object to be gone when
    /// no `--timeout` says (a Deployment's pods take their grace period).
    pub const WAIT: std::time::Duration = crate::ops::RECREATE_WAIT;

    /// From `--grace-period` (negative: the object's own) and `--timeout`
    /// (zero: [`Replace::WAIT`]), as kubectl reads them.
    pub fn from_flags(grace_period: i64, timeout: std::time::Duration) -> Replace {
        Replace {
            grace_period: (grace_period >= 0).then_some(grace_period),
            timeout: if timeout.is_zero() {
                Replace::WAIT
            } else {
                timeout
            },
        }
    }
}

/// How to delete.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub propagation: Propagation,
    pub dry_run: bool,
    /// Where results go as they are known, and how to stop the run.
    pub report: Report,
}

/// How a run of writes is watched and stopped: each item's
/// [`WriteEvent`]s go to `events` as they happen; once [`Stop::stop`] is
/// called, nothing more is sent (the requests in flight finish) and the
/// items not sent are reported so.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub events: Option<tokio::sync::mpsc::UnboundedSender<WriteEvent>>,
    pub stop: Stop,
}

impl Report {
    fn sending(&self, i: usize) {
        if let Some(tx) = &self.events {
            let _ = tx.send(WriteEvent::Sending(i));
        }
    }

    fn done(&self, i: usize, r: &ObjectResult) {
        if let Some(tx) = &self.events {
            let _ = tx.send(WriteEvent::Done(i, r.clone()));
        }
    }
}

/// Stops a run of writes from outside (a signal): shared by clones.
#[derive(Debug, Clone, Default)]
pub struct Stop(std::sync::Arc<std::sync::Mutex<Option<String>>>);

impl Stop {
    /// Send nothing more; `why` ends up in the results of what is not sent
    /// (`not sent: interrupted by SIGINT`).
    pub fn stop(&self, why: impl Into<String>) {
        if let Ok(mut g) = self.0.lock()
            && g.is_none()
        {
            *g = Some(why.into());
        }
    }

    fn reason(&self) -> Option<String> {
        self.0.lock().ok()?.clone()
    }
}

/// How many times a PATCH whose object changed since the plan (409 on its
/// resourceVersion) is computed again and resent when the change is still
/// the one reviewed (kubectl's apply retries a conflict five times too).
const MAX_CONFLICTS: usize = 5;

/// The results of a run, each sent to the [`Report`] when set.
struct Slots<'r> {
    results: Vec<Option<ObjectResult>>,
    report: &'r Report,
}

impl Slots<'_> {
    fn put(&mut self, i: usize, r: ObjectResult) {
        self.report.done(i, &r);
        self.results[i] = Some(r);
    }
}

/// One prepared write.
enum Write {
    Create {
        path: String,
        /// Encoded once (as kubectl encodes it), sent for the dry run and the
        /// write; the tree it came from is dropped at once.
        body: bytes::Bytes,
    },
    Patch {
        path: String,
        patch: Patch,
        rv: Option<String>,
        get: String,
        /// The configuration the patch was computed from, to compute it
        /// again when the object changed since the plan.
        config: Value,
        /// Paths released (kept out of the last-applied the patch is
        /// computed against), for that same computation.
        released: Vec<FieldPath>,
        /// Where the object is created again by `--force`, and the uid of
        /// the one reviewed, its delete's precondition.
        collection: String,
        uid: Option<String>,
    },
}

/// What an item turned into before any request.
enum Prepared {
    Done(ObjectResult),
    Send(Write),
}

fn ok(object: ObjectRef, outcome: Outcome) -> ObjectResult {
    ObjectResult::new(object, outcome)
}

fn fail(object: ObjectRef, why: Failure) -> ObjectResult {
    ObjectResult::failed(object, why)
}

/// Not sent: why.
fn skipped(object: ObjectRef, why: String) -> ObjectResult {
    ObjectResult::new(object, Outcome::Skipped(why))
}

/// A failed request: a kind not served is told apart from the rest.
fn failure(e: &ClusterError) -> Failure {
    match e {
        ClusterError::NotServed(kind) => Failure::NotServed(kind.clone()),
        e => Failure::Server(e.to_string()),
    }
}

/// The result of a real write that failed: unknown when the request went
/// out and no answer came back, failed otherwise.
fn write_failed(object: ObjectRef, e: &ClusterError) -> ObjectResult {
    if e.fate_unknown() {
        ObjectResult::new(object, Outcome::Unknown(e.unknown_outcome()))
    } else {
        fail(object, failure(e))
    }
}

/// Stops a run at the first sign that the server cannot be talked to
/// (unreachable, silent, connection lost, credentials refused): what is not
/// sent yet is reported not applied, instead of each object waiting out its
/// own timeout against a server that is gone.
#[derive(Default)]
struct Halt(std::sync::Mutex<Option<String>>, Stop);

impl Halt {
    fn new(stop: &Stop) -> Halt {
        Halt(std::sync::Mutex::new(None), stop.clone())
    }

    /// Why the run stopped, if it did: the message for an object not sent.
    fn stopped(&self) -> Option<String> {
        if let Some(why) = self.0.lock().ok().and_then(|g| g.clone()) {
            return Some(format!("not sent, an earlier request failed: {why}"));
        }
        self.1.reason().map(|why| format!("not sent: {why}"))
    }

    fn note(&self, e: &ClusterError) {
        if e.is_fatal()
            && let Ok(mut g) = self.0.lock()
            && g.is_none()
        {
            // The cause alone: the objects told of it were never sent.
            *g = Some(e.cause());
        }
    }
}

fn is_first(p: &ObjectPlan) -> bool {
    (p.api_version == "v1" && p.kind == "Namespace")
        || (p.api_version.starts_with("apiextensions.k8s.io/")
            && p.kind == "CustomResourceDefinition")
}

/// The group a CustomResourceDefinition's row defines: its config's
/// `spec.group` (kept for the first phase by [`lighten`]).
fn defined_group(p: &ObjectPlan) -> Option<&str> {
    p.config.as_ref()?.pointer("/spec/group")?.as_str()
}

fn last_applied_of(live: &Value) -> Option<Value> {
    crate::merge::last_applied_value(live)
        .and_then(Value::as_str)
        .and_then(|s| serde_json::from_str(s).ok())
}

/// The last-applied configuration a patch is computed against: the live
/// annotation, without the released fields (so no deletion is sent for
/// them).
fn base_last_applied(config: &Value, live: &Value, released: &[FieldPath]) -> Option<Value> {
    let la = last_applied_of(live);
    if released.is_empty() {
        la
    } else {
        release_from_last_applied(config, la.as_ref(), released)
    }
}

fn resource_version(live: &Value) -> Option<String> {
    live.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Whether `config` against `live` (read again, changed since the plan)
/// still makes `reviewed`: then what is sent is what the user reviewed.
fn same_patch(
    plan: &ObjectPlan,
    config: &Value,
    live: &Value,
    released: &[FieldPath],
    reviewed: &Patch,
) -> bool {
    let schema = PatchMeta::builtin().root(&plan.api_version, &plan.kind);
    matches!(
        three_way(config, live, base_last_applied(config, live, released).as_ref(), schema),
        Ok(t) if t.patch.as_ref() == Some(reviewed)
    )
}

/// Drop what an item no longer needs once prepared. Kept: its identity
/// (results name it), the config of Namespaces and CRDs (the second phase
/// reads their group), and for a patch its field changes (to say what
/// differs when the object changed since the plan).
fn lighten(item: &mut ApplyItem, prepared: &Prepared) {
    let p = &mut item.plan;
    if is_first(p) {
        return;
    }
    p.live = None;
    p.last_applied = None;
    p.patch = None;
    p.config = None;
    if !matches!(prepared, Prepared::Send(Write::Patch { .. })) {
        p.fields = Vec::new();
    }
}

/// What apply and delete read of a live object once it is planned: its
/// resourceVersion (the check that it did not change since the plan) and
/// uid (the precondition of a delete or prune).
fn live_stub(live: &Value) -> Value {
    let mut meta = serde_json::Map::new();
    for k in ["resourceVersion", "uid"] {
        if let Some(v) = live.pointer(&format!("/metadata/{k}")) {
            meta.insert(k.into(), v.clone());
        }
    }
    json!({ "metadata": meta })
}

/// A planned row cut down, as soon as it is planned, to what
/// [`Session::apply`] (of whole objects, without a plan file) and
/// [`Session::prune`] read of it: at 10,000 objects the trees of every row
/// held until the confirmation are most of the memory. Kept: identity,
/// action, error and prune reason (the summary line), the config of a
/// create or update, the patch and the field changes of an update (the
/// summary counts them; a re-plan says which differ), and of the live
/// object only its resourceVersion and uid. A row with an error is kept
/// whole (it is applied again when its CRD comes first).
///
/// The config of a create (but a Namespace's or a CRD's, which the first
/// phase reads) becomes its request body at once, encoded as it is sent
/// (a few times smaller than its tree): pass it to
/// [`Session::apply_encoded`] with the row.
pub fn slim_for_apply(mut p: ObjectPlan) -> (ObjectPlan, Option<bytes::Bytes>) {
    if p.action == ObjectAction::Error {
        return (p, None);
    }
    slim_live(&mut p);
    let mut body = None;
    match p.action {
        ObjectAction::Create => {
            p.fields = Vec::new();
            if !is_first(&p) {
                body = p.config.take().map(|c| go_body(&creation_body(&c)));
            }
        }
        ObjectAction::Update => p
            .fields
            .retain(|f| f.action != crate::merge::FieldAction::Keep),
        _ => drop_writes(&mut p),
    }
    (p, body)
}

/// What `apply` keeps of each planned row, cut on the planning threads:
/// [`slim_for_apply`], or the whole row with no body when `whole` (a saved
/// plan's partial apply reads every field).
pub fn rows_for_apply(
    whole: bool,
) -> impl Fn(ObjectPlan) -> (ObjectPlan, Option<bytes::Bytes>) + Send + Sync + 'static {
    move |p| {
        if whole { (p, None) } else { slim_for_apply(p) }
    }
}

/// [`slim_for_apply`] for `delete`: only the identity and, of the live
/// object, its uid (the delete's precondition) and resourceVersion.
pub fn slim_for_delete(mut p: ObjectPlan) -> ObjectPlan {
    slim_live(&mut p);
    drop_writes(&mut p);
    p
}

/// What neither apply nor delete reads once planned: the last-applied and
/// the warnings; of the live object only its [`live_stub`] stays.
fn slim_live(p: &mut ObjectPlan) {
    p.last_applied = None;
    p.warnings = Vec::new();
    p.live = p.live.as_ref().map(live_stub);
}

/// What only a create or an update writes: the config, the patch and the
/// field changes.
fn drop_writes(p: &mut ObjectPlan) {
    p.fields = Vec::new();
    p.patch = None;
    p.config = None;
}

/// DeleteOptions with the propagation policy; `typed` adds its apiVersion
/// and kind.
fn delete_body(propagation: Propagation, typed: bool) -> Value {
    let policy = propagation.policy();
    if typed {
        json!({"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": policy})
    } else {
        json!({"propagationPolicy": policy})
    }
}

/// An object as read, made fit to be created again: what the server sets
/// on its own (identity, versions, times, managedFields, status) dropped.
fn restorable(live: &Value) -> Value {
    let mut v = live.clone();
    if let Some(top) = v.as_object_mut() {
        top.remove("status");
        if let Some(meta) = top.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in crate::export::SERVER_METADATA {
                meta.remove(*k);
            }
        }
    }
    v
}

/// Why a write (or its dry run) was not made.
enum NotWritten {
    /// The object changed since the plan, and not only its resourceVersion
    /// (or reading it again failed): the result says what.
    Changed(Failure),
    /// The request failed.
    Error(ClusterError),
}

/// The result of a failed dry run: the write is not sent.
fn dry_run_failed(
    name: ObjectRef,
    w: &Write,
    e: &ClusterError,
    pending_namespaces: &[String],
) -> ObjectResult {
    match e {
        e if e.code() == 409 && matches!(w, Write::Create { .. }) => {
            fail(name, Failure::CreatedSincePlan)
        }
        e if e.code() == 404
            && name
                .namespace
                .as_ref()
                .is_some_and(|ns| pending_namespaces.contains(ns)) =>
        {
            let ns = name.namespace.clone().unwrap_or_default();
            ok(name, Outcome::NotChecked(Prerequisite::Namespace(ns))).in_dry_run()
        }
        // An update refused as invalid: recreating it (`--force`) is the
        // way forward, so it is told apart.
        e if e.code() == 422 && matches!(w, Write::Patch { .. }) => {
            fail(name, Failure::Invalid(e.to_string()))
        }
        // Not written: the dry run that goes first failed.
        e if e.is_fatal() => fail(name, Failure::DryRun(e.to_string())),
        e => fail(name, failure(e)),
    }
}

/// A PATCH body: the reviewed patch, with the resourceVersion the plan was
/// made from as its precondition (`metadata.resourceVersion`, as `kubectl
/// diff` sends it) when known: the server refuses it (409) when the object
/// changed since.
fn patch_body(patch: &Patch, rv: Option<&str>) -> bytes::Bytes {
    let Some(rv) = rv else {
        return go_body(&patch.body);
    };
    let mut body = patch.body.clone();
    if let Some(top) = body.as_object_mut() {
        let meta = top.entry("metadata").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("resourceVersion".into(), json!(rv));
        }
    }
    go_body(&body)
}

/// Where a row's write goes in the order of dependence, lowest first:
/// what other objects need at their admission or start goes before them,
/// as Helm orders an install (Namespaces; policies and quotas; service
/// accounts, Secrets, ConfigMaps, storage; CRDs; RBAC; Services; workloads;
/// Ingresses), kinds not listed (custom resources) after those, and the
/// APIServices and admission webhooks last, since a webhook registered
/// before the objects it checks can turn their writes away.
fn write_rank(p: &ObjectPlan) -> u8 {
    const ORDER: &[(&str, &str)] = &[
        ("", "Namespace"),
        ("networking.k8s.io", "NetworkPolicy"),
        ("", "ResourceQuota"),
        ("", "LimitRange"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("node.k8s.io", "RuntimeClass"),
        ("policy", "PodDisruptionBudget"),
        ("", "ServiceAccount"),
        ("", "Secret"),
        ("", "ConfigMap"),
        ("storage.k8s.io", "StorageClass"),
        ("", "PersistentVolume"),
        ("", "PersistentVolumeClaim"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("rbac.authorization.k8s.io", "Role"),
        ("rbac.authorization.k8s.io", "RoleBinding"),
        ("", "Service"),
        ("apps", "DaemonSet"),
        ("", "Pod"),
        ("", "ReplicationController"),
        ("apps", "ReplicaSet"),
        ("apps", "Deployment"),
        ("autoscaling", "HorizontalPodAutoscaler"),
        ("apps", "StatefulSet"),
        ("batch", "Job"),
        ("batch", "CronJob"),
        ("networking.k8s.io", "IngressClass"),
        ("networking.k8s.io", "Ingress"),
    ];
    const LAST: &[(&str, &str)] = &[
        ("apiregistration.k8s.io", "APIService"),
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration",
        ),
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
        ),
    ];
    let group = crate::objref::split_api_version(&p.api_version).0;
    let at = |list: &[(&str, &str)]| list.iter().position(|&(g, k)| g == group && k == p.kind);
    let known = ORDER.len() as u8;
    match (at(ORDER), at(LAST)) {
        (Some(i), _) => i as u8,
        (None, Some(i)) => known + 1 + i as u8,
        (None, None) => known,
    }
}

impl Session {
    /// Apply items: Namespaces and CustomResourceDefinitions first, then the
    /// rest in the order given. Each phase is first sent as a server-side dry
    /// run (`dryRun=All`); objects the server rejects there are reported and
    /// not written. Create = POST of the config with the last-applied
    /// annotation; update = PATCH with the plan's patch,
    /// `fieldManager=kubectl-client-side-apply&fieldValidation=Strict`.
    /// Before each PATCH the object is read again: if its resourceVersion
    /// changed since the plan (a controller writing status does so every
    /// few seconds), the patch is computed again against it; it is sent
    /// only when it is the one reviewed, otherwise the object is not
    /// written and the result says what is now pending.
    /// One result per item, in the order given; a failure never stops the others.
    ///
    /// With `dry_run`, nothing is written; objects in a Namespace (or of a
    /// custom kind) that this apply would create first cannot be checked by
    /// the server and say `not checked: ...` (ok, since nothing failed).
    pub async fn apply(&self, items: Vec<ApplyItem>, opts: &ApplyOptions) -> Vec<ObjectResult> {
        let items = items.into_iter().map(|i| (i, None)).collect();
        self.apply_encoded(items, opts).await
    }

    /// [`Session::apply`] of items some of which are creates whose body was
    /// encoded when planned ([`slim_for_apply`]: the config is gone, the
    /// body is sent as it is).
    pub async fn apply_encoded(
        &self,
        items: Vec<(ApplyItem, Option<bytes::Bytes>)>,
        opts: &ApplyOptions,
    ) -> Vec<ObjectResult> {
        let (mut owned, mut bodies): (Vec<ApplyItem>, Vec<Option<bytes::Bytes>>) =
            items.into_iter().unzip();
        let items = &owned;
        let report = &opts.report;
        let mut slots = Slots {
            results: vec![None; items.len()],
            report,
        };
        let (first, rest): (Vec<usize>, Vec<usize>) =
            (0..items.len()).partition(|&i| is_first(&items[i].plan));
        // The ApplySet parent is written before the members, as kubectl does;
        // after the Namespaces when its own namespace is created by this apply.
        let parent = opts.applyset.as_ref().filter(|_| !opts.dry_run);
        let parent_phase = match parent {
            Some(set)
                if first.iter().any(|&i| {
                    let p = &items[i].plan;
                    p.kind == "Namespace"
                        && p.action == ObjectAction::Create
                        && set.namespace.as_deref() == Some(p.name.as_str())
                }) =>
            {
                1
            }
            _ => 0,
        };
        let halt = &Halt::new(&report.stop);
        let concurrency = self.concurrency;
        let mut crd_groups: Vec<String> = Vec::new();
        let mut pending_namespaces: Vec<String> = Vec::new();
        let mut pending_groups: Vec<String> = Vec::new();
        for (phase, indices) in [first, rest].into_iter().enumerate() {
            let items = &owned;
            if let Some(set) = parent.filter(|_| phase == parent_phase) {
                if let Some(why) = halt.stopped() {
                    for (i, item) in items.iter().enumerate() {
                        if slots.results[i].is_none() {
                            slots.put(i, skipped(item.plan.id(), why.clone()));
                        }
                    }
                    break;
                }
                let (kinds, namespaces) = set.union();
                if let Err(e) = self.write_applyset_parent(set, &kinds, &namespaces).await {
                    let e = format!("ApplySet parent {}: {e}", set.reference());
                    for (i, item) in items.iter().enumerate() {
                        if slots.results[i].is_none() {
                            slots.put(i, skipped(item.plan.id(), format!("not applied: {e}")));
                        }
                    }
                    break;
                }
            }
            // Kinds of CRDs applied in the first phase are discovered again.
            if phase == 1 && opts.dry_run {
                // Nothing of the first phase exists: what depends on it
                // cannot be checked by the server.
                for (item, r) in items.iter().zip(&slots.results) {
                    let Some(r) = r.as_ref() else {
                        continue;
                    };
                    if !(r.outcome == Outcome::Created && r.dry_run) {
                        continue;
                    }
                    if item.plan.kind == "Namespace" {
                        pending_namespaces.push(item.plan.name.clone());
                    } else if let Some(g) = defined_group(&item.plan) {
                        pending_groups.push(g.to_string());
                    }
                }
            }
            if phase == 1 && !opts.dry_run {
                crd_groups = items
                    .iter()
                    .zip(&slots.results)
                    .filter(|(item, r)| {
                        item.plan.kind == "CustomResourceDefinition"
                            && r.as_ref().is_some_and(ObjectResult::ok)
                    })
                    .filter_map(|(item, _)| defined_group(&item.plan).map(str::to_string))
                    .collect();
                if !crd_groups.is_empty() {
                    self.rediscover();
                }
            }
            let crd_groups = &crd_groups;
            let phase_bodies: Vec<Option<bytes::Bytes>> =
                indices.iter().map(|&i| bodies[i].take()).collect();
            let prepared =
                futures::stream::iter(collect_vec(indices.iter().zip(phase_bodies).map(
                    |(&i, body)| async move {
                        if let Some(why) = halt.stopped() {
                            let name = items[i].plan.id();
                            return (i, Prepared::Done(skipped(name, why)));
                        }
                        (i, self.prepare(&items[i], body, crd_groups, halt).await)
                    },
                )))
                .buffered(concurrency)
                .collect::<Vec<_>>()
                .await;
            // What is prepared no longer needs the plan's trees: at 10,000
            // objects they are most of the memory.
            for (i, p) in &prepared {
                lighten(&mut owned[*i], p);
            }
            let items = &owned;
            let mut writes = Vec::new();
            for (i, p) in prepared {
                match p {
                    Prepared::Done(r)
                        if matches!(r.outcome, Outcome::Failed(Failure::NotServed(_)))
                            && pending_groups.iter().any(|g| {
                                *g == crate::objref::split_api_version(&items[i].plan.api_version).0
                            }) =>
                    {
                        slots.put(
                            i,
                            ok(
                                r.object,
                                Outcome::NotChecked(Prerequisite::CustomResourceDefinition),
                            )
                            .in_dry_run(),
                        );
                    }
                    Prepared::Done(r) => slots.put(i, r),
                    Prepared::Send(w) => writes.push((i, w)),
                }
            }
            // The dry run of every write of the phase, all at once, before
            // any of them is written.
            let pending_namespaces = &pending_namespaces;
            let mut checked = futures::stream::iter(collect_vec(writes.into_iter().map(
                |(i, mut w)| async move {
                    if let Some(why) = halt.stopped() {
                        return (i, w, Err(NotWritten::Error(ClusterError::Other(why))));
                    }
                    let r = self
                        .send_replanning(&items[i].plan, &mut w, true, opts.manager(), halt)
                        .await;
                    if let Err(NotWritten::Error(e)) = &r {
                        halt.note(e);
                    }
                    (i, w, r)
                },
            )))
            .buffer_unordered(concurrency);
            let mut real = Vec::new();
            while let Some((i, w, r)) = checked.next().await {
                let name = items[i].plan.id();
                let r = match r {
                    Err(NotWritten::Changed(f)) => fail(name, f),
                    // `--force`: refused as invalid, replaced instead.
                    Err(NotWritten::Error(e))
                        if opts.force.is_some()
                            && !opts.dry_run
                            && e.code() == 422
                            && matches!(w, Write::Patch { .. }) =>
                    {
                        real.push((i, w, Some(e.to_string())));
                        continue;
                    }
                    Err(NotWritten::Error(e)) => dry_run_failed(name, &w, &e, pending_namespaces),
                    Ok(()) if opts.dry_run => {
                        let done = match w {
                            Write::Create { .. } => Outcome::Created,
                            Write::Patch { .. } => Outcome::Configured,
                        };
                        ok(name, done).in_dry_run()
                    }
                    Ok(()) => {
                        real.push((i, w, None));
                        continue;
                    }
                };
                slots.put(i, r);
            }
            drop(checked);
            // The writes, by kind in the order of dependence (Namespaces
            // and CRDs in the first phase; then quotas, service accounts,
            // RBAC, Secrets, ConfigMaps, ..., workloads; webhooks last): a
            // kind's writes all answered before the next kind's are sent,
            // each kind's at once, in the order given.
            real.sort_by_key(|(i, _, _)| (write_rank(&items[*i].plan), *i));
            let mut real = real.into_iter().peekable();
            while let Some(rank) = real.peek().map(|(i, _, _)| write_rank(&items[*i].plan)) {
                let mut batch = Vec::new();
                while let Some(next) = real.next_if(|(i, _, _)| write_rank(&items[*i].plan) == rank)
                {
                    batch.push(next);
                }
                let force = opts.force.as_ref();
                let mut written = futures::stream::iter(collect_vec(batch.into_iter().map(
                    |(i, mut w, refused)| async move {
                        if let Some(why) = halt.stopped() {
                            let why = format!("not applied: {why}");
                            return (i, skipped(items[i].plan.id(), why));
                        }
                        report.sending(i);
                        let r = match (refused, force) {
                            (Some(refused), Some(force)) => {
                                self.replace(
                                    &items[i].plan,
                                    &w,
                                    force,
                                    &refused,
                                    opts.manager(),
                                    halt,
                                )
                                .await
                            }
                            _ => {
                                self.write_checked(&items[i].plan, &mut w, opts.manager(), halt)
                                    .await
                            }
                        };
                        (i, r)
                    },
                )))
                .buffer_unordered(concurrency);
                while let Some((i, r)) = written.next().await {
                    slots.put(i, r);
                }
            }
        }
        let items = &owned;
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match slots.results[i].take() {
                Some(r) => out.push(r),
                None => {
                    let r = skipped(item.plan.id(), "not applied".into());
                    report.done(i, &r);
                    out.push(r);
                }
            }
        }
        out
    }

    /// Turn a plan row into the request to send (or a result without one).
    async fn prepare(
        &self,
        item: &ApplyItem,
        body: Option<bytes::Bytes>,
        crd_groups: &[String],
        halt: &Halt,
    ) -> Prepared {
        let plan = &item.plan;
        let name = plan.id();
        if let Some(body) = body {
            return self.prepare_encoded(plan, body, crd_groups, halt).await;
        }
        let Some(config) = plan.config.as_ref() else {
            return Prepared::Done(fail(
                name,
                Failure::Refused(
                    plan.error
                        .clone()
                        .unwrap_or_else(|| "no configuration to apply".into()),
                ),
            ));
        };
        let info = match self.resolve(plan, crd_groups, halt).await {
            Ok(i) => i,
            Err(r) => return Prepared::Done(r),
        };
        let ns = match namespace_of(plan, &info) {
            Ok(ns) => ns,
            Err(f) => return Prepared::Done(fail(plan.id(), f)),
        };
        let config = config.clone();
        let mut live = plan.live.clone();
        match plan.action {
            ObjectAction::Prune => {
                return Prepared::Done(fail(
                    name,
                    Failure::Refused("a prune candidate is pruned, not applied".into()),
                ));
            }
            ObjectAction::Error => {
                // A row that failed planning may be applicable now (its CRD
                // was just applied): read it and plan it again.
                if !plan.kind_not_served {
                    return Prepared::Done(fail(
                        name,
                        Failure::Refused(plan.error.clone().unwrap_or_default()),
                    ));
                }
                match self.get_live(&info, ns, &plan.name).await {
                    Ok(l) => live = l,
                    Err(e) => {
                        halt.note(&e);
                        return Prepared::Done(fail(name, failure(&e)));
                    }
                }
            }
            ObjectAction::Unchanged
                if item.accepted_fields.is_none() && item.released_fields.is_empty() =>
            {
                return Prepared::Done(ok(name, Outcome::Unchanged));
            }
            _ => {}
        }
        let released = &item.released_fields;
        if let Some(why) = released.iter().find_map(|p| release_refusal(plan, p)) {
            return Prepared::Done(fail(name, Failure::Refused(why)));
        }
        // A released field stays out of the config (as accepted clears do);
        // what differs is the last-applied the patch is computed against.
        let accepted = item.accepted_fields.as_ref().map(|a| {
            let mut a = a.clone();
            a.extend(released.iter().cloned());
            a
        });
        let config = match (&accepted, &live) {
            // The plan the user reviewed is at hand (and its live object is
            // checked unchanged before writing): skipped rows keep their live
            // value, so nothing but the accepted changes is written.
            (Some(paths), Some(l)) => match (&plan.live, plan.action) {
                (Some(_), ObjectAction::Update | ObjectAction::Unchanged) => {
                    let mut reviewed = plan.clone();
                    reviewed.config = Some(config.clone());
                    partial_from_plan(&reviewed, paths).unwrap_or(config)
                }
                _ => partial_config(&config, last_applied_of(l).as_ref(), paths),
            },
            // Half an object cannot be created: its required fields may be
            // among the skipped ones.
            (Some(_), None) => {
                return Prepared::Done(fail(
                    name,
                    Failure::Refused(
                        "does not exist: a partial apply needs the live object; apply it whole"
                            .into(),
                    ),
                ));
            }
            (None, _) => config,
        };
        let Some(live) = live else {
            return Prepared::Send(Write::Create {
                path: info.collection_path(ns),
                body: go_body(&creation_body(&config)),
            });
        };
        let patch = if item.accepted_fields.is_none()
            && released.is_empty()
            && plan.action == ObjectAction::Update
        {
            plan.patch.clone()
        } else {
            let schema = PatchMeta::builtin().root(&plan.api_version, &plan.kind);
            let base = base_last_applied(&config, &live, released);
            match three_way(&config, &live, base.as_ref(), schema) {
                // A patch that leaves live as it is is not sent.
                Ok(t) => t.patch.filter(|_| t.changes),
                Err(e) => return Prepared::Done(fail(name, Failure::Refused(e.to_string()))),
            }
        };
        match patch {
            None => Prepared::Done(ok(name, Outcome::Unchanged)),
            Some(patch) => Prepared::Send(Write::Patch {
                path: info.object_path(ns, &plan.name),
                patch,
                rv: resource_version(&live),
                get: info.object_path(ns, &plan.name),
                config,
                released: released.clone(),
                collection: info.collection_path(ns),
                uid: live
                    .pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            }),
        }
    }

    /// The resource of a planned row ([`Self::resource_waiting`]; without
    /// CRD groups, [`Session::resource`]), or the row's failure (noted, so
    /// that an unreachable server halts the run).
    async fn resolve(
        &self,
        plan: &ObjectPlan,
        crd_groups: &[String],
        halt: &Halt,
    ) -> Result<ResourceInfo, ObjectResult> {
        self.resource_waiting(&plan.api_version, &plan.kind, crd_groups)
            .await
            .map_err(|e| {
                halt.note(&e);
                fail(plan.id(), failure(&e))
            })
    }

    /// The create of a whole object whose body was encoded when planned.
    async fn prepare_encoded(
        &self,
        plan: &ObjectPlan,
        body: bytes::Bytes,
        crd_groups: &[String],
        halt: &Halt,
    ) -> Prepared {
        let info = match self.resolve(plan, crd_groups, halt).await {
            Ok(i) => i,
            Err(r) => return Prepared::Done(r),
        };
        let ns = match namespace_of(plan, &info) {
            Ok(ns) => ns,
            Err(f) => return Prepared::Done(fail(plan.id(), f)),
        };
        Prepared::Send(Write::Create {
            path: info.collection_path(ns),
            body,
        })
    }

    /// Resolve a kind; when its group's CRD was applied in this run, give
    /// the server a few seconds to start serving it (a real API server
    /// serves a new CRD only once it is Established).
    pub(super) async fn resource_waiting(
        &self,
        api_version: &str,
        kind: &str,
        crd_groups: &[String],
    ) -> Result<ResourceInfo, ClusterError> {
        let group = crate::objref::split_api_version(api_version).0;
        let mut tries = 0;
        loop {
            match self.resource(api_version, kind).await {
                Err(ClusterError::NotServed(_))
                    if tries < 20 && crd_groups.iter().any(|g| g == group) =>
                {
                    tries += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                    self.discovery.forget(api_version);
                }
                r => return r,
            }
        }
    }

    async fn get_live(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        name: &str,
    ) -> Result<Option<Value>, ClusterError> {
        match self
            .call(Method::GET, &info.object_path(ns, name), &[], None, None)
            .await
        {
            Ok(mut v) => {
                fill_type(&mut v, info);
                Ok(Some(v))
            }
            Err(e) if e.code() == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn send_write(
        &self,
        w: &Write,
        dry_run: bool,
        manager: &str,
    ) -> Result<(), ClusterError> {
        let mut query = vec![("fieldManager", manager), ("fieldValidation", "Strict")];
        if dry_run {
            query.push(("dryRun", "All"));
        }
        match w {
            // The object the server answers with is not used.
            Write::Create { path, body } => {
                self.call_encoded(Method::POST, path, &query, None, Some(body.clone()), false)
                    .await
            }
            Write::Patch {
                path, patch, rv, ..
            } => {
                self.call_encoded(
                    Method::PATCH,
                    path,
                    &query,
                    Some(patch.kind.content_type()),
                    Some(patch_body(patch, rv.as_deref())),
                    false,
                )
                .await
            }
        }
        .map(|_| ())
    }

    /// Send a write (or its dry run). A PATCH carries the resourceVersion
    /// the plan was made from: when the object changed since (409), it is
    /// read again and the patch computed again against it; the same patch
    /// as the one reviewed is sent again with the new resourceVersion (a
    /// controller writing status changes the resourceVersion, not the
    /// patch), up to [`MAX_CONFLICTS`] times; a different one is not sent.
    async fn send_replanning(
        &self,
        plan: &ObjectPlan,
        w: &mut Write,
        dry_run: bool,
        manager: &str,
        halt: &Halt,
    ) -> Result<(), NotWritten> {
        let mut conflicts = 0;
        loop {
            let e = match self.send_write(w, dry_run, manager).await {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            let Write::Patch {
                rv: Some(was),
                get,
                config,
                patch,
                released,
                ..
            } = w
            else {
                return Err(NotWritten::Error(e));
            };
            if e.code() != 409 {
                return Err(NotWritten::Error(e));
            }
            let now = match self.call(Method::GET, get, &[], None, None).await {
                Ok(v) => v,
                Err(e) if e.code() == 404 => {
                    return Err(NotWritten::Changed(Failure::DeletedSincePlan));
                }
                Err(e) => {
                    halt.note(&e);
                    return Err(NotWritten::Changed(Failure::NotApplied(e.to_string())));
                }
            };
            let current = resource_version(&now);
            conflicts += 1;
            if !same_patch(plan, config, &now, released, patch) {
                let why = self.replanned_message(
                    plan,
                    config,
                    &now,
                    Some(was.as_str()),
                    current.as_deref(),
                );
                return Err(NotWritten::Changed(Failure::ChangedSincePlan(why)));
            }
            let Some(current) = current.filter(|_| conflicts < MAX_CONFLICTS) else {
                return Err(NotWritten::Changed(Failure::ChangedSincePlan(format!(
                    "changed since the plan (resourceVersion {was}), and again each of \
                     {conflicts} times it was sent: not written; apply again"
                ))));
            };
            *was = current;
        }
    }

    /// The real write, sent with the resourceVersion it was planned at
    /// ([`Self::send_replanning`]).
    async fn write_checked(
        &self,
        plan: &ObjectPlan,
        w: &mut Write,
        manager: &str,
        halt: &Halt,
    ) -> ObjectResult {
        let name = plan.id();
        match self.send_replanning(plan, w, false, manager, halt).await {
            Ok(()) => match w {
                Write::Create { .. } => ok(name, Outcome::Created),
                Write::Patch { .. } => ok(name, Outcome::Configured),
            },
            Err(NotWritten::Changed(f)) => fail(name, f),
            Err(NotWritten::Error(e)) if e.code() == 409 && matches!(w, Write::Create { .. }) => {
                fail(name, Failure::CreatedSincePlan)
            }
            Err(NotWritten::Error(e)) => {
                halt.note(&e);
                write_failed(name, &e)
            }
        }
    }

    /// `--force` ([`Replace`]): delete the object the patch of which the
    /// server refused (`refused`), with the reviewed uid as precondition;
    /// wait until it is gone; create it from its configuration (the body
    /// of a create, the last-applied annotation in it). When the create
    /// fails, the object as it was is created again, as kubectl does, and
    /// the result says so. Once the delete is sent, the run is not stopped
    /// before the create: an object is never left deleted by a stop.
    async fn replace(
        &self,
        plan: &ObjectPlan,
        w: &Write,
        force: &Replace,
        refused: &str,
        manager: &str,
        halt: &Halt,
    ) -> ObjectResult {
        let name = plan.id();
        let Write::Patch {
            get,
            config,
            collection,
            uid,
            ..
        } = w
        else {
            return fail(name, Failure::Refused(refused.to_string()));
        };
        // As it is now: what is restored if the new one cannot be created.
        let original = match self.call(Method::GET, get, &[], None, None).await {
            Ok(v) => Some(v),
            Err(e) if e.code() == 404 => None,
            Err(e) => {
                halt.note(&e);
                return fail(name, Failure::NotApplied(format!("{refused}; {e}")));
            }
        };
        if original.is_some() {
            let mut body = json!({ "propagationPolicy": "Background" });
            if let Some(uid) = uid {
                body["preconditions"] = json!({ "uid": uid });
            }
            if let Some(g) = force.grace_period {
                body["gracePeriodSeconds"] = json!(g);
            }
            match self.call(Method::DELETE, get, &[], None, Some(&body)).await {
                Ok(_) => {}
                Err(e) if e.code() == 404 => {}
                Err(e) if e.code() == 409 => {
                    return fail(
                        name,
                        Failure::Recreated {
                            prune: false,
                            error: e.to_string(),
                        },
                    );
                }
                Err(e) => {
                    halt.note(&e);
                    return write_failed(name, &e);
                }
            }
            let deadline = tokio::time::Instant::now() + force.timeout;
            loop {
                match self.call(Method::GET, get, &[], None, None).await {
                    Err(e) if e.code() == 404 => break,
                    Ok(_) if tokio::time::Instant::now() < deadline => {}
                    Ok(_) => {
                        return fail(
                            name,
                            Failure::NotRecreated(format!(
                                "still there (being deleted) after {}s; apply again once it \
                                 is gone",
                                force.timeout.as_secs()
                            )),
                        );
                    }
                    Err(e) => {
                        halt.note(&e);
                        return fail(
                            name,
                            Failure::NotRecreated(format!(
                                "waiting for it to be gone failed: {e}; apply again"
                            )),
                        );
                    }
                }
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        }
        let query = [("fieldManager", manager), ("fieldValidation", "Strict")];
        let query = &query;
        let create = |body: &Value| {
            self.call_encoded(
                Method::POST,
                collection,
                query,
                None,
                Some(go_body(body)),
                false,
            )
        };
        let e = match create(&creation_body(config)).await {
            Ok(_) => return ok(name, Outcome::Replaced),
            Err(e) => e,
        };
        halt.note(&e);
        match original.as_ref().map(restorable) {
            None => fail(
                name,
                Failure::NotRecreated(format!("creating it failed: {e}")),
            ),
            Some(old) => match create(&old).await {
                Ok(_) => fail(
                    name,
                    Failure::Server(format!(
                        "not replaced: creating it from the manifest failed: {e}; the object \
                         as it was is back (deleted and created again, a new uid)"
                    )),
                ),
                Err(e2) => fail(
                    name,
                    Failure::NotRecreated(format!(
                        "creating it failed: {e}; restoring it as it was failed too: {e2}"
                    )),
                ),
            },
        }
    }

    /// Re-plan an object that changed since the plan, and say what it means:
    /// how many changes are pending now, and which differ from those reviewed.
    fn replanned_message(
        &self,
        plan: &ObjectPlan,
        config: &Value,
        live: &Value,
        was: Option<&str>,
        now: Option<&str>,
    ) -> String {
        let head = format!(
            "changed since the plan (resourceVersion {} -> {}); re-planned, review again",
            was.unwrap_or("?"),
            now.unwrap_or("?")
        );
        let schema = PatchMeta::builtin().root(&plan.api_version, &plan.kind);
        let pending = |fields: &[crate::merge::FieldChange]| -> Vec<(FieldPath, Option<Value>)> {
            fields
                .iter()
                .filter(|f| f.action != crate::merge::FieldAction::Keep)
                // The annotation's row (its key the last step).
                .filter(|f| !matches!(f.path.last(), Some(Step::Key(k)) if k == LAST_APPLIED))
                .map(|f| (f.path.clone(), f.config.clone()))
                .collect()
        };
        match three_way(config, live, last_applied_of(live).as_ref(), schema) {
            Ok(t) if !t.changes => format!("{head}: now nothing to change"),
            Ok(t) => {
                let (before, after) = (pending(&plan.fields), pending(&t.fields));
                let mut differ: Vec<&str> = after
                    .iter()
                    .filter(|c| !before.contains(c))
                    .chain(before.iter().filter(|c| !after.contains(c)))
                    .map(|(p, _)| p.as_str())
                    .collect();
                differ.dedup();
                let n = t
                    .fields
                    .iter()
                    .filter(|f| f.action != crate::merge::FieldAction::Keep)
                    .count();
                if differ.is_empty() {
                    format!("{head}: {n} field change(s) pending")
                } else {
                    format!(
                        "{head}: {n} field change(s) pending; differs from the plan at {}",
                        differ.join(", ")
                    )
                }
            }
            Err(e) => format!("{head}: {e}"),
        }
    }

    /// Delete objects (`kubectl delete -f`): DELETE with the propagation
    /// policy (Background by default). Results say `deleted` or the server's message.
    pub async fn delete(&self, objects: &[ObjectPlan], opts: &DeleteOptions) -> Vec<ObjectResult> {
        self.delete_each(objects, opts.propagation, opts.dry_run, false, &opts.report)
            .await
    }

    /// Delete prune candidates (results say `pruned`), then, for an
    /// ApplySet, record only the current kinds on the parent, as kubectl
    /// does after pruning (only when every prune succeeded, so a failed one
    /// is still found next time). Call it after [`Session::apply`] even with
    /// no candidates, so the parent is brought up to date.
    pub async fn prune(
        &self,
        candidates: &[ObjectPlan],
        applyset: Option<&ApplySet>,
        dry_run: bool,
    ) -> Vec<ObjectResult> {
        self.prune_reporting(candidates, applyset, dry_run, &Report::default())
            .await
    }

    /// [`Session::prune`], each candidate's result reported as it is known.
    pub async fn prune_reporting(
        &self,
        candidates: &[ObjectPlan],
        applyset: Option<&ApplySet>,
        dry_run: bool,
        report: &Report,
    ) -> Vec<ObjectResult> {
        let results = self
            .delete_each(candidates, Propagation::Background, dry_run, true, report)
            .await;
        // Stopped: the parent keeps the kinds it recorded (a later run
        // prunes what is left).
        if report.stop.reason().is_some() {
            return results;
        }
        if let (Some(set), false) = (applyset, dry_run)
            && results.iter().all(ObjectResult::ok)
            && let Err(e) = self
                .write_applyset_parent(set, &set.current_kinds, &set.current_namespaces)
                .await
        {
            let mut results = results;
            results.push(write_failed(set.result_ref(), &e));
            return results;
        }
        results
    }

    async fn delete_each(
        &self,
        objects: &[ObjectPlan],
        propagation: Propagation,
        dry_run: bool,
        prune: bool,
        report: &Report,
    ) -> Vec<ObjectResult> {
        let base = delete_body(propagation, prune);
        let base = &base;
        let halt = &Halt::new(&report.stop);
        let mut slots = Slots {
            results: vec![None; objects.len()],
            report,
        };
        // In the reverse of the order of writes (as Helm uninstalls):
        // workloads before the ServiceAccounts, RBAC, Secrets and ConfigMaps
        // they use, custom resources before their CRD, Namespaces last; each
        // kind's deletes all answered before the next kind's are sent.
        let mut order: Vec<usize> = (0..objects.len()).collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(write_rank(&objects[i])), i));
        let mut order = order.into_iter().peekable();
        while let Some(rank) = order.peek().map(|&i| write_rank(&objects[i])) {
            let mut batch = Vec::new();
            while let Some(i) = order.next_if(|&i| write_rank(&objects[i]) == rank) {
                batch.push(i);
            }
            let mut done = futures::stream::iter(collect_vec(batch.into_iter().map(|i| {
                let p = &objects[i];
                async move {
                    (
                        i,
                        self.delete_one(p, i, base, dry_run, prune, halt, report)
                            .await,
                    )
                }
            })))
            .buffer_unordered(self.concurrency);
            while let Some((i, r)) = done.next().await {
                slots.put(i, r);
            }
        }
        slots.results.into_iter().flatten().collect()
    }

    #[allow(clippy::too_many_arguments)]
    async fn delete_one(
        &self,
        p: &ObjectPlan,
        i: usize,
        base: &Value,
        dry_run: bool,
        prune: bool,
        halt: &Halt,
        report: &Report,
    ) -> ObjectResult {
        let name = p.id();
        if let Some(why) = halt.stopped() {
            return skipped(name, why);
        }
        // The object reviewed, not one recreated under the same name
        // since the plan: the server refuses (409) when the uid differs.
        let mut body = base.clone();
        if let Some(uid) = p
            .live
            .as_ref()
            .and_then(|l| l.pointer("/metadata/uid"))
            .and_then(Value::as_str)
        {
            body["preconditions"] = json!({ "uid": uid });
        }
        let info = match self.resolve(p, &[], halt).await {
            Ok(i) => i,
            Err(r) => return r,
        };
        let path = info.object_path(p.namespace.as_deref(), &p.name);
        // In the DeleteOptions, where kubectl puts it: kube-apiserver reads
        // the query's options only when the DELETE has no body, so a
        // `?dryRun=All` beside this body deleted for real.
        if dry_run {
            body["dryRun"] = json!(["All"]);
        }
        if let Some(why) = halt.stopped() {
            return skipped(name, why);
        }
        if !dry_run {
            report.sending(i);
        }
        match self
            .call(Method::DELETE, &path, &[], None, Some(&body))
            .await
        {
            Ok(_) => {
                let done = ok(
                    name,
                    if prune {
                        Outcome::Pruned
                    } else {
                        Outcome::Deleted
                    },
                );
                if dry_run { done.in_dry_run() } else { done }
            }
            // Only the uid precondition makes a DELETE conflict.
            Err(e) if e.code() == 409 => fail(
                name,
                Failure::Recreated {
                    prune,
                    error: e.to_string(),
                },
            ),
            Err(e) => {
                halt.note(&e);
                // A dry run changes nothing, whatever became of it.
                if dry_run {
                    fail(name, failure(&e))
                } else {
                    write_failed(name, &e)
                }
            }
        }
    }
}

/// The namespace a row is written in, decided once, when it was planned:
/// an object without one in its file got `-n` or the context's namespace
/// there, as kubectl gives it when it maps the object (and kubectl never
/// decides again). A row planned cluster-scoped whose kind is namespaced
/// now is refused: the namespace to give it was never shown.
fn namespace_of<'p>(plan: &'p ObjectPlan, info: &ResourceInfo) -> Result<Option<&'p str>, Failure> {
    match (&plan.namespace, info.namespaced) {
        (Some(ns), true) => Ok(Some(ns)),
        (None, true) => Err(Failure::Refused(
            "its kind is namespaced now, cluster-scoped when planned: plan again".into(),
        )),
        (_, false) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::{Cause, FieldAction, FieldChange, PatchType, Reason};

    fn row(action: ObjectAction) -> ObjectPlan {
        let field = |path: &str, action| FieldChange {
            path: path.into(),
            config: Some(json!("2")),
            live: Some(json!("1")),
            last_applied: Some(json!("1")),
            action,
            reason: Reason::NewObject,
            cause: Cause::default(),
            owner: None,
            changed_at: None,
            hazards: Vec::new(),
        };
        ObjectPlan {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("n".into()),
            name: "c".into(),
            source: Some("m.yaml:1".into()),
            action,
            reverts_drift: false,
            annotation_only: false,
            fields: vec![
                field("data.a", FieldAction::Set),
                field("data.b", FieldAction::Keep),
            ],
            patch: Some(Patch {
                kind: PatchType::Strategic,
                body: json!({"data": {"a": "2"}}),
            }),
            last_applied: Some(json!({"data": {"a": "2"}})),
            warnings: vec!["w".into()],
            error: None,
            kind_not_served: false,
            prune_reason: None,
            config: Some(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "namespace": "n"}, "data": {"a": "2"}})),
            live: Some(
                json!({"metadata": {"name": "c", "uid": "u", "resourceVersion": "7",
                "labels": {"x": "y"}}, "data": {"a": "1", "b": "1"}}),
            ),
        }
    }

    /// Apply and delete keep of a planned row what they read: both the
    /// identity and the live object's uid and resourceVersion; apply the
    /// config, patch and changed fields of an update and the encoded body
    /// of a create; a row neither created nor updated is slimmed for apply
    /// as for delete.
    #[test]
    fn slimmed_rows_keep_what_apply_and_delete_read() {
        use ObjectAction::*;
        let stub = Some(json!({"metadata": {"resourceVersion": "7", "uid": "u"}}));
        let slim = |action, keep: fn(ObjectPlan) -> ObjectPlan| {
            keep(ObjectPlan {
                last_applied: None,
                warnings: Vec::new(),
                live: stub.clone(),
                ..row(action)
            })
        };
        let none = |p: ObjectPlan| ObjectPlan {
            fields: Vec::new(),
            patch: None,
            config: None,
            ..p
        };
        assert_eq!(slim_for_delete(row(Update)), slim(Update, none));
        for a in [Unchanged, Prune] {
            assert_eq!(slim_for_apply(row(a)), (slim(a, none), None), "{a:?}");
            assert_eq!(slim_for_apply(row(a)).0, slim_for_delete(row(a)));
        }
        let set_only = |p: ObjectPlan| ObjectPlan {
            fields: p.fields[..1].to_vec(),
            ..p
        };
        assert_eq!(slim_for_apply(row(Update)), (slim(Update, set_only), None));
        let body = row(Create).config.map(|c| go_body(&creation_body(&c)));
        let created = |p: ObjectPlan| ObjectPlan {
            fields: Vec::new(),
            config: None,
            ..p
        };
        assert_eq!(slim_for_apply(row(Create)), (slim(Create, created), body));
        assert_eq!(slim_for_apply(row(Error)), (row(Error), None));
    }
}
