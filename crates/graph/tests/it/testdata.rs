//! The repository's own workflows: the same behaviours as the shared fixtures, always present.

use std::collections::BTreeSet;

use wayline_graph::{ProblemKind, validate};
use wayline_testkit::testdata;

use crate::support::{assert_respects, edge_set, tools, workflow};

fn edges(list: &[(&str, &str, bool)]) -> BTreeSet<(String, String, bool)> {
    list.iter()
        .map(|(f, t, i)| (f.to_string(), t.to_string(), *i))
        .collect()
}

#[test]
fn briefing_infers_edges_from_mappings_arazzo_forms_and_conditions() {
    let catalog = tools(&testdata("tools"));
    let workflow = workflow(&testdata("workflows/briefing.yaml"));
    let report = validate(&workflow, &catalog);
    assert!(report.is_valid(), "{:#?}", report.errors);
    assert_eq!(
        edge_set(&report),
        edges(&[
            ("locate", "weather", false),
            ("rates", "report", false),
            ("locate", "country-info", true),
            ("locate", "report", true),
            ("country-info", "report", true),
            ("weather", "report", true),
        ])
    );
    let order = report.order();
    assert_eq!(
        order,
        ["locate", "weather", "country-info", "rates", "report"]
    );
    assert_respects(
        &order,
        report.edges().map(|(f, t, _)| (f.to_owned(), t.to_owned())),
        5,
    );
    assert_eq!(
        report.levels(),
        [
            vec!["locate", "rates"],
            vec!["weather", "country-info"],
            vec!["report"]
        ]
    );
}

/// The problems a workflow should report: kind and steps, in report order.
type ExpectedProblems<'a> = &'a [(ProblemKind, &'a [&'a str])];

#[test]
fn invalid_workflows_report_the_fitting_kinds() {
    let catalog = tools(&testdata("tools"));
    let cases: [(&str, ExpectedProblems<'_>); 5] = [
        ("cycle", &[(ProblemKind::Cycle, &["a", "b", "c"])]),
        (
            "edge_unknown_step",
            &[(ProblemKind::UnknownStep, &["step_99"])],
        ),
        (
            "mapping_unknown_step",
            &[(ProblemKind::UnknownReference, &["step_2", "step_9"])],
        ),
        (
            "self_reference",
            &[(ProblemKind::SelfReference, &["step_1"])],
        ),
        (
            "many_problems",
            &[
                (ProblemKind::DuplicateStepId, &["a"]),
                (ProblemKind::UnknownTool, &["b"]),
                (ProblemKind::MissingRequiredInput, &["c"]),
                (ProblemKind::UnknownOutputField, &["d", "c"]),
                (ProblemKind::InvalidReference, &["e"]),
                (ProblemKind::InvalidExpression, &["e"]),
            ],
        ),
    ];
    for (name, expected) in cases {
        let report = validate(
            &workflow(&testdata(&format!("workflows/invalid/{name}.yaml"))),
            &catalog,
        );
        let found: Vec<(ProblemKind, Vec<&str>)> = report
            .errors
            .iter()
            .map(|problem| {
                (
                    problem.kind,
                    problem.steps.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        let expected: Vec<(ProblemKind, Vec<&str>)> = expected
            .iter()
            .map(|(kind, steps)| (*kind, steps.to_vec()))
            .collect();
        assert_eq!(found, expected, "{name}");
    }
}

#[test]
fn critical_path_uses_the_given_weights() {
    let catalog = tools(&testdata("tools"));
    let workflow = workflow(&testdata("workflows/briefing.yaml"));
    let report = validate(&workflow, &catalog);
    let graph = report.graph();
    let slow = |index: usize| {
        if graph.id(index) == "country-info" {
            50
        } else {
            10
        }
    };
    let (path, total) = graph.critical_path(slow);
    let ids: Vec<&str> = path.iter().map(|&index| graph.id(index)).collect();
    assert_eq!((ids, total), (vec!["locate", "country-info", "report"], 70));
}
