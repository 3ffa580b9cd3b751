//! Checkpoints in memory: one lock over every map, so each claim is one
//! step.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use super::{CheckpointStore, ClaimBasis, fresh_store_id, refused, sealed, too_many_reports};
use crate::ComputerUseError;
use crate::chain::approvals::identity::{CheckpointId, SealingKey};
use crate::chain::approvals::refusal::CheckpointRefusal;

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
    /// The records of claimed checkpoints, kept for a claim given back.
    retired: HashMap<CheckpointId, Vec<String>>,
    claimed: HashSet<CheckpointId>,
    claimed_undecided: HashSet<CheckpointId>,
    decisions: HashMap<CheckpointId, String>,
    outcomes: HashMap<CheckpointId, Vec<String>>,
    /// Checkpoints with reports, the latest reported last.
    reported: Vec<CheckpointId>,
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
        if let Some(records) = state.records.remove(id) {
            state.retired.insert(id.clone(), records);
        }
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

    fn give_back(&self, id: &CheckpointId, basis: &ClaimBasis) -> Result<(), ComputerUseError> {
        let mut state = self.state();
        let undecided = state.claimed_undecided.contains(id);
        let on_basis = match basis {
            ClaimBasis::Undecided => undecided,
            ClaimBasis::Decision(used) => {
                !undecided && state.decisions.get(id).is_some_and(|held| held == used)
            }
        };
        if !state.claimed.contains(id) || !on_basis {
            return Err(refused(id, CheckpointRefusal::NotClaimedSo));
        }
        let Some(records) = state.retired.remove(id) else {
            return Err(refused(id, CheckpointRefusal::NotClaimedSo));
        };
        state.claimed.remove(id);
        state.claimed_undecided.remove(id);
        state.records.insert(id.clone(), records);
        Ok(())
    }

    fn record_outcome(
        &self,
        id: &CheckpointId,
        sequence: usize,
        record: &str,
    ) -> Result<(), ComputerUseError> {
        let mut state = self.state();
        if !state.records.contains_key(id) && !state.claimed.contains(id) {
            return Err(refused(id, CheckpointRefusal::Missing));
        }
        let kept = state.outcomes.entry(id.clone()).or_default();
        if kept.len() >= crate::chain::MOST_REPORTS {
            return Err(too_many_reports(id));
        }
        if kept.len() != sequence {
            return Err(super::report_place_taken(id, sequence));
        }
        kept.push(record.to_owned());
        state.reported.retain(|r| r != id);
        state.reported.push(id.clone());
        Ok(())
    }

    fn outcomes(&self, id: &CheckpointId) -> Result<Vec<String>, ComputerUseError> {
        Ok(self.state().outcomes.get(id).cloned().unwrap_or_default())
    }

    fn reported(&self) -> Result<Vec<CheckpointId>, ComputerUseError> {
        Ok(self.state().reported.iter().rev().cloned().collect())
    }
}
