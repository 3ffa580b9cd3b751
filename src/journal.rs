//! The audit journal: every transition of a session, hash-chained.
//!
//! Each entry carries the digest of the one before it, so editing, deleting
//! or reordering an entry breaks the chain at that point, and truncating the
//! end is caught by comparing the last digest (the head) with one stored
//! elsewhere. Entries hold ids, digests and outcomes only: never action
//! arguments, never values, never a bearer token.
//!
//! # Event types, in the order a correct chain writes them
//!
//! | type | payload | written |
//! | --- | --- | --- |
//! | `action.previewed` | `argsDigest`, `policyDigest`, `executable`, `blocker` | when a preview is bound |
//! | `action.approval_required` | `actionDigest`, `policyDigest` | when the route waits for a person |
//! | `action.blocked` | `blocker`, `reasons` | when the route blocks |
//! | `action.approved` | `authority` (`policy`, `grant`, `runtime`), `grantId` | when the action may run |
//! | `target.reserved` | `reservationId` (absent when none was needed) | after the reservation is bound |
//! | `lease.acquired` | `leaseId` | after the lease is bound |
//! | `action.started` | `leaseId` | immediately before the single mutation |
//! | `action.committed` | `receiptId`, `leaseId`, `status` | after the receipt is bound |
//! | `action.verified` | `status`, `verified`, `committed`, `receiptId` | after verification |
//! | `target.released` | `reservationId`, `how` (`explicit`, `reaper`), `ok`, `errorClass` | after each release |
//! | `action.refused` | `errorClass`, `field`, `refusalCode` | when a transition fails |
//!
//! A correct chain therefore evaluates clean under
//! [`crate::eval::ComputerUseEvaluator`]: its `action.started` carries the lease,
//! its one `action.committed` follows the start and is followed by
//! `action.verified`.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::ComputerUseError;
use crate::contracts::SessionEvent;
use crate::digest::{canonical_json_of, sha256_prefixed};

/// The event vocabulary: one name for each event, shared by the journal
/// (which writes them), the evaluator (which reads them, on our journal or
/// on a server's `get_session_events`) and the simulator (which publishes
/// the server's). Names a server publishes are upstream's.
pub mod events {
    /// A preview was bound (journal), or the server previewed (server).
    pub const PREVIEWED: &str = "action.previewed";
    /// The route waits for a person's approval.
    pub const APPROVAL_REQUIRED: &str = "action.approval_required";
    /// The route blocked the action.
    pub const BLOCKED: &str = "action.blocked";
    /// The action may run: policy, a grant, or the runtime approved it.
    pub const APPROVED: &str = "action.approved";
    /// The target reservation was bound.
    pub const RESERVED: &str = "target.reserved";
    /// The one-writer lease was bound.
    pub const LEASED: &str = "lease.acquired";
    /// An action spent one action of its session's task lease.
    pub const LEASE_SPENT: &str = "lease.spent";
    /// A session took a control lease for a task (journaled under its lease id).
    pub const TASK_LEASE_ACQUIRED: &str = "lease.task_acquired";
    /// A task lease was released (journaled under its lease id).
    pub const TASK_LEASE_RELEASED: &str = "lease.task_released";
    /// The single mutation is about to run; the payload carries `leaseId`.
    pub const STARTED: &str = "action.started";
    /// The runtime committed the mutation; the payload carries `receiptId`.
    pub const COMMITTED: &str = "action.committed";
    /// The receipt of the mutation was recorded.
    pub const RECEIPT: &str = "action.receipt";
    /// Verification ran (journal), or the server's own postcondition check
    /// ran (server, before it commits); the payload carries its outcome.
    pub const VERIFIED: &str = "action.verified";
    /// The server restored the desktop state it captured before acting.
    pub const RESTORED: &str = "action.restored";
    /// The server rejected the execution (a receipt `rejected`).
    pub const REJECTED: &str = "action.rejected";
    /// The server crossed the effect boundary and cannot say what happened
    /// (a receipt `indeterminate`).
    pub const INDETERMINATE: &str = "action.indeterminate";
    /// The execution was interrupted before its effect (a receipt
    /// `interrupted`).
    pub const INTERRUPTED: &str = "action.interrupted";
    /// A reservation was cancelled by the server (a stop, a takeover).
    pub const TARGET_CANCELLED: &str = "target.cancelled";
    /// Grants lost their authority (the session stopped or was taken over).
    pub const AUTHORITY_REVOKED: &str = "approval.authority_revoked";
    /// A reservation was given back.
    pub const RELEASED: &str = "target.released";
    /// A person denied a suspended action; its checkpoint was retired.
    pub const DENIED: &str = "action.denied";
    /// A transition of the chain failed.
    pub const REFUSED: &str = "action.refused";
    /// A resumed action was refused before any effect, and the checkpoint
    /// its resume consumed was given back to its store.
    pub const CHECKPOINT_RETURNED: &str = "checkpoint.returned";
    /// The agent loop checked a planner's step and will govern it.
    pub const AGENT_PLANNED: &str = "agent.planned";
    /// The agent loop refused a planner's output (the field is named).
    pub const AGENT_PLAN_REFUSED: &str = "agent.plan_refused";
    /// The planner said the request is done.
    pub const AGENT_DONE: &str = "agent.done";
    /// OpenAI safety checks were acknowledged with an approval of the action.
    pub const AGENT_SAFETY_ACKNOWLEDGED: &str = "agent.safety_acknowledged";
    /// The loop stopped on safety checks nobody acknowledged.
    pub const AGENT_SAFETY_STOP: &str = "agent.safety_stop";
    /// A runtime session was created.
    pub const SESSION_CREATED: &str = "session.created";
    /// A runtime session changed state (`from`, `to`).
    pub const SESSION_STATE_CHANGED: &str = "session.state_changed";
    /// A runtime session completed.
    pub const SESSION_COMPLETED: &str = "session.completed";
    /// A follow-up instruction was submitted to a runtime session.
    pub const FOLLOW_UP_SUBMITTED: &str = "session.follow_up_submitted";
}

/// The `previous` of the first entry.
pub const GENESIS: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// One journal entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JournalEntry {
    /// The digest of the entry before this one ([`GENESIS`] for the first).
    pub previous: String,
    /// What happened.
    pub event: SessionEvent,
    /// `sha256:` of the canonical JSON of `{previous, event}`.
    pub digest: String,
}

fn entry_digest(previous: &str, event: &SessionEvent) -> Result<String, ComputerUseError> {
    Ok(sha256_prefixed(canonical_json_of(
        &json!({ "previous": previous, "event": event }),
    )?))
}

/// Where entries go.
pub trait JournalSink: Send + Sync {
    /// Stores one entry durably before returning.
    fn append(&self, entry: &JournalEntry) -> Result<(), ComputerUseError>;

    /// Whether `append` waits on I/O (a file, a database). A session then
    /// appends from a writer thread of its own, never from an executor
    /// thread, and waits for the write asynchronously and bounded. A sink
    /// that only touches memory answers `false` (the default) and is
    /// appended to in place.
    fn does_io(&self) -> bool {
        false
    }

    /// Where a chain this sink already holds ends (its last sequence number
    /// and digest), so a [`Journal`] over it continues that chain instead
    /// of starting a second one. `None` for an empty sink (the default).
    fn chain_end(&self) -> Option<(u64, String)> {
        None
    }
}

/// Entries kept in memory.
#[derive(Debug, Default)]
pub struct MemoryJournal {
    entries: Mutex<Vec<JournalEntry>>,
}

impl MemoryJournal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every entry so far.
    pub fn entries(&self) -> Vec<JournalEntry> {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl JournalSink for MemoryJournal {
    fn append(&self, entry: &JournalEntry) -> Result<(), ComputerUseError> {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(entry.clone());
        Ok(())
    }
}

/// Entries appended to a JSON-lines file, flushed and synced per entry.
///
/// Opening a file that already holds a journal continues its chain: the
/// existing entries are verified first, and a [`Journal`] over the sink
/// appends after the last one. A file whose chain does not verify is
/// refused at open, never appended to.
#[derive(Debug)]
pub struct FileJournal {
    file: Mutex<File>,
    path: String,
    end: Option<(u64, String)>,
}

fn io(path: &str, doing: &str, err: std::io::Error) -> ComputerUseError {
    ComputerUseError::Storage {
        operation: format!("{doing} the journal"),
        path: path.to_owned(),
        message: err.to_string(),
    }
}

impl FileJournal {
    /// Opens `path` for a new chain, creating it if needed. A file that
    /// already holds entries is refused: whoever can write it between two
    /// sessions can replace them with a consistent forgery, and a session
    /// that continued it would then vouch for the forgery with its own
    /// head. Continue such a file with [`FileJournal::continue_from`] and
    /// the head its last session recorded apart.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ComputerUseError> {
        let (journal, existing) = Self::opened(path.as_ref())?;
        if !existing.is_empty() {
            return Err(ComputerUseError::Storage {
                operation: "open the journal for a new chain".into(),
                path: journal.path,
                message: format!(
                    "it holds {} entries already; a journal continues only from the head its last session recorded apart (Journal::head() when it ended): open it with FileJournal::continue_from(path, HEAD), or start a new file",
                    existing.len()
                ),
            });
        }
        Ok(journal)
    }

    /// Opens `path` to continue its chain from `head`, the head its last
    /// session recorded apart from the file (`Journal::head()` when that
    /// session ended): the entries must verify and end exactly there, so a
    /// chain rewritten or cut short since is refused, never continued.
    pub fn continue_from(path: impl AsRef<Path>, head: &str) -> Result<Self, ComputerUseError> {
        let (mut journal, existing) = Self::opened(path.as_ref())?;
        let verified = verify_journal(&existing, Some(head)).map_err(|err| {
            ComputerUseError::Storage {
                operation: "continue the journal".into(),
                path: journal.path.clone(),
                message: format!(
                    "the entries already in the file do not verify up to the head given ({err}); nothing is appended to a chain that does not end where its last session said: move the file aside and start a new one"
                ),
            }
        })?;
        journal.end = existing.last().map(|last| (last.event.sequence, verified));
        Ok(journal)
    }

    /// The file, open for appending, and the entries it holds.
    fn opened(path: &Path) -> Result<(Self, Vec<JournalEntry>), ComputerUseError> {
        let display = path.display().to_string();
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| io(&display, "open", e))?;
        let existing = read_journal(path)?;
        Ok((
            Self {
                file: Mutex::new(file),
                path: display,
                end: None,
            },
            existing,
        ))
    }
}

impl JournalSink for FileJournal {
    fn does_io(&self) -> bool {
        true
    }

    fn chain_end(&self) -> Option<(u64, String)> {
        self.end.clone()
    }

    fn append(&self, entry: &JournalEntry) -> Result<(), ComputerUseError> {
        let mut line = serde_json::to_string(entry)
            .map_err(|e| ComputerUseError::decode("journal entry", e))?;
        line.push('\n');
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        file.write_all(line.as_bytes())
            .map_err(|e| io(&self.path, "write", e))?;
        file.flush().map_err(|e| io(&self.path, "flush", e))?;
        file.sync_data().map_err(|e| io(&self.path, "sync", e))
    }
}

/// Reads every entry of a journal file.
pub fn read_journal(path: impl AsRef<Path>) -> Result<Vec<JournalEntry>, ComputerUseError> {
    let display = path.as_ref().display().to_string();
    let file = File::open(&path).map_err(|e| io(&display, "open", e))?;
    let mut entries = Vec::new();
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| io(&display, "read", e))?;
        if line.trim().is_empty() {
            continue;
        }
        let entry = serde_json::from_str(&line)
            .map_err(|e| ComputerUseError::decode(format!("{display} line {}", index + 1), e))?;
        entries.push(entry);
    }
    Ok(entries)
}

/// Checks the chain: sequence numbers 1, 2, 3, …, each `previous` equal to
/// the digest before it, each digest recomputed. With `expected_head`, the
/// last digest must equal it (this catches truncation). Returns the head.
pub fn verify_journal(
    entries: &[JournalEntry],
    expected_head: Option<&str>,
) -> Result<String, ComputerUseError> {
    let mut previous = GENESIS.to_owned();
    for (index, entry) in entries.iter().enumerate() {
        let position = index as u64 + 1;
        let broken =
            |field: &'static str, expected: String, actual: String| ComputerUseError::Integrity {
                object: "JournalEntry",
                field,
                expected,
                actual: format!("{actual} (entry {position})"),
            };
        if entry.event.sequence != position {
            return Err(broken(
                "sequence",
                position.to_string(),
                entry.event.sequence.to_string(),
            ));
        }
        if entry.previous != previous {
            return Err(broken("previous", previous, entry.previous.clone()));
        }
        let digest = entry_digest(&entry.previous, &entry.event)?;
        if digest != entry.digest {
            return Err(broken("digest", digest, entry.digest.clone()));
        }
        previous = digest;
    }
    if let Some(head) = expected_head
        && head != previous
    {
        return Err(ComputerUseError::Integrity {
            object: "Journal",
            field: "head",
            expected: head.to_owned(),
            actual: previous,
        });
    }
    Ok(previous)
}

/// Checks the chain as [`verify_journal`] does, and that it passes
/// through each of `heads` in turn: each must be the digest of an entry,
/// each later than the one before (the head a session recorded when it
/// ended is an earlier entry's once another session continued the file).
/// Returns, for each head, the position of its entry (from 1). Entries
/// after the last head's are consistent with the chain but anchored by
/// nothing given.
pub fn verify_journal_through(
    entries: &[JournalEntry],
    heads: &[&str],
) -> Result<Vec<usize>, ComputerUseError> {
    verify_journal(entries, None)?;
    let mut positions = Vec::with_capacity(heads.len());
    let mut from = 0;
    for head in heads {
        let found = entries[from..]
            .iter()
            .position(|entry| entry.digest == *head)
            .map(|at| from + at + 1);
        let Some(position) = found else {
            return Err(ComputerUseError::Integrity {
                object: "Journal",
                field: "head",
                expected: (*head).to_owned(),
                actual: if from == 0 {
                    "no entry of the chain has this digest".to_owned()
                } else {
                    format!("no entry after entry {from} has this digest")
                },
            });
        };
        positions.push(position);
        from = position;
    }
    Ok(positions)
}

/// The events of `entries`, for the evaluator.
pub fn journal_events(entries: &[JournalEntry]) -> Vec<SessionEvent> {
    entries.iter().map(|e| e.event.clone()).collect()
}

struct ChainState {
    sequence: u64,
    head: String,
}

/// Appends hash-chained entries to a sink.
pub struct Journal {
    sink: Arc<dyn JournalSink>,
    state: Mutex<ChainState>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("head", &self.head())
            .finish_non_exhaustive()
    }
}

impl Journal {
    /// A chain in `sink`: a new one, or the one the sink already holds
    /// continued ([`JournalSink::chain_end`]; a [`FileJournal`] over an
    /// existing journal file).
    pub fn new(sink: Arc<dyn JournalSink>) -> Self {
        let (sequence, head) = sink.chain_end().unwrap_or((0, GENESIS.to_owned()));
        Self {
            sink,
            state: Mutex::new(ChainState { sequence, head }),
        }
    }

    /// Continues the chain of `existing` in `sink`, from `head`, the head
    /// its last session recorded apart: `existing` must verify and end
    /// exactly there.
    pub fn continuing(
        sink: Arc<dyn JournalSink>,
        existing: &[JournalEntry],
        head: &str,
    ) -> Result<Self, ComputerUseError> {
        let head = verify_journal(existing, Some(head))?;
        Ok(Self {
            sink,
            state: Mutex::new(ChainState {
                sequence: existing.len() as u64,
                head,
            }),
        })
    }

    /// Whether its sink waits on I/O ([`JournalSink::does_io`]).
    pub(crate) fn does_io(&self) -> bool {
        self.sink.does_io()
    }

    /// The digest of the last entry (store it elsewhere to detect truncation).
    pub fn head(&self) -> String {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .head
            .clone()
    }

    /// Appends one event. The sink has stored it when this returns `Ok`.
    pub fn record(
        &self,
        session_id: &str,
        principal_id: &str,
        action_id: Option<&str>,
        event_type: &str,
        at: String,
        payload: Value,
    ) -> Result<(), ComputerUseError> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let sequence = state.sequence + 1;
        let event = SessionEvent {
            schema_version: 1,
            event_id: format!("journal-{sequence}"),
            sequence,
            session_id: session_id.to_owned(),
            action_id: action_id.map(str::to_owned),
            event_type: event_type.to_owned(),
            at,
            principal_id: principal_id.to_owned(),
            payload: Some(payload),
        };
        let digest = entry_digest(&state.head, &event)?;
        let entry = JournalEntry {
            previous: state.head.clone(),
            event,
            digest,
        };
        self.sink.append(&entry)?;
        state.sequence = sequence;
        state.head = entry.digest;
        Ok(())
    }
}
