//! The desktop server as a child process (`computer-use-server`) and a
//! governed session over it. A failure here fails the calling test, so
//! these helpers panic with what went wrong rather than return it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use::contracts::catalogue::tool;
use std::sync::Arc;

use adk_computer_use::auth::{ScopeAuthorizer, VerifiedIdentity};
use adk_computer_use::chain::{
    Approval, Approved, ChainOutcome, PendingApproval, Route, Session, Verified,
};
use adk_computer_use::contracts::*;
use adk_computer_use::digest::sha256_prefixed;
use adk_computer_use::mcp::{ComputerUseMcpRuntime, GrantRequest, McpApprover, McpRuntimeConfig};
use adk_computer_use::runtime::ProposedAction;
use computer_use_server::{CLIPBOARD_APP, CLIPBOARD_LABEL, CLIPBOARD_ROLE, CLIPBOARD_WINDOW};
use serde_json::{Value, json};

/// The principal the child server authenticates every caller as.
pub const PRINCIPAL: &str = "principal-e2e";

/// A simulator child process: the runtime an agent is handed, and apart
/// from it the host's approver (reached as `sim.approver`). It derefs to
/// the runtime, so it goes wherever a runtime handle goes.
pub struct Sim {
    /// The runtime, for sessions and agents.
    pub runtime: Arc<ComputerUseMcpRuntime>,
    /// The host's approver, kept apart from the runtime.
    pub approver: McpApprover,
}

impl std::ops::Deref for Sim {
    type Target = Arc<ComputerUseMcpRuntime>;
    fn deref(&self) -> &Self::Target {
        &self.runtime
    }
}

impl Sim {
    /// Starts the observation `tool` with `args` (a wait, say) on a task of
    /// its own, so the test can act while it runs: its structured answer,
    /// or the runtime's error, once it ends.
    pub fn observe_in_background(
        &self,
        tool: &'static str,
        args: Value,
    ) -> tokio::task::JoinHandle<Result<Value, adk_computer_use::ComputerUseError>> {
        let runtime = Arc::clone(&self.runtime);
        tokio::spawn(async move {
            runtime
                .observe_shadow(tool, args)
                .await
                .map(|observed| observed.structured)
        })
    }
}

/// Starts `computer-use-server` (with `--stats` and `flags`) as a child
/// process authenticating [`PRINCIPAL`], and a session in group `group-e2e`.
pub async fn spawn_sim(flags: &[&str]) -> Sim {
    spawn_sim_as(flags, PRINCIPAL).await
}

/// As [`spawn_sim`], the client claiming to act for `principal` (which a
/// test may make differ from the server's).
pub async fn spawn_sim_as(flags: &[&str], principal: &str) -> Sim {
    let mut command = tokio::process::Command::new(crate::binary::path(crate::binary::SERVER));
    command
        .arg("--principal")
        .arg(PRINCIPAL)
        .arg("--stats")
        .args(flags);
    let config = McpRuntimeConfig::new(principal)
        .capability_tool(tool::WRITE_CLIPBOARD)
        .read_only_extension(crate::STATS_TOOL)
        .unwrap();
    let (runtime, approver) = ComputerUseMcpRuntime::spawn_with_approver(command, config)
        .await
        .unwrap();
    runtime
        .start_session(Some("e2e"), Some("group-e2e"))
        .await
        .unwrap();
    Sim {
        runtime: Arc::new(runtime),
        approver,
    }
}

/// A governed session of [`PRINCIPAL`] on the simulator's clipboard window.
pub fn session(
    runtime: &Arc<ComputerUseMcpRuntime>,
    agent: &str,
) -> Session<ComputerUseMcpRuntime> {
    session_on(
        runtime,
        agent,
        CLIPBOARD_APP,
        Some(WindowId::Number(CLIPBOARD_WINDOW)),
    )
}

/// A governed session of [`PRINCIPAL`], acting as `agent` on `app` (and
/// `window`, when one is named), with every execution scope.
pub fn session_on(
    runtime: &Arc<ComputerUseMcpRuntime>,
    agent: &str,
    app: &str,
    window: Option<WindowId>,
) -> Session<ComputerUseMcpRuntime> {
    Session::builder(Arc::clone(runtime), sim_authorizer())
        .agent_id(agent)
        .target(app, window)
        .build()
        .unwrap()
}

/// [`PRINCIPAL`] with every execution scope.
pub fn sim_authorizer() -> ScopeAuthorizer {
    let identity = VerifiedIdentity::new(PRINCIPAL, "tenant-e2e").unwrap();
    ScopeAuthorizer::new(
        identity,
        [
            "computer:plan",
            "computer:execute:background",
            "computer:execute:foreground",
        ],
    )
    .unwrap()
}

/// The host approves exactly `pending`, through its own approver.
pub async fn host_approves(
    host: &Sim,
    pending: PendingApproval<ComputerUseMcpRuntime>,
) -> Approved<ComputerUseMcpRuntime> {
    let grant = host
        .approver
        .approve_action(
            &GrantRequest::for_pending(&pending),
            ApprovalScope::ExactAction,
            None,
        )
        .await
        .unwrap();
    let approval = Approval::from_grant(pending.action_id(), &grant);
    pending.approve(approval).unwrap()
}

/// Observes and previews `action`; approved by the policy or, when it asks
/// for a person, by the host.
pub async fn approved(
    host: &Sim,
    session: &Session<ComputerUseMcpRuntime>,
    action: &ProposedAction,
) -> Approved<ComputerUseMcpRuntime> {
    let previewed = session
        .observe()
        .await
        .unwrap()
        .preview(action)
        .await
        .unwrap();
    match previewed.route() {
        Route::Allowed(approved) => approved,
        Route::NeedsApproval(pending) => host_approves(host, pending).await,
        Route::Blocked(blocked) => {
            panic!("blocked ({}): {:?}", blocked.blocker(), blocked.reasons())
        }
    }
}

/// Runs `action` to its end, approved by the host when the policy asks.
pub async fn run_approving(
    host: &Sim,
    session: &Session<ComputerUseMcpRuntime>,
    action: ProposedAction,
) -> Verified {
    match session.run(action).await.unwrap() {
        ChainOutcome::Completed(done) => done,
        ChainOutcome::NeedsApproval(pending) => {
            host_approves(host, pending).await.complete().await.unwrap()
        }
        ChainOutcome::Blocked(blocked) => {
            panic!("blocked ({}): {:?}", blocked.blocker(), blocked.reasons())
        }
    }
}

/// Target evidence of the simulated clipboard window, as it first shows.
pub fn clipboard_target() -> TargetEvidence {
    TargetEvidence {
        platform: "linux".into(),
        app_id: CLIPBOARD_APP.into(),
        pid: None,
        window_id: Some(WindowId::Number(CLIPBOARD_WINDOW)),
        window_title_digest: None,
        display_id: None,
        role: Some(CLIPBOARD_ROLE.into()),
        label_digest: None,
        bounds: None,
        observation_id: "observation-e2e".into(),
        screenshot_hash: None,
        ui_tree_revision: None,
        confidence: 1.0,
        captured_at: adk_computer_use::clock::format_rfc3339(time::OffsetDateTime::now_utc())
            .unwrap(),
    }
}

/// "Place this text on the clipboard", with or without a digest postcondition.
pub fn write_clipboard(action_id: &str, text: &str, with_postcondition: bool) -> ProposedAction {
    let mut action = ProposedAction::new(
        tool::WRITE_CLIPBOARD,
        json!({ "text": text }),
        ExecutionMode::Background,
    )
    .with_action_id(action_id)
    .with_target(clipboard_target())
    .with_data_labels([DataLabel::Public]);
    if with_postcondition {
        action = action.with_postcondition(
            ActionPostcondition::try_from(PostconditionFields::UiElement {
                role: Some(CLIPBOARD_ROLE.into()),
                label: Some(CLIPBOARD_LABEL.into()),
                exists: true,
                value_digest: Some(sha256_prefixed(text)),
            })
            .unwrap(),
        );
    }
    action
}

/// The server's own counters (`sim_stats`).
pub async fn stats(runtime: &ComputerUseMcpRuntime) -> Value {
    runtime
        .call("sim_stats", serde_json::Map::new())
        .await
        .unwrap()
        .0
}

/// True when `pid` is neither running nor a zombie.
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next());
            state == Some("X")
        }
    }
}

/// Whether process `pid` has exited (waits up to a few seconds).
pub async fn wait_gone(pid: u32) -> bool {
    for _ in 0..100 {
        if process_gone(pid) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

/// Runs one action to completion, retrying the same action id (so a retry is
/// idempotent) with jittered exponential backoff while another agent holds
/// the window or the lease. Returns the verified action and the retries.
pub async fn run_until_done(
    session: &Session<ComputerUseMcpRuntime>,
    action_id: &str,
    seed: u64,
) -> (Verified, u32) {
    let mut retries = 0u32;
    loop {
        match session
            .run(write_clipboard(action_id, action_id, true))
            .await
        {
            Ok(ChainOutcome::Completed(done)) => return (done, retries),
            Ok(_) => panic!("{action_id}: the simulator did not allow the action"),
            Err(err)
                if matches!(
                    err.refusal_code(),
                    Some("target_conflict" | "lease_conflict")
                ) =>
            {
                retries += 1;
                // A bound, so a livelock fails the test instead of hanging it.
                assert!(
                    retries < 5_000,
                    "{action_id}: still refused after {retries} retries: {err}"
                );
                // Exponential backoff from about one uncontended chain's
                // time, with jitter (half the step, spread by a hash of the
                // seed and the try): retrying sooner only adds refused
                // chains for the holder's server to answer.
                let step = 16u64 << retries.min(6);
                let mut mixed = seed ^ (u64::from(retries) << 32);
                mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                let jitter = (mixed ^ (mixed >> 31)) % (step / 2);
                tokio::time::sleep(std::time::Duration::from_millis(step / 2 + jitter)).await;
            }
            Err(err) => panic!("{action_id}: {err}"),
        }
    }
}
