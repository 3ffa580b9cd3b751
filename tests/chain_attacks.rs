//! The one-door findings, each tried the way a hostile caller or a hostile
//! runtime would, against the scriptable runtime. Every test here is named
//! after what it proves (`chain::attacks` maps each attack to its tests); the
//! compile-time halves are in `ui-tests/fail/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration as StdDuration;

use adk_computer_use::ComputerUseError;
use adk_computer_use::chain::*;
use adk_computer_use::clock::ManualClock;
use adk_computer_use::contracts::*;
use common::*;
use serde_json::json;

async fn pending(rig: &Rig, id: &str) -> PendingApproval<FakeRuntime> {
    rig.runtime.script().route = Some(PreviewRoute::NeedsApproval);
    match rig.session.run(action(id)).await.unwrap() {
        ChainOutcome::NeedsApproval(pending) => pending,
        _ => panic!("expected the action to wait for approval"),
    }
}

async fn approved(rig: &Rig, id: &str) -> Approved<FakeRuntime> {
    allowed(&rig.session, id).await
}

/// Walks `session` to `Approved` for an action policy allows.
async fn allowed(session: &Session<FakeRuntime>, id: &str) -> Approved<FakeRuntime> {
    let previewed = session
        .observe()
        .await
        .unwrap()
        .preview(&action(id))
        .await
        .unwrap();
    match previewed.route() {
        Route::Allowed(approved) => approved,
        _ => panic!("expected the action to be allowed"),
    }
}

/// Walks the rig's session to `Leased`.
async fn leased(rig: &Rig, id: &str) -> Leased<FakeRuntime> {
    approved(rig, id)
        .await
        .reserve()
        .await
        .unwrap()
        .lease()
        .await
        .unwrap()
}

/// A session over `runtime` whose releases give up after 50 ms.
fn impatient_session(runtime: &Arc<FakeRuntime>, clock: ManualClock) -> Session<FakeRuntime> {
    executor(runtime, clock)
        .release_timeout(StdDuration::from_millis(50))
        .build()
        .unwrap()
}

fn held_approval(pending: &PendingApproval<FakeRuntime>) -> Approval {
    Approval::runtime_held(
        pending.action_id(),
        pending.action_digest(),
        pending.policy_digest(),
    )
}

// 1. Mutation without `Leased` --------------------------------------------

#[tokio::test]
async fn a_plan_only_session_cannot_mutate() {
    let rig = rig_with(authorizer(&["computer:plan"]));
    let err = run_err(&rig.session, action("d-1")).await;
    assert!(
        matches!(err, ComputerUseError::Unauthorized { .. }),
        "{err}"
    );
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
    assert_eq!(rig.runtime.count(Call::Execute), 0);
    assert_eq!(rig.runtime.mutations(), 0);
}

// 2. One approval, many executions ----------------------------------------

#[tokio::test]
async fn a_checkpoint_resumes_once_in_memory() {
    let rig = rig();
    let (id, approval) = suspended(&rig, "d-2").await;
    let first = rig.session.resume(&id, approval.clone()).await.unwrap();
    for _ in 0..3 {
        assert_eq!(
            refusal_of(rig.session.resume(&id, approval.clone()).await),
            CheckpointRefusal::ResumedHere
        );
    }
    let _verified = first.complete().await.unwrap();
    assert_eq!(rig.runtime.count(Call::Reserve), 1);
    assert_eq!(rig.runtime.count(Call::Execute), 1);
    assert_eq!(rig.runtime.mutations(), 1);
}

#[tokio::test]
async fn racing_resumes_of_one_checkpoint_file_yield_one_approved_stage() {
    let dir = tempfile::tempdir().unwrap();
    let rig = rig_on(Arc::new(
        FileCheckpointStore::new(dir.path(), key()).unwrap(),
    ));
    let (id, approval) = suspended(&rig, "d-3").await;
    // Each contender is a session of its own over its own opening of the
    // directory, as separate processes would be; they race on the same file.
    const CONTENDERS: usize = 8;
    let barrier = Arc::new(tokio::sync::Barrier::new(CONTENDERS));
    let mut tasks = Vec::new();
    for _ in 0..CONTENDERS {
        let store = Arc::new(FileCheckpointStore::new(dir.path(), key()).unwrap());
        let session = executor(&rig.runtime, rig.clock.clone())
            .checkpoints(store)
            .build()
            .unwrap();
        let (barrier, id, approval) = (Arc::clone(&barrier), id.clone(), approval.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            session.resume(&id, approval).await
        }));
    }
    let mut outcomes: Vec<Result<Approved<FakeRuntime>, ComputerUseError>> = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    let (won, lost): (Vec<_>, Vec<_>) = outcomes.into_iter().partition(Result::is_ok);
    assert_eq!(won.len(), 1, "exactly one resume may win");
    for err in lost.into_iter().filter_map(Result::err) {
        assert_eq!(
            err.checkpoint_refusal(),
            Some(&CheckpointRefusal::AlreadyResumed),
            "a losing resume is refused as already resumed: {err}"
        );
    }
    // None of the losers reached the runtime.
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
    for approved in won.into_iter().flatten() {
        let _verified = approved.complete().await.unwrap();
    }
    assert_eq!(rig.runtime.mutations(), 1);
}

#[tokio::test]
async fn a_refused_resume_does_not_spend_the_checkpoint() {
    let rig = rig();
    let (id, good) = suspended(&rig, "d-4").await;
    let wrong = Approval::runtime_held("d-4", "f".repeat(64), POLICY);
    assert!(rig.session.resume(&id, wrong).await.is_err());
    // The person's real approval still resumes it, once.
    let _approved = rig.session.resume(&id, good).await.unwrap();
}

// 3. False `Verified` -------------------------------------------------------

fn digest_postcondition() -> ActionPostcondition {
    ActionPostcondition::try_from(PostconditionFields::UiElement {
        role: Some("text".into()),
        label: Some("clipboard".into()),
        exists: true,
        value_digest: Some(format!("sha256:{}", "a".repeat(64))),
    })
    .unwrap()
}

#[tokio::test]
async fn an_envelope_that_swaps_the_postcondition_is_refused() {
    let rig = rig();
    rig.runtime.script().envelope = Some(Arc::new(|e: &mut ActionEnvelope| {
        e.postcondition = Some(
            ActionPostcondition::try_from(PostconditionFields::Window {
                window_id: WINDOW,
                exists: true,
            })
            .unwrap(),
        );
    }));
    rig.runtime.script().evidence = Some(json!({ "satisfied": true }));
    let proposed = action("d-5").with_postcondition(digest_postcondition());
    let err = run_err(&rig.session, proposed).await;
    assert_identity_mismatch(&err, "ActionEnvelope", "postcondition");
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
    assert_eq!(rig.runtime.mutations(), 0);
}

#[tokio::test]
async fn an_envelope_that_adds_a_postcondition_is_refused() {
    let rig = rig();
    rig.runtime.script().envelope = Some(Arc::new(|e: &mut ActionEnvelope| {
        e.postcondition = Some(digest_postcondition());
    }));
    let err = run_err(&rig.session, action("d-6")).await;
    assert_eq!(err.field(), Some("postcondition"), "{err}");
}

/// The file an input action named as its resource, and the check on it.
fn file_named(path: &str) -> ActionResourceContext {
    ActionResourceContext {
        filesystem_path: Some(path.into()),
        ..ActionResourceContext::default()
    }
}

#[tokio::test]
async fn an_envelope_that_drops_or_moves_the_named_resource_is_refused() {
    for (id, carried) in [("d-6a", None), ("d-6b", Some(file_named("/tmp/other.txt")))] {
        let rig = rig();
        rig.runtime.script().envelope = Some(Arc::new(move |e: &mut ActionEnvelope| {
            e.resource = carried.clone();
        }));
        rig.runtime.script().evidence = Some(json!({ "satisfied": true }));
        let proposed = action(id).with_resource(file_named("/tmp/notes.txt"));
        let err = run_err(&rig.session, proposed).await;
        match &err {
            ComputerUseError::IdentityMismatch {
                object: "ActionEnvelope",
                field: "resource.filesystemPath",
                expected,
                ..
            } => assert_eq!(expected, "/tmp/notes.txt"),
            other => panic!("expected the resource refused, got {other}"),
        }
        assert_eq!(rig.runtime.count(Call::Reserve), 0);
        assert_eq!(rig.runtime.mutations(), 0);
    }
    // Carried as named, the same action runs.
    let rig = rig();
    let proposed = action("d-6c").with_resource(file_named("/tmp/notes.txt"));
    assert!(rig.session.run(proposed).await.is_ok());
    assert_eq!(rig.runtime.mutations(), 1);
}

// 4. Approval skipped: the route table, every cell ---------------------------

/// The table in `protocol::route`, written out again independently.
fn expected_route(
    decision: PolicyVerdict,
    blocker: Option<&str>,
    executable: bool,
) -> &'static str {
    match (decision, blocker, executable) {
        (PolicyVerdict::Deny, _, _) => "blocked",
        (_, Some("approval_required"), _) => "approval",
        (_, Some(_), _) => "blocked",
        (PolicyVerdict::Allow, None, true) => "allowed",
        (PolicyVerdict::Confirm, None, true) => "approval",
        (_, None, false) => "blocked",
    }
}

#[tokio::test]
async fn the_route_fails_closed_in_every_cell_of_the_table() {
    let mut cells = 0;
    for decision in [
        PolicyVerdict::Allow,
        PolicyVerdict::Confirm,
        PolicyVerdict::Deny,
    ] {
        for blocker in [None, Some("approval_required"), Some("foreground_required")] {
            for executable in [true, false] {
                let rig = rig();
                rig.runtime.script().preview = Some(Arc::new(move |p: &mut ActionPreview| {
                    p.policy.decision = decision;
                    p.blocker = blocker.map(str::to_owned);
                    p.executable = executable;
                }));
                let outcome = rig.session.run(action("d-7")).await.unwrap();
                let got = match &outcome {
                    ChainOutcome::Completed(_) => "allowed",
                    ChainOutcome::NeedsApproval(_) => "approval",
                    ChainOutcome::Blocked(_) => "blocked",
                };
                let cell = format!("{decision:?} / {blocker:?} / executable {executable}");
                assert_eq!(got, expected_route(decision, blocker, executable), "{cell}");
                let ran = u32::from(got == "allowed");
                assert_eq!(rig.runtime.mutations(), ran, "{cell}");
                assert!(
                    rig.runtime
                        .truth()
                        .grant_ids_seen
                        .iter()
                        .all(Option::is_none),
                    "{cell}"
                );
                cells += 1;
            }
        }
    }
    assert_eq!(cells, 18);
}

#[tokio::test]
async fn an_executable_preview_that_also_asks_for_approval_waits_for_it() {
    let rig = rig();
    rig.runtime.script().preview = Some(Arc::new(|p: &mut ActionPreview| {
        p.executable = true;
        p.blocker = Some("approval_required".into());
        p.policy.decision = PolicyVerdict::Allow;
    }));
    let outcome = rig.session.run(action("d-8")).await.unwrap();
    assert!(matches!(outcome, ChainOutcome::NeedsApproval(_)));
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
    assert_eq!(rig.runtime.mutations(), 0);
}

// 5. The runtime's verdict trusted ------------------------------------------

#[tokio::test]
async fn a_runtime_cannot_verify_a_failed_receipt() {
    let rig = rig();
    rig.runtime.script().gathered = Some(json!({ "satisfied": true }));
    rig.runtime.script().receipt = Some(Arc::new(|r: &mut ExecutionReceipt| {
        r.status = ReceiptStatus::Failed;
    }));
    let verified = completed(rig.session.run(action("d-9")).await.unwrap());
    assert!(!verified.outcome().is_verified());
    assert_eq!(verified.outcome().status(), "verification_failed");
    assert!(!verified.performed());
}

#[tokio::test]
async fn a_runtime_cannot_verify_without_evidence() {
    let rig = rig();
    // Evidence that states nothing: the runtime has no way to say "verified"
    // other than evidence, and the table reads this as no evidence.
    rig.runtime.script().gathered = Some(json!({ "method": "trust me" }));
    let proposed = action("d-10").with_postcondition(digest_postcondition());
    let verified = completed(rig.session.run(proposed).await.unwrap());
    assert_eq!(verified.outcome().status(), "committed_unverified");
}

#[tokio::test]
async fn a_runtime_may_downgrade_the_table() {
    let rig = rig();
    // The receipt's evidence matches; what the runtime gathered afterwards
    // says the postcondition does not hold, and that is what is judged.
    rig.runtime.script().gathered = Some(json!({ "satisfied": false }));
    rig.runtime.script().evidence =
        Some(json!({ "satisfied": true, "observedDigest": format!("sha256:{}", "a".repeat(64)) }));
    let proposed = action("d-11").with_postcondition(digest_postcondition());
    let verified = completed(rig.session.run(proposed).await.unwrap());
    assert_eq!(verified.outcome().status(), "verification_failed");
}

// 6. Foreign lease or reservation accepted ------------------------------------

#[tokio::test]
async fn another_agents_lease_is_refused_even_when_the_envelope_names_no_agent() {
    let rig = rig();
    rig.runtime.script().envelope = Some(Arc::new(|e: &mut ActionEnvelope| {
        e.agent_id = None;
        e.execution_group_id = None;
    }));
    rig.runtime.script().lease = Some(Arc::new(|l: &mut ControlLease| {
        l.agent_id = Some("intruder".into());
    }));
    let err = run_err(&rig.session, action("d-12")).await;
    assert_identity_mismatch(&err, "ControlLease", "agentId");
    assert_eq!(rig.runtime.mutations(), 0);
    assert!(rig.runtime.truth().active_leases.is_empty());
}

#[tokio::test]
async fn another_groups_reservation_is_refused_even_when_the_envelope_names_no_group() {
    let rig = rig();
    rig.runtime.act_in(SESSION, Some("group-a"));
    let session = executor(&rig.runtime, rig.clock.clone()).build().unwrap();
    rig.runtime.script().envelope = Some(Arc::new(|e: &mut ActionEnvelope| {
        e.agent_id = None;
        e.execution_group_id = None;
    }));
    rig.runtime.script().reservation = Some(Arc::new(|r: &mut TargetReservation| {
        r.execution_group_id = Some("group-b".into());
    }));
    let err = run_err(&session, action("d-13")).await;
    assert_identity_mismatch(&err, "TargetReservation", "executionGroupId");
    assert_eq!(rig.runtime.count(Call::Lease), 0);
    assert_eq!(rig.runtime.active_reservations(), 0);
}

// 7. Approval reuse -------------------------------------------------------------

#[tokio::test]
async fn an_approval_of_one_action_does_not_approve_another_with_the_same_arguments() {
    let rig = rig();
    let x = pending(&rig, "d-14x").await;
    let y = pending(&rig, "d-14y").await;
    assert_eq!(x.action_digest(), y.action_digest(), "same arguments");
    let grant = rig.runtime.grant(x.action_digest());
    let for_x = Approval::with_grant(x.action_id(), x.action_digest(), x.policy_digest(), &grant);
    let err = y.approve(for_x.clone()).err().unwrap();
    assert_identity_mismatch(&err, "Approval", "actionId");
    let _verified = x.approve(for_x).unwrap().complete().await.unwrap();
    assert_eq!(rig.runtime.mutations(), 1);
}

// 8. One panic disables reaping ---------------------------------------------------

#[tokio::test]
async fn a_panicking_release_does_not_stop_the_reaper() {
    let rig = rig();
    rig.runtime.script().panic_on_release = true;
    drop(approved(&rig, "d-15").await.reserve().await.unwrap());
    // Wait for the reaper to get to it.
    wait_until(|| rig.session.release_stats().reservations.reap_failed == 1).await;
    assert_eq!(rig.session.release_stats().reservations.reap_failed, 1);
    rig.runtime.script().panic_on_release = false;
    drop(approved(&rig, "d-16").await.reserve().await.unwrap());
    let stats = rig.session.shutdown().await;
    assert_eq!(stats.reservations.queued, 2);
    assert_eq!(
        stats.reservations.reaped, 1,
        "the reaper went on after the panic"
    );
    assert_eq!(stats.reservations.reap_failed, 1);
    assert_eq!(
        stats.leaked(),
        1,
        "the panicked release is not known to have happened"
    );
    assert_eq!(rig.runtime.active_reservations(), 1);
}

#[tokio::test]
async fn a_hanging_release_times_out_and_shutdown_still_returns() {
    let clock = ManualClock::new(start());
    let runtime = FakeRuntime::new(clock.clone());
    let session = impatient_session(&runtime, clock);
    let reserved = reserved_on(&session, "d-17").await;
    // The release never answers (the gate is never opened).
    runtime.script().hold.insert(Call::Release);
    drop(reserved);
    let stats = tokio::time::timeout(StdDuration::from_secs(10), session.shutdown())
        .await
        .expect("shutdown returns although the release hangs");
    assert_eq!(stats.reservations.reap_failed, 1);
}

// 9. `mem::forget` leaks silently ---------------------------------------------------

#[tokio::test]
async fn shutdown_reclaims_what_a_forgotten_stage_holds() {
    let rig = rig();
    let leased = leased(&rig, "d-18").await;
    std::mem::forget(leased);
    assert_eq!(rig.session.held_resources(), 2);
    assert_eq!(rig.runtime.active_reservations(), 1);
    assert_eq!(rig.runtime.truth().active_leases.len(), 1);
    let stats = rig.session.shutdown().await;
    assert_eq!(stats.reservations.reclaimed, 1);
    assert_eq!(stats.leases.reclaimed, 1);
    assert_eq!(stats.leaked(), 0);
    assert_eq!(rig.runtime.active_reservations(), 0);
    assert!(rig.runtime.truth().active_leases.is_empty());
    assert_eq!(rig.runtime.mutations(), 0);
}

#[test]
fn a_reservation_dropped_after_the_reaper_stopped_is_counted_lost_once() {
    let clock = ManualClock::new(start());
    let runtime = FakeRuntime::new(clock.clone());
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (session, reserved) = tokio.block_on(async {
        let session = executor(&runtime, clock).build().unwrap();
        let reserved = reserved_on(&session, "d-19").await;
        (session, reserved)
    });
    // The runtime the reaper ran on is gone, and the reaper with it.
    drop(tokio);
    drop(reserved);
    let stats = session.release_stats();
    assert_eq!(stats.reservations.lost, 1);
    assert_eq!(stats.reservations.queued, 0);
    assert_eq!(stats.leaked(), 1, "a lost reservation is counted once");
}

// 11. The control lease is never released ----------------------------------------

#[tokio::test]
async fn the_lease_is_released_when_the_action_ends_on_every_path() {
    // Success.
    let done = rig();
    let _verified = completed(done.session.run(action("d-20")).await.unwrap());
    assert!(done.runtime.truth().active_leases.is_empty());
    assert_eq!(done.runtime.truth().lease_releases, ["lease-1"]);
    assert_eq!(done.session.release_stats().leases.explicit_released, 1);

    // A dropped `Leased`: the reaper gives it back.
    let dropped = rig();
    let leased = leased(&dropped, "d-21").await;
    drop(leased);
    let runtime = Arc::clone(&dropped.runtime);
    let stats = dropped.session.shutdown().await;
    assert_eq!((stats.leases.queued, stats.leases.reaped), (1, 1));
    assert!(runtime.truth().active_leases.is_empty());

    // A failed mutation.
    let failed = rig();
    failed.runtime.script().fail.insert(
        Call::Execute,
        refused("execute_action", "stale_target", "moved"),
    );
    assert!(failed.session.run(action("d-22")).await.is_err());
    assert!(failed.runtime.truth().active_leases.is_empty());
}

// 12. `committed()` read as "not performed" -------------------------------------------

#[tokio::test]
async fn a_performed_write_with_contradicting_evidence_says_it_was_performed() {
    let rig = rig();
    rig.runtime.script().evidence =
        Some(json!({ "observedDigest": format!("sha256:{}", "b".repeat(64)) }));
    let proposed = action("d-23").with_postcondition(digest_postcondition());
    let verified = completed(rig.session.run(proposed).await.unwrap());
    assert_eq!(verified.outcome().status(), "verification_failed");
    assert!(
        !verified.outcome().is_committed(),
        "the seeds' table is kept"
    );
    assert!(
        verified.performed(),
        "the effect happened: a retry must not run it again"
    );
}

// 13. An unknown outcome looks like a clean failure ------------------------------------

#[tokio::test]
async fn a_refusal_before_the_effect_is_not_an_unknown_outcome() {
    let rig = rig();
    rig.runtime.script().fail.insert(
        Call::Execute,
        refused("execute_action", "lease_conflict", "no"),
    );
    let err = run_err(&rig.session, action("d-24")).await;
    assert_eq!(err.refusal_code(), Some("lease_conflict"), "{err}");
}

#[tokio::test]
async fn a_broken_connection_during_the_mutation_is_an_unknown_outcome() {
    for crash in [Crash::BeforeEffect, Crash::AfterCommit] {
        let rig = rig();
        rig.runtime.script().crash_once = Some(crash);
        let (action_id, _) = unknown_outcome(&rig, "d-25", &format!("{crash:?}")).await;
        assert_eq!(action_id, "d-25", "{crash:?}");
        // The safe retry reuses the id: one effect in all.
        let _verified = completed(rig.session.run(action("d-25")).await.unwrap());
        assert_eq!(rig.runtime.mutations(), 1, "{crash:?}");
    }
}

// What the runtime keeps per preview travels with the stage --------------------------

#[tokio::test]
async fn retained_state_travels_with_the_stage_and_through_a_checkpoint() {
    let rig = rig();
    rig.runtime.script().retained = Some(json!({ "exact": "arguments" }));
    let _verified = completed(rig.session.run(action("d-26")).await.unwrap());
    let (id, approval) = suspended(&rig, "d-27").await;
    rig.runtime.script().retained = None;
    let _verified = rig
        .session
        .resume(&id, approval)
        .await
        .unwrap()
        .complete()
        .await
        .unwrap();
    let seen = rig.runtime.truth().retained_seen.clone();
    assert_eq!(
        seen,
        [
            Some(json!({ "exact": "arguments" })),
            Some(json!({ "exact": "arguments" }))
        ]
    );
}

// Found by the hostile review of this change ----------------------------------

#[tokio::test]
async fn shutdown_racing_a_release_in_flight_releases_each_resource_once() {
    let rig = rig();
    let executed = leased(&rig, "h-1").await.execute().await.unwrap();
    let verify = spawn_held(&rig.runtime, Call::ReleaseLease, executed.verify()).await;
    let Rig {
        runtime, session, ..
    } = rig;
    let stats = session.shutdown().await;
    // The lease in flight is not reclaimed; the reservation, released
    // alongside it, was given back explicitly and is not reclaimed either.
    assert_eq!(stats.leases.reclaimed, 0);
    assert_eq!(stats.reservations.reclaimed, 0);
    assert_eq!(stats.reservations.explicit_released, 1);
    runtime.gate.notify_one();
    let _ = verify.await.unwrap();
    assert_eq!(runtime.truth().lease_releases, ["lease-1"]);
    assert_eq!(
        runtime.truth().releases.len(),
        1,
        "the reservation released once"
    );
}

#[tokio::test]
async fn a_stage_outliving_its_session_takes_no_further_step() {
    let rig = rig();
    let leased = leased(&rig, "h-2").await;
    let Rig {
        runtime, session, ..
    } = rig;
    let stats = session.shutdown().await;
    assert_eq!(
        (stats.leases.reclaimed, stats.reservations.reclaimed),
        (1, 1)
    );
    let err = leased.execute().await.err().unwrap();
    assert_session_closed(&err, "execute");
    assert_eq!(runtime.mutations(), 0);
    assert_eq!(
        runtime.truth().lease_releases.len(),
        1,
        "not released again"
    );
}

#[tokio::test]
async fn an_explicit_release_that_hangs_is_bounded_by_the_release_timeout() {
    let clock = ManualClock::new(start());
    let runtime = FakeRuntime::new(clock.clone());
    let session = impatient_session(&runtime, clock);
    runtime.script().hold.insert(Call::ReleaseLease);
    let outcome = tokio::time::timeout(StdDuration::from_secs(10), session.run(action("h-3")))
        .await
        .expect("the chain returns although the lease release hangs");
    match outcome {
        Err(ComputerUseError::CleanupAfterSuccess { cleanup, .. }) => {
            assert!(
                cleanup.to_string().contains("no answer within"),
                "{cleanup}"
            )
        }
        Err(other) => panic!("expected the release failure to be reported, got {other}"),
        Ok(_) => panic!("a hanging release was hidden"),
    }
    assert_eq!(session.release_stats().leases.explicit_failed, 1);
    assert_eq!(session.release_stats().reservations.explicit_released, 1);
    assert_eq!(session.release_stats().leaked(), 1);
}

#[tokio::test]
async fn an_explicit_release_that_panics_hands_the_resource_to_the_reaper() {
    let rig = rig();
    rig.runtime.script().panic_on_release = true;
    let approved = approved(&rig, "h-4").await;
    // A panic in the caller's own runtime reaches the caller...
    let chain = tokio::spawn(approved.complete());
    assert!(chain.await.unwrap_err().is_panic());
    // ...and the reservation it was releasing went to the reaper, which
    // tried it (isolated: it panics again there) and went on.
    let stats = rig.session.shutdown().await;
    assert_eq!(stats.reservations.queued, 1);
    assert_eq!(
        stats.reservations.reaped + stats.reservations.reap_failed,
        1
    );
    assert_eq!(
        stats.leases.explicit_released, 1,
        "the lease went back first"
    );
    assert_eq!(stats.leaked(), stats.reservations.reap_failed);
}

#[tokio::test]
async fn a_checkpoint_copied_into_another_store_is_not_resumed_twice_by_one_session() {
    let rig = rig();
    let (id, approval) = suspended(&rig, "h-5").await;
    let record = rig.store.load(&id).unwrap();
    let _first = rig.session.resume(&id, approval.clone()).await.unwrap();
    // The copy, resumed by a session built on it: refused, it is not the
    // store the record was sealed for.
    let copy = Arc::new(MemoryCheckpointStore::new(key()));
    copy.create(&id, &record[0]).unwrap();
    let on_copy = executor(&rig.runtime, rig.clock.clone())
        .checkpoints(copy)
        .build()
        .unwrap();
    assert!(matches!(
        refusal_of(on_copy.resume(&id, approval).await),
        CheckpointRefusal::OtherStore { .. }
    ));
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
}

#[tokio::test]
async fn an_envelope_for_another_target_or_operation_is_refused() {
    type Tweak = fn(&mut ActionEnvelope);
    let cases: [(&str, Tweak, bool); 4] = [
        (
            "target.appId",
            |e| {
                if let Some(target) = e.target.as_mut() {
                    target.app_id = "com.evil.Mail".into();
                }
            },
            false,
        ),
        (
            "target.windowId",
            |e| {
                if let Some(target) = e.target.as_mut() {
                    target.window_id = Some(WindowId::Number(WINDOW + 1));
                }
            },
            false,
        ),
        ("target.appId", |e| e.target = None, false),
        ("operation", |e| e.operation = "delete_file".into(), true),
    ];
    for (field, tweak, with_operation) in cases {
        let rig = rig();
        rig.runtime.script().envelope = Some(Arc::new(tweak));
        let mut proposed = action("h-6");
        if with_operation {
            proposed.operation = Some("write_clipboard".into());
        }
        let err = run_err(&rig.session, proposed).await;
        assert_eq!(err.field(), Some(field), "{err}");
        assert!(
            matches!(err, ComputerUseError::IdentityMismatch { .. }),
            "{err}"
        );
        assert_eq!(rig.runtime.count(Call::Reserve), 0, "{field}");
    }
}

// Found by the second hostile review -------------------------------------------

#[tokio::test]
async fn a_shutdown_cancelled_part_way_leaves_the_releases_to_the_reaper() {
    let rig = rig();
    let leased = leased(&rig, "k-1").await;
    std::mem::forget(leased);
    rig.runtime.script().hold.insert(Call::ReleaseLease);
    let Rig {
        runtime, session, ..
    } = rig;
    let cancelled = tokio::time::timeout(StdDuration::from_millis(50), session.shutdown()).await;
    assert!(
        cancelled.is_err(),
        "the shutdown was cancelled while a release hung"
    );
    runtime.script().hold.remove(&Call::ReleaseLease);
    runtime.gate.notify_one();
    wait_until(|| runtime.truth().active_leases.is_empty() && runtime.active_reservations() == 0)
        .await;
    assert!(
        runtime.truth().active_leases.is_empty(),
        "the lease was left behind"
    );
    assert_eq!(
        runtime.active_reservations(),
        0,
        "the reservation was left behind"
    );
}

#[tokio::test]
async fn a_release_future_forgotten_in_flight_is_reported_outstanding() {
    let rig = rig();
    let executed = leased(&rig, "k-2").await.execute().await.unwrap();
    rig.runtime.script().hold.insert(Call::ReleaseLease);
    let mut verify = Box::pin(executed.verify());
    let polled = tokio::time::timeout(StdDuration::from_millis(20), verify.as_mut()).await;
    assert!(polled.is_err(), "the release is held");
    std::mem::forget(verify);
    let stats = rig.session.shutdown().await;
    // The reservation was released alongside; the lease's release is in
    // flight in a future that will never run again: it is not counted as
    // released anywhere, and it is reported.
    assert_eq!(stats.reservations.explicit_released, 1);
    assert_eq!(stats.reservations.reclaimed, 0);
    assert_eq!(stats.outstanding, 1);
    assert_eq!(stats.leases.explicit_released, 0);
}

#[test]
fn a_session_on_a_runtime_without_timers_is_refused_when_built() {
    let clock = ManualClock::new(start());
    let runtime = FakeRuntime::new(clock);
    let tokio = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let built = tokio.block_on(async { Session::builder(runtime, full_authorizer()).build() });
    match built {
        Err(ComputerUseError::InvalidRequest { field, message }) => {
            assert_eq!(field, "runtime");
            assert!(message.contains("timers"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn a_reservation_granted_while_the_session_shuts_down_is_given_back() {
    let rig = rig();
    let approved = approved(&rig, "k-3").await;
    let reserving = spawn_held(&rig.runtime, Call::Reserve, approved.reserve()).await;
    let Rig {
        runtime, session, ..
    } = rig;
    let shut = tokio::spawn(session.shutdown());
    tokio::task::yield_now().await;
    runtime.gate.notify_one();
    let err = reserving.await.unwrap().err().unwrap();
    assert_session_closed(&err, "reserve");
    let _ = shut.await.unwrap();
    assert_eq!(runtime.active_reservations(), 0);
    assert_eq!(runtime.count(Call::Lease), 0);
}

#[tokio::test]
async fn a_shutdown_during_the_mutation_leaves_its_lease_to_it() {
    let rig = rig();
    let leased = leased(&rig, "k-4").await;
    let executing = spawn_held(&rig.runtime, Call::Execute, leased.execute()).await;
    let Rig {
        runtime, session, ..
    } = rig;
    let stats = session.shutdown().await;
    assert_eq!(stats.leases.reclaimed + stats.reservations.reclaimed, 0);
    assert_eq!(
        stats.outstanding, 2,
        "the lease and reservation in use were reported"
    );
    assert!(
        !runtime.truth().active_leases.is_empty(),
        "the lease stays with the mutation"
    );
    runtime.gate.notify_one();
    let executed = executing.await.unwrap().unwrap();
    let verified = executed.verify().await.unwrap();
    assert!(verified.performed());
    assert_eq!(runtime.truth().effects_with_valid_lease, [true]);
    assert!(runtime.truth().active_leases.is_empty());
    assert_eq!(runtime.active_reservations(), 0);
}

#[test]
fn a_shutdown_returns_when_the_reapers_runtime_is_not_driven() {
    let clock = ManualClock::new(start());
    let runtime = FakeRuntime::new(clock.clone());
    let first = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let session = first.block_on(async {
        let session = impatient_session(&runtime, clock);
        drop(reserved_on(&session, "k-5").await);
        session
    });
    // The reaper lives on `first`, which nobody drives any more.
    let second = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let stats = second.block_on(async {
        tokio::time::timeout(StdDuration::from_secs(10), session.shutdown())
            .await
            .expect("shutdown returns within its bound")
    });
    assert_eq!(stats.reservations.queued, 1);
    drop(first);
}

#[tokio::test]
async fn an_unsettled_receipt_is_an_unknown_outcome() {
    for status in [
        ReceiptStatus::Running,
        ReceiptStatus::Pending,
        ReceiptStatus::Indeterminate,
    ] {
        let rig = rig();
        rig.runtime.script().receipt = Some(Arc::new(move |r: &mut ExecutionReceipt| {
            r.status = status;
        }));
        let (action_id, cause) = unknown_outcome(&rig, "k-6", &format!("{status:?}")).await;
        assert_eq!(action_id, "k-6");
        assert_eq!(cause.field(), Some("status"), "{status:?}");
    }
}

#[tokio::test]
async fn a_receipt_bound_elsewhere_after_the_call_is_an_unknown_outcome() {
    let rig = rig();
    rig.runtime.script().receipt = Some(Arc::new(|r: &mut ExecutionReceipt| {
        r.action_digest = "0".repeat(64);
    }));
    let (action_id, cause) = unknown_outcome(&rig, "k-7", "a receipt for other work").await;
    assert_eq!(action_id, "k-7");
    assert!(matches!(
        cause,
        ComputerUseError::IdentityMismatch {
            field: "actionDigest",
            ..
        }
    ));
    assert_eq!(rig.runtime.mutations(), 1, "the effect did happen");
}

#[tokio::test]
async fn a_verification_that_cannot_run_still_says_the_action_was_performed() {
    let rig = rig();
    rig.runtime.script().fail.insert(
        Call::Verify,
        ComputerUseError::Transport {
            operation: "verify".into(),
            message: "reset".into(),
        },
    );
    let proposed = action("k-8").with_postcondition(digest_postcondition());
    let verified = completed(rig.session.run(proposed).await.unwrap());
    assert!(verified.performed());
    assert_eq!(verified.outcome().status(), "committed_unverified");
    assert!(
        verified
            .outcome()
            .detail()
            .unwrap_or_default()
            .contains("could not be gathered")
    );
    assert!(rig.runtime.truth().active_leases.is_empty());
}

#[tokio::test]
async fn a_cleanup_failure_after_the_action_says_whether_it_was_performed() {
    for (status, performed) in [
        (ReceiptStatus::Committed, true),
        (ReceiptStatus::Failed, false),
    ] {
        let rig = rig();
        rig.runtime.script().receipt = Some(Arc::new(move |r: &mut ExecutionReceipt| {
            r.status = status;
        }));
        rig.runtime.script().fail.insert(
            Call::Release,
            refused("release_target", "release_failed", "no"),
        );
        match rig.session.run(action("k-9")).await {
            Err(ComputerUseError::CleanupAfterSuccess { performed: got, .. }) => {
                assert_eq!(got, performed, "{status:?}")
            }
            Err(other) => panic!("{status:?}: {other}"),
            Ok(_) => panic!("{status:?}: a failed release was hidden"),
        }
    }
}

#[test]
fn racing_creates_of_one_checkpoint_file_leave_exactly_one() {
    let dir = tempfile::tempdir().unwrap();
    let id: CheckpointId = "0123456789abcdef0123456789abcdef".parse().unwrap();
    for round in 0..50 {
        let round_dir = dir.path().join(round.to_string());
        let barrier = std::sync::Barrier::new(2);
        let results: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..2)
                .map(|n| {
                    let round_dir = &round_dir;
                    let barrier = &barrier;
                    let id = &id;
                    scope.spawn(move || {
                        let store = FileCheckpointStore::new(round_dir, key()).unwrap();
                        barrier.wait();
                        store.create(id, &format!("record {n}"))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let won = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(won, 1, "round {round}: {results:?}");
        let store = FileCheckpointStore::new(&round_dir, key()).unwrap();
        assert_eq!(store.load(&id).unwrap().len(), 1);
    }
}

#[tokio::test]
async fn shutdown_waits_for_every_reclaimed_resource_within_its_bound() {
    let clock = ManualClock::new(start());
    let runtime = FakeRuntime::new(clock.clone());
    let session = impatient_session(&runtime, clock);
    for n in 0..3 {
        let reserved = reserved_on(&session, &format!("b-{n}")).await;
        std::mem::forget(reserved);
    }
    // Each release takes 30 ms, inside the 50 ms timeout; three of them
    // take longer than one timeout, so the wait must be bounded by all of
    // them, not by one.
    runtime.script().delay = Some(StdDuration::from_millis(30));
    let stats = session.shutdown().await;
    assert_eq!(stats.reservations.reclaimed, 3, "{stats:?}");
    assert_eq!(runtime.active_reservations(), 0);
}

#[tokio::test]
async fn an_expiry_that_is_no_timestamp_is_refused_never_read_as_no_expiry() {
    for object in ["ControlLease", "TargetReservation"] {
        let rig = rig();
        if object == "ControlLease" {
            rig.runtime.script().lease = Some(Arc::new(|l: &mut ControlLease| {
                l.expires_at = "soon".into();
            }));
        } else {
            rig.runtime.script().reservation = Some(Arc::new(|r: &mut TargetReservation| {
                r.expires_at = "soon".into();
            }));
        }
        let err = run_err(&rig.session, action("t-1")).await;
        assert!(
            matches!(
                err,
                ComputerUseError::InvalidField { object: o, field: "expiresAt", .. } if o == object
            ),
            "{object}: {err}"
        );
        assert_eq!(rig.runtime.mutations(), 0, "{object}");
        assert_eq!(rig.runtime.active_reservations(), 0, "{object}");
        assert!(rig.runtime.truth().active_leases.is_empty(), "{object}");
    }
}

/// Walks `session` to `Reserved` for an action policy allows.
async fn reserved_on(session: &Session<FakeRuntime>, id: &str) -> Reserved<FakeRuntime> {
    allowed(session, id).await.reserve().await.unwrap()
}

/// Spawns `step` with the runtime holding `call` and returns once the call is held
/// (the gate stays shut until the test opens it).
async fn spawn_held<F>(
    runtime: &FakeRuntime,
    call: Call,
    step: F,
) -> tokio::task::JoinHandle<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    runtime.script().hold.insert(call);
    let handle = tokio::spawn(step);
    runtime.held.notified().await;
    runtime.script().hold.remove(&call);
    handle
}

/// The runtime's refusal of `operation` with `code` and `message`.
fn refused(operation: &str, code: &str, message: &str) -> ComputerUseError {
    ComputerUseError::Refused {
        operation: operation.into(),
        code: code.into(),
        message: message.into(),
        details: None,
    }
}

/// Asserts `err` refuses a step of a session that has shut down.
fn assert_session_closed(err: &ComputerUseError, step: &str) {
    assert!(
        matches!(err, ComputerUseError::SessionClosed { operation } if *operation == step),
        "{err}"
    );
}

/// Runs an action that waits for approval and suspends it: its checkpoint,
/// and the approval the runtime holds for it.
async fn suspended(rig: &Rig, id: &str) -> (CheckpointId, Approval) {
    let pending = pending(rig, id).await;
    let approval = held_approval(&pending);
    (pending.suspend().await.unwrap(), approval)
}

/// Runs action `id` to the unknown outcome it must end with: the action id
/// the error names, and its cause (`case` says which case failed otherwise).
async fn unknown_outcome(rig: &Rig, id: &str, case: &str) -> (String, ComputerUseError) {
    match rig.session.run(action(id)).await {
        Err(ComputerUseError::OutcomeUnknown { action_id, cause }) => (action_id, *cause),
        Err(other) => panic!("{case}: expected an unknown outcome, got {other}"),
        Ok(_) => panic!("{case}: the chain ended without an unknown outcome"),
    }
}
