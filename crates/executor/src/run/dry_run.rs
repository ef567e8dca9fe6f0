//! Dry runs: the requests a workflow would send, without sending any.

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;
use wayline_core::tool::ToolKind;
use wayline_core::{RequestSummary, StepKind, ToolConfig};

use crate::call::command;
use crate::call::request::build_request;
use crate::run::engine::{Engine, check_inputs};
use crate::values::redact::Redactor;
use crate::values::resolve::{self, Outputs, Unresolved};
use crate::{Error, PreparedWorkflow};

/// What one step would do.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PlannedStep {
    /// The step.
    pub step_id: String,
    /// Its tool (empty for transform steps).
    pub tool_id: String,
    /// The request it would send, secrets shown as `***` and outputs of earlier steps as
    /// `<step.path>` placeholders.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<RequestSummary>,
    /// The command line it would run (`cli` tools).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Its `when` condition, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// Anything else worth knowing (a transform's outputs, a request that cannot be built).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

struct NoOutputs;

impl Outputs for NoOutputs {
    fn output(&self, _id: &str) -> Option<&Value> {
        None
    }
}

/// The requests `prepared` would send with `inputs`, in run-record order.
///
/// Free-function form of [`Engine::dry_run`], for callers that already hold tool configs.
pub fn dry_run(
    prepared: &PreparedWorkflow,
    inputs: &IndexMap<String, Value>,
    config: &dyn Fn(&str) -> Option<ToolConfig>,
) -> Vec<PlannedStep> {
    let configs: Vec<Option<ToolConfig>> = prepared
        .steps
        .iter()
        .map(|step| step.tool.as_ref().and_then(|tool| config(&tool.id)))
        .collect();
    let redactor = Redactor::for_configs(configs.iter().flatten());
    let is_step = |id: &str| prepared.is_step(id);
    prepared
        .order
        .iter()
        .map(|&position| {
            let prepared_step = &prepared.steps[position];
            let step = &prepared.workflow.steps[position];
            let mut planned = PlannedStep {
                step_id: step.id.clone(),
                tool_id: step.tool_id.clone(),
                request: None,
                command: None,
                when: step.when.clone(),
                notes: Vec::new(),
            };
            let resolved =
                resolve::resolve(step, &is_step, inputs, &NoOutputs, Unresolved::Placeholder);
            let inputs = match resolved {
                Ok(inputs) => inputs,
                Err(error) => {
                    planned.notes.push(error);
                    return planned;
                }
            };
            let tool = prepared_step.tool.as_deref();
            match (step.kind, tool) {
                (StepKind::Transform, _) => {
                    planned.notes.extend(
                        step.outputs
                            .iter()
                            .map(|(name, source)| format!("computes `{name}` = {source}")),
                    );
                }
                (StepKind::Decision, _) => planned.notes.push(format!(
                    "asks the decider \"{}\", to answer one of: {}",
                    step.decision_prompt.as_deref().unwrap_or_default(),
                    step.choices.join(", ")
                )),
                (_, Some(tool)) if tool.kind == ToolKind::Code => {
                    if let Some(code) = &tool.code {
                        let lines = code.source.lines().count();
                        planned.notes.push(format!(
                            "runs {lines} line(s) of {} in a sandbox{}",
                            code.language,
                            code.profile
                                .as_deref()
                                .map(|profile| format!(" (profile {profile})"))
                                .unwrap_or_default()
                        ));
                    }
                }
                (_, Some(tool)) if tool.kind == ToolKind::Mcp => {
                    if let Some(mcp) = &tool.mcp {
                        let mut arguments = wayline_core::secret::mask_secret_names(
                            &Value::Object(inputs.clone().into_iter().collect()),
                        );
                        redactor.value(&mut arguments);
                        planned.notes.push(format!(
                            "calls tool `{}` of MCP server `{}` with {arguments}",
                            mcp.tool, mcp.server
                        ));
                    }
                }
                (_, Some(tool)) if tool.kind == ToolKind::Cli => {
                    if let Some(config) = &tool.command {
                        match command::invocation(config, &inputs) {
                            Ok(invocation) => {
                                let mut line = vec![invocation.program];
                                line.extend(invocation.args);
                                planned.command = Some(line);
                            }
                            Err(error) => planned.notes.push(error.to_string()),
                        }
                    }
                }
                (_, Some(tool)) => {
                    let key = tool
                        .idempotency_key
                        .as_ref()
                        .map(|_| format!("wayline-<run>-{}", step.id));
                    match build_request(tool, &inputs, configs[position].as_ref(), key.as_deref()) {
                        Ok(built) => {
                            let mut summary = redactor.summary(&built.request);
                            summary.url = readable_placeholders(&summary.url);
                            planned.request = Some(summary);
                            planned.notes.extend(built.warnings);
                        }
                        Err(error) => planned.notes.push(error.to_string()),
                    }
                }
                (_, None) => planned
                    .notes
                    .push(format!("tool `{}` is unknown", step.tool_id)),
            }
            if let Some(poll) = &step.poll {
                planned.notes.push(format!(
                    "polls until `{}` (at most {} calls, {} ms apart)",
                    poll.until, poll.max_attempts, poll.interval_ms
                ));
            }
            planned
        })
        .collect()
}

/// `url` with its placeholders as they are written (`<step_1.lat>`), not percent-encoded as
/// the URL carried them (`%3Cstep_1.lat%3E`).
fn readable_placeholders(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(start) = rest.find("%3C") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 3..];
        match after.find("%3E") {
            // A placeholder holds a step reference: no `%`, no `/`.
            Some(end) if !after[..end].contains(['%', '/']) && end > 0 => {
                out.push('<');
                out.push_str(&after[..end]);
                out.push('>');
                rest = &after[end + 3..];
            }
            _ => {
                out.push_str("%3C");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

impl Engine {
    /// What a run of `workflow` with `inputs` would send, without sending anything. Fails like
    /// [`Engine::run`] when the workflow or the inputs are invalid.
    pub async fn dry_run(
        &self,
        workflow: &wayline_core::Workflow,
        inputs: IndexMap<String, Value>,
    ) -> Result<Vec<PlannedStep>, Error> {
        let prepared = self.prepare(workflow)?;
        let inputs = check_inputs(&prepared, inputs)?;
        let configs = self.fetch_configs(&prepared).await;
        let lookup = |tool_id: &str| configs.get(tool_id).cloned().and_then(Result::ok).flatten();
        Ok(dry_run(&prepared, &inputs, &lookup))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_read_as_written_in_urls() {
        assert_eq!(
            readable_placeholders(
                "http://h/v1/forecast?latitude=%3Cstep_1.lat%3E&x=%3C%3E&y=a%3Cb/c%3E"
            ),
            "http://h/v1/forecast?latitude=<step_1.lat>&x=%3C%3E&y=a%3Cb/c%3E"
        );
        assert_eq!(
            readable_placeholders("http://h/%3Ca%3E/%3Cb.c%3E"),
            "http://h/<a>/<b.c>"
        );
    }
}
