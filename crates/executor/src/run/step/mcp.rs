//! `kind: mcp` steps: the engine's MCP client calls the tool, and what it gives is read as a
//! JSON response, so the rest of the step treats it as an HTTP call's.

use std::time::Duration;

use wayline_core::mcp::{McpCall, McpError, McpErrorKind};
use wayline_core::{HttpResponse, TransportError, TransportErrorKind};

use super::StepJob;

/// Calls an MCP step's tool with the engine's client: what the tool gave becomes a JSON response
/// body ([`wayline_core::McpOutcome::output`]); a tool that says it failed (`isError`) fails the step with its
/// text, and is not called again; the client's failures are transport errors of the matching
/// kind (only an unreachable server is transient).
pub(super) async fn run_mcp(
    job: &StepJob<'_>,
    call: McpCall,
) -> Result<HttpResponse, TransportError> {
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
