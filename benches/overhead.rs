//! What governance costs, measured against the same runtime calls made raw
//! in the same run (no timed assertions: the figures are printed).
//!
//! `cargo bench --bench overhead`
//!
//! 1. In process: the whole chain for one action against a no-op runtime,
//!    versus the same runtime calls made raw with no checks (three
//!    observations, preview, reserve, lease, execute, two releases), with
//!    the heap allocations per action of each side counted.
//! 2. Over MCP stdio to the simulator: the chain versus the same tool
//!    calls (capabilities once per session, two observations, preview,
//!    reserve, lease, execute, then one page of session events for the
//!    server's own check and both releases together).
//! 3. Concurrency: 1, 8 and 64 agents against one simulator.
//! 4. With `--features x11` and a display (`$DISPLAY`): one observation
//!    round on the real display (the frame's bytes, `snapshot` and
//!    `get_ui_tree` times), then governed clipboard writes against the same
//!    calls made raw, through `computer-use-server --desktop x11` (`OVERHEAD_PART=x11`
//!    runs only this part). With `--features wayland` and a compositor
//!    (`$WAYLAND_DISPLAY`, a wlroots one with `$SWAYSOCK`): the same,
//!    through `computer-use-server --desktop wayland`, on a native Wayland
//!    zenity window (`OVERHEAD_PART=wayland` runs only this part).
//! 5. With `OVERHEAD_SERVER` (upstream's `serve.sh`): the round trips of one
//!    governed action counted on the wire, governed against raw on that
//!    server, and with `OVERHEAD_REFBENCH=<refbench-mcp>` (built from
//!    `../shared/refbench`) upstream's crate and ours on the same server
//!    command, taking turns, with their ratio.
//!
//! Every MCP part against the simulator and upstream's server measures both
//! lease shapes: a lease per action (`Session::run`) and one task lease for
//! a stretch of actions (`Session::run_under`), each against the same calls
//! made raw in the same shape; against upstream's crate, both shapes take
//! turns with it.
//!
//! Knobs, all optional: `OVERHEAD_CALL_TIMES=1` prints how long each kind of
//! call was in flight on both sides; `OVERHEAD_AA=1` replaces the raw side
//! of the MCP parts with a second governed session (an A/A run: what the
//! method reads between two identical sides); `OVERHEAD_PART=in-process` (or `mcp`) runs one part;
//! `OVERHEAD_SHAPE=task` (or `per-action`) measures one lease shape over MCP;
//! `OVERHEAD_ONE_SIDE=governed` (or `raw`) runs one side of the first timed
//! part reached once (pick the part with `OVERHEAD_PART`; over MCP,
//! `OVERHEAD_ONE_SIDE_ACTIONS` actions, 100 unless told), prints its time
//! and this process's CPU time per action, and exits, for a profiler such
//! as `perf` or `valgrind --tool=callgrind`;
//! `OVERHEAD_ONE_SIDE_TRANSPORT=adapter` makes the raw side of that run
//! speak through the adapter's transport instead of rmcp's;
//! `OVERHEAD_SHOW_ROUNDS=1` prints every round.
//!
//! Over MCP the raw side is measured twice in every round: through rmcp's
//! own child-process transport (what a plain rmcp client makes the calls
//! with; the ratio the aims read) and through the adapter's transport, the
//! one the governed side speaks through (what the governance alone costs).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod in_process;

use in_process::{NoopRuntime, bench_action, raw_in_process, session};

use std::sync::Arc;
use std::time::{Duration, Instant};

use adk_computer_use::auth::{ScopeAuthorizer, VerifiedIdentity};
use adk_computer_use::chain::{ChainOutcome, Session, TaskLease, TaskLeaseTerms};
use adk_computer_use::contracts::*;
use adk_computer_use::mcp::{
    ChildTransport, ComputerUseMcpRuntime, CountedTransport, McpRuntimeConfig, RoundTrips,
    decode_tool_result, rmcp,
};
use adk_computer_use::runtime::*;
use computer_use_server::{CLIPBOARD_APP, CLIPBOARD_WINDOW};
use serde_json::{Map, Value, json};

use adk_computer_use_testkit::child::PRINCIPAL;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[samples.len() / 2]
}

/// Runs `rounds` rounds of both measurements, alternating which goes first
/// so neither always meets a warmer cache or a busier server. Returns the
/// medians (governed, raw) and the median of the per-round ratios: the two
/// halves of a round run back to back, so their ratio is the least disturbed
/// by a neighbour that slows the whole machine for a while.
fn alternate(
    rounds: usize,
    mut governed: impl FnMut() -> f64,
    mut raw: impl FnMut() -> f64,
) -> (f64, f64, f64) {
    let (mut a, mut b, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let (g, r) = if round % 2 == 0 {
            let g = governed();
            (g, raw())
        } else {
            let r = raw();
            (governed(), r)
        };
        a.push(g);
        b.push(r);
        ratios.push(g / r);
        if std::env::var_os("OVERHEAD_SHOW_ROUNDS").is_some() {
            println!(
                "  round {round:>2}: governed {g:>10.0} ns | raw {r:>10.0} ns | ratio {:.3}",
                g / r
            );
        }
    }
    (median(a), median(b), median(ratios))
}

/// Prints one round when `OVERHEAD_SHOW_ROUNDS` is set.
fn show_round(round: usize, governed: f64, raw: f64) {
    if std::env::var_os("OVERHEAD_SHOW_ROUNDS").is_some() {
        println!(
            "  round {round:>2}: governed {governed:>10.0} ns | raw {raw:>10.0} ns | ratio {:.3}",
            governed / raw
        );
    }
}

/// With `OVERHEAD_ONE_SIDE` set, runs that side once, prints it, and exits:
/// one side alone is what a profiler should see. The CPU time printed is
/// this process's alone (every thread's, not the server's), so the two
/// sides' own work can be compared where their wall times cannot.
fn one_side(actions: usize, governed: impl FnOnce() -> f64, raw: impl FnOnce() -> f64) {
    let Ok(side) = std::env::var("OVERHEAD_ONE_SIDE") else {
        return;
    };
    let before = process_cpu_ns();
    let ns = match side.as_str() {
        "governed" => governed(),
        "raw" => raw(),
        other => panic!("OVERHEAD_ONE_SIDE is governed or raw, not {other:?}"),
    };
    let cpu = match (before, process_cpu_ns()) {
        (Some(before), Some(after)) => format!(
            "{:.0} ns/action of this process's CPU",
            after.saturating_sub(before) as f64 / actions as f64
        ),
        _ => "CPU time unavailable (no /proc/self/task)".to_owned(),
    };
    println!("{side} alone: {ns:.0} ns/action over {actions} actions; {cpu}");
    std::process::exit(0);
}

/// This process's CPU time so far, in nanoseconds: the sum over its
/// threads of the kernel's scheduler count (`/proc/self/task/*/schedstat`,
/// nanosecond-exact where `/proc/self/stat` counts 10 ms ticks). `None`
/// where the kernel does not say.
fn process_cpu_ns() -> Option<u64> {
    let mut total = 0u64;
    for thread in std::fs::read_dir("/proc/self/task").ok()? {
        let thread = thread.ok()?;
        let line = std::fs::read_to_string(thread.path().join("schedstat")).ok()?;
        total += line.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// Whether `OVERHEAD_SHAPE` (unset: both) asks for `shape`.
fn shape_wanted(shape: Shape) -> bool {
    match std::env::var("OVERHEAD_SHAPE").as_deref() {
        Ok("task") => shape == Shape::Task,
        Ok("per-action") => shape == Shape::PerAction,
        Ok(other) => panic!("OVERHEAD_SHAPE is task or per-action, not {other:?}"),
        Err(_) => true,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

// ---- 1. in process ----------------------------------------------------------

fn in_process(rt: &tokio::runtime::Runtime) -> f64 {
    const N: usize = 10_000;
    let action = bench_action();
    let runtime = Arc::new(NoopRuntime::new(&action));
    let session = rt.block_on(async { session(Arc::clone(&runtime), "agent") });
    let scope = ObservationScope::default();
    let governed = || {
        let start = Instant::now();
        rt.block_on(async {
            for _ in 0..N {
                match session.run(action.clone()).await.unwrap() {
                    ChainOutcome::Completed(done) => assert!(done.performed()),
                    _ => unreachable!(),
                }
            }
        });
        start.elapsed().as_nanos() as f64 / N as f64
    };
    let raw = || {
        let start = Instant::now();
        rt.block_on(async {
            for _ in 0..N {
                raw_in_process(&runtime, &action, &scope).await;
            }
        });
        start.elapsed().as_nanos() as f64 / N as f64
    };
    one_side(N, governed, raw);
    let (governed, raw, ratio) = alternate(21, governed, raw);
    println!(
        "in process  | governed chain {governed:>9.0} ns/action | raw calls {raw:>9.0} ns/action | ratio {ratio:.2}x"
    );
    ratio
}

// ---- 2. over MCP stdio ------------------------------------------------------------

fn obj(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A plain MCP client of its own simulator, with no governance at all: the
/// raw floor. (The adapter's own raw call speaks read-only tools only.)
struct RawClient {
    service: rmcp::service::RunningService<rmcp::RoleClient, ()>,
    session_id: String,
    /// Where the last read of the session's events stopped.
    events_after: std::sync::Mutex<u64>,
    /// Whether the capabilities were asked for once (a session may reuse
    /// them, as the governed runtime does).
    capabilities_known: std::sync::atomic::AtomicBool,
    /// Under a task lease, the lease this client holds for the current
    /// stretch of actions.
    lease: Option<Value>,
}

/// Which transport a raw client speaks through.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RawTransport {
    /// rmcp's own child-process transport: what a plain rmcp client uses.
    Rmcp,
    /// The adapter's (`mcp::ChildTransport`): the same one the governed
    /// side speaks through, so the difference is the governance alone.
    Adapter,
}

impl RawClient {
    /// A raw client speaking through `through`, its calls counted (and
    /// timed) into `trips` when given.
    async fn spawn_through(
        server: &Server,
        trips: Option<&RoundTrips>,
        through: RawTransport,
    ) -> Self {
        let command = server.command();
        let service = match through {
            RawTransport::Rmcp => {
                serve_counted(
                    rmcp::transport::TokioChildProcess::new(command).unwrap(),
                    trips,
                )
                .await
            }
            RawTransport::Adapter => {
                serve_counted(ChildTransport::spawn(command).unwrap(), trips).await
            }
        };
        let mut client = Self {
            service,
            session_id: String::new(),
            events_after: std::sync::Mutex::new(0),
            capabilities_known: std::sync::atomic::AtomicBool::new(false),
            lease: None,
        };
        let answer = client
            .tool(
                "start_session",
                json!({ "objective": "raw", "execution_group_id": "group-e2e" }),
            )
            .await;
        client.session_id = answer["session"]["sessionId"].as_str().unwrap().to_owned();
        client
    }

    async fn tool(&self, name: &'static str, arguments: Value) -> Value {
        let params = rmcp::model::CallToolRequestParams::new(name).with_arguments(obj(arguments));
        let result = self.service.peer().call_tool(params).await.unwrap();
        decode_tool_result(name, result).unwrap().0
    }
}

/// A plain rmcp client over `transport`, its calls counted into `trips`
/// when given.
async fn serve_counted<T>(
    transport: T,
    trips: Option<&RoundTrips>,
) -> rmcp::service::RunningService<rmcp::RoleClient, ()>
where
    T: rmcp::transport::Transport<rmcp::RoleClient, Error = std::io::Error> + 'static,
{
    use rmcp::ServiceExt;
    match trips {
        None => ().serve(transport).await.unwrap(),
        Some(trips) => ().serve(CountedTransport::new(transport, trips.clone())).await.unwrap(),
    }
}

/// The same tool calls the adapter makes for one chain, with no checks:
/// with a lease of its own, or under `task`, a lease taken for many.
async fn raw_mcp(client: &RawClient, server: &Server, id: &str, task: Option<&Value>) {
    let session_id = client.session_id.as_str();
    let (app, window) = (server.app(), json!(server.window()));
    let shadow = |tool: &str, arguments: Value| json!({ "session_id": session_id, "action_id": format!("{id}-{tool}"), "tool": tool, "arguments": arguments, "mode": "shadow" });
    let capabilities = async {
        // Asked for once, then reused, as the governed runtime does.
        if !client
            .capabilities_known
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            client
                .tool(
                    "get_execution_capabilities",
                    json!({ "tool": "write_clipboard", "app_id": app }),
                )
                .await;
        }
    };
    let (_, visual, semantic) = tokio::join!(
        capabilities,
        client.tool(
            "execute_action",
            shadow("snapshot", json!({ "target_window_id": window }))
        ),
        client.tool(
            "execute_action",
            shadow("get_ui_tree", json!({ "window_id": window, "app_id": app }))
        ),
    );
    let action = server.action(id);
    let target = match action.target.as_ref() {
        Some(target) => adk_computer_use::contracts::case::to_snake_keys(&json!(target)),
        // A real display: the evidence is what was just observed, picked
        // out with no checks.
        None => observed_target(&visual["output"], &semantic["output"]),
    };
    let mut args = json!({
        "session_id": session_id,
        "action_id": id,
        "tool": "write_clipboard",
        "arguments": action.arguments,
        "mode": "background",
        "agent_id": "agent",
        "execution_group_id": "group-e2e",
        "data_labels": ["public"],
        "target": target,
        "postcondition": action.postcondition.as_ref().map(|p| p.to_input()),
    });
    client.tool("preview_action", args.clone()).await;
    let reservation = client
        .tool("reserve_target", json!({ "session_id": session_id, "intent_id": id, "app_id": app, "window_id": window, "ttl_ms": 30000, "agent_id": "agent", "execution_group_id": "group-e2e" }))
        .await;
    let lease_id = match task {
        Some(lease_id) => lease_id.clone(),
        None => raw_lease(client, server, 1).await,
    };
    args["lease_id"] = lease_id.clone();
    client.tool("execute_action", args).await;
    // The server's own check of the action, read from its events, and the
    // releases, together (as the governed chain sends them): under a task
    // lease, the reservation's alone.
    let after = *client.events_after.lock().unwrap();
    let release_lease = async {
        if task.is_none() {
            client
                .tool("release_control_lease", json!({ "lease_id": lease_id }))
                .await;
        }
    };
    let (page, _, _) = tokio::join!(
        client.tool(
            "get_session_events",
            json!({ "session_id": session_id, "after_sequence": after, "limit": 1000 }),
        ),
        release_lease,
        client.tool("release_target_reservation", json!({ "session_id": session_id, "reservation_id": reservation["reservation"]["reservationId"] })),
    );
    *client.events_after.lock().unwrap() = page["next_sequence"].as_u64().unwrap_or(after);
}

/// A raw lease of `budget` actions on the server's target: its id.
async fn raw_lease(client: &RawClient, server: &Server, budget: usize) -> Value {
    let (app, window) = (server.app(), json!(server.window()));
    let lease = client
        .tool("acquire_control_lease", json!({ "session_id": client.session_id, "kind": "cooperative", "mode": "background", "ttl_ms": if budget == 1 { 30000 } else { 300000 }, "action_budget": budget, "agent_id": "agent", "app_ids": [app], "window_ids": [window] }))
        .await;
    lease["lease"]["leaseId"].clone()
}

/// Target evidence from a snapshot and a UI tree's answers, taken as they
/// are (the raw side checks nothing).
fn observed_target(visual: &Value, semantic: &Value) -> Value {
    let window = &semantic["window"];
    let mut target = json!({
        "platform": std::env::consts::OS,
        "app_id": window["bundleId"],
        "window_id": window["windowId"],
        "pid": window["pid"],
        "window_title_digest": window["title"].as_str().map(adk_computer_use::digest::sha256_hex),
        // A display id the window gives as a string is that string; a
        // number is written out.
        "display_id": window["displayId"].as_str().map_or_else(|| window["displayId"].to_string(), str::to_owned),
        "bounds": window["bounds"],
        "observation_id": semantic["observationId"],
        "screenshot_hash": visual["screenshotHash"],
        "ui_tree_revision": semantic["uiTreeRevision"],
        "confidence": 1,
        "captured_at": adk_computer_use::clock::format_rfc3339(time::OffsetDateTime::now_utc()).unwrap(),
    });
    // What the window does not say (a pid it never set) is left out.
    if let Value::Object(map) = &mut target {
        map.retain(|_, value| !value.is_null());
    }
    target
}

/// Which server the MCP part measures against.
enum Server {
    /// The bundled simulator.
    Sim,
    /// Upstream's server, started by this command line (`OVERHEAD_SERVER`).
    Upstream(Vec<String>),
    /// The bundled server on the real X11 display (`--x11`), acting on the
    /// window with this id (an `xmessage` the benchmark shows).
    #[cfg_attr(not(feature = "x11"), allow(dead_code))]
    X11(u64),
    /// The bundled server on the Wayland compositor (`--desktop wayland`),
    /// acting on the window with this id (a zenity the benchmark shows).
    #[cfg_attr(not(feature = "wayland"), allow(dead_code))]
    Wayland(u64),
}

impl Server {
    fn command(&self) -> tokio::process::Command {
        match self {
            Self::Sim => {
                let mut command =
                    tokio::process::Command::new(adk_computer_use_testkit::binary::path(
                        adk_computer_use_testkit::binary::SERVER,
                    ));
                command.arg("--principal").arg(PRINCIPAL);
                command
            }
            Self::X11(_) => {
                let mut command =
                    tokio::process::Command::new(adk_computer_use_testkit::binary::path(
                        adk_computer_use_testkit::binary::SERVER,
                    ));
                command
                    .arg("--principal")
                    .arg(PRINCIPAL)
                    .args(["--desktop", "x11"]);
                command
            }
            Self::Wayland(_) => {
                let mut command =
                    tokio::process::Command::new(adk_computer_use_testkit::binary::path(
                        adk_computer_use_testkit::binary::SERVER,
                    ));
                command
                    .arg("--principal")
                    .arg(PRINCIPAL)
                    .args(["--desktop", "wayland"])
                    // Nothing is kept on the clipboard past the benchmark.
                    .env("COMPUTER_USE_CLIPBOARD_KEEPER", "off");
                command
            }
            Self::Upstream(parts) => {
                let mut command = tokio::process::Command::new(&parts[0]);
                command
                    .args(&parts[1..])
                    .env("COMPUTER_USE_PRINCIPAL_ID", UPSTREAM_PRINCIPAL)
                    .env("COMPUTER_USE_ACTIVE_PROFILE", "v8-safe")
                    .env("V8_PEER_QUIET", "1");
                command
            }
        }
    }

    fn principal(&self) -> &'static str {
        match self {
            Self::Sim | Self::X11(_) | Self::Wayland(_) => PRINCIPAL,
            Self::Upstream(_) => UPSTREAM_PRINCIPAL,
        }
    }

    fn app(&self) -> &'static str {
        match self {
            Self::Sim => CLIPBOARD_APP,
            Self::Upstream(_) => "app.fake",
            Self::X11(_) => X11_APP,
            Self::Wayland(_) => WAYLAND_APP,
        }
    }

    fn window(&self) -> u64 {
        match self {
            Self::Sim => CLIPBOARD_WINDOW,
            Self::Upstream(_) => 7,
            Self::X11(window) | Self::Wayland(window) => *window,
        }
    }

    /// "Put this text on the clipboard", with a digest postcondition, aimed
    /// at the server's own desktop.
    fn action(&self, id: &str) -> ProposedAction {
        let mut action = adk_computer_use_testkit::child::write_clipboard(id, id, true);
        if let Self::X11(_) | Self::Wayland(_) = self {
            // The session derives the evidence from what it observed.
            action.target = None;
        }
        if let (Self::Upstream(_), Some(target)) = (self, action.target.as_mut()) {
            // Upstream's fake desktop, as it documents itself.
            target.app_id = "app.fake".into();
            target.pid = Some(4242);
            target.window_id = Some(WindowId::Number(7));
            target.window_title_digest =
                Some(adk_computer_use::digest::sha256_hex("Fake Document"));
            target.display_id = Some("display-1".into());
            target.screenshot_hash = Some("sha256:fake-screen-1".into());
            target.ui_tree_revision = Some("fake-tree-1".into());
        }
        action
    }

    async fn governed(&self) -> (Arc<ComputerUseMcpRuntime>, Session<ComputerUseMcpRuntime>) {
        self.governed_on(None).await
    }

    /// A governed session whose calls are counted into `trips`, when given.
    async fn governed_on(
        &self,
        trips: Option<&RoundTrips>,
    ) -> (Arc<ComputerUseMcpRuntime>, Session<ComputerUseMcpRuntime>) {
        let config = McpRuntimeConfig::new(self.principal()).capability_tool("write_clipboard");
        let runtime = match trips {
            None => ComputerUseMcpRuntime::spawn(self.command(), config)
                .await
                .unwrap(),
            Some(trips) => {
                let child = ChildTransport::spawn(self.command()).unwrap();
                ComputerUseMcpRuntime::connect(CountedTransport::new(child, trips.clone()), config)
                    .await
                    .unwrap()
            }
        };
        runtime
            .start_session(Some("bench"), Some("group-e2e"))
            .await
            .unwrap();
        let runtime = Arc::new(runtime);
        let identity = VerifiedIdentity::new(self.principal(), "tenant").unwrap();
        let authorizer =
            ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"])
                .unwrap();
        let session = Session::builder(Arc::clone(&runtime), authorizer)
            .agent_id("agent")
            .target(self.app(), Some(WindowId::Number(self.window())))
            .build()
            .unwrap();
        (runtime, session)
    }
}

const UPSTREAM_PRINCIPAL: &str = "local-user";

/// How the actions of a measurement hold the one-writer lease.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Each action acquires a lease and releases it (the default).
    PerAction,
    /// One lease for a task of many actions, each spending one.
    Task,
}

impl Shape {
    fn label(self) -> &'static str {
        match self {
            Self::PerAction => "per-action lease",
            Self::Task => "task lease",
        }
    }
}

/// The terms of a task lease for `actions` actions: the most time the
/// protocol allows, so no measurement outlives it.
fn task_terms(actions: usize) -> TaskLeaseTerms {
    TaskLeaseTerms::background(actions as u32, TaskLeaseTerms::MAX_TTL).unwrap()
}

/// Both sides of an MCP measurement: a governed session and a raw client,
/// each on a server of its own, and, under a task lease, the lease each
/// side holds for the current stretch of actions.
struct Pair<'a> {
    rt: &'a tokio::runtime::Runtime,
    server: &'a Server,
    shape: Shape,
    runtime: Arc<ComputerUseMcpRuntime>,
    session: Session<ComputerUseMcpRuntime>,
    /// The raw calls through each transport, in [`RawTransport`]'s order.
    raws: [RawClient; 2],
    task: Option<TaskLease<ComputerUseMcpRuntime>>,
    /// `OVERHEAD_AA=1`: the "raw" side is a second governed session on a
    /// server of its own, so the ratio shows what the method alone reads
    /// between two identical sides.
    twin: Option<Twin>,
}

/// A second governed session, its runtime, and its task lease.
type Twin = (
    Arc<ComputerUseMcpRuntime>,
    Session<ComputerUseMcpRuntime>,
    Option<TaskLease<ComputerUseMcpRuntime>>,
);

impl<'a> Pair<'a> {
    fn spawn(
        rt: &'a tokio::runtime::Runtime,
        server: &'a Server,
        shape: Shape,
        trips: Option<(&RoundTrips, &RoundTrips, &RoundTrips)>,
    ) -> Self {
        let (runtime, session) = rt.block_on(server.governed_on(trips.map(|t| t.0)));
        let raws = [
            (RawTransport::Rmcp, trips.map(|t| t.1)),
            (RawTransport::Adapter, trips.map(|t| t.2)),
        ]
        .map(|(through, trips)| rt.block_on(RawClient::spawn_through(server, trips, through)));
        let twin = std::env::var_os("OVERHEAD_AA").map(|_| {
            let (runtime, session) = rt.block_on(server.governed());
            (runtime, session, None)
        });
        Self {
            rt,
            server,
            shape,
            runtime,
            session,
            raws,
            task: None,
            twin,
        }
    }

    /// Under a task lease, both sides take one lease for the next
    /// `actions` actions, outside the timed part.
    fn begin(&mut self, actions: usize) {
        if self.shape == Shape::Task {
            let lease = self
                .rt
                .block_on(self.session.lease_task(task_terms(actions)))
                .unwrap();
            self.task = Some(lease);
            for raw in &mut self.raws {
                raw.lease = Some(self.rt.block_on(raw_lease(raw, self.server, actions)));
            }
            if let Some((_, session, task)) = self.twin.as_mut() {
                *task = Some(
                    self.rt
                        .block_on(session.lease_task(task_terms(actions)))
                        .unwrap(),
                );
            }
        }
    }

    /// Gives back what [`Pair::begin`] took.
    fn end(&mut self) {
        if let Some(lease) = self.task.take() {
            self.rt.block_on(lease.release()).unwrap();
        }
        if let Some(lease) = self.twin.as_mut().and_then(|twin| twin.2.take()) {
            self.rt.block_on(lease.release()).unwrap();
        }
        for raw in &mut self.raws {
            if let Some(lease_id) = raw.lease.take() {
                self.rt
                    .block_on(raw.tool("release_control_lease", json!({ "lease_id": lease_id })));
            }
        }
    }

    fn governed(&mut self, id: &str) -> f64 {
        let action = self.server.action(id);
        let start = Instant::now();
        let outcome = match self.task.as_mut() {
            Some(lease) => self.rt.block_on(self.session.run_under(lease, action)),
            None => self.rt.block_on(self.session.run(action)),
        };
        let elapsed = start.elapsed().as_nanos() as f64;
        match outcome.unwrap() {
            ChainOutcome::Completed(done) => assert!(done.outcome().is_verified()),
            _ => unreachable!(),
        }
        elapsed
    }

    /// The raw calls through rmcp's transport (or, in an A/A run, the
    /// twin's governed chain).
    fn raw(&mut self, id: &str) -> f64 {
        if let Some((_, session, task)) = self.twin.as_mut() {
            let action = self.server.action(id);
            let start = Instant::now();
            let outcome = match task.as_mut() {
                Some(lease) => self.rt.block_on(session.run_under(lease, action)),
                None => self.rt.block_on(session.run(action)),
            };
            let elapsed = start.elapsed().as_nanos() as f64;
            assert!(matches!(outcome.unwrap(), ChainOutcome::Completed(_)));
            return elapsed;
        }
        self.raw_through(RawTransport::Rmcp, id)
    }

    /// The raw calls through the adapter's transport.
    fn raw_lines(&mut self, id: &str) -> f64 {
        self.raw_through(RawTransport::Adapter, id)
    }

    fn raw_through(&mut self, through: RawTransport, id: &str) -> f64 {
        let raw = &self.raws[through as usize];
        let start = Instant::now();
        self.rt
            .block_on(raw_mcp(raw, self.server, id, raw.lease.as_ref()));
        start.elapsed().as_nanos() as f64
    }

    fn close(mut self) {
        self.end();
        let Self {
            rt,
            runtime,
            session,
            raws,
            twin,
            ..
        } = self;
        drop(session);
        rt.block_on(runtime.shutdown()).unwrap();
        if let Some((runtime, session, _)) = twin {
            drop(session);
            rt.block_on(runtime.shutdown()).unwrap();
        }
        for raw in raws {
            rt.block_on(raw.service.cancel()).unwrap();
        }
    }
}

fn over_mcp(rt: &tokio::runtime::Runtime, server: &Server, shape: Shape) -> f64 {
    // A real display is slower per action (frames are captured and encoded):
    // fewer actions, the same alternation.
    let (n, rounds) = match server {
        Server::X11(_) | Server::Wayland(_) => (20, 15),
        _ => (100, 21),
    };
    // Upstream's server (a Node process) runs faster or slower for a whole
    // run by how its process happened to warm up: each round there spawns
    // both sides' servers afresh (and warms them), so no side keeps a lucky
    // process for the whole measurement.
    let fresh = matches!(server, Server::Upstream(_));
    const WARM: usize = 30;
    // OVERHEAD_CALL_TIMES: every call of both sides timed on the wire.
    let timed = std::env::var_os("OVERHEAD_CALL_TIMES").is_some();
    let (governed_trips, raw_trips, lines_trips) =
        (RoundTrips::new(), RoundTrips::new(), RoundTrips::new());
    let trips = timed.then_some((&governed_trips, &raw_trips, &lines_trips));
    let mut pair = Pair::spawn(rt, server, shape, trips);
    if std::env::var_os("OVERHEAD_ONE_SIDE").is_some() {
        let n = std::env::var("OVERHEAD_ONE_SIDE_ACTIONS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(n);
        pair.begin(n);
        let cell = std::cell::RefCell::new(pair);
        one_side(
            n,
            || {
                (0..n)
                    .map(|i| cell.borrow_mut().governed(&format!("g-{i}")))
                    .sum::<f64>()
                    / n as f64
            },
            || {
                // OVERHEAD_ONE_SIDE_TRANSPORT=adapter: the raw calls
                // through the adapter's transport.
                let ours = std::env::var("OVERHEAD_ONE_SIDE_TRANSPORT").as_deref() == Ok("adapter");
                (0..n)
                    .map(|i| {
                        let id = format!("r-{i}");
                        let mut pair = cell.borrow_mut();
                        if ours {
                            pair.raw_lines(&id)
                        } else {
                            pair.raw(&id)
                        }
                    })
                    .sum::<f64>()
                    / n as f64
            },
        );
        unreachable!("one_side exits");
    }
    // Over a pipe to another process a slow stretch lasts longer than one
    // action, so the sides take turns action by action (the order rotating
    // each action): a stretch then slows all alike. Each round's ratio is
    // its governed total over a raw total; the median round is reported.
    // Two raw baselines: the calls through rmcp's own child-process
    // transport (what a plain rmcp client makes them with), and the same
    // through the adapter's transport (what the governance alone costs).
    let mut governed_totals = Vec::new();
    let (mut raw_totals, mut lines_totals) = (Vec::new(), Vec::new());
    let (mut ratios, mut lines_ratios) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        if fresh && round > 0 {
            pair.close();
            pair = Pair::spawn(rt, server, shape, trips);
        }
        let warm = if fresh || round == 0 { WARM } else { 0 };
        pair.begin(n + warm);
        for i in 0..warm {
            pair.governed(&format!("w-{round}-{i}"));
            pair.raw(&format!("wr-{round}-{i}"));
            pair.raw_lines(&format!("wl-{round}-{i}"));
        }
        let (mut g, mut r, mut l) = (0.0, 0.0, 0.0);
        for i in 0..n {
            for turn in 0..3 {
                match (i + turn) % 3 {
                    0 => g += pair.governed(&format!("g-{round}-{i}")),
                    1 => r += pair.raw(&format!("r-{round}-{i}")),
                    _ => l += pair.raw_lines(&format!("l-{round}-{i}")),
                }
            }
        }
        pair.end();
        show_round(round, g / n as f64, r / n as f64);
        governed_totals.push(g / n as f64);
        raw_totals.push(r / n as f64);
        lines_totals.push(l / n as f64);
        ratios.push(g / r);
        lines_ratios.push(g / l);
    }
    let (lo, hi) = range(&ratios);
    let (governed, raw, ratio) = (median(governed_totals), median(raw_totals), median(ratios));
    let label = match server {
        Server::Sim => "over MCP   ",
        Server::Upstream(_) => "upstream   ",
        Server::X11(_) => "x11        ",
        Server::Wayland(_) => "wayland    ",
    };
    println!(
        "{label} | {:<16} | governed chain {:>9.1} µs/action | raw calls {:>9.1} µs/action | ratio {ratio:.3}x ({lo:.3}-{hi:.3}){}",
        shape.label(),
        governed / 1e3,
        raw / 1e3,
        if fresh {
            ", fresh servers each round"
        } else {
            ""
        },
    );
    let (lines_lo, lines_hi) = range(&lines_ratios);
    println!(
        "{label} | {:<16} | raw calls through the adapter's transport {:>9.1} µs/action | governed / that {:.3}x ({lines_lo:.3}-{lines_hi:.3})",
        shape.label(),
        median(lines_totals) / 1e3,
        median(lines_ratios),
    );
    if timed {
        for (side, trips) in [
            ("governed", &governed_trips),
            ("raw", &raw_trips),
            ("raw-ours", &lines_trips),
        ] {
            for (name, count, total) in trips.waited() {
                println!(
                    "  {side:<8} {name:<36} {count:>6} calls {:>8.1} µs each",
                    total.as_secs_f64() * 1e6 / count as f64
                );
            }
        }
    }
    pair.close();
    ratio
}

/// The smallest and the largest of `values`.
fn range(values: &[f64]) -> (f64, f64) {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    (lo, hi)
}

// ---- 3b. side by side with upstream's crate ------------------------------------------

/// The critical path of one governed action on `server`, counted on the
/// wire, in each lease shape: the calls, and the rounds they took (a round
/// is a stretch with a call in flight; calls in one round ran together).
fn round_trips(rt: &tokio::runtime::Runtime, server: &Server) {
    for shape in [Shape::PerAction, Shape::Task] {
        let trips = RoundTrips::new();
        let (runtime, session) = rt.block_on(server.governed_on(Some(&trips)));
        let mut task =
            (shape == Shape::Task).then(|| rt.block_on(session.lease_task(task_terms(2))).unwrap());
        for n in 0..2 {
            trips.reset();
            let action = server.action(&format!("trips-{n}"));
            let outcome = match task.as_mut() {
                Some(lease) => rt.block_on(session.run_under(lease, action)),
                None => rt.block_on(session.run(action)),
            };
            match outcome.unwrap() {
                ChainOutcome::Completed(done) => assert!(done.performed()),
                _ => unreachable!(),
            }
        }
        let rounds = trips.rounds();
        let shown: Vec<String> = rounds.iter().map(|r| r.join(" + ")).collect();
        println!(
            "round trips | {:<16} | one governed action (capabilities already known): {} calls in {} rounds: {}",
            shape.label(),
            trips.calls(),
            rounds.len(),
            shown.join(" | ")
        );
        if let Some(lease) = task {
            trips.reset();
            rt.block_on(lease.release()).unwrap();
            println!(
                "round trips | {:<16} | per task, not per action: acquire_control_lease before, {} after",
                shape.label(),
                trips.rounds().concat().join(" + ")
            );
        }
        rt.block_on(runtime.shutdown()).unwrap();
    }
}

/// One run of upstream's crate (`refbench-mcp`, from `../shared/refbench`)
/// for `n` actions on a server of its own: its graph's median per action,
/// in microseconds.
fn upstream_crate_median(refbench: &str, parts: &[String], n: usize) -> f64 {
    let output = std::process::Command::new(refbench)
        .arg(n.to_string())
        .args(["--warmup", "3", "--only", "graph", "--"])
        .args(parts)
        .env("COMPUTER_USE_PRINCIPAL_ID", UPSTREAM_PRINCIPAL)
        .env("COMPUTER_USE_ACTIVE_PROFILE", "v8-safe")
        .env("V8_PEER_QUIET", "1")
        .output()
        .expect("OVERHEAD_REFBENCH names upstream's refbench-mcp binary");
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .find(|line| line.starts_with("graph_per_action:"))
        .and_then(|line| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix("median_us="))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("refbench-mcp printed no graph median:\n{text}"))
}

/// Ours (with a task lease, and with a lease per action) and upstream's
/// crate on the same server command, taking turns (the order rotates each
/// round), each turn on a fresh server: the median action of each, and the
/// ratios to upstream's crate, per round. Returns the median ratio of ours
/// with a task lease.
fn versus_upstream_crate(rt: &tokio::runtime::Runtime, parts: &[String], refbench: &str) -> f64 {
    const N: usize = 60;
    const ROUNDS: usize = 9;
    let server = Server::Upstream(parts.to_vec());
    let ours = |shape: Shape| {
        let (runtime, session) = rt.block_on(server.governed());
        let mut task = (shape == Shape::Task)
            .then(|| rt.block_on(session.lease_task(task_terms(N + 3))).unwrap());
        let mut samples = Vec::new();
        for i in 0..N + 3 {
            let action = server.action(&format!("vs-{i}"));
            let start = Instant::now();
            let outcome = match task.as_mut() {
                Some(lease) => rt.block_on(session.run_under(lease, action)),
                None => rt.block_on(session.run(action)),
            };
            match outcome.unwrap() {
                ChainOutcome::Completed(done) => assert!(done.outcome().is_verified()),
                _ => unreachable!(),
            }
            if i >= 3 {
                samples.push(start.elapsed().as_nanos() as f64 / 1e3);
            }
        }
        if let Some(lease) = task {
            rt.block_on(lease.release()).unwrap();
        }
        rt.block_on(runtime.shutdown()).unwrap();
        median(samples)
    };
    let (mut task, mut per_action, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
    let (mut task_ratios, mut per_action_ratios) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let (mut t, mut p, mut u) = (0.0, 0.0, 0.0);
        for turn in 0..3 {
            match (round + turn) % 3 {
                0 => t = ours(Shape::Task),
                1 => p = ours(Shape::PerAction),
                _ => u = upstream_crate_median(refbench, parts, N),
            }
        }
        println!(
            "  round {round}: ours, task lease {t:>6.0} µs | ours, per-action lease {p:>6.0} µs | upstream's crate {u:>6.0} µs | ratios {:.3} and {:.3}",
            t / u,
            p / u
        );
        task.push(t);
        per_action.push(p);
        theirs.push(u);
        task_ratios.push(t / u);
        per_action_ratios.push(p / u);
    }
    let shown = |v: &[f64]| {
        let (lo, hi) = range(v);
        format!("{:.0} µs/action ({lo:.0}-{hi:.0})", median(v.to_vec()))
    };
    let ratio = |v: &[f64]| {
        let (lo, hi) = range(v);
        format!("{:.3}x ({lo:.3}-{hi:.3})", median(v.to_vec()))
    };
    println!(
        "vs upstream | ours, task lease {} | ours, per-action lease {} | upstream's crate 2.3.0 {} | over {ROUNDS} rounds",
        shown(&task),
        shown(&per_action),
        shown(&theirs),
    );
    println!(
        "vs upstream | ratio to upstream's crate: task lease {} | per-action lease {}",
        ratio(&task_ratios),
        ratio(&per_action_ratios),
    );
    median(task_ratios)
}

// ---- 4. on a real desktop: an X11 display, a Wayland compositor ------------------

/// The app of the window the X11 part acts on.
const X11_APP: &str = "Xmessage";

/// The app of the window the Wayland part acts on.
const WAYLAND_APP: &str = "zenity";

/// The real display `$DISPLAY` names, through `computer-use-server --desktop x11`:
/// what one observation round costs (the frame's bytes and the time of
/// `snapshot` and `get_ui_tree`), then governed against raw clipboard
/// writes, as over MCP.
#[cfg(feature = "x11")]
fn on_x11(rt: &tokio::runtime::Runtime) {
    let dialog = std::process::Command::new("xmessage")
        .args(["-geometry", "+40+560", "benchmark target"])
        .spawn()
        .expect("xmessage (x11-utils) shows the window the benchmark acts on");
    on_desktop(rt, dialog, "x11", Server::X11);
}

/// The compositor `$WAYLAND_DISPLAY` names, through `computer-use-server
/// --desktop wayland`, on a native Wayland window: as [`on_x11`].
#[cfg(feature = "wayland")]
fn on_wayland(rt: &tokio::runtime::Runtime) {
    let dialog = std::process::Command::new("zenity")
        .args([
            "--info",
            "--title",
            "benchmark target",
            "--text",
            "benchmark target",
        ])
        .env("GDK_BACKEND", "wayland")
        .env_remove("DISPLAY")
        .spawn()
        .expect("zenity shows the window the benchmark acts on");
    on_desktop(rt, dialog, "wayland", Server::Wayland);
}

#[cfg(any(feature = "x11", feature = "wayland"))]
fn on_desktop(
    rt: &tokio::runtime::Runtime,
    dialog: std::process::Child,
    name: &str,
    server: fn(u64) -> Server,
) {
    struct Shown(std::process::Child);
    impl Drop for Shown {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _dialog = Shown(dialog);
    let app = server(0).app();
    let client = rt.block_on(RawClient::spawn_through(
        &server(0),
        None,
        RawTransport::Rmcp,
    ));
    let mut n = 0;
    let mut observe = |tool: &'static str, arguments: Value| {
        n += 1;
        let started = Instant::now();
        let (output, bytes) = rt.block_on(shadow(&client, n, tool, arguments));
        (output, bytes, started.elapsed().as_secs_f64() * 1e3)
    };
    // The window, once listed, and a screen that has stopped changing.
    let mut window = None;
    let mut last = None;
    for _ in 0..100 {
        let (listed, _, _) = observe("list_windows", json!({}));
        window = window.or_else(|| {
            listed["windows"]
                .as_array()?
                .iter()
                .find(|w| w["bundleId"] == app)?["windowId"]
                .as_u64()
        });
        let (frame, _, _) = observe("snapshot", json!({}));
        if window.is_some() && last.as_ref() == Some(&frame["screenshotHash"]) {
            break;
        }
        last = Some(frame["screenshotHash"].clone());
        std::thread::sleep(Duration::from_millis(200));
    }
    let window =
        window.unwrap_or_else(|| panic!("the {app} window appeared on the {name} desktop"));
    let (mut frames, mut trees, mut png_bytes) = (Vec::new(), Vec::new(), 0);
    for _ in 0..21 {
        let (_, bytes, took) = observe("snapshot", json!({}));
        frames.push(took);
        png_bytes = bytes;
        let tree = json!({ "window_id": window, "app_id": app });
        trees.push(observe("get_ui_tree", tree).2);
    }
    println!(
        "{name:<7} round | snapshot {:>6.1} ms ({png_bytes} PNG bytes) | get_ui_tree {:>5.1} ms",
        median(frames),
        median(trees)
    );
    rt.block_on(client.service.cancel()).unwrap();
    let ratio = over_mcp(rt, &server(window), Shape::PerAction);
    println!("aim         | {name} <= 1.05x: {}", ratio <= 1.05);
}

/// One shadow observation through the raw client: its output, and the
/// bytes of the images beside it (the PNG a client receives).
#[cfg(any(feature = "x11", feature = "wayland"))]
async fn shadow(client: &RawClient, n: usize, tool: &str, arguments: Value) -> (Value, usize) {
    use base64::Engine as _;
    let params = rmcp::model::CallToolRequestParams::new("execute_action").with_arguments(obj(
        json!({ "session_id": client.session_id, "action_id": format!("desktop-observe-{n}"),
                "tool": tool, "arguments": arguments, "mode": "shadow" }),
    ));
    let result = client.service.peer().call_tool(params).await.unwrap();
    let bytes = result
        .content
        .iter()
        .filter_map(|block| block.as_image())
        .filter_map(|image| {
            base64::engine::general_purpose::STANDARD
                .decode(&image.data)
                .ok()
        })
        .map(|png| png.len())
        .sum();
    let output = decode_tool_result("execute_action", result).unwrap().0;
    (output["output"].clone(), bytes)
}

// ---- 3. concurrency -------------------------------------------------------------------

fn concurrency(rt: &tokio::runtime::Runtime, agents: usize, chains_per_agent: usize) {
    let runtime = rt.block_on(adk_computer_use_testkit::child::spawn_sim(&[]));
    let start = Instant::now();
    let latencies = rt.block_on(async {
        let mut tasks = Vec::new();
        for agent in 0..agents {
            let runtime = Arc::clone(&runtime);
            tasks.push(tokio::spawn(async move {
                let session =
                    adk_computer_use_testkit::child::session(&runtime, &format!("agent-{agent}"));
                let mut latencies = Vec::new();
                for n in 0..chains_per_agent {
                    let id = format!("c-{agent}-{n}");
                    let began = Instant::now();
                    let (done, _retries) = adk_computer_use_testkit::child::run_until_done(
                        &session,
                        &id,
                        (agent * 7919 + n) as u64,
                    )
                    .await;
                    assert!(done.outcome().is_verified());
                    latencies.push(began.elapsed());
                }
                let _ = session.shutdown().await;
                latencies
            }));
        }
        let mut all = Vec::new();
        for task in tasks {
            all.extend(task.await.unwrap());
        }
        all
    });
    let elapsed = start.elapsed();
    let mut sorted = latencies;
    sorted.sort();
    let stats = rt
        .block_on(runtime.call("sim_stats", Map::new()))
        .unwrap()
        .0;
    println!(
        "{agents:>3} agents | {:>5} actions in {:>6.2} s | {:>7.1} actions/s | p50 {:>8.2} ms | p99 {:>8.2} ms | max effects/action {} | leases left {}",
        sorted.len(),
        elapsed.as_secs_f64(),
        sorted.len() as f64 / elapsed.as_secs_f64(),
        percentile(&sorted, 0.5).as_secs_f64() * 1e3,
        percentile(&sorted, 0.99).as_secs_f64() * 1e3,
        stats["maxEffectsPerAction"],
        stats["activeLeases"],
    );
    rt.block_on(runtime.shutdown()).unwrap();
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is read.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!("adk-computer-use overhead (medians; ratio = governed / raw, measured in this run)");
    let part = std::env::var("OVERHEAD_PART").unwrap_or_default();
    if part.is_empty() || part == "in-process" {
        let ratio = in_process(&rt);
        println!("aim         | in process <= 1.30x: {}", ratio <= 1.3);
    }
    if part.is_empty() || part == "mcp" {
        if shape_wanted(Shape::PerAction) {
            let ratio = over_mcp(&rt, &Server::Sim, Shape::PerAction);
            println!("aim         | over MCP <= 1.05x: {}", ratio <= 1.05);
        }
        if shape_wanted(Shape::Task) {
            let ratio = over_mcp(&rt, &Server::Sim, Shape::Task);
            println!(
                "aim         | over MCP, task lease <= 1.05x: {}",
                ratio <= 1.05
            );
        }
    }
    // OVERHEAD_SERVER: the same side-by-side measurement against another
    // server, e.g. upstream's (`../shared/v8-peer/serve.sh`).
    if let Ok(line) = std::env::var("OVERHEAD_SERVER") {
        let parts: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        if !parts.is_empty() && (part.is_empty() || part == "upstream") {
            round_trips(&rt, &Server::Upstream(parts.clone()));
            if shape_wanted(Shape::PerAction) {
                let ratio = over_mcp(&rt, &Server::Upstream(parts.clone()), Shape::PerAction);
                println!("aim         | upstream <= 1.05x: {}", ratio <= 1.05);
            }
            if shape_wanted(Shape::Task) {
                let ratio = over_mcp(&rt, &Server::Upstream(parts.clone()), Shape::Task);
                println!(
                    "aim         | upstream, task lease <= 1.05x raw: {}",
                    ratio <= 1.05
                );
            }
            // OVERHEAD_REFBENCH: upstream's crate (`refbench-mcp`, built
            // from ../shared/refbench) on the same server command.
            if let Ok(refbench) = std::env::var("OVERHEAD_REFBENCH") {
                let ratio = versus_upstream_crate(&rt, &parts, &refbench);
                println!(
                    "aim         | ours with a task lease <= 0.95x upstream's crate: {}",
                    ratio <= 0.95
                );
            }
        }
    }
    #[cfg(feature = "x11")]
    if part == "x11" || (part.is_empty() && std::env::var_os("DISPLAY").is_some()) {
        on_x11(&rt);
    }
    #[cfg(feature = "wayland")]
    if part == "wayland" || (part.is_empty() && std::env::var_os("WAYLAND_DISPLAY").is_some()) {
        on_wayland(&rt);
    }
    if !part.is_empty() {
        return;
    }
    concurrency(&rt, 1, 100);
    concurrency(&rt, 8, 25);
    concurrency(&rt, 64, 4);
}
