//! Bay's idempotency: a key (`[A-Za-z0-9_-]{1,128}`) per owner, across endpoints; the same key
//! with the same request replays the stored response (status and body, no side effects); the
//! same key with another request is a `conflict`; only successes are stored; keys expire
//! (Bay's default: an hour).

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{ErrorCode, SandboxError};

/// A stored response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Stored {
    /// The request's fingerprint.
    pub fingerprint: String,
    /// The response status.
    pub status: u16,
    /// The response body.
    pub body: Value,
    /// When it was stored.
    pub stored_at: DateTime<Utc>,
}

/// What to do with a keyed request.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Lookup {
    /// Not seen (or expired): run it, then [`IdempotencyStore::store`] a success.
    Fresh,
    /// Seen with the same request: answer this, do nothing else.
    Replay {
        /// The status first answered.
        status: u16,
        /// The body first answered.
        body: Value,
    },
}

/// Keys and the responses they stored.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct IdempotencyStore {
    /// By owner, then key.
    entries: HashMap<String, HashMap<String, Stored>>,
    /// How long a key lives, in seconds.
    ttl_seconds: i64,
}

/// The fingerprint Bay gives a request: SHA-256 of `POST:<path>:<body>`, the body being the
/// request model re-serialized (defaults filled, unknown fields dropped — the caller passes
/// the parsed request, not the raw text).
pub fn fingerprint(path: &str, body: &Value) -> String {
    let digest = Sha256::digest(format!("POST:{path}:{body}").as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Checks a key's form: `409 conflict` with `details.key` otherwise (Bay answers 409, not 400).
pub fn check_key(key: &str) -> Result<(), SandboxError> {
    let valid = (1..=128).contains(&key.len())
        && key
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-');
    if valid {
        Ok(())
    } else {
        Err(SandboxError::new(
            ErrorCode::Conflict,
            "Invalid idempotency key: use 1 to 128 letters, digits, `_` or `-`",
        )
        .detail("key", key))
    }
}

impl IdempotencyStore {
    /// A store whose keys live `ttl` (Bay's default is an hour).
    pub fn new(ttl: std::time::Duration) -> Self {
        IdempotencyStore {
            entries: HashMap::new(),
            ttl_seconds: i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX),
        }
    }

    fn live(&self, stored: &Stored, now: DateTime<Utc>) -> bool {
        Duration::try_seconds(self.ttl_seconds)
            .and_then(|ttl| stored.stored_at.checked_add_signed(ttl))
            .is_none_or(|expires| now < expires)
    }

    /// What to do with a request carrying `key`, whose fingerprint is `fingerprint`.
    pub fn lookup(
        &mut self,
        owner: &str,
        key: &str,
        fingerprint: &str,
        now: DateTime<Utc>,
    ) -> Result<Lookup, SandboxError> {
        check_key(key)?;
        let Some(stored) = self.entries.get(owner).and_then(|keys| keys.get(key)) else {
            return Ok(Lookup::Fresh);
        };
        if !self.live(stored, now) {
            if let Some(keys) = self.entries.get_mut(owner) {
                keys.remove(key);
            }
            return Ok(Lookup::Fresh);
        }
        if stored.fingerprint != fingerprint {
            return Err(SandboxError::new(
                ErrorCode::Conflict,
                "Idempotency key already used with different request parameters",
            )
            .detail("hint", "use a new key for a different request"));
        }
        Ok(Lookup::Replay {
            status: stored.status,
            body: stored.body.clone(),
        })
    }

    /// Stores a successful response for `key`.
    pub fn store(
        &mut self,
        owner: &str,
        key: &str,
        fingerprint: &str,
        status: u16,
        body: Value,
        now: DateTime<Utc>,
    ) {
        self.entries.entry(owner.to_owned()).or_default().insert(
            key.to_owned(),
            Stored {
                fingerprint: fingerprint.to_owned(),
                status,
                body,
                stored_at: now,
            },
        );
    }

    /// Drops expired keys.
    pub fn purge(&mut self, now: DateTime<Utc>) {
        let ttl = self.ttl_seconds;
        for keys in self.entries.values_mut() {
            keys.retain(|_, stored| {
                Duration::try_seconds(ttl)
                    .and_then(|length| stored.stored_at.checked_add_signed(length))
                    .is_none_or(|expires| now < expires)
            });
        }
        self.entries.retain(|_, keys| !keys.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn same_key_same_request_replays_and_another_request_conflicts() {
        let mut store = IdempotencyStore::new(std::time::Duration::from_secs(3_600));
        let now: DateTime<Utc> = "2026-11-22T04:00:00Z".parse().unwrap();
        let body = json!({"profile": "python-default", "ttl": 60});
        let print = fingerprint("/v1/sandboxes", &body);
        assert_eq!(
            store.lookup("default", "k1", &print, now).unwrap(),
            Lookup::Fresh
        );
        store.store(
            "default",
            "k1",
            &print,
            201,
            json!({"id": "sandbox-1"}),
            now,
        );
        assert_eq!(
            store.lookup("default", "k1", &print, now).unwrap(),
            Lookup::Replay {
                status: 201,
                body: json!({"id": "sandbox-1"})
            }
        );
        // Another owner's key space is its own.
        assert_eq!(
            store.lookup("other", "k1", &print, now).unwrap(),
            Lookup::Fresh
        );
        // Another body, another endpoint: conflict.
        let other = fingerprint(
            "/v1/sandboxes",
            &json!({"profile": "python-data", "ttl": 60}),
        );
        assert_eq!(
            store.lookup("default", "k1", &other, now).unwrap_err().code,
            ErrorCode::Conflict
        );
        let elsewhere = fingerprint("/v1/sandboxes/sandbox-1/extend_ttl", &body);
        assert_eq!(
            store
                .lookup("default", "k1", &elsewhere, now)
                .unwrap_err()
                .code,
            ErrorCode::Conflict
        );
        // Keys expire.
        let later = now + Duration::hours(2);
        assert_eq!(
            store.lookup("default", "k1", &other, later).unwrap(),
            Lookup::Fresh
        );
        store.purge(later);
        assert!(store.entries.is_empty());
    }

    #[test]
    fn malformed_keys_are_a_409_conflict_naming_the_key() {
        for key in ["", "has space", "ünïcode", &"x".repeat(129)] {
            let error = check_key(key).unwrap_err();
            assert_eq!((error.code, error.status()), (ErrorCode::Conflict, 409));
            assert_eq!(error.details["key"], key);
        }
        assert!(check_key("abc_DEF-123").is_ok());
    }
}
