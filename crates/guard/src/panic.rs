//! Panic detection: the patterns of a "4 AM panic operation", each raised as a signal with a
//! severity and the evidence that triggered it.

use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use crate::policy::{Policy, ToolClass};
use crate::session::{Call, Session};
use crate::signal::{PanicKind, PanicSignal, Severity};

/// The call being decided, as the detectors see it.
pub(crate) struct Candidate<'a> {
    pub(crate) tool: &'a str,
    pub(crate) class: ToolClass,
    pub(crate) domain: Option<&'a str>,
    /// True when the current state allows the tool by name.
    pub(crate) allowed_by_name: bool,
}

/// Whole seconds from `now` until a state-changing call raises no rapid-fire signal, when
/// the one being decided (at `now`) joins the history (blocked or not, it counts): until so
/// few of the calls stay within the window that one more stays under `count`. `None` when no
/// wait helps (a `count` of one: every such call raises it).
fn rapid_fire_wait(
    recent: &[&Call],
    count: usize,
    window: Duration,
    now: DateTime<Utc>,
) -> Option<i64> {
    // Newest first, the call being decided included; the call at index `count - 2` is the one
    // that must leave the window (a call exactly `window` old is still in it).
    let limiting = match count.checked_sub(2)? {
        0 => Some(now),
        index => recent.get(index - 1).map(|past| past.at),
    };
    Some(
        limiting
            .and_then(|at| at.checked_add_signed(window))
            .map_or(i64::MAX, |leaves| {
                (leaves - now).num_seconds().saturating_add(1).max(0)
            }),
    )
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
        let recent: Vec<&Call> = session
            .history
            .iter()
            .rev()
            .take_while(|past| past.at >= since)
            .filter(|past| past.class.changes_resources())
            .collect();
        if recent.len() + 1 >= config.rapid_fire_count {
            let wait = rapid_fire_wait(&recent, config.rapid_fire_count, window, now);
            let advice = wait
                .map(|wait| format!("; wait {wait} s before the next one"))
                .unwrap_or_default();
            signals.push(signal(
                PanicKind::RapidFireCommands,
                Severity::High,
                format!(
                    "{} state-changing operations within {} s{advice}",
                    recent.len() + 1,
                    config.rapid_fire_window_seconds
                ),
                json!({
                    "recent": recent.iter().map(|past| &past.tool).collect::<Vec<_>>(),
                    "requested": call.tool,
                    "retry_after_seconds": wait,
                }),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn write_at(at: DateTime<Utc>) -> Call {
        Call {
            tool: "oc_delete_pod".into(),
            class: ToolClass::Destructive,
            at,
            domain: None,
            decision: "block".into(),
            state: "gathering".into(),
        }
    }

    #[test]
    fn the_wait_lasts_until_few_enough_calls_stay_in_the_window() {
        let now: DateTime<Utc> = "2026-01-01T04:00:00Z".parse().unwrap();
        let window = Duration::seconds(30);
        let past = [
            write_at(now - Duration::seconds(10)),
            write_at(now - Duration::seconds(20)),
        ];
        let recent: Vec<&Call> = past.iter().collect();
        // Three in the window raise it: at now + 20 the call 10 s old is exactly 30 s old and
        // still in; a second later only the call being decided is.
        assert_eq!(rapid_fire_wait(&recent, 3, window, now), Some(21));
        // Two raise it: the call being decided itself must leave.
        assert_eq!(rapid_fire_wait(&recent, 2, window, now), Some(31));
        assert_eq!(rapid_fire_wait(&recent, 4, window, now), Some(11));
        assert_eq!(
            rapid_fire_wait(&recent, 3, Duration::MAX, now),
            Some(i64::MAX),
            "a window past the end of time never ends"
        );
        assert_eq!(
            rapid_fire_wait(&recent, 1, window, now),
            None,
            "one call raises it: no wait helps"
        );
    }
}
