//! Reading Swagger 2.0 and OpenAPI 3.x documents into [`ApiSpec`].

use std::collections::HashSet;
use std::path::PathBuf;

use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::refs::{Resolver, spec_error};
use super::{
    ApiSpec, Body, Link, LinkSource, Operation, Parameter, ParameterLocation, Security, SpecVersion,
};
use crate::Error;

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// The `links` of the success responses (OpenAPI 3): each parameter a linked operation takes,
/// with where its value is. Expressions that are no body field, header or request parameter (a
/// constant, `$url`) are left out.
fn links(successes: &[(Option<u16>, Value)]) -> Vec<Link> {
    let mut found = Vec::new();
    for (_, response) in successes {
        let Some(Value::Object(links)) = response.get("links") else {
            continue;
        };
        for link in links.values() {
            let target = link
                .get("operationId")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| {
                    // `#/paths/~1posts~1{postId}/get` names no id: the method and path do.
                    let reference = link.get("operationRef").and_then(Value::as_str)?;
                    let pointer = reference.split_once('#').map_or(reference, |(_, p)| p);
                    let mut parts = pointer.trim_start_matches('/').split('/');
                    let (Some("paths"), Some(path), Some(method)) =
                        (parts.next(), parts.next(), parts.next())
                    else {
                        return None;
                    };
                    let path = path.replace("~1", "/").replace("~0", "~");
                    Some(format!("{} {path}", method.to_ascii_uppercase()))
                });
            let (Some(target), Some(Value::Object(parameters))) = (target, link.get("parameters"))
            else {
                continue;
            };
            for (parameter, expression) in parameters {
                let name = parameter.rsplit('.').next().unwrap_or(parameter);
                if let Some(source) = expression.as_str().and_then(link_source) {
                    found.push(Link {
                        operation: target.clone(),
                        parameter: name.to_owned(),
                        source,
                    });
                }
            }
        }
    }
    found
}

/// Where a link's runtime expression takes its value: `$response.body#/id` → the body field
/// `id` (`/data/id` → `data.id`), `$response.header.Location` → that header,
/// `$request.path.postId` → that request parameter.
fn link_source(expression: &str) -> Option<LinkSource> {
    let expression = expression
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}');
    if let Some(pointer) = expression.strip_prefix("$response.body#") {
        let dotted = pointer
            .trim_start_matches('/')
            .split('/')
            .map(|token| token.replace("~1", "/").replace("~0", "~"))
            .collect::<Vec<_>>()
            .join(".");
        return (!dotted.is_empty()).then_some(LinkSource::Body(dotted));
    }
    if let Some(header) = expression.strip_prefix("$response.header.") {
        return Some(LinkSource::Header(header.to_owned()));
    }
    [
        "$request.path.",
        "$request.query.",
        "$request.header.",
        "$request.body#/",
    ]
    .iter()
    .find_map(|prefix| expression.strip_prefix(prefix))
    .map(|name| LinkSource::Request(name.replace('/', ".")))
}

/// The fields of an OpenAPI operation object (Swagger 2's and OpenAPI 3's together).
const OPERATION_FIELDS: [&str; 13] = [
    "operationId",
    "summary",
    "description",
    "parameters",
    "requestBody",
    "responses",
    "tags",
    "security",
    "deprecated",
    "callbacks",
    "servers",
    "consumes",
    "produces",
];

/// True when `value` has at least one field of an operation: one that has none would import
/// as a tool with no id, inputs or outputs.
fn is_operation(value: &Value) -> bool {
    value.as_object().is_some_and(|fields| {
        OPERATION_FIELDS
            .iter()
            .any(|field| fields.contains_key(*field))
    })
}

/// Property names that report a resource's state, in the order they are looked for.
pub const STATE_FIELDS: [&str; 3] = ["state", "status", "phase"];

fn text(value: Option<&Value>) -> String {
    value.and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// A pointer token escaped as RFC 6901 says.
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// `name` as a template key: word characters kept, anything else `_`.
pub(crate) fn input_name(name: &str) -> String {
    wayline_core::workflow::identifier(name, "value")
}

/// An id for an operation without `operationId`: `get_clusters_clusterId`.
fn generated_id(method: &str, path: &str) -> String {
    let mut id = method.to_ascii_lowercase();
    for part in path.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        if !part.is_empty() {
            id.push('_');
            id.push_str(part);
        }
    }
    id
}

pub(crate) fn read(mut resolver: Resolver) -> Result<ApiSpec, Error> {
    let origin = resolver.root_path().display().to_string();
    let root = resolver.root().clone();
    let Value::Object(root) = root else {
        return Err(spec_error(&origin, "", "a spec is an object with `paths`"));
    };
    // `swagger: 2.0` and `openapi: 3.1` unquoted are numbers in YAML.
    let declared_version = |key: &str| {
        root.get(key).map(|value| match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
    };
    let version = if let Some(declared) = declared_version("swagger") {
        if !declared.starts_with('2') {
            return Err(spec_error(
                &origin,
                "/swagger",
                format!("Swagger `{declared}` is not supported; this reads 2.0"),
            ));
        }
        SpecVersion::Swagger2
    } else if let Some(declared) = declared_version("openapi") {
        if !declared.starts_with('3') {
            return Err(spec_error(
                &origin,
                "/openapi",
                format!("OpenAPI `{declared}` is not supported; this reads 3.0 and 3.1"),
            ));
        }
        SpecVersion::OpenApi3
    } else {
        return Err(spec_error(
            &origin,
            "",
            "neither `swagger: \"2.0\"` nor `openapi: 3.x` is declared; is this an OpenAPI document?",
        ));
    };
    let current = resolver.root_path().to_path_buf();
    let mut reader = Reader {
        current,
        resolver: &mut resolver,
        origin: origin.clone(),
        version,
        root: &root,
        warnings: Vec::new(),
        states: IndexMap::new(),
    };
    let base_url = reader.base_url();
    let security = reader.security();
    let operations = reader.operations()?;
    let states = std::mem::take(&mut reader.states);
    let warnings = std::mem::take(&mut reader.warnings);
    let info = root.get("info");
    Ok(ApiSpec {
        version,
        title: text(info.and_then(|info| info.get("title"))),
        api_version: text(info.and_then(|info| info.get("version"))),
        base_url,
        operations,
        security,
        states,
        warnings,
    })
}

struct Reader<'a> {
    /// The document references are resolved against (see [`Reader::document`]).
    current: PathBuf,
    resolver: &'a mut Resolver,
    origin: String,
    version: SpecVersion,
    root: &'a Map<String, Value>,
    warnings: Vec<String>,
    states: IndexMap<String, Vec<String>>,
}

impl Reader<'_> {
    /// The document the operation being read is in (the root, or the file a `$ref` to a path
    /// item or an operation led to): its references are relative to it.
    fn document(&self) -> PathBuf {
        self.current.clone()
    }

    fn inline(&mut self, value: &Value) -> Result<Value, Error> {
        let document = self.document();
        self.resolver.inline(&document, value)
    }

    fn base_url(&mut self) -> Option<String> {
        match self.version {
            SpecVersion::Swagger2 => {
                let host = self.root.get("host").and_then(Value::as_str)?;
                let scheme = self
                    .root
                    .get("schemes")
                    .and_then(Value::as_array)
                    .and_then(|schemes| {
                        // https when offered, else the first.
                        schemes
                            .iter()
                            .filter_map(Value::as_str)
                            .find(|scheme| *scheme == "https")
                            .or_else(|| schemes.first().and_then(Value::as_str))
                    })
                    .unwrap_or("https");
                let base = text(self.root.get("basePath"));
                Some(format!("{scheme}://{host}{}", base.trim_end_matches('/')))
            }
            SpecVersion::OpenApi3 => {
                let server = self
                    .root
                    .get("servers")
                    .and_then(Value::as_array)
                    .and_then(|servers| servers.first())?;
                let mut url = text(server.get("url"));
                // Server variables take their defaults.
                if let Some(Value::Object(variables)) = server.get("variables") {
                    for (name, variable) in variables {
                        url = url.replace(&format!("{{{name}}}"), &text(variable.get("default")));
                    }
                }
                if url.starts_with("http://") || url.starts_with("https://") {
                    Some(url.trim_end_matches('/').to_owned())
                } else {
                    self.warnings.push(format!(
                        "the server URL `{url}` is relative; give the API's base URL (--base-url)"
                    ));
                    None
                }
            }
        }
    }

    fn security(&mut self) -> IndexMap<String, Security> {
        let schemes = match self.version {
            SpecVersion::Swagger2 => self.root.get("securityDefinitions"),
            SpecVersion::OpenApi3 => self
                .root
                .get("components")
                .and_then(|components| components.get("securitySchemes")),
        };
        let Some(Value::Object(schemes)) = schemes else {
            return IndexMap::new();
        };
        let schemes = schemes.clone();
        schemes
            .iter()
            .map(|(name, scheme)| {
                let scheme = self.inline(scheme).unwrap_or_else(|_| scheme.clone());
                let kind = text(scheme.get("type"));
                let security = match kind.as_str() {
                    "basic" => Security::Basic,
                    "http" => match text(scheme.get("scheme")).to_ascii_lowercase().as_str() {
                        "basic" => Security::Basic,
                        "bearer" => Security::Bearer,
                        "digest" => Security::Digest,
                        other => Security::Other {
                            description: format!("http scheme `{other}`"),
                        },
                    },
                    "apiKey" => {
                        let name = text(scheme.get("name"));
                        match text(scheme.get("in")).as_str() {
                            "header" => Security::ApiKeyHeader { name },
                            "query" => Security::ApiKeyQuery { name },
                            other => Security::Other {
                                description: format!("an API key in `{other}`"),
                            },
                        }
                    }
                    "oauth2" | "openIdConnect" => Security::Bearer,
                    other => Security::Other {
                        description: format!("`{other}`"),
                    },
                };
                (name.clone(), security)
            })
            .collect()
    }

    fn operations(&mut self) -> Result<Vec<Operation>, Error> {
        let Some(Value::Object(paths)) = self.root.get("paths") else {
            return Err(spec_error(
                &self.origin,
                "/paths",
                "the spec has no `paths`",
            ));
        };
        let paths = paths.clone();
        let global_security = self.root.get("security").cloned();
        let mut operations = Vec::new();
        let mut seen = HashSet::new();
        let root = self.resolver.root_path().to_path_buf();
        for (path, item) in &paths {
            self.current = root.clone();
            let (item_document, item) = self.resolver.follow(&root, item)?;
            let Value::Object(item) = item else {
                continue;
            };
            // Path-level parameters, resolved where the path item is.
            self.current = item_document.clone();
            let shared = match item.get("parameters") {
                Some(parameters) => Some(self.inline(parameters)?),
                None => None,
            };
            for method in METHODS {
                let Some(operation) = item.get(method) else {
                    continue;
                };
                let pointer = format!("/paths/{}/{method}", escape(path));
                // Not in the OpenAPI grammar, but how large multi-file specs are written
                // (`get: {$ref: resources/apps/apps_list.yml}`), and read by the common tools.
                let (operation_document, operation) =
                    self.resolver.follow(&item_document, operation)?;
                self.current = operation_document;
                if !is_operation(&operation) {
                    return Err(spec_error(
                        &self.origin,
                        &pointer,
                        format!(
                            "{} {path} has none of an operation's fields ({}); if it is a \
                             `$ref`, make it point at the operation itself",
                            method.to_ascii_uppercase(),
                            OPERATION_FIELDS.join(", ")
                        ),
                    ));
                }
                let mut read = self.operation(
                    path,
                    method,
                    &operation,
                    shared.as_ref(),
                    global_security.as_ref(),
                    &pointer,
                )?;
                self.current = root.clone();
                if !seen.insert(read.id.clone()) {
                    let unique = format!("{}_{}", read.id, generated_id(method, path));
                    self.warnings.push(format!(
                        "operation id `{}` is used twice; {method} {path} is `{unique}`",
                        read.id
                    ));
                    read.id = unique;
                    seen.insert(read.id.clone());
                }
                operations.push(read);
            }
        }
        if operations.is_empty() {
            self.warnings.push("the spec has no operations".to_owned());
        }
        Ok(operations)
    }

    fn operation(
        &mut self,
        path: &str,
        method: &str,
        operation: &Value,
        shared: Option<&Value>,
        global_security: Option<&Value>,
        pointer: &str,
    ) -> Result<Operation, Error> {
        let (id, generated) = match operation.get("operationId").and_then(Value::as_str) {
            Some(id) if !id.trim().is_empty() => (id.to_owned(), false),
            _ => (generated_id(method, path), true),
        };
        // Operation parameters override the path item's by (name, in).
        let mut raw: Vec<Value> = Vec::new();
        for list in [shared, operation.get("parameters")].into_iter().flatten() {
            for parameter in list.as_array().into_iter().flatten() {
                let parameter = self.inline(parameter)?;
                let key = (text(parameter.get("name")), text(parameter.get("in")));
                raw.retain(|known| (text(known.get("name")), text(known.get("in"))) != key);
                raw.push(parameter);
            }
        }
        let mut parameters = Vec::new();
        let mut body = None;
        let mut form_fields = Vec::new();
        for parameter in &raw {
            let name = text(parameter.get("name"));
            let place = text(parameter.get("in"));
            let required =
                parameter.get("required").and_then(Value::as_bool) == Some(true) || place == "path";
            // Swagger 2 puts the type on the parameter; OpenAPI 3 in its `schema`.
            let schema = parameter.get("schema").cloned().unwrap_or(Value::Null);
            let typed = if schema.is_object() {
                &schema
            } else {
                parameter
            };
            let location = match place.as_str() {
                "path" => ParameterLocation::Path,
                "query" => ParameterLocation::Query,
                "header" => ParameterLocation::Header,
                "cookie" => ParameterLocation::Cookie,
                "body" => {
                    body = Some(self.body_of(
                        &schema,
                        &name,
                        required,
                        self.consumes(operation),
                        &mut parameters,
                    ));
                    continue;
                }
                "formData" => {
                    form_fields.push((name, required, parameter.clone()));
                    continue;
                }
                other => {
                    self.warnings.push(format!(
                        "{}: parameter `{name}` is `in: {other}`, which is not known; left out",
                        pointer
                    ));
                    continue;
                }
            };
            let input =
                if location == ParameterLocation::Path || location == ParameterLocation::Query {
                    name.clone()
                } else {
                    input_name(&name)
                };
            parameters.push(Parameter {
                input,
                location,
                required,
                kind: typed.get("type").and_then(Value::as_str).map(str::to_owned),
                enum_values: enum_of(typed),
                description: text(parameter.get("description")),
                read_only: false,
                name,
            });
        }
        if !form_fields.is_empty() {
            let content_type = self
                .consumes(operation)
                .filter(|kind| kind.contains("form"))
                .unwrap_or_else(|| "application/x-www-form-urlencoded".to_owned());
            let mut properties = Map::new();
            let mut required = Vec::new();
            for (name, needed, parameter) in form_fields {
                if needed {
                    required.push(Value::from(name.clone()));
                }
                properties.insert(name, parameter);
            }
            let schema = serde_json::json!({"type": "object", "properties": properties, "required": required});
            body = Some(self.body_of(&schema, "body", false, Some(content_type), &mut parameters));
        }
        if let Some(request_body) = operation.get("requestBody") {
            let request_body = self.inline(request_body)?;
            let required = request_body.get("required").and_then(Value::as_bool) == Some(true);
            if let Some((content_type, media)) = pick_media(request_body.get("content")) {
                let schema = media.get("schema").cloned().unwrap_or(Value::Null);
                body = Some(self.body_of(
                    &schema,
                    "body",
                    required,
                    Some(content_type),
                    &mut parameters,
                ));
            }
        }
        let response_schemas = self.response_schemas(operation)?;
        let successes = self.successes(operation)?;
        let (success_status, response) = self.success(&successes);
        let outputs = response
            .as_ref()
            .and_then(|schema| schema.get("properties"))
            .and_then(Value::as_object)
            .map(|properties| properties.keys().cloned().collect())
            .unwrap_or_default();
        let resource = match response.as_ref() {
            // A made-up id says little; the schema's own name says more.
            Some(schema) if generated => schema
                .get(super::refs::REF_NAME)
                .or_else(|| schema.get("title"))
                .and_then(Value::as_str)
                .map_or_else(|| operation_resource(&id), str::to_owned),
            _ => operation_resource(&id),
        };
        let states = response
            .as_ref()
            .map(|schema| self.record_states(schema, &resource))
            .unwrap_or_default();
        let security = operation
            .get("security")
            .or(global_security)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
            .flat_map(|requirement| requirement.keys().cloned())
            .collect();
        let mut description = text(operation.get("description"));
        description.truncate(description.trim_end().len());
        Ok(Operation {
            id,
            generated_id: generated,
            method: method.to_ascii_uppercase(),
            path: path.to_owned(),
            summary: text(operation.get("summary")).trim().to_owned(),
            description,
            tags: operation
                .get("tags")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            parameters,
            body,
            success_status,
            response,
            outputs,
            states,
            security,
            deprecated: operation.get("deprecated").and_then(Value::as_bool) == Some(true),
            links: links(&successes),
            response_schemas,
        })
    }

    /// The JSON Schema of each response that has one, by status as written, in the spec's
    /// order (`$ref`s inlined; see [`super::schema`]).
    fn response_schemas(&mut self, operation: &Value) -> Result<IndexMap<String, Value>, Error> {
        let Some(Value::Object(responses)) = operation.get("responses") else {
            return Ok(IndexMap::new());
        };
        let mut schemas = IndexMap::new();
        for (status, response) in responses {
            let response = self.inline(response)?;
            let schema = match self.version {
                SpecVersion::Swagger2 => response.get("schema").cloned(),
                SpecVersion::OpenApi3 => pick_media(response.get("content"))
                    .and_then(|(_, media)| media.get("schema").cloned()),
            };
            if let Some(schema) = schema {
                schemas.insert(status.clone(), super::schema::json_schema(&schema));
            }
        }
        Ok(schemas)
    }

    /// The operation's 2xx responses, by status code, `$ref`s inlined: read once, for its
    /// success schema and its links.
    fn successes(&mut self, operation: &Value) -> Result<Vec<(Option<u16>, Value)>, Error> {
        let Some(Value::Object(responses)) = operation.get("responses") else {
            return Ok(Vec::new());
        };
        let mut codes: Vec<(&String, &Value)> = responses
            .iter()
            .filter(|(code, _)| code.starts_with('2'))
            .collect();
        codes.sort_by(|a, b| a.0.cmp(b.0));
        codes
            .into_iter()
            .map(|(code, response)| Ok((code.parse::<u16>().ok(), self.inline(response)?)))
            .collect()
    }

    /// Swagger 2's `consumes` of the operation or the spec, first entry.
    fn consumes(&self, operation: &Value) -> Option<String> {
        operation
            .get("consumes")
            .or_else(|| self.root.get("consumes"))
            .and_then(Value::as_array)
            .and_then(|kinds| kinds.first())
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// A body from its schema: an object's writable properties become body fields (inputs);
    /// anything else is one input, `name`.
    fn body_of(
        &mut self,
        schema: &Value,
        name: &str,
        required: bool,
        content_type: Option<String>,
        parameters: &mut Vec<Parameter>,
    ) -> Body {
        let schema = self.inline(schema).unwrap_or_else(|error| {
            self.warnings.push(error.to_string());
            Value::Null
        });
        let content_type = content_type.unwrap_or_else(|| "application/json".to_owned());
        let properties = schema.get("properties").and_then(Value::as_object);
        let Some(properties) = properties.filter(|properties| !properties.is_empty()) else {
            let input = unique_input(&input_name(name), parameters);
            parameters.push(Parameter {
                name: name.to_owned(),
                input: input.clone(),
                location: ParameterLocation::Body,
                required,
                kind: schema
                    .get("type")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                enum_values: Vec::new(),
                description: text(schema.get("description")),
                read_only: false,
            });
            return Body {
                content_type,
                required,
                schema,
                whole: Some(input),
            };
        };
        let needed: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for (field, property) in properties {
            let read_only = property.get("readOnly").and_then(Value::as_bool) == Some(true);
            let input = unique_input(&input_name(field), parameters);
            parameters.push(Parameter {
                name: field.clone(),
                input,
                location: ParameterLocation::Body,
                required: needed.contains(&field.as_str()) && !read_only,
                kind: property
                    .get("type")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                enum_values: enum_of(property),
                description: text(property.get("description")),
                read_only,
            });
        }
        Body {
            content_type,
            required,
            schema,
            whole: None,
        }
    }

    /// The first 2xx response with a schema: its status and schema (else the first status).
    fn success(&self, successes: &[(Option<u16>, Value)]) -> (Option<u16>, Option<Value>) {
        let first_status = successes.iter().find_map(|(status, _)| *status);
        successes
            .iter()
            .find_map(|(status, response)| {
                let schema = match self.version {
                    SpecVersion::Swagger2 => response.get("schema").cloned(),
                    SpecVersion::OpenApi3 => pick_media(response.get("content"))
                        .and_then(|(_, media)| media.get("schema").cloned()),
                }?;
                Some((*status, Some(schema)))
            })
            .unwrap_or((first_status, None))
    }

    /// The state enum of a response (and of the objects it lists), recorded under `resource`.
    fn record_states(&mut self, schema: &Value, resource: &str) -> Vec<String> {
        let properties = schema.get("properties").and_then(Value::as_object);
        let Some(properties) = properties else {
            return Vec::new();
        };
        for field in STATE_FIELDS {
            let values: Vec<String> = properties
                .get(field)
                .map(enum_of)
                .unwrap_or_default()
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            if !values.is_empty() {
                let known = self.states.entry(resource.to_owned()).or_default();
                for value in &values {
                    if !known.contains(value) {
                        known.push(value.clone());
                    }
                }
                return values;
            }
        }
        Vec::new()
    }
}

/// `wanted`, or `body_wanted` when an earlier parameter has that input already.
fn unique_input(wanted: &str, parameters: &[Parameter]) -> String {
    let taken = |name: &str| parameters.iter().any(|parameter| parameter.input == name);
    if !taken(wanted) {
        return wanted.to_owned();
    }
    let mut candidate = format!("body_{wanted}");
    let mut n = 2;
    while taken(&candidate) {
        candidate = format!("body_{wanted}_{n}");
        n += 1;
    }
    candidate
}

/// The enum values of a schema (or of its items).
fn enum_of(schema: &Value) -> Vec<Value> {
    schema
        .get("enum")
        .or_else(|| schema.get("items").and_then(|items| items.get("enum")))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The media type to use from an OpenAPI 3 `content` map: JSON first, then forms, then the
/// first listed.
fn pick_media(content: Option<&Value>) -> Option<(String, &Value)> {
    let content = content?.as_object()?;
    let preferred = content
        .iter()
        .find(|(kind, _)| kind.contains("json"))
        .or_else(|| content.iter().find(|(kind, _)| kind.contains("form")))
        .or_else(|| content.iter().next())?;
    Some((preferred.0.clone(), preferred.1))
}

/// The resource an operation acts on, from its id: `ClusterService_GetCluster` → `Cluster`,
/// `getPetById` → `PetById`; used to file the states an operation reports.
pub(crate) fn operation_resource(id: &str) -> String {
    let action = id.rsplit('_').next().unwrap_or(id);
    let verbs = [
        "Create",
        "Get",
        "List",
        "Delete",
        "Update",
        "PartialUpdate",
        "Reset",
        "Cancel",
        "create",
        "get",
        "list",
        "delete",
        "update",
        "patch",
        "put",
        "post",
    ];
    let mut best = action;
    for verb in verbs {
        if let Some(rest) = action.strip_prefix(verb)
            && rest.len() < best.len()
            && !rest.is_empty()
        {
            best = rest;
        }
    }
    singular(best)
}

/// An English plural made singular, for resource names (`Branches` → `Branch`).
///
/// ```
/// use wayline_registry::openapi::singular;
/// assert_eq!(singular("branches"), "branch");
/// assert_eq!(singular("policies"), "policy");
/// assert_eq!(singular("clusters"), "cluster");
/// ```
pub fn singular(word: &str) -> String {
    if let Some(stem) = word.strip_suffix("ies") {
        return format!("{stem}y");
    }
    for ending in ["ches", "shes", "sses", "xes"] {
        if word.ends_with(ending) {
            return word[..word.len() - 2].to_owned();
        }
    }
    match word.strip_suffix('s') {
        Some(stem) if !stem.ends_with('s') && !stem.is_empty() => stem.to_owned(),
        _ => word.to_owned(),
    }
}

/// The resource (singular, lower case) a path parameter holds the id of: the collection
/// segment just before `{name}` (`/clusters/{clusterId}/branches/{branchId}:reset`:
/// `clusterId` → `cluster`, `branchId` → `branch`; `/posts/{entryId}`: `entryId` → `post`);
/// `None` when none comes before it. It holds whatever the parameter is called.
///
/// ```
/// use wayline_registry::openapi::path_parameter_resource;
///
/// assert_eq!(path_parameter_resource("/posts/{id}", "id").as_deref(), Some("post"));
/// ```
pub fn path_parameter_resource(path: &str, name: &str) -> Option<String> {
    let placeholder = format!("{{{name}}}");
    let mut collection: Option<&str> = None;
    for segment in path.split('/') {
        if segment.starts_with(&placeholder) {
            return collection.map(|collection| singular(&collection.to_lowercase()));
        }
        collection = (!segment.is_empty() && !segment.starts_with('{'))
            .then(|| segment.split(':').next().unwrap_or(segment));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_inputs_and_resources() {
        assert_eq!(
            generated_id("GET", "/clusters/{clusterId}/branches/{branchId}:reset"),
            "get_clusters_clusterId_branches_branchId_reset"
        );
        assert_eq!(input_name("X-Request-Id"), "X_Request_Id");
        assert_eq!(operation_resource("ClusterService_GetCluster"), "Cluster");
        assert_eq!(operation_resource("BranchService_ListBranches"), "Branch");
        assert_eq!(singular("Policies"), "Policy");
        assert_eq!(singular("Address"), "Address");
        assert_eq!(operation_resource("getPetById"), "PetById");
    }
}
