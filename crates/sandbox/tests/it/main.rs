//! The sandbox crate's integration tests: six end-to-end scenarios against the local provider
//! and through `BayClient` over the loopback server, Bay's error codes, the client against
//! `mockito`, the server's HTTP details, and the local provider's own behaviour.

/// Runs a check against both targets, as two tests: `local` (the provider called directly)
/// and `over_http` (`BayClient` → the loopback server → the provider).
/// `check` inside bubblewrap too, where it runs here (a one-line notice where it does not).
macro_rules! in_bubblewrap {
    ($check:ident, $name:ident) => {
        #[tokio::test]
        async fn $name() {
            if crate::common::bubblewrap_available() {
                $check(crate::common::Via::Bubblewrap).await;
            }
        }
    };
}

macro_rules! both {
    ($check:ident) => {
        mod $check {
            use crate::common::Via;

            #[tokio::test]
            async fn local() {
                super::$check(Via::Local).await;
            }

            #[tokio::test]
            async fn over_http() {
                super::$check(Via::Http).await;
            }
        }
    };
}

mod client;
mod code_step;
mod common;
mod conformance;
mod errors;
mod local;
mod scenarios;
mod server;
mod skills;
