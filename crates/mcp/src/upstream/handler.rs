//! An upstream's client side, the gateway's or the engine's: who we are to the server, and
//! where what the server sends besides answers goes — for the gateway, to its clients through
//! the relay (progress, log messages, list changes, and requests for sampling, elicitation
//! and roots); the engine's connections answer no requests.
#![expect(
    deprecated,
    reason = "sampling, roots and logging are deprecated by SEP-2577 (2026-07-28), and clients and servers of every earlier revision still use them"
)]

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ErrorData, Implementation, ListRootsResult,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext};

use crate::relay::{ListKind, Relay};

/// An upstream's client side: what it sends besides answers goes to the relay.
#[derive(Debug, Clone)]
pub(super) struct UpstreamHandler {
    /// The upstream's name.
    server: String,
    /// Where its notifications and requests go (none: the engine's own connections).
    relay: Option<Arc<Relay>>,
}

impl UpstreamHandler {
    /// The client side of server `server`, its traffic going to `relay` (none: the engine's).
    pub(super) fn new(server: &str, relay: Option<Arc<Relay>>) -> Self {
        UpstreamHandler {
            server: server.to_owned(),
            relay,
        }
    }

    fn relay(&self) -> Result<&Relay, ErrorData> {
        self.relay.as_deref().ok_or_else(|| {
            ErrorData::invalid_request("wayline's engine answers no requests of a server's", None)
        })
    }
}

impl rmcp::ClientHandler for UpstreamHandler {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.relay.is_some() {
            // What the gateway's clients may be asked; a client that cannot is refused with a
            // reason when asked.
            capabilities.sampling = Some(Default::default());
            capabilities.elicitation = Some(Default::default());
            capabilities.roots = Some(Default::default());
        }
        client_info(capabilities)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.relay()?.create_message(&self.server, params).await
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.relay()?.elicit(&self.server, params).await
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.relay()?.list_roots(&self.server).await
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(relay) = &self.relay {
            relay.progress(&self.server, params).await;
        }
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(relay) = &self.relay {
            relay.log(params).await;
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(relay) = &self.relay {
            relay.tools_changed(&self.server);
        }
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(relay) = &self.relay {
            relay.list_changed(ListKind::Resources).await;
        }
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(relay) = &self.relay {
            relay.list_changed(ListKind::Prompts).await;
        }
    }
}

/// Who we are, to servers, and what we can do: the handshake's revision (2025-11-25), which
/// servers of the newer revisions speak too.
fn client_info(capabilities: ClientCapabilities) -> ClientConfig {
    ClientConfig::new(
        capabilities,
        Implementation::new("wayline", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}
