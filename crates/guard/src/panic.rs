//! Panic detection: the patterns of a "4 AM panic operation", each raised as a signal with a
//! severity and the evidence that triggered it.

use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use crate::policy::{Policy, ToolClass};
use crate::session::Session;
use crate::signal::{PanicKind, PanicSignal, Severity};

/// The call being decided, as the detectors see it.
pub(crate) struct Candidate<'a> {
    pub(crate) tool: &'a str,
    pub(crate) class: ToolClass,
    pub(crate) domain: Option<&'a str>,
    /// True when the current state allows the tool by name.
    pub(crate) allowed_by_name: bool,
}

/// Every signal the call would raise.
pub(crate) fn detect(
    policy: &Policy,
    session: &Session,
    call: &Candidate<'_>,
    now: DateTime<Utc>,
) -> Vec<PanicSignal> {
    let config = policy.panic();
    let mut signals = Vec::new();
    let signal = |kind, severity, description: String, evidence| PanicSignal {
        kind,
        severity,
        at: now,
        description,
        evidence,
    };

    // Every state-changing class counts, as the ADR's apply, delete and restart do: a burst of
    // writes is as much a panic as a burst of deletes.
    if call.class.changes_resources() && config.rapid_fire_count > 0 {
        let window = i64::try_from(config.rapid_fire_window_seconds)
            .ok()
            .and_then(Duration::try_seconds)
            .unwrap_or(Duration::MAX);
        let since = now
            .checked_sub_signed(window)
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        let recent: Vec<&str> = session
            .history
            .iter()
            .rev()
            .take_while(|past| past.at >= since)
            .filter(|past| past.class.changes_resources())
            .map(|past| past.tool.as_str())
            .collect();
        if recent.len() + 1 >= config.rapid_fire_count {
            signals.push(signal(
                PanicKind::RapidFireCommands,
                Severity::High,
                format!(
                    "{} state-changing operations within {} s",
                    recent.len() + 1,
                    config.rapid_fire_window_seconds
                ),
                json!({"recent": recent, "requested": call.tool}),
            ));
        }
    }

    if call.class.changes_things() && call.class != ToolClass::Privileged {
        let early = config.early_states.contains(&session.state);
        let thin = session.evidence.len() < config.min_evidence_for_write;
        if early || thin {
            let why = match (early, thin) {
                (true, true) => format!(
                    "in the {} state with {} of {} evidence items",
                    session.state,
                    session.evidence.len(),
                    config.min_evidence_for_write
                ),
                (true, false) => format!("in the {} state", session.state),
                _ => format!(
                    "with {} of {} evidence items",
                    session.evidence.len(),
                    config.min_evidence_for_write
                ),
            };
            signals.push(signal(
                PanicKind::BypassingDiagnostics,
                Severity::Critical,
                format!("a {} operation {why}", call.class.name()),
                json!({"state": session.state, "evidence": session.evidence.len(), "requested": call.tool}),
            ));
        }
    }

    if let Some(domain) = call.domain
        && config.domain_switches > 0
    {
        // Domains of the recent calls made since the last evidence was gathered.
        let last_evidence = session.evidence.last().map(|item| item.at);
        let mut domains: Vec<&str> = session
            .history
            .iter()
            .rev()
            .take(config.domain_window.saturating_sub(1))
            .take_while(|past| last_evidence.is_none_or(|at| past.at > at))
            .filter_map(|past| past.domain.as_deref())
            .collect();
        domains.push(domain);
        domains.sort_unstable();
        domains.dedup();
        if domains.len() >= config.domain_switches {
            signals.push(signal(
                PanicKind::JumpingBetweenDomains,
                Severity::Medium,
                format!(
                    "{} different areas in the last {} calls without new evidence",
                    domains.len(),
                    config.domain_window
                ),
                json!({"domains": domains}),
            ));
        }
    }

    if call.class == ToolClass::Privileged {
        // A state that names the tool (testing allows `oc_exec`) makes it a note, not a stop.
        let severity = if call.allowed_by_name {
            Severity::Medium
        } else {
            Severity::High
        };
        signals.push(signal(
            PanicKind::EscalatingPermissions,
            severity,
            format!(
                "the privileged tool {} in the {} state",
                call.tool, session.state
            ),
            json!({"requested": call.tool, "state": session.state}),
        ));
    }
    signals
}
