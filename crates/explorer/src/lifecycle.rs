//! The states a spec declares for a resource, and what they mean to the explorer: which one
//! it settles in (`ACTIVE`), which one an update passes through (`MODIFYING`), which ones end a
//! wait in failure (`FAILED`), and where a read reports it (`state`, `status`, `phase`).

use serde_json::Value;
use wayline_registry::openapi::{ApiSpec, Operation, STATE_FIELDS};

/// A state that means "wait": the resource is still changing (`CREATING`, `DELETING`).
pub(crate) fn is_transitional(state: &str) -> bool {
    state.to_ascii_uppercase().ends_with("ING")
}

/// The state a resource of `resource` settles in, from the spec's enum (`ACTIVE`, `READY`,
/// ...); `None` when the spec declares none of them for it.
pub(crate) fn settled_state(spec: &ApiSpec, resource: &str) -> Option<String> {
    let settled = [
        "ACTIVE",
        "READY",
        "AVAILABLE",
        "SUCCEEDED",
        "COMPLETED",
        "RUNNING",
    ];
    let states = declared_states(spec, resource)?;
    settled.iter().find_map(|wanted| {
        states
            .iter()
            .find(|state| state.eq_ignore_ascii_case(wanted))
            .cloned()
    })
}

/// The states the spec declares for `resource` (the enum of its state field), if any.
pub(crate) fn declared_states<'s>(spec: &'s ApiSpec, resource: &str) -> Option<&'s [String]> {
    spec.states
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(resource))
        .map(|(_, states)| states.as_slice())
}

/// The state a resource of `resource` is in while an update takes effect, when the spec
/// declares one (`MODIFYING`, `UPDATING`): an API whose spec has no such state changes its
/// resources at once.
pub(crate) fn changing_state(spec: &ApiSpec, resource: &str) -> Option<String> {
    declared_states(spec, resource)?
        .iter()
        .find(|state| {
            let upper = state.to_ascii_uppercase();
            is_transitional(state) && (upper.contains("MODIF") || upper.contains("UPDAT"))
        })
        .cloned()
}

/// The states of `resource` in the spec that end a wait in failure.
pub(crate) fn failed_states(spec: &ApiSpec, resource: &str) -> Vec<String> {
    declared_states(spec, resource)
        .map(|states| {
            states
                .iter()
                .filter(|state| {
                    let upper = state.to_ascii_uppercase();
                    ["FAIL", "ERROR", "CANCEL", "DELETED", "EXPIRED"]
                        .iter()
                        .any(|word| upper.contains(word))
                })
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The field a resource's read operation reports its state in: `state`, `status` or `phase`
/// (the first its response has), `state` when none.
pub(crate) fn state_field(operation: &Operation) -> String {
    let properties = operation
        .response
        .as_ref()
        .and_then(|schema| schema.get("properties"))
        .and_then(Value::as_object);
    STATE_FIELDS
        .into_iter()
        .find(|field| properties.is_some_and(|properties| properties.contains_key(*field)))
        .unwrap_or("state")
        .to_owned()
}
