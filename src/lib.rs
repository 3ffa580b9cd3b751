//! Governed desktop control for Rust agents.
//!
//! `adk-computer-use` performs no clicking or typing. It drives a
//! `computer-use-mcp` runtime through one fixed protocol — observe, preview,
//! approve, reserve the target, take the one-writer lease, perform the single
//! mutation, verify — and checks every answer before trusting it.
//!
//! Layers, lowest first: [`contracts`] (the v8 wire types), [`runtime::binding`]
//! (pure response-binding validators), [`auth`], [`clock`] and [`digest`].
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod auth;
pub mod clock;
pub mod contracts;
pub mod digest;
mod error;
pub mod eval;
pub mod protocol;
pub mod runtime;
#[cfg(feature = "sim")]
pub mod sim;

pub use auth::{Scope, ScopeAuthorizer, VerifiedIdentity};
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::ComputerUseError;
pub use protocol::{
    Approval, Approved, Blocked, ChainOutcome, Executed, Leased, Observed, PendingApproval,
    Previewed, Reserved, Route, Session, Verified,
};
pub use runtime::{ComputerUseRuntime, ProposedAction, VerificationOutcome};

/// The README's code blocks, compiled as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
