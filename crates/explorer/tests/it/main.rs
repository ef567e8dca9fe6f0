//! Integration tests of `wayline-explorer` (one binary).

mod dataflow;
mod explore;
mod output;
mod rest;
mod safety;
mod suggest;
mod sut;
