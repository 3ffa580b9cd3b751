//! The seeds' adk-graph workflow over the governed chain: an allowed action
//! runs to its end; an action that needs a person interrupts the graph with
//! its preview, is sealed, and is approved and resumed by a second process
//! that knows only the thread, the checkpoint and the stores; a third
//! resume is refused.
//!
//! ```text
//! cargo run --features adk --example adk_graph                      # in-process desktop
//! cargo run --features adk --example adk_graph -- --page [--browser]
//! cargo run --all-features --example adk_graph -- --x11 [--page [--browser]]
//! cargo run --all-features --example adk_graph -- --wayland [--page [--browser]]
//! cargo run --features adk --example adk_graph -- --server <command> [args...]
//! ```
//!
//! By default the desktop is the persistent in-process one (a file in a
//! temporary directory), so a second process finds what the first left;
//! the sealed approval lives in a `FileCheckpointStore` and the graph's own
//! checkpoints in a `FileGraphCheckpointer`, both in that directory. The
//! person's approval is given by the host in code (`runtimeApproved`,
//! echoing the digests the interrupt showed).
//!
//! With `--page`, `--x11` or `--wayland` the desktop server runs as its own
//! process (`computer-use-server --desktop simulated|x11|wayland
//! --listen`), and both agent processes connect to it; see
//! `support/served_graph.rs`. With `--page` a person decides on the
//! approval page (the example prints its sign-in link and waits; with
//! `--browser`, headless Chromium decides in their place) and the resume
//! carries no approval at all: the decision the page signed answers it
//! (`reference_graph_with_approver`). Without `--page` the host approves on
//! the approver's credential and the resume carries the server's grant id.
//! On X11 and Wayland the write goes onto the real clipboard, bound to a
//! window the desktop shows (`COMPUTER_USE_CLIPBOARD_APP`, else the
//! focused one, else the first), and `xclip` or `wl-paste`, outside this
//! crate, reads it back. The server's binaries must be built first:
//! `cargo build --workspace --all-features --bins`.
//!
//! With `--server` any other computer-use-mcp server is spawned over
//! stdio. It lives only as long as this process, so the second graph is a
//! fresh instance in the same process, over the same stores, resuming on
//! the host's grant.
//!
//! The written text is labelled `credential`, which a server's policy
//! sends to a person; the allowed action writes public text. The sealing
//! key comes from `ADK_CHECKPOINT_KEY` (at least 32 bytes); the default
//! demo falls back to a fixed, public key, which a real host must never do.

#[path = "support/desktop.rs"]
mod desktop;
#[path = "support/page.rs"]
mod page;
#[path = "support/served_graph.rs"]
mod served_graph;
#[path = "support/x11.rs"]
mod x11_support;

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

/// The action the graph is given: public text (allowed), or text labelled
/// `credential` (which waits for a person).
pub fn proposed(text: &str, credential: bool) -> Value {
    let mut action = json!({ "tool": "write_clipboard", "arguments": { "text": text } });
    if credential {
        action["data_labels"] = json!(["credential"]);
    }
    action
}

/// What one process builds: the runtime client (here the persistent
/// in-process desktop, which sends credential writes to a person), the
/// identity the host verified, the store of record, and the graph.
fn process(dir: &Path) -> Result<(Arc<desktop::InProcessDesktop>, CompiledGraph), Error> {
    let runtime = Arc::new(desktop::InProcessDesktop::persistent(
        &[],
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

/// Runs `action` on a new thread of `graph`: the allowed action's end, or
/// the interrupt's thread and checkpoint.
pub async fn run(
    graph: &CompiledGraph,
    thread: &str,
    action: Value,
) -> Result<Option<(String, Value)>, Error> {
    let mut input = State::new();
    input.insert("proposed_action".into(), action);
    match graph.invoke(input, ExecutionConfig::new(thread)).await {
        Err(GraphError::Interrupted(interrupted)) => {
            let preview = match &interrupted.interrupt {
                adk_graph::Interrupt::Dynamic { data, .. } => data.clone().unwrap_or_default(),
                _ => Value::Null,
            };
            println!(
                "interrupted: {} waits for approval ({}; action {}, policy {})",
                preview["envelope"]["tool"],
                preview["policy"]["reasons"],
                preview["envelope"]["argsDigest"],
                preview["policy"]["policyDigest"]
            );
            Ok(Some((interrupted.checkpoint_id, preview)))
        }
        Ok(state) => {
            println!(
                "allowed: {} ran to its end: {} (committed: {}, verified: {})",
                state["proposed_action"]["tool"],
                state["result"]["status"],
                state["committed"],
                state["verified"]
            );
            if state["committed"] != json!(true) {
                return Err("the allowed action was not committed".into());
            }
            Ok(None)
        }
        Err(other) => Err(other.into()),
    }
}

/// An allowed write of public text on its own thread (it must run to its
/// end), then the credential's write `text` on `thread`, which must wait
/// for a person: the interrupt's checkpoint and preview.
pub async fn allowed_then_interrupted(
    graph: &CompiledGraph,
    thread: &str,
    text: &str,
) -> Result<(String, Value), Error> {
    let public = proposed("public text, no approval needed", false);
    if run(graph, &format!("{thread}-public"), public)
        .await?
        .is_some()
    {
        return Err("the public write was expected to be allowed".into());
    }
    run(graph, thread, proposed(text, true))
        .await?
        .ok_or_else(|| "the credential's write was expected to wait for a person".into())
}

/// The preview the graph kept at its checkpoint `checkpoint`, in the
/// `FileGraphCheckpointer` under `dir/graph`: what the person was shown.
pub async fn kept_preview(dir: &Path, checkpoint: &str) -> Result<Value, Error> {
    let kept = FileGraphCheckpointer::new(dir.join("graph"))?;
    let state = adk_graph::Checkpointer::load_by_id(&kept, checkpoint)
        .await?
        .ok_or("no such graph checkpoint")?
        .state;
    Ok(state.get("preview").cloned().unwrap_or_default())
}

/// The resume's state: the approval of `preview` (its two digests) on the
/// one `authority` given (`grantId`, or `runtimeApproved: true`).
pub fn approval_of(preview: &Value, authority: (&str, Value)) -> State {
    let mut approval = json!({
        "actionDigest": preview["envelope"]["argsDigest"],
        "policyDigest": preview["policy"]["policyDigest"],
    });
    approval[authority.0] = authority.1;
    let mut answer = State::new();
    answer.insert("approval".into(), approval);
    answer
}

/// The first process: an allowed action runs; then the credential's write
/// interrupts for approval. Returns its thread and the graph's checkpoint.
async fn interrupt(dir: &Path) -> Result<(String, String), Error> {
    let (_, graph) = process(dir)?;
    let thread = format!("demo-{}", std::process::id());
    let (checkpoint, _) =
        allowed_then_interrupted(&graph, &thread, "approved in a second process").await?;
    println!(
        "  thread {thread}, checkpoint {checkpoint}; sealed in {}",
        dir.display()
    );
    Ok((thread, checkpoint))
}

/// A later process: reads the preview the graph kept, approves it (the
/// person echoing its digests), and resumes.
async fn resume(dir: &Path, thread: &str, checkpoint: &str) -> Result<Value, Error> {
    let (runtime, graph) = process(dir)?;
    let preview = kept_preview(dir, checkpoint).await?;
    let answer = approval_of(&preview, ("runtimeApproved", json!(true)));
    resumed(&graph, thread, checkpoint, answer).await?;
    println!("  clipboard now holds {:?}", runtime.clipboard());
    Ok(preview)
}

/// Resumes `thread` of `graph` from `checkpoint` with `answer`, says how it
/// ended in this process, and refuses an end that did not commit.
pub async fn resumed(
    graph: &CompiledGraph,
    thread: &str,
    checkpoint: &str,
    answer: State,
) -> Result<(), Error> {
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
    if result["committed"] != json!(true) {
        return Err("the resumed action was not committed".into());
    }
    Ok(())
}

/// The whole story on the in-process desktop.
async fn in_process() -> Result<(), Error> {
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

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    if let Some(at) = words.iter().position(|a| *a == "--server") {
        return match &words[at + 1..] {
            [] => Err("--server needs a command".into()),
            command => served_graph::over_stdio(command).await,
        };
    }
    let flag = |name: &str| words.contains(&name);
    let (x11, wayland, on_page, browser) = (
        flag("--x11"),
        flag("--wayland"),
        flag("--page"),
        flag("--browser"),
    );
    if browser && !on_page {
        return Err("--browser stands in for the person on the page: use it with --page".into());
    }
    if x11 && wayland {
        return Err("--x11 and --wayland name two desktops: choose one".into());
    }
    match words.as_slice() {
        ["interrupt", dir] => interrupt(Path::new(dir)).await.map(|_| ()),
        ["resume", dir, thread, checkpoint] => {
            resume(Path::new(dir), thread, checkpoint).await.map(|_| ())
        }
        ["interrupt-served"] => served_graph::interrupt().await,
        ["resume-served", rest @ ..] => served_graph::resume(rest).await,
        [] => in_process().await,
        _ if x11 || wayland || on_page => {
            let desktop = if x11 {
                "x11"
            } else if wayland {
                "wayland"
            } else {
                "simulated"
            };
            served_graph::story(desktop, on_page, browser).await
        }
        _ => Err("usage: adk_graph [--x11 | --wayland] [--page [--browser]] | --server COMMAND [ARGS...]".into()),
    }
}
