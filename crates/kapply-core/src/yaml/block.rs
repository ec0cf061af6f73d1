//! A reader for the plain block YAML that manifests are nearly always
//! written in: block mappings and sequences, plain and quoted scalars on one
//! line, one-line flow collections, literal block scalars (`|`, `|-`),
//! comments and `---`. It feeds the same builder as saphyr's events do, and
//! hands anything else (tabs, anchors, tags, folded or multi-line scalars, a
//! document that is not a mapping, whatever might be an error) back as
//! `None`: then saphyr reads the text. saphyr's scanner costs about five
//! times what this does on such text.

// saphyr's style names, through the module that alone uses saphyr.
use super::{Doc, FastBuilder, ScalarStyle};
use std::borrow::Cow;

/// The documents of `text` (BOM already stripped), or `None` when the text
/// is outside what this reader takes.
pub(super) fn read(text: &str) -> Option<Vec<Doc>> {
    if !plain_chars(text.as_bytes()) {
        return None;
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let mut r = Reader {
        b: FastBuilder::default(),
        open: Vec::new(),
        lines: &lines,
        next: 0,
    };
    while r.next < lines.len() {
        let raw = lines[r.next];
        let line = r.next + 1;
        r.next += 1;
        if let Some(rest) = raw.strip_prefix("---") {
            if !(rest.is_empty() || rest.starts_with(' ')) || !blank_or_comment(rest) {
                return None;
            }
            r.end_document()?;
            continue;
        }
        if raw.starts_with("...") || raw.starts_with('%') {
            return None;
        }
        let content = raw.trim_start_matches(' ');
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        r.line(raw.len() - content.len(), content, line)?;
    }
    r.end_document()?;
    // Top-level `items` elements other than mappings: their lines are the
    // full reader's to give.
    let odd_items = r.b.docs.iter().any(|d| match d.value.get("items") {
        Some(serde_json::Value::Array(a)) => !a.iter().all(serde_json::Value::is_object),
        _ => false,
    });
    (!odd_items).then_some(r.b.docs)
}

/// No byte that YAML treats specially or refuses where this reader would
/// not notice: tabs, carriage returns, other controls, and the non-ASCII
/// breaks, BOMs and non-characters (NEL, C1 controls, U+2028/9, U+FEFF,
/// U+FFFE/F).
fn plain_chars(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\n' | 0x20..=0x7e => {}
            0xc2 if b.get(i + 1).is_some_and(|&c| c <= 0x9f) => return false,
            0xe2 if b.get(i + 1) == Some(&0x80) && matches!(b.get(i + 2), Some(0xa8 | 0xa9)) => {
                return false;
            }
            0xef if matches!(
                (b.get(i + 1), b.get(i + 2)),
                (Some(0xbb), Some(0xbf)) | (Some(0xbf), Some(0xbe | 0xbf))
            ) =>
            {
                return false;
            }
            0x80..=0xff => {}
            _ => return false,
        }
        i += 1;
    }
    true
}

/// Nothing, or only a comment (after a space), is left.
fn blank_or_comment(s: &str) -> bool {
    let t = s.trim_start_matches(' ');
    t.is_empty() || (t.starts_with('#') && t.len() < s.len())
}

/// `-` followed by a space or the end of the line: a sequence entry.
fn is_dash(s: &str) -> bool {
    s == "-" || s.starts_with("- ")
}

/// An open block collection: its column, and whether it waits for a value
/// (a mapping after `key:`, a sequence after `-`).
#[derive(Clone, Copy)]
struct Open {
    seq: bool,
    indent: usize,
    pending: bool,
}

struct Reader<'t, 'l> {
    b: FastBuilder,
    open: Vec<Open>,
    lines: &'l [&'t str],
    /// Index of the next line to read.
    next: usize,
}

impl Reader<'_, '_> {
    /// A line with content at column `indent`.
    fn line(&mut self, indent: usize, content: &str, line: usize) -> Option<()> {
        // Close what this line is outside of.
        while let Some(top) = self.open.last().copied() {
            if top.indent > indent {
                if self.open.len() == 1 {
                    // Outside the document's mapping.
                    return None;
                }
                self.close()?;
            } else if top.seq && top.indent == indent && !is_dash(content) {
                // The sequence was a mapping's value at its key's column.
                self.close()?;
            } else {
                break;
            }
        }
        let Some(top) = self.open.last().copied() else {
            // A document's root: only a mapping.
            if is_dash(content) {
                return None;
            }
            let key = split_key(content)??;
            return self.open_map(indent, key, line);
        };
        if top.indent == indent {
            if top.seq {
                // Another entry (the loop closed it otherwise).
                self.fill_null()?;
                return self.entry(indent, content, line);
            }
            if is_dash(content) {
                // `key:` then `- x` at the key's column.
                if !top.pending {
                    return None;
                }
                self.set_pending(false);
                return self.open_seq(indent, content, line);
            }
            let key = split_key(content)??;
            self.fill_null()?;
            return self.pair(indent, key, line);
        }
        // Deeper: the value of the pending key or entry.
        if !top.pending {
            return None;
        }
        self.set_pending(false);
        if is_dash(content) {
            return self.open_seq(indent, content, line);
        }
        let key = split_key(content)??;
        self.open_map(indent, key, line)
    }

    fn set_pending(&mut self, p: bool) {
        if let Some(top) = self.open.last_mut() {
            top.pending = p;
        }
    }

    /// A pending key or entry that got no value: null.
    fn fill_null(&mut self) -> Option<()> {
        match self.open.last() {
            Some(Open {
                pending: true, seq, ..
            }) => {
                // A null entry's line is the full reader's to give.
                if *seq {
                    return None;
                }
                self.set_pending(false);
                self.b.scalar("", ScalarStyle::Plain, None, 0)
            }
            _ => Some(()),
        }
    }

    /// Closes the innermost collection.
    fn close(&mut self) -> Option<()> {
        self.fill_null()?;
        self.open.pop();
        self.b.end()
    }

    fn end_document(&mut self) -> Option<()> {
        while !self.open.is_empty() {
            self.close()?;
        }
        Some(())
    }

    /// A mapping starting with the pair on this line (its key split).
    fn open_map(&mut self, indent: usize, key: Key<'_>, line: usize) -> Option<()> {
        self.push_open(false, indent, line)?;
        self.pair(indent, key, line)
    }

    /// A sequence starting with the entry on this line.
    fn open_seq(&mut self, indent: usize, content: &str, line: usize) -> Option<()> {
        self.push_open(true, indent, line)?;
        self.entry(indent, content, line)
    }

    fn push_open(&mut self, seq: bool, indent: usize, line: usize) -> Option<()> {
        self.b.start(seq, line)?;
        self.open.push(Open {
            seq,
            indent,
            pending: false,
        });
        Some(())
    }

    /// `key: value` (or `key:`) of the mapping at column `indent`, its
    /// key split by [`split_key`].
    fn pair(&mut self, indent: usize, (key, style, rest): Key<'_>, line: usize) -> Option<()> {
        self.b.scalar(&key, style, None, line)?;
        let value = rest.trim_start_matches(' ');
        if value.is_empty() || value.starts_with('#') {
            self.set_pending(true);
            return Some(());
        }
        if is_dash(value) {
            return None;
        }
        self.value(indent, value, line)
    }

    /// `- ...` of the sequence at column `indent`.
    fn entry(&mut self, indent: usize, content: &str, line: usize) -> Option<()> {
        let rest = &content[1..];
        let after = rest.trim_start_matches(' ');
        if after.is_empty() || after.starts_with('#') {
            self.set_pending(true);
            return Some(());
        }
        if is_dash(after) {
            return None;
        }
        if let Some(key) = split_key(after)? {
            let col = indent + 1 + (rest.len() - after.len());
            return self.open_map(col, key, line);
        }
        self.value(indent, after, line)
    }

    /// A value written on the line of its key or dash; `indent`: the column
    /// of the collection it goes into.
    fn value(&mut self, indent: usize, s: &str, line: usize) -> Option<()> {
        let b = s.as_bytes();
        match b[0] {
            b'{' | b'[' => {
                let mut pos = 0;
                self.flow(b, s, &mut pos, line)?;
                blank_or_comment(&s[pos..]).then_some(())
            }
            b'"' | b'\'' => {
                let (text, style, len) = quoted(s)?;
                if !blank_or_comment(&s[len..]) {
                    return None;
                }
                self.b.scalar(&text, style, None, line)
            }
            b'|' => {
                let strip = match &s[1..] {
                    h if blank_or_comment(h) => false,
                    h if h.starts_with('-') && blank_or_comment(&h[1..]) => true,
                    _ => return None,
                };
                let text = self.literal(indent, strip)?;
                self.b.scalar(&text, ScalarStyle::Literal, None, line)
            }
            _ => {
                let text = block_plain(s)?;
                self.b.scalar(text, ScalarStyle::Plain, None, line)
            }
        }
    }

    /// The lines of a literal block scalar whose parent collection is at
    /// column `parent` (clipped, or stripped with `strip`).
    fn literal(&mut self, parent: usize, strip: bool) -> Option<String> {
        let mut out = String::new();
        let mut indent = None;
        let mut empty = 0;
        let mut last_content = None;
        while let Some(&l) = self.lines.get(self.next) {
            let text = l.trim_start_matches(' ');
            let spaces = l.len() - text.len();
            if text.is_empty() {
                match indent {
                    // Leading empty lines, or spaces that are content.
                    None => return None,
                    Some(i) if spaces > i => return None,
                    Some(_) => {}
                }
                empty += 1;
                self.next += 1;
                continue;
            }
            let i = match indent {
                None if spaces <= parent => return None,
                None => *indent.insert(spaces),
                Some(i) if spaces < i => break,
                Some(i) => i,
            };
            if last_content.is_some() {
                for _ in 0..=empty {
                    out.push('\n');
                }
            }
            out.push_str(&l[i..]);
            empty = 0;
            last_content = Some(self.next);
            self.next += 1;
        }
        // The last line must end in a line break (no break: the reader's
        // rules for the end of the text apply).
        if last_content? + 1 >= self.lines.len() {
            return None;
        }
        // Nor may it end on a blank line the text ends in without a break:
        // saphyr counts one as deep as the content as a line of its own.
        if self.next >= self.lines.len() && self.lines.last().is_some_and(|l| !l.is_empty()) {
            return None;
        }
        if !strip {
            out.push('\n');
        }
        Some(out)
    }

    /// A flow collection or scalar at `b[*pos]`, all on this line.
    fn flow(&mut self, b: &[u8], s: &str, pos: &mut usize, line: usize) -> Option<()> {
        skip_spaces(b, pos);
        match *b.get(*pos)? {
            open @ (b'{' | b'[') => {
                let map = open == b'{';
                let close = if map { b'}' } else { b']' };
                self.b.start(!map, line)?;
                *pos += 1;
                skip_spaces(b, pos);
                if b.get(*pos) == Some(&close) {
                    *pos += 1;
                    return self.b.end();
                }
                loop {
                    if map {
                        skip_spaces(b, pos);
                        let (key, style) = flow_key(b, s, pos)?;
                        self.b.scalar(&key, style, None, line)?;
                    }
                    skip_spaces(b, pos);
                    if matches!(b.get(*pos), None | Some(b',' | b'}' | b']')) {
                        return None;
                    }
                    self.flow(b, s, pos, line)?;
                    skip_spaces(b, pos);
                    match *b.get(*pos)? {
                        b',' => {
                            *pos += 1;
                            skip_spaces(b, pos);
                            if matches!(b.get(*pos), None | Some(b'}' | b']')) {
                                return None;
                            }
                        }
                        c if c == close => {
                            *pos += 1;
                            return self.b.end();
                        }
                        _ => return None,
                    }
                }
            }
            b'"' | b'\'' => {
                let (text, style, len) = quoted(&s[*pos..])?;
                *pos += len;
                self.b.scalar(&text, style, None, line)
            }
            _ => {
                let start = *pos;
                let text = flow_plain(b, s, pos)?;
                if text.is_empty() || !plain_start(&s[start..]) {
                    return None;
                }
                self.b.scalar(text, ScalarStyle::Plain, None, line)
            }
        }
    }
}

fn skip_spaces(b: &[u8], pos: &mut usize) {
    while b.get(*pos) == Some(&b' ') {
        *pos += 1;
    }
}

/// A plain scalar may start here: not with an indicator, except `-`, `?`
/// and `:` before a character that is not a space or a flow indicator.
fn plain_start(s: &str) -> bool {
    let b = s.as_bytes();
    match b.first() {
        None => false,
        Some(b'-' | b'?' | b':') => !matches!(
            b.get(1),
            None | Some(b' ' | b',' | b'[' | b']' | b'{' | b'}')
        ),
        Some(c) => !b",[]{}#&*!|>'\"%@`".contains(c),
    }
}

/// A plain scalar in block context filling the rest of the line (up to a
/// comment); `None` where it would be a key, or text this reader leaves.
fn block_plain(s: &str) -> Option<&str> {
    if !plain_start(s) || s.starts_with(['?', ':']) {
        return None;
    }
    let end = s.find(" #").unwrap_or(s.len());
    let text = s[..end].trim_end_matches(' ');
    if text.contains(": ") || text.ends_with(':') {
        return None;
    }
    Some(text)
}

/// A plain scalar in a flow collection, from `b[*pos]` to the next `,`,
/// `]`, `}` or `: `.
fn flow_plain<'s>(b: &[u8], s: &'s str, pos: &mut usize) -> Option<&'s str> {
    let start = *pos;
    while let Some(&c) = b.get(*pos) {
        match c {
            b',' | b']' | b'}' => break,
            b'[' | b'{' => return None,
            b'#' if *pos > start && b[*pos - 1] == b' ' => return None,
            // saphyr refuses a word `-` right before a flow indicator
            // (`[a -]`), as it would at the scalar's start.
            b'-' if *pos > start
                && b[*pos - 1] == b' '
                && matches!(b.get(*pos + 1), Some(b',' | b'[' | b']' | b'{' | b'}')) =>
            {
                return None;
            }
            b':' if matches!(
                b.get(*pos + 1),
                None | Some(b' ' | b',' | b'[' | b']' | b'{' | b'}')
            ) =>
            {
                break;
            }
            _ => {}
        }
        *pos += 1;
    }
    Some(s[start..*pos].trim_end_matches(' '))
}

/// A key in a flow mapping, its `: ` consumed.
fn flow_key<'s>(b: &[u8], s: &'s str, pos: &mut usize) -> Option<(Cow<'s, str>, ScalarStyle)> {
    let (key, style) = match b.get(*pos)? {
        b'"' | b'\'' => {
            let (text, style, len) = quoted(&s[*pos..])?;
            *pos += len;
            (text, style)
        }
        _ => {
            let start = *pos;
            let text = flow_plain(b, s, pos)?;
            if text.is_empty() || !plain_start(&s[start..]) || text.len() != *pos - start {
                return None;
            }
            (Cow::Borrowed(text), ScalarStyle::Plain)
        }
    };
    if b.get(*pos) != Some(&b':') || b.get(*pos + 1) != Some(&b' ') {
        return None;
    }
    *pos += 2;
    Some((key, style))
}

/// The longest block key (in bytes, quotes included) taken here: saphyr
/// refuses an implicit key longer than 1024 characters, as YAML says.
const MAX_KEY: usize = 1024;

/// A block mapping's key split from its line: the key, its style and what
/// follows the `:`.
type Key<'a> = (Cow<'a, str>, ScalarStyle, &'a str);

/// A block mapping's key at the start of `content` (`key:` then a space or
/// the end). `Some(None)`: not a key; `None`: a key this reader does not
/// take.
fn split_key(content: &str) -> Option<Option<Key<'_>>> {
    let b = content.as_bytes();
    match b[0] {
        b'"' | b'\'' => {
            let (text, style, len) = quoted(content)?;
            if len > MAX_KEY {
                return None;
            }
            let rest = &content[len..];
            match rest.strip_prefix(':') {
                Some(r) if r.is_empty() || r.starts_with(' ') => Some(Some((text, style, r))),
                _ => Some(None),
            }
        }
        _ if !plain_start(content) => Some(None),
        _ => {
            let end = content.find(" #").unwrap_or(content.len());
            let head = &content[..end];
            let colon = head
                .match_indices(':')
                .map(|(i, _)| i)
                .find(|&i| matches!(b.get(i + 1), None | Some(b' ')));
            let Some(i) = colon else {
                return Some(None);
            };
            let key = &content[..i];
            if i > MAX_KEY
                || key.starts_with(['-', '?', ':'])
                || key.ends_with(' ')
                || key.contains(['[', ']', '{', '}', ',', '#', '"', '\''])
            {
                return None;
            }
            Some(Some((
                Cow::Borrowed(key),
                ScalarStyle::Plain,
                &content[i + 1..],
            )))
        }
    }
}

/// A quoted scalar at the start of `s`, closed on this line: its text, style and
/// the bytes it takes. Double-quoted escapes beyond the common ones, and
/// anything unusual, are left to saphyr.
fn quoted(s: &str) -> Option<(Cow<'_, str>, ScalarStyle, usize)> {
    let b = s.as_bytes();
    if b[0] == b'\'' {
        let mut out: Option<String> = None;
        let mut i = 1;
        let mut from = 1;
        loop {
            match *b.get(i)? {
                b'\'' if b.get(i + 1) == Some(&b'\'') => {
                    let o = out.get_or_insert_with(String::new);
                    o.push_str(&s[from..=i]);
                    i += 2;
                    from = i;
                }
                b'\'' => {
                    return Some((closed(s, out, from, i), ScalarStyle::SingleQuoted, i + 1));
                }
                _ => i += 1,
            }
        }
    }
    let mut out: Option<String> = None;
    let mut i = 1;
    let mut from = 1;
    loop {
        match *b.get(i)? {
            b'"' => return Some((closed(s, out, from, i), ScalarStyle::DoubleQuoted, i + 1)),
            b'\\' => {
                let o = out.get_or_insert_with(String::new);
                o.push_str(&s[from..i]);
                let (c, len) = match *b.get(i + 1)? {
                    b'\\' => ('\\', 2),
                    b'"' => ('"', 2),
                    b'/' => ('/', 2),
                    b'n' => ('\n', 2),
                    b't' => ('\t', 2),
                    b'r' => ('\r', 2),
                    b'0' => ('\0', 2),
                    b'b' => ('\u{8}', 2),
                    b'f' => ('\u{c}', 2),
                    b'u' => {
                        let hex = s.get(i + 2..i + 6)?;
                        if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
                            return None;
                        }
                        (char::from_u32(u32::from_str_radix(hex, 16).ok()?)?, 6)
                    }
                    _ => return None,
                };
                o.push(c);
                i += len;
                from = i;
            }
            _ => i += 1,
        }
    }
}

/// The text of a quoted scalar whose closing quote is at `i`: the slice
/// inside the quotes, or what was unescaped so far plus the rest.
fn closed(s: &str, out: Option<String>, from: usize, i: usize) -> Cow<'_, str> {
    match out {
        Some(mut o) => {
            o.push_str(&s[from..i]);
            Cow::Owned(o)
        }
        None => Cow::Borrowed(&s[1..i]),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Doc, parse_values_saphyr};
    use super::read;

    /// Where this reader answers, saphyr's events give the same documents:
    /// values, first lines, the lines of `items` elements.
    fn agrees(text: &str) -> bool {
        let Some(mine) = read(text) else {
            return false;
        };
        let theirs: Option<Vec<Doc>> = parse_values_saphyr(text);
        assert_eq!(Some(mine), theirs, "{text:?}");
        true
    }

    #[test]
    fn manifests_as_written_are_read_here() {
        for text in [
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web-1\n  namespace: ns\n  labels: {app: web-1, tier: scale}\n\
             spec:\n  replicas: 2\n  selector:\n    matchLabels: {app: web-1}\n  template:\n    spec:\n      containers:\n      - name: web\n\
             \x20       image: nginx:1.26.0\n        ports:\n        - {containerPort: 80, name: http}\n        env:\n        - {name: INDEX, value: \"1\"}\n\
             \x20       args: [sh, -c, \"sleep infinity\"]\n        resources:\n          requests: {cpu: 100m, memory: 128Mi}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s\ndata:\n  color: blue\n  config.yaml: |\n    server:\n      port: 8080\n\n    x: 1\n",
            "# c\n---\napiVersion: v1 # c\nkind: List\nitems:\n- kind: A\n  metadata: {name: a}\n-\n  kind: B\n- {}\n  # c\n---\n",
            "a: 'it''s'\nb: \"q\\\"\\n\\u00e9\\\\ /\"\nc: ~\nd:\ne: yes\nf: 0644\ng: 1.0\nh: -1\n\"i\": 1\n'j k': [1, 'x', \"y\", {a: b}, []]\n",
            "a:\n  - x\n  -   y: 1\n      z: 2\n  -\n    - m\nb: |-\n  l1\n   l2\n\n  l3\n\nc: x:y\nd: a b  c # c\ne: http://x:80/y\n",
            "a: 1\na: 2\nb:\n  c:\nd: 4\n",
            "  a: 1\n  b:\n  - 2\n",
            "a: {b: [1, {c: d}], e: {}}\nf: [a b, -c, \"x,y\"]\n",
        ] {
            assert!(agrees(text), "not read here: {text:?}");
        }
    }

    #[test]
    fn what_is_left_to_saphyr() {
        for text in [
            "a: &x 1\nb: *x\n",
            "a: !!str 1\n",
            "a: >\n  folded\n",
            "a: |+\n  kept\n\n",
            "a: |2\n   x\n",
            "a: \"multi\n  line\"\n",
            "a: plain\n  continued\n",
            "a:\tb\n",
            "a: 1\r\nb: 2\r\n",
            "- a\n- b\n",
            "just text\n",
            "a: 1\nb: 2\nc: d: e\n",
            "a: [1,\n  2]\n",
            "? a\n: b\n",
            "a: |\n  no final break",
            "items:\n- a\n- b\n",
            "a:\n-\n",
            "%YAML 1.2\n---\na: 1\n",
            "a: 1\n...\n",
            "a: \"\\x41\"\n",
            "<<: {a: 1}\n",
            "a: 1\n b: 2\n",
            // saphyr refuses these:
            "a: [a -]\n",
            "a: [a -, b]\n",
            "a: {k: a -}\n",
            // saphyr reads one more line break at the end ("x\n\n"):
            "a: |\n  x\n  ",
            "a: |\n  x\n\n  ",
            "k:\n- |\n x\n ",
        ] {
            if let Some(docs) = read(text) {
                panic!("read here: {text:?} -> {docs:?}");
            }
        }
    }

    /// saphyr refuses an implicit key longer than 1024 characters, quotes
    /// included; up to there the key is read here.
    #[test]
    fn long_keys_up_to_saphyrs_limit() {
        let k = |n: usize| "k".repeat(n);
        for text in [
            format!("{}: 1\n", k(1024)),
            format!("\"{}\": 1\n", k(1022)),
            format!("a:\n- {}: 1\n", k(1024)),
            format!("a: {{{}: 1}}\n", k(2000)),
            format!("a:\n- {}\n", k(2000)),
        ] {
            assert!(agrees(&text), "not read here: {text}");
        }
        for text in [
            format!("{}: 1\n", k(1025)),
            format!("\"{}\": 1\n", k(1023)),
            format!("'{}': 1\n", k(1023)),
            format!("a:\n  {}: 1\n", k(1025)),
            format!("a:\n- {}: 1\n", k(1025)),
            format!("{}: 1\n", "é".repeat(1025)),
        ] {
            assert!(parse_values_saphyr(&text).is_none(), "{text}");
            assert!(read(&text).is_none(), "{text}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        /// Text made of YAML's building blocks: wherever this reader takes
        /// it, saphyr reads the same.
        #[test]
        fn agrees_with_saphyr(parts in proptest::collection::vec(proptest::sample::select(vec![
            "a", "b", "y", "1", "0x1F", "-1", "~", "null", "<<", "é", "a b", "k8s.io/x",
            ": ", ":", " ", "  ", "\n", "\n  ", "\n    ", "\n- ", "\n  - ", "- ", "-", "#", " #c",
            "'", "''", "\"", "\\\"", "\\n", "\\u00e9", "\\/", "\\q",
            "{", "}", "[", "]", ", ", ",", "|", "|-", "|\n  x\n", "---\n", "\n---\n", "items: ", "items:\n",
            "kind: AList\n", "apiVersion: v1\n", "x: 1\n", "\n\n", "?", "&", "*", "!", ">", "%", "@",
            " -", " -]", LONG_KEY,
        ]), 0..24)) {
            let text: String = parts.concat();
            agrees(&text);
        }
    }

    /// A key just past saphyr's limit for implicit keys (1024 characters).
    const LONG_KEY: &str = match std::str::from_utf8(&[b'k'; 1025]) {
        Ok(key) => key,
        Err(_) => panic!("ASCII is UTF-8"),
    };

    fn lines() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let key = proptest::sample::select(vec![
            "a", "b", "items", "kind", "\"q\"", "'s'", "y", "1", "<<", "a b", "x.y/z", "-k", "~",
            LONG_KEY,
        ]);
        let value = proptest::sample::select(vec![
            "1",
            "x",
            "|",
            "|-",
            "|+",
            "{a: 1}",
            "[1, x]",
            "\"s\\n\"",
            "'t''s'",
            "~",
            "",
            "-1",
            "a:b",
            "a: b",
            "x #c",
            "{}",
            "[]",
            "[a, {b: c}]",
            "yes",
            "0644",
            "http://x",
            "\"\\u00e9\"",
            "{a: [1, 2], b: {}}",
            "[-c, \"x,y\"]",
            "&a x",
            "*a",
            "!t x",
            "> x",
            "x:",
            "'a' b",
            "[a -]",
            "{a: b -}",
        ]);
        let indent = proptest::sample::select(vec![0usize, 0, 0, 2, 2, 2, 4, 4, 1, 3, 6]);
        let line = (indent, 0usize..12, key, value).prop_map(|(indent, form, k, v)| {
            let pad = " ".repeat(indent);
            match form {
                0..=2 => format!("{pad}{k}: {v}"),
                10 | 11 => format!("{pad}{k}:"),
                3 => format!("{pad}- {v}"),
                4 => format!("{pad}- {k}: {v}"),
                5 => format!("{pad}-"),
                6 => format!("{pad}# c"),
                7 => "---".to_string(),
                8 => String::new(),
                _ => format!("{pad}{v}"),
            }
        });
        // The text's end: with or without a break, or blanks after it.
        let end = proptest::sample::select(vec!["", "\n", "\n", " ", "\n  ", "\n\n  "]);
        (proptest::collection::vec(line, 1..14), end).prop_map(|(ls, end)| {
            let mut t = ls.join("\n");
            t.push_str(end);
            t
        })
    }

    /// Lines of keys, entries and values at random columns: wherever this
    /// reader takes them, saphyr reads the same; and it takes a fair share
    /// (else the comparison says little).
    #[test]
    fn agrees_with_saphyr_line_by_line() {
        use proptest::strategy::{Strategy, ValueTree};
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let texts = lines();
        let mut read_here = 0;
        for _ in 0..30_000 {
            let text = texts.new_tree(&mut runner).unwrap().current();
            if agrees(&text) && !parse_values_saphyr(&text).unwrap_or_default().is_empty() {
                read_here += 1;
            }
        }
        assert!(read_here > 1000, "{read_here}");
    }
}

#[cfg(test)]
mod tricky;
