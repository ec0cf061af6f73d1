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
    let mut r = Reader {
        text,
        bytes: text.as_bytes(),
        at: 0,
    };
    match r.document() {
        Some(v) => Ok(v),
        None => serde_json::from_str(text),
    }
}

struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// One value and nothing after it but whitespace; `None`: not plain.
    fn document(&mut self) -> Option<Value> {
        let v = self.value(0)?;
        self.skip_ws();
        (self.at == self.bytes.len()).then_some(v)
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte after whitespace, consumed.
    fn next_byte(&mut self) -> Option<u8> {
        self.skip_ws();
        let b = *self.bytes.get(self.at)?;
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
        self.skip_ws();
        if self.bytes.get(self.at) == Some(&b'}') {
            self.at += 1;
            return Some(m);
        }
        loop {
            if self.next_byte()? != b'"' {
                return None;
            }
            let key = self.string()?;
            // serde_json (raw_value feature) reads a map whose first key is
            // this token as the JSON text in its value: left to serde_json.
            if m.is_empty() && key == RAW_VALUE_KEY {
                return None;
            }
            if self.next_byte()? != b':' {
                return None;
            }
            let v = self.value(depth + 1)?;
            m.insert(key.to_owned(), v);
            match self.next_byte()? {
                b',' => {}
                b'}' => return Some(m),
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
        /// The bytes that end a plain string's text.
        const STOP: [bool; 256] = {
            let mut t = [false; 256];
            let mut b = 0;
            while b < 256 {
                t[b] = b < 0x20 || b == b'"' as usize || b == b'\\' as usize;
                b += 1;
            }
            t
        };
        let start = self.at;
        let len = self.bytes[start..]
            .iter()
            .position(|&b| STOP[usize::from(b)])?;
        if self.bytes[start + len] != b'"' {
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
            let ours = from_str(doc);
            let theirs = serde_json::from_str::<Value>(doc);
            match (&ours, &theirs) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{doc:?}"),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{doc:?}"),
                _ => panic!("{doc:?}: {ours:?} vs {theirs:?}"),
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
