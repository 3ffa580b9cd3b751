//! Two agents of one execution group want the same window at the same time.
//! The reservation and the one-writer lease decide; the loser gets a clear
//! refusal, and the simulator's own counters show nothing ran twice.
//!
//! `cargo run --features sim --example multi_agent`

#[path = "support/sim_child.rs"]
mod sim_child;

use std::sync::Arc;

use adk_computer_use::auth::{ScopeAuthorizer, VerifiedIdentity};
use adk_computer_use::clock::format_rfc3339;
use adk_computer_use::contracts::*;
use adk_computer_use::protocol::{ChainOutcome, SealingKey, Session};
use adk_computer_use::runtime::ProposedAction;
use adk_computer_use::runtime::mcp::{ComputerUseMcpRuntime, McpRuntimeConfig};
use adk_computer_use::sim::{CLIPBOARD_APP, CLIPBOARD_WINDOW};
use serde_json::{Map, json};

type Error = Box<dyn std::error::Error>;
const PRINCIPAL: &str = "principal-team";

fn agent(
    runtime: &Arc<ComputerUseMcpRuntime>,
    name: &str,
) -> Result<Session<ComputerUseMcpRuntime>, Error> {
    let identity = VerifiedIdentity::new(PRINCIPAL, "tenant-team")?;
    let authorizer =
        ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"])?;
    Ok(Session::builder(
        Arc::clone(runtime),
        runtime.session_id()?,
        authorizer,
        SealingKey::new(vec![1; 32])?,
    )
    .agent_id(name)
    .execution_group_id("team")
    .build()?)
}

fn write(action_id: &str, text: &str) -> Result<ProposedAction, Error> {
    let target = TargetEvidence {
        platform: std::env::consts::OS.into(),
        app_id: CLIPBOARD_APP.into(),
        pid: None,
        window_id: Some(WindowId::Number(CLIPBOARD_WINDOW)),
        window_title_digest: None,
        display_id: None,
        role: None,
        label_digest: None,
        bounds: None,
        observation_id: "shared-observation".into(),
        screenshot_hash: None,
        ui_tree_revision: None,
        confidence: 1.0,
        captured_at: format_rfc3339(time::OffsetDateTime::now_utc())?,
    };
    Ok(ProposedAction::new(
        "write_clipboard",
        json!({ "text": text }),
        ExecutionMode::Background,
    )
    .with_action_id(action_id)
    .with_target(target))
}

fn report(
    name: &str,
    outcome: Result<ChainOutcome<ComputerUseMcpRuntime>, adk_computer_use::ComputerUseError>,
) {
    match outcome {
        Ok(ChainOutcome::Completed(done)) => println!(
            "{name}: ran, receipt {} ({})",
            done.receipt_id(),
            done.outcome().status()
        ),
        Ok(ChainOutcome::NeedsApproval(_)) => println!("{name}: waits for approval"),
        Ok(ChainOutcome::Blocked(blocked)) => println!("{name}: blocked ({})", blocked.blocker()),
        Err(err) => println!("{name}: refused: {err}"),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    if sim_child::serve_if_asked().await? {
        return Ok(());
    }
    // Slow calls make the two chains overlap for certain.
    let command = sim_child::command(&["--principal", PRINCIPAL, "--slow-ms", "20"])?;
    let runtime =
        Arc::new(ComputerUseMcpRuntime::spawn(command, McpRuntimeConfig::new(PRINCIPAL)).await?);
    runtime
        .start_session(Some("two agents, one window"), Some("team"))
        .await?;
    let alice = agent(&runtime, "alice")?;
    let bob = agent(&runtime, "bob")?;

    let (a, b) = tokio::join!(
        alice.run(write("alice-1", "from alice")?),
        bob.run(write("bob-1", "from bob")?)
    );
    report("alice", a);
    report("bob", b);

    let stats = runtime.call("sim_stats", Map::new()).await?.0;
    println!(
        "simulator: {} effect(s) in all, at most {} per action, {} active reservation(s), clipboard {:?}",
        stats["totalEffects"],
        stats["maxEffectsPerAction"],
        stats["activeReservations"],
        stats["clipboard"]
    );
    let _ = alice.shutdown().await;
    let _ = bob.shutdown().await;
    runtime.shutdown().await?;
    Ok(())
}
