//! Break-glass: an emergency override a second person approves, bounded in scope and time,
//! every use audited, and a review due afterwards.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::glob::Glob;
use crate::policy::Policy;

/// What a grant opens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Scope {
    /// Decide calls as if the session were in this state (the ADR's `skipToState`).
    State(String),
    /// Allow these tools (patterns) whatever the state.
    Tools(Vec<String>),
}

/// A request for an emergency override.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct BreakGlassRequest {
    /// Why the normal process cannot be followed.
    pub justification: String,
    /// Who asks.
    pub requester: String,
    /// Who approves (not the requester).
    pub approver: String,
    /// What it opens.
    pub scope: Scope,
    /// For how long, in minutes (at most the policy's `break_glass.max_minutes`).
    pub minutes: u64,
    /// For how many calls at most (none: any number until it expires). A grant for one
    /// call lets exactly one blocked action through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<u32>,
}

/// A request for an emergency override that no one has approved yet: an agent asks, and a
/// second person approves it (`wayline guard approve`), never the one who asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PendingRequest {
    /// Its id, for the approver.
    pub id: String,
    /// Why the normal process cannot be followed.
    pub justification: String,
    /// Who asks.
    pub requester: String,
    /// What it would open.
    pub scope: Scope,
    /// For how long, in minutes.
    pub minutes: u64,
    /// For how many calls at most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<u32>,
    /// When it was asked for.
    pub requested_at: DateTime<Utc>,
}

impl PendingRequest {
    /// The request, approved by `approver`.
    pub fn approved_by(&self, approver: impl Into<String>) -> BreakGlassRequest {
        BreakGlassRequest {
            justification: self.justification.clone(),
            requester: self.requester.clone(),
            approver: approver.into(),
            scope: self.scope.clone(),
            minutes: self.minutes,
            calls: self.calls,
        }
    }
}

/// A granted override.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Grant {
    /// Its id.
    pub id: String,
    /// The request it answers.
    pub request: BreakGlassRequest,
    /// When it was granted.
    pub granted_at: DateTime<Utc>,
    /// When it stops applying, by itself.
    pub expires_at: DateTime<Utc>,
    /// When its use must have been reviewed.
    pub review_by: DateTime<Utc>,
    /// How many calls it has let through.
    #[serde(default)]
    pub used: u32,
}

impl BreakGlassRequest {
    /// A request.
    pub fn new(
        justification: impl Into<String>,
        requester: impl Into<String>,
        approver: impl Into<String>,
        scope: Scope,
        minutes: u64,
    ) -> Self {
        BreakGlassRequest {
            justification: justification.into(),
            requester: requester.into(),
            approver: approver.into(),
            scope,
            minutes,
            calls: None,
        }
    }

    /// The same request, for at most `calls` calls.
    #[must_use]
    pub fn calls(mut self, calls: u32) -> Self {
        self.calls = Some(calls);
        self
    }

    /// Checks the request against `policy` and grants it from `now`.
    pub fn grant(
        self,
        policy: &Policy,
        id: impl Into<String>,
        now: DateTime<Utc>,
    ) -> Result<Grant, Error> {
        let refuse = |reason: String| Err(Error::BreakGlass { reason });
        if self.justification.trim().len() < 10 {
            return refuse("give a justification (at least 10 characters) saying why the normal process cannot be followed".into());
        }
        if self.requester.trim().is_empty() || self.approver.trim().is_empty() {
            return refuse("name both the requester and the approver".into());
        }
        if same_person(&self.requester, &self.approver) {
            return refuse(format!(
                "`{}` cannot approve their own request; a second person must",
                self.requester.trim()
            ));
        }
        if self.calls == Some(0) {
            return refuse(
                "a grant for calls lets at least one through; leave `calls` out for no limit"
                    .into(),
            );
        }
        let limits = policy.break_glass();
        if self.minutes == 0 || self.minutes > limits.max_minutes {
            return refuse(format!(
                "a grant lasts 1 to {} minutes under this policy, not {}",
                limits.max_minutes, self.minutes
            ));
        }
        match &self.scope {
            Scope::State(state) if policy.state(state).is_none() => {
                return refuse(format!("unknown state `{state}`"));
            }
            Scope::Tools(patterns) if patterns.is_empty() => {
                return refuse("name at least one tool pattern".into());
            }
            Scope::Tools(patterns) => {
                for pattern in patterns {
                    if let Err(error) = Glob::new(pattern) {
                        return refuse(error.to_string());
                    }
                }
            }
            Scope::State(_) => {}
        }
        let minutes = i64::try_from(self.minutes).unwrap_or(i64::MAX);
        let hours = i64::try_from(limits.review_within_hours).unwrap_or(i64::MAX);
        let expires_at = Duration::try_minutes(minutes)
            .and_then(|length| now.checked_add_signed(length))
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        let review_by = Duration::try_hours(hours)
            .and_then(|length| expires_at.checked_add_signed(length))
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        Ok(Grant {
            id: id.into(),
            request: self,
            granted_at: now,
            expires_at,
            review_by,
            used: 0,
        })
    }
}

/// Names compared as people: case and spacing do not make a second person.
fn same_person(a: &str, b: &str) -> bool {
    let normal = |name: &str| {
        name.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    normal(a) == normal(b)
}

impl Grant {
    /// Checks that the grant obeys `policy`'s rules (a second person approved it, it lasts no
    /// longer than allowed, its patterns and state are valid); a grant read from a file that
    /// fails this is ignored.
    pub fn check(&self, policy: &Policy) -> Result<(), Error> {
        let regranted = self
            .request
            .clone()
            .grant(policy, self.id.clone(), self.granted_at)?;
        if self.expires_at > regranted.expires_at {
            return Err(Error::BreakGlass {
                reason: format!(
                    "grant {} lasts longer than the {} minutes it was granted for",
                    self.id, self.request.minutes
                ),
            });
        }
        Ok(())
    }

    /// True while it applies: not expired, and calls left if it counts them.
    pub fn active(&self, now: DateTime<Utc>) -> bool {
        self.granted_at <= now
            && now < self.expires_at
            && self.request.calls.is_none_or(|calls| self.used < calls)
    }

    /// True when it opens `tool`; `state_allows` says whether its state (for a state scope)
    /// allows the tool.
    pub(crate) fn covers(&self, tool: &str) -> bool {
        match &self.request.scope {
            Scope::Tools(patterns) => patterns
                .iter()
                .filter_map(|pattern| Glob::new(pattern).ok())
                .any(|glob| glob.matches(tool)),
            Scope::State(_) => false,
        }
    }

    /// The state it lets calls be decided in, for a state scope.
    pub(crate) fn state(&self) -> Option<&str> {
        match &self.request.scope {
            Scope::State(state) => Some(state),
            Scope::Tools(_) => None,
        }
    }
}
