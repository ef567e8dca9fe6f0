//! The specification's examples run against loopback mocks built from their OpenAPI
//! descriptions, answering as a script says: the requests they send, in order, the data that
//! flows between steps and workflows, and the workflows' outputs. Mistakes the published
//! documents make (asserted by the validation tests) are corrected in memory first.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::{Value, json};
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

/// An example's text with the corrections made (each must be found), loaded.
fn corrected(name: &str, corrections: &[(&str, &str)]) -> Option<(ArazzoDocument, PathBuf)> {
    let dir = fixture("arazzo/examples/1.0.0")?;
    let mut text = std::fs::read_to_string(dir.join(name)).unwrap();
    for (from, to) in corrections {
        assert!(text.contains(from), "{name}: `{from}` is not in the document");
        text = text.replacen(from, to, 1);
    }
    Some((wayline_arazzo::load(&text, name).unwrap(), dir))
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

/// An engine that sees redirects as answers, as Arazzo steps read them.
fn engine() -> Engine {
    let transport = ReqwestTransport::builder()
        .follow_redirects(false)
        .build()
        .unwrap();
    Engine::builder(Arc::new(MemoryCatalog::new()))
        .transport(Arc::new(transport))
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
    run_at(document, dir, &IndexMap::new(), &server.url(""), workflow, inputs).await
}

/// Runs `workflow` of `document`, reading sources from `local` files where given, every source
/// served at `base`.
async fn run_at(
    document: ArazzoDocument,
    dir: &Path,
    local: &IndexMap<String, PathBuf>,
    base: &str,
    workflow: &str,
    inputs: Value,
) -> WorkflowRun {
    let sources = Sources::load(&document, dir, local);
    let servers: IndexMap<String, String> = document
        .source_descriptions
        .iter()
        .map(|source| (source.name.clone(), base.to_owned()))
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
}

/// A BNPL platform: products qualify, an eligibility check is needed, the customer is created
/// and must authorize the loan (a redirect), then the plan is final.
async fn bnpl_platform() -> MockServer {
    MockServer::start(|request| match (request.method.as_str(), request.path()) {
        ("POST", "/bnpl/v1/products") => Reply::json(
            200,
            json!({"eligibilityCheckRequired": true, "products": [{"productCode": "P1"}], "totalAmount": {"amount": 120, "currency": "EUR"}}),
        ),
        ("GET", "/bnpl/v1/terms-and-conditions") => Reply::json(200, json!({"version": "3"})),
        ("POST", "/bnpl/v1/customers") => {
            Reply::json(201, json!({"links": {"self": "https://bnpl.test/customers/c9"}}))
        }
        ("POST", "/bnpl/v1/loan-transactions") => Reply::json(
            202,
            json!({"loanTransactionId": "L5", "redirectAuthToken": "tok-1", "links": {"self": "https://bnpl.test/loan-transactions/L5"}}),
        ),
        ("GET", "/bnpl/v1/auth") => {
            Reply::status(302).header("Location", "https://bnpl.test/authorize?session=s1")
        }
        ("GET", "/bnpl/v1/loan-transactions/L5") => {
            Reply::json(200, json!({"loanTransactionId": "L5", "installments": 3}))
        }
        ("PATCH", "/bnpl/v1/loan-transactions/L5/status") => Reply::status(204),
        _ => Reply::status(404),
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn bnpl_follows_its_gotos_through_eligibility_creation_and_authorization() {
    let Some((document, dir)) = corrected(
        "bnpl-arazzo.yaml",
        &[
            // RFC 9535 filters select a child of the root: the published queries never see
            // the root's own `products`.
            ("condition: $[?count(@.products) > 0]", "condition: $.products[0]"),
            (
                "          - context: $response.body\n            type: jsonpath\n            condition: $[?count(@.products) == 0]",
                "          - condition: $response.body#/products/0 == null",
            ),
            // The step reads its own output, and a parameter its operation calls otherwise.
            (
                "- name: redirectAuthToken\n        in: query\n        value: $steps.authenticateCustomerAndAuthorizeLoan.outputs.redirectAuthToken",
                "- name: AuthorizationToken\n        in: query\n        value: $steps.initiateBnplTransaction.outputs.redirectAuthToken",
            ),
            // Two steps read `loanTransactionId`, which no step gives.
            (
                "      loanTransactionResourceUrl: $response.body#/links/self",
                "      loanTransactionResourceUrl: $response.body#/links/self\n      loanTransactionId: $response.body#/loanTransactionId",
            ),
            // The workflow output leaves out `outputs`.
            (
                "$steps.retrieveFinalizedPaymentPlan.finalizedPaymentPlan",
                "$steps.retrieveFinalizedPaymentPlan.outputs.finalizedPaymentPlan",
            ),
        ],
    ) else {
        return;
    };
    let server = bnpl_platform().await;
    let customer = json!({"firstName": "Ada", "lastName": "Byron", "dateOfBirth": "1990-12-10T00:00:00Z", "postalCode": "0150"});
    let products = json!([{"productCode": "P1", "purchaseAmount": {"currency": "EUR", "amount": 120}}]);
    let local = IndexMap::from([("BnplApi".to_owned(), dir.join("bnpl-openapi.yaml"))]);
    let ran = run_at(
        document,
        &dir,
        &local,
        &server.url("/bnpl/v1"),
        "ApplyForLoanAtCheckout",
        json!({"customer": customer, "products": products}),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    assert_eq!(
        calls(&server.requests()),
        [
            "POST /bnpl/v1/products",
            "GET /bnpl/v1/terms-and-conditions",
            "POST /bnpl/v1/customers",
            "POST /bnpl/v1/loan-transactions",
            "GET /bnpl/v1/auth?AuthorizationToken=tok-1",
            "GET /bnpl/v1/loan-transactions/L5",
            "PATCH /bnpl/v1/loan-transactions/L5/status"
        ]
    );
    let requests = server.requests();
    // A JSON payload written as text: each quoted `{$…}` gave its value, typed.
    assert_eq!(
        requests[0].json().unwrap(),
        json!({"customer": customer, "products": products})
    );
    assert_eq!(requests[2].json().unwrap()["firstName"], "Ada");
    assert_eq!(
        requests[3].json().unwrap()["newCustomer"],
        "https://bnpl.test/customers/c9"
    );
    // The redirect was the answer: its Location is the step's output.
    let authorize = ran
        .run
        .step_results
        .iter()
        .find(|result| result.step_id == "authenticateCustomerAndAuthorizeLoan")
        .unwrap();
    assert_eq!(
        authorize.output_data["redirectUrl"],
        "https://bnpl.test/authorize?session=s1"
    );
    assert_eq!(
        Value::Object(ran.outputs),
        json!({"finalizedPaymentPlan": {"loanTransactionId": "L5", "installments": 3}})
    );
}

#[tokio::test]
async fn bnpl_ends_when_no_product_qualifies() {
    let Some((document, dir)) = corrected(
        "bnpl-arazzo.yaml",
        &[
            ("condition: $[?count(@.products) > 0]", "condition: $.products[0]"),
            (
                "          - context: $response.body\n            type: jsonpath\n            condition: $[?count(@.products) == 0]",
                "          - condition: $response.body#/products/0 == null",
            ),
        ],
    ) else {
        return;
    };
    let server = MockServer::start(|_| Reply::json(200, json!({"products": []})))
        .await
        .unwrap();
    let local = IndexMap::from([("BnplApi".to_owned(), dir.join("bnpl-openapi.yaml"))]);
    let ran = run_at(
        document,
        &dir,
        &local,
        &server.url("/bnpl/v1"),
        "ApplyForLoanAtCheckout",
        json!({"customer": {"uri": "https://bnpl.test/customers/c1"}, "products": [{"productCode": "P1", "purchaseAmount": {"currency": "EUR", "amount": 1}}]}),
    )
    .await;
    // `qualifyingProductsNotFound` ends the workflow, successfully, after one call.
    assert_eq!(ran.run.status, RunStatus::Success);
    assert_eq!(calls(&server.requests()), ["POST /bnpl/v1/products"]);
    assert_eq!(
        ran.run.step_results[1].error.as_deref(),
        Some("not run: the run ended before it")
    );
}
