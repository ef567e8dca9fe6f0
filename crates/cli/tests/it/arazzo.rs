//! `wayline validate` on Arazzo documents: the specification's examples and schema tests.

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
