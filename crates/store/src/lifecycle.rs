//! The workflow lifecycle (`Draft → Approved → Validated → Active → Archived`) and the graph hash.

use std::sync::Arc;

use chrono::Utc;
use sha2::{Digest, Sha256};
use wayline_core::canonical::canonical_json;
use wayline_core::store::{Approval, StoreError, StoreErrorKind, StoredWorkflow, check_id};
use wayline_core::{Run, RunStatus, Workflow, WorkflowStatus, WorkflowStore};

/// The hash of a workflow's graph: its declared inputs, steps and edges, with object keys
/// sorted, so reformatting a file does not change it but any change to the graph does. The id,
/// name, description and lifecycle status are not part of it.
pub fn graph_hash(workflow: &Workflow) -> String {
    let graph = serde_json::json!({
        "inputs": workflow.inputs,
        "steps": workflow.steps,
        "edges": workflow.edges,
    });
    let digest = Sha256::digest(canonical_json(&graph).as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest {
        hex.push_str(&format!("{byte:02x}"));
    }
    format!("sha256:{hex}")
}

/// What [`Lifecycle::save`] did.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Saved {
    /// The stored version.
    pub record: StoredWorkflow,
    /// True when this call created the version; false when the graph was unchanged.
    pub created: bool,
}

/// Lifecycle operations over a [`WorkflowStore`]: `Draft → Approved → Validated → Active →
/// Archived`.
///
/// - [`Lifecycle::save`] stores a workflow. A graph that differs from the latest version's
///   becomes a new version in `Draft`; the versions before it stay as they were. An unchanged
///   graph keeps its version (and its state), unless that version is archived: then it is
///   saved again as a new `Draft`, which is how an archived graph comes back into use.
/// - [`Lifecycle::approve`] records who approved which graph, and when.
/// - [`Lifecycle::record_validation`] accepts a green run of exactly that approved version.
/// - [`Lifecycle::activate`] makes a validated version the active one; the version active
///   before it is archived.
///
/// Every transition re-reads the record and writes it with optimistic concurrency, so two
/// processes cannot both move the same version.
#[derive(Debug, Clone)]
pub struct Lifecycle {
    store: Arc<dyn WorkflowStore>,
}

impl Lifecycle {
    /// Lifecycle operations on `store`.
    pub fn new(store: Arc<dyn WorkflowStore>) -> Self {
        Lifecycle { store }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn WorkflowStore> {
        &self.store
    }

    /// Saves `workflow` (see [`Lifecycle`]). Safe to call from several
    /// processes at once: when another saves the same id first, the save is decided again
    /// against what it stored.
    pub async fn save(&self, workflow: &Workflow) -> Result<Saved, StoreError> {
        check_id("workflow", &workflow.id)?;
        let hash = graph_hash(workflow);
        let mut attempts = 0;
        loop {
            attempts += 1;
            match self.save_once(workflow, &hash).await {
                Err(error) if error.kind() == StoreErrorKind::Conflict && attempts < 10 => {}
                outcome => return outcome,
            }
        }
    }

    async fn save_once(&self, workflow: &Workflow, hash: &str) -> Result<Saved, StoreError> {
        let latest = self.store.workflow(&workflow.id, None).await?;
        // An archived version is history: saving its graph again starts a new version.
        if let Some(latest) = latest.as_ref().filter(|latest| {
            latest.graph_hash == hash && latest.state() != WorkflowStatus::Archived
        }) {
            if latest.workflow.name == workflow.name
                && latest.workflow.description == workflow.description
            {
                return Ok(Saved {
                    record: latest.clone(),
                    created: false,
                });
            }
            // Only the labels changed: same graph, same version, same state.
            let mut renamed = latest.clone();
            renamed.workflow.name.clone_from(&workflow.name);
            renamed
                .workflow
                .description
                .clone_from(&workflow.description);
            renamed.updated_at = Utc::now();
            return Ok(Saved {
                record: self.store.update_workflow(&renamed).await?,
                created: false,
            });
        }
        let version = match latest {
            None => 1,
            Some(latest) => latest.version.checked_add(1).ok_or_else(|| {
                StoreError::new(
                    StoreErrorKind::Invalid,
                    format!(
                        "workflow `{}` has used every version number; save it under a new id",
                        workflow.id
                    ),
                )
            })?,
        };
        let mut draft = workflow.clone();
        draft.status = WorkflowStatus::Draft;
        let record = StoredWorkflow::new(draft, version, hash);
        self.store.insert_workflow(&record).await?;
        Ok(Saved {
            record,
            created: true,
        })
    }

    /// One version (the latest when `version` is `None`), or a `NotFound` error.
    pub async fn get(&self, id: &str, version: Option<u32>) -> Result<StoredWorkflow, StoreError> {
        self.store.workflow(id, version).await?.ok_or_else(|| {
            let which = version.map_or_else(String::new, |version| format!(" version {version}"));
            StoreError::new(
                StoreErrorKind::NotFound,
                format!("workflow `{id}`{which} is not in the store; save it first"),
            )
        })
    }

    /// The version runs should use: the active one.
    pub async fn active(&self, id: &str) -> Result<StoredWorkflow, StoreError> {
        let versions = self.store.workflow_versions(id).await?;
        if versions.is_empty() {
            return Err(StoreError::new(
                StoreErrorKind::NotFound,
                format!("workflow `{id}` is not in the store; save it first"),
            ));
        }
        versions
            .into_iter()
            .rev()
            .find(|record| record.state() == WorkflowStatus::Active)
            .ok_or_else(|| {
                StoreError::new(
                    StoreErrorKind::Conflict,
                    format!(
                        "workflow `{id}` has no active version: approve it and activate it (a green validation run), or name a version"
                    ),
                )
            })
    }

    /// Approves a `Draft` version (the latest when `version` is `None`) in the name of `by`.
    /// Approving an already approved version again records the new approver.
    pub async fn approve(
        &self,
        id: &str,
        version: Option<u32>,
        by: &str,
    ) -> Result<StoredWorkflow, StoreError> {
        if by.trim().is_empty() {
            return Err(StoreError::new(
                StoreErrorKind::Invalid,
                "an approval needs the approver's name",
            ));
        }
        let mut record = self.get(id, version).await?;
        expect_state(
            &record,
            &[WorkflowStatus::Draft, WorkflowStatus::Approved],
            "approve",
        )?;
        let hash = graph_hash(&record.workflow);
        if hash != record.graph_hash {
            return Err(StoreError::new(
                StoreErrorKind::Corrupt,
                format!(
                    "workflow `{id}` version {}: its stored graph no longer matches its hash; save the workflow again",
                    record.version
                ),
            ));
        }
        record.approval = Some(Approval::now(by.trim(), hash));
        record.workflow.status = WorkflowStatus::Approved;
        record.validation_run_id = None;
        record.updated_at = Utc::now();
        self.store.update_workflow(&record).await
    }

    /// Accepts `run` as the validation run of the approved version it ran: it must have run
    /// that version and succeeded. The version becomes `Validated`.
    pub async fn record_validation(&self, run: &Run) -> Result<StoredWorkflow, StoreError> {
        let Some(version) = run.workflow_version else {
            return Err(StoreError::new(
                StoreErrorKind::Invalid,
                format!(
                    "run `{}` did not run a saved version of `{}`, so it cannot validate one",
                    run.id, run.workflow_id
                ),
            ));
        };
        let mut record = self.get(&run.workflow_id, Some(version)).await?;
        expect_state(
            &record,
            &[WorkflowStatus::Approved, WorkflowStatus::Validated],
            "validate",
        )?;
        if run.status != RunStatus::Success {
            return Err(StoreError::new(
                StoreErrorKind::Conflict,
                format!(
                    "validation run `{}` of workflow `{}` version {version} did not succeed ({}); fix what failed and run it again",
                    run.id,
                    run.workflow_id,
                    run.status.as_str()
                ),
            ));
        }
        record.validation_run_id = Some(run.id.clone());
        record.workflow.status = WorkflowStatus::Validated;
        record.updated_at = Utc::now();
        self.store.update_workflow(&record).await
    }

    /// Activates a validated version; the previously active version is archived. Activating
    /// the active version again archives any other active one, which finishes an activation
    /// a crash interrupted.
    pub async fn activate(&self, id: &str, version: u32) -> Result<StoredWorkflow, StoreError> {
        let mut record = self.get(id, Some(version)).await?;
        if record.state() != WorkflowStatus::Active {
            if record.state() != WorkflowStatus::Validated || record.validation_run_id.is_none() {
                return Err(StoreError::new(
                    StoreErrorKind::Conflict,
                    format!(
                        "workflow `{id}` version {version} is {}: activation needs a green validation run of the approved graph",
                        record.state().as_str()
                    ),
                ));
            }
            // The new version first, the old ones after: a crash in between leaves two active
            // versions (activating again finishes the job), never none.
            record.workflow.status = WorkflowStatus::Active;
            record.updated_at = Utc::now();
            record = self.store.update_workflow(&record).await?;
        }
        for other in self.store.workflow_versions(id).await? {
            if other.version != version && other.state() == WorkflowStatus::Active {
                self.archive_if_active(other).await?;
            }
        }
        Ok(record)
    }

    /// Archives `record` unless a concurrent writer already changed its state; retries when
    /// the record changed under it and is still active.
    async fn archive_if_active(&self, mut record: StoredWorkflow) -> Result<(), StoreError> {
        const ATTEMPTS: usize = 5;
        for _ in 0..ATTEMPTS {
            record.workflow.status = WorkflowStatus::Archived;
            record.updated_at = Utc::now();
            match self.store.update_workflow(&record).await {
                Ok(_) => return Ok(()),
                Err(error) if error.kind() == StoreErrorKind::Conflict => {
                    record = self.get(record.id(), Some(record.version)).await?;
                    if record.state() != WorkflowStatus::Active {
                        return Ok(());
                    }
                }
                Err(error) => return Err(error),
            }
        }
        Err(StoreError::new(
            StoreErrorKind::Conflict,
            format!(
                "workflow `{}` version {} kept changing while it was being archived; activate again",
                record.id(),
                record.version
            ),
        ))
    }

    /// Archives a version: it stays for history and can no longer run on triggers.
    pub async fn archive(&self, id: &str, version: u32) -> Result<StoredWorkflow, StoreError> {
        let mut record = self.get(id, Some(version)).await?;
        record.workflow.status = WorkflowStatus::Archived;
        record.updated_at = Utc::now();
        self.store.update_workflow(&record).await
    }
}

fn expect_state(
    record: &StoredWorkflow,
    allowed: &[WorkflowStatus],
    action: &str,
) -> Result<(), StoreError> {
    if allowed.contains(&record.state()) {
        return Ok(());
    }
    Err(StoreError::new(
        StoreErrorKind::Conflict,
        format!(
            "cannot {action} workflow `{}` version {}: it is {}; save a new version to change it",
            record.id(),
            record.version,
            record.state().as_str()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wayline_core::Step;

    fn workflow() -> Workflow {
        let mut workflow = Workflow::new("w", "W");
        workflow
            .steps
            .push(Step::new("a", "t").map("q", "$input.q").map("n", "1"));
        workflow
    }

    #[test]
    fn the_hash_ignores_labels_and_key_order_but_not_the_graph() {
        let base = workflow();
        let hash = graph_hash(&base);
        assert!(hash.starts_with("sha256:") && hash.len() == 71);
        let mut relabelled = base.clone();
        relabelled.name = "Other".into();
        relabelled.description = "text".into();
        relabelled.status = WorkflowStatus::Active;
        assert_eq!(graph_hash(&relabelled), hash);
        let mut reordered = Workflow::new("w", "W");
        reordered
            .steps
            .push(Step::new("a", "t").map("n", "1").map("q", "$input.q"));
        assert_eq!(graph_hash(&reordered), hash);
        let mut changed = base;
        changed.steps[0] = Step::new("a", "t").map("q", "$input.other");
        assert_ne!(graph_hash(&changed), hash);
    }
}
