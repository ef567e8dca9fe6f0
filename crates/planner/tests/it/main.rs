//! Integration tests of `wayline-planner` (one binary).

mod dataflow;
mod suggest;
mod sut;
