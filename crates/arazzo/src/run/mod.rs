//! Running a document's workflows on wayline's engine.
//!
//! [`Runner::new`] compiles every workflow once: each step becomes a wayline step calling a tool
//! made from its operation (read from the source descriptions through wayline's OpenAPI
//! importer), and the steps wait for each other as [`crate::waits::Waits`] says. A run is an
//! engine flow run ([`wayline_executor::flow`]): the engine sends the requests (its transport,
//! transient retries, policies such as the guard, observers such as the knowledge recorder, the
//! run store), and this module renders each step's parameters and body from the values so far,
//! judges each response by the step's success criteria, keeps its outputs, and picks what
//! follows by the step's and the workflow's actions (goto, retry, end, or on). A step that
//! calls a workflow runs it as a run of its own; the workflows of a `dependsOn` run first, in
//! order.

mod compile;
mod control;
mod render;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use indexmap::IndexMap;
use serde_json::{Map, Value};
use wayline_core::document::nearest;
use wayline_core::{MemoryCatalog, Run, RunStatus, StepResult, StepStatus};
use wayline_executor::{Engine, RunOptions};

use crate::input_schema;
use crate::model::ArazzoDocument;
use crate::runtime::WorkflowValues;
use crate::sources::Sources;
use compile::{Action, Compiled};
use control::{Control, Lineage};

/// How deep workflows may call workflows (a loop of calls stops here with an error).
pub const MAX_DEPTH: usize = 16;

/// A document ready to run: its workflows compiled for the engine.
#[derive(Clone)]
pub struct Runner {
    inner: Arc<Inner>,
}

struct Inner {
    document: ArazzoDocument,
    catalog: Arc<MemoryCatalog>,
    workflows: IndexMap<String, Compiled>,
    /// The Arazzo documents its source descriptions name, compiled, by source name.
    others: IndexMap<String, Runner>,
}

/// How deep Arazzo documents may name each other as sources (a loop stops here).
const MAX_DOCUMENTS_DEEP: usize = 8;

impl fmt::Debug for Runner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runner")
            .field(
                "workflows",
                &self.inner.workflows.keys().collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// One workflow's run: the engine's record of its steps (an execution per entry: `S`, then
/// `S#2`… for a step run again), its outputs, and the runs it led to.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WorkflowRun {
    /// The workflow's id.
    pub workflow_id: String,
    /// The engine's record (secrets masked).
    pub run: Run,
    /// The workflow's outputs (empty when it failed before they could be read).
    pub outputs: Map<String, Value>,
    /// Why its outputs could not all be read, if they could not.
    pub output_errors: Vec<String>,
    /// Runs of the workflows it depends on (`dependsOn`), in the order they ran.
    pub dependencies: Vec<WorkflowRun>,
    /// Runs of workflows its steps called, or a `goto` passed control to, in order.
    pub calls: Vec<WorkflowRun>,
    /// What its expressions read of it once it ran (for `$workflows.ID.…`).
    values: WorkflowValues,
    /// The status of the last response any of its steps had.
    last_status: Option<u16>,
}

impl WorkflowRun {
    /// Whether the workflow succeeded.
    pub fn succeeded(&self) -> bool {
        self.run.status == RunStatus::Success
    }
}

/// Why a workflow did not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The document has no workflow of that id.
    #[error("no workflow `{id}` in the document{}", nearest_hint(.nearest))]
    UnknownWorkflow {
        /// The id asked for.
        id: String,
        /// The nearest id, if one is near.
        nearest: Option<String>,
    },
    /// The inputs do not fit the workflow's inputs schema.
    #[error("inputs of workflow `{workflow}`:\n  {}", .problems.join("\n  "))]
    Inputs {
        /// The workflow.
        workflow: String,
        /// Each way they do not fit.
        problems: Vec<String>,
    },
    /// Steps the workflow (or one it calls) has cannot run here.
    #[error("workflow `{workflow}` cannot run:{}", unrunnable(.steps))]
    Unrunnable {
        /// The workflow.
        workflow: String,
        /// Each step (`workflow.step` when in a workflow it calls), and why.
        steps: Vec<(String, String)>,
    },
    /// The stored run cannot be resumed as this workflow (see [`Runner::resume`]).
    #[error("run `{run_id}` of workflow `{workflow}` is not resumed: {reason}")]
    NotResumable {
        /// The run.
        run_id: String,
        /// The workflow.
        workflow: String,
        /// Why.
        reason: String,
    },
    /// Workflows called workflows deeper than [`MAX_DEPTH`].
    #[error(
        "workflow `{0}` is called more than {MAX_DEPTH} workflows deep; do the workflows call each other in a loop?"
    )]
    TooDeep(String),
    /// The engine could not start the run (the run store failed, say).
    #[error(transparent)]
    Engine(#[from] wayline_executor::Error),
}

/// The steps that cannot run, those sharing a reason on one line.
fn unrunnable(steps: &[(String, String)]) -> String {
    let mut reasons: IndexMap<&str, Vec<&str>> = IndexMap::new();
    for (step, why) in steps {
        reasons.entry(why.as_str()).or_default().push(step.as_str());
    }
    reasons
        .into_iter()
        .map(|(why, steps)| {
            let names: Vec<String> = steps.iter().map(|step| format!("`{step}`")).collect();
            let noun = if steps.len() == 1 { "step" } else { "steps" };
            format!("\n  {noun} {}: {why}", names.join(", "))
        })
        .collect()
}

fn nearest_hint(nearest: &Option<String>) -> String {
    nearest
        .as_ref()
        .map(|id| format!(" (did you mean `{id}`?)"))
        .unwrap_or_default()
}

/// The options of a run this one leads to (a workflow it depends on, or one control passes
/// to): it masks what this run masks, tells this run's own observers, and stops with it.
fn led_options(options: &RunOptions, masked: &[String]) -> RunOptions {
    let mut led = RunOptions::new().mask(masked.iter().cloned());
    for observer in &options.observers {
        led = led.observer(Arc::clone(observer));
    }
    if let Some(cancel) = &options.cancel {
        led = led.cancel(cancel.clone());
    }
    led
}

type Pending = Pin<Box<dyn Future<Output = Result<WorkflowRun, RunError>> + Send>>;

/// How a workflow run starts: nested this many workflow calls deep (0 at the top), or resumed
/// from the run store (always at the top).
#[derive(Debug, Clone, Copy)]
enum Depth {
    Nested(usize),
    Resumed,
}

impl Runner {
    /// Compiles `document`'s workflows against its `sources` (read by
    /// [`Sources::load`]). `servers` gives the base URL of a source by name, overriding the
    /// description's first server (a test's loopback mock, a staging host).
    pub fn new(
        document: ArazzoDocument,
        sources: &Sources,
        servers: &IndexMap<String, String>,
    ) -> Runner {
        Runner::compile(document, sources, servers, &mut Vec::new())
    }

    /// [`Runner::new`], and each Arazzo document a source names compiled with its own sources
    /// (read beside it), unless it is one of `within` (a loop of documents) or too deep.
    fn compile(
        document: ArazzoDocument,
        sources: &Sources,
        servers: &IndexMap<String, String>,
        within: &mut Vec<std::path::PathBuf>,
    ) -> Runner {
        let (catalog, workflows) = compile::compile(&document, sources, servers);
        let mut others = IndexMap::new();
        for (name, source) in sources.iter() {
            let crate::sources::Source::Arazzo { path, document } = source else {
                continue;
            };
            let canonical = path.canonicalize().unwrap_or_else(|_| path.clone());
            if within.contains(&canonical) || within.len() >= MAX_DOCUMENTS_DEEP {
                continue;
            }
            within.push(canonical);
            // Its sources beside it, within the scope the first document's were read in.
            let base = path.parent().unwrap_or(std::path::Path::new("."));
            let their_sources =
                Sources::load_within(document, base, &IndexMap::new(), sources.scope().clone());
            let other = Runner::compile((**document).clone(), &their_sources, servers, within);
            within.pop();
            others.insert(name.to_owned(), other);
        }
        Runner {
            inner: Arc::new(Inner {
                document,
                catalog: Arc::new(catalog),
                workflows,
                others,
            }),
        }
    }

    /// The runner of the Arazzo document source `name` holds, when it was read.
    fn other(&self, name: &str) -> Option<&Runner> {
        self.inner.others.get(name)
    }

    /// The document.
    pub fn document(&self) -> &ArazzoDocument {
        &self.inner.document
    }

    /// The JSON Schema of workflow `workflow_id`'s inputs as a client reads it on its own: an
    /// object schema at the root (a root `$ref` followed), the document's input components
    /// beside it, where its `$ref`s find them; one without properties when the workflow
    /// declares no inputs. `None` for an id the
    /// document does not have.
    pub fn input_schema(&self, workflow_id: &str) -> Option<Value> {
        let workflow = self
            .inner
            .document
            .workflows
            .iter()
            .find(|workflow| workflow.workflow_id == workflow_id)?;
        Some(match &workflow.inputs {
            Some(schema) => input_schema::for_clients(&self.inner.document, schema),
            None => serde_json::json!({"type": "object", "properties": {}}),
        })
    }

    /// The tools made from the operations the steps call (`SOURCE.OPERATION`, then
    /// `SOURCE.OPERATION#2`… for the same operation called with other parameters).
    pub fn catalog(&self) -> &Arc<MemoryCatalog> {
        &self.inner.catalog
    }

    /// The wayline workflows the document's workflows compile to (each step calling its tool
    /// in [`Runner::catalog`]), for observers that read them, such as the knowledge recorder.
    pub fn compiled(&self) -> impl Iterator<Item = &wayline_core::Workflow> {
        self.inner
            .workflows
            .values()
            .map(|compiled| &compiled.workflow)
    }

    /// Runs workflow `workflow_id` with `inputs` on `engine` (its transport, policies,
    /// observers and run store). `options` gives the run id, cancel token and deadline. An
    /// `Err` means the workflow did not start; once it has, a failure is in the result.
    pub async fn run(
        &self,
        engine: &Engine,
        workflow_id: &str,
        inputs: Map<String, Value>,
        options: RunOptions,
    ) -> Result<WorkflowRun, RunError> {
        self.check_runnable(workflow_id)?;
        self.clone()
            .run_at(
                engine.clone(),
                workflow_id.to_owned(),
                inputs,
                options,
                Depth::Nested(0),
            )
            .await
    }

    /// Goes on with run `run_id` of workflow `workflow_id`, interrupted before it ended, in the
    /// engine's run store (an engine built with one): the steps that finished are not called
    /// again, their outputs are read from the record, and the gotos and retries they took are
    /// taken again; a step that was in flight runs again when it is safe to repeat (else the
    /// run stops, [`wayline_executor::Error::UnknownOutcome`]). Give the same `inputs` as the
    /// first time: the record masks credentials. `options` gives the cancel token and the
    /// deadline. Not yet resumed: a workflow with `dependsOn` (the values of the workflows it
    /// depends on are not in its record).
    pub async fn resume(
        &self,
        engine: &Engine,
        workflow_id: &str,
        run_id: &str,
        inputs: Map<String, Value>,
        options: RunOptions,
    ) -> Result<WorkflowRun, RunError> {
        self.check_runnable(workflow_id)?;
        let compiled = &self.inner.workflows[workflow_id];
        let workflow = &self.inner.document.workflows[compiled.index];
        if !workflow.depends_on.is_empty() {
            return Err(RunError::NotResumable {
                run_id: run_id.to_owned(),
                workflow: workflow_id.to_owned(),
                reason: "it depends on other workflows (`dependsOn`), whose values its record does not keep; run it again".to_owned(),
            });
        }
        self.clone()
            .run_at(
                engine.clone(),
                workflow_id.to_owned(),
                inputs,
                options.run_id(run_id),
                Depth::Resumed,
            )
            .await
    }

    /// Every step of `workflow_id`, and of the workflows it can call or depends on, can run.
    fn check_runnable(&self, workflow_id: &str) -> Result<(), RunError> {
        if !self.inner.workflows.contains_key(workflow_id) {
            return Err(self.unknown(workflow_id));
        }
        let mut seen = vec![workflow_id.to_owned()];
        let mut next = 0;
        let mut steps = Vec::new();
        while next < seen.len() {
            let id = seen[next].clone();
            next += 1;
            let Some(compiled) = self.inner.workflows.get(&id) else {
                continue; // named by a step: validation reports it, the step fails if reached
            };
            let workflow = &self.inner.document.workflows[compiled.index];
            let called = compiled.actions.iter().filter_map(|action| match action {
                Action::Workflow(id) => Some(id.clone()),
                _ => None,
            });
            let targets = control::workflow_targets(&self.inner.document, workflow);
            for called in called
                .chain(targets)
                .chain(workflow.depends_on.iter().cloned())
            {
                if let Some((source, other_id)) = crate::sources::source_reference(&called) {
                    // An action's workflow in another document: checked there.
                    let checked = match self.other(source) {
                        Some(other) => other.check_runnable(other_id),
                        // Not a document that was read (validation says so), or one naming
                        // this one back (checked where it began): the action says why if taken.
                        None => Ok(()),
                    };
                    match checked {
                        Ok(()) => {}
                        Err(RunError::Unrunnable { steps: theirs, .. }) => {
                            steps.extend(theirs.into_iter().map(|(step, why)| {
                                (format!("{id} → {source}.{other_id}.{step}"), why)
                            }));
                        }
                        Err(error) => steps.push((format!("{id} → {called}"), error.to_string())),
                    }
                } else if !seen.contains(&called) {
                    seen.push(called);
                }
            }
            for (position, action) in compiled.actions.iter().enumerate() {
                let step = &workflow.steps[position].step_id;
                let name = if id == workflow_id {
                    step.clone()
                } else {
                    format!("{id}.{step}")
                };
                match action {
                    Action::Unrunnable(why) => steps.push((name, why.clone())),
                    Action::External { source, workflow } => {
                        let checked = match self.other(source) {
                            Some(other) => other.check_runnable(workflow),
                            // A document that names this one back: checked where it began.
                            None => Ok(()),
                        };
                        match checked {
                            Ok(()) => {}
                            Err(RunError::Unrunnable { steps: theirs, .. }) => {
                                steps.extend(theirs.into_iter().map(|(step, why)| {
                                    (format!("{name} → {source}.{workflow}.{step}"), why)
                                }));
                            }
                            Err(error) => steps.push((name, error.to_string())),
                        }
                    }
                    _ => {}
                }
            }
        }
        if steps.is_empty() {
            Ok(())
        } else {
            Err(RunError::Unrunnable {
                workflow: workflow_id.to_owned(),
                steps,
            })
        }
    }

    fn unknown(&self, id: &str) -> RunError {
        RunError::UnknownWorkflow {
            id: id.to_owned(),
            nearest: nearest(id, self.inner.workflows.keys().map(String::as_str))
                .map(str::to_owned),
        }
    }

    /// Runs a workflow (its dependencies first) `depth` calls deep, or resumes the run its
    /// options name.
    fn run_at(
        self,
        engine: Engine,
        workflow_id: String,
        inputs: Map<String, Value>,
        options: RunOptions,
        depth: Depth,
    ) -> Pending {
        Box::pin(async move {
            let (depth, resuming) = match depth {
                Depth::Resumed => (0, true),
                Depth::Nested(depth) => (depth, false),
            };
            if depth > MAX_DEPTH {
                return Err(RunError::TooDeep(workflow_id));
            }
            let Some(compiled) = self.inner.workflows.get(&workflow_id) else {
                return Err(self.unknown(&workflow_id));
            };
            let document = &self.inner.document;
            let workflow = &document.workflows[compiled.index];
            let inputs = input_schema::check(document, workflow.inputs.as_ref(), inputs).map_err(
                |problems| RunError::Inputs {
                    workflow: workflow_id.clone(),
                    problems,
                },
            )?;
            // Credentials passed as inputs — marked so, named so, or sent as one — are masked in
            // this run and in those it leads to.
            let sent = compile::credential_inputs(document, workflow);
            let options = options.mask(
                input_schema::secrets(document, workflow.inputs.as_ref(), &inputs)
                    .into_iter()
                    .chain(input_schema::values_of(&inputs, &sent)),
            );
            let masked = options.masked.clone();
            let mut dependencies = Vec::new();
            for dependency in &workflow.depends_on {
                if dependencies
                    .iter()
                    .any(|done: &WorkflowRun| &done.workflow_id == dependency)
                {
                    continue;
                }
                let ran = self
                    .clone()
                    .run_at(
                        engine.clone(),
                        dependency.clone(),
                        inputs.clone(),
                        led_options(&options, &masked),
                        Depth::Nested(depth + 1),
                    )
                    .await?;
                let failed = !ran.succeeded();
                dependencies.push(ran);
                if failed {
                    return Ok(not_run(
                        &workflow_id,
                        compiled,
                        inputs,
                        dependencies,
                        &format!("not run: workflow `{dependency}`, which it depends on, failed"),
                    ));
                }
            }
            let prepared = engine.prepare_with(&compiled.workflow, self.inner.catalog.as_ref())?;
            let calls = Arc::new(Mutex::new(Vec::new()));
            let mut control = Control::new(
                &self,
                &engine,
                compiled,
                inputs.clone(),
                &dependencies,
                Arc::clone(&calls),
                Lineage {
                    depth,
                    masked: masked.clone(),
                    observers: options.observers.clone(),
                    stop: (
                        options.cancel.clone(),
                        options
                            .deadline
                            // One too far ahead to be a point in time is none (as the engine's).
                            .and_then(|deadline| std::time::Instant::now().checked_add(deadline)),
                    ),
                },
            );
            // The options of a workflow control passes to after this run.
            let led = led_options(&options, &masked);
            let run = if resuming {
                let mut resume = wayline_executor::ResumeOptions::new().mask(masked.clone());
                for observer in &options.observers {
                    resume = resume.observer(Arc::clone(observer));
                }
                if let Some(cancel) = options.cancel.clone() {
                    resume = resume.cancel(cancel);
                }
                if let Some(deadline) = options.deadline {
                    resume = resume.deadline(deadline);
                }
                let run_id = options.run_id.clone().unwrap_or_default();
                engine
                    .resume_flow(&prepared, &mut control, &run_id, resume)
                    .await?
            } else {
                let run_inputs: IndexMap<String, Value> = inputs.clone().into_iter().collect();
                engine
                    .run_flow(&prepared, &mut control, options.inputs(run_inputs))
                    .await?
            };
            let mut finished = control.finish(run, dependencies);
            // The outputs shown are masked as the record is (the values later steps and
            // workflows read stay as they came).
            let redactor = engine.redactor();
            finished
                .run
                .outputs
                .values_mut()
                .for_each(|value| redactor.value(value));
            for error in &mut finished.run.output_errors {
                *error = redactor.text(error).into_owned();
            }
            if let Some(called) = finished.transfer.take() {
                let transferred = called
                    .runner
                    .run_at(
                        engine.clone(),
                        called.workflow,
                        called.inputs,
                        led,
                        Depth::Nested(depth + 1),
                    )
                    .await;
                match transferred {
                    Ok(transferred) => {
                        if !transferred.succeeded() {
                            finished.run.run.status = RunStatus::Failed;
                        }
                        control::lock(&calls).push(transferred);
                    }
                    Err(error) => {
                        finished.run.run.status = RunStatus::Failed;
                        finished.run.output_errors.push(error.to_string());
                    }
                }
            }
            let mut result = finished.run;
            result.calls = std::mem::take(&mut *control::lock(&calls));
            Ok(result)
        })
    }
}

/// A workflow that did not run because a workflow it depends on failed: every step skipped.
fn not_run(
    workflow_id: &str,
    compiled: &Compiled,
    inputs: Map<String, Value>,
    dependencies: Vec<WorkflowRun>,
    why: &str,
) -> WorkflowRun {
    let mut run = Run::new(format!("{workflow_id}-not-run"), workflow_id.to_owned());
    run.status = RunStatus::Failed;
    run.user_inputs = inputs.clone().into_iter().collect();
    for step in &compiled.workflow.steps {
        let mut result = StepResult::pending(step.id.clone());
        result.status = StepStatus::Skipped;
        result.error = Some(why.to_owned());
        run.step_results.push(result);
    }
    WorkflowRun {
        workflow_id: workflow_id.to_owned(),
        run,
        outputs: Map::new(),
        output_errors: Vec::new(),
        dependencies,
        calls: Vec::new(),
        values: WorkflowValues {
            inputs,
            ..WorkflowValues::default()
        },
        last_status: None,
    }
}

/// A compile-time promise: a document's runs can be handed to `tokio::spawn` (this stops
/// compiling if either future stops being `Send`).
#[expect(dead_code, reason = "checked by the compiler, never called")]
fn runs_are_send(runner: &Runner, engine: &Engine) {
    fn send<T: Send>(_: &T) {}
    send(&runner.run(engine, "w", Map::new(), RunOptions::new()));
    send(&runner.resume(engine, "w", "r", Map::new(), RunOptions::new()));
}
