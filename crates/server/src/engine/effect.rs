//! The desktop's part of an execution, done with the server's state
//! free (see `staged`): the checks before the effect and the effect with
//! its own checks. What they leave is settled on the state
//! (`State::settle`).

use adk_computer_use::contracts::{ActionPostcondition, PostconditionFields};
use serde_json::{Value, json};

use super::Refusal;
use super::actuate::{Desk, Snapshot, ToolResult};
use super::backend::{ApplyError, EffectCheck, Revalidation};
use super::execute::{Begun, Failure, before};
use super::preview::ActionRequest;
use super::wire::now;
use crate::desktop::deadline::Watch;

/// What the effect left, read on the desktop with the state free: the
/// tool's result, and for a mutation the server's check of it and of the
/// target after it.
pub(super) struct Performed {
    pub(super) result: Result<ToolResult, Failure>,
    /// The server's own check of the effect (a mutation that was sent).
    pub(super) check: Option<EffectCheck>,
    /// The target checked once more after the effect (when the effect's
    /// check held and the envelope has a target).
    pub(super) after: Option<Result<(), Refusal>>,
}

impl Performed {
    /// The desktop's code panicked during the effect: whether anything was
    /// sent is not known.
    pub(super) fn panicked() -> Self {
        Self {
            result: Err(Failure {
                error: Box::new(Refusal::new(
                    "indeterminate",
                    "the desktop failed during the effect; whether it was performed is not known",
                )),
                crossed: true,
            }),
            check: None,
            after: None,
        }
    }
}

impl Desk {
    /// A check that already holds before the action could not show the
    /// action's effect: a file check on a file the action only named (not
    /// a file tool's own path), or a check that a window is gone when it
    /// is gone already (or never was). Refused before anything is sent, on
    /// every desktop that can tell.
    fn refuse_held_before(&self, request: &ActionRequest, envelope: &Value) -> Result<(), Refusal> {
        if request.is_file_tool() {
            return Ok(());
        }
        let Some(postcondition) = envelope
            .get("postcondition")
            .and_then(|p| serde_json::from_value::<ActionPostcondition>(p.clone()).ok())
        else {
            return Ok(());
        };
        match postcondition.fields() {
            PostconditionFields::Filesystem {
                path,
                exists,
                content_digest,
            } if self.file_holds_now(path, *exists, content_digest.as_deref()) => {
                Err(Refusal::new(
                    "policy_denied",
                    format!(
                        "the file check on {path:?} holds before the action, so it could not show the action's effect: name a state only the action brings about (a content digest the file does not have yet)"
                    ),
                ))
            }
            // A window that is gone (or never was) before the action: its
            // being gone afterwards shows nothing the action did.
            PostconditionFields::Window {
                window_id,
                exists: false,
            } if self.window_shown_now(*window_id) == Some(false) => Err(Refusal::new(
                "policy_denied",
                format!(
                    "the check that window {window_id} is gone holds before the action, so it could not show the action's effect: name a window that is shown now"
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The checks before the effect, on the desktop: the target and its
    /// sensitivity revalidated, that the action can be carried out whole,
    /// its envelope seen, a check that already holds refused, the cursor
    /// and focus captured, and the target and its sensitivity revalidated
    /// once more (the capture came between). Nothing is sent
    /// here; the cursor and focus to put back, for a mutation.
    pub(super) fn check_before(&self, begun: &Begun) -> Result<Option<Snapshot>, Failure> {
        let (request, envelope) = (&begun.request, begun.preview.envelope());
        if !(begun.preview.meta.mutates && request.lease_id.is_some()) {
            return Ok(None);
        }
        // What changed since the preview is said first (`stale_target`,
        // naming it), before the desktop's own checks of the element.
        self.revalidate_context(request, envelope, now())
            .map_err(before)?;
        let target = envelope.get("target").and_then(super::actuate::evidence);
        // The desktop notes what the envelope says (its labels, its mode)
        // first: its checks of the element depend on the mode (a web
        // page's field is typed into only in the foreground).
        self.before_effect(&request.tool, envelope)
            .map_err(before)?;
        self.prepare(&request.tool, &request.args, target.as_ref())
            .map_err(before)?;
        self.refuse_held_before(request, envelope).map_err(before)?;
        let snapshot = self.capture();
        self.revalidate_context(request, envelope, now())
            .map_err(before)?;
        Ok(Some(snapshot))
    }

    /// The effect (or the observation), on the desktop: the mutation sent
    /// and checked, then the target checked once more. Waits are not run
    /// here: they look through the state (see `waiting`).
    /// A mutation whose lease ended since it was spent (`watch`) sends
    /// nothing; one of many writes stops before the next.
    pub(super) fn perform(&self, begun: &Begun, watch: Watch) -> Performed {
        let (request, envelope) = (&begun.request, begun.preview.envelope());
        if !begun.preview.meta.mutates {
            let result = self.observe(&request.tool, &request.args).map_err(|error| {
                // Upstream's shape, with the desktop's own code beside the
                // tool (`accessibility_timeout`, `stale_target`, ...): a
                // typed cause, never the desktop's message, which may hold
                // an application's text.
                before(Refusal::with_details(
                    "execution_failed",
                    "observation handler returned an error",
                    json!({ "tool": request.tool, "cause": error.code }),
                ))
            });
            return Performed {
                result,
                check: None,
                after: None,
            };
        }
        if watch.ended() {
            return Performed {
                result: Err(before(Refusal::new(
                    "interrupted",
                    "the action's lease ended (released, revoked, paused or stopped) after it was spent and before the effect: nothing was sent",
                ))),
                check: None,
                after: None,
            };
        }
        let tool = json!({ "tool": request.tool });
        let result = crate::desktop::deadline::watching(watch, || {
            self.mutate(&request.tool, &request.args, envelope.get("target"))
        })
        .map_err(|error| match error {
            // The desktop refused before anything reached it.
            ApplyError::NothingSent(error) => before(error),
            ApplyError::Failed(cause) => {
                // The wire says only "indeterminate" (upstream's shape); the
                // operator's log names the cause's code (never its words,
                // which may hold an application's text).
                eprintln!(
                    "computer-use-server: {} failed after its effect began ({})",
                    request.tool, cause.code
                );
                Failure {
                    error: Box::new(Refusal::with_details(
                        "indeterminate",
                        "mutating handler returned an error after entering the side-effect boundary",
                        tool,
                    )),
                    crossed: true,
                }
            }
        });
        if result.is_err() {
            return Performed {
                result,
                check: None,
                after: None,
            };
        }
        let check = self.verify_effect(
            &request.tool,
            &request.args,
            envelope.get("postcondition"),
            envelope.get("target"),
        );
        let after = match envelope.get("target") {
            Some(target) if check.verified => {
                Some(self.revalidate_target(target, now(), Revalidation::AfterEffect))
            }
            _ => None,
        };
        Performed {
            result,
            check: Some(check),
            after,
        }
    }
}
