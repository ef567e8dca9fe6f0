//! The host as a program: one run of a two-step workflow on the host's own API. `measure.sh`
//! builds it to weigh each feature set (its size is the binary size in docs/embedding.md).

use std::sync::Arc;

use outside_host::GatedApi;
use wayline::core::{MemoryCatalog, Step, ToolDefinition, Workflow};
use wayline::executor::{Engine, RunOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let api = Arc::new(GatedApi::closed());
    api.open(2);
    let catalog = MemoryCatalog::from_tools([
        ToolDefinition::new("item", "http://api.test/items"),
        ToolDefinition::new("owner", "http://api.test/owners"),
    ]);
    let engine = Engine::builder(Arc::new(catalog)).transport(api).build();
    let mut workflow = Workflow::new("lookup", "Lookup");
    workflow.steps.push(Step::new("item", "item"));
    workflow
        .steps
        .push(Step::new("owner", "owner").map("path", "item.data.path"));
    let run = engine.start(&workflow, RunOptions::new())?.finish().await?;
    println!("{}: {}", run.id, run.status.as_str());
    Ok(())
}
