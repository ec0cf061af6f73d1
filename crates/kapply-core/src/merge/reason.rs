//! Why a field row is what it is, as a type. Its text (the plan JSON's
//! `reason`, the diff's and the TUI's words) comes from `Display` alone;
//! code decides on the variants, never on the words.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// Every field of an object created by this apply.
    NewObject,
    /// Only the last-applied annotation changes.
    AnnotationOnly,
    /// The live object has no last-applied annotation: apply adds it.
    AddsAnnotation,
    /// A map or list in config, absent from live: created without its nulls.
    NewWithoutNulls,
    NotInLive,
    /// A keyed list element in config, absent from live.
    NewElement,
    /// `$retainKeys` makes the server drop a field the config leaves out.
    RetainKeysDrops,
    /// Only the element order of a keyed list changes
    /// (`$setElementOrder`).
    ElementOrder,
    /// Several config elements share one merge key: the server keeps one.
    SharedMergeKey {
        count: usize,
        key: String,
        value: String,
    },
    /// In last-applied, gone from the config: deleted.
    Removed,
    /// A keyed list element removed from the config: `$patch: delete`.
    RemovedElement,
    /// A set-like (merge) list: values added and removed, others kept.
    MergeList,
    /// Live only, owned by another writer (before owners are known).
    LiveOnly,
    LiveOnlyElement,
    /// Live only, defaulted by the server when apply wrote the object.
    ServerDefault,
    /// Live only, the value the server gives the field when unset; the live
    /// object carries no managedFields, so when it was written is unknown.
    DefaultValue,
    /// Live only, not a value the server defaults; the live object carries
    /// no managedFields, so its writer is unknown.
    UnknownWriter,
    /// Live only, owned by no writer in managedFields and the value the
    /// server gives the field when unset: the server set it as it stored
    /// the object (an allocated cluster IP, a Namespace's finalizer),
    /// after it recorded the writers' fields.
    ServerSet,
    /// Live only, written by another manager: the row's `owner` (worded
    /// with it by `FieldChange::explain`; not repeated here).
    OtherWriter,
    /// Live only, written by apply's manager alone and not a value the
    /// server defaults: apply let it go (released), another writer's from
    /// now on.
    Released,
    ExplicitNull,
    /// An explicit null already in last-applied: not sent again.
    NullNotResent,
    /// An explicit null with nothing to clear in live.
    NullNothingToClear,
    Differs,
    /// Differs, in an atomic list (replaced whole).
    DiffersListReplaced,
    /// Words read from a plan file that name none of the above (an edited
    /// or older file): kept as written.
    Other(String),
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Reason::NewObject => "new object: created with this value",
            Reason::AnnotationOnly => "only the recorded last-applied configuration changes",
            Reason::AddsAnnotation => {
                "adds the last-applied annotation (kubectl apply on an unannotated object)"
            }
            Reason::NewWithoutNulls => "in config, not in live: created, its null fields left out",
            Reason::NotInLive => "in config, not in live",
            Reason::NewElement => "new element: in config, not in live",
            Reason::RetainKeysDrops => "not in config: $retainKeys makes the server drop it",
            Reason::ElementOrder => {
                "element order: kubectl re-sends the config's order ($setElementOrder), live \
                 elements the config does not name keep their place"
            }
            Reason::SharedMergeKey { count, key, value } => {
                return write!(
                    f,
                    "{count} config elements share the merge key {key}={value}"
                );
            }
            Reason::Removed => "in last-applied, removed from config",
            Reason::RemovedElement => {
                "in last-applied, removed from config: deleted with $patch: delete"
            }
            Reason::MergeList => {
                "merge list: config values added, values removed from config deleted, others kept"
            }
            Reason::LiveOnly => {
                "live only: owned by another writer (not in config or last-applied)"
            }
            Reason::LiveOnlyElement => {
                "live only: element owned by another writer (not in config or last-applied)"
            }
            Reason::ServerDefault => {
                "live only: defaulted by the server when apply wrote the object (not in config \
                 or last-applied)"
            }
            Reason::DefaultValue => {
                "live only: the value the server gives this field when unset (not in config or \
                 last-applied)"
            }
            Reason::UnknownWriter => {
                return write!(
                    f,
                    "live only: {NO_MANAGED_FIELDS} (not in config or last-applied; {SHOW_OWNERS})"
                );
            }
            Reason::ServerSet => {
                "live only: set by the server as it stored the object, owned by no writer (not \
                 in config or last-applied)"
            }
            Reason::Released => {
                "live only: released by apply (not in config or last-applied, not a server \
                 default): another writer's from now on"
            }
            // Without the row's owner (see `FieldChange::explain`).
            Reason::OtherWriter => {
                "live only: owned by another writer (not in config or last-applied)"
            }
            Reason::ExplicitNull => "explicit null in config",
            Reason::NullNotResent => {
                "explicit null in config, already in last-applied: the merge patch does not send \
                 it again"
            }
            Reason::NullNothingToClear => {
                "explicit null in config: nothing to clear in live, but kubectl sends it on every \
                 apply"
            }
            Reason::Differs => "config differs from live",
            Reason::DiffersListReplaced => "config differs from live: the list is replaced whole",
            Reason::Other(s) => s,
        };
        f.write_str(s)
    }
}

/// The reason of a field `owner` wrote: [`Reason::OtherWriter`] with the
/// row's owner.
pub(super) fn other_writer(owner: &str) -> String {
    format!("live only: owned by another writer, {owner} (not in config or last-applied)")
}

/// Why a kept field's writer is unknown (a `--live` file from `kubectl get
/// -o json`, which hides managedFields), and where to look.
pub const NO_MANAGED_FIELDS: &str = "writer unknown, the live object carries no managedFields";
pub const SHOW_OWNERS: &str = "`kubectl get --show-managed-fields -o json` shows the owners";

/// Every reason without parameters, to read text back.
const FIXED: [Reason; 23] = [
    Reason::NewObject,
    Reason::AnnotationOnly,
    Reason::AddsAnnotation,
    Reason::NewWithoutNulls,
    Reason::NotInLive,
    Reason::NewElement,
    Reason::RetainKeysDrops,
    Reason::ElementOrder,
    Reason::Removed,
    Reason::RemovedElement,
    Reason::MergeList,
    Reason::LiveOnly,
    Reason::LiveOnlyElement,
    Reason::ServerDefault,
    Reason::DefaultValue,
    Reason::UnknownWriter,
    Reason::ServerSet,
    Reason::Released,
    Reason::ExplicitNull,
    Reason::NullNotResent,
    Reason::NullNothingToClear,
    Reason::Differs,
    Reason::DiffersListReplaced,
];

impl From<&str> for Reason {
    /// The reason a plan JSON's `reason` text stands for (the inverse of
    /// `Display`); text that is none of them stays [`Reason::Other`].
    fn from(text: &str) -> Reason {
        if let Some(r) = FIXED.iter().find(|r| r.to_string() == text) {
            return r.clone();
        }
        // The owner is the row's own `owner` (see `FieldChange::explain`).
        if text
            .strip_prefix("live only: owned by another writer, ")
            .and_then(|t| t.strip_suffix(" (not in config or last-applied)"))
            .is_some()
        {
            return Reason::OtherWriter;
        }
        if let Some((count, rest)) = text.split_once(" config elements share the merge key ")
            && let (Ok(count), Some((key, value))) = (count.parse(), rest.split_once('='))
        {
            return Reason::SharedMergeKey {
                count,
                key: key.to_string(),
                value: value.to_string(),
            };
        }
        Reason::Other(text.to_string())
    }
}

impl Serialize for Reason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Reason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Reason, D::Error> {
        let text = String::deserialize(d)?;
        Ok(Reason::from(text.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_reads_back_as_the_same_reason() {
        let all = FIXED.iter().cloned().chain([
            Reason::SharedMergeKey {
                count: 2,
                key: "name".into(),
                value: "a".into(),
            },
            Reason::Other("edited by hand".into()),
        ]);
        for r in all {
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(serde_json::from_str::<Reason>(&json).unwrap(), r, "{json}");
        }
        // Another writer's reason names the owner only with its row.
        let text = serde_json::to_string(&other_writer("kubectl-edit")).unwrap();
        assert_eq!(
            serde_json::from_str::<Reason>(&text).unwrap(),
            Reason::OtherWriter
        );
        assert_eq!(
            Reason::ElementOrder.to_string(),
            "element order: kubectl re-sends the config's order ($setElementOrder), live \
             elements the config does not name keep their place"
        );
    }
}
