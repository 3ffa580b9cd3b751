//! Store I/O off the executor.
//!
//! A checkpoint store reads files or speaks to PostgreSQL, and either can
//! stall (a full disk, a locked row, a statement waiting out its timeout).
//! Async stage code never waits on that itself: each store call runs on
//! Tokio's blocking pool, and the wait for it is bounded.

use std::sync::Arc;
use std::time::Duration;

use super::stores::CheckpointStore;
use crate::ComputerUseError;

/// How long one store call may take before the step that needed it fails.
pub(crate) const STORE_CALL_BOUND: Duration = Duration::from_secs(30);

/// Runs `work` against `store` on the blocking pool, bounded by
/// [`STORE_CALL_BOUND`]. A call that outlives the bound is left to finish
/// on the pool; the step that waited for it fails with
/// [`ComputerUseError::TimedOut`] (for a claim, the checkpoint may then be
/// consumed: the approval is lost, never used twice).
pub(crate) async fn run<T, F>(
    store: &Arc<dyn CheckpointStore>,
    operation: &'static str,
    work: F,
) -> Result<T, ComputerUseError>
where
    T: Send + 'static,
    F: FnOnce(&dyn CheckpointStore) -> Result<T, ComputerUseError> + Send + 'static,
{
    let store = Arc::clone(store);
    // The store is told when this wait ends (less a second for its answer
    // to come back): it sends nothing it could not finish by then.
    let deadline = std::time::Instant::now() + STORE_CALL_BOUND - Duration::from_secs(1);
    let task = tokio::task::spawn_blocking(move || {
        crate::call_deadline::within(deadline, || work(&*store))
    });
    match tokio::time::timeout(STORE_CALL_BOUND, task).await {
        Ok(Ok(result)) => result,
        Ok(Err(join)) => Err(ComputerUseError::Storage {
            operation: operation.to_owned(),
            path: "checkpoint store".to_owned(),
            message: format!("the store call did not finish: {join}"),
        }),
        Err(_) => Err(ComputerUseError::TimedOut {
            operation: format!("the checkpoint store ({operation})"),
            waited_ms: u64::try_from(STORE_CALL_BOUND.as_millis()).unwrap_or(u64::MAX),
        }),
    }
}
