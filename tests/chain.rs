//! The governed chain against a scriptable in-process runtime: every rule of
//! the seeds' execution-time revalidation, approvals, resume and cleanup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use adk_computer_use::chain::*;
use adk_computer_use::contracts::*;
use adk_computer_use::{ComputerUseError, VerificationOutcome};
use common::*;
use serde_json::json;
use time::Duration;

async fn pending(rig: &Rig, id: &str) -> PendingApproval<FakeRuntime> {
    rig.runtime.script().route = Some(PreviewRoute::NeedsApproval);
    match rig.session.run(action(id)).await.unwrap() {
        ChainOutcome::NeedsApproval(pending) => pending,
        _ => panic!("expected the action to wait for approval"),
    }
}

#[tokio::test]
async fn observations_run_concurrently_and_exactly_one_mutation_happens() {
    let rig = rig();
    let verified = completed(rig.session.run(action("a-1")).await.unwrap());
    assert!(rig.runtime.max_observe_concurrency.load(Ordering::SeqCst) >= 2);
    assert_eq!(rig.runtime.mutations(), 1);
    assert_eq!(rig.runtime.count(Call::Execute), 1);
    assert_eq!(verified.outcome().status(), "committed_unverified");
    assert!(verified.performed() && !verified.outcome().is_verified());
    assert_eq!(
        rig.runtime.active_reservations(),
        0,
        "the reservation is released after verification"
    );
    assert_eq!(
        rig.session.release_stats().reservations.explicit_released,
        1
    );
}

#[tokio::test]
async fn a_digest_postcondition_with_matching_evidence_is_verified() {
    let rig = rig();
    let digest = format!("sha256:{}", "ab".repeat(32));
    rig.runtime.script().evidence = Some(json!({ "satisfied": true, "observedDigest": digest }));
    let post = ActionPostcondition::try_from(PostconditionFields::UiElement {
        role: Some("AXTextField".into()),
        label: None,
        exists: true,
        value_digest: Some(digest.clone()),
    })
    .unwrap();
    let verified = completed(
        rig.session
            .run(action("a-2").with_postcondition(post))
            .await
            .unwrap(),
    );
    assert_eq!(verified.outcome(), &VerificationOutcome::Verified);
    assert_eq!(verified.receipt_id(), "receipt-a-2");
}

#[tokio::test]
async fn an_approval_required_action_reserves_leases_and_mutates_nothing() {
    let rig = rig();
    let pending = pending(&rig, "a-3").await;
    assert_eq!(
        pending.preview().blocker.as_deref(),
        Some("approval_required")
    );
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
    assert_eq!(rig.runtime.count(Call::Lease), 0);
    assert_eq!(rig.runtime.mutations(), 0);
}

#[tokio::test]
async fn a_blocked_action_carries_its_blocker_and_reasons() {
    let rig = rig();
    rig.runtime.script().route = Some(PreviewRoute::Blocked("foreground_required"));
    rig.runtime.script().preview = Some(Arc::new(|p: &mut ActionPreview| {
        p.policy.reasons = vec!["the policy wants the foreground".into()];
    }));
    match rig.session.run(action("a-4")).await.unwrap() {
        ChainOutcome::Blocked(blocked) => {
            assert_eq!(blocked.blocker(), "foreground_required");
            assert_eq!(
                blocked.reasons(),
                ["the policy wants the foreground".to_owned()]
            );
        }
        _ => panic!("expected a block"),
    }
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
}

#[tokio::test]
async fn resume_executes_only_the_original_digest_with_the_exact_grant() {
    let rig = rig();
    let pending = pending(&rig, "a-5").await;
    let digest = pending.action_digest().to_owned();
    let id = pending.suspend().await.unwrap();
    let grant = rig.runtime.grant(&digest);

    let approved = rig
        .session
        .resume(&id, Approval::with_grant("a-5", &digest, POLICY, &grant))
        .await
        .unwrap();
    assert_eq!(approved.preview().envelope.args_digest, digest);
    let verified = approved.complete().await.unwrap();
    assert!(verified.performed());
    assert_eq!(rig.runtime.truth().grant_ids_seen, vec![Some(grant)]);
    assert_eq!(rig.runtime.mutations(), 1);
}

#[tokio::test]
async fn runtime_held_approval_passes_no_grant() {
    let rig = rig();
    let pending = pending(&rig, "a-6").await;
    let approval = Approval::from_json(&json!({
        "actionId": pending.action_id(),
        "actionDigest": pending.action_digest(),
        "policyDigest": pending.policy_digest(),
        "runtimeApproved": true,
    }))
    .unwrap();
    let _verified = pending.approve(approval).unwrap().complete().await.unwrap();
    assert_eq!(rig.runtime.truth().grant_ids_seen, vec![None]);
}

#[tokio::test]
async fn changed_digests_are_rejected_before_any_mutation() {
    let rig = rig();
    let p = pending(&rig, "a-7").await;
    let err = p
        .approve(Approval::runtime_held("a-7", "f".repeat(64), POLICY))
        .err()
        .unwrap();
    assert!(matches!(
        err,
        ComputerUseError::IdentityMismatch {
            object: "Approval",
            field: "actionDigest",
            ..
        }
    ));

    let p = pending(&rig, "a-7").await;
    let digest = p.action_digest().to_owned();
    let err = p
        .approve(Approval::runtime_held("a-7", digest, "policy-v2"))
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            ComputerUseError::IdentityMismatch {
                field: "policyDigest",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(rig.runtime.mutations(), 0);
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
}

#[tokio::test]
async fn ambiguous_authority_is_rejected() {
    let digest = "a".repeat(64);
    let both = json!({"actionId": "a", "actionDigest": digest, "policyDigest": POLICY, "grantId": "g", "runtimeApproved": true});
    let neither = json!({"actionId": "a", "actionDigest": digest, "policyDigest": POLICY});
    let unknown = json!({"actionId": "a", "actionDigest": digest, "policyDigest": POLICY, "grantId": "g", "token": "secret"});
    let falsy = json!({"actionId": "a", "actionDigest": digest, "policyDigest": POLICY, "runtimeApproved": false});
    let anonymous = json!({"actionDigest": digest, "policyDigest": POLICY, "grantId": "g"});
    for bad in [both, neither, unknown, falsy, anonymous] {
        assert!(Approval::from_json(&bad).is_err(), "{bad}");
    }
    let grant = Approval::from_json(
        &json!({"actionId": "a", "actionDigest": digest, "policyDigest": POLICY, "grantId": "g"}),
    )
    .unwrap();
    assert_eq!(grant.grant_id(), Some("g"));
}

#[tokio::test]
async fn replaced_or_tampered_checkpoints_are_rejected_before_reservation() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileCheckpointStore::new(dir.path(), key()).unwrap());
    let rig = rig_on(store.clone());
    let pending_a = pending(&rig, "a-8").await;
    let approval = Approval::runtime_held(
        pending_a.action_id(),
        pending_a.action_digest(),
        pending_a.policy_digest(),
    );
    let id = pending_a.suspend().await.unwrap();

    // A second preview for the same id is never written over the first.
    let again = pending(&rig, "a-8").await;
    assert_eq!(refusal_of(again.suspend().await), CheckpointRefusal::Exists);

    let path = store.path_of(&id);
    let original = std::fs::read_to_string(&path).unwrap();

    // Tampering with the sealed preview breaks the seal.
    std::fs::write(&path, original.replace("write_clipboard", "delete_file__")).unwrap();
    assert_eq!(
        refusal_of(rig.session.resume(&id, approval.clone()).await),
        CheckpointRefusal::SealBroken
    );

    // A second, validly sealed record appended under the id is a replacement.
    std::fs::write(&path, format!("{original}{original}")).unwrap();
    assert_eq!(
        refusal_of(rig.session.resume(&id, approval.clone()).await),
        CheckpointRefusal::Replaced { records: 2 }
    );

    // A checkpoint of another session fails, even with the same key and
    // the same store.
    std::fs::write(&path, &original).unwrap();
    rig.runtime.act_in("session-2", None);
    let other = Session::builder(Arc::clone(&rig.runtime), full_authorizer())
        .clock(Arc::new(rig.clock.clone()))
        .checkpoints(store.clone())
        .build()
        .unwrap();
    rig.runtime.act_in(SESSION, None);
    assert!(matches!(
        refusal_of(other.resume(&id, approval.clone()).await),
        CheckpointRefusal::OtherSession { .. }
    ));

    // The same files opened with another key: refused.
    let foreign_store = Arc::new(
        FileCheckpointStore::new(dir.path(), SealingKey::new(vec![9u8; 32]).unwrap()).unwrap(),
    );
    let foreign = Session::builder(Arc::clone(&rig.runtime), full_authorizer())
        .clock(Arc::new(rig.clock.clone()))
        .agent_id("executor")
        .checkpoints(foreign_store)
        .build()
        .unwrap();
    assert_eq!(
        refusal_of(foreign.resume(&id, approval.clone()).await),
        CheckpointRefusal::SealBroken
    );

    assert_eq!(rig.runtime.count(Call::Reserve), 0);
    // The untouched file still resumes.
    let _approved = rig.session.resume(&id, approval).await.unwrap();
}

#[tokio::test]
async fn checkpoint_ids_are_validated_and_keys_are_not_printed() {
    assert!("../../etc/passwd".parse::<CheckpointId>().is_err());
    assert!(
        "0123456789abcdef0123456789abcdef"
            .parse::<CheckpointId>()
            .is_ok()
    );
    assert!(SealingKey::new(vec![1u8; 31]).is_err());
    assert!(!format!("{:?}", key()).contains('7'));
}

fn envelope_expired(err: &ComputerUseError) -> bool {
    matches!(
        err,
        ComputerUseError::Expired {
            object: "ActionEnvelope",
            ..
        }
    )
}

#[tokio::test]
async fn an_expired_preview_is_rejected_before_reservation() {
    let rig = rig();
    rig.runtime.script().envelope = Some(Arc::new(|e: &mut ActionEnvelope| {
        e.expires_at = "2026-07-13T09:59:59Z".into();
        e.proposed_at = "2026-07-13T09:59:00Z".into();
    }));
    let err = rig.session.run(action("a-9")).await.err().unwrap();
    assert!(envelope_expired(&err), "{err}");
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
}

#[tokio::test]
async fn a_preview_that_expires_while_waiting_for_approval_is_refused() {
    let rig = rig();
    let pending = pending(&rig, "a-10").await;
    let approval = Approval::runtime_held(
        pending.action_id(),
        pending.action_digest(),
        pending.policy_digest(),
    );
    rig.clock.advance(Duration::seconds(31));
    assert!(matches!(
        pending.approve(approval).err().unwrap(),
        ComputerUseError::Expired { .. }
    ));
}

#[tokio::test]
async fn expiry_during_lease_acquisition_is_caught_at_execute() {
    let rig = rig();
    rig.runtime
        .script()
        .advance_clock_on
        .insert(Call::Lease, Duration::seconds(31));
    rig.runtime.script().lease = Some(Arc::new(|l: &mut ControlLease| {
        l.expires_at = "2026-07-13T10:05:00Z".into();
    }));
    let err = rig.session.run(action("a-11")).await.err().unwrap();
    assert!(envelope_expired(&err), "{err}");
    assert_eq!(rig.runtime.count(Call::Execute), 0);
    assert_eq!(rig.runtime.active_reservations(), 0);
}

#[tokio::test]
async fn mismatched_answers_are_rejected_and_the_reservation_released() {
    type Setup = Box<dyn Fn(&FakeRuntime)>;
    let cases: Vec<(&str, &str, Setup)> = vec![
        (
            "TargetReservation",
            "intentId",
            Box::new(|rt| {
                rt.script().reservation = Some(Arc::new(|r: &mut TargetReservation| {
                    r.intent_id = "other".into()
                }))
            }),
        ),
        (
            "TargetReservation",
            "sessionId",
            Box::new(|rt| {
                rt.script().reservation = Some(Arc::new(|r: &mut TargetReservation| {
                    r.session_id = "other".into()
                }))
            }),
        ),
        (
            "ControlLease",
            "principalId",
            Box::new(|rt| {
                rt.script().lease = Some(Arc::new(|l: &mut ControlLease| {
                    l.principal_id = "mallory".into()
                }))
            }),
        ),
        (
            "ControlLease",
            "actionsUsed",
            Box::new(|rt| {
                rt.script().lease = Some(Arc::new(|l: &mut ControlLease| l.actions_used = 1))
            }),
        ),
        (
            "ExecutionReceipt",
            "actionDigest",
            Box::new(|rt| {
                rt.script().receipt = Some(Arc::new(|r: &mut ExecutionReceipt| {
                    r.action_digest = "0".repeat(64)
                }))
            }),
        ),
        (
            "ExecutionReceipt",
            "sessionId",
            Box::new(|rt| {
                rt.script().receipt = Some(Arc::new(|r: &mut ExecutionReceipt| {
                    r.session_id = "other".into()
                }))
            }),
        ),
    ];
    for (object, field, setup) in cases {
        let rig = rig();
        setup(&rig.runtime);
        let err = rig.session.run(action("a-12")).await.err().unwrap();
        assert_eq!(err.field(), Some(field), "{object}: {err}");
        assert!(err.to_string().contains(object), "{err}");
        assert_eq!(
            rig.runtime.active_reservations(),
            0,
            "{object}.{field} left a reservation"
        );
        assert_eq!(rig.runtime.truth().releases.len(), 1);
        if object != "ExecutionReceipt" {
            assert_eq!(rig.runtime.mutations(), 0, "{object}.{field} mutated");
        }
    }
}

#[tokio::test]
async fn release_runs_on_lease_failure() {
    {
        let call = Call::Lease;
        let rig = rig();
        let refusal = ComputerUseError::Refused {
            operation: "x".into(),
            code: "lease_conflict".into(),
            message: "busy".into(),
            details: None,
        };
        rig.runtime.script().fail.insert(call, refusal.clone());
        let err = rig.session.run(action("a-13")).await.err().unwrap();
        assert_eq!(
            err, refusal,
            "the primary failure stays primary when cleanup succeeds"
        );
        assert_eq!(err.refusal_code(), Some("lease_conflict"));
        assert_eq!(rig.runtime.active_reservations(), 0);
        assert_eq!(
            rig.session.release_stats().reservations.explicit_released,
            1
        );
    }
}

#[tokio::test]
async fn a_verification_that_fails_still_ends_the_chain_and_releases_everything() {
    let rig = rig();
    rig.runtime.script().fail.insert(
        Call::Verify,
        ComputerUseError::Refused {
            operation: "verify".into(),
            code: "busy".into(),
            message: "later".into(),
            details: None,
        },
    );
    let verified = completed(rig.session.run(action("a-13v")).await.unwrap());
    assert!(verified.performed());
    assert_eq!(verified.outcome().status(), "committed_unverified");
    assert_eq!(rig.runtime.active_reservations(), 0);
    assert!(rig.runtime.truth().active_leases.is_empty());
}

#[tokio::test]
async fn a_primary_and_a_cleanup_failure_make_one_deterministic_error() {
    let mut seen = Vec::new();
    for _ in 0..3 {
        let rig = rig();
        rig.runtime.script().fail.insert(
            Call::Lease,
            ComputerUseError::Transport {
                operation: "acquire_lease".into(),
                message: "reset".into(),
            },
        );
        rig.runtime.script().fail.insert(
            Call::Release,
            ComputerUseError::Refused {
                operation: "release_target".into(),
                code: "reservation_not_active".into(),
                message: "gone".into(),
                details: None,
            },
        );
        let err = rig.session.run(action("a-14")).await.err().unwrap();
        match &err {
            ComputerUseError::WithCleanup { primary, cleanup } => {
                assert!(matches!(**primary, ComputerUseError::Transport { .. }));
                assert_eq!(cleanup.refusal_code(), Some("reservation_not_active"));
            }
            other => panic!("expected both failures, got {other:?}"),
        }
        seen.push(err.to_string());
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]));
    assert!(seen[0].starts_with("transport failure during acquire_lease"));
}

#[tokio::test]
async fn a_cleanup_failure_after_success_is_reported() {
    let rig = rig();
    rig.runtime.script().fail.insert(
        Call::Release,
        ComputerUseError::Transport {
            operation: "release_target".into(),
            message: "reset".into(),
        },
    );
    let err = rig.session.run(action("a-15")).await.err().unwrap();
    match err {
        ComputerUseError::CleanupAfterSuccess {
            status, receipt_id, ..
        } => {
            assert_eq!(status, "committed_unverified");
            assert_eq!(receipt_id, "receipt-a-15");
        }
        other => panic!("expected the cleanup failure to be reported, got {other:?}"),
    }
    assert_eq!(rig.runtime.mutations(), 1);
}

#[tokio::test]
async fn a_retry_after_a_post_commit_crash_does_not_duplicate_the_mutation() {
    let rig = rig();
    rig.runtime.script().crash_once = Some(Crash::AfterCommit);
    // The connection broke during the mutating call: the outcome is unknown,
    // and the error says so and names the action id a safe retry reuses.
    match rig.session.run(action("a-16")).await {
        Err(ComputerUseError::OutcomeUnknown { action_id, cause }) => {
            assert_eq!(action_id, "a-16");
            assert!(matches!(*cause, ComputerUseError::Transport { .. }));
        }
        Err(other) => panic!("expected an unknown outcome, got {other}"),
        Ok(_) => panic!("expected an unknown outcome, the chain succeeded"),
    }
    assert_eq!(rig.runtime.mutations(), 1);
    assert_eq!(rig.runtime.active_reservations(), 0);
    let verified = completed(rig.session.run(action("a-16")).await.unwrap());
    assert!(verified.performed());
    assert_eq!(
        rig.runtime.mutations(),
        1,
        "the retry replayed the stored receipt"
    );
}

#[tokio::test]
async fn a_retry_after_a_pre_effect_crash_executes_exactly_once() {
    let rig = rig();
    rig.runtime.script().crash_once = Some(Crash::BeforeEffect);
    assert!(rig.session.run(action("a-17")).await.is_err());
    assert_eq!(rig.runtime.mutations(), 0);
    let _verified = completed(rig.session.run(action("a-17")).await.unwrap());
    assert_eq!(rig.runtime.mutations(), 1);
}

#[tokio::test]
async fn a_dropped_chain_still_has_its_reservation_released_by_the_reaper() {
    let Rig {
        runtime, session, ..
    } = rig();
    runtime.script().hold.insert(Call::Lease);
    let session = Arc::new(session);
    let chain = {
        let session = Arc::clone(&session);
        tokio::spawn(async move { session.run(action("a-18")).await.map(|_| ()) })
    };
    runtime.held.notified().await;
    assert_eq!(runtime.active_reservations(), 1);
    chain.abort();
    assert!(chain.await.unwrap_err().is_cancelled());
    let session = Arc::try_unwrap(session).unwrap();
    let stats = session.shutdown().await;
    assert_eq!(stats.reservations.queued, 1);
    assert_eq!(stats.reservations.reaped, 1);
    assert_eq!(stats.leaked(), 0);
    assert_eq!(runtime.active_reservations(), 0);
    assert_eq!(runtime.mutations(), 0);
}

#[tokio::test]
async fn a_timed_out_chain_leaks_nothing_after_shutdown() {
    let Rig {
        runtime, session, ..
    } = rig();
    // Held while giving the reservation back: the timeout drops the
    // release in flight.
    runtime.script().hold.insert(Call::Release);
    let timed_out = tokio::time::timeout(
        std::time::Duration::from_millis(20),
        session.run(action("a-19")),
    )
    .await;
    assert!(timed_out.is_err());
    assert_eq!(runtime.mutations(), 1, "execute ran before the hold");
    // The reaper's own release of the dropped one is not held.
    runtime.script().hold.clear();
    let stats = session.shutdown().await;
    assert_eq!(
        (
            stats.reservations.queued,
            stats.reservations.reaped,
            stats.leaked()
        ),
        (1, 1, 0)
    );
    assert_eq!(runtime.active_reservations(), 0);
}

#[tokio::test]
async fn a_runtime_without_reservations_still_runs_the_chain() {
    let rig = rig();
    rig.runtime.script().no_reservation = true;
    let _verified = completed(rig.session.run(action("a-20")).await.unwrap());
    assert_eq!(rig.runtime.count(Call::Release), 0);
}

#[tokio::test]
async fn scopes_are_checked_before_observation_and_before_reservation() {
    let rig = rig_with(authorizer(&["computer:plan"]));
    let err = rig.session.run(action("a-21")).await.err().unwrap();
    assert!(
        matches!(&err, ComputerUseError::Unauthorized { required, .. } if required == "computer:execute:background")
    );
    assert_eq!(rig.runtime.count(Call::Reserve), 0);

    let rig = rig_with(authorizer(&["computer:execute:background"]));
    assert!(matches!(
        rig.session.observe().await.err().unwrap(),
        ComputerUseError::Unauthorized { .. }
    ));
}

#[tokio::test]
async fn an_envelope_bound_to_another_principal_is_rejected_at_preview() {
    let first = rig();
    first.runtime.script().envelope = Some(Arc::new(|e: &mut ActionEnvelope| {
        e.principal_id = "mallory".into()
    }));
    let err = first.session.run(action("a-22")).await.err().unwrap();
    assert_eq!(err.field(), Some("principalId"));
    let second = rig();
    second.runtime.script().envelope = Some(Arc::new(|e: &mut ActionEnvelope| {
        e.action_id = "swapped".into()
    }));
    assert_eq!(
        second
            .session
            .run(action("a-22"))
            .await
            .err()
            .unwrap()
            .field(),
        Some("actionId")
    );
}

#[test]
fn a_session_needs_a_tokio_runtime_and_a_session_id() {
    let clock = adk_computer_use::clock::ManualClock::new(start());
    let runtime = FakeRuntime::new(clock);
    let outside = Session::builder(Arc::clone(&runtime), full_authorizer()).build();
    assert!(
        matches!(outside, Err(ComputerUseError::InvalidRequest { ref field, .. }) if field == "runtime")
    );
    let tokio = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    tokio.block_on(async {
        runtime.act_in("", None);
        let empty = Session::builder(Arc::clone(&runtime), full_authorizer()).build();
        assert!(matches!(empty, Err(ComputerUseError::InvalidRequest { ref field, .. }) if field == "sessionId"));
        // Built for one principal over a runtime that acts for another:
        // refused at build, worded from the caller's side.
        runtime.act_in(SESSION, None);
        let bob = adk_computer_use::auth::VerifiedIdentity::new("bob", TENANT).unwrap();
        let authorizer = adk_computer_use::auth::ScopeAuthorizer::new(bob, ["computer:plan"]).unwrap();
        let err = Session::builder(runtime, authorizer).build().err().unwrap();
        assert!(
            matches!(&err, ComputerUseError::BuiltForAnother { what: "principal", session, runtime }
                if session == "bob" && runtime == PRINCIPAL),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            format!("this session was built for principal \"bob\"; the runtime acts for principal \"{PRINCIPAL}\"")
        );
    });
}

#[tokio::test]
async fn session_controls_default_to_unsupported() {
    use adk_computer_use::runtime::ComputerUseRuntime;
    let rig = rig();
    for result in [
        rig.runtime.pause_session(None).await,
        rig.runtime.stop_session(Some("done")).await,
        rig.runtime.emergency_stop(None).await,
    ] {
        assert!(
            matches!(result, Err(ComputerUseError::Unsupported { .. })),
            "{result:?}"
        );
    }
}

#[tokio::test]
async fn an_envelope_of_another_execution_group_is_rejected_at_preview() {
    let rig = rig();
    rig.runtime.act_in(SESSION, Some("group-a"));
    let session = Session::builder(Arc::clone(&rig.runtime), full_authorizer())
        .clock(Arc::new(rig.clock.clone()))
        .build()
        .unwrap();
    rig.runtime.script().envelope = Some(Arc::new(|e: &mut ActionEnvelope| {
        e.execution_group_id = Some("group-b".into());
    }));
    let err = session.run(action("a-40")).await.err().unwrap();
    assert_eq!(err.field(), Some("executionGroupId"), "{err}");
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
}
