//! Kubernetes `Status` errors, worded as the real API server words them so
//! kubectl prints the familiar messages.

use super::resources::ResourceInfo;
use serde_json::{Value, json};

/// One cause of a 422 Invalid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    pub field: String,
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueForbidden`, ...
    pub reason: &'static str,
    /// `Invalid value: ...: field is immutable`, `Required value`, ...
    pub detail: String,
}

impl Cause {
    pub fn new(field: impl Into<String>, reason: &'static str, detail: impl Into<String>) -> Cause {
        Cause {
            field: field.into(),
            reason,
            detail: detail.into(),
        }
    }
}

/// An error answered as a `Status` object.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message)
    }

    pub fn not_found_path() -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// This error with details naming the object `name` of `r` (its
    /// `kind` is the resource, as the server's details give it).
    fn about(self, r: &ResourceInfo, name: &str) -> ApiError {
        ApiError {
            details: Some(json!({"name": name, "group": r.group, "kind": r.plural})),
            ..self
        }
    }

    pub fn not_found(r: &ResourceInfo, name: &str) -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", r.qualified()),
        )
        .about(r, name)
    }

    pub fn namespace_not_found(ns: &str) -> ApiError {
        ApiError {
            details: Some(json!({"name": ns, "kind": "namespaces"})),
            ..ApiError::new(404, "NotFound", format!("namespaces \"{ns}\" not found"))
        }
    }

    pub fn already_exists(r: &ResourceInfo, name: &str) -> ApiError {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", r.qualified()),
        )
        .about(r, name)
    }

    pub fn conflict(r: &ResourceInfo, name: &str) -> ApiError {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                r.qualified()
            ),
        )
        .about(r, name)
    }

    pub fn method_not_allowed(method: &str) -> ApiError {
        ApiError::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on the requested resource ({method})"),
        )
    }

    pub fn unsupported_media(ct: &str, accepted: &[&str]) -> ApiError {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {} (got {ct:?})",
                accepted.join(", ")
            ),
        )
    }

    pub fn invalid(r: &ResourceInfo, name: &str, causes: &[Cause]) -> ApiError {
        let parts: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.detail))
            .collect();
        let joined = if parts.len() == 1 {
            parts[0].clone()
        } else {
            format!("[{}]", parts.join(", "))
        };
        let causes: Vec<Value> = causes
            .iter()
            .map(|c| json!({"reason": c.reason, "message": c.detail, "field": c.field}))
            .collect();
        ApiError {
            details: Some(
                json!({"name": name, "group": r.group, "kind": r.kind, "causes": causes}),
            ),
            ..ApiError::new(
                422,
                "Invalid",
                format!("{} \"{name}\" is invalid: {joined}", r.group_kind()),
            )
        }
    }

    /// The Status body.
    pub fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Errors about one object name it in their message and their details
    /// (name, group and resource), as the API server's do.
    #[test]
    fn object_errors_name_the_object() {
        let all = crate::resources::builtin();
        let Some(r) = all.iter().find(|r| r.kind == "Deployment") else {
            panic!("no Deployment resource");
        };
        let details = json!({"name": "web", "group": "apps", "kind": "deployments"});
        let cases = [
            (
                ApiError::not_found(r, "web"),
                404,
                "NotFound",
                "deployments.apps \"web\" not found",
            ),
            (
                ApiError::already_exists(r, "web"),
                409,
                "AlreadyExists",
                "deployments.apps \"web\" already exists",
            ),
            (
                ApiError::conflict(r, "web"),
                409,
                "Conflict",
                "Operation cannot be fulfilled on deployments.apps \"web\": the object has been modified; please apply your changes to the latest version and try again",
            ),
        ];
        for (e, code, reason, message) in cases {
            assert_eq!(
                (e.code, e.reason, e.message.as_str()),
                (code, reason, message)
            );
            assert_eq!(e.details.as_ref(), Some(&details), "{reason}");
        }
    }
}
