//! The explorer's current state, in the session file's shape: the resources it knows (by type,
//! then by name: `clusters: {cluster_1: {id, state, parent_id, attributes}}`) and its variables
//! (`cluster_1: "12345678"`, `region_id: ...`), and the rules that update it after a step.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use wayline_registry::openapi::{ApiSpec, Location, Operation, STATE_FIELDS};

use crate::intent::{Verb, operation_resource, operation_verb};
use crate::suggest::changing_state;

/// One resource.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Resource {
    /// Its id.
    pub id: String,
    /// Its state, as last seen (`CREATING`, `ACTIVE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The id of the resource it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Fields seen in responses.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub attributes: IndexMap<String, Value>,
}

/// What the explorer knows.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ExploreState {
    /// Resource type (plural: `clusters`) → name (`cluster_1`) → resource.
    #[serde(default)]
    pub resources: IndexMap<String, IndexMap<String, Resource>>,
    /// Saved values.
    #[serde(default)]
    pub variables: IndexMap<String, Value>,
}

pub(crate) use wayline_core::secret::{is_secret_name, mask_secret_names as redact};

/// The plural a resource type is filed under (`cluster` → `clusters`, `branch` → `branches`).
pub(crate) fn plural(resource: &str) -> String {
    if resource.ends_with("ch")
        || resource.ends_with("sh")
        || resource.ends_with('s')
        || resource.ends_with('x')
    {
        format!("{resource}es")
    } else if let Some(stem) = resource
        .strip_suffix('y')
        .filter(|stem| !stem.ends_with(['a', 'e', 'i', 'o', 'u']))
    {
        format!("{stem}ies")
    } else {
        format!("{resource}s")
    }
}

impl ExploreState {
    /// The latest resource of type `resource` (singular), if any.
    pub fn latest(&self, resource: &str) -> Option<(&str, &Resource)> {
        self.resources
            .get(&plural(resource))
            .and_then(|named| named.iter().next_back())
            .map(|(name, found)| (name.as_str(), found))
    }

    /// Forgets the changing state of the latest resource of type `resource` (singular): a
    /// person said not to wait for it.
    pub(crate) fn settle(&mut self, resource: &str) {
        if let Some((_, latest)) = self
            .resources
            .get_mut(&plural(resource))
            .and_then(|named| named.iter_mut().next_back())
        {
            latest.state = None;
        }
    }

    /// The states of the latest resource of each type, keyed by singular type (what the
    /// knowledge queries take).
    pub fn resource_states(&self) -> IndexMap<String, String> {
        self.resources
            .iter()
            .filter_map(|(kind, named)| {
                let (_, resource) = named.iter().next_back()?;
                let singular = wayline_registry::openapi::singular(kind);
                Some((singular, resource.state.clone()?))
            })
            .collect()
    }

    /// A value for the input `input` of an operation on `resource`: a variable of that
    /// name; else, for `{type}Id` (or `{type}.{type}Id`), the latest resource of that type;
    /// else, for a generic `id`, the latest resource the operation acts on.
    pub fn value_for(&self, input: &str, resource: &str) -> Option<Value> {
        if let Some(value) = self.variables.get(input).filter(|value| !value.is_null()) {
            return Some(value.clone());
        }
        let field = input.rsplit('.').next().unwrap_or(input);
        if let Some(value) = self.variables.get(field).filter(|value| !value.is_null()) {
            return Some(value.clone());
        }
        let kind = match field
            .strip_suffix("Id")
            .or_else(|| field.strip_suffix("_id"))
        {
            Some(kind) if !kind.is_empty() => kind.to_lowercase(),
            _ if field == "id" => resource.to_owned(),
            _ => return None,
        };
        self.latest(&kind)
            .map(|(_, found)| Value::from(found.id.clone()))
    }

    /// The state update rules after a successful `operation` called with `inputs` answered
    /// `output`: a create adds the resource and saves its id in a new variable; a read
    /// updates it; an update takes the state the response reports, else the spec's changing
    /// state (`MODIFYING`) when `spec` declares one for the resource, else keeps the state it
    /// had; a delete removes it and its variable. The names of the saved variables are
    /// returned.
    pub(crate) fn apply(
        &mut self,
        spec: &ApiSpec,
        operation: &Operation,
        inputs: &IndexMap<String, Value>,
        output: &Value,
    ) -> Vec<String> {
        let resource = operation_resource(operation);
        let kind = plural(&resource);
        let reported = STATE_FIELDS
            .iter()
            .find_map(|field| output.get(*field).and_then(Value::as_str))
            .map(str::to_owned);
        let attributes: IndexMap<String, Value> = output
            .as_object()
            .map(|object| {
                object
                    .iter()
                    .filter(|(key, value)| {
                        !value.is_null()
                            && !value.is_object()
                            && !value.is_array()
                            && !is_secret_name(key)
                    })
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let id_of_output = id_field(output, &resource)
            .and_then(|field| output.get(&field))
            .and_then(|value| {
                value
                    .as_str()
                    .map(str::to_owned)
                    .or_else(|| (!value.is_null()).then(|| value.to_string()))
            });
        // The id a call on an existing resource names: its last path parameter.
        let id_in_path = operation
            .parameters
            .iter()
            .rfind(|parameter| parameter.location == Location::Path)
            .and_then(|parameter| inputs.get(&parameter.input))
            .and_then(|value| value.as_str().map(str::to_owned));
        // A create's parent is the resource its path ends in (`/clusters/{clusterId}/branches`).
        let parent = id_in_path.clone();
        match operation_verb(operation) {
            Verb::Create => {
                let Some(id) = id_of_output else {
                    return Vec::new();
                };
                // The next number after the highest used, so a name freed by a delete is never
                // given to another resource (its variable may still be referred to).
                let prefix = format!("{resource}_");
                let highest = self
                    .resources
                    .get(&kind)
                    .into_iter()
                    .flat_map(|named| named.keys())
                    .chain(self.variables.keys())
                    .filter_map(|name| name.strip_prefix(&prefix)?.parse::<u64>().ok())
                    .max()
                    .unwrap_or(0);
                let name = format!("{prefix}{}", highest + 1);
                let named = self.resources.entry(kind).or_default();
                named.insert(
                    name.clone(),
                    Resource {
                        id: id.clone(),
                        state: reported,
                        parent_id: parent,
                        attributes,
                    },
                );
                self.variables.insert(name.clone(), Value::from(id));
                vec![name]
            }
            Verb::Delete => {
                if let (Some(id), Some(named)) = (id_in_path, self.resources.get_mut(&kind)) {
                    named.retain(|_, known| known.id != id);
                    if let Some(gone) = self
                        .variables
                        .iter()
                        .find(|(_, value)| value.as_str() == Some(id.as_str()))
                        .map(|(name, _)| name.clone())
                    {
                        self.variables.shift_remove(&gone);
                    }
                }
                Vec::new()
            }
            verb => {
                let id = id_in_path.or(id_of_output);
                if let (Some(id), Some(named)) = (id, self.resources.get_mut(&kind))
                    && let Some(known) = named.values_mut().find(|known| known.id == id)
                {
                    known.state = reported
                        .or_else(|| {
                            (verb == Verb::Update)
                                .then(|| changing_state(spec, &resource))
                                .flatten()
                        })
                        .or(known.state.take());
                    known.attributes.extend(attributes);
                }
                Vec::new()
            }
        }
    }
}

/// The field of `body` holding the id of a `resource`: `{resource}Id` (any case), else `id`.
pub(crate) fn id_field(body: &Value, resource: &str) -> Option<String> {
    let object = body.as_object()?;
    let wanted = format!("{resource}id");
    object
        .keys()
        .find(|key| key.to_lowercase() == wanted)
        .or_else(|| object.keys().find(|key| *key == "id"))
        .cloned()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;
    use wayline_registry::openapi::ApiSpec;

    use super::*;

    #[test]
    fn plurals_and_values() {
        assert_eq!(plural("cluster"), "clusters");
        assert_eq!(plural("branch"), "branches");
        assert_eq!(plural("policy"), "policies");
        let mut state = ExploreState::default();
        state
            .resources
            .entry("clusters".into())
            .or_default()
            .insert(
                "cluster_1".into(),
                Resource {
                    id: "c-1".into(),
                    state: Some("CREATING".into()),
                    ..Resource::default()
                },
            );
        assert_eq!(
            state.value_for("clusterId", "branch"),
            Some(Value::from("c-1"))
        );
        assert_eq!(
            state.value_for("cluster.clusterId", "cluster"),
            Some(Value::from("c-1"))
        );
        assert_eq!(state.value_for("id", "cluster"), Some(Value::from("c-1")));
        assert_eq!(state.value_for("branchId", "branch"), None);
        assert_eq!(state.resource_states()["cluster"], "CREATING");
    }

    fn operation(method: &str, path: &str, parameters: &[&str]) -> Operation {
        let spec = serde_json::json!({
            "openapi": "3.0.0",
            "paths": {path: {method.to_lowercase(): {
                "operationId": "op",
                "parameters": parameters.iter().map(|name| json!({"name": name, "in": "path", "required": true})).collect::<Vec<_>>(),
                "responses": {"200": {"description": "ok"}}}}}
        });
        ApiSpec::parse(&spec.to_string(), Path::new("spec.json"))
            .unwrap()
            .operations
            .remove(0)
    }

    /// A spec that declares no states (its operations are not used).
    fn no_states() -> ApiSpec {
        ApiSpec::parse(
            r#"{"openapi": "3.0.0", "paths": {}}"#,
            Path::new("spec.json"),
        )
        .unwrap()
    }

    #[test]
    fn a_name_freed_by_a_delete_is_not_given_again() {
        let spec = no_states();
        let create = operation("POST", "/clusters", &[]);
        let delete = operation("DELETE", "/clusters/{clusterId}", &["clusterId"]);
        let mut state = ExploreState::default();
        let none = IndexMap::new();
        assert_eq!(
            state.apply(
                &spec,
                &create,
                &none,
                &json!({"clusterId": "c1", "state": "CREATING"})
            ),
            ["cluster_1"]
        );
        assert_eq!(
            state.apply(&spec, &create, &none, &json!({"clusterId": "c2"})),
            ["cluster_2"]
        );
        let mut inputs = IndexMap::new();
        inputs.insert("clusterId".to_owned(), json!("c1"));
        state.apply(&spec, &delete, &inputs, &json!({}));
        assert_eq!(
            state.apply(
                &spec,
                &create,
                &none,
                &json!({"clusterId": "c3", "rootPassword": "p"})
            ),
            ["cluster_3"]
        );
        assert_eq!(state.variables["cluster_2"], "c2", "untouched");
        let third = &state.resources["clusters"]["cluster_3"];
        assert!(
            !third.attributes.contains_key("rootPassword"),
            "secrets are not kept"
        );
        // A branch's parent is the resource its path ends in.
        let branch = operation("POST", "/clusters/{clusterId}/branches", &["clusterId"]);
        inputs.insert("clusterId".to_owned(), json!("c3"));
        state.apply(&spec, &branch, &inputs, &json!({"branchId": "b1"}));
        assert_eq!(
            state.resources["branches"]["branch_1"].parent_id.as_deref(),
            Some("c3")
        );
    }

    #[test]
    fn an_update_marks_a_change_only_where_the_spec_declares_one() {
        let spec = |states: &str| {
            ApiSpec::parse(
                &format!(
                    r#"{{"openapi": "3.0.0", "paths": {{"/clusters/{{clusterId}}": {{"get": {{
                        "operationId": "GetCluster", "parameters": [{{"name": "clusterId", "in": "path"}}],
                        "responses": {{"200": {{"description": "ok", "content": {{"application/json": {{
                        "schema": {{"type": "object", "properties": {{"state": {{"type": "string",
                        "enum": {states}}}}}}}}}}}}}}}}}}}}}}}"#
                ),
                Path::new("spec.json"),
            )
            .unwrap()
        };
        let create = operation("POST", "/clusters", &[]);
        let update = operation("PATCH", "/clusters/{clusterId}", &["clusterId"]);
        let mut inputs = IndexMap::new();
        inputs.insert("clusterId".to_owned(), json!("c1"));
        for (states, after) in [
            (r#"["CREATING", "MODIFYING", "ACTIVE"]"#, Some("MODIFYING")),
            (r#"["CREATING", "ACTIVE"]"#, Some("ACTIVE")),
        ] {
            let spec = spec(states);
            let mut state = ExploreState::default();
            state.apply(
                &spec,
                &create,
                &IndexMap::new(),
                &json!({"clusterId": "c1", "state": "ACTIVE"}),
            );
            state.apply(&spec, &update, &inputs, &json!({}));
            assert_eq!(
                state.resources["clusters"]["cluster_1"].state.as_deref(),
                after,
                "{states}"
            );
        }
        // No states at all: none is made up.
        let mut state = ExploreState::default();
        let spec = no_states();
        state.apply(
            &spec,
            &create,
            &IndexMap::new(),
            &json!({"clusterId": "c1"}),
        );
        state.apply(&spec, &update, &inputs, &json!({}));
        assert_eq!(state.resources["clusters"]["cluster_1"].state, None);
        // A person declining a wait settles the resource.
        state.apply(&spec, &update, &inputs, &json!({"state": "MODIFYING"}));
        assert_eq!(
            state.resource_states()["cluster"],
            "MODIFYING",
            "as reported"
        );
        state.settle("cluster");
        assert_eq!(state.resources["clusters"]["cluster_1"].state, None);
    }
}
