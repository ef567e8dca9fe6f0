//! [`Location`]: where a store is — a path (a SQLite file or a directory of JSON files) or a
//! PostgreSQL database — as `--store` and `WAYLINE_STORE` name it.

use std::convert::Infallible;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use wayline_durable::postgres::mask;

/// The variable that names the store when no `--store` is given.
pub const STORE_VARIABLE: &str = "WAYLINE_STORE";

/// Where a store is. Shown (`Display`, `Debug`) with any password masked.
///
/// ```
/// use wayline_store::Location;
///
/// let shared: Location = "postgres://ops:s3cret@db.internal/wayline".parse().unwrap();
/// assert!(matches!(shared, Location::Postgres(_)));
/// assert_eq!(shared.to_string(), "postgres://ops:***@db.internal/wayline");
/// let local: Location = "runs/wayline.db".parse().unwrap();
/// assert_eq!(local.as_path(), Some(std::path::Path::new("runs/wayline.db")));
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Location {
    /// A path: a file ending in `.db` is a SQLite database, anything else a directory of JSON
    /// files.
    Path(PathBuf),
    /// A PostgreSQL database, by its `postgres://` (or `postgresql://`) URL.
    Postgres(String),
}

impl Location {
    /// The location `text` names: a `postgres://` or `postgresql://` URL is a database,
    /// anything else a path.
    pub fn parse(text: &str) -> Location {
        if wayline_durable::postgres::is_url(text) {
            Location::Postgres(text.to_owned())
        } else {
            Location::Path(PathBuf::from(text))
        }
    }

    /// The store a host uses when none is given: `WAYLINE_STORE` when set, else
    /// [`default_location`]. `None` when neither is known.
    pub fn configured() -> Option<Location> {
        Location::from_variable().or_else(|| default_location().map(Location::Path))
    }

    /// The store `WAYLINE_STORE` names, when it is set (and not empty).
    pub fn from_variable() -> Option<Location> {
        let value = std::env::var_os(STORE_VARIABLE).filter(|value| !value.is_empty())?;
        Some(match value.to_str() {
            Some(text) => Location::parse(text),
            None => Location::Path(PathBuf::from(value)),
        })
    }

    /// The path, for a store on this machine.
    pub fn as_path(&self) -> Option<&Path> {
        match self {
            Location::Path(path) => Some(path),
            Location::Postgres(_) => None,
        }
    }

    /// Whether there is a store there already (always `true` for a database: it is made on
    /// the first connection, as a server's database is).
    pub fn exists(&self) -> bool {
        match self {
            Location::Path(path) => path.exists(),
            Location::Postgres(_) => true,
        }
    }
}

/// Where the embedded default store lives: `$WAYLINE_HOME/wayline.db`, with `WAYLINE_HOME`
/// defaulting to `~/.wayline`. `None` when neither variable nor a home directory is known.
pub fn default_location() -> Option<PathBuf> {
    let home = match std::env::var_os("WAYLINE_HOME") {
        Some(home) if !home.is_empty() => PathBuf::from(home),
        // The platform's home directory (`$HOME`, or the user profile on Windows).
        _ => std::env::home_dir()
            .filter(|home| !home.as_os_str().is_empty())?
            .join(".wayline"),
    };
    Some(home.join("wayline.db"))
}

impl FromStr for Location {
    type Err = Infallible;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(Location::parse(text))
    }
}

impl From<PathBuf> for Location {
    fn from(path: PathBuf) -> Self {
        Location::Path(path)
    }
}

impl From<&Path> for Location {
    fn from(path: &Path) -> Self {
        Location::Path(path.to_path_buf())
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Path(path) => write!(f, "{}", path.display()),
            Location::Postgres(url) => f.write_str(&mask(url)),
        }
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Path(path) => f.debug_tuple("Path").field(path).finish(),
            Location::Postgres(url) => f.debug_tuple("Postgres").field(&mask(url)).finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_the_password() {
        let location = Location::parse("postgresql://u:hunter2@h:5432/d");
        assert!(!format!("{location:?}").contains("hunter2"));
        assert!(!location.to_string().contains("hunter2"));
        assert_eq!(
            Location::parse("./wayline.db"),
            Location::Path("./wayline.db".into())
        );
    }
}
