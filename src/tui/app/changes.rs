//! The changes view (`c`): each distinct field change of the updates (the
//! same path, live and resulting value, cause and hazards) once, with how
//! many objects carry it; `Enter` marks every object carrying the selected
//! one for an apply of that change alone. Folding is the core's
//! (`plan::fold`), as in `kapply diff` and the Markdown report.

use super::*;

impl App {
    /// `c`: the distinct changes, most carried first (ties in plan order).
    pub(super) fn open_changes(&mut self) {
        let updates: Vec<ObjectPlan> = (0..self.list.plan.objects.len())
            .filter(|&i| self.list.plan.objects[i].action == ObjectAction::Update)
            .filter_map(|i| self.object_owned(i))
            .collect();
        let mut changes = crate::plan::fold::distinct_changes(&updates);
        // Stable: equal counts keep their first appearance's order.
        changes.sort_by_key(|c| std::cmp::Reverse(c.objects.len()));
        let items: Vec<ChangeItem> = changes
            .iter()
            .map(|c| ChangeItem {
                path: c.row.path.clone(),
                values: values(&c.row),
                cause: c.cause(crate::merge::Form::Tag),
                hazard: !c.row.hazards.is_empty(),
                carried: c.carried_by(&updates),
                objects: c.objects.iter().map(|&i| updates[i].id()).collect(),
            })
            .collect();
        if items.is_empty() {
            self.say(
                "no field changes to list (no object would be updated)",
                false,
            );
            return;
        }
        self.open_popup(Popup::Changes {
            changes: items,
            pos: 0,
        });
    }

    pub(super) fn changes_key(
        &mut self,
        k: KeyEvent,
        changes: Vec<ChangeItem>,
        mut pos: usize,
    ) -> Vec<Effect> {
        match k.code {
            KeyCode::Esc | KeyCode::Char('q' | 'c') => return Vec::new(),
            KeyCode::Enter | KeyCode::Char(' ') => {
                if let Some(item) = changes.get(pos) {
                    self.mark_change(item);
                }
                return Vec::new();
            }
            KeyCode::Char('j') | KeyCode::Down => pos = (pos + 1).min(changes.len() - 1),
            KeyCode::Char('k') | KeyCode::Up => pos = pos.saturating_sub(1),
            KeyCode::Char('g') | KeyCode::Home => pos = 0,
            KeyCode::Char('G') | KeyCode::End => pos = changes.len() - 1,
            _ => {}
        }
        self.popup = Some(Popup::Changes { changes, pos });
        // Keep the selected line in view (one line a change).
        let page = usize::from(self.popup_scroll_range().1.max(1));
        let top = usize::from(self.popup_scroll);
        if pos < top {
            self.popup_scroll = u16::try_from(pos).unwrap_or(u16::MAX);
        } else if pos >= top + page {
            self.popup_scroll = u16::try_from(pos + 1 - page).unwrap_or(u16::MAX);
        }
        Vec::new()
    }

    /// Marks every object carrying `item` for apply with that change alone:
    /// its other changes are left out (as `Space` on their rows does),
    /// unless it was marked already, when this change is included again.
    fn mark_change(&mut self, item: &ChangeItem) {
        let mut marked = 0;
        for id in &item.objects {
            let Some(i) = self.list.plan.objects.iter().position(|o| o.is(id)) else {
                continue;
            };
            let Some(o) = self.object_owned(i) else {
                continue;
            };
            if self.sel.marked.insert(id.clone()) {
                let others: BTreeSet<FieldPath> = o
                    .fields
                    .iter()
                    .filter(|f| f.action != FieldAction::Keep && f.path != item.path)
                    .map(|f| f.path.clone())
                    .collect();
                // A row left out is not sent at all: not released either
                // (as `Space` on a released row does).
                if let Some(released) = self.sel.released.get_mut(id) {
                    released.retain(|p| !others.contains(p));
                    if released.is_empty() {
                        self.sel.released.remove(id);
                    }
                }
                if others.is_empty() {
                    self.sel.excluded.remove(id);
                } else {
                    self.sel.excluded.insert(id.clone(), others);
                }
            } else if let Some(set) = self.sel.excluded.get_mut(id) {
                set.remove(&item.path);
                if set.is_empty() {
                    self.sel.excluded.remove(id);
                }
            }
            marked += 1;
        }
        self.say(
            format!(
                "marked {marked} object(s) with {} (other changes left out); a applies",
                item.path
            ),
            false,
        );
    }
}

/// A change's values as `kapply diff` shows them: live → result.
fn values(f: &crate::merge::FieldChange) -> String {
    let v = |x: &Option<serde_json::Value>| match x {
        None => "(none)".to_string(),
        Some(v) => crate::gocompat::json(v),
    };
    match (&f.config, f.action) {
        (None, FieldAction::Clear) => format!("{} → (removed)", v(&f.live)),
        (c, _) => format!("{} → {}", v(&f.live), v(c)),
    }
}
