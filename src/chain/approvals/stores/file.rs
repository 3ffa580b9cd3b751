//! Checkpoints as files: each written whole under a temporary name and
//! linked into place, so a claim or a decision is one link that fails if
//! its name exists.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{CheckpointStore, ClaimBasis, fresh_store_id, refused, sealed};
use crate::ComputerUseError;
use crate::chain::approvals::identity::{CheckpointId, SealingKey};
use crate::chain::approvals::refusal::CheckpointRefusal;
use crate::digest::sha256_hex;

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

    fn outcome_path_of(&self, id: &CheckpointId, n: usize) -> PathBuf {
        self.dir.join(format!("{id}.outcome.{n}"))
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

    /// The consumed file is first renamed to a name of this call's own (so
    /// no other process's claim can be lost in between), linked back to
    /// its name from there (a link never replaces a file, so a checkpoint
    /// made again under the id is never overwritten), and the private name
    /// removed; a link that fails puts the consumed name back. A claim
    /// without a decision gives its mark in the decision slot back last.
    fn give_back(&self, id: &CheckpointId, basis: &ClaimBasis) -> Result<(), ComputerUseError> {
        let on_basis = match (basis, self.slot(id)?) {
            (ClaimBasis::Undecided, Slot::ClaimedUndecided) => true,
            (ClaimBasis::Decision(used), Slot::Decision(held)) => held == *used,
            _ => false,
        };
        let consumed = self.consumed_path_of(id);
        if !on_basis || !consumed.exists() {
            return Err(refused(id, CheckpointRefusal::NotClaimedSo));
        }
        let private = self.dir.join(format!(
            ".{}.returning-{}-{}",
            id.as_str(),
            std::process::id(),
            super::fresh_store_id("give-back", id.as_str())
        ));
        match std::fs::rename(&consumed, &private) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(refused(id, CheckpointRefusal::NotClaimedSo));
            }
            Err(err) => return Err(io_error(&consumed, "give the checkpoint back", err)),
        }
        let path = self.path_of(id);
        if let Err(err) = std::fs::hard_link(&private, &path) {
            let _ = std::fs::rename(&private, &consumed);
            return Err(if err.kind() == std::io::ErrorKind::AlreadyExists {
                refused(id, CheckpointRefusal::NotClaimedSo)
            } else {
                io_error(&path, "give the checkpoint back", err)
            });
        }
        // The checkpoint is back under its name; the private name is only
        // a second link to it.
        let _ = std::fs::remove_file(&private);
        if *basis == ClaimBasis::Undecided {
            let slot = self.decision_path_of(id);
            std::fs::remove_file(&slot)
                .map_err(|err| io_error(&slot, "give the checkpoint back", err))?;
        }
        Ok(())
    }

    /// Each report is a file of its own, `ID.outcome.N`, written like a
    /// checkpoint (linked to a name that must not exist), so two writers
    /// never share a number and none is overwritten.
    fn record_outcome(
        &self,
        id: &CheckpointId,
        sequence: usize,
        record: &str,
    ) -> Result<(), ComputerUseError> {
        if !self.path_of(id).exists() && !self.consumed_path_of(id).exists() {
            return Err(refused(id, CheckpointRefusal::Missing));
        }
        if sequence >= crate::chain::MOST_REPORTS {
            return Err(super::too_many_reports(id));
        }
        if self.outcomes(id)?.len() != sequence {
            return Err(super::report_place_taken(id, sequence));
        }
        let target = self.outcome_path_of(id, sequence);
        match self.write_new(id.as_str(), &target, record) {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                Err(super::report_place_taken(id, sequence))
            }
            Err(err) => Err(io_error(&target, "write an outcome report", err)),
        }
    }

    /// Every numbered report file is read: one missing below a later one
    /// (a report removed from the middle, or the first) is an error, not
    /// an end.
    fn outcomes(&self, id: &CheckpointId) -> Result<Vec<String>, ComputerUseError> {
        let mut slots = Vec::new();
        for n in 0..crate::chain::MOST_REPORTS {
            let path = self.outcome_path_of(id, n);
            match std::fs::read_to_string(&path) {
                Ok(text) => slots.push(Some(text.trim().to_owned())),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => slots.push(None),
                Err(err) => return Err(io_error(&path, "read an outcome report", err)),
            }
        }
        while slots.last().is_some_and(Option::is_none) {
            slots.pop();
        }
        slots
            .into_iter()
            .enumerate()
            .map(|(n, slot)| {
                slot.ok_or_else(|| ComputerUseError::InvalidRequest {
                    field: "outcomeReport".into(),
                    message: format!(
                        "checkpoint {id}: report {n} is missing while a later one is there"
                    ),
                })
            })
            .collect()
    }

    /// Ordered by when each checkpoint's latest report was written (its
    /// file's modification time), the latest first.
    fn reported(&self) -> Result<Vec<CheckpointId>, ComputerUseError> {
        let entries = std::fs::read_dir(&self.dir)
            .map_err(|err| io_error(&self.dir, "list the checkpoint directory", err))?;
        let mut latest: std::collections::HashMap<CheckpointId, std::time::SystemTime> =
            std::collections::HashMap::new();
        for entry in entries {
            let entry =
                entry.map_err(|err| io_error(&self.dir, "list the checkpoint directory", err))?;
            let name = entry.file_name();
            let Some((stem, n)) = name.to_str().and_then(|n| n.split_once(".outcome.")) else {
                continue;
            };
            let (Ok(id), Ok(_)) = (stem.parse::<CheckpointId>(), n.parse::<usize>()) else {
                continue;
            };
            let written = entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            let at = latest.entry(id).or_insert(written);
            *at = (*at).max(written);
        }
        let mut ids: Vec<(CheckpointId, std::time::SystemTime)> = latest.into_iter().collect();
        ids.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.as_str().cmp(b.0.as_str())));
        Ok(ids.into_iter().map(|(id, _)| id).collect())
    }
}
