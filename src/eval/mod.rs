//! Evidence: what a run proved, and a record of what it did.
//!
//! [`ComputerUseEvaluator`] replays a trajectory and reports violations;
//! [`Journal`] records every transition of a session in a hash chain;
//! [`AdkEvaluationReceipt`] seals a run's claims.

mod evaluator;
mod journal;
mod receipt;

pub use evaluator::{
    ComputerUseEvaluator, EvaluationReport, Violation, ViolationClass, event_types, sequence_score,
};
pub use journal::{
    FileJournal, GENESIS, Journal, JournalEntry, JournalSink, MemoryJournal, journal_events,
    journal_types, read_journal, verify_journal,
};
pub use receipt::{AdkEvaluationReceipt, EvaluationClaims, EvaluationSource, RECEIPT_PROTOCOL};
