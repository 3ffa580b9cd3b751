//! What the server knows about each desktop tool (its focus and input
//! needs), and the rules it derives from that as upstream does: the
//! execution capability, the action class, and the policy decision.

use serde_json::{Value, json};

use super::faults::SimConfig;
use crate::digest::{canonical_json, sha256_prefixed};

/// How a tool reaches the desktop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Focus {
    /// No focus or input needed.
    None,
    /// Accessibility.
    Ax,
    /// Synthetic input events.
    Input,
}

/// A desktop tool's metadata (upstream's tool catalog entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ToolMeta {
    pub focus: Focus,
    pub mutates: bool,
    pub requires_focus: bool,
    pub moves_cursor: bool,
    pub destructive_hint: bool,
}

const fn meta(focus: Focus, mutates: bool, destructive_hint: bool) -> ToolMeta {
    let input = matches!(focus, Focus::Input);
    ToolMeta {
        focus,
        mutates,
        requires_focus: mutates && !matches!(focus, Focus::None),
        moves_cursor: mutates && input,
        destructive_hint,
    }
}

/// The simulated desktop's tools. Those upstream's catalog has carry its
/// entry; `focus_window`, `move_cursor`, `write_file`, `delete_file` and
/// `send_email` are the simulator's and carry the entry of their upstream
/// counterpart (`activate_window`, `mouse_move`, `filesystem`, `filesystem`,
/// `notification`).
const DESKTOP_TOOLS: &[(&str, ToolMeta)] = &[
    ("snapshot", meta(Focus::None, false, false)),
    ("list_windows", meta(Focus::Ax, false, false)),
    ("get_ui_tree", meta(Focus::Ax, false, false)),
    ("read_clipboard", meta(Focus::None, false, false)),
    ("write_clipboard", meta(Focus::None, true, false)),
    ("set_value", meta(Focus::Ax, true, false)),
    ("fill_form", meta(Focus::Ax, true, false)),
    ("focus_window", meta(Focus::Ax, true, false)),
    ("left_click", meta(Focus::Input, true, false)),
    ("move_cursor", meta(Focus::Input, true, false)),
    ("write_file", meta(Focus::None, true, true)),
    ("delete_file", meta(Focus::None, true, true)),
    ("send_email", meta(Focus::None, true, false)),
];

/// The facade's own tools, which capabilities also answer for.
const FACADE_READS: &[&str] = &[
    "get_session",
    "get_session_events",
    "get_follow_ups",
    "get_execution_capabilities",
    "get_certification_trace",
    "preview_action",
];

/// The metadata of a tool the desktop performs, if it performs it.
pub(crate) fn desktop_tool(tool: &str) -> Option<ToolMeta> {
    DESKTOP_TOOLS
        .iter()
        .find(|(name, _)| *name == tool)
        .map(|(_, meta)| *meta)
}

/// The metadata of any tool the server knows: the desktop's and its own.
pub(crate) fn known_tool(tool: &str) -> Option<ToolMeta> {
    desktop_tool(tool).or_else(|| {
        let spec = super::tools::find(tool)?;
        Some(match tool {
            "execute_action" => meta(Focus::Input, true, false),
            _ if FACADE_READS.contains(&tool) => meta(Focus::None, false, false),
            _ => meta(Focus::None, spec.name != "sim_stats", false),
        })
    })
}

/// The capability upstream's platform rule gives `tool` for `app_id`:
/// modes, interference and confidence follow the tool's metadata; the
/// backend is the simulated desktop's.
pub(crate) fn capability(tool: &str, meta: ToolMeta, app_id: &str) -> Value {
    let interference = if meta.moves_cursor {
        "moves_physical_pointer"
    } else if meta.requires_focus {
        "takes_foreground"
    } else {
        "none"
    };
    let mut modes = vec!["shadow"];
    if !meta.mutates || (meta.focus == Focus::None && !meta.requires_focus) {
        modes.push("background");
    }
    if meta.mutates {
        modes.push("foreground");
    }
    json!({
        "appId": app_id,
        "operation": tool,
        "backend": "scripting",
        "supportedModes": modes,
        "interference": interference,
        "confidence": if meta.focus == Focus::None { 1.0 } else { 0.75 },
        "verificationSource": "platform_rule",
    })
}

/// An action's class and its two flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Classification {
    pub class: &'static str,
    pub reversible: bool,
    pub external: bool,
}

const fn class(class: &'static str, reversible: bool, external: bool) -> Classification {
    Classification {
        class,
        reversible,
        external,
    }
}

/// Names that mark a field as holding a secret.
pub(crate) fn names_a_secret(text: &str) -> bool {
    let text = text.to_lowercase();
    ["pass", "secret", "token", "credential", "otp", "pin"]
        .iter()
        .any(|word| text.contains(word))
        || joined(&text, "one", "time")
        || joined(&text, "api", "key")
}

/// `first` then `second`, with at most one character between them.
fn joined(text: &str, first: &str, second: &str) -> bool {
    text.match_indices(first).any(|(at, _)| {
        let rest = &text[at + first.len()..];
        rest.starts_with(second)
            || rest
                .char_indices()
                .nth(1)
                .is_some_and(|(i, _)| rest[i..].starts_with(second))
    })
}

fn sensitive_field(args: &Value) -> bool {
    let named = |value: &Value| {
        ["role", "label"].iter().any(|key| {
            value
                .get(key)
                .and_then(Value::as_str)
                .is_some_and(names_a_secret)
        })
    };
    named(args)
        || args
            .get("fields")
            .and_then(Value::as_array)
            .is_some_and(|fields| fields.iter().any(named))
}

/// Upstream's operation-aware classification of the simulator's tools.
pub(crate) fn classify(tool: &str, args: &Value, meta: ToolMeta) -> Classification {
    match tool {
        "set_value" | "fill_form" if sensitive_field(args) => class("secret_access", false, true),
        "set_value" | "fill_form" => class("edit_reversible", true, true),
        "read_clipboard" => class("secret_access", false, false),
        "write_clipboard" => class("edit_reversible", true, false),
        "write_file" => class("edit_reversible", true, true),
        "delete_file" => class("destructive", false, true),
        "send_email" => class("communicate_external", false, true),
        _ if !meta.mutates => class("observe", true, false),
        _ if meta.destructive_hint => class("destructive", false, true),
        _ => class("navigate", true, true),
    }
}

/// The policy's answer for an envelope.
pub(crate) struct Decision {
    pub decision: &'static str,
    pub reasons: Vec<String>,
}

/// Classes that need a person's approval.
const CONFIRM_CLASSES: &[&str] = &[
    "communicate_external",
    "authentication",
    "financial",
    "destructive",
    "privilege_change",
    "secret_access",
];

/// The simulator's policy, in upstream's rule order: destructive actions
/// are denied unless the host allows them; untrusted instructions are held
/// at the boundary; the host's confirm tools, the sensitive classes,
/// externally visible edits and credential or payment data need approval;
/// everything else is allowed.
pub(crate) fn decide(config: &SimConfig, envelope: &Value) -> Decision {
    let text = |key: &str| envelope.get(key).and_then(Value::as_str).unwrap_or("");
    let class = text("actionClass");
    let one = |decision, reason: String| Decision {
        decision,
        reasons: vec![reason],
    };
    if class == "destructive" && !config.allow_destructive {
        return one("deny", format!("denied_class:{class}"));
    }
    let untrusted = envelope
        .pointer("/provenance/untrustedInstruction")
        .and_then(Value::as_bool)
        == Some(true);
    if untrusted && class != "observe" {
        if [
            "authentication",
            "financial",
            "destructive",
            "privilege_change",
        ]
        .contains(&class)
        {
            return one("deny", format!("untrusted_instruction:{class}"));
        }
        return one("confirm", format!("untrusted_instruction_boundary:{class}"));
    }
    let tool = text("tool");
    if config.confirm_tools.contains(tool) {
        return one("confirm", format!("confirm_tool:{tool}"));
    }
    let external = envelope.get("externalSideEffect") == Some(&Value::Bool(true));
    let labelled = envelope
        .get("dataLabels")
        .and_then(Value::as_array)
        .is_some_and(|labels| labels.iter().any(|l| l == "credential" || l == "payment"));
    let confirm_class =
        CONFIRM_CLASSES.contains(&class) && !(class == "destructive" && config.allow_destructive);
    if confirm_class || (class == "edit_reversible" && external) || labelled {
        return one("confirm", format!("confirm:{class}"));
    }
    one("allow", format!("allow:{class}"))
}

/// The policy's digest: `sha256:` and the hex of its configuration.
pub(crate) fn policy_digest(config: &SimConfig) -> String {
    let tools: Vec<&String> = config.confirm_tools.iter().collect();
    let policy = json!({ "allowDestructive": config.allow_destructive, "confirmTools": tools });
    sha256_prefixed(canonical_json(&policy))
}
