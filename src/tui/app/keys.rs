//! Keys and the mouse outside dialogs: one handler that maps them to moves,
//! toggles and the dialogs (dialogs get their keys in `dialogs`).

use super::*;
use crate::tui::keymap::{self, Action, Pane};

impl App {
    pub(super) fn on_mouse(&mut self, m: MouseEvent) {
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
                    if self.detail.yaml {
                        self.scroll_yaml(d);
                    } else {
                        self.move_field(d);
                    }
                }
            }
            MouseEventKind::Down(MouseButton::Left) => {
                if inside(a.list) && m.row > a.list.y {
                    let row = self.sel.list_scroll + (m.row - a.list.y - 1) as usize;
                    if matches!(self.list.rows.get(row), Some(Row::Object(_))) {
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

    /// The pane the keys act on (the key table's modes).
    pub fn pane(&self) -> Pane {
        match self.focus {
            Focus::List => Pane::List,
            Focus::Fields if self.detail.yaml => Pane::Yaml,
            Focus::Fields => Pane::Fields,
        }
    }

    pub(super) fn on_key(&mut self, k: KeyEvent) -> Vec<Effect> {
        // Keys act on the list as shown after the latest changes.
        self.refresh_list();
        let action = keymap::action(self.pane(), &k);
        if action == Some(Action::ForceQuit) {
            return vec![Effect::Quit];
        }
        if self.popup.is_some() {
            return self.on_popup_key(k);
        }
        if self.list.searching {
            self.search_key(k);
            return Vec::new();
        }
        match action {
            Some(action) => self.on_action(action),
            None => Vec::new(),
        }
    }

    /// A key while a search is typed: it edits the search (the list
    /// follows), Enter keeps it, Esc clears it.
    fn search_key(&mut self, k: KeyEvent) {
        match k.code {
            KeyCode::Esc => {
                self.list.searching = false;
                self.list.search.clear();
                self.rebuild();
            }
            KeyCode::Enter => self.list.searching = false,
            KeyCode::Backspace => {
                self.list.search.pop();
                self.rebuild();
            }
            KeyCode::Char(c) => {
                self.list.search.push(c);
                self.rebuild();
            }
            _ => {}
        }
    }

    /// What a key's action does where no dialog or search takes it.
    fn on_action(&mut self, action: Action) -> Vec<Effect> {
        match action {
            Action::ForceQuit | Action::Quit => return self.quit(),
            Action::Back => self.back(),
            Action::Help => self.open_popup(Popup::Help),
            Action::SwitchPane => {
                self.focus = match self.focus {
                    Focus::List => Focus::Fields,
                    Focus::Fields => Focus::List,
                }
            }
            Action::OpenFields => self.focus = Focus::Fields,
            Action::Down => self.move_in_focus(1),
            Action::Up => self.move_in_focus(-1),
            Action::PageDown => {
                let p = self.page();
                self.move_in_focus(p)
            }
            Action::PageUp => {
                let p = self.page();
                self.move_in_focus(-p)
            }
            Action::Top => self.jump(false),
            Action::Bottom => self.jump(true),
            // Server-side, a field's choice is T / W on a conflict; the
            // client-side plan's partial apply, releases, changes view and
            // recreate do not apply.
            Action::Include | Action::Release | Action::Changes | Action::Recreate
                if self.server_side().is_some() =>
            {
                self.say(
                    "not with --server-side: a conflict row takes T (force) or W (give way)"
                        .to_string(),
                    false,
                );
            }
            // The YAML view is client-side apply's result (the three-way
            // patch): not what a server-side apply writes.
            Action::Yaml | Action::Fold | Action::LastApplied if self.server_side().is_some() => {
                self.say(
                    "the YAML view is client-side apply's: not with --server-side".to_string(),
                    false,
                );
            }
            Action::Mark | Action::Include => self.toggle_mark(),
            Action::MarkAll => self.mark_shown(true),
            Action::UnmarkAll => self.mark_shown(false),
            Action::Yaml => {
                self.detail.yaml = !self.detail.yaml;
                self.detail.yaml_scroll = 0;
            }
            Action::Kept => self.toggle_kept(),
            Action::Release => self.toggle_release(),
            Action::Force => self.ssa_decide(crate::ssa::Decision::Force),
            Action::GiveWay => self.ssa_decide(crate::ssa::Decision::GiveWay),
            Action::DetailDown => self.scroll_detail(3),
            Action::DetailUp => self.scroll_detail(-3),
            // Both act on the YAML view, and open it.
            Action::Fold => {
                self.detail.yaml_unfold = !self.detail.yaml_unfold || !self.detail.yaml;
                self.detail.yaml = true;
                self.detail.yaml_scroll = 0;
            }
            Action::LastApplied => {
                self.detail.yaml_last_applied = !self.detail.yaml_last_applied || !self.detail.yaml;
                self.detail.yaml = true;
                self.detail.yaml_scroll = 0;
            }
            Action::Group => {
                self.list.group = match self.list.group {
                    GroupBy::Namespace => GroupBy::Kind,
                    GroupBy::Kind => GroupBy::Namespace,
                };
                self.rebuild();
            }
            Action::Filter if !self.conn.live_known => {
                self.say(self.needs_live_state("the status filter"), false)
            }
            Action::Filter => {
                self.list.filter = self.list.filter.next_in(self.server_side().is_some());
                self.rebuild();
            }
            Action::Search => {
                self.list.searching = true;
                self.list.search.clear();
                self.focus = Focus::List;
                self.rebuild();
            }
            Action::Log => self.show_log = !self.show_log,
            Action::NextDrift => self.next_drift(true),
            Action::PrevDrift => self.next_drift(false),
            Action::NextChange => self.next_change(true),
            Action::PrevChange => self.next_change(false),
            Action::Reload => return self.begin_load(),
            Action::Edit => return self.edit(),
            Action::Apply
            | Action::Delete
            | Action::Prune
            | Action::Export
            | Action::Changes
            | Action::Recreate
                if !self.conn.live_known =>
            {
                let what = match action {
                    Action::Changes => "the changes view",
                    Action::Recreate => "recreate",
                    Action::Apply => "apply",
                    Action::Delete => "delete",
                    Action::Export => "export",
                    _ => "prune",
                };
                self.say(self.needs_live_state(what), false);
            }
            Action::Apply if self.server_side().is_some() => return self.open_apply_server_side(),
            Action::Apply => return self.open_apply(),
            Action::Delete => self.open_delete(),
            Action::Prune => self.open_prune(),
            Action::Export => return self.open_export(),
            Action::Changes => self.open_changes(),
            Action::Recreate => self.open_recreate(),
        }
        Vec::new()
    }

    /// `M` / `U`: mark (or unmark) every object the filter and search show.
    pub(super) fn mark_shown(&mut self, mark: bool) {
        let shown: Vec<ObjectRef> = self
            .list
            .rows
            .iter()
            .filter_map(|r| match r {
                Row::Object(i) => Some(self.list.plan.objects[*i].id()),
                Row::Group(_) => None,
            })
            .collect();
        let n = shown.len();
        for id in shown {
            if mark {
                self.sel.marked.insert(id);
            } else {
                self.sel.marked.remove(&id);
            }
        }
        let verb = if mark { "marked" } else { "unmarked" };
        self.say(format!("{verb} the {n} object(s) shown"), false);
    }

    /// `e`: the selected object's manifest in the user's editor, at its
    /// line; a source that is no local file (a URL, a kustomize build) is
    /// refused with why.
    pub(super) fn edit(&mut self) -> Vec<Effect> {
        let Some(o) = self.selected() else {
            return Vec::new();
        };
        let Some(src) = o.source.clone() else {
            let why = format!("{}: e edits a manifest; this object is in none", o.id());
            self.say(why, false);
            return Vec::new();
        };
        let (file, line) = match src.rsplit_once(':') {
            Some((f, l)) if l.parse::<u32>().is_ok() => (f.to_string(), l.parse().unwrap_or(1)),
            _ => (src.clone(), 1),
        };
        if file.contains("://") || file.contains(" (kustomize document ") || file == "-" {
            self.say(
                format!("{src}: not a local file; edit its source and press r"),
                false,
            );
            return Vec::new();
        }
        vec![Effect::Edit { file, line }]
    }

    /// `q`: quit, asking first when marks or queued deletes would be lost,
    /// or while a recreate runs (quitting between its delete and its
    /// create leaves the object deleted).
    pub(super) fn quit(&mut self) -> Vec<Effect> {
        let marked = self.sel.marked.len();
        let queued = self.sel.queued_delete.len();
        let recreating = self.jobs.pending.contains(&Job::Recreating);
        if marked + queued == 0 && !recreating {
            return vec![Effect::Quit];
        }
        let c = self.quit_confirm(marked, queued, recreating);
        self.open_popup(Popup::Confirm(c));
        Vec::new()
    }

    /// `Esc`: one step back (the search, then the filter, then the field
    /// pane's views, then its focus); never quits, as in k9s and lazygit.
    pub(super) fn back(&mut self) {
        if !self.list.search.is_empty() {
            self.list.search.clear();
            self.rebuild();
        } else if self.list.filter != Filter::All {
            self.list.filter = Filter::All;
            self.rebuild();
        } else if self.focus == Focus::Fields {
            self.focus = Focus::List;
        } else if self.detail.yaml {
            self.detail.yaml = false;
            self.detail.yaml_scroll = 0;
        } else {
            self.say("q quits", false);
        }
    }

    /// Why `what` is not offered before live state is known. After a
    /// failure the status line already starts with `no live state: r
    /// retries`, so the answer stays short enough to read whole at 80
    /// columns beside it.
    pub(super) fn needs_live_state(&self, what: &str) -> String {
        if self.conn.failure.is_some() {
            format!("{what} needs the live state")
        } else {
            format!("{what} needs the live state, which is still loading")
        }
    }

    pub(super) fn page(&self) -> isize {
        match self.focus {
            Focus::List => self.list_page() as isize,
            Focus::Fields => self.detail_page() as isize,
        }
    }

    pub(super) fn move_in_focus(&mut self, d: isize) {
        match self.focus {
            Focus::List => self.move_cursor(d),
            Focus::Fields if self.detail.yaml => self.scroll_yaml(d),
            Focus::Fields => self.move_field(d),
        }
    }

    /// `g` / `G`: the first or last row of the focused pane.
    pub(super) fn jump(&mut self, to_end: bool) {
        match self.focus {
            Focus::List => {
                let pos = if to_end {
                    self.list.rows.len().saturating_sub(1)
                } else {
                    0
                };
                self.set_cursor(pos);
                self.snap_cursor(!to_end);
                self.scroll_to_cursor();
            }
            Focus::Fields if self.detail.yaml => self.scroll_yaml(if to_end {
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
}
