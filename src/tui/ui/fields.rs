//! The right-hand pane: the field table, the YAML view, or the live
//! state's wait or failure.

use crate::fieldpath::FieldPath;
use crate::merge::{FieldAction, FieldChange};
use crate::ops::{Progress, Server};
use crate::plan::{ObjectAction, ObjectPlan};
use crate::tui::detail::*;
use crate::tui::fieldtable;
use crate::tui::layout::*;
use crate::tui::state::LoadStatus;
use crate::tui::theme::*;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Borders, Paragraph, Widget, Wrap};
use std::collections::BTreeSet;

/// Where the field pane is and what state the keyboard is in.
#[derive(Clone, Copy)]
pub(crate) struct PaneFocus {
    /// The pane has the keyboard (its cursor row shows).
    pub(crate) has_focus: bool,
    /// No dialog is open over it (its border shows the focus).
    pub(crate) no_popup: bool,
}

impl PaneFocus {
    fn focused(self) -> bool {
        self.has_focus && self.no_popup
    }
}

/// What the field table draws of the selected object.
pub(crate) struct FieldsView<'a> {
    pub(crate) object: &'a ObjectPlan,
    /// The table laid out at the pane's width.
    pub(crate) layout: std::rc::Rc<fieldtable::Layout>,
    /// The most lines the box under the table takes (see `tallest_detail`).
    pub(crate) tallest: u16,
    /// The pane's head (what the object is, its warnings).
    pub(crate) head: Vec<Line<'static>>,
    pub(crate) cursor: usize,
    pub(crate) scroll: usize,
    /// The object's rows left out of a partial apply.
    pub(crate) excluded: Option<&'a BTreeSet<FieldPath>>,
    /// The object's `clear` rows released (`R`).
    pub(crate) released: Option<&'a BTreeSet<FieldPath>>,
    /// The box under the table scrolled: for which row, by how much.
    pub(crate) detail_scroll: Option<&'a (String, u16)>,
}

/// The field pane with nothing to show: loading, or nothing selected.
pub(crate) fn render_no_fields(
    title: &str,
    loading: bool,
    focus: PaneFocus,
    area: Rect,
    buf: &mut Buffer,
    t: Theme,
) {
    let b = block(title.to_string(), focus.focused(), t);
    let inner = b.inner(area);
    b.render(area, buf);
    let msg = if loading {
        "loading…"
    } else {
        "nothing selected"
    };
    Paragraph::new(Span::styled(msg, t.fg(Color::DarkGray))).render(inner, buf);
}

pub(crate) fn render_fields(
    v: &FieldsView,
    focus: PaneFocus,
    area: Rect,
    buf: &mut Buffer,
    t: Theme,
) {
    let focused = focus.focused();
    let (o, layout) = (v.object, &v.layout);
    let is =
        |set: Option<&BTreeSet<FieldPath>>, path: &FieldPath| set.is_some_and(|s| s.contains(path));
    let mut title = format!(" {} · fields ", o.id());
    if layout.kept_hidden > 0 {
        title.push_str(&format!("· {} kept hidden (K) ", layout.kept_hidden));
    }
    let b = block(title, focused, t);
    let inner = b.inner(area);
    b.render(area, buf);

    let head = v.head.clone();
    let a = field_areas(v.tallest, layout.lines.len(), &head, inner);
    Paragraph::new(head)
        .wrap(Wrap { trim: false })
        .render(a.head, buf);

    if layout.rows.is_empty() {
        let msg = match o.action {
            _ if layout.kept_hidden > 0 => {
                "no field changes; K shows the fields apply keeps".to_string()
            }
            ObjectAction::Unchanged => "no field changes: live matches the config".to_string(),
            ObjectAction::Prune => "apply with prune would delete this object".to_string(),
            _ => "no field changes".to_string(),
        };
        Paragraph::new(Span::styled(msg, t.fg(Color::DarkGray)))
            .wrap(Wrap { trim: false })
            .render(
                Rect::new(
                    a.table.x,
                    a.table.y,
                    a.table.width,
                    a.table.height + a.detail.height,
                ),
                buf,
            );
        return;
    }
    let w = layout.widths;
    let sep = " ";
    // Column titles.
    let titles = ["path", "last-applied", "live", "config", "act", "reason"];
    let mut spans = vec![Span::raw(" ".repeat(layout.mark_w))];
    for (i, name) in titles.iter().enumerate() {
        if w[i] == 0 {
            continue;
        }
        if i > 0 {
            spans.push(Span::raw(sep));
        }
        spans.push(Span::raw(pad(
            &name.chars().take(w[i]).collect::<String>(),
            w[i],
        )));
    }
    let title_style = Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED);
    Line::from(spans).style(title_style).render(
        Rect::new(a.table.x, a.table.y, a.table.width, 1.min(a.table.height)),
        buf,
    );

    let body_h = a.table.height.saturating_sub(1) as usize;
    let top = fieldtable::scroll_for(layout, v.cursor, v.scroll, body_h);
    for (y, line) in layout.lines.iter().skip(top).take(body_h).enumerate() {
        let r = Rect::new(a.table.x, a.table.y + 1 + y as u16, a.table.width, 1);
        let l = match line {
            fieldtable::TLine::Header { depth, text } => {
                let indent = depth * 2;
                let room = (a.table.width as usize).saturating_sub(layout.mark_w + indent);
                Line::from(vec![
                    Span::raw(" ".repeat(layout.mark_w + indent)),
                    Span::styled(fieldtable::elide_middle(text, room), t.fg(Color::Cyan)),
                ])
            }
            fieldtable::TLine::Kept(n) => {
                let rule = if t.ascii { "--" } else { "──" };
                Line::from(Span::styled(
                    format!("{rule} kept: {n} field(s) apply leaves as they are (K hides) {rule}"),
                    t.fg(Color::DarkGray),
                ))
            }
            fieldtable::TLine::Row { row, part } => {
                let rl = &layout.rows[*row];
                let f = &o.fields[rl.field];
                let selected = *row == v.cursor && focus.has_focus;
                let marks = RowMarks {
                    excluded: is(v.excluded, &f.path),
                    released: is(v.released, &f.path),
                    selected,
                };
                field_row_line(f, rl, *part, w, layout.mark_w, marks, t)
            }
        };
        l.render(r, buf);
    }

    if a.detail.height > 0
        && let Some(f) = layout.rows.get(v.cursor).map(|r| &o.fields[r.field])
    {
        render_detail_box(v, f, a.detail, buf, t);
    }
}

/// The box under the field table: the selected row `f` whole, scrolled
/// (`Ctrl-d`/`Ctrl-u`) when it is cut.
fn render_detail_box(v: &FieldsView, f: &FieldChange, area: Rect, buf: &mut Buffer, t: Theme) {
    let o = v.object;
    let released = v.released.is_some_and(|s| s.contains(&f.path));
    let lines = field_detail(o, f, released, t);
    let b = t
        .block()
        .borders(Borders::TOP)
        .border_style(t.fg(Color::DarkGray));
    let di = b.inner(area);
    b.render(area, buf);
    let total = crate::tui::layout::wrapped_height(&lines, di.width);
    if total > di.height && di.height > 0 {
        // Cut: it scrolls, and the last row says which lines show.
        let shown = di.height - 1;
        let offset = match v.detail_scroll {
            Some((k, n)) if *k == detail_key(o, &f.path) => *n,
            _ => 0,
        };
        let top = offset.min(total - shown);
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((top, 0))
            .render(Rect::new(di.x, di.y, di.width, shown), buf);
        let last = Rect::new(di.x, di.y + shown, di.width, 1);
        Paragraph::new(Line::from(Span::styled(
            format!(
                "lines {}-{} of {total} · Ctrl-d/Ctrl-u scroll · y YAML view",
                top + 1,
                top + shown
            ),
            t.fg(Color::Yellow),
        )))
        .render(last, buf);
    } else {
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .render(di, buf);
    }
}

/// How a field row is drawn: left out of the apply, released, under the
/// cursor.
#[derive(Clone, Copy)]
pub(crate) struct RowMarks {
    pub(crate) excluded: bool,
    pub(crate) released: bool,
    pub(crate) selected: bool,
}

/// One screen line of a field row: line `part` of its values (the marks,
/// path, action and reason on the first).
pub(crate) fn field_row_line(
    f: &FieldChange,
    rl: &fieldtable::RowLayout,
    part: usize,
    w: [usize; 6],
    mark_w: usize,
    marks: RowMarks,
    t: Theme,
) -> Line<'static> {
    let RowMarks {
        excluded,
        released,
        selected,
    } = marks;
    let drift = fieldtable::is_drift(f);
    let mut style = if drift {
        t.fg(DRIFT)
    } else {
        t.field(f.action)
    };
    if excluded {
        style = t
            .fg(Color::DarkGray)
            .add_modifier(Modifier::DIM | Modifier::CROSSED_OUT);
    }
    if selected {
        style = style.add_modifier(Modifier::REVERSED);
    }
    let emph = style.add_modifier(Modifier::BOLD | Modifier::UNDERLINED);
    let mut spans = Vec::new();
    if part == 0 {
        let inc = if f.action == FieldAction::Keep {
            ' '
        } else if excluded {
            '□'
        } else {
            '■'
        };
        let cause = if !f.hazards.is_empty() {
            '⚠'
        } else if drift {
            DRIFT_MARK
        } else {
            ' '
        };
        let indent = " ".repeat(rl.depth * 2);
        let marks = if mark_w > 2 {
            format!("{inc}{cause} ")
        } else {
            format!("{inc} ")
        };
        spans.push(Span::styled(marks, style.add_modifier(Modifier::BOLD)));
        spans.push(Span::styled(
            pad(&format!("{indent}{}", rl.label[0]), w[0]),
            style,
        ));
    } else if let Some(more) = rl.label.get(part) {
        // A long map key goes on under itself.
        let indent = " ".repeat(rl.depth * 2);
        spans.push(Span::styled(" ".repeat(mark_w), style));
        spans.push(Span::styled(pad(&format!("{indent}{more}"), w[0]), style));
    } else {
        spans.push(Span::styled(" ".repeat(mark_w + w[0]), style));
    }
    for (s, cell) in rl.values.iter().enumerate() {
        spans.push(Span::styled(" ", style));
        let mut used = 0;
        if let Some(chars) = cell.get(part) {
            // Runs of flagged / unflagged chars.
            let mut run = String::new();
            let mut flag = false;
            for &(c, d) in chars {
                if d != flag && !run.is_empty() {
                    spans.push(Span::styled(
                        std::mem::take(&mut run),
                        if flag { emph } else { style },
                    ));
                }
                flag = d;
                run.push(c);
            }
            used = Line::from(chars.iter().map(|c| c.0).collect::<String>()).width();
            if !run.is_empty() {
                spans.push(Span::styled(run, if flag { emph } else { style }));
            }
        }
        spans.push(Span::styled(
            " ".repeat(w[1 + s].saturating_sub(used)),
            style,
        ));
    }
    if w[4] > 0 {
        let word = match part {
            0 if released => RELEASED_WORD,
            0 => field_word(f.action),
            _ => "",
        };
        spans.push(Span::styled(format!(" {}", pad(word, w[4])), style));
    }
    if w[5] > 0 {
        let why = if part == 0 && released {
            RELEASED_REASON.to_string()
        } else if part == 0 {
            esc(&reason(f))
        } else {
            String::new()
        };
        spans.push(Span::styled(format!(" {}", pad(&why, w[5])), style));
    }
    Line::from(spans)
}

/// What the YAML view draws of the selected object.
pub(crate) struct YamlView<'a> {
    pub(crate) object: &'a ObjectPlan,
    /// Its lines, as built by the app.
    pub(crate) lines: std::rc::Rc<Vec<Line<'static>>>,
    /// Unchanged runs shown whole (`z`).
    pub(crate) unfold: bool,
    pub(crate) scroll: usize,
}

pub(crate) fn render_yaml(
    v: Option<&YamlView>,
    focus: PaneFocus,
    area: Rect,
    buf: &mut Buffer,
    t: Theme,
) {
    let focused = focus.focused();
    let Some(v) = v else {
        block(" YAML ".to_string(), focused, t).render(area, buf);
        return;
    };
    let o = v.object;
    let b = block(
        format!(
            " {} · yaml: live → result · z {} · L annotation ",
            o.id(),
            if v.unfold { "fold" } else { "unfold" }
        ),
        focused,
        t,
    );
    let inner = b.inner(area);
    b.render(area, buf);
    let lines = &v.lines;
    let max = crate::tui::scroll::max_top(lines.len(), inner.height as usize);
    let top = v.scroll.min(max);
    let visible: Vec<Line> = lines
        .iter()
        .skip(top)
        .take(inner.height as usize)
        .cloned()
        .collect();
    Paragraph::new(esc_lines(visible)).render(inner, buf);
}

/// The field pane before live state is known: what kapply waits for (the
/// server, the context, the step, the time so far), or why it could not
/// read it and that `r` retries.
/// What the field pane says before live state is known.
pub(crate) struct LiveStateView<'a> {
    /// Why reading it failed.
    pub(crate) failure: Option<&'a str>,
    pub(crate) server: Option<&'a Server>,
    pub(crate) connecting: bool,
    pub(crate) progress: Option<&'a Progress>,
    pub(crate) load_status: Option<LoadStatus>,
    pub(crate) waited: std::time::Duration,
}

pub(crate) fn render_live_state(
    v: &LiveStateView,
    focus: PaneFocus,
    area: Rect,
    buf: &mut Buffer,
    t: Theme,
) {
    let focused = focus.focused();
    let failed = v.failure.is_some();
    let title = if failed {
        " Live state unknown "
    } else {
        " Live state loading "
    };
    let b = block(title.to_string(), focused, t);
    let inner = b.inner(area);
    b.render(area, buf);
    let dim = t.fg(Color::DarkGray);
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let row =
        |k: &str, v: String| Line::from(vec![Span::styled(format!("{k:<8}"), dim), Span::raw(v)]);
    let mut lines: Vec<Line<'static>> = Vec::new();
    match v.failure {
        Some(e) => {
            lines.push(Line::from(Span::styled(
                "The live state could not be read:",
                t.fg(Color::Red).add_modifier(Modifier::BOLD),
            )));
            lines.push(Line::from(Span::styled(e.to_string(), t.fg(Color::Red))));
            lines.push(Line::default());
        }
        None => {
            lines.push(Line::from(Span::styled(
                "Waiting for the Kubernetes API server",
                bold,
            )));
        }
    }
    if let Some(s) = v.server {
        lines.push(row("server", s.url.clone()));
        if !s.context.is_empty() {
            lines.push(row("context", s.context.clone()));
        }
    }
    if !failed {
        let step = if v.connecting {
            "connecting (GET /version)".to_string()
        } else {
            match v.progress {
                _ if v.load_status.is_some() => super::status::load_status(v.load_status),
                Some(p) => format!("{} ({}/{})", p.what, p.done, p.total),
                None => "reading the manifests".to_string(),
            }
        };
        lines.push(row("step", step));
        lines.push(row("waited", format!("{} s", v.waited.as_secs())));
    }
    lines.push(Line::default());
    lines.push(Line::from(Span::styled(
        "The list shows the manifests (?: not compared yet). Apply, delete and \
         prune need the live state.",
        dim,
    )));
    let keys = if failed {
        "r retries (connects again) · q quits"
    } else {
        "q quits at any time"
    };
    lines.push(Line::from(Span::styled(keys, bold)));
    Paragraph::new(esc_lines(lines))
        .wrap(Wrap { trim: false })
        .render(inner, buf);
}
