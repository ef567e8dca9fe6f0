//! Integration tests of `wayline-explorer` (one binary).

mod dataflow;
mod explore;
mod output;
mod rest;
mod suggest;
mod sut;
