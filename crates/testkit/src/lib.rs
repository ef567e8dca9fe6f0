//! Test support for wayline's own test suites (not published).
//!
//! The shared fixtures (real data from the projects wayline's formats come from) live beside the
//! repository at `../shared/fixtures`, or wherever `WAYLINE_FIXTURES` points. They are read from
//! there, never copied in. Where they are absent (a fresh clone), tests that need them print one
//! line saying so and pass; the repository's own `testdata/` covers the same behaviours.

use std::path::{Path, PathBuf};

pub mod postgres;

/// The workspace root (the directory holding the root `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// A path inside the repository's own `testdata/` directory.
pub fn testdata(relative: &str) -> PathBuf {
    workspace_root().join("testdata").join(relative)
}

/// The shared fixtures directory, if present: `$WAYLINE_FIXTURES`, else `../shared/fixtures`.
pub fn fixtures_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("WAYLINE_FIXTURES") {
        Some(dir) => PathBuf::from(dir),
        None => workspace_root().join("../shared/fixtures"),
    };
    dir.is_dir().then_some(dir)
}

/// A path inside the shared fixtures, or `None` after printing the one-line skip notice.
///
/// ```
/// if let Some(tools) = wayline_testkit::fixture("structure-ai-bot/tools") {
///     assert!(tools.is_dir());
/// }
/// ```
pub fn fixture(relative: &str) -> Option<PathBuf> {
    match fixtures_dir() {
        Some(dir) => Some(dir.join(relative)),
        None => {
            eprintln!(
                "skipped: shared fixtures not found (../shared/fixtures or $WAYLINE_FIXTURES); \
                 needed {relative}"
            );
            None
        }
    }
}

/// Reads a JSON file, panicking with the path on failure (for tests).
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|err| panic!("bad JSON in {}: {err}", path.display()))
}

/// True when `python3` runs on this machine. When it does not, prints one line saying that
/// `what` is skipped: the README's test command must pass with only the Rust toolchain, and
/// `.ci/run` installs Python so CI runs these tests.
pub fn python3_available(what: &str) -> bool {
    let found = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !found {
        eprintln!("skipped: {what} (python3 not found)");
    }
    found
}

/// An executable `.ci/run` installs from the npm registry into `.ci/node` (`bin`: its name in
/// `node_modules/.bin`), or the one the environment variable `override_var` names, when it
/// and Node.js can run here. Otherwise prints one line saying `what` is skipped and why.
pub fn node_tool(bin: &str, override_var: &str, what: &str) -> Option<PathBuf> {
    let installed = workspace_root()
        .join(".ci/node/node_modules/.bin")
        .join(bin);
    with_node(
        installed.is_file().then_some(installed),
        bin,
        override_var,
        what,
    )
}

/// The directory of a package `.ci/run` installs from the npm registry into `.ci/node`
/// (`@scope/name`), or the one the environment variable `override_var` names, when Node.js
/// runs here. Otherwise prints one line saying `what` is skipped and why.
pub fn node_package(package: &str, override_var: &str, what: &str) -> Option<PathBuf> {
    let installed = workspace_root().join(".ci/node/node_modules").join(package);
    let found = installed
        .join("package.json")
        .is_file()
        .then_some(installed);
    with_node(found, package, override_var, what)
}

/// `installed`, or what `override_var` names, if Node.js runs here; else a line saying `what`
/// is skipped.
fn with_node(
    installed: Option<PathBuf>,
    name: &str,
    override_var: &str,
    what: &str,
) -> Option<PathBuf> {
    let found = std::env::var_os(override_var)
        .map(PathBuf::from)
        .or(installed);
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    match found {
        Some(found) if node => Some(found),
        _ => {
            eprintln!(
                "skipped: {what} ({name} or Node.js is not installed here; .ci/run installs them, \
                 or set {override_var})"
            );
            None
        }
    }
}

/// `mcp-server-everything`, the reference MCP server (`@modelcontextprotocol/server-everything`
/// on npm), for tests of MCP; `WAYLINE_MCP_EVERYTHING` overrides where it is looked for.
pub fn mcp_server_everything(what: &str) -> Option<PathBuf> {
    node_tool("mcp-server-everything", "WAYLINE_MCP_EVERYTHING", what)
}

/// The official TypeScript SDK's client (`@modelcontextprotocol/client`, v2), for tests that
/// drive MCP servers with a second client; `WAYLINE_MCP_TS_CLIENT` overrides where it is
/// looked for.
pub fn mcp_ts_client(what: &str) -> Option<PathBuf> {
    node_package(
        "@modelcontextprotocol/client",
        "WAYLINE_MCP_TS_CLIENT",
        what,
    )
}

/// An executable `.ci/run` installs from a package registry (PyPI or Debian) onto the `PATH`
/// (`kinto`, `pdns_server`), or the one the environment variable `override_var` names. Where
/// it is missing: under CI (`CI` set) the test fails, since `.ci/run` installs it; elsewhere
/// one line says `what` is skipped and why.
pub fn installed_tool(bin: &str, override_var: &str, what: &str) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(override_var) {
        return Some(PathBuf::from(path));
    }
    let search = [
        std::env::var_os("PATH").unwrap_or_default(),
        // Debian installs daemons outside a user's PATH.
        std::ffi::OsString::from("/usr/sbin:/sbin"),
    ];
    let found = search
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(bin))
        .find(|candidate| candidate.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{what}: `{bin}` is not installed, and .ci/run installs it"
        );
        eprintln!(
            "skipped: {what} ({bin} is not installed here; .ci/run installs it, or set {override_var})"
        );
    }
    found
}
