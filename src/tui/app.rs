//! The TUI's state and its one transition function. `App::update` does no
//! I/O: every input arrives as a [`Msg`], every side effect leaves as an
//! [`Effect`] for the runtime to perform.

use crate::merge::FieldAction;
use crate::ops::{ApplyItem, ObjectResult, Progress, Propagation, Server};
use crate::plan::{ObjectAction, ObjectPlan, Plan};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;
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
}

impl Default for Options {
    fn default() -> Self {
        Options {
            color: true,
            mouse: true,
            ascii: false,
        }
    }
}

impl Options {
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
        }
    }
}

/// Every input the app reacts to.
#[derive(Debug, Clone)]
pub enum Msg {
    Key(KeyEvent),
    Mouse(MouseEvent),
    Resize(u16, u16),
    Tick,
    Progress(Progress),
    /// The engine connected (the server answered), or why not.
    Connected(Result<(), String>),
    /// The manifests alone, read while live state loads.
    Manifests(Result<Plan, String>),
    Loaded(Result<Plan, String>),
    DryRunDone(Vec<ObjectResult>),
    Applied(Vec<ObjectResult>),
    Deleted(Vec<ObjectResult>),
    Pruned(Vec<ObjectResult>),
}

/// Work for the runtime. Destructive ones are only produced by a confirm.
#[derive(Debug, Clone)]
pub enum Effect {
    /// Connect to the server (again); answered by `Msg::Connected`.
    Connect,
    /// Read the manifests without the cluster; answered by `Msg::Manifests`.
    ReadManifests,
    Load,
    DryRun(Vec<ApplyItem>),
    Apply(Vec<ApplyItem>),
    Delete(Vec<ObjectPlan>, Propagation),
    Prune(Vec<ObjectPlan>),
    Quit,
}

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
    Marked,
}

impl Filter {
    pub fn next(self) -> Filter {
        use Filter::*;
        match self {
            All => Changes,
            Changes => Create,
            Create => Update,
            Update => InSync,
            InSync => Prune,
            Prune => Error,
            Error => Marked,
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
    ApplyConfirm {
        items: Vec<ApplyItem>,
        dry_run: Option<Vec<ObjectResult>>,
    },
    DeleteConfirm {
        objects: Vec<ObjectPlan>,
        typed: String,
        /// `c` cycles Background → Foreground → Orphan.
        propagation: Propagation,
    },
    PruneStep {
        /// Copies, not indices: a reload while stepping must not shift them.
        candidates: Vec<ObjectPlan>,
        pos: usize,
        choices: Vec<PruneChoice>,
    },
    PruneConfirm {
        objects: Vec<ObjectPlan>,
    },
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
}

/// Screen areas, computed the same way for rendering and for mouse hits.
#[derive(Debug, Clone, Copy, Default)]
pub struct Areas {
    pub header: Rect,
    pub list: Rect,
    pub detail: Rect,
    pub log: Rect,
    pub status: Rect,
}

/// `wide_detail`: the field pane has focus, so the list gives it room.
pub fn areas(size: Rect, show_log: bool, wide_detail: bool) -> Areas {
    let h = size.height;
    let header = Rect::new(size.x, size.y, size.width, 1.min(h));
    let status_y = size.y + h.saturating_sub(1);
    let status = Rect::new(size.x, status_y, size.width, 1.min(h));
    let body_h = h.saturating_sub(2);
    let log_h = if show_log {
        (body_h / 3).max(3).min(body_h)
    } else {
        0
    };
    let main_h = body_h - log_h;
    let list_w = if wide_detail {
        (size.width / 4).clamp(20.min(size.width), 32.min(size.width))
    } else if size.width >= 120 {
        size.width * 3 / 10
    } else {
        (size.width * 2 / 5).min(size.width)
    };
    let list = Rect::new(size.x, size.y + 1, list_w, main_h);
    let detail = Rect::new(size.x + list_w, size.y + 1, size.width - list_w, main_h);
    let log = Rect::new(size.x, size.y + 1 + main_h, size.width, log_h);
    Areas {
        header,
        list,
        detail,
        log,
        status,
    }
}

type ObjectId = (String, String, Option<String>, String);

/// A stable identity for an object across reloads.
pub fn object_key(o: &ObjectPlan) -> String {
    format!(
        "{}/{} {}/{}",
        o.api_version,
        o.kind,
        o.namespace.as_deref().unwrap_or(""),
        o.name
    )
}

/// The field table's rows, as the cursor visits them: the changes apply
/// sends (set, clear) first, then (when shown) the kept fields, each group
/// as a path tree.
pub fn field_rows(o: &ObjectPlan, show_kept: bool) -> Vec<&crate::merge::FieldChange> {
    super::fieldtable::ordered(o, show_kept)
}

fn real_clock() -> String {
    jiff::Zoned::now().strftime("%H:%M:%S").to_string()
}

pub struct App {
    pub opts: Options,
    pub plan: Plan,
    /// A plan against live state has been loaded. Until then the list shows
    /// the manifests alone and nothing destructive is offered.
    pub live_known: bool,
    /// `Effect::Connect` is under way.
    pub connecting: bool,
    /// Why connecting or the first load failed (no live state known): shown
    /// in place of the field pane; `r` retries.
    pub failure: Option<String>,
    /// The server the engine talks to, named while waiting.
    pub server: Option<Server>,
    /// When the wait for live state began, and how long it has lasted (as
    /// of the last tick).
    pub waiting_since: Option<Instant>,
    pub waited: Duration,
    /// Time source for the wait (tests use a fixed one).
    pub now: fn() -> Instant,
    pub loading: bool,
    pub progress: Option<Progress>,
    pub rows: Vec<Row>,
    /// How many objects `rows` shows (kept by `rebuild`, not counted per frame).
    pub shown: usize,
    pub counts: Counts,
    /// Index into `rows`; always an `Object` row when any exists.
    pub cursor: usize,
    pub list_scroll: usize,
    pub focus: Focus,
    pub group: GroupBy,
    pub filter: Filter,
    pub search: String,
    /// True while typing a search.
    pub searching: bool,
    pub yaml: bool,
    pub field_cursor: usize,
    pub field_scroll: usize,
    pub yaml_scroll: usize,
    /// The field table lists the fields apply keeps (`K`).
    pub show_kept: bool,
    /// The YAML view shows unchanged runs whole (`z`).
    pub yaml_unfold: bool,
    /// The YAML view shows the last-applied annotation whole (`L`).
    pub yaml_last_applied: bool,
    /// Bumped on every load: a cached view of an older plan is stale.
    pub plan_gen: u64,
    /// The YAML view of one object, built once, not on every frame.
    pub yaml_cache: std::cell::RefCell<Option<super::yamlview::Cached>>,
    pub marked: BTreeSet<String>,
    /// Field changes left out of a partial apply, per object key.
    pub excluded: BTreeMap<String, BTreeSet<String>>,
    /// `clear` rows released (`R`) instead of cleared, per object key:
    /// apply drops them from last-applied and keeps their live value.
    pub released: BTreeMap<String, BTreeSet<String>>,
    /// Prune candidates queued in prune mode (shown as `x`).
    pub queued_delete: BTreeSet<String>,
    pub popup: Option<Popup>,
    /// Rows the open dialog's body is scrolled by (when it does not fit).
    pub popup_scroll: u16,
    pub show_log: bool,
    pub log: Vec<LogEntry>,
    /// What is under way, for the status line.
    pub pending: Vec<String>,
    pub last_result: Option<String>,
    pub spinner: usize,
    pub size: Rect,
    /// Time source for log entries (tests use a fixed one).
    pub clock: fn() -> String,
}

impl App {
    pub fn new(opts: Options) -> App {
        App {
            opts,
            plan: Plan::default(),
            live_known: false,
            connecting: false,
            failure: None,
            server: None,
            waiting_since: None,
            waited: Duration::ZERO,
            now: Instant::now,
            loading: false,
            progress: None,
            rows: Vec::new(),
            shown: 0,
            counts: Counts::default(),
            cursor: 0,
            list_scroll: 0,
            focus: Focus::List,
            group: GroupBy::Namespace,
            filter: Filter::All,
            search: String::new(),
            searching: false,
            yaml: false,
            field_cursor: 0,
            field_scroll: 0,
            yaml_scroll: 0,
            show_kept: false,
            yaml_unfold: false,
            yaml_last_applied: false,
            plan_gen: 0,
            yaml_cache: std::cell::RefCell::new(None),
            marked: BTreeSet::new(),
            excluded: BTreeMap::new(),
            released: BTreeMap::new(),
            queued_delete: BTreeSet::new(),
            popup: None,
            popup_scroll: 0,
            show_log: false,
            log: Vec::new(),
            pending: Vec::new(),
            last_result: None,
            spinner: 0,
            size: Rect::new(0, 0, 80, 24),
            clock: real_clock,
        }
    }

    /// Whether a spinner is on screen, so a tick changes the frame. Idle
    /// ticks need no redraw (the YAML view's diff is costly to rebuild).
    pub fn animating(&self) -> bool {
        self.loading
            || self.connecting
            || !self.pending.is_empty()
            || matches!(self.popup, Some(Popup::ApplyConfirm { dry_run: None, .. }))
    }

    /// The effects to run when the app starts: read the manifests, and
    /// connect (the first load follows once connected).
    pub fn start(&mut self) -> Vec<Effect> {
        self.begin_load()
    }

    /// Whether live state is being waited for (connecting or the first load).
    pub fn waiting(&self) -> bool {
        !self.live_known && (self.connecting || self.loading)
    }

    /// The selected object, if any.
    pub fn selected(&self) -> Option<&ObjectPlan> {
        match self.rows.get(self.cursor) {
            Some(Row::Object(i)) => self.plan.objects.get(*i),
            _ => None,
        }
    }

    pub fn is_excluded(&self, o: &ObjectPlan, path: &str) -> bool {
        self.excluded
            .get(&object_key(o))
            .is_some_and(|s| s.contains(path))
    }

    /// Whether the `clear` row `path` of `o` is released (`R`).
    pub fn is_released(&self, o: &ObjectPlan, path: &str) -> bool {
        self.released
            .get(&object_key(o))
            .is_some_and(|s| s.contains(path))
    }

    pub fn areas(&self) -> Areas {
        areas(self.size, self.show_log, self.focus == Focus::Fields)
    }

    /// Rows of the list pane that fit (inside the border).
    fn list_page(&self) -> usize {
        (self.areas().list.height.saturating_sub(2) as usize).max(1)
    }

    fn detail_page(&self) -> usize {
        (self.areas().detail.height.saturating_sub(4) as usize).max(1)
    }

    fn matches(&self, o: &ObjectPlan) -> bool {
        let status_ok = match self.filter {
            Filter::All => true,
            Filter::Changes => matches!(
                o.action,
                ObjectAction::Create | ObjectAction::Update | ObjectAction::Prune
            ),
            Filter::Create => o.action == ObjectAction::Create,
            Filter::Update => o.action == ObjectAction::Update,
            Filter::InSync => o.action == ObjectAction::Unchanged,
            Filter::Prune => o.action == ObjectAction::Prune,
            Filter::Error => o.action == ObjectAction::Error || !o.warnings.is_empty(),
            Filter::Marked => self.marked.contains(&object_key(o)),
        };
        if !status_ok {
            return false;
        }
        if self.search.is_empty() {
            return true;
        }
        let hay = format!(
            "{} {}/{}",
            o.kind,
            o.namespace.as_deref().unwrap_or(""),
            o.name
        )
        .to_lowercase();
        hay.contains(&self.search.to_lowercase())
    }

    /// Rebuild the list rows and counts, keeping the selection on the same object.
    pub fn rebuild(&mut self) {
        let keep = self.selected_id();
        self.rebuild_keeping(keep);
    }

    /// Identity of the selected object (apiVersion, kind, namespace, name).
    fn selected_id(&self) -> Option<ObjectId> {
        self.selected().map(|o| {
            (
                o.api_version.clone(),
                o.kind.clone(),
                o.namespace.clone(),
                o.name.clone(),
            )
        })
    }

    /// Rebuild with the cursor on `keep` when it is still listed.
    fn rebuild_keeping(&mut self, keep: Option<ObjectId>) {
        let mut counts = Counts::default();
        for o in &self.plan.objects {
            match o.action {
                ObjectAction::Create => counts.create += 1,
                ObjectAction::Update => counts.update += 1,
                ObjectAction::Unchanged => counts.in_sync += 1,
                ObjectAction::Prune => counts.prune += 1,
                ObjectAction::Error => counts.error += 1,
            }
        }
        self.counts = counts;
        let group = self.group;
        fn group_of(group: GroupBy, o: &ObjectPlan) -> &str {
            match group {
                GroupBy::Namespace => o.namespace.as_deref().unwrap_or("(cluster)"),
                GroupBy::Kind => o.kind.as_str(),
            }
        }
        let mut idx: Vec<(&str, usize)> = self
            .plan
            .objects
            .iter()
            .enumerate()
            .filter(|(_, o)| self.matches(o))
            .map(|(i, o)| (group_of(group, o), i))
            .collect();
        // Stable: groups sorted, objects in plan order within a group.
        idx.sort_by(|a, b| a.0.cmp(b.0));
        let mut rows = Vec::with_capacity(idx.len() + 8);
        let mut last: Option<&str> = None;
        for (g, i) in &idx {
            if last != Some(*g) {
                rows.push(Row::Group(g.to_string()));
                last = Some(*g);
            }
            rows.push(Row::Object(*i));
        }
        let shown = idx.len();
        self.shown = shown;
        self.rows = rows;
        let found = keep.and_then(|(av, kind, ns, name)| {
            self.rows.iter().position(|r| match r {
                Row::Object(i) => {
                    let o = &self.plan.objects[*i];
                    o.name == name && o.kind == kind && o.namespace == ns && o.api_version == av
                }
                Row::Group(_) => false,
            })
        });
        match found {
            Some(p) => self.cursor = p,
            None => {
                self.cursor = self.cursor.min(self.rows.len().saturating_sub(1));
                self.snap_cursor(true);
            }
        }
        self.clamp_fields();
        self.scroll_to_cursor();
    }

    /// Move the cursor off a group header.
    fn snap_cursor(&mut self, forward: bool) {
        if matches!(self.rows.get(self.cursor), Some(Row::Object(_))) {
            return;
        }
        let next = if forward {
            (self.cursor..self.rows.len())
                .find(|&i| matches!(self.rows[i], Row::Object(_)))
                .or_else(|| {
                    (0..self.cursor)
                        .rev()
                        .find(|&i| matches!(self.rows[i], Row::Object(_)))
                })
        } else {
            (0..=self.cursor.min(self.rows.len().saturating_sub(1)))
                .rev()
                .find(|&i| matches!(self.rows.get(i), Some(Row::Object(_))))
                .or_else(|| {
                    (self.cursor..self.rows.len()).find(|&i| matches!(self.rows[i], Row::Object(_)))
                })
        };
        self.cursor = next.unwrap_or(0);
    }

    fn scroll_to_cursor(&mut self) {
        let page = self.list_page();
        // Keep a group header visible above the first object.
        let top =
            if self.cursor > 0 && matches!(self.rows.get(self.cursor - 1), Some(Row::Group(_))) {
                self.cursor - 1
            } else {
                self.cursor
            };
        if top < self.list_scroll {
            self.list_scroll = top;
        } else if self.cursor >= self.list_scroll + page {
            self.list_scroll = self.cursor + 1 - page;
        }
        let max = self.rows.len().saturating_sub(page);
        self.list_scroll = self.list_scroll.min(max);
    }

    fn move_cursor(&mut self, delta: isize) {
        if self.rows.is_empty() {
            return;
        }
        let last = self.rows.len() as isize - 1;
        let mut pos = self.cursor as isize;
        let step = delta.signum();
        let mut remaining = delta.abs();
        while remaining > 0 {
            let mut next = pos + step;
            while (0..=last).contains(&next) && matches!(self.rows[next as usize], Row::Group(_)) {
                next += step;
            }
            if !(0..=last).contains(&next) {
                break;
            }
            pos = next;
            remaining -= 1;
        }
        self.set_cursor(pos as usize);
    }

    fn set_cursor(&mut self, pos: usize) {
        let before = self.cursor;
        self.cursor = pos.min(self.rows.len().saturating_sub(1));
        self.snap_cursor(self.cursor >= before);
        if self.cursor != before {
            self.field_cursor = 0;
            self.field_scroll = 0;
            self.yaml_scroll = 0;
        }
        self.scroll_to_cursor();
    }

    /// Field rows of the selected object that a cursor can sit on.
    fn field_count(&self) -> usize {
        self.selected()
            .map_or(0, |o| field_rows(o, self.show_kept).len())
    }

    fn clamp_fields(&mut self) {
        let n = self.field_count();
        self.field_cursor = self.field_cursor.min(n.saturating_sub(1));
        self.field_scroll = self.field_scroll.min(self.field_cursor);
    }

    fn move_field(&mut self, delta: isize) {
        let n = self.field_count();
        if n == 0 {
            return;
        }
        let pos = (self.field_cursor as isize + delta).clamp(0, n as isize - 1) as usize;
        self.set_field_cursor(pos);
    }

    /// Put the field cursor on row `pos`, scrolled (in table lines, as
    /// the table is drawn) so that the row shows.
    fn set_field_cursor(&mut self, pos: usize) {
        self.field_cursor = pos;
        let (Some(o), Some((w, h))) = (self.selected(), super::ui::field_table_size(self)) else {
            return;
        };
        let l = super::fieldtable::layout(o, self.show_kept, w);
        self.field_scroll = super::fieldtable::scroll_for(&l, pos, self.field_scroll, h);
    }

    /// `n` / `N` in the field table: the next / previous row that reverts
    /// a drift.
    fn next_drift(&mut self, forward: bool) {
        let Some(o) = self.selected() else {
            return;
        };
        let rows = field_rows(o, self.show_kept);
        let is = |i: usize| super::fieldtable::is_drift(rows[i]);
        let found = if forward {
            (self.field_cursor + 1..rows.len()).find(|&i| is(i))
        } else {
            (0..self.field_cursor.min(rows.len()))
                .rev()
                .find(|&i| is(i))
        };
        let any = (0..rows.len()).any(is);
        match found {
            Some(i) => self.set_field_cursor(i),
            None if any => {
                self.last_result = Some(format!(
                    "no drift row {} this one",
                    if forward { "after" } else { "before" }
                ))
            }
            None => self.last_result = Some("no drift: nothing changed in the cluster".into()),
        }
    }

    /// `K`: show or hide the kept rows, the cursor staying on its field.
    fn toggle_kept(&mut self) {
        let path = self.selected().and_then(|o| {
            field_rows(o, self.show_kept)
                .get(self.field_cursor)
                .map(|f| f.path.clone())
        });
        self.show_kept = !self.show_kept;
        let pos = self
            .selected()
            .zip(path)
            .and_then(|(o, p)| {
                field_rows(o, self.show_kept)
                    .iter()
                    .position(|f| f.path == p)
            })
            .unwrap_or(0);
        self.field_scroll = 0;
        self.set_field_cursor(pos);
    }

    fn log_entry(&mut self, ok: bool, text: String) {
        let time = (self.clock)();
        self.log.push(LogEntry { time, ok, text });
    }

    /// `r` and the start: reload, or (no live state known yet) connect
    /// again and read everything from the start.
    fn begin_load(&mut self) -> Vec<Effect> {
        if self.loading || self.connecting {
            return Vec::new();
        }
        if !self.live_known {
            self.connecting = true;
            self.failure = None;
            self.progress = None;
            self.waiting_since = Some((self.now)());
            self.waited = Duration::ZERO;
            self.pending.push("connecting".to_string());
            return vec![Effect::ReadManifests, Effect::Connect];
        }
        self.start_load()
    }

    fn start_load(&mut self) -> Vec<Effect> {
        self.loading = true;
        self.progress = None;
        self.pending.push("loading".to_string());
        vec![Effect::Load]
    }

    fn finish(&mut self, what: &str) {
        if let Some(p) = self.pending.iter().position(|p| p == what) {
            self.pending.remove(p);
        }
    }

    /// The single transition function.
    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        match msg {
            Msg::Key(k) => self.on_key(k),
            Msg::Mouse(m) => {
                self.on_mouse(m);
                Vec::new()
            }
            Msg::Resize(w, h) => {
                self.size = Rect::new(0, 0, w, h);
                self.scroll_to_cursor();
                Vec::new()
            }
            Msg::Tick => {
                self.spinner = self.spinner.wrapping_add(1);
                if let Some(since) = self.waiting_since {
                    self.waited = (self.now)().saturating_duration_since(since);
                }
                Vec::new()
            }
            Msg::Connected(result) => {
                if !self.connecting {
                    return Vec::new();
                }
                self.connecting = false;
                self.finish("connecting");
                match result {
                    Ok(()) => self.start_load(),
                    Err(e) => {
                        self.log_entry(false, format!("connecting failed: {e}"));
                        self.failure = Some(e);
                        Vec::new()
                    }
                }
            }
            Msg::Manifests(result) => {
                // Live state came first: its plan has these rows and more.
                if self.live_known {
                    return Vec::new();
                }
                match result {
                    Ok(plan) => {
                        let keep = self.selected_id();
                        self.plan = plan;
                        self.plan_gen += 1;
                        self.rebuild_keeping(keep);
                    }
                    Err(e) => self.log_entry(false, format!("reading the manifests failed: {e}")),
                }
                Vec::new()
            }
            Msg::Progress(p) => {
                // Progress can trail the load's result; only a running load shows it.
                if self.loading {
                    self.progress = Some(p);
                }
                Vec::new()
            }
            Msg::Loaded(result) => {
                self.loading = false;
                self.progress = None;
                self.finish("loading");
                match result {
                    Ok(plan) => {
                        self.live_known = true;
                        self.connecting = false;
                        self.finish("connecting");
                        self.failure = None;
                        self.waiting_since = None;
                        // Rows index the old plan: take the selection first.
                        let keep = self.selected_id();
                        self.plan = plan;
                        self.plan_gen += 1;
                        // Forget marks and exclusions of objects that are gone.
                        let keys: BTreeSet<String> =
                            self.plan.objects.iter().map(object_key).collect();
                        self.marked.retain(|k| keys.contains(k));
                        self.excluded.retain(|k, _| keys.contains(k));
                        self.released.retain(|k, _| keys.contains(k));
                        if !matches!(
                            self.popup,
                            Some(Popup::PruneStep { .. } | Popup::PruneConfirm { .. })
                        ) {
                            self.queued_delete.clear();
                        }
                        self.rebuild_keeping(keep);
                    }
                    Err(e) => {
                        self.log_entry(false, format!("load failed: {e}"));
                        if self.live_known {
                            self.last_result = Some(format!("load failed: {e}"));
                        } else {
                            // Shown in place; the status line says what to do.
                            self.failure = Some(e);
                        }
                    }
                }
                Vec::new()
            }
            Msg::DryRunDone(results) => {
                if let Some(Popup::ApplyConfirm { items, dry_run, .. }) = &mut self.popup {
                    // A stale run (for a dialog closed since) names none of
                    // this dialog's objects: drop it. Anything else is shown
                    // whole, so the dialog never waits for a result that came.
                    let names: Vec<String> = items.iter().map(|i| i.plan.display_name()).collect();
                    let same =
                        results.is_empty() || results.iter().any(|r| names.contains(&r.object));
                    if same && dry_run.is_none() {
                        *dry_run = Some(results);
                    }
                }
                self.finish("server dry run");
                Vec::new()
            }
            Msg::Applied(results) => self.on_results("applying", "applied", results),
            Msg::Deleted(results) => self.on_results("deleting", "deleted", results),
            Msg::Pruned(results) => self.on_results("pruning", "pruned", results),
        }
    }

    fn on_results(&mut self, pending: &str, verb: &str, results: Vec<ObjectResult>) -> Vec<Effect> {
        self.finish(pending);
        let ok = results.iter().filter(|r| r.ok).count();
        let unknown = results.iter().filter(|r| r.unknown).count();
        let failed = results.len() - ok - unknown;
        for r in &results {
            if r.ok {
                self.log_entry(true, format!("{}: {}", r.object, r.message));
            } else if r.unknown {
                self.log_entry(false, format!("{} unknown: {}", r.object, r.message));
            } else {
                self.log_entry(false, format!("{} failed: {}", r.object, r.message));
            }
        }
        // Marks of objects the engine reported done are cleared; failed ones stay.
        let done: BTreeSet<&str> = results
            .iter()
            .filter(|r| r.ok)
            .map(|r| r.object.as_str())
            .collect();
        let keys: Vec<String> = self
            .plan
            .objects
            .iter()
            .filter(|o| done.contains(o.display_name().as_str()))
            .map(object_key)
            .collect();
        for k in keys {
            self.marked.remove(&k);
            self.excluded.remove(&k);
            self.released.remove(&k);
        }
        let mut summary = format!("{verb} {ok} object(s)");
        if failed > 0 {
            summary.push_str(&format!(", {failed} failed"));
        }
        // Sent without an answer: neither done nor failed (see the log).
        if unknown > 0 {
            summary.push_str(&format!(", {unknown} unknown (no answer)"));
        }
        self.last_result = Some(summary);
        self.begin_load()
    }

    fn on_mouse(&mut self, m: MouseEvent) {
        if self.popup.is_some() {
            match m.kind {
                MouseEventKind::ScrollDown => self.scroll_popup(3),
                MouseEventKind::ScrollUp => self.scroll_popup(-3),
                _ => {}
            }
            return;
        }
        let a = self.areas();
        let inside = |r: Rect| {
            m.column >= r.x && m.column < r.x + r.width && m.row >= r.y && m.row < r.y + r.height
        };
        match m.kind {
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
                let d = if m.kind == MouseEventKind::ScrollDown {
                    3
                } else {
                    -3
                };
                if inside(a.list) {
                    self.move_cursor(d);
                } else if inside(a.detail) {
                    if self.yaml {
                        self.scroll_yaml(d);
                    } else {
                        self.move_field(d);
                    }
                }
            }
            MouseEventKind::Down(MouseButton::Left) => {
                if inside(a.list) && m.row > a.list.y {
                    let row = self.list_scroll + (m.row - a.list.y - 1) as usize;
                    if matches!(self.rows.get(row), Some(Row::Object(_))) {
                        self.set_cursor(row);
                        self.focus = Focus::List;
                    }
                } else if inside(a.detail) {
                    self.focus = Focus::Fields;
                }
            }
            _ => {}
        }
    }

    fn on_key(&mut self, k: KeyEvent) -> Vec<Effect> {
        if k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c') {
            return vec![Effect::Quit];
        }
        if self.popup.is_some() {
            return self.on_popup_key(k);
        }
        if self.searching {
            match k.code {
                KeyCode::Esc => {
                    self.searching = false;
                    self.search.clear();
                    self.rebuild();
                }
                KeyCode::Enter => self.searching = false,
                KeyCode::Backspace => {
                    self.search.pop();
                    self.rebuild();
                }
                KeyCode::Char(c) => {
                    self.search.push(c);
                    self.rebuild();
                }
                _ => {}
            }
            return Vec::new();
        }
        match k.code {
            KeyCode::Char('q') => return vec![Effect::Quit],
            KeyCode::Esc => {
                if !self.search.is_empty() {
                    self.search.clear();
                    self.rebuild();
                } else if self.focus == Focus::Fields {
                    self.focus = Focus::List;
                } else {
                    return vec![Effect::Quit];
                }
            }
            KeyCode::Char('?') => self.open_popup(Popup::Help),
            KeyCode::Tab | KeyCode::BackTab => {
                self.focus = match self.focus {
                    Focus::List => Focus::Fields,
                    Focus::Fields => Focus::List,
                }
            }
            KeyCode::Enter if self.focus == Focus::List => self.focus = Focus::Fields,
            KeyCode::Char('j') | KeyCode::Down => self.move_in_focus(1),
            KeyCode::Char('k') | KeyCode::Up => self.move_in_focus(-1),
            KeyCode::PageDown => {
                let p = self.page();
                self.move_in_focus(p)
            }
            KeyCode::PageUp => {
                let p = self.page();
                self.move_in_focus(-p)
            }
            KeyCode::Char('g') | KeyCode::Home => self.jump(false),
            KeyCode::Char('G') | KeyCode::End => self.jump(true),
            KeyCode::Char(' ') => self.toggle_mark(),
            KeyCode::Char('y') => {
                self.yaml = !self.yaml;
                self.yaml_scroll = 0;
            }
            KeyCode::Char('K') => self.toggle_kept(),
            KeyCode::Char('R') if self.focus == Focus::Fields && !self.yaml => {
                self.toggle_release()
            }
            // Both act on the YAML view, and open it.
            KeyCode::Char('z') => {
                self.yaml_unfold = !self.yaml_unfold || !self.yaml;
                self.yaml = true;
                self.yaml_scroll = 0;
            }
            KeyCode::Char('L') => {
                self.yaml_last_applied = !self.yaml_last_applied || !self.yaml;
                self.yaml = true;
                self.yaml_scroll = 0;
            }
            KeyCode::Char('t') => {
                self.group = match self.group {
                    GroupBy::Namespace => GroupBy::Kind,
                    GroupBy::Kind => GroupBy::Namespace,
                };
                self.rebuild();
            }
            KeyCode::Char('f') if !self.live_known => {
                self.last_result = Some(self.needs_live_state("the status filter"))
            }
            KeyCode::Char('f') => {
                self.filter = self.filter.next();
                self.rebuild();
            }
            KeyCode::Char('/') => {
                self.searching = true;
                self.search.clear();
                self.focus = Focus::List;
                self.rebuild();
            }
            KeyCode::Char('l') => self.show_log = !self.show_log,
            KeyCode::Char('n') if self.focus == Focus::Fields && !self.yaml => {
                self.next_drift(true)
            }
            KeyCode::Char('N') if self.focus == Focus::Fields && !self.yaml => {
                self.next_drift(false)
            }
            KeyCode::Char('n') => self.next_change(true),
            KeyCode::Char('N') => self.next_change(false),
            KeyCode::Char('r') => return self.begin_load(),
            KeyCode::Char('a' | 'D' | 'p') if !self.live_known => {
                let what = match k.code {
                    KeyCode::Char('a') => "apply",
                    KeyCode::Char('D') => "delete",
                    _ => "prune",
                };
                self.last_result = Some(self.needs_live_state(what));
            }
            KeyCode::Char('a') => return self.open_apply(),
            KeyCode::Char('D') => self.open_delete(),
            KeyCode::Char('p') => self.open_prune(),
            _ => {}
        }
        Vec::new()
    }

    /// Why `what` is not offered before live state is known.
    fn needs_live_state(&self, what: &str) -> String {
        if self.failure.is_some() {
            format!("{what} needs the live state, which could not be read: r retries")
        } else {
            format!("{what} needs the live state, which is still loading")
        }
    }

    fn page(&self) -> isize {
        match self.focus {
            Focus::List => self.list_page() as isize,
            Focus::Fields => self.detail_page() as isize,
        }
    }

    fn move_in_focus(&mut self, d: isize) {
        match self.focus {
            Focus::List => self.move_cursor(d),
            Focus::Fields if self.yaml => self.scroll_yaml(d),
            Focus::Fields => self.move_field(d),
        }
    }

    /// `g` / `G`: the first or last row of the focused pane.
    fn jump(&mut self, to_end: bool) {
        match self.focus {
            Focus::List => {
                let pos = if to_end {
                    self.rows.len().saturating_sub(1)
                } else {
                    0
                };
                self.set_cursor(pos);
                self.snap_cursor(!to_end);
                self.scroll_to_cursor();
            }
            Focus::Fields if self.yaml => self.scroll_yaml(if to_end {
                isize::MAX / 2
            } else {
                isize::MIN / 2
            }),
            Focus::Fields => {
                let n = self.field_count() as isize;
                self.move_field(if to_end { n } else { -n })
            }
        }
    }

    /// Scroll the YAML view, clamped to its length (computed only here, on a key).
    fn scroll_yaml(&mut self, d: isize) {
        let lines = self
            .selected()
            .map_or(0, |o| super::yamlview::view(self, o).len());
        let page = self.areas().detail.height.saturating_sub(2) as usize;
        let max = lines.saturating_sub(page);
        let d = d.clamp(-(max as isize) - 1, max as isize + 1);
        self.yaml_scroll = (self.yaml_scroll as isize + d).clamp(0, max as isize) as usize;
    }

    fn toggle_mark(&mut self) {
        let Some(o) = self.selected().cloned() else {
            return;
        };
        let key = object_key(&o);
        match self.focus {
            Focus::List => {
                if !self.marked.remove(&key) {
                    self.marked.insert(key);
                }
            }
            Focus::Fields => {
                let rows = field_rows(&o, self.show_kept);
                let Some(f) = rows.get(self.field_cursor) else {
                    return;
                };
                // Keep rows are not sent: nothing to include or exclude.
                if f.action == FieldAction::Keep {
                    self.last_result = Some(format!("{}: kept fields are not sent", f.path));
                    return;
                }
                let path = f.path.clone();
                let set = self.excluded.entry(key.clone()).or_default();
                if !set.remove(&path) {
                    set.insert(path.clone());
                    // An excluded row is not sent at all: no longer released.
                    unset(&mut self.released, &key, &path);
                }
                if set.is_empty() {
                    self.excluded.remove(&key);
                }
            }
        }
    }

    /// `R` on a `clear` row: release it (apply drops it from last-applied,
    /// sends no deletion, the live value stays) or clear it again. Refused,
    /// with the reason, where the core refuses a release.
    fn toggle_release(&mut self) {
        let Some(o) = self.selected().cloned() else {
            return;
        };
        let key = object_key(&o);
        let Some(path) = field_rows(&o, self.show_kept)
            .get(self.field_cursor)
            .map(|f| f.path.clone())
        else {
            return;
        };
        if unset(&mut self.released, &key, &path) {
            self.last_result = Some(format!("{path}: clear (apply removes it)"));
            return;
        }
        if let Some(why) = crate::plan::release_refusal(&o, &path) {
            self.last_result = Some(why);
            return;
        }
        self.released
            .entry(key.clone())
            .or_default()
            .insert(path.clone());
        // Releasing is sending: the row is included again.
        unset(&mut self.excluded, &key, &path);
        self.last_result = Some(format!(
            "{path}: released (apply keeps the live value, drops it from last-applied)"
        ));
    }

    fn next_change(&mut self, forward: bool) {
        let has_change = |r: &Row, plan: &Plan| match r {
            Row::Object(i) => matches!(
                plan.objects[*i].action,
                ObjectAction::Create | ObjectAction::Update | ObjectAction::Prune
            ),
            Row::Group(_) => false,
        };
        let n = self.rows.len();
        let found = if forward {
            (self.cursor + 1..n).find(|&i| has_change(&self.rows[i], &self.plan))
        } else {
            (0..self.cursor)
                .rev()
                .find(|&i| has_change(&self.rows[i], &self.plan))
        };
        if let Some(i) = found {
            self.set_cursor(i);
        }
    }

    /// The objects `a`, `D` act on: the marked ones, else the selected one.
    fn targets(&self) -> Vec<&ObjectPlan> {
        let marked: Vec<&ObjectPlan> = self
            .plan
            .objects
            .iter()
            .filter(|o| self.marked.contains(&object_key(o)))
            .collect();
        if !marked.is_empty() {
            return marked;
        }
        self.selected().into_iter().collect()
    }

    /// What an apply of these objects sends, honouring excluded and
    /// released fields (as `apply --plan` does with `"action": "release"`).
    pub fn apply_items(&self) -> Vec<ApplyItem> {
        self.targets()
            .into_iter()
            .filter(|o| matches!(o.action, ObjectAction::Create | ObjectAction::Update))
            .map(|o| {
                let key = object_key(o);
                // Only rows the current plan can still release.
                let released_fields: Vec<String> = self
                    .released
                    .get(&key)
                    .into_iter()
                    .flatten()
                    .filter(|p| crate::plan::release_refusal(o, p).is_none())
                    .cloned()
                    .collect();
                let accepted_fields = self.excluded.get(&key).map(|ex| {
                    o.fields
                        .iter()
                        .filter(|f| f.action != FieldAction::Keep && !ex.contains(&f.path))
                        .filter(|f| !released_fields.contains(&f.path))
                        .map(|f| f.path.clone())
                        .collect()
                });
                ApplyItem {
                    plan: o.clone(),
                    accepted_fields,
                    released_fields,
                }
            })
            // Every change excluded: nothing of this object is to be sent.
            .filter(|i: &ApplyItem| {
                !i.released_fields.is_empty()
                    || i.accepted_fields.as_ref().is_none_or(|a| !a.is_empty())
            })
            .collect()
    }

    fn open_apply(&mut self) -> Vec<Effect> {
        let items = self.apply_items();
        if items.is_empty() {
            self.last_result = Some(
                "nothing to apply (select a create or update with included changes)".to_string(),
            );
            return Vec::new();
        }
        self.open_popup(Popup::ApplyConfirm {
            items: items.clone(),
            dry_run: None,
        });
        self.pending.push("server dry run".to_string());
        vec![Effect::DryRun(items)]
    }

    fn open_delete(&mut self) {
        let objects: Vec<ObjectPlan> = self
            .targets()
            .into_iter()
            // Objects still to be created are not in the cluster.
            .filter(|o| {
                o.live.is_some()
                    || matches!(
                        o.action,
                        ObjectAction::Update | ObjectAction::Unchanged | ObjectAction::Prune
                    )
            })
            .cloned()
            .collect();
        if objects.is_empty() {
            self.last_result =
                Some("nothing to delete (the object is not in the cluster)".to_string());
            return;
        }
        self.open_popup(Popup::DeleteConfirm {
            objects,
            typed: String::new(),
            propagation: Propagation::Background,
        });
    }

    fn open_prune(&mut self) {
        if let Some(block) = &self.plan.prune_skipped {
            self.open_popup(Popup::Notice {
                title: "Prune disabled",
                text: format!(
                    "{block}.\n\nAn object in a manifest kapply cannot read would look removed, \
                     and pruning would delete it. Fix the rows marked ! and press r to reload."
                ),
            });
            return;
        }
        let candidates: Vec<ObjectPlan> = self
            .plan
            .objects
            .iter()
            .filter(|o| o.action == ObjectAction::Prune)
            .cloned()
            .collect();
        let Some(first) = candidates.first() else {
            self.last_result = Some("no prune candidates".to_string());
            return;
        };
        self.queued_delete.clear();
        self.select_object(&object_key(first));
        self.open_popup(Popup::PruneStep {
            candidates,
            pos: 0,
            choices: Vec::new(),
        });
    }

    /// Put the cursor on the object with this key, if it is listed.
    fn select_object(&mut self, key: &str) {
        let found = self.rows.iter().position(|r| match r {
            Row::Object(i) => object_key(&self.plan.objects[*i]) == key,
            Row::Group(_) => false,
        });
        if let Some(p) = found {
            self.set_cursor(p);
        }
    }

    /// Show a dialog from its top.
    fn open_popup(&mut self, p: Popup) {
        self.popup = Some(p);
        self.popup_scroll = 0;
    }

    /// Scroll the open dialog's body, within what it has to show.
    fn scroll_popup(&mut self, d: i32) {
        let (max, _) = super::ui::popup_scroll_range(self);
        let to = (i32::from(self.popup_scroll) + d).clamp(0, i32::from(max));
        self.popup_scroll = u16::try_from(to).unwrap_or(0);
    }

    fn on_popup_key(&mut self, k: KeyEvent) -> Vec<Effect> {
        // No dialog uses j/k or the page keys for anything else.
        let page = i32::from(super::ui::popup_scroll_range(self).1);
        let d = match k.code {
            KeyCode::Char('j') | KeyCode::Down => 1,
            KeyCode::Char('k') | KeyCode::Up => -1,
            KeyCode::PageDown => page,
            KeyCode::PageUp => -page,
            KeyCode::Home => -i32::from(u16::MAX),
            KeyCode::End => i32::from(u16::MAX),
            _ => 0,
        };
        if d != 0 {
            self.scroll_popup(d);
            return Vec::new();
        }
        let Some(popup) = self.popup.take() else {
            return Vec::new();
        };
        match popup {
            Popup::Help => match k.code {
                KeyCode::Esc | KeyCode::Char('?') | KeyCode::Char('q') | KeyCode::Enter => {}
                _ => self.popup = Some(Popup::Help),
            },
            Popup::Notice { title, text } => match k.code {
                KeyCode::Esc | KeyCode::Char('q') | KeyCode::Enter | KeyCode::Char('p') => {}
                _ => self.popup = Some(Popup::Notice { title, text }),
            },
            Popup::ApplyConfirm { items, dry_run } => match (k.code, &dry_run) {
                // The dialog promises the server's answer before anything is
                // written: Enter waits for it.
                (KeyCode::Enter, None) => {
                    self.last_result = Some(
                        "waiting for the server dry run: Enter applies once it answers".into(),
                    );
                    self.popup = Some(Popup::ApplyConfirm { items, dry_run });
                }
                (KeyCode::Enter, Some(_)) => {
                    self.pending.push("applying".to_string());
                    return vec![Effect::Apply(items)];
                }
                // Ask the server again (after a refusal or a failure).
                (KeyCode::Char('r'), Some(_)) => {
                    self.popup = Some(Popup::ApplyConfirm {
                        items: items.clone(),
                        dry_run: None,
                    });
                    self.pending.push("server dry run".to_string());
                    return vec![Effect::DryRun(items)];
                }
                (KeyCode::Esc | KeyCode::Char('q'), _) => self.finish("server dry run"),
                _ => self.popup = Some(Popup::ApplyConfirm { items, dry_run }),
            },
            Popup::DeleteConfirm {
                objects,
                mut typed,
                mut propagation,
            } => {
                match k.code {
                    KeyCode::Esc => return vec![],
                    KeyCode::Enter => {
                        let confirmed =
                            objects.len() == 1 || typed.trim() == objects.len().to_string();
                        if confirmed {
                            self.pending.push("deleting".to_string());
                            return vec![Effect::Delete(objects, propagation)];
                        }
                    }
                    KeyCode::Backspace => {
                        typed.pop();
                    }
                    KeyCode::Char(c) if c.is_ascii_digit() && objects.len() > 1 => typed.push(c),
                    KeyCode::Char('c') => {
                        propagation = match propagation {
                            Propagation::Background => Propagation::Foreground,
                            Propagation::Foreground => Propagation::Orphan,
                            Propagation::Orphan => Propagation::Background,
                        }
                    }
                    _ => {}
                }
                self.popup = Some(Popup::DeleteConfirm {
                    objects,
                    typed,
                    propagation,
                });
            }
            Popup::PruneStep {
                candidates,
                pos,
                mut choices,
            } => {
                let choice = match k.code {
                    KeyCode::Esc | KeyCode::Char('q') => {
                        self.queued_delete.clear();
                        return Vec::new();
                    }
                    KeyCode::Char('y') => PruneChoice::Prune,
                    KeyCode::Char('n') => PruneChoice::Keep,
                    KeyCode::Char('s') => PruneChoice::Skip,
                    _ => {
                        self.popup = Some(Popup::PruneStep {
                            candidates,
                            pos,
                            choices,
                        });
                        return Vec::new();
                    }
                };
                if choice == PruneChoice::Prune
                    && let Some(o) = candidates.get(pos)
                {
                    self.queued_delete.insert(object_key(o));
                }
                choices.push(choice);
                let pos = pos + 1;
                if let Some(next) = candidates.get(pos) {
                    self.select_object(&object_key(next));
                    self.open_popup(Popup::PruneStep {
                        candidates,
                        pos,
                        choices,
                    });
                } else {
                    let objects: Vec<ObjectPlan> = candidates
                        .into_iter()
                        .zip(&choices)
                        .filter(|(_, c)| **c == PruneChoice::Prune)
                        .map(|(o, _)| o)
                        .collect();
                    if objects.is_empty() {
                        self.last_result = Some("prune: nothing queued".to_string());
                    } else {
                        self.open_popup(Popup::PruneConfirm { objects });
                    }
                }
            }
            Popup::PruneConfirm { objects } => match k.code {
                KeyCode::Enter => {
                    self.pending.push("pruning".to_string());
                    return vec![Effect::Prune(objects)];
                }
                KeyCode::Esc | KeyCode::Char('q') => self.queued_delete.clear(),
                _ => self.popup = Some(Popup::PruneConfirm { objects }),
            },
        }
        Vec::new()
    }
}

/// Remove `path` from the set of `key`, dropping an emptied set; whether it was there.
fn unset(sets: &mut BTreeMap<String, BTreeSet<String>>, key: &str, path: &str) -> bool {
    let Some(set) = sets.get_mut(key) else {
        return false;
    };
    let was = set.remove(path);
    if set.is_empty() {
        sets.remove(key);
    }
    was
}
