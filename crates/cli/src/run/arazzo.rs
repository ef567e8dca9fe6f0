//! `wayline run FILE.arazzo.yaml`: a workflow of an Arazzo document, run on the engine. The
//! document is validated first (a document with errors does not run); its sources are read
//! from local files (`--source NAME=FILE` for remote ones) and called where `--server` says.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use wayline_arazzo::run::WorkflowRun;
use wayline_core::ToolCatalog;
use wayline_executor::{RunOptions, summary};
use wayline_knowledge::Recorder;

use super::RunArgs;
use crate::assemble::arazzo::{ArazzoFlags, engine_builder, runner};
use crate::assemble::{Environment, cancellable, open_knowledge, run_inputs, runtime};
use crate::report::{Failure, Outcome, ReportFormat, fail, outln, print_json, unreadable};

/// Runs the workflow of `text` (the document at `path`) that `args` name.
pub(super) fn run_document(args: &RunArgs, path: &Path, text: &str) -> Result<Outcome, Outcome> {
    refuse_what_does_not_apply(args)?;
    let origin = path.display().to_string();
    let document = wayline_arazzo::load(text, &origin).map_err(fail)?;
    let flags = ArazzoFlags {
        sources: &args.sources,
        allow_read: &args.allow_read,
        servers: &args.servers,
    };
    let runner = runner(document, path, text, &flags)?;
    let workflow_id = match &args.arazzo_workflow {
        Some(id) => id.clone(),
        None => only_workflow(runner.document())?,
    };
    let inputs: Map<String, Value> = run_inputs(args.inputs_file.as_deref(), &args.common.inputs)?
        .into_iter()
        .collect();
    let env = Environment::load(&args.common.tools.env_files)?;
    let catalog: Arc<dyn ToolCatalog> = runner.catalog().clone();
    let mut builder =
        engine_builder(&runner, &args.common.tools.network, &env)?.max_parallel(args.max_parallel);
    if let Some(store) = &args.store {
        let stores = wayline_store::open(store).map_err(fail)?;
        builder = builder.run_store(stores.runs);
    }
    let recorder = match (&args.learn.sut, args.learn.learn) {
        (Some(sut), true) => {
            let store = open_knowledge(&args.learn.store, args.store.as_ref())?;
            let recorder = Recorder::new(store, wayline_knowledge::sut_key(sut), catalog);
            for workflow in runner.compiled() {
                recorder.register(workflow);
            }
            builder = builder.observer(Arc::new(recorder.clone()));
            Some(recorder)
        }
        _ => None,
    };
    let engine = builder
        .observer(Arc::new(crate::logging::progress()))
        .build();
    let runtime = runtime()?;
    let mut options = RunOptions::new();
    if let Some(id) = &args.run_id {
        options = options.run_id(id.clone());
    }
    if let Some(ms) = args.deadline_ms {
        options = options.deadline(std::time::Duration::from_millis(ms));
    }
    let ran = cancellable(&runtime, |cancel| {
        let options = options.cancel(cancel);
        async {
            match &args.resume {
                Some(run_id) => {
                    runner
                        .resume(&engine, &workflow_id, run_id, inputs, options)
                        .await
                }
                None => runner.run(&engine, &workflow_id, inputs, options).await,
            }
        }
    });
    if let (Some(recorder), Some(sut)) = (&recorder, &args.learn.sut) {
        match runtime.block_on(recorder.flush()) {
            Ok(runs) if runs > 0 => {
                eprintln!("learned: the run is recorded in the knowledge of `{sut}`")
            }
            Ok(_) => {}
            Err(error) => eprintln!("error: what the run taught was not recorded: {error}"),
        }
    }
    let ran = ran.map_err(|error| {
        eprintln!("error: {error}");
        error.outcome()
    })?;
    Ok(report(&ran, args.format))
}

/// Flags of `run` that mean nothing for an Arazzo document, refused rather than ignored.
fn refuse_what_does_not_apply(args: &RunArgs) -> Result<(), Outcome> {
    let refused = [
        (args.common.dry_run, "--dry-run"),
        (args.common.tools.config.is_some(), "--config"),
        (!args.common.tools.tools.is_empty(), "--tools"),
        (args.check_schema, "--check-schema"),
    ];
    match refused.iter().find(|(given, _)| *given) {
        Some((_, flag)) => Err(unreadable(format!(
            "{flag} is not used with an Arazzo document: its operations come from its source descriptions, and its credentials are its parameters (pass them as inputs)"
        ))),
        None => Ok(()),
    }
}

/// The document's workflow when it has one; else which to choose.
fn only_workflow(document: &wayline_arazzo::ArazzoDocument) -> Result<String, Outcome> {
    match document.workflows.as_slice() {
        [one] => Ok(one.workflow_id.clone()),
        many => Err(unreadable(format!(
            "the document has {} workflows; choose one with --workflow ({})",
            many.len(),
            many.iter()
                .map(|workflow| workflow.workflow_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Prints the run (a summary per workflow run and the outputs, or JSON) and the exit code it
/// deserves.
fn report(ran: &WorkflowRun, format: ReportFormat) -> Outcome {
    match format {
        ReportFormat::Json => print_json(&as_json(ran)),
        ReportFormat::Text => print_text(ran, 0),
    }
    crate::report::run_outcome(&ran.run)
}

fn print_text(ran: &WorkflowRun, depth: usize) {
    let indent = "  ".repeat(depth);
    for dependency in &ran.dependencies {
        print_text(dependency, depth);
    }
    outln!("{indent}workflow {}", ran.workflow_id);
    for line in summary(&ran.run).lines() {
        outln!("{indent}{line}");
    }
    for called in &ran.calls {
        print_text(called, depth + 1);
    }
    if !ran.outputs.is_empty() {
        let outputs =
            serde_json::to_string_pretty(&Value::Object(ran.outputs.clone())).unwrap_or_default();
        outln!("{indent}outputs:");
        for line in outputs.lines() {
            outln!("{indent}  {line}");
        }
    }
    for error in &ran.output_errors {
        outln!("{indent}output not read: {error}");
    }
}

fn as_json(ran: &WorkflowRun) -> Value {
    json!({
        "workflow_id": ran.workflow_id,
        "status": ran.run.status.as_str(),
        "outputs": ran.outputs,
        "output_errors": ran.output_errors,
        "run": ran.run,
        "dependencies": ran.dependencies.iter().map(as_json).collect::<Vec<_>>(),
        "calls": ran.calls.iter().map(as_json).collect::<Vec<_>>(),
    })
}
