//! The ADK-Rust face (feature `adk`): the chain as an adk-graph workflow.
//!
//! [`build_reference_graph`] compiles upstream's reference graph (the same
//! node names, channels, interrupt payload, resume contract and `result`
//! shape as adk-computer-use 2.3.0) whose every node drives this crate's
//! typestate chain: `discover`, `observe_visual` and `observe_semantic` read
//! the three parts of one observation round concurrently,
//! `join_observations` makes the [`Observed`](crate::chain::Observed) stage
//! of them, `plan` checks the proposed action against what the runtime
//! offers, `preview` previews and routes it, `request_approval` interrupts
//! with the preview and takes the approval on resume, `reserve_target`,
//! `acquire_lease`, `execute` and `verify` are the chain's own transitions.
//!
//! The graph is a face, not a second path. Its JSON state never holds a
//! stage, only what a reader follows the run by (ids, digests, the
//! preview); the stages wait in the compiled graph between nodes (see
//! `runs`), and the one mutation happens in `execute` through
//! [`Leased::execute`](crate::chain::Leased::execute), the only door to
//! the runtime's mutating call. What a caller writes into the state is
//! checked against the stage, never used in its place:
//!
//! - an `approval` present before the graph asked for one (written into
//!   the initial state) is refused, and nothing is reserved;
//! - the approval must name the interrupted preview's action and policy
//!   digests and exactly one authority (`grantId`, or `runtimeApproved:
//!   true`); the chain's [`PendingApproval::approve`](crate::chain::PendingApproval::approve)
//!   checks both digests and the preview's freshness again;
//! - `preview_history` must hold exactly the one preview the chain made
//!   (a resumed caller appending another is refused before any mutation);
//!   when an approval given late follows fresh evidence, it keeps the
//!   preview the graph interrupted with, and `preview` becomes the chain's
//!   new one.
//!
//! Where the session has a store of record
//! ([`SessionBuilder::checkpoints`](crate::chain::SessionBuilder::checkpoints)),
//! the interrupt seals the pending approval there, and the resume goes
//! through [`Session::resume`](crate::chain::Session::resume): the sealed
//! checkpoint is consumed once, a person's recorded denial wins, and a graph
//! that never saw the interrupt (another instance, after a restart) resumes
//! it from the store alone. Without a store, only the graph that
//! interrupted can resume, while it lives. Built with
//! [`reference_graph_with_approver`], a person's decision on the approval
//! page, signed with the page's key, answers the interrupt itself (see
//! `approve` for the three authorities).
//!
//! # The seeds' snippet
//!
//! With one change: the authorizer carries the identity the host verified.
//!
#![cfg_attr(feature = "mcp", doc = "```")]
#![cfg_attr(not(feature = "mcp"), doc = "```ignore")]
//! use std::sync::Arc;
//! use adk_computer_use::graph::{build_reference_graph, reference_graph_over};
//! use adk_computer_use::{McpRuntimeConfig, ScopeAuthorizer, Session, VerifiedIdentity};
//! use adk_graph::{ExecutionConfig, State};
//! use computer_use_server::{CLIPBOARD_APP, Config};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The desktop server in process, over its simulated desktop.
//! let (runtime, _approver) =
//!     adk_computer_use_testkit::spawn(Config::for_principal("alice"), McpRuntimeConfig::new("alice")).await?;
//! runtime.start_session(Some("put text on the clipboard"), None).await?;
//!
//! let identity = VerifiedIdentity::new("alice", "tenant-1")?;
//! let authorizer = Arc::new(ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"])?);
//! let runtime = Arc::new(runtime);
//! let graph = build_reference_graph(Arc::clone(&runtime), authorizer)?;
//! let mut input = State::new();
//! input.insert("proposed_action".into(), json!({ "tool": "write_clipboard", "arguments": { "text": "hi" } }));
//! let result = graph.invoke(input.clone(), ExecutionConfig::new("demo")).await?;
//! // Committed. Not verified: this session names no target, so the
//! // write carries no evidence of what it acts on to check it against.
//! assert_eq!(result["committed"], json!(true));
//! assert_eq!(result["result"]["status"], "committed_unverified");
//!
//! // A session the host aims at the clipboard: the server reads the
//! // clipboard back, and the result says so.
//! let identity = VerifiedIdentity::new("alice", "tenant-1")?;
//! let authorizer = ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"])?;
//! let session = Session::builder(runtime, authorizer).target(CLIPBOARD_APP, None).build()?;
//! let graph = reference_graph_over(Arc::new(session), None)?;
//! let result = graph.invoke(input, ExecutionConfig::new("aimed")).await?;
//! assert_eq!(result["result"]["status"], "completed");
//! assert_eq!(result["verified"], json!(true));
//! # Ok(())
//! # }
//! ```
//!
//! Where ours differs from upstream's on purpose: the identity is required
//! (the authorizer carries a [`VerifiedIdentity`](crate::auth::VerifiedIdentity));
//! verification is derived and judged by the chain, so `verified` is true
//! only where the server checked the effect; the evidence channels carry
//! each frame's id and capture time, not the frames themselves (an
//! application's text stays out of adk checkpoints).

mod acting;
mod approve;
mod cancel;
mod checks;
mod file;
mod nodes;
mod runs;
mod tool;

use std::sync::Arc;

use adk_graph::{
    Channel, Checkpointer, CompiledGraph, DeferredNodeConfig, END, GraphError, MergeStrategy,
    START, StateGraph, StateSchema,
};
use serde_json::Value;

use crate::auth::ScopeAuthorizer;
use crate::chain::{ApproverPublicKey, Session};
use crate::runtime::ComputerUseRuntime;
pub use cancel::{CancellationBridge, Interrupter};
pub use file::FileGraphCheckpointer;
use nodes::Nodes;
pub use tool::{GovernedComputerUse, GrantFuture, HostGrant, RuntimeHeldGrant, TOOL_NAME};

/// The channels of the reference graph's state, upstream's names.
pub const CHANNELS: [&str; 17] = [
    "proposed_action",
    "capabilities",
    "visual_evidence",
    "semantic_evidence",
    "observations_joined",
    "preview",
    "route",
    "approval",
    "approval_grant_id",
    "approved_action_digest",
    "approved_policy_digest",
    "reservation",
    "lease",
    "receipt",
    "verified",
    "committed",
    "result",
];

/// The reference graph over `runtime`, acting for the identity `authorizer`
/// carries, in a session with the builder's defaults (no target, no store
/// of record: an approval is resumed by this graph while it lives). Fails
/// as [`GraphError::InvalidGraph`] when the session cannot be built (the
/// runtime's principal is not the identity's).
pub fn build_reference_graph<R>(
    runtime: Arc<R>,
    authorizer: Arc<ScopeAuthorizer>,
) -> Result<CompiledGraph, GraphError>
where
    R: ComputerUseRuntime + Send + Sync + 'static,
{
    build_reference_graph_with_checkpointer(runtime, authorizer, None)
}

/// [`build_reference_graph`], with adk-graph's `checkpointer` for the
/// graph's own state (the interrupt's frontier and channels); `None` is
/// adk-graph's memory checkpointer.
pub fn build_reference_graph_with_checkpointer<R>(
    runtime: Arc<R>,
    authorizer: Arc<ScopeAuthorizer>,
    checkpointer: Option<Arc<dyn Checkpointer>>,
) -> Result<CompiledGraph, GraphError>
where
    R: ComputerUseRuntime + Send + Sync + 'static,
{
    let session = Session::builder(runtime, Arc::unwrap_or_clone(authorizer))
        .build()
        .map_err(|err| GraphError::InvalidGraph(format!("the session cannot be built: {err}")))?;
    reference_graph_over(Arc::new(session), checkpointer)
}

/// The reference graph over a session built by the host (its target, its
/// store of record, its journal and clock), with adk-graph's
/// `checkpointer` (`None`: adk-graph's memory checkpointer, so an interrupt
/// is resumed by this graph while it lives).
pub fn reference_graph_over<R>(
    session: Arc<Session<R>>,
    checkpointer: Option<Arc<dyn Checkpointer>>,
) -> Result<CompiledGraph, GraphError>
where
    R: ComputerUseRuntime + Send + Sync + 'static,
{
    compile(Nodes::new(session, None), checkpointer)
}

/// [`reference_graph_over`], for a host whose people decide on the
/// approval page: a person's decision recorded beside the sealed
/// checkpoint in the session's store of record, signed with `approver`'s
/// key, answers the interrupt. The host resumes the thread once the page
/// shows the decision (polling [`Session::wait_for_decision`], say) and
/// writes no `approval`: an approval it does write must be the decision's
/// (its digests and grant), and a denial ends the run with nothing done.
/// Without a decision recorded, the host's own `approval` is taken as
/// [`reference_graph_over`] takes it (the page then refuses a later
/// decision as one that changed nothing).
///
/// The session must keep checkpoints
/// ([`SessionBuilder::checkpoints`](crate::chain::SessionBuilder::checkpoints)):
/// the page decides on what is sealed there. Fails as
/// [`GraphError::InvalidGraph`] when it keeps none.
pub fn reference_graph_with_approver<R>(
    session: Arc<Session<R>>,
    checkpointer: Option<Arc<dyn Checkpointer>>,
    approver: ApproverPublicKey,
) -> Result<CompiledGraph, GraphError>
where
    R: ComputerUseRuntime + Send + Sync + 'static,
{
    if !session.keeps_checkpoints() {
        return Err(GraphError::InvalidGraph(
            "a graph whose approvals are decided on the page needs a session with a store of record (SessionBuilder::checkpoints): the page decides on what is sealed there".into(),
        ));
    }
    compile(Nodes::new(session, Some(approver)), checkpointer)
}

/// The graph over `nodes`, with adk-graph's `checkpointer`.
fn compile<R>(
    nodes: Nodes<R>,
    checkpointer: Option<Arc<dyn Checkpointer>>,
) -> Result<CompiledGraph, GraphError>
where
    R: ComputerUseRuntime + Send + Sync + 'static,
{
    let mut schema = StateSchema::simple(&CHANNELS);
    // Append-only: a resumed caller that supplies a preview adds a second
    // entry, and the nodes after the preview refuse anything but one.
    schema
        .channels
        .insert("preview_history".into(), Channel::list("preview_history"));
    let graph = StateGraph::new(schema)
        .add_node_fn("discover", nodes.node(Nodes::discover))
        .add_node_fn("observe_visual", nodes.node(Nodes::observe_visual))
        .add_node_fn("observe_semantic", nodes.node(Nodes::observe_semantic))
        .add_deferred_node_fn(
            "join_observations",
            nodes.node(Nodes::join_observations),
            DeferredNodeConfig {
                merge_strategy: MergeStrategy::Collect,
                fan_in_timeout: None,
                ..Default::default()
            },
        )
        .add_node_fn("plan", nodes.node(Nodes::plan))
        .add_node_fn("preview", nodes.node(Nodes::preview))
        .add_node_fn("request_approval", nodes.node(Nodes::request_approval))
        .add_node_fn("blocked", nodes.node(Nodes::blocked))
        .add_node_fn("reserve_target", nodes.node(Nodes::reserve_target))
        .add_node_fn("acquire_lease", nodes.node(Nodes::acquire_lease))
        .add_node_fn("execute", nodes.node(Nodes::execute))
        .add_node_fn("verify", nodes.node(Nodes::verify))
        .add_edge(START, "discover")
        .add_edge(START, "observe_visual")
        .add_edge(START, "observe_semantic")
        .add_edge("discover", "join_observations")
        .add_edge("observe_visual", "join_observations")
        .add_edge("observe_semantic", "join_observations")
        .add_edge("join_observations", "plan")
        .add_edge("plan", "preview")
        .add_conditional_edges(
            "preview",
            |state| {
                state
                    .get("route")
                    .and_then(Value::as_str)
                    .unwrap_or("blocked")
                    .to_owned()
            },
            [
                ("allowed", "reserve_target"),
                ("approval", "request_approval"),
                ("blocked", "blocked"),
            ],
        )
        .add_edge("request_approval", "reserve_target")
        .add_edge("blocked", END)
        .add_edge("reserve_target", "acquire_lease")
        .add_edge("acquire_lease", "execute")
        .add_edge("execute", "verify")
        .add_edge("verify", END)
        .compile()?
        // A node writing a channel the schema does not hold is an error,
        // not a silent overwrite.
        .with_strict_channels();
    // Without one of the host's, adk-graph's memory checkpointer: an
    // interrupt is resumed by this graph while it lives.
    let checkpointer =
        checkpointer.unwrap_or_else(|| Arc::new(adk_graph::MemoryCheckpointer::new()));
    Ok(graph.with_checkpointer_arc(checkpointer))
}
