//! The simulator can outlive the processes that use it: served over TCP
//! (`computer-use-sim --listen`), an action suspended by one client is
//! approved and completed by another that connects later.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use adk_computer_use::contracts::{ApprovalScope, DataLabel, ExecutionMode};
use adk_computer_use::protocol::{Approval, ChainOutcome, FileCheckpointStore, SealingKey};
use adk_computer_use::sim::CLIPBOARD_APP;
use adk_computer_use::{
    ComputerUseMcpRuntime, McpRuntimeConfig, ProposedAction, ScopeAuthorizer, Session,
    VerifiedIdentity,
};
use serde_json::json;
use tokio::io::AsyncBufReadExt;

fn session(runtime: &Arc<ComputerUseMcpRuntime>) -> Session<ComputerUseMcpRuntime> {
    let identity = VerifiedIdentity::new("alice", "t").unwrap();
    let authorizer =
        ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"]).unwrap();
    Session::builder(Arc::clone(runtime), authorizer)
        .agent_id("agent")
        .target(CLIPBOARD_APP, None)
        .build()
        .unwrap()
}

async fn connect(address: &str, config: McpRuntimeConfig) -> Arc<ComputerUseMcpRuntime> {
    let stream = tokio::net::TcpStream::connect(address).await.unwrap();
    Arc::new(
        ComputerUseMcpRuntime::connect(stream, config)
            .await
            .unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_suspended_by_one_client_is_completed_by_another() {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_computer-use-sim"))
        .args([
            "--principal",
            "alice",
            "--stats",
            "--confirm-tool",
            "write_clipboard",
            "--listen",
            "127.0.0.1:0",
        ])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next_line().await.unwrap().unwrap();
    let address = first.strip_prefix("listening on ").unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let key = || SealingKey::new(vec![9u8; 32]).unwrap();

    // The first client suspends the action, then goes away.
    let first = connect(&address, McpRuntimeConfig::new("alice")).await;
    let started = first
        .start_session(Some("suspend"), Some("team"))
        .await
        .unwrap();
    let id = {
        let session = session(&first);
        let action = ProposedAction::new(
            "write_clipboard",
            json!({ "text": "later" }),
            ExecutionMode::Background,
        )
        .with_action_id("outlives-1")
        .with_data_labels([DataLabel::Public]);
        let pending = match session.run(action).await.unwrap() {
            ChainOutcome::NeedsApproval(pending) => pending,
            _ => panic!("approval required"),
        };
        let id = pending
            .suspend(&FileCheckpointStore::new(dir.path(), key()).unwrap())
            .unwrap();
        let _ = session.shutdown().await;
        id
    };
    first.shutdown().await.unwrap();
    drop(first);

    // Another client, later, in the same runtime session: approves and runs it.
    let second = connect(
        &address,
        McpRuntimeConfig::new("alice").session_in_group(&started.session_id, "team"),
    )
    .await;
    let grant = second
        .approver()
        .approve_action("outlives-1", ApprovalScope::ExactAction, None)
        .await
        .unwrap();
    let session = session(&second);
    let store = FileCheckpointStore::new(dir.path(), key()).unwrap();
    let done = session
        .resume(&store, &id, Approval::from_grant("outlives-1", &grant))
        .unwrap()
        .complete()
        .await
        .unwrap();
    assert!(done.performed());
    let (stats, _) = second.call("sim_stats", Default::default()).await.unwrap();
    assert_eq!(stats["clipboard"], "later");
    assert_eq!(stats["totalEffects"], 1);
    let _ = session.shutdown().await;
    child.kill().await.unwrap();
}
