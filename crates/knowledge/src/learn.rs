//! The update rules: what one observed run (or explorer session) changes in the knowledge.
//!
//! A [`RunObservation`] is plain data, built by the [`Recorder`](crate::Recorder) from run
//! events or by a host from its own session; [`Knowledge::learn`] applies it:
//!
//! - every attempt counts in its operation's statistics (attempts, successes, failures, mean
//!   duration, last use) and a failed attempt's error, masked, in `common_errors`;
//! - every polled transition (`CREATING` → `ACTIVE`) updates the running means of its
//!   `FROM_to_TO` entry;
//! - a step that failed for good becomes a pitfall, or adds an occurrence to the pitfall with
//!   the same operation, status and masked message; its trigger names the variable the message
//!   says is missing and the resource states of the moment;
//! - a step that succeeded resolves the unresolved pitfalls of its operation by what changed
//!   since they happened (a variable now set, a resource now in another state), and
//!   contradicts those whose trigger held and still did not fail;
//! - the run's step sequence becomes a pattern, or adds a success or failure to the pattern
//!   with the same operations in the same order.
//!
//! Strength (see `docs/decisions.md`): confirmation restores an entry to full strength, a
//! contradiction halves it, and queries let it fade with time since last use.

use chrono::{DateTime, Utc};
use indexmap::IndexMap;

use crate::mask::mask_message;
use crate::model::{
    ErrorPattern, Extra, Knowledge, Pattern, PatternStep, PatternTrigger, Pitfall, PitfallTrigger,
    Precondition, Resolution, TransitionStats,
};
use crate::words::{self, same_variable};

/// What was seen of one run. `RunObservation::default()` is an empty observation made now.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunObservation {
    /// What the run was for: the workflow's name and description (intent keywords come
    /// from it).
    pub goal: String,
    /// Every attempt, in order.
    pub attempts: Vec<AttemptSeen>,
    /// Every completed polling transition.
    pub transitions: Vec<TransitionSeen>,
    /// Every step that ended, in the order they ended.
    pub outcomes: Vec<StepSeen>,
    /// Every variable set during the run, in the order it was set (the run's inputs, then
    /// the output fields of steps that succeeded). A step saw the first
    /// [`StepSeen::variables_set`] of them.
    pub variables: Vec<String>,
    /// Where each variable came from (a step id, or `inputs`), in the same order.
    pub producers: Vec<String>,
    /// The steps the run was made of, in workflow order, as templates.
    pub steps: Vec<PatternStep>,
    /// True when the run succeeded.
    pub succeeded: bool,
    /// Wall time of the run.
    pub duration_seconds: f64,
    /// When it ended.
    pub at: DateTime<Utc>,
}

impl Default for RunObservation {
    fn default() -> Self {
        RunObservation {
            goal: String::new(),
            attempts: Vec::new(),
            transitions: Vec::new(),
            outcomes: Vec::new(),
            variables: Vec::new(),
            producers: Vec::new(),
            steps: Vec::new(),
            succeeded: false,
            duration_seconds: 0.0,
            at: Utc::now(),
        }
    }
}

/// One attempt of an operation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AttemptSeen {
    /// The operation (tool id).
    pub operation_id: String,
    /// True when it got a good answer.
    pub success: bool,
    /// The response status, when one came.
    pub status: Option<u16>,
    /// The error, when it failed.
    pub error: Option<String>,
    /// How long it took.
    pub duration_ms: f64,
}

/// A resource seen going from one state to another while polled.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TransitionSeen {
    /// The resource (`cluster`).
    pub resource: String,
    /// The first state seen.
    pub from: String,
    /// The state polling waited for.
    pub to: String,
    /// Polls it took.
    pub polls: u32,
    /// Seconds from the first poll to the last.
    pub seconds: f64,
}

/// A step that ended, with the context it ran in.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StepSeen {
    /// The step.
    pub step_id: String,
    /// The operation (tool id).
    pub operation_id: String,
    /// True when it succeeded.
    pub success: bool,
    /// Its error, when it failed.
    pub error: Option<String>,
    /// The response status of its last attempt.
    pub status: Option<u16>,
    /// How many of the run's [`RunObservation::variables`] were set when it ran. (A count
    /// rather than a copy: a run's variables only grow, and copying them for every step would
    /// cost time in the square of the run's length.)
    pub variables_set: usize,
    /// The known state of each resource when it ran.
    pub states: IndexMap<String, String>,
}

impl AttemptSeen {
    /// An attempt.
    pub fn new(operation_id: impl Into<String>, success: bool, duration_ms: f64) -> Self {
        AttemptSeen {
            operation_id: operation_id.into(),
            success,
            status: None,
            error: None,
            duration_ms,
        }
    }
}

impl TransitionSeen {
    /// A transition.
    pub fn new(
        resource: impl Into<String>,
        from: impl Into<String>,
        to: impl Into<String>,
        polls: u32,
        seconds: f64,
    ) -> Self {
        TransitionSeen {
            resource: resource.into(),
            from: from.into(),
            to: to.into(),
            polls,
            seconds,
        }
    }
}

impl StepSeen {
    /// A step outcome with no context.
    pub fn new(step_id: impl Into<String>, operation_id: impl Into<String>, success: bool) -> Self {
        StepSeen {
            step_id: step_id.into(),
            operation_id: operation_id.into(),
            success,
            error: None,
            status: None,
            variables_set: 0,
            states: IndexMap::new(),
        }
    }
}

/// The variables a step saw, and their producers.
struct Context<'a> {
    variables: &'a [String],
    producers: &'a [String],
}

/// How much a contradiction weakens an entry.
const CONTRADICTION_FACTOR: f64 = 0.5;

impl Knowledge {
    /// Applies the update rules (see the [module documentation](self)) for one observation.
    pub fn learn(&mut self, seen: &RunObservation) {
        for attempt in &seen.attempts {
            let stats = self
                .stats
                .operations
                .entry(attempt.operation_id.clone())
                .or_default();
            stats.record(attempt.success, attempt.duration_ms, seen.at);
            if let (false, Some(error)) = (attempt.success, &attempt.error) {
                let (status, message) = crate::mask::error_message(error);
                stats.record_error(&mask_message(&message), attempt.status.or(status));
            }
        }
        for transition in &seen.transitions {
            let key = format!("{}_to_{}", transition.from, transition.to);
            let entry = self
                .stats
                .state_transitions
                .entry(transition.resource.clone())
                .or_default()
                .entry(key)
                .or_insert_with(|| TransitionStats {
                    samples: Some(0),
                    ..TransitionStats::default()
                });
            let before = if entry.samples == Some(0) {
                0.0
            } else {
                entry.sample_count() as f64
            };
            let after = before + 1.0;
            entry.avg_poll_attempts =
                round2((entry.avg_poll_attempts * before + f64::from(transition.polls)) / after);
            entry.avg_duration_seconds =
                round2((entry.avg_duration_seconds * before + transition.seconds) / after);
            entry.samples = Some(after as u64);
        }
        for outcome in &seen.outcomes {
            let set = outcome.variables_set.min(seen.variables.len());
            let context = Context {
                variables: &seen.variables[..set],
                producers: &seen.producers[..set.min(seen.producers.len())],
            };
            if outcome.success {
                self.step_succeeded(outcome, &context);
            } else if outcome.error.is_some() {
                self.step_failed(outcome, &context, seen.at);
            }
        }
        self.learn_pattern(seen);
    }

    fn step_failed(&mut self, step: &StepSeen, context: &Context<'_>, at: DateTime<Utc>) {
        let (status, message) = crate::mask::error_message(step.error.as_deref().unwrap_or(""));
        let status = step.status.or(status);
        let message = mask_message(&message);
        // Read from the error as it came (a JSON body whole), not from its masked message.
        let missing = words::missing_names(step.error.as_deref().unwrap_or(""))
            .into_iter()
            .find(|name| !context.variables.iter().any(|set| same_variable(set, name)));
        if let Some(known) = self.pitfalls.iter_mut().find(|pitfall| {
            pitfall.trigger.operation_id == step.operation_id
                && pitfall
                    .error_pattern
                    .status_code
                    .is_none_or(|known| Some(known) == status)
                && !pitfall.error_pattern.message_contains.is_empty()
                && message.contains(pitfall.error_pattern.message_contains.as_str())
        }) {
            known.occurrence_count = known.occurrence_count.saturating_add(1);
            known.last_occurred = Some(at);
            known.seen_variables = context.variables.to_vec();
            known.strength = None; // confirmed: full strength
            return;
        }
        let what = match (&missing, status) {
            (Some(name), _) => format!("without_{}", words::words(name).join("_")),
            (None, Some(status)) => format!("fails_{status}"),
            (None, None) => "fails".to_owned(),
        };
        let name = format!("{}_{what}", words::words(&step.operation_id).join("_"));
        let id = format!(
            "pitfall_{}",
            short_hash(&format!("{}|{status:?}|{message}", step.operation_id))
        );
        let describe_status = status.map(|s| format!("HTTP {s}: ")).unwrap_or_default();
        self.pitfalls.push(Pitfall {
            id,
            name,
            description: Some(format!(
                "{} fails with {describe_status}{message}",
                step.operation_id
            )),
            trigger: PitfallTrigger {
                operation_id: step.operation_id.clone(),
                // A named missing variable is the trigger; the states of the moment are only
                // recorded when nothing else explains the failure (as in the knowledge format's
                // example pitfalls, which name one or the other).
                resource_state: if missing.is_some() {
                    IndexMap::new()
                } else {
                    step.states.clone()
                },
                missing_variable: missing,
                extra: Extra::new(),
            },
            error_pattern: ErrorPattern {
                status_code: status,
                message_contains: message,
                extra: Extra::new(),
            },
            resolution: None,
            occurrence_count: 1,
            last_occurred: Some(at),
            contradiction_count: None,
            seen_variables: context.variables.to_vec(),
            strength: None,
            extra: Extra::new(),
        });
    }

    fn step_succeeded(&mut self, step: &StepSeen, context: &Context<'_>) {
        for pitfall in &mut self.pitfalls {
            if pitfall.trigger.operation_id != step.operation_id {
                continue;
            }
            if pitfall.resolution.is_none()
                && let Some(resolution) = resolve(pitfall, step, context)
            {
                pitfall.resolution = Some(resolution);
                continue;
            }
            if crate::query::pitfall_applies(pitfall, &step.states, context.variables) {
                pitfall.contradiction_count = Some(pitfall.contradiction_count.unwrap_or(0) + 1);
                pitfall.strength = Some(pitfall.strength.unwrap_or(1.0) * CONTRADICTION_FACTOR);
            }
        }
    }

    fn learn_pattern(&mut self, seen: &RunObservation) {
        if seen.steps.is_empty() {
            return;
        }
        let signature: Vec<&str> = seen.steps.iter().map(|s| s.operation_id.as_str()).collect();
        let existing = self.patterns.iter_mut().find(|pattern| {
            pattern
                .steps
                .iter()
                .map(|s| s.operation_id.as_str())
                .eq(signature.iter().copied())
        });
        if let Some(pattern) = existing {
            if seen.succeeded {
                let runs = pattern.success_count as f64;
                pattern.success_count = pattern.success_count.saturating_add(1);
                pattern.avg_duration_seconds = Some(round2(
                    (pattern
                        .avg_duration_seconds
                        .unwrap_or(seen.duration_seconds)
                        * runs
                        + seen.duration_seconds)
                        / (runs + 1.0),
                ));
                pattern.strength = None;
            } else {
                pattern.failure_count = pattern.failure_count.saturating_add(1);
                pattern.strength = Some(pattern.strength.unwrap_or(1.0) * CONTRADICTION_FACTOR);
            }
            pattern.last_used = Some(seen.at);
            return;
        }
        if !seen.succeeded {
            return; // a pattern is learned from a success; failures only count against one
        }
        let mut keywords = words::keywords(&seen.goal);
        for step in &seen.steps {
            for word in words::words(&step.operation_id) {
                let word = words::singular(&word);
                // Reading is how every flow checks its work: `get` selects nothing.
                let reads = words::action_of(&word) == Some("read");
                if !reads
                    && !words::is_stopword(&word)
                    && word.len() > 1
                    && !keywords.contains(&word)
                {
                    keywords.push(word);
                }
            }
        }
        keywords.truncate(8);
        let first = &seen.steps[0].operation_id;
        let precondition =
            (words::operation_action(first) == Some("create")).then(|| Precondition {
                resource_not_exists: Some(words::resource_of(first)),
                ..Precondition::default()
            });
        self.patterns.push(Pattern {
            id: format!("pattern_{}", short_hash(&signature.join("|"))),
            name: pattern_name(&signature),
            description: (!seen.goal.trim().is_empty()).then(|| seen.goal.trim().to_owned()),
            trigger: PatternTrigger {
                intent_keywords: keywords,
                precondition,
                extra: Extra::new(),
            },
            steps: seen.steps.clone(),
            success_count: 1,
            failure_count: 0,
            last_used: Some(seen.at),
            avg_duration_seconds: Some(round2(seen.duration_seconds)),
            strength: None,
            extra: Extra::new(),
        });
    }
}

/// What changed between a pitfall's failure and this success of its operation: the variable
/// the error named, now set; else a resource now in another state; else, when the error named
/// no variable, a variable set now that was not then. A trigger's named variable is replaced
/// only by the variable that matches it.
fn resolve(pitfall: &mut Pitfall, step: &StepSeen, context: &Context<'_>) -> Option<Resolution> {
    let operation = &step.operation_id;
    let added: Vec<&String> = context
        .variables
        .iter()
        .filter(|name| !pitfall.seen_variables.contains(name))
        .collect();
    let named = pitfall.trigger.missing_variable.clone();
    let matching = named
        .as_deref()
        .and_then(|missing| added.iter().find(|name| same_variable(name, missing)));
    if let Some(variable) = matching {
        return Some(save_variable(pitfall, (*variable).clone(), step, context));
    }
    let changed = pitfall
        .trigger
        .resource_state
        .iter()
        .find_map(|(resource, then)| {
            step.states
                .get(resource)
                .filter(|now| *now != then)
                .map(|now| (resource.clone(), then.clone(), now.clone()))
        });
    if let Some((resource, then, now)) = changed {
        return Some(Resolution {
            description: format!(
                "Wait for {resource} to be {now} (it was {then}) before calling {operation}"
            ),
            fix_steps: vec![
                format!("Poll the {resource} until state == '{now}'"),
                format!("Then call {operation}"),
            ],
            extra: Extra::new(),
        });
    }
    match (named, added.first()) {
        // Only with a record of what was set at the failure: otherwise everything looks added.
        (None, Some(variable)) if !pitfall.seen_variables.is_empty() => {
            Some(save_variable(pitfall, (*variable).clone(), step, context))
        }
        _ => None,
    }
}

/// The resolution "save `variable` first"; it becomes the trigger's missing variable.
fn save_variable(
    pitfall: &mut Pitfall,
    variable: String,
    step: &StepSeen,
    context: &Context<'_>,
) -> Resolution {
    let operation = &step.operation_id;
    let source = context
        .variables
        .iter()
        .position(|name| *name == variable)
        .and_then(|at| context.producers.get(at))
        .filter(|producer| *producer != "inputs")
        .map(|producer| format!(" (step `{producer}` produces it)"))
        .unwrap_or_default();
    let resolution = Resolution {
        description: format!("Save `{variable}` before calling {operation}"),
        fix_steps: vec![
            format!("Run the step that provides `{variable}` first{source}"),
            format!("Pass `{variable}` to {operation}"),
        ],
        extra: Extra::new(),
    };
    pitfall.trigger.missing_variable = Some(variable);
    resolution
}

/// `create_cluster_and_poll`-style names: the actions and resources of the operations.
fn pattern_name(signature: &[&str]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut previous_resource = String::new();
    for operation in signature {
        let resource = words::resource_of(operation);
        let part = match words::operation_action(operation) {
            Some("read") if resource == previous_resource => "poll".to_owned(),
            Some(action) => format!("{action}_{resource}"),
            None => words::words(operation).join("_"),
        };
        if parts.last() != Some(&part) {
            parts.push(part);
        }
        previous_resource = resource;
    }
    parts.join("_and_")
}

/// Eight hex digits of a stable hash (FNV-1a), for ids that do not change between runs.
pub(crate) fn short_hash(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:08x}", hash >> 32)
}

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::{Queries, ResourceStates};

    fn outcome(success: bool, state: &str, variables: &[&str]) -> StepSeen {
        let mut step = StepSeen::new("delete", "ClusterService_DeleteCluster", success);
        if !success {
            step.error =
                Some(r#"HTTP 409: {"message": "cluster is not in a deletable state"}"#.into());
            step.status = Some(409);
        }
        step.states.insert("cluster".into(), state.into());
        step.variables_set = variables.len();
        step
    }

    fn observe(knowledge: &mut Knowledge, step: StepSeen, variables: &[&str]) {
        let seen = RunObservation {
            outcomes: vec![step],
            variables: variables.iter().map(|name| (*name).to_owned()).collect(),
            producers: variables.iter().map(|_| "inputs".to_owned()).collect(),
            ..RunObservation::default()
        };
        knowledge.learn(&seen);
    }

    #[test]
    fn a_state_that_changed_before_a_success_is_the_resolution() {
        let mut knowledge = Knowledge::new();
        observe(
            &mut knowledge,
            outcome(false, "MODIFYING", &["cluster_id"]),
            &["cluster_id"],
        );
        let pitfall = &knowledge.pitfalls[0];
        assert_eq!(pitfall.trigger.missing_variable, None);
        assert_eq!(pitfall.trigger.resource_state["cluster"], "MODIFYING");
        assert_eq!(pitfall.error_pattern.status_code, Some(409));

        // The fixed run also saved the state while waiting: a new variable, but the error named
        // none and the state changed, so the wait is the resolution.
        let both = ["cluster_id", "state"];
        observe(&mut knowledge, outcome(true, "ACTIVE", &both), &both);
        assert_eq!(knowledge.pitfalls[0].trigger.missing_variable, None);
        let resolution = knowledge.pitfalls[0].resolution.as_ref().unwrap();
        assert_eq!(
            resolution.description,
            "Wait for cluster to be ACTIVE (it was MODIFYING) before calling ClusterService_DeleteCluster"
        );
        assert_eq!(
            resolution.fix_steps[0],
            "Poll the cluster until state == 'ACTIVE'"
        );
    }

    #[test]
    fn a_success_despite_a_pitfall_contradicts_it_and_a_new_failure_confirms_it() {
        let mut knowledge = Knowledge::new();
        observe(&mut knowledge, outcome(false, "MODIFYING", &[]), &[]);
        observe(&mut knowledge, outcome(true, "ACTIVE", &[]), &[]); // resolves it
        observe(&mut knowledge, outcome(true, "MODIFYING", &[]), &[]); // contradicts it
        let pitfall = &knowledge.pitfalls[0];
        assert_eq!(pitfall.contradiction_count, Some(1));
        assert_eq!(pitfall.strength, Some(0.5));
        let state: ResourceStates = [("cluster".to_owned(), "MODIFYING".to_owned())]
            .into_iter()
            .collect();
        let weakened =
            Queries::new(&knowledge).check_pitfalls("ClusterService_DeleteCluster", &state, &[])[0]
                .confidence;
        assert!((weakened - 2.0 / 4.0 * 0.5).abs() < 0.01, "{weakened}");
        observe(&mut knowledge, outcome(false, "MODIFYING", &[]), &[]);
        let pitfall = &knowledge.pitfalls[0];
        assert_eq!((pitfall.occurrence_count, pitfall.strength), (2, None));
        assert_eq!(
            knowledge.pitfalls.len(),
            1,
            "the same error adds an occurrence"
        );
    }

    #[test]
    fn pattern_names_say_what_the_steps_do() {
        assert_eq!(
            pattern_name(&["ClusterService_CreateCluster", "ClusterService_GetCluster"]),
            "create_cluster_and_poll"
        );
        assert_eq!(
            pattern_name(&["ClusterService_GetCluster", "ClusterService_UpdateCluster"]),
            "read_cluster_and_update_cluster"
        );
    }
}
