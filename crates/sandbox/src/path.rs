//! Workspace paths under Bay's rules: empty, NUL byte, absolute and climbing above the
//! workspace are `invalid_path` (with `details.field` and `details.reason`); the lexically
//! normalized path is what is used (`a/../b` → `b`, nothing left → `.`); hidden files are
//! allowed. A symlink that resolves outside the workspace is refused too.

use std::path::{Component, Path, PathBuf};

use crate::error::{ErrorCode, SandboxError};

/// Which request field a path came from (`path`, or `cwd` for shell exec).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathField {
    /// A file or directory path.
    Path,
    /// A shell command's working directory.
    Cwd,
}

impl PathField {
    fn name(self) -> &'static str {
        match self {
            PathField::Path => "path",
            PathField::Cwd => "cwd",
        }
    }
}

fn invalid(field: PathField, reason: &str, message: &str) -> SandboxError {
    SandboxError::new(ErrorCode::InvalidPath, message)
        .detail("field", field.name())
        .detail("reason", reason)
}

/// `path` normalized under Bay's rules, or `invalid_path` with the reason (`empty_path`,
/// `null_byte`, `absolute_path`, `path_traversal`).
pub fn normalize(path: &str, field: PathField) -> Result<String, SandboxError> {
    if path.is_empty() {
        return Err(invalid(field, "empty_path", "Path cannot be empty"));
    }
    if path.contains('\0') {
        return Err(invalid(
            field,
            "null_byte",
            "Path cannot contain null bytes",
        ));
    }
    if path.starts_with('/') {
        return Err(invalid(
            field,
            "absolute_path",
            "Absolute paths are not allowed; give a path relative to the workspace",
        ));
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(invalid(
                        field,
                        "path_traversal",
                        "Path traversal outside the workspace is not allowed",
                    ));
                }
            }
            other => parts.push(other),
        }
    }
    Ok(if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    })
}

/// The place in `workspace` a normalized path names, refused when it (or the symlinks on its
/// way) leads outside the workspace. The path need not exist: the longest existing prefix is
/// resolved, and the rest holds no symlink (a dangling symlink on the way is refused, since
/// where it leads could change). Checked when called: code running in the sandbox at the same
/// moment can still swap a directory for a symlink afterwards (see `local`'s note on
/// isolation).
pub fn resolve(
    workspace: &Path,
    normalized: &str,
    field: PathField,
) -> Result<PathBuf, SandboxError> {
    let root = workspace.canonicalize().map_err(|error| {
        SandboxError::new(
            ErrorCode::InternalError,
            format!(
                "the workspace {} is unreadable: {error}",
                workspace.display()
            ),
        )
    })?;
    let joined = root.join(normalized);
    // Find the longest prefix that exists, resolve it, and put the rest back on.
    let mut existing = joined.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        if existing
            .symlink_metadata()
            .is_ok_and(|metadata| metadata.file_type().is_symlink())
        {
            return Err(invalid(
                field,
                "path_traversal",
                "Path goes through a symlink that leads nowhere; remove it or make its target first",
            ));
        }
        match (
            existing.file_name().map(ToOwned::to_owned),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut resolved = existing.canonicalize().map_err(|error| {
        SandboxError::new(
            ErrorCode::InternalError,
            format!("cannot resolve {normalized}: {error}"),
        )
    })?;
    for name in rest.into_iter().rev() {
        resolved.push(name);
    }
    let escapes = !resolved.starts_with(&root)
        || resolved
            .components()
            .any(|component| matches!(component, Component::ParentDir));
    if escapes {
        return Err(invalid(
            field,
            "path_traversal",
            "Path resolves outside the workspace (through a symlink)",
        ));
    }
    Ok(resolved)
}

/// Like [`resolve`], but the last component is not followed: the parent directory is
/// resolved (and must be inside the workspace) and the name put back on. For deleting a
/// symlink itself rather than what it points at. `.` is the workspace.
pub fn resolve_parent(
    workspace: &Path,
    normalized: &str,
    field: PathField,
) -> Result<PathBuf, SandboxError> {
    match normalized.rsplit_once('/') {
        _ if normalized == "." => resolve(workspace, ".", field),
        Some((parent, name)) => Ok(resolve(workspace, parent, field)?.join(name)),
        None => Ok(resolve(workspace, ".", field)?.join(normalized)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(path: &str) -> String {
        let error = normalize(path, PathField::Path).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidPath);
        assert_eq!(error.details["field"], "path");
        error.details["reason"].as_str().unwrap().to_owned()
    }

    #[test]
    fn bays_path_rules() {
        assert_eq!(reason(""), "empty_path");
        assert_eq!(reason("a\0b"), "null_byte");
        assert_eq!(reason("/etc/passwd"), "absolute_path");
        assert_eq!(reason("../x"), "path_traversal");
        assert_eq!(reason("a/../../x"), "path_traversal");
        assert_eq!(
            normalize("subdir/../test.txt", PathField::Path).unwrap(),
            "test.txt"
        );
        assert_eq!(normalize("a/./b//c", PathField::Path).unwrap(), "a/b/c");
        assert_eq!(normalize("a/..", PathField::Path).unwrap(), ".");
        assert_eq!(
            normalize(".gitignore", PathField::Path).unwrap(),
            ".gitignore"
        );
        let cwd = normalize("/tmp", PathField::Cwd).unwrap_err();
        assert_eq!(cwd.details["field"], "cwd");
    }

    #[cfg(unix)] // the symlinks are made as Unix makes them
    #[test]
    fn a_symlink_out_of_the_workspace_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), workspace.path().join("escape")).unwrap();
        std::fs::create_dir(workspace.path().join("inside")).unwrap();
        let error = resolve(workspace.path(), "escape/secret.txt", PathField::Path).unwrap_err();
        assert_eq!(error.details["reason"], "path_traversal");
        let fine = resolve(workspace.path(), "inside/new/file.txt", PathField::Path).unwrap();
        assert!(fine.ends_with("inside/new/file.txt"));
        std::os::unix::fs::symlink(
            workspace.path().join("inside"),
            workspace.path().join("alias"),
        )
        .unwrap();
        assert!(
            resolve(workspace.path(), "alias/x", PathField::Path).is_ok(),
            "links inside are fine"
        );
        std::os::unix::fs::symlink("/nonexistent/place", workspace.path().join("dangling"))
            .unwrap();
        let dangling = resolve(workspace.path(), "dangling/x", PathField::Path).unwrap_err();
        assert_eq!(dangling.details["reason"], "path_traversal");
        // The parent is resolved, the link itself is not followed.
        let link = resolve_parent(workspace.path(), "escape", PathField::Path).unwrap();
        assert_eq!(
            link,
            workspace.path().canonicalize().unwrap().join("escape")
        );
        let under = resolve_parent(workspace.path(), "escape/x", PathField::Path).unwrap_err();
        assert_eq!(under.details["reason"], "path_traversal");
    }
}
