//! What a workflow's run must be given: the inputs it declares and the ones its steps read, and
//! which of them are required. One rule for everyone who states it — the engine checking a
//! run's inputs, `wayline mcp serve` listing a workflow as a tool, the Arazzo export writing
//! its inputs schema — so that none accepts a run another refuses.
//!
//! An input is required when it is declared with neither a default nor `required: false`, or
//! when a step reads it (`$input.NAME` in a mapping, `inputs.NAME` in an expression) without
//! the workflow declaring it.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::expr::Expression;
use crate::reference::Reference;
use crate::workflow::{InputSpec, Workflow};

pub use crate::tool::any_value;

impl InputSpec {
    /// Whether a run must give this input: it has no default and is not marked
    /// `required: false` (a default always fills a missing value, even when `required: true`).
    ///
    /// ```
    /// use wayline_core::InputSpec;
    /// let mut spec = InputSpec::default();
    /// assert!(spec.is_required());
    /// spec.default = Some(serde_json::json!("eu"));
    /// assert!(!spec.is_required());
    /// ```
    pub fn is_required(&self) -> bool {
        self.default.is_none() && self.required != Some(false)
    }
}

/// The names of the inputs `workflow`'s steps read, in order of first appearance (step by step:
/// its expressions, `inputs.NAME`, then its input mappings, `$input.NAME` and `$inputs.NAME`).
/// An expression that does not compile reads nothing here (validation reports it).
///
/// ```
/// use wayline_core::{Step, Workflow};
/// let mut workflow = Workflow::new("w", "W");
/// let mut step = Step::new("a", "t").map("region", "$input.region");
/// step.when = Some("inputs.dry == false".into());
/// workflow.steps.push(step);
/// assert_eq!(wayline_core::inputs::read_by_steps(&workflow), ["dry", "region"]);
/// ```
pub fn read_by_steps(workflow: &Workflow) -> Vec<String> {
    // A set, not `Workflow::step` (a scan): a mapping is checked against every step.
    let ids: HashSet<&str> = workflow.steps.iter().map(|step| step.id.as_str()).collect();
    let is_step = |id: &str| ids.contains(id);
    let mut names: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut note = |name: &str| {
        if seen.insert(name.to_owned()) {
            names.push(name.to_owned());
        }
    };
    for step in &workflow.steps {
        for (_, source) in step.expressions() {
            if let Ok(expression) = Expression::compile(source) {
                expression.input_refs().iter().for_each(|name| note(name));
            }
        }
        for value in step.input_mapping.values() {
            if let Reference::Input { name } = Reference::parse(value, is_step) {
                note(name);
            }
        }
    }
    names
}

/// The inputs a run of `workflow` takes, as a JSON Schema object: every declared input (its
/// description and default kept) and every input a step reads, `required` by the rule of this
/// module (left out when nothing is required).
///
/// ```
/// use serde_json::json;
/// use wayline_core::{InputSpec, Step, Workflow};
/// let mut workflow = Workflow::new("w", "W");
/// let mut page = InputSpec::default();
/// page.default = Some(json!(1));
/// workflow.inputs.insert("page".into(), page);
/// workflow.steps.push(Step::new("a", "t").map("q", "$input.query"));
/// assert_eq!(
///     wayline_core::inputs::schema(&workflow),
///     json!({
///         "type": "object",
///         "properties": {"page": {"default": 1}, "query": {}},
///         "required": ["query"],
///     })
/// );
/// ```
pub fn schema(workflow: &Workflow) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, spec) in &workflow.inputs {
        let mut property = Map::new();
        if !spec.description.is_empty() {
            property.insert("description".into(), json!(spec.description));
        }
        if let Some(default) = &spec.default {
            property.insert("default".into(), default.clone());
        }
        if spec.is_required() {
            required.push(name.clone());
        }
        properties.insert(name.clone(), Value::Object(property));
    }
    for name in read_by_steps(workflow) {
        if !properties.contains_key(&name) {
            properties.insert(name.clone(), json!({}));
            required.push(name);
        }
    }
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Step;

    #[test]
    fn declared_inputs_are_required_without_a_default_unless_marked_optional() {
        let mut workflow = Workflow::new("w", "W");
        let spec = |default: Option<Value>, required: Option<bool>| InputSpec {
            default,
            required,
            ..InputSpec::default()
        };
        workflow.inputs.insert("plain".into(), spec(None, None));
        workflow
            .inputs
            .insert("optional".into(), spec(None, Some(false)));
        workflow
            .inputs
            .insert("defaulted".into(), spec(Some(json!(2)), Some(true)));
        workflow
            .inputs
            .insert("marked".into(), spec(None, Some(true)));
        workflow
            .steps
            .push(Step::new("a", "t").map("x", "$inputs.undeclared"));
        assert_eq!(
            schema(&workflow)["required"],
            json!(["plain", "marked", "undeclared"])
        );
    }
}
