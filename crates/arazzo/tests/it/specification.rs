//! The documents the Arazzo 1.1 JSON Schema must accept and reject
//! (`../shared/fixtures/arazzo/tests/schema`), and the specification's examples.

use std::path::{Path, PathBuf};

use wayline_arazzo::{Error, Positions, Problem, Rule, load_file, validate};
use wayline_testkit::fixture;

fn documents(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_document_the_schema_accepts_loads() {
    let Some(dir) = fixture("arazzo/tests/schema/pass") else {
        return;
    };
    let files = documents(&dir);
    assert_eq!(files.len(), 35);
    let mismatches: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let document = load_file(file).unwrap_or_else(|error| panic!("{error}"));
            findings_differ(file, &document)
        })
        .collect();
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// Mistakes in published documents that the schema cannot see and `validate` does: each
/// document's (line, rule) pairs. The BNPL example reads outputs its steps do not declare
/// (one step reads its own, another an output named differently), and misspells
/// `$response.header` and `$steps.X.outputs`; one schema test says of itself that it passes
/// only because the schema does not check that `operationPath` names its source; another
/// names its source `userAPI` where the document calls it `UserAPI` (twice), another reads a step
/// `previous` that it does not have.
const PUBLISHED_MISTAKES: [(&str, &[(usize, Rule)]); 6] = [
    (
        "tests/schema/pass/workflow-success-criteria.arazzo.yaml",
        &[(19, Rule::UnknownTarget)],
    ),
    (
        "tests/schema/pass/payload-replacement-using-selector.arazzo.yaml",
        &[(19, Rule::UnknownTarget)],
    ),
    (
        "tests/schema/pass/openapi-success-criteria.arazzo.yaml",
        &[(13, Rule::UnknownTarget)],
    ),
    (
        "tests/schema/pass/characterization-openapi-invalid-operationPath-string.arazzo.yaml",
        &[(15, Rule::UnknownTarget)],
    ),
    (
        "tests/schema/pass/bnpl-example.yaml",
        &[
            (242, Rule::UnknownReference),
            (246, Rule::InvalidExpression),
            (253, Rule::UnknownReference),
            (264, Rule::UnknownReference),
        ],
    ),
    (
        "examples/1.0.0/bnpl-arazzo.yaml",
        &[
            (231, Rule::UnknownReference),
            (242, Rule::UnknownReference),
            (253, Rule::UnknownReference),
            (260, Rule::InvalidExpression),
        ],
    ),
];

/// What `validate` finds in `document` when its errors are not exactly the published mistakes
/// listed for it (none for most), located. (Warnings — an XPath criterion wayline does not
/// evaluate — are not mistakes.)
fn findings_differ(file: &Path, document: &wayline_arazzo::ArazzoDocument) -> Option<String> {
    let mut problems: Vec<Problem> = validate(document)
        .into_iter()
        .filter(Problem::is_error)
        .collect();
    let positions = Positions::of(&std::fs::read_to_string(file).unwrap());
    for problem in &mut problems {
        problem.locate(&positions);
    }
    let found: Vec<(usize, Rule)> = problems
        .iter()
        .map(|problem| (problem.line.unwrap_or(0), problem.rule))
        .collect();
    let expected = PUBLISHED_MISTAKES
        .iter()
        .find(|(name, _)| file.ends_with(name))
        .map_or(&[][..], |(_, mistakes)| *mistakes);
    let shown: Vec<String> = problems.iter().map(ToString::to_string).collect();
    (found != expected).then(|| format!("{}:\n{}", file.display(), shown.join("\n")))
}

/// Each document the schema rejects, with the rule that rejects it here.
const REJECTED: [(&str, Rule); 27] = [
    ("async-both-operationId-and-channelPath", Rule::StepTarget),
    ("async-channelPath-without-action", Rule::AsyncAction),
    ("async-depends-on-duplicate-values", Rule::DuplicateItem),
    ("async-depends-on-empty", Rule::EmptyList),
    (
        "async-depends-on-invalid-reference",
        Rule::DependsOnReference,
    ),
    ("channel-path-is-invalid-for-openapi", Rule::AsyncAction),
    ("invalid-arazzo-version", Rule::UnsupportedVersion),
    (
        "invalid-async-correlation-id-non-receive-action",
        Rule::AsyncAction,
    ),
    (
        "invalid-async-parameter-without-in",
        Rule::ParameterLocation,
    ),
    ("invalid-async", Rule::NotAllowedValue),
    (
        "invalid-expression-type-object",
        Rule::ExpressionTypeVersion,
    ),
    (
        "invalid-openapi-parameter-without-in",
        Rule::ParameterLocation,
    ),
    ("invalid-openapi-success-criteria", Rule::EmptyList),
    ("invalid-querystring-without-value", Rule::RequiredField),
    ("invalid-selector-object", Rule::RequiredField),
    ("invalid-self-fragment", Rule::SelfFragment),
    ("invalid-targetSelectorType", Rule::NotAllowedValue),
    ("invalid-workflow-step-with-operationId", Rule::StepTarget),
    ("invalid-workflow-success-criteria", Rule::EmptyList),
    ("not-an-object", Rule::NotAnObject),
    (
        "openapi-both-operationId-and-operationPath",
        Rule::StepTarget,
    ),
    ("openapi-duplicate-parameters", Rule::DuplicateItem),
    ("openapi-missing-operation-target", Rule::StepTarget),
    ("workflow-duplicate-parameters", Rule::DuplicateItem),
    ("workflow-missing-workflowId", Rule::StepTarget),
    ("workflow-step-with-action", Rule::StepTarget),
    ("workflow-step-with-channelPath", Rule::StepTarget),
];

#[test]
fn every_document_the_schema_rejects_is_refused_by_its_rule_with_a_place() {
    let Some(dir) = fixture("arazzo/tests/schema/fail") else {
        return;
    };
    let files = documents(&dir);
    assert_eq!(
        files.len(),
        REJECTED.len(),
        "a fail document is not in the table"
    );
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy();
        let stem = name.trim_end_matches(".yaml").trim_end_matches(".arazzo");
        let (_, rule) = REJECTED
            .iter()
            .find(|(listed, _)| *listed == stem)
            .unwrap_or_else(|| panic!("{stem} is not in the table"));
        let Err(Error::Invalid { problems, .. }) = load_file(&file) else {
            panic!("{stem} was not refused as invalid");
        };
        let named = problems
            .iter()
            .find(|problem| problem.rule == *rule)
            .unwrap_or_else(|| panic!("{stem}: no {rule} among {problems:#?}"));
        assert!(
            named.line.is_some() && named.column.is_some(),
            "{stem}: {named:?}"
        );
    }
}

#[test]
fn the_specifications_examples_load() {
    let Some(dir) = fixture("arazzo/examples") else {
        return;
    };
    let mut loaded = 0;
    for file in documents(&dir.join("1.0.0")) {
        let text = std::fs::read_to_string(&file).unwrap();
        if !text.starts_with("arazzo:") {
            continue; // an OpenAPI description the examples use
        }
        let document = load_file(&file).unwrap_or_else(|error| panic!("{error}"));
        assert!(!document.workflows.is_empty(), "{}", file.display());
        if let Some(mismatch) = findings_differ(&file, &document) {
            panic!("{mismatch}");
        }
        loaded += 1;
    }
    assert_eq!(loaded, 6);
    // The 1.1 example is an AsyncAPI description: given as a workflow document, it is refused
    // with what it is.
    let error = load_file(&dir.join("1.1.0/pet-asyncapi.yaml")).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("this is an AsyncAPI description, not an Arazzo document"),
        "{error}"
    );
}

#[test]
fn an_xpath_criterion_is_read_and_evaluated_when_the_build_can() {
    let Some(file) = fixture("arazzo/tests/schema/pass/criterion-with-extended-xpath.arazzo.yaml")
    else {
        return;
    };
    let problems = validate(&load_file(&file).unwrap());
    if cfg!(feature = "xpath") {
        assert_eq!(problems, [], "XPath criteria are evaluated (Xee)");
    } else {
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert_eq!(problems[0].rule, Rule::Unsupported);
        assert!(!problems[0].is_error());
    }
}

/// Every workflow of the published documents has a plan: which steps may run together.
#[test]
fn every_published_workflow_has_a_plan() {
    let Some(dir) = fixture("arazzo") else {
        return;
    };
    let mut files = documents(&dir.join("tests/schema/pass"));
    files.extend(
        documents(&dir.join("examples/1.0.0"))
            .into_iter()
            .filter(|file| {
                std::fs::read_to_string(file).is_ok_and(|text| text.starts_with("arazzo:"))
            }),
    );
    for file in files {
        let document = load_file(&file).unwrap();
        for workflow in &document.workflows {
            let plan = wayline_arazzo::waits::Waits::of(workflow, document.components.as_ref())
                .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
            let placed: usize = plan.levels().iter().map(Vec::len).sum();
            assert_eq!(placed, workflow.steps.len(), "{}", file.display());
        }
    }
    // The pet-coupons example's `apply-coupon`: coupons are looked up for the pet found, and
    // the order takes both, so its three steps run in order, as the data says.
    let document = load_file(&dir.join("examples/1.0.0/pet-coupons.arazzo.yaml")).unwrap();
    let apply = document
        .workflows
        .iter()
        .find(|workflow| workflow.workflow_id == "apply-coupon")
        .unwrap();
    let plan = wayline_arazzo::waits::Waits::of(apply, document.components.as_ref()).unwrap();
    assert_eq!(plan.levels(), [vec![0], vec![1], vec![2]]);
}
