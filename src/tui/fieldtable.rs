//! The field table's layout, with no styling: which rows show and in what
//! order (paths as a tree: a common prefix once, its children indented),
//! the column widths (changed rows' values first) and the lines each row
//! takes (a long value wraps, or is cut in the middle, never where it
//! differs). The renderer and the cursor's scrolling share it.

use super::theme::esc;
pub use super::theme::is_drift;
use crate::fieldpath::FieldPath;
use crate::mask;
use crate::merge::{FieldAction, FieldChange};
use crate::plan::ObjectPlan;
use serde_json::Value;
use unicode_width::UnicodeWidthChar;

/// Indent per tree level.
const INDENT: usize = 2;
/// The include mark and a space before the path; a cause mark (drift,
/// hazard) takes one more column when some row has one.
const MARK_W: usize = 2;
/// The most lines a changed row's value may wrap onto.
const MAX_VALUE_LINES: usize = 3;
/// The action column ("clear").
const ACT_W: usize = 5;
/// The fewest columns a path's label is cut to when its pane has room.
const MIN_LABEL: usize = 16;
/// The most lines a label or annotation key wraps onto (it is never cut
/// short of that: the key is what the row is about).
const MAX_KEY_LINES: usize = 5;

/// Whether a row's label is a map key (`["app.kubernetes.io/name"]`): a
/// label or annotation key, read whole or not at all.
fn is_key(label: &str) -> bool {
    label.starts_with("[\"")
}

/// One line of the table body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TLine {
    /// A common path prefix, its rows indented under it.
    Header { depth: usize, text: String },
    /// The kept fields follow (with how many there are).
    Kept(usize),
    /// Line `part` of selectable row `row`.
    Row { row: usize, part: usize },
}

/// A cell's text, split into the lines it takes, each char flagged when it
/// differs from the value it is compared with.
pub type Cell = Vec<Vec<(char, bool)>>;

pub struct RowLayout {
    /// Index into `ObjectPlan::fields`.
    pub field: usize,
    pub depth: usize,
    /// The path's last step (or steps), cut to fit the path column; a
    /// map key too long for it wraps onto more lines instead.
    pub label: Vec<String>,
    /// last-applied, live, config.
    pub values: [Cell; 3],
    pub height: usize,
}

pub struct Layout {
    pub lines: Vec<TLine>,
    pub rows: Vec<RowLayout>,
    /// The first line of each row.
    pub row_line: Vec<usize>,
    /// Widths: path (indent and label), the three values, action, reason
    /// (0: not shown; the detail box says it).
    pub widths: [usize; 6],
    pub kept_hidden: usize,
    /// Columns before the path: the include mark, the cause mark when any
    /// row has one, a space.
    pub mark_w: usize,
}

fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else if b.starts_with('[') {
        format!("{a}{b}")
    } else {
        format!("{a}.{b}")
    }
}

#[derive(Default)]
struct Node {
    label: String,
    field: Option<usize>,
    children: Vec<Node>,
}

impl Node {
    fn insert(&mut self, steps: &[&str], field: usize) {
        let Some((first, rest)) = steps.split_first() else {
            // Two rows with one path: the second goes beside the first.
            if self.field.is_some() {
                self.children.push(Node {
                    label: String::new(),
                    field: Some(field),
                    children: Vec::new(),
                });
            } else {
                self.field = Some(field);
            }
            return;
        };
        let i = match self.children.iter().position(|c| c.label == *first) {
            Some(i) => i,
            None => {
                self.children.push(Node {
                    label: first.to_string(),
                    ..Node::default()
                });
                self.children.len() - 1
            }
        };
        self.children[i].insert(rest, field);
    }
}

/// (depth, label, Some(field)) for rows, None for headers, in tree order.
fn emit(node: &Node, depth: usize, prefix: &str, out: &mut Vec<(usize, String, Option<usize>)>) {
    let label = join(prefix, &esc(&node.label));
    if node.children.is_empty() {
        out.push((depth, label, node.field));
        return;
    }
    // A chain of single steps is one header: `template.spec.containers[name=nginx]`.
    if node.field.is_none() && node.children.len() == 1 && !node.children[0].children.is_empty() {
        emit(&node.children[0], depth, &label, out);
        return;
    }
    out.push((depth, label, node.field));
    for c in &node.children {
        emit(c, depth + 1, "", out);
    }
}

fn tree(o: &ObjectPlan, idx: &[usize]) -> Vec<(usize, String, Option<usize>)> {
    let mut root = Node::default();
    for &i in idx {
        root.insert(&o.fields[i].path.tree_steps(), i);
    }
    let mut out = Vec::new();
    for c in &root.children {
        emit(c, 0, "", &mut out);
    }
    if let Some(f) = root.field {
        out.push((0, esc(o.fields[f].path.as_str()), Some(f)));
    }
    out
}

/// The rows apply sends (set, clear) and, when shown, the kept ones, as
/// tree lines (depth, label, field); the order rows are selected in.
fn sections(o: &ObjectPlan, show_kept: bool) -> (Vec<(usize, String, Option<usize>)>, usize) {
    let (changes, kept): (Vec<usize>, Vec<usize>) =
        (0..o.fields.len()).partition(|&i| o.fields[i].action != FieldAction::Keep);
    let mut out = tree(o, &changes);
    if show_kept && !kept.is_empty() {
        out.push((usize::MAX, String::new(), None));
        out.extend(tree(o, &kept));
    }
    (out, kept.len())
}

/// The field rows in the order the table shows them.
pub fn ordered(o: &ObjectPlan, show_kept: bool) -> Vec<&FieldChange> {
    sections(o, show_kept)
        .0
        .into_iter()
        .filter(|(d, _, _)| *d != usize::MAX)
        .filter_map(|(_, _, f)| f.map(|i| &o.fields[i]))
        .collect()
}

/// A value in a table cell: strings bare, `—` for no value, Secret data
/// masked (by the one masker, [`crate::mask`]), control characters escaped.
/// Lists, maps and multi-line strings as a summary (the box under the table
/// shows them whole, as YAML or text, with a line diff): see [`summary`].
pub fn cell_value(o: &ObjectPlan, path: &FieldPath, v: &Option<Value>) -> String {
    cell_value_against(o, path, v, &None)
}

/// [`cell_value`], naming what differs from `other` in a summary.
pub fn cell_value_against(
    o: &ObjectPlan,
    path: &FieldPath,
    v: &Option<Value>,
    other: &Option<Value>,
) -> String {
    match v {
        None => "—".to_string(),
        Some(_) if mask::is_secret_field(&o.kind, path) => mask::MASK.to_string(),
        Some(v) if is_structured(v) => esc(&summary(v, other.as_ref())),
        Some(Value::String(s)) => esc(s),
        Some(v) => esc(&v.to_string()),
    }
}

use crate::plan::block::is_structured;

/// `[3 items]`, `[3 items, name=web changed]`, `{2 keys}`, `{4 keys, b
/// changed}`, `.:53 {… (12 lines)`: a structured value in a few columns,
/// naming the one element or key that differs from `other` where only one
/// does.
pub fn summary(v: &Value, other: Option<&Value>) -> String {
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {many}")
        }
    };
    match v {
        Value::Array(a) => {
            let mut out = format!("[{}", plural(a.len(), "item", "items"));
            if let Some(Value::Array(b)) = other {
                let changed: Vec<usize> =
                    (0..a.len()).filter(|&i| b.get(i) != Some(&a[i])).collect();
                if let ([i], true) = (changed.as_slice(), a.len() == b.len()) {
                    // A keyed element by its name, else by its place.
                    let name = a[*i]
                        .get("name")
                        .and_then(Value::as_str)
                        .map_or_else(|| format!("[{i}]"), |n| format!("name={n}"));
                    out.push_str(&format!(", {name} changed"));
                }
            }
            out.push(']');
            out
        }
        Value::Object(m) => {
            let mut out = format!("{{{}", plural(m.len(), "key", "keys"));
            if let Some(Value::Object(b)) = other {
                let changed: Vec<&String> = m
                    .iter()
                    .filter(|(k, v)| b.get(*k) != Some(v))
                    .map(|(k, _)| k)
                    .collect();
                if let ([k], true) = (changed.as_slice(), m.len() == b.len()) {
                    out.push_str(&format!(", {k} changed"));
                }
            }
            out.push('}');
            out
        }
        Value::String(s) => {
            let n = s.trim_end_matches('\n').lines().count();
            let first = s.lines().next().unwrap_or_default();
            format!("{first}… ({n} lines)")
        }
        v => v.to_string(),
    }
}

/// A masked Secret value apply sets: `changed` when it differs from the
/// live one, `unchanged` when not (compared, never shown), so a row says
/// more than three masks. `None` for any other row.
pub fn secret_change(o: &ObjectPlan, f: &FieldChange) -> Option<&'static str> {
    if f.action != FieldAction::Set
        || f.config.is_none()
        || !mask::is_secret_field(&o.kind, &f.path)
    {
        return None;
    }
    Some(if f.config == f.live {
        "unchanged"
    } else {
        "changed"
    })
}

/// Each char of `a` flagged when it is not in `b` (a char-level diff).
fn differs(a: &str, b: &str) -> Vec<bool> {
    let mut out = Vec::with_capacity(a.chars().count());
    let d = similar::TextDiff::from_chars(a, b);
    for c in d.iter_all_changes() {
        match c.tag() {
            similar::ChangeTag::Equal => out.extend(c.value().chars().map(|_| false)),
            similar::ChangeTag::Delete => out.extend(c.value().chars().map(|_| true)),
            similar::ChangeTag::Insert => {}
        }
    }
    out
}

fn width(s: &str) -> usize {
    s.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// Cut `s` to `w` columns in the middle: `minRe…conds`.
pub fn elide_middle(s: &str, w: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= w {
        return s.to_string();
    }
    if w == 0 {
        return String::new();
    }
    let tail = (w - 1) / 2;
    let head = w - 1 - tail;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}

/// Cut a path label to `w` columns keeping its last step (the field
/// itself) whole where it fits: `template…image`; else in the middle.
pub fn elide_path(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        return s.to_string();
    }
    let leaf = match s.rfind(['.', '[']) {
        Some(i) if i > 0 => &s[i..],
        _ => return elide_middle(s, w),
    };
    let leaf_n = leaf.chars().count();
    // At least two chars of the start, so the cut shows where it is from.
    if leaf_n + 3 > w {
        return elide_middle(s, w);
    }
    let mut out: String = s.chars().take(w - 1 - leaf_n).collect();
    out.push('…');
    out.push_str(leaf);
    out
}

/// At most `budget` chars of `cs`: whole when it fits, else with `…`
/// where cut, keeping the span that differs (and what surrounds it).
fn elide_keeping_diff(cs: &[(char, bool)], budget: usize) -> Vec<(char, bool)> {
    let n = cs.len();
    if n <= budget {
        return cs.to_vec();
    }
    let gap = ('…', false);
    if budget < 3 {
        return cs[..budget].to_vec();
    }
    let first = cs.iter().position(|c| c.1);
    let last = cs.iter().rposition(|c| c.1);
    let (Some(d0), Some(d1)) = (first, last) else {
        let s: String = cs.iter().map(|c| c.0).collect();
        return elide_middle(&s, budget)
            .chars()
            .map(|c| (c, false))
            .collect();
    };
    let d1 = d1 + 1;
    if d1 - d0 + 2 > budget {
        // The difference alone is too long: its ends, cut in its middle.
        let keep = budget - 1;
        let head = keep - keep / 2;
        let mut out = cs[d0..d0 + head].to_vec();
        out.push(gap);
        out.extend_from_slice(&cs[d1 - keep / 2..d1]);
        return out;
    }
    // Grow a window around the difference until it fills the budget
    // (less one column for each side that is cut).
    let (mut a, mut b) = (d0, d1);
    loop {
        let used = (b - a) + usize::from(a > 0) + usize::from(b < n);
        if used >= budget {
            break;
        }
        let room = budget - used;
        let grew = if a > 0 && (b == n || (a > n - b) || room == 1 && a == 1) {
            a -= 1;
            true
        } else if b < n {
            b += 1;
            true
        } else if a > 0 {
            a -= 1;
            true
        } else {
            false
        };
        if !grew {
            break;
        }
    }
    // The window may overshoot by the ellipsis it no longer needs.
    while (b - a) + usize::from(a > 0) + usize::from(b < n) > budget {
        if b > d1 {
            b -= 1;
        } else {
            a += 1;
        }
    }
    let mut out = Vec::with_capacity(budget);
    if a > 0 {
        out.push(gap);
    }
    out.extend_from_slice(&cs[a..b]);
    if b < n {
        out.push(gap);
    }
    out
}

/// A value laid out in `w` columns on at most `max_lines` lines.
fn cell(text: &str, diff: Option<&str>, w: usize, max_lines: usize) -> Cell {
    let flags = match diff {
        Some(other) if other != text => differs(text, other),
        _ => vec![false; text.chars().count()],
    };
    let cs: Vec<(char, bool)> = text.chars().zip(flags).collect();
    let w = w.max(1);
    let kept = elide_keeping_diff(&cs, w * max_lines);
    wrap(&kept, w)
}

/// Break `cs` into lines of `w` columns, after a separator where one is
/// near the end of a line (`nginx:` / `1.14.2`, not `nginx:1.1` / `4.2`).
fn wrap(cs: &[(char, bool)], w: usize) -> Cell {
    let cw = |c: &(char, bool)| c.0.width().unwrap_or(0);
    let mut lines: Cell = Vec::new();
    let mut rest = cs;
    loop {
        let mut col = 0;
        let mut fit = 0;
        for c in rest {
            if col + cw(c) > w && fit > 0 {
                break;
            }
            col += cw(c);
            fit += 1;
        }
        if fit >= rest.len() {
            lines.push(rest.to_vec());
            return lines;
        }
        let after = |set: &[char], min: usize| {
            (min..fit)
                .rev()
                .find(|&i| set.contains(&rest[i].0))
                .map(|i| i + 1)
        };
        let cut = after(&[':', '/', '=', ' ', ',', '@'], fit / 3)
            .or_else(|| after(&['.', '-', '_'], fit / 2))
            .unwrap_or(fit);
        lines.push(rest[..cut].to_vec());
        rest = &rest[cut..];
    }
}

/// Largest of `f` over `rows`, at least `min`.
fn widest<'a>(rows: impl Iterator<Item = &'a [String; 3]>, i: usize, min: usize) -> usize {
    rows.map(|r| width(&r[i])).max().unwrap_or(0).max(min)
}

/// Share `room` among columns wanting `want`, smallest wants satisfied
/// first, each at least `min`.
fn share(want: [usize; 3], room: usize, min: usize) -> [usize; 3] {
    let mut out = [min; 3];
    let mut left = room.saturating_sub(3 * min);
    let mut order = [0, 1, 2];
    order.sort_by_key(|&i| want[i]);
    for (k, &i) in order.iter().enumerate() {
        let fair = left / (3 - k);
        let add = want[i].saturating_sub(min).min(fair);
        out[i] += add;
        left -= add;
    }
    out
}

/// The table for `o` at `total` columns.
pub fn layout(o: &ObjectPlan, show_kept: bool, total: usize) -> Layout {
    let (entries, kept_count) = sections(o, show_kept);
    let kept_hidden = if show_kept { 0 } else { kept_count };
    // Row entries: (depth, label, field).
    let rows_in: Vec<(usize, &String, usize)> = entries
        .iter()
        .filter(|(d, _, _)| *d != usize::MAX)
        .filter_map(|(d, l, f)| f.map(|f| (*d, l, f)))
        .collect();
    let texts = cell_texts(o, &rows_in);
    let (widths, mark_w) = column_widths(o, &rows_in, &texts, total);
    let rows: Vec<RowLayout> = rows_in
        .iter()
        .zip(&texts)
        .map(|(&(depth, label, i), t)| row_layout(o, depth, label, i, t, &widths))
        .collect();
    let (lines, row_line) = table_lines(&entries, &rows, kept_count);
    Layout {
        lines,
        rows,
        row_line,
        widths,
        kept_hidden,
        mark_w,
    }
}

/// The three value cells' texts of each row: last-applied, live, config
/// (a secret's config shows only whether it changes).
fn cell_texts(o: &ObjectPlan, rows_in: &[(usize, &String, usize)]) -> Vec<[String; 3]> {
    rows_in
        .iter()
        .map(|&(_, _, i)| {
            let f = &o.fields[i];
            let config = match secret_change(o, f) {
                Some(word) => word.to_string(),
                None => cell_value_against(o, &f.path, &f.config, &f.live),
            };
            [
                cell_value_against(o, &f.path, &f.last_applied, &f.config),
                cell_value_against(o, &f.path, &f.live, &f.config),
                config,
            ]
        })
        .collect()
}

/// The column widths (path, three values, action, reason) and the mark
/// column's width for a pane `total` columns wide.
fn column_widths(
    o: &ObjectPlan,
    rows_in: &[(usize, &String, usize)],
    texts: &[[String; 3]],
    total: usize,
) -> ([usize; 6], usize) {
    let changed = |k: usize| o.fields[rows_in[k].2].action != FieldAction::Keep;
    let path_nat = rows_in
        .iter()
        .map(|(d, l, _)| d * INDENT + width(l))
        .max()
        .unwrap_or(4)
        .max(4);
    let reason_nat = rows_in
        .iter()
        .map(|&(_, _, i)| width(&esc(&super::theme::reason(&o.fields[i]))))
        .max()
        .unwrap_or(0);
    let mins = [4, 4, 4];
    let vc: [usize; 3] = std::array::from_fn(|i| {
        widest(
            texts
                .iter()
                .enumerate()
                .filter(|(k, _)| changed(*k))
                .map(|(_, t)| t),
            i,
            mins[i],
        )
    });
    // What the columns take when there is room: every row's value, and
    // the column titles whole.
    let titles = [12, 4, 6];
    let vk: [usize; 3] = std::array::from_fn(|i| widest(texts.iter(), i, titles[i]));
    let marked = rows_in
        .iter()
        .any(|&(_, _, i)| is_drift(&o.fields[i]) || !o.fields[i].hazards.is_empty());
    let mark_w = MARK_W + usize::from(marked);
    let avail = total.saturating_sub(mark_w);
    let floor = label_floor(rows_in, avail);
    let mut path = path_nat.min((avail * 45 / 100).max(12)).max(floor);
    let need = |path: usize, vals: usize| path + 3 + vals;
    let vals_c: usize = vc.iter().sum();
    let reason_want = reason_nat.min(14);
    // The action column always shows (what apply does is the point of the
    // table): the path, then the values, give way to it; only a pane too
    // narrow for the shortest path and values goes without.
    let (act, reason_on) = if need(path, vals_c) + 1 + ACT_W + 1 + reason_want <= avail {
        (ACT_W, reason_nat > 0)
    } else if need(floor.max(path_nat.min(10)), 3 * 4) + 1 + ACT_W <= avail {
        (ACT_W, false)
    } else {
        (0, false)
    };
    let extra = |act: usize| if act > 0 { 1 + act } else { 0 };
    let mut vals = vc;
    if need(path, vals_c) + extra(act) > avail {
        // The values wrap first (whole, on two lines), then the path gives
        // way, down to 10 columns: a wrapped value still reads whole, a cut
        // path does not.
        let short = floor.max(path_nat.min(10));
        let wrapped: usize = vc.iter().map(|w| w.div_ceil(2).max(4)).sum();
        path = avail
            .saturating_sub(3 + wrapped + extra(act))
            .clamp(short.min(path), path);
        let room = avail.saturating_sub(path + 3 + extra(act));
        vals = share(vc, room, 4);
    } else {
        // Room left: the kept rows' values, then the reason.
        let mut left = avail - need(path, vals_c) - extra(act);
        if reason_on {
            left = left.saturating_sub(1 + reason_want);
        }
        for i in 0..3 {
            let add = vk[i].saturating_sub(vals[i]).min(left);
            vals[i] += add;
            left -= add;
        }
    }
    let used = path + 3 + vals.iter().sum::<usize>() + extra(act);
    let reason = if reason_on {
        avail.saturating_sub(used + 1)
    } else {
        0
    };
    let widths = [path, vals[0], vals[1], vals[2], act, reason];
    (widths, mark_w)
}

/// The narrowest path column the rows allow in `avail` columns.
/// No label is cut below MIN_LABEL columns (a label key or field name
/// must read): the values wrap instead. A map key (a label or
/// annotation key) keeps its whole width up to the share a path gets
/// when there is room, and wraps beyond it. Only a pane too narrow for
/// that and four columns per value cuts further.
fn label_floor(rows_in: &[(usize, &String, usize)], avail: usize) -> usize {
    let key_room = (avail * 45 / 100).max(MIN_LABEL);
    rows_in
        .iter()
        .map(|(d, l, _)| {
            let least = if is_key(l) {
                let room = key_room.saturating_sub(d * INDENT);
                key_width(l, room).min(room)
            } else {
                width(l).min(MIN_LABEL)
            };
            d * INDENT + least
        })
        .max()
        .unwrap_or(4)
        .max(4)
        .min(avail.saturating_sub(3 + 3 * 4 + 1 + ACT_W))
}

/// One row's cells, wrapped or cut to `widths`, and the lines it takes.
fn row_layout(
    o: &ObjectPlan,
    depth: usize,
    label: &str,
    i: usize,
    t: &[String; 3],
    widths: &[usize; 6],
) -> RowLayout {
    let path = widths[0];
    let f = &o.fields[i];
    let secret = mask::is_secret_field(&o.kind, &f.path);
    // Highlight against: last-applied and live against the config
    // (what the apply changes), the config against live.
    let cmp = |side: usize| -> Option<&str> {
        if secret || f.action == FieldAction::Keep {
            return None;
        }
        let (this, other) = match side {
            2 => (&f.config, &f.live),
            0 => (&f.last_applied, &f.config),
            _ => (&f.live, &f.config),
        };
        match (this, other) {
            (Some(_), Some(_)) => Some(if side == 2 { &t[1] } else { &t[2] }),
            _ => None,
        }
    };
    let max_lines = if f.action == FieldAction::Keep {
        1
    } else {
        MAX_VALUE_LINES
    };
    let values: [Cell; 3] = std::array::from_fn(|s| cell(&t[s], cmp(s), widths[1 + s], max_lines));
    let room = path.saturating_sub(depth * INDENT).max(1);
    let label = if is_key(label) && width(label) > room {
        key_lines(label, room)
    } else {
        vec![elide_path(label, room)]
    };
    let height = values
        .iter()
        .map(Vec::len)
        .max()
        .unwrap_or(1)
        .max(label.len())
        .max(1);
    RowLayout {
        field: i,
        depth,
        label,
        values,
        height,
    }
}

/// The table's lines in order (headers, each row's parts, the kept-rows
/// line) and the first line of each row.
fn table_lines(
    entries: &[(usize, String, Option<usize>)],
    rows: &[RowLayout],
    kept_count: usize,
) -> (Vec<TLine>, Vec<usize>) {
    let mut lines = Vec::new();
    let mut row_line = Vec::with_capacity(rows.len());
    let mut r = 0;
    for (d, l, f) in entries {
        if *d == usize::MAX {
            lines.push(TLine::Kept(kept_count));
        } else if f.is_some() {
            row_line.push(lines.len());
            for part in 0..rows[r].height {
                lines.push(TLine::Row { row: r, part });
            }
            r += 1;
        } else {
            lines.push(TLine::Header {
                depth: *d,
                text: l.clone(),
            });
        }
    }
    (lines, row_line)
}

/// The columns a map key wants: whole where `room` holds it, else its
/// prefix and its name on a line each (`["service.beta.kubernetes.io/`
/// over `aws-load-balancer-backend-protocol"]`).
fn key_width(label: &str, room: usize) -> usize {
    match label.rfind('/') {
        Some(i) if width(label) > room => width(&label[..=i])
            .max(width(&label[i + 1..]))
            .max(MIN_LABEL),
        _ => width(label),
    }
}

/// A map key too long for `w` columns, on up to [`MAX_KEY_LINES`] lines
/// broken after a `/`, `.` or `-` where one is near the line's end; cut in
/// the middle only when even that is not enough.
fn key_lines(label: &str, w: usize) -> Vec<String> {
    let cs: Vec<(char, bool)> = label.chars().map(|c| (c, false)).collect();
    let text = |lines: Cell| -> Vec<String> {
        lines
            .into_iter()
            .map(|l| l.into_iter().map(|c| c.0).collect())
            .collect()
    };
    let pretty = wrap(&cs, w);
    if pretty.len() <= MAX_KEY_LINES {
        return text(pretty);
    }
    // Whole, broken anywhere, rather than cut.
    if width(label) <= w * MAX_KEY_LINES {
        let mut lines: Cell = Vec::new();
        let mut col = 0;
        for &c in &cs {
            let cw = c.0.width().unwrap_or(0);
            if lines.is_empty() || col + cw > w {
                lines.push(Vec::new());
                col = 0;
            }
            col += cw;
            if let Some(l) = lines.last_mut() {
                l.push(c);
            }
        }
        if lines.len() <= MAX_KEY_LINES {
            return text(lines);
        }
    }
    // Broken after separators, the lines hold less than their width: cut
    // by what overflows until they fit.
    let mut budget = w * MAX_KEY_LINES;
    let mut lines = loop {
        let lines = wrap(&elide_keeping_diff(&cs, budget), w);
        if lines.len() <= MAX_KEY_LINES || budget <= w {
            break lines;
        }
        let over: usize = lines[MAX_KEY_LINES..].iter().map(Vec::len).sum();
        budget = budget.saturating_sub(over.max(1));
    };
    lines.truncate(MAX_KEY_LINES);
    text(lines)
}

/// The first line to show so that row `cursor` (and the header right
/// above it) is in view, moving as little as possible from `scroll`.
pub fn scroll_for(l: &Layout, cursor: usize, scroll: usize, height: usize) -> usize {
    let Some(&start) = l.row_line.get(cursor) else {
        return 0;
    };
    let end = start + l.rows[cursor].height;
    // Headers directly above the row come into view with it.
    let mut first = start;
    while first > 0 && matches!(l.lines[first - 1], TLine::Header { .. } | TLine::Kept(_)) {
        first -= 1;
    }
    super::scroll::keep_in_view(scroll, first..end, start, l.lines.len(), height)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elision_keeps_what_differs() {
        let s = "registry.example.com/team/nginx:1.14.2";
        let t = "registry.example.com/team/nginx:1.16.1";
        let c = cell(s, Some(t), 12, 1);
        let text: String = c[0].iter().map(|x| x.0).collect();
        assert_eq!(text.chars().count(), 12);
        assert!(text.starts_with('…'), "{text}");
        assert!(text.ends_with("1.14.2"), "{text}");
        // The differing chars are flagged.
        let flagged: String = c[0].iter().filter(|x| x.1).map(|x| x.0).collect();
        assert_eq!(flagged, "42");
        // A value that fits is whole; one that does not wraps first.
        let text = |c: Cell| -> Vec<String> {
            c.iter().map(|l| l.iter().map(|x| x.0).collect()).collect()
        };
        // Wrapped after a separator, so the version reads whole.
        let c = cell("nginx:1.14.2", Some("nginx:1.16.1"), 8, 3);
        assert_eq!(text(c), ["nginx:", "1.14.2"]);
        let c = cell("abcdefghijklmnop", None, 6, 3);
        assert_eq!(text(c), ["abcdef", "ghijkl", "mnop"]);
        assert_eq!(elide_middle("minReadySeconds", 9), "minR…onds");
        assert_eq!(elide_path("minReadySeconds", 9), "minR…onds");
        assert_eq!(
            elide_path("template.spec.containers[name=nginx].image", 12),
            "templ….image"
        );
        assert_eq!(elide_path("a.b", 3), "a.b");
    }

    #[test]
    fn long_keys_wrap_instead_of_being_cut() {
        let key = "[\"service.beta.kubernetes.io/aws-load-balancer-backend-protocol\"]";
        // The prefix over the name where the width allows.
        assert_eq!(
            key_lines(key, 36),
            [
                "[\"service.beta.kubernetes.io/",
                "aws-load-balancer-backend-protocol\"]"
            ]
        );
        // Narrower: more lines, still whole.
        assert_eq!(key_lines(key, 14).concat(), key);
        assert!(key_lines(key, 14).len() <= MAX_KEY_LINES);
        // Too narrow for five lines: cut in the middle, both ends kept.
        let cut = key_lines(key, 8).concat();
        assert!(
            cut.starts_with("[\"serv") && cut.ends_with("col\"]"),
            "{cut}"
        );
        assert!(cut.contains('…'));
    }
}
