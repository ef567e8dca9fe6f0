//! The crate's error type.

use std::path::PathBuf;

use wayline_core::document::DocumentError;

/// Errors of `wayline-explorer`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file (SUT config, answers, session) could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file is not the document it should be (with the line and a suggestion; a value
    /// expanded from the environment is never shown).
    #[error(transparent)]
    Document(#[from] Box<DocumentError>),
    /// A value in a SUT config or an answers file that cannot be used, or a credential whose
    /// variable is unset.
    #[error("{origin}: {message}")]
    Invalid {
        /// The file (or the SUT's name).
        origin: String,
        /// What is wrong, and how to fix it.
        message: String,
    },
    /// A session id that cannot name a session file.
    #[error("`{id}` is not a session id (ses_...)")]
    SessionId {
        /// The id given.
        id: String,
    },
    /// A session could not be written.
    #[error(transparent)]
    Write(#[from] wayline_durable::Error),
    /// A session could not be encoded as YAML.
    #[error("cannot write the session: {message}")]
    Encode {
        /// What the encoder said.
        message: String,
    },
    /// The SUT's knowledge could not be read: nothing was explored.
    #[error("the knowledge of `{sut}` (stored as `{key}`) could not be read: {source}")]
    KnowledgeUnreadable {
        /// The SUT's name.
        sut: String,
        /// The key its knowledge is stored under ([`wayline_knowledge::sut_key`]).
        key: String,
        /// What the store said.
        #[source]
        source: wayline_core::StoreError,
    },
    /// What the session learned could not be saved; the exploration happened and its session
    /// file is saved.
    #[error("what the session learned about `{sut}` (stored as `{key}`) was not saved: {source}")]
    KnowledgeUnsaved {
        /// The SUT's name.
        sut: String,
        /// The key its knowledge is stored under ([`wayline_knowledge::sut_key`]).
        key: String,
        /// What the store said.
        #[source]
        source: wayline_core::StoreError,
    },
    /// A scenario step holds text that is not the JSON it should be.
    #[error("step `{step}`: `{field}` is not the JSON it should be: {message}")]
    Scenario {
        /// The step's name.
        step: String,
        /// `request`, `expect` or `save`.
        field: &'static str,
        /// What the parser said.
        message: String,
    },
}
