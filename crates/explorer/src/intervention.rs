//! When the explorer runs a step on its own and when it asks: the TiDB Cloud explorer's
//! intervention matrix ([`decide`]), and [`ScriptedInterventor`], which answers from a file
//! (for tests and CI).
//!
//! | condition | confidence | action |
//! |---|---|---|
//! | known pattern match | 90%+ | auto-execute |
//! | single clear candidate | 80%+ | auto-execute |
//! | multiple candidates, one dominant | 70–80% | auto-execute with a note |
//! | multiple candidates, similar scores | 50–70% | ask to choose |
//! | known pitfall detected | any | warn and ask |
//! | checkpoint operation | any | confirm before executing |
//! | no matching operation | < 50% | ask for clarification |
//!
//! The 70% line is the SUT's `confidence_threshold`; the others can be set too
//! ([`Thresholds`]). Manual mode confirms every step, and after `max_silent_steps` steps run
//! without a word the next one is confirmed.

use std::path::Path;
use std::sync::Mutex;

use regex::Regex;
use serde::{Deserialize, Serialize};
use wayline_core::intervene::{Answer, Answerer, Interventor, Question, QuestionKind};

use crate::Error;
use crate::sut::SutConfig;

/// Where a suggestion came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Source {
    /// A learned pattern's next step.
    KnownPattern,
    /// The only candidate.
    SingleCandidate,
    /// The best of several, clearly ahead of the next.
    Dominant,
    /// The best of several that score alike.
    Similar,
    /// Nothing matched the goal.
    NoMatch,
}

/// What the matrix looks at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Assessment {
    /// The suggestion's confidence, 0 to 1.
    pub confidence: f64,
    /// Where it came from.
    pub source: Source,
    /// Known pitfalls of the step (their descriptions).
    pub pitfalls: Vec<String>,
    /// True when the operation is a checkpoint of the SUT.
    pub checkpoint: bool,
    /// Steps run since a person last saw anything.
    pub silent_steps: u32,
}

impl Assessment {
    /// An assessment with no pitfall, no checkpoint, no silent steps.
    pub fn new(confidence: f64, source: Source) -> Self {
        Assessment {
            confidence,
            source,
            pitfalls: Vec::new(),
            checkpoint: false,
            silent_steps: 0,
        }
    }
}

/// The matrix's lines.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Thresholds {
    /// A known pattern runs on its own from here (0.9).
    pub pattern: f64,
    /// A single candidate runs on its own from here (0.8).
    pub single: f64,
    /// A dominant candidate runs on its own, with a note, from here (the SUT's
    /// `confidence_threshold`, 0.7).
    pub dominant: f64,
    /// Below this there is nothing to choose from: clarification (0.5).
    pub choose: f64,
    /// Steps run without a word before one is confirmed (the SUT's `max_silent_steps`).
    pub max_silent_steps: u32,
    /// Auto mode; in manual mode every step is confirmed.
    pub auto: bool,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            pattern: 0.9,
            single: 0.8,
            dominant: 0.7,
            choose: 0.5,
            max_silent_steps: 10,
            auto: true,
        }
    }
}

impl Thresholds {
    /// The SUT's settings over the defaults (the matrix's 0.9, 0.8, 0.7 and 0.5 lines, 10 silent
    /// steps). A `confidence_threshold` above the single-candidate or pattern line raises those
    /// lines too, so the order of the lines holds.
    pub fn from_sut(sut: &SutConfig) -> Self {
        let auto_mode = &sut.execution.auto_mode;
        let dominant = auto_mode.confidence_threshold;
        Thresholds {
            pattern: 0.9_f64.max(dominant),
            single: 0.8_f64.max(dominant),
            dominant,
            choose: 0.5_f64.min(dominant),
            max_silent_steps: auto_mode.max_silent_steps,
            auto: sut.auto(),
        }
    }
}

/// What to do with a suggestion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Action {
    /// Run it.
    AutoExecute,
    /// Run it, and say why it was chosen.
    AutoExecuteWithNote,
    /// Ask which candidate to run.
    AskToChoose,
    /// Show the pitfall and ask.
    WarnAndAsk,
    /// Ask before running it.
    Confirm,
    /// Ask what is meant.
    AskForClarification,
}

impl Action {
    /// True when a person is asked.
    pub fn asks(self) -> bool {
        !matches!(self, Action::AutoExecute | Action::AutoExecuteWithNote)
    }

    /// The question kind it asks, if it asks.
    pub(crate) fn question_kind(self) -> Option<QuestionKind> {
        match self {
            Action::AutoExecute | Action::AutoExecuteWithNote => None,
            Action::AskToChoose => Some(QuestionKind::Choose),
            Action::WarnAndAsk => Some(QuestionKind::Pitfall),
            Action::Confirm => Some(QuestionKind::Confirm),
            Action::AskForClarification => Some(QuestionKind::Clarify),
        }
    }
}

/// The action and the matrix line that chose it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChosenAction {
    /// What to do.
    pub action: Action,
    /// Why, in words.
    pub reason: String,
}

fn decision(action: Action, reason: String) -> ChosenAction {
    ChosenAction { action, reason }
}

/// The matrix: what to do with a suggestion assessed as `assessment`.
pub fn decide(assessment: &Assessment, thresholds: &Thresholds) -> ChosenAction {
    let confidence = assessment.confidence;
    let percent = (confidence * 100.0).round();
    if assessment.source == Source::NoMatch || confidence < thresholds.choose {
        return decision(
            Action::AskForClarification,
            format!("no operation matches well ({percent}%)"),
        );
    }
    if !assessment.pitfalls.is_empty() {
        return decision(
            Action::WarnAndAsk,
            format!("known pitfall: {}", assessment.pitfalls.join("; ")),
        );
    }
    if assessment.checkpoint {
        return decision(Action::Confirm, "a checkpoint operation".to_owned());
    }
    if !thresholds.auto {
        return decision(Action::Confirm, "manual mode".to_owned());
    }
    if assessment.silent_steps >= thresholds.max_silent_steps {
        return decision(
            Action::Confirm,
            format!(
                "{} steps ran without a word; look before the next",
                assessment.silent_steps
            ),
        );
    }
    match assessment.source {
        Source::KnownPattern if confidence >= thresholds.pattern => {
            decision(Action::AutoExecute, format!("a known pattern ({percent}%)"))
        }
        Source::SingleCandidate if confidence >= thresholds.single => decision(
            Action::AutoExecute,
            format!("a single clear candidate ({percent}%)"),
        ),
        _ if confidence >= thresholds.dominant => decision(
            Action::AutoExecuteWithNote,
            format!("the strongest candidate ({percent}%)"),
        ),
        _ => decision(
            Action::AskToChoose,
            format!("candidates score alike ({percent}%)"),
        ),
    }
}

/// One scripted answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scripted {
    /// Only questions of this kind.
    #[serde(default)]
    kind: Option<QuestionKind>,
    /// Only questions about an operation matching this regex (whole id).
    #[serde(default)]
    operation: Option<String>,
    /// The answer.
    answer: AnswerText,
    /// Used at most this many times (unlimited when absent).
    #[serde(default)]
    times: Option<u32>,
}

/// An answer as written in the file: `yes`, `no`, `abort`, `{choose: 1}`, `{text: ...}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum AnswerText {
    Word(Word),
    Choose { choose: usize },
    Text { text: String },
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Word {
    Yes,
    No,
    Abort,
}

impl From<&AnswerText> for Answer {
    fn from(text: &AnswerText) -> Self {
        match text {
            AnswerText::Word(Word::Yes) => Answer::Yes,
            AnswerText::Word(Word::No) => Answer::No,
            AnswerText::Word(Word::Abort) => Answer::Abort,
            AnswerText::Choose { choose } => Answer::Choose(*choose),
            AnswerText::Text { text } => Answer::Text(text.clone()),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswersFile {
    #[serde(default)]
    answers: Vec<Scripted>,
    /// When no scripted answer fits (default `abort`).
    #[serde(default)]
    default: Option<AnswerText>,
}

#[derive(Debug)]
struct Rule {
    scripted: Scripted,
    operation: Option<Regex>,
    used: u32,
}

/// Answers from a file, first fitting rule first, and remembers every question:
///
/// ```yaml
/// answers:
///   - {kind: confirm, operation: ".*Delete.*", answer: yes}
///   - {kind: choose, answer: {choose: 1}, times: 1}
///   - {kind: pitfall, answer: no}
/// default: abort      # when nothing fits (the default)
/// ```
#[derive(Debug)]
pub struct ScriptedInterventor {
    rules: Mutex<Vec<Rule>>,
    default: Answer,
    asked: Mutex<Vec<Question>>,
}

impl ScriptedInterventor {
    /// Reads an answers file.
    pub fn load(path: &Path) -> Result<ScriptedInterventor, Error> {
        let text = wayline_durable::read::text(
            path,
            wayline_core::document::Limits::configured().max_bytes,
        )
        .map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        ScriptedInterventor::parse(&text, &path.display().to_string())
    }

    /// Reads answers from YAML text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<ScriptedInterventor, Error> {
        let file: AnswersFile =
            wayline_core::document::parse(text, wayline_core::document::Format::Yaml, origin)?;
        let rules = file
            .answers
            .into_iter()
            .map(|scripted| {
                let operation = scripted
                    .operation
                    .as_deref()
                    .map(|pattern| {
                        Regex::new(&format!("^(?:{pattern})$")).map_err(|error| Error::Invalid {
                            origin: origin.to_owned(),
                            message: format!("`{pattern}` is not a regex: {error}"),
                        })
                    })
                    .transpose()?;
                Ok(Rule {
                    scripted,
                    operation,
                    used: 0,
                })
            })
            .collect::<Result<_, Error>>()?;
        Ok(ScriptedInterventor {
            rules: Mutex::new(rules),
            default: file.default.as_ref().map_or(Answer::Abort, Answer::from),
            asked: Mutex::new(Vec::new()),
        })
    }

    /// Every question asked so far, in order.
    pub fn asked(&self) -> Vec<Question> {
        self.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

#[async_trait::async_trait]
impl Interventor for ScriptedInterventor {
    async fn ask(&self, question: &Question) -> Answer {
        self.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(question.clone());
        let mut rules = self
            .rules
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for rule in rules.iter_mut() {
            let kind_fits = rule.scripted.kind.is_none_or(|kind| kind == question.kind);
            let operation_fits = match (&rule.operation, &question.operation) {
                (None, _) => true,
                (Some(pattern), Some(operation)) => pattern.is_match(operation),
                (Some(_), None) => false,
            };
            let left = rule.scripted.times.is_none_or(|times| rule.used < times);
            if kind_fits && operation_fits && left {
                rule.used += 1;
                return Answer::from(&rule.scripted.answer);
            }
        }
        self.default.clone()
    }

    fn answerer(&self) -> Answerer {
        Answerer::AnswersFile
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action(confidence: f64, source: Source) -> Action {
        decide(&Assessment::new(confidence, source), &Thresholds::default()).action
    }

    #[test]
    fn the_seeds_matrix_row_by_row() {
        assert_eq!(action(0.92, Source::KnownPattern), Action::AutoExecute);
        assert_eq!(action(0.85, Source::SingleCandidate), Action::AutoExecute);
        assert_eq!(action(0.75, Source::Dominant), Action::AutoExecuteWithNote);
        assert_eq!(
            action(0.75, Source::SingleCandidate),
            Action::AutoExecuteWithNote
        );
        assert_eq!(action(0.6, Source::Similar), Action::AskToChoose);
        assert_eq!(action(0.4, Source::Dominant), Action::AskForClarification);
        assert_eq!(action(0.95, Source::NoMatch), Action::AskForClarification);
        let mut pitfall = Assessment::new(0.95, Source::KnownPattern);
        pitfall.pitfalls.push("tidbNodeGroupId is required".into());
        assert_eq!(
            decide(&pitfall, &Thresholds::default()).action,
            Action::WarnAndAsk
        );
        let mut checkpoint = Assessment::new(0.95, Source::KnownPattern);
        checkpoint.checkpoint = true;
        assert_eq!(
            decide(&checkpoint, &Thresholds::default()).action,
            Action::Confirm
        );
        let mut silent = Assessment::new(0.95, Source::KnownPattern);
        silent.silent_steps = 10;
        assert_eq!(
            decide(&silent, &Thresholds::default()).action,
            Action::Confirm
        );
        let manual = Thresholds {
            auto: false,
            ..Thresholds::default()
        };
        assert_eq!(
            decide(&Assessment::new(0.99, Source::KnownPattern), &manual).action,
            Action::Confirm
        );
        // The SUT's threshold moves the dominant line.
        let lenient = Thresholds {
            dominant: 0.6,
            ..Thresholds::default()
        };
        assert_eq!(
            decide(&Assessment::new(0.65, Source::Similar), &lenient).action,
            Action::AutoExecuteWithNote
        );
    }

    #[tokio::test]
    async fn scripted_answers_fit_by_kind_operation_and_count() {
        let scripted = ScriptedInterventor::parse(
            "answers:\n  - {kind: confirm, operation: '.*Delete.*', answer: no}\n  - {kind: choose, answer: {choose: 1}, times: 1}\n  - {kind: confirm, answer: yes}\ndefault: abort\n",
            "answers.yaml",
        )
        .unwrap();
        let confirm =
            |operation: &str| Question::new(QuestionKind::Confirm, "run it?").operation(operation);
        assert_eq!(
            scripted.ask(&confirm("ClusterService_DeleteCluster")).await,
            Answer::No
        );
        assert_eq!(
            scripted.ask(&confirm("ClusterService_CreateCluster")).await,
            Answer::Yes
        );
        let choose =
            Question::new(QuestionKind::Choose, "which?").options(vec!["a".into(), "b".into()]);
        assert_eq!(scripted.ask(&choose).await, Answer::Choose(1));
        assert_eq!(
            scripted.ask(&choose).await,
            Answer::Abort,
            "used up: the default"
        );
        assert_eq!(scripted.asked().len(), 4);
        let bad = ScriptedInterventor::parse("answers:\n  - {answer: maybe}\n", "a.yaml")
            .unwrap_err()
            .to_string();
        assert!(bad.contains("a.yaml"), "{bad}");
    }
}
