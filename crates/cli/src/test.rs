//! `wayline test`: run every workflow found under the paths given — in parallel, each checked
//! by its steps' `expect` — print a line per workflow and a summary, and write the reports a CI
//! system reads. Exit 0 only when every workflow passed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use chrono::Utc;
use futures_util::StreamExt;
use indexmap::IndexMap;
use serde_json::Value;
use wayline_core::document::Format;
use wayline_core::{Transport, Workflow};
use wayline_executor::{CancelToken, RecordingTransport, Redactor, RunOptions};

use crate::args::{ModelArgs, ToolsArgs};
use crate::assemble::{
    EngineParts, Environment, cancellable, load_tools_to_call, run_inputs, runtime, with_decider,
};
use crate::report::{Outcome, ReportFormat, outln, print_json, unreadable, write_atomically};
use crate::test_results::{Case, CaseStatus, TestResults, github, har, junit, tap};

/// `wayline test` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct TestArgs {
    /// Workflow files, directories (searched for workflows, recursively), glob patterns, or `-`
    /// for one workflow on standard input.
    #[arg(required = true, value_name = "PATH")]
    pub(crate) paths: Vec<String>,
    #[command(flatten)]
    pub(crate) tools: ToolsArgs,
    /// A run input for every workflow, `NAME=TEXT` or `NAME:=JSON`; it wins over a workflow's
    /// inputs file (`NAME.inputs.yaml` beside `NAME.yaml`).
    #[arg(long = "input", value_name = "K=V")]
    pub(crate) inputs: Vec<String>,
    /// Workflows running at once.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub(crate) jobs: usize,
    /// Stop at the first workflow that does not pass: runs in flight are cancelled, the rest
    /// are skipped.
    #[arg(long)]
    pub(crate) fail_fast: bool,
    /// Only the workflows whose path, id or name contains this text.
    #[arg(long, value_name = "TEXT")]
    pub(crate) filter: Option<String>,
    /// Write a report: `junit=PATH`, `tap=PATH`, `json=PATH`, or `github` (annotations on
    /// standard output). Repeatable.
    #[arg(long = "report", value_name = "KIND[=PATH]")]
    pub(crate) reports: Vec<String>,
    /// Check every response against its tool's response schema for the status, when the tool
    /// has one (tools imported from OpenAPI do); a step's `expect.schema` overrides it.
    #[arg(long)]
    pub(crate) check_schema: bool,
    /// Write every request and response as an HTTP Archive (HAR 1.2), secrets masked.
    #[arg(long, value_name = "PATH")]
    pub(crate) har: Option<PathBuf>,
    /// Output format: text prints a line per workflow and a summary, json the JSON report.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub(crate) format: ReportFormat,
    /// The language model that answers decision steps, if a workflow has any.
    #[command(flatten)]
    pub(crate) model: ModelArgs,
}

/// A report asked for with `--report`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Report {
    Junit(PathBuf),
    Tap(PathBuf),
    Json(PathBuf),
    Github,
}

fn parse_report(text: &str) -> Result<Report, String> {
    let (kind, path) = match text.split_once('=') {
        Some((kind, path)) if !path.is_empty() => (kind, Some(PathBuf::from(path))),
        Some((kind, _)) => (kind, None),
        None => (text, None),
    };
    match (kind, path) {
        ("junit", Some(path)) => Ok(Report::Junit(path)),
        ("tap", Some(path)) => Ok(Report::Tap(path)),
        ("json", Some(path)) => Ok(Report::Json(path)),
        ("github", None) => Ok(Report::Github),
        ("junit" | "tap" | "json", None) => Err(format!(
            "--report {text}: say where to write it, e.g. --report {kind}=report.{}",
            if kind == "junit" { "xml" } else { kind }
        )),
        ("github", Some(_)) => Err(format!(
            "--report {text}: GitHub annotations go to standard output; write --report github"
        )),
        _ => Err(format!(
            "--report {text}: unknown report `{kind}`; write junit=PATH, tap=PATH, json=PATH or github"
        )),
    }
}

/// A workflow found: where, and its text.
#[derive(Debug)]
struct Found {
    /// As shown (`-` for standard input).
    shown: String,
    /// The file (`None` for standard input).
    path: Option<PathBuf>,
    text: String,
}

pub(crate) fn test_command(args: TestArgs) -> Outcome {
    match run_tests(args) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn run_tests(args: TestArgs) -> Result<Outcome, Outcome> {
    let reports = args
        .reports
        .iter()
        .map(|text| parse_report(text))
        .collect::<Result<Vec<_>, _>>()
        .map_err(unreadable)?;
    if args.jobs == 0 {
        return Err(unreadable("--jobs 0: give at least 1"));
    }
    let found = discover(&args.paths)?;
    let env = Environment::load(&args.tools.env_files)?;
    let registry = Arc::new(load_tools_to_call(&args.tools.tools, &env)?);
    let parts = EngineParts::assemble(registry, &args.tools, &env)?;
    let runtime = runtime()?;
    let started_at = Utc::now();
    let clock = Instant::now();
    let stop = AtomicBool::new(false);
    let prepared: Vec<Prepared> = found
        .into_iter()
        .map(|found| prepare(found, &args))
        .filter(|prepared| keep(prepared, args.filter.as_deref()))
        .collect();
    if prepared.is_empty() {
        return Err(unreadable(match &args.filter {
            Some(filter) => format!("no workflow matches --filter {filter}"),
            None => "no workflows found".to_owned(),
        }));
    }
    let printing = args.format == ReportFormat::Text;
    let recording = args.har.is_some();
    let cases = cancellable(&runtime, |cancel| {
        let parts = &parts;
        let args = &args;
        let stop = &stop;
        futures_util::stream::iter(prepared.into_iter().enumerate())
            .map(move |(index, prepared)| {
                let cancel = cancel.clone();
                async move {
                    let case = if stop.load(Ordering::SeqCst) {
                        Case::not_run(
                            &prepared.shown,
                            &prepared.id,
                            CaseStatus::Skipped,
                            "not run: an earlier workflow did not pass (--fail-fast)".to_owned(),
                        )
                    } else {
                        run_case(prepared, parts, args, recording, cancel.clone()).await
                    };
                    if args.fail_fast
                        && matches!(case.verdict, CaseStatus::Failed | CaseStatus::Errored)
                        && !stop.swap(true, Ordering::SeqCst)
                    {
                        cancel.cancel();
                    }
                    if printing {
                        outln!("{}", case.line());
                    }
                    (index, case)
                }
            })
            .buffer_unordered(args.jobs)
            .collect::<Vec<_>>()
    });
    let mut cases = cases;
    cases.sort_by_key(|(index, _)| *index);
    let results = TestResults {
        cases: cases.into_iter().map(|(_, case)| case).collect(),
        started_at,
        duration: clock.elapsed(),
    };
    match args.format {
        ReportFormat::Text => outln!("{}", results.summary()),
        ReportFormat::Json => print_json(&results.json()),
    }
    for report in &reports {
        match report {
            Report::Junit(path) => write_atomically(path, &junit::render(&results))?,
            Report::Tap(path) => write_atomically(path, &tap::render(&results))?,
            Report::Json(path) => write_json(path, &results.json())?,
            Report::Github => crate::report::out!("{}", github::render(&results)),
        }
    }
    if let Some(path) = &args.har {
        write_json(path, &har::render(&results))?;
    }
    Ok(if results.passed() {
        Outcome::Ok
    } else {
        Outcome::Failed
    })
}

fn write_json(path: &Path, value: &Value) -> Result<(), Outcome> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|error| unreadable(format!("cannot write {}: {error}", path.display())))?;
    write_atomically(path, &format!("{text}\n"))
}

/// A workflow read and parsed (or why it could not be), with its run inputs.
struct Prepared {
    shown: String,
    id: String,
    text: Option<String>,
    loaded: Result<(Workflow, IndexMap<String, Value>), String>,
}

fn prepare(found: Found, args: &TestArgs) -> Prepared {
    let fallback_id = found.path.as_deref().and_then(Path::file_stem).map_or_else(
        || "stdin".to_owned(),
        |stem| stem.to_string_lossy().into_owned(),
    );
    let format = found
        .path
        .as_deref()
        .and_then(Format::from_path)
        .unwrap_or(Format::Yaml);
    let loaded = Workflow::parse(&found.text, format, &found.shown)
        .map_err(|error| error.to_string())
        .and_then(|workflow| {
            let sidecar = found.path.as_deref().and_then(sidecar_inputs);
            let inputs = run_inputs(sidecar.as_deref(), &args.inputs)
                .map_err(|_| "its inputs could not be read (see above)".to_owned())?;
            Ok((workflow, inputs))
        });
    let id = match &loaded {
        Ok((workflow, _)) => workflow.id.clone(),
        Err(_) => fallback_id,
    };
    Prepared {
        shown: found.shown,
        id,
        text: Some(found.text),
        loaded,
    }
}

fn keep(prepared: &Prepared, filter: Option<&str>) -> bool {
    let Some(filter) = filter else {
        return true;
    };
    let name = prepared
        .loaded
        .as_ref()
        .map(|(workflow, _)| workflow.name.as_str())
        .unwrap_or_default();
    [prepared.shown.as_str(), prepared.id.as_str(), name]
        .iter()
        .any(|text| text.contains(filter))
}

async fn run_case(
    prepared: Prepared,
    parts: &EngineParts,
    args: &TestArgs,
    recording: bool,
    cancel: CancelToken,
) -> Case {
    let Prepared {
        shown,
        id,
        text,
        loaded,
    } = prepared;
    let (workflow, inputs) = match loaded {
        Ok(loaded) => loaded,
        Err(reason) => {
            let mut case = Case::not_run(&shown, &id, CaseStatus::Errored, reason);
            case.source = text;
            return case;
        }
    };
    // One redactor for the run and its archive: the engine teaches it what the run meets (a
    // token an `auth_token_command` printed among them), and the archive masks through it.
    let redactor = Redactor::for_configs(
        parts
            .configs
            .tool_ids()
            .filter_map(|tool| parts.configs.get(tool)),
    );
    redactor.learn(parts.masked.iter().cloned());
    let recorder =
        recording.then(|| RecordingTransport::new(Arc::clone(&parts.transport), redactor.clone()));
    let transport: Arc<dyn Transport> = match &recorder {
        Some(recorder) => Arc::new(recorder.clone()),
        None => Arc::clone(&parts.transport),
    };
    let mut case = Case::not_run(&shown, &id, CaseStatus::Errored, String::new());
    case.name = workflow.name.clone();
    case.source = text;
    let builder = parts
        .builder(transport)
        .redactor(redactor)
        .check_response_schemas(args.check_schema);
    let builder = match with_decider(builder, [&workflow], &args.model, false) {
        Ok(builder) => builder,
        Err(_) => {
            case.reason = Some(
                "it has decision steps and no language model is configured (see above)".to_owned(),
            );
            return case;
        }
    };
    let engine = builder.build();
    let clock = Instant::now();
    case.started_at = Utc::now();
    let result = engine
        .run(&workflow, RunOptions::new().inputs(inputs).cancel(cancel))
        .await;
    case.duration = clock.elapsed();
    if let Some(recorder) = recorder {
        case.exchanges = recorder.exchanges();
    }
    match result {
        Ok(run) => {
            case.verdict = Case::verdict_of(&run);
            case.reason = None;
            case.run = Some(run);
        }
        Err(error) => case.reason = Some(error.to_string()),
    }
    case
}

/// The inputs file beside a workflow: `NAME.inputs.yaml` (or `.yml`, `.json`) for `NAME.EXT`.
fn sidecar_inputs(path: &Path) -> Option<PathBuf> {
    let stem = path.file_stem()?.to_str()?;
    ["yaml", "yml", "json"]
        .iter()
        .map(|extension| path.with_file_name(format!("{stem}.inputs.{extension}")))
        .find(|candidate| candidate.is_file())
}

/// True for a file name a workflow may have (and not an inputs file's).
fn workflow_name(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|name| name.to_str()) else {
        return false;
    };
    Format::from_path(path).is_some()
        && !["inputs.yaml", "inputs.yml", "inputs.json"]
            .iter()
            .any(|suffix| name.ends_with(&format!(".{suffix}")))
}

/// True when `text` reads as a document with `steps` (a workflow rather than a tool, a config
/// or an inputs file).
fn looks_like_workflow(text: &str) -> bool {
    // Through the document limits, as every read of a user's file.
    wayline_core::document::parse::<Value>(text, Format::Yaml, "")
        .ok()
        .is_some_and(|value| value.get("steps").is_some_and(Value::is_array))
}

/// Every workflow `paths` name, in order: a file as it is, a directory's workflows (any depth,
/// by name), a glob's matches, `-` standard input. A path that names nothing is an error.
fn discover(paths: &[String]) -> Result<Vec<Found>, Outcome> {
    let mut found = Vec::new();
    let mut stdin_read = false;
    for given in paths {
        if given == "-" {
            if stdin_read {
                return Err(unreadable(
                    "`-` given twice: standard input holds one workflow",
                ));
            }
            stdin_read = true;
            let text = wayline_durable::read::text_from(
                std::io::stdin(),
                wayline_core::document::Limits::configured().max_bytes,
            )
            .map_err(|error| unreadable(format!("cannot read standard input: {error}")))?;
            found.push(Found {
                shown: "-".to_owned(),
                path: None,
                text,
            });
            continue;
        }
        let path = Path::new(given);
        let matches: Vec<PathBuf> = if path.exists() {
            vec![path.to_owned()]
        } else if given.contains(['*', '?', '[']) {
            let mut matches: Vec<PathBuf> = glob::glob(given)
                .map_err(|error| unreadable(format!("{given}: not a glob pattern: {error}")))?
                .filter_map(Result::ok)
                .collect();
            matches.sort();
            if matches.is_empty() {
                return Err(unreadable(format!("{given}: no file matches")));
            }
            matches
        } else {
            return Err(unreadable(format!("{given}: no such file or directory")));
        };
        for path in matches {
            if path.is_dir() {
                found.extend(directory(&path)?);
            } else {
                let text = read(&path)?;
                found.push(Found {
                    shown: path.display().to_string(),
                    path: Some(path),
                    text,
                });
            }
        }
    }
    Ok(found)
}

fn read(path: &Path) -> Result<String, Outcome> {
    wayline_durable::read::text(path, wayline_core::document::Limits::configured().max_bytes)
        .map_err(|error| unreadable(format!("cannot read {}: {error}", path.display())))
}

/// The workflows under `dir`, by path.
fn directory(dir: &Path) -> Result<Vec<Found>, Outcome> {
    let mut found = Vec::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry =
            entry.map_err(|error| unreadable(format!("cannot read {}: {error}", dir.display())))?;
        let path = entry.path();
        if !entry.file_type().is_file() || !workflow_name(path) {
            continue;
        }
        let text = read(path)?;
        if looks_like_workflow(&text) {
            found.push(Found {
                shown: path.display().to_string(),
                path: Some(path.to_owned()),
                text,
            });
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_are_named_with_their_paths() {
        assert_eq!(
            parse_report("junit=out/j.xml"),
            Ok(Report::Junit("out/j.xml".into()))
        );
        assert_eq!(parse_report("github"), Ok(Report::Github));
        assert!(
            parse_report("junit")
                .unwrap_err()
                .contains("--report junit=report.xml")
        );
        assert!(
            parse_report("html=x")
                .unwrap_err()
                .contains("unknown report `html`")
        );
        assert!(parse_report("github=x").is_err());
    }

    #[test]
    fn directories_give_their_workflows_and_leave_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("b.yaml", "id: b\nname: B\nsteps: []\n");
        write("a/c.json", r#"{"id": "c", "name": "C", "steps": []}"#);
        write("a/c.inputs.yaml", "steps: [1]\n");
        write("tool.yaml", "id: t\nname: T\nbase_url: x\n");
        write("notes.txt", "steps: []\n");
        let found = directory(dir.path()).unwrap();
        let names: Vec<String> = found
            .iter()
            .map(|found| {
                found
                    .path
                    .as_ref()
                    .unwrap()
                    .strip_prefix(dir.path())
                    .unwrap()
                    .display()
                    .to_string()
            })
            .collect();
        assert_eq!(names, ["a/c.json", "b.yaml"]);
        assert_eq!(
            sidecar_inputs(&dir.path().join("a/c.json")),
            Some(dir.path().join("a/c.inputs.yaml"))
        );
    }
}
