//! [`PostgresKnowledge`]: knowledge in a PostgreSQL database, which may be the run store's own.
//!
//! One row per SUT in `wayline_knowledge` holds its patterns, pitfalls and statistics as JSON.
//! An update is one transaction that locks the SUT's row (making it first if it is new), reads,
//! changes and writes it, so writers on any number of machines lose nothing. The schema is
//! versioned in `wayline_migrations` (component `knowledge`) and brought up to date on first
//! use.

use std::sync::Arc;

use wayline_core::StoreError;
use wayline_core::store::{StoreErrorKind, check_id};
use wayline_durable::postgres::deadpool_postgres::{Client, GenericClient};
use wayline_durable::postgres::{Database, Tables, tokio_postgres};

use crate::model::Knowledge;
use crate::store::{Change, KnowledgeStore};

const MIGRATIONS: &[&str] = &[r#"CREATE TABLE wayline_knowledge (
        sut TEXT COLLATE "C" PRIMARY KEY,
        patterns JSON NOT NULL,
        pitfalls JSON NOT NULL,
        stats JSON NOT NULL
    );"#];

/// Knowledge in PostgreSQL. Cloning shares the connection pool.
#[derive(Debug, Clone)]
pub struct PostgresKnowledge {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    tables: Tables,
}

impl PostgresKnowledge {
    /// The knowledge in the database `url` names (`postgres://USER:PASSWORD@HOST/DATABASE`).
    /// Nothing connects yet: the first call connects and brings the schema up to date.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        Ok(PostgresKnowledge::on(
            Database::open(url).map_err(unavailable)?,
        ))
    }

    /// The knowledge in `database` (whose pool it shares, e.g. with the run store).
    pub fn on(database: Database) -> Self {
        PostgresKnowledge {
            inner: Arc::new(Inner {
                tables: database.tables("knowledge", MIGRATIONS),
            }),
        }
    }

    /// The database (its pool, and its URL with the password masked).
    pub fn database(&self) -> &Database {
        self.inner.tables.database()
    }

    async fn client(&self) -> Result<Client, StoreError> {
        self.inner.tables.client().await.map_err(unavailable)
    }

    fn error(&self, error: &tokio_postgres::Error) -> StoreError {
        unavailable(self.database().error(error))
    }

    async fn read(
        &self,
        client: &impl GenericClient,
        sut: &str,
        lock: bool,
    ) -> Result<Knowledge, StoreError> {
        let sql = if lock {
            "SELECT patterns::text, pitfalls::text, stats::text FROM wayline_knowledge
             WHERE sut = $1 FOR UPDATE"
        } else {
            "SELECT patterns::text, pitfalls::text, stats::text FROM wayline_knowledge
             WHERE sut = $1"
        };
        let row = client
            .query_opt(sql, &[&sut])
            .await
            .map_err(|error| self.error(&error))?;
        let mut knowledge = Knowledge::new();
        let Some(row) = row else {
            return Ok(knowledge);
        };
        let shown = self.database().shown();
        let corrupt = |what: &str, error: serde_json::Error| {
            StoreError::new(
                StoreErrorKind::Corrupt,
                format!("the {what} of SUT `{sut}` in {shown} are damaged: {error}"),
            )
        };
        knowledge.patterns =
            serde_json::from_str(row.get(0)).map_err(|e| corrupt("patterns", e))?;
        knowledge.pitfalls =
            serde_json::from_str(row.get(1)).map_err(|e| corrupt("pitfalls", e))?;
        knowledge.stats = serde_json::from_str(row.get(2)).map_err(|e| corrupt("statistics", e))?;
        Ok(knowledge)
    }
}

fn unavailable(error: wayline_durable::Error) -> StoreError {
    StoreError::new(StoreErrorKind::Unavailable, error.to_string())
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
impl KnowledgeStore for PostgresKnowledge {
    async fn load(&self, sut: &str) -> Result<Knowledge, StoreError> {
        check_id("sut", sut)?;
        let client = self.client().await?;
        self.read(&client, sut, false).await
    }

    async fn update(&self, sut: &str, change: Change) -> Result<Knowledge, StoreError> {
        check_id("sut", sut)?;
        let empty = Knowledge::new();
        let (patterns, pitfalls, stats) = (
            encode(&empty.patterns)?,
            encode(&empty.pitfalls)?,
            encode(&empty.stats)?,
        );
        let mut client = self.client().await?;
        let transaction = client
            .transaction()
            .await
            .map_err(|error| self.error(&error))?;
        // A row to lock, even for a SUT nobody wrote yet: two first writers then take turns
        // instead of one failing on the primary key.
        transaction
            .execute(
                "INSERT INTO wayline_knowledge (sut, patterns, pitfalls, stats)
                 VALUES ($1, $2::text::json, $3::text::json, $4::text::json)
                 ON CONFLICT (sut) DO NOTHING",
                &[&sut, &patterns, &pitfalls, &stats],
            )
            .await
            .map_err(|error| self.error(&error))?;
        let mut knowledge = self.read(&transaction, sut, true).await?;
        change(&mut knowledge);
        transaction
            .execute(
                "UPDATE wayline_knowledge SET patterns = $2::text::json,
                    pitfalls = $3::text::json, stats = $4::text::json
                 WHERE sut = $1",
                &[
                    &sut,
                    &encode(&knowledge.patterns)?,
                    &encode(&knowledge.pitfalls)?,
                    &encode(&knowledge.stats)?,
                ],
            )
            .await
            .map_err(|error| self.error(&error))?;
        transaction
            .commit()
            .await
            .map_err(|error| self.error(&error))?;
        Ok(knowledge)
    }

    async fn suts(&self) -> Result<Vec<String>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query("SELECT sut FROM wayline_knowledge ORDER BY sut", &[])
            .await
            .map_err(|error| self.error(&error))?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }
}
