//! Upstream's failure scenarios: a runtime that answers wrongly, fails, or
//! crashes, and what the graph leaves behind (nothing held, nothing done
//! twice).

use std::sync::Arc;

use adk_computer_use::contracts::*;
use adk_computer_use::digest::sha256_prefixed;
use adk_computer_use::runtime::NamedEffect;
use adk_graph::{ExecutionConfig, GraphError, State};
use serde_json::json;
use time::Duration;

use crate::common::*;
use crate::support::*;

/// Runs `input` on a fresh thread of an allowed graph over a runtime
/// `script` prepared; the error it ended with, and the runtime.
async fn failing(thread: &str, script: impl FnOnce(&FakeRuntime)) -> (String, Arc<FakeRuntime>) {
    let (graph, runtime, _) = graph(PreviewRoute::Executable);
    script(&runtime);
    let error = graph
        .invoke(input(), ExecutionConfig::new(thread))
        .await
        .expect_err("the run should fail");
    (error.to_string(), runtime)
}

#[tokio::test]
async fn graph_rejects_an_expired_preview_before_reservation_or_mutation() {
    // An envelope that ran out before the chain received it.
    let (error, runtime) = failing("thread-expired-envelope", |rt| {
        rt.script().envelope = Some(Arc::new(|e: &mut ActionEnvelope| {
            e.expires_at = "2026-07-13T09:59:59Z".into();
            e.proposed_at = "2026-07-13T09:59:00Z".into();
        }));
    })
    .await;
    assert!(error.contains("expired"), "{error}");
    assert_eq!(runtime.count(Call::Reserve), 0);
    assert_eq!(runtime.mutations(), 0);
}

#[tokio::test]
async fn graph_rechecks_envelope_expiry_immediately_before_mutation() {
    let (error, runtime) = failing("thread-expired-at-execute", |rt| {
        rt.script()
            .advance_clock_on
            .insert(Call::Lease, Duration::seconds(31));
        rt.script().lease = Some(Arc::new(|l: &mut ControlLease| {
            l.expires_at = "2026-07-13T10:05:00Z".into();
        }));
    })
    .await;
    assert!(error.contains("expired"), "{error}");
    assert_eq!(runtime.count(Call::Reserve), 1);
    assert_eq!(runtime.truth().releases.len(), 1);
    assert_eq!(runtime.mutations(), 0);
}

#[tokio::test]
async fn graph_rejects_a_mismatched_generic_runtime_reservation_and_releases_it() {
    // Upstream changes the reservation's intent id; this chain names the
    // field it finds wrong (here the session), the same check.
    let (error, runtime) = failing("thread-wrong-reservation", |rt| {
        rt.script().reservation = Some(Arc::new(|r: &mut TargetReservation| {
            r.session_id = "other".into();
        }));
    })
    .await;
    assert!(error.contains("sessionId"), "{error}");
    assert_eq!(runtime.count(Call::Reserve), 1);
    assert_eq!(runtime.truth().releases.len(), 1);
    assert_eq!(runtime.mutations(), 0);
}

#[tokio::test]
async fn graph_rejects_a_mismatched_generic_runtime_lease_and_releases_reservation() {
    let (error, runtime) = failing("thread-wrong-lease", |rt| {
        rt.script().lease = Some(Arc::new(|l: &mut ControlLease| {
            l.session_id = "other".into();
        }));
    })
    .await;
    assert!(error.contains("sessionId"), "{error}");
    assert_eq!(runtime.truth().releases.len(), 1);
    assert_eq!(runtime.mutations(), 0);
}

#[tokio::test]
async fn graph_rejects_a_mismatched_generic_runtime_receipt_and_releases_reservation() {
    // Upstream changes the receipt's action digest; here its session.
    let (error, runtime) = failing("thread-wrong-receipt", |rt| {
        rt.script().receipt = Some(Arc::new(|r: &mut ExecutionReceipt| {
            r.session_id = "other".into();
        }));
    })
    .await;
    assert!(error.contains("sessionId"), "{error}");
    assert_eq!(runtime.mutations(), 1);
    assert_eq!(runtime.truth().releases.len(), 1);
}

#[tokio::test]
async fn graph_verifies_the_postcondition_from_the_preview_envelope() {
    // Changed: upstream's fake puts a postcondition in the envelope; here
    // the runtime offers its check of the clipboard and the chain derives
    // the postcondition from the action's own text, then judges the
    // evidence against it.
    let (graph, runtime, _) = graph(PreviewRoute::Executable);
    runtime.script().effect_postcondition = Some(Arc::new(|effect: &NamedEffect<'_>| {
        matches!(effect, NamedEffect::ClipboardText { .. }).then(|| {
            ActionPostcondition::try_from(PostconditionFields::UiElement {
                role: Some("AXTextArea".into()),
                label: Some("Clipboard".into()),
                exists: true,
                value_digest: Some(effect.expected_digest()),
            })
            .unwrap()
        })
    }));
    runtime.script().evidence = Some(json!({ "observedDigest": sha256_prefixed("hello") }));
    let output = graph
        .invoke(input(), ExecutionConfig::new("thread-postcondition"))
        .await
        .unwrap();
    assert_eq!(output.get("verified"), Some(&json!(true)));
    assert_eq!(output.get("committed"), Some(&json!(true)));
    assert_eq!(output["result"]["status"], "completed");
}

#[tokio::test]
async fn graph_releases_reservation_when_lease_acquisition_fails() {
    let (error, runtime) = failing("thread-lease-failure", |rt| {
        rt.script().fail.insert(
            Call::Lease,
            refusal("acquire_lease", "injected_lease_failure"),
        );
    })
    .await;
    assert!(error.contains("injected_lease_failure"), "{error}");
    assert_eq!(runtime.truth().releases.len(), 1);
    assert_eq!(runtime.mutations(), 0);
}

#[tokio::test]
async fn graph_releases_reservation_when_verification_fails() {
    // Changed: upstream ends the run with the verifier's error. After the
    // acting call nothing may read as not performed: here the run ends
    // `committed` and unverified, the failure its detail.
    let (graph, runtime, _) = graph(PreviewRoute::Executable);
    runtime.script().fail.insert(
        Call::Verify,
        refusal("verify", "injected_verification_failure"),
    );
    let output = graph
        .invoke(input(), ExecutionConfig::new("thread-verify-failure"))
        .await
        .unwrap();
    assert_eq!(output.get("committed"), Some(&json!(true)));
    assert_eq!(output.get("verified"), Some(&json!(false)));
    assert_eq!(runtime.mutations(), 1);
    assert_eq!(runtime.truth().releases.len(), 1);
}

#[tokio::test]
async fn graph_reports_primary_and_cleanup_failures_deterministically() {
    let (error, runtime) = failing("thread-double-failure", |rt| {
        rt.script().fail.insert(
            Call::Lease,
            refusal("acquire_lease", "injected_lease_failure"),
        );
        rt.script().fail.insert(
            Call::Release,
            refusal("release_target", "injected_cleanup_failure"),
        );
    })
    .await;
    // Changed: the primary failure is the error; the failed release is
    // left to the reservation's guard, which counts it (upstream folds
    // both into one message).
    assert!(error.contains("injected_lease_failure"), "{error}");
    assert_eq!(runtime.count(Call::Release), 1);
    assert_eq!(runtime.mutations(), 0);
}

#[tokio::test]
async fn graph_reports_cleanup_failure_after_successful_verification() {
    let (error, runtime) = failing("thread-cleanup-failure", |rt| {
        rt.script().fail.insert(
            Call::Release,
            refusal("release_target", "injected_cleanup_failure"),
        );
    })
    .await;
    assert!(error.contains("cleanup failed"), "{error}");
    assert!(error.contains("injected_cleanup_failure"), "{error}");
    assert!(!error.contains("primary failure"), "{error}");
    // Ours adds: the error still says the action was performed.
    assert!(error.contains("performed: true"), "{error}");
    assert_eq!(runtime.mutations(), 1);
    assert_eq!(runtime.count(Call::Release), 1);
}

fn with_action_id(id: &str) -> State {
    let mut state = input();
    state.insert(
        "proposed_action".into(),
        json!({ "tool": "write_clipboard", "arguments": { "text": "hello" }, "action_id": id }),
    );
    state
}

#[tokio::test]
async fn graph_retry_after_post_commit_crash_does_not_duplicate_mutation() {
    // Changed: the retry names the same action id (upstream's fake
    // recognises a repeat by its digest; this runtime by the id).
    let (graph, runtime, _) = graph(PreviewRoute::Executable);
    runtime.script().crash_once = Some(Crash::AfterCommit);
    let first = graph
        .invoke(
            with_action_id("a-1"),
            ExecutionConfig::new("thread-crash-1"),
        )
        .await;
    assert!(matches!(first, Err(GraphError::NodeExecutionFailed { .. })));
    let output = graph
        .invoke(
            with_action_id("a-1"),
            ExecutionConfig::new("thread-crash-2"),
        )
        .await
        .unwrap();
    assert_eq!(output.get("committed"), Some(&json!(true)));
    assert_eq!(output.get("verified"), Some(&json!(false)));
    assert_eq!(runtime.mutations(), 1);
    assert_eq!(runtime.truth().releases.len(), 2);
}

#[tokio::test]
async fn graph_retry_after_pre_effect_crash_executes_exactly_once() {
    let (graph, runtime, _) = graph(PreviewRoute::Executable);
    runtime.script().crash_once = Some(Crash::BeforeEffect);
    let first = graph
        .invoke(
            with_action_id("a-2"),
            ExecutionConfig::new("thread-pre-effect-1"),
        )
        .await;
    assert!(first.is_err());
    assert_eq!(runtime.mutations(), 0);
    let output = graph
        .invoke(
            with_action_id("a-2"),
            ExecutionConfig::new("thread-pre-effect-2"),
        )
        .await
        .unwrap();
    assert_eq!(output.get("committed"), Some(&json!(true)));
    assert_eq!(output.get("verified"), Some(&json!(false)));
    assert_eq!(runtime.mutations(), 1);
    assert_eq!(runtime.truth().releases.len(), 2);
}

#[tokio::test]
async fn cancellation_bridge_revokes_runtime_before_interrupting_adk() {
    use adk_computer_use::graph::CancellationBridge;
    let runtime = rig().runtime;
    runtime.script().pause_offered = true;
    let seen = Arc::clone(&runtime);
    // The interrupter checks that the runtime's pause came first.
    let bridge = CancellationBridge::new(
        Arc::clone(&runtime),
        Arc::new(move |session: &str| {
            session == "adk-session" && seen.truth().controls == ["pause:user_takeover"]
        }),
    );
    assert!(bridge.pause("adk-session", "user_takeover").await.unwrap());
    // A runtime that refuses the pause: the run is still interrupted, and
    // the error says the revocation failed.
    runtime.script().fail.insert(
        Call::Pause,
        refusal("pause_session", "injected_pause_failure"),
    );
    let interrupted = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&interrupted);
    let bridge = CancellationBridge::new(
        Arc::clone(&runtime),
        Arc::new(move |_: &str| {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            true
        }),
    );
    let err = bridge.pause("adk-session", "again").await.unwrap_err();
    assert!(err.to_string().contains("injected_pause_failure"), "{err}");
    assert!(interrupted.load(std::sync::atomic::Ordering::SeqCst));
}
