//! `tracing` spans: one `run` span, and one `step` span per step inside it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};
use wayline_core::HttpResponse;
use wayline_executor::RunOptions;
use wayline_executor::testing::ScriptedTransport;

use crate::support::workflow;

/// Records each span as `name field=value...`, and its parent's name.
#[derive(Default)]
struct Spans {
    next: AtomicU64,
    seen: Mutex<Vec<(u64, String, Option<u64>)>>,
    current: Mutex<Vec<u64>>,
}

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={value:?}", field.name()));
    }
}

impl Subscriber for Spans {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let mut fields = Fields(span.metadata().name().to_owned());
        span.record(&mut fields);
        let parent = self.current.lock().unwrap().last().copied();
        self.seen.lock().unwrap().push((id, fields.0, parent));
        Id::from_u64(id)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, span: &Id) {
        self.current.lock().unwrap().push(span.into_u64());
    }
    fn exit(&self, _: &Id) {
        self.current.lock().unwrap().pop();
    }
}

#[test]
fn a_run_span_holds_one_step_span_per_step() {
    let spans = Arc::new(Spans::default());
    let dispatch = tracing::Dispatch::from(Arc::clone(&spans) as Arc<dyn Subscriber + Send + Sync>);
    tracing::dispatcher::with_default(&dispatch, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let transport =
            ScriptedTransport::new().with_fallback(|_| Ok(HttpResponse::new(200, "{}")));
        let catalog = wayline_core::MemoryCatalog::from_tools([wayline_core::ToolDefinition::new(
            "t",
            "http://api.test",
        )]);
        let engine = wayline_executor::Engine::builder(Arc::new(catalog))
            .transport(Arc::new(transport))
            .build();
        let flow =
            workflow("id: w\nname: W\nsteps:\n  - {id: a, tool_id: t}\n  - {id: b, tool_id: t}\n");
        runtime
            .block_on(engine.run(&flow, RunOptions::new().run_id("r-1")))
            .unwrap();
    });
    let seen = spans.seen.lock().unwrap().clone();
    let run = seen
        .iter()
        .find(|(_, text, _)| text.starts_with("run "))
        .expect("a run span");
    assert_eq!(run.1, "run run_id=r-1 workflow_id=w");
    let steps: Vec<&String> = seen
        .iter()
        .filter(|(_, _, parent)| *parent == Some(run.0))
        .map(|(_, text, _)| text)
        .collect();
    assert_eq!(
        steps,
        ["step step_id=a tool_id=t", "step step_id=b tool_id=t"]
    );
}
