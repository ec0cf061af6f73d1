//! Recreate (`F`): an update the server refuses as invalid (422, an
//! immutable field such as a Deployment's selector) has no way forward but
//! deleting the object and creating it again, as `kubectl apply --force`
//! does. Offered where the refusal shows (the apply confirmation, the
//! status line), with its own confirmation naming what is deleted.

use super::*;

impl App {
    /// Remember the objects the server refused as invalid (and forget
    /// those it accepted since).
    pub(super) fn note_refusals(&mut self, results: &[ObjectResult]) {
        for r in results {
            match &r.outcome {
                Outcome::Failed(Failure::Invalid(why)) => {
                    self.refused.insert(r.object.clone(), why.clone());
                }
                _ if r.ok() => {
                    self.refused.remove(&r.object);
                }
                _ => {}
            }
        }
    }

    /// Whether `F` has something to recreate for the selected object (the
    /// footer offers it then).
    pub fn recreate_offered(&self) -> bool {
        self.selected_index()
            .is_some_and(|i| !self.recreatable(&[i]).is_empty())
    }

    /// Of these rows, the updates the server refused as invalid, each as
    /// its whole configuration (a recreate creates from the manifest: no
    /// partial apply, nothing released).
    fn recreatable(&self, rows: &[usize]) -> Vec<ApplyItem> {
        rows.iter()
            .filter(|&&i| {
                let o = &self.list.plan.objects[i];
                o.action == ObjectAction::Update && self.refused.contains_key(&o.id())
            })
            .filter_map(|&i| self.object_owned(i))
            .map(|plan| ApplyItem {
                plan,
                accepted_fields: None,
                released_fields: Vec::new(),
            })
            .collect()
    }

    /// The status line after a dry run that refused updates as invalid:
    /// the way forward.
    pub(super) fn offer_recreate(&mut self) {
        let Some(Popup::Confirm(c)) = &self.popup else {
            return;
        };
        let (Confirmed::Apply(items), Some(_)) = (&c.action, c.results()) else {
            return;
        };
        let refused: Vec<String> = items
            .iter()
            .map(|i| i.plan.id())
            .filter(|id| self.refused.contains_key(id))
            .map(|id| id.to_string())
            .collect();
        if let Some(first) = refused.first() {
            let who = if refused.len() == 1 {
                first.clone()
            } else {
                format!("{} objects", refused.len())
            };
            self.say(format!("F recreates {who} (refused as invalid)"), true);
        }
    }

    /// `F` outside dialogs: the marked objects (or the selected one) the
    /// server refused as invalid.
    pub(super) fn open_recreate(&mut self) {
        let items = self.recreatable(&self.targets());
        if items.is_empty() {
            let why = if self.refused.is_empty() {
                "F recreates an update the server refused as invalid (an immutable field); \
                 a asks the server first"
                    .to_string()
            } else {
                let names: Vec<String> = self.refused.keys().map(ToString::to_string).collect();
                format!(
                    "F: nothing selected was refused; refused: {}",
                    names.join(", ")
                )
            };
            self.say(why, false);
            return;
        }
        let c = self.recreate_confirm(items);
        self.open_popup(Popup::Confirm(c));
    }

    /// `F` in the apply confirmation: its objects the dry run refused as
    /// invalid.
    pub(super) fn recreate_from_apply(&mut self, items: &[ApplyItem]) -> bool {
        let rows: Vec<usize> = items
            .iter()
            .filter_map(|it| {
                let id = it.plan.id();
                self.list.plan.objects.iter().position(|o| o.id() == id)
            })
            .collect();
        let items = self.recreatable(&rows);
        if items.is_empty() {
            return false;
        }
        self.finish(Job::DryRun);
        let c = self.recreate_confirm(items);
        self.open_popup(Popup::Confirm(c));
        true
    }
}
