//! The embedded Kubernetes API server: in memory, plain http on loopback.
//! Good enough for the real kubectl and for kube-rs: discovery, OpenAPI v3,
//! CRUD with strategic/merge/json/apply patches, `/scale`, managedFields,
//! defaulting and the validation users meet.
//!
//! [`ApiServer::handle`] answers a request without a socket; [`start`]
//! serves it with hyper.

mod api;
mod defaults;
pub mod fields;
mod openapi;
mod protobuf;
pub mod resources;
pub mod selector;
pub mod status;
pub mod store;
mod validate;

pub use api::{ApiServer, RecordedRequest};
pub use status::ApiError;
pub use store::Store;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::io;
use std::path::Path;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// The Kubernetes version the server claims (kubectl's dispatcher picks
/// kubectl 1.32 from it).
pub const GIT_VERSION: &str = "v1.32.5";

/// Requests larger than this are refused (413).
const MAX_BODY: usize = 8 << 20;

#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// None: any free port.
    pub port: Option<u16>,
}

/// A server running on a tokio task until [`RunningServer::shutdown`] (or drop).
pub struct RunningServer {
    api: Arc<ApiServer>,
    addr: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

/// Bind 127.0.0.1 and serve in the background.
pub async fn start(opts: ServerOptions) -> anyhow::Result<RunningServer> {
    let listener = TcpListener::bind(("127.0.0.1", opts.port.unwrap_or(0))).await?;
    let addr = listener.local_addr()?;
    let api = Arc::new(ApiServer::new());
    api.set_address(&addr.to_string());
    let (stop, mut stopped) = oneshot::channel::<()>();
    let served = api.clone();
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                _ = &mut stopped => break,
                a = listener.accept() => a,
            };
            let Ok((stream, _)) = accepted else {
                continue;
            };
            let api = served.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let api = api.clone();
                    async move { Ok::<_, std::convert::Infallible>(serve(&api, req).await) }
                });
                // Connection errors (client went away) concern only that client.
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(RunningServer {
        api,
        addr,
        stop: Some(stop),
    })
}

async fn serve(
    api: &ApiServer,
    req: hyper::Request<hyper::body::Incoming>,
) -> hyper::Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let limited = http_body_util::Limited::new(body, MAX_BODY);
    let bytes = match limited.collect().await {
        Ok(c) => c.to_bytes(),
        Err(_) => {
            let e = ApiError::new(
                413,
                "RequestEntityTooLarge",
                "request body too large or unreadable",
            );
            let mut resp = hyper::Response::new(Full::new(Bytes::from(e.to_status().to_string())));
            *resp.status_mut() = http::StatusCode::PAYLOAD_TOO_LARGE;
            return resp;
        }
    };
    let resp = api.handle(&parts.method, &parts.uri, &parts.headers, &bytes);
    resp.map(Full::new)
}

impl RunningServer {
    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// A kubeconfig whose current context `kapply-demo` points at this
    /// server (namespace default, no credentials).
    pub fn write_kubeconfig(&self, path: &Path) -> io::Result<()> {
        let text = format!(
            "apiVersion: v1
kind: Config
clusters:
- name: kapply-demo
  cluster:
    server: {url}
contexts:
- name: kapply-demo
  context:
    cluster: kapply-demo
    user: kapply-demo
    namespace: default
current-context: kapply-demo
users:
- name: kapply-demo
  user:
    token: kapply-demo
preferences: {{}}
",
            url = self.url()
        );
        std::fs::write(path, text)
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.api.requests()
    }

    pub fn clear_requests(&self) {
        self.api.clear_requests()
    }

    /// The handler (also for requests without the socket, and for seeding
    /// with `put_object`).
    pub fn api(&self) -> &ApiServer {
        &self.api
    }

    pub fn store(&self) -> &Store {
        self.api.store()
    }

    /// Stop accepting connections.
    pub fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            // The accept loop may already be gone; nothing to do then.
            let _ = stop.send(());
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
