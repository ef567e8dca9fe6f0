//! The explorer's current state, in seed 000's shape: the resources it knows (by type, then by
//! name: `clusters: {cluster_1: {id, state, parent_id, attributes}}`) and its variables
//! (`cluster_1: "12345678"`, `region_id: ...`).

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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

pub use wayline_core::secret::{is_secret_name, mask_secret_names as redact};

/// The plural a resource type is filed under (`cluster` → `clusters`, `branch` → `branches`).
pub fn plural(resource: &str) -> String {
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
}

#[cfg(test)]
mod tests {
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
}
