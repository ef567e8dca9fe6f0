//! `wayline knowledge ...`: what was learned about a SUT, shown, checked, suggested from,
//! exported and imported.

use std::path::PathBuf;

use serde::Serialize;
use wayline_knowledge::{Knowledge, Queries, ResourceStates};

use crate::args::KnowledgeArg;
use crate::assemble::{open_knowledge, runtime};
use crate::report::{
    DocumentFormat, Outcome, ReportFormat, fail, out, outln, print_json, unreadable,
};

/// `wayline knowledge ...`
#[derive(Debug, clap::Subcommand)]
pub(crate) enum KnowledgeCommand {
    /// Everything learned about a SUT.
    Show {
        /// The system under test.
        #[arg(long, value_name = "NAME")]
        sut: String,
        #[command(flatten)]
        store: KnowledgeArg,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// The known pitfalls of an operation in a state: exit 1 when one applies.
    Check {
        /// The system under test.
        #[arg(long, value_name = "NAME")]
        sut: String,
        /// The operation about to be called.
        #[arg(long, value_name = "OP")]
        operation: String,
        /// A variable that is set (`NAME` or `NAME=VALUE`; repeatable).
        #[arg(long = "var", value_name = "K=V")]
        vars: Vec<String>,
        /// A resource's state (`RESOURCE=STATE`; repeatable).
        #[arg(long = "state", value_name = "RES=STATE")]
        states: Vec<String>,
        #[command(flatten)]
        store: KnowledgeArg,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Learned patterns for an intent, with their confidence: exit 1 when none matches.
    Suggest {
        /// What is to be done, in words.
        intent: String,
        /// The system under test.
        #[arg(long, value_name = "NAME")]
        sut: String,
        /// A resource that exists, with its state (`RESOURCE=STATE`; repeatable).
        #[arg(long = "state", value_name = "RES=STATE")]
        states: Vec<String>,
        /// Successes a pattern needs before it is offered.
        #[arg(long, value_name = "N", default_value_t = 2)]
        min_support: u64,
        #[command(flatten)]
        store: KnowledgeArg,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Knowledge to share: masked, and only what was seen often enough. YAML on stdout.
    Export {
        /// The system under test.
        #[arg(long, value_name = "NAME")]
        sut: String,
        /// Leave out entries seen fewer times than this.
        #[arg(long, value_name = "N", default_value_t = 1)]
        min_occurrences: u64,
        #[command(flatten)]
        store: KnowledgeArg,
        /// Output format.
        #[arg(long, value_enum, default_value_t = DocumentFormat::Yaml)]
        format: DocumentFormat,
    },
    /// Merges an export (YAML or JSON) into a SUT's knowledge; the same entries combine.
    Import {
        /// The export file.
        file: PathBuf,
        /// The system under test.
        #[arg(long, value_name = "NAME")]
        sut: String,
        #[command(flatten)]
        store: KnowledgeArg,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
}

pub(crate) fn knowledge_command(command: KnowledgeCommand) -> Outcome {
    match run(command) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn run(command: KnowledgeCommand) -> Result<Outcome, Outcome> {
    let runtime = runtime()?;
    match command {
        KnowledgeCommand::Show { sut, store, format } => {
            let knowledge = load(&runtime, &store, &sut)?;
            match format {
                ReportFormat::Json => print_json(&knowledge),
                ReportFormat::Text => out!("{}", describe(&knowledge, &sut)),
            }
            Ok(Outcome::Ok)
        }
        KnowledgeCommand::Check {
            sut,
            operation,
            vars,
            states,
            store,
            format,
        } => {
            let knowledge = load(&runtime, &store, &sut)?;
            let variables: Vec<String> = vars
                .iter()
                .map(|var| {
                    var.split_once('=')
                        .map_or(var.as_str(), |(name, _)| name)
                        .trim()
                        .to_owned()
                })
                .collect();
            let states = parse_states(&states)?;
            let warnings = Queries::new(&knowledge).check_pitfalls(&operation, &states, &variables);
            match format {
                ReportFormat::Json => print_json(
                    &warnings
                        .iter()
                        .map(|warning| Warned {
                            pitfall: warning.pitfall,
                            confidence: round(warning.confidence),
                            because: &warning.because,
                        })
                        .collect::<Vec<_>>(),
                ),
                ReportFormat::Text if warnings.is_empty() => {
                    outln!("no known pitfall of {operation} applies");
                }
                ReportFormat::Text => {
                    for warning in &warnings {
                        print_warning(warning);
                    }
                }
            }
            Ok(if warnings.is_empty() {
                Outcome::Ok
            } else {
                Outcome::Failed
            })
        }
        KnowledgeCommand::Suggest {
            intent,
            sut,
            states,
            min_support,
            store,
            format,
        } => {
            let knowledge = load(&runtime, &store, &sut)?;
            let states = parse_states(&states)?;
            let queries = Queries::new(&knowledge).min_support(min_support);
            let matches = queries.matching_patterns(&intent, &states);
            match format {
                ReportFormat::Json => print_json(
                    &matches
                        .iter()
                        .map(|found| Suggested {
                            pattern: found.pattern,
                            confidence: round(found.confidence),
                            keyword_coverage: round(found.keyword_coverage),
                        })
                        .collect::<Vec<_>>(),
                ),
                ReportFormat::Text if matches.is_empty() => {
                    outln!(
                        "no learned pattern matches `{intent}` (with at least {min_support} successes)"
                    );
                }
                ReportFormat::Text => {
                    for found in &matches {
                        let pattern = found.pattern;
                        outln!(
                            "{}  confidence {:.2}  ({} ok, {} failed)  {}",
                            pattern.name,
                            found.confidence,
                            pattern.success_count,
                            pattern.failure_count,
                            pattern.description.as_deref().unwrap_or("")
                        );
                        for step in &pattern.steps {
                            outln!("  - {}", step.operation_id);
                        }
                    }
                }
            }
            Ok(if matches.is_empty() {
                Outcome::Failed
            } else {
                Outcome::Ok
            })
        }
        KnowledgeCommand::Export {
            sut,
            min_occurrences,
            store,
            format,
        } => {
            let knowledge = load(&runtime, &store, &sut)?;
            let shared = wayline_knowledge::export(&knowledge, min_occurrences);
            match format {
                DocumentFormat::Json => print_json(&shared),
                DocumentFormat::Yaml => {
                    out!("{}", serde_norway::to_string(&shared).map_err(unreadable)?)
                }
            }
            Ok(Outcome::Ok)
        }
        KnowledgeCommand::Import {
            file,
            sut,
            store,
            format,
        } => {
            let incoming = wayline_knowledge::read_document(&file).map_err(fail)?;
            let store = open_knowledge(&store, None)?;
            let imported = Counts::of(&incoming);
            let merged = runtime
                .block_on(store.update(
                    &wayline_knowledge::sut_key(&sut),
                    Box::new(move |knowledge| knowledge.merge(&incoming)),
                ))
                .map_err(fail)?;
            let now = Counts::of(&merged);
            match format {
                ReportFormat::Json => print_json(&serde_json::json!({
                    "sut": sut,
                    "imported": imported,
                    "now": now,
                })),
                ReportFormat::Text => outln!(
                    "imported {} patterns, {} pitfalls, {} operations into `{sut}`; it now has {} patterns, {} pitfalls, {} operations",
                    imported.patterns,
                    imported.pitfalls,
                    imported.operations,
                    now.patterns,
                    now.pitfalls,
                    now.operations
                ),
            }
            Ok(Outcome::Ok)
        }
    }
}

/// How much a knowledge document holds, as `knowledge import` reports it.
#[derive(Serialize)]
struct Counts {
    patterns: usize,
    pitfalls: usize,
    operations: usize,
}

impl Counts {
    fn of(knowledge: &wayline_knowledge::Knowledge) -> Counts {
        Counts {
            patterns: knowledge.patterns.len(),
            pitfalls: knowledge.pitfalls.len(),
            operations: knowledge.stats.operations.len(),
        }
    }
}

/// A pitfall that applies, as `knowledge check --format json` prints it.
#[derive(Serialize)]
struct Warned<'a> {
    pitfall: &'a wayline_knowledge::model::Pitfall,
    confidence: f64,
    because: &'a [String],
}

/// A pattern offered, as `knowledge suggest --format json` prints it.
#[derive(Serialize)]
struct Suggested<'a> {
    pattern: &'a wayline_knowledge::model::Pattern,
    confidence: f64,
    keyword_coverage: f64,
}

fn load(
    runtime: &tokio::runtime::Runtime,
    store: &KnowledgeArg,
    sut: &str,
) -> Result<Knowledge, Outcome> {
    let store = open_knowledge(store, None)?;
    runtime
        .block_on(store.load(&wayline_knowledge::sut_key(sut)))
        .map_err(fail)
}

fn parse_states(raw: &[String]) -> Result<ResourceStates, Outcome> {
    let mut states = ResourceStates::new();
    for item in raw {
        let Some((resource, state)) = item.split_once('=') else {
            return Err(unreadable(format!(
                "--state {item}: write RESOURCE=STATE, e.g. cluster=ACTIVE"
            )));
        };
        states.insert(resource.trim().to_owned(), state.trim().to_owned());
    }
    Ok(states)
}

fn round(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

fn print_warning(warning: &wayline_knowledge::PitfallWarning<'_>) {
    let pitfall = warning.pitfall;
    outln!(
        "pitfall {} (confidence {:.2}, seen {} time{})",
        pitfall.name,
        warning.confidence,
        pitfall.occurrence_count,
        if pitfall.occurrence_count == 1 {
            ""
        } else {
            "s"
        }
    );
    if let Some(description) = &pitfall.description {
        outln!("  {description}");
    }
    outln!("  because: {}", warning.because.join("; "));
    match &pitfall.resolution {
        Some(resolution) => {
            outln!("  resolution: {}", resolution.description);
            for step in &resolution.fix_steps {
                outln!("    - {step}");
            }
        }
        None => outln!("  resolution: not known yet"),
    }
}

/// The text of `knowledge show`.
fn describe(knowledge: &Knowledge, sut: &str) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if knowledge.is_empty() {
        let _ = writeln!(out, "nothing learned about `{sut}` yet");
        return out;
    }
    let queries = Queries::new(knowledge);
    let _ = writeln!(out, "patterns ({}):", knowledge.patterns.len());
    for pattern in &knowledge.patterns {
        let steps: Vec<&str> = pattern
            .steps
            .iter()
            .map(|s| s.operation_id.as_str())
            .collect();
        let _ = writeln!(
            out,
            "  {}  {} ok / {} failed  confidence {:.2}  [{}]",
            pattern.name,
            pattern.success_count,
            pattern.failure_count,
            queries.pattern_confidence(pattern),
            steps.join(" → ")
        );
    }
    let _ = writeln!(out, "pitfalls ({}):", knowledge.pitfalls.len());
    for pitfall in &knowledge.pitfalls {
        let status = pitfall
            .error_pattern
            .status_code
            .map(|status| format!("HTTP {status} "))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {}  {} {status}\"{}\"  ×{}",
            pitfall.name,
            pitfall.trigger.operation_id,
            pitfall.error_pattern.message_contains,
            pitfall.occurrence_count
        );
        if let Some(resolution) = &pitfall.resolution {
            let _ = writeln!(out, "    resolution: {}", resolution.description);
        }
    }
    let _ = writeln!(out, "operations ({}):", knowledge.stats.operations.len());
    for (operation, stats) in &knowledge.stats.operations {
        let _ = writeln!(
            out,
            "  {operation}  {} attempts, {:.0}% ok, {:.0} ms on average{}",
            stats.total_attempts,
            stats.success_rate * 100.0,
            stats.avg_duration_ms,
            stats
                .common_errors
                .first()
                .map(|error| format!(", most common error: {} (×{})", error.error, error.count))
                .unwrap_or_default()
        );
    }
    let transitions: usize = knowledge
        .stats
        .state_transitions
        .values()
        .map(|t| t.len())
        .sum();
    let _ = writeln!(out, "state transitions ({transitions}):");
    for (resource, entries) in &knowledge.stats.state_transitions {
        for (key, entry) in entries {
            let _ = writeln!(
                out,
                "  {resource} {key}: {} polls, {} s on average",
                entry.avg_poll_attempts, entry.avg_duration_seconds
            );
        }
    }
    out
}
