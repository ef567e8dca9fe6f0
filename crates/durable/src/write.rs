//! Writing a file whole, durably.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use crate::error::{Action, Error};

/// How much of the target's name a temporary file's name keeps: enough to tell whose it is,
/// short enough that a name near the file system's limit still leaves room.
const NAME_KEPT: usize = 32;

/// Names tried before giving up when the random ones are taken (by a stray file of a crashed
/// writer, or one planted on purpose).
const ATTEMPTS: usize = 8;

/// Writes `bytes` to `path` durably: its directory is made if missing; the bytes go to a new
/// temporary file beside it (`.NAME.RANDOM.tmp`, created exclusively, so nothing already there
/// — a symlink included — is written through), which is synced, renamed over `path`, and the
/// directory synced. A reader sees the old file or the new one; after a crash at any point the
/// file holds the old content or the new, and at worst a stray `.tmp` file is left (readers
/// skip names starting with a dot). On an error before the rename the temporary file is
/// removed and `path` is untouched; an error syncing the directory after it is reported too,
/// since the new content may not outlast a power loss.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("state.json");
/// wayline_durable::write(&path, b"{}").unwrap();
/// wayline_durable::write(&path, b"{\"n\": 1}").unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"{\"n\": 1}");
/// ```
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let dir = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|error| Error::io(Action::Create, dir, error))?;
    let (temporary, mut file) =
        create_temporary(dir, path).map_err(|error| Error::io(Action::Write, path, error))?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| fs::rename(&temporary, path));
    drop(file);
    if let Err(error) = written {
        let _ = fs::remove_file(&temporary);
        return Err(Error::io(Action::Write, path, error));
    }
    sync_directory(dir).map_err(|error| Error::io(Action::Write, path, error))
}

/// A new temporary file in `dir` for `path`, created exclusively under a random name.
fn create_temporary(dir: &Path, path: &Path) -> std::io::Result<(PathBuf, File)> {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_owned());
    let mut kept = NAME_KEPT.min(name.len());
    while !name.is_char_boundary(kept) {
        kept -= 1;
    }
    let mut last = None;
    for _ in 0..ATTEMPTS {
        let temporary = dir.join(format!(".{}.{:016x}.tmp", &name[..kept], fastrand::u64(..)));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
        {
            Ok(file) => return Ok((temporary, file)),
            // Not ours: never written to, never removed.
            Err(error) if error.kind() == ErrorKind::AlreadyExists => last = Some(error),
            Err(error) => return Err(error),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::from(ErrorKind::AlreadyExists)))
}

/// Syncs a directory, so a rename in it outlasts a power loss. Windows cannot open a directory
/// as a file; its renames are journaled by NTFS.
fn sync_directory(dir: &Path) -> std::io::Result<()> {
    if cfg!(windows) {
        return Ok(());
    }
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file.json");
        write(&path, b"old").unwrap();
        // A directory where the file should be: the rename fails.
        let blocked = dir.path().join("blocked");
        fs::create_dir_all(blocked.join("inside")).unwrap();
        let error = write(&blocked, b"new").unwrap_err();
        assert!(error.to_string().starts_with("cannot write "), "{error}");
        assert_eq!(fs::read(&path).unwrap(), b"old");
        let names = names(dir.path());
        assert!(
            names.iter().all(|name| !name.ends_with(".tmp")),
            "{names:?}"
        );
    }

    #[test]
    fn a_name_at_the_file_systems_limit_still_gets_a_temporary() {
        let dir = tempfile::tempdir().unwrap();
        // 254 bytes, with a two-byte character where the temporary's name cuts it.
        let long = format!("{}é{}.json", "n".repeat(31), "n".repeat(216));
        write(&dir.path().join(&long), b"x").unwrap();
        assert_eq!(fs::read(dir.path().join(&long)).unwrap(), b"x");
        assert_eq!(names(dir.path()), [long]);
    }

    #[test]
    fn a_temporary_already_there_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        // A stray file with a temporary's shape, as a crashed writer leaves one.
        let stray = dir.path().join(".state.json.0000000000000000.tmp");
        fs::write(&stray, b"stray").unwrap();
        write(&path, b"new").unwrap();
        assert_eq!(fs::read(&stray).unwrap(), b"stray");
        assert_eq!(fs::read(&path).unwrap(), b"new");
    }
}
