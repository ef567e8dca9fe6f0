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
///   directory name in one store). Callers holding a SUT's display name store its knowledge
///   under [`sut_key`].
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

/// The key a SUT's knowledge is stored under, made from its name: a name a store takes as it
/// is (1 to 128 letters, digits, `_`, `-` or `.`, not starting with `.`) is its own key; in any
/// other, each run of other characters becomes one `-` (`TiDB Cloud TiDBX (Starter/Essential)`
/// → `TiDB-Cloud-TiDBX-Starter-Essential`), and a name with nothing left, or too long, is
/// keyed by a hash of it (`sut-…`). Names that differ only in punctuation share a key.
///
/// ```
/// use wayline_knowledge::sut_key;
///
/// assert_eq!(sut_key("tidbx"), "tidbx");
/// assert_eq!(sut_key("TiDB Cloud TiDBX (Starter/Essential)"), "TiDB-Cloud-TiDBX-Starter-Essential");
/// assert_eq!(sut_key("../escape"), "escape");
/// assert!(sut_key("ÄÖÜ").starts_with("sut-"));
/// ```
pub fn sut_key(name: &str) -> String {
    if wayline_core::store::check_id("sut", name).is_ok() {
        return name.to_owned();
    }
    let mut key = String::with_capacity(name.len());
    for character in name.chars() {
        if character.is_ascii_alphanumeric() || matches!(character, '_' | '.') {
            key.push(character);
        } else if !key.is_empty() && !key.ends_with('-') {
            key.push('-');
        }
    }
    let key = key.trim_start_matches(['.', '-']).trim_end_matches('-');
    let hashed = || format!("sut-{:016x}", fnv1a(name.as_bytes()));
    if key.is_empty() || !key.bytes().any(|byte| byte.is_ascii_alphanumeric()) {
        return hashed();
    }
    if key.len() > 128 {
        // Readable as far as it goes, and told apart from other long names by the hash.
        return format!("{}-{}", &key[..107], hashed());
    }
    key.to_owned()
}

/// The 64-bit FNV-1a hash: stable across builds and platforms, as a stored key must be.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
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
