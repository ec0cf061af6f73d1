//! A walk over JSON text that finds where values are (byte ranges
//! and lines) without building them: the lines of a JSON manifest's
//! documents and list items. It checks only the structure it walks; what
//! it points at is read (and so checked) by serde_json.

use std::borrow::Cow;
use std::ops::Range;

/// One top-level value of a JSON text.
#[derive(Debug)]
pub(crate) struct Outline {
    pub range: Range<usize>,
    /// The line of its first key; where it starts when it has none (or is
    /// not an object).
    pub first_line: usize,
    /// When the last `items` key's value is an array: each element's range
    /// and first line (as [`Outline::first_line`] says).
    pub items: Option<Vec<(Range<usize>, usize)>>,
}

/// A key's text (quotes included) as the string it stands for; `None`
/// where serde_json refuses it.
fn key<'t>(text: &'t str, r: &Range<usize>) -> Option<Cow<'t, str>> {
    let raw = &text[r.clone()];
    if raw.len() >= 2 && raw.bytes().all(|c| c >= 0x20 && c != b'\\') {
        Some(Cow::Borrowed(&raw[1..raw.len() - 1]))
    } else {
        serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
    }
}

/// A walk over JSON text from a byte position, counting lines.
pub(crate) struct Scan<'a> {
    text: &'a str,
    b: &'a [u8],
    pub pos: usize,
    /// The line at `pos` (1-based).
    pub line: usize,
}

impl<'a> Scan<'a> {
    pub fn new(text: &'a str, pos: usize, line: usize) -> Scan<'a> {
        Scan {
            text,
            b: text.as_bytes(),
            pos,
            line,
        }
    }

    pub fn at(&self, c: u8) -> bool {
        self.b.get(self.pos) == Some(&c)
    }

    /// Skips JSON white space.
    pub fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.pos) {
            match c {
                b'\n' => self.line += 1,
                b' ' | b'\t' | b'\r' => {}
                _ => break,
            }
            self.pos += 1;
        }
    }

    /// A string (at its opening quote). A raw line break in it is not
    /// JSON: serde_json refuses the text before its lines are asked for.
    fn string(&mut self) -> Option<()> {
        let (close, _) = crate::jsonread::string_close(self.b, self.pos + 1)?;
        self.pos = close + 1;
        Some(())
    }

    /// Any value, leading white space first.
    fn skip(&mut self) -> Option<()> {
        self.ws();
        let start = self.pos;
        match *self.b.get(self.pos)? {
            b'"' => self.string(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *self.b.get(self.pos)? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.pos += 1;
                                return Some(());
                            }
                        }
                        b'\n' => self.line += 1,
                        _ => {}
                    }
                    self.pos += 1;
                }
            }
            _ => {
                while !matches!(
                    self.b.get(self.pos),
                    None | Some(
                        b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r' | b'{' | b'[' | b'"'
                    )
                ) {
                    self.pos += 1;
                }
                (self.pos > start).then_some(())
            }
        }
    }

    /// An element of a list: its range and first line.
    fn element(&mut self) -> Option<(Range<usize>, usize)> {
        self.ws();
        let (start, line) = (self.pos, self.line);
        let mut first = line;
        if self.at(b'{') {
            self.pos += 1;
            self.ws();
            if self.at(b'"') {
                first = self.line;
            }
            (self.pos, self.line) = (start, line);
        }
        self.skip()?;
        Some((start..self.pos, first))
    }

    /// The elements of an array (at its `[`).
    fn elements(&mut self) -> Option<Vec<(Range<usize>, usize)>> {
        self.pos += 1;
        let mut out = Vec::new();
        self.ws();
        if self.at(b']') {
            self.pos += 1;
            return Some(out);
        }
        loop {
            out.push(self.element()?);
            self.ws();
            match *self.b.get(self.pos)? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Some(out);
                }
                _ => return None,
            }
        }
    }

    /// The next top-level value, leading white space first.
    pub fn doc(&mut self) -> Option<Outline> {
        self.ws();
        let (start, line) = (self.pos, self.line);
        let mut o = Outline {
            range: start..start,
            first_line: line,
            items: None,
        };
        if !self.at(b'{') {
            self.skip()?;
            o.range = start..self.pos;
            return Some(o);
        }
        self.pos += 1;
        self.ws();
        if self.at(b'}') {
            self.pos += 1;
            o.range = start..self.pos;
            return Some(o);
        }
        let mut first = true;
        loop {
            self.ws();
            if !self.at(b'"') {
                return None;
            }
            if first {
                o.first_line = self.line;
                first = false;
            }
            let k = self.pos;
            self.string()?;
            let k = k..self.pos;
            self.ws();
            if !self.at(b':') {
                return None;
            }
            self.pos += 1;
            self.ws();
            if key(self.text, &k).as_deref() == Some("items") {
                o.items = if self.at(b'[') {
                    Some(self.elements()?)
                } else {
                    self.skip()?;
                    None
                };
            } else {
                self.skip()?;
            }
            self.ws();
            match *self.b.get(self.pos)? {
                b',' => self.pos += 1,
                b'}' => {
                    self.pos += 1;
                    o.range = start..self.pos;
                    return Some(o);
                }
                _ => return None,
            }
        }
    }
}
