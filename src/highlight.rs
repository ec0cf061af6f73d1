//! YAML syntax highlighting for display, without any terminal types: the
//! TUI turns the colours into its own styles.
//!
//! The syntax is kapply's own (`assets/syntect/yaml.sublime-syntax`),
//! compiled into `assets/syntect/yaml.packdump` by
//! `cargo run --example gen_syntect_dumps`; at run time only the dump is
//! loaded. The colours are a fixed palette of mid tones that read on dark
//! and light terminals.

use std::str::FromStr;
use std::sync::OnceLock;
use syntect::easy::HighlightLines;
use syntect::highlighting::{
    Color, ScopeSelectors, StyleModifier, Theme, ThemeItem, ThemeSettings,
};
use syntect::parsing::SyntaxSet;

/// A 24-bit colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rgb(pub u8, pub u8, pub u8);

/// Text that no rule colours (punctuation, plain separators).
pub const DEFAULT: Rgb = Rgb(0xab, 0xb2, 0xbf);
pub const KEY: Rgb = Rgb(0x61, 0xaf, 0xef);
pub const STRING: Rgb = Rgb(0x98, 0xc3, 0x79);
pub const NUMBER: Rgb = Rgb(0xd1, 0x9a, 0x66);
/// Booleans, null, block scalar indicators.
pub const CONSTANT: Rgb = Rgb(0xc6, 0x78, 0xdd);
pub const COMMENT: Rgb = Rgb(0x7f, 0x84, 0x8e);
/// Anchors, aliases, tags.
pub const ANCHOR: Rgb = Rgb(0xe5, 0xc0, 0x7b);
/// Escapes in quoted strings, flow punctuation.
pub const ESCAPE: Rgb = Rgb(0x56, 0xb6, 0xc2);

/// Scope selector -> colour; later, more specific selectors win as in any
/// TextMate theme.
const PALETTE: &[(&str, Rgb)] = &[
    (
        "comment, punctuation.separator.document, keyword.other.directive",
        COMMENT,
    ),
    ("entity.name.tag", KEY),
    ("string", STRING),
    ("constant.numeric", NUMBER),
    (
        "constant.language, keyword.control.flow.block-scalar",
        CONSTANT,
    ),
    (
        "entity.name.other.anchor, variable.other.alias, storage.type.tag",
        ANCHOR,
    ),
    (
        "constant.character.escape, punctuation.separator.flow",
        ESCAPE,
    ),
    (
        "punctuation.separator.key-value, punctuation.definition.block.sequence.item",
        DEFAULT,
    ),
];

static SYNTAXES: OnceLock<Option<SyntaxSet>> = OnceLock::new();
static THEME: OnceLock<Theme> = OnceLock::new();

fn syntaxes() -> Option<&'static SyntaxSet> {
    SYNTAXES
        .get_or_init(|| {
            syntect::dumps::from_reader(&include_bytes!("../assets/syntect/yaml.packdump")[..]).ok()
        })
        .as_ref()
}

fn color(c: Rgb) -> Color {
    Color {
        r: c.0,
        g: c.1,
        b: c.2,
        a: 0xff,
    }
}

fn theme() -> &'static Theme {
    THEME.get_or_init(|| Theme {
        name: Some("kapply".into()),
        author: None,
        settings: ThemeSettings {
            foreground: Some(color(DEFAULT)),
            ..ThemeSettings::default()
        },
        scopes: PALETTE
            .iter()
            .filter_map(|(sel, c)| {
                Some(ThemeItem {
                    scope: ScopeSelectors::from_str(sel).ok()?,
                    style: StyleModifier {
                        foreground: Some(color(*c)),
                        background: None,
                        font_style: None,
                    },
                })
            })
            .collect(),
    })
}

/// Highlights YAML text: one vector of `(colour, text)` spans per line
/// (`str::lines`), adjacent spans of one colour merged, no newlines in the
/// text. Lines the highlighter cannot handle come back in [`DEFAULT`].
pub fn highlight_yaml(text: &str) -> Vec<Vec<(Rgb, String)>> {
    let Some(set) = syntaxes() else {
        return plain(text);
    };
    let Some(syntax) = set.syntaxes().first() else {
        return plain(text);
    };
    let mut h = HighlightLines::new(syntax, theme());
    let mut out = Vec::new();
    for line in text.lines() {
        let with_newline = format!("{line}\n");
        let spans = match h.highlight_line(&with_newline, set) {
            Ok(ranges) => {
                let mut spans: Vec<(Rgb, String)> = Vec::new();
                for (style, piece) in ranges {
                    let piece = piece.strip_suffix('\n').unwrap_or(piece);
                    if piece.is_empty() {
                        continue;
                    }
                    let fg = style.foreground;
                    let c = Rgb(fg.r, fg.g, fg.b);
                    match spans.last_mut() {
                        Some((last, s)) if *last == c => s.push_str(piece),
                        _ => spans.push((c, piece.to_string())),
                    }
                }
                spans
            }
            Err(_) => plain_line(line),
        };
        out.push(spans);
    }
    out
}

fn plain_line(line: &str) -> Vec<(Rgb, String)> {
    if line.is_empty() {
        Vec::new()
    } else {
        vec![(DEFAULT, line.to_string())]
    }
}

fn plain(text: &str) -> Vec<Vec<(Rgb, String)>> {
    text.lines().map(plain_line).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use syntect::parsing::{SyntaxDefinition, SyntaxSetBuilder};

    /// The colour of the first span whose text is `needle` on `line`.
    fn color_of(lines: &[Vec<(Rgb, String)>], line: usize, needle: &str) -> Option<Rgb> {
        let mut col = 0;
        let text: String = lines[line].iter().map(|(_, s)| s.as_str()).collect();
        let at = text.find(needle)?;
        for (c, s) in &lines[line] {
            if at >= col && at < col + s.len() {
                return Some(*c);
            }
            col += s.len();
        }
        None
    }

    const SAMPLE: &str = "# a comment
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, tier: \"front\"}
spec:
  replicas: 3
  paused: false
  anchor: &a yes
  alias: *a
  nothing: ~
  template:
    spec:
      containers:
      - name: nginx # the server
        image: 'nginx:1.14'
        args: [\"--port\", 80]
  script: |
    echo yes: 1
    # not a comment

    done
  after: 0x1F
";

    #[test]
    fn colours_by_role() {
        let lines = highlight_yaml(SAMPLE);
        assert_eq!(lines.len(), SAMPLE.lines().count());
        // Text is kept exactly.
        for (spans, line) in lines.iter().zip(SAMPLE.lines()) {
            let joined: String = spans.iter().map(|(_, s)| s.as_str()).collect();
            assert_eq!(joined, line);
        }
        assert_eq!(color_of(&lines, 0, "# a comment"), Some(COMMENT));
        assert_eq!(color_of(&lines, 1, "---"), Some(COMMENT));
        assert_eq!(color_of(&lines, 2, "apiVersion"), Some(KEY));
        assert_eq!(color_of(&lines, 2, "apps/v1"), Some(STRING));
        assert_eq!(color_of(&lines, 6, "app"), Some(KEY));
        assert_eq!(color_of(&lines, 6, "front"), Some(STRING));
        assert_eq!(color_of(&lines, 8, "3"), Some(NUMBER));
        assert_eq!(color_of(&lines, 9, "false"), Some(CONSTANT));
        assert_eq!(color_of(&lines, 10, "&a"), Some(ANCHOR));
        assert_eq!(color_of(&lines, 10, "yes"), Some(CONSTANT));
        assert_eq!(color_of(&lines, 11, "*a"), Some(ANCHOR));
        assert_eq!(color_of(&lines, 12, "~"), Some(CONSTANT));
        assert_eq!(color_of(&lines, 16, "name"), Some(KEY));
        assert_eq!(color_of(&lines, 16, "nginx"), Some(STRING));
        assert_eq!(color_of(&lines, 16, "# the server"), Some(COMMENT));
        assert_eq!(color_of(&lines, 17, "nginx:1.14"), Some(STRING));
        assert_eq!(color_of(&lines, 18, "80"), Some(NUMBER));
        // A block scalar is all string, even what looks like keys or
        // comments, until the indentation drops back.
        assert_eq!(color_of(&lines, 19, "|"), Some(CONSTANT));
        assert_eq!(color_of(&lines, 20, "echo yes: 1"), Some(STRING));
        assert_eq!(color_of(&lines, 21, "# not a comment"), Some(STRING));
        assert_eq!(color_of(&lines, 23, "done"), Some(STRING));
        assert_eq!(color_of(&lines, 24, "after"), Some(KEY));
        assert_eq!(color_of(&lines, 24, "0x1F"), Some(NUMBER));
    }

    /// The shipped dump is the compiled form of the shipped syntax: both
    /// highlight alike (regenerate with `cargo run --example
    /// gen_syntect_dumps` after editing the syntax).
    #[test]
    fn dump_matches_syntax_source() {
        let def = SyntaxDefinition::load_from_str(
            include_str!("../assets/syntect/yaml.sublime-syntax"),
            true,
            None,
        )
        .unwrap();
        let mut b = SyntaxSetBuilder::new();
        b.add(def);
        let fresh = b.build();
        let mut h = HighlightLines::new(&fresh.syntaxes()[0], theme());
        let from_source: Vec<Vec<(Rgb, String)>> = SAMPLE
            .lines()
            .map(|l| {
                let mut spans: Vec<(Rgb, String)> = Vec::new();
                for (st, piece) in h.highlight_line(&format!("{l}\n"), &fresh).unwrap() {
                    let piece = piece.trim_end_matches('\n');
                    if piece.is_empty() {
                        continue;
                    }
                    let c = Rgb(st.foreground.r, st.foreground.g, st.foreground.b);
                    match spans.last_mut() {
                        Some((last, s)) if *last == c => s.push_str(piece),
                        _ => spans.push((c, piece.to_string())),
                    }
                }
                spans
            })
            .collect();
        assert_eq!(highlight_yaml(SAMPLE), from_source);
    }

    #[test]
    fn palette_selectors_parse() {
        assert_eq!(theme().scopes.len(), PALETTE.len());
    }

    #[test]
    fn to_yaml_output_highlights() {
        let v = serde_json::json!({"data": {"enabled": "yes", "mode": 420}});
        let text = crate::yaml::to_yaml(&v);
        let lines = highlight_yaml(&text);
        // The quoted "yes" is a string, not a boolean.
        assert_eq!(color_of(&lines, 1, "\"yes\""), Some(STRING));
        assert_eq!(color_of(&lines, 2, "420"), Some(NUMBER));
    }
}
