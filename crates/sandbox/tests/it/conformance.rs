//! The public conformance suite (`wayline_sandbox::conformance`) against the local provider,
//! called directly, inside bubblewrap where it runs, and through `BayClient` over the loopback
//! server.

use crate::common::{Via, python_available, target};
use wayline_sandbox::conformance;

both!(the_whole_suite);
in_bubblewrap!(the_whole_suite, the_whole_suite_in_bubblewrap);

async fn the_whole_suite(via: Via) {
    if !python_available() {
        return;
    }
    let target = target(via).await;
    conformance::all(target.provider.as_ref(), "python-default").await;
}

/// The suite fails on a provider that breaks the contract: here one whose Python cannot start,
/// so an execution is an error instead of an answer.
#[tokio::test]
#[should_panic(expected = "python_exec runs code")]
async fn the_suite_fails_a_provider_that_cannot_run_code() {
    let dir = tempfile::tempdir().unwrap();
    let provider = wayline_sandbox::LocalProvider::open(
        wayline_sandbox::LocalConfig::new(dir.path())
            .isolation(wayline_sandbox::local::IsolationMode::None)
            .python("/nonexistent/python3"),
    )
    .unwrap();
    conformance::exec(&provider, "python-default").await;
}
