//! Field paths: the one syntax the field plan, the plan JSON, manifest line
//! maps, the TUI and `kapply release` use to name a field, and get/set/remove
//! over JSON values by such a path.
//!
//! `spec.template.spec.containers[name=nginx].image`: map keys and struct
//! fields joined by `.`, keyed list elements as `[mergeKey=value]`, list
//! indexes as `[N]`; map keys that are not plain identifiers are quoted as a
//! JSON string: `metadata.annotations["example.com/x"]`. A merge key's
//! value is bare, a `]` in it doubled: `env[name=a]]b]` names `a]b`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::hash::{BuildHasherDefault, Hasher};

/// FxHash: field paths and names are short, and SipHash's resistance to
/// chosen keys is not needed for maps of one object's paths or of the
/// compiled-in patch metadata.
#[derive(Default, Clone, Copy)]
pub struct PathHasher(u64);

impl Hasher for PathHasher {
    fn write(&mut self, mut bytes: &[u8]) {
        while let Some((word, rest)) = bytes.split_first_chunk::<8>() {
            self.add(u64::from_le_bytes(*word));
            bytes = rest;
        }
        if let Some((word, rest)) = bytes.split_first_chunk::<4>() {
            self.add(u64::from(u32::from_le_bytes(*word)));
            bytes = rest;
        }
        for &b in bytes {
            self.add(u64::from(b));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl PathHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// [`PathHasher`] for `HashMap`s.
pub type FastHash = BuildHasherDefault<PathHasher>;

/// A field path as the rows carry it: the rendered text, with typed
/// access to its steps. Printing, JSON (the same string), hashing, equality
/// and order are the text's (byte order, as the rows and sets keyed by
/// path strings sorted before), so a `FieldPath` costs what its `String`
/// did; the steps are read from the text when asked for: most rows are
/// never taken apart, and those that are are read once per question.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FieldPath(String);

impl FieldPath {
    /// A path from its text, as [`key`], [`element`] and [`index`] write
    /// it (any text reads as some steps: a path a user typed is one too).
    pub fn new(text: impl Into<String>) -> Self {
        FieldPath(text.into())
    }

    /// The text: what the plan JSON, the TUI and `kapply release` show.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }

    /// The empty path: the object itself.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// This path with a map key or struct field appended (see [`key`]).
    pub fn key(&self, k: &str) -> FieldPath {
        FieldPath(key(&self.0, k))
    }

    /// This path with a keyed list element appended (see [`element`]).
    pub fn element(&self, merge_key: &str, value: &Value) -> FieldPath {
        FieldPath(element(&self.0, merge_key, value))
    }

    /// This path with a list index appended (see [`index`]).
    pub fn index(&self, i: usize) -> FieldPath {
        FieldPath(index(&self.0, i))
    }

    /// The steps, each with the byte offset of the text where it ends
    /// (see [`read`]).
    pub fn steps(&self) -> Steps<'_> {
        read(&self.0)
    }

    /// The steps from a byte offset one of them ends at (see [`read_from`]).
    pub fn steps_from(&self, pos: usize) -> Steps<'_> {
        read_from(&self.0, pos)
    }

    /// The steps, owned (for [`get`], [`set`] and [`remove`]).
    pub fn segments(&self) -> Vec<Segment> {
        parse(&self.0)
    }

    /// The steps as the TUI's tree shows them (see [`steps`]).
    pub fn tree_steps(&self) -> Vec<&str> {
        steps(&self.0)
    }

    /// The last step; `None` for the root.
    pub fn last(&self) -> Option<Step<'_>> {
        self.steps().last().map(|(s, _)| s)
    }

    /// The path one step up (the root for a top-level field); `None` for
    /// the root.
    pub fn parent(&self) -> Option<FieldPath> {
        let mut ends = self.steps().map(|(_, end)| end);
        let mut before = 0;
        let mut last = ends.next()?;
        for end in ends {
            before = last;
            last = end;
        }
        // The separating `.` of a key is not part of the parent.
        let text = self.0[..before]
            .strip_suffix('.')
            .unwrap_or(&self.0[..before]);
        Some(FieldPath(text.to_string()))
    }

    /// Whether this path is `ancestor` or lies under it (`ancestor` a whole
    /// path: `data` holds `data.x` and `data["a.b"]`, not `dataX`).
    pub fn is_under(&self, ancestor: &str) -> bool {
        is_under(&self.0, ancestor)
    }
}

impl std::fmt::Display for FieldPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad`, not `write_str`: widths and alignment apply, as for a string.
        f.pad(&self.0)
    }
}

/// Quoted as a string is (`{:?}` in messages shows `"spec.replicas"`).
impl std::fmt::Debug for FieldPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.0, f)
    }
}

impl AsRef<str> for FieldPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Sets and maps keyed by `FieldPath` are looked up by a path's text.
impl std::borrow::Borrow<str> for FieldPath {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<String> for FieldPath {
    fn from(text: String) -> Self {
        FieldPath(text)
    }
}

impl From<&str> for FieldPath {
    fn from(text: &str) -> Self {
        FieldPath(text.to_string())
    }
}

impl From<FieldPath> for String {
    fn from(p: FieldPath) -> Self {
        p.0
    }
}

impl PartialEq<str> for FieldPath {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for FieldPath {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for FieldPath {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl PartialEq<FieldPath> for str {
    fn eq(&self, other: &FieldPath) -> bool {
        self == other.0
    }
}

impl PartialEq<FieldPath> for &str {
    fn eq(&self, other: &FieldPath) -> bool {
        *self == other.0
    }
}

impl PartialEq<FieldPath> for String {
    fn eq(&self, other: &FieldPath) -> bool {
        *self == other.0
    }
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    /// A map key or struct field.
    Key(String),
    /// A keyed list element: merge key and the key value as written
    /// (strings bare, other scalars as JSON).
    Element(String, String),
    /// A list index.
    Index(usize),
}

impl Segment {
    /// This segment as a [`Step`], borrowing its text: [`get`], [`remove`]
    /// and [`set`] on its way down go through the step functions, so each
    /// rule for finding or removing what a segment names is written once.
    pub fn step(&self) -> Step<'_> {
        match self {
            Segment::Key(k) => Step::Key(Cow::Borrowed(k)),
            Segment::Element(k, v) => Step::Element(k, Cow::Borrowed(v)),
            Segment::Index(i) => Step::Index(*i),
        }
    }
}

/// The bytes of a plain key: ASCII letters and digits, `_`, `-`, `$` (a
/// byte of a non-ASCII character is none of them).
const PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || c == b'_' || c == b'-' || c == b'$';
        b += 1;
    }
    t
};

/// Whether `key` can be written bare after a `.`.
pub(crate) fn is_plain(key: &str) -> bool {
    !key.is_empty() && key.bytes().all(|b| PLAIN[usize::from(b)])
}

/// The length of the plain bytes `text` starts with (see [`is_plain`]).
pub(crate) fn plain_len(text: &str) -> usize {
    text.bytes()
        .position(|b| !PLAIN[usize::from(b)])
        .unwrap_or(text.len())
}

/// `v.pointer(ptr)` (a JSON pointer, RFC 6901) without serde_json's copy
/// of every token: the plans look up fixed pointers such as
/// `/metadata/annotations` several times per object.
pub fn pointer<'v>(v: &'v Value, ptr: &str) -> Option<&'v Value> {
    if ptr.is_empty() {
        return Some(v);
    }
    // Escaped tokens are rare: serde_json reads them.
    if ptr.contains('~') {
        return v.pointer(ptr);
    }
    ptr.strip_prefix('/')?
        .split('/')
        .try_fold(v, |target, token| match target {
            Value::Object(map) => map.get(token),
            // As serde_json reads an index: no sign, no leading zero.
            Value::Array(list)
                if !token.starts_with('+') && (token == "0" || !token.starts_with('0')) =>
            {
                token.parse::<usize>().ok().and_then(|i| list.get(i))
            }
            _ => None,
        })
}

/// Append a map key to a path's text: bare after a `.` (none at the start),
/// or quoted. `key(p, k)` is `p` with `push_key(k)`.
pub fn push_key(out: &mut String, key: &str) {
    if is_plain(key) {
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(key);
    } else if key.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        // Nothing in it for JSON to escape (label and annotation keys): the
        // quoted form written as is, without serde_json's copy and print.
        out.push_str("[\"");
        out.push_str(key);
        out.push_str("\"]");
    } else {
        out.push('[');
        out.push_str(&Value::from(key).to_string());
        out.push(']');
    }
}

/// Append a map key or struct field to a path.
pub fn key(parent: &str, key: &str) -> String {
    if parent.is_empty() && is_plain(key) {
        return key.to_string();
    }
    // Built by hand: this runs for every field of every object.
    let mut s = String::with_capacity(parent.len() + 3 + key.len());
    s.push_str(parent);
    push_key(&mut s, key);
    s
}

/// Append a keyed list element: `containers[name=nginx]`.
pub fn element(parent: &str, merge_key: &str, value: &Value) -> String {
    let mut s = String::with_capacity(parent.len() + merge_key.len() + 16);
    s.push_str(parent);
    push_element(&mut s, merge_key, value);
    s
}

/// Append a keyed list element to a path's text, as [`element`] writes it:
/// the value's text ([`element_value`]) bare, each `]` in it doubled. The
/// writers never put a `]` right after a step's closing one, so the reader
/// knows a doubled one for the value's, and a value without `]` is written
/// as it was before `]` was escaped.
pub fn push_element(out: &mut String, merge_key: &str, value: &Value) {
    out.push('[');
    out.push_str(merge_key);
    out.push('=');
    let from = out.len();
    push_element_value(out, value);
    if out[from..].contains(']') {
        let doubled = out[from..].replace(']', "]]");
        out.truncate(from);
        out.push_str(&doubled);
    }
    out.push(']');
}

/// Append a list index (lists without a merge key, when listed per element).
pub fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

/// Parse a path written by [`key`], [`element`] and [`index`].
pub fn parse(path: &str) -> Vec<Segment> {
    read(path)
        .map(|(step, _)| match step {
            Step::Key(k) => Segment::Key(k.into_owned()),
            Step::Element(k, v) => Segment::Element(k.into(), v.into_owned()),
            Step::Index(i) => Segment::Index(i),
        })
        .collect()
}

/// One step of a path as [`parse`] reads it, borrowing the path's text (a
/// quoted key with escapes or an element value with a `]` owns its text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step<'p> {
    Key(Cow<'p, str>),
    /// Merge key and its value's text (see [`Segment::Element`]).
    Element(&'p str, Cow<'p, str>),
    Index(usize),
}

/// The steps of a path, each with the byte offset where it ends: the
/// steps of two paths agree up to a step that ends before the first byte
/// where they differ.
pub fn read(path: &str) -> Steps<'_> {
    Steps { path, pos: 0 }
}

/// The steps of a path from a byte offset a step of it ends at.
pub fn read_from(path: &str, pos: usize) -> Steps<'_> {
    Steps { path, pos }
}

/// See [`read`].
pub struct Steps<'p> {
    path: &'p str,
    pos: usize,
}

impl<'p> Iterator for Steps<'p> {
    type Item = (Step<'p>, usize);

    fn next(&mut self) -> Option<(Step<'p>, usize)> {
        let path = self.path;
        loop {
            let rest = path.get(self.pos..).unwrap_or_default();
            let first = *rest.as_bytes().first()?;
            if first == b'.' {
                self.pos += 1;
                continue;
            }
            if first == b'[' {
                let start = self.pos + 1;
                let r = &rest[1..];
                if r.starts_with('"')
                    && let Some((k, used)) = quoted_key(r)
                {
                    self.pos = start + used + usize::from(r[used..].starts_with(']'));
                    return Some((Step::Key(k), self.pos));
                }
                let close = |from: usize| {
                    from + r[from..]
                        .bytes()
                        .position(|b| b == b']')
                        .unwrap_or(r.len() - from)
                };
                let mut end = close(0);
                // In an element value a doubled `]` is the value's (see
                // `push_element`): the step ends at the first single one.
                if r[end..].starts_with("]]") && r[..end].contains('=') {
                    while r[end..].starts_with("]]") {
                        end = close(end + 2);
                    }
                    if let Some((k, v)) = r[..end].split_once('=') {
                        self.pos = (start + end + 1).min(path.len());
                        let v = Cow::Owned(v.replace("]]", "]"));
                        return Some((Step::Element(k, v), self.pos));
                    }
                }
                let inner = &r[..end];
                let step = match inner.split_once('=') {
                    Some((k, v)) => Step::Element(k, Cow::Borrowed(v)),
                    None => match inner.parse() {
                        Ok(i) => Step::Index(i),
                        Err(_) => Step::Key(Cow::Borrowed(inner)),
                    },
                };
                self.pos = (start + end + 1).min(path.len());
                return Some((step, self.pos));
            }
            let end = rest
                .bytes()
                .position(|b| b == b'.' || b == b'[')
                .unwrap_or(rest.len());
            self.pos += end;
            return Some((Step::Key(Cow::Borrowed(&rest[..end])), self.pos));
        }
    }
}

/// A quoted key at the start of `r` (a JSON string) and the bytes it
/// takes: borrowed when it has no escape, else read as JSON.
fn quoted_key(r: &str) -> Option<(Cow<'_, str>, usize)> {
    let b = r.as_bytes();
    match b[1..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
    {
        Some(i) if b[1 + i] == b'"' => return Some((Cow::Borrowed(&r[1..1 + i]), i + 2)),
        None => return None,
        Some(_) => {}
    }
    let mut de = serde_json::Deserializer::from_str(r).into_iter::<String>();
    match de.next() {
        Some(Ok(k)) => Some((Cow::Owned(k), de.byte_offset())),
        _ => None,
    }
}

/// The value one step below `v`, as [`get`] takes it.
pub fn get_step<'v>(v: &'v Value, step: &Step) -> Option<&'v Value> {
    match step {
        Step::Key(k) => v.get(k.as_ref()),
        Step::Index(i) => v.get(*i),
        Step::Element(k, want) => v.as_array()?.iter().find(|e| element_matches(e, k, want)),
    }
}

/// The value one step below `v`, for writing, as [`remove`] descends.
pub fn get_step_mut<'v>(v: &'v mut Value, step: &Step) -> Option<&'v mut Value> {
    match step {
        Step::Key(k) => v.get_mut(k.as_ref()),
        Step::Index(i) => v.get_mut(*i),
        Step::Element(k, want) => v
            .as_array_mut()?
            .iter_mut()
            .find(|e| element_matches(e, k, want)),
    }
}

/// Remove what `step` names below `v`, as [`remove`] removes its last
/// segment.
pub fn remove_step(v: &mut Value, step: &Step) {
    match step {
        Step::Key(k) => {
            if let Some(m) = v.as_object_mut() {
                m.remove(k.as_ref());
            }
        }
        Step::Index(i) => {
            if let Some(a) = v.as_array_mut()
                && *i < a.len()
            {
                a.remove(*i);
            }
        }
        Step::Element(k, want) => {
            if let Some(a) = v.as_array_mut() {
                a.retain(|e| !element_matches(e, k, want));
            }
        }
    }
}

/// The raw steps of a path as the TUI's tree shows them: `spec`, `containers[name=nginx]`, `image`; a
/// keyed element or index stays with its list, a quoted key is its own step.
pub fn steps(path: &str) -> Vec<&str> {
    // Spans of the reader's steps, so what a step holds (a `]`, `"` or `.`
    // in a key or element value) is read as the reader reads it.
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut before = 0;
    for (_, end) in read(path) {
        let text = &path[before..end];
        let start = end - text.trim_start_matches('.').len();
        before = end;
        match out.last_mut() {
            // An element or index (not a quoted key) stays with its list.
            Some(last)
                if path[start..end].starts_with('[') && !path[start..].starts_with("[\"") =>
            {
                last.1 = end
            }
            _ if start < end => out.push((start, end)),
            _ => {}
        }
    }
    out.into_iter().map(|(a, b)| &path[a..b]).collect()
}

/// Whether `path` is `root` or lies under the top-level key `root`.
pub fn is_under(path: &str, root: &str) -> bool {
    path.strip_prefix(root)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// The key value of a list element as [`element`] writes it.
pub fn element_value(value: &Value) -> String {
    // Sized as a clone of a string key would be.
    let mut out = String::with_capacity(value.as_str().map_or(0, str::len));
    push_element_value(&mut out, value);
    out
}

/// Append [`element_value`] to a path's text.
pub fn push_element_value(out: &mut String, value: &Value) {
    match value {
        Value::String(s) => out.push_str(s),
        other => {
            use std::fmt::Write as _;
            let _ = write!(out, "{other}");
        }
    }
}

/// Whether the list element `v` has `key` equal to `want` (as a path names it).
pub fn element_matches(v: &Value, key: &str, want: &str) -> bool {
    v.get(key).is_some_and(|k| match k {
        Value::String(s) => s == want,
        other => {
            // `other.to_string() == want`, compared as it is written.
            let mut rest = Rest {
                rest: want,
                same: true,
            };
            use std::fmt::Write as _;
            let _ = write!(rest, "{other}");
            rest.same && rest.rest.is_empty()
        }
    })
}

/// A `fmt::Write` that compares what is written with the text left.
struct Rest<'a> {
    rest: &'a str,
    same: bool,
}

impl std::fmt::Write for Rest<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        match self.rest.strip_prefix(s) {
            Some(r) if self.same => self.rest = r,
            _ => self.same = false,
        }
        Ok(())
    }
}

/// The value at a parsed path, if there is one.
pub fn get<'v>(v: &'v Value, segs: &[Segment]) -> Option<&'v Value> {
    segs.iter().try_fold(v, |cur, s| get_step(cur, &s.step()))
}

/// The value at a parsed path, for writing; `make_maps` creates the maps
/// on the way (replacing a non-map), as [`set`] needs and [`remove`] not.
fn descend<'v>(mut cur: &'v mut Value, segs: &[Segment], make_maps: bool) -> Option<&'v mut Value> {
    for s in segs {
        cur = match s {
            Segment::Key(k) if make_maps => {
                if !cur.is_object() {
                    *cur = Value::Object(Map::new());
                }
                cur.as_object_mut()?
                    .entry(k.clone())
                    .or_insert_with(|| Value::Object(Map::new()))
            }
            s => get_step_mut(cur, &s.step())?,
        };
    }
    Some(cur)
}

/// Remove the value at a parsed path; nothing happens when it is absent.
/// A keyed element is removed wherever it matches, an index shifts the rest.
pub fn remove(v: &mut Value, segs: &[Segment]) {
    let Some((last, parent)) = segs.split_last() else {
        return;
    };
    if let Some(cur) = descend(v, parent, false) {
        remove_step(cur, &last.step());
    }
}

/// Set the value at a parsed path, creating the maps on the way (and the
/// list of a keyed element, appended when no element matches). A missing
/// index or an element under a missing list stops the walk: there is no
/// element to create it from.
pub fn set(v: &mut Value, segs: &[Segment], value: Value) {
    let Some((last, parent)) = segs.split_last() else {
        *v = value;
        return;
    };
    let Some(cur) = descend(v, parent, true) else {
        return;
    };
    match last {
        Segment::Key(k) => {
            if !cur.is_object() {
                *cur = Value::Object(Map::new());
            }
            if let Some(m) = cur.as_object_mut() {
                m.insert(k.clone(), value);
            }
        }
        Segment::Index(i) => {
            if let Some(slot) = cur.get_mut(*i) {
                *slot = value;
            }
        }
        Segment::Element(k, want) => {
            if cur.is_null() {
                *cur = Value::Array(vec![]);
            }
            if let Some(a) = cur.as_array_mut() {
                match a.iter_mut().find(|e| element_matches(e, k, want)) {
                    Some(slot) => *slot = value,
                    None => a.push(value),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key as written before the quoted form's fast path: plain after a
    /// `.`, else printed by serde_json in brackets.
    fn push_key_printed(out: &mut String, key: &str) {
        if is_plain(key) {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(key);
        } else {
            out.push('[');
            out.push_str(&Value::from(key).to_string());
            out.push(']');
        }
    }

    proptest::proptest! {
        /// Keys of every kind (escapes, control bytes, DEL, non-ASCII, dots,
        /// slashes, empty) are written as serde_json prints them.
        #[test]
        fn push_key_writes_as_serde_json_prints(
            parent in "(|[a-z.]{1,8})",
            key in "(\\PC|[\u{0}-\u{7f}]|[./\"\\\\é]){0,12}",
        ) {
            let (mut fast, mut printed) = (parent.clone(), parent);
            push_key(&mut fast, &key);
            push_key_printed(&mut printed, &key);
            proptest::prop_assert_eq!(fast, printed);
        }
    }

    /// A path written step by step by the writers: its steps, parent and
    /// last step are those it was written from, whatever its keys hold
    /// (dots, brackets, quotes, escapes) and wherever it lies under
    /// another path it is under its parent.
    fn segment() -> impl proptest::strategy::Strategy<Value = Segment> {
        use proptest::prelude::*;
        prop_oneof![
            "(\\PC|[.\\[\\]\"\\\\/=]){0,8}".prop_map(Segment::Key),
            // Any key value: `]`, quotes, brackets, dots and `=` in it too.
            ("[a-zA-Z]{1,6}", "(\\PC|[.\\[\\]\"\\\\/=]){0,8}")
                .prop_map(|(k, v)| Segment::Element(k, v)),
            (0usize..20).prop_map(Segment::Index),
        ]
    }

    fn written(segs: &[Segment]) -> FieldPath {
        segs.iter().fold(FieldPath::default(), |p, s| match s {
            Segment::Key(k) => p.key(k),
            Segment::Element(k, v) => p.element(k, &Value::from(v.as_str())),
            Segment::Index(i) => p.index(*i),
        })
    }

    proptest::proptest! {
        #[test]
        fn field_path_reads_the_steps_it_was_written_from(
            segs in proptest::collection::vec(segment(), 0..6),
        ) {
            let p = written(&segs);
            proptest::prop_assert_eq!(p.segments(), segs.clone());
            proptest::prop_assert_eq!(p.last(), segs.last().map(Segment::step));
            match segs.split_last() {
                None => proptest::prop_assert_eq!(p.parent(), None),
                Some((_, up)) => {
                    let parent = written(up);
                    proptest::prop_assert_eq!(p.parent(), Some(parent.clone()));
                    proptest::prop_assert!(parent.is_root() || p.is_under(parent.as_str()));
                }
            }
        }
    }

    proptest::proptest! {
        /// A key value without `]` is written bare, as before `]` was
        /// escaped; one with `]` has each doubled, and reads back.
        #[test]
        fn element_value_text_is_bare_with_each_bracket_doubled(
            parent in "(|[a-z.]{1,8})",
            v in "(\\PC|[.\\[\\]\"\\\\/=]){0,8}",
        ) {
            let text = element(&parent, "name", &Value::from(v.as_str()));
            proptest::prop_assert_eq!(&text, &format!("{parent}[name={}]", v.replace(']', "]]")));
            let p = FieldPath::new(text);
            proptest::prop_assert_eq!(p.last(), Some(Step::Element("name", Cow::Borrowed(v.as_str()))));
        }
    }

    /// Values holding a `]`, lists printed as JSON among them, read back
    /// whole, and the tree keeps each with its list.
    #[test]
    fn element_values_with_brackets_read_back() {
        let list = json!(["a", [1]]);
        let p = FieldPath::from("spec")
            .key("env")
            .element("name", &json!("a]b"))
            .key("value")
            .key("x")
            .element("k", &list)
            .index(0);
        assert_eq!(p, "spec.env[name=a]]b].value.x[k=[\"a\",[1]]]]][0]");
        assert_eq!(
            p.segments(),
            vec![
                Segment::Key("spec".into()),
                Segment::Key("env".into()),
                Segment::Element("name".into(), "a]b".into()),
                Segment::Key("value".into()),
                Segment::Key("x".into()),
                Segment::Element("k".into(), r#"["a",[1]]"#.into()),
                Segment::Index(0),
            ]
        );
        assert_eq!(
            p.tree_steps(),
            ["spec", "env[name=a]]b]", "value", "x[k=[\"a\",[1]]]]][0]"]
        );
        let v = json!({"spec": {"env": [{"name": "a]b", "value": {"x": [{"k": list}]}}]}});
        let element = p.parent().unwrap().segments();
        assert_eq!(get(&v, &element), Some(&json!({"k": ["a", [1]]})));
        // A value with an unbalanced quote or bracket stays in its step.
        assert_eq!(
            steps("spec.env[name=a\"b.c].value"),
            ["spec", "env[name=a\"b.c]", "value"]
        );
        assert_eq!(steps("m[name=[x].y"), ["m[name=[x]", "y"]);
    }

    #[test]
    fn push_key_quotes_like_serde_json() {
        for key in [
            "app.kubernetes.io/name",
            "a\"b",
            "a\\b",
            "tab\there",
            "del\u{7f}",
            "é/ü",
            "",
            "x y",
        ] {
            let (mut fast, mut printed) = ("metadata".to_string(), "metadata".to_string());
            push_key(&mut fast, key);
            push_key_printed(&mut printed, key);
            assert_eq!(fast, printed, "{key:?}");
        }
    }

    /// The pointer look-up finds what serde_json's does, for every pointer
    /// form: escapes, indexes with signs and zeros, empty tokens.
    #[test]
    fn pointer_reads_as_serde_json_does() {
        let v = serde_json::json!({
            "": {"": 1},
            "a": {"b/c": 2, "d~e": 3, "list": [10, 11, 12], "0": "zero"},
            "m": [{"x": [true]}],
        });
        let pointers = [
            "",
            "/",
            "//",
            "a",
            "/a",
            "/a/",
            "/a/b~1c",
            "/a/d~0e",
            "/a/b/c",
            "/a/list/0",
            "/a/list/2",
            "/a/list/3",
            "/a/list/01",
            "/a/list/+1",
            "/a/list/-1",
            "/a/list/",
            "/a/0",
            "/m/0/x/0",
            "/m/0/x/0/y",
            "/nope",
            "/a/list/18446744073709551616",
        ];
        for p in pointers {
            assert_eq!(pointer(&v, p), v.pointer(p), "{p:?}");
        }
        assert_eq!(pointer(&v, "/a/list/1"), Some(&serde_json::json!(11)));
    }

    #[test]
    fn steps_keep_elements_with_their_list() {
        assert_eq!(
            steps("spec.template.spec.containers[name=nginx].image"),
            [
                "spec",
                "template",
                "spec",
                "containers[name=nginx]",
                "image"
            ]
        );
        assert_eq!(
            steps("metadata.annotations[\"example.com/x.y\"]"),
            ["metadata", "annotations", "[\"example.com/x.y\"]"]
        );
        assert_eq!(steps("args[2]"), ["args[2]"]);
    }

    use serde_json::json;

    #[test]
    fn formats() {
        let p = key(&key("", "spec"), "containers");
        assert_eq!(
            element(&p, "name", &"nginx".into()),
            "spec.containers[name=nginx]"
        );
        assert_eq!(
            element("ports", "containerPort", &json!(80)),
            "ports[containerPort=80]"
        );
        assert_eq!(
            key("metadata.annotations", "example.com/x"),
            "metadata.annotations[\"example.com/x\"]"
        );
        assert_eq!(key("", "a.b"), "[\"a.b\"]");
        assert_eq!(key("x", ""), "x[\"\"]");
        assert_eq!(index("args", 2), "args[2]");
        assert_eq!(
            parse("spec.containers[name=nginx].ports[0][\"a.b/c\"]"),
            vec![
                Segment::Key("spec".into()),
                Segment::Key("containers".into()),
                Segment::Element("name".into(), "nginx".into()),
                Segment::Key("ports".into()),
                Segment::Index(0),
                Segment::Key("a.b/c".into()),
            ]
        );
    }

    /// A parsed path written again with the writers ([`key`], [`index`],
    /// the `[k=v]` of [`element`]).
    fn render(segs: &[Segment]) -> String {
        segs.iter().fold(String::new(), |acc, s| match s {
            Segment::Key(k) => key(&acc, k),
            Segment::Element(k, v) => format!("{acc}[{k}={v}]"),
            Segment::Index(i) => index(&acc, *i),
        })
    }

    #[test]
    fn parse_inverts_the_writers() {
        let texts = [
            "",
            "spec",
            "spec.template.spec.containers[name=nginx].image",
            "metadata.annotations[\"example.com/x\"]",
            "metadata.labels[\"a.b\"]",
            "data[\"with [brackets]\"]",
            "data[\"quote \\\" and \\\\ back\"]",
            "data[\"\"]",
            "[\"top.level\"].x",
            "spec.ports[containerPort=80].protocol",
            "args[2]",
            "m[0][1]",
            "spec.$setElementOrder",
        ];
        for t in texts {
            let p = parse(t);
            assert_eq!(render(&p), t, "{p:?}");
        }
        // Built by the helpers, then parsed and written again.
        let weird = ["a.b", "x]y", "q\"q", "sp ace", "ünï", "=", ""];
        for k in weird {
            let built = key("metadata.labels", k);
            let p = parse(&built);
            assert_eq!(p.last(), Some(&Segment::Key(k.into())), "{built}");
            assert_eq!(render(&p), built);
        }
        let built = element(&key("spec", "containers"), "name", &json!("web"));
        assert_eq!(render(&parse(&built)), built);
    }

    /// A `FieldPath` is its text to every outside reader (JSON, printing,
    /// order, set look-ups by text) and reads its steps from it.
    #[test]
    fn field_path_is_its_text_with_typed_steps() {
        let texts = [
            "spec.template.spec.containers[name=nginx].image",
            "metadata.annotations[\"example.com/x.y\"]",
            "spec.ports[containerPort=80]",
            "data",
            "[\"top.level\"].x",
            "",
        ];
        for t in texts {
            let p = FieldPath::from(t);
            assert_eq!(p.to_string(), t);
            assert_eq!(
                serde_json::to_string(&p).unwrap(),
                Value::from(t).to_string()
            );
            let back: FieldPath = serde_json::from_str(&Value::from(t).to_string()).unwrap();
            assert_eq!(back, p);
            assert_eq!(p.segments(), parse(t));
            assert_eq!(p.tree_steps(), steps(t));
            // The parent and the last step make the path again.
            if let (Some(parent), Some(last)) = (p.parent(), p.segments().last()) {
                let again = match last {
                    Segment::Key(k) => parent.key(k),
                    Segment::Element(k, v) => FieldPath::new(format!("{parent}[{k}={v}]")),
                    Segment::Index(i) => parent.index(*i),
                };
                assert_eq!(again, p, "{t}");
                assert!(p.is_under(parent.as_str()) || parent.is_root(), "{t}");
            }
        }
        let img = FieldPath::from(texts[0]);
        assert_eq!(img.last(), Some(Step::Key("image".into())));
        assert_eq!(
            img.parent().unwrap(),
            "spec.template.spec.containers[name=nginx]"
        );
        assert_eq!(
            FieldPath::from(texts[1]).parent().unwrap(),
            "metadata.annotations"
        );
        assert_eq!(FieldPath::from("data").parent().unwrap(), "");
        assert_eq!(FieldPath::default().parent(), None);
        assert_eq!(FieldPath::default().last(), None);
        // The writers as methods write what the functions write.
        let c = FieldPath::from("spec").key("containers");
        assert_eq!(
            c.element("name", &json!("web")),
            element("spec.containers", "name", &json!("web"))
        );
        assert_eq!(c.index(2), "spec.containers[2]");
        assert_eq!(
            format!("{:?}", FieldPath::from("a\"b")),
            format!("{:?}", "a\"b")
        );
        // Widths apply as to a string.
        assert_eq!(format!("{:<6}|", FieldPath::from("data")), "data  |");
        // Ordered as the texts are, and found in a set by text.
        let mut paths: Vec<FieldPath> = texts.iter().map(|&t| t.into()).collect();
        paths.sort();
        let mut sorted = texts.to_vec();
        sorted.sort();
        assert_eq!(paths, sorted);
        let set: std::collections::BTreeSet<FieldPath> = paths.into_iter().collect();
        assert!(set.contains("data"));
        let hashed: std::collections::HashSet<FieldPath> = set.into_iter().collect();
        assert!(hashed.contains("spec.ports[containerPort=80]"));
    }

    #[test]
    fn under() {
        assert!(is_under("data", "data"));
        assert!(is_under("data.x", "data"));
        assert!(is_under("data[\"a.b\"]", "data"));
        assert!(!is_under("dataX", "data"));
        assert!(!is_under("metadata.data", "data"));
    }

    #[test]
    fn get_set_remove() {
        let mut v = json!({
            "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}], "args": [1, 2, 3]},
            "metadata": {"labels": {"a.b": "1"}}
        });
        let img = parse("spec.containers[name=a].image");
        assert_eq!(get(&v, &img), Some(&json!("x")));
        assert_eq!(
            get(&v, &parse("metadata.labels[\"a.b\"]")),
            Some(&json!("1"))
        );
        assert_eq!(get(&v, &parse("spec.args[1]")), Some(&json!(2)));
        assert_eq!(get(&v, &parse("spec.containers[name=zz]")), None);

        set(&mut v, &img, json!("y"));
        assert_eq!(get(&v, &img), Some(&json!("y")));
        // Maps are created on the way; a missing keyed element is appended.
        set(&mut v, &parse("metadata.annotations[\"k/x\"]"), json!("v"));
        assert_eq!(v["metadata"]["annotations"]["k/x"], json!("v"));
        set(
            &mut v,
            &parse("spec.containers[name=c]"),
            json!({"name": "c"}),
        );
        assert_eq!(v["spec"]["containers"][2], json!({"name": "c"}));
        // A missing index is not created.
        set(&mut v, &parse("spec.args[9]"), json!(0));
        assert_eq!(v["spec"]["args"], json!([1, 2, 3]));
        set(&mut v, &[], json!(1));
        assert_eq!(v, json!(1));

        let mut v = json!({"a": {"b": 1, "c": [{"k": 1}, {"k": 2}], "d": [5, 6]}});
        remove(&mut v, &parse("a.b"));
        remove(&mut v, &parse("a.c[k=1]"));
        remove(&mut v, &parse("a.d[0]"));
        remove(&mut v, &parse("a.d[7]"));
        remove(&mut v, &parse("x.y"));
        assert_eq!(v, json!({"a": {"c": [{"k": 2}], "d": [6]}}));
    }

    /// `get` and `remove` over parsed segments agree with the step
    /// functions over the borrowed steps of the same text.
    #[test]
    fn segments_and_steps_agree() {
        let v = json!({
            "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}],
                     "ports": [{"containerPort": 80}, {"containerPort": "80"}],
                     "flags": [{"on": true}, {"on": null}],
                     "args": [1, 2, 3]},
            "metadata": {"labels": {"a.b": "1", "q\"q": "2"}},
            "x": 5
        });
        let paths = [
            "",
            "spec",
            "spec.containers[name=a].image",
            "spec.containers[name=b]",
            "spec.containers[name=zz]",
            "spec.containers[1].name",
            "spec.containers[9]",
            "spec.ports[containerPort=80]",
            "spec.ports[containerPort=\"80\"]",
            "spec.flags[on=true]",
            "spec.flags[on=null]",
            "spec.args[0]",
            "spec.args.x",
            "metadata.labels[\"a.b\"]",
            "metadata.labels[\"q\\\"q\"]",
            "x.y",
            "x[0]",
            "nope[name=a]",
        ];
        for p in paths {
            let by_steps = read(p).try_fold(&v, |cur, (s, _)| get_step(cur, &s));
            assert_eq!(get(&v, &parse(p)), by_steps, "get {p}");

            let mut by_segs = v.clone();
            remove(&mut by_segs, &parse(p));
            let mut by_steps = v.clone();
            let steps: Vec<Step> = read(p).map(|(s, _)| s).collect();
            if let Some((last, parent)) = steps.split_last()
                && let Some(cur) = parent
                    .iter()
                    .try_fold(&mut by_steps, |cur, s| get_step_mut(cur, s))
            {
                remove_step(cur, last);
            }
            assert_eq!(by_segs, by_steps, "remove {p}");
        }
    }

    /// The text of a list element's key value, for values of every kind:
    /// strings bare (nothing escaped), other scalars and whole elements
    /// (lists without a merge key, several keys) as compact JSON with
    /// sorted keys.
    #[test]
    fn element_value_writes_each_kind_of_value() {
        let cases = [
            (json!("nginx"), "nginx"),
            (json!(""), ""),
            (json!("a b\"c"), "a b\"c"),
            (json!("back\\slash\ttab\nline"), "back\\slash\ttab\nline"),
            (json!("ünï/cødé=x"), "ünï/cødé=x"),
            (json!("80"), "80"),
            (json!(80), "80"),
            (json!(0), "0"),
            (json!(-1.5), "-1.5"),
            (json!(2.0), "2.0"),
            (json!(1e21), "1e+21"),
            (json!(u64::MAX), "18446744073709551615"),
            (json!(i64::MIN), "-9223372036854775808"),
            (json!(true), "true"),
            (json!(false), "false"),
            (json!(null), "null"),
            (
                json!({"protocol": "TCP", "containerPort": 80}),
                r#"{"containerPort":80,"protocol":"TCP"}"#,
            ),
            (
                json!({"name": "a\"b", "ports": [1, {"x": null}]}),
                r#"{"name":"a\"b","ports":[1,{"x":null}]}"#,
            ),
            (json!(["a", 1, true]), r#"["a",1,true]"#),
            (json!({}), "{}"),
        ];
        for (v, want) in &cases {
            assert_eq!(element_value(v), *want, "{v}");
            // Appended after what is there, nothing else touched.
            let mut out = String::from("spec.ports[port=");
            push_element_value(&mut out, v);
            assert_eq!(out, format!("spec.ports[port={want}"), "{v}");
        }
        assert_eq!(
            element("spec.containers", "name", &json!("nginx")),
            "spec.containers[name=nginx]"
        );
        assert_eq!(
            element("spec.ports", "containerPort", &json!(8080)),
            "spec.ports[containerPort=8080]"
        );
        assert_eq!(
            element("spec.env", "name", &json!("A \"B\"")),
            "spec.env[name=A \"B\"]"
        );
    }

    /// A path's element text names the element whose key is written so,
    /// and no other: a prefix, an extension or another type's text does not.
    #[test]
    fn element_matches_the_written_value_only() {
        let el = |v: Value| json!({"k": v, "other": 1});
        assert!(element_matches(&el(json!("nginx")), "k", "nginx"));
        assert!(element_matches(&el(json!("a b\"c")), "k", "a b\"c"));
        assert!(element_matches(&el(json!(80)), "k", "80"));
        assert!(element_matches(&el(json!(-1.5)), "k", "-1.5"));
        assert!(element_matches(&el(json!(true)), "k", "true"));
        assert!(element_matches(&el(json!(null)), "k", "null"));
        assert!(element_matches(
            &el(json!({"b": 2, "a": "x"})),
            "k",
            r#"{"a":"x","b":2}"#
        ));
        for (v, not) in [
            (json!(80), "8"),
            (json!(80), "800"),
            (json!(80), "80 "),
            (json!(80), ""),
            (json!(-1.5), "-1.50"),
            (json!(true), "True"),
            (json!("nginx"), "ngin"),
            (json!("nginx"), "\"nginx\""),
            (json!({"a": 1}), r#"{"a": 1}"#),
        ] {
            assert!(!element_matches(&el(v.clone()), "k", not), "{v} vs {not:?}");
        }
        // The key missing, or another key.
        assert!(!element_matches(&json!({"other": 80}), "k", "80"));
        assert!(!element_matches(&el(json!(80)), "other", "80"));
    }
}
