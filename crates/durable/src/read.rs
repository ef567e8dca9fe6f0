//! Reading a document a user or another document names: only a regular file, only up to a
//! size, only text; and, for a file one document refers to, only where references may lead
//! ([`ReadScope`]). Every error names the path and never a byte of what the file holds.
//!
//! The checks are the reasons a read could go wrong whatever the file: a FIFO blocks for ever
//! and `/dev/zero` never ends, `/proc/self/environ` holds the process's environment (and is a
//! "regular" file of size 0 to `stat`), a binary file quoted in an error is noise at best and a
//! key at worst.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

pub use crate::error::roots_text;
use crate::error::{Action, Error};

/// Where the kernel shows processes, devices and its own state as files: never a document.
const SPECIAL_ROOTS: [&str; 3] = ["/proc", "/sys", "/dev"];

/// Reads the text document at `path`: a regular file (not a directory, FIFO, socket or device,
/// nor anything under `/proc`, `/sys` or `/dev`, even through a symbolic link), of at most
/// `max_bytes` bytes, holding UTF-8 text without NUL characters.
///
/// The errors are I/O errors saying what is wrong without repeating the path (the caller's
/// message names it) and without a byte of the file: `InvalidInput` for what is not a regular
/// file, `InvalidData` for what is too large or not text.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("w.yaml");
/// std::fs::write(&path, "id: w\n").unwrap();
/// assert_eq!(wayline_durable::read::text(&path, 1024).unwrap(), "id: w\n");
/// let error = wayline_durable::read::text(&path, 3).unwrap_err();
/// assert!(error.to_string().contains("more than the 3 bytes"), "{error}");
/// # #[cfg(target_os = "linux")]
/// assert!(wayline_durable::read::text("/proc/self/environ".as_ref(), 1024).is_err());
/// ```
pub fn text(path: &Path, max_bytes: usize) -> io::Result<String> {
    text_of(bytes(path, max_bytes)?)
}

/// The text `reader` gives (standard input, say), held to what [`text`] holds a file to: at
/// most `max_bytes` bytes of UTF-8 without NUL characters.
pub fn text_from(reader: impl Read, max_bytes: usize) -> io::Result<String> {
    text_of(capped(reader, max_bytes, 0)?)
}

fn text_of(bytes: Vec<u8>) -> io::Result<String> {
    if let Some(at) = bytes.iter().position(|&byte| byte == 0) {
        return Err(not_text(format!("it holds a NUL byte at offset {at}")));
    }
    String::from_utf8(bytes).map_err(|error| {
        not_text(format!(
            "it is not UTF-8 (at byte {})",
            error.utf8_error().valid_up_to()
        ))
    })
}

fn not_text(reason: String) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{reason}, so it is not a text document (nothing of it is shown)"),
    )
}

/// The bytes of the regular file at `path`, at most `max_bytes` of them (see [`text`]).
pub fn bytes(path: &Path, max_bytes: usize) -> io::Result<Vec<u8>> {
    refuse_special(path)?;
    let file = open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is {}, not a document", kind_of(&metadata)),
        ));
    }
    let expected = usize::try_from(metadata.len()).unwrap_or(usize::MAX);
    capped(file, max_bytes, expected)
}

/// At most `max_bytes` bytes from `reader` (room made for `expected` of them), or an error
/// when it holds more.
fn capped(reader: impl Read, max_bytes: usize, expected: usize) -> io::Result<Vec<u8>> {
    let limit = u64::try_from(max_bytes).unwrap_or(u64::MAX);
    let mut bytes = Vec::with_capacity(expected.min(max_bytes));
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() > max_bytes {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "it is more than the {max_bytes} bytes a document may be; split it, or raise the \
                 limit (WAYLINE_MAX_DOCUMENT_BYTES)"
            ),
        ));
    }
    Ok(bytes)
}

/// Opens `path` for reading without waiting on it: a FIFO opened so answers at once (and is then
/// refused as not a regular file) instead of blocking until a writer comes.
fn open(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    options.open(path)
}

/// Refuses a path that is, or resolves to, a place under [`SPECIAL_ROOTS`].
fn refuse_special(path: &Path) -> io::Result<()> {
    if !cfg!(unix) {
        return Ok(());
    }
    let resolved = std::fs::canonicalize(path)?;
    if SPECIAL_ROOTS.iter().any(|root| resolved.starts_with(root)) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is a file of the kernel's (under /proc, /sys or /dev), not a document",
        ));
    }
    Ok(())
}

fn kind_of(metadata: &std::fs::Metadata) -> &'static str {
    let kind = metadata.file_type();
    if kind.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "a device";
        }
    }
    "not a regular file"
}

/// Where the files a document refers to may be read from: at or below the directory of the
/// document a user named, and of any directory the user allowed besides. A reference that
/// leads elsewhere — `../../etc/passwd`, an absolute path, `file:///proc/self/environ`, a
/// symbolic link pointing out — is refused before anything is read.
///
/// ```
/// use wayline_durable::read::ReadScope;
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir(dir.path().join("specs")).unwrap();
/// std::fs::write(dir.path().join("specs/api.yaml"), "openapi: 3.1.0\n").unwrap();
/// let scope = ReadScope::beside(&dir.path().join("w.arazzo.yaml"));
/// assert!(scope.check(&dir.path().join("specs/api.yaml")).is_ok());
/// assert!(scope.check(&dir.path().join("specs/../../outside.yaml")).is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadScope {
    /// The directories (canonical where they exist) files may be read under.
    roots: Vec<PathBuf>,
    /// No restriction at all (a host's choice; never a default).
    anywhere: bool,
}

impl ReadScope {
    /// The scope of the document at `document`: its own directory.
    pub fn beside(document: &Path) -> ReadScope {
        ReadScope::default().allow(document.parent().unwrap_or(Path::new(".")))
    }

    /// A scope that lets references lead anywhere (for a host that has checked them itself).
    pub fn anywhere() -> ReadScope {
        ReadScope {
            roots: Vec::new(),
            anywhere: true,
        }
    }

    /// This scope with `dir` (and what is below it) allowed too; an empty path is the current
    /// directory (the parent of a bare file name).
    #[must_use]
    pub fn allow(mut self, dir: &Path) -> ReadScope {
        // An empty root would contain every path.
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if !self.roots.contains(&dir) {
            self.roots.push(dir);
        }
        self
    }

    /// The directories allowed.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// `path` (as the file system resolves it) when it lies at or below an allowed directory;
    /// otherwise [`Error::OutsideScope`].
    pub fn check(&self, path: &Path) -> Result<PathBuf, Error> {
        let resolved =
            std::fs::canonicalize(path).map_err(|error| Error::io(Action::Read, path, error))?;
        if self.anywhere || self.roots.iter().any(|root| resolved.starts_with(root)) {
            return Ok(resolved);
        }
        Err(Error::OutsideScope {
            path: path.to_owned(),
            roots: self.roots.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_text_files_within_the_limit_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let text_file = dir.path().join("a.yaml");
        std::fs::write(&text_file, "a: 1\n").unwrap();
        assert_eq!(text(&text_file, 5).unwrap(), "a: 1\n");
        let large = text(&text_file, 4).unwrap_err();
        assert_eq!(large.kind(), io::ErrorKind::InvalidData);
        assert!(
            large.to_string().contains("more than the 4 bytes"),
            "{large}"
        );
        let binary = dir.path().join("b.bin");
        std::fs::write(&binary, b"key\0secret").unwrap();
        let refused = text(&binary, 100).unwrap_err().to_string();
        assert!(refused.contains("NUL byte at offset 3"), "{refused}");
        assert!(!refused.contains("secret"), "{refused}");
        std::fs::write(&binary, [0x66, 0xff, 0x66]).unwrap();
        assert!(
            text(&binary, 100)
                .unwrap_err()
                .to_string()
                .contains("not UTF-8")
        );
        let directory = text(dir.path(), 100).unwrap_err();
        assert_eq!(directory.kind(), io::ErrorKind::InvalidInput);
        assert!(directory.to_string().contains("a directory"), "{directory}");
    }

    #[test]
    fn a_stream_is_held_to_what_a_file_is() {
        assert_eq!(text_from(&b"id: w\n"[..], 6).unwrap(), "id: w\n");
        let large = text_from(&b"id: w\n"[..], 5).unwrap_err();
        assert!(
            large.to_string().contains("more than the 5 bytes"),
            "{large}"
        );
        let binary = text_from(&b"key\0secret"[..], 100).unwrap_err().to_string();
        assert!(!binary.contains("secret"), "{binary}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn kernel_files_fifos_and_links_to_them_are_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        for special in ["/proc/self/environ", "/dev/zero", "/proc/self/status"] {
            let refused = text(Path::new(special), 1 << 20).unwrap_err();
            assert!(
                refused.to_string().contains("kernel's"),
                "{special}: {refused}"
            );
        }
        let link = dir.path().join("env.yaml");
        std::os::unix::fs::symlink("/proc/self/environ", &link).unwrap();
        assert!(
            text(&link, 1 << 20)
                .unwrap_err()
                .to_string()
                .contains("kernel's")
        );
        let fifo = dir.path().join("fifo.yaml");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|status| status.success()) {
            let refused = text(&fifo, 1 << 20).unwrap_err();
            assert!(
                refused.to_string().contains("a FIFO (named pipe)"),
                "{refused}"
            );
        }
    }

    #[test]
    fn a_scope_holds_its_directories_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("docs");
        std::fs::create_dir_all(inner.join("specs")).unwrap();
        std::fs::write(inner.join("specs/api.yaml"), "x").unwrap();
        std::fs::write(dir.path().join("secret.yaml"), "x").unwrap();
        let scope = ReadScope::beside(&inner.join("w.arazzo.yaml"));
        assert!(scope.check(&inner.join("specs/api.yaml")).is_ok());
        assert!(matches!(
            scope.check(&inner.join("../secret.yaml")),
            Err(Error::OutsideScope { .. })
        ));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path().join("secret.yaml"), inner.join("link.yaml"))
                .unwrap();
            assert!(matches!(
                scope.check(&inner.join("link.yaml")),
                Err(Error::OutsideScope { .. })
            ));
        }
        // A bare file name's parent is empty: the current directory, not every path.
        let current = ReadScope::default().allow(Path::new(""));
        assert_eq!(
            current.roots(),
            [std::env::current_dir().unwrap().canonicalize().unwrap()]
        );
        assert!(matches!(
            current.check(&dir.path().join("secret.yaml")),
            Err(Error::OutsideScope { .. })
        ));
        let wider = scope.allow(dir.path());
        assert!(wider.check(&inner.join("../secret.yaml")).is_ok());
        assert!(
            ReadScope::anywhere()
                .check(&dir.path().join("secret.yaml"))
                .is_ok()
        );
    }
}
