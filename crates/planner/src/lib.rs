//! The explorer (seed 000) and the planner (seed 004): from a goal to a graph of API calls.
//!
//! Being built (issue 8). So far:
//!
//! - [`sut`]: the system-under-test configuration (`sut.yaml`): connection and base URL, auth
//!   with credentials from environment variables, the spec, preset variables, CLI tools, and the
//!   execution settings (auto mode, checkpoints, confidence threshold, polling).

pub mod sut;

pub use sut::{Auth, AuthKind, Credentials, Execution, SutConfig, SutError};
