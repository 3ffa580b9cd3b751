//! Writing a session's transitions to its audit journal, if it has one.
//!
//! Before the mutation, a failure to record stops the chain: an action whose
//! start cannot be recorded does not run. After the mutation, a failure to
//! record cannot undo anything, so it is logged and counted instead of
//! replacing the chain's result.
//!
//! A journal whose sink waits on I/O (a file, PostgreSQL) is written from a
//! thread of the session's own, in order, never from an executor thread: a
//! write is queued, and a stage that must know it landed awaits its
//! [`Ticket`], bounded by [`WRITE_BOUND`]. A sink in memory is written in
//! place.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::ComputerUseError;
use crate::clock::{Clock, display};
use crate::journal::{Journal, events};

/// How long a stage waits for a queued write before it fails the chain.
pub(crate) const WRITE_BOUND: Duration = Duration::from_secs(30);

type Reply = oneshot::Sender<Result<(), ComputerUseError>>;

/// One piece of work for the writer thread.
enum Job {
    /// Append an entry; answer on `reply`, or count a failure if none.
    Write {
        action_id: String,
        event_type: String,
        at: String,
        payload: Value,
        reply: Option<Reply>,
    },
    /// Answer once everything queued before it was written.
    Barrier(oneshot::Sender<()>),
}

/// The outcome of one write: known already, or on its way from the writer.
#[must_use = "a ticket is the only way to learn whether the entry was written"]
pub(crate) enum Ticket {
    Done(Result<(), ComputerUseError>),
    Queued(oneshot::Receiver<Result<(), ComputerUseError>>),
}

impl Ticket {
    /// The write's outcome, waited for at most [`WRITE_BOUND`].
    pub(crate) async fn wait(self) -> Result<(), ComputerUseError> {
        match self {
            Self::Done(result) => result,
            Self::Queued(answer) => match tokio::time::timeout(WRITE_BOUND, answer).await {
                Ok(Ok(result)) => result,
                Ok(Err(_)) => Err(writer_gone()),
                Err(_) => Err(ComputerUseError::TimedOut {
                    operation: "the audit journal write".into(),
                    waited_ms: bound_ms(),
                }),
            },
        }
    }

    /// The outcome, if it is known without waiting.
    pub(crate) fn failed_now(&self) -> Option<&ComputerUseError> {
        match self {
            Self::Done(Err(err)) => Some(err),
            _ => None,
        }
    }
}

fn bound_ms() -> u64 {
    u64::try_from(WRITE_BOUND.as_millis()).unwrap_or(u64::MAX)
}

fn writer_gone() -> ComputerUseError {
    ComputerUseError::Storage {
        operation: "write the journal".into(),
        path: "journal writer".into(),
        message: "the session's journal writer has stopped".into(),
    }
}

#[derive(Clone)]
pub(crate) struct Recorder {
    journal: Option<Arc<Journal>>,
    /// The writer thread's queue, when the journal waits on I/O.
    writer: Option<mpsc::Sender<Job>>,
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
    ) -> Result<Self, ComputerUseError> {
        let failures = Arc::new(AtomicU64::new(0));
        let writer = match &journal {
            Some(journal) if journal.does_io() => Some(spawn_writer(
                Arc::clone(journal),
                session_id.clone(),
                principal_id.clone(),
                Arc::clone(&failures),
            )?),
            _ => None,
        };
        Ok(Self {
            journal,
            writer,
            session_id,
            principal_id,
            clock,
            failures,
        })
    }

    /// Records an event whose loss stops the chain; the ticket says whether
    /// it was written. Without a journal this is one branch, and the
    /// payload is never built.
    #[inline]
    pub(crate) fn record(
        &self,
        action_id: &str,
        event_type: &str,
        payload: impl FnOnce() -> Value,
    ) -> Ticket {
        self.submit(action_id, event_type, payload, true)
    }

    /// Records an event whose loss must not change the chain's result: a
    /// failure is counted (by the writer, for a queued entry), never hidden.
    #[inline]
    pub(crate) fn note(&self, action_id: &str, event_type: &str, payload: impl FnOnce() -> Value) {
        if let Ticket::Done(Err(err)) = self.submit(action_id, event_type, payload, false) {
            lost(&self.failures, action_id, event_type, &err);
        }
    }

    /// Writes the entry in place, or queues it for the writer; with
    /// `answered`, the ticket of a queued entry waits for the writer's word.
    fn submit(
        &self,
        action_id: &str,
        event_type: &str,
        payload: impl FnOnce() -> Value,
        answered: bool,
    ) -> Ticket {
        let Some(journal) = &self.journal else {
            return Ticket::Done(Ok(()));
        };
        let at = display(self.clock.now());
        let Some(writer) = &self.writer else {
            return Ticket::Done(journal.record(
                &self.session_id,
                &self.principal_id,
                Some(action_id),
                event_type,
                at,
                payload(),
            ));
        };
        let (reply, answer) = if answered {
            let (reply, answer) = oneshot::channel();
            (Some(reply), Some(answer))
        } else {
            (None, None)
        };
        let job = Job::Write {
            action_id: action_id.to_owned(),
            event_type: event_type.to_owned(),
            at,
            payload: payload(),
            reply,
        };
        match (writer.send(job), answer) {
            (Err(_), _) => Ticket::Done(Err(writer_gone())),
            (Ok(()), Some(answer)) => Ticket::Queued(answer),
            (Ok(()), None) => Ticket::Done(Ok(())),
        }
    }

    /// Waits, bounded, until everything queued so far was written (or
    /// failed and was counted). Nothing to wait for without a writer.
    pub(crate) async fn flush(&self) {
        let Some(writer) = &self.writer else {
            return;
        };
        let (done, finished) = oneshot::channel();
        if writer.send(Job::Barrier(done)).is_ok()
            && tokio::time::timeout(WRITE_BOUND, finished).await.is_err()
        {
            tracing::warn!("the audit journal did not catch up within its bound");
        }
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

#[cold]
fn lost(failures: &AtomicU64, action_id: &str, event_type: &str, err: &ComputerUseError) {
    failures.fetch_add(1, Ordering::Relaxed);
    tracing::error!(action_id, event_type, error = %err, "the audit journal could not record an event");
}

/// The session's writer: appends in the order queued, until every sender
/// (the session and its stages) is gone.
fn spawn_writer(
    journal: Arc<Journal>,
    session_id: String,
    principal_id: String,
    failures: Arc<AtomicU64>,
) -> Result<mpsc::Sender<Job>, ComputerUseError> {
    let (jobs, queue) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("adk-journal".into())
        .spawn(move || {
            for job in queue {
                match job {
                    Job::Write {
                        action_id,
                        event_type,
                        at,
                        payload,
                        reply,
                    } => {
                        let written = journal.record(
                            &session_id,
                            &principal_id,
                            Some(&action_id),
                            &event_type,
                            at,
                            payload,
                        );
                        match reply {
                            Some(reply) => {
                                if let Err(Err(err)) = reply.send(written) {
                                    // Nobody waits for it any more: the
                                    // loss is counted, never hidden.
                                    lost(&failures, &action_id, &event_type, &err);
                                }
                            }
                            None => {
                                if let Err(err) = written {
                                    lost(&failures, &action_id, &event_type, &err);
                                }
                            }
                        }
                    }
                    Job::Barrier(done) => {
                        let _ = done.send(());
                    }
                }
            }
        })
        .map_err(|err| ComputerUseError::Storage {
            operation: "start the journal writer".into(),
            path: "journal writer".into(),
            message: err.to_string(),
        })?;
    Ok(jobs)
}
