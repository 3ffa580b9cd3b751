//! The runtime boundary: what the chain asks of a `computer-use-mcp` runtime.
//!
//! [`ComputerUseRuntime`] is the one trait the stage types drive. Its futures
//! are `Send` so a chain can run on a multi-threaded executor; implementors
//! may write plain `async fn`s. Nothing here checks the answers: that is the
//! job of [`binding`] and of the stage types that call it.

pub mod binding;
mod cancel;
mod evidence;
#[cfg(feature = "mcp")]
pub mod mcp;
mod request;

use std::future::Future;

use serde_json::Value;

pub use cancel::{AgentInterrupter, CancellationBridge, StopKind};
pub use evidence::{VerificationOutcome, evaluate_evidence};
pub use request::{ActionRequest, ImageContent, Observation, ObservationScope, ProposedAction};

use crate::ComputerUseError;
use crate::contracts::{
    ActionEnvelope, ActionPostcondition, ActionPreview, ControlLease, ExecutionCapability,
    ExecutionReceipt, TargetReservation,
};

fn unsupported(operation: &str) -> ComputerUseError {
    ComputerUseError::Unsupported {
        operation: operation.to_owned(),
    }
}

/// A desktop runtime: the authority for policy, targets, leases and effects.
///
/// The chain calls these in a fixed order and validates every answer. A
/// runtime may be a live MCP server (`ComputerUseMcpRuntime`) or a plain struct
/// in a test.
pub trait ComputerUseRuntime: Send + Sync + 'static {
    /// What the runtime can do in the observed scope.
    fn discover_capabilities(
        &self,
        scope: &ObservationScope,
    ) -> impl Future<Output = Result<Vec<ExecutionCapability>, ComputerUseError>> + Send;

    /// A visual observation (a screenshot and its metadata).
    fn observe_visual(
        &self,
        scope: &ObservationScope,
    ) -> impl Future<Output = Result<Observation, ComputerUseError>> + Send;

    /// A semantic observation (the accessibility tree or the window list).
    fn observe_semantic(
        &self,
        scope: &ObservationScope,
    ) -> impl Future<Output = Result<Observation, ComputerUseError>> + Send;

    /// Previews an action: the runtime binds it into an envelope and decides
    /// whether it may run.
    fn preview_action(
        &self,
        request: &ActionRequest<'_>,
    ) -> impl Future<Output = Result<ActionPreview, ComputerUseError>> + Send;

    /// Reserves the envelope's target. `None` means the runtime does not use
    /// reservations for this target.
    fn reserve_target(
        &self,
        envelope: &ActionEnvelope,
    ) -> impl Future<Output = Result<Option<TargetReservation>, ComputerUseError>> + Send;

    /// Releases a reservation.
    fn release_target(
        &self,
        reservation: &TargetReservation,
    ) -> impl Future<Output = Result<(), ComputerUseError>> + Send;

    /// Acquires the one-writer control lease for the envelope's action.
    fn acquire_lease(
        &self,
        envelope: &ActionEnvelope,
    ) -> impl Future<Output = Result<ControlLease, ComputerUseError>> + Send;

    /// Performs the single mutation. The only mutating call of the chain.
    fn execute_action(
        &self,
        envelope: &ActionEnvelope,
        lease: &ControlLease,
        approval_grant_id: Option<&str>,
    ) -> impl Future<Output = Result<ExecutionReceipt, ComputerUseError>> + Send;

    /// Judges whether the postcondition holds. The default applies
    /// [`evaluate_evidence`] to the receipt, so the seeds' evidence table is
    /// applied the same way everywhere; override it to gather more evidence or
    /// to do bookkeeping first, and answer with `evaluate_evidence` still.
    fn verify(
        &self,
        receipt: &ExecutionReceipt,
        postcondition: Option<&ActionPostcondition>,
    ) -> impl Future<Output = Result<VerificationOutcome, ComputerUseError>> + Send {
        let outcome = evaluate_evidence(receipt, postcondition);
        async move { Ok(outcome) }
    }

    /// Told by the chain that an action has ended (it was verified, blocked,
    /// or failed after its reservation was handled), so per-action state can
    /// be dropped. Must not block or do I/O.
    fn action_ended(&self, action_id: &str) {
        let _ = action_id;
    }

    /// What this runtime must keep to execute a previewed action later, to be
    /// sealed into a checkpoint with the preview (for example the exact
    /// arguments an MCP server was sent). Must not block or do I/O.
    fn preview_state(&self, action_id: &str) -> Option<Value> {
        let _ = action_id;
        None
    }

    /// Restores what [`ComputerUseRuntime::preview_state`] returned, after a
    /// sealed checkpoint was resumed, possibly in another process. Must not
    /// block or do I/O.
    fn restore_preview_state(
        &self,
        envelope: &ActionEnvelope,
        state: Value,
    ) -> Result<(), ComputerUseError> {
        let _ = (envelope, state);
        Ok(())
    }

    /// Pauses the session, revoking mutation authority.
    fn pause_session(
        &self,
        reason: Option<&str>,
    ) -> impl Future<Output = Result<(), ComputerUseError>> + Send {
        let _ = reason;
        async { Err(unsupported("pause_session")) }
    }

    /// Stops the session for good.
    fn stop_session(
        &self,
        reason: Option<&str>,
    ) -> impl Future<Output = Result<(), ComputerUseError>> + Send {
        let _ = reason;
        async { Err(unsupported("stop_session")) }
    }

    /// Stops every session on the desktop at once.
    fn emergency_stop(
        &self,
        reason: Option<&str>,
    ) -> impl Future<Output = Result<(), ComputerUseError>> + Send {
        let _ = reason;
        async { Err(unsupported("emergency_stop")) }
    }
}

/// Everything one observation round gathered.
#[derive(Debug, Clone, PartialEq)]
pub struct Observations {
    /// What the runtime can do.
    pub capabilities: Vec<ExecutionCapability>,
    /// The visual frame.
    pub visual: Observation,
    /// The semantic frame.
    pub semantic: Observation,
}

impl Observations {
    /// The ids of the frames, for an action's provenance.
    pub fn observation_ids(&self) -> Vec<String> {
        [&self.visual, &self.semantic]
            .into_iter()
            .filter_map(|o| o.observation_id.clone())
            .collect()
    }
}
