//! What a command builds to run an Arazzo document's workflows (`run`, `mcp serve --arazzo`):
//! its sources read within the scope the flags allow, the whole validated, and an engine whose
//! tools are the document's operations.

use std::path::Path;
use std::sync::Arc;

use indexmap::IndexMap;
use wayline_arazzo::run::Runner;
use wayline_arazzo::sources::Sources;
use wayline_core::ToolCatalog;
use wayline_executor::Engine;

use super::{Environment, tool_transport_builder};
use crate::args::{read_scope, source_overrides};
use crate::report::{Outcome, unreadable};

/// Where an Arazzo document's sources are read and called: `--source NAME=FILE`,
/// `--allow-read DIR`, `--server NAME=URL`.
pub(crate) struct ArazzoFlags<'a> {
    pub(crate) sources: &'a [String],
    pub(crate) allow_read: &'a [std::path::PathBuf],
    pub(crate) servers: &'a [String],
}

/// `document` (read from `text` at `path`) ready to run: its sources read as `flags` say, the
/// whole validated (a document with errors does not run; warnings are said).
pub(crate) fn runner(
    document: wayline_arazzo::ArazzoDocument,
    path: &Path,
    text: &str,
    flags: &ArazzoFlags<'_>,
) -> Result<Runner, Outcome> {
    let base = path.parent().unwrap_or(Path::new("."));
    let sources = Sources::load_within(
        &document,
        base,
        &source_overrides(flags.sources)?,
        read_scope(path, flags.allow_read),
    );
    refuse_invalid(&document, &sources, text, &path.display().to_string())?;
    let servers = servers(flags.servers, &document)?;
    Ok(Runner::new(document, &sources, &servers))
}

/// An engine for `runner`'s workflows: its operations as tools, called over HTTP as
/// `network` says (redirects not followed: a redirect is an answer the document's criteria
/// read), the environment's values masked.
pub(crate) fn engine_builder(
    runner: &Runner,
    network: &crate::args::NetworkArgs,
    env: &Environment,
) -> Result<wayline_executor::EngineBuilder, Outcome> {
    let transport = tool_transport_builder(network)?
        .follow_redirects(false)
        .build()
        .map_err(|error| unreadable(format!("cannot start the HTTP client: {error}")))?;
    let catalog: Arc<dyn ToolCatalog> = runner.catalog().clone();
    Ok(Engine::builder(catalog)
        .transport(Arc::new(transport))
        .mask(env.file_values()))
}

/// Validation's errors stop the run before anything is sent; warnings are said.
fn refuse_invalid(
    document: &wayline_arazzo::ArazzoDocument,
    sources: &Sources,
    text: &str,
    origin: &str,
) -> Result<(), Outcome> {
    let mut problems = wayline_arazzo::validate(document);
    problems.extend(wayline_arazzo::sources::check_operations(document, sources));
    if !problems.is_empty() {
        let positions = wayline_arazzo::Positions::of(text);
        for problem in &mut problems {
            problem.locate(&positions);
        }
    }
    problems.sort_by_key(|problem| (problem.line, problem.column));
    // A problem says whether it is a warning; an error is said as the other errors are.
    let mut errors = 0;
    for problem in &problems {
        if problem.is_error() {
            errors += 1;
            eprintln!("error: {origin}:{problem}");
        } else {
            eprintln!("{origin}:{problem}");
        }
    }
    if errors > 0 {
        eprintln!(
            "error: {origin}: not run: {errors} problem{} (wayline validate {origin})",
            if errors == 1 { "" } else { "s" }
        );
        return Err(Outcome::Failed);
    }
    Ok(())
}

/// `--server NAME=URL` flags, each naming a source of the document.
fn servers(
    flags: &[String],
    document: &wayline_arazzo::ArazzoDocument,
) -> Result<IndexMap<String, String>, Outcome> {
    let names: Vec<&str> = document
        .source_descriptions
        .iter()
        .map(|source| source.name.as_str())
        .collect();
    let mut servers = IndexMap::new();
    for flag in flags {
        let Some((name, url)) = flag
            .split_once('=')
            .filter(|(name, url)| !name.is_empty() && !url.is_empty())
        else {
            return Err(unreadable(format!(
                "`--server {flag}`: write NAME=URL (a source description's name, the base URL its operations are called at)"
            )));
        };
        if !names.contains(&name) {
            let hint = wayline_core::document::nearest(name, names.iter().copied())
                .map(|near| format!(" (did you mean `{near}`?)"))
                .unwrap_or_default();
            return Err(unreadable(format!(
                "`--server {flag}`: the document has no source `{name}`{hint}"
            )));
        }
        servers.insert(name.to_owned(), url.to_owned());
    }
    Ok(servers)
}
