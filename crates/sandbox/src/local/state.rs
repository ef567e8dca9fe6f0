//! What the local provider keeps on disk: its sandboxes and idempotency keys in
//! `state.json` (written whole, to a temporary file synced and renamed over the old one, so a
//! crash leaves the old state or the new, never half of one), and each sandbox's executions in
//! `history/<id>.jsonl` (one line per execution, appended, and kept after the sandbox is
//! deleted, as Bay keeps its execution rows).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, SandboxError};
use crate::idempotency::IdempotencyStore;
use crate::provider::{Annotation, HistoryEntry};

/// The state file's format; a newer one is refused rather than misread.
const FORMAT: u32 = 1;

/// One sandbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Record {
    pub(crate) id: String,
    pub(crate) profile: String,
    pub(crate) cargo_id: String,
    pub(crate) capabilities: Vec<String>,
    #[serde(with = "crate::time::required")]
    pub(crate) created_at: DateTime<Utc>,
    #[serde(with = "crate::time::optional")]
    pub(crate) expires_at: Option<DateTime<Utc>>,
    #[serde(with = "crate::time::optional")]
    pub(crate) idle_expires_at: Option<DateTime<Utc>>,
}

/// One cargo (a workspace directory, `cargos/<id>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CargoRecord {
    /// Made for the sandbox `sandbox` and deleted with it (else external).
    pub(crate) managed_by: Option<String>,
    pub(crate) size_limit_mb: u64,
    #[serde(with = "crate::time::required")]
    pub(crate) created_at: DateTime<Utc>,
    #[serde(with = "crate::time::required")]
    pub(crate) last_accessed_at: DateTime<Utc>,
}

/// Everything in `state.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Persisted {
    format: u32,
    pub(crate) sandboxes: BTreeMap<String, Record>,
    /// Cargos by id (a state written before cargos were kept gets its sandboxes' own).
    #[serde(default)]
    pub(crate) cargos: BTreeMap<String, CargoRecord>,
    /// Ids deleted, so deleting again answers 204 as Bay does (not 404).
    #[serde(default)]
    pub(crate) deleted: Vec<String>,
    pub(crate) idempotency: IdempotencyStore,
}

impl Persisted {
    pub(crate) fn new(idempotency: IdempotencyStore) -> Self {
        Persisted {
            format: FORMAT,
            sandboxes: BTreeMap::new(),
            cargos: BTreeMap::new(),
            deleted: Vec::new(),
            idempotency,
        }
    }
}

fn internal(message: String) -> SandboxError {
    SandboxError::new(ErrorCode::InternalError, message)
}

/// A file the provider keeps whole: it says which format wrote it.
pub(crate) trait Kept: serde::de::DeserializeOwned + Serialize {
    /// Its name in the data directory.
    const FILE: &'static str;
    /// What it is, for errors.
    const WHAT: &'static str;
    /// The format it was written in.
    fn format(&self) -> u32;
}

impl Kept for Persisted {
    const FILE: &'static str = "state.json";
    const WHAT: &'static str = "sandbox state";
    fn format(&self) -> u32 {
        self.format
    }
}

/// The newest format of the kept files this build reads.
pub(crate) const KEPT_FORMAT: u32 = FORMAT;

/// The `T` kept in `dir`, or `None` when there is none yet.
pub(crate) fn load<T: Kept>(dir: &Path) -> Result<Option<T>, SandboxError> {
    let path = dir.join(T::FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(internal(format!("cannot read {}: {error}", path.display()))),
    };
    let kept: T = serde_json::from_str(&text).map_err(|error| {
        internal(format!(
            "{}: line {}: not a wayline {} file ({error}); move it away to start afresh",
            path.display(),
            error.line(),
            T::WHAT,
        ))
    })?;
    if kept.format() > FORMAT {
        return Err(internal(format!(
            "{} was written by a newer wayline (format {}, this one reads {FORMAT})",
            path.display(),
            kept.format()
        )));
    }
    Ok(Some(kept))
}

/// Writes `kept` to `dir`, durably ([`wayline_durable::write`]).
pub(crate) fn save<T: Kept>(dir: &Path, kept: &T) -> Result<(), SandboxError> {
    let text = serde_json::to_vec_pretty(kept)
        .map_err(|error| internal(format!("cannot encode the {}: {error}", T::WHAT)))?;
    wayline_durable::write(&dir.join(T::FILE), &text).map_err(|error| internal(error.to_string()))
}

fn history_path(dir: &Path, id: &str) -> PathBuf {
    dir.join("history").join(format!("{id}.jsonl"))
}

/// Appends an execution to a sandbox's history.
pub(crate) fn append_history(
    dir: &Path,
    sandbox: &str,
    entry: &HistoryEntry,
) -> Result<(), SandboxError> {
    append_line(&history_path(dir, sandbox), entry)
}

/// Where the annotations of a sandbox's executions are kept: one line per `PATCH`, appended,
/// so a note never rewrites the history an execution may be appending to.
fn annotations_path(dir: &Path, id: &str) -> PathBuf {
    dir.join("history").join(format!("{id}.annotations.jsonl"))
}

/// One annotation, as kept.
#[derive(serde::Serialize, serde::Deserialize)]
struct Annotated {
    execution_id: String,
    #[serde(flatten)]
    annotation: Annotation,
}

/// Appends an annotation of `execution` to a sandbox's history.
pub(crate) fn append_annotation(
    dir: &Path,
    sandbox: &str,
    execution: &str,
    annotation: &Annotation,
) -> Result<(), SandboxError> {
    let line = Annotated {
        execution_id: execution.to_owned(),
        annotation: annotation.clone(),
    };
    append_line(&annotations_path(dir, sandbox), &line)
}

fn append_line(path: &Path, value: &impl serde::Serialize) -> Result<(), SandboxError> {
    let mut line = serde_json::to_vec(value)
        .map_err(|error| internal(format!("cannot encode a history line: {error}")))?;
    line.push(b'\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(&line))
        .map_err(|error| internal(format!("cannot write {}: {error}", path.display())))
}

/// The lines of a JSONL file that read as `T` (a line a crash cut short is skipped); none when
/// the file is not there.
fn read_lines<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, SandboxError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(internal(format!("cannot read {}: {error}", path.display()))),
    };
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect())
}

/// A sandbox's executions, oldest first, with their annotations applied.
pub(crate) fn read_history(dir: &Path, sandbox: &str) -> Result<Vec<HistoryEntry>, SandboxError> {
    let mut entries: Vec<HistoryEntry> = read_lines(&history_path(dir, sandbox))?;
    for annotated in read_lines::<Annotated>(&annotations_path(dir, sandbox))? {
        if let Some(entry) = entries
            .iter_mut()
            .find(|entry| entry.id == annotated.execution_id)
        {
            annotated.annotation.apply(entry);
        }
    }
    Ok(entries)
}

/// Every sandbox's executions (deleted sandboxes' too: Bay keeps the evidence skills are
/// learned from), with their annotations applied.
pub(crate) fn all_history(dir: &Path) -> Result<Vec<HistoryEntry>, SandboxError> {
    let folder = dir.join("history");
    let listing = std::fs::read_dir(&folder)
        .map_err(|error| internal(format!("cannot read {}: {error}", folder.display())))?;
    let mut entries = Vec::new();
    for item in listing.flatten() {
        let name = item.file_name();
        let Some(sandbox) = name
            .to_str()
            .and_then(|name| name.strip_suffix(".jsonl"))
            .filter(|stem| !stem.ends_with(".annotations"))
        else {
            continue;
        };
        entries.extend(read_history(dir, sandbox)?);
    }
    Ok(entries)
}
