//! A lock file: an exclusive lock held across processes while a change is made.

use std::fs::{File, OpenOptions};
use std::path::Path;

use crate::error::{Action, Error};

/// An exclusive lock on a file, held until the value is dropped. Every process (and every
/// handle in this one) that acquires the same path waits for it: stores take one around
/// read-change-write, so two processes sharing a directory lose none of each other's writes.
/// The file is created when missing and never removed (removing it would let a waiting
/// process lock a file nobody else sees).
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let lock = dir.path().join(".lock");
/// let held = wayline_durable::LockFile::acquire(&lock).unwrap();
/// // ... read, change, write ...
/// drop(held);
/// ```
#[derive(Debug)]
pub struct LockFile {
    file: File,
}

impl LockFile {
    /// Opens (creating when missing) `path` and waits for an exclusive lock on it.
    pub fn acquire(path: &Path) -> Result<LockFile, Error> {
        let file = open(path)?;
        file.lock()
            .map_err(|error| Error::io(Action::Lock, path, error))?;
        Ok(LockFile { file })
    }

    /// Creates the lock file if it is missing, without locking it (a store makes it when
    /// opened, so that a read-only directory shows at once).
    pub fn ensure(path: &Path) -> Result<(), Error> {
        open(path).map(drop)
    }
}

fn open(path: &Path) -> Result<File, Error> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|error| Error::io(Action::Open, path, error))
}

impl Drop for LockFile {
    fn drop(&mut self) {
        // Closing the file releases the lock too; unlocking first makes the order explicit.
        let _ = self.file.unlock();
    }
}
