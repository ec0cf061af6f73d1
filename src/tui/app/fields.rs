//! The field pane: its cursor and scroll, drift rows, kept rows, marks and
//! releases of single changes, and the YAML view's scroll.

use super::*;
use crate::tui::layout::{DetailBox, detail_key};
use ratatui::widgets::{Block, Borders};

/// Remove `path` from the set of `key`, dropping an emptied set; whether it was there.
fn unset(
    sets: &mut BTreeMap<ObjectRef, BTreeSet<FieldPath>>,
    key: &ObjectRef,
    path: &FieldPath,
) -> bool {
    let Some(set) = sets.get_mut(key) else {
        return false;
    };
    let was = set.remove(path);
    if set.is_empty() {
        sets.remove(key);
    }
    was
}

impl App {
    pub(super) fn detail_page(&self) -> usize {
        (self.areas().detail.height.saturating_sub(4) as usize).max(1)
    }

    /// Field rows of the selected object that a cursor can sit on.
    pub(super) fn field_count(&self) -> usize {
        if self.server_side().is_some() {
            return self.ssa_rows().len();
        }
        self.selected()
            .map_or(0, |o| field_rows(o, self.detail.show_kept).len())
    }

    pub(super) fn clamp_fields(&mut self) {
        self.prepare_ssa();
        let n = self.field_count();
        self.sel.field_cursor = self.sel.field_cursor.min(n.saturating_sub(1));
        self.sel.field_scroll = self.sel.field_scroll.min(self.sel.field_cursor);
    }

    pub(super) fn move_field(&mut self, delta: isize) {
        self.prepare_ssa();
        let n = self.field_count();
        if n == 0 {
            return;
        }
        let pos = (self.sel.field_cursor as isize + delta).clamp(0, n as isize - 1) as usize;
        self.set_field_cursor(pos);
    }

    /// Put the field cursor on row `pos`, scrolled (in table lines, as
    /// the table is drawn) so that the row shows.
    pub(super) fn set_field_cursor(&mut self, pos: usize) {
        self.sel.field_cursor = pos;
        if self.server_side().is_some() {
            // Two lines a row, under a line of its own (see ui::serverside).
            let page = usize::from(self.areas().detail.height.saturating_sub(3) / 2).max(1);
            let n = self.ssa_rows().len();
            self.sel.field_scroll =
                crate::tui::scroll::keep_in_view(self.sel.field_scroll, pos..pos + 1, pos, n, page);
            return;
        }
        self.prepare_fields();
        let Some((w, h)) = self.field_table_size() else {
            return;
        };
        let Some(l) = self.field_layout(w) else {
            return;
        };
        self.sel.field_scroll =
            crate::tui::fieldtable::scroll_for(&l, pos, self.sel.field_scroll, h);
    }

    /// The field pane's parts for the selected object `o` in a pane whose
    /// inside is `inner` (as drawn: the head, the table, the box).
    fn field_areas_of(&self, o: &ObjectPlan, inner: Rect) -> crate::tui::layout::FieldAreas {
        let t = crate::tui::theme::Theme::default();
        let width = inner.width;
        let lines = self
            .field_layout(usize::from(width))
            .map_or(0, |l| l.lines.len());
        crate::tui::layout::field_areas(
            self.tallest_detail(o, width),
            lines,
            &self.head_lines(o, t),
            inner,
        )
    }

    /// The field table's width and the rows of its body, for the selected
    /// object (the cursor keeps its row in view with these).
    pub fn field_table_size(&self) -> Option<(usize, usize)> {
        let o = self.selected()?;
        let inner = Block::default()
            .borders(Borders::ALL)
            .inner(self.areas().detail);
        let a = self.field_areas_of(o, inner);
        Some((
            a.table.width as usize,
            a.table.height.saturating_sub(1) as usize,
        ))
    }

    /// [`DetailBox`] of the selected object's selected row, if the box shows.
    pub(crate) fn detail_box(&self) -> Option<DetailBox> {
        let o = self.selected()?;
        let inner = Block::default()
            .borders(Borders::ALL)
            .inner(self.areas().detail);
        let layout = self.field_layout(inner.width as usize)?;
        let f = &o.fields[layout.rows.get(self.sel.field_cursor)?.field];
        let a = self.field_areas_of(o, inner);
        // Its top row is the rule above it.
        let height = a.detail.height.checked_sub(1)?;
        let t = crate::tui::theme::Theme::default();
        let lines = crate::tui::detail::field_detail(o, f, self.is_released(o, &f.path), t);
        Some(DetailBox {
            key: detail_key(o, &f.path),
            total: crate::tui::layout::wrapped_height(&lines, a.detail.width),
            height,
        })
    }

    /// `n` / `N` in the field table: the next / previous row that reverts
    /// a drift.
    pub(super) fn next_drift(&mut self, forward: bool) {
        let Some(o) = self.selected() else {
            return;
        };
        let rows = field_rows(o, self.detail.show_kept);
        let is = |i: usize| crate::tui::fieldtable::is_drift(rows[i]);
        let found = if forward {
            (self.sel.field_cursor + 1..rows.len()).find(|&i| is(i))
        } else {
            (0..self.sel.field_cursor.min(rows.len()))
                .rev()
                .find(|&i| is(i))
        };
        let any = (0..rows.len()).any(is);
        match found {
            Some(i) => self.set_field_cursor(i),
            None if any => self.say(
                format!(
                    "no drift row {} this one",
                    if forward { "after" } else { "before" }
                ),
                false,
            ),
            None => self.say(
                "no drift: nothing changed in the cluster".to_string(),
                false,
            ),
        }
    }

    /// How far the box under the field table is scrolled for the row
    /// `key` ([`crate::tui::layout::detail_key`]): 0 for any other row.
    pub(crate) fn detail_offset(&self, key: &str) -> u16 {
        match &self.detail.detail_scroll {
            Some((k, n)) if k == key => *n,
            _ => 0,
        }
    }

    /// `Ctrl-d`/`Ctrl-u`: scroll the box under the field table by `delta`
    /// lines, within its content.
    pub(super) fn scroll_detail(&mut self, delta: i32) {
        self.prepare_fields();
        let Some(b) = self.detail_box() else {
            return;
        };
        let max = i32::from(b.max_scroll());
        let now = i32::from(self.detail_offset(&b.key)).min(max);
        let next = u16::try_from((now + delta).clamp(0, max)).unwrap_or(0);
        self.detail.detail_scroll = Some((b.key, next));
    }

    /// `K`: show or hide the kept rows, the cursor staying on its field.
    pub(super) fn toggle_kept(&mut self) {
        let path = self.selected().and_then(|o| {
            field_rows(o, self.detail.show_kept)
                .get(self.sel.field_cursor)
                .map(|f| f.path.clone())
        });
        self.detail.show_kept = !self.detail.show_kept;
        let pos = self
            .selected()
            .zip(path)
            .and_then(|(o, p)| {
                field_rows(o, self.detail.show_kept)
                    .iter()
                    .position(|f| f.path == p)
            })
            .unwrap_or(0);
        self.sel.field_scroll = 0;
        self.set_field_cursor(pos);
    }

    /// Scroll the YAML view, clamped to its length (computed only here, on a key).
    pub(super) fn scroll_yaml(&mut self, d: isize) {
        self.prepare_yaml();
        let lines = self.selected().map_or(0, |o| self.yaml_lines(o).len());
        let page = self.areas().detail.height.saturating_sub(2) as usize;
        self.detail.yaml_scroll =
            scroll::moved(self.detail.yaml_scroll, d, scroll::max_top(lines, page));
    }

    pub(super) fn toggle_mark(&mut self) {
        let Some(o) = self.selected().cloned() else {
            return;
        };
        let key = o.id();
        match self.focus {
            Focus::List => {
                if !self.sel.marked.remove(&key) {
                    self.sel.marked.insert(key);
                }
            }
            Focus::Fields => {
                let rows = field_rows(&o, self.detail.show_kept);
                let Some(f) = rows.get(self.sel.field_cursor) else {
                    return;
                };
                // Keep rows are not sent: nothing to include or exclude.
                if f.action == FieldAction::Keep {
                    self.say(format!("{}: kept fields are not sent", f.path), false);
                    return;
                }
                let path = f.path.clone();
                let set = self.sel.excluded.entry(key.clone()).or_default();
                if !set.remove(&path) {
                    set.insert(path.clone());
                    // An excluded row is not sent at all: no longer released.
                    unset(&mut self.sel.released, &key, &path);
                }
                if set.is_empty() {
                    self.sel.excluded.remove(&key);
                }
            }
        }
    }

    /// `R` on a `clear` row: release it (apply drops it from last-applied,
    /// sends no deletion, the live value stays) or clear it again. Refused,
    /// with the reason, where the core refuses a release.
    pub(super) fn toggle_release(&mut self) {
        let Some(o) = self.selected().cloned() else {
            return;
        };
        let key = o.id();
        let Some(path) = field_rows(&o, self.detail.show_kept)
            .get(self.sel.field_cursor)
            .map(|f| f.path.clone())
        else {
            return;
        };
        if unset(&mut self.sel.released, &key, &path) {
            self.say(format!("{path}: clear (apply removes it)"), false);
            return;
        }
        // The row is in view: the status line says only why, so it reads
        // whole at 80 columns.
        if let Some(why) = crate::plan::release_refusal_kind(&o, &path) {
            self.say(why.short(), false);
            return;
        }
        self.sel
            .released
            .entry(key.clone())
            .or_default()
            .insert(path.clone());
        // Releasing is sending: the row is included again.
        unset(&mut self.sel.excluded, &key, &path);
        self.say(
            format!("released {path}: live value stays, dropped from last-applied"),
            false,
        );
    }
}
