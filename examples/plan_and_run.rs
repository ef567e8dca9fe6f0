//! Planning, in code: a goal in plain words becomes a validated graph (the design phase, where
//! a model plans the workflow), which is shown, approved and run — with a decision step that a
//! model answers at run time.
//!
//! ```sh
//! cargo run --example plan_and_run              # the embedded demo API and a scripted model
//! cargo run --example plan_and_run -- --live    # the real public APIs (the model stays scripted)
//! ```
//!
//! The scripted model stands in for an LLM so that this runs offline and the same every time.
//! Its first plan names a tool that does not exist; the validation report goes back to it and
//! its second plan is valid. `wayline plan --model-url URL --model NAME` does the same with a
//! real OpenAI-compatible server.
//!
//! What to put in your own `Cargo.toml` to use this file as it is (with `examples/support/`
//! beside it as `src/support/`: the demo API and the way the examples show a run):
//!
//! ```toml
//! [dependencies]
//! wayline = { version = "0.1", default-features = false, features = ["graph", "registry", "executor", "http", "testing", "store", "planner"] }
//! tokio = { version = "1", features = ["rt-multi-thread"] }
//! serde_json = "1"
//! indexmap = "2"
//! ```

#[expect(
    dead_code,
    reason = "this example uses the setup, not the single-run helpers"
)]
mod support;

use std::process::ExitCode;
use std::sync::Arc;

use wayline::core::RunStatus;
use wayline::executor::{Engine, RunOptions, summary};
use wayline::planner::decide::ModelDecider;
use wayline::planner::plan::Planner;
use wayline::planner::testing::ScriptedModel;
use wayline::store::{Lifecycle, MemoryStore, Stores};

/// The same tools as the `lifecycle` example (each example reads on its own).
const TOOLS: &[&str] = &[
    "id: geocode\nname: Geocode\ndescription: City name to coordinates\n\
     base_url: https://geocoding-api.open-meteo.com\npath: /v1/search\n\
     request: {query_params: [name, count]}\n\
     response_extract:\n  fields: {name: results.0.name, lat: results.0.latitude, lon: results.0.longitude}\n",
    "id: forecast\nname: Forecast\ndescription: Current weather at a coordinate\n\
     base_url: https://api.open-meteo.com\npath: /v1/forecast\n\
     request: {query_params: [latitude, longitude, current]}\n\
     response_extract:\n  fields: {temperature: current.temperature_2m, wind: current.wind_speed_10m}\n",
];

/// The model's first plan: a tool that is not in the catalog.
const FIRST_ANSWER: &str = r#"{"id": "walk", "name": "Walk or not", "inputs": {"city": {}},
  "steps": [{"id": "where", "tool_id": "geocoder", "input_mapping": {"name": "$input.city"}}]}"#;

/// Its repaired plan: geocode, forecast, a decision, and a branch for each choice.
const SECOND_ANSWER: &str = r#"Here is the corrected workflow:
```json
{
  "id": "walk",
  "name": "Walk or not",
  "inputs": {"city": {"description": "where you are", "default": "Lisbon"}},
  "steps": [
    {"id": "where", "tool_id": "geocode", "input_mapping": {"name": "$input.city", "count": "1"}},
    {"id": "weather", "tool_id": "forecast",
     "input_mapping": {"latitude": "where.lat", "longitude": "where.lon", "current": "temperature_2m,wind_speed_10m"}},
    {"id": "verdict", "kind": "decision",
     "decision_prompt": "Is this good weather for a walk?",
     "choices": ["walk", "stay_in"]},
    {"id": "go", "kind": "transform", "when": "steps.verdict.choice == 'walk'",
     "outputs": {"advice": "'Go for a walk in ' + steps.where.name + ': ' + steps.verdict.reason"}},
    {"id": "stay", "kind": "transform", "when": "steps.verdict.choice == 'stay_in'",
     "outputs": {"advice": "'Stay in: ' + steps.verdict.reason"}}
  ],
  "edges": [
    {"from_step_id": "weather", "to_step_id": "verdict"},
    {"from_step_id": "verdict", "to_step_id": "go"},
    {"from_step_id": "verdict", "to_step_id": "stay"}
  ]
}
```"#;

/// What the model answers at the decision step, at run time.
const DECISION: &str = r#"{"choice": "walk", "reason": "it is mild and the wind is light"}"#;

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start the runtime: {error}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(plan_and_run()) {
        Ok(RunStatus::Success) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn plan_and_run() -> Result<RunStatus, String> {
    let Some(options) = support::Options::from_args(&[("city", "Lisbon")]) else {
        return Err("bad arguments".into());
    };
    // The tools and the demo API; the example's own workflow is not used, the planner writes it.
    let example = support::Example {
        tools: TOOLS,
        workflow: "id: unused\nname: Unused\nsteps: []\n",
        inputs: &[],
        demo_prefix: &[("geocode", "/geocoding"), ("forecast", "/open-meteo")],
    };
    let setup = example.setup(options.live).await?;
    let registry = Arc::new(setup.registry);
    let model = Arc::new(ScriptedModel::new([FIRST_ANSWER, SECOND_ANSWER, DECISION]));

    // Design: plan, repair, show.
    let goal = "Should I go for a walk in a city, given its weather right now?";
    println!("goal: {goal}\n");
    let plan = Planner::new(model.clone(), registry.clone())
        .plan(goal, &["city".to_owned()])
        .await
        .map_err(|error| error.to_string())?;
    println!(
        "{} in {} answers (the first named a tool that does not exist; the report went back)\n",
        plan.source, plan.answers
    );
    print!("{}", plan.view);

    // Approval, in the store's lifecycle: the plan is a draft until a person approves it.
    let stores = Stores::from_shared(Arc::new(MemoryStore::new()));
    let lifecycle = Lifecycle::new(stores.workflows.clone());
    let saved = lifecycle
        .save(&plan.workflow)
        .await
        .map_err(|error| error.to_string())?;
    let approved = lifecycle
        .approve(saved.record.id(), None, "you")
        .await
        .map_err(|error| error.to_string())?;
    println!(
        "\nsaved version {}, approved by you: {}\n",
        approved.version,
        approved.state().as_str()
    );

    // Execution: deterministic, except the one scoped question at the decision step.
    let engine = Engine::builder(registry)
        .secrets(Arc::new(setup.secrets))
        .decider(Arc::new(ModelDecider::new(model)))
        .build();
    let run = engine
        .run(
            &approved.workflow,
            RunOptions::new()
                .inputs(options.inputs)
                .workflow_version(approved.version),
        )
        .await
        .map_err(|error| error.to_string())?;
    println!("{}", summary(&run));
    for result in &run.step_results {
        if let Some(advice) = result.output_data.get("advice") {
            println!("{}: {advice}", result.step_id);
        }
    }
    Ok(run.status)
}
