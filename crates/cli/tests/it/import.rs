//! `wayline import openapi`: the fixture spec's tools are written, pass `tools check`, and
//! build the requests the spec describes; an import never overwrites a changed file silently.

use serde_json::Value;
use wayline_testkit::fixture;

use super::{path, wayline};

#[test]
fn the_fixture_spec_imports_into_tools_that_check_and_build_the_right_requests() {
    let Some(spec) = fixture("tidbcloud/tidbx-openapi.json") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tools");
    let imported = wayline(&[
        "import",
        "openapi",
        path(&spec),
        "--out",
        path(&out),
        "--format",
        "json",
    ]);
    assert_eq!(
        imported.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    let summary: Value = serde_json::from_slice(&imported.stdout).unwrap();
    assert_eq!(summary["tools"].as_array().unwrap().len(), 20);
    assert_eq!(summary["spec"]["format"], "swagger2");
    assert_eq!(summary["states"]["Cluster"][1], "ACTIVE");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 20);
    let check = wayline(&["tools", "check", path(&out)]);
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );

    // The dotted path parameter and the optional body fields, as sent.
    let patch = wayline(&[
        "tools",
        "try",
        "ClusterService_PartialUpdateCluster",
        "--tools",
        path(&out),
        "--input",
        "cluster.clusterId=123",
        "--input",
        "updateMask=displayName",
        "--input",
        r#"cluster:={"displayName": "renamed"}"#,
        "--dry-run",
    ]);
    let printed = String::from_utf8_lossy(&patch.stdout);
    assert!(
        printed.contains("PATCH https://serverless.tidbapi.com/v1beta1/clusters/123"),
        "{printed}"
    );
    assert!(
        printed
            .contains(r#"body: {"cluster":{"displayName":"renamed"},"updateMask":"displayName"}"#),
        "{printed}"
    );
    let reset = wayline(&[
        "tools",
        "try",
        "BranchService_ResetBranch",
        "--tools",
        path(&out),
        "--input",
        "clusterId=c1",
        "--input",
        "branchId=b2",
        "--dry-run",
    ]);
    assert!(
        String::from_utf8_lossy(&reset.stdout).contains("/clusters/c1/branches/b2:reset"),
        "{}",
        String::from_utf8_lossy(&reset.stdout)
    );

    // Importing again changes nothing; a changed file is not overwritten without --force.
    let again = wayline(&["import", "openapi", path(&spec), "--out", path(&out)]);
    assert_eq!(again.status.code(), Some(0));
    let edited = out.join("ClusterService_GetCluster.yaml");
    std::fs::write(&edited, "# mine\n").unwrap();
    let refused = wayline(&[
        "import",
        "openapi",
        path(&spec),
        "--out",
        path(&out),
        "--base-url",
        "http://127.0.0.1:8080",
    ]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--force"));
    assert_eq!(std::fs::read_to_string(&edited).unwrap(), "# mine\n");
    let other = std::fs::read_to_string(out.join("ClusterService_ListRegions.yaml")).unwrap();
    assert!(
        other.contains("serverless.tidbapi.com"),
        "nothing was written"
    );
    let forced = wayline(&[
        "import",
        "openapi",
        path(&spec),
        "--out",
        path(&out),
        "--base-url",
        "http://127.0.0.1:8080",
        "--force",
    ]);
    assert_eq!(forced.status.code(), Some(0));
    assert!(
        std::fs::read_to_string(&edited)
            .unwrap()
            .contains("http://127.0.0.1:8080")
    );
}

#[test]
fn two_operations_that_would_share_a_file_stop_the_import() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        "openapi: 3.0.0\npaths:\n  /a: {get: {operationId: 'list things', responses: {'200': {description: ok}}}}\n  /b: {get: {operationId: list_things, responses: {'200': {description: ok}}}}\n",
    )
    .unwrap();
    let out = wayline(&[
        "import",
        "openapi",
        path(&spec),
        "--out",
        path(&dir.path().join("t")),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`list things` and `list_things`"),
        "{stderr}"
    );
    assert!(!dir.path().join("t").exists(), "nothing written");
}

#[test]
fn a_document_that_is_not_a_spec_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("bogus.yaml");
    std::fs::write(&bogus, "name: nothing\n").unwrap();
    let out = wayline(&[
        "import",
        "openapi",
        path(&bogus),
        "--out",
        path(&dir.path().join("t")),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("OpenAPI document"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dir.path().join("t").exists(), "nothing written");
}

/// An operationId too long for a file name is refused before any file is written (it used to
/// fail with "file name too long" after the operations before it were written).
#[test]
fn a_name_too_long_for_a_file_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.json");
    let long = "x".repeat(5_000);
    let text = serde_json::json!({
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/a": {"get": {"operationId": "aaa", "responses": {"200": {"description": "ok"}}}},
            "/b": {"get": {"operationId": long, "responses": {"200": {"description": "ok"}}}}
        }
    });
    std::fs::write(&spec, text.to_string()).unwrap();
    let out = wayline(&[
        "import",
        "openapi",
        path(&spec),
        "--out",
        path(&dir.path().join("t")),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("shorter operationId"), "{stderr}");
    assert!(!dir.path().join("t").exists(), "nothing written");
}
