//! The object list: rows from the plan (grouped, filtered, searched), the
//! cursor on an object row, and the scroll that keeps it in view.

use super::*;

impl App {
    /// Rows of the list pane that fit (inside the border).
    pub(super) fn list_page(&self) -> usize {
        (self.areas().list.height.saturating_sub(2) as usize).max(1)
    }

    /// Whether `o` passes the filter and `search` (the search in lower case).
    fn matches(&self, o: &ObjectPlan, search: &str) -> bool {
        let status_ok = match self.list.filter {
            Filter::All => true,
            Filter::Changes => matches!(
                o.action,
                ObjectAction::Create | ObjectAction::Update | ObjectAction::Prune
            ),
            Filter::Create => o.action == ObjectAction::Create,
            Filter::Update => o.action == ObjectAction::Update,
            Filter::InSync => o.action == ObjectAction::Unchanged,
            Filter::Prune => o.action == ObjectAction::Prune,
            Filter::Error => o.action == ObjectAction::Error,
            Filter::Warning => o.action != ObjectAction::Error && !o.warnings.is_empty(),
            Filter::Conflict => self.ssa_conflicted(o),
            Filter::Marked => self.sel.marked.contains(&o.id()),
        };
        if !status_ok {
            return false;
        }
        if search.is_empty() {
            return true;
        }
        let hay = format!(
            "{} {}/{}",
            o.kind,
            o.namespace.as_deref().unwrap_or(""),
            o.name
        )
        .to_lowercase();
        hay.contains(search)
    }

    /// Rebuild the list rows and counts, keeping the selection on the same object.
    pub fn rebuild(&mut self) {
        let keep = self.selected_id();
        self.rebuild_keeping(keep);
    }

    /// Identity of the selected object (apiVersion, kind, namespace, name).
    pub(super) fn selected_id(&self) -> Option<ObjectRef> {
        self.selected().map(ObjectPlan::id)
    }

    /// The kind as the list shows it: `Gateway`, or `Gateway.networking.istio.io`
    /// when the plan holds a `Gateway` of another group too.
    pub fn kind_label<'a>(&self, o: &'a ObjectPlan) -> std::borrow::Cow<'a, str> {
        kind_label(&self.list.ambiguous_kinds, o)
    }

    /// Rebuild with the cursor on `keep` when it is still listed.
    pub(super) fn rebuild_keeping(&mut self, keep: Option<ObjectRef>) {
        let mut counts = Counts::default();
        for o in &self.list.plan.objects {
            counts.tally(o, true);
        }
        self.list.counts = counts;
        // Borrowed from the plan: no string per object, one per group.
        let search = self.list.search.to_lowercase();
        let mut idx: Vec<(std::borrow::Cow<'_, str>, usize)> = self
            .list
            .plan
            .objects
            .iter()
            .enumerate()
            .filter(|(_, o)| self.matches(o, &search))
            .map(|(i, o)| match self.list.group {
                GroupBy::Namespace => (o.namespace.as_deref().unwrap_or("(cluster)").into(), i),
                GroupBy::Kind => (self.kind_label(o), i),
            })
            .collect();
        // Stable: groups sorted, objects in plan order within a group.
        idx.sort_by(|a, b| a.0.cmp(&b.0));
        let mut rows = Vec::with_capacity(idx.len() + 8);
        let mut last: Option<&str> = None;
        for (g, i) in &idx {
            if last != Some(g.as_ref()) {
                rows.push(Row::Group(g.to_string()));
                last = Some(g.as_ref());
            }
            rows.push(Row::Object(*i));
        }
        let shown = idx.len();
        self.list.shown = shown;
        self.list.rows = rows;
        let found = keep.and_then(|keep| {
            self.list.rows.iter().position(|r| match r {
                Row::Object(i) => self.list.plan.objects[*i].is(&keep),
                Row::Group(_) => false,
            })
        });
        match found {
            Some(p) => self.sel.cursor = p,
            None => {
                self.sel.cursor = self.sel.cursor.min(self.list.rows.len().saturating_sub(1));
                self.snap_cursor(true);
            }
        }
        self.build_selected();
        self.clamp_fields();
        self.scroll_to_cursor();
    }

    /// Move the cursor off a group header.
    pub(super) fn snap_cursor(&mut self, forward: bool) {
        if matches!(self.list.rows.get(self.sel.cursor), Some(Row::Object(_))) {
            return;
        }
        let next = if forward {
            (self.sel.cursor..self.list.rows.len())
                .find(|&i| matches!(self.list.rows[i], Row::Object(_)))
                .or_else(|| {
                    (0..self.sel.cursor)
                        .rev()
                        .find(|&i| matches!(self.list.rows[i], Row::Object(_)))
                })
        } else {
            (0..=self.sel.cursor.min(self.list.rows.len().saturating_sub(1)))
                .rev()
                .find(|&i| matches!(self.list.rows.get(i), Some(Row::Object(_))))
                .or_else(|| {
                    (self.sel.cursor..self.list.rows.len())
                        .find(|&i| matches!(self.list.rows[i], Row::Object(_)))
                })
        };
        self.sel.cursor = next.unwrap_or(0);
    }

    pub(super) fn scroll_to_cursor(&mut self) {
        let page = self.list_page();
        // Keep a group header visible above the first object.
        let top = if self.sel.cursor > 0
            && matches!(self.list.rows.get(self.sel.cursor - 1), Some(Row::Group(_)))
        {
            self.sel.cursor - 1
        } else {
            self.sel.cursor
        };
        let len = self.list.rows.len();
        let top = scroll::keep_in_view(
            self.sel.list_scroll,
            top..self.sel.cursor + 1,
            self.sel.cursor,
            len,
            page,
        );
        self.sel.list_scroll = top.min(scroll::max_top(len, page));
    }

    pub(super) fn move_cursor(&mut self, delta: isize) {
        if self.list.rows.is_empty() {
            return;
        }
        let last = self.list.rows.len() as isize - 1;
        let mut pos = self.sel.cursor as isize;
        let step = delta.signum();
        let mut remaining = delta.abs();
        while remaining > 0 {
            let mut next = pos + step;
            while (0..=last).contains(&next)
                && matches!(self.list.rows[next as usize], Row::Group(_))
            {
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

    pub(super) fn set_cursor(&mut self, pos: usize) {
        self.sel.cursor_moved = true;
        let before = self.sel.cursor;
        self.sel.cursor = pos.min(self.list.rows.len().saturating_sub(1));
        self.snap_cursor(self.sel.cursor >= before);
        self.build_selected();
        if self.sel.cursor != before {
            self.sel.field_cursor = 0;
            self.sel.field_scroll = 0;
            self.detail.yaml_scroll = 0;
        }
        self.scroll_to_cursor();
    }

    /// The cursor on the first listed object with changes (create, update,
    /// prune), if any; the list's top row shown.
    pub(super) fn first_change(&mut self) {
        if let Some(i) =
            (0..self.list.rows.len()).find(|&i| has_change(&self.list.rows[i], &self.list.plan))
        {
            self.sel.cursor = i;
            self.sel.list_scroll = 0;
            self.sel.field_cursor = 0;
            self.sel.field_scroll = 0;
            self.detail.yaml_scroll = 0;
            self.build_selected();
            self.clamp_fields();
            self.scroll_to_cursor();
        }
    }

    pub(super) fn next_change(&mut self, forward: bool) {
        let n = self.list.rows.len();
        let found = if forward {
            (self.sel.cursor + 1..n).find(|&i| has_change(&self.list.rows[i], &self.list.plan))
        } else {
            (0..self.sel.cursor)
                .rev()
                .find(|&i| has_change(&self.list.rows[i], &self.list.plan))
        };
        if let Some(i) = found {
            self.set_cursor(i);
        }
    }

    /// Put the cursor on the object with this key, if it is listed.
    pub(super) fn select_object(&mut self, key: &ObjectRef) {
        let found = self.list.rows.iter().position(|r| match r {
            Row::Object(i) => self.list.plan.objects[*i].is(key),
            Row::Group(_) => false,
        });
        if let Some(p) = found {
            self.set_cursor(p);
        }
    }
}

/// Whether a list row is an object apply or prune would change.
fn has_change(r: &Row, plan: &Plan) -> bool {
    match r {
        Row::Object(i) => matches!(
            plan.objects[*i].action,
            ObjectAction::Create | ObjectAction::Update | ObjectAction::Prune
        ),
        Row::Group(_) => false,
    }
}
