//! Governed desktop control for Rust agents.
//!
//! `adk-computer-use` performs no clicking or typing. It drives a
//! `computer-use-mcp` runtime through one fixed protocol — observe, preview,
//! approve, reserve the target, take the one-writer lease, perform the single
//! mutation, verify — and checks every answer before trusting it. Each step
//! is a type (`Observed` → `Previewed` → `Approved` → `Reserved` → `Leased` →
//! `Executed` → `Verified`, in [`chain`]) that only the step before it can
//! make, so an illegal ordering does not compile.
//!
//! # Quick start
//!
//! One verified write. Here the desktop server runs inside the test's own
//! process over its simulated desktop (`adk-computer-use-testkit`, a
//! dev-dependency); in a deployment the same runtime comes from
//! `ComputerUseMcpRuntime::spawn`, speaking to `computer-use-server` or to
//! upstream's own v8 server.
//!
#![cfg_attr(feature = "mcp", doc = "```")]
#![cfg_attr(not(feature = "mcp"), doc = "```ignore")]
//! use std::sync::Arc;
//! use adk_computer_use::{
//!     ChainOutcome, ExecutionMode, McpRuntimeConfig, ProposedAction, ScopeAuthorizer, Session,
//!     VerificationOutcome, VerifiedIdentity,
//! };
//! use computer_use_server::{CLIPBOARD_APP, Config};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The runtime, acting for the principal your host authenticated.
//! let (runtime, _approver) =
//!     adk_computer_use_testkit::spawn(Config::for_principal("alice"), McpRuntimeConfig::new("alice")).await?;
//! runtime.start_session(Some("put text on the clipboard"), None).await?;
//!
//! // The session takes its id and principal from the runtime; the scopes
//! // come from your host, never from the model.
//! let identity = VerifiedIdentity::new("alice", "tenant-1")?;
//! let authorizer = ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"])?;
//! let session = Session::builder(Arc::new(runtime), authorizer)
//!     .target(CLIPBOARD_APP, None)
//!     .build()?;
//!
//! let action = ProposedAction::new("write_clipboard", json!({ "text": "hi" }), ExecutionMode::Background);
//! match session.run(action).await? {
//!     ChainOutcome::Completed(done) => match done.outcome() {
//!         VerificationOutcome::Verified => println!("done, and observed to hold"),
//!         VerificationOutcome::CommittedUnverified { reason } => println!("done, unverified: {reason}"),
//!         VerificationOutcome::Failed { reason } => println!("failed: {reason}"),
//!     },
//!     ChainOutcome::NeedsApproval(pending) => println!("approve {}", pending.action_digest()),
//!     ChainOutcome::Blocked(blocked) => println!("blocked: {}", blocked.blocker()),
//! }
//! // One shutdown: releases what is held and, as the last user, closes the runtime.
//! session.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! # Layers
//!
//! Lowest first; each uses only those below it:
//!
//! 1. [`contracts`]: the v8 wire types and the one tool catalogue
//!    ([`contracts::catalogue`]), shared with the desktop server;
//! 2. [`binding`]: pure validators binding each answer to its request;
//! 3. [`journal`]: the hash-chained audit record and its event vocabulary;
//! 4. [`runtime`]: the runtime trait, its proofs and the evidence table;
//! 5. [`chain`]: the session, its stages, and approvals;
//! 6. `mcp` (feature `mcp`): the runtime over an MCP client; and `pg`
//!    (feature `postgres`): the stores in PostgreSQL; adapters side by side;
//! 7. [`agent`]: planners, allowed actions, model formats and the loop;
//! 8. [`eval`]: the evaluator and its tamper-evident receipt.
//!
//! [`auth`], [`clock`] and [`digest`] serve all of them. The desktop
//! server, the approvals command and page, and the test support are crates
//! of their own beside this one, so an agent's build carries none of their
//! desktop or web dependencies.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod agent;
pub mod auth;
pub mod binding;
mod call_deadline;
pub mod chain;
pub mod clock;
pub mod contracts;
pub mod digest;
mod error;
pub mod eval;
#[cfg(feature = "adk")]
pub mod graph;
pub mod journal;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "postgres")]
pub mod pg;
pub mod runtime;

pub use auth::{ScopeAuthorizer, VerifiedIdentity};
pub use chain::{ChainOutcome, Session};
pub use contracts::{DataLabel, ExecutionMode};
pub use error::ComputerUseError;
#[cfg(feature = "mcp")]
pub use mcp::{ComputerUseMcpRuntime, McpRuntimeConfig};
pub use runtime::{ProposedAction, VerificationOutcome};

/// The README's code blocks, compiled as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
