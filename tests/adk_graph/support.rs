//! What the graph's tests share: the input, the graph over a scripted
//! runtime, interrupting and resuming.

use std::sync::Arc;

use adk_computer_use::graph::reference_graph_over;
use adk_graph::{CompiledGraph, ExecutionConfig, GraphError, MemoryCheckpointer, State};
use serde_json::{Value, json};

use crate::common::*;

pub fn input() -> State {
    let mut state = State::new();
    // Upstream's input is `{ "tool": "write_clipboard" }`: its fake takes
    // any arguments. This chain checks the tool's required ones first.
    state.insert(
        "proposed_action".into(),
        json!({ "tool": "write_clipboard", "arguments": { "text": "hello" } }),
    );
    state
}

/// The graph over a rig's session (its store of record a memory one),
/// with adk-graph's memory checkpointer; and the runtime behind it.
pub fn graph(
    route: PreviewRoute,
) -> (
    CompiledGraph,
    Arc<FakeRuntime>,
    Arc<adk_computer_use::Session<FakeRuntime>>,
) {
    // Aimed at APP's window WINDOW, which the semantic frame shows: the
    // action is previewed with target evidence and its target reserved,
    // as upstream's fake always reserves.
    let Rig {
        runtime, session, ..
    } = rig_targeted();
    runtime.script().route = Some(route);
    runtime.script().semantic =
        Some(json!({ "windows": [{ "bundleId": APP, "windowId": WINDOW }] }));
    let session = Arc::new(session);
    let graph = reference_graph_over(
        Arc::clone(&session),
        Some(Arc::new(MemoryCheckpointer::new())),
    )
    .unwrap();
    (graph, runtime, session)
}

pub async fn interrupted(graph: &CompiledGraph, thread: &str) -> (String, Value) {
    match graph
        .invoke(input(), ExecutionConfig::new(thread))
        .await
        .unwrap_err()
    {
        GraphError::Interrupted(value) => {
            let preview = match &value.interrupt {
                adk_graph::Interrupt::Dynamic { data, .. } => data.clone().unwrap_or_default(),
                other => panic!("expected the node's own interrupt, got {other:?}"),
            };
            (value.checkpoint_id, preview)
        }
        other => panic!("expected interrupt, got {other:?}"),
    }
}

pub async fn resume(
    graph: &CompiledGraph,
    thread: &str,
    checkpoint: &str,
    state: State,
) -> Result<State, GraphError> {
    graph
        .invoke(
            state,
            ExecutionConfig::new(thread).with_resume_from(checkpoint),
        )
        .await
}

pub fn approval(value: Value) -> State {
    let mut state = State::new();
    state.insert("approval".into(), value);
    state
}

pub fn digests(preview: &Value) -> (String, String) {
    (
        preview["envelope"]["argsDigest"]
            .as_str()
            .unwrap()
            .to_owned(),
        preview["policy"]["policyDigest"]
            .as_str()
            .unwrap()
            .to_owned(),
    )
}
