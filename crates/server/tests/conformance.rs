//! Conformance: the bundled simulator answers like upstream's v8 server.
//!
//! One list of scenarios (the whole tool surface, its refusals, replay,
//! approval and the session lifecycle) is played, call by call, against
//! `computer-use-server` and against upstream's server. Each answer is reduced
//! to its shape: keys, JSON types, and the values that are protocol rather
//! than data (states, statuses, codes, decisions, modes, event types, flags),
//! with ids and timestamps ignored. The shapes must agree, except where a
//! line of [`EXPLAINED`] says why they may not.
//!
//! Upstream's shapes are recorded in `tests/fixtures/conformance/upstream.json`
//! so a plain clone checks the simulator against them. With
//! `ADK_UPSTREAM_SERVER=<command>` the suite also plays every scenario
//! against that server and fails when it does not answer, when its shapes
//! differ from the recording, or when the simulator differs from it.
//! `ADK_CONFORMANCE_RECORD=1` (with the server) rewrites the recording.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use adk_computer_use::digest::sha256_hex;
use adk_computer_use::mcp::rmcp;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Map, Value, json};

const RECORDING: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/conformance/upstream.json"
);
const PRINCIPAL: &str = "local-user";

/// Differences that are understood, each with its reason: (scenario, path
/// prefix, why). `*` matches every scenario.
/// A prefix `*x` matches any path that ends with `x`.
const EXPLAINED: &[(&str, &str, &str)] = &[
    (
        "tools",
        "*description",
        "tool and property descriptions are prose a model reads: ours are written in this project \
         (saying what each tool does and what each argument is), not copied from upstream",
    ),
    (
        "tools",
        "inputSchema.properties.resource",
        "the action's resource context (`resource.filesystem_path`) is this server's extension, \
         listed so a caller sees the argument it accepts; upstream's schema does not list it",
    ),
];

/// Values kept as they are: protocol vocabulary, not data.
const LITERAL_KEYS: &[&str] = &[
    "state",
    "status",
    "error",
    "type",
    "decision",
    "kind",
    "executionMode",
    "requestedMode",
    "actionClass",
    "operation",
    "tool",
    "mode",
    "from",
    "to",
    "waitingReason",
    "supportedModes",
    "dataLabels",
    "interference",
    "verificationSource",
    "schemaVersion",
    "phase",
    "backend",
];

/// Subtrees that belong to the desktop behind the server, not to the
/// server: a tool's own output. The simulated desktop is not upstream's
/// fake desktop (other apps, other outputs), so these are not compared.
const DESKTOP_OWNED: &[&str] = &["output", "receipt.result", "details.output"];

// ---------------------------------------------------------------------------
// Peers
// ---------------------------------------------------------------------------

type Client = rmcp::service::RunningService<rmcp::RoleClient, ()>;

/// A server to play scenarios against, and the desktop facts its
/// scenarios need (its app, window and a valid target evidence).
struct Peer {
    name: &'static str,
    command: Vec<String>,
    app: &'static str,
    window: u64,
    target: Value,
}

fn sim_peer() -> Peer {
    use computer_use_server::{CLIPBOARD_APP, CLIPBOARD_WINDOW, SimulatedDesktop};
    let desktop = SimulatedDesktop::default();
    Peer {
        name: "simulator",
        command: vec![
            env!("CARGO_BIN_EXE_computer-use-server").to_owned(),
            "--principal".into(),
            PRINCIPAL.into(),
        ],
        app: CLIPBOARD_APP,
        window: CLIPBOARD_WINDOW,
        target: json!({
            "pid": 4101,
            "window_title_digest": sha256_hex("Clipboard"),
            "display_id": "1",
            "screenshot_hash": desktop.screenshot_hash(),
            "ui_tree_revision": format!("tree-{CLIPBOARD_WINDOW}-1"),
        }),
    }
}

fn upstream_peer() -> Option<Peer> {
    let line = std::env::var("ADK_UPSTREAM_SERVER").ok()?;
    let command: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    (!command.is_empty()).then(|| Peer {
        name: "upstream",
        command,
        // Upstream's DeterministicFakeDesktop: one window, documented state.
        app: "app.fake",
        window: 7,
        target: json!({
            "pid": 4242,
            "window_title_digest": sha256_hex("Fake Document"),
            "display_id": "display-1",
            "screenshot_hash": "sha256:fake-screen-1",
            "ui_tree_revision": "fake-tree-1",
        }),
    })
}

impl Peer {
    async fn connect(&self) -> Client {
        let mut command = tokio::process::Command::new(&self.command[0]);
        command
            .args(&self.command[1..])
            .env("COMPUTER_USE_PRINCIPAL_ID", PRINCIPAL)
            .env("COMPUTER_USE_ACTIVE_PROFILE", "v8-safe")
            .env("V8_PEER_QUIET", "1")
            .stderr(std::process::Stdio::null());
        let transport = rmcp::transport::TokioChildProcess::new(command).unwrap_or_else(|err| {
            panic!("{}: could not start {:?}: {err}", self.name, self.command)
        });
        match tokio::time::timeout(std::time::Duration::from_secs(60), ().serve(transport)).await {
            Ok(Ok(client)) => client,
            Ok(Err(err)) => panic!("{}: MCP handshake failed: {err}", self.name),
            Err(_) => panic!("{}: no MCP handshake within 60 s", self.name),
        }
    }

    fn target(&self, now: &str) -> Value {
        let mut target = json!({
            "platform": "linux",
            "app_id": self.app,
            "window_id": self.window,
            "observation_id": "conformance-observation",
            "confidence": 1,
            "captured_at": now,
        });
        for (key, value) in self.target.as_object().unwrap() {
            target[key] = value.clone();
        }
        target
    }
}

/// One answer, as the wire gave it: a tool result (error or not) or an
/// MCP error.
async fn call(client: &Client, tool: &str, arguments: Value) -> Value {
    let Value::Object(arguments) = arguments else {
        panic!("{tool}: arguments must be an object")
    };
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    let answer = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        client.peer().call_tool(params),
    )
    .await
    .unwrap_or_else(|_| panic!("{tool}: no answer within 30 s"));
    match answer {
        Err(rmcp::ServiceError::McpError(error)) => json!({ "mcpError": error.code.0 }),
        Err(other) => panic!("{tool}: transport failed: {other}"),
        Ok(result) => {
            let text: String = result
                .content
                .iter()
                .filter_map(|block| block.as_text().map(|t| t.text.clone()))
                .collect();
            let body = match result.structured_content {
                Some(structured) => structured,
                None => match serde_json::from_str::<Value>(&text) {
                    Ok(parsed) => parsed,
                    // Upstream answers an argument that fails its schema
                    // with an error result whose text carries the code.
                    Err(_) if text.starts_with("MCP error -32602") => json!({ "mcpError": -32602 }),
                    Err(_) => json!({ "text": "" }),
                },
            };
            json!({ "isError": result.is_error.unwrap_or(false), "body": body })
        }
    }
}

// ---------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------

/// One call: a label, a tool, arguments in which a string `"$name"` stands
/// for a saved variable, and values to save from the answer (JSON pointers
/// into the body).
struct Step {
    label: &'static str,
    tool: &'static str,
    args: Value,
    save: &'static [(&'static str, &'static str)],
}

fn step(label: &'static str, tool: &'static str, args: Value) -> Step {
    Step {
        label,
        tool,
        args,
        save: &[],
    }
}

fn saving(mut step: Step, save: &'static [(&'static str, &'static str)]) -> Step {
    step.save = save;
    step
}

fn start() -> Step {
    saving(
        step(
            "start",
            "start_session",
            json!({ "objective": "conformance", "execution_group_id": "group-c" }),
        ),
        &[("session", "/session/sessionId")],
    )
}

fn events() -> Step {
    step(
        "events",
        "get_session_events",
        json!({ "session_id": "$session" }),
    )
}

fn write(action_id: &'static str) -> Value {
    json!({
        "session_id": "$session", "action_id": action_id, "tool": "write_clipboard",
        "arguments": { "text": "conformance" }, "mode": "background",
        "agent_id": "agent-a", "target": "$target", "data_labels": ["public"],
    })
}

fn with(mut value: Value, key: &str, extra: Value) -> Value {
    value[key] = extra;
    value
}

fn reserve(intent: &str, agent: &str) -> Value {
    json!({ "session_id": "$session", "intent_id": intent, "app_id": "$app",
            "window_id": "$window", "ttl_ms": 30000, "agent_id": agent })
}

fn lease(agent: &str) -> Value {
    json!({ "session_id": "$session", "kind": "cooperative", "mode": "background",
            "ttl_ms": 30000, "action_budget": 1, "agent_id": agent,
            "app_ids": ["$app"], "window_ids": ["$window"] })
}

fn scenarios() -> Vec<(&'static str, Vec<Step>)> {
    vec![
        (
            "lifecycle",
            vec![
                start(),
                step("get", "get_session", json!({ "session_id": "$session" })),
                step(
                    "pause",
                    "pause_session",
                    json!({ "session_id": "$session", "reason": "coffee" }),
                ),
                step(
                    "get paused",
                    "get_session",
                    json!({ "session_id": "$session" }),
                ),
                step(
                    "resume",
                    "resume_session",
                    json!({ "session_id": "$session" }),
                ),
                step(
                    "take over",
                    "take_over",
                    json!({ "session_id": "$session" }),
                ),
                step(
                    "resume again",
                    "resume_session",
                    json!({ "session_id": "$session" }),
                ),
                step(
                    "follow up",
                    "submit_follow_up",
                    json!({ "session_id": "$session", "instruction": "and then" }),
                ),
                step(
                    "follow ups",
                    "get_follow_ups",
                    json!({ "session_id": "$session" }),
                ),
                step(
                    "complete",
                    "complete_session",
                    json!({ "session_id": "$session", "summary": "done",
                            "postconditions": [], "action_counts": {} }),
                ),
                step(
                    "stop after complete",
                    "stop_session",
                    json!({ "session_id": "$session" }),
                ),
                events(),
                step(
                    "delete",
                    "delete_session",
                    json!({ "session_id": "$session", "confirm": true }),
                ),
                step(
                    "get deleted",
                    "get_session",
                    json!({ "session_id": "$session" }),
                ),
                step(
                    "prune",
                    "prune_sessions",
                    json!({ "older_than": "$now", "confirm": true }),
                ),
            ],
        ),
        (
            "stop",
            vec![
                start(),
                step(
                    "stop",
                    "stop_session",
                    json!({ "session_id": "$session", "reason": "enough" }),
                ),
                step(
                    "resume stopped",
                    "resume_session",
                    json!({ "session_id": "$session" }),
                ),
                events(),
                step(
                    "emergency stop",
                    "emergency_stop",
                    json!({ "reason": "drill" }),
                ),
            ],
        ),
        (
            "surface",
            vec![
                start(),
                step(
                    "capabilities",
                    "get_execution_capabilities",
                    json!({ "tool": "write_clipboard" }),
                ),
                step(
                    "capabilities of an app",
                    "get_execution_capabilities",
                    json!({ "tool": "write_clipboard", "app_id": "$app" }),
                ),
                step(
                    "capabilities of a read",
                    "get_execution_capabilities",
                    json!({ "tool": "snapshot" }),
                ),
                step(
                    "capabilities of a tree read",
                    "get_execution_capabilities",
                    json!({ "tool": "get_ui_tree" }),
                ),
                step(
                    "capabilities of a click",
                    "get_execution_capabilities",
                    json!({ "tool": "left_click" }),
                ),
                step(
                    "capabilities of the filesystem",
                    "get_execution_capabilities",
                    json!({ "tool": "filesystem" }),
                ),
                step(
                    "preview a provider action",
                    "preview_action",
                    json!({ "session_id": "$session", "tool": "openai_computer",
                            "arguments": {}, "mode": "foreground" }),
                ),
                step(
                    "preview typing",
                    "preview_action",
                    json!({ "session_id": "$session", "tool": "type",
                            "arguments": { "text": "x" }, "mode": "foreground",
                            "target": "$target" }),
                ),
                step(
                    "preview a key chord",
                    "preview_action",
                    json!({ "session_id": "$session", "tool": "key",
                            "arguments": { "text": "ctrl+c" }, "mode": "foreground",
                            "target": "$target" }),
                ),
                step(
                    "preview a scroll",
                    "preview_action",
                    json!({ "session_id": "$session", "tool": "scroll",
                            "arguments": { "coordinate": [1, 1], "direction": "down", "amount": 1 },
                            "mode": "foreground", "target": "$target" }),
                ),
                step(
                    "preview a write into a credential app",
                    "preview_action",
                    json!({ "session_id": "$session", "tool": "write_clipboard",
                            "arguments": { "text": "x" }, "mode": "background",
                            "target": { "platform": "linux", "app_id": "com.apple.keychainaccess",
                                        "window_id": 1, "observation_id": "o", "confidence": 1,
                                        "captured_at": "$now" },
                            "data_labels": ["public"] }),
                ),
                step(
                    "preview a tool outside the catalogue",
                    "preview_action",
                    json!({ "session_id": "$session", "tool": "no_such_tool",
                            "arguments": {}, "mode": "shadow" }),
                ),
                step("onboarding", "onboarding", json!({ "action": "status" })),
                step(
                    "certification",
                    "get_certification_trace",
                    json!({ "certification_id": format!("cert_{}", "0".repeat(32)) }),
                ),
                step(
                    "unknown session",
                    "get_session",
                    json!({ "session_id": "no-such-session" }),
                ),
                step(
                    "null argument",
                    "start_session",
                    json!({ "objective": null }),
                ),
                step("missing argument", "get_session", json!({})),
                step(
                    "enum outside",
                    "acquire_control_lease",
                    with(lease("agent-a"), "kind", json!("weird")),
                ),
                events(),
            ],
        ),
        (
            "observation",
            vec![
                start(),
                step(
                    "list windows",
                    "execute_action",
                    json!({ "session_id": "$session", "action_id": "observe-1",
                            "tool": "list_windows", "arguments": {}, "mode": "shadow" }),
                ),
                step(
                    "snapshot",
                    "execute_action",
                    json!({ "session_id": "$session", "action_id": "observe-2",
                            "tool": "snapshot", "arguments": {}, "mode": "shadow" }),
                ),
                step(
                    "shadow without an action id",
                    "execute_action",
                    json!({ "session_id": "$session", "tool": "snapshot",
                            "arguments": {}, "mode": "shadow" }),
                ),
                step(
                    "shadow secret read",
                    "execute_action",
                    json!({ "session_id": "$session", "action_id": "observe-3",
                            "tool": "read_clipboard", "arguments": {}, "mode": "shadow" }),
                ),
                step(
                    "shadow mutation",
                    "execute_action",
                    json!({ "session_id": "$session", "action_id": "observe-4",
                            "tool": "write_clipboard", "arguments": { "text": "x" },
                            "mode": "shadow" }),
                ),
                events(),
            ],
        ),
        (
            "action",
            vec![
                start(),
                step("preview", "preview_action", write("act-1")),
                saving(
                    step("reserve", "reserve_target", reserve("act-1", "agent-a")),
                    &[("reservation", "/reservation/reservationId")],
                ),
                step(
                    "reserve held by another agent",
                    "reserve_target",
                    reserve("act-2", "agent-b"),
                ),
                step(
                    "reserve again by the holder",
                    "reserve_target",
                    reserve("act-3", "agent-a"),
                ),
                saving(
                    step("lease", "acquire_control_lease", lease("agent-a")),
                    &[("lease", "/lease/leaseId")],
                ),
                step(
                    "execute",
                    "execute_action",
                    with(write("act-1"), "lease_id", json!("$lease")),
                ),
                step(
                    "replay",
                    "execute_action",
                    with(write("act-1"), "lease_id", json!("$lease")),
                ),
                step(
                    "spent lease",
                    "execute_action",
                    with(write("act-4"), "lease_id", json!("$lease")),
                ),
                step("execute without a lease", "execute_action", write("act-5")),
                step(
                    "release lease",
                    "release_control_lease",
                    json!({ "lease_id": "$lease" }),
                ),
                step(
                    "release lease again",
                    "release_control_lease",
                    json!({ "lease_id": "$lease" }),
                ),
                step(
                    "release reservation",
                    "release_target_reservation",
                    json!({ "session_id": "$session", "reservation_id": "$reservation" }),
                ),
                step(
                    "release reservation again",
                    "release_target_reservation",
                    json!({ "session_id": "$session", "reservation_id": "$reservation" }),
                ),
                events(),
            ],
        ),
        (
            "approval",
            vec![
                start(),
                step(
                    "preview a secret read",
                    "preview_action",
                    json!({ "session_id": "$session", "action_id": "read-1",
                            "tool": "read_clipboard", "arguments": {}, "mode": "background",
                            "agent_id": "agent-a", "target": "$target" }),
                ),
                saving(
                    step(
                        "approve",
                        "approve_action",
                        json!({ "session_id": "$session", "action_id": "read-1" }),
                    ),
                    &[("grant", "/grant/grantId")],
                ),
                step(
                    "preview with the grant",
                    "preview_action",
                    json!({ "session_id": "$session", "action_id": "read-1",
                            "tool": "read_clipboard", "arguments": {}, "mode": "background",
                            "agent_id": "agent-a", "target": "$target",
                            "approval_grant_id": "$grant" }),
                ),
                saving(
                    step("lease", "acquire_control_lease", lease("agent-a")),
                    &[("lease", "/lease/leaseId")],
                ),
                step(
                    "execute with the grant",
                    "execute_action",
                    json!({ "session_id": "$session", "action_id": "read-1",
                            "tool": "read_clipboard", "arguments": {}, "mode": "background",
                            "agent_id": "agent-a", "target": "$target",
                            "approval_grant_id": "$grant", "lease_id": "$lease" }),
                ),
                step(
                    "release lease",
                    "release_control_lease",
                    json!({ "lease_id": "$lease" }),
                ),
                step(
                    "approve an unknown action",
                    "approve_action",
                    json!({ "session_id": "$session", "action_id": "never-previewed" }),
                ),
                events(),
            ],
        ),
    ]
}

// ---------------------------------------------------------------------------
// Playing and shaping
// ---------------------------------------------------------------------------

fn substitute(value: &Value, vars: &BTreeMap<String, Value>) -> Value {
    match value {
        Value::String(text) if text.starts_with('$') => vars
            .get(&text[1..])
            .cloned()
            .unwrap_or_else(|| panic!("no variable {text}")),
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, vars)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute(v, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The shape of an answer: keys and types, literal protocol values.
fn shape(value: &Value, key: &str, path: &str) -> Value {
    if DESKTOP_OWNED.iter().any(|owned| path.ends_with(owned)) {
        return json!("<desktop>");
    }
    let literal = LITERAL_KEYS.contains(&key);
    match value {
        Value::Null => json!("null"),
        Value::Bool(flag) => json!(flag),
        Value::Number(number) if literal => json!(number),
        Value::Number(_) => json!("number"),
        Value::String(text) if literal => json!(format!("={text}")),
        Value::String(_) => json!("string"),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| shape(item, key, &format!("{path}[{i}]")))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let child = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    (k.clone(), shape(v, k, &child))
                })
                .collect::<Map<_, _>>(),
        ),
    }
}

type Played = BTreeMap<String, Vec<(String, Value)>>;

async fn play(peer: &Peer) -> Played {
    let mut played = Played::new();
    for (name, steps) in scenarios() {
        let client = peer.connect().await;
        let now = adk_computer_use::clock::format_rfc3339(time::OffsetDateTime::now_utc()).unwrap();
        let mut vars = BTreeMap::from([
            ("app".to_owned(), json!(peer.app)),
            ("window".to_owned(), json!(peer.window)),
            ("target".to_owned(), peer.target(&now)),
            ("now".to_owned(), json!(now)),
        ]);
        let mut shapes = Vec::new();
        for step in steps {
            let args = substitute(&step.args, &vars);
            let answer = call(&client, step.tool, args).await;
            for (var, pointer) in step.save {
                let saved = answer["body"].pointer(pointer).cloned().unwrap_or_else(|| {
                    panic!(
                        "{}: {name}/{}: no {pointer} in {answer}",
                        peer.name, step.label
                    )
                });
                vars.insert((*var).to_owned(), saved);
            }
            shapes.push((step.label.to_owned(), shape(&answer, "", "")));
        }
        let _ = client.cancel().await;
        played.insert(name.to_owned(), shapes);
    }
    played
}

/// Every difference between two shapes, as `path: left vs right`.
fn differences(left: &Value, right: &Value, path: &str, out: &mut Vec<String>) {
    match (left, right) {
        (Value::Object(l), Value::Object(r)) => {
            for key in l.keys().chain(r.keys().filter(|k| !l.contains_key(*k))) {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match (l.get(key), r.get(key)) {
                    (Some(a), Some(b)) => differences(a, b, &child, out),
                    (Some(a), None) => out.push(format!("{child}: {a} vs (absent)")),
                    (None, Some(b)) => out.push(format!("{child}: (absent) vs {b}")),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(l), Value::Array(r)) if l.len() == r.len() => {
            for (i, (a, b)) in l.iter().zip(r).enumerate() {
                differences(a, b, &format!("{path}[{i}]"), out);
            }
        }
        (Value::Array(l), Value::Array(r)) => {
            let types = |items: &Vec<Value>| -> Vec<String> {
                items
                    .iter()
                    .map(|item| {
                        item.get("type")
                            .map_or_else(|| "?".to_owned(), Value::to_string)
                    })
                    .collect()
            };
            out.push(format!(
                "{path}: {} items {:?} vs {} items {:?}",
                l.len(),
                types(l),
                r.len(),
                types(r)
            ));
        }
        (a, b) if a != b => out.push(format!("{path}: {a} vs {b}")),
        _ => {}
    }
}

fn explained(scenario: &str, path: &str) -> Option<&'static str> {
    EXPLAINED
        .iter()
        .find(|(s, prefix, _)| {
            (*s == "*" || *s == scenario)
                && match prefix.strip_prefix('*') {
                    Some(suffix) => path.ends_with(suffix),
                    None => path.starts_with(prefix),
                }
        })
        .map(|(_, _, why)| *why)
}

/// Unexplained differences between two plays, one line each.
fn compare(left_name: &str, left: &Played, right_name: &str, right: &Played) -> Vec<String> {
    let mut unexplained = Vec::new();
    for (scenario, steps) in right {
        let Some(mine) = left.get(scenario) else {
            unexplained.push(format!("{scenario}: not played by {left_name}"));
            continue;
        };
        for (i, (label, theirs)) in steps.iter().enumerate() {
            let Some((_, ours)) = mine.get(i) else {
                unexplained.push(format!("{scenario}/{label}: not played by {left_name}"));
                continue;
            };
            let mut found = Vec::new();
            differences(ours, theirs, "", &mut found);
            for line in found {
                let path = line.split(':').next().unwrap_or_default();
                if explained(scenario, path).is_none() {
                    unexplained.push(format!(
                        "{scenario}/{label}: {line}   [{left_name} vs {right_name}]"
                    ));
                }
            }
        }
    }
    unexplained
}

fn to_json(played: &Played) -> Value {
    Value::Object(
        played
            .iter()
            .map(|(scenario, steps)| {
                (
                    scenario.clone(),
                    Value::Array(
                        steps
                            .iter()
                            .map(|(label, shape)| json!({ "step": label, "shape": shape }))
                            .collect(),
                    ),
                )
            })
            .collect(),
    )
}

fn from_json(value: &Value) -> Played {
    value
        .as_object()
        .expect("the recording is an object of scenarios")
        .iter()
        .map(|(scenario, steps)| {
            let steps = steps
                .as_array()
                .expect("a scenario is a list of steps")
                .iter()
                .map(|s| (s["step"].as_str().unwrap().to_owned(), s["shape"].clone()))
                .collect();
            (scenario.clone(), steps)
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The tool surface and the JSON-RPC layer, as raw wire
// ---------------------------------------------------------------------------

/// A peer spoken to in raw JSON-RPC lines, so what rmcp's types would drop
/// (a tool's `execution`, an error's code) is seen as sent.
struct Raw {
    child: tokio::process::Child,
    input: tokio::process::ChildStdin,
    output: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    next: u64,
}

impl Raw {
    async fn start(peer: &Peer) -> Self {
        use std::process::Stdio;
        let mut child = tokio::process::Command::new(&peer.command[0])
            .args(&peer.command[1..])
            .env("COMPUTER_USE_PRINCIPAL_ID", PRINCIPAL)
            .env("COMPUTER_USE_ACTIVE_PROFILE", "v8-safe")
            .env("V8_PEER_QUIET", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("{}: could not start: {e}", peer.name));
        let input = child.stdin.take().unwrap();
        let output = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(
            child.stdout.take().unwrap(),
        ));
        let mut raw = Self {
            child,
            input,
            output,
            next: 0,
        };
        raw.request(
            "initialize",
            json!({ "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": { "name": "conformance", "version": "0" } }),
        )
        .await;
        raw.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
        raw
    }

    async fn send(&mut self, message: Value) {
        use tokio::io::AsyncWriteExt;
        let line = format!("{message}\n");
        self.input.write_all(line.as_bytes()).await.unwrap();
        self.input.flush().await.unwrap();
    }

    /// Sends two calls in one write, so the server reads them together and
    /// serves them at once; their answers' structured parts, in order.
    async fn race(&mut self, first: (&str, Value), second: (&str, Value)) -> (Value, Value) {
        use tokio::io::AsyncWriteExt;
        let (a, b) = (self.next + 1, self.next + 2);
        self.next += 2;
        let line = |id: u64, (name, arguments): (&str, Value)| {
            json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": { "name": name, "arguments": arguments } })
            .to_string()
        };
        let both = format!("{}\n{}\n", line(a, first), line(b, second));
        self.input.write_all(both.as_bytes()).await.unwrap();
        self.input.flush().await.unwrap();
        let mut answers = BTreeMap::new();
        while answers.len() < 2 {
            let line = self.output.next_line().await.unwrap().unwrap();
            let message: Value = serde_json::from_str(&line).unwrap();
            if let Some(id) = message["id"].as_u64().filter(|id| *id == a || *id == b) {
                answers.insert(id, message["result"]["structuredContent"].clone());
            }
        }
        (answers.remove(&a).unwrap(), answers.remove(&b).unwrap())
    }

    /// A tool call's structured answer.
    async fn call(&mut self, name: &str, arguments: Value) -> Value {
        let answer = self
            .request(
                "tools/call",
                json!({ "name": name, "arguments": arguments }),
            )
            .await;
        answer["result"]["structuredContent"].clone()
    }

    /// A session with an action previewed and a lease for it: the
    /// execute's arguments and the lease.
    async fn leased(&mut self, peer: &Peer, action_id: &str) -> (Value, Value) {
        let now = adk_computer_use::clock::format_rfc3339(time::OffsetDateTime::now_utc()).unwrap();
        let session = self
            .call("start_session", json!({ "objective": "race" }))
            .await["session"]["sessionId"]
            .clone();
        let action = json!({
            "session_id": session, "action_id": action_id, "tool": "write_clipboard",
            "arguments": { "text": "race" }, "mode": "background", "agent_id": "agent-a",
            "target": peer.target(&now), "data_labels": ["public"],
        });
        self.call("preview_action", action.clone()).await;
        let lease = self
            .call(
                "acquire_control_lease",
                json!({ "session_id": session, "kind": "cooperative", "mode": "background",
                        "ttl_ms": 30000, "action_budget": 1, "agent_id": "agent-a",
                        "app_ids": [peer.app], "window_ids": [peer.window] }),
            )
            .await["lease"]
            .clone();
        let mut execute = action;
        execute["lease_id"] = lease["leaseId"].clone();
        (execute, lease)
    }

    /// The whole JSON-RPC answer to one request.
    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        loop {
            let line =
                tokio::time::timeout(std::time::Duration::from_secs(30), self.output.next_line())
                    .await
                    .unwrap_or_else(|_| panic!("{method}: no answer within 30 s"))
                    .unwrap()
                    .unwrap_or_else(|| panic!("{method}: the peer closed its output"));
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }
}

/// Every value kept as it is (strings marked `=`): the surface is all
/// protocol.
fn literal(value: &Value) -> Value {
    match value {
        Value::String(text) => json!(format!("={text}")),
        Value::Array(items) => Value::Array(items.iter().map(literal).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), literal(v))).collect())
        }
        other => other.clone(),
    }
}

/// The tool list, tool by tool, and how the JSON-RPC layer answers what
/// the scenarios cannot send: arguments that are not an object, a tool of
/// upstream's catalogue outside the v8 surface, the simulator's counters,
/// a name no one knows.
async fn surface(peer: &Peer) -> Played {
    let mut raw = Raw::start(peer).await;
    let listed = raw.request("tools/list", json!({})).await;
    let mut tools: Vec<(String, Value)> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{}: tools/list answered {listed}", peer.name))
        .iter()
        .map(|tool| {
            (
                tool["name"].as_str().unwrap_or("?").to_owned(),
                literal(tool),
            )
        })
        .collect();
    tools.sort_by(|a, b| a.0.cmp(&b.0));
    let mut wire = Vec::new();
    for (label, name, arguments) in [
        ("arguments that are a list", "get_session", json!([])),
        ("a catalogue tool outside v8", "screenshot", json!({})),
        ("the simulator's counters", "sim_stats", json!({})),
        ("an unknown tool", "no_such_tool", json!({})),
    ] {
        let answer = raw
            .request(
                "tools/call",
                json!({ "name": name, "arguments": arguments }),
            )
            .await;
        // An error's code is protocol, its message prose; a result's text
        // is compared whole.
        let reduced = match answer.get("error") {
            Some(error) => json!({ "error": error["code"] }),
            None => json!({
                "isError": answer["result"]["isError"],
                "text": literal(&answer["result"]["content"][0]["text"]),
            }),
        };
        wire.push((label.to_owned(), reduced));
    }
    // An execute and, at the same moment, a release of its lease or a
    // pause of its session: the execute is refused before its effect.
    let mut races = Vec::new();
    let (execute, lease) = raw.leased(peer, "race-release").await;
    let release = json!({ "lease_id": lease["leaseId"] });
    let (executed, released) = raw
        .race(
            ("execute_action", execute),
            ("release_control_lease", release),
        )
        .await;
    races.push((
        "execute racing a release".to_owned(),
        json!([shape(&executed, "", ""), shape(&released, "", "")]),
    ));
    let (execute, _) = raw.leased(peer, "race-pause").await;
    let pause = json!({ "session_id": execute["session_id"], "reason": "race" });
    let (executed, paused) = raw
        .race(("execute_action", execute), ("pause_session", pause))
        .await;
    races.push((
        "execute racing a pause".to_owned(),
        json!([shape(&executed, "", ""), shape(&paused, "", "")]),
    ));
    let _ = raw.child.kill().await;
    Played::from([
        ("tools".to_owned(), tools),
        ("wire".to_owned(), wire),
        ("races".to_owned(), races),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulator_answers_like_upstream() {
    let recorded: Played = from_json(
        &serde_json::from_str(
            &std::fs::read_to_string(RECORDING).expect("the recording of upstream's shapes"),
        )
        .expect("the recording is JSON"),
    );
    let mut sim = play(&sim_peer()).await;
    sim.extend(surface(&sim_peer()).await);
    let mut unexplained = compare("simulator", &sim, "upstream (recorded)", &recorded);
    if let Some(upstream) = upstream_peer() {
        let mut live = play(&upstream).await;
        live.extend(surface(&upstream).await);
        if std::env::var("ADK_CONFORMANCE_RECORD").is_ok_and(|v| v == "1") {
            let text = serde_json::to_string_pretty(&to_json(&live)).unwrap();
            std::fs::write(RECORDING, text + "\n").unwrap();
            eprintln!("recorded upstream's shapes in {RECORDING}");
        } else {
            let stale = compare("upstream (live)", &live, "upstream (recorded)", &recorded);
            assert!(
                stale.is_empty(),
                "upstream's live answers differ from the recording (re-record with ADK_CONFORMANCE_RECORD=1):\n{}",
                stale.join("\n")
            );
        }
        unexplained.extend(compare("simulator", &sim, "upstream (live)", &live));
    } else {
        eprintln!(
            "ADK_UPSTREAM_SERVER is not set: the simulator was compared with upstream's recorded shapes only"
        );
    }
    let steps: usize = sim.values().map(Vec::len).sum();
    eprintln!(
        "conformance: {} scenarios, {steps} calls, {} unexplained differences, {} explained kinds",
        sim.len(),
        unexplained.len(),
        EXPLAINED.len()
    );
    assert!(
        unexplained.is_empty(),
        "{} unexplained differences:\n{}",
        unexplained.len(),
        unexplained.join("\n")
    );
}

/// An execute and its duplicate, sent at once on one connection: the
/// duplicate finds the first's receipt pending and is answered
/// `indeterminate`, as upstream answers it when the two meet inside its
/// execution (upstream's own answer depends on timing, so this is checked
/// on the simulator only); the action took effect once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_racing_its_action_finds_it_pending() {
    let peer = sim_peer();
    let mut raw = Raw::start(&peer).await;
    for round in 0..5 {
        let (execute, lease) = raw.leased(&peer, &format!("race-duplicate-{round}")).await;
        let (first, second) = raw
            .race(
                ("execute_action", execute.clone()),
                ("execute_action", execute),
            )
            .await;
        assert_eq!(first["receipt"]["status"], "committed", "{first}");
        assert_eq!(second["error"], "indeterminate", "{second}");
        assert_eq!(
            second["message"],
            "prior execution may have crossed the side-effect boundary"
        );
        // A spent lease stays active until released: the next round's
        // acquire would wait for it.
        raw.call(
            "release_control_lease",
            json!({ "lease_id": lease["leaseId"] }),
        )
        .await;
    }
    let _ = raw.child.kill().await;
}
