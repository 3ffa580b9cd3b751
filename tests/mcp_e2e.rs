//! The governed chain over MCP against the real `computer-use-server` child
//! process: no in-process shortcut.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

mod common;
use common::run_err;

use adk_computer_use::chain::Session;
use adk_computer_use::chain::{
    Approval, ChainOutcome, Leased, PendingApproval, Reserved, Verified,
};
use adk_computer_use::contracts::{ApprovalGrant, ApprovalScope, WindowId};
use adk_computer_use::mcp::{ComputerUseMcpRuntime, GrantRequest};
use adk_computer_use::runtime::{
    AgentInterrupter, CancellationBridge, ComputerUseRuntime, ProposedAction, StopKind,
};
use adk_computer_use::{ComputerUseError, VerificationOutcome};
use adk_computer_use_testkit::child::*;
use computer_use_server::{CLIPBOARD_APP, CLIPBOARD_WINDOW};
use serde_json::{Value, json};

fn completed<R: ComputerUseRuntime>(outcome: ChainOutcome<R>) -> Verified {
    match outcome {
        ChainOutcome::Completed(verified) => verified,
        ChainOutcome::NeedsApproval(_) => panic!("unexpected approval"),
        ChainOutcome::Blocked(b) => panic!("unexpected block: {} {:?}", b.blocker(), b.reasons()),
    }
}

#[tokio::test]
async fn a_digest_postcondition_reaches_verified() {
    let (runtime, session) = sim_and_session(&[]).await;
    let verified = run_verified(&session, write_clipboard("a-1", "exact public text", true)).await;
    assert_eq!(verified.outcome(), &VerificationOutcome::Verified);
    let stats = stats(&runtime).await;
    assert_eq!(stats["clipboard"], "exact public text");
    // A clipboard read is secret access: unapproved, even in shadow mode,
    // the server refuses it.
    let err = runtime
        .observe_shadow("read_clipboard", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.refusal_code(), Some("approval_required"), "{err}");
    assert_eq!(
        (
            stats["totalEffects"].as_u64(),
            stats["activeReservations"].as_u64()
        ),
        (Some(1), Some(0))
    );
    assert_eq!(session.shutdown().await.leaked(), 0);
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
async fn no_postcondition_is_derived_from_the_text_and_checked_by_the_server() {
    let (runtime, session) = sim_and_session(&[]).await;
    let verified = run_verified(&session, write_clipboard("a-2", "text", false)).await;
    assert_eq!(verified.outcome(), &VerificationOutcome::Verified);
    // The server checked the clipboard itself, for the digest of this text.
    let events = runtime.all_session_events().await.unwrap();
    let check = events
        .iter()
        .find(|e| e.event_type == "action.verified" && e.action_id.as_deref() == Some("a-2"))
        .and_then(|e| e.payload.clone())
        .expect("the server reported its check");
    assert_eq!(check["method"], "simulated_clipboard_readback");
    assert_eq!(check["verified"], true);
    assert_eq!(
        check["postconditionExpectedDigest"],
        adk_computer_use::digest::sha256_prefixed("text")
    );
    assert_eq!(stats(&runtime).await["clipboard"], "text");
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_clipboard_write_aimed_at_another_window_is_checked_on_the_clipboard_itself() {
    let runtime = spawn_sim(&[]).await;
    let session = session_on(
        &runtime,
        "agent-a",
        "com.example.Notes",
        Some(WindowId::Number(7)),
    );
    let action = public_write("a-2b", "from notes");
    let verified = run_verified(&session, action).await;
    assert_eq!(verified.outcome(), &VerificationOutcome::Verified);
    assert_eq!(stats(&runtime).await["clipboard"], "from notes");
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_approval_path_uses_an_approve_action_grant() {
    let (runtime, session) = sim_and_session(&["--confirm-tool", "write_clipboard"]).await;
    let pending = run_to_approval(&session, write_clipboard("a-3", "approved", true)).await;
    assert_eq!(stats(&runtime).await["totalEffects"], 0);
    let grant = host_grant(&runtime, &GrantRequest::for_pending(&pending))
        .await
        .unwrap();
    assert_eq!(grant.fields().action_digest, pending.action_digest());
    let verified = pending
        .approve(Approval::from_grant("a-3", &grant))
        .unwrap()
        .complete()
        .await
        .unwrap();
    assert!(verified.outcome().is_verified());
    // Without a grant the server refuses: the approval really is checked there too.
    let pending = run_to_approval(&session, write_clipboard("a-4", "unapproved", false)).await;
    let approval = Approval::runtime_held(
        pending.action_id(),
        pending.action_digest(),
        pending.policy_digest(),
    );
    let err = pending
        .approve(approval)
        .unwrap()
        .complete()
        .await
        .err()
        .unwrap();
    assert_eq!(err.refusal_code(), Some("approval_required"), "{err}");
    assert_eq!(stats(&runtime).await["activeReservations"], 0);
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
async fn every_injected_fault_is_refused_with_the_field_named_and_the_reservation_released() {
    let cases = [
        ("lease.sessionId", "sessionId", false),
        ("lease.principalId", "principalId", false),
        ("lease.agentId", "agentId", false),
        ("lease.appIds", "boundaries.appIds", false),
        ("lease.windowIds", "boundaries.windowIds", false),
        ("lease.expiresAt", "expiresAt", false),
        ("reservation.sessionId", "sessionId", false),
        ("reservation.principalId", "principalId", false),
        ("reservation.agentId", "agentId", false),
        ("reservation.intentId", "intentId", false),
        ("reservation.appId", "scope.appId", false),
        ("reservation.windowId", "scope.windowId", false),
        ("receipt.actionDigest", "actionDigest", true),
        ("receipt.sessionId", "sessionId", true),
    ];
    for (fault, field, mutated) in cases {
        let runtime = spawn_sim(&["--fault", fault]).await;
        let session = session(&runtime, "agent-a");
        let err = session
            .run(write_clipboard("a-5", "text", false))
            .await
            .err()
            .unwrap_or_else(|| panic!("{fault} was accepted"));
        assert_eq!(err.field(), Some(field), "{fault}: {err}");
        assert!(
            !matches!(err, ComputerUseError::WithCleanup { .. }),
            "{fault}: the release failed: {err}"
        );
        let stats = stats(&runtime).await;
        assert_eq!(stats["activeReservations"], 0, "{fault} left a reservation");
        assert_eq!(stats["totalEffects"], u64::from(mutated), "{fault}");
        assert_eq!(session.shutdown().await.leaked(), 0);
        runtime.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn server_refusal_codes_arrive_typed() {
    let (runtime, session) = sim_and_session(&[]).await;
    runtime.pause_session(Some("test")).await.unwrap();
    let err = run_err(&session, write_clipboard("a-6", "text", false)).await;
    assert_eq!(err.refusal_code(), Some("session_not_running"), "{err}");
    let err = runtime
        .delete_session(&runtime.session_id().unwrap())
        .await
        .unwrap_err();
    assert_eq!(err.refusal_code(), Some("session_not_terminal"));
    // The raw call speaks read-only tools only: a state-changing tool is
    // refused before anything is sent.
    let before = stats(&runtime).await;
    for tool in [
        "reserve_target",
        "acquire_control_lease",
        "execute_action",
        "approve_action",
        "release_control_lease",
        "release_target_reservation",
    ] {
        let err = runtime
            .call(tool, serde_json::Map::new())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ComputerUseError::InvalidRequest { field, .. } if field == "tool"),
            "{tool}: {err}"
        );
    }
    assert_eq!(stats(&runtime).await, before);
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_failing_release_after_success_is_reported() {
    let (runtime, session) = sim_and_session(&["--fault", "release.fails"]).await;
    let err = run_err(&session, write_clipboard("a-7", "text", true)).await;
    match err {
        ComputerUseError::CleanupAfterSuccess {
            status, cleanup, ..
        } => {
            assert_eq!(status, "completed");
            assert_eq!(cleanup.refusal_code(), Some("release_failed"));
        }
        other => panic!("expected the release failure, got {other}"),
    }
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_release_answered_with_an_active_reservation_is_refused() {
    let (runtime, session) = sim_and_session(&["--fault", "release.state"]).await;
    let err = run_err(&session, write_clipboard("a-7b", "text", true)).await;
    match err {
        ComputerUseError::CleanupAfterSuccess { cleanup, .. } => {
            assert_eq!(cleanup.field(), Some("state"), "{cleanup}");
            assert!(cleanup.to_string().contains("active"), "{cleanup}");
        }
        other => panic!("expected the release to be refused, got {other}"),
    }
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
async fn killing_the_server_mid_chain_is_a_transport_error_and_the_failed_release_is_counted() {
    let runtime = spawn_sim(&[]).await;
    let pid = runtime.child_pid().unwrap();
    let session = session(&runtime, "agent-a");
    let reserved = reserve_allowed(&session, &write_clipboard("a-8", "text", false)).await;
    assert!(reserved.reservation().is_some());
    std::process::Command::new("kill")
        .arg("-9")
        .arg(pid.to_string())
        .status()
        .unwrap();
    let err = reserved.lease().await.err().unwrap();
    match &err {
        ComputerUseError::WithCleanup { primary, cleanup } => {
            assert!(
                matches!(**primary, ComputerUseError::Transport { .. }),
                "{err}"
            );
            assert!(
                matches!(**cleanup, ComputerUseError::Transport { .. }),
                "{err}"
            );
        }
        other => panic!("expected a transport failure and a failed release, got {other}"),
    }
    let stats = session.shutdown().await;
    assert_eq!(
        (
            stats.reservations.queued,
            stats.leaked(),
            stats.reservations.explicit_failed
        ),
        // The release failed with the server: not known to have happened, so
        // counted as leaked, once (the server's TTL is the ground truth).
        (0, 1, 1)
    );
    runtime.shutdown().await.unwrap();
    assert!(
        wait_gone(pid).await,
        "the killed server was left as a zombie"
    );
}

#[tokio::test]
async fn shutdown_leaves_no_orphan_or_zombie() {
    let runtime = spawn_sim(&[]).await;
    let pid = runtime.child_pid().unwrap();
    assert!(!process_gone(pid));
    runtime.shutdown().await.unwrap();
    assert!(wait_gone(pid).await);
}

#[tokio::test]
async fn session_calls_events_follow_ups_and_deletion() {
    let (runtime, session) = sim_and_session(&[]).await;
    let _verified = run_verified(&session, write_clipboard("a-10", "text", true)).await;
    let events = runtime.all_session_events().await.unwrap();
    let started = events
        .iter()
        .find(|e| e.event_type == "action.started")
        .unwrap();
    assert!(started.payload.as_ref().unwrap().get("leaseId").is_some());
    assert!(events.iter().any(|e| e.event_type == "action.committed"));
    assert!(events.iter().any(|e| e.event_type == "action.verified"));

    let follow_up = runtime.submit_follow_up("keep the original").await.unwrap();
    let page = runtime.get_follow_ups(None, None).await.unwrap();
    assert_eq!(page.follow_ups, vec![follow_up]);

    // Every execution has a receipt, the chain's shadow observations too.
    let executions = events
        .iter()
        .filter(|e| e.event_type == "action.started")
        .count() as u64;
    assert!(executions > 1);
    let id = runtime.session_id().unwrap();
    runtime.stop_session(Some("done")).await.unwrap();
    let deletion = runtime.delete_session(&id).await.unwrap();
    assert!(deletion.deleted && deletion.deleted_receipts == executions);
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
async fn answers_for_another_principal_are_rejected() {
    // The server authenticates its principal; an adapter configured for a
    // different verified principal refuses every answer bound to the server's.
    let command = server_command(&["--principal", "someone-else"]);
    let config = stats_config();
    let runtime = adk_computer_use::mcp::ComputerUseMcpRuntime::spawn(command, config)
        .await
        .unwrap();
    let err = runtime.start_session(None, None).await.unwrap_err();
    assert_eq!(err.field(), Some("principalId"));
    runtime.shutdown().await.unwrap();
}

struct Recorder {
    runtime: std::sync::Arc<adk_computer_use::mcp::ComputerUseMcpRuntime>,
    seen_state: std::sync::Mutex<Option<String>>,
}

impl AgentInterrupter for &Recorder {
    async fn interrupt(&self, _reason: &str) {
        let state = self
            .runtime
            .get_session()
            .await
            .map(|s| s.state)
            .unwrap_or_default();
        *self.seen_state.lock().unwrap() = Some(state);
    }
}

#[tokio::test]
async fn cancellation_revokes_desktop_authority_before_interrupting_the_agent() {
    let runtime = spawn_sim(&[]).await;
    let recorder = Recorder {
        runtime: std::sync::Arc::clone(&runtime),
        seen_state: std::sync::Mutex::new(None),
    };
    let bridge = CancellationBridge::new(std::sync::Arc::clone(&runtime), &recorder);
    bridge
        .cancel(StopKind::Pause, "user pressed stop")
        .await
        .unwrap();
    assert_eq!(
        recorder.seen_state.lock().unwrap().as_deref(),
        Some("paused_by_user")
    );
    // An emergency stop revokes control and refuses queued writers; as
    // upstream's does, it leaves the sessions as they are.
    bridge
        .cancel(StopKind::Emergency, "panic button")
        .await
        .unwrap();
    assert_eq!(
        recorder.seen_state.lock().unwrap().as_deref(),
        Some("paused_by_user")
    );
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
async fn injected_crashes_leave_the_outcome_unknown_and_name_the_action() {
    for fault in ["crash.beforeEffect", "crash.afterCommit"] {
        let runtime = spawn_sim(&["--fault", fault]).await;
        let pid = runtime.child_pid().unwrap();
        let session = session(&runtime, "agent-a");
        let err = run_err(&session, write_clipboard("a-11", "text", false)).await;
        // The server died during the mutating call: its outcome is unknown
        // (the error names the action a safe retry reuses), and the releases
        // that follow fail in transit.
        match &err {
            ComputerUseError::WithCleanup { primary, cleanup } => {
                assert!(
                    matches!(&**primary, ComputerUseError::OutcomeUnknown { action_id, cause }
                        if action_id == "a-11" && matches!(**cause, ComputerUseError::Transport { .. })),
                    "{fault}: {err}"
                );
                assert!(
                    matches!(&**cleanup, ComputerUseError::WithCleanup { primary, cleanup }
                        if matches!(**primary, ComputerUseError::Transport { .. })
                            && matches!(**cleanup, ComputerUseError::Transport { .. })),
                    "{fault}: the lease's and the reservation's releases: {err}"
                );
            }
            other => panic!("{fault}: expected an unknown outcome, got {other}"),
        }
        // The lease's and the reservation's releases failed with the server.
        let stats = session.shutdown().await;
        assert_eq!(
            (
                stats.leases.explicit_failed,
                stats.reservations.explicit_failed,
                stats.leaked()
            ),
            (1, 1, 2)
        );
        runtime.shutdown().await.unwrap();
        assert!(wait_gone(pid).await);
    }
}

#[tokio::test]
async fn the_journal_of_a_chain_over_mcp_and_the_servers_own_events_evaluate_clean() {
    use adk_computer_use::eval::ComputerUseEvaluator;
    use adk_computer_use::journal::{Journal, MemoryJournal, journal_events, verify_journal};
    use std::sync::Arc;
    let runtime = spawn_sim(&[]).await;
    let sink = Arc::new(MemoryJournal::new());
    let authorizer = planning_and("computer:execute:background");
    let session = adk_computer_use::Session::builder(Arc::clone(&runtime), authorizer)
        .agent_id("agent-j")
        .journal(Arc::new(Journal::new(sink.clone())))
        .build()
        .unwrap();
    for (i, with_post) in [true, false].into_iter().enumerate() {
        let _done = run_verified(
            &session,
            write_clipboard(&format!("j-{i}"), "journaled", with_post),
        )
        .await;
    }
    let entries = sink.entries();
    verify_journal(&entries, None).unwrap();
    let ours = ComputerUseEvaluator::new().evaluate(&journal_events(&entries));
    assert!(ours.violations.is_empty(), "{:?}", ours.violations);
    // The server's own record, observations and all.
    let theirs = ComputerUseEvaluator::new().evaluate(&runtime.all_session_events().await.unwrap());
    assert!(theirs.violations.is_empty(), "{:?}", theirs.violations);
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_visual_observation_keeps_its_png_image_block() {
    let runtime = spawn_sim(&[]).await;
    let frame = runtime
        .observe_visual(&adk_computer_use::runtime::ObservationScope::default())
        .await
        .unwrap();
    assert_eq!(frame.images.len(), 1);
    assert_eq!(frame.images[0].mime_type, "image/png");
    // "iVBORw0KGgo" is the base64 of the PNG signature.
    assert!(frame.images[0].data.starts_with("iVBORw0KGgo"));
    assert!(frame.observation_id.is_some());
    assert!(frame.structured.get("screenshotHash").is_some());
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_chain_timed_out_against_a_slow_server_leaks_nothing() {
    let runtime = spawn_sim(&["--slow-ms", "40"]).await;
    let session = session(&runtime, "agent-slow");
    // Long enough to get past the reservation, too short for the whole chain.
    let attempt = tokio::time::timeout(
        std::time::Duration::from_millis(200),
        session.run(write_clipboard("slow-1", "text", true)),
    )
    .await;
    assert!(attempt.is_err(), "the chain should not finish in time");
    let stats = session.shutdown().await;
    assert_eq!(stats.leaked(), 0, "{stats:?}");
    let sim = adk_computer_use_testkit::child::stats(&runtime).await;
    assert_eq!(sim["activeReservations"], 0);
    assert!(sim["totalEffects"].as_u64().unwrap() <= 1);
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
async fn terminal_sessions_can_be_pruned() {
    let runtime = spawn_sim(&[]).await;
    let first = runtime.session_id().unwrap();
    runtime.stop_session(Some("done")).await.unwrap();
    runtime.start_session(Some("second"), None).await.unwrap();
    let later = adk_computer_use::clock::format_rfc3339(
        time::OffsetDateTime::now_utc() + time::Duration::seconds(5),
    )
    .unwrap();
    let deletions = runtime.prune_sessions(&later, None).await.unwrap();
    assert_eq!(deletions.len(), 1);
    assert_eq!(deletions[0].session_id, first);
    // The running session is not terminal and stays.
    runtime.get_session().await.unwrap();
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_suspended_approval_resumes_over_mcp_once_with_its_sealed_arguments() {
    use adk_computer_use::chain::{CheckpointRefusal, FileCheckpointStore, inspect};
    let runtime = spawn_sim(&["--confirm-tool", "write_clipboard"]).await;
    let dir = tempfile::tempdir().unwrap();
    let store = sealed_store(dir.path(), 4);
    let on = |store: Arc<FileCheckpointStore>| {
        Session::builder(Arc::clone(&runtime), sim_authorizer())
            .agent_id("agent-a")
            .target(CLIPBOARD_APP, Some(WindowId::Number(CLIPBOARD_WINDOW)))
            .checkpoints(store)
            .build()
            .unwrap()
    };
    let id = {
        let session = on(store.clone());
        let pending = run_to_approval(&session, write_clipboard("resume-1", "resumed", true)).await;
        pending.suspend().await.unwrap()
    };
    // The adapter keeps nothing per preview: the exact previewed arguments
    // travel in the sealed checkpoint.
    let grant = host_grant(
        &runtime,
        &GrantRequest::for_checkpoint(&inspect(&*store, &id).unwrap()),
    )
    .await
    .unwrap();
    // The same checkpoint files opened with another key are refused before
    // anything runs.
    let foreign = sealed_store(dir.path(), 8);
    assert!(
        on(foreign)
            .resume(&id, Approval::from_grant("resume-1", &grant))
            .await
            .is_err()
    );
    let session = on(store.clone());
    let verified = session
        .resume(&id, Approval::from_grant("resume-1", &grant))
        .await
        .unwrap()
        .complete()
        .await
        .unwrap();
    assert!(verified.outcome().is_verified(), "{}", verified.outcome());
    assert_eq!(stats(&runtime).await["totalEffects"], 1);
    // Resumed once, the checkpoint is spent: a second resume, from another
    // session on the same store, is refused before any runtime call.
    let err = on(store.clone())
        .resume(&id, Approval::from_grant("resume-1", &grant))
        .await
        .err()
        .unwrap();
    assert_eq!(
        err.checkpoint_refusal(),
        Some(&CheckpointRefusal::AlreadyResumed),
        "{err}"
    );
    assert_eq!(stats(&runtime).await["totalEffects"], 1);
    runtime.shutdown().await.unwrap();
}

/// A background `tool` action with `arguments` on the simulator's clipboard window.
fn file_action(
    id: &str,
    tool: &str,
    arguments: serde_json::Value,
) -> adk_computer_use::ProposedAction {
    targeted_action(
        id,
        tool,
        arguments,
        adk_computer_use::contracts::ExecutionMode::Background,
    )
}

#[tokio::test]
async fn the_simulators_policy_denies_destructive_actions_unless_configured() {
    let strict = spawn_sim(&[]).await;
    let strict_session = session(&strict, "agent-a");
    match strict_session
        .run(file_action(
            "d-1",
            "delete_file",
            json!({ "path": "/tmp/x" }),
        ))
        .await
        .unwrap()
    {
        ChainOutcome::Blocked(blocked) => assert_eq!(blocked.blocker(), "policy_denied"),
        _ => panic!("a destructive action was not blocked"),
    }
    assert_eq!(stats(&strict).await["totalEffects"], 0);
    strict.shutdown().await.unwrap();

    let permissive = spawn_sim(&["--allow-destructive"]).await;
    let permissive_session = session(&permissive, "agent-a");
    let done = run_verified(
        &permissive_session,
        file_action("d-2", "delete_file", json!({ "path": "/tmp/x" })),
    )
    .await;
    assert!(done.performed());
    permissive.shutdown().await.unwrap();
}

/// A file named as an action's resource is checked before it binds
/// anything: a relative path, one through `..`, and a file tool's named
/// path that is not the one its arguments give are refused at preview,
/// before anything is reserved; a file check on a path not named is not
/// bound to the action.
#[tokio::test]
async fn a_named_resource_is_an_absolute_path_the_arguments_do_not_contradict() {
    let (runtime, session) = sim_and_session(&["--allow-destructive"]).await;
    let cases = [
        (
            file_action("r-1", "write_clipboard", json!({ "text": "t" }))
                .with_resource(named("notes.txt")),
            "absolute path",
        ),
        (
            file_action("r-2", "write_clipboard", json!({ "text": "t" }))
                .with_resource(named("/tmp/../etc/passwd")),
            "absolute path",
        ),
        (
            file_action("r-3", "delete_file", json!({ "path": "/tmp/a" }))
                .with_resource(named("/tmp/b")),
            "not the path",
        ),
        (
            file_action("r-4", "write_clipboard", json!({ "text": "t" }))
                .with_resource(named("/tmp/a"))
                .with_postcondition(file_check("/tmp/b", true)),
            "must be bound",
        ),
    ];
    for (action, says) in cases {
        let err = run_err(&session, action).await;
        assert_policy_refusal(&err, "preview_action", says);
    }
    assert_eq!(stats(&runtime).await["totalEffects"], 0);
    runtime.shutdown().await.unwrap();
}

/// A file check on a named file that already holds could not show the
/// action's effect: the server refuses it at execute, before the effect,
/// on the simulated desktop as on X11 (a file already absent, here), and
/// the server's own record shows no effect.
#[tokio::test]
async fn a_file_check_that_holds_before_the_action_is_refused_with_nothing_done() {
    let (runtime, session) = sim_and_session(&[]).await;
    let absent = "/tmp/never-written-by-this-test";
    let action = file_action("held-1", "write_clipboard", json!({ "text": "t" }))
        .with_data_labels([adk_computer_use::contracts::DataLabel::Public])
        .with_resource(named(absent))
        .with_postcondition(file_check(absent, false));
    let err = run_err(&session, action).await;
    assert_policy_refusal(&err, "execute_action", "holds before");
    let stats = stats(&runtime).await;
    assert_eq!(stats["totalEffects"], 0, "{stats}");
    runtime.shutdown().await.unwrap();
}

/// A session that acts on the simulator's sign-in window, and target
/// evidence of that window.
fn on_the_sign_in_window(
    runtime: &std::sync::Arc<adk_computer_use::mcp::ComputerUseMcpRuntime>,
) -> (
    adk_computer_use::Session<adk_computer_use::mcp::ComputerUseMcpRuntime>,
    adk_computer_use::contracts::TargetEvidence,
) {
    let authorizer = planning_and("computer:execute:foreground");
    let session = adk_computer_use::Session::builder(std::sync::Arc::clone(runtime), authorizer)
        .agent_id("agent-a")
        .target(
            "com.example.Login",
            Some(adk_computer_use::contracts::WindowId::Number(9)),
        )
        .build()
        .unwrap();
    let mut target = clipboard_target();
    target.app_id = "com.example.Login".into();
    target.window_id = Some(adk_computer_use::contracts::WindowId::Number(9));
    (session, target)
}

#[tokio::test]
async fn a_password_field_target_needs_approval() {
    let runtime = spawn_sim(&[]).await;
    let (session, mut target) = on_the_sign_in_window(&runtime);
    target.role = Some("AXSecureTextField".into());
    // A semantic edit takes the foreground, as upstream's platform rule has
    // it (accessibility-driven tools run in the foreground only).
    let action = adk_computer_use::ProposedAction::new(
        "set_value",
        json!({ "element_id": "login-password", "value": "hunter2" }),
        adk_computer_use::contracts::ExecutionMode::Foreground,
    )
    .with_action_id("pw-1")
    .with_target(target);
    match session.run(action).await.unwrap() {
        ChainOutcome::NeedsApproval(pending) => {
            let sensitivity = pending
                .preview()
                .envelope
                .target_sensitivity
                .clone()
                .unwrap();
            assert_eq!(
                sensitivity.fields().assessment,
                adk_computer_use::contracts::SensitivityAssessment::Sensitive
            );
        }
        _ => panic!("a password field was not routed to approval"),
    }
    runtime.shutdown().await.unwrap();
}

/// A field the window does not hold says nothing about secrets: the write
/// is blocked as `sensitivity_unavailable`, its signals naming
/// `element_not_found`, under its own class (an edit), never as a secret's
/// access that a person could approve.
#[tokio::test]
async fn a_field_that_is_not_there_is_blocked_as_not_found_not_as_a_secret() {
    let runtime = spawn_sim(&[]).await;
    let (session, target) = on_the_sign_in_window(&runtime);
    let action = adk_computer_use::ProposedAction::new(
        "set_value",
        json!({ "element_id": "no-such-field", "value": "hello" }),
        adk_computer_use::contracts::ExecutionMode::Foreground,
    )
    .with_action_id("missing-1")
    .with_target(target);
    match session.run(action).await.unwrap() {
        ChainOutcome::Blocked(blocked) => {
            assert_eq!(blocked.blocker(), "sensitivity_unavailable");
            let envelope = serde_json::to_value(&blocked.preview().envelope).unwrap();
            assert_eq!(
                envelope["targetSensitivity"]["signals"],
                json!(["element_not_found"]),
                "{envelope}"
            );
            assert_ne!(envelope["actionClass"], "secret_access", "{envelope}");
            assert!(
                blocked.reasons().iter().all(|r| !r.contains("secret")),
                "{:?}",
                blocked.reasons()
            );
        }
        _ => panic!("a missing field was not blocked"),
    }
    assert_eq!(stats(&runtime).await["totalEffects"], 0);
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_stale_chain_cannot_break_a_live_retry_of_the_same_action() {
    let (runtime, session) = sim_and_session(&[]).await;
    // The stale chain: previewed and reserved, then abandoned.
    let stale = reserve_allowed(&session, &write_clipboard("same-id", "text", true)).await;
    // The recommended retry reuses the action id.
    let retry = common::allowed_action(&session, &write_clipboard("same-id", "text", true)).await;
    drop(stale);
    // Let the reaper release the stale chain's reservation first.
    for _ in 0..200 {
        if session.release_stats().reservations.reaped == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(session.release_stats().reservations.reaped, 1);
    let verified = retry.complete().await.unwrap();
    assert!(verified.outcome().is_verified(), "{}", verified.outcome());
    assert_eq!(stats(&runtime).await["totalEffects"], 1);
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_lease_is_given_back_after_every_action_over_mcp() {
    let runtime = spawn_sim(&[]).await;
    let first = session(&runtime, "agent-a");
    let second = session(&runtime, "agent-b");
    let _done = run_verified(&first, write_clipboard("l-1", "one", true)).await;
    // The spent lease was released at once: no active lease holds the next
    // writer up until the TTL.
    assert_eq!(stats(&runtime).await["activeLeases"], 0);
    let _done = run_verified(&second, write_clipboard("l-2", "two", true)).await;
    // A chain dropped while it held the lease has it given back by the reaper.
    let leased = lease_allowed(&first, &write_clipboard("l-3", "three", true)).await;
    assert_eq!(stats(&runtime).await["activeLeases"], 1);
    drop(leased);
    let released = first.shutdown().await;
    assert_eq!((released.leases.queued, released.leases.reaped), (1, 1));
    assert_eq!(stats(&runtime).await["activeLeases"], 0);
    assert_eq!(stats(&runtime).await["totalEffects"], 2);
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_servers_own_check_is_the_evidence_and_a_failed_check_leaves_the_outcome_unknown() {
    let (runtime, session) = sim_and_session(&[]).await;
    // A passed check: the receipt carries no verification object, the
    // evidence comes from the server's `action.verified` event.
    let done = run_verified(&session, write_clipboard("e-1", "checked", true)).await;
    assert!(
        done.receipt()
            .result
            .as_ref()
            .is_none_or(|r| r.get("verification").is_none())
    );
    assert_eq!(done.outcome(), &VerificationOutcome::Verified);
    // A postcondition the desktop will not show: the server's check fails,
    // the action ends indeterminate, and the caller is told the outcome is
    // unknown, with the action id to retry under.
    let mut action = write_clipboard("e-2", "written", false);
    action.postcondition = write_clipboard("e-2", "something else", true).postcondition;
    match session.run(action).await {
        Err(ComputerUseError::OutcomeUnknown { action_id, cause }) => {
            assert_eq!(action_id, "e-2");
            assert_eq!(cause.refusal_code(), Some("indeterminate"));
        }
        Err(other) => panic!("expected an unknown outcome, got {other}"),
        Ok(_) => panic!("a failed server check was accepted"),
    }
    let stats = stats(&runtime).await;
    assert_eq!(stats["activeLeases"], 0);
    assert_eq!(stats["activeReservations"], 0);
    let released = session.shutdown().await;
    assert_eq!(released.leaked(), 0, "{released:?}");
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_second_writer_waits_in_the_servers_queue_and_a_cancelled_wait_leaves_it() {
    use std::sync::Arc;
    let command = server_command(&["--principal", PRINCIPAL, "--stats"]);
    // Leases that live five minutes, and a wait of 300 ms for the next one.
    let mut config = stats_config()
        .capability_tool("write_clipboard")
        .lease_wait(300);
    config.lease_ttl_ms = 300_000;
    let runtime = Arc::new(ComputerUseMcpRuntime::spawn(command, config).await.unwrap());
    runtime
        .start_session(Some("queue"), Some("group-e2e"))
        .await
        .unwrap();
    let first = session(&runtime, "agent-a");
    // The second writer names no target, so no reservation stands in its way.
    let authorizer = planning_and("computer:execute:background");
    let second = adk_computer_use::Session::builder(Arc::clone(&runtime), authorizer)
        .agent_id("agent-b")
        .build()
        .unwrap();
    let untargeted = |id: &str| public_write(id, id);
    let leased = lease_allowed(&first, &write_clipboard("queue-a", "a", true)).await;
    // The second waits in the server's queue, and gives up after its wait.
    let err = run_err(&second, untargeted("queue-b")).await;
    assert!(
        matches!(&err, ComputerUseError::TimedOut { operation, waited_ms: 300 } if operation == "acquire_control_lease"),
        "{err}"
    );
    let done = leased.execute().await.unwrap().verify().await.unwrap();
    assert!(done.outcome().is_verified(), "{}", done.outcome());
    // The cancelled wait left the queue: had the server granted it the
    // lease, nobody would release it and this would time out too.
    match second.run(untargeted("queue-c")).await {
        Ok(ChainOutcome::Completed(done)) => assert!(done.performed()),
        Ok(_) => panic!("the retry was not allowed"),
        Err(err) => panic!("the retry did not get the lease: {err}"),
    }
    let sim = stats(&runtime).await;
    assert_eq!(
        (sim["totalEffects"].as_u64(), sim["activeLeases"].as_u64()),
        (Some(2), Some(0))
    );
    runtime.shutdown().await.unwrap();
}

/// Every tool of upstream's catalogue previews, but a desktop performs only
/// its own: the simulated one has no keyboard, so a `key` action (approved,
/// reserved and leased) is refused at execute before any effect, and the
/// server counts none.
#[tokio::test]
async fn a_catalogue_tool_the_desktop_does_not_perform_is_refused_before_any_effect() {
    let (runtime, session) = sim_and_session(&[]).await;
    let key = adk_computer_use::runtime::ProposedAction::new(
        "key",
        json!({ "text": "ctrl+c" }),
        adk_computer_use::contracts::ExecutionMode::Foreground,
    )
    .with_target(clipboard_target());
    let approved = approved(&runtime, &session, &key).await;
    assert_eq!(
        approved.preview().capability.backend,
        adk_computer_use::contracts::ExecutionBackend::PhysicalInput
    );
    let err = approved
        .reserve()
        .await
        .unwrap()
        .lease()
        .await
        .unwrap()
        .execute()
        .await
        .err()
        .expect("the simulated desktop has no keyboard");
    assert_eq!(err.refusal_code(), Some("execution_failed"), "{err}");
    assert!(
        matches!(err, ComputerUseError::Refused { .. }),
        "refused before the effect, not an unknown outcome: {err:?}"
    );
    assert_eq!(stats(&runtime).await["totalEffects"], 0);
    session.shutdown().await;
}

/// An execution, once begun, is finished whatever becomes of its call: a
/// caller that stops waiting between the two phases (a timeout, a dropped
/// future) does not leave the receipt pending, and a retry of the same
/// action id gets the committed receipt back.
#[tokio::test]
async fn an_execution_whose_caller_stops_waiting_is_still_finished() {
    use computer_use_server::{CLIPBOARD_APP, CLIPBOARD_WINDOW, Config, Server};
    use std::future::Future as _;
    let structured = |result: &rmcp::model::CallToolResult| {
        serde_json::to_value(result).unwrap()["structuredContent"].clone()
    };
    let server = Server::new(Config::for_principal("p").with_stats());
    let started = structured(
        &server
            .answer("start_session", json!({ "objective": "x" }))
            .await,
    );
    let session = started["session"]["sessionId"].clone();
    let now = adk_computer_use::clock::format_rfc3339(time::OffsetDateTime::now_utc()).unwrap();
    let action = json!({
        "session_id": session, "action_id": "dropped-1", "tool": "write_clipboard",
        "arguments": { "text": "written once" }, "mode": "background", "agent_id": "agent-a",
        "target": { "platform": "linux", "app_id": CLIPBOARD_APP, "window_id": CLIPBOARD_WINDOW,
                    "observation_id": "o", "confidence": 1, "captured_at": now },
        "data_labels": ["public"],
    });
    server.answer("preview_action", action.clone()).await;
    let lease = structured(
        &server
            .answer(
                "acquire_control_lease",
                json!({ "session_id": session, "kind": "cooperative", "mode": "background",
                        "ttl_ms": 30000, "action_budget": 5, "agent_id": "agent-a",
                        "app_ids": [CLIPBOARD_APP], "window_ids": [CLIPBOARD_WINDOW] }),
            )
            .await,
    );
    let mut execute = action;
    execute["lease_id"] = lease["lease"]["leaseId"].clone();
    // Polled once (the first phase runs, the receipt is pending), then
    // dropped.
    {
        let mut call = std::pin::pin!(server.answer("execute_action", execute.clone()));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(call.as_mut().poll(&mut cx).is_pending());
    }
    let mut retry = Value::Null;
    for _ in 0..100 {
        tokio::task::yield_now().await;
        retry = structured(&server.answer("execute_action", execute.clone()).await);
        if retry["error"] != "indeterminate" {
            break;
        }
    }
    assert_eq!(retry["receipt"]["status"], "committed", "{retry}");
    assert_eq!(retry["replay"], true, "{retry}");
    let stats = structured(&server.answer("sim_stats", json!({})).await);
    assert_eq!(stats["clipboard"], "written once", "{stats}");
    assert_eq!(stats["totalEffects"], 1, "{stats}");
}

/// Issue 19 review: the person approves the action they were shown. The
/// agent previews another action under the same id after suspending the
/// first; the host's grant request names the digests the person saw, so
/// the server's grant for the other action is refused, nothing is recorded
/// and nothing runs.
#[tokio::test]
async fn a_grant_for_another_action_under_the_same_id_is_refused_to_the_host() {
    use adk_computer_use::ComputerUseError;
    use adk_computer_use::chain::inspect;
    let runtime = spawn_sim(&["--confirm-tool", "write_clipboard"]).await;
    let dir = tempfile::tempdir().unwrap();
    let store = sealed_store(dir.path(), 4);
    let agent = Session::builder(Arc::clone(&runtime), sim_authorizer())
        .agent_id("agent-a")
        .target(CLIPBOARD_APP, Some(WindowId::Number(CLIPBOARD_WINDOW)))
        .checkpoints(store.clone())
        .build()
        .unwrap();
    let shown = run_to_approval(&agent, write_clipboard("pay-1", "benign", true)).await;
    let id = shown.suspend().await.unwrap();
    let other = run_to_approval(&agent, write_clipboard("pay-1", "EVIL", true)).await;
    let view = inspect(&*store, &id).unwrap();
    let err = host_grant(&runtime, &GrantRequest::for_checkpoint(&view))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            ComputerUseError::IdentityMismatch {
                field: "actionDigest",
                ..
            }
        ),
        "{err}"
    );
    // The agent's other action has no grant to run on.
    let own = Approval::with_grant(
        other.action_id(),
        other.action_digest(),
        other.policy_digest(),
        "no-such-grant",
    );
    assert!(other.approve(own).unwrap().complete().await.is_err());
    assert_eq!(stats(&runtime).await["totalEffects"], 0);
    runtime.shutdown().await.unwrap();
}

/// Issue 20, item 4: a malformed argument (`txt` for `text`) is refused
/// before any effect, as a refusal with its code, never as an unknown
/// outcome that advises a retry which could not succeed.
#[tokio::test]
async fn a_malformed_argument_is_a_refusal_not_an_unknown_outcome() {
    use adk_computer_use::ComputerUseError;
    use adk_computer_use::contracts::{DataLabel, ExecutionMode};
    let (runtime, session) = sim_and_session(&[]).await;
    // A tool whose arguments the chain knows: refused before anything is
    // sent, so the server never hears of the action.
    let action = targeted_action(
        "bad-1",
        "write_clipboard",
        json!({ "txt": "hi" }),
        ExecutionMode::Background,
    )
    .with_data_labels([DataLabel::Public]);
    let err = session
        .run(action)
        .await
        .err()
        .expect("a write without its text is refused");
    assert!(
        matches!(
            err,
            ComputerUseError::InvalidField {
                object: "ProposedAction",
                field: "arguments",
                ..
            }
        ),
        "{err}"
    );
    assert!(!err.to_string().contains("retry"), "{err}");
    let events = runtime.all_session_events().await.unwrap();
    assert!(
        events
            .iter()
            .all(|e| e.action_id.as_deref() != Some("bad-1")),
        "the server heard nothing of the refused action: {events:?}"
    );
    // A tool the chain does not know (the simulator's own set_value) goes
    // to the server, whose refusal before any effect is a refusal too.
    let action = targeted_action(
        "bad-2",
        "set_value",
        json!({ "element_id": "clipboard-text", "value": 42 }),
        ExecutionMode::Foreground,
    )
    .with_data_labels([DataLabel::Public]);
    let outcome = match session.run(action).await {
        Ok(ChainOutcome::NeedsApproval(pending)) => host_approves(&runtime, pending)
            .await
            .complete()
            .await
            .map(|_| ()),
        Ok(ChainOutcome::Completed(_)) => Ok(()),
        Ok(ChainOutcome::Blocked(blocked)) => panic!("blocked: {}", blocked.blocker()),
        Err(err) => Err(err),
    };
    let err = outcome.expect_err("a value that is not text must not be set");
    assert!(
        !matches!(err, ComputerUseError::OutcomeUnknown { .. }),
        "nothing happened, and the error must say so: {err}"
    );
    assert_eq!(err.refusal_code(), Some("invalid_arguments"), "{err}");
    assert!(!err.to_string().contains("retry"), "{err}");
    assert_eq!(stats(&runtime).await["totalEffects"], 0);
    runtime.shutdown().await.unwrap();
}

/// "Window W is gone" where W is not shown before the action (it never
/// existed) can show nothing the action did: refused, and nothing done,
/// whether the server refuses the check as unbound at the preview or as
/// holding before the effect.
#[tokio::test]
async fn a_window_check_that_holds_before_the_action_is_refused_with_nothing_done() {
    let (runtime, session) = sim_and_session(&[]).await;
    let action = file_action("held-window", "write_clipboard", json!({ "text": "t" }))
        .with_data_labels([adk_computer_use::contracts::DataLabel::Public])
        .with_postcondition(
            adk_computer_use::contracts::ActionPostcondition::try_from(
                adk_computer_use::contracts::PostconditionFields::Window {
                    window_id: 0x3f_ffff,
                    exists: false,
                },
            )
            .unwrap(),
        );
    let err = run_err(&session, action).await;
    assert_eq!(err.refusal_code(), Some("policy_denied"), "{err:?}");
    assert!(
        matches!(err, ComputerUseError::Refused { .. }),
        "refused before anything was sent: {err:?}"
    );
    let stats = stats(&runtime).await;
    assert_eq!(stats["totalEffects"], 0, "{stats}");
    runtime.shutdown().await.unwrap();
}

/// Runs `action` in `session` to its verified end; any other end fails the test.
async fn run_verified(
    session: &Session<ComputerUseMcpRuntime>,
    action: ProposedAction,
) -> Verified {
    completed(session.run(action).await.unwrap())
}

/// Runs `action` in `session` up to the person's approval it must ask for.
async fn run_to_approval(
    session: &Session<ComputerUseMcpRuntime>,
    action: ProposedAction,
) -> PendingApproval<ComputerUseMcpRuntime> {
    match session.run(action).await.unwrap() {
        ChainOutcome::NeedsApproval(pending) => pending,
        _ => panic!("expected approval to be required"),
    }
}

/// Walks `session` through the reservation of `action`, which policy must allow.
async fn reserve_allowed(
    session: &Session<ComputerUseMcpRuntime>,
    action: &ProposedAction,
) -> Reserved<ComputerUseMcpRuntime> {
    common::allowed_action(session, action)
        .await
        .reserve()
        .await
        .unwrap()
}

/// Walks `session` through the reservation and the lease of `action`, which policy must allow.
async fn lease_allowed(
    session: &Session<ComputerUseMcpRuntime>,
    action: &ProposedAction,
) -> Leased<ComputerUseMcpRuntime> {
    reserve_allowed(session, action)
        .await
        .lease()
        .await
        .unwrap()
}

/// The host's grant, through its own approver, of exactly the action `request` names.
async fn host_grant(host: &Sim, request: &GrantRequest) -> Result<ApprovalGrant, ComputerUseError> {
    host.approver
        .approve_action(request, ApprovalScope::ExactAction, None)
        .await
}

/// Asserts `err` is the server's `policy_denied` refusal of `operation`, its message saying `says`.
fn assert_policy_refusal(err: &ComputerUseError, operation: &str, says: &str) {
    match err {
        ComputerUseError::Refused {
            operation: refused,
            code,
            message,
            ..
        } => {
            assert_eq!(
                (refused.as_str(), code.as_str()),
                (operation, "policy_denied")
            );
            assert!(message.contains(says), "{message}");
        }
        other => panic!("expected a refused {operation}, got {other:?}"),
    }
}

/// [`PRINCIPAL`] allowed to plan and to act under `execute_scope`.
fn planning_and(execute_scope: &str) -> adk_computer_use::ScopeAuthorizer {
    let identity = adk_computer_use::VerifiedIdentity::new(PRINCIPAL, "tenant-e2e").unwrap();
    adk_computer_use::ScopeAuthorizer::new(identity, ["computer:plan", execute_scope]).unwrap()
}

/// A file checkpoint store in `dir`, sealed with a key of 32 `byte`s.
fn sealed_store(
    dir: &std::path::Path,
    byte: u8,
) -> Arc<adk_computer_use::chain::FileCheckpointStore> {
    let key = adk_computer_use::chain::SealingKey::new(vec![byte; 32]).unwrap();
    Arc::new(adk_computer_use::chain::FileCheckpointStore::new(dir, key).unwrap())
}

/// The workspace's server binary as a command, given `args`.
fn server_command(args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(adk_computer_use_testkit::binary::path(
        adk_computer_use_testkit::binary::SERVER,
    ));
    command.args(args);
    command
}

/// A runtime configuration for [`PRINCIPAL`] that may read the simulator's stats.
fn stats_config() -> adk_computer_use::mcp::McpRuntimeConfig {
    adk_computer_use::mcp::McpRuntimeConfig::new(PRINCIPAL)
        .read_only_extension(adk_computer_use_testkit::STATS_TOOL)
        .unwrap()
}

/// A `tool` action with `arguments` in `mode` on the simulator's clipboard window.
fn targeted_action(
    id: &str,
    tool: &str,
    arguments: Value,
    mode: adk_computer_use::contracts::ExecutionMode,
) -> ProposedAction {
    ProposedAction::new(tool, arguments, mode)
        .with_action_id(id)
        .with_target(clipboard_target())
}

/// A public clipboard write of `text` in the background that names no target.
fn public_write(id: &str, text: &str) -> ProposedAction {
    ProposedAction::new(
        "write_clipboard",
        json!({ "text": text }),
        adk_computer_use::contracts::ExecutionMode::Background,
    )
    .with_action_id(id)
    .with_data_labels([adk_computer_use::contracts::DataLabel::Public])
}

/// A resource context naming the file at `path`.
fn named(path: &str) -> adk_computer_use::contracts::ActionResourceContext {
    adk_computer_use::contracts::ActionResourceContext {
        filesystem_path: Some(path.into()),
        ..Default::default()
    }
}

/// A file check on `path`: that the file exists, or that it does not.
fn file_check(path: &str, exists: bool) -> adk_computer_use::contracts::ActionPostcondition {
    adk_computer_use::contracts::ActionPostcondition::try_from(
        adk_computer_use::contracts::PostconditionFields::Filesystem {
            path: path.into(),
            exists,
            content_digest: None,
        },
    )
    .unwrap()
}

/// A simulator started with `flags` and a session of agent `agent-a` on its clipboard window.
async fn sim_and_session(flags: &[&str]) -> (Sim, Session<ComputerUseMcpRuntime>) {
    let runtime = spawn_sim(flags).await;
    let session = session(&runtime, "agent-a");
    (runtime, session)
}
