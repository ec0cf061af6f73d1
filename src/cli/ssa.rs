//! `kapply apply --server-side`: kubectl's flags, requests, output words
//! and exit code (see `crate::cluster::ssa` for the requests).

use super::{Against, ApplyArgs, DryRun, MigrateArgs, PlanArgs, confirm, start};
use crate::cluster::{
    PruneMode, ServerSideOptions, ServerSideOutcome, ServerSidePrune, ServerSideResult,
};
use anyhow::bail;
use std::ops::ControlFlow;

/// Prints one result as kubectl would (kapply's names for objects): the
/// migration warnings, then `serverside-applied` on stdout, or the error on
/// stderr. Whether it failed.
fn print(r: &ServerSideResult, dry_run: bool, verb: &str) -> bool {
    match &r.outcome {
        ServerSideOutcome::Applied { warnings } => {
            for w in warnings {
                errln!("{w}");
            }
            let suffix = if dry_run { " (server dry run)" } else { "" };
            outln!("{} {verb}{suffix}", r.object);
            false
        }
        ServerSideOutcome::Failed { message, .. } => {
            errln!("error: {}: {message}", r.object);
            true
        }
        ServerSideOutcome::NotSent(why) => {
            errln!("error: {}: {why}", r.object);
            true
        }
    }
}

/// The manifests and the cluster a server-side write (`verb`: apply,
/// migrate) goes to, each manifest error printed; `None` (exit 1) when
/// nothing may be written: a path could not be read, or no object was.
async fn read_for_writes(
    plan_args: &PlanArgs,
    verb: &str,
) -> anyhow::Result<
    Option<(
        crate::manifest::Loaded,
        std::sync::Arc<crate::cluster::Session>,
    )>,
> {
    let (loaded, against) = start(plan_args).await?;
    let Against::Cluster { session, .. } = against else {
        bail!("{verb} needs a cluster");
    };
    for e in &loaded.errors {
        errln!("error: {e}");
    }
    if let Some(e) = loaded.unreadable_path() {
        errln!("{}", super::nothing_written_unreadable(&e));
        return Ok(None);
    }
    if loaded.manifests.is_empty() {
        errln!("error: no objects passed to {verb}");
        return Ok(None);
    }
    Ok(Some((loaded, session)))
}

pub(super) async fn apply(a: ApplyArgs) -> anyhow::Result<u8> {
    // kubectl's own checks, in its words.
    if !a.server_side {
        bail!("--force-conflicts only works with --server-side");
    }
    let prune = a.prune.options()?;
    if matches!(prune.mode, PruneMode::Allowlist { .. }) {
        // kubectl's refusal, in its words and exit code: the allowlist
        // prune finds objects by the last-applied annotation, which
        // server-side apply does not write.
        errln!(
            "error: --prune is in alpha and doesn't currently work on objects created by server-side apply"
        );
        return Ok(1);
    }
    if a.plan_file.is_some() {
        bail!("--plan with --server-side is not supported yet: saved plans are client-side");
    }
    let dry_run = a.dry_run == DryRun::Server;
    let plan_args = PlanArgs {
        manifests: a.manifests.clone(),
        cluster: a.cluster.clone(),
        prune: a.prune.clone(),
        live: Vec::new(),
    };
    let Some((mut loaded, session)) = read_for_writes(&plan_args, "apply").await? else {
        return Ok(1);
    };
    let load_errors = loaded.errors.len();
    // With an ApplySet: the parent read, the members labelled, the prune
    // candidates found, all before anything is sent.
    let pruning = session.server_side_prune(&mut loaded, &prune).await?;
    if let Some(why) = pruning.as_ref().and_then(|p| p.blocked.as_ref()) {
        errln!("{why}");
    }
    let mut opts = ServerSideOptions {
        field_manager: a
            .field_manager
            .clone()
            .unwrap_or_else(|| crate::ssa::DEFAULT_FIELD_MANAGER.to_string()),
        force: a.force_conflicts,
        dry_run: true,
        default_namespace: session.namespace().to_string(),
        namespace_flag: a.cluster.namespace.clone(),
    };
    if !a.yes && !dry_run {
        // What the apply would do per field (computed here), then the
        // server's dry run of it, before asking.
        let manager = opts.field_manager.clone();
        let force = opts.force;
        let crds = crd_schemas(Some(&session), &loaded.manifests).await;
        let each = move |m: crate::manifest::Manifest,
                         live: Result<Option<serde_json::Value>, String>| {
            let live = live?;
            let rows =
                crate::ssa::plan_fields_in(&m.object(), live.as_ref(), &manager, force, &crds);
            let action = object_action(live.is_some(), &rows);
            let secret = m.id.group.is_empty() && m.id.kind == "Secret";
            Ok::<_, String>(object_lines(&m.id, action, &rows, &manager, secret).join("\n"))
        };
        session
            .read_each_with(loaded.manifests.clone(), each, |r| match r {
                Ok(lines) | Err(lines) => errln!("{lines}"),
            })
            .await?;
        let mut conflicts = 0;
        let mut failed = 0;
        session
            .apply_server_side(loaded.manifests.clone(), &opts, |r| {
                failed += usize::from(print(r, true, "serverside-applied"));
                conflicts += usize::from(matches!(
                    r.outcome,
                    ServerSideOutcome::Failed { conflict: true, .. }
                ));
            })
            .await;
        let candidates = pruning.as_ref().map_or(&[][..], |p| &p.candidates[..]);
        for p in candidates {
            errln!("{}", super::summary_line(p));
        }
        let mut q = format!(
            "apply {} object(s) server-side as field manager {:?}",
            loaded.manifests.len(),
            opts.field_manager
        );
        if !candidates.is_empty() {
            q.push_str(&format!(" and prune {}", candidates.len()));
        }
        if failed > 0 {
            q.push_str(&format!(
                " ({failed} refused by the dry run{})",
                if conflicts > 0 {
                    format!(", {conflicts} by conflicts")
                } else {
                    String::new()
                }
            ));
        }
        q.push('?');
        if !confirm(&q)? {
            errln!("cancelled: nothing was applied");
            return Ok(1);
        }
    }
    opts.dry_run = dry_run;
    // kubectl writes the ApplySet parent first, recording what it knew
    // and what this apply holds, so an interrupted run still prunes later.
    if let Some(p) = &pruning
        && !dry_run
    {
        let (kinds, namespaces) = p.set.union();
        if let Err(e) = session
            .write_applyset_parent(&p.set, &kinds, &namespaces)
            .await
        {
            errln!("error: ApplySet parent {}: {e}", p.set.reference());
            errln!("nothing was applied");
            return Ok(1);
        }
    }
    let mut failed = 0;
    session
        .apply_server_side(loaded.manifests, &opts, |r| {
            failed += usize::from(print(r, dry_run, "serverside-applied"));
        })
        .await;
    if let Some(p) = &pruning {
        match prune_after(&session, p, failed, dry_run).await? {
            ControlFlow::Continue(n) => failed += n,
            ControlFlow::Break(code) => return Ok(code),
        }
    }
    if dry_run {
        errln!("(server dry run: nothing was written)");
    }
    Ok(crate::ops::exit_code(failed + load_errors))
}

/// After the apply, as kubectl does: only after a clean apply and a
/// complete read, the candidates deleted (`pruned`) and the parent left
/// recording only this apply's kinds and namespaces. How many failed, or
/// the exit code of a signal that stopped it.
async fn prune_after(
    session: &crate::cluster::Session,
    p: &ServerSidePrune,
    failed: usize,
    dry_run: bool,
) -> anyhow::Result<ControlFlow<u8, usize>> {
    if failed > 0 {
        errln!("{}", crate::plan::PruneBlock::ApplyFailed { count: failed });
        return Ok(ControlFlow::Continue(0));
    }
    if p.blocked.is_some() {
        return Ok(ControlFlow::Continue(0));
    }
    let mut signals = crate::signals::Signals::new()?;
    let names = p.candidates.iter().map(|c| c.id()).collect();
    let mut printer = super::Printer::default();
    let ran = super::run_writes(names, &mut printer, &mut signals, |report| async move {
        session
            .prune_reporting(&p.candidates, Some(&p.set), dry_run, &report)
            .await
    })
    .await;
    match ran {
        super::Wrote::Signal(s) => return Ok(ControlFlow::Break(super::interrupted(&printer, s))),
        // The parent's result comes after the candidates'.
        super::Wrote::Done(results) => {
            for r in results.iter().skip(p.candidates.len()) {
                printer.print(r);
            }
        }
    }
    Ok(ControlFlow::Continue(printer.finish()))
}

/// `kapply migrate`: of the objects read, those last applied client-side
/// (an `Update` entry owns their last-applied annotation) are applied
/// server-side exactly as `kubectl apply --server-side` would apply them,
/// which migrates them (see `crate::cluster::ssa`); the others are left
/// alone and said so. Without `--yes`, each one's migration view and the
/// server's dry run first. Exit 1 when an object could not be read or
/// migrated, as apply's.
pub(super) async fn migrate(a: MigrateArgs) -> anyhow::Result<u8> {
    let dry_run = a.dry_run == DryRun::Server;
    let plan_args = PlanArgs {
        manifests: a.manifests.clone(),
        cluster: a.cluster.clone(),
        prune: Default::default(),
        live: Vec::new(),
    };
    let Some((loaded, session)) = read_for_writes(&plan_args, "migrate").await? else {
        return Ok(1);
    };
    let mut errors = loaded.errors.len();
    let opts = ServerSideOptions {
        field_manager: a
            .field_manager
            .clone()
            .unwrap_or_else(|| crate::ssa::DEFAULT_FIELD_MANAGER.to_string()),
        force: false,
        dry_run: true,
        default_namespace: session.namespace().to_string(),
        namespace_flag: a.cluster.namespace.clone(),
    };
    let mut moving = Vec::new();
    // Read as the diff reads (by LIST), in manifest order.
    let each = |m: crate::manifest::Manifest, live: Result<Option<serde_json::Value>, String>| {
        live.map(|live| (m, live))
    };
    session
        .read_each_with(loaded.manifests, each, |read| {
            let (m, live) = match read {
                Ok(read) => read,
                Err(e) => {
                    errln!("{e}");
                    errors += 1;
                    return;
                }
            };
            let Some(live) = live else {
                outln!("{} not found: nothing to migrate", m.id);
                return;
            };
            let from = crate::ssa::last_applied_owners(&live, "Update");
            if from.is_empty() {
                outln!("{} not last applied client-side: nothing to migrate", m.id);
                return;
            }
            moving.push((m, live, from));
        })
        .await?;
    if moving.is_empty() {
        return Ok(u8::from(errors > 0));
    }
    let to = opts.field_manager.clone();
    // Results come in the order of the items: the n-th names its managers.
    let verb = |from: &std::collections::BTreeSet<String>| {
        let from: Vec<&str> = from.iter().map(String::as_str).collect();
        format!("migrated ({} → {to})", from.join(", "))
    };
    if !a.yes && !dry_run {
        let ms: Vec<_> = moving.iter().map(|(m, _, _)| m.clone()).collect();
        let crds = crd_schemas(Some(&session), &ms).await;
        for (m, live, _) in &moving {
            let rows = crate::ssa::plan_fields_in(
                &m.object(),
                Some(live),
                &opts.field_manager,
                false,
                &crds,
            );
            let secret = m.id.group.is_empty() && m.id.kind == "Secret";
            let action = object_action(true, &rows);
            for line in object_lines(&m.id, action, &rows, &opts.field_manager, secret) {
                errln!("{line}");
            }
        }
        let mut failed = 0;
        let items = moving.iter().map(|(m, _, _)| m.clone()).collect();
        let mut n = 0;
        session
            .apply_server_side(items, &opts, |r| {
                failed += usize::from(print(r, true, &verb(&moving[n].2)));
                n += 1;
            })
            .await;
        let mut q = format!(
            "migrate {} object(s) to server-side apply as field manager {:?}",
            moving.len(),
            opts.field_manager
        );
        if failed > 0 {
            q.push_str(&format!(" ({failed} refused by the dry run)"));
        }
        q.push('?');
        if !confirm(&q)? {
            errln!("cancelled: nothing was migrated");
            return Ok(1);
        }
    }
    let opts = ServerSideOptions { dry_run, ..opts };
    let mut failed = 0;
    let items = moving.iter().map(|(m, _, _)| m.clone()).collect();
    let mut n = 0;
    session
        .apply_server_side(items, &opts, |r| {
            failed += usize::from(print(r, dry_run, &verb(&moving[n].2)));
            n += 1;
        })
        .await;
    if dry_run {
        errln!("(server dry run: nothing was written)");
    }
    Ok(u8::from(failed + errors > 0))
}

/// The CRD schemas custom resources are planned with: when a manifest is
/// of a kind that is not built in, the cluster's CRDs (one LIST; a refusal
/// is a warning, those kinds planned without them), then the CRDs among
/// the manifests (applied with them: theirs win).
async fn crd_schemas(
    session: Option<&crate::cluster::Session>,
    manifests: &[crate::manifest::Manifest],
) -> std::sync::Arc<crate::ssa::CrdSchemas> {
    let builtin = crate::patchmeta::PatchMeta::builtin();
    let custom = manifests
        .iter()
        .any(|m| !builtin.is_builtin(&m.api_version(), &m.id.kind));
    let mut schemas = crate::ssa::CrdSchemas::default();
    if !custom {
        return schemas.into();
    }
    if let Some(session) = session {
        match session.custom_resource_definitions().await {
            Ok(crds) => crds.iter().for_each(|c| schemas.add(c)),
            Err(e) => errln!(
                "warning: listing CustomResourceDefinitions: {e}; custom resources are planned without their schemas"
            ),
        }
    }
    for m in manifests
        .iter()
        .filter(|m| m.id.group == "apiextensions.k8s.io" && m.id.kind == "CustomResourceDefinition")
    {
        schemas.add(&m.object());
    }
    schemas.into()
}

/// `--server-side` and its flags for `diff` and `plan`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServerSideArgs {
    /// Show what a server-side apply would do per field: `set`, `remove`,
    /// `keep`, `conflict` (another manager owns it with another value),
    /// `take` (forced), with the managers before and after.
    #[arg(long = "server-side")]
    pub server_side: bool,
    /// With --server-side: as `apply --force-conflicts` (conflicts become `take`).
    #[arg(long = "force-conflicts")]
    pub force_conflicts: bool,
    /// With --server-side: the field manager (default `kubectl`).
    #[arg(long = "field-manager", value_name = "NAME")]
    pub field_manager: Option<String>,
}

impl ServerSideArgs {
    pub(super) fn active(&self) -> bool {
        self.server_side || self.force_conflicts || self.field_manager.is_some()
    }
}

/// A value as the diff shows it; Secret data masked.
fn shown(v: Option<&serde_json::Value>, secret: bool) -> String {
    match v {
        None => "(none)".into(),
        Some(_) if secret => "\"***\"".into(),
        Some(v) => v.to_string(),
    }
}

/// `diff --server-side` (`output` None) or `plan --server-side -o json|yaml`:
/// each object's live state read, its per-field plan computed locally.
/// Exit 0: nothing would change; 1: something would (a conflict too); 2: an
/// object could not be read or planned.
pub(super) async fn diff(
    p: &PlanArgs,
    s: &ServerSideArgs,
    output: Option<super::Output>,
) -> anyhow::Result<u8> {
    if !s.server_side {
        bail!("--force-conflicts and --field-manager only work with --server-side");
    }
    let manager = s
        .field_manager
        .clone()
        .unwrap_or_else(|| crate::ssa::DEFAULT_FIELD_MANAGER.to_string());
    let (loaded, mut against) = start(p).await?;
    let mut errors = loaded.errors.len();
    for e in &loaded.errors {
        errln!("error: {e}");
    }
    // Each object's rows, lines and JSON are made on the planning threads
    // as its group's LIST answers; here they are printed in manifest order.
    let mut changed = false;
    let mut objects = Vec::new();
    let force = s.force_conflicts;
    let text = output.is_none();
    let m_name = manager.clone();
    let session = match &against {
        Against::Cluster { session, .. } => Some(session.clone()),
        Against::Files { .. } => None,
    };
    let crds = crd_schemas(session.as_deref(), &loaded.manifests).await;
    let each = move |m: crate::manifest::Manifest,
                     live: Result<Option<serde_json::Value>, String>| {
        let live = live?;
        let rows = crate::ssa::plan_fields_in(&m.object(), live.as_ref(), &m_name, force, &crds);
        let action = object_action(live.is_some(), &rows);
        let secret = m.id.group.is_empty() && m.id.kind == "Secret";
        let lines = if text {
            object_lines(&m.id, action, &rows, &m_name, secret)
        } else {
            Vec::new()
        };
        let mut rows = serde_json::to_value(&rows).map_err(|e| format!("error: {}: {e}", m.id))?;
        if secret && let Some(rows) = rows.as_array_mut() {
            for r in rows {
                for k in ["live", "config"] {
                    if r.get(k).is_some() {
                        r[k] = serde_json::json!("***");
                    }
                }
            }
        }
        let object = serde_json::json!({
            "apiVersion": m.api_version(),
            "kind": m.id.kind,
            "namespace": m.id.namespace,
            "name": m.id.name,
            "action": action,
            "fields": rows,
        });
        Ok::<_, String>((action != "unchanged", lines, object))
    };
    let mut emit = |r: Result<(bool, Vec<String>, serde_json::Value), String>| match r {
        Ok((c, lines, object)) => {
            changed |= c;
            // One write per object (each write flushes).
            if !lines.is_empty() {
                outln!("{}", lines.join("\n"));
            }
            if !text {
                objects.push(object);
            }
        }
        Err(line) => {
            errln!("{line}");
            errors += 1;
        }
    };
    match &mut against {
        Against::Cluster { session, .. } => {
            session
                .read_each_with(loaded.manifests, each, &mut emit)
                .await?;
        }
        Against::Files {
            live, default_ns, ..
        } => {
            for m in loaded.manifests {
                let (m, live) = offline_live(live, m, default_ns);
                emit(each(m, Ok(live)));
            }
        }
    }
    if let Some(format) = output {
        let doc = serde_json::json!({
            "serverSide": {"fieldManager": manager, "force": s.force_conflicts},
            "objects": objects,
        });
        match format {
            super::Output::Json => outln!("{}", serde_json::to_string_pretty(&doc)?),
            super::Output::Yaml => outln!("{}", crate::yaml::to_yaml(&doc)),
        }
    }
    Ok(if errors > 0 {
        2
    } else if changed && output.is_none() {
        1
    } else {
        0
    })
}

/// `m` and its live object from the `--live` files (`None`: not among
/// them); a custom kind's scope from a CustomResourceDefinition among
/// them, else namespaced, as the client-side offline plan takes it.
fn offline_live(
    live: &mut crate::manifest::LiveObjects,
    mut m: crate::manifest::Manifest,
    default_ns: &str,
) -> (crate::manifest::Manifest, Option<serde_json::Value>) {
    if crate::manifest::is_namespaced(&m.api_version(), &m.id.kind).is_none()
        && let Some(&(_, _, namespaced)) = live
            .crd_scopes()
            .iter()
            .find(|(g, k, _)| *g == m.id.group && *k == m.id.kind)
    {
        m.set_scope(namespaced, default_ns);
    }
    let found = live
        .take(&m.id)
        .map(crate::manifest::LiveObject::into_value);
    (m, found)
}

fn object_action(exists: bool, rows: &[crate::ssa::FieldRow]) -> &'static str {
    match (exists, rows.is_empty()) {
        (false, _) => "create",
        (true, true) => "unchanged",
        (true, false) => "update",
    }
}

/// One object of the server-side diff: its header and a line per field.
fn object_lines(
    id: &crate::objref::ObjectRef,
    action: &str,
    rows: &[crate::ssa::FieldRow],
    manager: &str,
    secret: bool,
) -> Vec<String> {
    let mark = match action {
        "create" => "+",
        "update" => "~",
        _ => "=",
    };
    let names = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    let mut out = vec![format!(
        "{mark} {id}  {action} (server-side as {manager:?})"
    )];
    for r in rows {
        let action = serde_json::to_value(r.action).unwrap_or_default();
        out.push(format!(
            "  {:<8}  {}  {} → {}  owners: {} → {}",
            action.as_str().unwrap_or(""),
            r.path,
            shown(r.live.as_ref(), secret),
            shown(r.config.as_ref(), secret),
            names(&r.owners),
            names(&r.owners_after),
        ));
    }
    out
}
