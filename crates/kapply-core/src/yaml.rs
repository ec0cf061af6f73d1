//! The one YAML module (owned by the manifest work): every YAML crate is used
//! here and nowhere else.
//!
//! Reading: saphyr's event parser gives every node its line, and scalars are
//! resolved the way kubectl reads them (go-yaml v2, YAML 1.1, then converted
//! to JSON by sigs.k8s.io/yaml): unquoted `yes`/`no`/`on`/`off`/`y`/`n` are
//! booleans, also as keys (`y:` is the key `"true"`), `0644` is octal (420),
//! `0x1F` hex, `~`/`null`/empty are null, quoted and block scalars are always
//! strings, core tags (`!!str`, `!!int`, ...) are honoured, anchors, aliases
//! and merge keys (`<<`, with go-yaml v2's precedence) work. Numbers then take the form kubectl's JSON
//! round trip gives them: a float with an integral value becomes an integer
//! (`1.0` -> `1`), and `.inf`/`.nan` are errors, because JSON cannot hold
//! them.
//!
//! Writing: [`to_yaml`] renders a JSON value as block YAML in kubectl's
//! style, quoting every string that would otherwise be read back as
//! something else.

use crate::fieldpath as path;
use crate::patchmeta::{ListStrategy, Schema};
use saphyr_parser::{Event, Parser, ScalarStyle, Span, Tag};
use serde_json::{Map, Number, Value};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

mod block;
pub(crate) mod compact;
pub(crate) mod outline;

/// A parse or conversion error at a place in the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line} column {col}: {message}")]
pub struct YamlError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    pub message: String,
}

impl YamlError {
    fn at(line: usize, col: usize, message: impl Into<String>) -> Self {
        YamlError {
            line,
            col,
            message: message.into(),
        }
    }
}

/// A node of a parsed document with its place in the text.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// 1-based line where the node starts.
    pub line: usize,
    /// 1-based column where the node starts.
    pub col: usize,
    pub kind: NodeKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    /// A resolved scalar (never an array or object).
    Scalar(Value),
    Seq(Vec<Node>),
    /// Entries in document order; keys are unique (a repeated key keeps the
    /// last value, as go-yaml does).
    Map(Vec<Entry>),
}

/// One key of a mapping.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: String,
    /// Line of the key (the line a field path points at).
    pub line: usize,
    pub value: Node,
}

impl Node {
    fn scalar(line: usize, col: usize, v: Value) -> Node {
        Node {
            line,
            col,
            kind: NodeKind::Scalar(v),
        }
    }

    /// The JSON value of this node.
    pub fn to_value(&self) -> Value {
        match &self.kind {
            NodeKind::Scalar(v) => v.clone(),
            NodeKind::Seq(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            NodeKind::Map(entries) => {
                let mut m = Map::new();
                for e in entries {
                    m.insert(e.key.clone(), e.value.to_value());
                }
                Value::Object(m)
            }
        }
    }

    /// The entry of a mapping node by key.
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        match &self.kind {
            NodeKind::Map(entries) => entries.iter().find(|e| e.key == key),
            _ => None,
        }
    }

    /// The value of a mapping node's key.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|e| &e.value)
    }

    /// The line of the first key of a mapping (where a reader sees the
    /// object begin), else the node's own line.
    pub fn first_line(&self) -> usize {
        match &self.kind {
            NodeKind::Map(entries) => entries.first().map_or(self.line, |e| e.line),
            _ => self.line,
        }
    }

    /// Number of nodes and height (a scalar is 1), for the alias guards.
    /// Recursion is bounded: every tree built here is at most `MAX_DEPTH`
    /// deep.
    fn measure(&self) -> (usize, usize) {
        let children: Box<dyn Iterator<Item = &Node>> = match &self.kind {
            NodeKind::Scalar(_) => Box::new(std::iter::empty()),
            NodeKind::Seq(items) => Box::new(items.iter()),
            NodeKind::Map(entries) => Box::new(entries.iter().map(|e| &e.value)),
        };
        children.fold((1, 1), |(size, height), c| {
            let (s, h) = c.measure();
            (size + s, height.max(h + 1))
        })
    }
}

/// Maximum nesting of collections; far beyond any Kubernetes object, and it
/// keeps the recursive walks over the tree safe.
const MAX_DEPTH: usize = 256;
/// The share of an input's nodes that aliases may add, as kubectl's YAML
/// reader (go-yaml v2) bounds it: up to 99% while the input is small, falling
/// linearly to 10% between 400k and 4M nodes. kubectl applies it per
/// document; here it counts every document of the input together, so ten
/// documents each just under the limit cannot add up to millions of nodes.
/// What aliases can add to one input stays near a million nodes.
fn allowed_alias_ratio(total: usize) -> f64 {
    const LOW: usize = 400_000;
    const HIGH: usize = 4_000_000;
    if total <= LOW {
        0.99
    } else if total >= HIGH {
        0.10
    } else {
        0.99 - 0.89 * ((total - LOW) as f64 / (HIGH - LOW) as f64)
    }
}

/// Parses a YAML stream, or a JSON stream when the text starts with `{` (as
/// kubectl decides), into documents. Empty documents (nothing, only comments,
/// or null) are skipped.
pub fn parse(text: &str) -> Result<Vec<Node>, YamlError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim_start().starts_with('{') {
        parse_json(text)
    } else {
        parse_yaml(text)
    }
}

/// The first document of a YAML (or JSON) text as one JSON value, `null`
/// when the text holds none: what sigs.k8s.io/yaml's `YAMLToJSON` (go-yaml
/// v2, YAML 1.1) makes of a body, which is how kube-apiserver decodes
/// `application/yaml` and `application/apply-patch+yaml` requests.
pub fn read_value(text: &str) -> Result<Value, YamlError> {
    Ok(parse(text)?
        .first()
        .map(Node::to_value)
        .unwrap_or(Value::Null))
}

/// Parses a YAML stream into documents, skipping empty ones.
pub fn parse_yaml(text: &str) -> Result<Vec<Node>, YamlError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut b = Builder::default();
    for ev in Parser::new_from_str(text) {
        let (event, span) = ev.map_err(|e| {
            YamlError::at(
                e.marker().line().max(1),
                e.marker().col() + 1,
                e.info().to_string(),
            )
        })?;
        b.event(event, span)?;
    }
    Ok(b.docs)
}

/// A document read for its value alone, with the few lines a manifest
/// needs when nothing is wrong with it (see [`parse_values`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    pub value: Value,
    /// What [`Node::first_line`] gives for the document.
    pub first_line: usize,
    /// When the document is a mapping whose `items` is a sequence: what
    /// [`Node::first_line`] gives for each element.
    pub item_lines: Option<Vec<usize>>,
}

/// The documents of a YAML (or JSON) stream as values, built straight from
/// the parser with no tree in between: the fast way to read manifests.
/// `None` when the text needs the full reader ([`parse`]): anything it
/// would refuse (its error then says where), aliases and merge keys (whose
/// bounds and precedence only the full reader implements). When `Some`, the
/// values are exactly what [`parse`] gives, empty documents skipped alike.
pub fn parse_values(text: &str) -> Option<Vec<Doc>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim_start().starts_with('{') {
        return parse_json_docs(text);
    }
    block::read(text).or_else(|| parse_values_saphyr(text))
}

/// [`parse_values`] of a YAML text by saphyr's events.
fn parse_values_saphyr(text: &str) -> Option<Vec<Doc>> {
    let mut b = FastBuilder::default();
    for ev in Parser::new_from_str(text) {
        let (event, span) = ev.ok()?;
        b.event(event, span)?;
    }
    Some(b.docs)
}

/// A collection being built by [`FastBuilder`].
struct FastFrame {
    line: usize,
    /// The first key of a mapping and its line (a repeated key replaces
    /// the line, as [`set_entry`] replaces the entry).
    first_key: Option<(String, usize)>,
    kind: FastKind,
}

enum FastKind {
    Seq {
        items: Vec<Value>,
        /// First lines of the elements, kept for a top-level `items` list.
        firsts: Option<Vec<usize>>,
    },
    Map {
        map: Map<String, Value>,
        pending: Option<String>,
        /// The elements' first lines of the last `items` written (the root
        /// mapping only).
        item_lines: Option<Vec<usize>>,
    },
}

impl FastFrame {
    fn first_line(&self) -> usize {
        self.first_key.as_ref().map_or(self.line, |(_, l)| *l)
    }
}

#[derive(Default)]
struct FastBuilder {
    stack: Vec<FastFrame>,
    docs: Vec<Doc>,
}

impl FastBuilder {
    /// `None`: leave this text to the full reader.
    fn event(&mut self, event: Event<'_>, span: Span) -> Option<()> {
        let (line, _) = pos(&span);
        match event {
            Event::Scalar(text, style, _, tag) => {
                let tag = tag.as_deref().map(tag_name);
                self.scalar(&text, style, tag.as_deref(), line)
            }
            Event::Alias(_) => None,
            Event::SequenceStart(..) => self.start(true, line),
            Event::MappingStart(..) => self.start(false, line),
            Event::SequenceEnd | Event::MappingEnd => self.end(),
            Event::DocumentStart(_)
            | Event::DocumentEnd
            | Event::StreamStart
            | Event::StreamEnd
            | Event::Nothing => Some(()),
        }
    }

    /// A scalar at `line`: a key where a mapping waits for one, else a value.
    fn scalar(
        &mut self,
        text: &str,
        style: ScalarStyle,
        tag: Option<&str>,
        line: usize,
    ) -> Option<()> {
        if let Some(FastFrame {
            first_key,
            kind: FastKind::Map { pending, .. },
            ..
        }) = self.stack.last_mut()
            && pending.is_none()
        {
            let merge = style == ScalarStyle::Plain && tag.is_none() && text == "<<"
                || tag == Some("tag:yaml.org,2002:merge");
            if merge {
                return None;
            }
            let key = key_string(resolve(text, style, tag), text).ok()?;
            match first_key {
                None => *first_key = Some((key.clone(), line)),
                Some((k, l)) if *k == key => *l = line,
                Some(_) => {}
            }
            *pending = Some(key);
            Some(())
        } else {
            let v = scalar_value(resolve(text, style, tag), text).ok()?;
            self.complete(v, line, None)
        }
    }

    /// A sequence (`seq`) or mapping starting at `line`.
    fn start(&mut self, seq: bool, line: usize) -> Option<()> {
        let top_items = match self.stack.as_slice() {
            [
                FastFrame {
                    kind: FastKind::Map { pending, .. },
                    ..
                },
            ] => match pending {
                None => return None,
                Some(k) => k == "items",
            },
            [
                ..,
                FastFrame {
                    kind: FastKind::Map { pending: None, .. },
                    ..
                },
            ] => return None,
            _ => false,
        };
        if self.stack.len() >= MAX_DEPTH {
            return None;
        }
        let kind = if seq {
            FastKind::Seq {
                items: Vec::new(),
                firsts: top_items.then(Vec::new),
            }
        } else {
            FastKind::Map {
                map: Map::new(),
                pending: None,
                item_lines: None,
            }
        };
        self.stack.push(FastFrame {
            line,
            first_key: None,
            kind,
        });
        Some(())
    }

    /// The innermost collection ends.
    fn end(&mut self) -> Option<()> {
        let frame = self.stack.pop()?;
        let first = frame.first_line();
        match frame.kind {
            FastKind::Seq { items, firsts } => self.complete(Value::Array(items), first, firsts),
            FastKind::Map {
                map, item_lines, ..
            } => {
                if self.stack.is_empty() {
                    self.docs.push(Doc {
                        value: Value::Object(map),
                        first_line: first,
                        item_lines,
                    });
                    Some(())
                } else {
                    self.complete(Value::Object(map), first, None)
                }
            }
        }
    }

    /// A finished value (`first`: its first line) into its parent.
    /// `firsts`: the elements' first lines of a top-level `items` list.
    fn complete(&mut self, v: Value, first: usize, firsts: Option<Vec<usize>>) -> Option<()> {
        let depth = self.stack.len();
        match self.stack.last_mut() {
            None => {
                if !v.is_null() {
                    self.docs.push(Doc {
                        value: v,
                        first_line: first,
                        item_lines: None,
                    });
                }
            }
            Some(FastFrame {
                kind: FastKind::Seq { items, firsts: f },
                ..
            }) => {
                items.push(v);
                if let Some(f) = f {
                    f.push(first);
                }
            }
            Some(FastFrame {
                kind:
                    FastKind::Map {
                        map,
                        pending,
                        item_lines,
                    },
                ..
            }) => {
                let key = pending.take()?;
                if depth == 1 && key == "items" {
                    *item_lines = firsts;
                }
                map.insert(key, v);
            }
        }
        Some(())
    }
}

/// [`parse_values`] for a JSON stream: values from serde_json as
/// [`parse_json`] reads them; lines from [`outline`] (where the first key
/// of each document, and of each element of a top-level `items` list, is).
/// `None` where serde_json refuses the text, or an `items` list holds
/// something other than objects.
fn parse_json_docs(text: &str) -> Option<Vec<Doc>> {
    let mut docs = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut scan = outline::Scan::new(text, 0, 1);
    while let Some(item) = stream.next() {
        let mut value = item.ok()?;
        let doc = scan.doc()?;
        if doc.range.end != stream.byte_offset() {
            return None;
        }
        normalize_json_in_place(&mut value);
        if value.is_null() {
            continue;
        }
        let item_lines = match value.get("items") {
            Some(Value::Array(a)) => {
                let items = doc.items?;
                if items.len() != a.len() || !a.iter().all(Value::is_object) {
                    return None;
                }
                Some(items.into_iter().map(|(_, line)| line).collect())
            }
            _ => None,
        };
        docs.push(Doc {
            value,
            first_line: doc.first_line,
            item_lines,
        });
    }
    Some(docs)
}

/// Parses a stream of JSON values. Values come from serde_json (JSON
/// semantics, its error positions); lines come from reading the same text as
/// YAML, which JSON nearly always is. Where that fails every node gets the
/// line its document starts on.
pub fn parse_json(text: &str) -> Result<Vec<Node>, YamlError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut docs = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut start = 0;
    while let Some(item) = stream.next() {
        let end = stream.byte_offset();
        let mut value = item.map_err(json_error)?;
        normalize_json_in_place(&mut value);
        // Position of the value's first character.
        let lead = text[start..end].len() - text[start..end].trim_start().len();
        let first = start + lead;
        let line = 1 + text[..first].matches('\n').count();
        let col = 1 + text[..first]
            .rsplit('\n')
            .next()
            .map_or(0, |s| s.chars().count());
        let located = parse_yaml(&text[first..end])
            .ok()
            .and_then(|mut d| (d.len() == 1).then(|| d.remove(0)))
            .filter(|n| n.to_value() == value)
            .map(|n| shift_lines(n, line - 1));
        let node = located.unwrap_or_else(|| from_value(&value, line, col));
        if !value.is_null() {
            docs.push(node);
        }
        start = end;
    }
    Ok(docs)
}

/// serde_json's error at its line and column, its message without the
/// " at line N column M" it ends with (the error names the place once).
fn json_error(e: serde_json::Error) -> YamlError {
    let text = e.to_string();
    let place = format!(" at line {} column {}", e.line(), e.column());
    let message = text.strip_suffix(&place).unwrap_or(&text).to_string();
    YamlError::at(e.line().max(1), e.column().max(1), message)
}

/// The values of a JSON stream, numbers as kubectl reads them (see
/// [`parse_json`]), null documents skipped; no lines. For live objects
/// saved from a cluster, where only the values matter: one pass of
/// serde_json, no second reading of the text.
pub fn parse_json_values(text: &str) -> Result<Vec<Value>, YamlError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut docs = Vec::new();
    for item in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
        let mut value = item.map_err(json_error)?;
        normalize_json_in_place(&mut value);
        if !value.is_null() {
            docs.push(value);
        }
    }
    Ok(docs)
}

/// Numbers as kubectl's JSON round trip leaves them: floats with an
/// integral value become integers (`1.0` is written `1` and read back as an
/// integer), integers beyond int64 become floats. In place: only numbers
/// change.
fn normalize_json_in_place(v: &mut Value) {
    match v {
        Value::Number(n) => {
            if let Some(f) = n.as_f64()
                && (n.is_f64() || (n.is_u64() && n.as_i64().is_none()))
                && let Some(x) = float_value(f)
            {
                *v = x;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize_json_in_place),
        Value::Object(m) => m.values_mut().for_each(normalize_json_in_place),
        _ => {}
    }
}

fn shift_lines(mut n: Node, by: usize) -> Node {
    fn walk(n: &mut Node, by: usize) {
        n.line += by;
        match &mut n.kind {
            NodeKind::Scalar(_) => {}
            NodeKind::Seq(items) => items.iter_mut().for_each(|i| walk(i, by)),
            NodeKind::Map(entries) => entries.iter_mut().for_each(|e| {
                e.line += by;
                walk(&mut e.value, by);
            }),
        }
    }
    walk(&mut n, by);
    n
}

/// A tree for a value with no better position than one line.
fn from_value(v: &Value, line: usize, col: usize) -> Node {
    let kind = match v {
        Value::Array(items) => {
            NodeKind::Seq(items.iter().map(|i| from_value(i, line, col)).collect())
        }
        Value::Object(m) => NodeKind::Map(
            m.iter()
                .map(|(k, v)| Entry {
                    key: k.clone(),
                    line,
                    value: from_value(v, line, col),
                })
                .collect(),
        ),
        other => NodeKind::Scalar(other.clone()),
    };
    Node { line, col, kind }
}

/// Field path -> line for every node of an object: map keys at the line of
/// the key, list elements at the element's line. Elements of lists that
/// merge by key (per `schema`, the object's patch metadata; `None` for
/// custom resources) are named by key (`containers[name=nginx]`), other
/// elements by index (`args[0]`).
pub fn line_map(root: &Node, schema: Option<Schema<'_>>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    walk_lines(root, "", schema, &mut out);
    out
}

fn walk_lines(
    node: &Node,
    at: &str,
    schema: Option<Schema<'_>>,
    out: &mut BTreeMap<String, usize>,
) {
    match &node.kind {
        NodeKind::Scalar(_) => {}
        NodeKind::Map(entries) => {
            for e in entries {
                let p = path::key(at, &e.key);
                out.insert(p.clone(), e.line);
                walk_lines(&e.value, &p, schema.and_then(|s| s.field(&e.key)), out);
            }
        }
        NodeKind::Seq(items) => {
            let merge_key = schema.and_then(|s| match s.list_strategy() {
                ListStrategy::MergeByKey(k) => Some(k),
                _ => None,
            });
            let item_schema = schema.and_then(|s| s.items());
            for (i, item) in items.iter().enumerate() {
                let keyed = merge_key.and_then(|k| {
                    item.get(k).and_then(|v| match &v.kind {
                        NodeKind::Scalar(s) if !s.is_null() => Some(path::element(at, k, s)),
                        _ => None,
                    })
                });
                let p = keyed.unwrap_or_else(|| path::index(at, i));
                out.insert(p.clone(), item.line);
                walk_lines(item, &p, item_schema, out);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Building the tree from parser events

enum Pending {
    Key(String, usize),
    Merge(usize, usize),
}

enum Frame {
    Seq {
        line: usize,
        col: usize,
        anchor: usize,
        items: Vec<Node>,
    },
    Map {
        line: usize,
        col: usize,
        anchor: usize,
        entries: Vec<Entry>,
        index: HashMap<String, usize>,
        pending: Option<Pending>,
    },
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    /// Anchor id -> (node, its size, its height).
    anchors: HashMap<usize, (Node, usize, usize)>,
    docs: Vec<Node>,
    /// Nodes written in the text and nodes added by aliases, over the whole
    /// input (every document), for the aliasing bound.
    written_nodes: usize,
    alias_nodes: usize,
    /// Line where the current document starts (named in the aliasing error).
    doc_line: usize,
}

fn pos(span: &Span) -> (usize, usize) {
    (span.start.line().max(1), span.start.col() + 1)
}

impl Builder {
    fn event(&mut self, event: Event<'_>, span: Span) -> Result<(), YamlError> {
        let (line, col) = pos(&span);
        match event {
            Event::DocumentStart(_) => {
                // Anchors do not cross documents (the parser resolves them
                // per document); the old trees need not be kept.
                self.anchors.clear();
                self.doc_line = line;
            }
            Event::Scalar(text, style, anchor, tag) => {
                self.written_nodes += 1;
                let tag = tag.as_deref().map(tag_name);
                if self.expecting_key() {
                    let merge = style == ScalarStyle::Plain && tag.is_none() && text == "<<"
                        || tag.as_deref() == Some("tag:yaml.org,2002:merge");
                    let pending = if merge {
                        Pending::Merge(line, col)
                    } else {
                        let key = key_string(resolve(&text, style, tag.as_deref()), &text)
                            .map_err(|m| YamlError::at(line, col, m))?;
                        Pending::Key(key, line)
                    };
                    if anchor > 0 {
                        let v = scalar_value(resolve(&text, style, tag.as_deref()), &text)
                            .map_err(|m| YamlError::at(line, col, m))?;
                        self.anchors
                            .insert(anchor, (Node::scalar(line, col, v), 1, 1));
                    }
                    self.set_pending(pending);
                } else {
                    let v = scalar_value(resolve(&text, style, tag.as_deref()), &text)
                        .map_err(|m| YamlError::at(line, col, m))?;
                    let node = Node::scalar(line, col, v);
                    if anchor > 0 {
                        self.anchors.insert(anchor, (node.clone(), 1, 1));
                    }
                    self.complete(node)?;
                }
            }
            Event::Alias(id) => {
                self.written_nodes += 1;
                let (anchored, size, height) = self
                    .anchors
                    .get(&id)
                    .ok_or_else(|| YamlError::at(line, col, "unknown anchor"))?;
                // Checked before the copy is made, so a refused expansion
                // costs nothing.
                let aliased = self.alias_nodes + size;
                let total = self.written_nodes + aliased;
                if aliased > 100
                    && total > 1000
                    && aliased as f64 / total as f64 > allowed_alias_ratio(total)
                {
                    // Named at the document's start, where kubectl would
                    // name the document it refuses.
                    return Err(YamlError::at(
                        self.doc_line,
                        1,
                        format!(
                            "excessive aliasing: the alias at line {line} column {col} would \
                             expand this input to {total} nodes from {} written \
                             (kubectl refuses such documents too)",
                            self.written_nodes
                        ),
                    ));
                }
                self.alias_nodes = aliased;
                // Aliases nest whole trees: keep the result within the depth
                // limit too.
                if self.stack.len() + height > MAX_DEPTH {
                    return Err(YamlError::at(line, col, "nesting too deep"));
                }
                let node = anchored.clone();
                if self.expecting_key() {
                    let key = match &node.kind {
                        NodeKind::Scalar(v) => value_key(v),
                        _ => None,
                    }
                    .ok_or_else(|| {
                        YamlError::at(
                            line,
                            col,
                            "unsupported map key (an alias to a collection or null)",
                        )
                    })?;
                    self.set_pending(Pending::Key(key, line));
                } else {
                    self.complete(node)?;
                }
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                self.written_nodes += 1;
                if self.expecting_key() {
                    return Err(YamlError::at(
                        line,
                        col,
                        "unsupported map key (a mapping or sequence)",
                    ));
                }
                if self.stack.len() >= MAX_DEPTH {
                    return Err(YamlError::at(line, col, "nesting too deep"));
                }
                let frame = if matches!(event, Event::SequenceStart(..)) {
                    Frame::Seq {
                        line,
                        col,
                        anchor,
                        items: Vec::new(),
                    }
                } else {
                    Frame::Map {
                        line,
                        col,
                        anchor,
                        entries: Vec::new(),
                        index: HashMap::new(),
                        pending: None,
                    }
                };
                self.stack.push(frame);
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(frame) = self.stack.pop() else {
                    return Err(YamlError::at(line, col, "unbalanced collection end"));
                };
                let (node, anchor) = match frame {
                    Frame::Seq {
                        line,
                        col,
                        anchor,
                        items,
                    } => (
                        Node {
                            line,
                            col,
                            kind: NodeKind::Seq(items),
                        },
                        anchor,
                    ),
                    Frame::Map {
                        line,
                        col,
                        anchor,
                        entries,
                        ..
                    } => (
                        Node {
                            line,
                            col,
                            kind: NodeKind::Map(entries),
                        },
                        anchor,
                    ),
                };
                if anchor > 0 {
                    let (size, height) = node.measure();
                    self.anchors.insert(anchor, (node.clone(), size, height));
                }
                self.complete(node)?;
            }
            Event::DocumentEnd | Event::StreamStart | Event::StreamEnd | Event::Nothing => {}
        }
        Ok(())
    }

    fn expecting_key(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Map { pending: None, .. }))
    }

    fn set_pending(&mut self, p: Pending) {
        if let Some(Frame::Map { pending, .. }) = self.stack.last_mut() {
            *pending = Some(p);
        }
    }

    fn complete(&mut self, node: Node) -> Result<(), YamlError> {
        match self.stack.last_mut() {
            None => {
                if !matches!(node.kind, NodeKind::Scalar(Value::Null)) {
                    self.docs.push(node);
                }
            }
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map {
                entries,
                index,
                pending,
                ..
            }) => match pending.take() {
                Some(Pending::Key(key, line)) => set_entry(
                    entries,
                    index,
                    Entry {
                        key,
                        line,
                        value: node,
                    },
                ),
                Some(Pending::Merge(line, col)) => {
                    let ok = match &node.kind {
                        NodeKind::Map(_) => true,
                        NodeKind::Seq(items) => {
                            items.iter().all(|i| matches!(i.kind, NodeKind::Map(_)))
                        }
                        NodeKind::Scalar(_) => false,
                    };
                    if !ok {
                        return Err(YamlError::at(
                            line,
                            col,
                            "map merge requires map or sequence of maps as the value",
                        ));
                    }
                    // go-yaml v2 (so kubectl): merged keys overwrite keys
                    // set before the `<<`, later keys overwrite them, and in
                    // a list of maps the earlier map wins.
                    let sources = match node.kind {
                        NodeKind::Map(e) => vec![e],
                        NodeKind::Seq(items) => items
                            .into_iter()
                            .rev()
                            .filter_map(|i| match i.kind {
                                NodeKind::Map(e) => Some(e),
                                _ => None,
                            })
                            .collect(),
                        NodeKind::Scalar(_) => Vec::new(),
                    };
                    for e in sources.into_iter().flatten() {
                        set_entry(entries, index, e);
                    }
                }
                // A value arrives only after its key; the parser guarantees it.
                None => {
                    return Err(YamlError::at(
                        node.line,
                        node.col,
                        "mapping value without key",
                    ));
                }
            },
        }
        Ok(())
    }
}

/// Inserts or overwrites a key (a repeated key keeps the last value).
fn set_entry(entries: &mut Vec<Entry>, index: &mut HashMap<String, usize>, e: Entry) {
    match index.get(&e.key) {
        Some(&i) => entries[i] = e,
        None => {
            index.insert(e.key.clone(), entries.len());
            entries.push(e);
        }
    }
}

/// `!!str` -> `tag:yaml.org,2002:str`; local tags keep their `!`.
fn tag_name(t: &Tag) -> String {
    format!("{}{}", t.handle, t.suffix)
}

// ---------------------------------------------------------------------------
// Scalar resolution, following go-yaml v2's resolve()

/// A scalar as go-yaml v2 decodes it into `interface{}`.
#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    Error(String),
}

const CORE: &str = "tag:yaml.org,2002:";

fn resolve(text: &str, style: ScalarStyle, tag: Option<&str>) -> Scalar {
    let Some(tag) = tag else {
        return if style == ScalarStyle::Plain {
            resolve_plain(text)
        } else {
            Scalar::Str(text.to_string())
        };
    };
    let Some(core) = tag.strip_prefix(CORE) else {
        // Local and unknown tags: go-yaml keeps the text.
        return Scalar::Str(text.to_string());
    };
    let implicit = resolve_plain(text);
    // The value itself is not quoted: it may be a Secret's (line and column
    // say where it is).
    let mismatch = |found: &str| Scalar::Error(format!("cannot decode a !!{found} as a !!{core}"));
    match core {
        "str" => Scalar::Str(text.to_string()),
        "binary" => {
            let clean: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            match crate::gocompat::decode_bytes(&clean) {
                Some(bytes) => Scalar::Str(String::from_utf8_lossy(&bytes).into_owned()),
                None => Scalar::Error("!!binary value contains invalid base64 data".into()),
            }
        }
        "null" => match implicit {
            Scalar::Null => Scalar::Null,
            other => mismatch(short_tag(&other)),
        },
        "bool" => match implicit {
            Scalar::Bool(b) => Scalar::Bool(b),
            other => mismatch(short_tag(&other)),
        },
        "int" => match implicit {
            s @ (Scalar::Int(_) | Scalar::Uint(_)) => s,
            other => mismatch(short_tag(&other)),
        },
        "float" => match implicit {
            Scalar::Int(i) => Scalar::Float(i as f64),
            Scalar::Uint(u) => Scalar::Float(u as f64),
            s @ Scalar::Float(_) => s,
            other => mismatch(short_tag(&other)),
        },
        // go-yaml hands timestamps to interface{} as their text.
        "timestamp" if looks_like_timestamp(text) => Scalar::Str(text.to_string()),
        "timestamp" => mismatch(short_tag(&implicit)),
        _ => Scalar::Str(text.to_string()),
    }
}

fn short_tag(s: &Scalar) -> &'static str {
    match s {
        Scalar::Null => "null",
        Scalar::Bool(_) => "bool",
        Scalar::Int(_) | Scalar::Uint(_) => "int",
        Scalar::Float(_) => "float",
        Scalar::Str(_) | Scalar::Error(_) => "str",
    }
}

fn looks_like_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 8 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-'
}

/// Plain (unquoted, untagged) scalar resolution: the YAML 1.1 table of
/// go-yaml v2, then integers (Go `ParseInt(s, 0, 64)`: octal `0644`, `0x`,
/// `0o`, `0b`, underscores dropped), then floats.
fn resolve_plain(s: &str) -> Scalar {
    let hint = match s.as_bytes().first() {
        None => b'M',
        Some(b'+' | b'-') => b'S',
        Some(b'0'..=b'9') => b'D',
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => b'M',
        Some(b'.') => b'.',
        _ => return Scalar::Str(s.to_string()),
    };
    match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Scalar::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Scalar::Bool(false);
        }
        "" | "~" | "null" | "Null" | "NULL" => return Scalar::Null,
        ".nan" | ".NaN" | ".NAN" => return Scalar::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Scalar::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Scalar::Float(f64::NEG_INFINITY),
        _ => {}
    }
    match hint {
        b'.' => {
            if let Some(f) = go_parse_float(s) {
                return Scalar::Float(f);
            }
        }
        b'D' | b'S' => {
            let plain: String = s.chars().filter(|&c| c != '_').collect();
            if let Some(i) = go_parse_int(&plain) {
                return Scalar::Int(i);
            }
            if let Some(u) = go_parse_uint(&plain) {
                return Scalar::Uint(u);
            }
            if let Some(f) = go_parse_float(&plain) {
                return Scalar::Float(f);
            }
        }
        _ => {}
    }
    Scalar::Str(s.to_string())
}

/// go-yaml's `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_yaml_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            digits(&mut i);
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `ParseFloat` on text that matches [`is_yaml_float`]; out of range
/// is an error there, so the scalar stays a string.
fn go_parse_float(s: &str) -> Option<f64> {
    if !is_yaml_float(s) {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Magnitude and base per Go's base-0 prefix rules; `None` when malformed.
fn go_magnitude(digits: &str) -> Option<u64> {
    let (radix, body) = if let Some(r) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        (16, r)
    } else if let Some(r) = digits
        .strip_prefix("0o")
        .or_else(|| digits.strip_prefix("0O"))
    {
        (8, r)
    } else if let Some(r) = digits
        .strip_prefix("0b")
        .or_else(|| digits.strip_prefix("0B"))
    {
        (2, r)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(body, radix).ok()
}

/// Go `strconv.ParseInt(s, 0, 64)`.
fn go_parse_int(s: &str) -> Option<i64> {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let m = go_magnitude(digits)?;
    if neg {
        if m <= i64::MAX as u64 + 1 {
            Some((m as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(m).ok()
    }
}

/// Go `strconv.ParseUint(s, 0, 64)`: no sign.
fn go_parse_uint(s: &str) -> Option<u64> {
    go_magnitude(s)
}

/// A float as the JSON round trip leaves it: integral values print without
/// a fraction and come back as integers.
fn float_value(f: f64) -> Option<Value> {
    if !f.is_finite() {
        return None;
    }
    let shown = format!("{f}");
    if let Ok(i) = shown.parse::<i64>() {
        return Some(Value::from(i));
    }
    Number::from_f64(f).map(Value::Number)
}

fn scalar_value(s: Scalar, text: &str) -> Result<Value, String> {
    Ok(match s {
        Scalar::Null => Value::Null,
        Scalar::Bool(b) => Value::Bool(b),
        Scalar::Int(i) => Value::from(i),
        // JSON readers in kubectl take numbers beyond int64 as floats.
        Scalar::Uint(u) => i64::try_from(u).map_or_else(
            |_| float_value(u as f64).unwrap_or(Value::Null),
            Value::from,
        ),
        Scalar::Float(f) => float_value(f)
            .ok_or_else(|| format!("`{text}` (infinity or NaN) cannot be represented in JSON"))?,
        Scalar::Str(s) => Value::String(s),
        Scalar::Error(m) => return Err(m),
    })
}

/// A mapping key as sigs.k8s.io/yaml turns it into a JSON key.
fn key_string(s: Scalar, text: &str) -> Result<String, String> {
    match s {
        Scalar::Str(s) => Ok(s),
        Scalar::Bool(b) => Ok(b.to_string()),
        Scalar::Int(i) => Ok(i.to_string()),
        Scalar::Float(f) => Ok(go_float32_g(f)),
        Scalar::Null => Err(format!("unsupported map key `{text}` (null)")),
        Scalar::Uint(_) => Err(format!("unsupported map key `{text}` (out of int64 range)")),
        Scalar::Error(m) => Err(m),
    }
}

/// A key reached through an alias (its value is already JSON).
fn value_key(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(match n.as_i64() {
            Some(i) => i.to_string(),
            None => go_float32_g(n.as_f64()?),
        }),
        _ => None,
    }
}

/// Go `strconv.FormatFloat(f, 'g', -1, 32)` with go-yaml's spellings of the
/// specials: how sigs.k8s.io/yaml names a float key.
fn go_float32_g(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    // Beyond float32 too: Go prints +Inf, which go-yaml spells .inf.
    crate::gocompat::format_float32(f)
        .unwrap_or_else(|| if f > 0.0 { ".inf" } else { "-.inf" }.into())
}

// ---------------------------------------------------------------------------
// Writing

/// Renders a value as block YAML for display, in kubectl's layout (list
/// items at their key's indentation). Strings that YAML 1.1 would read back
/// as something else (`"yes"`, `"0644"`, `"null"`, ...) are quoted, so the
/// text parses back to the same value.
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(m) if !m.is_empty() => write_map(&mut out, m, 0),
        Value::Array(a) if !a.is_empty() => write_seq(&mut out, a, 0),
        other => {
            out.push_str(&inline_scalar(other, 0));
            out.push('\n');
        }
    }
    out
}

/// [`to_yaml`] plus the line of every field path in the text (1-based), so
/// a display can point at `spec.template.spec.containers[name=nginx].image`.
/// `schema` names keyed list elements as in [`line_map`].
pub fn to_yaml_with_lines(
    value: &Value,
    schema: Option<Schema<'_>>,
) -> (String, BTreeMap<String, usize>) {
    let text = to_yaml(value);
    // The text parses back to the value (see the round-trip test), so its
    // tree has the lines.
    let lines = match parse_yaml(&text) {
        Ok(docs) => docs
            .first()
            .map(|d| line_map(d, schema))
            .unwrap_or_default(),
        Err(_) => BTreeMap::new(),
    };
    (text, lines)
}

fn write_map(out: &mut String, m: &Map<String, Value>, indent: usize) {
    let pad = " ".repeat(indent);
    for (k, v) in m {
        let _ = write!(out, "{pad}{}:", quote_if_needed(k));
        write_value_after_key(out, v, indent);
    }
}

fn write_value_after_key(out: &mut String, v: &Value, indent: usize) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            write_map(out, m, indent + 2);
        }
        // kubectl style: list items at the key's indentation.
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            write_seq(out, a, indent);
        }
        other => {
            out.push(' ');
            out.push_str(&inline_scalar(other, indent + 2));
            out.push('\n');
        }
    }
}

fn write_seq(out: &mut String, a: &[Value], indent: usize) {
    let pad = " ".repeat(indent);
    for v in a {
        match v {
            Value::Object(m) if !m.is_empty() => {
                // First key on the dash line, the rest aligned under it.
                let mut first = true;
                for (k, v) in m {
                    if first {
                        let _ = write!(out, "{pad}- {}:", quote_if_needed(k));
                        first = false;
                    } else {
                        let _ = write!(out, "{pad}  {}:", quote_if_needed(k));
                    }
                    write_value_after_key(out, v, indent + 2);
                }
            }
            Value::Array(inner) if !inner.is_empty() => {
                let _ = writeln!(out, "{pad}-");
                write_seq(out, inner, indent + 2);
            }
            other => {
                let _ = writeln!(out, "{pad}- {}", inline_scalar(other, indent + 2));
            }
        }
    }
}

/// A scalar (or empty collection) on one line; multi-line strings become a
/// literal block indented at `indent`.
fn inline_scalar(v: &Value, indent: usize) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        Value::String(s) => {
            if let Some(block) = literal_block(s, indent) {
                block
            } else {
                quote_if_needed(s)
            }
        }
    }
}

fn literal_block(s: &str, indent: usize) -> Option<String> {
    if !s.contains('\n')
        || s.trim().is_empty()
        || s.chars().any(|c| c != '\n' && c != '\t' && c.is_control())
    {
        return None;
    }
    let body = s.trim_end_matches('\n');
    let trailing = s.len() - body.len();
    // Lines ending in blanks or starting with a blank first line do not
    // survive a literal block; quote those.
    if body.lines().any(|l| l.ends_with([' ', '\t'])) || body.starts_with([' ', '\t', '\n']) {
        return None;
    }
    let chomp = match trailing {
        0 => "-",
        1 => "",
        _ => "+",
    };
    let pad = " ".repeat(indent.max(1));
    let mut out = format!("|{chomp}");
    for line in s.strip_suffix('\n').unwrap_or(s).split('\n') {
        out.push('\n');
        if !line.is_empty() {
            out.push_str(&pad);
            out.push_str(line);
        }
    }
    Some(out)
}

/// The string as a plain scalar when that reads back as the same string,
/// else double-quoted.
fn quote_if_needed(s: &str) -> String {
    if plain_safe(s) {
        s.to_string()
    } else {
        double_quoted(s)
    }
}

fn plain_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if !matches!(resolve_plain(s), Scalar::Str(_)) || s == "<<" {
        return false;
    }
    if "-?:,[]{}#&*!|>'\"%@`".contains(first)
        && !(matches!(first, '-' | '?' | ':') && s.len() > 1 && !s[1..].starts_with(' '))
    {
        return false;
    }
    if s.starts_with(' ') || s.ends_with(' ') || s.ends_with(':') {
        return false;
    }
    // Flow indicators are safe in block context except where they end a
    // plain scalar; keep it simple and quote them too.
    if s.contains(": ")
        || s.contains(" #")
        || s.contains(['\t', '\n', '\r', ',', '[', ']', '{', '}'])
    {
        return false;
    }
    if s == "-" || s.starts_with("---") || s.starts_with("...") {
        return false;
    }
    !s.chars().any(|c| {
        c.is_control() || c == '\u{feff}' || c == '\u{85}' || c == '\u{2028}' || c == '\u{2029}'
    })
}

fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() || matches!(c, '\u{feff}' | '\u{2028}' | '\u{2029}') => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patchmeta::PatchMeta;
    use serde_json::json;

    fn one(text: &str) -> Value {
        let docs = parse(text).unwrap();
        assert_eq!(docs.len(), 1, "{text}");
        docs[0].to_value()
    }

    #[test]
    fn yaml11_scalars() {
        let v = one(
            "a: yes\nb: No\nc: on\nd: OFF\ne: y\nf: n\ng: True\nh: tRUE\ni: 0644\nj: 0x1F\nk: ~\nl:\nm: null\n\
             nn: 1.0\no: 1.5\np: '0644'\nq: \"yes\"\nr: 1_000\ns: 0b101\nt: 0o17\nu: -0644\nv: 08\nw: 1e3\n\
             x: 2001-12-14\nyy: .5\nz: 1e400\n",
        );
        assert_eq!(
            v,
            json!({"a": true, "b": false, "c": true, "d": false, "e": true, "f": false, "g": true,
                   "h": "tRUE", "i": 420, "j": 31, "k": null, "l": null, "m": null, "nn": 1, "o": 1.5,
                   "p": "0644", "q": "yes", "r": 1000, "s": 5, "t": 15, "u": -420, "v": 8, "w": 1000,
                   "x": "2001-12-14", "yy": 0.5, "z": "1e400"})
        );
    }

    #[test]
    fn keys_resolve_too() {
        let v = one("y: 1\nn: 2\n0644: 3\n1.5: 4\n\"y\": 5\n1000000.0: 6\n");
        assert_eq!(
            v,
            json!({"true": 1, "false": 2, "420": 3, "1.5": 4, "y": 5, "1e+06": 6})
        );
        assert!(parse("~: 1\n").is_err());
    }

    #[test]
    fn tags_and_blocks() {
        let v = one(
            "a: !!str 0644\nb: !!int \"12\"\nc: !!float 1\nd: !custom yes\ne: |\n  x\n  y\nf: >-\n  yes\n\
             g: !!binary aGVsbG8=\nh: !!bool \"on\"\n",
        );
        assert_eq!(
            v,
            json!({"a": "0644", "b": 12, "c": 1, "d": "yes", "e": "x\ny\n", "f": "yes", "g": "hello", "h": true})
        );
        let err = parse("a: !!int abc\n").unwrap_err();
        assert_eq!((err.line, err.col), (1, 4));
        assert!(err.message.contains("!!int"), "{err}");
    }

    #[test]
    fn infinity_is_an_error() {
        let err = parse("a: 1\nb: .inf\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(parse("a: .nan\n").is_err());
        assert_eq!(one("a: .iNf\n"), json!({"a": ".iNf"}));
    }

    #[test]
    fn anchors_aliases_merge() {
        let v = one(
            "base: &b\n  x: 1\n  w: 2\nother: &o {z: 3, x: 9}\nm:\n  <<: [*b, *o]\n  w: 5\nlist: &l [1, 2]\nl2: *l\n\
             before:\n  w: 0\n  <<: *b\ntwice:\n  <<: *b\n  <<: *o\n",
        );
        assert_eq!(v["m"], json!({"x": 1, "w": 5, "z": 3}));
        // As kubectl (go-yaml v2) reads them: a merge overwrites earlier keys.
        assert_eq!(v["before"], json!({"x": 1, "w": 2}));
        assert_eq!(v["twice"], json!({"x": 9, "w": 2, "z": 3}));
        assert_eq!(v["l2"], json!([1, 2]));
        assert!(parse("a: &a 1\nb:\n  <<: *a\n").is_err());
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let p = i - 1;
            text.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"));
        }
        let err = parse(&text).unwrap_err();
        assert!(err.message.contains("excessive aliasing"), "{err}");
        assert_eq!(err.line, 1);
    }

    /// A document whose aliases add 98% of its ~306k nodes: kubectl (per
    /// document) and this reader both accept one.
    fn heavily_aliased_document(name: usize) -> String {
        let mut doc = format!(
            "---\nname: d{name}\nbase: &b [{}]\nuses: [",
            ["x"; 49].join(", ")
        );
        doc.push_str(&["*b"; 6000].join(", "));
        doc.push_str("]\n");
        doc
    }

    #[test]
    fn aliasing_is_bounded_per_input_not_per_document() {
        let one = heavily_aliased_document(0);
        assert_eq!(parse(&one).unwrap().len(), 1);
        // Two such documents are too much for one input; the error names the
        // second document, where the bound was crossed.
        let two = format!("{one}{}", heavily_aliased_document(1));
        let second = 1 + one.lines().count();
        let err = parse(&two).unwrap_err();
        assert!(err.message.contains("excessive aliasing"), "{err}");
        assert_eq!((err.line, err.col), (second, 1), "{err}");
    }

    #[test]
    fn ordinary_aliases_still_load() {
        // Shared env and resources blocks, as people write them.
        let docs = parse(
            "x-env: &env\n  - {name: MODE, value: prod}\n  - {name: LOG, value: info}\n\
             x-res: &res {limits: {cpu: 100m}}\n\
             containers:\n  - {name: a, env: *env, resources: *res}\n  - {name: b, env: *env, resources: *res}\n\
             ---\nbase: &base {a: 1}\nderived:\n  <<: *base\n  b: 2\n",
        )
        .unwrap();
        assert_eq!(docs.len(), 2);
        let v = docs[0].to_value();
        assert_eq!(
            v["containers"][1]["env"][1],
            json!({"name": "LOG", "value": "info"})
        );
        assert_eq!(docs[1].to_value()["derived"], json!({"a": 1, "b": 2}));
    }

    #[test]
    fn nesting_is_bounded_through_aliases_too() {
        let deep = format!("a: {}1{}\n", "[".repeat(300), "]".repeat(300));
        // saphyr's own limit or ours, either way an error.
        let err = parse(&deep).unwrap_err();
        assert!(
            err.message.contains("too deep") || err.message.contains("recursion limit"),
            "{err}"
        );
        // Each anchor nests the previous one 100 levels deeper.
        let mut text = format!("a0: &a0 {}1{}\n", "[".repeat(100), "]".repeat(100));
        for i in 1..5 {
            let p = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} {}*a{p}{}\n",
                "[".repeat(100),
                "]".repeat(100)
            ));
        }
        let err = parse(&text).unwrap_err();
        assert!(err.message.contains("too deep"), "{err}");
        assert_eq!(err.line, 3);
    }

    #[test]
    fn documents_and_lines() {
        let text = "# c\n---\n---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\n---\n~\n---\nkind: B\n";
        let docs = parse(text).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].first_line(), 6);
        assert_eq!(docs[1].first_line(), 11);
    }

    #[test]
    fn crlf_and_bom() {
        let docs = parse("\u{feff}a: yes\r\nb: |\r\n  x\r\n---\r\nc: 1\r\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].to_value(), json!({"a": true, "b": "x\n"}));
        assert_eq!(docs[1].entry("c").unwrap().line, 5);
    }

    #[test]
    fn syntax_errors_have_positions() {
        let err = parse("a: 1\nb: 2\nc: d: e\n").unwrap_err();
        assert_eq!((err.line, err.col), (3, 5), "{err:?}");
        assert!(err.message.contains("mapping values"), "{err:?}");
        let err = parse("a: 1\nb: *nope\n").unwrap_err();
        assert_eq!(err.line, 2, "{err:?}");
    }

    #[test]
    fn json_streams() {
        let docs = parse("{\"a\": 1.0,\n \"b\": \"yes\"}\n{\"c\": null}\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].to_value(), json!({"a": 1, "b": "yes"}));
        assert_eq!(docs[0].entry("b").unwrap().line, 2);
        assert_eq!(docs[1].line, 3);
        let err = parse("{\"a\": 1,\n \"b\": }\n").unwrap_err();
        assert_eq!(err.line, 2);
    }

    #[test]
    fn json_floats_are_exact() {
        // serde_json's default float parsing is not always correctly
        // rounded; kapply enables float_roundtrip so JSON and YAML agree.
        for f in [
            "5e35",
            "4.35",
            "0.1",
            "1.7976931348623157e308",
            "2.2250738585072014e-308",
        ] {
            let j = parse(&format!("{{\"a\": {f}}}")).unwrap()[0].to_value();
            let y = parse(&format!("a: {f}")).unwrap()[0].to_value();
            assert_eq!(j, y, "{f}");
            assert_eq!(j["a"].as_f64(), f.parse::<f64>().ok(), "{f}");
        }
    }

    #[test]
    fn line_map_uses_merge_keys() {
        let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: nginx\n        image: nginx:1\n        args: [a, b]\n";
        let docs = parse(text).unwrap();
        let schema = PatchMeta::builtin().root("apps/v1", "Deployment");
        let lines = line_map(&docs[0], schema);
        assert_eq!(lines["spec.template.spec.containers[name=nginx].image"], 10);
        assert_eq!(lines["spec.template.spec.containers[name=nginx]"], 9);
        assert_eq!(
            lines["spec.template.spec.containers[name=nginx].args[1]"],
            11
        );
        assert_eq!(lines["metadata.name"], 4);
        // Without a schema, lists are indexed.
        let lines = line_map(&docs[0], None);
        assert_eq!(lines["spec.template.spec.containers[0].image"], 10);
    }

    #[test]
    fn float_keys_like_go() {
        assert_eq!(go_float32_g(1.5), "1.5");
        assert_eq!(go_float32_g(100000.0), "100000");
        assert_eq!(go_float32_g(1e6), "1e+06");
        assert_eq!(go_float32_g(0.0001), "0.0001");
        assert_eq!(go_float32_g(0.00001), "1e-05");
        assert_eq!(go_float32_g(-2.5e-7), "-2.5e-07");
        assert_eq!(go_float32_g(1e39), ".inf");
        assert_eq!(go_float32_g(-1e39), "-.inf");
    }

    #[test]
    fn to_yaml_quotes_what_would_change() {
        let v = json!({"a": "yes", "b": "0644", "c": "y", "d": "null", "e": "", "f": "plain text",
                       "g": "multi\nline\n", "h": "- x", "i": "a: b", "j": 1.5, "k": [], "l": {},
                       "y": {"n": ["on", 1, null, true]}, "m": [{"name": "x", "ports": [{"p": 1}]}],
                       "o": "#x", "p": " lead", "q": "tab\there", "r": "no newline\nend"});
        let text = to_yaml(&v);
        assert!(text.contains("a: \"yes\"\n"), "{text}");
        assert!(text.contains("\"y\":\n"), "{text}");
        assert!(text.contains("f: plain text\n"), "{text}");
        assert!(text.contains("g: |\n  multi\n  line\n"), "{text}");
        assert!(
            text.contains("m:\n- name: x\n  ports:\n  - p: 1\n"),
            "{text}"
        );
        assert_eq!(one(&text), v);
    }

    #[test]
    fn rendered_yaml_has_a_line_map() {
        let v = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": [
                {"name": "a", "image": "x"}, {"name": "nginx", "image": "nginx:1", "args": ["a\nb\n"]}]}}}});
        let schema = PatchMeta::builtin().root("apps/v1", "Deployment");
        let (text, lines) = to_yaml_with_lines(&v, schema);
        let line_of = |l: usize| {
            text.lines()
                .nth(l - 1)
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        assert_eq!(
            line_of(lines["spec.template.spec.containers[name=nginx].image"]),
            "image: nginx:1"
        );
        assert_eq!(line_of(lines["metadata.name"]), "name: web");
        // A block scalar list item starts at its first content line.
        assert_eq!(
            line_of(lines["spec.template.spec.containers[name=nginx].args[0]"]),
            "a"
        );
    }

    /// Where the fast reader answers, it gives what the full reader gives:
    /// values, first lines, and the first lines of `items` elements.
    fn fast_agrees(text: &str) -> bool {
        let Some(fast) = parse_values(text) else {
            return false;
        };
        let full =
            parse(text).unwrap_or_else(|e| panic!("fast read what full refuses: {e}\n{text}"));
        assert_eq!(fast.len(), full.len(), "{text}");
        for (f, n) in fast.iter().zip(&full) {
            assert_eq!(f.value, n.to_value(), "{text}");
            assert_eq!(f.first_line, n.first_line(), "{text}");
            if let Some(lines) = &f.item_lines {
                let Some(NodeKind::Seq(items)) = n.get("items").map(|i| &i.kind) else {
                    panic!("item lines without items: {text}");
                };
                let want: Vec<usize> = items.iter().map(Node::first_line).collect();
                assert_eq!(lines, &want, "{text}");
            }
        }
        true
    }

    #[test]
    fn fast_reader_agrees_with_the_full_one() {
        for text in [
            "a: 1\n",
            "\n\n# c\n---\n---\nkind: A\nitems:\n- a: 1\n  b: 2\n-\n  c: 3\n- {}\n- x\n---\n~\n---\nb: 1\n",
            "a: 1\na: 2\nb: 3\n",
            "items: []\nitems:\n  - x: 1\n",
            "items:\n  - x: 1\nitems: 5\n",
            "apiVersion: v1\nkind: List\nitems:\n- kind: ConfigMap\n  metadata: {name: a}\n",
            "- a\n- b\n",
            "just text\n",
            "{}\n",
            "\u{feff}a: yes\r\nb: |\r\n  x\r\n---\r\nc: 1\r\n",
            "{\"a\": 1.0,\n \"b\": \"yes\"}\n{\"c\": null}\n",
            "\n  {\n \"kind\": \"List\", \"items\": [\n  {\"a\": 1},\n  {},\n  {\n\"x\": {\"items\": [1]}}]}\n\n{\"b\": \"\\\"{\"}",
            "{\"items\": [{\"a\": 1}], \"items\": null}",
            "{\"\\u0069tems\": [{\"a\": 1},\n {\n \"b\": [{\"items\": 2}]}], \"kind\": \"x\"}\n\n[1,\n2] \"s\"",
        ] {
            assert!(fast_agrees(text), "{text}");
        }
        // Left to the full reader: aliases, merge keys, errors.
        for text in [
            "a: &x 1\nb: *x\n",
            "a: {x: 1}\nb:\n  <<: {y: 2}\n",
            "a: 1\nb: 2\nc: d: e\n",
            "a: .inf\n",
            "~: 1\n",
            "{\"a\": }",
            "{\"items\": [1, 2]}",
        ] {
            assert!(parse_values(text).is_none(), "{text}");
        }
        // The manifests of the tests.
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/manifests");
        let mut stack = vec![dir];
        let mut seen = 0;
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if let Ok(text) = std::fs::read_to_string(&p) {
                    fast_agrees(&text);
                    seen += 1;
                }
            }
        }
        assert!(seen > 10, "{seen}");
    }

    proptest::proptest! {
        #[test]
        fn to_yaml_round_trips(v in arb_value()) {
            proptest::prop_assert!(fast_agrees(&to_yaml(&v)) || !v.is_object());
            let text = to_yaml(&v);
            let back = parse(&text).map(|d| d.first().map(Node::to_value).unwrap_or(Value::Null));
            proptest::prop_assert_eq!(back, Ok(v), "{}", text);
        }
    }

    fn arb_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let word = prop_oneof![
            Just("yes".to_string()),
            Just("0644".to_string()),
            Just("~".to_string()),
            Just("<<".to_string()),
            Just("- a".to_string()),
            Just("a\nb\n\n".to_string()),
            "[ -~]{0,8}",
            "[a-z\\n:#'\"\\\\ ]{0,12}",
            "[ a\\n\\t-]{0,6}",
            "\\PC{0,6}",
            any::<String>(),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1.0e6f64..1.0e6).prop_filter_map("integral", float_value),
            word.clone().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(word.clone(), inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn a_json_error_names_its_place_once() {
        let e = parse_json(r#"{"a": 1"#).unwrap_err();
        assert_eq!(e.line, 1);
        assert_eq!(e.message, "EOF while parsing an object");
        let e = parse_json_values("{\n  \"a\": ]\n}").unwrap_err();
        assert_eq!(e.line, 2);
        assert_eq!(e.message, "expected value");
    }
}
