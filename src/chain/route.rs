//! Where a preview goes: on, to a person, or nowhere.
//!
//! The route is a total function of three answers the runtime gives in a
//! preview: `executable`, `blocker` and the policy's `decision`. Where they
//! agree the route is obvious; where they contradict each other the route
//! fails closed — to a person when approval is among the things they say,
//! to `Blocked` otherwise:
//!
//! | decision | blocker | executable | route |
//! | --- | --- | --- | --- |
//! | `deny` | any | any | blocked (`policy_denied`, or the blocker) |
//! | `allow`/`confirm` | another code | any | blocked (that code) |
//! | `allow` | none | true | allowed |
//! | `allow` | none | false | blocked (`not_executable`) |
//! | `confirm` | none | true | needs approval |
//! | `confirm` | none | false | blocked (`not_executable`) |
//! | `allow`/`confirm` | `approval_required` | any | needs approval |

use super::witness::FreshPreview;
use super::{Approved, PendingApproval};
use crate::contracts::{ActionPreview, PolicyVerdict, blockers};
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

/// Which route the table above gives a preview.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RouteKind {
    Allowed,
    NeedsApproval,
    Blocked(&'static str),
}

/// The blocker code of a preview that has no blocker but cannot run.
pub(crate) const NOT_EXECUTABLE: &str = "not_executable";
/// The blocker code of a preview policy denied without naming a blocker.
pub(crate) const POLICY_DENIED: &str = "policy_denied";

/// The route table, as code. `Blocked` carries the code to show when the
/// preview names no blocker of its own.
pub(crate) fn route_kind(preview: &ActionPreview) -> RouteKind {
    let decision = preview.policy.decision;
    let blocker = preview.blocker.as_deref();
    match (decision, blocker, preview.executable) {
        (PolicyVerdict::Deny, _, _) => RouteKind::Blocked(POLICY_DENIED),
        (_, Some(code), _) if code != blockers::APPROVAL_REQUIRED => {
            RouteKind::Blocked(POLICY_DENIED)
        }
        (_, Some(_), _) => RouteKind::NeedsApproval,
        (PolicyVerdict::Allow, None, true) => RouteKind::Allowed,
        (PolicyVerdict::Confirm, None, true) => RouteKind::NeedsApproval,
        (_, None, false) => RouteKind::Blocked(NOT_EXECUTABLE),
    }
}

/// An action that may not run. Terminal: no method leads anywhere else.
#[must_use = "a blocked action carries the reason it was blocked"]
#[derive(Debug)]
pub struct Blocked {
    preview: FreshPreview,
    code: &'static str,
}

impl Blocked {
    pub(crate) fn new(preview: FreshPreview, code: &'static str) -> Self {
        Self { preview, code }
    }

    /// Why it may not run: the runtime's blocker code (`foreground_required`,
    /// `shadow_mutation`, ...); `policy_denied` when policy refused it; or
    /// `not_executable` when the preview named no blocker but could not run.
    pub fn blocker(&self) -> &str {
        self.preview.get().blocker.as_deref().unwrap_or(self.code)
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
