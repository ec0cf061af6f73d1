//! What the cluster layer uses from the manifest and merge/plan work, in one place.

pub use crate::manifest::{Loaded, Manifest, ManifestError};
pub use crate::merge::{creation_body, three_way};
pub use crate::plan::{
    PlanOptions, error_object, partial_config, partial_from_plan, plan_object_owned, prune_block,
    prune_candidate, release_from_last_applied, release_refusal,
};
