//! The flow of one workflow's run: what each step sends (its parameters and body rendered from
//! the values so far), whether it succeeded (its success criteria over the response), what it
//! gives (its outputs), and what follows (its actions, then its workflow's, then the defaults).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use indexmap::IndexMap;
use serde_json::{Map, Value, json};
use wayline_core::{HttpResponse, Jump, Run, RunObserver, StepStatus};
use wayline_executor::flow::{Call, Finished, Flow, Next as EngineNext, Settled, Starting};
use wayline_executor::{CancelToken, Engine, RunOptions, parse_retry_after};

use super::compile::{Action, BODY, Compiled, step_parameters};
use super::render::{render_payload, select};
use super::{Runner, WorkflowRun};
use crate::actions::{Chosen, Next, Target, after_failure, after_success};
use crate::criteria::passes_within;
use crate::model::{
    ArazzoDocument, ExpressionKind, ParameterLocation, SelectorType, Step, Workflow,
};
use crate::runtime::{Exchange, Values, WorkflowValues, as_text};

/// One workflow's run in progress.
pub(super) struct Control<'a> {
    runner: &'a Runner,
    engine: &'a Engine,
    document: &'a ArazzoDocument,
    workflow: &'a Workflow,
    compiled: &'a Compiled,
    values: Values,
    positions: HashMap<&'a str, usize>,
    /// What each step's latest execution sent, for `$request.…`.
    sent: Vec<Option<Exchange>>,
    /// Retries of each step since it last succeeded.
    retries: Vec<u64>,
    /// Steps a retry runs first → the step retried after them.
    returns: HashMap<usize, usize>,
    last_status: Option<u16>,
    /// A workflow a `goto` passed control to, with its inputs.
    transfer: Option<Called>,
    /// Per step, a workflow a retry runs before the step's next execution.
    first: Vec<Option<Called>>,
    /// Per step, whether its current execution is such a workflow's run.
    running_first: Vec<bool>,
    calls: Arc<Mutex<Vec<WorkflowRun>>>,
    /// How deep in workflow calls this run is.
    depth: usize,
    /// Values masked in this run, and so in the runs of the workflows it calls.
    masked: Vec<String>,
    /// This run's own observers, told the events of the runs of the workflows it calls too.
    observers: Vec<Arc<dyn RunObserver>>,
    /// When the run stops (see [`Lineage::stop`]).
    stop: (Option<CancelToken>, Option<std::time::Instant>),
}

/// A workflow to run (of this document or another), and its inputs.
#[derive(Clone)]
pub(super) struct Called {
    pub(super) runner: Runner,
    pub(super) workflow: String,
    pub(super) inputs: Map<String, Value>,
}

/// Where a run stands among the runs that led to it: how deep in workflow calls, and the
/// values masked there (which the runs it leads to mask too).
pub(super) struct Lineage {
    pub(super) depth: usize,
    pub(super) masked: Vec<String>,
    /// The run's own observers ([`RunOptions::observer`]).
    pub(super) observers: Vec<Arc<dyn RunObserver>>,
    /// When the run stops: its cancel token and the instant of its deadline.
    pub(super) stop: (Option<CancelToken>, Option<std::time::Instant>),
}

/// A finished workflow, and where control went after it.
pub(super) struct Ended {
    pub(super) run: WorkflowRun,
    pub(super) transfer: Option<Called>,
}

impl<'a> Control<'a> {
    pub(super) fn new(
        runner: &'a Runner,
        engine: &'a Engine,
        compiled: &'a Compiled,
        inputs: Map<String, Value>,
        dependencies: &[WorkflowRun],
        calls: Arc<Mutex<Vec<WorkflowRun>>>,
        Lineage {
            depth,
            masked,
            observers,
            stop,
        }: Lineage,
    ) -> Self {
        let document = &runner.inner.document;
        let workflow = &document.workflows[compiled.index];
        let mut values = Values::new(document, inputs);
        for dependency in dependencies {
            remember(&mut values, dependency);
        }
        let count = workflow.steps.len();
        Control {
            runner,
            engine,
            document,
            workflow,
            compiled,
            values,
            positions: workflow
                .steps
                .iter()
                .enumerate()
                .map(|(position, step)| (step.step_id.as_str(), position))
                .collect(),
            sent: vec![None; count],
            retries: vec![0; count],
            returns: HashMap::new(),
            last_status: None,
            transfer: None,
            first: vec![None; count],
            running_first: vec![false; count],
            calls,
            depth,
            masked,
            observers,
            stop,
        }
    }

    /// Whether the run has stopped: cancelled, or past its deadline.
    fn stopped(&self) -> bool {
        let (cancel, deadline) = &self.stop;
        cancel.as_ref().is_some_and(CancelToken::is_cancelled)
            || deadline.is_some_and(|deadline| std::time::Instant::now() >= deadline)
    }

    /// The run as it ended: the workflow's outputs read, its values kept for whoever reads
    /// `$workflows.ID.…`.
    pub(super) fn finish(mut self, run: Run, dependencies: Vec<WorkflowRun>) -> Ended {
        self.forget_exchange();
        let mut outputs = Map::new();
        let mut output_errors = Vec::new();
        for (name, selectable) in &self.workflow.outputs {
            match select(selectable, &self.values, &|| self.stopped()) {
                Ok(value) => {
                    outputs.insert(name.clone(), value);
                }
                Err(error) => output_errors.push(format!("output `{name}`: {error}")),
            }
        }
        let values = WorkflowValues {
            inputs: self.values.inputs.clone(),
            outputs: outputs.clone(),
            steps: std::mem::take(&mut self.values.steps),
        };
        Ended {
            run: WorkflowRun {
                workflow_id: self.workflow.workflow_id.clone(),
                run,
                outputs,
                output_errors,
                dependencies,
                calls: Vec::new(),
                values,
                last_status: self.last_status,
            },
            transfer: self.transfer,
        }
    }

    fn forget_exchange(&mut self) {
        self.values.url = None;
        self.values.method = None;
        self.values.status = None;
        self.values.request = None;
        self.values.response = None;
        self.values.outputs = Map::new();
    }

    /// The inputs of an operation step's tool, and what they send.
    fn operation_inputs(
        &self,
        step: &Step,
        parameters: &[(String, crate::model::Parameter)],
        content_type: Option<&str>,
    ) -> Result<(IndexMap<String, Value>, Exchange), String> {
        let mut inputs = IndexMap::new();
        let mut sent = Exchange::default();
        for (input, parameter) in parameters {
            let value = select(&parameter.value, &self.values, &|| self.stopped())
                .map_err(|error| format!("parameter `{}`: {error}", parameter.name))?;
            match parameter.location {
                Some(ParameterLocation::Header | ParameterLocation::Cookie) => {
                    sent.headers.push((parameter.name.clone(), as_text(&value)));
                    inputs.insert(input.clone(), Value::String(as_text(&value)));
                }
                Some(ParameterLocation::Query) => {
                    sent.query.push((parameter.name.clone(), as_text(&value)));
                    inputs.insert(input.clone(), value);
                }
                Some(ParameterLocation::Querystring) => {
                    let text = as_text(&value);
                    sent.query
                        .extend(text.split('&').filter(|pair| !pair.is_empty()).map(|pair| {
                            match pair.split_once('=') {
                                Some((name, value)) => (name.to_owned(), value.to_owned()),
                                None => (pair.to_owned(), String::new()),
                            }
                        }));
                    inputs.insert(input.clone(), Value::String(text));
                }
                _ => {
                    sent.path.insert(parameter.name.clone(), value.clone());
                    inputs.insert(input.clone(), value);
                }
            }
        }
        if content_type.is_some() {
            let body = step.request_body.as_ref();
            let mut payload = match body.and_then(|body| body.payload.as_ref()) {
                Some(payload) => render_payload(payload, content_type, &self.values)
                    .map_err(|error| format!("request body: {error}"))?,
                None => Value::Null,
            };
            for replacement in body.iter().flat_map(|body| &body.replacements) {
                if let Some(
                    SelectorType::Named(ExpressionKind::Jsonpath | ExpressionKind::Xpath)
                    | SelectorType::Versioned(_),
                ) = &replacement.target_selector_type
                {
                    return Err(format!(
                        "replacement of `{}`: only JSON Pointer targets are replaced by wayline",
                        replacement.target
                    ));
                }
                let value = select(&replacement.value, &self.values, &|| self.stopped())
                    .map_err(|error| format!("replacement of `{}`: {error}", replacement.target))?;
                let target = replacement.target.trim_start_matches('#');
                match payload.pointer_mut(target) {
                    Some(slot) => *slot = value,
                    None => {
                        return Err(format!(
                            "replacement target `{}` is not in the payload",
                            replacement.target
                        ));
                    }
                }
            }
            sent.body = Some(payload.clone());
            inputs.insert(BODY.to_owned(), payload);
        }
        Ok((inputs, sent))
    }

    /// The work of a step that calls a workflow: that workflow's run, kept in `calls`.
    fn workflow_call(
        &self,
        step: &Step,
        runner: &Runner,
        id: &str,
        starting: Starting<'_>,
    ) -> Result<Call, String> {
        let mut inputs = Map::new();
        for parameter in step_parameters(&[], &step.parameters, self.document.components.as_ref()) {
            let value = select(&parameter.value, &self.values, &|| self.stopped())
                .map_err(|error| format!("parameter `{}`: {error}", parameter.name))?;
            inputs.insert(parameter.name.clone(), value);
        }
        let called = Called {
            runner: runner.clone(),
            workflow: id.to_owned(),
            inputs,
        };
        Ok(self.call_workflow(called, starting))
    }

    /// The run of `called` as the work of the execution `starting`, kept in `calls`.
    fn call_workflow(&self, called: Called, starting: Starting<'_>) -> Call {
        let engine = self.engine.clone();
        let calls = Arc::clone(&self.calls);
        let mut options = RunOptions::new()
            .run_id(called_run_id(starting))
            .mask(self.masked.iter().cloned());
        for observer in &self.observers {
            options = options.observer(Arc::clone(observer));
        }
        if let Some(cancel) = &self.stop.0 {
            options = options.cancel(cancel.clone());
        }
        let depth = self.depth + 1;
        Call::Own(Box::pin(async move {
            let ran = called
                .runner
                .run_at(
                    engine,
                    called.workflow,
                    called.inputs,
                    options,
                    super::Depth::Nested(depth),
                )
                .await
                .map_err(|error| error.to_string())?;
            let run_id = ran.run.id.clone();
            lock(&calls).push(ran);
            Ok(json!({ "run_id": run_id }))
        }))
    }

    /// Whether a finished step succeeded, and why not.
    fn judge(
        &mut self,
        step: &Step,
        finished: &Finished<'_>,
        position: usize,
    ) -> Result<(), String> {
        match &self.compiled.actions[position] {
            Action::Workflow(id) | Action::External { workflow: id, .. } => {
                let Some(ran) = called_run(&self.calls, finished) else {
                    return Err(finished
                        .result
                        .error
                        .clone()
                        .unwrap_or_else(|| format!("workflow `{id}` did not run")));
                };
                self.values.status = ran.last_status;
                self.values.outputs = ran.outputs.clone();
                remember(&mut self.values, &ran);
                if !ran.succeeded() {
                    return Err(format!("workflow `{id}` failed (run {})", ran.run.id));
                }
                drop(ran);
                self.criteria(step)
            }
            _ => {
                let Some(reply) = finished.reply else {
                    return Err(finished
                        .result
                        .error
                        .clone()
                        .unwrap_or_else(|| "no response".to_owned()));
                };
                self.see(reply, finished, position);
                if step.success_criteria.is_empty() && reply.status >= 400 {
                    return Err(format!("HTTP {} and no success criteria", reply.status));
                }
                self.criteria(step)
            }
        }
    }

    /// Makes the step's request and response what expressions read.
    fn see(&mut self, reply: &HttpResponse, finished: &Finished<'_>, position: usize) {
        self.last_status = Some(reply.status);
        self.values.status = Some(reply.status);
        let body = serde_json::from_slice(&reply.body)
            .ok()
            .or_else(|| (!reply.body.is_empty()).then(|| Value::String(reply.text().into_owned())));
        self.values.response = Some(Exchange::new(reply.headers.clone(), body));
        self.values.request = self.sent[position].clone();
        if let Some(request) = &finished.result.request {
            self.values.url = Some(request.url.clone());
            self.values.method = Some(request.method.clone());
        }
    }

    fn criteria(&self, step: &Step) -> Result<(), String> {
        for criterion in &step.success_criteria {
            match passes_within(criterion, &self.values, &|| self.stopped()) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(format!(
                        "success criterion `{}` does not hold",
                        criterion.condition
                    ));
                }
                Err(error) => return Err(format!("success criterion: {error}")),
            }
        }
        Ok(())
    }

    /// The step's outputs, read from what it gave.
    fn outputs(&self, step: &Step) -> Result<Map<String, Value>, String> {
        let mut outputs = Map::new();
        for (name, selectable) in &step.outputs {
            let value = select(selectable, &self.values, &|| self.stopped())
                .map_err(|error| format!("output `{name}`: {error}"))?;
            outputs.insert(name.clone(), value);
        }
        Ok(outputs)
    }

    /// The workflow `written` names (of this document, or `$sourceDescriptions.NAME.ID` of
    /// another), with `parameters` rendered as its inputs.
    fn called(
        &self,
        written: &str,
        parameters: &[crate::model::Reusable<crate::model::Parameter>],
    ) -> Result<Called, String> {
        let (runner, workflow) = match crate::sources::source_reference(written) {
            Some((source, id)) => {
                let runner = self.runner.other(source).ok_or_else(|| {
                    format!("source `{source}` is not an Arazzo document that was read")
                })?;
                (runner.clone(), id.to_owned())
            }
            None => (self.runner.clone(), written.to_owned()),
        };
        let mut inputs = Map::new();
        let components = self.document.components.as_ref();
        for parameter in step_parameters(&[], parameters, components) {
            let value = select(&parameter.value, &self.values, &|| self.stopped())
                .map_err(|error| format!("parameter `{}`: {error}", parameter.name))?;
            inputs.insert(parameter.name.clone(), value);
        }
        Ok(Called {
            runner,
            workflow,
            inputs,
        })
    }

    /// What follows: the engine's next move, or why the step fails after all.
    fn follow(&mut self, chosen: Chosen, position: usize) -> Result<EngineNext, String> {
        let named = |what: &str| match &chosen.name {
            Some(name) => format!("action `{name}`: {what}"),
            None => what.to_owned(),
        };
        Ok(match chosen.next {
            Next::Continue => EngineNext::Continue,
            Next::End => EngineNext::End,
            Next::Goto(Target::Step(step)) => EngineNext::Goto(step),
            Next::Goto(Target::Workflow { id, parameters }) => {
                self.transfer = Some(self.called(&id, &parameters).map_err(|why| named(&why))?);
                EngineNext::End
            }
            Next::Retry {
                after,
                limit,
                first,
            } => {
                if self.retries[position] >= limit {
                    return Err(named(&format!(
                        "gave up after {limit} retr{}",
                        if limit == 1 { "y" } else { "ies" }
                    )));
                }
                self.retries[position] += 1;
                match first {
                    // The step runs first; once it succeeds, control comes back here (its own
                    // success actions give way), without the wait.
                    Some(Target::Step(first)) => {
                        let Some(&runs_first) = self.positions.get(first.as_str()) else {
                            return Err(named(&format!("no step `{first}` in the workflow")));
                        };
                        self.returns.insert(runs_first, position);
                        EngineNext::Goto(first)
                    }
                    // The workflow runs as the step's next execution, after the wait; the step
                    // itself then runs again at once.
                    Some(Target::Workflow { id, parameters }) => {
                        self.first[position] =
                            Some(self.called(&id, &parameters).map_err(|why| named(&why))?);
                        EngineNext::Retry(after)
                    }
                    None => EngineNext::Retry(after),
                }
            }
        })
    }
}

impl Flow for Control<'_> {
    fn call(&mut self, starting: Starting<'_>) -> Result<Call, String> {
        let position = *self
            .positions
            .get(starting.step_id)
            .ok_or_else(|| format!("no step `{}` in the workflow", starting.step_id))?;
        let step = &self.workflow.steps[position];
        if let Some(called) = self.first[position].take() {
            self.running_first[position] = true;
            return Ok(self.call_workflow(called, starting));
        }
        match &self.compiled.actions[position] {
            Action::Operation {
                parameters,
                content_type,
            } => {
                let (inputs, sent) =
                    self.operation_inputs(step, parameters, content_type.as_deref())?;
                self.sent[position] = Some(sent);
                Ok(Call::Tool(inputs))
            }
            Action::Workflow(id) => self.workflow_call(step, self.runner, id, starting),
            Action::External { source, workflow } => match self.runner.other(source) {
                Some(other) => self.workflow_call(step, other, workflow, starting),
                None => Err(format!(
                    "source `{source}` names an Arazzo document that could not be compiled (does it name this one back?)"
                )),
            },
            Action::Unrunnable(why) => Err(why.clone()),
        }
    }

    fn restore(&mut self, finished: Finished<'_>) {
        let Some(&position) = self.positions.get(finished.step_id) else {
            return;
        };
        let result = finished.result;
        if result.response_status.is_some() {
            self.last_status = result.response_status;
        }
        match (&result.jump, result.status) {
            (Some(Jump::Retry { .. }), _) => self.retries[position] += 1,
            (_, StepStatus::Success) => {
                self.retries[position] = 0;
                if let Value::Object(outputs) = &result.output_data {
                    self.values
                        .steps
                        .insert(finished.step_id.to_owned(), outputs.clone());
                }
            }
            _ => {}
        }
    }

    fn settle(&mut self, finished: Finished<'_>) -> Settled {
        let Some(&position) = self.positions.get(finished.step_id) else {
            return Settled::failure(format!("no step `{}` in the workflow", finished.step_id));
        };
        let workflow = self.workflow;
        let step = &workflow.steps[position];
        if std::mem::take(&mut self.running_first[position]) {
            return self.after_first(&finished);
        }
        let judged = self
            .judge(step, &finished, position)
            .and_then(|()| self.outputs(step));
        let verdict = match judged {
            Ok(outputs) => {
                self.retries[position] = 0;
                self.values
                    .steps
                    .insert(step.step_id.clone(), outputs.clone());
                let next = match self.returns.remove(&position) {
                    Some(retried) => Ok(EngineNext::Goto(workflow.steps[retried].step_id.clone())),
                    None => after_success(self.document, workflow, step, &self.values)
                        .map_err(|error| format!("success action: {error}"))
                        .and_then(|chosen| self.follow(chosen, position)),
                };
                match next {
                    Ok(next) => Settled::success(Value::Object(outputs)).then(next),
                    Err(reason) => Settled::failure(reason),
                }
            }
            Err(reason) => {
                let retry_after = finished
                    .reply
                    .and_then(|reply| reply.header("retry-after"))
                    .and_then(|value| parse_retry_after(value, SystemTime::now()));
                let next = after_failure(self.document, workflow, step, &self.values, retry_after)
                    .map_err(|error| format!("failure action: {error}"))
                    .and_then(|chosen| self.follow(chosen, position));
                match next {
                    Ok(next) => Settled::failure(reason).then(next),
                    Err(also) => Settled::failure(format!("{reason}; {also}")),
                }
            }
        };
        self.forget_exchange();
        verdict
    }
}

/// The run id of the workflow a step's execution calls: the caller's run id and the step's
/// (`RUN.STEP`, then `RUN.STEP#2`… for later executions).
fn called_run_id(starting: Starting<'_>) -> String {
    if starting.execution == 1 {
        format!("{}.{}", starting.run_id, starting.step_id)
    } else {
        format!(
            "{}.{}#{}",
            starting.run_id, starting.step_id, starting.execution
        )
    }
}

impl Control<'_> {
    /// The verdict on the run of a workflow a retry ran before the step: on to the step's
    /// retry at once when it succeeded (its values kept for `$workflows.ID.…`), the end of
    /// the workflow when it did not.
    fn after_first(&mut self, finished: &Finished<'_>) -> Settled {
        let Some(ran) = called_run(&self.calls, finished) else {
            return Settled::failure(format!(
                "the workflow a retry runs first did not run: {}",
                finished
                    .result
                    .error
                    .as_deref()
                    .unwrap_or("no reason given")
            ));
        };
        remember(&mut self.values, &ran);
        if !ran.succeeded() {
            return Settled::failure(format!(
                "workflow `{}`, which a retry runs first, failed (run {})",
                ran.workflow_id, ran.run.id
            ));
        }
        Settled::success(json!({"ran_first": ran.workflow_id, "run_id": ran.run.id}))
            .then(EngineNext::Retry(std::time::Duration::ZERO))
    }
}

/// The run of the workflow a finished execution ran (its output names the run).
fn called_run<'c>(
    calls: &'c Mutex<Vec<WorkflowRun>>,
    finished: &Finished<'_>,
) -> Option<CalledRun<'c>> {
    let run_id = finished.result.output_data["run_id"].as_str()?;
    let runs = lock(calls);
    let index = runs.iter().rposition(|ran| ran.run.id == run_id)?;
    Some(CalledRun { runs, index })
}

/// One run among the runs a workflow's steps called, read in place.
struct CalledRun<'c> {
    runs: MutexGuard<'c, Vec<WorkflowRun>>,
    index: usize,
}

impl std::ops::Deref for CalledRun<'_> {
    type Target = WorkflowRun;

    fn deref(&self) -> &WorkflowRun {
        &self.runs[self.index]
    }
}

/// The runs a workflow's steps called. Only pushed to and read between awaits, so a panic
/// while it is held leaves nothing half-made: a poisoned lock is taken as it is.
pub(super) fn lock(calls: &Mutex<Vec<WorkflowRun>>) -> MutexGuard<'_, Vec<WorkflowRun>> {
    calls
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Keeps what `$workflows.ID.…` reads of a workflow that ran (and of those it depended on).
fn remember(values: &mut Values, ran: &WorkflowRun) {
    for dependency in &ran.dependencies {
        remember(values, dependency);
    }
    values
        .workflows
        .insert(ran.workflow_id.clone(), ran.values.clone());
}

/// The workflows `workflow`'s actions can pass control to or run first.
pub(super) fn workflow_targets(document: &ArazzoDocument, workflow: &Workflow) -> Vec<String> {
    let components = document.components.as_ref();
    let success = workflow
        .steps
        .iter()
        .flat_map(|step| &step.on_success)
        .chain(&workflow.success_actions)
        .filter_map(|action| crate::actions::success_action(action, components))
        .filter_map(|action| action.workflow_id.clone());
    let failure = workflow
        .steps
        .iter()
        .flat_map(|step| &step.on_failure)
        .chain(&workflow.failure_actions)
        .filter_map(|action| crate::actions::failure_action(action, components))
        .filter_map(|action| action.workflow_id.clone());
    success.chain(failure).collect()
}
