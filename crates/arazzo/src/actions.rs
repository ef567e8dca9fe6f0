//! What happens after a step: the success or failure action that applies (the step's own,
//! then its workflow's, the first whose criteria all hold), or the specification's default —
//! on to the next step after a success, end the workflow after a failure.

use std::time::Duration;

use crate::criteria::{CriterionError, passes};
use crate::model::{
    ArazzoDocument, Components, Criterion, FailureAction, FailureActionKind, Parameter, Reusable,
    Step, SuccessAction, SuccessActionKind, Workflow,
};
use crate::runtime::Values;

/// Where control goes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Next {
    /// The next step in order (the end of the workflow after the last one).
    Continue,
    /// The workflow ends: successfully after a success, failed after a failure.
    End,
    /// Control moves to a step of this workflow, or to a workflow.
    Goto(Target),
    /// The failed step runs again after `after` (a `Retry-After` header, when the response had
    /// one, else `retryAfter`), at most `limit` times in all; `first` runs before it.
    Retry {
        /// How long to wait first.
        after: Duration,
        /// How many retries at most.
        limit: u64,
        /// A step or workflow to run before retrying.
        first: Option<Target>,
    },
}

/// A `goto` or `retry` target.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Target {
    /// A step of the current workflow.
    Step(String),
    /// A workflow (of this document, or `$sourceDescriptions.NAME.ID`), with parameters.
    Workflow {
        /// Its id as written.
        id: String,
        /// Parameters for it.
        parameters: Vec<Reusable<Parameter>>,
    },
}

/// The action chosen, and its name (none for the default).
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    /// The action's name.
    pub name: Option<String>,
    /// Where control goes.
    pub next: Next,
}

/// What follows a step that succeeded: its `onSuccess`, then its workflow's
/// `successActions` not redefined by name, the first whose criteria hold; else `Continue`.
pub fn after_success(
    document: &ArazzoDocument,
    workflow: &Workflow,
    step: &Step,
    values: &Values,
) -> Result<Chosen, CriterionError> {
    let components = document.components.as_ref();
    let actions = candidates(
        &step.on_success,
        &workflow.success_actions,
        |action| success_action(action, components),
        |action: &SuccessAction| action.name.as_str(),
    );
    for action in actions {
        if all_hold(&action.criteria, values)? {
            let next = match action.kind {
                SuccessActionKind::End => Next::End,
                _ => Next::Goto(
                    target(
                        action.step_id.as_deref(),
                        action.workflow_id.as_deref(),
                        &action.parameters,
                    )
                    .unwrap_or(Target::Step(step.step_id.clone())),
                ),
            };
            return Ok(Chosen {
                name: Some(action.name.clone()),
                next,
            });
        }
    }
    Ok(Chosen {
        name: None,
        next: Next::Continue,
    })
}

/// What follows a step that failed: its `onFailure`, then its workflow's `failureActions` not
/// redefined by name, the first whose criteria hold; else `End`. `retry_after` is the
/// response's `Retry-After`, which overrides an action's `retryAfter`.
pub fn after_failure(
    document: &ArazzoDocument,
    workflow: &Workflow,
    step: &Step,
    values: &Values,
    retry_after: Option<Duration>,
) -> Result<Chosen, CriterionError> {
    let components = document.components.as_ref();
    let actions = candidates(
        &step.on_failure,
        &workflow.failure_actions,
        |action| failure_action(action, components),
        |action: &FailureAction| action.name.as_str(),
    );
    for action in actions {
        if !all_hold(&action.criteria, values)? {
            continue;
        }
        let first = target(
            action.step_id.as_deref(),
            action.workflow_id.as_deref(),
            &action.parameters,
        );
        let next = match action.kind {
            FailureActionKind::End => Next::End,
            FailureActionKind::Goto => {
                Next::Goto(first.unwrap_or(Target::Step(step.step_id.clone())))
            }
            _ => Next::Retry {
                after: retry_after.unwrap_or_else(|| {
                    Duration::from_secs_f64(action.retry_after.unwrap_or(0.0).clamp(0.0, 86_400.0))
                }),
                // "If not specified then a single retry SHALL be attempted."
                limit: action.retry_limit.unwrap_or(1),
                first,
            },
        };
        return Ok(Chosen {
            name: Some(action.name.clone()),
            next,
        });
    }
    Ok(Chosen {
        name: None,
        next: Next::End,
    })
}

/// The step's actions (references resolved), then the workflow's whose names the step does not
/// redefine.
fn candidates<'a, A>(
    own: &'a [Reusable<A>],
    inherited: &'a [Reusable<A>],
    resolve: impl Fn(&'a Reusable<A>) -> Option<&'a A>,
    name: impl Fn(&A) -> &str,
) -> Vec<&'a A> {
    let own: Vec<&A> = own.iter().filter_map(&resolve).collect();
    let mut all = own.clone();
    for action in inherited.iter().filter_map(&resolve) {
        if !own.iter().any(|mine| name(mine) == name(action)) {
            all.push(action);
        }
    }
    all
}

/// An action given inline, or the component a Reusable Object names (by the last segment of
/// its reference).
fn resolved<'a, A>(
    action: &'a Reusable<A>,
    component: impl Fn(&str) -> Option<&'a A>,
) -> Option<&'a A> {
    match action {
        Reusable::Inline(action) => Some(action),
        Reusable::Reference(reference) => component(reference.reference.rsplit_once('.')?.1),
    }
}

/// A success action, inline or from `components`.
pub(crate) fn success_action<'a>(
    action: &'a Reusable<SuccessAction>,
    components: Option<&'a Components>,
) -> Option<&'a SuccessAction> {
    resolved(action, |name| components?.success_actions.get(name))
}

/// A failure action, inline or from `components`.
pub(crate) fn failure_action<'a>(
    action: &'a Reusable<FailureAction>,
    components: Option<&'a Components>,
) -> Option<&'a FailureAction> {
    resolved(action, |name| components?.failure_actions.get(name))
}

fn all_hold(criteria: &[Criterion], values: &Values) -> Result<bool, CriterionError> {
    for criterion in criteria {
        if !passes(criterion, values)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn target(
    step: Option<&str>,
    workflow: Option<&str>,
    parameters: &[Reusable<Parameter>],
) -> Option<Target> {
    match (step, workflow) {
        (Some(step), _) => Some(Target::Step(step.to_owned())),
        (None, Some(workflow)) => Some(Target::Workflow {
            id: workflow.to_owned(),
            parameters: parameters.to_vec(),
        }),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOCUMENT: &str = "\
arazzo: 1.1.0
info: {title: T, version: '1'}
sourceDescriptions: [{name: api, url: ./api.yaml}]
workflows:
  - workflowId: w
    successActions:
      - {name: done, type: end, criteria: [{condition: $statusCode == 204}]}
    failureActions:
      - {name: give-up, type: end}
      - {name: wait, type: retry, retryAfter: 2, criteria: [{condition: $statusCode == 503}]}
    steps:
      - stepId: create
        operationId: create
        onSuccess:
          - {name: check, type: goto, stepId: poll, criteria: [{condition: $statusCode == 202}]}
        onFailure:
          - reference: $components.failureActions.throttled
          - {name: wait, type: retry, retryAfter: 0.5, retryLimit: 3, stepId: login}
      - stepId: poll
        operationId: poll
      - stepId: login
        operationId: login
components:
  failureActions:
    throttled: {name: throttled, type: retry, retryAfter: 10, criteria: [{condition: $statusCode == 429}]}
";

    fn at(status: u16) -> Values {
        Values {
            status: Some(status),
            ..Values::default()
        }
    }

    #[test]
    fn the_first_action_that_applies_decides_and_the_defaults_follow_the_specification() {
        let document = crate::load(DOCUMENT, "t.arazzo.yaml").unwrap();
        let workflow = &document.workflows[0];
        let create = &workflow.steps[0];
        let success = |status| after_success(&document, workflow, create, &at(status)).unwrap();
        assert_eq!(success(202).next, Next::Goto(Target::Step("poll".into())));
        assert_eq!(
            success(204),
            Chosen {
                name: Some("done".into()),
                next: Next::End
            }
        );
        assert_eq!(
            success(200),
            Chosen {
                name: None,
                next: Next::Continue
            }
        );

        let failure = |status, header| {
            after_failure(&document, workflow, create, &at(status), header).unwrap()
        };
        // A component reference comes first, with its criteria.
        assert_eq!(
            failure(429, None).next,
            Next::Retry {
                after: Duration::from_secs(10),
                limit: 1,
                first: None
            }
        );
        // The step's `wait` redefines the workflow's; the response's Retry-After overrides it.
        assert_eq!(
            failure(503, Some(Duration::from_secs(7))),
            Chosen {
                name: Some("wait".into()),
                next: Next::Retry {
                    after: Duration::from_secs(7),
                    limit: 3,
                    first: Some(Target::Step("login".into())),
                },
            }
        );
        assert_eq!(
            failure(500, None).next,
            Next::Retry {
                after: Duration::from_millis(500),
                limit: 3,
                first: Some(Target::Step("login".into()))
            }
        );
        // A step without actions of its own: the workflow's, then the default.
        let poll = &workflow.steps[1];
        assert_eq!(
            after_failure(&document, workflow, poll, &at(500), None)
                .unwrap()
                .name
                .as_deref(),
            Some("give-up")
        );
        assert_eq!(
            after_success(&document, workflow, poll, &at(200))
                .unwrap()
                .next,
            Next::Continue
        );
    }
}
