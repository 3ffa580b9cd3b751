//! The simulator's server-side state machine, free of any transport.
//!
//! `SimState::call` takes a tool name and its snake_case arguments and
//! answers exactly what a `computer-use-mcp` v8 server would put in
//! `structuredContent`, or a refusal with the protocol's code.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use time::{Duration, OffsetDateTime};

use super::SimError;
use super::desktop::Desktop;
use super::faults::{Fault, SimConfig};
use crate::clock::format_rfc3339;
use crate::contracts::case::to_camel_keys;
use crate::contracts::*;
use crate::digest::{canonical_json, sha256_hex};

/// What a tool answers: the structured part and any images (base64, MIME type).
#[derive(Debug, Clone, PartialEq)]
pub struct SimAnswer {
    /// `structuredContent`.
    pub structured: Value,
    /// Image content blocks.
    pub images: Vec<(String, String)>,
}

impl SimAnswer {
    fn of(structured: Value) -> Self {
        Self {
            structured,
            images: Vec::new(),
        }
    }
}

struct PreviewRecord {
    envelope: ActionEnvelope,
    needs_approval: bool,
    denied: bool,
}

/// The whole server: sessions, grants, leases, reservations, receipts, events.
pub struct SimState {
    config: SimConfig,
    desktop: Desktop,
    sessions: BTreeMap<String, RuntimeSession>,
    events: BTreeMap<String, Vec<SessionEvent>>,
    follow_ups: BTreeMap<String, Vec<SessionFollowUp>>,
    grants: BTreeMap<String, ApprovalGrantFields>,
    /// Active leases only: ended ones move to `ended_leases`, so every scan
    /// stays as small as the number of live leases.
    leases: BTreeMap<String, ControlLease>,
    ended_leases: BTreeMap<String, ControlLease>,
    /// Active reservations only (see `leases`).
    reservations: BTreeMap<String, TargetReservation>,
    ended_reservations: BTreeMap<String, TargetReservation>,
    previews: BTreeMap<(String, String), PreviewRecord>,
    receipts: BTreeMap<(String, String), ExecutionReceipt>,
    effects: BTreeMap<String, u64>,
    replays: u64,
    next: u64,
}

const MAX_TTL_MS: u64 = 300_000;
const MAX_BUDGET: u64 = 10_000;
const OBSERVATION_TOOLS: [&str; 4] = ["snapshot", "get_ui_tree", "list_windows", "read_clipboard"];

/// Reads of secrets: they need a person's approval, in any mode.
const SECRET_READS: [&str; 1] = ["read_clipboard"];
/// A 1×1 PNG, the frame `snapshot` returns.
const SNAPSHOT_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc()
}

fn stamp(at: OffsetDateTime) -> String {
    format_rfc3339(at).unwrap_or_default()
}

fn parse_time(text: &str) -> Option<OffsetDateTime> {
    crate::clock::parse_rfc3339("sim", "time", text).ok()
}

/// Upstream's summary of a postcondition in its events: the kind, the
/// expected state and the expected digest.
fn postcondition_summary(postcondition: &ActionPostcondition) -> Value {
    let wire = serde_json::to_value(postcondition).unwrap_or(Value::Null);
    let mut summary = Map::new();
    if let Some(kind) = wire.get("kind") {
        summary.insert("postconditionKind".into(), kind.clone());
    }
    let state = match (wire.get("exists"), wire.get("running")) {
        (Some(Value::Bool(true)), _) => Some("exists"),
        (Some(Value::Bool(false)), _) => Some("absent"),
        (_, Some(Value::Bool(true))) => Some("running"),
        (_, Some(Value::Bool(false))) => Some("not_running"),
        _ => None,
    };
    if let Some(state) = state {
        summary.insert("postconditionExpectedState".into(), json!(state));
    }
    if let Some(digest) = postcondition.expected_digest() {
        summary.insert("postconditionExpectedDigest".into(), json!(digest));
    }
    Value::Object(summary)
}

fn refuse(code: &str, message: impl Into<String>) -> SimError {
    SimError::refusal(code, message)
}

fn arg_str<'a>(args: &'a Value, key: &str) -> Result<&'a str, SimError> {
    match args.get(key).and_then(Value::as_str) {
        Some(text) if !text.is_empty() => Ok(text),
        _ => Err(SimError::schema(format!(
            "{key}: a non-empty string is required"
        ))),
    }
}

fn opt_str<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, SimError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(SimError::schema(format!("{key}: must be a string"))),
    }
}

fn opt_u64(args: &Value, key: &str) -> Result<Option<u64>, SimError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .map(Some)
            .ok_or_else(|| SimError::schema(format!("{key}: must be a non-negative integer"))),
    }
}

fn decode<T: serde::de::DeserializeOwned>(key: &str, value: Value) -> Result<T, SimError> {
    serde_json::from_value(value).map_err(|e| SimError::schema(format!("{key}: {e}")))
}

fn classify(tool: &str) -> ActionClass {
    match tool {
        t if OBSERVATION_TOOLS.contains(&t) => ActionClass::Observe,
        "focus_window" | "left_click" | "move_cursor" => ActionClass::Navigate,
        "delete_file" => ActionClass::Destructive,
        "send_email" => ActionClass::CommunicateExternal,
        _ => ActionClass::EditReversible,
    }
}

/// The fields shared by `preview_action` and `execute_action`.
struct ActionArgs {
    session_id: String,
    action_id: Option<String>,
    tool: String,
    operation: String,
    arguments: Value,
    mode: ExecutionMode,
    execution_group_id: Option<String>,
    agent_id: Option<String>,
    data_labels: Vec<DataLabel>,
    expires_in_ms: u64,
    target: Option<TargetEvidence>,
    provenance: Option<ActionProvenance>,
    postcondition: Option<ActionPostcondition>,
}

impl ActionArgs {
    fn parse(args: &Value) -> Result<Self, SimError> {
        let tool = arg_str(args, "tool")?.to_owned();
        let mode: ExecutionMode = decode("mode", args.get("mode").cloned().unwrap_or(Value::Null))?;
        let expires_in_ms = opt_u64(args, "expires_in_ms")?.unwrap_or(30_000);
        if expires_in_ms == 0 || expires_in_ms > MAX_TTL_MS {
            return Err(SimError::schema("expires_in_ms: 1 to 300000"));
        }
        let target = match args.get("target") {
            None | Some(Value::Null) => None,
            Some(value) => Some(decode("target", to_camel_keys(value))?),
        };
        let provenance = match args.get("provenance") {
            None | Some(Value::Null) => None,
            Some(value) => Some(decode("provenance", to_camel_keys(value))?),
        };
        let postcondition = match args.get("postcondition") {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                ActionPostcondition::from_input(value)
                    .map_err(|e| SimError::schema(e.to_string()))?,
            ),
        };
        Ok(Self {
            session_id: arg_str(args, "session_id")?.to_owned(),
            action_id: opt_str(args, "action_id")?.map(str::to_owned),
            operation: opt_str(args, "operation")?.unwrap_or(&tool).to_owned(),
            arguments: args.get("arguments").cloned().unwrap_or_else(|| json!({})),
            mode,
            execution_group_id: opt_str(args, "execution_group_id")?.map(str::to_owned),
            agent_id: opt_str(args, "agent_id")?.map(str::to_owned),
            data_labels: match args.get("data_labels") {
                None | Some(Value::Null) => Vec::new(),
                Some(value) => decode("data_labels", value.clone())?,
            },
            expires_in_ms,
            target,
            provenance,
            postcondition,
            tool,
        })
    }

    /// The digest of what the action does (not of who asks or when).
    fn digest(&self) -> String {
        sha256_hex(canonical_json(&json!({
            "tool": self.tool,
            "operation": self.operation,
            "arguments": self.arguments,
            "mode": self.mode,
            "target": self.target,
            "postcondition": self.postcondition,
            "dataLabels": self.data_labels,
        })))
    }
}

/// A fault and how it changes an answer.
type Forgery<T> = (Fault, fn(&mut T));

/// How each answer-forging fault changes a reservation.
const RESERVATION_FORGERIES: [Forgery<TargetReservation>; 6] = [
    (Fault::ReservationSession, |r| {
        r.session_id = "session-forged".into()
    }),
    (Fault::ReservationPrincipal, |r| {
        r.principal_id = "principal-forged".into()
    }),
    (Fault::ReservationAgent, |r| {
        r.agent_id = Some("agent-forged".into())
    }),
    (Fault::ReservationIntent, |r| {
        r.intent_id = "intent-forged".into()
    }),
    (Fault::ReservationApp, |r| {
        r.scope.app_id = "com.example.Forged".into()
    }),
    (Fault::ReservationWindow, |r| {
        r.scope.window_id = Some(WindowId::Number(999_999))
    }),
];

/// How each answer-forging fault changes a lease.
const LEASE_FORGERIES: [Forgery<ControlLease>; 6] = [
    (Fault::LeaseSession, |l| {
        l.session_id = "session-forged".into()
    }),
    (Fault::LeasePrincipal, |l| {
        l.principal_id = "principal-forged".into()
    }),
    (Fault::LeaseAgent, |l| {
        l.agent_id = Some("agent-forged".into())
    }),
    (Fault::LeaseApp, |l| {
        l.boundaries.app_ids = vec!["com.example.Forged".into()]
    }),
    (Fault::LeaseWindow, |l| {
        l.boundaries.window_ids = vec![WindowId::Number(999_999)]
    }),
    (Fault::LeaseExpired, |l| {
        l.expires_at = stamp(now() - Duration::seconds(1)).into()
    }),
];

/// How each answer-forging fault changes a receipt.
const RECEIPT_FORGERIES: [Forgery<ExecutionReceipt>; 2] = [
    (Fault::ReceiptDigest, |r| r.action_digest = "0".repeat(64)),
    (Fault::ReceiptSession, |r| {
        r.session_id = "session-forged".into()
    }),
];

/// What the simulated desktop can do: every operation, scripted, in every mode.
fn capability(app_id: String, operation: String) -> ExecutionCapability {
    ExecutionCapability {
        app_id,
        operation,
        backend: ExecutionBackend::Scripting,
        supported_modes: vec![
            ExecutionMode::Shadow,
            ExecutionMode::Background,
            ExecutionMode::Foreground,
        ],
        interference: Interference::None,
        confidence: 1.0,
        verified_at: None,
        verification_source: VerificationSource::PlatformRule,
        certification: None,
    }
}

impl SimState {
    /// A fresh desktop and an empty server.
    pub fn new(config: SimConfig) -> Self {
        Self {
            config,
            desktop: Desktop::default(),
            sessions: BTreeMap::new(),
            events: BTreeMap::new(),
            follow_ups: BTreeMap::new(),
            grants: BTreeMap::new(),
            leases: BTreeMap::new(),
            ended_leases: BTreeMap::new(),
            reservations: BTreeMap::new(),
            ended_reservations: BTreeMap::new(),
            previews: BTreeMap::new(),
            receipts: BTreeMap::new(),
            effects: BTreeMap::new(),
            replays: 0,
            next: 0,
        }
    }

    /// The configuration it was started with.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// The desktop, for inspection.
    pub fn desktop(&self) -> &Desktop {
        &self.desktop
    }

    fn id(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}-{:04}", self.next)
    }

    fn policy_digest(&self) -> String {
        let mut tools: Vec<&String> = self.config.confirm_tools.iter().collect();
        tools.sort();
        let policy = json!({ "confirm": tools, "allowDestructive": self.config.allow_destructive });
        format!("sim-policy-{}", &sha256_hex(canonical_json(&policy))[..16])
    }

    fn expire(&mut self) {
        let now = now();
        for lease in self.leases.values_mut() {
            if lease.state == LeaseState::Active
                && parse_time(&lease.expires_at).is_none_or(|at| at <= now)
            {
                lease.state = LeaseState::Expired;
            }
        }
        for reservation in self.reservations.values_mut() {
            if reservation.state == ReservationState::Active
                && parse_time(&reservation.expires_at).is_none_or(|at| at <= now)
            {
                reservation.state = ReservationState::Expired;
            }
        }
    }

    /// Moves leases and reservations that are no longer active out of the
    /// scanned maps.
    fn settle(&mut self) {
        let ended: Vec<String> = self
            .leases
            .iter()
            .filter(|(_, l)| l.state != LeaseState::Active)
            .map(|(id, _)| id.clone())
            .collect();
        for id in ended {
            if let Some(lease) = self.leases.remove(&id) {
                self.ended_leases.insert(id, lease);
            }
        }
        let ended: Vec<String> = self
            .reservations
            .iter()
            .filter(|(_, r)| r.state != ReservationState::Active)
            .map(|(id, _)| id.clone())
            .collect();
        for id in ended {
            if let Some(reservation) = self.reservations.remove(&id) {
                self.ended_reservations.insert(id, reservation);
            }
        }
    }

    fn session(&self, args: &Value) -> Result<&RuntimeSession, SimError> {
        let id = arg_str(args, "session_id")?;
        self.sessions
            .get(id)
            .ok_or_else(|| refuse("session_not_found", format!("no session {id}")))
    }

    fn running_session(&self, id: &str) -> Result<&RuntimeSession, SimError> {
        let session = self
            .sessions
            .get(id)
            .ok_or_else(|| refuse("session_not_found", format!("no session {id}")))?;
        if session.state != "running" {
            return Err(refuse(
                "session_not_running",
                format!("session {id} is {}", session.state),
            ));
        }
        Ok(session)
    }

    fn event(&mut self, session_id: &str, action_id: Option<&str>, kind: &str, payload: Value) {
        let principal = self.config.principal_id.clone();
        let log = self.events.entry(session_id.to_owned()).or_default();
        let sequence = log.len() as u64 + 1;
        log.push(SessionEvent {
            schema_version: 1,
            event_id: format!("event-{session_id}-{sequence}"),
            sequence,
            session_id: session_id.to_owned(),
            action_id: action_id.map(str::to_owned),
            event_type: kind.to_owned(),
            at: stamp(now()),
            principal_id: principal,
            payload: Some(payload),
        });
    }

    fn set_state(
        &mut self,
        args: &Value,
        state: &str,
        revoke: bool,
    ) -> Result<SimAnswer, SimError> {
        let id = self.session(args)?.session_id.clone();
        if revoke {
            for lease in self.leases.values_mut() {
                if lease.session_id == id && lease.state == LeaseState::Active {
                    lease.state = LeaseState::Revoked;
                    lease.terminal_reason = Some(format!("session {state}"));
                }
            }
        }
        let session = self
            .sessions
            .get_mut(&id)
            .ok_or_else(|| refuse("session_not_found", id.clone()))?;
        session.state = state.to_owned();
        session.revision += 1;
        session.updated_at = stamp(now());
        let answer = json!({ "session": session });
        let reason = opt_str(args, "reason")?.map(str::to_owned);
        self.event(
            &id,
            None,
            &format!("session.{state}"),
            json!({ "reason": reason }),
        );
        Ok(SimAnswer::of(answer))
    }

    /// Answers one tool call.
    pub fn call(&mut self, tool: &str, args: &Value) -> Result<SimAnswer, SimError> {
        if !args.is_object() {
            return Err(SimError::schema("arguments must be an object"));
        }
        self.expire();
        self.settle();
        let answer = match tool {
            "start_session" => self.start_session(args),
            "get_session" => Ok(SimAnswer::of(json!({ "session": self.session(args)? }))),
            "get_execution_capabilities" => self.capabilities(args),
            "preview_action" => self.preview(args),
            "approve_action" => self.approve(args),
            "reserve_target" => self.reserve(args),
            "release_target_reservation" => self.release_reservation(args),
            "acquire_control_lease" => self.acquire_lease(args),
            "release_control_lease" => self.release_lease(args),
            "execute_action" => self.execute(args),
            "get_session_events" => self.session_events(args),
            "submit_follow_up" => self.submit_follow_up(args),
            "get_follow_ups" => self.get_follow_ups(args),
            "pause_session" => self.set_state(args, "paused", true),
            "resume_session" => self.set_state(args, "running", false),
            "take_over" => self.set_state(args, "taken_over", true),
            "stop_session" => self.set_state(args, "stopped", true),
            "complete_session" => self.complete_session(args),
            "delete_session" => self.delete_session(args),
            "prune_sessions" => self.prune_sessions(args),
            "emergency_stop" => self.emergency_stop(args),
            "sim_stats" => Ok(SimAnswer::of(self.stats())),
            other => Err(SimError::schema(format!("unknown tool {other}"))),
        };
        self.settle();
        answer
    }

    /// Counters the simulator keeps about itself, for tests to check against.
    pub fn stats(&self) -> Value {
        let active_reservations = self
            .reservations
            .values()
            .filter(|r| r.state == ReservationState::Active)
            .count();
        let active_leases = self
            .leases
            .values()
            .filter(|l| l.state == LeaseState::Active)
            .count();
        json!({
            "effects": self.effects,
            "totalEffects": self.effects.values().sum::<u64>(),
            "maxEffectsPerAction": self.effects.values().max().copied().unwrap_or(0),
            "receipts": self.receipts.len(),
            "replays": self.replays,
            "activeReservations": active_reservations,
            "activeLeases": active_leases,
            "clipboard": self.desktop.clipboard,
        })
    }

    fn start_session(&mut self, args: &Value) -> Result<SimAnswer, SimError> {
        let id = self.id("session");
        let at = stamp(now());
        let session = RuntimeSession {
            session_id: id.clone(),
            principal_id: self.config.principal_id.clone(),
            execution_group_id: opt_str(args, "execution_group_id")?.map(str::to_owned),
            objective: opt_str(args, "objective")?.map(str::to_owned),
            state: "running".into(),
            revision: 1,
            created_at: at.clone(),
            updated_at: at,
            completion: None,
        };
        self.sessions.insert(id.clone(), session.clone());
        self.event(&id, None, "session.started", json!({}));
        Ok(SimAnswer::of(json!({ "session": session })))
    }

    fn capabilities(&mut self, args: &Value) -> Result<SimAnswer, SimError> {
        let tool = arg_str(args, "tool")?.to_owned();
        let app = opt_str(args, "app_id")?.map(str::to_owned);
        let capabilities: Vec<ExecutionCapability> = self
            .desktop
            .apps
            .iter()
            .filter(|a| app.as_ref().is_none_or(|id| id == &a.id))
            .map(|a| capability(a.id.clone(), tool.clone()))
            .collect();
        Ok(SimAnswer::of(json!({ "capabilities": capabilities })))
    }

    fn sensitivity(&self, action: &ActionArgs) -> Option<TargetSensitivityEvidence> {
        let target = action.target.as_ref()?;
        let window = self
            .desktop
            .window(&target.app_id, target.window_id.as_ref())?;
        let secure = self
            .desktop
            .targets_secure_field(Some(target), &action.arguments);
        let fields = SensitivityFields {
            assessment: if secure {
                SensitivityAssessment::Sensitive
            } else {
                SensitivityAssessment::NonSensitive
            },
            source: SensitivitySource::Accessibility,
            signals: if secure {
                vec![SensitivitySignal::SecureRole]
            } else {
                vec![]
            },
            fields_checked: (window.elements.len() as u32).clamp(1, 100),
            observed_at: stamp(now()),
        };
        TargetSensitivityEvidence::try_from(fields).ok()
    }

    fn preview(&mut self, args: &Value) -> Result<SimAnswer, SimError> {
        let action = ActionArgs::parse(args)?;
        let session = self.running_session(&action.session_id)?.clone();
        let class = classify(&action.tool);
        let action_id = match &action.action_id {
            Some(id) => id.clone(),
            None => self.id("action"),
        };
        let digest = action.digest();
        if let Some(existing) = self
            .receipts
            .get(&(session.session_id.clone(), action_id.clone()))
            && existing.action_digest != digest
        {
            return Err(refuse(
                "action_id_conflict",
                format!("{action_id} already ran with other arguments"),
            ));
        }
        let sensitivity = self.sensitivity(&action);
        let sensitive = sensitivity
            .as_ref()
            .is_some_and(|s| s.fields().assessment == SensitivityAssessment::Sensitive);
        let mut reasons = Vec::new();
        let mut blocker = None;
        let mut verdict = PolicyVerdict::Allow;
        if class == ActionClass::Destructive && !self.config.allow_destructive {
            verdict = PolicyVerdict::Deny;
            reasons.push("destructive actions are denied by this host's policy".to_owned());
        } else if action.mode == ExecutionMode::Shadow && class != ActionClass::Observe {
            blocker = Some(blockers::SHADOW_MUTATION);
            reasons.push("shadow mode cannot mutate".to_owned());
        } else if action.tool == "left_click" && action.mode != ExecutionMode::Foreground {
            blocker = Some(blockers::FOREGROUND_REQUIRED);
            reasons.push("clicking moves the physical pointer".to_owned());
        } else if sensitive
            || SECRET_READS.contains(&action.tool.as_str())
            || self.config.confirm_tools.contains(&action.tool)
            || class == ActionClass::CommunicateExternal
            || action
                .data_labels
                .iter()
                .any(|l| matches!(l, DataLabel::Credential | DataLabel::Payment))
        {
            verdict = PolicyVerdict::Confirm;
            blocker = Some(blockers::APPROVAL_REQUIRED);
            reasons.push("a person must approve this action".to_owned());
        } else {
            reasons.push(format!("{class} is allowed"));
        }
        let proposed = now();
        let envelope = ActionEnvelope {
            action_id: action_id.clone(),
            session_id: session.session_id.clone(),
            execution_group_id: action
                .execution_group_id
                .clone()
                .or(session.execution_group_id.clone()),
            principal_id: self.config.principal_id.clone(),
            agent_id: action.agent_id.clone(),
            tool: action.tool.clone(),
            operation: action.operation.clone(),
            action_class: class,
            requested_mode: action.mode,
            target: action.target.clone(),
            resource: None,
            provenance: action.provenance.clone(),
            target_sensitivity: sensitivity,
            data_labels: action.data_labels.clone(),
            postcondition: action.postcondition.clone(),
            reversible: !matches!(
                class,
                ActionClass::Destructive | ActionClass::CommunicateExternal
            ),
            external_side_effect: class == ActionClass::CommunicateExternal,
            proposed_at: stamp(proposed).into(),
            expires_at: stamp(proposed + Duration::milliseconds(action.expires_in_ms as i64))
                .into(),
            args_digest: digest,
            attempt: None,
            certification_id: None,
        };
        let denied = verdict == PolicyVerdict::Deny;
        let preview = ActionPreview {
            capability: capability(
                action
                    .target
                    .as_ref()
                    .map_or_else(|| "desktop".to_owned(), |t| t.app_id.clone()),
                action.operation.clone(),
            ),
            policy: PolicyDecision {
                decision: verdict,
                policy_digest: self.policy_digest(),
                reasons,
            },
            executable: blocker.is_none() && !denied,
            blocker: blocker
                .map(str::to_owned)
                .or(denied.then(|| "policy_denied".to_owned())),
            envelope: Box::new(envelope.clone()),
        };
        self.event(
            &session.session_id,
            Some(&action_id),
            "action.previewed",
            json!({ "argsDigest": envelope.args_digest }),
        );
        self.previews.insert(
            (session.session_id, action_id),
            PreviewRecord {
                envelope,
                needs_approval: preview.blocker.as_deref() == Some(blockers::APPROVAL_REQUIRED),
                denied,
            },
        );
        Ok(SimAnswer::of(
            serde_json::to_value(&preview).map_err(|e| refuse("internal", e.to_string()))?,
        ))
    }

    fn approve(&mut self, args: &Value) -> Result<SimAnswer, SimError> {
        let session_id = self
            .running_session(arg_str(args, "session_id")?)?
            .session_id
            .clone();
        let action_id = arg_str(args, "action_id")?.to_owned();
        let ttl = opt_u64(args, "ttl_ms")?.unwrap_or(120_000);
        if !(1000..=MAX_TTL_MS).contains(&ttl) {
            return Err(SimError::schema("ttl_ms: 1000 to 300000"));
        }
        let scope = match opt_str(args, "scope")? {
            None | Some("exact_action") => ApprovalScope::ExactAction,
            Some("session_operation") => ApprovalScope::SessionOperation,
            Some(other) => return Err(SimError::schema(format!("scope: unknown {other}"))),
        };
        let uses = opt_u64(args, "uses")?.unwrap_or(1);
        if !(1..=20).contains(&uses) {
            return Err(SimError::schema("uses: 1 to 20"));
        }
        let record = self
            .previews
            .get(&(session_id.clone(), action_id.clone()))
            .ok_or_else(|| {
                refuse(
                    "approval_required",
                    format!("{action_id} was never previewed"),
                )
            })?;
        if record.denied {
            return Err(refuse(
                "policy_denied",
                "policy denies this action; approval cannot change that",
            ));
        }
        let envelope = &record.envelope;
        let issued = now();
        let scope_digest = match scope {
            ApprovalScope::ExactAction => envelope.args_digest.clone(),
            ApprovalScope::SessionOperation => sha256_hex(canonical_json(&json!({
                "sessionId": session_id, "tool": envelope.tool, "operation": envelope.operation,
            }))),
        };
        let fields = ApprovalGrantFields {
            grant_id: String::new(),
            scope,
            principal_id: self.config.principal_id.clone(),
            session_id: session_id.clone(),
            action_digest: envelope.args_digest.clone(),
            scope_digest,
            policy_digest: self.policy_digest(),
            tool: envelope.tool.clone(),
            operation: envelope.operation.clone(),
            action_class: envelope.action_class,
            mode: envelope.requested_mode,
            issued_at: stamp(issued),
            expires_at: stamp(issued + Duration::milliseconds(ttl as i64)),
            remaining_uses: if scope == ApprovalScope::ExactAction {
                1
            } else {
                uses as u32
            },
            consumed_by_action_ids: vec![],
        };
        let mut fields = fields;
        fields.grant_id = self.id("grant");
        let grant = ApprovalGrant::try_from(fields.clone())
            .map_err(|e| refuse("policy_denied", e.to_string()))?;
        self.grants.insert(fields.grant_id.clone(), fields);
        self.event(
            &session_id,
            Some(&action_id),
            "approval.granted",
            json!({ "grantId": grant.fields().grant_id }),
        );
        Ok(SimAnswer::of(json!({ "grant": grant })))
    }

    fn reserve(&mut self, args: &Value) -> Result<SimAnswer, SimError> {
        let session_id = self
            .running_session(arg_str(args, "session_id")?)?
            .session_id
            .clone();
        let intent = arg_str(args, "intent_id")?.to_owned();
        let app = arg_str(args, "app_id")?.to_owned();
        let ttl = opt_u64(args, "ttl_ms")?.ok_or_else(|| SimError::schema("ttl_ms is required"))?;
        if ttl == 0 || ttl > MAX_TTL_MS {
            return Err(SimError::schema("ttl_ms: 1 to 300000"));
        }
        let window = match args.get("window_id") {
            None | Some(Value::Null) => None,
            Some(value) => Some(decode::<WindowId>("window_id", value.clone())?),
        };
        let agent = opt_str(args, "agent_id")?.map(str::to_owned);
        let conflict = self.reservations.values().find(|r| {
            r.state == ReservationState::Active
                && r.scope.app_id == app
                && (r.scope.window_id.is_none() || window.is_none() || r.scope.window_id == window)
                && r.intent_id != intent
        });
        if let Some(conflict) = conflict {
            return Err(refuse(
                "target_conflict",
                format!(
                    "{app} is reserved by {} for {}",
                    conflict.agent_id.as_deref().unwrap_or("another agent"),
                    conflict.intent_id
                ),
            ));
        }
        let at = now();
        let reservation = TargetReservation {
            reservation_id: self.id("reservation"),
            revision: 1,
            intent_id: intent.clone(),
            session_id: session_id.clone(),
            principal_id: self.config.principal_id.clone(),
            execution_group_id: opt_str(args, "execution_group_id")?.map(str::to_owned),
            agent_id: agent,
            scope: ReservationScope {
                app_id: app,
                window_id: window,
            },
            state: ReservationState::Active,
            acquired_at: stamp(at),
            expires_at: stamp(at + Duration::milliseconds(ttl as i64)).into(),
            terminal_reason: None,
        };
        self.reservations
            .insert(reservation.reservation_id.clone(), reservation.clone());
        self.event(
            &session_id,
            Some(&intent),
            "target.reserved",
            json!({ "reservationId": reservation.reservation_id }),
        );
        let mut answer = reservation;
        self.forge(&RESERVATION_FORGERIES, &mut answer);
        Ok(SimAnswer::of(json!({ "reservation": answer })))
    }

    fn release_reservation(&mut self, args: &Value) -> Result<SimAnswer, SimError> {
        let session_id = self.session(args)?.session_id.clone();
        let id = arg_str(args, "reservation_id")?.to_owned();
        if self.config.has(Fault::FailRelease) {
            return Err(refuse(
                "release_failed",
                format!("injected: {id} could not be released"),
            ));
        }
        let reservation = self
            .reservations
            .get_mut(&id)
            .filter(|r| r.session_id == session_id)
            .ok_or_else(|| {
                refuse(
                    "reservation_not_active",
                    format!("no reservation {id} in {session_id}"),
                )
            })?;
        if reservation.state != ReservationState::Active {
            return Err(refuse(
                "reservation_not_active",
                format!("{id} is {:?}", reservation.state),
            ));
        }
        if self.config.has(Fault::ReleaseState) {
            // Answers as if released, but the reservation is still held.
            return Ok(SimAnswer::of(json!({ "reservation": reservation })));
        }
        reservation.state = ReservationState::Released;
        reservation.revision += 1;
        let answer = json!({ "reservation": reservation });
        let intent = reservation.intent_id.clone();
        self.event(
            &session_id,
            Some(&intent),
            "target.released",
            json!({ "reservationId": id }),
        );
        Ok(SimAnswer::of(answer))
    }

    fn acquire_lease(&mut self, args: &Value) -> Result<SimAnswer, SimError> {
        let session_id = self
            .running_session(arg_str(args, "session_id")?)?
            .session_id
            .clone();
        let kind: LeaseKind = decode("kind", args.get("kind").cloned().unwrap_or(Value::Null))?;
        let mode: ExecutionMode = decode("mode", args.get("mode").cloned().unwrap_or(Value::Null))?;
        if mode == ExecutionMode::Shadow {
            return Err(SimError::schema("mode: background or foreground"));
        }
        if kind == LeaseKind::Exclusive && mode != ExecutionMode::Foreground {
            return Err(refuse(
                "lease_conflict",
                "exclusive leases are foreground only",
            ));
        }
        let ttl = opt_u64(args, "ttl_ms")?.ok_or_else(|| SimError::schema("ttl_ms is required"))?;
        let budget = opt_u64(args, "action_budget")?
            .ok_or_else(|| SimError::schema("action_budget is required"))?;
        if ttl == 0 || ttl > MAX_TTL_MS || budget == 0 || budget > MAX_BUDGET {
            return Err(SimError::schema(
                "ttl_ms: 1 to 300000; action_budget: 1 to 10000",
            ));
        }
        if let Some(holder) = self.leases.values().find(|l| l.state == LeaseState::Active) {
            return Err(refuse(
                "lease_conflict",
                format!(
                    "the desktop's one-writer lease is held by {} ({})",
                    holder.agent_id.as_deref().unwrap_or("an agent"),
                    holder.lease_id
                ),
            ));
        }
        let list = |key: &str| -> Result<Value, SimError> {
            Ok(args
                .get(key)
                .cloned()
                .filter(|v| !v.is_null())
                .unwrap_or_else(|| json!([])))
        };
        let boundaries = LeaseBoundaries {
            app_ids: decode("app_ids", list("app_ids")?)?,
            window_ids: decode("window_ids", list("window_ids")?)?,
            display_ids: decode("display_ids", list("display_ids")?)?,
        };
        let at = now();
        let lease = ControlLease {
            lease_id: self.id("lease"),
            revision: 1,
            session_id: session_id.clone(),
            principal_id: self.config.principal_id.clone(),
            agent_id: opt_str(args, "agent_id")?.map(str::to_owned),
            kind,
            execution_mode: mode,
            state: LeaseState::Active,
            acquired_at: stamp(at),
            expires_at: stamp(at + Duration::milliseconds(ttl as i64)).into(),
            action_budget: budget as u32,
            actions_used: 0,
            boundaries,
            terminal_reason: None,
        };
        self.leases.insert(lease.lease_id.clone(), lease.clone());
        self.event(
            &session_id,
            None,
            "lease.acquired",
            json!({ "leaseId": lease.lease_id }),
        );
        let mut answer = lease;
        self.forge(&LEASE_FORGERIES, &mut answer);
        Ok(SimAnswer::of(json!({ "lease": answer })))
    }

    fn release_lease(&mut self, args: &Value) -> Result<SimAnswer, SimError> {
        let id = arg_str(args, "lease_id")?.to_owned();
        let lease = self
            .leases
            .get_mut(&id)
            .ok_or_else(|| refuse("lease_not_active", format!("no lease {id}")))?;
        if lease.state != LeaseState::Active {
            return Err(refuse(
                "lease_not_active",
                format!("{id} is {:?}", lease.state),
            ));
        }
        lease.state = LeaseState::Released;
        lease.revision += 1;
        let answer = json!({ "lease": lease });
        let session = lease.session_id.clone();
        self.event(&session, None, "lease.released", json!({ "leaseId": id }));
        Ok(SimAnswer::of(answer))
    }

    fn observe(&mut self, action: &ActionArgs) -> Result<SimAnswer, SimError> {
        let observation_id = self.id("observation");
        let window_id = action.arguments.get("window_id").and_then(Value::as_u64);
        let app_id = action.arguments.get("app_id").and_then(Value::as_str);
        let (output, images) = match action.tool.as_str() {
            "snapshot" => {
                let frame = json!({
                    "observationId": observation_id,
                    "revision": self.desktop.revision,
                    "cursor": [self.desktop.cursor.0, self.desktop.cursor.1],
                    "focus": self.desktop.focus,
                    "screenshotHash": self.desktop.screenshot_hash(),
                });
                (
                    frame,
                    vec![(SNAPSHOT_PNG.to_owned(), "image/png".to_owned())],
                )
            }
            "get_ui_tree" => (self.desktop.ui_tree(app_id, window_id)?, vec![]),
            "list_windows" => (self.desktop.list_windows(), vec![]),
            // Secret access needs an approved, governed read, shadow mode
            // included, as upstream's default policy has it.
            tool if SECRET_READS.contains(&tool) => {
                return Err(refuse(
                    "approval_required",
                    format!("{tool} is secret access: policy requires an action-bound approval"),
                ));
            }
            other => {
                return Err(refuse(
                    "shadow_mutation",
                    format!("{other} mutates and cannot run in shadow mode"),
                ));
            }
        };
        let at = stamp(now());
        let receipt = ExecutionReceipt {
            receipt_id: self.id("receipt"),
            session_id: action.session_id.clone(),
            action_id: action
                .action_id
                .clone()
                .unwrap_or_else(|| observation_id.clone()),
            action_digest: action.digest(),
            attempt: 1,
            status: ReceiptStatus::Committed,
            created_at: at.clone(),
            updated_at: at,
            result: Some(json!({ "observationId": observation_id })),
            error: None,
        };
        let mut output = output;
        if let Value::Object(map) = &mut output {
            map.entry("observationId").or_insert(json!(observation_id));
        }
        Ok(SimAnswer {
            structured: json!({ "receipt": receipt, "replay": false, "output": output }),
            images,
        })
    }

    fn execute(&mut self, args: &Value) -> Result<SimAnswer, SimError> {
        let action = ActionArgs::parse(args)?;
        self.running_session(&action.session_id)?;
        if action.mode == ExecutionMode::Shadow {
            // As upstream: every execution, shadow ones included, is
            // recorded under its own action id.
            if action.action_id.is_none() {
                return Err(SimError::schema(
                    "action_id: required by execute_action, shadow mode included",
                ));
            }
            return self.observe(&action);
        }
        let action_id = action
            .action_id
            .clone()
            .ok_or_else(|| SimError::schema("action_id is required to mutate"))?;
        let key = (action.session_id.clone(), action_id.clone());
        let digest = action.digest();
        if let Some(stored) = self.receipts.get(&key) {
            if stored.action_digest != digest {
                return Err(refuse(
                    "action_id_conflict",
                    format!("{action_id} already ran with other arguments"),
                ));
            }
            self.replays += 1;
            let receipt = self.forge_receipt(stored.clone());
            return Ok(SimAnswer::of(json!({ "receipt": receipt, "replay": true })));
        }
        let record = self.previews.get(&key).ok_or_else(|| {
            refuse(
                "preview_required",
                format!("{action_id} was never previewed"),
            )
        })?;
        if record.envelope.args_digest != digest {
            return Err(refuse(
                "action_id_conflict",
                format!("{action_id} was previewed with other arguments"),
            ));
        }
        if parse_time(&record.envelope.expires_at).is_none_or(|at| at <= now()) {
            return Err(refuse(
                "preview_expired",
                format!("the preview of {action_id} expired"),
            ));
        }
        if record.denied {
            return Err(refuse("policy_denied", "policy denies this action"));
        }
        let needs_approval = record.needs_approval;
        let envelope = record.envelope.clone();
        let lease_id = arg_str(args, "lease_id")?.to_owned();
        self.check_lease(&lease_id, &action)?;
        if needs_approval {
            self.consume_grant(opt_str(args, "approval_grant_id")?, &envelope)?;
        }
        if let Some(target) = &action.target
            && !self.desktop.is_current(target)
        {
            return Err(refuse(
                "stale_target",
                "the target evidence no longer matches the desktop",
            ));
        }
        self.event(
            &action.session_id,
            Some(&action_id),
            "action.started",
            json!({ "leaseId": lease_id }),
        );
        if self.config.has(Fault::CrashBeforeEffect) {
            return Err(SimError::crash("injected crash before the effect"));
        }
        let output = self
            .desktop
            .apply(&action.tool, &action.arguments, action.target.as_ref())?;
        *self.effects.entry(action_id.clone()).or_default() += 1;
        // Like upstream, a spent lease stays active (it authorizes nothing
        // more) until its holder releases it or it expires.
        if let Some(lease) = self.leases.get_mut(&lease_id) {
            lease.actions_used += 1;
            lease.revision += 1;
        }
        // As upstream does: the receipt's result is the raw tool result, and
        // the server's own postcondition check is an `action.verified`
        // event, published before the action commits. A failed check ends
        // the action `indeterminate` and revokes its lease.
        let result = json!({ "structuredContent": output.clone() });
        let check = match &action.postcondition {
            Some(postcondition) => {
                let (satisfied, _) = self
                    .desktop
                    .observe_postcondition(postcondition, action.target.as_ref());
                let mut payload =
                    json!({ "verified": satisfied, "method": "simulated_state", "checks": 1 });
                if let (Value::Object(map), Value::Object(summary)) =
                    (&mut payload, postcondition_summary(postcondition))
                {
                    map.extend(summary);
                }
                (satisfied, payload)
            }
            None => (
                true,
                json!({ "verified": true, "method": "simulated_effect", "checks": 0 }),
            ),
        };
        self.event(
            &action.session_id,
            Some(&action_id),
            "action.verified",
            check.1,
        );
        let at = stamp(now());
        let mut receipt = ExecutionReceipt {
            receipt_id: self.id("receipt"),
            session_id: action.session_id.clone(),
            action_id: action_id.clone(),
            action_digest: digest,
            attempt: 1,
            status: ReceiptStatus::Committed,
            created_at: at.clone(),
            updated_at: at,
            result: Some(result),
            error: None,
        };
        if !check.0 {
            receipt.status = ReceiptStatus::Indeterminate;
            receipt.result = None;
            receipt.error = Some(
                json!({ "code": "indeterminate", "message": "postcondition verification failed" }),
            );
            if let Some(lease) = self.leases.get_mut(&lease_id) {
                lease.state = LeaseState::Revoked;
                lease.terminal_reason = Some("action_indeterminate".into());
            }
            self.event(
                &action.session_id,
                Some(&action_id),
                "action.indeterminate",
                json!({ "receiptId": receipt.receipt_id, "code": "indeterminate" }),
            );
            self.receipts.insert(key, receipt);
            return Err(refuse("indeterminate", "postcondition verification failed"));
        }
        self.receipts.insert(key, receipt.clone());
        self.event(
            &action.session_id,
            Some(&action_id),
            "action.committed",
            json!({ "receiptId": receipt.receipt_id, "leaseId": lease_id }),
        );

        if self.config.has(Fault::CrashAfterCommit) {
            return Err(SimError::crash("injected crash after the commit"));
        }
        let receipt = self.forge_receipt(receipt);
        Ok(SimAnswer::of(
            json!({ "receipt": receipt, "replay": false, "output": output }),
        ))
    }

    fn forge_receipt(&self, mut receipt: ExecutionReceipt) -> ExecutionReceipt {
        self.forge(&RECEIPT_FORGERIES, &mut receipt);
        receipt
    }

    /// Applies every injected forgery of `table` to an answer (never to the
    /// server's own record, so releases by the true id still work).
    fn forge<T>(&self, table: &[Forgery<T>], answer: &mut T) {
        for (fault, forge) in table {
            if self.config.has(*fault) {
                forge(answer);
            }
        }
    }

    fn check_lease(&self, lease_id: &str, action: &ActionArgs) -> Result<(), SimError> {
        let lease = self
            .leases
            .get(lease_id)
            .ok_or_else(|| refuse("lease_not_active", format!("no lease {lease_id}")))?;
        if lease.state != LeaseState::Active {
            return Err(refuse(
                "lease_not_active",
                format!("{lease_id} is {:?}", lease.state),
            ));
        }
        if lease.session_id != action.session_id {
            return Err(refuse(
                "lease_conflict",
                "the lease belongs to another session",
            ));
        }
        if lease.execution_mode != action.mode {
            return Err(refuse("lease_conflict", "the lease is for another mode"));
        }
        if lease.actions_used >= lease.action_budget {
            return Err(refuse("lease_conflict", "the lease's budget is spent"));
        }
        let app = action.target.as_ref().map(|t| t.app_id.as_str());
        if !lease.boundaries.app_ids.is_empty()
            && !app.is_some_and(|a| lease.boundaries.app_ids.iter().any(|b| b == a))
        {
            return Err(refuse(
                "lease_conflict",
                "the target is outside the lease's applications",
            ));
        }
        let window = action.target.as_ref().and_then(|t| t.window_id.as_ref());
        if !lease.boundaries.window_ids.is_empty()
            && !window.is_some_and(|w| lease.boundaries.window_ids.contains(w))
        {
            return Err(refuse(
                "lease_conflict",
                "the target is outside the lease's windows",
            ));
        }
        Ok(())
    }

    fn consume_grant(
        &mut self,
        grant_id: Option<&str>,
        envelope: &ActionEnvelope,
    ) -> Result<(), SimError> {
        let now = now();
        let usable = |grant: &ApprovalGrantFields| {
            grant.session_id == envelope.session_id
                && grant.remaining_uses > 0
                && parse_time(&grant.expires_at).is_some_and(|at| at > now)
                && match grant.scope {
                    ApprovalScope::ExactAction => grant.action_digest == envelope.args_digest,
                    ApprovalScope::SessionOperation => {
                        grant.tool == envelope.tool && grant.operation == envelope.operation
                    }
                }
        };
        let id = match grant_id {
            Some(id) => {
                let grant = self
                    .grants
                    .get(id)
                    .ok_or_else(|| refuse("approval_required", format!("no grant {id}")))?;
                if !usable(grant) {
                    return Err(refuse(
                        "approval_required",
                        format!("grant {id} does not cover this action"),
                    ));
                }
                id.to_owned()
            }
            None => self
                .grants
                .iter()
                .find(|(_, g)| usable(g))
                .map(|(id, _)| id.clone())
                .ok_or_else(|| {
                    refuse("approval_required", "no approval is held for this action")
                })?,
        };
        if let Some(grant) = self.grants.get_mut(&id) {
            grant.remaining_uses -= 1;
            grant
                .consumed_by_action_ids
                .push(envelope.action_id.clone());
        }
        Ok(())
    }

    fn page<T: serde::Serialize + Clone>(
        items: &[T],
        sequence: impl Fn(&T) -> u64,
        args: &Value,
    ) -> Result<(Vec<T>, u64), SimError> {
        let after = opt_u64(args, "after_sequence")?.unwrap_or(0);
        let limit = opt_u64(args, "limit")?.unwrap_or(100).min(1000) as usize;
        // Items are in sequence order: start where `after` ends.
        let start = items.partition_point(|i| sequence(i) <= after);
        let page: Vec<T> = items[start..].iter().take(limit).cloned().collect();
        let next = page.last().map_or(after, &sequence);
        Ok((page, next))
    }

    fn session_events(&mut self, args: &Value) -> Result<SimAnswer, SimError> {
        let id = self.session(args)?.session_id.clone();
        let log = self.events.get(&id).map_or(&[][..], Vec::as_slice);
        let (events, next) = Self::page(log, |e| e.sequence, args)?;
        Ok(SimAnswer::of(
            json!({ "events": events, "next_sequence": next }),
        ))
    }

    fn submit_follow_up(&mut self, args: &Value) -> Result<SimAnswer, SimError> {
        let id = self.session(args)?.session_id.clone();
        let instruction = arg_str(args, "instruction")?.to_owned();
        let list = self.follow_ups.entry(id.clone()).or_default();
        let follow_up = SessionFollowUp {
            follow_up_id: format!("follow-up-{}-{}", id, list.len() + 1),
            sequence: list.len() as u64 + 1,
            session_id: id.clone(),
            principal_id: self.config.principal_id.clone(),
            instruction,
            created_at: stamp(now()),
        };
        list.push(follow_up.clone());
        self.event(
            &id,
            None,
            "follow_up.submitted",
            json!({ "followUpId": follow_up.follow_up_id }),
        );
        Ok(SimAnswer::of(json!({ "follow_up": follow_up })))
    }

    fn get_follow_ups(&mut self, args: &Value) -> Result<SimAnswer, SimError> {
        let id = self.session(args)?.session_id.clone();
        let list = self.follow_ups.get(&id).cloned().unwrap_or_default();
        let (follow_ups, next) = Self::page(&list, |f| f.sequence, args)?;
        Ok(SimAnswer::of(
            json!({ "follow_ups": follow_ups, "next_sequence": next }),
        ))
    }

    fn complete_session(&mut self, args: &Value) -> Result<SimAnswer, SimError> {
        let id = self
            .running_session(arg_str(args, "session_id")?)?
            .session_id
            .clone();
        let summary = arg_str(args, "summary")?.to_owned();
        let postconditions: Vec<CompletionPostcondition> = match args.get("postconditions") {
            None | Some(Value::Null) => vec![],
            Some(value) => decode("postconditions", to_camel_list(value))?,
        };
        let mut counts = BTreeMap::new();
        for receipt in self.receipts.values().filter(|r| r.session_id == id) {
            *counts.entry("committed".to_owned()).or_insert(0) +=
                u64::from(receipt.status == ReceiptStatus::Committed);
        }
        let at = stamp(now());
        let session = self
            .sessions
            .get_mut(&id)
            .ok_or_else(|| refuse("session_not_found", id.clone()))?;
        session.state = "completed".into();
        session.revision += 1;
        session.updated_at = at.clone();
        session.completion = Some(SessionCompletion {
            summary,
            postconditions,
            last_app_id: None,
            last_window_id: None,
            action_counts: counts,
            completed_at: at,
        });
        let answer = json!({ "session": session });
        self.event(&id, None, "session.completed", json!({}));
        Ok(SimAnswer::of(answer))
    }

    fn delete(&mut self, id: &str) -> SessionDeletionResult {
        self.sessions.remove(id);
        let deleted_events = self.events.remove(id).map_or(0, |e| e.len() as u64);
        let before = self.receipts.len();
        self.receipts.retain(|(session, _), _| session != id);
        let deleted_receipts = (before - self.receipts.len()) as u64;
        self.previews.retain(|(session, _), _| session != id);
        self.follow_ups.remove(id);
        let before = self.grants.len();
        self.grants.retain(|_, g| g.session_id != id);
        let revoked = (before - self.grants.len()) as u64;
        SessionDeletionResult {
            session_id: id.to_owned(),
            deleted: true,
            deleted_events,
            deleted_receipts,
            deleted_evidence_frames: 0,
            revoked_grants: revoked,
            retained_events: 0,
            retention_marker_id: None,
        }
    }

    fn require_confirm(args: &Value) -> Result<(), SimError> {
        if args.get("confirm") != Some(&Value::Bool(true)) {
            return Err(SimError::schema("confirm: true is required"));
        }
        Ok(())
    }

    fn delete_session(&mut self, args: &Value) -> Result<SimAnswer, SimError> {
        Self::require_confirm(args)?;
        let session = self.session(args)?;
        if !matches!(session.state.as_str(), "stopped" | "completed") {
            return Err(refuse(
                "session_not_terminal",
                format!("session {} is {}", session.session_id, session.state),
            ));
        }
        let id = session.session_id.clone();
        Ok(SimAnswer::of(json!({ "deletion": self.delete(&id) })))
    }

    fn prune_sessions(&mut self, args: &Value) -> Result<SimAnswer, SimError> {
        Self::require_confirm(args)?;
        let older_than = parse_time(arg_str(args, "older_than")?)
            .ok_or_else(|| SimError::schema("older_than: RFC 3339"))?;
        let limit = opt_u64(args, "limit")?.unwrap_or(100) as usize;
        let doomed: Vec<String> = self
            .sessions
            .values()
            .filter(|s| matches!(s.state.as_str(), "stopped" | "completed"))
            .filter(|s| parse_time(&s.updated_at).is_some_and(|at| at < older_than))
            .take(limit)
            .map(|s| s.session_id.clone())
            .collect();
        let deletions: Vec<SessionDeletionResult> =
            doomed.iter().map(|id| self.delete(id)).collect();
        Ok(SimAnswer::of(
            json!({ "deleted": deletions.len(), "deletions": deletions }),
        ))
    }

    fn emergency_stop(&mut self, args: &Value) -> Result<SimAnswer, SimError> {
        let reason = opt_str(args, "reason")?
            .unwrap_or("emergency stop")
            .to_owned();
        for lease in self
            .leases
            .values_mut()
            .filter(|l| l.state == LeaseState::Active)
        {
            lease.state = LeaseState::Revoked;
            lease.terminal_reason = Some(reason.clone());
        }
        let running: Vec<String> = self
            .sessions
            .values()
            .filter(|s| s.state == "running" || s.state == "paused")
            .map(|s| s.session_id.clone())
            .collect();
        for id in running {
            if let Some(session) = self.sessions.get_mut(&id) {
                session.state = "stopped".into();
                session.revision += 1;
            }
            self.event(&id, None, "session.stopped", json!({ "reason": reason }));
        }
        Ok(SimAnswer::of(json!({ "stopped": true })))
    }
}

fn to_camel_list(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(to_camel_keys).collect()),
        other => other.clone(),
    }
}
