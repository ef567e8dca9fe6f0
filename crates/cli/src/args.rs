//! The flag groups several commands share (clap), and reading `--input` values. Data only:
//! what a group opens or builds is in `assemble`.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde_json::Value;
use wayline_core::document::Limits;
use wayline_durable::read::ReadScope;
use wayline_guard::Mode;

use crate::report::{Outcome, unreadable};
use wayline_store::Location;

/// The tools a command calls, and their configs.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ToolsArgs {
    /// Tool files or directories (repeatable).
    #[arg(long = "tools", required = true, value_name = "DIR")]
    pub(crate) tools: Vec<PathBuf>,
    /// The tool-configs file: base URL overrides and credentials per tool.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// A file of variables (`NAME=value` lines, dotenv syntax) for the `${VAR}`s of tool and
    /// tool-configs files. Repeatable: a later file wins, and the environment wins over all.
    /// Every value is masked like a secret.
    #[arg(long = "env-file", value_name = "FILE")]
    pub(crate) env_files: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) network: NetworkArgs,
}

/// How calls reach the APIs: trust, a client certificate, a proxy.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct NetworkArgs {
    /// Trust the certificate authorities in this PEM file as well as the usual ones (a private
    /// CA, a test server's own).
    #[arg(long, value_name = "FILE")]
    pub(crate) cacert: Option<PathBuf>,
    /// Check no server certificate at all. Anyone on the network path can then read and change
    /// every call: for a test server only.
    #[arg(long)]
    pub(crate) insecure: bool,
    /// Present this client certificate (PEM; its private key in the same file, or in --key).
    #[arg(long, value_name = "FILE")]
    pub(crate) cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub(crate) key: Option<PathBuf>,
    /// Send every call through this proxy (`http://[user:pass@]host:port`); without it,
    /// `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY` are honoured.
    #[arg(long, value_name = "URL")]
    pub(crate) proxy: Option<String>,
}

/// What `wayline run` and `wayline tools try` share.
#[derive(Debug, clap::Args)]
pub(crate) struct Common {
    #[command(flatten)]
    pub(crate) tools: ToolsArgs,
    /// A run input, `NAME=TEXT` (a string) or `NAME:=JSON` (typed: numbers, lists...).
    #[arg(long = "input", value_name = "K=V")]
    pub(crate) inputs: Vec<String>,
    /// Print the requests that would be sent, and send none.
    #[arg(long)]
    pub(crate) dry_run: bool,
}

/// Where runs and workflows are kept.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct StoreArg {
    /// The store: a `postgres://USER:PASSWORD@HOST/DATABASE` URL (PostgreSQL, shared by
    /// hosts and workers; give one with a password in `WAYLINE_STORE`, not here: arguments are
    /// visible to every user of the machine), a `.db` file (SQLite) or a directory (JSON
    /// files). Default: `WAYLINE_STORE`, else `$WAYLINE_HOME/wayline.db` (`WAYLINE_HOME`
    /// defaults to `~/.wayline`).
    #[arg(long = "store", value_name = "STORE")]
    pub(crate) store: Option<Location>,
}

/// Where knowledge is kept.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct KnowledgeArg {
    /// The knowledge store: a `postgres://` URL (it may be the run store's database), a `.db`
    /// file (SQLite; it may be the run store's file) or a directory holding
    /// `knowledge/SUT/{patterns,pitfalls,stats}.yaml`. Default: the run store given to
    /// `--store` (its database, its SQLite file, or its directory), else the store
    /// `WAYLINE_STORE` names, else `$WAYLINE_HOME`.
    #[arg(long = "knowledge", value_name = "STORE")]
    pub(crate) knowledge: Option<Location>,
}

/// `wayline run --learn --sut NAME`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct LearnArgs {
    /// Record what the run teaches (statistics, pitfalls, patterns) into the knowledge of
    /// `--sut`.
    #[arg(long, requires = "sut")]
    pub(crate) learn: bool,
    /// The system under test the knowledge is about.
    #[arg(long, value_name = "NAME")]
    pub(crate) sut: Option<String>,
    #[command(flatten)]
    pub(crate) store: KnowledgeArg,
}

/// Which language model to ask.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct ModelArgs {
    /// The model server's OpenAI-compatible base URL, `/v1` included (default:
    /// `$WAYLINE_LLM_URL`). The API key comes from `$WAYLINE_LLM_API_KEY`.
    #[arg(long, value_name = "URL")]
    pub(crate) model_url: Option<String>,
    /// The model (default: `$WAYLINE_LLM_MODEL`).
    #[arg(long, value_name = "NAME")]
    pub(crate) model: Option<String>,
}

/// Who is told about finished runs.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct NotifyArgs {
    /// POST a JSON notice to this URL when a run fails (retried; repeatable).
    #[arg(long = "notify-webhook", value_name = "URL")]
    pub(crate) webhooks: Vec<String>,
    /// Print a one-line notice on stdout when a run fails (on stderr with `--format json`).
    #[arg(long)]
    pub(crate) notify_stdout: bool,
    /// Also notify when a run succeeds.
    #[arg(long)]
    pub(crate) notify_on_success: bool,
}

/// Warnings for the secrets `args` (the command line, program name left out) holds, which
/// every user of the machine can read in the process list (`ps`): a `--token`, a database URL
/// with a password (`--store`, `--knowledge`), a proxy URL with credentials (`--proxy`). Each
/// says where the secret belongs instead.
pub(crate) fn secrets_in_arguments(args: &[String]) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut pairs = Vec::new();
    let mut items = args.iter();
    while let Some(arg) = items.next() {
        match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => pairs.push((flag, value.to_owned())),
            _ if arg.starts_with("--") => {
                if let Some(value) = items.clone().next() {
                    pairs.push((arg.as_str(), value.clone()));
                }
            }
            _ => {}
        }
    }
    let has_password = |url: &str| {
        url.split_once("://")
            .and_then(|(_, rest)| rest.rsplit_once('@'))
            .is_some_and(|(user, _)| user.contains(':'))
            || url.to_ascii_lowercase().contains("password=")
    };
    for (flag, value) in pairs {
        let warning = match flag {
            "--token" => Some(
                "`--token` on the command line is visible to every user of this machine (`ps`); \
                 set BAY_API_KEY instead",
            ),
            "--store" | "--knowledge" if has_password(&value) => Some(
                "a database password on the command line is visible to every user of this \
                 machine (`ps`); put the URL in WAYLINE_STORE instead",
            ),
            "--proxy" if has_password(&value) => Some(
                "proxy credentials on the command line are visible to every user of this \
                 machine (`ps`); set HTTPS_PROXY instead",
            ),
            _ => None,
        };
        if let Some(warning) = warning
            && !warnings.iter().any(|known| known == warning)
        {
            warnings.push(warning.to_owned());
        }
    }
    warnings
}

/// Parses `NAME=TEXT` and `NAME:=JSON` inputs into `into`.
/// A duration as written on the command line: a number and a unit (`500ms`, `30s`, `2m`,
/// `1h`).
pub(crate) fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration; write e.g. 500ms, 30s, 2m or 1h"))?;
    let millis = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => {
            return Err(format!(
                "`{text}`: the unit must be ms, s, m or h (e.g. 30s)"
            ));
        }
    };
    Ok(std::time::Duration::from_millis(
        number.saturating_mul(millis),
    ))
}

pub(crate) fn parse_inputs(
    raw: &[String],
    into: &mut IndexMap<String, Value>,
) -> Result<(), String> {
    for item in raw {
        if let Some((name, json)) = item.split_once(":=") {
            let value = serde_json::from_str(json).map_err(|error| {
                format!(
                    "--input {item}: `{json}` is not JSON ({error}); use {name}=TEXT for a string"
                )
            })?;
            into.insert(name.to_owned(), value);
        } else if let Some((name, text)) = item.split_once('=') {
            into.insert(name.to_owned(), Value::String(text.to_owned()));
        } else {
            return Err(format!("--input {item}: write NAME=TEXT or NAME:=JSON"));
        }
    }
    Ok(())
}

/// The text of the file at `path` when it is an Arazzo document (read once, for both the
/// question and the answer; a file that cannot be read is left to the workflow reader, which
/// says why).
pub(crate) fn arazzo_text(path: &Path) -> Option<String> {
    wayline_durable::read::text(path, Limits::configured().max_bytes)
        .ok()
        .filter(|text| wayline_arazzo::is_arazzo(text))
}

/// Where the files the document at `document` refers to may be read from: its directory and
/// each `--allow-read` directory.
pub(crate) fn read_scope(document: &Path, allowed: &[PathBuf]) -> ReadScope {
    allowed
        .iter()
        .fold(ReadScope::beside(document), |scope, dir| scope.allow(dir))
}

/// `--source NAME=FILE` flags, by name.
pub(crate) fn source_overrides(flags: &[String]) -> Result<IndexMap<String, PathBuf>, Outcome> {
    let mut overrides = IndexMap::new();
    for flag in flags {
        let Some((name, file)) = flag
            .split_once('=')
            .filter(|(name, file)| !name.is_empty() && !file.is_empty())
        else {
            return Err(unreadable(format!(
                "`--source {flag}`: write NAME=FILE (the source description's name, a local file)"
            )));
        };
        overrides.insert(name.to_owned(), PathBuf::from(file));
    }
    Ok(overrides)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warnings(line: &str) -> Vec<String> {
        let args: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        secrets_in_arguments(&args)
    }

    /// Issue 31, item 18.
    #[test]
    fn secrets_given_as_arguments_are_named_with_where_they_belong() {
        assert_eq!(warnings("sandbox serve --token abc").len(), 1);
        assert!(warnings("sandbox serve --token=abc")[0].contains("BAY_API_KEY"));
        assert!(warnings("runs list --store postgres://u:pw@db/w")[0].contains("WAYLINE_STORE"));
        assert!(
            warnings("runs list --store=postgres://db/w?password=x")[0].contains("WAYLINE_STORE")
        );
        assert!(warnings("run w.yaml --proxy http://u:p@proxy:3128")[0].contains("HTTPS_PROXY"));
        // Nothing secret, nothing said.
        assert!(warnings("runs list --store postgres://u@db/w").is_empty());
        assert!(warnings("runs list --store runs.db --proxy http://proxy:3128").is_empty());
        assert!(warnings("run w.yaml --input token=abc").is_empty());
    }
}

/// `--mode`: how the guard's decisions are enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ModeArg {
    Blocking,
    Guidance,
    Audit,
}

impl From<ModeArg> for Mode {
    fn from(mode: ModeArg) -> Mode {
        match mode {
            ModeArg::Blocking => Mode::Blocking,
            ModeArg::Guidance => Mode::Guidance,
            ModeArg::Audit => Mode::Audit,
        }
    }
}
