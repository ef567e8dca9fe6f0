//! Loading written documents: located errors with suggestions, version rules, extensions.

use wayline_arazzo::model::{Reusable, Selectable, StepTarget};
use wayline_arazzo::{Error, Rule, load};

const MINIMAL: &str = "\
arazzo: 1.0.1
info:
  title: Pets
  version: '1'
x-owner: pets-team
sourceDescriptions:
  - name: petstore
    url: ./petstore.yaml
workflows:
  - workflowId: adopt
    steps:
      - stepId: find
        operationId: findPets
        x-note: first
        parameters:
          - name: status
            in: query
            value: available
        successCriteria:
          - condition: $statusCode == 200
        outputs:
          petId: $response.body#/0/id
      - stepId: adopt
        operationPath: '{$sourceDescriptions.petstore.url}#/paths/~1pets~1{petId}/put'
        onFailure:
          - name: again
            type: retry
            retryAfter: 1.5
            retryLimit: 3
";

fn problems(text: &str) -> Vec<wayline_arazzo::Problem> {
    match load(text, "doc.arazzo.yaml") {
        Err(Error::Invalid { problems, .. }) => problems,
        other => panic!("not refused as invalid: {other:?}"),
    }
}

#[test]
fn a_document_becomes_the_model_with_its_extensions() {
    let document = load(MINIMAL, "doc.arazzo.yaml").unwrap();
    assert_eq!(document.extensions["x-owner"], "pets-team");
    let steps = &document.workflows[0].steps;
    assert_eq!(steps[0].target(), Some(StepTarget::OperationId("findPets")));
    assert_eq!(steps[0].extensions["x-note"], "first");
    assert!(matches!(
        &steps[0].parameters[0],
        Reusable::Inline(parameter) if parameter.value == Selectable::Value("available".into())
    ));
    assert!(
        matches!(steps[1].target(), Some(StepTarget::OperationPath(path)) if path.ends_with("/put"))
    );
    let Reusable::Inline(retry) = &steps[1].on_failure[0] else {
        panic!("inline");
    };
    assert_eq!((retry.retry_after, retry.retry_limit), (Some(1.5), Some(3)));
    // What it reads, it writes back (export relies on it).
    let written = serde_json::to_value(&document).unwrap();
    let read_back: wayline_arazzo::ArazzoDocument = serde_json::from_value(written).unwrap();
    assert_eq!(read_back, document);
}

#[test]
fn every_problem_is_reported_at_its_line_with_the_nearest_field() {
    let text = MINIMAL
        .replace("operationId: findPets", "operationID: findPets")
        .replace("type: retry", "type: retyr")
        .replace("in: query", "in: body");
    let found = problems(&text);
    let rules: Vec<Rule> = found.iter().map(|problem| problem.rule).collect();
    assert_eq!(
        rules,
        [
            Rule::StepTarget,
            Rule::UnknownField,
            Rule::NotAllowedValue,
            Rule::NotAllowedValue
        ],
        "{found:#?}"
    );
    let unknown = &found[1];
    assert_eq!((unknown.line, unknown.column), (Some(13), Some(9)));
    assert_eq!(unknown.suggestion.as_deref(), Some("operationId"));
    assert_eq!(found[3].suggestion.as_deref(), Some("retry"));
    let error = load(&text, "doc.arazzo.yaml").unwrap_err().to_string();
    assert!(
        error.contains("doc.arazzo.yaml:13:9: unknown field `operationID` in a step"),
        "{error}"
    );
}

#[test]
fn a_1_0_document_is_held_to_1_0() {
    let text = MINIMAL.replace(
        "        x-note: first\n",
        "        x-note: first\n        dependsOn: [adopt]\n        timeout: 5000\n",
    );
    let found = problems(&text);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found
            .iter()
            .all(|problem| problem.rule == Rule::NewerThanDocument)
    );
    assert!(
        found[0].message.contains("set `arazzo: 1.1.0`"),
        "{}",
        found[0].message
    );
    // The same document as 1.1 loads.
    assert!(
        load(
            &text.replace("arazzo: 1.0.1", "arazzo: 1.1.0"),
            "doc.arazzo.yaml"
        )
        .is_ok()
    );
}

#[test]
fn syntax_errors_and_json_documents() {
    let broken = load("arazzo: 1.1.0\ninfo: [unclosed\n", "bad.yaml").unwrap_err();
    assert!(matches!(broken, Error::Document(_)), "{broken}");
    // Shown where the list that is never closed begins; nothing of the text is quoted.
    assert!(
        broken
            .to_string()
            .starts_with("bad.yaml:2:7: while parsing a flow sequence"),
        "{broken}"
    );
    assert!(!broken.to_string().contains("unclosed"), "{broken}");
    let json = serde_json::to_string_pretty(&serde_json::json!({
        "arazzo": "1.1.0",
        "info": {"title": "T", "version": "1"},
        "sourceDescriptions": [{"name": "api", "url": "./api.json"}],
        "workflows": [{"workflowId": "w", "steps": [{"stepId": "s"}]}]
    }))
    .unwrap();
    let found = problems(&json);
    assert_eq!(found[0].rule, Rule::StepTarget);
    assert_eq!(found[0].line, Some(17), "the step's opening brace: {json}");
}

/// A 1.1 document with one mistake of each kind `validate` finds.
const MISTAKES: &str = "\
arazzo: 1.1.0
info: {title: Mistakes, version: '1'}
sourceDescriptions:
  - {name: pets, url: ./pets.yaml}
  - {name: stores, url: ./stores.yaml}
workflows:
  - workflowId: adopt
    dependsOn: [restock]
    inputs:
      type: object
      properties: {owner: {type: string}}
    steps:
      - stepId: find
        operationId: $sourceDescriptions.pets.findPets
        parameters:
          - {name: owner, in: query, value: $inputs.ownr}
          - {name: after, in: query, value: $steps.reserve.outputs.id}
        successCriteria:
          - condition: $statusCode == 200 &&
        outputs: {petId: $response.body#/0/id}
      - stepId: reserve
        operationId: reservePet
        dependsOn: [find]
        parameters:
          - {name: pet, in: path, value: $steps.find.outputs.petID}
          - reference: $components.successActions.done
        onFailure:
          - {name: back, type: goto, stepId: fnd}
        outputs: {id: $response.body#/id}
      - stepId: reserve
        operationId: $sourceDescriptions.petz.reservePet
  - workflowId: restock
    dependsOn: [adopt]
    steps:
      - stepId: order
        workflowId: adopt
        outputs: {done: $outputs.finished}
components:
  successActions:
    done: {name: done, type: end}
";

#[test]
fn validation_finds_every_mistake_beyond_structure() {
    let document = load(MISTAKES, "mistakes.arazzo.yaml").unwrap();
    let mut found = wayline_arazzo::validate(&document);
    let positions = wayline_arazzo::Positions::of(MISTAKES);
    for problem in &mut found {
        problem.locate(&positions);
    }
    found.sort_by_key(|problem| (problem.line, problem.column));
    let seen: Vec<(usize, Rule, bool)> = found
        .iter()
        .map(|problem| (problem.line.unwrap(), problem.rule, problem.is_error()))
        .collect();
    let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
    assert_eq!(
        seen,
        [
            (8, Rule::Cycle, true),
            (13, Rule::Cycle, true),
            (16, Rule::UnknownReference, false),
            (19, Rule::InvalidExpression, true),
            (22, Rule::AmbiguousOperation, true),
            (25, Rule::UnknownReference, true),
            (26, Rule::UnknownTarget, true),
            (28, Rule::UnknownTarget, true),
            (30, Rule::DuplicateId, true),
            (31, Rule::UnknownTarget, true),
            (37, Rule::UnknownReference, true),
        ],
        "{}",
        shown.join("\n")
    );
    let text = |line: usize| {
        found
            .iter()
            .find(|problem| problem.line == Some(line))
            .unwrap()
            .to_string()
    };
    assert!(
        text(8).contains("workflows adopt → restock → adopt"),
        "{}",
        text(8)
    );
    assert!(
        text(13).contains("steps find → reserve → find"),
        "{}",
        text(13)
    );
    assert!(text(16).starts_with("16:"), "{}", text(16));
    assert!(text(16).contains("warning: `ownr`"), "{}", text(16));
    assert!(text(16).contains("(did you mean `owner`?)"), "{}", text(16));
    assert!(text(25).contains("(did you mean `petId`?)"), "{}", text(25));
    assert!(
        text(26).contains("`$components.parameters`"),
        "{}",
        text(26)
    );
    assert!(text(28).contains("(did you mean `find`?)"), "{}", text(28));
    assert!(text(31).contains("(did you mean `pets`?)"), "{}", text(31));
    assert!(
        text(37).contains("workflow `adopt`'s outputs"),
        "{}",
        text(37)
    );
}

#[test]
fn a_step_reading_past_a_control_point_is_a_cycle() {
    let text = "arazzo: 1.1.0
info: {title: T, version: '1'}
sourceDescriptions: [{name: api, url: ./api.yaml}]
workflows:
  - workflowId: w
    steps:
      - stepId: a
        operationId: a
        parameters: [{name: x, in: query, value: $steps.c.outputs.id}]
      - {stepId: b, operationId: b, onSuccess: [{name: stop, type: end}]}
      - {stepId: c, operationId: c, outputs: {id: $response.body#/id}}
";
    let problems = wayline_arazzo::validate(&load(text, "w.arazzo.yaml").unwrap());
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert_eq!(problems[0].rule, Rule::Cycle);
    assert!(
        problems[0]
            .message
            .starts_with("steps a → c → b wait for each other"),
        "{}",
        problems[0].message
    );
}

/// Issue 31, item 1: `validate` refuses an inputs schema a run could not use, as the run does.
#[test]
fn an_inputs_schema_a_run_could_not_use_is_an_error() {
    let text = "arazzo: 1.1.0
info: {title: T, version: '1'}
sourceDescriptions: [{name: api, url: ./api.yaml}]
workflows:
  - workflowId: w
    inputs: {$ref: '#/components/inputs/missing'}
    steps: [{stepId: s, operationId: op}]
  - workflowId: v
    inputs: {type: object, properties: {n: {type: integer, minimum: many}}}
    steps: [{stepId: s, operationId: op}]
components:
  inputs:
    present: {type: string}
";
    let document = load(text, "doc.arazzo.yaml").unwrap();
    let found: Vec<(String, Rule)> = wayline_arazzo::validate(&document)
        .into_iter()
        .filter(|problem| problem.rule == Rule::InvalidSchema)
        .map(|problem| (problem.pointer.clone(), problem.rule))
        .collect();
    assert_eq!(
        found,
        [
            ("/workflows/0/inputs".to_owned(), Rule::InvalidSchema),
            ("/workflows/1/inputs".to_owned(), Rule::InvalidSchema),
        ]
    );
}
