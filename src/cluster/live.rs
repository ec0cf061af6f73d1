//! Reading live state: one LIST per (resource, namespace) the manifests
//! touch, paged and run a few at a time, falling back to one GET per object
//! where LIST is forbidden; the prune flags' scope and prune candidates.
//! The plan is built from these reads by [`super::route`].

use super::applyset::{ApplySet, PART_OF_LABEL};
use super::deps::{Loaded, Manifest, ManifestError, error_object, prune_candidate};
use super::discovery::ResourceInfo;
use super::route::{LiveSource, PlanError};
use super::{ClusterError, PAGE_SIZE, Session, collect_vec};
use crate::merge::last_applied_value;
use crate::objref::ObjectRef;
use crate::ops::Progress;
use crate::plan::{ObjectAction, ObjectPlan, Plan};
use crate::selector::LabelSelector;
use futures::StreamExt;
use http::Method;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// Groups (a LIST and the planning of its answer) in flight at once, below
/// the session's bound on requests: each holds its LIST's answer until the
/// two planning threads get to it, so at 10,000 objects 32 groups at once
/// doubled the live heap of `apply` (heaptrack: 74 MB at 8, 145 MB at 32),
/// while the writes, which hold little, keep the full bound.
pub(super) const PLAN_GROUPS_IN_FLIGHT: usize = 8;

/// What to prune, as kubectl's flags say it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PruneOptions {
    pub mode: PruneMode,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub enum PruneMode {
    /// No pruning.
    #[default]
    None,
    /// `--prune -l SELECTOR` or `--prune --all`, with `--prune-allowlist`
    /// (`group/version/Kind`, `core/v1/ConfigMap`; empty: kubectl's default list).
    /// The selector also filters the manifests, as `-l` does in kubectl.
    Allowlist {
        selector: Option<String>,
        all: bool,
        allowlist: Vec<String>,
    },
    /// `--prune --applyset [RESOURCE.GROUP/]NAME` (default a Secret).
    /// `tooling`: see [`Session::applyset`] (`None`: `kapply/v<version>`,
    /// or kubectl's value on a parent kubectl manages).
    ApplySet {
        parent: String,
        tooling: Option<String>,
    },
}

/// kubectl's default `--prune-allowlist`.
pub fn default_prune_allowlist() -> Vec<String> {
    [
        "core/v1/ConfigMap",
        "core/v1/Endpoints",
        "core/v1/PersistentVolumeClaim",
        "core/v1/Pod",
        "core/v1/ReplicationController",
        "core/v1/Secret",
        "core/v1/Service",
        "batch/v1/Job",
        "batch/v1/CronJob",
        "networking.k8s.io/v1/Ingress",
        "apps/v1/DaemonSet",
        "apps/v1/Deployment",
        "apps/v1/ReplicaSet",
        "apps/v1/StatefulSet",
        "core/v1/Namespace",
        "core/v1/PersistentVolume",
    ]
    .map(String::from)
    .to_vec()
}

/// A plan, plus the ApplySet it belongs to (pass it to apply and prune).
#[derive(Debug, Clone)]
pub struct Planned {
    pub plan: Plan,
    pub applyset: Option<ApplySet>,
    /// Manifests left out because they do not match the prune selector
    /// (`--prune -l`), as kubectl leaves them out: `file:line Kind ns/name`.
    pub skipped: Vec<String>,
}

/// How many objects one planning job takes (against a cluster or files).
pub(crate) const PLAN_CHUNK: usize = 32;

/// `items` cut into jobs of [`PLAN_CHUNK`], in order.
pub(crate) fn plan_chunks<I: Iterator>(mut items: I) -> impl Iterator<Item = Vec<I::Item>> {
    std::iter::from_fn(move || {
        let chunk: Vec<_> = items.by_ref().take(PLAN_CHUNK).collect();
        (!chunk.is_empty()).then_some(chunk)
    })
}

/// `finish` as the planning threads run it: first, unless `keep_objects`,
/// the row's config and live object go (`diff` and `plan` show neither).
pub(crate) fn finisher<T>(
    keep_objects: bool,
    finish: impl Fn(ObjectPlan) -> T + Send + Sync + 'static,
) -> Arc<impl Fn(ObjectPlan) -> T + Send + Sync + 'static> {
    Arc::new(move |mut p: ObjectPlan| {
        if !keep_objects {
            p.config = None;
            p.live = None;
        }
        finish(p)
    })
}

/// A live object as read: the JSON text of a LIST item, decoded only on
/// the planning thread right before its plan reads it (built, read and
/// freed while in cache, and never all of a page at once), or an object
/// already decoded (a GET, or a LIST page read whole).
pub(super) enum LiveItem {
    Text(bytes::Bytes),
    Decoded(Value),
    /// From a `--live` file: a JSON file's object is only located in its
    /// text until it is planned.
    Given(crate::manifest::LiveObject),
}

impl LiveItem {
    /// The object, with the apiVersion and kind a list item lacks.
    pub(super) fn decode(self, info: Option<&ResourceInfo>) -> Result<Value, ClusterError> {
        let mut v = match self {
            LiveItem::Decoded(v) => v,
            LiveItem::Given(o) => o.into_value(),
            // The page parsed, so the item is JSON; only a nesting deeper
            // than the parser takes could fail here.
            LiveItem::Text(text) => std::str::from_utf8(&text)
                .map_err(|e| e.to_string())
                .and_then(|t| serde_json::from_str(t).map_err(|e| e.to_string()))
                .map_err(|e| ClusterError::Other(format!("unreadable live object: {e}")))?,
        };
        if let Some(info) = info {
            fill_type(&mut v, info);
        }
        Ok(v)
    }
}

/// A group's live objects by name: absent (`None`) or unreadable (`Err`).
pub(super) type LiveByName = HashMap<String, Result<Option<LiveItem>, ClusterError>>;

/// (apiVersion, plural, namespace) -> the resource and the manifests in it.
pub(super) type Groups = BTreeMap<(String, String, Option<String>), (ResourceInfo, Vec<usize>)>;

/// A group read by one LIST: its resource, namespace and members (each
/// with its index in the manifests).
type Group = (ResourceInfo, Option<String>, Vec<(usize, Manifest)>);

/// Manifest `i` (`m`, of the kind `info`) into its group: one per
/// resource and, for a namespaced kind, namespace (one LIST each).
pub(super) fn add_to_group(groups: &mut Groups, info: &ResourceInfo, m: &Manifest, i: usize) {
    let ns = if info.namespaced {
        m.id.namespace.clone()
    } else {
        None
    };
    groups
        .entry((info.api_version(), info.plural.clone(), ns))
        .or_insert_with(|| (info.clone(), Vec::new()))
        .1
        .push(i);
}

/// The groups with their members moved out of `manifests`, each group's
/// resource, namespace and (index, manifest) pairs, in the order of each
/// group's first manifest (so the plan comes out in manifest order soonest).
pub(super) fn take_groups(groups: Groups, manifests: &mut [Option<Manifest>]) -> Vec<Group> {
    let mut groups: Vec<_> = groups
        .into_iter()
        .map(|((_, _, ns), (info, idx))| {
            let members: Vec<(usize, Manifest)> = idx
                .iter()
                .filter_map(|&i| Some((i, manifests[i].take()?)))
                .collect();
            (info, ns, members)
        })
        .collect();
    groups.sort_by_key(|(_, _, members)| members.first().map(|(i, _)| *i));
    groups
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// An error row for one object; the config is kept so a later apply can
/// retry it (a custom kind whose CRD is applied in the same run).
pub(crate) fn error_plan(m: &Manifest, message: String) -> ObjectPlan {
    ObjectPlan {
        api_version: m.api_version(),
        kind: m.id.kind.clone(),
        namespace: m.id.namespace.clone(),
        name: m.id.name.clone(),
        source: Some(m.source.to_string()),
        action: ObjectAction::Error,
        reverts_drift: false,
        annotation_only: false,
        fields: Vec::new(),
        patch: None,
        last_applied: None,
        warnings: Vec::new(),
        error: Some(message),
        kind_not_served: false,
        prune_reason: None,
        config: Some(m.object()),
        live: None,
    }
}

/// The error row of a manifest that could not be read or built: where,
/// why, and which object when that is known (a duplicate, a namespace
/// that contradicts `-n`).
pub(crate) fn load_error_row(e: &ManifestError) -> ObjectPlan {
    let source = e.at().map(|s| s.to_string());
    match e.id() {
        Some(id) => error_object(
            &e.api_version().unwrap_or_default(),
            &id.kind,
            id.namespace.as_deref(),
            &id.name,
            source,
            e.to_string(),
        ),
        None => error_object("", "", None, "", source, e.to_string()),
    }
}

/// The rows of `loaded` before any live state is read: identity and source
/// only (action `Unchanged` is a placeholder, no field is planned, and the
/// config is left out so nothing of a Secret travels), and the manifests
/// that could not be read as error rows.
pub(crate) fn unplanned(loaded: &Loaded) -> Plan {
    let mut objects: Vec<ObjectPlan> = loaded.errors.iter().map(load_error_row).collect();
    for m in &loaded.manifests {
        // Not `error_plan`: its config (read back from JSON) would go at once.
        let mut row = error_object(
            &m.api_version(),
            &m.id.kind,
            m.id.namespace.as_deref(),
            &m.id.name,
            Some(m.source.to_string()),
            String::new(),
        );
        row.action = ObjectAction::Unchanged;
        row.error = None;
        objects.push(row);
    }
    Plan {
        objects,
        prune_skipped: None,
    }
}

impl Session {
    /// Build the plan for `loaded` against live state, the objects kept
    /// whole (see [`LiveSource::plan_each`]). Per-object problems (a kind
    /// not served, a forbidden GET, a merge error) become `error` rows;
    /// only a failure of the whole run (unreachable server, bad prune
    /// options) is `Err`.
    pub async fn plan(
        &self,
        loaded: Loaded,
        prune: &PruneOptions,
        progress: Option<UnboundedSender<Progress>>,
    ) -> Result<Planned, PlanError> {
        let mut objects = Vec::new();
        let mut planned = self
            .source(prune, progress)
            .plan_each(loaded, true, |p| p, |o| objects.push(o))
            .await?;
        planned.plan.objects = objects;
        Ok(planned)
    }

    /// This cluster as the live source of a plan.
    pub fn source<'a>(
        &'a self,
        prune: &'a PruneOptions,
        progress: Option<UnboundedSender<Progress>>,
    ) -> LiveSource<'a> {
        LiveSource::Cluster {
            session: self,
            prune,
            progress,
        }
    }

    /// What `--prune` makes of the manifests before planning: with a
    /// selector, those it does not match are left out (listed as skipped);
    /// with an ApplySet, its parent is read (or made) and each manifest
    /// labelled a member.
    pub(super) async fn prune_scope(
        &self,
        prune: &PruneOptions,
        manifests: &mut Vec<Manifest>,
    ) -> Result<(Option<ApplySet>, Vec<String>), PlanError> {
        let mut skipped = Vec::new();
        match &prune.mode {
            PruneMode::None => Ok((None, skipped)),
            PruneMode::Allowlist { selector, all, .. } => match selector {
                Some(s) => {
                    let sel = LabelSelector::parse(s).map_err(PlanError::PruneSelector)?;
                    manifests.retain(|m| {
                        let keep = sel.matches(&m.object());
                        if !keep {
                            skipped.push(format!("{} {}", m.source, m.id));
                        }
                        keep
                    });
                    Ok((None, skipped))
                }
                None if *all => Ok((None, skipped)),
                None => Err(PlanError::PruneWithoutScope),
            },
            PruneMode::ApplySet { parent, tooling } => {
                let set = self.applyset(parent, tooling.as_deref()).await?;
                for m in manifests.iter_mut() {
                    m.update_object(|o| set_label(o, PART_OF_LABEL, &set.id));
                }
                Ok((Some(set), skipped))
            }
        }
    }

    /// The prune candidates of a complete read (`Ok(Err)`: listing them
    /// was forbidden, which blocks pruning): by the allowlist in the
    /// namespaces `visited` gives, or the ApplySet's members; none without
    /// `--prune`.
    pub(super) async fn prune_candidates(
        &self,
        prune: &PruneOptions,
        applyset: Option<&ApplySet>,
        visited: impl FnOnce() -> BTreeSet<String>,
        in_manifests: &HashSet<ObjectRef>,
    ) -> Result<Result<Vec<ObjectPlan>, crate::plan::PruneBlock>, ClusterError> {
        let candidates = match (&prune.mode, applyset) {
            (
                PruneMode::Allowlist {
                    selector,
                    allowlist,
                    ..
                },
                _,
            ) => {
                self.allowlist_candidates(selector.as_deref(), allowlist, &visited(), in_manifests)
                    .await
            }
            // The kinds above still go to the parent before the apply (as
            // kubectl does); only pruning is skipped.
            (PruneMode::ApplySet { .. }, Some(set)) => {
                self.applyset_candidates(set, in_manifests).await
            }
            _ => return Ok(Ok(Vec::new())),
        };
        forbidden_listing(candidates)
    }

    /// Each of `manifests` with its live object (`Ok(None)`: not there
    /// yet; `Err`: the error line when its kind or object cannot be read),
    /// read as the plan reads them (one paged LIST per (resource,
    /// namespace), a GET each only where LIST answers 403, at most
    /// [`PLAN_GROUPS_IN_FLIGHT`] groups at once) and handed to `each` on the
    /// planning threads; what `each` makes of them goes to `emit` in
    /// manifest order. The manifest's scope is the server's (as
    /// [`Session::plan`] sets it). Only a failure of the whole run (an
    /// unreachable server) is `Err`, after the objects already emitted.
    /// `diff --server-side` reads live state this way.
    pub async fn read_each_with<T: Send + 'static>(
        &self,
        manifests: Vec<Manifest>,
        each: impl Fn(Manifest, Result<Option<Value>, String>) -> T + Send + Sync + 'static,
        mut emit: impl FnMut(T) + Send,
    ) -> Result<(), ClusterError> {
        let each = Arc::new(each);
        let versions: BTreeSet<String> = manifests.iter().map(|m| m.api_version()).collect();
        self.discovery
            .prefetch(self, versions.iter().map(String::as_str))
            .await?;
        let total = manifests.len();
        let mut slots: Vec<Option<T>> = Vec::new();
        slots.resize_with(total, || None);
        let mut groups: Groups = BTreeMap::new();
        let mut members: Vec<Option<Manifest>> = Vec::with_capacity(total);
        for (i, mut m) in manifests.into_iter().enumerate() {
            match self.resource(&m.api_version(), &m.id.kind).await {
                Err(e) if e.is_fatal() => return Err(e),
                Err(e) => {
                    let line = format!("error: {}: {e}", m.id);
                    slots[i] = Some(each(m, Err(line)));
                    members.push(None);
                }
                Ok(info) => {
                    m.set_scope(info.namespaced, &self.namespace);
                    add_to_group(&mut groups, &info, &m, i);
                    members.push(Some(m));
                }
            }
        }
        let groups = take_groups(groups, &mut members);
        let each_ref = &each;
        let mut stream = futures::stream::iter(collect_vec(groups.into_iter().map(
            |(info, ns, group)| async move {
                let names = group.iter().map(|(_, m)| m.id.name.clone()).collect();
                let found = self.fetch_group(&info, ns.as_deref(), names).await;
                let mut by_name = match found {
                    Err(e) if e.is_fatal() => return Err(e),
                    Err(e) => {
                        return Ok(group
                            .into_iter()
                            .map(|(i, m)| {
                                let line = format!("error: {}: {e}", m.id);
                                (i, each_ref(m, Err(line)))
                            })
                            .collect());
                    }
                    Ok(by_name) => by_name,
                };
                let info = Arc::new(info);
                let chunks: Vec<_> = plan_chunks(group.into_iter().map(|(i, m)| {
                    let live = by_name.remove(&m.id.name).unwrap_or(Ok(None));
                    (i, m, live)
                }))
                .map(|chunk| {
                    let each = Arc::clone(each_ref);
                    let info = Arc::clone(&info);
                    self.workers.run(move || {
                        chunk
                            .into_iter()
                            .map(|(i, m, live)| {
                                let live = live
                                    .and_then(|l| l.map(|l| l.decode(Some(&info))).transpose())
                                    .map_err(|e| format!("error: {}: {e}", m.id));
                                (i, each(m, live))
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
                // The rest of the LIST (objects no manifest names) goes now.
                drop(by_name);
                let mut rows = Vec::new();
                for chunk in futures::future::join_all(chunks).await {
                    rows.extend(chunk?);
                }
                Ok::<_, ClusterError>(rows)
            },
        )))
        .buffer_unordered(self.concurrency.min(PLAN_GROUPS_IN_FLIGHT));
        let mut next = 0;
        loop {
            while let Some(Some(_)) = slots.get(next) {
                if let Some(t) = slots[next].take() {
                    emit(t);
                }
                next += 1;
            }
            let Some(answer) = stream.next().await else {
                break;
            };
            for (i, t) in answer? {
                slots[i] = Some(t);
            }
        }
        Ok(())
    }

    /// The live objects of one group by name. LIST (paged); on 403, GET each.
    pub(super) async fn fetch_group(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        names: HashSet<String>,
    ) -> Result<LiveByName, ClusterError> {
        let wanted = Arc::new(names);
        let page = |body: bytes::Bytes| {
            let wanted = Arc::clone(&wanted);
            move || named_items(body, &wanted)
        };
        match self.list_pages(info, namespace, None, page).await {
            Ok(items) => Ok(items
                .into_iter()
                .map(|(name, item)| (name, Ok(Some(item))))
                .collect()),
            Err(e) if e.code() == 403 => {
                let gets =
                    futures::stream::iter(collect_vec(wanted.iter().map(|name| async move {
                        let path = info.object_path(namespace, name);
                        let r = match self.call(Method::GET, &path, &[], None, None).await {
                            Ok(mut v) => {
                                fill_type(&mut v, info);
                                Ok(Some(LiveItem::Decoded(v)))
                            }
                            Err(e) if e.code() == 404 => Ok(None),
                            Err(e) => Err(e),
                        };
                        (name.clone(), r)
                    })))
                    .buffer_unordered(self.concurrency)
                    .collect::<Vec<_>>()
                    .await;
                if let Some((_, Err(e))) = gets
                    .iter()
                    .find(|(_, r)| r.as_ref().is_err_and(ClusterError::is_fatal))
                {
                    return Err(e.clone());
                }
                Ok(gets.into_iter().collect())
            }
            Err(e) => Err(e),
        }
    }

    /// Every object of a resource in a namespace (or cluster-wide), paged
    /// with `limit`/`continue`; items get their apiVersion and kind back
    /// (list items of built-in kinds come without them).
    pub(crate) async fn list_all(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        selector: Option<&str>,
    ) -> Result<Vec<Value>, ClusterError> {
        let page = |body: bytes::Bytes| {
            let info = info.clone();
            move || {
                let (mut items, next) = decode_page(&body);
                drop(body);
                for item in &mut items {
                    fill_type(item, &info);
                }
                (items, next)
            }
        };
        self.list_pages(info, namespace, selector, page).await
    }

    /// The pages of a LIST, paged with `limit`/`continue`, each made into
    /// its items and continue token by the job `page` makes of its body,
    /// run on a worker thread: a page of 500 objects is the largest piece
    /// of CPU work of a read.
    async fn list_pages<T: Send + 'static, J>(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        selector: Option<&str>,
        page: impl Fn(bytes::Bytes) -> J,
    ) -> Result<Vec<T>, ClusterError>
    where
        J: FnOnce() -> (Vec<T>, Option<String>) + Send + 'static,
    {
        let path = info.collection_path(namespace);
        let limit = PAGE_SIZE.to_string();
        let mut items = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut query: Vec<(&str, &str)> = vec![("limit", &limit)];
            if let Some(s) = selector {
                query.push(("labelSelector", s));
            }
            if let Some(t) = &token {
                query.push(("continue", t));
            }
            let body = match self
                .call_bytes(Method::GET, &path, &query, None, None)
                .await
            {
                Ok(b) => b,
                // A namespace that does not exist (yet) holds nothing.
                Err(e) if e.code() == 404 && namespace.is_some() && info.namespaced => break,
                Err(e) => return Err(e),
            };
            let (mut list, next) = self.workers.run(page(body)).await?;
            items.append(&mut list);
            match next {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        Ok(items)
    }

    async fn allowlist_candidates(
        &self,
        selector: Option<&str>,
        allowlist: &[String],
        namespaces: &BTreeSet<String>,
        in_manifests: &HashSet<ObjectRef>,
    ) -> Result<Vec<ObjectPlan>, ClusterError> {
        let defaulted = allowlist.is_empty();
        let list = if defaulted {
            default_prune_allowlist()
        } else {
            allowlist.to_vec()
        };
        let mut kinds = Vec::new();
        for gvk in &list {
            let parts: Vec<&str> = gvk.split('/').collect();
            let (group, version, kind) = match parts.as_slice() {
                [g, v, k] => (if *g == "core" { "" } else { *g }, *v, *k),
                [v, k] => ("", *v, *k),
                _ => {
                    return Err(ClusterError::Other(format!(
                        "invalid --prune-allowlist entry {gvk:?}: expected group/version/Kind (core/v1/ConfigMap)"
                    )));
                }
            };
            let api_version = crate::objref::api_version(group, version);
            match self.resource(&api_version, kind).await {
                Ok(info) => kinds.push(info),
                // The default list names kinds a small cluster may not serve.
                Err(ClusterError::NotServed(_)) if defaulted => continue,
                Err(e) => return Err(e),
            }
        }
        let matched = match selector {
            Some(s) => format!("matches -l {s}"),
            None => "selected by --all".to_string(),
        };
        self.candidates(
            kinds,
            namespaces,
            selector,
            in_manifests,
            |item| last_applied_value(item).is_some(),
            |info| {
                format!(
                    "has last-applied annotation, {matched}, kind {} in prune allowlist, not in manifests",
                    info.group_kind()
                )
            },
        )
        .await
    }

    async fn applyset_candidates(
        &self,
        set: &ApplySet,
        in_manifests: &HashSet<ObjectRef>,
    ) -> Result<Vec<ObjectPlan>, ClusterError> {
        let selector = format!("{PART_OF_LABEL}={}", set.id);
        let namespaces: BTreeSet<String> = set
            .recorded_namespaces
            .union(&set.current_namespaces)
            .cloned()
            .collect();
        let mut kinds = Vec::new();
        for gk in &set.recorded_kinds {
            let (kind, group) = gk.split_once('.').unwrap_or((gk.as_str(), ""));
            match self.discovery.resolve_group_kind(self, group, kind).await {
                Ok(info) => kinds.push(info),
                // A recorded kind no longer served has no objects to prune.
                Err(ClusterError::NotServed(_)) => continue,
                Err(e) => return Err(e),
            }
        }
        let set_ref = set.reference();
        self.candidates(
            kinds,
            &namespaces,
            Some(&selector),
            in_manifests,
            |_| true,
            |info| {
                format!(
                    "labelled {PART_OF_LABEL}={} (ApplySet {set_ref}), kind {} recorded on the parent, not in manifests",
                    set.id,
                    info.group_kind()
                )
            },
        )
        .await
    }

    /// The prune candidates among the objects of `kinds` (a namespaced
    /// kind in each of `namespaces`) that `selector` matches: those `keep`
    /// takes that are not in the manifests, each with the `reason` of its
    /// kind. Each LIST is cut down to its candidates as it answers: the
    /// objects in the manifests (most of a LIST) are not kept.
    async fn candidates(
        &self,
        kinds: Vec<ResourceInfo>,
        namespaces: &BTreeSet<String>,
        selector: Option<&str>,
        in_manifests: &HashSet<ObjectRef>,
        keep: impl Fn(&Value) -> bool + Sync,
        reason: impl Fn(&ResourceInfo) -> String + Sync,
    ) -> Result<Vec<ObjectPlan>, ClusterError> {
        let mut lists = Vec::new();
        for info in kinds {
            if info.namespaced {
                for ns in namespaces {
                    lists.push((info.clone(), Some(ns.clone())));
                }
            } else {
                lists.push((info, None));
            }
        }
        let (keep, reason) = (&keep, &reason);
        let results = futures::stream::iter(collect_vec(lists.into_iter().map(
            |(info, ns)| async move {
                let items = match self.list_all(&info, ns.as_deref(), selector).await {
                    // Which LIST, for the words of the skipped prune.
                    Err(ClusterError::Api {
                        code: 403,
                        reason,
                        message,
                    }) => {
                        return Err(ClusterError::Api {
                            code: 403,
                            reason,
                            message: format!(
                                "LIST {}: {message}",
                                info.collection_path(ns.as_deref())
                            ),
                        });
                    }
                    r => r?,
                };
                let mut out = Vec::new();
                for item in items {
                    if !keep(&item) || in_manifests.contains(&crate::manifest::live_key(&item)) {
                        continue;
                    }
                    out.push(prune_candidate(&item, reason(&info)));
                }
                Ok::<_, ClusterError>(out)
            },
        )))
        .buffered(self.concurrency)
        .collect::<Vec<_>>()
        .await;
        let mut out = Vec::new();
        for r in results {
            out.extend(r?);
        }
        Ok(out)
    }
}

/// Prune candidates, or why pruning is skipped when a LIST of them was
/// forbidden (403: RBAC lets the user read what it applies but not list a
/// kind): the plan and the apply go on without pruning, as kubectl diff
/// does. Any other failure stops the run.
fn forbidden_listing(
    found: Result<Vec<ObjectPlan>, ClusterError>,
) -> Result<Result<Vec<ObjectPlan>, crate::plan::PruneBlock>, ClusterError> {
    match found {
        Ok(c) => Ok(Ok(c)),
        Err(e) if e.code() == 403 => Ok(Err(crate::plan::PruneBlock::ListForbidden(e.to_string()))),
        Err(e) => Err(e),
    }
}

/// A LIST page decoded whole: its items (taken out of the page, not
/// copied) and its continue token. A body that is not a list holds none.
fn decode_page(body: &[u8]) -> (Vec<Value>, Option<String>) {
    let mut page = super::decode_body(body);
    let items = match page.get_mut("items").map(Value::take) {
        Some(Value::Array(l)) => l,
        _ => Vec::new(),
    };
    let next = str_at(&page, "/metadata/continue")
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    (items, next)
}

/// The items of a LIST page that `wanted` names, by name, each kept as its
/// JSON text (a slice of the body, not a copy) for its planning job to
/// decode; the others are never decoded. Its continue token too. What
/// this quick reading does not take (a body that is not a list, an item
/// whose name it cannot find, a repeated key) is decoded whole and read
/// as [`decode_page`] reads it, so both say the same of any body.
fn named_items(
    body: bytes::Bytes,
    wanted: &HashSet<String>,
) -> (Vec<(String, LiveItem)>, Option<String>) {
    #[derive(serde::Deserialize)]
    struct Page<'a> {
        #[serde(borrow)]
        items: Vec<&'a serde_json::value::RawValue>,
        #[serde(default)]
        metadata: Value,
    }
    let named = |v: Value| {
        let name = str_at(&v, "/metadata/name")?.to_string();
        wanted
            .contains(&name)
            .then_some((name, LiveItem::Decoded(v)))
    };
    // A struct also reads from an array: only an object is a page.
    let page = (body.trim_ascii_start().first() == Some(&b'{'))
        .then(|| serde_json::from_slice::<Page>(&body).ok())
        .flatten();
    let Some(page) = page else {
        let (items, next) = decode_page(&body);
        return (items.into_iter().filter_map(named).collect(), next);
    };
    let next = str_at(&page.metadata, "/continue")
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    let items = page
        .items
        .into_iter()
        .filter_map(|raw| {
            let text = raw.get();
            let mut de = serde_json::Deserializer::from_str(text);
            match serde::de::DeserializeSeed::deserialize(item_name(), &mut de) {
                Ok(name) => {
                    let name = name.flatten().flatten()?;
                    if !wanted.contains(&name) {
                        return None;
                    }
                    // Where the item sits in the body: its text is shared.
                    let start = text.as_ptr() as usize - body.as_ptr() as usize;
                    Some((name, LiveItem::Text(body.slice(start..start + text.len()))))
                }
                Err(_) => named(serde_json::from_str(text).ok()?),
            }
        })
        .collect();
    (items, next)
}

/// Reads one key of a JSON object by `value`, skipping the rest: `None`
/// when the object lacks the key or is null. Another shape than an object
/// (or null), or the key twice, is an error.
struct Field<S> {
    key: &'static str,
    value: S,
}

/// Reads a list item for its `metadata.name` alone (`None`: it has none):
/// an item, metadata or name of another shape than objects and a string
/// (or null) is an error.
fn item_name() -> Field<Field<std::marker::PhantomData<Option<String>>>> {
    Field {
        key: "metadata",
        value: Field {
            key: "name",
            value: std::marker::PhantomData,
        },
    }
}

impl<'de, S: serde::de::DeserializeSeed<'de>> serde::de::DeserializeSeed<'de> for Field<S> {
    type Value = Option<S::Value>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de, S: serde::de::DeserializeSeed<'de>> serde::de::Visitor<'de> for Field<S> {
    type Value = Option<S::Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object")
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::{Error, IgnoredAny};
        let Field { key: wanted, value } = self;
        let mut value = Some(value);
        let mut found = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<str>>()? {
            if key != wanted {
                map.next_value::<IgnoredAny>()?;
            } else if let Some(seed) = value.take() {
                found = Some(map.next_value_seed(seed)?);
            } else {
                return Err(A::Error::custom(format!("{wanted} twice")));
            }
        }
        Ok(found)
    }
}

/// Put apiVersion and kind on an object read from a list.
pub(crate) fn fill_type(item: &mut Value, info: &ResourceInfo) {
    if let Some(obj) = item.as_object_mut() {
        obj.entry("apiVersion")
            .or_insert_with(|| Value::String(info.api_version()));
        obj.entry("kind")
            .or_insert_with(|| Value::String(info.kind.clone()));
    }
}

/// Set `metadata.labels[key] = value`, creating the maps as needed.
pub(crate) fn set_label(object: &mut Value, key: &str, value: &str) {
    let Some(obj) = object.as_object_mut() else {
        return;
    };
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    let labels = meta
        .entry("labels")
        .or_insert_with(|| Value::Object(Default::default()));
    if !labels.is_object() {
        *labels = Value::Object(Default::default());
    }
    if let Some(labels) = labels.as_object_mut() {
        labels.insert(key.to_string(), Value::String(value.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_are_added_to_configs() {
        let mut o = json!({"metadata": {"name": "x"}});
        set_label(&mut o, PART_OF_LABEL, "applyset-abc-v1");
        assert_eq!(o["metadata"]["labels"][PART_OF_LABEL], "applyset-abc-v1");
        let mut o = json!({"metadata": {"name": "x", "labels": {"app": "a"}}});
        set_label(&mut o, PART_OF_LABEL, "id");
        assert_eq!(
            o["metadata"]["labels"],
            json!({"app": "a", PART_OF_LABEL: "id"})
        );
    }

    /// What the quick reading of a page says, as (name, object) pairs.
    fn quick(body: &str, wanted: &[&str]) -> (Vec<(String, Value)>, Option<String>) {
        let wanted: HashSet<String> = wanted.iter().map(|s| s.to_string()).collect();
        let info = ResourceInfo {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            plural: "configmaps".into(),
            namespaced: true,
            ..Default::default()
        };
        let (items, next) = named_items(bytes::Bytes::from(body.to_string()), &wanted);
        let items = items
            .into_iter()
            .map(|(n, item)| (n, item.decode(Some(&info)).unwrap()))
            .collect();
        (items, next)
    }

    #[test]
    fn list_items_are_read_by_name_as_a_whole_decode_reads_them() {
        // Only the wanted items, as their text, with their type filled in.
        let (items, next) = quick(
            r#"{"kind":"ConfigMapList","metadata":{"continue":"t1","resourceVersion":"9"},
               "items":[{"metadata":{"name":"a","namespace":"d"},"data":{"k":"v\u00e9"}},
                        {"metadata":{"name":"b"}},{"metadata":{"name":"c\"q"}}]}"#,
            &["a", "c\"q"],
        );
        assert_eq!(next.as_deref(), Some("t1"));
        assert_eq!(
            items,
            vec![
                (
                    "a".to_string(),
                    json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "a", "namespace": "d"}, "data": {"k": "v\u{e9}"}})
                ),
                (
                    "c\"q".to_string(),
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c\"q"}})
                ),
            ]
        );
        // Shapes the quick reading does not take say what decode_page says.
        for body in [
            r#"[[{"metadata":{"name":"a"}}], {"continue":"t"}]"#,
            r#"{"items":[["x"], {"metadata":["a"]}, {"metadata":{"name":1}}, "a"]}"#,
            r#"{"items":[{"metadata":{"name":"a"},"metadata":{"name":"b"}}]}"#,
            r#"{"items":[{"metadata":{"name":"a","name":"b"}}]}"#,
            r#"{"items":[{"metadata":{"name":"a"}}],"items":[{"metadata":{"name":"b"}}]}"#,
            r#"{"items":null,"metadata":{"continue":"t"}}"#,
            r#"{"items":[{"metadata":{"name":"b"}}],"metadata":{"continue":7}}"#,
            r#"{"items":[{"metadata":null},{"metadata":{"name":null}},{"metadata":{"name":"a"}}],"metadata":{"continue":""}}"#,
            "not json",
            "",
        ] {
            let (whole, whole_next) = decode_page(body.as_bytes());
            let expected: Vec<(String, Value)> = whole
                .into_iter()
                .filter_map(|mut v| {
                    let name = str_at(&v, "/metadata/name")?.to_string();
                    ["a", "b"].contains(&name.as_str()).then(|| {
                        v["apiVersion"] = json!("v1");
                        v["kind"] = json!("ConfigMap");
                        (name, v)
                    })
                })
                .collect();
            assert_eq!(quick(body, &["a", "b"]), (expected, whole_next), "{body}");
        }
    }

    #[test]
    fn default_allowlist_is_kubectls() {
        let l = default_prune_allowlist();
        assert_eq!(l.len(), 16);
        assert!(l.contains(&"apps/v1/Deployment".to_string()));
        assert!(l.contains(&"core/v1/PersistentVolume".to_string()));
    }
}
