//! adk-graph's checkpoints in a directory, for a graph resumed by another
//! process on the same machine (adk-graph ships memory and SQLite ones;
//! `pg::PostgresGraphCheckpointer` serves many machines).
//!
//! One file per checkpoint, in a directory per thread (the thread id
//! hex-encoded, so no id names a path outside the directory), named by the
//! order it was saved in; each written to a temporary file and renamed
//! into place, so a reader never sees half of one. The graph's JSON state
//! is no authority (see the module `graph`): the sealed approval checkpoint
//! in the session's store of record is.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use adk_graph::{Checkpoint, Checkpointer, GraphError};

/// adk-graph's [`Checkpointer`] over a directory.
#[derive(Debug)]
pub struct FileGraphCheckpointer {
    dir: PathBuf,
    written: AtomicU64,
}

fn failed(doing: &str, err: impl std::fmt::Display) -> GraphError {
    GraphError::CheckpointError(format!("{doing}: {err}"))
}

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

impl FileGraphCheckpointer {
    /// Checkpoints under `dir` (made when missing).
    pub fn new(dir: impl AsRef<Path>) -> Result<Self, GraphError> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| failed("create the checkpoint directory", e))?;
        Ok(Self {
            dir,
            written: AtomicU64::new(0),
        })
    }

    fn thread_dir(&self, thread_id: &str) -> PathBuf {
        self.dir.join(hex(thread_id))
    }

    /// The checkpoints of `thread_dir`, in the order they were saved.
    fn read_dir(dir: &Path) -> Result<Vec<Checkpoint>, GraphError> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(failed("read the checkpoint directory", e)),
        };
        let mut names: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        names.sort();
        names
            .iter()
            .map(|path| {
                let text =
                    std::fs::read_to_string(path).map_err(|e| failed("read a checkpoint", e))?;
                serde_json::from_str(&text).map_err(|e| failed("decode a checkpoint", e))
            })
            .collect()
    }
}

#[adk_core::async_trait]
impl Checkpointer for FileGraphCheckpointer {
    async fn save(&self, checkpoint: &Checkpoint) -> adk_graph::Result<String> {
        let dir = self.thread_dir(&checkpoint.thread_id);
        std::fs::create_dir_all(&dir).map_err(|e| failed("create a thread's directory", e))?;
        let text = serde_json::to_string(checkpoint)
            .map_err(|e| GraphError::SerializationError(e.to_string()))?;
        // Saved order: the time, then a counter of this process's writes.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let count = self.written.fetch_add(1, Ordering::SeqCst);
        let name = format!(
            "{nanos:032}-{count:012}-{}.json",
            hex(&checkpoint.checkpoint_id)
        );
        let temporary = dir.join(format!(".{name}.tmp"));
        std::fs::write(&temporary, text).map_err(|e| failed("write a checkpoint", e))?;
        std::fs::rename(&temporary, dir.join(name))
            .map_err(|e| failed("put a checkpoint in place", e))?;
        Ok(checkpoint.checkpoint_id.clone())
    }

    async fn load(&self, thread_id: &str) -> adk_graph::Result<Option<Checkpoint>> {
        Ok(Self::read_dir(&self.thread_dir(thread_id))?.pop())
    }

    async fn load_by_id(&self, checkpoint_id: &str) -> adk_graph::Result<Option<Checkpoint>> {
        let suffix = format!("-{}.json", hex(checkpoint_id));
        let threads =
            std::fs::read_dir(&self.dir).map_err(|e| failed("read the checkpoint directory", e))?;
        for thread in threads.filter_map(Result::ok) {
            let Ok(files) = std::fs::read_dir(thread.path()) else {
                continue;
            };
            for file in files.filter_map(Result::ok) {
                if file.file_name().to_string_lossy().ends_with(&suffix) {
                    let text = std::fs::read_to_string(file.path())
                        .map_err(|e| failed("read a checkpoint", e))?;
                    return serde_json::from_str(&text)
                        .map(Some)
                        .map_err(|e| failed("decode a checkpoint", e));
                }
            }
        }
        Ok(None)
    }

    async fn list(&self, thread_id: &str) -> adk_graph::Result<Vec<Checkpoint>> {
        Self::read_dir(&self.thread_dir(thread_id))
    }

    async fn delete(&self, thread_id: &str) -> adk_graph::Result<()> {
        match std::fs::remove_dir_all(self.thread_dir(thread_id)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(failed("delete a thread's checkpoints", e)),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn checkpoint(thread: &str, step: usize) -> Checkpoint {
        Checkpoint::new(thread, adk_graph::State::new(), step, vec!["next".into()])
    }

    #[tokio::test]
    async fn checkpoints_come_back_in_the_order_saved_and_no_thread_id_leaves_the_directory() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("graph");
        let store = FileGraphCheckpointer::new(&dir).unwrap();
        let hostile = "../../escaped";
        let first = store.save(&checkpoint(hostile, 1)).await.unwrap();
        let second = store.save(&checkpoint(hostile, 2)).await.unwrap();
        store.save(&checkpoint("other", 9)).await.unwrap();
        // Nothing was written outside the directory.
        let outside: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(outside, ["graph"]);
        assert_eq!(store.load(hostile).await.unwrap().unwrap().step, 2);
        let steps: Vec<usize> = store
            .list(hostile)
            .await
            .unwrap()
            .iter()
            .map(|c| c.step)
            .collect();
        assert_eq!(steps, [1, 2]);
        assert_eq!(store.load_by_id(&first).await.unwrap().unwrap().step, 1);
        // Another process over the same directory reads the same.
        let again = FileGraphCheckpointer::new(&dir).unwrap();
        assert_eq!(again.load_by_id(&second).await.unwrap().unwrap().step, 2);
        again.delete(hostile).await.unwrap();
        assert!(again.load(hostile).await.unwrap().is_none());
        assert_eq!(again.load("other").await.unwrap().unwrap().step, 9);
    }
}
