//! When to retry and how long to wait (DESIGN §4).
//!
//! Transient: a connect error, a timeout, an interrupted connection, and the statuses 429, 502,
//! 503 and 504. The wait doubles from `initial_backoff_ms` up to `max_backoff_ms`, with "equal
//! jitter" (half fixed, half random) so that parallel steps do not retry in lockstep; a
//! `Retry-After` header (seconds or an HTTP date) replaces it.

use std::time::{Duration, SystemTime};

use wayline_core::{RetryPolicy, TransportErrorKind};

/// Statuses worth retrying.
pub(crate) fn is_transient_status(status: u16) -> bool {
    matches!(status, 429 | 502 | 503 | 504)
}

/// Whether a request with this method may be sent again after it may have reached the server.
///
/// POST and PATCH are not idempotent unless the tool says so or sends an idempotency key. A
/// connect error is always retryable: the request never left.
pub(crate) fn may_resend(
    method: &str,
    idempotent: Option<bool>,
    has_idempotency_key: bool,
    failure: Option<TransportErrorKind>,
) -> bool {
    if failure == Some(TransportErrorKind::Connect) {
        return true;
    }
    let unsafe_method = method.eq_ignore_ascii_case("POST") || method.eq_ignore_ascii_case("PATCH");
    !unsafe_method || idempotent == Some(true) || has_idempotency_key
}

/// The wait before attempt `failed_attempt + 1`: exponential, capped, with equal jitter.
pub(crate) fn backoff(
    policy: &RetryPolicy,
    failed_attempt: u32,
    rng: &mut fastrand::Rng,
) -> Duration {
    let exponent = failed_attempt.saturating_sub(1).min(32);
    let base = policy
        .initial_backoff_ms
        .saturating_mul(1u64 << exponent)
        .min(policy.max_backoff_ms);
    let half = base / 2;
    Duration::from_millis(half + rng.u64(0..=base - half))
}

/// Parses a `Retry-After` value: delay seconds, or an HTTP date compared with `now`. A date in
/// the past means "now".
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(date.timestamp()).ok()?);
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_caps_and_jitters_within_bounds() {
        let mut policy = RetryPolicy::new(10);
        policy.initial_backoff_ms = 100;
        policy.max_backoff_ms = 1_000;
        let mut rng = fastrand::Rng::with_seed(7);
        for (attempt, base) in [
            (1, 100),
            (2, 200),
            (3, 400),
            (4, 800),
            (5, 1_000),
            (9, 1_000),
        ] {
            for _ in 0..50 {
                let wait = backoff(&policy, attempt, &mut rng).as_millis() as u64;
                assert!((base / 2..=base).contains(&wait), "{attempt}: {wait}");
            }
        }
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:40 GMT", now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn post_is_resent_only_when_safe() {
        assert!(may_resend(
            "GET",
            None,
            false,
            Some(TransportErrorKind::Timeout)
        ));
        assert!(!may_resend(
            "POST",
            None,
            false,
            Some(TransportErrorKind::Timeout)
        ));
        assert!(!may_resend("patch", Some(false), false, None));
        assert!(may_resend("POST", Some(true), false, None));
        assert!(may_resend("POST", None, true, None));
        assert!(may_resend(
            "POST",
            None,
            false,
            Some(TransportErrorKind::Connect)
        ));
    }
}
