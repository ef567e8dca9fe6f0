//! Planning (the design phase, as in the Python structure-ai-bot project): a goal in plain words,
//! through a language model, to a validated workflow. The answer is read as a workflow and
//! validated by the graph crate; on problems the validation report goes back to the model, which is
//! asked to repair its plan, a bounded number of times. The result is a draft with its simplified
//! view, ready for approval.
//!
//! Knowledge first: with learned knowledge at hand, a pattern that fits the goal well enough
//! is made into the plan without asking the model (see [`crate::recall`]); the plan says so.

use std::sync::Arc;

use chrono::Utc;
use wayline_knowledge::model::Knowledge;

use wayline_core::ToolCatalog;
use wayline_core::workflow::{Workflow, WorkflowStatus};
use wayline_graph::{ViewFormat, render, validate};

use crate::Error;
use crate::llm::{CompletionRequest, LanguageModel, Message, Usage};
use crate::prompt::{self, DEFAULT_BUDGET};
use crate::recall::{self, Recall};

/// How a planner is set up.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PlanOptions {
    /// Repairs after the first answer (2).
    pub max_repairs: u32,
    /// The prompt's token budget.
    pub budget: usize,
    /// The confidence a learned pattern needs to be the plan without asking the model (0.8).
    pub knowledge_threshold: f64,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            max_repairs: 2,
            budget: DEFAULT_BUDGET,
            knowledge_threshold: 0.8,
        }
    }
}

/// A plan that came out valid.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Plan {
    /// The workflow, a draft.
    pub workflow: Workflow,
    /// Its simplified view (text).
    pub view: String,
    /// Where it came from.
    pub source: PlanSource,
    /// Answers it took (1 when the first was valid; 0 when it came from knowledge).
    pub answers: u32,
    /// Tokens used.
    pub usage: Usage,
    /// What the planner noticed on the way (why a learned pattern was not used, ...).
    pub notes: Vec<String>,
}

/// Where a plan came from.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PlanSource {
    /// The model wrote it.
    Model,
    /// A learned pattern; no model was asked.
    Knowledge {
        /// The pattern's id.
        pattern_id: String,
        /// The pattern's name.
        pattern_name: String,
        /// Its confidence for the goal.
        confidence: f64,
    },
}

impl std::fmt::Display for PlanSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanSource::Model => f.write_str("planned by the model"),
            PlanSource::Knowledge {
                pattern_name,
                confidence,
                ..
            } => write!(
                f,
                "from the learned pattern `{pattern_name}` (confidence {confidence:.2}); no model was asked"
            ),
        }
    }
}

/// Plans with a model over a catalog.
#[derive(Clone)]
pub struct Planner {
    model: Arc<dyn LanguageModel>,
    catalog: Arc<dyn ToolCatalog>,
    knowledge: Option<Arc<Knowledge>>,
    options: PlanOptions,
}

impl std::fmt::Debug for Planner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Planner")
            .field("model", &self.model)
            .field("tools", &self.catalog.tool_ids().len())
            .field(
                "patterns",
                &self.knowledge.as_ref().map_or(0, |k| k.patterns.len()),
            )
            .field("options", &self.options)
            .finish()
    }
}

impl Planner {
    /// A planner asking `model` about the tools of `catalog`.
    pub fn new(model: Arc<dyn LanguageModel>, catalog: Arc<dyn ToolCatalog>) -> Self {
        Planner {
            model,
            catalog,
            knowledge: None,
            options: PlanOptions::default(),
        }
    }

    /// Consults `knowledge` before the model: a learned pattern that fits the goal with
    /// confidence at least [`PlanOptions::knowledge_threshold`] is the plan.
    pub fn knowledge(mut self, knowledge: Arc<Knowledge>) -> Self {
        self.knowledge = Some(knowledge);
        self
    }

    /// With `options`.
    pub fn options(mut self, options: PlanOptions) -> Self {
        self.options = options;
        self
    }

    /// A valid draft workflow for `goal` with the run inputs `inputs`, or why none came out.
    pub async fn plan(&self, goal: &str, inputs: &[String]) -> Result<Plan, Error> {
        let mut notes = Vec::new();
        if let Some(knowledge) = &self.knowledge {
            match self.recall(knowledge, goal, inputs) {
                Ok(plan) => return Ok(plan),
                Err(why) => notes.extend(why),
            }
        }
        let prompt = prompt::build(self.catalog.as_ref(), goal, inputs, self.options.budget);
        let mut messages = prompt.messages;
        let mut usage = Usage::default();
        let mut answers = 0;
        loop {
            let completion = self
                .model
                .complete(&CompletionRequest::new(messages.clone()))
                .await?;
            answers += 1;
            usage.prompt_tokens += completion.usage.prompt_tokens;
            usage.completion_tokens += completion.usage.completion_tokens;
            let problems = match prompt::parse_answer(&completion.text) {
                Err(problem) => vec![problem.to_string()],
                Ok(mut workflow) => {
                    let report = validate(&workflow, self.catalog.as_ref());
                    // A literal that reads like a misspelt reference would be sent as text
                    // (decision 54): for a model's plan, a problem to repair.
                    let lint: Vec<String> = report
                        .warnings
                        .iter()
                        .map(|warning| warning.message.clone())
                        .collect();
                    if report.is_valid() && lint.is_empty() {
                        workflow.status = WorkflowStatus::Draft;
                        let view = render(&workflow, &report, ViewFormat::Text);
                        return Ok(Plan {
                            workflow,
                            view,
                            source: PlanSource::Model,
                            answers,
                            usage,
                            notes,
                        });
                    }
                    let mut problems = report.problems();
                    problems.extend(lint);
                    problems
                }
            };
            if answers > self.options.max_repairs {
                return Err(Error::Invalid { answers, problems });
            }
            messages.push(Message::assistant(completion.text));
            messages.push(Message::user(format!(
                "That plan has problems:\n- {}\nAnswer with the whole corrected workflow as one JSON object.",
                problems.join("\n- ")
            )));
        }
    }
}

impl Planner {
    /// The plan a learned pattern makes, or why there is none.
    fn recall(
        &self,
        knowledge: &Knowledge,
        goal: &str,
        inputs: &[String],
    ) -> Result<Plan, Vec<String>> {
        let found = match recall::recall(
            knowledge,
            Utc::now(),
            goal,
            inputs,
            self.catalog.as_ref(),
            self.options.knowledge_threshold,
        ) {
            Recall::Found(found) => found,
            Recall::Nothing(notes) => return Err(notes),
        };
        let mut workflow = found.workflow;
        // Valid: `recall` keeps only workflows that pass.
        let report = validate(&workflow, self.catalog.as_ref());
        workflow.status = WorkflowStatus::Draft;
        let view = render(&workflow, &report, ViewFormat::Text);
        Ok(Plan {
            workflow,
            view,
            source: PlanSource::Knowledge {
                pattern_id: found.pattern_id,
                pattern_name: found.pattern_name,
                confidence: found.confidence,
            },
            answers: 0,
            usage: Usage::default(),
            notes: found.notes,
        })
    }
}
