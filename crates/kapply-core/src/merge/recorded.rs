//! The last-applied annotation kubectl records for a config, and the ways
//! the plan avoids reading a live object's annotation back: an unchanged
//! config's annotation reads as the config in its recorded form, and one
//! changed in a single string value (an image bumped) as that form with the
//! string swapped. All of it is behind [`Recorded::three_way`]; the rest of
//! the engine sees only the recorded config and its annotation. No I/O.

use serde_json::{Map, Value};

use super::{LAST_APPLIED, MergeError, ThreeWay, last_applied_value, three_way_recorded};
use crate::jsonread::AnnotationsAt;
use crate::patchmeta::Schema;

/// A live object's last-applied annotation that is not JSON.
#[derive(Debug, thiserror::Error)]
#[error("the {la} annotation is not valid JSON: {0}", la = LAST_APPLIED)]
pub struct BadAnnotation(#[source] serde_json::Error);

/// Why [`Recorded::three_way`] gave no merge.
#[derive(Debug, thiserror::Error)]
pub enum LiveMergeError {
    #[error(transparent)]
    Annotation(#[from] BadAnnotation),
    #[error(transparent)]
    Merge(#[from] MergeError),
}

/// The last-applied configuration recorded on a live object: `Ok(None)`
/// when the annotation is absent (or not a string).
pub fn read_last_applied(live: &Value) -> Result<Option<Value>, BadAnnotation> {
    let Some(raw) = last_applied_value(live).and_then(Value::as_str) else {
        return Ok(None);
    };
    crate::jsonread::from_str(raw)
        .map(Some)
        .map_err(BadAnnotation)
}

/// The config as kubectl records it: the annotation removed from its own
/// value, and `annotations: {}` when no other annotation is left.
pub(super) fn recorded_config(config: &Value) -> Value {
    let mut v = config.clone();
    // The recorded form is the point here: nothing to restore.
    let _ = Unrecord::record(&mut v);
    v
}

/// How a config was turned into its recorded form in place (see
/// [`recorded_config`]), to turn it back: so an unchanged config can stand
/// for its own last-applied configuration for a while, instead of a copy.
#[must_use = "the config stays in its recorded form unless restored"]
struct Unrecord(Option<Undo>);

enum Undo {
    /// `annotations` was absent: `{}` was put there.
    Remove,
    /// `annotations` was this value, not a map.
    Restore(Value),
    /// The map held this last-applied annotation, taken out.
    Reinsert(Value),
}

impl Unrecord {
    /// `v` made what [`recorded_config`] gives for it.
    fn record(v: &mut Value) -> Unrecord {
        let Some(md) = v.get_mut("metadata").and_then(Value::as_object_mut) else {
            return Unrecord(None);
        };
        let Some(ann) = md.get_mut("annotations") else {
            md.insert("annotations".into(), Value::Object(Map::new()));
            return Unrecord(Some(Undo::Remove));
        };
        match ann {
            Value::Object(a) => Unrecord(a.remove(LAST_APPLIED).map(Undo::Reinsert)),
            other => Unrecord(Some(Undo::Restore(std::mem::replace(
                other,
                Value::Object(Map::new()),
            )))),
        }
    }

    /// `v` as it was before [`Unrecord::record`] (maps are sorted, so a
    /// key put back is where it was).
    fn restore(self, v: &mut Value) {
        let Some(undo) = self.0 else { return };
        let Some(md) = v.get_mut("metadata").and_then(Value::as_object_mut) else {
            return;
        };
        match undo {
            Undo::Remove => {
                md.remove("annotations");
            }
            Undo::Restore(old) => {
                md.insert("annotations".into(), old);
            }
            Undo::Reinsert(old) => {
                if let Some(a) = md.get_mut("annotations").and_then(Value::as_object_mut) {
                    a.insert(LAST_APPLIED.into(), old);
                }
            }
        }
    }
}

/// The last-applied-configuration annotation value kubectl writes for this
/// config: compact JSON, keys sorted, trailing newline.
pub fn last_applied_annotation(config: &Value) -> String {
    Recorded::new(config).annotation
}

/// Set (`Some`) or take out (`None`) the annotation on a recorded config,
/// whose `metadata.annotations` is a map.
pub(super) fn set_annotation(v: &mut Value, text: Option<String>) {
    if let Some(a) = v
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        match text {
            Some(t) => {
                a.insert(LAST_APPLIED.into(), Value::String(t));
            }
            None => {
                a.remove(LAST_APPLIED);
            }
        }
    }
}

/// The POST body kubectl sends to create the object: the manifest with the
/// annotation, null values dropped (kubectl 1.31+; they stay in the
/// annotation).
pub fn creation_body(config: &Value) -> Value {
    let Recorded {
        value: mut body,
        annotation,
        ..
    } = Recorded::new(config);
    set_annotation(&mut body, Some(annotation));
    super::fields::drop_nulls(&mut body);
    body
}

/// The config as kubectl records it (the annotation's value, and the new
/// last-applied configuration) and the annotation it writes for it.
pub struct Recorded {
    pub(super) value: Value,
    pub(super) annotation: String,
    /// A float is written in the annotation (spelled otherwise than its
    /// value reads back: `1.0` is written `1`).
    floats: bool,
}

impl Recorded {
    /// kubectl's three-way merge of this config (`config`, the value it was
    /// recorded from) against `live`, with the last-applied configuration
    /// in `live`'s annotation. Where that annotation reads back as this
    /// config's recorded form, or as it with one string value's text
    /// changed, `config` itself is put in that form (and the string
    /// swapped) for the merge and given back as it was, instead of parsing
    /// the annotation or copying the config; otherwise it is parsed.
    pub fn three_way(
        self,
        config: &mut Value,
        live: &Value,
        schema: Option<Schema>,
    ) -> Result<ThreeWay, LiveMergeError> {
        let text = last_applied_value(live).and_then(Value::as_str);
        let same = text.is_some_and(|text| self.reads_back(text));
        let mut edit = match text {
            Some(text) if !same => self.edit_of(text),
            _ => None,
        };
        let mut unrecord = (same || edit.is_some()).then(|| Unrecord::record(config));
        if edit.as_mut().is_some_and(|e| !e.swap(config)) {
            // No string there: the annotation is parsed.
            edit = None;
            if let Some(u) = unrecord.take() {
                u.restore(config);
            }
        }
        if let Some(unrecord) = unrecord {
            let tw = three_way_recorded(self, live, Some(config), schema);
            if let Some(e) = edit.as_mut() {
                e.swap(config);
            }
            unrecord.restore(config);
            return Ok(tw?);
        }
        let parsed = read_last_applied(live)?;
        Ok(three_way_recorded(self, live, parsed.as_ref(), schema)?)
    }

    /// Whether `text` differs from this config's annotation in the text of
    /// one string value alone, no escape in it: then [`Recorded::three_way`]
    /// neither parses nor copies it.
    pub fn one_string_apart(&self, text: &str) -> bool {
        self.edit_of(text).is_some()
    }

    /// The length in bytes of the last-applied annotation this config
    /// records.
    pub fn annotation_len(&self) -> usize {
        self.annotation.len()
    }

    pub fn new(config: &Value) -> Recorded {
        let value = recorded_config(config);
        // Room for a typical object's annotation, so it is seldom moved
        // while it grows.
        let mut annotation = String::with_capacity(1024);
        let floats = crate::gocompat::write_json_floats(&value, &mut annotation);
        annotation.push('\n');
        Recorded {
            value,
            annotation,
            floats,
        }
    }

    /// The config read from its compact JSON text (as serde_json writes
    /// it: a manifest's packed object), and the config recorded. Where the
    /// text is plain (no escape, no float, no `<`, `>`, `&` or U+2028/9) it
    /// is already the annotation kubectl writes but for `annotations: {}`:
    /// that is put in (or the text taken whole), not written from the value.
    pub fn decode(text: &str) -> serde_json::Result<(Value, Recorded)> {
        let (config, at) = crate::jsonread::from_str_marked(text)?;
        let recorded = match at.and_then(|at| annotation_from_text(&config, text, at)) {
            Some(annotation) => Recorded {
                value: recorded_config(&config),
                annotation,
                floats: false,
            },
            None => Recorded::new(&config),
        };
        Ok((config, recorded))
    }

    /// Whether `text` (a live object's annotation) reads back as exactly
    /// the recorded config: `text` is the annotation this config writes and
    /// no float in it is spelled otherwise in JSON (`1.0` is written `1`,
    /// which reads back as an integer). Then the recorded config (or the
    /// config made so by [`Unrecord::record`]) stands for it, instead of
    /// parsing `text`.
    fn reads_back(&self, text: &str) -> bool {
        !self.floats && text == self.annotation
    }

    /// The value `text` (a live object's annotation) reads as, when it is
    /// this config's annotation with the text of one string value changed
    /// (an image bumped), no escape in it: the recorded config with that
    /// string set, a copy instead of parsing `text`. `None` otherwise. The
    /// plan swaps the string in place instead ([`Recorded::edit_of`]);
    /// this copy is what the tests compare with parsing.
    #[cfg(test)]
    pub fn read_back_edited(&self, text: &str) -> Option<Value> {
        let mut edit = self.edit_of(text)?;
        let mut v = self.value.clone();
        edit.swap(&mut v).then_some(v)
    }

    /// Where `text` differs from this config's annotation, when it differs
    /// in the text of one string value alone, no escape in it (see
    /// [`Recorded::read_back_edited`]): that string's place and its text in
    /// `text`. `None` otherwise.
    fn edit_of(&self, text: &str) -> Option<StringEdit> {
        if self.floats {
            return None;
        }
        let (new, old) = (self.annotation.as_bytes(), text.as_bytes());
        let prefix = common_prefix(new, old);
        let room = new.len().min(old.len()) - prefix;
        let suffix = common_suffix(new, old).min(room);
        // The string value of the annotation the first difference is in;
        // the last one must be in it too.
        let (path, start, end) = string_at(&self.annotation, prefix)?;
        if new.len() - suffix > end {
            return None;
        }
        // Its text in `text`: the same start, the end moved by the change
        // in length; all of it read as written (no quote, escape, control).
        let old_end = (end + old.len()).checked_sub(new.len())?;
        let content = text.get(start..old_end)?;
        if content.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
            return None;
        }
        Some(StringEdit {
            path: path
                .into_iter()
                .map(|s| match s {
                    Step::Key(k) => Err(k.to_owned()),
                    Step::Index(i) => Ok(i),
                })
                .collect(),
            text: content.to_owned(),
        })
    }

    /// The annotation's value as it reads back: the recorded config itself
    /// unless a float in it is spelled otherwise in JSON.
    pub fn into_read_back(self) -> Option<Value> {
        if self.floats {
            serde_json::from_str(&self.annotation).ok()
        } else {
            Some(self.value)
        }
    }
}

/// One string value of a recorded config and another text for it (see
/// [`Recorded::edit_of`]).
struct StringEdit {
    /// The steps to it: a map key (`Err`) or a list index (`Ok`).
    path: Vec<Result<usize, String>>,
    text: String,
}

impl StringEdit {
    /// Swap the text of the string at this edit's place in `v` with the
    /// edit's: done twice, `v` is as it was. False (`v` untouched) where
    /// `v` holds no string there.
    fn swap(&mut self, v: &mut Value) -> bool {
        let mut leaf = Some(v);
        for step in &self.path {
            leaf = leaf.and_then(|l| match step {
                Err(k) => l.as_object_mut()?.get_mut(k.as_str()),
                Ok(i) => l.as_array_mut()?.get_mut(*i),
            });
        }
        match leaf {
            Some(Value::String(s)) => {
                std::mem::swap(s, &mut self.text);
                true
            }
            _ => false,
        }
    }
}

/// The annotation of the config read from `text` (see [`Recorded::decode`]),
/// from the text itself; `None` where it must be written from the value.
fn annotation_from_text(config: &Value, text: &str, at: AnnotationsAt) -> Option<String> {
    // Go escapes these (HTML and U+2028/9, E2 80 A8/9); serde_json not.
    if memchr::memchr3(b'<', b'>', b'&', text.as_bytes()).is_some()
        || memchr::memchr(0xe2, text.as_bytes()).is_some()
    {
        return None;
    }
    let md = config.get("metadata")?.as_object()?;
    let mut out = String::with_capacity(text.len() + 20);
    match md.get("annotations") {
        None => {
            out.push_str(text.get(..at.at)?);
            out.push_str(at.text);
            out.push_str(text.get(at.at..)?);
        }
        // Recorded as it is.
        Some(Value::Object(a)) if !a.contains_key(LAST_APPLIED) => out.push_str(text),
        Some(_) => return None,
    }
    out.push('\n');
    Some(out)
}

/// How many bytes `a` and `b` start with alike, compared eight at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let mut i = 0;
    while let (Some(x), Some(y)) = (a.get(i..i + 8), b.get(i..i + 8)) {
        if x != y {
            break;
        }
        i += 8;
    }
    i + a[i..]
        .iter()
        .zip(&b[i..])
        .take_while(|(x, y)| x == y)
        .count()
}

/// How many bytes `a` and `b` end with alike, compared eight at a time.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let mut n = 0;
    while n + 8 <= a.len().min(b.len())
        && a[a.len() - n - 8..a.len() - n] == b[b.len() - n - 8..b.len() - n]
    {
        n += 8;
    }
    n + a[..a.len() - n]
        .iter()
        .rev()
        .zip(b[..b.len() - n].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// One step of a path into a value: a map's key or a list's index.
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// The string value of compact JSON `text` whose text (between its quotes,
/// `start..end`) holds byte `at` (or ends there), with its path; `None`
/// when `at` is elsewhere (a key, a number, punctuation) or a key on the
/// way has an escape.
fn string_at(text: &str, at: usize) -> Option<(Vec<Step<'_>>, usize, usize)> {
    /// An open map (the key being read, `None` if escaped) or list (index).
    enum Open<'a> {
        Map(Option<&'a str>),
        List(usize),
    }
    let bytes = text.as_bytes();
    let mut open: Vec<Open> = Vec::with_capacity(8);
    let mut i = 0;
    while i <= at {
        match *bytes.get(i)? {
            b'{' => open.push(Open::Map(None)),
            b'[' => open.push(Open::List(0)),
            b'}' | b']' => {
                open.pop();
            }
            b',' => {
                if let Some(Open::List(n)) = open.last_mut() {
                    *n += 1;
                }
            }
            b'"' => {
                let start = i + 1;
                let (j, escaped) = crate::jsonread::string_close(bytes, start)?;
                let key =
                    matches!(open.last(), Some(Open::Map(_))) && bytes.get(j + 1) == Some(&b':');
                if key {
                    if let Some(Open::Map(k)) = open.last_mut() {
                        *k = (!escaped).then(|| &text[start..j]);
                    }
                } else if start <= at && at <= j {
                    let path = open
                        .iter()
                        .map(|o| match o {
                            Open::Map(k) => k.map(Step::Key),
                            Open::List(n) => Some(Step::Index(*n)),
                        })
                        .collect::<Option<Vec<_>>>()?;
                    return Some((path, start, j));
                }
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Configs whose metadata takes each form `recorded_config` handles.
    fn configs() -> Vec<Value> {
        vec![
            json!({"kind": "ConfigMap"}),
            json!({"kind": "ConfigMap", "metadata": "odd"}),
            json!({"metadata": {"name": "a"}}),
            json!({"metadata": {"Upper": 1, "name": "a", "labels": {"x": "y"}}}),
            json!({"metadata": {"name": "a", "annotations": {}}}),
            json!({"metadata": {"name": "a", "annotations": null}}),
            json!({"metadata": {"name": "a", "annotations": ["x"]}}),
            json!({"metadata": {"name": "a", "annotations": {"b": "c"}}}),
            json!({"metadata": {"name": "a", "annotations": {LAST_APPLIED: "{}\n"}}}),
            json!({"metadata": {"name": "a", "annotations": {LAST_APPLIED: 5, "z": "1"}}}),
        ]
    }

    #[test]
    fn unrecord_gives_the_recorded_config_and_back() {
        for config in configs() {
            let mut v = config.clone();
            let undo = Unrecord::record(&mut v);
            assert_eq!(v, recorded_config(&config), "{config}");
            undo.restore(&mut v);
            assert_eq!(v, config);
            // Key order restored too (the maps are sorted).
            assert_eq!(v.to_string(), config.to_string());
        }
    }

    /// Reading a config's text and recording it at once gives what reading
    /// it and recording the value gives, whatever the text holds.
    #[test]
    fn decode_records_as_new_does() {
        let mut all = configs();
        all.extend([
            json!({"metadata": {}}),
            json!({"metadata": {"Zeta": "1"}}),
            json!({"metadata": {"Zeta": "1", "b": 2}}),
            json!({"metadata": {"aaa": 1, "annotationz": 2, "name": "n"}}),
            json!({"metadata": {"annotations": {"x": "<&>"}}}),
            json!({"metadata": {"name": "a\u{2028}b"}}),
            json!({"metadata": {"name": "esc\"aped"}}),
            json!({"metadata": {"name": "a"}, "spec": {"n": -1}}),
            json!({"metadata": {"name": "a"}, "spec": {"f": 1.0}}),
            json!({"metadata": {"name": "é ✓"}, "spec": {"template": {"metadata": {"x": 1}}}}),
            json!({"data": {"k": "\"metadata\":{\"z\":1}"}, "metadata": {"name": "a"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"metadata": "x"}, "metadata": {"labels": {"a": "b"}, "name": "a", "namespace": "n"}}),
            json!(["not", "a", "map"]),
            json!("text"),
        ]);
        let mut deep = json!({"metadata": {"name": "a"}});
        for _ in 0..110 {
            deep = json!({"metadata": {"name": "a"}, "x": deep});
        }
        all.push(deep);
        for config in all {
            let text = serde_json::to_string(&config).unwrap();
            let (value, recorded) = Recorded::decode(&text).unwrap();
            let expected = Recorded::new(&config);
            assert_eq!(value, config, "{text}");
            assert_eq!(recorded.value, expected.value, "{text}");
            assert_eq!(recorded.annotation, expected.annotation, "{text}");
            assert_eq!(recorded.floats, expected.floats, "{text}");
        }
        // A repeated metadata key: the last is the value, and its place.
        for text in [
            r#"{"metadata":{"b":1},"metadata":{"name":"a"}}"#,
            r#"{"metadata":{"b":1},"metadata":"x"}"#,
            // Not serde_json's text of its value: written from the value.
            r#"{"metadata":{"name":"a"} }"#,
            r#"{"metadata":{"name":"a","b":1}}"#,
            r#"{"metadata":{"name":"a"},"b":{"y":1,"x":2}}"#,
            r#"{"z":1,"metadata":{"name":"a"}}"#,
        ] {
            let (value, recorded) = Recorded::decode(text).unwrap();
            let expected = Recorded::new(&value);
            assert_eq!(recorded.annotation, expected.annotation, "{text}");
        }
    }

    /// An annotation edited anywhere reads back, where the copy is made,
    /// as parsing it reads; a string value's text changed is copied.
    #[test]
    fn read_back_edited_is_what_parsing_reads() {
        let configs = [
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"app": "web"}},
                   "spec": {"replicas": 2, "template": {"spec": {"containers": [
                       {"name": "web", "image": "nginx:1.26.0", "args": ["a", "", "<c>"]},
                       {"name": "side", "image": "busybox", "env": [{"name": "X", "value": "é\"q"}]}]}}}}),
            json!({"metadata": {"name": "a", "annotations": {"k\"ey": "v", "n": "x"}}, "data": {"": "", "e": "\u{2028}"}}),
        ];
        let edits = ["", "x", "yz", "\"", "\\", "é", "1", ",", "}", "\n", "<"];
        let mut copied = 0;
        for config in configs {
            let r = Recorded::new(&config);
            let n = r.annotation.clone();
            for i in 0..=n.len() {
                for len in 0..3 {
                    for e in edits {
                        let (Some(a), Some(b)) = (n.get(..i), n.get(i + len..)) else {
                            continue;
                        };
                        let text = format!("{a}{e}{b}");
                        if let Some(v) = r.read_back_edited(&text) {
                            let parsed: Value = serde_json::from_str(&text)
                                .unwrap_or_else(|e| panic!("{text}: {e}"));
                            assert_eq!(v, parsed, "{text}");
                            copied += 1;
                        }
                    }
                }
            }
            // The image bumped: copied.
            let bumped = n.replace("nginx:1.26.0", "nginx:1.27.1");
            if bumped != n {
                let v = r.read_back_edited(&bumped).expect("a string edited");
                assert_eq!(v, serde_json::from_str::<Value>(&bumped).unwrap());
            }
        }
        assert!(copied > 100, "{copied}");
        // Floats in the annotation: parsed, never copied.
        let r = Recorded::new(&json!({"a": "x", "f": 1.0}));
        assert!(
            r.read_back_edited(&r.annotation.replace('x', "y"))
                .is_none()
        );
    }

    #[test]
    fn common_ends_are_counted_exactly() {
        let slow_prefix = |a: &[u8], b: &[u8]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
        let slow_suffix = |a: &[u8], b: &[u8]| {
            a.iter()
                .rev()
                .zip(b.iter().rev())
                .take_while(|(x, y)| x == y)
                .count()
        };
        let base = b"0123456789abcdefghijklmnopqrstuvwxyz";
        for len in 0..base.len() {
            let a = &base[..len];
            for i in 0..=len {
                let mut b = a.to_vec();
                b.insert(i, b'#');
                for (x, y) in [(a, &b[..]), (&b[..], a), (a, a)] {
                    assert_eq!(common_prefix(x, y), slow_prefix(x, y));
                    assert_eq!(common_suffix(x, y), slow_suffix(x, y));
                }
            }
        }
    }

    #[test]
    fn recorded_knows_its_floats() {
        for (config, floats) in [
            (
                json!({"metadata": {"name": "a"}, "n": [0, -1, i64::MIN, u64::MAX]}),
                false,
            ),
            (
                json!({"metadata": {"name": "a"}, "spec": {"x": [{"y": 1.0}]}}),
                true,
            ),
            (json!({"f": 0.5}), true),
        ] {
            let r = Recorded::new(&config);
            assert_eq!(r.floats, floats, "{config}");
            let mut text = crate::gocompat::json(&recorded_config(&config));
            text.push('\n');
            assert_eq!(r.annotation, text);
            // An annotation with a float does not stand for its value.
            assert_eq!(r.reads_back(&text), !floats);
            assert!(!r.reads_back("{}\n"));
        }
    }
}
