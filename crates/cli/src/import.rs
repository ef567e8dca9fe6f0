//! `wayline import openapi` (a spec's operations as tool files) and `wayline import arazzo` (an
//! Arazzo workflow read back as a wayline workflow).

use std::path::{Path, PathBuf};

use serde_json::json;
use wayline_registry::openapi::{ApiSpec, tool_yaml};

use crate::args::read_scope;
use crate::report::{Outcome, ReportFormat, outln, print_json, unreadable, write_atomically};

/// `wayline import ...`
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ImportCommand {
    /// Write one tool YAML per operation of a Swagger 2.0 or OpenAPI 3.x spec (JSON or YAML).
    Openapi {
        /// The spec file.
        spec: PathBuf,
        /// The directory to write the tools to (made if missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The API's base URL, when the spec names none or another is wanted.
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// Let the spec's `$ref`s read files in this directory too (by default only at or
        /// below the spec's own directory). Repeatable.
        #[arg(long = "allow-read", value_name = "DIR")]
        allow_read: Vec<PathBuf>,
        /// Replace tool files that exist with other content (otherwise that is an error and
        /// nothing is written).
        #[arg(long)]
        force: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Read an Arazzo workflow back as a wayline workflow (JSON on stdout), where the mapping
    /// is exact; what cannot be mapped is an error naming it.
    Arazzo {
        /// The Arazzo document.
        document: PathBuf,
        /// The tools its steps call (repeatable).
        #[arg(long = "tools", required = true, value_name = "DIR")]
        tools: Vec<PathBuf>,
        /// The workflow to read (needed when the document has several).
        #[arg(long = "workflow", value_name = "ID")]
        workflow: Option<String>,
        /// Output format: text writes the workflow as YAML, json as JSON.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
}

pub(crate) fn import_command(command: ImportCommand) -> Outcome {
    match command {
        ImportCommand::Openapi {
            spec,
            out,
            base_url,
            allow_read,
            force,
            format,
        } => match import_openapi(&spec, &out, base_url.as_deref(), &allow_read, force, format) {
            Ok(outcome) | Err(outcome) => outcome,
        },
        ImportCommand::Arazzo {
            document,
            tools,
            workflow,
            format,
        } => match import_arazzo(&document, &tools, workflow.as_deref(), format) {
            Ok(outcome) | Err(outcome) => outcome,
        },
    }
}

/// `import arazzo`: the workflow on stdout, as YAML (text) or JSON.
fn import_arazzo(
    path: &Path,
    tools: &[PathBuf],
    id: Option<&str>,
    format: ReportFormat,
) -> Result<Outcome, Outcome> {
    let loaded = wayline_registry::ToolRegistry::load(tools);
    if !loaded.errors.is_empty() {
        crate::report::print_errors(&loaded.errors);
        return Err(crate::report::outcome_of(&loaded.errors));
    }
    let document = wayline_arazzo::load_file(path).map_err(crate::report::fail)?;
    let workflow = wayline_arazzo::import::import(&document, id, &loaded.registry)
        .map_err(crate::report::fail)?;
    match format {
        ReportFormat::Json => print_json(&workflow),
        ReportFormat::Text => {
            crate::report::out!(
                "{}",
                serde_norway::to_string(&workflow).map_err(unreadable)?
            );
        }
    }
    Ok(Outcome::Ok)
}

/// A file name for a tool id: the id, with anything but letters, digits, `_`, `-` and `.`
/// made `_`.
fn file_name(id: &str) -> String {
    let safe: String = id
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{}.yaml", safe.trim_start_matches('.'))
}

/// The longest file name most file systems take (ext4, XFS, APFS, NTFS: 255 bytes).
const MAX_FILE_NAME: usize = 255;

fn import_openapi(
    spec_path: &Path,
    out: &Path,
    base_url: Option<&str>,
    allow_read: &[PathBuf],
    force: bool,
    format: ReportFormat,
) -> Result<Outcome, Outcome> {
    if let Some(base) = base_url
        && !(base.starts_with("http://") || base.starts_with("https://"))
    {
        return Err(unreadable(format!(
            "--base-url `{base}` is not an http(s) URL"
        )));
    }
    let spec =
        ApiSpec::load_within(spec_path, read_scope(spec_path, allow_read)).map_err(unreadable)?;
    let imported = spec.imported_tools(base_url);
    let files: Vec<(PathBuf, String)> = imported
        .iter()
        .map(|tool| {
            (
                out.join(file_name(&tool.tool.id)),
                tool_yaml(&tool.document),
            )
        })
        .collect();
    // Check everything before writing anything: no half-written import. Two ids that make
    // one file name (`a b` and `a_b`, or `A` and `a` on a case-insensitive disk) would lose
    // a tool.
    let mut names: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
    for (tool, (path, _)) in imported.iter().zip(&files) {
        let length = path.file_name().map_or(0, |name| name.len());
        if length > MAX_FILE_NAME {
            return Err(unreadable(format!(
                "operation `{}…` would be written to a file name of {length} bytes, longer than \
                 file systems allow ({MAX_FILE_NAME}); give it a shorter operationId",
                tool.tool.id.chars().take(60).collect::<String>()
            )));
        }
        let key = path.display().to_string().to_lowercase();
        if let Some(first) = names.insert(key, &tool.tool.id) {
            return Err(unreadable(format!(
                "operations `{first}` and `{}` would both be written to {}; give one of them another operationId",
                tool.tool.id,
                path.display()
            )));
        }
    }
    let mut clashes = Vec::new();
    for (path, text) in &files {
        if let Ok(existing) = std::fs::read_to_string(path)
            && existing != *text
            && !force
        {
            clashes.push(path.display().to_string());
        }
    }
    if !clashes.is_empty() {
        return Err(unreadable(format!(
            "these files exist with other content: {}; pass --force to replace them, or import into another --out",
            clashes.join(", ")
        )));
    }
    for (path, text) in &files {
        write_atomically(path, text)?;
    }
    let warnings: Vec<&String> = spec
        .warnings
        .iter()
        .chain(imported.iter().flat_map(|tool| &tool.warnings))
        .collect();
    match format {
        ReportFormat::Json => print_json(&json!({
            "spec": {"title": spec.title, "version": spec.api_version, "format": spec.version},
            "base_url": base_url.or(spec.base_url.as_deref()),
            "tools": imported.iter().zip(&files).map(|(tool, (path, _))| json!({
                "id": tool.tool.id,
                "method": tool.tool.method,
                "path": tool.tool.path,
                "file": path.display().to_string(),
            })).collect::<Vec<_>>(),
            "states": spec.states,
            "warnings": warnings,
        })),
        ReportFormat::Text => {
            for warning in &warnings {
                eprintln!("warning: {warning}");
            }
            for (resource, states) in &spec.states {
                outln!("states of {resource}: {}", states.join(", "));
            }
            outln!(
                "{} tool(s) from {} ({}) written to {}",
                files.len(),
                spec_path.display(),
                if spec.title.is_empty() {
                    "untitled"
                } else {
                    &spec.title
                },
                out.display()
            );
        }
    }
    Ok(Outcome::Ok)
}
