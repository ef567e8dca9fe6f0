//! [`ToolCatalog`]: where tool definitions come from.

use std::collections::BTreeMap;

use crate::tool::ToolDefinition;

/// A read-only set of tool definitions keyed by id.
///
/// # Contract
/// - `tool(id)` returns the definition whose `id` field equals `id`, or `None`.
/// - `tool_ids()` lists every id once, in a stable order (the same on every call while the
///   catalog is unchanged); `tool` finds each of them.
/// - Lookups are cheap and do no I/O: load first (the registry does), then look up.
///
/// The always-available implementation is [`MemoryCatalog`]; the registry's `ToolRegistry` is
/// the one loaded from files.
pub trait ToolCatalog: Send + Sync {
    /// The tool with this id.
    fn tool(&self, id: &str) -> Option<&ToolDefinition>;
    /// Every tool id, in a stable order.
    fn tool_ids(&self) -> Vec<&str>;
}

/// A catalog held in memory, ordered by id.
///
/// ```
/// use wayline_core::{MemoryCatalog, ToolCatalog, ToolDefinition};
///
/// let catalog = MemoryCatalog::from_tools([ToolDefinition::new("geo", "https://ip-api.com")]);
/// assert!(catalog.tool("geo").is_some());
/// assert_eq!(catalog.tool_ids(), ["geo"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct MemoryCatalog {
    tools: BTreeMap<String, ToolDefinition>,
}

impl MemoryCatalog {
    /// An empty catalog.
    pub fn new() -> Self {
        Self::default()
    }

    /// A catalog of these tools (a later tool with the same id replaces an earlier one).
    pub fn from_tools(tools: impl IntoIterator<Item = ToolDefinition>) -> Self {
        let mut catalog = Self::new();
        for tool in tools {
            catalog.insert(tool);
        }
        catalog
    }

    /// Adds or replaces a tool, returning the one it replaced.
    pub fn insert(&mut self, tool: ToolDefinition) -> Option<ToolDefinition> {
        self.tools.insert(tool.id.clone(), tool)
    }
}

impl ToolCatalog for MemoryCatalog {
    fn tool(&self, id: &str) -> Option<&ToolDefinition> {
        self.tools.get(id)
    }

    fn tool_ids(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }
}
