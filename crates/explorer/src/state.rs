//! The explorer's current state, in the session file's shape: the resources it knows (by type,
//! then by name: `clusters: {cluster_1: {id, state, parent_id, attributes}}`) and its variables
//! (`cluster_1: "12345678"`, `region_id: ...`), and the rules that update it after a step.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use wayline_registry::openapi::{ApiSpec, Operation, Parameter, ParameterLocation, STATE_FIELDS};

use crate::intent::{Verb, operation_resource, operation_verb};
use crate::lifecycle::changing_state;
use crate::names;

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
    /// The variables a person gave (answers): they win over what the session found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answered: Vec<String>,
    /// Resources this session deleted, filed as `resources` are: a target that checks one is
    /// gone ("then reading it gives 404") reads it by its old id.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub gone: IndexMap<String, IndexMap<String, Resource>>,
}

pub(crate) use wayline_core::secret::{is_secret_name, mask_secret_names as redact};

/// The resource `parameter` of `operation` belongs to, by which scoped values reach it: for a
/// path parameter, the collection before it (`bucket` for `{bid}` of
/// `/buckets/{bid}/collections`); for anything else, the operation's own resource.
pub fn owner_of(operation: &Operation, parameter: &Parameter) -> String {
    if parameter.location == ParameterLocation::Path
        && let Some(owner) = names::path_parameter_resource(&operation.path, &parameter.name)
    {
        return owner;
    }
    operation_resource(operation)
}

/// The latest resource filed in `filed` (type, plural → name → resource) whose type is `kind`
/// in any naming convention, with its name.
fn latest_filed<'a>(
    filed: &'a IndexMap<String, IndexMap<String, Resource>>,
    kind: &str,
) -> Option<(&'a str, &'a Resource)> {
    let (singular, plural_kind) = (names::normalize(kind), names::normalize(&plural(kind)));
    filed
        .iter()
        .filter(|(plural_type, _)| {
            // Either way round: `aliases` is `alias`, though `singular` makes it `aliase`.
            names::normalize(plural_type) == plural_kind
                || names::normalize(&wayline_registry::openapi::singular(plural_type)) == singular
        })
        .find_map(|(_, named)| named.iter().next_back())
        .map(|(name, found)| (name.as_str(), found))
}

/// True for a query parameter the operation can do without.
fn is_optional_query(parameter: &Parameter) -> bool {
    parameter.location == ParameterLocation::Query && !parameter.required
}

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

    /// The latest resource whose type is `kind` in any naming convention (`special-event`,
    /// `specialEvent`), with the name it is known by.
    fn latest_of_kind(&self, kind: &str) -> Option<(&str, &Resource)> {
        latest_filed(&self.resources, kind)
    }

    /// The id of the latest resource of `kind` (in any naming convention) this session
    /// deleted.
    pub fn gone_id(&self, kind: &str) -> Option<Value> {
        latest_filed(&self.gone, kind).map(|(_, found)| Value::from(found.id.clone()))
    }

    /// The id of the latest resource of `kind`, with the JSON type the API gave it.
    fn latest_id(&self, kind: &str) -> Option<Value> {
        self.latest_of_kind(kind).map(|(name, found)| {
            self.variables
                .get(name)
                .filter(|value| names::id_text(value).as_deref() == Some(found.id.as_str()))
                .cloned()
                .unwrap_or_else(|| Value::from(found.id.clone()))
        })
    }

    /// The field `field` (dotted: `data.id`) of the latest resource of `kind`, as its answers
    /// gave it: a kept attribute, or its id.
    pub(crate) fn field_of_latest(&self, kind: &str, field: &str) -> Option<Value> {
        let (_, found) = self.latest_of_kind(kind)?;
        if let Some(value) = found.attributes.get(field) {
            return Some(value.clone());
        }
        let last = field.rsplit('.').next().unwrap_or(field);
        let is_its_id = names::normalize(last) == "id"
            || names::id_kind(last).as_deref() == Some(names::normalize(kind).as_str());
        is_its_id.then(|| self.latest_id(kind)).flatten()
    }

    /// Keeps `value` as the variable `name`, given by a person: it wins over ids the session
    /// found and values the spec's links give.
    pub(crate) fn answer(&mut self, name: String, value: Value) {
        if !self.answered.contains(&name) {
            self.answered.push(name.clone());
        }
        self.variables.insert(name, value);
    }

    /// The value a person gave for `name` (in any convention), if one did.
    pub(crate) fn answered_value(&self, name: &str) -> Option<Value> {
        let field = name.rsplit('.').next().unwrap_or(name);
        self.answered
            .iter()
            .find(|known| *known == name || names::same_name(known, field))
            .and_then(|known| self.variables.get(known))
            .filter(|value| !value.is_null())
            .cloned()
    }

    /// A variable named `name` in any convention (`display_name` for `displayName`): the one
    /// of that exact name first.
    fn variable(&self, name: &str) -> Option<Value> {
        let field = name.rsplit('.').next().unwrap_or(name);
        [name, field]
            .iter()
            .find_map(|wanted| self.variables.get(*wanted))
            .or_else(|| {
                self.variables
                    .iter()
                    .find(|(known, _)| names::same_name(known, field))
                    .map(|(_, value)| value)
            })
            .filter(|value| !value.is_null())
            .cloned()
    }

    /// A value for the input `input` of an operation on `resource`. A value a person gave
    /// comes first. An id (`clusterId`,
    /// `cluster_id`, or a bare `id` for `resource` itself) is the latest resource of its type
    /// this session knows, before any variable of that name (a preset `id` does not stand for
    /// the post just created); anything else, or an id of a type not known, is a variable of
    /// that name in any convention (`display_name` fills `displayName`).
    pub fn value_for(&self, input: &str, resource: &str) -> Option<Value> {
        if let Some(value) = self.answered_value(input) {
            return Some(value);
        }
        let field = input.rsplit('.').next().unwrap_or(input);
        let kind = names::id_kind(field)
            .or_else(|| (names::normalize(field) == "id").then(|| resource.to_owned()));
        kind.and_then(|kind| self.latest_id(&kind))
            .or_else(|| self.variable(input))
    }

    /// A value given for `field` of `resource` alone: a preset or an answer under a scoped
    /// name (`card.title`, `cards.title`, in any convention), which no other resource's
    /// inputs ever take.
    pub fn scoped(&self, resource: &str, field: &str) -> Option<Value> {
        let wanted = names::normalize(resource);
        // A nested input (`cluster.displayName`) takes `cluster.displayName` as it is, and its
        // last part only when it is nested under the scope itself: `cluster.name` is no
        // `region.name` (a reference to a region that must exist).
        let nested_under_scope = field
            .rsplit_once('.')
            .filter(|(prefix, _)| names::normalize(prefix) == wanted)
            .map(|(_, last)| last);
        self.variables
            .iter()
            .filter(|(_, value)| !value.is_null())
            .find(|(key, _)| {
                key.split_once('.').is_some_and(|(scope, rest)| {
                    let scope = names::normalize(scope);
                    let singular = names::normalize(&wayline_registry::openapi::singular(&scope));
                    (scope == wanted || singular == wanted)
                        && (names::same_name(rest, field)
                            || nested_under_scope.is_some_and(|last| names::same_name(rest, last)))
                })
            })
            .map(|(_, value)| value.clone())
    }

    /// A value a person or the SUT gave for `parameter` of `operation`: one scoped to the
    /// operation (`createFile.path`), else to the resource it belongs to (see [`owner_of`]),
    /// else one given under its bare name,
    /// except for an optional query parameter (a filter or a flag), which only a scoped value
    /// fills: a body's `content` never becomes a `?content=` flag by name alone.
    pub fn given_value(&self, operation: &Operation, parameter: &Parameter) -> Option<Value> {
        // Scoped to the operation itself first (`createFile.path`): where one parameter
        // means one thing to one operation and another to the next (the folder a POST makes
        // a file in; the file a GET reads).
        if let Some(value) = self.scoped(&operation.id, &parameter.name) {
            return Some(value);
        }
        let owner = owner_of(operation, parameter);
        if let Some(value) = self.scoped(&owner, &parameter.name) {
            return Some(value);
        }
        // A path parameter holds its resource's id, whatever it is called: `bucket.id`
        // fills the `{bid}` of `/buckets/{bid}`.
        if parameter.location == ParameterLocation::Path
            && let Some(value) = self.scoped(&owner, "id")
        {
            return Some(value);
        }
        if is_optional_query(parameter) {
            return None;
        }
        self.answered_value(&parameter.name)
    }

    /// A value for `parameter` of `operation`: a given one ([`ExploreState::given_value`]),
    /// else as [`ExploreState::value_for`], except that a path parameter holds the id of the
    /// collection before it in the path, whatever it is called (`/posts/{entryId}`,
    /// `/posts/{PostID}`). An optional query parameter takes only a given value.
    pub fn value_for_parameter(
        &self,
        operation: &Operation,
        parameter: &Parameter,
    ) -> Option<Value> {
        if let Some(value) = self.given_value(operation, parameter) {
            return Some(value);
        }
        if is_optional_query(parameter) {
            return None;
        }
        if parameter.location == ParameterLocation::Path
            && let Some(owner) = names::path_parameter_resource(&operation.path, &parameter.name)
            && let Some(id) = self.latest_id(&owner)
        {
            return Some(id);
        }
        self.value_for(&parameter.name, &operation_resource(operation))
    }

    /// The state update rules after a successful `operation` called with `inputs` answered
    /// `output`: a create adds the resource and saves its id in a new variable; a read
    /// updates it; an update takes the state the response reports, else the spec's changing
    /// state (`MODIFYING`) when `spec` declares one for the resource, else keeps the state it
    /// had; a delete removes it and its variable. A create whose body holds no id takes the
    /// one its `location` header names. The names of the saved variables are returned.
    pub(crate) fn apply(
        &mut self,
        spec: &ApiSpec,
        operation: &Operation,
        inputs: &IndexMap<String, Value>,
        output: &Value,
        location: Option<&str>,
    ) -> Vec<String> {
        // A response with no JSON (a 204) comes as the engine's placeholder
        // `{status_code, body}`: it says nothing of the resource, and its `body` is no field.
        // Anything else holds the resource somewhere (see `crate::envelope`).
        let resource = operation_resource(operation);
        let output = if is_placeholder(output) {
            &Value::Null
        } else {
            output
        };
        let found = crate::envelope::find(
            output,
            &resource,
            &crate::envelope::item_parameters(spec, &resource),
        );
        let kind = plural(&resource);
        let reported = STATE_FIELDS
            .iter()
            .find_map(|field| found.object.get(*field).and_then(Value::as_str))
            .map(str::to_owned);
        let attributes: IndexMap<String, Value> = found
            .fields()
            .into_iter()
            .filter(|(key, _)| !is_secret_name(key))
            .map(|(key, value)| (key.to_owned(), value.clone()))
            .collect();
        // The id as the API typed it (a number stays a number), and as text to compare.
        // With none in the body, a create's `Location` (`/posts/17`) names it.
        let id_value = found
            .id
            .as_ref()
            .map(|(_, value)| value.clone())
            .or_else(|| {
                (operation_verb(operation) == Verb::Create)
                    .then(|| location.and_then(crate::location::id_of))
                    .flatten()
            });
        let id_of_output = id_value.as_ref().and_then(names::id_text);
        // The answer names the resource by the field its item path takes (`path` of
        // `/api/contents/{path}`), not by a generic `id` a job or an operation may answer.
        let id_is_the_path_parameter = found
            .id
            .as_ref()
            .and_then(|(at, _)| at.rsplit('.').next())
            .zip(
                operation
                    .parameters
                    .iter()
                    .rfind(|parameter| parameter.location == ParameterLocation::Path),
            )
            .is_some_and(|(field, parameter)| {
                names::normalize(field) != "id" && names::same_name(field, &parameter.name)
            });
        // The id a call on an existing resource names: its last path parameter.
        let id_in_path = operation
            .parameters
            .iter()
            .rfind(|parameter| parameter.location == ParameterLocation::Path)
            .and_then(|parameter| inputs.get(&parameter.input))
            .and_then(names::id_text);
        // A create's parent is the resource its path ends in (`/clusters/{clusterId}/branches`).
        let parent = id_in_path.clone();
        match operation_verb(operation) {
            Verb::Create => {
                let (Some(id), Some(id_value)) = (id_of_output, id_value) else {
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
                self.variables.insert(name.clone(), id_value);
                vec![name]
            }
            Verb::Delete => {
                if let (Some(id), Some(named)) = (id_in_path, self.resources.get_mut(&kind)) {
                    // The variables the deleted resources were saved under go with them (not
                    // a preset or an answer that happens to hold the same number).
                    let mut gone = Vec::new();
                    named.retain(|name, known| {
                        let keep = known.id != id;
                        if !keep {
                            gone.push((name.clone(), known.clone()));
                        }
                        keep
                    });
                    for (name, resource) in gone {
                        self.variables.shift_remove(&name);
                        self.gone
                            .entry(kind.clone())
                            .or_default()
                            .insert(name, resource);
                    }
                }
                Vec::new()
            }
            verb => {
                let id = id_in_path.clone().or(id_of_output.clone());
                let mut renamed: Option<(String, Value)> = None;
                if let (Some(id), Some(named)) = (id, self.resources.get_mut(&kind))
                    && let Some((name, known)) = named.iter_mut().find(|(_, known)| known.id == id)
                {
                    // An update that answers under another id moved it (a rename of a file
                    // whose path is its id): it is known by the new one from now on.
                    if verb == Verb::Update
                        && id_is_the_path_parameter
                        && let (Some(new), Some(value)) = (&id_of_output, &id_value)
                        && *new != known.id
                    {
                        known.id = new.clone();
                        renamed = Some((name.clone(), value.clone()));
                    }
                    known.state = reported
                        .or_else(|| {
                            (verb == Verb::Update)
                                .then(|| changing_state(spec, &resource))
                                .flatten()
                        })
                        .or(known.state.take());
                    known.attributes.extend(attributes);
                }
                if let Some((name, value)) = renamed {
                    self.variables.insert(name, value);
                }
                Vec::new()
            }
        }
    }
}

/// True for the engine's stand-in for a response that is not JSON: exactly `status_code` and
/// a text `body`.
fn is_placeholder(output: &Value) -> bool {
    output.as_object().is_some_and(|fields| {
        fields.len() == 2
            && fields.get("status_code").is_some_and(Value::is_u64)
            && fields.get("body").is_some_and(Value::is_string)
    })
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
                &json!({"clusterId": "c1", "state": "CREATING"}),
                None
            ),
            ["cluster_1"]
        );
        assert_eq!(
            state.apply(&spec, &create, &none, &json!({"clusterId": "c2"}), None),
            ["cluster_2"]
        );
        let mut inputs = IndexMap::new();
        inputs.insert("clusterId".to_owned(), json!("c1"));
        state.apply(&spec, &delete, &inputs, &json!({}), None);
        assert_eq!(
            state.apply(
                &spec,
                &create,
                &none,
                &json!({"clusterId": "c3", "rootPassword": "p"}),
                None
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
        state.apply(&spec, &branch, &inputs, &json!({"branchId": "b1"}), None);
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
                None,
            );
            state.apply(&spec, &update, &inputs, &json!({}), None);
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
            None,
        );
        state.apply(&spec, &update, &inputs, &json!({}), None);
        assert_eq!(state.resources["clusters"]["cluster_1"].state, None);
        // A person declining a wait settles the resource.
        state.apply(
            &spec,
            &update,
            &inputs,
            &json!({"state": "MODIFYING"}),
            None,
        );
        assert_eq!(
            state.resource_states()["cluster"],
            "MODIFYING",
            "as reported"
        );
        state.settle("cluster");
        assert_eq!(state.resources["clusters"]["cluster_1"].state, None);
    }

    #[test]
    fn a_delete_takes_only_its_own_variable_and_answers_win() {
        let spec = no_states();
        let create = operation("POST", "/posts", &[]);
        let delete = operation("DELETE", "/posts/{postId}", &["postId"]);
        let mut state = ExploreState::default();
        state.variables.insert("userId".into(), json!(1));
        state.apply(&spec, &create, &IndexMap::new(), &json!({"id": 1}), None);
        let mut inputs = IndexMap::new();
        inputs.insert("postId".to_owned(), json!(1));
        state.apply(&spec, &delete, &inputs, &json!({}), None);
        assert_eq!(
            state.variables.get("userId"),
            Some(&json!(1)),
            "a preset of the same number stays"
        );
        assert!(!state.variables.contains_key("post_1"));
        // A person's answer beats the id the session found.
        state.apply(&spec, &create, &IndexMap::new(), &json!({"id": 2}), None);
        assert_eq!(state.value_for("postId", "post"), Some(json!(2)));
        state.answer("post_id".into(), json!(5));
        assert_eq!(state.value_for("postId", "post"), Some(json!(5)));
        // `aliases` holds `alias` resources, though the plain singular makes it `aliase`.
        let aliases = operation("POST", "/aliases", &[]);
        state.apply(
            &spec,
            &aliases,
            &IndexMap::new(),
            &json!({"id": "a-1"}),
            None,
        );
        assert_eq!(state.value_for("aliasId", "x"), Some(json!("a-1")));
    }

    #[test]
    fn an_update_that_answers_another_id_moves_the_resource() {
        let ok = json!({"200": {"description": "ok"}});
        let path = json!([{"name": "path", "in": "path", "required": true}]);
        let spec = ApiSpec::parse(
            &json!({"openapi": "3.0.0", "paths": {
                "/files": {"post": {"operationId": "createFile", "responses": ok}},
                "/files/{path}": {"patch": {"operationId": "renameFile", "parameters": path,
                    "responses": ok}}}})
            .to_string(),
            Path::new("spec.json"),
        )
        .unwrap();
        let (create, rename) = (&spec.operations[0], &spec.operations[1]);
        let mut state = ExploreState::default();
        let file = |path: &str| json!({"path": path, "type": "file"});
        state.apply(&spec, create, &IndexMap::new(), &file("a.txt"), None);
        let mut inputs = IndexMap::new();
        inputs.insert("path".to_owned(), json!("a.txt"));
        state.apply(&spec, rename, &inputs, &file("b.txt"), None);
        assert_eq!(state.resources["files"]["file_1"].id, "b.txt");
        assert_eq!(state.variables["file_1"], json!("b.txt"));
        // An update answering a job's `id` moves nothing.
        inputs.insert("path".to_owned(), json!("b.txt"));
        state.apply(&spec, rename, &inputs, &json!({"id": "job-7"}), None);
        assert_eq!(state.resources["files"]["file_1"].id, "b.txt");
    }

    /// A spec with a create and an item read for `a` and for `b`, each create taking `field`
    /// in its body, and a list of `b` taking `field` as an optional query filter.
    fn two_resources(a: &str, b: &str, field: &str) -> ApiSpec {
        let ok = json!({"200": {"description": "ok"}});
        let body = json!({"content": {"application/json": {"schema": {"type": "object",
            "required": [field], "properties": {field: {"type": "string"}}}}}});
        let id = json!([{"name": "id", "in": "path", "required": true}]);
        let filter = json!([{"name": field, "in": "query"}]);
        ApiSpec::parse(
            &json!({"openapi": "3.0.0", "paths": {
                format!("/{a}s"): {"post": {"operationId": "createA", "requestBody": body, "responses": ok}},
                format!("/{a}s/{{id}}"): {"get": {"operationId": "getA", "parameters": id, "responses": ok}},
                format!("/{b}s"): {
                    "post": {"operationId": "createB", "requestBody": body, "responses": ok},
                    "get": {"operationId": "listB", "parameters": filter, "responses": ok}},
                format!("/{b}s/{{id}}"): {"get": {"operationId": "getB", "parameters": id, "responses": ok}}
            }})
            .to_string(),
            Path::new("spec.json"),
        )
        .unwrap()
    }

    fn input(spec: &ApiSpec, operation: &str, name: &str, state: &ExploreState) -> Option<Value> {
        let operation = spec.operation(operation).unwrap();
        let parameter = operation
            .parameters
            .iter()
            .find(|parameter| parameter.name == name)
            .unwrap();
        state.value_for_parameter(operation, parameter)
    }

    proptest::proptest! {
        /// A value scoped to one resource fills that resource's inputs and never another's,
        /// and no bare or scoped value becomes an optional query filter of another resource.
        #[test]
        fn a_scoped_value_reaches_its_own_resource_alone(
            a in "[a-z]{3,8}[b-df-hj-np-rtv-z]",
            b in "[a-z]{3,8}[b-df-hj-np-rtv-z]",
            field in "[a-z]{2,8}[a-ce-z]",
            value in "[a-z0-9]{1,12}",
            id in "[a-z0-9]{1,12}",
        ) {
            proptest::prop_assume!(a != b && field != a && field != b);
            let spec = two_resources(&a, &b, &field);
            let mut state = ExploreState::default();
            state.variables.insert(format!("{a}.{field}"), Value::from(value.clone()));
            state.answer(format!("{a}.id"), Value::from(id.clone()));
            proptest::prop_assert_eq!(input(&spec, "createA", &field, &state), Some(Value::from(value.clone())));
            proptest::prop_assert_eq!(input(&spec, "getA", "id", &state), Some(Value::from(id.clone())));
            proptest::prop_assert_eq!(input(&spec, "createB", &field, &state), None);
            proptest::prop_assert_eq!(input(&spec, "getB", "id", &state), None);
            proptest::prop_assert_eq!(input(&spec, "listB", &field, &state), None);
            // A bare value fills any body, but never an optional filter.
            state.variables.insert(field.clone(), Value::from("bare"));
            proptest::prop_assert_eq!(input(&spec, "createB", &field, &state), Some(Value::from("bare")));
            proptest::prop_assert_eq!(input(&spec, "createA", &field, &state), Some(Value::from(value)));
            proptest::prop_assert_eq!(input(&spec, "listB", &field, &state), None);
        }
    }
}
