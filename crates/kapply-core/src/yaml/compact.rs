//! Live objects from a JSON stream of objects and lists of objects
//! (`kubectl get -o json`) without keeping its text: [`Compactor`] drops
//! the white space (over half of kubectl's indented output) as the text is
//! read, in chunks, and [`objects`] walks what is left once, checking it
//! and finding each object's place and identity. Each object is parsed
//! later from that compact text. The walk gives up (`None`) on any text
//! serde_json would refuse and on the few things it cannot be sure
//! serde_json reads (lone surrogate escapes, huge numbers, deep nesting,
//! serde_json's raw-value key), so
//! that whatever it hands on, serde_json reads as it would have read the
//! whole file.

use std::borrow::Cow;
use std::ops::Range;

/// Nesting allowed (serde_json refuses beyond 128).
const MAX_DEPTH: usize = 100;

/// Where a [`Compactor`] is in the text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum At {
    Between,
    InString,
    /// Just after a backslash in a string.
    Escaped,
}

/// JSON text without its white space outside strings, fed in chunks.
pub(crate) struct Compactor {
    out: Vec<u8>,
    at: At,
    /// White space was left out since the last byte kept.
    gap: bool,
    /// White space stood between two bytes of numbers or words (`1 2`,
    /// `tr ue`): not JSON, and it would be without the white space.
    joined: bool,
}

impl Compactor {
    /// `capacity`: the text's length, if known (memory only reserved, not
    /// touched, so the compact text never has to be copied to grow).
    pub fn new(capacity: usize) -> Compactor {
        Compactor {
            out: Vec::with_capacity(capacity),
            at: At::Between,
            gap: false,
            joined: false,
        }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        let mut i = 0;
        while i < chunk.len() {
            match self.at {
                At::InString => match memchr::memchr2(b'"', b'\\', &chunk[i..]) {
                    None => {
                        self.out.extend_from_slice(&chunk[i..]);
                        i = chunk.len();
                    }
                    Some(n) => {
                        self.out.extend_from_slice(&chunk[i..=i + n]);
                        self.at = match chunk[i + n] {
                            b'"' => At::Between,
                            _ => At::Escaped,
                        };
                        i += n + 1;
                    }
                },
                At::Escaped => {
                    self.out.push(chunk[i]);
                    self.at = At::InString;
                    i += 1;
                }
                At::Between => {
                    let start = i;
                    while let Some(&c) = chunk.get(i)
                        && !matches!(c, b' ' | b'\n' | b'\t' | b'\r' | b'"')
                    {
                        i += 1;
                    }
                    if i > start {
                        if self.gap
                            && self.out.last().is_some_and(|&c| word(c))
                            && word(chunk[start])
                        {
                            self.joined = true;
                        }
                        self.gap = false;
                        self.out.extend_from_slice(&chunk[start..i]);
                    }
                    match chunk.get(i) {
                        None => {}
                        Some(b'"') => {
                            self.gap = false;
                            self.out.push(b'"');
                            self.at = At::InString;
                            i += 1;
                        }
                        Some(_) => {
                            self.gap = true;
                            i = skip_white(chunk, i);
                        }
                    }
                }
            }
        }
    }

    /// The compact text; `None` where leaving out white space joined two
    /// tokens, or the text is not UTF-8.
    pub fn finish(self) -> Option<String> {
        if self.joined {
            return None;
        }
        String::from_utf8(self.out).ok()
    }
}

/// A byte of a number or a word (`true`, `null`), or of something that is
/// not JSON: anything but structure, a quote and white space.
fn word(c: u8) -> bool {
    !matches!(
        c,
        b'{' | b'}' | b'[' | b']' | b',' | b':' | b'"' | b' ' | b'\n' | b'\t' | b'\r'
    )
}

/// Past the JSON white space of `b` from `i` (runs of spaces, kubectl's
/// indentation, eight at a time).
fn skip_white(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\t' | b'\r') = b.get(i) {
        i += 1;
        while let Some(c) = b.get(i..).and_then(|r| r.first_chunk::<8>()) {
            let other = u64::from_le_bytes(*c) ^ u64::from_le_bytes([b' '; 8]);
            if other != 0 {
                i += (other.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
        }
    }
    i
}

/// What an object says of its identity: its strings (`None`: absent or
/// not a string), of repeated keys the last, as in a parsed `Value`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Ident {
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
    /// apiVersion or kind is there (an item with neither takes its list's).
    pub has_type: bool,
}

/// One document of the stream and the objects it holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Doc {
    /// For a list (its last `items` is an array): its apiVersion and kind,
    /// empty where they are not strings.
    pub list: Option<(String, String)>,
    /// The document itself, or a list's items (none for `items: null`):
    /// each one's range in the text and identity.
    pub objects: Vec<(Range<usize>, Ident)>,
}

/// The documents of `text` (after a byte order mark, if any), each an
/// object: `None` for anything else, or anything [`Walk`] gives up on.
pub(crate) fn objects(text: &str) -> Option<Vec<Doc>> {
    let start = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let mut w = Walk {
        text,
        b: text.as_bytes(),
        pos: start,
    };
    let mut docs = Vec::new();
    w.ws();
    if w.peek() != Some(b'{') {
        return None;
    }
    while w.peek().is_some() {
        if w.peek() != Some(b'{') {
            return None;
        }
        docs.push(w.doc()?);
        w.ws();
    }
    Some(docs)
}

/// What the last `items` key of a document holds.
enum Items {
    List(Vec<(Range<usize>, Ident)>),
    Null,
    Other,
}

/// A walk over JSON text.
struct Walk<'a> {
    text: &'a str,
    b: &'a [u8],
    pos: usize,
}

impl Walk<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    /// Skips JSON white space.
    fn ws(&mut self) {
        self.pos = skip_white(self.b, self.pos);
    }

    /// A document (at its `{`): the objects it holds.
    fn doc(&mut self) -> Option<Doc> {
        let start = self.pos;
        let (ident, items) = self.object_ident(1, true)?;
        let end = self.pos;
        Some(match items {
            None => Doc {
                list: None,
                objects: vec![(start..end, ident)],
            },
            Some(Items::Null) => Doc {
                list: None,
                objects: Vec::new(),
            },
            Some(Items::Other) => return None,
            Some(Items::List(objects)) => Doc {
                list: Some((
                    ident.api_version.unwrap_or_default(),
                    ident.kind.unwrap_or_default(),
                )),
                objects,
            },
        })
    }

    /// An object (at its `{`) and its identity; at the top, what its last
    /// `items` key holds too.
    fn object_ident(&mut self, depth: usize, top: bool) -> Option<(Ident, Option<Items>)> {
        let mut id = Ident::default();
        let mut items = None;
        self.object(depth, |w, key| {
            match key.as_ref() {
                "apiVersion" => {
                    id.has_type = true;
                    id.api_version = w.loose_str(depth)?;
                }
                "kind" => {
                    id.has_type = true;
                    id.kind = w.loose_str(depth)?;
                }
                "metadata" => (id.name, id.namespace) = w.metadata(depth)?,
                "items" if top => {
                    items = Some(match w.peek()? {
                        b'[' => Items::List(w.items(depth + 1)?),
                        b'n' => {
                            w.literal(b"null")?;
                            Items::Null
                        }
                        _ => {
                            w.value(depth)?;
                            Items::Other
                        }
                    })
                }
                _ => w.value(depth)?,
            }
            Some(())
        })?;
        Some((id, items))
    }

    /// A list's items (at its `[`), each an object.
    fn items(&mut self, depth: usize) -> Option<Vec<(Range<usize>, Ident)>> {
        let mut out = Vec::new();
        self.array(depth, |w| {
            if w.peek()? != b'{' {
                return None;
            }
            let start = w.pos;
            let (ident, _) = w.object_ident(depth + 1, false)?;
            out.push((start..w.pos, ident));
            Some(())
        })?;
        Some(out)
    }

    /// `metadata`'s value: its name and namespace strings.
    fn metadata(&mut self, depth: usize) -> Option<(Option<String>, Option<String>)> {
        let (mut name, mut namespace) = (None, None);
        if self.peek()? == b'{' {
            self.object(depth + 1, |w, key| {
                match key.as_ref() {
                    "name" => name = w.loose_str(depth + 1)?,
                    "namespace" => namespace = w.loose_str(depth + 1)?,
                    _ => w.value(depth + 1)?,
                }
                Some(())
            })?;
        } else {
            self.value(depth)?;
        }
        Some((name, namespace))
    }

    /// A value inside a container at `depth`: the string it is, if it is one.
    fn loose_str(&mut self, depth: usize) -> Option<Option<String>> {
        if self.peek()? != b'"' {
            self.value(depth)?;
            return Some(None);
        }
        let r = self.string()?;
        Some(Some(string_value(&self.text[r])?.into_owned()))
    }

    /// Any value (at its first byte) inside a container at `depth`.
    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(depth + 1, |w, _| w.value(depth + 1)),
            b'[' => self.array(depth + 1, |w| w.value(depth + 1)),
            b'"' => self.string().map(drop),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// An object (at its `{`), each key and its value (at its first byte)
    /// handed to `field`, which walks the value.
    fn object(
        &mut self,
        depth: usize,
        mut field: impl FnMut(&mut Self, Cow<'_, str>) -> Option<()>,
    ) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        self.ws();
        if self.peek()? == b'}' {
            self.pos += 1;
            return Some(());
        }
        let text = self.text;
        loop {
            if self.peek()? != b'"' {
                return None;
            }
            let key = self.string()?;
            self.ws();
            if self.peek()? != b':' {
                return None;
            }
            self.pos += 1;
            self.ws();
            let key = string_value(&text[key])?;
            if key == crate::jsonread::RAW_VALUE_KEY {
                return None;
            }
            field(self, key)?;
            self.ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.ws();
                }
                b'}' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An array (at its `[`), each element (at its first byte) walked by
    /// `element`.
    fn array(
        &mut self,
        depth: usize,
        mut element: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        self.ws();
        if self.peek()? == b']' {
            self.pos += 1;
            return Some(());
        }
        loop {
            element(self)?;
            self.ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.ws();
                }
                b']' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.b[self.pos..]
            .starts_with(word)
            .then(|| self.pos += word.len())
    }

    /// A number as JSON writes it. Given up on where serde_json might find
    /// it out of range: over 100 digits, or an exponent of more than two.
    fn number(&mut self) -> Option<()> {
        let b = self.b;
        let mut p = self.pos;
        let digits = |p: &mut usize| {
            let start = *p;
            while let Some(b'0'..=b'9') = b.get(*p) {
                *p += 1;
            }
            *p - start
        };
        if b.get(p) == Some(&b'-') {
            p += 1;
        }
        let mut n = match b.get(p)? {
            b'0' => {
                p += 1;
                1
            }
            b'1'..=b'9' => digits(&mut p),
            _ => return None,
        };
        if b.get(p) == Some(&b'.') {
            p += 1;
            match digits(&mut p) {
                0 => return None,
                d => n += d,
            }
        }
        if let Some(b'e' | b'E') = b.get(p) {
            p += 1;
            if let Some(b'+' | b'-') = b.get(p) {
                p += 1;
            }
            if !(1..=2).contains(&digits(&mut p)) {
                return None;
            }
        }
        (n <= 100).then(|| self.pos = p)
    }

    /// A string (at its opening quote): its range, quotes included. As
    /// serde_json: no control characters, only JSON's escapes; a surrogate
    /// escape only as the first of a pair (what serde_json refuses is given
    /// up on).
    fn string(&mut self) -> Option<Range<usize>> {
        let start = self.pos;
        self.pos += 1;
        loop {
            self.pos += crate::jsonread::plain_len(&self.b[self.pos..]);
            match self.peek()? {
                b'"' => {
                    self.pos += 1;
                    return Some(start..self.pos);
                }
                b'\\' => match self.b.get(self.pos + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.pos += 2,
                    b'u' => {
                        let unit = |at: usize| hex4(self.b.get(at..at + 4)?);
                        self.pos += match unit(self.pos + 2)? {
                            // A high surrogate: serde_json pairs it with a
                            // low one escaped right after, else refuses.
                            0xD800..=0xDBFF => {
                                let low = (self.b.get(self.pos + 6..self.pos + 8)? == b"\\u")
                                    .then(|| unit(self.pos + 8))??;
                                if !(0xDC00..=0xDFFF).contains(&low) {
                                    return None;
                                }
                                12
                            }
                            0xDC00..=0xDFFF => return None,
                            _ => 6,
                        };
                    }
                    _ => return None,
                },
                // A control character.
                _ => return None,
            }
        }
    }
}

/// The code unit four hex digits write (`\uXXXX`).
fn hex4(b: &[u8]) -> Option<u16> {
    b.iter().try_fold(0u16, |n, &c| {
        Some(n << 4 | (c as char).to_digit(16)? as u16)
    })
}

/// The string a checked JSON string (quotes included) stands for.
fn string_value(raw: &str) -> Option<Cow<'_, str>> {
    if raw.contains('\\') {
        serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(&raw[1..raw.len() - 1]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compact text of `text`, fed in chunks of `n` bytes.
    fn compact(text: &str, n: usize) -> Option<String> {
        let mut c = Compactor::new(0);
        text.as_bytes().chunks(n).for_each(|chunk| c.push(chunk));
        c.finish()
    }

    #[test]
    fn compacts_in_any_chunks() {
        let text = "\u{feff}{\n  \"a b\": [1, 2.5e+3 , true,\tnull],\r\n  \"s\": \"x \\\" \\\\ y\\u0020 \u{e9}\",\n        \"o\": { }\n}\n  {}";
        let want = "\u{feff}{\"a b\":[1,2.5e+3,true,null],\"s\":\"x \\\" \\\\ y\\u0020 \u{e9}\",\"o\":{}}{}";
        for n in [1, 2, 3, 7, 8, 9, 64, 4096] {
            assert_eq!(compact(text, n).as_deref(), Some(want), "chunks of {n}");
        }
        // Tokens the white space kept apart are not joined.
        for text in [
            "[1 2]",
            "[tr ue]",
            "[- 1]",
            "[1 .5]",
            "{\"a\": 1\n2}",
            "[1\te5]",
        ] {
            assert_eq!(compact(text, 1), None, "{text}");
            assert_eq!(compact(text, 64), None, "{text}");
        }
        assert_eq!(
            compact("[\"a\" 1, 1 \"b\"]", 1).as_deref(),
            Some("[\"a\"1,1\"b\"]")
        );
        // Broken UTF-8 is refused, across chunks too.
        let mut c = Compactor::new(0);
        c.push(b"[\"\xc3");
        c.push(b"\"]");
        assert_eq!(c.finish(), None);
    }

    #[test]
    fn identifies() {
        let text = compact("\u{feff}{\n  \"kind\": \"List\",\n  \"apiVersion\": \"v1\",\n  \"items\": [\n    {\"kind\" : \"ConfigMap\", \"metadata\": {\"name\": \"a\\u0062\", \"namespace\": 3},\n     \"data\": {\"k\": \" spaced \\\" \"}, \"n\": [1, -0.5e+10, true, false, null, {}, []]}\n  ]\n}\n{\"metadata\": [\"x\"]}", 5).unwrap();
        let docs = objects(&text).unwrap();
        assert_eq!(docs.len(), 2);
        let list = &docs[0];
        assert_eq!(list.list, Some(("v1".into(), "List".into())));
        let (r, id) = &list.objects[0];
        assert_eq!(
            &text[r.clone()],
            "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\\u0062\",\"namespace\":3},\"data\":{\"k\":\" spaced \\\" \"},\"n\":[1,-0.5e+10,true,false,null,{},[]]}"
        );
        assert_eq!(
            id,
            &Ident {
                api_version: None,
                kind: Some("ConfigMap".into()),
                name: Some("ab".into()),
                namespace: None,
                has_type: true,
            }
        );
        let (r, id) = &docs[1].objects[0];
        assert_eq!(&text[r.clone()], "{\"metadata\":[\"x\"]}");
        assert_eq!(id, &Ident::default());
    }

    #[test]
    fn gives_up_where_serde_json_may_refuse() {
        for text in [
            "[]",
            "{\"a\": 1,}",
            "{\"a\": [1,]}",
            "{\"a\": 01}",
            "{\"a\": 1.}",
            "{\"a\": 1e}",
            "{\"a\": 1e400}",
            "{\"a\": -}",
            "{\"a\": tru}",
            "{\"a\": nul}",
            "{\"a\": \"\\ud800\"}",
            "{\"a\": \"\\udc00\"}",
            "{\"a\": \"\\ud800\\u0041\"}",
            "{\"a\": \"\\ud800x\"}",
            "{\"a\": \"\\ud800\\ud800\"}",
            "{\"$serde_json::private::RawValue\": \"[1]\"}",
            "{\"a\": {\"$serde_json::private::RawValue\": \"1\"}}",
            "{\"a\": \"\\x\"}",
            "{\"a\": \"\\u12g4\"}",
            "{\"a\": \"tab\there\"}",
            "{\"a\" 1}",
            "{a: 1}",
            "{\"a\": 1} x",
            "{\"a\": 1",
            "{\"items\": 3}",
            "{\"items\": [1]}",
        ] {
            assert!(objects(text).is_none(), "{text}");
        }
        let deep = format!(
            "{{\"a\": {}{}}}",
            "[".repeat(MAX_DEPTH),
            "]".repeat(MAX_DEPTH)
        );
        assert!(objects(&deep).is_none());
        let fine = format!("{{\"a\": {}{}}}", "[".repeat(90), "]".repeat(90));
        assert!(objects(&fine).is_some());
        // A surrogate pair, either case, as serde_json pairs it.
        let pair = "{\"a\": \"x\\ud83d\\ude00y\", \"\\uD83D\\uDE00\": 1}";
        assert!(objects(pair).is_some());
        assert!(serde_json::from_str::<serde_json::Value>(pair).is_ok());
    }
}
