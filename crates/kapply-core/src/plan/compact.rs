//! A plan row kept small: at 10,000 objects the field rows, the config and
//! the live object of every row are most of the memory, yet a screen shows
//! one object's at a time. [`split`] keeps what a list needs (identity,
//! action, warnings, error) and the config and live object as compact JSON
//! bytes; [`Compact::rebuild`] makes the whole row again, planning the object
//! once more where its field rows came from planning. Planning is a pure
//! function of the config and the live object, so the rebuilt row is the
//! row that was split.

use super::{ObjectPlan, PlanOptions, plan_object_owned};
use crate::manifest::{Manifest, Packed, Source};
use serde_json::Value;

/// The config and live object of one row, as compact JSON, and how the rest
/// of the row is made again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Compact {
    /// The field rows, patch and last-applied came from planning the config
    /// against the live object (or its absence): plan again. Otherwise (an
    /// error row, a prune candidate) the row is whole without them.
    replan: bool,
    config: Option<Packed>,
    live: Option<Packed>,
}

// As a manifest keeps its object: compact JSON, or the value itself where
// it is nested deeper than serde_json reads back (never lost on the way).
fn bytes(v: Option<Value>) -> Option<Packed> {
    v.map(Packed::new)
}

fn value(b: &Option<Packed>) -> Option<Value> {
    b.as_ref().map(Packed::value)
}

/// The row without its field rows, patch, last-applied, config and live
/// object, and those in compact form.
pub fn split(mut plan: ObjectPlan) -> (ObjectPlan, Compact) {
    let replan = !plan.fields.is_empty() || plan.patch.is_some() || plan.last_applied.is_some();
    plan.fields = Vec::new();
    plan.patch = None;
    plan.last_applied = None;
    let compact = Compact {
        replan,
        config: bytes(plan.config.take()),
        live: bytes(plan.live.take()),
    };
    (plan, compact)
}

impl Compact {
    /// Bytes held (for the memory it costs).
    pub fn len(&self) -> usize {
        self.config.as_ref().map_or(0, |b| b.len()) + self.live.as_ref().map_or(0, |b| b.len())
    }

    /// Whether it holds nothing (no config, no live object).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The config it holds, whole (`None`: an error row, a prune candidate).
    pub fn config(&self) -> Option<Value> {
        value(&self.config)
    }

    /// The live object it holds, whole (`None`: not in the cluster).
    pub fn live(&self) -> Option<Value> {
        value(&self.live)
    }

    /// The same config against another live object (the object changed
    /// in the cluster; `None`: it was deleted): [`Compact::rebuild`] then
    /// plans the row again, whatever it held before.
    pub fn with_live(&self, live: Option<Value>) -> Compact {
        Compact {
            replan: self.config.is_some(),
            config: self.config.clone(),
            live: bytes(live),
        }
    }

    /// The whole row of `lean` (what [`split`] gave).
    pub fn rebuild(&self, lean: &ObjectPlan) -> ObjectPlan {
        let config = value(&self.config);
        let live = value(&self.live);
        if self.replan
            && let Some(object) = config.clone()
        {
            let (group, version) = crate::objref::split_api_version(&lean.api_version);
            let source = lean.source.as_deref().unwrap_or_default();
            let (file, line) = source.rsplit_once(':').unwrap_or((source, "0"));
            let m = Manifest::new(
                crate::objref::ObjectRef {
                    group: group.to_string(),
                    kind: lean.kind.clone(),
                    namespace: lean.namespace.clone(),
                    name: lean.name.clone(),
                },
                version.to_string(),
                object,
                Source {
                    file: file.into(),
                    line: line.parse().unwrap_or(0),
                },
            );
            let mut plan = plan_object_owned(&m, live, &PlanOptions::default());
            // What planning does not make (set by the cluster layer).
            plan.source = lean.source.clone();
            plan.kind_not_served = lean.kind_not_served;
            plan.prune_reason = lean.prune_reason.clone();
            return plan;
        }
        let mut plan = lean.clone();
        plan.config = config;
        plan.live = live;
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{LoadOptions, parse_str};
    use serde_json::json;

    fn manifest(yaml: &str) -> Manifest {
        let loaded = parse_str(
            yaml,
            std::path::Path::new("m/app.yaml"),
            &LoadOptions::default(),
        );
        loaded.manifests.into_iter().next().unwrap()
    }

    #[test]
    fn rows_rebuild_as_planned() {
        let m = manifest(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: a\n\
             spec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      \
             - name: web\n        image: nginx:1.2\n",
        );
        let mut live = m.object();
        live["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.1");
        live["metadata"]["annotations"] = json!({
            crate::merge::LAST_APPLIED: serde_json::to_string(&live).unwrap()
        });
        live["metadata"]["uid"] = json!("u-1");
        let opts = PlanOptions::default();
        for plan in [
            plan_object_owned(&m, Some(live.clone()), &opts),
            plan_object_owned(&m, None, &opts),
            super::super::prune_candidate(&live, "gone".into()),
            super::super::error_object("v1", "X", None, "x", Some("f:1".into()), "bad".into()),
        ] {
            let (lean, compact) = split(plan.clone());
            assert!(lean.fields.is_empty() && lean.config.is_none() && lean.live.is_none());
            assert_eq!(compact.rebuild(&lean), plan);
        }
        let (lean, compact) = split(plan_object_owned(&m, Some(live), &opts));
        assert_eq!(lean.action, crate::plan::ObjectAction::Update);
        assert!(!compact.is_empty());
    }

    #[test]
    fn a_deeply_nested_object_comes_back_whole() {
        // Deeper than serde_json reads back from text (128 levels).
        let mut deep = json!("leaf");
        for _ in 0..200 {
            deep = json!({ "x": deep });
        }
        let mut plan = super::super::prune_candidate(
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "deep", "namespace": "a"}}),
            "gone".into(),
        );
        plan.live = Some(json!({"kind": "ConfigMap", "data": deep}));
        let (lean, compact) = split(plan.clone());
        assert!(lean.live.is_none() && !compact.is_empty());
        assert_eq!(compact.rebuild(&lean), plan);
    }
}
