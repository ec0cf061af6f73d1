//! The TUI with `--server-side`: each object's action and its field pane
//! follow the server-side plan (`crate::ssa::plan_fields`, the same
//! computation as `diff --server-side`), and conflict rows take a
//! per-field decision (force it, give way) that `crate::ssa::resolve` turns
//! into the exact request.

use super::*;
use crate::ssa::{Decision, FieldAction as SsaAction, FieldRow};
use serde_json::Value;

impl App {
    /// The server-side mode, when the TUI runs with `--server-side`.
    pub fn server_side(&self) -> Option<&ServerSideMode> {
        self.opts.server_side.as_ref()
    }

    /// The per-field server-side plan of `config` over `live`.
    fn ssa_plan(&self, config: &Value, live: Option<&Value>) -> Vec<FieldRow> {
        match self.server_side() {
            Some(m) => {
                crate::ssa::plan_fields_in(config, live, &m.manager, m.force, &self.ssa.crds)
            }
            None => Vec::new(),
        }
    }

    /// Server-side mode: `o`'s action from its server-side plan (create
    /// when not in the cluster, update when any field row, else in sync),
    /// its conflicts recorded. Error rows and prune candidates stay.
    pub(super) fn ssa_adjust(
        &mut self,
        o: &mut ObjectPlan,
        config: Option<&Value>,
        live: Option<&Value>,
    ) {
        if self.server_side().is_none() {
            return;
        }
        let key = o.id();
        let Some(config) = config else {
            self.ssa.conflicts.remove(&key);
            return;
        };
        if matches!(o.action, ObjectAction::Error | ObjectAction::Prune) {
            self.ssa.conflicts.remove(&key);
            return;
        }
        let rows = self.ssa_plan(config, live);
        o.action = match (live.is_some(), rows.is_empty()) {
            (false, _) => ObjectAction::Create,
            (true, true) => ObjectAction::Unchanged,
            (true, false) => ObjectAction::Update,
        };
        // Drift and the warnings (a missing last-applied annotation, the
        // three-way patch's hazards) are client-side apply's.
        o.reverts_drift = false;
        o.warnings.clear();
        let conflicts: Vec<FieldPath> = rows
            .into_iter()
            .filter(|r| r.action == SsaAction::Conflict)
            .map(|r| r.path)
            .collect();
        if conflicts.is_empty() {
            self.ssa.conflicts.remove(&key);
        } else {
            self.ssa.conflicts.insert(key, conflicts);
        }
    }

    /// [`App::ssa_adjust`] of the rows `range` of a new plan (all of them:
    /// the conflicts of the plan before are forgotten first).
    pub(super) fn ssa_adjust_range(&mut self, range: std::ops::Range<usize>) {
        if self.server_side().is_none() || range.is_empty() {
            return;
        }
        let whole = range.start == 0 && range.end >= self.list.plan.objects.len();
        if whole {
            self.ssa.conflicts.clear();
        }
        if whole {
            self.ssa.crds = crate::ssa::CrdSchemas::default();
        }
        let mut objects = std::mem::take(&mut self.list.plan.objects);
        let end = range.end.min(objects.len());
        // The CRDs of these rows first: their custom resources follow them
        // (a CRD in a later batch than its resources plans those without it).
        for (i, o) in objects.iter().enumerate().take(end).skip(range.start) {
            if o.kind != "CustomResourceDefinition" {
                continue;
            }
            let (config, live) = match self.list.compact.get(i) {
                Some(Some(c)) => (c.config(), c.live()),
                _ => (o.config.clone(), o.live.clone()),
            };
            for crd in live.iter().chain(config.iter()) {
                self.ssa.crds.add(crd);
            }
        }
        for (i, o) in objects.iter_mut().enumerate().take(end).skip(range.start) {
            let packed = match self.list.compact.get(i) {
                Some(Some(c)) => Some((c.config(), c.live())),
                _ => None,
            };
            match packed {
                Some((config, live)) => self.ssa_adjust(o, config.as_ref(), live.as_ref()),
                None => {
                    let (config, live) = (o.config.take(), o.live.take());
                    self.ssa_adjust(o, config.as_ref(), live.as_ref());
                    o.config = config;
                    o.live = live;
                }
            }
        }
        self.list.plan.objects = objects;
        if !whole {
            return;
        }
        // Decisions on conflicts that are gone are dropped.
        let conflicts = &self.ssa.conflicts;
        self.ssa.decisions.retain(|k, d| {
            let Some(paths) = conflicts.get(k) else {
                return false;
            };
            d.retain(|p, _| paths.contains(p));
            !d.is_empty()
        });
    }

    /// Whether `o` has a conflict no decision covers (the list's `≠`).
    pub fn ssa_conflicted(&self, o: &ObjectPlan) -> bool {
        self.server_side().is_some() && self.ssa.undecided(&o.id()) > 0
    }

    /// How many objects have a conflict (the header's count).
    pub fn ssa_conflict_count(&self) -> usize {
        self.ssa.conflicts.len()
    }

    /// The selected object's server-side field rows, with the decision on
    /// each (as `update` computed them: once per object and plan, not per
    /// frame).
    pub fn ssa_rows(&self) -> SsaRows {
        let Some(i) = self.selected_index() else {
            return Default::default();
        };
        match &self.detail.views.ssa {
            Some((k, rows)) if *k == (self.list.plan_gen, i) => rows.clone(),
            _ => std::rc::Rc::new(self.ssa_rows_of(i)),
        }
    }

    /// Compute the selected object's server-side rows, if they are not
    /// computed for this object and plan.
    pub(super) fn prepare_ssa(&mut self) {
        if self.server_side().is_none() {
            return;
        }
        let Some(i) = self.selected_index() else {
            return;
        };
        let key = (self.list.plan_gen, i);
        if !matches!(&self.detail.views.ssa, Some((k, _)) if *k == key) {
            self.detail.views.ssa = Some((key, std::rc::Rc::new(self.ssa_rows_of(i))));
        }
    }

    fn ssa_rows_of(&self, i: usize) -> Vec<(FieldRow, Option<Decision>)> {
        match self.object(i) {
            Some(o) if o.config.is_some() => {
                let decided = self.ssa.decisions.get(&o.id());
                o.config
                    .as_ref()
                    .map(|c| self.ssa_plan(c, o.live.as_ref()))
                    .unwrap_or_default()
                    .into_iter()
                    .map(|r| {
                        let d = decided.and_then(|d| d.get(&r.path)).copied();
                        (r, d)
                    })
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// `T` / `W` on a conflict row: force it (take the field), give way
    /// (leave it to its manager), or, the same key again, undecide it.
    pub(super) fn ssa_decide(&mut self, decision: Decision) {
        if self.server_side().is_none() {
            self.say(
                "per-field decisions are for --server-side: kapply --server-side".to_string(),
                false,
            );
            return;
        }
        self.prepare_ssa();
        let rows = self.ssa_rows();
        let Some((row, now)) = rows.get(self.sel.field_cursor) else {
            return;
        };
        if row.action != SsaAction::Conflict {
            self.say(
                format!("{}: no conflict to decide (only conflict rows)", row.path),
                false,
            );
            return;
        }
        let Some(key) = self.selected().map(ObjectPlan::id) else {
            return;
        };
        let manager = self.server_side().map(|m| m.manager.clone());
        let owners = row
            .owners
            .iter()
            .filter(|o| Some(*o) != manager.as_ref())
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        let set = self.ssa.decisions.entry(key.clone()).or_default();
        let said = if *now == Some(decision) {
            set.remove(&row.path);
            format!("{}: undecided (the apply would fail on it)", row.path)
        } else {
            set.insert(row.path.clone(), decision);
            match decision {
                Decision::Force => format!("{}: forced, taken from {owners}", row.path),
                Decision::GiveWay => {
                    format!("{}: given way, left to {owners} (not sent)", row.path)
                }
            }
        };
        if set.is_empty() {
            self.ssa.decisions.remove(&key);
        }
        // The cached rows carry the decisions.
        self.detail.views.ssa = None;
        self.say(said, false);
    }

    /// `a` with `--server-side`: each target's request from its
    /// decisions (`crate::ssa::resolve`); an object with a conflict nobody
    /// decided is not sent (the confirmation names it and its fields).
    pub(super) fn open_apply_server_side(&mut self) -> Vec<Effect> {
        let Some(mode) = self.server_side().cloned() else {
            return Vec::new();
        };
        let mut items = Vec::new();
        let mut blocked = Vec::new();
        for i in self.targets() {
            if !matches!(
                self.list.plan.objects[i].action,
                ObjectAction::Create | ObjectAction::Update
            ) {
                continue;
            }
            let Some(o) = self.object_owned(i) else {
                continue;
            };
            let Some(config) = o.config.clone() else {
                continue;
            };
            let key = o.id();
            let decisions = self.ssa.decisions.get(&key).cloned().unwrap_or_default();
            let r = crate::ssa::resolve_in(
                &config,
                o.live.as_ref(),
                &mode.manager,
                &decisions,
                &self.ssa.crds,
            );
            if !mode.force && !r.undecided.is_empty() {
                blocked.push((key, r.undecided));
                continue;
            }
            let decided = if mode.force {
                Vec::new()
            } else {
                crate::ssa::plan_fields_in(
                    &config,
                    o.live.as_ref(),
                    &mode.manager,
                    false,
                    &self.ssa.crds,
                )
                .into_iter()
                .filter_map(|row| decisions.get(&row.path).map(|d| (row.clone(), *d)))
                .collect()
            };
            items.push(crate::ops::ServerSideItem {
                plan: o,
                config: r.config,
                force: mode.force || r.force,
                decisions: decided,
            });
        }
        if items.is_empty() {
            let text = if blocked.is_empty() {
                "nothing to apply (select a create or update)".to_string()
            } else {
                let mut t = String::from(
                    "Nothing can be sent: a conflict nobody decided fails the apply \
                     (as kubectl's would).\n\n",
                );
                for (id, paths) in &blocked {
                    t.push_str(&format!("{id}: {}\n", paths.join(", ")));
                }
                t.push_str("\nOn each conflict row: T forces it, W gives way.");
                t
            };
            if blocked.is_empty() {
                self.say(text, false);
            } else {
                self.open_popup(Popup::Notice {
                    title: "undecided conflicts",
                    text,
                });
            }
            return Vec::new();
        }
        let c = self.server_side_confirm(items, &blocked, mode.manager);
        self.open_confirm(c)
    }
}
