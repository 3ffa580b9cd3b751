//! Proofs that an answer was checked.
//!
//! Each witness can only be made inside this crate, by the validator that
//! checked the value it holds, so a stage that holds a `BoundLease` holds a
//! lease that was bound to its envelope — a fact about the type, not a flag.

use crate::ComputerUseError;
use crate::binding;
use crate::clock::Clock;
use crate::contracts::{
    ActionEnvelope, ActionPreview, ControlLease, ExecutionReceipt, TargetReservation,
};
use serde_json::Value;
use std::sync::Arc;

/// A preview whose envelope was bound to the session and principal and was
/// fresh when checked.
#[derive(Debug)]
pub struct FreshPreview {
    // Boxed: the preview travels through every stage, and moving a pointer
    // is cheaper than moving the whole envelope at each transition.
    preview: Box<ActionPreview>,
    /// What the runtime keeps for this exact preview, carried to execution.
    /// Boxed: most runtimes keep nothing, and a pointer moves cheaply.
    retained: Option<Box<Value>>,
    /// The arguments the action was proposed with, kept so a checkpoint can
    /// be previewed again with exactly them once its envelope expired.
    arguments: Option<Box<Value>>,
    /// The visual frame the action was previewed from, for a person who
    /// decides later (a suspended checkpoint keeps it).
    frame: Option<Box<crate::runtime::ImageContent>>,
    /// Whether that frame shows the target window only (its top left is
    /// the window's), not the whole screen.
    frame_window_only: bool,
}

impl FreshPreview {
    /// Binds `preview` to the session and principal and checks it is fresh by
    /// `clock`. A preview that fails comes back with the error, so the caller
    /// can still say which action was refused.
    pub(crate) fn check(
        preview: Box<ActionPreview>,
        retained: Option<Value>,
        session_id: &str,
        principal_id: &str,
        clock: &dyn Clock,
    ) -> Result<Self, (ComputerUseError, Box<ActionPreview>)> {
        match Self::bind(&preview, session_id, principal_id, clock) {
            Ok(()) => Ok(Self {
                preview,
                retained: retained.map(Box::new),
                arguments: None,
                frame: None,
                frame_window_only: false,
            }),
            Err(err) => Err((err, preview)),
        }
    }

    fn bind(
        preview: &ActionPreview,
        session_id: &str,
        principal_id: &str,
        clock: &dyn Clock,
    ) -> Result<(), ComputerUseError> {
        let envelope = &preview.envelope;
        binding::bind(
            "ActionEnvelope",
            "sessionId",
            session_id,
            &envelope.session_id,
        )?;
        binding::bind(
            "ActionEnvelope",
            "principalId",
            principal_id,
            &envelope.principal_id,
        )?;
        binding::envelope_expiry(envelope, clock)
    }

    /// Checks freshness again, at a later time, without re-parsing.
    pub(crate) fn recheck(&self, clock: &dyn Clock) -> Result<(), ComputerUseError> {
        binding::recheck_expiry("ActionEnvelope", &self.preview.envelope.expires_at, clock)
    }

    /// The preview.
    pub fn get(&self) -> &ActionPreview {
        &self.preview
    }

    /// The envelope.
    pub fn envelope(&self) -> &ActionEnvelope {
        &self.preview.envelope
    }

    /// What the runtime keeps for this preview.
    pub(crate) fn retained(&self) -> Option<&Value> {
        self.retained.as_deref()
    }

    /// The proposal's arguments, when known.
    pub(crate) fn arguments(&self) -> Option<&Value> {
        self.arguments.as_deref()
    }

    /// The frame the action was previewed from, if the observation had one.
    pub(crate) fn frame(&self) -> Option<&crate::runtime::ImageContent> {
        self.frame.as_deref()
    }

    /// Whether the frame shows the target window only.
    pub(crate) fn frame_window_only(&self) -> bool {
        self.frame_window_only
    }

    /// Keeps the observed `frame` with the preview (`window_only` when it
    /// shows the target window alone).
    pub(crate) fn with_frame(
        mut self,
        frame: Option<crate::runtime::ImageContent>,
        window_only: bool,
    ) -> Self {
        self.frame = frame.map(Box::new);
        self.frame_window_only = window_only;
        self
    }

    /// Keeps the proposal's `arguments` with the preview.
    pub(crate) fn with_arguments(mut self, arguments: Option<Value>) -> Self {
        self.arguments = arguments.map(Box::new);
        self
    }
}

/// Who the session acts as: the agent and execution group every lease and
/// reservation must not contradict, whatever the envelope says.
pub(crate) struct Acting<'a> {
    pub(crate) agent_id: Option<&'a str>,
    pub(crate) execution_group_id: Option<&'a str>,
}

/// A reservation bound to its envelope and to the session's own agent and
/// execution group (or the fact that the runtime made none). The reservation
/// itself is held by the action guard.
#[derive(Debug)]
pub struct BoundReservation {
    // Private, so only the check below makes one.
    _checked: (),
}

impl BoundReservation {
    pub(crate) fn check(
        reservation: Option<&TargetReservation>,
        envelope: &ActionEnvelope,
        acting: &Acting<'_>,
        clock: &dyn Clock,
    ) -> Result<Self, ComputerUseError> {
        if let Some(reservation) = reservation {
            binding::bind_optional(
                "TargetReservation",
                "agentId",
                acting.agent_id,
                reservation.agent_id.as_deref(),
            )?;
            binding::bind_optional(
                "TargetReservation",
                "executionGroupId",
                acting.execution_group_id,
                reservation.execution_group_id.as_deref(),
            )?;
            binding::reservation_checks(reservation, envelope, clock)?;
        }
        Ok(Self { _checked: () })
    }

    /// Checks what time can change (the expiry) again, at a later time. The
    /// identity fields were bound once and are immutable.
    pub(crate) fn recheck(
        &self,
        reservation: Option<&TargetReservation>,
        clock: &dyn Clock,
    ) -> Result<(), ComputerUseError> {
        match reservation {
            Some(reservation) => {
                binding::recheck_expiry("TargetReservation", &reservation.expires_at, clock)
            }
            None => Ok(()),
        }
    }
}

/// A control lease bound to its envelope and to the session's own agent.
#[derive(Debug)]
pub struct BoundLease {
    /// The same lease the guard holds (shared, not copied).
    lease: Arc<ControlLease>,
}

impl BoundLease {
    pub(crate) fn check(
        lease: Arc<ControlLease>,
        envelope: &ActionEnvelope,
        acting: &Acting<'_>,
        clock: &dyn Clock,
    ) -> Result<Self, ComputerUseError> {
        let used = lease.actions_used;
        Self::spend(lease, used, envelope, acting, clock)
    }

    /// Binds a task lease to one action spending from it: every lease
    /// check, with `used` actions counted against its budget (the lease's
    /// own `actionsUsed` and the actions spent from it since).
    pub(crate) fn spend(
        lease: Arc<ControlLease>,
        used: u32,
        envelope: &ActionEnvelope,
        acting: &Acting<'_>,
        clock: &dyn Clock,
    ) -> Result<Self, ComputerUseError> {
        binding::bind_optional(
            "ControlLease",
            "agentId",
            acting.agent_id,
            lease.agent_id.as_deref(),
        )?;
        binding::lease_checks_used(&lease, used, envelope, clock)?;
        Ok(Self { lease })
    }

    /// Checks what time can change (the expiry) again, at a later time.
    pub(crate) fn recheck(&self, clock: &dyn Clock) -> Result<(), ComputerUseError> {
        binding::recheck_expiry("ControlLease", &self.lease.expires_at, clock)
    }

    /// The lease.
    pub fn get(&self) -> &ControlLease {
        &self.lease
    }

    /// A shared handle on the lease.
    pub(crate) fn handle(&self) -> Arc<ControlLease> {
        Arc::clone(&self.lease)
    }
}

/// A receipt bound to its envelope (session, action and digest).
#[derive(Debug, Clone)]
pub struct BoundReceipt {
    receipt: Box<ExecutionReceipt>,
}

impl BoundReceipt {
    pub(crate) fn check(
        receipt: ExecutionReceipt,
        envelope: &ActionEnvelope,
    ) -> Result<Self, ComputerUseError> {
        binding::validate_receipt(&receipt, envelope)?;
        Ok(Self {
            receipt: Box::new(receipt),
        })
    }

    /// The receipt.
    pub fn get(&self) -> &ExecutionReceipt {
        &self.receipt
    }
}
