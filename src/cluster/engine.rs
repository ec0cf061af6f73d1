//! [`crate::ops::Engine`] over a [`Session`], for the TUI.

use super::applyset::ApplySet;
use super::{ApplyOptions, DeleteOptions, PruneOptions, Session, Target};
use crate::inputs::Inputs;
use crate::ops::{ApplyItem, Engine, ObjectResult, Progress, Propagation, Server};
use crate::plan::{ObjectPlan, Plan};
use futures::FutureExt;
use futures::future::BoxFuture;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::UnboundedSender;

/// The TUI's engine: a session (connected at once, or later by
/// [`Engine::connect`] from a resolved [`Target`]), where the manifests are
/// (files, URLs or a kustomization, read again on every load), and how to
/// prune. It remembers the ApplySet of the last load for apply and prune.
pub struct KubeEngine {
    /// Where to connect, for an engine made before connecting.
    target: Option<Target>,
    session: Mutex<Option<Arc<Session>>>,
    pub inputs: Inputs,
    pub prune: PruneOptions,
    applyset: Mutex<Option<ApplySet>>,
}

/// Why a write was not sent: no session (the TUI offers no write then).
const NOT_CONNECTED: &str = "not connected to the cluster: nothing was sent";

impl KubeEngine {
    /// An engine over a connected session. An empty
    /// `load.default_namespace` takes the session's namespace.
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
            target: None,
            session: Mutex::new(Some(session)),
            inputs,
            prune,
            applyset: Mutex::new(None),
        }
    }

    /// An engine that connects to `target` when [`Engine::connect`] is
    /// called (no request is sent before). An empty
    /// `load.default_namespace` takes the target's namespace.
    pub fn connecting(
        target: Target,
        inputs: impl Into<Inputs>,
        prune: PruneOptions,
    ) -> KubeEngine {
        let mut inputs = inputs.into();
        if inputs.load.default_namespace.is_empty() {
            inputs.load.default_namespace = target.namespace.clone();
        }
        KubeEngine {
            target: Some(target),
            session: Mutex::new(None),
            inputs,
            prune,
            applyset: Mutex::new(None),
        }
    }

    /// The session, once connected.
    pub fn session(&self) -> Option<Arc<Session>> {
        self.session.lock().ok().and_then(|s| s.clone())
    }

    fn applyset(&self) -> Option<ApplySet> {
        self.applyset.lock().ok().and_then(|s| s.clone())
    }
}

/// Every item reported not sent (no session).
fn not_sent(names: impl Iterator<Item = String>) -> Vec<ObjectResult> {
    names
        .map(|n| ObjectResult::failed(n, NOT_CONNECTED))
        .collect()
}

impl Engine for KubeEngine {
    fn server(&self) -> Option<Server> {
        let (url, context) = match (&self.target, self.session()) {
            (Some(t), _) => (t.url.clone(), t.context.clone()),
            (None, Some(s)) => (s.url().to_string(), s.context().to_string()),
            (None, None) => return None,
        };
        Some(Server { url, context })
    }

    fn connect(&self) -> BoxFuture<'_, Result<(), String>> {
        async move {
            // Made connected: nothing to do. Otherwise a fresh session each
            // time (a retry must not reuse what failed: discovery, credentials).
            let Some(target) = &self.target else {
                return Ok(());
            };
            let session = Session::open(target).await.map_err(|e| e.to_string())?;
            if let Ok(mut s) = self.session.lock() {
                *s = Some(session);
            }
            Ok(())
        }
        .boxed()
    }

    fn manifests(&self) -> BoxFuture<'_, Result<Plan, String>> {
        async move {
            let loaded = crate::inputs::load(&self.inputs)
                .await
                .map_err(|e| format!("{e:#}"))?;
            Ok(super::live::unplanned(&loaded))
        }
        .boxed()
    }

    fn load(&self, progress: UnboundedSender<Progress>) -> BoxFuture<'_, Result<Plan, String>> {
        async move {
            let session = self.session().ok_or_else(|| NOT_CONNECTED.to_string())?;
            let loaded = crate::inputs::load(&self.inputs)
                .await
                .map_err(|e| format!("{e:#}"))?;
            // The load is handed over (no copy); live objects move into the plan.
            let mut objects = Vec::new();
            let mut planned = session
                .plan_each(loaded, &self.prune, Some(progress), true, |o| {
                    objects.push(o)
                })
                .await
                .map_err(|e| e.to_string())?;
            if let Ok(mut s) = self.applyset.lock() {
                *s = planned.applyset;
            }
            planned.plan.objects = objects;
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
            match self.session() {
                Some(session) => session.apply(items, &opts).await,
                None => not_sent(items.iter().map(|i| i.plan.display_name())),
            }
        }
        .boxed()
    }

    fn apply(&self, items: Vec<ApplyItem>) -> BoxFuture<'_, Vec<ObjectResult>> {
        async move {
            let opts = ApplyOptions {
                dry_run: false,
                applyset: self.applyset(),
            };
            match self.session() {
                Some(session) => session.apply(items, &opts).await,
                None => not_sent(items.iter().map(|i| i.plan.display_name())),
            }
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
            match self.session() {
                Some(session) => session.delete(&objects, &opts).await,
                None => not_sent(objects.iter().map(ObjectPlan::display_name)),
            }
        }
        .boxed()
    }

    fn prune(&self, objects: Vec<ObjectPlan>) -> BoxFuture<'_, Vec<ObjectResult>> {
        async move {
            let set = self.applyset();
            match self.session() {
                Some(session) => session.prune(&objects, set.as_ref(), false).await,
                None => not_sent(objects.iter().map(ObjectPlan::display_name)),
            }
        }
        .boxed()
    }
}
