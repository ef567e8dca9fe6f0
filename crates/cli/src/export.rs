//! `wayline export arazzo`: a workflow written as an Arazzo document, with OpenAPI
//! descriptions of the tools it calls.

use std::path::{Path, PathBuf};

use wayline_registry::ToolRegistry;

use crate::report::{
    Outcome, ReportFormat, fail, outln, print_errors, print_json, unreadable, write_atomically,
};

/// `wayline export ...`
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ExportCommand {
    /// Write a workflow as an Arazzo 1.1 document (`NAME.arazzo.yaml`) and OpenAPI
    /// descriptions of its tools (`NAME-tools.openapi.json`, …); what Arazzo has no field for
    /// rides in `x-wayline` extensions, so `import arazzo` gives the same workflow back.
    Arazzo {
        /// The workflow file (YAML or JSON).
        workflow: PathBuf,
        /// Tool files or directories (repeatable).
        #[arg(long = "tools", required = true, value_name = "DIR")]
        tools: Vec<PathBuf>,
        /// The directory to write to (made if missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Replace files that exist (otherwise that is an error and nothing is written).
        #[arg(long)]
        force: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
}

pub(crate) fn export_command(command: ExportCommand) -> Outcome {
    let ExportCommand::Arazzo {
        workflow,
        tools,
        out,
        force,
        format,
    } = command;
    match export_arazzo(&workflow, &tools, &out, force, format) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn export_arazzo(
    path: &Path,
    tools: &[PathBuf],
    out: &Path,
    force: bool,
    format: ReportFormat,
) -> Result<Outcome, Outcome> {
    let loaded = ToolRegistry::load(tools);
    if !loaded.errors.is_empty() {
        print_errors(&loaded.errors);
        return Err(crate::report::outcome_of(&loaded.errors));
    }
    let workflow = wayline_registry::load_workflow_file(path).map_err(|error| {
        print_errors(&[error]);
        Outcome::Unreadable
    })?;
    let exported =
        wayline_arazzo::export::export(&workflow, &loaded.registry, &workflow.id).map_err(fail)?;
    let mut files: Vec<(PathBuf, String)> = vec![(
        out.join(format!("{}.arazzo.yaml", workflow.id)),
        serde_norway::to_string(&exported.arazzo).map_err(unreadable)?,
    )];
    for (name, description) in &exported.descriptions {
        let text = serde_json::to_string_pretty(description).map_err(unreadable)?;
        files.push((out.join(name), format!("{text}\n")));
    }
    // Nothing is written when anything would be overwritten without --force.
    if !force
        && let Some((taken, _)) = files.iter().find(|(file, text)| {
            std::fs::read_to_string(file).is_ok_and(|existing| existing != *text)
        })
    {
        return Err(unreadable(format!(
            "{} exists with other content; pass --force to replace it",
            taken.display()
        )));
    }
    std::fs::create_dir_all(out)
        .map_err(|error| unreadable(format!("cannot create {}: {error}", out.display())))?;
    for (file, text) in &files {
        write_atomically(file, text)?;
    }
    let written: Vec<String> = files
        .iter()
        .map(|(file, _)| file.display().to_string())
        .collect();
    match format {
        ReportFormat::Json => print_json(&serde_json::json!({
            "arazzo": written[0],
            "descriptions": &written[1..],
        })),
        ReportFormat::Text => {
            for file in &written {
                outln!("wrote {file}");
            }
        }
    }
    Ok(Outcome::Ok)
}
