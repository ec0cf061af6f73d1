//! The header (counts) and the object list.

use crate::fieldpath::FieldPath;
use crate::objref::ObjectRef;
use crate::ops::Server;
use crate::plan::{ObjectPlan, PruneBlock};
use crate::tui::state::{Counts, Filter, GroupBy, Live, Row};
use crate::tui::theme::*;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};
use std::collections::{BTreeMap, BTreeSet};

/// What the header draws: the cluster, and what apply would do.
pub(crate) struct HeaderView<'a> {
    pub(crate) server: Option<&'a Server>,
    /// Whether the cluster is followed (right of the counts).
    pub(crate) live: Option<&'a Live>,
    pub(crate) counts: Counts,
    /// Live state is read: the counts are of actions.
    pub(crate) live_known: bool,
    /// Reading live state failed.
    pub(crate) failed: bool,
    /// Objects in the plan (the manifests, before live state).
    pub(crate) objects: usize,
    pub(crate) prune_skipped: Option<&'a PruneBlock>,
    /// `--server-side`: the objects with a conflict.
    pub(crate) conflicts: Option<usize>,
    pub(crate) marked: usize,
}

/// What the object list draws.
pub(crate) struct ListView<'a> {
    pub(crate) objects: &'a [ObjectPlan],
    pub(crate) rows: &'a [Row],
    /// Objects the rows show.
    pub(crate) shown: usize,
    pub(crate) cursor: usize,
    pub(crate) scroll: usize,
    pub(crate) group: GroupBy,
    pub(crate) filter: Filter,
    /// The list has the keyboard (its cursor row reversed, else underlined).
    pub(crate) has_focus: bool,
    /// No dialog is open over it (its border shows the focus).
    pub(crate) no_popup: bool,
    /// Connecting or loading.
    pub(crate) waiting: bool,
    pub(crate) live_known: bool,
    pub(crate) marked: &'a BTreeSet<ObjectRef>,
    pub(crate) excluded: &'a BTreeMap<ObjectRef, BTreeSet<FieldPath>>,
    /// Objects changed in the cluster since the load: when.
    pub(crate) changed: &'a BTreeMap<ObjectRef, String>,
    /// Kinds shown with their group (see `kind_label`).
    pub(crate) ambiguous_kinds: &'a BTreeSet<String>,
    /// An object's mark and its colour.
    pub(crate) mark: &'a dyn Fn(&ObjectPlan) -> (char, Style),
}

pub(crate) fn render_header(v: &HeaderView, area: Rect, buf: &mut Buffer, t: Theme) {
    let mut lines = vec![context_line(v.server, area.width as usize, t)];
    // Room for the counts beside what the right end says (watching).
    let reserve = v.live.map_or(0, |l| l.label().chars().count() + 2);
    // Narrow: words only beside counts that are not zero, then the marks
    // and numbers alone (the help's legend says what each mark means).
    let counts = [Words::All, Words::NonZero, Words::None]
        .into_iter()
        .map(|w| counts_line(v, t, w))
        .find(|l| l.width() + reserve <= area.width as usize)
        .unwrap_or_else(|| counts_line(v, t, Words::None));
    lines.push(counts);
    // One row (a tiny terminal): the counts, which say what apply does.
    if area.height < 2 {
        lines.remove(0);
    }
    let counts_row = area.y + u16::try_from(lines.len().saturating_sub(1)).unwrap_or(0);
    Paragraph::new(esc_lines(lines)).render(area, buf);
    // Whether the cluster is followed, at the right of the counts (which
    // give way).
    if let Some(live) = v.live {
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
pub(crate) fn context_line(server: Option<&Server>, width: usize, t: Theme) -> Line<'static> {
    let title = Span::styled("kapply  ", t.fg(Color::Cyan).add_modifier(Modifier::BOLD));
    let Some(s) = server else {
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

fn counts_line(v: &HeaderView, t: Theme, words: Words) -> Line<'static> {
    let c = v.counts;
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
    if !v.live_known {
        // Counts of actions would be made up: none is known yet.
        let (text, style) = if v.failed {
            ("live state unknown", t.fg(Color::Red))
        } else {
            ("live state loading", t.fg(Color::Cyan))
        };
        spans.push(Span::styled(text, style.add_modifier(Modifier::BOLD)));
        let n = v.objects;
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
    match v.prune_skipped {
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
    if let Some(n) = v.conflicts {
        spans.extend(item(
            &CONFLICT_MARK.to_string(),
            n,
            "conflict",
            t.fg(Color::Red),
        ));
    }
    spans.extend(item("●", v.marked, "marked", t.fg(Color::Cyan)));
    Line::from(spans)
}

pub(crate) fn render_list(v: &ListView, area: Rect, buf: &mut Buffer, t: Theme) {
    let group = match v.group {
        GroupBy::Namespace => "ns",
        GroupBy::Kind => "kind",
    };
    let mut title = format!(" Objects {}/{} {group}", v.shown, v.objects.len());
    if v.filter != Filter::All {
        title.push_str(&format!(" · {}", v.filter.label()));
    }
    title.push(' ');
    let b = block(title, v.has_focus && v.no_popup, t);
    let inner = b.inner(area);
    b.render(area, buf);
    if v.rows.is_empty() {
        let msg = if v.waiting {
            "loading…"
        } else if !v.live_known {
            "no object read"
        } else if v.objects.is_empty() {
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
        v.scroll,
        v.cursor..v.cursor + 1,
        v.cursor,
        v.rows.len(),
        h,
    );
    for (y, (ri, row)) in v.rows.iter().enumerate().skip(top).take(h).enumerate() {
        let line = match row {
            Row::Group(g) => Line::from(Span::styled(
                format!("▾ {g}"),
                t.fg(Color::Cyan).add_modifier(Modifier::BOLD),
            )),
            Row::Object(i) => object_line(v, *i, ri, inner.width, t),
        };
        let r = Rect::new(inner.x, inner.y + y as u16, inner.width, 1);
        if ri == v.cursor && v.has_focus {
            buf.set_style(r, Style::default().add_modifier(Modifier::REVERSED));
        }
        esc_line(line).render(r, buf);
    }
}

/// The list row of object `i` (list row `ri`) in a pane `width` columns
/// wide: its marks, label, drift and change notes.
fn object_line(v: &ListView, i: usize, ri: usize, width: u16, t: Theme) -> Line<'static> {
    let o = &v.objects[i];
    let (m, style) = (v.mark)(o);
    let key = o.id();
    // ◐: some of its changes are excluded (a partial apply).
    let sel = if v.excluded.contains_key(&key) {
        "◐"
    } else if v.marked.contains(&key) {
        "●"
    } else {
        " "
    };
    let label = match v.group {
        // A manifest that could not be read has no identity.
        _ if o.kind.is_empty() => o.id().to_string(),
        GroupBy::Namespace => format!("{}/{}", kind_label(v.ambiguous_kinds, o), o.name),
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
        let room = (width as usize).saturating_sub(4 + label.chars().count());
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
    if let Some(time) = v.changed.get(&key) {
        // Changed in the cluster since the load: when, where
        // the row has room.
        let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
        let room = (width as usize).saturating_sub(used);
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
    if ri == v.cursor {
        let hl = if v.has_focus {
            Modifier::REVERSED
        } else {
            Modifier::UNDERLINED
        };
        l = l.patch_style(Style::default().add_modifier(hl));
    }
    l
}
