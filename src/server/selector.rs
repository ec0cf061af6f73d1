//! Label and field selectors of LIST requests.

use serde_json::Value;
use std::collections::BTreeMap;

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Requirement::Eq(k, v) => labels.get(k) == Some(v),
            // Like Kubernetes: `!=` also matches objects without the label.
            Requirement::NotEq(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|l| vs.contains(l)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|l| !vs.contains(l)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
        }
    }
}

/// A parsed label selector: all requirements must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(pub Vec<Requirement>);

/// Split on commas outside parentheses.
fn split_top(s: &str) -> Result<Vec<String>, String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => {
                depth += 1;
                cur.push(c);
            }
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("unbalanced parenthesis in selector {s:?}"));
                }
                cur.push(c);
            }
            ',' if depth == 0 => parts.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced parenthesis in selector {s:?}"));
    }
    parts.push(cur);
    Ok(parts)
}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 316
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn valid_value(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn parse_set(rest: &str) -> Result<Vec<String>, String> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("expected (values), found {rest:?}"))?;
    let vals: Vec<String> = inner
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    if let Some(bad) = vals.iter().find(|v| !valid_value(v)) {
        return Err(format!("invalid label value: {bad:?}"));
    }
    Ok(vals)
}

impl LabelSelector {
    /// Selects everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn parse(s: &str) -> Result<LabelSelector, String> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(LabelSelector(reqs));
        }
        for part in split_top(s)? {
            let p = part.trim();
            if p.is_empty() {
                return Err(format!("empty requirement in selector {s:?}"));
            }
            let req = if let Some(k) = p.strip_prefix('!') {
                Requirement::NotExists(k.trim().to_string())
            } else if let Some((k, v)) = p.split_once("!=") {
                Requirement::NotEq(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = p.split_once("==") {
                Requirement::Eq(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = p.split_once('=') {
                Requirement::Eq(k.trim().into(), v.trim().into())
            } else if let Some((k, rest)) = split_word(p, "notin") {
                Requirement::NotIn(k, parse_set(rest)?)
            } else if let Some((k, rest)) = split_word(p, "in") {
                Requirement::In(k, parse_set(rest)?)
            } else {
                Requirement::Exists(p.to_string())
            };
            let (key, value) = match &req {
                Requirement::Eq(k, v) | Requirement::NotEq(k, v) => (k, Some(v)),
                Requirement::In(k, _)
                | Requirement::NotIn(k, _)
                | Requirement::Exists(k)
                | Requirement::NotExists(k) => (k, None),
            };
            if !valid_key(key) {
                return Err(format!("invalid label key {key:?} in selector {s:?}"));
            }
            if let Some(v) = value
                && !valid_value(v)
            {
                return Err(format!("invalid label value {v:?} in selector {s:?}"));
            }
            reqs.push(req);
        }
        Ok(LabelSelector(reqs))
    }

    pub fn matches(&self, obj: &Value) -> bool {
        let labels: BTreeMap<String, String> = obj["metadata"]["labels"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        self.0.iter().all(|r| r.matches(&labels))
    }
}

/// `key in (a,b)` / `key notin (a)`: the operator as a whole word.
fn split_word<'a>(p: &'a str, word: &str) -> Option<(String, &'a str)> {
    let paren = p.find('(')?;
    let head = p[..paren].trim_end();
    let key = head.strip_suffix(word)?;
    if !key.ends_with(char::is_whitespace) {
        return None;
    }
    Some((key.trim().to_string(), &p[paren..]))
}

/// A field selector over `metadata.name` and `metadata.namespace`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Selects everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn parse(s: &str) -> Result<FieldSelector, String> {
        let mut out = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector(out));
        }
        for part in s.split(',') {
            let (field, eq, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, true, v)
            } else {
                return Err(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                ));
            };
            let field = field.trim();
            if field != "metadata.name" && field != "metadata.namespace" {
                return Err(format!("field label not supported: {field}"));
            }
            out.push((field.to_string(), eq, value.trim().to_string()));
        }
        Ok(FieldSelector(out))
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(field, eq, value)| {
            let actual = match field.as_str() {
                "metadata.name" => obj["metadata"]["name"].as_str().unwrap_or_default(),
                _ => obj["metadata"]["namespace"].as_str().unwrap_or_default(),
            };
            (actual == value) == *eq
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": labels}})
    }

    #[test]
    fn label_operators() {
        let o = obj(json!({"app": "nginx", "tier": "web"}));
        let m = |s: &str| LabelSelector::parse(s).unwrap().matches(&o);
        assert!(m("app=nginx"));
        assert!(m("app==nginx,tier"));
        assert!(!m("app!=nginx"));
        assert!(m("app in (nginx, redis)"));
        assert!(!m("app notin (nginx)"));
        assert!(m("tier notin (db),!missing"));
        assert!(!m("!app"));
        assert!(m("missing!=x"));
        assert!(!m("missing in (x)"));
        assert!(m(""));
        assert!(LabelSelector::parse("app in (a").is_err());
        assert!(LabelSelector::parse("a b c=d").is_err());
    }

    #[test]
    fn field_selectors() {
        let o = obj(json!({}));
        let m = |s: &str| FieldSelector::parse(s).unwrap().matches(&o);
        assert!(m("metadata.name=a"));
        assert!(m("metadata.namespace!=other,metadata.name==a"));
        assert!(!m("metadata.name=b"));
        assert!(FieldSelector::parse("spec.x=1").is_err());
    }
}
