//! Writing a session's transitions to its audit journal, if it has one.
//!
//! Before the mutation, a failure to record stops the chain: an action whose
//! start cannot be recorded does not run. After the mutation, a failure to
//! record cannot undo anything, so it is logged and counted instead of
//! replacing the chain's result.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use crate::ComputerUseError;
use crate::clock::{Clock, display};
use crate::journal::{Journal, events};

#[derive(Clone)]
pub(crate) struct Recorder {
    journal: Option<Arc<Journal>>,
    session_id: String,
    principal_id: String,
    clock: Arc<dyn Clock>,
    failures: Arc<AtomicU64>,
}

impl Recorder {
    pub(crate) fn new(
        journal: Option<Arc<Journal>>,
        session_id: String,
        principal_id: String,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            journal,
            session_id,
            principal_id,
            clock,
            failures: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Records an event; the caller decides what a failure means. Without a
    /// journal this is one branch, and the payload is never built.
    #[inline]
    pub(crate) fn record(
        &self,
        action_id: &str,
        event_type: &str,
        payload: impl FnOnce() -> Value,
    ) -> Result<(), ComputerUseError> {
        match &self.journal {
            None => Ok(()),
            Some(journal) => self.write(journal, action_id, event_type, payload()),
        }
    }

    fn write(
        &self,
        journal: &Journal,
        action_id: &str,
        event_type: &str,
        payload: Value,
    ) -> Result<(), ComputerUseError> {
        let at = display(self.clock.now());
        journal.record(
            &self.session_id,
            &self.principal_id,
            Some(action_id),
            event_type,
            at,
            payload,
        )
    }

    /// Records an event whose loss must not change the chain's result.
    #[inline]
    pub(crate) fn note(&self, action_id: &str, event_type: &str, payload: impl FnOnce() -> Value) {
        if let Err(err) = self.record(action_id, event_type, payload) {
            self.lost(action_id, event_type, &err);
        }
    }

    #[cold]
    fn lost(&self, action_id: &str, event_type: &str, err: &ComputerUseError) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        tracing::error!(action_id, event_type, error = %err, "the audit journal could not record an event");
    }

    /// Records why a transition failed.
    pub(crate) fn refusal(&self, action_id: &str, err: &ComputerUseError) {
        self.note(action_id, events::REFUSED, || {
            json!({
                "errorClass": err.class(),
                "field": err.field(),
                "refusalCode": err.refusal_code(),
            })
        });
    }

    /// Journal writes that failed after the point of no return.
    pub(crate) fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }
}
