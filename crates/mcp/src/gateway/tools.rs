//! The tools the gateway lists: its own and its upstreams' (named `SERVER__NAME` with
//! `--prefix`), replaced whole when an upstream says its list changed, so a call in flight
//! keeps the tool it was decided on.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use rmcp::model::Tool;
use wayline_guard::Hints;

use crate::Error;

/// A tool as the gateway exposes it.
#[derive(Debug)]
pub(super) struct Exposed {
    /// The server it belongs to (empty: the gateway's own).
    pub(super) server: String,
    /// Its name there (what the guard decides on).
    pub(super) name: String,
    /// As listed to clients.
    pub(super) tool: Tool,
    /// What its annotations say.
    pub(super) hints: Hints,
}

/// The tools listed now, by exposed name.
type Listed = BTreeMap<String, Arc<Exposed>>;

/// The tools clients see.
#[derive(Debug)]
pub(super) struct Tools {
    listed: RwLock<Arc<Listed>>,
    prefix: bool,
}

impl Tools {
    /// The gateway's own `tools`, no upstream's yet.
    pub(super) fn own(tools: Vec<Tool>, prefix: bool) -> Tools {
        let listed = tools
            .into_iter()
            .map(|tool| {
                let name = tool.name.to_string();
                let exposed = Exposed {
                    server: String::new(),
                    name: name.clone(),
                    tool,
                    hints: Hints::default(),
                };
                (name, Arc::new(exposed))
            })
            .collect();
        Tools {
            listed: RwLock::new(Arc::new(listed)),
            prefix,
        }
    }

    /// The tools listed now.
    pub(super) fn now(&self) -> Arc<Listed> {
        Arc::clone(&self.listed.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// The tool clients call `name`.
    pub(super) fn get(&self, name: &str) -> Option<Arc<Exposed>> {
        self.now().get(name).cloned()
    }

    /// Whether names are prefixed with their server's (`SERVER__NAME`).
    pub(super) fn prefixed(&self) -> bool {
        self.prefix
    }

    /// The name clients call `server`'s prompt or tool `name` by.
    pub(super) fn exposed_name(&self, server: &str, name: &str) -> String {
        exposed_name(self.prefix, server, name)
    }

    /// Lists `server`'s `tools` in place of what it listed before. A name the gateway or
    /// another upstream lists already is an error, and the list stays as it was.
    pub(super) fn replace(&self, server: &str, tools: Vec<Tool>) -> Result<(), Error> {
        let mut listed = self.listed.write().unwrap_or_else(PoisonError::into_inner);
        let mut next: Listed = listed
            .iter()
            .filter(|(_, exposed)| exposed.server != server)
            .map(|(name, exposed)| (name.clone(), Arc::clone(exposed)))
            .collect();
        for tool in tools {
            let own_name = tool.name.to_string();
            let exposed = exposed_name(self.prefix, server, &own_name);
            if let Some(first) = next.get(&exposed) {
                return Err(Error::ToolClash {
                    tool: exposed,
                    first: if first.server.is_empty() {
                        "the gateway".to_owned()
                    } else {
                        first.server.clone()
                    },
                    second: server.to_owned(),
                });
            }
            let hints = tool
                .annotations
                .as_ref()
                .map(|hints| Hints::new(hints.read_only_hint, hints.destructive_hint))
                .unwrap_or_default();
            let mut shown = tool;
            shown.name = exposed.clone().into();
            let entry = Exposed {
                server: server.to_owned(),
                name: own_name,
                tool: shown,
                hints,
            };
            next.insert(exposed, Arc::new(entry));
        }
        *listed = Arc::new(next);
        Ok(())
    }
}

fn exposed_name(prefix: bool, server: &str, name: &str) -> String {
    if prefix {
        format!("{server}__{name}")
    } else {
        name.to_owned()
    }
}
