//! Patches: strategic merge, JSON merge and JSON patch bodies and their
//! application.

use super::plumbing::{truncate, yaml_value};
use super::schema_of;
use crate::resources::ResourceInfo;
use crate::status::ApiError;
use kapply_core::merge::apply::{apply_merge, apply_strategic};
use serde_json::Value;

pub(super) enum PatchKind {
    Strategic,
    Merge,
    Json,
    Apply,
}

const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

pub(super) fn patch_kind(content_type: Option<&str>) -> Result<PatchKind, ApiError> {
    let ct = content_type.unwrap_or_default();
    let mime = ct.split(';').next().unwrap_or_default().trim();
    Ok(match mime {
        "application/strategic-merge-patch+json" => PatchKind::Strategic,
        "application/merge-patch+json" => PatchKind::Merge,
        "application/json-patch+json" => PatchKind::Json,
        "application/apply-patch+yaml" | "application/apply-patch+json" => PatchKind::Apply,
        other => return Err(ApiError::unsupported_media(other, PATCH_TYPES)),
    })
}

pub(super) fn patch_body(kind: &PatchKind, body: &[u8]) -> Result<Value, ApiError> {
    let v = match kind {
        PatchKind::Apply => yaml_value(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?,
        _ => serde_json::from_slice::<Value>(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?,
    };
    match (kind, &v) {
        (PatchKind::Json, Value::Array(_)) => Ok(v),
        (PatchKind::Json, _) => Err(ApiError::bad_request(
            "json patch must be an array of operations",
        )),
        (_, Value::Object(_)) => Ok(v),
        _ => Err(ApiError::bad_request(format!(
            "patch is not a JSON object: {}",
            truncate(&v.to_string())
        ))),
    }
}

pub(super) fn json_patch_apply(doc: &Value, patch: &Value) -> Result<Value, ApiError> {
    let p: json_patch::Patch = serde_json::from_value(patch.clone())
        .map_err(|e| ApiError::bad_request(format!("error decoding json patch: {e}")))?;
    let mut v = doc.clone();
    json_patch::patch(&mut v, &p).map_err(|e| {
        ApiError::new(
            422,
            "Invalid",
            format!("the json patch could not be applied: {e}"),
        )
    })?;
    Ok(v)
}

pub(super) fn merge_strategic(
    r: &ResourceInfo,
    old: &Value,
    patch: &Value,
) -> Result<Value, ApiError> {
    match schema_of(r) {
        Some(schema) => apply_strategic(old, patch, Some(schema))
            .map_err(|e| ApiError::bad_request(format!("unable to apply the patch: {e}"))),
        None => Ok(apply_merge(old, patch)),
    }
}

pub(super) fn apply_patch(
    r: &ResourceInfo,
    kind: &PatchKind,
    old: &Value,
    patch: &Value,
) -> Result<Value, ApiError> {
    match kind {
        PatchKind::Strategic => {
            if schema_of(r).is_none() {
                return Err(ApiError::unsupported_media(
                    "application/strategic-merge-patch+json",
                    &[
                        "application/json-patch+json",
                        "application/merge-patch+json",
                        "application/apply-patch+yaml",
                    ],
                ));
            }
            merge_strategic(r, old, patch)
        }
        PatchKind::Merge => Ok(apply_merge(old, patch)),
        PatchKind::Json => json_patch_apply(old, patch),
        PatchKind::Apply => merge_strategic(r, old, patch),
    }
}
