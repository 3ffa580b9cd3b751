//! Sealed checkpoints and their decisions in one table: single-use across
//! processes and machines, the consume one atomic statement.

use super::Connection;
use crate::ComputerUseError;
use crate::protocol::{CheckpointId, CheckpointStore, SealingKey};

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS adk_checkpoints (
    id text PRIMARY KEY,
    record text NOT NULL,
    consumed boolean NOT NULL DEFAULT false,
    decision text,
    created_at timestamptz NOT NULL DEFAULT now()
)";

fn refused(id: &CheckpointId, reason: &str) -> ComputerUseError {
    ComputerUseError::Checkpoint {
        id: id.to_string(),
        reason: reason.to_owned(),
    }
}

/// Checkpoints in PostgreSQL, sealed with `key` as the file store seals
/// them. No bearer token is ever stored: a checkpoint holds the preview and
/// the runtime's retained state, a decision holds an approval's id, digests
/// and grant id (or that the runtime holds it), or a denial's reason.
pub struct PostgresCheckpointStore {
    connection: Connection,
    key: SealingKey,
}

impl std::fmt::Debug for PostgresCheckpointStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresCheckpointStore")
            .finish_non_exhaustive()
    }
}

impl PostgresCheckpointStore {
    /// Connects to `url` and makes sure the table exists.
    pub fn connect(url: &str, key: SealingKey) -> Result<Self, ComputerUseError> {
        Ok(Self {
            connection: Connection::open(url, SCHEMA)?,
            key,
        })
    }

    /// The state of `id`: `None` when absent, else whether it was consumed.
    fn state(&self, id: &CheckpointId) -> Result<Option<bool>, ComputerUseError> {
        let key = id.to_string();
        self.connection.run("read a checkpoint", move |client| {
            Ok(client
                .query_opt(
                    "SELECT consumed FROM adk_checkpoints WHERE id = $1",
                    &[&key],
                )?
                .map(|row| row.get::<_, bool>(0)))
        })
    }

    fn gone(&self, id: &CheckpointId) -> ComputerUseError {
        match self.state(id) {
            Ok(Some(true)) => refused(
                id,
                "this checkpoint was already resumed; a checkpoint approves one execution",
            ),
            Ok(_) => refused(id, "no such checkpoint"),
            Err(err) => err,
        }
    }
}

impl CheckpointStore for PostgresCheckpointStore {
    fn sealing_key(&self) -> &SealingKey {
        &self.key
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
            Err(refused(
                id,
                "a checkpoint with this id already exists and is never overwritten",
            ))
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

    /// One statement: of racing consumers, on any machine, exactly one
    /// changes the row.
    fn consume(&self, id: &CheckpointId) -> Result<(), ComputerUseError> {
        let key = id.to_string();
        let changed = self.connection.run("consume a checkpoint", move |client| {
            client.execute(
                "UPDATE adk_checkpoints SET consumed = true WHERE id = $1 AND NOT consumed",
                &[&key],
            )
        })?;
        if changed == 1 {
            Ok(())
        } else {
            Err(self.gone(id))
        }
    }

    fn ids(&self) -> Result<Vec<CheckpointId>, ComputerUseError> {
        let rows = self.connection.run("list checkpoints", |client| {
            client.query(
                "SELECT id FROM adk_checkpoints WHERE NOT consumed ORDER BY id",
                &[],
            )
        })?;
        Ok(rows
            .iter()
            .filter_map(|row| row.get::<_, String>(0).parse().ok())
            .collect())
    }

    fn record_decision(&self, id: &CheckpointId, record: &str) -> Result<(), ComputerUseError> {
        let (key, record) = (id.to_string(), record.to_owned());
        let changed = self.connection.run("record a decision", move |client| {
            client.execute(
                "UPDATE adk_checkpoints SET decision = $2 WHERE id = $1 AND decision IS NULL AND NOT consumed",
                &[&key, &record],
            )
        })?;
        if changed == 1 {
            Ok(())
        } else {
            match self.state(id)? {
                None => Err(refused(id, "no such checkpoint")),
                Some(_) => Err(refused(
                    id,
                    "a decision was already recorded for this checkpoint, or it was already resumed; a decision is made once",
                )),
            }
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
}
