//! How a [`LocalProvider`](super::LocalProvider) is set up.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Clock, SystemClock};
use crate::local::isolation::IsolationMode;
use crate::profile::Profiles;

/// How a local provider is set up.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LocalConfig {
    /// Where workspaces, state and history live.
    pub data_dir: PathBuf,
    /// The profiles offered (Bay's two defaults unless set).
    pub profiles: Profiles,
    /// The Python interpreter (`python3`).
    pub python: String,
    /// Which isolation to use.
    pub isolation: IsolationMode,
    /// The largest file written, uploaded, read or downloaded, in bytes (100 MiB).
    pub max_file_bytes: u64,
    /// How long idempotency keys live (Bay's default: an hour).
    pub idempotency_ttl: Duration,
    /// The clock (tests move one by hand).
    pub clock: Arc<dyn Clock>,
    /// Whether garbage is collected on every call (see [`LocalConfig::auto_gc`]).
    pub auto_gc: bool,
}

impl LocalConfig {
    /// Defaults, with the data in `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        LocalConfig {
            data_dir: data_dir.into(),
            profiles: Profiles::bay_defaults(),
            python: "python3".to_owned(),
            isolation: IsolationMode::Auto,
            max_file_bytes: 100 * 1024 * 1024,
            idempotency_ttl: Duration::from_secs(3_600),
            clock: Arc::new(SystemClock),
            auto_gc: true,
        }
    }

    /// Offers `profiles`.
    pub fn profiles(mut self, profiles: Profiles) -> Self {
        self.profiles = profiles;
        self
    }

    /// Collects garbage on every call (`true`, the default): idle sessions are stopped as
    /// soon as a call sees their deadline passed. `false` leaves everything as it is until
    /// [`SandboxProvider::run_gc`](crate::SandboxProvider::run_gc) runs, as Bay does with its GC disabled.
    pub fn auto_gc(mut self, auto: bool) -> Self {
        self.auto_gc = auto;
        self
    }

    /// Uses `isolation`.
    pub fn isolation(mut self, isolation: IsolationMode) -> Self {
        self.isolation = isolation;
        self
    }

    /// Reads the time from `clock`.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Files may have at most `bytes`.
    pub fn max_file_bytes(mut self, bytes: u64) -> Self {
        self.max_file_bytes = bytes;
        self
    }

    /// Uses this Python interpreter.
    pub fn python(mut self, program: impl Into<String>) -> Self {
        self.python = program.into();
        self
    }
}
