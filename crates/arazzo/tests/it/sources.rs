//! Source descriptions read from the specification's examples, and the operations steps call
//! resolved in them.

use indexmap::IndexMap;
use wayline_arazzo::sources::{Source, Sources, check_operations};
use wayline_arazzo::{Rule, Severity, load, load_file};
use wayline_testkit::fixture;

#[test]
fn the_examples_operations_resolve_in_their_openapi_descriptions() {
    let Some(dir) = fixture("arazzo/examples/1.0.0") else {
        return;
    };
    for example in [
        "pet-coupons.arazzo.yaml",
        "FAPI-PAR.arazzo.yaml",
        "oauth.arazzo.yaml",
    ] {
        let document = load_file(&dir.join(example)).unwrap();
        let sources = Sources::load(&document, &dir, &IndexMap::new());
        assert!(
            sources
                .iter()
                .all(|(_, source)| matches!(source, Source::OpenApi { .. })),
            "{example}: {sources:?}"
        );
        let resolved = document
            .workflows
            .iter()
            .flat_map(|workflow| &workflow.steps)
            .filter(|step| matches!(sources.operation(step), Ok(Some(_))))
            .count();
        assert!(resolved > 1, "{example}");
        let found: Vec<(Severity, String)> = check_operations(&document, &sources)
            .into_iter()
            .map(|problem| (problem.severity, problem.message))
            .collect();
        // The pet-coupons example passes parameters its description names otherwise, one of
        // them the path's `petId`, which it therefore never sends; FAPI-PAR calls `PAR`, which
        // its description spells `Par` (operation ids are case-sensitive).
        let expected: &[(Severity, &str)] = match example {
            "FAPI-PAR.arazzo.yaml" => &[(
                Severity::Error,
                "no operation `PAR` in `auth-api` (did you mean `Par`?)",
            )],
            "pet-coupons.arazzo.yaml" => &[
                (
                    Severity::Warning,
                    "`findPetsByTags` of `pet-coupons` takes no query parameter `pet_tags`",
                ),
                (
                    Severity::Warning,
                    "`getPetCoupons` of `pet-coupons` takes no path parameter `pet_id`",
                ),
                (
                    Severity::Error,
                    "`getPetCoupons` of `pet-coupons` needs the path parameter `petId`",
                ),
            ],
            _ => &[],
        };
        assert_eq!(found.len(), expected.len(), "{example}: {found:#?}");
        for ((severity, message), (want_severity, want)) in found.iter().zip(expected) {
            assert_eq!(severity, want_severity, "{message}");
            assert!(message.contains(want), "{message}");
        }
    }
}

#[test]
fn a_remote_description_is_not_fetched_but_a_local_copy_is_read() {
    let Some(dir) = fixture("arazzo/examples/1.0.0") else {
        return;
    };
    let document = load_file(&dir.join("bnpl-arazzo.yaml")).unwrap();
    let remote = Sources::load(&document, &dir, &IndexMap::new());
    let problems = check_operations(&document, &remote);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert_eq!(problems[0].severity, Severity::Warning);
    assert!(
        problems[0].message.contains("--source NAME=FILE"),
        "{}",
        problems[0].message
    );

    let copy = IndexMap::from([("BnplApi".to_owned(), dir.join("bnpl-openapi.yaml"))]);
    let local = Sources::load(&document, &dir, &copy);
    let problems = check_operations(&document, &local);
    // Read, its operations resolve; one step names a query parameter its description calls
    // `AuthorizationToken`.
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert_eq!(problems[0].severity, Severity::Warning);
    assert!(
        problems[0]
            .message
            .contains("no query parameter `redirectAuthToken`"),
        "{}",
        problems[0].message
    );
}

#[test]
fn missing_operations_and_parameters_are_named_with_the_nearest() {
    let Some(dir) = fixture("arazzo/examples/1.0.0") else {
        return;
    };
    let text = format!(
        "arazzo: 1.0.1
info: {{title: T, version: '1'}}
sourceDescriptions:
  - {{name: pets, url: '{}'}}
workflows:
  - workflowId: w
    steps:
      - stepId: a
        operationId: findPetByStatus
      - stepId: b
        operationPath: '{{$sourceDescriptions.pets.url}}#/paths/~1pet~1findByStatus/post'
      - stepId: c
        operationPath: '{{$sourceDescriptions.pets.url}}#/paths/~1pet~1findByStatus/get'
        parameters:
          - {{name: statuses, in: query, value: available}}
",
        dir.join("pet-coupons.openapi.yaml").display()
    );
    let document = load(&text, "w.arazzo.yaml").unwrap();
    let sources = Sources::load(&document, &dir, &IndexMap::new());
    let problems = check_operations(&document, &sources);
    let rules: Vec<Rule> = problems.iter().map(|problem| problem.rule).collect();
    assert_eq!(
        rules,
        [
            Rule::UnknownTarget,
            Rule::UnknownTarget,
            Rule::UnknownReference
        ],
        "{problems:#?}"
    );
    assert!(
        problems[0]
            .message
            .contains("did you mean `findPetsByStatus`?"),
        "{}",
        problems[0].message
    );
    assert!(
        problems[1].message.contains("no POST operation"),
        "{}",
        problems[1].message
    );
    assert_eq!(problems[2].suggestion.as_deref(), Some("status"));
}

#[test]
fn an_asyncapi_source_is_listed_as_not_run() {
    let text = "arazzo: 1.1.0
info: {title: T, version: '1'}
sourceDescriptions:
  - {name: events, url: ./events.yaml, type: asyncapi}
workflows:
  - workflowId: w
    steps:
      - {stepId: send, operationId: orderCreated, action: send}
";
    let document = load(text, "w.arazzo.yaml").unwrap();
    let sources = Sources::load(&document, std::path::Path::new("."), &IndexMap::new());
    assert!(matches!(
        sources.get("events"),
        Some(Source::Unsupported { kind: "AsyncAPI" })
    ));
    let problems = check_operations(&document, &sources);
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].message.contains("does not run AsyncAPI steps"),
        "{}",
        problems[0].message
    );
}

#[test]
fn a_workflow_named_in_another_arazzo_document_must_be_there() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("other.arazzo.yaml"),
        "arazzo: 1.1.0\ninfo: {title: O, version: '1'}\nsourceDescriptions: [{name: api, url: ./api.yaml}]\nworkflows: [{workflowId: login, steps: [{stepId: s, operationId: op}]}]\n",
    )
    .unwrap();
    let text = |id: &str| {
        format!(
            "arazzo: 1.1.0\ninfo: {{title: T, version: '1'}}\nsourceDescriptions: [{{name: other, url: ./other.arazzo.yaml, type: arazzo}}]\nworkflows:\n  - workflowId: w\n    steps:\n      - {{stepId: s, workflowId: '$sourceDescriptions.other.{id}'}}\n"
        )
    };
    let found = |id: &str| {
        let document = load(&text(id), "t.arazzo.yaml").unwrap();
        let sources = Sources::load(&document, dir.path(), &IndexMap::new());
        check_operations(&document, &sources)
            .into_iter()
            .map(|problem| (problem.pointer, problem.message))
            .collect::<Vec<_>>()
    };
    assert_eq!(found("login"), []);
    assert_eq!(
        found("logn"),
        [(
            "/workflows/0/steps/0/workflowId".to_owned(),
            "the Arazzo document of source `other` has no workflow `logn` (did you mean `login`?)"
                .to_owned()
        )]
    );
}
