//! The time a provider reads: the system's, or one a test moves by hand (expiry and idle
//! deadlines are tested without sleeping).

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Duration, Utc};

/// Now by `clock`, to the microsecond: what Bay's timestamps hold, so an answer and what was
/// kept of it (a replay, the state after a restart) are equal.
pub(crate) fn bay_now(clock: &dyn Clock) -> DateTime<Utc> {
    chrono::SubsecRound::trunc_subsecs(clock.now(), 6)
}

/// Tells the time.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Now.
    fn now(&self) -> DateTime<Utc>;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that stands still until moved; clones share the time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<Mutex<DateTime<Utc>>>,
}

impl ManualClock {
    /// A clock showing `start`.
    pub fn new(start: DateTime<Utc>) -> Self {
        ManualClock {
            now: Arc::new(Mutex::new(start)),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        *now = now.checked_add_signed(by).unwrap_or(*now);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
