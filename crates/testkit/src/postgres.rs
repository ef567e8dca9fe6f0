//! A throwaway PostgreSQL cluster for tests (issue 24): `initdb` in a temporary directory,
//! started with `pg_ctl` on a free loopback port with trust authentication and `fsync=off`,
//! stopped when dropped. PostgreSQL refuses to run as root, so as root (CI containers) the
//! cluster runs as `nobody` through `runuser`. Where PostgreSQL is not installed, [`start`]
//! prints one line saying what is skipped and answers `None`; `.ci/run` installs it.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A running cluster; stopped on drop.
#[derive(Debug)]
pub struct Cluster {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    as_nobody: bool,
    /// With TLS: the PEM file of the authority that signed the server's certificate.
    authority: Option<PathBuf>,
    /// The server's settings (`pg_ctl -o`), for starting it again.
    options: String,
    _dir: tempfile::TempDir,
}

/// How a cluster is set up.
#[derive(Debug, Clone, Copy, Default)]
struct Setup {
    durable: bool,
    tls: bool,
}

/// The user tests connect as (a superuser of the throwaway cluster).
pub const USER: &str = "wayline";

/// In a cluster with TLS ([`start_tls`]): a user that may log in over TLS only, and only with
/// the client certificate [`Cluster::client_certificate`] (PostgreSQL's `cert` method).
pub const CERTIFIED_USER: &str = "certified";

/// The directory holding `initdb` and `pg_ctl`: `WAYLINE_PG_BIN`, else `pg_config --bindir`,
/// else the newest `/usr/lib/postgresql/*/bin` (Debian keeps them off the `PATH`), else
/// wherever `initdb` is on the `PATH`.
pub fn bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("WAYLINE_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let has_initdb = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Ok(output) = Command::new("pg_config").arg("--bindir").output()
        && output.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        if has_initdb(&dir) {
            return Some(dir);
        }
    }
    let mut debian: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|dir| has_initdb(dir))
        .collect();
    debian.sort_by_key(|dir| {
        dir.parent()
            .and_then(Path::file_name)
            .and_then(|name| name.to_str())
            .and_then(|name| name.parse::<u32>().ok())
            .unwrap_or(0)
    });
    if let Some(newest) = debian.pop() {
        return Some(newest);
    }
    std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).find(|dir| has_initdb(dir)))
}

/// Starts a cluster, or says in one line that `what` is skipped and why. It does not sync to
/// disk (`fsync=off`, `synchronous_commit=off`): fast for tests, and a crash of the machine
/// loses it anyway.
pub fn start(what: &str) -> Option<Cluster> {
    start_with(what, Setup::default())
}

/// As [`start`], with TLS on: a certificate for the name `localhost` (not for `127.0.0.1`),
/// signed by an authority of the test's own ([`Cluster::authority`]), and a user
/// [`CERTIFIED_USER`] let in only with the client certificate [`Cluster::client_certificate`].
pub fn start_tls(what: &str) -> Option<Cluster> {
    start_with(
        what,
        Setup {
            durable: false,
            tls: true,
        },
    )
}

/// As [`start`], but committing durably as a production server does (`fsync` and
/// `synchronous_commit` on, the server's defaults): for benchmarks that compare stores.
pub fn start_durable(what: &str) -> Option<Cluster> {
    start_with(
        what,
        Setup {
            durable: true,
            tls: false,
        },
    )
}

fn start_with(what: &str, setup: Setup) -> Option<Cluster> {
    let Some(bin) = bin_dir() else {
        eprintln!(
            "skipped: {what} (PostgreSQL is not installed here; .ci/run installs it, or set WAYLINE_PG_BIN)"
        );
        return None;
    };
    match Cluster::start(bin, setup) {
        Ok(cluster) => Some(cluster),
        Err(reason) => panic!("PostgreSQL is installed but a cluster would not start: {reason}"),
    }
}

impl Cluster {
    fn start(bin: PathBuf, setup: Setup) -> Result<Cluster, String> {
        let dir = tempfile::Builder::new()
            .prefix("wayline-pg-")
            .tempdir()
            .map_err(|error| format!("no temporary directory: {error}"))?;
        let as_nobody = is_root();
        if as_nobody {
            chown_nobody(dir.path())?;
        }
        let data = dir.path().join("data");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|error| format!("no free port: {error}"))?
            .port();
        let mut cluster = Cluster {
            bin,
            data,
            port,
            as_nobody,
            authority: None,
            options: String::new(),
            _dir: dir,
        };
        cluster.run(
            "initdb",
            &[
                "-D",
                &cluster.data.display().to_string(),
                "-U",
                USER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        )?;
        let tls = if setup.tls {
            cluster.authority = Some(cluster.write_certificates()?);
            cluster.require_client_certificate()?;
            " -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key -c ssl_ca_file=root.crt"
        } else {
            ""
        };
        let syncing = if setup.durable {
            ""
        } else {
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        };
        cluster.options = format!(
            "-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c max_connections=200{syncing}{tls}",
            cluster.data.display()
        );
        cluster.start_server()?;
        if setup.tls {
            cluster.psql_checked("postgres", &format!("CREATE ROLE {CERTIFIED_USER} LOGIN"))?;
        }
        Ok(cluster)
    }

    /// With TLS: the PEM files of a client certificate for [`CERTIFIED_USER`], signed by
    /// [`Cluster::authority`], and of its private key.
    pub fn client_certificate(&self) -> Option<(PathBuf, PathBuf)> {
        self.authority.as_ref().map(|_| {
            (
                self.data.with_file_name("client.crt"),
                self.data.with_file_name("client.key"),
            )
        })
    }

    /// `pg_hba.conf` lets [`CERTIFIED_USER`] in over TLS with a client certificate only; the
    /// lines initdb wrote (trust) follow for everyone else.
    fn require_client_certificate(&self) -> Result<(), String> {
        let hba = self.data.join("pg_hba.conf");
        let written = std::fs::read_to_string(&hba)
            .map_err(|error| format!("cannot read {}: {error}", hba.display()))?;
        let first = format!(
            "hostssl all {CERTIFIED_USER} 127.0.0.1/32 cert\nhost all {CERTIFIED_USER} 127.0.0.1/32 reject\n"
        );
        std::fs::write(&hba, first + &written)
            .map_err(|error| format!("cannot write {}: {error}", hba.display()))
    }

    fn start_server(&self) -> Result<(), String> {
        let log = self.data.join("server.log").display().to_string();
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data.display().to_string(),
                "-o",
                &self.options,
                "-l",
                &log,
                "-w",
                "start",
            ],
        )
        .map(drop)
    }

    fn stop_server(&self, mode: &str) -> Result<(), String> {
        let data = self.data.display().to_string();
        self.run("pg_ctl", &["-D", &data, "-m", mode, "-w", "stop"])
            .map(drop)
    }

    /// Stops the server (`pg_ctl stop -m fast`: every connection cut, as in a restart or a
    /// failover, and what was committed kept — with `synchronous_commit` off, as here, an
    /// immediate stop would lose the last commits, which a production server does not);
    /// its data stays for [`Cluster::start_again`]. Panics with `pg_ctl`'s message when it
    /// fails.
    pub fn stop(&self) {
        if let Err(reason) = self.stop_server("fast") {
            panic!("{reason}");
        }
    }

    /// Starts the server [`Cluster::stop`] stopped, on the same port with the same settings.
    pub fn start_again(&self) {
        if let Err(reason) = self.start_server() {
            panic!("{reason}");
        }
    }

    /// With TLS: the PEM file of the authority that signed the server's certificate.
    pub fn authority(&self) -> Option<&Path> {
        self.authority.as_deref()
    }

    /// Writes the server's certificate and key into the data directory (the key readable by
    /// the server's user only, as PostgreSQL demands) and the authority's beside it.
    fn write_certificates(&self) -> Result<PathBuf, String> {
        let failed = |error: rcgen::Error| format!("cannot make test certificates: {error}");
        let authority_key = rcgen::KeyPair::generate().map_err(failed)?;
        let mut authority = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
        authority.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        authority
            .distinguished_name
            .push(rcgen::DnType::CommonName, "wayline test authority");
        let authority_pem = authority.self_signed(&authority_key).map_err(failed)?.pem();
        let issuer = rcgen::Issuer::new(authority, authority_key);
        let server_key = rcgen::KeyPair::generate().map_err(failed)?;
        // For the name `localhost` only: connecting to 127.0.0.1 is a name that does not match.
        let server = rcgen::CertificateParams::new(vec!["localhost".into()])
            .map_err(failed)?
            .signed_by(&server_key, &issuer)
            .map_err(failed)?;
        let write = |path: &Path, text: &str| {
            std::fs::write(path, text)
                .map_err(|error| format!("cannot write {}: {error}", path.display()))
        };
        let key = self.data.join("server.key");
        write(&self.data.join("server.crt"), &server.pem())?;
        write(&key, &server_key.serialize_pem())?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))
                .map_err(|error| format!("cannot restrict {}: {error}", key.display()))?;
        }
        if self.as_nobody {
            chown_nobody(&key)?;
            chown_nobody(&self.data.join("server.crt"))?;
        }
        let authority_file = self.data.with_file_name("authority.pem");
        write(&authority_file, &authority_pem)?;
        // The server checks client certificates against the authority, from its own copy.
        let root = self.data.join("root.crt");
        write(&root, &authority_pem)?;
        if self.as_nobody {
            chown_nobody(&root)?;
        }
        let client_key = rcgen::KeyPair::generate().map_err(failed)?;
        let mut client = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
        client
            .distinguished_name
            .push(rcgen::DnType::CommonName, CERTIFIED_USER);
        client.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let client = client.signed_by(&client_key, &issuer).map_err(failed)?;
        write(&self.data.with_file_name("client.crt"), &client.pem())?;
        write(
            &self.data.with_file_name("client.key"),
            &client_key.serialize_pem(),
        )?;
        Ok(authority_file)
    }

    /// Runs program `name` of the PostgreSQL directory (as `nobody` when we are root).
    fn run(&self, name: &str, args: &[&str]) -> Result<Output, String> {
        let program = self.bin.join(name);
        let mut command = if self.as_nobody {
            let mut command = Command::new("runuser");
            command.args(["-u", "nobody", "--"]).arg(&program);
            command
        } else {
            Command::new(&program)
        };
        let output = command
            .args(args)
            .output()
            .map_err(|error| format!("cannot run {}: {error}", program.display()))?;
        if output.status.success() {
            Ok(output)
        } else {
            Err(format!(
                "{name} failed: {}{}",
                String::from_utf8_lossy(&output.stderr),
                String::from_utf8_lossy(&output.stdout)
            ))
        }
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A connection URL for database `database` (`postgres` always exists).
    pub fn url(&self, database: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{database}", self.port)
    }

    /// Runs SQL through `psql` (setup a test cannot do through the code under test), answering
    /// what it printed (unaligned, tuples only); panics with psql's message when it fails.
    pub fn psql(&self, database: &str, sql: &str) -> String {
        match self.psql_checked(database, sql) {
            Ok(printed) => printed,
            Err(reason) => panic!("psql: {reason}"),
        }
    }

    fn psql_checked(&self, database: &str, sql: &str) -> Result<String, String> {
        let port = self.port.to_string();
        let output = self.run(
            "psql",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                USER,
                "-d",
                database,
                "-XAtq",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ],
        )?;
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.stop_server("immediate");
    }
}

#[cfg(unix)]
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0")
}

#[cfg(not(unix))]
fn is_root() -> bool {
    false
}

#[cfg(unix)]
fn chown_nobody(path: &Path) -> Result<(), String> {
    let status = Command::new("chown")
        .args(["nobody:", &path.display().to_string()])
        .status()
        .map_err(|error| format!("cannot run chown: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("chown nobody {} failed", path.display()))
    }
}

#[cfg(not(unix))]
fn chown_nobody(_path: &Path) -> Result<(), String> {
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cluster_starts_answers_sql_and_stops() {
        let Some(cluster) = super::start("the PostgreSQL test cluster's own test") else {
            return;
        };
        assert_eq!(cluster.psql("postgres", "select 40 + 2"), "42");
        let second = super::start("a second cluster").unwrap();
        assert_ne!(second.port(), cluster.port());
        assert!(
            cluster
                .url("postgres")
                .starts_with("postgres://wayline@127.0.0.1:")
        );
        let data = cluster.data.clone();
        drop(cluster);
        assert!(!data.exists(), "the directory goes with the cluster");
    }
}
