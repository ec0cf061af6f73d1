//! Label selectors as `-l` takes them, to filter manifests the way kubectl
//! does (the server filters LISTs itself). Equality (`a=b`, `a==b`, `a!=b`),
//! existence (`a`, `!a`) and set (`a in (x,y)`, `a notin (x)`) requirements,
//! comma-separated, all must hold.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelSelector {
    text: String,
    requirements: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid label selector {selector:?}: {message}")]
pub struct SelectorError {
    pub selector: String,
    pub message: String,
}

impl LabelSelector {
    pub fn parse(text: &str) -> Result<LabelSelector, SelectorError> {
        let err = |message: &str| SelectorError {
            selector: text.to_string(),
            message: message.to_string(),
        };
        let mut requirements = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let req = if let Some((k, v)) = part.split_once("!=") {
                Requirement::NotEquals(key(k).ok_or_else(|| err("empty key"))?, v.trim().into())
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                Requirement::Equals(key(k).ok_or_else(|| err("empty key"))?, v.trim().into())
            } else if let Some(k) = part.strip_prefix('!') {
                Requirement::NotExists(key(k).ok_or_else(|| err("empty key"))?)
            } else if let Some((k, rest)) = split_word(part, " notin ") {
                Requirement::NotIn(
                    key(k).ok_or_else(|| err("empty key"))?,
                    values(rest).ok_or_else(|| err("expected (values)"))?,
                )
            } else if let Some((k, rest)) = split_word(part, " in ") {
                Requirement::In(
                    key(k).ok_or_else(|| err("empty key"))?,
                    values(rest).ok_or_else(|| err("expected (values)"))?,
                )
            } else if part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
            {
                Requirement::Exists(part.to_string())
            } else {
                return Err(err(&format!("cannot parse {part:?}")));
            };
            requirements.push(req);
        }
        Ok(LabelSelector {
            text: text.to_string(),
            requirements,
        })
    }

    /// Does an object (its `metadata.labels`) match?
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object
            .pointer("/metadata/labels")
            .and_then(Value::as_object);
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.requirements.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
        })
    }

    /// The selector as given (sent as `labelSelector`).
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

fn key(k: &str) -> Option<String> {
    let k = k.trim();
    (!k.is_empty()).then(|| k.to_string())
}

fn values(rest: &str) -> Option<Vec<String>> {
    let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(
        inner
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect(),
    )
}

fn split_word<'a>(part: &'a str, word: &str) -> Option<(&'a str, &'a str)> {
    part.find(word)
        .map(|i| (&part[..i], &part[i + word.len()..]))
}

/// Split on commas outside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"labels": labels}})
    }

    #[test]
    fn equality_and_existence() {
        let s = LabelSelector::parse("app=demo,tier!=db,!legacy").unwrap();
        assert!(s.matches(&obj(json!({"app": "demo", "tier": "web"}))));
        assert!(!s.matches(&obj(json!({"app": "demo", "tier": "db"}))));
        assert!(!s.matches(&obj(json!({"app": "demo", "legacy": "1"}))));
        assert!(!s.matches(&json!({"metadata": {}})));
    }

    #[test]
    fn set_based() {
        let s = LabelSelector::parse("env in (prod, staging),team notin (x),app").unwrap();
        assert!(s.matches(&obj(json!({"env": "prod", "app": "a"}))));
        assert!(!s.matches(&obj(json!({"env": "dev", "app": "a"}))));
        assert!(!s.matches(&obj(json!({"env": "prod", "team": "x", "app": "a"}))));
        assert!(LabelSelector::parse("a in x").is_err());
    }
}
