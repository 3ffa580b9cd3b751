//! The tools the simulator serves: upstream's v8 tool set (its property
//! names, types, enums and required lists, its annotations and metadata)
//! and the simulator's own `sim_stats`.

use adk_computer_use::contracts::DataLabel;
use adk_computer_use::contracts::catalogue::protocol::{self, ProtocolTool};
use serde_json::{Map, Value, json};

use super::schema::{Lo, Prop, Ty, check_props, is_cert_id, is_sha256, object_schema, opt, req};

const CERT: Ty = Ty::Pattern("^cert_[a-f0-9]{32}$", is_cert_id);
const SHA256: Ty = Ty::Pattern("^sha256:[a-f0-9]{64}$", is_sha256);
const POSITIVE: Ty = Ty::Int(Lo::Gt(0), None);
const TTL: Ty = Ty::Int(Lo::Gt(0), Some(300_000));
const MODES: &[&str] = &["shadow", "background", "foreground"];
const PLATFORMS: &[&str] = &[
    "darwin", "win32", "linux", "aix", "android", "freebsd", "haiku", "openbsd", "sunos", "cygwin",
    "netbsd",
];
const LABELS: &[&str] = &DataLabel::NAMES;

const BOUNDS: &[Prop] = &[
    req("x", Ty::Num(None, None)),
    req("y", Ty::Num(None, None)),
    req("width", Ty::Num(Some(0.0), None)),
    req("height", Ty::Num(Some(0.0), None)),
];

const TARGET: &[Prop] = &[
    req("platform", Ty::Enum(PLATFORMS)),
    req("app_id", Ty::Str),
    opt("pid", Ty::Int(Lo::Safe, None)),
    opt("window_id", Ty::StrOrNum),
    opt("window_title_digest", Ty::Str),
    opt("display_id", Ty::Str),
    opt("role", Ty::Str),
    opt("label_digest", Ty::Str),
    opt("bounds", Ty::Obj(BOUNDS)),
    req("observation_id", Ty::Str),
    opt("screenshot_hash", Ty::Str),
    opt("ui_tree_revision", Ty::Str),
    req("confidence", Ty::Num(Some(0.0), Some(1.0))),
    req("captured_at", Ty::Str),
];

const POSTCONDITIONS: &[&[Prop]] = &[
    &[
        req("kind", Ty::Lit("ui_element")),
        opt("role", Ty::Str),
        opt("label", Ty::Str),
        req("exists", Ty::Bool),
        opt("value_digest", SHA256),
    ],
    &[
        req("kind", Ty::Lit("filesystem")),
        req("path", Ty::Str),
        req("exists", Ty::Bool),
        opt("content_digest", SHA256),
    ],
    &[
        req("kind", Ty::Lit("registry")),
        req("path", Ty::Str),
        req("name", Ty::Str),
        req("exists", Ty::Bool),
        opt("value_digest", SHA256),
    ],
    &[
        req("kind", Ty::Lit("process")),
        req("pid", POSITIVE),
        req("running", Ty::Const(false)),
    ],
    &[
        req("kind", Ty::Lit("window")),
        req("window_id", Ty::Int(Lo::Ge(0), None)),
        req("exists", Ty::Bool),
    ],
];

/// What the action touches beyond its target, when its arguments do not
/// say (an extension of upstream's request: upstream derives the resource
/// from its file tools' arguments alone, and drops this key).
const RESOURCE: &[Prop] = &[opt("filesystem_path", Ty::Str)];

const PROVENANCE: &[Prop] = &[
    req("untrusted_instruction", Ty::Bool),
    req("source_observation_ids", Ty::List(&Ty::Str)),
    opt("crosses_data_boundary", Ty::Bool),
];

/// `preview_action`'s properties; `execute_action` requires the action id
/// and adds the lease.
macro_rules! action_props {
    ($action_id:expr $(, $extra:expr)*) => {
        &[
            req("session_id", Ty::Str),
            $action_id,
            opt("attempt", POSITIVE),
            opt("execution_group_id", Ty::Str),
            opt("agent_id", Ty::Str),
            req("tool", Ty::Str),
            opt("operation", Ty::Str),
            opt("certification_id", CERT),
            req("arguments", Ty::Record),
            req("mode", Ty::Enum(MODES)),
            opt("target", Ty::Obj(TARGET)),
            opt("postcondition", Ty::Kind(POSTCONDITIONS)),
            opt("data_labels", Ty::List(&Ty::Enum(LABELS))),
            opt("provenance", Ty::Obj(PROVENANCE)),
            opt("resource", Ty::Obj(RESOURCE)),
            opt("expires_in_ms", TTL),
            opt("approval_grant_id", Ty::Str),
            $($extra,)*
        ]
    };
}

const TOKEN: Prop = opt("approval_token", Ty::Str);
const PAGE: &[Prop] = &[
    req("session_id", Ty::Str),
    opt("after_sequence", Ty::Int(Lo::Ge(0), None)),
    opt("limit", Ty::Int(Lo::Gt(0), Some(1000))),
];
const LIFECYCLE: &[Prop] = &[req("session_id", Ty::Str), opt("reason", Ty::Str), TOKEN];
const COMPLETION_ITEM: &[Prop] = &[
    req("description", Ty::Str),
    req("satisfied", Ty::Bool),
    opt("evidence_hash", Ty::Str),
];
const ONBOARDING_ACTIONS: &[&str] = &[
    "start",
    "status",
    "diagnose",
    "test_capture",
    "show_pointer",
    "confirm_pointer",
    "test_pointer",
    "test_semantic",
    "acknowledge_emergency",
    "configure",
    "complete",
];

pub(crate) use adk_computer_use::contracts::catalogue::protocol::Group;

/// One tool: its name, a short description, its group and its properties.
pub(crate) struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub group: Group,
    props: &'static [Prop],
}

const fn tool(entry: ProtocolTool, description: &'static str, props: &'static [Prop]) -> ToolSpec {
    ToolSpec {
        name: entry.name,
        description,
        group: entry.group,
        props,
    }
}

/// Every tool, in upstream's order, then the simulator's own.
pub(crate) const TOOLS: &[ToolSpec] = &[
    tool(
        protocol::ONBOARDING,
        "Guided setup, one step at a time.",
        &[
            req("action", Ty::Enum(ONBOARDING_ACTIONS)),
            opt("onboarding_id", Ty::Str),
            opt("coordinate", Ty::Pair),
            opt("confirmed_by_user", Ty::Bool),
            opt("acknowledged_by_user", Ty::Bool),
            opt("window_id", Ty::Int(Lo::Safe, None)),
            opt("filesystem_roots", Ty::List(&Ty::Str)),
            opt("allowed_app_ids", Ty::List(&Ty::Str)),
            opt("allow_scrape", Ty::Bool),
            opt("persist_audit", Ty::Bool),
            TOKEN,
        ],
    ),
    tool(
        protocol::START_SESSION,
        "Start a session.",
        &[
            opt("objective", Ty::Str),
            opt("execution_group_id", Ty::Str),
            TOKEN,
        ],
    ),
    tool(
        protocol::GET_SESSION,
        "Read a session.",
        &[req("session_id", Ty::Str)],
    ),
    tool(protocol::PAUSE_SESSION, "Pause a session.", LIFECYCLE),
    tool(
        protocol::RESUME_SESSION,
        "Resume a paused session.",
        LIFECYCLE,
    ),
    tool(
        protocol::TAKE_OVER,
        "Hand the desktop to the person.",
        LIFECYCLE,
    ),
    tool(protocol::STOP_SESSION, "Stop a session.", LIFECYCLE),
    tool(
        protocol::APPROVE_ACTION,
        "Grant approval for a previewed action.",
        &[
            req("session_id", Ty::Str),
            req("action_id", Ty::Str),
            opt("ttl_ms", Ty::Int(Lo::Ge(1_000), Some(300_000))),
            opt("scope", Ty::Enum(&["exact_action", "session_operation"])),
            opt("uses", Ty::Int(Lo::Ge(1), Some(20))),
            TOKEN,
        ],
    ),
    tool(
        protocol::COMPLETE_SESSION,
        "Complete a session with evidence.",
        &[
            req("session_id", Ty::Str),
            req("summary", Ty::Str),
            req("postconditions", Ty::List(&Ty::Obj(COMPLETION_ITEM))),
            opt("last_app_id", Ty::Str),
            opt("last_window_id", Ty::StrOrNum),
            req("action_counts", Ty::Counts),
            opt("reason", Ty::Str),
            TOKEN,
        ],
    ),
    tool(
        protocol::GET_SESSION_EVENTS,
        "Read a session's events.",
        PAGE,
    ),
    tool(
        protocol::SUBMIT_FOLLOW_UP,
        "Add an instruction to a session.",
        &[
            req("session_id", Ty::Str),
            req("instruction", Ty::StrLen(1, 16_384)),
            TOKEN,
        ],
    ),
    tool(
        protocol::GET_FOLLOW_UPS,
        "Read a session's follow-ups.",
        PAGE,
    ),
    tool(
        protocol::DELETE_SESSION,
        "Delete a terminal session.",
        &[
            req("session_id", Ty::Str),
            req("confirm", Ty::Const(true)),
            TOKEN,
        ],
    ),
    tool(
        protocol::PRUNE_SESSIONS,
        "Delete old terminal sessions.",
        &[
            req("older_than", Ty::Str),
            opt("limit", Ty::Int(Lo::Gt(0), Some(1000))),
            req("confirm", Ty::Const(true)),
            TOKEN,
        ],
    ),
    tool(
        protocol::RESERVE_TARGET,
        "Reserve a target for an intent.",
        &[
            req("session_id", Ty::Str),
            req("intent_id", Ty::Str),
            opt("execution_group_id", Ty::Str),
            opt("agent_id", Ty::Str),
            req("app_id", Ty::Str),
            opt("window_id", Ty::StrOrNum),
            req("ttl_ms", TTL),
            TOKEN,
        ],
    ),
    tool(
        protocol::RELEASE_TARGET_RESERVATION,
        "Release a reservation.",
        &[
            req("session_id", Ty::Str),
            req("reservation_id", Ty::Str),
            TOKEN,
        ],
    ),
    tool(
        protocol::GET_EXECUTION_CAPABILITIES,
        "What a tool can do, and how.",
        &[req("tool", Ty::Str), opt("app_id", Ty::Str)],
    ),
    tool(
        protocol::GET_CERTIFICATION_TRACE,
        "Read a certification trace.",
        &[req("certification_id", CERT)],
    ),
    tool(
        protocol::PREVIEW_ACTION,
        "Bind an action and decide whether it may run.",
        action_props!(opt("action_id", Ty::Str)),
    ),
    tool(
        protocol::EXECUTE_ACTION,
        "Run one action.",
        action_props!(req("action_id", Ty::Str), opt("lease_id", Ty::Str), TOKEN),
    ),
    tool(
        protocol::ACQUIRE_CONTROL_LEASE,
        "Take, or wait for, the one-writer lease.",
        &[
            req("session_id", Ty::Str),
            opt("agent_id", Ty::Str),
            req("kind", Ty::Enum(&["cooperative", "exclusive"])),
            req("mode", Ty::Enum(&["background", "foreground"])),
            req("ttl_ms", TTL),
            req("action_budget", Ty::Int(Lo::Gt(0), Some(10_000))),
            opt("priority", Ty::Int(Lo::Safe, None)),
            opt("app_ids", Ty::List(&Ty::Str)),
            opt("window_ids", Ty::List(&Ty::StrOrNum)),
            opt("display_ids", Ty::List(&Ty::Str)),
            TOKEN,
        ],
    ),
    tool(
        protocol::RELEASE_CONTROL_LEASE,
        "Release the lease.",
        &[req("lease_id", Ty::Str), TOKEN],
    ),
    tool(
        protocol::EMERGENCY_STOP,
        "Revoke control and refuse queued writers.",
        &[opt("reason", Ty::Str), TOKEN],
    ),
];

/// The simulator's own counters: not part of the protocol, so never
/// listed, and answered only when the server was started with them
/// ([`crate::Config::stats`]).
const SIM_STATS: ProtocolTool = ProtocolTool {
    name: "sim_stats",
    group: Group::Read,
};

/// The server's own counters, answered only when configured
/// ([`crate::Config::stats`]).
pub(crate) const STATS: ToolSpec = tool(
    SIM_STATS,
    "The simulator's own counters (not part of the protocol).",
    &[],
);

/// The listed tool named `name`.
pub(crate) fn find(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
}

impl ToolSpec {
    /// The published input schema.
    pub(crate) fn input_schema(&self) -> Map<String, Value> {
        let mut schema = object_schema(self.props);
        schema.insert(
            "$schema".into(),
            json!("http://json-schema.org/draft-07/schema#"),
        );
        schema
    }

    /// `readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`.
    pub(crate) fn hints(&self) -> [bool; 4] {
        match self.group {
            Group::Read => [true, false, true, false],
            Group::Control => [false, false, false, false],
            Group::Dynamic => [false, false, false, true],
            Group::Stop => [false, true, true, false],
        }
    }

    /// The `_meta` upstream publishes with the tool.
    pub(crate) fn meta(&self) -> Map<String, Value> {
        let (focus, mutates, requires_focus, cursor, pointer, physical, tier) = match self.group {
            Group::Read => ("none", false, false, false, false, false, "core"),
            Group::Dynamic => ("cgevent", true, true, true, true, true, "core"),
            Group::Control | Group::Stop => ("none", true, false, false, false, false, "core"),
        };
        let meta = json!({
            "computer-use/focusRequired": focus,
            "computer-use/mutates": mutates,
            "computer-use/requiresFocus": requires_focus,
            "computer-use/movesUserCursor": cursor,
            "computer-use/usesVirtualPointer": pointer,
            "computer-use/physicalInput": physical,
            "computer-use/tier": tier,
        });
        match meta {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    /// Checks `args` against the table: `Err` is the text of the invalid
    /// params error (`MCP error -32602: ...`) the server answers with.
    pub(crate) fn check(&self, args: &Map<String, Value>) -> Result<(), String> {
        let mut issues = Vec::new();
        check_props(self.props, args, "", &mut issues);
        if issues.is_empty() {
            return Ok(());
        }
        Err(format!(
            "MCP error -32602: Input validation error: Invalid arguments for tool {}: {}",
            self.name,
            issues.join("\n")
        ))
    }
}
