//! A transport of your own: the engine sends every request through it, so a service can route
//! wayline's calls through its own HTTP client, a gateway, or (as here) an API in the process.
//!
//! ```sh
//! cargo run --example custom_transport
//! ```
//!
//! What to put in your own `Cargo.toml` to use this file as it is:
//!
//! ```toml
//! [dependencies]
//! wayline = { version = "0.1", default-features = false, features = ["registry", "executor"] }
//! tokio = { version = "1", features = ["rt-multi-thread", "macros"] }
//! serde_json = "1"
//! ```

use std::sync::Arc;

use serde_json::json;
use wayline::core::document::Format;
use wayline::core::{
    HttpRequest, HttpResponse, MemoryCatalog, RunStatus, Transport, TransportError,
    TransportErrorKind, Workflow,
};
use wayline::executor::{Engine, RunOptions};
use wayline::registry::{parse_tool, process_env};

/// An inventory API that lives in the process. Its answers are wrapped in `{"data": …}`, as
/// many REST services wrap theirs; the tools' `response_extract` reaches inside.
#[derive(Debug)]
struct Inventory;

#[wayline::core::async_trait]
impl Transport for Inventory {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        let path = request
            .url
            .split_once("://")
            .and_then(|(_, rest)| rest.split_once('/'))
            .map(|(_, path)| path.split('?').next().unwrap_or_default().to_owned())
            .unwrap_or_default();
        let body = match path.split('/').collect::<Vec<_>>().as_slice() {
            ["products", sku] => {
                json!({"data": {"sku": sku, "name": "Trail shoe", "supplier": "acme"}})
            }
            ["suppliers", id] => json!({"data": {"id": id, "lead_time_days": 12}}),
            _ => {
                return Err(TransportError::new(
                    TransportErrorKind::InvalidRequest,
                    format!("the inventory has no {path}"),
                ));
            }
        };
        Ok(HttpResponse::new(200, body.to_string()))
    }
}

const TOOLS: [&str; 2] = [
    "id: product\nname: Product\nbase_url: http://inventory.internal\npath: /products/{sku}\n\
     response_extract: {fields: {name: data.name, supplier: data.supplier}}\n",
    "id: supplier\nname: Supplier\nbase_url: http://inventory.internal\npath: /suppliers/{id}\n\
     response_extract: {fields: {lead_time: data.lead_time_days}}\n",
];

const WORKFLOW: &str = "id: restock\nname: When can we restock?\n\
inputs: {sku: {description: the product, default: SKU-1}}\n\
steps:\n\
  - {id: product, tool_id: product, input_mapping: {sku: $input.sku}}\n\
  - {id: supplier, tool_id: supplier, input_mapping: {id: product.supplier}}\n";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut tools = Vec::new();
    for (index, text) in TOOLS.iter().enumerate() {
        tools.push(parse_tool(
            text,
            Format::Yaml,
            &format!("tool {index}"),
            &process_env,
        )?);
    }
    let workflow = Workflow::parse(WORKFLOW, Format::Yaml, "restock.yaml")?;
    let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools(tools)))
        .transport(Arc::new(Inventory))
        .build();
    let run = engine.run(&workflow, RunOptions::new()).await?;
    for step in &run.step_results {
        println!(
            "{:<9} {:<8} {}",
            step.step_id,
            step.status.as_str(),
            step.output_data
        );
    }
    if run.status != RunStatus::Success {
        return Err(format!("the run ended {}", run.status.as_str()).into());
    }
    println!(
        "{} from {} arrives in {} days",
        run.step_results[0].output_data["name"],
        run.step_results[0].output_data["supplier"],
        run.step_results[1].output_data["lead_time"]
    );
    Ok(())
}
