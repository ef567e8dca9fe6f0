//! The Arazzo loader against the specification's own material (the 1.1 schema's pass and fail
//! documents, the published examples) and its error reports.

mod documents;
mod examples;
mod round_trip;
mod running;
mod sources;
mod specification;
