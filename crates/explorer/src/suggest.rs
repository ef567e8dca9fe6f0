//! The next step toward a target (the TiDB Cloud explorer's suggestion algorithm): the first goal
//! not yet done; its candidate operations; a wait when a resource it involves is still changing; a
//! learned pattern's next step first; the step that provides a missing input before the step that
//! needs it; candidates ranked by their success rate; known pitfalls; a confidence from these
//! signals; and the alternatives.

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;
use wayline_knowledge::Queries;
use wayline_registry::openapi::{ApiSpec, LinkSource, Operation, Parameter, ParameterLocation};

use crate::dataflow::DataFlow;
use crate::exploration::Choice;
use crate::intent::{self, Goal, Verb, operation_resource};
use crate::intervention::Source;
use crate::lifecycle::{failed_states, is_transitional, settled_state, state_field};
use crate::names;
use crate::state::ExploreState;

/// Wait for a resource to settle: poll its read operation until `field` is `state`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct WaitFor {
    /// The resource type.
    pub resource: String,
    /// The response field that reports the state (`state`, `status` or `phase`).
    pub field: String,
    /// The state to wait for.
    pub state: String,
    /// States that end the wait in failure (`FAILED`, `DELETED`, ... from the spec's enum).
    pub failed: Vec<String>,
}

impl WaitFor {
    /// The CEL condition the poll waits for: the settled state, or a failed one (which ends
    /// the wait at once rather than after every poll).
    pub fn condition(&self) -> String {
        let quote = |state: &str| format!("'{}'", state.replace('\'', ""));
        let settled = format!("body.{} == {}", self.field, quote(&self.state));
        if self.failed.is_empty() {
            return settled;
        }
        let failed: Vec<String> = self.failed.iter().map(|state| quote(state)).collect();
        format!(
            "{settled} || body.{} in [{}]",
            self.field,
            failed.join(", ")
        )
    }
}

/// How much less sure a step is when a required input has no value.
const MISSING_PENALTY: f64 = 0.3;

/// A suggested step.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Suggestion {
    /// The operation (empty when nothing matches).
    pub operation: String,
    /// The goal it serves (`None` for a step another step needs first).
    pub goal: Option<Goal>,
    /// 0 to 1.
    pub confidence: f64,
    /// Where it came from.
    pub source: Source,
    /// Why, in words.
    pub reason: String,
    /// Other operations that could do it.
    pub alternatives: Vec<String>,
    /// Known pitfalls ahead (their names and why they apply).
    pub pitfalls: Vec<String>,
    /// The inputs filled from the state.
    pub inputs: IndexMap<String, Value>,
    /// Required inputs nothing known fills.
    pub missing: Vec<String>,
    /// When the step is a wait.
    pub wait_for: Option<WaitFor>,
}

/// Suggests steps toward one target.
#[derive(Debug)]
pub struct Suggester<'a> {
    spec: &'a ApiSpec,
    flow: &'a DataFlow,
    knowledge: Option<Queries<'a>>,
    target: String,
    goals: Vec<Goal>,
    /// The operations a person chose for goals.
    choices: &'a [Choice],
}

impl<'a> Suggester<'a> {
    /// A suggester for `target` over `spec` (and its data flow), with learned knowledge when
    /// there is some.
    pub fn new(
        spec: &'a ApiSpec,
        flow: &'a DataFlow,
        target: &str,
        knowledge: Option<Queries<'a>>,
    ) -> Self {
        Suggester::with_goals(spec, flow, target, intent::parse(target, spec), knowledge)
    }

    /// As [`Suggester::new`], with `target` already read as `goals` (by [`intent::parse`]
    /// over the same spec): a caller suggesting many steps toward one target reads it once.
    pub fn with_goals(
        spec: &'a ApiSpec,
        flow: &'a DataFlow,
        target: &str,
        goals: Vec<Goal>,
        knowledge: Option<Queries<'a>>,
    ) -> Self {
        Suggester {
            spec,
            flow,
            knowledge,
            target: target.to_owned(),
            goals,
            choices: &[],
        }
    }

    /// Suggests, for a goal a person chose an operation for, that operation (with its own
    /// inputs, missing ones asked for like any other's).
    pub fn choices(mut self, choices: &'a [Choice]) -> Self {
        self.choices = choices;
        self
    }

    /// The goals the target was read as.
    pub fn goals(&self) -> &[Goal] {
        &self.goals
    }

    /// The next step, given the state, the goals done and the operations confirmed so far;
    /// `None` when every goal is done.
    pub fn next(
        &self,
        state: &ExploreState,
        done: &[Goal],
        confirmed: &[String],
    ) -> Option<Suggestion> {
        if self.goals.is_empty() {
            return Some(self.unclear());
        }
        let goal = self.goals.iter().find(|goal| !done.contains(goal))?;
        let candidates = intent::candidates(self.spec, goal);
        if candidates.is_empty() {
            return Some(self.no_match(goal));
        }
        // A learned pattern that the steps so far follow: its next step.
        let guide = self.pattern_next(state, confirmed);
        if let Some(mut wait) = self.wait(goal, &candidates, state) {
            if let Some((next, pattern_confidence, name)) = &guide
                && *next == wait.operation
            {
                wait.source = Source::KnownPattern;
                wait.confidence = 0.9 + 0.09 * pattern_confidence;
                wait.reason = format!("{} (the learned pattern `{name}`)", wait.reason);
            }
            return Some(wait);
        }
        let pattern = guide.and_then(|(next, pattern_confidence, name)| {
            candidates
                .iter()
                .find(|candidate| candidate.id == next)
                .map(|candidate| (*candidate, pattern_confidence, name))
        });
        let ranked = self.rank(&candidates);
        let choice = self
            .choices
            .iter()
            .rfind(|choice| choice.goal == *goal)
            .and_then(|choice| self.spec.operation(&choice.operation));
        let (chosen, mut confidence, source, mut reason) = match (choice, pattern) {
            (Some(operation), _) => (
                operation,
                0.95,
                Source::SingleCandidate,
                "chosen by a person".to_owned(),
            ),
            (None, Some((operation, pattern_confidence, name))) => (
                operation,
                0.9 + 0.09 * pattern_confidence,
                Source::KnownPattern,
                format!("the learned pattern `{name}`"),
            ),
            (None, None) => {
                let (top, top_rate) = ranked[0];
                let (source, base) = match ranked.get(1) {
                    None => (Source::SingleCandidate, 0.85),
                    Some((_, second)) if top_rate - second >= 0.15 => (Source::Dominant, 0.75),
                    // An update's method decides a tie: the one the target names, else PATCH
                    // before PUT (see `intent::candidates`).
                    Some((next, second))
                        if goal.verb == Verb::Update
                            && top_rate >= *second
                            && top.method != next.method
                            && (goal.method.as_deref() == Some(top.method.as_str())
                                || top.method == "PATCH") =>
                    {
                        (Source::Dominant, 0.75)
                    }
                    Some(_) => (Source::Similar, 0.6),
                };
                (
                    top,
                    base,
                    source,
                    format!("{} {}", verb_word(&goal.verb), goal.resource),
                )
            }
        };
        // What the knowledge says of this operation moves the confidence.
        if let Some(queries) = &self.knowledge {
            let rank = queries.rank_by_success_rate(&[chosen.id.as_str()]);
            if let Some(ranked) = rank.first().filter(|ranked| ranked.attempts > 0) {
                confidence += (ranked.success_rate - 0.5) * 0.1;
            }
        }
        // A needed input nothing known fills: the step that provides it comes first.
        let resource = operation_resource(chosen);
        let missing = self.missing(chosen, &resource, state, Some(goal));
        if let Some(input) = missing.first()
            && let Some(producer) = self
                .flow
                .producers_of(&chosen.id, input)
                .iter()
                .find(|producer| !confirmed.contains(&producer.operation))
            && let Some(operation) = self.spec.operation(&producer.operation)
        {
            let resource = operation_resource(operation);
            // A goal still to do that this step does ("create an order for a pet": the pet
            // the order needs is the pet the target asks for) is done by it.
            let serves = self
                .goals
                .iter()
                .find(|pending| {
                    !done.contains(pending)
                        && pending.resource == resource
                        && pending.verb == intent::operation_verb(operation)
                })
                .cloned();
            return Some(self.finish(
                operation,
                serves,
                0.8,
                Source::SingleCandidate,
                format!(
                    "`{}` needs `{input}`, which `{}` provides",
                    chosen.id, operation.id
                ),
                Vec::new(),
                &resource,
                state,
            ));
        }
        let alternatives = ranked
            .iter()
            .map(|(operation, _)| operation.id.clone())
            .filter(|id| *id != chosen.id)
            .take(2)
            .collect();
        if !missing.is_empty() {
            reason.push_str(&format!("; nothing known gives {}", missing.join(", ")));
        }
        Some(self.finish(
            chosen,
            Some(goal.clone()),
            confidence,
            source,
            reason,
            alternatives,
            &resource,
            state,
        ))
    }

    /// The next step of the best learned pattern for the target whose first steps are the
    /// steps confirmed so far, with the pattern's confidence and name.
    fn pattern_next(
        &self,
        state: &ExploreState,
        confirmed: &[String],
    ) -> Option<(String, f64, String)> {
        let queries = self.knowledge.as_ref()?;
        // The precondition is about the start: it is checked against the empty state then,
        // and needs to hold no longer once the steps follow the pattern.
        let start = if confirmed.is_empty() {
            state.resource_states()
        } else {
            IndexMap::new()
        };
        queries
            .matching_patterns(&self.target, &start)
            .into_iter()
            .find_map(|found| {
                let steps = &found.pattern.steps;
                let follows = steps.len() > confirmed.len()
                    && steps
                        .iter()
                        .zip(confirmed)
                        .all(|(step, done)| step.operation_id == *done);
                follows.then(|| {
                    (
                        steps[confirmed.len()].operation_id.clone(),
                        found.confidence,
                        found.pattern.name.clone(),
                    )
                })
            })
    }

    /// The suggestion for running `operation_id` (a person's choice among the candidates):
    /// its inputs from the state, its pitfalls, and the goal it serves.
    pub fn suggestion_for(
        &self,
        operation_id: &str,
        goal: Option<Goal>,
        state: &ExploreState,
    ) -> Option<Suggestion> {
        let operation = self.spec.operation(operation_id)?;
        let resource = operation_resource(operation);
        Some(self.finish(
            operation,
            goal,
            1.0,
            Source::Similar,
            "chosen by a person".to_owned(),
            Vec::new(),
            &resource,
            state,
        ))
    }

    /// The words this API has for its resources, for a person to choose from: the paths'
    /// resources, then the other words its summaries and tags use.
    fn vocabulary(&self) -> String {
        let known = intent::resources(self.spec);
        let mut words: Vec<String> = Vec::new();
        for alias in crate::vocabulary::aliases(self.spec) {
            if !words.contains(&alias.word) {
                words.push(alias.word);
            }
        }
        if words.is_empty() {
            format!("it has: {}", known.join(", "))
        } else {
            format!(
                "it has: {}; its summaries also say: {}",
                known.join(", "),
                words.join(", ")
            )
        }
    }

    /// A target read as no goal at all: ask what is meant.
    fn unclear(&self) -> Suggestion {
        Suggestion {
            operation: String::new(),
            goal: None,
            confidence: 0.0,
            source: Source::NoMatch,
            reason: format!(
                "`{}` names no action on a resource of this API ({})",
                self.target,
                self.vocabulary()
            ),
            alternatives: Vec::new(),
            pitfalls: Vec::new(),
            inputs: IndexMap::new(),
            missing: Vec::new(),
            wait_for: None,
        }
    }

    fn no_match(&self, goal: &Goal) -> Suggestion {
        Suggestion {
            operation: String::new(),
            goal: Some(goal.clone()),
            confidence: 0.2,
            source: Source::NoMatch,
            reason: format!(
                "no operation {}s a {} ({})",
                verb_word(&goal.verb),
                goal.noun.as_deref().unwrap_or(&goal.resource),
                self.vocabulary()
            ),
            alternatives: Vec::new(),
            pitfalls: Vec::new(),
            inputs: IndexMap::new(),
            missing: Vec::new(),
            wait_for: None,
        }
    }

    /// A wait, when a resource the goal involves is still changing: the goal's own resource
    /// (for anything but create), or a resource whose id a candidate needs.
    fn wait(
        &self,
        goal: &Goal,
        candidates: &[&Operation],
        state: &ExploreState,
    ) -> Option<Suggestion> {
        let mut involved: Vec<String> = Vec::new();
        if goal.verb != Verb::Create {
            involved.push(goal.resource.clone());
        }
        for candidate in candidates {
            for input in self.flow.needs.get(&candidate.id).into_iter().flatten() {
                let field = input.rsplit('.').next().unwrap_or(input);
                if let Some(kind) = field.strip_suffix("Id") {
                    involved.push(kind.to_lowercase());
                }
            }
        }
        // Deleting a changing resource is often refused too; waiting first is safe.
        for resource in involved {
            let Some((name, found)) = state.latest(&resource) else {
                continue;
            };
            let Some(current) = found
                .state
                .as_deref()
                .filter(|state| is_transitional(state))
            else {
                continue;
            };
            let Some(read) = self.spec.operations.iter().find(|operation| {
                operation_resource(operation) == resource
                    && intent::operation_verb(operation) == Verb::Read
            }) else {
                continue;
            };
            // Where it settles: as the spec declares, else as it was seen to settle before;
            // with neither, there is nothing to wait for.
            let Some(settled) = settled_state(self.spec, &resource).or_else(|| {
                self.knowledge
                    .as_ref()
                    .and_then(|queries| queries.settles_after(&resource, current))
                    .map(str::to_owned)
            }) else {
                continue;
            };
            let mut suggestion = self.finish(
                read,
                None,
                0.85,
                Source::SingleCandidate,
                format!("{name} is {current}; wait until it is {settled}"),
                Vec::new(),
                &resource,
                state,
            );
            suggestion.wait_for = Some(WaitFor {
                failed: failed_states(self.spec, &resource),
                resource,
                field: state_field(read),
                state: settled,
            });
            return Some(suggestion);
        }
        None
    }

    /// Candidates with their smoothed success rates, best first (spec order on ties).
    fn rank<'o>(&self, candidates: &[&'o Operation]) -> Vec<(&'o Operation, f64)> {
        let mut ranked: Vec<(&Operation, f64)> = candidates
            .iter()
            .map(|operation| {
                let rate = self.knowledge.as_ref().map_or(0.5, |queries| {
                    queries
                        .rank_by_success_rate(&[operation.id.as_str()])
                        .first()
                        .map_or(0.5, |ranked| ranked.success_rate)
                });
                (*operation, rate)
            })
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
        ranked
    }

    fn missing(
        &self,
        operation: &Operation,
        resource: &str,
        state: &ExploreState,
        goal: Option<&Goal>,
    ) -> Vec<String> {
        self.flow
            .needs
            .get(&operation.id)
            .into_iter()
            .flatten()
            .filter(|input| {
                let value = match operation.parameters.iter().find(|p| p.name == **input) {
                    Some(parameter) => self.value_of(goal, operation, parameter, state),
                    None => state.value_for(input, resource),
                };
                value.is_none()
            })
            .cloned()
            .collect()
    }

    /// The value of `parameter` of `operation`: an id the target named, else a value a person
    /// or the SUT gave (scoped to its resource, or by name), else what the spec's links say (`createPost`'s `id` feeds `getPost`'s `postId`),
    /// else what the state gives by name or by position in the path.
    fn value_of(
        &self,
        goal: Option<&Goal>,
        operation: &Operation,
        parameter: &Parameter,
        state: &ExploreState,
    ) -> Option<Value> {
        literal_id(goal, operation, parameter)
            .or_else(|| gone_id(goal, operation, parameter, state))
            .or_else(|| state.given_value(operation, parameter))
            .or_else(|| self.linked_value(operation, parameter, state))
            .or_else(|| state.value_for_parameter(operation, parameter))
    }

    /// The value the spec's links give `parameter` of `operation`: the linked field of the
    /// latest resource an operation linking to it made or read.
    fn linked_value(
        &self,
        operation: &Operation,
        parameter: &Parameter,
        state: &ExploreState,
    ) -> Option<Value> {
        self.spec.operations.iter().find_map(|producer| {
            producer.links.iter().find_map(|link| {
                let LinkSource::Body(field) = &link.source else {
                    return None;
                };
                if !link.feeds(operation) || !names::same_name(&link.parameter, &parameter.name) {
                    return None;
                }
                state.field_of_latest(&operation_resource(producer), field)
            })
        })
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "one place builds every suggestion"
    )]
    fn finish(
        &self,
        operation: &Operation,
        goal: Option<Goal>,
        confidence: f64,
        source: Source,
        reason: String,
        alternatives: Vec<String>,
        resource: &str,
        state: &ExploreState,
    ) -> Suggestion {
        let mut inputs = IndexMap::new();
        for parameter in &operation.parameters {
            if let Some(value) = self.value_of(goal.as_ref(), operation, parameter, state) {
                inputs.insert(parameter.input.clone(), value);
            }
        }
        if operation.method == intent::CLI_METHOD {
            // The command line: what the target quoted (with the tool's name put first when
            // the quote leaves it out), else the tool's usual command (its description).
            let tool = operation_resource(operation);
            let command = goal
                .as_ref()
                .and_then(|goal| goal.command.clone())
                .map(|quoted| {
                    if quoted.split_whitespace().next() == Some(tool.as_str()) {
                        quoted
                    } else {
                        format!("{tool} {quoted}")
                    }
                })
                .unwrap_or_else(|| operation.description.clone());
            inputs.insert("command".to_owned(), Value::from(command));
        }
        // The word the target used for the resource, where a body field offers it as a
        // value ("create a file": `type: file`).
        if let Some(goal) = goal.as_ref().filter(|goal| does(goal, operation))
            && let Some(noun) = &goal.noun
        {
            for parameter in &operation.parameters {
                let offered = parameter.enum_values.iter().find(|value| {
                    value
                        .as_str()
                        .is_some_and(|text| text.eq_ignore_ascii_case(noun))
                });
                if parameter.location == ParameterLocation::Body
                    && let Some(value) = offered
                    && !inputs.contains_key(&parameter.input)
                {
                    inputs.insert(parameter.input.clone(), value.clone());
                }
            }
        }
        // The values the target gives for this goal go into its own request.
        let mut unplaced = Vec::new();
        if let Some(goal) = goal.as_ref().filter(|goal| takes_values(goal, operation)) {
            unplaced = crate::placing::place(operation, &goal.values, &mut inputs);
        }
        let mut missing = self.missing(operation, resource, state, goal.as_ref());
        missing.retain(|name| {
            let input = operation
                .parameters
                .iter()
                .find(|parameter| parameter.name == *name)
                .map_or(name.as_str(), |parameter| parameter.input.as_str());
            !inputs.contains_key(input)
        });
        missing.extend(unplaced);
        let pitfalls: Vec<String> = self
            .knowledge
            .as_ref()
            .map(|queries| {
                // A value scoped to a resource (`cluster.region`) answers a pitfall about its
                // field (`region`) as well.
                let names: Vec<String> = state
                    .variables
                    .keys()
                    .flat_map(|name| {
                        let field = name.split_once('.').map(|(_, field)| field.to_owned());
                        std::iter::once(name.clone()).chain(field)
                    })
                    .collect();
                queries
                    .check_pitfalls(&operation.id, &state.resource_states(), &names)
                    .iter()
                    .map(|warning| {
                        format!("{} ({})", warning.pitfall.name, warning.because.join("; "))
                    })
                    .collect()
            })
            .unwrap_or_default();
        // A call missing what the spec requires is doomed: far less sure, and it is asked
        // about before it is sent.
        let unfilled = if missing.is_empty() {
            0.0
        } else {
            MISSING_PENALTY
        };
        let confidence = (confidence - 0.1 * pitfalls.len() as f64 - unfilled).clamp(0.0, 1.0);
        Suggestion {
            operation: operation.id.clone(),
            goal,
            confidence,
            source,
            reason,
            alternatives,
            pitfalls,
            inputs,
            missing,
            wait_for: None,
        }
    }
}

/// The id the target named for a resource (`344` of "update post 344", `10086` of "create a
/// branch on cluster 10086"), for the parameter of `operation` that holds that resource's id
/// (a path parameter by its position or name, a body or query field by its name): a number
/// when the spec types the parameter so.
fn literal_id(goal: Option<&Goal>, operation: &Operation, parameter: &Parameter) -> Option<Value> {
    let goal = goal?;
    let owner = match parameter.location {
        ParameterLocation::Path => names::path_parameter_resource(&operation.path, &parameter.name)
            .or_else(|| names::id_kind(&parameter.name)),
        ParameterLocation::Body | ParameterLocation::Query => names::id_kind(&parameter.name),
        _ => None,
    }?;
    let owner = names::normalize(&owner);
    let own = (names::normalize(&goal.resource) == owner)
        .then_some(goal.id.as_ref())
        .flatten();
    let id = own.or_else(|| {
        goal.given
            .iter()
            .find(|(resource, _)| names::normalize(resource) == owner)
            .map(|(_, id)| id)
    })?;
    let number = matches!(parameter.kind.as_deref(), Some("integer" | "number"))
        .then(|| id.parse::<u64>().ok().map(Value::from))
        .flatten();
    Some(number.unwrap_or_else(|| Value::from(id.clone())))
}

/// For a goal that expects an error ("then reading it gives 404"), the id of its resource
/// as this session deleted it: the path parameter that holds the goal's resource's id.
fn gone_id(
    goal: Option<&Goal>,
    operation: &Operation,
    parameter: &Parameter,
    state: &ExploreState,
) -> Option<Value> {
    let goal = goal.filter(|goal| goal.expect.is_some_and(|status| status >= 400))?;
    let owner = crate::state::owner_of(operation, parameter);
    (parameter.location == ParameterLocation::Path
        && names::normalize(&owner) == names::normalize(&goal.resource))
    .then(|| state.gone_id(&owner))
    .flatten()
}

/// True when `operation` does `goal` itself and the goal gives values to send: a create, an
/// update or an action (a read's values are what it checks, not what it sends).
fn takes_values(goal: &Goal, operation: &Operation) -> bool {
    !goal.values.is_empty()
        && matches!(goal.verb, Verb::Create | Verb::Update | Verb::Action(_))
        && does(goal, operation)
}

/// True when `operation` does `goal` itself (not a step toward it).
fn does(goal: &Goal, operation: &Operation) -> bool {
    operation_resource(operation) == goal.resource && intent::operation_verb(operation) == goal.verb
}

fn verb_word(verb: &Verb) -> String {
    match verb {
        Verb::Create => "create".to_owned(),
        Verb::Read => "read".to_owned(),
        Verb::List => "list".to_owned(),
        Verb::Update => "update".to_owned(),
        Verb::Delete => "delete".to_owned(),
        Verb::Action(action) => action.clone(),
    }
}
