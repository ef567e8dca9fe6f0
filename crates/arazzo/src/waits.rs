//! Which steps of a workflow may run at the same time. Arazzo's steps run in order; wayline
//! runs a step as soon as nothing it depends on is unfinished, where the document's control flow
//! cannot tell the difference:
//!
//! - A step depends on the steps whose outputs it reads (`$steps.X…`, anywhere in it) and on
//!   those its `dependsOn` names.
//! - A *control point* is a step whose outcome can change which steps run next: it has success
//!   actions (`goto` or `end`), failure actions that `goto` or run another step before a retry,
//!   or it is a `goto` target (it can be re-entered). A control point waits for every step
//!   before it, and every step after it waits for it; its workflow's own success actions, or
//!   failure actions that do more than end, make every step one.
//! - Between control points, steps wait only for what they depend on.
//!
//! A failure between control points ends the workflow as in order (the default failure action),
//! but a later independent step may already have started: it finishes and is recorded. A
//! document that must not send it says so with `dependsOn` or an action.

use std::collections::BTreeSet;

use crate::actions::{failure_action, success_action};
use crate::condition::Condition;
use crate::expression::{Expression, Part, Template, embedded};
use crate::model::{
    Components, CriterionKind, CriterionType, FailureAction, FailureActionKind, Reusable,
    Selectable, Step, SuccessAction, Workflow,
};

/// What each step of a workflow waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waits {
    waits: Vec<BTreeSet<usize>>,
    control: Vec<bool>,
}

/// A workflow whose steps wait for each other in a loop (a step reading a later one across a
/// control point, or `dependsOn` that loops): the steps, in order around the loop.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("steps {} wait for each other", .0.join(" → "))]
pub struct Deadlock(pub Vec<String>);

impl Waits {
    /// The plan of `workflow` (with `components` for referenced actions).
    pub fn of(workflow: &Workflow, components: Option<&Components>) -> Result<Waits, Deadlock> {
        let steps = &workflow.steps;
        // Each step's position by id, the first of a repeated id (a scan per reference would
        // cost the square of the workflow's length).
        let mut positions: std::collections::HashMap<&str, usize> =
            std::collections::HashMap::with_capacity(steps.len());
        for (position, step) in steps.iter().enumerate() {
            positions.entry(step.step_id.as_str()).or_insert(position);
        }
        let index = |id: &str| positions.get(id).copied();
        let everywhere = workflow_controls(workflow, components);
        let mut targets = BTreeSet::new();
        let mut control = vec![everywhere; steps.len()];
        for (position, step) in steps.iter().enumerate() {
            let (is_control, gotos) = step_controls(step, components);
            control[position] |= is_control;
            targets.extend(gotos.iter().filter_map(|id| index(id)));
        }
        let workflow_targets = workflow
            .success_actions
            .iter()
            .filter_map(|action| success_action(action, components)?.step_id.as_deref())
            .chain(
                workflow
                    .failure_actions
                    .iter()
                    .filter_map(|action| failure_action(action, components)?.step_id.as_deref()),
            );
        targets.extend(workflow_targets.filter_map(index));
        for target in targets {
            control[target] = true;
        }
        let mut waits: Vec<BTreeSet<usize>> = steps
            .iter()
            .enumerate()
            .map(|(position, step)| {
                reads(step)
                    .iter()
                    .chain(&step.depends_on)
                    .filter_map(|id| index(id))
                    .filter(|dependency| *dependency != position)
                    .collect()
            })
            .collect();
        let mut last_control: Option<usize> = None;
        for position in 0..steps.len() {
            if control[position] {
                waits[position].extend(0..position);
                last_control = Some(position);
            } else if let Some(barrier) = last_control {
                waits[position].insert(barrier);
            }
        }
        let plan = Waits { waits, control };
        if let Some(cycle) = crate::cycles::cycles(&plan.waits).into_iter().next() {
            return Err(Deadlock(
                cycle
                    .into_iter()
                    .map(|step| steps[step].step_id.clone())
                    .collect(),
            ));
        }
        Ok(plan)
    }

    /// The steps `step` waits for (by position).
    pub fn waits(&self, step: usize) -> &BTreeSet<usize> {
        &self.waits[step]
    }

    /// Whether `step` is a control point.
    pub fn is_control(&self, step: usize) -> bool {
        self.control[step]
    }

    /// The steps by level: each level's steps wait only for steps of earlier levels.
    pub fn levels(&self) -> Vec<Vec<usize>> {
        let mut level = vec![0usize; self.waits.len()];
        // The waits point backwards or were checked for loops: a few passes settle them.
        for _ in 0..self.waits.len() {
            let mut changed = false;
            for step in 0..self.waits.len() {
                let wanted = self.waits[step]
                    .iter()
                    .map(|before| level[*before] + 1)
                    .max()
                    .unwrap_or(0);
                if wanted != level[step] {
                    level[step] = wanted;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let depth = level.iter().max().map_or(0, |deepest| deepest + 1);
        let mut levels = vec![Vec::new(); depth];
        for (step, at) in level.into_iter().enumerate() {
            levels[at].push(step);
        }
        levels
    }
}

/// Whether a failure action changes which steps run: anything but ending (the default) or
/// retrying the step itself.
fn redirects(action: &FailureAction) -> bool {
    match action.kind {
        FailureActionKind::End => false,
        FailureActionKind::Retry => action.step_id.is_some() || action.workflow_id.is_some(),
        _ => true,
    }
}

/// Whether the workflow's own actions make every step a control point.
fn workflow_controls(workflow: &Workflow, components: Option<&Components>) -> bool {
    workflow
        .success_actions
        .iter()
        .any(|action| success_action(action, components).is_some())
        || workflow
            .failure_actions
            .iter()
            .filter_map(|action| failure_action(action, components))
            .any(redirects)
}

/// Whether `step` is a control point by its own actions, and the steps its actions go to.
fn step_controls(step: &Step, components: Option<&Components>) -> (bool, Vec<String>) {
    let successes: Vec<&SuccessAction> = step
        .on_success
        .iter()
        .filter_map(|action| success_action(action, components))
        .collect();
    let failures: Vec<&FailureAction> = step
        .on_failure
        .iter()
        .filter_map(|action| failure_action(action, components))
        .collect();
    let targets = successes
        .iter()
        .filter_map(|action| action.step_id.clone())
        .chain(failures.iter().filter_map(|action| action.step_id.clone()))
        .collect();
    let control = !successes.is_empty() || failures.iter().any(|action| redirects(action));
    (control, targets)
}

/// The step ids whose outputs `step` reads (`$steps.ID…`), anywhere in it: values and payloads
/// as runtime expressions or strings embedding them, contexts as expressions, conditions in
/// their language. What does not parse reads nothing here (`validate` reports it).
fn reads(step: &Step) -> Vec<String> {
    let mut expressions: Vec<Expression> = Vec::new();
    let mut values: Vec<&serde_json::Value> = Vec::new();
    let mut contexts: Vec<&str> = Vec::new();
    for parameter in &step.parameters {
        match parameter {
            Reusable::Inline(parameter) => {
                push_selectable(&parameter.value, &mut contexts, &mut values);
            }
            Reusable::Reference(reference) => values.extend(&reference.value),
        }
    }
    if let Some(body) = &step.request_body {
        values.extend(&body.payload);
        for replacement in &body.replacements {
            push_selectable(&replacement.value, &mut contexts, &mut values);
        }
    }
    for criterion in &step.success_criteria {
        contexts.extend(criterion.context.as_deref());
        let simple = matches!(
            criterion.kind,
            None | Some(CriterionType::Named(CriterionKind::Simple))
        );
        if simple {
            if let Ok(condition) = Condition::parse(&criterion.condition) {
                expressions.extend(condition.expressions().into_iter().cloned());
            }
        } else if let Ok(parts) = embedded(&criterion.condition) {
            expressions.extend(parts.into_iter().filter_map(|part| match part {
                Part::Expression(expression) => Some(expression),
                Part::Text(_) => None,
            }));
        }
    }
    expressions.extend(
        contexts
            .into_iter()
            .filter_map(|text| Expression::parse(text).ok()),
    );
    let mut pending = values;
    while let Some(value) = pending.pop() {
        match value {
            serde_json::Value::String(text) => {
                if let Ok(template) = Template::parse(text) {
                    expressions.extend(template.expressions().into_iter().cloned());
                }
            }
            serde_json::Value::Array(items) => pending.extend(items),
            serde_json::Value::Object(map) => pending.extend(map.values()),
            _ => {}
        }
    }
    expressions
        .into_iter()
        .filter_map(|expression| match expression {
            Expression::Steps { step, .. } => Some(step),
            _ => None,
        })
        .collect()
}

fn push_selectable<'a>(
    value: &'a Selectable,
    contexts: &mut Vec<&'a str>,
    values: &mut Vec<&'a serde_json::Value>,
) {
    match value {
        Selectable::Selector(selector) => contexts.push(&selector.context),
        Selectable::Value(value) => values.push(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(steps: &str) -> Result<Waits, Deadlock> {
        let text = format!(
            "arazzo: 1.1.0\ninfo: {{title: T, version: '1'}}\nsourceDescriptions: [{{name: api, url: ./api.yaml}}]\nworkflows:\n  - workflowId: w\n    steps:\n{steps}"
        );
        let document = crate::load(&text, "t.arazzo.yaml").unwrap();
        Waits::of(&document.workflows[0], document.components.as_ref())
    }

    #[test]
    fn independent_steps_share_a_level_and_readers_wait() {
        let plan = plan_of(
            "      - {stepId: a, operationId: a}\n      - {stepId: b, operationId: b}\n      - stepId: c\n        operationId: c\n        parameters: [{name: x, in: query, value: '{$steps.a.outputs.id}-{$steps.b.outputs.id}'}]\n      - {stepId: d, operationId: d, dependsOn: [a]}\n",
        )
        .unwrap();
        assert_eq!(plan.levels(), [vec![0, 1], vec![2, 3]]);
        assert_eq!(plan.waits(2), &BTreeSet::from([0, 1]));
    }

    #[test]
    fn control_points_keep_the_order_around_them() {
        // b may end the workflow: a runs before it, c and d after it.
        let plan = plan_of(
            "      - {stepId: a, operationId: a}\n      - stepId: b\n        operationId: b\n        onSuccess: [{name: stop, type: end, criteria: [{condition: $statusCode == 204}]}]\n      - {stepId: c, operationId: c}\n      - {stepId: d, operationId: d}\n",
        )
        .unwrap();
        assert_eq!(plan.levels(), [vec![0], vec![1], vec![2, 3]]);
        // A goto target is a control point too: it can be re-entered.
        let plan = plan_of(
            "      - {stepId: a, operationId: a}\n      - {stepId: b, operationId: b}\n      - stepId: c\n        operationId: c\n        onFailure: [{name: again, type: goto, stepId: b}]\n",
        )
        .unwrap();
        assert!(plan.is_control(1) && plan.is_control(2) && !plan.is_control(0));
        assert_eq!(plan.levels(), [vec![0], vec![1], vec![2]]);
        // Retrying the step itself changes nothing around it.
        let plan = plan_of(
            "      - {stepId: a, operationId: a, onFailure: [{name: r, type: retry, retryLimit: 2}]}\n      - {stepId: b, operationId: b}\n",
        )
        .unwrap();
        assert_eq!(plan.levels(), [vec![0, 1]]);
    }

    #[test]
    fn reading_a_later_step_across_a_control_point_is_a_deadlock() {
        let error = plan_of(
            "      - stepId: a\n        operationId: a\n        parameters: [{name: x, in: query, value: $steps.c.outputs.id}]\n      - {stepId: b, operationId: b, onSuccess: [{name: s, type: end}]}\n      - {stepId: c, operationId: c}\n",
        )
        .unwrap_err();
        assert_eq!(error.to_string(), "steps a → c → b wait for each other");
    }
}
