//! Bay's skill lifecycle (`/v1/skills/…`): executions become a *candidate* skill, an
//! *evaluation* passes or rejects it, a passing candidate is *promoted* to a versioned
//! *release*, and a release can be *rolled back* to the one before, with its *health* judged
//! from the executions tagged `release:<id>`.
//!
//! [`SkillLifecycle`] is the contract; the [`LocalProvider`](crate::LocalProvider) keeps the
//! records in its data directory and the [`BayClient`](crate::BayClient) asks a Bay. The wire
//! records here are Bay 0.3.1's (`SkillCandidateResponse`, `SkillReleaseResponse`, …); the
//! rules that need no storage (what a status or stage may be, what a payload reference looks
//! like, how health is judged) live here too, so every implementation applies the same ones.
//!
//! # Contract (Bay's semantics)
//!
//! - a candidate names the executions it was learned from; an id no sandbox ran is a
//!   `validation_error` (400), as is an empty `skill_key` or an empty list;
//! - a failed evaluation marks the candidate `rejected`; promotion needs the latest evaluation
//!   to have passed (`conflict`, 409, otherwise) and a stage of `canary` or `stable`;
//! - releases of one skill key count 1, 2, 3…, and promoting deactivates the others, so at
//!   most one is active;
//! - rolling a release back makes a new active release of the release before it (its
//!   candidate and stage, the next version, `rollback_of` the one rolled back), marks the
//!   rolled-back candidate `rolled_back`, and is a `conflict` when there is no release before;
//! - deleting is soft (`is_deleted`, `deleted_at`); a candidate an active release stands on
//!   cannot be deleted (`conflict`); a deleted release is deactivated and no candidate points
//!   at it any more;
//! - payloads are JSON objects or arrays kept under `blob:<id>`: another reference is a
//!   `validation_error`, an unknown blob `not_found`;
//! - lists answer `{items, total}`, newest first, `limit` 1..=500 (100) after `offset`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{ErrorCode, SandboxError};

/// What a skill operation answers (the crate's `SandboxResult`).
type SandboxResult<T> = Result<T, SandboxError>;

/// A candidate's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CandidateStatus {
    /// Made, not evaluated.
    Draft,
    /// Evaluated, and the latest evaluation passed (Bay leaves the status here).
    Evaluating,
    /// A release stands on it.
    Promoted,
    /// Promoted to canary automatically (Bay's browser skills; never made here).
    PromotedCanary,
    /// Promoted to stable automatically (likewise).
    PromotedStable,
    /// An evaluation failed.
    Rejected,
    /// Its release was rolled back.
    RolledBack,
}

impl CandidateStatus {
    /// Every status, as Bay lists them.
    pub const ALL: [CandidateStatus; 7] = [
        CandidateStatus::Draft,
        CandidateStatus::Evaluating,
        CandidateStatus::Promoted,
        CandidateStatus::PromotedCanary,
        CandidateStatus::PromotedStable,
        CandidateStatus::Rejected,
        CandidateStatus::RolledBack,
    ];

    /// The status as Bay writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            CandidateStatus::Draft => "draft",
            CandidateStatus::Evaluating => "evaluating",
            CandidateStatus::Promoted => "promoted",
            CandidateStatus::PromotedCanary => "promoted_canary",
            CandidateStatus::PromotedStable => "promoted_stable",
            CandidateStatus::Rejected => "rejected",
            CandidateStatus::RolledBack => "rolled_back",
        }
    }

    /// The status `text` names; a `validation_error` naming the ones there are otherwise.
    pub fn parse(text: &str) -> SandboxResult<CandidateStatus> {
        Self::ALL
            .into_iter()
            .find(|status| status.as_str() == text)
            .ok_or_else(|| {
                let known: Vec<&str> = Self::ALL.iter().map(|status| status.as_str()).collect();
                invalid(format!(
                    "Invalid candidate status: {text} (one of {})",
                    known.join(", ")
                ))
            })
    }
}

/// Where a release is rolled out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ReleaseStage {
    /// Tried on part of the traffic first (Bay's default).
    #[default]
    Canary,
    /// For everyone.
    Stable,
}

impl ReleaseStage {
    /// The stage as Bay writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReleaseStage::Canary => "canary",
            ReleaseStage::Stable => "stable",
        }
    }

    /// The stage `text` names; a `validation_error` otherwise.
    pub fn parse(text: &str) -> SandboxResult<ReleaseStage> {
        [ReleaseStage::Canary, ReleaseStage::Stable]
            .into_iter()
            .find(|stage| stage.as_str() == text)
            .ok_or_else(|| invalid(format!("Invalid release stage: {text} (canary or stable)")))
    }
}

fn invalid(message: String) -> SandboxError {
    SandboxError::new(ErrorCode::ValidationError, message)
}

/// What a payload reference starts with.
pub const BLOB_PREFIX: &str = "blob:";

/// The blob id a payload reference names (`blob:<id>`); a `validation_error` for another
/// kind of reference or an empty id.
pub fn blob_id(payload_ref: &str) -> SandboxResult<&str> {
    let Some(id) = payload_ref.strip_prefix(BLOB_PREFIX) else {
        return Err(invalid(format!(
            "Unsupported payload_ref: {payload_ref} (payload references are blob:<id>, as POST /v1/skills/payloads answers)"
        )));
    };
    if id.is_empty() {
        return Err(invalid(format!("Invalid payload_ref: {payload_ref}")));
    }
    Ok(id)
}

/// A payload to keep (Bay's `SkillPayloadCreateRequest`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NewPayload {
    /// A JSON object or array.
    pub payload: Value,
    /// What it is (`generic` unless said; never empty).
    #[serde(default = "generic")]
    pub kind: String,
}

fn generic() -> String {
    "generic".to_owned()
}

impl NewPayload {
    /// `payload` of kind `generic`.
    pub fn new(payload: Value) -> Self {
        NewPayload {
            payload,
            kind: generic(),
        }
    }

    /// Of kind `kind`.
    pub fn kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = kind.into();
        self
    }

    /// A `validation_error` when the payload is no object or array, or the kind is empty.
    pub fn check(&self) -> SandboxResult<()> {
        if !(self.payload.is_object() || self.payload.is_array()) {
            return Err(invalid("payload must be a JSON object or array".to_owned()));
        }
        if self.kind.is_empty() {
            return Err(invalid("kind must not be empty".to_owned()));
        }
        Ok(())
    }
}

/// A kept payload's reference (Bay's `SkillPayloadCreateResponse`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PayloadRef {
    /// `blob:<id>`.
    pub payload_ref: String,
    /// Its kind.
    pub kind: String,
}

/// A kept payload (Bay's `SkillPayloadResponse`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SkillPayload {
    /// `blob:<id>`.
    pub payload_ref: String,
    /// Its kind.
    pub kind: String,
    /// The object or array.
    pub payload: Value,
}

/// A candidate to make (Bay's `SkillCandidateCreateRequest`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NewCandidate {
    /// The skill it would become a release of.
    pub skill_key: String,
    /// The executions it was learned from (`exec-…` ids; at least one).
    pub source_execution_ids: Vec<String>,
    /// The scenario it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario_key: Option<String>,
    /// Where its payload is (any reference; `blob:…` when kept here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_ref: Option<String>,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// How to use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_notes: Option<String>,
    /// What must hold before it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preconditions: Option<Map<String, Value>>,
    /// What holds after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postconditions: Option<Map<String, Value>>,
}

impl NewCandidate {
    /// A candidate for `skill_key` learned from `executions`.
    pub fn new(
        skill_key: impl Into<String>,
        executions: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        NewCandidate {
            skill_key: skill_key.into(),
            source_execution_ids: executions.into_iter().map(Into::into).collect(),
            ..NewCandidate::default()
        }
    }

    /// With its payload at `payload_ref`.
    pub fn payload_ref(mut self, payload_ref: impl Into<String>) -> Self {
        self.payload_ref = Some(payload_ref.into());
        self
    }

    /// For `scenario`.
    pub fn scenario(mut self, scenario: impl Into<String>) -> Self {
        self.scenario_key = Some(scenario.into());
        self
    }

    /// A `validation_error` for an empty skill key or no executions (whether the executions
    /// exist is the provider's to check).
    pub fn check(&self) -> SandboxResult<()> {
        if self.skill_key.trim().is_empty() {
            return Err(invalid("skill_key must not be empty".to_owned()));
        }
        if self.source_execution_ids.is_empty() {
            return Err(invalid(
                "source_execution_ids must not be empty: name the executions (exec-… ids from python/exec or shell/exec) the skill was learned from".to_owned(),
            ));
        }
        Ok(())
    }
}

/// A candidate skill (Bay's `SkillCandidateResponse`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SkillCandidate {
    /// `sc-<12 hex>`.
    pub id: String,
    /// The skill it is for (trimmed).
    pub skill_key: String,
    /// The scenario it is for.
    pub scenario_key: Option<String>,
    /// Where its payload is.
    pub payload_ref: Option<String>,
    /// `code` (Bay also has `browser`, learned from its browser runtime).
    pub skill_type: String,
    /// Whether Bay may release it on its own (never here).
    pub auto_release_eligible: bool,
    /// Why or why not.
    pub auto_release_reason: Option<String>,
    /// What it does.
    pub summary: Option<String>,
    /// How to use it.
    pub usage_notes: Option<String>,
    /// What must hold before it runs.
    pub preconditions: Option<Map<String, Value>>,
    /// What holds after.
    pub postconditions: Option<Map<String, Value>>,
    /// The executions it was learned from.
    pub source_execution_ids: Vec<String>,
    /// Where it is in its life.
    pub status: CandidateStatus,
    /// The latest evaluation's score.
    pub latest_score: Option<f64>,
    /// Whether the latest evaluation passed.
    pub latest_pass: Option<bool>,
    /// When it was last evaluated.
    #[serde(default, with = "crate::time::optional")]
    pub last_evaluated_at: Option<DateTime<Utc>>,
    /// The release made from it, while that release is not deleted.
    pub promotion_release_id: Option<String>,
    /// Who made it.
    pub created_by: Option<String>,
    /// When it was made.
    #[serde(with = "crate::time::required")]
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    #[serde(with = "crate::time::required")]
    pub updated_at: DateTime<Utc>,
    /// Whether it was deleted.
    #[serde(default)]
    pub is_deleted: bool,
    /// When.
    #[serde(default, with = "crate::time::optional")]
    pub deleted_at: Option<DateTime<Utc>>,
    /// By whom.
    #[serde(default)]
    pub deleted_by: Option<String>,
    /// Why.
    #[serde(default)]
    pub delete_reason: Option<String>,
}

/// Which candidates to list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct CandidateQuery {
    /// Only in this state.
    pub status: Option<CandidateStatus>,
    /// Only for this skill.
    pub skill_key: Option<String>,
    /// At most this many (1..=500; 100).
    pub limit: Option<u32>,
    /// After skipping this many.
    pub offset: u32,
}

/// An evaluation's verdict (Bay's `SkillEvaluationRequest`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Evaluation {
    /// Whether the candidate passed.
    pub passed: bool,
    /// Its score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// The benchmark it was measured on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark_id: Option<String>,
    /// The report (a JSON report's `replay_success`, `error_rate`, `samples` and
    /// `p95_duration` stand in for a later release's baseline when the release made from
    /// this candidate has no tagged executions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
}

impl Evaluation {
    /// A verdict.
    pub fn new(passed: bool) -> Self {
        Evaluation {
            passed,
            ..Evaluation::default()
        }
    }

    /// With a score.
    pub fn score(mut self, score: f64) -> Self {
        self.score = Some(score);
        self
    }
}

/// A recorded evaluation (Bay's `SkillEvaluationResponse`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SkillEvaluation {
    /// `se-<12 hex>`.
    pub id: String,
    /// The candidate evaluated.
    pub candidate_id: String,
    /// The benchmark.
    pub benchmark_id: Option<String>,
    /// The score.
    pub score: Option<f64>,
    /// Whether it passed.
    pub passed: bool,
    /// The report.
    pub report: Option<String>,
    /// Who evaluated.
    pub evaluated_by: Option<String>,
    /// When.
    #[serde(with = "crate::time::required")]
    pub created_at: DateTime<Utc>,
}

/// A promotion (Bay's `SkillPromotionRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Promotion {
    /// The stage (`canary` unless said).
    #[serde(default)]
    pub stage: ReleaseStage,
    /// The release this one upgrades.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_of_release_id: Option<String>,
    /// Why it upgrades it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_reason: Option<String>,
    /// What changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_summary: Option<String>,
}

impl Promotion {
    /// To `stage`.
    pub fn to(stage: ReleaseStage) -> Self {
        Promotion {
            stage,
            ..Promotion::default()
        }
    }
}

/// A release of a skill (Bay's `SkillReleaseResponse`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SkillRelease {
    /// `sr-<12 hex>`.
    pub id: String,
    /// The skill.
    pub skill_key: String,
    /// The candidate released.
    pub candidate_id: String,
    /// 1, 2, 3… per skill key (a rollback takes the next number too).
    pub version: u32,
    /// Its stage.
    pub stage: ReleaseStage,
    /// Whether it is the skill's active release.
    pub is_active: bool,
    /// `manual` (Bay's automatic releases come from its browser learning).
    pub release_mode: String,
    /// Who promoted (or rolled back).
    pub promoted_by: Option<String>,
    /// When.
    #[serde(with = "crate::time::required")]
    pub promoted_at: DateTime<Utc>,
    /// The release this one rolled back.
    pub rollback_of: Option<String>,
    /// The release an automatic promotion came from.
    pub auto_promoted_from: Option<String>,
    /// When its health window ends (24 hours after promotion when unset).
    #[serde(default, with = "crate::time::optional")]
    pub health_window_end_at: Option<DateTime<Utc>>,
    /// The release it upgrades.
    #[serde(default)]
    pub upgrade_of_release_id: Option<String>,
    /// Why.
    #[serde(default)]
    pub upgrade_reason: Option<String>,
    /// What changed.
    #[serde(default)]
    pub change_summary: Option<String>,
    /// Whether it was deleted.
    #[serde(default)]
    pub is_deleted: bool,
    /// When.
    #[serde(default, with = "crate::time::optional")]
    pub deleted_at: Option<DateTime<Utc>>,
    /// By whom.
    #[serde(default)]
    pub deleted_by: Option<String>,
    /// Why.
    #[serde(default)]
    pub delete_reason: Option<String>,
}

/// Which releases to list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ReleaseQuery {
    /// Only of this skill.
    pub skill_key: Option<String>,
    /// Only active ones.
    pub active_only: bool,
    /// Only at this stage.
    pub stage: Option<ReleaseStage>,
    /// At most this many (1..=500; 100).
    pub limit: Option<u32>,
    /// After skipping this many.
    pub offset: u32,
}

/// What a deletion did (Bay's `SkillDeleteResponse`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Deleted {
    /// The candidate or release.
    pub id: String,
    /// When.
    #[serde(with = "crate::time::required")]
    pub deleted_at: DateTime<Utc>,
    /// By whom.
    pub deleted_by: Option<String>,
    /// Why.
    pub delete_reason: Option<String>,
}

/// One page of a list (Bay's `…ListResponse`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SkillPage<T> {
    /// The page, newest first.
    pub items: Vec<T>,
    /// How many match in all.
    pub total: u64,
}

/// The largest page.
pub const MAX_PAGE: u32 = 500;

/// The page of `items` (newest first already) that `limit` and `offset` ask for; a
/// `validation_error` for a limit outside 1..=500.
pub fn page<T>(items: Vec<T>, limit: Option<u32>, offset: u32) -> SandboxResult<SkillPage<T>> {
    let limit = limit.unwrap_or(100);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(invalid(format!("limit must be between 1 and {MAX_PAGE}")));
    }
    let total = items.len() as u64;
    let items = items
        .into_iter()
        .skip(offset as usize)
        .take(limit as usize)
        .collect();
    Ok(SkillPage { items, total })
}

/// How long after promotion a release's health is watched when it sets no end.
pub const HEALTH_WINDOW_HOURS: i64 = 24;

/// Above this drop in success rate (against the baseline) a release should be rolled back.
pub const SUCCESS_DROP_THRESHOLD: f64 = 0.03;

/// Above this many times the baseline's error rate a release should be rolled back.
pub const ERROR_RATE_MULTIPLIER_THRESHOLD: f64 = 2.0;

/// What a set of executions says of a release.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metrics {
    /// How many executions.
    pub samples: u64,
    /// The share that succeeded (0 with no samples).
    pub success_rate: f64,
    /// The share that failed.
    pub error_rate: f64,
    /// The 95th percentile of their wall times, in ms (nearest rank).
    pub p95_duration: u64,
}

impl Metrics {
    /// The baseline when there is nothing to compare with: all succeeded, none failed.
    pub const PERFECT: Metrics = Metrics {
        samples: 0,
        success_rate: 1.0,
        error_rate: 0.0,
        p95_duration: 0,
    };

    /// The metrics of executions, each given as whether it succeeded and its wall time in ms.
    pub fn of(executions: impl IntoIterator<Item = (bool, u64)>) -> Metrics {
        let mut durations = Vec::new();
        let mut successes = 0u64;
        for (success, ms) in executions {
            durations.push(ms);
            successes += u64::from(success);
        }
        let samples = durations.len() as u64;
        if samples == 0 {
            return Metrics {
                samples: 0,
                success_rate: 0.0,
                error_rate: 0.0,
                p95_duration: 0,
            };
        }
        durations.sort_unstable();
        // Nearest rank: the smallest duration at or above 95 % of the samples.
        let rank = (durations.len() * 95).div_ceil(100).max(1);
        Metrics {
            samples,
            success_rate: successes as f64 / samples as f64,
            error_rate: (samples - successes) as f64 / samples as f64,
            p95_duration: durations[rank - 1],
        }
    }

    /// The metrics an evaluation's JSON report states (`replay_success`, `error_rate`,
    /// `samples`, `p95_duration`), rates held to 0..=1; `None` for a report that is no JSON
    /// object.
    pub fn from_report(report: &str) -> Option<Metrics> {
        let report: Map<String, Value> = serde_json::from_str(report).ok()?;
        let number = |name: &str| report.get(name).and_then(Value::as_f64);
        let success_rate = number("replay_success").unwrap_or(1.0);
        let error_rate = number("error_rate").unwrap_or((1.0 - success_rate).max(0.0));
        Some(Metrics {
            samples: number("samples").map_or(0, |n| n.max(0.0) as u64),
            success_rate: success_rate.clamp(0.0, 1.0),
            error_rate: error_rate.clamp(0.0, 1.0),
            p95_duration: number("p95_duration").map_or(0, |n| n.max(0.0) as u64),
        })
    }
}

/// Whether an execution's comma-separated `tags` mark it as a run of release `release_id`
/// (`release:<id>` among them).
pub fn ran_release(tags: Option<&str>, release_id: &str) -> bool {
    let wanted = format!("release:{release_id}");
    tags.unwrap_or_default()
        .split(',')
        .any(|tag| tag.trim() == wanted)
}

/// A release's health (Bay's `SkillReleaseHealthResponse`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReleaseHealth {
    /// The release.
    pub release_id: String,
    /// Its skill.
    pub skill_key: String,
    /// Its stage.
    pub stage: ReleaseStage,
    /// When it was promoted.
    #[serde(with = "crate::time::required")]
    pub window_start_at: DateTime<Utc>,
    /// When watching it ends.
    #[serde(with = "crate::time::required")]
    pub window_end_at: DateTime<Utc>,
    /// Whether that is past.
    pub window_complete: bool,
    /// Executions tagged `release:<id>` in the window.
    pub samples: u64,
    /// Their success rate.
    pub success_rate: f64,
    /// Their error rate.
    pub error_rate: f64,
    /// Their 95th-percentile wall time, in ms.
    pub p95_duration: u64,
    /// The release before's success rate.
    pub baseline_success_rate: f64,
    /// Its error rate.
    pub baseline_error_rate: f64,
    /// Its samples.
    pub baseline_samples: u64,
    /// `baseline_success_rate - success_rate`.
    pub success_drop: f64,
    /// `error_rate / baseline_error_rate` (1,000,000 for errors against none, 1 for none).
    pub error_rate_multiplier: f64,
    /// Samples seen and no reason to roll back.
    pub healthy: bool,
    /// Samples seen and a reason to roll back.
    pub should_rollback: bool,
    /// `success_rate_drop`, `error_rate_regression`.
    pub rollback_reasons: Vec<String>,
    /// The thresholds judged by (`success_drop`, `error_rate_multiplier`).
    pub thresholds: std::collections::BTreeMap<String, f64>,
}

impl ReleaseHealth {
    /// Judges `release` at `now` from the executions `observed` in its window and the
    /// `baseline` of the release before it.
    pub fn judge(
        release: &SkillRelease,
        now: DateTime<Utc>,
        observed: Metrics,
        baseline: Metrics,
    ) -> ReleaseHealth {
        let window_end_at = health_window_end(release);
        let success_drop = baseline.success_rate - observed.success_rate;
        let error_rate_multiplier = if baseline.error_rate <= 0.0 {
            if observed.error_rate > 0.0 {
                1_000_000.0
            } else {
                1.0
            }
        } else {
            observed.error_rate / baseline.error_rate
        };
        let mut rollback_reasons = Vec::new();
        if observed.samples > 0 {
            if success_drop > SUCCESS_DROP_THRESHOLD {
                rollback_reasons.push("success_rate_drop".to_owned());
            }
            if error_rate_multiplier > ERROR_RATE_MULTIPLIER_THRESHOLD {
                rollback_reasons.push("error_rate_regression".to_owned());
            }
        }
        ReleaseHealth {
            release_id: release.id.clone(),
            skill_key: release.skill_key.clone(),
            stage: release.stage,
            window_start_at: release.promoted_at,
            window_end_at,
            window_complete: now >= window_end_at,
            samples: observed.samples,
            success_rate: observed.success_rate,
            error_rate: observed.error_rate,
            p95_duration: observed.p95_duration,
            baseline_success_rate: baseline.success_rate,
            baseline_error_rate: baseline.error_rate,
            baseline_samples: baseline.samples,
            success_drop,
            error_rate_multiplier,
            healthy: observed.samples > 0 && rollback_reasons.is_empty(),
            should_rollback: observed.samples > 0 && !rollback_reasons.is_empty(),
            rollback_reasons,
            thresholds: [
                ("success_drop".to_owned(), SUCCESS_DROP_THRESHOLD),
                (
                    "error_rate_multiplier".to_owned(),
                    ERROR_RATE_MULTIPLIER_THRESHOLD,
                ),
            ]
            .into(),
        }
    }
}

/// When watching `release` ends: its own end, or 24 hours after promotion.
pub fn health_window_end(release: &SkillRelease) -> DateTime<Utc> {
    release.health_window_end_at.unwrap_or_else(|| {
        release
            .promoted_at
            .checked_add_signed(chrono::Duration::hours(HEALTH_WINDOW_HOURS))
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    })
}

/// Bay's skill lifecycle; see the [module documentation](self) for the contract. Every
/// [`SandboxProvider`](crate::SandboxProvider) speaks it.
#[async_trait::async_trait]
pub trait SkillLifecycle: Send + Sync {
    /// Keeps a payload (`POST /v1/skills/payloads`).
    async fn create_payload(&self, payload: &NewPayload) -> SandboxResult<PayloadRef>;

    /// A kept payload (`GET /v1/skills/payloads/{ref}`).
    async fn payload(&self, payload_ref: &str) -> SandboxResult<SkillPayload>;

    /// Makes a candidate (`POST /v1/skills/candidates`), status `draft`.
    async fn create_candidate(&self, candidate: &NewCandidate) -> SandboxResult<SkillCandidate>;

    /// Candidates, newest first (`GET /v1/skills/candidates`).
    async fn candidates(&self, query: &CandidateQuery) -> SandboxResult<SkillPage<SkillCandidate>>;

    /// One candidate; `not_found` for an unknown or deleted one.
    async fn candidate(&self, id: &str) -> SandboxResult<SkillCandidate>;

    /// Records an evaluation of a candidate (`POST …/candidates/{id}/evaluate`).
    async fn evaluate(
        &self,
        candidate_id: &str,
        evaluation: &Evaluation,
    ) -> SandboxResult<SkillEvaluation>;

    /// Promotes a candidate whose latest evaluation passed (`POST …/candidates/{id}/promote`).
    async fn promote(
        &self,
        candidate_id: &str,
        promotion: &Promotion,
    ) -> SandboxResult<SkillRelease>;

    /// Deletes a candidate no active release stands on (`DELETE …/candidates/{id}`).
    async fn delete_candidate(&self, id: &str, reason: Option<&str>) -> SandboxResult<Deleted>;

    /// Releases, newest first (`GET /v1/skills/releases`).
    async fn releases(&self, query: &ReleaseQuery) -> SandboxResult<SkillPage<SkillRelease>>;

    /// A release's health (`GET …/releases/{id}/health`).
    async fn release_health(&self, id: &str) -> SandboxResult<ReleaseHealth>;

    /// Rolls a release back to the one before it (`POST …/releases/{id}/rollback`).
    async fn rollback(&self, release_id: &str) -> SandboxResult<SkillRelease>;

    /// Deletes a release, active or not (`DELETE …/releases/{id}`).
    async fn delete_release(&self, id: &str, reason: Option<&str>) -> SandboxResult<Deleted>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release() -> SkillRelease {
        serde_json::from_value(serde_json::json!({
            "id": "sr-1", "skill_key": "csv", "candidate_id": "sc-1", "version": 2,
            "stage": "canary", "is_active": true, "release_mode": "manual",
            "promoted_by": null, "promoted_at": "2026-11-25T10:00:00.000000",
            "rollback_of": null, "auto_promoted_from": null, "health_window_end_at": null,
        }))
        .unwrap()
    }

    #[test]
    fn statuses_and_stages_are_bays_words() {
        for status in CandidateStatus::ALL {
            assert_eq!(CandidateStatus::parse(status.as_str()).unwrap(), status);
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                Value::from(status.as_str())
            );
        }
        let error = CandidateStatus::parse("unknown").unwrap_err();
        assert_eq!(error.code, ErrorCode::ValidationError);
        assert!(error.message.contains("rolled_back"), "{}", error.message);
        assert_eq!(ReleaseStage::parse("stable").unwrap(), ReleaseStage::Stable);
        assert_eq!(
            ReleaseStage::parse("invalid-stage").unwrap_err().code,
            ErrorCode::ValidationError
        );
    }

    #[test]
    fn payload_references_are_blobs() {
        assert_eq!(blob_id("blob:blob-1a2b").unwrap(), "blob-1a2b");
        let error = blob_id("s3://candidate/payload-1").unwrap_err();
        assert!(error.message.starts_with("Unsupported payload_ref"));
        assert!(blob_id("blob:").is_err());
        assert!(NewPayload::new(serde_json::json!("text")).check().is_err());
        assert!(
            NewPayload::new(serde_json::json!([]))
                .kind("")
                .check()
                .is_err()
        );
        assert!(NewPayload::new(serde_json::json!({})).check().is_ok());
    }

    #[test]
    fn candidates_need_a_key_and_evidence() {
        assert!(NewCandidate::new(" ", ["exec-1"]).check().is_err());
        assert!(
            NewCandidate::new("csv", Vec::<String>::new())
                .check()
                .is_err()
        );
        assert!(NewCandidate::new("csv", ["exec-1"]).check().is_ok());
    }

    #[test]
    fn pages_count_everything_and_keep_a_slice() {
        let page = page((0..7).collect(), Some(3), 5).unwrap();
        assert_eq!((page.items, page.total), (vec![5, 6], 7));
        assert!(super::page(vec![1], Some(0), 0).is_err());
        assert!(super::page(vec![1], Some(501), 0).is_err());
    }

    #[test]
    fn metrics_take_the_nearest_rank_percentile() {
        let metrics = Metrics::of((1..=20).map(|ms| (ms % 5 != 0, ms * 10)));
        assert_eq!(metrics.samples, 20);
        assert_eq!(metrics.success_rate, 0.8);
        assert!((metrics.error_rate - 0.2).abs() < 1e-12);
        // ceil(0.95 × 20) = 19th smallest.
        assert_eq!(metrics.p95_duration, 190);
        assert_eq!(Metrics::of([(true, 7)]).p95_duration, 7);
        assert_eq!(Metrics::of([]).samples, 0);
    }

    #[test]
    fn a_report_can_stand_in_for_a_baseline() {
        let metrics =
            Metrics::from_report(r#"{"replay_success": 0.9, "samples": 12, "p95_duration": 40}"#)
                .unwrap();
        assert_eq!(metrics.samples, 12);
        assert_eq!(metrics.success_rate, 0.9);
        assert!((metrics.error_rate - 0.1).abs() < 1e-12);
        assert_eq!(metrics.p95_duration, 40);
        assert_eq!(Metrics::from_report("pass"), None);
        assert_eq!(
            Metrics::from_report(r#"{"replay_success": 7}"#)
                .unwrap()
                .success_rate,
            1.0
        );
    }

    #[test]
    fn tags_name_the_release_exactly() {
        assert!(ran_release(Some("skills, release:sr-1"), "sr-1"));
        assert!(!ran_release(Some("release:sr-10"), "sr-1"));
        assert!(!ran_release(None, "sr-1"));
    }

    #[test]
    fn health_weighs_the_release_against_its_baseline() {
        let release = release();
        let at = release.promoted_at + chrono::Duration::hours(1);
        let good = Metrics::of([(true, 5), (true, 9)]);
        let health = ReleaseHealth::judge(&release, at, good, Metrics::PERFECT);
        assert!(health.healthy && !health.should_rollback);
        assert_eq!(health.error_rate_multiplier, 1.0);
        assert!(!health.window_complete);
        assert_eq!(
            health.window_end_at,
            release.promoted_at + chrono::Duration::hours(24)
        );

        let bad = Metrics::of([(true, 5), (false, 9)]);
        let health = ReleaseHealth::judge(&release, at, bad, Metrics::PERFECT);
        assert!(health.should_rollback && !health.healthy);
        assert_eq!(
            health.rollback_reasons,
            ["success_rate_drop", "error_rate_regression"]
        );
        assert_eq!(health.error_rate_multiplier, 1_000_000.0);

        // Nothing seen: neither healthy nor to be rolled back.
        let health = ReleaseHealth::judge(
            &release,
            at + chrono::Duration::days(2),
            Metrics::of([]),
            Metrics::PERFECT,
        );
        assert!(!health.healthy && !health.should_rollback && health.window_complete);
    }
}
