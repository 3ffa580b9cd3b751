//! The seeds' adk-graph workflow over the governed chain: an action that
//! needs a person interrupts the graph with its preview, is sealed, and is
//! approved and resumed by a second process that knows only the thread,
//! the checkpoint and the stores; a third resume is refused.
//!
//! ```text
//! cargo run --features adk --example adk_graph                        # the whole story
//! cargo run --features adk --example adk_graph -- interrupt DIR       # first process
//! cargo run --features adk --example adk_graph -- resume DIR THREAD CHECKPOINT
//! ```
//!
//! The desktop is the persistent in-process one (a file in `DIR`), so a
//! second process finds what the first left; the sealed approval lives in
//! a `FileCheckpointStore` and the graph's own checkpoints in a
//! `FileGraphCheckpointer`, both in `DIR`. Over a real server the same
//! graph comes from `reference_graph_over` with a session on
//! `ComputerUseMcpRuntime`, and `PostgresGraphCheckpointer` serves many
//! machines (`tests/adk_graph_postgres.rs`). The person's approval here is
//! given by the host in code, echoing the digests the interrupt showed; the
//! approval page does the same for a person (docs/approvals.md).
//!
//! The sealing key comes from `ADK_CHECKPOINT_KEY` (at least 32 bytes); the
//! demo falls back to a fixed, public key, which a real host must never do.

#[path = "support/desktop.rs"]
mod desktop;

use std::path::Path;
use std::sync::Arc;

use adk_computer_use::auth::{ScopeAuthorizer, VerifiedIdentity};
use adk_computer_use::chain::{FileCheckpointStore, SealingKey, Session};
use adk_computer_use::graph::{FileGraphCheckpointer, reference_graph_over};
use adk_graph::{CompiledGraph, ExecutionConfig, GraphError, State};
use serde_json::{Value, json};

type Error = Box<dyn std::error::Error>;

fn key() -> Result<SealingKey, Error> {
    let bytes = std::env::var("ADK_CHECKPOINT_KEY")
        .map(String::into_bytes)
        .unwrap_or_else(|_| b"adk-graph-demo-key-public-32-bytes!".to_vec());
    Ok(SealingKey::new(bytes)?)
}

/// What one process builds: the runtime client (here the persistent
/// in-process desktop, which asks for approval of every clipboard write),
/// the identity the host verified, the store of record, and the graph.
fn process(dir: &Path) -> Result<(Arc<desktop::InProcessDesktop>, CompiledGraph), Error> {
    let runtime = Arc::new(desktop::InProcessDesktop::persistent(
        &["write_clipboard"],
        dir.join("desktop-state.json"),
    )?);
    let identity = VerifiedIdentity::new(desktop::PRINCIPAL, "tenant-demo")?;
    let authorizer =
        ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"])?;
    let session = Session::builder(Arc::clone(&runtime), authorizer)
        .agent_id("executor")
        .target(desktop::APP, None)
        .checkpoints(Arc::new(FileCheckpointStore::new(dir, key()?)?))
        .build()?;
    let checkpointer = FileGraphCheckpointer::new(dir.join("graph"))?;
    let graph = reference_graph_over(Arc::new(session), Some(Arc::new(checkpointer)))?;
    Ok((runtime, graph))
}

/// The first process: the action interrupts for approval. Returns the
/// thread and the graph's checkpoint.
async fn interrupt(dir: &Path) -> Result<(String, String), Error> {
    let (_, graph) = process(dir)?;
    let thread = format!("demo-{}", std::process::id());
    let mut input = State::new();
    input.insert(
        "proposed_action".into(),
        json!({ "tool": "write_clipboard", "arguments": { "text": "approved in a second process" } }),
    );
    match graph.invoke(input, ExecutionConfig::new(&thread)).await {
        Err(GraphError::Interrupted(interrupted)) => {
            let preview = match &interrupted.interrupt {
                adk_graph::Interrupt::Dynamic { data, .. } => data.clone().unwrap_or_default(),
                _ => Value::Null,
            };
            println!(
                "interrupted: {} waits for approval (action {}, policy {})",
                preview["envelope"]["tool"],
                preview["envelope"]["argsDigest"],
                preview["policy"]["policyDigest"]
            );
            println!(
                "  thread {thread}, checkpoint {}; sealed in {}",
                interrupted.checkpoint_id,
                dir.display()
            );
            Ok((thread, interrupted.checkpoint_id))
        }
        Ok(state) => Err(format!(
            "expected an interrupt, the graph ended: {}",
            state["result"]
        )
        .into()),
        Err(other) => Err(other.into()),
    }
}

/// A later process: reads the preview the graph kept, approves it (the
/// person echoing its digests), and resumes.
async fn resume(dir: &Path, thread: &str, checkpoint: &str) -> Result<Value, Error> {
    let (runtime, graph) = process(dir)?;
    let kept = FileGraphCheckpointer::new(dir.join("graph"))?;
    let state = adk_graph::Checkpointer::load_by_id(&kept, checkpoint)
        .await?
        .ok_or("no such graph checkpoint")?
        .state;
    let preview = state.get("preview").cloned().unwrap_or_default();
    let mut answer = State::new();
    answer.insert(
        "approval".into(),
        json!({
            "actionDigest": preview["envelope"]["argsDigest"],
            "policyDigest": preview["policy"]["policyDigest"],
            "runtimeApproved": true,
        }),
    );
    let result = graph
        .invoke(
            answer,
            ExecutionConfig::new(thread).with_resume_from(checkpoint),
        )
        .await?;
    println!(
        "resumed in process {}: {} (committed: {}, verified: {})",
        std::process::id(),
        result["result"]["status"],
        result["committed"],
        result["verified"]
    );
    println!("  clipboard now holds {:?}", runtime.clipboard());
    Ok(preview)
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
        ["interrupt", dir] => interrupt(Path::new(dir)).await.map(|_| ()),
        ["resume", dir, thread, checkpoint] => {
            resume(Path::new(dir), thread, checkpoint).await.map(|_| ())
        }
        [] => {
            let dir = std::env::temp_dir().join(format!("adk-graph-demo-{}", std::process::id()));
            std::fs::create_dir_all(&dir)?;
            let (thread, checkpoint) = interrupt(&dir).await?;
            // A second process, started fresh, resumes it.
            let dir_text = dir.to_str().ok_or("a temporary directory named in UTF-8")?;
            let status = std::process::Command::new(std::env::current_exe()?)
                .args(["resume", dir_text, &thread, &checkpoint])
                .status()?;
            if !status.success() {
                return Err(format!("the second process failed: {status}").into());
            }
            // The sealed approval was consumed: resuming again runs nothing.
            match resume(&dir, &thread, &checkpoint).await {
                Ok(_) => return Err("a sealed approval was resumed twice".into()),
                Err(err) => println!("resumed again: refused before anything ran: {err}"),
            }
            std::fs::remove_dir_all(&dir)?;
            Ok(())
        }
        _ => Err("usage: adk_graph [interrupt DIR | resume DIR THREAD CHECKPOINT]".into()),
    }
}
