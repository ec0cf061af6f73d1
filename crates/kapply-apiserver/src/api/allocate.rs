//! What kube-apiserver's Service storage allocates past its field manager
//! (seen on v1.34): cluster IPs and node ports no manager owns. What it
//! keeps and drops on an update is the core's (`defaults::service_*`),
//! which kapply's plan reads too; here it becomes managedFields paths.

use crate::fields::ManagedPath;
use crate::store::State;
use kapply_core::defaults::{Allocate, ServiceField};
use kapply_core::managedfields::key_element;
use serde_json::{Map, Value, json};

/// Hands out from the store what a write's defaulting asks for, and
/// remembers which node ports it gave (no manager owns them).
pub struct Allocator<'s> {
    st: &'s mut State,
    /// The managedFields paths of what was allocated here, and the node
    /// ports given.
    paths: Vec<ManagedPath>,
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
    pub fn disowned(self) -> Vec<ManagedPath> {
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
        self.paths.push(field_path(&ServiceField::NodePort {
            port: port.get("port").cloned().unwrap_or(Value::Null),
            protocol: port
                .get("protocol")
                .cloned()
                .unwrap_or_else(|| json!("TCP")),
        }));
        Some(i64::from(n))
    }

    fn health_check_node_port(&mut self) -> Option<i64> {
        let n = self.st.next_node_port(&self.given)?;
        self.given.push(n);
        self.paths
            .push(field_path(&ServiceField::Spec("healthCheckNodePort")));
        Some(i64::from(n))
    }
}

/// The managedFields path of a field the storage set or dropped.
pub fn field_path(f: &ServiceField) -> ManagedPath {
    match f {
        ServiceField::NodePort { port, protocol } => {
            let mut keys = Map::new();
            keys.insert("port".into(), port.clone());
            keys.insert("protocol".into(), protocol.clone());
            ["f:spec", "f:ports", &key_element(keys), "f:nodePort"]
                .map(String::from)
                .to_vec()
        }
        ServiceField::Spec(field) => vec!["f:spec".into(), format!("f:{field}")],
    }
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
        kapply_core::defaults::service_drops_unused(&old, &mut new);
        assert_eq!(
            new["spec"]["ports"].to_string().find("nodePort"),
            None,
            "{new}"
        );
    }
}
