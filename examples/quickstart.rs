//! Quickstart: load tools and a workflow, validate it, and show its graph and run order.
//!
//! ```sh
//! cargo run --example quickstart                       # the embedded example
//! cargo run --example quickstart -- WORKFLOW TOOLS_DIR # your own files
//! ```
//!
//! With no arguments it uses the tools and workflow embedded below, so it runs anywhere with no
//! files and no network. (Running the workflow arrives with the executor.)

use std::process::ExitCode;

use wayline::core::document::Format;
use wayline::core::{MemoryCatalog, ToolCatalog, Workflow};
use wayline::graph::{ViewFormat, render, validate};
use wayline::registry::{ToolRegistry, load_workflow_file, parse_tool, process_env};

const TOOLS: &[&str] = &[
    "id: ip_locate\nname: IP Locate\ndescription: Locate the caller by IP address\n\
     base_url: http://127.0.0.1:8080\npath: /json\n",
    "id: forecast\nname: Forecast\ndescription: Current weather at a coordinate\n\
     base_url: http://127.0.0.1:8080\npath: /v1/forecast\n\
     request: {query_params: [latitude, longitude]}\n\
     response_extract: {fields: {temperature: current.temperature_2m}}\n",
    "id: country\nname: Country\ndescription: Country details by ISO code\n\
     base_url: http://127.0.0.1:8080\npath: /v3.1/alpha/{code}\n",
    "id: post_report\nname: Post report\ndescription: POST a JSON report to a webhook\n\
     base_url: http://127.0.0.1:8080\nmethod: POST\npath: /post\n",
];

const WORKFLOW: &str = r#"
id: quickstart
name: Where am I, and what's the weather?
steps:
  - id: locate
    tool_id: ip_locate
  - id: weather
    tool_id: forecast
    input_mapping: {latitude: locate.lat, longitude: locate.lon}
  - id: country
    tool_id: country
    input_mapping: {code: locate.countryCode}
  - id: report
    tool_id: post_report
    input_mapping:
      city: locate.city
      temperature: weather.temperature
      country: country.items.0.name.common
"#;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let loaded = match args.as_slice() {
        [] => embedded(),
        [workflow, tools] => from_files(workflow, tools),
        _ => Err("usage: quickstart [WORKFLOW TOOLS_DIR]".to_owned()),
    };
    let (workflow, catalog) = match loaded {
        Ok(loaded) => loaded,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };

    let report = validate(&workflow, catalog.as_ref());
    print!("{}", render(&workflow, &report, ViewFormat::Text));
    println!("\nrun order: {}", report.order().join(" → "));
    if report.is_valid() {
        println!("valid: ready for approval");
        ExitCode::SUCCESS
    } else {
        for problem in &report.errors {
            println!("problem: {problem}");
        }
        ExitCode::FAILURE
    }
}

type Loaded = (Workflow, Box<dyn ToolCatalog>);

fn embedded() -> Result<Loaded, String> {
    let mut catalog = MemoryCatalog::new();
    for (index, text) in TOOLS.iter().enumerate() {
        let origin = format!("<embedded tool {index}>");
        let tool =
            parse_tool(text, Format::Yaml, &origin, &process_env).map_err(|e| e.to_string())?;
        catalog.insert(tool);
    }
    let workflow = Workflow::parse(WORKFLOW, Format::Yaml, "<embedded workflow>")
        .map_err(|e| e.to_string())?;
    Ok((workflow, Box::new(catalog)))
}

fn from_files(workflow: &str, tools: &str) -> Result<Loaded, String> {
    let registry = ToolRegistry::load([tools])
        .into_result()
        .map_err(|errors| {
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n\n")
        })?;
    let workflow = load_workflow_file(workflow.as_ref()).map_err(|e| e.to_string())?;
    Ok((workflow, Box::new(registry)))
}
