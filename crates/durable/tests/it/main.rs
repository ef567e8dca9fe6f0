//! Integration tests of `wayline-durable` (one binary): what other processes see.

use std::path::Path;
use std::sync::{Arc, Barrier};

use wayline_durable::{LockFile, write};

/// Writers in several threads, each through its own lock-file handle, never lose an
/// increment: the lock serialises read-change-write, and each write is whole.
#[test]
fn writers_holding_the_lock_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("counter");
    let lock = dir.path().join(".lock");
    write(&counter, b"0").unwrap();
    let threads = 4;
    let rounds = 25;
    let start = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (counter, lock, start) = (counter.clone(), lock.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                for _ in 0..rounds {
                    let _held = LockFile::acquire(&lock).unwrap();
                    let value: u32 = read(&counter).parse().unwrap();
                    write(&counter, (value + 1).to_string().as_bytes()).unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    assert_eq!(read(&counter), (threads * rounds).to_string());
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn a_write_makes_the_directory_and_a_missing_parent_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("a/b/c.yaml");
    write(&nested, b"x: 1\n").unwrap();
    assert_eq!(read(&nested), "x: 1\n");
    // A file where a directory should be.
    let error = write(&dir.path().join("a/b/c.yaml/d.yaml"), b"").unwrap_err();
    assert!(error.to_string().starts_with("cannot create "), "{error}");
}

#[test]
fn sqlite_connections_share_a_file_in_wal_mode() {
    use wayline_durable::sqlite::{Synchronous, open};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db/wayline.db");
    let first = open(&path, Synchronous::Full).unwrap();
    first
        .execute_batch("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (7)")
        .unwrap();
    let second = open(&path, Synchronous::Normal).unwrap();
    let n: i64 = second
        .query_row("SELECT n FROM t", [], |row| row.get(0))
        .unwrap();
    assert_eq!(n, 7);
    let level: i64 = first
        .query_row("PRAGMA synchronous", [], |row| row.get(0))
        .unwrap();
    assert_eq!(level, 2, "FULL");
    let error = open(dir.path(), Synchronous::Normal).unwrap_err();
    assert!(
        error
            .to_string()
            .contains(&dir.path().display().to_string()),
        "{error}"
    );
}

/// Migrations on a real server: eight pools opening one database at once apply each version
/// once; a second open with more versions applies only the new one; a database a newer
/// wayline migrated is refused; a server that is not there is a clear error without the
/// password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_migrations_apply_once_and_refuse_newer_schemas() {
    use wayline_durable::postgres::Database;

    let Some(cluster) = wayline_testkit::postgres::start("the PostgreSQL migration test") else {
        return;
    };
    let url = cluster.url("postgres");
    let first = ["CREATE TABLE counted (n INTEGER); INSERT INTO counted VALUES (1);"];
    let opens: Vec<_> = (0..8)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move {
                Database::open(&url)
                    .unwrap()
                    .migrate("test", &first)
                    .await
                    .unwrap();
            })
        })
        .collect();
    for open in opens {
        open.await.unwrap();
    }
    let database = Database::open(&url).unwrap();
    let second = [first[0], "INSERT INTO counted VALUES (2);"];
    database.migrate("test", &second).await.unwrap();
    database.migrate("test", &second).await.unwrap();
    let client = database.client().await.unwrap();
    let rows: Vec<i32> = client
        .query("SELECT n FROM counted ORDER BY n", &[])
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(rows, [1, 2]);

    let error = database.migrate("test", &first).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("schema version 2, newer than this wayline knows (1)"),
        "{error}"
    );

    // Nobody listens on port 1.
    let gone = Database::open("postgres://wayline:s3cret@127.0.0.1:1/none").unwrap();
    let error = gone.client().await.unwrap_err().to_string();
    assert!(!error.contains("s3cret"), "{error}");
    assert!(
        error.contains("postgres://wayline:***@127.0.0.1:1/none"),
        "{error}"
    );
}

/// TLS as libpq's `sslmode` says: `prefer` (the default) and `require` encrypt without
/// checking the certificate; `verify-ca` checks the authority; `verify-full` the name too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_connections_are_encrypted_and_checked_as_sslmode_says() {
    use wayline_durable::postgres::Database;

    let Some(cluster) = wayline_testkit::postgres::start_tls("the PostgreSQL TLS test") else {
        return;
    };
    let authority = cluster.authority().unwrap().display().to_string();
    let port = cluster.port();
    let encrypted = |host: &str, query: &str| {
        let url = format!("postgres://wayline:s3cret@{host}:{port}/postgres?{query}");
        async move {
            let database = Database::open(&url).unwrap();
            let client = database.client().await?;
            let row = client
                .query_one(
                    "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                    &[],
                )
                .await
                .unwrap();
            Ok::<bool, wayline_durable::Error>(row.get(0))
        }
    };
    assert!(encrypted("127.0.0.1", "").await.unwrap(), "prefer encrypts");
    assert!(encrypted("127.0.0.1", "sslmode=require").await.unwrap());
    assert!(!encrypted("127.0.0.1", "sslmode=disable").await.unwrap());
    let trusted = format!("sslrootcert={authority}");
    assert!(
        encrypted("127.0.0.1", &format!("sslmode=verify-ca&{trusted}"))
            .await
            .unwrap(),
        "verify-ca: the authority is trusted, the name is not checked"
    );
    assert!(
        encrypted("localhost", &format!("sslmode=verify-full&{trusted}"))
            .await
            .unwrap()
    );
    let wrong_name = encrypted("127.0.0.1", &format!("sslmode=verify-full&{trusted}"))
        .await
        .unwrap_err()
        .to_string();
    assert!(wrong_name.contains("not valid for name"), "{wrong_name}");
    assert!(!wrong_name.contains("s3cret"), "{wrong_name}");
    let unknown_authority = encrypted("localhost", "sslmode=verify-full")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        unknown_authority.contains("invalid peer certificate"),
        "{unknown_authority}"
    );
}

/// A user the server lets in with a client certificate only (PostgreSQL's `cert` method):
/// `sslcert` and `sslkey` present it; without them the server refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_client_certificates_are_presented_from_sslcert_and_sslkey() {
    use wayline_durable::postgres::Database;
    use wayline_testkit::postgres::CERTIFIED_USER;

    let Some(cluster) =
        wayline_testkit::postgres::start_tls("the PostgreSQL client certificate test")
    else {
        return;
    };
    let (cert, key) = cluster.client_certificate().unwrap();
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let port = cluster.port();
    let user = |query: &str| {
        let url = format!("postgres://{CERTIFIED_USER}@127.0.0.1:{port}/postgres?{query}");
        async move {
            let database = Database::open(&url)?;
            let client = database.client().await?;
            let row = client
                .query_one("SELECT current_user::text", &[])
                .await
                .unwrap();
            Ok::<String, wayline_durable::Error>(row.get(0))
        }
    };
    let identity = format!("sslcert={cert}&sslkey={key}");
    assert_eq!(user(&identity).await.unwrap(), CERTIFIED_USER);
    let authority = cluster.authority().unwrap().display().to_string();
    assert_eq!(
        user(&format!(
            "sslmode=verify-ca&sslrootcert={authority}&{identity}"
        ))
        .await
        .unwrap(),
        CERTIFIED_USER
    );
    let refused = user("sslmode=require").await.unwrap_err().to_string();
    assert!(
        refused.contains("connection requires a valid client certificate"),
        "{refused}"
    );
    let half = user(&format!("sslcert={cert}"))
        .await
        .unwrap_err()
        .to_string();
    assert!(half.contains("sslcert needs sslkey"), "{half}");
    let swapped = user(&format!("sslcert={key}&sslkey={cert}"))
        .await
        .unwrap_err()
        .to_string();
    assert!(swapped.contains("no certificate in it"), "{swapped}");
    let dir = tempfile::tempdir().unwrap();
    let stranger = dir.path().join("stranger.key");
    std::fs::write(
        &stranger,
        rcgen::KeyPair::generate().unwrap().serialize_pem(),
    )
    .unwrap();
    let mismatched = user(&format!("sslcert={cert}&sslkey={}", stranger.display()))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        mismatched.contains("is not the private key of the certificate in sslcert"),
        "{mismatched}"
    );
}
