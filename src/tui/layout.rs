//! Where things go, computed one way for drawing and for the app's
//! keys and mouse: the screen's areas, the field pane's parts, a dialog's
//! frame and how far its body scrolls. The app depends on this, not on
//! the drawing code.

use crate::fieldpath::FieldPath;
use crate::merge::FieldAction;
use crate::plan::ObjectPlan;
use crate::tui::detail::*;
use crate::tui::dialogs::*;
use crate::tui::fieldtable;
use crate::tui::theme::*;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

/// Screen areas, computed the same way for rendering and for mouse hits.
#[derive(Debug, Clone, Copy, Default)]
pub struct Areas {
    pub header: Rect,
    pub list: Rect,
    pub detail: Rect,
    pub log: Rect,
    pub status: Rect,
}

/// `wide_detail`: the field pane has focus, so the list gives it room.
pub fn areas(size: Rect, show_log: bool, wide_detail: bool) -> Areas {
    let h = size.height;
    // Two header rows (the cluster, the counts) but on a tiny screen.
    let head_h = if h >= 10 { 2 } else { 1.min(h) };
    let header = Rect::new(size.x, size.y, size.width, head_h);
    let status_y = size.y + h.saturating_sub(1);
    let status = Rect::new(size.x, status_y, size.width, 1.min(h));
    let body_h = h.saturating_sub(head_h + 1);
    let log_h = if show_log {
        (body_h / 3).max(3).min(body_h)
    } else {
        0
    };
    let main_h = body_h - log_h;
    let list_w = if wide_detail {
        (size.width / 4).clamp(20.min(size.width), 32.min(size.width))
    } else if size.width >= 120 {
        size.width * 3 / 10
    } else {
        (size.width * 2 / 5).min(size.width)
    };
    let top = size.y + head_h;
    let list = Rect::new(size.x, top, list_w, main_h);
    let detail = Rect::new(size.x + list_w, top, size.width - list_w, main_h);
    let log = Rect::new(size.x, top + main_h, size.width, log_h);
    Areas {
        header,
        list,
        detail,
        log,
        status,
    }
}

/// Where the field pane's parts go inside its border: the head, the table
/// (its column titles on the first row) and the box with the selected
/// field whole.
pub(crate) struct FieldAreas {
    pub(crate) head: Rect,
    pub(crate) table: Rect,
    pub(crate) detail: Rect,
}

/// `tallest`: the most lines the box takes for a row of the object (see
/// [`tallest_detail`]); `table_lines`: the lines of the table's body.
pub(crate) fn field_areas(
    tallest: u16,
    table_lines: usize,
    head: &[Line<'static>],
    inner: Rect,
) -> FieldAreas {
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
    // The box grows with its content (a Corefile, a rule group): into what
    // the table leaves free; a long table keeps a third of the pane.
    let table_need = u16::try_from(table_lines)
        .unwrap_or(u16::MAX)
        .saturating_add(1);
    let cap = rest
        .height
        .saturating_sub(table_need.min(rest.height / 3))
        .max(4);
    let detail_h = if rest.height >= 10 {
        (tallest + 1).clamp(4, cap)
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

/// The most lines the box under the field table takes for a row of `o`
/// at `width` (so moving never resizes the table).
pub(crate) fn tallest_detail(o: &ObjectPlan, show_kept: bool, width: u16) -> u16 {
    let t = Theme::default();
    fieldtable::ordered(o, show_kept)
        .into_iter()
        .map(|f| {
            let h = wrapped_height(&field_detail(o, f, false, t), width);
            // A clear row may be shown released (`R`): room for either.
            if f.action == FieldAction::Clear {
                h.max(wrapped_height(&field_detail(o, f, true, t), width))
            } else {
                h
            }
        })
        .max()
        .unwrap_or(0)
}

/// The box under the field table for the selected row, measured as it is
/// drawn: which row (object and path), how many lines its content takes and
/// how many rows the box has for them.
pub(crate) struct DetailBox {
    pub(crate) key: String,
    pub(crate) total: u16,
    pub(crate) height: u16,
}

impl DetailBox {
    /// Rows of content that show when it is cut (the last row says which
    /// lines show) or all of it.
    pub(crate) fn shown(&self) -> u16 {
        if self.total > self.height {
            self.height.saturating_sub(1)
        } else {
            self.height
        }
    }

    /// How far the content scrolls.
    pub(crate) fn max_scroll(&self) -> u16 {
        self.total.saturating_sub(self.shown())
    }
}

/// The key of a row's scroll position: its object and path.
pub(crate) fn detail_key(o: &ObjectPlan, path: &FieldPath) -> String {
    format!("{}\u{0}{path}", o.id())
}

/// A centred rectangle of at most `w` x `h`.
pub(crate) fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width.saturating_sub(2)).max(1).min(area.width);
    let h = h.min(area.height.saturating_sub(2)).max(1).min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// Where a dialog goes, sized from wrapped line counts (not source lines:
/// a line that wraps takes more rows).
pub(crate) struct PopupLayout {
    pub(crate) frame: Rect,
    pub(crate) body: Rect,
    pub(crate) footer: Rect,
    /// Body rows after wrapping.
    pub(crate) total: u16,
    pub(crate) max_scroll: u16,
}

/// Rows `lines` take at `width` columns, wrapped as the dialogs render them.
pub(crate) fn wrapped_height(lines: &[Line<'static>], width: u16) -> u16 {
    if lines.is_empty() {
        return 0;
    }
    let n = Paragraph::new(lines.to_vec())
        .wrap(Wrap { trim: false })
        .line_count(width);
    u16::try_from(n).unwrap_or(u16::MAX)
}

pub(crate) fn scroll_hint(top: u16, bottom: u16, total: u16) -> String {
    format!("j/k scroll · lines {top}-{bottom} of {total}")
}

/// The footer with the scroll hint after the keys.
pub(crate) fn with_hint(footer: &[Line<'static>], hint: String, t: Theme) -> Vec<Line<'static>> {
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

pub(crate) fn popup_layout(area: Rect, v: &PopupView, t: Theme) -> PopupLayout {
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
