//! A real X11 display under the server's rules.
//!
//! [`X11Desktop`] is a [`DesktopBackend`]: the v8 rules of [`crate::engine`]
//! (sessions, previews and policy, grants, the lease queue, reservations,
//! receipts, events, refusals) act on the display `$DISPLAY` names instead
//! of the simulated desktop. Serve it with `computer-use-server --desktop x11`, or in
//! a test's own process with `adk_computer_use_testkit::spawn_on`.
//!
//! What it does with the display, and no more:
//!
//! - **observe**: `snapshot` is a PNG (`GetImage`) of the whole screen, or
//!   of the part one window covers when asked with `target_window_id`; its
//!   digest is upstream's (`sha256:` + hex of the PNG). `list_windows`
//!   lists the windows of the server's own tree, topmost first, with the
//!   app id from `WM_CLASS`, the owning client's process as the X server
//!   records it (X-Resource), the title from `_NET_WM_NAME`, bounds,
//!   display and focus; `get_ui_tree` gives what X11 honestly has, the
//!   window's geometry tree (`treeKind: "x11_window_geometry"`), with no
//!   accessibility elements.
//! - **act**: `write_clipboard` owns the CLIPBOARD selection and serves it
//!   while the server lives; `left_click`, `right_click`, `double_click`,
//!   `mouse_move`, `left_click_drag`, `scroll`, `type` and `key` are XTEST
//!   input at real coordinates inside the target window, raised and
//!   focused first, checked and sent while the X server serves no other
//!   client. Refused before anything is sent: a point outside the target,
//!   off the screen, under another window or on another client's window
//!   inside the target; keys that would go to another client's window; an
//!   active core grab of the keyboard or pointer by another client; a held
//!   modifier, lock, layout group or button; a character with no key.
//! - **revalidate**: before the effect, the target evidence is compared
//!   field by field with the display now (app, pid, window, title digest,
//!   display, bounds within 4 px, the pixels of the screen or of the
//!   target's part of it, the geometry tree): a window that moved, closed,
//!   was retitled or whose pixels changed is `stale_target` and nothing is
//!   sent. After the effect only the window's identity is compared, and a
//!   window the action closed passes.
//! - **check**: after a clipboard write the server reads the selection
//!   back through a connection of its own, as any client would, and
//!   reports `verified` only when it holds the text (and the declared
//!   postcondition's digest, if any, is the text's) and the selection's
//!   owner window is this process's. After input it can check a `window`
//!   postcondition (the window exists or not) and a `filesystem` one (a
//!   file's content, waited for briefly); any other postcondition it
//!   cannot observe, and says so with `verified: false`.
//!
//! What X11 does not allow any client to prevent, and so this backend
//! does not claim: another client on the display may read every key sent
//! (by selecting key events on the target, XRecord or XInput2 raw events),
//! redirect input with a passive grab or an XInput2 grab of the XTEST
//! devices, set `WM_CLASS` on any window, or take the clipboard in the
//! name of another client's window. A display shared with untrusted
//! programs is not a place to type secrets; Wayland's compositor-mediated
//! input is the platform answer.

mod backend;
mod bus_address;
mod checks;
mod clipboard;
mod elements;
mod input;
pub mod keeper;
mod revalidate;
mod screen;
mod send;
mod tolerance;
pub mod watch;
mod windows;

use crate::desktop::real::text;

use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{
    ConfigureWindowAux, ConnectionExt as _, InputFocus, StackMode, Window as XWindow,
};
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;

use crate::desktop::atspi::actions::ElementHost as _;
use crate::desktop::atspi::observe::ElementObservations as _;
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
use input::Event;

/// Tools the X11 desktop performs.
const PERFORMS: &[&str] = &[
    tool::SNAPSHOT,
    tool::LIST_WINDOWS,
    tool::GET_UI_TREE,
    tool::READ_CLIPBOARD,
    tool::WRITE_CLIPBOARD,
    tool::LEFT_CLICK,
    tool::RIGHT_CLICK,
    tool::DOUBLE_CLICK,
    tool::MOUSE_MOVE,
    tool::MOVE_CURSOR,
    tool::LEFT_CLICK_DRAG,
    tool::SCROLL,
    tool::TYPE,
    tool::KEY,
];

/// A real X11 display. See the module documentation.
pub struct X11Desktop {
    conn: RustConnection,
    root: XWindow,
    size: (u16, u16),
    screen: usize,
    atoms: windows::Atoms,
    layout: screen::Layout,
    frames: Mutex<screen::Frames>,
    /// This process's clipboard selection (one writer at a time).
    owner: Mutex<clipboard::Owner>,
    reader: clipboard::Reader,
    /// What the last action noted for its next steps.
    notes: Noted,
    /// Whether the clipboard's text is handed on at the end
    /// ([`X11Desktop::keeping_clipboard_after_exit`]).
    keep_clipboard: bool,
    /// The accessibility bus, when it was reached at connect.
    accessibility: Option<crate::desktop::atspi::Accessibility>,
    /// The person's input, watched (none when the display has no XInput 2,
    /// or the watch was turned off).
    watch: Option<std::sync::Arc<watch::Watch>>,
    /// Why there is no accessibility bus, when there is none.
    accessibility_note: String,
}

/// The server's end: when asked to
/// ([`X11Desktop::keeping_clipboard_after_exit`]), text this process still
/// serves on CLIPBOARD is handed to what keeps it after exit (see
/// [`keeper`]), and the outcome is said on standard error. Nothing is
/// handed off when the selection is no longer this process's, nothing was
/// written, or the text was labelled as a secret.
impl Drop for X11Desktop {
    fn drop(&mut self) {
        let notes = self.notes.take();
        let Some(text) = notes.written else {
            return;
        };
        if !self.keep_clipboard || !self.selection_is_ours() {
            return;
        }
        if notes.written_secret {
            eprintln!(
                "computer-use-server: the clipboard's text goes with this process: it was labelled as a secret (credential or payment), and is kept by no other program"
            );
            return;
        }
        match keeper::hand_off(&self.conn, self.atoms.clipboard, &text) {
            Ok(keeper::HandOff::Manager) => {
                eprintln!("computer-use-server: the clipboard's text goes to the clipboard manager")
            }
            Ok(keeper::HandOff::Keeper(pid)) => eprintln!(
                "computer-use-server: the clipboard's text stays, served by {} (pid {pid}) until another program copies",
                keeper::KEEPER_BINARY
            ),
            Err(why) => {
                eprintln!("computer-use-server: the clipboard's text goes with this process: {why}")
            }
        }
    }
}

fn unavailable(message: String) -> ComputerUseError {
    ComputerUseError::Transport {
        operation: "connect to the X11 display".into(),
        message,
    }
}

fn stale(message: &str) -> Refusal {
    Refusal::new("stale_target", message)
}

impl X11Desktop {
    /// Connects to the display `$DISPLAY` names, checks that it has XTEST
    /// and a screen this backend can read, starts serving the CLIPBOARD
    /// selection, and watches the person's input (XInput 2 raw events; see
    /// [`watch`]): input this server did not send pauses every acting
    /// session. A display without XInput 2 is refused.
    pub fn connect() -> Result<Self, ComputerUseError> {
        let mut desktop = Self::connect_unwatched()?;
        desktop.watch = Some(watch::start().map_err(|e| {
            unavailable(format!(
                "the person's input cannot be watched, so an agent could act while someone uses the machine: {e}"
            ))
        })?);
        Ok(desktop)
    }

    /// Keeps the clipboard's text after this desktop is dropped (the
    /// server's end), as `xclip` does: handed to the clipboard manager, or
    /// to the keeper `computer-use-clipboard` (see [`keeper`]). Text
    /// labelled credential or payment is never handed on. Off by default,
    /// so a test suite's many desktops leave nothing running.
    #[must_use]
    pub fn keeping_clipboard_after_exit(mut self) -> Self {
        self.keep_clipboard = true;
        self
    }

    /// [`X11Desktop::connect`], without watching the person's input: for a
    /// display several servers act on at once (a test suite's), where each
    /// would take the others' input for a person's. Nobody's input then
    /// pauses a session.
    pub fn connect_unwatched() -> Result<Self, ComputerUseError> {
        let (conn, screen) = x11rb::connect(None).map_err(|e| {
            unavailable(format!(
                "{e} (DISPLAY={:?})",
                std::env::var("DISPLAY").unwrap_or_default()
            ))
        })?;
        let (root, size) = conn
            .setup()
            .roots
            .get(screen)
            .map(|s| (s.root, (s.width_in_pixels, s.height_in_pixels)))
            .ok_or_else(|| unavailable(format!("the display has no screen {screen}")))?;
        conn.xtest_get_version(2, 2)
            .map_err(|e| unavailable(e.to_string()))?
            .reply()
            .map_err(|e| unavailable(format!("the display has no XTEST extension: {e}")))?;
        let atoms = windows::Atoms::intern(&conn).map_err(unavailable)?;
        let layout = screen::Layout::of(&conn, screen)
            .map_err(|e| unavailable(format!("the screen's pixels cannot be read: {e}")))?;
        let owner = clipboard::Owner::open().map_err(unavailable)?;
        let reader = clipboard::Reader::open().map_err(unavailable)?;
        // Elements need the accessibility bus of this session; without it
        // the desktop still acts on pixels, and says why it sees no
        // elements.
        let (accessibility, accessibility_note) =
            match crate::desktop::atspi::Accessibility::connect() {
                Ok(bus) => {
                    // Qt 5 finds the bus by the root window's property.
                    if bus_address::publish(&conn, root, bus.address())
                        == bus_address::BusProperty::Written
                    {
                        tracing::info!(
                            "the root window had no AT_SPI_BUS: the accessibility bus's address was written there, as at-spi's launcher does, for Qt 5 applications"
                        );
                    }
                    (Some(bus), String::new())
                }
                Err(refusal) => (None, refusal.message),
            };
        Ok(Self {
            conn,
            root,
            size,
            screen,
            atoms,
            layout,
            frames: Mutex::new(screen::Frames::default()),
            owner: Mutex::new(owner),
            reader,
            notes: Noted::default(),
            keep_clipboard: false,
            accessibility,
            accessibility_note,
            watch: None,
        })
    }

    /// With the server held: every field the evidence states is checked
    /// again (identity, title, bounds, geometry tree, pixels), as the
    /// engine checked it just before, so nothing another client did in
    /// between (a move, a new title, a repaint) reaches the input. Only
    /// the element tree is not read again here (see
    /// [`revalidate::Tree::Geometry`]).
    fn still_current(&self, target: Option<&TargetEvidence>) -> Result<(), ApplyError> {
        let Some(target) = target else {
            return Ok(());
        };
        match self.current_reading(
            target,
            Revalidation::BeforeEffect,
            revalidate::Tree::Geometry,
        ) {
            Ok(true) => Ok(()),
            Ok(false) => Err(ApplyError::NothingSent(Refusal::with_details(
                "stale_target",
                "target evidence no longer matches the desktop",
                json!({ "observationId": target.observation_id }),
            ))),
            Err(refusal) => Err(ApplyError::NothingSent(refusal)),
        }
    }

    fn frames(&self) -> std::sync::MutexGuard<'_, screen::Frames> {
        self.frames.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The whole screen as a region.
    fn whole(&self) -> screen::Region {
        (0, 0, self.size.0, self.size.1)
    }

    /// What a frame of `window` shows: the part of the screen it covers
    /// (the whole screen when no window is named).
    fn region(&self, window: Option<u64>) -> Result<screen::Region, Refusal> {
        let Some(window) = window else {
            return Ok(self.whole());
        };
        let id = u32::try_from(window).map_err(|_| stale("no such window"))?;
        let focus = windows::focus(&self.conn)?;
        let record = windows::record(&self.conn, self.root, &self.atoms, id, focus)?
            .ok_or_else(|| stale("no such window"))?;
        screen::clip(record.bounds, self.size).ok_or_else(|| stale("the window is off the screen"))
    }

    fn display_id(&self) -> u64 {
        self.screen as u64
    }

    /// The window the evidence names, as the display shows it now.
    fn window_now(
        &self,
        target: &TargetEvidence,
    ) -> Result<Option<windows::WindowRecord>, Refusal> {
        let Some(WindowId::Number(id)) = target.window_id else {
            return Ok(None);
        };
        let Ok(id) = u32::try_from(id) else {
            return Ok(None);
        };
        let focus = windows::focus(&self.conn)?;
        windows::record(&self.conn, self.root, &self.atoms, id, focus)
    }
}
