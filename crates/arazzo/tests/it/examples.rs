//! The specification's examples run against loopback mocks built from their OpenAPI
//! descriptions, answering as a script says: the requests they send, in order, the data that
//! flows between steps and workflows, and the workflows' outputs. Mistakes the published
//! documents make (asserted by the validation tests) are corrected in memory first.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::{Map, Value, json};
use wayline_arazzo::model::{ArazzoDocument, Reusable};
use wayline_arazzo::run::{Runner, WorkflowRun};
use wayline_arazzo::sources::Sources;
use wayline_arazzo::load_file;
use wayline_core::{MemoryCatalog, RunStatus};
use wayline_executor::testing::{MockServer, RecordedRequest, Reply};
use wayline_executor::{Engine, ReqwestTransport, RunOptions};
use wayline_testkit::fixture;

/// An example document and the directory it is in.
fn example(name: &str) -> Option<(ArazzoDocument, PathBuf)> {
    let dir = fixture("arazzo/examples/1.0.0")?;
    Some((load_file(&dir.join(name)).unwrap(), dir))
}

/// Renames parameter `from` to `to` in step `step` of every workflow.
fn rename_parameter(document: &mut ArazzoDocument, step: &str, from: &str, to: &str) {
    for workflow in &mut document.workflows {
        for candidate in workflow.steps.iter_mut().filter(|s| s.step_id == step) {
            for parameter in &mut candidate.parameters {
                if let Reusable::Inline(parameter) = parameter
                    && parameter.name == from
                {
                    parameter.name = to.to_owned();
                }
            }
        }
    }
}

fn engine() -> Engine {
    Engine::builder(Arc::new(MemoryCatalog::new()))
        .transport(Arc::new(ReqwestTransport::new().unwrap()))
        .build()
}

/// Runs `workflow` of `document` with every source served by `server`.
async fn run(
    document: ArazzoDocument,
    dir: &Path,
    server: &MockServer,
    workflow: &str,
    inputs: Value,
) -> WorkflowRun {
    let sources = Sources::load(&document, dir, &IndexMap::new());
    let servers: IndexMap<String, String> = document
        .source_descriptions
        .iter()
        .map(|source| (source.name.clone(), server.url("")))
        .collect();
    let runner = Runner::new(document, &sources, &servers);
    let Value::Object(inputs) = inputs else {
        panic!("inputs are an object")
    };
    runner
        .run(&engine(), workflow, inputs, RunOptions::new())
        .await
        .unwrap()
}

fn calls(requests: &[RecordedRequest]) -> Vec<String> {
    requests
        .iter()
        .map(|request| format!("{} {}", request.method, request.target))
        .collect()
}

fn entries(ran: &WorkflowRun) -> Vec<String> {
    ran.run
        .step_results
        .iter()
        .map(|result| format!("{} {}", result.step_id, result.status.as_str()))
        .collect()
}

/// The pet store of the pet-coupons example: pet 42 tagged `puppy`, coupon `SAVE10`, orders
/// numbered from 7.
async fn pet_store() -> MockServer {
    MockServer::start(|request| match (request.method.as_str(), request.path()) {
        ("GET", "/pet/findByTags") | ("GET", "/pet/findByStatus") => {
            Reply::json(200, json!([{"id": 42, "name": "rex"}, {"id": 43, "name": "ada"}]))
        }
        ("GET", "/pet/42/coupons") => Reply::json(200, json!({"couponCode": "SAVE10"})),
        ("POST", "/store/order") => {
            let order = request.json().unwrap_or_default();
            Reply::json(200, json!({"id": 7, "petId": order["petId"], "status": "placed"}))
        }
        _ => Reply::status(404),
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn pet_coupons_finds_a_pet_its_coupon_and_orders_it_through_a_workflow_it_calls() {
    let Some((mut document, dir)) = example("pet-coupons.arazzo.yaml") else {
        return;
    };
    // The published document names two parameters as its description does not.
    rename_parameter(&mut document, "find-pet", "pet_tags", "tags");
    rename_parameter(&mut document, "find-coupons", "pet_id", "petId");
    let server = pet_store().await;
    let ran = run(
        document,
        &dir,
        &server,
        "apply-coupon",
        json!({"my_pet_tags": ["puppy", "dalmatian"]}),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    assert_eq!(
        calls(&server.requests()),
        [
            "GET /pet/findByTags?tags=puppy&tags=dalmatian",
            "GET /pet/42/coupons",
            "POST /store/order"
        ]
    );
    assert_eq!(
        server.requests()[2].json().unwrap(),
        json!({"petId": 42, "quantity": null, "couponCode": "SAVE10", "status": "placed", "complete": false})
    );
    assert_eq!(
        entries(&ran),
        ["find-pet success", "find-coupons success", "place-order success"]
    );
    assert_eq!(Value::Object(ran.outputs.clone()), json!({"apply_coupon_pet_order_id": 7}));
    // The workflow the last step called ran as a run of its own, with the values it was given.
    assert_eq!(ran.calls.len(), 1);
    assert_eq!(ran.calls[0].workflow_id, "place-order");
    assert_eq!(
        Value::Object(ran.calls[0].outputs.clone()),
        json!({"workflow_order_id": 7})
    );
    assert_eq!(ran.calls[0].run.user_inputs["pet_id"], 42);
    let _ = Map::<String, Value>::new();
}
