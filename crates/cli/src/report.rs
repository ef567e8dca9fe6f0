//! How a command ends and what it prints on the way: the outcome (the exit code), errors and
//! the exit code each kind of error deserves, JSON documents, run summaries, and files
//! written whole. A leaf: it uses no other module of the CLI.

use std::fmt;
use std::io::Write;
use std::process::ExitCode;

use clap::ValueEnum;
use serde::Serialize;
use wayline_core::{Run, RunStatus};
use wayline_executor::{PlannedStep, summary};
use wayline_registry::Error as RegistryError;

/// Writes to stdout like `print!`, but a reader that has gone away (`wayline … | head -1`)
/// ends the command quietly with exit 0 instead of a panic; any other write error ends it with
/// exit 2 and says why.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::report::write_out(format_args!($($arg)*))
    };
}

/// [`out!`] with a newline, like `println!`.
macro_rules! outln {
    () => {
        $crate::report::write_out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::report::write_out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {out, outln};

/// What [`out!`] and [`outln!`] do.
pub(crate) fn write_out(text: fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout.write_fmt(text).and_then(|()| stdout.flush());
    match written {
        Ok(()) => {}
        // Whoever reads has all it wanted: stop here, with nothing more to say.
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(error) => {
            eprintln!("error: cannot write to standard output: {error}");
            std::process::exit(2);
        }
    }
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Exit 0.
    Ok,
    /// Exit 1: the thing checked or run failed.
    Failed,
    /// Exit 2: bad usage, or input the command cannot use.
    Unreadable,
    /// Exit 124 (as `timeout` exits): the run's deadline passed.
    TimedOut,
    /// Exit 130 (as a shell reports Ctrl-C): the run was cancelled.
    Cancelled,
}

impl From<Outcome> for ExitCode {
    fn from(outcome: Outcome) -> Self {
        ExitCode::from(match outcome {
            Outcome::Ok => 0,
            Outcome::Failed => 1,
            Outcome::Unreadable => 2,
            Outcome::TimedOut => 124,
            Outcome::Cancelled => 130,
        })
    }
}

/// How a result is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReportFormat {
    Text,
    Json,
}

/// How a document (a policy, an export) is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DocumentFormat {
    Yaml,
    Json,
}

/// An error a command can end with, and the exit code it deserves, decided by its variant
/// (`docs/cli.md` is the contract): input the command cannot use is [`Outcome::Unreadable`],
/// a file checked and found wrong or a run that happened and failed is [`Outcome::Failed`].
pub(crate) trait Failure: fmt::Display {
    /// The outcome this error deserves.
    fn outcome(&self) -> Outcome;
}

impl Failure for RegistryError {
    fn outcome(&self) -> Outcome {
        match self {
            // A file that is not there, or a spec that is not one: nothing to check.
            RegistryError::Io { .. } | RegistryError::Spec { .. } => Outcome::Unreadable,
            // A tool or workflow file that was read and has problems.
            _ => Outcome::Failed,
        }
    }
}

impl Failure for wayline_executor::Error {
    fn outcome(&self) -> Outcome {
        match self {
            // The run happened; its record could not be stored (it is printed instead).
            wayline_executor::Error::Store { run: Some(_), .. } => Outcome::Failed,
            // A resume stopped at steps whose outcome is unknown.
            wayline_executor::Error::UnknownOutcome { .. } => Outcome::Failed,
            // Nothing ran: the workflow, its inputs or the store cannot be used.
            _ => Outcome::Unreadable,
        }
    }
}

impl Failure for wayline_planner::Error {
    fn outcome(&self) -> Outcome {
        match self {
            // The model answered, and the repairs ran out.
            wayline_planner::Error::Invalid { .. } => Outcome::Failed,
            // No model, or none that answers.
            _ => Outcome::Unreadable,
        }
    }
}

impl Failure for wayline_arazzo::Error {
    fn outcome(&self) -> Outcome {
        match self {
            wayline_arazzo::Error::Io { .. } => Outcome::Unreadable,
            // A document that was read and breaks the specification's rules.
            _ => Outcome::Failed,
        }
    }
}

impl Failure for wayline_arazzo::run::RunError {
    fn outcome(&self) -> Outcome {
        use wayline_arazzo::run::RunError;
        match self {
            // The document was read; steps in it cannot run here.
            RunError::Unrunnable { .. } | RunError::TooDeep(_) => Outcome::Failed,
            RunError::Engine(error) => error.outcome(),
            // A workflow or inputs the document does not take.
            _ => Outcome::Unreadable,
        }
    }
}

/// Errors whose every variant deserves one outcome.
macro_rules! one_outcome {
    ($outcome:expr => $($error:ty),* $(,)?) => {
        $(impl Failure for $error {
            fn outcome(&self) -> Outcome {
                $outcome
            }
        })*
    };
}

// A workflow (or document) that was read and has what the other format cannot hold.
one_outcome!(Outcome::Failed =>
    wayline_arazzo::export::ExportError,
    wayline_arazzo::import::ImportError,
);

// Input the command cannot use (a file, a store, a configuration), whatever the variant.
one_outcome!(Outcome::Unreadable =>
    wayline_core::StoreError,
    Box<wayline_core::document::DocumentError>,
    wayline_durable::Error,
    wayline_explorer::Error,
    wayline_guard::Error,
    wayline_knowledge::Error,
    wayline_mcp::Error,
    wayline_sandbox::Error,
    wayline_sandbox::SandboxError,
    wayline_worker::Error,
    wayline_store::Error,
);

/// Prints `error` and returns the outcome its kind deserves.
pub(crate) fn fail(error: impl Failure) -> Outcome {
    eprintln!("error: {error}");
    error.outcome()
}

/// Prints `error` and returns [`Outcome::Unreadable`] whatever its kind: for a message of
/// the CLI's own (bad usage, a missing setting), and for input a command consumes rather than
/// checks (a spec to import, a workflow to run), which its contract answers with 2 however it
/// is wrong. Other errors of the libraries go through [`fail`].
pub(crate) fn unreadable(error: impl fmt::Display) -> Outcome {
    eprintln!("error: {error}");
    Outcome::Unreadable
}

/// The outcome a set of registry errors implies: unreadable beats failed.
pub(crate) fn outcome_of(errors: &[RegistryError]) -> Outcome {
    errors
        .iter()
        .map(Failure::outcome)
        .max_by_key(|outcome| match outcome {
            Outcome::Ok => 0,
            Outcome::Failed => 1,
            _ => 2,
        })
        .unwrap_or(Outcome::Ok)
}

/// Prints registry errors, each with its file, line and suggestion.
pub(crate) fn print_errors(errors: &[RegistryError]) {
    for error in errors {
        eprintln!("error: {error}\n");
    }
}

/// A registry error as `tools check --format json` shows it.
#[derive(Default, Serialize)]
pub(crate) struct ProblemDoc {
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    column: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    suggestion: Option<String>,
    message: String,
}

impl ProblemDoc {
    pub(crate) fn new(error: &RegistryError) -> Self {
        match error {
            RegistryError::Document(doc) => ProblemDoc {
                file: Some(doc.origin.clone()),
                line: doc.line,
                column: doc.column,
                field: doc.field.clone(),
                suggestion: doc.suggestion.clone(),
                message: doc.message.clone(),
            },
            RegistryError::Io { path, .. } => ProblemDoc {
                file: Some(path.display().to_string()),
                message: error.to_string(),
                ..ProblemDoc::default()
            },
            other => ProblemDoc {
                message: other.to_string(),
                ..ProblemDoc::default()
            },
        }
    }
}

/// Prints `value` as pretty JSON on stdout.
pub(crate) fn print_json(value: &impl Serialize) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => outln!("{text}"),
        Err(error) => eprintln!("error: cannot write JSON: {error}"),
    }
}

/// Writes `text` to `path` whole and durably ([`wayline_durable::write`]): a reader sees the
/// old file or the new one, and a crash leaves one of them.
pub(crate) fn write_atomically(path: &std::path::Path, text: &str) -> Result<(), Outcome> {
    wayline_durable::write(path, text.as_bytes()).map_err(fail)
}

/// Prints an engine error. A run that ended but whose final record the store refused is not
/// lost: its record is printed on stderr as JSON.
pub(crate) fn engine_error(error: wayline_executor::Error) -> Outcome {
    if let wayline_executor::Error::Store { run: Some(run), .. } = &error {
        eprintln!("error: {error}");
        eprintln!("the run ended but its final record is not in the store; here it is:");
        match serde_json::to_string_pretty(run) {
            Ok(json) => eprintln!("{json}"),
            Err(error) => eprintln!("(it cannot be shown: {error})"),
        }
        return error.outcome();
    }
    fail(error)
}

/// Prints a run (its summary, or its record as JSON) and the exit code it deserves.
pub(crate) fn report_run(run: &Run, format: ReportFormat) -> Outcome {
    match format {
        ReportFormat::Json => print_json(run),
        ReportFormat::Text => out!("{}", summary(run)),
    }
    run_outcome(run)
}

/// The exit code a run's status deserves.
pub(crate) fn run_outcome(run: &Run) -> Outcome {
    match run.status {
        RunStatus::Success => Outcome::Ok,
        RunStatus::Cancelled => Outcome::Cancelled,
        RunStatus::TimedOut => Outcome::TimedOut,
        _ => Outcome::Failed,
    }
}

/// Prints what a dry run would send, step by step.
pub(crate) fn print_plan(planned: &[PlannedStep]) {
    for step in planned {
        let what = if step.tool_id.is_empty() {
            "transform".to_owned()
        } else {
            format!("tool {}", step.tool_id)
        };
        outln!("{} ({what})", step.step_id);
        if let Some(when) = &step.when {
            outln!("  when {when}");
        }
        if let Some(request) = &step.request {
            outln!("  {} {}", request.method, request.url);
            for (name, value) in &request.headers {
                outln!("  {name}: {value}");
            }
            if let Some(body) = &request.body {
                outln!("  body: {body}");
            }
        }
        if let Some(command) = &step.command {
            outln!("  $ {}", command.join(" "));
        }
        for note in &step.notes {
            outln!("  note: {note}");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn registry_errors_are_failed_or_unreadable_by_variant() {
        let io = RegistryError::Io {
            path: PathBuf::from("missing.yaml"),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        let duplicate = RegistryError::DuplicateId {
            id: "a".into(),
            first: PathBuf::from("a.yaml"),
            second: PathBuf::from("b.yaml"),
        };
        assert_eq!(duplicate.outcome(), Outcome::Failed);
        assert_eq!(io.outcome(), Outcome::Unreadable);
        assert_eq!(outcome_of(&[]), Outcome::Ok);
        assert_eq!(
            outcome_of(std::slice::from_ref(&duplicate)),
            Outcome::Failed
        );
        assert_eq!(outcome_of(&[duplicate, io]), Outcome::Unreadable);
    }

    #[test]
    fn a_plan_whose_repairs_ran_out_failed_and_a_missing_model_is_unreadable() {
        let invalid = wayline_planner::Error::Invalid {
            answers: 3,
            problems: vec!["cycle".into()],
        };
        let config = wayline_planner::Error::Config {
            message: "no model".into(),
        };
        assert_eq!(invalid.outcome(), Outcome::Failed);
        assert_eq!(config.outcome(), Outcome::Unreadable);
    }
}
