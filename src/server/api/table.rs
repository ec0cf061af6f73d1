//! `meta.k8s.io/v1` Tables for `kubectl get`.

use crate::server::resources::ResourceInfo;
use serde_json::{Value, json};

/// Human age as kubectl prints it: `45s`, `12m`, `3h`, `2d`.
fn age(created: &Value) -> String {
    let Some(t) = created
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    else {
        return "<unknown>".into();
    };
    let secs = jiff::Timestamp::now().as_second() - t.as_second();
    match secs.max(0) {
        s if s < 120 => format!("{s}s"),
        s if s < 3 * 3600 => format!("{}m", s / 60),
        s if s < 2 * 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// The extra cells of one row.
type Cells = fn(&Value) -> Vec<Value>;

/// A `meta.k8s.io/v1` Table for `kubectl get`: the usual columns of the
/// common kinds, name and age for the others.
pub(super) fn table(r: &ResourceInfo, list: &Value) -> Value {
    let (columns, cells): (Vec<&str>, Cells) = match (r.group.as_str(), r.kind.as_str()) {
        ("apps", "Deployment" | "StatefulSet" | "ReplicaSet") => {
            (vec!["Ready", "Up-to-date", "Available"], |o| {
                let want = o["spec"]["replicas"].as_i64().unwrap_or(1);
                let ready = o["status"]["readyReplicas"].as_i64().unwrap_or(0);
                vec![
                    json!(format!("{ready}/{want}")),
                    json!(o["status"]["updatedReplicas"].as_i64().unwrap_or(0)),
                    json!(o["status"]["availableReplicas"].as_i64().unwrap_or(0)),
                ]
            })
        }
        ("", "Service") => (vec!["Type", "Cluster-IP", "External-IP", "Port(s)"], |o| {
            let ports: Vec<String> = o["spec"]["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| format!("{}/{}", p["port"], p["protocol"].as_str().unwrap_or("TCP")))
                .collect();
            vec![
                o["spec"]["type"].clone(),
                o["spec"]["clusterIP"].clone(),
                json!("<none>"),
                json!(if ports.is_empty() {
                    "<none>".to_string()
                } else {
                    ports.join(",")
                }),
            ]
        }),
        ("", "Secret") => (vec!["Type", "Data"], |o| {
            let n = o["data"].as_object().map(|m| m.len()).unwrap_or(0);
            vec![o["type"].clone(), json!(n)]
        }),
        ("", "ConfigMap") => (vec!["Data"], |o| {
            let n = o["data"].as_object().map(|m| m.len()).unwrap_or(0)
                + o["binaryData"].as_object().map(|m| m.len()).unwrap_or(0);
            vec![json!(n)]
        }),
        ("", "Namespace") => (vec!["Status"], |o| vec![o["status"]["phase"].clone()]),
        _ => (vec![], |_| vec![]),
    };
    let rows: Vec<Value> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            let mut c = vec![o["metadata"]["name"].clone()];
            c.extend(cells(o));
            c.push(json!(age(&o["metadata"]["creationTimestamp"])));
            json!({
                "cells": c,
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                           "metadata": o["metadata"]},
            })
        })
        .collect();
    let mut defs = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}),
    ];
    for c in columns {
        defs.push(
            json!({"name": c, "type": "string", "format": "", "description": c, "priority": 0}),
        );
    }
    defs.push(
        json!({"name": "Age", "type": "string", "format": "", "description": "Age", "priority": 0}),
    );
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": list["metadata"]["resourceVersion"]},
        "columnDefinitions": defs,
        "rows": rows,
    })
}
