//! Where sealed checkpoints and the decisions beside them are kept.
//!
//! A store's promises are the approvals' guarantees, so the trait is
//! sealed: only the stores of this crate implement it (in memory, files,
//! PostgreSQL). Each makes the one step that matters atomic: a checkpoint
//! is *claimed* (consumed) either on a person's recorded decision or on
//! the condition that none is recorded, never both, and a decision arriving
//! after an undecided claim is refused. Each store also has an identity,
//! sealed into every checkpoint it holds, so a record carried to another
//! store is refused there.

mod file;
mod memory;

pub use file::FileCheckpointStore;
pub use memory::MemoryCheckpointStore;

use super::identity::{CheckpointId, SealingKey};
use super::refusal::CheckpointRefusal;
use crate::ComputerUseError;
use crate::digest::sha256_hex;

pub(crate) mod sealed {
    /// Only this crate's stores implement [`super::CheckpointStore`].
    pub trait Sealed {}
}

/// On what a claim consumes a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimBasis {
    /// On an approval given without a recorded decision: refused when a
    /// person's decision is recorded, and any decision recorded later is
    /// refused.
    Undecided,
    /// On this recorded decision (the exact record the store holds).
    Decision(String),
}

/// Where sealed checkpoints are kept. Writes never overwrite: `create`
/// refuses an id that holds or ever held a record, and `load` returns every
/// record the id holds, so a replacement shows up as a second record. A
/// checkpoint is single-use: `claim` retires it atomically, together with
/// the check for a decision, and a claimed id can be neither loaded nor
/// created again.
///
/// Every method does blocking I/O (files, PostgreSQL): the session calls
/// them on Tokio's blocking pool, never on an executor thread.
pub trait CheckpointStore: Send + Sync + sealed::Sealed {
    /// The key this store's checkpoints are sealed and opened with.
    fn sealing_key(&self) -> &SealingKey;

    /// This store's identity, sealed into each checkpoint it holds.
    fn store_id(&self) -> &str;

    /// Stores the first record for `id`; refuses if `id` holds one already
    /// or was claimed.
    fn create(&self, id: &CheckpointId, record: &str) -> Result<(), ComputerUseError>;

    /// Every record stored under `id`, oldest first.
    fn load(&self, id: &CheckpointId) -> Result<Vec<String>, ComputerUseError>;

    /// Retires `id` for good, on `basis`, in one atomic step: of racing
    /// claims and decisions (threads or processes) exactly one outcome
    /// holds. [`ClaimBasis::Undecided`] is refused with
    /// [`CheckpointRefusal::DecisionRecorded`] once a decision is recorded,
    /// and afterwards every decision is refused with
    /// [`CheckpointRefusal::ResumedWithoutDecision`].
    fn claim(&self, id: &CheckpointId, basis: &ClaimBasis) -> Result<(), ComputerUseError>;

    /// The checkpoints held and not yet claimed.
    fn ids(&self) -> Result<Vec<CheckpointId>, ComputerUseError>;

    /// Records a person's signed decision beside `id`, once; refused when
    /// one is recorded or the checkpoint was claimed already.
    fn record_decision(&self, id: &CheckpointId, record: &str) -> Result<(), ComputerUseError>;

    /// The signed decision recorded beside `id`, if one was.
    fn decision(&self, id: &CheckpointId) -> Result<Option<String>, ComputerUseError>;

    /// Gives back a claim taken on `basis` whose action was refused before
    /// any effect: `id` can be loaded, decided (when it was claimed without
    /// a decision) and claimed again, its decision, if any, kept. Refused
    /// unless `id` is claimed on exactly that basis.
    fn give_back(&self, id: &CheckpointId, basis: &ClaimBasis) -> Result<(), ComputerUseError>;

    /// Whether `id` was claimed on an approval given without a decision
    /// (so a decision arriving now is refused as
    /// [`CheckpointRefusal::ResumedWithoutDecision`]).
    fn claimed_without_decision(&self, id: &CheckpointId) -> Result<bool, ComputerUseError>;

    /// Adds the sealed report of how `id`'s action ended as its
    /// `sequence`th (from 0), in one atomic step: refused unless exactly
    /// `sequence` reports are held (another writer came first), for a
    /// checkpoint this store never held, and past
    /// [`MOST_REPORTS`](crate::chain::MOST_REPORTS) reports for one
    /// checkpoint.
    fn record_outcome(
        &self,
        id: &CheckpointId,
        sequence: usize,
        record: &str,
    ) -> Result<(), ComputerUseError>;

    /// The reports recorded beside `id`, oldest first.
    fn outcomes(&self, id: &CheckpointId) -> Result<Vec<String>, ComputerUseError>;

    /// The checkpoints with at least one report, the latest reported first.
    fn reported(&self) -> Result<Vec<CheckpointId>, ComputerUseError>;
}

/// The refusal of a report whose place among the checkpoint's reports
/// another writer took first.
pub(crate) fn report_place_taken(id: &CheckpointId, sequence: usize) -> ComputerUseError {
    ComputerUseError::InvalidRequest {
        field: "outcomeReport".into(),
        message: format!(
            "checkpoint {id}: expected to write report {sequence}, but another report holds that place"
        ),
    }
}

/// The most reports kept for one checkpoint (an approval given back after
/// a refusal may be resumed and refused again, until its expiry).
pub const MOST_REPORTS: usize = 16;

/// The refusal of a report past the most one checkpoint keeps.
pub(crate) fn too_many_reports(id: &CheckpointId) -> ComputerUseError {
    ComputerUseError::InvalidRequest {
        field: "outcomeReport".into(),
        message: format!(
            "checkpoint {id} holds {} reports already, the most it keeps",
            MOST_REPORTS
        ),
    }
}

/// A store identity no other store shares: a digest of where it lives, the
/// process and the moment it was made (not a secret; only distinct).
pub(crate) fn fresh_store_id(kind: &str, place: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let serial = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let seed = format!("{kind}\n{place}\n{}\n{serial}\n{now}", std::process::id());
    format!("{kind}-{}", &sha256_hex(seed)[..24])
}

fn refused(id: &CheckpointId, refusal: CheckpointRefusal) -> ComputerUseError {
    ComputerUseError::checkpoint(id, refusal)
}
