//! The in-memory object store: objects by resource, namespace and name, a
//! global resourceVersion counter, cluster IP allocation.

use super::resources::{self, ResourceInfo};
use super::status::ApiError;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

/// (group, plural, namespace or "", name)
pub type Key = (String, String, String, String);

/// One change, for watches.
#[derive(Debug, Clone)]
pub struct Event {
    pub rv: u64,
    /// `ADDED`, `MODIFIED`, `DELETED`
    pub kind: &'static str,
    pub key: Key,
    pub object: Value,
}

/// How many changes watches can resume from.
const EVENT_LOG: usize = 4096;

#[derive(Debug, Default)]
pub struct State {
    pub objects: BTreeMap<Key, Value>,
    pub rv: u64,
    pub events: VecDeque<Event>,
    /// Warnings of the request being handled (Warning headers).
    pub warnings: Vec<String>,
    next_ip: u32,
    uid_seq: u64,
}

impl State {
    pub fn next_rv(&mut self) -> String {
        self.rv += 1;
        self.rv.to_string()
    }

    fn log(&mut self, kind: &'static str, key: Key, object: Value) {
        if self.events.len() >= EVENT_LOG {
            self.events.pop_front();
        }
        self.events.push_back(Event {
            rv: self.rv,
            kind,
            key,
            object,
        });
    }

    /// Store an object (its resourceVersion already set from `next_rv`).
    pub fn put(&mut self, key: Key, object: Value) {
        let kind = if self.objects.contains_key(&key) {
            "MODIFIED"
        } else {
            "ADDED"
        };
        self.objects.insert(key.clone(), object.clone());
        self.log(kind, key, object);
    }

    /// Remove an object; the DELETED event carries a new resourceVersion.
    pub fn delete(&mut self, key: &Key) -> Option<Value> {
        let mut object = self.objects.remove(key)?;
        let rv = self.next_rv();
        object["metadata"]["resourceVersion"] = Value::from(rv);
        self.log("DELETED", key.clone(), object.clone());
        Some(object)
    }

    pub fn next_ip(&mut self) -> String {
        self.next_ip += 1;
        // 10.96.0.0/12 minus the first address (the kubernetes Service).
        let n = self.next_ip + 1;
        format!("10.96.{}.{}", (n >> 8) & 0xff, n & 0xff)
    }

    pub fn ip_in_use(&self, ip: &str) -> bool {
        self.objects.iter().any(|((g, p, _, _), o)| {
            g.is_empty() && p == "services" && o["spec"]["clusterIP"] == ip
        })
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
    pub fn resources(&self) -> Vec<ResourceInfo> {
        let mut out = resources::builtin();
        for ((g, p, _, _), crd) in &self.objects {
            if g == "apiextensions.k8s.io" && p == "customresourcedefinitions" {
                for r in resources::from_crd(crd) {
                    // A CRD may not shadow a built-in kind.
                    if !out.iter().any(|b| {
                        b.group == r.group && b.version == r.version && b.plural == r.plural
                    }) {
                        out.push(r);
                    }
                }
            }
        }
        out
    }

    pub fn find_kind(&self, api_version: &str, kind: &str) -> Option<ResourceInfo> {
        self.resources()
            .into_iter()
            .find(|r| r.api_version() == api_version && r.kind == kind)
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

/// RFC 3339 UTC, whole seconds, as Kubernetes writes timestamps.
pub fn now() -> String {
    crate::gocompat::timestamp(jiff::Timestamp::now())
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
            st.put(key(&r, ns.as_deref(), &name), obj.clone());
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
        let mut o = st.objects.get(&key(&r, ns, name))?.clone();
        o["apiVersion"] = Value::from(r.api_version());
        Some(o)
    }

    /// All stored objects of a kind (in one namespace when given).
    pub fn list(&self, api_version: &str, kind: &str, namespace: Option<&str>) -> Vec<Value> {
        let st = self.lock();
        let Some(r) = st.find_kind(api_version, kind) else {
            return Vec::new();
        };
        st.objects
            .iter()
            .filter(|((g, p, ns, _), _)| {
                *g == r.group && *p == r.plural && namespace.is_none_or(|n| n == ns)
            })
            .map(|(_, o)| {
                let mut o = o.clone();
                o["apiVersion"] = Value::from(r.api_version());
                o
            })
            .collect()
    }

    /// Every stored object.
    pub fn all(&self) -> Vec<Value> {
        self.lock().objects.values().cloned().collect()
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.lock().rv
    }
}
