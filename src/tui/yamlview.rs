//! The YAML view: the live object against the result of the apply, as a
//! line diff with word-level emphasis, unchanged lines syntax-highlighted.

use super::ui::Theme;
use crate::highlight::{Rgb, highlight_yaml};
use crate::merge::PatchType;
use crate::merge::apply::{apply_merge, apply_strategic};
use crate::patchmeta::PatchMeta;
use crate::plan::mask_secret_pair;
use crate::plan::{ObjectAction, ObjectPlan};
use crate::yaml::to_yaml;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

/// An object as shown: without managedFields (noise).
fn shown(mut v: Value) -> Value {
    if let Some(Value::Object(meta)) = v.get_mut("metadata") {
        meta.remove("managedFields");
    }
    v
}

/// The live object with the plan's patch applied, as the server would
/// store it. A patch the merge code rejects shows the config instead.
fn merged(o: &ObjectPlan, live: &Value, patch: &crate::merge::Patch) -> Value {
    match patch.kind {
        PatchType::Merge => apply_merge(live, &patch.body),
        PatchType::Strategic => {
            let schema = PatchMeta::builtin().root(&o.api_version, &o.kind);
            apply_strategic(live, &patch.body, schema)
                .unwrap_or_else(|_| o.config.clone().unwrap_or_else(|| live.clone()))
        }
    }
}

/// (before, after) YAML texts for an object.
pub fn texts(o: &ObjectPlan) -> (String, String) {
    let live = o.live.clone();
    let after = match o.action {
        ObjectAction::Create => o.config.clone(),
        ObjectAction::Prune => None,
        ObjectAction::Unchanged => live.clone(),
        ObjectAction::Update | ObjectAction::Error => match (&o.live, &o.patch) {
            (Some(l), Some(p)) => Some(merged(o, l, p)),
            (Some(_), None) => live.clone(),
            (None, _) => o.config.clone(),
        },
    };
    // Secret values masked as a pair, so a changed one still shows changed.
    let (live, after) = mask_secret_pair(live.as_ref(), after.as_ref());
    let (live, after) = (live.map(shown), after.map(shown));
    let y = |v: Option<Value>| v.map(|v| to_yaml(&v)).unwrap_or_default();
    (y(live), y(after))
}

pub fn diff_lines(o: &ObjectPlan, t: Theme) -> Vec<Line<'static>> {
    let (before, after) = texts(o);
    if before.is_empty() && after.is_empty() {
        return vec![Line::from(Span::styled(
            "no YAML: neither a live object nor a config",
            t.fg(Color::DarkGray),
        ))];
    }
    let highlighted = highlight_yaml(&after);
    let diff = TextDiff::from_lines(&before, &after);
    let mut out = Vec::new();
    for op in diff.ops() {
        for change in diff.iter_inline_changes(op) {
            let tag = change.tag();
            if tag == ChangeTag::Equal {
                let mut spans = vec![Span::raw("  ")];
                match change.new_index().and_then(|i| highlighted.get(i)) {
                    Some(hl) => {
                        for (Rgb(r, g, b), s) in hl {
                            spans.push(Span::styled(s.clone(), t.fg(Color::Rgb(*r, *g, *b))));
                        }
                    }
                    None => {
                        let text: String = change
                            .iter_strings_lossy()
                            .map(|(_, s)| s.into_owned())
                            .collect();
                        spans.push(Span::raw(text.trim_end_matches('\n').to_string()));
                    }
                }
                out.push(Line::from(spans));
                continue;
            }
            let (sign, base, emph_bg) = if tag == ChangeTag::Delete {
                ("- ", t.fg(Color::Red), Color::Rgb(110, 30, 30))
            } else {
                ("+ ", t.fg(Color::Green), Color::Rgb(30, 90, 30))
            };
            let mut spans = vec![Span::styled(sign, base.add_modifier(Modifier::BOLD))];
            for (emph, s) in change.iter_strings_lossy() {
                let s = s.trim_end_matches('\n').to_string();
                if s.is_empty() {
                    continue;
                }
                let style = if emph {
                    // Underline keeps word changes visible without colour.
                    base.patch(t.bg(emph_bg))
                        .add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
                } else {
                    base
                };
                spans.push(Span::styled(s, style));
            }
            out.push(Line::from(spans));
        }
    }
    if out.is_empty() {
        out.push(Line::from(Span::styled("(empty)", Style::default())));
    }
    out
}
