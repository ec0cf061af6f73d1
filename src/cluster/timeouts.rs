//! Time limits on every network call, and `--request-timeout` as kubectl
//! spells it.

use std::time::Duration;

/// Connection set-up (TCP, TLS). kubectl's dialer gives up after 30 s; a
/// server that cannot be reached in 10 s is one the user wants to hear about.
pub const DEFAULT_CONNECT: Duration = Duration::from_secs(10);
/// A read (`/version`, discovery, GET, one LIST page), answer and body.
/// kubectl gives up on discovery after about 32 s.
pub const DEFAULT_READ: Duration = Duration::from_secs(30);
/// A write (POST, PATCH, DELETE). kube-apiserver itself gives up on a
/// request after 60 s (its `--request-timeout`), admission webhooks included.
pub const DEFAULT_WRITE: Duration = Duration::from_secs(60);

/// How long kapply waits for the server. `None`: no limit (only from
/// `--request-timeout=0`, as in kubectl).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Duration,
    pub read: Option<Duration>,
    pub write: Option<Duration>,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: DEFAULT_CONNECT,
            read: Some(DEFAULT_READ),
            write: Some(DEFAULT_WRITE),
        }
    }
}

impl Timeouts {
    /// The limits `--request-timeout` sets: absent, the defaults; `0`, no
    /// limit on requests (kubectl's meaning; connecting stays bounded);
    /// otherwise that limit on every request, and on connecting when shorter.
    pub fn from_request_timeout(flag: Option<Duration>) -> Timeouts {
        match flag {
            None => Timeouts::default(),
            Some(d) if d.is_zero() => Timeouts {
                connect: DEFAULT_CONNECT,
                read: None,
                write: None,
            },
            Some(d) => Timeouts {
                connect: d.min(DEFAULT_CONNECT),
                read: Some(d),
                write: Some(d),
            },
        }
    }
}

/// Parse `--request-timeout` as kubectl does: a bare integer is seconds
/// (`0`: no limit); otherwise a Go duration (`500ms`, `30s`, `1m30s`, `1.5h`).
pub fn parse_request_timeout(s: &str) -> Result<Duration, String> {
    const HINT: &str = "invalid timeout value: use an integer number of seconds, \
                        or a number with a unit (e.g. 1s, 2m, 3h)";
    let s = s.trim();
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    if s.is_empty() || s.starts_with('-') {
        return Err(format!("{s:?}: {HINT}"));
    }
    let mut rest = s.strip_prefix('+').unwrap_or(s);
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("{s:?}: missing unit: {HINT}"))?;
        let (num, tail) = rest.split_at(num_end);
        let value: f64 = num
            .parse()
            .map_err(|_| format!("{s:?}: {HINT}"))
            .and_then(|v: f64| {
                if num.is_empty() {
                    Err(format!("{s:?}: {HINT}"))
                } else {
                    Ok(v)
                }
            })?;
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_end);
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(format!("{s:?}: unknown unit {unit:?}: {HINT}")),
        };
        total += value * scale;
        rest = next;
    }
    Duration::try_from_secs_f64(total).map_err(|_| format!("{s:?}: {HINT}"))
}

/// `30 s`, `0.5 s`, `2 min`: how messages state a limit.
pub fn show(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs >= 120.0 && secs % 60.0 == 0.0 {
        format!("{} min", secs / 60.0)
    } else if secs.fract() == 0.0 {
        format!("{secs} s")
    } else {
        // At most 3 decimals, no trailing zeros.
        let t = format!("{secs:.3}");
        format!("{} s", t.trim_end_matches('0').trim_end_matches('.'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_timeout_is_parsed_as_kubectl_does() {
        let ok = |s: &str| parse_request_timeout(s).unwrap();
        assert_eq!(ok("0"), Duration::ZERO);
        assert_eq!(ok("30"), Duration::from_secs(30));
        assert_eq!(ok("30s"), Duration::from_secs(30));
        assert_eq!(ok("1m"), Duration::from_secs(60));
        assert_eq!(ok("1m30s"), Duration::from_secs(90));
        assert_eq!(ok("500ms"), Duration::from_millis(500));
        assert_eq!(ok("1.5h"), Duration::from_secs(5400));
        assert_eq!(ok("0s"), Duration::ZERO);
        for bad in ["", "-1", "-1s", "abc", "10x", "s", "1.2.3s", "m5"] {
            assert!(parse_request_timeout(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn limits_follow_the_flag() {
        assert_eq!(Timeouts::from_request_timeout(None), Timeouts::default());
        let none = Timeouts::from_request_timeout(Some(Duration::ZERO));
        assert_eq!((none.read, none.write), (None, None));
        assert_eq!(none.connect, DEFAULT_CONNECT);
        let short = Timeouts::from_request_timeout(Some(Duration::from_secs(2)));
        assert_eq!(short.connect, Duration::from_secs(2));
        assert_eq!(short.write, Some(Duration::from_secs(2)));
        let long = Timeouts::from_request_timeout(Some(Duration::from_secs(300)));
        assert_eq!(long.connect, DEFAULT_CONNECT);
        assert_eq!(long.read, Some(Duration::from_secs(300)));
    }

    #[test]
    fn limits_read_naturally() {
        assert_eq!(show(Duration::from_secs(30)), "30 s");
        assert_eq!(show(Duration::from_millis(500)), "0.5 s");
        assert_eq!(show(Duration::from_millis(1250)), "1.25 s");
        assert_eq!(show(Duration::from_secs(180)), "3 min");
    }
}
