//! [`GuardPolicy`]: the guard as the executor's [`StepPolicy`], one diagnostic session per
//! engine (or per run, as the host chooses).

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde_json::Value;
use wayline_core::{StepPolicy, StepRequest, Verdict};

use crate::guard::{Guard, GuardVerdict, ToolCall};
use crate::session::Session;

/// A [`Guard`] and the session it keeps, as a [`StepPolicy`]: each step is decided as a tool
/// call (its tool id the tool's name, its definition for classes by metadata, its
/// `namespace` / `resource` / `domain` input as its domain), and a successful step adds the
/// evidence its tool yields.
#[derive(Debug, Clone)]
pub struct GuardPolicy {
    guard: Guard,
    session: Arc<Mutex<Session>>,
    clock: fn() -> DateTime<Utc>,
}

impl GuardPolicy {
    /// The guard over `session`, on the system clock.
    pub fn new(guard: Guard, session: Session) -> Self {
        GuardPolicy {
            guard,
            session: Arc::new(Mutex::new(session)),
            clock: Utc::now,
        }
    }

    /// Uses `clock` for time (tests).
    #[must_use]
    pub fn clock(mut self, clock: fn() -> DateTime<Utc>) -> Self {
        self.clock = clock;
        self
    }

    /// The session as it stands.
    pub fn session(&self) -> Session {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Session> {
        self.session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl StepPolicy for GuardPolicy {
    fn check(&self, step: &StepRequest<'_>) -> Verdict {
        let domain = self.guard.policy().domain_of(|name| step.inputs.get(name));
        let mut call = ToolCall::new(step.tool_id);
        if let Some(tool) = step.tool {
            call = call.definition(tool);
        }
        if let Some(domain) = domain {
            call = call.domain(domain);
        }
        let mut session = self.lock();
        match self.guard.decide(&mut session, call, (self.clock)()) {
            GuardVerdict::Allow { .. } => Verdict::Allow,
            GuardVerdict::Warn { message, .. } => Verdict::Warn(message),
            GuardVerdict::Block {
                reason,
                recommended_actions,
                ..
            } => {
                let advice = recommended_actions
                    .first()
                    .map(|first| format!("; {first}"))
                    .unwrap_or_default();
                Verdict::Block(format!("{reason}{advice}"))
            }
        }
    }

    fn finished(&self, step: &StepRequest<'_>, success: bool, _output: Option<&Value>) {
        let mut session = self.lock();
        let summary = format!("step `{}` of run {}", step.step_id, step.run_id);
        self.guard.record_result(
            &mut session,
            step.tool_id,
            success,
            &summary,
            (self.clock)(),
        );
    }
}
