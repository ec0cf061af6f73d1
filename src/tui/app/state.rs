//! The app's state below `App`, in groups: the object list, the selection,
//! the detail pane, the jobs under way, the connection.

use super::*;

/// The object list: the plan and its rows as listed (grouped, filtered,
/// searched), with their counts.
pub struct ObjectList {
    /// The rows; a streamed load's are kept small (no field rows, config
    /// or live object): [`App::object`] gives them whole.
    pub plan: Plan,
    /// Per row of `plan`: its compact form when kept small, `None` when whole.
    pub(in crate::tui::app) compact: Vec<Option<Compact>>,
    /// Rows built whole from `compact` (the selected one, built by
    /// `update` whenever the selection or the row changes).
    pub(in crate::tui::app) whole: Vec<Option<Box<ObjectPlan>>>,
    pub(in crate::tui::app) built: Vec<usize>,
    pub(in crate::tui::app) streamed: Option<Streamed>,
    /// Bumped on every load: a cached view of an older plan is stale.
    pub plan_gen: u64,
    /// Kinds the plan holds in more than one group (shown with the group).
    pub ambiguous_kinds: BTreeSet<String>,
    /// Row of each object, built when a change comes (the plan's rows do
    /// not move between loads).
    pub(in crate::tui::app) id_index: Option<std::collections::HashMap<ObjectRef, usize>>,
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
    pub(in crate::tui::app) list_dirty: bool,
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
    pub(in crate::tui::app) cursor_moved: bool,
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
    pub(in crate::tui::app) views: Prepared,
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
