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

mod client;
mod clipboard;
mod keymap;
mod sway;

pub use clipboard::{KEEPER_BINARY, keep_from_stdin};

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

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
use adk_computer_use::contracts::{
    ActionPostcondition, PostconditionFields, TargetEvidence, WindowId,
};
use adk_computer_use::digest::{sha256_hex, sha256_prefixed};
use client::{Compositor, Pointer};
use sha2::Digest as _;

/// Observation tools, and the protocol each needs.
const OBSERVE: [(&str, Need); 4] = [
    (tool::SNAPSHOT, Need::Protocol("zwlr_screencopy_manager_v1")),
    (tool::LIST_WINDOWS, Need::Layout),
    (tool::GET_UI_TREE, Need::Layout),
    (
        tool::READ_CLIPBOARD,
        Need::Protocol("zwlr_data_control_manager_v1"),
    ),
];

/// Mutating tools, and the protocol each needs.
const ACT: [(&str, Need); 10] = [
    (
        tool::WRITE_CLIPBOARD,
        Need::Protocol("zwlr_data_control_manager_v1"),
    ),
    (
        tool::LEFT_CLICK,
        Need::Protocol("zwlr_virtual_pointer_manager_v1"),
    ),
    (
        tool::RIGHT_CLICK,
        Need::Protocol("zwlr_virtual_pointer_manager_v1"),
    ),
    (
        tool::DOUBLE_CLICK,
        Need::Protocol("zwlr_virtual_pointer_manager_v1"),
    ),
    (
        tool::MOUSE_MOVE,
        Need::Protocol("zwlr_virtual_pointer_manager_v1"),
    ),
    (
        tool::MOVE_CURSOR,
        Need::Protocol("zwlr_virtual_pointer_manager_v1"),
    ),
    (
        tool::LEFT_CLICK_DRAG,
        Need::Protocol("zwlr_virtual_pointer_manager_v1"),
    ),
    (
        tool::SCROLL,
        Need::Protocol("zwlr_virtual_pointer_manager_v1"),
    ),
    (
        tool::TYPE,
        Need::Protocol("zwp_virtual_keyboard_manager_v1"),
    ),
    (tool::KEY, Need::Protocol("zwp_virtual_keyboard_manager_v1")),
];

/// What a tool needs of the compositor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// A Wayland global, by interface name.
    Protocol(&'static str),
    /// The layout (sway's IPC).
    Layout,
}

/// How long a `filesystem` or `window` postcondition is waited for.
const EFFECT_WAIT: Duration = Duration::from_millis(1500);
/// How long a clipboard write's read-back waits for the text.
const CLIPBOARD_WAIT: Duration = Duration::from_millis(1000);
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

fn text<'a>(args: &'a Value, key: &str) -> Result<&'a str, Refusal> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("arguments.{key} must be a string")))
}

/// A point from `coordinate: [x, y]` (or `key`), as whole pixels.
fn point(args: &Value, key: &str) -> Result<(i64, i64), Refusal> {
    let pair = args
        .get(key)
        .and_then(Value::as_array)
        .filter(|p| p.len() == 2)
        .ok_or_else(|| invalid(format!("arguments.{key} must be [x, y]")))?;
    let at = |i: usize| {
        pair[i]
            .as_i64()
            .ok_or_else(|| invalid(format!("arguments.{key} must hold whole pixels")))
    };
    Ok((at(0)?, at(1)?))
}

/// The evdev codes of the pointer's buttons.
const BTN_LEFT: u32 = 0x110;
const BTN_RIGHT: u32 = 0x111;
/// Most wheel steps one `scroll` sends.
const MOST_STEPS: u64 = 100;

/// What one input action sends.
enum Plan {
    Keys(keymap::Keys),
    Pointer(Vec<Pointer>),
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

    /// What the compositor offers and what this desktop does with it: each
    /// protocol it uses (found or not, with its version), the layout's
    /// source, the accessibility bus, and the tools it can perform.
    pub fn protocols(&self) -> Value {
        let compositor = self.compositor();
        let protocols: Vec<Value> = client::USED
            .iter()
            .map(|(interface, purpose)| {
                let version = compositor
                    .globals
                    .iter()
                    .find(|(name, _)| name == interface)
                    .map(|(_, v)| *v);
                json!({ "interface": interface, "found": version.is_some(), "version": version, "for": purpose })
            })
            .collect();
        // Newer protocols a compositor may offer instead; not used yet, so
        // only reported.
        let also: Vec<&str> = [
            "ext_foreign_toplevel_list_v1",
            "ext_image_copy_capture_manager_v1",
            "ext_data_control_manager_v1",
        ]
        .into_iter()
        .filter(|i| compositor.offers(i))
        .collect();
        drop(compositor);
        let performs: Vec<&str> = OBSERVE
            .iter()
            .chain(ACT.iter())
            .map(|(t, _)| *t)
            .chain(ELEMENT_TOOLS)
            .chain(OBSERVE_TOOLS)
            .filter(|t| self.performs(t))
            .collect();
        json!({
            "desktop": "wayland",
            "display": self.display,
            "protocols": protocols,
            "alsoOffered": also,
            "layout": if self.sway.is_some() { json!({ "source": "sway_ipc" }) } else { json!({ "source": null, "note": self.layout_note }) },
            "accessibility": if self.accessibility.is_some() { json!("atspi") } else { json!({ "unavailable": self.accessibility_note }) },
            "performs": performs,
            "personInputWatched": false,
        })
    }

    /// Why `tool` cannot be performed here, or `None` when it can.
    fn lacks(&self, tool: &str) -> Option<Refusal> {
        let need = OBSERVE
            .iter()
            .chain(ACT.iter())
            .find(|(t, _)| *t == tool)
            .map(|(_, n)| *n);
        match need {
            Some(Need::Protocol(interface)) => {
                let found = self.compositor().offers(interface)
                    && (interface != "zwp_virtual_keyboard_manager_v1"
                        && interface != "zwlr_data_control_manager_v1"
                        || self.compositor().offers("wl_seat"));
                let pointer_layout = interface == "zwlr_virtual_pointer_manager_v1"
                    || interface == "zwp_virtual_keyboard_manager_v1";
                if !found {
                    Some(client::missing(interface, tool))
                } else if pointer_layout && self.sway.is_none() {
                    Some(self.no_layout(tool))
                } else {
                    None
                }
            }
            Some(Need::Layout) => self.sway.is_none().then(|| self.no_layout(tool)),
            None if ELEMENT_TOOLS.contains(&tool) || OBSERVE_TOOLS.contains(&tool) => {
                if self.accessibility.is_none() {
                    Some(Refusal::new(
                        "accessibility_unavailable",
                        self.accessibility_note.clone(),
                    ))
                } else if self.sway.is_none() {
                    Some(self.no_layout(tool))
                } else {
                    None
                }
            }
            None => Some(Refusal::new(
                "tool_outside_host_profile",
                format!("the Wayland desktop does not perform {tool}"),
            )),
        }
    }

    fn no_layout(&self, tool: &str) -> Refusal {
        Refusal::new(
            "layout_unavailable",
            format!(
                "{tool} needs the compositor's layout (which window is where, and whose), which only sway's IPC gives here: {}",
                self.layout_note
            ),
        )
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
    fn window_revision(&self, record: &sway::Window) -> (String, Value) {
        let node = record.to_json(&self.display);
        let geometry = sha256_hex(node.to_string());
        let tree = self.element_tree(&self.for_elements(record)).ok();
        let geometry = format!("wayland-tree-{}-{}", record.id, &geometry[..16]);
        (
            crate::desktop::atspi::revision::window_revision(&geometry, tree.as_ref()),
            node,
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

    /// Whether the compositor's own toplevel list shows a window with this
    /// app id and title (where the compositor offers that list).
    fn listed_as_toplevel(&self, record: &sway::Window) -> Result<bool, Refusal> {
        Ok(match self.compositor().toplevels()? {
            None => true,
            Some(list) => list
                .iter()
                .any(|t| t.app_id == record.app_id && t.title == record.title),
        })
    }

    fn current(&self, target: &TargetEvidence, round: Revalidation) -> Result<bool, Refusal> {
        let Some(now) = self.window_now(target)? else {
            // Gone. An action may close its own window (a dialog's button).
            return Ok(round == Revalidation::AfterEffect);
        };
        let identity = target.app_id == now.app_id
            && target.pid.is_none_or(|pid| Some(pid) == now.pid)
            && stated_or_same(target.display_id.as_ref(), &self.display)
            && target.platform == std::env::consts::OS;
        if round == Revalidation::AfterEffect || !identity {
            return Ok(identity);
        }
        if !now.visible
            || !bounds_agree(target.bounds.as_ref(), now.bounds)
            || !stated_or_same(target.window_title_digest.as_ref(), &now.title_digest())
            || !self.listed_as_toplevel(&now)?
        {
            return Ok(false);
        }
        // The structure only: what the elements hold is bound by a press,
        // which checks it itself.
        if let Some(revision) = &target.ui_tree_revision
            && structure_of(revision) != structure_of(&self.window_revision(&now).0)
        {
            return Ok(false);
        }
        if let Some(stated) = &target.screenshot_hash
            && round == Revalidation::BeforeEffect
        {
            // The frame must show the target: the whole output, or the
            // window's own part of it, captured again and compared by its
            // raw pixels. A frame of another region does not vouch for the
            // target; a digest never handed out is compared with the whole
            // output, encoded.
            let regions = [Some(self.whole()), self.clip(now.bounds)];
            let handed_out = {
                let frames = self.frames();
                regions.into_iter().flatten().find_map(|region| {
                    frames
                        .iter()
                        .find(|s| s.digest == *stated && s.region == region)
                        .map(|s| (region, s.raw))
                })
            };
            let known = self.frames().iter().any(|s| s.digest == *stated);
            let same = match handed_out {
                Some((region, raw)) => {
                    let region = (region != self.whole()).then_some(region);
                    self.capture(region)?.1 == raw
                }
                None if known => false,
                None => {
                    let (pixels, _) = self.capture(None)?;
                    sha256_prefixed(encode(&pixels)?) == *stated
                }
            };
            if !same {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Every point the plan touches lies inside the target, on the output,
    /// and outside every other shown window.
    fn check_point(
        &self,
        target: &sway::Window,
        all: &[sway::Window],
        at: (i64, i64),
    ) -> Result<(u32, u32), Refusal> {
        if !target.contains(at) {
            return Err(Refusal::new(
                "point_outside_target",
                format!("the point {at:?} is outside the target window"),
            ));
        }
        let on_output = u32::try_from(at.0)
            .ok()
            .zip(u32::try_from(at.1).ok())
            .filter(|(x, y)| *x < self.size.0 && *y < self.size.1)
            .ok_or_else(|| {
                Refusal::new(
                    "point_outside_target",
                    format!("the point {at:?} is off the output"),
                )
            })?;
        if let Some(other) = all
            .iter()
            .find(|w| w.id != target.id && w.visible && w.takes_pointer_at(at))
        {
            // The other window's app_id is its client's own choice (it may
            // read as an instruction): in the details, marked, never in the
            // message.
            return Err(Refusal::with_details(
                "target_covered",
                format!(
                    "the point {at:?} is also inside window {}: which one would take it is not known",
                    other.id
                ),
                json!({
                    "windowId": other.id,
                    "appId": other.app_id,
                    "contentOrigin": "application_untrusted",
                }),
            ));
        }
        Ok(on_output)
    }

    /// The whole of what `tool` sends, checked before anything is.
    fn plan(&self, tool: &str, args: &Value, target: &sway::Window) -> Result<Plan, Refusal> {
        if !matches!(tool, tool::TYPE | tool::KEY) {
            // Points are checked in sway's layout and sent on the output.
            self.sway()?.plain_output(self.size)?;
        }
        let all = self.windows()?;
        let moved = |key: &str| -> Result<Pointer, Refusal> {
            let (x, y) = self.check_point(target, &all, point(args, key)?)?;
            Ok(Pointer::Move(x, y))
        };
        let click = |button: u32, times: usize| -> Result<Plan, Refusal> {
            let mut events = vec![moved("coordinate")?];
            for _ in 0..times {
                events.push(Pointer::Button(button, true));
                events.push(Pointer::Button(button, false));
            }
            Ok(Plan::Pointer(events))
        };
        match tool {
            tool::LEFT_CLICK => click(BTN_LEFT, 1),
            tool::RIGHT_CLICK => click(BTN_RIGHT, 1),
            tool::DOUBLE_CLICK => click(BTN_LEFT, 2),
            tool::MOUSE_MOVE | tool::MOVE_CURSOR => Ok(Plan::Pointer(vec![moved("coordinate")?])),
            tool::LEFT_CLICK_DRAG => Ok(Plan::Pointer(vec![
                moved("start_coordinate")?,
                Pointer::Button(BTN_LEFT, true),
                moved("coordinate")?,
                Pointer::Button(BTN_LEFT, false),
            ])),
            tool::SCROLL => {
                let (axis, sign) = match args.get("direction").and_then(Value::as_str) {
                    Some("up") => (false, -1),
                    Some("down") => (false, 1),
                    Some("left") => (true, -1),
                    Some("right") => (true, 1),
                    _ => {
                        return Err(invalid(
                            "arguments.direction must be up, down, left or right",
                        ));
                    }
                };
                let steps = match args.get("amount") {
                    None => 1,
                    Some(amount) => amount
                        .as_u64()
                        .filter(|n| (1..=MOST_STEPS).contains(n))
                        .ok_or_else(|| {
                            invalid(format!("arguments.amount must be 1 to {MOST_STEPS}"))
                        })?,
                };
                // The wheel goes where the pointer is, which this desktop
                // cannot know: it is moved to a checked point first.
                if args.get("coordinate").is_none() {
                    return Err(invalid(
                        "arguments.coordinate is needed to scroll on Wayland (where the pointer is now is not known)",
                    ));
                }
                let mut events = vec![moved("coordinate")?];
                events.push(Pointer::Wheel(
                    axis,
                    sign * i32::try_from(steps).unwrap_or(1),
                ));
                Ok(Plan::Pointer(events))
            }
            tool::TYPE => keymap::type_text(text(args, "text")?).map(Plan::Keys),
            tool::KEY => keymap::chord(text(args, "text")?).map(Plan::Keys),
            other => Err(Refusal::new(
                "tool_outside_host_profile",
                format!("the Wayland desktop does not perform {other}"),
            )),
        }
    }

    /// Checks the target again, gives it the focus, checks that it holds
    /// it (and is still where it was), then sends.
    fn send_checked(
        &self,
        tool: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<Value, ApplyError> {
        let refused = ApplyError::NothingSent;
        if let Some(evidence) = target
            && !self
                .current(evidence, Revalidation::BeforeEffect)
                .map_err(refused)?
        {
            return Err(refused(Refusal::with_details(
                "stale_target",
                "target evidence no longer matches the desktop",
                json!({ "observationId": evidence.observation_id }),
            )));
        }
        let window = self.target_record(target).map_err(refused)?;
        let plan = self.plan(tool, args, &window).map_err(refused)?;
        // A new keymap takes a while to reach the client; it is handed over
        // before the focus is checked, so that nothing waits between the
        // last check and the keys.
        if let Plan::Keys(keys) = &plan {
            self.compositor()
                .set_keymap(&keys.keymap)
                .map_err(refused)?;
        }
        let sway = self.sway().map_err(refused)?;
        if !window.focused {
            sway.focus(window.id).map_err(refused)?;
        }
        // The focus is the target's, and it did not move while taking it.
        let now = sway.window(window.id).map_err(refused)?;
        let now = match now {
            Some(now)
                if now.focused && now.bounds == window.bounds && now.title == window.title =>
            {
                now
            }
            Some(_) => {
                return Err(refused(stale(
                    "the target did not take the focus, or changed while taking it",
                )));
            }
            None => return Err(refused(stale("the target window is gone"))),
        };
        // Taking the focus raises the target and may have moved others:
        // every point is checked again on the layout as it is now.
        let plan = match plan {
            Plan::Pointer(_) => self.plan(tool, args, &now).map_err(refused)?,
            keys => keys,
        };
        let sent = match plan {
            Plan::Keys(keys) => {
                let count = keys.events.len();
                self.compositor().send_keys(&keys.keymap, &keys.events)?;
                count
            }
            Plan::Pointer(events) => {
                self.compositor().send_pointer(&events, self.size)?;
                events.len()
            }
        };
        Ok(json!({ "sent": sent, "windowId": window.id }))
    }

    fn clipboard_check(&self, args: &Value, postcondition: Option<&Value>) -> EffectCheck {
        let wanted = args.get("text").and_then(Value::as_str);
        // The offer is set on another connection; read until it is served.
        let deadline = Instant::now() + CLIPBOARD_WAIT;
        let mut read = clipboard::read().ok();
        while read.as_deref() != wanted && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
            read = clipboard::read().ok();
        }
        let digest_holds = match postcondition {
            None => true,
            Some(p) => match serde_json::from_value::<ActionPostcondition>(p.clone()) {
                Ok(p) => p
                    .expected_digest()
                    .is_none_or(|d| read.as_deref().map(sha256_prefixed).as_deref() == Some(d)),
                Err(_) => false,
            },
        };
        // A read-back proves what every client gets only while the offer is
        // this process's own: another client's offer may answer each
        // reader differently.
        let ours = self
            .offer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .stands();
        EffectCheck {
            verified: ours && wanted.is_some() && read.as_deref() == wanted && digest_holds,
            method: "wayland_data_control_readback",
            checks: 2,
        }
    }

    fn postcondition_check(&self, postcondition: &Value) -> EffectCheck {
        let unobservable = EffectCheck {
            verified: false,
            method: "wayland_unobservable",
            checks: 0,
        };
        let Ok(postcondition) =
            serde_json::from_value::<ActionPostcondition>(postcondition.clone())
        else {
            return unobservable;
        };
        let waited = |holds: &dyn Fn() -> bool| {
            let deadline = Instant::now() + EFFECT_WAIT;
            let mut verified = holds();
            while !verified && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(25));
                verified = holds();
            }
            verified
        };
        match postcondition.fields() {
            PostconditionFields::Window { window_id, exists } => EffectCheck {
                verified: waited(&|| self.window_shown_now(*window_id) == Some(*exists)),
                method: "wayland_window_state",
                checks: 1,
            },
            PostconditionFields::Filesystem {
                path,
                exists,
                content_digest,
            } => EffectCheck {
                verified: waited(&|| {
                    crate::desktop::files::file_holds(path, *exists, content_digest.as_deref())
                }),
                method: "wayland_filesystem_read",
                checks: 1,
            },
            _ => unobservable,
        }
    }
}

/// The PNG of RGBA pixels, as RGB (8 bits a channel), as on X11.
fn encode(pixels: &client::Pixels) -> Result<Vec<u8>, Refusal> {
    let mut rgb = Vec::with_capacity(pixels.rgba.len() / 4 * 3);
    for px in pixels.rgba.chunks_exact(4) {
        rgb.extend_from_slice(&px[..3]);
    }
    let mut png_bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut png_bytes, pixels.width, pixels.height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    let failed = |e: png::EncodingError| Refusal::plain(format!("PNG encoding failed: {e}"));
    let mut writer = encoder.write_header().map_err(failed)?;
    writer.write_image_data(&rgb).map_err(failed)?;
    writer.finish().map_err(failed)?;
    Ok(png_bytes)
}

impl ElementHost for WaylandDesktop {
    fn accessibility(&self) -> Option<&Accessibility> {
        self.accessibility.as_ref()
    }

    fn accessibility_note(&self) -> &str {
        &self.accessibility_note
    }

    fn element_windows(&self) -> Result<Vec<Window>, Refusal> {
        Ok(self
            .windows()?
            .iter()
            .map(|w| self.for_elements(w))
            .collect())
    }

    fn element_target(&self, target: Option<&TargetEvidence>) -> Result<Window, Refusal> {
        self.target_record(target).map(|w| self.for_elements(&w))
    }

    fn written_elements(&self) -> Vec<Node> {
        self.notes.get().written_elements.clone()
    }

    fn set_written_elements(&self, nodes: Vec<Node>) {
        self.notes.get().written_elements = nodes;
    }
}

impl DesktopBackend for WaylandDesktop {
    fn kind(&self) -> &'static str {
        "wayland"
    }

    fn performs(&self, tool: &str) -> bool {
        self.lacks(tool).is_none()
    }

    fn reads_values_back(&self) -> bool {
        self.accessibility.is_some()
    }

    fn acts_unfocused(&self, tool: &str) -> bool {
        self.accessibility.is_some() && ELEMENT_TOOLS.contains(&tool)
    }

    fn report(&self) -> Option<Value> {
        Some(self.protocols())
    }

    fn is_current(&self, target: &TargetEvidence, round: Revalidation) -> bool {
        self.current(target, round).unwrap_or(false)
    }

    fn prepare(
        &self,
        tool: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<(), Refusal> {
        if let Some(refusal) = self.lacks(tool) {
            return Err(refusal);
        }
        match tool {
            tool::WRITE_CLIPBOARD => {
                if text(args, "text")?.len() > clipboard::MOST_BYTES {
                    return Err(invalid(format!(
                        "arguments.text is longer than {} bytes",
                        clipboard::MOST_BYTES
                    )));
                }
                Ok(())
            }
            _ if ELEMENT_TOOLS.contains(&tool) => self.prepare_elements(tool, args, target),
            tool::READ_CLIPBOARD
            | tool::SNAPSHOT
            | tool::LIST_WINDOWS
            | tool::GET_UI_TREE
            | tool::FIND_ELEMENT
            | tool::GET_FOCUSED_ELEMENT => Ok(()),
            _ => {
                let window = self.target_record(target)?;
                self.plan(tool, args, &window).map(drop)
            }
        }
    }

    fn snapshot(&self, window: Option<u64>) -> Result<Frame, Refusal> {
        if let Some(refusal) = self.lacks(tool::SNAPSHOT) {
            return Err(refusal);
        }
        let region = self.region(window)?;
        let (pixels, raw) = self.capture(region)?;
        let png = encode(&pixels)?;
        let digest = sha256_prefixed(&png);
        let region = region.unwrap_or_else(|| self.whole());
        let mut frames = self.frames();
        if !frames
            .iter()
            .any(|s| s.digest == digest && s.region == region)
        {
            frames.push_back(Seen {
                digest: digest.clone(),
                region,
                raw,
            });
            while frames.len() > REMEMBERED {
                frames.pop_front();
            }
        }
        Ok(Frame {
            png_base64: base64::engine::general_purpose::STANDARD.encode(&png),
            digest,
        })
    }

    fn snapshot_fields(&self, window: Option<u64>) -> Value {
        json!({
            // No Wayland protocol tells a client where the cursor is.
            "cursor": null,
            "display": self.display,
            "size": { "width": self.size.0, "height": self.size.1 },
            "scope": if window.is_some() { "window" } else { "screen" },
        })
    }

    fn list_windows(&self) -> Result<Value, Refusal> {
        let windows: Vec<Value> = self
            .windows()?
            .iter()
            .map(|w| w.to_json(&self.display))
            .collect();
        Ok(json!({ "windows": windows }))
    }

    fn ui_tree(
        &self,
        app_id: Option<&str>,
        window_id: Option<u64>,
        max_depth: Option<usize>,
    ) -> Result<Value, Refusal> {
        let record = self
            .windows()?
            .into_iter()
            .filter(|r| app_id.is_none_or(|a| a == r.app_id))
            .find(|r| window_id.is_none_or(|w| w == r.id))
            .ok_or_else(|| stale("no such window"))?;
        let (revision, node) = self.window_revision(&record);
        // The app id and the window's title are its client's own words.
        let mut answer = json!({
            "contentOrigin": "application_untrusted",
            "appId": record.app_id,
            "windowId": record.id,
            "window": node,
            "uiTreeRevision": revision,
            "treeKind": "wayland_layout",
            "accessibility": "unavailable",
            "elements": [],
            "nodes": [node],
        });
        match self.element_tree(&self.for_elements(&record)) {
            Ok(tree) => {
                answer["elementTreeRevision"] =
                    json!(revision.split('+').nth(1).unwrap_or_default());
                crate::desktop::atspi::actions::show_tree(&mut answer, &tree, max_depth);
            }
            Err(refusal) => answer["accessibilityNote"] = json!(refusal.message),
        }
        Ok(answer)
    }

    fn observe_elements(&self, tool: &str, args: &Value) -> Result<Value, Refusal> {
        if let Some(refusal) = self.lacks(tool) {
            return Err(refusal);
        }
        match tool {
            tool::FIND_ELEMENT => self.find_elements(args),
            tool::GET_FOCUSED_ELEMENT => self.focused_element(),
            other => Err(Refusal::new(
                "tool_outside_host_profile",
                format!("the Wayland desktop does not perform {other}"),
            )),
        }
    }

    fn window_texts(&self, window_id: u64) -> Result<Vec<String>, Refusal> {
        if let Some(refusal) = self.lacks(tool::FIND_ELEMENT) {
            return Err(refusal);
        }
        self.shown_texts(window_id)
    }

    fn elements(&self, app_id: &str, window_id: u64) -> Result<Vec<Element>, &'static str> {
        let record = self
            .windows()
            .map_err(|_| "invalid_field")?
            .into_iter()
            .find(|r| r.app_id == app_id && r.id == window_id)
            .ok_or("invalid_field")?;
        self.elements_of(&self.for_elements(&record))
    }

    fn read_clipboard(&self) -> Result<String, Refusal> {
        if let Some(refusal) = self.lacks(tool::READ_CLIPBOARD) {
            return Err(refusal);
        }
        clipboard::read()
    }

    fn clipboard_written(&self) -> Option<String> {
        self.notes.get().written.clone()
    }

    fn apply(
        &self,
        tool: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<Value, ApplyError> {
        if let Some(refusal) = self.lacks(tool) {
            return Err(ApplyError::NothingSent(refusal));
        }
        if ELEMENT_TOOLS.contains(&tool) {
            self.notes.get().acted_by_element = true;
            return self.apply_elements(tool, args, target);
        }
        self.notes.get().acted_by_element = false;
        if tool == tool::WRITE_CLIPBOARD {
            let text = text(args, "text").map_err(ApplyError::NothingSent)?;
            let secret = self.notes.get().writing_secret;
            self.offer
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .write(text, secret)?;
            let mut notes = self.notes.get();
            notes.written = Some(text.to_owned());
            notes.written_secret = secret;
            return Ok(json!({ "written": text.chars().count() }));
        }
        self.send_checked(tool, args, target)
    }

    fn before_effect(&self, _tool: &str, envelope: &Value) -> Result<(), Refusal> {
        // Text labelled as a secret is never kept past this process.
        self.notes.get().writing_secret = labels_a_secret(envelope);
        Ok(())
    }

    fn window_shown_now(&self, window_id: u64) -> Option<bool> {
        let windows = self.windows().ok()?;
        Some(windows.iter().any(|w| w.id == window_id && w.visible))
    }

    fn file_holds_now(&self, path: &str, exists: bool, content_digest: Option<&str>) -> bool {
        crate::desktop::files::file_holds(path, exists, content_digest)
    }

    fn verify(
        &self,
        tool: &str,
        args: &Value,
        postcondition: Option<&Value>,
        target: Option<&TargetEvidence>,
    ) -> EffectCheck {
        let clipboard_form = |p: &Value| {
            serde_json::from_value::<ActionPostcondition>(p.clone())
                .is_ok_and(|p| crate::desktop::simulated::is_clipboard_check(&p))
        };
        if tool == tool::WRITE_CLIPBOARD && postcondition.is_none_or(clipboard_form) {
            return self.clipboard_check(args, postcondition);
        }
        if ELEMENT_TOOLS.contains(&tool) {
            // A check of something else than the element written (a
            // file the press saved, a window it closed) is checked as any
            // action's postcondition is.
            if let Some(postcondition) = postcondition
                && postcondition.get("kind").and_then(Value::as_str) != Some("ui_element")
            {
                return self.postcondition_check(postcondition);
            }
            return self.verify_elements(tool, args, postcondition, target);
        }
        match postcondition {
            None => EffectCheck {
                verified: true,
                method: "wayland_input_sent",
                checks: 0,
            },
            Some(postcondition) => self.postcondition_check(postcondition),
        }
    }

    fn capture(&self) -> PointerAndFocus {
        // The cursor's place is not known to a Wayland client.
        let focus = self
            .sway
            .as_ref()
            .and_then(|s| s.focused().ok().flatten())
            .map(|id| (String::new(), id));
        ((0, 0), focus)
    }

    fn restore(&self, before: PointerAndFocus) -> Value {
        if std::mem::take(&mut self.notes.get().acted_by_element) {
            return json!({ "restored": true, "cursorRestored": true, "focusRestored": true, "inputSent": false });
        }
        let (_, focus) = before;
        let focused = match (focus, self.sway.as_ref()) {
            (Some((_, id)), Some(sway)) => {
                sway.focused().ok().flatten() == Some(id)
                    || (sway.focus(id).is_ok() && sway.focused().ok().flatten() == Some(id))
            }
            (None, _) => true,
            (Some(_), None) => false,
        };
        // The cursor's place before is not known, so it is not put back.
        json!({ "restored": false, "cursorRestored": false, "cursorKnown": false, "focusRestored": focused })
    }
}
