//! How a worker treats a store that fails: its loop looks at the queue less often (the poll
//! interval, doubling up to [`MAX_WAIT`]) and says so once when the store fails and once when it
//! answers again, rather than at every poll; a release the store refused is tried again the
//! same way. Lease renewals keep their own pace: a run's lease matters more than a quiet log.

use std::time::Duration;

use tokio::time::Instant;

/// The longest wait between two looks at the queue while the store fails (unless the poll
/// interval is longer).
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(5);

/// The state of the store as the worker's calls found it.
#[derive(Debug)]
pub(crate) struct Backoff {
    poll: Duration,
    /// The longest wait (the poll interval when that is longer).
    longest: Duration,
    /// When the failures began, while they last.
    failing_since: Option<Instant>,
    /// The wait after the latest failure.
    wait: Duration,
    /// No look at the queue before this.
    next: Instant,
}

impl Backoff {
    /// The store answers; the worker looks every `poll`, and while it fails, waits up to
    /// `longest` between two tries.
    pub(crate) fn new(poll: Duration, longest: Duration, now: Instant) -> Backoff {
        Backoff {
            poll,
            longest: longest.max(poll),
            failing_since: None,
            wait: poll,
            next: now,
        }
    }

    /// Whether to look at the queue (claim, fire schedules) at `now`.
    pub(crate) fn due(&self, now: Instant) -> bool {
        now >= self.next
    }

    /// When the next try is due.
    pub(crate) fn next(&self) -> Instant {
        self.next
    }

    /// A call failed at `now`; `true` when it is the first of a run of failures (worth a
    /// warning; the others are worth a debug line).
    pub(crate) fn failed(&mut self, now: Instant) -> bool {
        let first = self.failing_since.is_none();
        if first {
            self.failing_since = Some(now);
            self.wait = self.poll;
        } else {
            self.wait = (self.wait * 2).min(self.longest);
        }
        self.next = now + self.wait;
        first
    }

    /// A call went through at `now`: how long the store had been failing, if it had.
    pub(crate) fn answered(&mut self, now: Instant) -> Option<Duration> {
        let since = self.failing_since.take()?;
        self.wait = self.poll;
        self.next = now;
        Some(now.saturating_duration_since(since))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_space_out_the_looks_and_an_answer_ends_the_wait() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut backoff = Backoff::new(Duration::from_millis(500), MAX_WAIT, start);
        assert!(backoff.due(start));
        assert!(backoff.failed(at(0)), "the first failure is announced");
        assert!(!backoff.due(at(499)));
        assert!(backoff.due(at(500)));
        assert!(!backoff.failed(at(500)), "the next ones are not");
        assert!(!backoff.due(at(1_499)));
        assert!(backoff.due(at(1_500)));
        backoff.failed(at(1_500));
        backoff.failed(at(3_500));
        backoff.failed(at(7_500));
        assert!(
            !backoff.due(at(12_499)),
            "the wait stops growing at five seconds"
        );
        assert!(backoff.due(at(12_500)));
        assert_eq!(
            backoff.answered(at(12_600)),
            Some(Duration::from_millis(12_600))
        );
        assert!(backoff.due(at(12_600)));
        assert_eq!(backoff.answered(at(13_000)), None, "it was not failing");
        assert!(
            backoff.failed(at(13_000)),
            "a new outage is announced again"
        );
        assert!(backoff.due(at(13_500)), "starting from the poll interval");
    }

    #[test]
    fn a_poll_longer_than_the_longest_wait_is_kept() {
        let start = Instant::now();
        let mut backoff = Backoff::new(Duration::from_secs(10), MAX_WAIT, start);
        backoff.failed(start);
        backoff.failed(start + Duration::from_secs(10));
        assert!(!backoff.due(start + Duration::from_secs(19)));
        assert!(backoff.due(start + Duration::from_secs(20)));
    }
}
