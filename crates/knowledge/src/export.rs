//! Sharing knowledge: [`export`] (masked, thinned) and [`Knowledge::merge`] (de-duplicating).
//!
//! An export is a [`Knowledge`] document, written as YAML or JSON in the shape of
//! `wayline knowledge show --format json`: `{patterns, pitfalls, stats: {operations,
//! state_transitions}}`. Free text (descriptions, messages, notes, fix steps, paths) has
//! URLs, ids, long numbers, credentials and tokens masked; the variables a pitfall last saw
//! are dropped (they describe one machine's runs, not the API), and so are fields this model does
//! not know (`extra`), which nothing can vouch for. Expressions, paths and keywords keep their
//! numbers; only credentials and tokens are masked in them.

use crate::mask::{mask_for_export, mask_secrets};
use crate::model::{Knowledge, OperationStats, Pattern, Pitfall, TransitionStats, rate};

/// `knowledge` ready to share: masked, and only entries seen at least `min_occurrences` times
/// (patterns by successes, pitfalls by occurrences, operations by attempts).
pub fn export(knowledge: &Knowledge, min_occurrences: u64) -> Knowledge {
    let mut shared = Knowledge::new();
    shared.patterns = knowledge
        .patterns
        .iter()
        .filter(|pattern| pattern.success_count >= min_occurrences)
        .cloned()
        .map(mask_pattern)
        .collect();
    shared.pitfalls = knowledge
        .pitfalls
        .iter()
        .filter(|pitfall| pitfall.occurrence_count >= min_occurrences)
        .cloned()
        .map(mask_pitfall)
        .collect();
    shared.stats.operations = knowledge
        .stats
        .operations
        .iter()
        .filter(|(_, stats)| stats.total_attempts >= min_occurrences)
        .map(|(operation, stats)| {
            let mut stats = stats.clone();
            for error in &mut stats.common_errors {
                error.error = mask_for_export(&error.error);
            }
            (operation.clone(), stats)
        })
        .collect();
    shared.stats.state_transitions = knowledge
        .stats
        .state_transitions
        .iter()
        .map(|(resource, transitions)| {
            let kept = transitions
                .iter()
                .filter(|(_, transition)| transition.sample_count() >= min_occurrences)
                .map(|(key, transition)| (key.clone(), transition.clone()))
                .collect();
            (resource.clone(), kept)
        })
        .filter(
            |(_, kept): &(String, indexmap::IndexMap<String, TransitionStats>)| !kept.is_empty(),
        )
        .collect();
    shared
}

fn mask_pattern(mut pattern: Pattern) -> Pattern {
    mask_option(&mut pattern.description);
    pattern.extra.clear();
    pattern.trigger.extra.clear();
    for keyword in &mut pattern.trigger.intent_keywords {
        *keyword = mask_secrets(keyword);
    }
    for step in &mut pattern.steps {
        mask_option(&mut step.note);
        step.extra.clear();
        if let Some(template) = &mut step.request_template {
            if let Some(path) = &mut template.path {
                *path = mask_secrets(path);
            }
            template.extra.clear();
        }
        if let Some(expect) = &mut step.expect {
            if let Some(cel) = &mut expect.cel {
                *cel = mask_secrets(cel);
            }
            expect.extra.clear();
        }
        for save in &mut step.save {
            save.eval = mask_secrets(&save.eval);
            save.extra.clear();
        }
    }
    pattern
}

fn mask_pitfall(mut pitfall: Pitfall) -> Pitfall {
    mask_option(&mut pitfall.description);
    pitfall.error_pattern.message_contains =
        mask_for_export(&pitfall.error_pattern.message_contains);
    if let Some(resolution) = &mut pitfall.resolution {
        resolution.description = mask_for_export(&resolution.description);
        for step in &mut resolution.fix_steps {
            *step = mask_for_export(step);
        }
    }
    pitfall.seen_variables.clear();
    pitfall.extra.clear();
    pitfall.trigger.extra.clear();
    pitfall.error_pattern.extra.clear();
    pitfall
}

fn mask_option(text: &mut Option<String>) {
    if let Some(text) = text {
        *text = mask_for_export(text);
    }
}

impl Knowledge {
    /// Adds `other` (an export, or another store's knowledge) to this knowledge. Entries that
    /// are the same thing are combined, not copied: patterns with the same operations in the
    /// same order, pitfalls of the same operation with the same error (status and message),
    /// statistics of the same operation or transition. Counts add up and averages are
    /// weighted by them.
    pub fn merge(&mut self, other: &Knowledge) {
        for pattern in &other.patterns {
            let signature = |p: &Pattern| -> Vec<String> {
                p.steps.iter().map(|s| s.operation_id.clone()).collect()
            };
            match self
                .patterns
                .iter_mut()
                .find(|known| signature(known) == signature(pattern))
            {
                Some(known) => {
                    let (a, b) = (known.success_count as f64, pattern.success_count as f64);
                    known.avg_duration_seconds =
                        match (known.avg_duration_seconds, pattern.avg_duration_seconds) {
                            (Some(x), Some(y)) if a + b > 0.0 => Some((x * a + y * b) / (a + b)),
                            (x, y) => x.or(y),
                        };
                    known.success_count = known.success_count.saturating_add(pattern.success_count);
                    known.failure_count = known.failure_count.saturating_add(pattern.failure_count);
                    known.last_used = known.last_used.max(pattern.last_used);
                    for keyword in &pattern.trigger.intent_keywords {
                        if !known.trigger.intent_keywords.contains(keyword) {
                            known.trigger.intent_keywords.push(keyword.clone());
                        }
                    }
                }
                None => self.patterns.push(pattern.clone()),
            }
        }
        for pitfall in &other.pitfalls {
            match self.pitfalls.iter_mut().find(|known| {
                known.id == pitfall.id
                    || known.trigger.operation_id == pitfall.trigger.operation_id
                        && known.error_pattern.status_code == pitfall.error_pattern.status_code
                        && known.error_pattern.message_contains
                            == pitfall.error_pattern.message_contains
            }) {
                Some(known) => {
                    known.occurrence_count = known
                        .occurrence_count
                        .saturating_add(pitfall.occurrence_count);
                    known.contradiction_count =
                        match (known.contradiction_count, pitfall.contradiction_count) {
                            (None, None) => None,
                            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
                        };
                    known.last_occurred = known.last_occurred.max(pitfall.last_occurred);
                    if known.resolution.is_none() {
                        known.resolution.clone_from(&pitfall.resolution);
                    }
                    if known.trigger.missing_variable.is_none() {
                        known
                            .trigger
                            .missing_variable
                            .clone_from(&pitfall.trigger.missing_variable);
                    }
                }
                None => self.pitfalls.push(pitfall.clone()),
            }
        }
        for (operation, stats) in &other.stats.operations {
            let known = self.stats.operations.entry(operation.clone()).or_default();
            merge_operation(known, stats);
        }
        for (resource, transitions) in &other.stats.state_transitions {
            let known = self
                .stats
                .state_transitions
                .entry(resource.clone())
                .or_default();
            for (key, transition) in transitions {
                match known.get_mut(key) {
                    Some(mine) => merge_transition(mine, transition),
                    None => {
                        known.insert(key.clone(), transition.clone());
                    }
                }
            }
        }
    }
}

fn merge_operation(known: &mut OperationStats, other: &OperationStats) {
    let (a, b) = (known.total_attempts as f64, other.total_attempts as f64);
    if a + b > 0.0 {
        known.avg_duration_ms = (known.avg_duration_ms * a + other.avg_duration_ms * b) / (a + b);
    }
    known.total_attempts = known.total_attempts.saturating_add(other.total_attempts);
    known.successes = known.successes.saturating_add(other.successes);
    known.failures = known.failures.saturating_add(other.failures);
    known.success_rate = rate(known.successes, known.total_attempts);
    known.last_used = known.last_used.max(other.last_used);
    for error in &other.common_errors {
        match known
            .common_errors
            .iter_mut()
            .find(|mine| mine.same_kind(&error.error, error.status_code))
        {
            Some(mine) => mine.count = mine.count.saturating_add(error.count),
            None => known.common_errors.push(error.clone()),
        }
    }
    known
        .common_errors
        .sort_by_key(|error| std::cmp::Reverse(error.count));
}

fn merge_transition(known: &mut TransitionStats, other: &TransitionStats) {
    let (a, b) = (known.sample_count() as f64, other.sample_count() as f64);
    known.avg_poll_attempts = (known.avg_poll_attempts * a + other.avg_poll_attempts * b) / (a + b);
    known.avg_duration_seconds =
        (known.avg_duration_seconds * a + other.avg_duration_seconds * b) / (a + b);
    known.samples = Some(known.sample_count().saturating_add(other.sample_count()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::sample;

    #[test]
    fn exports_are_masked_and_thinned() {
        let mut knowledge = sample();
        knowledge.pitfalls[0].error_pattern.message_contains =
            "token=s3cr3tvalue rejected at https://api.test/v1/clusters/1234567".into();
        knowledge.pitfalls[0].resolution.as_mut().unwrap().fix_steps =
            vec!["use key AKIA1234567890ABCDEFGH".into()];
        let shared = export(&knowledge, 1);
        let pitfall = &shared.pitfalls[0];
        assert_eq!(
            pitfall.error_pattern.message_contains,
            "token=<secret> rejected at <url>"
        );
        assert_eq!(
            pitfall.resolution.as_ref().unwrap().fix_steps,
            ["use key <secret>"]
        );
        assert!(pitfall.seen_variables.is_empty());
        // Entries seen fewer times than asked are left out (the pattern has 15 successes,
        // the pitfall 5 occurrences, the operation 15 attempts).
        let thinned = export(&knowledge, 10);
        assert_eq!((thinned.patterns.len(), thinned.pitfalls.len()), (1, 0));
        assert_eq!(thinned.stats.operations.len(), 1);
        assert!(export(&knowledge, 16).patterns.is_empty());
    }

    #[test]
    fn merging_combines_the_same_entries() {
        let mut knowledge = sample();
        knowledge.merge(&sample());
        assert_eq!(knowledge.patterns.len(), 1);
        assert_eq!(knowledge.patterns[0].success_count, 30);
        assert_eq!(knowledge.pitfalls.len(), 1);
        assert_eq!(knowledge.pitfalls[0].occurrence_count, 10);
        let stats = &knowledge.stats.operations["UpdateCluster"];
        assert_eq!((stats.total_attempts, stats.successes), (30, 24));
        assert_eq!(stats.common_errors[0].count, 4);
        let transition = &knowledge.stats.state_transitions["cluster"]["CREATING_to_ACTIVE"];
        assert_eq!(
            (transition.avg_poll_attempts, transition.samples),
            (45.0, Some(6))
        );
    }
}
