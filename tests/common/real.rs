//! The real kube-apiserver of `scripts/real-apiserver` (included with
//! `#[path = "common/real.rs"] mod real;`), and objects read from a
//! namespace brought to a form two namespaces can be compared in.

// Each test binary uses only some of these helpers.
#![allow(dead_code)]

use serde_json::Value;
use std::path::PathBuf;

/// The variable `.ci/run` sets to the kubeconfig `scripts/real-apiserver
/// start` printed.
pub const ENV: &str = "KAPPLY_REAL_APISERVER_KUBECONFIG";

/// The real API server's kubeconfig, or `None` (with a message) when
/// `KAPPLY_REAL_APISERVER_KUBECONFIG` is unset: the caller skips. Under
/// `KAPPLY_CI` a missing variable or file is a failure, never a skip.
pub fn kubeconfig() -> Option<PathBuf> {
    let ci = std::env::var_os("KAPPLY_CI").is_some();
    match std::env::var_os(ENV) {
        Some(path) => {
            let path = PathBuf::from(path);
            assert!(
                path.is_file(),
                "{ENV}={} is not a file (is the server running? scripts/real-apiserver start)",
                path.display()
            );
            Some(path)
        }
        None => {
            assert!(
                !ci,
                "{ENV} is required when KAPPLY_CI is set (scripts/real-apiserver start prints it)"
            );
            eprintln!(
                "skipping: no real API server ({ENV} unset; `export {ENV}=$(scripts/real-apiserver start | tail -n 1)`)"
            );
            None
        }
    }
}

/// A name no earlier run against the same (long-lived) server used.
pub fn unique(prefix: &str) -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{prefix}-{:x}{:05x}",
        std::process::id() & 0xfff,
        nanos >> 12
    )
}

/// `obj` without what differs between two equal histories in two
/// namespaces: uid, resourceVersion, creationTimestamp, the managedFields
/// times, a Service's cluster IPs and node ports; every occurrence of a `subst` string (the
/// namespace's name, an ApplySet ID) and of the object's uid (Job labels)
/// replaced by its stand-in.
pub fn normalize(obj: &Value, subst: &[(String, String)]) -> Value {
    let mut obj = obj.clone();
    let mut subst = subst.to_vec();
    if let Some(uid) = obj["metadata"]["uid"].as_str() {
        subst.push((uid.to_string(), "UID".to_string()));
    }
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in ["uid", "resourceVersion", "creationTimestamp"] {
            meta.remove(key);
        }
        if let Some(Value::Array(entries)) = meta.get_mut("managedFields") {
            for e in entries.iter_mut() {
                if let Some(e) = e.as_object_mut() {
                    e.remove("time");
                }
            }
            // The server orders entries by their time, to the second, and
            // ties by manager: the order of two writes in one second or two
            // is luck. Compared in one order.
            entries.sort_by_key(|e| {
                ["manager", "operation", "subresource"]
                    .map(|k| e[k].as_str().unwrap_or("").to_string())
            });
        }
    }
    if obj["kind"] == "Service" {
        // Exported manifests keep the address, in the annotation too.
        if let Some(ip) = obj["spec"]["clusterIP"]
            .as_str()
            .filter(|ip| ip.contains('.'))
        {
            subst.push((format!("\"{ip}\""), "\"CLUSTER-IP\"".to_string()));
            subst.push((format!("\\\"{ip}\\\""), "\\\"CLUSTER-IP\\\"".to_string()));
        }
    }
    if obj["kind"] == "Service"
        && let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
        // Allocated node ports: which one is luck; that there is one is not.
        let ports = spec.get_mut("ports").and_then(Value::as_array_mut);
        for p in ports.into_iter().flatten().filter_map(Value::as_object_mut) {
            if let Some(n) = p.get_mut("nodePort") {
                *n = "NODE-PORT".into();
            }
        }
        if let Some(n) = spec.get_mut("healthCheckNodePort") {
            *n = "NODE-PORT".into();
        }
    }
    let mut text = obj.to_string();
    for (from, to) in &subst {
        text = text.replace(from.as_str(), to);
    }
    serde_json::from_str(&text).expect("still JSON")
}

/// A line diff of two values' pretty JSON, for failure messages.
pub fn json_diff(a: &Value, b: &Value) -> String {
    let a = serde_json::to_string_pretty(a).unwrap();
    let b = serde_json::to_string_pretty(b).unwrap();
    similar::TextDiff::from_lines(&a, &b)
        .unified_diff()
        .context_radius(4)
        .to_string()
}

/// `text` with what differs between two runs of one history masked:
/// RFC 3339 times (`TIME`), UUIDs (`UID`) and IPv4 addresses (`IP`), the
/// forms managedFields times, uids and cluster IPs take in kapply's plan.
pub fn mask_volatile(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if let Some(n) = time_at(&b[i..]) {
            out.push_str("TIME");
            i += n;
        } else if let Some(n) = uuid_at(&b[i..]) {
            out.push_str("UID");
            i += n;
        } else if let Some(n) = ipv4_at(&b[i..]) {
            out.push_str("IP");
            i += n;
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Bytes matching `shape` (`9` a digit, `x` a hex digit, else itself).
fn shaped(b: &[u8], shape: &str) -> bool {
    b.len() >= shape.len()
        && shape.bytes().zip(b).all(|(s, &c)| match s {
            b'9' => c.is_ascii_digit(),
            b'x' => c.is_ascii_hexdigit(),
            s => s == c,
        })
}

fn time_at(b: &[u8]) -> Option<usize> {
    shaped(b, "9999-99-99T99:99:99Z").then_some(20)
}

fn uuid_at(b: &[u8]) -> Option<usize> {
    shaped(b, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx").then_some(36)
}

fn ipv4_at(b: &[u8]) -> Option<usize> {
    // Only right after a quote: a whole JSON string of four numbers.
    let mut i = 0;
    for part in 0..4 {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() && i - start < 3 {
            i += 1;
        }
        if i == start {
            return None;
        }
        if part < 3 {
            if b.get(i) != Some(&b'.') {
                return None;
            }
            i += 1;
        }
    }
    matches!(b.get(i), Some(b'"' | b'\\')).then_some(i)
}
