//! Keys and the mouse outside dialogs: one handler that maps them to moves,
//! toggles and the dialogs (dialogs get their keys in `dialogs`).

use super::*;

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

    pub(super) fn on_key(&mut self, k: KeyEvent) -> Vec<Effect> {
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
            KeyCode::Char('q') => return self.quit(),
            KeyCode::Esc => self.back(),
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
                self.say(self.needs_live_state("the status filter"), false)
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
            KeyCode::Char('a' | 'D' | 'p' | 'E' | 'c') if !self.live_known => {
                let what = match k.code {
                    KeyCode::Char('c') => "the changes view",
                    KeyCode::Char('a') => "apply",
                    KeyCode::Char('D') => "delete",
                    KeyCode::Char('E') => "export",
                    _ => "prune",
                };
                self.say(self.needs_live_state(what), false);
            }
            KeyCode::Char('a') => return self.open_apply(),
            KeyCode::Char('D') => self.open_delete(),
            KeyCode::Char('p') => self.open_prune(),
            KeyCode::Char('E') => return self.open_export(),
            KeyCode::Char('c') => self.open_changes(),
            _ => {}
        }
        Vec::new()
    }

    /// `q`: quit, asking first when marks or queued deletes would be lost.
    pub(super) fn quit(&mut self) -> Vec<Effect> {
        let marked = self.marked.len();
        let queued = self.queued_delete.len();
        if marked + queued == 0 {
            return vec![Effect::Quit];
        }
        self.open_popup(Popup::QuitConfirm { marked, queued });
        Vec::new()
    }

    /// `Esc`: one step back (the search, then the filter, then the field
    /// pane's views, then its focus); never quits, as in k9s and lazygit.
    pub(super) fn back(&mut self) {
        if !self.search.is_empty() {
            self.search.clear();
            self.rebuild();
        } else if self.filter != Filter::All {
            self.filter = Filter::All;
            self.rebuild();
        } else if self.focus == Focus::Fields {
            self.focus = Focus::List;
        } else if self.yaml {
            self.yaml = false;
            self.yaml_scroll = 0;
        } else {
            self.say("q quits", false);
        }
    }

    /// Why `what` is not offered before live state is known. After a
    /// failure the status line already starts with `no live state: r
    /// retries`, so the answer stays short enough to read whole at 80
    /// columns beside it.
    pub(super) fn needs_live_state(&self, what: &str) -> String {
        if self.failure.is_some() {
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
            Focus::Fields if self.yaml => self.scroll_yaml(d),
            Focus::Fields => self.move_field(d),
        }
    }

    /// `g` / `G`: the first or last row of the focused pane.
    pub(super) fn jump(&mut self, to_end: bool) {
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
}
