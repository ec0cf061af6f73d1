//! The dialogs' content (help, apply, delete, prune, notices): title,
//! width, body and footer. Measured by `layout`, drawn by `ui`.

use crate::merge::FieldAction;
use crate::plan::ObjectAction;
use crate::tui::app::{App, Confirm, Popup, PruneChoice, confirm_footer};
use crate::tui::theme::*;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

/// A dialog's content: the body wraps and scrolls; the footer (prompt,
/// counts, keys) wraps and always shows.
pub(crate) struct PopupView {
    pub(crate) title: &'static str,
    /// The widest the frame may be, borders included.
    pub(crate) width: u16,
    pub(crate) body: Vec<Line<'static>>,
    pub(crate) footer: Vec<Line<'static>>,
}

/// The dialog, its text escaped before it is measured and drawn.
/// A dry-run verdict's mark and colour: `✓` done (or would be), `✗` not.
fn verdict_mark(r: &crate::ops::ObjectResult, t: Theme) -> (&'static str, Style) {
    if r.ok() {
        ("✓", t.fg(Color::Green))
    } else {
        ("✗", t.fg(Color::Red))
    }
}

/// The heading of the server's dry-run verdict in the apply and prune
/// confirmations.
fn dry_run_title() -> Line<'static> {
    Line::from(Span::styled(
        "Server dry run:",
        Style::default().add_modifier(Modifier::BOLD),
    ))
}

/// The verdict's line while the server has not answered yet, with how
/// many objects it has answered once it has (thousands take a while over a
/// distant link).
fn dry_run_waiting(app: &App, t: Theme) -> Line<'static> {
    let progress = app
        .jobs
        .dry_run_progress
        .map(|(done, total)| format!(" {done}/{total} answered"))
        .unwrap_or_default();
    Line::from(Span::styled(
        format!(
            "  {} waiting for the server…{progress}",
            SPINNER[app.spinner % SPINNER.len()]
        ),
        t.fg(Color::Cyan),
    ))
}

/// The server-side apply's confirmation: the server's dry run, then per
/// object its request (`force`), each decision with the managers it moves
/// a field from or leaves it to, and the objects not sent for undecided
/// conflicts.
fn server_side_view(
    app: &App,
    items: &[crate::ops::ServerSideItem],
    blocked: &[(crate::objref::ObjectRef, Vec<String>)],
    dry_run: Option<&[crate::ops::ObjectResult]>,
    t: Theme,
) -> PopupView {
    use crate::ssa::Decision;
    let manager = app
        .server_side()
        .map(|m| m.manager.clone())
        .unwrap_or_default();
    let mut lines: Vec<Line<'static>> = vec![Line::from(Span::styled(
        format!(
            "Apply {} object(s) server-side as field manager {manager:?}?",
            items.len()
        ),
        Style::default().add_modifier(Modifier::BOLD),
    ))];
    lines.push(dry_run_title());
    match dry_run {
        None => lines.push(dry_run_waiting(app, t)),
        Some(rs) => {
            for r in rs {
                let (m, s) = verdict_mark(r, t);
                for (n, l) in format!("{}: {}", r.object, r.message()).lines().enumerate() {
                    let lead = if n == 0 {
                        format!("  {m} ")
                    } else {
                        "    ".into()
                    };
                    lines.push(Line::from(Span::styled(format!("{lead}{l}"), s)));
                }
            }
        }
    }
    for it in items {
        let o = &it.plan;
        let (m, style) = mark(app, o);
        lines.push(Line::from(Span::styled(
            format!(
                "{m} {}: {} (apply patch, force={})",
                o.id(),
                action_word(o.action),
                it.force
            ),
            style.add_modifier(Modifier::BOLD),
        )));
        let secret = crate::tui::app::is_secret(o);
        for (row, d) in &it.decisions {
            let value = |v: &Option<serde_json::Value>| match v {
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
            let text = match d {
                Decision::Force => format!(
                    "    force     {} = {} (taken from {owners})",
                    row.path,
                    value(&row.config)
                ),
                Decision::GiveWay => format!(
                    "    give way  {} (not sent: {owners} keeps {})",
                    row.path,
                    value(&row.live)
                ),
            };
            let style = match d {
                Decision::Force => t.fg(Color::Magenta),
                Decision::GiveWay => t.fg(Color::DarkGray),
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
    for (id, paths) in blocked {
        lines.push(Line::from(Span::styled(
            format!(
                "{CONFLICT_MARK} {id}: not sent, undecided conflict(s): {} (T force, W give way)",
                paths.join(", ")
            ),
            t.fg(Color::Red).add_modifier(Modifier::BOLD),
        )));
    }
    PopupView {
        title: "Confirm server-side apply",
        width: app.size.width.saturating_sub(4),
        body: lines,
        footer: vec![keys_line(
            match dry_run {
                None => "Esc cancel (Enter waits for the dry run)",
                Some(rs) if rs.iter().all(crate::ops::ObjectResult::ok) => {
                    "Enter apply · Esc cancel"
                }
                Some(_) => {
                    "Enter apply (refused objects fail again) · r retry dry run · Esc cancel"
                }
            },
            t,
        )],
    }
}

/// Every confirmation, drawn the one way: its body, then the count's
/// prompt (if it asks for one) and its keys.
fn confirm_view(app: &App, c: &Confirm, t: Theme) -> PopupView {
    PopupView {
        title: c.title,
        width: c.width.of(app.size.width),
        body: c.body.clone(),
        footer: confirm_footer(c, t),
    }
}

pub(crate) fn popup_view(app: &App, p: &Popup, t: Theme) -> PopupView {
    let v = popup_view_raw(app, p, t);
    PopupView {
        body: esc_lines(v.body),
        footer: esc_lines(v.footer),
        ..v
    }
}

pub(crate) fn popup_view_raw(app: &App, p: &Popup, t: Theme) -> PopupView {
    match p {
        Popup::Help => {
            let key_style = t.fg(Color::Yellow).add_modifier(Modifier::BOLD);
            let pane = app.pane();
            let mut body: Vec<Line<'static>> = crate::tui::keymap::BINDINGS
                .iter()
                .map(|b| {
                    // Keys of another pane than the focused one are dimmed.
                    let here = b.keys.is_empty() || b.panes.contains(&pane);
                    let desc = if here {
                        Style::default()
                    } else {
                        t.fg(Color::DarkGray)
                    };
                    let wher = match crate::tui::keymap::where_words(b.panes) {
                        "everywhere" => String::new(),
                        w => format!("{w}: "),
                    };
                    Line::from(vec![
                        Span::styled(format!("{:<14}", b.label), key_style),
                        Span::styled(format!("{wher}{}", b.help), desc),
                    ])
                })
                .collect();
            body.push(Line::from(""));
            body.push(Line::from(Span::styled(
                "Marks",
                Style::default().add_modifier(Modifier::BOLD),
            )));
            for (m, what) in crate::tui::keymap::MARKS {
                body.push(Line::from(vec![
                    Span::styled(format!("{m:<14}"), key_style),
                    Span::raw(what.to_string()),
                ]));
            }
            PopupView {
                title: "Keys",
                width: app.size.width.saturating_sub(4).clamp(66, 110),
                body,
                footer: Vec::new(),
            }
        }
        Popup::Changes { changes, pos } => {
            let width = changes
                .iter()
                .map(|c| c.objects.len().to_string().len())
                .max()
                .unwrap_or(1);
            let body = changes
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let selected = i == *pos;
                    // Reversed, so the selection shows without colour too.
                    let base = if selected {
                        Style::default().add_modifier(Modifier::REVERSED)
                    } else {
                        Style::default()
                    };
                    let mut spans = vec![
                        Span::styled(if selected { "▶ " } else { "  " }, base),
                        Span::styled(
                            format!("{:>width$} ", c.objects.len()),
                            base.add_modifier(Modifier::BOLD),
                        ),
                        Span::styled(format!("{}  ", c.path), base),
                        Span::styled(c.values.clone(), base.patch(t.fg(Color::Yellow))),
                        Span::styled(format!("  in {} [{}]", c.carried, c.cause), base),
                    ];
                    if c.hazard {
                        spans.push(Span::styled(" ⚠", base.patch(t.fg(Color::Red))));
                    }
                    Line::from(spans)
                })
                .collect();
            PopupView {
                title: "Changes",
                width: 120,
                body,
                footer: vec![keys_line(
                    "j/k move · Enter mark every object with this change (it alone) · Esc close",
                    t,
                )],
            }
        }
        Popup::ExportPath {
            object,
            input,
            note,
        } => {
            let mut body = vec![Line::from(Span::styled(
                format!(
                    "Export {} as a manifest (the live object, cleaned as kapply export does)",
                    object.id()
                ),
                Style::default().add_modifier(Modifier::BOLD),
            ))];
            if let Some(n) = note {
                body.push(Line::from(Span::styled(n.clone(), t.fg(Color::Yellow))));
            }
            if object.kind == "Secret" {
                body.push(Line::from(Span::styled(
                    "Secret: its values are written in clear to the file",
                    t.fg(Color::Yellow),
                )));
            }
            PopupView {
                title: "Export",
                width: 80,
                body,
                footer: vec![
                    Line::from(vec![
                        Span::raw("Path: "),
                        Span::styled(
                            format!("{input}▏"),
                            t.fg(Color::Yellow).add_modifier(Modifier::BOLD),
                        ),
                    ]),
                    keys_line("Enter write · Ctrl-U clear · Esc cancel", t),
                ],
            }
        }
        Popup::Notice { title, text } => PopupView {
            title,
            width: 66,
            body: text.lines().map(|l| Line::from(l.to_string())).collect(),
            footer: vec![keys_line("Esc close", t)],
        },
        Popup::ApplyConfirm { items, dry_run } => {
            let mut lines: Vec<Line> = Vec::new();
            lines.push(Line::from(Span::styled(
                format!(
                    "Apply {} object(s)? This is what will be sent:",
                    items.len()
                ),
                Style::default().add_modifier(Modifier::BOLD),
            )));
            // The server's verdict first: it decides whether Enter is worth
            // pressing; what is sent follows.
            lines.push(dry_run_title());
            match dry_run {
                None => lines.push(dry_run_waiting(app, t)),
                Some(rs) => {
                    for r in rs {
                        let (m, s) = verdict_mark(r, t);
                        lines.push(Line::from(Span::styled(
                            format!("  {m} {}: {}", r.object, r.message()),
                            s,
                        )));
                        // The way forward for an update refused as invalid.
                        if matches!(
                            r.outcome,
                            crate::ops::Outcome::Failed(crate::ops::Failure::Invalid(_))
                        ) {
                            lines.push(Line::from(Span::styled(
                                "    F recreates it: deletes it and creates it again from the \
                                 manifest (downtime; its own confirmation first)",
                                t.fg(Color::Yellow).add_modifier(Modifier::BOLD),
                            )));
                        }
                    }
                }
            }
            for it in items {
                let o = &it.plan;
                let (m, style) = mark(app, o);
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
                        for l in crate::tui::detail::block_diff(&f.live, &f.config, t)
                            .into_iter()
                            .skip(1)
                        {
                            let mut l = l;
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
            PopupView {
                title: "Confirm apply",
                // The screen's width: real objects have long paths and values.
                width: app.size.width.saturating_sub(4),
                body: lines,
                footer: vec![keys_line(
                    match dry_run {
                        None => "Esc cancel (Enter waits for the dry run)",
                        Some(rs) if rs.iter().all(crate::ops::ObjectResult::ok) => {
                            "Enter apply · Esc cancel"
                        }
                        Some(rs)
                            if rs.iter().any(|r| {
                                matches!(
                                    r.outcome,
                                    crate::ops::Outcome::Failed(crate::ops::Failure::Invalid(_))
                                )
                            }) =>
                        {
                            "Enter apply (refused objects fail again) · F recreate the refused · \
                             r retry dry run · Esc cancel"
                        }
                        Some(_) => {
                            "Enter apply (refused objects fail again) · r retry dry run · Esc cancel"
                        }
                    },
                    t,
                )],
            }
        }
        Popup::ServerSideConfirm {
            items,
            blocked,
            dry_run,
        } => server_side_view(app, items, blocked, dry_run.as_deref(), t),
        Popup::Confirm(c) => confirm_view(app, c, t),
        Popup::PruneStep {
            candidates,
            pos,
            choices,
        } => {
            let mut body = Vec::new();
            if let Some(o) = candidates.get(*pos) {
                body.push(Line::from(Span::styled(
                    format!("Candidate {}/{}: {}", pos + 1, candidates.len(), o.id()),
                    t.fg(Color::Magenta).add_modifier(Modifier::BOLD),
                )));
                body.push(Line::from(format!(
                    "why: {}",
                    o.prune_reason.as_deref().unwrap_or("not in the manifests")
                )));
                if let Some(labels) = o
                    .live
                    .as_ref()
                    .and_then(|l| l.pointer("/metadata/labels"))
                    .and_then(Value::as_object)
                {
                    let l: Vec<String> = labels
                        .iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                        .collect();
                    body.push(Line::from(format!("labels: {}", l.join(","))));
                }
                for w in &o.warnings {
                    body.push(Line::from(Span::styled(
                        format!("⚠ {w}"),
                        t.fg(Color::Yellow),
                    )));
                }
            }
            body.push(Line::from(Span::styled(
                "y queues it for deletion (nothing is deleted before the last confirmation); \
                 n keeps it; s skips it for now. Kept and skipped objects stay in the cluster.",
                t.fg(Color::DarkGray),
            )));
            let count = |c: PruneChoice| choices.iter().filter(|x| **x == c).count();
            PopupView {
                title: "Prune",
                width: 70,
                body,
                footer: vec![
                    Line::from(Span::styled(
                        format!(
                            "queued {} · kept {} · skipped {}",
                            count(PruneChoice::Prune),
                            count(PruneChoice::Keep),
                            count(PruneChoice::Skip)
                        ),
                        t.fg(Color::DarkGray),
                    )),
                    keys_line("y prune · n keep · s skip · Esc cancel", t),
                ],
            }
        }
        Popup::PruneConfirm { objects, dry_run } => {
            let mut body = vec![Line::from(Span::styled(
                format!("Prune (delete) {} object(s)?", objects.len()),
                t.fg(Color::Red).add_modifier(Modifier::BOLD),
            ))];
            // The server's answer first, as in the apply confirmation.
            body.push(dry_run_title());
            match dry_run {
                None => body.push(dry_run_waiting(app, t)),
                Some(rs) if rs.is_empty() => body.push(Line::from(Span::styled(
                    "  no cluster to ask (nothing was checked)",
                    t.fg(Color::DarkGray),
                ))),
                Some(rs) => {
                    for r in rs {
                        let (m, s) = verdict_mark(r, t);
                        body.push(Line::from(Span::styled(
                            format!("  {m} {}: {}", r.object, r.message()),
                            s,
                        )));
                    }
                }
            }
            for o in objects {
                body.push(Line::from(format!("  x {}", o.id())));
            }
            PopupView {
                title: "Confirm prune",
                width: 70,
                body,
                footer: vec![keys_line(
                    if dry_run.is_some() {
                        "Enter delete · Esc cancel"
                    } else {
                        "Esc cancel (Enter waits for the dry run)"
                    },
                    t,
                )],
            }
        }
    }
}
