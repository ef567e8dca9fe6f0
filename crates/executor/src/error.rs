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
    /// The run store failed. At the start of a run nothing ran (`run` is `None`); at the end,
    /// `run` is the record that could not be saved; during a run of an engine that stops on
    /// store failures ([`StoreFailure::Interrupt`](crate::StoreFailure::Interrupt)), `run` is
    /// the run so far, and the stored run is left to be resumed.
    #[error("the run store failed for run `{run_id}`: {error}")]
    Store {
        /// The run.
        run_id: String,
        /// What the store said.
        error: wayline_core::StoreError,
        /// The finished run, when it ran.
        run: Option<Box<wayline_core::Run>>,
    },
    /// A tool's request cannot be built from its definition and inputs (no base URL, an
    /// invalid URL, a template that does not render). In a run this fails the step.
    #[error("{reason}")]
    Request {
        /// The tool.
        tool_id: String,
        /// What is wrong, naming the tool, and how to fix it.
        reason: String,
    },
    /// A stored run cannot be resumed.
    #[error("run `{run_id}` cannot be resumed: {reason}")]
    Resume {
        /// The run.
        run_id: String,
        /// Why, and what to do.
        reason: String,
    },
    /// Steps of a resumed run were in flight when it stopped and are not safe to repeat; the
    /// caller decides whether to retry or skip them.
    #[error(
        "run `{run_id}`: the outcome of {} is unknown (they were running when the run stopped, and repeating them is not known to be safe); resume with retry or skip for them",
        .steps.iter().map(|step| format!("`{step}`")).collect::<Vec<_>>().join(", ")
    )]
    UnknownOutcome {
        /// The run.
        run_id: String,
        /// The steps.
        steps: Vec<String>,
    },
    /// A run was started outside a Tokio runtime. The engine runs on Tokio (its timers:
    /// retries, polling, deadlines), so a host runs it within a runtime with time enabled.
    #[error(
        "no Tokio runtime is running here: run workflows from within one (a `#[tokio::main]` function, or `Runtime::block_on`), with time enabled"
    )]
    NoRuntime,
    /// A run started with [`Engine::start`](crate::Engine::start) ended without a record: its
    /// task panicked or its runtime shut down.
    #[error("run `{run_id}` ended without a record: {reason}")]
    Task {
        /// The run.
        run_id: String,
        /// What ended it.
        reason: String,
    },
}

fn bullets(problems: &[String]) -> String {
    problems
        .iter()
        .map(|problem| format!("\n  - {problem}"))
        .collect()
}
