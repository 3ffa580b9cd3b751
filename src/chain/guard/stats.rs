//! How resources were given back: one counter per way, each resource in
//! exactly one.

use std::sync::atomic::{AtomicU64, Ordering};

use super::held::Kind;

#[derive(Debug, Default)]
pub(super) struct KindCounters {
    pub(super) explicit_released: AtomicU64,
    pub(super) explicit_failed: AtomicU64,
    pub(super) queued: AtomicU64,
    pub(super) reaped: AtomicU64,
    pub(super) reap_failed: AtomicU64,
    pub(super) lost: AtomicU64,
    pub(super) reclaimed: AtomicU64,
    pub(super) reclaim_failed: AtomicU64,
}

impl KindCounters {
    pub(super) fn snapshot(&self) -> ResourceStats {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        ResourceStats {
            explicit_released: read(&self.explicit_released),
            explicit_failed: read(&self.explicit_failed),
            queued: read(&self.queued),
            reaped: read(&self.reaped),
            reap_failed: read(&self.reap_failed),
            lost: read(&self.lost),
            reclaimed: read(&self.reclaimed),
            reclaim_failed: read(&self.reclaim_failed),
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct ReleaseCounters {
    reservations: KindCounters,
    leases: KindCounters,
}

pub(super) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl ReleaseCounters {
    pub(super) fn of(&self, kind: Kind) -> &KindCounters {
        match kind {
            Kind::Reservation => &self.reservations,
            Kind::Lease => &self.leases,
        }
    }

    pub(crate) fn snapshot(&self, outstanding: usize) -> ReleaseStats {
        ReleaseStats {
            reservations: self.reservations.snapshot(),
            leases: self.leases.snapshot(),
            outstanding: u64::try_from(outstanding).unwrap_or(u64::MAX),
        }
    }

    /// Releases handed to the reaper that it has not finished yet.
    pub(crate) fn reaper_backlog(&self) -> u64 {
        [&self.reservations, &self.leases]
            .iter()
            .map(|kind| {
                let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
                read(&kind.queued).saturating_sub(read(&kind.reaped) + read(&kind.reap_failed))
            })
            .sum()
    }
}

/// How one kind of resource (reservations, or leases) was given back.
///
/// Every resource lands in exactly one of `explicit_released`,
/// `explicit_failed`, `reaped`, `reap_failed`, `lost`, `reclaimed` or
/// `reclaim_failed`; `queued` counts those of them that reached the reaper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResourceStats {
    /// Released by an explicit `release().await` that succeeded.
    pub explicit_released: u64,
    /// Explicit releases the runtime refused or that failed in transit.
    pub explicit_failed: u64,
    /// Handed to the reaper by a guard's `Drop`.
    pub queued: u64,
    /// Released by the reaper.
    pub reaped: u64,
    /// The reaper's releases that failed, panicked or timed out.
    pub reap_failed: u64,
    /// Dropped after the reaper had stopped: only the server's TTL frees these.
    pub lost: u64,
    /// Still held by a stage that was never dropped (`mem::forget`), and
    /// released by `Session::shutdown`.
    pub reclaimed: u64,
    /// Reclaims at shutdown that failed, panicked or timed out.
    pub reclaim_failed: u64,
}

impl ResourceStats {
    /// Resources whose release is not known to have happened: an explicit
    /// release that failed, queued but not (yet) reaped, lost, or not
    /// reclaimed. Each is counted once.
    pub fn leaked(&self) -> u64 {
        self.explicit_failed
            + self.queued.saturating_sub(self.reaped)
            + self.lost
            + self.reclaim_failed
    }
}

/// How the resources of a session's actions were given back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReleaseStats {
    /// Target reservations.
    pub reservations: ResourceStats,
    /// Control leases.
    pub leases: ResourceStats,
    /// Reservations and leases still held when this was read. After
    /// `Session::shutdown`, only resources a call was using at that moment
    /// (the mutation, or their own release) remain; that call releases and
    /// counts them when it ends. One that never ends (its future was
    /// forgotten) stays here.
    pub outstanding: u64,
}

impl ReleaseStats {
    /// Reservations and leases whose release is not known to have happened.
    pub fn leaked(&self) -> u64 {
        self.reservations.leaked() + self.leases.leaked()
    }
}
