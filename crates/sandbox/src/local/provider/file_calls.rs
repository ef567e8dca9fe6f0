//! The filesystem capability: files in a sandbox's workspace, each call checked and its path
//! resolved inside the workspace ([`crate::local::files`] does the reading and writing).

use crate::local::files;
use crate::model::FileEntry;
use crate::path::{self as paths, PathField};
use crate::provider::{SandboxResult, Uploaded};

use super::LocalProvider;
/// [`crate::SandboxProvider::read_file`].
pub(super) async fn read_file(
    provider: &LocalProvider,
    id: &str,
    path: &str,
) -> SandboxResult<String> {
    let (ready, normalized) = provider.file_call(id, path).await?;
    let full = provider.resolve(&ready, &normalized, PathField::Path)?;
    files::read_text(&full, &normalized, ready.max_file_bytes).await
}

/// [`crate::SandboxProvider::write_file`].
pub(super) async fn write_file(
    provider: &LocalProvider,
    id: &str,
    path: &str,
    content: &str,
) -> SandboxResult<()> {
    let (ready, normalized) = provider.file_call(id, path).await?;
    files::check_size(&normalized, content.len() as u64, ready.max_file_bytes)?;
    let full = provider.resolve(&ready, &normalized, PathField::Path)?;
    files::write(&full, &normalized, content.as_bytes().to_vec()).await?;
    provider.hand_over_within(&ready.workspace, &full)
}

/// [`crate::SandboxProvider::delete_file`].
pub(super) async fn delete_file(
    provider: &LocalProvider,
    id: &str,
    path: &str,
) -> SandboxResult<()> {
    let (ready, normalized) = provider.file_call(id, path).await?;
    let entry = paths::resolve_parent(&ready.workspace, &normalized, PathField::Path)?;
    files::delete(&entry, &normalized).await
}

/// [`crate::SandboxProvider::list_files`].
pub(super) async fn list_files(
    provider: &LocalProvider,
    id: &str,
    path: &str,
) -> SandboxResult<Vec<FileEntry>> {
    let (ready, normalized) = provider.file_call(id, path).await?;
    let full = provider.resolve(&ready, &normalized, PathField::Path)?;
    files::list(&full, &normalized, &LocalProvider::shown(&normalized)).await
}

/// [`crate::SandboxProvider::upload`].
pub(super) async fn upload(
    provider: &LocalProvider,
    id: &str,
    path: &str,
    bytes: Vec<u8>,
) -> SandboxResult<Uploaded> {
    let (ready, normalized) = provider.file_call(id, path).await?;
    let size = bytes.len() as u64;
    files::check_size(&normalized, size, ready.max_file_bytes)?;
    let full = provider.resolve(&ready, &normalized, PathField::Path)?;
    files::write(&full, &normalized, bytes).await?;
    provider.hand_over_within(&ready.workspace, &full)?;
    Ok(Uploaded {
        status: "ok".to_owned(),
        path: normalized,
        size,
    })
}

/// [`crate::SandboxProvider::download`].
pub(super) async fn download(
    provider: &LocalProvider,
    id: &str,
    path: &str,
) -> SandboxResult<Vec<u8>> {
    let (ready, normalized) = provider.file_call(id, path).await?;
    let full = provider.resolve(&ready, &normalized, PathField::Path)?;
    files::read_bytes(&full, &normalized, ready.max_file_bytes).await
}
