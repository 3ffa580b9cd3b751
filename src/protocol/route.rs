//! Where a preview goes: on, to a person, or nowhere.

use super::witness::FreshPreview;
use super::{Approved, PendingApproval};
use crate::contracts::ActionPreview;
use crate::runtime::ComputerUseRuntime;

/// The three ways out of [`super::Previewed::route`].
#[must_use = "a route must be matched: it is either allowed, waiting for approval, or blocked"]
pub enum Route<R: ComputerUseRuntime> {
    /// Policy allows the action.
    Allowed(Approved<R>),
    /// A person must approve it first.
    NeedsApproval(PendingApproval<R>),
    /// It may not run.
    Blocked(Blocked),
}

/// An action that may not run. Terminal: no method leads anywhere else.
#[must_use = "a blocked action carries the reason it was blocked"]
#[derive(Debug)]
pub struct Blocked {
    preview: FreshPreview,
}

impl Blocked {
    pub(crate) fn new(preview: FreshPreview) -> Self {
        Self { preview }
    }

    /// The runtime's blocker code (`foreground_required`, `shadow_mutation`,
    /// ...), or `policy_denied` when policy refused an otherwise runnable action.
    pub fn blocker(&self) -> &str {
        self.preview
            .get()
            .blocker
            .as_deref()
            .unwrap_or("policy_denied")
    }

    /// The policy's reasons.
    pub fn reasons(&self) -> &[String] {
        &self.preview.get().policy.reasons
    }

    /// The preview that was blocked.
    pub fn preview(&self) -> &ActionPreview {
        self.preview.get()
    }
}
