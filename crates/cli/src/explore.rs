//! `wayline explore`: from a SUT, its spec and a target in plain words to confirmed steps and
//! a reusable scenario (in the TiDB Cloud explorer's output format), asking a person — at the
//! terminal, from an answers file, or not at all with `--auto` — when the intervention matrix
//! says so.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;
use wayline_core::intervene::{Answer, Answerer, AutoApprove, Interventor, Question, QuestionKind};
use wayline_explorer::ScriptedInterventor;
use wayline_explorer::auth::sut_transport;
use wayline_explorer::exploration::ExplorationStatus;
use wayline_explorer::explore::Explorer;
use wayline_explorer::sut::SutConfig;
use wayline_registry::openapi::ApiSpec;

use crate::args::KnowledgeArg;
use crate::assemble::{open_knowledge, runtime, transport};
use crate::report::{Outcome, ReportFormat, fail, outln, print_json, unreadable, write_atomically};

/// `wayline explore` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ExploreArgs {
    /// The SUT config (`sut.yaml`).
    #[arg(long, value_name = "FILE")]
    sut: PathBuf,
    /// What to reach, in plain words ("create a cluster, create a branch on it, delete both").
    #[arg(long, value_name = "TEXT", required_unless_present = "resume")]
    target: Option<String>,
    /// The OpenAPI spec (default: the SUT's `specs.openapi`, relative to the SUT file).
    #[arg(long, value_name = "FILE")]
    spec: Option<PathBuf>,
    /// Run without asking: auto mode, and every question answered without a person (yes to
    /// confirmations, the first choice; stop where only a person can help).
    #[arg(long)]
    auto: bool,
    /// Let a collection-wide write (`DELETE /records`, a bulk update) run without a question
    /// when the target asks for the whole collection ("delete all records"). Without it,
    /// `--auto` never runs one, and a person is asked first.
    #[arg(long)]
    allow_collection_writes: bool,
    /// Answer questions from this file (`answers: [{kind, operation, answer, times}]`).
    #[arg(long, value_name = "FILE")]
    answers: Option<PathBuf>,
    /// Go on with this session (its id, `ses_...`).
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
    /// Where sessions are kept (default: `$WAYLINE_HOME/sessions`).
    #[arg(long, value_name = "DIR")]
    session_dir: Option<PathBuf>,
    /// Write the confirmed steps as a wayline workflow to this file.
    #[arg(long, value_name = "FILE")]
    emit_workflow: Option<PathBuf>,
    /// Replace the `--emit-workflow` file when it exists with other content.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    knowledge: KnowledgeArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    format: ReportFormat,
}

/// Asks at the terminal: the question on stderr, the answer from stdin (`y`, `n`, `a` to
/// stop, a number to choose, other text as given). End of input stops.
#[derive(Debug)]
struct TerminalInterventor;

#[async_trait::async_trait]
impl Interventor for TerminalInterventor {
    async fn ask(&self, question: &Question) -> Answer {
        let mut stderr = std::io::stderr();
        let _ = writeln!(stderr, "\n? {}", question.message);
        for (index, option) in question.options.iter().enumerate() {
            let _ = writeln!(stderr, "  {index}) {option}");
        }
        let hint = match question.kind {
            QuestionKind::Choose => "number, n to skip, a to stop",
            QuestionKind::Clarify | QuestionKind::Credentials | QuestionKind::Error => {
                "y to retry, n to skip, a to stop, or JSON values to use"
            }
            _ => "y/n, a to stop",
        };
        let _ = write!(stderr, "  [{hint}] ");
        let _ = stderr.flush();
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
            return Answer::Abort;
        }
        let line = line.trim();
        match line.to_lowercase().as_str() {
            "y" | "yes" => Answer::Yes,
            "n" | "no" => Answer::No,
            "a" | "abort" | "q" | "quit" | "" => Answer::Abort,
            other => match other.parse::<usize>() {
                Ok(index) => Answer::Choose(index),
                Err(_) => Answer::Text(line.to_owned()),
            },
        }
    }
}

/// An interventor that answers without a person, its questions and answers printed on
/// stderr as they come (when `shown`).
#[derive(Debug)]
struct Echo<I> {
    inner: I,
    shown: bool,
}

impl<I> Echo<I> {
    fn new(inner: I, shown: bool) -> Self {
        Echo { inner, shown }
    }
}

#[async_trait::async_trait]
impl<I: Interventor> Interventor for Echo<I> {
    async fn ask(&self, question: &Question) -> Answer {
        let answer = self.inner.ask(question).await;
        if self.shown {
            let by = match self.inner.answerer() {
                Answerer::AnswersFile => "the answers file",
                Answerer::Auto => "auto mode",
                _ => "a person",
            };
            let said = match &answer {
                Answer::Yes => "yes".to_owned(),
                Answer::No => "no".to_owned(),
                Answer::Choose(index) => question
                    .options
                    .get(*index)
                    .map_or_else(|| format!("option {index}"), Clone::clone),
                // Values as JSON show with secret fields masked; a bare text may be a secret
                // for the one field asked for, so only its length shows.
                Answer::Text(text) => match serde_json::from_str::<serde_json::Value>(text) {
                    Ok(value @ serde_json::Value::Object(_)) => {
                        wayline_core::secret::mask_secret_names(&value).to_string()
                    }
                    _ => format!("{} character(s) of text", text.chars().count()),
                },
                _ => "stop".to_owned(),
            };
            eprintln!(
                "? {}
  → {said} ({by})",
                question.message
            );
        }
        answer
    }

    fn answerer(&self) -> Answerer {
        self.inner.answerer()
    }
}

fn home_dir(name: &str) -> Option<PathBuf> {
    wayline_store::default_location().and_then(|db| db.parent().map(|home| home.join(name)))
}

pub(crate) fn explore_command(args: ExploreArgs) -> Outcome {
    match explore(args) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn explore(args: ExploreArgs) -> Result<Outcome, Outcome> {
    let sut = SutConfig::load(&args.sut).map_err(fail)?;
    let spec_path = args
        .spec
        .clone()
        .or_else(|| sut.spec_path())
        .ok_or_else(|| unreadable("the SUT names no spec (specs.openapi); pass --spec FILE"))?;
    let spec = ApiSpec::load(&spec_path).map_err(unreadable)?;
    let credentials = sut
        .credentials(&|name| std::env::var(name).ok())
        .map_err(fail)?;
    // Answers given without a person are shown as they are given (on stderr), in text mode;
    // the JSON summary and the session file keep them all in the transcript.
    let echo = args.format == ReportFormat::Text;
    let interventor: Arc<dyn Interventor> = match (&args.answers, args.auto) {
        (Some(path), _) => Arc::new(Echo::new(
            ScriptedInterventor::load(path).map_err(fail)?,
            echo,
        )),
        (None, true) => Arc::new(Echo::new(AutoApprove, echo)),
        (None, false) => Arc::new(TerminalInterventor),
    };
    let session_dir = args
        .session_dir
        .clone()
        .or_else(|| home_dir("sessions"))
        .ok_or_else(|| unreadable("no --session-dir given and no home directory known"))?;
    let knowledge = open_knowledge(&args.knowledge, None)?;
    let transport = sut_transport(&credentials, Arc::new(transport()?));
    let mut explorer = Explorer::new(sut, spec, transport, interventor)
        .map_err(fail)?
        .knowledge(knowledge)
        .session_dir(&session_dir);
    if args.auto {
        explorer = explorer.auto();
    }
    if args.allow_collection_writes {
        explorer = explorer.allow_collection_writes();
    }
    let runtime = runtime()?;
    let mut session = match (&args.resume, &args.target) {
        (Some(id), _) => explorer.resume(id).map_err(fail)?,
        (None, Some(target)) => explorer.start(target).map_err(fail)?,
        (None, None) => return Err(unreadable("give --target TEXT, or --resume ID")),
    };
    // Knowledge that could not be saved fails the command, once the session's output is
    // written: the exploration happened and its session file is saved.
    let unsaved = match runtime.block_on(explorer.run(&mut session)) {
        Ok(()) => None,
        Err(error @ wayline_explorer::Error::KnowledgeUnsaved { .. }) => Some(error),
        Err(error) => return Err(fail(error)),
    };
    let scenario = explorer.output(&session);
    let output = session_dir.join(format!("{}-output.yaml", session.session.id));
    write_atomically(&output, &scenario.to_yaml())?;
    if let Some(path) = &args.emit_workflow {
        let (workflow, warnings) = scenario.to_workflow().map_err(fail)?;
        for warning in warnings {
            eprintln!("warning: {warning}");
        }
        let text = serde_norway::to_string(&workflow)
            .map_err(|error| unreadable(format!("cannot write the workflow: {error}")))?;
        if !args.force && std::fs::read_to_string(path).is_ok_and(|existing| existing != text) {
            return Err(unreadable(format!(
                "{} exists with other content; pass --force to replace it (the session is saved: {})",
                path.display(),
                session.session.id
            )));
        }
        write_atomically(path, &text)?;
    }
    let status = session.session.status.as_str();
    match args.format {
        ReportFormat::Json => print_json(&json!({
            "session_id": session.session.id,
            "status": status,
            "confirmed_steps": session.confirmed_steps.len(),
            "interventions": session.interventions,
            "generated": session.generated,
            "transcript": session.transcript,
            "stop_reason": session.stop_reason,
            "output": output.display().to_string(),
        })),
        ReportFormat::Text => {
            for step in &session.confirmed_steps {
                outln!("  ok  {} ({} call(s))", step.operation_id, step.attempts);
            }
            for (field, value) in &session.generated {
                outln!("  made up {field} = {value} (nothing gave it; auto mode)");
            }
            for step in &session.rejected_steps {
                outln!(
                    "  --  {}: {} ({})",
                    step.operation_id,
                    step.error,
                    step.user_action
                );
            }
            outln!(
                "session {}: {} — {} step(s), {} question(s); output {}",
                session.session.id,
                status,
                session.confirmed_steps.len(),
                session.interventions,
                output.display()
            );
            if let Some(reason) = &session.stop_reason {
                outln!("  why it stopped: {reason}");
            }
            if session.session.status == ExplorationStatus::InProgress {
                outln!("resume it with --resume {}", session.session.id);
            }
        }
    }
    if let Some(error) = unsaved {
        eprintln!("error: {error}");
        return Ok(Outcome::Failed);
    }
    Ok(if session.session.status == ExplorationStatus::Completed {
        Outcome::Ok
    } else {
        Outcome::Failed
    })
}
