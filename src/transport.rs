//! Why a network call failed, in words a user can act on, decided from the
//! error's types (hyper, io, rustls), never from its text. hyper's own
//! messages ("error sending request for url ...", "connection closed before
//! message completed") say what the library was doing, not what happened.

use std::error::Error;
use std::io::ErrorKind;

/// What went wrong on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// Nothing listens at the address (the request was not sent).
    Refused,
    /// Connecting (or the exchange) took longer than its limit.
    TimedOut,
    /// The peer reset or aborted the connection.
    Reset,
    /// The peer closed the connection before its answer was complete.
    Closed,
    /// The TLS handshake failed: rustls's reason.
    Tls(String),
    /// Anything else: the innermost error's text (an OS or resolver error,
    /// which names the actual problem).
    Other(String),
}

impl Cause {
    /// Classify a failed call by the types in its error chain.
    pub fn of(e: &(dyn Error + 'static)) -> Cause {
        let chain = chain(e);
        // TLS first: rustls errors arrive wrapped in io errors of kind InvalidData.
        if let Some(t) = chain.iter().find_map(|x| x.downcast_ref::<rustls::Error>()) {
            return Cause::Tls(t.to_string());
        }
        // The innermost typed reason is the most precise one.
        for x in chain.iter().rev() {
            if let Some(io) = x.downcast_ref::<std::io::Error>() {
                match io.kind() {
                    ErrorKind::ConnectionRefused => return Cause::Refused,
                    ErrorKind::TimedOut => return Cause::TimedOut,
                    ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::BrokenPipe => return Cause::Reset,
                    ErrorKind::UnexpectedEof => return Cause::Closed,
                    _ => {}
                }
            }
            if let Some(h) = x.downcast_ref::<hyper::Error>() {
                if h.is_incomplete_message() || h.is_closed() || h.is_canceled() {
                    return Cause::Closed;
                }
                if h.is_timeout() {
                    return Cause::TimedOut;
                }
            }
        }
        let innermost = chain.last().map(|x| x.to_string()).unwrap_or_default();
        Cause::Other(innermost)
    }

    /// Why a connection could not be made: `connection refused`, ...
    pub fn connect_reason(&self) -> String {
        match self {
            Cause::Refused => "connection refused (nothing listens at that address)".into(),
            Cause::TimedOut => "no connection could be made within the time limit".into(),
            Cause::Reset => "the connection was reset while it was being set up".into(),
            Cause::Closed => "the connection was closed while it was being set up".into(),
            Cause::Tls(t) => format!(
                "the TLS handshake failed ({t}); check the cluster's server URL and \
                 certificate-authority in the kubeconfig"
            ),
            Cause::Other(t) => t.clone(),
        }
    }
}

/// A failed HTTP request of hyper's client, in words: why no connection
/// could be made, or how the connection broke before the answer.
pub fn describe_request_error(e: &hyper_util::client::legacy::Error) -> String {
    let cause = Cause::of(e);
    if e.is_connect() {
        return cause.connect_reason();
    }
    match cause {
        Cause::Closed => "the server closed the connection before answering".into(),
        Cause::Reset => "the server reset the connection before answering".into(),
        Cause::TimedOut => "the connection timed out before an answer came".into(),
        other => format!(
            "the connection failed before an answer came ({})",
            other.connect_reason()
        ),
    }
}

/// The error and its sources, with the error an `io::Error` wraps (its
/// `source` skips it).
fn chain<'a>(e: &'a (dyn Error + 'static)) -> Vec<&'a (dyn Error + 'static)> {
    let mut out: Vec<&'a (dyn Error + 'static)> = Vec::new();
    let mut cur = Some(e);
    while let Some(x) = cur {
        if out.len() > 32 {
            break;
        }
        out.push(x);
        if let Some(inner) = x
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            cur = Some(inner as &(dyn Error + 'static));
            continue;
        }
        cur = x.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Wrap(Box<dyn Error + Send + Sync>);
    impl std::fmt::Display for Wrap {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "error sending request for url (http://x/)")
        }
    }
    impl Error for Wrap {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&*self.0)
        }
    }

    fn io(kind: ErrorKind) -> Wrap {
        Wrap(Box::new(std::io::Error::new(kind, "os says so")))
    }

    #[test]
    fn causes_come_from_types_not_text() {
        assert_eq!(Cause::of(&io(ErrorKind::ConnectionRefused)), Cause::Refused);
        assert_eq!(Cause::of(&io(ErrorKind::ConnectionReset)), Cause::Reset);
        assert_eq!(Cause::of(&io(ErrorKind::TimedOut)), Cause::TimedOut);
        assert_eq!(Cause::of(&io(ErrorKind::UnexpectedEof)), Cause::Closed);
        assert_eq!(
            Cause::of(&io(ErrorKind::Other)),
            Cause::Other("os says so".into())
        );
        // rustls's error inside an io error inside the wrapper.
        let tls = Wrap(Box::new(std::io::Error::new(
            ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        )));
        match Cause::of(&tls) {
            Cause::Tls(t) => assert!(t.contains("UnknownIssuer"), "{t}"),
            other => panic!("{other:?}"),
        }
    }
}
