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

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::checkpoint::{CheckpointId, SealingKey};
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

    /// Whether `id` was claimed on an approval given without a decision
    /// (so a decision arriving now is refused as
    /// [`CheckpointRefusal::ResumedWithoutDecision`]).
    fn claimed_without_decision(&self, id: &CheckpointId) -> Result<bool, ComputerUseError>;
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

/// Checkpoints kept in memory (for tests and short-lived hosts).
#[derive(Debug)]
pub struct MemoryCheckpointStore {
    key: SealingKey,
    store_id: String,
    state: Mutex<MemoryState>,
}

#[derive(Debug, Default)]
struct MemoryState {
    records: HashMap<CheckpointId, Vec<String>>,
    claimed: HashSet<CheckpointId>,
    claimed_undecided: HashSet<CheckpointId>,
    decisions: HashMap<CheckpointId, String>,
}

impl MemoryCheckpointStore {
    /// An empty store whose checkpoints are sealed with `key`. Each store
    /// made is a store of its own: a record carried from another is refused.
    pub fn new(key: SealingKey) -> Self {
        Self {
            key,
            store_id: fresh_store_id("memory", ""),
            state: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, MemoryState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl sealed::Sealed for MemoryCheckpointStore {}

impl CheckpointStore for MemoryCheckpointStore {
    fn sealing_key(&self) -> &SealingKey {
        &self.key
    }

    fn store_id(&self) -> &str {
        &self.store_id
    }

    fn create(&self, id: &CheckpointId, record: &str) -> Result<(), ComputerUseError> {
        let mut state = self.state();
        if state.records.contains_key(id) || state.claimed.contains(id) {
            return Err(refused(id, CheckpointRefusal::Exists));
        }
        state.records.insert(id.clone(), vec![record.to_owned()]);
        Ok(())
    }

    fn load(&self, id: &CheckpointId) -> Result<Vec<String>, ComputerUseError> {
        let state = self.state();
        if let Some(found) = state.records.get(id) {
            return Ok(found.clone());
        }
        Err(refused(
            id,
            if state.claimed.contains(id) {
                CheckpointRefusal::AlreadyResumed
            } else {
                CheckpointRefusal::Missing
            },
        ))
    }

    fn claim(&self, id: &CheckpointId, basis: &ClaimBasis) -> Result<(), ComputerUseError> {
        let mut state = self.state();
        if !state.records.contains_key(id) {
            return Err(refused(
                id,
                if state.claimed.contains(id) {
                    CheckpointRefusal::AlreadyResumed
                } else {
                    CheckpointRefusal::Missing
                },
            ));
        }
        let recorded = state.decisions.get(id).map(String::as_str);
        match (basis, recorded) {
            (ClaimBasis::Undecided, Some(_)) => {
                return Err(refused(id, CheckpointRefusal::DecisionRecorded));
            }
            (ClaimBasis::Decision(_), None) => {
                return Err(refused(id, CheckpointRefusal::NoDecisionYet));
            }
            (ClaimBasis::Decision(used), Some(held)) if used.as_str() != held => {
                return Err(refused(id, CheckpointRefusal::AlreadyDecided));
            }
            _ => {}
        }
        state.records.remove(id);
        state.claimed.insert(id.clone());
        if *basis == ClaimBasis::Undecided {
            state.claimed_undecided.insert(id.clone());
        }
        Ok(())
    }

    fn ids(&self) -> Result<Vec<CheckpointId>, ComputerUseError> {
        let mut ids: Vec<CheckpointId> = self.state().records.keys().cloned().collect();
        ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        Ok(ids)
    }

    fn record_decision(&self, id: &CheckpointId, record: &str) -> Result<(), ComputerUseError> {
        let mut state = self.state();
        if state.decisions.contains_key(id) {
            return Err(refused(id, CheckpointRefusal::AlreadyDecided));
        }
        if state.claimed_undecided.contains(id) {
            return Err(refused(id, CheckpointRefusal::ResumedWithoutDecision));
        }
        if state.claimed.contains(id) {
            return Err(refused(id, CheckpointRefusal::AlreadyResumed));
        }
        if !state.records.contains_key(id) {
            return Err(refused(id, CheckpointRefusal::Missing));
        }
        state.decisions.insert(id.clone(), record.to_owned());
        Ok(())
    }

    fn decision(&self, id: &CheckpointId) -> Result<Option<String>, ComputerUseError> {
        Ok(self.state().decisions.get(id).cloned())
    }

    fn claimed_without_decision(&self, id: &CheckpointId) -> Result<bool, ComputerUseError> {
        Ok(self.state().claimed_undecided.contains(id))
    }
}

/// What the decision slot of a checkpoint claimed without a decision holds
/// in a [`FileCheckpointStore`]: the slot is taken, so no decision can be
/// written after the claim.
const CLAIMED_UNDECIDED: &str = "{\"claimedWithoutDecision\":true}";

/// Checkpoints kept as files, one per id (`<id>.checkpoint`, one JSON line
/// per record), with the decision beside it (`<id>.decision`). A file is
/// written whole to a temporary name and then linked into place, which
/// fails if the name exists: a reader never sees half a file and a writer
/// never replaces one. The store's identity is kept in `store.id`.
#[derive(Debug, Clone)]
pub struct FileCheckpointStore {
    dir: PathBuf,
    key: SealingKey,
    store_id: String,
}

fn io_error(path: &Path, doing: &str, err: std::io::Error) -> ComputerUseError {
    ComputerUseError::Storage {
        operation: doing.to_owned(),
        path: path.display().to_string(),
        message: err.to_string(),
    }
}

impl FileCheckpointStore {
    /// A store in `dir` (created if missing) whose checkpoints are sealed
    /// with `key`. The directory's identity is made the first time and read
    /// back every time after.
    pub fn new(dir: impl Into<PathBuf>, key: SealingKey) -> Result<Self, ComputerUseError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)
            .map_err(|err| io_error(&dir, "create the checkpoint directory", err))?;
        let mut store = Self {
            dir,
            key,
            store_id: String::new(),
        };
        store.store_id = store.identity()?;
        Ok(store)
    }

    /// Where the directory is, as the file system knows it (device and
    /// inode on Unix): a copy of the directory is somewhere else, so its
    /// identity differs even though its `store.id` file was copied too.
    fn place(&self) -> Result<String, ComputerUseError> {
        let metadata = std::fs::metadata(&self.dir)
            .map_err(|err| io_error(&self.dir, "read the checkpoint directory", err))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Ok(format!("{}:{}", metadata.dev(), metadata.ino()))
        }
        #[cfg(not(unix))]
        {
            let _ = metadata;
            Ok(std::fs::canonicalize(&self.dir)
                .unwrap_or_else(|_| self.dir.clone())
                .display()
                .to_string())
        }
    }

    /// The directory's identity: read from `store.id`, or written there
    /// once (of two processes opening a new directory, both read the one
    /// that was linked first).
    fn identity(&self) -> Result<String, ComputerUseError> {
        let path = self.dir.join("store.id");
        let read = |path: &Path| -> Result<Option<String>, ComputerUseError> {
            match std::fs::read_to_string(path) {
                Ok(text) if !text.trim().is_empty() => Ok(Some(text.trim().to_owned())),
                Ok(_) => Ok(None),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(err) => Err(io_error(path, "read the store's identity", err)),
            }
        };
        let place = self.place()?;
        let seed = match read(&path)? {
            Some(found) => found,
            None => {
                let made = fresh_store_id("file", &place);
                match self.write_new("store", &path, &made) {
                    Ok(()) => made,
                    Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => read(&path)?
                        .ok_or_else(|| {
                            io_error(
                                &path,
                                "read the store's identity",
                                std::io::Error::other("the identity file is empty"),
                            )
                        })?,
                    Err(err) => return Err(io_error(&path, "write the store's identity", err)),
                }
            }
        };
        Ok(format!(
            "file-{}",
            &sha256_hex(format!("{seed}\n{place}"))[..24]
        ))
    }

    /// The file that holds `id`.
    pub fn path_of(&self, id: &CheckpointId) -> PathBuf {
        self.dir.join(format!("{id}.checkpoint"))
    }

    fn consumed_path_of(&self, id: &CheckpointId) -> PathBuf {
        self.dir.join(format!("{id}.consumed"))
    }

    fn decision_path_of(&self, id: &CheckpointId) -> PathBuf {
        self.dir.join(format!("{id}.decision"))
    }

    /// Writes `record` to `target`, which must not exist yet: through a
    /// temporary file no other writer names (in this process or another),
    /// synced, then hard-linked to `target`, which fails when it exists.
    fn write_new(&self, stem: &str, target: &Path, record: &str) -> std::io::Result<()> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let serial = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temp = self
            .dir
            .join(format!(".{stem}.{}.{serial}.tmp", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temp)?;
            file.write_all(record.as_bytes())?;
            file.write_all(b"\n")?;
            file.sync_all()
        };
        let linked = write().and_then(|()| std::fs::hard_link(&temp, target));
        let _ = std::fs::remove_file(&temp);
        linked
    }

    /// What the decision slot of `id` holds: nothing, the mark of a claim
    /// without a decision, or a decision.
    fn slot(&self, id: &CheckpointId) -> Result<Slot, ComputerUseError> {
        let path = self.decision_path_of(id);
        match std::fs::read_to_string(&path) {
            Ok(text) if text.trim() == CLAIMED_UNDECIDED => Ok(Slot::ClaimedUndecided),
            Ok(text) => Ok(Slot::Decision(text.trim().to_owned())),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Slot::Empty),
            Err(err) => Err(io_error(&path, "read the decision", err)),
        }
    }

    /// Why `id` has no checkpoint file.
    fn gone(&self, id: &CheckpointId) -> ComputerUseError {
        refused(
            id,
            if self.consumed_path_of(id).exists() {
                CheckpointRefusal::AlreadyResumed
            } else {
                CheckpointRefusal::Missing
            },
        )
    }

    /// Renames the checkpoint to its consumed name. A rename is atomic: when
    /// two processes race, the second finds the file gone.
    fn retire(&self, id: &CheckpointId) -> Result<(), ComputerUseError> {
        let path = self.path_of(id);
        match std::fs::rename(&path, self.consumed_path_of(id)) {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Err(self.gone(id)),
            Err(err) => Err(io_error(&path, "consume the checkpoint", err)),
        }
    }
}

enum Slot {
    Empty,
    ClaimedUndecided,
    Decision(String),
}

impl sealed::Sealed for FileCheckpointStore {}

impl CheckpointStore for FileCheckpointStore {
    fn sealing_key(&self) -> &SealingKey {
        &self.key
    }

    fn store_id(&self) -> &str {
        &self.store_id
    }

    fn create(&self, id: &CheckpointId, record: &str) -> Result<(), ComputerUseError> {
        let target = self.path_of(id);
        if target.exists() || self.consumed_path_of(id).exists() {
            return Err(refused(id, CheckpointRefusal::Exists));
        }
        match self.write_new(id.as_str(), &target, record) {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                Err(refused(id, CheckpointRefusal::Exists))
            }
            Err(err) => Err(io_error(&target, "write the checkpoint", err)),
        }
    }

    fn load(&self, id: &CheckpointId) -> Result<Vec<String>, ComputerUseError> {
        let path = self.path_of(id);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Err(self.gone(id)),
            Err(err) => return Err(io_error(&path, "read the checkpoint", err)),
        };
        Ok(text
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(str::to_owned)
            .collect())
    }

    /// Without a decision, the decision slot is taken first (a hard link,
    /// which fails when a decision is there), then the checkpoint renamed:
    /// a decision and an undecided claim compete for the one name, and
    /// exactly one gets it. On a decision, the decision is immutable once
    /// linked, and the rename alone decides between racing claims.
    fn claim(&self, id: &CheckpointId, basis: &ClaimBasis) -> Result<(), ComputerUseError> {
        if !self.path_of(id).exists() {
            return Err(self.gone(id));
        }
        match basis {
            ClaimBasis::Undecided => {
                let slot = self.decision_path_of(id);
                match self.write_new(id.as_str(), &slot, CLAIMED_UNDECIDED) {
                    Ok(()) => {}
                    Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                        return Err(match self.slot(id)? {
                            Slot::ClaimedUndecided => {
                                refused(id, CheckpointRefusal::AlreadyResumed)
                            }
                            _ => refused(id, CheckpointRefusal::DecisionRecorded),
                        });
                    }
                    Err(err) => return Err(io_error(&slot, "claim the checkpoint", err)),
                }
            }
            ClaimBasis::Decision(used) => match self.slot(id)? {
                Slot::Decision(held) if held == *used => {}
                Slot::Decision(_) => return Err(refused(id, CheckpointRefusal::AlreadyDecided)),
                Slot::ClaimedUndecided => {
                    return Err(refused(id, CheckpointRefusal::AlreadyResumed));
                }
                Slot::Empty => return Err(refused(id, CheckpointRefusal::NoDecisionYet)),
            },
        }
        let retired = self.retire(id);
        if *basis == ClaimBasis::Undecided
            && let Err(err) = &retired
            && !matches!(
                err.checkpoint_refusal(),
                Some(CheckpointRefusal::AlreadyResumed | CheckpointRefusal::Missing)
            )
        {
            // The rename failed for a reason of the disk's, not a race: the
            // slot is given back, so the checkpoint is neither stuck nor
            // reported to a person as resumed. (If the process dies right
            // here instead, the slot stays taken: the checkpoint is then
            // refused to everyone, which fails closed.)
            let _ = std::fs::remove_file(self.decision_path_of(id));
        }
        retired
    }

    fn ids(&self) -> Result<Vec<CheckpointId>, ComputerUseError> {
        let entries = std::fs::read_dir(&self.dir)
            .map_err(|err| io_error(&self.dir, "list the checkpoint directory", err))?;
        let mut ids = Vec::new();
        for entry in entries {
            let entry =
                entry.map_err(|err| io_error(&self.dir, "list the checkpoint directory", err))?;
            let name = entry.file_name();
            let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".checkpoint")) else {
                continue;
            };
            // Only names this store writes; anything else in the directory
            // is not a checkpoint.
            if let Ok(id) = stem.parse::<CheckpointId>() {
                ids.push(id);
            }
        }
        ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        Ok(ids)
    }

    /// Written like a checkpoint: a unique temporary file hard-linked to its
    /// name, which fails when a decision, or the mark of a claim without
    /// one, is already there.
    fn record_decision(&self, id: &CheckpointId, record: &str) -> Result<(), ComputerUseError> {
        if !self.path_of(id).exists() && !self.consumed_path_of(id).exists() {
            return Err(refused(id, CheckpointRefusal::Missing));
        }
        let target = self.decision_path_of(id);
        match self.write_new(id.as_str(), &target, record) {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                Err(match self.slot(id)? {
                    Slot::ClaimedUndecided => {
                        refused(id, CheckpointRefusal::ResumedWithoutDecision)
                    }
                    _ => refused(id, CheckpointRefusal::AlreadyDecided),
                })
            }
            Err(err) => Err(io_error(&target, "write the decision", err)),
        }
    }

    fn decision(&self, id: &CheckpointId) -> Result<Option<String>, ComputerUseError> {
        Ok(match self.slot(id)? {
            Slot::Decision(record) => Some(record),
            Slot::Empty | Slot::ClaimedUndecided => None,
        })
    }

    fn claimed_without_decision(&self, id: &CheckpointId) -> Result<bool, ComputerUseError> {
        Ok(matches!(self.slot(id)?, Slot::ClaimedUndecided))
    }
}
