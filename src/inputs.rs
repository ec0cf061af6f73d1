//! Where manifests come from, at the edge: `-f` files and directories,
//! `-f http(s)://...` URLs (fetched here, with a timeout) and `-k DIR`
//! (built by kustomize). The I/O beyond reading files happens here; the
//! text goes to the core parser ([`manifest::load_with`]) under the name its
//! sources carry (`URL:line`, `DIR (kustomize document N):line`).

use crate::manifest::{self, LoadOptions, Loaded, Texts};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long one URL may take, connection to last byte (kubectl's own read
/// has no bound; a review must not hang on a dead server).
pub const URL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long kustomize may take (remote bases are cloned with git).
pub const KUSTOMIZE_TIMEOUT: Duration = Duration::from_secs(120);
/// Redirects followed, as Go's HTTP client (kubectl's) follows them.
const MAX_REDIRECTS: usize = 10;
/// A manifest larger than this is refused rather than read into memory.
const MAX_BODY: usize = 64 << 20;

/// Everything `-f`, `-R`, `-n` and `-k` say about the manifests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inputs {
    /// Files, directories, `-` and URLs (in `paths`), `-R`, namespaces.
    pub load: LoadOptions,
    /// `-k DIR`: the kustomization to build (exclusive with `-f`, as in kubectl).
    pub kustomize: Option<PathBuf>,
    /// Per URL.
    pub url_timeout: Duration,
}

impl From<LoadOptions> for Inputs {
    fn from(load: LoadOptions) -> Inputs {
        Inputs {
            load,
            kustomize: None,
            url_timeout: URL_TIMEOUT,
        }
    }
}

/// `http://` or `https://`: read over the network, not from disk.
pub fn is_url(p: &Path) -> bool {
    p.to_str()
        .is_some_and(|s| s.starts_with("http://") || s.starts_with("https://"))
}

/// The manifests `inputs` name. URLs that cannot be fetched become load
/// errors naming the URL (the other manifests still load, as with a missing
/// file); a kustomize build that fails, or no kustomize at all, is the error.
pub async fn load(inputs: &Inputs) -> anyhow::Result<Loaded> {
    let mut opts = inputs.load.clone();
    let mut texts = Texts::new();
    if let Some(dir) = &inputs.kustomize {
        let tool = KustomizeTool::find()?;
        let output = tool.build(dir, KUSTOMIZE_TIMEOUT).await?;
        opts.paths = Vec::new();
        for (i, doc) in split_documents(&output).into_iter().enumerate() {
            let name = kustomize_source(dir, i + 1);
            opts.paths.push(name.clone());
            texts.insert(name, Ok(doc));
        }
    }
    let urls: Vec<&PathBuf> = opts.paths.iter().filter(|p| is_url(p)).collect();
    if !urls.is_empty() {
        let client = http_client();
        let fetched = futures::future::join_all(urls.iter().map(|u| {
            let url = u.to_string_lossy().into_owned();
            let client = &client;
            async move { fetch_with(client, &url, inputs.url_timeout).await }
        }))
        .await;
        for (u, r) in urls.into_iter().zip(fetched) {
            texts.insert(u.clone(), r);
        }
    }
    // Reading files is blocking work; keep it off the async threads.
    tokio::task::spawn_blocking(move || manifest::load_with(&opts, &texts))
        .await
        .map_err(|e| anyhow::anyhow!("reading the manifests: {e}"))
}

/// The source name of the `n`th document (1-based) of a kustomize build.
pub fn kustomize_source(dir: &Path, n: usize) -> PathBuf {
    PathBuf::from(format!("{} (kustomize document {n})", dir.display()))
}

/// Splits kustomize's output at its `---` lines. Its YAML is canonical (a
/// top-level mapping per document), so a `---` line is always a separator.
fn split_documents(text: &str) -> Vec<String> {
    let mut docs = vec![String::new()];
    for line in text.lines() {
        if line == "---" {
            docs.push(String::new());
        } else if let Some(d) = docs.last_mut() {
            d.push_str(line);
            d.push('\n');
        }
    }
    docs.retain(|d| !d.trim().is_empty());
    docs
}

/// The program that builds a kustomization: `kubectl kustomize` (what
/// `kubectl apply -k` runs), else a standalone `kustomize build`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KustomizeTool {
    Kubectl(PathBuf),
    Kustomize(PathBuf),
}

impl KustomizeTool {
    pub fn find() -> anyhow::Result<KustomizeTool> {
        if let Some(p) = find_on_path("kubectl") {
            return Ok(KustomizeTool::Kubectl(p));
        }
        if let Some(p) = find_on_path("kustomize") {
            return Ok(KustomizeTool::Kustomize(p));
        }
        anyhow::bail!(
            "-k needs kustomize: neither `kubectl` (kubectl kustomize) nor `kustomize` \
             (kustomize build) is on the PATH"
        )
    }

    /// The command line, as it is reported: `kubectl kustomize DIR`.
    pub fn describe(&self, dir: &Path) -> String {
        match self {
            KustomizeTool::Kubectl(_) => format!("kubectl kustomize {}", dir.display()),
            KustomizeTool::Kustomize(_) => format!("kustomize build {}", dir.display()),
        }
    }

    /// Runs the build; kustomize's own message when it fails.
    pub async fn build(&self, dir: &Path, timeout: Duration) -> anyhow::Result<String> {
        let mut cmd = match self {
            KustomizeTool::Kubectl(p) => {
                let mut c = tokio::process::Command::new(p);
                c.arg("kustomize");
                c
            }
            KustomizeTool::Kustomize(p) => {
                let mut c = tokio::process::Command::new(p);
                c.arg("build");
                c
            }
        };
        cmd.arg(dir)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let what = self.describe(dir);
        let out = match tokio::time::timeout(timeout, cmd.output()).await {
            Err(_) => anyhow::bail!("-k: `{what}` did not finish within {}s", timeout.as_secs()),
            Ok(Err(e)) => anyhow::bail!("-k: cannot run `{what}`: {e}"),
            Ok(Ok(out)) => out,
        };
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            anyhow::bail!(
                "-k: `{what}` failed ({}): {}",
                out.status,
                kustomize_message(&stderr)
            );
        }
        String::from_utf8(out.stdout)
            .map_err(|_| anyhow::anyhow!("-k: `{what}` printed something that is not UTF-8"))
    }
}

/// kustomize's message without the logging around it: kubectl 1.32 prints
/// `E1123 09:10:56.2 647 run.go:72] "command failed" err="MESSAGE"`.
fn kustomize_message(stderr: &str) -> String {
    let text = stderr.trim();
    if let Some((_, rest)) = text.split_once("\"command failed\" err=\"") {
        let msg = rest.strip_suffix('"').unwrap_or(rest);
        return msg.replace("\\\"", "\"").replace("\\n", "\n");
    }
    text.trim_start_matches("Error: ")
        .trim_start_matches("error: ")
        .to_string()
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

type Client = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Empty<Bytes>,
>;

/// An HTTP(S) client over the hyper and rustls kube already links. Without
/// system CA certificates, `https` fails at the handshake (with that
/// message) while `http` still works.
fn http_client() -> Client {
    let builder = hyper_rustls::HttpsConnectorBuilder::new();
    let builder = match builder.with_native_roots() {
        Ok(b) => b,
        Err(_) => hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(
            rustls::ClientConfig::builder()
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth(),
        ),
    };
    let connector = builder.https_or_http().enable_http1().build();
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build(connector)
}

/// The body of `url` as text, following redirects, within `timeout`. The
/// error says what went wrong (the caller names the URL): the HTTP status,
/// the connection error, or the timeout.
pub async fn fetch_url(url: &str, timeout: Duration) -> Result<String, String> {
    fetch_with(&http_client(), url, timeout).await
}

async fn fetch_with(client: &Client, url: &str, timeout: Duration) -> Result<String, String> {
    match tokio::time::timeout(timeout, fetch(client, url)).await {
        Ok(r) => r,
        Err(_) => Err(format!(
            "no complete answer within {} (timeout)",
            human_duration(timeout)
        )),
    }
}

fn human_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

async fn fetch(client: &Client, url: &str) -> Result<String, String> {
    let mut current = url.to_string();
    for _ in 0..=MAX_REDIRECTS {
        let uri: http::Uri = current
            .parse()
            .map_err(|e| format!("not a valid URL: {e}"))?;
        let req = http::Request::get(uri.clone())
            .header(
                http::header::USER_AGENT,
                concat!("kapply/", env!("CARGO_PKG_VERSION")),
            )
            .body(Empty::<Bytes>::new())
            .map_err(|e| format!("not a valid URL: {e}"))?;
        let resp = client.request(req).await.map_err(|e| {
            format!(
                "cannot fetch: {}",
                crate::transport::describe_request_error(&e)
            )
        })?;
        let status = resp.status();
        let via = if current == url {
            String::new()
        } else {
            format!(" (redirected to {current})")
        };
        if status.is_redirection() {
            let Some(location) = resp
                .headers()
                .get(http::header::LOCATION)
                .and_then(|l| l.to_str().ok())
            else {
                return Err(format!("HTTP {status} without a Location{via}"));
            };
            current = resolve(&uri, location);
            continue;
        }
        if !status.is_success() {
            return Err(format!("HTTP {status}{via}"));
        }
        let body = Limited::new(resp.into_body(), MAX_BODY)
            .collect()
            .await
            .map_err(|e| format!("reading the body after HTTP {status}: {e}{via}"))?
            .to_bytes();
        return String::from_utf8(body.to_vec())
            .map_err(|_| format!("the body is not UTF-8 text{via}"));
    }
    Err(format!("more than {MAX_REDIRECTS} redirects"))
}

/// A `Location` against the URL that sent it.
fn resolve(base: &http::Uri, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        return location.to_string();
    }
    let scheme = base.scheme_str().unwrap_or("http");
    let authority = base.authority().map_or("", |a| a.as_str());
    if let Some(rest) = location.strip_prefix("//") {
        return format!("{scheme}://{rest}");
    }
    if location.starts_with('/') {
        return format!("{scheme}://{authority}{location}");
    }
    let dir = base.path().rsplit_once('/').map_or("", |(d, _)| d);
    format!("{scheme}://{authority}{dir}/{location}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_documents() {
        assert!(is_url(Path::new("https://k8s.io/a.yaml")));
        assert!(is_url(Path::new("http://127.0.0.1:1/a.yaml")));
        assert!(!is_url(Path::new("httpx/a.yaml")));
        assert!(!is_url(Path::new("./http://a")));
        let docs = split_documents("a: 1\n---\nb: 2\n  ---\n---\n\n---\nc: 3\n");
        assert_eq!(docs, vec!["a: 1\n", "b: 2\n  ---\n", "c: 3\n"]);
        assert_eq!(
            kustomize_source(Path::new("overlays/prod"), 3)
                .display()
                .to_string(),
            "overlays/prod (kustomize document 3)"
        );
    }

    #[test]
    fn kustomize_messages() {
        let klog = "E1123 09:10:56.225830     647 run.go:72] \"command failed\" \
                    err=\"accumulating resources: \\\"x.yaml\\\" missing\"\n";
        assert_eq!(
            kustomize_message(klog),
            "accumulating resources: \"x.yaml\" missing"
        );
        assert_eq!(kustomize_message("Error: no such dir\n"), "no such dir");
    }

    #[test]
    fn redirect_locations() {
        let base: http::Uri = "http://h:8/a/b/c.yaml".parse().unwrap();
        assert_eq!(resolve(&base, "/x.yaml"), "http://h:8/x.yaml");
        assert_eq!(resolve(&base, "x.yaml"), "http://h:8/a/b/x.yaml");
        assert_eq!(resolve(&base, "https://o/y"), "https://o/y");
        assert_eq!(resolve(&base, "//o/y"), "http://o/y");
    }
}
