//! The audit log: append-only, each entry carrying the hash of the one before, so an edit, a
//! removal or a reordering anywhere breaks the chain and [`verify`] says where.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The hash the first entry links to.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One audited event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AuditEntry {
    /// Position in the log, from 1.
    pub seq: u64,
    /// When.
    pub at: DateTime<Utc>,
    /// The session.
    pub session: String,
    /// `decision`, `transition`, `evidence`, `break_glass_granted`, `break_glass_refused`,
    /// `break_glass_call`.
    pub kind: String,
    /// What happened, as data.
    pub detail: Value,
    /// The previous entry's hash ([`GENESIS`] for the first).
    pub prev_hash: String,
    /// SHA-256 of this entry without `hash`, as compact JSON, in hex.
    pub hash: String,
}

impl AuditEntry {
    /// The hash an entry with these fields must carry.
    pub fn compute_hash(&self) -> String {
        let unsigned = serde_json::json!({
            "seq": self.seq,
            "at": self.at,
            "session": self.session,
            "kind": self.kind,
            "detail": self.detail,
            "prev_hash": self.prev_hash,
        });
        let digest = Sha256::digest(unsigned.to_string().as_bytes());
        digest.iter().map(|byte| format!("{byte:02x}")).collect()
    }
}

/// Where audit entries go.
pub trait AuditSink: Send + Sync + std::fmt::Debug {
    /// Appends `entry` durably (or fails).
    fn append(&self, entry: &AuditEntry) -> Result<(), String>;
}

/// The chain's state: the next sequence number and the last hash.
#[derive(Debug)]
pub struct AuditLog {
    sink: Box<dyn AuditSink>,
    head: Mutex<(u64, String)>,
}

impl AuditLog {
    /// A log writing to `sink`, continuing a chain whose last entry had `seq` and `hash`
    /// (`(0, GENESIS)` for a new log).
    pub fn new(sink: Box<dyn AuditSink>, last_seq: u64, last_hash: String) -> Self {
        AuditLog {
            sink,
            head: Mutex::new((last_seq, last_hash)),
        }
    }

    /// A log appending to a JSON-lines file, continuing its chain if it has one.
    pub fn file(path: impl Into<PathBuf>) -> Result<Self, String> {
        let path = path.into();
        let (last_seq, last_hash) = match std::fs::read_to_string(&path) {
            Ok(text) => match text.lines().rfind(|line| !line.trim().is_empty()) {
                Some(line) => {
                    let entry: AuditEntry = serde_json::from_str(line).map_err(|error| {
                        format!("{}: the last entry is unreadable: {error}", path.display())
                    })?;
                    (entry.seq, entry.hash)
                }
                None => (0, GENESIS.to_owned()),
            },
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => (0, GENESIS.to_owned()),
            Err(error) => return Err(format!("cannot read {}: {error}", path.display())),
        };
        Ok(AuditLog::new(
            Box::new(FileSink::new(path)),
            last_seq,
            last_hash,
        ))
    }

    /// Appends an event; returns the entry written.
    pub fn record(
        &self,
        session: &str,
        kind: &str,
        detail: Value,
        at: DateTime<Utc>,
    ) -> Result<AuditEntry, String> {
        let mut head = self
            .head
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut entry = AuditEntry {
            seq: head.0 + 1,
            at,
            session: session.to_owned(),
            kind: kind.to_owned(),
            detail,
            prev_hash: head.1.clone(),
            hash: String::new(),
        };
        entry.hash = entry.compute_hash();
        self.sink.append(&entry)?;
        *head = (entry.seq, entry.hash.clone());
        Ok(entry)
    }
}

/// Appends entries as JSON lines to a file (created when missing), flushed and synced each
/// time.
#[derive(Debug)]
pub struct FileSink {
    path: PathBuf,
    lock: Mutex<()>,
}

impl FileSink {
    /// A sink for `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileSink {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }
}

impl AuditSink for FileSink {
    fn append(&self, entry: &AuditEntry) -> Result<(), String> {
        let _guard = self
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let line = serde_json::to_string(entry).map_err(|error| error.to_string())?;
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|error| format!("cannot open {}: {error}", self.path.display()))?;
        writeln!(file, "{line}")
            .and_then(|()| file.sync_data())
            .map_err(|error| format!("cannot write {}: {error}", self.path.display()))
    }
}

/// Keeps entries in memory (tests, hosts with their own persistence).
#[derive(Debug, Default)]
pub struct MemorySink {
    entries: Mutex<Vec<AuditEntry>>,
}

impl MemorySink {
    /// The entries so far.
    pub fn entries(&self) -> Vec<AuditEntry> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl AuditSink for MemorySink {
    fn append(&self, entry: &AuditEntry) -> Result<(), String> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(entry.clone());
        Ok(())
    }
}

impl AuditSink for std::sync::Arc<MemorySink> {
    fn append(&self, entry: &AuditEntry) -> Result<(), String> {
        self.as_ref().append(entry)
    }
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verification {
    /// Every entry links to the one before and carries its own hash.
    Intact {
        /// Entries checked.
        entries: u64,
    },
    /// The chain breaks at `line` (1-based).
    Broken {
        /// The line.
        line: usize,
        /// What is wrong there.
        reason: String,
    },
}

/// Checks a chain of entries (JSON lines).
pub fn verify_text(text: &str) -> Verification {
    let mut previous = GENESIS.to_owned();
    let mut expected_seq = 1u64;
    let mut count = 0;
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let broken = |reason: String| Verification::Broken {
            line: index + 1,
            reason,
        };
        let entry: AuditEntry = match serde_json::from_str(line) {
            Ok(entry) => entry,
            Err(error) => return broken(format!("not an audit entry: {error}")),
        };
        if entry.seq != expected_seq {
            return broken(format!(
                "entry {} where entry {expected_seq} should be (one removed or moved)",
                entry.seq
            ));
        }
        if entry.prev_hash != previous {
            return broken("it does not link to the entry before it".into());
        }
        if entry.compute_hash() != entry.hash {
            return broken("its content does not match its hash (it was edited)".into());
        }
        previous = entry.hash;
        expected_seq += 1;
        count += 1;
    }
    Verification::Intact { entries: count }
}

/// Checks the audit file at `path`.
pub fn verify(path: &Path) -> Result<Verification, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    Ok(verify_text(&text))
}
