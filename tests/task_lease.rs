//! A lease for a task, against a scriptable runtime that enforces a
//! server's lease rules itself: one acquire and one release for many
//! actions, every lease check at every spend, refusals before anything is
//! sent, and the release paths (explicit, dropped, reclaimed at shutdown).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration as StdDuration;

use adk_computer_use::ComputerUseError;
use adk_computer_use::chain::*;
use adk_computer_use::contracts::*;
use common::*;
use time::Duration;

fn terms(budget: u32) -> TaskLeaseTerms {
    TaskLeaseTerms::background(budget, StdDuration::from_secs(60)).unwrap()
}

/// The action reserved and ready to spend.
async fn reserved(rig: &Rig, id: &str) -> Reserved<FakeRuntime> {
    allowed_action(&rig.session, &action(id))
        .await
        .reserve()
        .await
        .unwrap()
}

fn task_refusal(err: &ComputerUseError) -> &TaskLeaseRefusal {
    match err {
        ComputerUseError::TaskLease { refusal, .. } => refusal,
        other => panic!("expected a task lease refusal, got {other}"),
    }
}

#[tokio::test]
async fn one_acquire_and_one_release_for_a_whole_task() {
    let (rig, mut task) = targeted_task(5).await;
    // The lease is asked for exactly the session's target.
    let ask = rig.runtime.truth().task_asks[0].clone();
    assert_eq!(ask["appId"], APP);
    assert_eq!(ask["windowId"], WINDOW);
    assert_eq!(ask["budget"], 5);
    assert_eq!(ask["ttlMs"], 60_000);
    assert_eq!(ask["agentId"], "executor");
    for n in 0..5 {
        let done = run_under(&rig, &mut task, &format!("t-{n}")).await;
        assert!(done.performed());
        assert_eq!(done.lease_id(), task.lease().lease_id);
    }
    assert_eq!(task.spent(), 5);
    assert_eq!(task.remaining(), 0);
    assert_eq!(rig.runtime.count(Call::TaskLease), 1);
    assert_eq!(rig.runtime.count(Call::Lease), 0, "no lease per action");
    assert_eq!(rig.runtime.count(Call::ReleaseLease), 0);
    assert_eq!(rig.runtime.mutations(), 5);
    // Each action's reservation went back when it ended; the lease stays.
    assert_eq!(rig.runtime.active_reservations(), 0);
    assert_eq!(rig.session.held_resources(), 1);
    let id = task.lease().lease_id.clone();
    task.release().await.unwrap();
    assert_eq!(rig.runtime.truth().lease_releases, vec![id]);
    assert_eq!(rig.runtime.count(Call::ReleaseLease), 1);
    let stats = rig.session.shutdown().await;
    assert_eq!(stats.leases.explicit_released, 1);
    assert_eq!(stats.reservations.explicit_released, 5);
    assert_eq!(stats.leaked(), 0);
}

#[tokio::test]
async fn past_the_budget_nothing_is_sent_and_the_reservation_goes_back() {
    let (rig, mut task) = targeted_task(2).await;
    for id in ["b-1", "b-2"] {
        assert!(run_under(&rig, &mut task, id).await.performed());
    }
    let executes = rig.runtime.count(Call::Execute);
    let err = spend_refused(&rig, "b-3", &mut task).await;
    assert!(
        matches!(&err, ComputerUseError::InvalidField { object: "ControlLease", field: "actionsUsed", actual, .. } if actual.contains("2 spent since")),
        "{err}"
    );
    assert_eq!(rig.runtime.count(Call::Execute), executes, "nothing sent");
    assert_eq!(rig.runtime.mutations(), 2);
    assert_eq!(rig.runtime.active_reservations(), 0);
    task.release().await.unwrap();
}

#[tokio::test]
async fn after_the_servers_expiry_nothing_is_sent() {
    let rig = rig_targeted();
    // A server that grants less time than asked: its expiry is the one.
    let sooner = adk_computer_use::clock::format_rfc3339(start() + Duration::seconds(30)).unwrap();
    rig.runtime.script().lease = Some(Arc::new(move |lease: &mut ControlLease| {
        lease.expires_at = sooner.clone().into();
    }));
    let mut task = rig.session.lease_task(terms(5)).await.unwrap();
    let spent = reserved(&rig, "e-1").await;
    rig.clock.advance(Duration::seconds(31));
    let err = spent.spend(&mut task).await.err().unwrap();
    assert!(
        matches!(
            &err,
            ComputerUseError::Expired {
                object: "ControlLease",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(rig.runtime.count(Call::Execute), 0);
    assert_eq!(rig.runtime.active_reservations(), 0);
    task.release().await.unwrap();
}

#[tokio::test]
async fn our_own_ttl_bounds_a_lease_the_server_let_run_longer() {
    let rig = rig_targeted();
    // A server that grants an hour for a minute asked.
    let later = adk_computer_use::clock::format_rfc3339(start() + Duration::hours(1)).unwrap();
    rig.runtime.script().lease = Some(Arc::new(move |lease: &mut ControlLease| {
        lease.expires_at = later.clone().into();
    }));
    let mut task = rig.session.lease_task(terms(5)).await.unwrap();
    assert!(run_under(&rig, &mut task, "ttl-1").await.performed());
    rig.clock.advance(Duration::seconds(61));
    let err = spend_refused(&rig, "ttl-2", &mut task).await;
    assert!(
        matches!(
            &err,
            ComputerUseError::Expired {
                object: "TaskLease",
                field: "ttl",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(rig.runtime.count(Call::Execute), 1);
    task.release().await.unwrap();
}

#[tokio::test]
async fn a_spent_action_whose_time_runs_out_before_execute_is_refused_at_execute() {
    let (rig, mut task) = targeted_task(5).await;
    let leased = spent(&rig, "late-1", &mut task).await;
    rig.clock.advance(Duration::seconds(61));
    let err = leased.execute().await.err().unwrap();
    assert!(matches!(&err, ComputerUseError::Expired { .. }), "{err}");
    assert_eq!(rig.runtime.count(Call::Execute), 0);
    // Refused before the call: the action is given back to the budget.
    assert_eq!(task.spent(), 0);
    task.release().await.unwrap();
}

#[tokio::test]
async fn an_action_outside_a_narrower_boundary_is_refused_before_anything_is_sent() {
    // The session acts on the app, any window; the server bounded the lease
    // to window 7 only. An action on window 8 is outside it.
    let rig = rig_aimed(None);
    rig.runtime.script().lease = Some(Arc::new(|lease: &mut ControlLease| {
        lease.boundaries.window_ids = vec![WindowId::Number(WINDOW)];
    }));
    let mut task = rig.session.lease_task(terms(5)).await.unwrap();
    assert_eq!(
        rig.runtime.truth().task_asks[0]["windowId"],
        serde_json::Value::Null
    );
    let mut elsewhere = target();
    elsewhere.window_id = Some(WindowId::Number(8));
    let approved = allowed_action(&rig.session, &action("w-8").with_target(elsewhere)).await;
    let err = approved.complete_under(&mut task).await.err().unwrap();
    assert_eq!(err.field(), Some("boundaries.windowIds"), "{err}");
    assert_eq!(rig.runtime.count(Call::Execute), 0);
    assert_eq!(rig.runtime.active_reservations(), 0);
    // The task goes on for its own window.
    assert!(run_under(&rig, &mut task, "w-7").await.performed());
    task.release().await.unwrap();
}

#[tokio::test]
async fn an_action_in_another_mode_is_refused_at_its_spend() {
    let (rig, mut task) = targeted_task(5).await;
    let mut foreground = action("m-1");
    foreground.mode = ExecutionMode::Foreground;
    let approved = allowed_action(&rig.session, &foreground).await;
    let err = approved.complete_under(&mut task).await.err().unwrap();
    assert!(
        matches!(
            &err,
            ComputerUseError::IdentityMismatch {
                field: "executionMode",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(rig.runtime.count(Call::Execute), 0);
    task.release().await.unwrap();
}

#[tokio::test]
async fn a_hostile_task_lease_is_refused_and_given_back_at_once() {
    type Tweak = Arc<dyn Fn(&mut ControlLease) + Send + Sync>;
    let cases: Vec<(&str, Tweak)> = vec![
        ("sessionId", Arc::new(|l| l.session_id = "session-2".into())),
        (
            "principalId",
            Arc::new(|l| l.principal_id = "mallory".into()),
        ),
        (
            "agentId",
            Arc::new(|l| l.agent_id = Some("other-agent".into())),
        ),
        (
            "executionMode",
            Arc::new(|l| l.execution_mode = ExecutionMode::Foreground),
        ),
        ("state", Arc::new(|l| l.state = LeaseState::Revoked)),
        (
            "expiresAt",
            Arc::new(|l| l.expires_at = "2026-07-13T09:00:00Z".to_owned().into()),
        ),
        ("actionBudget", Arc::new(|l| l.action_budget = 6)),
        ("actionsUsed", Arc::new(|l| l.actions_used = 5)),
        // Unscoped (wider than the session's target), or another app.
        (
            "boundaries.appIds",
            Arc::new(|l| l.boundaries.app_ids.clear()),
        ),
        (
            "boundaries.appIds",
            Arc::new(|l| l.boundaries.app_ids.push("com.example.Other".into())),
        ),
        (
            "boundaries.windowIds",
            Arc::new(|l| l.boundaries.window_ids.clear()),
        ),
        (
            "boundaries.windowIds",
            Arc::new(|l| l.boundaries.window_ids = vec![WindowId::Number(8)]),
        ),
    ];
    for (field, tweak) in cases {
        let rig = rig_targeted();
        rig.runtime.script().lease = Some(tweak);
        let err = rig.session.lease_task(terms(5)).await.err().unwrap();
        assert_eq!(err.field(), Some(field), "{field}: {err}");
        // What was granted went back at once, and nothing else was sent.
        assert_eq!(rig.runtime.count(Call::ReleaseLease), 1, "{field}");
        assert!(rig.runtime.truth().active_leases.is_empty(), "{field}");
        let stats = rig.session.shutdown().await;
        assert_eq!(stats.leaked(), 0, "{field}");
    }
}

#[tokio::test]
async fn a_session_without_a_target_or_scope_takes_no_task_lease() {
    let rig = rig();
    let err = rig.session.lease_task(terms(5)).await.err().unwrap();
    assert_eq!(err.field(), Some("target"), "{err}");
    let rig = rig_targeted();
    drop(rig.session);
    let session = adk_computer_use::chain::Session::builder(
        Arc::clone(&rig.runtime),
        authorizer(&["computer:plan", "computer:execute:background"]),
    )
    .target(APP, None)
    .build()
    .unwrap();
    let foreground = TaskLeaseTerms::foreground(5, StdDuration::from_secs(60)).unwrap();
    let err = session.lease_task(foreground).await.err().unwrap();
    assert!(
        matches!(err, ComputerUseError::Unauthorized { .. }),
        "{err}"
    );
    assert_eq!(rig.runtime.count(Call::TaskLease), 0, "nothing was sent");
}

#[test]
fn terms_outside_the_protocols_bounds_are_refused() {
    let ttl = StdDuration::from_secs(60);
    assert!(TaskLeaseTerms::background(0, ttl).is_err());
    assert!(TaskLeaseTerms::background(10_001, ttl).is_err());
    assert!(TaskLeaseTerms::background(10_000, ttl).is_ok());
    assert!(TaskLeaseTerms::background(1, StdDuration::ZERO).is_err());
    assert!(TaskLeaseTerms::background(1, StdDuration::from_millis(300_001)).is_err());
    assert!(TaskLeaseTerms::background(1, TaskLeaseTerms::MAX_TTL).is_ok());
}

#[tokio::test]
async fn a_spend_while_an_earlier_action_has_not_ended_is_refused() {
    let (rig, mut task) = targeted_task(5).await;
    let first = spent(&rig, "u-1", &mut task).await;
    let err = spend_refused(&rig, "u-2", &mut task).await;
    assert_eq!(
        task_refusal(&err),
        &TaskLeaseRefusal::InUse {
            action_id: "u-1".into()
        }
    );
    assert!(first.execute().await.unwrap().verify().await.is_ok());
    // The first has ended: the task goes on.
    assert!(run_under(&rig, &mut task, "u-3").await.performed());
    assert_eq!(rig.runtime.mutations(), 2);
    task.release().await.unwrap();
}

#[tokio::test]
async fn an_action_that_ends_before_its_mutation_gives_its_action_back() {
    let (rig, mut task) = targeted_task(1).await;
    let leased = spent(&rig, "g-1", &mut task).await;
    assert_eq!(task.spent(), 1);
    drop(leased);
    assert_eq!(task.spent(), 0);
    assert_eq!(task.remaining(), 1);
    assert!(run_under(&rig, &mut task, "g-2").await.performed());
    assert_eq!(task.remaining(), 0);
    task.release().await.unwrap();
    let stats = rig.session.shutdown().await;
    // The dropped action's reservation went to the reaper; the lease did not.
    assert_eq!(stats.reservations.reaped, 1);
    assert_eq!(stats.leases.reaped, 0);
    assert_eq!(stats.leaked(), 0);
}

#[tokio::test]
async fn an_action_spent_before_the_release_is_refused_at_execute() {
    let (rig, mut task) = targeted_task(5).await;
    let leased = spent(&rig, "r-1", &mut task).await;
    task.release().await.unwrap();
    let err = leased.execute().await.err().unwrap();
    assert_eq!(task_refusal(&err), &TaskLeaseRefusal::Released);
    assert_eq!(rig.runtime.count(Call::Execute), 0);
    assert_eq!(rig.runtime.active_reservations(), 0);
}

#[tokio::test]
async fn a_dropped_task_lease_is_released_by_the_reaper_and_spends_nothing_more() {
    let (rig, mut task) = targeted_task(5).await;
    let leased = spent(&rig, "d-1", &mut task).await;
    let id = task.lease().lease_id.clone();
    drop(task);
    let err = leased.execute().await.err().unwrap();
    assert_eq!(task_refusal(&err), &TaskLeaseRefusal::Dropped);
    let stats = rig.session.shutdown().await;
    assert_eq!(stats.leases.queued, 1);
    assert_eq!(stats.leases.reaped, 1);
    assert_eq!(stats.leaked(), 0);
    assert_eq!(rig.runtime.truth().lease_releases, vec![id]);
    assert_eq!(rig.runtime.count(Call::Execute), 0);
}

#[tokio::test]
async fn shutdown_reclaims_a_task_lease_still_held_and_a_late_release_sends_nothing_twice() {
    let rig = rig_targeted();
    let Rig {
        runtime, session, ..
    } = rig;
    let task = session.lease_task(terms(5)).await.unwrap();
    let stats = session.shutdown().await;
    assert_eq!(stats.leases.reclaimed, 1);
    assert_eq!(stats.leaked(), 0);
    task.release().await.unwrap();
    assert_eq!(runtime.count(Call::ReleaseLease), 1);
}

#[tokio::test]
async fn a_task_lease_is_spent_only_by_the_session_that_took_it() {
    let rig = rig_targeted();
    let other = executor(&rig.runtime, rig.clock.clone())
        .target(APP, Some(WindowId::Number(WINDOW)))
        .build()
        .unwrap();
    let mut theirs = other.lease_task(terms(5)).await.unwrap();
    let err = spend_refused(&rig, "o-1", &mut theirs).await;
    assert_eq!(task_refusal(&err), &TaskLeaseRefusal::OfAnotherSession);
    assert_eq!(rig.runtime.count(Call::Execute), 0);
    assert_eq!(rig.runtime.active_reservations(), 0);
    theirs.release().await.unwrap();
    assert_eq!(other.shutdown().await.leaked(), 0);
}

#[tokio::test]
async fn a_failed_release_is_returned() {
    let (rig, task) = targeted_task(5).await;
    rig.runtime.script().fail.insert(
        Call::ReleaseLease,
        refusal("release_control_lease", "unavailable"),
    );
    let err = task.release().await.err().unwrap();
    assert_eq!(err.refusal_code(), Some("unavailable"), "{err}");
    let stats = rig.session.shutdown().await;
    assert_eq!(stats.leases.explicit_failed, 1);
    assert_eq!(stats.leaked(), 1, "a failed release is counted, not hidden");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_waits_for_the_mutation_in_flight() {
    let (rig, mut task) = targeted_task(5).await;
    let leased = spent(&rig, "f-1", &mut task).await;
    let running = executing_held(&rig, leased).await;
    let released = tokio::spawn(task.release());
    // The release does not go out while the mutation is in flight.
    tokio::time::sleep(StdDuration::from_millis(50)).await;
    assert_eq!(rig.runtime.count(Call::ReleaseLease), 0);
    rig.runtime.gate.notify_one();
    running.await.unwrap().unwrap();
    released.await.unwrap().unwrap();
    assert_eq!(rig.runtime.count(Call::ReleaseLease), 1);
    assert_eq!(rig.runtime.mutations(), 1);
}

/// An action's execute cancelled mid-call (its task aborted), the task
/// lease then forgotten or kept.
async fn cancelled_mid_call(rig: &Rig, task: &mut TaskLease<FakeRuntime>) {
    let leased = spent(rig, "c-1", task).await;
    let running = executing_held(rig, leased).await;
    running.abort();
    let _ = running.await;
    rig.runtime.script().hold.clear();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_reclaims_a_task_lease_whose_action_was_cancelled_mid_call() {
    for forget in [false, true] {
        let (rig, mut task) = targeted_task(5).await;
        cancelled_mid_call(&rig, &mut task).await;
        let kept = if forget {
            std::mem::forget(task);
            None
        } else {
            Some(task)
        };
        let runtime = Arc::clone(&rig.runtime);
        let stats = rig.session.shutdown().await;
        assert_eq!(stats.leases.reclaimed, 1, "forget {forget}: {stats:?}");
        assert_eq!(stats.outstanding, 0, "forget {forget}: {stats:?}");
        assert!(runtime.truth().active_leases.is_empty(), "forget {forget}");
        drop(kept);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_is_bounded_when_a_mutation_under_it_never_answers() {
    let clock = adk_computer_use::clock::ManualClock::new(start());
    let runtime = FakeRuntime::new(clock.clone());
    let session = executor(&runtime, clock)
        .target(APP, Some(WindowId::Number(WINDOW)))
        .release_timeout(StdDuration::from_millis(200))
        .build()
        .unwrap();
    let mut task = session.lease_task(terms(5)).await.unwrap();
    let approved = allowed_action(&session, &action("n-1")).await;
    let leased = approved
        .reserve()
        .await
        .unwrap()
        .spend(&mut task)
        .await
        .unwrap();
    runtime.script().hold.insert(Call::Execute);
    // The mutation's future is forgotten mid-call: it never answers.
    let mut call = Box::pin(leased.execute());
    assert!(
        tokio::time::timeout(StdDuration::from_millis(50), &mut call)
            .await
            .is_err()
    );
    std::mem::forget(call);
    let released = tokio::time::timeout(StdDuration::from_secs(30), task.release()).await;
    assert!(matches!(released, Ok(Ok(()))), "{released:?}");
    assert!(runtime.truth().active_leases.is_empty());
}

#[tokio::test]
async fn a_task_lease_of_another_kind_or_naming_no_agent_is_refused() {
    let rig = rig_targeted();
    rig.runtime.script().lease = Some(Arc::new(|l: &mut ControlLease| {
        l.kind = LeaseKind::Cooperative;
    }));
    let foreground = TaskLeaseTerms::foreground(5, StdDuration::from_secs(60)).unwrap();
    let err = rig.session.lease_task(foreground).await.err().unwrap();
    assert_eq!(err.field(), Some("kind"), "{err}");
    let rig = rig_targeted();
    rig.runtime.script().lease = Some(Arc::new(|l: &mut ControlLease| l.agent_id = None));
    let err = rig.session.lease_task(terms(5)).await.err().unwrap();
    assert_eq!(err.field(), Some("agentId"), "{err}");
    assert_eq!(rig.runtime.count(Call::ReleaseLease), 1, "given back");
}

#[tokio::test]
async fn a_lease_granted_again_under_the_task_leases_id_is_refused_and_left_to_the_task() {
    let (rig, mut task) = targeted_task(5).await;
    let id = task.lease().lease_id.clone();
    let same = id.clone();
    // A hostile runtime answers an action's own acquire with the task's
    // lease, and a second task lease too.
    rig.runtime.script().lease = Some(Arc::new(move |l: &mut ControlLease| {
        l.lease_id = same.clone();
    }));
    let err = rig.session.run(action("per-action")).await.err().unwrap();
    assert_eq!(err.field(), Some("leaseId"), "{err}");
    let err = rig.session.lease_task(terms(5)).await.err().unwrap();
    assert_eq!(err.field(), Some("leaseId"), "{err}");
    assert!(
        rig.runtime.truth().lease_releases.is_empty(),
        "nobody released the task's lease"
    );
    rig.runtime.script().lease = None;
    assert!(run_under(&rig, &mut task, "after").await.performed());
    task.release().await.unwrap();
    assert_eq!(rig.runtime.truth().lease_releases, vec![id]);
    let stats = rig.session.shutdown().await;
    assert_eq!(stats.leases.explicit_released, 1, "{stats:?}");
}

/// A rig aimed at the target window, holding a background task lease for `budget` actions.
async fn targeted_task(budget: u32) -> (Rig, TaskLease<FakeRuntime>) {
    let rig = rig_targeted();
    let task = rig.session.lease_task(terms(budget)).await.unwrap();
    (rig, task)
}

/// Runs action `id` under `task` to its verified end.
async fn run_under(rig: &Rig, task: &mut TaskLease<FakeRuntime>, id: &str) -> Verified {
    completed(rig.session.run_under(task, action(id)).await.unwrap())
}

/// Action `id`, reserved and spent from `task`, ready to execute.
async fn spent(rig: &Rig, id: &str, task: &mut TaskLease<FakeRuntime>) -> Leased<FakeRuntime> {
    reserved(rig, id).await.spend(task).await.unwrap()
}

/// The refusal of spending `task` on action `id`, once reserved.
async fn spend_refused(rig: &Rig, id: &str, task: &mut TaskLease<FakeRuntime>) -> ComputerUseError {
    reserved(rig, id).await.spend(task).await.err().unwrap()
}

/// Executes `leased` on a task of its own, returning once the runtime holds the mutating call.
async fn executing_held(
    rig: &Rig,
    leased: Leased<FakeRuntime>,
) -> tokio::task::JoinHandle<Result<(), ComputerUseError>> {
    rig.runtime.script().hold.insert(Call::Execute);
    let running = tokio::spawn(async move { leased.execute().await.map(|_| ()) });
    rig.runtime.held.notified().await;
    running
}
