//! The graph streams each node's update, and the journal records the same
//! trajectory for an action run through the graph as through `Session`.

use std::sync::Arc;

use adk_computer_use::Session;
use adk_computer_use::clock::ManualClock;
use adk_computer_use::contracts::WindowId;
use adk_computer_use::graph::reference_graph_over;
use adk_computer_use::journal::{Journal, MemoryJournal};
use adk_graph::{ExecutionConfig, State, StreamEvent, StreamMode};
use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::common::*;

/// A session over a fresh scripted runtime aimed at APP's window, writing
/// its journal to memory.
fn journaled() -> (Session<FakeRuntime>, Arc<MemoryJournal>) {
    let clock = ManualClock::new(start());
    let runtime = FakeRuntime::new(clock.clone());
    runtime.script().semantic =
        Some(json!({ "windows": [{ "bundleId": APP, "windowId": WINDOW }] }));
    let memory = Arc::new(MemoryJournal::new());
    let session = Session::builder(runtime, full_authorizer())
        .clock(Arc::new(clock))
        .agent_id("executor")
        .journal(Arc::new(Journal::new(memory.clone())))
        .target(APP, Some(WindowId::Number(WINDOW)))
        .build()
        .unwrap();
    (session, memory)
}

/// Each entry's type and action, and the keys of its payload.
fn trajectory(memory: &MemoryJournal) -> Vec<(String, Option<String>, Vec<String>)> {
    memory
        .entries()
        .into_iter()
        .map(|e| {
            let keys = match e.event.payload {
                Some(Value::Object(map)) => map.keys().cloned().collect(),
                _ => Vec::new(),
            };
            (e.event.event_type, e.event.action_id, keys)
        })
        .collect()
}

#[tokio::test]
async fn the_stream_yields_every_nodes_update_and_the_journal_the_same_trajectory_as_a_session() {
    let (direct, direct_journal) = journaled();
    let action = adk_computer_use::ProposedAction::new(
        "write_clipboard",
        json!({ "text": "hello" }),
        adk_computer_use::ExecutionMode::Background,
    )
    .with_action_id("t-1");
    assert!(matches!(
        direct.run(action).await.unwrap(),
        adk_computer_use::ChainOutcome::Completed(_)
    ));

    let (session, graph_journal) = journaled();
    let graph = reference_graph_over(Arc::new(session), None).unwrap();
    let mut input = State::new();
    input.insert(
        "proposed_action".into(),
        json!({ "tool": "write_clipboard", "arguments": { "text": "hello" }, "action_id": "t-1" }),
    );
    let stream = graph.stream(input, ExecutionConfig::new("streamed"), StreamMode::Updates);
    futures_util::pin_mut!(stream);
    let mut events: Vec<StreamEvent> = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event.unwrap());
    }
    // adk-graph's `Updates` mode reports each super-step's nodes, then the
    // final state.
    let updated: Vec<String> = events
        .iter()
        .flat_map(|e| match e {
            StreamEvent::StepComplete { nodes_executed, .. } => nodes_executed.clone(),
            _ => Vec::new(),
        })
        .collect();
    for node in [
        "discover",
        "observe_visual",
        "observe_semantic",
        "join_observations",
        "plan",
        "preview",
        "reserve_target",
        "acquire_lease",
        "execute",
        "verify",
    ] {
        assert!(
            updated.iter().any(|n| n == node),
            "{node} not streamed: {updated:?}"
        );
    }
    let done = events.iter().find_map(|e| match e {
        StreamEvent::Done { state, .. } => Some(state.clone()),
        _ => None,
    });
    assert_eq!(
        done.and_then(|s| s.get("committed").cloned()),
        Some(json!(true))
    );
    let through_graph = trajectory(&graph_journal);
    assert!(!through_graph.is_empty());
    assert_eq!(through_graph, trajectory(&direct_journal));
}
