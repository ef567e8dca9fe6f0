//! Sandbox profiles: what a sandbox can do and how it runs. Read from YAML; Bay's two default
//! profiles when none is given.
//!
//! ```yaml
//! profiles:
//!   - id: python-default
//!     capabilities: [filesystem, shell, python]
//!     idle_timeout: 1800        # seconds without a call before the runtime stops
//!     env: {BAY_TEST_ENV_VAR: test-value-12345}
//!     max_file_mb: 50           # the largest file written or uploaded (optional)
//!     resources: {memory: 512m, cpus: 1}   # memory enforced per process; cpus shown
//!     description: Python with a shell and files
//! ```

use std::path::Path;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use wayline_core::document::{self, Format};

use crate::error::{Error, ErrorCode, SandboxError};

/// A capability a profile can grant.
pub const CAPABILITIES: [&str; 4] = ["filesystem", "shell", "python", "browser"];

/// One profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Profile {
    /// Its id (`python-default`).
    pub id: String,
    /// What sandboxes of it can do, in order.
    pub capabilities: Vec<String>,
    /// Seconds without a call before the runtime stops (files stay).
    #[serde(default = "default_idle")]
    pub idle_timeout: u64,
    /// Environment for Python and shell.
    #[serde(default)]
    pub env: IndexMap<String, String>,
    /// The largest file, in MiB, that sandboxes of this profile may write, upload, read or
    /// download through the file API; the provider's own limit applies too (the smaller
    /// wins). Unset: the provider's limit alone. Bay has no such setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_file_mb: Option<u64>,
    /// Its resources, as Bay's profiles give them: `memory` is enforced (the data limit of
    /// every process its sandboxes start: an allocation past it fails, the sandbox stays),
    /// `cpus` is recorded and shown only (no cgroups here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Resources>,
    /// What it is for.
    #[serde(default)]
    pub description: String,
}

/// A profile's resources (Bay's `resources: {cpus, memory}`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Resources {
    /// CPUs (`1`, `0.5`): shown, not enforced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<f64>,
    /// Memory, as Docker writes it: `512m`, `1g`, `131072k`, or bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
}

/// `text` (`512m`, `1g`, `131072k`, `1024`; `mb`, `MiB` and the like too) as bytes.
pub fn memory_bytes(text: &str) -> Option<u64> {
    let lowered = text.trim().to_ascii_lowercase();
    let digits_end = lowered
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lowered.len());
    let (number, unit) = lowered.split_at(digits_end);
    let number: u64 = number.parse().ok()?;
    let factor: u64 = match unit.trim().trim_end_matches('b').trim_end_matches('i') {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => return None,
    };
    number.checked_mul(factor).filter(|bytes| *bytes > 0)
}

fn default_idle() -> u64 {
    1_800
}

/// A profiles file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
struct ProfilesFile {
    profiles: Vec<Profile>,
}

/// The JSON Schema of a profiles file.
#[cfg(feature = "schema")]
pub fn file_schema() -> schemars::Schema {
    schemars::schema_for!(ProfilesFile)
}

/// The profiles a provider offers.
#[derive(Debug, Clone, PartialEq)]
pub struct Profiles {
    profiles: Vec<Profile>,
}

impl Profiles {
    /// Bay's defaults: `python-default` and `python-data`, both with files, shell and Python.
    pub fn bay_defaults() -> Profiles {
        let profile = |id: &str, description: &str| Profile {
            id: id.to_owned(),
            capabilities: ["filesystem", "shell", "python"]
                .map(str::to_owned)
                .to_vec(),
            idle_timeout: default_idle(),
            env: IndexMap::new(),
            max_file_mb: None,
            resources: None,
            description: description.to_owned(),
        };
        Profiles {
            profiles: vec![
                profile("python-default", "Python with a shell and files"),
                profile("python-data", "Python for data work"),
            ],
        }
    }

    /// Reads a profiles file. Errors name the file and line, or the profile and the problem.
    pub fn load(path: &Path) -> Result<Profiles, Error> {
        let text = wayline_durable::read::text(
            path,
            wayline_core::document::Limits::configured().max_bytes,
        )
        .map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Profiles::from_yaml(&text, &path.display().to_string())
    }

    /// Reads profiles from YAML text.
    pub fn from_yaml(text: &str, origin: &str) -> Result<Profiles, Error> {
        let file: ProfilesFile = document::parse(text, Format::Yaml, origin)?;
        let invalid = |message: String| {
            Err(Error::Profiles {
                origin: origin.to_owned(),
                message,
            })
        };
        let mut seen = Vec::new();
        for profile in &file.profiles {
            let at = format!("profile `{}`", profile.id);
            if profile.id.is_empty() {
                return invalid("a profile has an empty id".to_owned());
            }
            if seen.contains(&profile.id) {
                return invalid(format!("{at} is listed twice"));
            }
            seen.push(profile.id.clone());
            for capability in &profile.capabilities {
                if !CAPABILITIES.contains(&capability.as_str()) {
                    return invalid(format!(
                        "{at}: unknown capability `{capability}` (use {})",
                        CAPABILITIES.join(", ")
                    ));
                }
            }
            if profile.idle_timeout == 0 {
                return invalid(format!("{at}: idle_timeout must be at least 1 second"));
            }
            if let Some(memory) = profile
                .resources
                .as_ref()
                .and_then(|resources| resources.memory.as_deref())
                .filter(|memory| memory_bytes(memory).is_none())
            {
                return invalid(format!(
                    "{at}: resources.memory `{memory}` is not a size; write it as Docker does \
                     (`512m`, `1g`)"
                ));
            }
            if profile
                .max_file_mb
                .is_some_and(|mb| mb == 0 || mb > MAX_FILE_MB)
            {
                return invalid(format!(
                    "{at}: max_file_mb must be between 1 and {MAX_FILE_MB} (MiB)"
                ));
            }
        }
        if file.profiles.is_empty() {
            return invalid("no profiles; list at least one".to_owned());
        }
        Ok(Profiles {
            profiles: file.profiles,
        })
    }

    /// The profile `id`, or Bay's `validation_error` ("Invalid profile: X").
    pub fn get(&self, id: &str) -> Result<&Profile, SandboxError> {
        self.profiles
            .iter()
            .find(|profile| profile.id == id)
            .ok_or_else(|| {
                SandboxError::new(ErrorCode::ValidationError, format!("Invalid profile: {id}"))
            })
    }

    /// Every profile, in order.
    pub fn all(&self) -> &[Profile] {
        &self.profiles
    }
}

/// The largest `max_file_mb` a profile may set: 1 TiB.
const MAX_FILE_MB: u64 = 1024 * 1024;

impl Profile {
    /// The memory limit of its sandboxes' processes, in bytes, if it sets one.
    pub fn memory_limit(&self) -> Option<u64> {
        memory_bytes(self.resources.as_ref()?.memory.as_deref()?)
    }

    /// The largest file sandboxes of this profile may move through the file API, given the
    /// provider's own limit of `provider_bytes`.
    pub fn file_limit(&self, provider_bytes: u64) -> u64 {
        self.max_file_mb.map_or(provider_bytes, |mb| {
            provider_bytes.min(mb.saturating_mul(1024 * 1024))
        })
    }

    /// Checks that the profile grants `capability`: Bay's `capability_not_supported` (with
    /// `details.capability` and `details.available`) otherwise.
    pub fn require(&self, capability: &str) -> Result<(), SandboxError> {
        if self
            .capabilities
            .iter()
            .any(|granted| granted == capability)
        {
            return Ok(());
        }
        Err(SandboxError::new(
            ErrorCode::CapabilityNotSupported,
            format!("Profile `{}` does not support `{capability}`", self.id),
        )
        .detail("capability", capability)
        .detail("available", self.capabilities.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_load_with_checks_and_bays_errors() {
        let profiles = Profiles::from_yaml(
            "profiles:\n  - id: python-only-test\n    capabilities: [python]\n  - id: short-idle-test\n    capabilities: [filesystem, shell, python]\n    idle_timeout: 2\n    env: {BAY_TEST_ENV_VAR: test-value-12345}\n",
            "profiles.yaml",
        )
        .unwrap();
        let python_only = profiles.get("python-only-test").unwrap();
        assert_eq!(python_only.idle_timeout, 1_800);
        let refused = python_only.require("shell").unwrap_err();
        assert_eq!(refused.code, ErrorCode::CapabilityNotSupported);
        assert_eq!(refused.details["available"], serde_json::json!(["python"]));
        assert_eq!(
            profiles.get("short-idle-test").unwrap().env["BAY_TEST_ENV_VAR"],
            "test-value-12345"
        );
        let unknown = profiles.get("gpu").unwrap_err();
        assert_eq!(
            (unknown.code, unknown.message.as_str()),
            (ErrorCode::ValidationError, "Invalid profile: gpu")
        );

        let bad = |yaml: &str| Profiles::from_yaml(yaml, "p.yaml").unwrap_err().to_string();
        assert!(
            bad("profiles:\n  - {id: a, capabilities: [gpu]}\n")
                .contains("unknown capability `gpu`")
        );
        assert!(
            bad("profiles:\n  - {id: a, capabilities: []}\n  - {id: a, capabilities: []}\n")
                .contains("listed twice")
        );
        assert!(bad("profiles: []\n").contains("no profiles"));
        assert!(
            bad("profiles:\n  - {id: a, capabilities: [], max_file_mb: 0}\n")
                .contains("max_file_mb must be between 1 and")
        );
        let limited = Profiles::from_yaml(
            "profiles:\n  - {id: a, capabilities: [], max_file_mb: 2}\n",
            "p",
        )
        .unwrap();
        let limited = limited.get("a").unwrap();
        assert_eq!(limited.file_limit(100 << 20), 2 << 20);
        assert_eq!(
            limited.file_limit(1 << 20),
            1 << 20,
            "the provider's limit, if smaller"
        );
        assert_eq!(python_only.file_limit(100 << 20), 100 << 20);
        for (text, bytes) in [
            ("512m", Some(512 << 20)),
            ("1g", Some(1 << 30)),
            ("128MiB", Some(128 << 20)),
            ("1024", Some(1024)),
            ("0", None),
            ("lots", None),
            ("5x", None),
        ] {
            assert_eq!(memory_bytes(text), bytes, "{text}");
        }
        assert!(
            bad("profiles:\n  - {id: a, capabilities: [], resources: {memory: lots}}\n")
                .contains("resources.memory `lots` is not a size")
        );
        assert!(bad("profiles:\n  - {id: a, capabilities: [], idle: 3}\n").contains("p.yaml:2"));
        assert_eq!(Profiles::bay_defaults().all().len(), 2);
    }
}
