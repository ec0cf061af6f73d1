//! The dialogs as drawn (help, changes, export path, prune steps, notices,
//! and every confirmation through one view): title, width, body and footer.

use crate::plan::ObjectPlan;
use crate::tui::confirm::{Confirm, confirm_body, confirm_footer};
use crate::tui::keymap::Pane;
use crate::tui::state::{ChangeItem, Popup, PruneChoice};
use crate::tui::theme::*;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

/// What a dialog's view takes from the app besides the dialog.
#[derive(Clone, Copy)]
pub(crate) struct DialogCtx {
    /// The screen's width.
    pub(crate) width: u16,
    /// Where the keyboard is (the help dims other panes' keys).
    pub(crate) pane: Pane,
    pub(crate) spinner: usize,
    /// Of the objects the dry run under way checks, how many it answered.
    pub(crate) dry_run_progress: Option<(usize, usize)>,
}

/// A dialog's content: the body wraps and scrolls; the footer (prompt,
/// counts, keys) wraps and always shows.
pub(crate) struct PopupView {
    pub(crate) title: &'static str,
    /// The widest the frame may be, borders included.
    pub(crate) width: u16,
    pub(crate) body: Vec<Line<'static>>,
    pub(crate) footer: Vec<Line<'static>>,
}

/// The verdict's line while the server has not answered yet, with how
/// many objects it has answered once it has (thousands take a while over a
/// distant link).
fn dry_run_waiting(app: DialogCtx, t: Theme) -> Line<'static> {
    let progress = app
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

/// Every confirmation, drawn the one way: its question, the server's
/// verdict (the spinner while it is awaited), what it acts on; then the
/// count's prompt (if it asks for one) and its keys.
fn confirm_view(app: DialogCtx, c: &Confirm, t: Theme) -> PopupView {
    PopupView {
        title: c.title,
        width: c.width.of(app.width),
        body: confirm_body(c, || dry_run_waiting(app, t)),
        footer: confirm_footer(c, t),
    }
}

/// The dialog, its text escaped before it is measured and drawn.
pub(crate) fn popup_view(app: DialogCtx, p: &Popup, t: Theme) -> PopupView {
    let v = popup_view_raw(app, p, t);
    PopupView {
        body: esc_lines(v.body),
        footer: esc_lines(v.footer),
        ..v
    }
}

pub(crate) fn popup_view_raw(app: DialogCtx, p: &Popup, t: Theme) -> PopupView {
    match p {
        Popup::Help => help_view(app, t),
        Popup::Changes { changes, pos } => changes_view(changes, *pos, t),
        Popup::ExportPath {
            object,
            input,
            note,
        } => export_path_view(object, input, note.as_deref(), t),
        Popup::Notice { title, text } => PopupView {
            title,
            width: 66,
            body: text.lines().map(|l| Line::from(l.to_string())).collect(),
            footer: vec![keys_line("Esc close", t)],
        },
        Popup::Confirm(c) => confirm_view(app, c, t),
        Popup::PruneStep {
            candidates,
            pos,
            choices,
        } => prune_step_view(candidates, *pos, choices, t),
    }
}

/// `?`: every key (those of another pane dimmed), then the marks.
fn help_view(app: DialogCtx, t: Theme) -> PopupView {
    let key_style = t.fg(Color::Yellow).add_modifier(Modifier::BOLD);
    let pane = app.pane;
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
        width: app.width.saturating_sub(4).clamp(66, 110),
        body,
        footer: Vec::new(),
    }
}

/// `c`: each distinct change, how many objects carry it, the selection.
fn changes_view(changes: &[ChangeItem], pos: usize, t: Theme) -> PopupView {
    let width = changes
        .iter()
        .map(|c| c.objects.len().to_string().len())
        .max()
        .unwrap_or(1);
    let body = changes
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let selected = i == pos;
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

/// `E`: where to write an object's export, the path edited in place.
fn export_path_view(object: &ObjectPlan, input: &str, note: Option<&str>, t: Theme) -> PopupView {
    let mut body = vec![Line::from(Span::styled(
        format!(
            "Export {} as a manifest (the live object, cleaned as kapply export does)",
            object.id()
        ),
        Style::default().add_modifier(Modifier::BOLD),
    ))];
    if let Some(n) = note {
        body.push(Line::from(Span::styled(n.to_string(), t.fg(Color::Yellow))));
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

/// `p`: one prune candidate at a time, with the counts so far.
fn prune_step_view(
    candidates: &[ObjectPlan],
    pos: usize,
    choices: &[PruneChoice],
    t: Theme,
) -> PopupView {
    let mut body = Vec::new();
    if let Some(o) = candidates.get(pos) {
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
