//! What became of a decided action: the agent's report, kept beside its
//! checkpoint.
//!
//! A person who approved an action on the page wants to know whether it
//! then happened. The checkpoint is consumed when the agent resumes it, so
//! the page, which reads only the store, would otherwise know nothing past
//! the decision. The session that resumed a checkpoint therefore writes
//! one report beside it when the action ends: verified, committed but
//! unverified, failed, in doubt (the mutating call was made and its
//! answer could not be trusted), or refused before any effect (with
//! whether the approval was given back and stays usable).
//!
//! A report is the agent's word, not the server's: it is sealed with the
//! store's key, so only a holder of that key (the agent, the page) can
//! write one that opens, and the page says whose word it is. An action
//! whose stage was dropped before its end reports nothing, and the page
//! says that no report came.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::checkpoint::CheckpointId;
use super::offload;
use super::stores::CheckpointStore;
use crate::ComputerUseError;
use crate::digest::canonical_json;
use crate::runtime::VerificationOutcome;

pub use super::stores::MOST_REPORTS;

/// Sealed reports start with this, so that no sealed report can ever be
/// opened as a checkpoint, nor a checkpoint as a report.
const DOMAIN: &str = "adk-computer-use/outcome-report/1\n";

/// How a decided action ended, as the agent's session saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum ReportedOutcome {
    /// Performed, and the check proved the effect.
    Verified,
    /// Performed; nothing proved the effect.
    CommittedUnverified {
        /// Why nothing proved it.
        reason: String,
    },
    /// The action failed, or the check saw the effect not happen.
    Failed {
        /// What failed.
        reason: String,
    },
    /// The mutating call was made and its answer could not be trusted: the
    /// action may or may not have happened.
    OutcomeUnknown {
        /// What went wrong.
        reason: String,
    },
    /// Refused before anything was done.
    Refused {
        /// The refusal.
        reason: String,
        /// The approval was given back and stays usable until its expiry.
        approval_kept: bool,
    },
}

impl ReportedOutcome {
    /// The outcome of a chain that reached verification.
    pub(crate) fn of(outcome: &VerificationOutcome) -> Self {
        match outcome {
            VerificationOutcome::Verified => Self::Verified,
            VerificationOutcome::CommittedUnverified { reason } => Self::CommittedUnverified {
                reason: reason.clone(),
            },
            VerificationOutcome::Failed { reason } => Self::Failed {
                reason: reason.clone(),
            },
        }
    }

    /// The outcome of a chain that ended with `err`; `kept` says whether
    /// the approval was given back.
    pub(crate) fn of_error(err: &ComputerUseError, kept: bool) -> Self {
        let reason = err.to_string();
        match err {
            ComputerUseError::OutcomeUnknown { .. } => Self::OutcomeUnknown { reason },
            ComputerUseError::WithCleanup { primary, .. } => Self::of_error(primary, kept),
            _ => Self::Refused {
                reason,
                approval_kept: kept,
            },
        }
    }

    /// The outcome with every reason replaced by a word that it is
    /// withheld: for an action not labelled public only, whose messages
    /// could quote what it handled (a character with no key, say).
    pub(crate) fn without_words(self) -> Self {
        let withheld = || "the reason is withheld: the action is not labelled public".to_owned();
        match self {
            Self::Verified => Self::Verified,
            Self::CommittedUnverified { .. } => Self::CommittedUnverified { reason: withheld() },
            Self::Failed { .. } => Self::Failed { reason: withheld() },
            Self::OutcomeUnknown { .. } => Self::OutcomeUnknown { reason: withheld() },
            Self::Refused { approval_kept, .. } => Self::Refused {
                reason: withheld(),
                approval_kept,
            },
        }
    }

    /// A short name: `verified`, `committed_unverified`, `failed`,
    /// `outcome_unknown` or `refused`.
    pub fn status(&self) -> &'static str {
        match self {
            Self::Verified => "verified",
            Self::CommittedUnverified { .. } => "committed_unverified",
            Self::Failed { .. } => "failed",
            Self::OutcomeUnknown { .. } => "outcome_unknown",
            Self::Refused { .. } => "refused",
        }
    }

    /// Why, where the outcome has a reason.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Self::Verified => None,
            Self::CommittedUnverified { reason }
            | Self::Failed { reason }
            | Self::OutcomeUnknown { reason }
            | Self::Refused { reason, .. } => Some(reason),
        }
    }
}

/// One report: which action, how it ended, and when the agent said so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActionReport {
    /// The store it was written to (sealed in, so a report copied from
    /// another store under the same key does not open here).
    pub store_id: String,
    /// The checkpoint the action was resumed from.
    pub checkpoint_id: String,
    /// Its place among the checkpoint's reports, from 0 (sealed in, so
    /// reports cannot be reordered, and one dropped from the middle shows).
    pub sequence: u32,
    /// The action's id, as the checkpoint (and the page's card) named it.
    pub action_id: String,
    /// The tool.
    pub tool: String,
    /// How it ended.
    pub outcome: ReportedOutcome,
    /// When the session reported it (RFC 3339, the session's clock).
    pub reported_at: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SealedReport {
    report: Value,
    seal: String,
}

fn seal(store: &dyn CheckpointStore, report: &ActionReport) -> Result<String, ComputerUseError> {
    let body = serde_json::to_value(report)
        .map_err(|err| ComputerUseError::decode("outcome report", err))?;
    let seal = store
        .sealing_key()
        .seal(&format!("{DOMAIN}{}", canonical_json(&body)));
    serde_json::to_string(&SealedReport { report: body, seal })
        .map_err(|err| ComputerUseError::decode("outcome report", err))
}

/// Opens the `sequence`th stored report of `id`: its seal under the
/// store's key, and the store, checkpoint and place it names.
fn open(
    store: &dyn CheckpointStore,
    id: &CheckpointId,
    sequence: usize,
    record: &str,
) -> Result<ActionReport, ComputerUseError> {
    let broken = |detail: String| ComputerUseError::InvalidRequest {
        field: "outcomeReport".into(),
        message: format!("the report beside checkpoint {id} cannot be trusted: {detail}"),
    };
    let sealed: SealedReport = serde_json::from_str(record)
        .map_err(|err| broken(format!("expected a sealed report, got {err}")))?;
    if !store.sealing_key().verify(
        &format!("{DOMAIN}{}", canonical_json(&sealed.report)),
        &sealed.seal,
    ) {
        return Err(broken(
            "its seal does not verify under this store's key".into(),
        ));
    }
    let report: ActionReport = serde_json::from_value(sealed.report)
        .map_err(|err| broken(format!("expected a report, got {err}")))?;
    if report.checkpoint_id != id.as_str() {
        return Err(broken("it names another checkpoint".into()));
    }
    if report.store_id != store.store_id() {
        return Err(broken("it was written to another store".into()));
    }
    if usize::try_from(report.sequence).ok() != Some(sequence) {
        return Err(broken(format!(
            "expected report {sequence} of the checkpoint, found report {}",
            report.sequence
        )));
    }
    Ok(report)
}

/// Every report the agent wrote beside checkpoint `id`, oldest first, each
/// opened and checked. A report that does not open under the store's key
/// fails the whole answer: one forged line must not pass for the agent's.
pub fn reports_of(
    store: &dyn CheckpointStore,
    id: &CheckpointId,
) -> Result<Vec<ActionReport>, ComputerUseError> {
    store
        .outcomes(id)?
        .iter()
        .enumerate()
        .map(|(sequence, record)| open(store, id, sequence, record))
        .collect()
}

/// One checkpoint's reports, or why they cannot be trusted.
pub type Reported = (CheckpointId, Result<Vec<ActionReport>, ComputerUseError>);

/// The checkpoints with reports, the latest reported first (at most
/// `most`), each with its reports or why they cannot be trusted.
pub fn reported(
    store: &dyn CheckpointStore,
    most: usize,
) -> Result<Vec<Reported>, ComputerUseError> {
    Ok(store
        .reported()?
        .into_iter()
        .take(most)
        .map(|id| {
            let reports = reports_of(store, &id);
            (id, reports)
        })
        .collect())
}

/// A resumed action that owes its checkpoint a report.
pub(crate) struct Owed {
    store: Arc<dyn CheckpointStore>,
    id: CheckpointId,
    /// The resumed action's whole envelope, as a digest: another action
    /// that carries the same id (even with the same arguments) does not
    /// report for it.
    envelope: String,
    tool: String,
    /// The action is not labelled public only: its report says how it
    /// ended, never a message that could quote what it handled.
    secret: bool,
}

/// What a report needs to know of the action it is for.
pub(crate) struct Resumed<'a> {
    /// The action's id.
    pub(crate) action_id: &'a str,
    /// Its whole envelope, as a digest.
    pub(crate) envelope: Option<String>,
    /// Its tool.
    pub(crate) tool: &'a str,
    /// Whether it is labelled anything but public (or nothing).
    pub(crate) secret: bool,
}

impl<'a> Resumed<'a> {
    /// The action `envelope` describes.
    pub(crate) fn of(envelope: &'a crate::contracts::ActionEnvelope) -> Self {
        use crate::contracts::DataLabel;
        Self {
            action_id: &envelope.action_id,
            envelope: super::give_back::envelope_digest(envelope),
            tool: &envelope.tool,
            // Reasons are quoted only for an action labelled public, and
            // public only: a message may quote what an action typed.
            secret: envelope.data_labels.is_empty()
                || envelope.data_labels.iter().any(|l| *l != DataLabel::Public),
        }
    }
}

/// How many times a report is tried when another writer took its place
/// among the checkpoint's reports first.
const TRIES: usize = 3;

/// The reports a session's resumed actions owe, by action id.
#[derive(Default)]
pub(crate) struct Reports {
    owed: Mutex<HashMap<String, Owed>>,
    /// Action ids two resumed actions shared: their reports could be
    /// confused, so neither is written.
    shared: Mutex<HashSet<String>>,
}

impl Reports {
    /// The action `resumed`, resumed from `id` in `store`, will report
    /// there.
    pub(crate) fn owe(
        &self,
        resumed: &Resumed<'_>,
        store: Arc<dyn CheckpointStore>,
        id: CheckpointId,
    ) {
        let action_id = resumed.action_id;
        let mut owed = self.owed.lock().unwrap_or_else(|p| p.into_inner());
        let mut shared = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        if shared.contains(action_id) {
            return;
        }
        if owed.remove(action_id).is_some() {
            shared.insert(action_id.to_owned());
            return;
        }
        let Some(envelope) = resumed.envelope.clone() else {
            return;
        };
        owed.insert(
            action_id.to_owned(),
            Owed {
                store,
                id,
                envelope,
                tool: resumed.tool.to_owned(),
                secret: resumed.secret,
            },
        );
    }

    /// The report the action `envelope` describes owes, taken, if it was
    /// resumed and owes one. Looked up by id first: the envelope's digest
    /// is made only for an action that owes a report.
    pub(crate) fn take(&self, envelope: &crate::contracts::ActionEnvelope) -> Option<Owed> {
        let mut owed = self.owed.lock().unwrap_or_else(|p| p.into_inner());
        let held = owed.get(&envelope.action_id)?;
        let digest = super::give_back::envelope_digest(envelope)?;
        if digest != held.envelope {
            return None;
        }
        owed.remove(&envelope.action_id)
    }

    /// Writes the report `owed` (taken for the action `envelope`
    /// describes): `outcome`, at `at`. A report that cannot be written is
    /// logged, never raised: the action's own result is what the caller
    /// gets.
    pub(crate) async fn write(
        owed: Owed,
        envelope: &crate::contracts::ActionEnvelope,
        outcome: ReportedOutcome,
        at: String,
    ) {
        let Owed {
            store,
            id,
            tool,
            secret,
            ..
        } = owed;
        let outcome = if secret {
            outcome.without_words()
        } else {
            outcome
        };
        let mut report = ActionReport {
            store_id: store.store_id().to_owned(),
            checkpoint_id: id.to_string(),
            sequence: 0,
            action_id: envelope.action_id.clone(),
            tool,
            outcome,
            reported_at: at,
        };
        let action_id = envelope.action_id.clone();
        let written = offload(&store, "report an action's outcome", move |store| {
            // Sealed with its place among the checkpoint's reports, and
            // written only there: a writer that took the place first makes
            // this one try the next.
            let mut last = None;
            for _ in 0..TRIES {
                let sequence = store.outcomes(&id)?.len();
                report.sequence = u32::try_from(sequence).unwrap_or(u32::MAX);
                let record = seal(store, &report)?;
                match store.record_outcome(&id, sequence, &record) {
                    Ok(()) => return Ok(()),
                    Err(err) => last = Some(err),
                }
            }
            Err(last.unwrap_or_else(|| super::stores::too_many_reports(&id)))
        })
        .await;
        if let Err(err) = written {
            tracing::warn!(action = %action_id, error = %err, "the outcome of a resumed action could not be reported beside its checkpoint");
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::chain::{MemoryCheckpointStore, SealingKey};

    fn store(key: &[u8]) -> MemoryCheckpointStore {
        MemoryCheckpointStore::new(SealingKey::new(key.to_vec()).unwrap())
    }

    fn report(id: &CheckpointId) -> ActionReport {
        ActionReport {
            store_id: String::new(),
            checkpoint_id: id.to_string(),
            sequence: 0,
            action_id: "act-1".into(),
            tool: "left_click".into(),
            outcome: ReportedOutcome::Verified,
            reported_at: "2026-12-02T12:00:00Z".into(),
        }
    }

    #[test]
    fn a_report_opens_only_under_the_key_that_sealed_it_and_for_its_own_checkpoint() {
        let ours = store(&[7; 32]);
        let theirs = store(&[8; 32]);
        let id: CheckpointId = "a".repeat(32).parse().unwrap();
        let other: CheckpointId = "b".repeat(32).parse().unwrap();
        let mine = ActionReport {
            store_id: ours.store_id().to_owned(),
            ..report(&id)
        };
        let record = seal(&ours, &mine).unwrap();
        assert_eq!(open(&ours, &id, 0, &record).unwrap(), mine);
        assert!(open(&theirs, &id, 0, &record).is_err(), "another key");
        assert!(
            open(&ours, &other, 0, &record).is_err(),
            "another checkpoint"
        );
        assert!(open(&ours, &id, 1, &record).is_err(), "another place");
        let altered = record.replace("verified", "failed");
        assert!(open(&ours, &id, 0, &altered).is_err(), "an altered outcome");
        // Another store under the same key.
        let same_key = store(&[7; 32]);
        let copied = seal(
            &same_key,
            &ActionReport {
                store_id: same_key.store_id().to_owned(),
                ..report(&id)
            },
        )
        .unwrap();
        assert!(open(&ours, &id, 0, &copied).is_err(), "another store");
    }
}
