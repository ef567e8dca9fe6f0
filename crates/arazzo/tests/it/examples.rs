//! The specification's examples run against loopback mocks built from their OpenAPI
//! descriptions, answering as a script says: the requests they send, in order, the data that
//! flows between steps and workflows, and the workflows' outputs. Mistakes the published
//! documents make (asserted by the validation tests) are corrected in memory first.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::{Value, json};
use wayline_arazzo::load_file;
use wayline_arazzo::model::{ArazzoDocument, Reusable};
use wayline_arazzo::run::{Runner, WorkflowRun};
use wayline_arazzo::sources::Sources;
use wayline_core::{MemoryCatalog, RunStatus};
use wayline_executor::testing::{MockServer, RecordedRequest, Reply};
use wayline_executor::{Engine, ReqwestTransport, RunOptions};
use wayline_testkit::fixture;

use crate::entries;

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
        assert!(
            text.contains(from),
            "{name}: `{from}` is not in the document"
        );
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
    run_at(
        document,
        dir,
        &IndexMap::new(),
        &server.url(""),
        workflow,
        inputs,
    )
    .await
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

/// The pet store of the pet-coupons example: pet 42 tagged `puppy`, coupon `SAVE10`, orders
/// numbered from 7.
async fn pet_store() -> MockServer {
    MockServer::start(|request| match (request.method.as_str(), request.path()) {
        ("GET", "/pet/findByTags") | ("GET", "/pet/findByStatus") => Reply::json(
            200,
            json!([{"id": 42, "name": "rex"}, {"id": 43, "name": "ada"}]),
        ),
        ("GET", "/pet/42/coupons") => Reply::json(200, json!({"couponCode": "SAVE10"})),
        ("POST", "/store/order") => {
            let order = request.json().unwrap_or_default();
            Reply::json(
                200,
                json!({"id": 7, "petId": order["petId"], "status": "placed"}),
            )
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
        [
            "find-pet success",
            "find-coupons success",
            "place-order success"
        ]
    );
    assert_eq!(
        Value::Object(ran.outputs.clone()),
        json!({"apply_coupon_pet_order_id": 7})
    );
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
            (
                "condition: $[?count(@.products) > 0]",
                "condition: $.products[0]",
            ),
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
    let products =
        json!([{"productCode": "P1", "purchaseAmount": {"currency": "EUR", "amount": 120}}]);
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
            (
                "condition: $[?count(@.products) > 0]",
                "condition: $.products[0]",
            ),
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

/// An OAuth server: `/authorize` answers a code, `/oauth/token` a token for each grant.
async fn oauth_server() -> MockServer {
    MockServer::start(|request| match (request.method.as_str(), request.path()) {
        ("GET", "/authorize") => {
            Reply::json(200, json!({"code": "c-1", "access_token": "ignored"}))
        }
        ("POST", "/oauth/token") => {
            let form: IndexMap<String, String> = url_form(&request.text());
            let token = match form.get("grant_type").map(String::as_str) {
                Some("authorization_code")
                    if form.get("code").map(String::as_str) == Some("c-1") =>
                {
                    json!({"access_token": "a-1", "refresh_token": "r-1", "expires_in": 60})
                }
                Some("refresh_token")
                    if form.get("refresh_token").map(String::as_str) == Some("r-1") =>
                {
                    json!({"access_token": "a-2", "refresh_token": "r-2", "expires_in": 120})
                }
                Some("client_credentials") => json!({"access_token": "cc-1"}),
                _ => return Reply::json(400, json!({"error": "invalid_grant"})),
            };
            Reply::json(200, token)
        }
        _ => Reply::status(404),
    })
    .await
    .unwrap()
}

/// A URL-encoded form's fields.
fn url_form(text: &str) -> IndexMap<String, String> {
    text.split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, value)| {
            (
                name.to_owned(),
                value.replace("%3A", ":").replace("%2F", "/"),
            )
        })
        .collect()
}

#[tokio::test]
async fn oauth_refreshes_a_token_got_by_the_authorization_code_workflow_it_calls() {
    let Some((document, dir)) = example("oauth.arazzo.yaml") else {
        return;
    };
    let server = oauth_server().await;
    let ran = run(
        document,
        &dir,
        &server,
        "refresh-token-flow",
        json!({"my_client_id": "app", "my_client_secret": "s3cret", "my_redirect_uri": "https://app.test/cb"}),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    assert_eq!(
        calls(&server.requests()),
        [
            "GET /authorize?client_id=app&redirect_uri=https%3A%2F%2Fapp.test%2Fcb&response_type=code&scope=read&state=12345",
            "POST /oauth/token",
            "POST /oauth/token"
        ]
    );
    let requests = server.requests();
    assert_eq!(
        requests[1].header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(
        url_form(&requests[2].text()),
        IndexMap::from([
            ("grant_type".to_owned(), "refresh_token".to_owned()),
            ("refresh_token".to_owned(), "r-1".to_owned())
        ])
    );
    assert_eq!(
        Value::Object(ran.outputs),
        json!({"access_token": "a-2", "refresh_token": "r-2", "expires_in": 120})
    );
    assert_eq!(ran.calls[0].workflow_id, "authorization-code-flow");
    // The secret went out in the form, but no record shows it: its name says it is one, so it
    // is masked in both runs' inputs and in the requests they keep.
    assert_eq!(ran.run.user_inputs["my_client_secret"], "***");
    assert_eq!(ran.calls[0].run.user_inputs["client_secret"], "***");
    let record = serde_json::to_string(&ran.calls[0].run).unwrap();
    assert!(!record.contains("s3cret"), "{record}");
    assert!(url_form(&requests[1].text())["client_secret"] == "s3cret");
}

#[tokio::test]
async fn oauth_client_credentials_and_a_token_refused() {
    let Some((document, dir)) = example("oauth.arazzo.yaml") else {
        return;
    };
    let server = oauth_server().await;
    let ran = run(
        document.clone(),
        &dir,
        &server,
        "client-credentials-flow",
        json!({"client_id": "app", "client_secret": "s3cret"}),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Success);
    assert_eq!(Value::Object(ran.outputs), json!({"access_token": "cc-1"}));

    // The authorization server refuses the code: the criteria fail, the workflow ends failed
    // (the default failure action), its outputs read nothing.
    let refusing = MockServer::start(|request| match request.path() {
        "/authorize" => Reply::json(200, json!({"code": "stale", "access_token": "x"})),
        _ => Reply::json(400, json!({"error": "invalid_grant"})),
    })
    .await
    .unwrap();
    let ran = run(
        document,
        &dir,
        &refusing,
        "authorization-code-flow",
        json!({"client_id": "app", "client_secret": "s", "redirect_uri": "https://app.test/cb"}),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Failed);
    assert_eq!(
        ran.run.step_results[1].error.as_deref(),
        Some("success criterion `$statusCode == 200` does not hold")
    );
    assert_eq!(ran.run.step_results[1].response_status, Some(400));
}

#[tokio::test]
async fn fapi_par_pushes_the_request_then_authorizes_then_gets_the_token() {
    let Some((document, dir)) = corrected(
        "FAPI-PAR.arazzo.yaml",
        // Operation ids are case-sensitive: the description's is `Par`.
        &[(
            "$sourceDescriptions.auth-api.PAR",
            "$sourceDescriptions.auth-api.Par",
        )],
    ) else {
        return;
    };
    let server = MockServer::start(|request| match (request.method.as_str(), request.path()) {
        ("POST", "/as/par.oauth2") => {
            Reply::json(200, json!({"request_uri": "urn:par:1", "expires_in": 60}))
        }
        ("GET", "/as/authorize.oauth2") => Reply::json(302, json!({"code": "az-1"}))
            .header("Location", "https://tpp.test/cb?code=az-1"),
        ("POST", "/as/token.oauth2") => Reply::json(
            200,
            json!({"access_token": "fapi-1", "token_type": "Bearer"}),
        ),
        _ => Reply::status(404),
    })
    .await
    .unwrap();
    let ran = run(
        document,
        &dir,
        &server,
        "OIDC-PAR-AuthzCode",
        json!({
            "client_id": "tpp",
            "client_assertion": {"iss": "tpp"},
            "redirect_uri": "https://tpp.test/cb",
            "code_verifier": "v-1",
            "PARrequestBody": {"response_type": "code", "scope": "openid", "state": "s-1"},
            "TokenRequestBody": {"grant_type": "authorization_code", "code": "-", "redirect_uri": "-", "code_verifier": "-"}
        }),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    let requests = server.requests();
    assert_eq!(
        requests
            .iter()
            .map(|request| request.path().to_owned())
            .collect::<Vec<_>>(),
        ["/as/par.oauth2", "/as/authorize.oauth2", "/as/token.oauth2"]
    );
    assert_eq!(
        requests[0].query("client_assertion").as_deref(),
        Some(r#"{"iss":"tpp"}"#)
    );
    // The description says the bodies are JSON: the input object, then the JSON text with
    // its expressions filled in.
    assert_eq!(requests[0].json().unwrap()["scope"], "openid");
    assert_eq!(
        requests[1].query("request_uri").as_deref(),
        Some("urn:par:1")
    );
    let token = requests[2].json().unwrap();
    assert_eq!(token["code"], "az-1");
    assert_eq!(token["code_verifier"], "v-1");
    assert_eq!(
        Value::Object(ran.outputs),
        json!({"access_token": {"access_token": "fapi-1", "token_type": "Bearer"}})
    );
}

/// The part of the Swagger petstore (3.0) the login example calls, written here: the example
/// names the published description by URL, which is not fetched.
const PETSTORE: &str = r#"
openapi: 3.0.2
info: {title: Swagger Petstore, version: 1.0.17}
servers: [{url: /api/v3}]
paths:
  /user/login:
    get:
      operationId: loginUser
      parameters:
        - {name: username, in: query, schema: {type: string}}
        - {name: password, in: query, schema: {type: string}}
      responses:
        '200': {description: ok, content: {application/json: {schema: {type: string}}}}
  /pet/findByStatus:
    get:
      operationId: findPetsByStatus
      parameters:
        - {name: status, in: query, schema: {type: string}}
      responses:
        '200': {description: ok}
"#;

#[tokio::test]
async fn login_and_retrieve_pets_carries_the_session_token_into_a_header() {
    let Some((document, dir)) = example("LoginAndRetrievePets.arazzo.yaml") else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let petstore = scratch.path().join("petstore.yaml");
    std::fs::write(&petstore, PETSTORE).unwrap();
    let server = MockServer::start(|request| match request.path() {
        "/api/v3/user/login" => Reply::json(200, json!("session-7"))
            .header("X-Expires-After", "2026-11-26T00:00:00Z")
            .header("X-Rate-Limit", "100"),
        "/api/v3/pet/findByStatus" if request.header("authorization") == Some("session-7") => {
            Reply::json(200, json!([{"id": 1, "status": "available"}]))
        }
        _ => Reply::status(401),
    })
    .await
    .unwrap();
    let local = IndexMap::from([("petStoreDescription".to_owned(), petstore)]);
    let ran = run_at(
        document,
        &dir,
        &local,
        &server.url("/api/v3"),
        "loginUserRetrievePet",
        json!({"username": "ada", "password": "pw"}),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    assert_eq!(
        calls(&server.requests()),
        [
            "GET /api/v3/user/login?username=ada&password=pw",
            "GET /api/v3/pet/findByStatus?status=available"
        ]
    );
    // The token, once sent as a credential, is masked wherever the record holds it, the login's
    // output included (issue 31, item 20); later steps read it as it came.
    assert_eq!(
        ran.run.step_results[0].output_data,
        json!({"tokenExpires": "2026-11-26T00:00:00Z", "rateLimit": "100", "sessionToken": "***"})
    );
    assert_eq!(
        Value::Object(ran.outputs),
        json!({"available": [{"id": 1, "status": "available"}]})
    );
}

const ANIMALS: &str = r#"
openapi: 3.1.0
info: {title: Public Zoo API, version: '1.0'}
paths:
  /animals:
    post:
      operationId: postAnimal
      parameters:
        - {name: authentication, in: cookie, schema: {type: string}}
        - {name: workflowLevelParamOne, in: cookie, schema: {type: string}}
        - {name: workflowLevelParamTwo, in: header, schema: {type: string}}
      responses: {'201': {description: created}}
  /animals/random:
    get:
      operationId: getRandomAnimal
      parameters:
        - {name: workflowLevelParamOne, in: cookie, schema: {type: string}}
        - {name: workflowLevelParamTwo, in: header, schema: {type: string}}
      responses: {'200': {description: ok}}
"#;

#[tokio::test]
async fn workflow_parameters_reach_every_step_and_a_step_adds_its_own() {
    let Some((document, dir)) = example("ExtendedParametersExample.arazzo.yaml") else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let animals = scratch.path().join("animals.yaml");
    std::fs::write(&animals, ANIMALS).unwrap();
    let server = MockServer::start(|request| match request.method.as_str() {
        "POST" => Reply::json(201, json!({"id": 3})),
        _ => Reply::json(200, json!({"name": "okapi"})),
    })
    .await
    .unwrap();
    let local = IndexMap::from([("animals".to_owned(), animals)]);
    let ran = run_at(
        document,
        &dir,
        &local,
        &server.url(""),
        "animal-workflow",
        json!({}),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    let requests = server.requests();
    assert_eq!(calls(&requests), ["POST /animals", "GET /animals/random"]);
    assert_eq!(
        requests[0].header("cookie"),
        Some("workflowLevelParamOne=someValue; authentication=SUPER_SECRET")
    );
    assert_eq!(
        requests[0].header("workflowlevelparamtwo"),
        Some("someValue")
    );
    assert_eq!(
        requests[1].header("cookie"),
        Some("workflowLevelParamOne=someValue")
    );
}

#[tokio::test]
async fn an_asyncapi_step_is_refused_before_anything_runs_saying_why() {
    let Some(dir) = fixture("arazzo/examples/1.1.0") else {
        return;
    };
    let text = format!(
        "arazzo: 1.1.0\ninfo: {{title: Pet orders, version: '1'}}\n\
         sourceDescriptions:\n  - {{name: orders, url: '{}', type: asyncapi}}\n\
         workflows:\n  - workflowId: order\n    steps:\n      - stepId: place\n        operationId: placeOrder\n        action: send\n",
        dir.join("pet-asyncapi.yaml").display()
    );
    let document = wayline_arazzo::load(&text, "order.arazzo.yaml").unwrap();
    let sources = Sources::load(&document, &dir, &IndexMap::new());
    let runner = Runner::new(document, &sources, &IndexMap::new());
    let error = runner
        .run(
            &engine(),
            "order",
            serde_json::Map::new(),
            RunOptions::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "workflow `order` cannot run:\n  step `place`: it is an AsyncAPI step; wayline runs OpenAPI operations and workflows only"
    );
}
