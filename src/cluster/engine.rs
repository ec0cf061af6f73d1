//! [`crate::ops::Engine`] over a [`Session`], for the TUI.

use super::applyset::ApplySet;
use super::{ApplyOptions, DeleteOptions, PruneOptions, Session};
use crate::inputs::Inputs;
use crate::ops::{ApplyItem, Engine, ObjectResult, Progress, Propagation};
use crate::plan::{ObjectPlan, Plan};
use futures::FutureExt;
use futures::future::BoxFuture;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::UnboundedSender;

/// The TUI's engine: a connected session, where the manifests are (files,
/// URLs or a kustomization, read again on every load), and how to prune. It
/// remembers the ApplySet of the last load for apply and prune.
pub struct KubeEngine {
    pub session: Arc<Session>,
    pub inputs: Inputs,
    pub prune: PruneOptions,
    applyset: Mutex<Option<ApplySet>>,
}

impl KubeEngine {
    /// An empty `load.default_namespace` takes the session's namespace.
    pub fn new(
        session: Arc<Session>,
        inputs: impl Into<Inputs>,
        prune: PruneOptions,
    ) -> KubeEngine {
        let mut inputs = inputs.into();
        if inputs.load.default_namespace.is_empty() {
            inputs.load.default_namespace = session.namespace().to_string();
        }
        KubeEngine {
            session,
            inputs,
            prune,
            applyset: Mutex::new(None),
        }
    }

    fn applyset(&self) -> Option<ApplySet> {
        self.applyset.lock().ok().and_then(|s| s.clone())
    }
}

impl Engine for KubeEngine {
    fn load(&self, progress: UnboundedSender<Progress>) -> BoxFuture<'_, Result<Plan, String>> {
        async move {
            let loaded = crate::inputs::load(&self.inputs)
                .await
                .map_err(|e| format!("{e:#}"))?;
            let planned = self
                .session
                .plan(&loaded, &self.prune, Some(progress))
                .await
                .map_err(|e| e.to_string())?;
            if let Ok(mut s) = self.applyset.lock() {
                *s = planned.applyset;
            }
            Ok(planned.plan)
        }
        .boxed()
    }

    fn dry_run(&self, items: Vec<ApplyItem>) -> BoxFuture<'_, Vec<ObjectResult>> {
        async move {
            let opts = ApplyOptions {
                dry_run: true,
                applyset: self.applyset(),
            };
            self.session.apply(items, &opts).await
        }
        .boxed()
    }

    fn apply(&self, items: Vec<ApplyItem>) -> BoxFuture<'_, Vec<ObjectResult>> {
        async move {
            let opts = ApplyOptions {
                dry_run: false,
                applyset: self.applyset(),
            };
            self.session.apply(items, &opts).await
        }
        .boxed()
    }

    fn delete(
        &self,
        objects: Vec<ObjectPlan>,
        propagation: Propagation,
    ) -> BoxFuture<'_, Vec<ObjectResult>> {
        async move {
            let opts = DeleteOptions {
                propagation,
                dry_run: false,
            };
            self.session.delete(&objects, &opts).await
        }
        .boxed()
    }

    fn prune(&self, objects: Vec<ObjectPlan>) -> BoxFuture<'_, Vec<ObjectResult>> {
        async move {
            let set = self.applyset();
            self.session.prune(&objects, set.as_ref(), false).await
        }
        .boxed()
    }
}
