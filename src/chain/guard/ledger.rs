//! The ledger of everything a session's actions hold right now: whoever
//! takes a resource out of it releases it, so each is released once.

use std::sync::Mutex;

use super::held::Held;

/// A ledger entry's id: its slot and the slot's generation, so an id whose
/// entry was taken never reaches the entry that reuses the slot.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct LedgerId {
    slot: usize,
    generation: u64,
}

/// One ledger slot: its generation, the resource, and whether a call that
/// uses it (the mutation, or its own explicit release) is in flight.
#[derive(Default)]
struct Entry {
    generation: u64,
    held: Option<Held>,
    busy: bool,
    /// A task lease: held for many actions, never one action's to release.
    task: bool,
}

#[derive(Default)]
struct Slots {
    entries: Vec<Entry>,
    free: Vec<usize>,
    held: usize,
}

/// Every resource the session's actions hold right now.
#[derive(Default)]
pub(crate) struct Ledger {
    slots: Mutex<Slots>,
}

impl Ledger {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Enters `held`, keyed by what the runtime calls it: an entry that
    /// already holds the same reservation or lease (a stale chain, when an
    /// idempotent retry was handed the same resource) is taken out first,
    /// so exactly one guard, the live one, ever releases it, and a reaper
    /// working for the stale chain finds nothing to free.
    pub(super) fn register(&self, held: Held) -> LedgerId {
        self.enter(held, false)
    }

    /// Enters a task lease, as [`Ledger::register`] does.
    pub(super) fn register_task(&self, held: Held) -> LedgerId {
        self.enter(held, true)
    }

    /// Whether a task lease with this id is held right now: a lease the
    /// runtime grants again under that id belongs to the task, and no
    /// action or second task may take it over (and release it).
    pub(super) fn holds_task_lease(&self, lease_id: &str) -> bool {
        self.lock().entries.iter().any(|entry| {
            entry.task
                && entry
                    .held
                    .as_ref()
                    .is_some_and(|held| held.resource_id() == lease_id)
        })
    }

    fn enter(&self, held: Held, task: bool) -> LedgerId {
        let mut slots = self.lock();
        let kind = held.kind();
        let stale = slots.entries.iter().position(|entry| {
            entry.held.as_ref().is_some_and(|other| {
                other.kind() == kind && other.resource_id() == held.resource_id()
            })
        });
        if let Some(slot) = stale {
            slots.entries[slot].held = None;
            slots.entries[slot].busy = false;
            slots.entries[slot].task = false;
            slots.free.push(slot);
            slots.held -= 1;
        }
        slots.held += 1;
        match slots.free.pop() {
            Some(slot) => {
                let entry = &mut slots.entries[slot];
                entry.generation += 1;
                entry.held = Some(held);
                entry.busy = false;
                entry.task = task;
                LedgerId {
                    slot,
                    generation: entry.generation,
                }
            }
            None => {
                slots.entries.push(Entry {
                    generation: 0,
                    held: Some(held),
                    busy: false,
                    task,
                });
                LedgerId {
                    slot: slots.entries.len() - 1,
                    generation: 0,
                }
            }
        }
    }

    /// The live entry of `id`, if it is still in the ledger.
    fn entry(slots: &mut Slots, id: LedgerId) -> Option<&mut Entry> {
        slots
            .entries
            .get_mut(id.slot)
            .filter(|entry| entry.generation == id.generation && entry.held.is_some())
    }

    /// Takes the entry out: whoever gets it is the one that releases it.
    pub(super) fn take(&self, id: LedgerId) -> Option<Held> {
        let mut slots = self.lock();
        let held = Self::entry(&mut slots, id)?.held.take()?;
        slots.free.push(id.slot);
        slots.held -= 1;
        Some(held)
    }

    /// Marks the entry busy (or not): a busy entry is in use by a call in
    /// flight, and `shutdown` leaves it to that call. False when the entry
    /// is no longer in the ledger.
    pub(super) fn set_busy(&self, id: LedgerId, busy: bool) -> bool {
        let mut slots = self.lock();
        match Self::entry(&mut slots, id) {
            Some(entry) => {
                entry.busy = busy;
                true
            }
            None => false,
        }
    }

    /// Marks several entries busy (or not) under one lock.
    pub(super) fn set_busy_all(&self, ids: impl IntoIterator<Item = LedgerId>, busy: bool) {
        let mut slots = self.lock();
        for id in ids {
            if let Some(entry) = Self::entry(&mut slots, id) {
                entry.busy = busy;
            }
        }
    }

    /// Takes out one entry that no call is using, if there is one.
    pub(super) fn take_idle(&self) -> Option<Held> {
        let mut slots = self.lock();
        let slot = slots
            .entries
            .iter()
            .position(|entry| entry.held.is_some() && !entry.busy)?;
        let held = slots.entries[slot].held.take()?;
        slots.free.push(slot);
        slots.held -= 1;
        Some(held)
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().held
    }
}
