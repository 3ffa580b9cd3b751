//! Governed desktop control for Rust agents.
//!
//! `adk-computer-use` performs no clicking or typing. It drives a
//! `computer-use-mcp` runtime through one fixed protocol — observe, preview,
//! approve, reserve the target, take the one-writer lease, perform the single
//! mutation, verify — and checks every answer before trusting it. Each step
//! is a type (`Observed` → `Previewed` → `Approved` → `Reserved` → `Leased` →
//! `Executed` → `Verified`, in [`protocol`]) that only the step before it can
//! make, so an illegal ordering does not compile.
//!
//! # Quick start
//!
//! One verified write against the bundled simulator (feature `sim`; any
//! `computer-use-mcp` v8 server works the same through
//! `ComputerUseMcpRuntime::spawn`):
//!
#![cfg_attr(feature = "sim", doc = "```")]
#![cfg_attr(not(feature = "sim"), doc = "```ignore")]
//! use std::sync::Arc;
//! use adk_computer_use::{
//!     ChainOutcome, ExecutionMode, McpRuntimeConfig, ProposedAction, ScopeAuthorizer, Session,
//!     VerificationOutcome, VerifiedIdentity, sim,
//! };
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The runtime, acting for the principal your host authenticated.
//! let (runtime, _approver) = sim::spawn(sim::SimConfig::for_principal("alice"), McpRuntimeConfig::new("alice")).await?;
//! runtime.start_session(Some("put text on the clipboard"), None).await?;
//!
//! // The session takes its id and principal from the runtime; the scopes
//! // come from your host, never from the model.
//! let identity = VerifiedIdentity::new("alice", "tenant-1")?;
//! let authorizer = ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"])?;
//! let session = Session::builder(Arc::new(runtime), authorizer)
//!     .target(sim::CLIPBOARD_APP, None)
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
//! Lowest first; each uses only those below it: [`contracts`] (the v8 wire
//! types), [`binding`] (pure validators binding each answer to its
//! request), [`journal`] (the hash-chained audit record and its event
//! vocabulary), [`runtime`] (the runtime trait and the evidence table),
//! [`protocol`] (the session and its stages), then the adapters, the
//! simulator and the evaluator: `runtime::mcp`, `sim`, [`eval`]. [`auth`],
//! [`clock`] and [`digest`] serve all of them.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod agent;
pub mod auth;
pub mod binding;
pub mod clock;
pub mod contracts;
pub mod digest;
mod error;
pub mod eval;
pub mod journal;
#[cfg(feature = "postgres")]
pub mod pg;
pub mod protocol;
pub mod runtime;
pub mod secret;
#[cfg(feature = "sim")]
pub mod sim;
#[cfg(feature = "test-util")]
pub mod test_util;
#[cfg(feature = "x11")]
pub mod x11;

pub use auth::{ScopeAuthorizer, VerifiedIdentity};
pub use contracts::{DataLabel, ExecutionMode};
pub use error::ComputerUseError;
pub use protocol::{ChainOutcome, Session};
#[cfg(feature = "mcp")]
pub use runtime::mcp::{ComputerUseMcpRuntime, McpRuntimeConfig};
pub use runtime::{ProposedAction, VerificationOutcome};

/// The README's code blocks, compiled as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
