//! The tools the gateway adds, so an agent can see and steer its own investigation (ADR-005's
//! "workflow state as tools"): `workflow_state`, `workflow_advance` and
//! `break_glass_request`. Approval is not among them: a second person gives it with
//! `wayline guard approve`, never the agent.

use std::sync::Arc;

use chrono::Utc;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};
use wayline_guard::{Ask, Guard, Scope, Session};

/// `workflow_state`.
pub(crate) const STATE: &str = "workflow_state";
/// `workflow_advance`.
pub(crate) const ADVANCE: &str = "workflow_advance";
/// `break_glass_request`.
pub(crate) const BREAK_GLASS: &str = "break_glass_request";

/// The three tools, as listed.
pub(crate) fn tools(guard: &Guard) -> Vec<Tool> {
    let states: Vec<&str> = guard.policy().state_names().collect();
    let read_only = {
        let mut hints = ToolAnnotations::default();
        hints.read_only_hint = Some(true);
        hints
    };
    let mut state = Tool::new(
        STATE,
        "The investigation's current phase, the evidence gathered, what is still needed to move on, the tools allowed now, and emergency requests waiting for approval.",
        schema(json!({"type": "object", "properties": {}})),
    );
    state.annotations = Some(read_only);
    let advance = Tool::new(
        ADVANCE,
        "Ask to move the investigation to another phase. Moving forward needs the current phase's evidence; the answer says what is missing.",
        schema(json!({
            "type": "object",
            "properties": {"to": {"type": "string", "enum": states, "description": "The phase to move to."}},
            "required": ["to"],
        })),
    );
    let break_glass = Tool::new(
        BREAK_GLASS,
        "Ask for an emergency override when the normal process cannot be followed. A person must approve it (`wayline guard approve`); it opens the named tools, or the calls of another phase, for a limited time.",
        schema(json!({
            "type": "object",
            "properties": {
                "reason": {"type": "string", "description": "Why the normal process cannot be followed (at least 10 characters)."},
                "tools": {"type": "array", "items": {"type": "string"}, "description": "Tool names or patterns (`*`) to open."},
                "state": {"type": "string", "enum": states, "description": "Or: decide calls as in this phase."},
                "minutes": {"type": "integer", "minimum": 1, "description": "How long the grant lasts once approved."},
                "calls": {"type": "integer", "minimum": 1, "description": "At most this many calls (leave out for no limit)."},
            },
            "required": ["reason", "minutes"],
        })),
    );
    vec![state, advance, break_glass]
}

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// What `workflow_state` answers.
pub(crate) fn state(guard: &Guard, session: &Session, file: &str) -> CallToolResult {
    let now = Utc::now();
    let config = guard.policy().state(&session.state);
    let value = json!({
        "session": session.id,
        "session_file": file,
        "state": session.state,
        "description": config.map(|config| config.description.clone()),
        "guidance": config.map(|config| config.guidance_message.clone()),
        "evidence": session.evidence,
        "missing": guard.missing(session, now),
        "next_states": config.map(|config| config.next_states.clone()),
        "allowed_tools": config.map(|config| config.allowed_tools.clone()),
        "blocked_tools": config.map(|config| config.blocked_tools.clone()),
        "grants": session.grants.iter().filter(|grant| grant.active(now)).collect::<Vec<_>>(),
        "requests": session.requests,
    });
    CallToolResult::structured(value)
}

/// What `workflow_advance` answers.
pub(crate) fn advance(
    guard: &Guard,
    session: &mut Session,
    arguments: &JsonObject,
) -> CallToolResult {
    let Some(to) = arguments.get("to").and_then(Value::as_str) else {
        return failure("give `to`: the phase to move to".to_owned());
    };
    let from = session.state.clone();
    match guard.advance(session, to, Utc::now()) {
        // Asked for the phase it is in (the guard may have moved on its own): the state.
        Ok(()) => CallToolResult::structured(
            json!({"from": from, "state": session.state, "moved": from != session.state}),
        ),
        Err(missing) => failure(format!(
            "still in {from}: {}. Gather what is missing, then ask again.",
            missing.join("; ")
        )),
    }
}

/// What `break_glass_request` answers.
pub(crate) fn break_glass(
    guard: &Guard,
    session: &mut Session,
    arguments: &JsonObject,
    requester: &str,
    file: &str,
) -> CallToolResult {
    let reason = arguments
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let minutes = arguments
        .get("minutes")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let scope = match (arguments.get("tools"), arguments.get("state")) {
        (Some(Value::Array(tools)), None) => Scope::Tools(
            tools
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        ),
        (None, Some(Value::String(state))) => Scope::State(state.clone()),
        _ => return failure("give `tools` (names or patterns) or `state`, not both".to_owned()),
    };
    let mut ask = Ask::new(reason, requester, scope, minutes);
    ask.calls = arguments
        .get("calls")
        .and_then(Value::as_u64)
        .map(|calls| u32::try_from(calls).unwrap_or(u32::MAX));
    match guard.request_break_glass(session, ask, Utc::now()) {
        Ok(request) => {
            let mut result = CallToolResult::structured(json!({
                "request": request.id,
                "status": "waiting for approval",
                "approve_with": format!("wayline guard approve --session {file} {} --approver NAME", request.id),
            }));
            result.content = vec![ContentBlock::text(format!(
                "Request {} is filed. A person (not you) must approve it: `wayline guard approve --session {file} {} --approver NAME`. Until then, carry on with what is allowed.",
                request.id, request.id
            ))];
            result
        }
        Err(error) => failure(error.to_string()),
    }
}

/// A tool error the agent reads.
pub(crate) fn failure(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}
