//! The audit log: append-only, each entry carrying the hash of the one before, so an edit, a
//! removal or a reordering breaks the chain and [`verify`] says where. Two limits, as with any
//! unkeyed hash chain: cutting entries off the end leaves a valid shorter chain, and someone
//! able to rewrite the whole file can recompute every hash. [`verify`] returns the head hash so
//! a host can keep it elsewhere (a ticket, another system) and compare.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::Error;

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
    /// `decision`, `transition`, `evidence`, `break_glass_requested`, `break_glass_granted`,
    /// `break_glass_refused`, `break_glass_call`.
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
    /// Appends the entry `make(last_seq, last_hash)` builds from the last entry the sink holds
    /// (`(0, GENESIS)` when it holds none), reading that last entry under the sink's own lock,
    /// so writers in several processes extend one chain. Durable when it returns; a sink that
    /// cannot keep the entry answers [`Error::Audit`] (or [`Error::Io`] for a file).
    fn append_next(
        &self,
        make: &mut dyn FnMut(u64, &str) -> AuditEntry,
    ) -> Result<AuditEntry, Error>;
}

/// A hash-chained log over a sink. It remembers the entries it could not append, so that an
/// event the guard could not audit is never lost silently ([`AuditLog::failures`]).
#[derive(Debug)]
pub struct AuditLog {
    sink: Box<dyn AuditSink>,
    failures: Mutex<Vec<String>>,
}

impl AuditLog {
    /// A log writing to `sink`.
    pub fn new(sink: Box<dyn AuditSink>) -> Self {
        AuditLog {
            sink,
            failures: Mutex::new(Vec::new()),
        }
    }

    /// Why each entry this log could not append failed, in order (empty when every append
    /// succeeded). A host that audits shows these and does not report success.
    pub fn failures(&self) -> Vec<String> {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// A log appending to a JSON-lines file, continuing its chain. The file is created when
    /// missing, now, so a path that cannot be written is reported here rather than at the
    /// first entry.
    pub fn file(path: impl Into<PathBuf>) -> Result<Self, Error> {
        let path = path.into();
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|source| Error::io("open", &path, source))?;
        Ok(AuditLog::new(Box::new(FileSink::new(path))))
    }

    /// Appends an event; returns the entry written. A failure is also remembered
    /// ([`AuditLog::failures`]).
    pub fn record(
        &self,
        session: &str,
        kind: &str,
        detail: Value,
        at: DateTime<Utc>,
    ) -> Result<AuditEntry, Error> {
        let mut detail = Some(detail);
        let appended = self.sink.append_next(&mut |last_seq, last_hash| {
            let mut entry = AuditEntry {
                seq: last_seq + 1,
                at,
                session: session.to_owned(),
                kind: kind.to_owned(),
                detail: detail.take().unwrap_or_default(),
                prev_hash: last_hash.to_owned(),
                hash: String::new(),
            };
            entry.hash = entry.compute_hash();
            entry
        });
        if let Err(error) = &appended {
            self.failures
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(format!("{kind} entry for session `{session}`: {error}"));
        }
        appended
    }
}

/// Appends entries as JSON lines to a file, under an exclusive lock on the file itself (the
/// last entry is read under the same lock, unless the file is as this sink left it), flushed
/// and synced each time.
#[derive(Debug)]
pub struct FileSink {
    path: PathBuf,
    /// The file's length after our last append, and the entry we wrote: while the length is
    /// unchanged, nobody else appended, and the log need not be read again to find its tail.
    lock: Mutex<Option<(u64, u64, String)>>,
}

impl FileSink {
    /// A sink for `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileSink {
            path: path.into(),
            lock: Mutex::new(None),
        }
    }
}

/// The last entry of a log file's text, if any.
fn last_entry(text: &str, path: &Path) -> Result<Option<AuditEntry>, Error> {
    match text.lines().rfind(|line| !line.trim().is_empty()) {
        None => Ok(None),
        Some(line) => serde_json::from_str(line)
            .map(Some)
            .map_err(|error| Error::AuditTail {
                path: path.to_path_buf(),
                reason: error.to_string(),
            }),
    }
}

impl AuditSink for FileSink {
    fn append_next(
        &self,
        make: &mut dyn FnMut(u64, &str) -> AuditEntry,
    ) -> Result<AuditEntry, Error> {
        let mut tail = self
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let fail =
            |action: &'static str, error: std::io::Error| Error::io(action, &self.path, error);
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&self.path)
            .map_err(|error| fail("open", error))?;
        file.lock().map_err(|error| fail("lock", error))?;
        let written = (|| {
            let length = file.metadata().map_err(|error| fail("read", error))?.len();
            let (seq, hash, separator) = match tail.as_ref() {
                Some((known, seq, hash)) if *known == length => (*seq, hash.clone(), ""),
                _ => {
                    let mut text = String::new();
                    file.read_to_string(&mut text)
                        .map_err(|error| fail("read", error))?;
                    let (seq, hash) = match last_entry(&text, &self.path)? {
                        Some(last) => (last.seq, last.hash),
                        None => (0, GENESIS.to_owned()),
                    };
                    // A file cut in the middle of a line gets its own line back first.
                    let separator = if text.is_empty() || text.ends_with('\n') {
                        ""
                    } else {
                        "\n"
                    };
                    (seq, hash, separator)
                }
            };
            let entry = make(seq, &hash);
            let line = serde_json::to_string(&entry).map_err(|error| Error::Audit {
                message: format!("cannot encode entry {}: {error}", entry.seq),
            })?;
            writeln!(file, "{separator}{line}")
                .and_then(|()| file.sync_data())
                .map_err(|error| fail("write", error))?;
            let written = length + (separator.len() + line.len() + 1) as u64;
            *tail = Some((written, entry.seq, entry.hash.clone()));
            Ok(entry)
        })();
        let _ = file.unlock();
        written
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
    fn append_next(
        &self,
        make: &mut dyn FnMut(u64, &str) -> AuditEntry,
    ) -> Result<AuditEntry, Error> {
        let mut entries = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = match entries.last() {
            Some(last) => make(last.seq, &last.hash),
            None => make(0, GENESIS),
        };
        entries.push(entry.clone());
        Ok(entry)
    }
}

impl AuditSink for std::sync::Arc<MemorySink> {
    fn append_next(
        &self,
        make: &mut dyn FnMut(u64, &str) -> AuditEntry,
    ) -> Result<AuditEntry, Error> {
        self.as_ref().append_next(make)
    }
}

/// What [`verify`] found; as JSON, `{"result": "intact", "entries", "head"}` or
/// `{"result": "broken", "line", "reason"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Verification {
    /// Every entry links to the one before and carries its own hash.
    Intact {
        /// Entries checked.
        entries: u64,
        /// The last entry's hash ([`GENESIS`] for an empty log). A chain cannot show that
        /// entries were cut from its end: keep this somewhere else and compare.
        head: String,
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
    verify_chain(text, None)
}

/// Checks a chain of entries (JSON lines) and that the entry whose hash is `anchor` is still in
/// it: a head hash kept elsewhere (printed by [`verify`], or written to another system) shows
/// what the chain alone cannot, entries cut from its end or a log rewritten whole. A log that
/// has grown since the anchor was taken still passes.
///
/// ```
/// use chrono::Utc;
/// use wayline_guard::audit::{AuditLog, MemorySink, Verification, verify_anchored};
/// use std::sync::Arc;
///
/// let sink = Arc::new(MemorySink::default());
/// let log = AuditLog::new(Box::new(sink.clone()));
/// let first = log.record("s1", "decision", serde_json::json!({}), Utc::now()).unwrap();
/// log.record("s1", "decision", serde_json::json!({}), Utc::now()).unwrap();
/// let lines: Vec<String> =
///     sink.entries().iter().map(|entry| serde_json::to_string(entry).unwrap()).collect();
/// let text = lines.join("\n") + "\n";
/// assert!(matches!(verify_anchored(&text, &first.hash), Verification::Intact { .. }));
/// // The log cut back before the second entry: intact as a chain, but the head is gone.
/// let cut = format!("{}\n", lines[0]);
/// let head = sink.entries()[1].hash.clone();
/// assert!(matches!(verify_anchored(&cut, &head), Verification::Broken { .. }));
/// ```
pub fn verify_anchored(text: &str, anchor: &str) -> Verification {
    verify_chain(text, Some(anchor))
}

fn verify_chain(text: &str, anchor: Option<&str>) -> Verification {
    let mut anchored = anchor.is_none_or(|anchor| anchor == GENESIS);
    let mut last_line = 0;
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
        // The line must be exactly what was written: a duplicated key or other re-encoding
        // could show a reader something the hash does not cover.
        if serde_json::to_string(&entry).ok().as_deref() != Some(line.trim_end()) {
            return broken("it is not written as the log writes entries (it was edited)".into());
        }
        anchored |= anchor == Some(entry.hash.as_str());
        previous = entry.hash;
        expected_seq += 1;
        count += 1;
        last_line = index + 1;
    }
    if !anchored {
        return Verification::Broken {
            line: last_line + 1,
            reason: format!(
                "the log ends without the entry whose hash is {} (entries were cut from its end, \
                 or the log was rewritten)",
                anchor.unwrap_or_default()
            ),
        };
    }
    Verification::Intact {
        entries: count,
        head: previous,
    }
}

/// The largest audit file [`verify`] reads: 512 MiB, about two million entries. A longer log
/// is refused with an error saying so (rotate it, and verify each file).
pub const MAX_AUDIT_BYTES: usize = 512 * 1024 * 1024;

/// The audit file a person named: a regular text file of at most [`MAX_AUDIT_BYTES`], read
/// through the one reader of named documents (`wayline_durable::read`), so a FIFO or a device
/// is refused instead of read for ever.
fn read_log(path: &Path) -> Result<String, Error> {
    wayline_durable::read::text(path, MAX_AUDIT_BYTES)
        .map_err(|source| Error::io("read", path, source))
}

/// Checks the audit file at `path`.
pub fn verify(path: &Path) -> Result<Verification, Error> {
    Ok(verify_text(&read_log(path)?))
}

/// Checks the audit file at `path`, and that the entry whose hash is `anchor` is in it
/// ([`verify_anchored`]).
pub fn verify_from_anchor(path: &Path, anchor: &str) -> Result<Verification, Error> {
    Ok(verify_anchored(&read_log(path)?, anchor))
}
