//! Integration tests of `wayline-planner` (one binary).

mod llm;
mod plan;
mod prompt;
mod recall;
