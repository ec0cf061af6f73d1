//! Exec credential plugins (`users[].user.exec`, how EKS, GKE and AKS
//! authenticate), run by kapply itself so that a run executes the plugin
//! once and reuses the token until it expires, as kubectl does. (kube-rs
//! runs the plugin three times while building its client.)
//!
//! A plugin that answers with a client certificate instead of a token is
//! left to kube-rs, which puts it in the TLS configuration.

use super::ClusterError;
use kube::config::{ExecConfig, ExecInteractiveMode};
use serde_json::Value;
use std::io::IsTerminal as _;
use std::time::Duration;

/// How long a plugin may take without a terminal to talk to.
const EXEC_TIMEOUT: Duration = Duration::from_secs(60);
/// With a terminal the user may be logging in (a browser, a device code).
const INTERACTIVE_TIMEOUT: Duration = Duration::from_secs(300);
/// A token this close to its expiry is fetched again before it is sent.
const EXPIRY_MARGIN: Duration = Duration::from_secs(10);

/// A token from the plugin, with its expiry (`None`: valid until a 401).
#[derive(Debug, Clone)]
struct Credential {
    token: String,
    expires: Option<jiff::Timestamp>,
}

impl Credential {
    fn fresh(&self) -> bool {
        self.expires
            .is_none_or(|e| jiff::Timestamp::now() + EXPIRY_MARGIN < e)
    }
}

/// What the plugin answered.
pub(super) enum Answer {
    /// A bearer token: kapply sends it (see [`ExecAuth`]).
    Token(Box<ExecAuth>),
    /// Client certificate and key: kube-rs handles them.
    Certificate,
}

/// The plugin's configuration and its cached token.
pub(super) struct ExecAuth {
    config: ExecConfig,
    cached: tokio::sync::Mutex<Option<Credential>>,
}

impl ExecAuth {
    /// Runs the plugin once, at connect time.
    pub(super) async fn start(config: ExecConfig) -> Result<Answer, ClusterError> {
        let status = run(&config).await?;
        if status.get("clientCertificateData").is_some() && status.get("token").is_none() {
            return Ok(Answer::Certificate);
        }
        let credential = credential(&config, &status)?;
        Ok(Answer::Token(Box::new(ExecAuth {
            config,
            cached: tokio::sync::Mutex::new(Some(credential)),
        })))
    }

    /// The `Authorization` header value, running the plugin again only
    /// when the token has expired (or was refused).
    pub(super) async fn header(&self) -> Result<http::HeaderValue, ClusterError> {
        let mut cached = self.cached.lock().await;
        let credential = match cached.as_ref().filter(|c| c.fresh()) {
            Some(c) => c.clone(),
            None => {
                let c = credential(&self.config, &run(&self.config).await?)?;
                *cached = Some(c.clone());
                c
            }
        };
        let mut value = http::HeaderValue::from_str(&format!("Bearer {}", credential.token))
            .map_err(|_| {
                ClusterError::Kubeconfig(format!(
                    "{}: the token is not a valid header value",
                    self.describe()
                ))
            })?;
        value.set_sensitive(true);
        Ok(value)
    }

    /// After a 401, as client-go does: the next request runs the plugin again.
    pub(super) async fn forget(&self) {
        *self.cached.lock().await = None;
    }

    fn describe(&self) -> String {
        describe(&self.config)
    }
}

fn describe(config: &ExecConfig) -> String {
    format!(
        "exec credential plugin `{}`",
        config.command.as_deref().unwrap_or("")
    )
}

fn credential(config: &ExecConfig, status: &Value) -> Result<Credential, ClusterError> {
    let err = |m: String| ClusterError::Kubeconfig(format!("{}: {m}", describe(config)));
    let token = status
        .get("token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            err("its ExecCredential has neither a token nor a client certificate".into())
        })?;
    let expires = match status.get("expirationTimestamp").and_then(Value::as_str) {
        None => None,
        Some(ts) => Some(
            ts.parse::<jiff::Timestamp>()
                .map_err(|e| err(format!("expirationTimestamp {ts:?}: {e}")))?,
        ),
    };
    Ok(Credential {
        token: token.to_string(),
        expires,
    })
}

/// Runs the plugin as client-go does (arguments, environment,
/// `KUBERNETES_EXEC_INFO`, stdin and stderr passed through when
/// interactive) and returns the `status` of its ExecCredential.
async fn run(config: &ExecConfig) -> Result<Value, ClusterError> {
    let what = describe(config);
    let err = |m: String| ClusterError::Kubeconfig(format!("{what}: {m}"));
    let Some(command) = config.command.as_deref().filter(|c| !c.is_empty()) else {
        return Err(ClusterError::Kubeconfig(
            "exec credential plugin without a command".into(),
        ));
    };
    let interactive = match config.interactive_mode {
        Some(ExecInteractiveMode::Never) => false,
        Some(ExecInteractiveMode::Always) => true,
        Some(ExecInteractiveMode::IfAvailable) | None => std::io::stdin().is_terminal(),
    };
    let api_version = config
        .api_version
        .clone()
        .unwrap_or_else(|| "client.authentication.k8s.io/v1".into());
    let mut spec = serde_json::json!({ "interactive": interactive });
    if config.provide_cluster_info
        && let Some(cluster) = &config.cluster
    {
        spec["cluster"] = serde_json::to_value(cluster).unwrap_or(Value::Null);
    }
    let info = serde_json::json!({
        "apiVersion": api_version,
        "kind": "ExecCredential",
        "spec": spec,
    });
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(config.args.iter().flatten())
        .env("KUBERNETES_EXEC_INFO", info.to_string())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    for e in config.env.iter().flatten() {
        if let (Some(name), Some(value)) = (e.get("name"), e.get("value")) {
            cmd.env(name, value);
        }
    }
    for name in config.drop_env.iter().flatten() {
        cmd.env_remove(name);
    }
    if interactive {
        cmd.stdin(std::process::Stdio::inherit())
            .stderr(std::process::Stdio::inherit());
    } else {
        cmd.stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
    }
    let timeout = if interactive {
        INTERACTIVE_TIMEOUT
    } else {
        EXEC_TIMEOUT
    };
    let out = match tokio::time::timeout(timeout, cmd.output()).await {
        Err(_) => {
            return Err(err(format!("did not answer within {}s", timeout.as_secs())));
        }
        Ok(Err(e)) => {
            let hint = config
                .install_hint
                .as_deref()
                .map(|h| format!("\n{}", h.trim()))
                .unwrap_or_default();
            return Err(err(format!("cannot run it: {e}{hint}")));
        }
        Ok(Ok(out)) => out,
    };
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stderr = stderr.trim();
        return Err(err(if stderr.is_empty() {
            format!("failed ({})", out.status)
        } else {
            format!("failed ({}): {stderr}", out.status)
        }));
    }
    let answer: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| err(format!("its output is not an ExecCredential: {e}")))?;
    match answer.get("status") {
        Some(status @ Value::Object(_)) => Ok(status.clone()),
        _ => Err(err("its ExecCredential has no status".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_expiry() {
        let config = ExecConfig {
            command: Some("plugin".into()),
            ..Default::default()
        };
        let c = credential(
            &config,
            &serde_json::json!({"token": "t", "expirationTimestamp": "2099-01-01T00:00:00Z"}),
        )
        .unwrap();
        assert!(c.fresh());
        let c = credential(
            &config,
            &serde_json::json!({"token": "t", "expirationTimestamp": "2000-01-01T00:00:00Z"}),
        )
        .unwrap();
        assert!(!c.fresh());
        let c = credential(&config, &serde_json::json!({"token": "t"})).unwrap();
        assert!(c.fresh());
        let e = credential(&config, &serde_json::json!({})).unwrap_err();
        assert!(
            e.to_string()
                .contains("`plugin`: its ExecCredential has neither"),
            "{e}"
        );
        let e = credential(
            &config,
            &serde_json::json!({"token": "t", "expirationTimestamp": "soon"}),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("expirationTimestamp \"soon\""),
            "{e}"
        );
    }
}
