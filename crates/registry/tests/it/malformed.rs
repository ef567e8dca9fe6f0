//! Malformed tool files: each gets an error with file, line and an actionable message.

use wayline_registry::{Error, ToolRegistry, load_tool_file};
use wayline_testkit::testdata;

fn document_error(file: &str) -> Box<wayline_core::document::DocumentError> {
    match load_tool_file(&testdata(&format!("malformed/{file}"))) {
        Err(Error::Document(error)) => error,
        other => panic!("{file}: expected a document error, got {other:?}"),
    }
}

#[test]
fn each_malformed_file_is_located_and_explained() {
    let cases = [
        ("syntax.yaml", 3, "quoted scalar"),
        ("unknown_field.yaml", 4, "unknown field `response_extarct`"),
        ("wrong_type.yaml", 4, "expected a list"),
        ("missing_id.yaml", 1, "missing required field `id`"),
        ("list.yaml", 1, "holds a list of 2 item(s)"),
    ];
    for (file, line, message) in cases {
        let error = document_error(file);
        assert_eq!(error.line, Some(line), "{file}: {error}");
        assert!(error.message.contains(message), "{file}: {error}");
        assert!(
            error
                .to_string()
                .starts_with(&format!("{}:{line}:", error.origin)),
            "{error}"
        );
    }
    assert_eq!(
        document_error("unknown_field.yaml").suggestion.as_deref(),
        Some("response_extract")
    );
}

#[test]
fn a_directory_reports_every_problem_and_keeps_what_loaded() {
    let report = ToolRegistry::load([testdata("malformed")]);
    // five broken files and one duplicate id; the first twin loaded.
    assert_eq!(report.errors.len(), 6, "{:#?}", report.errors);
    assert_eq!(report.registry.len(), 1);
    let duplicate = report
        .errors
        .iter()
        .find_map(|error| match error {
            Error::DuplicateId { id, first, second } => Some((id, first, second)),
            _ => None,
        })
        .expect("a duplicate id error");
    assert_eq!(duplicate.0, "twin");
    assert!(duplicate.1.ends_with("duplicate_a.yaml") && duplicate.2.ends_with("duplicate_b.yaml"));
}

#[test]
fn missing_paths_and_non_tool_files_are_errors() {
    let report = ToolRegistry::load([testdata("no/such/dir")]);
    assert!(matches!(report.errors.as_slice(), [Error::Io { .. }]));
    let readme = testdata("README.md");
    let err = load_tool_file(&readme).unwrap_err();
    assert!(err.to_string().contains("not a tool file"), "{err}");
}
