//! Decision-table suites (`wayline guard verify SUITE.yaml`): cases of a state, evidence, a
//! history and a tool call, each with the decision it must get.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use wayline_core::document::{self, Format};

use crate::Error;
use crate::guard::{GUIDANCE_BLOCK, Guard, GuardVerdict, Mode, ToolCall};
use crate::policy::Policy;
use crate::session::{Call, Session};

/// A suite as written.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Suite {
    /// `default`, or a policy file (relative to the suite).
    #[serde(default = "default_policy")]
    pub policy: String,
    /// The mode every case runs in, unless the case says otherwise.
    #[serde(default)]
    pub mode: Mode,
    /// The cases.
    pub cases: Vec<Case>,
}

fn default_policy() -> String {
    "default".into()
}

/// One case.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Case {
    /// What it checks.
    pub name: String,
    /// The session's state.
    pub state: String,
    /// Evidence gathered, by type: `{symptoms: 2}`.
    #[serde(default)]
    pub evidence: BTreeMap<String, usize>,
    /// Earlier calls, with how long ago.
    #[serde(default)]
    pub history: Vec<PastCall>,
    /// The tool called.
    pub tool: String,
    /// The domain it is about.
    #[serde(default)]
    pub domain: Option<String>,
    /// This case's mode, if not the suite's.
    #[serde(default)]
    pub mode: Option<Mode>,
    /// `allow`, `warn` or `block`.
    pub expect: String,
    /// Signals that must be among those raised.
    #[serde(default)]
    pub signals: Vec<String>,
    /// Seconds the session has been in its state (default: a day, so time never holds it).
    #[serde(default)]
    pub seconds_in_state: Option<i64>,
    /// In guidance or audit mode: what blocking mode would have decided (`block` or `warn`),
    /// checked against the decision's notes or message.
    #[serde(default)]
    pub would: Option<String>,
}

/// An earlier call of a case.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PastCall {
    /// The tool.
    pub tool: String,
    /// How long ago.
    pub seconds_ago: i64,
    /// Its domain.
    #[serde(default)]
    pub domain: Option<String>,
}

/// How one case went.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct CaseResult {
    /// The case.
    pub name: String,
    /// True when it got what it expected.
    pub passed: bool,
    /// What it expected.
    pub expected: String,
    /// What it got.
    pub got: String,
    /// The signals raised.
    pub signals: Vec<String>,
    /// Why it failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// Reads a suite and its policy. Errors name the file and line.
pub fn load(path: &Path) -> Result<(Suite, Policy), Error> {
    let text = wayline_durable::read::text(path, document::Limits::configured().max_bytes)
        .map_err(|source| Error::io("read", path, source))?;
    let suite: Suite = document::parse(&text, Format::Yaml, &path.display().to_string())?;
    let policy = if suite.policy == "default" {
        Policy::default_policy()
    } else {
        let relative = path.parent().unwrap_or(Path::new(".")).join(&suite.policy);
        Policy::load(&relative)?
    };
    Ok((suite, policy))
}

/// Runs every case; the clock is fixed, so results never depend on timing.
pub fn run(suite: &Suite, policy: &std::sync::Arc<Policy>) -> Vec<CaseResult> {
    let now: DateTime<Utc> = "2026-01-01T04:00:00Z".parse().expect("a valid time");
    suite
        .cases
        .iter()
        .map(|case| {
            let mode = case.mode.unwrap_or(suite.mode);
            let guard = Guard::new(std::sync::Arc::clone(policy), mode);
            let fail = |problem: String| CaseResult {
                name: case.name.clone(),
                passed: false,
                expected: case.expect.clone(),
                got: String::new(),
                signals: Vec::new(),
                problem: Some(problem),
            };
            if policy.state(&case.state).is_none() {
                return fail(format!("unknown state `{}`", case.state));
            }
            let ago = |seconds: i64| {
                Duration::try_seconds(seconds.max(0))
                    .and_then(|delta| now.checked_sub_signed(delta))
            };
            let Some(entered) = ago(case.seconds_in_state.unwrap_or(86_400)) else {
                return fail("seconds_in_state is too large".into());
            };
            let mut session = Session::new(format!("case-{}", case.name), &case.state, entered);
            for (kind, count) in &case.evidence {
                for index in 0..*count {
                    session.record_evidence(kind, format!("{kind} {}", index + 1), None, entered);
                }
            }
            // History is kept oldest first, whatever order the case lists it in.
            let mut history: Vec<&PastCall> = case.history.iter().collect();
            history.sort_by_key(|past| std::cmp::Reverse(past.seconds_ago));
            for past in history {
                let Some(at) = ago(past.seconds_ago) else {
                    return fail(format!("{}: seconds_ago is too large", past.tool));
                };
                session.history.push(Call {
                    tool: past.tool.clone(),
                    class: policy.classify(&past.tool, None),
                    at,
                    domain: past.domain.clone(),
                    decision: "allow".into(),
                    state: case.state.clone(),
                });
            }
            let mut call = ToolCall::new(&case.tool);
            if let Some(domain) = &case.domain {
                call = call.domain(domain);
            }
            let decision = guard.decide(&mut session, call, now);
            let got = decision.name().to_owned();
            let signals: Vec<String> = decision
                .signals()
                .iter()
                .map(|signal| signal.kind.name().to_owned())
                .collect();
            let missing: Vec<&String> = case
                .signals
                .iter()
                .filter(|wanted| !signals.contains(wanted))
                .collect();
            let would_hold = case.would.as_ref().is_none_or(|would| match &decision {
                GuardVerdict::Allow { notes } => notes
                    .iter()
                    .any(|note| *note == format!("audit mode: would {would}")),
                GuardVerdict::Warn { message, .. } => {
                    message.starts_with(GUIDANCE_BLOCK) == (would == "block")
                }
                _ => false,
            });
            let problem = if got != case.expect {
                Some(format!("expected {}, got {got}", case.expect))
            } else if !missing.is_empty() {
                Some(format!(
                    "signals {} were not raised (raised: {})",
                    missing
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    if signals.is_empty() {
                        "none".to_owned()
                    } else {
                        signals.join(", ")
                    }
                ))
            } else if !would_hold {
                Some(format!(
                    "expected it to say it would {}",
                    case.would.as_deref().unwrap_or_default()
                ))
            } else {
                None
            };
            CaseResult {
                name: case.name.clone(),
                passed: problem.is_none(),
                expected: case.expect.clone(),
                got,
                signals,
                problem,
            }
        })
        .collect()
}
