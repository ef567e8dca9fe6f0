//! Cancelling a run from outside, and what stops a run part-way (its token and its deadline).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// A handle that stops a run: in-flight calls are abandoned, steps not yet started are skipped,
/// and the run ends `cancelled` with a complete record.
///
/// ```
/// use wayline_executor::CancelToken;
///
/// let token = CancelToken::new();
/// let for_the_run = token.clone();
/// token.cancel();
/// assert!(for_the_run.is_cancelled());
/// ```
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    cancelled: AtomicBool,
    notify: Notify,
}

impl CancelToken {
    /// A token not yet cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels every run holding a clone of this token.
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    /// True once [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// Completes when the token is cancelled.
    pub async fn cancelled(&self) {
        let notified = self.inner.notify.notified();
        tokio::pin!(notified);
        // Register before checking the flag, so a cancel in between is not missed.
        notified.as_mut().enable();
        if self.is_cancelled() {
            return;
        }
        notified.await;
    }
}

/// What stops a run part-way: its cancel token and its deadline. The scheduler waits on both
/// between steps; work that holds the thread in between (an expression's loops) asks
/// [`trip`](Self::trip) as it goes, since nothing else can stop it there.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunStop {
    cancel: CancelToken,
    /// When the deadline passes, and its length (for the message).
    deadline: Option<(Instant, Duration)>,
    /// Set when work was stopped part-way by this stop (see [`RunStop::trip`]).
    tripped: Arc<AtomicBool>,
}

impl RunStop {
    /// A run's stop, its deadline counted from now. A deadline too far ahead to be a point in
    /// time is no deadline.
    pub(crate) fn new(cancel: Option<CancelToken>, deadline: Option<Duration>) -> Self {
        RunStop {
            cancel: cancel.unwrap_or_default(),
            deadline: deadline
                .and_then(|length| Some((Instant::now().checked_add(length)?, length))),
            tripped: Arc::default(),
        }
    }

    /// Why work in progress must stop now, if it must; noting that it stopped, so the run
    /// ends stopped even if every step has settled by then.
    pub(crate) fn trip(&self) -> Option<String> {
        let reason = self.reason()?;
        self.tripped.store(true, Ordering::SeqCst);
        Some(reason)
    }

    /// Why the run ended stopped although every step settled: work was stopped part-way by
    /// [`RunStop::trip`].
    pub(crate) fn tripped_reason(&self) -> Option<String> {
        if self.tripped.load(Ordering::SeqCst) {
            self.reason()
        } else {
            None
        }
    }

    /// Completes when the run is cancelled or its deadline passes, with the reason.
    pub(crate) async fn stopped(&self) -> String {
        let deadline = async {
            match self.deadline {
                Some((at, length)) => {
                    tokio::time::sleep_until(at).await;
                    deadline_passed(length)
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = self.cancel.cancelled() => CANCELLED.to_owned(),
            reason = deadline => reason,
        }
    }

    /// True when it was the cancel token (not the deadline) that stopped the run.
    pub(crate) fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Why the run must stop now, if it must.
    pub(crate) fn reason(&self) -> Option<String> {
        if self.cancel.is_cancelled() {
            return Some(CANCELLED.to_owned());
        }
        match self.deadline {
            Some((at, length)) if Instant::now() >= at => Some(deadline_passed(length)),
            _ => None,
        }
    }
}

const CANCELLED: &str = "the run was cancelled";

fn deadline_passed(length: Duration) -> String {
    format!("the run deadline of {} ms passed", length.as_millis())
}
