//! `wayline plan`: a goal in plain words to a validated draft workflow — from a learned
//! pattern when one fits (`--sut`), else from a language model, repaired from the validation
//! report a bounded number of times.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use wayline_core::document::Format;
use wayline_planner::Error as PlanError;
use wayline_planner::llm::{
    Completion, CompletionRequest, LanguageModel, ModelError, ModelErrorKind, OpenAiModel,
};
use wayline_planner::plan::{Plan, PlanOptions, PlanSource, Planner};

use crate::args::{KnowledgeArg, ModelArgs};
use crate::assemble::{
    Environment, load_tools_to_call, model_config, open_knowledge, runtime, transport,
};
use crate::report::{
    Outcome, ReportFormat, fail, out, outln, print_json, unreadable, write_atomically,
};

/// Stands in for a model that is not configured: a plan from knowledge needs none, and one
/// that does need it fails with the reason.
#[derive(Debug)]
struct NoModel(String);

#[async_trait::async_trait]
impl LanguageModel for NoModel {
    async fn complete(&self, _: &CompletionRequest) -> Result<Completion, ModelError> {
        Err(ModelError::new(ModelErrorKind::Refused, self.0.clone()))
    }
}

/// `wayline plan` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct PlanArgs {
    /// What the workflow should do, in plain words.
    goal: String,
    /// Tool files or directories (repeatable).
    #[arg(long = "tools", required = true, value_name = "DIR")]
    tools: Vec<PathBuf>,
    /// A run input the workflow may use (repeatable).
    #[arg(long = "input", value_name = "NAME")]
    inputs: Vec<String>,
    /// Write the workflow here (`.json` for JSON, else YAML); without it the workflow is
    /// printed after the view.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Replace the `--out` file when it exists.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    model: ModelArgs,
    /// Repairs asked for after the first answer.
    #[arg(long, value_name = "N", default_value_t = 2)]
    max_repairs: u32,
    /// Plan from this SUT's learned patterns first, when one fits the goal.
    #[arg(long, value_name = "NAME")]
    sut: Option<String>,
    #[command(flatten)]
    knowledge: KnowledgeArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    format: ReportFormat,
}

pub(crate) fn plan_command(args: PlanArgs) -> Outcome {
    match plan(&args) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn plan(args: &PlanArgs) -> Result<Outcome, Outcome> {
    if args.goal.trim().is_empty() {
        return Err(unreadable(
            "the goal is empty; say what the workflow should do",
        ));
    }
    let registry = Arc::new(load_tools_to_call(&args.tools, &Environment::default())?);
    let runtime = runtime()?;
    if let Some(path) = args
        .out
        .as_ref()
        .filter(|path| !args.force && path.exists())
    {
        return Err(unreadable(format!(
            "{} exists; pass --force to replace it, or choose another --out",
            path.display()
        )));
    }
    // Without a model, a plan from knowledge can still come out.
    let model: Arc<dyn LanguageModel> = match model_config(&args.model) {
        Ok(config) => Arc::new(OpenAiModel::new(config, Arc::new(transport()?))),
        Err(why) if args.sut.is_some() => Arc::new(NoModel(format!(
            "{why}; and no learned pattern of `{}` fits the goal",
            args.sut.as_deref().unwrap_or_default()
        ))),
        Err(why) => return Err(fail(why)),
    };
    let mut options = PlanOptions::default();
    options.max_repairs = args.max_repairs;
    let mut planner = Planner::new(model, registry).options(options);
    if let Some(sut) = &args.sut {
        let store = open_knowledge(&args.knowledge, None)?;
        let knowledge = runtime
            .block_on(store.load(&wayline_knowledge::sut_key(sut)))
            .map_err(fail)?;
        planner = planner.knowledge(Arc::new(knowledge));
    }
    let plan = match runtime.block_on(planner.plan(&args.goal, &args.inputs)) {
        Ok(plan) => plan,
        Err(PlanError::Invalid { answers, problems }) => {
            return Ok(no_plan(args.format, answers, &problems));
        }
        Err(error) => return Err(fail(error)),
    };
    let (text, format) = workflow_text(&plan, args.out.as_deref())?;
    if let Some(path) = &args.out {
        write_atomically(path, &text)?;
    }
    match args.format {
        ReportFormat::Json => print_json(&json!({
            "valid": true,
            "source": source_doc(&plan.source),
            "answers": plan.answers,
            "usage": plan.usage,
            "notes": plan.notes,
            "view": plan.view,
            "workflow": plan.workflow,
            "out": args.out.as_ref().map(|path| path.display().to_string()),
        })),
        ReportFormat::Text => {
            out!("{}", plan.view);
            if !plan.view.ends_with('\n') {
                outln!();
            }
            for note in &plan.notes {
                eprintln!("note: {note}");
            }
            eprintln!(
                "{} ({} answer(s), {} token(s))",
                plan.source,
                plan.answers,
                plan.usage.total()
            );
            match &args.out {
                Some(path) => eprintln!(
                    "wrote {} ({format}); review it, then `wayline workflow save` and approve it",
                    path.display()
                ),
                None => out!("\n{text}"),
            }
        }
    }
    Ok(Outcome::Ok)
}

/// The workflow as the `--out` file's format (YAML unless it ends in `.json`), and that
/// format's name.
fn workflow_text(plan: &Plan, out: Option<&Path>) -> Result<(String, &'static str), Outcome> {
    let json = out.is_some_and(|path| Format::from_path(path) == Some(Format::Json));
    let written = if json {
        serde_json::to_string_pretty(&plan.workflow)
            .map(|text| (text + "\n", "JSON"))
            .map_err(|error| error.to_string())
    } else {
        serde_norway::to_string(&plan.workflow)
            .map(|text| (text, "YAML"))
            .map_err(|error| error.to_string())
    };
    written.map_err(|error| unreadable(format!("cannot write the workflow: {error}")))
}

fn source_doc(source: &PlanSource) -> serde_json::Value {
    match source {
        PlanSource::Knowledge {
            pattern_id,
            pattern_name,
            confidence,
        } => json!({
            "kind": "knowledge",
            "pattern_id": pattern_id,
            "pattern_name": pattern_name,
            "confidence": confidence,
        }),
        _ => json!({"kind": "model"}),
    }
}

/// Reports that the repairs ran out, with the last answer's problems: exit 1.
fn no_plan(format: ReportFormat, answers: u32, problems: &[String]) -> Outcome {
    match format {
        ReportFormat::Json => print_json(&json!({
            "valid": false,
            "answers": answers,
            "problems": problems,
        })),
        ReportFormat::Text => {
            eprintln!("no valid plan after {answers} answer(s); the last one's problems:");
            for problem in problems {
                eprintln!("  - {problem}");
            }
        }
    }
    Outcome::Failed
}
