//! [`StepGraph`]: the dependency graph of a workflow's steps, and the orders derived from it.
//!
//! Node `i` is `workflow.steps[i]`; declaration order breaks every tie, so each result is the
//! same on every run and whatever order the edges were declared in.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use rustc_hash::{FxHashMap, FxHashSet};

/// A dependency edge between two steps, by position in `workflow.steps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StepEdge {
    /// The step that runs first.
    pub from: usize,
    /// The step that waits for it.
    pub to: usize,
    /// True when inferred from a mapping or condition rather than declared in `edges`.
    pub inferred: bool,
}

/// The dependency graph of a workflow: one node per step, edges deduplicated.
#[derive(Debug, Clone)]
pub struct StepGraph {
    ids: Vec<String>,
    graph: DiGraph<(), bool, u32>,
    edges: Vec<StepEdge>,
}

impl StepGraph {
    /// A graph over steps with these ids (in declaration order) and no edges yet.
    pub fn new(ids: Vec<String>) -> Self {
        let mut graph = DiGraph::with_capacity(ids.len(), ids.len() * 3);
        for _ in &ids {
            graph.add_node(());
        }
        StepGraph {
            ids,
            graph,
            edges: Vec::new(),
        }
    }

    /// Adds an edge unless the same pair is already present. Self-loops are not added.
    /// Returns whether the edge was added.
    pub(crate) fn add_edge(
        &mut self,
        edge: StepEdge,
        seen: &mut FxHashSet<(usize, usize)>,
    ) -> bool {
        if edge.from == edge.to || !seen.insert((edge.from, edge.to)) {
            return false;
        }
        self.graph.add_edge(
            NodeIndex::new(edge.from),
            NodeIndex::new(edge.to),
            edge.inferred,
        );
        self.edges.push(edge);
        true
    }

    /// Number of steps.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when there are no steps.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The id of step `index`.
    pub fn id(&self, index: usize) -> &str {
        &self.ids[index]
    }

    /// The edges: explicit ones in declaration order, then inferred ones in discovery order.
    pub fn edges(&self) -> &[StepEdge] {
        &self.edges
    }

    /// Direct predecessors of step `index`, in declaration order.
    pub fn predecessors(&self, index: usize) -> Vec<usize> {
        self.neighbors(index, Direction::Incoming)
    }

    /// Direct successors of step `index`, in declaration order.
    pub fn successors(&self, index: usize) -> Vec<usize> {
        self.neighbors(index, Direction::Outgoing)
    }

    fn neighbors(&self, index: usize, direction: Direction) -> Vec<usize> {
        let mut found: Vec<usize> = self
            .graph
            .neighbors_directed(NodeIndex::new(index), direction)
            .map(NodeIndex::index)
            .collect();
        found.sort_unstable();
        found
    }

    /// Topological order (Kahn's algorithm); among ready steps the earliest declared goes first.
    ///
    /// Steps on a cycle, and steps downstream of one, are left out.
    pub fn order(&self) -> Vec<usize> {
        let mut in_degree: Vec<usize> = (0..self.len())
            .map(|index| {
                self.graph
                    .neighbors_directed(NodeIndex::new(index), Direction::Incoming)
                    .count()
            })
            .collect();
        let mut ready: BinaryHeap<Reverse<usize>> = in_degree
            .iter()
            .enumerate()
            .filter(|(_, degree)| **degree == 0)
            .map(|(index, _)| Reverse(index))
            .collect();
        let mut order = Vec::with_capacity(self.len());
        while let Some(Reverse(index)) = ready.pop() {
            order.push(index);
            for next in self
                .graph
                .neighbors_directed(NodeIndex::new(index), Direction::Outgoing)
            {
                let degree = &mut in_degree[next.index()];
                *degree -= 1;
                if *degree == 0 {
                    ready.push(Reverse(next.index()));
                }
            }
        }
        order
    }

    /// Parallel levels: level 0 holds steps with no dependencies, level `n` those whose deepest
    /// dependency is on level `n - 1`. Each level lists steps in declaration order. Steps left
    /// out of [`order`](Self::order) are left out here too.
    pub fn levels(&self) -> Vec<Vec<usize>> {
        self.levels_for(&self.order())
    }

    /// [`levels`](Self::levels) for an order already computed by [`order`](Self::order).
    pub(crate) fn levels_for(&self, order: &[usize]) -> Vec<Vec<usize>> {
        let mut level = vec![0usize; self.len()];
        for &index in order {
            for next in self
                .graph
                .neighbors_directed(NodeIndex::new(index), Direction::Outgoing)
            {
                level[next.index()] = level[next.index()].max(level[index] + 1);
            }
        }
        let mut levels: Vec<Vec<usize>> = Vec::new();
        for &index in order {
            let depth = level[index];
            if levels.len() <= depth {
                levels.resize_with(depth + 1, Vec::new);
            }
            levels[depth].push(index);
        }
        for steps in &mut levels {
            steps.sort_unstable();
        }
        levels
    }

    /// The heaviest dependency chain for per-step `weight`s, and its total weight.
    ///
    /// Ties go to the chain whose steps were declared first. Steps left out of
    /// [`order`](Self::order) are ignored.
    pub fn critical_path(&self, weight: impl Fn(usize) -> u64) -> (Vec<usize>, u64) {
        let order = self.order();
        let mut best = vec![0u64; self.len()];
        let mut via: Vec<Option<usize>> = vec![None; self.len()];
        for &index in &order {
            let heaviest = self
                .predecessors(index)
                .into_iter()
                .max_by_key(|&pred| (best[pred], Reverse(pred)));
            best[index] = weight(index) + heaviest.map_or(0, |pred| best[pred]);
            via[index] = heaviest;
        }
        let Some(&end) = order
            .iter()
            .max_by_key(|&&index| (best[index], Reverse(index)))
        else {
            return (Vec::new(), 0);
        };
        let mut path = vec![end];
        while let Some(previous) = via[*path.last().unwrap_or(&end)] {
            path.push(previous);
        }
        path.reverse();
        (path, best[end])
    }

    /// For each step, the heaviest chain from it to the end of the graph, itself included: the
    /// scheduling priority of a step (longer remaining work starts first).
    pub fn remaining_weight(&self, weight: impl Fn(usize) -> u64) -> Vec<u64> {
        let mut remaining = vec![0u64; self.len()];
        for &index in self.order().iter().rev() {
            let after = self
                .graph
                .neighbors_directed(NodeIndex::new(index), Direction::Outgoing)
                .map(|next| remaining[next.index()])
                .max()
                .unwrap_or(0);
            remaining[index] = weight(index) + after;
        }
        remaining
    }

    /// Every cycle group (strongly connected component of two or more steps), each given as one
    /// concrete cycle in edge order, starting at its earliest-declared step. Groups are ordered
    /// by that step.
    pub fn cycles(&self) -> Vec<Vec<usize>> {
        let mut cycles: Vec<Vec<usize>> = petgraph::algo::kosaraju_scc(&self.graph)
            .into_iter()
            .filter(|component| component.len() > 1)
            .map(|component| {
                let members: Vec<usize> = component.iter().map(|node| node.index()).collect();
                self.shortest_cycle_through(&members)
            })
            .collect();
        cycles.sort_unstable_by_key(|cycle| cycle[0]);
        cycles
    }

    /// The shortest cycle through the earliest-declared member of a strongly connected group
    /// (breadth-first search inside the group, successors in declaration order).
    fn shortest_cycle_through(&self, members: &[usize]) -> Vec<usize> {
        let start = members.iter().copied().min().unwrap_or(0);
        let inside: FxHashSet<usize> = members.iter().copied().collect();
        let mut parent: FxHashMap<usize, usize> = FxHashMap::default();
        let mut queue = VecDeque::from([start]);
        while let Some(index) = queue.pop_front() {
            for next in self.successors(index) {
                if next == start {
                    let mut cycle = vec![index];
                    while let Some(&previous) = parent.get(cycle.last().unwrap_or(&start)) {
                        cycle.push(previous);
                    }
                    cycle.reverse();
                    return cycle;
                }
                if inside.contains(&next) && !parent.contains_key(&next) && next != start {
                    parent.insert(next, index);
                    queue.push_back(next);
                }
            }
        }
        // Unreachable for a strongly connected group; fall back to the members themselves.
        let mut members = members.to_vec();
        members.sort_unstable();
        members
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(n: usize, edges: &[(usize, usize)]) -> StepGraph {
        let mut graph = StepGraph::new((0..n).map(|i| format!("s{i}")).collect());
        let mut seen = FxHashSet::default();
        for &(from, to) in edges {
            graph.add_edge(
                StepEdge {
                    from,
                    to,
                    inferred: false,
                },
                &mut seen,
            );
        }
        graph
    }

    /// A cycle through 100,000 steps is found without recursion (a recursive search overflowed
    /// the stack), and so are the order, levels and critical path of a chain that long.
    #[test]
    fn long_cycles_and_chains_need_no_deep_stack() {
        let n = 100_000;
        let cycle: Vec<(usize, usize)> = (0..n).map(|i| (i, (i + 1) % n)).collect();
        let g = graph(n, &cycle);
        let cycles = g.cycles();
        assert_eq!(cycles.len(), 1);
        assert_eq!(cycles[0].len(), n);
        assert_eq!(cycles[0][..3], [0, 1, 2]);
        let chain: Vec<(usize, usize)> = (0..n - 1).map(|i| (i, i + 1)).collect();
        let g = graph(n, &chain);
        assert_eq!(g.order().len(), n);
        assert_eq!(g.levels().len(), n);
        assert_eq!(g.critical_path(|_| 1).1, n as u64);
    }

    #[test]
    fn order_breaks_ties_by_declaration() {
        let g = graph(4, &[(3, 1), (2, 0)]);
        assert_eq!(g.order(), [2, 0, 3, 1]);
        assert_eq!(g.levels(), [vec![2, 3], vec![0, 1]]);
    }

    #[test]
    fn critical_path_follows_the_heaviest_chain() {
        // 0 → 1 → 3 and 0 → 2 → 3, with 2 heavy.
        let g = graph(4, &[(0, 1), (0, 2), (1, 3), (2, 3)]);
        let weights = [1, 1, 5, 1];
        assert_eq!(g.critical_path(|i| weights[i]), (vec![0, 2, 3], 7));
        assert_eq!(g.remaining_weight(|i| weights[i]), [7, 2, 6, 1]);
    }

    #[test]
    fn critical_path_of_empty_graph() {
        assert_eq!(graph(0, &[]).critical_path(|_| 1), (vec![], 0));
    }

    #[test]
    fn cycles_are_concrete_and_ordered() {
        let g = graph(5, &[(0, 1), (1, 2), (2, 0), (3, 4), (4, 3), (2, 3)]);
        assert_eq!(g.cycles(), [vec![0, 1, 2], vec![3, 4]]);
        assert!(g.order().is_empty());
    }

    #[test]
    fn duplicate_and_self_edges_are_dropped() {
        let g = graph(2, &[(0, 1), (0, 1), (1, 1)]);
        assert_eq!(g.edges().len(), 1);
    }
}
