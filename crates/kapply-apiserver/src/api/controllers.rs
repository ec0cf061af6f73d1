//! What controllers would do: status as if they had run.

use crate::resources::ResourceInfo;
use crate::store;
use serde_json::{Value, json};

/// Controllers do not run; workloads report their desired state as reached,
/// CRDs as established.
pub(super) fn simulate_status(r: &ResourceInfo, o: &mut Value) {
    let generation = o["metadata"]["generation"].clone();
    let now = store::now();
    // A condition as a controller would set it; its times stay put while
    // it holds, so a no-op write changes nothing.
    let previous = o["status"]["conditions"].clone();
    let condition = |ty: &str, reason: &str, message: String, times: &[&str]| {
        let old = previous
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == ty && c["status"] == "True");
        let mut c = json!({"type": ty, "status": "True", "reason": reason, "message": message});
        for t in times {
            c[*t] = old.map(|o| o[*t].clone()).unwrap_or_else(|| json!(now));
        }
        c
    };
    match (r.group.as_str(), r.kind.as_str()) {
        ("batch", "Job") => {
            let n = o["spec"]["completions"].as_i64().unwrap_or(1);
            let start = o["status"]["startTime"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| now.clone());
            let times = ["lastProbeTime", "lastTransitionTime"];
            o["status"] = json!({
                "startTime": start,
                "completionTime": o["status"]["completionTime"].as_str().unwrap_or(&start),
                "succeeded": n,
                "ready": 0,
                "terminating": 0,
                "uncountedTerminatedPods": {},
                "conditions": [
                    condition("SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods".into(), &times),
                    condition("Complete", "CompletionsReached", "Reached expected number of succeeded pods".into(), &times),
                ],
            });
        }
        ("", "Pod") => {
            let times = ["lastProbeTime", "lastTransitionTime"];
            let statuses: Vec<Value> = o["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    json!({"name": c["name"], "image": c["image"], "ready": true,
                    "started": true, "restartCount": 0,
                    "state": {"running": {"startedAt": o["metadata"]["creationTimestamp"]}}})
                })
                .collect();
            let mut conditions = Vec::new();
            for ty in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
                let mut c = condition(ty, "", String::new(), &times);
                if let Some(m) = c.as_object_mut() {
                    m.remove("reason");
                    m.remove("message");
                    m.insert("lastProbeTime".into(), Value::Null);
                }
                conditions.push(c);
            }
            o["status"] = json!({
                "phase": "Running",
                "conditions": conditions,
                "containerStatuses": statuses,
                "hostIP": "10.0.0.1",
                "podIP": "10.244.0.10",
                "qosClass": "BestEffort",
                "startTime": o["metadata"]["creationTimestamp"],
            });
        }
        ("apps", "Deployment" | "StatefulSet" | "ReplicaSet") => {
            let n = o["spec"]["replicas"].as_i64().unwrap_or(1);
            let mut s = json!({"observedGeneration": generation, "replicas": n,
                "readyReplicas": n, "availableReplicas": n});
            match r.kind.as_str() {
                "Deployment" => {
                    s["updatedReplicas"] = json!(n);
                    let name = o["metadata"]["name"].as_str().unwrap_or_default();
                    let times = ["lastUpdateTime", "lastTransitionTime"];
                    s["conditions"] = json!([
                        condition(
                            "Available",
                            "MinimumReplicasAvailable",
                            "Deployment has minimum availability.".into(),
                            &times
                        ),
                        condition(
                            "Progressing",
                            "NewReplicaSetAvailable",
                            format!("ReplicaSet \"{name}\" has successfully progressed."),
                            &times
                        ),
                    ]);
                }
                "StatefulSet" => {
                    s["currentReplicas"] = json!(n);
                    s["updatedReplicas"] = json!(n);
                }
                _ => s["fullyLabeledReplicas"] = json!(n),
            }
            if n == 0 {
                // Zero counts are omitted by the real server.
                if let Some(m) = s.as_object_mut() {
                    m.retain(|k, _| {
                        k == "observedGeneration" || k == "replicas" || k == "conditions"
                    });
                }
            }
            o["status"] = s;
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            let storage: Vec<Value> = o["spec"]["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|v| v["storage"] == true)
                .map(|v| v["name"].clone())
                .collect();
            o["status"] = json!({
                "acceptedNames": o["spec"]["names"].clone(),
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                     "message": "no conflicts found"},
                    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                     "message": "the initial names have been accepted"},
                ],
                "storedVersions": storage,
            });
        }
        _ => {}
    }
}
