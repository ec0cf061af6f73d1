//! A dialog drawn over the screen, its body scrolled.

use crate::tui::dialogs::*;
use crate::tui::layout::*;
use crate::tui::state::Popup;
use crate::tui::theme::*;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};
use ratatui::text::Span;
use ratatui::widgets::{Borders, Clear, Paragraph, Widget, Wrap};

/// `scroll`: the rows the body is scrolled by.
pub(crate) fn render_popup(
    ctx: DialogCtx,
    scroll: u16,
    p: &Popup,
    area: Rect,
    buf: &mut Buffer,
    t: Theme,
) {
    let v = popup_view(ctx, p, t);
    let l = popup_layout(area, &v, t);
    Clear.render(l.frame, buf);
    let style = t.fg(Color::Cyan).add_modifier(Modifier::BOLD);
    t.block()
        .borders(Borders::ALL)
        .border_style(style)
        .title(Span::styled(format!(" {} ", v.title), style))
        .render(l.frame, buf);
    // Clamped here too: a resize can shrink the range after the key that scrolled.
    let scroll = scroll.min(l.max_scroll);
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
