//! Integration tests of `wayline-registry` (one binary).

mod fixtures;
mod malformed;
mod openapi;
mod testdata;
