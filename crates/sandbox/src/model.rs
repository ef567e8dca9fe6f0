//! The records a sandbox service answers with, in Bay's wire shapes (field names, naive
//! timestamps), so the local provider, the Bay client and the loopback server share them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A sandbox's status, as Bay computes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Status {
    /// No runtime; files kept.
    Idle,
    /// The runtime is starting.
    Starting,
    /// The runtime is up.
    Ready,
    /// The runtime failed to start (retried on the next call).
    Failed,
    /// Past its expiry.
    Expired,
}

impl Status {
    /// The status as Bay writes it (`idle`, `starting`, `ready`, `failed`, `expired`).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Idle => "idle",
            Status::Starting => "starting",
            Status::Ready => "ready",
            Status::Failed => "failed",
            Status::Expired => "expired",
        }
    }
}

/// Bay's `SandboxResponse`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SandboxInfo {
    /// `sandbox-<12 hex>`.
    pub id: String,
    /// Its status.
    pub status: Status,
    /// Its profile.
    pub profile: String,
    /// Its workspace volume (`ws-<12 hex>`).
    pub cargo_id: Option<String>,
    /// What it can do: `filesystem`, `shell`, `python`, `browser`.
    pub capabilities: Vec<String>,
    /// When it was created.
    #[serde(with = "crate::time::required")]
    pub created_at: DateTime<Utc>,
    /// When it expires (`null`: never).
    #[serde(with = "crate::time::optional")]
    pub expires_at: Option<DateTime<Utc>>,
    /// When its runtime stops if unused (`null`: no runtime).
    #[serde(with = "crate::time::optional")]
    pub idle_expires_at: Option<DateTime<Utc>>,
    /// Its runtimes, when running (Bay always sends the field, usually `null`).
    pub containers: Option<Vec<Value>>,
}

/// The result of `python/exec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PythonResult {
    /// True when the code raised nothing (and did not time out).
    pub success: bool,
    /// Streams and the last expression's value, stripped of surrounding whitespace.
    pub output: String,
    /// The traceback, or the timeout message.
    pub error: Option<String>,
    /// `{"execution_count", "output": {"text", "images"}}`.
    pub data: Option<Value>,
    /// `exec-<12 hex>`.
    pub execution_id: String,
    /// Wall time.
    pub execution_time_ms: u64,
    /// The code, when asked to echo it.
    pub code: Option<String>,
}

/// The result of `shell/exec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ShellResult {
    /// True when the exit code is 0.
    pub success: bool,
    /// Standard output, stripped.
    pub output: String,
    /// Standard error when not empty (or the timeout message).
    pub error: Option<String>,
    /// The exit code (`-1` after a timeout).
    pub exit_code: Option<i32>,
    /// `exec-<12 hex>`.
    pub execution_id: String,
    /// Wall time.
    pub execution_time_ms: u64,
    /// The command, when asked to echo it.
    pub command: Option<String>,
}

/// An entry of `filesystem/directories`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FileEntry {
    /// Its name.
    pub name: String,
    /// Its absolute path in the sandbox (`/workspace/a.txt`).
    pub path: String,
    /// A file.
    pub is_file: bool,
    /// A directory.
    pub is_dir: bool,
    /// Bytes (`null` for directories).
    pub size: Option<u64>,
    /// Seconds since the epoch.
    pub modified_time: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bays_sandbox_response_reads_and_writes_back_the_same() {
        let wire = serde_json::json!({
            "id": "sandbox-0123456789ab",
            "status": "idle",
            "profile": "python-default",
            "cargo_id": "ws-0123456789ab",
            "capabilities": ["filesystem", "shell", "python"],
            "created_at": "2026-11-22T04:02:59.609120",
            "expires_at": null,
            "idle_expires_at": "2026-11-22T04:32:59.609120",
            "containers": null
        });
        let info: SandboxInfo = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(info.status, Status::Idle);
        assert_eq!(info.expires_at, None);
        assert_eq!(serde_json::to_value(&info).unwrap(), wire);
        let with_z = serde_json::json!({
            "id": "sandbox-1", "status": "ready", "profile": "p", "cargo_id": null,
            "capabilities": [], "created_at": "2026-11-22T04:02:59Z", "expires_at": "2026-11-22T05:02:59Z",
            "idle_expires_at": null, "containers": [{"name": "ship"}]
        });
        let info: SandboxInfo = serde_json::from_value(with_z).unwrap();
        assert_eq!(
            crate::time::format(info.expires_at.unwrap()),
            "2026-11-22T05:02:59.000000"
        );
    }
}
