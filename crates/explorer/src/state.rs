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

    /// The latest resource whose type is `kind` in any naming convention (`special-event`,
    /// `specialEvent`), with the name it is known by.
    fn latest_of_kind(&self, kind: &str) -> Option<(&str, &Resource)> {
        let (singular, plural_kind) = (names::normalize(kind), names::normalize(&plural(kind)));
        self.resources
            .iter()
            .filter(|(plural_type, _)| {
                // Either way round: `aliases` is `alias`, though `singular` makes it `aliase`.
                names::normalize(plural_type) == plural_kind
                    || names::normalize(&wayline_registry::openapi::singular(plural_type))
                        == singular
            })
            .find_map(|(_, named)| named.iter().next_back())
            .map(|(name, found)| (name.as_str(), found))
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

    /// A value for `parameter` of `operation`: as [`ExploreState::value_for`], except that a
    /// path parameter holds the id of the collection before it in the path, whatever it is
    /// called (`/posts/{entryId}`, `/posts/{PostID}`).
    pub fn value_for_parameter(
        &self,
        operation: &Operation,
        parameter: &Parameter,
    ) -> Option<Value> {
        if let Some(value) = self.answered_value(&parameter.name) {
            return Some(value);
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
        let resource = operation_resource(operation);
        let output = if is_placeholder(output) {
            &Value::Null
        } else {
            unwrapped(output)
        };
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
        // The id as the API typed it (a number stays a number), and as text to compare.
        // With none in the body, a create's `Location` (`/posts/17`) names it.
        let id_value = id_field(output, &resource)
            .and_then(|field| output.get(&field))
            .filter(|value| names::id_text(value).is_some())
            .cloned()
            .or_else(|| {
                (operation_verb(operation) == Verb::Create)
                    .then(|| location.and_then(crate::location::id_of))
                    .flatten()
            });
        let id_of_output = id_value.as_ref().and_then(names::id_text);
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
                            gone.push(name.clone());
                        }
                        keep
                    });
                    for name in gone {
                        self.variables.shift_remove(&name);
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

/// The resource inside an envelope: an answer whose only field is an object (`{"ssh_key":
/// {...}}`, as DigitalOcean and many others answer) stands for that object; any other answer
/// is the resource itself.
pub(crate) fn unwrapped(output: &Value) -> &Value {
    match output.as_object() {
        Some(fields) if fields.len() == 1 => match fields.values().next() {
            Some(inner @ Value::Object(_)) => inner,
            _ => output,
        },
        _ => output,
    }
}

/// The dotted path of the id of a `resource` in an answer `body`: its id field (see
/// [`id_field`]), inside the envelope when the answer has one (`ssh_key.id`).
pub(crate) fn id_path(body: &Value, resource: &str) -> Option<String> {
    let inner = unwrapped(body);
    let field = id_field(inner, resource)?;
    if std::ptr::eq(inner, body) {
        return Some(field);
    }
    let envelope = body.as_object()?.keys().next()?;
    Some(format!("{envelope}.{field}"))
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

/// The field of `body` holding the id of a `resource`: `{resource}Id` in any convention
/// (`postId`, `post_id`, `post-id`, `PostID`), else `id` (`ID`, `Id`).
pub(crate) fn id_field(body: &Value, resource: &str) -> Option<String> {
    let object = body.as_object()?;
    let wanted = names::normalize(resource);
    object
        .keys()
        .find(|key| names::id_kind(key).as_deref() == Some(wanted.as_str()))
        .or_else(|| object.keys().find(|key| names::normalize(key) == "id"))
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
}
