//! The rules of the specification beyond each object's own fields: ids unique; every name a
//! document uses (steps, workflows, source descriptions, components, `goto` targets,
//! dependencies) resolving; every runtime expression parsing and reading something declared;
//! and no step or workflow waiting on itself, through `dependsOn` or the implicit dependencies
//! that `$steps` references make (which a runner MUST honour).
//!
//! What lives in other documents (a source description's operations, another Arazzo
//! document's workflows) is not read here: references into them are checked as far as this
//! document goes (the source description exists and is of the right type).

use std::collections::BTreeSet;

use serde_json::Value;
use wayline_core::document::nearest;

use crate::condition::Condition;
use crate::cycles::cycles;
use crate::expression::{
    ComponentKind, Expression, ExpressionError, Template, WorkflowPart, embedded,
};
use crate::model::{
    ArazzoDocument, Criterion, CriterionKind, CriterionType, ExpressionKind, ExpressionType,
    FailureAction, Parameter, Reusable, Selectable, SourceKind, Step, StepTarget, SuccessAction,
    Workflow,
};
use crate::positions::escape;
use crate::problem::{Problem, Rule};

/// Every problem of `document` beyond its structure (which [`crate::load`] checked), each at
/// a JSON Pointer; [`Problem::locate`] gives it a line and column in the text.
///
/// ```
/// let text = "arazzo: 1.1.0\ninfo: {title: T, version: '1'}\n\
///             sourceDescriptions: [{name: api, url: ./api.yaml}]\n\
///             workflows:\n  - workflowId: w\n    steps:\n      - stepId: a\n        operationId: getPet\n\
///             \x20       outputs: {id: $response.body#/id}\n      - stepId: b\n        operationId: getOwner\n\
///             \x20       parameters: [{name: pet, in: query, value: $steps.a.outputs.idd}]\n";
/// let document = wayline_arazzo::load(text, "w.arazzo.yaml").unwrap();
/// let problems = wayline_arazzo::validate(&document);
/// assert_eq!(problems[0].rule, wayline_arazzo::Rule::UnknownReference);
/// assert_eq!(problems[0].suggestion.as_deref(), Some("id"));
/// ```
pub fn validate(document: &ArazzoDocument) -> Vec<Problem> {
    let mut validator = Validator {
        document,
        problems: Vec::new(),
        waits: vec![Vec::new(); document.workflows.len()],
    };
    validator.run();
    validator.problems
}

struct Validator<'a> {
    document: &'a ArazzoDocument,
    problems: Vec<Problem>,
    /// Per workflow, per step: the steps it waits for (declared and implicit).
    waits: Vec<Vec<BTreeSet<usize>>>,
}

/// Where an expression is, which decides what it may read.
#[derive(Clone, Copy)]
struct Scope {
    /// The workflow it is in (none: in `components`).
    workflow: Option<usize>,
    /// The step it is in.
    step: Option<usize>,
}

/// How a string is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// A value: a whole expression, text embedding some, or text.
    Value,
    /// A whole runtime expression (a criterion's or selector's `context`).
    Expression,
    /// Text that may embed `{$…}` (a regex, JSONPath or XPath condition).
    Embedded,
    /// A simple condition.
    Condition,
}

impl Validator<'_> {
    fn problem(&mut self, rule: Rule, pointer: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem::new(rule, pointer, message));
    }

    fn run(&mut self) {
        let document = self.document;
        unique(
            &mut self.problems,
            document
                .source_descriptions
                .iter()
                .map(|source| source.name.as_str()),
            "/sourceDescriptions",
            "name",
            "source description",
        );
        unique(
            &mut self.problems,
            document
                .workflows
                .iter()
                .map(|workflow| workflow.workflow_id.as_str()),
            "/workflows",
            "workflowId",
            "workflow",
        );
        for (index, workflow) in document.workflows.iter().enumerate() {
            self.workflow(index, workflow);
        }
        if let Some(components) = &document.components {
            let scope = Scope {
                workflow: None,
                step: None,
            };
            for (name, parameter) in &components.parameters {
                let at = format!("/components/parameters/{}", escape(name));
                self.parameter_value(scope, &at, parameter);
            }
            for (name, action) in &components.success_actions {
                let at = format!("/components/successActions/{}", escape(name));
                self.success_action(scope, &at, action);
            }
            for (name, action) in &components.failure_actions {
                let at = format!("/components/failureActions/{}", escape(name));
                self.failure_action(scope, &at, action);
            }
        }
        for (index, workflow) in document.workflows.iter().enumerate() {
            self.step_cycles(index, workflow);
        }
        self.workflow_cycles();
    }

    fn workflow(&mut self, index: usize, workflow: &Workflow) {
        let at = format!("/workflows/{index}");
        // What a run checks its inputs with must compile here, or the run refuses them all.
        if let Some(schema) = &workflow.inputs
            && let Err(reason) = crate::input_schema::compile(self.document, schema)
        {
            self.problem(Rule::InvalidSchema, format!("{at}/inputs"), reason);
        }
        self.waits[index] = vec![BTreeSet::new(); workflow.steps.len()];
        unique(
            &mut self.problems,
            workflow.steps.iter().map(|step| step.step_id.as_str()),
            &format!("{at}/steps"),
            "stepId",
            "step",
        );
        for (position, dependency) in workflow.depends_on.iter().enumerate() {
            self.workflow_reference(&format!("{at}/dependsOn/{position}"), dependency);
        }
        let scope = Scope {
            workflow: Some(index),
            step: None,
        };
        self.parameters(scope, &format!("{at}/parameters"), &workflow.parameters);
        self.success_actions(
            scope,
            &format!("{at}/successActions"),
            &workflow.success_actions,
        );
        self.failure_actions(
            scope,
            &format!("{at}/failureActions"),
            &workflow.failure_actions,
        );
        for (step_index, step) in workflow.steps.iter().enumerate() {
            let scope = Scope {
                workflow: Some(index),
                step: Some(step_index),
            };
            self.step(scope, &format!("{at}/steps/{step_index}"), step);
        }
        self.outputs(scope, &format!("{at}/outputs"), &workflow.outputs);
    }

    fn step(&mut self, scope: Scope, at: &str, step: &Step) {
        match step.target() {
            Some(StepTarget::OperationId(id)) => {
                self.operation_id(scope, &format!("{at}/operationId"), id)
            }
            Some(StepTarget::OperationPath(path)) => {
                self.operation_path(scope, &format!("{at}/operationPath"), path);
            }
            Some(StepTarget::Workflow(id)) => {
                self.workflow_reference(&format!("{at}/workflowId"), id);
            }
            Some(StepTarget::ChannelPath(_)) | None => {}
        }
        for (position, dependency) in step.depends_on.iter().enumerate() {
            self.step_dependency(scope, &format!("{at}/dependsOn/{position}"), dependency);
        }
        self.parameters(scope, &format!("{at}/parameters"), &step.parameters);
        if let Some(body) = &step.request_body {
            if let Some(payload) = &body.payload {
                self.payload(scope, &format!("{at}/requestBody/payload"), payload);
            }
            for (position, replacement) in body.replacements.iter().enumerate() {
                let here = format!("{at}/requestBody/replacements/{position}/value");
                self.selectable(scope, &here, &replacement.value);
            }
        }
        self.criteria(
            scope,
            &format!("{at}/successCriteria"),
            &step.success_criteria,
        );
        self.success_actions(scope, &format!("{at}/onSuccess"), &step.on_success);
        self.failure_actions(scope, &format!("{at}/onFailure"), &step.on_failure);
        self.outputs(scope, &format!("{at}/outputs"), &step.outputs);
    }

    /// `operationId`: by itself when one OpenAPI-like source could hold it, else as
    /// `$sourceDescriptions.NAME.ID`.
    fn operation_id(&mut self, scope: Scope, at: &str, id: &str) {
        if id.starts_with("$sourceDescriptions.") {
            self.read(scope, at, id, Reading::Expression);
            return;
        }
        let sources: Vec<&str> = self
            .document
            .source_descriptions
            .iter()
            .filter(|source| source.kind != Some(SourceKind::Arazzo))
            .map(|source| source.name.as_str())
            .collect();
        if sources.len() > 1 {
            self.problem(
                Rule::AmbiguousOperation,
                at,
                format!(
                    "`{id}` could be in any of {}: write `$sourceDescriptions.NAME.{id}`",
                    sources.join(", ")
                ),
            );
        }
    }

    /// `operationPath`: `{$sourceDescriptions.NAME.url}#/paths/…` (and the forms published
    /// documents also write: `$sourceDescriptions.NAME#/paths/…`).
    fn operation_path(&mut self, scope: Scope, at: &str, path: &str) {
        if let Some(rest) = path.strip_prefix("$sourceDescriptions.") {
            let name = rest.split(['.', '#']).next().unwrap_or_default();
            self.source(at, name, false);
            return;
        }
        let names_source = embedded(path).is_ok_and(|parts| {
            parts.iter().any(|part| {
                matches!(
                    part,
                    crate::expression::Part::Expression(Expression::SourceDescriptions { .. })
                )
            })
        });
        if !names_source {
            self.problem(
                Rule::UnknownTarget,
                at,
                "an `operationPath` names its source: `{$sourceDescriptions.NAME.url}#/paths/~1pets/get`",
            );
        }
        self.read(scope, at, path, Reading::Embedded);
    }

    /// A workflow named by a step, an action or `dependsOn`: one of this document, or
    /// `$sourceDescriptions.NAME.ID` of an Arazzo source.
    fn workflow_reference(&mut self, at: &str, id: &str) {
        if let Some(rest) = id.strip_prefix("$sourceDescriptions.") {
            let source = rest.split('.').next().unwrap_or_default();
            self.source(at, source, true);
            return;
        }
        let known = self
            .document
            .workflows
            .iter()
            .map(|workflow| workflow.workflow_id.as_str());
        if !self
            .document
            .workflows
            .iter()
            .any(|workflow| workflow.workflow_id == id)
        {
            self.problems.push(
                Problem::new(
                    Rule::UnknownTarget,
                    at,
                    format!("there is no workflow `{id}` in this document"),
                )
                .suggest(nearest(id, known)),
            );
        }
    }

    /// A source description by name (`arazzo`: it must be an Arazzo document).
    fn source(&mut self, at: &str, name: &str, arazzo: bool) {
        let sources = &self.document.source_descriptions;
        match sources.iter().find(|source| source.name == name) {
            None => self.problems.push(
                Problem::new(
                    Rule::UnknownTarget,
                    at,
                    format!("there is no source description `{name}`"),
                )
                .suggest(nearest(
                    name,
                    sources.iter().map(|source| source.name.as_str()),
                )),
            ),
            Some(source) if arazzo && source.kind != Some(SourceKind::Arazzo) => self.problem(
                Rule::UnknownTarget,
                at,
                format!(
                    "`{name}` is not an Arazzo document (`type: arazzo`); workflows come from one"
                ),
            ),
            Some(_) => {}
        }
    }

    /// A step `dependsOn` entry.
    fn step_dependency(&mut self, scope: Scope, at: &str, dependency: &str) {
        let (Some(workflow), Some(step)) = (scope.workflow, scope.step) else {
            return;
        };
        if let Some(rest) = dependency.strip_prefix("$workflows.") {
            let (other, wanted) = rest.split_once(".steps.").unwrap_or((rest, ""));
            match self
                .document
                .workflows
                .iter()
                .find(|candidate| candidate.workflow_id == other)
            {
                Some(found)
                    if !found
                        .steps
                        .iter()
                        .any(|candidate| candidate.step_id == wanted) =>
                {
                    self.problem(
                        Rule::UnknownTarget,
                        at,
                        format!("workflow `{other}` has no step `{wanted}`"),
                    );
                }
                Some(_) => {}
                None => self.workflow_reference(at, other),
            }
        } else if let Some(rest) = dependency.strip_prefix("$sourceDescriptions.") {
            self.source(at, rest.split('.').next().unwrap_or_default(), true);
        } else if let Some(index) = self.step_index(workflow, dependency) {
            self.waits[workflow][step].insert(index);
        } else {
            self.unknown_step(at, workflow, dependency);
        }
    }

    fn step_index(&self, workflow: usize, id: &str) -> Option<usize> {
        self.document.workflows[workflow]
            .steps
            .iter()
            .position(|step| step.step_id == id)
    }

    fn unknown_step(&mut self, at: &str, workflow: usize, id: &str) {
        let workflow = &self.document.workflows[workflow];
        self.problems.push(
            Problem::new(
                Rule::UnknownTarget,
                at,
                format!("workflow `{}` has no step `{id}`", workflow.workflow_id),
            )
            .suggest(nearest(
                id,
                workflow.steps.iter().map(|step| step.step_id.as_str()),
            )),
        );
    }

    fn parameters(&mut self, scope: Scope, at: &str, parameters: &[Reusable<Parameter>]) {
        for (index, parameter) in parameters.iter().enumerate() {
            let here = format!("{at}/{index}");
            match parameter {
                Reusable::Reference(reference) => {
                    self.component(
                        scope,
                        &format!("{here}/reference"),
                        &reference.reference,
                        ComponentKind::Parameters,
                    );
                    if let Some(Value::String(text)) = &reference.value {
                        self.read(scope, &format!("{here}/value"), text, Reading::Value);
                    }
                }
                Reusable::Inline(parameter) => self.parameter_value(scope, &here, parameter),
            }
        }
    }

    fn parameter_value(&mut self, scope: Scope, at: &str, parameter: &Parameter) {
        self.selectable(scope, &format!("{at}/value"), &parameter.value);
    }

    fn selectable(&mut self, scope: Scope, at: &str, value: &Selectable) {
        match value {
            Selectable::Selector(selector) => {
                self.read(
                    scope,
                    &format!("{at}/context"),
                    &selector.context,
                    Reading::Expression,
                );
            }
            Selectable::Value(Value::String(text)) => self.read(scope, at, text, Reading::Value),
            Selectable::Value(_) => {}
        }
    }

    /// Every string in a payload may be (or embed) an expression.
    fn payload(&mut self, scope: Scope, at: &str, payload: &Value) {
        let mut pending = vec![(at.to_owned(), payload)];
        while let Some((here, value)) = pending.pop() {
            match value {
                Value::String(text) => self.read(scope, &here, text, Reading::Value),
                Value::Array(items) => {
                    for (index, item) in items.iter().enumerate() {
                        pending.push((format!("{here}/{index}"), item));
                    }
                }
                Value::Object(map) => {
                    for (key, item) in map {
                        pending.push((format!("{here}/{}", escape(key)), item));
                    }
                }
                _ => {}
            }
        }
    }

    fn criteria(&mut self, scope: Scope, at: &str, criteria: &[Criterion]) {
        for (index, criterion) in criteria.iter().enumerate() {
            let here = format!("{at}/{index}");
            if let Some(context) = &criterion.context {
                self.read(
                    scope,
                    &format!("{here}/context"),
                    context,
                    Reading::Expression,
                );
            }
            let simple = matches!(
                criterion.kind,
                None | Some(CriterionType::Named(CriterionKind::Simple))
            );
            let xpath = matches!(
                &criterion.kind,
                Some(CriterionType::Named(CriterionKind::Xpath))
                    | Some(CriterionType::Versioned(ExpressionType {
                        kind: ExpressionKind::Xpath,
                        ..
                    }))
            );
            let pointer = matches!(
                &criterion.kind,
                Some(CriterionType::Versioned(ExpressionType {
                    kind: ExpressionKind::Jsonpointer,
                    ..
                }))
            );
            if pointer || (xpath && !cfg!(feature = "xpath")) {
                let what = if pointer { "JSON Pointer" } else { "XPath" };
                self.problems.push(
                    Problem::new(
                        Rule::Unsupported,
                        format!("{here}/type"),
                        format!(
                            "{what} criteria are not evaluated by this build of wayline: a run fails where this one is checked; write it as a simple, regex or jsonpath criterion"
                        ),
                    )
                    .warning(),
                );
            }
            let reading = if simple {
                Reading::Condition
            } else {
                Reading::Embedded
            };
            self.read(
                scope,
                &format!("{here}/condition"),
                &criterion.condition,
                reading,
            );
        }
    }

    fn success_actions(&mut self, scope: Scope, at: &str, actions: &[Reusable<SuccessAction>]) {
        for (index, action) in actions.iter().enumerate() {
            let here = format!("{at}/{index}");
            match action {
                Reusable::Reference(reference) => {
                    self.component(
                        scope,
                        &format!("{here}/reference"),
                        &reference.reference,
                        ComponentKind::SuccessActions,
                    );
                }
                Reusable::Inline(action) => self.success_action(scope, &here, action),
            }
        }
    }

    fn failure_actions(&mut self, scope: Scope, at: &str, actions: &[Reusable<FailureAction>]) {
        for (index, action) in actions.iter().enumerate() {
            let here = format!("{at}/{index}");
            match action {
                Reusable::Reference(reference) => {
                    self.component(
                        scope,
                        &format!("{here}/reference"),
                        &reference.reference,
                        ComponentKind::FailureActions,
                    );
                }
                Reusable::Inline(action) => self.failure_action(scope, &here, action),
            }
        }
    }

    fn success_action(&mut self, scope: Scope, at: &str, action: &SuccessAction) {
        self.action_target(
            scope,
            at,
            action.workflow_id.as_deref(),
            action.step_id.as_deref(),
        );
        self.parameters(scope, &format!("{at}/parameters"), &action.parameters);
        self.criteria(scope, &format!("{at}/criteria"), &action.criteria);
    }

    fn failure_action(&mut self, scope: Scope, at: &str, action: &FailureAction) {
        self.action_target(
            scope,
            at,
            action.workflow_id.as_deref(),
            action.step_id.as_deref(),
        );
        self.parameters(scope, &format!("{at}/parameters"), &action.parameters);
        self.criteria(scope, &format!("{at}/criteria"), &action.criteria);
    }

    /// A `goto` (or `retry`) target: a step of the same workflow, or a workflow.
    fn action_target(
        &mut self,
        scope: Scope,
        at: &str,
        workflow: Option<&str>,
        step: Option<&str>,
    ) {
        if let Some(id) = workflow {
            self.workflow_reference(&format!("{at}/workflowId"), id);
        }
        if let (Some(id), Some(current)) = (step, scope.workflow)
            && self.step_index(current, id).is_none()
        {
            self.unknown_step(&format!("{at}/stepId"), current, id);
        }
    }

    fn outputs(
        &mut self,
        scope: Scope,
        at: &str,
        outputs: &indexmap::IndexMap<String, Selectable>,
    ) {
        for (name, value) in outputs {
            self.selectable(scope, &format!("{at}/{}", escape(name)), value);
        }
    }

    /// A Reusable Object's `reference`: `$components.KIND.NAME` of the kind its place takes.
    fn component(&mut self, scope: Scope, at: &str, reference: &str, kind: ComponentKind) {
        match Expression::parse(reference) {
            Ok(Expression::Components { kind: found, .. }) if found != kind => self.problem(
                Rule::UnknownTarget,
                at,
                format!(
                    "`{reference}` is not one of `$components.{}`, which this list takes",
                    component_name(kind)
                ),
            ),
            Ok(expression @ Expression::Components { .. }) => {
                self.reference(scope, at, &expression)
            }
            Ok(_) => self.problem(
                Rule::InvalidExpression,
                at,
                format!(
                    "a reference names a component: `$components.{}.NAME`",
                    component_name(kind)
                ),
            ),
            Err(error) => self.invalid(at, reference, &error),
        }
    }

    /// Parses `text` as `reading` says and checks what each expression reads.
    fn read(&mut self, scope: Scope, at: &str, text: &str, reading: Reading) {
        let parsed: Result<Vec<Expression>, ExpressionError> = match reading {
            Reading::Value => Template::parse(text)
                .map(|template| template.expressions().into_iter().cloned().collect()),
            Reading::Expression => Expression::parse(text).map(|expression| vec![expression]),
            Reading::Embedded => embedded(text).map(|parts| {
                parts
                    .into_iter()
                    .filter_map(|part| match part {
                        crate::expression::Part::Expression(expression) => Some(expression),
                        crate::expression::Part::Text(_) => None,
                    })
                    .collect()
            }),
            Reading::Condition => Condition::parse(text)
                .map(|condition| condition.expressions().into_iter().cloned().collect()),
        };
        match parsed {
            Ok(expressions) => {
                for expression in &expressions {
                    self.reference(scope, at, expression);
                }
            }
            Err(error) => self.invalid(at, text, &error),
        }
    }

    fn invalid(&mut self, at: &str, text: &str, error: &ExpressionError) {
        self.problem(Rule::InvalidExpression, at, format!("`{text}`: {error}"));
    }

    /// What `expression` reads must be declared where it is read.
    fn reference(&mut self, scope: Scope, at: &str, expression: &Expression) {
        let document = self.document;
        match expression {
            Expression::Steps { step, output } => {
                let Some(workflow) = scope.workflow else {
                    return; // a component: the step is the one that uses it
                };
                let Some(index) = self.step_index(workflow, step) else {
                    self.unknown_step(at, workflow, step);
                    return;
                };
                if let Some(output) = output {
                    let declared = &document.workflows[workflow].steps[index].outputs;
                    self.declared(
                        at,
                        &output.name,
                        declared.keys().map(String::as_str),
                        &format!("step `{step}`'s outputs"),
                    );
                }
                if let Some(current) = scope.step
                    && current != index
                {
                    self.waits[workflow][current].insert(index);
                }
            }
            Expression::Inputs(field) => {
                if let Some(workflow) = scope.workflow
                    && let Some(names) = self.input_names(&document.workflows[workflow])
                {
                    // A schema may let other inputs through: a warning, not an error.
                    let before = self.problems.len();
                    self.declared(
                        at,
                        &field.name,
                        names.iter().map(String::as_str),
                        "the workflow's inputs",
                    );
                    for problem in &mut self.problems[before..] {
                        problem.severity = crate::problem::Severity::Warning;
                    }
                }
            }
            Expression::WorkflowStep {
                workflow,
                step,
                output,
            } => {
                let workflows = &document.workflows;
                let Some(found) = workflows
                    .iter()
                    .find(|candidate| &candidate.workflow_id == workflow)
                else {
                    self.workflow_reference(at, workflow);
                    return;
                };
                let Some(target) = found
                    .steps
                    .iter()
                    .find(|candidate| &candidate.step_id == step)
                else {
                    let known = found.steps.iter().map(|step| step.step_id.as_str());
                    self.problems.push(
                        Problem::new(
                            Rule::UnknownTarget,
                            at,
                            format!("workflow `{workflow}` has no step `{step}`"),
                        )
                        .suggest(nearest(step, known)),
                    );
                    return;
                };
                if let Some(output) = output {
                    self.declared(
                        at,
                        &output.name,
                        target.outputs.keys().map(String::as_str),
                        &format!("step `{step}`'s outputs"),
                    );
                }
            }
            Expression::Outputs(field) => {
                let Some(workflow) = scope.workflow else {
                    return;
                };
                // In a step that calls a workflow, `$outputs` are the called workflow's (as
                // `$response` is an operation's); elsewhere the workflow's own.
                let called = scope.step.and_then(|step| {
                    document.workflows[workflow].steps[step]
                        .workflow_id
                        .as_deref()
                });
                let (outputs, what) = match called {
                    Some(id) if id.starts_with('$') => return, // in another document
                    Some(id) => match document
                        .workflows
                        .iter()
                        .find(|candidate| candidate.workflow_id == id)
                    {
                        Some(found) => (&found.outputs, format!("workflow `{id}`'s outputs")),
                        None => return, // reported as an unknown target
                    },
                    None => (
                        &document.workflows[workflow].outputs,
                        "the workflow's outputs".to_owned(),
                    ),
                };
                self.declared(at, &field.name, outputs.keys().map(String::as_str), &what);
            }
            Expression::Workflows {
                workflow,
                part,
                field,
            } => {
                let Some(found) = document
                    .workflows
                    .iter()
                    .find(|candidate| &candidate.workflow_id == workflow)
                else {
                    self.workflow_reference(at, workflow);
                    return;
                };
                match part {
                    WorkflowPart::Inputs => {
                        if let Some(names) = self.input_names(found) {
                            self.declared(
                                at,
                                &field.name,
                                names.iter().map(String::as_str),
                                &format!("workflow `{workflow}`'s inputs"),
                            );
                        }
                    }
                    WorkflowPart::Outputs => {
                        self.declared(
                            at,
                            &field.name,
                            found.outputs.keys().map(String::as_str),
                            &format!("workflow `{workflow}`'s outputs"),
                        );
                    }
                }
            }
            Expression::SourceDescriptions { source, .. } => self.source(at, source, false),
            Expression::Components { kind, name } => {
                let components = document.components.as_ref();
                let exists = components.is_some_and(|components| match kind {
                    ComponentKind::Parameters => components.parameters.contains_key(name),
                    ComponentKind::SuccessActions => components.success_actions.contains_key(name),
                    ComponentKind::FailureActions => components.failure_actions.contains_key(name),
                });
                if !exists {
                    let known: Vec<&str> = components
                        .map(|components| match kind {
                            ComponentKind::Parameters => {
                                components.parameters.keys().map(String::as_str).collect()
                            }
                            ComponentKind::SuccessActions => components
                                .success_actions
                                .keys()
                                .map(String::as_str)
                                .collect(),
                            ComponentKind::FailureActions => components
                                .failure_actions
                                .keys()
                                .map(String::as_str)
                                .collect(),
                        })
                        .unwrap_or_default();
                    self.problems.push(
                        Problem::new(
                            Rule::UnknownTarget,
                            at,
                            format!("there is no `$components.{}.{name}`", component_name(*kind)),
                        )
                        .suggest(nearest(name, known)),
                    );
                }
            }
            Expression::SelfUri if document.self_uri.is_none() => self.problem(
                Rule::UnknownReference,
                at,
                "`$self` reads the document's `$self`, which it does not have",
            ),
            _ => {}
        }
    }

    /// `name` (or a dotted path starting with a declared name) must be among `declared`, when
    /// anything is declared there.
    fn declared<'n>(
        &mut self,
        at: &str,
        name: &str,
        declared: impl Iterator<Item = &'n str> + Clone,
        what: &str,
    ) {
        let mut names = declared.clone().peekable();
        if names.peek().is_none() {
            self.problem(
                Rule::UnknownReference,
                at,
                format!("`{name}` is read from {what}, which declare nothing"),
            );
            return;
        }
        let found = declared.clone().any(|declared| {
            name == declared
                || name
                    .strip_prefix(declared)
                    .is_some_and(|rest| rest.starts_with('.'))
        });
        if !found {
            let list: Vec<&str> = declared.clone().collect();
            self.problems.push(
                Problem::new(
                    Rule::UnknownReference,
                    at,
                    format!("`{name}` is not among {what} ({})", list.join(", ")),
                )
                .suggest(nearest(name, declared)),
            );
        }
    }

    /// The input names a workflow's schema declares (`properties`, through a
    /// `#/components/inputs/NAME` `$ref`); `None` when it declares none to check against.
    fn input_names(&self, workflow: &Workflow) -> Option<Vec<String>> {
        let mut schema = workflow.inputs.as_ref()?;
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let name = reference.strip_prefix("#/components/inputs/")?;
            schema = self.document.components.as_ref()?.inputs.get(name)?;
        }
        let properties = schema.get("properties")?.as_object()?;
        Some(properties.keys().cloned().collect())
    }

    /// Steps that wait for each other, through `dependsOn` and `$steps` references.
    fn step_cycles(&mut self, index: usize, workflow: &Workflow) {
        let ids: Vec<&str> = workflow
            .steps
            .iter()
            .map(|step| step.step_id.as_str())
            .collect();
        let found = cycles(&self.waits[index]);
        if found.is_empty() {
            // No loop among what steps read and name: one through a control point (a step
            // reading one that runs only after a `goto`/`end` point after it) is still a loop.
            let components = self.document.components.as_ref();
            if let Err(deadlock) = crate::waits::Waits::of(workflow, components) {
                let first = workflow
                    .steps
                    .iter()
                    .position(|step| deadlock.0.first() == Some(&step.step_id))
                    .unwrap_or(0);
                self.problem(
                    Rule::Cycle,
                    format!("/workflows/{index}/steps/{first}"),
                    format!(
                        "{deadlock}: a step reads one that runs only after a control point (a step with actions, or a `goto` target) that comes after it"
                    ),
                );
            }
        }
        for cycle in found {
            let first = cycle[0];
            let path: Vec<&str> = cycle
                .iter()
                .chain([&first])
                .map(|step| ids[*step])
                .collect();
            self.problem(
                Rule::Cycle,
                format!("/workflows/{index}/steps/{first}"),
                format!(
                    "steps {} wait for each other (through `dependsOn` and `$steps` references); break the loop",
                    path.join(" → ")
                ),
            );
        }
    }

    /// Workflows whose `dependsOn` wait for each other.
    fn workflow_cycles(&mut self) {
        let workflows = &self.document.workflows;
        let waits: Vec<BTreeSet<usize>> = workflows
            .iter()
            .map(|workflow| {
                workflow
                    .depends_on
                    .iter()
                    .filter_map(|id| workflows.iter().position(|other| &other.workflow_id == id))
                    .collect()
            })
            .collect();
        for cycle in cycles(&waits) {
            let first = cycle[0];
            let path: Vec<&str> = cycle
                .iter()
                .chain([&first])
                .map(|index| workflows[*index].workflow_id.as_str())
                .collect();
            self.problem(
                Rule::Cycle,
                format!("/workflows/{first}/dependsOn"),
                format!(
                    "workflows {} depend on each other; break the loop",
                    path.join(" → ")
                ),
            );
        }
    }
}

fn component_name(kind: ComponentKind) -> &'static str {
    match kind {
        ComponentKind::Parameters => "parameters",
        ComponentKind::SuccessActions => "successActions",
        ComponentKind::FailureActions => "failureActions",
    }
}

/// Reports every id of `ids` seen before (`list` is where the list is, `field` the id's field).
fn unique<'a>(
    problems: &mut Vec<Problem>,
    ids: impl Iterator<Item = &'a str>,
    list: &str,
    field: &str,
    what: &str,
) {
    let mut seen = BTreeSet::new();
    for (index, id) in ids.enumerate() {
        if !seen.insert(id) {
            problems.push(Problem::new(
                Rule::DuplicateId,
                format!("{list}/{index}/{field}"),
                format!("another {what} is already called `{id}`; ids are unique"),
            ));
        }
    }
}
