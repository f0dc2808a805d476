//! Recording into a label set that exists already allocates nothing: a counting global
//! allocator (counting only on the thread and stretch under test) watches
//! `BridgeMetrics::record_call` and friends, the MCP operation durations among them.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcpwire::gateway::metrics::bridge::{BridgeMetrics, CallOutcome, Ended, Operation};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static WATCHING: Cell<bool> = const { Cell::new(false) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if WATCHING.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// How many allocations `f` makes on this thread.
fn allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    WATCHING.with(|w| w.set(true));
    f();
    WATCHING.with(|w| w.set(false));
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

#[test]
fn recording_an_existing_label_set_does_not_allocate() {
    let metrics = Arc::new(BridgeMetrics::default());
    let server = String::from("fs");
    let tool = String::from("read_file");
    // The first call creates the series: that one allocates.
    let first = allocations(|| metrics.record_call(&server, &tool, Duration::from_millis(3), CallOutcome::Error));
    assert!(first > 0, "the counter would not see allocations at all");
    metrics.set_upstream_up(&server, true);
    metrics.upstream_restarted(&server);
    let guard = metrics.session_opened();
    // The MCP durations, as the gateway records them on every forwarded call (no sink set:
    // nothing exported, nothing beyond the Prometheus histograms).
    let operations = [Ended::Ok, Ended::ToolError, Ended::Error(-32602)].map(|ended| Operation {
        method: "tools/call",
        tool: &tool,
        ended,
    });
    let prompt = Operation { method: "prompts/get", tool: "review", ended: Ended::Ok };
    for operation in operations.iter().chain([&prompt]) {
        metrics.server_operation(*operation, Duration::ZERO);
        metrics.client_operation(*operation, Duration::ZERO);
    }
    let again = allocations(|| {
        for i in 0..100 {
            let outcome = if i % 3 == 0 { CallOutcome::Error } else { CallOutcome::Ok };
            metrics.record_call(&server, &tool, Duration::from_micros(i), outcome);
            metrics.set_upstream_up(&server, i % 2 == 0);
            metrics.upstream_restarted(&server);
            let operation = operations[i as usize % 3];
            metrics.server_operation(operation, Duration::from_micros(i));
            metrics.client_operation(operation, Duration::from_micros(i));
            metrics.server_operation(prompt, Duration::from_micros(i));
        }
    });
    assert_eq!(again, 0, "recording into existing series allocated");
    drop(guard);
    assert_eq!(metrics.calls.get(["fs", "read_file"]), 101);
}
