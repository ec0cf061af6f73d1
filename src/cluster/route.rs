//! The one planning route: the manifests planned against live objects
//! from either source, a cluster (one LIST per resource and namespace, a
//! GET each where LIST is forbidden) or `--live` files, by one body, so
//! the two cannot drift: load errors first, each manifest's scope settled
//! (discovery, or the CustomResourceDefinitions at hand), a custom kind's
//! namespace checked against `-n`, the objects planned on the planning
//! threads a chunk at a time and handed out in manifest order as soon as
//! they and those before them are done, then the prune candidates.

use super::applyset::ApplySet;
use super::deps::{Loaded, Manifest, PlanOptions, plan_object_owned, prune_block};
use super::discovery::ResourceInfo;
use super::live::{
    LiveByName, LiveItem, PLAN_CHUNK, PLAN_GROUPS_IN_FLIGHT, Planned, PruneMode, PruneOptions,
    add_to_group, error_plan, finisher, load_error_row, plan_chunks, take_groups,
};
use super::{ClusterError, Session, WorkerFailed, Workers, collect_vec};
use crate::manifest::{LiveObject, LiveObjects};
use crate::objref::ObjectRef;
use crate::ops::Progress;
use crate::plan::{ObjectPlan, Plan};
use futures::StreamExt;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// Where the live objects of a plan come from.
pub enum LiveSource<'a> {
    /// A cluster: its LISTs, with the prune flags (candidates are listed
    /// there) and where progress goes as the LISTs answer.
    Cluster {
        session: &'a Session,
        prune: &'a PruneOptions,
        progress: Option<UnboundedSender<Progress>>,
    },
    /// Live objects read from files (`--live`): `default_ns` is the
    /// namespace of a namespaced object without one, `flag` is `-n` when
    /// given (a namespaced custom object must not name another).
    Files {
        live: &'a mut LiveObjects,
        default_ns: &'a str,
        flag: Option<&'a str>,
    },
}

/// Why a plan could not be made at all (a problem of one object is an
/// error row, not this). Worded as the errors it stands for were.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PlanError {
    /// `--prune` with neither a selector nor `--all` nor an ApplySet.
    #[error("--prune needs -l SELECTOR or --all (or --applyset)")]
    PruneWithoutScope,
    /// The prune selector does not parse.
    #[error("{0}")]
    PruneSelector(crate::selector::SelectorError),
    /// A read the whole run needs failed: discovery, the ApplySet's parent,
    /// a LIST or GET that ends the run (an unreachable server), the prune
    /// listing.
    #[error(transparent)]
    Read(#[from] ClusterError),
    /// A planning thread stopped or panicked.
    #[error(transparent)]
    Planning(#[from] WorkerFailed),
}

/// Each manifest as its source settled it.
enum Settled {
    /// Its resource, read by a LIST of the cluster.
    Listed(Arc<ResourceInfo>),
    /// Its kind could not be resolved (not served, discovery refused):
    /// an error row.
    Unresolved(ClusterError),
    /// Its live object from the files (decoded when planned), and a
    /// warning when its scope is a guess.
    Given(Option<LiveObject>, Option<String>),
}

/// One read of live state and the manifests it answers, each with its
/// index in the plan.
enum Batch<'s> {
    /// One LIST of a resource in a namespace (or cluster-wide).
    List {
        session: &'s Session,
        info: ResourceInfo,
        ns: Option<String>,
        members: Vec<(usize, Manifest)>,
    },
    /// A chunk of manifests whose live objects are at hand.
    Given(Vec<(usize, Manifest, Option<LiveObject>, Option<String>)>),
}

/// A planned batch: what progress says of it, and its finished rows.
type Answer<T> = (Option<String>, Vec<(usize, T)>);

impl LiveSource<'_> {
    /// The plan of `loaded` against this source's live state, each object's
    /// plan first turned into what the caller shows of it by `finish` on the
    /// planning threads (without its config and live object unless
    /// `keep_objects`: `diff` and `plan` show neither), then handed to
    /// `emit` in plan order as soon as it and every object before it are
    /// done (the returned plan has no objects).
    ///
    /// Against a cluster, costs: one discovery request per group version
    /// named, one LIST (paged by [`super::PAGE_SIZE`]) per (resource,
    /// namespace) group, at most [`PLAN_GROUPS_IN_FLIGHT`] groups at once
    /// (each holds its answer until planned); a GET per object only where
    /// LIST answers 403. An object is planned as soon as its group's LIST
    /// answers, so memory holds the LISTs in flight, not every live
    /// object; groups are read in manifest order, so the plan comes out
    /// while later groups are read. Nothing is emitted before discovery is
    /// done; a failure of the whole run while reading comes after the
    /// objects already emitted.
    ///
    /// Offline, the scope of a custom kind comes from a
    /// CustomResourceDefinition among the manifests or the live objects;
    /// where none defines it the object is planned as namespaced (in
    /// `default_ns` unless it names one) and a warning on it says the
    /// scope is a guess.
    pub async fn plan_each<T: Send + 'static>(
        self,
        loaded: Loaded,
        keep_objects: bool,
        finish: impl Fn(ObjectPlan) -> T + Send + Sync + 'static,
        mut emit: impl FnMut(T) + Send,
    ) -> Result<Planned, PlanError> {
        let finish = finisher(keep_objects, finish);
        let Loaded {
            mut manifests,
            errors: mut load_errors,
        } = loaded;
        let mut planned = Planned {
            plan: Plan {
                objects: Vec::new(),
                prune_skipped: None,
            },
            applyset: None,
            skipped: Vec::new(),
        };
        let Settling {
            settled,
            session,
            progress,
            prune,
        } = self
            .settle(&mut manifests, &mut load_errors, &mut planned)
            .await?;
        let total = manifests.len();
        let pruning = prune.filter(|p| p.mode != PruneMode::None);

        // What pruning needs of the manifests: their identities and
        // namespaces (taken now, as each manifest goes once it is planned).
        let mut blocked = pruning.and_then(|_| prune_block(&load_errors, total));
        let identities = pruning.map(|_| {
            let in_manifests: HashSet<ObjectRef> = manifests.iter().map(|m| m.id.clone()).collect();
            let namespaces: BTreeSet<String> = manifests
                .iter()
                .filter_map(|m| m.id.namespace.clone())
                .collect();
            (in_manifests, namespaces)
        });
        if let (Some(set), Some(session)) = (&mut planned.applyset, session) {
            note_members(set, &manifests, &settled, &session.namespace);
        }

        // The plan in order: load errors, then the manifests as their
        // batches answer (each slot emitted once those before it are), then
        // prune candidates. Each manifest moves into its batch.
        for e in &load_errors {
            emit(finish(load_error_row(e)));
        }
        let mut slots: Vec<Option<T>> = Vec::new();
        slots.resize_with(total, || None);
        let batches = batches(session, manifests, settled, |i, m, e| {
            let mut row = error_plan(&m, e.to_string());
            row.kind_not_served = matches!(e, ClusterError::NotServed(_));
            slots[i] = Some(finish(row));
        });
        let lists = batches.len();
        let send = |done: usize, what: String| {
            if let Some(tx) = &progress {
                let _ = tx.send(Progress {
                    done,
                    total,
                    lists,
                    what,
                });
            }
        };
        send(0, "reading live state".into());
        // Offline, the planning threads are the route's own.
        let own_workers;
        let (workers, in_flight) = match session {
            Some(s) => (&s.workers, s.concurrency.min(PLAN_GROUPS_IN_FLIGHT)),
            None => {
                own_workers = Workers::new();
                // A few chunks ahead of the one being written.
                let n = 2 * own_workers.threads() + 1;
                (&own_workers, n)
            }
        };
        let each = Arc::new(plan_row(Arc::clone(&finish)));
        let each = &each;
        let answers = futures::stream::iter(collect_vec(
            batches.into_iter().map(|b| answer(b, workers, each)),
        ))
        .buffer_unordered(in_flight);
        in_order(answers, slots, &mut emit, send).await?;

        // Prune candidates, only from a complete read: an object that could
        // not be read or planned must never look like one to delete.
        if let (Some(session), Some(prune), Some((in_manifests, namespaces)), None) =
            (session, pruning, identities, &blocked)
        {
            let visited = || {
                let mut visited = namespaces.clone();
                if session.explicit_namespace {
                    visited.insert(session.namespace.clone());
                }
                visited
            };
            match session
                .prune_candidates(prune, planned.applyset.as_ref(), visited, &in_manifests)
                .await?
            {
                Ok(c) => c.into_iter().map(&*finish).for_each(&mut emit),
                Err(b) => blocked = Some(b),
            }
        }
        planned.plan.prune_skipped = blocked;
        Ok(planned)
    }
}

/// What a source settles before anything is read or planned.
struct Settling<'a> {
    /// Each remaining manifest's resource or live object.
    settled: Vec<Settled>,
    session: Option<&'a Session>,
    progress: Option<UnboundedSender<Progress>>,
    prune: Option<&'a PruneOptions>,
}

impl<'a> LiveSource<'a> {
    /// The prune flags' scope (against a cluster: the manifests a prune
    /// selector leaves out, listed in `planned.skipped`, and the ApplySet)
    /// and each manifest's scope, as [`settle_listed`] or [`settle_given`]
    /// settle it.
    async fn settle(
        self,
        manifests: &mut Vec<Manifest>,
        load_errors: &mut Vec<crate::manifest::ManifestError>,
        planned: &mut Planned,
    ) -> Result<Settling<'a>, PlanError> {
        match self {
            LiveSource::Cluster {
                session,
                prune,
                progress,
            } => {
                (planned.applyset, planned.skipped) = session.prune_scope(prune, manifests).await?;
                let settled =
                    settle_listed(session, manifests, load_errors, &progress, true).await?;
                Ok(Settling {
                    settled,
                    session: Some(session),
                    progress,
                    prune: Some(prune),
                })
            }
            LiveSource::Files {
                live,
                default_ns,
                flag,
            } => {
                let settled = settle_given(live, (default_ns, flag), manifests, load_errors);
                Ok(Settling {
                    settled,
                    session: None,
                    progress: None,
                    prune: None,
                })
            }
        }
    }
}

/// What an ApplySet records of this run: every manifest's kind, served or
/// not yet (a custom kind whose CRD this run applies is still a member),
/// and the namespace of each namespaced one (`default_ns` where it names
/// none; a kind not resolved counts as namespaced), with the parent's.
fn note_members(set: &mut ApplySet, manifests: &[Manifest], settled: &[Settled], default_ns: &str) {
    for (m, s) in manifests.iter().zip(settled) {
        set.current_kinds.insert(m.id.group_kind());
        let namespaced = match s {
            Settled::Listed(info) => info.namespaced,
            _ => true,
        };
        if namespaced {
            let ns = m.id.namespace.as_deref().unwrap_or(default_ns);
            set.current_namespaces.insert(ns.to_string());
        }
    }
    if let Some(ns) = &set.namespace {
        set.current_namespaces.insert(ns.clone());
    }
}

/// The rows of `answers` and those already in `slots` (indexed by their
/// place in the plan) handed to `emit` in plan order, each as soon as
/// every row before it is; `noted` hears each batch's progress note with
/// the count of rows answered so far. A failed batch ends it, after the
/// rows already emitted.
async fn in_order<T>(
    mut answers: impl futures::Stream<Item = Result<Answer<T>, PlanError>> + Unpin,
    mut slots: Vec<Option<T>>,
    emit: &mut (impl FnMut(T) + Send),
    noted: impl Fn(usize, String),
) -> Result<(), PlanError> {
    let mut next = 0;
    let mut done = 0;
    loop {
        while let Some(Some(_)) = slots.get(next) {
            if let Some(p) = slots[next].take() {
                emit(p);
            }
            next += 1;
        }
        let Some(answer) = answers.next().await else {
            break;
        };
        let (note, rows) = answer?;
        done += rows.len();
        for (i, row) in rows {
            slots[i] = Some(row);
        }
        if let Some(what) = note {
            noted(done, what);
        }
    }
    drop(answers);
    // Every manifest is an error row or in a batch: all slots are full.
    for slot in &mut slots[next..] {
        if let Some(p) = slot.take() {
            emit(p);
        }
    }
    Ok(())
}

impl Session {
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
        mut manifests: Vec<Manifest>,
        each: impl Fn(Manifest, Result<Option<Value>, String>) -> T + Send + Sync + 'static,
        mut emit: impl FnMut(T) + Send,
    ) -> Result<(), PlanError> {
        // `-n` is not checked here (no manifest is refused).
        let mut refused = Vec::new();
        let settled = settle_listed(self, &mut manifests, &mut refused, &None, false).await?;
        // Whatever could not be read is an error line naming the object.
        let each = Arc::new(
            move |m: Manifest, live: Result<Option<Value>, ClusterError>, _: Option<String>| {
                let live = live.map_err(|e| format!("error: {}: {e}", m.id));
                each(m, live)
            },
        );
        let mut slots: Vec<Option<T>> = Vec::new();
        slots.resize_with(manifests.len(), || None);
        let batches = batches(Some(self), manifests, settled, |i, m, e| {
            slots[i] = Some(each(m, Err(e), None));
        });
        let each = &each;
        let answers = futures::stream::iter(collect_vec(
            batches.into_iter().map(|b| answer(b, &self.workers, each)),
        ))
        .buffer_unordered(self.concurrency.min(PLAN_GROUPS_IN_FLIGHT));
        in_order(answers, slots, &mut emit, |_, _| {}).await
    }
}

/// Each manifest's resource from discovery (a fatal error ends the run):
/// its scope is the server's for every kind, built-in or custom (a
/// namespace the load filled in on a cluster-scoped kind goes), and a
/// custom kind's namespace, now known namespaced, is checked against `-n`
/// (the load checked the others): a mismatch moves it to `load_errors`.
async fn settle_listed(
    session: &Session,
    manifests: &mut Vec<Manifest>,
    load_errors: &mut Vec<crate::manifest::ManifestError>,
    progress: &Option<UnboundedSender<Progress>>,
    check_flag: bool,
) -> Result<Vec<Settled>, ClusterError> {
    if let Some(tx) = progress {
        let _ = tx.send(Progress {
            done: 0,
            total: manifests.len(),
            lists: 0,
            what: "discovery (which kinds the server serves)".into(),
        });
    }
    let versions: BTreeSet<String> = manifests.iter().map(|m| m.api_version()).collect();
    session
        .discovery
        .prefetch(session, versions.iter().map(String::as_str))
        .await?;
    let flag = (check_flag && session.explicit_namespace).then_some(session.namespace.as_str());
    let mut settled = Vec::with_capacity(manifests.len());
    let mut misplaced = Vec::new();
    // One resource per kind, shared by its manifests (a copy each was a
    // few MB at 10,000 objects).
    let mut known: HashMap<(String, String), Arc<ResourceInfo>> = HashMap::new();
    for (i, m) in manifests.iter_mut().enumerate() {
        let key = (m.api_version(), m.id.kind.clone());
        let resolved = match known.get(&key) {
            Some(info) => Ok(Arc::clone(info)),
            None => session.resource(&key.0, &key.1).await.map(|info| {
                let info = Arc::new(info);
                known.insert(key, Arc::clone(&info));
                info
            }),
        };
        match resolved {
            Err(e) if e.is_fatal() => return Err(e),
            Err(e) => settled.push(Settled::Unresolved(e)),
            Ok(info) => {
                m.set_scope(info.namespaced, &session.namespace);
                if let Some(e) = info
                    .namespaced
                    .then(|| m.namespace_mismatch(flag))
                    .flatten()
                {
                    load_errors.push(e);
                    misplaced.push(i);
                }
                settled.push(Settled::Listed(info));
            }
        }
    }
    for i in misplaced.into_iter().rev() {
        manifests.remove(i);
        settled.remove(i);
    }
    Ok(settled)
}

/// Each manifest with its live object from `--live` files and a warning
/// when its scope is a guess, settled as the client-side plan settles
/// them (a manifest naming another namespace than `-n` is taken out, into
/// `load_errors`): for the server-side diff, whose rows are not plans.
pub fn given_from_files(
    live: &mut LiveObjects,
    (default_ns, flag): (&str, Option<&str>),
    mut manifests: Vec<Manifest>,
    load_errors: &mut Vec<crate::manifest::ManifestError>,
) -> Vec<(Manifest, Option<LiveObject>, Option<String>)> {
    let settled = settle_given(live, (default_ns, flag), &mut manifests, load_errors);
    manifests
        .into_iter()
        .zip(settled)
        .filter_map(|(m, s)| match s {
            Settled::Given(live, warning) => Some((m, live, warning)),
            Settled::Listed(_) | Settled::Unresolved(_) => None,
        })
        .collect()
}

/// Each manifest's live object from the files, its scope settled without
/// discovery (a built-in kind's is known; a custom kind's from a
/// CustomResourceDefinition among the manifests or the live objects, else
/// guessed namespaced, with a warning), and a custom kind taken as
/// namespaced whose namespace is not `-n` moved to `load_errors`, as the
/// load refuses a built-in kind's.
fn settle_given(
    live: &mut LiveObjects,
    (default_ns, flag): (&str, Option<&str>),
    manifests: &mut Vec<Manifest>,
    load_errors: &mut Vec<crate::manifest::ManifestError>,
) -> Vec<Settled> {
    let scopes: HashMap<(String, String), bool> = live
        .crd_scopes()
        .iter()
        .cloned()
        .chain(
            manifests
                .iter()
                .filter(|m| m.id.kind == "CustomResourceDefinition")
                .filter_map(|m| crate::manifest::crd_scope(&m.object())),
        )
        .map(|(g, k, namespaced)| ((g, k), namespaced))
        .collect();
    if flag.is_some() {
        manifests.retain(|m| {
            let namespaced = crate::manifest::is_namespaced(&m.api_version(), &m.id.kind)
                .or_else(|| {
                    scopes
                        .get(&(m.id.group.clone(), m.id.kind.clone()))
                        .copied()
                })
                .unwrap_or(true);
            match namespaced.then(|| m.namespace_mismatch(flag)).flatten() {
                Some(e) => {
                    load_errors.push(e);
                    false
                }
                None => true,
            }
        });
    }
    manifests
        .iter_mut()
        .map(|m| {
            let mut warning = None;
            if crate::manifest::is_namespaced(&m.api_version(), &m.id.kind).is_none() {
                match scopes.get(&(m.id.group.clone(), m.id.kind.clone())) {
                    Some(&namespaced) => m.set_scope(namespaced, default_ns),
                    None => {
                        warning = Some(format!(
                            "the scope of {} is unknown offline (no CustomResourceDefinition for it \
                             among the manifests or the --live objects): planned as namespaced in {:?}; \
                             if it is cluster-scoped, the namespace is wrong in the annotation and the patch",
                            m.id.group_kind(),
                            m.id.namespace.as_deref().unwrap_or(default_ns)
                        ))
                    }
                }
            }
            // Manifests are unique by identity, so each live object is
            // planned at most once.
            Settled::Given(live.take(&m.id), warning)
        })
        .collect()
}

/// The manifests cut into the reads that answer them: against a cluster
/// one LIST per (resource, namespace), in the order of each group's first
/// manifest (so the plan comes out in manifest order soonest), a manifest
/// whose kind is not resolved handed to `unresolved` as its error row;
/// offline, chunks of [`super::live::PLAN_CHUNK`] in manifest order.
fn batches<'s>(
    session: Option<&'s Session>,
    manifests: Vec<Manifest>,
    settled: Vec<Settled>,
    mut unresolved: impl FnMut(usize, Manifest, ClusterError),
) -> Vec<Batch<'s>> {
    let mut groups: BTreeMap<_, _> = BTreeMap::new();
    // Offline, the chunks are cut as the manifests go by (no second list
    // of every manifest).
    let mut chunks: Vec<Batch<'s>> = Vec::new();
    let mut given = Vec::with_capacity(PLAN_CHUNK);
    let mut listed: Vec<Option<Manifest>> = Vec::new();
    for (i, (m, s)) in manifests.into_iter().zip(settled).enumerate() {
        match s {
            Settled::Listed(info) => {
                add_to_group(&mut groups, &info, &m, i);
                listed.resize_with(i, || None);
                listed.push(Some(m));
            }
            Settled::Unresolved(e) => unresolved(i, m, e),
            Settled::Given(live, warning) => {
                given.push((i, m, live, warning));
                if given.len() == PLAN_CHUNK {
                    let full = std::mem::replace(&mut given, Vec::with_capacity(PLAN_CHUNK));
                    chunks.push(Batch::Given(full));
                }
            }
        }
    }
    if !given.is_empty() {
        chunks.push(Batch::Given(given));
    }
    let mut out: Vec<Batch<'s>> = Vec::new();
    if let Some(session) = session {
        out.extend(
            take_groups(groups, &mut listed)
                .into_iter()
                .map(|(info, ns, members)| Batch::List {
                    session,
                    info,
                    ns,
                    members,
                }),
        );
    }
    out.extend(chunks);
    out
}

/// A batch read and planned: its LIST (or its live objects at hand), each
/// member planned against its live object on the planning threads a chunk
/// at a time (so a large group keeps every core busy), each live object
/// moving into its plan and dropped there with the manifest. A fatal read
/// error ends the run; any other makes the group's members error rows.
async fn answer<T: Send + 'static>(
    batch: Batch<'_>,
    workers: &Workers,
    each: &Arc<impl Each<T>>,
) -> Result<Answer<T>, PlanError> {
    match batch {
        Batch::List {
            session,
            info,
            ns,
            members,
        } => {
            let names = members.iter().map(|(_, m)| m.id.name.clone()).collect();
            let found = session.fetch_group(&info, ns.as_deref(), names).await;
            let note = format!(
                "{} in {}",
                info.plural,
                ns.as_deref().unwrap_or("the cluster")
            );
            let mut by_name: LiveByName = match found {
                Err(e) if e.is_fatal() => return Err(e.into()),
                Err(e) => {
                    let rows = members
                        .into_iter()
                        .map(|(i, m)| (i, each(m, Err(e.clone()), None)))
                        .collect();
                    return Ok((Some(note), rows));
                }
                Ok(by_name) => by_name,
            };
            let members: Vec<Member> = members
                .into_iter()
                .map(|(i, m)| {
                    let live = by_name.remove(&m.id.name).unwrap_or(Ok(None));
                    (i, m, live, None)
                })
                .collect();
            // The rest of the LIST (objects no manifest names) goes now.
            drop(by_name);
            let jobs = chunk_jobs(workers, Some(Arc::new(info)), members.into_iter(), each);
            Ok((Some(note), joined(jobs).await?))
        }
        Batch::Given(members) => {
            let members = members
                .into_iter()
                .map(|(i, m, live, warning)| (i, m, Ok(live.map(LiveItem::Given)), warning));
            let jobs = chunk_jobs(workers, None, members, each);
            Ok((None, joined(jobs).await?))
        }
    }
}

/// A member of a batch: its index, manifest, live object as read (absent,
/// or why it could not be read) and a warning for its row.
type Member = (
    usize,
    Manifest,
    Result<Option<LiveItem>, ClusterError>,
    Option<String>,
);

/// The planning jobs of `members`, a chunk each (not started: the
/// planning threads take them as they are awaited). `info` fills in a
/// LIST item's apiVersion and kind.
fn chunk_jobs<T: Send + 'static>(
    workers: &Workers,
    info: Option<Arc<ResourceInfo>>,
    members: impl Iterator<Item = Member>,
    each: &Arc<impl Each<T>>,
) -> Vec<impl std::future::Future<Output = Result<Vec<(usize, T)>, WorkerFailed>>> {
    plan_chunks(members)
        .map(|chunk| {
            let each = Arc::clone(each);
            let info = info.clone();
            workers.run(move || {
                chunk
                    .into_iter()
                    .map(|(i, m, live, warning)| {
                        let live =
                            live.and_then(|l| l.map(|l| l.decode(info.as_deref())).transpose());
                        (i, each(m, live, warning))
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect()
}

/// What is made of a manifest and its live object (absent, or why it
/// could not be read), with the warning for its row, on the planning
/// threads: a finished plan row ([`plan_row`]), or what the server-side
/// reader makes ([`Session::read_each_with`]).
trait Each<T>:
    Fn(Manifest, Result<Option<Value>, ClusterError>, Option<String>) -> T + Send + Sync + 'static
{
}

impl<T, F> Each<T> for F where
    F: Fn(Manifest, Result<Option<Value>, ClusterError>, Option<String>) -> T
        + Send
        + Sync
        + 'static
{
}

/// The plan of `m` against its live object, `finish`ed: an error row
/// naming the object when it could not be read.
fn plan_row<T>(finish: Arc<impl Fn(ObjectPlan) -> T + Send + Sync + 'static>) -> impl Each<T> {
    let opts = PlanOptions::default();
    move |m: Manifest, live: Result<Option<Value>, ClusterError>, warning: Option<String>| {
        let mut plan = match live {
            Err(e) => error_plan(&m, format!("{}: {e}", m.id)),
            Ok(live) => plan_object_owned(&m, live, &opts),
        };
        plan.warnings.extend(warning);
        finish(plan)
    }
}

/// The rows of `jobs`, in their order.
async fn joined<T>(
    jobs: Vec<impl std::future::Future<Output = Result<Vec<(usize, T)>, WorkerFailed>>>,
) -> Result<Vec<(usize, T)>, WorkerFailed> {
    let mut rows = Vec::new();
    for chunk in futures::future::join_all(jobs).await {
        rows.extend(chunk?);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each error reads as the error it stands for did before the route
    /// had its own type, in anyhow's alternate form too (the CLI's `{:#}`:
    /// no cause said twice).
    #[test]
    fn plan_errors_read_as_the_errors_they_stand_for() {
        let unreachable = ClusterError::Unreachable {
            url: "https://127.0.0.1:6443".into(),
            message: "connection refused (nothing listens at that address)".into(),
        };
        let read = PlanError::from(unreachable.clone());
        assert!(matches!(
            read,
            PlanError::Read(ClusterError::Unreachable { .. })
        ));
        assert_eq!(read.to_string(), unreachable.to_string());
        assert_eq!(
            format!("{:#}", anyhow::Error::from(read)),
            unreachable.to_string()
        );
        let sel = crate::selector::LabelSelector::parse("a in (b").unwrap_err();
        assert_eq!(
            format!(
                "{:#}",
                anyhow::Error::from(PlanError::PruneSelector(sel.clone()))
            ),
            sel.to_string()
        );
        assert_eq!(
            PlanError::PruneWithoutScope.to_string(),
            "--prune needs -l SELECTOR or --all (or --applyset)"
        );
        assert_eq!(
            PlanError::from(WorkerFailed::Panicked).to_string(),
            "planning failed: a worker thread panicked"
        );
        assert_eq!(
            ClusterError::from(WorkerFailed::Stopped).to_string(),
            "planning failed: a worker thread stopped"
        );
    }
}
