//! adk-graph's checkpoints in PostgreSQL (features `postgres` and `adk`):
//! the graph's own state (its channels and frontier) beside this crate's
//! sealed approval checkpoints, so an interrupted graph resumes on another
//! machine. adk-graph ships memory and SQLite checkpointers only.
//!
//! What this table holds is the graph's JSON state, which the graph's
//! nodes never trust to run anything: the stage a resume continues from
//! comes from the sealed checkpoint in [`super::PostgresCheckpointStore`],
//! consumed once by one conditional `UPDATE`, so two processes resuming
//! the same interrupt run the action once, and a denial recorded first
//! wins (see `graph`).

use std::sync::Arc;

use adk_graph::{Checkpoint, Checkpointer, GraphError};

use super::Connection;
use crate::ComputerUseError;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS adk_graph_checkpoints (
    checkpoint_id text PRIMARY KEY,
    thread_id text NOT NULL,
    position bigserial NOT NULL,
    body text NOT NULL
);
CREATE INDEX IF NOT EXISTS adk_graph_checkpoints_thread
    ON adk_graph_checkpoints (thread_id, position)";

/// adk-graph's [`Checkpointer`] over PostgreSQL.
pub struct PostgresGraphCheckpointer {
    connection: Arc<Connection>,
}

impl std::fmt::Debug for PostgresGraphCheckpointer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresGraphCheckpointer")
            .finish_non_exhaustive()
    }
}

fn graph_error(err: ComputerUseError) -> GraphError {
    GraphError::CheckpointError(err.to_string())
}

impl PostgresGraphCheckpointer {
    /// Connects to `url` and makes sure the table exists.
    pub fn connect(url: &str) -> Result<Self, ComputerUseError> {
        Ok(Self {
            connection: Arc::new(Connection::open(url, SCHEMA)?),
        })
    }

    /// Runs `work` on the connection from Tokio's blocking pool.
    async fn run<T: Send + 'static>(
        &self,
        doing: &'static str,
        work: impl FnOnce(&mut postgres::Client) -> Result<T, postgres::Error> + Send + 'static,
    ) -> Result<T, GraphError> {
        let connection = Arc::clone(&self.connection);
        tokio::task::spawn_blocking(move || connection.run(doing, work))
            .await
            .map_err(|err| GraphError::CheckpointError(format!("{doing}: {err}")))?
            .map_err(graph_error)
    }

    fn decode(doing: &str, bodies: Vec<String>) -> Result<Vec<Checkpoint>, GraphError> {
        bodies
            .iter()
            .map(|body| {
                serde_json::from_str(body).map_err(|err| {
                    GraphError::CheckpointError(format!(
                        "{doing}: a stored checkpoint cannot be read: {err}"
                    ))
                })
            })
            .collect()
    }
}

#[adk_core::async_trait]
impl Checkpointer for PostgresGraphCheckpointer {
    async fn save(&self, checkpoint: &Checkpoint) -> adk_graph::Result<String> {
        let body = serde_json::to_string(checkpoint)
            .map_err(|err| GraphError::SerializationError(err.to_string()))?;
        let (id, thread) = (
            checkpoint.checkpoint_id.clone(),
            checkpoint.thread_id.clone(),
        );
        let saved = id.clone();
        // Idempotent: the same checkpoint saved again is the same row.
        self.run("save a graph checkpoint", move |client| {
            client.execute(
                "INSERT INTO adk_graph_checkpoints (checkpoint_id, thread_id, body)
                 VALUES ($1, $2, $3)
                 ON CONFLICT (checkpoint_id) DO UPDATE SET body = EXCLUDED.body
                 WHERE adk_graph_checkpoints.thread_id = EXCLUDED.thread_id",
                &[&id, &thread, &body],
            )
        })
        .await?;
        Ok(saved)
    }

    async fn load(&self, thread_id: &str) -> adk_graph::Result<Option<Checkpoint>> {
        let thread = thread_id.to_owned();
        let bodies = self
            .run("load a thread's graph checkpoint", move |client| {
                client
                    .query(
                        "SELECT body FROM adk_graph_checkpoints WHERE thread_id = $1
                         ORDER BY position DESC LIMIT 1",
                        &[&thread],
                    )
                    .map(|rows| rows.iter().map(|r| r.get(0)).collect())
            })
            .await?;
        Ok(Self::decode("load", bodies)?.into_iter().next())
    }

    async fn load_by_id(&self, checkpoint_id: &str) -> adk_graph::Result<Option<Checkpoint>> {
        let id = checkpoint_id.to_owned();
        let bodies = self
            .run("load a graph checkpoint", move |client| {
                client
                    .query(
                        "SELECT body FROM adk_graph_checkpoints WHERE checkpoint_id = $1",
                        &[&id],
                    )
                    .map(|rows| rows.iter().map(|r| r.get(0)).collect())
            })
            .await?;
        Ok(Self::decode("load_by_id", bodies)?.into_iter().next())
    }

    async fn list(&self, thread_id: &str) -> adk_graph::Result<Vec<Checkpoint>> {
        let thread = thread_id.to_owned();
        let bodies = self
            .run("list a thread's graph checkpoints", move |client| {
                client
                    .query(
                        "SELECT body FROM adk_graph_checkpoints WHERE thread_id = $1
                         ORDER BY position",
                        &[&thread],
                    )
                    .map(|rows| rows.iter().map(|r| r.get(0)).collect())
            })
            .await?;
        Self::decode("list", bodies)
    }

    async fn delete(&self, thread_id: &str) -> adk_graph::Result<()> {
        let thread = thread_id.to_owned();
        self.run("delete a thread's graph checkpoints", move |client| {
            client.execute(
                "DELETE FROM adk_graph_checkpoints WHERE thread_id = $1",
                &[&thread],
            )
        })
        .await?;
        Ok(())
    }
}
