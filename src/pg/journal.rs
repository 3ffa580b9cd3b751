//! The hash-chained audit journal in a table whose keys forbid a fork:
//! within a session, each sequence number and each previous digest appears
//! once, so two writers cannot both extend the same entry.

use super::Connection;
use crate::ComputerUseError;
use crate::journal::{JournalEntry, JournalSink};

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS adk_journal (
    session_id text NOT NULL,
    sequence bigint NOT NULL,
    previous text NOT NULL,
    digest text NOT NULL,
    entry text NOT NULL,
    PRIMARY KEY (session_id, sequence),
    UNIQUE (session_id, previous)
)";

/// A journal sink that appends to PostgreSQL.
pub struct PostgresJournal {
    connection: Connection,
    /// The one session this sink records (its chain's keys are per session).
    session: std::sync::OnceLock<String>,
}

impl std::fmt::Debug for PostgresJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresJournal").finish_non_exhaustive()
    }
}

impl PostgresJournal {
    /// Connects to `url` and makes sure the table exists.
    pub fn connect(url: &str) -> Result<Self, ComputerUseError> {
        Ok(Self {
            connection: Connection::open(url, SCHEMA)?,
            session: std::sync::OnceLock::new(),
        })
    }
}

impl JournalSink for PostgresJournal {
    fn does_io(&self) -> bool {
        true
    }

    /// Appends `entry`; an entry whose sequence or previous digest another
    /// entry of its session already holds (a fork) is refused.
    fn append(&self, entry: &JournalEntry) -> Result<(), ComputerUseError> {
        let text = serde_json::to_string(entry)
            .map_err(|err| ComputerUseError::decode("journal entry", err))?;
        let session = entry.event.session_id.clone();
        let own = self.session.get_or_init(|| session.clone());
        if *own != session {
            return Err(ComputerUseError::Integrity {
                object: "JournalEntry",
                field: "sessionId",
                expected: format!("entries of session {own:?} only (one sink per session)"),
                actual: session,
            });
        }
        let sequence =
            i64::try_from(entry.event.sequence).map_err(|_| ComputerUseError::InvalidField {
                object: "JournalEntry",
                field: "sequence",
                expected: "a sequence PostgreSQL can store".into(),
                actual: entry.event.sequence.to_string(),
            })?;
        // An answer lost on the way back is asked about again
        // (`run_retrying`): an entry found at its place, the same entry to
        // the byte, is this one, written by an earlier try.
        let (own, previous, digest, written) = (
            session.clone(),
            entry.previous.clone(),
            entry.digest.clone(),
            text.clone(),
        );
        let (inserted, _) =
            self.connection
                .run_retrying("append to the journal", None, move |client| {
                    client.execute(
                        "INSERT INTO adk_journal (session_id, sequence, previous, digest, entry)
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                        &[&own, &sequence, &previous, &digest, &written],
                    )
                })?;
        if inserted == 1 || self.holds(&session, sequence, &text)? {
            Ok(())
        } else {
            Err(ComputerUseError::Integrity {
                object: "JournalEntry",
                field: "previous",
                expected: "an entry that extends its session's chain".into(),
                actual: format!(
                    "sequence {} or previous {} is already taken: the chain would fork",
                    entry.event.sequence, entry.previous
                ),
            })
        }
    }
}

impl PostgresJournal {
    /// Whether the entry at `sequence` of `session` is `text`, to the byte
    /// (its digest alone would pass an entry forged under another's digest).
    fn holds(&self, session: &str, sequence: i64, text: &str) -> Result<bool, ComputerUseError> {
        let (session, text) = (session.to_owned(), text.to_owned());
        self.connection.run("read the journal's entry", move |client| {
            Ok(client
                .query_opt(
                    "SELECT 1 FROM adk_journal WHERE session_id = $1 AND sequence = $2 AND entry = $3",
                    &[&session, &sequence, &text],
                )?
                .is_some())
        })
    }
}

/// Every entry of `session_id`'s journal in `url`, in sequence order, for
/// [`crate::journal::verify_journal`].
pub fn read_postgres_journal(
    url: &str,
    session_id: &str,
) -> Result<Vec<JournalEntry>, ComputerUseError> {
    // Read only: an auditor's role need not be able to create the table.
    let connection = Connection::open(url, "SELECT 1")?;
    let session = session_id.to_owned();
    let rows = connection.run("read the journal", move |client| {
        client.query(
            "SELECT entry FROM adk_journal WHERE session_id = $1 ORDER BY sequence",
            &[&session],
        )
    })?;
    rows.iter()
        .map(|row| {
            serde_json::from_str(&row.get::<_, String>(0))
                .map_err(|err| ComputerUseError::decode("journal entry", err))
        })
        .collect()
}
