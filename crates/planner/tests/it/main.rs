//! Integration tests of `wayline-planner` (one binary).

mod dataflow;
mod sut;
