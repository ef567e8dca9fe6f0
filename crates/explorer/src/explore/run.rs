//! The loop: while the target is not reached, suggest the next step, fill the inputs it misses
//! or have it confirmed (by the intervention matrix), run it through the engine (polling when
//! it waits for a state), record what it gave (variables and states by the rules of
//! `ExploreState::apply`, or a person's word on an error), save the session, and learn.

use std::collections::HashMap;
use std::time::Instant;

use chrono::Utc;
use serde_json::{Value, json};
use wayline_knowledge::{Knowledge, Queries};
use wayline_registry::openapi::Operation;

use super::asking::Asked;
use super::calls::Ran;
use super::learning::ran_outcome;
use super::recovery::{MAX_STRIKES, Recovery};
use super::{Explorer, round};
use crate::Error;
use crate::exploration::{Choice, ConfirmedStep, Exploration, ExplorationStatus, RejectedStep};
use crate::intent::{self, Goal};
use crate::intervention::{Assessment, decide};
use crate::state::redact;
use crate::suggest::{Suggester, Suggestion};

/// What one call of [`Explorer::run`] keeps from step to step.
struct Pass {
    counts: Counts,
    /// Read once; what this call learns is applied to it as well as to the store.
    knowledge: Knowledge,
    /// The first learning that was not saved: the exploration goes on, and ends with it.
    unsaved: Option<Error>,
    /// The target as last read, and its goals (read again only when an answer rewrites it).
    target: String,
    goals: Vec<Goal>,
}

/// What bounds the questions and failures of one call.
#[derive(Default)]
struct Counts {
    /// Steps run without a question since the last one (the matrix asks after too many).
    silent: u32,
    /// Failures and refusals per operation: a step that keeps failing (or being declined)
    /// ends the session instead of being suggested forever.
    strikes: HashMap<String, u32>,
    /// Questions for missing inputs per operation, bounded the same way.
    asked_for: HashMap<String, u32>,
}

/// What the loop does after a step.
enum Then {
    /// Takes the next step, while the session is in progress.
    Next,
    /// Stops; the session is saved once, after the loop.
    Stop,
}

/// A suggestion the matrix or a person let run, or what the loop does instead.
enum Confirmed {
    Run(Box<Suggestion>),
    Then(Then),
}

impl Explorer {
    /// Explores until the target is reached, a person stops it, or `max_steps` steps ran;
    /// the session is saved after every step. Knowledge that cannot be read stops it before
    /// the first call; knowledge that cannot be saved ends it with [`Error::KnowledgeUnsaved`] once
    /// the session is saved.
    pub async fn run(&self, session: &mut Exploration) -> Result<(), Error> {
        let started = Instant::now();
        let began_in_progress = session.session.status == ExplorationStatus::InProgress;
        let mut pass = Pass {
            counts: Counts::default(),
            knowledge: self.load_knowledge().await?,
            unsaved: None,
            target: session.session.target.clone(),
            goals: intent::parse(&session.session.target, &self.spec),
        };
        // After `max_steps` the session stays in progress: resume it.
        let mut steps = 0u32;
        while session.session.status == ExplorationStatus::InProgress && steps < self.max_steps {
            steps += 1;
            if let Then::Stop = self.step(session, &mut pass).await? {
                break;
            }
        }
        if session.session.status == ExplorationStatus::InProgress {
            session.stop_reason = Some(format!(
                "the step limit of one call ({}) was reached; resume the session to go on",
                self.max_steps
            ));
        }
        // The whole session, once, as a pattern for the target: when it was completed by this
        // call (a resumed completed session is not learned again) and no goal was skipped.
        if began_in_progress
            && session.session.status == ExplorationStatus::Completed
            && session.rejected_steps.is_empty()
        {
            let observation = self.session_observation(session, started.elapsed());
            self.learn(&mut pass.knowledge, observation, &mut pass.unsaved)
                .await;
        }
        session.save(&self.session_dir, Utc::now())?;
        pass.unsaved.map_or(Ok(()), Err)
    }

    /// One step: the next suggestion, its missing inputs filled or its run confirmed, then
    /// the call and what it gave.
    async fn step(&self, session: &mut Exploration, pass: &mut Pass) -> Result<Then, Error> {
        if pass.target != session.session.target {
            pass.target = session.session.target.clone();
            pass.goals = intent::parse(&pass.target, &self.spec);
        }
        // The choices as they stand: a question below may add one, for the next step.
        let choices = session.choices.clone();
        let suggestion = {
            let suggester = Suggester::with_goals(
                &self.spec,
                &self.flow,
                &session.session.target,
                pass.goals.clone(),
                Some(Queries::new(&pass.knowledge).min_support(1)),
            )
            .choices(&choices);
            let confirmed = session.confirmed_operations();
            let Some(suggestion) =
                suggester.next(&session.current_state, &session.goals_done, &confirmed)
            else {
                session.end(
                    ExplorationStatus::Completed,
                    "every goal of the target is done",
                );
                return Ok(Then::Stop);
            };
            session.confidences.push(round(suggestion.confidence));
            // Required inputs nothing gives: made up (name-like ones, in auto mode) or asked
            // for before the call, never sent without.
            if !suggestion.missing.is_empty() && !suggestion.operation.is_empty() {
                return self
                    .fill_inputs(session, &mut pass.counts, &suggestion)
                    .await;
            }
            match self
                .confirm(session, &mut pass.counts, &suggester, suggestion)
                .await?
            {
                Confirmed::Run(suggestion) => *suggestion,
                Confirmed::Then(then) => return Ok(then),
            }
        };
        self.call(session, pass, suggestion).await
    }

    /// Fills the inputs `suggestion` misses (made up or asked for); answers that never fill
    /// them end the session, as failures do. The step itself runs once they are known.
    async fn fill_inputs(
        &self,
        session: &mut Exploration,
        counts: &mut Counts,
        suggestion: &Suggestion,
    ) -> Result<Then, Error> {
        let asked_before = session.interventions;
        match self.fill_missing(session, suggestion).await {
            Asked::Go(_) if session.interventions > asked_before => {
                let count = counts
                    .asked_for
                    .entry(suggestion.operation.clone())
                    .or_default();
                *count += 1;
                if *count >= MAX_STRIKES {
                    session.rejected_steps.push(RejectedStep {
                        operation_id: suggestion.operation.clone(),
                        error: format!(
                            "its inputs were asked for {MAX_STRIKES} times and are still missing: {}",
                            suggestion.missing.join(", ")
                        ),
                        user_action: "the session stopped".to_owned(),
                    });
                    session.end(
                        ExplorationStatus::Failed,
                        format!(
                            "`{}` needs {}, and nothing gave it after {MAX_STRIKES} questions",
                            suggestion.operation,
                            suggestion.missing.join(", ")
                        ),
                    );
                    return Ok(Then::Stop);
                }
            }
            Asked::Go(_) => {}
            Asked::Skip => {
                if self.strike(
                    session,
                    &mut counts.strikes,
                    &suggestion.operation,
                    "declined",
                ) {
                    return Ok(Then::Stop);
                }
            }
            Asked::Stop => return Ok(Then::Stop),
        }
        session.save(&self.session_dir, Utc::now())?;
        Ok(Then::Next)
    }

    /// Decides by the intervention matrix whether `suggestion` runs as it is or is put to a
    /// person first, who may choose another candidate, decline it, or stop.
    async fn confirm(
        &self,
        session: &mut Exploration,
        counts: &mut Counts,
        suggester: &Suggester<'_>,
        suggestion: Suggestion,
    ) -> Result<Confirmed, Error> {
        let mut assessment = Assessment::new(suggestion.confidence, suggestion.source);
        assessment.pitfalls = suggestion.pitfalls.clone();
        assessment.checkpoint = self.sut.is_checkpoint(&suggestion.operation);
        assessment.silent_steps = counts.silent;
        let decision = decide(&assessment, &self.thresholds);
        if !decision.action.asks() {
            counts.silent += 1;
            return Ok(Confirmed::Run(Box::new(suggestion)));
        }
        counts.silent = 0;
        match self
            .ask(session, &suggestion, decision.action, &decision.reason)
            .await
        {
            // Another candidate was chosen. For a goal, the choice is kept and the next step
            // suggests it (its own inputs asked for if missing; a retry retries it).
            Asked::Go(operation) if operation != suggestion.operation => {
                if let Some(goal) = &suggestion.goal {
                    session.choices.push(Choice {
                        goal: goal.clone(),
                        operation,
                    });
                    session.save(&self.session_dir, Utc::now())?;
                    return Ok(Confirmed::Then(Then::Next));
                }
                Ok(
                    match suggester.suggestion_for(
                        &operation,
                        suggestion.goal.clone(),
                        &session.current_state,
                    ) {
                        Some(chosen) if chosen.missing.is_empty() => {
                            Confirmed::Run(Box::new(chosen))
                        }
                        Some(chosen) => {
                            Confirmed::Then(self.fill_inputs(session, counts, &chosen).await?)
                        }
                        None => Confirmed::Then(Then::Stop),
                    },
                )
            }
            Asked::Go(_) => Ok(Confirmed::Run(Box::new(suggestion))),
            Asked::Skip => {
                // A wait declined: the resource is taken as settled, so the next suggestion
                // moves on instead of offering the same wait again.
                if let Some(wait) = &suggestion.wait_for {
                    session.current_state.settle(&wait.resource);
                }
                if self.strike(
                    session,
                    &mut counts.strikes,
                    &suggestion.operation,
                    "declined",
                ) {
                    return Ok(Confirmed::Then(Then::Stop));
                }
                session.save(&self.session_dir, Utc::now())?;
                Ok(Confirmed::Then(Then::Next))
            }
            Asked::Stop => Ok(Confirmed::Then(Then::Stop)),
        }
    }

    /// Runs `suggestion` (the session saved with it pending first, so a crash shows what was
    /// in flight) and records what it gave.
    async fn call(
        &self,
        session: &mut Exploration,
        pass: &mut Pass,
        suggestion: Suggestion,
    ) -> Result<Then, Error> {
        let Some(operation) = self.spec.operation(&suggestion.operation).cloned() else {
            session.end(
                ExplorationStatus::Failed,
                format!("the spec has no operation `{}`", suggestion.operation),
            );
            return Ok(Then::Stop);
        };
        // The safety rule, checked where every call passes: a collection-wide write runs
        // only when the target asked for the whole collection and the caller allowed it, or
        // a person said yes knowing what it does.
        if let Some(why) = crate::extent::collection_wide(&self.spec, &operation) {
            let asked_for = suggestion
                .goal
                .as_ref()
                .is_some_and(|goal| goal.whole_collection);
            if !(asked_for && self.allow_collection_writes) {
                match self
                    .allow_collection_write(session, &suggestion, &why, asked_for)
                    .await
                {
                    Asked::Go(_) => {}
                    Asked::Skip => {
                        if self.strike(session, &mut pass.counts.strikes, &operation.id, "declined")
                        {
                            return Ok(Then::Stop);
                        }
                        session.save(&self.session_dir, Utc::now())?;
                        return Ok(Then::Next);
                    }
                    Asked::Stop => return Ok(Then::Stop),
                }
            }
        }
        session.pending_step = Some(json!({
            "operation_id": operation.id,
            "inputs": redact(&json!(suggestion.inputs)),
        }));
        session.save(&self.session_dir, Utc::now())?;
        let until = suggestion.wait_for.as_ref().map(|wait| wait.condition());
        let mut ran = self
            .execute(&operation, &suggestion.inputs, until.as_deref())
            .await;
        // A wait that ended in a failed state is a failure of the step, not a success.
        if let Some(wait) = &suggestion.wait_for
            && ran.success
        {
            let reached = ran.output.get(&wait.field).and_then(Value::as_str);
            if reached != Some(wait.state.as_str()) {
                ran.success = false;
                ran.error = Some(format!(
                    "the {} reached {}, not {}",
                    wait.resource,
                    reached.unwrap_or("no state"),
                    wait.state
                ));
            }
        }
        session.pending_step = None;
        if let Some(why) = self.unexpected(&suggestion, &mut ran) {
            // The API answered, and not as the target says it should: no retry or question
            // changes that, and it is no failure of the API to learn.
            session.rejected_steps.push(RejectedStep {
                operation_id: operation.id.clone(),
                error: why.clone(),
                user_action: "the session stopped: the API did not do what the target expects"
                    .to_owned(),
            });
            session.end(
                ExplorationStatus::Failed,
                format!("`{}`: {why}", operation.id),
            );
            return Ok(Then::Stop);
        }
        if ran.success {
            self.record_success(session, pass, &operation, &suggestion, ran, until)
                .await;
        } else if let Then::Stop = self
            .record_failure(session, pass, &operation, &suggestion, &ran)
            .await
        {
            return Ok(Then::Stop); // the session is saved once it has ended
        }
        session.save(&self.session_dir, Utc::now())?;
        Ok(Then::Next)
    }

    /// Holds `ran` to what the target expects of its goal: the status it names ("gives 404")
    /// is a success, any other answer is not; a read of what an update with values changed
    /// shows those values. Why, when the answer is not what the target expects.
    fn unexpected(&self, suggestion: &Suggestion, ran: &mut Ran) -> Option<String> {
        let goal = suggestion.goal.as_ref()?;
        if let Some(expected) = goal.expect {
            if ran.status == Some(expected) {
                ran.success = true;
                ran.error = None;
                return None;
            }
            ran.success = false;
            return Some(match ran.status {
                Some(status) => format!("the target expects {expected}; the API answered {status}"),
                None => format!(
                    "the target expects {expected}; the call got no answer ({})",
                    ran.error.as_deref().unwrap_or("failed")
                ),
            });
        }
        if !ran.success || goal.verb != intent::Verb::Read || goal.values.is_empty() {
            return None;
        }
        let parameters = crate::envelope::item_parameters(&self.spec, &goal.resource);
        let found = crate::envelope::find(&ran.output, &goal.resource, &parameters);
        let differences = crate::placing::differences(found.object, &goal.values);
        if differences.is_empty() {
            return None;
        }
        ran.success = false;
        Some(format!(
            "the {} does not show the change the target asked for: {}",
            goal.resource,
            differences.join("; ")
        ))
    }

    /// A step that succeeded: the variables and states it gave, its goal done, the step
    /// confirmed, its numbers learned.
    async fn record_success(
        &self,
        session: &mut Exploration,
        pass: &mut Pass,
        operation: &Operation,
        suggestion: &Suggestion,
        ran: Ran,
        until: Option<String>,
    ) {
        // An expected error ("gives 404") says nothing of the resource.
        let saved = if ran.status.is_some_and(|status| status >= 400) {
            Vec::new()
        } else {
            session.current_state.apply(
                &self.spec,
                operation,
                &suggestion.inputs,
                &ran.output,
                ran.location.as_deref(),
            )
        };
        // A made-up value is spent by the create it was made for: the next one makes its own
        // (two posts do not get one title).
        if intent::operation_verb(operation) == intent::Verb::Create {
            for key in session.generated.keys() {
                session.current_state.variables.shift_remove(key);
            }
        }
        if let Some(goal) = &suggestion.goal
            && !session.goals_done.contains(goal)
        {
            session.goals_done.push(goal.clone());
        }
        session.confirmed_steps.push(ConfirmedStep {
            order: u32::try_from(session.confirmed_steps.len()).unwrap_or(u32::MAX),
            operation_id: operation.id.clone(),
            request: redact(&ran.request),
            response: json!({"status_code": ran.status, "body": redact(&ran.output)}),
            saved_variables: saved,
            goal: suggestion.goal.clone(),
            until,
            attempts: ran.attempts,
        });
        let outcome = ran_outcome(operation, true, None, ran.status);
        let observation = self.observe(session, operation, &outcome, ran.seconds);
        self.learn(&mut pass.knowledge, observation, &mut pass.unsaved)
            .await;
    }

    /// A step that failed: learned as a pitfall, counted, and put to a person (retry, skip
    /// its goal, or stop). [`Then::Stop`] when the failures ran out.
    async fn record_failure(
        &self,
        session: &mut Exploration,
        pass: &mut Pass,
        operation: &Operation,
        suggestion: &Suggestion,
        ran: &Ran,
    ) -> Then {
        let error = ran.error.clone().unwrap_or_else(|| "failed".to_owned());
        // A step the engine refused before any request (an input it lacks) says nothing of
        // the API: it is no statistic or pitfall of the operation.
        let refused_unsent = ran.status.is_none() && ran.attempts == 0;
        if !refused_unsent {
            let outcome = ran_outcome(operation, false, Some(error.clone()), ran.status);
            let observation = self.observe(session, operation, &outcome, ran.seconds);
            self.learn(&mut pass.knowledge, observation, &mut pass.unsaved)
                .await;
        }
        pass.counts.silent = 0;
        if self.strike(session, &mut pass.counts.strikes, &operation.id, "failed") {
            return Then::Stop;
        }
        match self.recover(session, operation, &error, ran.status).await {
            Recovery::Retry => {}
            Recovery::Skip(action) => {
                session.rejected_steps.push(RejectedStep {
                    operation_id: operation.id.clone(),
                    error,
                    user_action: action,
                });
                if let Some(goal) = &suggestion.goal {
                    session.goals_done.push(goal.clone());
                }
            }
            Recovery::Stop(action) => {
                session.end(
                    ExplorationStatus::Aborted,
                    format!(
                        "`{}` failed ({error}), and the answer was: {action}",
                        operation.id
                    ),
                );
                session.rejected_steps.push(RejectedStep {
                    operation_id: operation.id.clone(),
                    error,
                    user_action: action,
                });
            }
        }
        Then::Next
    }
}
