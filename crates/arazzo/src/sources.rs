//! The descriptions a document's source descriptions name, read (OpenAPI through wayline's
//! importer), and the operations its steps call resolved in them.
//!
//! Local files are read (a `url` relative to the document, or `file:`); a remote description is
//! not fetched: give a local copy for its name (`--source NAME=FILE`), which keeps runs and CI
//! offline and repeatable.
//!
//! A `url` is read only at or below the document's directory (and the directories the reader
//! allowed, a [`ReadScope`]): a published document cannot make wayline read
//! `file:///proc/self/environ` or `../../.ssh/id_rsa`. A file named with `--source` was chosen by
//! the user and is read where it is. Either way only a regular file within the document size
//! limit is read, and an error in it quotes nothing of it.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use wayline_core::document::{Limits, nearest};
use wayline_durable::read::ReadScope;
use wayline_registry::openapi::{self, ApiSpec, Operation};

use crate::model::{ArazzoDocument, ParameterLocation, Reusable, SourceKind, Step, StepTarget};
use crate::problem::{Problem, Rule};

/// The source descriptions of one document, as far as they could be read.
#[derive(Debug, Default)]
pub struct Sources {
    entries: IndexMap<String, Source>,
    /// Where they (and what they refer to) could be read from.
    scope: ReadScope,
}

/// One source description, read or not.
#[derive(Debug)]
#[non_exhaustive]
pub enum Source {
    /// An OpenAPI (or Swagger) description.
    OpenApi {
        /// The file it was read from.
        path: PathBuf,
        /// The description.
        spec: Box<ApiSpec>,
    },
    /// Another Arazzo document (its workflows can be called).
    Arazzo {
        /// The file it was read from.
        path: PathBuf,
        /// The document.
        document: Box<ArazzoDocument>,
    },
    /// A kind wayline does not run (AsyncAPI).
    Unsupported {
        /// What it is.
        kind: &'static str,
    },
    /// Not read, and why (a remote URL, a missing file, a description that does not parse).
    NotRead {
        /// Why.
        reason: String,
    },
    /// Not read because it may not be: outside the directories a document's sources may be
    /// in, or not a regular file within the size limit. An error: the document cannot run.
    Refused {
        /// Why, and how to allow it.
        reason: String,
    },
}

/// Why the operation a step names is not in its source descriptions (what was looked for,
/// where, and the nearest id).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct NotFound {
    /// What is wrong, for people.
    pub message: String,
}

/// An operation a step calls, found.
#[derive(Debug, Clone, Copy)]
pub struct Resolved<'a> {
    /// The source description it is in.
    pub source: &'a str,
    /// The operation.
    pub operation: &'a Operation,
}

impl Sources {
    /// Reads the source descriptions of `document`, relative to `base` (the document's
    /// directory), and only at or below it; `overrides` gives a local file for a source by
    /// name.
    pub fn load(
        document: &ArazzoDocument,
        base: &Path,
        overrides: &IndexMap<String, PathBuf>,
    ) -> Sources {
        Sources::load_within(document, base, overrides, ReadScope::default().allow(base))
    }

    /// [`Sources::load`], reading the `url`s (and the `$ref`s of what they name) within
    /// `scope` (the document's directory and the directories the user allowed).
    pub fn load_within(
        document: &ArazzoDocument,
        base: &Path,
        overrides: &IndexMap<String, PathBuf>,
        scope: ReadScope,
    ) -> Sources {
        let mut entries = IndexMap::new();
        for description in &document.source_descriptions {
            let source = if description.kind == Some(SourceKind::Asyncapi) {
                Source::Unsupported { kind: "AsyncAPI" }
            } else if let Some(path) = overrides.get(&description.name) {
                // Named by the user: read where it is, its own references beside it.
                let parent = path.parent().unwrap_or(Path::new("."));
                read(path, description.kind, scope.clone().allow(parent))
            } else {
                match local_path(&description.url, base) {
                    Err(reason) => Source::NotRead { reason },
                    Ok(path) => match scope.check(&path) {
                        Ok(_) => read(&path, description.kind, scope.clone()),
                        Err(wayline_durable::Error::OutsideScope { roots, .. }) => {
                            Source::Refused {
                                reason: format!(
                                    "`{}` is {}, outside {}: a document's sources are read only \
                                     at or below its directory; give the file with `--source \
                                     {}=FILE`, or allow its directory with `--allow-read DIR`",
                                    description.url,
                                    path.display(),
                                    wayline_durable::read::roots_text(&roots),
                                    description.name
                                ),
                            }
                        }
                        Err(error) => Source::NotRead {
                            reason: error.to_string(),
                        },
                    },
                }
            };
            entries.insert(description.name.clone(), source);
        }
        Sources { entries, scope }
    }

    /// Where the sources (and what they refer to) could be read from.
    pub fn scope(&self) -> &ReadScope {
        &self.scope
    }

    /// The source description `name`.
    pub fn get(&self, name: &str) -> Option<&Source> {
        self.entries.get(name)
    }

    /// The sources by name, in the document's order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Source)> {
        self.entries
            .iter()
            .map(|(name, source)| (name.as_str(), source))
    }

    /// Why `written` (`$sourceDescriptions.NAME.ID`) names no workflow of the Arazzo document
    /// source `NAME` holds, when that document was read; `None` when it does, or cannot be
    /// known here (another kind of reference, a source not read).
    fn missing_workflow(&self, written: &str) -> Option<String> {
        let (name, id) = source_reference(written).filter(|(_, id)| !id.is_empty())?;
        let Source::Arazzo { document, .. } = self.entries.get(name)? else {
            return None;
        };
        let ids = document
            .workflows
            .iter()
            .map(|workflow| workflow.workflow_id.as_str());
        if ids.clone().any(|known| known == id) {
            return None;
        }
        let hint = nearest(id, ids)
            .map(|near| format!(" (did you mean `{near}`?)"))
            .unwrap_or_default();
        Some(format!(
            "the Arazzo document of source `{name}` has no workflow `{id}`{hint}"
        ))
    }

    /// The operation `step` calls. `Ok(None)`: it cannot be known here (the source was not
    /// read, or the step calls a workflow or an AsyncAPI channel); `Err`: what is wrong.
    pub fn operation(&self, step: &Step) -> Result<Option<Resolved<'_>>, NotFound> {
        let found = match step.target() {
            Some(StepTarget::OperationId(id)) => self.by_id(id),
            Some(StepTarget::OperationPath(path)) => self.by_path(path),
            _ => Ok(None),
        };
        found.map_err(|message| NotFound { message })
    }

    fn by_id(&self, written: &str) -> Result<Option<Resolved<'_>>, String> {
        let (candidates, id): (Vec<(&String, &Source)>, &str) = match source_reference(written) {
            Some((name, id)) => {
                let Some(source) = self.entries.get_key_value(name) else {
                    return Ok(None); // reported by validation: no such source
                };
                (vec![source], id)
            }
            None => (
                self.entries
                    .iter()
                    .filter(|(_, source)| !matches!(source, Source::Arazzo { .. }))
                    .collect(),
                written,
            ),
        };
        let mut unread = false;
        let mut known: Vec<&str> = Vec::new();
        for (name, source) in &candidates {
            match source {
                Source::OpenApi { spec, .. } => {
                    if let Some(operation) = spec.operation(id) {
                        return Ok(Some(Resolved {
                            source: name.as_str(),
                            operation,
                        }));
                    }
                    known.extend(
                        spec.operations
                            .iter()
                            .map(|operation| operation.id.as_str()),
                    );
                }
                Source::Unsupported { .. } | Source::NotRead { .. } | Source::Refused { .. } => {
                    unread = true;
                }
                Source::Arazzo { .. } => {}
            }
        }
        if unread {
            return Ok(None);
        }
        let names: Vec<&str> = candidates.iter().map(|(name, _)| name.as_str()).collect();
        let hint = nearest(id, known)
            .map(|near| format!(" (did you mean `{near}`?)"))
            .unwrap_or_default();
        Err(format!(
            "no operation `{id}` in {}{hint}",
            names
                .iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

    fn by_path(&self, written: &str) -> Result<Option<Resolved<'_>>, String> {
        let Some((head, pointer)) = written.split_once('#') else {
            return Err(format!(
                "`{written}` has no `#/paths/…` pointer to the operation"
            ));
        };
        let name = head
            .trim_start_matches('{')
            .trim_start_matches("$sourceDescriptions.")
            .split(['.', '}'])
            .next()
            .unwrap_or_default();
        let Some((name, source)) = self.entries.get_key_value(name) else {
            return Ok(None);
        };
        let Source::OpenApi { spec, .. } = source else {
            return Ok(None);
        };
        let tokens: Vec<String> = pointer
            .split('/')
            .skip(1)
            .map(|token| token.replace("~1", "/").replace("~0", "~"))
            .collect();
        let (path, method) = match tokens.as_slice() {
            [paths, path] if paths == "paths" => (path.as_str(), None),
            [paths, path, method] if paths == "paths" => {
                (path.as_str(), Some(method.to_uppercase()))
            }
            _ => {
                return Err(format!(
                    "`#{pointer}` does not point at an operation: write `#/paths/~1PATH/METHOD`"
                ));
            }
        };
        let at_path: Vec<&Operation> = spec
            .operations
            .iter()
            .filter(|operation| operation.path == path)
            .collect();
        let found: Vec<&Operation> = at_path
            .iter()
            .copied()
            .filter(|operation| {
                method
                    .as_ref()
                    .is_none_or(|method| &operation.method == method)
            })
            .collect();
        match found.as_slice() {
            [operation] => Ok(Some(Resolved {
                source: name.as_str(),
                operation,
            })),
            [] if at_path.is_empty() => Err(format!("`{name}` has no path `{path}`")),
            [] => Err(format!(
                "`{name}` has no {} operation at `{path}` (it has {})",
                method.unwrap_or_default(),
                at_path
                    .iter()
                    .map(|operation| operation.method.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            _ => Err(format!(
                "`{path}` in `{name}` has several operations; end the pointer with the method (`/get`)"
            )),
        }
    }
}

/// Where a source description's `url` is on this machine.
fn local_path(url: &str, base: &Path) -> Result<PathBuf, String> {
    if let Some(path) = url.strip_prefix("file://") {
        return Ok(PathBuf::from(path));
    }
    if url.contains("://") {
        return Err(format!(
            "`{url}` is remote and is not fetched: give a local copy (`--source NAME=FILE`)"
        ));
    }
    Ok(base.join(url))
}

/// Reads the description at `path`: OpenAPI, or Arazzo (by `kind`, else by its content); its
/// `$ref`s within `scope`. What is not a regular file within the size limit, or not text, is
/// refused; an error in what does not parse quotes nothing of it.
fn read(path: &Path, kind: Option<SourceKind>, scope: ReadScope) -> Source {
    let text = match wayline_durable::read::text(path, Limits::configured().max_bytes) {
        Ok(text) => text,
        Err(error) => {
            let reason = format!("cannot read {}: {error}", path.display());
            return match error.kind() {
                std::io::ErrorKind::InvalidInput | std::io::ErrorKind::InvalidData => {
                    Source::Refused { reason }
                }
                _ => Source::NotRead { reason },
            };
        }
    };
    let is_arazzo = match kind {
        Some(kind) => kind == SourceKind::Arazzo,
        None => crate::is_arazzo(&text),
    };
    if is_arazzo {
        return match crate::load(&text, &path.display().to_string()) {
            Ok(document) => Source::Arazzo {
                path: path.to_owned(),
                document: Box::new(document),
            },
            Err(error) => Source::NotRead {
                reason: error.without_content().to_string(),
            },
        };
    }
    match ApiSpec::parse_within(&text, path, scope) {
        Ok(spec) => Source::OpenApi {
            path: path.to_owned(),
            spec: Box::new(spec),
        },
        Err(error) => Source::NotRead {
            reason: error.without_content().to_string(),
        },
    }
}

/// `$sourceDescriptions.NAME.ID` read as the source's name and the id in it (empty when the
/// text names the source alone); `None` for anything else.
pub(crate) fn source_reference(written: &str) -> Option<(&str, &str)> {
    let rest = written.strip_prefix("$sourceDescriptions.")?;
    Some(rest.split_once('.').unwrap_or((rest, "")))
}

/// The problems of the operations `document`'s steps call, as far as `sources` were read: an
/// operation that is not there (an error), a parameter it does not declare (a warning: a
/// description may be incomplete). A source that could not be read is a warning (what calls
/// into it is not checked).
pub fn check_operations(document: &ArazzoDocument, sources: &Sources) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (index, description) in document.source_descriptions.iter().enumerate() {
        let at = format!("/sourceDescriptions/{index}/url");
        match sources.get(&description.name) {
            Some(Source::NotRead { reason }) => problems.push(
                Problem::new(
                    Rule::UnknownTarget,
                    at,
                    format!(
                        "source `{}` was not read, so the operations called in it are not checked: {reason}",
                        description.name
                    ),
                )
                .warning(),
            ),
            Some(Source::Refused { reason }) => problems.push(Problem::new(
                Rule::RefusedSource,
                at,
                format!("source `{}` is not read: {reason}", description.name),
            )),
            Some(Source::Unsupported { kind }) => problems.push(
                Problem::new(
                    Rule::Unsupported,
                    at,
                    format!(
                        "source `{}` is an {kind} description: wayline does not run {kind} steps",
                        description.name
                    ),
                )
                .warning(),
            ),
            _ => {}
        }
    }
    for (w, workflow) in document.workflows.iter().enumerate() {
        for (s, step) in workflow.steps.iter().enumerate() {
            let at = format!("/workflows/{w}/steps/{s}");
            let field = if step.operation_path.is_some() {
                "operationPath"
            } else {
                "operationId"
            };
            match sources.operation(step) {
                Err(NotFound { message }) => {
                    problems.push(Problem::new(
                        Rule::UnknownTarget,
                        format!("{at}/{field}"),
                        message,
                    ));
                }
                Ok(Some(resolved)) => {
                    let given = given_parameters(document, workflow, step);
                    parameters(&mut problems, &at, step, resolved);
                    path_filled(&mut problems, &at, &given, resolved);
                }
                Ok(None) => {}
            }
            if let Some(written) = &step.workflow_id
                && let Some(message) = sources.missing_workflow(written)
            {
                problems.push(Problem::new(
                    Rule::UnknownTarget,
                    format!("{at}/workflowId"),
                    message,
                ));
            }
        }
    }
    problems
}

/// Each inline parameter of `step` must be one its operation takes, where it says.
fn parameters(problems: &mut Vec<Problem>, at: &str, step: &Step, resolved: Resolved<'_>) {
    let operation = resolved.operation;
    for (index, parameter) in step.parameters.iter().enumerate() {
        let Reusable::Inline(parameter) = parameter else {
            continue;
        };
        let location = match parameter.location {
            Some(ParameterLocation::Path) => openapi::ParameterLocation::Path,
            Some(ParameterLocation::Query) => openapi::ParameterLocation::Query,
            Some(ParameterLocation::Header) => openapi::ParameterLocation::Header,
            Some(ParameterLocation::Cookie) => openapi::ParameterLocation::Cookie,
            _ => continue,
        };
        let same = |name: &str| {
            if location == openapi::ParameterLocation::Header {
                name.eq_ignore_ascii_case(&parameter.name)
            } else {
                name == parameter.name
            }
        };
        let taken = operation
            .parameters
            .iter()
            .any(|candidate| candidate.location == location && same(&candidate.name));
        // Headers an operation's security sends (`Authorization`) are not among its
        // parameters; a header is only reported when the operation declares none like it.
        if taken
            || (location == openapi::ParameterLocation::Header && !operation.security.is_empty())
        {
            continue;
        }
        let known = operation
            .parameters
            .iter()
            .filter(|candidate| candidate.location == location)
            .map(|candidate| candidate.name.as_str());
        let where_ = match location {
            openapi::ParameterLocation::Path => "path",
            openapi::ParameterLocation::Query => "query",
            openapi::ParameterLocation::Header => "header",
            _ => "cookie",
        };
        problems.push(
            Problem::new(
                Rule::UnknownReference,
                format!("{at}/parameters/{index}/name"),
                format!(
                    "operation `{}` of `{}` takes no {where_} parameter `{}`",
                    operation.id, resolved.source, parameter.name
                ),
            )
            .suggest(nearest(&parameter.name, known))
            // Descriptions are often incomplete, and servers take what they do not declare:
            // the run may still be right.
            .warning(),
        );
    }
}

/// The (name, location) of every parameter a step sends: its own and its workflow's, inline or
/// through `$components.parameters`.
fn given_parameters<'a>(
    document: &'a ArazzoDocument,
    workflow: &'a crate::model::Workflow,
    step: &'a Step,
) -> Vec<(&'a str, Option<ParameterLocation>)> {
    let components = document.components.as_ref();
    workflow
        .parameters
        .iter()
        .chain(&step.parameters)
        .filter_map(|parameter| match parameter {
            Reusable::Inline(parameter) => Some(parameter),
            Reusable::Reference(reference) => {
                let name = reference
                    .reference
                    .strip_prefix("$components.parameters.")?;
                components?.parameters.get(name)
            }
        })
        .map(|parameter| (parameter.name.as_str(), parameter.location))
        .collect()
}

/// Every path parameter the operation's path needs must be sent: a placeholder left unfilled
/// makes a request that cannot be right.
fn path_filled(
    problems: &mut Vec<Problem>,
    at: &str,
    given: &[(&str, Option<ParameterLocation>)],
    resolved: Resolved<'_>,
) {
    let operation = resolved.operation;
    for needed in operation
        .parameters
        .iter()
        .filter(|parameter| parameter.location == openapi::ParameterLocation::Path)
    {
        let sent = given.iter().any(|(name, location)| {
            *name == needed.name && *location == Some(ParameterLocation::Path)
        });
        if !sent {
            let path_given = given
                .iter()
                .filter(|(_, location)| *location == Some(ParameterLocation::Path))
                .map(|(name, _)| *name);
            let meant = nearest(&needed.name, path_given)
                .map(|near| format!("; it sends `{near}`, perhaps meant for it"))
                .unwrap_or_default();
            problems.push(Problem::new(
                Rule::UnknownReference,
                format!("{at}/parameters"),
                format!(
                    "operation `{}` of `{}` needs the path parameter `{}` (its path is `{}`), which the step does not send{meant}",
                    operation.id, resolved.source, needed.name, operation.path
                ),
            ));
        }
    }
}
