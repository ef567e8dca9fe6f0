//! The [`StepPolicy`] plug-in trait: a host's say on each step before it runs (the guard's
//! phase gating is one), and what it learns from each step's outcome.
//!
//! # Contract
//! - [`StepPolicy::check`] is called for every step that calls a tool, after its inputs are
//!   resolved and before any call (and before the engine's step middleware), on the engine's
//!   task: it must return quickly.
//! - [`Verdict::Block`] fails the step with the reason, no call made; [`Verdict::Ask`] does the
//!   same while no person can be asked (the reason says that approval is needed);
//!   [`Verdict::Warn`] lets it run and puts the message among the step's warnings.
//! - [`StepPolicy::finished`] is called once the step has run (not for blocked or skipped
//!   steps), with whether it succeeded and its output.
//! - Policies are consulted in the order they were added; the first that does not allow
//!   decides.

use std::fmt;

use indexmap::IndexMap;
use serde_json::Value;

use crate::tool::ToolDefinition;

/// What a policy sees of a step about to run.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct StepRequest<'a> {
    /// The run.
    pub run_id: &'a str,
    /// The workflow.
    pub workflow_id: &'a str,
    /// The step.
    pub step_id: &'a str,
    /// The tool it calls.
    pub tool_id: &'a str,
    /// The tool's definition, when the catalog has it.
    pub tool: Option<&'a ToolDefinition>,
    /// Its resolved inputs.
    pub inputs: &'a IndexMap<String, Value>,
}

impl<'a> StepRequest<'a> {
    /// A request.
    pub fn new(
        run_id: &'a str,
        workflow_id: &'a str,
        step_id: &'a str,
        tool_id: &'a str,
        tool: Option<&'a ToolDefinition>,
        inputs: &'a IndexMap<String, Value>,
    ) -> Self {
        StepRequest {
            run_id,
            workflow_id,
            step_id,
            tool_id,
            tool,
            inputs,
        }
    }
}

/// A policy's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Run it.
    Allow,
    /// Run it, with this warning.
    Warn(String),
    /// A person must approve it first.
    Ask(String),
    /// Do not run it, for this reason.
    Block(String),
}

/// Decides whether steps may run. See the [module documentation](self) for the contract.
pub trait StepPolicy: Send + Sync + fmt::Debug {
    /// The verdict on `step`.
    fn check(&self, step: &StepRequest<'_>) -> Verdict;

    /// The step ran: whether it succeeded, and its output when it did.
    fn finished(&self, step: &StepRequest<'_>, success: bool, output: Option<&Value>) {
        let _ = (step, success, output);
    }
}

/// Allows everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl StepPolicy for AllowAll {
    fn check(&self, _: &StepRequest<'_>) -> Verdict {
        Verdict::Allow
    }
}
