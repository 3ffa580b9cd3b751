//! `Observed`: the desktop has been looked at; nothing has been proposed yet.

use std::sync::Arc;

use super::Previewed;
use super::session::Core;
use super::witness::FreshPreview;
use serde_json::json;

use crate::ComputerUseError;
use crate::contracts::ActionEnvelope;
use crate::eval::journal_types;
use crate::runtime::{ActionRequest, ComputerUseRuntime, Observations, ProposedAction};

/// The result of one observation round, ready to preview an action.
#[must_use = "an observation does nothing until an action is previewed from it"]
pub struct Observed<R: ComputerUseRuntime> {
    core: Arc<Core<R>>,
    observations: Observations,
}

fn mismatch(field: &'static str, expected: &str, actual: &str) -> ComputerUseError {
    ComputerUseError::IdentityMismatch {
        object: "ActionEnvelope",
        field,
        expected: expected.to_owned(),
        actual: actual.to_owned(),
    }
}

impl<R: ComputerUseRuntime> Observed<R> {
    pub(crate) fn new(core: Arc<Core<R>>, observations: Observations) -> Self {
        Self { core, observations }
    }

    /// What was observed.
    pub fn observations(&self) -> &Observations {
        &self.observations
    }

    /// Asks the runtime to preview `action` and binds the envelope it returns
    /// to this session, this principal and this proposal; an envelope that is
    /// already expired stops here.
    pub async fn preview(self, action: ProposedAction) -> Result<Previewed<R>, ComputerUseError> {
        let core = self.core;
        let request = ActionRequest {
            session_id: core.session_id.clone(),
            agent_id: core.agent_id.clone(),
            execution_group_id: core.execution_group_id.clone(),
            action,
        };
        let preview = core.runtime.preview_action(&request).await?;
        let action_id = preview.envelope.action_id.clone();
        let bound = bind_to_request(&request, &preview.envelope).and_then(|()| {
            FreshPreview::check(
                preview,
                &core.session_id,
                core.identity().principal_id(),
                core.now(),
            )
        });
        let fresh = match bound {
            Ok(fresh) => fresh,
            Err(err) => {
                core.recorder.refusal(&action_id, &err);
                core.runtime.action_ended(&action_id);
                return Err(err);
            }
        };
        let previewed = fresh.get();
        core.recorder
            .record(&action_id, journal_types::PREVIEWED, || {
                json!({
                    "argsDigest": previewed.envelope.args_digest,
                    "policyDigest": previewed.policy.policy_digest,
                    "executable": previewed.executable,
                    "blocker": previewed.blocker,
                })
            })?;
        Ok(Previewed::new(core, fresh))
    }
}

/// The envelope is about the action that was proposed: same id (when one was
/// given), tool and mode, and the same agent and group when both name one.
fn bind_to_request(
    request: &ActionRequest,
    envelope: &ActionEnvelope,
) -> Result<(), ComputerUseError> {
    let proposed = &request.action;
    if let Some(action_id) = &proposed.action_id
        && action_id != &envelope.action_id
    {
        return Err(mismatch("actionId", action_id, &envelope.action_id));
    }
    if proposed.tool != envelope.tool {
        return Err(mismatch("tool", &proposed.tool, &envelope.tool));
    }
    if proposed.mode != envelope.requested_mode {
        return Err(mismatch(
            "requestedMode",
            proposed.mode.as_str(),
            envelope.requested_mode.as_str(),
        ));
    }
    for (field, expected, actual) in [
        ("agentId", &request.agent_id, &envelope.agent_id),
        (
            "executionGroupId",
            &request.execution_group_id,
            &envelope.execution_group_id,
        ),
    ] {
        if let (Some(expected), Some(actual)) = (expected, actual)
            && expected != actual
        {
            return Err(mismatch(field, expected, actual));
        }
    }
    Ok(())
}
