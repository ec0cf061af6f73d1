//! `meta.k8s.io/v1` Tables for `kubectl get`: per built-in kind the
//! columns kubectl shows against a real API server (the server prints them;
//! `-o wide` adds the priority-1 ones), name and age for the others.

use crate::resources::ResourceInfo;
use serde_json::{Value, json};

/// A duration as kubectl words it: `45s`, `5m30s`, `12m`, `3h20m`, `26h`,
/// `3d4h`, `40d`, `2y3d`.
fn human(secs: i64) -> String {
    let s = secs.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86400);
    match () {
        _ if s < 120 => format!("{s}s"),
        _ if m < 10 && s % 60 != 0 => format!("{m}m{}s", s % 60),
        _ if m < 180 => format!("{m}m"),
        _ if h < 8 && m % 60 != 0 => format!("{h}h{}m", m % 60),
        _ if h < 48 => format!("{h}h"),
        _ if h < 192 && h % 24 != 0 => format!("{d}d{}h", h % 24),
        _ if d < 730 => format!("{d}d"),
        _ if d < 365 * 8 && d % 365 != 0 => format!("{}y{}d", d / 365, d % 365),
        _ => format!("{}y", d / 365),
    }
}

fn seconds(t: &Value) -> Option<i64> {
    t.as_str()?
        .parse::<jiff::Timestamp>()
        .ok()
        .map(|t| t.as_second())
}

/// Time since `t`, as kubectl prints an age; `<unknown>` without one.
fn since(t: &Value) -> String {
    match seconds(t) {
        Some(t) => human(jiff::Timestamp::now().as_second() - t),
        None => "<unknown>".into(),
    }
}

fn age(o: &Value) -> Value {
    json!(since(&o["metadata"]["creationTimestamp"]))
}

fn int(v: &Value) -> Value {
    json!(v.as_i64().unwrap_or(0))
}

fn count(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.len(),
        Value::Array(a) => a.len(),
        _ => 0,
    }
}

/// A string field, or `none` when absent or empty.
fn or(v: &Value, none: &str) -> Value {
    match v.as_str() {
        Some(s) if !s.is_empty() => json!(s),
        _ => json!(none),
    }
}

/// `parts` joined by commas, `none` when there is none.
fn list_or<S: std::borrow::Borrow<str>>(parts: &[S], none: &str) -> String {
    if parts.is_empty() {
        none.into()
    } else {
        parts.join(",")
    }
}

/// `k=v` of each entry of a string map, in its order.
fn pairs(m: &Value) -> Vec<String> {
    m.as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect()
}

/// `k=v,k2=v2`, keys sorted; `<none>` when empty.
fn labels(m: &Value) -> String {
    let mut kv = pairs(m);
    kv.sort();
    list_or(&kv, "<none>")
}

/// A label selector as kubectl writes it: `app=web,tier in (a,b)`;
/// `<none>` for an empty one.
fn selector(s: &Value) -> String {
    let mut parts = pairs(&s["matchLabels"]);
    for e in s["matchExpressions"].as_array().into_iter().flatten() {
        let key = e["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        parts.push(match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            op => format!("{key} {op}"),
        });
    }
    list_or(&parts, "<none>")
}

/// The pod template's container names, then its images.
fn containers(spec: &Value, what: &str) -> Value {
    let v: Vec<&str> = spec["template"]["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c[what].as_str())
        .collect();
    json!(v.join(","))
}

fn access_modes(v: &Value) -> Value {
    let modes: Vec<&str> = v
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|m| match m {
            "ReadWriteOnce" => "RWO",
            "ReadOnlyMany" => "ROX",
            "ReadWriteMany" => "RWX",
            "ReadWriteOncePod" => "RWOP",
            other => other,
        })
        .collect();
    json!(modes.join(","))
}

fn service_ports(o: &Value) -> String {
    let ports: Vec<String> = o["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let proto = p["protocol"].as_str().unwrap_or("TCP");
            match p["nodePort"].as_i64() {
                Some(n) => format!("{}:{n}/{proto}", p["port"]),
                None => format!("{}/{proto}", p["port"]),
            }
        })
        .collect();
    list_or(&ports, "<none>")
}

fn load_balancer(o: &Value) -> Vec<String> {
    o["status"]["loadBalancer"]["ingress"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["ip"].as_str().or(i["hostname"].as_str()))
        .map(str::to_string)
        .collect()
}

fn external_ip(o: &Value) -> String {
    let spec = &o["spec"];
    let mut ips: Vec<String> = spec["externalIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    match spec["type"].as_str().unwrap_or("ClusterIP") {
        "ExternalName" => return spec["externalName"].as_str().unwrap_or_default().into(),
        "LoadBalancer" => {
            let lb = load_balancer(o);
            if lb.is_empty() && ips.is_empty() {
                return "<pending>".into();
            }
            ips.extend(lb);
        }
        _ => {}
    }
    list_or(&ips, "<none>")
}

/// The condition of `type` that is `True`.
fn condition(o: &Value, ty: &str) -> bool {
    o["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == ty && c["status"] == "True")
}

fn job_status(o: &Value) -> &'static str {
    for (ty, word) in [
        ("Failed", "Failed"),
        ("Complete", "Complete"),
        ("Suspended", "Suspended"),
        ("FailureTarget", "FailureTarget"),
        ("SuccessCriteriaMet", "SuccessCriteriaMet"),
    ] {
        if condition(o, ty) {
            return word;
        }
    }
    if o["metadata"]["deletionTimestamp"].is_string() {
        "Terminating"
    } else {
        "Running"
    }
}

fn job_completions(o: &Value) -> String {
    let done = o["status"]["succeeded"].as_i64().unwrap_or(0);
    match (
        o["spec"]["completions"].as_i64(),
        o["spec"]["parallelism"].as_i64(),
    ) {
        (Some(c), _) => format!("{done}/{c}"),
        (None, Some(p)) if p > 1 => format!("{done}/1 of {p}"),
        _ => format!("{done}/1"),
    }
}

fn job_duration(o: &Value) -> String {
    let Some(start) = seconds(&o["status"]["startTime"]) else {
        return String::new();
    };
    let end = seconds(&o["status"]["completionTime"])
        .unwrap_or_else(|| jiff::Timestamp::now().as_second());
    human(end - start)
}

/// A pod's Ready, Status and Restarts cells, which read the same container
/// statuses: computed together, once per row.
fn pod_cells(o: &Value) -> [Value; 3] {
    let statuses = o["status"]["containerStatuses"].as_array();
    let total = o["spec"]["containers"].as_array().map_or(0, Vec::len);
    let ready = statuses
        .into_iter()
        .flatten()
        .filter(|s| s["ready"] == true)
        .count();
    let restarts: i64 = statuses
        .into_iter()
        .flatten()
        .filter_map(|s| s["restartCount"].as_i64())
        .sum();
    // A waiting or terminated container's reason says more than the phase.
    let mut status = o["status"]["reason"]
        .as_str()
        .or(o["status"]["phase"].as_str())
        .unwrap_or("Unknown")
        .to_string();
    for s in statuses.into_iter().flatten() {
        if let Some(r) = s["state"]["waiting"]["reason"].as_str() {
            status = r.to_string();
        } else if let Some(r) = s["state"]["terminated"]["reason"].as_str() {
            status = r.to_string();
        }
    }
    if o["metadata"]["deletionTimestamp"].is_string() {
        status = "Terminating".into();
    }
    [
        json!(format!("{ready}/{total}")),
        json!(status),
        json!(restarts),
    ]
}

/// `spec.minAvailable` or `spec.maxUnavailable` of a PodDisruptionBudget:
/// a count or a percentage, `N/A` when unset.
fn pdb_bound(v: &Value) -> Value {
    json!(match v {
        Value::Null => "N/A".to_string(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    })
}

/// `used/hard` of each quota resource, keys sorted: requests (and plain
/// counts) in one column, `limits.*` in the other.
fn quota(o: &Value, limits: bool) -> String {
    let hard = o["status"]["hard"]
        .as_object()
        .or(o["spec"]["hard"].as_object());
    let mut out: Vec<String> = hard
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with("limits.") == limits)
        .map(|(k, h)| {
            let used = o["status"]["used"][k].as_str().unwrap_or("0");
            format!("{k}: {used}/{}", h.as_str().unwrap_or_default())
        })
        .collect();
    out.sort();
    out.join(", ")
}

fn binding_subjects(o: &Value, kind: &str) -> Value {
    let names: Vec<String> = o["subjects"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["kind"] == kind)
        .map(|s| {
            let name = s["name"].as_str().unwrap_or_default();
            if kind == "ServiceAccount" {
                let ns = s["namespace"].as_str().unwrap_or_default();
                format!("{ns}/{name}")
            } else {
                name.to_string()
            }
        })
        .collect();
    json!(names.join(", "))
}

fn endpoints(o: &Value) -> String {
    let mut all = Vec::new();
    for s in o["subsets"].as_array().into_iter().flatten() {
        for a in s["addresses"].as_array().into_iter().flatten() {
            let ip = a["ip"].as_str().unwrap_or_default();
            let ports = s["ports"].as_array().map_or(&[][..], Vec::as_slice);
            if ports.is_empty() {
                all.push(ip.to_string());
            }
            for p in ports {
                all.push(format!("{ip}:{}", p["port"]));
            }
        }
    }
    match all.len() {
        0 => "<none>".into(),
        n if n > 3 => format!("{} + {} more...", all[..3].join(","), n - 3),
        _ => all.join(","),
    }
}

/// One column: its title as the server names it (kubectl upper-cases it),
/// its type, whether only `-o wide` shows it, and its cell.
struct Col {
    name: &'static str,
    ty: &'static str,
    wide: bool,
    cell: Cell,
}

/// How a column's cell is computed.
#[derive(Clone, Copy)]
enum Cell {
    /// From the object alone.
    Of(fn(&Value) -> Value),
    /// The i-th of [`pod_cells`].
    Pod(usize),
}

const fn col(name: &'static str, cell: fn(&Value) -> Value) -> Col {
    Col {
        name,
        ty: "string",
        wide: false,
        cell: Cell::Of(cell),
    }
}

const fn num(name: &'static str, cell: fn(&Value) -> Value) -> Col {
    Col {
        name,
        ty: "integer",
        wide: false,
        cell: Cell::Of(cell),
    }
}

const fn wide(name: &'static str, cell: fn(&Value) -> Value) -> Col {
    Col {
        name,
        ty: "string",
        wide: true,
        cell: Cell::Of(cell),
    }
}

/// The `i`-th of [`pod_cells`] as a column.
const fn pod(name: &'static str, ty: &'static str, i: usize) -> Col {
    Col {
        name,
        ty,
        wide: false,
        cell: Cell::Pod(i),
    }
}

/// The row of `o`: each column's cell.
fn cells(cols: &[Col], o: &Value) -> Vec<Value> {
    let mut pod: Option<[Value; 3]> = None;
    cols.iter()
        .map(|c| match c.cell {
            Cell::Of(f) => f(o),
            Cell::Pod(i) => pod.get_or_insert_with(|| pod_cells(o))[i].clone(),
        })
        .collect()
}

const NAME: Col = col("Name", |o| o["metadata"]["name"].clone());
const AGE: Col = col("Age", age);
const CONTAINERS: Col = wide("Containers", |o| containers(&o["spec"], "name"));
const IMAGES: Col = wide("Images", |o| containers(&o["spec"], "image"));
const SELECTOR: Col = wide("Selector", |o| json!(selector(&o["spec"]["selector"])));
const CREATED_AT: Col = col("Created At", |o| {
    or(&o["metadata"]["creationTimestamp"], "<unknown>")
});
/// `ready/desired` replicas of a Deployment or a StatefulSet.
const READY_REPLICAS: Col = col("Ready", |o| {
    let want = o["spec"]["replicas"].as_i64().unwrap_or(1);
    let ready = o["status"]["readyReplicas"].as_i64().unwrap_or(0);
    json!(format!("{ready}/{want}"))
});

/// The columns of `kind`, as kubectl's printers give them.
fn columns(group: &str, kind: &str) -> Vec<Col> {
    match (group, kind) {
        ("apps", "Deployment") => vec![
            NAME,
            READY_REPLICAS,
            num("Up-to-date", |o| int(&o["status"]["updatedReplicas"])),
            num("Available", |o| int(&o["status"]["availableReplicas"])),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        ("apps", "ReplicaSet") | ("", "ReplicationController") => vec![
            NAME,
            num("Desired", |o| {
                json!(o["spec"]["replicas"].as_i64().unwrap_or(1))
            }),
            num("Current", |o| int(&o["status"]["replicas"])),
            num("Ready", |o| int(&o["status"]["readyReplicas"])),
            AGE,
            CONTAINERS,
            IMAGES,
            wide("Selector", |o| {
                let s = &o["spec"]["selector"];
                // A ReplicationController's selector is a plain map.
                json!(
                    if s.get("matchLabels").is_some() || s.get("matchExpressions").is_some() {
                        selector(s)
                    } else {
                        labels(s)
                    }
                )
            }),
        ],
        ("apps", "StatefulSet") => vec![NAME, READY_REPLICAS, AGE, CONTAINERS, IMAGES],
        ("apps", "DaemonSet") => vec![
            NAME,
            num("Desired", |o| int(&o["status"]["desiredNumberScheduled"])),
            num("Current", |o| int(&o["status"]["currentNumberScheduled"])),
            num("Ready", |o| int(&o["status"]["numberReady"])),
            num("Up-to-date", |o| {
                int(&o["status"]["updatedNumberScheduled"])
            }),
            num("Available", |o| int(&o["status"]["numberAvailable"])),
            col("Node Selector", |o| {
                json!(labels(&o["spec"]["template"]["spec"]["nodeSelector"]))
            }),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        ("batch", "Job") => vec![
            NAME,
            col("Status", |o| json!(job_status(o))),
            col("Completions", |o| json!(job_completions(o))),
            col("Duration", |o| json!(job_duration(o))),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        ("batch", "CronJob") => vec![
            NAME,
            col("Schedule", |o| o["spec"]["schedule"].clone()),
            col("Timezone", |o| or(&o["spec"]["timeZone"], "<none>")),
            col("Suspend", |o| {
                json!(match o["spec"]["suspend"].as_bool() {
                    Some(true) => "True",
                    Some(false) => "False",
                    None => "<unset>",
                })
            }),
            num("Active", |o| json!(count(&o["status"]["active"]))),
            col("Last Schedule", |o| {
                let t = &o["status"]["lastScheduleTime"];
                json!(if t.is_string() {
                    since(t)
                } else {
                    "<none>".into()
                })
            }),
            AGE,
            wide("Containers", |o| {
                containers(&o["spec"]["jobTemplate"]["spec"], "name")
            }),
            wide("Images", |o| {
                containers(&o["spec"]["jobTemplate"]["spec"], "image")
            }),
            wide("Selector", |o| {
                json!(selector(&o["spec"]["jobTemplate"]["spec"]["selector"]))
            }),
        ],
        ("", "Service") => vec![
            NAME,
            col("Type", |o| or(&o["spec"]["type"], "ClusterIP")),
            col("Cluster-IP", |o| or(&o["spec"]["clusterIP"], "<none>")),
            col("External-IP", |o| json!(external_ip(o))),
            col("Port(s)", |o| json!(service_ports(o))),
            AGE,
            wide("Selector", |o| json!(labels(&o["spec"]["selector"]))),
        ],
        ("networking.k8s.io", "Ingress") => vec![
            NAME,
            col("Class", |o| or(&o["spec"]["ingressClassName"], "<none>")),
            col("Hosts", |o| {
                let hosts: Vec<&str> = o["spec"]["rules"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|r| r["host"].as_str().unwrap_or("*"))
                    .collect();
                json!(list_or(&hosts, "*"))
            }),
            col("Address", |o| json!(load_balancer(o).join(","))),
            col("Ports", |o| {
                json!(if count(&o["spec"]["tls"]) > 0 {
                    "80, 443"
                } else {
                    "80"
                })
            }),
            AGE,
        ],
        ("networking.k8s.io", "NetworkPolicy") => vec![
            NAME,
            col("Pod-Selector", |o| {
                json!(selector(&o["spec"]["podSelector"]))
            }),
            AGE,
        ],
        ("", "Endpoints") => vec![NAME, col("Endpoints", |o| json!(endpoints(o))), AGE],
        ("", "Node") => vec![
            NAME,
            col("Status", |o| {
                json!(if condition(o, "Ready") {
                    "Ready"
                } else {
                    "NotReady"
                })
            }),
            col("Roles", |o| {
                let roles: Vec<&str> = o["metadata"]["labels"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/"))
                    .collect();
                json!(list_or(&roles, "<none>"))
            }),
            AGE,
            col("Version", |o| {
                o["status"]["nodeInfo"]["kubeletVersion"].clone()
            }),
        ],
        ("", "Event") => vec![
            col("Last Seen", |o| {
                let t = ["lastTimestamp", "eventTime", "firstTimestamp"]
                    .iter()
                    .map(|k| &o[k])
                    .find(|t| t.is_string())
                    .unwrap_or(&Value::Null);
                json!(since(t))
            }),
            col("Type", |o| o["type"].clone()),
            col("Reason", |o| o["reason"].clone()),
            col("Object", |o| {
                let r = &o["involvedObject"];
                json!(format!(
                    "{}/{}",
                    r["kind"].as_str().unwrap_or_default().to_lowercase(),
                    r["name"].as_str().unwrap_or_default()
                ))
            }),
            wide("Subobject", |o| o["involvedObject"]["fieldPath"].clone()),
            wide("Source", |o| o["source"]["component"].clone()),
            col("Message", |o| o["message"].clone()),
            wide("First Seen", |o| json!(since(&o["firstTimestamp"]))),
            wide("Count", |o| json!(o["count"].as_i64().unwrap_or(1))),
            wide("Name", |o| o["metadata"]["name"].clone()),
        ],
        ("", "Namespace") => vec![NAME, col("Status", |o| o["status"]["phase"].clone()), AGE],
        ("", "Secret") => vec![
            NAME,
            col("Type", |o| o["type"].clone()),
            num("Data", |o| json!(count(&o["data"]))),
            AGE,
        ],
        ("", "ConfigMap") => vec![
            NAME,
            num("Data", |o| {
                json!(count(&o["data"]) + count(&o["binaryData"]))
            }),
            AGE,
        ],
        ("", "ServiceAccount") => vec![NAME, num("Secrets", |o| json!(count(&o["secrets"]))), AGE],
        ("", "PersistentVolume") => vec![
            NAME,
            col("Capacity", |o| o["spec"]["capacity"]["storage"].clone()),
            col("Access Modes", |o| access_modes(&o["spec"]["accessModes"])),
            col("Reclaim Policy", |o| {
                o["spec"]["persistentVolumeReclaimPolicy"].clone()
            }),
            col("Status", |o| o["status"]["phase"].clone()),
            col("Claim", |o| {
                let c = &o["spec"]["claimRef"];
                json!(match (c["namespace"].as_str(), c["name"].as_str()) {
                    (Some(ns), Some(n)) => format!("{ns}/{n}"),
                    _ => String::new(),
                })
            }),
            col("StorageClass", |o| or(&o["spec"]["storageClassName"], "")),
            col("VolumeAttributesClass", |o| {
                or(&o["spec"]["volumeAttributesClassName"], "<unset>")
            }),
            col("Reason", |o| or(&o["status"]["reason"], "")),
            AGE,
            wide("VolumeMode", |o| or(&o["spec"]["volumeMode"], "Filesystem")),
        ],
        ("", "PersistentVolumeClaim") => vec![
            NAME,
            col("Status", |o| o["status"]["phase"].clone()),
            col("Volume", |o| or(&o["spec"]["volumeName"], "")),
            col("Capacity", |o| or(&o["status"]["capacity"]["storage"], "")),
            col("Access Modes", |o| {
                access_modes(&o["status"]["accessModes"])
            }),
            col("StorageClass", |o| or(&o["spec"]["storageClassName"], "")),
            col("VolumeAttributesClass", |o| {
                or(&o["spec"]["volumeAttributesClassName"], "<unset>")
            }),
            AGE,
            wide("VolumeMode", |o| or(&o["spec"]["volumeMode"], "Filesystem")),
        ],
        ("", "Pod") => vec![
            NAME,
            pod("Ready", "string", 0),
            pod("Status", "string", 1),
            pod("Restarts", "integer", 2),
            AGE,
            wide("IP", |o| or(&o["status"]["podIP"], "<none>")),
            wide("Node", |o| or(&o["spec"]["nodeName"], "<none>")),
            wide("Nominated Node", |o| {
                or(&o["status"]["nominatedNodeName"], "<none>")
            }),
            wide("Readiness Gates", |o| {
                json!(match count(&o["spec"]["readinessGates"]) {
                    0 => "<none>".to_string(),
                    n => format!("0/{n}"),
                })
            }),
        ],
        ("policy", "PodDisruptionBudget") => vec![
            NAME,
            col("Min Available", |o| pdb_bound(&o["spec"]["minAvailable"])),
            col("Max Unavailable", |o| {
                pdb_bound(&o["spec"]["maxUnavailable"])
            }),
            num("Allowed Disruptions", |o| {
                int(&o["status"]["disruptionsAllowed"])
            }),
            AGE,
        ],
        ("", "ResourceQuota") => vec![
            NAME,
            AGE,
            col("Request", |o| json!(quota(o, false))),
            col("Limit", |o| json!(quota(o, true))),
        ],
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => vec![NAME, CREATED_AT],
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => vec![
            NAME,
            col("Role", |o| {
                let r = &o["roleRef"];
                json!(format!(
                    "{}/{}",
                    r["kind"].as_str().unwrap_or_default(),
                    r["name"].as_str().unwrap_or_default()
                ))
            }),
            AGE,
            wide("Users", |o| binding_subjects(o, "User")),
            wide("Groups", |o| binding_subjects(o, "Group")),
            wide("ServiceAccounts", |o| binding_subjects(o, "ServiceAccount")),
        ],
        ("scheduling.k8s.io", "PriorityClass") => vec![
            NAME,
            num("Value", |o| int(&o["value"])),
            Col {
                ty: "boolean",
                ..col("Global-Default", |o| {
                    json!(o["globalDefault"].as_bool().unwrap_or(false))
                })
            },
            AGE,
            col("PreemptionPolicy", |o| {
                or(&o["preemptionPolicy"], "PreemptLowerPriority")
            }),
        ],
        ("apiextensions.k8s.io", "CustomResourceDefinition") => vec![NAME, CREATED_AT],
        _ => vec![NAME, AGE],
    }
}

/// A `meta.k8s.io/v1` Table of `list`'s items for `kubectl get`.
pub(super) fn table(r: &ResourceInfo, list: &Value) -> Value {
    let cols = columns(&r.group, &r.kind);
    let rows: Vec<Value> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            json!({
                "cells": cells(&cols, o),
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                           "metadata": o["metadata"]},
            })
        })
        .collect();
    let defs: Vec<Value> = cols
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "type": c.ty,
                "format": if c.name == "Name" && !c.wide { "name" } else { "" },
                "description": c.name,
                "priority": i32::from(c.wide),
            })
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": list["metadata"]["resourceVersion"]},
        "columnDefinitions": defs,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::{cells, columns, human};
    use serde_json::json;

    /// A pod's Ready, Status and Restarts (computed together) and the
    /// other columns, in order, as `kubectl get pod -o wide` reads them.
    #[test]
    fn a_pods_row_has_its_ready_status_and_restarts() {
        let cols = columns("", "Pod");
        let names: Vec<&str> = cols.iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            [
                "Name",
                "Ready",
                "Status",
                "Restarts",
                "Age",
                "IP",
                "Node",
                "Nominated Node",
                "Readiness Gates"
            ]
        );
        let types: Vec<&str> = cols.iter().map(|c| c.ty).collect();
        assert_eq!(types[1..4], ["string", "string", "integer"]);
        let pod = json!({"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
            "status": {"phase": "Running", "podIP": "10.0.0.5", "containerStatuses": [
                {"ready": true, "restartCount": 2, "state": {"running": {}}},
                {"ready": false, "restartCount": 1,
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
        let row = cells(&cols, &pod);
        assert_eq!(
            row[..4],
            [
                json!("p"),
                json!("1/2"),
                json!("CrashLoopBackOff"),
                json!(3)
            ]
        );
        assert_eq!(
            row[5..],
            [
                json!("10.0.0.5"),
                json!("n1"),
                json!("<none>"),
                json!("<none>")
            ]
        );
        let mut gone = pod.clone();
        gone["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        gone["status"]["containerStatuses"] = json!([]);
        assert_eq!(
            cells(&cols, &gone)[1..4],
            [json!("0/2"), json!("Terminating"), json!(0)]
        );
    }

    /// Lists are joined by commas, and say so when empty: `<none>`, or
    /// `*` for an Ingress's hosts.
    #[test]
    fn lists_are_joined_or_say_there_is_none() {
        let row = |group, kind, o: serde_json::Value| cells(&columns(group, kind), &o);
        let node = |labels| json!({"metadata": {"name": "n", "labels": labels}});
        let roles = json!({"node-role.kubernetes.io/a": "", "node-role.kubernetes.io/b": "",
            "x": "y"});
        assert_eq!(row("", "Node", node(roles))[2], json!("a,b"));
        assert_eq!(row("", "Node", node(json!({})))[2], json!("<none>"));
        let ing = |rules| json!({"metadata": {"name": "i"}, "spec": {"rules": rules}});
        let hosts = json!([{"host": "a.example.com"}, {}]);
        assert_eq!(
            row("networking.k8s.io", "Ingress", ing(hosts))[2],
            json!("a.example.com,*")
        );
        assert_eq!(
            row("networking.k8s.io", "Ingress", ing(json!([])))[2],
            json!("*")
        );
        let np = |sel| json!({"metadata": {"name": "p"}, "spec": {"podSelector": sel}});
        let sel = json!({"matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]});
        assert_eq!(
            row("networking.k8s.io", "NetworkPolicy", np(sel))[1],
            json!("app=web,tier in (a,b)")
        );
        assert_eq!(
            row("networking.k8s.io", "NetworkPolicy", np(json!({})))[1],
            json!("<none>")
        );
        let ds = |sel| {
            json!({"metadata": {"name": "d"},
            "spec": {"template": {"spec": {"nodeSelector": sel}}}})
        };
        let sel = json!({"b": "2", "a": "1"});
        assert_eq!(row("apps", "DaemonSet", ds(sel))[6], json!("a=1,b=2"));
        assert_eq!(
            row("apps", "DaemonSet", ds(json!(null)))[6],
            json!("<none>")
        );
        let svc = |spec| json!({"metadata": {"name": "s"}, "spec": spec});
        let lb = json!({"type": "LoadBalancer", "ports": [{"port": 80, "nodePort": 30080}]});
        assert_eq!(
            row("", "Service", svc(lb))[3..5],
            [json!("<pending>"), json!("80:30080/TCP")]
        );
        let plain = json!({"externalIPs": ["1.2.3.4", "5.6.7.8"]});
        assert_eq!(
            row("", "Service", svc(plain))[3..5],
            [json!("1.2.3.4,5.6.7.8"), json!("<none>")]
        );
    }

    /// Deployments and StatefulSets print `ready/desired`; a PDB's bounds
    /// are a count, a percentage or `N/A`.
    #[test]
    fn ready_replicas_and_pdb_bounds() {
        let o = json!({"metadata": {"name": "x"}, "spec": {"replicas": 3},
            "status": {"readyReplicas": 2}});
        for kind in ["Deployment", "StatefulSet"] {
            assert_eq!(cells(&columns("apps", kind), &o)[1], json!("2/3"), "{kind}");
        }
        let none = json!({"metadata": {"name": "x"}});
        assert_eq!(
            cells(&columns("apps", "StatefulSet"), &none)[1],
            json!("0/1")
        );
        let pdb = |spec| {
            let o = json!({"metadata": {"name": "b"}, "spec": spec,
                "status": {"disruptionsAllowed": 1}});
            cells(&columns("policy", "PodDisruptionBudget"), &o)[..4].to_vec()
        };
        assert_eq!(
            pdb(json!({"minAvailable": 2})),
            [json!("b"), json!("2"), json!("N/A"), json!(1)]
        );
        assert_eq!(
            pdb(json!({"maxUnavailable": "25%"})),
            [json!("b"), json!("N/A"), json!("25%"), json!(1)]
        );
    }

    #[test]
    fn durations_read_as_kubectl_words_them() {
        let cases = [
            (45, "45s"),
            (119, "119s"),
            (330, "5m30s"),
            (600, "10m"),
            (179 * 60, "179m"),
            (3 * 3600 + 20 * 60, "3h20m"),
            (26 * 3600, "26h"),
            (76 * 3600, "3d4h"),
            (40 * 86400, "40d"),
            (733 * 86400, "2y3d"),
        ];
        for (secs, want) in cases {
            assert_eq!(human(secs), want, "{secs}");
        }
    }
}
