//! Evidence: evaluation receipts.

mod receipt;

pub use receipt::{AdkEvaluationReceipt, EvaluationClaims, EvaluationSource, RECEIPT_PROTOCOL};
