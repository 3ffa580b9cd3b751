//! The chain against hostile answers and callers: the front door, the
//! observed target and the server's evidence, each as a test that fails if
//! the hole comes back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use adk_computer_use::ComputerUseError;
use adk_computer_use::chain::{Approval, ChainOutcome, CheckpointRefusal, Route, Session};
use adk_computer_use::contracts::*;
use adk_computer_use::runtime::{Observation, Observations};
use common::*;
use serde_json::{Value, json};

/// Finding 1: A shutdown while a stage of the session is mid-call leaves the
/// runtime open: the call can finish and give back what it holds.
#[tokio::test]
async fn shutdown_does_not_close_the_runtime_under_a_live_stage() {
    let clock = adk_computer_use::clock::ManualClock::new(start());
    let runtime = FakeRuntime::new(clock.clone());
    let closed = Arc::clone(&runtime.closed);
    let session = Session::builder(runtime, full_authorizer())
        .clock(Arc::new(clock))
        .build()
        .unwrap();
    let previewed = session
        .observe()
        .await
        .unwrap()
        .preview(&action("live-stage"))
        .await
        .unwrap();
    let Route::Allowed(approved) = previewed.route() else {
        panic!("allowed")
    };
    let leased = approved.reserve().await.unwrap().lease().await.unwrap();
    let _ = session.shutdown().await;
    assert_eq!(
        closed.load(Ordering::SeqCst),
        0,
        "a stage still holds the session: the runtime stays open"
    );
    // The stage's next step is refused; its guard gives everything back.
    let err = leased.execute().await.err().unwrap();
    assert!(
        matches!(err, ComputerUseError::SessionClosed { .. }),
        "{err}"
    );
}

/// Finding 3: A text-only error from the mutating call is not "refused before
/// acting": the outcome is unknown.
#[tokio::test]
async fn a_words_only_error_from_execute_is_an_unknown_outcome() {
    let rig = rig();
    rig.runtime.script().fail.insert(
        Call::Execute,
        ComputerUseError::Refused {
            operation: "execute_action".into(),
            code: "unstructured_refusal".into(),
            message: "Error: the desktop bridge crashed".into(),
            details: None,
        },
    );
    let err = rig.session.run(action("words-only")).await.err().unwrap();
    assert!(
        matches!(&err, ComputerUseError::OutcomeUnknown { action_id, .. } if action_id == "words-only"),
        "{err}"
    );
}

/// Finding 5: A preview waiting for approval whose capability cannot run its mode
/// stops before anything is reserved.
#[tokio::test]
async fn an_approval_preview_is_held_to_its_capabilitys_modes() {
    let rig = rig();
    rig.runtime.script().route = Some(PreviewRoute::NeedsApproval);
    rig.runtime.script().preview = Some(Arc::new(|p: &mut ActionPreview| {
        p.capability.supported_modes = vec![ExecutionMode::Shadow];
    }));
    let err = rig.session.run(action("shadow-only")).await.err().unwrap();
    assert_eq!(err.field(), Some("supportedModes"), "{err}");
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
}

fn rounds(semantic: Value, captured_at: Option<&str>) -> Observations {
    Observations {
        capabilities: vec![],
        visual: Observation {
            observation_id: Some("v".into()),
            structured: json!({}),
            images: vec![],
            captured_at: None,
        },
        semantic: Observation {
            observation_id: Some("s".into()),
            structured: semantic,
            images: vec![],
            captured_at: captured_at.map(str::to_owned),
        },
    }
}

/// Finding 7: Hostile frames fail closed: an empty or junk window list is a list
/// that does not show the target; a window id that is not an id is no
/// window; an unreadable capture time is refused.
#[test]
fn hostile_frames_fail_closed() {
    const AT: &str = "2026-07-13T10:00:00Z";
    for frame in [json!({ "windows": [] }), json!({ "windows": [1, "x"] })] {
        let observed = rounds(frame.clone(), None);
        assert!(observed.shows_windows(), "{frame} is a window list");
        assert!(
            matches!(
                observed.target_evidence(APP, None, AT),
                Err(ComputerUseError::TargetNotObserved { .. })
            ),
            "{frame}"
        );
    }
    let float = rounds(
        json!({ "windows": [{ "bundleId": APP, "windowId": 7.5, "title": "t" }] }),
        None,
    );
    assert!(matches!(
        float.target_evidence(APP, None, AT),
        Err(ComputerUseError::TargetNotObserved { .. })
    ));
    let untimed = rounds(
        json!({ "windows": [{ "bundleId": APP, "windowId": 7, "title": "t" }] }),
        Some("not a time"),
    );
    assert!(matches!(
        untimed.target_evidence(APP, None, AT),
        Err(ComputerUseError::TargetNotObserved { .. })
    ));
    let timed = rounds(
        json!({ "windows": [{ "bundleId": APP, "windowId": 7, "title": "t" }] }),
        None,
    );
    assert_eq!(
        timed.target_evidence(APP, None, AT).unwrap().captured_at,
        AT,
        "no capture time: the time the round ended"
    );
}

/// Finding 7: Evidence an action brings itself must be for the session's target.
#[tokio::test]
async fn evidence_for_another_target_than_the_sessions_is_refused() {
    let rig = rig();
    let session = Session::builder(Arc::clone(&rig.runtime), full_authorizer())
        .clock(Arc::new(rig.clock.clone()))
        .target("com.example.Other", None)
        .build()
        .unwrap();
    let err = session.run(action("elsewhere")).await.err().unwrap();
    assert_eq!(err.field(), Some("target"), "{err}");
    assert_eq!(
        rig.runtime.count(Call::Preview),
        0,
        "refused before the runtime"
    );
}

/// Finding 8: A checkpoint resumes only in a session of the agent and group that
/// suspended it, refused before any runtime call.
#[tokio::test]
async fn a_checkpoint_of_another_agent_is_refused_before_any_call() {
    let rig = rig();
    rig.runtime.script().route = Some(PreviewRoute::NeedsApproval);
    let pending = match rig.session.run(action("ck-agent")).await.unwrap() {
        ChainOutcome::NeedsApproval(pending) => pending,
        _ => panic!("approval required"),
    };
    let grant = rig.runtime.grant(pending.action_digest());
    let approval = Approval::with_grant(
        pending.action_id(),
        pending.action_digest(),
        pending.policy_digest(),
        &grant,
    );
    let id = pending.suspend().await.unwrap();
    let other = Session::builder(Arc::clone(&rig.runtime), full_authorizer())
        .clock(Arc::new(rig.clock.clone()))
        .agent_id("other")
        .checkpoints(Arc::clone(&rig.store))
        .build()
        .unwrap();
    assert!(matches!(
        refusal_of(other.resume(&id, approval.clone()).await),
        CheckpointRefusal::OtherAgent { .. }
    ));
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
    // The agent that suspended it still can.
    assert!(rig.session.resume(&id, approval).await.is_ok());
}

/// Finding 10: A session id of whitespace is no session id.
#[tokio::test]
async fn a_blank_session_id_is_refused_at_build() {
    let rig = rig();
    rig.runtime.act_in("   ", None);
    let err = Session::builder(Arc::clone(&rig.runtime), full_authorizer())
        .build()
        .err()
        .unwrap();
    assert_eq!(err.field(), Some("sessionId"), "{err}");
}

mod over_mcp {
    use super::*;
    use adk_computer_use::{McpRuntimeConfig, ProposedAction};
    use computer_use_server::{CLIPBOARD_APP, Config};

    fn alice() -> adk_computer_use::ScopeAuthorizer {
        adk_computer_use::ScopeAuthorizer::new(
            adk_computer_use::VerifiedIdentity::new("alice", "t").unwrap(),
            ["computer:plan", "computer:execute:background"],
        )
        .unwrap()
    }

    /// 2. A runtime switched to another session after the governed session
    /// was built: every call of the chain stays in the chain's session, so
    /// nothing is split across the two and nothing leaks.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_runtime_switched_to_another_session_does_not_split_the_chain() {
        let (runtime, _approver) = adk_computer_use_testkit::spawn(
            Config::for_principal("alice").with_stats(),
            McpRuntimeConfig::new("alice"),
        )
        .await
        .unwrap();
        runtime.start_session(Some("one"), None).await.unwrap();
        let runtime = Arc::new(runtime);
        let session = Session::builder(Arc::clone(&runtime), alice())
            .target(CLIPBOARD_APP, None)
            .build()
            .unwrap();
        runtime.start_session(Some("two"), None).await.unwrap();
        assert_ne!(runtime.session_id().unwrap(), session.session_id());
        let action = ProposedAction::new(
            "write_clipboard",
            json!({ "text": "hi" }),
            ExecutionMode::Background,
        )
        .with_data_labels([DataLabel::Public]);
        let done = match session.run(action).await.unwrap() {
            ChainOutcome::Completed(done) => done,
            _ => panic!("allowed"),
        };
        assert!(done.performed());
        assert_eq!(done.receipt().session_id, session.session_id());
        let stats = session.shutdown().await;
        assert_eq!(stats.leaked(), 0, "{stats:?}");
        let (sim, _) = runtime.call("sim_stats", Default::default()).await.unwrap();
        assert_eq!(sim["activeReservations"], 0, "{sim}");
        assert_eq!(sim["activeLeases"], 0, "{sim}");
    }
}
