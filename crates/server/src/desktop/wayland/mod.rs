//! A Wayland compositor's desktop under the server's rules.
//!
//! [`WaylandDesktop`] is a [`DesktopBackend`]: the v8 rules of
//! [`crate::engine`] act on the compositor `$WAYLAND_DISPLAY` names, as
//! they act on an X11 display. Serve it with
//! `computer-use-server --desktop wayland`.
//!
//! Wayland gives a client no view of other clients: what this desktop can
//! do depends on the protocols the compositor offers, and it says which it
//! found ([`WaylandDesktop::protocols`], in `get_execution_capabilities`
//! and at startup). A tool whose protocol is missing is refused
//! `protocol_unavailable` before anything is sent.
//!
//! - **frames** through wlr-screencopy, of the output or of the region a
//!   window covers, as PNG with upstream's digest (`sha256:` + hex);
//! - **windows** from sway's IPC (id, app id, title, process, geometry,
//!   focus, visibility): no Wayland protocol tells a client where other
//!   windows are or which process owns them. The compositor's own toplevel
//!   list (wlr-foreign-toplevel-management) must agree: a window it does
//!   not list with the same app id and title is not current;
//! - **input** through a virtual keyboard (zwp-virtual-keyboard-v1, with a
//!   keymap of its own) and a virtual pointer
//!   (wlr-virtual-pointer-v1), to a target given the focus by sway first;
//!   every point must lie inside the target and outside every other shown
//!   window, or nothing is sent;
//! - **the clipboard** through wlr-data-control, read back as any client
//!   reads it, and kept after the server exits by
//!   `computer-use-wl-clipboard`;
//! - **elements** through the accessibility layer, the same tools as on
//!   X11. GTK on Wayland reports its
//!   frames in the window's own coordinates, so a window is found on the
//!   bus by its process, title and size.
//!
//! Revalidation is the X11 desktop's: before the effect every field the
//! evidence states is compared again (app, process, window, title digest,
//! display, bounds within 4 px, layout and element tree, and the pixels of
//! the frame the evidence names); a window that moved, closed, was
//! retitled or repainted is `stale_target` and nothing is sent.
//!
//! What Wayland protects that X11 did not, and how far: the core protocol
//! shows a client nothing of another's keys, pixels or clipboard and lets
//! it inject nothing; the compositor alone routes input. But the protocols
//! this desktop needs (virtual keyboard and pointer, screencopy,
//! data-control, foreign-toplevel) sway 1.7 offers to every client, and
//! its IPC to every process of the user: on sway another local program
//! may inject input, read the screen and the clipboard, and activate or
//! close windows, as this server does. What this desktop does not claim:
//! the check and the send are two steps (there is no server grab; a
//! window may change between them), a person's own input is not seen (no
//! protocol shows a client other input, so nothing pauses a session for
//! it), the cursor's position is not known (so it is not put back, and a
//! scroll needs a point), surfaces sway's tree does not list (panels,
//! overlays, popups) are not seen to cover a point, an overlay or input
//! method that takes the keyboard while sway reports the target focused
//! is not seen, and a caret's blink makes a window's pixels another
//! window's: the X11 desktop tolerates a change where the application
//! says its caret is, this one does not yet, so pixel-bound evidence of a
//! window with a blinking caret is refused as stale whenever the blink fell
//! between observation and execute. Pointer actions and window frames need
//! one plain output (at the origin, unscaled, unrotated); any other layout
//! is refused `output_layout_unsupported`.

mod act;
mod backend;
mod checks;
mod client;
mod clipboard;
mod keymap;
mod protocols;
mod sway;

pub use clipboard::{KEEPER_BINARY, keep_from_stdin};

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::desktop::atspi::actions::{ELEMENT_TOOLS, ElementHost, OBSERVE_TOOLS, Window};
use crate::desktop::atspi::observe::ElementObservations as _;
use crate::desktop::atspi::revision::structure_of;
use crate::desktop::atspi::{Accessibility, Node};
use crate::desktop::notes::{Noted, labels_a_secret};
use crate::desktop::simulated::Element;
use crate::engine::{
    ApplyError, DesktopBackend, EffectCheck, Frame, PointerAndFocus, Refusal, Revalidation,
    bounds_agree, stated_or_same,
};
use adk_computer_use::ComputerUseError;
use adk_computer_use::contracts::catalogue::tool;
use adk_computer_use::contracts::{TargetEvidence, WindowId};
use adk_computer_use::digest::{sha256_hex, sha256_prefixed};
use client::{Compositor, Pointer};
use sha2::Digest as _;

/// Frames remembered, newest last (their digests, regions and raw digests).
const REMEMBERED: usize = 64;

/// A frame handed out.
struct Seen {
    digest: String,
    region: (i32, i32, i32, i32),
    raw: [u8; 32],
}

/// A Wayland compositor's desktop. See the module documentation.
pub struct WaylandDesktop {
    compositor: Mutex<Compositor>,
    sway: Option<sway::Sway>,
    layout_note: String,
    size: (u32, u32),
    display: String,
    frames: Mutex<VecDeque<Seen>>,
    offer: Mutex<clipboard::Offer>,
    /// What the last action noted for its next steps.
    notes: Noted,
    keep_clipboard: bool,
    accessibility: Option<Accessibility>,
    accessibility_note: String,
}

fn unavailable(message: String) -> ComputerUseError {
    ComputerUseError::Transport {
        operation: "connect to the Wayland compositor".into(),
        message,
    }
}

fn stale(message: &str) -> Refusal {
    Refusal::new("stale_target", message)
}

fn invalid(message: impl Into<String>) -> Refusal {
    Refusal::new("invalid_arguments", message)
}

impl Drop for WaylandDesktop {
    /// The server's end: when asked to
    /// ([`WaylandDesktop::keeping_clipboard_after_exit`]), text this process
    /// still offers is handed to `computer-use-wl-clipboard`, unless it was
    /// labelled as a secret; the outcome is said on standard error.
    fn drop(&mut self) {
        let notes = self.notes.take();
        let Some(text) = notes.written else {
            return;
        };
        // The offer may have been replaced a moment ago, before its thread
        // heard: the clipboard is read once more, so that text a person
        // copied since is never overwritten by the keeper.
        if !self.keep_clipboard
            || !self
                .offer
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .stands()
            || clipboard::read().ok().as_deref() != Some(text.as_str())
        {
            return;
        }
        if notes.written_secret {
            eprintln!(
                "computer-use-server: the clipboard's text goes with this process: it was labelled as a secret (credential or payment), and is kept by no other program"
            );
            return;
        }
        match clipboard::hand_off(&text) {
            Ok(pid) => eprintln!(
                "computer-use-server: the clipboard's text stays, offered by {} (pid {pid}) until another program copies",
                clipboard::KEEPER_BINARY
            ),
            Err(why) => {
                eprintln!("computer-use-server: the clipboard's text goes with this process: {why}")
            }
        }
    }
}

impl WaylandDesktop {
    /// Connects to the compositor `$WAYLAND_DISPLAY` names, to sway's IPC
    /// (`$SWAYSOCK`) for the layout, and to the accessibility bus, and
    /// notes which protocols the compositor offers. A compositor without
    /// an output or screencopy still connects; the tools it cannot carry
    /// out are refused, each naming the protocol it lacks.
    pub fn connect() -> Result<Self, ComputerUseError> {
        let compositor = Compositor::connect().map_err(unavailable)?;
        let (sway, layout_note) = match sway::Sway::connect() {
            Ok(sway) => (Some(sway), String::new()),
            Err(note) => (None, note),
        };
        let size = compositor
            .output_size()
            .and_then(|(w, h)| Some((u32::try_from(w).ok()?, u32::try_from(h).ok()?)))
            .ok_or_else(|| unavailable("the compositor shows no output with a mode".into()))?;
        let (accessibility, accessibility_note) = match Accessibility::connect() {
            Ok(bus) => (Some(bus), String::new()),
            Err(refusal) => (None, refusal.message),
        };
        Ok(Self {
            compositor: Mutex::new(compositor),
            sway,
            layout_note,
            size,
            display: std::env::var("WAYLAND_DISPLAY").unwrap_or_else(|_| "wayland-0".into()),
            frames: Mutex::new(VecDeque::new()),
            offer: Mutex::default(),
            notes: Noted::default(),
            keep_clipboard: false,
            accessibility,
            accessibility_note,
        })
    }

    /// Keeps the clipboard's text after this desktop is dropped, as
    /// `wl-copy` does (see [`keep_from_stdin`]). Text labelled credential
    /// or payment is never handed on. Off by default.
    #[must_use]
    pub fn keeping_clipboard_after_exit(mut self) -> Self {
        self.keep_clipboard = true;
        self
    }

    fn compositor(&self) -> std::sync::MutexGuard<'_, Compositor> {
        self.compositor.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn frames(&self) -> std::sync::MutexGuard<'_, VecDeque<Seen>> {
        self.frames.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn sway(&self) -> Result<&sway::Sway, Refusal> {
        self.sway
            .as_ref()
            .ok_or_else(|| self.no_layout("this observation"))
    }

    fn windows(&self) -> Result<Vec<sway::Window>, Refusal> {
        self.sway()?.windows()
    }

    /// The window the evidence names, as sway shows it now.
    fn window_now(&self, target: &TargetEvidence) -> Result<Option<sway::Window>, Refusal> {
        let Some(WindowId::Number(id)) = target.window_id else {
            return Ok(None);
        };
        self.sway()?.window(id)
    }

    fn target_record(&self, target: Option<&TargetEvidence>) -> Result<sway::Window, Refusal> {
        let target = target.ok_or_else(|| invalid("input needs a target window"))?;
        self.window_now(target)?
            .ok_or_else(|| stale("the target window is gone"))
    }

    /// The region of the output a window covers, clipped to the output.
    fn region(&self, window: Option<u64>) -> Result<Option<(i32, i32, i32, i32)>, Refusal> {
        let Some(id) = window else {
            return Ok(None);
        };
        let sway = self.sway()?;
        // The region is given in the output's pixels, the window's bounds
        // in sway's layout: the same only on one plain output.
        sway.plain_output(self.size)?;
        let record = sway.window(id)?.ok_or_else(|| stale("no such window"))?;
        self.clip(record.bounds)
            .map(Some)
            .ok_or_else(|| stale("the window is off the output"))
    }

    fn clip(&self, (x, y, w, h): (i64, i64, u32, u32)) -> Option<(i32, i32, i32, i32)> {
        let left = x.max(0);
        let top = y.max(0);
        let right = (x + i64::from(w)).min(i64::from(self.size.0));
        let bottom = (y + i64::from(h)).min(i64::from(self.size.1));
        (right > left && bottom > top).then(|| {
            (
                i32::try_from(left).unwrap_or(0),
                i32::try_from(top).unwrap_or(0),
                i32::try_from(right - left).unwrap_or(0),
                i32::try_from(bottom - top).unwrap_or(0),
            )
        })
    }

    /// The pixels of `region` (the output when `None`) and their raw digest.
    fn capture(
        &self,
        region: Option<(i32, i32, i32, i32)>,
    ) -> Result<(client::Pixels, [u8; 32]), Refusal> {
        let pixels = self.compositor().capture(region)?;
        let raw: [u8; 32] = sha2::Sha256::digest(&pixels.rgba).into();
        Ok((pixels, raw))
    }

    /// The whole output's region, as frames remember it.
    fn whole(&self) -> (i32, i32, i32, i32) {
        (
            0,
            0,
            i32::try_from(self.size.0).unwrap_or(0),
            i32::try_from(self.size.1).unwrap_or(0),
        )
    }

    /// The revision of a window's layout and, where its application is on
    /// the accessibility bus, of its element tree (structure, roles,
    /// labels, bounds, actions; not values).
    fn window_revision(
        &self,
        record: &sway::Window,
    ) -> (String, Value, Result<crate::desktop::atspi::Tree, Refusal>) {
        let node = record.to_json(&self.display);
        let geometry = sha256_hex(node.to_string());
        let tree = self.element_tree(&self.for_elements(record));
        let geometry = format!("wayland-tree-{}-{}", record.id, &geometry[..16]);
        (
            crate::desktop::atspi::revision::window_revision(&geometry, tree.as_ref().ok()),
            node,
            tree,
        )
    }

    /// A sway window as the element tools see it: on Wayland, GTK reports
    /// its frame in the window's own coordinates.
    fn for_elements(&self, record: &sway::Window) -> Window {
        Window {
            id: record.id,
            app_id: record.app_id.clone(),
            pid: record.pid,
            title: record.title.clone(),
            bounds: (0, 0, record.bounds.2, record.bounds.3),
            focused: record.focused,
        }
    }
}
