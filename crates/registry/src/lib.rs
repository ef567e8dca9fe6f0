//! Reading definitions: tool files loaded with actionable errors ([`ToolRegistry`]), workflow
//! files ([`load_workflow_file`]), the tool-configs file that holds credentials apart from
//! definitions ([`ToolConfigs`]), a compact catalog rendering ([`render_catalog`]), and the
//! import of OpenAPI 3.x and Swagger 2.0 specs ([`openapi`]: `$ref`s resolved across files,
//! one tool per operation, the resources' states).
//!
//! Every tool YAML of the Python structure-ai-bot project loads unchanged, in both its legacy
//! flat form and its config form. A file with a typo gets an error naming the file, line,
//! column, field and the nearest known field; two files with one id get an error naming both.
//!
//! ```
//! use wayline_core::document::Format;
//! use wayline_core::ToolCatalog;
//! use wayline_registry::parse_tool;
//!
//! let env = |name: &str| (name == "API_HOST").then(|| "api.example.com".to_owned());
//! let tool = parse_tool(
//!     "id: ping\nname: Ping\nbase_url: https://${API_HOST}\npath: /ping\n",
//!     Format::Yaml,
//!     "ping.yaml",
//!     &env,
//! ).unwrap();
//! assert_eq!(tool.base_url, "https://api.example.com");
//! ```

// On docs.rs, items behind a feature say which one.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod catalog;
mod config;
mod error;
mod load;
pub mod openapi;
mod registry;

pub use catalog::{CatalogEntry, CatalogInput, catalog_entries, render_catalog};
pub use config::{Secret, ToolConfig, ToolConfigs};
pub use error::Error;
pub use load::{
    EnvLookup, load_tool_file, load_tool_file_with, load_workflow_file, parse_tool, process_env,
};
pub use registry::{LoadErrors, LoadReport, ToolRegistry};
