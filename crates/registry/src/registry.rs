//! [`ToolRegistry`]: tools loaded from files and directories, keyed by id.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use wayline_core::document::Format;
use wayline_core::{ToolCatalog, ToolDefinition};

use crate::Error;
use crate::load::{EnvLookup, load_tool_file_with, process_env};

/// Tools loaded from files, keyed by id, each remembering the file it came from.
///
/// Loading reports **every** problem (see [`LoadReport`]) and keeps every tool that loaded.
///
/// ```no_run
/// use wayline_core::ToolCatalog;
/// use wayline_registry::ToolRegistry;
///
/// let report = ToolRegistry::load(["tools"]);
/// for problem in &report.errors {
///     eprintln!("{problem}");
/// }
/// let registry = report.registry;
/// assert!(registry.tool("github_repo").is_some());
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, (ToolDefinition, PathBuf)>,
}

/// The outcome of loading: the tools that loaded, and every problem met on the way.
#[derive(Debug)]
#[non_exhaustive]
pub struct LoadReport {
    /// The tools that loaded.
    pub registry: ToolRegistry,
    /// Every file that failed, and every duplicate id.
    pub errors: Vec<Error>,
}

impl LoadReport {
    /// The registry when nothing went wrong, otherwise every problem — an error that composes
    /// with `?` into `Box<dyn Error>` or `anyhow::Error`.
    ///
    /// ```
    /// fn load() -> Result<wayline_registry::ToolRegistry, Box<dyn std::error::Error>> {
    ///     Ok(wayline_registry::ToolRegistry::load(["no/such/dir"]).into_result()?)
    /// }
    /// let error = load().unwrap_err();
    /// assert!(error.to_string().contains("no/such/dir"), "{error}");
    /// ```
    pub fn into_result(self) -> Result<ToolRegistry, LoadErrors> {
        if self.errors.is_empty() {
            Ok(self.registry)
        } else {
            Err(LoadErrors(self.errors))
        }
    }
}

/// Every problem of a load that went wrong ([`LoadReport::into_result`]): shown one per line,
/// and each at hand as an [`Error`].
#[derive(Debug)]
pub struct LoadErrors(pub Vec<Error>);

impl LoadErrors {
    /// The problems.
    pub fn errors(&self) -> &[Error] {
        &self.0
    }
}

impl std::fmt::Display for LoadErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.as_slice() {
            [one] => write!(f, "{one}"),
            many => {
                write!(f, "{} problems loading tools:", many.len())?;
                for problem in many {
                    write!(f, "\n  - {problem}")?;
                }
                Ok(())
            }
        }
    }
}

/// No `source`: the message already lists every problem, and a chain would repeat one.
impl std::error::Error for LoadErrors {}

impl IntoIterator for LoadErrors {
    type Item = Error;
    type IntoIter = std::vec::IntoIter<Error>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Loads tool files and directory trees (`.yaml`, `.yml`, `.json`; hidden entries skipped),
    /// in sorted path order, expanding `${VAR}` from the process environment.
    pub fn load<P: AsRef<Path>>(paths: impl IntoIterator<Item = P>) -> LoadReport {
        Self::load_with(paths, &process_env)
    }

    /// [`load`](Self::load) with `${VAR}` values from `env`.
    pub fn load_with<P: AsRef<Path>>(
        paths: impl IntoIterator<Item = P>,
        env: EnvLookup<'_>,
    ) -> LoadReport {
        let mut registry = ToolRegistry::new();
        let mut errors = Vec::new();
        let mut files = Vec::new();
        for path in paths {
            collect_files(path.as_ref(), true, &mut files, &mut errors);
        }
        for file in files {
            match load_tool_file_with(&file, env) {
                Ok(tool) => {
                    if let Err(error) = registry.insert(tool, file) {
                        errors.push(error);
                    }
                }
                Err(error) => errors.push(error),
            }
        }
        LoadReport { registry, errors }
    }

    /// Adds a tool from `source`; a second tool with the same id is refused, naming both files.
    pub fn insert(&mut self, tool: ToolDefinition, source: PathBuf) -> Result<(), Error> {
        if let Some((_, first)) = self.tools.get(&tool.id) {
            return Err(Error::DuplicateId {
                id: tool.id,
                first: first.clone(),
                second: source,
            });
        }
        self.tools.insert(tool.id.clone(), (tool, source));
        Ok(())
    }

    /// The file a tool was loaded from.
    pub fn source(&self, id: &str) -> Option<&Path> {
        self.tools.get(id).map(|(_, path)| path.as_path())
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when no tool is loaded.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tools, ordered by id.
    pub fn tools(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.tools.values().map(|(tool, _)| tool)
    }
}

impl ToolCatalog for ToolRegistry {
    fn tool(&self, id: &str) -> Option<&ToolDefinition> {
        self.tools.get(id).map(|(tool, _)| tool)
    }

    fn tool_ids(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }
}

/// Adds tool files under `path` to `files` in sorted order. A path named by the user must exist
/// and, if a file, be a tool file; inside directories other files and hidden entries are skipped.
fn collect_files(path: &Path, named: bool, files: &mut Vec<PathBuf>, errors: &mut Vec<Error>) {
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(source) => {
            errors.push(Error::Io {
                path: path.to_owned(),
                source,
            });
            return;
        }
    };
    if metadata.is_file() {
        if named || Format::from_path(path).is_some() {
            files.push(path.to_owned());
        }
        return;
    }
    if !metadata.is_dir() {
        return;
    }
    let entries = match std::fs::read_dir(path) {
        Ok(entries) => entries,
        Err(source) => {
            errors.push(Error::Io {
                path: path.to_owned(),
                source,
            });
            return;
        }
    };
    let mut children: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
        .map(|entry| entry.path())
        .collect();
    children.sort();
    for child in children {
        // A symlink to a directory is not followed: it could lead back up the tree.
        let is_link_to_dir = std::fs::symlink_metadata(&child)
            .map(|meta| meta.file_type().is_symlink() && child.is_dir())
            .unwrap_or(false);
        if !is_link_to_dir {
            collect_files(&child, false, files, errors);
        }
    }
}
