//! `kapply diff -o markdown`: the plan as a report for a pull request or a
//! CI log. A summary of counts first, then a table of the changed objects,
//! the repeated changes once each, then one collapsible `<details>` per
//! object with its field rows and hazards. Secrets masked, no time or
//! random part: the same plan gives the same bytes. Split into parts of at
//! most `max_bytes` that each stand alone (GitHub refuses a comment over
//! 65,536 characters), never in the middle of an object or a code block.

use super::fold::{RepeatedChange, folded_rows, repeated_changes};
use super::render::shown;
use super::{ObjectAction, ObjectPlan, Plan};
use crate::fieldpath::FieldPath;
use crate::merge::{Cause, FieldAction, FieldChange};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;

/// `--max-bytes` by default: under GitHub's 65,536-character comment limit
/// with room for what a job adds around it.
pub const DEFAULT_MAX_BYTES: usize = 65_000;
/// The smallest part accepted: the summary and one shortened object fit.
pub const MIN_MAX_BYTES: usize = 2_000;

/// Objects of one repeated change listed per `<details>`: a change carried
/// by thousands of objects is split into blocks that fit any part.
const OBJECTS_PER_BLOCK: usize = 100;

/// The first line of every part: invisible once rendered, it lets a CI job
/// find the comments it posted before (sticky comments) and split stdout.
pub const PART_MARK: &str = "<!-- kapply-diff part ";

/// Counts of the summary line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub create: usize,
    pub update: usize,
    pub prune: usize,
    pub unchanged: usize,
    pub errors: usize,
    /// Updates that revert a change made in the cluster.
    pub reverts_drift: usize,
    /// Objects to create, update or prune that carry a hazard.
    pub with_hazards: usize,
    /// Updates of the last-applied annotation alone (no `kubectl diff`
    /// difference: not counted a change by the exit code).
    pub annotation_only: usize,
}

/// Whether an object will be written or deleted.
fn changes(obj: &ObjectPlan) -> bool {
    matches!(
        obj.action,
        ObjectAction::Create | ObjectAction::Update | ObjectAction::Prune
    )
}

/// The hazards an object carries (its field rows').
pub fn hazard_count(obj: &ObjectPlan) -> usize {
    obj.fields.iter().map(|f| f.hazards.len()).sum()
}

impl Summary {
    pub fn of(objects: &[ObjectPlan]) -> Summary {
        let mut s = Summary::default();
        for o in objects {
            s.add(o);
        }
        s
    }

    /// Counts one more object.
    pub fn add(&mut self, o: &ObjectPlan) {
        match o.action {
            ObjectAction::Create => self.create += 1,
            ObjectAction::Update => self.update += 1,
            ObjectAction::Prune => self.prune += 1,
            ObjectAction::Unchanged => self.unchanged += 1,
            ObjectAction::Error => self.errors += 1,
        }
        if o.action == ObjectAction::Update && o.reverts_drift {
            self.reverts_drift += 1;
        }
        if o.action == ObjectAction::Update && o.annotation_only {
            self.annotation_only += 1;
        }
        if changes(o) && hazard_count(o) > 0 {
            self.with_hazards += 1;
        }
    }

    /// Both counts together (objects counted on several threads).
    pub fn merge(&mut self, o: &Summary) {
        self.create += o.create;
        self.update += o.update;
        self.prune += o.prune;
        self.unchanged += o.unchanged;
        self.errors += o.errors;
        self.reverts_drift += o.reverts_drift;
        self.with_hazards += o.with_hazards;
        self.annotation_only += o.annotation_only;
    }

    /// `kapply diff`'s exit code. By default kubectl's: 0 nothing would
    /// change, 1 something would, 2 an object could not be planned. With
    /// `detailed` (`--exit-code=detailed`), changes that revert drift give
    /// 3 and hazards 4, the highest that applies winning; an error still
    /// gives 2 whatever else, since a plan with a hole cannot be judged.
    pub fn exit_code(&self, detailed: bool) -> u8 {
        if self.errors > 0 {
            return 2;
        }
        // As `kubectl diff`, which leaves the annotation out of its patch.
        let changes = self.create + self.update - self.annotation_only + self.prune > 0;
        // A hazard counts even where the result is live's but for the
        // annotation (config elements sharing a merge key, all but one lost).
        if detailed && self.with_hazards > 0 {
            return 4;
        }
        if !changes {
            return 0;
        }
        if detailed && self.reverts_drift > 0 {
            3
        } else {
            1
        }
    }

    /// `**3 to create, 12 to update, 1 to prune** · 4 updates revert drift
    /// · 2 objects carry hazards · 20 unchanged (not listed)`.
    pub fn markdown(&self) -> String {
        let mut s = format!(
            "**{} to create, {} to update, {} to prune** · {} · {} · {} unchanged (not listed)",
            self.create,
            self.update,
            self.prune,
            count(
                self.reverts_drift,
                "update reverts drift",
                "updates revert drift"
            ),
            count(
                self.with_hazards,
                "object carries hazards ⚠",
                "objects carry hazards ⚠"
            ),
            self.unchanged,
        );
        if self.errors > 0 {
            let _ = write!(
                s,
                " · **{}**",
                count(
                    self.errors,
                    "object could not be planned",
                    "objects could not be planned"
                )
            );
        }
        s
    }
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// An object's mark and word, as `kapply diff` shows them.
fn mark(action: ObjectAction) -> (&'static str, &'static str) {
    match action {
        ObjectAction::Create => ("+", "create"),
        ObjectAction::Update => ("~", "update"),
        ObjectAction::Unchanged => ("=", "unchanged"),
        ObjectAction::Prune => ("-", "prune"),
        ObjectAction::Error => ("!", "error"),
    }
}

/// Text as a Markdown code span, whatever backticks it holds.
fn code(s: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    if longest == 0 {
        return format!("`{s}`");
    }
    let fence = "`".repeat(longest + 1);
    format!("{fence} {s} {fence}")
}

/// A code span inside a table cell: a `|` would end the cell.
fn code_cell(s: &str) -> String {
    code(&s.replace('|', "\\|"))
}

/// Text inside HTML (`<summary>`).
fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// Plain words (reasons, hazards, warnings) in Markdown: nothing read as
/// an HTML tag; quotes stay as they are, so the raw text reads too.
fn words(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;")
}

/// Plain words inside a table cell: a `|` would end the cell.
fn cell(s: &str) -> String {
    words(s).replace('|', "\\|")
}

/// A side as JSON, cut in the middle past `max` characters (summaries).
fn short_json(v: &Option<Value>, max: usize) -> String {
    let s = match v {
        None => return "(none)".into(),
        Some(v) => crate::gocompat::json(v),
    };
    let n = s.chars().count();
    if n <= max {
        return s;
    }
    let head: String = s.chars().take(max / 2).collect();
    let tail: String = s.chars().skip(n - max / 2).collect();
    format!("{head}…{tail}")
}

/// A value that reads as text over several lines: shown as a diff block.
fn multi_line(v: &Option<Value>) -> Option<&str> {
    match v {
        // A trailing newline alone (kubectl's last-applied annotation)
        // still reads as one line.
        Some(Value::String(s)) if s.trim_end_matches('\n').contains('\n') => Some(s),
        _ => None,
    }
}

fn is_multi_line(f: &FieldChange) -> bool {
    multi_line(&f.live).is_some() || multi_line(&f.config).is_some()
}

/// What apply makes of a field: its new value, or `(removed)`.
fn result_side(f: &FieldChange) -> &Option<Value> {
    &f.config
}

/// `live → result` for a table cell.
fn values_cell(f: &FieldChange) -> String {
    let v = |x: &Option<Value>| match x {
        None => "(none)".to_string(),
        Some(v) => code_cell(&crate::gocompat::json(v)),
    };
    let result = match result_side(f) {
        None if f.action == FieldAction::Clear => "(removed)".to_string(),
        r => v(r),
    };
    format!("{} → {result}", v(&f.live))
}

/// A fenced `diff` block of a multi-line value, live against the result.
/// The fence is longer than any backtick run in it, so nothing inside
/// closes it early.
fn diff_block(f: &FieldChange) -> String {
    let text = |x: &Option<Value>| match x {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => crate::gocompat::json(v),
    };
    let (old, new) = (text(&f.live), text(result_side(f)));
    let body = similar::TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(3)
        .missing_newline_hint(false)
        .to_string();
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    let mut out = format!("{}:\n\n{fence}diff\n{body}", code(f.path.as_str()));
    if !out.ends_with('\n') {
        out.push('\n');
    }
    let _ = writeln!(out, "{fence}\n");
    out
}

/// The cause in words, with the writer and time where managedFields name
/// them and the words do not already.
fn cause_words(f: &FieldChange) -> String {
    let mut s = f.explain(crate::merge::Form::Text);
    let missing = |x: &Option<String>| x.as_ref().filter(|x| !s.contains(x.as_str())).cloned();
    match (missing(&f.owner), missing(&f.changed_at)) {
        (Some(o), Some(t)) => s = format!("{s} (written by {o} at {t})"),
        (Some(o), None) => s = format!("{s} (written by {o})"),
        (None, Some(t)) => s = format!("{s} (written at {t})"),
        (None, None) => {}
    }
    s
}

/// Counts of an object's changed rows by cause: `1 drift, 2 intended`.
fn cause_counts(obj: &ObjectPlan) -> String {
    let order = [
        Cause::Drift,
        Cause::Intended,
        Cause::New,
        Cause::Removed,
        Cause::Unmanaged,
        Cause::OtherWriter,
        Cause::ServerDefault,
    ];
    order
        .iter()
        .filter_map(|c| {
            let n = obj
                .fields
                .iter()
                .filter(|f| f.action != FieldAction::Keep && f.cause == *c)
                .count();
            (n > 0).then(|| format!("{n} {c}"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The object table's cause column.
fn cause_summary(obj: &ObjectPlan, folded: Option<&HashMap<FieldPath, usize>>) -> String {
    let mut parts = Vec::new();
    match obj.action {
        ObjectAction::Create => parts.push("new object".to_string()),
        ObjectAction::Prune => parts.push(
            obj.prune_reason
                .clone()
                .unwrap_or_else(|| "not in the manifests".into()),
        ),
        ObjectAction::Error => parts.push("could not be planned".into()),
        _ => {
            let c = cause_counts(obj);
            if !c.is_empty() {
                parts.push(c);
            }
        }
    }
    let h = hazard_count(obj);
    if h > 0 {
        parts.push(format!("⚠ {}", count(h, "hazard", "hazards")));
    }
    if !obj.warnings.is_empty() {
        parts.push(count(obj.warnings.len(), "warning", "warnings"));
    }
    if let Some(f) = folded {
        let mut ns: Vec<usize> = f.values().copied().collect();
        ns.sort_unstable();
        let ns: Vec<String> = ns.iter().map(|n| format!("#{n}")).collect();
        parts.push(format!("repeated {}", ns.join(" ")));
    }
    parts.join("; ")
}

/// The object's title: `Deployment demo/web`.
fn title(obj: &ObjectPlan) -> String {
    obj.id().to_string()
}

fn table_row(obj: &ObjectPlan, folded: Option<&HashMap<FieldPath, usize>>) -> String {
    let (sym, word) = mark(obj.action);
    let name = match &obj.namespace {
        Some(ns) if !ns.is_empty() => format!("{ns}/{}", obj.name),
        _ => obj.name.clone(),
    };
    let action = if obj.reverts_drift {
        format!("{word} · reverts drift")
    } else {
        word.to_string()
    };
    let source = obj.source.as_deref().map(code_cell).unwrap_or_default();
    format!(
        "| {sym} | {} | {} | {action} | {} | {source} |\n",
        cell(&obj.kind),
        code_cell(&name),
        cell(&cause_summary(obj, folded)),
    )
}

/// Whether an object gets a `<details>` block: something about it is not
/// said by the table and the repeated changes.
fn has_details(obj: &ObjectPlan, folded: Option<&HashMap<FieldPath, usize>>) -> bool {
    if obj.error.is_some() || !obj.warnings.is_empty() {
        return true;
    }
    obj.fields
        .iter()
        .any(|f| f.action != FieldAction::Keep && folded.is_none_or(|m| !m.contains_key(&f.path)))
}

/// One object's `<details>`, with at most `limit` of its changed rows
/// (all when `None`); rows left out are counted in a note.
fn details(
    obj: &ObjectPlan,
    folded: Option<&HashMap<FieldPath, usize>>,
    limit: Option<usize>,
) -> String {
    let (sym, word) = mark(obj.action);
    let mut out = format!(
        "<details><summary>{sym} <code>{}</code> {word}",
        html(&title(obj))
    );
    if obj.reverts_drift {
        out.push_str(" · reverts drift");
    }
    let h = hazard_count(obj);
    if h > 0 {
        let _ = write!(out, " · ⚠ {}", count(h, "hazard", "hazards"));
    }
    out.push_str("</summary>\n\n");
    if let Some(src) = &obj.source {
        let _ = writeln!(out, "Source: {}\n", code(src));
    }
    if let Some(e) = &obj.error {
        let _ = writeln!(out, "**Error:** {}\n", cell(e));
    }
    let rows: Vec<&FieldChange> = obj
        .fields
        .iter()
        .filter(|f| f.action != FieldAction::Keep)
        .collect();
    let shown_rows = limit.map_or(rows.len(), |l| l.min(rows.len()));
    if shown_rows > 0 {
        out.push_str("| Field | Live → result | Cause |\n|---|---|---|\n");
    }
    let mut blocks = String::new();
    let mut hazards = String::new();
    for f in &rows[..shown_rows] {
        if let Some(n) = folded.and_then(|m| m.get(&f.path)) {
            let _ = writeln!(
                out,
                "| {} | repeated change #{n} (under Repeated changes) | |",
                code_cell(f.path.as_str())
            );
            continue;
        }
        let values = if is_multi_line(f) {
            blocks.push_str(&diff_block(f));
            "multi-line, below".to_string()
        } else {
            values_cell(f)
        };
        let _ = writeln!(
            out,
            "| {} | {values} | {} |",
            code_cell(f.path.as_str()),
            cell(&cause_words(f)),
        );
        for hz in &f.hazards {
            let kind = serde_json::to_value(hz.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let _ = writeln!(
                hazards,
                "- ⚠ {} ({kind}): {}",
                code(f.path.as_str()),
                words(&hz.message)
            );
        }
    }
    if shown_rows > 0 {
        out.push('\n');
    }
    out.push_str(&blocks);
    if !hazards.is_empty() {
        let _ = writeln!(out, "**Hazards**\n\n{hazards}");
    }
    if !obj.warnings.is_empty() {
        out.push_str("**Warnings**\n\n");
        for w in &obj.warnings {
            let _ = writeln!(out, "- {}", words(w));
        }
        out.push('\n');
    }
    let left = rows.len() - shown_rows;
    if left > 0 {
        let with_hazards = rows[shown_rows..]
            .iter()
            .filter(|f| !f.hazards.is_empty())
            .count();
        let _ = write!(
            out,
            "_{} not shown: this object is larger than a report part (`--max-bytes`)",
            count(left, "more changed field", "more changed fields")
        );
        if with_hazards > 0 {
            let _ = write!(out, "; {with_hazards} of them with hazards ⚠");
        }
        out.push_str("; `kapply diff` lists them all._\n\n");
    }
    let kept = obj.fields.len() - rows.len();
    if kept > 0 && obj.action != ObjectAction::Unchanged {
        let _ = writeln!(
            out,
            "{} (server defaults, other writers) not listed.\n",
            count(kept, "kept field", "kept fields")
        );
    }
    out.push_str("</details>\n\n");
    out
}

/// The blocks of one repeated change: its summary and cause, then the
/// objects carrying it, [`OBJECTS_PER_BLOCK`] a block.
fn repeated_blocks(n: usize, c: &RepeatedChange, objects: &[Cow<'_, ObjectPlan>]) -> Vec<String> {
    let r = &c.row;
    let result = match (&r.config, r.action) {
        (None, FieldAction::Clear) => "(removed)".to_string(),
        (v, _) => short_json(v, 120),
    };
    let carried = c.carried_by(objects);
    let chunks: Vec<&[usize]> = c.objects.chunks(OBJECTS_PER_BLOCK).collect();
    let total = chunks.len();
    chunks
        .iter()
        .enumerate()
        .map(|(k, chunk)| {
            let mut out = format!(
                "<details><summary>#{n} <code>{}</code> <code>{}</code> → <code>{}</code> in {}",
                html(r.path.as_str()),
                html(&short_json(&r.live, 120)),
                html(&result),
                html(&carried),
            );
            if !r.hazards.is_empty() {
                out.push_str(" · ⚠");
            }
            if total > 1 {
                let first = k * OBJECTS_PER_BLOCK + 1;
                let _ = write!(
                    out,
                    " (objects {first}–{} of {})",
                    first + chunk.len() - 1,
                    c.objects.len()
                );
            }
            out.push_str("</summary>\n\n");
            if k == 0 {
                let _ = writeln!(out, "{}\n", words(&c.cause_text()));
                if is_multi_line(r) {
                    out.push_str(&diff_block(r));
                }
                for hz in &r.hazards {
                    let _ = writeln!(out, "- ⚠ {}", words(&hz.message));
                }
                if !r.hazards.is_empty() {
                    out.push('\n');
                }
            }
            for &i in *chunk {
                let o = &objects[i];
                let _ = write!(out, "- {}", code(&title(o)));
                if let Some(src) = &o.source {
                    let _ = write!(out, " {}", code(src));
                }
                out.push('\n');
            }
            out.push_str("\n</details>\n\n");
            out
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    Objects,
    Repeated,
    Changes,
}

impl Section {
    fn heading(self) -> &'static str {
        match self {
            Section::Objects => {
                "### Objects\n\n| | Kind | Object | Action | Cause | Source |\n|---|---|---|---|---|---|\n"
            }
            Section::Repeated => "### Repeated changes\n\n",
            Section::Changes => "### Changes\n\n",
        }
    }
}

/// What a part holds, in order; an object's details are rendered when
/// packed, shortened when larger than a part.
enum Unit {
    Text(Section, String),
    Details(usize),
}

/// The report, split into parts of at most `max_bytes` bytes (at least
/// [`MIN_MAX_BYTES`]), each standing alone: the summary repeated, `part i
/// of n`, a section's heading (and the table's header) again where a part
/// starts in it. One part when everything fits.
pub fn markdown(plan: &Plan, max_bytes: usize) -> Vec<String> {
    let max_bytes = max_bytes.max(MIN_MAX_BYTES);
    let objects: Vec<Cow<'_, ObjectPlan>> = plan.objects.iter().map(shown).collect();
    let summary = Summary::of(&plan.objects);
    let changes = repeated_changes(&objects);
    let folded = folded_rows(&changes);
    let mut units = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        if changes_or_error(o) {
            units.push(Unit::Text(Section::Objects, table_row(o, folded.get(&i))));
        }
    }
    for (n, c) in changes.iter().enumerate() {
        for b in repeated_blocks(n + 1, c, &objects) {
            units.push(Unit::Text(Section::Repeated, b));
        }
    }
    for (i, o) in objects.iter().enumerate() {
        if changes_or_error(o) && has_details(o, folded.get(&i)) {
            units.push(Unit::Details(i));
        }
    }
    let mut intro = String::new();
    let _ = writeln!(intro, "{}\n", summary.markdown());
    if let Some(why) = &plan.prune_skipped {
        let _ = writeln!(intro, "**{}**\n", words(&why.to_string()));
    }
    if units.is_empty() {
        intro.push_str("No changes.\n");
    }
    let intro = crate::text::escaped(intro, crate::text::escape_controls);
    // The header's size depends on the digits of `i` and `n`: reserve the
    // most it can take (no more parts than units).
    let most = units.len().max(1);
    let budget = max_bytes.saturating_sub(header(most, most).len() + intro.len());
    let mut parts: Vec<String> = vec![String::new()];
    let mut current: Option<Section> = None;
    for u in units {
        let (section, text) = match u {
            Unit::Text(s, t) => (s, t),
            Unit::Details(i) => {
                let o = &objects[i];
                let f = folded.get(&i);
                let room = budget.saturating_sub(Section::Changes.heading().len() + 1);
                let mut text = details(o, f, None);
                if text.len() > room {
                    text = shortened(o, f, room);
                }
                (Section::Changes, text)
            }
        };
        // Escaped before it is measured: an escape makes text longer.
        let text = crate::text::escaped(text, crate::text::escape_controls);
        let part = parts.last_mut().expect("one part at least");
        let lead = |current: Option<Section>, fresh: bool| {
            if current == Some(section) && !fresh {
                String::new()
            } else {
                // A table needs a blank line before what follows it.
                let sep = if current == Some(Section::Objects) && !fresh {
                    "\n"
                } else {
                    ""
                };
                format!("{sep}{}", section.heading())
            }
        };
        let l = lead(current, false);
        if !part.is_empty() && part.len() + l.len() + text.len() > budget {
            parts.push(String::new());
            current = None;
        }
        let part = parts.last_mut().expect("one part at least");
        let fresh = part.is_empty();
        part.push_str(&lead(current, fresh));
        part.push_str(&text);
        current = Some(section);
    }
    let n = parts.len();
    parts
        .into_iter()
        .enumerate()
        .map(|(k, body)| format!("{}{intro}{}\n", header(k + 1, n), body.trim_end()))
        .collect()
}

fn changes_or_error(o: &ObjectPlan) -> bool {
    changes(o) || o.action == ObjectAction::Error
}

/// A part's first lines.
fn header(i: usize, n: usize) -> String {
    let title = if n == 1 {
        "## kapply diff".to_string()
    } else {
        format!("## kapply diff: part {i} of {n}")
    };
    format!("{PART_MARK}{i} of {n} -->\n{title}\n\n")
}

/// An object's details with as many rows as fit in `room` bytes (a binary
/// search on the row count; none fit: the head and the note alone).
fn shortened(obj: &ObjectPlan, folded: Option<&HashMap<FieldPath, usize>>, room: usize) -> String {
    let rows = obj
        .fields
        .iter()
        .filter(|f| f.action != FieldAction::Keep)
        .count();
    let (mut lo, mut hi) = (0, rows);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if details(obj, folded, Some(mid)).len() <= room {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    details(obj, folded, Some(lo))
}

/// Every part on stdout, one after the other: each starts with its
/// [`PART_MARK`] line, so a job can split them again.
pub fn markdown_stdout(parts: &[String]) -> String {
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_cannot_break_out_of_cells_code_or_html() {
        assert_eq!(code("a`b"), "`` a`b ``");
        assert_eq!(code("plain"), "`plain`");
        assert_eq!(code_cell("a|b"), "`a\\|b`");
        assert_eq!(cell("<b>x|y</b> & z"), "&lt;b>x\\|y&lt;/b> &amp; z");
        assert_eq!(html("<\"&>"), "&lt;&quot;&amp;&gt;");
        let f = FieldChange {
            path: "data.script".into(),
            config: Some(Value::String("a\n````\nb\n".into())),
            live: Some(Value::String("a\nb\n".into())),
            last_applied: None,
            action: FieldAction::Set,
            reason: crate::merge::Reason::Differs,
            cause: Cause::Intended,
            owner: None,
            changed_at: None,
            hazards: Vec::new(),
        };
        let block = diff_block(&f);
        // The fence is longer than the backtick run inside it.
        assert!(block.contains("\n`````diff\n"), "{block}");
        assert!(block.ends_with("\n`````\n\n"), "{block}");
        assert!(block.contains("\n+````\n"), "{block}");
    }

    #[test]
    fn the_exit_code_table() {
        let s = |create, reverts_drift, with_hazards, errors| Summary {
            create,
            update: reverts_drift,
            reverts_drift,
            with_hazards,
            errors,
            ..Summary::default()
        };
        // (summary, default, detailed)
        for (sum, default, detailed) in [
            (s(0, 0, 0, 0), 0, 0),
            (s(1, 0, 0, 0), 1, 1),
            (s(0, 1, 0, 0), 1, 3),
            (s(1, 0, 1, 0), 1, 4),
            (s(0, 1, 1, 0), 1, 4),
            (s(1, 1, 1, 1), 2, 2),
        ] {
            assert_eq!(sum.exit_code(false), default, "{sum:?}");
            assert_eq!(sum.exit_code(true), detailed, "{sum:?}");
        }
    }
}
