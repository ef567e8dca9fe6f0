//! The embedded local provider: Bay's API over workspace directories and processes of this
//! machine ([`LocalProvider`]).
//!
//! **It is not a security boundary.** Code runs as the user running wayline, in the
//! sandbox's workspace directory; with `bubblewrap` installed (and [`IsolationMode::Auto`] or
//! [`IsolationMode::Bubblewrap`]) it runs with a read-only view of the host and the workspace at
//! `/workspace`, which limits accidents, not attacks. [`LocalProvider::isolation`] says which
//! mode is active.

mod files;
pub mod isolation;
pub mod output;
mod provider;
pub mod python;
pub mod shell;
mod skills;
mod state;

pub use isolation::{Isolation, IsolationMode};
pub use provider::{LocalConfig, LocalProvider};
