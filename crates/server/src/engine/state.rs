//! The simulator's server-side state, free of any transport.
//!
//! [`State::call`] takes a tool name and its snake_case arguments and
//! answers what upstream's v8 server puts in `structuredContent`, or the
//! refusal it answers with. The arguments are checked against the tool's
//! published schema first, as upstream's MCP layer checks them. The state
//! holds the parts of the server (sessions, grants, reservations, leases,
//! onboarding) and imports only their data; the handlers that change them
//! live in `calls` (one file for each part) and import the state, so the
//! rooms go one way.

use adk_computer_use::contracts::catalogue::protocol::name as protocol;
use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::Refusal;
pub use super::answer::Answer;
use super::backend::DesktopBackend;
use super::grants::{Grants, Pending};
use super::history::FollowUp;
use super::lease::LeaseAnswer;
use super::lease::LeaseManager;
use super::onboarding::Onboarding;
use super::reservation::Reservations;
use super::session::Session;
use super::wire::{EventLog, given, now};
use crate::Config;
use crate::desktop::simulated::{Faults, SimulatedBackend, SimulatedDesktop};
use adk_computer_use::contracts::catalogue::protocol::name;

/// A stored execution receipt and what the simulator knows about it.
#[derive(Debug, Clone)]
pub(super) struct StoredReceipt {
    /// The receipt as it goes on the wire.
    pub receipt: Value,
    /// Whether the action mutates (observations are counted apart).
    pub mutating: bool,
}

/// Upstream's answer for a tool it does not serve: one of its catalogue
/// (registered, but outside the v8 surface) is "disabled", any other name
/// "not found".
fn unknown_tool(tool: &str) -> Refusal {
    let state = if super::policy::upstream_catalogue_tool(tool) {
        "disabled"
    } else {
        "not found"
    };
    Refusal::schema(format!("MCP error -32602: Tool {tool} {state}"))
}

/// The whole server: sessions, events, grants, leases, reservations,
/// receipts, onboarding, and the desktop behind them.
pub struct State {
    pub(super) config: Config,
    /// Shared with the work the server does without this state held.
    pub(super) desktop: std::sync::Arc<dyn DesktopBackend>,
    /// The faults injected: none, unless built by [`State::simulated`].
    pub(super) faults: Faults,
    pub(super) sessions: BTreeMap<String, Session>,
    pub(super) events: EventLog,
    pub(super) follow_ups: BTreeMap<String, Vec<FollowUp>>,
    pub(super) grants: Grants,
    pub(super) pending: BTreeMap<(String, String), Pending>,
    pub(super) leases: LeaseManager,
    pub(super) reservations: Reservations,
    pub(super) receipts: BTreeMap<(String, String), StoredReceipt>,
    pub(super) onboarding: Onboarding,
    /// Effects performed, per session and action.
    pub(super) effects: BTreeMap<(String, String), u64>,
    pub(super) replays: u64,
    /// The desktop's count of input it did not send, as last looked at.
    pub(super) foreign_seen: u64,
    /// The person took the machine over and has not handed it back.
    pub(super) machine_taken: bool,
    /// Sessions the person's own input paused.
    pub(super) taken_by_input: std::collections::BTreeSet<String>,
}

impl State {
    /// A fresh simulated desktop and an empty server.
    pub fn new(config: Config) -> Self {
        Self::simulated(config, SimulatedDesktop::default())
    }

    /// An empty server over the simulated `desktop`, injecting the faults
    /// it was given: the only constructor that takes faults.
    pub fn simulated(config: Config, desktop: SimulatedDesktop) -> Self {
        let faults = desktop.injected().clone();
        Self {
            faults,
            ..Self::on(config, Box::new(SimulatedBackend::new(desktop)))
        }
    }

    /// An empty server over `desktop`: the same rules, another desktop, no
    /// fault (whatever `desktop` is).
    pub fn on(config: Config, desktop: Box<dyn DesktopBackend>) -> Self {
        Self {
            config,
            desktop: std::sync::Arc::from(desktop),
            faults: Faults::default(),
            sessions: BTreeMap::new(),
            events: EventLog::default(),
            follow_ups: BTreeMap::new(),
            grants: Grants::default(),
            pending: BTreeMap::new(),
            leases: LeaseManager::default(),
            reservations: Reservations::default(),
            receipts: BTreeMap::new(),
            onboarding: Onboarding::default(),
            effects: BTreeMap::new(),
            replays: 0,
            foreign_seen: 0,
            machine_taken: false,
            taken_by_input: Default::default(),
        }
    }

    /// The faults this server injects (none unless built by
    /// [`State::simulated`]).
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// The configuration it was started with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// A copy of the simulated desktop as it is now, for inspection
    /// (`None` over another desktop).
    pub fn desktop(&self) -> Option<SimulatedDesktop> {
        self.desktop.simulated()
    }

    /// Which desktop the rules act on: `simulated` or `x11`.
    pub fn desktop_kind(&self) -> &'static str {
        self.desktop.kind()
    }

    /// The principal every caller is authenticated as.
    pub(super) fn principal(&self) -> String {
        self.config.principal_id.clone()
    }

    /// Appends an event to a session's log, under the server's principal.
    pub(super) fn publish(
        &mut self,
        session_id: &str,
        action_id: Option<&str>,
        kind: &str,
        payload: Value,
    ) {
        let principal = self.config.principal_id.clone();
        self.events
            .publish(session_id, action_id, &principal, kind, payload);
    }

    /// Answers one tool call. A lease acquire that would wait in the queue
    /// cannot wait here: it is cancelled at once and answered as upstream
    /// answers a cancelled request. [`super::Server`] waits.
    pub fn call(&mut self, tool: &str, args: &Value) -> Result<Answer, Refusal> {
        Self::check(tool, args)?;
        self.notice_takeover();
        if tool == protocol::ACQUIRE_CONTROL_LEASE {
            return match self.acquire_lease(args)? {
                LeaseAnswer::Now(answer) => Ok(answer),
                LeaseAnswer::Wait(ticket, _) => {
                    self.leases.cancel(ticket);
                    Err(Refusal::new("interrupted", "lease request cancelled"))
                }
            };
        }
        self.dispatch(tool, args)
    }

    /// Checks `args` against the tool's schema: an unknown tool, or
    /// arguments that fail the schema, are answered with text only.
    pub(super) fn check(tool: &str, args: &Value) -> Result<(), Refusal> {
        let spec = super::tools::find(tool)
            .or((tool == super::tools::STATS.name).then_some(&super::tools::STATS))
            .ok_or_else(|| unknown_tool(tool))?;
        let empty = serde_json::Map::new();
        let map = args.as_object().unwrap_or(&empty);
        spec.check(map).map_err(Refusal::schema)
    }

    /// Answers a checked call of any tool but the lease acquire.
    pub(super) fn dispatch(&mut self, tool: &str, args: &Value) -> Result<Answer, Refusal> {
        if matches!(
            tool,
            name::START_SESSION
                | name::RESERVE_TARGET
                | name::PREVIEW_ACTION
                | name::EXECUTE_ACTION
                | name::ACQUIRE_CONTROL_LEASE
        ) {
            self.machine_free()?;
        }
        match tool {
            name::ONBOARDING => self.onboarding(args),
            name::START_SESSION => self.start_session(args),
            name::GET_SESSION => self.get_session(args),
            name::PAUSE_SESSION => self.pause_session(args, None),
            name::TAKE_OVER => self.pause_session(args, Some("user_takeover")),
            // Here no caller is told apart (stdio, in process): the
            // person's machine is never handed back from here.
            name::RESUME_SESSION => self.resume_as(args, false),
            name::STOP_SESSION => self.stop_session(args),
            name::COMPLETE_SESSION => self.complete_session(args),
            name::APPROVE_ACTION => self.approve(args),
            name::GET_SESSION_EVENTS => self.session_events(args),
            name::SUBMIT_FOLLOW_UP => self.submit_follow_up(args),
            name::GET_FOLLOW_UPS => self.get_follow_ups(args),
            name::DELETE_SESSION => self.delete_session(args),
            name::PRUNE_SESSIONS => self.prune_sessions(args),
            name::RESERVE_TARGET => self.reserve(args),
            name::RELEASE_TARGET_RESERVATION => self.release_reservation(args),
            name::GET_EXECUTION_CAPABILITIES => self.capabilities(args),
            name::GET_CERTIFICATION_TRACE => {
                Err(Refusal::bare("certification_unavailable", json!({})))
            }
            name::PREVIEW_ACTION => self.preview_tool(args, None),
            name::EXECUTE_ACTION => self.execute(args),
            name::RELEASE_CONTROL_LEASE => self.release_lease(args),
            name::EMERGENCY_STOP => self.emergency_stop(args),
            _ if tool == super::tools::STATS.name && self.config.stats => {
                Ok(Answer::of(self.stats()))
            }
            other => Err(unknown_tool(other)),
        }
    }

    /// Counters the simulator keeps about itself, for tests to check against.
    pub fn stats(&self) -> Value {
        let at = now();
        let mut effects: BTreeMap<&str, BTreeMap<&str, u64>> = BTreeMap::new();
        for ((session, action), count) in &self.effects {
            effects.entry(session).or_default().insert(action, *count);
        }
        let mutations = self.receipts.values().filter(|r| r.mutating).count();
        json!({
            "effects": effects,
            "totalEffects": self.effects.values().sum::<u64>(),
            "maxEffectsPerAction": self.effects.values().max().copied().unwrap_or(0),
            "receipts": mutations,
            "observationReceipts": self.receipts.len() - mutations,
            "replays": self.replays,
            "activeReservations": self.reservations.active_at(at),
            "activeLeases": self.leases.active_at(at),
            "clipboard": self.desktop.clipboard_written(),
            "grants": self.grants.len(),
        })
    }

    fn capabilities(&mut self, args: &Value) -> Result<Answer, Refusal> {
        let tool = given(args, "tool").unwrap_or_default();
        let Some(meta) = super::policy::known_tool(tool) else {
            return Err(Refusal::bare("unknown_tool", json!({ "tool": tool })));
        };
        let app = super::wire::text(args, "app_id").unwrap_or("*");
        let mut capability =
            super::policy::capability(tool, meta, app, self.desktop.acts_unfocused(tool));
        // A desktop that reports what it found of its platform (a
        // compositor's protocols) says it, and whether it can carry this
        // tool out at all; the others answer exactly as upstream does.
        let report = self.desktop.report();
        if report.is_some() {
            capability["performedHere"] = json!(self.desktop.performs(tool));
        }
        let mut answer = json!({ "capabilities": [capability] });
        if let Some(report) = report {
            answer["desktop"] = report;
        }
        Ok(Answer::of(answer))
    }

    /// The session `id`, or upstream's refusal for a missing one.
    pub(super) fn session_of(&self, id: &str) -> Result<&Session, Refusal> {
        self.sessions.get(id).ok_or_else(|| {
            Refusal::with_details(
                "session_not_found",
                "runtime session does not exist",
                json!({ "sessionId": id }),
            )
        })
    }
}
