//! [`Recorder`]: a [`RunObserver`] that turns run events into [`RunObservation`]s and writes
//! them to a [`KnowledgeStore`].
//!
//! Observers must not block, so the recorder only gathers facts while the run goes (a few
//! map updates per event) and keeps each finished run's observation in memory;
//! [`Recorder::flush`] writes what has gathered in one store update. A host calls it after a
//! run (the CLI does), or from a task of its own.
//!
//! What it sees: the workflow, when the host [registers](Recorder::register) it (for pattern
//! templates; otherwise the operations in the order they were first attempted stand in);
//! every attempt (statistics); polls and the state their responses report (transitions and
//! the resource states of later steps); every step's end, with the variables set at the time
//! (the run's inputs and the output fields of steps that succeeded before it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

use chrono::Utc;
use indexmap::IndexMap;
use serde_json::Value;
use wayline_core::{
    RunEvent, RunObserver, StepKind, StepStatus, StoreError, ToolCatalog, Workflow,
};

use crate::learn::{AttemptSeen, RunObservation, StepSeen, TransitionSeen};
use crate::model::{Expect, Extra, PatternStep, RequestTemplate, SaveRule};
use crate::store::KnowledgeStore;
use crate::words;

/// Records runs into a knowledge store for one SUT.
#[derive(Debug, Clone)]
pub struct Recorder {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn KnowledgeStore>,
    sut: String,
    catalog: Arc<dyn ToolCatalog>,
    state: Mutex<State>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("store", &self.store)
            .field("sut", &self.sut)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct State {
    workflows: HashMap<String, Arc<Workflow>>,
    runs: HashMap<String, Watch>,
    finished: Vec<RunObservation>,
}

/// What is gathered of one run in flight.
#[derive(Debug)]
struct Watch {
    /// The variables set so far, for a constant-time "already set?".
    known: std::collections::HashSet<String>,
    started: Instant,

    states: IndexMap<String, String>,
    /// Per step: the operation it calls, its last status, and its poll in progress.
    steps: HashMap<String, StepWatch>,
    /// Operations in the order first attempted (when the workflow is not registered).
    order: Vec<(String, String)>,
    seen: RunObservation,
}

#[derive(Debug, Default)]
struct StepWatch {
    operation_id: String,
    status: Option<u16>,
    first_state: Option<(String, Instant)>,
}

impl Recorder {
    /// A recorder writing into `store` under `sut`; `catalog` describes the tools (for the
    /// request templates of patterns).
    pub fn new(
        store: Arc<dyn KnowledgeStore>,
        sut: impl Into<String>,
        catalog: Arc<dyn ToolCatalog>,
    ) -> Self {
        Recorder {
            inner: Arc::new(Inner {
                store,
                sut: sut.into(),
                catalog,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Makes `workflow` known, so runs of it are learned with its steps as pattern templates
    /// and its name as their goal.
    pub fn register(&self, workflow: &Workflow) {
        self.state()
            .workflows
            .insert(workflow.id.clone(), Arc::new(workflow.clone()));
    }

    /// The observations of finished runs not yet written.
    pub fn pending(&self) -> usize {
        self.state().finished.len()
    }

    /// Writes what finished runs taught into the store, in one update; returns how many runs
    /// were written. On failure the observations stay pending.
    pub async fn flush(&self) -> Result<usize, StoreError> {
        let batch = std::mem::take(&mut self.state().finished);
        if batch.is_empty() {
            return Ok(0);
        }
        let count = batch.len();
        let kept = batch.clone();
        let written = self
            .inner
            .store
            .update(
                &self.inner.sut,
                Box::new(move |knowledge| {
                    for seen in &batch {
                        knowledge.learn(seen);
                    }
                }),
            )
            .await;
        match written {
            Ok(_) => Ok(count),
            Err(error) => {
                let mut state = self.state();
                let newer = std::mem::take(&mut state.finished);
                state.finished = kept;
                state.finished.extend(newer);
                Err(error)
            }
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The template of a step: its operation, the tool's request shape, what it saves and
    /// how it polls.
    fn template(&self, step: &wayline_core::Step) -> PatternStep {
        let mut template = PatternStep {
            operation_id: step.tool_id.clone(),
            ..PatternStep::default()
        };
        if let Some(tool) = self.inner.catalog.tool(&step.tool_id) {
            let body_keys = tool
                .request
                .as_ref()
                .and_then(|request| request.body.as_ref())
                .and_then(Value::as_object)
                .map(|body| body.keys().cloned().collect())
                .unwrap_or_default();
            template.request_template = Some(RequestTemplate {
                method: Some(tool.method.to_uppercase()),
                path: (!tool.path.is_empty()).then(|| tool.path.clone()),
                body_keys,
                path_params: tool
                    .path_placeholders()
                    .into_iter()
                    .map(str::to_owned)
                    .collect(),
                extra: Extra::new(),
            });
            if let Some(extract) = &tool.response_extract {
                template.save = extract
                    .fields
                    .iter()
                    .map(|(key, path)| SaveRule {
                        key: key.clone(),
                        eval: path.clone(),
                        extra: Extra::new(),
                    })
                    .collect();
            }
        }
        template
            .save
            .extend(step.outputs.iter().map(|(key, source)| SaveRule {
                key: key.clone(),
                eval: source.clone(),
                extra: Extra::new(),
            }));
        if let Some(poll) = &step.poll {
            template.expect = Some(Expect {
                cel: Some(poll.until.clone()),
                ..Expect::default()
            });
            template.max_retries = Some(poll.max_attempts);
            template.delay_after = Some(poll.interval_ms.div_ceil(1000));
        }
        template
    }
}

impl RunObserver for Recorder {
    fn on_event(&self, event: &RunEvent<'_>) {
        let mut state = self.state();
        match event {
            RunEvent::RunStarted { run } => {
                let workflow = state.workflows.get(&run.workflow_id).cloned();
                let mut seen = RunObservation {
                    goal: run.workflow_id.replace(['_', '-'], " "),
                    at: Utc::now(),
                    ..RunObservation::default()
                };
                if let Some(workflow) = &workflow {
                    seen.goal = [workflow.name.as_str(), workflow.description.as_str()]
                        .join(" ")
                        .trim()
                        .to_owned();
                    seen.steps = workflow
                        .steps
                        .iter()
                        .filter(|step| step.kind != StepKind::Transform && !step.tool_id.is_empty())
                        .map(|step| self.template(step))
                        .collect();
                }
                seen.variables = run.user_inputs.keys().cloned().collect();
                seen.producers = vec!["inputs".to_owned(); seen.variables.len()];
                state.runs.insert(
                    run.id.clone(),
                    Watch {
                        known: seen.variables.iter().cloned().collect(),
                        started: Instant::now(),
                        states: IndexMap::new(),
                        steps: HashMap::new(),
                        order: Vec::new(),
                        seen,
                    },
                );
            }
            RunEvent::Attempt {
                run_id,
                step_id,
                tool_id,
                status,
                error,
                duration,
                ..
            } => {
                let Some(watch) = state.runs.get_mut(*run_id) else {
                    return;
                };
                let step = watch.steps.entry((*step_id).to_owned()).or_default();
                if step.operation_id.is_empty() {
                    step.operation_id = (*tool_id).to_owned();
                    watch
                        .order
                        .push(((*step_id).to_owned(), (*tool_id).to_owned()));
                }
                step.status = *status;
                watch.seen.attempts.push(AttemptSeen {
                    operation_id: (*tool_id).to_owned(),
                    success: error.is_none(),
                    status: *status,
                    error: error.map(str::to_owned),
                    duration_ms: duration.as_secs_f64() * 1000.0,
                });
            }
            RunEvent::Polled {
                run_id,
                step_id,
                tool_id,
                poll,
                state: reported,
                done,
            } => {
                let Some(watch) = state.runs.get_mut(*run_id) else {
                    return;
                };
                let Some(reported) = reported else { return };
                let resource = words::resource_of(tool_id);
                watch
                    .states
                    .insert(resource.clone(), (*reported).to_owned());
                let step = watch.steps.entry((*step_id).to_owned()).or_default();
                let first = step
                    .first_state
                    .get_or_insert_with(|| ((*reported).to_owned(), Instant::now()));
                if *done && first.0 != *reported {
                    watch.seen.transitions.push(TransitionSeen {
                        resource,
                        from: first.0.clone(),
                        to: (*reported).to_owned(),
                        polls: *poll,
                        seconds: first.1.elapsed().as_secs_f64(),
                    });
                }
            }
            RunEvent::StepFinished { run_id, result } => {
                let Some(watch) = state.runs.get_mut(*run_id) else {
                    return;
                };
                let Some(step) = watch.steps.get(&result.step_id) else {
                    return; // no attempt: skipped, or a transform
                };
                let success = result.status == StepStatus::Success;
                if !success && result.status != StepStatus::Failed {
                    return;
                }
                watch.seen.outcomes.push(StepSeen {
                    step_id: result.step_id.clone(),
                    operation_id: step.operation_id.clone(),
                    success,
                    error: result.error.clone(),
                    status: result.response_status.or(step.status),
                    variables_set: watch.seen.variables.len(),
                    states: watch.states.clone(),
                });
                if success && let Value::Object(output) = &result.output_data {
                    for key in output.keys() {
                        if watch.known.insert(key.clone()) {
                            watch.seen.variables.push(key.clone());
                            watch.seen.producers.push(result.step_id.clone());
                        }
                    }
                }
            }
            RunEvent::RunFinished { run } => {
                let Some(mut watch) = state.runs.remove(&run.id) else {
                    return;
                };
                watch.seen.succeeded = run.status == wayline_core::RunStatus::Success;
                watch.seen.duration_seconds = watch.started.elapsed().as_secs_f64();
                watch.seen.at = Utc::now();
                if watch.seen.steps.is_empty() {
                    watch.seen.steps = watch
                        .order
                        .iter()
                        .map(|(_, operation_id)| PatternStep {
                            operation_id: operation_id.clone(),
                            ..PatternStep::default()
                        })
                        .collect();
                }
                state.finished.push(watch.seen);
            }
            _ => {}
        }
    }
}
