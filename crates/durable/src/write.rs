//! Writing a file whole, durably.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Action, Error};

/// Numbers this process's temporary files, so two writers of one file never share one.
static TEMPORARY: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` durably: its directory is made if missing; the bytes go to a new
/// temporary file beside it (`.NAME.PID-N.tmp`), which is synced, renamed over `path`, and the
/// directory synced. A reader sees the old file or the new one; after a crash at any point the
/// file holds the old content or the new, and at worst a stray `.tmp` file is left (readers
/// skip names starting with a dot). On an error the temporary file is removed.
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
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_owned());
    let temporary = dir.join(format!(
        ".{name}.{}-{}.tmp",
        std::process::id(),
        TEMPORARY.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temporary, path)?;
        sync_directory(dir)
    })();
    written.map_err(|error| {
        let _ = fs::remove_file(&temporary);
        Error::io(Action::Write, path, error)
    })
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
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|name| !name.ends_with(".tmp")),
            "{names:?}"
        );
    }
}
