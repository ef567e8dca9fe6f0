//! The PostgreSQL setup every wayline store shares: which text is a database URL
//! ([`is_url`]) and how it is shown ([`mask`]), and with the `postgres` feature a `Database`
//! (a connection pool on a `postgres://` URL, shown with its password masked), versioned
//! migrations applied under an advisory lock, and error messages that say what the server
//! said.
//!
//! Connections are encrypted as the URL's `sslmode` says, with libpq's meanings (see
//! `tls.rs`): `prefer` by default, `verify-full` with `sslrootcert=FILE` to authenticate the
//! server.
//!
//! ```
//! # #[cfg(feature = "postgres")] {
//! use wayline_durable::postgres::{Database, is_url, mask};
//!
//! assert!(is_url("postgres://ops:s3cret@db.internal:5432/wayline"));
//! assert_eq!(
//!     mask("postgres://ops:s3cret@db.internal/wayline?password=again&sslmode=disable"),
//!     "postgres://ops:***@db.internal/wayline?password=***&sslmode=disable"
//! );
//! // Opening makes the pool; nothing connects until the first query.
//! let database = Database::open("postgresql://ops:s3cret@localhost/wayline").unwrap();
//! assert_eq!(database.shown(), "postgresql://ops:***@localhost/wayline");
//! assert!(!format!("{database:?}").contains("s3cret"));
//! # }
//! ```

#[cfg(feature = "postgres")]
mod tls;

#[cfg(feature = "postgres")]
pub use pool::{
    DEFAULT_MAX_CONNECTIONS, Database, Tables, deadpool_postgres, describe, tokio_postgres,
};

/// Whether `text` names a PostgreSQL database (`postgres://…` or `postgresql://…`).
pub fn is_url(text: &str) -> bool {
    let lower = text.get(..13).unwrap_or(text).to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// `url` with its password replaced by `***`: the one in the user part and any `password=`
/// parameter. Everything else is kept, so the message still says which database it is.
///
/// A password that is not percent-encoded may hold any character (`@`, `/`, `?`, `#`), so the
/// user part is taken to end at the *last* `@` after the scheme: when a parameter holds an `@`
/// too, more than the password is hidden, never less.
pub fn mask(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return mask_parameters(url);
    };
    let rest = match rest.rfind('@') {
        Some(at) => {
            let (user_part, host_part) = rest.split_at(at);
            match user_part.split_once(':') {
                Some((user, _password)) => format!("{user}:***{}", mask_parameters(host_part)),
                None => format!("{user_part}{}", mask_parameters(host_part)),
            }
        }
        None => mask_parameters(rest),
    };
    format!("{scheme}://{rest}")
}

/// `url` split before its parameters: at the first `?` after the user part (a password may
/// hold a `?` of its own), as [`mask`] reads it.
#[cfg(feature = "postgres")]
pub(crate) fn split_query(url: &str) -> (&str, &str) {
    let user_part_end = url.rfind('@').map_or(0, |at| at + 1);
    match url[user_part_end..].find('?') {
        Some(at) => (&url[..user_part_end + at], &url[user_part_end + at + 1..]),
        None => (url, ""),
    }
}

/// `text` (what follows the user part) with the value of every `password=` parameter `***`.
fn mask_parameters(text: &str) -> String {
    let Some((base, query)) = text.split_once('?') else {
        return text.to_owned();
    };
    let parameters: Vec<String> = query
        .split('&')
        .map(|parameter| match parameter.split_once('=') {
            Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
            _ => parameter.to_owned(),
        })
        .collect();
    format!("{base}?{}", parameters.join("&"))
}

#[cfg(feature = "postgres")]
mod pool {
    use std::fmt;
    use std::str::FromStr;
    use std::sync::Arc;
    use std::time::Duration;

    pub use deadpool_postgres;
    pub use tokio_postgres;

    use deadpool_postgres::{Manager, ManagerConfig, Pool, PoolError, RecyclingMethod, Runtime};

    use super::{is_url, mask};
    use crate::error::Error;

    /// How many connections a pool opens at most, unless told otherwise.
    pub const DEFAULT_MAX_CONNECTIONS: usize = 16;

    /// How long a query waits for a free connection, and a new connection for the server, before
    /// failing.
    const WAIT: Duration = Duration::from_secs(30);
    const CONNECT: Duration = Duration::from_secs(10);

    /// The key all migrations take (`pg_advisory_xact_lock`), so that processes opening one
    /// database at once apply each migration once.
    const MIGRATION_LOCK: i64 = 0x0077_6179_6c69_6e65; // "wayline" in ASCII

    /// What the server (or the connection) said, in one line: the server's message with its
    /// detail and hint when it answered, else the driver's description and its causes.
    pub fn describe(error: &tokio_postgres::Error) -> String {
        if let Some(db) = error.as_db_error() {
            let mut text = format!("{} ({})", db.message(), db.code().code());
            if let Some(detail) = db.detail() {
                text.push_str(&format!("; {detail}"));
            }
            if let Some(hint) = db.hint() {
                text.push_str(&format!("; hint: {hint}"));
            }
            return text;
        }
        let mut text = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            let cause_text = cause.to_string();
            if !text.contains(&cause_text) {
                text.push_str(&format!(": {cause_text}"));
            }
            source = cause.source();
        }
        if text.contains("UnsupportedCertVersion") {
            text.push_str(
                "; the server's certificate is X.509 version 1 (what `openssl x509 -req` makes without extensions), which cannot be verified here: reissue it as version 3 with a subjectAltName, or connect with sslmode=require",
            );
        }
        text
    }

    /// A PostgreSQL database: a pool of connections to it, and its URL with the password masked.
    /// Cloning shares the pool.
    #[derive(Clone)]
    pub struct Database {
        pool: Pool,
        shown: Arc<str>,
    }

    impl fmt::Debug for Database {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("Database")
                .field("url", &self.shown)
                .field("max_connections", &self.pool.status().max_size)
                .finish()
        }
    }

    impl Database {
        /// A pool of at most [`DEFAULT_MAX_CONNECTIONS`] connections to the database the
        /// `postgres://` (or `postgresql://`) URL names. Nothing connects yet: a server that cannot
        /// be reached is reported by the first query.
        pub fn open(url: &str) -> Result<Database, Error> {
            Database::open_with(url, DEFAULT_MAX_CONNECTIONS)
        }

        /// As [`Database::open`], with at most `max_connections` connections (at least one).
        pub fn open_with(url: &str, max_connections: usize) -> Result<Database, Error> {
            let shown: Arc<str> = mask(url).into();
            let refuse = |message: String| Error::Postgres {
                database: shown.to_string(),
                message,
                code: None,
            };
            if !is_url(url) {
                return Err(refuse(
                    "write the database as a URL: postgres://USER:PASSWORD@HOST:PORT/DATABASE"
                        .into(),
                ));
            }
            let tls = super::tls::settings(url).map_err(refuse)?;
            // The driver's own message for a bad URL may quote it, password and all; say what
            // is wrong without it.
            let mut config = tokio_postgres::Config::from_str(&tls.url).map_err(|_| {
                refuse(
                    "this is not a PostgreSQL URL the driver understands; write postgres://USER:PASSWORD@HOST:PORT/DATABASE".into(),
                )
            })?;
            if config.get_connect_timeout().is_none() {
                config.connect_timeout(CONNECT);
            }
            if config.get_application_name().is_none() {
                config.application_name("wayline");
            }
            let manager = Manager::from_config(
                config,
                tls.connector,
                ManagerConfig {
                    recycling_method: RecyclingMethod::Fast,
                },
            );
            let pool = Pool::builder(manager)
                .max_size(max_connections.max(1))
                .runtime(Runtime::Tokio1)
                .wait_timeout(Some(WAIT))
                .create_timeout(Some(CONNECT))
                .build()
                .map_err(|error| refuse(format!("cannot make a connection pool: {error}")))?;
            Ok(Database { pool, shown })
        }

        /// The URL with its password masked (see [`mask`]).
        pub fn shown(&self) -> &str {
            &self.shown
        }

        /// A connection from the pool, returned to it when dropped.
        pub async fn client(&self) -> Result<deadpool_postgres::Client, Error> {
            self.pool.get().await.map_err(|error| match error {
                PoolError::Backend(error) => self.error(&error),
                PoolError::Timeout(_) => Error::Postgres {
                    database: self.shown.to_string(),
                    message: "no connection to the server within the time allowed; is it running and reachable?".into(),
                    code: None,
                },
                other => Error::Postgres {
                    database: self.shown.to_string(),
                    message: other.to_string(),
                    code: None,
                },
            })
        }

        /// `error`, as an [`Error::Postgres`] naming this database.
        pub fn error(&self, error: &tokio_postgres::Error) -> Error {
            Error::Postgres {
                database: self.shown.to_string(),
                message: describe(error),
                code: error.code().map(|code| code.code().to_owned()),
            }
        }

        /// The tables of `component` in this database (see [`Tables`]).
        pub fn tables(
            &self,
            component: &'static str,
            migrations: &'static [&'static str],
        ) -> Tables {
            Tables {
                database: self.clone(),
                component,
                migrations,
                migrated: tokio::sync::OnceCell::new(),
            }
        }

        /// Brings the schema of `component` up to date: `migrations[n]` is the SQL of version
        /// `n + 1`, and the versions a database has are rows of the table `wayline_migrations`.
        /// Each missing version runs in one transaction that holds an advisory lock, so that
        /// processes opening the database at once apply it once. A database with a version this
        /// build does not know was written by a newer wayline, and is refused rather than changed.
        pub async fn migrate(&self, component: &str, migrations: &[&str]) -> Result<(), Error> {
            let mut client = self.client().await?;
            let transaction = client
                .transaction()
                .await
                .map_err(|error| self.error(&error))?;
            let run = async {
                transaction
                    .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
                    .await?;
                transaction
                    .batch_execute(
                        "CREATE TABLE IF NOT EXISTS wayline_migrations (
                            component TEXT NOT NULL,
                            version INTEGER NOT NULL,
                            applied_at TIMESTAMPTZ NOT NULL DEFAULT now(),
                            PRIMARY KEY (component, version)
                        )",
                    )
                    .await?;
                let row = transaction
                    .query_one(
                        "SELECT COALESCE(MAX(version), 0) FROM wayline_migrations WHERE component = $1",
                        &[&component],
                    )
                    .await?;
                Ok::<i32, tokio_postgres::Error>(row.get(0))
            };
            let applied = run.await.map_err(|error| self.error(&error))?;
            let known = i32::try_from(migrations.len()).unwrap_or(i32::MAX);
            if applied > known {
                return Err(Error::Postgres {
                    database: self.shown.to_string(),
                    message: format!(
                        "its `{component}` tables are at schema version {applied}, newer than this wayline knows ({known}); upgrade wayline"
                    ),
                    code: None,
                });
            }
            for (version, sql) in (1..)
                .zip(migrations)
                .skip(usize::try_from(applied).unwrap_or(0))
            {
                transaction
                    .batch_execute(sql)
                    .await
                    .map_err(|error| self.error(&error))?;
                transaction
                    .execute(
                        "INSERT INTO wayline_migrations (component, version) VALUES ($1, $2)",
                        &[&component, &version],
                    )
                    .await
                    .map_err(|error| self.error(&error))?;
            }
            transaction
                .commit()
                .await
                .map_err(|error| self.error(&error))
        }
    }

    /// A component's tables in a database, brought up to date on first use: the stores open
    /// without a runtime or a server, and the first call connects and migrates (once, however
    /// many calls race; a failure is tried again by the next call).
    #[derive(Debug)]
    pub struct Tables {
        database: Database,
        component: &'static str,
        migrations: &'static [&'static str],
        migrated: tokio::sync::OnceCell<()>,
    }

    impl Tables {
        /// The database.
        pub fn database(&self) -> &Database {
            &self.database
        }

        /// A pooled connection, once the component's tables are up to date.
        pub async fn client(&self) -> Result<deadpool_postgres::Client, Error> {
            self.migrated
                .get_or_try_init(|| self.database.migrate(self.component, self.migrations))
                .await?;
            self.database.client().await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_masked_wherever_a_url_can_hold_them() {
        for (url, shown) in [
            ("postgres://u:p@h/d", "postgres://u:***@h/d"),
            ("postgres://u@h/d", "postgres://u@h/d"),
            ("postgres://h:5432/d", "postgres://h:5432/d"),
            ("postgres://u:p@ss@h/d", "postgres://u:***@h/d"),
            // Unencoded `?`, `/` and `#` in a password (issue 31: it was shown in clear).
            ("postgres://u:pa?ss@h/d", "postgres://u:***@h/d"),
            (
                "postgres://u:a/b?c#d@h/d?sslmode=require",
                "postgres://u:***@h/d?sslmode=require",
            ),
            (
                "postgres://u:pa?ss@h/d?password=x",
                "postgres://u:***@h/d?password=***",
            ),
            // An `@` in a parameter hides the host too: more than the password, never less.
            ("postgres://u:p@h/d?sslrootcert=/a@b", "postgres://u:***@b"),
            (
                "postgres://u@h/d?sslrootcert=/a@b",
                "postgres://u@h/d?sslrootcert=/a@b",
            ),
            (
                "postgresql://u:p@h/d?sslmode=disable&Password=x",
                "postgresql://u:***@h/d?sslmode=disable&Password=***",
            ),
        ] {
            assert_eq!(mask(url), shown, "{url}");
        }
        assert!(is_url("POSTGRES://h/d"));
        assert!(!is_url("/var/lib/wayline.db"));
        assert!(!is_url("post"));
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn a_malformed_url_is_refused_without_repeating_it() {
        let error = Database::open("postgres://u:s3cret@h:notaport/d").unwrap_err();
        let text = error.to_string();
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.contains("postgres://USER:PASSWORD@HOST"), "{text}");
    }
}
