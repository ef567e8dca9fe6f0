//! The crate's error type: what stops a run from starting. Once a run starts, every failure is
//! recorded in it instead.

/// Errors of `wayline-executor`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The workflow cannot run: validation problems, or expressions, paths or validations that
    /// do not compile. Every problem is listed.
    #[error("workflow `{workflow_id}` cannot run:{}", bullets(.problems))]
    InvalidWorkflow {
        /// The workflow.
        workflow_id: String,
        /// Each problem, as a sentence.
        problems: Vec<String>,
    },
    /// Run inputs are missing or unknown.
    #[error("the run inputs do not fit workflow `{workflow_id}`:{}", bullets(.problems))]
    InvalidInputs {
        /// The workflow.
        workflow_id: String,
        /// Each problem, as a sentence.
        problems: Vec<String>,
    },
}

fn bullets(problems: &[String]) -> String {
    problems
        .iter()
        .map(|problem| format!("\n  - {problem}"))
        .collect()
}
