//! The runtime boundary: what the chain asks of a `computer-use-mcp` runtime.
//!
//! [`ComputerUseRuntime`] is the one trait the stage types drive. Its futures
//! are `Send` so a chain can run on a multi-threaded executor; implementors
//! may write plain `async fn`s. Nothing here checks the answers: that is the
//! job of [`crate::binding`] and of the stage types that call it.
//!
//! Every method that changes state on the server takes a proof (see
//! [`proof`](ExecuteProof)) that only the matching stage can make, so this
//! trait is not a second door to the desktop: holding a runtime is not
//! enough to reserve, lease, execute or release anything.

/// The response validators at the path the upstream crate's README uses
/// (`adk_computer_use::runtime::binding::validate_lease`); the same items
/// as [`crate::binding`].
pub mod binding {
    pub use crate::binding::*;
}
mod arguments;
mod cancel;
mod effect;
mod evidence;
mod offer;
mod proof;
mod request;
mod target;

use crate::contracts::catalogue::protocol::name as protocol;
use std::future::Future;

pub use arguments::known_schema;
pub(crate) use arguments::{
    check as check_arguments, check_known as check_known_arguments, check_targeting,
};
pub use cancel::{AgentInterrupter, CancellationBridge, StopKind};
pub use effect::{FORM_CHECK_ROLE, NamedEffect, form_values_digest};
pub(crate) use effect::{derive as derive_postcondition, why_none as why_no_postcondition};
pub use evidence::{
    VerificationOutcome, evaluate_evidence, evaluate_with, proves_nothing, receipt_verification,
};
pub use offer::ToolOffer;
pub use proof::{
    ExecuteProof, LeaseProof, LeaseReleaseProof, ReleaseProof, ReserveProof, TaskLeaseProof,
};
pub use request::{
    ActionRequest, ImageContent, Observation, ObservationScope, PreviewAnswer, ProposedAction,
};

use serde_json::Value;

use crate::ComputerUseError;
use crate::contracts::{
    ActionPostcondition, ControlLease, ExecutionCapability, ExecutionReceipt, TargetReservation,
};

fn unsupported(operation: &str) -> ComputerUseError {
    ComputerUseError::Unsupported {
        operation: operation.to_owned(),
    }
}

/// The runtime session a runtime acts in, as the runtime knows it: what a
/// governed session takes from it instead of being told a second time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionContext {
    /// The runtime session's id.
    pub session_id: String,
    /// The principal the runtime authenticated; every answer must name it.
    pub principal_id: String,
    /// The execution group the runtime session was started in.
    pub execution_group_id: Option<String>,
}

/// A desktop runtime: the authority for policy, targets, leases and effects.
///
/// The chain calls these in a fixed order and validates every answer. A
/// runtime may be a live MCP server (`ComputerUseMcpRuntime`) or a plain struct
/// in a test.
pub trait ComputerUseRuntime: Send + Sync + 'static {
    /// The runtime session this runtime acts in, or `None` while it has
    /// none (before `start_session`). A [`crate::chain::Session`] is built from it.
    fn session_context(&self) -> Option<SessionContext>;

    /// Closes the runtime (for a spawned server: ends the child process).
    /// Called by the last [`crate::chain::Session`] over this runtime to shut
    /// down; the default does nothing.
    fn close(&self) -> impl Future<Output = Result<(), ComputerUseError>> + Send {
        async { Ok(()) }
    }

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
    /// whether it may run. What the runtime needs to execute it later (for
    /// example the exact arguments it was sent) goes in
    /// [`PreviewAnswer::retained`]: the stage carries it to
    /// [`ExecuteProof::retained`], through sealed checkpoints too.
    fn preview_action(
        &self,
        request: &ActionRequest<'_>,
    ) -> impl Future<Output = Result<PreviewAnswer, ComputerUseError>> + Send;

    /// The postcondition by which this runtime's desktop shows `effect`
    /// (for example: the clipboard holds this text), when the runtime can
    /// check it after the action. The chain asks for it when an action
    /// declares no postcondition, and uses it only when it expects the
    /// digest the chain computed from the action's own arguments
    /// ([`NamedEffect::expected_digest`]); a postcondition expecting
    /// anything else refuses the preview before anything is sent.
    ///
    /// The default offers none: the action then ends
    /// `committed_unverified`, and the reason says no check was offered.
    /// Offer one only for a check the runtime really makes, or a performed
    /// action will end unknown instead of unverified.
    fn effect_postcondition(&self, effect: &NamedEffect<'_>) -> Option<ActionPostcondition> {
        let _ = effect;
        None
    }

    /// Reserves the proof's envelope's target. `None` means the runtime
    /// does not use reservations for this target.
    fn reserve_target(
        &self,
        proof: &ReserveProof<'_>,
    ) -> impl Future<Output = Result<Option<TargetReservation>, ComputerUseError>> + Send;

    /// Releases the proof's reservation.
    fn release_target(
        &self,
        proof: &ReleaseProof<'_>,
    ) -> impl Future<Output = Result<(), ComputerUseError>> + Send;

    /// Acquires the one-writer control lease for the proof's action.
    fn acquire_lease(
        &self,
        proof: &LeaseProof<'_>,
    ) -> impl Future<Output = Result<ControlLease, ComputerUseError>> + Send;

    /// Acquires one control lease for a task: the proof's budget of
    /// mutations, bounded to the session's target, for at most its TTL
    /// (see [`crate::chain::TaskLease`]). The default refuses: a runtime
    /// that offers no such lease still runs every action under a lease of
    /// its own.
    fn acquire_task_lease(
        &self,
        proof: &TaskLeaseProof<'_>,
    ) -> impl Future<Output = Result<ControlLease, ComputerUseError>> + Send {
        let _ = proof;
        async { Err(unsupported("acquire_control_lease for a task")) }
    }

    /// Releases the proof's lease. Called once the action (or the task)
    /// that held it has ended, on every path, so the next writer is not
    /// kept waiting until the lease's TTL.
    fn release_lease(
        &self,
        proof: &LeaseReleaseProof<'_>,
    ) -> impl Future<Output = Result<(), ComputerUseError>> + Send;

    /// Performs the single mutation. The only mutating call of the chain.
    fn execute_action(
        &self,
        proof: &ExecuteProof<'_>,
    ) -> impl Future<Output = Result<ExecutionReceipt, ComputerUseError>> + Send;

    /// Gathers the evidence that the action had its intended effect (with
    /// the lease still held, unless
    /// [`ComputerUseRuntime::evidence_is_recorded`]): a
    /// `verification` object (`satisfied`, `observedDigest`, ...) as the
    /// seeds define it, or `None` when there is none. The default reads it
    /// from the receipt's `result`. A runtime whose server reports its own
    /// check elsewhere (upstream's `action.verified` event) gathers it from
    /// there.
    ///
    /// The runtime does not judge: the chain applies the evidence table
    /// ([`evaluate_with`]) to the receipt and this evidence, so no runtime
    /// can report more than its evidence shows.
    fn evidence(
        &self,
        receipt: &ExecutionReceipt,
        postcondition: Option<&ActionPostcondition>,
    ) -> impl Future<Output = Result<Option<Value>, ComputerUseError>> + Send {
        let _ = postcondition;
        let found = receipt_verification(receipt).cloned();
        async move { Ok(found) }
    }

    /// Whether [`ComputerUseRuntime::evidence`] reads a record the runtime
    /// made while it executed the action (upstream's `action.verified`
    /// event), rather than the desktop as it is now. Only then may the
    /// chain give back the lease while it reads the evidence, saving a round
    /// trip; otherwise (the default) the lease is held until the evidence is
    /// in, so no other writer can change what is read.
    fn evidence_is_recorded(&self) -> bool {
        false
    }

    /// Pauses the session, revoking mutation authority.
    fn pause_session(
        &self,
        reason: Option<&str>,
    ) -> impl Future<Output = Result<(), ComputerUseError>> + Send {
        let _ = reason;
        async { Err(unsupported(protocol::PAUSE_SESSION)) }
    }

    /// Stops the session for good.
    fn stop_session(
        &self,
        reason: Option<&str>,
    ) -> impl Future<Output = Result<(), ComputerUseError>> + Send {
        let _ = reason;
        async { Err(unsupported(protocol::STOP_SESSION)) }
    }

    /// Stops every session on the desktop at once.
    fn emergency_stop(
        &self,
        reason: Option<&str>,
    ) -> impl Future<Output = Result<(), ComputerUseError>> + Send {
        let _ = reason;
        async { Err(unsupported(protocol::EMERGENCY_STOP)) }
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
