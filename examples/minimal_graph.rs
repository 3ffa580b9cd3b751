//! The whole governed chain against an in-process runtime: no server, no
//! network, no desktop. Each stage is printed as it passes.
//!
//! The action declares no postcondition, and this in-process runtime offers
//! no check of a clipboard write to derive one from, so the chain reports
//! `performed: true, verified: false` (and says why) instead of claiming an
//! observation it never made.
//!
//! Run it with `cargo run --example minimal_graph`.

#[path = "support/desktop.rs"]
mod desktop;

use std::sync::Arc;

use adk_computer_use::auth::{ScopeAuthorizer, VerifiedIdentity};
use adk_computer_use::chain::{Route, Session};
use adk_computer_use::contracts::ExecutionMode;
use adk_computer_use::runtime::ProposedAction;
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Arc::new(desktop::InProcessDesktop::new(&[]));
    // The host verified who is asking; these values never come from the model.
    let identity = VerifiedIdentity::new(desktop::PRINCIPAL, "tenant-demo")?;
    let authorizer =
        ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"])?;
    // The session id and principal are the runtime's; a session built for
    // another principal is refused here.
    let session = Session::builder(Arc::clone(&runtime), authorizer)
        .agent_id("executor")
        .build()?;

    let observed = session.observe().await?;
    let frames = observed.observations();
    println!(
        "observed: {} capabilities, visual {:?}, semantic {:?} (joined)",
        frames.capabilities.len(),
        frames.visual.observation_id.as_deref().unwrap_or("-"),
        frames.semantic.observation_id.as_deref().unwrap_or("-"),
    );

    let seen = frames.semantic.observation_id.clone().unwrap_or_default();
    let action = ProposedAction::new(
        "write_clipboard",
        json!({ "text": "hello" }),
        ExecutionMode::Background,
    )
    .with_target(desktop::clipboard_target(&seen));
    let previewed = observed.preview(&action).await?;
    let envelope = &previewed.preview().envelope;
    println!(
        "previewed: action {} digest {}",
        envelope.action_id,
        &envelope.args_digest[..16]
    );

    let approved = match previewed.route() {
        Route::Allowed(approved) => approved,
        Route::NeedsApproval(_) => return Err("the demo policy asked for approval".into()),
        Route::Blocked(blocked) => return Err(format!("blocked: {}", blocked.blocker()).into()),
    };
    println!("routed: allowed by policy");

    let reserved = approved.reserve().await?;
    println!(
        "reserved: {}",
        reserved
            .reservation()
            .map_or("no reservation needed", |r| r.reservation_id.as_str())
    );
    let leased = reserved.lease().await?;
    println!(
        "leased: {} (budget {})",
        leased.lease().lease_id,
        leased.lease().action_budget
    );
    let executed = leased.execute().await?;
    println!(
        "executed: receipt {} ({:?})",
        executed.receipt().receipt_id,
        executed.receipt().status
    );
    let verified = executed.verify().await?;
    println!("verified: {}", verified.outcome());

    let stats = session.shutdown().await;
    println!("clipboard now holds {:?}", runtime.clipboard());
    println!(
        "released: {} explicit, {} leaked",
        stats.reservations.explicit_released,
        stats.leaked()
    );
    println!(
        "performed: {}, verified: {}",
        verified.performed(),
        verified.outcome().is_verified()
    );
    Ok(())
}
