//! Writes: create, update and delete, with the checks, defaulting,
//! validation and stamping that every write goes through.

use super::allocate;
use super::controllers::simulate_status;
use super::plumbing::truncate;
use super::{out, schema_of, served};
use crate::fields::{self, Write};
use crate::resources::ResourceInfo;
use crate::status::{ApiError, Cause};
use crate::store::{self, State};
use crate::validate;
use kapply_core::defaults;
use serde_json::{Value, json};

/// A written object, and its JSON when that was made already (stored, and
/// as served): the answer is then those bytes, not written again.
pub(super) struct Written {
    pub(super) object: Value,
    pub(super) json: Option<bytes::Bytes>,
}

impl From<Written> for super::Reply {
    fn from(w: Written) -> super::Reply {
        match w.json {
            Some(json) => super::Reply::Raw(json),
            None => super::Reply::Json(w.object),
        }
    }
}

/// Write parameters shared by create, update and patch.
pub(super) struct WriteCtx<'a> {
    pub(super) manager: String,
    pub(super) operation: &'a str,
    pub(super) subresource: Option<&'a str>,
    pub(super) dry_run: bool,
    pub(super) strict: bool,
    /// `fieldValidation=Warn`: unknown fields become Warning headers.
    pub(super) warn: bool,
    pub(super) applied: Option<fields::FieldSet>,
}

impl WriteCtx<'_> {
    /// A write that comes from inside the server (seeding, built-ins), not
    /// from a request.
    pub(super) fn direct(manager: String) -> Self {
        WriteCtx {
            manager,
            operation: "Update",
            subresource: None,
            dry_run: false,
            strict: false,
            warn: false,
            applied: None,
        }
    }
}

/// What is wrong with `name` for an object of this kind, as kube-apiserver
/// validates names per kind: RBAC objects take any path segment name
/// (`system:coredns`), a Namespace a DNS label, a Service a DNS-1035
/// label, everything else a DNS subdomain.
fn name_problem(group: &str, kind: &str, name: &str) -> Option<String> {
    match (group, kind) {
        ("rbac.authorization.k8s.io", _) => match name {
            "." => Some("may not be '.'".into()),
            ".." => Some("may not be '..'".into()),
            _ if name.contains('/') => Some("may not contain '/'".into()),
            _ if name.contains('%') => Some("may not contain '%'".into()),
            _ => None,
        },
        ("", "Namespace") => (!is_dns_label(name, false)).then(|| {
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \
             '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or \
             '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
                .into()
        }),
        ("", "Service") => (!is_dns_label(name, true)).then(|| {
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start \
             with an alphabetic character, and end with an alphanumeric character (e.g. \
             'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
                .into()
        }),
        _ => (!is_dns_name(name)).then(|| {
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character"
                .into()
        }),
    }
}

/// A DNS label (at most 63, no dots); `alpha_first`: DNS-1035's rule.
fn is_dns_label(s: &str, alpha_first: bool) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
        && (!alpha_first || s.starts_with(|c: char| c.is_ascii_lowercase()))
}

fn is_dns_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && !s.starts_with(['-', '.'])
        && !s.ends_with(['-', '.'])
}

/// Whether DeleteOptions ask for a dry run (`"dryRun": ["All"]`); any
/// other value is refused, as kube-apiserver refuses it.
pub(super) fn delete_options_dry_run(options: &Value) -> Result<bool, ApiError> {
    let values = match &options["dryRun"] {
        Value::Null => return Ok(false),
        Value::Array(values) => values,
        other => {
            return Err(ApiError::bad_request(format!(
                "DeleteOptions: dryRun must be a list of strings, not {}",
                truncate(&other.to_string())
            )));
        }
    };
    let mut dry_run = false;
    for v in values {
        match v.as_str() {
            Some("All") => dry_run = true,
            _ => {
                return Err(ApiError::bad_request(format!(
                    "Invalid dry run value: {}: supported values: \"All\"",
                    truncate(&v.to_string())
                )));
            }
        }
    }
    Ok(dry_run)
}

/// A patch or update that carries metadata.resourceVersion must match.
/// DeleteOptions.preconditions (uid, resourceVersion), as kube-apiserver
/// checks them: 409 Conflict when the object is not the one named.
pub(super) fn delete_preconditions(
    r: &ResourceInfo,
    name: &str,
    old: &Value,
    options: &Value,
) -> Result<(), ApiError> {
    for (field, label) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
        if let Some(want) = options["preconditions"][field].as_str()
            && old["metadata"][field].as_str() != Some(want)
        {
            let mut e = ApiError::conflict(r, name);
            e.message = format!(
                "Operation cannot be fulfilled on {} \"{name}\": Precondition failed: {label} in precondition: {want}, {label} in object meta: {}",
                r.qualified(),
                old["metadata"][field].as_str().unwrap_or_default()
            );
            return Err(e);
        }
    }
    Ok(())
}

pub(super) fn precondition(
    r: &ResourceInfo,
    name: &str,
    old: &Value,
    new: &Value,
) -> Result<(), ApiError> {
    let want = &new["metadata"]["resourceVersion"];
    if let Some(w) = want.as_str()
        && !w.is_empty()
        && old["metadata"]["resourceVersion"].as_str() != Some(w)
    {
        return Err(ApiError::conflict(r, name));
    }
    Ok(())
}

pub(super) fn check_identity(
    r: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    obj: &Value,
) -> Result<(), ApiError> {
    if let Some(n) = obj["metadata"]["name"].as_str()
        && n != name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        )));
    }
    if r.namespaced
        && let Some(n) = obj["metadata"]["namespace"].as_str()
        && Some(n) != ns
        && !n.is_empty()
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

fn check_type(r: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    let kind = obj["kind"].as_str().unwrap_or_default();
    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
    if !kind.is_empty() && kind != r.kind {
        return Err(ApiError::bad_request(format!(
            "{kind} in version {api_version:?} cannot be handled as a {}: the object kind does not match the resource",
            r.kind
        )));
    }
    if !api_version.is_empty() && api_version != r.api_version() {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            r.api_version()
        )));
    }
    if !obj["metadata"].is_null() && !obj["metadata"].is_object() {
        return Err(ApiError::bad_request(format!(
            "{} in version {:?} cannot be handled as a {}: metadata must be an object",
            r.kind, r.version, r.kind
        )));
    }
    obj["apiVersion"] = json!(r.api_version());
    obj["kind"] = json!(r.kind);
    Ok(())
}

pub(super) fn create(
    st: &mut State,
    r: &ResourceInfo,
    ns: Option<&str>,
    mut obj: Value,
    ctx: &WriteCtx<'_>,
) -> Result<Written, ApiError> {
    check_type(r, &mut obj)?;
    if r.namespaced {
        let Some(ns) = ns else {
            return Err(ApiError::not_found_path());
        };
        match obj["metadata"]["namespace"].as_str() {
            Some(n) if !n.is_empty() && n != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => obj["metadata"]["namespace"] = json!(ns),
        }
        if !st.contains(&store::namespace_key(ns)) {
            return Err(ApiError::namespace_not_found(ns));
        }
    } else if let Some(m) = obj["metadata"].as_object_mut() {
        m.remove("namespace");
    }
    let mut name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if name.is_empty() {
        if let Some(prefix) = obj["metadata"]["generateName"].as_str() {
            let uid = st.next_uid(prefix);
            name = format!("{prefix}{}", &uid[..5]);
            obj["metadata"]["name"] = json!(name);
        } else {
            return Err(ApiError::invalid(
                r,
                "",
                &[Cause::new(
                    "metadata.name",
                    "FieldValueRequired",
                    "Required value: name or generateName is required",
                )],
            ));
        }
    }
    if let Some(problem) = name_problem(&r.group, &r.kind, &name) {
        return Err(ApiError::invalid(
            r,
            &name,
            &[Cause::new(
                "metadata.name",
                "FieldValueInvalid",
                format!("Invalid value: {name:?}: {problem}"),
            )],
        ));
    }
    if st.contains(&store::key(r, ns, &name)) {
        return Err(ApiError::already_exists(r, &name));
    }
    if let Some(m) = obj["metadata"].as_object_mut() {
        for k in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
        ] {
            m.remove(k);
        }
    }
    write_served(st, r, None, obj, ctx)
}

pub(super) fn update(
    st: &mut State,
    r: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    mut obj: Value,
    ctx: &WriteCtx<'_>,
) -> Result<Written, ApiError> {
    check_type(r, &mut obj)?;
    check_identity(r, ns, name, &obj)?;
    let Some(old) = st.get(&store::key(r, ns, name)) else {
        return Err(ApiError::not_found(r, name));
    };
    precondition(r, name, &old, &obj)?;
    replace(st, r, ns, name, &old, obj, ctx)
}

/// [`update`] of an object already read and checked against its
/// preconditions (a PATCH: the patched object is `obj`).
pub(super) fn update_read(
    st: &mut State,
    r: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    old: &Value,
    mut obj: Value,
    ctx: &WriteCtx<'_>,
) -> Result<Written, ApiError> {
    check_type(r, &mut obj)?;
    check_identity(r, ns, name, &obj)?;
    replace(st, r, ns, name, old, obj, ctx)
}

fn replace(
    st: &mut State,
    r: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    old: &Value,
    mut obj: Value,
    ctx: &WriteCtx<'_>,
) -> Result<Written, ApiError> {
    obj["metadata"]["name"] = json!(name);
    if let Some(ns) = ns {
        obj["metadata"]["namespace"] = json!(ns);
    }
    write_served(st, r, Some(old), obj, ctx)
}

/// Default, validate, stamp and store (unless dry run) a new state.
pub(super) fn write(
    st: &mut State,
    r: &ResourceInfo,
    old: Option<&Value>,
    new: Value,
    ctx: &WriteCtx<'_>,
) -> Result<Value, ApiError> {
    write_served(st, r, old, new, ctx).map(|w| w.object)
}

/// [`write`], with the stored JSON when it is the object as served.
fn write_served(
    st: &mut State,
    r: &ResourceInfo,
    old: Option<&Value>,
    mut new: Value,
    ctx: &WriteCtx<'_>,
) -> Result<Written, ApiError> {
    let done = |object: Value| Written { object, json: None };
    let name = new["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let schema = schema_of(r);
    if (ctx.strict || ctx.warn)
        && let Some(s) = schema
    {
        let unknown = validate::unknown_fields(&new, s);
        if ctx.warn {
            st.warnings.extend(
                unknown
                    .iter()
                    .map(|u| format!("unknown field \"{}\"", u.trim_start_matches('.'))),
            );
        } else if !unknown.is_empty() {
            let list: Vec<String> = unknown
                .iter()
                .map(|u| format!("unknown field \"{}\"", u.trim_start_matches('.')))
                .collect();
            return Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: strict decoding error: {}",
                r.kind,
                r.version,
                r.kind,
                list.join(", ")
            )));
        }
    }
    // Types the real server decodes strictly: bad values fail decoding (400).
    decode_errors(r, &new)?;
    // Status belongs to the status subresource: main-resource writes keep it.
    if r.status && ctx.subresource.is_none() {
        match old {
            Some(o) if !o["status"].is_null() => new["status"] = o["status"].clone(),
            _ => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
    }
    // What kube-apiserver sets past its field manager on a create, when
    // the request left it out: no manager owns it (seen on v1.34).
    let storage_set = if old.is_none() {
        set_by_storage(r, &new)
    } else {
        Vec::new()
    };
    let mut storage_set = storage_set;
    let mut dropped = Vec::new();
    if r.group.is_empty()
        && r.kind == "Service"
        && let Some(o) = old
    {
        let kept = defaults::service_keeps_allocated(o, &mut new);
        storage_set.extend(kept.iter().map(allocate::field_path));
        let gone = defaults::service_drops_unused(o, &mut new);
        dropped = gone.iter().map(allocate::field_path).collect();
    }
    // Asked of the Job as sent: defaulting gives it its template's labels.
    let job_labels_follow = old.is_none() && defaults::job_labels_follow(&new);
    let mut allocator = allocate::Allocator::new(st);
    defaults::apply(&mut new, &mut allocator);
    storage_set.extend(allocator.disowned());
    schema_defaults(st, r, &mut new);
    drop_null_timestamps(&mut new);
    let causes = validate::validate(&new, old);
    if !causes.is_empty() {
        return Err(ApiError::invalid(r, &name, &causes));
    }
    let now = store::now();
    match old {
        Some(o) => {
            for k in ["uid", "creationTimestamp", "generation", "resourceVersion"] {
                // A field the stored object lacks stays absent (a ConfigMap
                // has no generation: copying it would write `null`).
                match o["metadata"].get(k) {
                    Some(v) => new["metadata"][k] = v.clone(),
                    None => {
                        if let Some(m) = new["metadata"].as_object_mut() {
                            m.remove(k);
                        }
                    }
                }
            }
            // A Deployment's annotations count too: kube-apiserver's
            // strategy bumps it for them (they are copied to ReplicaSets).
            let annotations = r.group == "apps"
                && r.kind == "Deployment"
                && o["metadata"]["annotations"] != new["metadata"]["annotations"];
            if has_generation(r)
                && (annotations || !same_but(o, &new, &["metadata", "status"], &[]))
            {
                let g = o["metadata"]["generation"].as_i64().unwrap_or(1);
                new["metadata"]["generation"] = json!(g + 1);
            }
        }
        None => {
            let uid = st.next_uid(&name);
            new["metadata"]["uid"] = json!(uid);
            new["metadata"]["creationTimestamp"] = json!(now);
            if has_generation(r) {
                new["metadata"]["generation"] = json!(1);
            }
        }
    }
    // A request that rewrites managedFields (kubectl's client-side to
    // server-side apply migration) sets the baseline; otherwise the stored
    // ones are kept whatever the body says.
    let baseline = old.map(|o| {
        let mut o = o.clone();
        let sent = &new["metadata"]["managedFields"];
        if sent.is_array() && *sent != o["metadata"]["managedFields"] {
            o["metadata"]["managedFields"] = sent.clone();
        }
        o
    });
    if let Some(o) = &baseline {
        new["metadata"]["managedFields"] = o["metadata"]["managedFields"].clone();
    }
    simulate_status(r, &mut new);
    let api_version = r.api_version();
    fields::record(
        baseline.as_ref(),
        &mut new,
        schema,
        &Write {
            manager: &ctx.manager,
            operation: ctx.operation,
            subresource: ctx.subresource,
            api_version: &api_version,
            time: &now,
            applied: ctx.applied.clone(),
        },
    );
    fields::disown(&mut new, &storage_set);
    if let Some(o) = old {
        fields::keep_owned(o, &mut new, &dropped);
    }
    if old.is_none() {
        added_on_create(r, &mut new, job_labels_follow);
    }
    let rewrote_fields = baseline
        .as_ref()
        .zip(old)
        .is_some_and(|(b, o)| b["metadata"]["managedFields"] != o["metadata"]["managedFields"]);
    if let Some(o) = old {
        // A write that changes nothing keeps the resourceVersion (one that
        // rewrites only managedFields, the migration's, changes them).
        if !rewrote_fields && same_but(o, &new, &[], &["resourceVersion", "managedFields"]) {
            return Ok(done(out(r, o)));
        }
    }
    if ctx.dry_run {
        if old.is_none()
            && let Some(m) = new["metadata"].as_object_mut()
        {
            m.remove("resourceVersion");
        }
        return Ok(done(served(r, new)));
    }
    new["metadata"]["resourceVersion"] = json!(st.next_rv());
    if let Some(m) = new["metadata"].as_object_mut() {
        m.retain(|_, v| !v.is_null());
    }
    let ns = new["metadata"]["namespace"].as_str().map(str::to_string);
    let stored = st.put(store::key(r, ns.as_deref(), &name), &new);
    let json = stored.json_as(r).cloned();
    Ok(Written {
        object: served(r, new),
        json,
    })
}

/// kube-apiserver decodes into typed objects, and a zero creationTimestamp
/// is not printed: the `creationTimestamp: null` kubectl create and run send
/// in a template's metadata is not stored.
fn drop_null_timestamps(o: &mut Value) {
    fn drop(meta: Option<&mut Value>) {
        if let Some(m) = meta.and_then(Value::as_object_mut)
            && m.get("creationTimestamp").is_some_and(Value::is_null)
        {
            m.remove("creationTimestamp");
        }
    }
    let Some(spec) = o.get_mut("spec") else {
        return;
    };
    drop(spec.pointer_mut("/template/metadata"));
    drop(spec.pointer_mut("/jobTemplate/metadata"));
    drop(spec.pointer_mut("/jobTemplate/spec/template/metadata"));
    if let Some(claims) = spec
        .get_mut("volumeClaimTemplates")
        .and_then(Value::as_array_mut)
    {
        for claim in claims {
            drop(claim.get_mut("metadata"));
        }
    }
}

/// A custom resource gets the `default`s of its CRD's structural schema
/// (the written version's), as kube-apiserver defaults it on every write.
fn schema_defaults(st: &State, r: &ResourceInfo, o: &mut Value) {
    if !r.custom {
        return;
    }
    let key = (
        "apiextensions.k8s.io".to_string(),
        "customresourcedefinitions".to_string(),
        String::new(),
        format!("{}.{}", r.plural, r.group),
    );
    let Some(crd) = st.get(&key) else {
        return;
    };
    let version = crd["spec"]["versions"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["name"] == r.version.as_str()));
    if let Some(schema) = version.map(|v| &v["schema"]["openAPIV3Schema"]) {
        default_from_schema(schema, o);
    }
}

/// Fills in `v`'s absent properties that `schema` gives a default, then
/// walks into its properties, additionalProperties and list items.
fn default_from_schema(schema: &Value, v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(props) = schema["properties"].as_object() {
                for (k, s) in props {
                    if !map.contains_key(k)
                        && let Some(d) = s.get("default")
                    {
                        map.insert(k.clone(), d.clone());
                    }
                    if let Some(child) = map.get_mut(k) {
                        default_from_schema(s, child);
                    }
                }
            }
            if let Some(extra) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                for child in map.values_mut() {
                    default_from_schema(extra, child);
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for item in items {
                    default_from_schema(s, item);
                }
            }
        }
        _ => {}
    }
}

/// What kube-apiserver adds to a new object besides defaulting, after the
/// field manager has recorded the request (so no manager owns it): a Job's
/// selector and pod-template labels (its create strategy, unless
/// `spec.manualSelector`; the Job's own labels too when it was sent
/// without), and a claim's `kubernetes.io/pvc-protection`
/// finalizer (the StorageObjectInUseProtection admission plugin; the
/// embedded server deletes at once, as the protection controller does for a
/// claim no Pod uses).
fn added_on_create(r: &ResourceInfo, o: &mut Value, job_labels_follow: bool) {
    match (r.group.as_str(), r.kind.as_str()) {
        ("batch", "Job") => {
            let (uid, name) = (o["metadata"]["uid"].clone(), o["metadata"]["name"].clone());
            defaults::job_created(o, &uid, &name, job_labels_follow);
        }
        ("", "PersistentVolumeClaim") | ("", "PersistentVolume") => {
            let finalizer = if r.kind == "PersistentVolume" {
                "kubernetes.io/pv-protection"
            } else {
                "kubernetes.io/pvc-protection"
            };
            let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) else {
                return;
            };
            let list = meta.entry("finalizers").or_insert_with(|| json!([]));
            if let Some(list) = list.as_array_mut()
                && !list.iter().any(|f| f == finalizer)
            {
                list.push(json!(finalizer));
            }
        }
        _ => {}
    }
}

/// The fields of a create request `sent` (before defaulting) that
/// kube-apiserver's storage sets after its field manager recorded the
/// request, so that no manager owns them: a Service's allocated cluster
/// IPs and IP families (its REST create allocates them), a Namespace's
/// `kubernetes` finalizer (its create strategy). What the request sent
/// stays its writer's.
fn set_by_storage(r: &ResourceInfo, sent: &Value) -> Vec<fields::ManagedPath> {
    let fields: &[&str] = match (r.group.as_str(), r.kind.as_str()) {
        ("", "Service") => &["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"],
        ("", "Namespace") => &["finalizers"],
        _ => return Vec::new(),
    };
    fields
        .iter()
        .filter(|f| sent["spec"].get(**f).is_none_or(Value::is_null))
        .map(|f| vec!["f:spec".to_string(), format!("f:{f}")])
        .collect()
}

/// Whether `a` and `b` are equal but for the top-level fields `top` and
/// the metadata fields `meta` (compared in place, not on copies).
fn same_but(a: &Value, b: &Value, top: &[&str], meta: &[&str]) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    fn kept<'a>(
        m: &'a serde_json::Map<String, Value>,
        skip: &[&str],
    ) -> Vec<(&'a String, &'a Value)> {
        m.iter()
            .filter(|(k, _)| !skip.contains(&k.as_str()))
            .collect()
    }
    let (a, b) = (kept(a, top), kept(b, top));
    a.len() == b.len()
        && a.iter().zip(&b).all(|((ka, va), (kb, vb))| {
            ka == kb
                && if *ka == "metadata" && !meta.is_empty() {
                    same_but(va, vb, meta, &[])
                } else {
                    va == vb
                }
        })
}

/// What fails to decode into the Go types before validation even starts.
fn decode_errors(r: &ResourceInfo, o: &Value) -> Result<(), ApiError> {
    let fail = |detail: String| {
        Err(ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {detail}",
            r.kind, r.version, r.kind
        )))
    };
    let md = &o["metadata"];
    for field in ["labels", "annotations"] {
        if let Some(m) = md[field].as_object()
            && let Some((k, v)) = m.iter().find(|(_, v)| !v.is_string())
        {
            return fail(format!(
                "json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{field} of type string (key {k:?})",
                json_type(v)
            ));
        }
    }
    if r.group.is_empty() && r.kind == "Secret" {
        for field in ["data"] {
            for (k, v) in o[field].as_object().into_iter().flatten() {
                let ok = v
                    .as_str()
                    .is_some_and(|s| kapply_core::gocompat::decode_bytes(s).is_some());
                if !ok {
                    return fail(format!("illegal base64 data in data[{k:?}]"));
                }
            }
        }
    }
    if r.group.is_empty()
        && r.kind == "ConfigMap"
        && let Some((k, v)) = o["data"]
            .as_object()
            .into_iter()
            .flatten()
            .find(|(_, v)| !v.is_string())
    {
        return fail(format!(
            "json: cannot unmarshal {} into Go struct field ConfigMap.data of type string (key {k:?})",
            json_type(v)
        ));
    }
    Ok(())
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Core and RBAC kinds carry no metadata.generation on a real server.
pub(crate) fn has_generation(r: &ResourceInfo) -> bool {
    !(r.group.is_empty() || r.group == "rbac.authorization.k8s.io")
}

/// Delete an object and whatever dies with it.
pub(super) fn remove(st: &mut State, r: &ResourceInfo, ns: Option<&str>, name: &str) {
    remove_read(st, r, ns, name, None);
}

/// [`remove`], given the object when it was read already (not parsed again).
pub(super) fn remove_read(
    st: &mut State,
    r: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    read: Option<Value>,
) {
    let key = store::key(r, ns, name);
    let removed = match read {
        Some(o) => st.delete_read(&key, o),
        None => st.delete(&key),
    };
    let doomed: Vec<store::Key> = match (r.group.as_str(), r.plural.as_str()) {
        ("", "namespaces") => st
            .iter()
            .map(|(k, _)| k)
            .filter(|(_, _, ons, _)| ons == name)
            .cloned()
            .collect(),
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            let crd = removed.unwrap_or_default();
            let g = crd["spec"]["group"].as_str().unwrap_or_default();
            let p = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
            st.of(g, p, None).map(|(k, _)| k.clone()).collect()
        }
        _ => Vec::new(),
    };
    for k in doomed {
        st.delete(&k);
    }
}

/// Used by `new()`: create without request plumbing.
pub(super) fn commit(
    st: &mut State,
    r: &ResourceInfo,
    old: Option<&Value>,
    obj: Value,
    ctx: &WriteCtx<'_>,
) -> Result<Value, ApiError> {
    match old {
        Some(o) => write(st, r, Some(o), obj, ctx),
        None => {
            let ns = obj["metadata"]["namespace"].as_str().map(str::to_string);
            create(st, r, ns.as_deref(), obj, ctx).map(|w| w.object)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::same_but;
    use serde_json::json;

    #[test]
    fn same_but_ignores_only_the_fields_named() {
        let a = json!({"metadata": {"name": "a", "resourceVersion": "1", "managedFields": [1]},
            "spec": {"x": 1}, "status": {"y": 1}});
        let mut b = a.clone();
        b["metadata"]["resourceVersion"] = json!("2");
        b["metadata"]["managedFields"] = json!([2]);
        assert!(same_but(&a, &b, &[], &["resourceVersion", "managedFields"]));
        assert!(!same_but(&a, &b, &[], &["resourceVersion"]));
        b["status"]["y"] = json!(2);
        assert!(!same_but(
            &a,
            &b,
            &[],
            &["resourceVersion", "managedFields"]
        ));
        assert!(same_but(&a, &b, &["metadata", "status"], &[]));
        b["spec"]["x"] = json!(2);
        assert!(!same_but(&a, &b, &["metadata", "status"], &[]));
        let mut c = a.clone();
        c["metadata"]["labels"] = json!({"l": "v"});
        assert!(!same_but(
            &a,
            &c,
            &[],
            &["resourceVersion", "managedFields"]
        ));
        assert!(same_but(&a, &c, &["metadata"], &[]));
    }
}
