//! How the local provider starts a sandbox's processes: as the user running wayline in the
//! workspace directory (no isolation), or inside `bubblewrap` when it is installed (the host's
//! file system read-only, entry by entry, in a fresh root; the workspace mounted read-write at
//! `/workspace` as in Bay; the session's own `/tmp`; a private `/dev/shm` of limited size;
//! private `/proc` and process ids; the data directory, where every sandbox's files are,
//! hidden).
//!
//! Under bubblewrap the code runs as a host user with no privileges: when the server runs as
//! root, bubblewrap drops to `nobody` (uid 65534, through `setpriv`: no capabilities, an empty
//! bounding set, no new privileges), so it reads what `nobody` may, not root's files; the
//! workspace and what the provider writes into it are handed over to that user. (A user
//! namespace whose `nobody` maps to root would not do: the kernel checks files as root.) Run by
//! another user, code runs as that user.
//!
//! Either way the processes get a clean environment: `PATH`, the locale, `TERM`, `TZ`, `USER`
//! and `LOGNAME` from the host, `HOME` (the workspace) and the profile's `env`; nothing else,
//! so credentials in the host's environment stay out of reach. A profile's memory limits each
//! process's data and address space (`ulimit -d`, `ulimit -v`, the latter with room for what
//! a program reserves and never uses), and `/dev/shm` under bubblewrap; the sandbox as a whole
//! is not limited ([`Isolation::memory_enforced`] says what is).
//!
//! Neither is a security boundary against hostile code: without bubblewrap the code can do
//! whatever the user can; with it, it still shares the network and the kernel, and the file
//! calls (which the provider makes on the host) check paths when called, so code racing them
//! by swapping a directory for a symlink at that moment could redirect one.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::Command;

use crate::error::Error;

/// Where code sees its workspace under bubblewrap (Bay's path).
pub const SANDBOX_ROOT: &str = "/workspace";

/// The host user and group code runs as under bubblewrap when the server runs as root:
/// `nobody` and `nogroup`.
pub const SANDBOX_USER: (u32, u32) = (65534, 65534);

/// Address space a program reserves without using it (thread stacks, the allocator's arenas,
/// the interpreter's own mappings), allowed on top of a profile's memory.
const RESERVED_ADDRESS_SPACE: u64 = 512 << 20;

/// `/dev/shm`'s size under bubblewrap when a profile sets no memory limit (Docker's default).
const DEFAULT_SHM_BYTES: u64 = 64 << 20;

/// The isolation the local provider uses.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Isolation {
    /// Processes run as the current user, in the workspace directory.
    None,
    /// Processes run inside `bubblewrap` (`bwrap` at this path).
    Bubblewrap {
        /// The `bwrap` program.
        program: PathBuf,
    },
}

/// Which isolation to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum IsolationMode {
    /// Bubblewrap when `bwrap` is installed and works here, none otherwise.
    #[default]
    Auto,
    /// No isolation.
    None,
    /// Bubblewrap, or an error when it is missing.
    Bubblewrap,
}

impl Isolation {
    /// The isolation `mode` asks for on this machine: `Err` when bubblewrap is required and
    /// cannot run.
    pub fn choose(mode: IsolationMode) -> Result<Isolation, Error> {
        match mode {
            IsolationMode::None => Ok(Isolation::None),
            IsolationMode::Auto => Ok(Isolation::bubblewrap().unwrap_or(Isolation::None)),
            IsolationMode::Bubblewrap => Isolation::bubblewrap().ok_or_else(|| Error::Isolation {
                message: "bubblewrap (`bwrap`) is not installed or cannot create namespaces \
                          here (run as root, it also needs `setpriv` from util-linux); install \
                          it (Debian: `apt-get install bubblewrap`) or use no isolation"
                    .to_owned(),
            }),
        }
    }

    /// Bubblewrap, when `bwrap` is on the `PATH` and runs exactly what real commands run (a
    /// workspace and a scratch directory of a trial, `true` in the workspace): it needs user
    /// namespaces, which some containers forbid, and a probe of anything less could pass where
    /// every real command fails.
    fn bubblewrap() -> Option<Isolation> {
        let isolation = Isolation::Bubblewrap {
            program: find_on_path("bwrap")?,
        };
        let trial = std::env::temp_dir().join(format!(
            "wayline-bwrap-probe-{}-{:08x}",
            std::process::id(),
            fastrand::u32(..)
        ));
        let (workspace, scratch) = (trial.join("workspace"), trial.join("scratch"));
        let works = std::fs::create_dir_all(&workspace).is_ok()
            && std::fs::create_dir_all(&scratch).is_ok()
            && isolation
                .command_in(
                    "true",
                    &[],
                    &workspace,
                    ".",
                    &[],
                    &Limits {
                        scratch: Some(&scratch),
                        memory_bytes: None,
                        hidden: None,
                    },
                )
                .as_std_mut()
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success());
        let _ = std::fs::remove_dir_all(&trial);
        works.then_some(isolation)
    }

    /// One line saying which mode is active, for logs and `/health`.
    pub fn describe(&self) -> &'static str {
        match self {
            Isolation::None => "none (processes run as this user; not a security boundary)",
            Isolation::Bubblewrap { .. } if running_as_root() => {
                "bubblewrap (read-only host, workspace at /workspace, code runs as nobody; not a security boundary)"
            }
            Isolation::Bubblewrap { .. } => {
                "bubblewrap (read-only host, workspace at /workspace; not a security boundary)"
            }
        }
    }

    /// What a profile's memory limit holds to on this host, in one line (for logs and
    /// `/health`).
    pub fn memory_enforced(&self) -> &'static str {
        match self {
            Isolation::None => {
                "each process's data and address space (ulimit -d, -v); not shared memory in /dev/shm, not the sandbox as a whole"
            }
            Isolation::Bubblewrap { .. } => {
                "each process's data and address space (ulimit -d, -v) and a private /dev/shm of that size; not the sandbox as a whole"
            }
        }
    }

    /// The host user and group code runs as, when it is not the user running wayline:
    /// [`SANDBOX_USER`] under bubblewrap when wayline runs as root.
    pub fn code_user(&self) -> Option<(u32, u32)> {
        match self {
            Isolation::Bubblewrap { .. } if running_as_root() => Some(SANDBOX_USER),
            _ => None,
        }
    }

    /// Gives `path` (made by the provider, in a workspace or a session's scratch) to the user
    /// code runs as, when that is another user, so the code may change what the provider put
    /// there. A symbolic link is changed itself, never what it points at.
    pub(crate) fn hand_over(&self, path: &Path) -> std::io::Result<()> {
        #[cfg(unix)]
        if let Some((uid, gid)) = self.code_user() {
            return std::os::unix::fs::lchown(path, Some(uid), Some(gid));
        }
        let _ = path;
        Ok(())
    }

    /// [`Isolation::hand_over`] for `path` and each directory between it and `root` (those
    /// the provider made on the way).
    pub(crate) fn hand_over_within(&self, root: &Path, path: &Path) -> std::io::Result<()> {
        if self.code_user().is_none() {
            return Ok(());
        }
        let mut at = Some(path);
        while let Some(current) = at {
            if !current.starts_with(root) {
                break;
            }
            self.hand_over(current)?;
            at = current.parent();
        }
        Ok(())
    }

    /// A command running `program args` on the host as the user code runs as (to ask which
    /// interpreter that user finds on its `PATH`).
    pub(crate) fn host_command(&self, program: &str, args: &[&str]) -> Command {
        match self.code_user() {
            Some(user) => {
                let mut command = Command::new("setpriv");
                command.args(drop_privileges(user)).arg(program).args(args);
                command
            }
            None => {
                let mut command = Command::new(program);
                command.args(args);
                command
            }
        }
    }

    /// The workspace's path as the code sees it.
    pub fn root_seen(&self, workspace: &Path) -> PathBuf {
        match self {
            Isolation::None => workspace.to_path_buf(),
            Isolation::Bubblewrap { .. } => PathBuf::from(SANDBOX_ROOT),
        }
    }

    /// A command running `program args` in `relative` (a normalized path inside `workspace`),
    /// with `HOME` the workspace and `env` added.
    #[cfg(test)]
    pub(crate) fn command(
        &self,
        program: &str,
        args: &[&str],
        workspace: &Path,
        relative: &str,
        env: &[(String, String)],
    ) -> Command {
        self.command_in(program, args, workspace, relative, env, &Limits::default())
    }

    /// As [`Isolation::command`], within the session's `limits`: its scratch directory (its
    /// `/tmp` under bubblewrap, and where Python puts user installs in either mode,
    /// `PYTHONUSERBASE`, so a plain `pip install` lasts as long as the session and `pip
    /// install --target /workspace/...` as long as the workspace), and its memory limit (the
    /// data limit, `ulimit -d`, of the program and all it starts).
    pub(crate) fn command_in(
        &self,
        program: &str,
        args: &[&str],
        workspace: &Path,
        relative: &str,
        env: &[(String, String)],
        limits: &Limits<'_>,
    ) -> Command {
        let scratch = limits.scratch;
        let mut program = program.to_owned();
        let mut args: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
        // Limited, the program runs under a shell that sets the limits and then becomes it.
        if let Some(bytes) = limits.memory_bytes {
            let limits = format!(
                "ulimit -d {} && ulimit -v {} && exec \"$0\" \"$@\"",
                (bytes / 1024).max(1),
                (bytes.saturating_add(RESERVED_ADDRESS_SPACE) / 1024).max(1)
            );
            (program, args) = wrapped("bash", vec!["-c".to_owned(), limits], program, args);
        }
        // As another user (root's code as nobody), `setpriv` drops to it last, after the
        // sandbox is set up.
        if let Some(user) = self.code_user() {
            (program, args) = wrapped("setpriv", drop_privileges(user), program, args);
        }
        let seen = self.root_seen(workspace);
        let cwd = if relative == "." {
            seen.clone()
        } else {
            seen.join(relative)
        };
        let mut command = match self {
            Isolation::None => {
                let mut command = Command::new(&program);
                command.args(&args).current_dir(&cwd);
                command
            }
            Isolation::Bubblewrap { program: bwrap } => {
                let mut command = Command::new(bwrap);
                // The host's root, read-only, one entry at a time into a fresh root: binding
                // `/` itself would leave no way to make `/workspace` where the host has none.
                command.args(["--tmpfs", "/"]);
                for entry in host_root() {
                    match entry {
                        RootEntry::Link { name, target } => {
                            command.arg("--symlink").arg(target).arg(name)
                        }
                        RootEntry::Bound { name } => command.arg("--ro-bind").arg(name).arg(name),
                    };
                }
                command.args(["--dev", "/dev", "--proc", "/proc"]);
                // Shared memory of its own, as large as the profile's memory: files there are
                // memory no process limit counts.
                let shm = limits.memory_bytes.unwrap_or(DEFAULT_SHM_BYTES);
                command
                    .args(["--perms", "1777", "--size"])
                    .arg(shm.to_string())
                    .args(["--tmpfs", "/dev/shm"]);
                match scratch {
                    Some(scratch) => command.arg("--bind").arg(scratch).arg("/tmp"),
                    None => command.args(["--tmpfs", "/tmp"]),
                };
                command.arg("--bind").arg(workspace).arg(SANDBOX_ROOT);
                // Every sandbox's files are under the data directory: an empty one in its
                // place (after this workspace was bound where the code sees it).
                if let Some(hidden) = limits.hidden {
                    command.arg("--tmpfs").arg(hidden);
                }
                command.args(["--remount-ro", "/"]);
                command
                    .arg("--chdir")
                    .arg(&cwd)
                    .args(["--unshare-pid", "--die-with-parent", "--"])
                    .arg(&program)
                    .args(&args);
                command
            }
        };
        // A clean environment: the host's variables often hold credentials (the server's own
        // API key, the tokens of tool configs), which the code must not read.
        command.env_clear();
        for name in INHERITED {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        command.env("HOME", &seen);
        if let Some(scratch) = scratch {
            let seen_scratch = match self {
                Isolation::None => scratch.to_path_buf(),
                Isolation::Bubblewrap { .. } => PathBuf::from("/tmp"),
            };
            // A plain `pip install` goes to the session's user site (Bay's semantics), also
            // under a distribution's Python that refuses installs it does not manage (PEP 668):
            // the host is read-only to the code, so no system package can be broken.
            command
                .env("TMPDIR", &seen_scratch)
                .env("PYTHONUSERBASE", seen_scratch.join(".local"))
                .env("PIP_BREAK_SYSTEM_PACKAGES", "1");
        }
        command
            .envs(env.iter().map(|(key, value)| (key, value)))
            .kill_on_drop(true);
        // Its own process group, so a timeout or a stop can end the children it started.
        // (Windows has no process groups to signal: there, only the process itself is ended.)
        #[cfg(unix)]
        command.process_group(0);
        command
    }
}

/// Ends the process group led by `pid` (a process started by [`Isolation::command`]), so the
/// children a command or a Python session started end with it. Uses the `kill` program (the
/// workspace forbids `unsafe`, and so direct system calls); where it is missing, only the
/// leader is killed, by the caller.
pub(crate) async fn kill_group(pid: Option<u32>) {
    let Some(pid) = pid else {
        return;
    };
    let _ = tokio::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
}

/// What a session's processes are held to.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Limits<'a> {
    /// The session's scratch directory.
    pub(crate) scratch: Option<&'a Path>,
    /// The memory limit of each process, in bytes.
    pub(crate) memory_bytes: Option<u64>,
    /// A directory the code must not see (the data directory), when it would otherwise.
    pub(crate) hidden: Option<&'a Path>,
}

/// `setpriv`'s arguments that make what it runs `user`: no supplementary groups, no
/// capabilities (inheritable or in the bounding set), and no way to gain privileges again;
/// then `env`, which finds the program on the `PATH` past directories the user may not enter
/// (root's own, first on root's `PATH`), where `setpriv`'s own search gives up.
/// `program args` run by `wrapper` given `options` first: the wrapper's program and arguments.
fn wrapped(
    wrapper: &str,
    options: Vec<String>,
    program: String,
    args: Vec<String>,
) -> (String, Vec<String>) {
    let mut all = options;
    all.push(program);
    all.extend(args);
    (wrapper.to_owned(), all)
}

fn drop_privileges((uid, gid): (u32, u32)) -> Vec<String> {
    vec![
        format!("--reuid={uid}"),
        format!("--regid={gid}"),
        "--clear-groups".to_owned(),
        "--inh-caps=-all".to_owned(),
        "--bounding-set=-all".to_owned(),
        "--no-new-privs".to_owned(),
        "env".to_owned(),
    ]
}

/// One entry of the host's root directory, as a sandbox sees it.
#[derive(Debug, Clone)]
enum RootEntry {
    /// A symbolic link (`/bin -> usr/bin`), made again inside.
    Link { name: PathBuf, target: PathBuf },
    /// A directory or file, bound read-only.
    Bound { name: PathBuf },
}

/// The resources a profile without limits shows (Bay's profiles always say `cpus` and
/// `memory`, and its schema requires both): what the machine has — its CPUs, and its memory as
/// `/proc/meminfo` gives it (none where there is no such file).
pub(crate) fn host_resources() -> (f64, Option<String>) {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("MemTotal:"))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
                .map(|kib| format!("{}m", kib / 1024))
        });
    #[expect(
        clippy::cast_precision_loss,
        reason = "a machine's CPU count fits an f64 exactly"
    )]
    (cpus as f64, memory)
}

/// The host's root entries a sandbox sees, read once: everything but what the sandbox has its
/// own of (`/dev`, `/proc`, `/tmp`, `/workspace`).
fn host_root() -> &'static [RootEntry] {
    static ROOT: std::sync::LazyLock<Vec<RootEntry>> = std::sync::LazyLock::new(|| {
        let mut entries: Vec<RootEntry> = std::fs::read_dir("/")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let name = Path::new("/").join(entry.file_name());
                let own = ["/dev", "/proc", "/tmp", SANDBOX_ROOT];
                if own.iter().any(|own| name == Path::new(own)) {
                    return None;
                }
                match std::fs::read_link(&name) {
                    Ok(target) => Some(RootEntry::Link { name, target }),
                    Err(_) => Some(RootEntry::Bound { name }),
                }
            })
            .collect();
        entries.sort_by(|a, b| root_name(a).cmp(root_name(b)));
        entries
    });
    &ROOT
}

fn root_name(entry: &RootEntry) -> &Path {
    match entry {
        RootEntry::Link { name, .. } | RootEntry::Bound { name } => name,
    }
}

/// True when this process runs as root (the owner of its own `/proc` entry).
#[cfg(unix)]
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    // Asked for every file handed over: the answer does not change while the process runs.
    static ROOT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ROOT.get_or_init(|| std::fs::metadata("/proc/self").is_ok_and(|metadata| metadata.uid() == 0))
}

/// Never, where there is no root (bubblewrap, its only user, is Linux's).
#[cfg(not(unix))]
fn running_as_root() -> bool {
    false
}

/// The host variables a sandbox's processes see; everything else comes from the profile.
const INHERITED: [&str; 8] = [
    "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "USER", "LOGNAME",
];

fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bubblewrap_mounts_the_workspace_where_bay_has_it() {
        let isolation = Isolation::Bubblewrap {
            program: PathBuf::from("/usr/bin/bwrap"),
        };
        let command = isolation.command(
            "bash",
            &["-lc", "pwd"],
            Path::new("/data/cargos/ws-1"),
            "src",
            &[("K".into(), "v".into())],
        );
        let std = command.as_std();
        let args: Vec<_> = std.get_args().map(|arg| arg.to_string_lossy()).collect();
        let joined = args.join(" ");
        assert!(
            joined.starts_with("--tmpfs / ") && joined.contains("--ro-bind /usr /usr"),
            "the host's root entries, read-only, in a fresh root: {joined}"
        );
        assert!(
            joined.contains("--bind /data/cargos/ws-1 /workspace --remount-ro /"),
            "{joined}"
        );
        assert!(joined.contains("--chdir /workspace/src"), "{joined}");
        assert!(!joined.contains("--ro-bind / /"), "{joined}");
        assert!(joined.ends_with("bash -lc pwd"), "{joined}");
        assert!(
            joined.contains("--perms 1777 --size 67108864 --tmpfs /dev/shm"),
            "a private /dev/shm of a size: {joined}"
        );
        if running_as_root() {
            // Code runs as nobody on the host, not as a user namespace's nobody that is root.
            assert!(
                joined.contains("-- setpriv --reuid=65534 --regid=65534 --clear-groups"),
                "{joined}"
            );
            assert!(
                joined.contains("--no-new-privs env bash -lc pwd"),
                "{joined}"
            );
            assert!(!joined.contains("--unshare-user"), "{joined}");
        }
        assert_eq!(std.get_program(), "/usr/bin/bwrap");
        let plain = Isolation::None.command("bash", &["-lc", "pwd"], Path::new("/w"), ".", &[]);
        assert_eq!(plain.as_std().get_current_dir(), Some(Path::new("/w")));
        assert_eq!(
            isolation.root_seen(Path::new("/w")),
            Path::new("/workspace")
        );
    }
}
