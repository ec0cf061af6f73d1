//! The YAML view: the live object against the result of the apply, as a
//! line diff with word-level emphasis, unchanged lines syntax-highlighted.

use super::theme::Theme;
use crate::highlight::highlight_yaml;
use crate::mask::mask_secret_pair;
use crate::merge::PatchType;
use crate::merge::apply::{apply_merge, apply_strategic};
use crate::patchmeta::PatchMeta;
use crate::plan::{ObjectAction, ObjectPlan};
use crate::yaml::to_yaml;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;
use similar::{ChangeTag, TextDiff};
use std::rc::Rc;

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

/// How the last-applied annotation shows: one summary line, or its JSON
/// pretty-printed (`L`), so that a change reads line by line.
fn show_annotation(v: &mut Value, whole: bool, other: Option<&str>, before: bool) {
    let Some(ann) = v
        .pointer_mut("/metadata/annotations")
        .and_then(|a| a.get_mut(crate::merge::LAST_APPLIED))
    else {
        return;
    };
    let Some(text) = ann.as_str().map(str::to_string) else {
        return;
    };
    let parsed = serde_json::from_str::<Value>(&text).ok();
    *ann = Value::String(match (whole, parsed) {
        (true, Some(j)) => {
            let pretty = serde_json::to_string_pretty(&j).unwrap_or(text.clone());
            format!("{pretty}\n")
        }
        _ => {
            // The two sides differ in words when the text differs, so the
            // diff marks a changed annotation even at the same length.
            let what = match other {
                Some(o) if o != text && before => ", before",
                Some(o) if o != text => ", after",
                _ => "",
            };
            format!("{} bytes{what} (L)", text.trim_end().len())
        }
    });
}

fn annotation(v: &Option<Value>) -> Option<String> {
    v.as_ref()?
        .pointer("/metadata/annotations")?
        .get(crate::merge::LAST_APPLIED)?
        .as_str()
        .map(str::to_string)
}

/// (before, after) YAML texts for an object, the annotation as one line.
pub fn texts(o: &ObjectPlan) -> (String, String) {
    texts_with(o, false)
}

/// (before, after) YAML texts; `whole`: the last-applied annotation as
/// pretty JSON.
pub fn texts_with(o: &ObjectPlan, whole: bool) -> (String, String) {
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
    let (mut live, mut after) = (live.map(shown), after.map(shown));
    let (ab, aa) = (annotation(&live), annotation(&after));
    if let Some(v) = live.as_mut() {
        show_annotation(v, whole, aa.as_deref(), true);
    }
    if let Some(v) = after.as_mut() {
        show_annotation(v, whole, ab.as_deref(), false);
    }
    let y = |v: Option<Value>| v.map(|v| to_yaml(&v)).unwrap_or_default();
    (y(live), y(after))
}

/// The YAML view of one object, kept in two layers: the diff and its
/// highlighting (the costly part) are built when the object, the plan,
/// `L` or the colours change; folding (`z`) reuses them. The app builds it
/// in `update`, never on a frame or a scroll key. The lines do not depend
/// on the pane's width (the pane cuts them), so a resize rebuilds nothing.
#[derive(Clone)]
pub struct Cached {
    /// The plan's generation, the object (its key and address in the
    /// plan), `L`, colour.
    diff_key: (u64, String, bool, bool),
    diff: Rc<(Vec<Line<'static>>, Vec<bool>)>,
    unfold: bool,
    lines: Rc<Vec<Line<'static>>>,
}

impl Cached {
    /// The lines the view shows.
    pub fn lines(&self) -> Rc<Vec<Line<'static>>> {
        self.lines.clone()
    }
}

/// How the YAML view is shown: what decides its lines besides the object.
#[derive(Clone, Copy)]
pub struct Shown {
    /// The plan's generation (a new plan, a new diff).
    pub plan_gen: u64,
    /// The last-applied annotation whole (`L`).
    pub last_applied: bool,
    /// Unchanged runs whole (`z`).
    pub unfold: bool,
    pub theme: Theme,
}

/// The YAML view of `o` as `shown` (folded unless `z`): `prev` again when
/// it is of the same object, plan and flags; its diff reused when only
/// `z` differs; else built.
pub fn cached(o: &ObjectPlan, shown: Shown, prev: Option<&Cached>) -> Cached {
    let t = shown.theme;
    let diff_key = (
        shown.plan_gen,
        format!("{:?} {:p}", o.id(), o),
        shown.last_applied,
        t.color,
    );
    let same_object = prev.filter(|c| c.diff_key == diff_key);
    if let Some(c) = same_object.filter(|c| c.unfold == shown.unfold) {
        return c.clone();
    }
    let diff = match same_object {
        Some(c) => c.diff.clone(),
        None => Rc::new(diff(o, shown.last_applied, t)),
    };
    let lines = Rc::new(if shown.unfold {
        diff.0.clone()
    } else {
        fold(diff.0.clone(), &diff.1, t)
    });
    Cached {
        diff_key,
        diff,
        unfold: shown.unfold,
        lines,
    }
}

/// Lines more than `CONTEXT` away from a change fold into one line.
const CONTEXT: usize = 3;

fn fold(lines: Vec<Line<'static>>, changed: &[bool], t: Theme) -> Vec<Line<'static>> {
    if !changed.iter().any(|c| *c) {
        return lines;
    }
    let n = lines.len();
    let mut near = vec![false; n];
    for (i, _) in changed.iter().enumerate().filter(|(_, c)| **c) {
        for slot in near
            .iter_mut()
            .take((i + CONTEXT + 1).min(n))
            .skip(i.saturating_sub(CONTEXT))
        {
            *slot = true;
        }
    }
    let mut out = Vec::with_capacity(n);
    let mut hidden: Vec<Line<'static>> = Vec::new();
    let flush = |hidden: &mut Vec<Line<'static>>, out: &mut Vec<Line<'static>>| {
        // A fold of one line would hide nothing.
        if hidden.len() > 1 {
            out.push(Line::from(Span::styled(
                format!("  ⋯ {} unchanged lines (z unfolds)", hidden.len()),
                t.fg(Color::DarkGray),
            )));
            hidden.clear();
        } else {
            out.append(hidden);
        }
    };
    for (l, keep) in lines.into_iter().zip(near) {
        if keep {
            flush(&mut hidden, &mut out);
            out.push(l);
        } else {
            hidden.push(l);
        }
    }
    flush(&mut hidden, &mut out);
    out
}

/// The whole diff, and which of its lines are changes.
fn diff(o: &ObjectPlan, whole: bool, t: Theme) -> (Vec<Line<'static>>, Vec<bool>) {
    let (before, after) = texts_with(o, whole);
    if before.is_empty() && after.is_empty() {
        return (
            vec![Line::from(Span::styled(
                "no YAML: neither a live object nor a config",
                t.fg(Color::DarkGray),
            ))],
            vec![false],
        );
    }
    let highlighted = highlight_yaml(&after);
    let diff = TextDiff::from_lines(&before, &after);
    let mut out = Vec::new();
    let mut changed = Vec::new();
    for op in diff.ops() {
        for change in diff.iter_inline_changes(op) {
            let tag = change.tag();
            if tag == ChangeTag::Equal {
                let mut spans = vec![Span::raw("  ")];
                match change.new_index().and_then(|i| highlighted.get(i)) {
                    Some(hl) => {
                        for (rgb, s) in hl {
                            spans.push(Span::styled(s.clone(), t.syntax(*rgb)));
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
                changed.push(false);
                continue;
            }
            let (sign, base) = if tag == ChangeTag::Delete {
                ("- ", t.fg(Color::Red))
            } else {
                ("+ ", t.fg(Color::Green))
            };
            let mut spans = vec![Span::styled(sign, base.add_modifier(Modifier::BOLD))];
            for (emph, s) in change.iter_strings_lossy() {
                let s = s.trim_end_matches('\n').to_string();
                if s.is_empty() {
                    continue;
                }
                let style = if emph {
                    // Underline keeps word changes visible without colour.
                    // Reversed: the palette's red or green behind the
                    // terminal's own background colour, on any theme.
                    base.add_modifier(Modifier::BOLD | Modifier::UNDERLINED | Modifier::REVERSED)
                } else {
                    base
                };
                spans.push(Span::styled(s, style));
            }
            out.push(Line::from(spans));
            changed.push(true);
        }
    }
    if out.is_empty() {
        out.push(Line::from(Span::styled("(empty)", Style::default())));
        changed.push(false);
    }
    (out, changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_reuses_the_diff_and_a_new_plan_rebuilds_it() {
        let mut o = crate::plan::error_object("v1", "ConfigMap", Some("a"), "b", None, "".into());
        o.action = ObjectAction::Create;
        o.error = None;
        let mut data = serde_json::Map::new();
        for i in 0..40 {
            data.insert(format!("k{i}"), Value::String(format!("v{i}")));
        }
        o.config = Some(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "b", "namespace": "a"}, "data": data,
        }));
        let mut shown = Shown {
            plan_gen: 0,
            last_applied: false,
            unfold: false,
            theme: Theme::default(),
        };
        let folded = cached(&o, shown, None);
        let again = cached(&o, shown, Some(&folded));
        assert!(
            Rc::ptr_eq(&folded.lines, &again.lines),
            "one build per object"
        );
        shown.unfold = true;
        let unfolded = cached(&o, shown, Some(&again));
        assert!(!Rc::ptr_eq(&folded.lines, &unfolded.lines));
        assert!(
            Rc::ptr_eq(&folded.diff, &unfolded.diff),
            "z folds, no new diff"
        );
        shown.plan_gen += 1;
        let rebuilt = cached(&o, shown, Some(&unfolded));
        assert!(
            !Rc::ptr_eq(&folded.diff, &rebuilt.diff),
            "a new plan, a new diff"
        );
    }
}
