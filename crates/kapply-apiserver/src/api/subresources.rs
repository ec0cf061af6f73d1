//! Subresources: `/scale`, `/status` and a ServiceAccount's `/token`.

use super::out;
use super::patch::{PatchKind, apply_patch, json_patch_apply, patch_body, patch_kind};
use super::plumbing::json_body;
use super::writes::{WriteCtx, precondition, write};
use crate::resources::ResourceInfo;
use crate::status::ApiError;
use crate::store::{self, State};
use http::Method;
use kapply_core::merge::apply::apply_merge;
use serde_json::{Value, json};

fn scale_of(o: &Value) -> Value {
    let md = &o["metadata"];
    let selector = o["spec"]["selector"]["matchLabels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": md["name"], "namespace": md["namespace"], "uid": md["uid"],
                     "resourceVersion": md["resourceVersion"], "creationTimestamp": md["creationTimestamp"]},
        "spec": {"replicas": o["spec"]["replicas"]},
        "status": {"replicas": o["status"]["replicas"].as_i64().unwrap_or(0), "selector": selector},
    })
}

/// `<name>/scale` of a scalable resource, `<name>/status` of one with a
/// status subresource.
#[allow(clippy::too_many_arguments)]
pub(super) fn subresource(
    st: &mut State,
    r: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    sub: &str,
    method: &Method,
    content_type: Option<&str>,
    body: &[u8],
    manager: Option<String>,
    dry_run: bool,
) -> Result<(u16, Value), ApiError> {
    let k = store::key(r, ns, name);
    let Some(old) = st.get(&k) else {
        return Err(ApiError::not_found(r, name));
    };
    let manager = manager.unwrap_or_else(|| "unknown".into());
    match sub {
        "scale" if r.scale => {
            let current = scale_of(&old);
            let new_scale = match *method {
                Method::GET => return Ok((200, current)),
                Method::PUT => json_body(content_type, body)?,
                Method::PATCH => {
                    let kind = patch_kind(content_type)?;
                    let patch = patch_body(&kind, body)?;
                    match kind {
                        PatchKind::Json => json_patch_apply(&current, &patch)?,
                        _ => apply_merge(&current, &patch),
                    }
                }
                _ => return Err(ApiError::method_not_allowed(method.as_str())),
            };
            precondition(r, name, &old, &new_scale)?;
            let replicas = new_scale["spec"]["replicas"].clone();
            if !replicas.is_null() && !replicas.is_i64() {
                return Err(ApiError::bad_request("spec.replicas must be an integer"));
            }
            let mut new = old.clone();
            new["spec"]["replicas"] = if replicas.is_null() {
                json!(0)
            } else {
                replicas
            };
            let ctx = WriteCtx {
                manager,
                operation: "Update",
                subresource: Some("scale"),
                dry_run,
                strict: false,
                warn: false,
                applied: None,
            };
            let stored = write(st, r, Some(&old), new, &ctx)?;
            Ok((200, scale_of(&stored)))
        }
        "status" if r.status => {
            let new_status = match *method {
                Method::GET => return Ok((200, out(r, &old))),
                Method::PUT => json_body(content_type, body)?["status"].clone(),
                Method::PATCH => {
                    let kind = patch_kind(content_type)?;
                    let patch = patch_body(&kind, body)?;
                    apply_patch(r, &kind, &old, &patch)?["status"].clone()
                }
                _ => return Err(ApiError::method_not_allowed(method.as_str())),
            };
            let mut new = old.clone();
            new["status"] = new_status;
            if !dry_run {
                new["metadata"]["resourceVersion"] = json!(st.next_rv());
                st.put(k, &new);
            }
            Ok((200, out(r, &new)))
        }
        "token" if r.kind == "ServiceAccount" && r.group.is_empty() => {
            if *method != Method::POST {
                return Err(ApiError::method_not_allowed(method.as_str()));
            }
            let request = json_body(content_type, body)?;
            Ok((201, crate::token::issue(r, &old, &request)?))
        }
        _ => Err(ApiError::not_found_path()),
    }
}
