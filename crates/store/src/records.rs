//! What every store does the same way: its errors, replacing a step result, paging history;
//! and what the database stores share: records as JSON text, times as sortable text.

use wayline_core::store::{
    Cursor, RunPage, RunQuery, RunSummary, StoreError, StoreErrorKind, StoredWorkflow,
};
use wayline_core::{Run, RunStatus, StepResult};

/// A record as JSON text, for the stores that keep text.
#[cfg_attr(
    not(any(feature = "sqlite", feature = "postgres")),
    expect(dead_code, reason = "only the database stores keep text")
)]
pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|error| {
        StoreError::new(
            StoreErrorKind::Invalid,
            format!("cannot encode a record: {error}"),
        )
    })
}

/// A time as fixed-width UTC text with nanoseconds, so that text order is time order (the
/// database stores sort and page run history on it).
#[cfg_attr(
    not(any(feature = "sqlite", feature = "postgres")),
    expect(dead_code, reason = "only the database stores keep text")
)]
pub(crate) fn timestamp(at: Option<chrono::DateTime<chrono::Utc>>) -> Option<String> {
    at.map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true))
}

pub(crate) fn version_exists(record: &StoredWorkflow) -> StoreError {
    StoreError::new(
        StoreErrorKind::Conflict,
        format!(
            "workflow `{}` version {} already exists",
            record.id(),
            record.version
        ),
    )
}

pub(crate) fn version_missing(record: &StoredWorkflow) -> StoreError {
    StoreError::new(
        StoreErrorKind::NotFound,
        format!(
            "workflow `{}` version {} is not in the store",
            record.id(),
            record.version
        ),
    )
}

/// The optimistic-concurrency check of an update.
pub(crate) fn check_revision(
    stored: &StoredWorkflow,
    update: &StoredWorkflow,
) -> Result<(), StoreError> {
    if stored.revision == update.revision {
        return Ok(());
    }
    Err(StoreError::new(
        StoreErrorKind::Conflict,
        format!(
            "workflow `{}` version {} changed since it was read (revision {} now, {} read); read it again and retry",
            update.id(),
            update.version,
            stored.revision,
            update.revision
        ),
    ))
}

pub(crate) fn run_exists(id: &str) -> StoreError {
    StoreError::new(
        StoreErrorKind::Conflict,
        format!("run `{id}` already exists"),
    )
}

pub(crate) fn run_missing(id: &str) -> StoreError {
    StoreError::new(
        StoreErrorKind::NotFound,
        format!("run `{id}` is not in the store"),
    )
}

/// The refusal of a step result for a run that has ended: a step future dropped by a
/// cancellation or a deadline may still be saving after the run's final record was written,
/// and that final record must stand.
pub(crate) fn run_ended(id: &str) -> StoreError {
    StoreError::new(
        StoreErrorKind::Conflict,
        format!("run `{id}` has ended; its step results can no longer change"),
    )
}

/// Puts `result` in place of the run's result for the same step, or appends it; refused when
/// the run has ended.
pub(crate) fn save_step_into(run: &mut Run, result: &StepResult) -> Result<(), StoreError> {
    if run.status != RunStatus::Running {
        return Err(run_ended(&run.id));
    }
    replace_step(run, result);
    Ok(())
}

/// Puts `result` in place of the run's result for the same step, or appends it.
pub(crate) fn replace_step(run: &mut Run, result: &StepResult) {
    match run
        .step_results
        .iter_mut()
        .find(|existing| existing.step_id == result.step_id)
    {
        Some(existing) => *existing = result.clone(),
        None => run.step_results.push(result.clone()),
    }
}

/// One page of `summaries` (any order) for `query`.
pub(crate) fn page(
    summaries: impl Iterator<Item = RunSummary>,
    query: &RunQuery,
    cursor: Option<&Cursor>,
) -> RunPage {
    let mut selected: Vec<RunSummary> = summaries
        .filter(|summary| query.matches(summary))
        .filter(|summary| cursor.is_none_or(|cursor| summary.is_after(cursor)))
        .collect();
    selected.sort_by(RunSummary::newest_first);
    // One more than a page tells whether there is a next page.
    selected.truncate(query.page_size().saturating_add(1));
    RunPage::from_sorted(selected, query)
}
