//! [`FileStore`]: one JSON file per workflow version and per run, for development.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde::de::DeserializeOwned;
use wayline_core::store::{
    Cursor, RunPage, RunQuery, RunStore, RunSummary, StoreError, StoreErrorKind, StoredWorkflow,
    WorkflowStore, check_id,
};
use wayline_core::{Run, StepResult};
use wayline_durable::LockFile;

use crate::records;

/// Workflows and runs as JSON files under one directory.
///
/// ```text
/// ROOT/.lock                       held while a file is read, changed and written back
/// ROOT/workflows/ID/vN.json        one StoredWorkflow per version
/// ROOT/runs/ID.json                one Run
/// ```
///
/// Every write goes to a temporary file in the same directory, is synced, renamed over the old
/// file and the directory synced: a reader sees the old or the new file, never half of one, and a
/// crash leaves at worst a stray `.tmp` file (ignored). Changes take an exclusive lock on
/// `ROOT/.lock`, so two processes sharing a store do not lose each other's writes.
#[derive(Debug, Clone)]
pub struct FileStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    root: PathBuf,
    /// Serialises this process's writers; the lock file serialises processes.
    writers: Mutex<()>,
}

impl FileStore {
    /// Opens (creating when needed) the store in directory `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<FileStore, StoreError> {
        let root = root.into();
        for dir in [root.join("workflows"), root.join("runs")] {
            fs::create_dir_all(&dir).map_err(|error| unavailable("create", &dir, &error))?;
        }
        LockFile::ensure(&root.join(".lock")).map_err(durable_error)?;
        Ok(FileStore {
            inner: Arc::new(Inner {
                root,
                writers: Mutex::new(()),
            }),
        })
    }

    /// The store's directory.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// Runs `work` on the blocking pool (file I/O must not stall the async runtime).
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Inner) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || work(&inner))
            .await
            .map_err(|error| {
                StoreError::new(
                    StoreErrorKind::Unavailable,
                    format!("file store task failed: {error}"),
                )
            })?
    }
}

impl Inner {
    fn workflow_dir(&self, id: &str) -> PathBuf {
        self.root.join("workflows").join(id)
    }

    fn workflow_path(&self, id: &str, version: u32) -> PathBuf {
        self.workflow_dir(id).join(format!("v{version}.json"))
    }

    fn run_path(&self, id: &str) -> PathBuf {
        self.root.join("runs").join(format!("{id}.json"))
    }

    /// Runs `change` holding both the in-process and the cross-process write lock.
    fn locked<T>(&self, change: impl FnOnce() -> Result<T, StoreError>) -> Result<T, StoreError> {
        let _local = self
            .writers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _held = LockFile::acquire(&self.root.join(".lock")).map_err(durable_error)?;
        change()
    }
}

/// Writes `value` as JSON to `path` atomically and durably.
fn write<T: Serialize>(path: &Path, value: &T) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec_pretty(value).map_err(|error| {
        StoreError::new(
            StoreErrorKind::Invalid,
            format!("cannot encode {}: {error}", path.display()),
        )
    })?;
    wayline_durable::write(path, &bytes).map_err(durable_error)
}

/// Reads one JSON record; `None` when the file does not exist.
fn read<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, StoreError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(unavailable("read", path, &error)),
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|error| {
        StoreError::new(
            StoreErrorKind::Corrupt,
            format!(
                "{} is damaged: {error} (line {}, column {}); restore it from a backup or move it out of the store",
                path.display(),
                error.line(),
                error.column()
            ),
        )
    })
}

/// The record files of a directory (`*.json`, not temporary files), sorted by name.
fn json_files(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(unavailable("list", dir, &error)),
    };
    let mut files = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|error| unavailable("list", dir, &error))?
            .path();
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or("");
        if !name.starts_with('.') && name.ends_with(".json") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The versions stored for one workflow, oldest first.
fn versions_in(dir: &Path) -> Result<Vec<StoredWorkflow>, StoreError> {
    let mut numbered = Vec::new();
    for path in json_files(dir)? {
        let version = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .and_then(|stem| stem.strip_prefix('v'))
            .and_then(|number| number.parse::<u32>().ok());
        if let Some(version) = version {
            numbered.push((version, path));
        }
    }
    numbered.sort_by_key(|(version, _)| *version);
    numbered
        .into_iter()
        .filter_map(|(_, path)| read::<StoredWorkflow>(&path).transpose())
        .collect()
}

fn durable_error(error: wayline_durable::Error) -> StoreError {
    StoreError::new(StoreErrorKind::Unavailable, error.to_string())
}

fn unavailable(action: &str, path: &Path, error: &io::Error) -> StoreError {
    StoreError::new(
        StoreErrorKind::Unavailable,
        format!("cannot {action} {}: {error}", path.display()),
    )
}

#[async_trait::async_trait]
impl WorkflowStore for FileStore {
    async fn insert_workflow(&self, record: &StoredWorkflow) -> Result<(), StoreError> {
        check_id("workflow", record.id())?;
        let record = record.clone();
        self.blocking(move |inner| {
            inner.locked(|| {
                let path = inner.workflow_path(record.id(), record.version);
                if path.exists() {
                    return Err(records::version_exists(&record));
                }
                write(&path, &record)
            })
        })
        .await
    }

    async fn update_workflow(&self, record: &StoredWorkflow) -> Result<StoredWorkflow, StoreError> {
        check_id("workflow", record.id())?;
        let record = record.clone();
        self.blocking(move |inner| {
            inner.locked(|| {
                let path = inner.workflow_path(record.id(), record.version);
                let stored: StoredWorkflow =
                    read(&path)?.ok_or_else(|| records::version_missing(&record))?;
                records::check_revision(&stored, &record)?;
                let mut next = record;
                // Wrapping: a hand-edited record may hold the largest value; any change still shows.
                next.revision = next.revision.wrapping_add(1);
                write(&path, &next)?;
                Ok(next)
            })
        })
        .await
    }

    async fn workflow(
        &self,
        id: &str,
        version: Option<u32>,
    ) -> Result<Option<StoredWorkflow>, StoreError> {
        if check_id("workflow", id).is_err() {
            return Ok(None);
        }
        let id = id.to_owned();
        self.blocking(move |inner| match version {
            Some(version) => read(&inner.workflow_path(&id, version)),
            None => Ok(versions_in(&inner.workflow_dir(&id))?.pop()),
        })
        .await
    }

    async fn workflow_versions(&self, id: &str) -> Result<Vec<StoredWorkflow>, StoreError> {
        if check_id("workflow", id).is_err() {
            return Ok(Vec::new());
        }
        let id = id.to_owned();
        self.blocking(move |inner| versions_in(&inner.workflow_dir(&id)))
            .await
    }

    async fn list_workflows(&self) -> Result<Vec<StoredWorkflow>, StoreError> {
        self.blocking(|inner| {
            let dir = inner.root.join("workflows");
            let entries = fs::read_dir(&dir).map_err(|error| unavailable("list", &dir, &error))?;
            let mut dirs = Vec::new();
            for entry in entries {
                let path = entry
                    .map_err(|error| unavailable("list", &dir, &error))?
                    .path();
                if path.is_dir() {
                    dirs.push(path);
                }
            }
            dirs.sort();
            let mut latest = Vec::new();
            for dir in dirs {
                if let Some(record) = versions_in(&dir)?.pop() {
                    latest.push(record);
                }
            }
            Ok(latest)
        })
        .await
    }
}

#[async_trait::async_trait]
impl RunStore for FileStore {
    async fn create_run(&self, run: &Run) -> Result<(), StoreError> {
        check_id("run", &run.id)?;
        let run = run.clone();
        self.blocking(move |inner| {
            inner.locked(|| {
                let path = inner.run_path(&run.id);
                if path.exists() {
                    return Err(records::run_exists(&run.id));
                }
                write(&path, &run)
            })
        })
        .await
    }

    async fn save_step(&self, run_id: &str, result: &StepResult) -> Result<(), StoreError> {
        check_id("run", run_id)?;
        let (run_id, result) = (run_id.to_owned(), result.clone());
        self.blocking(move |inner| {
            inner.locked(|| {
                let path = inner.run_path(&run_id);
                let mut run: Run = read(&path)?.ok_or_else(|| records::run_missing(&run_id))?;
                records::save_step_into(&mut run, &result)?;
                write(&path, &run)
            })
        })
        .await
    }

    async fn finish_run(&self, run: &Run) -> Result<(), StoreError> {
        check_id("run", &run.id)?;
        let run = run.clone();
        self.blocking(move |inner| {
            inner.locked(|| {
                let path = inner.run_path(&run.id);
                if !path.exists() {
                    return Err(records::run_missing(&run.id));
                }
                write(&path, &run)
            })
        })
        .await
    }

    async fn run(&self, id: &str) -> Result<Option<Run>, StoreError> {
        if check_id("run", id).is_err() {
            return Ok(None);
        }
        let id = id.to_owned();
        self.blocking(move |inner| read(&inner.run_path(&id))).await
    }

    async fn list_runs(&self, query: &RunQuery) -> Result<RunPage, StoreError> {
        let cursor = query.cursor.as_deref().map(Cursor::parse).transpose()?;
        let query = query.clone();
        self.blocking(move |inner| {
            let mut summaries = Vec::new();
            for path in json_files(&inner.root.join("runs"))? {
                if let Some(run) = read::<Run>(&path)? {
                    summaries.push(RunSummary::of(&run));
                }
            }
            Ok(records::page(
                summaries.into_iter(),
                &query,
                cursor.as_ref(),
            ))
        })
        .await
    }
}
