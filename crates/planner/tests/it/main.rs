//! Integration tests of `wayline-planner` (one binary).

mod dataflow;
mod explore;
mod output;
mod suggest;
mod sut;
