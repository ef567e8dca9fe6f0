//! Shared helpers: loading workflows and tool catalogs from disk.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use wayline_core::Workflow;
use wayline_graph::ValidationReport;
use wayline_registry::{ToolRegistry, load_workflow_file};

pub(crate) fn tools(dir: &Path) -> ToolRegistry {
    ToolRegistry::load([dir])
        .into_result()
        .unwrap_or_else(|errors| panic!("tools in {} did not load: {errors:#?}", dir.display()))
}

pub(crate) fn workflow(path: &Path) -> Workflow {
    load_workflow_file(path).unwrap_or_else(|err| panic!("{err}"))
}

/// `(from, to, inferred)` triples of a report.
pub(crate) fn edge_set(report: &ValidationReport) -> BTreeSet<(String, String, bool)> {
    report
        .edges()
        .map(|(from, to, inferred)| (from.to_owned(), to.to_owned(), inferred))
        .collect()
}

/// Asserts that `order` holds every step once and puts each edge's `from` before its `to`.
pub(crate) fn assert_respects(
    order: &[&str],
    edges: impl IntoIterator<Item = (String, String)>,
    steps: usize,
) {
    assert_eq!(
        order.len(),
        steps,
        "order {order:?} does not hold every step"
    );
    let position: HashMap<&str, usize> = order.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    assert_eq!(position.len(), steps, "order {order:?} repeats a step");
    for (from, to) in edges {
        assert!(
            position[from.as_str()] < position[to.as_str()],
            "order {order:?} puts {to} before {from}"
        );
    }
}
