//! Following the cluster while the TUI is open, as client-go's reflector
//! does: for each (resource, namespace) the plan reads, LIST, then WATCH
//! from the LIST's resourceVersion with bookmarks; when the server says the
//! resourceVersion is too old (410 Gone) LIST again. Each object of the plan
//! whose resourceVersion moves is reported with its live object, so the
//! TUI plans it again. Every request has a limit: the LIST pages the read
//! limit, the WATCH its headers the read limit and then an idle limit (no
//! event and no bookmark for [`IDLE`]: the connection is made again).
//! Failures are retried with a doubling pause ([`BACKOFF_MAX`] at most);
//! [`MAX_FAILURES`] in a row give up.

use super::discovery::ResourceInfo;
use super::{Asked, ClusterError, PAGE_SIZE, Session, decode_body};
use crate::objref::ObjectRef;
use crate::ops::LiveEvent;
use http::Method;
use http_body_util::BodyExt;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;

/// The objects of one (resource, namespace) the plan holds, by name, with
/// the resourceVersion of the live object each was planned against
/// (`None`: it did not exist).
#[derive(Debug, Clone, PartialEq)]
pub struct Followed {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub members: HashMap<String, (ObjectRef, Option<String>)>,
}

/// How long the server keeps one WATCH open (`timeoutSeconds`); it is made
/// again from the last resourceVersion seen when it ends.
const WATCH_SECONDS: &str = "300";
/// No byte for this long on a watch (kube-apiserver sends a bookmark about
/// once a minute): the connection is taken for dead and made again.
pub const IDLE: Duration = Duration::from_secs(150);
/// Failures in a row (of one group) before following stops.
pub const MAX_FAILURES: u32 = 8;
/// The longest pause between two attempts.
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// How one WATCH ended without an error.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    /// The server closed it (its timeout): watch again from where it got.
    Closed,
    /// Nothing came for [`IDLE`]: watch again.
    Idle,
    /// 410 Gone: the resourceVersion is too old; LIST again.
    Gone,
}

/// Which groups are up, said to the TUI when the whole changes.
struct Health {
    groups: usize,
    up: BTreeSet<usize>,
    down: BTreeMap<usize, String>,
    said: Option<LiveEvent>,
}

impl Health {
    fn set(&mut self, i: usize, failure: Option<String>, tx: &UnboundedSender<LiveEvent>) {
        match failure {
            None => {
                self.down.remove(&i);
                self.up.insert(i);
            }
            Some(why) => {
                self.up.remove(&i);
                self.down.insert(i, why);
            }
        }
        let now = match self.down.values().next() {
            Some(why) => Some(LiveEvent::Interrupted(why.clone())),
            None if self.up.len() == self.groups => Some(LiveEvent::Watching),
            None => None,
        };
        if now.is_some() && now != self.said {
            if let Some(e) = &now {
                let _ = tx.send(e.clone());
            }
            self.said = now;
        }
    }
}

/// One line of a watch: `{"type": "MODIFIED", "object": {...}}`.
#[derive(serde::Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    object: Value,
}

/// What the quick reading of a LIST page takes of each item.
#[derive(serde::Deserialize)]
struct ItemMeta {
    #[serde(default)]
    metadata: NameVersion,
}

#[derive(serde::Deserialize, Default)]
struct NameVersion {
    name: Option<String>,
    #[serde(rename = "resourceVersion")]
    resource_version: Option<String>,
}

#[derive(serde::Deserialize, Default)]
struct ListMeta {
    #[serde(rename = "resourceVersion")]
    resource_version: Option<String>,
    #[serde(rename = "continue")]
    next: Option<String>,
}

/// The name and resourceVersion of an object.
fn name_version(o: &Value) -> (Option<&str>, Option<&str>) {
    let meta = o.get("metadata");
    (
        meta.and_then(|m| m.get("name")).and_then(Value::as_str),
        meta.and_then(|m| m.get("resourceVersion"))
            .and_then(Value::as_str),
    )
}

/// The resourceVersion of a live object.
pub fn resource_version(o: &Value) -> Option<String> {
    name_version(o).1.map(str::to_string)
}

impl Session {
    /// Follow every group until the task is aborted; `Err` when one of them
    /// failed [`MAX_FAILURES`] times in a row.
    pub async fn follow(
        &self,
        groups: Vec<Followed>,
        tx: UnboundedSender<LiveEvent>,
    ) -> Result<(), ClusterError> {
        let health = Mutex::new(Health {
            groups: groups.len(),
            up: BTreeSet::new(),
            down: BTreeMap::new(),
            said: None,
        });
        if groups.is_empty() {
            let _ = tx.send(LiveEvent::Watching);
            futures::future::pending::<()>().await;
        }
        let tasks = groups
            .into_iter()
            .enumerate()
            .map(|(i, g)| self.follow_group(i, g, &tx, &health));
        // The first to give up ends them all.
        futures::future::try_join_all(tasks).await.map(|_| ())
    }

    async fn follow_group(
        &self,
        i: usize,
        g: Followed,
        tx: &UnboundedSender<LiveEvent>,
        health: &Mutex<Health>,
    ) -> Result<(), ClusterError> {
        let set = |failure: Option<String>| {
            if let Ok(mut h) = health.lock() {
                h.set(i, failure, tx);
            }
        };
        let mut known: HashMap<String, Option<String>> = g
            .members
            .iter()
            .map(|(n, (_, rv))| (n.clone(), rv.clone()))
            .collect();
        let mut from: Option<String> = None;
        let mut failures = 0;
        let mut pause = Duration::from_secs(1);
        let mut info: Option<ResourceInfo> = None;
        loop {
            let step = async {
                let res = match &info {
                    Some(r) => r.clone(),
                    None => {
                        let r = self.resource(&g.api_version, &g.kind).await?;
                        info = Some(r.clone());
                        r
                    }
                };
                let ns = g.namespace.as_deref();
                match from.take() {
                    None => {
                        from = Some(self.relist(&res, ns, &g, &mut known, tx).await?);
                        set(None);
                    }
                    Some(rv) => {
                        let mut at = rv;
                        let began = tokio::time::Instant::now();
                        let ended = self
                            .watch_once(&res, ns, &mut at, &g, &mut known, tx, || set(None))
                            .await;
                        match ended {
                            Ok(Ended::Gone) => {}
                            Ok(Ended::Closed | Ended::Idle) => {
                                // A server (or proxy) that ends every watch at
                                // once is not asked again in a tight loop.
                                if began.elapsed() < Duration::from_secs(1) {
                                    tokio::time::sleep(Duration::from_secs(1)).await;
                                }
                                from = Some(at);
                            }
                            Err(e) => {
                                from = Some(at);
                                return Err(e);
                            }
                        }
                    }
                }
                Ok::<(), ClusterError>(())
            }
            .await;
            match step {
                Ok(()) => {
                    failures = 0;
                    pause = Duration::from_secs(1);
                }
                Err(e) => {
                    failures += 1;
                    set(Some(e.to_string()));
                    if failures >= MAX_FAILURES {
                        return Err(e);
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(BACKOFF_MAX);
                }
            }
        }
    }

    /// LIST the group (paged); report each member whose resourceVersion
    /// is not the one known (and each known member now gone); answer the
    /// LIST's resourceVersion, to watch from.
    async fn relist(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        g: &Followed,
        known: &mut HashMap<String, Option<String>>,
        tx: &UnboundedSender<LiveEvent>,
    ) -> Result<String, ClusterError> {
        let path = info.collection_path(namespace);
        let limit = PAGE_SIZE.to_string();
        let mut token: Option<String> = None;
        let mut list_rv: Option<String> = None;
        let mut seen: Vec<String> = Vec::new();
        let snapshot = Arc::new(known.clone());
        loop {
            let mut query: Vec<(&str, &str)> = vec![("limit", &limit)];
            if let Some(t) = &token {
                query.push(("continue", t));
            }
            let body = self
                .call_bytes(Method::GET, &path, &query, None, None)
                .await?;
            let snapshot = Arc::clone(&snapshot);
            // Only the members whose version moved are decoded whole.
            let (items, meta) = self
                .workers
                .run(move || {
                    #[derive(serde::Deserialize)]
                    struct Page<'a> {
                        #[serde(borrow, default)]
                        items: Vec<&'a serde_json::value::RawValue>,
                        #[serde(default)]
                        metadata: ListMeta,
                    }
                    let Ok(page) = serde_json::from_slice::<Page>(&body) else {
                        return (Vec::new(), None);
                    };
                    let items: Vec<(String, Option<Value>)> = page
                        .items
                        .iter()
                        .filter_map(|raw| {
                            let m = serde_json::from_str::<ItemMeta>(raw.get()).ok()?.metadata;
                            let name = m.name?;
                            let was = snapshot.get(&name)?;
                            let moved = was.as_deref() != m.resource_version.as_deref();
                            let object = moved
                                .then(|| serde_json::from_str::<Value>(raw.get()).ok())
                                .flatten();
                            Some((name, object))
                        })
                        .collect();
                    (items, Some(page.metadata))
                })
                .await?;
            let Some(meta) = meta else {
                return Err(ClusterError::Other(format!(
                    "{path}: the server's answer to a LIST is not a list"
                )));
            };
            if list_rv.is_none() {
                list_rv = meta.resource_version;
            }
            for (name, object) in items {
                if let Some(mut o) = object {
                    super::live::fill_type(&mut o, info);
                    self.report(g, known, &name, Some(o), tx);
                }
                seen.push(name);
            }
            match meta.next.filter(|t| !t.is_empty()) {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        let seen: std::collections::HashSet<String> = seen.into_iter().collect();
        let gone: Vec<String> = known
            .iter()
            .filter(|(n, rv)| rv.is_some() && !seen.contains(*n))
            .map(|(n, _)| n.clone())
            .collect();
        for name in gone {
            self.report(g, known, &name, None, tx);
        }
        list_rv.filter(|rv| !rv.is_empty()).ok_or_else(|| {
            ClusterError::Other(format!(
                "{path}: the LIST has no resourceVersion to watch from"
            ))
        })
    }

    /// A member's live object now (`None`: deleted), when it is not the
    /// one known: reported, and known from now on.
    fn report(
        &self,
        g: &Followed,
        known: &mut HashMap<String, Option<String>>,
        name: &str,
        live: Option<Value>,
        tx: &UnboundedSender<LiveEvent>,
    ) {
        let Some((object, _)) = g.members.get(name) else {
            return;
        };
        let rv = live.as_ref().and_then(resource_version);
        let Some(was) = known.get_mut(name) else {
            return;
        };
        if *was == rv {
            return;
        }
        *was = rv;
        let _ = tx.send(LiveEvent::Changed {
            object: object.clone(),
            live,
        });
    }

    /// One WATCH from `rv` (moved on as events and bookmarks come);
    /// `up` once the server has accepted it.
    #[allow(clippy::too_many_arguments)]
    async fn watch_once(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        rv: &mut String,
        g: &Followed,
        known: &mut HashMap<String, Option<String>>,
        tx: &UnboundedSender<LiveEvent>,
        up: impl FnOnce(),
    ) -> Result<Ended, ClusterError> {
        let path = info.collection_path(namespace);
        let query = [
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", rv.as_str()),
            ("timeoutSeconds", WATCH_SECONDS),
        ];
        // Not through the limit on requests in flight: a watch holds its
        // connection for minutes.
        let mut uri = path.clone();
        for (i, (k, v)) in query.iter().enumerate() {
            uri.push(if i == 0 { '?' } else { '&' });
            uri.push_str(k);
            uri.push('=');
            uri.push_str(&super::encode_query(v));
        }
        let mut builder = http::Request::builder()
            .method(Method::GET)
            .uri(&uri)
            .header(http::header::ACCEPT, "application/json");
        if let Some(auth) = &self.exec {
            builder = builder.header(http::header::AUTHORIZATION, auth.header().await?);
        }
        let request = builder
            .body(kube::client::Body::from(bytes::Bytes::new()))
            .map_err(|e| ClusterError::Other(format!("{uri}: {e}")))?;
        let asked = Asked::Read(path.clone());
        let limit = self.timeouts.read.unwrap_or(IDLE);
        let response = tokio::time::timeout(limit, self.client.send(request))
            .await
            .map_err(|_| ClusterError::Timeout {
                url: self.url.clone(),
                after: limit,
                dry_run: false,
            })?
            .map_err(|e| self.transport_error(&e, &asked))?;
        let status = response.status();
        if status == http::StatusCode::GONE {
            return Ok(Ended::Gone);
        }
        let mut body = response.into_body();
        if !status.is_success() {
            let bytes = tokio::time::timeout(limit, body.collect())
                .await
                .ok()
                .and_then(Result::ok)
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            let value = decode_body(&bytes);
            let message = value.get("message").and_then(Value::as_str).map_or_else(
                || format!("{} on WATCH {path}", status.as_u16()),
                str::to_string,
            );
            return Err(super::api_error(status, &value, message));
        }
        up();
        let mut buf: Vec<u8> = Vec::new();
        loop {
            let frame = match tokio::time::timeout(IDLE, body.frame()).await {
                Err(_) => return Ok(Ended::Idle),
                Ok(None) => return Ok(Ended::Closed),
                Ok(Some(Err(_))) => {
                    return Err(self.lost(super::Broken::MidAnswer, &asked));
                }
                Ok(Some(Ok(f))) => f,
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            buf.extend_from_slice(&data);
            while let Some(end) = buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = buf.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let Ok(line) = serde_json::from_slice::<Line>(&line) else {
                    return Err(ClusterError::Other(format!(
                        "WATCH {path}: an event that is not JSON"
                    )));
                };
                if let Some(v) = resource_version(&line.object) {
                    // An ERROR's object is a Status: no version to resume from.
                    if line.kind != "ERROR" {
                        *rv = v;
                    }
                }
                match line.kind.as_str() {
                    "ADDED" | "MODIFIED" => {
                        let mut o = line.object;
                        super::live::fill_type(&mut o, info);
                        if let (Some(name), _) = name_version(&o) {
                            let name = name.to_string();
                            self.report(g, known, &name, Some(o), tx);
                        }
                    }
                    "DELETED" => {
                        if let (Some(name), _) = name_version(&line.object) {
                            let name = name.to_string();
                            self.report(g, known, &name, None, tx);
                        }
                    }
                    "BOOKMARK" => {}
                    "ERROR" => {
                        let code = line.object.get("code").and_then(Value::as_u64);
                        if code == Some(410) {
                            return Ok(Ended::Gone);
                        }
                        let message = line
                            .object
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("an error event")
                            .to_string();
                        return Err(ClusterError::Api {
                            code: code.and_then(|c| u16::try_from(c).ok()).unwrap_or(500),
                            reason: line
                                .object
                                .get("reason")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_string(),
                            message: format!("WATCH {path}: {message}"),
                        });
                    }
                    _ => {}
                }
            }
        }
    }
}
