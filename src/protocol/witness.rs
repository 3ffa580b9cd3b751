//! Proofs that an answer was checked.
//!
//! Each witness can only be made inside this crate, by the validator that
//! checked the value it holds, so a stage that holds a `BoundLease` holds a
//! lease that was bound to its envelope — a fact about the type, not a flag.

use crate::ComputerUseError;
use crate::clock::Clock;
use crate::contracts::{
    ActionEnvelope, ActionPreview, ControlLease, ExecutionReceipt, TargetReservation,
};
use crate::runtime::binding;

/// A preview whose envelope was bound to the session and principal and was
/// fresh when checked.
#[derive(Debug)]
pub struct FreshPreview {
    // Boxed: the preview travels through every stage, and moving a pointer
    // is cheaper than moving the whole envelope at each transition.
    preview: Box<ActionPreview>,
    /// `expiresAt`, in nanoseconds since the Unix epoch.
    expires: i128,
}

impl FreshPreview {
    /// Binds `preview` to the session and principal and checks it is fresh by
    /// `clock`. A preview that fails comes back with the error, so the caller
    /// can still say which action was refused.
    pub(crate) fn check(
        preview: Box<ActionPreview>,
        session_id: &str,
        principal_id: &str,
        clock: &dyn Clock,
    ) -> Result<Self, (ComputerUseError, Box<ActionPreview>)> {
        match Self::expiry(&preview, session_id, principal_id, clock) {
            Ok(expires) => Ok(Self { preview, expires }),
            Err(err) => Err((err, preview)),
        }
    }

    fn expiry(
        preview: &ActionPreview,
        session_id: &str,
        principal_id: &str,
        clock: &dyn Clock,
    ) -> Result<i128, ComputerUseError> {
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
        binding::recheck_envelope(&self.preview.envelope, clock, self.expires)
    }

    /// The preview.
    pub fn get(&self) -> &ActionPreview {
        &self.preview
    }

    /// The envelope.
    pub fn envelope(&self) -> &ActionEnvelope {
        &self.preview.envelope
    }
}

/// A reservation bound to its envelope.
#[derive(Debug)]
pub struct BoundReservation {
    expiry: Option<i128>,
}

impl BoundReservation {
    pub(crate) fn check(
        reservation: Option<&TargetReservation>,
        envelope: &ActionEnvelope,
        clock: &dyn Clock,
    ) -> Result<Self, ComputerUseError> {
        let expiry = match reservation {
            Some(reservation) => Some(binding::reservation_checks(
                reservation,
                envelope,
                clock,
                None,
            )?),
            None => None,
        };
        Ok(Self { expiry })
    }

    /// Checks the same reservation again, at a later time.
    pub(crate) fn recheck(
        &self,
        reservation: Option<&TargetReservation>,
        envelope: &ActionEnvelope,
        clock: &dyn Clock,
    ) -> Result<(), ComputerUseError> {
        match reservation {
            Some(reservation) => {
                binding::reservation_checks(reservation, envelope, clock, self.expiry).map(drop)
            }
            None => Ok(()),
        }
    }
}

/// A control lease bound to its envelope.
#[derive(Debug)]
pub struct BoundLease {
    lease: Box<ControlLease>,
    expiry: i128,
}

impl BoundLease {
    pub(crate) fn check(
        lease: Box<ControlLease>,
        envelope: &ActionEnvelope,
        clock: &dyn Clock,
    ) -> Result<Self, ComputerUseError> {
        let expiry = binding::lease_checks(&lease, envelope, clock, None)?;
        Ok(Self { lease, expiry })
    }

    /// Checks the same lease again, at a later time.
    pub(crate) fn recheck(
        &self,
        envelope: &ActionEnvelope,
        clock: &dyn Clock,
    ) -> Result<(), ComputerUseError> {
        binding::lease_checks(&self.lease, envelope, clock, Some(self.expiry)).map(drop)
    }

    /// The lease.
    pub fn get(&self) -> &ControlLease {
        &self.lease
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
