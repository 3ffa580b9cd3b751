//! Target evidence taken from what was observed, never typed in.
//!
//! A server revalidates an action's target at execution time by comparing
//! the evidence the action carries with the desktop as it is then (upstream:
//! exact app, pid, window, display, title digest, screenshot hash and UI tree
//! revision; bounds within a tolerance). Evidence written by hand goes stale
//! the moment anything moves, and evidence that names fields the observation
//! never showed is a claim nobody checked. So the chain builds it from the
//! frames of one observation round: the window record (from `list_windows`,
//! or the window a UI tree describes), the screenshot's digest and the tree's
//! revision, with the digests computed as upstream computes them
//! (`windowTitleDigest` is the bare hex SHA-256 of the title; a frame digest
//! is `sha256:` + hex of the image bytes).

use base64::Engine as _;
use serde_json::Value;

use crate::ComputerUseError;
use crate::contracts::{Bounds, TargetEvidence, WindowId};
use crate::digest::{sha256_hex, sha256_prefixed};

use super::{Observation, Observations};

/// Why no evidence could be derived for a window.
fn not_observed(app_id: &str, window_id: Option<&WindowId>, why: String) -> ComputerUseError {
    let window = window_id.map_or_else(|| "its first window".to_owned(), |w| format!("window {w}"));
    ComputerUseError::TargetNotObserved {
        target: format!("{app_id} {window}"),
        reason: why,
    }
}

/// The platform name as a server on this machine reports it (Node's
/// `process.platform`, which upstream compares exactly).
pub(crate) fn platform() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    }
}

impl Observations {
    /// Whether the semantic frame describes any window at all. Servers whose
    /// observations carry no window data (upstream's fake desktop answers
    /// `{fake, effectCount}`) give the chain nothing to derive from.
    pub fn shows_windows(&self) -> bool {
        let frame = &self.semantic.structured;
        frame.get("windows").is_some_and(Value::is_array)
            || frame.get("window").is_some_and(Value::is_object)
            || frame.get("windowId").is_some()
    }

    /// Target evidence for `app_id`'s window `window_id` (its first window
    /// when `None`), derived from this round's frames.
    ///
    /// The window must appear in the semantic frame, matched exactly on app
    /// and window id (a record whose window id is neither a whole number nor
    /// text is not a window); nothing is guessed. `captured_at` is the
    /// semantic frame's capture time, which must be RFC 3339, or `observed_at`
    /// (when the observation round ended) when the runtime gave none.
    pub fn target_evidence(
        &self,
        app_id: &str,
        window_id: Option<&WindowId>,
        observed_at: &str,
    ) -> Result<TargetEvidence, ComputerUseError> {
        let records = window_records(&self.semantic.structured);
        if records.is_empty() {
            return Err(not_observed(
                app_id,
                window_id,
                "the semantic frame lists no windows".into(),
            ));
        }
        let record = records
            .into_iter()
            .filter(|record| record_window(record).is_some())
            .find(|record| {
                record_app(record) == Some(app_id)
                    && window_id.is_none_or(|wanted| record_window(record).as_ref() == Some(wanted))
            })
            .ok_or_else(|| {
                not_observed(
                    app_id,
                    window_id,
                    "the semantic frame does not show it".into(),
                )
            })?;
        let observation_id = self
            .semantic
            .observation_id
            .clone()
            .or_else(|| self.visual.observation_id.clone())
            .ok_or_else(|| {
                not_observed(
                    app_id,
                    window_id,
                    "the runtime gave the observation no id".into(),
                )
            })?;
        Ok(TargetEvidence {
            platform: platform().to_owned(),
            app_id: app_id.to_owned(),
            pid: record
                .get("pid")
                .and_then(Value::as_u64)
                .and_then(|pid| u32::try_from(pid).ok()),
            window_id: record_window(record),
            window_title_digest: record.get("title").and_then(Value::as_str).map(sha256_hex),
            display_id: record.get("displayId").and_then(|d| match d {
                Value::String(text) => Some(text.clone()),
                Value::Number(number) => Some(number.to_string()),
                _ => None,
            }),
            role: None,
            label_digest: None,
            bounds: record
                .get("bounds")
                .and_then(|b| serde_json::from_value::<Bounds>(b.clone()).ok()),
            observation_id,
            screenshot_hash: screenshot_hash(&self.visual),
            ui_tree_revision: tree_revision(&self.semantic.structured),
            confidence: 1.0,
            captured_at: match &self.semantic.captured_at {
                Some(at)
                    if crate::clock::parse_rfc3339("Observation", "capturedAt", at).is_ok() =>
                {
                    at.clone()
                }
                Some(at) => {
                    return Err(not_observed(
                        app_id,
                        window_id,
                        format!("the frame's capture time {at:?} is not RFC 3339"),
                    ));
                }
                None => observed_at.to_owned(),
            },
        })
    }
}

/// The window records a semantic frame holds: a `list_windows` answer
/// (`windows: [...]`), or a UI tree that names its window at the top level.
fn window_records(frame: &Value) -> Vec<&Value> {
    if let Some(windows) = frame.get("windows").and_then(Value::as_array) {
        return windows.iter().filter(|w| w.is_object()).collect();
    }
    if let Some(window) = frame.get("window").filter(|w| w.is_object()) {
        return vec![window];
    }
    if frame.get("windowId").is_some() && record_app(frame).is_some() {
        return vec![frame];
    }
    Vec::new()
}

/// Upstream's window records name the app `bundleId`; some frames say `appId`.
fn record_app(record: &Value) -> Option<&str> {
    record
        .get("bundleId")
        .or_else(|| record.get("appId"))
        .and_then(Value::as_str)
}

fn record_window(record: &Value) -> Option<WindowId> {
    match record.get("windowId")? {
        Value::Number(number) => number.as_u64().map(WindowId::Number),
        Value::String(name) => Some(WindowId::Name(name.clone())),
        _ => None,
    }
}

/// The screenshot's digest: the frame's own `screenshotHash` when it states
/// one, else `sha256:` + hex of the first image's decoded bytes.
fn screenshot_hash(visual: &Observation) -> Option<String> {
    if let Some(stated) = visual
        .structured
        .get("screenshotHash")
        .and_then(Value::as_str)
    {
        return Some(stated.to_owned());
    }
    let image = visual.images.first()?;
    base64::engine::general_purpose::STANDARD
        .decode(image.data.as_bytes())
        .ok()
        .map(sha256_prefixed)
}

/// A UI tree's revision, as the frame states it (`uiTreeRevision`).
fn tree_revision(frame: &Value) -> Option<String> {
    match frame.get("uiTreeRevision")? {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}
