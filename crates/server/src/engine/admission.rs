//! `admission`: who may hold a TCP connection to the server, before and
//! after it authenticates. Connections waiting for their handshake have a
//! fixed number of places, the oldest giving way to the newest; an
//! authenticated role (one agent, the approver, the host) holds a bounded
//! number of connections.

use std::sync::Arc;

/// How many connections may wait to authenticate at once.
const PRE_AUTH_CONNECTIONS: usize = 64;

/// The connections waiting to authenticate, oldest first. When one more
/// arrives and every place is taken, the oldest is closed to make room:
/// a process holding every place with silent connections (and reopening
/// each as it closes) only ever closes its own, while a client that
/// authenticates at once does so long before 64 newer ones arrive.
#[derive(Default)]
pub(super) struct PreAuth {
    next: std::sync::atomic::AtomicU64,
    waiting: std::sync::Mutex<std::collections::VecDeque<(u64, Arc<tokio::sync::Notify>)>>,
}

impl PreAuth {
    /// Takes a place for a new connection, closing the oldest waiting one
    /// when every place is taken; the new one's ticket and the signal that
    /// closes it.
    pub(super) fn admit(&self) -> (u64, Arc<tokio::sync::Notify>) {
        let ticket = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let evict = Arc::new(tokio::sync::Notify::new());
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        while waiting.len() >= PRE_AUTH_CONNECTIONS {
            if let Some((_, oldest)) = waiting.pop_front() {
                // A permit is kept if the connection is not waiting yet.
                oldest.notify_one();
            }
        }
        waiting.push_back((ticket, Arc::clone(&evict)));
        (ticket, evict)
    }

    /// The connection `ticket` authenticated or ended: its place is free.
    pub(super) fn leave(&self, ticket: u64) {
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(t, _)| *t != ticket);
    }
}

/// How long a connection chosen to make room may still finish a
/// handshake it has begun.
pub(super) const EVICTION_GRACE: std::time::Duration = std::time::Duration::from_millis(100);

/// The most connections one authenticated role (one agent, the approver,
/// the host) holds at once.
const MOST_PER_ROLE: usize = 32;

/// The connections each authenticated role holds.
#[derive(Default)]
pub(super) struct Shares {
    held: std::sync::Mutex<std::collections::HashMap<super::access::Role, usize>>,
}

impl Shares {
    /// Takes one of `role`'s places; `false` when it holds its most.
    pub(super) fn take(&self, role: &super::access::Role) -> bool {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let count = held.entry(role.clone()).or_default();
        if *count >= MOST_PER_ROLE {
            return false;
        }
        *count += 1;
        true
    }

    /// Gives one of `role`'s places back.
    pub(super) fn give(&self, role: &super::access::Role) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = held.get_mut(role) {
            *count = count.saturating_sub(1);
        }
    }
}

/// A place taken in [`Shares`], given back when the connection ends.
pub(super) struct Share<'a>(pub(super) &'a Shares, pub(super) super::access::Role);

impl Drop for Share<'_> {
    fn drop(&mut self) {
        self.0.give(&self.1);
    }
}
