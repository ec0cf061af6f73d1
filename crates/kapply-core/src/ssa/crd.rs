//! The structural schemas of CustomResourceDefinitions as server-side apply
//! reads them (structured-merge-diff on a CRD's `openAPIV3Schema`): lists
//! atomic unless `x-kubernetes-list-type` says `set` or `map` (keyed by
//! `x-kubernetes-list-map-keys`), objects field by field unless
//! `x-kubernetes-map-type: atomic`, fields without a schema (under
//! `x-kubernetes-preserve-unknown-fields`) as maps field by field with
//! atomic lists. A custom resource's `metadata` is ObjectMeta, as for any
//! kind. Hand-written: the schema is a few extensions on plain JSON, and
//! the built-in types' shape lives in `crate::patchmeta`.

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// How a list merges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ListType {
    /// Replaced whole (`atomic`, or no list type: the default).
    #[default]
    Atomic,
    /// A set of scalars, element by element (`set`).
    Set,
    /// Elements matched by these key fields (`map`).
    Map(Vec<String>),
}

/// One node of a structural schema.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Node {
    properties: BTreeMap<String, Node>,
    /// `additionalProperties`: the schema of every value of a map.
    additional: Option<Box<Node>>,
    items: Option<Box<Node>>,
    pub list: ListType,
    /// `x-kubernetes-map-type: atomic`: the object is one field.
    pub atomic: bool,
}

impl Node {
    fn parse(v: &Value) -> Node {
        let props = v["properties"].as_object();
        let list = match v["x-kubernetes-list-type"].as_str() {
            Some("set") => ListType::Set,
            Some("map") => ListType::Map(
                v["x-kubernetes-list-map-keys"]
                    .as_array()
                    .map(|keys| {
                        keys.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            _ => ListType::Atomic,
        };
        Node {
            properties: props
                .map(|p| p.iter().map(|(k, s)| (k.clone(), Node::parse(s))).collect())
                .unwrap_or_default(),
            additional: v["additionalProperties"]
                .is_object()
                .then(|| Box::new(Node::parse(&v["additionalProperties"]))),
            items: v["items"]
                .is_object()
                .then(|| Box::new(Node::parse(&v["items"]))),
            list,
            atomic: v["x-kubernetes-map-type"] == "atomic",
        }
    }

    /// A struct field's or a map value's schema; `None`: none (deduced).
    pub fn field(&self, name: &str) -> Option<&Node> {
        self.properties.get(name).or(self.additional.as_deref())
    }

    /// A list's items' schema.
    pub fn items(&self) -> Option<&Node> {
        self.items.as_deref()
    }
}

/// The schemas of the custom kinds of a set of CRDs, by `group/version`
/// and kind (every version that has a schema).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CrdSchemas {
    kinds: HashMap<(String, String), Node>,
}

impl CrdSchemas {
    /// The schemas of `crds` (CustomResourceDefinitions, or a LIST's items
    /// that name no kind; other kinds are skipped); a later CRD of the same group and kind wins,
    /// so pass the cluster's first and the manifests' after them.
    pub fn from_crds<'a>(crds: impl IntoIterator<Item = &'a Value>) -> CrdSchemas {
        let mut out = CrdSchemas::default();
        for crd in crds {
            out.add(crd);
        }
        out
    }

    /// Adds (or replaces) the kinds of one CRD.
    pub fn add(&mut self, crd: &Value) {
        // The items of a LIST carry no kind.
        if crd
            .get("kind")
            .is_some_and(|k| k != "CustomResourceDefinition")
        {
            return;
        }
        let (Some(group), Some(kind)) = (
            crd["spec"]["group"].as_str(),
            crd["spec"]["names"]["kind"].as_str(),
        ) else {
            return;
        };
        for v in crd["spec"]["versions"].as_array().into_iter().flatten() {
            let (Some(name), Some(schema)) = (
                v["name"].as_str(),
                v["schema"]["openAPIV3Schema"].as_object(),
            ) else {
                continue;
            };
            self.kinds.insert(
                (format!("{group}/{name}"), kind.to_string()),
                Node::parse(&Value::Object(schema.clone())),
            );
        }
    }

    /// The root schema of `apiVersion` `kind`, when a CRD gives one.
    pub fn root(&self, api_version: &str, kind: &str) -> Option<&Node> {
        self.kinds.get(&(api_version.to_string(), kind.to_string()))
    }

    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_list_and_map_types_per_version() {
        let crd = json!({
            "kind": "CustomResourceDefinition",
            "spec": {"group": "demo.kapply.dev", "names": {"kind": "Widget"},
              "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {
                  "ports": {"type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["port", "protocol"],
                            "items": {"type": "object"}},
                  "tags": {"type": "array", "x-kubernetes-list-type": "set",
                           "items": {"type": "string"}},
                  "args": {"type": "array", "items": {"type": "string"}},
                  "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                               "additionalProperties": {"type": "string"}},
                  "env": {"type": "object", "additionalProperties": {"type": "string"}}
                }}}}}}]}
        });
        let s = CrdSchemas::from_crds([&crd]);
        assert!(s.root("demo.kapply.dev/v2", "Widget").is_none());
        let spec = s
            .root("demo.kapply.dev/v1", "Widget")
            .and_then(|r| r.field("spec"))
            .unwrap();
        assert_eq!(
            spec.field("ports").unwrap().list,
            ListType::Map(vec!["port".into(), "protocol".into()])
        );
        assert_eq!(spec.field("tags").unwrap().list, ListType::Set);
        assert_eq!(spec.field("args").unwrap().list, ListType::Atomic);
        assert!(spec.field("selector").unwrap().atomic);
        let env = spec.field("env").unwrap();
        assert!(!env.atomic);
        assert!(env.field("ANY").is_some(), "additionalProperties");
        assert!(spec.field("unknown").is_none());
    }

    #[test]
    fn a_custom_resource_is_claimed_by_its_schema() {
        let crd = json!({
            "kind": "CustomResourceDefinition",
            "spec": {"group": "g.dev", "names": {"kind": "W"},
              "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {
                  "ports": {"type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["port", "protocol"],
                            "items": {"type": "object"}},
                  "tags": {"type": "array", "x-kubernetes-list-type": "set"},
                  "sel": {"type": "object", "x-kubernetes-map-type": "atomic"}
                }}}}}}]}
        });
        let cr = json!({"apiVersion": "g.dev/v1", "kind": "W",
            "metadata": {"name": "w", "finalizers": ["f"]},
            "spec": {"ports": [{"port": 80, "protocol": "TCP", "name": "http"}],
                     "tags": ["a"], "sel": {"app": "w"}, "args": ["x"]}});
        let paths = |s: &CrdSchemas| -> Vec<String> {
            super::super::applied_fields_in(&cr, s)
                .iter()
                .map(|p| p.join("/"))
                .collect()
        };
        let key = r#"k:{"port":80,"protocol":"TCP"}"#;
        assert_eq!(
            paths(&CrdSchemas::from_crds([&crd])),
            [
                r#"f:metadata/f:finalizers/v:"f""#.to_string(),
                "f:spec/f:args".into(),
                format!("f:spec/f:ports/{key}/."),
                format!("f:spec/f:ports/{key}/f:name"),
                format!("f:spec/f:ports/{key}/f:port"),
                format!("f:spec/f:ports/{key}/f:protocol"),
                "f:spec/f:sel".into(),
                r#"f:spec/f:tags/v:"a""#.into(),
            ]
        );
        // Without the CRD: lists whole, maps key by key.
        assert_eq!(
            paths(&CrdSchemas::default()),
            [
                "f:metadata/f:finalizers",
                "f:spec/f:args",
                "f:spec/f:ports",
                "f:spec/f:sel/f:app",
                "f:spec/f:tags",
            ]
        );
    }
}
