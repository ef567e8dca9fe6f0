//! The steps ready to start, in the order they start: the longest chain of steps after a step
//! first, then the one declared first; a step whose host already has the per-host limit of
//! calls in flight waits. Both the graph scheduler and the flow scheduler take steps from here.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::run::context::RunShared;
use crate::run::prepare::PreparedWorkflow;

/// The ready steps of one run, and the calls in flight per host.
pub(crate) struct ReadyQueue<'r> {
    prepared: &'r PreparedWorkflow,
    heap: BinaryHeap<(u64, Reverse<usize>)>,
    /// The host each step calls (by position), when it calls one.
    hosts: Vec<Option<String>>,
    busy: HashMap<String, usize>,
    limit: Option<usize>,
}

impl<'r> ReadyQueue<'r> {
    pub(crate) fn new(prepared: &'r PreparedWorkflow, shared: &RunShared<'_>) -> Self {
        // One URL parse per tool, not per step.
        let mut host_of: HashMap<&str, Option<String>> = HashMap::new();
        let hosts = prepared
            .steps
            .iter()
            .map(|step| {
                let tool = step.tool.as_ref()?;
                host_of
                    .entry(tool.id.as_str())
                    .or_insert_with(|| {
                        let base = shared
                            .config(&tool.id)
                            .ok()
                            .flatten()
                            .and_then(|config| config.base_url.as_deref())
                            .unwrap_or(&tool.base_url);
                        url::Url::parse(base)
                            .ok()
                            .and_then(|url| url.host_str().map(str::to_owned))
                    })
                    .clone()
            })
            .collect();
        ReadyQueue {
            prepared,
            heap: BinaryHeap::new(),
            hosts,
            busy: HashMap::new(),
            limit: shared.engine.per_host_limit,
        }
    }

    /// `position` is ready.
    pub(crate) fn push(&mut self, position: usize) {
        self.heap
            .push((self.prepared.priority[position], Reverse(position)));
    }

    /// The best ready step whose host has room; it then counts as in flight on its host until
    /// [`ReadyQueue::release`].
    pub(crate) fn pop(&mut self) -> Option<usize> {
        let chosen = match self.limit {
            None => self.heap.pop().map(|(_, Reverse(position))| position),
            Some(limit) => {
                let mut held = Vec::new();
                let mut chosen = None;
                while let Some(entry) = self.heap.pop() {
                    let position = entry.1.0;
                    let full = self.hosts[position]
                        .as_ref()
                        .is_some_and(|host| self.busy.get(host).copied().unwrap_or(0) >= limit);
                    if full {
                        held.push(entry);
                    } else {
                        chosen = Some(position);
                        break;
                    }
                }
                self.heap.extend(held);
                chosen
            }
        }?;
        if let Some(host) = &self.hosts[chosen] {
            *self.busy.entry(host.clone()).or_default() += 1;
        }
        Some(chosen)
    }

    /// `position` no longer has a call in flight on its host.
    pub(crate) fn release(&mut self, position: usize) {
        if let Some(host) = &self.hosts[position]
            && let Some(count) = self.busy.get_mut(host)
        {
            *count = count.saturating_sub(1);
        }
    }

    /// True when no step is ready (whether or not its host has room).
    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Takes every ready step out (the run stopped, or ended).
    pub(crate) fn drain(&mut self) -> Vec<usize> {
        self.heap
            .drain()
            .map(|(_, Reverse(position))| position)
            .collect()
    }
}
