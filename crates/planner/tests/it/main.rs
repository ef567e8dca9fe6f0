//! Integration tests of `wayline-planner` (one binary).

mod sut;
