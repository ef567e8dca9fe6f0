//! OpenAPI import: a Swagger 2.0 or OpenAPI 3.0/3.1 spec (JSON or YAML, `$ref`s to the same
//! or relative files) read into [`ApiSpec`] — its operations with their parameters, bodies,
//! success responses, states and security — and turned into one tool per operation
//! ([`ApiSpec::tools`]) that `wayline tools check` accepts.
//!
//! ```
//! use wayline_registry::openapi::ApiSpec;
//!
//! let spec = r#"{"swagger": "2.0", "host": "api.example.com", "basePath": "/v1",
//!   "paths": {"/things/{thingId}": {"get": {"operationId": "GetThing",
//!     "parameters": [{"name": "thingId", "in": "path", "required": true, "type": "string"}],
//!     "responses": {"200": {"description": "ok", "schema": {"type": "object",
//!       "properties": {"id": {"type": "string"}, "state": {"type": "string", "enum": ["NEW", "DONE"]}}}}}}}}}"#;
//! let api = ApiSpec::parse(spec, "spec.json".as_ref()).unwrap();
//! let op = &api.operations[0];
//! assert_eq!((op.id.as_str(), op.method.as_str(), op.path.as_str()), ("GetThing", "GET", "/things/{thingId}"));
//! assert_eq!(op.states, ["NEW", "DONE"]);
//! let tools = api.tools(None);
//! assert_eq!(tools[0].base_url, "https://api.example.com/v1");
//! ```

mod parse;
mod refs;
mod schema;
mod tools;

use std::path::Path;

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;
use wayline_durable::read::ReadScope;

use crate::Error;

pub use parse::{STATE_FIELDS, path_parameter_resource, singular};
pub use tools::{ImportedTool, tool_yaml};

/// Which specification a document follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SpecVersion {
    /// `swagger: "2.0"`.
    Swagger2,
    /// `openapi: 3.0.x` or `3.1.x`.
    OpenApi3,
}

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ParameterLocation {
    /// A `{name}` in the path.
    Path,
    /// The query string.
    Query,
    /// A header.
    Header,
    /// A cookie (not sent by wayline's tools; listed for the explorer).
    Cookie,
    /// A field of the request body.
    Body,
}

/// One input of an operation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Parameter {
    /// Its name in the spec (`cluster.clusterId`, `X-Request-Id`, `displayName`).
    pub name: String,
    /// The tool input that carries it (the name, or for headers and body fields with
    /// characters a template key cannot hold, the name with those made `_`).
    pub input: String,
    /// Where it goes.
    pub location: ParameterLocation,
    /// Whether the operation needs it.
    pub required: bool,
    /// Its JSON type (`string`, `integer`, `object`, ...), when the spec says.
    pub kind: Option<String>,
    /// Its allowed values, when the spec lists them.
    pub enum_values: Vec<Value>,
    /// What it is.
    pub description: String,
    /// Read-only in the spec (a body field the server fills; never sent).
    pub read_only: bool,
}

/// An operation's request body.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Body {
    /// Its media type (`application/json`, `application/x-www-form-urlencoded`).
    pub content_type: String,
    /// Whether a body is required.
    pub required: bool,
    /// Its schema, `$ref`s inlined.
    pub schema: Value,
    /// When the schema is not an object with properties: the one input carrying the whole
    /// body.
    pub whole: Option<String>,
}

/// One operation of the spec.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Operation {
    /// `operationId`, or one made from the method and path.
    pub id: String,
    /// True when the id was made here (the spec has none).
    pub generated_id: bool,
    /// Upper-case method.
    pub method: String,
    /// The path as the spec writes it (`/clusters/{cluster.clusterId}`, `…/{branchId}:reset`).
    pub path: String,
    /// Its summary.
    pub summary: String,
    /// Its description.
    pub description: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// Path, query, header and cookie parameters, then body fields.
    pub parameters: Vec<Parameter>,
    /// The request body, if any.
    pub body: Option<Body>,
    /// The first success status with a schema (`200`, `201`, ...).
    pub success_status: Option<u16>,
    /// The success response's schema, `$ref`s inlined.
    pub response: Option<Value>,
    /// The top-level fields of the success response.
    pub outputs: Vec<String>,
    /// The states the response reports (the enum of its `state`, `status` or `phase`).
    pub states: Vec<String>,
    /// The security schemes it needs (names into [`ApiSpec::security`]).
    pub security: Vec<String>,
    /// Deprecated in the spec.
    pub deprecated: bool,
    /// The OpenAPI `links` of its success responses: which later operation takes which of
    /// its answers.
    pub links: Vec<Link>,
    /// The JSON Schema of each response that has one, by status as the spec writes it (`200`,
    /// `4XX`, `default`): `$ref`s inlined, OpenAPI's dialect made plain JSON Schema 2020-12.
    pub response_schemas: IndexMap<String, Value>,
}

/// An OpenAPI link: a value of this operation's answer that another operation takes as a
/// parameter (`GetPost`'s `postId` is `$response.body#/id` of `CreatePost`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Link {
    /// The operation that takes the value (`operationId`, or the last segment of an
    /// `operationRef` pointer).
    pub operation: String,
    /// Its parameter (or body field) that takes it.
    pub parameter: String,
    /// Where the value is in the answer.
    pub source: LinkSource,
}

impl Link {
    /// True when `operation` is the one this link feeds (by its id, or for an `operationRef`,
    /// by its method and path).
    pub fn feeds(&self, operation: &Operation) -> bool {
        self.operation == operation.id
            || self.operation == format!("{} {}", operation.method, operation.path)
    }
}

/// Where a link's value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "in", content = "name", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LinkSource {
    /// A field of the response body, as dotted names (`id`, `data.id`) from the JSON Pointer.
    Body(String),
    /// A response header (`Location`).
    Header(String),
    /// A parameter of the linking request itself (`$request.path.postId`).
    Request(String),
}

impl Operation {
    /// An operation with no parameters, body or response (for callers that add operations of
    /// their own, as the explorer does for a SUT's command-line tools).
    pub fn new(id: impl Into<String>, method: impl Into<String>, path: impl Into<String>) -> Self {
        Operation {
            id: id.into(),
            generated_id: false,
            method: method.into(),
            path: path.into(),
            summary: String::new(),
            description: String::new(),
            tags: Vec::new(),
            parameters: Vec::new(),
            body: None,
            success_status: None,
            response: None,
            outputs: Vec::new(),
            states: Vec::new(),
            security: Vec::new(),
            deprecated: false,
            links: Vec::new(),
            response_schemas: IndexMap::new(),
        }
    }

    /// The parameters the operation cannot do without.
    pub fn required_inputs(&self) -> impl Iterator<Item = &Parameter> {
        self.parameters
            .iter()
            .filter(|parameter| parameter.required)
    }
}

/// How a security scheme authenticates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Security {
    /// HTTP basic.
    Basic,
    /// HTTP bearer (and OAuth2 / OpenID Connect, whose tokens are sent as bearer tokens).
    Bearer,
    /// HTTP digest.
    Digest,
    /// A key in a header.
    ApiKeyHeader {
        /// The header.
        name: String,
    },
    /// A key in the query string.
    ApiKeyQuery {
        /// The parameter.
        name: String,
    },
    /// Anything else (cookies, mutual TLS).
    Other {
        /// What the spec says.
        description: String,
    },
}

/// A spec, read.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ApiSpec {
    /// Swagger 2 or OpenAPI 3.
    pub version: SpecVersion,
    /// `info.title`.
    pub title: String,
    /// `info.version`.
    pub api_version: String,
    /// The base URL the spec gives (`schemes`/`host`/`basePath`, or the first server), if any.
    pub base_url: Option<String>,
    /// Every operation, in the spec's order.
    pub operations: Vec<Operation>,
    /// Security schemes by name.
    pub security: IndexMap<String, Security>,
    /// Resource states: a schema that has a state-like enum, by name, with its values.
    pub states: IndexMap<String, Vec<String>>,
    /// What was read but could not be used, or was guessed.
    pub warnings: Vec<String>,
}

impl ApiSpec {
    /// Reads the spec in the file `path` (JSON or YAML; relative `$ref`s from its directory,
    /// and only at or below it).
    pub fn load(path: &Path) -> Result<ApiSpec, Error> {
        ApiSpec::load_within(path, ReadScope::beside(path))
    }

    /// [`ApiSpec::load`], its `$ref`s read within `scope` (the spec's directory, and what else
    /// the reader allowed).
    pub fn load_within(path: &Path, scope: ReadScope) -> Result<ApiSpec, Error> {
        let text = crate::load::read_text(path)?;
        ApiSpec::parse_within(&text, path, scope)
    }

    /// Reads spec text; `path` names it in errors and anchors relative `$ref`s (read only at or
    /// below its directory).
    pub fn parse(text: &str, path: &Path) -> Result<ApiSpec, Error> {
        ApiSpec::parse_within(text, path, ReadScope::beside(path))
    }

    /// [`ApiSpec::parse`], its `$ref`s read within `scope`.
    pub fn parse_within(text: &str, path: &Path, scope: ReadScope) -> Result<ApiSpec, Error> {
        let document = refs::parse_document(text, path)?;
        parse::read(refs::Resolver::new(path, document, scope))
    }

    /// The operation `id`.
    pub fn operation(&self, id: &str) -> Option<&Operation> {
        self.operations.iter().find(|operation| operation.id == id)
    }
}
