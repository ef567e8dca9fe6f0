//! The explorer's loop: while the target is not reached, suggest the next step, decide by the
//! intervention matrix whether to run it or ask, run it through the engine (polling when it
//! waits for a state), read the result (save variables and states by the rules of
//! `ExploreState::apply`, or ask what to do about an error), save the session, and learn.

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
use wayline_knowledge::model::{Expect, PatternStep, RequestTemplate, SaveRule};
use wayline_knowledge::{Knowledge, KnowledgeStore, Queries};
use wayline_registry::openapi::{ApiSpec, Operation, ParameterLocation};

use crate::Error;
use crate::command::{CommandStep, command_step};
use crate::dataflow::{self, DataFlow};
use crate::intent::{self, CLI_METHOD, operation_resource};
use crate::intervention::{Action, Assessment, Thresholds, decide};
use crate::location::LocationTransport;
use crate::names;
use crate::output::Scenario;
use crate::session::{ConfirmedStep, RejectedStep, Session, SessionStatus};
use crate::state::{ExploreState, id_path, redact};
use crate::suggest::{Suggester, Suggestion};
use crate::sut::SutConfig;

/// What one run of a step gave.
#[derive(Debug)]
struct Ran {
    /// The `Location` header of the last answer (a create's, naming what it made).
    location: Option<String>,
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
    /// The engine's transport, which keeps the latest answer's `Location`.
    location: Arc<LocationTransport>,
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
    ) -> Result<Explorer, Error> {
        let base_url = sut.base_url()?;
        // The explorer sends what it knows: a body field it has no value for is left out
        // (and the API says what is missing), never sent as placeholder text. So its tools
        // are imported with every body field optional; the spec itself keeps what is
        // required, for the suggestions.
        let mut lenient = spec.clone();
        for parameter in lenient
            .operations
            .iter_mut()
            .flat_map(|operation| operation.parameters.iter_mut())
            .filter(|parameter| parameter.location == ParameterLocation::Body)
        {
            parameter.required = false;
        }
        let tools = lenient.tools(Some(&base_url));
        let catalog = MemoryCatalog::from_tools(tools);
        let location = Arc::new(LocationTransport::new(transport));
        let engine = Engine::builder(Arc::new(catalog))
            .transport(Arc::clone(&location) as Arc<dyn Transport>)
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
            location,
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
    pub fn start(&self, target: &str) -> Result<Session, Error> {
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
    pub fn resume(&self, id: &str) -> Result<Session, Error> {
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

    /// The SUT's knowledge (empty without a store).
    async fn load_knowledge(&self) -> Result<Knowledge, Error> {
        match &self.knowledge {
            Some(store) => store.load(&self.knowledge_key()).await.map_err(|source| {
                Error::KnowledgeUnreadable {
                    sut: self.sut.name.clone(),
                    key: self.knowledge_key(),
                    source,
                }
            }),
            None => Ok(Knowledge::new()),
        }
    }

    /// The key the SUT's knowledge is stored under (its name made safe for any store).
    fn knowledge_key(&self) -> String {
        wayline_knowledge::sut_key(&self.sut.name)
    }

    /// Learns `observation` into the store, and into `knowledge` (this run's copy of it, so
    /// the store is read once per run). Without a store nothing is learned. The first save
    /// that fails is kept in `unsaved`: the exploration goes on, and ends with that error.
    async fn learn(
        &self,
        knowledge: &mut Knowledge,
        observation: RunObservation,
        unsaved: &mut Option<Error>,
    ) {
        let Some(store) = &self.knowledge else {
            return;
        };
        knowledge.learn(&observation);
        if let Err(source) = store
            .update(
                &self.knowledge_key(),
                Box::new(move |knowledge: &mut Knowledge| knowledge.learn(&observation)),
            )
            .await
        {
            tracing::warn!(error = %source, "what the session learned was not saved");
            unsaved.get_or_insert_with(|| Error::KnowledgeUnsaved {
                sut: self.sut.name.clone(),
                key: self.knowledge_key(),
                source,
            });
        }
    }

    /// Explores until the target is reached, a person stops it, or `max_steps` steps ran;
    /// the session is saved after every step. Knowledge that cannot be read stops it before
    /// the first call; knowledge that cannot be saved ends it with [`Error::KnowledgeUnsaved`] once
    /// the session is saved.
    pub async fn run(&self, session: &mut Session) -> Result<(), Error> {
        let started = Instant::now();
        let began_in_progress = session.session.status == SessionStatus::InProgress;
        let mut silent = 0u32;
        let mut steps = 0u32;
        // Failures and refusals per operation: a step that keeps failing (or being declined)
        // ends the session instead of being suggested forever.
        let mut strikes: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
        // Questions for missing inputs per operation, bounded the same way.
        let mut asked_for: std::collections::HashMap<String, u32> =
            std::collections::HashMap::new();
        // Read once; what this run learns is applied to it as well as to the store.
        let mut knowledge = self.load_knowledge().await?;
        let mut unsaved = None;
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
            // Required inputs nothing gives: made up (name-like ones, in auto mode) or asked
            // for before the call, never sent without.
            if !suggestion.missing.is_empty() && !suggestion.operation.is_empty() {
                let asked_before = session.interventions;
                match self.fill_missing(session, &suggestion).await {
                    // Answers that never fill the inputs end the session, as failures do.
                    Asked::Go(_) if session.interventions > asked_before => {
                        let count = asked_for.entry(suggestion.operation.clone()).or_default();
                        *count += 1;
                        if *count >= MAX_STRIKES {
                            session.rejected_steps.push(RejectedStep {
                                operation_id: suggestion.operation.clone(),
                                error: format!(
                                    "its inputs were asked for {MAX_STRIKES} times and are still missing: {}",
                                    suggestion.missing.join(", ")
                                ),
                                user_action: "the session stopped".to_owned(),
                            });
                            session.session.status = SessionStatus::Failed;
                            break;
                        }
                    }
                    Asked::Go(_) => {}
                    Asked::Skip => {
                        if self.strike(session, &mut strikes, &suggestion.operation, "declined") {
                            break;
                        }
                    }
                    Asked::Stop => break,
                }
                session.save(&self.session_dir, Utc::now())?;
                continue;
            }
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
                        // A wait declined: the resource is taken as settled, so the next
                        // suggestion moves on instead of offering the same wait again.
                        if let Some(wait) = &suggestion.wait_for {
                            session.current_state.settle(&wait.resource);
                        }
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
                let saved = session.current_state.apply(
                    &self.spec,
                    &operation,
                    &suggestion.inputs,
                    &ran.output,
                    ran.location.as_deref(),
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
                    &mut unsaved,
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
                    &mut unsaved,
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
                .map(|step| self.pattern_step(step))
                .collect();
            self.learn(&mut knowledge, observation, &mut unsaved).await;
        }
        session.save(&self.session_dir, Utc::now())?;
        unsaved.map_or(Ok(()), Err)
    }

    /// A confirmed step as a step of the pattern the session teaches: its operation, how its
    /// request was made (method, path, the path parameters and body fields it sent), the ids it
    /// saved (`post_1` from `body.id`), and what it polled for. A plan recalled from the
    /// pattern links a later step's id to the step that saved it.
    fn pattern_step(&self, step: &ConfirmedStep) -> PatternStep {
        let mut pattern_step = PatternStep::default();
        pattern_step.operation_id = step.operation_id.clone();
        let Some(operation) = self.spec.operation(&step.operation_id) else {
            return pattern_step;
        };
        let sent = step.request.get("inputs").and_then(Value::as_object);
        let inputs_at = |location: ParameterLocation| -> Vec<String> {
            operation
                .parameters
                .iter()
                .filter(|parameter| parameter.location == location)
                .filter(|parameter| sent.is_some_and(|sent| sent.contains_key(&parameter.input)))
                .map(|parameter| parameter.input.clone())
                .collect()
        };
        let mut template = RequestTemplate::default();
        template.method = Some(operation.method.clone());
        template.path = Some(operation.path.clone());
        template.path_params = inputs_at(ParameterLocation::Path);
        template.body_keys = inputs_at(ParameterLocation::Body);
        pattern_step.request_template = Some(template);
        let resource = operation_resource(operation);
        for name in &step.saved_variables {
            let field = id_path(&step.response["body"], &resource).unwrap_or_else(|| "id".into());
            let mut rule = SaveRule::default();
            rule.key = name.clone();
            rule.eval = format!("body.{field}");
            pattern_step.save.push(rule);
        }
        if let Some(until) = &step.until {
            let mut expect = Expect::default();
            expect.cel = Some(until.clone());
            pattern_step.expect = Some(expect);
            pattern_step.max_retries = Some(self.sut.execution.auto_mode.polling.max_retries);
            pattern_step.delay_after = Some(self.sut.execution.auto_mode.polling.delay_seconds);
        }
        pattern_step
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

    /// Values for the required inputs of `suggestion` that nothing gives. In auto mode a
    /// name-like field (`title`, `displayName`) gets a made-up unique value, which the session
    /// keeps in `generated`; anything else is asked for (as JSON, or for one input, as it is).
    async fn fill_missing(&self, session: &mut Session, suggestion: &Suggestion) -> Asked {
        let mut missing: Vec<&String> = suggestion.missing.iter().collect();
        // Only a field of a new resource's body is made up: a name in a path, or a name a
        // resource refers to (`region.name`), points at something that must exist already.
        let operation = self.spec.operation(&suggestion.operation);
        let made_up_freely = |name: &str| {
            names::is_name_like(name)
                && operation.is_some_and(|operation| {
                    intent::operation_verb(operation) == intent::Verb::Create
                        && operation.parameters.iter().any(|parameter| {
                            parameter.name == name && parameter.location == ParameterLocation::Body
                        })
                })
        };
        if self.thresholds.auto {
            let short = session
                .session
                .id
                .trim_start_matches("ses_")
                .chars()
                .take(6)
                .collect::<String>();
            for name in missing.iter().filter(|name| made_up_freely(name)) {
                let value = Value::from(format!("wayline-{short}-{}", session.generated.len() + 1));
                tracing::info!(field = %name, %value, "a value was made up for a required field");
                session
                    .current_state
                    .variables
                    .insert((*name).clone(), value.clone());
                session.generated.insert((*name).clone(), value);
            }
            missing.retain(|name| !made_up_freely(name));
            if missing.is_empty() {
                return Asked::Go(suggestion.operation.clone());
            }
        }
        let listed = missing
            .iter()
            .map(|name| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", ");
        // The other side: what the latest answer held, for a person to link by hand where no
        // rule could (`createPost` answered `key`, `title`).
        let known: Vec<String> = session
            .confirmed_steps
            .iter()
            .rev()
            .find_map(|step| {
                let fields = step.response["body"].as_object()?;
                Some(format!(
                    "`{}` answered {}",
                    step.operation_id,
                    fields
                        .keys()
                        .map(|field| format!("`{field}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
            .into_iter()
            .collect();
        let offered = if known.is_empty() {
            String::new()
        } else {
            format!(" ({})", known.join("; "))
        };
        let question = Question::new(
            QuestionKind::Clarify,
            format!(
                "`{}` needs {listed}, which nothing known gives{offered}; give the values as \
                 JSON ({{\"{}\": ...}}), or say no to skip it",
                suggestion.operation, missing[0]
            ),
        )
        .operation(suggestion.operation.clone())
        .context(json!({"missing": missing, "known": known, "why": suggestion.reason}));
        session.interventions += 1;
        match self.interventor.ask(&question).await {
            Answer::Text(text) => {
                match serde_json::from_str::<Value>(&text) {
                    Ok(Value::Object(values)) => {
                        for (name, value) in values {
                            session.current_state.answer(name, value);
                        }
                    }
                    // One input, given as it is (`My first post`) or as a JSON scalar.
                    parsed if missing.len() == 1 => {
                        let value = parsed.unwrap_or_else(|_| Value::from(text.clone()));
                        session.current_state.answer(missing[0].clone(), value);
                    }
                    _ => merge_variables(&mut session.current_state, &text),
                }
                Asked::Go(suggestion.operation.clone())
            }
            // A number typed at the terminal reads as a choice: for one input, it is the value.
            Answer::Choose(number) if missing.len() == 1 => {
                session
                    .current_state
                    .answer(missing[0].clone(), Value::from(number));
                Asked::Go(suggestion.operation.clone())
            }
            // Nothing given: asked again (three times at most).
            Answer::Yes => Asked::Go(suggestion.operation.clone()),
            Answer::No => {
                session.rejected_steps.push(RejectedStep {
                    operation_id: suggestion.operation.clone(),
                    error: format!("nothing gives {listed}"),
                    user_action: "declined".to_owned(),
                });
                if let Some(goal) = &suggestion.goal {
                    session.goals_done.push(goal.clone());
                }
                Asked::Skip
            }
            _ => self.stop(session, "values were needed and none were given"),
        }
    }

    fn stop(&self, session: &mut Session, why: &str) -> Asked {
        tracing::info!(why, "the session stops");
        session.session.status = SessionStatus::Aborted;
        Asked::Stop
    }

    /// What to do after a failed step: an error the explorer cannot recover from on its own
    /// (400, 401 or 403, 404, 409, anything else) is put to a person, each kind with its own
    /// question.
    async fn recover(
        &self,
        session: &mut Session,
        operation: &Operation,
        error: &str,
        status: Option<u16>,
    ) -> Recovery {
        let (kind, message) = match status {
            // Bad Request, and Unprocessable Entity (FastAPI's and many others' answer to a
            // missing field).
            Some(code @ (400 | 422)) => {
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
                    format!(
                        "{code} {} from {}: {error}; {fix}",
                        if code == 400 {
                            "Bad Request"
                        } else {
                            "Unprocessable Entity"
                        },
                        operation.id
                    ),
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
        self.location.take();
        let run = self.engine.run(&workflow, RunOptions::new()).await;
        let seconds = clock.elapsed().as_secs_f64();
        let location = self.location.take();
        match run {
            Err(error) => Ran {
                location,
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
                    location,
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

    /// Runs a command-line tool's step (see [`crate::command`]) through the engine's `cli`
    /// tools.
    async fn execute_command(
        &self,
        operation: &Operation,
        inputs: &IndexMap<String, Value>,
    ) -> Ran {
        let failed = |error: String, request: Value| Ran {
            location: None,
            success: false,
            status: None,
            output: Value::Null,
            error: Some(error),
            request,
            attempts: 0,
            seconds: 0.0,
        };
        let CommandStep { tool, request } = match command_step(operation, inputs) {
            Ok(step) => step,
            Err(refused) => return failed(refused.error, refused.request),
        };
        let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools([tool]))).build();
        let mut workflow = Workflow::new("explore", &operation.id);
        workflow.steps.push(Step::new("call", &operation.id));
        let clock = Instant::now();
        match engine.run(&workflow, RunOptions::new()).await {
            Err(error) => failed(
                error.to_string(),
                json!({"name": operation_resource(operation), "args": []}),
            ),
            Ok(run) => {
                let result = &run.step_results[0];
                Ran {
                    location: None,
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

    /// The confirmed steps of `session` as the reusable scenario:
    /// [`Scenario::from_session`] over this explorer's spec and SUT.
    pub fn output(&self, session: &Session) -> Scenario {
        Scenario::from_session(session, &self.spec, &self.sut)
    }
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
                state.answer(name, value);
            }
        }
        _ => {
            state
                .variables
                .insert("clarification".to_owned(), Value::from(text));
        }
    }
}
