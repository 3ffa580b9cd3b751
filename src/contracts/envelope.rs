//! The action envelope: the runtime's authoritative description of one action.

use serde::{Deserialize, Serialize};

use super::{
    ActionClass, ActionPostcondition, DataLabel, ExecutionMode, TargetSensitivityEvidence, WindowId,
};

/// A screen rectangle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bounds {
    /// Left edge.
    #[serde(with = "super::number")]
    pub x: f64,
    /// Top edge.
    #[serde(with = "super::number")]
    pub y: f64,
    /// Width.
    #[serde(with = "super::number")]
    pub width: f64,
    /// Height.
    #[serde(with = "super::number")]
    pub height: f64,
}

/// What the runtime observed about the target when the action was proposed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetEvidence {
    /// Operating system (`darwin`, `linux`, `win32`, ...).
    pub platform: String,
    /// The application's id.
    pub app_id: String,
    /// The process id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_id: Option<WindowId>,
    /// Digest of the window title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_title_digest: Option<String>,
    /// The display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_id: Option<String>,
    /// Accessibility role of the element.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Digest of the element's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_digest: Option<String>,
    /// The element's rectangle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<Bounds>,
    /// The observation this evidence came from.
    pub observation_id: String,
    /// Hash of the screenshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot_hash: Option<String>,
    /// Revision of the UI tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui_tree_revision: Option<String>,
    /// The runtime's confidence in the match, 0 to 1.
    #[serde(with = "super::number")]
    pub confidence: f64,
    /// When the evidence was captured (RFC 3339).
    pub captured_at: String,
}

/// Resources other than a window that an action touches.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionResourceContext {
    /// Target application.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_app_id: Option<String>,
    /// Target window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_window_id: Option<WindowId>,
    /// A file the action reads or writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filesystem_path: Option<String>,
    /// A destination path (move, copy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filesystem_destination: Option<String>,
    /// A registry key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_path: Option<String>,
    /// A process name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_name: Option<String>,
    /// A process id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_id: Option<u32>,
    /// A browser domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser_domain: Option<String>,
}

/// Where the instruction behind an action came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionProvenance {
    /// True when the instruction came from untrusted content (a web page, a document).
    pub untrusted_instruction: bool,
    /// The observations the instruction was read from.
    pub source_observation_ids: Vec<String>,
    /// True when the action moves data across a boundary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crosses_data_boundary: Option<bool>,
}

/// The previewed action, as the runtime bound it.
///
/// `argsDigest` is what approval is granted against; the receipt must carry
/// the same digest for the work to be the work that was approved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionEnvelope {
    /// The action's id (also the reservation's intent id).
    pub action_id: String,
    /// The runtime session.
    pub session_id: String,
    /// The group of cooperating agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_group_id: Option<String>,
    /// The principal the runtime authenticated.
    pub principal_id: String,
    /// The agent that proposed the action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The low-level tool (`left_click`, `write_clipboard`, ...).
    pub tool: String,
    /// The operation the tool performs.
    pub operation: String,
    /// The runtime's classification.
    pub action_class: ActionClass,
    /// The mode the action asked for.
    pub requested_mode: ExecutionMode,
    /// What was observed about the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetEvidence>,
    /// Other resources touched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<ActionResourceContext>,
    /// Where the instruction came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<ActionProvenance>,
    /// Sensitivity evidence for the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_sensitivity: Option<TargetSensitivityEvidence>,
    /// Labels of the data handled.
    pub data_labels: Vec<DataLabel>,
    /// What must hold after the action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postcondition: Option<ActionPostcondition>,
    /// Whether the effect can be undone.
    pub reversible: bool,
    /// Whether the effect leaves the machine.
    pub external_side_effect: bool,
    /// When the action was proposed (RFC 3339).
    pub proposed_at: super::WireTime,
    /// When the preview stops authorizing anything (RFC 3339).
    pub expires_at: super::WireTime,
    /// Lowercase SHA-256 hex of the canonical arguments.
    pub args_digest: String,
    /// The attempt number, when the runtime reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Adapter certification, when one applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certification_id: Option<String>,
}
