//! One confirmation for every destructive action, as gitui's ConfirmPopup
//! holds the `Action` it runs (its data in `tui::confirm`): what it asks is data built here, in
//! `update` (never in the view), and what it confirms is a [`Confirmed`]
//! that only the confirm key turns into its [`Effect`]. One view
//! (`dialogs::confirm_view`) draws them all; one key handler
//! ([`App::confirm_key`]) answers y/Enter/n/Esc, the typed count and the
//! extra keys for all of them.

use super::*;
use crate::tui::confirm::ESC_Q;
use crate::tui::theme::{CONFLICT_MARK, Theme, action_word, mark, show_value};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

/// The first line of the delete confirmation (it names the propagation
/// `c` changes).
fn delete_head(objects: &[ObjectPlan], propagation: Propagation, t: Theme) -> Line<'static> {
    Line::from(Span::styled(
        format!(
            "Delete {} object(s) from the cluster (propagation {propagation:?})?",
            objects.len()
        ),
        t.fg(Color::Red).add_modifier(Modifier::BOLD),
    ))
}

/// What deleting an object of this kind for a while means: the downtime a
/// recreate implies, said before it is confirmed.
fn downtime(kind: &str) -> &'static str {
    match kind {
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "ReplicationController" => {
            "its pods are deleted with it and started again: nothing runs until the new ones \
             are ready"
        }
        "Job" | "CronJob" => "its pods are deleted with it; it runs again from the start",
        "Pod" => "it stops and starts again (a new IP)",
        "Service" => {
            "it is gone until created again: connections through it fail meanwhile, and it \
             gets a new clusterIP unless the manifest sets one"
        }
        "PersistentVolumeClaim" => {
            "ITS VOLUME IS RELEASED: with the reclaim policy Delete its data is lost"
        }
        "Namespace" => "EVERYTHING IN IT IS DELETED",
        "CustomResourceDefinition" => "EVERY OBJECT OF ITS KINDS IS DELETED",
        _ => "it is gone until created again: what uses it fails meanwhile",
    }
}

/// Whether `path` is the manifest file `object` was read from (then the
/// export replaces only its document; into another file it is added).
fn shares_file(object: &ObjectPlan, path: &str) -> bool {
    let file = |o: &ObjectPlan| {
        o.source
            .as_deref()
            .map(|s| s.rsplit_once(':').map_or(s, |(f, _)| f).to_string())
    };
    file(object).as_deref() == Some(path)
}

impl App {
    /// What the open confirmation confirms, if one is open.
    pub fn confirming(&self) -> Option<&Confirmed> {
        match &self.popup {
            Some(Popup::Confirm(c)) => Some(&c.action),
            _ => None,
        }
    }

    fn theme(&self) -> Theme {
        self.opts.theme()
    }

    /// `a`: per object what is sent (its request, each field set or
    /// cleared, a structured value as a diff against live), below the
    /// server's dry run.
    pub(super) fn apply_confirm(&self, items: Vec<ApplyItem>) -> Confirm {
        let t = self.theme();
        let mut lines: Vec<Line<'static>> = Vec::new();
        for it in &items {
            self.apply_item_lines(it, t, &mut lines);
        }
        let head = format!(
            "Apply {} object(s)? This is what will be sent:",
            items.len()
        );
        let extras = vec![Extra::RecreateRefused, Extra::RetryDryRun];
        let base = Confirm::new("Confirm apply", Width::Screen, Confirmed::Apply(items));
        applying(head, lines, extras, base)
    }

    /// `a` with `--server-side`: per object its request (`force`), each
    /// decision with the managers it moves a field from or leaves it to,
    /// and the objects not sent for undecided conflicts, below the
    /// server's dry run.
    pub(super) fn server_side_confirm(
        &self,
        items: Vec<crate::ops::ServerSideItem>,
        blocked: &[(ObjectRef, Vec<FieldPath>)],
        manager: String,
    ) -> Confirm {
        let t = self.theme();
        let mut lines: Vec<Line<'static>> = Vec::new();
        for it in &items {
            self.server_side_item_lines(it, &manager, t, &mut lines);
        }
        for (id, paths) in blocked {
            lines.push(Line::from(Span::styled(
                format!(
                    "{CONFLICT_MARK} {id}: not sent, undecided conflict(s): {} (T force, W give \
                     way)",
                    paths.join(", ")
                ),
                t.fg(Color::Red).add_modifier(Modifier::BOLD),
            )));
        }
        let head = format!(
            "Apply {} object(s) server-side as field manager {manager:?}?",
            items.len()
        );
        let base = Confirm::new(
            "Confirm server-side apply",
            Width::Screen,
            Confirmed::ServerSideApply { items, manager },
        );
        applying(head, lines, vec![Extra::RetryDryRun], base)
    }

    /// The last step of `p`: the objects queued, below the server's dry
    /// run of their deletes.
    pub(super) fn prune_confirm(&self, objects: Vec<ObjectPlan>) -> Confirm {
        let t = self.theme();
        Confirm {
            head: vec![Line::from(Span::styled(
                format!("Prune (delete) {} object(s)?", objects.len()),
                t.fg(Color::Red).add_modifier(Modifier::BOLD),
            ))],
            // The server's answer first, as in the apply confirmation.
            dry_run: Some(DryRun::asked(
                "waiting for the server dry run: Enter deletes once it answers",
            )),
            body: objects
                .iter()
                .map(|o| Line::from(format!("  x {}", o.id())))
                .collect(),
            yes: Keys::enter("Enter delete"),
            no: ESC_Q,
            ..Confirm::new("Confirm prune", Width::Fixed(70), Confirmed::Prune(objects))
        }
        .settled()
    }

    /// What the apply sends of one object: its request, each field set,
    /// cleared or released (a structured value as a diff against live).
    fn apply_item_lines(&self, it: &ApplyItem, t: Theme, lines: &mut Vec<Line<'static>>) {
        let o = &it.plan;
        let (m, style) = mark(self, o);
        let partial = if it.accepted_fields.is_some() {
            ", partial"
        } else {
            ""
        };
        let how = match (&o.patch, o.action) {
            (_, ObjectAction::Create) => "POST",
            (Some(p), _) if p.kind == crate::merge::PatchType::Merge => "PATCH, JSON merge",
            _ => "PATCH, strategic merge",
        };
        lines.push(Line::from(Span::styled(
            format!("{m} {}: {} ({how}{partial})", o.id(), action_word(o.action)),
            style.add_modifier(Modifier::BOLD),
        )));
        let mut excluded = 0;
        for f in o.fields.iter().filter(|f| f.action != FieldAction::Keep) {
            if it.released_fields.contains(&f.path) {
                lines.push(Line::from(Span::styled(
                    format!(
                        "    release {} (live value {} stays; dropped from last-applied)",
                        f.path,
                        show_value(o, &f.path, &f.live)
                    ),
                    t.field(FieldAction::Keep),
                )));
                continue;
            }
            let included = it
                .accepted_fields
                .as_ref()
                .is_none_or(|acc| acc.contains(&f.path));
            if !included {
                excluded += 1;
                continue;
            }
            let structured = !crate::mask::is_secret_field(&o.kind, &f.path)
                && f.config
                    .as_ref()
                    .is_some_and(crate::plan::block::is_structured);
            let text = match f.action {
                FieldAction::Clear => format!("    clear {}", f.path),
                _ if structured => format!("    set   {}:", f.path),
                _ => format!(
                    "    set   {} = {}",
                    f.path,
                    show_value(o, &f.path, &f.config)
                ),
            };
            lines.push(Line::from(Span::styled(text, t.field(f.action))));
            if structured && f.action == FieldAction::Set {
                // As YAML (or text), line by line against live.
                for mut l in crate::tui::detail::block_diff(&f.live, &f.config, t)
                    .into_iter()
                    .skip(1)
                {
                    l.spans.insert(0, Span::raw("        "));
                    lines.push(l);
                }
            }
        }
        // Left out of this apply: one line, not one each.
        if excluded > 0 {
            lines.push(Line::from(Span::styled(
                format!("    {excluded} change(s) excluded: not sent, they stay pending"),
                t.fg(Color::DarkGray),
            )));
        }
    }

    /// What the server-side apply sends of one object: its request
    /// (`force`), each decision with the managers it moves a field from or
    /// leaves it to.
    fn server_side_item_lines(
        &self,
        it: &crate::ops::ServerSideItem,
        manager: &str,
        t: Theme,
        lines: &mut Vec<Line<'static>>,
    ) {
        use crate::ssa::Decision;
        let o = &it.plan;
        let (m, style) = mark(self, o);
        lines.push(Line::from(Span::styled(
            format!(
                "{m} {}: {} (apply patch, force={})",
                o.id(),
                action_word(o.action),
                it.force
            ),
            style.add_modifier(Modifier::BOLD),
        )));
        let secret = is_secret(o);
        for (row, d) in &it.decisions {
            let value = |v: &Option<Value>| match v {
                _ if secret => "\"***\"".to_string(),
                Some(v) => v.to_string(),
                None => "(none)".to_string(),
            };
            // The other managers: this one's own share is not taken from anyone.
            let owners = row
                .owners
                .iter()
                .filter(|o| **o != manager)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            let (text, style) = match d {
                Decision::Force => (
                    format!(
                        "    force     {} = {} (taken from {owners})",
                        row.path,
                        value(&row.config)
                    ),
                    t.fg(Color::Magenta),
                ),
                Decision::GiveWay => (
                    format!(
                        "    give way  {} (not sent: {owners} keeps {})",
                        row.path,
                        value(&row.live)
                    ),
                    t.fg(Color::DarkGray),
                ),
            };
            lines.push(Line::from(Span::styled(text, style)));
        }
        if it.force && it.decisions.is_empty() {
            lines.push(Line::from(Span::styled(
                "    --force-conflicts: every conflict is taken",
                t.fg(Color::Magenta),
            )));
        }
    }

    /// Open a confirmation; one with a dry run asks the server first.
    pub(super) fn open_confirm(&mut self, c: Confirm) -> Vec<Effect> {
        let ask = c.dry_run.as_ref().and(c.action.dry_run());
        self.open_popup(Popup::Confirm(c));
        self.ask_dry_run(ask)
    }

    fn ask_dry_run(&mut self, ask: Option<Effect>) -> Vec<Effect> {
        let Some(effect) = ask else {
            return Vec::new();
        };
        self.jobs.dry_run_progress = None;
        self.jobs.pending.push(Job::DryRun);
        vec![effect]
    }

    /// The server's dry run answered: shown in the confirmation `of`
    /// picks if that waits for it and the answer is about its objects (a
    /// stale run, for a dialog closed since, names none of them: dropped;
    /// anything else is shown whole, so the dialog never waits for a
    /// result that came). Whether it was shown.
    pub(super) fn answer_dry_run(
        &mut self,
        results: &[ObjectResult],
        of: fn(&Confirmed) -> bool,
    ) -> bool {
        let t = self.theme();
        let Some(Popup::Confirm(c)) = &mut self.popup else {
            return false;
        };
        let same = results.is_empty() || results.iter().any(|r| c.action.touches(&r.object));
        if !(of(&c.action) && c.waiting() && same) {
            return false;
        }
        let verdict = c.action.verdict(results, t);
        if let Some(d) = &mut c.dry_run {
            d.results = Some(results.to_vec());
            d.verdict = verdict;
        }
        c.settle();
        true
    }

    /// `D`: delete these objects (propagation Background until `c`).
    pub(super) fn delete_confirm(&self, objects: Vec<ObjectPlan>) -> Confirm {
        let t = self.theme();
        let propagation = Propagation::Background;
        let mut body = vec![delete_head(&objects, propagation, t)];
        body.extend(
            objects
                .iter()
                .map(|o| Line::from(format!("  x {}", o.id()))),
        );
        let n = objects.len();
        Confirm {
            body,
            yes: Keys::enter("Enter delete"),
            extras: vec![Extra::CyclePropagation],
            ..Confirm::new(
                "Confirm delete",
                Width::Fixed(70),
                Confirmed::Delete {
                    objects,
                    propagation,
                },
            )
        }
        .counted(n)
        .settled()
    }

    /// `F`: each object deleted (its uid), why the server refused it, the
    /// downtime; then how it is done.
    pub(super) fn recreate_confirm(&self, items: Vec<ApplyItem>) -> Confirm {
        let t = self.theme();
        let red = t.fg(Color::Red).add_modifier(Modifier::BOLD);
        let head = match items.len() {
            1 => "Recreate 1 object: DELETE it and create it again from its manifest?".to_string(),
            n => {
                format!("Recreate {n} objects: DELETE each and create it again from its manifest?")
            }
        };
        let mut body = vec![
            Line::from(Span::styled(head, red)),
            Line::from(
                "The server refuses the update in place (an immutable field); as kubectl apply \
                 --force does, the object is replaced.",
            ),
        ];
        for it in &items {
            let o = &it.plan;
            let uid = o
                .live
                .as_ref()
                .and_then(|l| l.pointer("/metadata/uid"))
                .and_then(Value::as_str)
                .unwrap_or("unknown");
            body.push(Line::from(Span::styled(
                format!("  x {} (uid {uid})", o.id()),
                red,
            )));
            if let Some(why) = self.refused.get(&o.id()) {
                body.push(Line::from(format!("      refused: {why}")));
            }
            body.push(Line::from(Span::styled(
                format!("      downtime: {}", downtime(&o.kind)),
                t.fg(Color::Yellow),
            )));
        }
        body.push(Line::from(Span::styled(
            format!(
                "How: a DELETE with the uid as its precondition (an object made since under that \
                 name is left alone); a wait until it is gone (at most {} s); then the manifest \
                 is created. If that create fails, the object as it was is created again; if \
                 even that fails, it stays DELETED and the log says so. Before Enter, nothing is \
                 sent.",
                crate::ops::RECREATE_WAIT.as_secs()
            ),
            t.fg(Color::DarkGray),
        )));
        let n = items.len();
        Confirm {
            body,
            yes: Keys::enter(if n > 1 {
                "Enter recreate"
            } else {
                "Enter recreate (delete, then create)"
            }),
            no: Keys::new(
                &[KeyCode::Esc, KeyCode::Char('q'), KeyCode::Char('n')],
                "Esc cancel",
            ),
            cancelled: Some("recreate cancelled: nothing was sent".to_string()),
            ..Confirm::new(
                "Confirm recreate",
                Width::ScreenUpTo(110),
                Confirmed::Recreate(items),
            )
        }
        .counted(n)
        .settled()
    }

    /// The export's path exists: `y` writes into it; `changes` (a diff,
    /// when known) is what that changes in the file.
    pub(super) fn export_confirm(
        &self,
        object: ObjectPlan,
        path: String,
        changes: Vec<String>,
    ) -> Confirm {
        let t = self.theme();
        let how = if shares_file(&object, &path) {
            format!(
                "y replaces the document of {} in it with the live object (its pending change \
                 there is lost); the comments heading it and the file's other documents stay.",
                object.id()
            )
        } else {
            format!(
                "y adds the export of {} at its end as a document of its own; nothing in it is \
                 replaced.",
                object.id()
            )
        };
        let mut body = vec![
            Line::from(Span::styled(
                format!("{path} exists."),
                t.fg(Color::Red).add_modifier(Modifier::BOLD),
            )),
            Line::from(how),
        ];
        if !changes.is_empty() {
            body.push(Line::from("What changes in it:"));
        }
        // The lines the write changes, as a diff: red gone, green added.
        body.extend(changes.into_iter().map(|c| {
            let style = match c.chars().next() {
                Some('-') => t.fg(Color::Red),
                Some('+') => t.fg(Color::Green),
                _ => t.fg(Color::DarkGray),
            };
            Line::from(Span::styled(c, style))
        }));
        Confirm {
            body,
            yes: Keys::new(&[KeyCode::Char('y')], "y write into it"),
            no: Keys::new(
                &[KeyCode::Esc, KeyCode::Char('n'), KeyCode::Char('q')],
                "n/Esc keep the file as it is",
            ),
            cancelled: Some(format!("export cancelled: {path} left as it was")),
            ..Confirm::new(
                "File exists",
                Width::Fixed(80),
                Confirmed::Export {
                    object: Box::new(object),
                    path,
                },
            )
        }
        .settled()
    }

    /// `q` with marks or queued deletes, or while a recreate runs.
    pub(super) fn quit_confirm(&self, marked: usize, queued: usize, recreating: bool) -> Confirm {
        let t = self.theme();
        let body = if recreating {
            let mut body = vec![
                Line::from(Span::styled(
                    "A recreate is under way: quit anyway?",
                    t.fg(Color::Red).add_modifier(Modifier::BOLD),
                )),
                Line::from(
                    "Quitting between its delete and its create leaves the object deleted; \
                     the log says what is done once it ends.",
                ),
            ];
            if marked + queued > 0 {
                body.push(Line::from(format!(
                    "{marked} mark(s) and {queued} queued delete(s) are dropped too."
                )));
            }
            body
        } else {
            let mut what = Vec::new();
            if marked > 0 {
                what.push(format!("{marked} object(s) marked for apply"));
            }
            if queued > 0 {
                what.push(format!("{queued} prune delete(s) queued"));
            }
            vec![
                Line::from(Span::styled(
                    format!("Quit kapply? {} are dropped.", what.join(" and ")),
                    Style::default().add_modifier(Modifier::BOLD),
                )),
                Line::from("Nothing has been sent for them."),
            ]
        };
        Confirm {
            body,
            yes: Keys::new(
                &[KeyCode::Char('y'), KeyCode::Char('q'), KeyCode::Enter],
                "y/q/Enter quit",
            ),
            no: Keys::new(&[KeyCode::Esc, KeyCode::Char('n')], "n/Esc stay"),
            ..Confirm::new("Quit?", Width::Fixed(60), Confirmed::Quit)
        }
        .settled()
    }

    /// Every confirmation's keys: the confirm keys run its action (once
    /// the count is typed), the cancel keys close it, digits type the
    /// count, its extra keys do what they say; anything else leaves it
    /// open.
    pub(super) fn confirm_key(&mut self, k: KeyEvent, mut c: Confirm) -> Vec<Effect> {
        if c.yes.codes.contains(&k.code) {
            if let Some(d) = c.dry_run.as_ref().filter(|d| d.results.is_none()) {
                // The dialog promises the server's answer before anything
                // is written: the confirm key waits for it.
                self.say(d.waiting_note, false);
            } else if c.ready() {
                let (job, effect) = c.action.run();
                self.jobs.pending.extend(job);
                return vec![effect];
            }
        } else if c.no.codes.contains(&k.code) {
            if c.dry_run.is_some() {
                self.finish(Job::DryRun);
            }
            if let Confirmed::Prune(_) = c.action {
                self.sel.queued_delete.clear();
            }
            if let Some(note) = c.cancelled {
                self.say(note, false);
            }
            return Vec::new();
        } else if let (Some(n), KeyCode::Backspace) = (&mut c.count, k.code) {
            n.typed.pop();
        } else if let (Some(n), KeyCode::Char(d)) = (&mut c.count, k.code)
            && d.is_ascii_digit()
        {
            n.typed.push(d);
        } else if let KeyCode::Char(key) = k.code
            && !c.waiting()
            && let Some(&x) = c.extras.iter().find(|x| x.key().0 == key)
        {
            return self.extra_key(x, c);
        }
        self.popup = Some(Popup::Confirm(c));
        Vec::new()
    }

    /// An extra key of the open confirmation `c`.
    fn extra_key(&mut self, does: Extra, mut c: Confirm) -> Vec<Effect> {
        match does {
            Extra::CyclePropagation => {
                if let Confirmed::Delete {
                    objects,
                    propagation,
                } = &mut c.action
                {
                    *propagation = propagation.next();
                    let head = delete_head(objects, *propagation, self.theme());
                    if let Some(first) = c.body.first_mut() {
                        *first = head;
                    }
                }
            }
            // Ask the server again (after a refusal or a failure).
            Extra::RetryDryRun => {
                let ask = c.action.dry_run();
                if let Some(d) = &mut c.dry_run {
                    *d = DryRun::asked(d.waiting_note);
                }
                c.settle();
                self.popup = Some(Popup::Confirm(c));
                return self.ask_dry_run(ask);
            }
            Extra::RecreateRefused => {
                if let Confirmed::Apply(items) = &c.action
                    && self.recreate_from_apply(items)
                {
                    return Vec::new();
                }
            }
        }
        self.popup = Some(Popup::Confirm(c));
        Vec::new()
    }
}

/// An apply's confirmation (client- or server-side): its question in bold,
/// the server's dry run first (its verdict decides whether Enter is worth
/// pressing; what is sent follows), Enter applies once it answers.
fn applying(head: String, body: Vec<Line<'static>>, extras: Vec<Extra>, base: Confirm) -> Confirm {
    Confirm {
        head: vec![Line::from(Span::styled(
            head,
            Style::default().add_modifier(Modifier::BOLD),
        ))],
        dry_run: Some(DryRun::asked(
            "waiting for the server dry run: Enter applies once it answers",
        )),
        body,
        yes: Keys::enter("Enter apply"),
        no: ESC_Q,
        extras,
        ..base
    }
    .settled()
}
