//! Applying patches to objects, as the API server does.
//!
//! [`apply_strategic`] follows apimachinery's strategic merge patch
//! application (`StrategicMergeMapPatch`: `MergeParallelList` and
//! `IgnoreUnmatchedNulls`), including its ordering of merged lists:
//! `$setElementOrder` first, then the patch order, then the live order, with
//! server-only elements interleaved by their live position (after a deletion
//! apimachinery orders by the live list as modified in place; that is
//! reproduced). [`apply_merge`] is JSON merge patch as the API server
//! applies it (evanphx/json-patch).
//!
//! Patch metadata comes from [`Schema`]. As with apimachinery's Go-struct
//! metadata, merging two maps (or two lists) under a field the type does not
//! have, or inside a map, scalar or free-form field, is an error. With no
//! schema (`None`: custom resources) maps merge recursively and lists are
//! replaced whole.
//!
//! Checked against `kubectl patch --local` in tests/smp.rs. Known difference:
//! directive keys that apimachinery copies verbatim into new list elements
//! are removed here (the API server drops them when it decodes the object);
//! `null`s inside new list elements are kept, as apimachinery keeps them.
//!
//! No I/O.

use super::MergeError;
use crate::fieldpath as path;
use crate::patchmeta::{ListStrategy, Schema, Shape};
use crate::vocab::{
    DELETE_FROM_PRIMITIVE_LIST, PATCH, RETAIN_KEYS, SET_ELEMENT_ORDER, directive_list,
};
use serde_json::{Map, Value};

type Result<T> = std::result::Result<T, MergeError>;

fn invalid(path: &str, message: impl Into<String>) -> MergeError {
    MergeError::Invalid {
        path: if path.is_empty() {
            "<root>".to_string()
        } else {
            path.to_string()
        },
        message: message.into(),
    }
}

/// Apply a strategic merge patch to a live object.
///
/// `schema` is the patch metadata of the object's kind (`None`: no metadata,
/// lists are replaced). Directives (`$patch`, `$retainKeys`,
/// `$setElementOrder/…`, `$deleteFromPrimitiveList/…`) are interpreted and
/// never appear in the result: the API server drops such unknown fields when
/// it decodes the merged object, so they are removed here too.
pub fn apply_strategic(
    live: &Value,
    patch: &Value,
    schema: Option<Schema<'_>>,
) -> std::result::Result<Value, MergeError> {
    let Value::Object(original) = live else {
        return Err(invalid("", "the object to patch is not a JSON object"));
    };
    let Value::Object(patch) = patch else {
        return Err(invalid("", "a strategic merge patch must be a JSON object"));
    };
    let merged = merge_map(original.clone(), patch.clone(), schema, "")?;
    let mut out = Value::Object(merged);
    strip_directives(&mut out);
    Ok(out)
}

/// Apply a JSON merge patch (RFC 7386) the way the API server does
/// (evanphx/json-patch `MergePatch`): objects merge recursively, `null`
/// deletes, anything else replaces. Values that are inserted whole have
/// their `null` members removed, as the server does.
pub fn apply_merge(live: &Value, patch: &Value) -> Value {
    match (live, patch) {
        (Value::Object(doc), Value::Object(p)) => {
            let mut doc = doc.clone();
            merge_docs(&mut doc, p);
            Value::Object(doc)
        }
        // Not two objects: the patch replaces the document.
        (_, other) => {
            let mut whole = other.clone();
            prune_nulls(&mut whole);
            whole
        }
    }
}

fn merge_docs(doc: &mut Map<String, Value>, patch: &Map<String, Value>) {
    for (k, v) in patch {
        if v.is_null() {
            doc.remove(k);
            continue;
        }
        match doc.get_mut(k) {
            Some(cur) if !cur.is_null() => match (cur, v) {
                (Value::Object(cur), Value::Object(p)) => merge_docs(cur, p),
                // A live object replaced by a non-object keeps the patch
                // value verbatim.
                (cur @ Value::Object(_), _) => *cur = v.clone(),
                (cur, _) => {
                    let mut whole = v.clone();
                    prune_nulls(&mut whole);
                    *cur = whole;
                }
            },
            _ => {
                let mut whole = v.clone();
                prune_nulls(&mut whole);
                doc.insert(k.clone(), whole);
            }
        }
    }
}

/// Remove `null` members of objects, recursively (list elements that are
/// null stay).
fn prune_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(prune_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(prune_nulls),
        _ => {}
    }
}

/// Remove directive keys left inside values that were taken from the patch
/// whole (new list elements, `$patch: replace` maps).
fn strip_directives(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| !is_directive_key(k));
            m.values_mut().for_each(strip_directives);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_directives),
        _ => {}
    }
}

fn is_directive_key(k: &str) -> bool {
    k == PATCH
        || k == RETAIN_KEYS
        || directive_list(k, SET_ELEMENT_ORDER).is_some()
        || directive_list(k, DELETE_FROM_PRIMITIVE_LIST).is_some()
}

/// Patch metadata of one field: (patch strategy is merge, merge key).
fn list_meta(field: Option<Schema<'_>>) -> (bool, String) {
    match field.map(|f| f.list_strategy()) {
        Some(ListStrategy::MergeByKey(k)) => (true, k.to_string()),
        Some(ListStrategy::MergePrimitive) => (true, String::new()),
        Some(ListStrategy::Atomic) | None => (false, String::new()),
    }
}

/// The schema of field `key` of a struct, for merging two maps there.
/// apimachinery takes patch metadata from the Go types, so a field the type
/// does not have, or a nested map inside a map, scalar or free-form value,
/// is an error; without metadata (`None`) everything is allowed.
fn lookup_struct<'a>(
    schema: Option<Schema<'a>>,
    key: &str,
    at: &str,
) -> Result<Option<Schema<'a>>> {
    let Some(s) = schema else { return Ok(None) };
    match s.shape() {
        Shape::Struct => s.field(key).map(Some).ok_or_else(|| {
            invalid(
                at,
                format!("unable to find api field for the json field {key:?}"),
            )
        }),
        Shape::Map | Shape::List | Shape::Scalar | Shape::Unknown => Err(invalid(
            at,
            "merging an object in json but the data type is not a struct",
        )),
    }
}

/// The schema of list field `key`, for merging two lists there.
fn lookup_slice<'a>(schema: Option<Schema<'a>>, key: &str, at: &str) -> Result<Option<Schema<'a>>> {
    let field = lookup_struct(schema, key, at)?;
    match field {
        Some(f) if f.shape() != Shape::List => Err(invalid(at, "expected a list type")),
        other => Ok(other),
    }
}

/// `$setElementOrder/containers` -> `containers`.
fn extract_key<'k>(key: &'k str, prefix: &str, path: &str) -> Result<&'k str> {
    match key.split_once('/') {
        Some((p, rest)) if p == prefix => Ok(rest),
        _ => Err(invalid(
            path,
            format!("invalid patch key {key:?}: expected {prefix}/<field>"),
        )),
    }
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: Option<Schema<'_>>,
    at: &str,
) -> Result<Map<String, Value>> {
    if let Some(d) = patch.get(PATCH) {
        return match d.as_str() {
            Some("replace") => {
                patch.remove(PATCH);
                Ok(patch)
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(invalid(at, format!("unknown patch type {d} in a map"))),
        };
    }

    apply_retain_keys(&mut original, &mut patch, at)?;
    merge_ordered_lists(&mut original, &mut patch, schema, at)?;

    // Sorted order: deterministic where the Go map iteration is not.
    let mut keys: Vec<String> = patch.keys().cloned().collect();
    keys.sort();
    for raw_key in keys {
        let Some(mut patch_v) = patch.remove(&raw_key) else {
            continue;
        };
        let (key, is_delete_list) = if raw_key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            (
                extract_key(&raw_key, DELETE_FROM_PRIMITIVE_LIST, at)?.to_string(),
                true,
            )
        } else {
            (raw_key.clone(), false)
        };
        let here = path::key(at, &key);

        if patch_v.is_null() {
            original.remove(&key);
            continue;
        }
        let same_type = original
            .get(&key)
            .map(|orig| type_class(orig) == type_class(&patch_v));
        if same_type != Some(true) {
            // Absent from live, or of another type: take the patch value.
            if !is_delete_list {
                discard_nulls(&mut patch_v);
                match remove_directives(patch_v) {
                    Some(v) => {
                        original.insert(key, v);
                    }
                    None => {
                        original.remove(&key);
                    }
                }
            }
            continue;
        }
        let orig_v = original.remove(&key).unwrap_or(Value::Null);
        let merged = match (orig_v, patch_v) {
            (Value::Object(o), Value::Object(p)) => {
                let field = lookup_struct(schema, &key, &here)?;
                if field.is_some_and(|f| f.replace()) {
                    Value::Object(p)
                } else {
                    Value::Object(merge_map(o, p, field, &here)?)
                }
            }
            (Value::Array(o), Value::Array(p)) => {
                let field = lookup_slice(schema, &key, &here)?;
                let (is_merge, merge_key) = list_meta(field);
                if is_merge || is_delete_list {
                    let items = field.and_then(|f| f.items());
                    merge_slice(o, p, items, &merge_key, is_delete_list, &here)?.0
                } else {
                    Value::Array(p)
                }
            }
            (_, p) => match remove_directives(p) {
                Some(v) => v,
                None => continue,
            },
        };
        original.insert(key, merged);
    }
    Ok(original)
}

fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    at: &str,
) -> Result<()> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(invalid(at, "$retainKeys must be a list of field names"));
    };
    let listed = |k: &str| retain.iter().any(|v| v.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !listed(k) {
            return Err(invalid(
                at,
                format!("field {k:?} is in the patch but not in $retainKeys"),
            ));
        }
    }
    original.retain(|k, _| listed(k));
    Ok(())
}

/// `$setElementOrder/<list>`: merge the list and order it by the directive,
/// server-only elements placed by their live order.
fn merge_ordered_lists(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: Option<Schema<'_>>,
    at: &str,
) -> Result<()> {
    let mut order_keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    order_keys.sort();
    for order_key in order_keys {
        let Some(order) = patch.remove(&order_key) else {
            continue;
        };
        let Value::Array(order) = order else {
            return Err(invalid(at, format!("{order_key} must be a list")));
        };
        let key = extract_key(&order_key, SET_ELEMENT_ORDER, at)?.to_string();
        let here = path::key(at, &key);
        let orig_list = match original.get(&key) {
            None => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(_) => return Err(invalid(&here, "live value is not a list")),
        };
        let patch_list = match patch.get(&key) {
            None => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(_) => return Err(invalid(&here, "patch value is not a list")),
        };
        let field = lookup_slice(schema, &key, &here)?;
        let (is_merge, merge_key) = list_meta(field);
        validate_order(
            patch_list.as_deref().unwrap_or(&[]),
            &order,
            &merge_key,
            &here,
        )?;

        let orig_empty: Vec<Value> = Vec::new();
        let (merged, server_order) = match (&orig_list, &patch_list) {
            (Some(o), None) => (o.clone(), o.clone()),
            (None, Some(p)) => {
                let kept = p.iter().cloned().filter_map(remove_directives).collect();
                (kept, Vec::new())
            }
            (Some(o), Some(p)) => {
                if is_merge {
                    let items = field.and_then(|f| f.items());
                    let (m, view) =
                        merge_slice_vec(o.clone(), p.clone(), items, &merge_key, false, &here)?;
                    (m, view)
                } else {
                    (p.clone(), o.clone())
                }
            }
            (None, None) => continue,
        };

        let (patch_items, server_only) = if merge_key.is_empty() {
            partition_primitives(merged, &order, &here)?
        } else {
            partition_maps(merged, &order, &merge_key, &here)?
        };
        let kind = slice_element_type(
            &[
                orig_list.as_deref().unwrap_or(&orig_empty),
                patch_list.as_deref().unwrap_or(&orig_empty),
            ],
            &here,
        )?;
        let both = normalize_element_order(
            patch_items,
            server_only,
            &order,
            &server_order,
            &merge_key,
            kind,
            &here,
        )?;
        original.insert(key.clone(), Value::Array(both));
        patch.remove(&key);
    }
    Ok(())
}

/// The patch list must follow the relative order of `$setElementOrder`
/// (deletions aside).
fn validate_order(patch_list: &[Value], order: &[Value], merge_key: &str, at: &str) -> Result<()> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<&Value> = if merge_key.is_empty() {
        patch_list.iter().collect()
    } else {
        let mut keep = Vec::new();
        for v in patch_list {
            let Value::Object(m) = v else {
                return Err(invalid(at, "merge list element is not a map"));
            };
            if m.get(PATCH).and_then(Value::as_str) != Some("delete") {
                keep.push(v);
            }
        }
        keep
    };
    let (mut pi, mut oi) = (0, 0);
    while pi < non_delete.len() && oi < order.len() {
        if matches!(non_delete[pi], Value::Object(m) if m.contains_key(PATCH)) {
            pi += 1;
            continue;
        }
        if merge_key_equal(non_delete[pi], &order[oi], merge_key, at)? {
            pi += 1;
        }
        oi += 1;
    }
    if pi < non_delete.len() && oi >= order.len() {
        return Err(invalid(
            at,
            "the order of the patch list does not match its $setElementOrder list",
        ));
    }
    Ok(())
}

fn merge_key_equal(left: &Value, right: &Value, merge_key: &str, at: &str) -> Result<bool> {
    if merge_key.is_empty() {
        return go_eq(left, right, at);
    }
    let l = key_of(left, merge_key, at)?;
    let r = key_of(right, merge_key, at)?;
    go_eq(l, r, at)
}

/// Go's `==` on decoded JSON values, as the API server's strategic merge
/// patch application compares merge keys and list values
/// (`StrategicMergeMapPatch`: `findMapInSliceBasedOnKeyValue`,
/// `mergeSliceWithoutSpecialElements`): it decodes with apimachinery's
/// util/json, which keeps an integer as int64 and makes any other number a
/// float64, so `80 != 80.0` there (a patch keyed 80.0 adds an element
/// beside 80: tests/fixtures/smp/float-merge-key-is-another-key, checked
/// against `kubectl patch --local`; kubectl itself never sends 80.0, Go
/// prints that float64 as 80). serde_json keeps the same distinction
/// (`1` and `1.0` are unequal numbers). The client's side compares as
/// float64: see `merge::strategic`'s `go_eq`. Two maps or two lists cannot
/// be compared (apimachinery panics, the API server answers with an error).
fn go_eq(a: &Value, b: &Value, at: &str) -> Result<bool> {
    match (a, b) {
        (Value::Object(_), Value::Object(_)) | (Value::Array(_), Value::Array(_)) => Err(invalid(
            at,
            "a merge key or list value is a map or list, which cannot be compared",
        )),
        _ => Ok(a == b),
    }
}

/// The merge key value of a list element; an error when it has none.
fn key_of<'v>(v: &'v Value, merge_key: &str, at: &str) -> Result<&'v Value> {
    let Value::Object(m) = v else {
        return Err(invalid(at, format!("list element {v} is not a map")));
    };
    m.get(merge_key).ok_or_else(|| {
        invalid(
            at,
            format!("list element {v} has no merge key {merge_key:?}"),
        )
    })
}

fn merge_slice(
    original: Vec<Value>,
    patch: Vec<Value>,
    items: Option<Schema<'_>>,
    merge_key: &str,
    is_delete_list: bool,
    at: &str,
) -> Result<(Value, Vec<Value>)> {
    let (merged, view) = merge_slice_vec(original, patch, items, merge_key, is_delete_list, at)?;
    Ok((Value::Array(merged), view))
}

/// Merge two lists with patch strategy merge. Returns the merged list and
/// the live list as a caller holding the pre-merge list sees it afterwards:
/// apimachinery deletes elements in place and appends new ones into the
/// freed room, and `$setElementOrder` then orders by that aliased view.
fn merge_slice_vec(
    original: Vec<Value>,
    patch: Vec<Value>,
    items: Option<Schema<'_>>,
    merge_key: &str,
    is_delete_list: bool,
    at: &str,
) -> Result<(Vec<Value>, Vec<Value>)> {
    if original.is_empty() && patch.is_empty() {
        return Ok((original.clone(), original));
    }
    let kind = slice_element_type(&[&original, &patch], at)?;
    let live_len = original.len();

    if kind != TypeClass::Map {
        if is_delete_list {
            let kept = original
                .iter()
                .filter(|v| !patch.contains(v))
                .cloned()
                .collect();
            return Ok((kept, original));
        }
        let mut both = original.clone();
        both.extend(patch.iter().cloned());
        let merged = deduplicate_scalars(both);
        let (patch_items, server_only) = if merge_key.is_empty() {
            partition_primitives(merged, &patch, at)?
        } else {
            partition_maps(merged, &patch, merge_key, at)?
        };
        let out = normalize_element_order(
            patch_items,
            server_only,
            &patch,
            &original,
            merge_key,
            kind,
            at,
        )?;
        return Ok((out, original));
    }

    if merge_key.is_empty() {
        return Err(invalid(
            at,
            "cannot merge a list of maps without a merge key",
        ));
    }
    let live = original.clone();
    let (original, patch, replaced) = merge_special_elements(original, patch, merge_key, at)?;
    let mut merged = original.clone();
    for (i, elem) in patch.iter().enumerate() {
        let here = path::index(at, i);
        let Value::Object(p) = elem else {
            return Err(invalid(&here, "merge list element is not a map"));
        };
        let Some(key_value) = p.get(merge_key) else {
            return Err(invalid(
                &here,
                format!("list element has no merge key {merge_key:?}"),
            ));
        };
        let here = path::element(at, merge_key, key_value);
        match find_by_key(&merged, merge_key, key_value, at)? {
            Some(pos) => {
                let Value::Object(o) = std::mem::take(&mut merged[pos]) else {
                    return Err(invalid(&here, "live list element is not a map"));
                };
                merged[pos] = Value::Object(merge_map(o, p.clone(), items, &here)?);
            }
            None => merged.push(elem.clone()),
        }
    }
    let view = if replaced {
        live
    } else {
        merged[..live_len.min(merged.len())].to_vec()
    };
    let (patch_items, server_only) = partition_maps(merged, &patch, merge_key, at)?;
    let out = normalize_element_order(
        patch_items,
        server_only,
        &patch,
        &original,
        merge_key,
        kind,
        at,
    )?;
    Ok((out, view))
}

/// Handle `$patch` elements of a merge list: deletions by key, `replace`.
/// Returns the live list after deletions (or the replacement), the patch
/// without special elements, and whether the list was replaced.
fn merge_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
    at: &str,
) -> Result<(Vec<Value>, Vec<Value>, bool)> {
    let mut plain = Vec::new();
    let mut replace = false;
    for v in patch {
        let directive = match &v {
            Value::Object(m) => m.get(PATCH).cloned(),
            _ => return Err(invalid(at, "merge list element is not a map")),
        };
        let Some(directive) = directive else {
            plain.push(v);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let Some(key_value) = v.get(merge_key) else {
                    return Err(invalid(
                        at,
                        format!("$patch: delete element has no merge key {merge_key:?}"),
                    ));
                };
                let mut kept = Vec::with_capacity(original.len());
                for o in original {
                    let Value::Object(m) = &o else {
                        return Err(invalid(at, "live list element is not a map"));
                    };
                    if m.get(merge_key) != Some(key_value) {
                        kept.push(o);
                    }
                }
                original = kept;
            }
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(invalid(
                    at,
                    "$patch: merge is not supported on list elements",
                ));
            }
            _ => {
                return Err(invalid(
                    at,
                    format!("unknown patch type {directive} in a list element"),
                ));
            }
        }
    }
    if replace {
        Ok((plain, Vec::new(), true))
    } else {
        Ok((original, plain, false))
    }
}

fn find_by_key(list: &[Value], merge_key: &str, value: &Value, at: &str) -> Result<Option<usize>> {
    for (i, v) in list.iter().enumerate() {
        let Value::Object(m) = v else {
            return Err(invalid(at, format!("list element {i} is not a map")));
        };
        if let Some(k) = m.get(merge_key)
            && go_eq(k, value, at)?
        {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Go's type of a decoded JSON value, as far as list merging cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TypeClass {
    Null,
    Bool,
    Int,
    Float,
    String,
    List,
    Map,
}

fn type_class(v: &Value) -> TypeClass {
    match v {
        Value::Null => TypeClass::Null,
        Value::Bool(_) => TypeClass::Bool,
        Value::Number(n) if n.is_i64() || n.is_u64() => TypeClass::Int,
        Value::Number(_) => TypeClass::Float,
        Value::String(_) => TypeClass::String,
        Value::Array(_) => TypeClass::List,
        Value::Object(_) => TypeClass::Map,
    }
}

/// The common element type of lists; lists of lists, nulls and mixed
/// types are errors.
fn slice_element_type(lists: &[&[Value]], at: &str) -> Result<TypeClass> {
    let mut prev = None;
    for list in lists {
        for v in list.iter() {
            let t = type_class(v);
            match t {
                TypeClass::List => return Err(invalid(at, "lists of lists are not supported")),
                TypeClass::Null => return Err(invalid(at, "null is not allowed in a merged list")),
                _ => {}
            }
            match prev {
                None => prev = Some(t),
                Some(p) if p != t => {
                    return Err(invalid(at, "list elements are not of the same type"));
                }
                Some(_) => {}
            }
        }
    }
    prev.ok_or_else(|| invalid(at, "no elements in any of the lists"))
}

/// Go's `deduplicateScalars`: a later duplicate is replaced by the last
/// element (order is fixed afterwards by normalization).
fn deduplicate_scalars(mut s: Vec<Value>) -> Vec<Value> {
    if s.is_empty() {
        return s;
    }
    let mut length = s.len() - 1;
    let mut i = 0;
    while i < length {
        let mut j = i + 1;
        while j <= length {
            if s[i] == s[j] {
                s[j] = s[length].clone();
                s.truncate(length);
                length -= 1;
                continue;
            }
            j += 1;
        }
        i += 1;
    }
    s
}

fn partition_primitives(
    merged: Vec<Value>,
    by: &[Value],
    at: &str,
) -> Result<(Vec<Value>, Vec<Value>)> {
    // Go builds a set of `by`: maps and lists cannot be set members.
    if by.iter().any(|v| v.is_object() || v.is_array()) {
        return Err(invalid(at, "a primitive list's order holds maps or lists"));
    }
    Ok(merged.into_iter().partition(|v| by.contains(v)))
}

fn partition_maps(
    merged: Vec<Value>,
    by: &[Value],
    merge_key: &str,
    at: &str,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut in_patch = Vec::new();
    let mut server_only = Vec::new();
    for v in merged {
        let key_value = key_of(&v, merge_key, at)?;
        if find_by_key(by, merge_key, key_value, at)?.is_some() {
            in_patch.push(v);
        } else {
            server_only.push(v);
        }
    }
    Ok((in_patch, server_only))
}

/// Sort the patch items by the patch order and the server-only items by the
/// live order, then interleave them by the live order where both are known.
fn normalize_element_order(
    patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: TypeClass,
    at: &str,
) -> Result<Vec<Value>> {
    let patch = normalize_slice_order(patch, patch_order, merge_key, kind, at)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, kind, at)?;
    merge_sorted(server_only, patch, server_order, merge_key, kind, at)
}

fn merge_sorted(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    kind: TypeClass,
    at: &str,
) -> Result<Vec<Value>> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                let li = index_of(server_order, l, merge_key, kind, at)?;
                let ri = index_of(server_order, r, merge_key, kind, at)?;
                matches!((li, ri), (Some(li), Some(ri)) if li < ri)
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    Ok(out)
}

/// Position of an item in a list: by merge key for maps, by value otherwise.
fn index_of(
    list: &[Value],
    item: &Value,
    merge_key: &str,
    kind: TypeClass,
    at: &str,
) -> Result<Option<usize>> {
    // For maps compare merge key values; a missing key (or a non-map item)
    // reads as Go's nil, like a null.
    let key = |v: &Value| -> Value {
        match v {
            Value::Object(m) if kind == TypeClass::Map => {
                m.get(merge_key).cloned().unwrap_or(Value::Null)
            }
            _ if kind == TypeClass::Map => Value::Null,
            other => other.clone(),
        }
    };
    let wanted = key(item);
    for (i, v) in list.iter().enumerate() {
        if go_eq(&key(v), &wanted, at)? {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: TypeClass,
    at: &str,
) -> Result<Vec<Value>> {
    let (to_sort, to_delete) = if kind == TypeClass::Map {
        for v in to_sort.iter().chain(order.iter()) {
            key_of(v, merge_key, at)?;
        }
        to_sort
            .into_iter()
            .partition::<Vec<Value>, _>(|v| v.get(PATCH).and_then(Value::as_str) != Some("delete"))
    } else {
        (to_sort, Vec::new())
    };
    // The comparator only depends on each item's position in `order`.
    let mut keyed = Vec::with_capacity(to_sort.len());
    for v in to_sort {
        let pos = index_of(order, &v, merge_key, kind, at)?;
        keyed.push((pos, v));
    }
    // It is not a strict order (unknown items compare "less"), so the result
    // depends on the algorithm: use Go's stable sort.
    let less = |a: &(Option<usize>, Value), b: &(Option<usize>, Value)| -> bool {
        match (a.0, b.0) {
            (Some(ia), Some(ib)) => ia < ib,
            _ => true,
        }
    };
    go_stable_sort(&mut keyed, &less);
    let mut sorted: Vec<Value> = keyed.into_iter().map(|(_, v)| v).collect();
    sorted.extend(to_delete);
    Ok(sorted)
}

/// Go's `sort.SliceStable`: insertion sort on blocks of 20, then
/// symmetric merges. Reproduced step by step because apimachinery's
/// comparator is not a strict weak order.
fn go_stable_sort<T>(data: &mut [T], less: &dyn Fn(&T, &T) -> bool) {
    let n = data.len();
    let mut block = 20;
    let (mut a, mut b) = (0, block);
    while b <= n {
        insertion_sort(data, a, b, less);
        a = b;
        b += block;
    }
    insertion_sort(data, a, n, less);
    while block < n {
        a = 0;
        b = 2 * block;
        while b <= n {
            sym_merge(data, a, a + block, b, less);
            a = b;
            b += 2 * block;
        }
        let m = a + block;
        if m < n {
            sym_merge(data, a, m, n, less);
        }
        block *= 2;
    }
}

fn insertion_sort<T>(data: &mut [T], a: usize, b: usize, less: &dyn Fn(&T, &T) -> bool) {
    for i in a + 1..b {
        let mut j = i;
        while j > a && less(&data[j], &data[j - 1]) {
            data.swap(j, j - 1);
            j -= 1;
        }
    }
}

fn sym_merge<T>(data: &mut [T], a: usize, m: usize, b: usize, less: &dyn Fn(&T, &T) -> bool) {
    if m - a == 1 {
        let (mut i, mut j) = (m, b);
        while i < j {
            let h = (i + j) / 2;
            if less(&data[h], &data[a]) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = a;
        while k + 1 < i {
            data.swap(k, k + 1);
            k += 1;
        }
        return;
    }
    if b - m == 1 {
        let (mut i, mut j) = (a, m);
        while i < j {
            let h = (i + j) / 2;
            if !less(&data[m], &data[h]) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = m;
        while k > i {
            data.swap(k, k - 1);
            k -= 1;
        }
        return;
    }
    let mid = (a + b) / 2;
    let n = mid + m;
    let (mut start, mut r) = if m > mid { (n - b, mid) } else { (a, m) };
    let p = n - 1;
    while start < r {
        let c = (start + r) / 2;
        if !less(&data[p - c], &data[c]) {
            start = c + 1;
        } else {
            r = c;
        }
    }
    let end = n - start;
    if start < m && m < end {
        rotate(data, start, m, end);
    }
    if a < start && start < mid {
        sym_merge(data, a, start, mid, less);
    }
    if mid < end && end < b {
        sym_merge(data, mid, end, b, less);
    }
}

fn rotate<T>(data: &mut [T], a: usize, m: usize, b: usize) {
    let mut i = m - a;
    let mut j = b - m;
    while i != j {
        if i > j {
            swap_range(data, m - i, m, j);
            i -= j;
        } else {
            swap_range(data, m - i, m + j - i, i);
            j -= i;
        }
    }
    swap_range(data, m - i, m, i);
}

fn swap_range<T>(data: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        data.swap(a + i, b + i);
    }
}

/// Drop map members that are null, recursively (list elements stay).
fn discard_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(discard_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

/// Remove maps carrying `$patch` from a value taken from the patch whole;
/// `None` when the value itself is such a map.
fn remove_directives(v: Value) -> Option<Value> {
    match v {
        Value::Object(m) => {
            if m.contains_key(PATCH) {
                return None;
            }
            let kept = m
                .into_iter()
                .filter_map(|(k, v)| remove_directives(v).map(|v| (k, v)))
                .collect();
            Some(Value::Object(kept))
        }
        Value::Array(a) => Some(Value::Array(
            a.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patchmeta::PatchMeta;
    use serde_json::json;

    fn deployment() -> Option<Schema<'static>> {
        PatchMeta::builtin().root("apps/v1", "Deployment")
    }

    #[test]
    fn merges_containers_by_name_and_keeps_server_fields() {
        let live = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "a:1", "imagePullPolicy": "Always"},
            {"name": "b", "image": "b:1"}
        ]}}}});
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "c"}],
            "containers": [
                {"name": "a", "image": "a:2"},
                {"name": "c", "image": "c:1"},
                {"name": "b", "$patch": "delete"}
            ]
        }}}});
        let out = apply_strategic(&live, &patch, deployment()).unwrap();
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"],
            json!([
                {"name": "a", "image": "a:2", "imagePullPolicy": "Always"},
                {"name": "c", "image": "c:1"}
            ])
        );
    }

    #[test]
    fn null_deletes_and_retain_keys_drops_unlisted() {
        let live = json!({"spec": {"minReadySeconds": 5, "strategy": {
            "type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}}}});
        let patch = json!({"spec": {"minReadySeconds": null, "strategy": {
            "$retainKeys": ["type"], "type": "Recreate"}}});
        let out = apply_strategic(&live, &patch, deployment()).unwrap();
        assert_eq!(out, json!({"spec": {"strategy": {"type": "Recreate"}}}));
    }

    #[test]
    fn primitive_merge_list_puts_server_values_last() {
        let live = json!({"metadata": {"finalizers": ["x", "a"]}});
        let patch = json!({"metadata": {"finalizers": ["b"]}});
        let out = apply_strategic(&live, &patch, deployment()).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["b", "x", "a"]));
        let patch = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}});
        let out = apply_strategic(&live, &patch, deployment()).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["a"]));
    }

    #[test]
    fn bad_patches_are_errors() {
        let live = json!({"spec": {"strategy": {"type": "Recreate"},
            "template": {"spec": {"containers": [{"name": "a"}]}}}});
        for patch in [
            json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "$patch": "bogus"}]}}}}),
            json!({"spec": {"$patch": "merge"}}),
            json!({"spec": {"strategy": {"$retainKeys": "type"}}}),
            json!({"spec": {"$setElementOrder/x": {}}}),
            json!([1]),
        ] {
            assert!(
                apply_strategic(&live, &patch, deployment()).is_err(),
                "{patch}"
            );
        }
    }

    #[test]
    fn merge_patch_follows_rfc7386() {
        let live = json!({"a": 1, "b": {"c": 2, "d": 3}, "l": [1, 2]});
        let patch =
            json!({"a": null, "b": {"c": null, "e": 4}, "l": [3], "n": {"x": null, "y": 1}});
        assert_eq!(
            apply_merge(&live, &patch),
            json!({"b": {"d": 3, "e": 4}, "l": [3], "n": {"y": 1}})
        );
    }

    #[test]
    fn go_stable_sort_matches_a_stable_sort_for_a_strict_order() {
        let mut v: Vec<(u32, usize)> = (0..57).map(|i| ((i * 7919 % 13) as u32, i)).collect();
        let mut expected = v.clone();
        expected.sort_by_key(|p| p.0);
        go_stable_sort(&mut v, &|a, b| a.0 < b.0);
        assert_eq!(v, expected);
    }
}
