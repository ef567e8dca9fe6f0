//! [`Guard`]: decides each tool call against the policy and the session, moves the session
//! between states, and audits what it does.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;
use wayline_core::ToolDefinition;

use crate::Error;
use crate::audit::AuditLog;
use crate::breakglass::{BreakGlassRequest, Grant, PendingRequest, Scope};
use crate::glob::Name;
use crate::panic::{self, Candidate};
use crate::policy::{Hints, Policy, ToolClass};
use crate::session::{Call, Session};
use crate::signal::{PanicKind, PanicSignal};

/// How decisions are enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Blocks what the policy blocks.
    #[default]
    Blocking,
    /// Turns every block into a warning.
    Guidance,
    /// Decides and logs, never interferes: every call is allowed.
    Audit,
}

impl Mode {
    /// The snake-case name.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Blocking => "blocking",
            Mode::Guidance => "guidance",
            Mode::Audit => "audit",
        }
    }
}

/// A tool call to decide on.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ToolCall<'a> {
    /// The tool's name (id).
    pub tool: &'a str,
    /// Its definition, when the host has one (classes by metadata).
    pub definition: Option<&'a ToolDefinition>,
    /// The namespace or resource it is about, when known (domain jumping).
    pub domain: Option<&'a str>,
    /// What the tool says about itself, when it says anything.
    pub hints: Hints,
}

impl<'a> ToolCall<'a> {
    /// A call of `tool`.
    pub fn new(tool: &'a str) -> Self {
        ToolCall {
            tool,
            definition: None,
            domain: None,
            hints: Hints::default(),
        }
    }

    /// With what the tool says about itself.
    #[must_use]
    pub fn hints(mut self, hints: Hints) -> Self {
        self.hints = hints;
        self
    }

    /// With the tool's definition.
    #[must_use]
    pub fn definition(mut self, definition: &'a ToolDefinition) -> Self {
        self.definition = Some(definition);
        self
    }

    /// With the domain it is about.
    #[must_use]
    pub fn domain(mut self, domain: &'a str) -> Self {
        self.domain = Some(domain);
        self
    }
}

/// What the guard says about a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum GuardVerdict {
    /// Go ahead.
    Allow {
        /// Notes (a break-glass grant in use, what audit mode would have done).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notes: Vec<String>,
    },
    /// Go ahead, but read this.
    Warn {
        /// The panic signals raised.
        signals: Vec<PanicSignal>,
        /// What to keep in mind.
        message: String,
    },
    /// Do not run it.
    Block {
        /// Why.
        reason: String,
        /// The calming intervention, when panic was detected.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        calming_message: Option<String>,
        /// What to do instead.
        recommended_actions: Vec<String>,
        /// The state the session was sent back to, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        forced_state: Option<String>,
        /// The panic signals raised.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        signals: Vec<PanicSignal>,
    },
}

impl GuardVerdict {
    /// `allow`, `warn` or `block`.
    pub fn name(&self) -> &'static str {
        match self {
            GuardVerdict::Allow { .. } => "allow",
            GuardVerdict::Warn { .. } => "warn",
            GuardVerdict::Block { .. } => "block",
        }
    }

    /// The signals raised.
    pub fn signals(&self) -> &[PanicSignal] {
        match self {
            GuardVerdict::Allow { .. } => &[],
            GuardVerdict::Warn { signals, .. } | GuardVerdict::Block { signals, .. } => signals,
        }
    }
}

/// How a guidance-mode warning that stands for a block begins.
pub const GUIDANCE_BLOCK: &str = "guidance mode, would block: ";

/// The ADR's recommended actions after a panic intervention.
const CALMING_ACTIONS: [&str; 4] = [
    "Take a deep breath - let's approach this methodically",
    "Review the evidence we've gathered so far",
    "Consider if we have enough information to understand the problem",
    "Look for similar incidents in our memory system",
];

/// Decides tool calls for sessions under one policy.
#[derive(Debug, Clone)]
pub struct Guard {
    policy: Arc<Policy>,
    mode: Mode,
    audit: Option<Arc<AuditLog>>,
}

impl Guard {
    /// A guard enforcing `policy` in `mode`, auditing nothing.
    pub fn new(policy: Arc<Policy>, mode: Mode) -> Self {
        Guard {
            policy,
            mode,
            audit: None,
        }
    }

    /// Audits every decision, transition and grant into `log`.
    #[must_use]
    pub fn audit(mut self, log: Arc<AuditLog>) -> Self {
        self.audit = Some(log);
        self
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// A new session in the policy's initial state.
    pub fn start(&self, id: impl Into<String>, now: DateTime<Utc>) -> Session {
        Session::new(id, self.policy.initial_state(), now)
    }

    /// Appends an event to the audit log, if there is one. A failure is returned (for a
    /// decision, which must not stand unaudited) and remembered by the log
    /// ([`AuditLog::failures`]), so it is never lost silently.
    fn log(
        &self,
        session: &Session,
        kind: &str,
        detail: serde_json::Value,
        now: DateTime<Utc>,
    ) -> Result<(), Error> {
        let Some(audit) = &self.audit else {
            return Ok(());
        };
        audit
            .record(&session.id, kind, detail, now)
            .map(drop)
            .inspect_err(|error| {
                tracing::warn!(%error, "the guard's audit log could not be written");
            })
    }

    /// Decides `call` in `session` at `now`, records it in the session's history (and the
    /// audit log), and applies a forced state in blocking mode.
    pub fn decide(
        &self,
        session: &mut Session,
        call: ToolCall<'_>,
        now: DateTime<Utc>,
    ) -> GuardVerdict {
        let policy = &*self.policy;
        // Time alone may have met the current state's requirements since the last call.
        self.advance_automatically(session, now);
        let name = Name::new(call.tool);
        let class = policy.classify_name(&name, call.definition, call.hints);
        let own_state = session.state.clone();
        let own_gate = self.gate(&own_state, call.tool, &name, class);
        // A grant only ever opens: the session's own state is asked first, and a grant is
        // consulted when that refuses (a tools grant naming the tool, or a state grant whose
        // state admits it). Grants that break the policy's rules (a hand-edited session file)
        // are ignored.
        let (state, gate, opened_by_grant) = match own_gate.refusal {
            None => (own_state, own_gate, None),
            Some(_) => {
                let usable = session
                    .grants
                    .iter()
                    .filter(|grant| grant.active(now) && grant.check(policy).is_ok());
                let mut opened = None;
                for grant in usable {
                    if grant.covers(call.tool) {
                        opened = Some((own_state.clone(), own_gate.clone(), grant.clone()));
                        break;
                    }
                    if let Some(state) = grant.state() {
                        let gate = self.gate(state, call.tool, &name, class);
                        if gate.refusal.is_none() {
                            opened = Some((state.to_owned(), gate, grant.clone()));
                            break;
                        }
                    }
                }
                match opened {
                    Some((state, gate, grant)) => (state, gate, Some(grant)),
                    None => (own_state, own_gate, None),
                }
            }
        };
        let candidate = Candidate {
            tool: call.tool,
            class,
            domain: call.domain,
            allowed_by_name: gate.allowed_by_name,
        };
        let signals = panic::detect(policy, session, &candidate, now);
        let opened_by_grant = opened_by_grant.as_ref();
        let decided = if let Some(grant) = opened_by_grant {
            let mut notes = vec![format!(
                "under break-glass grant {} (approved by {}, until {})",
                grant.id, grant.request.approver, grant.expires_at
            )];
            notes.extend(signals.iter().map(|signal| signal.description.clone()));
            GuardVerdict::Allow { notes }
        } else if signals.iter().any(|signal| signal.severity.blocks()) {
            self.intervention(session, &signals)
        } else if let Some(reason) = gate.refusal {
            let config = policy.state(&session.state);
            let mut actions = Vec::new();
            if let Some(config) = config
                && !config.guidance_message.is_empty()
            {
                actions.push(config.guidance_message.clone());
            }
            let missing = self.missing(session, now);
            if !missing.is_empty() {
                actions.push(format!("Still needed to move on: {}", missing.join("; ")));
            }
            if let Some(config) = config
                && !config.allowed_tools.is_empty()
            {
                actions.push(format!("Allowed here: {}", config.allowed_tools.join(", ")));
            }
            GuardVerdict::Block {
                reason,
                calming_message: None,
                recommended_actions: actions,
                forced_state: None,
                signals: signals.clone(),
            }
        } else if !signals.is_empty() {
            GuardVerdict::Warn {
                message: format!(
                    "I notice we might be moving quickly ({}). Let's make sure we have enough evidence.",
                    signals
                        .iter()
                        .map(|signal| signal.kind.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                signals: signals.clone(),
            }
        } else {
            GuardVerdict::Allow { notes: Vec::new() }
        };
        let underlying = (self.mode != Mode::Blocking && decided.name() != "allow")
            .then(|| serde_json::to_value(&decided).unwrap_or_default());
        let decision = self.enforce(decided);
        if let (
            Mode::Blocking,
            GuardVerdict::Block {
                forced_state: Some(to),
                ..
            },
        ) = (self.mode, &decision)
        {
            let from = session.state.clone();
            session.move_to(to, now, "panic intervention");
            let _unaudited = self.log(
                session,
                "transition",
                json!({"from": from, "to": to, "reason": "panic intervention"}),
                now,
            );
        }
        if let Some(grant) = opened_by_grant
            && let Some(held) = session.grants.iter_mut().find(|held| held.id == grant.id)
        {
            held.used = held.used.saturating_add(1);
        }
        session.signals.extend(signals);
        session.history.push(Call {
            tool: call.tool.to_owned(),
            class,
            at: now,
            domain: call.domain.map(str::to_owned),
            decision: decision.name().to_owned(),
            state: state.clone(),
        });
        let kind = if opened_by_grant.is_some() {
            "break_glass_call"
        } else {
            "decision"
        };
        let audited = self.log(
            session,
            kind,
            json!({
                "tool": call.tool,
                "class": class.name(),
                "state": state,
                "mode": self.mode.name(),
                "decision": decision,
                "enforced_from": underlying,
                "grant": opened_by_grant.map(|grant| grant.id.clone()),
            }),
            now,
        );
        match audited {
            Ok(()) => decision,
            Err(error) => self.unaudited(session, decision, &error),
        }
    }

    /// A decision whose audit entry could not be written: in blocking and guidance modes the
    /// call is refused (nothing runs unaudited); in audit mode, which never blocks, the
    /// decision stands with a note saying the entry is missing.
    fn unaudited(
        &self,
        session: &mut Session,
        decision: GuardVerdict,
        error: &Error,
    ) -> GuardVerdict {
        if self.mode == Mode::Audit {
            let GuardVerdict::Allow { mut notes } = decision else {
                return decision;
            };
            notes.push(format!(
                "the audit entry of this decision was not written: {error}"
            ));
            return GuardVerdict::Allow { notes };
        }
        let signals = match decision {
            GuardVerdict::Warn { signals, .. } | GuardVerdict::Block { signals, .. } => signals,
            GuardVerdict::Allow { .. } => Vec::new(),
        };
        if let Some(call) = session.history.last_mut() {
            call.decision = "block".to_owned();
        }
        GuardVerdict::Block {
            reason: format!(
                "the decision could not be written to the audit log ({error}), and nothing runs unaudited"
            ),
            calming_message: None,
            recommended_actions: vec![
                "Check the audit log with `wayline guard audit verify`; move a damaged log aside \
                 and start a new one, keeping the old for review"
                    .to_owned(),
            ],
            forced_state: None,
            signals,
        }
    }

    /// Whether `state` lets `tool` run: blocked patterns win, then allowed patterns, then the
    /// state's allowed classes.
    fn gate(&self, state: &str, tool: &str, name: &Name, class: ToolClass) -> Gate {
        let Some((_, compiled)) = self.policy.compiled(state) else {
            return Gate {
                allowed_by_name: false,
                refusal: Some(format!(
                    "the session is in `{state}`, which this policy does not have"
                )),
            };
        };
        let config = self.policy.state(state);
        if let Some(pattern) = compiled.blocked.iter().find(|glob| name.matched_by(glob)) {
            return Gate {
                allowed_by_name: false,
                refusal: Some(format!(
                    "`{tool}` is blocked in the {state} state (pattern `{pattern}`)"
                )),
            };
        }
        if compiled.allowed.iter().any(|glob| name.matched_by(glob)) {
            return Gate {
                allowed_by_name: true,
                refusal: None,
            };
        }
        if config.is_some_and(|config| config.allowed_classes.contains(&class)) {
            return Gate {
                allowed_by_name: false,
                refusal: None,
            };
        }
        Gate {
            allowed_by_name: false,
            refusal: Some(format!(
                "`{tool}` ({} tool) is not allowed in the {state} state",
                class.name()
            )),
        }
    }

    /// The block a blocking panic signal deserves: the calming message, the ADR's actions,
    /// and a move back to the policy's forced state (never forward).
    fn intervention(&self, session: &Session, signals: &[PanicSignal]) -> GuardVerdict {
        let mut message = String::from(
            "Hold on - I'm detecting some concerning patterns in our troubleshooting approach.\n\nIt looks like we might be:",
        );
        let mut seen: Vec<PanicKind> = Vec::new();
        for signal in signals {
            if !seen.contains(&signal.kind) {
                seen.push(signal.kind);
                message.push_str("\n- ");
                message.push_str(signal.kind.calming_line());
            }
        }
        message.push_str(
            "\n\nLet's slow down and work through this systematically.\nThe best way to solve complex problems is with methodical investigation.\n\nWhat symptoms are we seeing? Let's start there.",
        );
        let forced = &self.policy.panic().forced_state;
        let back = match (
            self.policy.position(forced),
            self.policy.position(&session.state),
        ) {
            (Some(to), Some(now)) if to < now => Some(forced.clone()),
            _ => None,
        };
        GuardVerdict::Block {
            reason: signals
                .iter()
                .filter(|signal| signal.severity.blocks())
                .map(|signal| format!("{}: {}", signal.kind.name(), signal.description))
                .collect::<Vec<_>>()
                .join("; "),
            calming_message: Some(message),
            recommended_actions: CALMING_ACTIONS.map(str::to_owned).to_vec(),
            forced_state: back,
            signals: signals.to_vec(),
        }
    }

    /// The decision as the mode enforces it.
    fn enforce(&self, decision: GuardVerdict) -> GuardVerdict {
        match (self.mode, decision) {
            (
                Mode::Guidance,
                GuardVerdict::Block {
                    reason,
                    calming_message,
                    signals,
                    ..
                },
            ) => GuardVerdict::Warn {
                message: match calming_message {
                    Some(calming) => format!("{GUIDANCE_BLOCK}{reason}\n{calming}"),
                    None => format!("{GUIDANCE_BLOCK}{reason}"),
                },
                signals,
            },
            (Mode::Audit, decided) if decided.name() != "allow" => GuardVerdict::Allow {
                notes: vec![format!("audit mode: would {}", decided.name())],
            },
            (_, decided) => decided,
        }
    }

    /// Records the result of a call: a success of a tool the policy maps to an evidence type
    /// adds evidence (described by `summary`), and the session moves on when its state's
    /// requirements are met. Returns the evidence type recorded, if any.
    pub fn record_result(
        &self,
        session: &mut Session,
        tool: &str,
        success: bool,
        summary: &str,
        now: DateTime<Utc>,
    ) -> Option<String> {
        if !success {
            return None;
        }
        let kind = self.policy.evidence_of(tool)?.to_owned();
        self.add_evidence(session, &kind, summary, Some(tool.to_owned()), now);
        Some(kind)
    }

    /// Records an item of evidence explicitly (a hypothesis, a plan) and moves on when the
    /// requirements are met.
    pub fn add_evidence(
        &self,
        session: &mut Session,
        kind: &str,
        description: &str,
        source_tool: Option<String>,
        now: DateTime<Utc>,
    ) {
        session.record_evidence(kind, description, source_tool.clone(), now);
        let _unaudited = self.log(
            session,
            "evidence",
            json!({"type": kind, "description": description, "source_tool": source_tool}),
            now,
        );
        self.advance_automatically(session, now);
    }

    /// What the current state still needs before the session may move forward.
    pub fn missing(&self, session: &Session, now: DateTime<Utc>) -> Vec<String> {
        let Some(config) = self.policy.state(&session.state) else {
            return vec![format!(
                "the state `{}` is not in the policy",
                session.state
            )];
        };
        let mut missing = Vec::new();
        for requirement in &config.required_evidence {
            let have = session.evidence_in_state(&requirement.kind);
            if have < requirement.min_count {
                missing.push(format!(
                    "{} evidence: {have} of {}",
                    requirement.kind, requirement.min_count
                ));
            }
        }
        let spent = (now - session.entered_state_at).num_seconds().max(0);
        let needed = i64::try_from(config.min_time_in_state).unwrap_or(i64::MAX);
        if spent < needed {
            missing.push(format!(
                "{needed} s in the {} state ({spent} s so far)",
                session.state
            ));
        }
        missing
    }

    fn advance_automatically(&self, session: &mut Session, now: DateTime<Utc>) {
        // Bounded: each move goes forward, and there are finitely many states.
        for _ in 0..self.policy.file().states.len() {
            if !self.missing(session, now).is_empty() {
                return;
            }
            let Some(here) = self.policy.position(&session.state) else {
                return;
            };
            let forward = self.policy.state(&session.state).and_then(|config| {
                config
                    .next_states
                    .iter()
                    .find(|next| self.policy.position(next).is_some_and(|at| at > here))
                    .cloned()
            });
            let Some(next) = forward else { return };
            let from = session.state.clone();
            session.move_to(&next, now, "requirements met");
            let _unaudited = self.log(
                session,
                "transition",
                json!({"from": from, "to": next, "reason": "requirements met"}),
                now,
            );
        }
    }

    /// Moves the session to `to` on request: a next state of the current one, and, when it is
    /// a move forward, only once the current state's requirements are met. Refused with what
    /// is missing. Asking for the state the session is in already (the guard may have moved
    /// there on its own) changes nothing and is no error. Every answer is audited.
    pub fn advance(
        &self,
        session: &mut Session,
        to: &str,
        now: DateTime<Utc>,
    ) -> Result<(), Vec<String>> {
        if session.state == to {
            let _unaudited = self.log(session, "advance_unchanged", json!({"state": to}), now);
            return Ok(());
        }
        let refusal = match self.policy.state(&session.state) {
            None => Some(vec![format!(
                "the state `{}` is not in the policy",
                session.state
            )]),
            Some(config) if !config.next_states.iter().any(|next| next == to) => {
                Some(vec![format!(
                    "the {} state leads to {}, not to `{to}`",
                    session.state,
                    config.next_states.join(" or ")
                )])
            }
            Some(_) => None,
        };
        let forward = self.policy.position(to) > self.policy.position(&session.state);
        let refusal = match refusal {
            None if forward => {
                Some(self.missing(session, now)).filter(|missing| !missing.is_empty())
            }
            other => other,
        };
        if let Some(reasons) = refusal {
            let _unaudited = self.log(
                session,
                "advance_refused",
                json!({"from": session.state, "to": to, "reasons": reasons}),
                now,
            );
            return Err(reasons);
        }
        let from = session.state.clone();
        let reason = if forward { "advance" } else { "back" };
        session.move_to(to, now, reason);
        let _unaudited = self.log(
            session,
            "transition",
            json!({"from": from, "to": to, "reason": reason}),
            now,
        );
        Ok(())
    }

    /// Grants an emergency override to `session` (refused unless a second person approves,
    /// within the policy's limits). The grant and any refusal are audited.
    pub fn break_glass(
        &self,
        session: &mut Session,
        request: BreakGlassRequest,
        now: DateTime<Utc>,
    ) -> Result<Grant, Error> {
        let id = format!("bg-{}-{}", session.id, session.grants.len() + 1);
        match request.clone().grant(&self.policy, id, now) {
            Ok(grant) => {
                let _unaudited = self.log(session, "break_glass_granted", json!(grant), now);
                session.grants.push(grant.clone());
                Ok(grant)
            }
            Err(error) => {
                let reason = match &error {
                    Error::BreakGlass { reason } => reason.clone(),
                    other => other.to_string(),
                };
                let _unaudited = self.log(
                    session,
                    "break_glass_refused",
                    json!({"request": request, "reason": reason}),
                    now,
                );
                Err(error)
            }
        }
    }
}

/// What an agent may ask for: an emergency override waiting for a second person.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Ask {
    /// Why the normal process cannot be followed.
    pub justification: String,
    /// Who asks.
    pub requester: String,
    /// What it would open.
    pub scope: Scope,
    /// For how long, in minutes.
    pub minutes: u64,
    /// For how many calls at most.
    pub calls: Option<u32>,
}

impl Ask {
    /// A request by `requester` for `scope`, `minutes` long.
    pub fn new(
        justification: impl Into<String>,
        requester: impl Into<String>,
        scope: Scope,
        minutes: u64,
    ) -> Self {
        Ask {
            justification: justification.into(),
            requester: requester.into(),
            scope,
            minutes,
            calls: None,
        }
    }
}

impl Guard {
    /// Files an emergency request in `session` for a second person to approve
    /// ([`approve`](Self::approve)); refused at once when no approval could grant it (too
    /// long, no justification, an unknown state). Audited.
    pub fn request_break_glass(
        &self,
        session: &mut Session,
        ask: Ask,
        now: DateTime<Utc>,
    ) -> Result<PendingRequest, Error> {
        let pending = PendingRequest {
            id: format!(
                "req-{}-{}",
                session.id,
                session.requests.len() + session.grants.len() + 1
            ),
            justification: ask.justification,
            requester: ask.requester,
            scope: ask.scope,
            minutes: ask.minutes,
            calls: ask.calls,
            requested_at: now,
        };
        // Checked as if a second person approved it now.
        let checked = pending
            .approved_by(format!("{} (a second person)", pending.requester))
            .grant(&self.policy, "check", now);
        if let Err(error) = checked {
            let _unaudited = self.log(
                session,
                "break_glass_refused",
                json!({"request": pending, "reason": error.to_string()}),
                now,
            );
            return Err(error);
        }
        let _unaudited = self.log(session, "break_glass_requested", json!(pending), now);
        session.requests.push(pending.clone());
        Ok(pending)
    }

    /// Approves request `id` of `session` as `approver` (not who asked): the grant starts
    /// now. A granted request leaves the pending list; a refused one (approved by who asked)
    /// stays for a second person, and the refusal is audited.
    pub fn approve(
        &self,
        session: &mut Session,
        id: &str,
        approver: &str,
        now: DateTime<Utc>,
    ) -> Result<Grant, Error> {
        let Some(index) = session.requests.iter().position(|request| request.id == id) else {
            let pending: Vec<&str> = session.requests.iter().map(|r| r.id.as_str()).collect();
            return Err(Error::BreakGlass {
                reason: if pending.is_empty() {
                    format!("no request `{id}` is waiting in session `{}`", session.id)
                } else {
                    format!(
                        "no request `{id}` is waiting in session `{}` (waiting: {})",
                        session.id,
                        pending.join(", ")
                    )
                },
            });
        };
        let request = session.requests[index].approved_by(approver);
        let granted = self.break_glass(session, request, now);
        if granted.is_ok() {
            session.requests.remove(index);
        }
        granted
    }
}

/// A state's verdict on a tool.
#[derive(Clone)]
struct Gate {
    allowed_by_name: bool,
    refusal: Option<String>,
}
