//! A structured value (a list, a map, a string over several lines) as a
//! block of lines, and two such values as a line diff: how the terminal
//! `kapply diff`, the TUI's box and its confirmation show them, as
//! `kubectl diff` shows YAML. One home, so every screen reads the same.

use serde_json::Value;

/// A list, a map or a string of more than one line: shown in a table cell
/// as a summary, elsewhere as a block.
pub fn is_structured(v: &Value) -> bool {
    match v {
        Value::Array(a) => !a.is_empty(),
        Value::Object(m) => !m.is_empty(),
        // A trailing newline alone still reads as one line.
        Value::String(s) => s.trim_end_matches('\n').contains('\n'),
        _ => false,
    }
}

/// A value as a block of lines: a string as its text, anything else as
/// YAML; nothing for no value. Ends with a newline unless empty.
pub fn block_text(v: &Option<Value>) -> String {
    match v {
        None => String::new(),
        Some(Value::String(s)) => {
            let mut s = s.clone();
            if !s.ends_with('\n') {
                s.push('\n');
            }
            s
        }
        Some(v) => crate::yaml::to_yaml(v),
    }
}

/// A line of a block diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineTag {
    /// In both.
    Same,
    /// Only before (live).
    Removed,
    /// Only after (what the apply makes of it).
    Added,
}

impl LineTag {
    /// `' '`, `'-'` or `'+'`, as a unified diff marks it.
    pub fn mark(self) -> char {
        match self {
            LineTag::Same => ' ',
            LineTag::Removed => '-',
            LineTag::Added => '+',
        }
    }
}

/// A line of [`line_diff`], or a run of unchanged lines left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockLine {
    Line(LineTag, String),
    /// This many unchanged lines, not shown.
    Skipped(usize),
}

/// What a block diff of `before` (live) against `after` shows, in words.
pub fn heading(before: &Option<Value>, after: &Option<Value>) -> &'static str {
    match (before, after) {
        (None, _) => "live: none; the apply sets:",
        (_, None) => "live, which the apply removes:",
        _ if block_text(before) == block_text(after) => "live (unchanged by the apply):",
        _ => "live → after the apply (- live, + applied):",
    }
}

/// `before` against `after`, line by line (newlines dropped). With
/// `context`, unchanged lines further than that from a change are folded
/// into [`BlockLine::Skipped`] (a diff with no change is shown whole).
pub fn line_diff(
    before: &Option<Value>,
    after: &Option<Value>,
    context: Option<usize>,
) -> Vec<BlockLine> {
    let (a, b) = (block_text(before), block_text(after));
    let diff = similar::TextDiff::from_lines(&a, &b);
    let lines: Vec<(LineTag, String)> = diff
        .iter_all_changes()
        .map(|c| {
            let tag = match c.tag() {
                similar::ChangeTag::Equal => LineTag::Same,
                similar::ChangeTag::Delete => LineTag::Removed,
                similar::ChangeTag::Insert => LineTag::Added,
            };
            (tag, c.value().trim_end_matches('\n').to_string())
        })
        .collect();
    let Some(context) = context else {
        return lines
            .into_iter()
            .map(|(t, s)| BlockLine::Line(t, s))
            .collect();
    };
    if lines.iter().all(|(t, _)| *t == LineTag::Same) {
        return lines
            .into_iter()
            .map(|(t, s)| BlockLine::Line(t, s))
            .collect();
    }
    // Keep every line within `context` of a change.
    let mut keep = vec![false; lines.len()];
    for (i, (t, _)) in lines.iter().enumerate() {
        if *t != LineTag::Same {
            let from = i.saturating_sub(context);
            let to = (i + context + 1).min(lines.len());
            keep[from..to].iter_mut().for_each(|k| *k = true);
        }
    }
    let mut out = Vec::new();
    let mut skipped = 0;
    for ((t, s), k) in lines.into_iter().zip(keep) {
        if k {
            if skipped > 0 {
                out.push(BlockLine::Skipped(skipped));
                skipped = 0;
            }
            out.push(BlockLine::Line(t, s));
        } else {
            skipped += 1;
        }
    }
    if skipped > 0 {
        out.push(BlockLine::Skipped(skipped));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(lines: &[BlockLine]) -> String {
        lines
            .iter()
            .map(|l| match l {
                BlockLine::Line(t, s) => format!("{}{s}\n", t.mark()),
                BlockLine::Skipped(n) => format!("…{n}\n"),
            })
            .collect()
    }

    #[test]
    fn a_multi_line_string_diffs_as_text_and_far_lines_fold() {
        let before: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        let after = before.replace("line 6\n", "line six\n");
        let d = line_diff(&Some(json!(before)), &Some(json!(after)), Some(2));
        assert_eq!(
            text(&d),
            "…3\n line 4\n line 5\n-line 6\n+line six\n line 7\n line 8\n…4\n"
        );
        // Without a context every line is there.
        let all = line_diff(&Some(json!(before)), &Some(json!(after)), None);
        assert_eq!(all.len(), 13);
    }

    #[test]
    fn lists_and_maps_diff_as_yaml() {
        let d = line_diff(
            &Some(json!(["--port=80", "--verbose"])),
            &Some(json!(["--port=8080", "--verbose"])),
            Some(3),
        );
        assert_eq!(text(&d), "-- --port=80\n+- --port=8080\n - --verbose\n");
        let removed = line_diff(&Some(json!({"a": 1})), &None, Some(3));
        assert_eq!(text(&removed), "-a: 1\n");
        assert_eq!(
            heading(&Some(json!({"a": 1})), &None),
            "live, which the apply removes:"
        );
    }

    #[test]
    fn what_counts_as_structured() {
        assert!(is_structured(&json!([1])));
        assert!(is_structured(&json!({"a": 1})));
        assert!(is_structured(&json!("a\nb")));
        assert!(!is_structured(&json!("a\n")));
        assert!(!is_structured(&json!([])));
        assert!(!is_structured(&json!(3)));
    }
}
