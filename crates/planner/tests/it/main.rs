//! Integration tests of `wayline-planner` (one binary).

mod dataflow;
mod explore;
mod output;
mod simulation;
mod suggest;
mod sut;
