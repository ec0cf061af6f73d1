//! The plan JSON contract (README, "Plan JSON"), shared by the tests of the
//! serializer (tests/plan.rs) and of `kapply plan` (tests/cli.rs).

/// The keys of every object of a plan, besides `error` on error objects.
pub const OBJECT_KEYS: [&str; 10] = [
    "apiVersion",
    "kind",
    "namespace",
    "name",
    "source",
    "action",
    "fields",
    "patch",
    "lastApplied",
    "warnings",
];
