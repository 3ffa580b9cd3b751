//! The governed chain, as types.
//!
//! ```text
//! Session ─observe()→ Observed ─preview(action)→ Previewed ─route()┬→ Approved
//!                                                                 ├→ PendingApproval ─approve()→ Approved
//!                                                                 │      └ suspend() → sealed checkpoint → Session::resume()
//!                                                                 └→ Blocked
//! Approved ─reserve()→ Reserved ─lease()→ Leased ─execute()→ Executed ─verify()→ Verified
//!                              └─spend(&mut TaskLease)→ Leased
//! ```
//!
//! `lease()` takes a control lease for the one action and gives it back
//! when the action ends; `spend()` spends one action of a [`TaskLease`] the
//! session took for several (see [`TaskLease`] for the trade-off).
//!
//! Every stage is its own type with private fields and no public
//! constructor, `Clone` or `Default`. Each transition takes `self`, so a stage
//! cannot be used twice, and a method exists only on the stage where it is
//! legal: there is exactly one `execute`, and it belongs to [`Leased`]. See
//! [`attacks`] for which ordering bug each type rules out.

pub(crate) mod approvals;
mod approved;
pub mod attacks;
mod builder;
mod core;
mod driver;
mod executed;
mod guard;
mod leased;
mod observed;
mod parts;
mod pending;
mod previewed;
mod proposal;
mod recorder;
mod reserved;
mod route;
mod session;
mod task;
mod task_terms;
mod verified;
mod witness;

pub use approvals::{ActionReport, MOST_REPORTS, Reported, ReportedOutcome, reported, reports_of};
pub use approvals::{
    Approval, ApprovalSource, ApproverKey, ApproverPublicKey, Authority, BOUNDS_TOLERANCE_PX,
    CheckpointId, CheckpointRefusal, CheckpointStore, CheckpointView, ClaimBasis,
    DEFAULT_TARGET_EVIDENCE_MAX_AGE, Decision, FieldWrite, FileCheckpointStore,
    GrantableCheckpoint, Listed, MIN_KEY_LEN, MemoryCheckpointStore, SealingKey, decide,
    decision_of, inspect, open_for_grant, pending, wait_for_decision,
};
pub use approved::Approved;
pub use builder::SessionBuilder;
pub use driver::ChainOutcome;
pub use executed::Executed;
pub use guard::{ReleaseStats, ResourceStats};
pub use leased::Leased;
pub use observed::Observed;
pub use pending::PendingApproval;
pub use previewed::Previewed;
pub use reserved::Reserved;
pub use route::{Blocked, Route};
pub use session::Session;
pub use task::{TaskLease, TaskLeaseRefusal, TaskLeaseTerms};
pub use verified::Verified;
