//! `wayline sandbox serve`: Bay's HTTP API over the embedded local sandbox.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::ValueEnum;
use wayline_sandbox::local::IsolationMode;
use wayline_sandbox::profile::Profiles;
use wayline_sandbox::server::{BayServer, ServeOptions};
use wayline_sandbox::{LocalConfig, LocalProvider};

use crate::assemble::runtime;
use crate::report::{Outcome, fail, unreadable};

/// `wayline sandbox ...`
#[derive(Debug, clap::Subcommand)]
pub(crate) enum SandboxCommand {
    /// Serve the Bay sandbox API (0.3.1) over the embedded local sandbox, so Bay clients —
    /// wayline's `BayClient`, Bay's own SDK — can use it over HTTP. Not a security boundary:
    /// code runs as this user (inside bubblewrap when it is installed).
    Serve(ServeArgs),
}

/// `wayline sandbox serve` arguments.
#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on (loopback unless you mean otherwise).
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// The port (Bay's default: 8114; 0 picks a free one).
    #[arg(long, default_value_t = 8114)]
    port: u16,
    /// The API key clients must send as `Authorization: Bearer`. Prefer `BAY_API_KEY` in the
    /// environment: a token on the command line is visible to every user of this machine
    /// (`ps`). Without either, the server does not start, unless `--no-auth`.
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// Let anyone who can connect use the server without a token: allowed on a loopback
    /// address only (anyone on this machine), never otherwise.
    #[arg(long, conflicts_with = "token")]
    no_auth: bool,
    /// Answer requests sent to this host name too (besides localhost and IP addresses; a
    /// deployment's name). Repeatable.
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_hosts: Vec<String>,
    /// Let web pages at this origin call the server (`https://console.example.com`); any
    /// other page's request is refused. Repeatable.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,
    /// A profiles file (YAML: id, capabilities, idle_timeout, env); Bay's two defaults
    /// otherwise.
    #[arg(long, value_name = "FILE")]
    profiles: Option<PathBuf>,
    /// Where workspaces and state are kept (default: `$WAYLINE_HOME/sandbox`).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Isolation: bubblewrap when installed (auto), none, or bubblewrap (required).
    #[arg(long, value_enum, default_value_t = IsolationArg::Auto)]
    isolation: IsolationArg,
    /// Stop no idle session on its own: a passed idle deadline stays visible until `POST
    /// /v1/admin/gc/run` (as Bay with its GC disabled). Expired sandboxes and orphaned cargos
    /// are only ever removed by such a run (an expired sandbox answers `expired` until then).
    #[arg(long)]
    no_auto_gc: bool,
}

impl std::fmt::Debug for ServeArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeArgs")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("no_auth", &self.no_auth)
            .field("allow_hosts", &self.allow_hosts)
            .field("allow_origins", &self.allow_origins)
            .field("profiles", &self.profiles)
            .field("data_dir", &self.data_dir)
            .field("isolation", &self.isolation)
            .field("no_auto_gc", &self.no_auto_gc)
            .finish()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum IsolationArg {
    Auto,
    None,
    Bubblewrap,
}

pub(crate) fn sandbox_command(command: SandboxCommand) -> Outcome {
    match command {
        SandboxCommand::Serve(args) => match serve(args) {
            Ok(outcome) | Err(outcome) => outcome,
        },
    }
}

fn serve(args: ServeArgs) -> Result<Outcome, Outcome> {
    let profiles = match &args.profiles {
        Some(path) => Profiles::load(path).map_err(fail)?,
        None => Profiles::bay_defaults(),
    };
    let data_dir = crate::assemble::data_dir(args.data_dir, "sandbox")?;
    let isolation = match args.isolation {
        IsolationArg::Auto => IsolationMode::Auto,
        IsolationArg::None => IsolationMode::None,
        IsolationArg::Bubblewrap => IsolationMode::Bubblewrap,
    };
    let token = args
        .token
        .or_else(|| std::env::var("BAY_API_KEY").ok())
        .filter(|token| !token.is_empty());
    let runtime = runtime()?;
    runtime.block_on(async {
        let provider = LocalProvider::open(
            LocalConfig::new(&data_dir)
                .profiles(profiles)
                .isolation(isolation)
                .auto_gc(!args.no_auto_gc),
        )
        .map_err(fail)?;
        let address: SocketAddr = format!("{}:{}", args.host, args.port)
            .parse()
            .map_err(|error| unreadable(format!("--host {}: {error}", args.host)))?;
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|error| unreadable(format!("cannot listen on {address}: {error}")))?;
        let mut options = ServeOptions::default()
            .isolation(provider.isolation().describe())
            .memory(provider.isolation().memory_enforced());
        match &token {
            Some(token) => options = options.token(token.clone()),
            None if args.no_auth && address.ip().is_loopback() => options = options.anonymous(),
            None if args.no_auth => {
                return Err(unreadable(format!(
                    "--no-auth serves loopback addresses only, not {address}: anyone who can reach it could run code as this user; set BAY_API_KEY"
                )));
            }
            None => {
                return Err(unreadable(
                    "the sandbox server needs a token: set BAY_API_KEY (or --token) to the key clients will send, or pass --no-auth to let anyone on this machine in (loopback only)",
                ));
            }
        }
        options.allowed_hosts.clone_from(&args.allow_hosts);
        options.allowed_origins.clone_from(&args.allow_origins);
        let server = BayServer::start(listener, Arc::new(provider.clone()), options)
            .map_err(|error| unreadable(format!("cannot serve: {error}")))?;
        eprintln!(
            "serving the Bay API 0.3.1 at {} (auth: {}; isolation: {}; data: {})",
            server.url(),
            if token.is_some() {
                "Bearer token"
            } else {
                "anonymous"
            },
            provider.isolation().describe(),
            data_dir.display()
        );
        // Bay's idle GC: sessions past their idle deadline are stopped (files stay).
        let collector = provider.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(15)).await;
                collector.collect_idle().await;
            }
        });
        tokio::select! {
            ended = server.wait() => {
                ended.map_err(|error| unreadable(format!("the server stopped: {error}")))?;
            }
            _ = tokio::signal::ctrl_c() => eprintln!("stopping"),
        }
        Ok(Outcome::Ok)
    })
}
