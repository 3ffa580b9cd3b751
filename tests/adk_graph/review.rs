//! A hostile review of the graph face (`src/graph/`), kept as tests: each
//! finding that broke a claim is now the test of its mend (each seen
//! failing before it), and `holds_*` are the attacks the code resisted
//! from the start.

use std::sync::Arc;

use adk_computer_use::Session;
use adk_computer_use::contracts::WindowId;
use adk_computer_use::graph::{build_reference_graph, reference_graph_over};
use adk_graph::{
    Checkpoint, Checkpointer, CompiledGraph, ExecutionConfig, GraphError, MemoryCheckpointer, State,
};
use serde_json::{Value, json};

use crate::common::*;
use crate::support::*;

// ---------------------------------------------------------------- helpers

/// A graph over a targeted rig (store of record: memory) with a checkpointer
/// the test keeps, so it can list the thread's checkpoints.
fn graph_with(
    route: PreviewRoute,
    checkpointer: Arc<dyn Checkpointer>,
) -> (CompiledGraph, Arc<FakeRuntime>, Arc<Session<FakeRuntime>>) {
    let Rig {
        runtime, session, ..
    } = rig_targeted();
    runtime.script().route = Some(route);
    runtime.script().semantic =
        Some(json!({ "windows": [{ "bundleId": APP, "windowId": WINDOW }] }));
    let session = Arc::new(session);
    let graph = reference_graph_over(Arc::clone(&session), Some(checkpointer)).unwrap();
    (graph, runtime, session)
}

/// A session WITHOUT a store of record (the stage waits in the graph only).
fn storeless(route: PreviewRoute) -> (Arc<FakeRuntime>, Arc<Session<FakeRuntime>>) {
    let clock = adk_computer_use::clock::ManualClock::new(start());
    let runtime = FakeRuntime::new(clock.clone());
    runtime.script().route = Some(route);
    runtime.script().semantic =
        Some(json!({ "windows": [{ "bundleId": APP, "windowId": WINDOW }] }));
    let session = Session::builder(Arc::clone(&runtime), full_authorizer())
        .clock(Arc::new(clock))
        .agent_id("executor")
        .target(APP, Some(WindowId::Number(WINDOW)))
        .build()
        .unwrap();
    (runtime, Arc::new(session))
}

async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
}

// ------------------------------------------------- claim 4 / claim 5 breaks

/// Review finding 1 and 2 (mended): a caller-chosen `recursion_limit`
/// (ExecutionConfig, beside the thread id) that would stop the run between
/// the reservation and the verification (a performed action reported only
/// as adk-graph's `RecursionLimitExceeded`, or a reservation and a lease
/// left held after the run returned) starts none of those steps: the run
/// ends at `reserve_target`, naming the limit, with nothing reserved,
/// leased or performed.
#[tokio::test]
async fn a_recursion_limit_that_would_stop_between_reservation_and_verification_starts_nothing() {
    for limit in [5, 6, 7] {
        let (graph, runtime, session) = graph(PreviewRoute::Executable);
        let ended = graph
            .invoke(
                input(),
                ExecutionConfig::new(&format!("review-rl-{limit}")).with_recursion_limit(limit),
            )
            .await;
        let text = format!("{ended:?}");
        assert!(text.contains("recursion limit"), "{limit}: {text}");
        settle().await;
        assert_eq!(runtime.mutations(), 0, "{limit}");
        assert_eq!(runtime.count(Call::Reserve), 0, "{limit}");
        assert_eq!(runtime.truth().active_leases.len(), 0, "{limit}");
        assert_eq!(session.held_resources(), 0, "{limit}");
    }
    // At 8 it reaches `verify`.
    let (graph, runtime, _) = graph(PreviewRoute::Executable);
    let done = graph
        .invoke(
            input(),
            ExecutionConfig::new("review-rl-8").with_recursion_limit(8),
        )
        .await
        .unwrap();
    assert_eq!(done["committed"], true);
    assert_eq!(runtime.mutations(), 1);
}

/// Review finding 3 (mended): a caller re-entering its thread at a
/// checkpoint taken before `execute` (adk-graph's time travel) after the
/// action ran and was verified: `execute` answers the receipt it has and
/// sends nothing, `verify` the outcome it found; never "no lease" or
/// "nothing performed".
#[tokio::test]
async fn a_resume_from_before_execute_after_the_action_ran_acts_on_nothing_and_answers_the_same() {
    let checkpointer = Arc::new(MemoryCheckpointer::new());
    let (graph, runtime, _) = graph_with(PreviewRoute::Executable, checkpointer.clone());
    let thread = "review-time-travel";
    let first = graph
        .invoke(input(), ExecutionConfig::new(thread))
        .await
        .unwrap();
    assert_eq!(runtime.mutations(), 1);
    let before_execute = checkpointer
        .list(thread)
        .await
        .unwrap()
        .into_iter()
        .find(|c| c.pending_nodes == ["execute"])
        .expect("a checkpoint before execute");
    let travelled = graph
        .invoke(
            State::new(),
            ExecutionConfig::new(thread).with_resume_from(&before_execute.checkpoint_id),
        )
        .await
        .unwrap();
    assert_eq!(runtime.mutations(), 1, "nothing sent again");
    assert_eq!(travelled["result"], first["result"]);
    assert_eq!(travelled["receipt"], first["receipt"]);
}

/// A checkpointer whose save fails once, for the checkpoint taken right
/// after `execute` (frontier `[verify]`): a store outage at the worst
/// moment.
struct FailOnceAfterExecute(MemoryCheckpointer, std::sync::atomic::AtomicBool);

#[adk_core::async_trait]
impl Checkpointer for FailOnceAfterExecute {
    async fn save(&self, checkpoint: &Checkpoint) -> adk_graph::Result<String> {
        if checkpoint.pending_nodes == ["verify"]
            && !self.1.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return Err(GraphError::CheckpointError(
                "store unavailable (injected)".into(),
            ));
        }
        self.0.save(checkpoint).await
    }
    async fn load(&self, thread_id: &str) -> adk_graph::Result<Option<Checkpoint>> {
        self.0.load(thread_id).await
    }
    async fn load_by_id(&self, id: &str) -> adk_graph::Result<Option<Checkpoint>> {
        self.0.load_by_id(id).await
    }
    async fn list(&self, thread_id: &str) -> adk_graph::Result<Vec<Checkpoint>> {
        self.0.list(thread_id).await
    }
    async fn delete(&self, thread_id: &str) -> adk_graph::Result<()> {
        self.0.delete(thread_id).await
    }
}

/// Review finding 4 (mended): the checkpoint save after `execute` fails
/// (adk-graph ends the run with its own `CheckpointError`, which this
/// crate cannot word); the ordinary retry (invoke the thread again)
/// resumes the last saved checkpoint (frontier `[execute]`), sends
/// nothing again, and ends with the action's outcome.
#[tokio::test]
async fn a_retry_after_a_failed_checkpoint_save_after_execute_ends_with_the_outcome_once() {
    let (graph, runtime, _) = graph_with(
        PreviewRoute::Executable,
        Arc::new(FailOnceAfterExecute(
            MemoryCheckpointer::new(),
            std::sync::atomic::AtomicBool::new(false),
        )),
    );
    let thread = "review-store-outage";
    let first = graph.invoke(input(), ExecutionConfig::new(thread)).await;
    assert!(
        matches!(first, Err(GraphError::CheckpointError(_))),
        "{first:?}"
    );
    let retry = graph
        .invoke(input(), ExecutionConfig::new(thread))
        .await
        .unwrap();
    assert_eq!(retry["committed"], true, "{retry:?}");
    assert_eq!(runtime.mutations(), 1, "performed once");
}

// ---------------------------------------------------- claim 2 / parse break

/// Claim 2: an approval must name exactly one authority (`grantId`, or
/// `runtimeApproved: true`). A `grantId` that is present but not a
/// non-empty string is silently ignored, so an approval carrying BOTH keys
/// is taken as runtime-held and the action runs.
#[tokio::test]
async fn an_approval_with_a_non_string_or_empty_grant_id_beside_runtime_approved_is_refused() {
    for (n, grant) in [json!(12345), json!(""), json!({ "id": "g" })]
        .into_iter()
        .enumerate()
    {
        let (graph, runtime, _) = graph(PreviewRoute::NeedsApproval);
        let thread = format!("review-two-authorities-{n}");
        let (checkpoint, preview) = interrupted(&graph, &thread).await;
        let (action, policy) = digests(&preview);
        let answer = json!({
            "actionDigest": action,
            "policyDigest": policy,
            "grantId": grant,
            "runtimeApproved": true,
        });
        let out = resume(&graph, &thread, &checkpoint, approval(answer.clone())).await;
        assert!(
            out.is_err() && runtime.mutations() == 0,
            "an approval naming grantId {grant} AND runtimeApproved ran the action: {:?}",
            out.map(|s| s.get("result").cloned())
        );
    }
}

// -------------------------------------------- claim 1 / claim 2: holds

/// HOLDS: forged state written into the INITIAL input cannot make the
/// graph act or skip the approval: `route: "allowed"`, approval channels,
/// a forged preview/preview_history for an approval preview; and, for an
/// allowed preview, carried approval channels are refused before reserve.
#[tokio::test]
async fn holds_forged_initial_state_never_reserves_or_acts() {
    let forgeries: Vec<(PreviewRoute, &str, Value)> = vec![
        (PreviewRoute::NeedsApproval, "route", json!("allowed")),
        (
            PreviewRoute::Blocked("policy_denied"),
            "route",
            json!("allowed"),
        ),
        (
            PreviewRoute::NeedsApproval,
            "approval_grant_id",
            json!("grant-1"),
        ),
        (
            PreviewRoute::NeedsApproval,
            "approved_action_digest",
            json!("sha256:x"),
        ),
        (
            PreviewRoute::Executable,
            "approval_grant_id",
            json!("grant-1"),
        ),
        (
            PreviewRoute::Executable,
            "approval",
            json!({ "actionDigest": "a", "policyDigest": "p", "runtimeApproved": true }),
        ),
        (
            PreviewRoute::Executable,
            "preview_history",
            json!([{ "forged": true }]),
        ),
        (
            PreviewRoute::NeedsApproval,
            "preview",
            json!({ "forged": true }),
        ),
    ];
    for (n, (route, key, value)) in forgeries.into_iter().enumerate() {
        let (graph, runtime, _) = graph(route);
        let mut state = input();
        state.insert(key.into(), value.clone());
        let out = graph
            .invoke(state, ExecutionConfig::new(&format!("review-forge-{n}")))
            .await;
        let acted = runtime.mutations();
        let reserved = runtime.count(Call::Reserve);
        match route {
            // Allowed preview + carried authority: refused before reserve.
            PreviewRoute::Executable => assert!(
                out.is_err() && reserved == 0 && acted == 0,
                "{key}={value}: {out:?}"
            ),
            _ => assert!(
                reserved == 0 && acted == 0,
                "{key}={value} on {route:?}: reserved {reserved}, acted {acted}: {out:?}"
            ),
        }
    }
}

/// HOLDS (session without a store): resuming twice, resuming under another
/// thread id, and resuming a thread whose run ended run nothing more.
#[tokio::test]
async fn holds_storeless_resume_once_other_thread_and_ended_thread_run_nothing_more() {
    let (runtime, session) = storeless(PreviewRoute::NeedsApproval);
    let checkpointer = Arc::new(MemoryCheckpointer::new());
    let graph = reference_graph_over(Arc::clone(&session), Some(checkpointer)).unwrap();
    let (checkpoint, preview) = interrupted(&graph, "review-storeless").await;
    let (action, policy) = digests(&preview);
    let answer = json!({ "actionDigest": action, "policyDigest": policy, "runtimeApproved": true });
    // Another thread id resuming the same checkpoint: refused.
    let other = resume(
        &graph,
        "review-other",
        &checkpoint,
        approval(answer.clone()),
    )
    .await;
    assert!(other.is_err(), "{other:?}");
    assert_eq!(runtime.mutations(), 0);
    let once = resume(
        &graph,
        "review-storeless",
        &checkpoint,
        approval(answer.clone()),
    )
    .await
    .unwrap();
    assert_eq!(once["committed"], true);
    let twice = resume(
        &graph,
        "review-storeless",
        &checkpoint,
        approval(answer.clone()),
    )
    .await;
    assert!(twice.is_err(), "{twice:?}");
    // The ended thread invoked again, with an approval in its input.
    let ended = graph
        .invoke(approval(answer), ExecutionConfig::new("review-storeless"))
        .await;
    assert!(
        ended.is_ok(),
        "an ended thread re-reads its final state: {ended:?}"
    );
    assert_eq!(runtime.mutations(), 1);
}

/// HOLDS (store of record): two resumes racing on one sealed checkpoint
/// (the interrupting thread and two other thread ids) run it once.
#[tokio::test]
async fn holds_sealed_checkpoint_racing_resumes_run_once() {
    // Racing resumes under two thread ids of one sealed checkpoint.
    let (graph_r, runtime_r, _) = graph(PreviewRoute::NeedsApproval);
    let (cp, preview) = interrupted(&graph_r, "review-race").await;
    let (action, policy) = digests(&preview);
    let answer = json!({ "actionDigest": action, "policyDigest": policy, "runtimeApproved": true });
    let (a, b, c) = tokio::join!(
        resume(&graph_r, "review-race", &cp, approval(answer.clone())),
        resume(&graph_r, "review-race-2", &cp, approval(answer.clone())),
        resume(&graph_r, "review-race-3", &cp, approval(answer.clone())),
    );
    assert_eq!(runtime_r.mutations(), 1, "{a:?}\n{b:?}\n{c:?}");
    assert_eq!(
        [a.is_ok(), b.is_ok(), c.is_ok()]
            .iter()
            .filter(|x| **x)
            .count(),
        1
    );
}

/// Claim (module doc / `build_reference_graph` doc): "no store of record:
/// an approval is resumed by this graph while it lives". With
/// `build_reference_graph` (no adk checkpointer either) a resume is a
/// fresh start: the join overwrites the pending stage and the approval is
/// then refused as "written into the initial state". Fails closed, but the
/// documented approval route cannot complete.
#[tokio::test]
async fn build_reference_graph_completes_an_approval_it_interrupted_for() {
    // `build_reference_graph` uses the system clock: the fake's must agree.
    let clock = adk_computer_use::clock::ManualClock::new(time::OffsetDateTime::now_utc());
    let runtime = FakeRuntime::new(clock);
    runtime.script().route = Some(PreviewRoute::NeedsApproval);
    let graph = build_reference_graph(Arc::clone(&runtime), Arc::new(full_authorizer())).unwrap();
    let (checkpoint, preview) = interrupted(&graph, "review-brg").await;
    let (action, policy) = digests(&preview);
    let answer = json!({ "actionDigest": action, "policyDigest": policy, "runtimeApproved": true });
    let mut with_action = input();
    with_action.insert("approval".into(), answer.clone());
    let plain = resume(&graph, "review-brg", &checkpoint, approval(answer)).await;
    let full = resume(&graph, "review-brg", &checkpoint, with_action).await;
    assert!(
        plain.is_ok() || full.is_ok(),
        "the interrupting graph could not resume its own approval:\n{plain:?}\n{full:?}"
    );
}

/// Claim 1: two invocations on the same thread id concurrently. Reported,
/// not asserted as a break unless the graph misreports: every run that
/// says it committed must report the action it was asked for.
#[tokio::test]
async fn holds_concurrent_runs_on_one_thread_never_report_anothers_action() {
    let (graph, runtime, _) = graph(PreviewRoute::Executable);
    let mut a = State::new();
    a.insert(
        "proposed_action".into(),
        json!({ "tool": "write_clipboard", "arguments": { "text": "from-a" } }),
    );
    let mut b = State::new();
    b.insert(
        "proposed_action".into(),
        json!({ "tool": "write_clipboard", "arguments": { "text": "from-b" } }),
    );
    let (ra, rb) = tokio::join!(
        graph.invoke(a, ExecutionConfig::new("review-same-thread")),
        graph.invoke(b, ExecutionConfig::new("review-same-thread")),
    );
    settle().await;
    let digest = |text: &str| {
        adk_computer_use::digest::sha256_hex(adk_computer_use::digest::canonical_json(&json!({
            "tool": "write_clipboard",
            "arguments": { "text": text },
            "mode": "background",
        })))
    };
    for (who, r) in [("a", &ra), ("b", &rb)] {
        if let Ok(state) = r {
            let asked = state["proposed_action"]["arguments"]["text"]
                .as_str()
                .unwrap();
            let ran = state["preview"]["envelope"]["argsDigest"].as_str().unwrap();
            let other = if asked == "from-a" {
                "from-b"
            } else {
                "from-a"
            };
            assert_eq!(
                ran,
                digest(asked),
                "run {who} asked for {asked:?}, reports committed, but performed {}",
                if ran == digest(other) { other } else { "?" }
            );
        }
    }
    eprintln!(
        "concurrent same-thread: a={:?}\nb={:?}\nmutations={} active_reservations={}",
        ra.as_ref().map(|s| s.get("result").cloned()),
        rb.as_ref().map(|s| s.get("result").cloned()),
        runtime.mutations(),
        runtime.active_reservations()
    );
    assert_eq!(runtime.active_reservations(), 0);
}

/// A checkpointer that keeps nothing (every thread starts afresh) and
/// fails the save taken right after `reserve_target` (frontier
/// `[acquire_lease]`) once: a run ends there with its reservation held in
/// the compiled graph, and the next invocation of the thread starts a new
/// run from the start.
struct ForgetsAndFailsAfterReserve(std::sync::atomic::AtomicBool);

#[adk_core::async_trait]
impl Checkpointer for ForgetsAndFailsAfterReserve {
    async fn save(&self, checkpoint: &Checkpoint) -> adk_graph::Result<String> {
        if checkpoint.pending_nodes == ["acquire_lease"]
            && !self.0.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return Err(GraphError::CheckpointError(
                "store unavailable (injected)".into(),
            ));
        }
        Ok(checkpoint.checkpoint_id.clone())
    }
    async fn load(&self, _: &str) -> adk_graph::Result<Option<Checkpoint>> {
        Ok(None)
    }
    async fn load_by_id(&self, _: &str) -> adk_graph::Result<Option<Checkpoint>> {
        Ok(None)
    }
    async fn list(&self, _: &str) -> adk_graph::Result<Vec<Checkpoint>> {
        Ok(Vec::new())
    }
    async fn delete(&self, _: &str) -> adk_graph::Result<()> {
        Ok(())
    }
}

/// A new run on a thread whose earlier run still holds a reservation is
/// refused at `join_observations`, naming what is held, and drops nothing:
/// the reservation stays held (not released by a run that never owned it)
/// until the graph holding it is dropped.
#[tokio::test]
async fn a_new_run_on_a_thread_holding_a_reservation_is_refused_and_drops_nothing() {
    let (graph, runtime, _) = graph_with(
        PreviewRoute::Executable,
        Arc::new(ForgetsAndFailsAfterReserve(
            std::sync::atomic::AtomicBool::new(false),
        )),
    );
    let thread = "review-holding";
    let first = graph.invoke(input(), ExecutionConfig::new(thread)).await;
    assert!(
        matches!(first, Err(GraphError::CheckpointError(_))),
        "{first:?}"
    );
    assert_eq!(runtime.active_reservations(), 1, "the first run holds it");
    let second = graph.invoke(input(), ExecutionConfig::new(thread)).await;
    assert!(
        matches!(&second, Err(GraphError::NodeExecutionFailed { node, message })
            if node == "join_observations" && message.contains("a reserved target")),
        "{second:?}"
    );
    settle().await;
    assert_eq!(runtime.active_reservations(), 1, "nothing was dropped");
    assert_eq!(runtime.mutations(), 0);
    drop(graph);
    settle().await;
    assert_eq!(runtime.active_reservations(), 0, "released with the graph");
}
