//! Following the cluster: what the watch reports, and an object planned
//! again when it changes in the cluster. Planning is a pure function of
//! the config and the live object, so this is done here, without I/O.

use super::*;

impl App {
    pub(super) fn on_live(&mut self, n: u64, event: LiveEvent) -> Vec<Effect> {
        if n != self.conn.live_gen {
            return Vec::new();
        }
        match event {
            LiveEvent::Watching => {
                if self
                    .conn
                    .live
                    .as_ref()
                    .is_some_and(|l| *l != Live::Watching)
                {
                    self.log_entry(true, "watching the cluster again".to_string());
                }
                self.conn.live = Some(Live::Watching);
                Vec::new()
            }
            LiveEvent::Interrupted(why) => {
                self.lose_live(Some(why.clone()));
                self.log_entry(false, format!("watch interrupted, reconnecting: {why}"));
                Vec::new()
            }
            LiveEvent::Changed { object, live } => self.live_changed(object, live),
        }
    }

    pub(super) fn live_stopped(&mut self, n: u64, why: String) {
        if n != self.conn.live_gen {
            return;
        }
        self.lose_live(Some(why.clone()));
        self.log_entry(
            false,
            format!("not following the cluster: {why} (r reloads)"),
        );
    }

    /// Live state stops being followed now: it is as of now when it was
    /// followed until now, else as of when it was read.
    fn lose_live(&mut self, why: Option<String>) {
        let time = match &self.conn.live {
            Some(Live::Watching) => (self.clock)(),
            Some(Live::AsOf { time, .. }) => time.clone(),
            None => self.conn.read_at.clone().unwrap_or_else(|| (self.clock)()),
        };
        self.conn.live = Some(Live::AsOf { time, why });
    }

    /// The list's rows again, if an object's action changed since.
    pub(super) fn refresh_list(&mut self) {
        if std::mem::take(&mut self.list.list_dirty) {
            let keep = self.selected_id();
            self.rebuild_keeping(keep);
        }
    }

    /// `object` changed in the cluster: plan it again against `live`.
    /// Changes of what apply would do mark it (the list, the field pane,
    /// the log) and withdraw an open apply confirmation that holds it, so
    /// the new plan needs its own confirmation; a change that leaves the
    /// plan as it was (a status update) only keeps the live object current.
    fn live_changed(&mut self, object: ObjectRef, live: Option<serde_json::Value>) -> Vec<Effect> {
        // What is under way reloads everything when done (an apply, a
        // delete, a load): its own writes are not changes of others.
        if self.jobs.loading || self.writing() {
            return Vec::new();
        }
        let index = self.list.id_index.get_or_insert_with(|| {
            self.list
                .plan
                .objects
                .iter()
                .enumerate()
                .map(|(i, o)| (o.id(), i))
                .collect()
        });
        let Some(&i) = index.get(&object) else {
            return Vec::new();
        };
        let Some(before) = self.object_owned(i) else {
            return Vec::new();
        };
        if matches!(before.action, ObjectAction::Error | ObjectAction::Prune) {
            return Vec::new();
        }
        let lean = self.list.plan.objects[i].clone();
        let small = match self.list.compact.get(i) {
            Some(Some(c)) => c.clone(),
            _ => crate::plan::compact::split(before.clone()).1,
        };
        let mut after = small.with_live(live).rebuild(&lean);
        if self.server_side().is_some() {
            let (config, live) = (after.config.take(), after.live.take());
            self.ssa_adjust(&mut after, config.as_ref(), live.as_ref());
            after.config = config;
            after.live = live;
        }
        let moved = before.action != after.action
            || before.patch != after.patch
            || before.fields != after.fields
            || before.warnings != after.warnings;
        let (old, new) = (before.action, after.action);
        // The row in the form it had (small, or whole).
        match self.list.compact.get_mut(i) {
            Some(slot @ Some(_)) => {
                let (lean, c) = crate::plan::compact::split(after);
                self.list.plan.objects[i] = lean;
                *slot = Some(c);
            }
            _ => self.list.plan.objects[i] = after,
        }
        self.unbuild(i);
        // The cached views (field table, YAML) are of the selected row:
        // stale only when it is this one (a burst elsewhere redraws cheaply).
        if self.selected_index() == Some(i) {
            self.list.plan_gen += 1;
        }
        if old != new {
            *self.list.counts.of(old) -= 1;
            *self.list.counts.of(new) += 1;
            self.list.list_dirty = true;
        }
        self.clamp_fields();
        if !moved {
            return Vec::new();
        }
        let time = (self.clock)();
        let what = if old == new {
            format!("still {}", crate::tui::theme::action_word(new))
        } else {
            format!(
                "{} → {}",
                crate::tui::theme::action_word(old),
                crate::tui::theme::action_word(new)
            )
        };
        let text = format!("{object} changed in the cluster at {time}: planned again ({what})");
        self.log_entry(true, text.clone());
        self.conn.changed.insert(object.clone(), time.clone());
        // (verb, key) of the confirmation holding it, if one does.
        let confirming = match self.confirming() {
            Some(a @ (Confirmed::Apply(_) | Confirmed::ServerSideApply { .. }))
                if a.touches(&object) =>
            {
                Some(("apply", 'a'))
            }
            Some(a @ Confirmed::Recreate(_)) if a.touches(&object) => Some(("recreate", 'F')),
            _ => None,
        };
        if let Some((verb, key)) = confirming {
            // Never a silent overwrite: the confirmation was of the old
            // plan; the new one is confirmed on its own.
            self.finish(Job::DryRun);
            self.open_popup(Popup::Notice {
                title: "changed in the cluster",
                text: format!(
                    "{object} changed in the cluster at {time} while this {verb} waited for \
                     confirmation. Nothing was sent.\n\nIts plan is made again against the \
                     cluster ({what}): press {key} to review the new plan and confirm it."
                ),
            });
            self.say(format!("{object} changed in the cluster at {time}: {verb} withdrawn, {key} reviews the new plan"), true);
        } else {
            self.say(text, false);
        }
        Vec::new()
    }

    /// The field pane's head: [`crate::tui::detail::field_head`], and when
    /// the object changed in the cluster since the load, when.
    pub fn head_lines(
        &self,
        o: &ObjectPlan,
        t: crate::tui::theme::Theme,
    ) -> Vec<ratatui::text::Line<'static>> {
        let mut head = crate::tui::detail::field_head(o, self.opts.source_root.as_deref(), t);
        if let Some(time) = self.conn.changed.get(&o.id()) {
            head.insert(
                1,
                ratatui::text::Line::from(ratatui::text::Span::styled(
                    format!("{CHANGED_MARK} changed in the cluster at {time}: planned again"),
                    t.fg(ratatui::style::Color::LightBlue)
                        .add_modifier(ratatui::style::Modifier::BOLD),
                )),
            );
        }
        head
    }
}
