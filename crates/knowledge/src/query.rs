//! Queries: the pattern for an intent, the pitfalls ahead of a call, operations ranked by how
//! well they go, how long a transition takes.
//!
//! Confidence is smoothed and weighted by strength (see `docs/decisions.md`, "Knowledge
//! confidence"): a pattern's is `(successes + 1) / (successes + failures + 2)` times its
//! strength, and it is offered only with at least [`Queries::min_support`] successes; a
//! pitfall's is `(occurrences + 1) / (occurrences + contradictions + 2)` times its strength.
//! Strength fades by half every [`Queries::half_life_days`] since the entry was last
//! confirmed.

use chrono::{DateTime, Utc};
use indexmap::IndexMap;

use crate::model::{Knowledge, Pattern, Pitfall, Precondition};
use crate::words::{self, same_variable};

/// What is known of the current state: each resource that exists and its state (empty when
/// unknown).
pub type ResourceStates = IndexMap<String, String>;

/// A pattern that fits an intent, with how far to trust it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PatternMatch<'a> {
    /// The pattern.
    pub pattern: &'a Pattern,
    /// In `[0, 1]`.
    pub confidence: f64,
    /// The share of its intent keywords the intent has.
    pub keyword_coverage: f64,
}

/// A pitfall whose trigger holds, with how far to trust it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PitfallWarning<'a> {
    /// The pitfall.
    pub pitfall: &'a Pitfall,
    /// In `[0, 1]`.
    pub confidence: f64,
    /// Why it applies (`variable nodegroup_1 is not set`, `cluster is MODIFYING`).
    pub because: Vec<String>,
}

/// An operation with its smoothed success rate.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RankedOperation {
    /// The operation.
    pub operation_id: String,
    /// `(successes + 1) / (attempts + 2)`: 0.5 for an operation never tried.
    pub success_rate: f64,
    /// Attempts behind it.
    pub attempts: u64,
}

/// The expected cost of waiting for a state transition.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ExpectedPoll {
    /// Mean polls.
    pub poll_attempts: f64,
    /// Mean seconds.
    pub seconds: f64,
    /// Transitions observed.
    pub samples: u64,
}

/// Queries over one SUT's knowledge, at a moment (strength fades with time).
#[derive(Debug, Clone)]
pub struct Queries<'a> {
    knowledge: &'a Knowledge,
    now: DateTime<Utc>,
    /// Successes a pattern needs before it is offered (default 2).
    pub min_support: u64,
    /// Days after which an unconfirmed entry has half its strength (default 90).
    pub half_life_days: f64,
}

impl<'a> Queries<'a> {
    /// Queries at the current time.
    pub fn new(knowledge: &'a Knowledge) -> Self {
        Queries::at(knowledge, Utc::now())
    }

    /// Queries as of `now`.
    pub fn at(knowledge: &'a Knowledge, now: DateTime<Utc>) -> Self {
        Queries {
            knowledge,
            now,
            min_support: 2,
            half_life_days: 90.0,
        }
    }

    /// Sets the minimum support.
    #[must_use]
    pub fn min_support(mut self, successes: u64) -> Self {
        self.min_support = successes;
        self
    }

    /// The strength of an entry last confirmed at `last` with stored strength `stored`.
    pub fn strength(&self, stored: Option<f64>, last: Option<DateTime<Utc>>) -> f64 {
        let base = stored.unwrap_or(1.0).clamp(0.0, 1.0);
        let Some(last) = last else { return base };
        let days = (self.now - last).num_seconds().max(0) as f64 / 86_400.0;
        base * 0.5f64.powf(days / self.half_life_days.max(f64::MIN_POSITIVE))
    }

    /// The confidence of a pattern (without regard to the intent).
    pub fn pattern_confidence(&self, pattern: &Pattern) -> f64 {
        let (s, f) = (pattern.success_count as f64, pattern.failure_count as f64);
        (s + 1.0) / (s + f + 2.0) * self.strength(pattern.strength, pattern.last_used)
    }

    /// The confidence of a pitfall.
    pub fn pitfall_confidence(&self, pitfall: &Pitfall) -> f64 {
        let o = pitfall.occurrence_count as f64;
        let c = pitfall.contradiction_count.unwrap_or(0) as f64;
        (o + 1.0) / (o + c + 2.0) * self.strength(pitfall.strength, pitfall.last_occurred)
    }

    /// Patterns that fit `intent` and whose preconditions hold in `state`, best first
    /// (confidence times keyword coverage). A pattern fits when at least half of its intent
    /// keywords are words of the intent.
    pub fn matching_patterns(&self, intent: &str, state: &ResourceStates) -> Vec<PatternMatch<'a>> {
        let intent_words: Vec<String> = words::keywords(intent);
        let mut matches: Vec<PatternMatch<'a>> = self
            .knowledge
            .patterns
            .iter()
            .filter(|pattern| pattern.success_count >= self.min_support)
            .filter_map(|pattern| {
                let keywords = &pattern.trigger.intent_keywords;
                if keywords.is_empty() {
                    return None;
                }
                let present = keywords
                    .iter()
                    .filter(|keyword| intent_words.iter().any(|word| same_word(keyword, word)))
                    .count();
                let coverage = present as f64 / keywords.len() as f64;
                if coverage < 0.5 {
                    return None;
                }
                if let Some(precondition) = &pattern.trigger.precondition
                    && !precondition_holds(precondition, state)
                {
                    return None;
                }
                Some(PatternMatch {
                    pattern,
                    confidence: self.pattern_confidence(pattern),
                    keyword_coverage: coverage,
                })
            })
            .collect();
        matches.sort_by(|a, b| {
            (b.confidence * b.keyword_coverage).total_cmp(&(a.confidence * a.keyword_coverage))
        });
        matches
    }

    /// The best pattern for `intent` in `state`, if any.
    pub fn find_matching_pattern(
        &self,
        intent: &str,
        state: &ResourceStates,
    ) -> Option<PatternMatch<'a>> {
        self.matching_patterns(intent, state).into_iter().next()
    }

    /// The pitfalls of `operation_id` whose trigger holds for these states and variables,
    /// most trusted first.
    pub fn check_pitfalls(
        &self,
        operation_id: &str,
        state: &ResourceStates,
        variables: &[String],
    ) -> Vec<PitfallWarning<'a>> {
        let mut warnings: Vec<PitfallWarning<'a>> = self
            .knowledge
            .pitfalls
            .iter()
            .filter(|pitfall| pitfall.trigger.operation_id == operation_id)
            .filter_map(|pitfall| {
                let because = reasons(pitfall, state, variables)?;
                Some(PitfallWarning {
                    pitfall,
                    confidence: self.pitfall_confidence(pitfall),
                    because,
                })
            })
            .collect();
        warnings.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
        warnings
    }

    /// `candidates` ordered by smoothed success rate, best first (ties keep their order).
    pub fn rank_by_success_rate(&self, candidates: &[&str]) -> Vec<RankedOperation> {
        let mut ranked: Vec<RankedOperation> = candidates
            .iter()
            .map(|operation| {
                let stats = self.knowledge.stats.operations.get(*operation);
                let (successes, attempts) =
                    stats.map_or((0, 0), |stats| (stats.successes, stats.total_attempts));
                RankedOperation {
                    operation_id: (*operation).to_owned(),
                    success_rate: (successes as f64 + 1.0) / (attempts as f64 + 2.0),
                    attempts,
                }
            })
            .collect();
        ranked.sort_by(|a, b| b.success_rate.total_cmp(&a.success_rate));
        ranked
    }

    /// The state `resource` was most often seen to settle in after `from` (the `to` of its
    /// most sampled learned transition out of `from` into a state that is not itself changing,
    /// `…ING`), if it was ever seen to.
    pub fn settles_after(&self, resource: &str, from: &str) -> Option<&'a str> {
        let prefix = format!("{from}_to_");
        self.knowledge
            .stats
            .state_transitions
            .get(resource)?
            .iter()
            .filter_map(|(key, transition)| {
                let to = key.strip_prefix(&prefix)?;
                // Only a state it rests in: `CREATING_to_MODIFYING` is no end to a wait.
                let settled = !to.is_empty() && !to.to_ascii_uppercase().ends_with("ING");
                settled.then_some((to, transition.sample_count()))
            })
            .max_by_key(|(_, samples)| *samples)
            .map(|(to, _)| to)
    }

    /// How long `resource` usually takes to go from `from` to `to` while polled.
    pub fn expected_poll(&self, resource: &str, from: &str, to: &str) -> Option<ExpectedPoll> {
        let entry = self
            .knowledge
            .stats
            .state_transitions
            .get(resource)?
            .get(&format!("{from}_to_{to}"))?;
        Some(ExpectedPoll {
            poll_attempts: entry.avg_poll_attempts,
            seconds: entry.avg_duration_seconds,
            samples: entry.sample_count(),
        })
    }
}

/// True when `keyword` (as stored: any case, maybe plural) is the intent word `word` (lower
/// case, singular). Compared in place: this runs for every keyword of every pattern.
fn same_word(keyword: &str, word: &str) -> bool {
    keyword.eq_ignore_ascii_case(word)
        || (keyword.len() == word.len() + 1
            && keyword.is_char_boundary(word.len())
            && keyword[..word.len()].eq_ignore_ascii_case(word)
            && keyword.ends_with(['s', 'S'])
            && words::singular(&keyword.to_ascii_lowercase()) == word)
}

fn precondition_holds(precondition: &Precondition, state: &ResourceStates) -> bool {
    if let Some(resource) = &precondition.resource_not_exists
        && state.contains_key(resource)
    {
        return false;
    }
    precondition
        .resource_state
        .iter()
        .all(|(resource, wanted)| state.get(resource).is_some_and(|now| now == wanted))
}

/// Why `pitfall` applies, or `None` when its trigger does not hold. A trigger with neither a
/// missing variable nor resource states holds for every call of its operation.
fn reasons(pitfall: &Pitfall, state: &ResourceStates, variables: &[String]) -> Option<Vec<String>> {
    let trigger = &pitfall.trigger;
    let mut because = Vec::new();
    if let Some(missing) = &trigger.missing_variable {
        if variables.iter().any(|set| same_variable(set, missing)) {
            return None;
        }
        because.push(format!("variable `{missing}` is not set"));
    }
    for (resource, wanted) in &trigger.resource_state {
        if state.get(resource) != Some(wanted) {
            return None;
        }
        because.push(format!("{resource} is {wanted}"));
    }
    if because.is_empty() {
        because.push(format!("every call of {} so far", trigger.operation_id));
    }
    Some(because)
}

/// True when the trigger of `pitfall` holds.
pub(crate) fn pitfall_applies(
    pitfall: &Pitfall,
    state: &ResourceStates,
    variables: &[String],
) -> bool {
    reasons(pitfall, state, variables).is_some()
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;
    use crate::model::{PatternTrigger, PitfallTrigger};

    fn pattern(successes: u64, failures: u64, last_used: DateTime<Utc>) -> Pattern {
        Pattern {
            id: "p".into(),
            name: "create_cluster".into(),
            trigger: PatternTrigger {
                intent_keywords: vec!["create".into(), "cluster".into()],
                ..PatternTrigger::default()
            },
            success_count: successes,
            failure_count: failures,
            last_used: Some(last_used),
            ..Pattern::default()
        }
    }

    #[test]
    fn confidence_is_smoothed_needs_support_and_fades_with_time() {
        let now: DateTime<Utc> = "2026-11-23T00:00:00Z".parse().unwrap();
        let mut knowledge = Knowledge::new();
        knowledge.patterns.push(pattern(1, 0, now));
        let queries = Queries::at(&knowledge, now);
        // One success is not certainty, and below the minimum support it is not offered.
        assert!((queries.pattern_confidence(&knowledge.patterns[0]) - 2.0 / 3.0).abs() < 1e-9);
        let none = ResourceStates::new();
        assert!(
            queries
                .find_matching_pattern("create a cluster", &none)
                .is_none()
        );
        assert!(
            queries
                .clone()
                .min_support(1)
                .find_matching_pattern("create a cluster", &none)
                .is_some()
        );

        // 15 successes and 2 failures: (15 + 1) / (15 + 2 + 2) = 16/19, at full strength.
        knowledge.patterns[0] = pattern(15, 2, now);
        let fresh = Queries::at(&knowledge, now).pattern_confidence(&knowledge.patterns[0]);
        assert!((fresh - 16.0 / 19.0).abs() < 1e-9);
        // Unused for one half-life: half as trusted; a contradiction halves it too.
        let later = Queries::at(&knowledge, now + Duration::days(90));
        assert!((later.pattern_confidence(&knowledge.patterns[0]) - fresh / 2.0).abs() < 1e-9);
        knowledge.patterns[0].strength = Some(0.5);
        let weakened = Queries::at(&knowledge, now).pattern_confidence(&knowledge.patterns[0]);
        assert!((weakened - fresh / 2.0).abs() < 1e-9);
    }

    #[test]
    fn intents_need_half_the_keywords_and_preconditions_must_hold() {
        let now = Utc::now();
        let mut knowledge = Knowledge::new();
        let mut create = pattern(3, 0, now);
        create.trigger.precondition = Some(Precondition {
            resource_not_exists: Some("cluster".into()),
            ..Precondition::default()
        });
        knowledge.patterns.push(create);
        let queries = Queries::at(&knowledge, now);
        let mut existing = ResourceStates::new();
        assert!(
            queries
                .find_matching_pattern("please create clusters", &existing)
                .is_some()
        );
        assert!(
            queries
                .find_matching_pattern("delete everything", &existing)
                .is_none()
        );
        existing.insert("cluster".into(), "ACTIVE".into());
        assert!(
            queries
                .find_matching_pattern("create a cluster", &existing)
                .is_none()
        );
    }

    #[test]
    fn pitfalls_apply_by_missing_variable_and_state() {
        let mut knowledge = Knowledge::new();
        knowledge.pitfalls.push(Pitfall {
            id: "a".into(),
            name: "delete_while_modifying".into(),
            trigger: PitfallTrigger {
                operation_id: "DeleteCluster".into(),
                resource_state: [("cluster".to_owned(), "MODIFYING".to_owned())]
                    .into_iter()
                    .collect(),
                ..PitfallTrigger::default()
            },
            occurrence_count: 3,
            ..Pitfall::default()
        });
        let queries = Queries::new(&knowledge);
        let mut state = ResourceStates::new();
        state.insert("cluster".into(), "ACTIVE".into());
        assert!(
            queries
                .check_pitfalls("DeleteCluster", &state, &[])
                .is_empty()
        );
        state.insert("cluster".into(), "MODIFYING".into());
        let warnings = queries.check_pitfalls("DeleteCluster", &state, &[]);
        assert_eq!(warnings[0].because, ["cluster is MODIFYING"]);
        assert!((warnings[0].confidence - 0.8).abs() < 1e-9, "(3+1)/(3+0+2)");
        assert!(queries.check_pitfalls("GetCluster", &state, &[]).is_empty());
    }

    #[test]
    fn operations_rank_by_smoothed_success_rate() {
        let mut knowledge = Knowledge::new();
        let now = Utc::now();
        for (operation, successes, failures) in [("flaky", 1, 1), ("solid", 9, 0)] {
            let stats = knowledge
                .stats
                .operations
                .entry(operation.into())
                .or_default();
            for _ in 0..successes {
                stats.record(true, 1.0, now);
            }
            for _ in 0..failures {
                stats.record(false, 1.0, now);
            }
        }
        let ranked = Queries::new(&knowledge).rank_by_success_rate(&["flaky", "unknown", "solid"]);
        let order: Vec<&str> = ranked.iter().map(|r| r.operation_id.as_str()).collect();
        assert_eq!(
            order,
            ["solid", "flaky", "unknown"],
            "ties keep their order"
        );
        assert!((ranked[0].success_rate - 10.0 / 11.0).abs() < 1e-9);
        assert!((ranked[2].success_rate - 0.5).abs() < 1e-9);
    }
}
