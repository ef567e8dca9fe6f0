//! Running one step: input validations, hooks, the call with its retries and polling, outputs,
//! output validations, and the step's record.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, Utc};
use indexmap::IndexMap;
use serde_json::{Map, Value};
use wayline_core::code::{CodeError, CodeErrorKind, CodeRequest};
use wayline_core::decide::DecisionRequest;
use wayline_core::mcp::{McpCall, McpError, McpErrorKind};
use wayline_core::secret::mask_secret_names;
use wayline_core::tool::ToolKind;
use wayline_core::{
    AssertionResult, HttpRequest, HttpResponse, RequestSummary, RunEvent, RunStore, Step, StepKind,
    StepRequest, StepResult, StepStatus, ToolDefinition, TransportError, TransportErrorKind,
    Verdict,
};

use crate::assertion::{self, Assertions};
use crate::cancel::RunStop;
use crate::command::{self, Invocation};
use crate::context::RunShared;
use crate::eval::{self, ResponseView, Scope};
use crate::middleware::StepContext;
use crate::prepare::{PreparedStep, SchemaCheck};
use crate::request::build_request;
use crate::response;
use crate::retry::{backoff, is_transient_status, may_resend, parse_retry_after};
use crate::validation::{self, Target};

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
        self.run.engine.emit(event);
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
            let called = call(job, tool, progress).await;
            for policy in &job.run.engine.policies {
                policy.finished(request, called.is_ok(), called.as_ref().ok());
            }
            called?
        }
        _ if job.step.kind == StepKind::Decision => {
            progress.attempts = 1;
            decide(job).await?
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

/// How a tool is invoked.
enum Invoke {
    Http(HttpRequest),
    Cli(Invocation, u64),
    Code(CodeRequest),
    Mcp(McpCall),
}

async fn call(
    job: &StepJob<'_>,
    tool: &ToolDefinition,
    progress: &mut Progress,
) -> Result<Value, Failure> {
    let prepared = job.prepared;
    let run = job.run;
    let config = run.config(&tool.id)?;
    let invoke = match (tool.kind, &tool.command, &tool.code) {
        (ToolKind::Cli, Some(command), _) => Invoke::Cli(
            command::invocation(command, &job.inputs)?,
            command.max_output_bytes,
        ),
        (ToolKind::Code, _, Some(code)) => {
            let inputs = Value::Object(
                job.inputs
                    .iter()
                    .map(|(name, value)| (name.clone(), value.clone()))
                    .collect(),
            );
            let mut request = CodeRequest::python(code.source.clone(), inputs);
            request.language = code.language.clone();
            request.profile = code.profile.clone();
            request.timeout = prepared.timeout;
            request.tool_id = tool.id.clone();
            request.run_id = run.run_id.clone();
            request.step_id = job.step.id.clone();
            Invoke::Code(request)
        }
        (ToolKind::Mcp, _, _) => {
            let Some(mcp) = &tool.mcp else {
                return Err(format!("tool `{}` is an `mcp` tool without `mcp`", tool.id).into());
            };
            let arguments = Value::Object(
                job.inputs
                    .iter()
                    .map(|(name, value)| (name.clone(), value.clone()))
                    .collect(),
            );
            let mut call = McpCall::new(mcp.server.clone(), mcp.tool.clone(), arguments);
            call.timeout = prepared.timeout;
            call.run_id = run.run_id.clone();
            call.step_id = job.step.id.clone();
            Invoke::Mcp(call)
        }
        _ => {
            let key = tool
                .idempotency_key
                .as_ref()
                .map(|_| format!("wayline-{}-{}", run.run_id, job.record_id));
            let built = build_request(tool, &job.inputs, config, key.as_deref())
                .map_err(|error| error.to_string())?;
            progress.warnings.extend(built.warnings);
            let mut request = built.request;
            request.timeout = Some(prepared.timeout);
            run.learn_sent(&request);
            progress.request = Some(run.redactor.summary(&request));
            Invoke::Http(request)
        }
    };
    // An MCP tool whose file does not say may say so itself (`idempotentHint`).
    let mcp_hint = match (&invoke, tool.idempotent, run.engine.mcp_client.as_ref()) {
        (Invoke::Mcp(call), None, Some(client)) => {
            client.idempotent_hint(&call.server, &call.tool).await
        }
        _ => None,
    };
    let resend = |failure: Option<TransportErrorKind>| match &invoke {
        Invoke::Http(request) => may_resend(
            &request.method,
            tool.idempotent,
            tool.idempotency_key.is_some(),
            failure,
        ),
        Invoke::Mcp(_) => tool.idempotent.or(mcp_hint) == Some(true),
        Invoke::Cli(..) | Invoke::Code(_) => tool.idempotent == Some(true),
    };
    let mut rng = fastrand::Rng::with_seed(seed(&run.run_id, &job.step.id));
    let mut failures_in_a_row = 0u32;
    let mut poll = PollState::default();
    loop {
        progress.attempts += 1;
        let attempt = progress.attempts;
        // Tokio's clock, so that a paused clock in tests times an attempt as it times a delay.
        let clock = tokio::time::Instant::now();
        let result = attempt_once(job, &invoke).await;
        let duration = clock.elapsed();
        // A response with a failing status is a failed attempt too; observers see why.
        let assertions = prepared.assertions.as_ref();
        let status_message = result
            .as_ref()
            .ok()
            .and_then(|reply| status_failure(assertions, reply, job.judged_by_flow));
        let error_text = match &result {
            Err(error) => Some(run.redactor.text(&error.to_string()).into_owned()),
            Ok(_) => status_message
                .as_deref()
                .map(|message| run.redactor.text(message).into_owned()),
        };
        job.emit(&RunEvent::Attempt {
            run_id: &run.run_id,
            step_id: &job.step.id,
            tool_id: &tool.id,
            attempt,
            status: result.as_ref().ok().map(|reply| reply.status),
            error: error_text.as_deref(),
            duration,
        });
        // What `-vv` shows: the request as the record keeps it (secrets masked).
        tracing::debug!(
            step = %job.step.id,
            tool = %tool.id,
            attempt,
            request = progress
                .request
                .as_ref()
                .map(|request| format!("{} {}", request.method, request.url))
                .as_deref(),
            status = result.as_ref().ok().map(|reply| reply.status),
            duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
            error = error_text.as_deref(),
            "attempt"
        );
        let failed = match result {
            Ok(reply) => {
                run.learn_received(&reply);
                let reply = Arc::new(reply);
                if job.judged_by_flow {
                    progress.reply = Some(Arc::clone(&reply));
                }
                progress.status_check =
                    assertions.and_then(|assertions| assertions.status_result(reply.status));
                if let Invoke::Http(_) = invoke {
                    progress.response_status = Some(reply.status);
                    if let Some(summary) = &mut progress.request {
                        summary.redirects = reply
                            .redirects
                            .iter()
                            .map(|url| run.redactor.text(url).into_owned())
                            .collect();
                    }
                }
                if let (true, Some(message)) = (is_transient_status(reply.status), &status_message)
                {
                    AttemptFailed {
                        retryable: resend(None),
                        message: message.clone(),
                        retry_after: reply
                            .header("retry-after")
                            .and_then(|value| parse_retry_after(value, SystemTime::now())),
                    }
                } else if let Some(message) = status_message {
                    AttemptFailed {
                        retryable: false,
                        message,
                        retry_after: None,
                    }
                } else {
                    failures_in_a_row = 0;
                    match settle(job, &tool.id, &reply, &mut poll, duration, progress).await? {
                        Some(output) => return Ok(output),
                        None => continue,
                    }
                }
            }
            Err(error) => {
                let kind = error.kind();
                AttemptFailed {
                    retryable: kind.is_transient() && resend(Some(kind)),
                    message: match &invoke {
                        Invoke::Http(_) => format!("HTTP request failed: {error}"),
                        Invoke::Cli(..) | Invoke::Code(_) | Invoke::Mcp(_) => {
                            error.message().to_owned()
                        }
                    },
                    retry_after: None,
                }
            }
        };
        failures_in_a_row += 1;
        let AttemptFailed {
            retryable,
            message,
            retry_after,
        } = failed;
        if !retryable || failures_in_a_row >= prepared.retry.max_attempts {
            let after = if attempt > 1 {
                format!(" (after {attempt} attempts)")
            } else {
                String::new()
            };
            return Err(format!("{message}{after}").into());
        }
        let delay = match retry_after {
            Some(wait) if wait > run.engine.max_retry_after => {
                return Err(format!(
                    "{message}; the server asks to retry after {} s, more than the {} s this engine waits",
                    wait.as_secs(),
                    run.engine.max_retry_after.as_secs()
                )
                .into());
            }
            Some(wait) => wait,
            None => backoff(&prepared.retry, failures_in_a_row, &mut rng),
        };
        let reason = run.redactor.text(&message);
        job.emit(&RunEvent::RetryScheduled {
            run_id: &run.run_id,
            step_id: &job.step.id,
            attempt,
            delay,
            reason: &reason,
        });
        tracing::debug!(step = %job.step.id, attempt, ?delay, "retry scheduled");
        tokio::time::sleep(delay).await;
    }
}

/// A failed attempt: whether it may be retried, why it failed, and the wait the server asked for.
struct AttemptFailed {
    retryable: bool,
    message: String,
    retry_after: Option<Duration>,
}

/// Polls so far, and why the last `until` could not be evaluated.
#[derive(Default)]
struct PollState {
    polls: u32,
    last_error: Option<String>,
}

/// Why a response's status fails its attempt, if it does: outside `expect.status` when the
/// step says which it expects, else (unless a flow judges it) 400 and above and the transient
/// statuses.
fn status_failure(
    assertions: Option<&Assertions>,
    reply: &HttpResponse,
    judged_by_flow: bool,
) -> Option<String> {
    match assertions.and_then(Assertions::status) {
        Some(expected) if expected.matches(reply.status) => None,
        Some(expected) => Some(response::unexpected_status(reply, &expected.to_string())),
        None if judged_by_flow => None,
        None => response::status_error(reply).or_else(|| {
            is_transient_status(reply.status).then(|| format!("HTTP {}", reply.status))
        }),
    }
}

/// A response with a good status: the step's output, or `None` when `poll.until` does not hold
/// yet (after waiting the poll interval), or the failure once polls run out. The step's
/// `expect` is checked on the response it settles on (answered by an attempt of `duration`).
async fn settle(
    job: &StepJob<'_>,
    tool_id: &str,
    reply: &HttpResponse,
    state: &mut PollState,
    duration: Duration,
    progress: &mut Progress,
) -> Result<Option<Value>, Failure> {
    let prepared = job.prepared;
    // A flow reads the response itself: unless the step has its own use for the body (a poll,
    // expectations, a schema, outputs), it is not parsed here and no output is made of it, so
    // a large body is parsed once (the flow's), not three times.
    let engine_reads_body = prepared.until.is_some()
        || prepared.assertions.is_some()
        || prepared.schema_check != SchemaCheck::Off
        || prepared.has_outputs();
    if job.judged_by_flow && !engine_reads_body {
        return Ok(Some(Value::Null));
    }
    let parsed = response::parse_body(reply);
    let text_body;
    let body = match &parsed {
        Some(parsed) => parsed,
        None => {
            text_body = Value::String(reply.text().into_owned());
            &text_body
        }
    };
    let view = ResponseView {
        status: reply.status,
        headers: &reply.headers,
        body,
    };
    if let (Some(until), Some(poll)) = (&prepared.until, &job.step.poll) {
        state.polls += 1;
        let holds = eval::condition(until, job.scope(Some(view))).unwrap_or_else(|error| {
            state.last_error = Some(error);
            false
        });
        let reported = reported_state(body).map(|reported| job.run.redactor.text(reported));
        job.emit(&RunEvent::Polled {
            run_id: &job.run.run_id,
            step_id: &job.step.id,
            tool_id,
            poll: state.polls,
            state: reported.as_deref(),
            done: holds,
        });
        if !holds {
            if state.polls >= poll.max_attempts {
                let why = state
                    .last_error
                    .take()
                    .map(|error| format!("; last evaluation: {error}"))
                    .unwrap_or_default();
                return Err(format!(
                    "poll: `{}` still false after {} polls (last status {}){why}",
                    until.source(),
                    state.polls,
                    reply.status
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(poll.interval_ms)).await;
            return Ok(None);
        }
    }
    if let Some(assertions) = &prepared.assertions {
        progress.assertions = assertions.check(job.scope(Some(view)), duration);
    }
    if prepared.schema_check != SchemaCheck::Off
        && let Some(checked) = prepared.schemas.check(
            reply.status,
            parsed.as_ref(),
            prepared.schema_check == SchemaCheck::Required,
        )
    {
        progress.assertions.extend(checked);
    }
    let failed = assertion::failure_message(&progress.assertions);
    let output = if prepared.has_outputs() {
        step_outputs(job, Some((view, parsed.as_ref())))
    } else if reply.status >= 400 {
        // An error status the step expects: its body as it came (the tool's extraction is for
        // its successes).
        response::output(&response::Extraction::default(), reply, parsed)
    } else {
        response::output(&prepared.extraction, reply, parsed)
    };
    if let Some(message) = failed {
        return Err(Failure {
            message,
            output: output.ok(),
        });
    }
    Ok(Some(output?))
}

/// The state a response body reports about its resource: a top-level `state`, `status` or
/// `phase` string.
fn reported_state(body: &Value) -> Option<&str> {
    ["state", "status", "phase"]
        .iter()
        .find_map(|key| body.get(key).and_then(Value::as_str))
}

/// One attempt: a reply (any status), or a failure with its transport kind.
async fn attempt_once(job: &StepJob<'_>, invoke: &Invoke) -> Result<HttpResponse, TransportError> {
    let timeout = job.prepared.timeout;
    match invoke {
        Invoke::Http(request) => {
            // The transport honours the request's timeout; this bounds a transport that does not.
            let send = job.run.engine.transport.send(request.clone());
            tokio::time::timeout(timeout, send)
                .await
                .unwrap_or_else(|_| {
                    Err(TransportError::new(
                        TransportErrorKind::Timeout,
                        format!("no response within {} ms", timeout.as_millis()),
                    ))
                })
        }
        Invoke::Cli(invocation, max_output) => command::run(invocation, *max_output, timeout).await,
        Invoke::Code(request) => run_code(job, request.clone()).await,
        Invoke::Mcp(call) => run_mcp(job, call.clone()).await,
    }
}

/// Calls an MCP step's tool with the engine's client: what the tool gave becomes a JSON response
/// body ([`wayline_core::McpOutcome::output`]); a tool that says it failed (`isError`) fails the step with its
/// text, and is not called again; the client's failures are transport errors of the matching
/// kind (only an unreachable server is transient).
async fn run_mcp(job: &StepJob<'_>, call: McpCall) -> Result<HttpResponse, TransportError> {
    let Some(client) = job.run.engine.mcp_client.as_ref() else {
        return Err(TransportError::new(
            TransportErrorKind::InvalidRequest,
            "this engine has no MCP client",
        ));
    };
    let tool = format!("{}/{}", call.server, call.tool);
    // The client honours the timeout; this bounds one that does not.
    let limit = call.timeout.saturating_add(Duration::from_secs(5));
    let outcome = tokio::time::timeout(limit, client.call(call))
        .await
        .unwrap_or_else(|_| {
            Err(McpError::new(
                McpErrorKind::Timeout,
                format!("no answer within {} ms", limit.as_millis()),
            ))
        });
    match outcome {
        Ok(outcome) if outcome.is_error => Err(TransportError::new(
            TransportErrorKind::Other,
            format!("mcp: tool `{tool}` failed: {}", outcome.text_content()),
        )),
        Ok(outcome) => {
            let body = serde_json::to_vec(&outcome.output()).map_err(|error| {
                TransportError::new(TransportErrorKind::Other, error.to_string())
            })?;
            Ok(HttpResponse::new(200, body).with_header("content-type", "application/json"))
        }
        Err(error) => {
            let kind = match error.kind() {
                McpErrorKind::Timeout => TransportErrorKind::Timeout,
                McpErrorKind::Unavailable => TransportErrorKind::Connect,
                McpErrorKind::Invalid => TransportErrorKind::InvalidRequest,
                _ => TransportErrorKind::Other,
            };
            Err(TransportError::new(
                kind,
                format!("mcp: tool `{tool}`: {}", error.message()),
            ))
        }
    }
}

/// Runs a code step with the engine's runner: its result becomes a JSON response body, its
/// failures transport errors of the matching kind (only an unreachable sandbox is transient).
async fn run_code(job: &StepJob<'_>, request: CodeRequest) -> Result<HttpResponse, TransportError> {
    let Some(runner) = job.run.engine.code_runner.as_ref() else {
        return Err(TransportError::new(
            TransportErrorKind::InvalidRequest,
            "this engine has no code runner",
        ));
    };
    // The runner honours the timeout; this bounds one that does not. It is generous: a runner
    // may make a few round trips within the timeout each, after a cold start (Bay's can take
    // up to 120 s).
    let limit = request
        .timeout
        .saturating_mul(3)
        .saturating_add(Duration::from_secs(150));
    let outcome = tokio::time::timeout(limit, runner.run(request))
        .await
        .unwrap_or_else(|_| {
            Err(CodeError::new(
                CodeErrorKind::Timeout,
                format!("no result within {} ms", limit.as_millis()),
            ))
        });
    match outcome {
        Ok(output) => {
            let body = serde_json::to_vec(&output.result).map_err(|error| {
                TransportError::new(TransportErrorKind::Other, error.to_string())
            })?;
            Ok(HttpResponse::new(200, body).with_header("content-type", "application/json"))
        }
        Err(error) => {
            let kind = match error.kind() {
                CodeErrorKind::Timeout => TransportErrorKind::Timeout,
                CodeErrorKind::Unavailable => TransportErrorKind::Connect,
                CodeErrorKind::Invalid => TransportErrorKind::InvalidRequest,
                _ => TransportErrorKind::Other,
            };
            Err(TransportError::new(
                kind,
                format!("code: {}", error.message()),
            ))
        }
    }
}

/// How long a decider may take when the step sets no `timeout_ms`: a model's answer can take
/// longer than an API call (the engine's default applies when it is longer still).
const DECISION_TIMEOUT: Duration = Duration::from_secs(120);

/// Asks the engine's decider a decision step's question: its prompt, its choices, its inputs
/// and its dependencies' outputs, with the run's secrets masked (the tool configs' secret
/// values, and the values of members named like secrets: `password`, `token`, ...). The answer must be one of the
/// choices; anything else fails the step. The output is `{"choice", "reason"}`.
async fn decide(job: &StepJob<'_>) -> Result<Value, Failure> {
    let Some(decider) = job.run.engine.decider.as_ref() else {
        return Err("this engine has no decider".to_owned().into());
    };
    let step = job.step;
    let redactor = &job.run.redactor;
    let mut inputs = Value::Object(
        job.inputs
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect(),
    );
    redactor.value(&mut inputs);
    let inputs = mask_secret_names(&inputs);
    // Sorted, so the same run asks the same question.
    let mut ids: Vec<&String> = job.steps.keys().collect();
    ids.sort();
    // Masked output by output: a step named `get_token` keeps its output, only its
    // secret-named members are hidden.
    let context = Value::Object(
        ids.into_iter()
            .map(|id| {
                let mut output = Value::clone(&job.steps[id]);
                redactor.value(&mut output);
                (id.clone(), mask_secret_names(&output))
            })
            .collect(),
    );
    let mut request = DecisionRequest::new(
        step.decision_prompt.clone().unwrap_or_default(),
        step.choices.clone(),
    );
    request.run_id.clone_from(&job.run.run_id);
    request.workflow_id.clone_from(&job.run.workflow_id);
    request.step_id.clone_from(&step.id);
    request.inputs = inputs;
    request.context = context;
    let timeout = step.timeout_ms.map_or(
        DECISION_TIMEOUT.max(job.prepared.timeout),
        Duration::from_millis,
    );
    let decision = tokio::time::timeout(timeout, decider.decide(&request))
        .await
        .map_err(|_| {
            format!(
                "the decider gave no answer within {} ms (set the step's `timeout_ms` to allow more)",
                timeout.as_millis()
            )
        })?
        .map_err(|error| format!("the decider gave no answer: {}", error.message()))?;
    if !step.choices.contains(&decision.choice) {
        return Err(format!(
            "the decider answered `{}`, which is not one of the choices ({}); nothing was chosen",
            decision.choice,
            step.choices
                .iter()
                .map(|choice| format!("`{choice}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
        .into());
    }
    Ok(serde_json::json!({"choice": decision.choice, "reason": decision.reason}))
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
