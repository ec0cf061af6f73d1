//! ApplySet (KEP 3659) as kubectl 1.32 implements it: the parent object
//! (a Secret by default, or a ConfigMap, or an existing custom resource)
//! records which kinds and namespaces the set spans; members carry the
//! `applyset.kubernetes.io/part-of` label.

use super::discovery::ResourceInfo;
use super::{ClusterError, Session};
use base64::Engine as _;
use http::Method;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

pub const ID_LABEL: &str = "applyset.kubernetes.io/id";
pub const PART_OF_LABEL: &str = "applyset.kubernetes.io/part-of";
pub const TOOLING: &str = "applyset.kubernetes.io/tooling";
pub const GROUP_KINDS: &str = "applyset.kubernetes.io/contains-group-kinds";
pub const ADDITIONAL_NAMESPACES: &str = "applyset.kubernetes.io/additional-namespaces";
/// kubectl writes the parent with this field manager; kapply uses the same
/// so either tool can update the annotations without a field conflict.
pub const PARENT_FIELD_MANAGER: &str = "kubectl-applyset";

/// The tooling annotation value kapply writes.
pub fn tooling() -> String {
    format!("kapply/v{}", env!("CARGO_PKG_VERSION"))
}

/// `applyset-` + unpadded base64url(sha256(`<name>.<namespace>.<Kind>.<group>`)) + `-v1`.
pub fn applyset_id(name: &str, namespace: &str, kind: &str, group: &str) -> String {
    let digest = Sha256::digest(format!("{name}.{namespace}.{kind}.{group}").as_bytes());
    format!(
        "applyset-{}-v1",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
    )
}

/// An ApplySet parent, as read before this run, plus what this run holds.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplySet {
    pub parent: ResourceInfo,
    pub name: String,
    /// `None` for a cluster-scoped (custom) parent.
    pub namespace: Option<String>,
    pub id: String,
    /// The parent existed before this run.
    pub exists: bool,
    /// `Kind.group` recorded on the parent before this run.
    pub recorded_kinds: BTreeSet<String>,
    pub recorded_namespaces: BTreeSet<String>,
    /// `Kind.group` and namespaces of the current manifests.
    pub current_kinds: BTreeSet<String>,
    pub current_namespaces: BTreeSet<String>,
    /// The `applyset.kubernetes.io/tooling` value written on the parent.
    pub tooling: String,
}

impl ApplySet {
    /// How a result about the parent names it: `ApplySet secrets/myset`
    /// (the set, not one of the objects of the plan).
    pub fn result_ref(&self) -> crate::objref::ObjectRef {
        crate::objref::ObjectRef {
            kind: "ApplySet".into(),
            name: self.reference(),
            ..Default::default()
        }
    }

    /// `secrets/myset`, `configmaps/myset`, `widgets.demo.kapply.dev/x`.
    pub fn reference(&self) -> String {
        let resource = if self.parent.group.is_empty() {
            self.parent.plural.clone()
        } else {
            format!("{}.{}", self.parent.plural, self.parent.group)
        };
        format!("{resource}/{}", self.name)
    }

    /// The namespaces the set spans besides the parent's.
    fn additional(&self, namespaces: &BTreeSet<String>) -> String {
        namespaces
            .iter()
            .filter(|ns| Some(ns.as_str()) != self.namespace.as_deref())
            .cloned()
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The server-side apply body of the parent recording `kinds` and `namespaces`.
    pub fn parent_body(&self, kinds: &BTreeSet<String>, namespaces: &BTreeSet<String>) -> Value {
        let mut metadata = json!({
            "name": self.name,
            "labels": {ID_LABEL: self.id},
            "annotations": {
                TOOLING: self.tooling,
                GROUP_KINDS: kinds.iter().cloned().collect::<Vec<_>>().join(","),
                ADDITIONAL_NAMESPACES: self.additional(namespaces),
            }
        });
        if let Some(ns) = &self.namespace {
            metadata["namespace"] = json!(ns);
        }
        json!({"apiVersion": self.parent.api_version(), "kind": self.parent.kind, "metadata": metadata})
    }

    /// Kinds and namespaces to record before applying: what the parent knew
    /// plus what is applied now (so an interrupted run still prunes later).
    pub fn union(&self) -> (BTreeSet<String>, BTreeSet<String>) {
        (
            self.recorded_kinds
                .union(&self.current_kinds)
                .cloned()
                .collect(),
            self.recorded_namespaces
                .union(&self.current_namespaces)
                .cloned()
                .collect(),
        )
    }
}

/// `[RESOURCE[.GROUP]/]NAME` -> (group, plural, name); a bare name is a Secret.
pub(crate) fn parse_parent(spec: &str) -> Result<(String, String, String), ClusterError> {
    let bad = || {
        ClusterError::Other(format!(
            "invalid --applyset {spec:?}: expected [RESOURCE][.GROUP]/NAME, e.g. configmaps/myset"
        ))
    };
    let (resource, name) = match spec.split_once('/') {
        Some((r, n)) => (r, n),
        None => ("secrets", spec),
    };
    if name.is_empty() || resource.is_empty() || name.contains('/') {
        return Err(bad());
    }
    let (plural, group) = match resource.split_once('.') {
        Some((p, g)) => (p, g),
        None => (resource, ""),
    };
    Ok((group.to_string(), plural.to_string(), name.to_string()))
}

fn split_list(v: Option<&str>) -> BTreeSet<String> {
    v.unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

impl Session {
    /// Read (or prepare to create) the ApplySet parent named by `spec`.
    /// A namespaced parent lives in the session's namespace.
    ///
    /// `tooling`: the tooling annotation to write. `None`: `kapply/v<version>`,
    /// except that a parent kubectl manages keeps kubectl's value, because
    /// kubectl refuses to touch a set whose tooling names another tool
    /// ("managed by tooling \"kapply\" instead of \"kubectl\""). Pass
    /// `Some("kubectl/v1.32.5")` to create a set kubectl can prune later.
    pub async fn applyset(
        &self,
        spec: &str,
        tooling: Option<&str>,
    ) -> Result<ApplySet, ClusterError> {
        let (group, plural, name) = parse_parent(spec)?;
        let parent = self.discovery.resolve_plural(self, &group, &plural).await?;
        let namespace = parent.namespaced.then(|| self.namespace.clone());
        let id = applyset_id(
            &name,
            namespace.as_deref().unwrap_or_default(),
            &parent.kind,
            &parent.group,
        );
        let path = parent.object_path(namespace.as_deref(), &name);
        let live = match self.call(Method::GET, &path, &[], None, None).await {
            Ok(v) => Some(v),
            Err(e) if e.code() == 404 => None,
            Err(e) => return Err(e),
        };
        let creatable =
            parent.group.is_empty() && (parent.kind == "Secret" || parent.kind == "ConfigMap");
        let mut set = ApplySet {
            parent,
            name,
            namespace,
            id,
            exists: live.is_some(),
            recorded_kinds: BTreeSet::new(),
            recorded_namespaces: BTreeSet::new(),
            current_kinds: BTreeSet::new(),
            current_namespaces: BTreeSet::new(),
            tooling: tooling.map(str::to_string).unwrap_or_else(self::tooling),
        };
        let Some(live) = live else {
            if !creatable {
                return Err(ClusterError::Other(format!(
                    "ApplySet parent {} does not exist: create it first (only Secret and ConfigMap parents are created automatically)",
                    set.reference()
                )));
            }
            return Ok(set);
        };
        let label = |k: &str| {
            live.pointer("/metadata/labels")
                .and_then(|l| l.get(k))
                .and_then(Value::as_str)
        };
        let annotation = |k: &str| {
            live.pointer("/metadata/annotations")
                .and_then(|a| a.get(k))
                .and_then(Value::as_str)
        };
        if let Some(found) = label(ID_LABEL)
            && found != set.id
        {
            return Err(ClusterError::Other(format!(
                "ApplySet parent {} has label {ID_LABEL}={found}, expected {}",
                set.reference(),
                set.id
            )));
        }
        if let Some(tool) = annotation(TOOLING) {
            let base = tool.split('/').next().unwrap_or_default();
            if base != "kapply" && base != "kubectl" {
                return Err(ClusterError::Other(format!(
                    "ApplySet parent {} is managed by {tool:?}, not kapply or kubectl",
                    set.reference()
                )));
            }
            if base == "kubectl" && tooling.is_none() {
                set.tooling = tool.to_string();
            }
        }
        set.recorded_kinds = split_list(annotation(GROUP_KINDS));
        set.recorded_namespaces = split_list(annotation(ADDITIONAL_NAMESPACES));
        if let Some(ns) = &set.namespace {
            set.recorded_namespaces.insert(ns.clone());
        }
        Ok(set)
    }

    /// Server-side apply of the parent, recording `kinds` and `namespaces`
    /// (field manager `kubectl-applyset`, `fieldValidation=Strict`, `force=false`,
    /// as kubectl does).
    pub async fn write_applyset_parent(
        &self,
        set: &ApplySet,
        kinds: &BTreeSet<String>,
        namespaces: &BTreeSet<String>,
    ) -> Result<(), ClusterError> {
        let body = set.parent_body(kinds, namespaces);
        let path = set.parent.object_path(set.namespace.as_deref(), &set.name);
        self.call(
            Method::PATCH,
            &path,
            &[
                ("fieldManager", PARENT_FIELD_MANAGER),
                ("fieldValidation", "Strict"),
                ("force", "false"),
            ],
            Some("application/apply-patch+yaml"),
            Some(&body),
        )
        .await
        .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_hashes_name_namespace_kind_group() {
        // sha256("myset.demo.Secret.") in unpadded base64url, computed
        // independently: printf 'myset.demo.Secret.' | sha256sum | xxd -r -p | base64 | tr '+/' '-_' | tr -d =
        let id = applyset_id("myset", "demo", "Secret", "");
        assert!(id.starts_with("applyset-") && id.ends_with("-v1"));
        assert_eq!(
            id,
            format!(
                "applyset-{}-v1",
                include_str!("testdata/myset-demo-secret.b64").trim()
            )
        );
        assert_eq!(id.len(), "applyset-".len() + 43 + "-v1".len());
    }

    #[test]
    fn parent_specs() {
        assert_eq!(
            parse_parent("myset").unwrap(),
            ("".into(), "secrets".into(), "myset".into())
        );
        assert_eq!(
            parse_parent("configmaps/x").unwrap(),
            ("".into(), "configmaps".into(), "x".into())
        );
        assert_eq!(
            parse_parent("widgets.demo.kapply.dev/w").unwrap(),
            ("demo.kapply.dev".into(), "widgets".into(), "w".into())
        );
        assert!(parse_parent("a/b/c").is_err());
        assert!(parse_parent("/x").is_err());
    }

    #[test]
    fn parent_body_records_sorted_kinds_and_other_namespaces() {
        let set = ApplySet {
            parent: ResourceInfo {
                group: String::new(),
                version: "v1".into(),
                kind: "Secret".into(),
                plural: "secrets".into(),
                namespaced: true,
                ..Default::default()
            },
            name: "myset".into(),
            namespace: Some("demo".into()),
            id: applyset_id("myset", "demo", "Secret", ""),
            exists: false,
            recorded_kinds: BTreeSet::new(),
            recorded_namespaces: BTreeSet::new(),
            current_kinds: ["Service", "Deployment.apps", "ConfigMap"]
                .map(String::from)
                .into(),
            current_namespaces: ["demo", "other"].map(String::from).into(),
            tooling: tooling(),
        };
        let (k, n) = set.union();
        let body = set.parent_body(&k, &n);
        assert_eq!(
            body["metadata"]["annotations"][GROUP_KINDS],
            "ConfigMap,Deployment.apps,Service"
        );
        assert_eq!(
            body["metadata"]["annotations"][ADDITIONAL_NAMESPACES],
            "other"
        );
        assert_eq!(body["metadata"]["labels"][ID_LABEL], set.id);
        assert_eq!(body["kind"], "Secret");
        assert_eq!(
            body["metadata"]["annotations"][TOOLING],
            format!("kapply/v{}", env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(set.reference(), "secrets/myset");
    }
}
