//! The header (counts) and the object list.

use crate::tui::app::{App, CHANGED_MARK, Focus, GroupBy, Live, Row};
use crate::tui::theme::*;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

pub(crate) fn render_header(app: &App, area: Rect, buf: &mut Buffer, t: Theme) {
    let mut lines = vec![context_line(app, area.width as usize, t)];
    // Room for the counts beside what the right end says (watching).
    let reserve = app
        .live
        .as_ref()
        .map_or(0, |l| l.label().chars().count() + 2);
    // Narrow: words only beside counts that are not zero, then the marks
    // and numbers alone (the help's legend says what each mark means).
    let counts = [Words::All, Words::NonZero, Words::None]
        .into_iter()
        .map(|w| counts_line(app, t, w))
        .find(|l| l.width() + reserve <= area.width as usize)
        .unwrap_or_else(|| counts_line(app, t, Words::None));
    lines.push(counts);
    // One row (a tiny terminal): the counts, which say what apply does.
    if area.height < 2 {
        lines.remove(0);
    }
    let counts_row = area.y + u16::try_from(lines.len().saturating_sub(1)).unwrap_or(0);
    Paragraph::new(esc_lines(lines)).render(area, buf);
    // Whether the cluster is followed, at the right of the counts (which
    // give way).
    if let Some(live) = &app.live {
        let text = live.label();
        let style = match live {
            Live::Watching => t.fg(Color::Green),
            Live::AsOf { why: Some(_), .. } => t.fg(Color::Yellow).add_modifier(Modifier::BOLD),
            Live::AsOf { why: None, .. } => t.fg(Color::DarkGray),
        };
        let w = u16::try_from(text.chars().count()).unwrap_or(u16::MAX);
        if area.width > w + 20 && counts_row < area.y + area.height {
            let x = area.x + area.width - w;
            Paragraph::new("").render(Rect::new(x - 2, counts_row, 2, 1), buf);
            Paragraph::new(Span::styled(text, style)).render(Rect::new(x, counts_row, w, 1), buf);
        }
    }
}

/// Which cluster kapply talks to: the context, the server and the
/// namespace objects without one go to, always on screen (as in k9s).
/// Where the words do not fit they are shortened (`ctx`, no scheme) and
/// cut in the middle, never dropped.
pub(crate) fn context_line(app: &App, width: usize, t: Theme) -> Line<'static> {
    let title = Span::styled("kapply  ", t.fg(Color::Cyan).add_modifier(Modifier::BOLD));
    let Some(s) = &app.server else {
        return Line::from(vec![
            title,
            Span::styled("no cluster", t.fg(Color::DarkGray)),
        ]);
    };
    let dim = t.fg(Color::DarkGray);
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let ctx = if s.context.is_empty() {
        "—"
    } else {
        s.context.as_str()
    };
    let ns = if s.namespace.is_empty() {
        "—"
    } else {
        s.namespace.as_str()
    };
    let full = [
        ("context ", ctx.to_string()),
        ("  server ", s.url.clone()),
        ("  namespace ", ns.to_string()),
    ];
    let len = |parts: &[(&str, String)]| {
        8 + parts
            .iter()
            .map(|(l, v)| l.chars().count() + v.chars().count())
            .sum::<usize>()
    };
    let parts: Vec<(&str, String)> = if len(&full) <= width {
        full.to_vec()
    } else {
        let url = s.url.split_once("://").map_or(s.url.as_str(), |(_, r)| r);
        let mut short = vec![
            ("ctx ", ctx.to_string()),
            ("  ", url.to_string()),
            ("  ns ", ns.to_string()),
        ];
        // Cut the longest first, each to no less than 8 columns.
        while len(&short) > width {
            let Some(k) = (0..3).max_by_key(|&k| short[k].1.chars().count()) else {
                break;
            };
            let n = short[k].1.chars().count();
            if n <= 8 {
                break;
            }
            let over = len(&short) - width;
            short[k].1 =
                crate::tui::fieldtable::elide_middle(&short[k].1, n.saturating_sub(over).max(8));
        }
        short
    };
    let mut spans = vec![title];
    for (label, value) in parts {
        spans.push(Span::styled(label.to_string(), dim));
        spans.push(Span::styled(value, bold));
    }
    Line::from(spans)
}

/// The counts of what apply would do (or, before live state is known, that
/// it is loading).
/// Which counts the header names in words.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Words {
    All,
    NonZero,
    None,
}

fn counts_line(app: &App, t: Theme, words: Words) -> Line<'static> {
    let c = app.counts;
    let item = |mark: &str, n: usize, word: &str, style: Style| {
        if words == Words::None || (words == Words::NonZero && n == 0) {
            return vec![Span::styled(
                format!("{mark}{n}  "),
                style.add_modifier(Modifier::BOLD),
            )];
        }
        vec![
            Span::styled(format!("{mark}{n} "), style.add_modifier(Modifier::BOLD)),
            Span::styled(format!("{word}  "), style),
        ]
    };
    let mut spans = Vec::new();
    if !app.live_known {
        // Counts of actions would be made up: none is known yet.
        let (text, style) = if app.failure.is_some() {
            ("live state unknown", t.fg(Color::Red))
        } else {
            ("live state loading", t.fg(Color::Cyan))
        };
        spans.push(Span::styled(text, style.add_modifier(Modifier::BOLD)));
        let n = app.plan.objects.len();
        if n > 0 {
            spans.push(Span::styled(
                format!("  {n} object(s) in the manifests"),
                Style::default(),
            ));
        }
        return Line::from(spans);
    }
    spans.extend(item("+", c.create, "create", t.fg(Color::Green)));
    spans.extend(item("~", c.update, "update", t.fg(Color::Yellow)));
    spans.extend(item("=", c.in_sync, "in sync", Style::default()));
    match &app.plan.prune_skipped {
        // Where the count would be: no candidate is shown, and why.
        Some(block) => spans.push(Span::styled(
            format!("{}  ", block.short()),
            t.fg(Color::Red).add_modifier(Modifier::BOLD),
        )),
        None => spans.extend(item("-", c.prune, "prune", t.fg(Color::Magenta))),
    }
    spans.extend(item("!", c.error, "error", t.fg(Color::Red)));
    spans.extend(item(
        &WARNING_MARK.to_string(),
        c.warning,
        "warning",
        t.fg(Color::Yellow),
    ));
    if app.server_side().is_some() {
        spans.extend(item(
            &CONFLICT_MARK.to_string(),
            app.ssa_conflict_count(),
            "conflict",
            t.fg(Color::Red),
        ));
    }
    spans.extend(item("●", app.marked.len(), "marked", t.fg(Color::Cyan)));
    Line::from(spans)
}

pub(crate) fn render_list(app: &App, area: Rect, buf: &mut Buffer, t: Theme) {
    let group = match app.group {
        GroupBy::Namespace => "ns",
        GroupBy::Kind => "kind",
    };
    let mut title = format!(" Objects {}/{} {group}", app.shown, app.plan.objects.len());
    if app.filter != crate::tui::app::Filter::All {
        title.push_str(&format!(" · {}", app.filter.label()));
    }
    title.push(' ');
    let b = block(title, app.focus == Focus::List && app.popup.is_none(), t);
    let inner = b.inner(area);
    b.render(area, buf);
    if app.rows.is_empty() {
        let msg = if app.loading || app.connecting {
            "loading…"
        } else if !app.live_known {
            "no object read"
        } else if app.plan.objects.is_empty() {
            "no objects"
        } else {
            "no object matches"
        };
        Paragraph::new(Span::styled(msg, t.fg(Color::DarkGray))).render(inner, buf);
        return;
    }
    let h = inner.height as usize;
    // The scroll offset is kept by update(); clamp here so the cursor always shows.
    let top = crate::tui::scroll::keep_in_view(
        app.list_scroll,
        app.cursor..app.cursor + 1,
        app.cursor,
        app.rows.len(),
        h,
    );
    for (y, (ri, row)) in app.rows.iter().enumerate().skip(top).take(h).enumerate() {
        let line = match row {
            Row::Group(g) => Line::from(Span::styled(
                format!("▾ {g}"),
                t.fg(Color::Cyan).add_modifier(Modifier::BOLD),
            )),
            Row::Object(i) => {
                let o = &app.plan.objects[*i];
                let (m, style) = mark(app, o);
                let key = o.id();
                // ◐: some of its changes are excluded (a partial apply).
                let sel = if app.excluded.contains_key(&key) {
                    "◐"
                } else if app.marked.contains(&key) {
                    "●"
                } else {
                    " "
                };
                let label = match app.group {
                    // A manifest that could not be read has no identity.
                    _ if o.kind.is_empty() => o.id().to_string(),
                    GroupBy::Namespace => format!("{}/{}", app.kind_label(o), o.name),
                    GroupBy::Kind => match &o.namespace {
                        Some(ns) => format!("{ns}/{}", o.name),
                        None => o.name.clone(),
                    },
                };
                let mut spans = vec![
                    Span::styled(
                        format!(" {sel}"),
                        t.fg(Color::Cyan).add_modifier(Modifier::BOLD),
                    ),
                    Span::styled(format!("{m} "), style.add_modifier(Modifier::BOLD)),
                ];
                if o.reverts_drift {
                    // Said in words where the row has room, as a mark where not.
                    let room = (inner.width as usize).saturating_sub(4 + label.chars().count());
                    let note = if room >= 16 {
                        format!("{label} {DRIFT_MARK} reverts drift")
                    } else {
                        format!("{DRIFT_MARK}{label}")
                    };
                    let cut = note.find(&label).unwrap_or(0);
                    let (a, b) = note.split_at(cut);
                    let (lab, rest) = b.split_at(label.len());
                    if !a.is_empty() {
                        spans.push(Span::styled(
                            a.to_string(),
                            t.fg(DRIFT).add_modifier(Modifier::BOLD),
                        ));
                    }
                    spans.push(Span::styled(lab.to_string(), style));
                    if !rest.is_empty() {
                        spans.push(Span::styled(rest.to_string(), t.fg(DRIFT)));
                    }
                } else {
                    spans.push(Span::styled(label.clone(), style));
                }
                if let Some(time) = app.changed.get(&key) {
                    // Changed in the cluster since the load: when, where
                    // the row has room.
                    let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
                    let room = (inner.width as usize).saturating_sub(used);
                    let note = if room >= 11 + time.chars().count() {
                        format!(" {CHANGED_MARK} changed {time}")
                    } else {
                        format!(" {CHANGED_MARK}")
                    };
                    spans.push(Span::styled(
                        note,
                        t.fg(Color::LightBlue).add_modifier(Modifier::BOLD),
                    ));
                }
                let mut l = Line::from(spans);
                if ri == app.cursor {
                    let hl = if app.focus == Focus::List {
                        Modifier::REVERSED
                    } else {
                        Modifier::UNDERLINED
                    };
                    l = l.patch_style(Style::default().add_modifier(hl));
                }
                l
            }
        };
        let r = Rect::new(inner.x, inner.y + y as u16, inner.width, 1);
        if ri == app.cursor && app.focus == Focus::List {
            buf.set_style(r, Style::default().add_modifier(Modifier::REVERSED));
        }
        esc_line(line).render(r, buf);
    }
}
