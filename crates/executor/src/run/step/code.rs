//! Code steps: the engine's code runner (a sandbox) runs them, and the result is read as a JSON
//! response, so the rest of the step treats it as an HTTP call's.

use std::time::Duration;

use wayline_core::code::{CodeError, CodeErrorKind, CodeRequest};
use wayline_core::{HttpResponse, TransportError, TransportErrorKind};

use super::StepJob;

/// Runs a code step with the engine's runner: its result becomes a JSON response body, its
/// failures transport errors of the matching kind (only an unreachable sandbox is transient).
pub(super) async fn run_code(
    job: &StepJob<'_>,
    request: CodeRequest,
) -> Result<HttpResponse, TransportError> {
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
