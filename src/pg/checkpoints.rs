//! Sealed checkpoints and their decisions in one table: single-use across
//! processes and machines. The claim and the decision are each one
//! statement on the same row, so PostgreSQL's row lock orders them: of a
//! claim without a decision and a decision racing it, exactly one changes
//! the row, and the other sees what it did. A claim writes a random id of
//! its own into the row it changes, so that when the answer to that
//! statement is lost (the connection dropped after the row changed), the
//! claim recognises its own row on a fresh connection instead of reading
//! it as another resume's ("already resumed" for an action that never ran).

use super::Connection;
use crate::ComputerUseError;
use crate::chain::approvals::stores::sealed::Sealed;
use crate::chain::{CheckpointId, CheckpointRefusal, CheckpointStore, ClaimBasis, SealingKey};
use std::time::Instant;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS adk_checkpoints (
    id text PRIMARY KEY,
    record text NOT NULL,
    consumed boolean NOT NULL DEFAULT false,
    decision text,
    created_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE adk_checkpoints ADD COLUMN IF NOT EXISTS claimed_undecided boolean NOT NULL DEFAULT false;
ALTER TABLE adk_checkpoints ADD COLUMN IF NOT EXISTS outcomes text[] NOT NULL DEFAULT '{}';
ALTER TABLE adk_checkpoints ADD COLUMN IF NOT EXISTS reported_at timestamptz;
ALTER TABLE adk_checkpoints ADD COLUMN IF NOT EXISTS claimed_by text;
CREATE TABLE IF NOT EXISTS adk_checkpoint_store (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    store_id text NOT NULL
);
INSERT INTO adk_checkpoint_store (store_id)
    VALUES ('postgres-' || md5(random()::text || clock_timestamp()::text || pg_backend_pid()::text))
    ON CONFLICT (one) DO NOTHING";

fn refused(id: &CheckpointId, refusal: CheckpointRefusal) -> ComputerUseError {
    ComputerUseError::checkpoint(id, refusal)
}

/// Checkpoints in PostgreSQL, sealed with `key` as the file store seals
/// them. No bearer token is ever stored: a checkpoint holds the preview and
/// the runtime's retained state, a decision holds an approval's id, digests
/// and grant id (or that the runtime holds it), or a denial's reason.
pub struct PostgresCheckpointStore {
    connection: Connection,
    key: SealingKey,
    store_id: String,
}

impl std::fmt::Debug for PostgresCheckpointStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresCheckpointStore")
            .finish_non_exhaustive()
    }
}

impl PostgresCheckpointStore {
    /// Connects to `url` and makes sure the tables exist. The database's
    /// store identity is made once, by the first store that connects, and
    /// shared by every store on the same database.
    pub fn connect(url: &str, key: SealingKey) -> Result<Self, ComputerUseError> {
        let connection = Connection::open(url, SCHEMA)?;
        let store_id = connection.run("read the store's identity", |client| {
            Ok(client
                .query_one("SELECT store_id FROM adk_checkpoint_store", &[])?
                .get::<_, String>(0))
        })?;
        Ok(Self {
            connection,
            key,
            store_id,
        })
    }

    /// The checkpoint ids `query` (one `id` column) answers, in its order;
    /// a row that is not a checkpoint id is left out.
    fn listed(
        &self,
        doing: &'static str,
        query: &'static str,
    ) -> Result<Vec<CheckpointId>, ComputerUseError> {
        let rows = self
            .connection
            .run(doing, move |client| client.query(query, &[]))?;
        Ok(rows
            .iter()
            .filter_map(|row| row.get::<_, String>(0).parse().ok())
            .collect())
    }

    /// The state of `id`: `None` when absent, else whether it was consumed,
    /// whether without a decision, and whether a decision is recorded.
    fn state(&self, id: &CheckpointId) -> Result<Option<RowState>, ComputerUseError> {
        let key = id.to_string();
        self.connection.run("read a checkpoint", move |client| {
            Ok(client
                .query_opt(
                    "SELECT consumed, claimed_undecided, decision IS NOT NULL FROM adk_checkpoints WHERE id = $1",
                    &[&key],
                )?
                .map(|row| RowState {
                    consumed: row.get(0),
                    claimed_undecided: row.get(1),
                    decided: row.get(2),
                }))
        })
    }

    fn gone(&self, id: &CheckpointId) -> ComputerUseError {
        match self.state(id) {
            Ok(Some(state)) if state.consumed => refused(id, CheckpointRefusal::AlreadyResumed),
            Ok(_) => refused(id, CheckpointRefusal::Missing),
            Err(err) => err,
        }
    }

    /// The claim's one statement, asked again while its answer is lost:
    /// how many rows it changed (one, or none when the row is not
    /// claimable on `basis`), and whether an earlier try's answer was lost.
    fn claim_once(
        &self,
        id: &CheckpointId,
        basis: &ClaimBasis,
        claimer: &str,
        deadline: Instant,
    ) -> Result<(u64, bool), ComputerUseError> {
        let (key, claimer) = (id.to_string(), claimer.to_owned());
        let doing = "consume a checkpoint";
        match basis {
            ClaimBasis::Undecided => self.connection.run_retrying(doing, Some(deadline), move |client| {
                client.execute(
                    "UPDATE adk_checkpoints SET consumed = true, claimed_undecided = true, claimed_by = $2 WHERE id = $1 AND NOT consumed AND decision IS NULL",
                    &[&key, &claimer],
                )
            }),
            ClaimBasis::Decision(record) => {
                let record = record.clone();
                self.connection.run_retrying(doing, Some(deadline), move |client| {
                    client.execute(
                        "UPDATE adk_checkpoints SET consumed = true, claimed_by = $3 WHERE id = $1 AND NOT consumed AND decision = $2",
                        &[&key, &record, &claimer],
                    )
                })
            }
        }
    }

    /// Whether `id` stands consumed by the claim named `claimer`.
    fn claimed_by(
        &self,
        id: &CheckpointId,
        claimer: &str,
        deadline: Instant,
    ) -> Result<bool, ComputerUseError> {
        let (key, claimer) = (id.to_string(), claimer.to_owned());
        self.connection
            .run_retrying(
                "read who consumed a checkpoint",
                Some(deadline),
                move |client| {
                    Ok(client
                        .query_opt(
                            "SELECT 1 FROM adk_checkpoints WHERE id = $1 AND consumed AND claimed_by = $2",
                            &[&key, &claimer],
                        )?
                        .is_some())
                },
            )
            .map(|(claimed, _)| claimed)
    }

    /// Why a claim on `basis` changed nothing.
    fn claim_refused(
        &self,
        id: &CheckpointId,
        basis: &ClaimBasis,
    ) -> Result<ComputerUseError, ComputerUseError> {
        Ok(match (self.state(id)?, basis) {
            (None, _) => refused(id, CheckpointRefusal::Missing),
            (Some(state), _) if state.consumed => refused(id, CheckpointRefusal::AlreadyResumed),
            (Some(_), ClaimBasis::Undecided) => refused(id, CheckpointRefusal::DecisionRecorded),
            (Some(state), ClaimBasis::Decision(_)) if state.decided => {
                refused(id, CheckpointRefusal::AlreadyDecided)
            }
            (Some(_), ClaimBasis::Decision(_)) => refused(id, CheckpointRefusal::NoDecisionYet),
        })
    }
}

/// How long the statements of a claim, or of a decision, may take in all:
/// less than the bound the chain puts on one store call (30 s), so that
/// none runs after the step that asked for it has given up.
const ROW_BUDGET: std::time::Duration = std::time::Duration::from_secs(25);

struct RowState {
    consumed: bool,
    claimed_undecided: bool,
    decided: bool,
}

impl Sealed for PostgresCheckpointStore {}

impl CheckpointStore for PostgresCheckpointStore {
    fn sealing_key(&self) -> &SealingKey {
        &self.key
    }

    fn store_id(&self) -> &str {
        &self.store_id
    }

    fn create(&self, id: &CheckpointId, record: &str) -> Result<(), ComputerUseError> {
        let (key, record) = (id.to_string(), record.to_owned());
        let inserted = self.connection.run("store a checkpoint", move |client| {
            client.execute(
                "INSERT INTO adk_checkpoints (id, record) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING",
                &[&key, &record],
            )
        })?;
        if inserted == 1 {
            Ok(())
        } else {
            Err(refused(id, CheckpointRefusal::Exists))
        }
    }

    fn load(&self, id: &CheckpointId) -> Result<Vec<String>, ComputerUseError> {
        let key = id.to_string();
        let record = self.connection.run("read a checkpoint", move |client| {
            Ok(client
                .query_opt(
                    "SELECT record FROM adk_checkpoints WHERE id = $1 AND NOT consumed",
                    &[&key],
                )?
                .map(|row| row.get::<_, String>(0)))
        })?;
        record.map(|r| vec![r]).ok_or_else(|| self.gone(id))
    }

    /// One statement on the row: of racing claims and decisions, on any
    /// machine, exactly one changes it. The statement also writes who
    /// claimed (a random id of this claim), so an answer lost on the way
    /// back (the connection dropped, or stopped answering, after the row
    /// changed) does not void the approval: the claim asks again
    /// on the connection as it then is, and the row it changed reads
    /// as its own.
    fn claim(&self, id: &CheckpointId, basis: &ClaimBasis) -> Result<(), ComputerUseError> {
        let claimer = crate::auth::secret::random_token()?;
        let deadline = Instant::now() + ROW_BUDGET;
        let (changed, lost) = self.claim_once(id, basis, &claimer, deadline)?;
        // When an earlier try's answer was lost, the row may be this
        // claim's own.
        if changed == 1 || (lost && self.claimed_by(id, &claimer, deadline)?) {
            Ok(())
        } else {
            Err(self.claim_refused(id, basis)?)
        }
    }
    fn ids(&self) -> Result<Vec<CheckpointId>, ComputerUseError> {
        self.listed(
            "list checkpoints",
            "SELECT id FROM adk_checkpoints WHERE NOT consumed ORDER BY id",
        )
    }

    /// One conditional statement; an answer lost on the way back is asked
    /// about again (up to three tries), and a decision found stored is
    /// this one's when it is this very record (signed, with its own nonce):
    /// a person is never told a decision failed that the agent will act on.
    fn record_decision(&self, id: &CheckpointId, record: &str) -> Result<(), ComputerUseError> {
        let (key, text) = (id.to_string(), record.to_owned());
        let (changed, _) = self.connection.run_retrying(
            "record a decision",
            Some(Instant::now() + ROW_BUDGET),
            move |client| {
                client.execute(
                    "UPDATE adk_checkpoints SET decision = $2 WHERE id = $1 AND decision IS NULL AND NOT consumed",
                    &[&key, &text],
                )
            },
        )?;
        if changed == 1 || self.decision(id)?.as_deref() == Some(record) {
            Ok(())
        } else {
            Err(match self.state(id)? {
                None => refused(id, CheckpointRefusal::Missing),
                Some(state) if state.decided => refused(id, CheckpointRefusal::AlreadyDecided),
                Some(state) if state.claimed_undecided => {
                    refused(id, CheckpointRefusal::ResumedWithoutDecision)
                }
                Some(_) => refused(id, CheckpointRefusal::AlreadyResumed),
            })
        }
    }

    fn decision(&self, id: &CheckpointId) -> Result<Option<String>, ComputerUseError> {
        let key = id.to_string();
        self.connection.run("read a decision", move |client| {
            Ok(client
                .query_opt(
                    "SELECT decision FROM adk_checkpoints WHERE id = $1",
                    &[&key],
                )?
                .and_then(|row| row.get::<_, Option<String>>(0)))
        })
    }

    fn claimed_without_decision(&self, id: &CheckpointId) -> Result<bool, ComputerUseError> {
        Ok(self.state(id)?.is_some_and(|state| state.claimed_undecided))
    }

    /// One statement on the row, conditional on the claim it gives back.
    fn give_back(&self, id: &CheckpointId, basis: &ClaimBasis) -> Result<(), ComputerUseError> {
        let key = id.to_string();
        let changed = match basis {
            ClaimBasis::Undecided => self.connection.run("give a checkpoint back", move |client| {
                client.execute(
                    "UPDATE adk_checkpoints SET consumed = false, claimed_undecided = false, claimed_by = NULL WHERE id = $1 AND consumed AND claimed_undecided AND decision IS NULL",
                    &[&key],
                )
            })?,
            ClaimBasis::Decision(record) => {
                let record = record.clone();
                self.connection.run("give a checkpoint back", move |client| {
                    client.execute(
                        "UPDATE adk_checkpoints SET consumed = false, claimed_by = NULL WHERE id = $1 AND consumed AND NOT claimed_undecided AND decision = $2",
                        &[&key, &record],
                    )
                })?
            }
        };
        if changed == 1 {
            Ok(())
        } else {
            Err(refused(id, CheckpointRefusal::NotClaimedSo))
        }
    }

    /// One statement: appended only while the row holds exactly
    /// `sequence` reports, fewer than the most kept.
    fn record_outcome(
        &self,
        id: &CheckpointId,
        sequence: usize,
        record: &str,
    ) -> Result<(), ComputerUseError> {
        if sequence >= crate::chain::MOST_REPORTS {
            return Err(crate::chain::approvals::stores::too_many_reports(id));
        }
        let (key, record) = (id.to_string(), record.to_owned());
        let held = i32::try_from(sequence).unwrap_or(i32::MAX);
        let changed = self.connection.run("record an outcome report", move |client| {
            client.execute(
                "UPDATE adk_checkpoints SET outcomes = array_append(outcomes, $2), reported_at = clock_timestamp() WHERE id = $1 AND cardinality(outcomes) = $3",
                &[&key, &record, &held],
            )
        })?;
        match (changed, self.state(id)?) {
            (1, _) => Ok(()),
            (_, None) => Err(refused(id, CheckpointRefusal::Missing)),
            (_, Some(_)) => Err(crate::chain::approvals::stores::report_place_taken(
                id, sequence,
            )),
        }
    }

    /// An element written outside this store as SQL `NULL` reads as a
    /// report that does not open, never as an error of the connection.
    fn outcomes(&self, id: &CheckpointId) -> Result<Vec<String>, ComputerUseError> {
        let key = id.to_string();
        self.connection.run("read outcome reports", move |client| {
            Ok(client
                .query_opt(
                    "SELECT outcomes FROM adk_checkpoints WHERE id = $1",
                    &[&key],
                )?
                .map(|row| match row.try_get::<_, Vec<Option<String>>>(0) {
                    Ok(held) => held.into_iter().map(Option::unwrap_or_default).collect(),
                    Err(_) => vec![String::new()],
                })
                .unwrap_or_default())
        })
    }

    fn reported(&self) -> Result<Vec<CheckpointId>, ComputerUseError> {
        self.listed(
            "list reported checkpoints",
            "SELECT id FROM adk_checkpoints WHERE cardinality(outcomes) > 0 ORDER BY reported_at DESC, id",
        )
    }
}
