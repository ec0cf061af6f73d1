//! Label selectors, parsed and validated as Kubernetes does
//! (apimachinery's `labels.Parse`, which kubectl's `-l` and the API server
//! both use): the same grammar, the same key and value rules, the same
//! words in errors. One implementation for the client (`-l`, prune) and the
//! embedded API server (`labelSelector` of LIST and WATCH). No I/O.
//!
//! Grammar: comma-separated requirements, all of which must hold: `key`,
//! `!key`, `key=value` (`==`), `key!=value`, `key in (a,b)`,
//! `key notin (a)`, `key>1`, `key<1`. A key is a qualified name (an
//! optional DNS subdomain prefix and `/`, then at most 63 characters); a
//! value is a label value (empty, or at most 63 characters).

use serde_json::Value;

/// One requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    Exists(String),
    NotExists(String),
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    GreaterThan(String, i64),
    LessThan(String, i64),
}

impl Requirement {
    fn matches(&self, label: impl Fn(&str) -> Option<String>) -> bool {
        match self {
            Requirement::Exists(k) => label(k).is_some(),
            Requirement::NotExists(k) => label(k).is_none(),
            Requirement::Equals(k, v) => label(k).as_ref() == Some(v),
            // As Kubernetes: `!=` and `notin` also match objects without the label.
            Requirement::NotEquals(k, v) => label(k).as_ref() != Some(v),
            Requirement::In(k, vs) => label(k).is_some_and(|l| vs.contains(&l)),
            Requirement::NotIn(k, vs) => label(k).is_none_or(|l| !vs.contains(&l)),
            Requirement::GreaterThan(k, n) => label(k)
                .and_then(|l| l.parse::<i64>().ok())
                .is_some_and(|l| l > *n),
            Requirement::LessThan(k, n) => label(k)
                .and_then(|l| l.parse::<i64>().ok())
                .is_some_and(|l| l < *n),
        }
    }
}

/// A parsed label selector; the empty one matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    text: String,
    requirements: Vec<Requirement>,
}

/// A selector Kubernetes would refuse; `message` is the parser's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the provided selector {selector:?} is not valid: {message}")]
pub struct SelectorError {
    pub selector: String,
    pub message: String,
}

impl LabelSelector {
    pub fn parse(text: &str) -> Result<LabelSelector, SelectorError> {
        let requirements = Parser {
            tokens: lex(text),
            at: 0,
        }
        .parse()
        .map_err(|message| SelectorError {
            selector: text.to_string(),
            message,
        })?;
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
        let label = |k: &str| {
            labels
                .and_then(|l| l.get(k))
                .map(|v| v.as_str().unwrap_or_default().to_string())
        };
        self.requirements.iter().all(|r| r.matches(label))
    }

    /// Selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The selector as given (sent as `labelSelector`).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    End,
    Ident,
    In,
    NotIn,
    Not,
    Equals,
    DoubleEquals,
    NotEquals,
    Greater,
    Less,
    Open,
    Close,
    Comma,
}

fn special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn symbol(s: &str) -> Option<Tok> {
    Some(match s {
        "!" => Tok::Not,
        "!=" => Tok::NotEquals,
        "=" => Tok::Equals,
        "==" => Tok::DoubleEquals,
        ">" => Tok::Greater,
        "<" => Tok::Less,
        "(" => Tok::Open,
        ")" => Tok::Close,
        "," => Tok::Comma,
        _ => return None,
    })
}

/// Tokens as apimachinery's lexer cuts them: runs of special characters
/// (longest known symbol first), identifiers up to whitespace or a special
/// character, `in` and `notin` as keywords.
fn lex(text: &str) -> Vec<(Tok, String)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < chars.len() && matches!(chars[i], ' ' | '\t' | '\r' | '\n') {
            i += 1;
        }
        // Go strings end at a NUL for this lexer.
        if i >= chars.len() || chars[i] == '\0' {
            out.push((Tok::End, String::new()));
            return out;
        }
        if special(chars[i]) {
            let mut buffer = String::new();
            let mut last: Option<(Tok, String)> = None;
            while i < chars.len() && special(chars[i]) {
                buffer.push(chars[i]);
                match symbol(&buffer) {
                    Some(t) => last = Some((t, buffer.clone())),
                    None if last.is_some() => break,
                    None => {}
                }
                i += 1;
            }
            // Every single special character is a symbol, so `last` is set.
            out.push(last.unwrap_or((Tok::Comma, buffer)));
        } else {
            let start = i;
            while i < chars.len()
                && !special(chars[i])
                && !matches!(chars[i], ' ' | '\t' | '\r' | '\n' | '\0')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let tok = match word.as_str() {
                "in" => Tok::In,
                "notin" => Tok::NotIn,
                _ => Tok::Ident,
            };
            out.push((tok, word));
        }
    }
}

struct Parser {
    tokens: Vec<(Tok, String)>,
    at: usize,
}

impl Parser {
    /// The next token; in a value position `in` and `notin` are identifiers.
    fn peek(&self, values: bool) -> (Tok, String) {
        let (t, s) = self.tokens[self.at.min(self.tokens.len() - 1)].clone();
        match t {
            Tok::In | Tok::NotIn if values => (Tok::Ident, s),
            t => (t, s),
        }
    }

    fn next(&mut self, values: bool) -> (Tok, String) {
        let t = self.peek(values);
        if self.at < self.tokens.len() - 1 {
            self.at += 1;
        }
        t
    }

    fn parse(mut self) -> Result<Vec<Requirement>, String> {
        let mut out = Vec::new();
        loop {
            let (t, lit) = self.peek(true);
            match t {
                Tok::Ident | Tok::Not => {
                    let r = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    out.push(r);
                    let (t, lit) = self.next(true);
                    match t {
                        Tok::End => return Ok(out),
                        Tok::Comma => {
                            let (t2, lit2) = self.peek(true);
                            if !matches!(t2, Tok::Ident | Tok::Not) {
                                return Err(format!(
                                    "found '{lit2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!("found '{lit}', expected: ',' or 'end of string'"));
                        }
                    }
                }
                Tok::End => return Ok(out),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (mut t, mut key) = self.next(true);
        let negated = t == Tok::Not;
        if negated {
            (t, key) = self.next(true);
        }
        if t != Tok::Ident {
            return Err(format!("found '{key}', expected: identifier"));
        }
        validate_key(&key)?;
        let (after, _) = self.peek(true);
        if negated {
            return Ok(Requirement::NotExists(key));
        }
        if matches!(after, Tok::End | Tok::Comma) {
            return Ok(Requirement::Exists(key));
        }
        let (op, lit) = self.next(false);
        match op {
            Tok::In | Tok::NotIn => {
                let values = self.set()?;
                check_values(&key, &values)?;
                Ok(if op == Tok::In {
                    Requirement::In(key, values)
                } else {
                    Requirement::NotIn(key, values)
                })
            }
            Tok::Equals | Tok::DoubleEquals | Tok::NotEquals => {
                let v = self.exact()?;
                check_values(&key, std::slice::from_ref(&v))?;
                Ok(if op == Tok::NotEquals {
                    Requirement::NotEquals(key, v)
                } else {
                    Requirement::Equals(key, v)
                })
            }
            Tok::Greater | Tok::Less => {
                let v = self.exact()?;
                let n = v.parse::<i64>().map_err(|_| {
                    format!(
                        "values[0]: Invalid value: {v:?}: for 'Gt', 'Lt' operators, the value \
                         must be an integer"
                    )
                })?;
                check_values(&key, std::slice::from_ref(&v))?;
                Ok(if op == Tok::Greater {
                    Requirement::GreaterThan(key, n)
                } else {
                    Requirement::LessThan(key, n)
                })
            }
            _ => Err(format!(
                "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
            )),
        }
    }

    /// The value after `=`, `==`, `!=`, `>`, `<`: empty when none follows.
    fn exact(&mut self) -> Result<String, String> {
        let (t, _) = self.peek(true);
        if matches!(t, Tok::End | Tok::Comma) {
            return Ok(String::new());
        }
        match self.next(true) {
            (Tok::Ident, v) => Ok(v),
            (_, lit) => Err(format!("found '{lit}', expected: identifier")),
        }
    }

    /// `(a, b)`: sorted and without repeats, as Kubernetes keeps a set;
    /// `()` and empty members are the empty value.
    fn set(&mut self) -> Result<Vec<String>, String> {
        let (t, lit) = self.next(true);
        if t != Tok::Open {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let mut values = std::collections::BTreeSet::new();
        let (t, lit) = self.peek(true);
        match t {
            Tok::Close => {
                self.next(true);
                values.insert(String::new());
            }
            Tok::Ident | Tok::Comma => {
                loop {
                    match self.next(true) {
                        (Tok::Ident, v) => {
                            values.insert(v);
                            match self.peek(true) {
                                (Tok::Comma, _) => continue,
                                (Tok::Close, _) => break,
                                (_, lit2) => {
                                    return Err(format!("found '{lit2}', expected: ',' or ')'"));
                                }
                            }
                        }
                        (Tok::Comma, _) => {
                            if values.is_empty() {
                                values.insert(String::new());
                            }
                            match self.peek(true) {
                                (Tok::Close, _) => {
                                    values.insert(String::new());
                                    break;
                                }
                                (Tok::Comma, _) => {
                                    self.next(true);
                                    values.insert(String::new());
                                }
                                _ => {}
                            }
                        }
                        (_, lit) => {
                            return Err(format!("found '{lit}', expected: ',', or identifier"));
                        }
                    }
                }
                let (t, _) = self.next(true);
                if t != Tok::Close {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
            }
            _ => return Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
        Ok(values.into_iter().collect())
    }
}

const NAME_RULE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must \
                         start and end with an alphanumeric character";
const NAME_REGEX: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

/// `msg (e.g. 'a',  or 'b', regex used for validation is 'r')`, as
/// apimachinery words it (the double space is theirs).
fn regex_error(msg: &str, regex: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{regex}')",
        examples.join(" or ")
    )
}

fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.');
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(inner)
}

fn is_dns_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let b = label.as_bytes();
        let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        !b.is_empty() && ok(&b[0]) && ok(&b[b.len() - 1]) && b.iter().all(|c| ok(c) || *c == b'-')
    })
}

/// Why `key` is not a qualified name (Kubernetes' `IsQualifiedName`), in
/// apimachinery's words; empty when it is one. Label keys in selectors and
/// on objects (the embedded server's validation) are checked by this.
pub fn qualified_name_errors(key: &str) -> Vec<String> {
    let examples = ["MyName", "my.name", "123-abc"];
    let mut errs = Vec::new();
    let name = match key.split('/').collect::<Vec<_>>()[..] {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > 253 {
                    errs.push("prefix part must be no more than 253 characters".to_string());
                }
                if !is_dns_subdomain(prefix) {
                    errs.push(format!(
                        "prefix part {}",
                        regex_error(
                            "a lowercase RFC 1123 subdomain must consist of lower case \
                             alphanumeric characters, '-' or '.', and must start and end with \
                             an alphanumeric character",
                            "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*",
                            &["example.com"],
                        )
                    ));
                }
            }
            name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. \
                 'example.com/MyName')",
                regex_error(NAME_RULE, NAME_REGEX, &examples)
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".to_string());
    }
    if !is_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(NAME_RULE, NAME_REGEX, &examples)
        ));
    }
    errs
}

/// Why `v` is not a label value (Kubernetes' `IsValidLabelValue`); empty
/// when it is one (the empty string is).
pub fn label_value_errors(v: &str) -> Vec<String> {
    let mut e = Vec::new();
    if v.len() > 63 {
        e.push("must be no more than 63 characters".to_string());
    }
    if !v.is_empty() && !is_name(v) {
        e.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, \
             '-', '_' or '.', and must start and end with an alphanumeric character",
            "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?",
            &["MyValue", "my_value", "12345"],
        ));
    }
    e
}

/// A label key: a qualified name.
fn validate_key(key: &str) -> Result<(), String> {
    let errs = qualified_name_errors(key);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "<nil>: Invalid value: {key:?}: {}",
            errs.join("; ")
        ))
    }
}

/// Label values, all errors at once as an aggregate (`[a, b]` when more
/// than one).
fn check_values(key: &str, values: &[String]) -> Result<(), String> {
    let mut errs = Vec::new();
    for (i, v) in values.iter().enumerate() {
        let e = label_value_errors(v);
        if !e.is_empty() {
            errs.push(format!(
                "values[{i}][{key}]: Invalid value: {v:?}: {}",
                e.join("; ")
            ));
        }
    }
    match errs.len() {
        0 => Ok(()),
        1 => Err(errs.remove(0)),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"labels": labels}})
    }

    #[test]
    fn operators_match_as_kubernetes_matches() {
        let o = obj(json!({"app": "nginx", "tier": "web", "n": "5"}));
        let m = |s: &str| LabelSelector::parse(s).unwrap().matches(&o);
        assert!(m("app=nginx"));
        assert!(m("app==nginx,tier"));
        assert!(m(" app = nginx "));
        assert!(!m("app!=nginx"));
        assert!(m("app in (nginx, redis)"));
        assert!(!m("app notin (nginx)"));
        assert!(m("tier notin (db),!missing"));
        assert!(!m("!app"));
        assert!(m("missing!=x"));
        assert!(!m("missing in (x)"));
        assert!(m("n>4,n<6"));
        assert!(!m("n>5"));
        assert!(!m("missing>1"));
        assert!(m(""));
        assert!(!m("app="));
    }

    /// Errors worded as kubectl 1.32 words them (`kubectl apply -l ...`).
    #[test]
    fn refuses_what_kubectl_refuses() {
        let err = |s: &str| LabelSelector::parse(s).unwrap_err().message;
        assert_eq!(
            err("a in (b"),
            "unable to parse requirement: found '', expected: ',' or ')'"
        );
        assert_eq!(
            err("a b"),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(err("a=b c"), "found 'c', expected: ',' or 'end of string'");
        assert_eq!(
            err("=b"),
            "found '=', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(err("a=b,"), "found '', expected: identifier after ','");
        assert_eq!(err("a,,b"), "found ',', expected: identifier after ','");
        assert_eq!(err("!a=b"), "found '=', expected: ',' or 'end of string'");
        assert_eq!(
            err("a in b"),
            "unable to parse requirement: found 'b' expected: '('"
        );
        assert_eq!(
            err("a=(b)"),
            "unable to parse requirement: found '(', expected: identifier"
        );
        assert_eq!(
            err("!"),
            "unable to parse requirement: found '', expected: identifier"
        );
        assert_eq!(
            err("a>x"),
            "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' \
             operators, the value must be an integer"
        );
        assert_eq!(
            err("a=b/c"),
            "unable to parse requirement: values[0][a]: Invalid value: \"b/c\": a valid label \
             must be an empty string or consist of alphanumeric characters, '-', '_' or '.', \
             and must start and end with an alphanumeric character (e.g. 'MyValue',  or \
             'my_value',  or '12345', regex used for validation is \
             '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        );
        assert_eq!(
            err("x/=1"),
            "unable to parse requirement: <nil>: Invalid value: \"x/\": name part must be \
             non-empty; name part must consist of alphanumeric characters, '-', '_' or '.', \
             and must start and end with an alphanumeric character (e.g. 'MyName',  or \
             'my.name',  or '123-abc', regex used for validation is \
             '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
        assert!(err("a/b/c=d").contains("a qualified name must consist of"));
        assert!(
            err(&format!("a={}", "x".repeat(64))).ends_with("must be no more than 63 characters")
        );
        assert_eq!(
            LabelSelector::parse("a b").unwrap_err().to_string(),
            "the provided selector \"a b\" is not valid: unable to parse requirement: found \
             'b', expected: in, notin, =, ==, !=, gt, lt"
        );
    }

    #[test]
    fn accepts_what_kubectl_accepts() {
        for s in [
            "a=",
            "a!=",
            "a in ()",
            "a in (b,)",
            "a in (,)",
            "a==b",
            "a>1",
            "A_b.c=D",
            "in=1",
            "example.com/app=x",
            "!a",
            "a,b",
            "",
        ] {
            assert!(LabelSelector::parse(s).is_ok(), "{s}");
        }
    }
}
