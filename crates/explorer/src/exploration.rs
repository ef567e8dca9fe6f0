//! An [`Exploration`]: one run of the explorer toward a target, persisted as YAML after every
//! step in the TiDB Cloud explorer's session format (`session`, `current_state`,
//! `confirmed_steps`, `pending_step`, `rejected_steps`), so a killed exploration resumes where
//! it stopped without repeating a confirmed step. The file and the command line call it a
//! session (`--session-dir`, `ses_…` ids, the `session:` block), as that format does.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use wayline_core::intervene::Answerer;

use crate::Error;
use crate::intent::Goal;
use crate::state::ExploreState;

/// Where an exploration is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ExplorationStatus {
    /// Going on (or stopped before the end; resume it).
    InProgress,
    /// The target was reached.
    Completed,
    /// A person stopped it.
    Aborted,
    /// It could not go on.
    Failed,
}

impl ExplorationStatus {
    /// The status as session files write it (`in_progress`, `completed`, `aborted`, `failed`).
    pub fn as_str(self) -> &'static str {
        match self {
            ExplorationStatus::InProgress => "in_progress",
            ExplorationStatus::Completed => "completed",
            ExplorationStatus::Aborted => "aborted",
            ExplorationStatus::Failed => "failed",
        }
    }
}

/// The file's `session` block: the exploration's id, target, mode and status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ExplorationInfo {
    /// `ses_<hex>`.
    pub id: String,
    /// The SUT's name.
    pub sut: String,
    /// The target, as given.
    pub target: String,
    /// `auto` or `manual`.
    pub mode: String,
    /// When it began.
    pub created_at: DateTime<Utc>,
    /// When it was last saved.
    pub updated_at: DateTime<Utc>,
    /// Where it is.
    pub status: ExplorationStatus,
}

/// A step that ran and was kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ConfirmedStep {
    /// Its position.
    pub order: u32,
    /// The operation.
    pub operation_id: String,
    /// The request as sent (secrets left out) and its inputs.
    pub request: Value,
    /// The response: status and the fields read.
    pub response: Value,
    /// The variables it saved.
    #[serde(default)]
    pub saved_variables: Vec<String>,
    /// The goal it served, if any (a wait or a dependency serves none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<Goal>,
    /// The condition it polled until, if it polled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// How many calls it took.
    #[serde(default = "one")]
    pub attempts: u32,
}

fn one() -> u32 {
    1
}

/// A step that was not kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RejectedStep {
    /// The operation.
    pub operation_id: String,
    /// Why it was not kept.
    pub error: String,
    /// What the person (or the auto mode) did about it.
    pub user_action: String,
}

/// One exploration, as its file holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Exploration {
    /// Who and what.
    pub session: ExplorationInfo,
    /// Resources and variables.
    pub current_state: ExploreState,
    /// The steps kept, in order.
    #[serde(default)]
    pub confirmed_steps: Vec<ConfirmedStep>,
    /// The step running when the session was last saved (set before it runs, cleared after).
    #[serde(default)]
    pub pending_step: Option<Value>,
    /// Steps not kept.
    #[serde(default)]
    pub rejected_steps: Vec<RejectedStep>,
    /// The goals reached (or skipped by a person).
    #[serde(default)]
    pub goals_done: Vec<Goal>,
    /// Questions asked of a person.
    #[serde(default)]
    pub interventions: u32,
    /// The suggestions' confidences, in order (to see learning at work).
    #[serde(default)]
    pub confidences: Vec<f64>,
    /// Values the explorer made up, in auto mode, for required name-like fields nothing gave
    /// (`title: wayline-5f2a1c-1`), by field.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub generated: IndexMap<String, Value>,
    /// Every question asked and every value made up, in order, with the answer and who gave
    /// it: what a run with `--auto` or an answers file did in a person's stead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transcript: Vec<Exchange>,
    /// The operations a person chose for goals (instead of the one suggested): the next
    /// suggestions for those goals, retries included, are these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<Choice>,
    /// Why the session stopped, once it has (completed, failed, stopped by a person, or out
    /// of steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

/// An operation a person chose for a goal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Choice {
    /// The goal.
    pub goal: Goal,
    /// The operation chosen for it.
    pub operation: String,
}

/// One question the session asked, or one value it made up, as the transcript keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Exchange {
    /// How many steps were confirmed before it.
    pub after_steps: u32,
    /// The question's kind (`confirm`, `choose`, `pitfall`, `clarify`, `credentials`,
    /// `error`), or `made_up` for a value auto mode made up.
    pub kind: String,
    /// The operation it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// The question, as put.
    pub question: String,
    /// The options offered, for a choice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// The answer in words: `yes`, `no`, `stop`, `option 0 (patchPost)`, or the text given
    /// (secret fields masked).
    pub answer: String,
    /// Who gave it.
    pub by: Answerer,
}

impl Exploration {
    /// Ends the session with `status`, saying why.
    pub fn end(&mut self, status: ExplorationStatus, reason: impl Into<String>) {
        self.session.status = status;
        self.stop_reason = Some(reason.into());
    }

    /// A new session.
    pub fn new(sut: &str, target: &str, mode: &str, now: DateTime<Utc>) -> Self {
        Exploration {
            session: ExplorationInfo {
                id: format!("ses_{:012x}", fastrand::u64(..) & 0xffff_ffff_ffff),
                sut: sut.to_owned(),
                target: target.to_owned(),
                mode: mode.to_owned(),
                created_at: now,
                updated_at: now,
                status: ExplorationStatus::InProgress,
            },
            current_state: ExploreState::default(),
            confirmed_steps: Vec::new(),
            pending_step: None,
            rejected_steps: Vec::new(),
            goals_done: Vec::new(),
            interventions: 0,
            confidences: Vec::new(),
            generated: IndexMap::new(),
            transcript: Vec::new(),
            choices: Vec::new(),
            stop_reason: None,
        }
    }

    /// The operations confirmed so far, in order.
    pub fn confirmed_operations(&self) -> Vec<String> {
        self.confirmed_steps
            .iter()
            .map(|step| step.operation_id.clone())
            .collect()
    }

    /// The file of session `id` in `dir`.
    pub fn path(dir: &Path, id: &str) -> PathBuf {
        dir.join(format!("{id}.yaml"))
    }

    /// Writes the session to `dir`, durably ([`wayline_durable::write`]): a crash leaves the
    /// session as it was before this save or after it, never an empty file.
    pub fn save(&mut self, dir: &Path, now: DateTime<Utc>) -> Result<PathBuf, Error> {
        self.session.updated_at = now;
        let path = Exploration::path(dir, &self.session.id);
        // Secret variables stay in memory only (the SUT's presets give them on resume): they
        // are set aside while the session is written, not copied with the whole session.
        let all = std::mem::take(&mut self.current_state.variables);
        self.current_state.variables = all
            .iter()
            .filter(|(name, _)| !crate::state::is_secret_name(name))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        let text = serde_norway::to_string(&*self);
        self.current_state.variables = all;
        let text = text.map_err(|error| Error::Encode {
            message: error.to_string(),
        })?;
        wayline_durable::write(&path, text.as_bytes())?;
        Ok(path)
    }

    /// Reads session `id` from `dir`.
    pub fn load(dir: &Path, id: &str) -> Result<Exploration, Error> {
        if id.is_empty()
            || !id
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        {
            return Err(Error::SessionId { id: id.to_owned() });
        }
        let path = Exploration::path(dir, id);
        let text = wayline_durable::read::text(
            &path,
            wayline_core::document::Limits::configured().max_bytes,
        )
        .map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        Ok(wayline_core::document::parse(
            &text,
            wayline_core::document::Format::Yaml,
            &path.display().to_string(),
        )?)
    }
}
