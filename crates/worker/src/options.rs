//! [`WorkerOptions`]: how a worker takes and holds runs.

use std::time::Duration;

/// How a worker takes and holds runs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerOptions {
    /// Its name, unique among live workers; runs list it as theirs.
    pub name: String,
    /// The machine it runs on, as `wayline workers list` shows it.
    pub host: String,
    /// Runs it works on at once.
    pub concurrency: usize,
    /// How long its hold on a run lasts without renewal. It renews three times per lease; a
    /// worker not heard from for this long loses its runs to others.
    pub lease: Duration,
    /// How often an idle worker looks for queued runs (a busy one looks again whenever a run
    /// ends).
    pub poll: Duration,
    /// On shutdown, how long runs may go on to finish before they are handed back to the
    /// queue.
    pub grace: Duration,
    /// Whether it fires the store's shared schedules that are due (looking every `poll`).
    /// Any number of workers may: each due time fires once.
    pub schedules: bool,
}

impl WorkerOptions {
    /// The shortest lease accepted: renewals every third of it must fit a round trip.
    pub const MIN_LEASE: Duration = Duration::from_millis(300);

    /// Options for the worker `name`: 4 runs at once, a 30 s lease, looking for work (and due
    /// shared schedules) every 500 ms, 30 s of grace on shutdown.
    pub fn new(name: impl Into<String>) -> Self {
        WorkerOptions {
            name: name.into(),
            host: host_name(),
            concurrency: 4,
            lease: Duration::from_secs(30),
            poll: Duration::from_millis(500),
            grace: Duration::from_secs(30),
            schedules: true,
        }
    }

    /// Sets how many runs it works on at once.
    #[must_use]
    pub fn concurrency(mut self, runs: usize) -> Self {
        self.concurrency = runs;
        self
    }

    /// Sets the lease time.
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// Sets how often an idle worker looks for work.
    #[must_use]
    pub fn poll(mut self, every: Duration) -> Self {
        self.poll = every;
        self
    }

    /// Sets the grace time on shutdown.
    #[must_use]
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Sets whether it fires shared schedules.
    #[must_use]
    pub fn schedules(mut self, fire: bool) -> Self {
        self.schedules = fire;
        self
    }

    /// Why these options cannot work, if they cannot.
    pub(crate) fn problem(&self) -> Option<String> {
        if wayline_core::store::check_id("worker", &self.name).is_err() {
            return Some(format!(
                "`{}` is not a worker name; use 1 to 128 letters, digits, `_`, `-` or `.`",
                self.name
            ));
        }
        if self.concurrency == 0 {
            return Some("concurrency must be at least 1".into());
        }
        if self.lease < WorkerOptions::MIN_LEASE {
            return Some(format!(
                "a lease of {:?} is too short to renew; use at least {:?}",
                self.lease,
                WorkerOptions::MIN_LEASE
            ));
        }
        if self.poll.is_zero() {
            return Some("the poll interval must be longer than zero".into());
        }
        None
    }
}

/// A default worker name: this machine's name and the process id.
pub fn default_name() -> String {
    let host: String = host_name()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let host = host.trim_start_matches('.');
    format!(
        "{}-{}",
        if host.is_empty() { "worker" } else { host },
        std::process::id()
    )
}

/// This machine's name, as the system says it, else `localhost`.
fn host_name() -> String {
    ["HOSTNAME", "COMPUTERNAME"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|value| !value.is_empty()))
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|text| text.trim().to_owned())
                .filter(|name| !name.is_empty())
        })
        .unwrap_or_else(|| "localhost".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_that_cannot_work_are_named() {
        assert_eq!(WorkerOptions::new("w1").problem(), None);
        assert!(
            WorkerOptions::new("a b")
                .problem()
                .unwrap()
                .contains("worker name")
        );
        assert!(WorkerOptions::new("w").concurrency(0).problem().is_some());
        assert!(
            WorkerOptions::new("w")
                .lease(Duration::from_millis(10))
                .problem()
                .unwrap()
                .contains("too short")
        );
        let name = default_name();
        assert!(
            wayline_core::store::check_id("worker", &name).is_ok(),
            "{name}"
        );
    }
}
