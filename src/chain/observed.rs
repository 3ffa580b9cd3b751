//! `Observed`: the desktop has been looked at; nothing has been proposed yet.

use std::sync::Arc;

use super::Previewed;
use super::core::Core;
use super::witness::FreshPreview;
use serde_json::json;

use super::proposal::{bind_capability, bind_to_request};
use crate::ComputerUseError;
use crate::clock::format_rfc3339;
use crate::contracts::{TargetEvidence, WindowId};
use crate::journal::events;
use crate::runtime::{
    ActionRequest, ComputerUseRuntime, Observations, ProposedAction, check_known_arguments,
    check_targeting, derive_postcondition,
};

/// The longest a preview may authorize, in milliseconds (five minutes).
const MAX_EXPIRES_IN_MS: u64 = 300_000;

/// The result of one observation round, ready to preview an action.
#[must_use = "an observation does nothing until an action is previewed from it"]
pub struct Observed<R: ComputerUseRuntime> {
    core: Arc<Core<R>>,
    observations: Observations,
    /// When the round ended, by the session's clock: the latest its frames
    /// can have been captured.
    observed_at: time::OffsetDateTime,
}

impl<R: ComputerUseRuntime> Observed<R> {
    pub(crate) fn new(core: Arc<Core<R>>, observations: Observations) -> Self {
        let observed_at = core.clock().now();
        Self {
            core,
            observations,
            observed_at,
        }
    }

    /// What was observed.
    pub fn observations(&self) -> &Observations {
        &self.observations
    }

    /// Target evidence for `app_id`'s window `window_id`, derived from this
    /// round's frames (see [`Observations::target_evidence`]).
    pub fn target_evidence(
        &self,
        app_id: &str,
        window_id: Option<&WindowId>,
    ) -> Result<TargetEvidence, ComputerUseError> {
        let observed_at = format_rfc3339(self.observed_at)?;
        self.observations
            .target_evidence(app_id, window_id, &observed_at)
    }

    /// Asks the runtime to preview `action` and binds the envelope it returns
    /// to this session, this principal and this proposal; an envelope that is
    /// already expired stops here.
    ///
    /// An action that carries no target evidence gets the evidence of the
    /// session's target (see [`SessionBuilder::target`](super::SessionBuilder::target))
    /// from what was observed, so the runtime revalidates it against the
    /// desktop as it was seen. Evidence an action carries itself must be for
    /// the session's target, when the session has one. A target the observation does not show is
    /// refused here ([`ComputerUseError::TargetNotObserved`]) before the
    /// runtime is asked anything. Only when the observation describes no
    /// window at all (some servers' observations carry none) does the action
    /// go without evidence, for the runtime to judge.
    pub async fn preview(self, action: &ProposedAction) -> Result<Previewed<R>, ComputerUseError> {
        self.core.ensure_open("preview")?;
        if let Some(ms) = action
            .expires_in_ms
            .filter(|ms| !(1..=MAX_EXPIRES_IN_MS).contains(ms))
        {
            return Err(ComputerUseError::InvalidField {
                object: "ProposedAction",
                field: "expiresInMs",
                expected: format!("1 to {MAX_EXPIRES_IN_MS} ms (the protocol's cap)"),
                actual: format!("{ms} ms"),
            });
        }
        // A known tool's arguments are checked before anything is sent:
        // a malformed one is refused here, not after the lease.
        check_known_arguments(&action.tool, &action.arguments)?;
        if let (Some(target), Some(app_id)) = (&action.target, &self.core.scope.app_id) {
            let window = self.core.scope.window_id.as_ref();
            let other_window = window.is_some_and(|w| target.window_id.as_ref() != Some(w));
            if &target.app_id != app_id || other_window {
                return Err(ComputerUseError::InvalidField {
                    object: "ProposedAction",
                    field: "target",
                    expected: format!(
                        "evidence for this session's target, {app_id} {}",
                        window.map_or_else(|| "(any window)".to_owned(), |w| format!("window {w}"))
                    ),
                    actual: format!(
                        "{} {}",
                        target.app_id,
                        target
                            .window_id
                            .as_ref()
                            .map_or_else(|| "(no window)".to_owned(), |w| format!("window {w}"))
                    ),
                });
            }
        }
        let mut derived = match (&action.target, &self.core.scope.app_id) {
            (None, Some(app_id)) if self.observations.shows_windows() => Some(
                action
                    .clone()
                    .with_target(self.target_evidence(app_id, self.core.scope.window_id.as_ref())?),
            ),
            _ => None,
        };
        // Verified by default: an effect the chain can name gets the
        // runtime's postcondition for it, checked against the arguments.
        if action.postcondition.is_none()
            && let Ok(postcondition) = derive_postcondition(
                &*self.core.runtime,
                &action.tool,
                &action.arguments,
                derived.as_ref().unwrap_or(action).target.as_ref(),
            )?
        {
            derived = Some(
                derived
                    .unwrap_or_else(|| action.clone())
                    .with_postcondition(postcondition),
            );
        }
        let action = derived.as_ref().unwrap_or(action);
        // Arguments that aim the tool elsewhere than the target evidence
        // (upstream's tools obey `target_window_id`) are refused.
        check_targeting(&action.arguments, action.target.as_ref())?;
        // The frame the person deciding later is shown: moved, not copied.
        let window_only = self
            .observations
            .visual
            .structured
            .get("scope")
            .and_then(serde_json::Value::as_str)
            == Some("window");
        let frame = self.observations.visual.images.into_iter().next();
        let core = self.core;
        let request = ActionRequest {
            session_id: &core.session_id,
            agent_id: core.agent_id.as_deref(),
            execution_group_id: core.execution_group_id.as_deref(),
            action,
        };
        let answer = core.runtime.preview_action(&request).await?;
        let preview = Box::new(answer.preview);
        let bound = match bind_to_request(&request, &preview.envelope)
            .and_then(|()| bind_capability(&preview))
        {
            Ok(()) => FreshPreview::check(
                preview,
                answer.retained,
                &core.session_id,
                core.identity().principal_id(),
                core.clock(),
            ),
            Err(err) => Err((err, preview)),
        };
        let fresh = match bound {
            Ok(fresh) => fresh
                .with_arguments(Some(action.arguments.clone()))
                .with_frame(frame, window_only),
            Err((err, preview)) => {
                core.recorder.refusal(&preview.envelope.action_id, &err);
                return Err(err);
            }
        };
        let previewed = fresh.get();
        let action_id = &previewed.envelope.action_id;
        core.recorder
            .record(action_id, events::PREVIEWED, || {
                json!({
                    "argsDigest": previewed.envelope.args_digest,
                    "policyDigest": previewed.policy.policy_digest,
                    "executable": previewed.executable,
                    "blocker": previewed.blocker,
                })
            })
            .wait()
            .await?;
        Ok(Previewed::new(core, fresh))
    }
}
