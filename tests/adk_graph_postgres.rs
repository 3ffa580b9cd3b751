//! The graph face on PostgreSQL: adk-graph's checkpoints in
//! `PostgresGraphCheckpointer`, the sealed approval in
//! `PostgresCheckpointStore`; an interrupt resumed by another graph (as in
//! another process) runs once, two racing resumes run once, and a denial
//! recorded first wins.
//!
//! Needs `ADK_POSTGRES_URL` (see `tests/postgres.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod pg_support;

use std::sync::Arc;

use adk_computer_use::chain::{Decision, Session, decide};
use adk_computer_use::contracts::WindowId;
use adk_computer_use::graph::reference_graph_over;
use adk_computer_use::pg::{PostgresCheckpointStore, PostgresGraphCheckpointer};
use adk_computer_use_testkit::needs;
use adk_graph::{CompiledGraph, ExecutionConfig, GraphError, State};
use common::*;
use pg_support::*;
use serde_json::{Value, json};

/// Everything one process of an agent builds: its session over the shared
/// runtime and stores, and its graph.
fn process(
    runtime: &Arc<FakeRuntime>,
    store: &Arc<PostgresCheckpointStore>,
    url: &str,
) -> CompiledGraph {
    let session = Session::builder(Arc::clone(runtime), full_authorizer())
        .clock(Arc::new(runtime.clock.clone()))
        .agent_id("executor")
        .checkpoints(store.clone())
        .target(APP, Some(WindowId::Number(WINDOW)))
        .build()
        .unwrap();
    let checkpointer = PostgresGraphCheckpointer::connect(url).unwrap();
    reference_graph_over(Arc::new(session), Some(Arc::new(checkpointer))).unwrap()
}

fn input() -> State {
    let mut state = State::new();
    state.insert(
        "proposed_action".into(),
        json!({ "tool": "write_clipboard", "arguments": { "text": "hello" } }),
    );
    state
}

/// A runtime acting in a session of its own, that asks for approval, and
/// the first process's interrupt: its checkpoint id and preview.
async fn interrupted(
    url: &str,
    name: &str,
) -> (
    Arc<FakeRuntime>,
    Arc<PostgresCheckpointStore>,
    String,
    String,
    Value,
) {
    let runtime = FakeRuntime::new(rig().clock);
    runtime.act_in(&unique(name), None);
    runtime.script().route = Some(PreviewRoute::NeedsApproval);
    runtime.script().semantic =
        Some(json!({ "windows": [{ "bundleId": APP, "windowId": WINDOW }] }));
    let store = Arc::new(PostgresCheckpointStore::connect(url, pg_key()).unwrap());
    let thread = unique(name);
    let first = process(&runtime, &store, url);
    let interrupted = first
        .invoke(input(), ExecutionConfig::new(&thread))
        .await
        .unwrap_err();
    let GraphError::Interrupted(interrupted) = interrupted else {
        panic!("expected the approval's interrupt, got {interrupted:?}");
    };
    let adk_graph::Interrupt::Dynamic {
        data: Some(preview),
        ..
    } = interrupted.interrupt
    else {
        panic!("expected the preview as the interrupt's data");
    };
    (runtime, store, thread, interrupted.checkpoint_id, preview)
}

fn answer(runtime: &FakeRuntime, preview: &Value) -> State {
    let digest = preview["envelope"]["argsDigest"].as_str().unwrap();
    let mut state = State::new();
    state.insert(
        "approval".into(),
        json!({
            "actionDigest": digest,
            "policyDigest": preview["policy"]["policyDigest"],
            "grantId": runtime.grant(digest),
        }),
    );
    state
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[needs(postgres)]
async fn an_interrupt_resumed_by_another_process_runs_once() {
    let Some(url) = url() else { return };
    let (runtime, store, thread, checkpoint, preview) = interrupted(&url, "graph-restart").await;
    // The first process is gone; a second one, knowing only the thread and
    // the checkpoint id, resumes from PostgreSQL.
    let second = process(&runtime, &store, &url);
    let output = second
        .invoke(
            answer(&runtime, &preview),
            ExecutionConfig::new(&thread).with_resume_from(&checkpoint),
        )
        .await
        .unwrap();
    assert_eq!(output["committed"], json!(true));
    assert_eq!(runtime.mutations(), 1);
    let third = process(&runtime, &store, &url);
    let again = third
        .invoke(
            answer(&runtime, &preview),
            ExecutionConfig::new(&thread).with_resume_from(&checkpoint),
        )
        .await;
    assert!(again.is_err(), "{again:?}");
    assert_eq!(runtime.mutations(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[needs(postgres)]
async fn two_processes_resuming_one_interrupt_at_once_run_the_action_once() {
    let Some(url) = url() else { return };
    let (runtime, store, thread, checkpoint, preview) = interrupted(&url, "graph-race").await;
    let racers: Vec<_> = (0..2)
        .map(|_| {
            let graph = process(&runtime, &store, &url);
            let (state, thread, checkpoint) = (
                answer(&runtime, &preview),
                thread.clone(),
                checkpoint.clone(),
            );
            tokio::spawn(async move {
                graph
                    .invoke(
                        state,
                        ExecutionConfig::new(&thread).with_resume_from(&checkpoint),
                    )
                    .await
                    .is_ok()
            })
        })
        .collect();
    let mut won = 0;
    for racer in racers {
        won += usize::from(racer.await.unwrap());
    }
    assert_eq!(won, 1);
    assert_eq!(runtime.mutations(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[needs(postgres)]
async fn a_denial_recorded_first_wins_over_a_resume() {
    let Some(url) = url() else { return };
    let (runtime, store, thread, checkpoint, preview) = interrupted(&url, "graph-deny").await;
    // The person finds what waits in the store of record, by its session.
    let session = preview["envelope"]["sessionId"].as_str().unwrap();
    let id = adk_computer_use::chain::pending(&*store)
        .unwrap()
        .into_iter()
        .find_map(|(id, view)| view.ok().filter(|v| v.session_id == session).map(|_| id))
        .unwrap();
    let no = Decision::Deny {
        reason: "no".into(),
    };
    decide(&*store, &id, &no, &approver()).unwrap();
    let resumed = process(&runtime, &store, &url)
        .invoke(
            answer(&runtime, &preview),
            ExecutionConfig::new(&thread).with_resume_from(&checkpoint),
        )
        .await;
    assert!(resumed.is_err(), "{resumed:?}");
    assert_eq!(runtime.mutations(), 0);
    assert_eq!(runtime.count(Call::Reserve), 0);
}
