//! Response binding: is this answer about *our* request?
//!
//! Typed decoding proves an answer's shape, never its provenance: a lease of
//! another session decodes as cleanly as ours. Each validator here binds one
//! answer back to the envelope it was requested for, field by field, as the
//! seeds' tables list them. An optional field that comes back absent is
//! under-specification and accepted; present and different is a mismatch. The
//! plain functions ask the [`SystemClock`]; the `_at` twins take an explicit
//! time; the chain's stages ask their session's [`Clock`].

use time::OffsetDateTime;

use crate::ComputerUseError;
use crate::clock::{Clock, FixedClock, SystemClock, display};
use crate::contracts::{
    ActionEnvelope, ControlLease, ExecutionMode, ExecutionReceipt, LeaseKind, LeaseState,
    ReservationState, TargetReservation, WindowId, WireTime,
};

const LEASE: &str = "ControlLease";
const RESERVATION: &str = "TargetReservation";
const RECEIPT: &str = "ExecutionReceipt";
const ENVELOPE: &str = "ActionEnvelope";

/// `expected == actual`, or an [`ComputerUseError::IdentityMismatch`] naming the field.
///
/// Inlined: a chain binds some twenty fields, and the match is the hot path;
/// building the error is kept out of line.
#[inline]
pub(crate) fn bind(
    object: &'static str,
    field: &'static str,
    expected: &str,
    actual: &str,
) -> Result<(), ComputerUseError> {
    if expected == actual {
        Ok(())
    } else {
        Err(mismatch(object, field, expected, actual))
    }
}

#[cold]
#[inline(never)]
fn mismatch(
    object: &'static str,
    field: &'static str,
    expected: &str,
    actual: &str,
) -> ComputerUseError {
    ComputerUseError::IdentityMismatch {
        object,
        field,
        expected: expected.to_owned(),
        actual: actual.to_owned(),
    }
}

/// [`bind`] when both sides are present; an absent side is under-specification.
#[inline]
pub(crate) fn bind_optional(
    object: &'static str,
    field: &'static str,
    expected: Option<&str>,
    actual: Option<&str>,
) -> Result<(), ComputerUseError> {
    match (expected, actual) {
        (Some(expected), Some(actual)) => bind(object, field, expected, actual),
        _ => Ok(()),
    }
}

/// `actual == expected` for a wire state, or an error naming `object.state`
/// with both values as they are written on the wire.
pub(crate) fn require_state<S: PartialEq + serde::Serialize>(
    object: &'static str,
    expected: S,
    actual: S,
) -> Result<(), ComputerUseError> {
    if actual == expected {
        return Ok(());
    }
    let wire = |state: &S| match serde_json::to_value(state) {
        Ok(serde_json::Value::String(text)) => text,
        Ok(other) => other.to_string(),
        Err(err) => err.to_string(),
    };
    Err(ComputerUseError::invalid(
        object,
        "state",
        wire(&expected),
        wire(&actual),
    ))
}

/// `now < expiresAt` by `clock`, with the instant parsed when the answer was
/// decoded.
#[inline]
fn check_unexpired(
    object: &'static str,
    expires_at: &WireTime,
    clock: &dyn Clock,
) -> Result<(), ComputerUseError> {
    let expiry = expires_at.instant(object, "expiresAt")?;
    if clock.is_before(expiry) {
        return Ok(());
    }
    Err(expired(object, expires_at, clock))
}

#[cold]
#[inline(never)]
fn expired(object: &'static str, expires_at: &WireTime, clock: &dyn Clock) -> ComputerUseError {
    ComputerUseError::Expired {
        object,
        field: "expiresAt",
        expires_at: expires_at.to_string(),
        now: display(clock.now()),
    }
}

pub(crate) fn window_text(window: Option<&WindowId>) -> String {
    window.map_or_else(|| "none".to_owned(), ToString::to_string)
}

/// The envelope is well-timed: RFC 3339 timestamps, a positive validity window,
/// and `now < expiresAt` by the system clock.
pub fn validate_envelope_freshness(envelope: &ActionEnvelope) -> Result<(), ComputerUseError> {
    envelope_expiry(envelope, &SystemClock)
}

/// [`validate_envelope_freshness`] at an explicit time.
pub fn validate_envelope_freshness_at(
    envelope: &ActionEnvelope,
    now: OffsetDateTime,
) -> Result<(), ComputerUseError> {
    envelope_expiry(envelope, &FixedClock(now))
}

/// Checks the envelope's timestamps and its freshness.
pub(crate) fn envelope_expiry(
    envelope: &ActionEnvelope,
    clock: &dyn Clock,
) -> Result<(), ComputerUseError> {
    let proposed = envelope.proposed_at.instant(ENVELOPE, "proposedAt")?;
    let expires = envelope.expires_at.instant(ENVELOPE, "expiresAt")?;
    if expires <= proposed {
        return Err(ComputerUseError::invalid(
            ENVELOPE,
            "expiresAt",
            format!("a time after proposedAt ({})", envelope.proposed_at),
            envelope.expires_at.to_string(),
        ));
    }
    check_unexpired(ENVELOPE, &envelope.expires_at, clock)
}

/// Re-checks an expiry bound before: what time can change, nothing else.
/// The instant was parsed when the answer was decoded.
#[inline]
pub(crate) fn recheck_expiry(
    object: &'static str,
    expires_at: &WireTime,
    clock: &dyn Clock,
) -> Result<(), ComputerUseError> {
    check_unexpired(object, expires_at, clock)
}

/// The lease belongs to this envelope's session, principal, agent and mode; it
/// is active, unexpired, has budget left, and its boundaries cover the target.
pub fn validate_lease(
    lease: &ControlLease,
    envelope: &ActionEnvelope,
) -> Result<(), ComputerUseError> {
    lease_checks(lease, envelope, &SystemClock)
}

/// [`validate_lease`] at an explicit time.
pub fn validate_lease_at(
    lease: &ControlLease,
    envelope: &ActionEnvelope,
    now: OffsetDateTime,
) -> Result<(), ComputerUseError> {
    lease_checks(lease, envelope, &FixedClock(now))
}

/// Every lease rule.
pub(crate) fn lease_checks(
    lease: &ControlLease,
    envelope: &ActionEnvelope,
    clock: &dyn Clock,
) -> Result<(), ComputerUseError> {
    lease_checks_used(lease, lease.actions_used, envelope, clock)
}

/// Every lease rule, with `used` actions counted against the budget: the
/// lease's own `actionsUsed`, or more when actions were spent from it since
/// the server reported it (a task lease).
pub(crate) fn lease_checks_used(
    lease: &ControlLease,
    used: u32,
    envelope: &ActionEnvelope,
    clock: &dyn Clock,
) -> Result<(), ComputerUseError> {
    bind(LEASE, "sessionId", &envelope.session_id, &lease.session_id)?;
    bind(
        LEASE,
        "principalId",
        &envelope.principal_id,
        &lease.principal_id,
    )?;
    bind_optional(
        LEASE,
        "agentId",
        envelope.agent_id.as_deref(),
        lease.agent_id.as_deref(),
    )?;
    bind(
        LEASE,
        "executionMode",
        envelope.requested_mode.as_str(),
        lease.execution_mode.as_str(),
    )?;
    still_authorizes(lease, used, clock)?;
    let target = envelope.target.as_ref();
    let app = target.map(|t| t.app_id.as_str());
    let boundaries = &lease.boundaries;
    if !boundaries.app_ids.is_empty()
        && !app.is_some_and(|app| boundaries.app_ids.iter().any(|id| id == app))
    {
        return Err(ComputerUseError::invalid(
            LEASE,
            "boundaries.appIds",
            format!(
                "a boundary that includes the target app {}",
                app.unwrap_or("(none)")
            ),
            format!("{:?}", boundaries.app_ids),
        ));
    }
    let window = target.and_then(|t| t.window_id.as_ref());
    if !boundaries.window_ids.is_empty()
        && !window.is_some_and(|window| boundaries.window_ids.contains(window))
    {
        return Err(ComputerUseError::invalid(
            LEASE,
            "boundaries.windowIds",
            format!(
                "a boundary that includes the target window {}",
                window_text(window)
            ),
            format!(
                "[{}]",
                boundaries
                    .window_ids
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    Ok(())
}

/// The lease still authorizes an action: active, unexpired, and with
/// budget left after `used` actions.
fn still_authorizes(
    lease: &ControlLease,
    used: u32,
    clock: &dyn Clock,
) -> Result<(), ComputerUseError> {
    require_state(LEASE, LeaseState::Active, lease.state)?;
    check_unexpired(LEASE, &lease.expires_at, clock)?;
    if used >= lease.action_budget {
        return Err(ComputerUseError::invalid(
            LEASE,
            "actionsUsed",
            format!("fewer than actionBudget ({})", lease.action_budget),
            if used == lease.actions_used {
                used.to_string()
            } else {
                format!(
                    "{used} ({} as reported, {} spent since)",
                    lease.actions_used,
                    used.saturating_sub(lease.actions_used)
                )
            },
        ));
    }
    Ok(())
}

/// What a session asked of a task lease: who for, in which mode, how many
/// mutations, and the one target it is bounded to.
pub(crate) struct TaskAsk<'a> {
    pub(crate) session_id: &'a str,
    pub(crate) principal_id: &'a str,
    pub(crate) agent_id: Option<&'a str>,
    pub(crate) mode: ExecutionMode,
    pub(crate) budget: u32,
    pub(crate) app_id: &'a str,
    pub(crate) window_id: Option<&'a WindowId>,
}

/// A task lease as acquired: the session's, principal's and agent's, in the
/// mode asked for, active, unexpired, with budget left; and no wider than
/// asked: a budget no larger, boundaries that name the session's target
/// application (and window, when it names one) and nothing else. An
/// unscoped answer (empty boundaries) would authorize any target, so it is
/// refused here, where a per-action lease's is not.
pub(crate) fn task_lease_checks(
    lease: &ControlLease,
    ask: &TaskAsk<'_>,
    clock: &dyn Clock,
) -> Result<(), ComputerUseError> {
    bind(LEASE, "sessionId", ask.session_id, &lease.session_id)?;
    bind(LEASE, "principalId", ask.principal_id, &lease.principal_id)?;
    // Held for many actions, a task lease must name the agent it was asked
    // for: one that names none is not taken for it.
    if let Some(agent) = ask.agent_id {
        bind(
            LEASE,
            "agentId",
            agent,
            lease.agent_id.as_deref().unwrap_or(""),
        )?;
    }
    bind(
        LEASE,
        "executionMode",
        ask.mode.as_str(),
        lease.execution_mode.as_str(),
    )?;
    // Foreground work takes the desktop: the lease must be the exclusive
    // one asked for, not a cooperative one the person's input revokes.
    let kind = if ask.mode == ExecutionMode::Foreground {
        LeaseKind::Exclusive
    } else {
        LeaseKind::Cooperative
    };
    if lease.kind != kind {
        return Err(ComputerUseError::invalid(
            LEASE,
            "kind",
            format!("{kind:?}").to_lowercase(),
            format!("{:?}", lease.kind).to_lowercase(),
        ));
    }
    still_authorizes(lease, lease.actions_used, clock)?;
    if lease.action_budget > ask.budget {
        return Err(ComputerUseError::invalid(
            LEASE,
            "actionBudget",
            format!("at most the {} asked for", ask.budget),
            lease.action_budget.to_string(),
        ));
    }
    let apps = &lease.boundaries.app_ids;
    if apps.is_empty() || apps.iter().any(|app| app != ask.app_id) {
        return Err(ComputerUseError::invalid(
            LEASE,
            "boundaries.appIds",
            format!("[{}] (the session's target)", ask.app_id),
            format!("{apps:?}"),
        ));
    }
    if let Some(window) = ask.window_id {
        let windows = &lease.boundaries.window_ids;
        if windows.is_empty() || windows.iter().any(|w| w != window) {
            return Err(ComputerUseError::invalid(
                LEASE,
                "boundaries.windowIds",
                format!("[{window}] (the session's target)"),
                format!(
                    "[{}]",
                    windows
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// The reservation belongs to this envelope's session, principal, agent and
/// execution group, reserves this action's intent, is active and unexpired,
/// and covers exactly the envelope's target.
pub fn validate_reservation(
    reservation: &TargetReservation,
    envelope: &ActionEnvelope,
) -> Result<(), ComputerUseError> {
    reservation_checks(reservation, envelope, &SystemClock)
}

/// [`validate_reservation`] at an explicit time.
pub fn validate_reservation_at(
    reservation: &TargetReservation,
    envelope: &ActionEnvelope,
    now: OffsetDateTime,
) -> Result<(), ComputerUseError> {
    reservation_checks(reservation, envelope, &FixedClock(now))
}

/// Every reservation rule.
pub(crate) fn reservation_checks(
    reservation: &TargetReservation,
    envelope: &ActionEnvelope,
    clock: &dyn Clock,
) -> Result<(), ComputerUseError> {
    bind(
        RESERVATION,
        "sessionId",
        &envelope.session_id,
        &reservation.session_id,
    )?;
    bind(
        RESERVATION,
        "principalId",
        &envelope.principal_id,
        &reservation.principal_id,
    )?;
    bind_optional(
        RESERVATION,
        "agentId",
        envelope.agent_id.as_deref(),
        reservation.agent_id.as_deref(),
    )?;
    bind_optional(
        RESERVATION,
        "executionGroupId",
        envelope.execution_group_id.as_deref(),
        reservation.execution_group_id.as_deref(),
    )?;
    bind(
        RESERVATION,
        "intentId",
        &envelope.action_id,
        &reservation.intent_id,
    )?;
    require_state(RESERVATION, ReservationState::Active, reservation.state)?;
    check_unexpired(RESERVATION, &reservation.expires_at, clock)?;
    let target = envelope.target.as_ref();
    bind(
        RESERVATION,
        "scope.appId",
        target.map_or("(no target)", |t| t.app_id.as_str()),
        &reservation.scope.app_id,
    )?;
    if let Some(reserved) = &reservation.scope.window_id {
        let expected = target.and_then(|t| t.window_id.as_ref());
        if expected != Some(reserved) {
            return Err(ComputerUseError::IdentityMismatch {
                object: RESERVATION,
                field: "scope.windowId",
                expected: window_text(expected),
                actual: reserved.to_string(),
            });
        }
    }
    Ok(())
}

/// The receipt is about this envelope's session and action, and about the
/// exact work that was approved: its `actionDigest` equals `argsDigest`.
pub fn validate_receipt(
    receipt: &ExecutionReceipt,
    envelope: &ActionEnvelope,
) -> Result<(), ComputerUseError> {
    bind(
        RECEIPT,
        "sessionId",
        &envelope.session_id,
        &receipt.session_id,
    )?;
    bind(RECEIPT, "actionId", &envelope.action_id, &receipt.action_id)?;
    bind(
        RECEIPT,
        "actionDigest",
        &envelope.args_digest,
        &receipt.action_digest,
    )?;
    Ok(())
}

/// [`validate_receipt`] with an explicit time. A receipt carries no expiry, so
/// the time is not consulted; the twin exists so every validator has one.
pub fn validate_receipt_at(
    receipt: &ExecutionReceipt,
    envelope: &ActionEnvelope,
    _now: OffsetDateTime,
) -> Result<(), ComputerUseError> {
    validate_receipt(receipt, envelope)
}
