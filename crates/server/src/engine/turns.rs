//! `turns`: each caller's share of the desktop's threads.
//!
//! Desktop work runs with the server's state free (see `staged`), on
//! Tokio's blocking pool when the desktop blocks on I/O. That pool is
//! shared by every session, and by the state's own short steps: one
//! caller that sends hundreds of previews or waits of a slow application
//! at once would hold every thread of it for up to a call's deadline each,
//! and every other session's call would queue behind them. So each caller
//! (one agent by its credential, the approver, the host, or the one client
//! on stdio) has at most [`TURNS_PER_CALLER`] pieces of desktop work under
//! way at a time; more of its calls wait for one of its own to end, and
//! never for another caller's. A wait holds a turn only while it looks,
//! not while it sleeps between looks.
//!
//! [`Server::on_desk`] takes a [`Turn`] by reference: no desktop work is
//! written without one.
//!
//! [`Server::on_desk`]: super::server::Server

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::Refusal;
use super::access::Role;

/// How many pieces of desktop work one caller has under way at once: more
/// than a planner needs (a preview, an effect, a wait's look), few enough
/// that the blocking pool's 512 threads hold every configured agent's.
pub const TURNS_PER_CALLER: usize = 4;

/// One caller's place among its own pieces of desktop work; given back
/// when dropped.
#[must_use = "a turn given back at once lets the caller's desktop work run unbounded"]
pub(super) struct Turn {
    _permit: OwnedSemaphorePermit,
}

/// Every caller's turns, by who it is (`None`: the one client on stdio or
/// in process). A caller's entry stays: callers are the configured
/// credentials, a few.
#[derive(Default)]
pub(super) struct Turns {
    by: Mutex<HashMap<Option<Role>, Arc<Semaphore>>>,
}

impl Turns {
    /// Waits for one of `who`'s turns: at once unless it has
    /// [`TURNS_PER_CALLER`] pieces of desktop work under way, and then for
    /// one of its own to end.
    pub(super) async fn take(&self, who: Option<&Role>) -> Result<Turn, Refusal> {
        let turns = {
            let mut by = self.by.lock().unwrap_or_else(|p| p.into_inner());
            Arc::clone(
                by.entry(who.cloned())
                    .or_insert_with(|| Arc::new(Semaphore::new(TURNS_PER_CALLER))),
            )
        };
        // The semaphore is never closed; an error would mean it was.
        turns
            .acquire_owned()
            .await
            .map(|permit| Turn { _permit: permit })
            .map_err(|_| Refusal::plain("the caller's turns at the desktop were closed"))
    }
}
