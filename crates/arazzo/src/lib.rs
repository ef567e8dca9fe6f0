//! Arazzo (OpenAPI Initiative) workflow documents for wayline: the object model of 1.0.1 and
//! 1.1, and loading that checks the specification's structural rules and reports every
//! problem with the rule it breaks, its file, line and column.
//!
//! ```
//! let text = "arazzo: 1.1.0\ninfo: {title: Pets, version: '1'}\n\
//!             sourceDescriptions: [{name: petstore, url: ./petstore.yaml, type: openapi}]\n\
//!             workflows:\n  - workflowId: adopt\n    steps:\n      - stepId: find\n        operationId: findPets\n";
//! let document = wayline_arazzo::load(text, "adopt.arazzo.yaml").unwrap();
//! assert_eq!(document.workflows[0].workflow_id, "adopt");
//! ```
//!
//! [`expression`] parses runtime expressions and the strings that embed them;
//! [`condition`] parses and evaluates the simple condition language of success criteria.
//! [`validate`] checks what structure cannot: ids, references, expressions, cycles;
//! [`sources`] reads the OpenAPI descriptions and checks the operations steps call in them.
//! [`runtime`] gives expressions their values while a document runs, [`criteria`] decides
//! whether a criterion holds, [`actions`] what follows a step, and [`waits`] which steps may run
//! at the same time; [`view`] draws that plan. [`export`] writes a wayline workflow as Arazzo
//! (with OpenAPI descriptions of its tools) and [`import`] reads one back where the mapping is
//! exact. [`run`] runs a document's workflows on wayline's engine.

// On docs.rs, items behind a feature say which one.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod actions;
mod check;
pub mod condition;
pub mod criteria;
mod cycles;
mod error;
pub mod export;
pub mod expression;
pub mod import;
mod input_schema;
mod load;
pub mod model;
mod positions;
mod problem;
pub mod run;
pub mod runtime;
pub mod sources;
mod validate;
pub mod view;
pub mod waits;
mod xpath;

pub use error::Error;
pub use load::{is_arazzo, load, load_file};
pub use model::ArazzoDocument;
pub use positions::Positions;
pub use problem::{Problem, Rule, Severity};
pub use validate::validate;
