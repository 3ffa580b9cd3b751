//! The agent loop against the simulator over MCP: a recorded three-step
//! task completes, and an action that needs a person is suspended to a
//! sealed checkpoint and resumed once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use adk_computer_use::agent::{AgentLoop, AgentStop, AllowedActions, PlanOutput, ScriptedPlanner};
use adk_computer_use::chain::{Approval, MemoryCheckpointStore, SealingKey};
use adk_computer_use::contracts::{ApprovalScope, ExecutionMode};
use adk_computer_use::eval::ComputerUseEvaluator;
use adk_computer_use::journal::{Journal, MemoryJournal, journal_events, verify_journal};
use adk_computer_use::mcp::{GrantRequest, McpApprover};
use adk_computer_use::{
    ComputerUseMcpRuntime, McpRuntimeConfig, ScopeAuthorizer, Session, VerifiedIdentity,
};
use computer_use_server::{CLIPBOARD_APP, Config};
use serde_json::json;

const TRANSCRIPT: &str = include_str!("../examples/transcripts/three_steps.json");

async fn runtime(sim: Config) -> Arc<ComputerUseMcpRuntime> {
    host(sim).await.0
}

/// The runtime an agent is handed, and apart from it the host's approver.
async fn host(sim: Config) -> (Arc<ComputerUseMcpRuntime>, McpApprover) {
    let (runtime, approver) =
        adk_computer_use_testkit::spawn(sim.with_stats(), McpRuntimeConfig::new("alice"))
            .await
            .unwrap();
    runtime
        .start_session(Some("agent"), Some("team"))
        .await
        .unwrap();
    (Arc::new(runtime), approver)
}

fn session(
    runtime: &Arc<ComputerUseMcpRuntime>,
    journal: Arc<Journal>,
) -> Session<ComputerUseMcpRuntime> {
    Session::builder(
        Arc::clone(runtime),
        alice_may("computer:execute:background"),
    )
    .agent_id("agent-e2e")
    .target(CLIPBOARD_APP, None)
    .journal(journal)
    .checkpoints(Arc::new(MemoryCheckpointStore::new(
        SealingKey::new(vec![7u8; 32]).unwrap(),
    )))
    .build()
    .unwrap()
}

/// Clicks in the foreground, the only actions the foreground tests allow.
fn clicks() -> AllowedActions {
    AllowedActions::default().allow("left_click", &[ExecutionMode::Foreground], None)
}

/// A session of alice allowed to act in the foreground, aimed at the clipboard app.
fn foreground(runtime: &Arc<ComputerUseMcpRuntime>) -> Session<ComputerUseMcpRuntime> {
    Session::builder(
        Arc::clone(runtime),
        alice_may("computer:execute:foreground"),
    )
    .target(CLIPBOARD_APP, None)
    .build()
    .unwrap()
}

fn writes() -> AllowedActions {
    AllowedActions::default().allow("write_clipboard", &[ExecutionMode::Background], None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_three_step_task_completes_and_its_journal_evaluates_clean() {
    let runtime = runtime(Config::for_principal("alice")).await;
    let sink = Arc::new(MemoryJournal::new());
    let session = session(&runtime, Arc::new(Journal::new(sink.clone())));
    let planner =
        ScriptedPlanner::from_transcript(&serde_json::from_str(TRANSCRIPT).unwrap()).unwrap();
    let report = AgentLoop::new(&session, planner, writes())
        .budget(5)
        .run("three steps")
        .await
        .into_result()
        .unwrap();
    assert!(matches!(report.stop, AgentStop::Done { .. }), "{report:?}");
    assert_eq!(report.history.len(), 3);
    // A planner's output carries no postcondition: each write's is derived
    // from its text and checked by the simulator.
    assert!(
        report.history.iter().all(|s| s.outcome == "completed"),
        "{report:?}"
    );
    let stats = sim_stats(&runtime).await;
    assert_eq!(stats["clipboard"], "step 3: final");
    assert_eq!(stats["maxEffectsPerAction"], 1);
    let entries = sink.entries();
    verify_journal(&entries, None).unwrap();
    let types: Vec<&str> = entries
        .iter()
        .map(|e| e.event.event_type.as_str())
        .collect();
    assert_eq!(types.iter().filter(|t| **t == "agent.planned").count(), 3);
    assert_eq!(types.iter().filter(|t| **t == "agent.done").count(), 1);
    assert!(
        ComputerUseEvaluator::new()
            .evaluate(&journal_events(&entries))
            .passed
    );
    assert!(
        ComputerUseEvaluator::new()
            .evaluate(&runtime.all_session_events().await.unwrap())
            .passed
    );
    let stats = session.shutdown().await;
    assert_eq!(stats.leaked(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_that_needs_a_person_is_suspended_and_resumed_once() {
    let (runtime, approver) = host(confirming_writes()).await;
    let session = scratch_session(&runtime);
    let planner = ScriptedPlanner::new([PlanOutput::Structured(json!({
        "kind": "act", "tool": "write_clipboard", "arguments": { "text": "approved" },
        "mode": "background", "data_labels": ["public"], "summary": ""
    }))]);
    let report = AgentLoop::new(&session, planner, writes())
        .suspend_to_checkpoints()
        .run("needs a person")
        .await
        .into_result()
        .unwrap();
    let AgentStop::Suspended {
        checkpoint,
        action_id,
        action_digest,
        policy_digest,
    } = report.stop
    else {
        panic!("expected a suspended approval: {report:?}");
    };
    let stats = sim_stats(&runtime).await;
    assert_eq!(stats["totalEffects"], 0, "nothing ran before the approval");
    // The host's approver, never the agent's session, grants it.
    let grant = exact_grant(
        &approver,
        &GrantRequest::new(
            runtime.session_id().unwrap(),
            &action_id,
            &action_digest,
            &policy_digest,
        ),
    )
    .await;
    let done = session
        .resume(&checkpoint, Approval::from_grant(&action_id, &grant))
        .await
        .unwrap()
        .complete()
        .await
        .unwrap();
    assert!(done.performed());
    assert!(
        session
            .resume(&checkpoint, Approval::from_grant(&action_id, &grant))
            .await
            .is_err()
    );
    let stats = sim_stats(&runtime).await;
    assert_eq!(stats["clipboard"], "approved");
    assert_eq!(stats["totalEffects"], 1);
    let _ = session.shutdown().await;
}

struct Acknowledge(bool);

impl adk_computer_use::agent::SafetyAcknowledger for Acknowledge {
    fn acknowledge(
        &self,
        checks: &[serde_json::Value],
        preview: &adk_computer_use::contracts::ActionPreview,
    ) -> Option<Approval> {
        assert_eq!(checks[0]["code"], "malicious_instructions");
        self.0.then(|| {
            Approval::runtime_held(
                preview.envelope.action_id.clone(),
                preview.envelope.args_digest.clone(),
                preview.policy.policy_digest.clone(),
            )
        })
    }
}

/// OpenAI's pending safety checks are acknowledged only with an approval
/// of the exact previewed action, never automatically.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_safety_checks_stop_the_loop_until_an_approval_names_the_action() {
    let runtime = runtime(Config::for_principal("alice")).await;
    let session = foreground(&runtime);
    let click = || {
        PlanOutput::OpenAi(json!({
            "type": "computer_call",
            "action": { "type": "click", "x": 100, "y": 100, "button": "left" },
            "pending_safety_checks": [{ "id": "cu_sc_1", "code": "malicious_instructions", "message": "The page asks to do something else." }],
        }))
    };
    let clicks = clicks();
    let stopped = AgentLoop::new(&session, ScriptedPlanner::new([click()]), clicks.clone())
        .acknowledger(&Acknowledge(false))
        .run("click it")
        .await
        .into_result()
        .unwrap();
    assert!(
        matches!(stopped.stop, AgentStop::SafetyChecks { .. }),
        "{stopped:?}"
    );
    let stats = sim_stats(&runtime).await;
    assert_eq!(
        stats["totalEffects"], 0,
        "nothing ran without the acknowledgement"
    );
    let done = ScriptedPlanner::new([
        click(),
        PlanOutput::Structured(json!({ "kind": "done", "summary": "clicked" })),
    ]);
    let report = AgentLoop::new(&session, done, clicks)
        .acknowledger(&Acknowledge(true))
        .run("click it")
        .await
        .into_result()
        .unwrap();
    assert!(matches!(report.stop, AgentStop::Done { .. }), "{report:?}");
    assert_eq!(report.history[0].tool.as_deref(), Some("left_click"));
    let stats = sim_stats(&runtime).await;
    assert_eq!(stats["totalEffects"], 1);
    let _ = session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_allowed_actions_come_from_what_the_server_reports() {
    let runtime = runtime(Config::for_principal("alice")).await;
    let allowed = adk_computer_use::agent::allowed_actions(
        &runtime,
        &["write_clipboard", "read_clipboard", "no_such_tool"],
    )
    .await
    .unwrap();
    assert_eq!(
        allowed.tools().collect::<Vec<_>>(),
        ["read_clipboard", "write_clipboard"]
    );
    let schema = allowed.schema();
    assert_eq!(
        schema["properties"]["mode"]["enum"],
        json!(["background", "foreground", null]),
        "shadow is the chain's, never the model's"
    );
    runtime.shutdown().await.unwrap();
}

/// The CancellationBridge pauses the runtime session first, then stops the
/// loop before its next step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cancellation_bridge_revokes_authority_then_stops_the_loop() {
    use adk_computer_use::runtime::{CancellationBridge, StopKind};
    let runtime = runtime(Config::for_principal("alice")).await;
    let session = scratch_session(&runtime);
    let planner =
        ScriptedPlanner::from_transcript(&serde_json::from_str(TRANSCRIPT).unwrap()).unwrap();
    let agent = AgentLoop::new(&session, planner, writes());
    let bridge = CancellationBridge::new(Arc::clone(&runtime), agent.interrupter());
    bridge
        .cancel(StopKind::Pause, "the person took over")
        .await
        .unwrap();
    let report = agent.run("three steps").await.into_result().unwrap();
    assert!(matches!(report.stop, AgentStop::Interrupted), "{report:?}");
    let state = runtime.get_session().await.unwrap().state;
    assert_eq!(state, "paused_by_user");
    let stats = sim_stats(&runtime).await;
    assert_eq!(stats["totalEffects"], 0);
    let _ = session.shutdown().await;
}

/// Review findings on the agent layer, each as a test.
mod review {
    use super::*;
    use adk_computer_use::runtime::AgentInterrupter;

    /// A structured click is hit-tested like a mapped one: a point in
    /// another app's window gets that window's evidence, which a session
    /// aimed at the clipboard refuses; nothing reaches the runtime.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_structured_click_is_hit_tested_too() {
        let runtime = runtime(Config::for_principal("alice")).await;
        let session = foreground(&runtime);
        for coordinate in [json!([700, 200]), json!([-50, 99999])] {
            let planner = ScriptedPlanner::new([PlanOutput::Structured(json!({
                "kind": "act", "tool": "left_click", "arguments": { "coordinate": coordinate },
                "mode": "foreground", "data_labels": [], "summary": ""
            }))]);
            let report = AgentLoop::new(&session, planner, clicks())
                .run("click")
                .await;
            assert!(report.error().is_some(), "{coordinate}: {report:?}");
        }
        let stats = sim_stats(&runtime).await;
        assert_eq!(stats["totalEffects"], 0);
        let _ = session.shutdown().await;
    }

    /// Safety checks on a read stop the loop too, and checks in any other
    /// shape than a list are refused, never dropped.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn safety_checks_are_never_dropped() {
        let runtime = runtime(Config::for_principal("alice")).await;
        let session = foreground(&runtime);
        let shot = ScriptedPlanner::new([PlanOutput::OpenAi(json!({
            "action": { "type": "screenshot" },
            "pending_safety_checks": [{ "id": "cu_sc_9", "code": "irrelevant_domain" }],
        }))]);
        let report = AgentLoop::new(&session, shot, clicks()).run("look").await;
        assert!(
            matches!(report.stop, AgentStop::SafetyChecks { preview: None, .. }),
            "{report:?}"
        );
        let object = ScriptedPlanner::new([PlanOutput::OpenAi(json!({
            "action": { "type": "click", "x": 100, "y": 100 },
            "pending_safety_checks": { "id": "cu_sc_1", "code": "malicious_instructions" },
        }))]);
        let report = AgentLoop::new(&session, object, clicks())
            .run("click")
            .await;
        assert_eq!(
            report.error().and_then(|e| e.field()),
            Some("pending_safety_checks"),
            "{report:?}"
        );
        let stats = sim_stats(&runtime).await;
        assert_eq!(stats["totalEffects"], 0);
        let _ = session.shutdown().await;
    }

    /// An interrupt cuts a model's wait short.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_interrupt_cuts_a_wait_short() {
        let runtime = runtime(Config::for_principal("alice")).await;
        let session = foreground(&runtime);
        let planner = ScriptedPlanner::new([PlanOutput::Anthropic(
            json!({ "action": "wait", "duration": 300 }),
        )]);
        let agent = AgentLoop::new(&session, planner, clicks());
        let interrupter = agent.interrupter();
        let started = std::time::Instant::now();
        let (report, ()) = tokio::join!(agent.run("wait"), async {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            interrupter.interrupt("stop").await;
        });
        assert!(matches!(report.stop, AgentStop::Interrupted), "{report:?}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "bounded by the interrupt, not the wait"
        );
        let _ = session.shutdown().await;
    }

    /// A failure after steps ran keeps the history of what ran.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failure_keeps_the_history_of_what_ran() {
        let runtime = runtime(Config::for_principal("alice")).await;
        let session = scratch_session(&runtime);
        let planner = ScriptedPlanner::new([
            PlanOutput::Structured(
                json!({ "kind": "act", "tool": "write_clipboard", "arguments": { "text": "a" }, "mode": "background", "data_labels": [], "summary": "" }),
            ),
            PlanOutput::Structured(
                json!({ "kind": "act", "tool": "run_script", "arguments": {}, "mode": "background", "data_labels": [], "summary": "" }),
            ),
        ]);
        let report = AgentLoop::new(&session, planner, writes()).run("two").await;
        assert_eq!(report.history.len(), 1, "{report:?}");
        assert_eq!(report.error().and_then(|e| e.field()), Some("tool"));
        let _ = session.shutdown().await;
    }
}

/// Over MCP: a person approves after the envelope expired; the action is
/// previewed again under the same id and runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_mcp_an_approval_given_after_the_envelope_expired_still_runs_once() {
    use adk_computer_use::ProposedAction;
    use adk_computer_use::chain::ChainOutcome;
    use adk_computer_use::contracts::DataLabel;
    let (runtime, approver) = host(confirming_writes()).await;
    let session = scratch_session(&runtime);
    let action = ProposedAction::new(
        "write_clipboard",
        json!({ "text": "late" }),
        ExecutionMode::Background,
    )
    .with_action_id("late-mcp")
    .with_data_labels([DataLabel::Public])
    .with_expires_in_ms(300);
    let pending = match session.run(action).await.unwrap() {
        ChainOutcome::NeedsApproval(pending) => pending,
        _ => panic!("approval required"),
    };
    let id = pending.suspend().await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    // The server approves only a live preview: preview it again first.
    let refreshed = session.refresh(&id).await.unwrap();
    assert!(session.refresh(&id).await.is_err(), "once");
    let grant = exact_grant(&approver, &GrantRequest::for_pending(&refreshed)).await;
    let done = refreshed
        .approve(Approval::from_grant("late-mcp", &grant))
        .unwrap()
        .complete()
        .await
        .unwrap();
    assert!(done.performed());
    let stats = sim_stats(&runtime).await;
    assert_eq!(stats["clipboard"], "late");
    assert_eq!(stats["totalEffects"], 1);
    let _ = session.shutdown().await;
}

/// The simulator's own counters (`sim_stats`).
async fn sim_stats(runtime: &ComputerUseMcpRuntime) -> serde_json::Value {
    runtime
        .call("sim_stats", Default::default())
        .await
        .unwrap()
        .0
}

/// A session of the agent's (see [`session`]) journaled to a journal nobody reads.
fn scratch_session(runtime: &Arc<ComputerUseMcpRuntime>) -> Session<ComputerUseMcpRuntime> {
    session(
        runtime,
        Arc::new(Journal::new(Arc::new(MemoryJournal::new()))),
    )
}

/// Alice, allowed to plan and to act under `execute_scope`.
fn alice_may(execute_scope: &str) -> ScopeAuthorizer {
    let identity = VerifiedIdentity::new("alice", "t").unwrap();
    ScopeAuthorizer::new(identity, ["computer:plan", execute_scope]).unwrap()
}

/// A simulator of alice's that asks a person before every clipboard write.
fn confirming_writes() -> Config {
    let mut config = Config::for_principal("alice");
    config.confirm_tools.insert("write_clipboard".into());
    config
}

/// The host's grant, through `approver`, of exactly the action `request` names.
async fn exact_grant(
    approver: &McpApprover,
    request: &GrantRequest,
) -> adk_computer_use::contracts::ApprovalGrant {
    approver
        .approve_action(request, ApprovalScope::ExactAction, None)
        .await
        .unwrap()
}
