//! `kapply apply --server-side`: kubectl's flags, requests, output words
//! and exit code (see `crate::cluster::ssa` for the requests).

use super::{Against, ApplyArgs, DryRun, PlanArgs, confirm, start};
use crate::cluster::{ServerSideOptions, ServerSideOutcome, ServerSideResult};
use anyhow::bail;

/// Prints one result as kubectl would (kapply's names for objects): the
/// migration warnings, then `serverside-applied` on stdout, or the error on
/// stderr. Whether it failed.
fn print(r: &ServerSideResult, dry_run: bool) -> bool {
    match &r.outcome {
        ServerSideOutcome::Applied { warnings } => {
            for w in warnings {
                errln!("{w}");
            }
            let suffix = if dry_run { " (server dry run)" } else { "" };
            outln!("{} serverside-applied{suffix}", r.object);
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

pub(super) async fn apply(a: ApplyArgs) -> anyhow::Result<u8> {
    // kubectl's own checks, in its words.
    if !a.server_side {
        if a.force_conflicts {
            bail!("--force-conflicts only works with --server-side");
        }
        bail!(
            "--field-manager is supported with --server-side only for now \
             (client-side apply writes as kubectl-client-side-apply)"
        );
    }
    if a.prune.prune {
        bail!("--prune with --server-side is not supported by kapply yet");
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
    let (loaded, against) = start(&plan_args).await?;
    let Against::Cluster { session, .. } = against else {
        bail!("apply needs a cluster");
    };
    for e in &loaded.errors {
        errln!("error: {e}");
    }
    if let Some(e) = loaded.unreadable_path() {
        errln!(
            "error: nothing was written: {e} (kubectl writes nothing when a path cannot be read; pass paths that exist)"
        );
        return Ok(1);
    }
    if loaded.manifests.is_empty() {
        errln!("error: no objects passed to apply");
        return Ok(1);
    }
    let load_errors = loaded.errors.len();
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
        // What the apply would do, from the server's dry run, before asking.
        let mut conflicts = 0;
        let mut failed = 0;
        session
            .apply_server_side(loaded.manifests.clone(), &opts, |r| {
                failed += usize::from(print(r, true));
                conflicts += usize::from(matches!(
                    r.outcome,
                    ServerSideOutcome::Failed { conflict: true, .. }
                ));
            })
            .await;
        let mut q = format!(
            "apply {} object(s) server-side as field manager {:?}",
            loaded.manifests.len(),
            opts.field_manager
        );
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
    let mut failed = 0;
    session
        .apply_server_side(loaded.manifests, &opts, |r| {
            failed += usize::from(print(r, dry_run));
        })
        .await;
    if dry_run {
        errln!("(server dry run: nothing was written)");
    }
    Ok(if failed + load_errors > 0 { 1 } else { 0 })
}
