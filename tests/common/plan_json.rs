//! The plan JSON contract (README, "Plan JSON"), shared by the tests of the
//! serializer (tests/plan.rs) and of `kapply plan` (tests/cli.rs).

/// The keys of every object of a plan, besides `error` on error objects.
pub const OBJECT_KEYS: [&str; 11] = [
    "apiVersion",
    "kind",
    "namespace",
    "name",
    "source",
    "action",
    "revertsDrift",
    "fields",
    "patch",
    "lastApplied",
    "warnings",
];

/// The keys of every field row (`owner`, `changedAt`, `hazards` and the
/// three sides only where they apply).
pub const FIELD_KEYS: [&str; 3] = ["path", "action", "cause"];

/// The values of a field row's `cause`.
pub const CAUSES: [&str; 7] = [
    "intended",
    "drift",
    "new",
    "removed",
    "server-default",
    "other-writer",
    "unmanaged",
];
