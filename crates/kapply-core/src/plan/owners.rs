//! Field owners from managedFields, and the kept fields' other writers
//! named in their reasons.

use crate::merge::{self, Cause, FieldAction, FieldChange, Reason};
use serde_json::Value;
use std::collections::BTreeMap;

/// Which manager owns which field, from `metadata.managedFields`
/// (fieldsV1): path -> manager (several managers joined by ", ").
/// [`merge::FieldOwners`] is the lookup the plan uses (nearest owned
/// ancestor, write times).
pub fn field_owners(live: &Value) -> BTreeMap<String, String> {
    merge::FieldOwners::from_live(live)
        .exact()
        .into_iter()
        .map(|(p, ms)| (p, ms.join(", ")))
        .collect()
}

/// Mark each kept field another writer owns (its reason names the row's
/// owner; the core decided the cause from managedFields).
pub(super) fn name_kept_writers(fields: &mut [FieldChange]) {
    for f in fields.iter_mut() {
        match (f.action, f.cause, f.owner.as_deref()) {
            // Without managedFields the core does not know when it was
            // written, and one the server set owns no writer: their
            // reasons say so.
            (FieldAction::Keep, Cause::ServerDefault, _)
                if !matches!(f.reason, Reason::DefaultValue | Reason::ServerSet) =>
            {
                f.reason = Reason::ServerDefault;
            }
            (FieldAction::Keep, Cause::OtherWriter, Some(_)) => {
                f.reason = Reason::OtherWriter;
            }
            _ => {}
        }
    }
}
