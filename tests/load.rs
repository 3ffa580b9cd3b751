//! Load: one thousand chains across 32 concurrent agents against one
//! simulator process. Checked against the simulator's own counters and
//! events, not only ours: no duplicate mutation, no lost receipt, no leaked
//! reservation or lease.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::Arc;

use adk_computer_use::eval::{ComputerUseEvaluator, ViolationClass};
use adk_computer_use_testkit::child::*;

const AGENTS: usize = 32;
const CHAINS: usize = 1000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_chains_across_32_agents() {
    let runtime = spawn_sim(&[]).await;
    let mut tasks = Vec::new();
    for agent in 0..AGENTS {
        let runtime = Arc::clone(&runtime);
        tasks.push(tokio::spawn(async move {
            let session = session(&runtime, &format!("agent-{agent}"));
            let mut receipts = Vec::new();
            let mut retries = 0;
            for n in (agent..CHAINS).step_by(AGENTS) {
                let (done, tries) = run_until_done(&session, &format!("load-{n}"), n as u64).await;
                assert!(done.outcome().is_verified(), "load-{n}: {}", done.outcome());
                receipts.push(done.receipt_id().to_owned());
                retries += tries;
            }
            let stats = session.shutdown().await;
            (receipts, retries, stats)
        }));
    }
    let mut receipts = BTreeSet::new();
    let mut retries = 0;
    for task in tasks {
        let (theirs, tries, stats) = task.await.unwrap();
        assert_eq!(stats.leaked(), 0);
        receipts.extend(theirs);
        retries += tries;
    }
    assert_eq!(
        receipts.len(),
        CHAINS,
        "lost or duplicated receipts on our side"
    );

    let sim = stats(&runtime).await;
    assert_eq!(
        sim["totalEffects"], CHAINS as u64,
        "the simulator's effect count"
    );
    assert_eq!(sim["maxEffectsPerAction"], 1, "a mutation ran twice");
    assert_eq!(
        sim["receipts"], CHAINS as u64,
        "the simulator lost receipts"
    );
    assert_eq!(sim["activeReservations"], 0, "leaked reservations");
    assert_eq!(sim["activeLeases"], 0, "leaked leases");

    let events = runtime.all_session_events().await.unwrap();
    let report = ComputerUseEvaluator::new().evaluate(&events);
    assert!(
        report.violations.is_empty(),
        "{:?}",
        &report.violations[..report.violations.len().min(5)]
    );
    assert_eq!(report.of_class(ViolationClass::DuplicateMutation).len(), 0);
    // The server records its shadow observations as actions too; the
    // mutations are the actions it started outside shadow mode.
    let mutations: std::collections::BTreeSet<_> = events
        .iter()
        .filter(|e| e.event_type == "action.started")
        .filter(|e| e.payload.as_ref().is_some_and(|p| p["mode"] != "shadow"))
        .filter_map(|e| e.action_id.clone())
        .collect();
    let committed = events
        .iter()
        .filter(|e| e.event_type == "action.committed")
        .filter(|e| {
            e.action_id
                .as_ref()
                .is_some_and(|id| mutations.contains(id))
        })
        .count();
    assert_eq!(committed, CHAINS);
    eprintln!("{CHAINS} chains, {AGENTS} agents, {retries} conflict retries");
    runtime.shutdown().await.unwrap();
}
