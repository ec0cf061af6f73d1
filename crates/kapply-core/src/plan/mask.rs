//! Secret masking of a whole object plan (rows, patch, last-applied,
//! objects), through the one masker, [`crate::mask`].

use super::ObjectPlan;
use crate::fieldpath as path;
use crate::mask::{is_secret_field, mask_data, mask_recorded, mask_secret, mask_value};
use crate::merge::LAST_APPLIED;
use serde_json::Value;

/// A copy of the object plan safe to show: Secret values masked in the
/// field rows, the patch body, the last-applied and the objects.
pub fn mask_plan(p: &ObjectPlan) -> ObjectPlan {
    if p.kind != "Secret" {
        return p.clone();
    }
    let mut out = p.clone();
    let annotation_path = path::key("metadata.annotations", LAST_APPLIED);
    for f in &mut out.fields {
        if f.path == annotation_path {
            for side in [&mut f.config, &mut f.live, &mut f.last_applied] {
                if let Some(Value::String(text)) = side {
                    *text = mask_recorded(text);
                }
            }
        }
        if is_secret_field(&p.kind, &f.path) {
            f.config = mask_value(&f.config);
            f.live = mask_value(&f.live);
            f.last_applied = mask_value(&f.last_applied);
        }
    }
    if let Some(patch) = &mut out.patch {
        let mut body = patch.body.clone();
        if let Some(m) = body.as_object_mut() {
            m.insert("kind".into(), Value::String("Secret".into()));
            let mut masked = mask_secret(&Value::Object(m.clone()));
            if let Some(mm) = masked.as_object_mut()
                && p.patch.as_ref().and_then(|x| x.body.get("kind")).is_none()
            {
                mm.remove("kind");
            }
            body = masked;
        }
        patch.body = body;
    }
    out.last_applied = out.last_applied.as_ref().map(|v| {
        let mut v = v.clone();
        mask_data(&mut v);
        v
    });
    out.config = out.config.as_ref().map(mask_secret);
    out.live = out.live.as_ref().map(mask_secret);
    out
}
