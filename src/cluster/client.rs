//! The HTTP client of a session: HTTP/2 where the server offers it over TLS,
//! as kubectl's (client-go's) transport does, else HTTP/1.1.
//!
//! kube's own stack (`kube::Client::try_from`) offers only `http/1.1` in
//! TLS's ALPN, so every request in flight needs a connection of its own
//! (32 TLS handshakes at the start of an apply, each a round trip or two
//! over a distant link). This builds the same stack (kube's URI, auth and
//! header layers over hyper-util's pooled client, the same connect and
//! write limits) with a connector that offers `h2` too: one connection
//! then carries every request. The rustls configuration is assembled here
//! because kube's builder of it is private; anything it covers that this
//! does not (no CA in the kubeconfig: the OS's roots; skipped verification;
//! a client certificate from an exec plugin; an in-cluster CA that is
//! re-read; a proxy) keeps kube's HTTP/1.1 stack. Plain `http://` (the
//! embedded demo server) keeps it too: kubectl sends HTTP/1.1 there.
//!
//! `DISABLE_HTTP2` set (to anything), as client-go reads it, keeps HTTP/1.1.

use kube::client::ConfigExt;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use secrecy::ExposeSecret;
use tower::ServiceBuilder;

/// A client for `config`: HTTP/2 where it applies (see the module's notes),
/// else kube's own.
pub(super) fn client(config: kube::Config) -> Result<kube::Client, String> {
    if std::env::var_os("DISABLE_HTTP2").is_some() || !h2_applies(&config) {
        return kube::Client::try_from(config).map_err(|e| super::error_chain(&e));
    }
    h2_client(config)
}

/// Whether this module covers everything the kubeconfig asks of TLS.
fn h2_applies(config: &kube::Config) -> bool {
    config.cluster_url.scheme_str() == Some("https")
        && config.proxy_url.is_none()
        && config.root_cert.is_some()
        && config.root_cert_file.is_none()
        && !config.accept_invalid_certs
        && config.auth_info.exec.is_none()
}

fn h2_client(config: kube::Config) -> Result<kube::Client, String> {
    let tls = tls_config(&config)?;
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    // As Go's net package (kubectl): an HTTP/2 request is a HEADERS and a
    // DATA frame written apart, which Nagle's algorithm would hold back
    // for the previous segment's (delayed) ACK.
    http.set_nodelay(true);
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only();
    let builder = match &config.tls_server_name {
        Some(name) => {
            let name = rustls::pki_types::ServerName::try_from(name.clone())
                .map_err(|e| format!("tls-server-name {name:?}: {e}"))?;
            builder.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name))
        }
        None => builder,
    };
    let https = builder.enable_http1().enable_http2().wrap_connector(http);
    // The same limits as kube's stack applies from the config.
    let mut connector = hyper_timeout::TimeoutConnector::new(https);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let http_client: hyper_util::client::legacy::Client<_, kube::client::Body> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .timer(hyper_util::rt::TokioTimer::new())
            .build(connector);
    let auth = config.auth_layer().map_err(|e| super::error_chain(&e))?;
    let headers = config
        .extra_headers_layer()
        .map_err(|e| super::error_chain(&e))?;
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(auth)
        .layer(headers)
        .map_err(tower::BoxError::from)
        .service(http_client);
    Ok(kube::client::ClientBuilder::new(service, config.default_namespace.clone()).build())
}

/// rustls's configuration from the kubeconfig: its CA, and its client
/// certificate and key when it names them.
fn tls_config(config: &kube::Config) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    for der in config.root_cert.iter().flatten() {
        roots
            .add(CertificateDer::from(der.clone()))
            .map_err(|e| format!("certificate-authority: {e}"))?;
    }
    let builder = rustls::ClientConfig::builder().with_root_certificates(roots);
    match identity(&config.auth_info)? {
        None => Ok(builder.with_no_client_auth()),
        Some((chain, key)) => builder
            .with_client_auth_cert(chain, key)
            .map_err(|e| format!("client-key: {e}")),
    }
}

type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// The client certificate chain and key (`client-certificate[-data]`,
/// `client-key[-data]`), if the kubeconfig has them.
fn identity(auth: &kube::config::AuthInfo) -> Result<Option<Identity>, String> {
    let cert = pem_bytes(
        "client-certificate",
        auth.client_certificate_data.as_deref(),
        auth.client_certificate.as_deref(),
    )?;
    let key = pem_bytes(
        "client-key",
        auth.client_key_data.as_ref().map(|s| s.expose_secret()),
        auth.client_key.as_deref(),
    )?;
    match (cert, key) {
        (None, None) => Ok(None),
        (Some(_), None) => Err("client-certificate given without client-key".into()),
        (None, Some(_)) => Err("client-key given without client-certificate".into()),
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_slice_iter(&cert)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("client-certificate: {e}"))?;
            if chain.is_empty() {
                return Err("client-certificate: no CERTIFICATE in it".into());
            }
            let key =
                PrivateKeyDer::from_pem_slice(&key).map_err(|e| format!("client-key: {e}"))?;
            Ok(Some((chain, key)))
        }
    }
}

/// A kubeconfig's `*-data` (base64) or, without it, the file it names.
fn pem_bytes(
    what: &str,
    data: Option<&str>,
    file: Option<&str>,
) -> Result<Option<Vec<u8>>, String> {
    use base64::Engine as _;
    if let Some(data) = data.filter(|d| !d.is_empty()) {
        return base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map(Some)
            .map_err(|e| format!("{what}-data: {e}"));
    }
    match file.filter(|f| !f.is_empty()) {
        Some(path) => std::fs::read(path)
            .map(Some)
            .map_err(|e| format!("{what} {path}: {e}")),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(url: &str) -> kube::Config {
        let mut c = kube::Config::new(url.parse().expect("a URL"));
        c.root_cert = Some(Vec::new());
        c
    }

    #[test]
    fn h2_only_where_this_covers_the_tls_asked_for() {
        assert!(h2_applies(&config("https://10.0.0.1:6443")));
        // The embedded server: plain HTTP/1.1, as kubectl sends it.
        assert!(!h2_applies(&config("http://127.0.0.1:8080")));
        let mut c = config("https://10.0.0.1:6443");
        c.accept_invalid_certs = true;
        assert!(!h2_applies(&c));
        let mut c = config("https://10.0.0.1:6443");
        c.root_cert = None;
        assert!(!h2_applies(&c), "the OS's roots are kube's to find");
    }

    #[test]
    fn a_key_without_its_certificate_is_refused_by_name() {
        let auth = kube::config::AuthInfo {
            client_key: Some("/nonexistent/key.pem".into()),
            ..Default::default()
        };
        let e = identity(&auth).expect_err("no key file");
        assert!(e.contains("client-key /nonexistent/key.pem"), "{e}");
        let auth = kube::config::AuthInfo {
            client_certificate_data: Some("not base64!".into()),
            ..Default::default()
        };
        let e = identity(&auth).expect_err("bad base64");
        assert!(e.starts_with("client-certificate-data:"), "{e}");
    }
    /// A self-signed P-256 pair (the one tests/server_kubectl.rs serves).
    const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIBgzCCASmgAwIBAgIUP/nzn/e/G0da4FbMTlbNba+q7g0wCgYIKoZIzj0EAwIw\nFjEUMBIGA1UEAwwLa2FwcGx5LXRlc3QwIBcNMjYxMTIzMTIxNTUzWhgPMjEyNjEw\nMzAxMjE1NTNaMBYxFDASBgNVBAMMC2thcHBseS10ZXN0MFkwEwYHKoZIzj0CAQYI\nKoZIzj0DAQcDQgAEdjQLlGogs5WtGhsCZVHWXlFXdgClDEIQD2HCUxMb5O5YgOLc\nS2gybABpHIHLNzkkVJ64pg2DwVikgQC9zA7lOaNTMFEwHQYDVR0OBBYEFLgU79so\nHLQ1f/0swE2iaAt/tQSLMB8GA1UdIwQYMBaAFLgU79soHLQ1f/0swE2iaAt/tQSL\nMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIhAMseOsWAiSaxXKgE\nne/aSFYvE14H6DJKCxahI/EhdtDIAiBA1v+fIF9Fz2UvQlEzBe+puUGaGTHv4fiq\no+AJsBXNPg==\n-----END CERTIFICATE-----\n";
    const KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgFR8faAjOA/ueNzNL\nqypgNEl0/uiKn7VtPeS+SXfp1dihRANCAAR2NAuUaiCzla0aGwJlUdZeUVd2AKUM\nQhAPYcJTExvk7liA4txLaDJsAGkcgcs3OSRUnrimDYPBWKSBAL3MDuU5\n-----END PRIVATE KEY-----\n";

    #[test]
    fn the_kubeconfig_client_certificate_is_presented() {
        use base64::Engine as _;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let auth = kube::config::AuthInfo {
            client_certificate_data: Some(b64(CERT)),
            client_key_data: Some(b64(KEY).into()),
            ..Default::default()
        };
        let (chain, _key) = identity(&auth).expect("a pair").expect("some");
        assert_eq!(chain.len(), 1);
        let mut c = config("https://10.0.0.1:6443");
        c.root_cert = Some(vec![chain[0].to_vec()]);
        c.auth_info = auth;
        let tls = tls_config(&c).expect("a TLS config");
        assert!(tls.client_auth_cert_resolver.has_certs());
        // The whole client builds (inside a runtime: hyper's pool needs one).
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async { client(c).expect("a client") });
    }
}
