//! A compile-time promise: every public run entry point returns a future a host can hand to
//! `tokio::spawn` (it is `Send` and owns or borrows only `Sync` data). If a change makes one of
//! them `!Send`, this module stops compiling, naming the entry point.

#![expect(dead_code, reason = "checked by the compiler, never called")]

use indexmap::IndexMap;
use wayline_core::Workflow;

use crate::run::durable::ResumeOptions;
use crate::run::flow::Flow;
use crate::{Engine, PreparedWorkflow, RunOptions};

fn send<T: Send>(future: T) -> T {
    future
}

fn run(engine: &Engine, workflow: &Workflow) {
    drop(send(engine.run(workflow, RunOptions::new())));
}

fn run_prepared(engine: &Engine, prepared: &PreparedWorkflow) {
    drop(send(engine.run_prepared(prepared, RunOptions::new())));
}

fn run_flow(engine: &Engine, prepared: &PreparedWorkflow, flow: &mut dyn Flow) {
    drop(send(engine.run_flow(prepared, flow, RunOptions::new())));
}

fn resume(engine: &Engine, prepared: &PreparedWorkflow) {
    drop(send(engine.resume(prepared, "r", ResumeOptions::new())));
}

fn resume_flow(engine: &Engine, prepared: &PreparedWorkflow, flow: &mut dyn Flow) {
    drop(send(engine.resume_flow(
        prepared,
        flow,
        "r",
        ResumeOptions::new(),
    )));
}

fn dry_run(engine: &Engine, workflow: &Workflow) {
    drop(send(engine.dry_run(workflow, IndexMap::new())));
}

fn call_tool(engine: &Engine) {
    drop(send(engine.call_tool("t", IndexMap::new())));
}
