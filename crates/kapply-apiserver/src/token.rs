//! `POST serviceaccounts/<name>/token` (TokenRequest), what
//! `kubectl create token` calls. The token is an unsigned JWT (`alg:
//! none`) carrying the claims a real service-account token has: readable,
//! but not credentials here (the server accepts only its run's own token).

use crate::resources::ResourceInfo;
use crate::status::{ApiError, Cause};
use base64::Engine;
use serde_json::{Value, json};

/// kube-apiserver's default audience and issuer.
const AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";
/// `spec.expirationSeconds` when the request leaves it out, and the minimum.
const DEFAULT_SECONDS: i64 = 3600;
const MIN_SECONDS: i64 = 600;

fn b64url(v: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

/// The TokenRequest answered for `request` (already decoded) on the
/// ServiceAccount `sa`.
pub fn issue(r: &ResourceInfo, sa: &Value, request: &Value) -> Result<Value, ApiError> {
    let name = sa["metadata"]["name"].as_str().unwrap_or_default();
    let ns = sa["metadata"]["namespace"].as_str().unwrap_or_default();
    let spec = &request["spec"];
    let seconds = match &spec["expirationSeconds"] {
        Value::Null => DEFAULT_SECONDS,
        v => v
            .as_i64()
            .ok_or_else(|| ApiError::bad_request("spec.expirationSeconds must be an integer"))?,
    };
    if seconds < MIN_SECONDS {
        return Err(ApiError::invalid(
            r,
            name,
            &[Cause::new(
                "spec.expirationSeconds",
                "FieldValueInvalid",
                "may not specify a duration less than 10 minutes",
            )],
        ));
    }
    let audiences = match spec["audiences"].as_array() {
        Some(a) if !a.is_empty() => Value::Array(a.clone()),
        _ => json!([AUDIENCE]),
    };
    let now = jiff::Timestamp::now();
    let exp = now
        .checked_add(jiff::SignedDuration::from_secs(seconds))
        .map_err(|_| ApiError::bad_request("spec.expirationSeconds is too large"))?;
    let claims = json!({
        "aud": audiences,
        "exp": exp.as_second(),
        "iat": now.as_second(),
        "iss": AUDIENCE,
        "kubernetes.io": {"namespace": ns,
            "serviceaccount": {"name": name, "uid": sa["metadata"]["uid"]}},
        "nbf": now.as_second(),
        "sub": format!("system:serviceaccount:{ns}:{name}"),
    });
    let token = format!(
        "{}.{}.",
        b64url(&json!({"alg": "none", "typ": "JWT"})),
        b64url(&claims)
    );
    Ok(json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": ns,
            "creationTimestamp": kapply_core::gocompat::timestamp(now)},
        "spec": {"audiences": audiences, "expirationSeconds": seconds,
            "boundObjectRef": spec["boundObjectRef"]},
        "status": {"token": token,
            "expirationTimestamp": kapply_core::gocompat::timestamp(exp)},
    }))
}
