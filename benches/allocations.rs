//! Heap allocations per governed action, in process, against the raw calls
//! a client of the same no-op runtime makes (the `overhead` benchmark's
//! first part, counted instead of timed: counting every allocation costs
//! time, so the timing runs without it).
//!
//! `cargo bench --bench allocations`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod in_process;

use std::sync::Arc;

use adk_computer_use::chain::ChainOutcome;
use adk_computer_use::runtime::ObservationScope;
use in_process::{NoopRuntime, bench_action, raw_in_process, session};

/// Every heap allocation of this benchmark, counted (no `unsafe` here: the
/// crate's instrumented system allocator).
#[global_allocator]
static ALLOCATOR: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

/// Heap allocations and bytes per call of `f`, over `n` calls.
fn per_call(n: usize, mut f: impl FnMut()) -> (f64, f64) {
    let region = stats_alloc::Region::new(ALLOCATOR);
    for _ in 0..n {
        f();
    }
    let change = region.change();
    (
        change.allocations as f64 / n as f64,
        change.bytes_allocated as f64 / n as f64,
    )
}

fn main() {
    const N: usize = 2_000;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let action = bench_action();
    let runtime = Arc::new(NoopRuntime::new(&action));
    let session = rt.block_on(async { session(Arc::clone(&runtime), "agent") });
    let scope = ObservationScope::default();
    // Warm both sides (the session's first action sets up what it keeps).
    let governed = || {
        rt.block_on(async {
            match session.run(action.clone()).await.unwrap() {
                ChainOutcome::Completed(done) => assert!(done.performed()),
                _ => unreachable!(),
            }
        })
    };
    let raw = || rt.block_on(raw_in_process(&runtime, &action, &scope));
    per_call(10, governed);
    per_call(10, raw);
    let (governed_allocs, governed_bytes) = per_call(N, governed);
    let (raw_allocs, raw_bytes) = per_call(N, raw);
    println!("adk-computer-use allocations (in process, per action, {N} actions each)");
    println!(
        "allocations | governed chain {governed_allocs:>6.1} ({governed_bytes:>7.0} bytes) | raw calls {raw_allocs:>6.1} ({raw_bytes:>7.0} bytes) | governance adds {:.1}",
        governed_allocs - raw_allocs
    );
}
