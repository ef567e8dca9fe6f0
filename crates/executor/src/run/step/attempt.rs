//! The call a step makes, attempt after attempt: transient failures retried with backoff, a
//! response settled by its status, `poll.until` and `expect`, polls spaced by their interval.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::Value;
use wayline_core::code::CodeRequest;
use wayline_core::mcp::McpCall;
use wayline_core::tool::ToolKind;
use wayline_core::{
    HttpRequest, HttpResponse, RunEvent, ToolDefinition, TransportError, TransportErrorKind,
};

use super::code::run_code;
use super::mcp::run_mcp;
use super::{Failure, Progress, StepJob, seed, step_outputs};
use crate::call::command::{self, Invocation};
use crate::call::request::build_request;
use crate::call::response;
use crate::call::retry::{backoff, is_transient_status, may_resend, parse_retry_after};
use crate::run::prepare::SchemaCheck;
use crate::values::assertion::{self, Assertions};
use crate::values::eval::{self, ResponseView};

/// How a tool is invoked.
enum Invoke {
    Http(HttpRequest),
    Cli(Invocation, u64),
    Code(CodeRequest),
    Mcp(McpCall),
}

pub(super) async fn call(
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
