//! JSON text read into a serde_json [`Value`], faster than serde's own
//! reader for the documents every plan reads (a manifest's packed config,
//! a changed last-applied annotation): it parses the plain forms those are
//! made of directly, without serde's visitors. No I/O.
//!
//! Only the plain forms are read here: strings without escapes,
//! non-negative integers that fit a u64, `true`, `false`, `null`, maps and
//! lists nested less than [`DEPTH`]. A document with anything else (an
//! escape, a sign, a fraction or exponent, deeper nesting, invalid JSON)
//! is read by serde_json whole, so every value and every error is exactly
//! serde_json's.

use serde_json::{Map, Value};

/// The key serde_json (with its `raw_value` feature, which this crate
/// enables) reads specially: a map whose first key it is stands for the
/// JSON text in its value. Readers of our own leave such text to serde_json.
pub(crate) const RAW_VALUE_KEY: &str = "$serde_json::private::RawValue";

/// Nesting read here; deeper documents go to serde_json (its limit is 128).
const DEPTH: usize = 100;

/// `serde_json::from_str::<Value>(text)`, the same result.
pub fn from_str(text: &str) -> serde_json::Result<Value> {
    let mut r = Reader::new(text);
    match r.document() {
        Some(v) => Ok(v),
        None => serde_json::from_str(text),
    }
}

/// Where `"annotations":{}` goes in the text of an object whose top-level
/// `metadata` is a map: at byte `at`, written as `text` (with the comma
/// its neighbours need). Keys are in the order the text has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnnotationsAt {
    pub at: usize,
    pub text: &'static str,
}

/// [`from_str`], and, when the text is plain (so its map keys are written
/// as they read: no escapes), compact, with every map's keys sorted and
/// once (as serde_json writes a value) and its top-level `metadata` a map,
/// where an `annotations` key would go among that map's keys.
pub fn from_str_marked(text: &str) -> serde_json::Result<(Value, Option<AnnotationsAt>)> {
    let mut r = Reader::new(text);
    r.mark = Mark::Looking;
    match r.document() {
        Some(v) => {
            let at = match r.mark {
                Mark::Found(at) if !r.not_compact => Some(at),
                _ => None,
            };
            Ok((v, at))
        }
        None => serde_json::from_str(text).map(|v| (v, None)),
    }
}

/// [`from_str_marked`]'s search for the top-level `metadata` map.
#[derive(Clone, Copy)]
enum Mark {
    /// Not asked for.
    Off,
    Looking,
    /// The next value read is the top-level `metadata`.
    Next,
    Found(AnnotationsAt),
}

struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    mark: Mark,
    /// Whitespace, or a map's keys out of order or repeated, were read:
    /// the text is not serde_json's of the value (for [`Mark`]).
    not_compact: bool,
}

impl<'a> Reader<'a> {
    fn new(text: &'a str) -> Reader<'a> {
        Reader {
            text,
            bytes: text.as_bytes(),
            at: 0,
            mark: Mark::Off,
            not_compact: false,
        }
    }

    /// One value and nothing after it but whitespace; `None`: not plain.
    fn document(&mut self) -> Option<Value> {
        let v = self.value(0)?;
        self.skip_ws();
        (self.at == self.bytes.len()).then_some(v)
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
            self.not_compact = true;
        }
    }

    /// The next byte after whitespace, consumed.
    fn next_byte(&mut self) -> Option<u8> {
        let mut b = *self.bytes.get(self.at)?;
        // Compact text has none: one test for the common case.
        if b <= b' ' {
            self.skip_ws();
            b = *self.bytes.get(self.at)?;
        }
        self.at += 1;
        Some(b)
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        match self.next_byte()? {
            b'{' if depth < DEPTH => self.map(depth).map(Value::Object),
            b'[' if depth < DEPTH => self.list(depth).map(Value::Array),
            b'"' => self.string().map(|s| Value::String(s.to_owned())),
            b't' => self.word(b"rue", Value::Bool(true)),
            b'f' => self.word(b"alse", Value::Bool(false)),
            b'n' => self.word(b"ull", Value::Null),
            b'0'..=b'9' => self.integer(),
            _ => None,
        }
    }

    /// After `{`. Keys inserted in turn, as serde_json does: a repeated
    /// key keeps its last value.
    fn map(&mut self, depth: usize) -> Option<Map<String, Value>> {
        let mut m = Map::new();
        // The top-level `metadata` map: where `annotations` goes in it is
        // marked (the first key after it, else the closing brace).
        let marking = matches!(self.mark, Mark::Next);
        if marking {
            self.mark = Mark::Looking;
        }
        let mut found = None;
        let checking = !matches!(self.mark, Mark::Off);
        let mut last: Option<&str> = None;
        self.skip_ws();
        if self.bytes.get(self.at) == Some(&b'}') {
            self.at += 1;
            if marking {
                self.mark = Mark::Found(AnnotationsAt {
                    at: self.at - 1,
                    text: "\"annotations\":{}",
                });
            }
            return Some(m);
        }
        loop {
            if self.next_byte()? != b'"' {
                return None;
            }
            let key_at = self.at - 1;
            let key = self.string()?;
            // serde_json (raw_value feature) reads a map whose first key is
            // this token as the JSON text in its value: left to serde_json.
            if m.is_empty() && key == RAW_VALUE_KEY {
                return None;
            }
            if self.next_byte()? != b':' {
                return None;
            }
            if checking {
                if last.is_some_and(|l| l >= key) {
                    self.not_compact = true;
                }
                last = Some(key);
            }
            if marking && found.is_none() && key > "annotations" {
                found = Some(AnnotationsAt {
                    at: key_at,
                    text: "\"annotations\":{},",
                });
            }
            // A repeated `metadata` key: the last one is the value read.
            let top_metadata = depth == 0 && !matches!(self.mark, Mark::Off) && key == "metadata";
            if top_metadata {
                self.mark = Mark::Next;
            }
            let v = self.value(depth + 1)?;
            if top_metadata && matches!(self.mark, Mark::Next) {
                // Not a map.
                self.mark = Mark::Looking;
            }
            m.insert(key.to_owned(), v);
            match self.next_byte()? {
                b',' => {}
                b'}' => {
                    if marking {
                        self.mark = Mark::Found(found.unwrap_or(AnnotationsAt {
                            at: self.at - 1,
                            text: ",\"annotations\":{}",
                        }));
                    }
                    return Some(m);
                }
                _ => return None,
            }
        }
    }

    /// After `[`.
    fn list(&mut self, depth: usize) -> Option<Vec<Value>> {
        let mut items = Vec::new();
        self.skip_ws();
        if self.bytes.get(self.at) == Some(&b']') {
            self.at += 1;
            return Some(items);
        }
        loop {
            items.push(self.value(depth + 1)?);
            match self.next_byte()? {
                b',' => {}
                b']' => return Some(items),
                _ => return None,
            }
        }
    }

    /// After the opening `"`: the text up to the closing one, when it has
    /// no escape and no control character (which JSON forbids raw).
    fn string(&mut self) -> Option<&'a str> {
        let start = self.at;
        let len = plain_len(&self.bytes[start..]);
        if self.bytes.get(start + len) != Some(&b'"') {
            return None;
        }
        self.at = start + len + 1;
        // Both ends are ASCII quotes: character boundaries.
        Some(&self.text[start..start + len])
    }

    /// The rest of `true`, `false` or `null` after its first letter.
    fn word(&mut self, rest: &[u8], v: Value) -> Option<Value> {
        let end = self.at + rest.len();
        (self.bytes.get(self.at..end)? == rest).then(|| {
            self.at = end;
            v
        })
    }

    /// After its first digit: a whole number that fits a u64 (what
    /// serde_json reads as one); fractions and exponents are not plain.
    fn integer(&mut self) -> Option<Value> {
        let start = self.at - 1;
        while let Some(b'0'..=b'9') = self.bytes.get(self.at) {
            self.at += 1;
        }
        let digits = &self.text[start..self.at];
        // A leading zero is invalid JSON: serde_json says so.
        if (digits.len() > 1 && digits.starts_with('0'))
            || matches!(self.bytes.get(self.at), Some(b'.' | b'e' | b'E'))
        {
            return None;
        }
        digits.parse::<u64>().ok().map(Value::from)
    }
}

/// How many bytes of `b` come before a quote, a backslash or a control
/// character: the plain run of a string's text. Eight bytes at a time (a
/// byte is flagged where subtracting from it borrows; the lowest flag is
/// always a true one), the rest one by one.
pub(crate) fn plain_len(b: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH;
    let mut i = 0;
    while let Some(word) = b.get(i..).and_then(|r| r.first_chunk::<8>()) {
        let x = u64::from_le_bytes(*word);
        let m = below(x, 0x20)
            | below(x ^ (ONES * u64::from(b'"')), 1)
            | below(x ^ (ONES * u64::from(b'\\')), 1);
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + b[i..]
        .iter()
        .take_while(|&&c| !(c < 0x20 || c == b'"' || c == b'\\'))
        .count()
}

/// The closing quote of the string whose text starts at `from` (just after
/// its opening quote): its index, and whether an escape came before it.
/// Escapes are stepped over whole (`\"` does not close); nothing else is
/// checked (what the string holds is serde_json's to judge). `None`: the
/// text ends first.
pub(crate) fn string_close(b: &[u8], from: usize) -> Option<(usize, bool)> {
    let mut at = from;
    let mut escaped = false;
    loop {
        at += memchr::memchr2(b'"', b'\\', b.get(at..)?)?;
        if b[at] == b'"' {
            return Some((at, escaped));
        }
        escaped = true;
        at += 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every document reads as serde_json reads it, plain or not, valid
    /// or not (errors alike).
    #[test]
    fn reads_what_serde_json_reads() {
        let docs = [
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web"},"annotations":{}},"spec":{"replicas":2,"paused":false,"x":null,"list":[1,"a",true,[],{}]}}"#,
            " { \"a\" : [ 1 , 2 ] ,\n\t\"b\" : { } }\r\n",
            r#"{"b":1,"a":2,"b":3}"#,
            r#"{"a":"é ünïcödé ✓ 😀"}"#,
            r#"{"a":"esc\"aped\n","b":"\u00e9"}"#,
            r#"{"n":-1,"f":1.5,"e":1e3,"z":0,"big":18446744073709551615,"bigger":18446744073709551616}"#,
            r#"{"neg0":-0,"frac0":0.0}"#,
            r#"{"$serde_json::private::RawValue":"[1]"}"#,
            r#"{"a":{"$serde_json::private::RawValue":"{\"b\":2}"}}"#,
            "[]",
            "{}",
            "\"x\"",
            "123",
            "true",
            "null",
            "",
            " ",
            "{",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "[01]",
            "[1 2]",
            "{\"a\":tru}",
            "{\"a\":truex}",
            "[nul]",
            "{\"a\":1} x",
            "{\"a\":\"raw\ttab\"}",
            "{\"a\":\"unterminated}",
            "[1.]",
            "[-]",
            "[+1]",
            "{1:2}",
        ];
        for doc in docs {
            // Marking changes nothing read.
            let marked = from_str_marked(doc).map(|(v, _)| v);
            assert_eq!(
                marked.map_err(|e| e.to_string()),
                from_str(doc).map_err(|e| e.to_string()),
                "{doc:?}"
            );
            let ours = from_str(doc);
            let theirs = serde_json::from_str::<Value>(doc);
            match (&ours, &theirs) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{doc:?}"),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{doc:?}"),
                _ => panic!("{doc:?}: {ours:?} vs {theirs:?}"),
            }
        }
    }

    /// The word-at-a-time search finds what a byte-by-byte one finds, at
    /// every place and alignment.
    #[test]
    fn plain_len_is_the_first_stop_byte() {
        let slow = |b: &[u8]| {
            b.iter()
                .position(|&c| c < 0x20 || c == b'"' || c == b'\\')
                .unwrap_or(b.len())
        };
        let mut text: Vec<u8> = (0u8..=255).collect();
        text.extend(b"plain text, no stop in it at all \xe2\x80\xa8 \x7f~!");
        for stop in [b'"', b'\\', 0, 0x1f, b'\n'] {
            for at in 0..40 {
                let mut t = b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH".to_vec();
                t[at] = stop;
                for from in 0..t.len() {
                    assert_eq!(
                        plain_len(&t[from..]),
                        slow(&t[from..]),
                        "{stop} {at} {from}"
                    );
                }
            }
        }
        for from in 0..text.len() {
            assert_eq!(plain_len(&text[from..]), slow(&text[from..]));
        }
        assert_eq!(plain_len(b""), 0);
        assert_eq!(plain_len(b"no end here"), 11);
    }

    #[test]
    fn plain_len_finds_the_first_special_byte() {
        for s in [
            "",
            "abc",
            "abcdefghijklmnop\"",
            "abcdefgh\\ijk",
            "abc\u{1}def",
            "héllo wörld, ünïcode \u{1f600}\"",
            "\u{7f}\u{80}xxxxxxxxxxxx\u{1f}",
            "\"",
            "\u{0}",
        ] {
            let want = s
                .bytes()
                .position(|c| c == b'"' || c == b'\\' || c < 0x20)
                .unwrap_or(s.len());
            assert_eq!(plain_len(s.as_bytes()), want, "{s:?}");
        }
    }

    use proptest::prelude::*;

    /// Any JSON value: strings with escapes, controls, quotes, non-ASCII
    /// and the raw-value key; numbers of every kind; nested maps and lists.
    fn value() -> impl Strategy<Value = Value> {
        let text = prop_oneof![
            4 => "[a-z]{0,12}",
            2 => "[\\x00-\\x7f]{0,12}",
            1 => "\\PC{0,6}",
            1 => prop::sample::select(vec![
                "\"".to_string(), "\\".to_string(), "\u{2028}".to_string(),
                RAW_VALUE_KEY.to_string(),
            ]),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            Just(Value::from(1.0)),
            text.clone().prop_map(Value::from),
        ];
        leaf.prop_recursive(5, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(text.clone(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Every string of `v` (map keys and string values) in the order
    /// serde_json writes them.
    fn strings(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            Value::Object(m) => {
                for (k, x) in m {
                    out.push(k.clone());
                    strings(x, out);
                }
            }
            _ => {}
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// On what serde_json writes of any value (compact and indented):
        /// the reader reads what serde_json reads; stepping from string to
        /// string with [`string_close`] finds exactly the strings serde_json
        /// wrote, in order, the escape flag telling which have one; and
        /// [`plain_len`] of each stops where its first escape is.
        #[test]
        fn scanning_agrees_with_serde_json(v in value()) {
            for text in [serde_json::to_string(&v).unwrap(), serde_json::to_string_pretty(&v).unwrap()] {
                let ours = from_str(&text).map_err(|e| e.to_string());
                let theirs = serde_json::from_str::<Value>(&text).map_err(|e| e.to_string());
                prop_assert_eq!(&ours, &theirs, "{}", text);
                let b = text.as_bytes();
                let mut found = vec![];
                let mut at = 0;
                while let Some(open) = memchr::memchr(b'"', &b[at..]).map(|i| at + i) {
                    let (close, escaped) = string_close(b, open + 1).expect("a closing quote");
                    let raw = &text[open..=close];
                    let s: String = serde_json::from_str(raw).unwrap();
                    prop_assert_eq!(escaped, raw.contains('\\'), "{}", raw);
                    let plain = plain_len(&b[open + 1..]);
                    prop_assert_eq!(plain == close - open - 1, !escaped, "{}", raw);
                    found.push(s);
                    at = close + 1;
                }
                let mut want = vec![];
                strings(&v, &mut want);
                prop_assert_eq!(found, want, "{}", text);
            }
        }
    }

    #[test]
    fn numbers_keep_their_kind() {
        let v = from_str(r#"[0,7,18446744073709551615]"#).unwrap();
        let a = v.as_array().unwrap();
        assert!(a.iter().all(|n| n.is_u64()));
        assert_eq!(a[2].as_u64(), Some(u64::MAX));
    }

    #[test]
    fn nesting_beyond_the_plain_depth_is_serde_jsons() {
        // Read by serde_json (deeper than DEPTH), and its error past 128.
        for n in [DEPTH - 1, DEPTH, DEPTH + 1, 127, 128, 129, 200] {
            let doc = format!("{}{}", "[".repeat(n), "]".repeat(n));
            let ours = from_str(&doc).map_err(|e| e.to_string());
            let theirs = serde_json::from_str::<Value>(&doc).map_err(|e| e.to_string());
            assert_eq!(ours, theirs, "depth {n}");
        }
    }
}
