//! Durable approval: an action that needs a person is suspended to a sealed
//! checkpoint file, and a later invocation resumes it with the approval.
//!
//! ```text
//! cargo run --example approval_resume                      # the whole story in one go
//! cargo run --example approval_resume -- suspend DIR       # first invocation: prints the checkpoint id
//! cargo run --example approval_resume -- resume DIR ID     # second invocation: approves and completes
//! cargo run --example approval_resume -- tamper DIR ID     # shows that an altered file is refused
//! ```
//!
//! The sealing key comes from `ADK_CHECKPOINT_KEY` (at least 32 bytes); the
//! demo falls back to a fixed, public key, which a real host must never do.

#[path = "support/desktop.rs"]
mod desktop;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use adk_computer_use::auth::{ScopeAuthorizer, VerifiedIdentity};
use adk_computer_use::chain::{
    Approval, ChainOutcome, CheckpointId, FileCheckpointStore, SealingKey, Session,
};
use adk_computer_use::contracts::ExecutionMode;
use adk_computer_use::runtime::ProposedAction;
use serde_json::json;

type Error = Box<dyn std::error::Error>;

fn key() -> Result<SealingKey, Error> {
    let bytes = std::env::var("ADK_CHECKPOINT_KEY")
        .map(String::into_bytes)
        .unwrap_or_else(|_| b"approval-resume-demo-key-public!!".to_vec());
    Ok(SealingKey::new(bytes)?)
}

/// A fresh session, as a new process would build it: a new runtime client
/// (here: the persistent in-process desktop), the identity the host verified,
/// and the store of record (the checkpoint directory and its sealing key).
fn session(
    dir: &Path,
) -> Result<
    (
        Arc<desktop::InProcessDesktop>,
        Session<desktop::InProcessDesktop>,
    ),
    Error,
> {
    let runtime = Arc::new(desktop::InProcessDesktop::persistent(
        &["set_value"],
        dir.join("desktop-state.json"),
    )?);
    let identity = VerifiedIdentity::new(desktop::PRINCIPAL, "tenant-demo")?;
    let authorizer =
        ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"])?;
    let store = Arc::new(FileCheckpointStore::new(dir, key()?)?);
    let session = Session::builder(Arc::clone(&runtime), authorizer)
        .agent_id("executor")
        .checkpoints(store)
        .build()?;
    Ok((runtime, session))
}

async fn suspend(dir: &Path) -> Result<CheckpointId, Error> {
    let (_, session) = session(dir)?;
    let action = ProposedAction::new(
        "set_value",
        json!({ "text": "approved text" }),
        ExecutionMode::Background,
    )
    .with_target(desktop::clipboard_target("semantic-0001"));
    let pending = match session.run(action).await? {
        ChainOutcome::NeedsApproval(pending) => pending,
        _ => return Err("expected the demo policy to ask for approval".into()),
    };
    let store = FileCheckpointStore::new(dir, key()?)?;
    println!("suspended: approval required for {}", pending.action_id());
    println!(
        "  approve with {{\"actionId\": \"{}\", \"actionDigest\": \"{}\", \"policyDigest\": \"{}\", \"runtimeApproved\": true}}",
        pending.action_id(),
        pending.action_digest(),
        pending.policy_digest()
    );
    // Suspending gives the pending approval up: the checkpoint is now the
    // only way to approve this action, once.
    let id = pending.suspend().await?;
    println!("  checkpoint {id} in {}", store.path_of(&id).display());
    let _ = session.shutdown().await;
    Ok(id)
}

async fn resume(dir: &Path, id: &CheckpointId) -> Result<Approval, Error> {
    let (runtime, session) = session(dir)?;
    let store = FileCheckpointStore::new(dir, key()?)?;
    // The person's approval echoes the digests they were shown. Here it is
    // read back from the checkpoint's preview for the demo's convenience.
    let record = std::fs::read_to_string(store.path_of(id))?;
    let sealed: serde_json::Value = serde_json::from_str(record.trim())?;
    let preview = &sealed["body"]["preview"];
    let approval = Approval::from_json(&json!({
        "actionId": preview["envelope"]["actionId"],
        "actionDigest": preview["envelope"]["argsDigest"],
        "policyDigest": preview["policy"]["policyDigest"],
        "runtimeApproved": true,
    }))?;
    let verified = session
        .resume(id, approval.clone())
        .await?
        .complete()
        .await?;
    println!(
        "resumed: receipt {}, {}",
        verified.receipt_id(),
        verified.outcome()
    );
    println!("  clipboard now holds {:?}", runtime.clipboard());
    println!(
        "  performed: {}, verified: {}",
        verified.performed(),
        verified.outcome().is_verified()
    );
    let _ = session.shutdown().await;
    Ok(approval)
}

/// The same checkpoint, with the same approval, a second time: refused
/// before anything reaches the runtime.
async fn resume_again(dir: &Path, id: &CheckpointId, approval: Approval) -> Result<(), Error> {
    let (_, session) = session(dir)?;
    match session.resume(id, approval).await {
        Ok(_) => Err("a checkpoint was resumed twice".into()),
        Err(err) => {
            println!("resumed again: refused before any reservation: {err}");
            Ok(())
        }
    }
}

async fn tamper(dir: &Path, id: &CheckpointId) -> Result<(), Error> {
    let store = FileCheckpointStore::new(dir, key()?)?;
    let path = store.path_of(id);
    let original = std::fs::read_to_string(&path)?;
    std::fs::write(
        &path,
        original
            .replace("approved text", "another text")
            .replace("\"set_value\"", "\"delete\""),
    )?;
    let (_, session) = session(dir)?;
    let approval = Approval::runtime_held("any", "0".repeat(64), "demo-policy-v1");
    match session.resume(id, approval).await {
        Ok(_) => Err("a tampered checkpoint was accepted".into()),
        Err(err) => {
            println!("tampered: refused before any reservation: {err}");
            std::fs::write(&path, original)?;
            Ok(())
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["suspend", dir] => suspend(Path::new(dir)).await.map(|_| ()),
        ["resume", dir, id] => resume(Path::new(dir), &id.parse()?).await.map(|_| ()),
        ["tamper", dir, id] => tamper(Path::new(dir), &id.parse()?).await,
        [] => {
            let dir: PathBuf =
                std::env::temp_dir().join(format!("adk-approval-resume-{}", std::process::id()));
            std::fs::create_dir_all(&dir)?;
            let id = suspend(&dir).await?;
            tamper(&dir, &id).await?;
            let approval = resume(&dir, &id).await?;
            resume_again(&dir, &id, approval).await?;
            std::fs::remove_dir_all(&dir)?;
            Ok(())
        }
        _ => Err("usage: approval_resume [suspend DIR | resume DIR ID | tamper DIR ID]".into()),
    }
}
