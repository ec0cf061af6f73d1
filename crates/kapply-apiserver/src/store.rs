//! The in-memory object store: objects by resource, namespace and name, a
//! global resourceVersion counter, cluster IP and node port allocation.
//!
//! Objects are kept as their compact JSON ([`Stored`]), not as trees: a
//! `serde_json::Value` of a Deployment with managedFields takes several
//! times its text in small allocations, and LIST and GET, the bulk of what
//! clients ask, then only copy bytes. A write parses the old object again.

use super::resources::{self, ResourceInfo};
use super::status::ApiError;
use bytes::Bytes;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

/// (group, plural, namespace or "", name)
pub type Key = (String, String, String, String);

/// One stored object: its JSON as `serde_json` writes it (compact, keys
/// sorted), and the apiVersion and kind in it.
#[derive(Debug, Clone)]
pub struct Stored {
    json: Bytes,
    api_version: Box<str>,
    kind: Box<str>,
    /// A Service's allocated addresses and ports (those in use are counted
    /// without parsing every Service).
    service: Option<Box<Allocated>>,
}

/// What a Service holds of what the server allocates.
#[derive(Debug, Clone)]
struct Allocated {
    cluster_ip: Option<Box<str>>,
    /// Its ports' node ports and its health check node port.
    node_ports: Vec<u16>,
}

impl Allocated {
    fn of(service: &Value) -> Allocated {
        let spec = &service["spec"];
        let port = |v: &Value| {
            v.as_u64()
                .and_then(|n| u16::try_from(n).ok())
                .filter(|&n| n > 0)
        };
        let ports = spec["ports"].as_array().into_iter().flatten();
        Allocated {
            cluster_ip: spec["clusterIP"].as_str().map(Into::into),
            node_ports: ports
                .filter_map(|p| port(&p["nodePort"]))
                .chain(port(&spec["healthCheckNodePort"]))
                .collect(),
        }
    }
}

impl Stored {
    pub fn new(object: &Value) -> Stored {
        Stored {
            // Serializing a Value cannot fail (its keys are strings).
            json: Bytes::from(serde_json::to_vec(object).unwrap_or_default()),
            api_version: object["apiVersion"].as_str().unwrap_or_default().into(),
            kind: object["kind"].as_str().unwrap_or_default().into(),
            service: match object["kind"].as_str() {
                Some("Service") => Some(Box::new(Allocated::of(object))),
                _ => None,
            },
        }
    }

    /// The object as a tree.
    pub fn value(&self) -> Value {
        // The bytes were written from a Value: they parse.
        serde_json::from_slice(&self.json).unwrap_or_default()
    }

    /// Its JSON, when it is already the object as served through `r`
    /// (apiVersion and kind of `r`, as `out` would set them).
    pub fn json_as(&self, r: &ResourceInfo) -> Option<&Bytes> {
        (*self.kind == r.kind && *self.api_version == r.api_version()).then_some(&self.json)
    }
}

/// One change, for watches.
#[derive(Debug, Clone)]
pub struct Event {
    pub rv: u64,
    /// `ADDED`, `MODIFIED`, `DELETED`
    pub kind: &'static str,
    pub key: Key,
    /// Shares its bytes with the store.
    pub object: Stored,
}

/// How many changes watches can resume from.
const EVENT_LOG: usize = 4096;

#[derive(Debug)]
pub struct State {
    objects: BTreeMap<Key, Stored>,
    pub rv: u64,
    pub events: VecDeque<Event>,
    /// The changes up to this resourceVersion are forgotten (the log's
    /// limit, or a compaction): a watch from before it gets 410 Gone.
    pub compacted: u64,
    /// Warnings of the request being handled (Warning headers).
    pub warnings: Vec<String>,
    next_ip: u32,
    /// Services' cluster IPs in use: how many Services hold each.
    cluster_ips: HashMap<Box<str>, u32>,
    /// Node ports in use (a port's or a health check's), likewise.
    node_ports: HashMap<u16, u32>,
    next_node_port: u16,
    uid_seq: u64,
    /// Built-in resources plus those of stored CRDs, computed again when a
    /// CRD is stored or removed (every request resolves its path with it).
    resources: Arc<Vec<ResourceInfo>>,
}

impl Default for State {
    fn default() -> State {
        State {
            objects: BTreeMap::new(),
            rv: 0,
            events: VecDeque::new(),
            compacted: 0,
            warnings: Vec::new(),
            next_ip: 0,
            cluster_ips: HashMap::new(),
            node_ports: HashMap::new(),
            next_node_port: 0,
            uid_seq: 0,
            resources: Arc::new(resources::builtin()),
        }
    }
}

fn is_crd(key: &Key) -> bool {
    key.0 == "apiextensions.k8s.io" && key.1 == "customresourcedefinitions"
}

fn is_service(key: &Key) -> bool {
    key.0.is_empty() && key.1 == "services"
}

impl State {
    pub fn next_rv(&mut self) -> String {
        self.rv += 1;
        self.rv.to_string()
    }

    fn log(&mut self, kind: &'static str, key: Key, object: Stored) {
        if self.events.len() >= EVENT_LOG
            && let Some(e) = self.events.pop_front()
        {
            self.compacted = e.rv;
        }
        self.events.push_back(Event {
            rv: self.rv,
            kind,
            key,
            object,
        });
    }

    /// Store an object (its resourceVersion already set from `next_rv`);
    /// returns what is stored.
    pub fn put(&mut self, key: Key, object: &Value) -> Stored {
        let stored = Stored::new(object);
        let crd = is_crd(&key);
        let service = is_service(&key);
        if service {
            self.count(stored.service.as_deref(), true);
        }
        let kind = match self.objects.insert(key.clone(), stored.clone()) {
            Some(old) => {
                if service {
                    self.count(old.service.as_deref(), false);
                }
                "MODIFIED"
            }
            None => "ADDED",
        };
        self.log(kind, key, stored.clone());
        if crd {
            self.recompute_resources();
        }
        stored
    }

    /// Remove an object; the DELETED event carries a new resourceVersion.
    pub fn delete(&mut self, key: &Key) -> Option<Value> {
        let object = self.objects.get(key)?.value();
        self.delete_read(key, object)
    }

    /// [`State::delete`] of an object already read: `object` is the stored
    /// one, parsed (not parsed again).
    pub fn delete_read(&mut self, key: &Key, mut object: Value) -> Option<Value> {
        let gone = self.objects.remove(key)?;
        if is_service(key) {
            self.count(gone.service.as_deref(), false);
        }
        let rv = self.next_rv();
        object["metadata"]["resourceVersion"] = Value::from(rv);
        self.log("DELETED", key.clone(), Stored::new(&object));
        if is_crd(key) {
            self.recompute_resources();
        }
        Some(object)
    }

    /// The stored object, parsed.
    pub fn get(&self, key: &Key) -> Option<Value> {
        self.objects.get(key).map(Stored::value)
    }

    pub fn stored(&self, key: &Key) -> Option<&Stored> {
        self.objects.get(key)
    }

    pub fn contains(&self, key: &Key) -> bool {
        self.objects.contains_key(key)
    }

    /// Every stored object, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Stored)> {
        self.objects.iter()
    }

    /// The stored objects of one resource (in one namespace when given), in
    /// key order: a range of the map, not a scan of it.
    pub fn of<'a>(
        &'a self,
        group: &'a str,
        plural: &'a str,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a Key, &'a Stored)> + 'a {
        let from = (
            group.to_string(),
            plural.to_string(),
            namespace.unwrap_or_default().to_string(),
            String::new(),
        );
        self.objects
            .range(from..)
            .take_while(move |((g, p, ns, _), _)| {
                g == group && p == plural && namespace.is_none_or(|n| n == ns)
            })
    }

    fn recompute_resources(&mut self) {
        let mut out = resources::builtin();
        for (_, crd) in self.of("apiextensions.k8s.io", "customresourcedefinitions", None) {
            for r in resources::from_crd(&crd.value()) {
                // A CRD may not shadow a built-in kind.
                if !out
                    .iter()
                    .any(|b| b.group == r.group && b.version == r.version && b.plural == r.plural)
                {
                    out.push(r);
                }
            }
        }
        self.resources = Arc::new(out);
    }

    pub fn next_ip(&mut self) -> String {
        self.next_ip += 1;
        // 10.96.0.0/12 minus the first address (the kubernetes Service).
        let n = self.next_ip + 1;
        format!("10.96.{}.{}", (n >> 8) & 0xff, n & 0xff)
    }

    pub fn ip_in_use(&self, ip: &str) -> bool {
        self.cluster_ips.contains_key(ip)
    }

    /// A node port from the default range (30000-32767) no Service holds
    /// and not in `taken` (this request's); `None` when all are in use.
    pub fn next_node_port(&mut self, taken: &[u16]) -> Option<u16> {
        const FIRST: u16 = 30000;
        const COUNT: u16 = 32767 - FIRST + 1;
        for _ in 0..COUNT {
            let n = FIRST + self.next_node_port % COUNT;
            self.next_node_port = (self.next_node_port + 1) % COUNT;
            if !self.node_ports.contains_key(&n) && !taken.contains(&n) {
                return Some(n);
            }
        }
        None
    }

    fn count(&mut self, service: Option<&Allocated>, add: bool) {
        let Some(service) = service else { return };
        fn count<K: std::hash::Hash + Eq>(map: &mut HashMap<K, u32>, key: K, add: bool) {
            if add {
                *map.entry(key).or_default() += 1;
            } else if let Some(n) = map.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    map.remove(&key);
                }
            }
        }
        if let Some(ip) = &service.cluster_ip {
            count(&mut self.cluster_ips, ip.clone(), add);
        }
        for &p in &service.node_ports {
            count(&mut self.node_ports, p, add);
        }
    }

    pub fn next_uid(&mut self, seed: &str) -> String {
        self.uid_seq += 1;
        let h = Sha256::digest(format!("{seed}/{}/{}", self.uid_seq, now()));
        let hex: String = h.iter().take(16).map(|b| format!("{b:02x}")).collect();
        format!(
            "{}-{}-4{}-a{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[13..16],
            &hex[17..20],
            &hex[20..32]
        )
    }

    /// Built-in resources plus those of stored CRDs.
    pub fn resources(&self) -> Arc<Vec<ResourceInfo>> {
        self.resources.clone()
    }

    pub fn find_kind(&self, api_version: &str, kind: &str) -> Option<ResourceInfo> {
        self.resources
            .iter()
            .find(|r| r.kind == kind && r.api_version() == api_version)
            .cloned()
    }

    /// Where an object written directly (seeding) goes: its resource, its
    /// namespace (`default` filled in for namespaced kinds, removed for
    /// cluster-scoped ones) and its name.
    pub fn locate(
        &self,
        obj: &mut Value,
    ) -> Result<(ResourceInfo, Option<String>, String), ApiError> {
        let api_version = obj["apiVersion"].as_str().unwrap_or_default().to_string();
        let kind = obj["kind"].as_str().unwrap_or_default().to_string();
        let r = self.find_kind(&api_version, &kind).ok_or_else(|| {
            ApiError::new(
                404,
                "NotFound",
                format!("the server doesn't have a resource type for {api_version} {kind}"),
            )
        })?;
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if name.is_empty() {
            return Err(ApiError::bad_request(format!(
                "{kind} without metadata.name"
            )));
        }
        let ns = if r.namespaced {
            let ns = obj["metadata"]["namespace"]
                .as_str()
                .unwrap_or("default")
                .to_string();
            obj["metadata"]["namespace"] = Value::from(ns.clone());
            Some(ns)
        } else {
            if let Some(m) = obj["metadata"].as_object_mut() {
                m.remove("namespace");
            }
            None
        };
        Ok((r, ns, name))
    }
}

/// The store: one lock over all state (requests are short and synchronous).
#[derive(Debug)]
pub struct Store {
    state: Mutex<State>,
    /// The latest resourceVersion, for watches to wake up on.
    changed: tokio::sync::watch::Sender<u64>,
}

impl Default for Store {
    fn default() -> Store {
        Store {
            state: Mutex::default(),
            changed: tokio::sync::watch::Sender::new(0),
        }
    }
}

pub fn key(r: &ResourceInfo, ns: Option<&str>, name: &str) -> Key {
    (
        r.group.clone(),
        r.plural.clone(),
        ns.unwrap_or_default().to_string(),
        name.to_string(),
    )
}

/// The key of a Namespace.
pub fn namespace_key(name: &str) -> Key {
    (
        String::new(),
        "namespaces".into(),
        String::new(),
        name.to_string(),
    )
}

/// RFC 3339 UTC, whole seconds, as Kubernetes writes timestamps.
pub fn now() -> String {
    kapply_core::gocompat::timestamp(jiff::Timestamp::now())
}

impl Store {
    pub fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave half-written objects
        // (writes are single inserts), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wake up watches if anything changed.
    pub fn notify(&self) {
        let rv = self.lock().rv;
        self.changed.send_if_modified(|cur| {
            let changed = *cur != rv;
            *cur = rv;
            changed
        });
    }

    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Seed an object as given (for `kapply demo` and tests): it is stored
    /// as it is, managedFields and annotations included; the server only
    /// fills in what is missing: defaults (like after a write), namespace
    /// `default` for namespaced kinds, uid, creationTimestamp, generation.
    /// A numeric resourceVersion above the current one is kept (the global
    /// counter moves up to it), otherwise a new one is assigned. Replaces an
    /// existing object of the same name.
    pub fn put_object(&self, obj: Value) -> Result<Value, ApiError> {
        let mut obj = obj;
        {
            let mut st = self.lock();
            let (r, ns, name) = st.locate(&mut obj)?;
            super::defaults::apply(&mut obj, &mut || st.next_ip());
            if obj["metadata"]["uid"].as_str().is_none_or(str::is_empty) {
                obj["metadata"]["uid"] = Value::from(st.next_uid(&name));
            }
            if obj["metadata"]["creationTimestamp"].as_str().is_none() {
                obj["metadata"]["creationTimestamp"] = Value::from(now());
            }
            if super::api::has_generation(&r) && obj["metadata"]["generation"].is_null() {
                obj["metadata"]["generation"] = Value::from(1);
            }
            let given = obj["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|v| v.parse::<u64>().ok())
                .filter(|v| *v > st.rv);
            let rv = match given {
                Some(v) => {
                    st.rv = v;
                    v.to_string()
                }
                None => st.next_rv(),
            };
            obj["metadata"]["resourceVersion"] = Value::from(rv);
            obj["apiVersion"] = Value::from(r.api_version());
            st.put(key(&r, ns.as_deref(), &name), &obj);
        }
        self.notify();
        Ok(obj)
    }

    /// The stored object, by apiVersion and kind.
    pub fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let st = self.lock();
        let r = st.find_kind(api_version, kind)?;
        let ns = if r.namespaced { namespace } else { None };
        let mut o = st.get(&key(&r, ns, name))?;
        o["apiVersion"] = Value::from(r.api_version());
        Some(o)
    }

    /// All stored objects of a kind (in one namespace when given).
    pub fn list(&self, api_version: &str, kind: &str, namespace: Option<&str>) -> Vec<Value> {
        let st = self.lock();
        let Some(r) = st.find_kind(api_version, kind) else {
            return Vec::new();
        };
        st.of(&r.group, &r.plural, namespace)
            .map(|(_, o)| {
                let mut o = o.value();
                o["apiVersion"] = Value::from(r.api_version());
                o
            })
            .collect()
    }

    /// Every stored object.
    pub fn all(&self) -> Vec<Value> {
        self.lock().objects.values().map(Stored::value).collect()
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.lock().rv
    }
}
