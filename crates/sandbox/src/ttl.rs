//! Bay's TTL rules.

use chrono::{DateTime, Duration, Utc};

use crate::error::{ErrorCode, SandboxError};

/// The expiry of a sandbox created at `now` with `ttl` seconds: none for null, zero or a
/// negative ttl (Bay's rule), else `now + ttl`.
pub fn expiry_at_create(now: DateTime<Utc>, ttl: Option<i64>) -> Option<DateTime<Utc>> {
    let ttl = ttl.filter(|seconds| *seconds > 0)?;
    Duration::try_seconds(ttl).and_then(|length| now.checked_add_signed(length))
}

/// Refuses an `extend_by` that is not a positive number of seconds (`validation_error`), the
/// first of [`extend`]'s checks.
pub fn check_extend_by(extend_by: i64) -> Result<(), SandboxError> {
    if extend_by <= 0 {
        return Err(SandboxError::new(
            ErrorCode::ValidationError,
            "extend_by must be a positive number of seconds",
        ));
    }
    Ok(())
}

/// The new expiry after `extend_ttl` by `extend_by` seconds, checked in Bay's order:
/// `extend_by <= 0` is `validation_error`; no expiry is `sandbox_ttl_infinite`; an expiry in
/// the past is `sandbox_expired`; otherwise `max(old, now) + extend_by`.
pub fn extend(
    sandbox_id: &str,
    expires_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    extend_by: i64,
) -> Result<DateTime<Utc>, SandboxError> {
    check_extend_by(extend_by)?;
    let Some(expires_at) = expires_at else {
        return Err(SandboxError::new(
            ErrorCode::SandboxTtlInfinite,
            "Sandbox has no expiry; there is nothing to extend",
        )
        .detail("sandbox_id", sandbox_id));
    };
    if expires_at < now {
        return Err(SandboxError::new(
            ErrorCode::SandboxExpired,
            "Sandbox has expired and cannot be extended",
        )
        .detail("sandbox_id", sandbox_id)
        .detail("expires_at", crate::time::format(expires_at)));
    }
    Duration::try_seconds(extend_by)
        .and_then(|length| expires_at.max(now).checked_add_signed(length))
        .ok_or_else(|| SandboxError::new(ErrorCode::ValidationError, "extend_by is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    #[test]
    fn bays_ttl_rules() {
        let now = t("2026-11-22T04:00:00Z");
        assert_eq!(expiry_at_create(now, None), None);
        assert_eq!(expiry_at_create(now, Some(0)), None);
        assert_eq!(expiry_at_create(now, Some(-5)), None);
        assert_eq!(
            expiry_at_create(now, Some(60)),
            Some(t("2026-11-22T04:01:00Z"))
        );

        let code = |result: Result<DateTime<Utc>, SandboxError>| result.unwrap_err().code;
        assert_eq!(
            code(extend("s", Some(now), now, 0)),
            ErrorCode::ValidationError
        );
        assert_eq!(
            code(extend("s", None, now, 10)),
            ErrorCode::SandboxTtlInfinite
        );
        let expired = extend("s", Some(t("2026-11-22T03:59:59Z")), now, 10).unwrap_err();
        assert_eq!(expired.code, ErrorCode::SandboxExpired);
        assert_eq!(expired.details["sandbox_id"], "s");
        // Later than now: extended from the old expiry.
        assert_eq!(
            extend("s", Some(t("2026-11-22T04:10:00Z")), now, 60).unwrap(),
            t("2026-11-22T04:11:00Z")
        );
        // Exactly now: from now.
        assert_eq!(
            extend("s", Some(now), now, 60).unwrap(),
            t("2026-11-22T04:01:00Z")
        );
        assert_eq!(
            code(extend("s", Some(now), now, i64::MAX)),
            ErrorCode::ValidationError
        );
    }
}
