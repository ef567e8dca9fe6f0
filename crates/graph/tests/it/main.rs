//! Integration tests of `wayline-graph` (one binary: see STYLE.md §11).

mod golden;
mod properties;
mod support;
mod testdata;
mod views;
