//! The signals that end kapply (SIGTERM, SIGHUP, SIGINT, SIGQUIT), caught so
//! that the terminal is restored and temporary files are removed before it
//! exits, instead of the default action killing it mid-frame.
//!
//! Create [`Signals`] once, early: from then on these signals no longer
//! kill the process, and a signal that arrives before anyone waits on it is
//! still delivered to the next [`Signals::recv`].

/// The caught signals, as listening streams.
pub struct Signals {
    #[cfg(unix)]
    streams: Vec<(i32, tokio::signal::unix::Signal)>,
}

impl Signals {
    /// Start catching the signals (needs a tokio runtime).
    pub fn new() -> std::io::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let mut streams = Vec::new();
            for (n, kind) in [
                (15, SignalKind::terminate()),
                (1, SignalKind::hangup()),
                (2, SignalKind::interrupt()),
                (3, SignalKind::quit()),
            ] {
                streams.push((n, signal(kind)?));
            }
            Ok(Signals { streams })
        }
        #[cfg(not(unix))]
        {
            Ok(Signals {})
        }
    }

    /// Wait for the next signal; its number (SIGTERM = 15, SIGHUP = 1,
    /// SIGINT = 2, SIGQUIT = 3).
    pub async fn recv(&mut self) -> i32 {
        #[cfg(unix)]
        {
            let waits = self.streams.iter_mut().map(|(n, s)| {
                let n = *n;
                Box::pin(async move {
                    s.recv().await;
                    n
                })
            });
            futures::future::select_all(waits).await.0
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            2
        }
    }
}

/// The exit code a shell reports for a process ended by signal `n`.
pub fn exit_code(n: i32) -> u8 {
    u8::try_from(128 + n).unwrap_or(1)
}
