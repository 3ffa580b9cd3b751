//! The person at the machine, on a real X11 display: while an agent types
//! into a terminal through `computer-use-server --desktop x11 --listen`, an
//! outside client (`xdotool`) moves the pointer. The server pauses the
//! session (`user_takeover`) and revokes its lease; the agent's next action
//! is refused and nothing is typed (the file `cat` writes says so); the
//! agent's own credential cannot resume the session nor start another;
//! the person's command
//! (`computer-use-approvals resume`, the approver's credential) can, and
//! typing works again.
//!
//! Built with the `x11` feature (the server's X11 desktop), as `.ci/run`
//! builds it; without it there is nothing to test here.
#![cfg(feature = "x11")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::*;

use std::sync::Arc;
use std::time::Duration;

use adk_computer_use::chain::{Approval, ChainOutcome, Session};
use adk_computer_use::contracts::{ApprovalScope, DataLabel, ExecutionMode, WindowId};
use adk_computer_use::mcp::{GrantRequest, McpApprover};
use adk_computer_use::{
    ComputerUseError, ComputerUseMcpRuntime, McpRuntimeConfig, ProposedAction, ScopeAuthorizer,
};
use adk_computer_use_testkit::needs;

/// Runs `text` typed into the session's target to its end, a grant from
/// the approver's connection when the policy asks for one.
async fn typed(
    session: &Session<ComputerUseMcpRuntime>,
    approver: &McpApprover,
    text: &str,
) -> Result<(), ComputerUseError> {
    let action = ProposedAction::new(
        "type",
        serde_json::json!({ "text": text }),
        ExecutionMode::Foreground,
    )
    .with_data_labels([DataLabel::Public]);
    let approved = match session.run(action).await? {
        ChainOutcome::Completed(done) => {
            assert!(done.performed());
            return Ok(());
        }
        ChainOutcome::NeedsApproval(pending) => {
            let grant = approver
                .approve_action(
                    &GrantRequest::for_pending(&pending),
                    ApprovalScope::ExactAction,
                    None,
                )
                .await?;
            let approval = Approval::from_grant(pending.action_id(), &grant);
            pending.approve(approval)?
        }
        ChainOutcome::Blocked(blocked) => panic!("blocked: {}", blocked.blocker()),
    };
    assert!(approved.complete().await?.performed());
    Ok(())
}

/// The file's content once it is `expected` (up to 3 s), or as it is then.
async fn settled(file: &std::path::Path, expected: &str) -> String {
    let mut content = String::new();
    for _ in 0..30 {
        content = std::fs::read_to_string(file).unwrap();
        if content == expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    content
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn input_the_server_did_not_send_pauses_the_session_until_the_person_resumes_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("typed.txt");
    std::fs::write(&file, "").unwrap();
    let title = format!("takeover {}", std::process::id());
    let _terminal = spawn(
        "xterm",
        &[
            "-T",
            &title,
            "-geometry",
            "60x8+200+120",
            "-e",
            "sh",
            "-c",
            &format!("cat > '{}'", file.display()),
        ],
        &[],
    );
    let window = window_named(&title).await;
    tokio::time::sleep(Duration::from_millis(800)).await;

    let sim = served_with(true, &[]).await;
    let runtime = Arc::new(
        ComputerUseMcpRuntime::connect(
            tokio::net::TcpStream::connect(&sim.address).await.unwrap(),
            McpRuntimeConfig::new("alice").with_credential(&sim.agent),
        )
        .await
        .unwrap(),
    );
    let started = runtime
        .start_session(Some("the person takes over"), None)
        .await
        .unwrap();
    let session_id = started.session_id.clone();
    let approver = McpApprover::connect(
        tokio::net::TcpStream::connect(&sim.address).await.unwrap(),
        McpRuntimeConfig::new("alice")
            .with_credential(&sim.approver)
            .session(&session_id),
    )
    .await
    .unwrap();
    let authorizer = ScopeAuthorizer::new(
        adk_computer_use::VerifiedIdentity::new("alice", "tenant-takeover").unwrap(),
        ["computer:plan", "computer:execute:foreground"],
    )
    .unwrap();
    let session = Session::builder(Arc::clone(&runtime), authorizer)
        .agent_id("typist")
        .target("XTerm", Some(WindowId::Number(window)))
        .build()
        .unwrap();

    typed(&session, &approver, "before\n").await.unwrap();
    assert_eq!(settled(&file, "before\n").await, "before\n");

    // The person moves the mouse and clicks on the desktop (an outside
    // client stands in for them: its click is XTEST input, as a device's
    // would be; a bare `xdotool mousemove` warps the pointer, which is no
    // device input).
    // XTEST input within the grace after the server's own (750 ms) is
    // taken as the server's: the person comes in a moment later.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let moved = tokio::process::Command::new("xdotool")
        .args(["mousemove", "--sync", "17", "23", "click", "2"])
        .status()
        .await
        .unwrap();
    assert!(moved.success());
    tokio::time::sleep(Duration::from_millis(1_500)).await;

    let err = typed(&session, &approver, "after\n").await.err();
    assert!(err.is_some(), "an action after the person's input ran");
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "before\n",
        "nothing was typed after the person took over"
    );
    let paused = runtime.get_session().await.unwrap();
    assert_eq!(paused.state, "paused_by_user");
    assert_eq!(paused.waiting_reason.as_deref(), Some("user_takeover"));

    // The agent cannot hand itself the machine back.
    let own = runtime.resume_session(None).await.err().unwrap();
    assert_eq!(
        own.refusal_code(),
        Some("approver_credential_required"),
        "{own}"
    );

    // Nor start afresh on the machine the person has.
    let another = ComputerUseMcpRuntime::connect(
        tokio::net::TcpStream::connect(&sim.address).await.unwrap(),
        McpRuntimeConfig::new("alice").with_credential(&sim.agent),
    )
    .await
    .unwrap();
    let fresh = another
        .start_session(Some("around the person"), None)
        .await
        .expect_err("a new session while the person has the machine");
    assert_eq!(fresh.refusal_code(), Some("interrupted"), "{fresh}");

    // The person can, with the approver's credential.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_computer-use-approvals"))
        .args([
            "resume",
            &session_id,
            "--principal",
            "alice",
            "--server",
            &sim.address,
        ])
        .env("ADK_APPROVER_CREDENTIAL", &sim.approver)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(runtime.get_session().await.unwrap().state, "running");
    typed(&session, &approver, "after\n").await.unwrap();
    assert_eq!(settled(&file, "before\nafter\n").await, "before\nafter\n");
    let _ = session.shutdown().await;
}
