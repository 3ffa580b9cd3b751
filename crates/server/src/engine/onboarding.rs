//! `onboarding`: guided setup, kept as upstream's onboarding manager keeps
//! it (one record per run, a revision per step, the stage derived from the
//! checks done), over the simulated desktop: its capture shows a PNG, its
//! pointer and accessibility tree answer, its emergency stop is the
//! server's cooperative one. The tool's handler is in `calls::onboarding`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

pub(super) const DEFAULT_CHORD: &str = "ctrl+alt+shift+escape";

/// Every onboarding run, by id.
#[derive(Default)]
pub(crate) struct Onboarding {
    pub(super) runs: BTreeMap<String, Value>,
    /// The agent that started each run, by its credential's name (over
    /// TCP): a run is its own, as a session is.
    pub(crate) owners: BTreeMap<String, String>,
}

impl Onboarding {
    /// Whether the run `id` exists.
    pub(crate) fn has(&self, id: &str) -> bool {
        self.runs.contains_key(id)
    }
}

/// The platform as Node names it.
pub(super) fn platform() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    }
}

pub(super) fn chord() -> String {
    std::env::var("COMPUTER_USE_EMERGENCY_STOP_CHORD").unwrap_or_else(|_| DEFAULT_CHORD.into())
}

/// The stage a run has reached, from the checks it has.
pub(super) fn stage(run: &Value) -> &'static str {
    let check = |pointer: &str| run.pointer(pointer);
    if run.get("profile").is_some() {
        "configured"
    } else if check("/checks/emergency/acknowledgedByUser") == Some(&json!(true)) {
        "emergency_acknowledged"
    } else if check("/checks/semantic").is_some() {
        "semantic_tested"
    } else if check("/checks/pointer/tested") == Some(&json!(true)) {
        "pointer_tested"
    } else if check("/checks/capture").is_some() {
        "capture_tested"
    } else if check("/checks/doctor").is_some() {
        "diagnosed"
    } else {
        "created"
    }
}

impl super::actuate::Desk {
    /// Whether the tree of the window `args` names (`window_id`) can be
    /// read: onboarding's semantic test. `None` when no window is named.
    pub(super) fn tree_readable(&self, args: &Value) -> Option<bool> {
        let window = args.get("window_id").and_then(Value::as_i64)?;
        let window = u64::try_from(window).ok()?;
        Some(self.ui_tree(None, Some(window), None).is_ok())
    }
}
