//! Rendering: widgets draw from borrowed state. Only visible list rows are
//! built, so a frame costs the same with ten objects or ten thousand.

use super::app::{App, Focus, GroupBy, LogEntry, Popup, PruneChoice, Row, object_key};
use super::{fieldtable, yamlview};
use crate::merge::{Cause, FieldAction, FieldChange};
use crate::plan::{ObjectAction, ObjectPlan};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};
use serde_json::Value;

/// What Secret values show as (as `plan::mask_secret` writes them).
const MASK: &str = "***";

pub const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// Colours, or none at all under NO_COLOR (modifiers still apply).
#[derive(Clone, Copy, Default)]
pub struct Theme {
    pub color: bool,
    /// ASCII borders (TERM=dumb).
    pub ascii: bool,
}

/// Borders a dumb terminal can draw.
const ASCII_BORDER: ratatui::symbols::border::Set = ratatui::symbols::border::Set {
    top_left: "+",
    top_right: "+",
    bottom_left: "+",
    bottom_right: "+",
    vertical_left: "|",
    vertical_right: "|",
    horizontal_top: "-",
    horizontal_bottom: "-",
};

impl Theme {
    pub fn of(opts: &super::app::Options) -> Theme {
        Theme {
            color: opts.color,
            ascii: opts.ascii,
        }
    }

    /// A block with this theme's border characters.
    fn block(self) -> Block<'static> {
        let b = Block::default();
        if self.ascii {
            b.border_set(ASCII_BORDER)
        } else {
            b
        }
    }

    pub fn fg(self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }
    pub fn bg(self, c: Color) -> Style {
        if self.color {
            Style::default().bg(c)
        } else {
            Style::default()
        }
    }
    fn action(self, a: ObjectAction) -> Style {
        self.fg(match a {
            ObjectAction::Create => Color::Green,
            ObjectAction::Update => Color::Yellow,
            ObjectAction::Unchanged => Color::DarkGray,
            ObjectAction::Prune => Color::Magenta,
            ObjectAction::Error => Color::Red,
        })
    }
    fn field(self, a: FieldAction) -> Style {
        self.fg(match a {
            FieldAction::Set => Color::Green,
            FieldAction::Clear => Color::Red,
            FieldAction::Keep => Color::Blue,
        })
    }
}

/// The mark and its colour for one object.
pub fn mark(app: &App, o: &ObjectPlan) -> (char, Style) {
    let t = Theme::of(&app.opts);
    let in_delete = matches!(&app.popup, Some(Popup::DeleteConfirm { objects, .. })
        if objects.iter().any(|d| d.name == o.name && d.kind == o.kind && d.namespace == o.namespace));
    if in_delete || app.queued_delete.contains(&object_key(o)) {
        return ('x', t.fg(Color::Red).add_modifier(Modifier::BOLD));
    }
    if o.action == ObjectAction::Error {
        return ('!', t.fg(Color::Red));
    }
    // Read from the manifests; what apply would do is not known yet.
    if !app.live_known {
        return ('?', t.fg(Color::DarkGray));
    }
    if !o.warnings.is_empty() {
        return ('!', t.fg(Color::Yellow));
    }
    let c = match o.action {
        ObjectAction::Create => '+',
        ObjectAction::Update => '~',
        ObjectAction::Unchanged => '=',
        ObjectAction::Prune => '-',
        ObjectAction::Error => '!',
    };
    (c, t.action(o.action))
}

fn action_word(a: ObjectAction) -> &'static str {
    match a {
        ObjectAction::Create => "create",
        ObjectAction::Update => "update",
        ObjectAction::Unchanged => "in sync",
        ObjectAction::Prune => "prune candidate",
        ObjectAction::Error => "error",
    }
}

/// The act column of a released `clear` row (`R`), and its reason.
const RELEASED_WORD: &str = "free";
const RELEASED_REASON: &str = "released: live value stays";

fn field_word(a: FieldAction) -> &'static str {
    match a {
        FieldAction::Set => "set",
        FieldAction::Clear => "clear",
        FieldAction::Keep => "keep",
    }
}

/// A field value for display: `—` when the side has none; Secret data masked.
pub fn show_value(o: &ObjectPlan, path: &str, v: &Option<Value>) -> String {
    match v {
        None => "—".to_string(),
        Some(_) if fieldtable::is_secret_path(o, path) => MASK.to_string(),
        Some(Value::String(s)) => format!("{s:?}"),
        Some(v) => v.to_string(),
    }
}

/// Cut to `w` columns, marking the cut with `…`.
pub fn fit(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        return s.to_string();
    }
    if w == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(w - 1).collect();
    out.push('…');
    out
}

/// The reason column: a kept field names the other writer that owns it,
/// a drift names who changed it (the core's cause, shortened for a table
/// cell).
pub fn reason(f: &FieldChange) -> String {
    match (f.action, f.cause, f.owner.as_deref()) {
        (FieldAction::Keep, Cause::ServerDefault, _) => "kept: server default".to_string(),
        (FieldAction::Keep, Cause::OtherWriter, Some(owner)) => {
            format!("kept: another writer owns it ({owner})")
        }
        (FieldAction::Set | FieldAction::Clear, Cause::Drift, _) => f.cause_text(),
        _ => f.reason.clone(),
    }
}

/// Text from manifests, live objects and servers as drawn: control
/// characters shown escaped ([`crate::text::escape_controls`]; ratatui
/// would drop them silently). Applied where lines reach a widget.
fn esc(s: &str) -> String {
    crate::text::escape_controls(s).into_owned()
}

/// [`esc`] over every span of built lines.
fn esc_lines(lines: Vec<Line<'static>>) -> Vec<Line<'static>> {
    lines.into_iter().map(esc_line).collect()
}

fn esc_line(mut l: Line<'static>) -> Line<'static> {
    for span in &mut l.spans {
        if let std::borrow::Cow::Owned(e) = crate::text::escape_controls(&span.content) {
            span.content = e.into();
        }
    }
    l
}

fn block(title: String, focused: bool, t: Theme) -> Block<'static> {
    let style = if focused {
        t.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    } else {
        t.fg(Color::Gray)
    };
    t.block()
        .borders(Borders::ALL)
        .border_style(style)
        .title(Span::styled(esc(&title), style))
}

impl Widget for &App {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = Theme::of(&self.opts);
        let a = super::app::areas(area, self.show_log, self.focus == Focus::Fields);
        render_header(self, a.header, buf, t);
        render_list(self, a.list, buf, t);
        if !self.live_known {
            render_live_state(self, a.detail, buf, t);
        } else if self.yaml {
            render_yaml(self, a.detail, buf, t);
        } else {
            render_fields(self, a.detail, buf, t);
        }
        if self.show_log {
            render_log(&self.log, a.log, buf, t);
        }
        render_status(self, a.status, buf, t);
        if let Some(p) = &self.popup {
            render_popup(self, p, area, buf, t);
        }
    }
}

fn render_header(app: &App, area: Rect, buf: &mut Buffer, t: Theme) {
    let c = app.counts;
    let item = |mark: &str, n: usize, word: &str, style: Style| {
        vec![
            Span::styled(format!("{mark}{n} "), style.add_modifier(Modifier::BOLD)),
            Span::styled(format!("{word}  "), style),
        ]
    };
    let mut spans = vec![Span::styled(
        "kapply  ",
        t.fg(Color::Cyan).add_modifier(Modifier::BOLD),
    )];
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
        Paragraph::new(Line::from(spans)).render(area, buf);
        return;
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
    spans.extend(item("●", app.marked.len(), "marked", t.fg(Color::Cyan)));
    Paragraph::new(Line::from(spans)).render(area, buf);
}

fn render_list(app: &App, area: Rect, buf: &mut Buffer, t: Theme) {
    let group = match app.group {
        GroupBy::Namespace => "ns",
        GroupBy::Kind => "kind",
    };
    let shown = app
        .rows
        .iter()
        .filter(|r| matches!(r, Row::Object(_)))
        .count();
    let mut title = format!(" Objects {shown}/{} {group}", app.plan.objects.len());
    if app.filter != super::app::Filter::All {
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
    let mut top = app.list_scroll.min(app.rows.len().saturating_sub(1));
    if app.cursor < top {
        top = app.cursor;
    } else if h > 0 && app.cursor >= top + h {
        top = app.cursor + 1 - h;
    }
    for (y, (ri, row)) in app.rows.iter().enumerate().skip(top).take(h).enumerate() {
        let line = match row {
            Row::Group(g) => Line::from(Span::styled(
                format!("▾ {g}"),
                t.fg(Color::Cyan).add_modifier(Modifier::BOLD),
            )),
            Row::Object(i) => {
                let o = &app.plan.objects[*i];
                let (m, style) = mark(app, o);
                let key = object_key(o);
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
                    _ if o.kind.is_empty() => o.display_name(),
                    GroupBy::Namespace => format!("{}/{}", o.kind, o.name),
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
                    spans.push(Span::styled(label, style));
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

/// The field pane's head: the object's verdict, source and patch type,
/// then its error, prune reason and warnings.
fn field_head(o: &ObjectPlan, t: Theme) -> Vec<Line<'static>> {
    let mut head: Vec<Line> = Vec::new();
    let mut first = vec![Span::styled(
        action_word(o.action),
        t.action(o.action).add_modifier(Modifier::BOLD),
    )];
    if o.reverts_drift {
        first.push(Span::styled(
            format!("  {DRIFT_MARK} reverts drift"),
            t.fg(DRIFT).add_modifier(Modifier::BOLD),
        ));
    }
    if let Some(src) = &o.source {
        first.push(Span::styled(format!("  {src}"), t.fg(Color::DarkGray)));
    }
    if let Some(p) = &o.patch {
        let kind = match p.kind {
            crate::merge::PatchType::Strategic => "strategic merge patch",
            crate::merge::PatchType::Merge => "JSON merge patch",
        };
        first.push(Span::styled(format!("  {kind}"), t.fg(Color::DarkGray)));
    }
    head.push(Line::from(first));
    if let Some(e) = &o.error {
        head.push(Line::from(Span::styled(
            format!("error: {e}"),
            t.fg(Color::Red).add_modifier(Modifier::BOLD),
        )));
    }
    if let Some(r) = &o.prune_reason {
        head.push(Line::from(Span::styled(
            format!("prune: {r}"),
            t.fg(Color::Magenta),
        )));
    }
    for w in &o.warnings {
        head.push(Line::from(Span::styled(
            format!("⚠ {w}"),
            t.fg(Color::Yellow),
        )));
    }
    esc_lines(head)
}

/// Where the field pane's parts go inside its border: the head, the table
/// (its column titles on the first row) and the box with the selected
/// field whole.
struct FieldAreas {
    head: Rect,
    table: Rect,
    detail: Rect,
}

fn field_areas(o: &ObjectPlan, show_kept: bool, head: &[Line<'static>], inner: Rect) -> FieldAreas {
    // Warnings and errors wrap: they matter more than the table rows.
    let head_h = head
        .iter()
        .map(|l| (l.width() as u16).div_ceil(inner.width.max(1)).max(1))
        .sum::<u16>()
        .min(inner.height);
    let rest = Rect::new(
        inner.x,
        inner.y + head_h,
        inner.width,
        inner.height.saturating_sub(head_h),
    );
    // Tall enough for the longest of the rows' details (so moving never
    // resizes the table), within a third of the pane.
    let t = Theme::default();
    let tallest = fieldtable::ordered(o, show_kept)
        .into_iter()
        .map(|f| {
            let h = wrapped_height(&field_detail(o, f, false, t), rest.width);
            // A clear row may be shown released (`R`): room for either.
            if f.action == FieldAction::Clear {
                h.max(wrapped_height(&field_detail(o, f, true, t), rest.width))
            } else {
                h
            }
        })
        .max()
        .unwrap_or(0);
    let detail_h = if rest.height >= 10 {
        (tallest + 1).clamp(4, (rest.height / 3).max(4))
    } else {
        0
    };
    FieldAreas {
        head: Rect::new(inner.x, inner.y, inner.width, head_h),
        table: Rect::new(rest.x, rest.y, rest.width, rest.height - detail_h),
        detail: Rect::new(
            rest.x,
            rest.y + rest.height - detail_h,
            rest.width,
            detail_h,
        ),
    }
}

/// The box under the table: the selected field whole (path, the three
/// values, the reason, its hazards and cause).
/// The box under the field table: the selected row whole. `released`:
/// a `clear` row released with `R`.
fn field_detail(o: &ObjectPlan, f: &FieldChange, released: bool, t: Theme) -> Vec<Line<'static>> {
    let word = if released {
        RELEASED_WORD
    } else {
        field_word(f.action)
    };
    let mut lines = vec![
        Line::from(vec![
            Span::styled(
                format!("{word} "),
                t.field(f.action).add_modifier(Modifier::BOLD),
            ),
            Span::styled(
                f.path.clone(),
                Style::default().add_modifier(Modifier::BOLD),
            ),
        ]),
        Line::from(format!(
            "last-applied {} · live {} · config {}",
            show_value(o, &f.path, &f.last_applied),
            show_value(o, &f.path, &f.live),
            show_value(o, &f.path, &f.config)
        )),
    ];
    let why_style = if fieldtable::is_drift(f) {
        t.fg(DRIFT).add_modifier(Modifier::BOLD)
    } else {
        t.fg(Color::DarkGray)
    };
    let why = if released {
        format!(
            "{RELEASED_REASON}, dropped from last-applied: another writer owns it (R: clear instead)"
        )
    } else {
        reason(f)
    };
    lines.push(Line::from(Span::styled(why, why_style)));
    for h in &f.hazards {
        lines.push(Line::from(Span::styled(
            format!("⚠ {}", h.message),
            t.fg(Color::Yellow),
        )));
    }
    // The cause, where the reason does not already say it.
    if f.action != FieldAction::Keep
        && !matches!(f.cause, Cause::Drift | Cause::New | Cause::Removed)
    {
        lines.push(Line::from(Span::styled(
            f.cause_text(),
            t.fg(Color::DarkGray),
        )));
    }
    esc_lines(lines)
}

/// The field table's width and the rows of its body, for the selected
/// object (the cursor keeps its row in view with these).
pub fn field_table_size(app: &App) -> Option<(usize, usize)> {
    let o = app.selected()?;
    let area = app.areas().detail;
    let inner = Block::default().borders(Borders::ALL).inner(area);
    let t = Theme::default();
    let a = field_areas(o, app.show_kept, &field_head(o, t), inner);
    Some((
        a.table.width as usize,
        a.table.height.saturating_sub(1) as usize,
    ))
}

/// Text padded with spaces (or cut) to `w` columns.
fn pad(s: &str, w: usize) -> String {
    let s = fit(s, w);
    let n = Line::from(s.as_str()).width();
    format!("{s}{}", " ".repeat(w.saturating_sub(n)))
}

fn render_fields(app: &App, area: Rect, buf: &mut Buffer, t: Theme) {
    let focused = app.focus == Focus::Fields && app.popup.is_none();
    let Some(o) = app.selected() else {
        let b = block(" Fields ".to_string(), focused, t);
        let inner = b.inner(area);
        b.render(area, buf);
        let msg = if app.loading {
            "loading…"
        } else {
            "nothing selected"
        };
        Paragraph::new(Span::styled(msg, t.fg(Color::DarkGray))).render(inner, buf);
        return;
    };
    let inner0 = Block::default().borders(Borders::ALL).inner(area);
    let layout = fieldtable::layout(o, app.show_kept, inner0.width as usize);
    let mut title = format!(" {} · fields ", o.display_name());
    if layout.kept_hidden > 0 {
        title.push_str(&format!("· {} kept hidden (K) ", layout.kept_hidden));
    }
    let b = block(title, focused, t);
    let inner = b.inner(area);
    b.render(area, buf);

    let head = field_head(o, t);
    let a = field_areas(o, app.show_kept, &head, inner);
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
    let top = fieldtable::scroll_for(&layout, app.field_cursor, app.field_scroll, body_h);
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
                let selected = *row == app.field_cursor && app.focus == Focus::Fields;
                field_row_line(app, o, f, rl, *part, w, layout.mark_w, selected, t)
            }
        };
        l.render(r, buf);
    }

    if a.detail.height > 0
        && let Some(f) = layout
            .rows
            .get(app.field_cursor)
            .map(|r| &o.fields[r.field])
    {
        let lines = field_detail(o, f, app.is_released(o, &f.path), t);
        let b = t
            .block()
            .borders(Borders::TOP)
            .border_style(t.fg(Color::DarkGray));
        let di = b.inner(a.detail);
        b.render(a.detail, buf);
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .render(di, buf);
    }
}

/// The colour of a drift row (a change made in the cluster that apply
/// reverts); its mark shows without colour too.
const DRIFT: Color = Color::LightMagenta;
const DRIFT_MARK: char = '↺';

/// One screen line of a field row: line `part` of its values (the marks,
/// path, action and reason on the first).
#[allow(clippy::too_many_arguments)]
fn field_row_line(
    app: &App,
    o: &ObjectPlan,
    f: &FieldChange,
    rl: &fieldtable::RowLayout,
    part: usize,
    w: [usize; 6],
    mark_w: usize,
    selected: bool,
    t: Theme,
) -> Line<'static> {
    let excluded = app.is_excluded(o, &f.path);
    let released = app.is_released(o, &f.path);
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
            pad(&format!("{indent}{}", rl.label), w[0]),
            style,
        ));
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

fn render_yaml(app: &App, area: Rect, buf: &mut Buffer, t: Theme) {
    let focused = app.focus == Focus::Fields && app.popup.is_none();
    let Some(o) = app.selected() else {
        block(" YAML ".to_string(), focused, t).render(area, buf);
        return;
    };
    let b = block(
        format!(
            " {} · yaml: live → result · z {} · L annotation ",
            o.display_name(),
            if app.yaml_unfold { "fold" } else { "unfold" }
        ),
        focused,
        t,
    );
    let inner = b.inner(area);
    b.render(area, buf);
    let lines = yamlview::view(app, o);
    let max = lines.len().saturating_sub(inner.height as usize);
    let top = app.yaml_scroll.min(max);
    let visible: Vec<Line> = lines
        .iter()
        .skip(top)
        .take(inner.height as usize)
        .cloned()
        .collect();
    Paragraph::new(esc_lines(visible)).render(inner, buf);
}

fn render_log(log: &[LogEntry], area: Rect, buf: &mut Buffer, t: Theme) {
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
        Paragraph::new(esc_lines(lines)).render(inner, buf);
    }
}

/// The field pane before live state is known: what kapply waits for (the
/// server, the context, the step, the time so far), or why it could not
/// read it and that `r` retries.
fn render_live_state(app: &App, area: Rect, buf: &mut Buffer, t: Theme) {
    let focused = app.focus == Focus::Fields && app.popup.is_none();
    let failed = app.failure.is_some();
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
    match &app.failure {
        Some(e) => {
            lines.push(Line::from(Span::styled(
                "The live state could not be read:",
                t.fg(Color::Red).add_modifier(Modifier::BOLD),
            )));
            lines.push(Line::from(Span::styled(e.clone(), t.fg(Color::Red))));
            lines.push(Line::default());
        }
        None => {
            lines.push(Line::from(Span::styled(
                "Waiting for the Kubernetes API server",
                bold,
            )));
        }
    }
    if let Some(s) = &app.server {
        lines.push(row("server", s.url.clone()));
        if !s.context.is_empty() {
            lines.push(row("context", s.context.clone()));
        }
    }
    if !failed {
        let step = if app.connecting {
            "connecting (GET /version)".to_string()
        } else {
            match &app.progress {
                Some(p) => format!("{} ({}/{})", p.what, p.done, p.total),
                None => "reading the manifests".to_string(),
            }
        };
        lines.push(row("step", step));
        lines.push(row("waited", format!("{} s", app.waited.as_secs())));
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

fn render_status(app: &App, area: Rect, buf: &mut Buffer, t: Theme) {
    let mut spans = Vec::new();
    if app.searching || !app.search.is_empty() {
        let cursor = if app.searching { "▏" } else { "" };
        spans.push(Span::styled(
            format!("/{}{cursor}  ", app.search),
            t.fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ));
    }
    let server = app
        .server
        .as_ref()
        .map_or_else(|| "the server".to_string(), |s| s.describe());
    if app.waiting() {
        // What the wait is for, and for how long so far.
        let what = match (&app.progress, app.connecting) {
            (_, true) => format!("connecting to {server}"),
            (Some(p), false) => format!("loading {}/{} from {server}", p.done, p.total),
            (None, false) => format!("loading from {server}"),
        };
        spans.push(Span::styled(
            format!(
                "{} {what} · {} s  ",
                SPINNER[app.spinner % SPINNER.len()],
                app.waited.as_secs()
            ),
            t.fg(Color::Cyan),
        ));
    } else if app.failure.is_some() {
        // The pane names the server and the error; this stays short so a
        // key's answer (why apply is not offered) still fits at 80 columns.
        spans.push(Span::styled(
            "no live state: r retries  ".to_string(),
            t.fg(Color::Red).add_modifier(Modifier::BOLD),
        ));
    } else if !app.pending.is_empty() {
        let mut what = app.pending.join(", ");
        if let Some(p) = &app.progress {
            what.push_str(&format!(" {}/{} {}", p.done, p.total, p.what));
        }
        spans.push(Span::styled(
            format!("{} {what}…  ", SPINNER[app.spinner % SPINNER.len()]),
            t.fg(Color::Cyan),
        ));
    }
    if let Some(r) = &app.last_result {
        let style = if r.contains("failed") || r.contains("unknown") {
            t.fg(Color::Red)
        } else {
            t.fg(Color::Green)
        };
        spans.push(Span::styled(format!("{r}  "), style));
    }
    spans.push(Span::styled("? help  q quit", t.fg(Color::DarkGray)));
    Paragraph::new(esc_line(Line::from(spans))).render(area, buf);
}

/// A centred rectangle of at most `w` x `h`.
fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width.saturating_sub(2)).max(1).min(area.width);
    let h = h.min(area.height.saturating_sub(2)).max(1).min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

pub const HELP: &[(&str, &str)] = &[
    ("j/k ↑/↓", "move (PgUp/PgDn a page)"),
    ("g/G Home/End", "first / last"),
    ("Tab / Enter", "switch pane / open fields"),
    ("Space", "mark object (list) / include change (fields)"),
    ("a", "apply marked (or current)"),
    ("p", "prune mode (y prune, n keep, s skip)"),
    ("D", "delete current or marked"),
    ("y", "toggle YAML diff view"),
    ("t", "group by namespace / kind"),
    ("f", "cycle status filter"),
    ("/", "search name/kind/namespace"),
    ("n / N", "next / previous change (fields: drift row)"),
    ("K", "show / hide the fields apply keeps"),
    ("R", "fields: release a clear row (free: live stays)"),
    ("z / L", "YAML: fold unchanged / annotation whole"),
    ("r", "refresh live state"),
    ("l", "toggle log pane"),
    ("?", "this help"),
    (
        "q Esc Ctrl-C",
        "quit (in a dialog: Enter confirms, Esc cancels)",
    ),
    ("mouse", "wheel scrolls, click selects"),
];

/// A dialog's content: the body wraps and scrolls; the footer (prompt,
/// counts, keys) wraps and always shows.
struct PopupView {
    title: &'static str,
    /// The widest the frame may be, borders included.
    width: u16,
    body: Vec<Line<'static>>,
    footer: Vec<Line<'static>>,
}

/// Where a dialog goes, sized from wrapped line counts (not source lines:
/// a line that wraps takes more rows).
struct PopupLayout {
    frame: Rect,
    body: Rect,
    footer: Rect,
    /// Body rows after wrapping.
    total: u16,
    max_scroll: u16,
}

/// Rows `lines` take at `width` columns, wrapped as the dialogs render them.
fn wrapped_height(lines: &[Line<'static>], width: u16) -> u16 {
    if lines.is_empty() {
        return 0;
    }
    let n = Paragraph::new(lines.to_vec())
        .wrap(Wrap { trim: false })
        .line_count(width);
    u16::try_from(n).unwrap_or(u16::MAX)
}

fn scroll_hint(top: u16, bottom: u16, total: u16) -> String {
    format!("j/k scroll · lines {top}-{bottom} of {total}")
}

/// The footer with the scroll hint after the keys.
fn with_hint(footer: &[Line<'static>], hint: String, t: Theme) -> Vec<Line<'static>> {
    let mut out = footer.to_vec();
    let style = t.fg(Color::Yellow).add_modifier(Modifier::BOLD);
    match out.last_mut() {
        Some(last) => {
            last.spans.push(Span::styled(" · ", style));
            last.spans.push(Span::styled(hint, style));
        }
        None => out.push(Line::from(Span::styled(hint, style))),
    }
    out
}

fn popup_layout(area: Rect, v: &PopupView, t: Theme) -> PopupLayout {
    let w = v
        .width
        .min(area.width.saturating_sub(2))
        .max(1)
        .min(area.width);
    let inner_w = w.saturating_sub(2);
    let max_h = area.height.saturating_sub(2).max(1).min(area.height);
    let total = wrapped_height(&v.body, inner_w);
    let foot = wrapped_height(&v.footer, inner_w);
    let (h, body_h) = if total.saturating_add(foot).saturating_add(2) <= max_h {
        (total + foot + 2, total)
    } else {
        // Too tall: the body scrolls and the footer says so. The hint is
        // sized with the widest numbers it can show.
        let widest = with_hint(&v.footer, scroll_hint(total, total, total), t);
        let foot = wrapped_height(&widest, inner_w).min(max_h.saturating_sub(2));
        (max_h, max_h.saturating_sub(2).saturating_sub(foot))
    };
    let frame = centered(area, w, h);
    let inner = Block::default().borders(Borders::ALL).inner(frame);
    let body_h = body_h.min(inner.height);
    PopupLayout {
        frame,
        body: Rect::new(inner.x, inner.y, inner.width, body_h),
        footer: Rect::new(
            inner.x,
            inner.y + body_h,
            inner.width,
            inner.height - body_h,
        ),
        total,
        max_scroll: total.saturating_sub(body_h),
    }
}

/// How far the open dialog's body can scroll, and the rows one page moves.
pub fn popup_scroll_range(app: &App) -> (u16, u16) {
    let Some(p) = &app.popup else {
        return (0, 0);
    };
    let t = Theme::of(&app.opts);
    let l = popup_layout(app.size, &popup_view(app, p, t), t);
    (l.max_scroll, l.body.height.max(1))
}

fn keys_line(text: &str, t: Theme) -> Line<'static> {
    Line::from(Span::styled(
        text.to_string(),
        t.fg(Color::Cyan).add_modifier(Modifier::BOLD),
    ))
}

fn render_popup(app: &App, p: &Popup, area: Rect, buf: &mut Buffer, t: Theme) {
    let v = popup_view(app, p, t);
    let l = popup_layout(area, &v, t);
    Clear.render(l.frame, buf);
    let style = t.fg(Color::Cyan).add_modifier(Modifier::BOLD);
    t.block()
        .borders(Borders::ALL)
        .border_style(style)
        .title(Span::styled(format!(" {} ", v.title), style))
        .render(l.frame, buf);
    // Clamped here too: a resize can shrink the range after the key that scrolled.
    let scroll = app.popup_scroll.min(l.max_scroll);
    Paragraph::new(v.body)
        .wrap(Wrap { trim: false })
        .scroll((scroll, 0))
        .render(l.body, buf);
    let footer = if l.max_scroll > 0 {
        let bottom = scroll.saturating_add(l.body.height).min(l.total);
        with_hint(&v.footer, scroll_hint(scroll + 1, bottom, l.total), t)
    } else {
        v.footer
    };
    Paragraph::new(footer)
        .wrap(Wrap { trim: false })
        .render(l.footer, buf);
}

/// The dialog, its text escaped before it is measured and drawn.
fn popup_view(app: &App, p: &Popup, t: Theme) -> PopupView {
    let v = popup_view_raw(app, p, t);
    PopupView {
        body: esc_lines(v.body),
        footer: esc_lines(v.footer),
        ..v
    }
}

fn popup_view_raw(app: &App, p: &Popup, t: Theme) -> PopupView {
    match p {
        Popup::Help => PopupView {
            title: "Keys",
            width: 66,
            body: HELP
                .iter()
                .map(|(k, d)| {
                    Line::from(vec![
                        Span::styled(
                            format!("{k:<14}"),
                            t.fg(Color::Yellow).add_modifier(Modifier::BOLD),
                        ),
                        Span::raw(d.to_string()),
                    ])
                })
                .collect(),
            footer: Vec::new(),
        },
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
                    format!(
                        "{m} {}: {} ({how}{partial})",
                        o.display_name(),
                        action_word(o.action)
                    ),
                    style.add_modifier(Modifier::BOLD),
                )));
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
                    let text = match f.action {
                        FieldAction::Clear => format!("    clear {}", f.path),
                        _ => format!(
                            "    set   {} = {}",
                            f.path,
                            show_value(o, &f.path, &f.config)
                        ),
                    };
                    if included {
                        lines.push(Line::from(Span::styled(text, t.field(f.action))));
                    } else {
                        lines.push(Line::from(Span::styled(
                            format!("{text}  (excluded)"),
                            t.fg(Color::DarkGray).add_modifier(Modifier::CROSSED_OUT),
                        )));
                    }
                }
            }
            lines.push(Line::from(Span::styled(
                "Server dry run:",
                Style::default().add_modifier(Modifier::BOLD),
            )));
            match dry_run {
                None => lines.push(Line::from(Span::styled(
                    format!(
                        "  {} waiting for the server…",
                        SPINNER[app.spinner % SPINNER.len()]
                    ),
                    t.fg(Color::Cyan),
                ))),
                Some(rs) => {
                    for r in rs {
                        let (m, s) = if r.ok {
                            ("✓", t.fg(Color::Green))
                        } else {
                            ("✗", t.fg(Color::Red))
                        };
                        lines.push(Line::from(Span::styled(
                            format!("  {m} {}: {}", r.object, r.message),
                            s,
                        )));
                    }
                }
            }
            PopupView {
                title: "Confirm apply",
                width: app.size.width.saturating_sub(8).min(90),
                body: lines,
                footer: vec![keys_line(
                    match dry_run {
                        None => "Esc cancel (Enter waits for the dry run)",
                        Some(rs) if rs.iter().all(|r| r.ok) => "Enter apply · Esc cancel",
                        Some(_) => {
                            "Enter apply (refused objects fail again) · r retry dry run · Esc cancel"
                        }
                    },
                    t,
                )],
            }
        }
        Popup::DeleteConfirm {
            objects,
            typed,
            propagation,
        } => {
            let mut body = vec![Line::from(Span::styled(
                format!(
                    "Delete {} object(s) from the cluster (propagation {propagation:?})?",
                    objects.len()
                ),
                t.fg(Color::Red).add_modifier(Modifier::BOLD),
            ))];
            for o in objects {
                body.push(Line::from(format!("  x {}", o.display_name())));
            }
            // The prompt stays in view however long the list is.
            let footer = if objects.len() > 1 {
                vec![
                    Line::from(vec![
                        Span::raw(format!("Type {} to confirm: ", objects.len())),
                        Span::styled(
                            format!("{typed}▏"),
                            t.fg(Color::Yellow).add_modifier(Modifier::BOLD),
                        ),
                    ]),
                    keys_line(
                        "type the count, Enter delete · c propagation · Esc cancel",
                        t,
                    ),
                ]
            } else {
                vec![keys_line("Enter delete · c propagation · Esc cancel", t)]
            };
            PopupView {
                title: "Confirm delete",
                width: 70,
                body,
                footer,
            }
        }
        Popup::PruneStep {
            candidates,
            pos,
            choices,
        } => {
            let mut body = Vec::new();
            if let Some(o) = candidates.get(*pos) {
                body.push(Line::from(Span::styled(
                    format!(
                        "Candidate {}/{}: {}",
                        pos + 1,
                        candidates.len(),
                        o.display_name()
                    ),
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
        Popup::PruneConfirm { objects } => {
            let mut body = vec![Line::from(Span::styled(
                format!("Prune (delete) {} object(s)?", objects.len()),
                t.fg(Color::Red).add_modifier(Modifier::BOLD),
            ))];
            for o in objects {
                body.push(Line::from(format!("  x {}", o.display_name())));
            }
            PopupView {
                title: "Confirm prune",
                width: 70,
                body,
                footer: vec![keys_line("Enter delete · Esc cancel", t)],
            }
        }
    }
}
