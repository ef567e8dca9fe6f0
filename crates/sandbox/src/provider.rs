//! The `SandboxProvider` trait — every operation of Bay's sandbox API — its request and page
//! types, and [`Sandbox`], a handle bound to one sandbox (as the Bay SDK's `Sandbox` object).
//!
//! # Contract
//!
//! Implementations answer with Bay's records and Bay's errors ([`SandboxError`] with its
//! [`ErrorCode`](crate::ErrorCode)):
//!
//! - an unknown or deleted sandbox is `not_found`; deleting an already deleted one succeeds;
//! - capability calls check, in order: the sandbox exists, its profile grants the capability
//!   (`capability_not_supported`), the paths are valid (`invalid_path`); then the runtime is
//!   started if needed (lazy start) and the idle deadline moved;
//! - a Python error is a *successful call* with `success: false` and the traceback in
//!   `error`; so is a timeout (`"Code execution timed out after N seconds"`, or for shell
//!   `exit_code: -1` and `"Command timed out"`);
//! - `create` and `extend_ttl` with an idempotency key replay the first answer for the same
//!   request and refuse another request with `conflict`;
//! - `extend_ttl` follows Bay's order: `extend_by <= 0` is `validation_error`, unknown is
//!   `not_found`, no expiry is `sandbox_ttl_infinite`, past expiry is `sandbox_expired`, else
//!   `expires_at = max(old, now) + extend_by`;
//! - reading, listing or deleting a missing file is `ship_error` (Bay's behaviour); downloading
//!   one is `file_not_found`.

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::SandboxError;
use crate::model::{FileEntry, PythonResult, SandboxInfo, ShellResult, Status};
use crate::skills::SkillLifecycle;

/// What a provider answers.
pub type SandboxResult<T> = Result<T, SandboxError>;

/// The longest exec timeout Bay accepts, in seconds.
pub const MAX_EXEC_TIMEOUT_SECS: u64 = 300;

/// A request to create a sandbox (Bay's body, plus the idempotency key header).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CreateSandbox {
    /// The profile (Bay's default: `python-default`).
    #[serde(default = "default_profile")]
    pub profile: String,
    /// An existing workspace to mount (not supported by the local provider).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cargo_id: Option<String>,
    /// Seconds to live; `None`, 0 or negative: no expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i64>,
    /// The `Idempotency-Key` header.
    #[serde(skip)]
    pub idempotency_key: Option<String>,
}

fn default_profile() -> String {
    "python-default".to_owned()
}

impl Default for CreateSandbox {
    fn default() -> Self {
        CreateSandbox::new(default_profile())
    }
}

impl CreateSandbox {
    /// A sandbox of `profile`, no expiry, no key.
    pub fn new(profile: impl Into<String>) -> Self {
        CreateSandbox {
            profile: profile.into(),
            cargo_id: None,
            ttl: None,
            idempotency_key: None,
        }
    }

    /// Expires `seconds` after creation.
    pub fn ttl(mut self, seconds: i64) -> Self {
        self.ttl = Some(seconds);
        self
    }

    /// Sends an idempotency key.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// The body Bay fingerprints: the parsed request re-serialized, defaults filled.
    pub fn canonical_body(&self) -> Value {
        serde_json::json!({"profile": self.profile, "cargo_id": self.cargo_id, "ttl": self.ttl})
    }
}

/// A Python execution (Bay's `python/exec` body).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PythonExec {
    /// The code.
    pub code: String,
    /// Seconds allowed (1..=300; Bay's default 30).
    #[serde(default = "default_timeout")]
    pub timeout: u64,
    /// Echo the code in the result.
    #[serde(default)]
    pub include_code: bool,
    /// A description kept in the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Comma-separated tags kept in the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<String>,
}

fn default_timeout() -> u64 {
    30
}

impl PythonExec {
    /// `code` with Bay's defaults.
    pub fn new(code: impl Into<String>) -> Self {
        PythonExec {
            code: code.into(),
            timeout: default_timeout(),
            include_code: false,
            description: None,
            tags: None,
        }
    }

    /// Seconds allowed.
    pub fn timeout(mut self, seconds: u64) -> Self {
        self.timeout = seconds;
        self
    }
}

/// A shell command (Bay's `shell/exec` body).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ShellExec {
    /// The command, run with `bash -lc`.
    pub command: String,
    /// Seconds allowed (1..=300; Bay's default 30).
    #[serde(default = "default_timeout")]
    pub timeout: u64,
    /// The working directory, relative to the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Echo the command in the result.
    #[serde(default)]
    pub include_code: bool,
    /// A description kept in the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Comma-separated tags kept in the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<String>,
}

impl ShellExec {
    /// `command` with Bay's defaults.
    pub fn new(command: impl Into<String>) -> Self {
        ShellExec {
            command: command.into(),
            timeout: default_timeout(),
            cwd: None,
            include_code: false,
            description: None,
            tags: None,
        }
    }

    /// Seconds allowed.
    pub fn timeout(mut self, seconds: u64) -> Self {
        self.timeout = seconds;
        self
    }

    /// Runs in `cwd` (relative to the workspace).
    pub fn cwd(mut self, cwd: impl Into<String>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }
}

/// Which sandboxes to list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ListQuery {
    /// At most this many (1..=200; Bay's default 50).
    pub limit: Option<u32>,
    /// After this sandbox id (the previous page's `next_cursor`).
    pub cursor: Option<String>,
    /// Only this status.
    pub status: Option<Status>,
}

impl ListQuery {
    /// Everything, first page.
    pub fn new() -> Self {
        ListQuery::default()
    }

    /// At most `limit` per page.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// After `cursor`.
    pub fn cursor(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }
}

/// A page of sandboxes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SandboxPage {
    /// The sandboxes, by id.
    pub items: Vec<SandboxInfo>,
    /// The cursor of the next page, if there is one.
    pub next_cursor: Option<String>,
}

/// The default size limit of a cargo, in MiB (Bay's).
pub const DEFAULT_CARGO_SIZE_MB: u64 = 1024;

/// The largest size limit a cargo may be given, in MiB (Bay's).
pub const MAX_CARGO_SIZE_MB: u64 = 65536;

/// A cargo: a workspace that sandboxes mount at `/workspace` (Bay's `CargoResponse`). A
/// sandbox's own cargo is `managed` (made and deleted with it); an external one is made with
/// [`SandboxProvider::create_cargo`] and outlives the sandboxes that mount it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Cargo {
    /// `ws-<12 hex>`.
    pub id: String,
    /// Made for one sandbox, and deleted with it.
    pub managed: bool,
    /// The sandbox a managed cargo belongs to.
    pub managed_by_sandbox_id: Option<String>,
    /// Where it is kept: `local_directory` for the local provider (Bay says `docker_volume`).
    pub backend: String,
    /// Its size limit, in MiB.
    pub size_limit_mb: u64,
    /// When it was made.
    #[serde(with = "crate::time::required")]
    pub created_at: DateTime<Utc>,
    /// When a sandbox last mounted it.
    #[serde(with = "crate::time::required")]
    pub last_accessed_at: DateTime<Utc>,
}

/// A new external cargo (Bay's `CreateCargoRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CreateCargo {
    /// Its size limit in MiB, 1 to [`MAX_CARGO_SIZE_MB`] ([`DEFAULT_CARGO_SIZE_MB`] when
    /// unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_limit_mb: Option<u64>,
    /// The `Idempotency-Key` header.
    #[serde(skip)]
    pub idempotency_key: Option<String>,
}

/// Which cargos to list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct CargoQuery {
    /// Managed (`Some(true)`) or external (`Some(false)`, and Bay's default when unset).
    pub managed: Option<bool>,
    /// At most this many (1..=200; Bay's default 50).
    pub limit: Option<u32>,
    /// After this cargo id (the previous page's `next_cursor`).
    pub cursor: Option<String>,
}

/// One page of cargos.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CargoPage {
    /// The cargos, by id.
    pub items: Vec<Cargo>,
    /// The cursor of the next page, if there is one.
    pub next_cursor: Option<String>,
}

/// The garbage-collection tasks Bay knows (`POST /v1/admin/gc/run`).
pub const GC_TASKS: [&str; 4] = [
    "idle_session",
    "expired_sandbox",
    "orphan_cargo",
    "orphan_container",
];

/// What one garbage-collection task did (Bay's `GCTaskResult`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GcTaskResult {
    /// The task (one of [`GC_TASKS`]).
    pub task_name: String,
    /// What it removed or stopped.
    pub cleaned_count: u64,
    /// What it looked at and left (an external cargo, a sandbox not yet expired).
    pub skipped_count: u64,
    /// What went wrong.
    pub errors: Vec<String>,
}

/// A garbage-collection run (Bay's `GCRunResponse`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GcRun {
    /// Each task's result, in the order run.
    pub results: Vec<GcTaskResult>,
    /// Everything removed or stopped.
    pub total_cleaned: u64,
    /// Every error.
    pub total_errors: u64,
    /// How long it took.
    pub duration_ms: u64,
}

/// How garbage collection is set up (Bay's `GCStatusResponse`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GcStatus {
    /// Whether it runs on its own (the local provider: on every call).
    pub enabled: bool,
    /// Whether a run is under way.
    pub is_running: bool,
    /// The server instance.
    pub instance_id: String,
    /// Seconds between automatic runs (0: on every call).
    pub interval_seconds: u64,
    /// Each task and whether it is enabled (`{"idle_session": {"enabled": true}}`).
    pub tasks: std::collections::BTreeMap<String, std::collections::BTreeMap<String, bool>>,
}

/// What an upload stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Uploaded {
    /// `"ok"`.
    pub status: String,
    /// The normalized path.
    pub path: String,
    /// Bytes written.
    pub size: u64,
}

/// One execution in a sandbox's history (Bay's `ExecutionHistoryEntry`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HistoryEntry {
    /// `exec-<12 hex>`, the execution's id.
    pub id: String,
    /// The session it ran in.
    pub session_id: Option<String>,
    /// `python` or `shell`.
    pub exec_type: String,
    /// The code or command.
    pub code: String,
    /// Whether it succeeded.
    pub success: bool,
    /// Wall time.
    pub execution_time_ms: u64,
    /// Its output.
    pub output: Option<String>,
    /// Its error.
    pub error: Option<String>,
    /// The description given.
    pub description: Option<String>,
    /// The tags given.
    pub tags: Option<String>,
    /// Notes added later.
    pub notes: Option<String>,
    /// When it ran.
    #[serde(with = "crate::time::required")]
    pub created_at: DateTime<Utc>,
}

/// Which history entries to list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct HistoryQuery {
    /// Only `python` or `shell`.
    pub exec_type: Option<String>,
    /// Only successes.
    pub success_only: bool,
    /// At most this many (Bay's default 100, at most 500).
    pub limit: Option<u32>,
    /// Skip this many.
    pub offset: u32,
    /// Only entries tagged with one of these (comma-separated) tags.
    pub tags: Option<String>,
    /// Only entries with notes (Bay's `has_notes=true`; `false` filters nothing, as in Bay,
    /// whose SDK always sends it).
    pub has_notes: bool,
    /// Only entries with a description (likewise).
    pub has_description: bool,
}

impl HistoryQuery {
    /// True when `entry` passes every filter but the paging.
    pub fn admits(&self, entry: &HistoryEntry) -> bool {
        let present = |text: &Option<String>| text.as_deref().is_some_and(|text| !text.is_empty());
        self.exec_type
            .as_deref()
            .is_none_or(|kind| entry.exec_type == kind)
            && (!self.success_only || entry.success)
            && (!self.has_notes || present(&entry.notes))
            && (!self.has_description || present(&entry.description))
            && self.tags.as_deref().is_none_or(|wanted| {
                let held: Vec<&str> = entry
                    .tags
                    .as_deref()
                    .unwrap_or_default()
                    .split(',')
                    .map(str::trim)
                    .collect();
                wanted
                    .split(',')
                    .map(str::trim)
                    .filter(|tag| !tag.is_empty())
                    .any(|tag| held.contains(&tag))
            })
    }
}

/// Bay's `AnnotateExecutionRequest`: what `PATCH …/history/{id}` changes; a field left out (or
/// `null`) stays as it is.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Annotation {
    /// A new description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// New tags (comma-separated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<String>,
    /// New notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

impl Annotation {
    /// `entry` with this annotation applied.
    pub fn apply(&self, entry: &mut HistoryEntry) {
        for (field, value) in [
            (&mut entry.description, &self.description),
            (&mut entry.tags, &self.tags),
            (&mut entry.notes, &self.notes),
        ] {
            if value.is_some() {
                field.clone_from(value);
            }
        }
    }
}

/// A page of history, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HistoryPage {
    /// The entries.
    pub entries: Vec<HistoryEntry>,
    /// How many match in all.
    pub total: u64,
}

/// A profile as `GET /v1/profiles` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProfileInfo {
    /// Its id.
    pub id: String,
    /// What it can do.
    pub capabilities: Vec<String>,
    /// Seconds without a call before the runtime stops.
    pub idle_timeout: u64,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
    /// Anything else the server says (Bay: `image`, `resources`, `containers`).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A place sandboxes run: the embedded [`LocalProvider`](crate::local::LocalProvider) or a
/// Bay deployment through [`BayClient`](crate::client::BayClient). See the
/// [module documentation](self) for the contract.
#[async_trait::async_trait]
pub trait SandboxProvider: SkillLifecycle + Send + Sync + fmt::Debug {
    /// Creates a sandbox (its runtime starts on first use).
    async fn create(&self, request: &CreateSandbox) -> SandboxResult<SandboxInfo>;
    /// A sandbox's record.
    async fn get(&self, id: &str) -> SandboxResult<SandboxInfo>;
    /// Sandboxes, a page at a time, by id.
    async fn list(&self, query: &ListQuery) -> SandboxResult<SandboxPage>;
    /// Stops the runtime (variables are lost, files kept). Idempotent.
    async fn stop(&self, id: &str) -> SandboxResult<()>;
    /// Deletes the sandbox and its workspace.
    async fn delete(&self, id: &str) -> SandboxResult<()>;
    /// Moves the expiry (see the contract for Bay's rules).
    async fn extend_ttl(
        &self,
        id: &str,
        extend_by: i64,
        idempotency_key: Option<&str>,
    ) -> SandboxResult<SandboxInfo>;
    /// Moves the idle deadline without starting anything.
    async fn keepalive(&self, id: &str) -> SandboxResult<()>;
    /// Runs Python in the sandbox's session.
    async fn python_exec(&self, id: &str, request: &PythonExec) -> SandboxResult<PythonResult>;
    /// Runs a shell command.
    async fn shell_exec(&self, id: &str, request: &ShellExec) -> SandboxResult<ShellResult>;
    /// A text file's content.
    async fn read_file(&self, id: &str, path: &str) -> SandboxResult<String>;
    /// Writes a text file (parents created, overwritten).
    async fn write_file(&self, id: &str, path: &str, content: &str) -> SandboxResult<()>;
    /// Deletes a file, or a directory with its content.
    async fn delete_file(&self, id: &str, path: &str) -> SandboxResult<()>;
    /// A directory's visible entries: directories first, then by name, case-insensitive.
    async fn list_files(&self, id: &str, path: &str) -> SandboxResult<Vec<FileEntry>>;
    /// Stores bytes at `path`.
    async fn upload(&self, id: &str, path: &str, bytes: Vec<u8>) -> SandboxResult<Uploaded>;
    /// A file's bytes.
    async fn download(&self, id: &str, path: &str) -> SandboxResult<Vec<u8>>;
    /// The sandbox's executions, newest first.
    async fn history(&self, id: &str, query: &HistoryQuery) -> SandboxResult<HistoryPage>;
    /// One execution.
    async fn execution(&self, id: &str, execution_id: &str) -> SandboxResult<HistoryEntry>;

    /// Makes an external cargo (Bay's `POST /v1/cargos`); a repeated `Idempotency-Key` with
    /// the same request answers the first cargo.
    async fn create_cargo(&self, request: &CreateCargo) -> SandboxResult<Cargo>;

    /// Cargos, external ones unless `query.managed` says otherwise.
    async fn list_cargos(&self, query: &CargoQuery) -> SandboxResult<CargoPage>;

    /// One cargo; `not_found` for an unknown one.
    async fn get_cargo(&self, id: &str) -> SandboxResult<Cargo>;

    /// Deletes a cargo and its files; `conflict` (with `details.active_sandbox_ids`) while a
    /// sandbox mounts it.
    async fn delete_cargo(&self, id: &str) -> SandboxResult<()>;

    /// Runs garbage collection now (Bay's `POST /v1/admin/gc/run`): the `tasks` named (of
    /// [`GC_TASKS`]; `None` runs them all). An unknown task is a `validation_error`.
    async fn run_gc(&self, tasks: Option<&[String]>) -> SandboxResult<GcRun>;

    /// How garbage collection is set up (Bay's `GET /v1/admin/gc/status`).
    async fn gc_status(&self) -> SandboxResult<GcStatus>;

    /// Sets the description, tags or notes of one execution (Bay's `PATCH …/history/{id}`),
    /// returning it as it now is; `not_found` for an unknown execution.
    async fn annotate(
        &self,
        id: &str,
        execution_id: &str,
        annotation: &Annotation,
    ) -> SandboxResult<HistoryEntry>;
    /// The profiles sandboxes can be created with.
    async fn profiles(&self) -> SandboxResult<Vec<ProfileInfo>>;
}

/// One sandbox of a provider, with the SDK's shortcuts.
#[derive(Debug, Clone)]
pub struct Sandbox {
    provider: Arc<dyn SandboxProvider>,
    id: String,
}

impl Sandbox {
    /// Creates a sandbox on `provider`.
    pub async fn create(
        provider: Arc<dyn SandboxProvider>,
        request: &CreateSandbox,
    ) -> SandboxResult<Sandbox> {
        let info = provider.create(request).await?;
        Ok(Sandbox {
            provider,
            id: info.id,
        })
    }

    /// The sandbox `id` of `provider` (not checked until used).
    pub fn open(provider: Arc<dyn SandboxProvider>, id: impl Into<String>) -> Sandbox {
        Sandbox {
            provider,
            id: id.into(),
        }
    }

    /// Its id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Its provider.
    pub fn provider(&self) -> &Arc<dyn SandboxProvider> {
        &self.provider
    }

    /// Its current record.
    pub async fn info(&self) -> SandboxResult<SandboxInfo> {
        self.provider.get(&self.id).await
    }

    /// Runs Python with Bay's defaults.
    pub async fn python(&self, code: &str) -> SandboxResult<PythonResult> {
        self.provider
            .python_exec(&self.id, &PythonExec::new(code))
            .await
    }

    /// Runs a shell command with Bay's defaults.
    pub async fn shell(&self, command: &str) -> SandboxResult<ShellResult> {
        self.provider
            .shell_exec(&self.id, &ShellExec::new(command))
            .await
    }

    /// Reads a text file.
    pub async fn read_file(&self, path: &str) -> SandboxResult<String> {
        self.provider.read_file(&self.id, path).await
    }

    /// Writes a text file.
    pub async fn write_file(&self, path: &str, content: &str) -> SandboxResult<()> {
        self.provider.write_file(&self.id, path, content).await
    }

    /// Uploads bytes.
    pub async fn upload(&self, path: &str, bytes: Vec<u8>) -> SandboxResult<Uploaded> {
        self.provider.upload(&self.id, path, bytes).await
    }

    /// Downloads bytes.
    pub async fn download(&self, path: &str) -> SandboxResult<Vec<u8>> {
        self.provider.download(&self.id, path).await
    }

    /// Extends the expiry.
    pub async fn extend_ttl(
        &self,
        seconds: i64,
        idempotency_key: Option<&str>,
    ) -> SandboxResult<SandboxInfo> {
        self.provider
            .extend_ttl(&self.id, seconds, idempotency_key)
            .await
    }

    /// Stops the runtime.
    pub async fn stop(&self) -> SandboxResult<()> {
        self.provider.stop(&self.id).await
    }

    /// Deletes the sandbox.
    pub async fn delete(&self) -> SandboxResult<()> {
        self.provider.delete(&self.id).await
    }
}
