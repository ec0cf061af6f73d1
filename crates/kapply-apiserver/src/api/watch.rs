//! Watches: what a watch selects, its first events and those after.

use super::plumbing::{header_text, parse_query};
use super::routing::{label_selector, target};
use super::table::table;
use super::{ApiServer, out};
use crate::resources::ResourceInfo;
use crate::selector::FieldSelector;
use crate::status::ApiError;
use crate::store::{self, State, Stored};
use http::{HeaderMap, Method, Uri, header};
use kapply_core::selector::LabelSelector;
use serde_json::{Value, json};

/// A watch in progress: what it selects and how far it has got.
#[derive(Debug)]
pub struct Watch {
    resource: ResourceInfo,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
    table: bool,
    /// `allowWatchBookmarks=true`: BOOKMARK events are sent now and then
    /// (see [`Watch::bookmark`]).
    pub bookmarks: bool,
    /// Events up to this resourceVersion have been sent.
    pub rv: u64,
    /// `timeoutSeconds`, capped.
    pub timeout: std::time::Duration,
}

/// `?watch=true` (or `1`) on a GET.
pub fn is_watch(method: &Method, uri: &Uri) -> bool {
    method == Method::GET
        && parse_query(uri.query())
            .get("watch")
            .is_some_and(|w| w == "true" || w == "1")
}

impl ApiServer {
    /// Begin a watch: check the request, and the events to send first
    /// (ADDED for every matching object, or the changes after the given
    /// resourceVersion).
    pub fn watch_start(
        &self,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Result<(Watch, Vec<Value>), ApiError> {
        let query = parse_query(uri.query());
        let segs: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
        let st = self.store.lock();
        let resources = st.resources();
        let t = match segs.as_slice() {
            ["api", "v1", rest @ ..] => target("", "v1", rest, &resources)?,
            ["apis", group, version, rest @ ..] => target(group, version, rest, &resources)?,
            _ => return Err(ApiError::method_not_allowed("WATCH")),
        };
        if t.sub.is_some() {
            return Err(ApiError::method_not_allowed("WATCH"));
        }
        let labels = label_selector(&query)?;
        let mut field_sel = query.get("fieldSelector").cloned().unwrap_or_default();
        if let Some(name) = &t.name {
            if !field_sel.is_empty() {
                field_sel.push(',');
            }
            field_sel.push_str(&format!("metadata.name={name}"));
        }
        let fields = FieldSelector::parse(&field_sel).map_err(ApiError::bad_request)?;
        let timeout = query
            .get("timeoutSeconds")
            .and_then(|t| t.parse::<u64>().ok())
            .unwrap_or(1800)
            .min(3600);
        let accept = header_text(headers, header::ACCEPT).unwrap_or_default();
        let mut w = Watch {
            resource: t.resource,
            namespace: t.namespace,
            labels,
            fields,
            table: accept.contains("as=Table"),
            bookmarks: query
                .get("allowWatchBookmarks")
                .is_some_and(|b| b == "true" || b == "1"),
            rv: st.rv,
            timeout: std::time::Duration::from_secs(timeout),
        };
        let since: u64 = query
            .get("resourceVersion")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if since == 0 {
            let r = &w.resource;
            let objects: Vec<Value> = st
                .of(&r.group, &r.plural, w.namespace.as_deref())
                .filter_map(|(k, o)| w.selected(k, o))
                .map(|o| w.event("ADDED", &o))
                .collect();
            return Ok((w, objects));
        }
        // The changes after `since` are no longer all known (etcd's
        // compaction, or the log's limit): the client must LIST again.
        if since < st.compacted {
            let gone = ApiError::new(
                410,
                "Expired",
                format!("too old resource version: {since} ({})", st.rv),
            );
            return Ok((
                w,
                vec![json!({"type": "ERROR", "object": gone.to_status()})],
            ));
        }
        w.rv = since;
        let events = w.collect(&st);
        Ok((w, events))
    }

    /// The events after `w.rv` that it selects.
    pub fn watch_next(&self, w: &mut Watch) -> Vec<Value> {
        let st = self.store.lock();
        w.collect(&st)
    }
}

impl Watch {
    /// A BOOKMARK: the resourceVersion the watch has got to, in an object
    /// of the watched kind holding only that (as kube-apiserver sends it),
    /// so a client resumes from there without a LIST. `None` unless the
    /// client asked for bookmarks.
    pub fn bookmark(&self) -> Option<Value> {
        let r = &self.resource;
        self.bookmarks.then(|| {
            json!({"type": "BOOKMARK", "object": {
                "kind": r.kind,
                "apiVersion": r.api_version(),
                "metadata": {"resourceVersion": self.rv.to_string(), "creationTimestamp": null},
            }})
        })
    }

    /// The object, parsed, when the watch selects it.
    fn selected(&self, key: &store::Key, o: &Stored) -> Option<Value> {
        let r = &self.resource;
        if !(key.0 == r.group
            && key.1 == r.plural
            && self.namespace.as_deref().is_none_or(|n| n == key.2))
        {
            return None;
        }
        let o = o.value();
        (self.labels.matches(&o) && self.fields.matches(&o)).then_some(o)
    }

    fn event(&self, kind: &str, o: &Value) -> Value {
        let o = out(&self.resource, o);
        let object = if self.table {
            let list = json!({"metadata": {"resourceVersion": o["metadata"]["resourceVersion"]}, "items": [o]});
            table(&self.resource, &list)
        } else {
            o
        };
        json!({"type": kind, "object": object})
    }

    fn collect(&mut self, st: &State) -> Vec<Value> {
        let events = st
            .events
            .iter()
            .filter(|e| e.rv > self.rv)
            .filter_map(|e| Some(self.event(e.kind, &self.selected(&e.key, &e.object)?)))
            .collect();
        self.rv = st.rv;
        events
    }
}
