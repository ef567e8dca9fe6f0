//! Running a workflow: the [`Engine`](crate::Engine) and its builder (`engine`), a workflow
//! prepared once for many runs (`prepare`), what every step of a run shares (`context`), the
//! graph scheduler (`scheduler`, taking steps from `ready`) and the control-flow one (`flow`),
//! one step's life (`step`), finishing an interrupted run (`durable`), dry runs (`dry_run`),
//! calling one tool alone (`tool_call`), hooks around steps (`middleware`), showing a run to
//! a person (`progress`), runs spawned and followed through a handle (`handle`), and the
//! compile-time promise that every run future is `Send` (`spawnable`).

pub(crate) mod context;
pub(crate) mod dry_run;
pub mod durable;
pub(crate) mod engine;
pub mod flow;
pub(crate) mod handle;
pub(crate) mod middleware;
pub(crate) mod prepare;
pub(crate) mod progress;
pub(crate) mod ready;
pub(crate) mod scheduler;
mod spawnable;
pub(crate) mod step;
pub(crate) mod tool_call;
