//! The explorer's loop (seed 000): while the target is not reached, suggest the next step,
//! decide by the intervention matrix whether to run it or ask, run it through the engine
//! (polling when it waits for a state), read the result (save variables and states, or ask
//! what to do about an error), save the session, and learn.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use indexmap::IndexMap;
use serde_json::{Value, json};
use wayline_core::intervene::{Answer, Interventor, Question, QuestionKind};
use wayline_core::transport::Transport;
use wayline_core::workflow::{Poll, Step, Workflow};
use wayline_core::{MemoryCatalog, StepStatus};
use wayline_executor::{Engine, RunOptions};
use wayline_knowledge::learn::{AttemptSeen, RunObservation, StepSeen};
use wayline_knowledge::model::PatternStep;
use wayline_knowledge::{Knowledge, KnowledgeStore, Queries};
use wayline_registry::openapi::{ApiSpec, Location, Operation, STATE_FIELDS};

use crate::dataflow::{self, DataFlow};
use crate::intent::{self, CLI_METHOD, Verb, operation_resource, operation_verb};
use crate::intervention::{Action, Assessment, Thresholds, decide};
use crate::output::{Scenario, ScenarioInfo, ScenarioStep};
use crate::session::{ConfirmedStep, RejectedStep, Session, SessionStatus};
use crate::state::{ExploreState, Resource, is_secret_name, plural, redact};
use crate::suggest::{Suggester, Suggestion};
use crate::sut::SutConfig;

/// What one run of a step gave.
#[derive(Debug)]
struct Ran {
    success: bool,
    status: Option<u16>,
    output: Value,
    error: Option<String>,
    request: Value,
    attempts: u32,
    seconds: f64,
}

/// The explorer for one SUT and spec.
#[derive(Debug)]
pub struct Explorer {
    sut: SutConfig,
    spec: ApiSpec,
    flow: DataFlow,
    engine: Engine,
    interventor: Arc<dyn Interventor>,
    knowledge: Option<Arc<dyn KnowledgeStore>>,
    session_dir: PathBuf,
    thresholds: Thresholds,
    max_steps: u32,
}

impl Explorer {
    /// An explorer over `spec` for `sut`, sending through `transport` (with the SUT's auth
    /// already applied; see [`crate::auth::sut_transport`]), asking `interventor`.
    pub fn new(
        sut: SutConfig,
        mut spec: ApiSpec,
        transport: Arc<dyn Transport>,
        interventor: Arc<dyn Interventor>,
    ) -> Result<Explorer, String> {
        let base_url = sut.base_url().map_err(|error| error.to_string())?;
        // The explorer sends what it knows: a body field it has no value for is left out
        // (and the API says what is missing), never sent as placeholder text. So its tools
        // are imported with every body field optional; the spec itself keeps what is
        // required, for the suggestions.
        let mut lenient = spec.clone();
        for parameter in lenient
            .operations
            .iter_mut()
            .flat_map(|operation| operation.parameters.iter_mut())
            .filter(|parameter| parameter.location == Location::Body)
        {
            parameter.required = false;
        }
        let tools = lenient.tools(Some(&base_url));
        let catalog = MemoryCatalog::from_tools(tools);
        let engine = Engine::builder(Arc::new(catalog))
            .transport(transport)
            .max_parallel(1)
            .build();
        // Each command-line tool of the SUT is an operation too: `cli_NAME`, run with its usual
        // command unless the target quotes another.
        for (name, tool) in &sut.cli_tools {
            let mut operation =
                Operation::new(format!("cli_{name}"), CLI_METHOD, format!("/{name}"));
            operation.summary = tool.description.clone();
            operation.description = tool
                .common_operations
                .first()
                .or_else(|| tool.explore_hints.first())
                .map(|command| {
                    if command.split_whitespace().next() == Some(name.as_str()) {
                        command.clone()
                    } else {
                        format!("{name} {command}")
                    }
                })
                .unwrap_or_else(|| name.clone());
            spec.operations.push(operation);
        }
        let flow = dataflow::infer(&spec);
        let thresholds = Thresholds::from_sut(&sut);
        Ok(Explorer {
            sut,
            spec,
            flow,
            engine,
            interventor,
            knowledge: None,
            session_dir: PathBuf::from("sessions"),
            thresholds,
            max_steps: 200,
        })
    }

    /// Learns into `store` (and suggests from what it holds).
    pub fn knowledge(mut self, store: Arc<dyn KnowledgeStore>) -> Self {
        self.knowledge = Some(store);
        self
    }

    /// Keeps sessions in `dir`.
    pub fn session_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.session_dir = dir.into();
        self
    }

    /// Runs in auto mode whatever the SUT says (`--auto`).
    pub fn auto(mut self) -> Self {
        self.thresholds.auto = true;
        self
    }

    /// Stops (leaving the session in progress, to resume) after `steps` steps in this call.
    pub fn max_steps(mut self, steps: u32) -> Self {
        self.max_steps = steps;
        self
    }

    /// Where sessions are kept.
    pub fn sessions(&self) -> &Path {
        &self.session_dir
    }

    /// The spec explored.
    pub fn spec(&self) -> &ApiSpec {
        &self.spec
    }

    /// A new session for `target`, saved at once; preset variables are known from the start.
    pub fn start(&self, target: &str) -> Result<Session, String> {
        let mode = if self.thresholds.auto {
            "auto"
        } else {
            "manual"
        };
        let mut session = Session::new(&self.sut.name, target, mode, Utc::now());
        for (name, value) in &self.sut.preset_variables {
            if !value.is_null() {
                session
                    .current_state
                    .variables
                    .insert(name.clone(), value.clone());
            }
        }
        session.save(&self.session_dir, Utc::now())?;
        Ok(session)
    }

    /// Session `id` from the session directory, to go on with.
    pub fn resume(&self, id: &str) -> Result<Session, String> {
        let mut session = Session::load(&self.session_dir, id)?;
        // Secret variables are not saved; the SUT's presets give them again.
        for (name, value) in &self.sut.preset_variables {
            if !value.is_null() && !session.current_state.variables.contains_key(name) {
                session
                    .current_state
                    .variables
                    .insert(name.clone(), value.clone());
            }
        }
        if session.session.status == SessionStatus::Aborted {
            session.session.status = SessionStatus::InProgress;
        }
        Ok(session)
    }

    async fn load_knowledge(&self) -> Knowledge {
        match &self.knowledge {
            Some(store) => store.load(&self.sut.name).await.unwrap_or_else(|error| {
                tracing::warn!(%error, "the knowledge could not be read; exploring without it");
                Knowledge::new()
            }),
            None => Knowledge::new(),
        }
    }

    /// Learns `observation` into the store, and into `knowledge` (this run's copy of it, so
    /// the store is read once per run). Without a store nothing is learned.
    async fn learn(&self, knowledge: &mut Knowledge, observation: RunObservation) {
        if self.knowledge.is_some() {
            knowledge.learn(&observation);
        }
        if let Some(store) = &self.knowledge
            && let Err(error) = store
                .update(
                    &self.sut.name,
                    Box::new(move |knowledge: &mut Knowledge| knowledge.learn(&observation)),
                )
                .await
        {
            tracing::warn!(%error, "what the session learned was not saved");
        }
    }

    /// Explores until the target is reached, a person stops it, or `max_steps` steps ran;
    /// the session is saved after every step.
    pub async fn run(&self, session: &mut Session) -> Result<(), String> {
        let started = Instant::now();
        let began_in_progress = session.session.status == SessionStatus::InProgress;
        let mut silent = 0u32;
        let mut steps = 0u32;
        // Failures and refusals per operation: a step that keeps failing (or being declined)
        // ends the session instead of being suggested forever.
        let mut strikes: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
        // Read once; what this run learns is applied to it as well as to the store.
        let mut knowledge = self.load_knowledge().await;
        // The target read as goals, again only when a person's answer rewrites it.
        let mut target_goals = (
            session.session.target.clone(),
            intent::parse(&session.session.target, &self.spec),
        );
        while session.session.status == SessionStatus::InProgress {
            if steps >= self.max_steps {
                break; // stays in progress: resume it
            }
            steps += 1;
            let queries = Queries::new(&knowledge).min_support(1);
            if target_goals.0 != session.session.target {
                target_goals = (
                    session.session.target.clone(),
                    intent::parse(&session.session.target, &self.spec),
                );
            }
            let suggester = Suggester::with_goals(
                &self.spec,
                &self.flow,
                &session.session.target,
                target_goals.1.clone(),
                Some(queries),
            );
            let confirmed = session.confirmed_operations();
            let Some(mut suggestion) =
                suggester.next(&session.current_state, &session.goals_done, &confirmed)
            else {
                session.session.status = SessionStatus::Completed;
                break;
            };
            session.confidences.push(round(suggestion.confidence));
            let mut assessment = Assessment::new(suggestion.confidence, suggestion.source);
            assessment.pitfalls = suggestion.pitfalls.clone();
            assessment.checkpoint = self.sut.is_checkpoint(&suggestion.operation);
            assessment.silent_steps = silent;
            let decision = decide(&assessment, &self.thresholds);
            if decision.action.asks() {
                silent = 0;
                match self
                    .ask(session, &suggestion, decision.action, &decision.reason)
                    .await
                {
                    Asked::Go(operation) if operation != suggestion.operation => {
                        // Another candidate was chosen: its own inputs, pitfalls and goal.
                        match suggester.suggestion_for(
                            &operation,
                            suggestion.goal.clone(),
                            &session.current_state,
                        ) {
                            Some(chosen) => suggestion = chosen,
                            None => break,
                        }
                    }
                    Asked::Go(_) => {}
                    Asked::Skip => {
                        if self.strike(session, &mut strikes, &suggestion.operation, "declined") {
                            break;
                        }
                        session.save(&self.session_dir, Utc::now())?;
                        continue;
                    }
                    Asked::Stop => break,
                }
            } else {
                silent += 1;
            }
            let Some(operation) = self.spec.operation(&suggestion.operation).cloned() else {
                session.session.status = SessionStatus::Failed;
                break;
            };
            session.pending_step = Some(json!({
                "operation_id": operation.id,
                "inputs": redact(&json!(suggestion.inputs)),
            }));
            session.save(&self.session_dir, Utc::now())?;
            let until = suggestion.wait_for.as_ref().map(|wait| wait.condition());
            let mut ran = self
                .execute(&operation, &suggestion.inputs, until.as_deref())
                .await;
            // A wait that ended in a failed state is a failure of the step, not a success.
            if let Some(wait) = &suggestion.wait_for
                && ran.success
            {
                let reached = ran.output.get(&wait.field).and_then(Value::as_str);
                if reached != Some(wait.state.as_str()) {
                    ran.success = false;
                    ran.error = Some(format!(
                        "the {} reached {}, not {}",
                        wait.resource,
                        reached.unwrap_or("no state"),
                        wait.state
                    ));
                }
            }
            session.pending_step = None;
            if ran.success {
                let saved = apply(
                    &mut session.current_state,
                    &operation,
                    &suggestion.inputs,
                    &ran.output,
                );
                if let Some(goal) = &suggestion.goal
                    && !session.goals_done.contains(goal)
                {
                    session.goals_done.push(goal.clone());
                }
                session.confirmed_steps.push(ConfirmedStep {
                    order: u32::try_from(session.confirmed_steps.len()).unwrap_or(u32::MAX),
                    operation_id: operation.id.clone(),
                    request: redact(&ran.request),
                    response: json!({"status_code": ran.status, "body": redact(&ran.output)}),
                    saved_variables: saved,
                    goal: suggestion.goal.clone(),
                    until,
                    attempts: ran.attempts,
                });
                self.learn(
                    &mut knowledge,
                    self.observe(
                        session,
                        &operation,
                        &ran_outcome(&operation, true, None, ran.status),
                        ran.seconds,
                    ),
                )
                .await;
            } else {
                let error = ran.error.clone().unwrap_or_else(|| "failed".to_owned());
                self.learn(
                    &mut knowledge,
                    self.observe(
                        session,
                        &operation,
                        &ran_outcome(&operation, false, Some(error.clone()), ran.status),
                        ran.seconds,
                    ),
                )
                .await;
                silent = 0;
                if self.strike(session, &mut strikes, &operation.id, "failed") {
                    break; // the session is saved once it has ended, below
                }
                match self.recover(session, &operation, &error, ran.status).await {
                    Recovery::Retry => {}
                    Recovery::Skip(action) => {
                        session.rejected_steps.push(RejectedStep {
                            operation_id: operation.id.clone(),
                            error,
                            user_action: action,
                        });
                        if let Some(goal) = &suggestion.goal {
                            session.goals_done.push(goal.clone());
                        }
                    }
                    Recovery::Stop(action) => {
                        session.rejected_steps.push(RejectedStep {
                            operation_id: operation.id.clone(),
                            error,
                            user_action: action,
                        });
                        session.session.status = SessionStatus::Aborted;
                    }
                }
            }
            session.save(&self.session_dir, Utc::now())?;
        }
        // The whole session, once, as a pattern for the target: when it was completed by this
        // call (a resumed completed session is not learned again) and no goal was skipped.
        if began_in_progress
            && session.session.status == SessionStatus::Completed
            && session.rejected_steps.is_empty()
        {
            let mut observation = RunObservation::default();
            observation.goal = session.session.target.clone();
            observation.succeeded = true;
            observation.duration_seconds = started.elapsed().as_secs_f64();
            observation.steps = session
                .confirmed_steps
                .iter()
                .map(|step| {
                    let mut pattern_step = PatternStep::default();
                    pattern_step.operation_id = step.operation_id.clone();
                    pattern_step
                })
                .collect();
            self.learn(&mut knowledge, observation).await;
        }
        session.save(&self.session_dir, Utc::now())?;
        Ok(())
    }

    /// Counts a failure or refusal of `operation`; at the third, the session fails (and says
    /// why). True when it did.
    fn strike(
        &self,
        session: &mut Session,
        strikes: &mut std::collections::HashMap<String, u32>,
        operation: &str,
        what: &str,
    ) -> bool {
        let count = strikes.entry(operation.to_owned()).or_default();
        *count += 1;
        if *count < MAX_STRIKES {
            return false;
        }
        session.rejected_steps.push(RejectedStep {
            operation_id: operation.to_owned(),
            error: format!("{what} {MAX_STRIKES} times"),
            user_action: "the session stopped".to_owned(),
        });
        session.session.status = SessionStatus::Failed;
        true
    }

    /// A step's attempts and outcome as an observation (stats and pitfalls).
    fn observe(
        &self,
        session: &Session,
        operation: &Operation,
        outcome: &StepSeen,
        seconds: f64,
    ) -> RunObservation {
        let mut observation = RunObservation::default();
        observation.goal = session.session.target.clone();
        let mut attempt = AttemptSeen::new(&operation.id, outcome.success, seconds * 1_000.0);
        attempt.status = outcome.status;
        attempt.error = outcome.error.clone();
        observation.attempts.push(attempt);
        observation.variables = session.current_state.variables.keys().cloned().collect();
        observation.producers = vec!["inputs".to_owned(); observation.variables.len()];
        let mut outcome = outcome.clone();
        outcome.variables_set = observation.variables.len();
        outcome.states = session.current_state.resource_states();
        observation.outcomes.push(outcome);
        observation.succeeded = false; // one step is not a pattern
        observation
    }

    /// Asks about a suggestion; what to do next.
    async fn ask(
        &self,
        session: &mut Session,
        suggestion: &Suggestion,
        action: Action,
        reason: &str,
    ) -> Asked {
        let kind = action.question_kind().unwrap_or(QuestionKind::Confirm);
        let mut options = vec![suggestion.operation.clone()];
        options.extend(suggestion.alternatives.iter().cloned());
        options.retain(|option| !option.is_empty());
        let message = match action {
            Action::AskForClarification => format!("{reason}; say what you mean, or stop"),
            Action::WarnAndAsk => format!("{}: {reason}; run it anyway?", suggestion.operation),
            Action::AskToChoose => format!("{reason}; which one?"),
            _ => format!("run {}? ({reason})", suggestion.operation),
        };
        let question = Question::new(kind, message)
            .operation(suggestion.operation.clone())
            .options(options.clone())
            .context(json!({
                "confidence": round(suggestion.confidence),
                "why": suggestion.reason,
                "inputs": suggestion.inputs.keys().collect::<Vec<_>>(),
                "missing": suggestion.missing,
            }));
        session.interventions += 1;
        match self.interventor.ask(&question).await {
            Answer::Yes if !suggestion.operation.is_empty() => {
                Asked::Go(suggestion.operation.clone())
            }
            Answer::Choose(index) => match options.get(index) {
                Some(operation) => Asked::Go(operation.clone()),
                None => self.stop(session, "chose an option that does not exist"),
            },
            Answer::No => {
                session.rejected_steps.push(RejectedStep {
                    operation_id: suggestion.operation.clone(),
                    error: reason.to_owned(),
                    user_action: "declined".to_owned(),
                });
                if let Some(goal) = &suggestion.goal {
                    session.goals_done.push(goal.clone());
                }
                Asked::Skip
            }
            // For a target nothing matched, words are a new target; JSON is values to use.
            Answer::Text(text)
                if kind == QuestionKind::Clarify
                    && serde_json::from_str::<Value>(&text).is_err() =>
            {
                session.session.target = text;
                Asked::Skip
            }
            Answer::Text(text) => {
                merge_variables(&mut session.current_state, &text);
                Asked::Skip
            }
            _ => self.stop(session, "stopped"),
        }
    }

    fn stop(&self, session: &mut Session, why: &str) -> Asked {
        tracing::info!(why, "the session stops");
        session.session.status = SessionStatus::Aborted;
        Asked::Stop
    }

    /// What to do after a failed step: seed 000's non-recoverable errors, each asked about.
    async fn recover(
        &self,
        session: &mut Session,
        operation: &Operation,
        error: &str,
        status: Option<u16>,
    ) -> Recovery {
        let (kind, message) = match status {
            Some(400) => {
                let named = wayline_knowledge::words::missing_names(error);
                let fix = match named.first() {
                    None => "give the missing or wrong values as JSON to retry".to_owned(),
                    Some(first) => format!(
                        "suggested fix: give {} (as JSON: {{\"{first}\": ...}}) to retry",
                        named
                            .iter()
                            .map(|name| format!("`{name}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                (
                    QuestionKind::Error,
                    format!("400 Bad Request from {}: {error}; {fix}", operation.id),
                )
            }
            Some(401 | 403) => (
                QuestionKind::Credentials,
                format!(
                    "{} was refused ({error}); check the credentials",
                    operation.id
                ),
            ),
            Some(404) => (
                QuestionKind::Error,
                format!(
                    "{}: not found ({error}); does the resource still exist?",
                    operation.id
                ),
            ),
            Some(409) => (
                QuestionKind::Error,
                format!(
                    "{}: state conflict ({error}); known states: {:?}",
                    operation.id,
                    session.current_state.resource_states()
                ),
            ),
            _ => (
                QuestionKind::Error,
                format!("{} failed: {error}", operation.id),
            ),
        };
        let question = Question::new(kind, message)
            .operation(operation.id.clone())
            .context(json!({"status": status, "error": error}));
        session.interventions += 1;
        let answer = self.interventor.ask(&question).await;
        if kind == QuestionKind::Credentials {
            // Credentials come from the SUT's environment variables, never from an answer (it
            // would land in the session file); retrying with the same ones cannot help.
            return match answer {
                Answer::No => Recovery::Skip("skipped".to_owned()),
                _ => Recovery::Stop(
                    "stopped: set the SUT's credential variables and resume".to_owned(),
                ),
            };
        }
        match answer {
            Answer::Yes => Recovery::Retry,
            Answer::Text(text) => {
                merge_variables(&mut session.current_state, &text);
                Recovery::Retry
            }
            Answer::No => Recovery::Skip("skipped".to_owned()),
            _ => Recovery::Stop("stopped".to_owned()),
        }
    }

    /// Runs `operation` once (polling until `until` when given) through the engine.
    async fn execute(
        &self,
        operation: &Operation,
        inputs: &IndexMap<String, Value>,
        until: Option<&str>,
    ) -> Ran {
        if operation.method == CLI_METHOD {
            return self.execute_command(operation, inputs).await;
        }
        let mut step = Step::new("call", &operation.id);
        for (name, value) in inputs {
            step.input_mapping.insert(name.clone(), value.clone());
        }
        let polling = self.sut.execution.auto_mode.polling;
        if let Some(until) = until {
            step.poll = Some(Poll::new(
                until,
                polling.max_retries.saturating_add(1),
                polling.delay_seconds.saturating_mul(1_000),
            ));
        }
        let mut workflow = Workflow::new("explore", &operation.id);
        workflow.steps.push(step);
        let clock = Instant::now();
        let run = self.engine.run(&workflow, RunOptions::new()).await;
        let seconds = clock.elapsed().as_secs_f64();
        match run {
            Err(error) => Ran {
                success: false,
                status: None,
                output: Value::Null,
                error: Some(error.to_string()),
                request: json!({"inputs": inputs}),
                attempts: 0,
                seconds,
            },
            Ok(run) => {
                let result = &run.step_results[0];
                let mut request = serde_json::to_value(&result.request).unwrap_or(Value::Null);
                if let Value::Object(map) = &mut request {
                    map.insert("inputs".into(), json!(inputs));
                }
                Ran {
                    success: result.status == StepStatus::Success,
                    status: result.response_status,
                    output: result.output_data.clone(),
                    error: result.error.clone(),
                    request,
                    attempts: result.attempts,
                    seconds,
                }
            }
        }
    }

    /// Runs a command-line tool's step: the command line split into words (quotes group),
    /// its first word the tool, run without a shell through the engine's `cli` tools.
    async fn execute_command(
        &self,
        operation: &Operation,
        inputs: &IndexMap<String, Value>,
    ) -> Ran {
        let name = operation_resource(operation);
        let line = inputs
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let words = split_command(line);
        let failed = |error: String| Ran {
            success: false,
            status: None,
            output: Value::Null,
            error: Some(error),
            request: json!({"name": name, "args": []}),
            attempts: 0,
            seconds: 0.0,
        };
        let Some((program, args)) = words.split_first() else {
            return failed(format!("no command to run for `{name}`"));
        };
        if *program != name {
            return failed(format!(
                "`{line}` does not run `{name}`; a step of this tool runs only it"
            ));
        }
        let tool = json!({
            "id": operation.id, "name": name, "kind": "cli",
            "command": {"program": program, "args": args},
        });
        let tool = match serde_json::from_value::<wayline_core::ToolDefinition>(tool) {
            Ok(tool) => tool,
            Err(error) => return failed(error.to_string()),
        };
        let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools([tool]))).build();
        let mut workflow = Workflow::new("explore", &operation.id);
        workflow.steps.push(Step::new("call", &operation.id));
        let clock = Instant::now();
        let request = json!({"name": program, "args": args});
        match engine.run(&workflow, RunOptions::new()).await {
            Err(error) => failed(error.to_string()),
            Ok(run) => {
                let result = &run.step_results[0];
                Ran {
                    success: result.status == StepStatus::Success,
                    status: None,
                    output: result.output_data.clone(),
                    error: result.error.clone(),
                    request,
                    attempts: result.attempts,
                    seconds: clock.elapsed().as_secs_f64(),
                }
            }
        }
    }

    /// The confirmed steps as the reusable scenario (the seed's output YAML).
    pub fn output(&self, session: &Session) -> Scenario {
        let base = self.sut.base_url().unwrap_or_default();
        let mut steps = Vec::new();
        // Which variable holds each saved resource id, for later steps' parameters.
        let mut holders: Vec<(String, String)> = Vec::new();
        for (index, confirmed) in session.confirmed_steps.iter().enumerate() {
            let Some(operation) = self.spec.operation(&confirmed.operation_id) else {
                continue;
            };
            if operation.method == CLI_METHOD {
                // The seed's CLI request shape: the tool's name and its arguments.
                let request = json!({
                    "name": confirmed.request["name"],
                    "args": confirmed.request["args"],
                });
                steps.push(ScenarioStep {
                    operation_id: operation.id.clone(),
                    request_type: "cli".to_owned(),
                    request: serde_json::to_string_pretty(&request).unwrap_or_default(),
                    expect: json!({"exit_code": 0, "cel": ""}).to_string(),
                    save: json!({ "placeholder": [] }).to_string(),
                    description: operation.summary.clone(),
                    max_retries: 0,
                    delay_after: 0,
                    name: format!("{}_{index}", operation.id.to_lowercase()),
                    continue_on_unexpected: false,
                    stage: "test".to_owned(),
                    meta: "{}".to_owned(),
                    generation_id: session.session.id.clone(),
                    order: u32::try_from(index).unwrap_or(u32::MAX),
                    extra: serde_json::Map::new(),
                });
                continue;
            }
            let inputs = confirmed.request.get("inputs").and_then(Value::as_object);
            let mut path_params = serde_json::Map::new();
            let mut body = serde_json::Map::new();
            let mut body_params = serde_json::Map::new();
            let mut query = serde_json::Map::new();
            for parameter in &operation.parameters {
                let Some(value) = inputs.and_then(|inputs| inputs.get(&parameter.input)) else {
                    continue;
                };
                let variable = holders
                    .iter()
                    .rev()
                    .find(|(_, id)| value.as_str() == Some(id.as_str()))
                    .map(|(name, _)| name.clone());
                match (parameter.location, variable) {
                    (Location::Path, Some(variable)) => {
                        path_params.insert(parameter.name.clone(), Value::from(variable));
                    }
                    (Location::Path, None) => {
                        path_params
                            .insert(parameter.name.clone(), Value::from(parameter.name.clone()));
                    }
                    (Location::Body, Some(variable)) => {
                        body.insert(
                            parameter.name.clone(),
                            Value::from(format!("{{{variable}}}")),
                        );
                        body_params.insert(variable.clone(), Value::from(variable));
                    }
                    // A secret is never written out: it becomes a value to give at run time.
                    (Location::Body, None) if is_secret_name(&parameter.name) => {
                        let input = parameter.input.clone();
                        body.insert(parameter.name.clone(), Value::from(format!("{{{input}}}")));
                        body_params.insert(input.clone(), Value::from(input));
                    }
                    (Location::Body, None) => {
                        body.insert(parameter.name.clone(), value.clone());
                    }
                    (Location::Query, _) => {
                        query.insert(parameter.name.clone(), value.clone());
                    }
                    _ => {}
                }
            }
            let mut request = json!({
                "method": operation.method,
                "path": format!("{base}{}", operation.path),
            });
            for (key, map) in [
                ("path_params", path_params),
                ("query_params", query),
                ("body", body),
                ("body_params", body_params),
            ] {
                if !map.is_empty() {
                    request[key] = Value::Object(map);
                }
            }
            let resource = operation_resource(operation);
            let save: Vec<Value> = confirmed
                .saved_variables
                .iter()
                .map(|name| {
                    let field = id_field(&confirmed.response["body"], &resource)
                        .unwrap_or_else(|| "id".to_owned());
                    json!({"key": name, "eval": format!("body.{field}")})
                })
                .collect();
            for name in &confirmed.saved_variables {
                if let Some(value) = session
                    .current_state
                    .variables
                    .get(name)
                    .and_then(Value::as_str)
                {
                    holders.push((name.clone(), value.to_owned()));
                } else if let Some(id) =
                    id_field(&confirmed.response["body"], &resource).and_then(|field| {
                        confirmed.response["body"]
                            .get(&field)
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    })
                {
                    holders.push((name.clone(), id));
                }
            }
            let name = format!(
                "{}_{index}",
                operation
                    .id
                    .rsplit('_')
                    .next()
                    .unwrap_or(&operation.id)
                    .to_lowercase()
            );
            let polled = confirmed.until.is_some();
            let polling = self.sut.execution.auto_mode.polling;
            let step = ScenarioStep {
                operation_id: operation.id.clone(),
                request_type: "http".to_owned(),
                request: serde_json::to_string_pretty(&request).unwrap_or_default(),
                expect: json!({
                    "status_code": confirmed.response["status_code"],
                    "cel": confirmed.until.clone().unwrap_or_default(),
                })
                .to_string(),
                save: json!({ "placeholder": save }).to_string(),
                description: format!("{} {}", operation.method, operation.path),
                max_retries: if polled { polling.max_retries } else { 0 },
                delay_after: if polled { polling.delay_seconds } else { 0 },
                name,
                continue_on_unexpected: false,
                stage: stage(operation).to_owned(),
                meta: "{}".to_owned(),
                generation_id: session.session.id.clone(),
                order: u32::try_from(index).unwrap_or(u32::MAX),
                extra: serde_json::Map::new(),
            };
            steps.push(step);
        }
        Scenario {
            scenario: ScenarioInfo {
                id: session.session.id.clone(),
                context: json!({
                    "auth": {"type": self.sut.connection.auth.kind},
                    "base_path": self.sut.connection.base_path,
                    "host": self.sut.connection.host,
                }),
                description: session.session.target.clone(),
                name: scenario_name(&session.session.target),
                extra: serde_json::Map::new(),
            },
            steps,
        }
    }
}

/// A command line split into words: whitespace separates, `"…"` and `'…'` group.
fn split_command(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(open), c) if c == open => quote = None,
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !current.is_empty() {
                    words.push(std::mem::take(&mut current));
                }
                started = false;
            }
            (None, c) => current.push(c),
        }
    }
    if started || !current.is_empty() {
        words.push(current);
    }
    words
}

/// Failures or refusals of one operation before the session gives up.
const MAX_STRIKES: u32 = 3;

/// The answer to a question about a suggestion.
enum Asked {
    Go(String),
    Skip,
    Stop,
}

/// What to do after a failure.
enum Recovery {
    Retry,
    Skip(String),
    Stop(String),
}

fn round(value: f64) -> f64 {
    (value * 1_000.0).round() / 1_000.0
}

fn ran_outcome(
    operation: &Operation,
    success: bool,
    error: Option<String>,
    status: Option<u16>,
) -> StepSeen {
    let mut seen = StepSeen::new("call", &operation.id, success);
    seen.error = error;
    seen.status = status;
    seen
}

/// Values a person gave as JSON text (`{"region": ...}`) become variables; other text is kept
/// as the variable `clarification`.
fn merge_variables(state: &mut ExploreState, text: &str) {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(values)) => {
            for (name, value) in values {
                state.variables.insert(name, value);
            }
        }
        _ => {
            state
                .variables
                .insert("clarification".to_owned(), Value::from(text));
        }
    }
}

/// The field of `body` holding the id of a `resource`: `{resource}Id`, `id` or `name`.
fn id_field(body: &Value, resource: &str) -> Option<String> {
    let object = body.as_object()?;
    let wanted = format!("{resource}id");
    object
        .keys()
        .find(|key| key.to_lowercase() == wanted)
        .or_else(|| object.keys().find(|key| *key == "id"))
        .cloned()
}

/// seed 000's state update rules: a create adds the resource and saves its id; a read
/// updates it; an update marks it changing unless the response says its state; a delete
/// removes it. The names of the saved variables are returned.
pub fn apply(
    state: &mut ExploreState,
    operation: &Operation,
    inputs: &IndexMap<String, Value>,
    output: &Value,
) -> Vec<String> {
    let resource = operation_resource(operation);
    let kind = plural(&resource);
    let reported = STATE_FIELDS
        .iter()
        .find_map(|field| output.get(*field).and_then(Value::as_str))
        .map(str::to_owned);
    let attributes: IndexMap<String, Value> = output
        .as_object()
        .map(|object| {
            object
                .iter()
                .filter(|(key, value)| {
                    !value.is_null()
                        && !value.is_object()
                        && !value.is_array()
                        && !is_secret_name(key)
                })
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect()
        })
        .unwrap_or_default();
    let id_of_output = id_field(output, &resource)
        .and_then(|field| output.get(&field))
        .and_then(|value| {
            value
                .as_str()
                .map(str::to_owned)
                .or_else(|| (!value.is_null()).then(|| value.to_string()))
        });
    // The id a call on an existing resource names: its last path parameter.
    let id_in_path = operation
        .parameters
        .iter()
        .rfind(|parameter| parameter.location == Location::Path)
        .and_then(|parameter| inputs.get(&parameter.input))
        .and_then(|value| value.as_str().map(str::to_owned));
    // A create's parent is the resource its path ends in (`/clusters/{clusterId}/branches`).
    let parent = id_in_path.clone();
    match operation_verb(operation) {
        Verb::Create => {
            let Some(id) = id_of_output else {
                return Vec::new();
            };
            // The next number after the highest used, so a name freed by a delete is never
            // given to another resource (its variable may still be referred to).
            let prefix = format!("{resource}_");
            let highest = state
                .resources
                .get(&kind)
                .into_iter()
                .flat_map(|named| named.keys())
                .chain(state.variables.keys())
                .filter_map(|name| name.strip_prefix(&prefix)?.parse::<u64>().ok())
                .max()
                .unwrap_or(0);
            let name = format!("{prefix}{}", highest + 1);
            let named = state.resources.entry(kind).or_default();
            named.insert(
                name.clone(),
                Resource {
                    id: id.clone(),
                    state: reported,
                    parent_id: parent,
                    attributes,
                },
            );
            state.variables.insert(name.clone(), Value::from(id));
            vec![name]
        }
        Verb::Delete => {
            if let (Some(id), Some(named)) = (id_in_path, state.resources.get_mut(&kind)) {
                named.retain(|_, known| known.id != id);
                if let Some(gone) = state
                    .variables
                    .iter()
                    .find(|(_, value)| value.as_str() == Some(id.as_str()))
                    .map(|(name, _)| name.clone())
                {
                    state.variables.shift_remove(&gone);
                }
            }
            Vec::new()
        }
        verb => {
            let id = id_in_path.or(id_of_output);
            if let (Some(id), Some(named)) = (id, state.resources.get_mut(&kind))
                && let Some(known) = named.values_mut().find(|known| known.id == id)
            {
                known.state = reported
                    .or_else(|| (verb == Verb::Update).then(|| "MODIFYING".to_owned()))
                    .or(known.state.take());
                known.attributes.extend(attributes);
            }
            Vec::new()
        }
    }
}

fn stage(operation: &Operation) -> &'static str {
    match operation_verb(operation) {
        Verb::Create => "setup",
        Verb::Delete => "teardown",
        _ => "test",
    }
}

fn scenario_name(target: &str) -> String {
    let mut words = crate::intent::words(target);
    words.truncate(8);
    if words.is_empty() {
        "explored".to_owned()
    } else {
        words.join("_")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operation(method: &str, path: &str, parameters: &[&str]) -> Operation {
        let spec = serde_json::json!({
            "openapi": "3.0.0",
            "paths": {path: {method.to_lowercase(): {
                "operationId": "op",
                "parameters": parameters.iter().map(|name| json!({"name": name, "in": "path", "required": true})).collect::<Vec<_>>(),
                "responses": {"200": {"description": "ok"}}}}}
        });
        ApiSpec::parse(&spec.to_string(), Path::new("spec.json"))
            .unwrap()
            .operations
            .remove(0)
    }

    #[test]
    fn a_name_freed_by_a_delete_is_not_given_again() {
        let create = operation("POST", "/clusters", &[]);
        let delete = operation("DELETE", "/clusters/{clusterId}", &["clusterId"]);
        let mut state = ExploreState::default();
        let none = IndexMap::new();
        assert_eq!(
            apply(
                &mut state,
                &create,
                &none,
                &json!({"clusterId": "c1", "state": "CREATING"})
            ),
            ["cluster_1"]
        );
        assert_eq!(
            apply(&mut state, &create, &none, &json!({"clusterId": "c2"})),
            ["cluster_2"]
        );
        let mut inputs = IndexMap::new();
        inputs.insert("clusterId".to_owned(), json!("c1"));
        apply(&mut state, &delete, &inputs, &json!({}));
        assert_eq!(
            apply(
                &mut state,
                &create,
                &none,
                &json!({"clusterId": "c3", "rootPassword": "p"})
            ),
            ["cluster_3"]
        );
        assert_eq!(state.variables["cluster_2"], "c2", "untouched");
        let third = &state.resources["clusters"]["cluster_3"];
        assert!(
            !third.attributes.contains_key("rootPassword"),
            "secrets are not kept"
        );
        // A branch's parent is the resource its path ends in.
        let branch = operation("POST", "/clusters/{clusterId}/branches", &["clusterId"]);
        inputs.insert("clusterId".to_owned(), json!("c3"));
        apply(&mut state, &branch, &inputs, &json!({"branchId": "b1"}));
        assert_eq!(
            state.resources["branches"]["branch_1"].parent_id.as_deref(),
            Some("c3")
        );
    }
}
