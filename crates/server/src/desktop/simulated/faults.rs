//! Faults the simulated desktop's server can be started with: each makes
//! it lie or fail in one precise way, so tests can prove that every lie is
//! caught by the chain.
//!
//! They exist only here, and reach the rules engine through one door:
//! [`crate::Server::simulated`] (and [`crate::State::simulated`]), which
//! take a [`SimulatedDesktop`] by its type. Every other constructor takes
//! any desktop and injects nothing, so a server over a real display (or any
//! wrapper around one) has no fault, by construction.
//!
//! [`SimulatedDesktop`]: super::SimulatedDesktop

use std::collections::BTreeSet;
use std::str::FromStr;

use adk_computer_use::ComputerUseError;

/// One way the simulator can misbehave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fault {
    /// Leases name another session.
    LeaseSession,
    /// Leases name another principal.
    LeasePrincipal,
    /// Leases name another agent.
    LeaseAgent,
    /// Leases are scoped to another application.
    LeaseApp,
    /// Leases are scoped to another window.
    LeaseWindow,
    /// Leases come back already expired.
    LeaseExpired,
    /// Reservations name another session.
    ReservationSession,
    /// Reservations name another principal.
    ReservationPrincipal,
    /// Reservations name another agent.
    ReservationAgent,
    /// Reservations name another intent.
    ReservationIntent,
    /// Reservations cover another application.
    ReservationApp,
    /// Reservations cover another window.
    ReservationWindow,
    /// Receipts carry another digest.
    ReceiptDigest,
    /// Receipts name another session.
    ReceiptSession,
    /// The process exits before the effect.
    CrashBeforeEffect,
    /// The process exits after the effect was committed.
    CrashAfterCommit,
    /// Releasing a reservation fails.
    FailRelease,
    /// A release is answered with the reservation still active.
    ReleaseState,
}

impl Fault {
    /// Every fault, with its command-line name.
    pub const ALL: [(&'static str, Fault); 18] = [
        ("lease.sessionId", Self::LeaseSession),
        ("lease.principalId", Self::LeasePrincipal),
        ("lease.agentId", Self::LeaseAgent),
        ("lease.appIds", Self::LeaseApp),
        ("lease.windowIds", Self::LeaseWindow),
        ("lease.expiresAt", Self::LeaseExpired),
        ("reservation.sessionId", Self::ReservationSession),
        ("reservation.principalId", Self::ReservationPrincipal),
        ("reservation.agentId", Self::ReservationAgent),
        ("reservation.intentId", Self::ReservationIntent),
        ("reservation.appId", Self::ReservationApp),
        ("reservation.windowId", Self::ReservationWindow),
        ("receipt.actionDigest", Self::ReceiptDigest),
        ("receipt.sessionId", Self::ReceiptSession),
        ("crash.beforeEffect", Self::CrashBeforeEffect),
        ("crash.afterCommit", Self::CrashAfterCommit),
        ("release.fails", Self::FailRelease),
        ("release.state", Self::ReleaseState),
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("unknown", |(name, _)| name)
    }
}

impl FromStr for Fault {
    type Err = ComputerUseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .find(|(name, _)| *name == text)
            .map(|(_, f)| *f)
            .ok_or_else(|| ComputerUseError::InvalidRequest {
                field: "--fault".into(),
                message: format!(
                    "expected one of {}, got {text:?}",
                    Self::ALL
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
    }
}

/// The faults a simulated desktop's server injects (none by default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults(BTreeSet<Fault>);

impl Faults {
    /// Whether `fault` is injected.
    pub fn has(&self, fault: Fault) -> bool {
        self.0.contains(&fault)
    }

    /// Adds `fault`.
    pub fn insert(&mut self, fault: Fault) {
        self.0.insert(fault);
    }

    /// Whether none is injected.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The injected faults, in order.
    pub fn iter(&self) -> impl Iterator<Item = Fault> + '_ {
        self.0.iter().copied()
    }
}

impl FromIterator<Fault> for Faults {
    fn from_iter<I: IntoIterator<Item = Fault>>(faults: I) -> Self {
        Self(faults.into_iter().collect())
    }
}
