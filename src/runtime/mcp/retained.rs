//! The exact previews the adapter keeps until their action ends.
//!
//! `execute_action` must send exactly the arguments that were previewed, and
//! must refuse an envelope that differs from the previewed one in any field.
//! The map is bounded: beyond its limit the oldest entry is dropped (its
//! action can then no longer execute, which fails safe), and an entry is
//! removed as soon as its action is verified or its reservation released.

use std::collections::{HashMap, VecDeque};

use serde_json::{Map, Value};

use crate::contracts::ActionEnvelope;

pub(crate) struct Retained {
    pub(crate) arguments: Map<String, Value>,
    pub(crate) envelope: ActionEnvelope,
}

pub(crate) struct RetainedPreviews {
    limit: usize,
    entries: HashMap<String, Retained>,
    order: VecDeque<String>,
}

impl RetainedPreviews {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit: limit.max(1),
            entries: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    pub(crate) fn insert(&mut self, action_id: String, retained: Retained) {
        if self.entries.insert(action_id.clone(), retained).is_none() {
            self.order.push_back(action_id);
        }
        while self.entries.len() > self.limit {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.entries.remove(&oldest);
        }
    }

    pub(crate) fn get(&self, action_id: &str) -> Option<&Retained> {
        self.entries.get(action_id)
    }

    pub(crate) fn remove(&mut self, action_id: &str) {
        if self.entries.remove(action_id).is_some() {
            self.order.retain(|id| id != action_id);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}
