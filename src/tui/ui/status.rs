//! The status line and the log pane.

use crate::ops::{Progress, Server};
use crate::tui::keymap::Pane;
use crate::tui::state::{Job, LoadStatus, LogEntry};
use crate::tui::theme::*;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

pub(crate) fn render_log(log: &[LogEntry], area: Rect, buf: &mut Buffer, t: Theme) {
    let b = block(" Log ".to_string(), false, t);
    let inner = b.inner(area);
    b.render(area, buf);
    let h = inner.height as usize;
    let lines: Vec<Line> = log
        .iter()
        .skip(log.len().saturating_sub(h))
        .map(|e| {
            let (m, s) = if e.ok {
                ("✓", t.fg(Color::Green))
            } else {
                ("✗", t.fg(Color::Red))
            };
            Line::from(vec![
                Span::styled(format!("{} ", e.time), t.fg(Color::DarkGray)),
                Span::styled(format!("{m} "), s.add_modifier(Modifier::BOLD)),
                Span::styled(e.text.clone(), s),
            ])
        })
        .collect();
    if lines.is_empty() {
        Paragraph::new(Span::styled("nothing yet", t.fg(Color::DarkGray))).render(inner, buf);
    } else {
        // Entries wrap, so a server's error reads to its cause (`...: field
        // is immutable`) at any width; the newest stay in view.
        let para = Paragraph::new(esc_lines(lines)).wrap(Wrap { trim: false });
        let top = para.line_count(inner.width).saturating_sub(h);
        para.scroll((u16::try_from(top).unwrap_or(u16::MAX), 0))
            .render(inner, buf);
    }
}

/// What the status line draws.
pub(crate) struct StatusView<'a> {
    /// The search typed (`/`), and whether it is being typed.
    pub(crate) search: &'a str,
    pub(crate) searching: bool,
    pub(crate) server: Option<&'a Server>,
    /// Live state is waited for (connecting or the first load).
    pub(crate) waiting: bool,
    pub(crate) connecting: bool,
    pub(crate) progress: Option<&'a Progress>,
    pub(crate) load_status: Option<LoadStatus>,
    /// Reading live state failed.
    pub(crate) failed: bool,
    pub(crate) pending: &'a [Job],
    pub(crate) write_progress: Option<(usize, usize)>,
    pub(crate) spinner: usize,
    pub(crate) waited: std::time::Duration,
    /// The last result, and whether it is a failure.
    pub(crate) result: Option<(&'a str, bool)>,
    /// The keys the footer names.
    pub(crate) footer: Footer,
}

/// Which keys the footer names.
#[derive(Clone, Copy)]
pub(crate) enum Footer {
    /// A search is typed.
    Searching,
    /// A dialog is open: it names its own.
    Popup,
    /// Those of the pane with the keyboard (`F` where it recreates).
    Pane { pane: Pane, recreate: bool },
}

pub(crate) fn render_status(v: &StatusView, area: Rect, buf: &mut Buffer, t: Theme) {
    let mut spans = Vec::new();
    if v.searching || !v.search.is_empty() {
        let cursor = if v.searching { "▏" } else { "" };
        spans.push(Span::styled(
            format!("/{}{cursor}  ", v.search),
            t.fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ));
    }
    let server = v
        .server
        .map_or_else(|| "the server".to_string(), |s| s.describe());
    if v.waiting {
        // What the wait is for, and for how long so far.
        let what = match (v.progress, v.connecting) {
            (_, true) => format!("connecting to {server}"),
            // A streamed load: the list fills as this goes.
            _ if v.load_status.is_some() => format!("loading: {}", load_status(v.load_status)),
            (Some(p), false) => format!("loading {}/{} from {server}", p.done, p.total),
            (None, false) => format!("loading from {server}"),
        };
        spans.push(Span::styled(
            format!(
                "{} {what} · {} s  ",
                SPINNER[v.spinner % SPINNER.len()],
                v.waited.as_secs()
            ),
            t.fg(Color::Cyan),
        ));
    } else if v.failed {
        // The pane names the server and the error; this stays short so a
        // key's answer (why apply is not offered) still fits at 80 columns.
        spans.push(Span::styled(
            "no live state: r retries  ".to_string(),
            t.fg(Color::Red).add_modifier(Modifier::BOLD),
        ));
    } else if !v.pending.is_empty() {
        let mut what = v
            .pending
            .iter()
            .map(|j| j.label())
            .collect::<Vec<_>>()
            .join(", ");
        if v.load_status.is_some() {
            what.push_str(&format!(" {}", load_status(v.load_status)));
        } else if let Some(p) = v.progress {
            what.push_str(&format!(" {}/{} {}", p.done, p.total, p.what));
        } else if let Some((done, total)) = v.write_progress {
            what.push_str(&format!(" {done}/{total}"));
        }
        spans.push(Span::styled(
            format!("{} {what}…  ", SPINNER[v.spinner % SPINNER.len()]),
            t.fg(Color::Cyan),
        ));
    }
    if let Some((r, failed)) = v.result {
        let style = if failed {
            t.fg(Color::Red)
        } else {
            t.fg(Color::Green)
        };
        spans.push(Span::styled(format!("{r}  "), style));
    }
    let used: usize = spans.iter().map(|s| s.width()).sum();
    let keys = footer_keys(v.footer, (area.width as usize).saturating_sub(used));
    spans.push(Span::styled(keys, t.fg(Color::DarkGray)));
    Paragraph::new(esc_line(Line::from(spans))).render(area, buf);
}

/// The keys that work where the keyboard is (from the one key table),
/// as many as fit in `room` columns; `? help` and `q quit` always.
pub(crate) fn footer_keys(footer: Footer, room: usize) -> String {
    let (pane, recreate) = match footer {
        Footer::Searching => return "Enter keep · Esc clear".to_string(),
        // The dialog names its own keys.
        Footer::Popup => return String::new(),
        Footer::Pane { pane, recreate } => (pane, recreate),
    };
    // `F recreate` only where it has something to do, and then first.
    let all: Vec<&str> = crate::tui::keymap::footer(pane)
        .into_iter()
        .filter(|k| recreate || !k.starts_with("F "))
        .collect();
    let must = |k: &str| k.starts_with("? ") || k.starts_with("q ") || k.starts_with("F ");
    let mut room = room.saturating_sub(
        all.iter()
            .filter(|k| must(k))
            .map(|k| k.chars().count() + 2)
            .sum(),
    );
    let mut shown = Vec::new();
    for k in all {
        let w = k.chars().count() + 2;
        if must(k) {
            shown.push(k);
        } else if w <= room {
            room -= w;
            shown.push(k);
        }
    }
    shown.join("  ")
}

/// A streamed load's progress: `LIST 12/41, planned 3000/10020` (the LIST
/// count once discovery has said how many there are).
pub(crate) fn load_status(s: Option<LoadStatus>) -> String {
    let Some(s) = s else {
        return String::new();
    };
    let lists = if s.lists_total > 0 {
        format!("LIST {}/{}, ", s.lists_done, s.lists_total)
    } else {
        String::new()
    };
    format!("{lists}planned {}/{}", s.planned, s.total)
}
