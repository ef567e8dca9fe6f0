//! A workflow made ready to run: validated, its expressions, paths and validations compiled
//! once, its tools looked up, its dependency lists and scheduling priorities computed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use wayline_core::tool::ToolKind;
use wayline_core::workflow::ExpressionField;
use wayline_core::{Expression, RetryPolicy, StepKind, ToolCatalog, ToolDefinition, Workflow};

use crate::Error;
use crate::call::response::{Extraction, path_outputs};
use crate::values::assertion::Assertions;
use crate::values::extract::Path;
use crate::values::schema::ResponseSchemas;
use crate::values::validation::Validation;

/// Engine settings a prepared step takes its defaults from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Defaults {
    pub(crate) retry: RetryPolicy,
    pub(crate) timeout: Duration,
    /// True when the engine has a code runner.
    pub(crate) code_steps: bool,
    /// True when the engine has an MCP client.
    pub(crate) mcp_steps: bool,
    /// True when the engine has a decider.
    pub(crate) decisions: bool,
    /// True when every response is checked against its tool's response schema, if it has one.
    pub(crate) check_schemas: bool,
}

/// A workflow ready to run any number of times. Made by [`Engine::prepare`](crate::Engine::prepare).
#[derive(Debug)]
pub struct PreparedWorkflow {
    pub(crate) workflow: Workflow,
    pub(crate) steps: Vec<PreparedStep>,
    /// Topological order (positions); also the order of the run record.
    pub(crate) order: Vec<usize>,
    pub(crate) predecessors: Vec<Vec<usize>>,
    pub(crate) successors: Vec<Vec<usize>>,
    /// Longest chain of steps from each step to the end: who starts first when slots are few.
    pub(crate) priority: Vec<u64>,
    pub(crate) index: HashMap<String, usize>,
    /// Every run input the workflow reads, for checking inputs before a run starts.
    pub(crate) input_refs: Vec<String>,
}

impl PreparedWorkflow {
    /// The workflow.
    pub fn workflow(&self) -> &Workflow {
        &self.workflow
    }

    /// Step ids in the order the run record lists them (a topological order).
    pub fn order(&self) -> impl Iterator<Item = &str> {
        self.order
            .iter()
            .map(|&position| self.workflow.steps[position].id.as_str())
    }

    /// The run inputs the workflow knows: those it declares, then those its mappings and
    /// expressions read.
    pub fn input_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.workflow.inputs.keys().map(String::as_str).collect();
        for name in &self.input_refs {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
        names
    }

    pub(crate) fn is_step(&self, id: &str) -> bool {
        self.index.contains_key(id)
    }
}

/// One step with everything compiled.
#[derive(Debug)]
pub(crate) struct PreparedStep {
    /// Shared by every step calling the same tool.
    pub(crate) tool: Option<Arc<ToolDefinition>>,
    pub(crate) when: Option<Expression>,
    pub(crate) until: Option<Expression>,
    pub(crate) cel_outputs: Vec<(String, Expression)>,
    pub(crate) path_outputs: Vec<(String, Path)>,
    /// Steps the CEL expressions read (`steps.ID`), with their positions.
    pub(crate) reads: Vec<(String, usize)>,
    /// The tool's compiled `response_extract`, shared like the tool.
    pub(crate) extraction: Arc<Extraction>,
    pub(crate) validations: Vec<Validation>,
    /// The step's `expect`, when it has one.
    pub(crate) assertions: Option<Assertions>,
    /// Whether the body is checked against the tool's response schema, and how.
    pub(crate) schema_check: SchemaCheck,
    /// The tool's response schemas (compiled when a step checks them), shared like the tool.
    pub(crate) schemas: Arc<ResponseSchemas>,
    pub(crate) retry: RetryPolicy,
    pub(crate) timeout: Duration,
    pub(crate) kind: StepKind,
}

impl PreparedStep {
    pub(crate) fn has_outputs(&self) -> bool {
        !self.cel_outputs.is_empty() || !self.path_outputs.is_empty()
    }

    /// True when running the step a second time cannot do harm a first time did not: a
    /// transform, or a call whose tool is safe to repeat (a read, or marked idempotent, or
    /// sending an idempotency key).
    pub(crate) fn safe_to_repeat(&self) -> bool {
        if self.kind == StepKind::Transform {
            return true;
        }
        self.tool
            .as_deref()
            .is_none_or(wayline_core::ToolDefinition::safe_to_repeat)
    }
}

/// Whether a step's responses are checked against its tool's response schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SchemaCheck {
    /// Not checked.
    Off,
    /// Checked when the tool has a schema for the status (the engine's setting).
    IfPresent,
    /// Checked, and a status the tool has no schema for fails (`expect.schema: true`).
    Required,
}

/// A tool, its compiled extraction and response schemas, shared by the steps that call it.
type SharedTool = (Arc<ToolDefinition>, Arc<Extraction>, Arc<ResponseSchemas>);

pub(crate) fn prepare(
    workflow: &Workflow,
    catalog: &dyn ToolCatalog,
    defaults: Defaults,
) -> Result<PreparedWorkflow, Error> {
    let report = wayline_graph::validate(workflow, catalog);
    let mut problems = report.problems();
    let mut steps = Vec::with_capacity(workflow.steps.len());
    let index: HashMap<String, usize> = workflow
        .steps
        .iter()
        .enumerate()
        .map(|(position, step)| (step.id.clone(), position))
        .collect();
    // One copy of each tool and of its compiled extraction, however many steps call it.
    let mut tools: HashMap<&str, Option<SharedTool>> = HashMap::new();
    let schema_check = |step: &wayline_core::Step| match step.expect.as_ref().and_then(|e| e.schema)
    {
        Some(true) => SchemaCheck::Required,
        Some(false) => SchemaCheck::Off,
        None if defaults.check_schemas => SchemaCheck::IfPresent,
        None => SchemaCheck::Off,
    };
    // The tools some step checks the responses of: only theirs are compiled.
    let checked_tools: std::collections::HashSet<&str> = workflow
        .steps
        .iter()
        .filter(|step| schema_check(step) != SchemaCheck::Off)
        .map(|step| step.tool_id.as_str())
        .collect();
    for step in &workflow.steps {
        let mut fail = |problem: String| problems.push(format!("step `{}`: {problem}", step.id));
        let shared = tools
            .entry(step.tool_id.as_str())
            .or_insert_with(|| {
                let tool = catalog.tool(&step.tool_id)?;
                let extraction = Extraction::compile(tool).unwrap_or_else(|error| {
                    fail(format!(
                        "`response_extract` of tool `{}`: {error}",
                        step.tool_id
                    ));
                    Extraction::default()
                });
                // Compiled only when a step checks them: a spec's schemas can be large, and
                // one no step reads must not fail the workflow.
                let schemas = if checked_tools.contains(step.tool_id.as_str()) {
                    ResponseSchemas::compile(tool).unwrap_or_else(|problems| {
                        for problem in problems {
                            fail(problem);
                        }
                        ResponseSchemas::default()
                    })
                } else {
                    ResponseSchemas::default()
                };
                Some((
                    Arc::new(tool.clone()),
                    Arc::new(extraction),
                    Arc::new(schemas),
                ))
            })
            .clone();
        let (tool, extraction, schemas) = match shared {
            Some((tool, extraction, schemas)) => (Some(tool), extraction, schemas),
            None => (None, Arc::default(), Arc::default()),
        };
        match (step.kind, tool.as_deref()) {
            (StepKind::Decision, _) if !defaults.decisions => fail(
                "decision steps need a decider (a language model), which this engine does not have (`EngineBuilder::decider`; for `wayline`, pass --model-url and --model or set WAYLINE_LLM_URL and WAYLINE_LLM_MODEL)".to_owned(),
            ),
            (StepKind::Code, _) | (StepKind::Action, Some(ToolDefinition { kind: ToolKind::Code, .. }))
                if !defaults.code_steps =>
            {
                fail(
                    "code steps need a code runner (a sandbox), which this engine does not have; build it with `code_runner`".to_owned(),
                );
            }
            (StepKind::Code, Some(tool)) if tool.kind != ToolKind::Code => fail(format!(
                "a code step calls a tool of kind `code`; `{}` is not one",
                tool.id
            )),
            (_, Some(tool)) if tool.kind == ToolKind::Mcp && !defaults.mcp_steps => fail(format!(
                "tool `{}` is an MCP tool, and this engine has no MCP client; build it with `mcp_client`",
                tool.id
            )),
            (_, Some(tool)) if tool.kind == ToolKind::Mcp && tool.mcp.is_none() => {
                fail(format!(
                    "tool `{}` is an `mcp` tool without `mcp` (the server and tool it calls)",
                    tool.id
                ));
            }
            (_, Some(tool)) if tool.kind == ToolKind::Code && tool.code.is_none() => {
                fail(format!("tool `{}` is a `code` tool without `code`", tool.id));
            }
            (StepKind::Transform, _) if step.outputs.is_empty() => {
                fail("a transform step computes its `outputs`; it has none".to_owned());
            }
            (StepKind::Transform | StepKind::Decision, _) if step.expect.is_some() => fail(
                "`expect` checks the response of a call; a transform or decision step makes none (check its outputs with `validations`, or in a later step's `expect.assert`)".to_owned(),
            ),
            (StepKind::Action, Some(tool)) if tool.kind == ToolKind::Cli && tool.command.is_none() => {
                fail(format!("tool `{}` is a `cli` tool without a `command`", tool.id));
            }
            _ => {}
        }
        let mut when = None;
        let mut until = None;
        let mut cel_outputs = Vec::new();
        let mut asserts = Vec::new();
        for (field, source) in step.expressions() {
            // Syntax errors were reported by validation already.
            let Ok(expression) = Expression::compile(source) else {
                continue;
            };
            match field {
                ExpressionField::When => when = Some(expression),
                ExpressionField::PollUntil => until = Some(expression),
                ExpressionField::Output(name) => cel_outputs.push((name.to_owned(), expression)),
                ExpressionField::Assert(_) => asserts.push(expression),
            }
        }
        let path_outputs = path_outputs(&step.outputs).unwrap_or_else(|error| {
            fail(format!("`outputs`: {error}"));
            Vec::new()
        });
        let validations = step
            .validations
            .iter()
            .filter_map(|spec| Validation::compile(spec).map_err(&mut fail).ok())
            .collect();
        let retry = step
            .retry
            .or_else(|| tool.as_ref().and_then(|tool| tool.retry))
            .unwrap_or(defaults.retry);
        if retry.max_attempts == 0 {
            fail("`retry.max_attempts` must be at least 1 (the first attempt counts)".to_owned());
        }
        if step
            .poll
            .as_ref()
            .is_some_and(|poll| poll.max_attempts == 0)
        {
            fail("`poll.max_attempts` must be at least 1".to_owned());
        }
        let timeout = step
            .timeout_ms
            .or_else(|| tool.as_ref().and_then(|tool| tool.timeout_ms))
            .map(Duration::from_millis)
            .unwrap_or(defaults.timeout);
        let mut reads = Vec::new();
        let expressions = when
            .iter()
            .chain(&until)
            .chain(cel_outputs.iter().map(|(_, expression)| expression))
            .chain(&asserts);
        for id in expressions.flat_map(Expression::step_refs) {
            if let Some(&position) = index.get(id)
                && !reads.iter().any(|(known, _)| known == id)
            {
                reads.push((id.clone(), position));
            }
        }
        let assertions = step.expect.as_ref().and_then(|expect| {
            Assertions::compile(expect, asserts)
                .map_err(|found| {
                    for problem in found {
                        fail(problem);
                    }
                })
                .ok()
        });
        steps.push(PreparedStep {
            tool,
            when,
            until,
            cel_outputs,
            path_outputs,
            reads,
            extraction,
            validations,
            assertions,
            schema_check: schema_check(step),
            schemas,
            retry,
            timeout,
            kind: step.kind,
        });
    }
    if !problems.is_empty() {
        return Err(Error::InvalidWorkflow {
            workflow_id: workflow.id.clone(),
            problems,
        });
    }
    let graph = report.graph();
    let count = workflow.steps.len();
    let predecessors = (0..count).map(|index| graph.predecessors(index)).collect();
    let successors = (0..count).map(|index| graph.successors(index)).collect();
    let priority = graph.remaining_weight(|_| 1);
    Ok(PreparedWorkflow {
        workflow: workflow.clone(),
        steps,
        order: report.order_indexes().to_vec(),
        predecessors,
        successors,
        priority,
        index,
        input_refs: wayline_core::inputs::read_by_steps(workflow),
    })
}
