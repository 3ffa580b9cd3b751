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
mod journal;

use std::sync::Mutex;
use std::sync::mpsc;

use crate::ComputerUseError;

pub use checkpoints::PostgresCheckpointStore;
pub use journal::{PostgresJournal, read_postgres_journal};

type Job = Box<dyn FnOnce(&mut postgres::Client) + Send>;

/// How long connecting, and any one statement, may take. A statement that
/// runs longer is cancelled by the server, so no call waits without end.
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long after a statement is handed to the connection's thread it may
/// still start. It then ends within [`TIMEOUT`] (the server cancels it),
/// before its caller stops waiting (`START_BY + TIMEOUT` and a second
/// more): a statement never runs after its caller gave up on it.
const START_BY: std::time::Duration = std::time::Duration::from_secs(4);

/// How long a caller waits for a statement's answer.
const ANSWER_BY: std::time::Duration = std::time::Duration::from_secs(15);

/// One connection, on its own thread, taking one statement at a time. A
/// connection that stops answering (a network that drops packets without
/// closing) is left to its thread and replaced by a fresh one: the
/// statements queued behind it will not start (see [`START_BY`]).
pub(crate) struct Connection {
    jobs: Mutex<mpsc::Sender<Job>>,
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

/// One connection, every statement on it bounded by [`TIMEOUT`].
fn connect(config: &postgres::Config) -> Result<postgres::Client, ComputerUseError> {
    let mut client = config
        .connect(postgres::NoTls)
        .map_err(|err| failed("connect to the database", describe(&err)))?;
    client
        .batch_execute(&format!("SET statement_timeout = {}", TIMEOUT.as_millis()))
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
        // A dropped connection (a restart, a failover, a killed backend)
        // is made again before the next statement.
        if client.as_ref().is_none_or(postgres::Client::is_closed)
            && let Ok(fresh) = connect(config)
        {
            client = Some(fresh);
        }
        match client.as_mut() {
            Some(client) => job(client),
            // Not connected: the job is dropped, and its caller told at
            // once that no answer will come.
            None => drop(job),
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
            jobs: Mutex::new(jobs),
            config,
        })
    }

    /// Leaves the connection that stopped answering to its thread and
    /// hands the next statements to a fresh one, connected before its
    /// first.
    fn replace(&self) {
        let (jobs, queue) = mpsc::channel::<Job>();
        let config = self.config.clone();
        let started = std::thread::Builder::new()
            .name("adk-postgres".into())
            .spawn(move || serve(&config, None, queue));
        if started.is_ok() {
            *self.jobs.lock().unwrap_or_else(|p| p.into_inner()) = jobs;
        }
    }

    /// Runs `work` on the connection and waits for its answer.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        doing: &'static str,
        work: impl FnOnce(&mut postgres::Client) -> Result<T, postgres::Error> + Send + 'static,
    ) -> Result<T, ComputerUseError> {
        let (reply, answer) = mpsc::channel();
        let start_by = std::time::Instant::now() + START_BY;
        let job: Job = Box::new(move |client| {
            // Too late to end before the caller stops waiting: not run.
            if std::time::Instant::now() < start_by {
                let _ = reply.send(work(client));
            }
        });
        self.jobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(job)
            .map_err(|_| failed(doing, "the connection thread has stopped"))?;
        match answer.recv_timeout(ANSWER_BY) {
            Ok(answered) => answered.map_err(|err| failed(doing, describe(&err))),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                self.replace();
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
