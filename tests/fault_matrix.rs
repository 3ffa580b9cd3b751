//! The fault matrix: every fault point of the chain, with the release
//! succeeding and failing. For each row the same guarantees are asserted: no
//! mutation without a valid lease, the reservation released exactly once, an
//! error that names the primary failure and, when it happened, the cleanup
//! failure, and every lease granted given back exactly once. A new stage or
//! field is a new row, not new code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use adk_computer_use::ComputerUseError;
use adk_computer_use::contracts::*;
use common::*;
use time::Duration;

/// What the chain must report.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Success.
    Ok,
    /// A failure naming this field.
    Field(&'static str),
    /// A runtime refusal with this code.
    Code(&'static str),
}

struct Row {
    name: String,
    setup: Box<dyn Fn(&FakeRuntime)>,
    expect: Expect,
    /// The fault comes after the mutation, so one effect is allowed.
    after_mutation: bool,
    /// The fault comes before a reservation exists, so nothing is released.
    before_reservation: bool,
}

fn refusal(code: &str) -> ComputerUseError {
    ComputerUseError::Refused {
        operation: "fault".into(),
        code: code.into(),
        message: "injected".into(),
        details: None,
    }
}

fn fails(call: Call, after_mutation: bool, before_reservation: bool) -> Row {
    Row {
        name: format!("{call:?} fails"),
        setup: Box::new(move |rt| {
            rt.script().fail.insert(call, refusal("injected_failure"));
        }),
        expect: Expect::Code("injected_failure"),
        after_mutation,
        before_reservation,
    }
}

fn forged<T: 'static>(
    object: &str,
    field: &'static str,
    pick: fn(&mut Script) -> &mut Tweak<T>,
    tweak: fn(&mut T),
    after_mutation: bool,
    before_reservation: bool,
) -> Row {
    Row {
        name: format!("{object}.{field} forged"),
        setup: Box::new(move |rt| *pick(&mut rt.script()) = Some(Arc::new(tweak))),
        expect: Expect::Field(field),
        after_mutation,
        before_reservation,
    }
}

fn reservation(field: &'static str, tweak: fn(&mut TargetReservation)) -> Row {
    forged(
        "TargetReservation",
        field,
        |s| &mut s.reservation,
        tweak,
        false,
        false,
    )
}

fn lease(field: &'static str, tweak: fn(&mut ControlLease)) -> Row {
    forged("ControlLease", field, |s| &mut s.lease, tweak, false, false)
}

fn receipt(field: &'static str, tweak: fn(&mut ExecutionReceipt)) -> Row {
    forged(
        "ExecutionReceipt",
        field,
        |s| &mut s.receipt,
        tweak,
        true,
        false,
    )
}

fn envelope(field: &'static str, tweak: fn(&mut ActionEnvelope)) -> Row {
    forged(
        "ActionEnvelope",
        field,
        |s| &mut s.envelope,
        tweak,
        false,
        true,
    )
}

fn expires_during(call: Call, by: i64, expect: Expect, after_mutation: bool) -> Row {
    Row {
        name: format!("time passes {by}s during {call:?}"),
        setup: Box::new(move |rt| {
            rt.script()
                .advance_clock_on
                .insert(call, Duration::seconds(by));
        }),
        expect,
        after_mutation,
        before_reservation: false,
    }
}

fn rows() -> Vec<Row> {
    vec![
        fails(Call::Observe, false, true),
        fails(Call::Preview, false, true),
        fails(Call::Reserve, false, true),
        fails(Call::Lease, false, false),
        fails(Call::Execute, false, false),
        // A verification that cannot run observed nothing: the chain still
        // ends, performed and unverified, and gives everything back.
        Row {
            expect: Expect::Ok,
            ..fails(Call::Verify, true, false)
        },
        envelope("principalId", |e| e.principal_id = "mallory".into()),
        envelope("sessionId", |e| e.session_id = "other".into()),
        envelope("actionId", |e| e.action_id = "other".into()),
        envelope("tool", |e| e.tool = "delete_file".into()),
        envelope("agentId", |e| e.agent_id = Some("other".into())),
        envelope("requestedMode", |e| {
            e.requested_mode = ExecutionMode::Foreground
        }),
        envelope("expiresAt", |e| {
            e.expires_at = "2026-07-13T09:00:00Z".into()
        }),
        envelope("proposedAt", |e| e.proposed_at = "not a time".into()),
        reservation("sessionId", |r| r.session_id = "other".into()),
        reservation("principalId", |r| r.principal_id = "mallory".into()),
        reservation("agentId", |r| r.agent_id = Some("other".into())),
        reservation("intentId", |r| r.intent_id = "other".into()),
        reservation("state", |r| r.state = ReservationState::Cancelled),
        reservation("expiresAt", |r| {
            r.expires_at = "2026-07-13T09:00:00Z".into()
        }),
        reservation("scope.appId", |r| {
            r.scope.app_id = "com.example.Other".into()
        }),
        reservation("scope.windowId", |r| {
            r.scope.window_id = Some(WindowId::Number(99))
        }),
        lease("sessionId", |l| l.session_id = "other".into()),
        lease("principalId", |l| l.principal_id = "mallory".into()),
        lease("agentId", |l| l.agent_id = Some("other".into())),
        lease("executionMode", |l| {
            l.execution_mode = ExecutionMode::Foreground
        }),
        lease("state", |l| l.state = LeaseState::Revoked),
        lease("expiresAt", |l| {
            l.expires_at = "2026-07-13T09:00:00Z".into()
        }),
        lease("actionsUsed", |l| l.actions_used = l.action_budget),
        lease("boundaries.appIds", |l| {
            l.boundaries.app_ids = vec!["com.example.Other".into()]
        }),
        lease("boundaries.windowIds", |l| {
            l.boundaries.window_ids = vec![WindowId::Number(99)]
        }),
        receipt("sessionId", |r| r.session_id = "other".into()),
        receipt("actionId", |r| r.action_id = "other".into()),
        receipt("actionDigest", |r| r.action_digest = "0".repeat(64)),
        // The preview allows 30 s; the reservation and lease 60 s from when they are made.
        expires_during(Call::Reserve, 31, Expect::Field("expiresAt"), false),
        expires_during(Call::Lease, 31, Expect::Field("expiresAt"), false),
        expires_during(Call::Execute, 31, Expect::Ok, false),
        expires_during(Call::Verify, 120, Expect::Ok, false),
    ]
}

#[tokio::test]
async fn every_fault_point_keeps_every_guarantee() {
    let mut checked = 0;
    for row in rows() {
        for release_fails in [false, true] {
            let name = format!(
                "{} (release {})",
                row.name,
                if release_fails { "fails" } else { "works" }
            );
            let rig = rig();
            (row.setup)(&rig.runtime);
            if release_fails {
                rig.runtime
                    .script()
                    .fail
                    .insert(Call::Release, refusal("release_broken"));
            }
            let result = rig.session.run(action("m-1")).await;
            let reserved = {
                let truth = rig.runtime.truth();

                // 1. No mutation without a valid lease, and none at all for faults before it.
                assert!(
                    truth.executes_with_valid_lease.iter().all(|valid| *valid),
                    "{name}: executed with an invalid lease"
                );
                let effects: u32 = truth.effects.values().sum();
                let expected_effects =
                    u32::from(row.after_mutation || matches!(row.expect, Expect::Ok));
                assert_eq!(effects, expected_effects, "{name}: effects");

                // 2. The reservation is released exactly once (attempted once when the release fails).
                let reserved = truth.next_id > 0 && !row.before_reservation;
                let attempts = truth.calls.iter().filter(|c| **c == Call::Release).count();
                assert_eq!(attempts, usize::from(reserved), "{name}: release attempts");
                if !release_fails {
                    assert!(
                        truth.active_reservations.is_empty(),
                        "{name}: a reservation is still active"
                    );
                }

                // 3. Every lease granted is given back, once, on every path:
                //    the next writer is not held up until its TTL.
                assert!(
                    truth.active_leases.is_empty(),
                    "{name}: a lease is still active: {:?}",
                    truth.active_leases
                );
                let mut released = truth.lease_releases.clone();
                released.dedup();
                assert_eq!(
                    released, truth.lease_releases,
                    "{name}: a lease released twice"
                );
                reserved
            };

            // 4. The error names the primary failure, then the cleanup failure.
            let cleanup_failed = release_fails && reserved;
            match (row.expect, result) {
                (Expect::Ok, Ok(_)) => {
                    assert!(!cleanup_failed, "{name}: a failed release was hidden")
                }
                (Expect::Ok, Err(ComputerUseError::CleanupAfterSuccess { cleanup, .. })) => {
                    assert!(cleanup_failed, "{name}");
                    assert_eq!(cleanup.refusal_code(), Some("release_broken"), "{name}");
                }
                (Expect::Ok, Err(err)) => panic!("{name}: expected success, got {err}"),
                (expect, Ok(_)) => panic!("{name}: expected {expect:?}, the chain succeeded"),
                (expect, Err(err)) => {
                    match expect {
                        Expect::Field(field) => {
                            assert_eq!(err.field(), Some(field), "{name}: {err}")
                        }
                        Expect::Code(code) => {
                            assert_eq!(err.refusal_code(), Some(code), "{name}: {err}")
                        }
                        Expect::Ok => unreachable!(),
                    }
                    match &err {
                        ComputerUseError::WithCleanup { cleanup, .. } => {
                            assert!(cleanup_failed, "{name}: cleanup reported as failed");
                            assert_eq!(cleanup.refusal_code(), Some("release_broken"), "{name}");
                        }
                        _ => assert!(
                            !cleanup_failed,
                            "{name}: the cleanup failure was not reported: {err}"
                        ),
                    }
                }
            }
            // A failed release is not known to have happened: it is the one
            // thing `leaked` may count, once.
            let leaked = rig.session.shutdown().await.leaked();
            assert_eq!(leaked, u64::from(cleanup_failed), "{name}");
            checked += 1;
        }
    }
    assert_eq!(checked, rows().len() * 2);
}
