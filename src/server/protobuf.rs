//! Just enough of the Kubernetes protobuf encoding to accept what
//! `kubectl create namespace|configmap|secret|serviceaccount|deployment` send: kubectl's
//! typed clients write `application/vnd.kubernetes.protobuf` and do not fall
//! back to JSON. Other kinds answer 415.

use serde_json::{Map, Value, json};

/// One protobuf field: number and payload.
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn fields(buf: &[u8]) -> Option<Vec<(u64, Field<'_>)>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let tag = varint(buf, &mut pos)?;
        let (num, wire) = (tag >> 3, tag & 7);
        let f = match wire {
            0 => Field::Varint(varint(buf, &mut pos)?),
            1 => {
                pos = pos.checked_add(8)?;
                continue;
            }
            2 => {
                let len = usize::try_from(varint(buf, &mut pos)?).ok()?;
                let end = pos.checked_add(len)?;
                let b = buf.get(pos..end)?;
                pos = end;
                Field::Bytes(b)
            }
            5 => {
                pos = pos.checked_add(4)?;
                continue;
            }
            _ => return None,
        };
        out.push((num, f));
    }
    if pos > buf.len() {
        return None;
    }
    Some(out)
}

fn string(b: &[u8]) -> Option<String> {
    String::from_utf8(b.to_vec()).ok()
}

/// A map<string,string> entry (or map<string,bytes> with `bytes_b64`).
fn entry(b: &[u8], bytes_b64: bool) -> Option<(String, Value)> {
    let mut k = String::new();
    let mut v = Value::String(String::new());
    for (n, f) in fields(b)? {
        if let Field::Bytes(x) = f {
            match n {
                1 => k = string(x)?,
                2 if bytes_b64 => v = json!(crate::gocompat::encode_bytes(x)),
                2 => v = json!(string(x)?),
                _ => {}
            }
        }
    }
    Some((k, v))
}

fn object_meta(b: &[u8]) -> Option<Value> {
    let mut m = Map::new();
    let mut labels = Map::new();
    let mut annotations = Map::new();
    for (n, f) in fields(b)? {
        match (n, f) {
            (1, Field::Bytes(x)) if !x.is_empty() => {
                m.insert("name".into(), json!(string(x)?));
            }
            (2, Field::Bytes(x)) if !x.is_empty() => {
                m.insert("generateName".into(), json!(string(x)?));
            }
            (3, Field::Bytes(x)) if !x.is_empty() => {
                m.insert("namespace".into(), json!(string(x)?));
            }
            (11, Field::Bytes(x)) => {
                let (k, v) = entry(x, false)?;
                labels.insert(k, v);
            }
            (12, Field::Bytes(x)) => {
                let (k, v) = entry(x, false)?;
                annotations.insert(k, v);
            }
            _ => {}
        }
    }
    if !labels.is_empty() {
        m.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        m.insert("annotations".into(), Value::Object(annotations));
    }
    Some(Value::Object(m))
}

/// What `kubectl create deployment` sets; zero values of non-pointer
/// fields are dropped as Go's `omitempty` would.
fn deployment_spec(b: &[u8]) -> Option<Value> {
    let mut spec = Map::new();
    for (n, f) in fields(b)? {
        match (n, f) {
            (1, Field::Varint(v)) => {
                spec.insert("replicas".into(), json!(v as i32));
            }
            (2, Field::Bytes(x)) => {
                let mut labels = Map::new();
                for (ln, lf) in fields(x)? {
                    if let (1, Field::Bytes(e)) = (ln, lf) {
                        let (k, v) = entry(e, false)?;
                        labels.insert(k, v);
                    }
                }
                spec.insert("selector".into(), json!({"matchLabels": labels}));
            }
            (3, Field::Bytes(x)) => {
                let mut t = Map::new();
                for (tn, tf) in fields(x)? {
                    match (tn, tf) {
                        (1, Field::Bytes(m)) => {
                            t.insert("metadata".into(), object_meta(m)?);
                        }
                        (2, Field::Bytes(ps)) => {
                            t.insert("spec".into(), pod_spec(ps)?);
                        }
                        _ => {}
                    }
                }
                spec.insert("template".into(), Value::Object(t));
            }
            (4, Field::Bytes(x)) => {
                let mut st = Map::new();
                for (sn, sf) in fields(x)? {
                    if let (1, Field::Bytes(t)) = (sn, sf)
                        && !t.is_empty()
                    {
                        st.insert("type".into(), json!(string(t)?));
                    }
                }
                spec.insert("strategy".into(), Value::Object(st));
            }
            (5, Field::Varint(v)) if v != 0 => {
                spec.insert("minReadySeconds".into(), json!(v as i32));
            }
            (6, Field::Varint(v)) => {
                spec.insert("revisionHistoryLimit".into(), json!(v as i32));
            }
            (9, Field::Varint(v)) => {
                spec.insert("progressDeadlineSeconds".into(), json!(v as i32));
            }
            _ => {}
        }
    }
    Some(Value::Object(spec))
}

fn pod_spec(b: &[u8]) -> Option<Value> {
    let mut spec = Map::new();
    let mut containers = Vec::new();
    for (n, f) in fields(b)? {
        match (n, f) {
            (2, Field::Bytes(x)) => containers.push(container(x)?),
            (3, Field::Bytes(x)) if !x.is_empty() => {
                spec.insert("restartPolicy".into(), json!(string(x)?));
            }
            (6, Field::Bytes(x)) if !x.is_empty() => {
                spec.insert("dnsPolicy".into(), json!(string(x)?));
            }
            _ => {}
        }
    }
    spec.insert("containers".into(), Value::Array(containers));
    Some(Value::Object(spec))
}

fn container(b: &[u8]) -> Option<Value> {
    let mut c = Map::new();
    let (mut command, mut args, mut ports) = (Vec::new(), Vec::new(), Vec::new());
    for (n, f) in fields(b)? {
        let Field::Bytes(x) = f else {
            continue;
        };
        match n {
            1 => {
                c.insert("name".into(), json!(string(x)?));
            }
            2 if !x.is_empty() => {
                c.insert("image".into(), json!(string(x)?));
            }
            3 => command.push(json!(string(x)?)),
            4 => args.push(json!(string(x)?)),
            6 => {
                let mut p = Map::new();
                for (pn, pf) in fields(x)? {
                    match (pn, pf) {
                        (1, Field::Bytes(s)) if !s.is_empty() => {
                            p.insert("name".into(), json!(string(s)?));
                        }
                        (3, Field::Varint(v)) => {
                            p.insert("containerPort".into(), json!(v as i32));
                        }
                        (4, Field::Bytes(s)) if !s.is_empty() => {
                            p.insert("protocol".into(), json!(string(s)?));
                        }
                        _ => {}
                    }
                }
                ports.push(Value::Object(p));
            }
            8 => {
                c.insert("resources".into(), json!({}));
            }
            _ => {}
        }
    }
    for (k, v) in [("command", command), ("args", args), ("ports", ports)] {
        if !v.is_empty() {
            c.insert(k.into(), Value::Array(v));
        }
    }
    Some(Value::Object(c))
}

/// Decode a `k8s\0`-prefixed protobuf object of a supported kind into JSON.
pub fn decode(body: &[u8]) -> Result<Value, String> {
    let rest = body
        .strip_prefix(b"k8s\0")
        .ok_or("protobuf body without the k8s magic prefix")?;
    let bad = || "malformed protobuf".to_string();
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    for (n, f) in fields(rest).ok_or_else(bad)? {
        match (n, f) {
            (1, Field::Bytes(tm)) => {
                for (tn, tf) in fields(tm).ok_or_else(bad)? {
                    if let Field::Bytes(x) = tf {
                        match tn {
                            1 => api_version = string(x).ok_or_else(bad)?,
                            2 => kind = string(x).ok_or_else(bad)?,
                            _ => {}
                        }
                    }
                }
            }
            (2, Field::Bytes(x)) => raw = x,
            _ => {}
        }
    }
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), json!(api_version));
    obj.insert("kind".into(), json!(kind));
    let mut data = Map::new();
    let mut binary = Map::new();
    let mut string_data = Map::new();
    if (api_version.as_str(), kind.as_str()) == ("apps/v1", "Deployment") {
        for (n, f) in fields(raw).ok_or_else(bad)? {
            match (n, f) {
                (1, Field::Bytes(x)) => {
                    obj.insert("metadata".into(), object_meta(x).ok_or_else(bad)?);
                }
                (2, Field::Bytes(x)) => {
                    obj.insert("spec".into(), deployment_spec(x).ok_or_else(bad)?);
                }
                _ => {}
            }
        }
        return Ok(Value::Object(obj));
    }
    let supported = matches!(
        (api_version.as_str(), kind.as_str()),
        (
            "v1",
            "Namespace" | "ConfigMap" | "Secret" | "ServiceAccount"
        )
    );
    if !supported {
        return Err(format!(
            "protobuf is only understood for Namespace, ConfigMap, Secret, ServiceAccount and Deployment, not {api_version} {kind}; send JSON"
        ));
    }
    for (n, f) in fields(raw).ok_or_else(bad)? {
        match (kind.as_str(), n, f) {
            (_, 1, Field::Bytes(x)) => {
                obj.insert("metadata".into(), object_meta(x).ok_or_else(bad)?);
            }
            ("ConfigMap", 2, Field::Bytes(x)) => {
                let (k, v) = entry(x, false).ok_or_else(bad)?;
                data.insert(k, v);
            }
            ("ConfigMap", 3, Field::Bytes(x)) | ("Secret", 2, Field::Bytes(x)) => {
                let (k, v) = entry(x, true).ok_or_else(bad)?;
                if kind == "Secret" {
                    data.insert(k, v);
                } else {
                    binary.insert(k, v);
                }
            }
            ("ConfigMap", 4, Field::Varint(v)) | ("Secret", 5, Field::Varint(v)) => {
                obj.insert("immutable".into(), json!(v != 0));
            }
            ("Secret", 3, Field::Bytes(x)) if !x.is_empty() => {
                obj.insert("type".into(), json!(string(x).ok_or_else(bad)?));
            }
            ("Secret", 4, Field::Bytes(x)) => {
                let (k, v) = entry(x, false).ok_or_else(bad)?;
                string_data.insert(k, v);
            }
            ("ServiceAccount", 4, Field::Varint(v)) => {
                obj.insert("automountServiceAccountToken".into(), json!(v != 0));
            }
            _ => {}
        }
    }
    for (key, m) in [
        ("data", data),
        ("binaryData", binary),
        ("stringData", string_data),
    ] {
        if !m.is_empty() {
            obj.insert(key.into(), Value::Object(m));
        }
    }
    Ok(Value::Object(obj))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: u64, b: &[u8]) -> Vec<u8> {
        let mut out = vec![((n << 3) | 2) as u8, b.len() as u8];
        out.extend_from_slice(b);
        out
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(tail in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let body = [b"k8s\0".to_vec(), tail].concat();
            let _ = decode(&body);
        }

        #[test]
        fn nested_garbage_never_panics(raw in proptest::collection::vec(proptest::num::u8::ANY, 0..120),
                                       kind in proptest::sample::select(vec!["Deployment", "ConfigMap", "Secret"])) {
            let api_version = if kind == "Deployment" { "apps/v1" } else { "v1" };
            let tm = [field(1, api_version.as_bytes()), field(2, kind.as_bytes())].concat();
            let body = [b"k8s\0".to_vec(), field(1, &tm), field(2, &raw[..raw.len().min(120)])].concat();
            let _ = decode(&body);
        }
    }

    #[test]
    fn decodes_a_configmap() {
        let meta = [
            field(1, b"cm"),
            field(11, &[field(1, b"a"), field(2, b"b")].concat()),
        ]
        .concat();
        let raw = [
            field(1, &meta),
            field(2, &[field(1, b"k"), field(2, b"v")].concat()),
        ]
        .concat();
        let tm = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
        let body = [b"k8s\0".to_vec(), field(1, &tm), field(2, &raw)].concat();
        let v = decode(&body).unwrap();
        assert_eq!(
            v,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cm", "labels": {"a": "b"}}, "data": {"k": "v"}})
        );
        assert!(decode(b"k8s\0\xff\xff").is_err());
        assert!(decode(b"nope").is_err());
    }
}
