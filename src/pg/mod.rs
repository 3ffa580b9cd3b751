//! PostgreSQL as the place where approvals wait and the audit record lives
//! (feature `postgres`), for agents on many machines.
//!
//! The store and the journal keep the same traits as their embedded
//! counterparts, whose calls are short and synchronous; so each owns one
//! connection on a thread of its own and hands it each statement, which
//! keeps them usable from inside an async runtime without starting another
//! one there. Every guarantee is a single statement the database enforces:
//! a checkpoint is consumed by one conditional `UPDATE` (of racing resumes,
//! one row changes), a decision is recorded by one conditional `UPDATE`, and
//! a journal's chain cannot fork because each session's sequence numbers and
//! previous digests are unique keys. Queries are checked at run time, so a
//! build needs no database.

mod checkpoints;
#[cfg(feature = "adk")]
mod graph;
mod journal;

use std::sync::Mutex;
use std::sync::mpsc;

use crate::ComputerUseError;

pub use checkpoints::PostgresCheckpointStore;
#[cfg(feature = "adk")]
pub use graph::PostgresGraphCheckpointer;
pub use journal::{PostgresJournal, read_postgres_journal};

/// One statement for the connection's thread, and the last moment it may
/// start (see [`Connection::run_by`]).
struct Job {
    start_by: std::time::Instant,
    work: Box<dyn FnOnce(&mut postgres::Client) + Send>,
}

/// How long connecting may take.
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long any one step of a statement may run: the server cancels it
/// past this. Every statement here changes or reads one row or one
/// session's list.
const STATEMENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// How long a caller waits for a statement's answer (or less, to a
/// deadline of its own: [`Connection::run_by`]).
const ANSWER_BY: std::time::Duration = std::time::Duration::from_secs(12);

/// What a statement's start leaves before its caller stops waiting: a
/// statement is sent as two steps (prepared, then run), each bounded by
/// the server's timeout, and a second more. A statement that cannot start
/// that early is not started, so none runs after its caller gave up on it
/// (unless the network itself holds it back: see docs/approvals.md).
const END_MARGIN: std::time::Duration =
    std::time::Duration::from_secs(2 * STATEMENT_TIMEOUT.as_secs() + 1);

/// How many times a write whose answer is lost is asked in all
/// ([`Connection::run_retrying`]).
const TRIES: usize = 3;

/// Where statements go: the current connection's thread, and which of
/// the connections made so far it is.
struct Queue {
    jobs: mpsc::Sender<Job>,
    generation: u64,
}

/// One connection, on its own thread, taking one statement at a time. A
/// connection that stops answering (a network that drops packets without
/// closing) is left to its thread and replaced by a fresh one; the
/// statements queued behind it are not started once they could no longer
/// end before their callers stop waiting.
pub(crate) struct Connection {
    queue: Mutex<Queue>,
    config: postgres::Config,
}

fn failed(doing: &str, err: impl std::fmt::Display) -> ComputerUseError {
    ComputerUseError::Storage {
        operation: doing.to_owned(),
        path: "postgres".into(),
        message: err.to_string(),
    }
}

/// The database's own message when it gave one ("db error" says nothing).
fn describe(err: &postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => err.to_string(),
    }
}

/// One connection, every statement on it bounded by [`STATEMENT_TIMEOUT`].
fn connect(config: &postgres::Config) -> Result<postgres::Client, ComputerUseError> {
    let mut client = config
        .connect(postgres::NoTls)
        .map_err(|err| failed("connect to the database", describe(&err)))?;
    client
        .batch_execute(&format!(
            "SET statement_timeout = {}",
            STATEMENT_TIMEOUT.as_millis()
        ))
        .map_err(|err| failed("set the statement timeout", describe(&err)))?;
    Ok(client)
}

/// Serves `queue` on `client` (connected again before a statement once it
/// is closed, or first when there is none), skipping each statement whose
/// caller will have stopped waiting before it could end.
fn serve(
    config: &postgres::Config,
    mut client: Option<postgres::Client>,
    queue: mpsc::Receiver<Job>,
) {
    for job in queue {
        // Too late to end before its caller stops waiting: dropped (its
        // caller told at once that no answer will come), before any
        // connection is made for it and again once one is.
        let late = || std::time::Instant::now() >= job.start_by;
        if late() {
            continue;
        }
        // A dropped connection (a restart, a failover, a killed backend)
        // is made again before the next statement.
        if client.as_ref().is_none_or(postgres::Client::is_closed)
            && let Ok(fresh) = connect(config)
        {
            client = Some(fresh);
        }
        match client.as_mut() {
            Some(client) if !late() => (job.work)(client),
            // Not connected, or too late: the job is dropped.
            _ => drop(job),
        }
    }
}

impl Connection {
    /// Connects to `url` (a `postgres://` URL or key=value string) and runs
    /// `schema` once.
    pub(crate) fn open(url: &str, schema: &'static str) -> Result<Self, ComputerUseError> {
        let mut config = url
            .parse::<postgres::Config>()
            .map_err(|err| failed("read the database URL", describe(&err)))?;
        config.connect_timeout(TIMEOUT);
        // A peer that stops acknowledging what is sent, or answering
        // keepalives, is given up on by the kernel within seconds: the
        // thread of a connection left behind ends instead of waiting for
        // TCP's own minutes.
        config
            .tcp_user_timeout(ANSWER_BY)
            .keepalives(true)
            .keepalives_idle(std::time::Duration::from_secs(5))
            .keepalives_interval(std::time::Duration::from_secs(2))
            .keepalives_retries(3);
        // The client blocks on a runtime of its own: it is made and used on
        // its thread only, never on a thread that drives async tasks.
        let (jobs, queue) = mpsc::channel::<Job>();
        let (ready, connected) = mpsc::channel();
        let thread_config = config.clone();
        std::thread::Builder::new()
            .name("adk-postgres".into())
            .spawn(move || {
                // Serialized: two processes creating the tables at once
                // would otherwise collide in the catalog.
                let opened = connect(&thread_config).and_then(|mut client| {
                    let guarded =
                        format!("BEGIN; SELECT pg_advisory_xact_lock(4243271); {schema}; COMMIT;");
                    client
                        .batch_execute(&guarded)
                        .map_err(|err| failed("create the tables", describe(&err)))
                        .map(|()| client)
                });
                match opened {
                    Ok(client) => {
                        let _ = ready.send(Ok(()));
                        serve(&thread_config, Some(client), queue);
                    }
                    Err(err) => {
                        let _ = ready.send(Err(err));
                    }
                }
            })
            .map_err(|err| failed("start the connection thread", err))?;
        connected
            .recv_timeout(TIMEOUT + std::time::Duration::from_secs(5))
            .map_err(|_| failed("connect to the database", "the connection thread stopped"))??;
        Ok(Self {
            queue: Mutex::new(Queue {
                jobs,
                generation: 0,
            }),
            config,
        })
    }

    /// Leaves the connection that stopped answering to its thread and
    /// hands the next statements to a fresh one, connected before its
    /// first; only once for the `generation` that stopped answering, however
    /// many callers saw it stop.
    fn replace(&self, generation: u64) {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        if queue.generation != generation {
            return;
        }
        let (jobs, waiting) = mpsc::channel::<Job>();
        let config = self.config.clone();
        let started = std::thread::Builder::new()
            .name("adk-postgres".into())
            .spawn(move || serve(&config, None, waiting));
        if started.is_ok() {
            *queue = Queue {
                jobs,
                generation: generation.wrapping_add(1),
            };
        }
    }

    /// Runs `work` on the connection and waits for its answer.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        doing: &'static str,
        work: impl FnOnce(&mut postgres::Client) -> Result<T, postgres::Error> + Send + 'static,
    ) -> Result<T, ComputerUseError> {
        self.run_by(doing, None, work)
    }

    /// Runs `work` as [`Self::run_by`] does, asked again while no answer
    /// comes back (up to [`TRIES`] in all, each on the connection as it
    /// then is: a dropped one made again, a silent one replaced): the
    /// first answer, and whether an earlier try's answer was lost, so that
    /// its statement may have run (the caller then recognises its own
    /// write). Every try ends by `deadline`.
    pub(crate) fn run_retrying<T, F>(
        &self,
        doing: &'static str,
        deadline: Option<std::time::Instant>,
        work: F,
    ) -> Result<(T, bool), ComputerUseError>
    where
        T: Send + 'static,
        F: FnOnce(&mut postgres::Client) -> Result<T, postgres::Error> + Clone + Send + 'static,
    {
        let mut lost = None;
        for _ in 0..TRIES {
            match self.run_by(doing, deadline, work.clone()) {
                Ok(answer) => return Ok((answer, lost.is_some())),
                Err(err) => lost = Some(err),
            }
        }
        Err(lost.unwrap_or_else(|| failed(doing, "not tried")))
    }

    /// Runs `work` on the connection and waits for its answer, at most
    /// [`ANSWER_BY`] and never past `deadline`. The statement is started
    /// only while it can still end (run or be cancelled by the server)
    /// before the wait does; one that cannot is never sent.
    pub(crate) fn run_by<T: Send + 'static>(
        &self,
        doing: &'static str,
        deadline: Option<std::time::Instant>,
        work: impl FnOnce(&mut postgres::Client) -> Result<T, postgres::Error> + Send + 'static,
    ) -> Result<T, ComputerUseError> {
        let now = std::time::Instant::now();
        // The caller's own deadline, and the one its thread runs under.
        let answer_by = [deadline, crate::call_deadline::current()]
            .into_iter()
            .flatten()
            .fold(now + ANSWER_BY, std::time::Instant::min);
        let start_by = answer_by.checked_sub(END_MARGIN).filter(|at| *at > now);
        let Some(start_by) = start_by else {
            return Err(failed(
                doing,
                "not sent: too little time was left for the database to answer",
            ));
        };
        let (reply, answer) = mpsc::channel();
        let job = Job {
            start_by,
            work: Box::new(move |client| {
                let _ = reply.send(work(client));
            }),
        };
        let generation = {
            let queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue
                .jobs
                .send(job)
                .map_err(|_| failed(doing, "the connection thread has stopped"))?;
            queue.generation
        };
        let wait = answer_by.saturating_duration_since(std::time::Instant::now());
        match answer.recv_timeout(wait) {
            Ok(answered) => answered.map_err(|err| failed(doing, describe(&err))),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                self.replace(generation);
                Err(failed(
                    doing,
                    "no answer from the database in time; the connection was replaced",
                ))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(failed(
                doing,
                "the statement was not run: no connection, or it came too late to run",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// The deadline of the store call a thread runs (set by the chain's
    /// bounded wait) reaches the statement: one that could not end before
    /// it is never sent, and one that can is.
    #[adk_computer_use_testkit::needs(postgres)]
    #[test]
    fn a_statement_is_not_sent_past_the_deadline_of_its_call() {
        let url = std::env::var("ADK_POSTGRES_URL").expect("needs(postgres)");
        let connection = Connection::open(&url, "SELECT 1").unwrap();
        let ask = || connection.run("ask the time", |client| client.execute("SELECT 1", &[]));
        let soon = std::time::Instant::now() + END_MARGIN - std::time::Duration::from_secs(1);
        let err = crate::call_deadline::within(soon, ask).unwrap_err();
        assert!(err.to_string().contains("not sent"), "{err}");
        let later = std::time::Instant::now() + END_MARGIN + std::time::Duration::from_secs(2);
        assert_eq!(crate::call_deadline::within(later, ask).unwrap(), 1);
    }
}
