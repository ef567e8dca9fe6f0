//! The [`KnowledgeStore`] plug-in trait and the file format shared by the stores.

use std::fmt;

use wayline_core::StoreError;
use wayline_core::document::{self, Format};

use crate::model::{Knowledge, PatternsFile, PitfallsFile, Stats};

/// A change to one SUT's knowledge, applied under the store's lock.
pub type Change = Box<dyn FnOnce(&mut Knowledge) + Send>;

/// Where learned knowledge is kept.
///
/// # Contract
/// - Knowledge is kept per system under test (SUT); a SUT name is checked with
///   [`check_id`](wayline_core::store::check_id) before anything is written (it becomes a
///   directory name in one store).
/// - [`KnowledgeStore::load`] returns what is stored, field by field, or empty [`Knowledge`]
///   for a SUT never written.
/// - [`KnowledgeStore::update`] applies a change to the stored knowledge atomically: no other
///   update of the same SUT, in this process or another, runs between its read and its write,
///   so concurrent writers lose no count. When it returns, the change is on disk (for stores
///   that have one).
/// - [`KnowledgeStore::suts`] lists the SUTs with stored knowledge, sorted.
/// - Stored data that cannot be read back is a `Corrupt` error naming where it is (file and
///   line for YAML); it is never skipped or overwritten.
#[async_trait::async_trait]
pub trait KnowledgeStore: Send + Sync + fmt::Debug {
    /// The knowledge of `sut` (empty when nothing is stored).
    async fn load(&self, sut: &str) -> Result<Knowledge, StoreError>;

    /// Applies `change` to the knowledge of `sut` atomically and returns the result.
    async fn update(&self, sut: &str, change: Change) -> Result<Knowledge, StoreError>;

    /// The SUTs with stored knowledge, sorted.
    async fn suts(&self) -> Result<Vec<String>, StoreError>;
}

/// The three files of a SUT's knowledge, named as the knowledge format names them.
pub(crate) const FILES: [&str; 3] = ["patterns.yaml", "pitfalls.yaml", "stats.yaml"];

/// Reads the three YAML documents (`None` for a missing file). Errors name `origin` and the
/// line.
pub(crate) fn from_yaml(texts: [Option<(&str, String)>; 3]) -> Result<Knowledge, StoreError> {
    let corrupt = |error: Box<document::DocumentError>| {
        StoreError::new(
            wayline_core::store::StoreErrorKind::Corrupt,
            format!("{error}; fix the file or move it out of the store"),
        )
    };
    let [patterns, pitfalls, stats] = texts;
    let mut knowledge = Knowledge::new();
    if let Some((text, origin)) = patterns {
        let file: PatternsFile = parse_or_empty(text, &origin).map_err(corrupt)?;
        knowledge.patterns = file.patterns;
    }
    if let Some((text, origin)) = pitfalls {
        let file: PitfallsFile = parse_or_empty(text, &origin).map_err(corrupt)?;
        knowledge.pitfalls = file.pitfalls;
    }
    if let Some((text, origin)) = stats {
        knowledge.stats = parse_or_empty(text, &origin).map_err(corrupt)?;
    }
    Ok(knowledge)
}

/// A document, or its default when the text holds nothing but comments.
fn parse_or_empty<T: serde::de::DeserializeOwned + Default>(
    text: &str,
    origin: &str,
) -> Result<T, Box<document::DocumentError>> {
    let blank = text
        .lines()
        .all(|line| line.trim().is_empty() || line.trim_start().starts_with('#'));
    if blank {
        return Ok(T::default());
    }
    document::parse(text, Format::Yaml, origin)
}

/// The three YAML documents of `knowledge`, in [`FILES`] order.
pub(crate) fn to_yaml(knowledge: &Knowledge) -> Result<[String; 3], StoreError> {
    let encode = |result: Result<String, serde_norway::Error>| {
        result.map_err(|error| {
            StoreError::new(
                wayline_core::store::StoreErrorKind::Invalid,
                format!("cannot encode knowledge as YAML: {error}"),
            )
        })
    };
    Ok([
        encode(serde_norway::to_string(&PatternsFile {
            patterns: knowledge.patterns.clone(),
        }))?,
        encode(serde_norway::to_string(&PitfallsFile {
            pitfalls: knowledge.pitfalls.clone(),
        }))?,
        encode(serde_norway::to_string::<Stats>(&knowledge.stats))?,
    ])
}
