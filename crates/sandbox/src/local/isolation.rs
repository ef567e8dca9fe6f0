//! How the local provider starts a sandbox's processes: as the user running wayline in the
//! workspace directory (no isolation), or inside `bubblewrap` when it is installed (the host's
//! file system read-only, the workspace mounted read-write at `/workspace` as in Bay, private
//! `/tmp`, `/proc` and process ids).
//!
//! Either way the processes get a clean environment: `PATH`, the locale, `TERM`, `TZ`, `USER`
//! and `LOGNAME` from the host, `HOME` (the workspace) and the profile's `env`; nothing else,
//! so credentials in the host's environment stay out of reach.
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
                          here; install it (Debian: `apt-get install bubblewrap`) or use no \
                          isolation"
                    .to_owned(),
            }),
        }
    }

    /// Bubblewrap, when `bwrap` is on the `PATH` and a trial run succeeds (it needs user
    /// namespaces, which some containers forbid).
    fn bubblewrap() -> Option<Isolation> {
        let program = find_on_path("bwrap")?;
        let works = std::process::Command::new(&program)
            .args([
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--unshare-pid",
                "true",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        works.then_some(Isolation::Bubblewrap { program })
    }

    /// One line saying which mode is active, for logs and `/health`.
    pub fn describe(&self) -> &'static str {
        match self {
            Isolation::None => "none (processes run as this user; not a security boundary)",
            Isolation::Bubblewrap { .. } => {
                "bubblewrap (read-only host, workspace at /workspace; not a security boundary)"
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
    pub(crate) fn command(
        &self,
        program: &str,
        args: &[&str],
        workspace: &Path,
        relative: &str,
        env: &[(String, String)],
    ) -> Command {
        let seen = self.root_seen(workspace);
        let cwd = if relative == "." {
            seen.clone()
        } else {
            seen.join(relative)
        };
        let mut command = match self {
            Isolation::None => {
                let mut command = Command::new(program);
                command.args(args).current_dir(&cwd);
                command
            }
            Isolation::Bubblewrap { program: bwrap } => {
                let mut command = Command::new(bwrap);
                command
                    .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
                    .args(["--tmpfs", "/tmp", "--bind"])
                    .arg(workspace)
                    .arg(SANDBOX_ROOT)
                    .arg("--chdir")
                    .arg(&cwd)
                    .args(["--unshare-pid", "--die-with-parent", "--", program])
                    .args(args);
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
        command
            .env("HOME", &seen)
            .envs(env.iter().map(|(key, value)| (key, value)))
            // Its own process group, so a timeout or a stop can end the children it started.
            .process_group(0)
            .kill_on_drop(true);
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
            joined.contains("--bind /data/cargos/ws-1 /workspace --chdir /workspace/src"),
            "{joined}"
        );
        assert!(joined.ends_with("-- bash -lc pwd"), "{joined}");
        assert_eq!(std.get_program(), "/usr/bin/bwrap");
        let plain = Isolation::None.command("bash", &["-lc", "pwd"], Path::new("/w"), ".", &[]);
        assert_eq!(plain.as_std().get_current_dir(), Some(Path::new("/w")));
        assert_eq!(
            isolation.root_seen(Path::new("/w")),
            Path::new("/workspace")
        );
    }
}
