//! The reaper: the session's task that gives back what dropped guards and
//! shutdown hand it, each release isolated and bounded.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::super::recorder::Recorder;
use super::held::{Held, give_back, release_note, release_operation};
use super::ledger::Ledger;
use super::stats::{ReleaseCounters, bump};
use crate::ComputerUseError;
use crate::runtime::ComputerUseRuntime;

pub(crate) enum ReaperMessage {
    Release(Held, Reap),
    Flush(oneshot::Sender<()>),
}

/// What releasing needs, shared by the session, its guards and its reaper.
/// It holds no channel to the reaper, so the reaper can own one without a
/// cycle and outlive the last stage that queued something.
pub(crate) struct Releaser<R: ComputerUseRuntime> {
    pub(crate) runtime: Arc<R>,
    /// The governed session's runtime session: releases happen in it.
    pub(crate) session_id: String,
    pub(crate) counters: ReleaseCounters,
    pub(crate) ledger: Ledger,
    pub(crate) recorder: Recorder,
    pub(crate) handle: tokio::runtime::Handle,
    pub(crate) timeout: Duration,
}

impl<R: ComputerUseRuntime> Releaser<R> {
    /// Runs one release as its own task, bounded by the release timeout, so
    /// a release that panics or hangs fails alone. True when it succeeded.
    async fn isolated(&self, held: Held, how: &'static str) -> bool {
        let runtime = Arc::clone(&self.runtime);
        let task_held = held.clone();
        let session_id = self.session_id.clone();
        let task = self
            .handle
            .spawn(async move { give_back(&*runtime, &task_held, &session_id).await });
        let abort = task.abort_handle();
        let error = match tokio::time::timeout(self.timeout, task).await {
            Ok(Ok(Ok(()))) => None,
            Ok(Ok(Err(err))) => Some(err),
            Ok(Err(join)) => Some(ComputerUseError::Transport {
                operation: release_operation(&held).into(),
                message: format!("the release task failed: {join}"),
            }),
            Err(_) => {
                abort.abort();
                Some(ComputerUseError::Transport {
                    operation: release_operation(&held).into(),
                    message: format!("no answer within {:?}", self.timeout),
                })
            }
        };
        release_note(&self.recorder, &held, how, error.as_ref());
        error.is_none()
    }

    /// Gives `held` back as the reaper does, counting it under `reaped` or
    /// `reclaimed` as `how` says.
    async fn reap(&self, held: Held, how: Reap) {
        let counters = self.counters.of(held.kind());
        let (ok, failed, note) = match how {
            Reap::Dropped => (&counters.reaped, &counters.reap_failed, "reaper"),
            Reap::Reclaimed => (&counters.reclaimed, &counters.reclaim_failed, "shutdown"),
        };
        if self.isolated(held, note).await {
            bump(ok);
        } else {
            bump(failed);
        }
    }
}

/// Why the reaper releases a resource.
#[derive(Clone, Copy)]
pub(crate) enum Reap {
    /// A guard was dropped unreleased.
    Dropped,
    /// `Session::shutdown` reclaimed it from a stage that was never dropped.
    Reclaimed,
}

pub(crate) fn spawn_reaper<R: ComputerUseRuntime>(
    releaser: Arc<Releaser<R>>,
) -> mpsc::UnboundedSender<ReaperMessage> {
    let (sender, mut receiver) = mpsc::unbounded_channel();
    let handle = releaser.handle.clone();
    handle.spawn(async move {
        while let Some(message) = receiver.recv().await {
            match message {
                ReaperMessage::Release(held, how) => releaser.reap(held, how).await,
                ReaperMessage::Flush(done) => {
                    let _ = done.send(());
                }
            }
        }
    });
    sender
}
