//! The seam between the server's rules and the desktop they act on.
//!
//! Everything the v8 rules need from a desktop (a frame, the windows, a
//! tree, the clipboard, one mutation, the target checked again, the effect
//! checked, the cursor and focus put back) goes through [`DesktopBackend`].
//! The rules (sessions, previews and policy, grants, the lease queue,
//! reservations, receipts, events, refusal shapes) never see which desktop
//! answers. Two desktops implement it: the deterministic [`super::Desktop`]
//! and, with the `x11` feature, a real X11 display (`crate::desktop::x11`).

use serde_json::Value;

use super::Refusal;
use crate::desktop::simulated::Element;
use adk_computer_use::contracts::{Bounds, TargetEvidence};

/// How far stated bounds may be from the window's, per edge, as upstream's
/// `compareTargetEvidence` allows.
pub const BOUNDS_TOLERANCE_PX: f64 = 4.0;

/// Whether evidence that states `stated` (if anything) agrees with `now`.
pub fn stated_or_same(stated: Option<&String>, now: &str) -> bool {
    stated.is_none_or(|s| s == now)
}

/// Whether evidence that states `stated` bounds (if any) still describes a
/// window at `now` (`(x, y, width, height)`), each within
/// [`BOUNDS_TOLERANCE_PX`].
pub fn bounds_agree(stated: Option<&Bounds>, now: (i64, i64, u32, u32)) -> bool {
    stated.is_none_or(|b| {
        let (x, y, width, height) = now;
        [
            (b.x, x as f64),
            (b.y, y as f64),
            (b.width, f64::from(width)),
            (b.height, f64::from(height)),
        ]
        .iter()
        .all(|(stated, now)| (stated - now).abs() <= BOUNDS_TOLERANCE_PX)
    })
}

/// A frame of the screen, as `snapshot` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The PNG, base64.
    pub png_base64: String,
    /// `sha256:` and the hex of the PNG's bytes (upstream's frame digest).
    pub digest: String,
}

/// The server's own check of an effect, as the `action.verified` event
/// reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectCheck {
    /// Whether what the desktop shows agrees with the action.
    pub verified: bool,
    /// How it was checked (`simulated_state`, `x11_selection_readback`, ...).
    pub method: &'static str,
    /// How many checks were made; zero when nothing was checked.
    pub checks: u64,
}

/// Why a mutation did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyError {
    /// Refused before anything reached the desktop: the action is
    /// rejected, not indeterminate.
    NothingSent(Refusal),
    /// Failed once the effect may have begun: the outcome is unknown.
    Failed(Refusal),
}

impl From<Refusal> for ApplyError {
    fn from(error: Refusal) -> Self {
        Self::Failed(error)
    }
}

/// Which round of revalidation a target check is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revalidation {
    /// Right before the effect: every field the evidence states.
    BeforeEffect,
    /// Right before an element action (a tool that reaches the desktop
    /// through accessibility): the window's identity, title, bounds and
    /// tree, not its pixels. The element itself is found again and checked
    /// by the desktop before the effect; a blinking caret or a focus
    /// animation must not make it stale, a changed element must.
    BeforeElementEffect,
    /// Right after the effect. A desktop whose effects show on screen (a
    /// real one) may compare only the window's identity here: the action
    /// itself changed its pixels, and may have closed it.
    AfterEffect,
}

/// The cursor and focus around a mutation: `(cursor, (app id, window))`.
pub type PointerAndFocus = ((i64, i64), Option<(String, u64)>);

/// A desktop the server's rules act on.
///
/// Every method answers for the desktop as it is now; a method that needs
/// the display and cannot reach it answers with a [`Refusal`] (an
/// observation) or a failed check (a revalidation), never with a guess.
///
/// Every method takes `&self` and the desktop is shared between threads:
/// the server calls it without its own state held, so one slow
/// application (an accessibility walk, a form filled field by field)
/// holds up only the call that reaches it, never another session's. A
/// desktop keeps what one action notes for the next step of that action
/// (what it wrote, for the read-back) behind its own lock; the server runs
/// one mutation at a time on it (its effect gate), whatever the leases.
pub trait DesktopBackend: Send + Sync + 'static {
    /// A short name for reports: `simulated` or `x11`.
    fn kind(&self) -> &'static str;

    /// Whether this desktop can perform the (mutating or observing) tool.
    fn performs(&self, tool: &str) -> bool;

    /// What this desktop found of its platform, for
    /// `get_execution_capabilities` and the server's start: the protocols
    /// a compositor offers and the tools they allow. `None` where there is
    /// nothing to report beyond [`DesktopBackend::performs`].
    fn report(&self) -> Option<Value> {
        None
    }

    /// A copy of the simulated desktop as it is now, when this is it (for
    /// tests that inspect it).
    fn simulated(&self) -> Option<crate::desktop::simulated::SimulatedDesktop> {
        None
    }

    /// Whether this desktop performs `tool` without input and without
    /// taking the focus, so it may run in the background: an element
    /// action through the application's own accessibility interfaces.
    /// Upstream's rule (the simulated desktop's) is that an element action
    /// takes the foreground, so by default nothing does.
    fn acts_unfocused(&self, _tool: &str) -> bool {
        false
    }

    /// Whether this desktop reads a `set_value`'s element back through the
    /// application after the effect, and so checks the `ui_element`
    /// postcondition a client derives for it (announced in
    /// `adk/effect-checks`).
    fn reads_values_back(&self) -> bool {
        false
    }

    /// Whether `target` still describes a window of this desktop, as
    /// upstream's `compareTargetEvidence` decides it: every field the
    /// evidence states must equal what the desktop shows now (bounds
    /// within 4 px).
    fn is_current(&self, target: &TargetEvidence, round: Revalidation) -> bool;

    /// What no longer matches `target` (for `stale_target`'s details:
    /// `changed` is `window`, `bounds`, `title`, `tree` or `pixels`, with
    /// where or what, never in an application's words), or `None` when it
    /// still matches. By default only that something changed.
    fn what_changed(&self, target: &TargetEvidence, round: Revalidation) -> Option<Value> {
        (!self.is_current(target, round)).then(|| serde_json::json!({ "changed": "unknown" }))
    }

    /// Checks, before the effect boundary and before the lease is spent,
    /// that `tool` can be carried out whole on `target` with `args` (every
    /// point inside the target, every key on the keyboard). A refusal here
    /// means nothing was sent.
    fn prepare(
        &self,
        _tool: &str,
        _args: &Value,
        _target: Option<&TargetEvidence>,
    ) -> Result<(), Refusal> {
        Ok(())
    }

    /// A frame of the screen now: all of it, or the part `window` covers
    /// (upstream's `target_window_id`), where the desktop can frame one
    /// window.
    fn snapshot(&self, window: Option<u64>) -> Result<Frame, Refusal>;

    /// What `snapshot` reports beside the frame (cursor, focus, revision,
    /// what it shows).
    fn snapshot_fields(&self, window: Option<u64>) -> Value;

    /// The windows, as `list_windows` shows them.
    fn list_windows(&self) -> Result<Value, Refusal>;

    /// A window's tree, as `get_ui_tree` shows it, `max_depth` deep where
    /// the desktop walks an element tree (its default when `None`).
    fn ui_tree(
        &self,
        app_id: Option<&str>,
        window_id: Option<u64>,
        max_depth: Option<usize>,
    ) -> Result<Value, Refusal>;

    /// An element observation (`find_element`, `get_focused_element`), on
    /// a desktop that reads applications' elements; others refuse it.
    fn observe_elements(&self, tool: &str, _args: &Value) -> Result<Value, Refusal> {
        Err(Refusal::new(
            "tool_outside_host_profile",
            format!("the {} desktop does not perform {tool}", self.kind()),
        ))
    }

    /// Every text the window `window_id` shows through its elements (each
    /// element's name and label, and its value unless a password's), for
    /// `wait_for_text`, which matches them and answers none of them. A
    /// desktop without element trees refuses.
    fn window_texts(&self, _window_id: u64) -> Result<Vec<String>, Refusal> {
        Err(Refusal::new(
            "tool_outside_host_profile",
            format!(
                "the {} desktop reads no application's elements, so it cannot wait for a text",
                self.kind()
            ),
        ))
    }

    /// The accessibility elements of a window, where the desktop has them;
    /// otherwise why not, as the sensitivity check's signal:
    /// `invalid_field` (the window is unknown, or the desktop has no such
    /// tree), `accessibility_unavailable`, `accessibility_timeout` or
    /// `tree_too_large`.
    fn elements(&self, app_id: &str, window_id: u64) -> Result<Vec<Element>, &'static str>;

    /// The clipboard's text, read from the desktop.
    fn read_clipboard(&self) -> Result<String, Refusal>;

    /// The clipboard text last written through this server, for counters.
    fn clipboard_written(&self) -> Option<String>;

    /// Performs one mutating tool on the target; returns the tool's output.
    /// A refusal made before anything reached the desktop is
    /// [`ApplyError::NothingSent`].
    fn apply(
        &self,
        tool: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<Value, ApplyError>;

    /// Sees the sealed envelope of the action about to be sent, after the
    /// last revalidation and before the effect, for what a desktop needs of
    /// it (its data labels). By default nothing is noted or refused.
    fn before_effect(&self, _tool: &str, _envelope: &Value) -> Result<(), Refusal> {
        Ok(())
    }

    /// Whether a file check holds right now, looked at once without
    /// waiting: the engine refuses, before the effect, a check on a named
    /// file that already holds (it could not show the action's effect).
    fn file_holds_now(&self, path: &str, exists: bool, content_digest: Option<&str>) -> bool;

    /// Whether the window `window_id` is shown right now, looked at once
    /// without waiting: the engine refuses, before the effect, a check
    /// that a window is gone when it is gone already. `None` when this
    /// desktop cannot tell.
    fn window_shown_now(&self, _window_id: u64) -> Option<bool> {
        None
    }

    /// The server's own check of the effect of `tool` with `args`, against
    /// the postcondition the envelope declared (as JSON: one it cannot read
    /// fails the check).
    fn verify(
        &self,
        tool: &str,
        args: &Value,
        postcondition: Option<&Value>,
        target: Option<&TargetEvidence>,
    ) -> EffectCheck;

    /// The cursor and focus, before a mutation.
    fn capture(&self) -> PointerAndFocus;

    /// How many input events reached the desktop that this server did not
    /// send (a person's), since it started watching; `None` when it does
    /// not watch. A count that grows pauses every acting session
    /// (`user_takeover`).
    fn foreign_input(&self) -> Option<u64> {
        None
    }

    /// Puts the cursor and focus back; returns upstream's restoration
    /// record (`restored`, `cursorRestored`, `focusRestored`).
    fn restore(&self, before: PointerAndFocus) -> Value;
}
