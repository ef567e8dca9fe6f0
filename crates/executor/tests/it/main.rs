//! Integration tests of the engine: real requests to loopback servers started in each test.

mod commands;
mod decisions;
mod durable;
mod expectations;
mod faults;
mod flow;
mod handles;
mod jsonpath_cts;
mod mcp;
mod polling;
mod scheduling;
mod semantics;
mod spans;
mod support;
mod tls;
