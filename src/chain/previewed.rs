//! `Previewed`: the runtime has bound the action into a fresh envelope.

use std::sync::Arc;

use super::approvals::Authority;
use super::core::Core;
use super::route::{Blocked, Route, RouteKind, route_kind};
use super::witness::FreshPreview;
use super::{Approved, PendingApproval};
use serde_json::json;

use crate::contracts::ActionPreview;
use crate::journal::events;
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

    /// Routes the action by the table in [`super::Route`]'s module: allowed
    /// only when policy allows, nothing blocks and the preview is
    /// executable; to a person when approval is asked for in any way and
    /// nothing else blocks; blocked otherwise.
    pub fn route(self) -> Route<R> {
        let preview = self.preview.get();
        let kind = route_kind(preview);
        // Recorded while the preview is still borrowed, before it moves on.
        let action_id = preview.envelope.action_id.as_str();
        let recorder = &self.core.recorder;
        match kind {
            RouteKind::Allowed => recorder.note(
                action_id,
                events::APPROVED,
                || json!({ "authority": "policy" }),
            ),
            RouteKind::NeedsApproval => recorder.note(action_id, events::APPROVAL_REQUIRED, || {
                json!({
                    "actionDigest": preview.envelope.args_digest,
                    "policyDigest": preview.policy.policy_digest,
                })
            }),
            RouteKind::Blocked(_) => recorder.note(
                action_id,
                events::BLOCKED,
                || json!({ "blocker": preview.blocker, "reasons": preview.policy.reasons }),
            ),
        }
        match kind {
            RouteKind::Allowed => {
                Route::Allowed(Approved::new(self.core, self.preview, Authority::Policy))
            }
            RouteKind::NeedsApproval => {
                Route::NeedsApproval(PendingApproval::new(self.core, self.preview))
            }
            RouteKind::Blocked(code) => Route::Blocked(Blocked::new(self.preview, code)),
        }
    }
}
