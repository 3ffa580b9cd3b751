//! `Observed`: the desktop has been looked at; nothing has been proposed yet.

use std::sync::Arc;

use super::Previewed;
use super::session::Core;
use super::witness::FreshPreview;
use serde_json::json;

use crate::ComputerUseError;
use crate::eval::journal_types;
use crate::runtime::binding::bind_to_request;
use crate::runtime::{ActionRequest, ComputerUseRuntime, Observations, ProposedAction};

/// The result of one observation round, ready to preview an action.
#[must_use = "an observation does nothing until an action is previewed from it"]
pub struct Observed<R: ComputerUseRuntime> {
    core: Arc<Core<R>>,
    observations: Observations,
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
    pub async fn preview(self, action: &ProposedAction) -> Result<Previewed<R>, ComputerUseError> {
        let core = self.core;
        core.ensure_open("preview")?;
        let request = ActionRequest {
            session_id: &core.session_id,
            agent_id: core.agent_id.as_deref(),
            execution_group_id: core.execution_group_id.as_deref(),
            action,
        };
        let answer = core.runtime.preview_action(&request).await?;
        let preview = Box::new(answer.preview);
        let bound = match bind_to_request(&request, &preview.envelope) {
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
            Ok(fresh) => fresh,
            Err((err, preview)) => {
                core.recorder.refusal(&preview.envelope.action_id, &err);
                return Err(err);
            }
        };
        let previewed = fresh.get();
        let action_id = &previewed.envelope.action_id;
        core.recorder
            .record(action_id, journal_types::PREVIEWED, || {
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
