//! The field pane with `--server-side`: per field the action (set, remove,
//! keep, conflict, take, migrate, stuck), the values and the managers now
//! and after; a conflict row carries its decision (force, give way).

use crate::ssa::{Decision, FieldAction as SsaAction, FieldRow};
use crate::tui::state::SsaRows;
use crate::tui::theme::*;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

/// The action column's word: the row's action, or the decision on a
/// conflict.
pub(crate) fn act_word(action: SsaAction, decision: Option<Decision>) -> &'static str {
    match (action, decision) {
        (SsaAction::Conflict, Some(Decision::Force)) => "force",
        (SsaAction::Conflict, Some(Decision::GiveWay)) => "give way",
        (SsaAction::Set, _) => "set",
        (SsaAction::Remove, _) => "remove",
        (SsaAction::Keep, _) => "keep",
        (SsaAction::Conflict, None) => "conflict",
        (SsaAction::Take, _) => "take",
        (SsaAction::Migrate, _) => "migrate",
        (SsaAction::Stuck, _) => "stuck",
    }
}

fn act_style(action: SsaAction, decision: Option<Decision>, t: Theme) -> Style {
    match (action, decision) {
        (SsaAction::Conflict, None) => t.fg(Color::Red).add_modifier(Modifier::BOLD),
        (SsaAction::Conflict, Some(Decision::Force)) | (SsaAction::Take, _) => {
            t.fg(Color::Magenta).add_modifier(Modifier::BOLD)
        }
        (SsaAction::Conflict, Some(Decision::GiveWay)) | (SsaAction::Keep, _) => {
            t.fg(Color::DarkGray)
        }
        (SsaAction::Set, _) => t.fg(Color::Green),
        (SsaAction::Remove, _) => t.fg(Color::Red),
        (SsaAction::Migrate, _) => t.fg(Color::Cyan),
        (SsaAction::Stuck, _) => t.fg(Color::Yellow),
    }
}

fn names(v: &[String]) -> String {
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}

fn value(v: Option<&serde_json::Value>, secret: bool) -> String {
    match v {
        None => "(none)".into(),
        Some(_) if secret => "\"***\"".into(),
        Some(v) => v.to_string(),
    }
}

/// The row's value and managers, now → after, as the decision makes them
/// (given way: the live value stays, its managers keep it; forced: the
/// config's value, this manager's).
fn after_parts(
    r: &FieldRow,
    decision: Option<Decision>,
    manager: &str,
    secret: bool,
) -> (String, String) {
    let (val, owners) = match (r.action, decision) {
        (SsaAction::Conflict, Some(Decision::GiveWay)) => (r.live.as_ref(), r.owners.clone()),
        (SsaAction::Conflict, Some(Decision::Force)) => {
            (r.config.as_ref(), vec![manager.to_string()])
        }
        _ => (r.config.as_ref(), r.owners_after.clone()),
    };
    (
        format!(
            "{} → {}",
            value(r.live.as_ref(), secret),
            value(val, secret)
        ),
        if owners == r.owners {
            format!("owners: {} (unchanged)", names(&owners))
        } else {
            format!("owners: {} → {}", names(&r.owners), names(&owners))
        },
    )
}

/// What the server-side field pane draws of the selected object.
pub(crate) struct SsaView<'a> {
    pub(crate) object: &'a crate::plan::ObjectPlan,
    /// Its field rows with the decision on each.
    pub(crate) rows: SsaRows,
    /// The field manager kapply applies as.
    pub(crate) manager: &'a str,
    /// Its conflicts no decision covers.
    pub(crate) undecided: usize,
    pub(crate) cursor: usize,
    pub(crate) scroll: usize,
}

pub(crate) fn render_ssa_fields(
    v: &SsaView,
    focused: bool,
    area: Rect,
    buf: &mut Buffer,
    t: Theme,
) {
    let o = v.object;
    let rows = &v.rows;
    let title = format!(" {} · server-side as {:?} ", o.id(), v.manager);
    let b = block(title, focused, t);
    let inner = b.inner(area);
    b.render(area, buf);
    let conflicts = rows
        .iter()
        .filter(|(r, _)| r.action == SsaAction::Conflict)
        .count();
    let undecided = v.undecided;
    let mut head = vec![Span::styled(
        format!(
            "{}: {} field(s)",
            crate::tui::theme::action_word(o.action),
            rows.len()
        ),
        t.action(o.action),
    )];
    if conflicts > 0 {
        head.push(Span::raw(", "));
        let style = if undecided > 0 {
            t.fg(Color::Red).add_modifier(Modifier::BOLD)
        } else {
            t.fg(Color::Magenta)
        };
        head.push(Span::styled(
            format!("{conflicts} conflict(s), {undecided} undecided"),
            style,
        ));
        head.push(Span::styled(
            " · T force · W give way",
            t.fg(Color::DarkGray),
        ));
    }
    if let Some(e) = &o.error {
        head = vec![Span::styled(format!("error: {e}"), t.fg(Color::Red))];
    }
    let head_h = if inner.height > 2 { 1 } else { 0 };
    Paragraph::new(Line::from(head))
        .wrap(Wrap { trim: false })
        .render(Rect::new(inner.x, inner.y, inner.width, head_h), buf);
    let body = Rect::new(
        inner.x,
        inner.y + head_h,
        inner.width,
        inner.height.saturating_sub(head_h),
    );
    if rows.is_empty() {
        let msg = match o.action {
            crate::plan::ObjectAction::Prune => "apply with prune would delete this object",
            _ if o.error.is_some() => "",
            _ => "no field changes: a server-side apply claims what live already holds",
        };
        Paragraph::new(Span::styled(msg, t.fg(Color::DarkGray)))
            .wrap(Wrap { trim: false })
            .render(body, buf);
        return;
    }
    let secret = is_secret(o);
    let w = usize::from(body.width);
    // Two lines a row: the action and path, then values and managers; three
    // (values, then managers) where some row's would not fit, so a narrow
    // pane cuts no manager's name.
    let indent = 11;
    let lines: Vec<Vec<String>> = rows
        .iter()
        .map(|(r, d)| {
            let (values, owners) = after_parts(r, *d, v.manager, secret);
            vec![values, owners]
        })
        .collect();
    let tall = lines
        .iter()
        .any(|l| indent + Line::from(format!("{}   {}", l[0], l[1])).width() > w);
    let per = if tall { 3 } else { 2 };
    let page = usize::from(body.height / per).max(1);
    let top = crate::tui::scroll::keep_in_view(
        v.scroll,
        v.cursor..v.cursor + 1,
        v.cursor,
        rows.len(),
        page,
    );
    for (n, (i, (r, d))) in rows.iter().enumerate().skip(top).take(page).enumerate() {
        let y = body.y + (n as u16) * per;
        let cur = i == v.cursor;
        let word = act_word(r.action, *d);
        let first = Line::from(vec![
            Span::raw(if cur { "▸ " } else { "  " }),
            Span::styled(pad(word, 9), act_style(r.action, *d, t)),
            Span::raw(fit(r.path.as_str(), w.saturating_sub(11))),
        ]);
        let rest: Vec<String> = if tall {
            lines[i].clone()
        } else {
            vec![format!("{}   {}", lines[i][0], lines[i][1])]
        };
        let mut out = vec![esc_line(first)];
        for text in rest {
            out.push(esc_line(Line::from(Span::styled(
                fit(&format!("{:indent$}{text}", ""), w),
                t.fg(Color::DarkGray),
            ))));
        }
        for (k, mut l) in out.into_iter().enumerate() {
            if cur {
                let hl = if focused {
                    Modifier::REVERSED
                } else {
                    Modifier::UNDERLINED
                };
                l = l.patch_style(Style::default().add_modifier(hl));
            }
            let y = y + k as u16;
            if y < body.y + body.height {
                l.render(Rect::new(body.x, y, body.width, 1), buf);
            }
        }
    }
}
