//! Answers a well-behaved runtime would give, for runtimes written in tests,
//! examples and benchmarks (feature `test-util`).
//!
//! Each builder starts from what the chain sent (a request, an envelope)
//! and binds its answer to it the way a correct server does: same session,
//! principal, agent, group, action and target; an expiry after `now`. A
//! test then changes the one field it is about. Nothing here is used by the
//! chain itself.

use serde_json::{Value, json};
use time::{Duration, OffsetDateTime};

use adk_computer_use::ComputerUseError;
use adk_computer_use::clock::format_rfc3339;
use adk_computer_use::contracts::{
    ActionClass, ActionEnvelope, ActionPreview, ControlLease, ExecutionBackend,
    ExecutionCapability, ExecutionMode, ExecutionReceipt, Interference, LeaseBoundaries, LeaseKind,
    LeaseState, PolicyDecision, PolicyVerdict, ReceiptStatus, ReservationScope, ReservationState,
    TargetReservation, VerificationSource, blockers,
};
use adk_computer_use::digest::{canonical_json, sha256_hex};
use adk_computer_use::runtime::ActionRequest;

/// How a preview routes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreviewRoute {
    /// Policy allows it: executable.
    Allowed,
    /// A person must approve it first.
    NeedsApproval,
    /// Blocked, with this blocker code.
    Blocked(String),
}

fn stamp(at: OffsetDateTime) -> Result<String, ComputerUseError> {
    format_rfc3339(at)
}

/// The digest of what `request` proposes (tool, arguments, mode), as the
/// envelope's `argsDigest`.
pub fn args_digest(request: &ActionRequest<'_>) -> String {
    let action = request.action;
    sha256_hex(canonical_json(&json!({
        "tool": action.tool,
        "arguments": action.arguments,
        "mode": action.mode,
    })))
}

/// The envelope a runtime acting for `principal_id` answers for `request` at
/// `now`, valid for `ttl` (or the request's `expires_in_ms`, whichever is
/// shorter); its action id is the proposed one, or one derived from the
/// digest.
pub fn envelope_for(
    request: &ActionRequest<'_>,
    principal_id: &str,
    now: OffsetDateTime,
    ttl: Duration,
) -> Result<ActionEnvelope, ComputerUseError> {
    let action = request.action;
    let digest = args_digest(request);
    let ttl = action
        .expires_in_ms
        .and_then(|ms| i64::try_from(ms).ok())
        .map_or(ttl, |ms| ttl.min(Duration::milliseconds(ms)));
    Ok(ActionEnvelope {
        action_id: action
            .action_id
            .clone()
            .unwrap_or_else(|| format!("action-{}", &digest[..12])),
        session_id: request.session_id.to_owned(),
        execution_group_id: request.execution_group_id.map(str::to_owned),
        principal_id: principal_id.to_owned(),
        agent_id: request.agent_id.map(str::to_owned),
        tool: action.tool.clone(),
        operation: action
            .operation
            .clone()
            .unwrap_or_else(|| action.tool.clone()),
        action_class: ActionClass::EditReversible,
        requested_mode: action.mode,
        target: action.target.clone(),
        resource: action.resource.clone(),
        provenance: action.provenance.clone(),
        target_sensitivity: None,
        data_labels: action.data_labels.clone(),
        postcondition: action.postcondition.clone(),
        reversible: true,
        external_side_effect: false,
        proposed_at: stamp(now)?.into(),
        expires_at: stamp(now + ttl)?.into(),
        args_digest: digest,
        attempt: None,
        certification_id: None,
    })
}

/// A capability of `app_id` for `operation` in `modes`.
pub fn capability(app_id: &str, operation: &str, modes: &[ExecutionMode]) -> ExecutionCapability {
    ExecutionCapability {
        app_id: app_id.to_owned(),
        operation: operation.to_owned(),
        backend: ExecutionBackend::Scripting,
        supported_modes: modes.to_vec(),
        interference: Interference::None,
        confidence: 1.0,
        verified_at: None,
        verification_source: VerificationSource::PlatformRule,
        certification: None,
    }
}

/// The preview of `envelope`, routed as `route`, under a policy whose
/// digest is `policy_digest`; its capability is for the envelope's
/// operation and mode.
pub fn preview_for(
    envelope: ActionEnvelope,
    route: PreviewRoute,
    policy_digest: &str,
) -> ActionPreview {
    let (executable, blocker, decision, reason) = match route {
        PreviewRoute::Allowed => (true, None, PolicyVerdict::Allow, "allowed".to_owned()),
        PreviewRoute::NeedsApproval => (
            false,
            Some(blockers::APPROVAL_REQUIRED.to_owned()),
            PolicyVerdict::Confirm,
            "a person must approve it".to_owned(),
        ),
        PreviewRoute::Blocked(code) => (false, Some(code.clone()), PolicyVerdict::Deny, code),
    };
    let app_id = envelope
        .target
        .as_ref()
        .map_or_else(|| "*".to_owned(), |t| t.app_id.clone());
    ActionPreview {
        capability: capability(&app_id, &envelope.operation, &[envelope.requested_mode]),
        envelope: Box::new(envelope),
        policy: PolicyDecision {
            decision,
            policy_digest: policy_digest.to_owned(),
            reasons: vec![reason],
        },
        executable,
        blocker,
    }
}

/// An active reservation `id` of the envelope's target (or of `app_id`
/// when the envelope names none), held for `ttl` from `now`.
pub fn reservation_for(
    envelope: &ActionEnvelope,
    id: impl Into<String>,
    app_id: &str,
    now: OffsetDateTime,
    ttl: Duration,
) -> Result<TargetReservation, ComputerUseError> {
    let target = envelope.target.as_ref();
    Ok(TargetReservation {
        reservation_id: id.into(),
        revision: 1,
        intent_id: envelope.action_id.clone(),
        session_id: envelope.session_id.clone(),
        principal_id: envelope.principal_id.clone(),
        execution_group_id: envelope.execution_group_id.clone(),
        agent_id: envelope.agent_id.clone(),
        scope: ReservationScope {
            app_id: target.map_or_else(|| app_id.to_owned(), |t| t.app_id.clone()),
            window_id: target.and_then(|t| t.window_id.clone()),
        },
        state: ReservationState::Active,
        acquired_at: stamp(now)?,
        expires_at: stamp(now + ttl)?.into(),
        terminal_reason: None,
    })
}

/// An active, single-action lease `id` for the envelope's session, agent and
/// mode, bounded to `app_ids`, held for `ttl` from `now`.
pub fn lease_for(
    envelope: &ActionEnvelope,
    id: impl Into<String>,
    app_ids: &[&str],
    now: OffsetDateTime,
    ttl: Duration,
) -> Result<ControlLease, ComputerUseError> {
    Ok(ControlLease {
        lease_id: id.into(),
        revision: 1,
        session_id: envelope.session_id.clone(),
        principal_id: envelope.principal_id.clone(),
        agent_id: envelope.agent_id.clone(),
        kind: LeaseKind::Cooperative,
        execution_mode: envelope.requested_mode,
        state: LeaseState::Active,
        acquired_at: stamp(now)?,
        expires_at: stamp(now + ttl)?.into(),
        action_budget: 1,
        actions_used: 0,
        boundaries: LeaseBoundaries {
            app_ids: app_ids.iter().map(|a| (*a).to_owned()).collect(),
            window_ids: vec![],
            display_ids: vec![],
        },
        terminal_reason: None,
    })
}

/// The committed receipt `id` of the envelope's action at `now`, whose
/// result is `result`.
pub fn receipt_for(
    envelope: &ActionEnvelope,
    id: impl Into<String>,
    now: OffsetDateTime,
    result: Option<Value>,
) -> Result<ExecutionReceipt, ComputerUseError> {
    let at = stamp(now)?;
    Ok(ExecutionReceipt {
        receipt_id: id.into(),
        session_id: envelope.session_id.clone(),
        action_id: envelope.action_id.clone(),
        action_digest: envelope.args_digest.clone(),
        attempt: 1,
        status: ReceiptStatus::Committed,
        created_at: at.clone(),
        updated_at: at,
        result,
        error: None,
    })
}
