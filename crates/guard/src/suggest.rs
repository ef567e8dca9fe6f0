//! Memory-guided suggestions (the ADR's `MemoryGuidedWorkflow`): similar past incidents for the
//! symptoms gathered, the evidence still missing with the tools that provide it, and the tools
//! the current state allows.

use chrono::{DateTime, Utc};
use serde::Serialize;
use wayline_core::IncidentMemory;

use crate::guard::Guard;
use crate::session::Session;

/// How urgent a suggestion is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Worth a look.
    Low,
    /// Do this next.
    Medium,
    /// Do this first.
    High,
}

/// One suggestion.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Suggestion {
    /// `pattern_match`, `evidence_gap` or `next_tools`.
    pub kind: &'static str,
    /// How urgent.
    pub priority: Priority,
    /// What to tell the operator.
    pub message: String,
    /// What to do.
    pub actions: Vec<String>,
}

impl Guard {
    /// Suggestions for `session`, most urgent first. `memory` (the knowledge base, or a host's
    /// incident store) supplies similar past incidents for the symptoms gathered.
    pub fn suggest(
        &self,
        session: &Session,
        memory: Option<&dyn IncidentMemory>,
        now: DateTime<Utc>,
    ) -> Vec<Suggestion> {
        let mut suggestions = Vec::new();
        let symptoms: Vec<&str> = session
            .evidence
            .iter()
            .filter(|item| item.kind == "symptoms" || item.kind == "symptom")
            .map(|item| item.description.as_str())
            .collect();
        if let (Some(memory), false) = (memory, symptoms.is_empty()) {
            let incidents: Vec<_> = memory
                .similar_incidents(&symptoms.join(" "), 5)
                .into_iter()
                .filter(|incident| incident.resolution.is_some())
                .collect();
            if !incidents.is_empty() {
                suggestions.push(Suggestion {
                    kind: "pattern_match",
                    priority: Priority::High,
                    message: format!(
                        "I found {} similar incident{}. Let's look at how they were resolved.",
                        incidents.len(),
                        if incidents.len() == 1 { "" } else { "s" }
                    ),
                    actions: incidents
                        .iter()
                        .map(|incident| {
                            format!(
                                "Review how {} was resolved: {}",
                                incident.id,
                                incident.resolution.as_deref().unwrap_or_default()
                            )
                        })
                        .collect(),
                });
            }
        }
        let policy = self.policy();
        if let Some(config) = policy.state(&session.state) {
            let gaps: Vec<String> = config
                .required_evidence
                .iter()
                .filter(|requirement| {
                    session.evidence_in_state(&requirement.kind) < requirement.min_count
                })
                .map(|requirement| {
                    let tools: Vec<&str> = policy
                        .file()
                        .evidence
                        .iter()
                        .filter(|(_, kind)| **kind == requirement.kind)
                        .map(|(pattern, _)| pattern.as_str())
                        .collect();
                    let have = session.evidence_in_state(&requirement.kind);
                    if tools.is_empty() {
                        format!(
                            "Record {} evidence ({have} of {}): no tool provides it, write it down",
                            requirement.kind, requirement.min_count
                        )
                    } else {
                        format!(
                            "Gather {} evidence ({have} of {}) with {}",
                            requirement.kind,
                            requirement.min_count,
                            tools.join(", ")
                        )
                    }
                })
                .collect();
            if !gaps.is_empty() {
                suggestions.push(Suggestion {
                    kind: "evidence_gap",
                    priority: Priority::Medium,
                    message: "We're missing some key evidence for a complete diagnosis.".into(),
                    actions: gaps,
                });
            }
            let waiting = self
                .missing(session, now)
                .into_iter()
                .filter(|item| item.contains(" s in the "))
                .collect::<Vec<_>>();
            if !config.allowed_tools.is_empty() {
                let mut actions = vec![format!(
                    "In {}: {}",
                    session.state,
                    config.allowed_tools.join(", ")
                )];
                actions.extend(waiting);
                suggestions.push(Suggestion {
                    kind: "next_tools",
                    priority: Priority::Low,
                    message: config.guidance_message.clone(),
                    actions,
                });
            }
        }
        suggestions.sort_by_key(|suggestion| std::cmp::Reverse(suggestion.priority));
        suggestions
    }
}
