//! The tools the simulator serves: upstream's v8 tool set (its property
//! names, types, enums and required lists, its annotations and metadata)
//! and the simulator's own `sim_stats`.

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
const LABELS: &[&str] = &[
    "public",
    "private",
    "credential",
    "payment",
    "health",
    "unknown",
];

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

/// How a tool is hinted to clients, and the metadata group it belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Group {
    /// Reads: read-only, idempotent.
    Read,
    /// Changes server state.
    Control,
    /// Runs an arbitrary action.
    Dynamic,
    /// The emergency stop.
    Stop,
}

/// One tool: its name, a short description, its group and its properties.
pub(crate) struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub group: Group,
    props: &'static [Prop],
}

const fn tool(
    name: &'static str,
    description: &'static str,
    group: Group,
    props: &'static [Prop],
) -> ToolSpec {
    ToolSpec {
        name,
        description,
        group,
        props,
    }
}

/// Every tool, in upstream's order, then the simulator's own.
pub(crate) const TOOLS: &[ToolSpec] = &[
    tool(
        "onboarding",
        "Guided setup, one step at a time.",
        Group::Control,
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
        "start_session",
        "Start a session.",
        Group::Control,
        &[
            opt("objective", Ty::Str),
            opt("execution_group_id", Ty::Str),
            TOKEN,
        ],
    ),
    tool(
        "get_session",
        "Read a session.",
        Group::Read,
        &[req("session_id", Ty::Str)],
    ),
    tool(
        "pause_session",
        "Pause a session.",
        Group::Control,
        LIFECYCLE,
    ),
    tool(
        "resume_session",
        "Resume a paused session.",
        Group::Control,
        LIFECYCLE,
    ),
    tool(
        "take_over",
        "Hand the desktop to the person.",
        Group::Control,
        LIFECYCLE,
    ),
    tool("stop_session", "Stop a session.", Group::Control, LIFECYCLE),
    tool(
        "approve_action",
        "Grant approval for a previewed action.",
        Group::Control,
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
        "complete_session",
        "Complete a session with evidence.",
        Group::Control,
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
        "get_session_events",
        "Read a session's events.",
        Group::Read,
        PAGE,
    ),
    tool(
        "submit_follow_up",
        "Add an instruction to a session.",
        Group::Control,
        &[
            req("session_id", Ty::Str),
            req("instruction", Ty::StrLen(1, 16_384)),
            TOKEN,
        ],
    ),
    tool(
        "get_follow_ups",
        "Read a session's follow-ups.",
        Group::Read,
        PAGE,
    ),
    tool(
        "delete_session",
        "Delete a terminal session.",
        Group::Control,
        &[
            req("session_id", Ty::Str),
            req("confirm", Ty::Const(true)),
            TOKEN,
        ],
    ),
    tool(
        "prune_sessions",
        "Delete old terminal sessions.",
        Group::Control,
        &[
            req("older_than", Ty::Str),
            opt("limit", Ty::Int(Lo::Gt(0), Some(1000))),
            req("confirm", Ty::Const(true)),
            TOKEN,
        ],
    ),
    tool(
        "reserve_target",
        "Reserve a target for an intent.",
        Group::Control,
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
        "release_target_reservation",
        "Release a reservation.",
        Group::Control,
        &[
            req("session_id", Ty::Str),
            req("reservation_id", Ty::Str),
            TOKEN,
        ],
    ),
    tool(
        "get_execution_capabilities",
        "What a tool can do, and how.",
        Group::Read,
        &[req("tool", Ty::Str), opt("app_id", Ty::Str)],
    ),
    tool(
        "get_certification_trace",
        "Read a certification trace.",
        Group::Read,
        &[req("certification_id", CERT)],
    ),
    tool(
        "preview_action",
        "Bind an action and decide whether it may run.",
        Group::Read,
        action_props!(opt("action_id", Ty::Str)),
    ),
    tool(
        "execute_action",
        "Run one action.",
        Group::Dynamic,
        action_props!(req("action_id", Ty::Str), opt("lease_id", Ty::Str), TOKEN),
    ),
    tool(
        "acquire_control_lease",
        "Take, or wait for, the one-writer lease.",
        Group::Control,
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
        "release_control_lease",
        "Release the lease.",
        Group::Control,
        &[req("lease_id", Ty::Str), TOKEN],
    ),
    tool(
        "emergency_stop",
        "Revoke control and refuse queued writers.",
        Group::Stop,
        &[opt("reason", Ty::Str), TOKEN],
    ),
];

/// The simulator's own counters: not part of the protocol, so never
/// listed, and answered only when the server was started with them
/// ([`crate::Config::stats`]).
pub(crate) const STATS: ToolSpec = tool(
    "sim_stats",
    "The simulator's own counters (not part of the protocol).",
    Group::Read,
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
