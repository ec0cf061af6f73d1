//! Rendering: widgets draw from borrowed state. Only visible list rows are
//! built, so a frame costs the same with ten objects or ten thousand. What
//! the panes hold comes from `theme`, `detail`, `dialogs` and `yamlview`,
//! where it goes from `layout` (which the app uses too).

use crate::tui::app::{App, Focus};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

mod fields;
mod list;
mod popup;
mod serverside;
mod status;

// Named here by the tests (a field's reason).
pub use crate::tui::theme::{Theme, reason};
use fields::*;
use list::*;
use popup::*;
use status::*;

impl Widget for &App {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = Theme::of(&self.opts);
        let a = crate::tui::app::areas(area, self.show_log, self.focus == Focus::Fields);
        render_header(self, a.header, buf, t);
        render_list(self, a.list, buf, t);
        if !self.live_known {
            render_live_state(self, a.detail, buf, t);
        } else if self.yaml {
            render_yaml(self, a.detail, buf, t);
        } else if self.server_side().is_some() {
            serverside::render_ssa_fields(self, a.detail, buf, t);
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
