//! [`YamlKnowledge`]: the knowledge format's directory layout,
//! `<root>/knowledge/<sut>/{patterns,pitfalls,stats}.yaml`.
//!
//! Each update takes an exclusive lock on `<root>/knowledge/<sut>/.lock` (and an in-process
//! mutex), reads the three files, applies the change and writes each file to a temporary file,
//! fsyncs it and renames it over the old one. Two processes recording at once therefore lose
//! no count. The three renames are not one atomic step: a crash between them can leave one
//! file a change ahead of another, never a half-written file.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use wayline_core::StoreError;
use wayline_core::store::{StoreErrorKind, check_id};
use wayline_durable::LockFile;

use crate::model::Knowledge;
use crate::store::{self, Change, FILES, KnowledgeStore};

/// Knowledge as YAML files in a directory tree (`<root>/knowledge/<sut>/`, three files each).
#[derive(Debug, Clone)]
pub struct YamlKnowledge {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// `<root>/knowledge`.
    dir: PathBuf,
    writers: Mutex<()>,
}

impl YamlKnowledge {
    /// The store under `root` (its `knowledge/` directory is created on the first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        YamlKnowledge {
            inner: Arc::new(Inner {
                dir: root.into().join("knowledge"),
                writers: Mutex::new(()),
            }),
        }
    }

    /// The directory holding one folder per SUT.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

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
                    format!("knowledge store task failed: {error}"),
                )
            })?
    }
}

impl Inner {
    fn read(&self, sut: &str) -> Result<Knowledge, StoreError> {
        let dir = self.dir.join(sut);
        let mut contents: Vec<Option<(String, String)>> = Vec::with_capacity(FILES.len());
        for name in FILES {
            let path = dir.join(name);
            contents.push(match fs::read_to_string(&path) {
                Ok(text) => Some((text, path.display().to_string())),
                Err(error) if error.kind() == io::ErrorKind::NotFound => None,
                Err(error) => return Err(unavailable("read", &path, &error)),
            });
        }
        let text = |index: usize| {
            contents[index]
                .as_ref()
                .map(|(text, origin)| (text.as_str(), origin.clone()))
        };
        store::from_yaml([text(0), text(1), text(2)])
    }

    fn locked<T>(
        &self,
        sut: &str,
        work: impl FnOnce() -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let _local = self
            .writers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let dir = self.dir.join(sut);
        fs::create_dir_all(&dir).map_err(|error| unavailable("create", &dir, &error))?;
        let _held = LockFile::acquire(&dir.join(".lock")).map_err(durable_error)?;
        work()
    }
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
impl KnowledgeStore for YamlKnowledge {
    async fn load(&self, sut: &str) -> Result<Knowledge, StoreError> {
        check_id("sut", sut)?;
        let sut = sut.to_owned();
        self.blocking(move |inner| inner.read(&sut)).await
    }

    async fn update(&self, sut: &str, change: Change) -> Result<Knowledge, StoreError> {
        check_id("sut", sut)?;
        let sut = sut.to_owned();
        self.blocking(move |inner| {
            inner.locked(&sut, || {
                let mut knowledge = inner.read(&sut)?;
                change(&mut knowledge);
                let texts = store::to_yaml(&knowledge)?;
                let dir = inner.dir.join(&sut);
                for (name, text) in FILES.iter().zip(&texts) {
                    wayline_durable::write(&dir.join(name), text.as_bytes())
                        .map_err(durable_error)?;
                }
                Ok(knowledge)
            })
        })
        .await
    }

    async fn suts(&self) -> Result<Vec<String>, StoreError> {
        self.blocking(|inner| {
            let entries = match fs::read_dir(&inner.dir) {
                Ok(entries) => entries,
                Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
                Err(error) => return Err(unavailable("list", &inner.dir, &error)),
            };
            let mut suts = Vec::new();
            for entry in entries {
                let path = entry
                    .map_err(|error| unavailable("list", &inner.dir, &error))?
                    .path();
                let has_files = FILES.iter().any(|name| path.join(name).is_file());
                if let Some(name) = path.file_name().and_then(|name| name.to_str())
                    && has_files
                    && check_id("sut", name).is_ok()
                {
                    suts.push(name.to_owned());
                }
            }
            suts.sort();
            Ok(suts)
        })
        .await
    }
}
