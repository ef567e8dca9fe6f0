//! Integration tests of `wayline-planner` (one binary).

mod dataflow;
mod output;
mod suggest;
mod sut;
