//! What a session teaches: each step's outcome as an observation (statistics and pitfalls),
//! and a completed session as a pattern for its target.

use serde_json::Value;
use wayline_knowledge::Knowledge;
use wayline_knowledge::learn::{AttemptSeen, RunObservation, StepSeen};
use wayline_knowledge::model::{Expect, PatternStep, RequestTemplate, SaveRule};
use wayline_registry::openapi::{Operation, ParameterLocation};

use crate::Error;
use crate::envelope::id_path;
use crate::exploration::{ConfirmedStep, Exploration};
use crate::intent::operation_resource;

use super::Explorer;

impl Explorer {
    /// The SUT's knowledge (empty without a store).
    pub(super) async fn load_knowledge(&self) -> Result<Knowledge, Error> {
        match &self.knowledge {
            Some(store) => store.load(&self.knowledge_key()).await.map_err(|source| {
                Error::KnowledgeUnreadable {
                    sut: self.sut.name.clone(),
                    key: self.knowledge_key(),
                    source,
                }
            }),
            None => Ok(Knowledge::new()),
        }
    }

    /// The key the SUT's knowledge is stored under (its name made safe for any store).
    fn knowledge_key(&self) -> String {
        wayline_knowledge::sut_key(&self.sut.name)
    }

    /// Learns `observation` into the store, and into `knowledge` (this run's copy of it, so
    /// the store is read once per run). Without a store nothing is learned. The first save
    /// that fails is kept in `unsaved`: the exploration goes on, and ends with that error.
    pub(super) async fn learn(
        &self,
        knowledge: &mut Knowledge,
        observation: RunObservation,
        unsaved: &mut Option<Error>,
    ) {
        let Some(store) = &self.knowledge else {
            return;
        };
        knowledge.learn(&observation);
        if let Err(source) = store
            .update(
                &self.knowledge_key(),
                Box::new(move |knowledge: &mut Knowledge| knowledge.learn(&observation)),
            )
            .await
        {
            tracing::warn!(error = %source, "what the session learned was not saved");
            unsaved.get_or_insert_with(|| Error::KnowledgeUnsaved {
                sut: self.sut.name.clone(),
                key: self.knowledge_key(),
                source,
            });
        }
    }

    /// A completed session as the pattern for its target: its confirmed steps, in order.
    pub(super) fn session_observation(
        &self,
        session: &Exploration,
        duration: std::time::Duration,
    ) -> RunObservation {
        let mut observation = RunObservation::default();
        observation.goal = session.session.target.clone();
        observation.succeeded = true;
        observation.duration_seconds = duration.as_secs_f64();
        observation.steps = session
            .confirmed_steps
            .iter()
            .map(|step| self.pattern_step(step))
            .collect();
        observation
    }

    /// A confirmed step as a step of the pattern the session teaches: its operation, how its
    /// request was made (method, path, the path parameters and body fields it sent), the ids it
    /// saved (`post_1` from `body.id`), and what it polled for. A plan recalled from the
    /// pattern links a later step's id to the step that saved it.
    fn pattern_step(&self, step: &ConfirmedStep) -> PatternStep {
        let mut pattern_step = PatternStep::default();
        pattern_step.operation_id = step.operation_id.clone();
        let Some(operation) = self.spec.operation(&step.operation_id) else {
            return pattern_step;
        };
        let sent = step.request.get("inputs").and_then(Value::as_object);
        let inputs_at = |location: ParameterLocation| -> Vec<String> {
            operation
                .parameters
                .iter()
                .filter(|parameter| parameter.location == location)
                .filter(|parameter| sent.is_some_and(|sent| sent.contains_key(&parameter.input)))
                .map(|parameter| parameter.input.clone())
                .collect()
        };
        let mut template = RequestTemplate::default();
        template.method = Some(operation.method.clone());
        template.path = Some(operation.path.clone());
        template.path_params = inputs_at(ParameterLocation::Path);
        template.body_keys = inputs_at(ParameterLocation::Body);
        pattern_step.request_template = Some(template);
        let resource = operation_resource(operation);
        for name in &step.saved_variables {
            let field = id_path(&self.spec, &step.response["body"], &resource)
                .unwrap_or_else(|| "id".into());
            let mut rule = SaveRule::default();
            rule.key = name.clone();
            rule.eval = format!("body.{field}");
            pattern_step.save.push(rule);
        }
        if let Some(until) = &step.until {
            let mut expect = Expect::default();
            expect.cel = Some(until.clone());
            pattern_step.expect = Some(expect);
            pattern_step.max_retries = Some(self.sut.execution.auto_mode.polling.max_retries);
            pattern_step.delay_after = Some(self.sut.execution.auto_mode.polling.delay_seconds);
        }
        pattern_step
    }

    /// A step's attempts and outcome as an observation (stats and pitfalls).
    pub(super) fn observe(
        &self,
        session: &Exploration,
        operation: &Operation,
        outcome: &StepSeen,
        seconds: f64,
    ) -> RunObservation {
        let mut observation = RunObservation::default();
        observation.goal = session.session.target.clone();
        let mut attempt = AttemptSeen::new(&operation.id, outcome.success, seconds * 1_000.0);
        attempt.status = outcome.status;
        attempt.error = outcome.error.clone();
        observation.attempts.push(attempt);
        observation.variables = session.current_state.variables.keys().cloned().collect();
        observation.producers = vec!["inputs".to_owned(); observation.variables.len()];
        let mut outcome = outcome.clone();
        outcome.variables_set = observation.variables.len();
        outcome.states = session.current_state.resource_states();
        observation.outcomes.push(outcome);
        observation.succeeded = false; // one step is not a pattern
        observation
    }
}

/// A step's outcome as the knowledge store sees it.
pub(super) fn ran_outcome(
    operation: &Operation,
    success: bool,
    error: Option<String>,
    status: Option<u16>,
) -> StepSeen {
    let mut seen = StepSeen::new("call", &operation.id, success);
    seen.error = error;
    seen.status = status;
    seen
}
