//! File operations in a workspace, with Bay's answers: missing files on read, list and delete
//! are `ship_error` (Ship's 404 passed through, as Bay does), a missing download is
//! `file_not_found`, listings hide dot-entries and put directories first.

use std::path::Path;

use crate::error::{ErrorCode, SandboxError};
use crate::model::FileEntry;

/// Ship's 404 as Bay reports it.
pub(crate) fn ship_not_found(path: &str) -> SandboxError {
    SandboxError::new(
        ErrorCode::ShipError,
        format!("Ship request failed: 404 (no file or directory `{path}`)"),
    )
    .detail("status", 404)
    .detail("path", path)
}

fn io_error(what: &str, path: &str, error: &std::io::Error) -> SandboxError {
    if error.kind() == std::io::ErrorKind::NotFound {
        return ship_not_found(path);
    }
    SandboxError::new(
        ErrorCode::ShipError,
        format!("Ship request failed: cannot {what} `{path}`: {error}"),
    )
    .detail("path", path)
}

/// The size limit, checked before anything is written.
pub(crate) fn check_size(path: &str, size: u64, limit: u64) -> Result<(), SandboxError> {
    if size > limit {
        return Err(SandboxError::new(
            ErrorCode::ValidationError,
            format!(
                "`{path}` is {size} bytes, more than the {limit} bytes a file may have here; \
                 split it, or raise the limit (the provider's `max_file_bytes`, the profile's \
                 `max_file_mb`)"
            ),
        )
        .detail("path", path)
        .detail("size", size)
        .detail("limit", limit));
    }
    Ok(())
}

/// Reads a UTF-8 file.
pub(crate) async fn read_text(full: &Path, path: &str, limit: u64) -> Result<String, SandboxError> {
    let bytes = read_bytes(full, path, limit)
        .await
        .map_err(|error| match error.code {
            ErrorCode::FileNotFound => ship_not_found(path),
            _ => error,
        })?;
    String::from_utf8(bytes).map_err(|_| {
        SandboxError::new(
            ErrorCode::ShipError,
            format!("Ship request failed: `{path}` is not UTF-8 text; download it instead"),
        )
        .detail("path", path)
    })
}

/// Reads a file's bytes (`file_not_found` when it is missing).
pub(crate) async fn read_bytes(
    full: &Path,
    path: &str,
    limit: u64,
) -> Result<Vec<u8>, SandboxError> {
    let metadata = match tokio::fs::metadata(full).await {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(SandboxError::new(
                ErrorCode::FileNotFound,
                format!("File not found: {path}"),
            )
            .detail("path", path));
        }
        Err(error) => return Err(io_error("read", path, &error)),
    };
    if metadata.is_dir() {
        return Err(SandboxError::new(
            ErrorCode::ShipError,
            format!("Ship request failed: `{path}` is a directory"),
        )
        .detail("path", path));
    }
    check_size(path, metadata.len(), limit)?;
    tokio::fs::read(full)
        .await
        .map_err(|error| io_error("read", path, &error))
}

/// Writes bytes, creating parent directories, replacing the file whole
/// ([`wayline_durable::write`]): the bytes go to a new temporary file, created exclusively (so
/// no symlink planted in the workspace can redirect the write), which is synced and renamed
/// over the target (replacing a symlink there rather than writing through it).
pub(crate) async fn write(full: &Path, path: &str, bytes: Vec<u8>) -> Result<(), SandboxError> {
    if tokio::fs::symlink_metadata(full)
        .await
        .is_ok_and(|metadata| metadata.is_dir())
    {
        return Err(SandboxError::new(
            ErrorCode::ShipError,
            format!("Ship request failed: `{path}` is a directory"),
        )
        .detail("path", path));
    }
    let Some(parent) = full.parent() else {
        return Err(io_error(
            "write",
            path,
            &std::io::Error::other("no parent directory"),
        ));
    };
    tokio::fs::create_dir_all(parent)
        .await
        .map_err(|error| io_error("create the directory of", path, &error))?;
    let target = full.to_path_buf();
    let written = tokio::task::spawn_blocking(move || wayline_durable::write(&target, &bytes))
        .await
        .unwrap_or_else(|error| {
            Err(wayline_durable::Error::Io {
                action: wayline_durable::Action::Write,
                path: full.to_path_buf(),
                source: std::io::Error::other(error),
            })
        });
    match written {
        Ok(()) => Ok(()),
        Err(wayline_durable::Error::Io { action, source, .. }) => {
            Err(io_error(action.as_str(), path, &source))
        }
        Err(other) => Err(io_error("write", path, &std::io::Error::other(other))),
    }
}

/// Deletes a file, a symlink (not what it points at), or a directory with everything in it.
/// `entry` is the unfollowed path ([`crate::path::resolve_parent`]). The workspace itself is
/// kept (its content is removed).
pub(crate) async fn delete(entry: &Path, path: &str) -> Result<(), SandboxError> {
    let metadata = tokio::fs::symlink_metadata(entry)
        .await
        .map_err(|error| io_error("delete", path, &error))?;
    let result = if metadata.is_dir() {
        if path == "." {
            let mut entries = tokio::fs::read_dir(entry)
                .await
                .map_err(|error| io_error("delete", path, &error))?;
            while let Some(inner) = entries
                .next_entry()
                .await
                .map_err(|error| io_error("delete", path, &error))?
            {
                let removed = if inner.file_type().await.is_ok_and(|kind| kind.is_dir()) {
                    tokio::fs::remove_dir_all(inner.path()).await
                } else {
                    tokio::fs::remove_file(inner.path()).await
                };
                removed.map_err(|error| io_error("delete", path, &error))?;
            }
            Ok(())
        } else {
            // `remove_dir_all` removes symlinks inside, never what they point at.
            tokio::fs::remove_dir_all(entry).await
        }
    } else {
        tokio::fs::remove_file(entry).await
    };
    result.map_err(|error| io_error("delete", path, &error))
}

/// A directory's visible entries, directories first, then by name ignoring case. `shown` is
/// how the code sees the directory (`/workspace/src`).
pub(crate) async fn list(
    full: &Path,
    path: &str,
    shown: &Path,
) -> Result<Vec<FileEntry>, SandboxError> {
    let mut entries = tokio::fs::read_dir(full)
        .await
        .map_err(|error| io_error("list", path, &error))?;
    let mut listed = Vec::new();
    while let Some(entry) = entries
        .next_entry()
        .await
        .map_err(|error| io_error("list", path, &error))?
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let Ok(metadata) = tokio::fs::metadata(entry.path()).await else {
            continue; // a dangling symlink
        };
        let modified_time = metadata
            .modified()
            .ok()
            .and_then(|at| at.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0.0, |since| since.as_secs_f64());
        listed.push(FileEntry {
            path: shown.join(&name).to_string_lossy().into_owned(),
            name,
            is_file: metadata.is_file(),
            is_dir: metadata.is_dir(),
            size: metadata.is_file().then_some(metadata.len()),
            modified_time,
        });
    }
    listed.sort_by(|a, b| {
        b.is_dir
            .cmp(&a.is_dir)
            .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
    });
    Ok(listed)
}
