//! What the libraries trace (`tracing` events), shown on stderr when asked for: `-v` (info),
//! `-vv` (debug), `-vvv` (trace) for wayline's crates, or whatever `RUST_LOG` selects when it
//! is set. Without either nothing is traced: stderr is the progress display's, and its live
//! redraw assumes no one else writes there, so while tracing is on the progress is plain
//! lines.

use std::sync::atomic::{AtomicBool, Ordering};

use tracing_subscriber::EnvFilter;
use wayline_executor::{Progress, ProgressStyle};

/// Whether [`init`] turned tracing on.
static TRACING: AtomicBool = AtomicBool::new(false);

/// Turns tracing on for `verbose` (the count of `-v`) or `RUST_LOG`.
pub(crate) fn init(verbose: u8) {
    let Some(filter) = filter(verbose, std::env::var("RUST_LOG").ok().as_deref()) else {
        return;
    };
    let installed = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    TRACING.store(installed.is_ok(), Ordering::SeqCst);
}

/// The filter for `verbose` and `rust_log`: `RUST_LOG` wins when it is set (and a filter);
/// `None` when nothing is to be traced.
fn filter(verbose: u8, rust_log: Option<&str>) -> Option<EnvFilter> {
    if let Some(directives) = rust_log.filter(|directives| !directives.trim().is_empty()) {
        match EnvFilter::try_new(directives) {
            Ok(filter) => return Some(filter),
            Err(error) => eprintln!(
                "warning: RUST_LOG is not a filter ({error}); write it as `wayline_executor=debug` or `info`"
            ),
        }
    }
    let directives = match verbose {
        0 => return None,
        1 => "warn,wayline=info",
        2 => "warn,wayline=debug",
        _ => "info,wayline=trace",
    };
    EnvFilter::try_new(directives).ok()
}

/// The progress display for a run: live in a terminal unless tracing shares stderr with it.
pub(crate) fn progress() -> Progress {
    if TRACING.load(Ordering::SeqCst) {
        Progress::new(std::io::stderr(), ProgressStyle::Plain)
    } else {
        Progress::stderr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_and_rust_log_choose_the_filter() {
        assert!(filter(0, None).is_none());
        assert!(filter(0, Some("  ")).is_none());
        // (A filter shows its most specific directive first.)
        assert_eq!(filter(1, None).unwrap().to_string(), "wayline=info,warn");
        assert_eq!(filter(3, None).unwrap().to_string(), "wayline=trace,info");
        // RUST_LOG decides when it is set, whatever -v says.
        let chosen = filter(0, Some("wayline_executor=debug")).unwrap();
        assert_eq!(chosen.to_string(), "wayline_executor=debug");
        // One that does not parse falls back to -v's.
        assert_eq!(
            filter(2, Some("wayline=notalevel")).unwrap().to_string(),
            "wayline=debug,warn"
        );
    }
}
