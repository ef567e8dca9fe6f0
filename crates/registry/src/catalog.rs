//! A compact rendering of a tool catalog: id, description, inputs and outputs of every tool,
//! for planner prompts and for `wayline tools list`.

use std::fmt::Write;

use serde::Serialize;
use wayline_core::{ToolCatalog, ToolDefinition, ToolKind};

/// One tool as a catalog lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CatalogEntry {
    /// Tool id.
    pub id: String,
    /// Human label.
    pub name: String,
    /// What it does.
    pub description: String,
    /// `http`, `cli` or `code`.
    pub kind: String,
    /// For HTTP tools: method and URL template, e.g. `GET https://api.github.com/repos/{owner}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Inputs the tool reads.
    pub inputs: Vec<CatalogInput>,
    /// Output fields it extracts (empty: the whole response body).
    pub outputs: Vec<String>,
}

/// One input of a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CatalogInput {
    /// Input name, as used in `input_mapping`.
    pub name: String,
    /// Whether a step must map it.
    pub required: bool,
}

impl CatalogEntry {
    /// The entry for one tool.
    pub fn new(tool: &ToolDefinition) -> Self {
        let required = tool.required_inputs();
        let inputs = tool
            .input_names()
            .into_iter()
            .map(|name| CatalogInput {
                name: name.to_owned(),
                required: required.contains(&name),
            })
            .collect();
        let kind = match tool.kind {
            ToolKind::Http => "http",
            ToolKind::Cli => "cli",
            ToolKind::Code => "code",
            ToolKind::Mcp => "mcp",
        };
        let endpoint = (tool.kind == ToolKind::Http).then(|| {
            let base = tool.base_url.trim_end_matches('/');
            let path = tool.path.trim_start_matches('/');
            // The method the engine sends, on either request path.
            let method = tool.method.to_ascii_uppercase();
            if path.is_empty() {
                format!("{method} {base}")
            } else {
                format!("{method} {base}/{path}")
            }
        });
        CatalogEntry {
            id: tool.id.clone(),
            name: tool.name.clone(),
            description: tool.description.clone(),
            kind: kind.to_owned(),
            endpoint,
            inputs,
            outputs: tool
                .output_fields()
                .into_iter()
                .map(str::to_owned)
                .collect(),
        }
    }
}

/// The entries of every tool in the catalog, ordered by id.
pub fn catalog_entries(catalog: &dyn ToolCatalog) -> Vec<CatalogEntry> {
    catalog
        .tool_ids()
        .into_iter()
        .filter_map(|id| catalog.tool(id))
        .map(CatalogEntry::new)
        .collect()
}

/// A compact text listing: one block of up to three lines per tool.
///
/// ```
/// use wayline_core::{MemoryCatalog, ToolDefinition};
///
/// let mut tool = ToolDefinition::new("repo", "https://api.github.com");
/// tool.path = "/repos/{owner}/{repo}".into();
/// tool.description = "Get metadata for a GitHub repository".into();
/// let text = wayline_registry::render_catalog(&MemoryCatalog::from_tools([tool]));
/// assert_eq!(text, "\
/// repo — Get metadata for a GitHub repository
///   GET https://api.github.com/repos/{owner}/{repo}
///   inputs: owner*, repo*  outputs: (response body)
/// ");
/// ```
pub fn render_catalog(catalog: &dyn ToolCatalog) -> String {
    let mut out = String::new();
    for entry in catalog_entries(catalog) {
        let description = if entry.description.is_empty() {
            entry.name.as_str()
        } else {
            entry.description.as_str()
        };
        let _ = writeln!(out, "{} — {}", entry.id, description);
        if let Some(endpoint) = &entry.endpoint {
            let _ = writeln!(out, "  {endpoint}");
        }
        let inputs: Vec<String> = entry
            .inputs
            .iter()
            .map(|input| format!("{}{}", input.name, if input.required { "*" } else { "" }))
            .collect();
        let inputs = if inputs.is_empty() {
            "(none)".to_owned()
        } else {
            inputs.join(", ")
        };
        let outputs = if entry.outputs.is_empty() {
            "(response body)".to_owned()
        } else {
            entry.outputs.join(", ")
        };
        let _ = writeln!(out, "  inputs: {inputs}  outputs: {outputs}");
    }
    out
}
