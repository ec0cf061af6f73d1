//! The field pane's content: its head (verdict, source, errors, warnings)
//! and the box with the selected row whole. Measured by `layout`, drawn
//! by `ui`.

use crate::merge::{Cause, FieldAction, FieldChange};
use crate::plan::ObjectPlan;
use crate::tui::fieldtable;
use crate::tui::theme::*;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// The field pane's head: the object's verdict, source and patch type,
/// then its error, prune reason and warnings.
pub(crate) fn field_head(o: &ObjectPlan, root: Option<&str>, t: Theme) -> Vec<Line<'static>> {
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
        // As the user knows it: the demo's temporary directory left out.
        let src = root
            .and_then(|r| src.strip_prefix(r))
            .map_or(src.as_str(), |s| s.trim_start_matches('/'));
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

/// `before` against `after` as a line diff (`crate::plan::block`), every
/// line shown: `- ` removed lines, `+ ` added ones, `  ` the same (the
/// header line says which is which).
pub(crate) fn block_diff(
    before: &Option<serde_json::Value>,
    after: &Option<serde_json::Value>,
    t: Theme,
) -> Vec<Line<'static>> {
    use crate::plan::block::{self, BlockLine, LineTag};
    let mut lines = vec![Line::from(Span::styled(
        block::heading(before, after),
        t.fg(Color::DarkGray),
    ))];
    for l in block::line_diff(before, after, None) {
        let BlockLine::Line(tag, text) = l else {
            continue;
        };
        let style = match tag {
            LineTag::Same => Style::default(),
            LineTag::Removed => t.fg(Color::Red),
            LineTag::Added => t.fg(Color::Green),
        };
        lines.push(Line::from(Span::styled(
            format!("{} {text}", tag.mark()),
            style,
        )));
    }
    lines
}

/// The box under the table: the selected field whole (path, the three
/// values, the reason, its hazards and cause).
/// The box under the field table: the selected row whole. `released`:
/// a `clear` row released with `R`.
pub(crate) fn field_detail(
    o: &ObjectPlan,
    f: &FieldChange,
    released: bool,
    t: Theme,
) -> Vec<Line<'static>> {
    let word = if released {
        RELEASED_WORD
    } else {
        field_word(f.action)
    };
    let mut lines = vec![Line::from(vec![
        Span::styled(
            format!("{word} "),
            t.field(f.action).add_modifier(Modifier::BOLD),
        ),
        Span::styled(
            f.path.to_string(),
            Style::default().add_modifier(Modifier::BOLD),
        ),
    ])];
    let structured = !crate::mask::is_secret_field(&o.kind, &f.path)
        && [&f.last_applied, &f.live, &f.config]
            .into_iter()
            .flatten()
            .any(crate::plan::block::is_structured);
    if structured {
        // As kubectl diff shows them: YAML (or the text), live against
        // what the apply makes of it, line by line.
        let side = |v: &Option<serde_json::Value>| {
            fieldtable::cell_value_against(o, &f.path, v, &f.config)
        };
        let last = if f.last_applied.is_some() && f.last_applied == f.live {
            "the same as live".to_string()
        } else if f.last_applied.is_some() && f.last_applied == f.config {
            "the same as the config".to_string()
        } else {
            side(&f.last_applied)
        };
        lines.push(Line::from(Span::styled(
            format!("last-applied: {last}"),
            t.fg(Color::DarkGray),
        )));
        let after = match f.action {
            FieldAction::Keep => &f.live,
            _ if released => &f.live,
            _ => &f.config,
        };
        lines.extend(block_diff(&f.live, after, t));
    } else {
        lines.push(Line::from(format!(
            "last-applied {} · live {} · config {}{}",
            show_value(o, &f.path, &f.last_applied),
            show_value(o, &f.path, &f.live),
            show_value(o, &f.path, &f.config),
            fieldtable::secret_change(o, f).map_or(String::new(), |w| format!(" ({w})"))
        )));
    }
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
            f.explain(crate::merge::Form::Text),
            t.fg(Color::DarkGray),
        )));
    }
    esc_lines(lines)
}
