//! Proofs: the only keys to the runtime calls that change the server's state.
//!
//! The stage types are sound only if they are the only way in. So every
//! runtime method that changes state on the server — reserving a target,
//! taking the lease, the mutation itself, giving a reservation or a lease
//! back — takes one of these values, and only the matching stage (or the
//! session's reaper, for releases) can make one. A runtime reads what it
//! needs from the proof; a caller holding every public item of this crate
//! cannot call those methods at all, because it cannot produce the argument.
//!
//! Each proof has private fields, no public constructor, and no `Clone`,
//! `Copy`, `Default` or `Deserialize`. It borrows from the stage that made
//! it, so it cannot outlive that stage's transition or be kept for a second
//! call.
//!
//! ```compile_fail,E0451
//! // Minting a proof outside the crate does not compile.
//! use adk_computer_use::contracts::{ActionEnvelope, ControlLease};
//! use adk_computer_use::runtime::ExecuteProof;
//! fn mint<'a>(envelope: &'a ActionEnvelope, lease: &'a ControlLease) -> ExecuteProof<'a> {
//!     ExecuteProof { envelope, lease, grant_id: None, retained: None }
//! }
//! ```
//!
//! ```compile_fail,E0277
//! // A proof cannot be copied for a second call.
//! use adk_computer_use::runtime::ExecuteProof;
//! fn twice<'a>(proof: &ExecuteProof<'a>) -> ExecuteProof<'a> {
//!     ExecuteProof::clone(proof)
//! }
//! ```

use std::fmt;

use serde_json::Value;

use crate::contracts::{ActionEnvelope, ControlLease, ExecutionMode, TargetReservation, WindowId};

/// The key to [`super::ComputerUseRuntime::reserve_target`]: an approved,
/// fresh preview whose identity the chain has bound.
pub struct ReserveProof<'a> {
    envelope: &'a ActionEnvelope,
}

impl<'a> ReserveProof<'a> {
    pub(crate) fn new(envelope: &'a ActionEnvelope) -> Self {
        Self { envelope }
    }

    /// The envelope whose target to reserve.
    pub fn envelope(&self) -> &ActionEnvelope {
        self.envelope
    }
}

/// The key to [`super::ComputerUseRuntime::acquire_lease`]: an approved
/// action that holds its validated reservation (if the runtime made one).
pub struct LeaseProof<'a> {
    envelope: &'a ActionEnvelope,
    reservation: Option<&'a TargetReservation>,
}

impl<'a> LeaseProof<'a> {
    pub(crate) fn new(
        envelope: &'a ActionEnvelope,
        reservation: Option<&'a TargetReservation>,
    ) -> Self {
        Self {
            envelope,
            reservation,
        }
    }

    /// The envelope the lease is for.
    pub fn envelope(&self) -> &ActionEnvelope {
        self.envelope
    }

    /// The reservation the action holds, when the runtime made one.
    pub fn reservation(&self) -> Option<&TargetReservation> {
        self.reservation
    }
}

/// The key to [`super::ComputerUseRuntime::acquire_task_lease`]: a session
/// asking for one control lease for a task, bounded by its own target. Made
/// only by [`crate::chain::Session::lease_task`], from terms it checked.
pub struct TaskLeaseProof<'a> {
    session_id: &'a str,
    agent_id: Option<&'a str>,
    execution_group_id: Option<&'a str>,
    mode: ExecutionMode,
    budget: u32,
    ttl: std::time::Duration,
    app_id: &'a str,
    window_id: Option<&'a WindowId>,
}

impl<'a> TaskLeaseProof<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        session_id: &'a str,
        agent_id: Option<&'a str>,
        execution_group_id: Option<&'a str>,
        mode: ExecutionMode,
        budget: u32,
        ttl: std::time::Duration,
        app_id: &'a str,
        window_id: Option<&'a WindowId>,
    ) -> Self {
        Self {
            session_id,
            agent_id,
            execution_group_id,
            mode,
            budget,
            ttl,
            app_id,
            window_id,
        }
    }

    /// The runtime session the lease is for.
    pub fn session_id(&self) -> &str {
        self.session_id
    }

    /// The agent that will hold it, when the session acts as one.
    pub fn agent_id(&self) -> Option<&str> {
        self.agent_id
    }

    /// The execution group the session acts in.
    pub fn execution_group_id(&self) -> Option<&str> {
        self.execution_group_id
    }

    /// The mode every action under the lease runs in (`background` or
    /// `foreground`).
    pub fn mode(&self) -> ExecutionMode {
        self.mode
    }

    /// How many mutations the lease authorizes in all.
    pub fn budget(&self) -> u32 {
        self.budget
    }

    /// How long the lease may last.
    pub fn ttl(&self) -> std::time::Duration {
        self.ttl
    }

    /// The one application the lease is bounded to: the session's target.
    pub fn app_id(&self) -> &str {
        self.app_id
    }

    /// The one window the lease is bounded to, when the session's target
    /// names one.
    pub fn window_id(&self) -> Option<&WindowId> {
        self.window_id
    }
}

/// The key to [`super::ComputerUseRuntime::execute_action`]: a leased action
/// whose every binding was re-checked immediately before this call. Made
/// once per `Leased`, which the call consumes.
pub struct ExecuteProof<'a> {
    envelope: &'a ActionEnvelope,
    lease: &'a ControlLease,
    grant_id: Option<&'a str>,
    retained: Option<&'a Value>,
}

impl<'a> ExecuteProof<'a> {
    pub(crate) fn new(
        envelope: &'a ActionEnvelope,
        lease: &'a ControlLease,
        grant_id: Option<&'a str>,
        retained: Option<&'a Value>,
    ) -> Self {
        Self {
            envelope,
            lease,
            grant_id,
            retained,
        }
    }

    /// The envelope to execute, exactly as it was previewed.
    pub fn envelope(&self) -> &ActionEnvelope {
        self.envelope
    }

    /// The validated control lease to execute under.
    pub fn lease(&self) -> &ControlLease {
        self.lease
    }

    /// The approval grant to present, when a person approved through one.
    pub fn grant_id(&self) -> Option<&str> {
        self.grant_id
    }

    /// What the runtime asked to keep when it previewed this action
    /// ([`super::PreviewAnswer::retained`]), carried by the stage (and
    /// through a sealed checkpoint) to this call.
    pub fn retained(&self) -> Option<&Value> {
        self.retained
    }
}

/// The key to [`super::ComputerUseRuntime::release_target`]: a reservation
/// this session holds, handed back by the stage or the reaper that owns it.
pub struct ReleaseProof<'a> {
    reservation: &'a TargetReservation,
    session_id: &'a str,
}

impl<'a> ReleaseProof<'a> {
    pub(crate) fn new(reservation: &'a TargetReservation, session_id: &'a str) -> Self {
        Self {
            reservation,
            session_id,
        }
    }

    /// The reservation to release.
    pub fn reservation(&self) -> &TargetReservation {
        self.reservation
    }

    /// The runtime session the reservation was asked for in: the governed
    /// session's. Release in it, not in whatever session the reservation
    /// claims (a forged answer may claim another) nor in the one the
    /// runtime has moved to since.
    pub fn session_id(&self) -> &str {
        self.session_id
    }
}

/// The key to [`super::ComputerUseRuntime::release_lease`]: a lease this
/// session holds, handed back when its action ends.
pub struct LeaseReleaseProof<'a> {
    lease: &'a ControlLease,
}

impl<'a> LeaseReleaseProof<'a> {
    pub(crate) fn new(lease: &'a ControlLease) -> Self {
        Self { lease }
    }

    /// The lease to release.
    pub fn lease(&self) -> &ControlLease {
        self.lease
    }
}

macro_rules! opaque_debug {
    ($($name:ident),*) => {$(
        impl fmt::Debug for $name<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name)).finish_non_exhaustive()
            }
        }
    )*};
}

opaque_debug!(
    ReserveProof,
    LeaseProof,
    TaskLeaseProof,
    ExecuteProof,
    ReleaseProof,
    LeaseReleaseProof
);
