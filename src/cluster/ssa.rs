//! `kubectl apply --server-side`, request for request: the apply patch
//! (`application/apply-patch+yaml`, the object as Go's JSON, `fieldManager`,
//! `fieldValidation=Strict`, `force`), then for an object last applied
//! client-side the steps kubectl adds (the last-applied annotation handed to
//! `kubectl-last-applied`, the managedFields migration as a JSON patch, the
//! apply again), each failure of those a warning as kubectl prints it. What
//! to send is computed in the core (`crate::ssa`).

use super::{ClusterError, ResourceInfo, Session, go_body};
use crate::manifest::Manifest;
use crate::objref::ObjectRef;
use crate::ssa::{CONFLICT_HELP, MigrationStep, keep_last_applied_patch, migration_patch};
use futures::StreamExt;
use http::Method;
use std::sync::Mutex;

/// What `apply --server-side --prune --applyset` reads before anything is
/// sent: the set (its parent as it is, the kinds and namespaces of this
/// apply), the objects to prune and why pruning is skipped, if it is.
#[derive(Debug, Clone)]
pub struct ServerSidePrune {
    pub set: super::ApplySet,
    pub candidates: Vec<crate::plan::ObjectPlan>,
    pub blocked: Option<crate::plan::PruneBlock>,
}

/// How to apply: kubectl's `--field-manager`, `--force-conflicts` and
/// `--dry-run=server`, and where objects without a namespace go.
#[derive(Debug, Clone)]
pub struct ServerSideOptions {
    pub field_manager: String,
    pub force: bool,
    pub dry_run: bool,
    /// The namespace of a namespaced object that names none: `-n`, else
    /// the context's.
    pub default_namespace: String,
    /// `-n`, when given: a namespaced object naming another is refused.
    pub namespace_flag: Option<String>,
}

/// What became of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerSideOutcome {
    /// Applied (`serverside-applied`); the warnings of the migration
    /// steps that failed (non-fatal, as in kubectl).
    Applied { warnings: Vec<String> },
    /// The server refused the apply: its message (with kubectl's help
    /// under a conflict).
    Failed { message: String, conflict: bool },
    /// Not sent: an earlier request could not reach the server.
    NotSent(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSideResult {
    pub object: ObjectRef,
    pub outcome: ServerSideOutcome,
}

/// How many times kubectl sends the migration patch again when the object
/// changed in between (409 on the resourceVersion it carries).
const MIGRATION_TRIES: usize = 5;

fn message(e: &ClusterError) -> String {
    match e {
        ClusterError::Api { message, .. } => message.clone(),
        e => e.to_string(),
    }
}

/// kubectl's error for a refused apply.
fn apply_error(e: &ClusterError) -> ServerSideOutcome {
    let conflict = e.code() == 409;
    let message = match e.code() {
        409 => format!("{}\n{CONFLICT_HELP}", message(e)),
        415 => format!(
            "Server-side apply not available on the server: ({})",
            message(e)
        ),
        _ => message(e),
    };
    ServerSideOutcome::Failed { message, conflict }
}

/// Applied before the others, one at a time, in manifest order: what the
/// others need to exist (their namespace, their kind).
fn goes_first(item: &Manifest) -> bool {
    matches!(
        (item.id.group.as_str(), item.id.kind.as_str()),
        ("", "Namespace") | ("apiextensions.k8s.io", "CustomResourceDefinition")
    )
}

impl Session {
    /// The cluster's CustomResourceDefinitions (one LIST), for planning
    /// custom resources server-side with their schemas.
    pub async fn custom_resource_definitions(
        &self,
    ) -> Result<Vec<serde_json::Value>, ClusterError> {
        let list = self
            .call(
                Method::GET,
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                &[],
                None,
                None,
            )
            .await?;
        Ok(match list {
            serde_json::Value::Object(mut m) => match m.remove("items") {
                Some(serde_json::Value::Array(items)) => items,
                _ => Vec::new(),
            },
            _ => Vec::new(),
        })
    }

    /// For `apply --server-side` with `--prune --applyset`: the set and its
    /// prune candidates found exactly as the client-side apply finds them
    /// (kubectl prunes an ApplySet the same way in both modes), and each of
    /// `loaded`'s manifests labelled a member, as kubectl labels them in the
    /// applied configuration. `None` without an ApplySet.
    pub async fn server_side_prune(
        &self,
        loaded: &mut crate::manifest::Loaded,
        prune: &super::PruneOptions,
    ) -> Result<Option<ServerSidePrune>, super::PlanError> {
        if !matches!(prune.mode, super::PruneMode::ApplySet { .. }) {
            return Ok(None);
        }
        let mut candidates = Vec::new();
        // Only the prune rows are kept; the client-side rows go at once.
        let planned = self
            .source(prune, None)
            .plan_each(
                loaded.clone(),
                false,
                |p| (p.action == crate::plan::ObjectAction::Prune).then_some(p),
                |p| candidates.extend(p),
            )
            .await?;
        let Some(set) = planned.applyset else {
            return Ok(None);
        };
        for m in &mut loaded.manifests {
            m.update_object(|o| super::live::set_label(o, super::applyset::PART_OF_LABEL, &set.id));
        }
        Ok(Some(ServerSidePrune {
            set,
            candidates,
            blocked: planned.plan.prune_skipped,
        }))
    }

    /// Apply `items` server-side, as `kubectl apply --server-side` does
    /// each; the results in the order of `items`, each handed to `report`
    /// as soon as it and those before it are known. Namespaces and
    /// CustomResourceDefinitions go first (kubectl goes in file order,
    /// one object at a time, so an object before its namespace fails
    /// there); after an error that means the server cannot be reached,
    /// the objects not yet sent are not sent.
    pub async fn apply_server_side(
        &self,
        items: Vec<Manifest>,
        opts: &ServerSideOptions,
        mut report: impl FnMut(&ServerSideResult),
    ) -> Vec<ServerSideResult> {
        let halt: Mutex<Option<String>> = Mutex::new(None);
        // The groups whose CRD this apply creates: their kinds may take a
        // moment to be served.
        let crd_groups: Vec<String> = items
            .iter()
            .filter(|m| m.id.kind == "CustomResourceDefinition")
            .filter_map(|m| m.object()["spec"]["group"].as_str().map(str::to_string))
            .collect();
        let crd_groups = &crd_groups;
        let (first, rest): (Vec<_>, Vec<_>) = items
            .into_iter()
            .enumerate()
            .partition(|(_, i)| goes_first(i));
        let mut results: Vec<(usize, ServerSideResult)> = Vec::new();
        let mut crds = false;
        for (n, item) in first {
            crds |= item.id.kind == "CustomResourceDefinition";
            let r = self.apply_one(item, opts, &halt, crd_groups).await;
            results.push((n, r));
        }
        if crds {
            self.rediscover();
        }
        // The first ones' results wait for those before them in file order.
        let mut shown = 0;
        let mut pending: std::collections::BTreeMap<usize, ServerSideResult> =
            results.into_iter().collect();
        let mut flush = |pending: &mut std::collections::BTreeMap<usize, ServerSideResult>,
                         out: &mut Vec<ServerSideResult>| {
            while let Some(r) = pending.remove(&shown) {
                report(&r);
                out.push(r);
                shown += 1;
            }
        };
        let mut out = Vec::new();
        flush(&mut pending, &mut out);
        let halt = &halt;
        let mut answers = futures::stream::iter(rest.into_iter().map(|(n, item)| async move {
            (n, self.apply_one(item, opts, halt, crd_groups).await)
        }))
        .buffered(self.concurrency());
        while let Some((n, r)) = answers.next().await {
            pending.insert(n, r);
            flush(&mut pending, &mut out);
        }
        out
    }

    async fn apply_one(
        &self,
        mut item: Manifest,
        opts: &ServerSideOptions,
        halt: &Mutex<Option<String>>,
        crd_groups: &[String],
    ) -> ServerSideResult {
        let object = item.id.clone();
        let stopped = halt.lock().ok().and_then(|h| h.clone());
        if let Some(why) = stopped {
            return ServerSideResult {
                object,
                outcome: ServerSideOutcome::NotSent(why),
            };
        }
        let info = match self
            .resource_waiting(&item.api_version(), &item.id.kind, crd_groups)
            .await
        {
            Ok(info) => info,
            Err(e) => return self.failed(object, e, halt),
        };
        // The kind's scope from the server: a cluster-scoped object loses
        // the namespace the load gave it, as kubectl sends it.
        item.set_scope(info.namespaced, &opts.default_namespace);
        if info.namespaced
            && let Some(e) = item.namespace_mismatch(opts.namespace_flag.as_deref())
        {
            return ServerSideResult {
                object,
                outcome: ServerSideOutcome::Failed {
                    message: e.to_string(),
                    conflict: false,
                },
            };
        }
        match self.apply_steps(&item, &info, opts).await {
            Ok(outcome) => ServerSideResult {
                object: item.id.clone(),
                outcome,
            },
            Err(e) => self.failed(item.id.clone(), e, halt),
        }
    }

    /// The result of an object whose apply failed with `e`; an error that
    /// means the server cannot be reached stops the objects not yet sent.
    fn failed(
        &self,
        object: ObjectRef,
        e: ClusterError,
        halt: &Mutex<Option<String>>,
    ) -> ServerSideResult {
        if e.is_fatal()
            && let Ok(mut h) = halt.lock()
        {
            h.get_or_insert_with(|| format!("not sent, an earlier request failed: {}", e.cause()));
        }
        let outcome = if e.fate_unknown() {
            ServerSideOutcome::Failed {
                message: e.unknown_outcome(),
                conflict: false,
            }
        } else {
            apply_error(&e)
        };
        ServerSideResult { object, outcome }
    }

    /// The apply and kubectl's migration steps; `Err` only when the apply
    /// itself failed.
    async fn apply_steps(
        &self,
        item: &Manifest,
        info: &ResourceInfo,
        opts: &ServerSideOptions,
    ) -> Result<ServerSideOutcome, ClusterError> {
        let ns = if info.namespaced {
            item.id.namespace.as_deref()
        } else {
            None
        };
        let path = info.object_path(ns, &item.id.name);
        let body = go_body(&item.object());
        let force = if opts.force { "true" } else { "false" };
        // In the order Go's url.Values encodes them (sorted), as kubectl sends.
        let mut apply_query = vec![];
        let mut query = vec![];
        if opts.dry_run {
            apply_query.push(("dryRun", "All"));
            query.push(("dryRun", "All"));
        }
        apply_query.extend([
            ("fieldManager", opts.field_manager.as_str()),
            ("fieldValidation", "Strict"),
            ("force", force),
        ]);
        let apply = || {
            self.call_encoded(
                Method::PATCH,
                &path,
                &apply_query,
                Some("application/apply-patch+yaml"),
                Some(body.clone()),
                true,
            )
        };
        let mut live = apply().await?;
        let mut warnings = Vec::new();
        if let Some(patch) = keep_last_applied_patch(&live, &opts.field_manager) {
            let mut q = query.clone();
            q.extend([
                ("fieldManager", crate::ssa::LAST_APPLIED_MANAGER),
                ("fieldValidation", "Strict"),
            ]);
            match self
                .call(
                    Method::PATCH,
                    &path,
                    &q,
                    Some("application/apply-patch+yaml"),
                    Some(&patch),
                )
                .await
            {
                Ok(v) => live = v,
                Err(e) => {
                    warnings.push(MigrationStep::LastApplied.warning(&message(&e)));
                    return Ok(ServerSideOutcome::Applied { warnings });
                }
            }
        }
        query.extend([
            ("fieldManager", opts.field_manager.as_str()),
            ("fieldValidation", "Strict"),
        ]);
        let mut migrated = false;
        for tries in 0..MIGRATION_TRIES {
            let Some(patch) = migration_patch(&live, &opts.field_manager) else {
                break;
            };
            match self
                .call(
                    Method::PATCH,
                    &path,
                    &query,
                    Some("application/json-patch+json"),
                    Some(&patch),
                )
                .await
            {
                Ok(_) => {
                    migrated = true;
                    break;
                }
                // Changed since the answer: read it again and compute again;
                // the last conflict is the warning when every try met one.
                Err(e) if e.code() == 409 => {
                    let read = self.call(Method::GET, &path, &[], None, None).await;
                    match read {
                        Ok(v) if tries + 1 < MIGRATION_TRIES => live = v,
                        Ok(_) => warnings.push(MigrationStep::ManagedFields.warning(&message(&e))),
                        Err(e) => {
                            warnings.push(MigrationStep::ManagedFields.warning(&message(&e)));
                            break;
                        }
                    }
                }
                Err(e) => {
                    warnings.push(MigrationStep::ManagedFields.warning(&message(&e)));
                    break;
                }
            }
        }
        if migrated && let Err(e) = apply().await {
            warnings.push(MigrationStep::Reapply.warning(&message(&e)));
        }
        Ok(ServerSideOutcome::Applied { warnings })
    }
}

/// The manifest of a plan's row with `config` as its object (what the TUI
/// applies server-side: the configuration its decisions reduced).
pub(crate) fn manifest_of(plan: &crate::plan::ObjectPlan, config: serde_json::Value) -> Manifest {
    let (group, version) = crate::objref::split_api_version(&plan.api_version);
    let source = plan.source.as_deref().unwrap_or_default();
    let (file, line) = source.rsplit_once(':').unwrap_or((source, "0"));
    Manifest::new(
        ObjectRef {
            group: group.to_string(),
            kind: plan.kind.clone(),
            namespace: plan.namespace.clone(),
            name: plan.name.clone(),
        },
        version.to_string(),
        config,
        crate::manifest::Source {
            file: file.into(),
            line: line.parse().unwrap_or(0),
        },
    )
}

/// A server-side result as the TUI's results are: `serverside-applied`
/// (the migration's warnings are the CLI's), or the server's words.
pub(crate) fn object_result(r: ServerSideResult, dry_run: bool) -> crate::ops::ObjectResult {
    use crate::ops::{Failure, ObjectResult, Outcome};
    let outcome = match r.outcome {
        ServerSideOutcome::Applied { .. } => Outcome::ServerSideApplied,
        ServerSideOutcome::Failed { message, .. } => Outcome::Failed(Failure::Server(message)),
        ServerSideOutcome::NotSent(why) => Outcome::Skipped(why),
    };
    let mut out = ObjectResult::new(r.object, outcome);
    out.dry_run = dry_run && out.ok();
    out
}
