//! `Previewed`: the runtime has bound the action into a fresh envelope.

use std::sync::Arc;

use super::approval::Authority;
use super::route::{Blocked, Route};
use super::session::Core;
use super::witness::FreshPreview;
use super::{Approved, PendingApproval};
use serde_json::json;

use crate::contracts::{ActionPreview, PolicyVerdict, blockers};
use crate::eval::journal_types;
use crate::runtime::ComputerUseRuntime;

/// A bound, fresh preview waiting to be routed.
#[must_use = "a preview does nothing until it is routed"]
pub struct Previewed<R: ComputerUseRuntime> {
    core: Arc<Core<R>>,
    preview: FreshPreview,
}

impl<R: ComputerUseRuntime> Previewed<R> {
    pub(crate) fn new(core: Arc<Core<R>>, preview: FreshPreview) -> Self {
        Self { core, preview }
    }

    /// The preview.
    pub fn preview(&self) -> &ActionPreview {
        self.preview.get()
    }

    /// Routes the action: an executable preview that policy does not deny is
    /// allowed; a preview blocked by `approval_required` waits for a person;
    /// anything else is blocked, with the blocker and the policy's reasons.
    pub fn route(self) -> Route<R> {
        let way = self.way();
        // Recorded while the preview is still borrowed, before it moves on.
        let preview = self.preview.get();
        let action_id = preview.envelope.action_id.as_str();
        let recorder = &self.core.recorder;
        match way {
            Way::Allowed => recorder.note(
                action_id,
                journal_types::APPROVED,
                || json!({ "authority": "policy" }),
            ),
            Way::NeedsApproval => {
                recorder.note(action_id, journal_types::APPROVAL_REQUIRED, || {
                    json!({
                        "actionDigest": preview.envelope.args_digest,
                        "policyDigest": preview.policy.policy_digest,
                    })
                })
            }
            Way::Blocked => {
                recorder.note(
                    action_id,
                    journal_types::BLOCKED,
                    || json!({ "blocker": preview.blocker, "reasons": preview.policy.reasons }),
                );
                self.core.runtime.action_ended(action_id);
            }
        }
        match way {
            Way::Allowed => {
                Route::Allowed(Approved::new(self.core, self.preview, Authority::Policy))
            }
            Way::NeedsApproval => {
                Route::NeedsApproval(PendingApproval::new(self.core, self.preview))
            }
            Way::Blocked => Route::Blocked(Blocked::new(self.preview)),
        }
    }

    fn way(&self) -> Way {
        let preview = self.preview.get();
        let denied = preview.policy.decision == PolicyVerdict::Deny;
        if preview.executable && !denied {
            Way::Allowed
        } else if !denied && preview.blocker.as_deref() == Some(blockers::APPROVAL_REQUIRED) {
            Way::NeedsApproval
        } else {
            Way::Blocked
        }
    }
}

/// Which of the three routes a preview takes.
#[derive(Clone, Copy)]
enum Way {
    Allowed,
    NeedsApproval,
    Blocked,
}
