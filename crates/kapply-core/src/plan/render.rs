//! `kapply diff` text: the piped one-line-per-field layout and the
//! terminal layout, both escaped and optionally painted.

use super::mask::mask_plan;
use super::{ObjectAction, ObjectPlan, Plan, PruneBlock, fold};
use crate::fieldpath::FieldPath;
use crate::merge::{self, Cause, FieldAction, FieldChange};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;

/// An object's mark, word and colour in both `diff` layouts.
fn object_mark(action: ObjectAction) -> (&'static str, &'static str, &'static str) {
    match action {
        ObjectAction::Create => ("+", "create", "32"),
        ObjectAction::Update => ("~", "update", "33"),
        ObjectAction::Unchanged => ("=", "unchanged", "2"),
        ObjectAction::Prune => ("-", "prune", "31"),
        ObjectAction::Error => ("!", "error", "31;1"),
    }
}

/// `kapply diff` output when piped (one line per field, for scripts): per
/// object a header (` reverts drift` at its end when it does), then per
/// field its action, path, the three sides (last-applied | live | config;
/// `-` = absent), the reason, the cause in brackets (`[intended]`,
/// `[drift: kubectl-edit at 2026-11-20T10:04:00Z]`), and a `hazard:`
/// line per hazard. ANSI colours when `color`.
pub fn render_diff(plan: &Plan, color: bool) -> String {
    let mut out = String::new();
    for obj in &plan.objects {
        render_diff_object(&mut out, obj, color);
    }
    render_diff_end(&mut out, plan.prune_skipped.as_ref(), color);
    out
}

/// The object plan as shown: a Secret's values masked, any other object
/// as it is (no copy).
pub(super) fn shown(obj: &ObjectPlan) -> Cow<'_, ObjectPlan> {
    if obj.kind == "Secret" {
        Cow::Owned(mask_plan(obj))
    } else {
        Cow::Borrowed(obj)
    }
}

/// One object of [`render_diff`], appended to `out` (`diff` writes each
/// as soon as it is planned).
pub fn render_diff_object(out: &mut String, obj: &ObjectPlan, color: bool) {
    let obj = shown(obj);
    let (sym, word, code) = object_mark(obj.action);
    line(out, "", color, code, ";1", |out| {
        let _ = write!(out, "{sym} {} ({word})", obj.id());
        if let Some(src) = &obj.source {
            let _ = write!(out, "  {src}");
        }
        if let Some(r) = &obj.prune_reason {
            let _ = write!(out, "  {r}");
        }
        if obj.reverts_drift {
            out.push_str("  reverts drift");
        }
    });
    if let Some(e) = &obj.error {
        line(out, "    ", color, "31", "", |out| {
            let _ = write!(out, "error: {e}");
        });
    }
    for w in &obj.warnings {
        line(out, "    ", color, "35", "", |out| {
            let _ = write!(out, "warning: {w}");
        });
    }
    for f in &obj.fields {
        let (word, code) = match f.action {
            FieldAction::Set if f.live.is_none() => ("set  ", "32"),
            FieldAction::Set => ("set  ", "33"),
            FieldAction::Clear => ("clear", "31"),
            FieldAction::Keep => ("keep ", "2;34"),
        };
        line(out, "    ", color, code, "", |out| {
            let _ = write!(out, "{word} {}  last-applied: ", f.path);
            show_into(out, &f.last_applied);
            out.push_str(" | live: ");
            show_into(out, &f.live);
            out.push_str(" | config: ");
            show_into(out, &f.config);
            let _ = write!(
                out,
                "  ({})  [{}]",
                f.explain(crate::merge::Form::Reason),
                f.explain(crate::merge::Form::Tag)
            );
        });
        for h in &f.hazards {
            line(out, "      ", color, "31;1", "", |out| {
                let _ = write!(out, "hazard: {}", h.message);
            });
        }
    }
}

/// A side of a field as the piped layout shows it (`-`: absent).
fn show_into(out: &mut String, v: &Option<Value>) {
    match v {
        None => out.push('-'),
        Some(v) => crate::gocompat::write_json(v, out),
    }
}

/// One line of `diff` output (either layout) written straight into `out`:
/// `indent`, then what `text` writes, escaped (no control character from
/// a manifest or the server reaches the terminal) and painted with the
/// ANSI code `code` + `bold` when `color` (an empty code paints nothing).
fn line(
    out: &mut String,
    indent: &str,
    color: bool,
    code: &str,
    bold: &str,
    text: impl FnOnce(&mut String),
) {
    out.push_str(indent);
    let color = color && !code.is_empty();
    if color {
        let _ = write!(out, "\x1b[{code}{bold}m");
    }
    let start = out.len();
    text(out);
    if let Cow::Owned(escaped) = crate::text::escape_controls(&out[start..]) {
        out.truncate(start);
        out.push_str(&escaped);
    }
    if color {
        out.push_str("\x1b[0m");
    }
    out.push('\n');
}

/// What [`render_diff`] and [`render_diff_terminal`] end with: why pruning
/// was skipped, when it was.
pub fn render_diff_end(out: &mut String, prune_skipped: Option<&PruneBlock>, color: bool) {
    if let Some(why) = prune_skipped {
        line(out, "", color, "31;1", "", |out| {
            let _ = write!(out, "! {why}");
        });
    }
}

/// `kapply diff` on a terminal: per object one header line (an unchanged
/// object is just that line), then its changed fields grouped under it,
/// each marked and coloured by cause (drift stands out: `!` and its own
/// colour, so it reads without colour too), its live value and what apply
/// makes of it, and its hazards. Kept fields only with `show_kept`.
/// A change repeated in several objects (same path, values, cause and
/// hazards) is shown once at the end with the objects carrying it; an
/// object's row of it is one line naming it, and an object whose every
/// change is repeated is listed under them only.
pub fn render_diff_terminal(plan: &Plan, color: bool, show_kept: bool) -> String {
    let mut out = String::new();
    let changes = fold::repeated_changes(&plan.objects);
    let folded = fold::folded_rows(&changes);
    for (i, obj) in plan.objects.iter().enumerate() {
        let f = folded.get(&i);
        if f.is_some_and(|f| all_folded(obj, f)) && !show_kept {
            continue;
        }
        terminal_object(&mut out, obj, color, show_kept, f);
    }
    render_repeated(&mut out, &plan.objects, &changes, color);
    render_diff_end(&mut out, plan.prune_skipped.as_ref(), color);
    out
}

/// Whether every change of `obj` is a repeated one and nothing else is
/// said of it (no error, no warning).
fn all_folded(obj: &ObjectPlan, folded: &HashMap<FieldPath, usize>) -> bool {
    obj.error.is_none()
        && obj.warnings.is_empty()
        && obj
            .fields
            .iter()
            .filter(|f| fold::foldable_row(f))
            .all(|f| folded.contains_key(&f.path))
}

/// The repeated changes, each once: `≡ #1 PATH  cause`, its values and the
/// count of objects, its hazards, then the objects by kind.
fn render_repeated(
    out: &mut String,
    objects: &[ObjectPlan],
    changes: &[fold::RepeatedChange],
    color: bool,
) {
    if changes.is_empty() {
        return;
    }
    line(out, "", color, "1", "", |out| {
        out.push_str("≡ repeated changes, each shown once with the objects that carry it");
    });
    for (n, c) in changes.iter().enumerate() {
        let code = if c.row.cause == Cause::Drift {
            "1;35"
        } else {
            "33"
        };
        line(out, "", color, code, "", |out| {
            let _ = write!(out, "≡ #{} {}  {}", n + 1, c.row.path, c.cause_text());
        });
        if structured(&c.row) {
            line(out, "      ", color, "", "", |out| {
                let _ = write!(out, "in {}", c.carried_by(objects));
            });
            block_values(out, &c.row, color);
        } else {
            line(out, "      ", color, "", "", |out| {
                let _ = write!(
                    out,
                    "{}  in {}",
                    field_values(&c.row),
                    c.carried_by(objects)
                );
            });
        }
        for h in &c.row.hazards {
            line(out, "      ", color, "31;1", "", |out| {
                let _ = write!(out, "⚠ {}", h.message);
            });
        }
        let mut kinds: Vec<(String, Vec<String>)> = Vec::new();
        for &i in &c.objects {
            let o = &objects[i];
            let name = match &o.namespace {
                Some(ns) if !ns.is_empty() => format!("{ns}/{}", o.name),
                _ => o.name.clone(),
            };
            let kind = o.kind.clone();
            match kinds.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, names)) => names.push(name),
                None => kinds.push((kind, vec![name])),
            }
        }
        for (kind, names) in kinds {
            line(out, "      ", color, "2", "", |out| {
                let _ = write!(out, "{kind}: {}", names.join(", "));
            });
        }
    }
}

/// One object of [`render_diff_terminal`], appended to `out` (not folded:
/// every row shown).
pub fn render_diff_terminal_object(
    out: &mut String,
    obj: &ObjectPlan,
    color: bool,
    show_kept: bool,
) {
    terminal_object(out, obj, color, show_kept, None);
}

/// One object on a terminal; its rows named in `folded` (path → repeated
/// change number) as one line each.
fn terminal_object(
    out: &mut String,
    obj: &ObjectPlan,
    color: bool,
    show_kept: bool,
    folded: Option<&HashMap<FieldPath, usize>>,
) {
    let obj = shown(obj);
    {
        let (sym, word, code) = object_mark(obj.action);
        line(out, "", color, code, ";1", |out| {
            let _ = write!(out, "{sym} {}  {word}", obj.id());
            if obj.reverts_drift {
                out.push_str(" · reverts drift");
            }
            if let Some(src) = &obj.source {
                let _ = write!(out, "  {src}");
            }
            if let Some(r) = &obj.prune_reason {
                let _ = write!(out, "  {r}");
            }
        });
        if let Some(e) = &obj.error {
            line(out, "    ", color, "31", "", |out| {
                let _ = write!(out, "error: {e}");
            });
        }
        for w in &obj.warnings {
            line(out, "    ", color, "35", "", |out| {
                let _ = write!(out, "warning: {w}");
            });
        }
        let unchanged = obj.action == ObjectAction::Unchanged;
        let mut kept = 0;
        for f in &obj.fields {
            let is_kept = f.action == FieldAction::Keep;
            if is_kept && !show_kept {
                kept += 1;
                continue;
            }
            if let Some(n) = folded.and_then(|m| m.get(&f.path)) {
                line(out, "  ", color, "2", "", |out| {
                    let _ = write!(out, "≡ {}  repeated change #{n} (below)", f.path);
                });
                continue;
            }
            let (mark, code) = match (is_kept, f.cause) {
                (true, _) => ("=", "2"),
                (false, Cause::Drift) => ("!", "1;35"),
                (false, Cause::Intended) => ("~", "33"),
                (false, Cause::New) => ("+", "32"),
                (false, Cause::Removed) => ("-", "31"),
                (false, Cause::Unmanaged) => ("?", "36"),
                (false, Cause::ServerDefault | Cause::OtherWriter) => ("~", "33"),
            };
            line(out, "  ", color, code, "", |out| {
                let _ = write!(
                    out,
                    "{mark} {}  {}",
                    f.path,
                    f.explain(crate::merge::Form::Text)
                );
            });
            if structured(f) {
                block_values(out, f, color);
            } else {
                line(out, "      ", color, "", "", |out| {
                    out.push_str(&field_values(f));
                });
            }
            for h in &f.hazards {
                line(out, "      ", color, "31;1", "", |out| {
                    let _ = write!(out, "⚠ {}", h.message);
                });
            }
        }
        if kept > 0 && !unchanged {
            let s = if kept == 1 { "" } else { "s" };
            line(out, "  ", color, "2", "", |out| {
                let _ = write!(
                    out,
                    "· {kept} kept field{s} (server defaults, other writers): --show-kept lists them"
                );
            });
        }
    }
}

/// Whether a changing row's values read better as blocks of lines (a
/// list, a map, text over several lines) than as one line of JSON; a kept
/// row, which changes nothing, stays one line. A Secret's values are
/// masked before this is asked.
fn structured(f: &FieldChange) -> bool {
    f.action != FieldAction::Keep
        && [&f.last_applied, &f.live, &f.config]
            .into_iter()
            .flatten()
            .any(super::block::is_structured)
}

/// A structured row's values as `kubectl diff` shows them: YAML (or the
/// text), live against what the apply makes of it, changed lines with
/// three lines around them; last-applied named where it differs from both.
fn block_values(out: &mut String, f: &FieldChange, color: bool) {
    use super::block::{self, BlockLine, LineTag};
    let after = &f.config;
    line(out, "      ", color, "2", "", |out| {
        out.push_str(block::heading(&f.live, after));
    });
    for l in block::line_diff(&f.live, after, Some(3)) {
        match l {
            BlockLine::Line(tag, text) => {
                let code = match tag {
                    LineTag::Same => "",
                    LineTag::Removed => "31",
                    LineTag::Added => "32",
                };
                line(out, "      ", color, code, "", |out| {
                    let _ = write!(out, "{} {text}", tag.mark());
                });
            }
            BlockLine::Skipped(n) => {
                let s = if n == 1 { "" } else { "s" };
                line(out, "      ", color, "2", "", |out| {
                    let _ = write!(out, "  … {n} unchanged line{s}");
                });
            }
        }
    }
    if let Some(l) = last_applied_apart(f) {
        line(out, "      ", color, "2", "", |out| {
            out.push_str("last-applied (differs from both): ");
            crate::gocompat::write_json(l, out);
        });
    }
}

/// The last-applied value of a changing row when it differs from both
/// live and the config (a third story worth telling).
fn last_applied_apart(f: &FieldChange) -> Option<&Value> {
    let differs = |x: &Option<Value>| match (&f.last_applied, x) {
        (Some(a), Some(b)) => !merge::deep_eq(a, b),
        (Some(_), None) => true,
        _ => false,
    };
    if f.action != FieldAction::Keep && differs(&f.live) && differs(&f.config) {
        f.last_applied.as_ref()
    } else {
        None
    }
}

/// A field's values as a terminal diff shows them: live, then what apply
/// makes of it; last-applied too where it differs from both.
fn field_values(f: &FieldChange) -> String {
    let v = |x: &Option<Value>| match x {
        None => "(none)".to_string(),
        Some(v) => crate::gocompat::json(v),
    };
    let mut s = match f.action {
        FieldAction::Keep => format!("{} (kept)", v(&f.live)),
        FieldAction::Clear if f.config.is_none() => format!("{} → (removed)", v(&f.live)),
        FieldAction::Set | FieldAction::Clear => format!("{} → {}", v(&f.live), v(&f.config)),
    };
    if let Some(l) = last_applied_apart(f) {
        let _ = write!(s, "   (last-applied {})", crate::gocompat::json(l));
    }
    s
}

#[cfg(test)]
mod diff_tests {
    use super::{render_diff, render_diff_terminal};
    use crate::plan::{Plan, PlanOptions, plan_object};
    use serde_json::json;

    #[test]
    fn no_control_character_reaches_the_terminal_in_either_layout() {
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c\u{9b}", "namespace": "d"},
            "data": {"k\u{1b}[2J": "v\u{9b}1\u{7f}"}});
        let m = crate::manifest::Manifest::new(
            crate::objref::ObjectRef::from_object(&config).unwrap(),
            "v1".into(),
            config,
            crate::manifest::Source {
                file: "c.yaml".into(),
                line: 1,
            },
        );
        let plan = Plan {
            objects: vec![plan_object(&m, None, &PlanOptions::default())],
            prune_skipped: None,
        };
        for color in [false, true] {
            for out in [
                render_diff(&plan, color),
                render_diff_terminal(&plan, color, true),
            ] {
                // Only the ANSI colour codes kapply writes itself remain.
                let data = out.replace("\x1b[", "");
                assert!(
                    !data.chars().any(|c| c.is_control() && c != '\n'),
                    "{out:?}"
                );
                assert!(out.contains("\\u{9b}"), "{out:?}");
            }
        }
    }
}
