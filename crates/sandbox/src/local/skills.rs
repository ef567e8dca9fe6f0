//! The local provider's skill lifecycle ([`SkillLifecycle`]), kept in the data directory:
//!
//! ```text
//! DATA_DIR/skills.json            candidates, evaluations and releases (written whole, durably)
//! DATA_DIR/skills/blob-<hex>.json one payload each (written once, durably)
//! ```
//!
//! A change is made to a copy of the books, the copy written, and only then taken as the
//! books: a change that cannot be written leaves the books as they were. Candidates find their
//! executions in every sandbox's history (a deleted sandbox's included), and a release's health
//! reads the executions tagged `release:<id>`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock::{self, Clock};
use crate::error::{ErrorCode, SandboxError};
use crate::local::state::{self, KEPT_FORMAT, Kept};
use crate::provider::{HistoryEntry, SandboxResult};
use crate::skills::{
    self, CandidateQuery, CandidateStatus, Deleted, Evaluation, Metrics, NewCandidate, NewPayload,
    PayloadRef, Promotion, ReleaseHealth, ReleaseQuery, SkillCandidate, SkillEvaluation,
    SkillLifecycle, SkillPage, SkillPayload, SkillRelease,
};

/// Who every record says made it: the server's one owner.
const OWNER: &str = "default";

/// Everything in `skills.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Books {
    format: u32,
    /// Oldest first.
    candidates: Vec<SkillCandidate>,
    /// Oldest first.
    evaluations: Vec<SkillEvaluation>,
    /// Oldest first.
    releases: Vec<SkillRelease>,
}

impl Kept for Books {
    const FILE: &'static str = "skills.json";
    const WHAT: &'static str = "skills";
    fn format(&self) -> u32 {
        self.format
    }
}

/// One kept payload, as its file holds it.
#[derive(Serialize, Deserialize)]
struct Blob {
    kind: String,
    payload: Value,
    #[serde(with = "crate::time::required")]
    created_at: DateTime<Utc>,
}

/// The skill books of one data directory.
#[derive(Debug)]
pub(crate) struct Skills {
    dir: PathBuf,
    clock: Arc<dyn Clock>,
    books: Mutex<Books>,
}

fn random_id(prefix: &str) -> String {
    format!("{prefix}-{:012x}", fastrand::u64(..) & 0xffff_ffff_ffff)
}

fn candidate_not_found(id: &str) -> SandboxError {
    SandboxError::new(
        ErrorCode::NotFound,
        format!("Skill candidate not found: {id}"),
    )
}

fn release_not_found(id: &str) -> SandboxError {
    SandboxError::new(
        ErrorCode::NotFound,
        format!("Skill release not found: {id}"),
    )
}

fn blob_not_found(id: &str) -> SandboxError {
    SandboxError::new(
        ErrorCode::NotFound,
        format!("Artifact blob not found: {id}"),
    )
}

fn internal(message: String) -> SandboxError {
    SandboxError::new(ErrorCode::InternalError, message)
}

impl Books {
    fn candidate_mut(&mut self, id: &str) -> SandboxResult<&mut SkillCandidate> {
        self.candidates
            .iter_mut()
            .find(|candidate| candidate.id == id && !candidate.is_deleted)
            .ok_or_else(|| candidate_not_found(id))
    }

    fn release(&self, id: &str) -> SandboxResult<&SkillRelease> {
        self.releases
            .iter()
            .find(|release| release.id == id && !release.is_deleted)
            .ok_or_else(|| release_not_found(id))
    }

    /// The next version of `skill_key` (deleted releases keep their numbers).
    fn next_version(&self, skill_key: &str) -> u32 {
        self.releases
            .iter()
            .filter(|release| release.skill_key == skill_key)
            .map(|release| release.version)
            .max()
            .unwrap_or(0)
            + 1
    }

    /// Adds `release` as the one active release of its skill.
    fn activate(&mut self, release: SkillRelease) {
        for other in &mut self.releases {
            if other.skill_key == release.skill_key {
                other.is_active = false;
            }
        }
        self.releases.push(release);
    }

    /// The release of the same skill just below `release`'s version (deleted ones too when
    /// `deleted` says so).
    fn release_before(&self, release: &SkillRelease, deleted: bool) -> Option<&SkillRelease> {
        self.releases
            .iter()
            .filter(|other| {
                other.skill_key == release.skill_key
                    && other.version < release.version
                    && (deleted || !other.is_deleted)
            })
            .max_by_key(|other| other.version)
    }
}

fn new_release(
    skill_key: &str,
    candidate_id: &str,
    version: u32,
    stage: skills::ReleaseStage,
    now: DateTime<Utc>,
) -> SkillRelease {
    SkillRelease {
        id: random_id("sr"),
        skill_key: skill_key.to_owned(),
        candidate_id: candidate_id.to_owned(),
        version,
        stage,
        is_active: true,
        release_mode: "manual".to_owned(),
        promoted_by: Some(OWNER.to_owned()),
        promoted_at: now,
        rollback_of: None,
        auto_promoted_from: None,
        health_window_end_at: None,
        upgrade_of_release_id: None,
        upgrade_reason: None,
        change_summary: None,
        is_deleted: false,
        deleted_at: None,
        deleted_by: None,
        delete_reason: None,
    }
}

impl Skills {
    /// The books kept in `dir` (none yet: empty ones), dated by `clock`.
    pub(crate) fn open(dir: &Path, clock: Arc<dyn Clock>) -> SandboxResult<Skills> {
        let books = state::load::<Books>(dir)?.unwrap_or(Books {
            format: KEPT_FORMAT,
            ..Books::default()
        });
        Ok(Skills {
            dir: dir.to_owned(),
            clock,
            books: Mutex::new(books),
        })
    }

    fn now(&self) -> DateTime<Utc> {
        clock::bay_now(self.clock.as_ref())
    }

    /// Every execution the provider has run, deleted sandboxes' included.
    fn history(&self) -> SandboxResult<Vec<HistoryEntry>> {
        state::all_history(&self.dir)
    }

    fn read<T>(&self, look: impl FnOnce(&Books) -> SandboxResult<T>) -> SandboxResult<T> {
        look(&self.books.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Makes `change` to a copy of the books, writes the copy, then keeps it.
    fn change<T>(&self, change: impl FnOnce(&mut Books) -> SandboxResult<T>) -> SandboxResult<T> {
        let mut books = self.books.lock().unwrap_or_else(PoisonError::into_inner);
        let mut changed = books.clone();
        let answer = change(&mut changed)?;
        state::save(&self.dir, &changed)?;
        *books = changed;
        Ok(answer)
    }

    fn blob_path(&self, id: &str) -> PathBuf {
        self.dir.join("skills").join(format!("{id}.json"))
    }
}

#[async_trait::async_trait]
impl SkillLifecycle for Skills {
    async fn create_payload(&self, payload: &NewPayload) -> SandboxResult<PayloadRef> {
        payload.check()?;
        let now = self.now();
        let id = random_id("blob");
        let path = self.blob_path(&id);
        let blob = Blob {
            kind: payload.kind.clone(),
            payload: payload.payload.clone(),
            created_at: now,
        };
        let bytes = serde_json::to_vec(&blob)
            .map_err(|error| internal(format!("cannot encode a payload: {error}")))?;
        std::fs::create_dir_all(self.dir.join("skills"))
            .and_then(|()| wayline_durable::write(&path, &bytes).map_err(std::io::Error::other))
            .map_err(|error| internal(format!("cannot keep a payload: {error}")))?;
        Ok(PayloadRef {
            payload_ref: format!("{}{id}", skills::BLOB_PREFIX),
            kind: blob.kind,
        })
    }

    async fn payload(&self, payload_ref: &str) -> SandboxResult<SkillPayload> {
        let id = skills::blob_id(payload_ref)?;
        // Only the ids this provider makes name a file: anything else (`..`, `/`) is unknown.
        if !id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
        {
            return Err(blob_not_found(id));
        }
        let path = self.blob_path(id);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(blob_not_found(id));
            }
            Err(error) => return Err(internal(format!("cannot read {}: {error}", path.display()))),
        };
        let blob: Blob = serde_json::from_slice(&bytes).map_err(|error| {
            internal(format!("{}: not a kept payload ({error})", path.display()))
        })?;
        Ok(SkillPayload {
            payload_ref: payload_ref.to_owned(),
            kind: blob.kind,
            payload: blob.payload,
        })
    }

    async fn create_candidate(&self, new: &NewCandidate) -> SandboxResult<SkillCandidate> {
        new.check()?;
        let now = self.now();
        let history = self.history()?;
        if let Some(unknown) = new
            .source_execution_ids
            .iter()
            .find(|id| !history.iter().any(|entry| &entry.id == *id))
        {
            return Err(SandboxError::new(
                ErrorCode::ValidationError,
                format!(
                    "Execution ID not found or not owned: {unknown} (use the execution_id a python/exec or shell/exec answered)"
                ),
            )
            .detail("execution_id", unknown.as_str()));
        }
        let candidate = SkillCandidate {
            id: random_id("sc"),
            skill_key: new.skill_key.trim().to_owned(),
            scenario_key: new.scenario_key.clone(),
            payload_ref: new.payload_ref.clone(),
            skill_type: "code".to_owned(),
            auto_release_eligible: false,
            auto_release_reason: None,
            summary: new.summary.clone(),
            usage_notes: new.usage_notes.clone(),
            preconditions: new.preconditions.clone(),
            postconditions: new.postconditions.clone(),
            source_execution_ids: new.source_execution_ids.clone(),
            status: CandidateStatus::Draft,
            latest_score: None,
            latest_pass: None,
            last_evaluated_at: None,
            promotion_release_id: None,
            created_by: Some(OWNER.to_owned()),
            created_at: now,
            updated_at: now,
            is_deleted: false,
            deleted_at: None,
            deleted_by: None,
            delete_reason: None,
        };
        self.change(|books| {
            books.candidates.push(candidate.clone());
            Ok(candidate)
        })
    }

    async fn candidates(&self, query: &CandidateQuery) -> SandboxResult<SkillPage<SkillCandidate>> {
        self.read(|books| {
            let matching = books
                .candidates
                .iter()
                .rev()
                .filter(|candidate| {
                    !candidate.is_deleted
                        && query.status.is_none_or(|status| candidate.status == status)
                        && query
                            .skill_key
                            .as_deref()
                            .is_none_or(|key| candidate.skill_key == key)
                })
                .cloned()
                .collect();
            skills::page(matching, query.limit, query.offset)
        })
    }

    async fn candidate(&self, id: &str) -> SandboxResult<SkillCandidate> {
        self.read(|books| {
            books
                .candidates
                .iter()
                .find(|candidate| candidate.id == id && !candidate.is_deleted)
                .cloned()
                .ok_or_else(|| candidate_not_found(id))
        })
    }

    async fn evaluate(
        &self,
        candidate_id: &str,
        verdict: &Evaluation,
    ) -> SandboxResult<SkillEvaluation> {
        let now = self.now();
        self.change(|books| {
            let candidate = books.candidate_mut(candidate_id)?;
            candidate.latest_score = verdict.score;
            candidate.latest_pass = Some(verdict.passed);
            candidate.last_evaluated_at = Some(now);
            candidate.updated_at = now;
            candidate.status = if verdict.passed {
                CandidateStatus::Evaluating
            } else {
                CandidateStatus::Rejected
            };
            let evaluation = SkillEvaluation {
                id: random_id("se"),
                candidate_id: candidate_id.to_owned(),
                benchmark_id: verdict.benchmark_id.clone(),
                score: verdict.score,
                passed: verdict.passed,
                report: verdict.report.clone(),
                evaluated_by: Some(OWNER.to_owned()),
                created_at: now,
            };
            books.evaluations.push(evaluation.clone());
            Ok(evaluation)
        })
    }

    async fn promote(
        &self,
        candidate_id: &str,
        promotion: &Promotion,
    ) -> SandboxResult<SkillRelease> {
        let now = self.now();
        self.change(|books| {
            let candidate = books.candidate_mut(candidate_id)?;
            if candidate.latest_pass != Some(true) {
                return Err(SandboxError::new(
                    ErrorCode::Conflict,
                    "Candidate has no passing evaluation; promotion is blocked (evaluate it with passed=true first)",
                )
                .detail("candidate_id", candidate_id));
            }
            let skill_key = candidate.skill_key.clone();
            let mut release = new_release(
                &skill_key,
                candidate_id,
                books.next_version(&skill_key),
                promotion.stage,
                now,
            );
            release
                .upgrade_of_release_id
                .clone_from(&promotion.upgrade_of_release_id);
            release.upgrade_reason.clone_from(&promotion.upgrade_reason);
            release.change_summary.clone_from(&promotion.change_summary);
            let candidate = books.candidate_mut(candidate_id)?;
            candidate.status = CandidateStatus::Promoted;
            candidate.promotion_release_id = Some(release.id.clone());
            candidate.updated_at = now;
            books.activate(release.clone());
            Ok(release)
        })
    }

    async fn delete_candidate(&self, id: &str, reason: Option<&str>) -> SandboxResult<Deleted> {
        let now = self.now();
        self.change(|books| {
            if let Some(release) = books
                .releases
                .iter()
                .find(|release| release.candidate_id == id && release.is_active && !release.is_deleted)
            {
                return Err(SandboxError::new(
                    ErrorCode::Conflict,
                    format!(
                        "Candidate referenced by active release cannot be deleted (roll back or delete release {} first)",
                        release.id
                    ),
                )
                .detail("candidate_id", id));
            }
            let candidate = books.candidate_mut(id)?;
            candidate.is_deleted = true;
            candidate.deleted_at = Some(now);
            candidate.deleted_by = Some(OWNER.to_owned());
            candidate.delete_reason = reason.map(str::to_owned);
            candidate.updated_at = now;
            Ok(Deleted {
                id: id.to_owned(),
                deleted_at: now,
                deleted_by: candidate.deleted_by.clone(),
                delete_reason: candidate.delete_reason.clone(),
            })
        })
    }

    async fn releases(&self, query: &ReleaseQuery) -> SandboxResult<SkillPage<SkillRelease>> {
        self.read(|books| {
            let matching = books
                .releases
                .iter()
                .rev()
                .filter(|release| {
                    !release.is_deleted
                        && (!query.active_only || release.is_active)
                        && query.stage.is_none_or(|stage| release.stage == stage)
                        && query
                            .skill_key
                            .as_deref()
                            .is_none_or(|key| release.skill_key == key)
                })
                .cloned()
                .collect();
            skills::page(matching, query.limit, query.offset)
        })
    }

    async fn release_health(&self, id: &str) -> SandboxResult<ReleaseHealth> {
        let now = self.now();
        let history = self.history()?;
        self.read(|books| {
            let release = books.release(id)?;
            let ran = |release: &SkillRelease, until: DateTime<Utc>| {
                Metrics::of(
                    history
                        .iter()
                        .filter(|entry| {
                            skills::ran_release(entry.tags.as_deref(), &release.id)
                                && entry.created_at >= release.promoted_at
                                && entry.created_at <= until
                        })
                        .map(|entry| (entry.success, entry.execution_time_ms)),
                )
            };
            let observed = ran(release, now.min(skills::health_window_end(release)));
            // Bay's baseline: the release before, over its own time as the active one; with no
            // tagged runs, its candidate's latest evaluation report; else perfection.
            let baseline = match books.release_before(release, true) {
                None => Metrics::PERFECT,
                Some(before) => {
                    let seen = ran(before, release.promoted_at);
                    if seen.samples > 0 {
                        seen
                    } else {
                        books
                            .evaluations
                            .iter()
                            .rev()
                            .find(|evaluation| evaluation.candidate_id == before.candidate_id)
                            .and_then(|evaluation| evaluation.report.as_deref())
                            .and_then(Metrics::from_report)
                            .unwrap_or(Metrics::PERFECT)
                    }
                }
            };
            Ok(ReleaseHealth::judge(release, now, observed, baseline))
        })
    }

    async fn rollback(&self, release_id: &str) -> SandboxResult<SkillRelease> {
        let now = self.now();
        self.change(|books| {
            let current = books.release(release_id)?.clone();
            let Some(before) = books.release_before(&current, false) else {
                return Err(SandboxError::new(
                    ErrorCode::Conflict,
                    format!(
                        "Rollback is unavailable: no previous release exists (release {release_id} is version {} of {})",
                        current.version, current.skill_key
                    ),
                )
                .detail("release_id", release_id));
            };
            let mut release = new_release(
                &current.skill_key,
                &before.candidate_id,
                books.next_version(&current.skill_key),
                before.stage,
                now,
            );
            release.rollback_of = Some(current.id.clone());
            if let Ok(candidate) = books.candidate_mut(&current.candidate_id) {
                candidate.status = CandidateStatus::RolledBack;
                candidate.updated_at = now;
            }
            books.activate(release.clone());
            Ok(release)
        })
    }

    async fn delete_release(&self, id: &str, reason: Option<&str>) -> SandboxResult<Deleted> {
        let now = self.now();
        self.change(|books| {
            books.release(id)?;
            for candidate in &mut books.candidates {
                if candidate.promotion_release_id.as_deref() == Some(id) {
                    candidate.promotion_release_id = None;
                    candidate.updated_at = now;
                }
            }
            let release = books
                .releases
                .iter_mut()
                .find(|release| release.id == id)
                .ok_or_else(|| release_not_found(id))?;
            release.is_active = false;
            release.is_deleted = true;
            release.deleted_at = Some(now);
            release.deleted_by = Some(OWNER.to_owned());
            release.delete_reason = reason.map(str::to_owned);
            Ok(Deleted {
                id: id.to_owned(),
                deleted_at: now,
                deleted_by: release.deleted_by.clone(),
                delete_reason: release.delete_reason.clone(),
            })
        })
    }
}
