//! Producer/consumer inference over a spec: which operation produces the identifier another
//! one needs (a path parameter, or a required body field named like an id), so a step with a missing input points at
//! the step that provides it — `GetCluster` needs `clusterId`, which `CreateCluster` returns.
//!
//! A producer returns a field of the input's name (the last segment of a dotted name:
//! `cluster.clusterId` → `clusterId`), at the top of its response (it creates or reads one) or
//! in the items of a listed array (it lists them). An operation that needs the same input
//! only echoes it and is not a producer. A generic name (`id`, `name`) is produced only by the
//! operation on the consumer's parent collection (`POST …/imports` for `GET …/imports/{id}`).

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;
use wayline_registry::openapi::{ApiSpec, LinkSource, Operation, ParameterLocation};

use crate::names;

/// How a producer provides a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Provides {
    /// It creates the resource and returns its field.
    Creates,
    /// It lists resources; the field is in each item.
    Lists,
    /// It reads or changes a resource and returns the field.
    Returns,
}

/// One operation that provides a value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Producer {
    /// The operation.
    pub operation: String,
    /// Where the value is in its response (`clusterId`, `clusters.0.clusterId`).
    pub field: String,
    /// How.
    pub provides: Provides,
}

/// What each operation needs and who provides it.
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct DataFlow {
    /// Operation → its required inputs (path parameters and required body fields).
    pub needs: IndexMap<String, Vec<String>>,
    /// (operation, input) → its producers, best first.
    producers: IndexMap<(String, String), Vec<Producer>>,
}

/// Names too generic to match across resources (a session's `path` is no file's).
const GENERIC: [&str; 4] = ["id", "name", "uid", "path"];

/// The field a (possibly dotted) input name stands for.
fn field_of(input: &str) -> &str {
    input.rsplit('.').next().unwrap_or(input)
}

/// The collection path of an item path: `/clusters/{clusterId}/imports/{id}` →
/// `/clusters/{clusterId}/imports`.
fn parent_collection(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rsplit_once('/') {
        Some((parent, last)) if last.starts_with('{') => parent,
        _ => trimmed,
    }
}

/// Where `field` (in any naming convention) is in a response schema: at the top, in the items
/// of a top-level array or of a response that is an array itself, or in the one object an
/// envelope holds.
fn locate(response: &Value, field: &str) -> Option<(String, bool)> {
    let named = |properties: &serde_json::Map<String, Value>| {
        properties
            .keys()
            .find(|name| *name == field)
            .or_else(|| properties.keys().find(|name| names::same_name(name, field)))
            .cloned()
    };
    if let Some(items) = response.get("items") {
        let found = named(items.get("properties")?.as_object()?)?;
        return Some((format!("0.{found}"), true));
    }
    let properties = response.get("properties")?.as_object()?;
    if let Some(found) = named(properties) {
        return Some((found, false));
    }
    properties
        .iter()
        .find_map(|(name, schema)| {
            let items = schema.get("items")?;
            let found = named(items.get("properties")?.as_object()?)?;
            Some((format!("{name}.0.{found}"), true))
        })
        .or_else(|| {
            // An envelope: the one object it holds (`{"ssh_key": {...}}`), or the object under
            // a conventional key beside others (`{"data": {...}, "permissions": {...}}`).
            let alone = properties.len() == 1;
            properties.iter().find_map(|(name, inner)| {
                let conventional = crate::envelope::ENVELOPE_KEYS
                    .iter()
                    .any(|key| key.eq_ignore_ascii_case(name));
                if !(alone || conventional) {
                    return None;
                }
                let found = named(inner.get("properties")?.as_object()?)?;
                Some((format!("{name}.{found}"), false))
            })
        })
}

fn required_inputs(operation: &Operation) -> Vec<String> {
    operation
        .parameters
        .iter()
        .filter(|parameter| {
            parameter.required
                && matches!(
                    parameter.location,
                    ParameterLocation::Path | ParameterLocation::Body
                )
                && !parameter.read_only
        })
        .map(|parameter| parameter.name.clone())
        .collect()
}

/// Infers the data flow of `spec`.
pub fn infer(spec: &ApiSpec) -> DataFlow {
    let mut flow = DataFlow::default();
    for operation in &spec.operations {
        flow.needs
            .insert(operation.id.clone(), required_inputs(operation));
    }
    for consumer in &spec.operations {
        for input in &flow.needs[&consumer.id] {
            let field = field_of(input);
            let path_parameter = consumer.parameters.iter().any(|parameter| {
                parameter.name == *input && parameter.location == ParameterLocation::Path
            });
            let linked_producers = linked(spec, consumer, input);
            // Only identifiers are produced by other operations; a name or a size is the
            // caller's to give (a response that echoes a `displayName` does not provide one),
            // unless the spec links another operation's answer to it.
            if !path_parameter && !names::is_id(field) && linked_producers.is_empty() {
                continue;
            }
            let generic = GENERIC.contains(&names::normalize(field).as_str());
            let collection = parent_collection(&consumer.path);
            let mut found: Vec<(Producer, usize, usize)> = Vec::new();
            for (order, producer) in spec.operations.iter().enumerate() {
                if producer.id == consumer.id {
                    continue;
                }
                // Needing it too makes it an echo, not a source.
                let echoes = flow.needs[&producer.id]
                    .iter()
                    .any(|need| names::same_name(field_of(need), field));
                if echoes {
                    continue;
                }
                let on_collection = producer.path.trim_end_matches('/') == collection;
                if generic && !on_collection {
                    continue;
                }
                let response = producer.response.as_ref();
                // A path parameter named apart from any response field (`{entryId}`,
                // `{blogPostId}`) holds the `id` its collection's operations answer with.
                let Some((at, listed)) = response
                    .and_then(|response| locate(response, field))
                    .or_else(|| {
                        (path_parameter && on_collection)
                            .then(|| response.and_then(|response| locate(response, "id")))
                            .flatten()
                    })
                else {
                    continue;
                };
                let provides = if listed {
                    Provides::Lists
                } else if producer.method == "POST" {
                    Provides::Creates
                } else {
                    Provides::Returns
                };
                let affinity = common_prefix(&producer.path, &consumer.path);
                found.push((
                    Producer {
                        operation: producer.id.clone(),
                        field: at,
                        provides,
                    },
                    affinity,
                    order,
                ));
            }
            found.sort_by(|a, b| {
                a.0.provides
                    .cmp(&b.0.provides)
                    .then(b.1.cmp(&a.1))
                    .then(a.2.cmp(&b.2))
            });
            // What the spec's links say comes first: it is the API's own word.
            let mut producers = linked_producers;
            for (producer, _, _) in found {
                if !producers
                    .iter()
                    .any(|known| known.operation == producer.operation)
                {
                    producers.push(producer);
                }
            }
            flow.producers
                .insert((consumer.id.clone(), input.clone()), producers);
        }
    }
    flow
}

/// The producers the spec's links name for `consumer`'s `input`: operations whose answer
/// holds it (`$response.body#/id`), in spec order.
fn linked(spec: &ApiSpec, consumer: &Operation, input: &str) -> Vec<Producer> {
    spec.operations
        .iter()
        .filter(|producer| producer.id != consumer.id)
        .flat_map(|producer| {
            producer.links.iter().filter_map(move |link| {
                let LinkSource::Body(field) = &link.source else {
                    return None;
                };
                (link.feeds(consumer) && names::same_name(&link.parameter, field_of(input))).then(
                    || Producer {
                        operation: producer.id.clone(),
                        field: field.clone(),
                        provides: if producer.method == "POST" {
                            Provides::Creates
                        } else {
                            Provides::Returns
                        },
                    },
                )
            })
        })
        .collect()
}

/// The length, in segments, of the path prefix two paths share.
fn common_prefix(a: &str, b: &str) -> usize {
    a.split('/')
        .zip(b.split('/'))
        .take_while(|(x, y)| x == y)
        .count()
}

impl DataFlow {
    /// The producers of `operation`'s required `input`, best first (creators, then lists,
    /// then the rest; nearer paths first).
    pub fn producers_of(&self, operation: &str, input: &str) -> &[Producer] {
        self.producers
            .get(&(operation.to_owned(), input.to_owned()))
            .map_or(&[], Vec::as_slice)
    }

    /// `operation`'s required inputs for which `known` has no value.
    pub fn missing_inputs<'a>(
        &'a self,
        operation: &str,
        known: impl Fn(&str) -> bool,
    ) -> Vec<&'a str> {
        self.needs
            .get(operation)
            .into_iter()
            .flatten()
            .map(String::as_str)
            .filter(|input| !known(input) && !known(field_of(input)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_and_fields() {
        assert_eq!(
            parent_collection("/clusters/{clusterId}/imports/{id}"),
            "/clusters/{clusterId}/imports"
        );
        // A custom method acts on the item: its collection is the same.
        assert_eq!(
            parent_collection("/clusters/{clusterId}/imports/{id}:cancel"),
            "/clusters/{clusterId}/imports"
        );
        assert_eq!(field_of("cluster.clusterId"), "clusterId");
    }
}
