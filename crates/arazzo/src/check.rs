//! The structural rules of Arazzo 1.0.1 and 1.1 — what the specification's JSON Schema says,
//! and the field rules its text adds (a parameter of an operation needs `in`, a unique
//! parameter is its `name` and `in`) — checked on the parsed document before it becomes the
//! model, so that every problem is reported at once with the rule it breaks and where.
//!
//! A 1.0 document is held to 1.0: what 1.1 added (AsyncAPI steps, step `dependsOn` and
//! `timeout`, selectors, `querystring` parameters, `$self`, action parameters) is reported as
//! newer than the document.

use serde_json::{Map, Value};
use wayline_core::canonical::canonical_json;
use wayline_core::document::nearest;

use crate::positions::escape;
use crate::problem::{Problem, Rule};

/// The specification versions this library reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Version {
    V1_0,
    V1_1,
}

/// Every structural problem of `document` (empty: it can become the model).
pub(crate) fn check(document: &Value) -> Vec<Problem> {
    let mut checker = Checker {
        problems: Vec::new(),
        version: Version::V1_1,
    };
    checker.root(document);
    checker.problems
}

struct Checker {
    problems: Vec<Problem>,
    version: Version,
}

/// An object being checked: its fields and where it is.
struct Object<'a> {
    map: &'a Map<String, Value>,
    pointer: String,
}

impl Object<'_> {
    fn at(&self, field: &str) -> String {
        format!("{}/{}", self.pointer, escape(field))
    }

    fn get(&self, field: &str) -> Option<&Value> {
        self.map.get(field)
    }

    fn has(&self, field: &str) -> bool {
        self.map.contains_key(field)
    }
}

const ROOT: &[&str] = &[
    "arazzo",
    "$self",
    "info",
    "sourceDescriptions",
    "workflows",
    "components",
];
const INFO: &[&str] = &["title", "summary", "description", "version"];
const SOURCE: &[&str] = &["name", "url", "type"];
const WORKFLOW: &[&str] = &[
    "workflowId",
    "summary",
    "description",
    "inputs",
    "dependsOn",
    "steps",
    "successActions",
    "failureActions",
    "outputs",
    "parameters",
];
const STEP: &[&str] = &[
    "stepId",
    "description",
    "operationId",
    "operationPath",
    "workflowId",
    "channelPath",
    "action",
    "correlationId",
    "timeout",
    "dependsOn",
    "parameters",
    "requestBody",
    "successCriteria",
    "onSuccess",
    "onFailure",
    "outputs",
];
const PARAMETER: &[&str] = &["name", "in", "value"];
const REUSABLE: &[&str] = &["reference", "value"];
const REQUEST_BODY: &[&str] = &["contentType", "payload", "replacements"];
const REPLACEMENT: &[&str] = &["target", "targetSelectorType", "value"];
const CRITERION: &[&str] = &["context", "condition", "type"];
const SELECTOR: &[&str] = &["context", "selector", "type"];
const SUCCESS_ACTION: &[&str] = &[
    "name",
    "type",
    "workflowId",
    "stepId",
    "parameters",
    "criteria",
];
const FAILURE_ACTION: &[&str] = &[
    "name",
    "type",
    "workflowId",
    "stepId",
    "parameters",
    "retryAfter",
    "retryLimit",
    "criteria",
];
const COMPONENTS: &[&str] = &["inputs", "parameters", "successActions", "failureActions"];

/// Where a parameter list is, which decides whether its parameters need `in`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Parameters {
    /// A step calling an operation: `in` is required.
    Operation,
    /// A workflow, a step calling a workflow, an action: `in` only where it applies.
    Other,
}

impl Checker {
    fn problem(&mut self, rule: Rule, pointer: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem::new(rule, pointer, message));
    }

    /// Reports `what` at `pointer` as 1.1's when the document is 1.0.
    fn newer(&mut self, pointer: &str, what: &str) {
        if self.version == Version::V1_0 {
            self.problem(
                Rule::NewerThanDocument,
                pointer,
                format!("{what} is Arazzo 1.1; this document says it is 1.0 (set `arazzo: 1.1.0`, or remove it)"),
            );
        }
    }

    /// `value` as an object with `known` fields (and `x-` extensions when `extensions`).
    fn object<'a>(
        &mut self,
        value: &'a Value,
        pointer: &str,
        what: &str,
        known: &[&str],
        extensions: bool,
    ) -> Option<Object<'a>> {
        let Some(map) = value.as_object() else {
            self.problem(
                Rule::NotAnObject,
                pointer,
                format!("{what} must be a mapping, not {}", kind_of(value)),
            );
            return None;
        };
        for key in map.keys() {
            if known.contains(&key.as_str()) || (extensions && key.starts_with("x-")) {
                continue;
            }
            let hint = if extensions {
                " (extensions start with `x-`)"
            } else {
                ""
            };
            self.problems.push(
                Problem::new(
                    Rule::UnknownField,
                    format!("{pointer}/{}", escape(key)),
                    format!(
                        "unknown field `{key}` in {what}; known fields: {}{hint}",
                        known.join(", ")
                    ),
                )
                .suggest(nearest(key, known.iter().copied())),
            );
        }
        Some(Object {
            map,
            pointer: pointer.to_owned(),
        })
    }

    fn required(&mut self, object: &Object<'_>, fields: &[&str], what: &str) {
        let inside = format!("{}/", object.pointer);
        for field in fields {
            // A misspelt field is reported once, as unknown with its suggestion.
            let misspelt = self.problems.iter().any(|problem| {
                problem.rule == Rule::UnknownField
                    && problem.pointer.starts_with(&inside)
                    && problem.suggestion.as_deref() == Some(*field)
            });
            if !object.has(field) && !misspelt {
                self.problem(
                    Rule::RequiredField,
                    object.pointer.clone(),
                    format!("{what} needs `{field}`"),
                );
            }
        }
    }

    /// The string in `field`, when there is one; a value of another type is reported.
    fn string<'a>(&mut self, object: &Object<'a>, field: &str) -> Option<&'a str> {
        let value = object.map.get(field)?;
        match value.as_str() {
            Some(text) => Some(text),
            None => {
                self.problem(
                    Rule::WrongType,
                    object.at(field),
                    format!("`{field}` must be a string, not {}", kind_of(value)),
                );
                None
            }
        }
    }

    /// The list in `field`: items unique, at least `min` of them.
    fn list<'a>(&mut self, object: &Object<'a>, field: &str, min: usize) -> Option<&'a [Value]> {
        let value = object.map.get(field)?;
        let Some(items) = value.as_array() else {
            self.problem(
                Rule::WrongType,
                object.at(field),
                format!("`{field}` must be a list, not {}", kind_of(value)),
            );
            return None;
        };
        if items.len() < min {
            self.problem(
                Rule::EmptyList,
                object.at(field),
                format!("`{field}` needs at least {min} item; remove it or add one"),
            );
        }
        // By a canonical text of each item (keys sorted, as JSON equality ignores their order):
        // a list of thousands of steps is checked in linear time.
        let mut seen = std::collections::HashSet::new();
        for (index, item) in items.iter().enumerate() {
            if !seen.insert(canonical_json(item)) {
                self.problem(
                    Rule::DuplicateItem,
                    format!("{}/{index}", object.at(field)),
                    format!("`{field}` has this item twice; remove the copy"),
                );
            }
        }
        Some(items)
    }

    /// `field`'s value, which must be one of `allowed`.
    fn one_of(&mut self, object: &Object<'_>, field: &str, allowed: &[&str]) -> Option<String> {
        let text = self.string(object, field)?;
        if allowed.contains(&text) {
            return Some(text.to_owned());
        }
        self.problems.push(
            Problem::new(
                Rule::NotAllowedValue,
                object.at(field),
                format!("`{field}: {text}` is not one of {}", allowed.join(", ")),
            )
            .suggest(nearest(text, allowed.iter().copied())),
        );
        None
    }

    fn root(&mut self, document: &Value) {
        // An API description given where a workflow document belongs: say so, once.
        if let Some(format) = ["openapi", "swagger", "asyncapi"]
            .into_iter()
            .find(|format| document.get(format).is_some() && document.get("arazzo").is_none())
        {
            let name = if format == "asyncapi" {
                "an AsyncAPI"
            } else {
                "an OpenAPI"
            };
            self.problem(
                Rule::RequiredField,
                "",
                format!("this is {name} description, not an Arazzo document (it has `{format}`, not `arazzo`); give it as a source description of one"),
            );
            return;
        }
        let Some(root) = self.object(document, "", "an Arazzo document", ROOT, true) else {
            return;
        };
        match root.get("arazzo") {
            Some(Value::String(version)) => match parse_version(version) {
                Some(version) => self.version = version,
                None => self.problem(
                    Rule::UnsupportedVersion,
                    root.at("arazzo"),
                    format!("`arazzo: {version}` is not a version this reads; write 1.0.1 or 1.1.0"),
                ),
            },
            Some(other) => self.problem(
                Rule::UnsupportedVersion,
                root.at("arazzo"),
                format!(
                    "`arazzo: {other}` is not a version: write it as a string, \"1.0.1\" or \"1.1.0\""
                ),
            ),
            None => {}
        }
        self.required(
            &root,
            &["arazzo", "info", "sourceDescriptions", "workflows"],
            "an Arazzo document",
        );
        if root.has("$self") {
            self.newer(&root.at("$self"), "`$self`");
            if let Some(uri) = self.string(&root, "$self")
                && uri.contains('#')
            {
                self.problem(
                    Rule::SelfFragment,
                    root.at("$self"),
                    "`$self` must not have a fragment (`#…`); name the document, not a place in it",
                );
            }
        }
        if let Some(info) = root.get("info") {
            self.info(info, &root.at("info"));
        }
        if let Some(sources) = self.list(&root, "sourceDescriptions", 1) {
            for (index, source) in sources.iter().enumerate() {
                self.source(
                    source,
                    &format!("{}/{index}", root.at("sourceDescriptions")),
                );
            }
        }
        if let Some(workflows) = self.list(&root, "workflows", 1) {
            for (index, workflow) in workflows.iter().enumerate() {
                self.workflow(workflow, &format!("{}/{index}", root.at("workflows")));
            }
        }
        if let Some(components) = root.get("components") {
            self.components(components, &root.at("components"));
        }
    }

    fn info(&mut self, value: &Value, pointer: &str) {
        let Some(info) = self.object(value, pointer, "`info`", INFO, true) else {
            return;
        };
        self.required(&info, &["title", "version"], "`info`");
        for field in INFO {
            self.string(&info, field);
        }
    }

    fn source(&mut self, value: &Value, pointer: &str) {
        let Some(source) = self.object(value, pointer, "a source description", SOURCE, true) else {
            return;
        };
        self.required(&source, &["name", "url"], "a source description");
        if let Some(name) = self.string(&source, "name")
            && !is_name(name, false)
        {
            self.problem(
                Rule::InvalidName,
                source.at("name"),
                format!("source name `{name}` may use only letters, digits, `_` and `-`"),
            );
        }
        self.string(&source, "url");
        if let Some(kind) = self.one_of(&source, "type", &["arazzo", "openapi", "asyncapi"])
            && kind == "asyncapi"
        {
            self.newer(&source.at("type"), "an AsyncAPI source");
        }
    }

    fn workflow(&mut self, value: &Value, pointer: &str) {
        let Some(workflow) = self.object(value, pointer, "a workflow", WORKFLOW, true) else {
            return;
        };
        self.required(&workflow, &["workflowId", "steps"], "a workflow");
        for field in ["workflowId", "summary", "description"] {
            self.string(&workflow, field);
        }
        if let Some(inputs) = workflow.get("inputs")
            && !inputs.is_object()
            && !inputs.is_boolean()
        {
            self.problem(
                Rule::WrongType,
                workflow.at("inputs"),
                format!(
                    "`inputs` must be a JSON Schema (a mapping), not {}",
                    kind_of(inputs)
                ),
            );
        }
        if let Some(depends) = self.list(&workflow, "dependsOn", 0) {
            for (index, item) in depends.iter().enumerate() {
                if !item.is_string() {
                    self.problem(
                        Rule::WrongType,
                        format!("{}/{index}", workflow.at("dependsOn")),
                        "`dependsOn` lists workflow ids (strings)",
                    );
                }
            }
        }
        if let Some(steps) = self.list(&workflow, "steps", 1) {
            for (index, step) in steps.iter().enumerate() {
                self.step(step, &format!("{}/{index}", workflow.at("steps")));
            }
        }
        self.actions(&workflow, "successActions", true);
        self.actions(&workflow, "failureActions", false);
        self.outputs(&workflow);
        self.parameters(&workflow, Parameters::Other);
    }

    fn step(&mut self, value: &Value, pointer: &str) {
        let Some(step) = self.object(value, pointer, "a step", STEP, true) else {
            return;
        };
        self.required(&step, &["stepId"], "a step");
        for field in [
            "stepId",
            "description",
            "operationId",
            "operationPath",
            "workflowId",
            "channelPath",
        ] {
            self.string(&step, field);
        }
        let calls = if step.has("workflowId") {
            Parameters::Other
        } else {
            Parameters::Operation
        };
        self.step_target(&step);
        if step.has("timeout") {
            self.newer(&step.at("timeout"), "a step's `timeout`");
            if !step.get("timeout").is_some_and(|value| value.is_u64()) {
                self.problem(
                    Rule::WrongType,
                    step.at("timeout"),
                    "`timeout` is a whole number of milliseconds",
                );
            }
        }
        if step.has("dependsOn") {
            self.newer(&step.at("dependsOn"), "a step's `dependsOn`");
        }
        if let Some(depends) = self.list(&step, "dependsOn", 1) {
            for (index, item) in depends.iter().enumerate() {
                let at = format!("{}/{index}", step.at("dependsOn"));
                match item.as_str() {
                    Some(reference) if is_step_dependency(reference) => {}
                    _ => self.problem(
                        Rule::DependsOnReference,
                        at,
                        format!(
                            "`dependsOn` entry {item} names no step: write a step id of this workflow, `$workflows.WORKFLOW.steps.STEP` or `$sourceDescriptions.NAME.WORKFLOW.steps.STEP`"
                        ),
                    ),
                }
            }
        }
        self.parameters(&step, calls);
        if let Some(body) = step.get("requestBody") {
            self.request_body(body, &step.at("requestBody"));
        }
        self.criteria(&step, "successCriteria", 1);
        self.actions(&step, "onSuccess", true);
        self.actions(&step, "onFailure", false);
        self.outputs(&step);
    }

    /// A step calls one thing: an OpenAPI operation (`operationId` or `operationPath`), an
    /// AsyncAPI operation or channel (with `action`), or a workflow (`workflowId`).
    fn step_target(&mut self, step: &Object<'_>) {
        let present = |fields: &[&'static str]| -> Vec<&'static str> {
            fields
                .iter()
                .copied()
                .filter(|field| step.has(field))
                .collect()
        };
        if step.has("workflowId") {
            for field in present(&[
                "operationId",
                "operationPath",
                "channelPath",
                "action",
                "correlationId",
            ]) {
                self.problem(
                    Rule::StepTarget,
                    step.at(field),
                    format!("a step that calls a workflow (`workflowId`) cannot also have `{field}`; keep one target"),
                );
            }
            return;
        }
        let is_async = !present(&["action", "channelPath", "correlationId"]).is_empty();
        if is_async {
            for field in ["action", "channelPath", "correlationId"] {
                if step.has(field) {
                    self.newer(&step.at(field), &format!("`{field}` (an AsyncAPI step)"));
                }
            }
            let action = if step.has("action") {
                self.one_of(step, "action", &["send", "receive"])
            } else {
                self.problem(
                    Rule::AsyncAction,
                    step.pointer.clone(),
                    "an AsyncAPI step (it has `channelPath` or `correlationId`) needs `action: send` or `action: receive`",
                );
                None
            };
            if step.has("correlationId")
                && action.as_deref().is_some_and(|action| action != "receive")
            {
                self.problem(
                    Rule::AsyncAction,
                    step.at("correlationId"),
                    "`correlationId` belongs to steps that receive (`action: receive`)",
                );
            }
            if step.has("operationPath") {
                self.problem(
                    Rule::StepTarget,
                    step.at("operationPath"),
                    "`operationPath` names an OpenAPI operation; an AsyncAPI step uses `operationId` or `channelPath`",
                );
            }
            match present(&["operationId", "channelPath"]).as_slice() {
                [_] => {}
                [] => self.problem(
                    Rule::StepTarget,
                    step.pointer.clone(),
                    "an AsyncAPI step needs `operationId` or `channelPath`",
                ),
                _ => self.problem(
                    Rule::StepTarget,
                    step.at("channelPath"),
                    "an AsyncAPI step has `operationId` or `channelPath`, not both",
                ),
            }
            return;
        }
        match present(&["operationId", "operationPath"]).as_slice() {
            [_] => {}
            [] => self.problem(
                Rule::StepTarget,
                step.pointer.clone(),
                "a step needs something to call: `operationId`, `operationPath` or `workflowId`",
            ),
            _ => self.problem(
                Rule::StepTarget,
                step.at("operationPath"),
                "a step has `operationId` or `operationPath`, not both",
            ),
        }
    }

    /// `parameters` of a workflow, step or action: parameters or references, none twice.
    fn parameters(&mut self, object: &Object<'_>, calls: Parameters) {
        let Some(items) = self.list(object, "parameters", 0) else {
            return;
        };
        let mut seen: Vec<(&str, Option<&str>)> = Vec::new();
        for (index, item) in items.iter().enumerate() {
            let at = format!("{}/{index}", object.at("parameters"));
            if item.get("reference").is_some() {
                self.reusable(item, &at);
                continue;
            }
            self.parameter(item, &at, calls == Parameters::Operation);
            if let Some(name) = item.get("name").and_then(Value::as_str) {
                let location = item.get("in").and_then(Value::as_str);
                if seen.contains(&(name, location)) && !items[..index].contains(item) {
                    self.problem(
                        Rule::DuplicateItem,
                        at,
                        format!("parameter `{name}` is given twice (a parameter is its `name` and `in`); keep one"),
                    );
                }
                seen.push((name, location));
            }
        }
    }

    fn parameter(&mut self, value: &Value, pointer: &str, needs_location: bool) {
        let Some(parameter) = self.object(value, pointer, "a parameter", PARAMETER, true) else {
            return;
        };
        self.required(&parameter, &["name", "value"], "a parameter");
        self.string(&parameter, "name");
        if parameter.has("in") {
            let location = self.one_of(
                &parameter,
                "in",
                &[
                    "path",
                    "query",
                    "querystring",
                    "header",
                    "cookie",
                    "channel",
                ],
            );
            if let Some(location @ ("querystring" | "channel")) = location.as_deref() {
                self.newer(&parameter.at("in"), &format!("`in: {location}`"));
            }
        } else if needs_location {
            self.problem(
                Rule::ParameterLocation,
                parameter.pointer.clone(),
                "a parameter of an operation needs `in` (path, query, querystring, header, cookie or channel)",
            );
        }
        if let Some(value) = parameter.get("value") {
            self.value_or_selector(value, &parameter.at("value"), false);
        }
    }

    /// A value that 1.1 lets be a selector: any object there must be one. In 1.0 any value
    /// goes (`strings_only`: 1.1's payload replacements take only strings and selectors).
    fn value_or_selector(&mut self, value: &Value, pointer: &str, strings_only: bool) {
        if self.version == Version::V1_0 {
            return;
        }
        match value {
            Value::Object(_) => self.selector(value, pointer),
            Value::String(_) => {}
            _ if strings_only => self.problem(
                Rule::WrongType,
                pointer,
                format!(
                    "this value must be a string or a selector, not {}",
                    kind_of(value)
                ),
            ),
            _ => {}
        }
    }

    fn reusable(&mut self, value: &Value, pointer: &str) {
        let Some(reusable) = self.object(value, pointer, "a reusable object", REUSABLE, false)
        else {
            return;
        };
        self.string(&reusable, "reference");
    }

    fn selector(&mut self, value: &Value, pointer: &str) {
        self.newer(pointer, "a selector object");
        let Some(selector) = self.object(value, pointer, "a selector", SELECTOR, true) else {
            return;
        };
        self.required(&selector, &["context", "selector", "type"], "a selector");
        self.string(&selector, "context");
        self.string(&selector, "selector");
        if let Some(kind) = selector.get("type") {
            self.selector_type(kind, &selector.at("type"));
        }
    }

    /// `jsonpointer`, `jsonpath` or `xpath`, or an expression type object.
    fn selector_type(&mut self, value: &Value, pointer: &str) {
        match value {
            Value::String(name) => {
                const NAMES: [&str; 3] = ["jsonpointer", "jsonpath", "xpath"];
                if !NAMES.contains(&name.as_str()) {
                    self.problems.push(
                        Problem::new(
                            Rule::NotAllowedValue,
                            pointer,
                            format!("selector type `{name}` is not one of {}", NAMES.join(", ")),
                        )
                        .suggest(nearest(name, NAMES)),
                    );
                }
            }
            _ => self.expression_type(value, pointer),
        }
    }

    fn expression_type(&mut self, value: &Value, pointer: &str) {
        // The schema lets an expression type object carry other fields; so do we.
        let Some(map) = value.as_object() else {
            self.problem(
                Rule::WrongType,
                pointer,
                format!(
                    "`type` must be a name or a mapping of `type` and `version`, not {}",
                    kind_of(value)
                ),
            );
            return;
        };
        let object = Object {
            map,
            pointer: pointer.to_owned(),
        };
        self.required(&object, &["type", "version"], "an expression type");
        let kind = self.one_of(&object, "type", &["jsonpath", "xpath", "jsonpointer"]);
        let version = self.string(&object, "version");
        let allowed: &[&str] = match kind.as_deref() {
            Some("jsonpath") => &["rfc9535", "draft-goessner-dispatch-jsonpath-00"],
            Some("xpath") => &["xpath-10", "xpath-20", "xpath-30", "xpath-31"],
            Some("jsonpointer") => &["rfc6901"],
            _ => return,
        };
        if let (Some(kind), Some(version)) = (kind, version)
            && !allowed.contains(&version)
        {
            self.problems.push(
                Problem::new(
                    Rule::ExpressionTypeVersion,
                    object.at("version"),
                    format!(
                        "`{version}` is not a version of {kind}; use {}",
                        allowed.join(", ")
                    ),
                )
                .suggest(nearest(version, allowed.iter().copied())),
            );
        }
    }

    fn request_body(&mut self, value: &Value, pointer: &str) {
        let Some(body) = self.object(value, pointer, "a request body", REQUEST_BODY, true) else {
            return;
        };
        self.string(&body, "contentType");
        if let Some(replacements) = self.list(&body, "replacements", 0) {
            for (index, replacement) in replacements.iter().enumerate() {
                self.replacement(replacement, &format!("{}/{index}", body.at("replacements")));
            }
        }
    }

    fn replacement(&mut self, value: &Value, pointer: &str) {
        let Some(replacement) =
            self.object(value, pointer, "a payload replacement", REPLACEMENT, true)
        else {
            return;
        };
        self.required(&replacement, &["target", "value"], "a payload replacement");
        self.string(&replacement, "target");
        if let Some(kind) = replacement.get("targetSelectorType") {
            self.newer(
                &replacement.at("targetSelectorType"),
                "`targetSelectorType`",
            );
            self.selector_type(kind, &replacement.at("targetSelectorType"));
        }
        if let Some(value) = replacement.get("value") {
            self.value_or_selector(value, &replacement.at("value"), true);
        }
    }

    fn criteria(&mut self, object: &Object<'_>, field: &str, min: usize) {
        let Some(items) = self.list(object, field, min) else {
            return;
        };
        for (index, item) in items.iter().enumerate() {
            self.criterion(item, &format!("{}/{index}", object.at(field)));
        }
    }

    fn criterion(&mut self, value: &Value, pointer: &str) {
        let Some(criterion) = self.object(value, pointer, "a criterion", CRITERION, true) else {
            return;
        };
        self.required(&criterion, &["condition"], "a criterion");
        self.string(&criterion, "condition");
        self.string(&criterion, "context");
        match criterion.get("type") {
            None => {}
            Some(Value::String(_)) => {
                self.one_of(
                    &criterion,
                    "type",
                    &["simple", "regex", "jsonpath", "xpath"],
                );
            }
            Some(kind) => self.expression_type(kind, &criterion.at("type")),
        }
        if criterion.has("type") && !criterion.has("context") {
            self.problem(
                Rule::CriterionContext,
                criterion.at("type"),
                "a criterion with `type` needs `context`: the runtime expression it applies to (`$response.body`)",
            );
        }
    }

    /// `successActions`/`onSuccess` (`success`) or `failureActions`/`onFailure`.
    fn actions(&mut self, object: &Object<'_>, field: &str, success: bool) {
        let Some(items) = self.list(object, field, 0) else {
            return;
        };
        for (index, item) in items.iter().enumerate() {
            let at = format!("{}/{index}", object.at(field));
            if item.get("reference").is_some() {
                self.reusable(item, &at);
            } else {
                self.action(item, &at, success);
            }
        }
    }

    fn action(&mut self, value: &Value, pointer: &str, success: bool) {
        let (what, known, kinds): (&str, &[&str], &[&str]) = if success {
            ("a success action", SUCCESS_ACTION, &["end", "goto"])
        } else {
            (
                "a failure action",
                FAILURE_ACTION,
                &["end", "goto", "retry"],
            )
        };
        let Some(action) = self.object(value, pointer, what, known, true) else {
            return;
        };
        self.required(&action, &["name", "type"], what);
        self.string(&action, "name");
        let kind = self.one_of(&action, "type", kinds);
        let workflow = self.string(&action, "workflowId").is_some();
        let step = self.string(&action, "stepId").is_some();
        if kind.as_deref() == Some("goto") && workflow == step {
            self.problem(
                Rule::ActionTarget,
                action.pointer.clone(),
                "a `goto` names exactly one of `stepId` and `workflowId`",
            );
        }
        if action.has("parameters") {
            self.newer(&action.at("parameters"), "an action's `parameters`");
            if !workflow {
                self.problem(
                    Rule::ActionTarget,
                    action.at("parameters"),
                    "`parameters` of an action go to the workflow it names: add `workflowId`",
                );
            }
            self.parameters(&action, Parameters::Other);
        }
        for field in ["retryAfter", "retryLimit"] {
            let Some(value) = action.get(field) else {
                continue;
            };
            let whole = field == "retryLimit";
            let fits = if whole {
                value.is_u64() || value.as_i64().is_some()
            } else {
                value.is_number()
            };
            if !fits {
                self.problem(
                    Rule::WrongType,
                    action.at(field),
                    format!(
                        "`{field}` must be {}, not {}",
                        if whole {
                            "a whole number"
                        } else {
                            "a number of seconds"
                        },
                        kind_of(value)
                    ),
                );
            } else if value.as_f64().is_some_and(|number| number < 0.0) {
                self.problem(
                    Rule::NegativeNumber,
                    action.at(field),
                    format!("`{field}` cannot be negative"),
                );
            }
        }
        self.criteria(&action, "criteria", usize::from(success));
    }

    /// The entries of a mapping from names (outputs, components) to values, each name held
    /// to `^[a-zA-Z0-9.\-_]+$`, with its pointer.
    fn named<'a>(
        &mut self,
        value: &'a Value,
        pointer: &str,
        what: &str,
    ) -> Vec<(&'a Value, String)> {
        let Some(entries) = value.as_object() else {
            self.problem(
                Rule::WrongType,
                pointer,
                format!("{what} must be a mapping of names, not {}", kind_of(value)),
            );
            return Vec::new();
        };
        let mut named = Vec::new();
        for (name, entry) in entries {
            let at = format!("{pointer}/{}", escape(name));
            if !is_name(name, true) {
                self.problem(
                    Rule::InvalidName,
                    at.clone(),
                    format!(
                        "the name `{name}` in {what} may use only letters, digits, `.`, `-` and `_`"
                    ),
                );
            }
            named.push((entry, at));
        }
        named
    }

    fn outputs(&mut self, object: &Object<'_>) {
        let Some(value) = object.get("outputs") else {
            return;
        };
        for (output, at) in self.named(value, &object.at("outputs"), "`outputs`") {
            match output {
                Value::String(_) => {}
                Value::Object(_) => self.selector(output, &at),
                other => self.problem(
                    Rule::WrongType,
                    at,
                    format!(
                        "an output is a runtime expression (a string), not {}",
                        kind_of(other)
                    ),
                ),
            }
        }
    }

    fn components(&mut self, value: &Value, pointer: &str) {
        let Some(components) = self.object(value, pointer, "`components`", COMPONENTS, true) else {
            return;
        };
        for field in COMPONENTS {
            let Some(value) = components.get(field) else {
                continue;
            };
            let what = format!("`components.{field}`");
            for (entry, entry_at) in self.named(value, &components.at(field), &what) {
                match *field {
                    "inputs" if !entry.is_object() && !entry.is_boolean() => self.problem(
                        Rule::WrongType,
                        entry_at,
                        "an input component is a JSON Schema (a mapping)",
                    ),
                    "inputs" => {}
                    "parameters" => self.parameter(entry, &entry_at, false),
                    "successActions" => self.action(entry, &entry_at, true),
                    _ => self.action(entry, &entry_at, false),
                }
            }
        }
    }
}

/// The version an `arazzo` field names, if this library reads it (`1.0.x`, `1.1.x`, with
/// an optional pre-release suffix).
pub(crate) fn parse_version(text: &str) -> Option<Version> {
    let rest = text.strip_prefix("1.")?;
    let (minor, patch) = rest.split_once('.')?;
    let patch = patch.split_once('-').map_or(
        patch,
        |(patch, suffix)| {
            if suffix.is_empty() { "" } else { patch }
        },
    );
    if patch.is_empty() || !patch.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    match minor {
        "0" => Some(Version::V1_0),
        "1" => Some(Version::V1_1),
        _ => None,
    }
}

/// Whether `name` matches `^[A-Za-z0-9_\-]+$` (or, `dots`, `^[a-zA-Z0-9\.\-_]+$`).
fn is_name(name: &str, dots: bool) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || (dots && c == '.'))
}

/// A step `dependsOn` entry: a step id (not starting with `$`),
/// `$workflows.W.steps.S` or `$sourceDescriptions.N.W.steps.S`.
fn is_step_dependency(reference: &str) -> bool {
    let Some(expression) = reference.strip_prefix('$') else {
        return !reference.is_empty();
    };
    let parts: Vec<&str> = expression.split('.').collect();
    let named = |part: &&str| !part.is_empty();
    match parts.as_slice() {
        ["workflows", _, "steps", _] => parts.iter().all(named),
        ["sourceDescriptions", _, _, "steps", _] => parts.iter().all(named),
        _ => false,
    }
}

/// A value's JSON type, for messages.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_as_the_schemas_patterns_say() {
        assert_eq!(parse_version("1.0.1"), Some(Version::V1_0));
        assert_eq!(parse_version("1.1.0"), Some(Version::V1_1));
        assert_eq!(parse_version("1.1.0-rc1"), Some(Version::V1_1));
        for refused in ["1.1", "2.0.0", "1.2.0", "1.1.x", "1.1.0-", "v1.1.0", ""] {
            assert_eq!(parse_version(refused), None, "{refused}");
        }
    }

    #[test]
    fn step_dependencies_take_the_three_shapes() {
        for accepted in [
            "sendEvent",
            "$workflows.w.steps.s",
            "$sourceDescriptions.d.w.steps.s",
        ] {
            assert!(is_step_dependency(accepted), "{accepted}");
        }
        for refused in [
            "$steps.sendEvent",
            "$workflows.w.s",
            "$workflows..steps.s",
            "",
        ] {
            assert!(!is_step_dependency(refused), "{refused}");
        }
    }
}
