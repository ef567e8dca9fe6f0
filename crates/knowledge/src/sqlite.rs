//! [`SqliteKnowledge`]: knowledge in a SQLite database, which may be the run store's own file.
//!
//! One row per SUT holds its patterns, pitfalls and statistics as JSON. An update is one
//! `BEGIN IMMEDIATE` transaction (read, change, write), so writers in several processes
//! serialise on SQLite's write lock and lose nothing. The schema version lives in the table
//! `wayline_knowledge_schema`, not in `PRAGMA user_version`, which the run store owns when both
//! share a file.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};
use wayline_core::StoreError;
use wayline_core::store::{StoreErrorKind, check_id};
use wayline_durable::sqlite::{self, Synchronous};

use crate::model::{Knowledge, Stats};
use crate::store::{Change, KnowledgeStore};

/// Schema changes, applied in order; the version is the number applied.
const MIGRATIONS: [&str; 1] = ["CREATE TABLE knowledge (
        sut TEXT PRIMARY KEY,
        patterns TEXT NOT NULL,
        pitfalls TEXT NOT NULL,
        stats TEXT NOT NULL
    );"];

/// Knowledge in SQLite.
#[derive(Debug, Clone)]
pub struct SqliteKnowledge {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    connection: Mutex<Connection>,
}

impl SqliteKnowledge {
    /// Opens (creating when missing) the database at `path` and brings its knowledge tables up
    /// to date.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let path = path.into();
        let mut connection =
            sqlite::open(&path, Synchronous::Normal).map_err(|error| match error {
                wayline_durable::Error::Sqlite { source, .. } => sql_error(&path, &source),
                other => StoreError::new(StoreErrorKind::Unavailable, other.to_string()),
            })?;
        migrate(&mut connection).map_err(|error| sql_error(&path, &error))?;
        Ok(SqliteKnowledge {
            inner: Arc::new(Inner {
                path,
                connection: Mutex::new(connection),
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection, &Path) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let mut connection = inner
                .connection
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            work(&mut connection, &inner.path)
        })
        .await
        .map_err(|error| {
            StoreError::new(
                StoreErrorKind::Unavailable,
                format!("SQLite knowledge task failed: {error}"),
            )
        })?
    }
}

fn migrate(connection: &mut Connection) -> rusqlite::Result<()> {
    let transaction =
        connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    transaction.execute_batch(
        "CREATE TABLE IF NOT EXISTS wayline_knowledge_schema (version INTEGER NOT NULL)",
    )?;
    let version: Option<i64> = transaction
        .query_row("SELECT version FROM wayline_knowledge_schema", [], |row| {
            row.get(0)
        })
        .optional()?;
    let applied = usize::try_from(version.unwrap_or(0)).unwrap_or(usize::MAX);
    if applied > MIGRATIONS.len() {
        // A newer wayline wrote this file; changing it could lose what that version keeps.
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_MISUSE),
            Some(format!(
                "its knowledge tables are at schema version {applied}, newer than this wayline knows ({}); use a newer wayline",
                MIGRATIONS.len()
            )),
        ));
    }
    for (index, migration) in MIGRATIONS.iter().enumerate().skip(applied) {
        transaction.execute_batch(migration)?;
        transaction.execute("DELETE FROM wayline_knowledge_schema", [])?;
        transaction.execute(
            "INSERT INTO wayline_knowledge_schema (version) VALUES (?1)",
            [index + 1],
        )?;
    }
    transaction.commit()
}

fn sql_error(path: &Path, error: &rusqlite::Error) -> StoreError {
    StoreError::new(
        StoreErrorKind::Unavailable,
        format!("SQLite knowledge store {}: {error}", path.display()),
    )
}

fn read(connection: &Connection, path: &Path, sut: &str) -> Result<Knowledge, StoreError> {
    let row: Option<(String, String, String)> = connection
        .query_row(
            "SELECT patterns, pitfalls, stats FROM knowledge WHERE sut = ?1",
            [sut],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()
        .map_err(|error| sql_error(path, &error))?;
    let Some((patterns, pitfalls, stats)) = row else {
        return Ok(Knowledge::new());
    };
    let corrupt = |what: &str, error: serde_json::Error| {
        StoreError::new(
            StoreErrorKind::Corrupt,
            format!(
                "the {what} of SUT `{sut}` in {} are damaged: {error}",
                path.display()
            ),
        )
    };
    let mut knowledge = Knowledge::new();
    knowledge.patterns = serde_json::from_str(&patterns).map_err(|e| corrupt("patterns", e))?;
    knowledge.pitfalls = serde_json::from_str(&pitfalls).map_err(|e| corrupt("pitfalls", e))?;
    knowledge.stats =
        serde_json::from_str::<Stats>(&stats).map_err(|e| corrupt("statistics", e))?;
    Ok(knowledge)
}

fn encode<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|error| {
        StoreError::new(
            StoreErrorKind::Invalid,
            format!("cannot encode knowledge: {error}"),
        )
    })
}

#[async_trait::async_trait]
impl KnowledgeStore for SqliteKnowledge {
    async fn load(&self, sut: &str) -> Result<Knowledge, StoreError> {
        check_id("sut", sut)?;
        let sut = sut.to_owned();
        self.blocking(move |connection, path| read(connection, path, &sut))
            .await
    }

    async fn update(&self, sut: &str, change: Change) -> Result<Knowledge, StoreError> {
        check_id("sut", sut)?;
        let sut = sut.to_owned();
        self.blocking(move |connection, path| {
            let transaction = connection
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(|error| sql_error(path, &error))?;
            let mut knowledge = read(&transaction, path, &sut)?;
            change(&mut knowledge);
            transaction
                .execute(
                    "INSERT INTO knowledge (sut, patterns, pitfalls, stats) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (sut) DO UPDATE SET patterns = excluded.patterns,
                         pitfalls = excluded.pitfalls, stats = excluded.stats",
                    params![
                        sut,
                        encode(&knowledge.patterns)?,
                        encode(&knowledge.pitfalls)?,
                        encode(&knowledge.stats)?
                    ],
                )
                .and_then(|_| transaction.commit())
                .map_err(|error| sql_error(path, &error))?;
            Ok(knowledge)
        })
        .await
    }

    async fn suts(&self) -> Result<Vec<String>, StoreError> {
        self.blocking(|connection, path| {
            let mut statement = connection
                .prepare("SELECT sut FROM knowledge ORDER BY sut")
                .map_err(|error| sql_error(path, &error))?;
            statement
                .query_map([], |row| row.get(0))
                .and_then(Iterator::collect)
                .map_err(|error| sql_error(path, &error))
        })
        .await
    }
}
