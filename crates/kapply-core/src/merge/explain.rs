//! One wording per fact: a field row's words, in each form an output
//! needs, come from [`FieldChange::explain`] alone (the plan JSON's
//! `reason`, `kapply diff`, the Markdown report, the TUI). No I/O.

use serde::ser::{Serialize, SerializeStruct, Serializer};

use super::reason::{NO_MANAGED_FIELDS, SHOW_OWNERS, other_writer};
use super::{Cause, FieldAction, FieldChange, Reason};

/// The form a field row is worded in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Why the row is what it is: the plan JSON's `reason` (read back by
    /// [`Reason`]'s `From<&str>`), `kapply diff`'s parenthesis.
    Reason,
    /// The cause as a short tag for one-line output: `intended`,
    /// `other-writer: kubectl`, `drift: kubectl-edit at 2026-11-20T10:04:00Z`.
    Tag,
    /// The cause in words: `drift: changed by kubectl-edit at
    /// 2026-11-20T10:04:00Z; apply reverts it` (the diff's drift lines, the
    /// Markdown report, the TUI's detail).
    Text,
    /// The TUI's reason column: a kept field names the other writer that
    /// owns it, a drift who changed it (the cause, shortened for a table
    /// cell), else the reason.
    Column,
}

impl FieldChange {
    /// This row in words, in `form`.
    pub fn explain(&self, form: Form) -> String {
        match form {
            Form::Reason => self.reason_text(),
            Form::Tag => self.cause_tag(),
            Form::Text => self.cause_text(),
            Form::Column => self.column(),
        }
    }

    /// The words, in `form`, of a group of rows like this one (a change
    /// repeated across objects): this row's own when every row of the
    /// group is worded alike (`alike`), else the cause alone, which the
    /// rows share (their writers or times differ), and in words it says so.
    pub fn explain_group(&self, form: Form, alike: bool) -> String {
        match (alike, form) {
            (true, _) => self.explain(form),
            (false, Form::Text) => {
                format!("{}: by several writers or at several times", self.cause)
            }
            (false, _) => self.cause.to_string(),
        }
    }

    /// The reason; another writer's field names its owner, which the row
    /// carries (the reason does not repeat it).
    fn reason_text(&self) -> String {
        match (&self.reason, self.owner.as_deref()) {
            (Reason::OtherWriter, Some(owner)) => other_writer(owner),
            (r, _) => r.to_string(),
        }
    }

    fn column(&self) -> String {
        match (self.action, self.cause, self.owner.as_deref()) {
            (FieldAction::Keep, Cause::ServerDefault, _) => "kept: server default".to_string(),
            (FieldAction::Keep, Cause::OtherWriter, Some(owner)) => {
                format!("kept: another writer owns it ({owner})")
            }
            (FieldAction::Keep, Cause::OtherWriter, None) if self.reason == Reason::Released => {
                "kept: released, another writer's from now on".to_string()
            }
            (FieldAction::Set | FieldAction::Clear, Cause::Drift, _) => self.cause_text(),
            // A change over someone's change in the cluster names them too.
            (FieldAction::Set | FieldAction::Clear, _, _) if self.undoes_cluster_change() => {
                self.cause_text()
            }
            _ => self.reason_text(),
        }
    }

    /// The cause as a short tag for one-line output: `intended`,
    /// `other-writer: kubectl`, `drift: kubectl-edit at 2026-11-20T10:04:00Z`.
    fn cause_tag(&self) -> String {
        let mut s = self.cause.as_str().to_string();
        if let Some(o) = &self.owner {
            s.push_str(": ");
            s.push_str(o);
        }
        if let Some(t) = &self.changed_at {
            s.push_str(if self.owner.is_some() {
                " at "
            } else {
                ": at "
            });
            s.push_str(t);
        }
        s
    }

    /// The cause in words: `drift: changed by kubectl-edit at
    /// 2026-11-20T10:04:00Z; apply reverts it`.
    fn cause_text(&self) -> String {
        let owner = self.owner.as_deref();
        match self.cause {
            Cause::Intended | Cause::Removed
                if self.owner.is_some() || self.changed_at.is_some() =>
            {
                let mut s = String::from(if self.cause == Cause::Intended {
                    "intended: the manifest changed, over a change made in the cluster"
                } else {
                    "removed: in last-applied, not in the config, and changed in the cluster"
                });
                if let Some(o) = owner {
                    s.push_str(" by ");
                    s.push_str(o);
                }
                if let Some(t) = &self.changed_at {
                    s.push_str(" at ");
                    s.push_str(t);
                }
                s
            }
            Cause::Intended => "intended: the manifest changed".into(),
            Cause::Drift => {
                let mut s = String::from("drift: changed ");
                match owner {
                    Some(o) => {
                        s.push_str("by ");
                        s.push_str(o);
                    }
                    None => s.push_str("in the cluster"),
                }
                if let Some(t) = &self.changed_at {
                    s.push_str(" at ");
                    s.push_str(t);
                }
                s.push_str("; apply reverts it");
                s
            }
            Cause::New => "new: in the config, not in last-applied".into(),
            Cause::Removed => "removed: in last-applied, not in the config".into(),
            Cause::ServerDefault if self.reason == Reason::ServerSet => {
                "server-default: set by the server as it stored the object (owned by no \
                 writer); kept"
                    .into()
            }
            Cause::ServerDefault => "server-default: defaulted by the server; kept".into(),
            Cause::OtherWriter => match owner {
                Some(o) => format!("other-writer: {o} owns it; kept"),
                None if self.reason == Reason::Released => {
                    "other-writer: released by apply, another writer's from now on; kept".into()
                }
                None if self.reason == Reason::UnknownWriter => format!(
                    "other-writer: {} ({}); kept",
                    NO_MANAGED_FIELDS, SHOW_OWNERS
                ),
                None => "other-writer: not in config or last-applied; kept".into(),
            },
            Cause::Unmanaged => {
                "unmanaged: no last-applied annotation, so apply cannot tell a change from a drift"
                    .into()
            }
        }
    }
}

/// The plan JSON of a row (camelCase keys; absent sides, owner, time and
/// hazards left out, an explicit null side written `null`), its `reason` as [`Form::Reason`] words it.
impl Serialize for FieldChange {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("FieldChange", 10)?;
        st.serialize_field("path", &self.path)?;
        for (key, side) in [
            ("config", &self.config),
            ("live", &self.live),
            ("lastApplied", &self.last_applied),
        ] {
            match side {
                Some(v) => st.serialize_field(key, v)?,
                None => st.skip_field(key)?,
            }
        }
        st.serialize_field("action", &self.action)?;
        st.serialize_field("reason", &self.explain(Form::Reason))?;
        st.serialize_field("cause", &self.cause)?;
        match &self.owner {
            Some(o) => st.serialize_field("owner", o)?,
            None => st.skip_field("owner")?,
        }
        match &self.changed_at {
            Some(t) => st.serialize_field("changedAt", t)?,
            None => st.skip_field("changedAt")?,
        }
        if self.hazards.is_empty() {
            st.skip_field("hazards")?;
        } else {
            st.serialize_field("hazards", &self.hazards)?;
        }
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kept(owner: Option<&str>) -> FieldChange {
        FieldChange {
            path: "spec.replicas".into(),
            config: None,
            live: Some(json!(2)),
            last_applied: Some(Value::Null),
            action: FieldAction::Keep,
            reason: Reason::OtherWriter,
            cause: Cause::OtherWriter,
            owner: owner.map(String::from),
            changed_at: None,
            hazards: vec![],
        }
    }

    use serde_json::Value;

    /// A group of drift reverts by one writer at one time is worded as each
    /// of its rows; by several, each form keeps only the shared cause.
    #[test]
    fn a_group_is_worded_as_its_rows_or_by_its_shared_cause() {
        let mut row = kept(Some("kubectl-edit"));
        row.action = FieldAction::Set;
        row.cause = Cause::Drift;
        row.changed_at = Some("2026-11-20T10:04:00Z".into());
        for form in [Form::Reason, Form::Tag, Form::Text, Form::Column] {
            assert_eq!(row.explain_group(form, true), row.explain(form));
        }
        assert_eq!(
            row.explain_group(Form::Text, false),
            "drift: by several writers or at several times"
        );
        assert_eq!(row.explain_group(Form::Tag, false), "drift");
    }

    /// The row's JSON as the derived form wrote it (keys in declaration
    /// order, absent parts left out, an explicit null kept), the owner
    /// named once in the row and in the reason's words, and read back.
    #[test]
    fn json_names_the_owner_in_the_reason_and_reads_back() {
        let row = kept(Some("kubectl-scale"));
        let text = serde_json::to_string(&row).unwrap();
        assert_eq!(
            text,
            r#"{"path":"spec.replicas","live":2,"lastApplied":null,"action":"keep","reason":"live only: owned by another writer, kubectl-scale (not in config or last-applied)","cause":"other-writer","owner":"kubectl-scale"}"#
        );
        assert_eq!(serde_json::from_str::<FieldChange>(&text).unwrap(), row);
        assert_eq!(row.explain(Form::Tag), "other-writer: kubectl-scale");
        assert_eq!(
            row.explain(Form::Text),
            "other-writer: kubectl-scale owns it; kept"
        );
        assert_eq!(
            row.explain(Form::Column),
            "kept: another writer owns it (kubectl-scale)"
        );
        let mut full = kept(None);
        full.config = Some(json!(3));
        full.action = FieldAction::Set;
        full.reason = Reason::Differs;
        full.cause = Cause::Drift;
        full.owner = Some("kubectl-edit".into());
        full.changed_at = Some("2026-11-20T10:04:00Z".into());
        full.hazards = vec![super::super::Hazard {
            kind: super::super::HazardKind::FightsAutoscaler,
            message: "m".into(),
        }];
        let text = serde_json::to_string(&full).unwrap();
        assert_eq!(
            text,
            r#"{"path":"spec.replicas","config":3,"live":2,"lastApplied":null,"action":"set","reason":"config differs from live","cause":"drift","owner":"kubectl-edit","changedAt":"2026-11-20T10:04:00Z","hazards":[{"kind":"fights-autoscaler","message":"m"}]}"#
        );
        assert_eq!(serde_json::from_str::<FieldChange>(&text).unwrap(), full);
    }
}
