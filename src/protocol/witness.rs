//! Proofs that an answer was checked.
//!
//! Each witness can only be made inside this crate, by the validator that
//! checked the value it holds, so a stage that holds a `BoundLease` holds a
//! lease that was bound to its envelope — a fact about the type, not a flag.

use time::OffsetDateTime;

use crate::ComputerUseError;
use crate::contracts::{
    ActionEnvelope, ActionPreview, ControlLease, ExecutionReceipt, TargetReservation,
};
use crate::runtime::binding;

/// A preview whose envelope was bound to the session and principal and was
/// fresh when checked.
#[derive(Debug)]
pub struct FreshPreview {
    preview: ActionPreview,
}

impl FreshPreview {
    pub(crate) fn check(
        preview: ActionPreview,
        session_id: &str,
        principal_id: &str,
        now: OffsetDateTime,
    ) -> Result<Self, ComputerUseError> {
        let envelope = &preview.envelope;
        for (field, expected, actual) in [
            ("sessionId", session_id, envelope.session_id.as_str()),
            ("principalId", principal_id, envelope.principal_id.as_str()),
        ] {
            if expected != actual {
                return Err(ComputerUseError::IdentityMismatch {
                    object: "ActionEnvelope",
                    field,
                    expected: expected.to_owned(),
                    actual: actual.to_owned(),
                });
            }
        }
        binding::validate_envelope_freshness_at(envelope, now)?;
        Ok(Self { preview })
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
    _checked: (),
}

impl BoundReservation {
    pub(crate) fn check(
        reservation: Option<&TargetReservation>,
        envelope: &ActionEnvelope,
        now: OffsetDateTime,
    ) -> Result<Self, ComputerUseError> {
        if let Some(reservation) = reservation {
            binding::validate_reservation_at(reservation, envelope, now)?;
        }
        Ok(Self { _checked: () })
    }
}

/// A control lease bound to its envelope.
#[derive(Debug)]
pub struct BoundLease {
    lease: ControlLease,
}

impl BoundLease {
    pub(crate) fn check(
        lease: ControlLease,
        envelope: &ActionEnvelope,
        now: OffsetDateTime,
    ) -> Result<Self, ComputerUseError> {
        binding::validate_lease_at(&lease, envelope, now)?;
        Ok(Self { lease })
    }

    /// Checks the same lease again, at a later time.
    pub(crate) fn recheck(
        &self,
        envelope: &ActionEnvelope,
        now: OffsetDateTime,
    ) -> Result<(), ComputerUseError> {
        binding::validate_lease_at(&self.lease, envelope, now)
    }

    /// The lease.
    pub fn get(&self) -> &ControlLease {
        &self.lease
    }
}

/// A receipt bound to its envelope (session, action and digest).
#[derive(Debug, Clone)]
pub struct BoundReceipt {
    receipt: ExecutionReceipt,
}

impl BoundReceipt {
    pub(crate) fn check(
        receipt: ExecutionReceipt,
        envelope: &ActionEnvelope,
    ) -> Result<Self, ComputerUseError> {
        binding::validate_receipt(&receipt, envelope)?;
        Ok(Self { receipt })
    }

    /// The receipt.
    pub fn get(&self) -> &ExecutionReceipt {
        &self.receipt
    }
}
