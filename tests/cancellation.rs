//! Dropping a chain's future at every await point, and under timeouts of
//! increasing length: after `Session::shutdown` no reservation is leaked, and
//! the only mutation that can survive a dropped chain is one the runtime
//! committed, which a retry with the same action id finds as a replay.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use adk_computer_use::chain::ChainOutcome;
use common::*;

const AWAIT_POINTS: [Call; 7] = [
    Call::Observe,
    Call::Preview,
    Call::Reserve,
    Call::Lease,
    Call::Execute,
    Call::Verify,
    Call::Release,
];

/// The chain's action: with a postcondition, so gathering its evidence is
/// an await point too.
fn proposed() -> adk_computer_use::runtime::ProposedAction {
    action("c-1").with_postcondition(
        adk_computer_use::contracts::ActionPostcondition::try_from(
            adk_computer_use::contracts::PostconditionFields::Window {
                window_id: WINDOW,
                exists: true,
            },
        )
        .unwrap(),
    )
}

async fn retry_completes(
    rig_runtime: &Arc<FakeRuntime>,
    session: &adk_computer_use::Session<FakeRuntime>,
) {
    match session.run(proposed()).await.unwrap() {
        ChainOutcome::Completed(done) => assert!(done.performed()),
        _ => panic!("the retry did not complete"),
    }
    assert_eq!(
        rig_runtime.mutations(),
        1,
        "the retry duplicated or lost the mutation"
    );
}

#[tokio::test]
async fn dropping_the_chain_at_every_await_point_leaks_nothing() {
    for point in AWAIT_POINTS {
        let Rig {
            runtime, session, ..
        } = rig();
        runtime.script().hold.insert(point);
        let session = Arc::new(session);
        let chain = {
            let session = Arc::clone(&session);
            tokio::spawn(async move { session.run(proposed()).await.map(|_| ()) })
        };
        runtime.held.notified().await;
        // Later calls (the retry, the reaper) must not be held.
        runtime.script().hold.clear();
        chain.abort();
        assert!(chain.await.unwrap_err().is_cancelled());

        let after_effect = matches!(point, Call::Verify | Call::Release);
        assert_eq!(
            runtime.mutations(),
            u32::from(after_effect),
            "{point:?}: mutation count"
        );
        let session = Arc::try_unwrap(session).unwrap();
        retry_completes(&runtime, &session).await;
        let stats = session.shutdown().await;
        assert_eq!(stats.leaked(), 0, "{point:?}: {stats:?}");
        assert_eq!(
            runtime.active_reservations(),
            0,
            "{point:?}: a reservation is still active"
        );
        assert!(runtime.truth().executes_with_valid_lease.iter().all(|v| *v));
    }
}

#[tokio::test]
async fn a_mutation_committed_before_the_drop_is_found_as_a_replay() {
    let Rig {
        runtime, session, ..
    } = rig();
    runtime.script().hold_after_effect = true;
    let session = Arc::new(session);
    let chain = {
        let session = Arc::clone(&session);
        tokio::spawn(async move { session.run(proposed()).await.map(|_| ()) })
    };
    runtime.held.notified().await;
    runtime.script().hold_after_effect = false;
    chain.abort();
    let _ = chain.await;
    assert_eq!(
        runtime.mutations(),
        1,
        "the runtime committed before the drop"
    );
    let session = Arc::try_unwrap(session).unwrap();
    retry_completes(&runtime, &session).await;
    assert_eq!(session.shutdown().await.leaked(), 0);
    assert_eq!(runtime.active_reservations(), 0);
}

#[tokio::test(start_paused = true)]
async fn timeouts_of_increasing_length_leak_nothing() {
    let mut outcomes = std::collections::BTreeMap::new();
    for tenths in 0..=120u64 {
        let Rig {
            runtime, session, ..
        } = rig();
        runtime.script().delay = Some(std::time::Duration::from_millis(1));
        let limit = std::time::Duration::from_micros(tenths * 100);
        let finished = tokio::time::timeout(limit, session.run(proposed()))
            .await
            .is_ok();
        let committed = runtime.mutations();
        assert!(committed <= 1, "{limit:?}: {committed} mutations");
        if !finished && committed == 1 {
            retry_completes(&runtime, &session).await;
        }
        let stats = session.shutdown().await;
        assert_eq!(stats.leaked(), 0, "{limit:?}: {stats:?}");
        assert_eq!(runtime.active_reservations(), 0, "{limit:?}");
        *outcomes.entry((finished, committed)).or_insert(0) += 1;
    }
    // The sweep really covered dropped chains before, and after, the mutation, and whole chains.
    assert!(outcomes.contains_key(&(false, 0)), "{outcomes:?}");
    assert!(outcomes.contains_key(&(false, 1)), "{outcomes:?}");
    assert!(outcomes.contains_key(&(true, 1)), "{outcomes:?}");
}
