//! Integration tests of `wayline-planner` (one binary).

mod dataflow;
mod explore;
mod llm;
mod output;
mod plan;
mod prompt;
mod recall;
mod suggest;
mod sut;
