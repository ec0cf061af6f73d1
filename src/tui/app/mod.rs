//! The TUI's state and its one transition function. `App::update` does no
//! I/O: every input arrives as a [`Msg`], every side effect leaves as an
//! [`Effect`] for the runtime to perform.

use crate::fieldpath::FieldPath;
use crate::merge::FieldAction;
use crate::objref::ObjectRef;
use crate::ops::{
    ApplyItem, Compact, Exported, Failure, LiveEvent, ObjectResult, Outcome, Propagation, Rows,
};
use crate::plan::{ObjectAction, ObjectPlan, Plan};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::tui::scroll;

mod changes;
mod confirm;
mod dialogs;
mod fields;
mod keys;
mod list;
mod live;
mod recreate;
mod serverside;

pub use crate::tui::confirm::{Confirm, Confirmed, Count, DryRun, Extra, Keys, Width};
pub use crate::tui::layout::{Areas, areas};
pub use crate::tui::msg::{Effect, Msg};
pub use crate::tui::state::{
    ChangeItem, Connection, Counts, Detail, Filter, Focus, GroupBy, Job, Jobs, Live, LoadStatus,
    LogEntry, ObjectList, Options, Popup, PruneChoice, Row, Selection, ServerSideMode,
    ServerSideState, SsaRows,
};
use crate::tui::state::{FieldKey, Streamed};
pub(crate) use crate::tui::theme::is_secret;
pub use crate::tui::theme::{CHANGED_MARK, kind_label};

impl crate::tui::theme::MarkSource for App {
    fn theme(&self) -> crate::tui::theme::Theme {
        self.opts.theme()
    }

    fn deleting(&self, o: &ObjectPlan) -> bool {
        let in_delete = matches!(&self.popup, Some(Popup::Confirm(c))
            if matches!(&c.action, Confirmed::Delete { objects, .. }
                if objects.iter().any(|d| d.name == o.name && d.kind == o.kind && d.namespace == o.namespace)));
        in_delete || self.sel.queued_delete.contains(&o.id())
    }

    fn planned(&self, o: &ObjectPlan) -> bool {
        App::planned(self, o)
    }

    fn conflicted(&self, o: &ObjectPlan) -> bool {
        self.ssa_conflicted(o)
    }
}

/// What a dialog's view takes from the app.
pub(crate) fn dialog_ctx(app: &App) -> crate::tui::dialogs::DialogCtx {
    crate::tui::dialogs::DialogCtx {
        width: app.size.width,
        pane: app.pane(),
        spinner: app.spinner,
        dry_run_progress: app.jobs.dry_run_progress,
    }
}

/// The field table's rows, as the cursor visits them: the changes apply
/// sends (set, clear) first, then (when shown) the kept fields, each group
/// as a path tree.
pub fn field_rows(o: &ObjectPlan, show_kept: bool) -> Vec<&crate::merge::FieldChange> {
    crate::tui::fieldtable::ordered(o, show_kept)
}

/// Kinds of one name in several groups (istio's and Gateway API's
/// `Gateway`): the list shows them with their group, so the rows differ.
fn ambiguous_kinds(plan: &Plan) -> BTreeSet<String> {
    // The first group seen of each kind, and whether another came since.
    let mut first: BTreeMap<&str, (&str, bool)> = BTreeMap::new();
    for o in &plan.objects {
        let group = crate::objref::split_api_version(&o.api_version).0;
        match first.get_mut(o.kind.as_str()) {
            Some((g, other)) => *other |= *g != group,
            None => {
                first.insert(o.kind.as_str(), (group, false));
            }
        }
    }
    first
        .into_iter()
        .filter(|(_, (_, other))| *other)
        .map(|(k, _)| k.to_string())
        .collect()
}

fn real_clock() -> String {
    jiff::Zoned::now().strftime("%H:%M:%S").to_string()
}

pub struct App {
    pub opts: Options,
    /// Time source for the wait (tests use a fixed one).
    pub now: fn() -> Instant,
    pub focus: Focus,
    /// Objects whose update the server refused as invalid (422: an
    /// immutable field), with its words: `F` offers to recreate them.
    pub refused: BTreeMap<ObjectRef, String>,
    pub popup: Option<Popup>,
    /// Rows the open dialog's body is scrolled by (when it does not fit).
    pub popup_scroll: u16,
    pub show_log: bool,
    pub log: Vec<LogEntry>,
    pub last_result: Option<String>,
    /// `last_result` reports a failure (or an unknown outcome): drawn as one.
    pub last_result_failed: bool,
    pub spinner: usize,
    pub size: Rect,
    /// Time source for log entries (tests use a fixed one).
    pub clock: fn() -> String,
    /// `--server-side`: the objects' conflicts and the decisions on them.
    pub ssa: ServerSideState,
    /// The object list: the plan and its rows as listed (grouped, filtered,
    /// searched), with their counts.
    pub list: ObjectList,
    /// What is selected and marked: the list's cursor, the objects and field
    /// changes marked for apply, release or delete, the field cursor.
    pub sel: Selection,
    /// The pane beside the list: which view (fields, YAML), its flags and scroll,
    /// and what it draws of the selected object, computed by `update`.
    pub detail: Detail,
    /// What is under way: the typed jobs, the load's and writes' progress.
    pub jobs: Jobs,
    /// The cluster: the server, whether live state is known (or why not), how
    /// long it has been waited for, and whether it is followed.
    pub conn: Connection,
}

impl App {
    pub fn new(opts: Options) -> App {
        App {
            opts,
            now: Instant::now,
            focus: Focus::List,
            refused: BTreeMap::new(),
            popup: None,
            popup_scroll: 0,
            show_log: false,
            log: Vec::new(),
            last_result: None,
            last_result_failed: false,
            spinner: 0,
            size: Rect::new(0, 0, 80, 24),
            clock: real_clock,
            ssa: ServerSideState::default(),
            list: ObjectList::default(),
            sel: Selection::default(),
            detail: Detail::default(),
            jobs: Jobs::default(),
            conn: Connection::default(),
        }
    }

    /// Whether a spinner is on screen, so a tick changes the frame. Idle
    /// ticks need no redraw (the YAML view's diff is costly to rebuild).
    pub fn animating(&self) -> bool {
        self.jobs.loading
            || self.jobs.connecting
            || !self.jobs.pending.is_empty()
            || matches!(&self.popup, Some(Popup::Confirm(c)) if c.waiting())
    }

    /// The effects to run when the app starts: read the manifests, and
    /// connect (the first load follows once connected).
    pub fn start(&mut self) -> Vec<Effect> {
        self.begin_load()
    }

    /// Whether live state is being waited for (connecting or the first load).
    pub fn waiting(&self) -> bool {
        !self.conn.live_known && (self.jobs.connecting || self.jobs.loading)
    }

    /// The selected object, if any, whole.
    pub fn selected(&self) -> Option<&ObjectPlan> {
        self.object(self.selected_index()?)
    }

    /// The index in `plan.objects` of the selected object.
    pub fn selected_index(&self) -> Option<usize> {
        match self.list.rows.get(self.sel.cursor) {
            Some(Row::Object(i)) => Some(*i),
            _ => None,
        }
    }

    /// Row `i` of the plan whole: a row kept small is whole once built
    /// ([`App::build`]; `update` builds the selected one), else as kept.
    pub fn object(&self, i: usize) -> Option<&ObjectPlan> {
        let row = self.list.plan.objects.get(i)?;
        match self.list.whole.get(i) {
            Some(Some(w)) => Some(w),
            _ => Some(row),
        }
    }

    /// Build row `i` whole from its compact form, if it is kept small.
    fn build(&mut self, i: usize) {
        let (Some(Some(c)), Some(row)) = (self.list.compact.get(i), self.list.plan.objects.get(i))
        else {
            return;
        };
        if matches!(self.list.whole.get(i), Some(Some(_))) {
            return;
        }
        let w = Box::new(self.rebuilt(c, row));
        if let Some(slot) = self.list.whole.get_mut(i) {
            *slot = Some(w);
            self.list.built.push(i);
        }
    }

    /// Build the selected row whole (after the cursor or the row moved).
    pub(super) fn build_selected(&mut self) {
        if let Some(i) = self.selected_index() {
            self.build(i);
        }
    }

    /// Row `i` changed: its whole form is built again if it is selected.
    fn unbuild(&mut self, i: usize) {
        if let Some(slot) = self.list.whole.get_mut(i) {
            *slot = None;
        }
        if self.selected_index() == Some(i) {
            self.build(i);
        }
    }

    /// The whole row of `lean`; server-side, with the action the
    /// server-side plan gave the lean row (rebuilding plans client-side).
    fn rebuilt(&self, c: &Compact, lean: &ObjectPlan) -> ObjectPlan {
        let mut o = c.rebuild(lean);
        if self.server_side().is_some() {
            o.action = lean.action;
            o.reverts_drift = lean.reverts_drift;
            o.warnings = lean.warnings.clone();
        }
        o
    }

    /// Row `i` whole, owned (what a dialog keeps), without keeping it built.
    pub fn object_owned(&self, i: usize) -> Option<ObjectPlan> {
        let row = self.list.plan.objects.get(i)?;
        match (self.list.compact.get(i), self.list.whole.get(i)) {
            (Some(Some(c)), Some(w)) => Some(
                w.as_ref()
                    .map_or_else(|| self.rebuilt(c, row), |w| (**w).clone()),
            ),
            _ => Some(row.clone()),
        }
    }

    /// What the selected object's field table at `width` columns is laid
    /// out for (the key of both caches below).
    fn field_key(&self, width: usize) -> Option<FieldKey> {
        let i = self.selected_index()?;
        Some((self.list.plan_gen, i, self.detail.show_kept, width))
    }

    /// The selected object's field table at `width` columns, as `update`
    /// laid it out (once per object, plan, `K` and width).
    pub fn field_layout(
        &self,
        width: usize,
    ) -> Option<std::rc::Rc<crate::tui::fieldtable::Layout>> {
        let key = self.field_key(width)?;
        match &self.detail.views.field {
            Some((k, l)) if *k == key => Some(l.clone()),
            _ => Some(std::rc::Rc::new(crate::tui::fieldtable::layout(
                self.object(key.1)?,
                self.detail.show_kept,
                width,
            ))),
        }
    }

    /// [`crate::tui::layout::tallest_detail`] of the selected object `o`,
    /// as `update` computed it.
    pub(crate) fn tallest_detail(&self, o: &ObjectPlan, width: u16) -> u16 {
        let key = self.field_key(usize::from(width));
        match (key, self.detail.views.tallest) {
            (Some(key), Some((k, h))) if k == key => h,
            _ => crate::tui::layout::tallest_detail(o, self.detail.show_kept, width),
        }
    }

    /// The width of the field table's pane inside its border.
    fn field_width(&self) -> usize {
        let area = self.areas().detail;
        usize::from(area.width.saturating_sub(2))
    }

    /// Lay out the selected object's field table and measure its tallest
    /// box, if they are not laid out for this object, plan, `K` and width.
    pub(super) fn prepare_fields(&mut self) {
        let width = self.field_width();
        let Some(key) = self.field_key(width) else {
            return;
        };
        if !matches!(&self.detail.views.field, Some((k, _)) if *k == key) {
            let l = self.object(key.1).map(|o| {
                std::rc::Rc::new(crate::tui::fieldtable::layout(
                    o,
                    self.detail.show_kept,
                    width,
                ))
            });
            self.detail.views.field = l.map(|l| (key, l));
        }
        if !matches!(self.detail.views.tallest, Some((k, _)) if k == key) {
            let h = self.object(key.1).map(|o| {
                crate::tui::layout::tallest_detail(o, self.detail.show_kept, key.3 as u16)
            });
            self.detail.views.tallest = h.map(|h| (key, h));
        }
    }

    /// Build the selected object's YAML view, if it is not built for this
    /// object, plan, `L`, `z` and colours.
    pub(super) fn prepare_yaml(&mut self) {
        let Some(o) = self.selected() else {
            return;
        };
        let c = crate::tui::yamlview::cached(o, self.yaml_shown(), self.detail.views.yaml.as_ref());
        self.detail.views.yaml = Some(c);
    }

    /// How the YAML view is shown (plan, `L`, `z`, colours).
    fn yaml_shown(&self) -> crate::tui::yamlview::Shown {
        crate::tui::yamlview::Shown {
            plan_gen: self.list.plan_gen,
            last_applied: self.detail.yaml_last_applied,
            unfold: self.detail.yaml_unfold,
            theme: self.opts.theme(),
        }
    }

    /// The selected object's YAML view lines, as `update` built them.
    pub fn yaml_lines(&self, o: &ObjectPlan) -> std::rc::Rc<Vec<ratatui::text::Line<'static>>> {
        crate::tui::yamlview::cached(o, self.yaml_shown(), self.detail.views.yaml.as_ref()).lines()
    }

    /// Compute what the view on screen draws of the selected object (the
    /// one row built whole first): the runtime draws after each update,
    /// so a frame only reads.
    fn prepare(&mut self) {
        self.build_selected();
        if !self.conn.live_known {
            return;
        }
        if self.detail.yaml {
            self.prepare_yaml();
        } else if self.server_side().is_some() {
            self.prepare_ssa();
        } else {
            self.prepare_fields();
        }
    }

    /// Replace the rows (`compact` beside them, or empty: all whole);
    /// server-side, the rows `planned` are planned server-side (the others
    /// are manifests not compared yet, or rows planned so already).
    fn set_plan(
        &mut self,
        plan: Plan,
        mut compact: Vec<Option<Compact>>,
        planned: std::ops::Range<usize>,
    ) {
        compact.resize_with(plan.objects.len(), || None);
        self.list.whole = std::iter::repeat_with(|| None)
            .take(plan.objects.len())
            .collect();
        self.list.built.clear();
        self.list.plan = plan;
        self.list.compact = compact;
        self.ssa_adjust_range(planned);
        self.list.plan_gen += 1;
        self.list.id_index = None;
        self.list.ambiguous_kinds = ambiguous_kinds(&self.list.plan);
    }

    /// Drop the rows built whole but the selected one's.
    fn drop_built(&mut self) {
        let keep = self.selected_index();
        let built = std::mem::take(&mut self.list.built);
        for i in built {
            if Some(i) == keep {
                self.list.built.push(i);
            } else if let Some(slot) = self.list.whole.get_mut(i) {
                *slot = None;
            }
        }
    }

    pub fn is_excluded(&self, o: &ObjectPlan, path: &FieldPath) -> bool {
        self.sel
            .excluded
            .get(&o.id())
            .is_some_and(|s| s.contains(path))
    }

    /// Whether the `clear` row `path` of `o` is released (`R`).
    pub fn is_released(&self, o: &ObjectPlan, path: &FieldPath) -> bool {
        self.sel
            .released
            .get(&o.id())
            .is_some_and(|s| s.contains(path))
    }

    /// Put `text` on the status line; `failed` draws it as a failure.
    pub(crate) fn say(&mut self, text: impl Into<String>, failed: bool) {
        self.last_result = Some(text.into());
        self.last_result_failed = failed;
    }

    /// How far the open dialog's body can scroll, and the rows one page moves.
    pub fn popup_scroll_range(&self) -> (u16, u16) {
        let Some(p) = &self.popup else {
            return (0, 0);
        };
        let t = self.opts.theme();
        let v = crate::tui::dialogs::popup_view(dialog_ctx(self), p, t);
        let l = crate::tui::layout::popup_layout(self.size, &v, t);
        (l.max_scroll, l.body.height.max(1))
    }

    pub fn areas(&self) -> Areas {
        areas(self.size, self.show_log, self.focus == Focus::Fields)
    }

    fn log_entry(&mut self, ok: bool, text: String) {
        let time = (self.clock)();
        self.log.push(LogEntry { time, ok, text });
    }

    /// `r` and the start: reload, or (no live state known yet) connect
    /// again and read everything from the start.
    fn begin_load(&mut self) -> Vec<Effect> {
        if self.jobs.loading || self.jobs.connecting {
            return Vec::new();
        }
        if !self.conn.live_known {
            self.jobs.connecting = true;
            self.conn.failure = None;
            self.jobs.progress = None;
            self.conn.waiting_since = Some((self.now)());
            self.conn.waited = Duration::ZERO;
            self.jobs.pending.push(Job::Connecting);
            return vec![Effect::ReadManifests, Effect::Connect];
        }
        self.start_load()
    }

    fn start_load(&mut self) -> Vec<Effect> {
        self.jobs.loading = true;
        self.jobs.progress = None;
        self.jobs.load_status = None;
        self.list.streamed = None;
        self.jobs.pending.push(Job::Loading);
        vec![Effect::Load]
    }

    fn finish(&mut self, job: Job) {
        if let Some(p) = self.jobs.pending.iter().position(|p| *p == job) {
            self.jobs.pending.remove(p);
        }
    }

    /// Whether an apply, delete or prune is under way.
    pub fn writing(&self) -> bool {
        self.jobs.pending.iter().any(|j| j.writes())
    }

    /// The single transition function.
    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        let effects = self.transition(msg);
        self.drop_built();
        self.prepare();
        effects
    }

    fn transition(&mut self, msg: Msg) -> Vec<Effect> {
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
                self.refresh_list();
                if let Some(since) = self.conn.waiting_since {
                    self.conn.waited = (self.now)().saturating_duration_since(since);
                }
                Vec::new()
            }
            Msg::Connected(result) => {
                if !self.jobs.connecting {
                    return Vec::new();
                }
                self.jobs.connecting = false;
                self.finish(Job::Connecting);
                match result {
                    Ok(()) => self.start_load(),
                    Err(e) => {
                        self.log_entry(false, format!("connecting failed: {e}"));
                        self.conn.failure = Some(e);
                        Vec::new()
                    }
                }
            }
            Msg::Manifests(result) => {
                // Live state came first: its plan has these rows and more.
                if self.conn.live_known {
                    return Vec::new();
                }
                match result {
                    // Rows of the load are shown already: they replace these.
                    Ok(_) if self.list.streamed.is_some() => {}
                    Ok(plan) => {
                        let keep = self.selected_id();
                        self.set_plan(plan, Vec::new(), 0..0);
                        self.rebuild_keeping(keep);
                    }
                    Err(e) => self.log_entry(false, format!("reading the manifests failed: {e}")),
                }
                Vec::new()
            }
            Msg::Progress(p) => {
                // Progress can trail the load's result; only a running load shows it.
                if self.jobs.loading {
                    self.jobs.progress = Some(p);
                }
                Vec::new()
            }
            Msg::Rows(rows) => {
                if self.jobs.loading {
                    self.on_rows(rows);
                }
                Vec::new()
            }
            Msg::Loaded(result) => self.on_loaded(result),
            Msg::DryRunProgress { done, total } => {
                // Only for the dialog waiting on it (a run for a dialog
                // closed since checks another number of objects).
                let waiting = match &self.popup {
                    Some(Popup::Confirm(c)) if c.waiting() => match &c.action {
                        Confirmed::Apply(items) => items.len() == total,
                        Confirmed::Prune(objects) => objects.len() == total,
                        _ => false,
                    },
                    _ => false,
                };
                if waiting {
                    self.jobs.dry_run_progress = Some((done, total));
                }
                Vec::new()
            }
            Msg::DryRunDone(results) => {
                self.jobs.dry_run_progress = None;
                if self.answer_dry_run(&results, |a| matches!(a, Confirmed::Apply(_))) {
                    self.note_refusals(&results);
                }
                self.finish(Job::DryRun);
                self.offer_recreate();
                Vec::new()
            }
            Msg::ServerSideDryRunDone(results) => {
                self.answer_dry_run(&results, |a| matches!(a, Confirmed::ServerSideApply { .. }));
                self.finish(Job::DryRun);
                Vec::new()
            }
            Msg::PruneDryRunDone(results) => {
                self.jobs.dry_run_progress = None;
                self.answer_dry_run(&results, |a| matches!(a, Confirmed::Prune(_)));
                self.finish(Job::DryRun);
                Vec::new()
            }
            Msg::ExportAsk(object, target) => {
                self.finish(Job::ReadForExport);
                match target {
                    Ok(t) => self.open_popup(Popup::ExportPath {
                        object,
                        input: t.path,
                        note: t.note,
                    }),
                    Err(e) => self.say(format!("export: {e}"), true),
                }
                Vec::new()
            }
            Msg::Exported(object, result) => self.on_exported(object, result),
            Msg::Live(n, event) => self.on_live(n, event),
            Msg::LiveStopped(n, why) => {
                self.live_stopped(n, why);
                Vec::new()
            }
            Msg::WriteProgress { done, total } => {
                // Progress can trail the results; only a write under way shows it.
                if self.writing() {
                    self.jobs.write_progress = Some((done, total));
                }
                Vec::new()
            }
            Msg::Edited(result) => {
                match result {
                    Ok(()) => self.say("edited: reloading", false),
                    Err(e) => {
                        self.say(format!("editor: {e}"), true);
                        return Vec::new();
                    }
                }
                self.begin_load()
            }
            Msg::Applied(results) => {
                self.note_refusals(&results);
                self.on_results(Job::Applying, "applied", results)
            }
            Msg::Recreated(results) => {
                self.note_refusals(&results);
                self.on_results(Job::Recreating, "recreated", results)
            }
            Msg::Deleted(results) => self.on_results(Job::Deleting, "deleted", results),
            Msg::Pruned(results) => self.on_results(Job::Pruning, "pruned", results),
        }
    }

    /// The load's end: its plan, or why it failed.
    fn on_loaded(&mut self, result: Result<Plan, String>) -> Vec<Effect> {
        self.jobs.loading = false;
        self.jobs.progress = None;
        self.jobs.load_status = None;
        let streamed = self.list.streamed.take();
        self.finish(Job::Loading);
        match result {
            Ok(plan) => self.loaded(plan, streamed),
            Err(e) => {
                self.load_failed(e, streamed);
                Vec::new()
            }
        }
    }

    /// The plan against live state: the streamed rows first, then what
    /// came with the end; marks of objects gone forgotten; the cluster
    /// followed from there.
    fn loaded(&mut self, plan: Plan, streamed: Option<Streamed>) -> Vec<Effect> {
        let first = !self.conn.live_known;
        self.conn.live_known = true;
        self.jobs.connecting = false;
        self.finish(Job::Connecting);
        self.conn.failure = None;
        self.conn.waiting_since = None;
        // Rows index the old plan: take the selection first.
        let keep = self.selected_id();
        // The streamed rows first, then what came with the end.
        // The streamed rows shown were planned server-side as they came.
        let shown = match streamed {
            Some(Streamed::Shown(n)) => n.min(self.list.plan.objects.len()),
            _ => 0,
        };
        let (mut objects, mut compact) = match streamed {
            Some(Streamed::Shown(n)) => {
                let mut objects = std::mem::take(&mut self.list.plan.objects);
                let mut compact = std::mem::take(&mut self.list.compact);
                objects.truncate(n);
                compact.truncate(n);
                (objects, compact)
            }
            Some(Streamed::Held(o, c)) => (o, c),
            None => (Vec::new(), Vec::new()),
        };
        compact.resize_with(objects.len(), || None);
        objects.extend(plan.objects);
        let plan = Plan {
            objects,
            prune_skipped: plan.prune_skipped,
        };
        let all = shown..plan.objects.len();
        self.set_plan(plan, compact, all);
        // Forget marks and exclusions of objects that are gone.
        if !(self.sel.marked.is_empty()
            && self.refused.is_empty()
            && self.sel.excluded.is_empty()
            && self.sel.released.is_empty())
        {
            let keys: BTreeSet<ObjectRef> =
                self.list.plan.objects.iter().map(ObjectPlan::id).collect();
            self.sel.marked.retain(|k| keys.contains(k));
            self.refused.retain(|k, _| keys.contains(k));
            self.sel.excluded.retain(|k, _| keys.contains(k));
            self.sel.released.retain(|k, _| keys.contains(k));
        }
        let pruning = matches!(self.popup, Some(Popup::PruneStep { .. }))
            || matches!(self.confirming(), Some(Confirmed::Prune(_)));
        if !pruning {
            self.sel.queued_delete.clear();
        }
        self.rebuild_keeping(keep);
        // Opened to review changes: start on the first one.
        if first && !self.sel.cursor_moved {
            self.first_change();
        }
        // Follow the cluster from what was just read.
        self.conn.changed.clear();
        self.list.list_dirty = false;
        self.conn.read_at = Some((self.clock)());
        self.conn.live_gen += 1;
        vec![Effect::Watch(self.conn.live_gen)]
    }

    /// The load failed: a first load's rows planned so far stay.
    fn load_failed(&mut self, e: String, streamed: Option<Streamed>) {
        if let Some(Streamed::Shown(n)) = streamed {
            // The rows planned stay; the rest are manifests again.
            let keep = self.selected_id();
            for o in &mut self.list.plan.objects[..n] {
                if o.action != ObjectAction::Error {
                    o.action = ObjectAction::Unchanged;
                }
            }
            let objects = std::mem::take(&mut self.list.plan.objects);
            self.set_plan(
                Plan {
                    objects,
                    prune_skipped: None,
                },
                Vec::new(),
                0..0,
            );
            self.rebuild_keeping(keep);
        }
        self.log_entry(false, format!("load failed: {e}"));
        if self.conn.live_known {
            self.say(format!("load failed: {e}"), true);
        } else {
            // Shown in place; the status line says what to do.
            self.conn.failure = Some(e);
        }
    }

    /// An export's outcome: written (reload), the path exists (its
    /// confirmation), or why not.
    fn on_exported(&mut self, object: ObjectPlan, result: Result<Exported, String>) -> Vec<Effect> {
        self.finish(Job::Exporting);
        let name = object.id();
        match result {
            Ok(Exported::Written(path)) => {
                self.log_entry(true, format!("{name}: exported to {path}"));
                self.say(
                    format!("exported {name} to {path}; the next apply records the annotation"),
                    false,
                );
                return self.begin_load();
            }
            // The path exists: `y` writes into it (see
            // [`Exported::Preview`]: what that changes in the file).
            Ok(Exported::Exists(path)) => {
                let c = self.export_confirm(object, path, Vec::new());
                self.open_popup(Popup::Confirm(c));
            }
            Ok(Exported::Preview { path, changes }) => {
                let c = self.export_confirm(object, path, changes);
                self.open_popup(Popup::Confirm(c));
            }
            Err(e) => {
                self.log_entry(false, format!("{name} export failed: {e}"));
                self.say(format!("export failed: {e}"), true);
            }
        }
        Vec::new()
    }

    /// Rows of the load under way. The first load shows them at once in
    /// place of their manifests (which are in the same order); a reload
    /// keeps them until it is done.
    fn on_rows(&mut self, rows: Rows) {
        self.jobs.load_status = Some(LoadStatus {
            lists_done: rows.lists_done,
            lists_total: rows.lists_total,
            planned: rows.planned,
            total: rows.total,
        });
        if self.conn.live_known {
            let (objects, compact) = match &mut self.list.streamed {
                Some(Streamed::Held(o, c)) => (o, c),
                _ => {
                    self.list.streamed = Some(Streamed::Held(Vec::new(), Vec::new()));
                    let Some(Streamed::Held(o, c)) = &mut self.list.streamed else {
                        return;
                    };
                    (o, c)
                }
            };
            for (o, c) in rows.objects {
                objects.push(o);
                compact.push(Some(c));
            }
            return;
        }
        let n = match self.list.streamed {
            Some(Streamed::Shown(n)) => n,
            _ => 0,
        };
        // The manifests these rows are planned from (the rows between are
        // left out of the plan, by `--prune -l`): found by file and line.
        let mut end = n;
        for (o, _) in &rows.objects {
            let Some(src) = o.source.as_deref() else {
                continue;
            };
            if let Some(k) = self.list.plan.objects[end.min(self.list.plan.objects.len())..]
                .iter()
                .position(|m| m.source.as_deref() == Some(src))
            {
                end += k + 1;
            }
        }
        let end = end.min(self.list.plan.objects.len());
        let added = rows.objects.len();
        // Each row in place of its own manifest, listed where it was (same
        // identity: same list group, which no version decides, and order;
        // no filter by action): the list
        // stays, only the counts change. At 10,000 objects this is most
        // rows of the first load, each batch otherwise a rebuild of all.
        if end - n == added
            && self.list.filter == Filter::All
            && self.list.plan.objects[n..end]
                .iter()
                .zip(&rows.objects)
                .all(|(m, (o, _))| m.is(o))
        {
            self.list
                .compact
                .resize_with(self.list.plan.objects.len(), || None);
            for (k, (mut o, c)) in (n..end).zip(rows.objects) {
                if self.server_side().is_some() {
                    let (config, live) = (c.config(), c.live());
                    self.ssa_adjust(&mut o, config.as_ref(), live.as_ref());
                }
                self.list.counts.tally(&self.list.plan.objects[k], false);
                self.list.counts.tally(&o, true);
                self.list.plan.objects[k] = o;
                self.list.compact[k] = Some(c);
                self.unbuild(k);
            }
            // Cached views of a replaced row are stale.
            self.list.plan_gen += 1;
            self.list.streamed = Some(Streamed::Shown(n + added));
            self.clamp_fields();
            return;
        }
        let (objects, compact): (Vec<ObjectPlan>, Vec<Option<Compact>>) =
            rows.objects.into_iter().map(|(o, c)| (o, Some(c))).unzip();
        let keep = self.selected_id();
        let mut plan = std::mem::take(&mut self.list.plan);
        let mut all = std::mem::take(&mut self.list.compact);
        all.resize_with(plan.objects.len(), || None);
        plan.objects.splice(n..end, objects);
        all.splice(n..end, compact);
        self.set_plan(plan, all, n..n + added);
        self.list.streamed = Some(Streamed::Shown(n + added));
        self.rebuild_keeping(keep);
    }

    /// Whether what apply would do with `o` is known: live state is, or
    /// `o` is one of the rows the first load has planned so far.
    pub fn planned(&self, o: &ObjectPlan) -> bool {
        if self.conn.live_known {
            return true;
        }
        match self.list.streamed {
            Some(Streamed::Shown(n)) => self.list.plan.objects
                [..n.min(self.list.plan.objects.len())]
                .as_ptr_range()
                .contains(&(o as *const ObjectPlan)),
            _ => false,
        }
    }

    fn on_results(&mut self, pending: Job, verb: &str, results: Vec<ObjectResult>) -> Vec<Effect> {
        self.finish(pending);
        self.jobs.write_progress = None;
        let ok = results.iter().filter(|r| r.ok()).count();
        let unknown = results.iter().filter(|r| r.unknown()).count();
        let failed = results.len() - ok - unknown;
        for r in &results {
            if r.ok() {
                self.log_entry(true, format!("{}: {}", r.object, r.message()));
            } else if r.unknown() {
                self.log_entry(false, format!("{} unknown: {}", r.object, r.message()));
            } else {
                self.log_entry(false, format!("{} failed: {}", r.object, r.message()));
            }
        }
        // Marks of objects the engine reported done are cleared; failed ones stay.
        for k in results.iter().filter(|r| r.ok()).map(|r| &r.object) {
            self.sel.marked.remove(k);
            self.sel.excluded.remove(k);
            self.sel.released.remove(k);
        }
        let mut summary = format!("{verb} {ok} object(s)");
        if failed > 0 {
            summary.push_str(&format!(", {failed} failed"));
        }
        // Sent without an answer: neither done nor failed (see the log).
        if unknown > 0 {
            summary.push_str(&format!(", {unknown} unknown (no answer)"));
        }
        // A recreate that deleted and could not create: said first, loudly.
        let gone = results
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Failed(Failure::NotRecreated(_))))
            .count();
        if gone > 0 {
            summary = format!("{gone} object(s) DELETED and not created again (l: log); {summary}");
        }
        if results
            .iter()
            .any(|r| matches!(r.outcome, Outcome::Failed(Failure::Invalid(_))))
        {
            summary.push_str("; F recreates what the server refused");
        }
        self.say(summary, failed > 0 || unknown > 0);
        self.begin_load()
    }
}
