//! Command-line interface: argument parsing and the non-interactive
//! commands. Context (file:line, object names) is added here, at the edge.

use clap::{Args, Parser, Subcommand, ValueEnum};

/// `println!` of text that may carry data from manifests or the server:
/// control characters are shown escaped ([`crate::text::escape_controls`]),
/// so none reaches the terminal.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(&format!("{}\n", $crate::text::escape_controls(&format!($($arg)*))))
    };
}

/// Writes `text` to stdout. A reader that went away (`kapply plan -o json
/// | head`) ends the run quietly with 141, what a shell reports for kubectl
/// killed by SIGPIPE there: Rust ignores SIGPIPE, so `print!` would panic.
/// `diff` and `plan` write nothing to the cluster, so a reader that went
/// away ends them as [`write_stdout`] does: quietly, 141.
fn quit_if_reader_left(e: &std::io::Error) {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(141);
    }
}

pub(crate) fn write_stdout(text: &str) {
    use std::io::Write as _;
    clear_progress();
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        quit_if_reader_left(&e);
        eprintln!("error: writing to stdout: {e}");
        std::process::exit(2);
    }
}

/// `eprintln!` with control characters escaped, as [`outln!`].
macro_rules! errln {
    ($($arg:tt)*) => {{
        $crate::cli::clear_progress();
        eprintln!("{}", $crate::text::escape_controls(&format!($($arg)*)))
    }};
}

/// The progress line on stderr (drawn only on a terminal): whether it
/// shows, and whether it may (not once a question is asked). Every other
/// write clears it first, so it never sticks to an output line nor covers
/// the y/N prompt.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ProgressState {
    Hidden,
    Shown,
    Off,
}

static PROGRESS: std::sync::Mutex<ProgressState> = std::sync::Mutex::new(ProgressState::Hidden);

/// Clear the progress line if it shows.
pub(crate) fn clear_progress() {
    use std::io::Write as _;
    let Ok(mut state) = PROGRESS.lock() else {
        return;
    };
    if *state == ProgressState::Shown {
        eprint!("\r\x1b[2K");
        let _ = std::io::stderr().flush();
        *state = ProgressState::Hidden;
    }
}

/// Draw the progress line, unless a question was asked since.
fn show_progress(text: &str) {
    use std::io::Write as _;
    let Ok(mut state) = PROGRESS.lock() else {
        return;
    };
    if *state != ProgressState::Off {
        // One row: a line that wraps would leave its first rows behind.
        let cols = crossterm::terminal::size().map_or(80, |(w, _)| usize::from(w));
        let text: String = text.chars().take(cols.saturating_sub(1)).collect();
        eprint!("\r\x1b[2K{text}");
        let _ = std::io::stderr().flush();
        *state = ProgressState::Shown;
    }
}

/// No more progress: cleared for good (a question comes).
fn stop_progress() {
    clear_progress();
    if let Ok(mut state) = PROGRESS.lock() {
        *state = ProgressState::Off;
    }
}

use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "kapply",
    version,
    about = "See what kubectl apply will do, field by field, then apply, prune or delete by keystroke",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Open the TUI on these manifests (the default command).
    #[command(flatten)]
    pub tui: TuiArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Open the TUI on the manifests (same as running kapply without a command).
    Tui(TuiArgs),
    /// Print the per-field three-way diff. Exit 0: no changes, 1: changes, >1: error.
    Diff(DiffArgs),
    /// Print the plan as JSON or YAML.
    Plan(PlanCmd),
    /// Apply the manifests (asks for confirmation unless --yes).
    Apply(ApplyArgs),
    /// Delete the objects named by the manifests (asks unless --yes).
    Delete(DeleteArgs),
    /// Write live objects as clean manifests, to bring objects made with
    /// `kubectl create` under `kubectl apply` (or kapply) management.
    Export(ExportArgs),
    /// Hand fields over to another writer: take them out of the object's
    /// last-applied annotation (as `kubectl apply edit-last-applied` would by
    /// hand), so apply stops clearing them; their live values stay.
    Release(ReleaseArgs),
    /// Move objects last applied client-side to server-side apply, as
    /// `kubectl apply --server-side` moves them (asks unless --yes);
    /// objects not last applied client-side are left alone.
    Migrate(MigrateArgs),
    /// Run the embedded demo cluster and open the TUI on the demo manifests.
    Demo(DemoArgs),
    /// Print a shell completion script (e.g. `source <(kapply completion bash)`).
    Completion(CompletionArgs),
}

#[derive(Debug, Clone, Args)]
pub struct CompletionArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Clone, Args, Default)]
pub struct ClusterArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// Namespace for namespaced objects without one (default: the context's, else "default").
    #[arg(short = 'n', long, global = true)]
    pub namespace: Option<String>,
    /// How long to wait for each request to the server: seconds (`30`) or
    /// a duration (`500ms`, `30s`, `1m`); `0` waits for ever. Default:
    /// reads 30s, writes 60s. Connecting always gives up after at most 10s.
    /// A write with no answer in time is reported as unknown.
    #[arg(long, global = true, value_name = "DURATION", value_parser = crate::cluster::parse_request_timeout)]
    pub request_timeout: Option<std::time::Duration>,
    /// How many requests to the server are in flight at once (reads, dry
    /// runs, writes, deletes). Default 64: enough to keep a distant server
    /// busy; a 429 (Too Many Requests) is waited out as the server says.
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub concurrency: Option<u16>,
    /// The largest answer read from the server, in bytes (a LIST page, a
    /// GET): a larger one ends that request with an error naming it
    /// instead of filling memory. Default 1073741824 (1 GiB).
    #[arg(long, global = true, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_response_bytes: Option<u64>,
}

#[derive(Debug, Clone, Args, Default)]
pub struct ManifestArgs {
    /// Manifest files, directories or http(s) URLs (repeatable; `-` is stdin).
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub files: Vec<PathBuf>,
    /// A kustomization directory, built with `kubectl kustomize` (else
    /// `kustomize build`), as `kubectl apply -k`.
    #[arg(
        short = 'k',
        long = "kustomize",
        value_name = "DIR",
        conflicts_with = "files"
    )]
    pub kustomize: Option<PathBuf>,
    /// Process directories recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
}

#[derive(Debug, Clone, Args, Default)]
pub struct PruneArgs {
    /// Delete previously applied objects that are no longer in the manifests.
    #[arg(long)]
    pub prune: bool,
    /// Label selector: with --prune, limits pruning (allowlist mode); without, filters the manifests.
    #[arg(short = 'l', long)]
    pub selector: Option<String>,
    /// With --prune: consider all previously applied objects of the allowlisted kinds.
    #[arg(long)]
    pub all: bool,
    /// GVKs to consider for pruning, e.g. core/v1/ConfigMap (default: kubectl's list).
    #[arg(long = "prune-allowlist", value_name = "GVK")]
    pub prune_allowlist: Vec<String>,
    /// ApplySet parent: NAME (a Secret), configmaps/NAME or RESOURCE.GROUP/NAME.
    #[arg(long)]
    pub applyset: Option<String>,
    /// The ApplySet parent's tooling annotation (default `kapply/<version>`).
    /// kubectl refuses to touch a set whose tooling is not kubectl, so for a
    /// set shared with kubectl pass e.g. `kubectl/v1.32.5`. A parent that
    /// already names kubectl keeps its value.
    #[arg(long, value_name = "NAME/VERSION", requires = "applyset")]
    pub applyset_tooling: Option<String>,
}

#[derive(Debug, Clone, Args, Default)]
pub struct TuiArgs {
    #[command(flatten)]
    pub manifests: ManifestArgs,
    /// Manifest paths (same as -f).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub prune: PruneArgs,
    /// Colours for a light or dark terminal background; auto reads
    /// COLORFGBG, else dark.
    #[arg(long, value_name = "THEME", default_value = "auto", value_parser = ["light", "dark", "auto"])]
    pub theme: String,
    #[command(flatten)]
    pub ssa: ssa::ServerSideArgs,
}

#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub manifests: ManifestArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub prune: PruneArgs,
    /// Read live objects from these files (e.g. `kubectl get -o yaml` output)
    /// instead of a cluster.
    #[arg(long, value_name = "FILE")]
    pub live: Vec<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    pub plan: PlanArgs,
    /// On a terminal, also list the fields apply keeps (server defaults,
    /// other writers' fields). Piped output always lists them.
    #[arg(long)]
    pub show_kept: bool,
    /// `markdown`: a report for a pull request or a CI log (summary,
    /// object table, one collapsible block per object, Secrets masked).
    #[arg(short = 'o', long, value_enum, default_value_t = DiffOutput::Text)]
    pub output: DiffOutput,
    /// With `-o markdown`: the most bytes of one report part; a larger
    /// report is split into parts that each stand alone.
    #[arg(long, value_name = "N", default_value_t = crate::plan::report::DEFAULT_MAX_BYTES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new()
              .range(crate::plan::report::MIN_MAX_BYTES as u64..))]
    pub max_bytes: usize,
    /// With `-o markdown`: write the parts as DIR/report-1.md,
    /// report-2.md, ... instead of stdout.
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// `detailed`: exit 3 when changes revert drift and 4 when they carry
    /// hazards (the highest wins; an error is 2 as always).
    #[arg(long, value_enum, default_value_t = ExitCodes::Default)]
    pub exit_code: ExitCodes,
    #[command(flatten)]
    pub ssa: ssa::ServerSideArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum, Default, PartialEq, Eq)]
pub enum DiffOutput {
    /// Grouped per object on a terminal, one line per field when piped.
    #[default]
    Text,
    Markdown,
}

#[derive(Debug, Clone, Copy, ValueEnum, Default, PartialEq, Eq)]
pub enum ExitCodes {
    /// kubectl's: 0 no change, 1 changes, 2 error.
    #[default]
    Default,
    /// Also 3: changes revert drift; 4: hazards.
    Detailed,
}

#[derive(Debug, Clone, Copy, ValueEnum, Default)]
pub enum Output {
    #[default]
    Json,
    Yaml,
}

#[derive(Debug, Clone, Args)]
pub struct PlanCmd {
    #[command(flatten)]
    pub plan: PlanArgs,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Json)]
    pub output: Output,
    #[command(flatten)]
    pub ssa: ssa::ServerSideArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum DryRun {
    None,
    Server,
}

#[derive(Debug, Clone, Args)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub manifests: ManifestArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub prune: PruneArgs,
    /// `server`: send everything as a server-side dry run; nothing is written.
    #[arg(long, value_enum, default_value_t = DryRun::None, num_args = 0..=1, default_missing_value = "server")]
    pub dry_run: DryRun,
    /// Do not ask for confirmation.
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Apply only what this plan lists (a `kapply plan -o json` output,
    /// possibly edited): objects missing from it are skipped, and of the
    /// others only the field changes it lists are applied (partial apply:
    /// the rest stays pending). The plan is recomputed against live state
    /// first; the file only selects.
    #[arg(long = "plan", value_name = "FILE")]
    pub plan_file: Option<PathBuf>,
    /// Apply on the server (server-side apply), as `kubectl apply
    /// --server-side`: the server merges and tracks each field's manager;
    /// a field another manager owns with another value is a conflict.
    #[arg(long)]
    pub server_side: bool,
    /// With --server-side: take the conflicting fields from their managers.
    #[arg(long)]
    pub force_conflicts: bool,
    /// The field manager: of a server-side apply (default `kubectl`), or
    /// of a client-side apply's writes (default
    /// `kubectl-client-side-apply`), as kubectl's.
    #[arg(long, value_name = "NAME")]
    pub field_manager: Option<String>,
    /// As `kubectl apply --force`: an object the server refuses to patch
    /// as invalid (an immutable field) is deleted and created again from
    /// its manifest (downtime until it is back). The delete carries the
    /// reviewed uid as its precondition.
    #[arg(long)]
    pub force: bool,
    /// With --force: the delete's grace period in seconds (-1: the
    /// object's own).
    #[arg(long, value_name = "SECONDS", default_value_t = -1, allow_negative_numbers = true)]
    pub grace_period: i64,
    /// With --force: how long to wait for the object to be gone before
    /// creating it again (0: 5 minutes; kapply bounds every wait).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = crate::cluster::parse_request_timeout)]
    pub timeout: std::time::Duration,
}

#[derive(Debug, Clone, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub manifests: ManifestArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// `server`: send everything as a server-side dry run; nothing is written.
    #[arg(long, value_enum, default_value_t = DryRun::None, num_args = 0..=1, default_missing_value = "server")]
    pub dry_run: DryRun,
    /// Do not ask for confirmation.
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// The server-side field manager the fields move to (default
    /// `kubectl`, as kubectl's; only kubectl's keeps the last-applied
    /// annotation).
    #[arg(long, value_name = "NAME")]
    pub field_manager: Option<String>,
}

/// `--cascade`'s words, kubectl's, parsed here so that the core's
/// [`Propagation`] knows nothing of the command line.
fn cascade_parser() -> impl clap::builder::TypedValueParser<Value = Propagation> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(["background", "foreground", "orphan"]).map(
        |s| match s.as_str() {
            "foreground" => Propagation::Foreground,
            "orphan" => Propagation::Orphan,
            _ => Propagation::Background,
        },
    )
}

#[derive(Debug, Clone, Args)]
pub struct DeleteArgs {
    #[command(flatten)]
    pub manifests: ManifestArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Deletion propagation policy.
    #[arg(long, default_value = "background", value_parser = cascade_parser())]
    pub cascade: Propagation,
    /// Do not ask for confirmation.
    #[arg(short = 'y', long)]
    pub yes: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// Objects as KIND/NAME (kubectl's names: `deploy/web`, `cm/cfg`,
    /// `widgets.demo.kapply.dev/w`).
    #[arg(required = true, value_name = "KIND/NAME")]
    pub objects: Vec<String>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Write each object to DIR/kind-name.yaml instead of printing it.
    /// Secret values are written in clear only to files; stdout masks them.
    #[arg(short = 'o', long = "output-dir", value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// With -o: replace files that exist already (without it, an existing
    /// file is left alone and the object is reported not exported).
    #[arg(long, requires = "output_dir")]
    pub force: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ReleaseArgs {
    /// The object as KIND/NAME (`deploy/web`, `cm/cfg`, `widgets.demo.kapply.dev/w`).
    #[arg(value_name = "KIND/NAME")]
    pub object: String,
    /// Field paths as `kapply plan` and the TUI write them: `spec.replicas`,
    /// `metadata.labels.team`, `spec.template.spec.containers[name=nginx].image`,
    /// `metadata.annotations["example.com/x"]`. Each must be in the
    /// last-applied annotation.
    #[arg(required = true, value_name = "FIELD-PATH")]
    pub fields: Vec<String>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// `server`: send the change as a server-side dry run; nothing is written.
    #[arg(long, value_enum, default_value_t = DryRun::None, num_args = 0..=1, default_missing_value = "server")]
    pub dry_run: DryRun,
    /// Do not ask for confirmation.
    #[arg(short = 'y', long)]
    pub yes: bool,
}

#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Only serve the embedded cluster (until Ctrl-C); no TUI.
    #[arg(long)]
    pub no_tui: bool,
    /// Write a kubeconfig for the embedded cluster here, so kubectl can use it.
    /// An existing file is overwritten only if kapply demo wrote it.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig_out: Option<PathBuf>,
    /// Overwrite an existing --kubeconfig-out file even if kapply demo did not write it.
    #[arg(long, requires = "kubeconfig_out")]
    pub force: bool,
    /// Port to listen on (default: a free one).
    #[arg(long)]
    pub port: Option<u16>,
    /// Colours for a light or dark terminal background; auto reads
    /// COLORFGBG, else dark.
    #[arg(long, value_name = "THEME", default_value = "auto", value_parser = ["light", "dark", "auto"])]
    pub theme: String,
    #[command(flatten)]
    pub ssa: ssa::ServerSideArgs,
}

// ---------------------------------------------------------------------------
// Commands

use crate::cluster::{
    ApplyOptions, ClusterOptions, DeleteOptions, KubeEngine, LabelSelector, PruneMode,
    PruneOptions, Session,
};
use crate::fieldpath::FieldPath;
use crate::inputs::Inputs;
use crate::manifest::{self, LoadOptions, Loaded};
use crate::objref::ObjectRef;
use crate::ops::{ApplyItem, ObjectResult, Progress, Propagation};
use crate::plan::{self, ObjectAction, ObjectPlan, Plan};
use anyhow::{Context, bail};
use std::io::{IsTerminal, Write};
use std::sync::Arc;

mod ssa;

/// Why nothing was written when a path could not be read: the one wording
/// of client-side and server-side apply.
fn nothing_written_unreadable(e: &impl std::fmt::Display) -> String {
    format!(
        "error: nothing was written: {e} (kubectl writes nothing when a path cannot be read; pass paths that exist)"
    )
}

fn color_enabled(stream_is_tty: bool) -> bool {
    stream_is_tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

impl ClusterArgs {
    fn options(&self) -> ClusterOptions {
        ClusterOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            namespace: self.namespace.clone(),
            timeouts: crate::cluster::Timeouts::from_request_timeout(self.request_timeout),
            concurrency: self.concurrency.map_or(0, usize::from),
            max_response_bytes: self.max_response_bytes.unwrap_or(0),
        }
    }
}

impl PruneArgs {
    /// Validate the flag combination as kubectl does.
    fn options(&self) -> anyhow::Result<PruneOptions> {
        // Refused as kubectl refuses it, before anything is read or sent.
        if let Some(sel) = &self.selector {
            LabelSelector::parse(sel).map_err(|e| anyhow::anyhow!("-l: {e}"))?;
        }
        if let Some(parent) = &self.applyset {
            if !self.prune {
                bail!("--applyset requires --prune");
            }
            if self.selector.is_some() || self.all || !self.prune_allowlist.is_empty() {
                bail!("--applyset cannot be combined with -l, --all or --prune-allowlist");
            }
            return Ok(PruneOptions {
                mode: PruneMode::ApplySet {
                    parent: parent.clone(),
                    tooling: self.applyset_tooling.clone(),
                },
            });
        }
        if !self.prune {
            if self.all || !self.prune_allowlist.is_empty() {
                bail!("--all and --prune-allowlist need --prune");
            }
            return Ok(PruneOptions::default());
        }
        if self.selector.is_none() && !self.all {
            bail!(
                "--prune needs -l SELECTOR or --all (or --applyset NAME): \
                 refusing to guess which objects may be deleted"
            );
        }
        if self.selector.is_some() && self.all {
            bail!("--all and -l cannot be used together");
        }
        Ok(PruneOptions {
            mode: PruneMode::Allowlist {
                selector: self.selector.clone(),
                all: self.all,
                allowlist: self.prune_allowlist.clone(),
            },
        })
    }
}

fn load_options(m: &ManifestArgs, extra: &[PathBuf], c: &ClusterArgs) -> anyhow::Result<Inputs> {
    let mut paths = m.files.clone();
    paths.extend(extra.iter().cloned());
    if m.kustomize.is_some() && !paths.is_empty() {
        bail!("only one of -f or -k can be specified");
    }
    if paths.is_empty() && m.kustomize.is_none() {
        bail!("no manifests given: pass -f PATH (a file, a directory or a URL) or -k DIR");
    }
    Ok(Inputs {
        load: LoadOptions {
            paths,
            recursive: m.recursive,
            namespace: c.namespace.clone(),
            default_namespace: String::new(),
        },
        kustomize: m.kustomize.clone(),
        url_timeout: crate::inputs::URL_TIMEOUT,
    })
}

/// Says on stderr which program builds `-k`, before anything else runs.
fn note_kustomize(inputs: &Inputs) -> anyhow::Result<()> {
    if let Some(dir) = &inputs.kustomize {
        let tool = crate::inputs::KustomizeTool::find()?;
        eprintln!("kustomize: running `{}`", tool.describe(dir));
    }
    Ok(())
}

/// `-l` without `--prune` filters the manifests, as in kubectl.
fn filter_by_selector(loaded: &mut Loaded, prune: &PruneArgs) -> anyhow::Result<()> {
    if let (Some(sel), false) = (&prune.selector, prune.prune) {
        let sel = LabelSelector::parse(sel).map_err(|e| anyhow::anyhow!("-l: {e}"))?;
        loaded.manifests.retain(|m| sel.matches(&m.object()));
    }
    Ok(())
}

/// Progress on stderr, on one rewritten line, only when it is a terminal.
fn progress_line() -> Option<tokio::sync::mpsc::UnboundedSender<Progress>> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Progress>();
    tokio::spawn(async move {
        while let Some(p) = rx.recv().await {
            show_progress(&format!(
                "reading live state: {}/{} {}",
                p.done,
                p.total,
                crate::text::escape_controls(&p.what)
            ));
        }
        clear_progress();
    });
    Some(tx)
}

async fn connect(c: &ClusterArgs) -> anyhow::Result<Arc<Session>> {
    Ok(Session::connect(&c.options()).await?)
}

/// A plan's rows (each as the command keeps it) and what they were made from.
struct Made<R = ObjectPlan> {
    rows: Vec<R>,
    /// What the plan left besides its rows.
    ran: Ran,
}

/// A row as a command keeps it: the object's plan, with what goes along.
trait Row {
    fn plan(&self) -> &ObjectPlan;
}

impl Row for ObjectPlan {
    fn plan(&self) -> &ObjectPlan {
        self
    }
}

/// An apply row: a create travels with its body, encoded when planned.
impl Row for (ObjectPlan, Option<bytes::Bytes>) {
    fn plan(&self) -> &ObjectPlan {
        &self.0
    }
}

impl<R: Row> Made<R> {
    /// kubectl writes nothing when a named path cannot be read, nor when
    /// no object was read: say so and give the exit code (1), or `None` to
    /// go on. `verb`: `apply`, `delete`.
    fn refuse_writes(&self, verb: &str) -> Option<u8> {
        if let Some(e) = &self.ran.unreadable_path {
            for p in self.rows.iter().filter_map(|r| r.plan().error.as_ref()) {
                errln!("error: {p}");
            }
            errln!("{}", nothing_written_unreadable(e));
            return Some(1);
        }
        if self.rows.is_empty() {
            errln!("error: no objects passed to {verb}");
            return Some(1);
        }
        None
    }
}

/// Plan against the cluster (or offline against `--live` files), each row
/// made what the command keeps of it by `keep` on the planning threads as
/// soon as it is planned (to drop what the command will not read: at
/// 10,000 objects the trees of every row are most of the memory).
async fn make_plan<R: Send + 'static>(
    a: &PlanArgs,
    keep: impl Fn(ObjectPlan) -> R + Send + Sync + 'static,
) -> anyhow::Result<Made<R>> {
    let mut rows = Vec::new();
    let ran = run_plan(a, true, keep, |r| rows.push(r)).await?;
    Ok(Made { rows, ran })
}

/// What a plan is made against.
enum Against {
    /// Live objects read from `--live` files; namespaced objects without a
    /// namespace are in `default_ns`.
    Files {
        live: manifest::LiveObjects,
        default_ns: String,
        /// `-n`, when given.
        flag: Option<String>,
    },
    Cluster {
        session: Arc<Session>,
        prune: PruneOptions,
    },
}

impl Against {
    /// The live source of the plan (progress on stderr against a cluster).
    fn source(&mut self) -> crate::cluster::LiveSource<'_> {
        match self {
            Against::Files {
                live,
                default_ns,
                flag,
            } => crate::cluster::LiveSource::Files {
                live,
                default_ns,
                flag: flag.as_deref(),
            },
            Against::Cluster { session, prune } => session.source(prune, progress_line()),
        }
    }
}

/// The start of every plan: the flags checked, the manifests loaded (and
/// filtered by `-l`) while the server is reached or the `--live` files
/// are read, each on its own thread.
async fn start(a: &PlanArgs) -> anyhow::Result<(Loaded, Against)> {
    let prune = a.prune.options()?;
    let mut opts = load_options(&a.manifests, &[], &a.cluster)?;
    note_kustomize(&opts)?;
    if !a.live.is_empty() {
        if prune.mode != PruneMode::None {
            bail!("--prune needs a cluster: it cannot be combined with --live");
        }
        opts.load.default_namespace = "default".into();
        let paths = a.live.clone();
        let live = tokio::task::spawn_blocking(move || manifest::read_live(&paths));
        let mut loaded = crate::inputs::load(&opts).await?;
        filter_by_selector(&mut loaded, &a.prune)?;
        let live = live
            .await
            .map_err(|e| anyhow::anyhow!("--live: {e}"))?
            .context("--live")?;
        let flag = opts.load.namespace;
        let default_ns = flag.clone().unwrap_or_else(|| "default".into());
        return Ok((
            loaded,
            Against::Files {
                live,
                default_ns,
                flag,
            },
        ));
    }
    // The kubeconfig alone names the default namespace: the manifests are
    // read while the server is reached.
    let target = crate::cluster::Target::resolve(&a.cluster.options()).await?;
    opts.load.default_namespace = target.namespace.clone();
    let (session, loaded) = tokio::join!(Session::open(&target), crate::inputs::load(&opts));
    let session = session?;
    let mut loaded = loaded?;
    filter_by_selector(&mut loaded, &a.prune)?;
    Ok((loaded, Against::Cluster { session, prune }))
}

/// What a plan leaves besides its objects.
struct Ran {
    /// Why pruning was skipped, if it was.
    prune_skipped: Option<plan::PruneBlock>,
    /// The session and the cluster's plan (`None` offline).
    cluster: Option<(Arc<Session>, crate::cluster::Planned)>,
    /// A path that could not be read at all: writes must not start.
    unreadable_path: Option<String>,
}

/// The plan of `diff`, `plan`, `apply` and `delete`: each object's plan
/// turned into what the command needs by `finish` on the planning threads
/// (without its config and live object unless `keep_objects`), then handed
/// to `emit` in plan order as soon as it and those before it are done.
async fn run_plan<T: Send + 'static>(
    a: &PlanArgs,
    keep_objects: bool,
    finish: impl Fn(ObjectPlan) -> T + Send + Sync + 'static,
    emit: impl FnMut(T) + Send,
) -> anyhow::Result<Ran> {
    let (loaded, mut against) = start(a).await?;
    let unreadable_path = loaded.unreadable_path().map(|e| e.to_string());
    let mut planned = against
        .source()
        .plan_each(loaded, keep_objects, finish, emit)
        .await?;
    for s in &planned.skipped {
        errln!("skipped: {s} (does not match -l; kubectl apply --prune -l skips it too)");
    }
    Ok(Ran {
        prune_skipped: planned.plan.prune_skipped.take(),
        cluster: match against {
            Against::Cluster { session, .. } => Some((session, planned)),
            Against::Files { .. } => None,
        },
        unreadable_path,
    })
}

/// What `diff` and `plan` write of one object, made on a planning thread.
struct Shown {
    action: ObjectAction,
    /// The object counted for the summary and the exit code.
    summary: plan::report::Summary,
    text: String,
}

impl Shown {
    fn new(p: &ObjectPlan, text: String) -> Shown {
        let mut summary = plan::report::Summary::default();
        summary.add(p);
        Shown {
            action: p.action,
            summary,
            text,
        }
    }
}

pub async fn diff(a: DiffArgs) -> anyhow::Result<u8> {
    if a.ssa.active() {
        return ssa::diff(&a.plan, &a.ssa, None).await;
    }
    // A person reads the grouped layout; scripts keep one line per field.
    let tty = std::io::stdout().is_terminal();
    if a.output_dir.is_some() && a.output != DiffOutput::Markdown {
        bail!("--output-dir writes the parts of `-o markdown`; add `-o markdown`");
    }
    let detailed = a.exit_code == ExitCodes::Detailed;
    if a.output == DiffOutput::Markdown || tty {
        return diff_whole(a, tty, detailed).await;
    }
    let mut out = Streamer::default();
    let end = stream_plan(
        &a.plan,
        move |p| {
            let mut text = String::new();
            plan::render_diff_object(&mut text, &p, false);
            Shown::new(&p, text)
        },
        |s| out.object(s),
    )
    .await?;
    out.require_objects()?;
    let mut text = String::new();
    plan::render_diff_end(&mut text, end.as_ref(), false);
    out.finish(&text)?;
    Ok(out.summary.exit_code(detailed))
}

/// `diff` on a terminal and `diff -o markdown`: the whole plan first, since
/// repeated changes are folded across objects and the report starts with
/// the counts.
async fn diff_whole(a: DiffArgs, tty: bool, detailed: bool) -> anyhow::Result<u8> {
    let mut objects = Vec::new();
    let end = match stream_plan(&a.plan, |p| p, |p| objects.push(p)).await {
        Ok(end) => end,
        // As the streamed layouts do: what was planned before a failure of
        // the whole run is shown, then the failure. A report is not: its
        // counts would say less than there is.
        Err(e) => {
            if a.output == DiffOutput::Text && !objects.is_empty() {
                let partial = plan::Plan {
                    objects,
                    prune_skipped: None,
                };
                write_stdout(&plan::render_diff_terminal(
                    &partial,
                    color_enabled(tty),
                    a.show_kept,
                ));
            }
            return Err(e);
        }
    };
    if objects.is_empty() {
        bail!("no objects passed to apply: the manifests hold no object");
    }
    let whole = plan::Plan {
        objects,
        prune_skipped: end,
    };
    let summary = plan::report::Summary::of(&whole.objects);
    match a.output {
        DiffOutput::Text => {
            let color = color_enabled(tty);
            write_stdout(&plan::render_diff_terminal(&whole, color, a.show_kept));
        }
        DiffOutput::Markdown => {
            let parts = plan::report::markdown(&whole, a.max_bytes);
            match &a.output_dir {
                Some(dir) => write_parts(dir, &parts)?,
                None => write_stdout(&plan::report::markdown_stdout(&parts)),
            }
        }
    }
    Ok(summary.exit_code(detailed))
}

/// The report's parts as DIR/report-1.md, report-2.md, ...; parts of an
/// earlier, longer report (`report-N.md` past these) are removed, so a job
/// that posts every `report-*.md` posts this report alone.
fn write_parts(dir: &std::path::Path, parts: &[String]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--output-dir {}: cannot create it", dir.display()))?;
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("--output-dir {}: cannot read it", dir.display()))?;
    for e in entries.flatten() {
        let name = e.file_name();
        let stale = name
            .to_str()
            .and_then(|n| n.strip_prefix("report-"))
            .and_then(|n| n.strip_suffix(".md"))
            .and_then(|n| n.parse::<usize>().ok())
            .is_some_and(|k| k > parts.len());
        if stale {
            std::fs::remove_file(e.path())
                .with_context(|| format!("removing the stale part {}", e.path().display()))?;
        }
    }
    for (k, part) in parts.iter().enumerate() {
        let path = dir.join(format!("report-{}.md", k + 1));
        std::fs::write(&path, part).with_context(|| format!("writing {}", path.display()))?;
        errln!("wrote {} ({} bytes)", path.display(), part.len());
    }
    Ok(())
}

pub async fn plan(a: PlanCmd) -> anyhow::Result<u8> {
    if a.ssa.active() {
        return ssa::diff(&a.plan, &a.ssa, Some(a.output)).await;
    }
    // Written object by object: the same text as plan::to_json and
    // yaml::to_yaml(plan::to_value) of the whole plan.
    let yaml = matches!(a.output, Output::Yaml);
    let mut out = Streamer {
        start: Some(if yaml { "objects:\n" } else { plan::JSON_START }),
        between: if yaml { "" } else { ",\n" },
        ..Streamer::default()
    };
    // The objects' config and live object are kept until `finish`, which
    // pins them (uid, resourceVersion, digests) and drops them.
    let ran = run_plan(
        &a.plan,
        true,
        move |p| {
            // Masked (a Secret) once, in `object_value` and `json_object`.
            let text = if yaml {
                let one = plan::object_value(&p)
                    .map(|v| serde_json::Value::Array(vec![v]))
                    .unwrap_or_default();
                // The YAML writer quotes and escapes control characters itself.
                crate::text::escaped(crate::yaml::to_yaml(&one), crate::text::escape_controls)
            } else {
                // serde_json leaves DEL and C1 raw in strings: written as \u00XX.
                crate::text::escaped(plan::json_object(&p), crate::text::escape_controls_json)
            };
            Shown::new(&p, text)
        },
        |s| out.object(s),
    )
    .await?;
    let end = ran.prune_skipped;
    let header = plan::plan_header(
        ran.cluster
            .as_ref()
            .map(|(s, _)| (plan_server(s.url()), s.context())),
    );
    out.require_objects()?;
    if let Some(why) = &end {
        errln!("{why}");
    }
    let tail = if yaml {
        // The plan's last keys, as `to_value` names them.
        let mut v = serde_json::Map::new();
        if let Some(why) = &end {
            v.insert("pruneSkipped".into(), why.to_string().into());
        }
        v.insert(plan::PLAN_HEADER.into(), header);
        crate::text::escape_controls(&crate::yaml::to_yaml(&serde_json::Value::Object(v)))
            .into_owned()
    } else {
        format!(
            "{}\n",
            crate::text::escape_controls_json(&plan::json_end(end.as_ref(), Some(&header)))
        )
    };
    out.finish(&tail)?;
    Ok(if out.errors { 2 } else { 0 })
}

/// `diff` and `plan` output written as each object is planned: what the
/// objects said so far (exit code), and the first write error.
#[derive(Default)]
struct Streamer {
    count: usize,
    errors: bool,
    /// The objects counted (`diff`'s exit code).
    summary: plan::report::Summary,
    /// What goes before the first object (the document's start) and
    /// between two objects.
    start: Option<&'static str>,
    between: &'static str,
    out: Option<std::io::BufWriter<std::io::Stdout>>,
    failed: Option<std::io::Error>,
}

impl Streamer {
    fn write(&mut self, text: &str) {
        let out = self
            .out
            .get_or_insert_with(|| std::io::BufWriter::with_capacity(1 << 16, std::io::stdout()));
        if self.failed.is_none()
            && let Err(e) = out.write_all(text.as_bytes())
        {
            quit_if_reader_left(&e);
            self.failed = Some(e);
        }
    }

    fn object(&mut self, shown: Shown) {
        self.count += 1;
        self.errors |= shown.action == ObjectAction::Error;
        self.summary.merge(&shown.summary);
        if self.count == 1 {
            if let Some(start) = self.start {
                self.write(start);
            }
        } else if !self.between.is_empty() {
            self.write(self.between);
        }
        self.write(&shown.text);
    }

    /// No object at all: an error (nothing was written).
    fn require_objects(&self) -> anyhow::Result<()> {
        if self.count == 0 {
            bail!("no objects passed to apply: the manifests hold no object");
        }
        Ok(())
    }

    fn finish(&mut self, tail: &str) -> anyhow::Result<()> {
        self.write(tail);
        if let Some(out) = &mut self.out
            && self.failed.is_none()
            && let Err(e) = out.flush()
        {
            quit_if_reader_left(&e);
            self.failed = Some(e);
        }
        match self.failed.take() {
            Some(e) => Err(anyhow::Error::new(e).context("writing the output")),
            None => Ok(()),
        }
    }
}

/// The server a saved plan records: the kubeconfig's URL, without the
/// embedded server's token path (a credential, not the cluster's name).
fn plan_server(url: &str) -> &str {
    url.find(crate::server::TOKEN_PATH)
        .map_or(url, |i| &url[..i])
}

/// The plan of `diff` and `plan`, each object's plan `finish`ed (without
/// its config and live object, which neither shows) and handed to `emit`
/// in plan order as soon as it is planned; returns why pruning was
/// skipped, if it was.
async fn stream_plan<T: Send + 'static>(
    a: &PlanArgs,
    finish: impl Fn(ObjectPlan) -> T + Send + Sync + 'static,
    emit: impl FnMut(T) + Send,
) -> anyhow::Result<Option<plan::PruneBlock>> {
    Ok(run_plan(a, false, finish, emit).await?.prune_skipped)
}

/// Ask y/N on the terminal; with no terminal, refuse.
fn confirm(question: &str) -> anyhow::Result<bool> {
    if !std::io::stdin().is_terminal() {
        bail!("refusing to proceed without confirmation: stdin is not a terminal (pass --yes)");
    }
    // The prompt is the last thing on the terminal: no progress over it.
    stop_progress();
    eprint!("{question} [y/N] ");
    std::io::stderr().flush().ok();
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes"))
}

/// Prints results one at a time, as they become known, and counts them.
#[derive(Default)]
struct Printer {
    failed: usize,
    unknown: usize,
    /// Updates the server refused as invalid (an immutable field).
    invalid: usize,
    written: usize,
    not_sent: usize,
}

impl Printer {
    /// Done on stdout, failed and unknown on stderr.
    fn print(&mut self, r: &ObjectResult) {
        if r.ok() {
            if !r.dry_run && !matches!(r.outcome, crate::ops::Outcome::Unchanged) {
                self.written += 1;
            }
            outln!("{} {}", r.object, r.message());
        } else if r.unknown() {
            self.unknown += 1;
            errln!("unknown: {}: {}", r.object, r.message());
        } else {
            if matches!(r.outcome, crate::ops::Outcome::Skipped(_)) {
                self.not_sent += 1;
            }
            if matches!(
                r.outcome,
                crate::ops::Outcome::Failed(crate::ops::Failure::Invalid(_))
            ) {
                self.invalid += 1;
            }
            self.failed += 1;
            errln!("error: {}: {}", r.object, r.message());
        }
    }

    /// The closing notes on unknown outcomes and on updates refused as
    /// invalid (the way forward); how many were not done.
    fn finish(&self) -> usize {
        if self.invalid > 0 {
            errln!(
                "{} update(s) refused as invalid (an immutable field): `kapply apply --force` \
                 deletes and creates them again, as kubectl apply --force does (they are gone \
                 meanwhile)",
                self.invalid
            );
        }
        if self.unknown > 0 {
            errln!(
                "{} object(s) with an unknown outcome: run `kapply diff` with the same \
                 arguments to see what the server holds",
                self.unknown
            );
        }
        self.failed + self.unknown
    }
}

/// The name of a caught signal, for messages.
fn signal_name(n: i32) -> &'static str {
    match n {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        15 => "SIGTERM",
        _ => "a signal",
    }
}

/// How long an interrupted run waits for the requests already sent.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// How a run of writes ended.
enum Wrote {
    /// Every result, in the order of the items.
    Done(Vec<ObjectResult>),
    /// Stopped by this signal; what was known is printed.
    Signal(i32),
}

/// Run writes (apply, delete, prune) over `names`, printing each result as
/// soon as it and those before it are known: the order of the items, as
/// kubectl prints in the order it writes. On SIGINT, SIGTERM, SIGHUP (or
/// SIGQUIT) nothing more is sent; the requests in flight are given
/// [`STOP_GRACE`] (a second signal ends the wait); then every result known
/// is printed, the objects never sent as not sent and those sent without
/// an answer as unknown, with a count of each.
async fn run_writes<F>(
    names: Vec<ObjectRef>,
    printer: &mut Printer,
    signals: &mut crate::signals::Signals,
    run: impl FnOnce(crate::cluster::Report) -> F,
) -> Wrote
where
    F: std::future::Future<Output = Vec<ObjectResult>>,
{
    use crate::ops::WriteEvent;
    let n = names.len();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let stop = crate::cluster::Stop::default();
    let work = run(crate::cluster::Report {
        events: Some(tx),
        stop: stop.clone(),
    });
    tokio::pin!(work);
    let mut known: Vec<Option<ObjectResult>> = vec![None; n];
    let mut sent = vec![false; n];
    let mut next = 0;
    let mut finished: Option<Vec<ObjectResult>> = None;
    let mut listening = true;
    let mut signal: Option<i32> = None;
    let grace = tokio::time::sleep(std::time::Duration::ZERO);
    tokio::pin!(grace);
    while finished.is_none() || listening {
        tokio::select! {
            biased;
            event = rx.recv(), if listening => match event {
                Some(WriteEvent::Sending(i)) if i < n => sent[i] = true,
                Some(WriteEvent::Done(i, r)) if i < n => {
                    known[i] = Some(r);
                    while let Some(Some(r)) = known.get(next) {
                        printer.print(r);
                        next += 1;
                    }
                }
                Some(_) => {}
                // The run is over (its sender dropped with it).
                None => listening = false,
            },
            results = &mut work, if finished.is_none() => finished = Some(results),
            s = signals.recv() => {
                if signal.is_some() {
                    break;
                }
                signal = Some(s);
                errln!(
                    "{}: sending nothing more; waiting up to {} s for the requests in flight",
                    signal_name(s),
                    STOP_GRACE.as_secs()
                );
                stop.stop(format!("interrupted by {}", signal_name(s)));
                grace.as_mut().reset(tokio::time::Instant::now() + STOP_GRACE);
            },
            () = &mut grace, if signal.is_some() => break,
        }
    }
    let Some(s) = signal else {
        return Wrote::Done(finished.unwrap_or_default());
    };
    let why = format!("interrupted by {}", signal_name(s));
    for i in next..n {
        match &known[i] {
            Some(r) => printer.print(r),
            None if sent[i] => printer.print(&ObjectResult::new(
                names[i].clone(),
                crate::ops::Outcome::Unknown(format!(
                    "{why} with no answer yet; the change may or may not have been made"
                )),
            )),
            None => printer.print(&ObjectResult::new(
                names[i].clone(),
                crate::ops::Outcome::Skipped(format!("not sent: {why}")),
            )),
        }
    }
    Wrote::Signal(s)
}

/// The closing lines of an interrupted run: what was written, not sent
/// and unknown; the exit code of the signal.
fn interrupted(printer: &Printer, s: i32) -> u8 {
    printer.finish();
    errln!(
        "interrupted by {}: {} written, {} not sent, {} unknown",
        signal_name(s),
        printer.written,
        printer.not_sent,
        printer.unknown
    );
    crate::signals::exit_code(s)
}

fn summary_line(p: &ObjectPlan) -> String {
    let mark = match p.action {
        ObjectAction::Create => "+ create",
        ObjectAction::Update => "~ update",
        ObjectAction::Unchanged => "= unchanged",
        ObjectAction::Prune => "- prune",
        ObjectAction::Error => "! error",
    };
    let extra = match (&p.error, &p.prune_reason) {
        (Some(e), _) => format!(": {e}"),
        (None, Some(r)) => format!(" ({r})"),
        _ if p.action == ObjectAction::Update => format!(
            " ({} field changes)",
            p.fields
                .iter()
                .filter(|f| f.action != crate::merge::FieldAction::Keep)
                .count()
        ),
        _ => String::new(),
    };
    format!("{mark:<12} {}{extra}", p.id())
}

/// Unchanged objects get a result line on stdout too (as kubectl prints
/// `unchanged`), so stdout accounts for every object of the run.
fn print_unchanged(plan: &Plan, dry_run: bool) {
    for p in plan
        .objects
        .iter()
        .filter(|p| p.action == ObjectAction::Unchanged)
    {
        let suffix = if dry_run { " (server dry run)" } else { "" };
        outln!("{} unchanged{suffix}", p.id());
    }
}

/// What a plan file selects: per object, the paths of its field changes.
/// Per object: the change paths the file lists, and those of them marked
/// `"action": "release"`.
/// Objects are matched by their [`ObjectRef`] (the version may differ
/// between the file and the fresh plan).
type Selection = std::collections::HashMap<ObjectRef, (Vec<FieldPath>, Vec<FieldPath>)>;

/// A saved plan as `apply --plan` reads it: what it selects, and what it
/// pinned of each object (its rows as reviewed, and its [`plan::pin::Pin`]).
struct SavedPlan {
    selection: Selection,
    reviewed: std::collections::HashMap<ObjectRef, (ObjectPlan, Option<plan::pin::Pin>)>,
    /// `savedPlan.cluster`: the server and context it was made against.
    cluster: Option<(String, String)>,
}

fn read_selection(path: &std::path::Path) -> anyhow::Result<SavedPlan> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("--plan {}", path.display()))?;
    let not_plan = || {
        format!(
            "--plan {}: not a kapply plan (kapply plan -o json)",
            path.display()
        )
    };
    let mut doc: serde_json::Value = serde_json::from_str(&text).with_context(not_plan)?;
    let header = doc
        .as_object_mut()
        .and_then(|d| d.remove(plan::PLAN_HEADER))
        .unwrap_or_default();
    match header.get("version").and_then(serde_json::Value::as_u64) {
        Some(plan::pin::PLAN_VERSION) => {}
        Some(v) => bail!(
            "--plan {}: a saved plan of format version {v}; this kapply reads version {} \
             (make the plan again with this kapply)",
            path.display(),
            plan::pin::PLAN_VERSION
        ),
        None => bail!(
            "--plan {}: the plan pins nothing of what was reviewed (no \"{}\": made by an \
             older kapply, or written by hand); make it again with `kapply plan -o json`",
            path.display(),
            plan::PLAN_HEADER
        ),
    }
    let cluster = header.get("cluster").map(|c| {
        let s = |k: &str| c.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
        (s("server"), s("context"))
    });
    // `"action": "release"` is the one edit a plan's field rows take
    // beyond removal: noted here, then read as the clear row it was (the
    // cluster layer refuses it on any other row).
    let mut released: Vec<Vec<FieldPath>> = Vec::new();
    let mut pins: Vec<Option<plan::pin::Pin>> = Vec::new();
    if let Some(objects) = doc
        .get_mut("objects")
        .and_then(serde_json::Value::as_array_mut)
    {
        for o in objects {
            let pin = o
                .as_object_mut()
                .and_then(|o| o.remove("pin"))
                .map(serde_json::from_value)
                .transpose()
                .with_context(not_plan)?;
            pins.push(pin);
            let mut paths = Vec::new();
            if let Some(fields) = o
                .get_mut("fields")
                .and_then(serde_json::Value::as_array_mut)
            {
                for f in fields {
                    if f.get("action").and_then(serde_json::Value::as_str) == Some("release") {
                        f["action"] = serde_json::Value::String("clear".into());
                        if let Some(p) = f.get("path").and_then(serde_json::Value::as_str) {
                            paths.push(FieldPath::from(p));
                        }
                    }
                }
            }
            released.push(paths);
        }
    }
    let plan: Plan = serde_json::from_value(doc).with_context(not_plan)?;
    let mut selection = Selection::new();
    let mut reviewed = std::collections::HashMap::new();
    for ((p, released), pin) in plan.objects.into_iter().zip(released).zip(pins) {
        let paths = p
            .fields
            .iter()
            .filter(|f| f.action != crate::merge::FieldAction::Keep)
            .map(|f| f.path.clone())
            .collect();
        selection.insert(p.id(), (paths, released));
        reviewed.insert(p.id(), (p, pin));
    }
    Ok(SavedPlan {
        selection,
        reviewed,
        cluster,
    })
}

/// Refuses a saved plan made against another cluster than `session`'s.
fn check_plan_cluster(
    saved: &SavedPlan,
    session: &Session,
    path: &std::path::Path,
) -> anyhow::Result<()> {
    let here = (plan_server(session.url()), session.context());
    match &saved.cluster {
        None => bail!(
            "--plan {}: the plan was made offline (--live files), not against a cluster; \
             nothing applied (make it again against the cluster)",
            path.display()
        ),
        Some((server, context)) if (server.as_str(), context.as_str()) != here => bail!(
            "--plan {}: the plan was made against the cluster at {server} (context \"{context}\"), \
             not {} (context \"{}\"); nothing applied",
            path.display(),
            here.0,
            here.1
        ),
        Some(_) => Ok(()),
    }
}

/// Why `fresh` (planned again now) is not the object the saved plan
/// reviewed, in words (Terraform's "saved plan is stale"); `None` when it
/// is the same: same live object (uid, resourceVersion), same config, same
/// change. The field paths whose values differ from the reviewed rows are
/// named (Secret values masked on both sides, so a Secret names none).
fn stale_reason(saved: &SavedPlan, fresh: &ObjectPlan) -> Option<String> {
    let (file_row, pin) = saved.reviewed.get(&fresh.id())?;
    let Some(pin) = pin else {
        return Some("the saved plan pins nothing of this object (not planned then)".into());
    };
    let now = plan::pin::pin_of(fresh).unwrap_or_default();
    let mut why = plan::pin::stale(pin, &now);
    if file_row.action != fresh.action {
        why.insert(
            0,
            format!(
                "it was to be {} and is now to be {}",
                action_word(file_row.action),
                action_word(fresh.action)
            ),
        );
    }
    if why.is_empty() {
        return None;
    }
    let shown = plan::mask_plan(fresh);
    let differ: Vec<&str> = file_row
        .fields
        .iter()
        .filter(|f| {
            shown.fields.iter().any(|g| {
                g.path == f.path
                    && (g.config != f.config
                        || g.live != f.live
                        || g.last_applied != f.last_applied)
            })
        })
        .map(|f| f.path.as_str())
        .collect();
    let mut text = format!("saved plan is stale: {}", why.join("; "));
    if !differ.is_empty() {
        text.push_str(&format!("; fields not as reviewed: {}", differ.join(", ")));
    }
    text.push_str("; nothing sent (make a new plan and review it)");
    Some(text)
}

fn action_word(a: ObjectAction) -> &'static str {
    match a {
        ObjectAction::Create => "created",
        ObjectAction::Update => "updated",
        ObjectAction::Unchanged => "left unchanged",
        ObjectAction::Prune => "pruned",
        ObjectAction::Error => "an error",
    }
}

/// The item to apply for `p` under a selection: skipped when the file does
/// not list the object or none of its changes; partial when it lists only some.
fn select_item(p: &ObjectPlan, sel: &Selection) -> Option<ApplyItem> {
    let (listed, released) = sel.get(&p.id())?;
    let changes: Vec<&FieldPath> = p
        .fields
        .iter()
        .filter(|f| f.action != crate::merge::FieldAction::Keep)
        .map(|f| &f.path)
        .collect();
    let accepted: Vec<FieldPath> = changes
        .iter()
        .filter(|c| listed.contains(c))
        .map(|&c| c.clone())
        .collect();
    if accepted.is_empty() && !changes.is_empty() {
        errln!(
            "skipped      {}: the plan file lists none of its changes",
            p.id()
        );
        return None;
    }
    // A release the fresh plan no longer has as a change is dropped with
    // it; one on a row that is not a clear is refused when applied.
    let released: Vec<FieldPath> = released
        .iter()
        .filter(|r| changes.contains(r))
        .cloned()
        .collect();
    let accepted: Vec<FieldPath> = accepted
        .into_iter()
        .filter(|a| !released.contains(a))
        .collect();
    let whole = accepted.len() + released.len() == changes.len();
    Some(ApplyItem {
        plan: p.clone(),
        accepted_fields: (!whole).then_some(accepted),
        released_fields: released,
    })
}

pub async fn migrate(a: MigrateArgs) -> anyhow::Result<u8> {
    ssa::migrate(a).await
}

pub async fn apply(a: ApplyArgs) -> anyhow::Result<u8> {
    if a.force && a.server_side {
        bail!("--force cannot be used with --server-side");
    }
    if a.server_side || a.force_conflicts {
        return ssa::apply(a).await;
    }
    let force = a
        .force
        .then(|| crate::cluster::Replace::from_flags(a.grace_period, a.timeout));
    let dry_run = a.dry_run == DryRun::Server;
    let plan_args = PlanArgs {
        manifests: a.manifests.clone(),
        cluster: a.cluster.clone(),
        prune: a.prune.clone(),
        live: Vec::new(),
    };
    // Without a plan file each row is cut down to what apply reads as soon
    // as it is planned (a create to its encoded body, which stays paired
    // with its row); a plan file's partial apply needs the whole rows.
    let made = make_plan(
        &plan_args,
        crate::cluster::rows_for_apply(a.plan_file.is_some()),
    )
    .await?;
    if let Some(code) = made.refuse_writes("apply") {
        return Ok(code);
    }
    let Made {
        rows,
        ran: Ran {
            prune_skipped,
            cluster,
            ..
        },
    } = made;
    let Some((session, planned)) = cluster else {
        bail!("apply needs a cluster");
    };
    for (p, _) in &rows {
        errln!("{}", summary_line(p));
    }
    if let Some(why) = &prune_skipped {
        errln!("{why}");
    }
    let saved = match &a.plan_file {
        Some(path) => {
            let saved = read_selection(path)?;
            check_plan_cluster(&saved, &session, path)?;
            Some(saved)
        }
        None => None,
    };
    let w = choose_writes(rows, prune_skipped, saved.as_ref());
    // Refused objects are failures of this run (exit 1, no prune).
    let refused = {
        let mut printer = Printer::default();
        w.refused.iter().for_each(|r| printer.print(r));
        printer.finish()
    };
    let load_errors = w
        .plan
        .objects
        .iter()
        .filter(|p| p.action == ObjectAction::Error)
        .count();
    // An ApplySet parent is rewritten even when no member changes, as kubectl does.
    if w.items.is_empty() && w.candidates.is_empty() && planned.applyset.is_none() {
        print_unchanged(&w.plan, dry_run);
        errln!("nothing to apply");
        return Ok(crate::ops::exit_code(load_errors + refused));
    }
    if !a.yes && !dry_run && !confirm(&apply_question(&w, force.is_some()))? {
        errln!("cancelled: nothing was applied");
        return Ok(1);
    }
    let Writes {
        plan,
        items,
        candidates,
        ..
    } = w;
    // From here on a signal stops the run with what it wrote said.
    let mut signals = crate::signals::Signals::new()?;
    let names = items.iter().map(|(i, _)| i.plan.id()).collect();
    let mut printer = Printer::default();
    let opts = |report| ApplyOptions {
        dry_run,
        applyset: planned.applyset.clone(),
        report,
        force,
        // Client-side, `--field-manager` names the writes' Update entries
        // instead of kubectl-client-side-apply, as in kubectl.
        field_manager: a.field_manager.clone(),
    };
    let ran = run_writes(names, &mut printer, &mut signals, |report| {
        let (session, opts) = (&session, opts(report));
        async move { session.apply_encoded(items, &opts).await }
    })
    .await;
    print_unchanged(&plan, dry_run);
    if let Wrote::Signal(s) = ran {
        return Ok(interrupted(&printer, s));
    }
    let mut failed = printer.finish() + refused;
    // kubectl prunes (and rewrites an ApplySet parent) only after a
    // complete read and a clean apply.
    let prune_ok = plan.prune_skipped.is_none() && failed == 0;
    if failed > 0 && (planned.applyset.is_some() || !candidates.is_empty()) {
        errln!("{}", plan::PruneBlock::ApplyFailed { count: failed });
    }
    if prune_ok && (planned.applyset.is_some() || !candidates.is_empty()) {
        match prune_after_apply(&session, &planned, &candidates, dry_run, &mut signals).await {
            Ok(n) => failed += n,
            Err(code) => return Ok(code),
        }
    }
    if dry_run {
        errln!("(server dry run: nothing was written)");
    }
    Ok(crate::ops::exit_code(failed + load_errors))
}

/// What a client-side apply sends: the objects to write (a create with its
/// encoded body), the prune candidates, the objects refused before
/// anything is sent, and the plan keeping the rows that are not written.
struct Writes {
    plan: Plan,
    items: Vec<(ApplyItem, Option<bytes::Bytes>)>,
    candidates: Vec<ObjectPlan>,
    refused: Vec<ObjectResult>,
}

/// Split the apply rows into what is sent and what is not: with a saved
/// plan only its selection, and objects whose saved plan is stale are
/// refused (one result each); the release of each dropped field is said.
fn choose_writes(
    rows: Vec<(ObjectPlan, Option<bytes::Bytes>)>,
    prune_skipped: Option<plan::PruneBlock>,
    saved: Option<&SavedPlan>,
) -> Writes {
    let chosen = saved.map(|s| &s.selection);
    let mut refused: Vec<ObjectResult> = Vec::new();
    let mut refuse = |p: &ObjectPlan| -> bool {
        let Some(why) = saved.and_then(|s| stale_reason(s, p)) else {
            return false;
        };
        refused.push(ObjectResult::failed(
            p.id(),
            crate::ops::Failure::Refused(why),
        ));
        true
    };
    // The objects to write move into the items (no copy: at 10,000 objects
    // the plan is most of the memory); the plan keeps the others.
    let (changing, others): (Vec<_>, Vec<_>) = rows
        .into_iter()
        .partition(|(p, _)| matches!(p.action, ObjectAction::Create | ObjectAction::Update));
    let plan = Plan {
        objects: others.into_iter().map(|(p, _)| p).collect(),
        prune_skipped,
    };
    let items: Vec<(ApplyItem, Option<bytes::Bytes>)> = changing
        .into_iter()
        .filter_map(|(p, body)| match &chosen {
            None => Some((
                ApplyItem {
                    plan: p,
                    accepted_fields: None,
                    released_fields: Vec::new(),
                },
                body,
            )),
            Some(sel) => select_item(&p, sel)
                .filter(|i| !refuse(&i.plan))
                .map(|i| (i, None)),
        })
        .collect();
    for (it, _) in &items {
        for r in &it.released_fields {
            errln!(
                "release      {} {r}: keeps the live value, drops it from last-applied",
                it.plan.id()
            );
        }
    }
    let candidates: Vec<ObjectPlan> = plan
        .prune_candidates()
        .filter(|p| chosen.as_ref().is_none_or(|sel| sel.contains_key(&p.id())))
        .filter(|p| !refuse(p))
        .cloned()
        .collect();
    Writes {
        plan,
        items,
        candidates,
        refused,
    }
}

/// The question asked before a client-side apply writes.
fn apply_question(w: &Writes, force: bool) -> String {
    let mut q = format!(
        "apply {} object(s){}?",
        w.items.len(),
        if w.candidates.is_empty() {
            String::new()
        } else {
            format!(" and prune {}", w.candidates.len())
        }
    );
    if force {
        // Which objects is known only from the server's answer.
        q.push_str(
            " (--force: any object the server refuses to patch, an immutable field, is \
             DELETED and created again: down until it is back)",
        );
    }
    q
}

/// Prune the candidates (and rewrite the ApplySet parent) after a clean
/// apply, printing each result: the number that failed, or the exit code
/// when a signal stopped it.
async fn prune_after_apply(
    session: &Session,
    planned: &crate::cluster::Planned,
    candidates: &[ObjectPlan],
    dry_run: bool,
    signals: &mut crate::signals::Signals,
) -> Result<usize, u8> {
    let names = candidates.iter().map(ObjectPlan::id).collect();
    let mut printer = Printer::default();
    let applyset = planned.applyset.as_ref();
    let ran = run_writes(names, &mut printer, signals, |report| async move {
        session
            .prune_reporting(candidates, applyset, dry_run, &report)
            .await
    })
    .await;
    if let Wrote::Signal(s) = ran {
        return Err(interrupted(&printer, s));
    }
    // The ApplySet parent's result comes after the candidates'.
    if let Wrote::Done(results) = ran {
        for r in results.iter().skip(candidates.len()) {
            printer.print(r);
        }
    }
    Ok(printer.finish())
}

pub async fn delete(a: DeleteArgs) -> anyhow::Result<u8> {
    let plan_args = PlanArgs {
        manifests: a.manifests.clone(),
        cluster: a.cluster.clone(),
        prune: PruneArgs::default(),
        live: Vec::new(),
    };
    let made = make_plan(&plan_args, crate::cluster::slim_for_delete).await?;
    if let Some(code) = made.refuse_writes("delete") {
        return Ok(code);
    }
    let Made {
        rows,
        ran: Ran { cluster, .. },
    } = made;
    let Some((session, _)) = cluster else {
        bail!("delete needs a cluster");
    };
    let targets: Vec<ObjectPlan> = rows.iter().filter(|p| p.live.is_some()).cloned().collect();
    // Objects that could not be read or looked up make the run fail, as
    // kubectl's does, though the others are still deleted.
    let mut errors = 0;
    for p in rows.iter().filter(|p| p.live.is_none()) {
        match &p.error {
            Some(e) => {
                errors += 1;
                errln!("error: {e}");
            }
            None => errln!("{} not found", p.id()),
        }
    }
    if targets.is_empty() {
        errln!("nothing to delete");
        return Ok(crate::ops::exit_code(errors));
    }
    for p in &targets {
        errln!("x delete     {}", p.id());
    }
    if !a.yes && !confirm(&format!("delete {} object(s)?", targets.len()))? {
        errln!("cancelled: nothing was deleted");
        return Ok(1);
    }
    let propagation = a.cascade;
    let mut signals = crate::signals::Signals::new()?;
    let names = targets.iter().map(ObjectPlan::id).collect();
    let mut printer = Printer::default();
    let ran = run_writes(names, &mut printer, &mut signals, |report| {
        let (session, targets) = (&session, &targets);
        async move {
            session
                .delete(
                    targets,
                    &DeleteOptions {
                        propagation,
                        dry_run: false,
                        report,
                    },
                )
                .await
        }
    })
    .await;
    if let Wrote::Signal(s) = ran {
        return Ok(interrupted(&printer, s));
    }
    Ok(crate::ops::exit_code(printer.finish() + errors))
}

/// Run the TUI; a signal that ends it exits with the shell's code for it
/// (128 + n), after the terminal is restored and (demo) the temporary
/// directory removed by the callers' drops.
async fn run_engine(
    engine: KubeEngine,
    source_root: Option<String>,
    theme: &str,
    server_side: Option<crate::tui::ServerSideMode>,
    signals: &mut crate::signals::Signals,
) -> anyhow::Result<u8> {
    // NO_COLOR and TERM=dumb (no colour, ASCII borders).
    let opts = crate::tui::Options {
        source_root,
        server_side,
        light: crate::tui::Options::light_theme(theme, std::env::var("COLORFGBG").ok().as_deref()),
        ..crate::tui::Options::from_env()
    };
    match crate::tui::run(Arc::new(engine), opts, signals).await? {
        crate::tui::Ended::Quit => Ok(0),
        crate::tui::Ended::Signal(n) => Ok(crate::signals::exit_code(n)),
    }
}

/// The TUI's server-side mode from its flags (`None`: client-side).
fn tui_server_side(s: &ssa::ServerSideArgs) -> anyhow::Result<Option<crate::tui::ServerSideMode>> {
    if !s.active() {
        return Ok(None);
    }
    if !s.server_side {
        bail!("--force-conflicts and --field-manager only work with --server-side");
    }
    Ok(Some(crate::tui::ServerSideMode {
        manager: s
            .field_manager
            .clone()
            .unwrap_or_else(|| crate::ssa::DEFAULT_FIELD_MANAGER.to_string()),
        force: s.force_conflicts,
    }))
}

pub async fn tui(a: TuiArgs) -> anyhow::Result<u8> {
    let server_side = tui_server_side(&a.ssa)?;
    let prune = a.prune.options()?;
    let load = load_options(&a.manifests, &a.paths, &a.cluster)?;
    note_kustomize(&load)?;
    if !std::io::stdout().is_terminal() {
        bail!("the TUI needs a terminal; for scripts use `kapply diff`, `plan` or `apply`");
    }
    // Only the kubeconfig is read here (a local file: a mistake in it fails
    // at once, before the screen changes). Connecting is the TUI's first
    // effect, so a silent server shows a waiting screen that `q` leaves.
    let target = crate::cluster::Target::resolve(&a.cluster.options()).await?;
    let mut signals = crate::signals::Signals::new()?;
    run_engine(
        KubeEngine::connecting(target, load, prune),
        None,
        &a.theme,
        server_side,
        &mut signals,
    )
    .await
}

pub async fn demo(a: DemoArgs) -> anyhow::Result<u8> {
    let server_side = tui_server_side(&a.ssa)?;
    // Caught from the start, so the temporary directory is removed (by
    // `Demo`'s drop) whenever a signal ends the demo.
    let mut signals = crate::signals::Signals::new()?;
    let demo = tokio::select! {
        d = crate::demo::Demo::start(a.port, a.kubeconfig_out.clone(), a.force) => d?,
        n = signals.recv() => return Ok(crate::signals::exit_code(n)),
    };
    let (kubeconfig, manifests) = (demo.kubeconfig.display(), demo.manifests.display());
    if a.no_tui || !std::io::stdout().is_terminal() {
        outln!("kapply demo cluster: {}", demo.server.url());
        outln!("kubeconfig:          {kubeconfig}");
        outln!("manifests:           {manifests}");
        outln!("try: kubectl --kubeconfig {kubeconfig} get all -n demo");
        outln!("     kapply --kubeconfig {kubeconfig} -f {manifests}");
        outln!("serving until Ctrl-C");
        // Stopping the server is its normal end: exit 0 on any of them.
        signals.recv().await;
        return Ok(0);
    }
    let engine = tokio::select! {
        e = demo.engine() => e?,
        n = signals.recv() => return Ok(crate::signals::exit_code(n)),
    };
    // Sources read `manifests/04-simple_deployment.yaml:1`, not the
    // temporary directory's path.
    let root = demo.manifests.parent().map(|p| p.display().to_string());
    run_engine(engine, root, &a.theme, server_side, &mut signals).await
}

/// What [`kind_name`] wants, for its error messages.
const KIND_NAME_EXPECTED: &str = "expected KIND/NAME, e.g. deployment/web";

/// An object named as kubectl names it on the command line, `KIND/NAME`
/// (`deploy/web`, `widgets.demo.kapply.dev/w`): both parts non-empty, no
/// other `/` (a name never holds one). The one parser of `export` and
/// `release`.
fn kind_name(text: &str) -> Option<(&str, &str)> {
    text.split_once('/')
        .filter(|(k, n)| !k.is_empty() && !n.is_empty() && !n.contains('/'))
}

/// `kapply export`: GET each object, clean it (`crate::export`), and write it
/// to DIR or print it (Secret values masked on stdout). Exit 1 if any object
/// could not be exported; the others are still written.
pub async fn export(a: ExportArgs) -> anyhow::Result<u8> {
    let session = connect(&a.cluster).await?;
    if let Some(dir) = &a.output_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut errors = 0;
    let mut first = true;
    for text in &a.objects {
        let Some((kind, name)) = kind_name(text) else {
            errln!("error: {text}: {KIND_NAME_EXPECTED}");
            errors += 1;
            continue;
        };
        let live = match session.resolve_name(kind).await {
            Ok(res) => {
                session
                    .get_object(&res, a.cluster.namespace.as_deref(), name)
                    .await
            }
            Err(e) => Err(e),
        };
        let live = match live {
            Ok(v) => v,
            Err(e) => {
                errln!("error: {text}: {e}");
                errors += 1;
                continue;
            }
        };
        let clean = crate::export::export(&live);
        match &a.output_dir {
            Some(dir) => {
                let path = dir.join(crate::export::file_name(&clean));
                // A Secret's values are in clear in its file: owner only.
                let secret = clean["kind"] == "Secret";
                let yaml = crate::yaml::to_yaml(&clean);
                match crate::files::write(&path, yaml.as_bytes(), a.force, secret) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        errln!(
                            "error: {text}: {} exists; not overwritten (pass --force to replace it)",
                            path.display()
                        );
                        errors += 1;
                        continue;
                    }
                    Err(e) => return Err(e).with_context(|| format!("writing {}", path.display())),
                }
                let note = if secret {
                    " (Secret: values written in clear to the file only)"
                } else {
                    ""
                };
                errln!("exported {text} -> {}{note}", path.display());
            }
            None => {
                let shown = crate::mask::mask_secret(&clean);
                let sep = if first { "" } else { "---\n" };
                write_stdout(&format!("{sep}{}", crate::yaml::to_yaml(&shown)));
                if clean["kind"] == "Secret" {
                    errln!(
                        "note: {text}: Secret values masked on stdout; use -o DIR to write them"
                    );
                }
            }
        }
        first = false;
    }
    Ok(crate::ops::exit_code(errors))
}

/// A field value as `kapply release` shows it: Secret data masked, strings
/// bare, the rest as JSON.
fn release_value(kind: &str, path: &FieldPath, v: Option<&serde_json::Value>) -> String {
    match v {
        None => "(not set live)".into(),
        Some(_) if crate::mask::is_secret_field(kind, path) => crate::mask::MASK.into(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => crate::gocompat::json(v),
    }
}

/// `kapply release KIND/NAME FIELD-PATH...`: GET the object, take the
/// fields out of its last-applied annotation (`plan::release_annotation`),
/// confirm, and write the annotation alone. Exit 0 when written (or
/// nothing to do), 1 otherwise.
pub async fn release(a: ReleaseArgs) -> anyhow::Result<u8> {
    let dry_run = a.dry_run == DryRun::Server;
    let Some((kind, name)) = kind_name(&a.object) else {
        errln!("error: {}: {KIND_NAME_EXPECTED}", a.object);
        return Ok(1);
    };
    let session = connect(&a.cluster).await?;
    let res = match session.resolve_name(kind).await {
        Ok(r) => r,
        Err(e) => {
            errln!("error: {}: {e}", a.object);
            return Ok(1);
        }
    };
    let ns = a.cluster.namespace.as_deref();
    let live = match session.get_object(&res, ns, name).await {
        Ok(v) => v,
        Err(e) => {
            let where_ = if res.namespaced && e.code() == 404 {
                format!(" in namespace {:?}", ns.unwrap_or(session.namespace()))
            } else {
                String::new()
            };
            errln!("error: {}: {e}{where_}", a.object);
            return Ok(1);
        }
    };
    let edit = match plan::release_annotation(&live, &a.fields) {
        Ok(e) => e,
        Err(why) => {
            errln!("error: {why}");
            return Ok(1);
        }
    };
    let shown = ObjectRef::new(
        live["apiVersion"].as_str().unwrap_or_default(),
        &res.kind,
        live.pointer("/metadata/namespace").and_then(|v| v.as_str()),
        name,
    );
    for f in &edit.fields {
        errln!(
            "release      {shown} {}: live value {} stays; dropped from last-applied (was {})",
            f.path,
            release_value(&res.kind, &f.path, f.live.as_ref()),
            release_value(&res.kind, &f.path, Some(&f.last_applied)),
        );
    }
    if !a.yes
        && !dry_run
        && !confirm(&format!(
            "release {} field(s) of {shown} (another writer owns them from now on)?",
            edit.fields.len()
        ))?
    {
        errln!("cancelled: nothing was written");
        return Ok(1);
    }
    let rv = live
        .pointer("/metadata/resourceVersion")
        .and_then(|v| v.as_str());
    let paths: Vec<&str> = edit.fields.iter().map(|f| f.path.as_str()).collect();
    let suffix = if dry_run { " (server dry run)" } else { "" };
    match session
        .write_last_applied(&res, ns, name, &edit.annotation, rv, dry_run)
        .await
    {
        Ok(after) => {
            let written = after
                .pointer("/metadata/annotations")
                .and_then(|an| an.get(crate::merge::LAST_APPLIED))
                .and_then(|v| v.as_str());
            if written != Some(edit.annotation.as_str()) {
                errln!(
                    "error: {shown}: the server answered without the new last-applied annotation; run `kapply diff` to see what it holds"
                );
                return Ok(1);
            }
            outln!("{shown} released {}{suffix}", paths.join(", "));
            if dry_run {
                errln!("(server dry run: nothing was written)");
            }
            Ok(0)
        }
        Err(e) if e.code() == 409 => {
            errln!(
                "error: {shown}: changed since it was read (another write); nothing was written, run kapply release again"
            );
            Ok(1)
        }
        Err(e) if e.fate_unknown() => {
            errln!("unknown: {shown}: {}", e.unknown_outcome());
            Ok(1)
        }
        Err(e) => {
            errln!("error: {shown}: {e}");
            Ok(1)
        }
    }
}
