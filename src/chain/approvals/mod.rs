//! Approvals: a person's yes or no to one previewed action, kept beside a
//! sealed checkpoint while they decide, and the resume that turns it back
//! into an `Approved` stage.
//!
//! Who is trusted with what depends on the runtime. Where the server
//! issues grants (upstream's server, the simulator), the authority is the
//! grant the approver's side obtains with its own credentials, and single
//! use is the server's grant accounting and its run-once receipts. Where
//! no server holds grants (an in-process runtime), the host is the
//! authority; what this room promises even then, against a careless or
//! hostile agent, is that a checkpoint is consumed once, in its store of
//! record only, and that a recorded decision, a denial above all, is never
//! overtaken by the agent's own approval: the consume and the check for a
//! decision are one atomic store step ([`stores`]), and every resume is
//! built around that one claim ([`claim`]).

mod approval;
mod checkpoint;
pub(crate) mod claim;
mod decision;
pub(crate) mod evidence;
pub(crate) mod give_back;
mod grantable;
mod identity;
mod offload;
pub(crate) mod refresh;
mod refusal;
pub(crate) mod report;
pub(crate) mod resume;
pub(crate) mod stores;
mod view;

pub use approval::{Approval, ApprovalSource, Authority};
#[cfg(feature = "adk")]
pub(crate) use checkpoint::open_record;
pub(crate) use checkpoint::{CheckpointBody, SealedFrame, VERSION, seal_record};
pub use decision::{
    ApproverKey, ApproverPublicKey, Decision, decide, decision_of, wait_for_decision,
};
pub use evidence::{BOUNDS_TOLERANCE_PX, DEFAULT_TARGET_EVIDENCE_MAX_AGE};
pub use grantable::{GrantableCheckpoint, open_for_grant};
pub use identity::{CheckpointId, MIN_KEY_LEN, SealingKey};
pub(crate) use offload::run as offload;
pub use refusal::CheckpointRefusal;
pub use report::{ActionReport, MOST_REPORTS, Reported, ReportedOutcome, reported, reports_of};
pub use stores::{CheckpointStore, ClaimBasis, FileCheckpointStore, MemoryCheckpointStore};
pub use view::{CheckpointView, FieldWrite, Listed, inspect, pending};
