//! A simulated desktop behind a real MCP server: the development and test
//! peer of [`crate::runtime::mcp::ComputerUseMcpRuntime`].
//!
//! It implements the `computer-use-mcp` v8 tool surface of `PROTOCOL.md` over
//! a deterministic [`Desktop`], enforcing the server's rules (sessions,
//! policy, grants with use accounting, one-writer leases, reservations,
//! idempotent receipts, stale targets) and putting the seeds' `verification`
//! object on receipts so the `Verified` path can be exercised end to end.
//! Faults chosen at start make it lie in precise ways, so tests can prove
//! that every lie is caught. Serve it with the `computer-use-sim` binary, or
//! inside your own process with [`spawn`].

mod desktop;
mod faults;
mod server;
mod spawn;
mod state;

pub use desktop::{
    App, CLIPBOARD_APP, CLIPBOARD_LABEL, CLIPBOARD_ROLE, CLIPBOARD_WINDOW, Desktop, Element, Window,
};
pub use faults::{Fault, SimConfig};
pub use server::SimServer;
pub use spawn::spawn;
pub use state::{SimAnswer, SimState};

/// A refusal (or a crash) the simulator answers with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimError {
    /// The protocol's error code (`lease_conflict`, `stale_target`, ...).
    pub code: String,
    /// A human message.
    pub message: String,
    /// Answer with text only, as a server does for arguments that fail its schema.
    pub text_only: bool,
    /// Exit the process instead of answering (an injected crash).
    pub crash: bool,
}

impl SimError {
    /// A structured refusal.
    pub fn refusal(code: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            text_only: false,
            crash: false,
        }
    }

    /// Arguments that fail the schema: a text-only error.
    pub fn schema(message: impl Into<String>) -> Self {
        Self {
            code: "invalid_arguments".into(),
            message: message.into(),
            text_only: true,
            crash: false,
        }
    }

    /// An injected crash.
    pub fn crash(message: impl Into<String>) -> Self {
        Self {
            code: "crash".into(),
            message: message.into(),
            text_only: false,
            crash: true,
        }
    }
}
