//! Integration tests of wayline-store: the conformance suite on every store, the lifecycle,
//! damaged data, and concurrent writers.

mod conformance;
mod damaged;
mod lifecycle;
