//! Loops in a graph of steps (or workflows) given as what each waits for.

use std::collections::BTreeSet;

/// The cycles of a graph given as each node's successors, each once, starting at its lowest
/// node (iterative: a document's size is not bounded by the stack).
pub(crate) fn cycles(waits: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut marks = vec![Mark::New; waits.len()];
    let mut found: Vec<Vec<usize>> = Vec::new();
    for start in 0..waits.len() {
        if marks[start] != Mark::New {
            continue;
        }
        // (node, its successors not yet followed), the path so far.
        let mut stack: Vec<(usize, Vec<usize>)> =
            vec![(start, waits[start].iter().copied().collect())];
        marks[start] = Mark::Open;
        while let Some((node, next)) = stack.last_mut() {
            let node = *node;
            let Some(successor) = next.pop() else {
                marks[node] = Mark::Done;
                stack.pop();
                continue;
            };
            match marks[successor] {
                Mark::New => {
                    marks[successor] = Mark::Open;
                    stack.push((successor, waits[successor].iter().copied().collect()));
                }
                Mark::Open => {
                    let from = stack
                        .iter()
                        .position(|(node, _)| *node == successor)
                        .unwrap_or(0);
                    let mut cycle: Vec<usize> =
                        stack[from..].iter().map(|(node, _)| *node).collect();
                    let lowest = cycle
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, node)| **node)
                        .map_or(0, |(at, _)| at);
                    cycle.rotate_left(lowest);
                    if !found.contains(&cycle) {
                        found.push(cycle);
                    }
                }
                Mark::Done => {}
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_are_found_once_from_their_lowest_node() {
        let graph = |edges: &[(usize, usize)], nodes: usize| {
            let mut waits = vec![BTreeSet::new(); nodes];
            for (from, to) in edges {
                waits[*from].insert(*to);
            }
            waits
        };
        assert!(cycles(&graph(&[(1, 0), (2, 1)], 3)).is_empty());
        assert_eq!(
            cycles(&graph(&[(0, 1), (1, 2), (2, 0)], 3)),
            [vec![0, 1, 2]]
        );
        assert_eq!(
            cycles(&graph(&[(2, 3), (3, 2), (0, 0)], 4)),
            [vec![0], vec![2, 3]]
        );
    }
}
