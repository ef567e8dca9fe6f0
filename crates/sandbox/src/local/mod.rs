//! The embedded local provider (being built): for now, its Python sessions and shell commands.
//!
//! It is not a security boundary: code runs as the user running wayline, in a workspace
//! directory. (Isolation with `bubblewrap`, when installed, comes with the provider.)

pub mod python;
pub mod shell;
