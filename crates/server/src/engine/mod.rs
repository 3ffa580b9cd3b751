//! The v8 rules engine: upstream `computer-use-mcp`'s server rules over a
//! [`DesktopBackend`], whichever desktop that is.
//!
//! It follows upstream's server wherever its rules show on the wire: the
//! published input schemas and their argument check, the session lifecycle
//! and its events, previews that bind an action into an envelope under a
//! policy, grants with use accounting, the one-writer lease with its wait
//! queue, planner reservations, idempotent receipts, stale targets and the
//! refusal shapes of each case. The desktop behind it observes, acts and
//! checks; the rules are the same for every desktop.

mod access;
mod actuate;
mod admission;
mod answer;
mod authority;
mod backend;
mod calls;
mod crossing;
mod effect;
mod execute;
mod forge;
mod grants;
mod handler;
mod history;
mod lease;
mod onboarding;
mod policy;
mod preview;
mod reply;
mod request;
mod reservation;
mod revalidate;
mod schema;
mod server;
mod service;
mod session;
mod staged;
mod state;
mod takeover;
#[cfg(test)]
mod tests;
mod tools;
mod turns;
#[cfg(test)]
mod turns_tests;
mod wait;
mod waiting;
mod wire;

use serde_json::{Map, Value, json};

pub use access::{
    AGENT_NOT_OWNER, APPROVER_CREDENTIAL_REQUIRED, CREDENTIAL_CAPABILITY, Credentials,
    DEFAULT_AGENT, HOST_CREDENTIAL_REQUIRED, Role,
};
pub use backend::{
    ApplyError, BOUNDS_TOLERANCE_PX, DesktopBackend, EffectCheck, Frame, PointerAndFocus,
    Revalidation,
};
pub(crate) use backend::{bounds_agree, stated_or_same};
pub use server::Server;
pub use service::ConnectionService;
pub use staged::CALL_BUDGET;
pub use state::{Answer, State};
pub use turns::TURNS_PER_CALLER;

/// A refusal (or a crash) the simulator answers with.
///
/// Upstream refuses in a few shapes, and each case keeps its own:
///
/// - `{error, message, details}`: a runtime error with its code (the
///   default: [`Refusal::new`], [`Refusal::with_details`]);
/// - `{error: "runtime_error", message}`: any other failure
///   ([`Refusal::plain`]);
/// - `{error, <fields>}` with no message ([`Refusal::bare`]);
/// - text only, for arguments that fail the tool's input schema
///   ([`Refusal::schema`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The protocol's error code (`lease_conflict`, `stale_target`, ...).
    pub code: String,
    /// A human message (for a text-only answer: the whole text).
    pub message: String,
    /// Answer with text only, as a server does for arguments that fail its schema.
    pub text_only: bool,
    /// Exit the process instead of answering: only an injected crash fault
    /// sets it (the field and [`Refusal::crash`] are the engine's own, so no
    /// desktop, wrapper or other crate can end the server this way).
    pub(crate) crash: bool,
    /// The refusal's `details`; `None` leaves the key out.
    pub details: Option<Value>,
    /// The refusal's other keys, for the shapes that carry no message.
    pub fields: Option<Map<String, Value>>,
}

impl Refusal {
    /// A structured refusal with empty details.
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self::with_details(code, message, json!({}))
    }

    /// A structured refusal with its details.
    pub fn with_details(code: &str, message: impl Into<String>, details: Value) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            text_only: false,
            crash: false,
            details: Some(details),
            fields: None,
        }
    }

    /// A failure that is not one of the protocol's codes: `runtime_error`,
    /// with a message and no details.
    pub fn plain(message: impl Into<String>) -> Self {
        Self {
            details: None,
            ..Self::new("runtime_error", message)
        }
    }

    /// A refusal of only a code and named fields (`{error, lease_id}`, ...).
    pub fn bare(code: &str, fields: Value) -> Self {
        let fields = match fields {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        Self {
            details: None,
            fields: Some(fields),
            ..Self::new(code, "")
        }
    }

    /// Arguments that fail the schema: a text-only error, `text` whole.
    pub fn schema(text: impl Into<String>) -> Self {
        Self {
            text_only: true,
            details: None,
            ..Self::new("invalid_arguments", text)
        }
    }

    /// An injected crash (the simulated desktop's crash faults only).
    pub(crate) fn crash(message: impl Into<String>) -> Self {
        Self {
            crash: true,
            details: None,
            ..Self::new("crash", message)
        }
    }

    /// The structured body of the refusal (`structuredContent`).
    pub fn body(&self) -> Value {
        let mut body = Map::new();
        body.insert("error".into(), json!(self.code));
        match &self.fields {
            Some(fields) => body.extend(fields.clone()),
            None => {
                body.insert("message".into(), json!(self.message));
                if let Some(details) = &self.details {
                    body.insert("details".into(), details.clone());
                }
            }
        }
        Value::Object(body)
    }
}
