//! The dialogs: what apply, delete and prune act on, opening each dialog,
//! and one key handler per dialog.

use super::*;

impl App {
    /// The objects `a`, `D` act on: the marked ones, else the selected one
    /// (indices into the plan).
    pub(super) fn targets(&self) -> Vec<usize> {
        let marked: Vec<usize> = (0..self.list.plan.objects.len())
            .filter(|&i| self.sel.marked.contains(&self.list.plan.objects[i].id()))
            .collect();
        if !marked.is_empty() {
            return marked;
        }
        self.selected_index().into_iter().collect()
    }

    /// What an apply of these objects sends, honouring excluded and
    /// released fields (as `apply --plan` does with `"action": "release"`).
    pub fn apply_items(&self) -> Vec<ApplyItem> {
        self.targets()
            .into_iter()
            .filter(|&i| {
                matches!(
                    self.list.plan.objects[i].action,
                    ObjectAction::Create | ObjectAction::Update
                )
            })
            .filter_map(|i| self.object_owned(i))
            .map(|o| {
                let key = o.id();
                // Only rows the current plan can still release.
                let released_fields: Vec<FieldPath> = self
                    .sel
                    .released
                    .get(&key)
                    .into_iter()
                    .flatten()
                    .filter(|p| crate::plan::release_refusal_kind(&o, p).is_none())
                    .cloned()
                    .collect();
                let accepted_fields = self.sel.excluded.get(&key).map(|ex| {
                    o.fields
                        .iter()
                        .filter(|f| f.action != FieldAction::Keep && !ex.contains(&f.path))
                        .filter(|f| !released_fields.contains(&f.path))
                        .map(|f| f.path.clone())
                        .collect()
                });
                ApplyItem {
                    plan: o,
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

    pub(super) fn open_apply(&mut self) -> Vec<Effect> {
        let items = self.apply_items();
        if items.is_empty() {
            self.say(
                "nothing to apply (select a create or update with included changes)".to_string(),
                false,
            );
            return Vec::new();
        }
        let c = self.apply_confirm(items);
        self.open_confirm(c)
    }

    /// `E` on an object apply does not manage yet (its live object has no
    /// last-applied annotation) or on a prune candidate: ask the engine
    /// where to write its export.
    pub(super) fn open_export(&mut self) -> Vec<Effect> {
        let Some(o) = self.selected() else {
            return Vec::new();
        };
        let unmanaged = o.live.as_ref().is_some_and(|l| {
            l.pointer("/metadata/annotations")
                .and_then(|a| a.get(crate::merge::LAST_APPLIED))
                .is_none()
        });
        if o.action != ObjectAction::Prune && !unmanaged {
            self.say(
                format!(
                    "{}: E exports objects apply does not manage yet (no last-applied annotation) \
                 and prune candidates",
                    o.id()
                ),
                false,
            );
            return Vec::new();
        }
        // The manifest file, when it holds this object alone: the export
        // can replace it without touching other objects.
        let file = |src: &str| src.rsplit_once(':').map_or(src, |(f, _)| f).to_string();
        let own_file = o.source.as_deref().map(file).filter(|f| {
            self.list
                .plan
                .objects
                .iter()
                .filter(|x| x.source.as_deref().map(file).as_ref() == Some(f))
                .count()
                == 1
        });
        let o = o.clone();
        self.last_result = None;
        self.last_result_failed = false;
        self.jobs.pending.push(Job::ReadForExport);
        vec![Effect::ExportTarget(o, own_file)]
    }

    pub(super) fn open_delete(&mut self) {
        let objects: Vec<ObjectPlan> = self
            .targets()
            .into_iter()
            .filter_map(|i| self.object_owned(i))
            // Objects still to be created are not in the cluster.
            .filter(|o| {
                o.live.is_some()
                    || matches!(
                        o.action,
                        ObjectAction::Update | ObjectAction::Unchanged | ObjectAction::Prune
                    )
            })
            .collect();
        if objects.is_empty() {
            self.say(
                "nothing to delete (the object is not in the cluster)",
                false,
            );
            return;
        }
        let c = self.delete_confirm(objects);
        self.open_popup(Popup::Confirm(c));
    }

    pub(super) fn open_prune(&mut self) {
        if let Some(block) = &self.list.plan.prune_skipped {
            self.open_popup(Popup::Notice {
                title: "Prune disabled",
                text: format!(
                    "{block}.\n\nAn object in a manifest kapply cannot read would look removed, \
                     and pruning would delete it. Fix the rows marked ! and press r to reload."
                ),
            });
            return;
        }
        let candidates: Vec<ObjectPlan> = (0..self.list.plan.objects.len())
            .filter(|&i| self.list.plan.objects[i].action == ObjectAction::Prune)
            .filter_map(|i| self.object_owned(i))
            .collect();
        let Some(first) = candidates.first() else {
            let text = match &self.conn.prune_scope {
                None => "Pruning is not enabled for this run, so nothing is looked for.\n\n\
                         Start kapply with --prune -l SELECTOR (objects with those labels that \
                         the manifests no longer hold), --prune --all, or --prune --applyset \
                         NAME, as with kubectl apply."
                    .to_string(),
                Some(scope) => format!(
                    "Nothing matched: every live object pruning looked at is in the \
                     manifests.\n\nPruning: {scope}."
                ),
            };
            self.open_popup(Popup::Notice {
                title: "No prune candidates",
                text,
            });
            return;
        };
        self.sel.queued_delete.clear();
        self.select_object(&first.id());
        self.open_popup(Popup::PruneStep {
            candidates,
            pos: 0,
            choices: Vec::new(),
        });
    }

    /// Show a dialog from its top.
    pub(super) fn open_popup(&mut self, p: Popup) {
        self.popup = Some(p);
        self.popup_scroll = 0;
    }

    /// Scroll the open dialog's body, within what it has to show.
    pub(super) fn scroll_popup(&mut self, d: i32) {
        let (max, _) = self.popup_scroll_range();
        let to = scroll::moved(self.popup_scroll.into(), d as isize, max.into());
        self.popup_scroll = u16::try_from(to).unwrap_or(max);
    }

    pub(super) fn on_popup_key(&mut self, k: KeyEvent) -> Vec<Effect> {
        // No dialog but the path input uses j/k or the page keys for
        // anything else.
        let page = i32::from(self.popup_scroll_range().1);
        // The path input types letters; the changes view moves its own
        // selection.
        let typing = matches!(
            self.popup,
            Some(Popup::ExportPath { .. } | Popup::Changes { .. })
        );
        let d = match k.code {
            _ if typing => 0,
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
        // Each handler puts its dialog back unless the key closes it.
        match popup {
            Popup::Help => self.help_key(k),
            Popup::Changes { changes, pos } => self.changes_key(k, changes, pos),
            Popup::ExportPath {
                object,
                input,
                note,
            } => self.export_path_key(k, object, input, note),
            Popup::Notice { title, text } => self.notice_key(k, title, text),
            Popup::Confirm(c) => self.confirm_key(k, c),
            Popup::PruneStep {
                candidates,
                pos,
                choices,
            } => self.prune_step_key(k, candidates, pos, choices),
        }
    }

    fn help_key(&mut self, k: KeyEvent) -> Vec<Effect> {
        match k.code {
            KeyCode::Esc | KeyCode::Char('?') | KeyCode::Char('q') | KeyCode::Enter => {}
            _ => self.popup = Some(Popup::Help),
        }
        Vec::new()
    }

    fn export_path_key(
        &mut self,
        k: KeyEvent,
        object: ObjectPlan,
        mut input: String,
        note: Option<String>,
    ) -> Vec<Effect> {
        match k.code {
            KeyCode::Esc => return Vec::new(),
            KeyCode::Enter if !input.trim().is_empty() => {
                self.jobs.pending.push(Job::Exporting);
                return vec![Effect::Export(object, input.trim().to_string(), false)];
            }
            KeyCode::Backspace => {
                input.pop();
            }
            KeyCode::Char('u') if k.modifiers.contains(KeyModifiers::CONTROL) => input.clear(),
            KeyCode::Char(c) => input.push(c),
            _ => {}
        }
        self.popup = Some(Popup::ExportPath {
            object,
            input,
            note,
        });
        Vec::new()
    }

    fn notice_key(&mut self, k: KeyEvent, title: &'static str, text: String) -> Vec<Effect> {
        match k.code {
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Enter | KeyCode::Char('p') => {}
            _ => self.popup = Some(Popup::Notice { title, text }),
        }
        Vec::new()
    }

    fn prune_step_key(
        &mut self,
        k: KeyEvent,
        candidates: Vec<ObjectPlan>,
        pos: usize,
        mut choices: Vec<PruneChoice>,
    ) -> Vec<Effect> {
        let choice = match k.code {
            KeyCode::Esc | KeyCode::Char('q') => {
                self.sel.queued_delete.clear();
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
            self.sel.queued_delete.insert(o.id());
        }
        choices.push(choice);
        let pos = pos + 1;
        if let Some(next) = candidates.get(pos) {
            self.select_object(&next.id());
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
                self.say("prune: nothing queued".to_string(), false);
            } else {
                // As apply: the server's answer before the confirmation.
                let c = self.prune_confirm(objects);
                return self.open_confirm(c);
            }
        }
        Vec::new()
    }
}
