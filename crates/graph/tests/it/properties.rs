//! Property tests: orders respect every edge and do not depend on how edges were declared;
//! cycles are always found and are real cycles.

use std::collections::HashSet;

use proptest::prelude::*;
use wayline_core::{Edge, MemoryCatalog, Step, ToolDefinition, Workflow};
use wayline_graph::{ProblemKind, validate};

use crate::support::assert_respects;

fn catalog() -> MemoryCatalog {
    MemoryCatalog::from_tools([ToolDefinition::new("t", "http://127.0.0.1")])
}

/// A workflow over `n` steps; each pair is an explicit edge or (when `as_mapping`) a mapping.
fn build(n: usize, pairs: &[(usize, usize, bool)]) -> Workflow {
    let mut workflow = Workflow::new("random", "random");
    for index in 0..n {
        workflow.steps.push(Step::new(format!("s{index}"), "t"));
    }
    for (k, &(from, to, as_mapping)) in pairs.iter().enumerate() {
        if as_mapping {
            let step = &mut workflow.steps[to];
            step.input_mapping
                .insert(format!("in{k}"), format!("s{from}.out.{k}").into());
        } else {
            workflow
                .edges
                .push(Edge::new(format!("s{from}"), format!("s{to}")));
        }
    }
    workflow
}

/// Random DAG edges: pairs (i, j) with i < j, so no cycle is possible.
fn dag() -> impl Strategy<Value = (usize, Vec<(usize, usize, bool)>)> {
    (2usize..40).prop_flat_map(|n| {
        let pair = (0..n, 0..n, any::<bool>())
            .prop_filter("distinct", |(a, b, _)| a != b)
            .prop_map(|(a, b, m)| (a.min(b), a.max(b), m));
        (Just(n), proptest::collection::vec(pair, 0..(n * 3)))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn order_respects_edges_and_ignores_declaration_order((n, pairs) in dag(), seed in any::<u64>()) {
        let workflow = build(n, &pairs);
        let report = validate(&workflow, &catalog());
        prop_assert!(report.is_valid(), "{:?}", report.errors);
        let order = report.order();
        let edges: Vec<(String, String)> = pairs
            .iter()
            .map(|&(from, to, _)| (format!("s{from}"), format!("s{to}")))
            .collect();
        assert_respects(&order, edges, n);

        // The same workflow again gives the same order…
        let again = validate(&workflow, &catalog());
        prop_assert_eq!(&order, &again.order());
        // …and so does the same graph with its edges declared in another order.
        let mut shuffled = pairs.clone();
        let len = shuffled.len();
        if len > 1 {
            let mut state = seed;
            for index in (1..len).rev() {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                shuffled.swap(index, (state >> 33) as usize % (index + 1));
            }
        }
        let reshuffled = build(n, &shuffled);
        let shuffled_report = validate(&reshuffled, &catalog());
        prop_assert_eq!(order, shuffled_report.order());
    }

    #[test]
    fn cycles_are_reported_and_real((n, pairs) in dag(), back in any::<(usize, usize)>()) {
        // Close a cycle: a path a → … → b exists when (a, b) is one of the pairs; add b → a.
        prop_assume!(!pairs.is_empty());
        let (a, b, _) = pairs[back.0 % pairs.len()];
        let mut pairs = pairs.clone();
        pairs.push((b, a, back.1 % 2 == 0));
        let workflow = build(n, &pairs);
        let report = validate(&workflow, &catalog());
        let cycles: Vec<_> = report.errors_of(ProblemKind::Cycle).collect();
        prop_assert!(!cycles.is_empty(), "no cycle reported for {:?}", pairs);

        let edges: HashSet<(String, String)> = report
            .edges()
            .map(|(from, to, _)| (from.to_owned(), to.to_owned()))
            .collect();
        for problem in cycles {
            let steps = &problem.steps;
            prop_assert!(steps.len() >= 2);
            for (index, from) in steps.iter().enumerate() {
                let to = &steps[(index + 1) % steps.len()];
                prop_assert!(edges.contains(&(from.clone(), to.clone())), "{from} → {to} is not an edge");
            }
        }
    }
}
