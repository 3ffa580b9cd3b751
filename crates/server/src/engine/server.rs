//! The rules engine served over MCP: on stdio to the host that spawned it,
//! or over TCP to credentialed clients, each call taking the server's
//! state only for the rules, never while an application works (see
//! `staged`).

use adk_computer_use::contracts::catalogue::protocol::name as protocol;
use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use rmcp::ServiceExt;
use rmcp::model::{CallToolResult, JsonObject, MetaObject, Tool, ToolAnnotations};
use serde_json::Value;

use super::Refusal;
use super::access::{Connection, Credentials, Watched};
use super::admission::{EVICTION_GRACE, PreAuth, Share, Shares};
use super::lease::LeaseAnswer;
use super::reply::{refused, success};
use super::state::State;
use crate::Config;
use adk_computer_use::ComputerUseError;

/// The simulated desktop, served over MCP.
#[derive(Clone)]
pub struct Server {
    pub(super) state: Arc<Mutex<State>>,
    /// The desktop, reached with the state free (see `staged`).
    pub(super) desk: super::actuate::Desk,
    /// One mutation at a time on the desktop (see `staged`).
    pub(super) gate: Arc<tokio::sync::Mutex<()>>,
    /// Each caller's share of the desktop's threads (see `turns`).
    pub(super) turns: Arc<super::turns::Turns>,
    pub(super) slow: std::time::Duration,
    /// The desktop answers through blocking I/O (a real display): its
    /// calls run on the blocking pool, never on an executor thread.
    pub(super) blocking: bool,
}

/// The longest message a TCP client may send, in bytes: far more than any
/// request needs (a clipboard write is at most 64 KiB of text), far less
/// than rmcp's default of 16 MiB.
const MOST_LINE: usize = 1 << 20;

/// How long a connection has to authenticate (its `initialize`).
const HANDSHAKE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

impl Server {
    /// The tool result a refusal is answered with.
    pub(super) fn refusal(error: Refusal) -> CallToolResult {
        refused(error)
    }

    /// A server over a fresh simulated desktop.
    pub fn new(config: Config) -> Self {
        Self::simulated(
            config,
            crate::desktop::simulated::SimulatedDesktop::default(),
        )
    }

    /// A server over `desktop`, the simulated desktop, injecting the faults
    /// it was given ([`SimulatedDesktop::with_faults`]): the one door
    /// through which a server can be made to lie.
    ///
    /// [`SimulatedDesktop::with_faults`]: crate::desktop::simulated::SimulatedDesktop::with_faults
    pub fn simulated(config: Config, desktop: crate::desktop::simulated::SimulatedDesktop) -> Self {
        let slow = std::time::Duration::from_millis(config.slow_ms);
        let state = State::simulated(config, desktop);
        Self {
            desk: state.desk(),
            gate: Arc::default(),
            turns: Arc::default(),
            state: Arc::new(Mutex::new(state)),
            slow,
            blocking: false,
        }
    }

    /// A server of the same rules over another desktop (a real display:
    /// `crate::desktop::x11::X11Desktop`), which injects no fault whatever
    /// the desktop is (even a simulated one with faults, boxed, is served
    /// without them). A desktop other than the simulated one is taken to
    /// block on I/O: its calls run on Tokio's blocking pool.
    pub fn on(config: Config, desktop: Box<dyn super::DesktopBackend>) -> Self {
        let slow = std::time::Duration::from_millis(config.slow_ms);
        let blocking = desktop.simulated().is_none();
        let state = State::on(config, desktop);
        Self {
            desk: state.desk(),
            gate: Arc::default(),
            turns: Arc::default(),
            state: Arc::new(Mutex::new(state)),
            slow,
            blocking,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `work` on the locked state: right here for the simulated
    /// desktop, on Tokio's blocking pool for one that blocks on I/O.
    pub(super) async fn on_state<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut State) -> T + Send + 'static,
    ) -> Result<T, Refusal> {
        // The person's input is looked at before anything else is done.
        if !self.blocking {
            let mut state = self.lock();
            state.notice_takeover();
            return Ok(work(&mut state));
        }
        let state = Arc::clone(&self.state);
        tokio::task::spawn_blocking(move || {
            let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
            state.notice_takeover();
            work(&mut state)
        })
        .await
        .map_err(|err| Refusal::plain(format!("the desktop call failed: {err}")))
    }

    /// Answers one call as the MCP result the client will see. A lease
    /// acquire behind an active lease waits here for its turn. An injected
    /// crash fault (`crash.beforeEffect`, `crash.afterCommit`) exits the
    /// process, as a crashing server would.
    pub async fn answer(&self, tool: &str, arguments: Value) -> CallToolResult {
        self.respond(tool, arguments, std::future::pending(), None)
            .await
    }

    /// Answers one call; `cancelled` completes when the client cancels it
    /// (or, over TCP, leaves). A lease granted on a TCP `connection` is
    /// remembered there, so it is given back when the client leaves; a
    /// lease granted to a client already gone is given back at once.
    pub(super) async fn respond(
        &self,
        tool: &str,
        arguments: Value,
        cancelled: impl std::future::Future<Output = ()>,
        connection: Option<Arc<Connection>>,
    ) -> CallToolResult {
        if let Err(error) = State::check(tool, &arguments) {
            return refused(error);
        }
        // Who asks: an agent is admitted only to what is its own (see
        // `authority`), checked under the same lock as the call.
        let caller = connection.as_ref().and_then(|c| c.role());
        // Handing back a machine the person took over is the person's:
        // only the approver's credential over TCP does it. The check and
        // the resume are one step under the state's lock, after the
        // person's input was looked at.
        if tool == protocol::RESUME_SESSION {
            let approver = connection
                .as_ref()
                .is_some_and(|c| c.role() == Some(super::access::Role::Approver));
            let outcome = self
                .on_state(move |state| {
                    state.admit(caller.as_ref(), protocol::RESUME_SESSION, &arguments)?;
                    state.resume_as(&arguments, approver)
                })
                .await
                .and_then(|answer| answer);
            return outcome.map_or_else(refused, success);
        }
        if tool == protocol::EXECUTE_ACTION {
            // With the state free while the desktop works (see `staged`).
            return self
                .execute_staged(caller, arguments)
                .await
                .map_or_else(refused, success);
        }
        if tool == protocol::PREVIEW_ACTION {
            return self
                .preview_staged(caller, arguments)
                .await
                .map_or_else(refused, success);
        }
        if tool == protocol::ONBOARDING
            && arguments.get("action").and_then(Value::as_str) == Some("test_semantic")
        {
            return self
                .test_semantic(caller, arguments)
                .await
                .map_or_else(refused, success);
        }
        if tool != protocol::ACQUIRE_CONTROL_LEASE {
            let stops = tool == protocol::EMERGENCY_STOP || tool == protocol::TAKE_OVER;
            let tool = tool.to_owned();
            let outcome = self
                .on_state(move |state| {
                    state.admit(caller.as_ref(), &tool, &arguments)?;
                    let answer = state.dispatch(&tool, &arguments)?;
                    if tool == protocol::START_SESSION || tool == protocol::ONBOARDING {
                        state.own_started(&answer, caller.as_ref());
                    }
                    Ok(answer)
                })
                .await
                .and_then(|answer| answer);
            if stops && outcome.is_ok() {
                // The stop has ended every lease: an effect under way
                // writes nothing more, and one queued is refused when it
                // would spend its lease. The answer waits for the one
                // under way to end, so when it comes nothing of an
                // agent's is being done (see `staged`).
                drop(self.gate.lock().await);
            }
            return outcome.map_or_else(refused, success);
        }
        // Between agents the queue is first come, first served: an agent's
        // priority is not its own to raise (one at the top would take the
        // desktop back at every release). The host's and the approver's
        // priorities stand.
        let mut arguments = arguments;
        if matches!(caller, Some(super::access::Role::Agent(_)))
            && let Some(map) = arguments.as_object_mut()
        {
            map.insert("priority".into(), serde_json::json!(0));
        }
        // The state is locked only to queue and to settle, never while
        // the request waits for its turn (and, over a desktop that blocks,
        // never on an executor thread).
        let started = self
            .on_state(move |state| {
                state.admit(caller.as_ref(), protocol::ACQUIRE_CONTROL_LEASE, &arguments)?;
                state.acquire_lease(&arguments)
            })
            .await
            .and_then(|answer| answer);
        let (ticket, mut wait) = match started {
            Err(error) => return refused(error),
            Ok(LeaseAnswer::Now(answer)) => {
                if let Some(connection) = &connection {
                    self.held_by(connection, &answer.structured).await;
                }
                return success(answer);
            }
            Ok(LeaseAnswer::Wait(ticket, wait)) => (ticket, wait),
        };
        tokio::select! {
            granted = &mut wait => match granted {
                Ok(Ok(lease)) => {
                    if let Some(connection) = &connection {
                        if connection.is_gone() {
                            // Granted to a client that has left: handed on.
                            let id = lease.lease_id.clone();
                            let _ = self.on_state(move |state| state.give_back_lease(&id)).await;
                            return refused(Refusal::new(
                                "interrupted",
                                "lease request cancelled: the client left",
                            ));
                        }
                        connection.hold(&lease.lease_id);
                    }
                    self.on_state(move |state| state.lease_answer(&lease))
                        .await
                        .map_or_else(refused, success)
                }
                Ok(Err(error)) => refused(error),
                Err(_) => refused(Refusal::new("interrupted", "lease request cancelled")),
            },
            () = cancelled => {
                // The grant may have raced the cancellation: a lease granted
                // to a waiter who left is given back at once, never left
                // active with no holder.
                let _ = self
                    .on_state(move |state| {
                        if !state.cancel_lease_wait(ticket)
                            && let Ok(Ok(lease)) = wait.try_recv()
                        {
                            state.give_back_lease(&lease.lease_id);
                        }
                    })
                    .await;
                refused(Refusal::new("interrupted", "lease request cancelled"))
            }
        }
    }

    /// Remembers on `connection` the lease an answer grants (an immediate
    /// grant); given back at once if the client has already left.
    async fn held_by(&self, connection: &Connection, answer: &Value) {
        let Some(id) = answer
            .pointer("/lease/leaseId")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return;
        };
        if connection.is_gone() {
            let _ = self.on_state(move |state| state.give_back_lease(&id)).await;
        } else {
            connection.hold(&id);
        }
    }

    /// Serves every client that connects to `listener`, all on this one
    /// desktop, until the process ends: the simulator then outlives the
    /// processes that use it, so an action suspended by one can be resumed
    /// by another. Each connection is served on its own task.
    ///
    /// Each connection authenticates with one of `credentials` in its
    /// `initialize` request (see [`super::Role`]): without a valid one
    /// the handshake fails and the connection is closed, and every request
    /// sent without an `initialize` is answered with a JSON-RPC error. The
    /// agent's connection is refused `approve_action`
    /// (`approver_credential_required`).
    ///
    /// When a client leaves, its queued lease requests leave the queue at
    /// once, and the leases granted on its connection that are still
    /// active are revoked (`holder_disconnected`) and handed to the next
    /// waiter: a lease is never left active with no client holding it.
    pub async fn serve_tcp(
        self,
        listener: tokio::net::TcpListener,
        credentials: Credentials,
    ) -> Result<(), ComputerUseError> {
        let credentials = Arc::new(credentials);
        // Connections that have not authenticated yet: bounded in number
        // and in time, so nobody without a credential can hold the server's
        // file descriptors or memory, and the oldest is closed first, so
        // nobody can keep a credentialed client out by holding them all.
        let pre_auth = Arc::new(PreAuth::default());
        let shares = Arc::new(Shares::default());
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(err) => {
                    // Out of descriptors, a connection reset before accept:
                    // the server stays up and tries again shortly.
                    tracing::warn!(error = %err, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            let (ticket, evicted) = pre_auth.admit();
            let pre_auth = Arc::clone(&pre_auth);
            let shares = Arc::clone(&shares);
            let server = self.clone();
            let credentials = Arc::clone(&credentials);
            tokio::spawn(async move {
                let (gone, watch) = tokio::sync::watch::channel(false);
                let connection = Arc::new(Connection::new(credentials, watch));
                // One message is at most `MOST_LINE` bytes: 64 waiting
                // connections hold at most 64 of them, not rmcp's 16 MiB each.
                let (read, write) = tokio::io::split(stream);
                let transport = Watched::new(
                    rmcp::transport::async_rw::AsyncRwTransport::new_server(read, write)
                        .with_max_line_length(MOST_LINE),
                    gone,
                );
                let service = super::service::ConnectionService::authenticated(
                    server.clone(),
                    Arc::clone(&connection),
                );
                let served = async {
                    match service.serve(transport).await {
                        Ok(running) => {
                            let _ = running.waiting().await;
                        }
                        Err(err) => {
                            eprintln!("computer-use-server: a client failed to connect: {err}")
                        }
                    }
                };
                // The handshake has a deadline: a connection still without
                // a role by then is closed. Once it has one, its pre-auth
                // slot is given back.
                let deadline = async {
                    let started = tokio::time::Instant::now();
                    loop {
                        if connection.role().is_some() {
                            pre_auth.leave(ticket);
                            std::future::pending::<()>().await;
                        }
                        if started.elapsed() >= HANDSHAKE_DEADLINE {
                            return;
                        }
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    }
                };
                // Closed to make room only while it has not authenticated:
                // a connection chosen in the middle of its handshake (its
                // `initialize` already sent) is given a moment to finish.
                let closed_for_room = async {
                    evicted.notified().await;
                    tokio::time::sleep(EVICTION_GRACE).await;
                    if connection.role().is_some() {
                        std::future::pending::<()>().await;
                    }
                };
                // An authenticated role holds at most `MOST_PER_ROLE`
                // connections: one agent opening thousands cannot take the
                // descriptors the approver and the host need.
                let within_share = async {
                    loop {
                        if let Some(role) = connection.role() {
                            if shares.take(&role) {
                                let _taken = Share(&shares, role);
                                return std::future::pending::<()>().await;
                            }
                            return;
                        }
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    }
                };
                tokio::select! {
                    biased;
                    () = served => {}
                    () = within_share => {
                        tracing::warn!("a role already holds its most connections: one more closed");
                    }
                    () = deadline => {
                        tracing::warn!("a client did not authenticate in time: closed");
                    }
                    () = closed_for_room => {
                        tracing::warn!("a client still not authenticated was closed to make room for a newer one");
                    }
                }
                pre_auth.leave(ticket);
                // Whatever it still holds, nobody holds now.
                let leases = connection.take_leases();
                if !leases.is_empty() {
                    let _ = server
                        .on_state(move |state| {
                            for id in leases {
                                state.revoke_departed_lease(&id);
                            }
                        })
                        .await;
                }
            });
        }
    }

    /// The tools `tools/list` shows: the protocol's 23, never `sim_stats`.
    pub(super) fn listed_tools() -> Vec<Tool> {
        super::tools::TOOLS
            .iter()
            .map(|spec| {
                let [read_only, destructive, idempotent, open_world] = spec.hints();
                let schema: JsonObject = spec.input_schema();
                Tool::new_with_raw(
                    spec.name,
                    Some(Cow::Borrowed(spec.description)),
                    Arc::new(schema),
                )
                .with_annotations(
                    ToolAnnotations::new()
                        .read_only(read_only)
                        .destructive(destructive)
                        .idempotent(idempotent)
                        .open_world(open_world),
                )
                .with_meta(MetaObject(spec.meta()))
            })
            .collect()
    }

    /// The rmcp service to serve: this server, with the wire details the
    /// MCP layer adds.
    pub fn service(self) -> super::service::ConnectionService {
        super::service::ConnectionService::trusted(self)
    }

    /// Serves on stdin/stdout until the client goes away.
    pub async fn serve_stdio(self) -> Result<(), ComputerUseError> {
        let transport = |err: String| ComputerUseError::Transport {
            operation: "serve".into(),
            message: err,
        };
        let running = self
            .service()
            .serve(rmcp::transport::io::stdio_pipes())
            .await
            .map_err(|e| transport(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| transport(e.to_string()))?;
        Ok(())
    }
}
