//! [`Explorer`]: built once per SUT and spec, it starts and resumes sessions and explores them
//! step by step. One module a concern: [`run`](Explorer::run)'s loop in `run.rs`; `asking.rs`
//! (questions about a suggestion and its missing inputs); `recovery.rs` (what to do after a
//! failure, and when to give up); `calls.rs` (one step through the engine); `learning.rs`
//! (what a session teaches the knowledge store).

mod asking;
mod calls;
mod learning;
mod recovery;
mod run;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::Utc;
use wayline_core::MemoryCatalog;
use wayline_core::intervene::Interventor;
use wayline_core::transport::Transport;
use wayline_executor::Engine;
use wayline_knowledge::KnowledgeStore;
use wayline_registry::openapi::{ApiSpec, Operation, ParameterLocation};

use crate::Error;
use crate::dataflow::{self, DataFlow};
use crate::exploration::{Exploration, ExplorationStatus};
use crate::intent::CLI_METHOD;
use crate::intervention::Thresholds;
use crate::location::LocationTransport;
use crate::output::Scenario;
use crate::sut::SutConfig;

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
    /// A collection-wide write may run unattended when the target asks for the whole
    /// collection (see [`crate::extent`]).
    allow_collection_writes: bool,
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
            allow_collection_writes: false,
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

    /// Lets a collection-wide write (`DELETE /records`) run without a question when the target
    /// asks for the whole collection ("delete all records"; `--allow-collection-writes`).
    /// Without this, auto mode never runs one, and a person is asked first, told in words what
    /// it does. A target about one item never gets one either way.
    pub fn allow_collection_writes(mut self) -> Self {
        self.allow_collection_writes = true;
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
    pub fn start(&self, target: &str) -> Result<Exploration, Error> {
        let mode = if self.thresholds.auto {
            "auto"
        } else {
            "manual"
        };
        let mut session = Exploration::new(&self.sut.name, target, mode, Utc::now());
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

    /// Exploration `id` from the session directory, to go on with.
    pub fn resume(&self, id: &str) -> Result<Exploration, Error> {
        let mut session = Exploration::load(&self.session_dir, id)?;
        // Secret variables are not saved; the SUT's presets give them again.
        for (name, value) in &self.sut.preset_variables {
            if !value.is_null() && !session.current_state.variables.contains_key(name) {
                session
                    .current_state
                    .variables
                    .insert(name.clone(), value.clone());
            }
        }
        if session.session.status == ExplorationStatus::Aborted {
            session.session.status = ExplorationStatus::InProgress;
            session.stop_reason = None;
        }
        Ok(session)
    }

    /// The confirmed steps of `session` as the reusable scenario:
    /// [`Scenario::from_session`] over this explorer's spec and SUT.
    pub fn output(&self, session: &Exploration) -> Scenario {
        Scenario::from_session(session, &self.spec, &self.sut)
    }
}

/// A confidence rounded to three places, as sessions keep it.
pub(super) fn round(value: f64) -> f64 {
    (value * 1_000.0).round() / 1_000.0
}
