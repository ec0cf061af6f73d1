//! How things look: colours (none under NO_COLOR), borders (ASCII for
//! TERM=dumb), marks and words, and the text helpers every pane uses
//! (control characters escaped, values masked and cut).

use crate::fieldpath::FieldPath;
use crate::merge::{FieldAction, FieldChange};
use crate::plan::{ObjectAction, ObjectPlan};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders};
use serde_json::Value;

pub const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// Colours, or none at all under NO_COLOR (modifiers still apply).
#[derive(Clone, Copy, Default)]
pub struct Theme {
    pub color: bool,
    /// ASCII borders (TERM=dumb).
    pub ascii: bool,
    /// A light background (`--theme`).
    pub light: bool,
}

/// Borders a dumb terminal can draw.
pub(crate) const ASCII_BORDER: ratatui::symbols::border::Set = ratatui::symbols::border::Set {
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
    /// Borders and other chrome that must not shout but must show: grey
    /// on a dark background, the palette's dark grey on a light one (where
    /// light grey nearly vanishes).
    pub(crate) fn muted(self) -> Style {
        self.fg(if self.light {
            Color::DarkGray
        } else {
            Color::Gray
        })
    }

    /// A syntax colour of the YAML view in the terminal's own palette
    /// (named ANSI colours, no fixed RGB), per theme.
    pub(crate) fn syntax(self, c: crate::highlight::Rgb) -> Style {
        use crate::highlight as h;
        let light = self.light;
        let named = match c {
            h::KEY if light => Color::Blue,
            h::KEY => Color::LightBlue,
            h::STRING => Color::Green,
            h::NUMBER if light => Color::Magenta,
            h::NUMBER => Color::Yellow,
            h::CONSTANT => Color::Magenta,
            h::COMMENT => Color::DarkGray,
            h::ANCHOR if light => Color::Red,
            h::ANCHOR => Color::LightYellow,
            h::ESCAPE => Color::Cyan,
            // Punctuation and the rest: the terminal's own foreground.
            _ => return Style::default(),
        };
        self.fg(named)
    }

    /// A block with this theme's border characters.
    pub(crate) fn block(self) -> Block<'static> {
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
    pub(crate) fn action(self, a: ObjectAction) -> Style {
        self.fg(match a {
            ObjectAction::Create => Color::Green,
            ObjectAction::Update => Color::Yellow,
            ObjectAction::Unchanged => Color::DarkGray,
            ObjectAction::Prune => Color::Magenta,
            ObjectAction::Error => Color::Red,
        })
    }
    pub(crate) fn field(self, a: FieldAction) -> Style {
        self.fg(match a {
            FieldAction::Set => Color::Green,
            FieldAction::Clear => Color::Red,
            FieldAction::Keep => Color::Blue,
        })
    }
}

/// The mark and its colour for one object.
/// The mark of an object changed in the cluster since the load.
pub const CHANGED_MARK: &str = "Δ";

/// The list's mark of a server-side conflict no decision covers.
pub const CONFLICT_MARK: char = '≠';

/// What an object's mark depends on beyond the object: the app answers
/// (the theme stays free of the app's state).
pub trait MarkSource {
    fn theme(&self) -> Theme;
    /// `o` is queued for a delete (prune mode) or in the open delete
    /// confirmation.
    fn deleting(&self, o: &ObjectPlan) -> bool;
    /// What apply would do with `o` is known.
    fn planned(&self, o: &ObjectPlan) -> bool;
    /// `o` has a server-side conflict no decision covers.
    fn conflicted(&self, o: &ObjectPlan) -> bool;
}

pub fn mark(m: &(impl MarkSource + ?Sized), o: &ObjectPlan) -> (char, Style) {
    let t = m.theme();
    if m.deleting(o) {
        return ('x', t.fg(Color::Red).add_modifier(Modifier::BOLD));
    }
    if o.action == ObjectAction::Error {
        return ('!', t.fg(Color::Red));
    }
    // Read from the manifests; what apply would do is not known yet.
    if !m.planned(o) {
        return ('?', t.fg(Color::DarkGray));
    }
    if m.conflicted(o) {
        return (CONFLICT_MARK, t.fg(Color::Red).add_modifier(Modifier::BOLD));
    }
    if !o.warnings.is_empty() {
        return (WARNING_MARK, t.fg(Color::Yellow));
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

pub(crate) fn action_word(a: ObjectAction) -> &'static str {
    match a {
        ObjectAction::Create => "create",
        ObjectAction::Update => "update",
        ObjectAction::Unchanged => "in sync",
        ObjectAction::Prune => "prune candidate",
        ObjectAction::Error => "error",
    }
}

/// The act column of a released `clear` row (`R`), and its reason.
pub(crate) const RELEASED_WORD: &str = "free";

pub(crate) const RELEASED_REASON: &str = "released: live value stays";

pub(crate) fn field_word(a: FieldAction) -> &'static str {
    match a {
        FieldAction::Set => "set",
        FieldAction::Clear => "clear",
        FieldAction::Keep => "keep",
    }
}

/// A field value for display: `—` when the side has none; Secret data masked.
pub fn show_value(o: &ObjectPlan, path: &FieldPath, v: &Option<Value>) -> String {
    match v {
        None => "—".to_string(),
        Some(_) if crate::mask::is_secret_field(&o.kind, path) => crate::mask::MASK.to_string(),
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
    f.explain(crate::merge::Form::Column)
}

/// Text from manifests, live objects and servers as drawn: control
/// characters shown escaped ([`crate::text::escape_controls`]; ratatui
/// would drop them silently). Applied where lines reach a widget.
pub(crate) fn esc(s: &str) -> String {
    crate::text::escape_controls(s).into_owned()
}

/// [`esc`] over every span of built lines.
pub(crate) fn esc_lines(lines: Vec<Line<'static>>) -> Vec<Line<'static>> {
    lines.into_iter().map(esc_line).collect()
}

pub(crate) fn esc_line(mut l: Line<'static>) -> Line<'static> {
    for span in &mut l.spans {
        if let std::borrow::Cow::Owned(e) = crate::text::escape_controls(&span.content) {
            span.content = e.into();
        }
    }
    l
}

pub(crate) fn block(title: String, focused: bool, t: Theme) -> Block<'static> {
    let style = if focused {
        t.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    } else {
        t.muted()
    };
    t.block()
        .borders(Borders::ALL)
        .border_style(style)
        .title(Span::styled(esc(&title), style))
}

/// Text padded with spaces (or cut) to `w` columns.
pub(crate) fn pad(s: &str, w: usize) -> String {
    let s = fit(s, w);
    let n = Line::from(s.as_str()).width();
    format!("{s}{}", " ".repeat(w.saturating_sub(n)))
}

/// The colour of a drift row (a change made in the cluster that apply
/// reverts); its mark shows without colour too.
pub(crate) const DRIFT: Color = Color::LightMagenta;

pub(crate) const DRIFT_MARK: char = '↺';

/// An object that would apply but carries warnings (`!` is an error).
pub(crate) const WARNING_MARK: char = '⚠';

pub(crate) fn keys_line(text: &str, t: Theme) -> Line<'static> {
    Line::from(Span::styled(
        text.to_string(),
        t.fg(Color::Cyan).add_modifier(Modifier::BOLD),
    ))
}

/// Whether the kind's values are masked (a Secret's data).
pub(crate) fn is_secret(o: &ObjectPlan) -> bool {
    o.kind == "Secret" && !o.api_version.contains('/')
}

/// The kind as the list shows it: with its group when it is one of
/// `ambiguous` (kinds of one name in several groups).
pub fn kind_label<'a>(
    ambiguous: &std::collections::BTreeSet<String>,
    o: &'a ObjectPlan,
) -> std::borrow::Cow<'a, str> {
    let group = crate::objref::split_api_version(&o.api_version).0;
    if ambiguous.contains(&o.kind) && !group.is_empty() {
        std::borrow::Cow::Owned(crate::objref::group_kind(group, &o.kind))
    } else {
        std::borrow::Cow::Borrowed(o.kind.as_str())
    }
}

/// Whether a row reverts a change made in the cluster.
pub fn is_drift(f: &FieldChange) -> bool {
    f.undoes_cluster_change()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::{Cause, Reason};

    /// The reason column of kept rows: a server default reads the same with
    /// or without managedFields; an unknown writer shows the core's reason.
    #[test]
    fn kept_rows_without_managed_fields() {
        let row = |cause, reason| FieldChange {
            path: "spec.x".into(),
            config: None,
            live: Some(serde_json::json!(1)),
            last_applied: None,
            action: FieldAction::Keep,
            reason,
            cause,
            owner: None,
            changed_at: None,
            hazards: vec![],
        };
        assert_eq!(
            reason(&row(Cause::ServerDefault, Reason::DefaultValue)),
            "kept: server default"
        );
        assert_eq!(
            reason(&row(Cause::OtherWriter, Reason::UnknownWriter)),
            "live only: writer unknown, the live object carries no managedFields (not in config \
             or last-applied; `kubectl get --show-managed-fields -o json` shows the owners)"
        );
    }

    /// A config change over a change made in the cluster: marked as a drift
    /// revert (↺), its reason naming the writer and time.
    #[test]
    fn a_change_over_a_cluster_change_is_marked() {
        use crate::merge::{Hazard, HazardKind};
        let f = FieldChange {
            path: "spec.template.spec.containers[name=c].image".into(),
            config: Some(serde_json::json!("nginx:1.16")),
            live: Some(serde_json::json!("nginx:1.14-hotfix")),
            last_applied: Some(serde_json::json!("nginx:1.14")),
            action: FieldAction::Set,
            reason: Reason::Differs,
            cause: Cause::Intended,
            owner: Some("kubectl-set".into()),
            changed_at: Some("2026-11-28T15:10:00Z".into()),
            hazards: vec![Hazard {
                kind: HazardKind::OverwritesClusterChange,
                message: "apply replaces nginx:1.14-hotfix, set by kubectl-set at \
                          2026-11-28T15:10:00Z, with nginx:1.16 (last applied: nginx:1.14)"
                    .into(),
            }],
        };
        assert!(is_drift(&f));
        assert_eq!(
            reason(&f),
            "intended: the manifest changed, over a change made in the cluster by kubectl-set \
             at 2026-11-28T15:10:00Z"
        );
    }
}
