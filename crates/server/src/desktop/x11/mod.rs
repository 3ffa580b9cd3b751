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

use std::sync::Mutex;
use std::time::{Duration, Instant};

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
use adk_computer_use::contracts::{
    ActionPostcondition, PostconditionFields, TargetEvidence, WindowId,
};
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

/// How long a `filesystem` postcondition is waited for after input (the
/// program that reads the keys writes in its own time).
const FILE_WAIT: Duration = Duration::from_millis(1500);

/// How long a clipboard write's read-back waits for the text to be served.
const CLIPBOARD_WAIT: Duration = Duration::from_millis(1000);

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
                Ok(bus) => (Some(bus), String::new()),
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

fn text<'a>(args: &'a Value, key: &str) -> Result<&'a str, Refusal> {
    args.get(key).and_then(Value::as_str).ok_or_else(|| {
        Refusal::new(
            "invalid_arguments",
            format!("arguments.{key} must be a string"),
        )
    })
}

impl DesktopBackend for X11Desktop {
    fn kind(&self) -> &'static str {
        "x11"
    }

    fn performs(&self, tool: &str) -> bool {
        PERFORMS.contains(&tool)
            || (self.accessibility.is_some()
                && (elements::ELEMENT_TOOLS.contains(&tool)
                    || elements::OBSERVE_TOOLS.contains(&tool)))
    }

    fn reads_values_back(&self) -> bool {
        self.accessibility.is_some()
    }

    fn acts_unfocused(&self, tool: &str) -> bool {
        self.accessibility.is_some() && elements::ELEMENT_TOOLS.contains(&tool)
    }

    fn is_current(&self, target: &TargetEvidence, round: Revalidation) -> bool {
        // A display that cannot be asked cannot confirm anything.
        self.current(target, round).unwrap_or(false)
    }

    fn what_changed(&self, target: &TargetEvidence, round: Revalidation) -> Option<Value> {
        self.what_changed(target, round, revalidate::Tree::Whole)
            .unwrap_or_else(|_| {
                Some(json!({ "changed": "unknown", "what": "the display did not answer" }))
            })
    }

    fn prepare(
        &self,
        tool: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<(), Refusal> {
        match tool {
            tool::WRITE_CLIPBOARD => {
                if text(args, "text")?.len() > clipboard::MOST_BYTES {
                    return Err(Refusal::new(
                        "invalid_arguments",
                        format!(
                            "arguments.text is longer than {} bytes",
                            clipboard::MOST_BYTES
                        ),
                    ));
                }
                Ok(())
            }
            _ if elements::ELEMENT_TOOLS.contains(&tool) && self.performs(tool) => {
                self.prepare_elements(tool, args, target)
            }
            _ if !self.performs(tool) => Err(Refusal::new(
                "tool_outside_host_profile",
                format!("the X11 desktop does not perform {tool}"),
            )),
            tool::READ_CLIPBOARD
            | tool::SNAPSHOT
            | tool::LIST_WINDOWS
            | tool::GET_UI_TREE
            | tool::FIND_ELEMENT
            | tool::GET_FOCUSED_ELEMENT => Ok(()),
            _ => {
                let window = self.target_window(target)?;
                let top = windows::top_level(&self.conn, self.root, window.id)?;
                self.plan(tool, args, &window, top).map(drop)
            }
        }
    }

    fn snapshot(&self, window: Option<u64>) -> Result<Frame, Refusal> {
        // A window's frame remembers where its application says the caret
        // is: the one change tolerated later (see `tolerance`). Only the
        // focused window draws a caret, so only its application is asked
        // (a walk of its element tree, as long as the capture itself).
        let caret = window
            .and_then(|id| self.window_record(id).ok())
            .filter(|record| record.focused)
            .and_then(|record| self.caret_now(&record));
        let capture = screen::capture(&self.conn, self.root, self.region(window)?)?;
        self.frames().frame(capture, self.layout, caret)
    }

    fn snapshot_fields(&self, window: Option<u64>) -> Value {
        let pointer = self
            .conn
            .query_pointer(self.root)
            .ok()
            .and_then(|c| c.reply().ok())
            .map(|p| json!([p.root_x, p.root_y]));
        json!({
            "cursor": pointer,
            "display": std::env::var("DISPLAY").unwrap_or_default(),
            "size": { "width": self.size.0, "height": self.size.1 },
            "scope": if window.is_some() { "window" } else { "screen" },
        })
    }

    fn list_windows(&self) -> Result<Value, Refusal> {
        let records = windows::all(&self.conn, self.root, &self.atoms)?;
        let display = self.display_id();
        let windows: Vec<Value> = records
            .iter()
            .map(|r| r.to_json(display, self.size))
            .collect();
        Ok(json!({ "windows": windows }))
    }

    fn ui_tree(
        &self,
        app_id: Option<&str>,
        window_id: Option<u64>,
        max_depth: Option<usize>,
    ) -> Result<Value, Refusal> {
        let records = windows::all(&self.conn, self.root, &self.atoms)?;
        let record = records
            .iter()
            .filter(|r| app_id.is_none_or(|a| a == r.app_id))
            .find(|r| window_id.is_none_or(|w| w == u64::from(r.id)))
            .ok_or_else(|| stale("no such window"))?;
        let (revision, nodes, tree) = self.window_revision(record)?;
        // The app id and the window's title are its client's own words.
        let mut answer = json!({
            "contentOrigin": "application_untrusted",
            "appId": record.app_id,
            "windowId": record.id,
            "window": record.to_json(self.display_id(), self.size),
            "uiTreeRevision": revision,
            "treeKind": "x11_window_geometry",
            "accessibility": "unavailable",
            "elements": [],
            "nodes": nodes,
        });
        // The tree the revision was taken from: one walk, the whole tree,
        // of which the answer shows the part asked for.
        match tree {
            Ok(tree) => {
                answer["elementTreeRevision"] = json!(tree.revision.clone());
                crate::desktop::atspi::actions::show_tree(&mut answer, &tree, max_depth);
            }
            Err(refusal) => answer["accessibilityNote"] = json!(refusal.message),
        }
        Ok(answer)
    }

    fn observe_elements(&self, tool: &str, args: &Value) -> Result<Value, Refusal> {
        if self.accessibility.is_none() {
            return Err(Refusal::new(
                "accessibility_unavailable",
                self.accessibility_note.clone(),
            ));
        }
        match tool {
            tool::FIND_ELEMENT => self.find_elements(args),
            tool::GET_FOCUSED_ELEMENT => self.focused_element(),
            other => Err(Refusal::new(
                "tool_outside_host_profile",
                format!("the X11 desktop does not perform {other}"),
            )),
        }
    }

    fn window_texts(&self, window_id: u64) -> Result<Vec<String>, Refusal> {
        if self.accessibility.is_none() {
            return Err(Refusal::new(
                "accessibility_unavailable",
                self.accessibility_note.clone(),
            ));
        }
        self.shown_texts(window_id)
    }

    fn elements(&self, app_id: &str, window_id: u64) -> Result<Vec<Element>, &'static str> {
        let records =
            windows::all(&self.conn, self.root, &self.atoms).map_err(|_| "invalid_field")?;
        let record = records
            .iter()
            .find(|r| r.app_id == app_id && u64::from(r.id) == window_id)
            .ok_or("invalid_field")?;
        self.elements_of(&record.for_elements())
    }

    fn read_clipboard(&self) -> Result<String, Refusal> {
        self.reader.read()
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
        if elements::ELEMENT_TOOLS.contains(&tool) {
            self.notes.get().acted_by_element = true;
            return self.apply_elements(tool, args, target);
        }
        // A pointer or key action is put back by its restore, whatever the
        // last action was.
        self.notes.get().acted_by_element = false;
        if tool == tool::WRITE_CLIPBOARD {
            let text = text(args, "text").map_err(ApplyError::NothingSent)?;
            self.owner
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .write(text)?;
            let mut notes = self.notes.get();
            notes.written = Some(text.to_owned());
            notes.written_secret = notes.writing_secret;
            return Ok(json!({ "written": text.chars().count() }));
        }
        // From the checks to the last event, no other client's request is
        // served: nothing can move, cover, grab or reach into the target
        // in between.
        self.conn.grab_server().map_err(|e| {
            ApplyError::NothingSent(Refusal::plain(format!("GrabServer failed: {e}")))
        })?;
        let sent = self
            .still_current(target)
            .and_then(|()| self.send_checked(tool, args, target));
        let ungrabbed = self
            .conn
            .ungrab_server()
            .map_err(|e| e.to_string())
            .and_then(|_| self.conn.flush().map_err(|e| e.to_string()));
        if let Err(err) = ungrabbed {
            return Err(ApplyError::Failed(Refusal::plain(format!(
                "UngrabServer failed: {err}"
            ))));
        }
        sent
    }

    fn before_effect(&self, _tool: &str, envelope: &Value) -> Result<(), Refusal> {
        // Text labelled as a secret is never kept past this process.
        self.notes.get().writing_secret = labels_a_secret(envelope);
        Ok(())
    }

    fn window_shown_now(&self, window_id: u64) -> Option<bool> {
        windows::shown_by_server(&self.conn, u32::try_from(window_id).ok()?)
    }

    fn file_holds_now(&self, path: &str, exists: bool, content_digest: Option<&str>) -> bool {
        checks::file_holds(path, exists, content_digest)
    }

    fn verify(
        &self,
        tool: &str,
        args: &Value,
        postcondition: Option<&Value>,
        _target: Option<&TargetEvidence>,
    ) -> EffectCheck {
        // The announced clipboard check is judged on the clipboard itself,
        // as the simulated desktop judges it; any other postcondition (an
        // element, a window that must exist) is checked as what it says,
        // never counted as holding because the clipboard does.
        let clipboard_form = |p: &Value| {
            serde_json::from_value::<ActionPostcondition>(p.clone())
                .is_ok_and(|p| crate::desktop::simulated::is_clipboard_check(&p))
        };
        if tool == tool::WRITE_CLIPBOARD && postcondition.is_none_or(clipboard_form) {
            return self.clipboard_check(args, postcondition);
        }
        if elements::ELEMENT_TOOLS.contains(&tool) {
            // A check of something else than the element written (a
            // file the press saved, a window it closed) is checked as any
            // action's postcondition is.
            if let Some(postcondition) = postcondition
                && postcondition.get("kind").and_then(Value::as_str) != Some("ui_element")
            {
                return self.postcondition_check(postcondition);
            }
            return self.verify_elements(tool, args, postcondition, _target);
        }
        match postcondition {
            // Input was sent; with nothing declared, nothing is claimed.
            None => EffectCheck {
                verified: true,
                method: "x11_input_sent",
                checks: 0,
            },
            Some(postcondition) => self.postcondition_check(postcondition),
        }
    }

    fn foreign_input(&self) -> Option<u64> {
        self.watch.as_ref().map(|watch| watch.foreign())
    }

    fn capture(&self) -> PointerAndFocus {
        let pointer = self
            .conn
            .query_pointer(self.root)
            .ok()
            .and_then(|c| c.reply().ok())
            .map_or((0, 0), |p| (i64::from(p.root_x), i64::from(p.root_y)));
        let focus = windows::focus(&self.conn)
            .ok()
            .map(|w| (String::new(), u64::from(w)));
        (pointer, focus)
    }

    fn restore(&self, before: PointerAndFocus) -> Value {
        if std::mem::take(&mut self.notes.get().acted_by_element) {
            // An element action sent no input and took no focus: there is
            // nothing to put back, and nothing is sent.
            return json!({ "restored": true, "cursorRestored": true, "focusRestored": true, "inputSent": false });
        }
        let (pointer, focus) = before;
        // A pointer still where it was is left alone: no input is sent
        // that a person's watch (this server's or another's) must explain.
        let cursor = self.capture().0 == pointer
            || input::on_screen(pointer).ok().is_some_and(|(x, y)| {
                input::send(
                    &self.conn,
                    self.root,
                    &[Event::Move(x, y)],
                    self.watch.as_ref(),
                )
                .is_ok()
            });
        let focused = focus
            .and_then(|(_, w)| u32::try_from(w).ok())
            .filter(|w| *w != x11rb::NONE)
            .is_some_and(|w| {
                self.conn
                    .set_input_focus(InputFocus::POINTER_ROOT, w, x11rb::CURRENT_TIME)
                    .is_ok()
                    && windows::focus(&self.conn).is_ok()
            });
        json!({ "restored": cursor && focused, "cursorRestored": cursor, "focusRestored": focused })
    }
}
