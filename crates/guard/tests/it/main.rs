//! Integration tests of wayline-guard: the default policy against MCP-ocs's real tools, policy
//! checks, transitions, panic scenarios on a fixed clock, break-glass and the audit chain, the
//! committed decision-table suite, and the guard as the executor's step policy.

mod executor;
mod guard;
mod policy;
