//! Words of the Kubernetes API that several layers spell: the strategic
//! merge patch directives (written by the client's three-way merge, read by
//! patch application and the hazards) and the deletion propagation
//! policies (chosen in the CLI and the TUI, sent by the cluster layer).
//! Defined once so the writer and the readers cannot drift apart. No I/O.

use serde::{Deserialize, Serialize};

/// `$patch: delete | replace | merge` on a map or list element.
pub const PATCH: &str = "$patch";
/// The fields of a map the patch keeps (others are cleared).
pub const RETAIN_KEYS: &str = "$retainKeys";
/// `$setElementOrder/<list>`: the order of a merged list.
pub const SET_ELEMENT_ORDER: &str = "$setElementOrder";
/// `$deleteFromPrimitiveList/<list>`: values removed from a set of scalars.
pub const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";

/// The patch key of a list directive: `$setElementOrder/containers` for
/// ([`SET_ELEMENT_ORDER`], `containers`).
pub fn list_directive(directive: &str, list: &str) -> String {
    format!("{directive}/{list}")
}

/// The list a list directive key names: `containers` for
/// `$setElementOrder/containers`; `None` for any other key.
pub fn directive_list<'k>(key: &'k str, directive: &str) -> Option<&'k str> {
    key.strip_prefix(directive)?.strip_prefix('/')
}

/// Deletion propagation (`propagationPolicy`, kubectl's `--cascade`):
/// what happens to the objects the deleted one owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

impl Propagation {
    /// The `propagationPolicy` value of DeleteOptions.
    pub fn policy(self) -> &'static str {
        match self {
            Propagation::Background => "Background",
            Propagation::Foreground => "Foreground",
            Propagation::Orphan => "Orphan",
        }
    }

    /// The next policy, in the order the delete dialog cycles through.
    pub fn next(self) -> Propagation {
        match self {
            Propagation::Background => Propagation::Foreground,
            Propagation::Foreground => Propagation::Orphan,
            Propagation::Orphan => Propagation::Background,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_directives_round_trip() {
        let key = list_directive(SET_ELEMENT_ORDER, "containers");
        assert_eq!(key, "$setElementOrder/containers");
        assert_eq!(directive_list(&key, SET_ELEMENT_ORDER), Some("containers"));
        assert_eq!(directive_list(&key, DELETE_FROM_PRIMITIVE_LIST), None);
        // The bare name, or another word sharing its start, names no list.
        assert_eq!(directive_list(SET_ELEMENT_ORDER, SET_ELEMENT_ORDER), None);
        assert_eq!(
            directive_list("$setElementOrderX/a", SET_ELEMENT_ORDER),
            None
        );
        assert_eq!(
            directive_list(
                "$deleteFromPrimitiveList/finalizers",
                DELETE_FROM_PRIMITIVE_LIST
            ),
            Some("finalizers")
        );
    }

    #[test]
    fn propagation_policies_and_cycle() {
        let mut p = Propagation::default();
        let mut seen = Vec::new();
        for _ in 0..3 {
            seen.push(p.policy());
            p = p.next();
        }
        assert_eq!(seen, ["Background", "Foreground", "Orphan"]);
        assert_eq!(p, Propagation::Background);
    }
}
