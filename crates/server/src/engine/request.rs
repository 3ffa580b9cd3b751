//! Action requests as upstream reads them from `preview_action` and
//! `execute_action` arguments (camelCase target, postcondition and
//! provenance, the operation, the resource touched), and the summaries of a
//! postcondition and of a sensitivity check that events carry.

use adk_computer_use::contracts::catalogue::tool;
use serde_json::{Map, Value, json};

use super::policy::ToolMeta;
use super::wire::{given, int, object, text, window_id};

/// An action request, read from `preview_action`/`execute_action`
/// arguments as upstream reads them.
#[derive(Debug, Clone)]
pub(super) struct ActionRequest {
    pub session_id: String,
    pub action_id: Option<String>,
    pub attempt: Option<i64>,
    pub execution_group_id: Option<String>,
    pub agent_id: Option<String>,
    pub tool: String,
    pub operation: Option<String>,
    pub args: Value,
    pub mode: String,
    /// camelCase, as the envelope carries it.
    pub target: Option<Value>,
    pub data_labels: Option<Vec<Value>>,
    pub provenance: Option<Value>,
    /// camelCase, as the envelope carries it.
    pub postcondition: Option<Value>,
    pub expires_in_ms: Option<i64>,
    pub lease_id: Option<String>,
    pub approval_grant_id: Option<String>,
    /// The file the caller named as what the action touches
    /// (`resource.filesystem_path`): where an input action's effect lands.
    pub named_path: Option<String>,
}

/// The target evidence, as the envelope carries it.
fn wire_target(target: &Value) -> Value {
    let copy = |from: &str| target.get(from).cloned();
    object([
        ("platform", copy("platform")),
        ("appId", copy("app_id")),
        ("pid", copy("pid")),
        ("windowId", target.get("window_id").map(window_id)),
        ("windowTitleDigest", copy("window_title_digest")),
        ("displayId", copy("display_id")),
        ("role", copy("role")),
        ("labelDigest", copy("label_digest")),
        ("bounds", copy("bounds")),
        ("observationId", copy("observation_id")),
        ("screenshotHash", copy("screenshot_hash")),
        ("uiTreeRevision", copy("ui_tree_revision")),
        ("confidence", copy("confidence")),
        ("capturedAt", copy("captured_at")),
    ])
}

/// The postcondition, as the envelope carries it.
fn wire_postcondition(item: &Value) -> Option<Value> {
    let copy = |from: &str| item.get(from).filter(|v| v.is_string()).cloned();
    let exists = Some(json!(item.get("exists") == Some(&json!(true))));
    let kind = item.get("kind").and_then(Value::as_str)?;
    Some(match kind {
        "ui_element" => object([
            ("kind", Some(json!(kind))),
            ("role", copy("role")),
            ("label", copy("label")),
            ("exists", exists),
            ("valueDigest", copy("value_digest")),
        ]),
        "filesystem" => object([
            ("kind", Some(json!(kind))),
            ("path", copy("path")),
            ("exists", exists),
            ("contentDigest", copy("content_digest")),
        ]),
        "registry" => object([
            ("kind", Some(json!(kind))),
            ("path", copy("path")),
            ("name", copy("name")),
            ("exists", exists),
            ("valueDigest", copy("value_digest")),
        ]),
        "process" => json!({ "kind": kind, "pid": item.get("pid"), "running": false }),
        "window" => object([
            ("kind", Some(json!(kind))),
            ("windowId", item.get("window_id").map(window_id)),
            ("exists", exists),
        ]),
        _ => return None,
    })
}

impl ActionRequest {
    /// Reads a request from arguments the schema has checked.
    pub(super) fn parse(args: &Value) -> Self {
        let owned = |key: &str| text(args, key).map(str::to_owned);
        let provenance = args.get("provenance").filter(|p| p.is_object()).map(|p| {
            object([
                (
                    "untrustedInstruction",
                    Some(json!(p.get("untrusted_instruction") == Some(&json!(true)))),
                ),
                (
                    "sourceObservationIds",
                    Some(
                        p.get("source_observation_ids")
                            .cloned()
                            .unwrap_or(json!([])),
                    ),
                ),
                (
                    "crossesDataBoundary",
                    p.get("crosses_data_boundary")
                        .filter(|v| v.is_boolean())
                        .cloned(),
                ),
            ])
        });
        Self {
            session_id: owned("session_id").unwrap_or_default(),
            action_id: owned("action_id"),
            attempt: int(args, "attempt"),
            execution_group_id: owned("execution_group_id"),
            agent_id: owned("agent_id"),
            tool: owned("tool").unwrap_or_default(),
            operation: owned("operation"),
            args: args
                .get("arguments")
                .filter(|a| a.is_object())
                .cloned()
                .unwrap_or_else(|| json!({})),
            mode: owned("mode").unwrap_or_default(),
            target: args
                .get("target")
                .filter(|t| t.is_object())
                .map(wire_target),
            data_labels: args.get("data_labels").and_then(Value::as_array).cloned(),
            provenance,
            postcondition: args.get("postcondition").and_then(wire_postcondition),
            expires_in_ms: int(args, "expires_in_ms"),
            lease_id: owned("lease_id"),
            approval_grant_id: owned("approval_grant_id"),
            named_path: args
                .get("resource")
                .and_then(|r| given(r, "filesystem_path"))
                .map(str::to_owned),
        }
    }

    /// The operation: the one named, or the tool (with its `mode` argument).
    pub(super) fn operation(&self) -> String {
        match (
            &self.operation,
            self.args.get("mode").and_then(Value::as_str),
        ) {
            (Some(operation), _) => operation.clone(),
            (None, Some(mode)) => format!("{}.{mode}", self.tool),
            (None, None) => self.tool.clone(),
        }
    }

    /// Whether the tool's own arguments name the file it touches.
    pub(super) fn is_file_tool(&self) -> bool {
        matches!(self.tool.as_str(), tool::WRITE_FILE | tool::DELETE_FILE)
    }

    /// The file the action touches: a file tool's `path`, or the one the
    /// caller named for any other action.
    pub(super) fn file_path(&self) -> Option<&str> {
        if self.is_file_tool() {
            given(&self.args, "path")
        } else {
            self.named_path.as_deref()
        }
    }

    /// The resource the action touches: its target app and window, and the
    /// file (a file tool's path, or the one named for an input action).
    pub(super) fn resource(&self) -> Value {
        let arg = |key: &str| given(&self.args, key).map(|s| json!(s));
        let target = |key: &str| self.target.as_ref().and_then(|t| t.get(key)).cloned();
        let window = target("windowId").or_else(|| {
            ["target_window_id", "window_id"]
                .iter()
                .find_map(|k| self.args.get(*k).filter(|v| v.is_string() || v.is_number()))
                .map(window_id)
        });
        let path = self.file_path().map(|p| json!(p));
        object([
            (
                "targetAppId",
                target("appId")
                    .or_else(|| arg("target_app"))
                    .or_else(|| arg("bundle_id")),
            ),
            ("targetWindowId", window),
            ("filesystemPath", path),
        ])
    }

    /// Whether the server must check the effect independently.
    pub(super) fn needs_verification(&self) -> bool {
        self.postcondition.is_some()
            || matches!(
                self.tool.as_str(),
                tool::SET_VALUE | tool::FILL_FORM | tool::WRITE_FILE | tool::DELETE_FILE
            )
    }

    pub(super) fn needs_target(&self, meta: ToolMeta) -> bool {
        meta.mutates
            && (meta.moves_cursor
                || matches!(self.tool.as_str(), tool::SET_VALUE | tool::FILL_FORM))
    }
}

/// The postcondition's summary in events: its kind, expected state and
/// expected digest.
pub(super) fn postcondition_summary(postcondition: &Value) -> Map<String, Value> {
    let kind = postcondition
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("");
    let digest = match kind {
        "filesystem" => postcondition.get("contentDigest"),
        "ui_element" | "registry" => postcondition.get("valueDigest"),
        _ => None,
    };
    let state = match (kind, postcondition.get("exists").and_then(Value::as_bool)) {
        ("process", _) => Some("not_running"),
        (_, Some(true)) => Some("exists"),
        (_, Some(false)) => Some("absent"),
        _ => None,
    };
    let summary = object([
        ("postconditionKind", Some(json!(kind))),
        ("postconditionExpectedState", state.map(|s| json!(s))),
        ("postconditionExpectedDigest", digest.cloned()),
    ]);
    match summary {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

pub(super) fn sensitivity_summary(sensitivity: &Value) -> Map<String, Value> {
    let mut summary = Map::new();
    for (from, to) in [
        ("assessment", "sensitivityAssessment"),
        ("source", "sensitivitySource"),
        ("signals", "sensitivitySignals"),
        ("fieldsChecked", "sensitivityFieldsChecked"),
    ] {
        if let Some(value) = sensitivity.get(from) {
            summary.insert(to.into(), value.clone());
        }
    }
    summary
}
