//! Evidence: what a run proved, and a record of what it did.
//!
//! [`ComputerUseEvaluator`] replays a trajectory and reports violations;
//! [`crate::journal::Journal`] (one layer down, so the chain can write it)
//! records every transition of a session in a hash chain;
//! [`AdkEvaluationReceipt`] seals a run's claims.

mod evaluator;
mod receipt;

pub use evaluator::{
    ComputerUseEvaluator, EvaluationReport, Violation, ViolationClass, sequence_score,
};
pub use receipt::{AdkEvaluationReceipt, EvaluationClaims, EvaluationSource, RECEIPT_PROTOCOL};
