//! What kube-apiserver's Service storage does past defaulting (seen on
//! v1.34): it allocates cluster IPs and node ports after its field manager
//! recorded the request (so no manager owns them), keeps a Service's node
//! ports across an update that leaves them out, and drops those its new
//! type does not use.

use crate::fields::FieldPath;
use crate::store::State;
use kapply_core::defaults::Allocate;
use kapply_core::managedfields::key_element;
use serde_json::{Map, Value, json};

/// Hands out from the store what a write's defaulting asks for, and
/// remembers which node ports it gave (no manager owns them).
pub struct Allocator<'s> {
    st: &'s mut State,
    /// The managedFields paths of what was allocated here, and the node
    /// ports given.
    paths: Vec<FieldPath>,
    given: Vec<u16>,
}

impl<'s> Allocator<'s> {
    pub fn new(st: &'s mut State) -> Allocator<'s> {
        Allocator {
            st,
            paths: Vec::new(),
            given: Vec::new(),
        }
    }

    /// The managedFields paths of the node ports allocated here.
    pub fn disowned(self) -> Vec<FieldPath> {
        self.paths
    }
}

impl Allocate for Allocator<'_> {
    fn cluster_ip(&mut self) -> String {
        let mut ip = self.st.next_ip();
        while self.st.ip_in_use(&ip) {
            ip = self.st.next_ip();
        }
        ip
    }

    fn node_port(&mut self, port: &Map<String, Value>) -> Option<i64> {
        // A full range leaves the port without one (the real server
        // refuses the write; a known limit of this one).
        let n = self.st.next_node_port(&self.given)?;
        self.given.push(n);
        self.paths.push(port_path(port));
        Some(i64::from(n))
    }

    fn health_check_node_port(&mut self) -> Option<i64> {
        let n = self.st.next_node_port(&self.given)?;
        self.given.push(n);
        self.paths.push(health_check_path());
        Some(i64::from(n))
    }
}

fn needs_node_ports(spec: &Value) -> bool {
    match spec["type"].as_str() {
        Some("NodePort") => true,
        Some("LoadBalancer") => spec["allocateLoadBalancerNodePorts"] != json!(false),
        _ => false,
    }
}

fn needs_health_check(spec: &Value) -> bool {
    spec["type"] == "LoadBalancer" && spec["externalTrafficPolicy"] == "Local"
}

fn node_port(port: &Value) -> i64 {
    port["nodePort"].as_i64().unwrap_or(0)
}

/// An update of a Service `old` to `new`, before defaulting: node ports
/// the new spec leaves out are kept from the old port of the same name
/// (unless another port of the new spec holds it), as is the health check
/// node port (the storage's `patchAllocatedValues`). Returns the
/// managedFields paths of what was put back: the server does so past its
/// field manager, so no manager owns them.
pub fn keep_allocated(old: &Value, new: &mut Value) -> Vec<FieldPath> {
    let mut put_back = Vec::new();
    let (o, Some(n)) = (&old["spec"], new.get_mut("spec")) else {
        return put_back;
    };
    if needs_node_ports(o) && needs_node_ports(n) {
        let old_ports = o["ports"].as_array().map(Vec::as_slice).unwrap_or_default();
        let held: Vec<i64> = n["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .map(node_port)
            .collect();
        for p in n["ports"].as_array_mut().into_iter().flatten() {
            if node_port(p) != 0 {
                continue;
            }
            let same_name = old_ports.iter().find(|q| q["name"] == p["name"]);
            if let Some(v) = same_name
                .map(node_port)
                .filter(|v| *v != 0 && !held.contains(v))
                && let Some(m) = p.as_object_mut()
            {
                m.insert("nodePort".into(), json!(v));
                put_back.push(port_path(m));
            }
        }
    }
    if needs_health_check(o) && needs_health_check(n) && node_port_at(n, "healthCheckNodePort") == 0
    {
        if let Some(v) = o.get("healthCheckNodePort") {
            n["healthCheckNodePort"] = v.clone();
            put_back.push(health_check_path());
        }
    }
    put_back
}

fn node_port_at(spec: &Value, key: &str) -> i64 {
    spec[key].as_i64().unwrap_or(0)
}

/// An update of a Service `old` to `new`, before defaulting: what the new
/// type does not use is dropped where the update left it as it was (the
/// storage's `dropTypeDependentFields`): node ports (none net-new), the
/// health check node port, `allocateLoadBalancerNodePorts`,
/// `loadBalancerClass` and `externalTrafficPolicy`. Returns the
/// managedFields paths dropped: the server drops them past its field
/// manager, so their owners keep them (seen on v1.34).
pub fn drop_unused(old: &Value, new: &mut Value) -> Vec<FieldPath> {
    let mut dropped = Vec::new();
    let (o, Some(n)) = (&old["spec"], new.get_mut("spec")) else {
        return dropped;
    };
    let all = |s: &Value| -> std::collections::BTreeSet<i64> {
        let ports = s["ports"].as_array().into_iter().flatten().map(node_port);
        ports.filter(|n| *n != 0).collect()
    };
    if needs_node_ports(o) && !needs_node_ports(n) && all(o).is_superset(&all(n)) {
        for p in n["ports"]
            .as_array_mut()
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            if p.remove("nodePort").is_some() {
                dropped.push(port_path(p));
            }
        }
    }
    let load_balancer = |s: &Value| s["type"] == "LoadBalancer";
    let external = |s: &Value| matches!(s["type"].as_str(), Some("NodePort" | "LoadBalancer"));
    let same = |k: &str| o.get(k) == n.get(k);
    let drop = [
        (
            "healthCheckNodePort",
            needs_health_check(o) && !needs_health_check(n) && same("healthCheckNodePort"),
        ),
        (
            "allocateLoadBalancerNodePorts",
            load_balancer(o)
                && !load_balancer(n)
                && !n["allocateLoadBalancerNodePorts"].is_null()
                && same("allocateLoadBalancerNodePorts"),
        ),
        (
            "loadBalancerClass",
            load_balancer(o) && !load_balancer(n) && same("loadBalancerClass"),
        ),
        (
            "externalTrafficPolicy",
            external(o) && !external(n) && same("externalTrafficPolicy"),
        ),
    ];
    for (field, gone) in drop {
        if gone
            && let Some(m) = n.as_object_mut()
            && m.remove(field).is_some()
        {
            dropped.push(vec!["f:spec".to_string(), format!("f:{field}")]);
        }
    }
    dropped
}

/// The managedFields path of a Service port's node port (`port` holds the
/// list's keys).
fn port_path(port: &Map<String, Value>) -> FieldPath {
    let mut keys = Map::new();
    if let Some(p) = port.get("port") {
        keys.insert("port".into(), p.clone());
    }
    // Before defaulting (an update's ports) the protocol may be unset.
    let protocol = port.get("protocol").filter(|p| !p.is_null());
    keys.insert(
        "protocol".into(),
        protocol.cloned().unwrap_or_else(|| json!("TCP")),
    );
    ["f:spec", "f:ports", &key_element(keys), "f:nodePort"]
        .map(String::from)
        .to_vec()
}

fn health_check_path() -> FieldPath {
    vec!["f:spec".into(), "f:healthCheckNodePort".into()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_type_that_uses_no_node_ports_drops_them() {
        let old = json!({"spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": true,
            "externalTrafficPolicy": "Cluster",
            "ports": [{"name": "http", "port": 80, "nodePort": 30000, "protocol": "TCP"},
                      {"name": "metrics", "port": 9091, "nodePort": 30001, "protocol": "TCP"}]}});
        let mut new = old.clone();
        new["spec"]["type"] = json!("ClusterIP");
        drop_unused(&old, &mut new);
        assert_eq!(
            new["spec"]["ports"].to_string().find("nodePort"),
            None,
            "{new}"
        );
    }
}
