//! Decision steps: the engine's decider (a model) picks one of the step's choices.

use std::time::Duration;

use serde_json::Value;
use wayline_core::decide::DecisionRequest;
use wayline_core::secret::mask_secret_names;

use super::{Failure, StepJob};

/// How long a decider may take when the step sets no `timeout_ms`: a model's answer can take
/// longer than an API call (the engine's default applies when it is longer still).
const DECISION_TIMEOUT: Duration = Duration::from_secs(120);

/// Asks the engine's decider a decision step's question: its prompt, its choices, its inputs
/// and its dependencies' outputs, with the run's secrets masked (the tool configs' secret
/// values, and the values of members named like secrets: `password`, `token`, ...). The answer must be one of the
/// choices; anything else fails the step. The output is `{"choice", "reason"}`.
pub(super) async fn decide(job: &StepJob<'_>) -> Result<Value, Failure> {
    let Some(decider) = job.run.engine.decider.as_ref() else {
        return Err("this engine has no decider".to_owned().into());
    };
    let step = job.step;
    let redactor = &job.run.redactor;
    let mut inputs = Value::Object(
        job.inputs
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect(),
    );
    redactor.value(&mut inputs);
    let inputs = mask_secret_names(&inputs);
    // Sorted, so the same run asks the same question.
    let mut ids: Vec<&String> = job.steps.keys().collect();
    ids.sort();
    // Masked output by output: a step named `get_token` keeps its output, only its
    // secret-named members are hidden.
    let context = Value::Object(
        ids.into_iter()
            .map(|id| {
                let mut output = Value::clone(&job.steps[id]);
                redactor.value(&mut output);
                (id.clone(), mask_secret_names(&output))
            })
            .collect(),
    );
    let mut request = DecisionRequest::new(
        step.decision_prompt.clone().unwrap_or_default(),
        step.choices.clone(),
    );
    request.run_id.clone_from(&job.run.run_id);
    request.workflow_id.clone_from(&job.run.workflow_id);
    request.step_id.clone_from(&step.id);
    request.inputs = inputs;
    request.context = context;
    let timeout = step.timeout_ms.map_or(
        DECISION_TIMEOUT.max(job.prepared.timeout),
        Duration::from_millis,
    );
    let decision = tokio::time::timeout(timeout, decider.decide(&request))
        .await
        .map_err(|_| {
            format!(
                "the decider gave no answer within {} ms (set the step's `timeout_ms` to allow more)",
                timeout.as_millis()
            )
        })?
        .map_err(|error| format!("the decider gave no answer: {}", error.message()))?;
    if !step.choices.contains(&decision.choice) {
        return Err(format!(
            "the decider answered `{}`, which is not one of the choices ({}); nothing was chosen",
            decision.choice,
            step.choices
                .iter()
                .map(|choice| format!("`{choice}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
        .into());
    }
    Ok(serde_json::json!({"choice": decision.choice, "reason": decision.reason}))
}
