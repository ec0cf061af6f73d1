//! The managedFields format, read and written in one place: a FieldsV1
//! value (`{"f:spec":{"f:replicas":{}}}`) as a set of paths of path
//! elements (`f:spec`, `k:{"name":"nginx"}`, `v:"x"`, `i:0`, `.`), and back.
//! The client's owner lookup (`merge::owners`) and the embedded server's
//! own bookkeeping (`server::fields`, which decides independently who owns
//! what) both read the format through here. No I/O.

use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// A managedFields path as FieldsV1 path elements (`f:spec`, `k:{"name":"a"}`); the rows'
/// typed path is `fieldpath::FieldPath`.
pub type ManagedPath = Vec<String>;
/// The leaf paths of a FieldsV1 value.
pub type FieldSet = BTreeSet<ManagedPath>;

/// One FieldsV1 path element, parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum Element<'a> {
    /// `f:name`: a field of a map.
    Field(&'a str),
    /// `k:{…}`: a list element by its key fields; `keys` is `None` when the
    /// text is not a JSON object (`raw` is the text after `k:`).
    Key {
        keys: Option<Map<String, Value>>,
        raw: &'a str,
    },
    /// `v:…`: an element of a set by its value; `value` is `None` when the
    /// text is not JSON (`raw` is the text after `v:`).
    Value { value: Option<Value>, raw: &'a str },
    /// `i:n`: a list element by index (the text after `i:`).
    Index(&'a str),
    /// `.`: the element itself.
    Itself,
    /// Anything else, as written.
    Other(&'a str),
}

/// Parse one path element.
pub fn element(pe: &str) -> Element<'_> {
    if let Some(k) = pe.strip_prefix("f:") {
        Element::Field(k)
    } else if let Some(raw) = pe.strip_prefix("k:") {
        Element::Key {
            keys: serde_json::from_str(raw).ok(),
            raw,
        }
    } else if let Some(raw) = pe.strip_prefix("v:") {
        Element::Value {
            value: serde_json::from_str(raw).ok(),
            raw,
        }
    } else if let Some(i) = pe.strip_prefix("i:") {
        Element::Index(i)
    } else if pe == "." {
        Element::Itself
    } else {
        Element::Other(pe)
    }
}

/// `f:name`.
pub fn field_element(name: &str) -> String {
    format!("f:{name}")
}

/// `k:{"name":"nginx"}` for a list element's key fields.
pub fn key_element(keys: Map<String, Value>) -> String {
    format!("k:{}", Value::Object(keys))
}

/// `v:"x"` for an element of a set.
pub fn value_element(v: &Value) -> String {
    format!("v:{v}")
}

/// FieldsV1 JSON of a set.
pub fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut cur = &mut root;
        for pe in path {
            let entry = cur.entry(pe.clone()).or_insert_with(|| json!({}));
            match entry.as_object_mut() {
                Some(m) => cur = m,
                None => break,
            }
        }
    }
    Value::Object(root)
}

/// The leaf paths of a FieldsV1 value.
pub fn from_fields_v1(v: &Value) -> FieldSet {
    let mut out = FieldSet::new();
    fn rec(v: &Value, path: &mut ManagedPath, out: &mut FieldSet) {
        match v.as_object() {
            Some(m) if !m.is_empty() => {
                for (k, child) in m {
                    path.push(k.clone());
                    rec(child, path, out);
                    path.pop();
                }
            }
            _ => {
                if !path.is_empty() {
                    out.insert(path.clone());
                }
            }
        }
    }
    rec(v, &mut Vec::new(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_parse_and_spell_back() {
        assert_eq!(element("f:spec"), Element::Field("spec"));
        let mut keys = Map::new();
        keys.insert("name".into(), json!("nginx"));
        let k = key_element(keys.clone());
        assert_eq!(k, r#"k:{"name":"nginx"}"#);
        assert_eq!(
            element(&k),
            Element::Key {
                keys: Some(keys),
                raw: r#"{"name":"nginx"}"#
            }
        );
        assert_eq!(
            element("k:oops"),
            Element::Key {
                keys: None,
                raw: "oops"
            }
        );
        let v = value_element(&json!("x"));
        assert_eq!(v, r#"v:"x""#);
        assert_eq!(
            element(&v),
            Element::Value {
                value: Some(json!("x")),
                raw: r#""x""#
            }
        );
        assert_eq!(element("i:3"), Element::Index("3"));
        assert_eq!(element("."), Element::Itself);
        assert_eq!(element("spec"), Element::Other("spec"));
        assert_eq!(field_element("replicas"), "f:replicas");
    }

    #[test]
    fn fields_v1_round_trips() {
        let v = json!({"f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:containers": {r#"k:{"name":"c"}"#: {".": {}, "f:image": {}}}}});
        let set = from_fields_v1(&v);
        assert_eq!(set.len(), 3);
        assert!(set.contains(&vec![
            "f:spec".to_string(),
            "f:containers".into(),
            r#"k:{"name":"c"}"#.into(),
            ".".into()
        ]));
        assert_eq!(to_fields_v1(&set), v);
        assert!(from_fields_v1(&json!({})).is_empty());
    }
}
