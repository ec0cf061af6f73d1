//! The TUI's state types: the options, the groups of `App`'s fields (the
//! object list, the selection, the detail pane, the jobs under way, the
//! connection), the list's rows, the dialogs, the log, the counts. Plain
//! data the views and helpers read without importing the app.

use crate::fieldpath::FieldPath;
use crate::objref::ObjectRef;
use crate::ops::{Compact, Progress, Server};
use crate::plan::{ObjectAction, ObjectPlan, Plan};
use crate::tui::confirm::Confirm;
use crate::tui::theme::Theme;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// How the TUI looks and behaves; `Options::from_env` honours NO_COLOR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// False when NO_COLOR is set or TERM=dumb: no colours at all, marks still show.
    pub color: bool,
    /// Capture the mouse (wheel and click).
    pub mouse: bool,
    /// Plain ASCII borders (`+`, `-`, `|`), for TERM=dumb.
    pub ascii: bool,
    /// The terminal's background is light (`--theme light`, or `auto` and
    /// COLORFGBG says so): muted colours chosen to read on it.
    pub light: bool,
    /// A directory the manifests were written to for the user (the demo's
    /// temporary one): sources under it are shown relative to it.
    pub source_root: Option<String>,
    /// `--server-side`: plan and apply server-side (`None`: client-side).
    pub server_side: Option<ServerSideMode>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            color: true,
            mouse: true,
            ascii: false,
            light: false,
            source_root: None,
            server_side: None,
        }
    }
}

impl Options {
    /// The colours and borders these options draw with.
    pub fn theme(&self) -> Theme {
        Theme {
            color: self.color,
            ascii: self.ascii,
            light: self.light,
        }
    }

    pub fn from_env() -> Self {
        Self::from_vars(
            std::env::var_os("NO_COLOR").as_deref(),
            std::env::var_os("TERM").as_deref(),
        )
    }

    /// The options for these values of NO_COLOR and TERM: a dumb terminal
    /// gets neither colour nor box-drawing characters.
    pub fn from_vars(no_color: Option<&std::ffi::OsStr>, term: Option<&std::ffi::OsStr>) -> Self {
        let dumb = term.is_some_and(|t| t == "dumb");
        Options {
            color: !dumb && no_color.is_none_or(|v| v.is_empty()),
            mouse: true,
            ascii: dumb,
            light: false,
            source_root: None,
            server_side: None,
        }
    }

    /// Whether `--theme` (`light`, `dark` or `auto`) means a light
    /// background; `auto` reads COLORFGBG (`fg;bg`, as rxvt, Konsole and
    /// iTerm2 set it: a background of 7 or 9-15 is light), else dark.
    pub fn light_theme(theme: &str, colorfgbg: Option<&str>) -> bool {
        match theme {
            "light" => true,
            "dark" => false,
            _ => colorfgbg
                .and_then(|v| v.rsplit(';').next())
                .and_then(|bg| bg.trim().parse::<u8>().ok())
                .is_some_and(|bg| bg == 7 || (9..=15).contains(&bg)),
        }
    }
}

pub use crate::tui::job::Job;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    List,
    Fields,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    Namespace,
    Kind,
}

/// The status filter `f` cycles through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    All,
    Changes,
    Create,
    Update,
    InSync,
    Prune,
    Error,
    /// Objects that would apply but carry a warning.
    Warning,
    /// Objects with a server-side conflict no decision covers
    /// (`--server-side` only).
    Conflict,
    Marked,
}

impl Filter {
    /// The next filter; `Conflict` only with `server_side`.
    pub fn next_in(self, server_side: bool) -> Filter {
        match self.next() {
            Filter::Conflict if !server_side => Filter::Marked,
            f => f,
        }
    }

    pub fn next(self) -> Filter {
        use Filter::*;
        match self {
            All => Changes,
            Changes => Create,
            Create => Update,
            Update => InSync,
            InSync => Prune,
            Prune => Error,
            Error => Warning,
            Warning => Conflict,
            Conflict => Marked,
            Marked => All,
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            Filter::All => "all",
            Filter::Changes => "changes",
            Filter::Create => "create",
            Filter::Update => "update",
            Filter::InSync => "in sync",
            Filter::Prune => "prune",
            Filter::Error => "error",
            Filter::Warning => "warning",
            Filter::Conflict => "conflict",
            Filter::Marked => "marked",
        }
    }
}

/// One row of the object list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Row {
    Group(String),
    /// Index into `plan.objects`.
    Object(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PruneChoice {
    Prune,
    Keep,
    Skip,
}

/// Modal dialogs; while one is open it gets every key.
#[derive(Debug, Clone)]
pub enum Popup {
    Help,
    /// `c`: each distinct change with how many objects carry it; `Enter`
    /// marks them all for that change alone.
    Changes {
        changes: Vec<ChangeItem>,
        pos: usize,
    },
    PruneStep {
        /// Copies, not indices: a reload while stepping must not shift them.
        candidates: Vec<ObjectPlan>,
        pos: usize,
        choices: Vec<PruneChoice>,
    },
    /// `E`: the path to write an object's export to, edited in place.
    ExportPath {
        object: ObjectPlan,
        input: String,
        note: Option<String>,
    },
    /// A confirmation of a destructive action (apply, server-side apply,
    /// prune, delete, recreate, the export's overwrite, quit): nothing
    /// runs before its confirm key.
    Confirm(Confirm),
    /// Something the user asked for cannot be done, and why (prune after
    /// an incomplete read). Any of Esc, q, Enter closes it.
    Notice {
        title: &'static str,
        text: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// HH:MM:SS
    pub time: String,
    pub ok: bool,
    pub text: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub create: usize,
    pub update: usize,
    pub in_sync: usize,
    pub prune: usize,
    pub error: usize,
    /// Objects with warnings that are not errors (counted apart: `⚠`).
    pub warning: usize,
}

impl Counts {
    /// The count of objects with this action.
    pub(crate) fn of(&mut self, action: ObjectAction) -> &mut usize {
        match action {
            ObjectAction::Create => &mut self.create,
            ObjectAction::Update => &mut self.update,
            ObjectAction::Unchanged => &mut self.in_sync,
            ObjectAction::Prune => &mut self.prune,
            ObjectAction::Error => &mut self.error,
        }
    }

    /// Count `o` in (or, `add` false, out of) its action and warnings.
    pub(crate) fn tally(&mut self, o: &ObjectPlan, add: bool) {
        let step = |n: &mut usize| *n = if add { *n + 1 } else { n.saturating_sub(1) };
        step(self.of(o.action));
        if o.action != ObjectAction::Error && !o.warnings.is_empty() {
            step(&mut self.warning);
        }
    }
}

/// How far a streamed load is: LISTs answered of those it sends, objects
/// planned of the manifests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadStatus {
    pub lists_done: usize,
    pub lists_total: usize,
    pub planned: usize,
    pub total: usize,
}

/// The rows a streamed load has sent so far.
#[derive(Debug)]
pub(crate) enum Streamed {
    /// The first load: the first `n` rows of the plan are planned, the rest
    /// are the manifests still waiting for their LIST.
    Shown(usize),
    /// A reload: the rows so far, shown once the load is done (the list
    /// keeps the plan it had meanwhile).
    Held(Vec<ObjectPlan>, Vec<Option<Compact>>),
}

/// Which field table is laid out: the plan's generation, the object's
/// index, `K`, the width.
pub(crate) type FieldKey = (u64, usize, bool, usize);

/// The selected object's server-side rows, with the decision on each.
pub type SsaRows = std::rc::Rc<Vec<(crate::ssa::FieldRow, Option<crate::ssa::Decision>)>>;

/// What the views draw of the selected object, computed in `update` (by
/// [`App::prepare`], at the size the app last learnt) once per selection,
/// plan, mode and width: never while drawing, nor per frame or key. A view
/// that finds one stale (a size not announced) computes it without keeping it.
#[derive(Default)]
pub(crate) struct Prepared {
    /// The field table's layout.
    pub(crate) field: Option<(FieldKey, std::rc::Rc<crate::tui::fieldtable::Layout>)>,
    /// The tallest box under the field table (see `tallest_detail`).
    pub(crate) tallest: Option<(FieldKey, u16)>,
    /// The YAML view's lines.
    pub(crate) yaml: Option<crate::tui::yamlview::Cached>,
    /// The server-side rows (plan generation, index).
    pub(crate) ssa: Option<((u64, usize), SsaRows)>,
}

/// The object list: the plan and its rows as listed (grouped, filtered,
/// searched), with their counts.
pub struct ObjectList {
    /// The rows; a streamed load's are kept small (no field rows, config
    /// or live object): [`App::object`] gives them whole.
    pub plan: Plan,
    /// Per row of `plan`: its compact form when kept small, `None` when whole.
    pub(crate) compact: Vec<Option<Compact>>,
    /// Rows built whole from `compact` (the selected one, built by
    /// `update` whenever the selection or the row changes).
    pub(crate) whole: Vec<Option<Box<ObjectPlan>>>,
    pub(crate) built: Vec<usize>,
    pub(crate) streamed: Option<Streamed>,
    /// Bumped on every load: a cached view of an older plan is stale.
    pub plan_gen: u64,
    /// Kinds the plan holds in more than one group (shown with the group).
    pub ambiguous_kinds: BTreeSet<String>,
    /// Row of each object, built when a change comes (the plan's rows do
    /// not move between loads).
    pub(crate) id_index: Option<std::collections::HashMap<ObjectRef, usize>>,
    pub rows: Vec<Row>,
    /// How many objects `rows` shows (kept by `rebuild`, not counted per frame).
    pub shown: usize,
    pub counts: Counts,
    pub group: GroupBy,
    pub filter: Filter,
    pub search: String,
    /// True while typing a search.
    pub searching: bool,
    /// The list's rows are to be made again (an object's action changed):
    /// done once per tick or before a key, not per change.
    pub(crate) list_dirty: bool,
}

impl Default for ObjectList {
    fn default() -> Self {
        ObjectList {
            plan: Plan::default(),
            compact: Vec::new(),
            whole: Vec::new(),
            built: Vec::new(),
            streamed: None,
            plan_gen: 0,
            ambiguous_kinds: BTreeSet::new(),
            id_index: None,
            rows: Vec::new(),
            shown: 0,
            counts: Counts::default(),
            group: GroupBy::Namespace,
            filter: Filter::All,
            search: String::new(),
            searching: false,
            list_dirty: false,
        }
    }
}

/// What is selected and marked: the list's cursor, the objects and field changes
/// marked for apply, release or delete, the field cursor.
#[derive(Default)]
pub struct Selection {
    /// Index into `rows`; always an `Object` row when any exists.
    pub cursor: usize,
    /// The user has moved the cursor: the first load leaves it where it is
    /// (else it goes to the first object with changes).
    pub(crate) cursor_moved: bool,
    pub list_scroll: usize,
    pub marked: BTreeSet<ObjectRef>,
    /// Field changes left out of a partial apply, per object key.
    pub excluded: BTreeMap<ObjectRef, BTreeSet<FieldPath>>,
    /// `clear` rows released (`R`) instead of cleared, per object key:
    /// apply drops them from last-applied and keeps their live value.
    pub released: BTreeMap<ObjectRef, BTreeSet<FieldPath>>,
    /// Prune candidates queued in prune mode (shown as `x`).
    pub queued_delete: BTreeSet<ObjectRef>,
    pub field_cursor: usize,
    pub field_scroll: usize,
}

/// The pane beside the list: which view (fields, YAML), its flags and scroll, and
/// what it draws of the selected object, computed by `update`.
#[derive(Default)]
pub struct Detail {
    pub yaml: bool,
    pub yaml_scroll: usize,
    /// The YAML view shows unchanged runs whole (`z`).
    pub yaml_unfold: bool,
    /// The YAML view shows the last-applied annotation whole (`L`).
    pub yaml_last_applied: bool,
    /// The field table lists the fields apply keeps (`K`).
    pub show_kept: bool,
    /// The box under the field table scrolled (`Ctrl-d`/`Ctrl-u`): for
    /// which row (object and path), by how many lines. Another row opens
    /// at its top.
    pub detail_scroll: Option<(String, u16)>,
    /// What the views draw of the selected object, computed by `update`.
    pub(crate) views: Prepared,
}

/// What is under way: the typed jobs, the load's and writes' progress.
#[derive(Default)]
pub struct Jobs {
    /// What is under way, for the status line and for which messages may
    /// still change the screen.
    pub pending: Vec<Job>,
    pub loading: bool,
    /// `Effect::Connect` is under way.
    pub connecting: bool,
    pub progress: Option<Progress>,
    /// How far the streamed load under way is.
    pub load_status: Option<LoadStatus>,
    /// The progress of the apply, delete or prune under way: objects done
    /// and in all.
    pub write_progress: Option<(usize, usize)>,
    /// The progress of the confirmation's dry run: objects answered and in
    /// all.
    pub dry_run_progress: Option<(usize, usize)>,
}

/// The cluster: the server, whether live state is known (or why not), how long it
/// has been waited for, and whether it is followed.
pub struct Connection {
    /// The server the engine talks to, named while waiting.
    pub server: Option<Server>,
    /// A plan against live state has been loaded. Until then the list shows
    /// the manifests alone and nothing destructive is offered.
    pub live_known: bool,
    /// Why connecting or the first load failed (no live state known): shown
    /// in place of the field pane; `r` retries.
    pub failure: Option<String>,
    /// How pruning is set up (`None`: not enabled), for `p` to say why
    /// there is no candidate.
    pub prune_scope: Option<String>,
    /// When the wait for live state began, and how long it has lasted (as
    /// of the last tick).
    pub waiting_since: Option<Instant>,
    pub waited: Duration,
    /// Whether the cluster is followed, or as of when live state was read
    /// (`None`: nothing reported yet).
    pub live: Option<Live>,
    /// The watch of the current plan (`Effect::Watch`); reports of older
    /// ones are dropped.
    pub live_gen: u64,
    /// When the current plan's live state was read (HH:MM:SS).
    pub read_at: Option<String>,
    /// Objects changed in the cluster since the load, re-planned: when.
    pub changed: BTreeMap<ObjectRef, String>,
}

impl Default for Connection {
    fn default() -> Self {
        Connection {
            server: None,
            live_known: false,
            failure: None,
            prune_scope: None,
            waiting_since: None,
            waited: Duration::ZERO,
            live: None,
            live_gen: 0,
            read_at: None,
            changed: BTreeMap::new(),
        }
    }
}

/// Whether the plan shown is the cluster's state now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Live {
    /// Every resource of the plan is watched: changes show as they happen.
    Watching,
    /// Not (or no longer) followed: live state as of `time` (HH:MM:SS);
    /// `why` when a watch broke or gave up.
    AsOf { time: String, why: Option<String> },
}

impl Live {
    /// The header's words: `watching`, `live as of 12:00:03`.
    pub fn label(&self) -> String {
        match self {
            Live::Watching => "watching".to_string(),
            Live::AsOf { time, .. } => format!("live as of {time}"),
        }
    }
}

/// How the TUI applies server-side (`--server-side`, `--force-conflicts`,
/// `--field-manager`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSideMode {
    pub manager: String,
    /// `--force-conflicts`: every conflict is taken (`take` rows).
    pub force: bool,
}

/// The server-side state of the objects: their conflicts and the
/// decisions made on them.
#[derive(Debug, Clone, Default)]
pub struct ServerSideState {
    /// Per object with conflicts, their paths (as the plan shows them).
    pub conflicts: BTreeMap<ObjectRef, Vec<FieldPath>>,
    /// Per object, the decisions made on its conflict rows.
    pub decisions: BTreeMap<ObjectRef, BTreeMap<FieldPath, crate::ssa::Decision>>,
    /// The structural schemas of the CustomResourceDefinitions among the
    /// rows (live, then as configured), so a custom resource is planned as
    /// the server reads it (keyed lists, sets, atomic maps).
    pub crds: crate::ssa::CrdSchemas,
}

impl ServerSideState {
    /// The conflicts of `key` no decision covers.
    pub fn undecided(&self, key: &ObjectRef) -> usize {
        let Some(paths) = self.conflicts.get(key) else {
            return 0;
        };
        let decided = self.decisions.get(key);
        paths
            .iter()
            .filter(|p| decided.is_none_or(|d| !d.contains_key(*p)))
            .count()
    }
}

/// One line of the changes view.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeItem {
    pub path: FieldPath,
    /// `"nginx:1.25" → "nginx:1.26"`.
    pub values: String,
    /// The cause as the piped `kapply diff` tags it (`intended`,
    /// `drift: kubectl-edit at ...`): short, so a change fits a line.
    pub cause: String,
    pub hazard: bool,
    /// `37 Deployments`.
    pub carried: String,
    pub objects: Vec<ObjectRef>,
}
