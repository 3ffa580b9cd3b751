//! What the server knows about each desktop tool (its focus and input
//! needs), and the rules it derives from that as upstream does: the
//! execution capability, the action class, and the policy decision.

use adk_computer_use::contracts::catalogue::protocol::name as protocol;
use serde_json::{Value, json};

use crate::Config;
use adk_computer_use::contracts::DataLabel;
use adk_computer_use::contracts::catalogue::{self, LowLevelTool, Pointer, Reach, tool};
use adk_computer_use::digest::{canonical_json, sha256_prefixed};

/// How a tool reaches the desktop (upstream's `focusRequired`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Focus {
    /// No focus or input needed.
    None,
    /// Accessibility.
    Ax,
    /// Synthetic input events.
    Input,
    /// A scripting bridge.
    Scripting,
}

/// A desktop tool's metadata (upstream's tool catalog entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ToolMeta {
    pub focus: Focus,
    pub mutates: bool,
    pub requires_focus: bool,
    pub moves_cursor: bool,
    pub physical_input: bool,
    pub virtual_pointer: bool,
    pub destructive_hint: bool,
}

const fn meta(focus: Focus, mutates: bool, destructive_hint: bool) -> ToolMeta {
    let input = matches!(focus, Focus::Input);
    ToolMeta {
        focus,
        mutates,
        requires_focus: mutates && matches!(focus, Focus::Input | Focus::Ax),
        moves_cursor: mutates && input,
        physical_input: mutates && input,
        virtual_pointer: false,
        destructive_hint,
    }
}

/// A low-level tool's metadata, from the one catalogue
/// (`adk_computer_use::contracts::catalogue`).
fn of_catalogue(tool: &LowLevelTool) -> ToolMeta {
    let focus = match tool.reach {
        Reach::None => Focus::None,
        Reach::Accessibility => Focus::Ax,
        Reach::Input => Focus::Input,
        Reach::Scripting => Focus::Scripting,
    };
    ToolMeta {
        virtual_pointer: matches!(tool.pointer, Pointer::Overlay | Pointer::Provider),
        ..meta(focus, tool.mutates, tool.destructive)
    }
}

/// Whether `tool` is one of upstream's 64 catalogue tools (not one of the
/// server's own eight).
pub(crate) fn upstream_catalogue_tool(tool: &str) -> bool {
    catalogue::low_level_tool(tool).is_some_and(LowLevelTool::is_upstream)
}

/// The upstream tool whose capability rule a server tool follows.
fn counterpart(tool: &str) -> &str {
    match catalogue::low_level_tool(tool) {
        Some(entry) => entry.rule_of(),
        None => tool,
    }
}

/// The facade's own tools, which capabilities also answer for.
const FACADE_READS: &[&str] = &[
    protocol::GET_SESSION,
    protocol::GET_SESSION_EVENTS,
    protocol::GET_FOLLOW_UPS,
    protocol::GET_EXECUTION_CAPABILITIES,
    protocol::GET_CERTIFICATION_TRACE,
    protocol::PREVIEW_ACTION,
];

/// The metadata of a tool the desktop performs, if it performs it.
pub(crate) fn desktop_tool(tool: &str) -> Option<ToolMeta> {
    catalogue::low_level_tool(tool).map(of_catalogue)
}

/// Upstream's refusal of a tool `preview_action` and `execute_action` do
/// not take: one outside the catalogue, or a provider's whole computer
/// action, which must be translated into one low-level action first.
pub(crate) fn outside_catalogue(tool: &str, verb: &str) -> Option<super::Refusal> {
    if desktop_tool(tool).is_none() {
        return Some(super::Refusal::bare(
            "tool_outside_host_profile",
            json!({ "tool": tool }),
        ));
    }
    (catalogue::low_level_tool(tool).is_some_and(|t| t.pointer == Pointer::Provider)).then(|| {
        super::Refusal::bare(
            "provider_adapter_requires_translation",
            json!({ "remediation": format!("Translate the provider's action into one low-level action before {verb}.") }),
        )
    })
}

/// The metadata of any tool the server knows: the desktop's and its own.
pub(crate) fn known_tool(tool: &str) -> Option<ToolMeta> {
    desktop_tool(tool).or_else(|| {
        super::tools::find(tool)?;
        Some(match tool {
            protocol::EXECUTE_ACTION => meta(Focus::Input, true, false),
            _ if FACADE_READS.contains(&tool) => meta(Focus::None, false, false),
            _ => meta(Focus::None, true, false),
        })
    })
}

/// The capability upstream's platform rule gives `tool` for `app_id`:
/// backend, modes, interference and confidence follow the tool's
/// catalogue entry.
///
/// `unfocused`: the desktop performs this tool without input and without
/// the focus ([`super::backend::DesktopBackend::acts_unfocused`]), so it
/// interferes with nothing and may run in the background.
pub(crate) fn capability(tool: &str, meta: ToolMeta, app_id: &str, unfocused: bool) -> Value {
    let interference = if unfocused {
        "none"
    } else if meta.moves_cursor || meta.physical_input {
        "moves_physical_pointer"
    } else if meta.requires_focus {
        "takes_foreground"
    } else if meta.virtual_pointer {
        "visual_overlay_only"
    } else {
        "none"
    };
    let backend = match (counterpart(tool), meta.focus) {
        (tool::FILESYSTEM, _) => "filesystem",
        (tool::REGISTRY, _) => "registry",
        (tool::PROCESS_KILL, _) => "process",
        (_, Focus::Input) => "physical_input",
        (_, Focus::Ax) => "ax",
        (_, Focus::Scripting) => "scripting",
        (_, Focus::None) => "none",
    };
    let mut modes = vec!["shadow"];
    if !meta.mutates
        || unfocused
        || (meta.focus == Focus::None
            && !meta.requires_focus
            && !meta.physical_input
            && !meta.moves_cursor)
    {
        modes.push("background");
    }
    if meta.mutates {
        modes.push("foreground");
    }
    json!({
        "appId": app_id,
        "operation": tool,
        "backend": backend,
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

/// Names that mark a field as holding a secret (the library's list, which
/// the approval page masks by too).
pub(crate) use adk_computer_use::contracts::names_a_secret;

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
        tool::SET_VALUE | tool::FILL_FORM if sensitive_field(args) => {
            class("secret_access", false, true)
        }
        tool::SET_VALUE | tool::FILL_FORM => class("edit_reversible", true, true),
        tool::READ_CLIPBOARD => class("secret_access", false, false),
        tool::WRITE_CLIPBOARD => class("edit_reversible", true, false),
        tool::WRITE_FILE => class("edit_reversible", true, true),
        tool::DELETE_FILE => class("destructive", false, true),
        tool::SEND_EMAIL | tool::NOTIFICATION => class("communicate_external", false, true),
        tool::RUN_SCRIPT => class("privilege_change", false, true),
        tool::DESTROY_SPACE => class("destructive", false, true),
        tool::TYPE | tool::KEY | tool::HOLD_KEY | tool::MULTI_EDIT => {
            class("edit_reversible", true, true)
        }
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
pub(crate) fn decide(config: &Config, envelope: &Value) -> Decision {
    let text = |key: &str| envelope.get(key).and_then(Value::as_str).unwrap_or("");
    let class = text("actionClass");
    let one = |decision, reason: String| Decision {
        decision,
        reasons: vec![reason],
    };
    let tool = text("tool");
    if config.disabled_tools.contains(tool) {
        return one("deny", format!("disabled_tool:{tool}"));
    }
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
    if config.confirm_tools.contains(tool) {
        return one("confirm", format!("confirm_tool:{tool}"));
    }
    let external = envelope.get("externalSideEffect") == Some(&Value::Bool(true));
    let labelled = envelope
        .get("dataLabels")
        .and_then(Value::as_array)
        .is_some_and(|labels| {
            labels
                .iter()
                .any(|l| l == DataLabel::Credential.as_str() || l == DataLabel::Payment.as_str())
        });
    let confirm_class =
        CONFIRM_CLASSES.contains(&class) && !(class == "destructive" && config.allow_destructive);
    let app = envelope
        .pointer("/target/appId")
        .or_else(|| envelope.pointer("/resource/targetAppId"))
        .and_then(Value::as_str);
    let credential_app = app.filter(|app| {
        config
            .credential_apps
            .iter()
            .any(|c| c.eq_ignore_ascii_case(app))
    });
    if let Some(app) = credential_app {
        return one("confirm", format!("confirm_app:{app}"));
    }
    if confirm_class || (class == "edit_reversible" && external) || labelled {
        return one("confirm", format!("confirm:{class}"));
    }
    one("allow", format!("allow:{class}"))
}

/// The policy's digest: `sha256:` and the hex of its configuration.
pub(crate) fn policy_digest(config: &Config) -> String {
    let policy = json!({
        "allowDestructive": config.allow_destructive,
        "confirmTools": config.confirm_tools,
        "credentialApps": config.credential_apps,
        "disabledTools": config.disabled_tools,
    });
    sha256_prefixed(canonical_json(&policy))
}
