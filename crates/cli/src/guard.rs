//! `wayline guard ...`: print a policy, decide a tool call in a session, run a decision-table
//! suite, verify an audit log.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::Utc;
use wayline_core::document::{self, Format};
use wayline_durable::LockFile;
use wayline_guard::audit::{self, AuditLog, Verification};
use wayline_guard::{Guard, GuardVerdict, Mode, Policy, Scope, Session, ToolCall, suite};

use crate::args::ModeArg;
use crate::report::{
    DocumentFormat, Outcome, ReportFormat, fail, out, outln, print_json, unreadable,
    write_atomically,
};

/// `wayline guard ...`
#[derive(Debug, clap::Subcommand)]
pub(crate) enum GuardCommand {
    /// Print a policy as YAML: the default (ADR-005), or a policy file once checked.
    Policy {
        /// Print the default policy (the default when no file is given).
        #[arg(long = "default", conflicts_with = "policy")]
        default: bool,
        /// A policy file to check and print.
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = DocumentFormat::Yaml)]
        format: DocumentFormat,
    },
    /// Decide a tool call in a session; the session file is updated (created when missing).
    Check {
        /// The policy file (default: ADR-005's).
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        /// The session file (YAML or JSON).
        #[arg(long, value_name = "FILE")]
        session: PathBuf,
        /// The tool about to be called.
        #[arg(long, value_name = "NAME")]
        tool: String,
        /// The namespace or resource it is about.
        #[arg(long, value_name = "NAME")]
        domain: Option<String>,
        /// How decisions are enforced.
        #[arg(long, value_enum, default_value_t = ModeArg::Blocking)]
        mode: ModeArg,
        /// Append the decision to this audit log (JSON lines, hash-chained).
        #[arg(long, value_name = "FILE")]
        audit: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Record an item of evidence in a session (it moves on when its state's requirements
    /// are met).
    Evidence(EvidenceArgs),
    /// Move a session to a next state: forward only once its requirements are met (exit 1
    /// with what is missing).
    Advance(AdvanceArgs),
    /// Approve an emergency (break-glass) request an agent filed in a session, as a second
    /// person; without a request id, list the requests waiting.
    Approve(ApproveArgs),
    /// Run a decision-table suite; exit 0 only if every case passes.
    Verify {
        /// The suite file.
        suite: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// The audit log.
    #[command(subcommand)]
    Audit(AuditCommand),
}

/// `wayline guard evidence` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct EvidenceArgs {
    /// The policy file (default: ADR-005's).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// The session file (YAML or JSON).
    #[arg(long, value_name = "FILE")]
    session: PathBuf,
    /// The evidence type (`symptoms`, `root_cause_theory`, ...).
    #[arg(long = "type", value_name = "TYPE")]
    kind: String,
    /// What it says.
    #[arg(long, value_name = "TEXT")]
    description: String,
    /// Append to this audit log.
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    format: ReportFormat,
}

/// `wayline guard advance` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct AdvanceArgs {
    /// The policy file (default: ADR-005's).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// The session file (YAML or JSON).
    #[arg(long, value_name = "FILE")]
    session: PathBuf,
    /// The state to move to.
    #[arg(long, value_name = "STATE")]
    to: String,
    /// Append to this audit log.
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    format: ReportFormat,
}

/// `wayline guard approve` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ApproveArgs {
    /// The request's id (`req-…`, as the agent was told); none: list the waiting requests.
    request: Option<String>,
    /// The policy file (default: ADR-005's).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// The session file (YAML or JSON; the MCP gateway keeps its sessions as
    /// `DATA_DIR/sessions/NAME.json`).
    #[arg(long, value_name = "FILE")]
    session: PathBuf,
    /// Who approves: a person, not the requester.
    #[arg(long, value_name = "NAME", required_unless_present = "request")]
    approver: Option<String>,
    /// Append to this audit log.
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    format: ReportFormat,
}

/// `wayline guard audit ...`
#[derive(Debug, clap::Subcommand)]
pub(crate) enum AuditCommand {
    /// Check the hash chain of an audit log: exit 0 intact, 1 broken (where and why).
    Verify {
        /// The log file.
        file: PathBuf,
        /// A head hash kept elsewhere (printed by an earlier verify): the entry with this hash
        /// must still be in the log, which shows entries cut from its end or a log rewritten
        /// whole.
        #[arg(long, value_name = "HASH")]
        head: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
}

pub(crate) fn guard_command(command: GuardCommand) -> Outcome {
    match run(command) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn load_policy(path: Option<&Path>) -> Result<Policy, Outcome> {
    match path {
        None => Ok(Policy::default_policy()),
        Some(path) => Policy::load(path).map_err(fail),
    }
}

fn run(command: GuardCommand) -> Result<Outcome, Outcome> {
    match command {
        GuardCommand::Policy { policy, format, .. } => {
            let policy = load_policy(policy.as_deref())?;
            match format {
                DocumentFormat::Yaml => out!("{}", policy.to_yaml()),
                DocumentFormat::Json => print_json(policy.file()),
            }
            Ok(Outcome::Ok)
        }
        GuardCommand::Check {
            policy,
            session,
            tool,
            domain,
            mode,
            audit,
            format,
        } => check(&CheckArgs {
            policy,
            session,
            tool,
            domain,
            mode: mode.into(),
            audit,
            format,
        }),
        GuardCommand::Evidence(args) => evidence(&args),
        GuardCommand::Advance(args) => advance(&args),
        GuardCommand::Approve(args) => approve(&args),
        GuardCommand::Verify {
            suite: path,
            format,
        } => {
            let (suite, policy) = suite::load(&path).map_err(fail)?;
            let results = suite::run(&suite, &Arc::new(policy));
            let failed = results.iter().filter(|result| !result.passed).count();
            match format {
                ReportFormat::Json => print_json(&results),
                ReportFormat::Text => {
                    for result in &results {
                        match &result.problem {
                            None => outln!("ok    {}", result.name),
                            Some(problem) => outln!("FAIL  {}: {problem}", result.name),
                        }
                    }
                    outln!(
                        "{} cases, {} passed, {failed} failed",
                        results.len(),
                        results.len() - failed
                    );
                }
            }
            Ok(if failed == 0 {
                Outcome::Ok
            } else {
                Outcome::Failed
            })
        }
        GuardCommand::Audit(AuditCommand::Verify { file, head, format }) => {
            let verified = match &head {
                Some(anchor) => audit::verify_from_anchor(&file, anchor),
                None => audit::verify(&file),
            };
            let verification = verified.map_err(fail)?;
            if format == ReportFormat::Json {
                print_json(&verification);
                return Ok(match verification {
                    Verification::Intact { .. } => Outcome::Ok,
                    _ => Outcome::Failed,
                });
            }
            match verification {
                Verification::Intact { entries, head } => {
                    outln!("intact: {entries} entries, each linked to the one before");
                    // A chain cannot show entries cut from its end: the head, kept elsewhere,
                    // can.
                    outln!("head: {head}");
                    Ok(Outcome::Ok)
                }
                Verification::Broken { line, reason } => {
                    outln!("broken at line {line}: {reason}");
                    Ok(Outcome::Failed)
                }
            }
        }
    }
}

struct CheckArgs {
    policy: Option<PathBuf>,
    session: PathBuf,
    tool: String,
    domain: Option<String>,
    mode: Mode,
    audit: Option<PathBuf>,
    format: ReportFormat,
}

fn check(args: &CheckArgs) -> Result<Outcome, Outcome> {
    let Opened {
        guard,
        mut session,
        audit,
        _lock,
    } = open_session(
        args.policy.as_deref(),
        &args.session,
        args.audit.as_deref(),
        args.mode,
    )?;
    let mut call = ToolCall::new(&args.tool);
    if let Some(domain) = &args.domain {
        call = call.domain(domain);
    }
    let decision = guard.decide(&mut session, call, Utc::now());
    save_session(&args.session, &session)?;
    match args.format {
        ReportFormat::Json => print_json(&decision),
        ReportFormat::Text => print_decision(&decision, &session),
    }
    // A decision that could not be audited is already a block, except in audit mode, which
    // never blocks: there the lost entry is reported.
    let unaudited = audit.is_some_and(|log| report_unaudited(&log, args.mode == Mode::Audit));
    Ok(match decision {
        GuardVerdict::Block { .. } => Outcome::Failed,
        _ if unaudited && args.mode != Mode::Audit => Outcome::Failed,
        _ => Outcome::Ok,
    })
}

/// Prints what the audit log could not take, as an error (or, `as_warning`, a warning); true
/// when anything was lost.
fn report_unaudited(log: &AuditLog, as_warning: bool) -> bool {
    let failures = log.failures();
    let level = if as_warning { "warning" } else { "error" };
    for failure in &failures {
        eprintln!("{level}: not in the audit log: {failure}");
    }
    !failures.is_empty()
}

/// Records an item of evidence in the session file.
fn evidence(args: &EvidenceArgs) -> Result<Outcome, Outcome> {
    let Opened {
        guard,
        mut session,
        audit,
        _lock,
    } = open_session(
        args.policy.as_deref(),
        &args.session,
        args.audit.as_deref(),
        Mode::Blocking,
    )?;
    let before = session.state.clone();
    let now = Utc::now();
    guard.add_evidence(&mut session, &args.kind, &args.description, None, now);
    save_session(&args.session, &session)?;
    let missing = guard.missing(&session, now);
    if args.format == ReportFormat::Json {
        print_json(&Moved {
            recorded: Some(&args.kind),
            from: &before,
            state: &session.state,
            moved: session.state != before,
            missing,
        });
    } else if session.state == before {
        outln!("recorded {}; state: {}", args.kind, session.state);
        if !missing.is_empty() {
            outln!("still needed: {}", missing.join("; "));
        }
    } else {
        outln!(
            "recorded {}; moved from {before} to {}",
            args.kind,
            session.state
        );
    }
    Ok(audited(audit.as_deref()))
}

/// [`Outcome::Failed`] when the audit log lost an entry (each is printed as an error): the
/// session changed, and the audit chain does not show it.
fn audited(audit: Option<&AuditLog>) -> Outcome {
    if audit.is_some_and(|log| report_unaudited(log, false)) {
        Outcome::Failed
    } else {
        Outcome::Ok
    }
}

/// Moves the session in the file to another state.
fn advance(args: &AdvanceArgs) -> Result<Outcome, Outcome> {
    let Opened {
        guard,
        mut session,
        audit,
        _lock,
    } = open_session(
        args.policy.as_deref(),
        &args.session,
        args.audit.as_deref(),
        Mode::Blocking,
    )?;
    let before = session.state.clone();
    let (moved, missing) = match guard.advance(&mut session, &args.to, Utc::now()) {
        Ok(()) => {
            save_session(&args.session, &session)?;
            (true, Vec::new())
        }
        Err(missing) => (false, missing),
    };
    match args.format {
        ReportFormat::Json => print_json(&Moved {
            recorded: None,
            from: &before,
            state: &session.state,
            moved,
            missing: missing.clone(),
        }),
        ReportFormat::Text if moved => outln!("state: {}", session.state),
        ReportFormat::Text => outln!("not yet: {}", missing.join("; ")),
    }
    Ok(if moved {
        audited(audit.as_deref())
    } else {
        Outcome::Failed
    })
}

/// Approves a waiting break-glass request of the session in the file, or lists them.
fn approve(args: &ApproveArgs) -> Result<Outcome, Outcome> {
    let Opened {
        guard,
        mut session,
        audit,
        _lock,
    } = open_session(
        args.policy.as_deref(),
        &args.session,
        args.audit.as_deref(),
        Mode::Blocking,
    )?;
    let (Some(id), Some(approver)) = (&args.request, &args.approver) else {
        match args.format {
            ReportFormat::Json => print_json(&session.requests),
            ReportFormat::Text if session.requests.is_empty() => {
                outln!("no request is waiting in session `{}`", session.id);
            }
            ReportFormat::Text => {
                for request in &session.requests {
                    outln!(
                        "{}  by {} at {}: {} ({} min{}) — {}",
                        request.id,
                        request.requester,
                        request.requested_at,
                        scope_text(&request.scope),
                        request.minutes,
                        request
                            .calls
                            .map(|calls| format!(", {calls} call(s)"))
                            .unwrap_or_default(),
                        request.justification
                    );
                }
            }
        }
        return Ok(Outcome::Ok);
    };
    let grant = guard
        .approve(&mut session, id, approver, Utc::now())
        .map_err(fail);
    // A refusal is audited; the session keeps the request for a second person.
    save_session(&args.session, &session)?;
    let grant = grant?;
    match args.format {
        ReportFormat::Json => print_json(&grant),
        ReportFormat::Text => outln!(
            "granted {}: {} until {} (review by {})",
            grant.id,
            scope_text(&grant.request.scope),
            grant.expires_at,
            grant.review_by
        ),
    }
    Ok(audited(audit.as_deref()))
}

fn scope_text(scope: &Scope) -> String {
    match scope {
        Scope::State(state) => format!("calls as in the {state} state"),
        Scope::Tools(tools) => format!("tools {}", tools.join(", ")),
    }
}

/// What `guard evidence` and `guard advance` print with `--format json`.
#[derive(serde::Serialize)]
struct Moved<'a> {
    /// The evidence type recorded (evidence only).
    #[serde(skip_serializing_if = "Option::is_none")]
    recorded: Option<&'a str>,
    /// The state before.
    from: &'a str,
    /// The state now.
    state: &'a str,
    /// Whether the session changed state.
    moved: bool,
    /// What the state still needs before it can be left (advance: why it was not).
    missing: Vec<String>,
}

/// A guard and the session it works on, from [`open_session`].
struct Opened {
    guard: Guard,
    session: Session,
    /// The audit log, to ask afterwards what it could not take.
    audit: Option<Arc<AuditLog>>,
    /// Held until the session is written back.
    _lock: LockFile,
}

/// The guard for a policy (and audit log), and the session in `path` (a new one, named after
/// the file, when it does not exist), with the session's lock held: the caller reads, decides
/// and writes the session back before dropping it, so concurrent commands on one session file
/// lose none of each other's calls.
fn open_session(
    policy: Option<&Path>,
    path: &Path,
    audit: Option<&Path>,
    mode: Mode,
) -> Result<Opened, Outcome> {
    let lock = lock_session(path)?;
    let policy = Arc::new(load_policy(policy)?);
    let mut guard = Guard::new(policy, mode);
    let audit = match audit {
        Some(path) => Some(Arc::new(AuditLog::file(path).map_err(fail)?)),
        None => None,
    };
    if let Some(log) = &audit {
        guard = guard.audit(Arc::clone(log));
    }
    let session = match wayline_durable::read::text(path, document::Limits::configured().max_bytes)
    {
        Ok(text) => {
            let format = Format::from_path(path).unwrap_or(Format::Yaml);
            document::parse::<Session>(&text, format, &path.display().to_string()).map_err(fail)?
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let id = path
                .file_stem()
                .and_then(|stem| stem.to_str())
                .unwrap_or("session");
            guard.start(id, Utc::now())
        }
        Err(error) => {
            return Err(unreadable(format!(
                "cannot read {}: {error}",
                path.display()
            )));
        }
    };
    if guard.policy().state(&session.state).is_none() {
        return Err(unreadable(format!(
            "{}: the session is in `{}`, a state this policy does not have",
            path.display(),
            session.state
        )));
    }
    Ok(Opened {
        guard,
        session,
        audit,
        _lock: lock,
    })
}

/// The lock of the session in `path`: `.NAME.lock` beside it (the session file itself is
/// replaced on every write, so it cannot carry the lock).
fn lock_session(path: &Path) -> Result<LockFile, Outcome> {
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    std::fs::create_dir_all(dir)
        .map_err(|error| unreadable(format!("cannot create {}: {error}", dir.display())))?;
    LockFile::acquire(&dir.join(format!(".{name}.lock"))).map_err(fail)
}

/// Writes the session next to itself, then renames it into place.
fn save_session(path: &Path, session: &Session) -> Result<(), Outcome> {
    let text = match Format::from_path(path) {
        Some(Format::Json) => serde_json::to_string_pretty(session).map_err(unreadable)?,
        _ => serde_norway::to_string(session).map_err(unreadable)?,
    };
    write_atomically(path, &text)
}

fn print_decision(decision: &GuardVerdict, session: &Session) {
    match decision {
        GuardVerdict::Allow { notes } => {
            outln!("allow");
            for note in notes {
                outln!("  {note}");
            }
        }
        GuardVerdict::Warn { message, signals } => {
            outln!("warn: {message}");
            for signal in signals {
                outln!(
                    "  signal {} ({:?}): {}",
                    signal.kind.name(),
                    signal.severity,
                    signal.description
                );
            }
        }
        GuardVerdict::Block {
            reason,
            calming_message,
            recommended_actions,
            forced_state,
            ..
        } => {
            outln!("block: {reason}");
            if let Some(calming) = calming_message {
                outln!();
                outln!("{calming}");
                outln!();
            }
            for action in recommended_actions {
                outln!("  - {action}");
            }
            if let Some(state) = forced_state {
                outln!("  the session is back in {state}");
            }
        }
        _ => outln!("{}", decision.name()),
    }
    outln!("state: {}", session.state);
}
