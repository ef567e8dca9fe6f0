//! Integration tests of wayline-knowledge: the example knowledge files round-trip, every store
//! conforms, and real runs teach what they should.

mod fixtures;
mod learning;
mod stores;
