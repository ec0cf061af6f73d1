//! The cause of every field row (intended change, drift, new, removed,
//! server default, other writer, unmanaged) and its hazards: what kubectl
//! does there without saying so.

use super::owners::{LazyOwners, is_apply_manager};
use super::strategic::deep_eq;
use super::{Cause, FieldAction, FieldChange, LAST_APPLIED, Reason};
use crate::fieldpath::{self as path, FieldPath};
use serde_json::Value;

/// Equal as apply sees them: an explicit null and an absent value both
/// leave the field unset.
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => deep_eq(x, y),
        (None, None) => true,
        (Some(Value::Null), None) | (None, Some(Value::Null)) => true,
        _ => false,
    }
}

/// Decide the cause (and the owner, and when it wrote) of every row, from
/// the live object's managedFields. `last_applied`: the recorded
/// configuration, `None` when the live object has no annotation.
pub fn classify(fields: &mut [FieldChange], live: &Value, last_applied: Option<&Value>) {
    classify_with(fields, &LazyOwners::new(live), last_applied);
}

/// [`classify`] with the owners read (when a row needs them) by the caller.
pub(crate) fn classify_with(
    fields: &mut [FieldChange],
    owners: &LazyOwners,
    last_applied: Option<&Value>,
) {
    // The annotation's row path, made once per process (every plan asks).
    static ANNOTATION: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| path::key("metadata.annotations", LAST_APPLIED));
    let annotation = ANNOTATION.as_str();
    // Kept rows apply's manager alone wrote (without managedFields, every
    // kept row): their cause waits for the server defaults, decided for
    // all of them at once.
    let mut alone = Vec::with_capacity(fields.len());
    // Of `alone`, the rows no writer owns at all (the object has
    // managedFields): the server set them after it recorded the writers'
    // fields (kube-apiserver allocates a Service's cluster IPs and adds a
    // Namespace's finalizer in its storage, past the field manager).
    let mut nobody = Vec::with_capacity(fields.len());
    // Whether the live object carries no managedFields (asked at the first
    // kept row).
    let mut unowned = None;
    for (i, f) in fields.iter_mut().enumerate() {
        f.owner = None;
        f.changed_at = None;
        if f.action == FieldAction::Keep {
            if *unowned.get_or_insert_with(|| no_managed_fields(owners.live())) {
                // No writer to name: the server-default check alone decides.
                alone.push(i);
                nobody.push(false);
                continue;
            }
            let of = owners.get().of(f.path.as_str());
            let owned = of.len() > 0;
            let mut others = of.filter(|m| !is_apply_manager(m)).peekable();
            if owned && others.peek().is_none() {
                // Apply's manager alone wrote it, yet neither the config nor
                // last-applied names it: the server defaulted it when apply
                // wrote the object, or apply let it go (`kapply release`,
                // a hand edit of the annotation): no longer apply's, it is
                // another writer's from now on.
                alone.push(i);
                nobody.push(false);
            } else if !owned {
                // Owned by no writer: the server-default check decides
                // whether the server set it.
                alone.push(i);
                nobody.push(true);
            } else {
                f.cause = Cause::OtherWriter;
                f.owner = others.peek().is_some().then(|| join(others));
            }
            continue;
        }
        if last_applied.is_none() {
            f.cause = Cause::Unmanaged;
            continue;
        }
        let (c, l, a) = (f.config.as_ref(), f.live.as_ref(), f.last_applied.as_ref());
        f.cause = if f.path == annotation {
            Cause::Intended
        } else if c.is_none() {
            // Not in the config: removed from it, or dropped by
            // $retainKeys because of an intended change nearby.
            if a.is_some() {
                Cause::Removed
            } else {
                Cause::Intended
            }
        } else if a.is_none() {
            Cause::New
        } else if same(c, a) && !same(l, a) && !is_duplicates_row(f) {
            Cause::Drift
        } else {
            Cause::Intended
        };
        // An intended change (or removal) of a field live no longer holds as
        // last applied: someone changed it in the cluster since, and apply
        // throws their change away. The writer is named as for a drift
        // (the hazard `overwrites-cluster-change` says it in words).
        let overwrites = matches!(f.cause, Cause::Intended | Cause::Removed)
            && overwrites_cluster_change(f, owners);
        if f.cause == Cause::Drift || overwrites {
            let owners = owners.get();
            let others = owners.others(f.path.as_str());
            if !others.is_empty() {
                f.owner = Some(others.join(", "));
                // The latest write of the writers named: managedFields
                // keeps one time per manager entry.
                f.changed_at = others
                    .iter()
                    .filter_map(|m| owners.writer(m).and_then(|w| w.time.clone()))
                    .max();
            }
        }
    }
    let defaulted = server_defaulted(fields, &alone, owners.live());
    let unowned = unowned == Some(true);
    for ((&i, defaulted), nobody) in alone.iter().zip(defaulted).zip(nobody) {
        let f = &mut fields[i];
        if nobody {
            if defaulted {
                f.cause = Cause::ServerDefault;
                f.reason = Reason::ServerSet;
            } else {
                // Nobody's and not a server's value: a writer the server
                // does not track (as before).
                f.cause = Cause::OtherWriter;
            }
            continue;
        }
        match (defaulted, unowned) {
            (true, false) => f.cause = Cause::ServerDefault,
            (false, false) => {
                f.cause = Cause::OtherWriter;
                f.reason = Reason::Released;
            }
            (true, true) => {
                f.cause = Cause::ServerDefault;
                f.reason = Reason::DefaultValue;
            }
            (false, true) => {
                f.cause = Cause::OtherWriter;
                f.reason = Reason::UnknownWriter;
            }
        }
    }
}

/// Whether `live` carries no managedFields at all (`kubectl get -o json`
/// hides them): then no field's writer is known.
fn no_managed_fields(live: &Value) -> bool {
    match live.get("metadata").and_then(|m| m.get("managedFields")) {
        None | Some(Value::Null) => true,
        Some(Value::Array(entries)) => entries.is_empty(),
        Some(_) => false,
    }
}

/// Manager names joined by ", ".
fn join<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut s = String::new();
    for (i, n) in names.enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        s.push_str(n);
    }
    s
}

/// Of the kept rows `alone` (indexes into `fields`, in row order) apply's
/// manager alone owns, whether the live value is the one the server gives
/// the field when it is unset: the live object with those fields taken out
/// and defaulted again gives them back. A value the server allocates (a
/// Service's cluster IP) counts as given back.
fn server_defaulted(fields: &[FieldChange], alone: &[usize], live: &Value) -> Vec<bool> {
    if alone.is_empty() {
        return vec![];
    }
    if !crate::defaults::has_rule(live) {
        // A kind the server defaults nothing of.
        return vec![false; alone.len()];
    }
    let paths: Vec<&FieldPath> = alone.iter().map(|&i| &fields[i].path).collect();
    let mut given_back = GivenBack(live.get("spec"));
    taken_out_at_once(&paths, live, &mut given_back)
        .unwrap_or_else(|| taken_out_one_by_one(&paths, live, &mut given_back))
}

/// What the server allocates, as the live object holds it: a field it
/// allocated, taken out and defaulted again, comes back as it is (a
/// Service's cluster IP, a port's node port, the health check node port).
struct GivenBack<'v>(Option<&'v Value>);

impl crate::defaults::Allocate for GivenBack<'_> {
    fn cluster_ip(&mut self) -> String {
        let ip = self.0.and_then(|s| s.get("clusterIP"));
        ip.and_then(Value::as_str).unwrap_or_default().to_string()
    }

    /// The node port of the live port with the same port and protocol
    /// (the list's keys).
    fn node_port(&mut self, port: &serde_json::Map<String, Value>) -> Option<i64> {
        let ports = self.0?.get("ports")?.as_array()?;
        let same = |p: &&Value| {
            p.get("port") == port.get("port")
                && p.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
                    == port
                        .get("protocol")
                        .and_then(Value::as_str)
                        .unwrap_or("TCP")
        };
        ports.iter().find(same)?.get("nodePort")?.as_i64()
    }

    fn health_check_node_port(&mut self) -> Option<i64> {
        self.0?.get("healthCheckNodePort")?.as_i64()
    }
}

/// [`server_defaulted`] of `paths` on a copy of no more than defaulting
/// needs ([`pruned`]), the rows taken out of it at once; `None` where
/// that could differ from [`taken_out_one_by_one`].
fn taken_out_at_once(
    paths: &[&FieldPath],
    live: &Value,
    alloc: &mut dyn crate::defaults::Allocate,
) -> Option<Vec<bool>> {
    if is_job(live) {
        // A Job's labels are given back from its template's, which is no
        // sibling nor above them: the copy [`pruned`] makes may not hold
        // them.
        return None;
    }
    let roots = tree(paths)?;
    // Each row's live value, found while the copy is built (not looked up
    // again after).
    let mut live_at = vec![None; paths.len()];
    let mut bare = pruned(live, &roots, &mut live_at)?;
    default_again(&mut bare, live, alloc);
    let mut out = vec![false; paths.len()];
    compare(&roots, Some(&bare), &live_at, &mut out);
    Some(out)
}

/// [`server_defaulted`] as it is defined: the fields taken out of a copy
/// one by one, the last first (a keyed element's path still finds it
/// while the ones after it go), the copy defaulted, each path looked up
/// in both. For the paths [`tree`] and [`pruned`] do not take.
fn taken_out_one_by_one(
    paths: &[&FieldPath],
    live: &Value,
    alloc: &mut dyn crate::defaults::Allocate,
) -> Vec<bool> {
    let Some(mut bare) = crate::defaults::defaultable_copy(live) else {
        return vec![false; paths.len()];
    };
    let segs: Vec<Vec<path::Segment>> = paths.iter().map(|p| p.segments()).collect();
    for s in segs.iter().rev() {
        path::remove(&mut bare, s);
    }
    default_again(&mut bare, live, alloc);
    segs.iter()
        .map(|s| matches!((path::get(live, s), path::get(&bare, s)), (Some(a), Some(b)) if deep_eq(a, b)))
        .collect()
}

/// Default `bare` (a copy of `live`, rows taken out) as the server does
/// when it stores the object; a Job also gets back what its create
/// strategy adds, named by the live uid and name (they are not the
/// defaulting's to give: the copy may not hold them).
fn default_again(bare: &mut Value, live: &Value, alloc: &mut dyn crate::defaults::Allocate) {
    let meta = &live["metadata"];
    let job = is_job(live) && meta["uid"].is_string();
    let follow = job && crate::defaults::job_labels_follow(bare);
    crate::defaults::apply(bare, alloc);
    if job {
        crate::defaults::job_created(bare, &meta["uid"], &meta["name"], follow);
    }
}

fn is_job(live: &Value) -> bool {
    live["apiVersion"] == "batch/v1" && live["kind"] == "Job"
}

/// One step of the rows' paths, shared by the rows under it.
struct Node<'p> {
    step: path::Step<'p>,
    /// The step's text in the path it was read from (`spec`, `.template`,
    /// `[name=web]`).
    text: &'p str,
    /// The row (index into the paths) whose path ends with this step.
    row: Option<usize>,
    children: Vec<Node<'p>>,
}

/// The rows' paths as a tree of steps (each path read once; a step the
/// tree already has is recognised by its text). `None` for what only
/// [`taken_out_one_by_one`] takes: a list index (taking one out shifts
/// the others), two rows of one path, a path with no step.
fn tree<'p>(paths: &[&'p FieldPath]) -> Option<Vec<Node<'p>>> {
    let mut roots: Vec<Node<'p>> = vec![];
    for (row, &fp) in paths.iter().enumerate() {
        let p = fp.as_str();
        let mut level = &mut roots;
        let mut pos = 0;
        loop {
            let rest = &p[pos..];
            // The same text followed by the next step's start (or by the
            // end of the path) is the same step: a step's own text decides
            // where it ends.
            let same_text = |n: &Node| {
                rest.strip_prefix(n.text)
                    .is_some_and(|after| after.is_empty() || after.starts_with(['.', '[']))
            };
            let i = match level.iter().position(same_text) {
                Some(i) => i,
                None => {
                    let (step, end) = fp.steps_from(pos).next()?;
                    if matches!(step, path::Step::Index(_)) {
                        return None;
                    }
                    match level.iter().position(|n| n.step == step) {
                        Some(i) => i,
                        None => {
                            level.push(Node {
                                step,
                                text: &p[pos..end],
                                row: None,
                                children: vec![],
                            });
                            level.len() - 1
                        }
                    }
                }
            };
            let node = &mut level[i];
            pos += node.text.len();
            if pos == p.len() {
                if node.row.replace(row).is_some() {
                    return None;
                }
                break;
            }
            level = &mut node.children;
        }
    }
    Some(roots)
}

/// What defaulting needs of `live` to give the rows under `nodes` their
/// values: the rows taken out; on the way to them every map and list,
/// and everything else kept but, of a map or list, only that it is there
/// (empty) unless a rule copies its value
/// ([`crate::defaults::VALUES_COPIED`]). A rule reads a field's siblings
/// and what lies above them, so what it sets on the way to a row is what
/// it sets in the whole object; what it sets elsewhere no row looks at.
/// `None` when a keyed element's step finds more than one element, or an
/// element is found by more than one step: there only taking the rows
/// out one by one says what stays.
///
/// `live_at[row]`: the live value of each row, as [`path::get_step`]
/// finds it step by step (`None` where it finds nothing).
fn pruned<'v>(live: &'v Value, nodes: &[Node], live_at: &mut [Option<&'v Value>]) -> Option<Value> {
    match live {
        Value::Object(m) => {
            let mut out = serde_json::Map::new();
            for (k, v) in m {
                let on_way = nodes
                    .iter()
                    .find(|n| matches!(&n.step, path::Step::Key(s) if s == k));
                let v = match on_way {
                    Some(n) if n.row.is_some() => {
                        found_live(n, v, live_at);
                        continue;
                    }
                    Some(n) => pruned(v, &n.children, live_at)?,
                    None if crate::defaults::VALUES_COPIED.contains(&k.as_str()) => v.clone(),
                    None => present(v),
                };
                out.insert(k.clone(), v);
            }
            Some(Value::Object(out))
        }
        Value::Array(a) => {
            if nodes.len() > 64 {
                return None;
            }
            // Which steps found an element already.
            let mut found = 0u64;
            let mut out = Vec::with_capacity(a.len());
            for e in a {
                let mut steps = nodes.iter().enumerate().filter(|(_, n)| match &n.step {
                    path::Step::Element(k, want) => path::element_matches(e, k, want),
                    _ => false,
                });
                match (steps.next(), steps.next()) {
                    (Some((i, n)), None) => {
                        if found & (1 << i) != 0 {
                            return None;
                        }
                        found |= 1 << i;
                        if n.row.is_none() {
                            out.push(pruned(e, &n.children, live_at)?);
                        } else {
                            found_live(n, e, live_at);
                        }
                    }
                    (None, _) => out.push(present(e)),
                    (Some(_), Some(_)) => return None,
                }
            }
            Some(Value::Array(out))
        }
        other => Some(other.clone()),
    }
}

/// A value off the way to the rows, as far as defaulting asks about it.
fn present(v: &Value) -> Value {
    match v {
        Value::Object(_) => Value::Object(serde_json::Map::new()),
        Value::Array(_) => Value::Array(vec![]),
        scalar => scalar.clone(),
    }
}

/// Record the live value `v` of the row node `n`, and those of the rows
/// below it (the copy leaves them out with it; defaulting may give them
/// back).
fn found_live<'v>(n: &Node, v: &'v Value, live_at: &mut [Option<&'v Value>]) {
    if let Some(row) = n.row {
        live_at[row] = Some(v);
    }
    for c in &n.children {
        if let Some(cv) = path::get_step(v, &c.step) {
            found_live(c, cv, live_at);
        }
    }
}

/// Whether each row's live value (`live_at`) is its value in `bare`.
fn compare(nodes: &[Node], bare: Option<&Value>, live_at: &[Option<&Value>], out: &mut [bool]) {
    for n in nodes {
        let b = bare.and_then(|v| path::get_step(v, &n.step));
        if let Some(row) = n.row {
            out[row] = matches!((live_at[row], b), (Some(x), Some(y)) if deep_eq(x, y));
        }
        compare(&n.children, b, live_at, out);
    }
}

/// Whether any field makes apply revert a change made in the cluster.
pub fn reverts_drift(fields: &[FieldChange]) -> bool {
    fields.iter().any(FieldChange::undoes_cluster_change)
}

/// Whether a change row the config asks for (its value differs from
/// last-applied, or it is gone from the config) lands on a live value that
/// differs from last-applied: a change made in the cluster since the last
/// apply, which the apply replaces.
pub(crate) fn overwrites_cluster_change(f: &FieldChange, owners: &LazyOwners) -> bool {
    let (c, l, a) = (f.config.as_ref(), f.live.as_ref(), f.last_applied.as_ref());
    f.action != FieldAction::Keep
        && a.is_some()
        && !same(c, a)
        && !same(l, a)
        && !is_duplicates_row(f)
        && f.reason != Reason::ElementOrder
        && !filled_in_only(a, l, f.path.as_str(), owners)
}

/// Whether live differs from last-applied only by fields live adds that
/// no writer but apply's manager (or none) owns: what the server filled in
/// (a removed container's `imagePullPolicy`, a Service port's allocated
/// `nodePort`), not a change made in the cluster. Lists are compared
/// element by element in order.
fn filled_in_only(a: Option<&Value>, l: Option<&Value>, at: &str, owners: &LazyOwners) -> bool {
    match (a, l) {
        (Some(Value::Object(a)), Some(Value::Object(l))) => {
            a.iter()
                .all(|(k, av)| filled_in_only(Some(av), l.get(k), &path::key(at, k), owners))
                && l.keys()
                    .filter(|k| !a.contains_key(*k))
                    .all(|k| owners.get().others(&path::key(at, k)).is_empty())
        }
        (Some(Value::Array(a)), Some(Value::Array(l))) => {
            a.len() == l.len()
                && a.iter().zip(l).enumerate().all(|(i, (av, lv))| {
                    filled_in_only(Some(av), Some(lv), &path::index(at, i), owners)
                })
        }
        _ => same(a, l),
    }
}

/// The row of config elements sharing a merge key (fields.rs): an element
/// path whose config side is the list of those elements. Live differing
/// from last-applied there is apply's own doing (the server kept one), not
/// a drift.
fn is_duplicates_row(f: &FieldChange) -> bool {
    matches!(f.path.last(), Some(path::Step::Element(..)))
        && f.config.as_ref().is_some_and(Value::is_array)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every path below `v` a row can have (maps, leaves, keyed elements
    /// by the first of `name`, `containerPort`, `port`, `mountPath` they
    /// have, else by index), in walk order.
    fn row_paths(v: &Value, at: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    let p = path::key(at, k);
                    out.push(p.clone());
                    row_paths(x, &p, out);
                }
            }
            Value::Array(a) => {
                for (i, e) in a.iter().enumerate() {
                    let key = ["name", "containerPort", "port", "mountPath"]
                        .into_iter()
                        .find_map(|k| e.get(k).map(|v| (k, v)));
                    let p = match key {
                        Some((k, v)) => path::element(at, k, v),
                        None => path::index(at, i),
                    };
                    out.push(p.clone());
                    row_paths(e, &p, out);
                }
            }
            _ => {}
        }
    }

    fn objects() -> Vec<Value> {
        let deployment: Value = serde_json::from_str(include_str!(
            "../../../../benches/fixtures/deployment-live.json"
        ))
        .unwrap();
        vec![
            deployment,
            json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "s", "labels": {"a": "b"}},
                "spec": {"type": "NodePort", "clusterIP": "10.96.0.7", "clusterIPs": ["10.96.0.7"],
                    "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                    "internalTrafficPolicy": "Cluster", "externalTrafficPolicy": "Cluster",
                    "sessionAffinity": "None", "selector": {"app": "a"},
                    "ports": [{"port": 80, "targetPort": 80, "protocol": "TCP", "nodePort": 30001},
                        {"port": 81, "targetPort": "http", "protocol": "UDP"}]},
                "status": {"loadBalancer": {}}}),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "weird"},
                "spec": {"clusterIP": {"x": 1}, "clusterIPs": [{"x": 1}],
                    "ports": [{"port": {"p": 1}, "targetPort": {"p": 1}}]}}),
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
                "spec": {"replicas": 1, "revisionHistoryLimit": 10,
                    "podManagementPolicy": "OrderedReady",
                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                    "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
                    "template": {"metadata": {"labels": {"app": "db"}}, "spec": {
                        "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
                        "schedulerName": "default-scheduler", "securityContext": {},
                        "terminationGracePeriodSeconds": 30,
                        "containers": [{"name": "db", "image": "postgres:16",
                            "imagePullPolicy": "IfNotPresent", "resources": {},
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File",
                            "readinessProbe": {"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
                                "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                                "failureThreshold": 3},
                            "ports": [{"containerPort": 5432, "protocol": "TCP"}]}],
                        "initContainers": [{"name": "init", "image": "busybox",
                            "imagePullPolicy": "Always"}],
                        "volumes": [{"name": "c", "configMap": {"name": "cfg", "defaultMode": 420}},
                            {"name": "s", "secret": {"secretName": "s", "defaultMode": 256}}]}}}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "r"},
                "spec": {"strategy": {"type": "Recreate"}, "replicas": 1,
                    "template": {"spec": {"containers": [
                        {"name": "a", "image": "x", "imagePullPolicy": "Always"},
                        {"name": "a", "image": "x:1", "imagePullPolicy": "IfNotPresent"}],
                        "dnsPolicy": "ClusterFirst"}}}}),
            json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
                "spec": {"concurrencyPolicy": "Allow", "suspend": false,
                    "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
                    "jobTemplate": {"spec": {"backoffLimit": 6, "completionMode": "NonIndexed",
                        "suspend": false, "podReplacementPolicy": "TerminatingOrFailed",
                        "completions": 1, "parallelism": 1,
                        "template": {"spec": {"restartPolicy": "Never",
                            "containers": [{"name": "j", "image": "busybox:1",
                                "imagePullPolicy": "IfNotPresent"}]}}}}}}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "a", "image": "x:latest",
                    "imagePullPolicy": "Always", "args": ["a", "b"]}],
                    "enableServiceLinks": true, "serviceAccountName": "default",
                    "serviceAccount": "default", "priority": 0},
                "status": {"phase": "Pending", "qosClass": "BestEffort"}}),
            json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "ns", "labels": {"kubernetes.io/metadata.name": "ns", "x": "y"}},
                "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                "type": "Opaque", "data": {"a": "Yg=="}, "stringData": {"a": "b"}}),
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
                "spec": {"volumeMode": "Filesystem"}, "status": {"phase": "Pending"}}),
        ]
    }

    /// Job `name` (uid `u-NAME`) as the server stores it: the template
    /// labels `template` and those naming it, the selector, and its own
    /// `labels` (null: the template's).
    fn job(name: &str, labels: Value, template: Value) -> Value {
        let uid = format!("u-{name}");
        let mut t = template;
        for (k, v) in [
            ("job-name", name),
            ("batch.kubernetes.io/job-name", name),
            ("controller-uid", &uid),
            ("batch.kubernetes.io/controller-uid", &uid),
        ] {
            t[k] = json!(v);
        }
        let labels = if labels.is_null() { t.clone() } else { labels };
        json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "uid": uid, "labels": labels},
            "spec": {"backoffLimit": 6, "completionMode": "NonIndexed", "completions": 1,
                "manualSelector": false, "parallelism": 1,
                "podReplacementPolicy": "TerminatingOrFailed", "suspend": false,
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
                "template": {"metadata": {"labels": t}, "spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox:1.36",
                        "imagePullPolicy": "IfNotPresent"}]}}}})
    }

    /// A Job's selector and the labels naming it are the server's (its
    /// create strategy's, owned by no writer), in its own labels too when
    /// it sent none; a label of another value, or one the server does not
    /// make, is not.
    #[test]
    fn a_jobs_generated_selector_and_labels_are_the_servers() {
        let with_owners = |mut live: Value, own: Value| {
            let mut fields = json!({"f:spec": {"f:backoffLimit": {}}});
            if !own.is_null() {
                fields["f:metadata"] = json!({"f:labels": own});
            }
            live["metadata"]["managedFields"] = json!([{"manager": "kubectl-client-side-apply",
                "operation": "Update", "apiVersion": "batch/v1", "fieldsType": "FieldsV1",
                "fieldsV1": fields}]);
            live
        };
        let rows = |live: &Value, paths: &[&str]| {
            let mut fields: Vec<FieldChange> = paths
                .iter()
                .map(|p| {
                    let at = FieldPath::from(*p);
                    kept(p, path::get(live, &at.segments()).unwrap().clone())
                })
                .collect();
            let la = json!({"apiVersion": "batch/v1", "kind": "Job"});
            classify(&mut fields, live, Some(&la));
            fields
                .iter()
                .map(|f| (f.cause, f.reason.clone()))
                .collect::<Vec<_>>()
        };
        let set = (Cause::ServerDefault, Reason::ServerSet);
        let made = [
            r#"spec.selector.matchLabels["batch.kubernetes.io/controller-uid"]"#,
            r#"spec.template.metadata.labels["batch.kubernetes.io/controller-uid"]"#,
            "spec.template.metadata.labels.job-name",
            // Its own labels: all of them rows, as all are live only.
            r#"metadata.labels["batch.kubernetes.io/job-name"]"#,
            r#"metadata.labels["batch.kubernetes.io/controller-uid"]"#,
            "metadata.labels.controller-uid",
            "metadata.labels.job-name",
        ];
        let none = with_owners(job("none", json!(null), json!({})), json!(null));
        assert_eq!(rows(&none, &made), vec![set.clone(); made.len()]);
        // Labels of its own: the template's are not copied there.
        let mut own = job("once", json!({"app": "x"}), json!({}));
        own["metadata"]["labels"]["job-name"] = json!("once");
        let own = with_owners(own, json!({".": {}, "f:app": {}}));
        assert_eq!(
            rows(&own, &[made[0], made[2], "metadata.labels.job-name"]),
            [
                set.clone(),
                set.clone(),
                (Cause::OtherWriter, Reason::Released)
            ]
        );
        // Another uid, a label the server does not make: no one's.
        let mut other = job("none", json!(null), json!({}));
        other["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"] =
            json!("u-else");
        other["metadata"]["labels"]["team"] = json!("a");
        let other = with_owners(other, json!(null));
        assert_eq!(
            rows(&other, &[made[0], "metadata.labels.team", made[2]]),
            [
                (Cause::OtherWriter, Reason::LiveOnly),
                (Cause::OtherWriter, Reason::LiveOnly),
                set,
            ]
        );
    }

    /// Taking the rows out at once decides as taking them out one by one
    /// (the definition) for every single row, all rows together, and
    /// many mixes; where it cannot tell, it says so.
    #[test]
    fn at_once_decides_as_one_by_one() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut decided, mut declined, mut defaulted, mut not) = (0, 0, 0, 0);
        for live in objects() {
            let mut all = vec![];
            row_paths(&live, "", &mut all);
            let all: Vec<FieldPath> = all.into_iter().map(FieldPath::from).collect();
            let mut sets: Vec<Vec<&FieldPath>> = all.iter().map(|p| vec![p]).collect();
            sets.push(all.iter().collect());
            // Mixes of the paths rows have: no list index (field rows
            // name elements by key).
            let keyed: Vec<&FieldPath> = all
                .iter()
                .filter(|p| !p.steps().any(|(s, _)| matches!(s, path::Step::Index(_))))
                .collect();
            for _ in 0..300 {
                let keep = next() % 4 + 1;
                sets.push(
                    keyed
                        .iter()
                        .copied()
                        .filter(|_| next() % keep == 0)
                        .collect(),
                );
            }
            for paths in sets.iter().filter(|s| !s.is_empty()) {
                let ip = || "10.96.0.7".to_string();
                let want = taken_out_one_by_one(paths, &live, &mut { ip });
                match taken_out_at_once(paths, &live, &mut { ip }) {
                    Some(got) => {
                        assert_eq!(got, want, "{paths:?}");
                        decided += 1;
                        defaulted += got.iter().filter(|&&d| d).count();
                        not += got.iter().filter(|&&d| !d).count();
                    }
                    None => declined += 1,
                }
            }
        }
        // The shapes rows have are decided at once (the declined: the
        // Deployment whose containers share a name, and list indexes).
        assert!(
            decided > 5 * declined,
            "{decided} decided, {declined} declined"
        );
        assert!(
            defaulted > 1000 && not > 1000,
            "{defaulted} defaulted, {not} not"
        );
    }

    /// A kept row of `live` at `p`, before its cause is decided.
    fn kept(p: &str, live: Value) -> FieldChange {
        FieldChange {
            path: p.into(),
            config: None,
            live: Some(live),
            last_applied: None,
            action: FieldAction::Keep,
            reason: Reason::LiveOnly,
            cause: Cause::default(),
            owner: None,
            changed_at: None,
            hazards: vec![],
        }
    }

    /// Kept rows of a Namespace, as `kubectl get -o json` gives it (no
    /// managedFields) and with managedFields: without, the server-default
    /// check decides and no writer is named; with, the owners decide as
    /// before (the plan names them in the reasons).
    #[test]
    fn kept_rows_without_managed_fields_name_no_writer() {
        let rows = || {
            vec![
                kept(
                    "metadata.labels[\"kubernetes.io/metadata.name\"]",
                    json!("team"),
                ),
                kept("metadata.labels.owner", json!("me")),
                kept("spec.finalizers", json!(["kubernetes"])),
            ]
        };
        let live = |managed: Option<Value>| {
            let mut l = json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "team",
                    "labels": {"kubernetes.io/metadata.name": "team", "owner": "me"}},
                "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
            if let Some(m) = managed {
                l["metadata"]["managedFields"] = m;
            }
            l
        };
        let la = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}});
        let summary = |fields: &[FieldChange]| {
            fields
                .iter()
                .map(|f| (f.cause, f.reason.clone(), f.owner.clone()))
                .collect::<Vec<_>>()
        };
        for managed in [None, Some(json!(null)), Some(json!([]))] {
            let mut fields = rows();
            classify(&mut fields, &live(managed.clone()), Some(&la));
            assert_eq!(
                summary(&fields),
                [
                    (Cause::ServerDefault, Reason::DefaultValue, None),
                    (Cause::OtherWriter, Reason::UnknownWriter, None),
                    (Cause::ServerDefault, Reason::DefaultValue, None),
                ],
                "{managed:?}"
            );
        }
        let entry = |manager: &str, fields: Value| {
            json!({"manager": manager, "operation": "Update", "apiVersion": "v1",
                "fieldsType": "FieldsV1", "fieldsV1": fields})
        };
        let managed = json!([
            entry(
                "kubectl-client-side-apply",
                json!({"f:metadata": {"f:labels": {
                "f:kubernetes.io/metadata.name": {}}}, "f:spec": {"f:finalizers": {}}})
            ),
            entry(
                "kubectl-label",
                json!({"f:metadata": {"f:labels": {"f:owner": {}}}})
            ),
        ]);
        let mut fields = rows();
        classify(&mut fields, &live(Some(managed)), Some(&la));
        assert_eq!(
            summary(&fields),
            [
                (Cause::ServerDefault, Reason::LiveOnly, None),
                (
                    Cause::OtherWriter,
                    Reason::LiveOnly,
                    Some("kubectl-label".to_string())
                ),
                (Cause::ServerDefault, Reason::LiveOnly, None),
            ]
        );
    }

    /// What kube-apiserver sets past its field manager (a Service's
    /// allocated cluster IPs and IP families, a Namespace's finalizer)
    /// is owned by no writer in the managedFields it writes (seen on
    /// v1.34): those rows read as set by the server; a row nobody owns
    /// that is no value of the server's stays another writer's.
    #[test]
    fn rows_no_writer_owns_are_the_servers_when_it_gives_that_value() {
        let csa = |fields: Value| {
            json!([{"manager": "kubectl-client-side-apply", "operation": "Update",
                "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields}])
        };
        let summary = |fields: &[FieldChange]| {
            fields
                .iter()
                .map(|f| (f.cause, f.reason.clone(), f.owner.clone()))
                .collect::<Vec<_>>()
        };
        let svc = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "t", "managedFields": csa(json!(
                {"f:spec": {"f:internalTrafficPolicy": {}, "f:selector": {},
                    "f:sessionAffinity": {}, "f:type": {}}}))},
            "spec": {"clusterIP": "10.0.0.12", "clusterIPs": ["10.0.0.12"],
                "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                "internalTrafficPolicy": "Cluster", "sessionAffinity": "None",
                "type": "ClusterIP", "selector": {"app": "web"},
                "externalIPs": ["1.2.3.4"]}});
        let mut fields = vec![
            kept("spec.clusterIP", json!("10.0.0.12")),
            kept("spec.clusterIPs", json!(["10.0.0.12"])),
            kept("spec.externalIPs", json!(["1.2.3.4"])),
            kept("spec.ipFamilies", json!(["IPv4"])),
            kept("spec.ipFamilyPolicy", json!("SingleStack")),
            kept("spec.sessionAffinity", json!("None")),
        ];
        let la = json!({"apiVersion": "v1", "kind": "Service"});
        classify(&mut fields, &svc, Some(&la));
        let set = (Cause::ServerDefault, Reason::ServerSet, None);
        assert_eq!(
            summary(&fields),
            [
                set.clone(),
                set.clone(),
                (Cause::OtherWriter, Reason::LiveOnly, None),
                set.clone(),
                set.clone(),
                // Owned by apply's manager alone: defaulted when apply
                // wrote it, as before.
                (Cause::ServerDefault, Reason::LiveOnly, None),
            ]
        );
        let ns = json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "t", "labels": {"kubernetes.io/metadata.name": "t"},
                "managedFields": csa(json!({"f:metadata": {"f:labels": {".": {},
                    "f:kubernetes.io/metadata.name": {}}}}))},
            "spec": {"finalizers": ["kubernetes"]}});
        let mut fields = vec![kept("spec.finalizers", json!(["kubernetes"]))];
        classify(&mut fields, &ns, Some(&la));
        assert_eq!(summary(&fields), [set]);
        let text = fields[0].explain(crate::merge::Form::Text);
        assert!(text.contains("set by the server"), "{text}");
    }

    #[test]
    fn rows_that_shift_or_repeat_are_left_to_one_by_one() {
        let tree_of = |ps: &[&str]| {
            let ps: Vec<FieldPath> = ps.iter().map(|&p| p.into()).collect();
            tree(&ps.iter().collect::<Vec<_>>()).is_some()
        };
        assert!(!tree_of(&["spec.args[0]"]));
        assert!(!tree_of(&["spec.a", "spec.a"]));
        assert!(tree_of(&["spec.a", "spec.ab", "spec.a.b", "spec[\"a.b\"]"]));
        let live = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}});
        let p = FieldPath::from("spec.template.spec.containers[name=a].image");
        let roots = tree(&[&p]).unwrap();
        assert!(pruned(&live, &roots, &mut [None]).is_none());
    }

    /// A row under another row: the copy leaves both out, defaulting gives
    /// both back, and the inner row's live value is still found to compare.
    #[test]
    fn row_under_a_row_is_compared_with_its_live_value() {
        let live = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"strategy": {"type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                "template": {"spec": {"containers": [{"name": "a", "image": "x:1",
                    "imagePullPolicy": "IfNotPresent"}]}}}});
        let paths = [
            "spec.strategy",
            "spec.strategy.type",
            "spec.strategy.rollingUpdate.maxSurge",
            "spec.template.spec.containers[name=a]",
            "spec.template.spec.containers[name=a].imagePullPolicy",
        ]
        .map(FieldPath::from);
        let paths: Vec<&FieldPath> = paths.iter().collect();
        let ip = || String::new();
        let got = taken_out_at_once(&paths, &live, &mut { ip }).unwrap();
        assert_eq!(got, taken_out_one_by_one(&paths, &live, &mut { ip }));
        assert_eq!(got, [true, true, true, false, false]);
    }

    /// The tree reads each step once, however the rows share them.
    #[test]
    fn tree_shares_steps() {
        let paths = [
            "spec.a",
            "spec.ab",
            "spec.a.b",
            "spec.c[name=x].d",
            "spec.c[name=x].e",
            "spec.c[name=y]",
            "metadata.labels[\"a.b/c\"]",
        ]
        .map(FieldPath::from);
        let roots = tree(&paths.iter().collect::<Vec<_>>()).unwrap();
        fn texts<'p>(ns: &[Node<'p>]) -> Vec<&'p str> {
            ns.iter().map(|n| n.text).collect()
        }
        assert_eq!(texts(&roots), ["spec", "metadata"]);
        assert_eq!(texts(&roots[0].children), [".a", ".ab", ".c"]);
        assert_eq!(roots[0].children[0].row, Some(0));
        assert_eq!(texts(&roots[0].children[0].children), [".b"]);
        assert_eq!(
            texts(&roots[0].children[2].children),
            ["[name=x]", "[name=y]"]
        );
        assert_eq!(roots[0].children[2].children[1].row, Some(5));
        assert_eq!(texts(&roots[1].children[0].children), ["[\"a.b/c\"]"]);
    }
}
