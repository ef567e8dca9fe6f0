//! Running one step: input validations, hooks, the call with its retries and polling, outputs,
//! output validations, and the step's record. The call is `attempt`'s (the attempt loop); what
//! is not an HTTP or `cli` call is answered as if it were one by `code` and `mcp`; a decision
//! step asks `decision`'s decider instead of calling anything.

mod attempt;
mod code;
mod decision;
mod mcp;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use indexmap::IndexMap;
use serde_json::{Map, Value};
use wayline_core::{
    AssertionResult, HttpResponse, RequestSummary, RunEvent, RunStore, Step, StepKind, StepRequest,
    StepResult, StepStatus, Verdict,
};

use crate::cancel::RunStop;
use crate::run::context::RunShared;
use crate::run::middleware::StepContext;
use crate::run::prepare::PreparedStep;
use crate::values::eval::{self, ResponseView, Scope};
use crate::values::validation::{self, Target};

/// A step ready to start: its inputs resolved, the outputs its expressions read at hand.
#[derive(Debug)]
pub(crate) struct StepJob<'r> {
    pub(crate) run: &'r RunShared<'r>,
    pub(crate) step: &'r Step,
    pub(crate) prepared: &'r PreparedStep,
    pub(crate) inputs: IndexMap<String, Value>,
    pub(crate) steps: HashMap<String, Arc<Value>>,
    pub(crate) started_at: DateTime<Utc>,
    /// The run's cancel token and deadline, for expressions to stop at.
    pub(crate) run_stop: RunStop,
    /// The id its record takes: the step's, or, for a step a flow runs again, the step's with
    /// the execution's number (`fetch#2`).
    pub(crate) record_id: String,
    /// Whether a flow judges the step: its last response is kept for the verdict (it is not
    /// otherwise, since bodies can be large), and a status is the flow's to judge, not a
    /// failed attempt, unless the step's `expect.status` says which it expects.
    pub(crate) judged_by_flow: bool,
    /// Whether anything reads the step's output besides its record (a step depending on it):
    /// when nothing does, no second copy of it is kept.
    pub(crate) output_read: bool,
}

/// A finished step: its record, and its output for the steps after it (`None` unless it
/// succeeded).
#[derive(Debug)]
pub(crate) struct StepDone {
    pub(crate) result: StepResult,
    pub(crate) output: Option<Arc<Value>>,
    /// The last response, when the job asked to keep it.
    pub(crate) reply: Option<Arc<HttpResponse>>,
    /// The run store's failure that left this step unrecorded (its mark, or its result).
    pub(crate) unsaved: Option<wayline_core::StoreError>,
}

/// Why a step failed; an output validation failure keeps the output for the record.
#[derive(Debug)]
struct Failure {
    message: String,
    output: Option<Value>,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure {
            message,
            output: None,
        }
    }
}

/// What the record keeps of the attempts.
#[derive(Debug, Default)]
struct Progress {
    attempts: u32,
    warnings: Vec<String>,
    request: Option<RequestSummary>,
    response_status: Option<u16>,
    /// The check of the last response's status against `expect.status`.
    status_check: Option<AssertionResult>,
    /// The other `expect` checks of the response the step settled on.
    assertions: Vec<AssertionResult>,
    /// The last response, kept when the job asks for it (shared, not copied: bodies can be
    /// large).
    reply: Option<Arc<HttpResponse>>,
}

/// [`execute`] with a run store. A step that is not safe to repeat is saved as `running` before
/// it can act, so a crash leaves it marked in flight; for a step safe to repeat the mark is
/// written while it runs (after a crash it is simply run again, so waiting would only add
/// latency). The result is saved before the step's dependents may start. A store failure fails
/// the step, with the reason, rather than going unrecorded, and is kept in
/// [`StepDone::unsaved`] for a run that stops on it ([`crate::StoreFailure::Interrupt`]).
pub(crate) async fn execute_durably(
    job: StepJob<'_>,
    store: &dyn RunStore,
    running: StepResult,
    safe_to_repeat: bool,
) -> StepDone {
    let run_id = job.run.run_id.clone();
    let mut done = if safe_to_repeat {
        // The step goes first, so its request is on its way while the mark is written. A failed
        // mark is moot: the result's save below reports a broken store.
        let (done, _) =
            futures_util::future::join(execute(job), store.save_step(&run_id, &running)).await;
        done
    } else {
        if let Err(error) = store.save_step(&run_id, &running).await {
            let mut result = running;
            result.status = StepStatus::Failed;
            result.error = Some(format!(
                "not started: the run store could not record it: {error}"
            ));
            result.finished_at = Some(Utc::now());
            return StepDone {
                result,
                output: None,
                reply: None,
                unsaved: Some(error),
            };
        }
        execute(job).await
    };
    if let Err(error) = store.save_step(&run_id, &done.result).await {
        done.result.status = StepStatus::Failed;
        done.result.error = Some(format!(
            "it ran, but the run store could not save its result: {error}"
        ));
        done.output = None;
        done.unsaved = Some(error);
    }
    done
}

pub(crate) async fn execute(job: StepJob<'_>) -> StepDone {
    let clock = Instant::now();
    let mut progress = Progress::default();
    let outcome = run_step(&job, &mut progress).await;
    let mut result = StepResult::pending(job.record_id.clone());
    result.started_at = Some(job.started_at);
    result.attempts = progress.attempts;
    result.request = progress.request;
    result.response_status = progress.response_status;
    result.warnings = progress.warnings;
    result.assertions = progress
        .status_check
        .into_iter()
        .chain(progress.assertions)
        .collect();
    let output = match outcome {
        Ok(output) => {
            result.status = StepStatus::Success;
            // Kept unmasked for the steps that read it; when none does, the record's is the
            // only copy (a body can be large).
            let kept = job.output_read.then(|| output.clone());
            result.output_data = output;
            kept
        }
        Err(failure) => {
            result.status = StepStatus::Failed;
            result.error = Some(failure.message);
            if let Some(output) = failure.output {
                result.output_data = output;
            }
            None
        }
    };
    job.run.redactor.step_result(&mut result);
    let context = job.context();
    for hook in &job.run.engine.middleware {
        hook.after_step(&context, &mut result).await;
    }
    result.finished_at = Some(Utc::now());
    result.duration_ms = Some(u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX));
    let output = output.filter(|_| result.status == StepStatus::Success);
    StepDone {
        result,
        output: output.map(Arc::new),
        reply: progress.reply,
        unsaved: None,
    }
}

impl StepJob<'_> {
    fn context(&self) -> StepContext<'_> {
        StepContext {
            run_id: &self.run.run_id,
            workflow_id: &self.run.workflow_id,
            step: self.step,
            tool: self.prepared.tool.as_deref(),
            inputs: &self.inputs,
        }
    }

    fn scope<'a>(&'a self, response: Option<ResponseView<'a>>) -> Scope<'a> {
        Scope {
            inputs: &self.run.inputs,
            steps: &self.steps,
            response,
            budget: self.run.engine.expression_budget,
            stop: Some(&self.run_stop),
        }
    }

    fn emit(&self, event: &RunEvent<'_>) {
        self.run.emit(event);
    }
}

async fn run_step(job: &StepJob<'_>, progress: &mut Progress) -> Result<Value, Failure> {
    let prepared = job.prepared;
    let inputs_value = Value::Object(
        job.inputs
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect(),
    );
    let findings = validation::run(&prepared.validations, Target::Input, &inputs_value);
    progress.warnings.extend(findings.warnings);
    if !findings.errors.is_empty() {
        return Err(format!("input validation failed: {}", findings.errors.join("; ")).into());
    }
    let context = job.context();
    // The tool a step calls, resolved once: a missing one fails the step before any policy
    // is asked about it (a transform calls none).
    let tool = match (job.step.kind, prepared.tool.as_deref()) {
        (StepKind::Transform | StepKind::Decision, _) => None,
        (_, Some(tool)) => Some(tool),
        (_, None) => {
            return Err(format!("tool `{}` is not in the catalog", job.step.tool_id).into());
        }
    };
    let request = tool.map(|tool| {
        StepRequest::new(
            &job.run.run_id,
            &job.run.workflow_id,
            &job.step.id,
            &job.step.tool_id,
            Some(tool),
            &job.inputs,
        )
    });
    if let Some(request) = &request {
        consult_policies(job, request, progress)?;
    }
    for hook in &job.run.engine.middleware {
        hook.before_step(&context)
            .await
            .map_err(|reason| format!("blocked before it ran: {reason}"))?;
    }
    let output = match (tool, &request) {
        (Some(tool), Some(request)) => {
            let called = attempt::call(job, tool, progress).await;
            for policy in &job.run.engine.policies {
                policy.finished(request, called.is_ok(), called.as_ref().ok());
            }
            called?
        }
        _ if job.step.kind == StepKind::Decision => {
            progress.attempts = 1;
            decision::decide(job).await?
        }
        _ => step_outputs(job, None)?,
    };
    let findings = validation::run(&prepared.validations, Target::Output, &output);
    progress.warnings.extend(findings.warnings);
    if !findings.errors.is_empty() {
        return Err(Failure {
            message: format!("output validation failed: {}", findings.errors.join("; ")),
            output: Some(output),
        });
    }
    Ok(output)
}

/// Asks the engine's step policies about `request`: the first block (or ask, which cannot be
/// answered here) fails the step; warnings join the step's warnings.
fn consult_policies(
    job: &StepJob<'_>,
    request: &StepRequest<'_>,
    progress: &mut Progress,
) -> Result<(), Failure> {
    for policy in &job.run.engine.policies {
        match policy.check(request) {
            Verdict::Allow => {}
            Verdict::Warn(message) => progress
                .warnings
                .push(format!("policy: {}", job.run.redactor.text(&message))),
            Verdict::Ask(reason) => {
                return Err(format!(
                    "needs a person's approval, and this run cannot ask for it: {reason}"
                )
                .into());
            }
            Verdict::Block(reason) => {
                return Err(format!("blocked by policy: {reason}").into());
            }
            _ => {}
        }
    }
    Ok(())
}

/// The step's `outputs`: CEL expressions over the run (and the response, when there is one) and
/// paths over the response body.
fn step_outputs(
    job: &StepJob<'_>,
    response: Option<(ResponseView<'_>, Option<&Value>)>,
) -> Result<Value, String> {
    let prepared = job.prepared;
    let mut output = Map::new();
    for (name, expression) in &prepared.cel_outputs {
        let value = eval::evaluate(expression, job.scope(response.map(|(view, _)| view)))
            .map_err(|error| format!("output `{name}`: {error}"))?;
        output.insert(name.clone(), value);
    }
    for (name, path) in &prepared.path_outputs {
        let body = response
            .and_then(|(_, parsed)| parsed)
            .ok_or_else(|| format!("output `{name}`: `{}` needs a JSON response", path.source()))?;
        let value = path.extract(body).ok_or_else(|| {
            format!(
                "output `{name}`: `{}` selects nothing in the response",
                path.source()
            )
        })?;
        output.insert(name.clone(), value);
    }
    Ok(Value::Object(output))
}

/// A seed for the retry jitter, fixed per run and step so a run's waits can be replayed.
fn seed(run_id: &str, step_id: &str) -> u64 {
    // FNV-1a: small, stable across platforms and Rust versions (unlike `DefaultHasher`).
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for byte in run_id.bytes().chain([0]).chain(step_id.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}
