//! Text from manifests and servers on its way to a terminal: control
//! characters (C0 but the newline, DEL, C1 such as U+009B, which a terminal
//! reads as CSI) would be obeyed by the terminal, so they are shown escaped.
//! No I/O; used at the output edges (CLI printing, TUI drawing).

use std::borrow::Cow;

/// Whether `s` holds a control character other than `\n`.
fn has_controls(s: &str) -> bool {
    // A control character's UTF-8 has a byte below 0x20, 0x7f (DEL) or
    // 0xc2 (the lead of C1): bytes are checked first, 32 at a time without
    // branching (the compiler vectorises that: ten times faster than
    // decoding characters), characters only where one of those is (most
    // text has none).
    let suspect = |b: u8| ((b < 0x20) & (b != b'\n')) | (b == 0x7f) | (b == 0xc2);
    let mut chunks = s.as_bytes().chunks_exact(32);
    let any = chunks
        .by_ref()
        .any(|c| c.iter().fold(false, |m, &b| m | suspect(b)))
        || chunks.remainder().iter().any(|&b| suspect(b));
    any && s.chars().any(|c| c.is_control() && c != '\n')
}

/// `s` with every control character but `\n` in a visible form: `\t`,
/// `\r`, else `\u{1b}` (Rust's escape syntax). A backslash stays as is.
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    if !has_controls(s) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// JSON text (as serde_json writes it) with the control characters it
/// leaves raw inside strings (DEL and C1) written as `\u00XX` escapes: the
/// same JSON value, safe on a terminal. A raw newline in pretty-printed JSON
/// is layout (serde escapes those inside strings), so it stays.
pub fn escape_controls_json(s: &str) -> Cow<'_, str> {
    if !has_controls(s) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() && c != '\n' {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` escaped by `escape` ([`escape_controls`],
/// [`escape_controls_json`]), copied only where it changed something.
pub fn escaped(text: String, escape: impl Fn(&str) -> Cow<'_, str>) -> String {
    match escape(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(escaped) => escaped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_byte_check_finds_exactly_the_control_characters() {
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            // Alone (the bytes past the last 32) and inside a block of 32.
            let alone = format!("a{c}\u{a9}");
            let in_block = format!("{c}{:40}", "\u{a9}");
            for s in [alone, in_block] {
                assert_eq!(has_controls(&s), c.is_control() && c != '\n', "{c:?}");
            }
        }
    }

    #[test]
    fn controls_are_escaped_visibly() {
        assert_eq!(escape_controls("plain ✓ text"), "plain ✓ text");
        assert_eq!(
            escape_controls("a\u{1b}[31mred\u{9b}2J\u{7f}\tb\r\nc"),
            "a\\u{1b}[31mred\\u{9b}2J\\u{7f}\\tb\\r\nc"
        );
    }

    #[test]
    fn json_stays_json() {
        let v = serde_json::json!({"k": "x\u{9b}y\u{1b}z\u{7f}"});
        let text = serde_json::to_string_pretty(&v).unwrap();
        let safe = escape_controls_json(&text);
        assert!(!safe.chars().any(|c| c.is_control() && c != '\n'), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, v);
    }
}

/// The lines that differ between two texts (a file before and after a
/// write), each `- ` or `+ `, with two lines of context (`  `) and `…`
/// between changes far apart: what a confirmation shows of the write.
pub fn line_changes(old: &str, new: &str) -> Vec<String> {
    use similar::ChangeTag;
    let diff = similar::TextDiff::from_lines(old, new);
    let mut out = Vec::new();
    for (i, group) in diff.grouped_ops(2).iter().enumerate() {
        if i > 0 {
            out.push("…".to_string());
        }
        for op in group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                    ChangeTag::Equal => ' ',
                };
                out.push(format!(
                    "{sign} {}",
                    change.value().trim_end_matches(['\n', '\r'])
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod line_change_tests {
    #[test]
    fn changes_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nB\nc\nd\ne\nf\ng\nh\ni\n";
        assert_eq!(
            super::line_changes(old, new),
            ["  a", "- b", "+ B", "  c", "  d", "…", "  g", "  h", "+ i"]
        );
        assert!(super::line_changes(old, old).is_empty());
    }
}
