//! The sanitized safety scenarios the runtime publishes.

use serde::{Deserialize, Serialize};

/// What a scenario must produce.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SafetyExpectation {
    /// The receipt status expected on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The error code expected on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The receipt status expected alongside the error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt_status: Option<String>,
    /// Desktop effects expected.
    pub effects: u32,
    /// Restores expected.
    pub restores: u32,
    /// Effects expected after a replay of the same action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_effects: Option<u32>,
}

/// One scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SafetyScenario {
    /// Its id.
    pub id: String,
    /// The fault injected.
    pub fault: String,
    /// What must happen.
    pub expected: SafetyExpectation,
}

/// The corpus file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SafetyCorpus {
    /// Schema version.
    pub schema_version: u32,
    /// What it is.
    pub description: String,
    /// The scenarios.
    pub scenarios: Vec<SafetyScenario>,
}
