//! Arazzo documents against the specification's own material (the 1.1 schema's pass and fail
//! documents, the published examples): loading and its error reports, validation, export and
//! import, and runs on the engine against loopback mocks and scripted APIs.

mod documents;
mod examples;
mod round_trip;
mod running;
mod sources;
mod specification;

/// A workflow run's record entries, `ID status` each, in order.
fn entries(ran: &wayline_arazzo::run::WorkflowRun) -> Vec<String> {
    ran.run
        .step_results
        .iter()
        .map(|result| format!("{} {}", result.step_id, result.status.as_str()))
        .collect()
}
