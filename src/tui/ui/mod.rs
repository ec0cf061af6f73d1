//! Rendering: widgets draw from borrowed state. Only visible list rows are
//! built, so a frame costs the same with ten objects or ten thousand. What
//! the panes hold comes from `theme`, `detail`, `dialogs` and `yamlview`,
//! where it goes from `layout` (which the app uses too). Each view takes
//! what it draws (a small borrowed struct, built here from the app in one
//! place), not the app.

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
        let app = self;
        let t = app.opts.theme();
        let a = crate::tui::app::areas(area, app.show_log, app.focus == Focus::Fields);
        render_header(&header_view(app), a.header, buf, t);
        let mark = |o: &crate::plan::ObjectPlan| crate::tui::theme::mark(app, o);
        render_list(&list_view(app, &mark), a.list, buf, t);
        let focus = PaneFocus {
            has_focus: app.focus == Focus::Fields,
            no_popup: app.popup.is_none(),
        };
        // The pane's width inside its border: what the field table is laid out for.
        let width = a.detail.width.saturating_sub(2);
        if !app.conn.live_known {
            render_live_state(&live_state_view(app), focus, a.detail, buf, t);
        } else if app.detail.yaml {
            let v = app.selected().map(|o| YamlView {
                object: o,
                lines: app.yaml_lines(o),
                unfold: app.detail.yaml_unfold,
                scroll: app.detail.yaml_scroll,
            });
            render_yaml(v.as_ref(), focus, a.detail, buf, t);
        } else if let Some(mode) = app.server_side() {
            match app.selected() {
                Some(o) => {
                    let v = serverside::SsaView {
                        object: o,
                        rows: app.ssa_rows(),
                        manager: &mode.manager,
                        undecided: app.ssa.undecided(&o.id()),
                        cursor: app.sel.field_cursor,
                        scroll: app.sel.field_scroll,
                    };
                    serverside::render_ssa_fields(
                        &v,
                        focus.has_focus && focus.no_popup,
                        a.detail,
                        buf,
                        t,
                    );
                }
                None => render_no_fields(" Fields (server-side) ", false, focus, a.detail, buf, t),
            }
        } else {
            match fields_view(app, usize::from(width), t) {
                Some(v) => render_fields(&v, focus, a.detail, buf, t),
                None => render_no_fields(" Fields ", app.jobs.loading, focus, a.detail, buf, t),
            }
        }
        if app.show_log {
            render_log(&app.log, a.log, buf, t);
        }
        render_status(&status_view(app), a.status, buf, t);
        if let Some(p) = &app.popup {
            let ctx = crate::tui::app::dialog_ctx(app);
            render_popup(ctx, app.popup_scroll, p, area, buf, t);
        }
    }
}

fn header_view(app: &App) -> HeaderView<'_> {
    HeaderView {
        server: app.conn.server.as_ref(),
        live: app.conn.live.as_ref(),
        counts: app.list.counts,
        live_known: app.conn.live_known,
        failed: app.conn.failure.is_some(),
        objects: app.list.plan.objects.len(),
        prune_skipped: app.list.plan.prune_skipped.as_ref(),
        conflicts: app.server_side().map(|_| app.ssa_conflict_count()),
        marked: app.sel.marked.len(),
    }
}

fn list_view<'a>(
    app: &'a App,
    mark: &'a dyn Fn(&crate::plan::ObjectPlan) -> (char, ratatui::style::Style),
) -> ListView<'a> {
    ListView {
        objects: &app.list.plan.objects,
        rows: &app.list.rows,
        shown: app.list.shown,
        cursor: app.sel.cursor,
        scroll: app.sel.list_scroll,
        group: app.list.group,
        filter: app.list.filter,
        has_focus: app.focus == Focus::List,
        no_popup: app.popup.is_none(),
        waiting: app.jobs.loading || app.jobs.connecting,
        live_known: app.conn.live_known,
        marked: &app.sel.marked,
        excluded: &app.sel.excluded,
        changed: &app.conn.changed,
        ambiguous_kinds: &app.list.ambiguous_kinds,
        mark,
    }
}

fn fields_view(app: &App, width: usize, t: Theme) -> Option<FieldsView<'_>> {
    let o = app.selected()?;
    let key = o.id();
    Some(FieldsView {
        object: o,
        layout: app.field_layout(width)?,
        tallest: app.tallest_detail(o, u16::try_from(width).unwrap_or(u16::MAX)),
        head: app.head_lines(o, t),
        cursor: app.sel.field_cursor,
        scroll: app.sel.field_scroll,
        excluded: app.sel.excluded.get(&key),
        released: app.sel.released.get(&key),
        detail_scroll: app.detail.detail_scroll.as_ref(),
    })
}

fn live_state_view(app: &App) -> LiveStateView<'_> {
    LiveStateView {
        failure: app.conn.failure.as_deref(),
        server: app.conn.server.as_ref(),
        connecting: app.jobs.connecting,
        progress: app.jobs.progress.as_ref(),
        load_status: app.jobs.load_status,
        waited: app.conn.waited,
    }
}

fn status_view(app: &App) -> StatusView<'_> {
    let footer = if app.list.searching {
        Footer::Searching
    } else if app.popup.is_some() {
        Footer::Popup
    } else {
        Footer::Pane {
            pane: app.pane(),
            recreate: app.recreate_offered(),
        }
    };
    StatusView {
        search: &app.list.search,
        searching: app.list.searching,
        server: app.conn.server.as_ref(),
        waiting: app.waiting(),
        connecting: app.jobs.connecting,
        progress: app.jobs.progress.as_ref(),
        load_status: app.jobs.load_status,
        failed: app.conn.failure.is_some(),
        pending: &app.jobs.pending,
        write_progress: app.jobs.write_progress,
        spinner: app.spinner,
        waited: app.conn.waited,
        result: app
            .last_result
            .as_deref()
            .map(|r| (r, app.last_result_failed)),
        footer,
    }
}
