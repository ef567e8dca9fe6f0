//! Knowledge-first planning: when a learned pattern fits a goal well enough, the plan is the
//! pattern's steps made into a workflow, and no model is asked.
//!
//! A pattern fits a goal when its confidence (the knowledge crate's smoothed, fading success
//! rate, times the share of its trigger keywords the goal has) reaches the threshold, every
//! keyword and number of the goal is one the pattern speaks of (its trigger, name, description
//! or operations), and every step that changes something (create, update, delete) is one the
//! goal asks for. The second rule keeps "create a cluster and a branch" (or "create 3
//! clusters") from being planned as "create a cluster"; the third keeps a pattern that also
//! deletes from a goal that only creates (decision 52). The workflow it makes must pass
//! validation; the next candidate is tried when it does not.
//!
//! A pattern learned from the goal itself (its description is the goal, words compared) is
//! offered after a single success and needs a confidence of only 0.5: that goal was reached
//! that way.
//!
//! Instantiation: one step per pattern step, each after the one before (a pattern is a
//! script). A step maps every input its tool requires, and the optional ones the pattern's
//! request template names: to a value an earlier step saved under a name that matches loosely
//! (`cluster_1` saved from `body.clusterId` feeds `clusterId`) or, for a path parameter, as the
//! resource of the collection before it (`post_1` feeds the `id` of `/posts/{id}`), else to a
//! declared run input of a matching name, else to a new run input. Saved values become the step's `outputs`; an
//! `expect` condition becomes a `poll`.

use chrono::{DateTime, Utc};
use indexmap::IndexMap;
use serde_json::Value;
use wayline_core::ToolCatalog;
use wayline_core::workflow::{Edge, Poll, Step, Workflow, identifier};
use wayline_knowledge::model::{Knowledge, Pattern};
use wayline_knowledge::words;
use wayline_knowledge::{Queries, ResourceStates};

/// Calls a polling pattern step may make when it names no limit: one check, as in the
/// scenario conversion.
const DEFAULT_POLLS: u32 = 1;

/// The confidence a pattern learned from the very goal asked needs: it has worked at least as
/// often as it has failed (one success alone gives 0.67).
const EXACT_GOAL_CONFIDENCE: f64 = 0.5;

/// True when two goals are the same words (case and punctuation aside).
fn same_goal(a: &str, b: &str) -> bool {
    words::words(a) == words::words(b)
}

/// Words any pattern that waits for a state speaks of.
const WAITING_WORDS: [&str; 5] = ["wait", "poll", "until", "ready", "done"];

/// A workflow made from a learned pattern.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Recalled {
    /// The workflow (not yet validated).
    pub workflow: Workflow,
    /// The pattern's id.
    pub pattern_id: String,
    /// The pattern's name.
    pub pattern_name: String,
    /// Its confidence for the goal, in `[0, 1]`.
    pub confidence: f64,
    /// Why better-ranked candidates were passed over.
    pub notes: Vec<String>,
}

/// What looking in the knowledge found.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Recall {
    /// A pattern fits; here it is as a workflow.
    Found(Box<Recalled>),
    /// None fits. The notes say why the best candidates did not (empty when no pattern's
    /// keywords were in the goal at all).
    Nothing(Vec<String>),
}

/// Looks for a pattern that fits `goal` at `now` with confidence at least `threshold`, and
/// makes it a workflow over `catalog` with the declared run inputs `inputs`.
pub fn recall(
    knowledge: &Knowledge,
    now: DateTime<Utc>,
    goal: &str,
    inputs: &[String],
    catalog: &dyn ToolCatalog,
    threshold: f64,
) -> Recall {
    let queries = Queries::at(knowledge, now);
    // Patterns learned from this very goal are offered after one success (a session that
    // reached it once has shown the way); others need the usual support.
    let support = queries.min_support;
    let queries = queries.min_support(1);
    let mut goal_words = words::keywords(goal);
    // Numbers count: "create 3 clusters" is not what a one-cluster pattern does. A 1 says
    // nothing a pattern does not ("create 1 cluster").
    goal_words.extend(numbers(goal).filter(|number| number != "1"));
    let goal_actions: Vec<&str> = words::words(goal)
        .iter()
        .filter_map(|word| words::action_of(word))
        .collect();
    let mut notes = Vec::new();
    // Nothing is known of the state before a plan runs: preconditions about resources that
    // must not exist hold, ones that need a resource in a state do not.
    for found in queries.matching_patterns(goal, &ResourceStates::new()) {
        let pattern = found.pattern;
        let exact = pattern
            .description
            .as_deref()
            .is_some_and(|learned_from| same_goal(learned_from, goal));
        if !exact && pattern.success_count < support {
            continue;
        }
        let confidence = found.confidence * found.keyword_coverage;
        let needed = if exact {
            threshold.min(EXACT_GOAL_CONFIDENCE)
        } else {
            threshold
        };
        if confidence < needed {
            notes.push(format!(
                "the learned pattern `{}` fits the goal with confidence {confidence:.2}, below the threshold {needed:.2}",
                pattern.name
            ));
            continue;
        }
        if let Some(why) = beyond_the_goal(pattern, &goal_words, &goal_actions) {
            notes.push(format!("the learned pattern `{}` {why}", pattern.name));
            continue;
        }
        let made = instantiate(pattern, goal, inputs, catalog).and_then(|workflow| {
            let report = wayline_graph::validate(&workflow, catalog);
            if report.is_valid() {
                Ok(workflow)
            } else {
                Err(format!(
                    "it does not make a valid workflow: {}",
                    report.problems().join("; ")
                ))
            }
        });
        match made {
            Ok(workflow) => {
                return Recall::Found(Box::new(Recalled {
                    workflow,
                    pattern_id: pattern.id.clone(),
                    pattern_name: pattern.name.clone(),
                    confidence,
                    notes,
                }));
            }
            Err(problem) => notes.push(format!(
                "the learned pattern `{}` cannot be used: {problem}",
                pattern.name
            )),
        }
    }
    Recall::Nothing(notes)
}

/// Why `pattern` does not do what the goal asks, if it does not: a word or number of the
/// goal it does not speak of, or a step that changes something the goal does not ask to
/// change.
fn beyond_the_goal(
    pattern: &Pattern,
    goal_words: &[String],
    goal_actions: &[&str],
) -> Option<String> {
    let vocabulary = vocabulary(pattern);
    let unspoken: Vec<&str> = goal_words
        .iter()
        .filter(|word| !vocabulary.iter().any(|known| same_word(known, word)))
        .map(String::as_str)
        .collect();
    if !unspoken.is_empty() {
        return Some(format!(
            "does not cover `{}` of the goal",
            unspoken.join("`, `")
        ));
    }
    let unasked: Vec<String> = pattern
        .steps
        .iter()
        .filter_map(|step| {
            let action = words::operation_action(&step.operation_id)?;
            (action != "read" && !goal_actions.contains(&action))
                .then(|| format!("{action} (`{}`)", step.operation_id))
        })
        .collect();
    (!unasked.is_empty()).then(|| {
        format!(
            "also does what the goal does not ask for: {}",
            unasked.join(", ")
        )
    })
}

/// Every word a pattern speaks of.
fn vocabulary(pattern: &Pattern) -> Vec<String> {
    let mut known: Vec<String> = pattern
        .trigger
        .intent_keywords
        .iter()
        .map(|keyword| words::singular(&keyword.to_lowercase()))
        .collect();
    let texts = std::iter::once(pattern.name.as_str())
        .chain(pattern.description.as_deref())
        .chain(pattern.steps.iter().map(|step| step.operation_id.as_str()));
    for text in texts {
        known.extend(words::keywords(text));
        known.extend(numbers(text));
    }
    for keyword in &pattern.trigger.intent_keywords {
        known.extend(numbers(keyword));
    }
    if pattern.steps.iter().any(|step| step.expect.is_some()) {
        known.extend(WAITING_WORDS.iter().map(|word| (*word).to_owned()));
    }
    known
}

/// The numbers among the words of `text` (`create 3 clusters` → `3`).
fn numbers(text: &str) -> impl Iterator<Item = String> {
    words::words(text)
        .into_iter()
        .filter(|word| word.bytes().all(|byte| byte.is_ascii_digit()))
}

/// The same word, or two verbs for the same action (`add` and `create`).
fn same_word(a: &str, b: &str) -> bool {
    a == b || words::action_of(a).is_some_and(|action| words::action_of(b) == Some(action))
}

/// The pattern as a workflow (see the module documentation).
fn instantiate(
    pattern: &Pattern,
    goal: &str,
    declared: &[String],
    catalog: &dyn ToolCatalog,
) -> Result<Workflow, String> {
    if pattern.steps.is_empty() {
        return Err("it has no steps".to_owned());
    }
    let mut workflow = Workflow::new(identifier(&pattern.name, "step"), pattern.name.clone());
    workflow.description = format!(
        "{goal} (from the learned pattern `{}`{})",
        pattern.name,
        pattern
            .description
            .as_deref()
            .map(|text| format!(": {text}"))
            .unwrap_or_default()
    );
    for name in declared {
        workflow.inputs.entry(name.clone()).or_default();
    }
    // Saved variable → (step id, the field it was saved from).
    let mut saved: IndexMap<String, (String, String)> = IndexMap::new();
    for pattern_step in &pattern.steps {
        let tool = catalog.tool(&pattern_step.operation_id).ok_or_else(|| {
            format!(
                "its operation `{}` is not a tool of the catalog",
                pattern_step.operation_id
            )
        })?;
        let mut id = step_id_of_operation(&pattern_step.operation_id);
        while workflow.step(&id).is_some() {
            id.push_str("_again");
        }
        let mut step = Step::new(&id, &tool.id);
        step.description = pattern_step.note.clone().unwrap_or_default();
        let known = tool.input_names();
        let mut wanted: Vec<&str> = tool.required_inputs();
        if let Some(template) = &pattern_step.request_template {
            for name in template.path_params.iter().chain(&template.body_keys) {
                if known.contains(&name.as_str()) && !wanted.contains(&name.as_str()) {
                    wanted.push(name);
                }
            }
        }
        for input in wanted {
            // A path parameter holds the id of the collection before it, whatever its name
            // (`/posts/{id}`: a post's).
            let owner = wayline_registry::openapi::path_parameter_resource(&tool.path, input);
            let value = source_of(input, owner.as_deref(), &saved, declared, &mut workflow);
            step.input_mapping.insert(input.to_owned(), value);
        }
        for rule in &pattern_step.save {
            step.outputs.insert(rule.key.clone(), rule.eval.clone());
            let field = rule
                .eval
                .rsplit('.')
                .next()
                .unwrap_or(&rule.eval)
                .to_owned();
            saved.insert(rule.key.clone(), (id.clone(), field));
        }
        if let Some(until) = pattern_step.expect.as_ref().and_then(|e| e.cel.clone()) {
            let polls = pattern_step
                .max_retries
                .map_or(DEFAULT_POLLS, |retries| retries.saturating_add(1));
            if polls > 1 && !tool.safe_to_repeat() {
                return Err(format!(
                    "its step `{}` polls tool `{}`, which is not safe to call again on each poll (mark the tool `idempotent: true` if it is)",
                    pattern_step.operation_id, tool.id
                ));
            }
            let interval_ms = pattern_step.delay_after.unwrap_or(1).saturating_mul(1_000);
            step.poll = Some(Poll::new(until, polls, interval_ms));
        }
        if let Some(previous) = workflow.steps.last() {
            workflow.edges.push(Edge::new(previous.id.clone(), id));
        }
        workflow.steps.push(step);
    }
    Ok(workflow)
}

/// Where a step's input comes from: the latest earlier step that saved it (by a name that
/// matches loosely, or for a path parameter holding the id of `owner`, a value saved as an
/// `owner` — `post_1` for `/posts/{id}`), a declared run input, or a new run input.
fn source_of(
    input: &str,
    owner: Option<&str>,
    saved: &IndexMap<String, (String, String)>,
    declared: &[String],
    workflow: &mut Workflow,
) -> Value {
    let owned = |key: &str| {
        let stem = key
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .trim_end_matches('_');
        owner.is_some_and(|owner| words::same_variable(stem, owner))
    };
    // For a path parameter, the resource its collection names comes first: `id` is the id of
    // almost every save, so a loose match on it would take whatever was saved last.
    let by_name = || {
        saved.iter().rev().find(|(key, (_, field))| {
            words::same_variable(input, key) || words::same_variable(input, field)
        })
    };
    let earlier = match owner {
        Some(_) => saved
            .iter()
            .rev()
            .find(|(key, _)| owned(key))
            .or_else(by_name),
        None => by_name(),
    };
    if let Some((key, (step, _))) = earlier {
        return Value::from(format!("{step}.{key}"));
    }
    let name = declared
        .iter()
        .find(|name| words::same_variable(input, name))
        .cloned()
        .unwrap_or_else(|| input.to_owned());
    workflow.inputs.entry(name.clone()).or_default();
    Value::from(format!("$input.{name}"))
}

/// A step id for an operation: its words from the first verb on (`ClusterService_GetCluster`
/// → `get_cluster`), all of them when it has no verb.
fn step_id_of_operation(operation_id: &str) -> String {
    let all = words::words(operation_id);
    let from = all
        .iter()
        .position(|word| words::action_of(word).is_some())
        .unwrap_or(0);
    let id = all[from..].join("_");
    if id.is_empty() {
        identifier(operation_id, "step")
    } else {
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_ids_start_at_the_verb() {
        assert_eq!(
            step_id_of_operation("ClusterService_GetCluster"),
            "get_cluster"
        );
        assert_eq!(step_id_of_operation("listNodeGroups"), "list_node_groups");
        assert_eq!(step_id_of_operation("health"), "health");
        assert_eq!(step_id_of_operation("--"), "__");
    }

    #[test]
    fn verbs_for_one_action_are_one_word() {
        assert!(same_word("add", "create"));
        assert!(same_word("cluster", "cluster"));
        assert!(!same_word("cluster", "branch"));
    }
}
