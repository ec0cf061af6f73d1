//! Manifest loading (owned by the manifest work): `-f PATH` files and
//! directories into objects with their identity, their source `file:line`
//! and a line for every field.
//!
//! What kubectl does, and so what this does:
//! - directories hold `.yaml`, `.yml` and `.json` files, read in lexical
//!   order; `recursive` (`-R`) descends into subdirectories at their place in
//!   that order; a file named explicitly is read whatever its extension;
//! - multi-document YAML, empty documents skipped; a document with an `items`
//!   list (`kind: List`, `ConfigMapList`, ...) stands for its items, and an
//!   item without apiVersion and kind takes the list's (kind minus `List`);
//! - a namespaced object without a namespace takes `-n`, else the context's
//!   namespace; a namespace in the file that differs from `-n` is an error
//!   for that object.
//!
//! Errors never stop the load: each names `file:line` and the problem, and
//! every other object still loads. A file that fails to parse contributes
//! no object at all, not even the documents before the error: the error may
//! hide a document boundary or change what the documents mean, so nothing
//! from such a file may be applied. An object defined twice (same group,
//! kind, namespace and name) is dropped in every place it appears, as which
//! of them was meant is unknown.

use crate::patchmeta::PatchMeta;
use crate::yaml::{self, Node, NodeKind};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{Arc, OnceLock};

use crate::objref::ObjectRef;
pub use crate::objref::split_api_version;

/// Where an object (or an error) is in the manifests.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Source {
    pub file: PathBuf,
    /// 1-based.
    pub line: usize,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// One object to apply.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub id: ObjectRef,
    /// The version of the apiVersion written (the identity has the group).
    pub version: String,
    /// The object as read, with `metadata.namespace` filled in for
    /// namespaced kinds: [`Manifest::object`].
    object: Packed,
    pub source: Source,
    /// Field path (`spec.template.spec.containers[name=nginx].image`) ->
    /// line in `source.file`, for every field written in the file.
    pub lines: FieldLines,
}

/// The line of every field written in a manifest, worked out when first
/// asked for: from the file's text (shared by its objects), read again by
/// the full YAML reader. A load keeps no per-field data, so the map costs
/// nothing until someone looks (an error's line, a field's place).
#[derive(Clone, Default)]
pub struct FieldLines {
    /// The file's text and the object's place among the file's objects.
    origin: Option<(Arc<str>, usize)>,
    /// Whether `metadata.namespace` is written (asked for every object
    /// whose scope is corrected, so known without reading again).
    namespace_written: bool,
    map: OnceLock<BTreeMap<String, usize>>,
}

impl FieldLines {
    /// The whole map, field path -> line.
    pub fn map(&self) -> &BTreeMap<String, usize> {
        self.map.get_or_init(|| {
            let Some((text, index)) = &self.origin else {
                return BTreeMap::new();
            };
            let Ok(raws) = read_nodes(text, Path::new("")) else {
                return BTreeMap::new();
            };
            let Some(raw) = raws.into_iter().nth(*index) else {
                return BTreeMap::new();
            };
            let object = raw.value();
            let str_of = |k: &str| object.get(k).and_then(Value::as_str).unwrap_or_default();
            yaml::line_map(
                &raw.node,
                PatchMeta::builtin().root(str_of("apiVersion"), str_of("kind")),
            )
        })
    }

    /// The line of a field path.
    pub fn get(&self, path: &str) -> Option<&usize> {
        self.map().get(path)
    }

    pub fn contains_key(&self, path: &str) -> bool {
        if path == "metadata.namespace" {
            return self.namespace_written;
        }
        self.map().contains_key(path)
    }
}

impl From<BTreeMap<String, usize>> for FieldLines {
    fn from(map: BTreeMap<String, usize>) -> Self {
        FieldLines {
            origin: None,
            namespace_written: map.contains_key("metadata.namespace"),
            map: OnceLock::from(map),
        }
    }
}

impl std::ops::Index<&str> for FieldLines {
    type Output = usize;
    fn index(&self, path: &str) -> &usize {
        match self.get(path) {
            Some(l) => l,
            None => panic!("no line for field {path:?}"),
        }
    }
}

impl PartialEq for FieldLines {
    fn eq(&self, other: &Self) -> bool {
        self.namespace_written == other.namespace_written && self.map() == other.map()
    }
}

impl fmt::Debug for FieldLines {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not worked out just to be printed.
        match self.map.get() {
            Some(map) => f.debug_map().entries(map).finish(),
            None => f.write_str("FieldLines { .. }"),
        }
    }
}

/// An object kept as compact JSON text, read back when asked for: a few
/// hundred bytes where a [`Value`] takes kilobytes (each of its maps is a
/// B-tree node of eleven slots), and a load holds every manifest at once.
/// (Also the TUI's rows keep their config and live object so.)
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Packed {
    Json(Box<str>),
    /// Nested deeper than serde_json reads back.
    Value(Box<Value>),
}

/// Nesting serde_json reads back (its limit is 128).
const PACKED_DEPTH: usize = 120;

impl Packed {
    pub(crate) fn new(v: Value) -> Packed {
        fn deeper_than(v: &Value, n: usize) -> bool {
            match v {
                Value::Array(_) | Value::Object(_) if n == 0 => true,
                Value::Array(a) => a.iter().any(|i| deeper_than(i, n - 1)),
                Value::Object(m) => m.values().any(|i| deeper_than(i, n - 1)),
                _ => false,
            }
        }
        if deeper_than(&v, PACKED_DEPTH) {
            return Packed::Value(Box::new(v));
        }
        match serde_json::to_string(&v) {
            Ok(text) => Packed::Json(text.into_boxed_str()),
            Err(_) => Packed::Value(Box::new(v)),
        }
    }

    /// Bytes of its JSON text (of the value's, where it is kept whole).
    pub(crate) fn len(&self) -> usize {
        match self {
            Packed::Json(text) => text.len(),
            Packed::Value(v) => v.to_string().len(),
        }
    }

    pub(crate) fn value(&self) -> Value {
        match self {
            // Exact: numbers keep their kind and floats round-trip
            // (float_roundtrip), keys keep their order.
            Packed::Json(text) => crate::jsonread::from_str(text)
                .unwrap_or_else(|e| panic!("reading back an object kapply wrote: {e}")),
            Packed::Value(v) => (**v).clone(),
        }
    }
}

impl fmt::Debug for Packed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value().fmt(f)
    }
}

impl Manifest {
    /// A manifest of `object` (its identity and version as given), with no
    /// field lines.
    pub fn new(id: ObjectRef, version: String, object: Value, source: Source) -> Manifest {
        Manifest {
            id,
            version,
            object: Packed::new(object),
            source,
            lines: FieldLines::default(),
        }
    }

    /// The object as read, with `metadata.namespace` filled in for
    /// namespaced kinds. A new value each call (the manifest keeps it
    /// packed): take it once per use.
    pub fn object(&self) -> Value {
        self.object.value()
    }

    /// The object's compact JSON text (serde_json's), where it is kept so.
    pub(crate) fn object_json(&self) -> Option<&str> {
        match &self.object {
            Packed::Json(text) => Some(text),
            Packed::Value(_) => None,
        }
    }

    /// Replaces the object.
    pub fn set_object(&mut self, object: Value) {
        self.object = Packed::new(object);
    }

    /// Changes the object in place.
    pub fn update_object(&mut self, f: impl FnOnce(&mut Value)) {
        let mut object = self.object();
        f(&mut object);
        self.set_object(object);
    }

    /// The apiVersion written: `apps/v1`, `v1`.
    pub fn api_version(&self) -> String {
        crate::objref::api_version(&self.id.group, &self.version)
    }

    /// Corrects the scope once the cluster knows the kind (kinds neither
    /// built in nor defined by a loaded CRD are loaded as namespaced, and
    /// were checked against `-n` as such).
    /// `default_ns` is what an object without a namespace gets: `-n`, else
    /// the context's namespace. A cluster-scoped object loses its
    /// namespace, filled in by the load or written in the file: kubectl 1.32
    /// sends neither the body nor the annotation with it (the server would
    /// drop it, and a kept one would show as drift on every plan).
    pub fn set_scope(&mut self, namespaced: bool, default_ns: &str) {
        if namespaced {
            if self.id.namespace.is_none() {
                self.id.namespace = Some(default_ns.to_string());
                self.update_object(|o| set_namespace(o, default_ns));
            }
        } else if self.id.namespace.take().is_some() {
            self.update_object(drop_namespace);
        }
    }
}

impl Manifest {
    /// The error of a namespaced object whose written namespace is not
    /// `-n` (`flag`): for a kind whose scope the load did not know, asked
    /// once the cluster (or a CRD) says it is namespaced. `None` when it
    /// agrees, has no namespace written, or no `-n` was given.
    pub fn namespace_mismatch(&self, flag: Option<&str>) -> Option<ManifestError> {
        let (ns, flag) = (self.id.namespace.as_deref()?, flag?);
        if ns == flag || !self.lines.namespace_written {
            return None;
        }
        let line = self.lines.get("metadata.namespace").copied();
        Some(ManifestError::NamespaceMismatch {
            at: Source {
                file: self.source.file.clone(),
                line: line.unwrap_or(self.source.line),
            },
            id: Box::new(self.id.clone()),
            version: self.version.clone(),
            namespace: flag.to_string(),
        })
    }
}

fn drop_namespace(object: &mut Value) {
    if let Some(md) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        md.remove("namespace");
    }
}

fn set_namespace(object: &mut Value, ns: &str) {
    if let Some(md) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        md.insert("namespace".into(), Value::String(ns.to_string()));
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// `-f` paths: files or directories (`-` is standard input).
    pub paths: Vec<PathBuf>,
    /// `-R`: descend into subdirectories.
    pub recursive: bool,
    /// `-n`: the namespace of objects without one; a different namespace in
    /// a file is an error.
    pub namespace: Option<String>,
    /// The kubeconfig context's namespace, else `default`.
    pub default_namespace: String,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            paths: Vec::new(),
            recursive: false,
            namespace: None,
            default_namespace: "default".into(),
        }
    }
}

/// The result of a load: the good objects in read order, and the errors.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loaded {
    pub manifests: Vec<Manifest>,
    pub errors: Vec<ManifestError>,
}

impl Loaded {
    /// A path that could not be read at all (missing, unreadable, a
    /// directory without manifests). kubectl then applies nothing, and
    /// neither does kapply: the user named something that is not there.
    pub fn unreadable_path(&self) -> Option<&ManifestError> {
        self.errors
            .iter()
            .find(|e| matches!(e, ManifestError::Read { .. }))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// A path that cannot be read (missing, unreadable, not UTF-8).
    #[error("{}: {message}", path.display())]
    Read { path: PathBuf, message: String },
    /// The file is not valid YAML/JSON; none of its objects is loaded.
    #[error("{at}: {message} (column {col}); no object from this file is loaded")]
    Parse {
        at: Source,
        col: usize,
        message: String,
    },
    /// A required field is absent: `apiVersion`, `kind` or `metadata.name`.
    #[error("{at}: missing {field}")]
    Missing { at: Source, field: &'static str },
    /// A field of the wrong type, a document that is not an object, ...
    #[error("{at}: {message}")]
    Invalid { at: Source, message: String },
    #[error(
        "{at}: {kind} with metadata.generateName {generate_name:?}: apply needs metadata.name (generateName is not supported)"
    )]
    GenerateName {
        at: Source,
        kind: String,
        generate_name: String,
    },
    /// The same group/kind/namespace/name twice; `second` is this
    /// occurrence. Neither is loaded.
    #[error("{second}: {id} is defined more than once (also at {first})")]
    Duplicate {
        id: Box<ObjectRef>,
        version: String,
        first: Source,
        second: Source,
    },
    /// The file names a namespace other than `-n`.
    #[error("{at}: {id}: the namespace from the provided object {:?} does not match the namespace {namespace:?} given with -n", id.namespace.as_deref().unwrap_or_default())]
    NamespaceMismatch {
        at: Source,
        id: Box<ObjectRef>,
        version: String,
        namespace: String,
    },
}

impl ManifestError {
    /// Where the problem is (`None` for a path that cannot be read).
    pub fn at(&self) -> Option<&Source> {
        match self {
            ManifestError::Read { .. } => None,
            ManifestError::Parse { at, .. }
            | ManifestError::Missing { at, .. }
            | ManifestError::Invalid { at, .. }
            | ManifestError::GenerateName { at, .. }
            | ManifestError::NamespaceMismatch { at, .. } => Some(at),
            ManifestError::Duplicate { second, .. } => Some(second),
        }
    }

    /// The object concerned, when it has an identity.
    pub fn id(&self) -> Option<&ObjectRef> {
        match self {
            ManifestError::Duplicate { id, .. } | ManifestError::NamespaceMismatch { id, .. } => {
                Some(&**id)
            }
            _ => None,
        }
    }

    /// The apiVersion of the object concerned, when it has an identity.
    pub fn api_version(&self) -> Option<String> {
        match self {
            ManifestError::Duplicate { id, version, .. }
            | ManifestError::NamespaceMismatch { id, version, .. } => {
                Some(crate::objref::api_version(&id.group, version))
            }
            _ => None,
        }
    }
}

/// Built-in scope of a kind: `Some(false)` cluster-scoped, `Some(true)`
/// namespaced, `None` unknown (custom resources; the cluster knows).
/// Matched by group and kind, any version.
pub fn is_namespaced(api_version: &str, kind: &str) -> Option<bool> {
    // Kind -> (group, namespaced) of every built-in kind, made once: asked
    // twice for every object a load reads.
    static SCOPES: OnceLock<HashMap<String, Vec<(String, bool)>>> = OnceLock::new();
    let scopes = SCOPES.get_or_init(|| {
        let mut scopes: HashMap<String, Vec<(String, bool)>> = HashMap::new();
        for (g, k) in CLUSTER_SCOPED {
            scopes
                .entry(k.to_string())
                .or_default()
                .push((g.to_string(), false));
        }
        for key in PatchMeta::builtin().kinds.keys() {
            if let Some((av, k)) = key.rsplit_once('/') {
                let g = split_api_version(av).0;
                let groups = scopes.entry(k.to_string()).or_default();
                if !groups.iter().any(|(known, _)| known == g) {
                    groups.push((g.to_string(), true));
                }
            }
        }
        scopes
    });
    let (group, _) = split_api_version(api_version);
    scopes
        .get(kind)?
        .iter()
        .find(|(g, _)| g == group)
        .map(|&(_, namespaced)| namespaced)
}

/// Cluster-scoped built-in kinds (group, kind); every other built-in kind
/// is namespaced.
const CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("", "Namespace"),
    ("", "Node"),
    ("", "PersistentVolume"),
    ("", "ComponentStatus"),
    ("", "APIGroup"),
    ("", "APIVersions"),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    ),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicyBinding",
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    ("authentication.k8s.io", "TokenReview"),
    ("authentication.k8s.io", "SelfSubjectReview"),
    ("authorization.k8s.io", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "SelfSubjectRulesReview"),
    ("authorization.k8s.io", "SubjectAccessReview"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("certificates.k8s.io", "ClusterTrustBundle"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("internal.apiserver.k8s.io", "StorageVersion"),
    ("networking.k8s.io", "IngressClass"),
    ("networking.k8s.io", "IPAddress"),
    ("networking.k8s.io", "ServiceCIDR"),
    ("node.k8s.io", "RuntimeClass"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("resource.k8s.io", "DeviceClass"),
    ("resource.k8s.io", "ResourceSlice"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("storage.k8s.io", "VolumeAttributesClass"),
    ("storagemigration.k8s.io", "StorageVersionMigration"),
];

/// One document (or list item) read from a file.
struct Raw {
    /// Its value as written (without `inferred`).
    value: Value,
    /// Where it starts (its first key's line).
    first_line: usize,
    file: PathBuf,
    /// apiVersion and kind taken from the enclosing list.
    inferred: Option<ListType>,
    /// The file's text and this document's place among the file's
    /// documents: the lines of its fields are read again from there, only
    /// when needed (an error, [`FieldLines`]).
    text: Arc<str>,
    index: usize,
}

/// [`Raw`] as the full reader gives it: a tree with every line.
struct NodeRaw {
    node: Node,
    inferred: Option<ListType>,
}

impl NodeRaw {
    /// The object as read, inferred apiVersion and kind included.
    fn value(&self) -> Value {
        with_inferred(self.node.to_value(), self.inferred.as_ref())
    }
}

/// The apiVersion and kind a list gives its items that name neither.
type ListType = Arc<(String, String)>;

/// kubectl's rule for lists (`flatten`), the one place it is written: an
/// item that names neither apiVersion nor kind (`names_type` false) takes
/// the list's apiVersion and the list's kind without `List`.
struct ListRule(ListType);

impl ListRule {
    fn new(list_api_version: &str, list_kind: &str) -> ListRule {
        let kind = list_kind.strip_suffix("List").unwrap_or(list_kind);
        ListRule(Arc::new((list_api_version.to_string(), kind.to_string())))
    }

    /// What an item takes from the list.
    fn item(&self, names_type: bool) -> Option<ListType> {
        (!names_type).then(|| Arc::clone(&self.0))
    }
}

/// Loads every manifest named by `opts.paths`.
/// Errors come in reading order: paths that cannot be read first, then by
/// file and line.
pub fn load(opts: &LoadOptions) -> Loaded {
    load_with(opts, &Texts::new())
}

/// Texts already read elsewhere (a URL's body, kustomize's output), by the
/// name a path in [`LoadOptions::paths`] gives them; `Err` is why the text
/// could not be had. The caller does that I/O; this module only parses.
pub type Texts = HashMap<PathBuf, Result<String, String>>;

/// [`load`], where a path found in `texts` stands for that text (in its
/// place in the order) instead of a file.
pub fn load_with(opts: &LoadOptions, texts: &Texts) -> Loaded {
    let mut errors = Vec::new();
    let mut staged = Vec::new();
    let files = expand_paths(&opts.paths, opts.recursive, texts, &mut errors);
    // Standard input is read here, in order (a second `-` reads nothing).
    let mut stdin: HashMap<usize, Result<(String, PathBuf), ManifestError>> = HashMap::new();
    for (i, file) in files.iter().enumerate() {
        if file.as_os_str() == "-" && !texts.contains_key(file) {
            stdin.insert(i, read_text(file));
        }
    }
    let stdin = std::sync::Mutex::new(stdin);
    let read = |i: usize, file: &PathBuf| {
        let text = match texts.get(file) {
            Some(Ok(text)) => Ok((text.clone(), file.clone())),
            Some(Err(message)) => Err(ManifestError::Read {
                path: file.clone(),
                message: message.clone(),
            }),
            None => match stdin.lock().ok().and_then(|mut s| s.remove(&i)) {
                Some(read) => read,
                None => read_text(file),
            },
        };
        text.map(|(text, name)| {
            let docs = read_docs(&text, &name).map(|raws| stage(raws, opts));
            (name, docs)
        })
    };
    let mut order: HashMap<PathBuf, usize> = HashMap::new();
    for result in in_parallel(&files, read) {
        match result {
            Ok((name, docs)) => {
                let n = order.len() + 1;
                order.entry(name).or_insert(n);
                match docs {
                    Ok(s) => staged.push(s),
                    Err(e) => errors.push(e),
                }
            }
            Err(e) => errors.push(e),
        }
    }
    let mut loaded = build(staged, opts, errors);
    loaded.errors.sort_by_key(|e| {
        e.at().map_or((0, 0), |at| {
            (order.get(&at.file).copied().unwrap_or(0), at.line)
        })
    });
    loaded
}

/// `f` on every item, on up to as many threads as there are cores (files
/// are read and parsed independently); the results in the items' order.
fn in_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(usize, &T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if threads <= 1 {
        return items.iter().enumerate().map(|(i, t)| f(i, t)).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut out = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            out.push((i, f(i, item)));
        }
        out
    };
    // This thread works too: its allocations come from the main arena,
    // which grows more cheaply than a thread's.
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mut done = work();
        for w in workers {
            match w.join() {
                Ok(mut out) => done.append(&mut out),
                // A panic in a worker is a panic of the load.
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        done
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// Loads the manifests in `text`, as if read from `file`.
pub fn parse_str(text: &str, file: &Path, opts: &LoadOptions) -> Loaded {
    match read_docs(text, file) {
        Ok(raws) => build(vec![stage(raws, opts)], opts, Vec::new()),
        Err(e) => Loaded {
            manifests: Vec::new(),
            errors: vec![e],
        },
    }
}

/// Reads live objects saved from a cluster (`kubectl get -o yaml`, lists
/// flattened) for offline `plan`/`diff`. Directories are read like `-f`
/// without `-R`. The first problem is the error.
pub fn load_objects(paths: &[PathBuf]) -> Result<Vec<Value>, ManifestError> {
    let mut out = Vec::new();
    for file in live_files(paths)? {
        out.append(&mut file_objects(&file)?);
    }
    Ok(out)
}

/// The files `--live` names, in kubectl's order.
fn live_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ManifestError> {
    let mut errors = Vec::new();
    let files = expand_paths(paths, false, &Texts::new(), &mut errors);
    match errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(files),
    }
}

/// The objects of one file of live objects, in order.
fn file_objects(file: &Path) -> Result<Vec<Value>, ManifestError> {
    let (text, name) = read_text(file)?;
    text_objects(&text, &name)
}

/// The objects of live objects' text: a JSON file by serde_json alone,
/// anything else (or JSON [`json_objects`] does not take) the general way.
fn text_objects(text: &str, name: &Path) -> Result<Vec<Value>, ManifestError> {
    match json_objects(text) {
        Some(objects) => Ok(objects),
        None => yaml_objects(text, name),
    }
}

/// The objects of live objects' text read the general way (YAML, or JSON
/// that [`json_objects`] does not take): errors name lines.
fn yaml_objects(text: &str, name: &Path) -> Result<Vec<Value>, ManifestError> {
    let mut out = Vec::new();
    for raw in read_docs(text, name)? {
        let at = Source {
            file: raw.file.clone(),
            line: raw.first_line,
        };
        match object_value(&raw) {
            Value::Object(m) => out.push(Value::Object(m)),
            other => {
                return Err(ManifestError::Invalid {
                    at,
                    message: format!("document is not an object (found {})", type_name(&other)),
                });
            }
        }
    }
    Ok(out)
}

/// The identity a live object is matched to its manifest by: its
/// apiVersion, kind, namespace and name strings (empty where they are not).
pub fn live_key(object: &Value) -> ObjectRef {
    let md = &object["metadata"];
    ObjectRef::new(
        object["apiVersion"].as_str().unwrap_or_default(),
        object["kind"].as_str().unwrap_or_default(),
        md["namespace"].as_str(),
        md["name"].as_str().unwrap_or_default(),
    )
}

/// Live objects read by [`read_live`], by identity (apiVersion's group,
/// kind, namespace, name; of two with one identity the last read wins).
#[derive(Debug, Default)]
pub struct LiveObjects {
    index: HashMap<ObjectRef, LiveObject>,
    /// `(group, kind, namespaced)` of each CustomResourceDefinition among
    /// them, in the order read.
    crd_scopes: Vec<(String, String, bool)>,
}

/// One live object of [`LiveObjects`]: read, or (from a JSON file) only
/// located in the file's text, to be parsed when it is planned.
#[derive(Debug)]
pub struct LiveObject(Live);

#[derive(Debug)]
enum Live {
    Read(Value),
    Json {
        text: std::sync::Arc<String>,
        range: std::ops::Range<usize>,
        /// The list's apiVersion and item kind, for an item without both.
        list_type: Option<ListType>,
    },
}

impl LiveObject {
    /// The object (parsed now if it was only located).
    pub fn into_value(self) -> Value {
        match self.0 {
            Live::Read(v) => v,
            Live::Json {
                text,
                range,
                list_type,
            } => {
                // Checked to be one JSON object when it was located.
                let v = yaml::parse_json_values(&text[range])
                    .ok()
                    .and_then(|docs| docs.into_iter().next())
                    .unwrap_or_default();
                with_inferred(v, list_type.as_ref())
            }
        }
    }
}

impl LiveObjects {
    /// Takes the live object of `id` out, if there is one.
    pub fn take(&mut self, id: &ObjectRef) -> Option<LiveObject> {
        self.index.remove(id)
    }

    /// `(group, kind, namespaced)` of the CustomResourceDefinitions among
    /// the objects, in the order read.
    pub fn crd_scopes(&self) -> &[(String, String, bool)] {
        &self.crd_scopes
    }

    /// A parsed object, by its identity.
    fn add(&mut self, object: Value) {
        self.insert(live_key(&object), LiveObject(Live::Read(object)));
    }

    /// An object by `id`; a parsed CustomResourceDefinition adds its scope
    /// (every CRD is parsed when read).
    fn insert(&mut self, id: ObjectRef, object: LiveObject) {
        if let Live::Read(v) = &object.0
            && let Some(scope) = crd_scope(v)
        {
            self.crd_scopes.push(scope);
        }
        self.index.insert(id, object);
    }
}

/// [`load_objects`], the objects indexed by identity for planning. A JSON
/// file (`kubectl get -o json`) is read once, in chunks, into its text
/// without white space, and each object found and identified in that; the
/// objects are parsed one by one as they are planned, so neither the whole
/// tree nor the whole text of a large file is ever in memory.
pub fn read_live(paths: &[PathBuf]) -> Result<LiveObjects, ManifestError> {
    let mut live = LiveObjects::default();
    for file in live_files(paths)? {
        let LiveText { compact, whole } = read_live_text(&file)?;
        if let Some(found) = compact.and_then(locate_json_objects) {
            found
                .into_iter()
                .for_each(|(id, object)| live.insert(id, object));
            continue;
        }
        // Not plain JSON objects: read the general way, from the text as
        // written (read again if only its compact text was kept), so errors
        // name its lines.
        let (text, name) = match whole {
            Some(whole) => whole,
            None => read_text(&file)?,
        };
        text_objects(&text, &name)?
            .into_iter()
            .for_each(|object| live.add(object));
    }
    Ok(live)
}

/// A `--live` file as read by [`read_live_text`].
struct LiveText {
    /// Its text without white space, if it is JSON and nothing went wrong.
    compact: Option<String>,
    /// Its text as written and the name errors give it, if that was kept.
    whole: Option<(String, PathBuf)>,
}

/// A `--live` file's text: compact (see [`yaml::compact`]) when it starts
/// as JSON (a `{`), and whole, with the name errors give it, when it does
/// not, or when it cannot be read twice (stdin, a pipe such as
/// `--live <(kubectl get ...)`): then it is kept whole for the general
/// reader. A regular file is read a chunk at a time, so the text of a JSON
/// file is only ever in memory without its white space.
fn read_live_text(file: &Path) -> Result<LiveText, ManifestError> {
    fn starts_json(b: &[u8]) -> bool {
        let b = b.strip_prefix("\u{feff}".as_bytes()).unwrap_or(b);
        b.iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'{')
    }
    // A file that is not regular (a pipe, a FIFO) is gone once read, and
    // says nothing of its size.
    let regular = file.as_os_str() != "-" && std::fs::metadata(file).is_ok_and(|m| m.is_file());
    if !regular {
        let (text, name) = read_text(file)?;
        let compact = starts_json(text.as_bytes()).then(|| {
            let mut c = yaml::compact::Compactor::new(text.len());
            c.push(text.as_bytes());
            c.finish()
        });
        return Ok(LiveText {
            compact: compact.flatten(),
            whole: Some((text, name)),
        });
    }
    let read_err = |e: std::io::Error| ManifestError::Read {
        path: file.to_path_buf(),
        message: e.to_string(),
    };
    let mut f = std::fs::File::open(file).map_err(read_err)?;
    let size = f.metadata().map_or(0, |m| m.len() as usize);
    // A regular file may still say 0 (`/proc`): never a tiny chunk.
    let mut chunk = vec![0; size.clamp(1 << 16, 1 << 20)];
    let mut n = read_full(&mut f, &mut chunk).map_err(read_err)?;
    if !starts_json(&chunk[..n]) {
        chunk.truncate(n);
        f.read_to_end(&mut chunk).map_err(read_err)?;
        let text = String::from_utf8(chunk).map_err(|_| ManifestError::Read {
            path: file.to_path_buf(),
            message: "not UTF-8 text".into(),
        })?;
        return Ok(LiveText {
            compact: None,
            whole: Some((text, file.to_path_buf())),
        });
    }
    let mut c = yaml::compact::Compactor::new(size);
    while n > 0 {
        c.push(&chunk[..n]);
        n = read_full(&mut f, &mut chunk).map_err(read_err)?;
    }
    Ok(LiveText {
        compact: c.finish(),
        whole: None,
    })
}

/// Fills `buf` from `r` as far as it goes: the bytes read (fewer only at
/// the end).
fn read_full(r: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The objects of compact JSON text as [`json_objects`] reads them, each
/// found and identified by [`yaml::compact::objects`] and kept as its
/// range of the text, to be parsed when it is planned;
/// CustomResourceDefinitions are parsed (their scope is needed before
/// planning). `None` for anything but objects and lists of objects, or
/// text the walk gives up on (then [`json_objects`] decides).
fn locate_json_objects(text: String) -> Option<Vec<(ObjectRef, LiveObject)>> {
    let docs = yaml::compact::objects(&text)?;
    let text = Arc::new(text);
    let mut out = Vec::new();
    for doc in docs {
        let rule = doc.list.map(|(av, kind)| ListRule::new(&av, &kind));
        for (range, ident) in doc.objects {
            let list_type = rule.as_ref().and_then(|l| l.item(ident.has_type));
            let (av, kind) = match &list_type {
                Some(t) => (Some(t.0.as_str()), Some(t.1.as_str())),
                None => (ident.api_version.as_deref(), ident.kind.as_deref()),
            };
            let id = ObjectRef::new(
                av.unwrap_or(""),
                kind.unwrap_or(""),
                ident.namespace.as_deref(),
                ident.name.as_deref().unwrap_or(""),
            );
            let crd = kind == Some("CustomResourceDefinition");
            let mut object = LiveObject(Live::Json {
                text: Arc::clone(&text),
                range,
                list_type,
            });
            if crd {
                object = LiveObject(Live::Read(object.into_value()));
            }
            out.push((id, object));
        }
    }
    Some(out)
}

/// The objects of a JSON file (`kubectl get -o json`: one object or a
/// list), read by serde_json alone: no line is needed unless something is
/// wrong, so `None` for anything but plain objects and lists of objects,
/// which [`load_objects`] then reads the general way (its errors name lines).
fn json_objects(text: &str) -> Option<Vec<Value>> {
    let start = text.strip_prefix('\u{feff}').unwrap_or(text).trim_start();
    if !start.starts_with('{') {
        return None;
    }
    let mut out = Vec::new();
    for doc in yaml::parse_json_values(text).ok()? {
        let Value::Object(mut m) = doc else {
            return None;
        };
        match m.remove("items") {
            None => out.push(Value::Object(m)),
            Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                let rule = list_rule(&m);
                for item in items {
                    if !item.is_object() {
                        return None;
                    }
                    let inferred = rule.item(names_type(&item));
                    out.push(with_inferred(item, inferred.as_ref()));
                }
            }
            Some(_) => return None,
        }
    }
    Some(out)
}

/// The files to read, in kubectl's order.
fn expand_paths(
    paths: &[PathBuf],
    recursive: bool,
    texts: &Texts,
    errors: &mut Vec<ManifestError>,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" || texts.contains_key(p) {
            out.push(p.clone());
            continue;
        }
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => {
                let before = (out.len(), errors.len());
                walk_dir(p, recursive, &mut out, errors);
                // kubectl refuses a directory with no manifest in it; an
                // empty read must never look like "everything was removed".
                if (out.len(), errors.len()) == before {
                    errors.push(ManifestError::Read {
                        path: p.clone(),
                        message: "no manifests in this directory (recognized file extensions are .json, .yaml, .yml)".into(),
                    });
                }
            }
            Ok(_) => out.push(p.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                errors.push(ManifestError::Read {
                    path: p.clone(),
                    message: "the path does not exist".into(),
                })
            }
            Err(e) => errors.push(ManifestError::Read {
                path: p.clone(),
                message: e.to_string(),
            }),
        }
    }
    out
}

fn walk_dir(dir: &Path, recursive: bool, out: &mut Vec<PathBuf>, errors: &mut Vec<ManifestError>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(rd) => rd.collect::<Result<Vec<_>, _>>(),
        Err(e) => Err(e),
    };
    let mut entries = match entries {
        Ok(e) => e,
        Err(e) => {
            errors.push(ManifestError::Read {
                path: dir.to_path_buf(),
                message: e.to_string(),
            });
            return;
        }
    };
    // Lexical by name, directories at their place among the files (Go's
    // filepath.Walk, which kubectl uses; symlinked directories are not
    // followed).
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if is_dir {
            if recursive {
                walk_dir(&path, recursive, out, errors);
            }
        } else if path
            .extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| matches!(x, "yaml" | "yml" | "json"))
        {
            out.push(path);
        }
    }
}

/// The text of a file and the name its sources carry.
fn read_text(path: &Path) -> Result<(String, PathBuf), ManifestError> {
    let read_err = |message: String| ManifestError::Read {
        path: path.to_path_buf(),
        message,
    };
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| read_err(e.to_string()))?;
        return Ok((text, PathBuf::from("<stdin>")));
    }
    let bytes = std::fs::read(path).map_err(|e| read_err(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| read_err("not UTF-8 text".into()))?;
    Ok((text, path.to_path_buf()))
}

/// Parses a file into documents, lists flattened. Any parse error fails the
/// whole file. Values are built straight from the parser; only a text the
/// fast reader leaves alone (an error, aliases, merge keys, an odd `items`)
/// goes through the full reader and its tree.
fn read_docs(text: &str, file: &Path) -> Result<Vec<Raw>, ManifestError> {
    let fast = yaml::parse_values(text).and_then(|docs| {
        let mut out = Vec::new();
        for doc in docs {
            flatten_values(doc, &mut out)?;
        }
        Some(out)
    });
    let docs = match fast {
        Some(docs) => docs,
        None => read_nodes(text, file)?
            .into_iter()
            .map(|r| (r.node.to_value(), r.node.first_line(), r.inferred))
            .collect(),
    };
    let shared: Arc<str> = Arc::from(text);
    Ok(docs
        .into_iter()
        .enumerate()
        .map(|(index, (value, first_line, inferred))| Raw {
            value,
            first_line,
            file: file.to_path_buf(),
            inferred,
            text: shared.clone(),
            index,
        })
        .collect())
}

/// A document or list item: its value, first line and inferred apiVersion
/// and kind.
type Flat = (Value, usize, Option<ListType>);

/// [`flatten`] on a document read by the fast reader; `None` where only
/// the full reader can say what is wrong (an `items` that is not a list).
fn flatten_values(doc: yaml::Doc, out: &mut Vec<Flat>) -> Option<()> {
    let yaml::Doc {
        value,
        first_line,
        item_lines,
    } = doc;
    let Value::Object(mut map) = value else {
        out.push((value, first_line, None));
        return Some(());
    };
    match map.remove("items") {
        None => out.push((Value::Object(map), first_line, None)),
        Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            let lines = item_lines?;
            if lines.len() != items.len() {
                return None;
            }
            let rule = list_rule(&map);
            for (item, line) in items.into_iter().zip(lines) {
                let inferred = rule.item(names_type(&item));
                out.push((item, line, inferred));
            }
        }
        Some(_) => return None,
    }
    Some(())
}

/// The full reader: documents as trees with every line, lists flattened.
fn read_nodes(text: &str, file: &Path) -> Result<Vec<NodeRaw>, ManifestError> {
    let docs = yaml::parse(text).map_err(|e| ManifestError::Parse {
        at: Source {
            file: file.to_path_buf(),
            line: e.line,
        },
        col: e.col,
        message: e.message,
    })?;
    let mut out = Vec::new();
    for doc in docs {
        flatten(doc, file, &mut out)?;
    }
    Ok(out)
}

/// A document with an `items` list stands for its items (kubectl decodes
/// any such document as a list). An item without apiVersion and kind takes
/// the list's apiVersion and its kind without the `List` suffix.
fn flatten(doc: Node, file: &Path, out: &mut Vec<NodeRaw>) -> Result<(), ManifestError> {
    let Some(items) = doc.get("items") else {
        out.push(NodeRaw {
            node: doc,
            inferred: None,
        });
        return Ok(());
    };
    let items_line = doc.entry("items").map_or(doc.line, |e| e.line);
    let str_of = |k: &str| match doc.get(k).map(|n| &n.kind) {
        Some(NodeKind::Scalar(Value::String(s))) => s.as_str(),
        _ => "",
    };
    let rule = ListRule::new(str_of("apiVersion"), str_of("kind"));
    match &items.kind {
        NodeKind::Scalar(Value::Null) => Ok(()),
        NodeKind::Seq(list) => {
            for item in list {
                let inferred =
                    rule.item(item.get("apiVersion").is_some() || item.get("kind").is_some());
                out.push(NodeRaw {
                    node: item.clone(),
                    inferred,
                });
            }
            Ok(())
        }
        _ => Err(ManifestError::Parse {
            at: Source {
                file: file.to_path_buf(),
                line: items_line,
            },
            col: 1,
            message: "`items` of a list must be a list".into(),
        }),
    }
}

/// The object as read, inferred apiVersion and kind included.
fn object_value(raw: &Raw) -> Value {
    with_inferred(raw.value.clone(), raw.inferred.as_ref())
}

fn with_inferred(mut v: Value, inferred: Option<&ListType>) -> Value {
    if let (Some(t), Value::Object(m)) = (inferred, &mut v) {
        m.insert("apiVersion".into(), Value::String(t.0.clone()));
        m.insert("kind".into(), Value::String(t.1.clone()));
    }
    v
}

/// [`ListRule`] of a list read as a value.
fn list_rule(list: &Map<String, Value>) -> ListRule {
    let str_of = |k: &str| list.get(k).and_then(Value::as_str).unwrap_or_default();
    ListRule::new(str_of("apiVersion"), str_of("kind"))
}

/// An item names apiVersion or kind.
fn names_type(item: &Value) -> bool {
    item.get("apiVersion").is_some() || item.get("kind").is_some()
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The kind a CustomResourceDefinition defines and its scope: (group,
/// kind, namespaced); `None` for any other object.
pub fn crd_scope(obj: &Value) -> Option<(String, String, bool)> {
    let av = obj.get("apiVersion").and_then(Value::as_str)?;
    if obj.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition")
        || split_api_version(av).0 != "apiextensions.k8s.io"
    {
        return None;
    }
    let spec = obj.get("spec")?;
    Some((
        spec.pointer("/group")?.as_str()?.to_string(),
        spec.pointer("/names/kind")?.as_str()?.to_string(),
        spec.pointer("/scope")?.as_str()? != "Cluster",
    ))
}

/// Scopes of kinds defined by CRDs among the documents: (group, kind) ->
/// namespaced, in reading order.
fn crd_scopes(raws: &[Raw]) -> Vec<((String, String), bool)> {
    raws.iter()
        // Only a CustomResourceDefinition's value is worth building here.
        .filter(|r| raw_type(r).1 == Some("CustomResourceDefinition"))
        .filter_map(|r| crd_scope(&object_value(r)))
        .map(|(g, k, namespaced)| ((g, k), namespaced))
        .collect()
}

/// `apiVersion` and `kind` of a document, inferred from its list or
/// written (`None` where not a string).
fn raw_type(raw: &Raw) -> (Option<&str>, Option<&str>) {
    match &raw.inferred {
        Some(t) => (Some(&t.0), Some(&t.1)),
        None => {
            let str_of = |key| raw.value.get(key).and_then(Value::as_str);
            (str_of("apiVersion"), str_of("kind"))
        }
    }
}

/// A document processed as far as it can be before every file is read.
enum Staged {
    /// Its manifest, or why there is none.
    Done(Result<Manifest, ManifestError>),
    /// A kind whose scope may come from a CRD in another file.
    Later(Raw),
}

/// A file's documents, processed as far as they can be (in the thread that
/// read them, so that their values go as soon as they are packed), and the
/// scopes of the CRDs among them.
struct Staging {
    docs: Vec<Staged>,
    crds: Vec<((String, String), bool)>,
}

fn stage(raws: Vec<Raw>, opts: &LoadOptions) -> Staging {
    let crds = crd_scopes(&raws);
    let reread = Reread::default();
    let docs = raws
        .into_iter()
        .map(|raw| {
            let known = match raw_type(&raw) {
                (Some(av), Some(kind)) => is_namespaced(av, kind),
                _ => None,
            };
            match known {
                Some(namespaced) => {
                    Staged::Done(to_manifest(raw, opts, Scope::Known(namespaced), &reread))
                }
                None => Staged::Later(raw),
            }
        })
        .collect();
    Staging { docs, crds }
}

fn build(files: Vec<Staging>, opts: &LoadOptions, mut errors: Vec<ManifestError>) -> Loaded {
    // A later definition of the same kind wins, as it always has.
    let crds: HashMap<(String, String), bool> =
        files.iter().flat_map(|f| f.crds.iter().cloned()).collect();
    let mut candidates = Vec::new();
    let reread = Reread::default();
    for doc in files.into_iter().flat_map(|f| f.docs) {
        let made = match doc {
            Staged::Done(made) => made,
            Staged::Later(raw) => to_manifest(raw, opts, Scope::Defined(&crds), &reread),
        };
        match made {
            Ok(m) => candidates.push(m),
            Err(e) => errors.push(e),
        }
    }
    // Duplicates: drop every occurrence, report each one after the first.
    let key = |m: &Manifest| m.id.clone();
    let mut first: HashMap<_, Source> = HashMap::new();
    let mut duplicated = std::collections::HashSet::new();
    for m in &candidates {
        match first.get(&key(m)) {
            Some(f) => {
                errors.push(ManifestError::Duplicate {
                    id: Box::new(m.id.clone()),
                    version: m.version.clone(),
                    first: f.clone(),
                    second: m.source.clone(),
                });
                duplicated.insert(key(m));
            }
            None => {
                first.insert(key(m), m.source.clone());
            }
        }
    }
    let manifests = candidates
        .into_iter()
        .filter(|m| !duplicated.contains(&key(m)))
        .collect();
    Loaded { manifests, errors }
}

/// The files read again by the full reader, for the lines of errors (once
/// per file, however many errors it holds).
#[derive(Default)]
struct Reread(RefCell<HashMap<usize, Rc<Vec<NodeRaw>>>>);

impl Reread {
    /// The tree of the `index`th document of `text`.
    fn node(&self, text: &Arc<str>, index: usize) -> Option<(Rc<Vec<NodeRaw>>, usize)> {
        let key = Arc::as_ptr(text) as *const u8 as usize;
        let mut cache = self.0.borrow_mut();
        let docs = match cache.get(&key) {
            Some(d) => d.clone(),
            None => {
                let d = Rc::new(read_nodes(text, Path::new("")).ok()?);
                cache.insert(key, d.clone());
                d
            }
        };
        (index < docs.len()).then_some((docs, index))
    }
}

/// Which line an error names.
#[derive(Clone, Copy)]
enum At {
    /// A top-level key's (the item's, for a field inferred from a list).
    Field(&'static str),
    /// A top-level key's.
    Entry(&'static str),
    /// A key of `metadata`.
    Metadata(&'static str),
}

/// What decides a document's scope in [`to_manifest`].
enum Scope<'a> {
    /// A built-in kind's, found by [`stage`] (asked once per document).
    Known(bool),
    /// A kind [`is_namespaced`] does not know: the CRDs read define it,
    /// else it is taken as namespaced.
    Defined(&'a HashMap<(String, String), bool>),
}

fn to_manifest(
    raw: Raw,
    opts: &LoadOptions,
    scope: Scope<'_>,
    reread: &Reread,
) -> Result<Manifest, ManifestError> {
    let Raw {
        value,
        first_line,
        file,
        inferred,
        text,
        index,
    } = raw;
    let is_inferred = inferred.is_some();
    // Lines other than the start are only needed for an error: read from
    // the tree of the full reader then.
    let line_of = |at: At| -> usize {
        let entry_line = |n: &Node, key: &str| n.entry(key).map_or(n.first_line(), |e| e.line);
        match at {
            // Lines of fields inferred from a list point at the item.
            At::Field(_) if is_inferred => first_line,
            At::Field(key) | At::Entry(key) => reread
                .node(&text, index)
                .map_or(first_line, |(d, i)| entry_line(&d[i].node, key)),
            At::Metadata(key) => reread.node(&text, index).map_or(first_line, |(d, i)| {
                let node = &d[i].node;
                let md_line = entry_line(node, "metadata");
                node.get("metadata")
                    .map_or(md_line, |n| n.entry(key).map_or(md_line, |e| e.line))
            }),
        }
    };
    let at_line = |line: usize| Source {
        file: file.clone(),
        line,
    };
    let at = at_line(first_line);
    let mut object = with_inferred(value, inferred.as_ref());
    let Value::Object(top) = &object else {
        return Err(ManifestError::Invalid {
            at,
            message: format!("document is not an object (found {})", type_name(&object)),
        });
    };
    let at_of = |at: At| at_line(line_of(at));
    let required_str =
        |m: &Map<String, Value>, key: &str, field: &'static str, line: At| match m.get(key) {
            None | Some(Value::Null) => Err(ManifestError::Missing {
                at: at_of(line),
                field,
            }),
            Some(Value::String(s)) if s.is_empty() => Err(ManifestError::Missing {
                at: at_of(line),
                field,
            }),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(ManifestError::Invalid {
                at: at_of(line),
                message: format!("{field} must be a string, not {}", type_name(other)),
            }),
        };
    let api_version = required_str(top, "apiVersion", "apiVersion", At::Field("apiVersion"))?;
    if api_version.matches('/').count() > 1
        || api_version.starts_with('/')
        || api_version.ends_with('/')
    {
        return Err(ManifestError::Invalid {
            at: at_of(At::Field("apiVersion")),
            message: format!("apiVersion {api_version:?} is not group/version"),
        });
    }
    let kind = required_str(top, "kind", "kind", At::Field("kind"))?;
    let md_line = At::Entry("metadata");
    let md = match top.get("metadata") {
        None | Some(Value::Null) => {
            return Err(ManifestError::Missing {
                at: at.clone(),
                field: "metadata.name",
            });
        }
        Some(Value::Object(md)) => md,
        Some(other) => {
            return Err(ManifestError::Invalid {
                at: at_of(md_line),
                message: format!("metadata must be an object, not {}", type_name(other)),
            });
        }
    };
    let name = match required_str(md, "name", "metadata.name", md_line) {
        Err(ManifestError::Missing { .. }) => {
            if let Some(Value::String(g)) =
                md.get("generateName").filter(|g| g.as_str() != Some(""))
            {
                return Err(ManifestError::GenerateName {
                    at: at_of(At::Metadata("generateName")),
                    kind,
                    generate_name: g.clone(),
                });
            }
            return Err(ManifestError::Missing {
                at: at_of(md_line),
                field: "metadata.name",
            });
        }
        Err(ManifestError::Invalid { message, .. }) => {
            return Err(ManifestError::Invalid {
                at: at_of(At::Metadata("name")),
                message,
            });
        }
        other => other?,
    };
    let namespace_written = md.contains_key("namespace");
    let file_ns = match md.get("namespace") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(ManifestError::Invalid {
                at: at_of(At::Metadata("namespace")),
                message: format!(
                    "metadata.namespace must be a string, not {}",
                    type_name(other)
                ),
            });
        }
    };
    let (group, version) = split_api_version(&api_version);
    // A kind no CRD read defines is taken as namespaced until the cluster
    // says (`guessed`): its namespace is checked against `-n` then
    // ([`Manifest::namespace_mismatch`]), as kubectl checks only
    // namespaced objects.
    let (namespaced, guessed) = match scope {
        Scope::Known(namespaced) => (namespaced, false),
        Scope::Defined(crds) => match crds.get(&(group.to_string(), kind.clone())) {
            Some(&namespaced) => (namespaced, false),
            None => (true, true),
        },
    };
    let mut id = ObjectRef {
        group: group.to_string(),
        kind: kind.clone(),
        namespace: None,
        name,
    };
    if namespaced {
        if let (false, Some(f), Some(n)) = (guessed, &file_ns, &opts.namespace)
            && f != n
        {
            id.namespace = Some(f.clone());
            return Err(ManifestError::NamespaceMismatch {
                at: at_of(At::Metadata("namespace")),
                id: Box::new(id),
                version: version.to_string(),
                namespace: n.clone(),
            });
        }
        let ns = file_ns
            .or_else(|| opts.namespace.clone())
            .unwrap_or_else(|| opts.default_namespace.clone());
        set_namespace(&mut object, &ns);
        id.namespace = Some(ns);
    } else if namespace_written {
        // As kubectl: a cluster-scoped object is sent without one.
        drop_namespace(&mut object);
    }
    let lines = FieldLines {
        origin: Some((text, index)),
        namespace_written,
        map: OnceLock::new(),
    };
    Ok(Manifest {
        id,
        version: version.to_string(),
        object: Packed::new(object),
        source: at,
        lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str, opts: &LoadOptions) -> Loaded {
        parse_str(text, Path::new("m.yaml"), opts)
    }

    /// `read_live` finds, for every identity, the object `load_objects`
    /// reads last for it, and the same CRD scopes (or the same error);
    /// says whether it located the objects (else it parsed them whole).
    fn live_matches_load(text: &str) -> Result<bool, ManifestError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.json");
        std::fs::write(&path, text).unwrap();
        let paths = [path];
        let located = read_live_text(&paths[0])
            .ok()
            .and_then(|t| t.compact)
            .and_then(locate_json_objects)
            .is_some();
        let (mut live, expected) = match (read_live(&paths), load_objects(&paths)) {
            (Ok(live), Ok(expected)) => (live, expected),
            (Err(e), Err(f)) => {
                assert_eq!(e, f, "{text}");
                return Err(e);
            }
            (e, f) => panic!("{text}: read_live {e:?}, load_objects {f:?}"),
        };
        let mut want = LiveObjects::default();
        for o in expected {
            want.add(o);
        }
        assert_eq!(live.crd_scopes, want.crd_scopes, "{text}");
        let mut ids: Vec<_> = want.index.keys().cloned().collect();
        ids.sort();
        let mut got: Vec<_> = live.index.keys().cloned().collect();
        got.sort();
        assert_eq!(got, ids, "{text}");
        for id in &ids {
            let got = live.take(id).map(LiveObject::into_value);
            let want = want.take(id).map(LiveObject::into_value);
            assert_eq!(got, want, "{text}: {id}");
        }
        Ok(located)
    }

    #[test]
    fn live_json_is_located_as_it_is_parsed() {
        // A kubectl list: items with and without their type, a repeated
        // identity (the last wins), a CRD, escapes, brackets and quotes in
        // strings, numbers kubectl's way, a BOM, a second document.
        let list = "\u{feff} {\"apiVersion\": \"v1\", \"kind\": \"List\", \"metadata\": {\"resourceVersion\": \"\"},\n \"items\": [\n\
            {\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"a\", \"namespace\": \"default\"}, \"data\": {\"k\": \"]}\\\"{[\", \"n\\u0061me\": \"x\"}},\n\
            {\"metadata\": {\"name\": \"inferred\", \"namespace\": \"default\"}, \"data\": {\"x\": \"1\"}},\n\
            {\"kind\": \"Secret\", \"metadata\": {\"name\": \"only-kind\"}},\n\
            {\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"a\", \"namespace\": \"default\", \"name\": \"a\"}, \"data\": {\"k\": \"second\"}, \"n\": [1.0, 1e3, 18446744073709551616, -0.5, true, null]},\n\
            {\"apiVersion\": \"apiextensions.k8s.io/v1\", \"kind\": \"CustomResourceDefinition\", \"metadata\": {\"name\": \"widgets.demo.kapply.dev\"}, \"spec\": {\"group\": \"demo.kapply.dev\", \"names\": {\"kind\": \"Widget\"}, \"scope\": \"Cluster\"}},\n\
            {\"apiVersion\": 3, \"kind\": \"X\", \"metadata\": [\"not\", \"an\", \"object\"]}\n\
            ]}\n\
            {\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"metadata\": {\"name\": \"web\", \"namespace\": \"default\"}}\n\
            {\"kind\": \"ConfigMapList\", \"items\": null}{\"kind\": \"ConfigMapList\", \"items\": [], \"items\": [{\"metadata\": {\"name\": \"late\"}}]}\n";
        assert_eq!(live_matches_load(list), Ok(true));
        // Taken the whole-parse way (and so the same objects or error): a
        // null document, an item that is not an object, items that are not
        // a list, YAML, broken JSON (then read as YAML).
        for text in [
            "null\n{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"a\"}}",
            "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"a\"}} null",
            "{\"kind\": \"List\", \"items\": [1]}",
            "{\"kind\": \"List\", \"items\": {\"a\": 1}}",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
            "{\"kind\": \"List\", \"items\": [{\"metadata\": {\"name\": \"a\",}}]}",
            "{\"kind\": \"List\", \"items\": [{\"metadata\": {\"name\": \"a\"}}], \"x\": tru}",
            "{\"kind\": \"List\", \"items\": [{\"metadata\": {\"name\": \"a\\q\"}}]}",
            // serde_json's raw-value key: it reads the value as JSON text.
            "{\"$serde_json::private::RawValue\": \"{\\\"apiVersion\\\": \\\"v1\\\", \\\"kind\\\": \\\"ConfigMap\\\", \\\"metadata\\\": {\\\"name\\\": \\\"a\\\", \\\"namespace\\\": \\\"default\\\"}}\"}",
            "{\"kind\": \"ConfigMap\", \"metadata\": {\"$serde_json::private::RawValue\": \"{\\\"name\\\": \\\"a\\\"}\"}}",
            // A lone or reversed surrogate escape.
            "{\"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"a\"}, \"data\": {\"k\": \"\\ud83d\"}}",
            "{\"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"a\"}, \"data\": {\"k\": \"\\ude00\\ud83d\"}}",
        ] {
            assert_ne!(live_matches_load(text), Ok(true), "{text}");
        }
        // A surrogate pair (an emoji as ASCII-only writers escape it) is
        // read the one-pass way.
        assert_eq!(
            live_matches_load(
                "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"a\\ud83d\\ude00\", \"namespace\": \"d\"}, \"data\": {\"k\": \"\\uD83D\\uDE00 x\"}}"
            ),
            Ok(true)
        );
    }

    /// A `--live` pipe (`--live <(kubectl get ...)`) is read once: text the
    /// one-pass reading leaves to the general reader is not read again from
    /// the drained pipe.
    #[cfg(unix)]
    #[test]
    fn a_live_pipe_is_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("live.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        // Taken the general way: a number of over 100 digits.
        let text = format!(
            "{{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {{\"name\": \"a\", \"namespace\": \"d\"}}, \"n\": 1{}}}",
            "0".repeat(120)
        );
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(fifo, text))
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let paths = vec![fifo];
        // A second open of the pipe would wait for a writer for ever.
        std::thread::spawn(move || tx.send(read_live(&paths).map(|l| l.index.len())));
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the pipe was opened a second time");
        writer.join().unwrap().unwrap();
        assert_eq!(got, Ok(1));
    }

    /// Mutated kubectl-like lists: wherever the one-pass reading takes
    /// the text, it finds what serde_json parsing the whole file finds
    /// (`live_matches_load` compares them), and it takes most of them.
    #[test]
    fn mutated_live_json_is_located_as_it_is_parsed() {
        let base = serde_json::to_string_pretty(&serde_json::json!({
            "apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
            "items": [
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "a\"b", "namespace": "default", "labels": {"x": "y"}},
                 "data": {"k": "v \\ ]} \u{e9}", "n": "1"}},
                {"metadata": {"name": "inferred", "namespace": "ns"}, "spec": {"n": [1, -2.5, 1e3, true, null]}},
                {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                 "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}}}}
            ]
        }))
        .unwrap();
        let chars: Vec<char> = base.chars().collect();
        let pieces = [
            "{",
            "}",
            "[",
            "]",
            "\"",
            ",",
            ":",
            "\\",
            " ",
            "\n",
            "0",
            "-",
            "1e",
            ".",
            "n",
            "\\u",
            "d800",
            "\"items\": null,",
            "\"kind\": \"X\",",
            "\"metadata\": {},",
            "\u{1}",
            "\"name\": 5,",
        ];
        let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut below = |n: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % n as u64) as usize
        };
        let (mut located, mut runs) = (0, 0);
        for _ in 0..600 {
            let mut text = chars.clone();
            for _ in 0..1 + below(2) {
                let at = below(text.len());
                match below(3) {
                    0 => {
                        text.remove(at);
                    }
                    1 => {
                        let piece = pieces[below(pieces.len())];
                        text.splice(at..at, piece.chars());
                    }
                    _ => {
                        let end = (at + 1 + below(12)).min(text.len());
                        text.drain(at..end);
                    }
                }
            }
            let text: String = text.into_iter().collect();
            runs += 1;
            if live_matches_load(&text) == Ok(true) {
                located += 1;
            }
        }
        assert!(located * 10 > runs, "{located} of {runs} located");
    }

    #[test]
    fn scopes() {
        assert_eq!(is_namespaced("v1", "Namespace"), Some(false));
        assert_eq!(
            is_namespaced("rbac.authorization.k8s.io/v1", "ClusterRole"),
            Some(false)
        );
        assert_eq!(
            is_namespaced("rbac.authorization.k8s.io/v1", "Role"),
            Some(true)
        );
        assert_eq!(is_namespaced("apps/v1", "Deployment"), Some(true));
        assert_eq!(is_namespaced("v1", "ConfigMap"), Some(true));
        assert_eq!(is_namespaced("example.com/v1", "Widget"), None);
        // Every cluster-scoped entry names a kind the table knows.
        for (g, k) in CLUSTER_SCOPED {
            let known = PatchMeta::builtin().kinds.keys().any(|key| {
                key.rsplit_once('/')
                    .is_some_and(|(av, kd)| kd == *k && split_api_version(av).0 == *g)
            });
            assert!(known, "{g}/{k}");
        }
    }

    #[test]
    fn namespace_defaulting_and_scope_correction() {
        let text = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n---\n\
                    apiVersion: v1\nkind: Namespace\nmetadata:\n  name: demo\n";
        let opts = LoadOptions {
            default_namespace: "ctx".into(),
            ..Default::default()
        };
        let mut l = load_text(text, &opts);
        assert!(l.errors.is_empty(), "{:?}", l.errors);
        assert_eq!(l.manifests[0].id.namespace.as_deref(), Some("ctx"));
        assert_eq!(l.manifests[0].object()["metadata"]["namespace"], "ctx");
        assert_eq!(l.manifests[1].id.namespace, None);
        assert!(
            l.manifests[1].object()["metadata"]
                .get("namespace")
                .is_none()
        );
        // The cluster says Widget is cluster-scoped.
        l.manifests[0].set_scope(false, "ctx");
        assert_eq!(l.manifests[0].id.namespace, None);
        assert!(
            l.manifests[0].object()["metadata"]
                .get("namespace")
                .is_none()
        );
        l.manifests[0].set_scope(true, "other");
        assert_eq!(l.manifests[0].object()["metadata"]["namespace"], "other");
    }

    /// A namespace written on a cluster-scoped object is not sent, as
    /// kubectl 1.32 sends none (body and annotation): known at load for a
    /// built-in kind, when the cluster says so for a custom one.
    #[test]
    fn written_namespace_of_a_cluster_scoped_object_is_dropped() {
        let text = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  \
                    name: r\n  namespace: foo\n---\napiVersion: example.com/v1\nkind: Gadget\n\
                    metadata:\n  name: g\n  namespace: foo\n";
        let opts = LoadOptions {
            default_namespace: "ctx".into(),
            ..Default::default()
        };
        let mut l = load_text(text, &opts);
        assert!(l.errors.is_empty(), "{:?}", l.errors);
        assert_eq!(l.manifests[0].id.namespace, None);
        assert_eq!(
            l.manifests[0].object()["metadata"],
            serde_json::json!({"name": "r"})
        );
        // Unknown scope: taken as namespaced, in the namespace written.
        assert_eq!(l.manifests[1].id.namespace.as_deref(), Some("foo"));
        l.manifests[1].set_scope(false, "ctx");
        assert_eq!(l.manifests[1].id.namespace, None);
        assert_eq!(
            l.manifests[1].object()["metadata"],
            serde_json::json!({"name": "g"})
        );
    }

    /// `-n` against a namespace written: checked at load where the scope
    /// is known, once it is known for a kind no CRD read defines.
    #[test]
    fn namespace_other_than_the_flag_is_refused_once_namespaced() {
        let text = "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n  \
                    namespace: foo\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  \
                    name: c\n  namespace: foo\n---\napiVersion: example.com/v1\nkind: Gadget\n\
                    metadata:\n  name: h\n";
        let opts = LoadOptions {
            namespace: Some("bar".into()),
            ..Default::default()
        };
        let l = load_text(text, &opts);
        assert_eq!(l.errors.len(), 1, "{:?}", l.errors);
        assert!(
            matches!(&l.errors[0], ManifestError::NamespaceMismatch { id, .. } if id.name == "c")
        );
        let g = &l.manifests[0];
        assert_eq!(g.id.namespace.as_deref(), Some("foo"));
        let e = g
            .namespace_mismatch(Some("bar"))
            .expect("refused once namespaced");
        assert_eq!(e.at().map(|a| a.line), Some(5));
        assert_eq!(
            e.to_string(),
            "m.yaml:5: Gadget foo/g: the namespace from the provided object \"foo\" does not \
             match the namespace \"bar\" given with -n"
        );
        assert!(g.namespace_mismatch(Some("foo")).is_none());
        assert!(g.namespace_mismatch(None).is_none());
        // Its namespace from -n, not written: nothing to refuse.
        assert_eq!(l.manifests[1].id.namespace.as_deref(), Some("bar"));
        assert!(l.manifests[1].namespace_mismatch(Some("bar")).is_none());
    }

    #[test]
    fn packed_objects_read_back_exactly() {
        let mut deep = serde_json::json!(1);
        for _ in 0..200 {
            deep = serde_json::json!([deep]);
        }
        for v in [
            serde_json::json!({"a": 0.1, "b": 1.7976931348623157e308, "c": u64::MAX, "d": i64::MIN,
                               "e": -2.5e-300, "f": "\u{1b}x\"y", "g": [null, true, {}], "h": 1e20}),
            deep,
        ] {
            let p = Packed::new(v.clone());
            assert_eq!(p.value(), v);
            assert_eq!(p, Packed::new(v));
        }
    }

    #[test]
    fn crd_in_manifests_gives_scope() {
        let text = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n\
                    spec:\n  group: example.com\n  scope: Cluster\n  names:\n    kind: Widget\n---\n\
                    apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n";
        let l = load_text(text, &LoadOptions::default());
        assert!(l.errors.is_empty(), "{:?}", l.errors);
        assert_eq!(l.manifests[1].id.namespace, None);
        assert_eq!(l.manifests[1].source.line, 11);
    }
}
