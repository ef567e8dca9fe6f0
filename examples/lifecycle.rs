//! The workflow lifecycle of the Python structure-ai-bot project, in code: design once (save →
//! review the simple view → approve → a validation run → active), then run the saved workflow as
//! often as needed, each run recorded durably, with a history to look back on. An edit makes a new
//! draft version; the active one keeps running until the new one passes the same gate.
//!
//! ```sh
//! cargo run --example lifecycle              # a file store in a temporary directory
//! cargo run --example lifecycle -- --live    # the real public APIs
//! ```
//!
//! What to put in your own `Cargo.toml` to use this file as it is (with `examples/support/`
//! beside it as `src/support/`: the demo API and the way the examples show a run):
//!
//! ```toml
//! [dependencies]
//! wayline = { version = "0.1", default-features = false, features = ["graph", "registry", "executor", "http", "testing", "store"] }
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

use wayline::core::{RunStatus, Step, Workflow};
use wayline::executor::{Engine, RunOptions};
use wayline::graph::{ViewFormat, render, validate};
use wayline::store::{FileStore, Lifecycle, RunQuery, Stores};

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

const WORKFLOW: &str = r#"
id: city_weather
name: Weather in a city
inputs:
  city: {default: Lisbon}
steps:
  - {id: where, tool_id: geocode, input_mapping: {name: $input.city, count: "1"}}
  - id: weather
    tool_id: forecast
    input_mapping: {latitude: where.lat, longitude: where.lon, current: "temperature_2m,wind_speed_10m"}
"#;

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
    let dir = std::env::temp_dir().join(format!("wayline-lifecycle-{}", std::process::id()));
    let outcome = runtime.block_on(lifecycle(&dir));
    let _ = std::fs::remove_dir_all(&dir);
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn lifecycle(dir: &std::path::Path) -> Result<(), String> {
    let Some(options) = support::Options::from_args(&[]) else {
        return Err("bad arguments".into());
    };
    let example = support::Example {
        tools: TOOLS,
        workflow: WORKFLOW,
        inputs: &[],
        demo_prefix: &[("geocode", "/geocoding"), ("forecast", "/open-meteo")],
    };
    let setup = example.setup(options.live).await?;
    let store = Arc::new(FileStore::open(dir).map_err(|error| error.to_string())?);
    let stores = Stores::from_shared(store);
    let lifecycle = Lifecycle::new(stores.workflows.clone());
    let report = validate(&setup.workflow, &setup.registry);
    let engine = Engine::builder(Arc::new(setup.registry))
        .secrets(Arc::new(setup.secrets))
        .run_store(stores.runs.clone())
        .build();

    // Design phase: save, review, approve, validate, activate.
    println!("store: {}\n", dir.display());
    let saved = lifecycle
        .save(&setup.workflow)
        .await
        .map_err(|error| error.to_string())?;
    println!(
        "saved {} version {} ({})",
        saved.record.id(),
        saved.record.version,
        saved.record.state().as_str()
    );
    print!("{}", render(&setup.workflow, &report, ViewFormat::Text));
    let approved = lifecycle
        .approve("city_weather", None, "you")
        .await
        .map_err(|error| error.to_string())?;
    println!("approved by you: {}", approved.state().as_str());
    let validation = engine
        .run(
            &approved.workflow,
            RunOptions::new().workflow_version(approved.version),
        )
        .await
        .map_err(|error| error.to_string())?;
    println!(
        "validation run {}: {}",
        validation.id,
        validation.status.as_str()
    );
    lifecycle
        .record_validation(&validation)
        .await
        .map_err(|error| error.to_string())?;
    let active = lifecycle
        .activate("city_weather", approved.version)
        .await
        .map_err(|error| error.to_string())?;
    println!("now {}\n", active.state().as_str());

    // Execution phase: the active version, run by id (a trigger would do the same).
    for city in ["Oslo", "Tokyo"] {
        let record = lifecycle
            .active("city_weather")
            .await
            .map_err(|error| error.to_string())?;
        let run = engine
            .run(
                &record.workflow,
                RunOptions::new()
                    .input("city", city)
                    .workflow_version(record.version),
            )
            .await
            .map_err(|error| error.to_string())?;
        let weather = &run.step_results[1].output_data;
        println!(
            "{city}: {} °C, wind {} km/h ({})",
            weather["temperature"],
            weather["wind"],
            run.status.as_str()
        );
    }

    // An edit is a new draft; the active version is untouched.
    let mut edited: Workflow = setup.workflow.clone();
    edited
        .steps
        .push(Step::new("weather_again", "forecast").map("latitude", "where.lat"));
    let draft = lifecycle
        .save(&edited)
        .await
        .map_err(|error| error.to_string())?;
    let active = lifecycle
        .active("city_weather")
        .await
        .map_err(|error| error.to_string())?;
    println!(
        "\nedited: version {} is {}; version {} stays active",
        draft.record.version,
        draft.record.state().as_str(),
        active.version
    );

    let history = stores
        .runs
        .list_runs(&RunQuery::new().workflow("city_weather"))
        .await
        .map_err(|error| error.to_string())?;
    println!("\nhistory, newest first:");
    for run in &history.runs {
        println!(
            "  {}  v{}  {}",
            run.id,
            run.workflow_version.unwrap_or_default(),
            run.status.as_str()
        );
    }
    if history
        .runs
        .iter()
        .all(|run| run.status == RunStatus::Success)
    {
        Ok(())
    } else {
        Err("a run failed".into())
    }
}
