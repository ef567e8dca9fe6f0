//! `wayline validate` on Arazzo documents: the specification's examples and schema tests.

use std::path::Path;

use wayline_testkit::fixture;

use crate::{code, path, stdout_json, wayline};

#[test]
fn validate_reads_arazzo_documents_without_tools() {
    let Some(dir) = fixture("arazzo") else {
        return;
    };
    let valid = wayline(&[
        "validate",
        path(&dir.join("examples/1.0.0/LoginAndRetrievePets.arazzo.yaml")),
    ]);
    assert_eq!(code(&valid), 0);
    let text = String::from_utf8_lossy(&valid.stdout);
    assert!(
        text.contains("valid Arazzo 1.0.0 document (1 workflow: loginUserRetrievePet; 2 steps)"),
        "{text}"
    );

    // The published BNPL example reads outputs its steps do not declare.
    let bnpl = dir.join("examples/1.0.0/bnpl-arazzo.yaml");
    let invalid = wayline(&["validate", path(&bnpl)]);
    assert_eq!(code(&invalid), 1);
    let text = String::from_utf8_lossy(&invalid.stdout);
    assert!(
        text.contains("invalid Arazzo document, 4 problems"),
        "{text}"
    );
    assert!(
        text.contains(
            "bnpl-arazzo.yaml:260:5: `$steps.retrieveFinalizedPaymentPlan.finalizedPaymentPlan`"
        ),
        "{text}"
    );
    let report = stdout_json(&wayline(&["validate", path(&bnpl), "--format", "json"]));
    assert_eq!(report["valid"], false);
    assert_eq!(report["format"], "arazzo");
    assert_eq!(report["errors"].as_array().unwrap().len(), 4);
    assert_eq!(report["errors"][0]["rule"], "unknown_reference");
    assert_eq!(report["errors"][0]["line"], 231);

    // With a local copy of its remote description, the operations it calls are checked too.
    let copy = format!(
        "BnplApi={}",
        path(&dir.join("examples/1.0.0/bnpl-openapi.yaml"))
    );
    let report = stdout_json(&wayline(&[
        "validate",
        path(&bnpl),
        "--source",
        &copy,
        "--format",
        "json",
    ]));
    let warnings = report["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{report:#}");
    assert!(
        warnings[0]["message"]
            .as_str()
            .unwrap()
            .contains("takes no query parameter `redirectAuthToken`"),
        "{report:#}"
    );
    let bad_flag = wayline(&["validate", path(&bnpl), "--source", "BnplApi"]);
    assert_eq!(code(&bad_flag), 2);

    // A document the schema rejects: its rule and place.
    let rejected = wayline(&[
        "validate",
        path(&dir.join("tests/schema/fail/invalid-async-parameter-without-in.arazzo.yaml")),
        "--format",
        "json",
    ]);
    assert_eq!(code(&rejected), 1);
    let report = stdout_json(&rejected);
    assert_eq!(report["errors"][0]["rule"], "parameter_location");
}

#[test]
fn a_wayline_workflow_still_needs_its_tools() {
    let workflow = wayline_testkit::testdata("workflows/geo.json");
    let output = wayline(&["validate", path(&workflow)]);
    assert_eq!(code(&output), 2);
    assert!(String::from_utf8_lossy(&output.stderr).contains("add `--tools DIR`"));
}

#[test]
fn graph_draws_an_arazzo_workflows_plan() {
    let Some(dir) = fixture("arazzo/examples/1.0.0") else {
        return;
    };
    let coupons = dir.join("pet-coupons.arazzo.yaml");
    let text = wayline(&["graph", path(&coupons), "--workflow", "apply-coupon"]);
    assert_eq!(code(&text), 0);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.starts_with("apply-coupon — 3 steps, 3 levels\n"),
        "{text}"
    );
    assert!(
        text.contains("  find-coupons  getPetCoupons after find-pet"),
        "{text}"
    );
    let plans = stdout_json(&wayline(&["graph", path(&coupons), "--format", "json"]));
    assert_eq!(plans.as_array().unwrap().len(), 3);
    let oauth = dir.join("oauth.arazzo.yaml");
    let several = wayline(&["graph", path(&oauth), "--format", "mermaid"]);
    assert_eq!(code(&several), 2, "a diagram draws one workflow");
    let one = wayline(&[
        "graph",
        path(&oauth),
        "--workflow",
        "refresh-token-flow",
        "--format",
        "mermaid",
    ]);
    assert!(String::from_utf8_lossy(&one.stdout).starts_with("flowchart TD\n"));
    let unknown = wayline(&["graph", path(&oauth), "--workflow", "nope"]);
    assert_eq!(code(&unknown), 2);
}

#[test]
fn export_then_import_gives_the_workflow_back() {
    let Some(dir) = fixture("structure-ai-bot") else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let workflow = dir.join("workflows/github_intel.json");
    let tools = dir.join("tools");
    let exported = stdout_json(&wayline(&[
        "export",
        "arazzo",
        path(&workflow),
        "--tools",
        path(&tools),
        "--out",
        path(out.path()),
        "--format",
        "json",
    ]));
    let document = exported["arazzo"].as_str().unwrap().to_owned();
    assert!(document.ends_with("github_intel.arazzo.yaml"), "{exported}");
    // It validates, its operations found in the descriptions written beside it.
    let valid = wayline(&["validate", &document]);
    assert_eq!(
        code(&valid),
        0,
        "{}",
        String::from_utf8_lossy(&valid.stdout)
    );
    let back = wayline(&[
        "import",
        "arazzo",
        &document,
        "--tools",
        path(&tools),
        "--format",
        "json",
    ]);
    assert_eq!(code(&back), 0, "{}", String::from_utf8_lossy(&back.stderr));
    let back: wayline_core::Workflow = serde_json::from_slice(&back.stdout).unwrap();
    let original = wayline_registry::load_workflow_file(&workflow).unwrap();
    assert_eq!(back.steps, original.steps);
    // A second export over different files is refused without --force.
    std::fs::write(&document, "changed").unwrap();
    let refused = wayline(&[
        "export",
        "arazzo",
        path(&workflow),
        "--tools",
        path(&tools),
        "--out",
        path(out.path()),
    ]);
    assert_eq!(code(&refused), 2);
    assert_eq!(std::fs::read_to_string(&document).unwrap(), "changed");
}

/// The pet-coupons example's pet store on loopback.
pub(crate) fn pet_store(
    runtime: &tokio::runtime::Runtime,
) -> wayline_executor::testing::MockServer {
    use serde_json::json;
    use wayline_executor::testing::{MockServer, Reply};
    runtime
        .block_on(MockServer::start(|request| {
            match (request.method.as_str(), request.path()) {
                ("GET", "/pet/findByTags") => Reply::json(200, json!([{"id": 42}])),
                ("GET", "/pet/42/coupons") => Reply::json(200, json!({"couponCode": "SAVE10"})),
                ("POST", "/store/order") => Reply::json(200, json!({"id": 7})),
                _ => Reply::status(404),
            }
        }))
        .unwrap()
}

/// The pet-coupons example (in `dir`) with its plain mistakes mended (its parameters named as
/// its description names them), written into `scratch` beside its description.
pub(crate) fn corrected_pet_coupons(dir: &Path, scratch: &Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(dir.join("pet-coupons.arazzo.yaml"))
        .unwrap()
        .replace("name: pet_tags", "name: tags")
        .replace("name: pet_id", "name: petId");
    let corrected = scratch.join("pet-coupons.arazzo.yaml");
    std::fs::write(&corrected, text).unwrap();
    std::fs::copy(
        dir.join("pet-coupons.openapi.yaml"),
        scratch.join("pet-coupons.openapi.yaml"),
    )
    .unwrap();
    corrected
}

#[test]
fn run_runs_an_arazzo_workflow_once_its_document_is_valid() {
    let Some(dir) = fixture("arazzo/examples/1.0.0") else {
        return;
    };
    let runtime = crate::server_runtime();
    let server = pet_store(&runtime);
    let scratch = tempfile::tempdir().unwrap();
    // A document that does not validate is not run: nothing is sent.
    let published = dir.join("pet-coupons.arazzo.yaml");
    let server_flag = format!("pet-coupons={}", server.url(""));
    let refused = wayline(&[
        "run",
        path(&published),
        "--workflow",
        "apply-coupon",
        "--server",
        &server_flag,
        "--input",
        r#"my_pet_tags:=["puppy"]"#,
    ]);
    assert_eq!(code(&refused), 1);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("pet-coupons.arazzo.yaml:39:9: operation `getPetCoupons` of `pet-coupons` needs the path parameter `petId`"),
        "{stderr}"
    );
    assert!(stderr.contains("not run: 1 problem"), "{stderr}");
    assert_eq!(server.hits(), 0);

    // Corrected (a copy beside its description), it runs and prints its outputs.
    let corrected = corrected_pet_coupons(&dir, scratch.path());
    let args = [
        "run",
        path(&corrected),
        "--workflow",
        "apply-coupon",
        "--server",
        &server_flag,
        "--input",
        r#"my_pet_tags:=["puppy"]"#,
    ];
    let ran = wayline(&args);
    assert_eq!(code(&ran), 0, "{}", String::from_utf8_lossy(&ran.stderr));
    let text = String::from_utf8_lossy(&ran.stdout);
    assert!(text.contains("workflow apply-coupon"), "{text}");
    assert!(text.contains("  workflow place-order"), "{text}");
    assert!(text.contains("\"apply_coupon_pet_order_id\": 7"), "{text}");
    let report = stdout_json(&wayline(&[&args[..], &["--format", "json"]].concat()));
    assert_eq!(report["status"], "success");
    assert_eq!(report["outputs"]["apply_coupon_pet_order_id"], 7);
    assert_eq!(
        report["run"]["step_results"][1]["output_data"]["my_coupon_code"],
        "SAVE10"
    );
    assert_eq!(report["calls"][0]["workflow_id"], "place-order");

    // What the command cannot use is refused before anything is sent.
    let several = wayline(&["run", path(&corrected)]);
    assert_eq!(code(&several), 2);
    assert!(
        String::from_utf8_lossy(&several.stderr)
            .contains("the document has 3 workflows; choose one with --workflow (apply-coupon, buy-available-pet, place-order)")
    );
    let wrong_server = wayline(&[
        "run",
        path(&corrected),
        "--workflow",
        "apply-coupon",
        "--server",
        "pets=http://x",
    ]);
    assert_eq!(code(&wrong_server), 2);
    assert!(
        String::from_utf8_lossy(&wrong_server.stderr).contains("the document has no source `pets`"),
        "{}",
        String::from_utf8_lossy(&wrong_server.stderr)
    );
    let bad_inputs = wayline(&[
        "run",
        path(&corrected),
        "--workflow",
        "apply-coupon",
        "--server",
        &server_flag,
        "--input",
        "my_pet_tags=puppy",
    ]);
    assert_eq!(code(&bad_inputs), 2);
    assert!(
        String::from_utf8_lossy(&bad_inputs.stderr).contains("inputs of workflow `apply-coupon`"),
        "{}",
        String::from_utf8_lossy(&bad_inputs.stderr)
    );
}
