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

mod clipboard;
mod input;
mod screen;
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
    owner: clipboard::Owner,
    reader: clipboard::Reader,
    written: Option<String>,
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
    /// and a screen this backend can read, and starts serving the
    /// CLIPBOARD selection.
    pub fn connect() -> Result<Self, ComputerUseError> {
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
        Ok(Self {
            conn,
            root,
            size,
            screen,
            atoms,
            layout,
            frames: Mutex::new(screen::Frames::default()),
            owner,
            reader,
            written: None,
        })
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

    /// The revision of a window's geometry tree: it moves when the
    /// window's subwindows change, not when it moves as a whole.
    fn tree_revision(&self, window: XWindow) -> Result<(String, Vec<Value>), Refusal> {
        let nodes = windows::geometry_tree(&self.conn, window)?;
        let digest = sha256_hex(Value::Array(nodes.clone()).to_string());
        Ok((format!("x11-tree-{window}-{}", &digest[..16]), nodes))
    }

    fn current(&self, target: &TargetEvidence, round: Revalidation) -> Result<bool, Refusal> {
        let Some(now) = self.window_now(target)? else {
            // Gone. An action may close its own window (a dialog's button).
            return Ok(round == Revalidation::AfterEffect);
        };
        let identity = target.app_id == now.app_id
            && target.pid.is_none_or(|pid| Some(pid) == now.pid)
            && stated_or_same(target.display_id.as_ref(), &self.display_id().to_string())
            && target.platform == std::env::consts::OS;
        if round == Revalidation::AfterEffect || !identity {
            return Ok(identity);
        }
        if !bounds_agree(target.bounds.as_ref(), now.bounds)
            || !stated_or_same(target.window_title_digest.as_ref(), &now.title_digest())
        {
            return Ok(false);
        }
        if let Some(revision) = &target.ui_tree_revision
            && *revision != self.tree_revision(now.id)?.0
        {
            return Ok(false);
        }
        if let Some(stated) = &target.screenshot_hash {
            // The frame must show the target: the whole screen, or the
            // target window's own part of it. A frame this server handed
            // out of one of those regions is captured again and compared
            // by its raw pixels; a frame of another region (another
            // window's, even one that looks the same) does not vouch for
            // the target; a digest it never handed out is compared with
            // the whole screen, encoded.
            let regions = [Some(self.whole()), screen::clip(now.bounds, self.size)];
            let handed_out = regions
                .into_iter()
                .flatten()
                .find_map(|region| Some((region, self.frames().raw_of(stated, region)?)));
            let same = match handed_out {
                Some((region, raw)) => {
                    screen::capture(&self.conn, self.root, region)?.raw_digest == raw
                }
                None if self.frames().known(stated) => false,
                None => {
                    let capture = screen::capture(&self.conn, self.root, self.whole())?;
                    sha256_prefixed(capture.encode(self.layout)?) == *stated
                }
            };
            if !same {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The window the evidence names, as the display shows it now; a
    /// window that is gone is a stale target.
    fn target_window(
        &self,
        target: Option<&TargetEvidence>,
    ) -> Result<windows::WindowRecord, Refusal> {
        let target = target
            .ok_or_else(|| Refusal::new("invalid_arguments", "input needs a target window"))?;
        self.window_now(target)?
            .ok_or_else(|| stale("the target window is gone"))
    }

    /// `point` is inside `window` and no other window covers it there.
    fn check_point(
        &self,
        window: &windows::WindowRecord,
        point: (i64, i64),
        top: XWindow,
    ) -> Result<(), Refusal> {
        let (x, y, width, height) = window.bounds;
        let inside = point.0 >= x
            && point.1 >= y
            && point.0 < x + i64::from(width)
            && point.1 < y + i64::from(height);
        if !inside {
            return Err(Refusal::new(
                "invalid_arguments",
                format!(
                    "the point {point:?} is outside the target window ({x}, {y}, {width}x{height})"
                ),
            ));
        }
        // XTEST moves the pointer no further than the screen's edge: a
        // point beyond it would land somewhere else.
        let on_screen = point.0 >= 0
            && point.1 >= 0
            && point.0 < i64::from(self.size.0)
            && point.1 < i64::from(self.size.1);
        if !on_screen {
            return Err(Refusal::new(
                "invalid_arguments",
                format!(
                    "the point {point:?} is off the {}x{} screen",
                    self.size.0, self.size.1
                ),
            ));
        }
        let point = input::on_screen(point)?;
        let under = windows::deepest_at(&self.conn, self.root, point)?;
        let top_under = match under {
            Some(under) => Some(windows::top_level(&self.conn, self.root, under)?),
            None => None,
        };
        if top_under != Some(top) {
            return Err(stale(&format!(
                "the point {point:?} is covered by another window"
            )));
        }
        self.owned_by_target(window, under, point)
    }

    /// The deepest window at `point` belongs to the target's client: no
    /// other client's window (a child it made inside the target, say)
    /// would take the input there.
    fn owned_by_target(
        &self,
        window: &windows::WindowRecord,
        under: Option<XWindow>,
        point: (i16, i16),
    ) -> Result<(), Refusal> {
        let owner = windows::owner(&self.conn, window.id);
        match under {
            Some(under) if windows::owner(&self.conn, under) != owner => Err(stale(&format!(
                "at {point:?} a window of another client lies inside the target"
            ))),
            _ => Ok(()),
        }
    }

    /// Before input is sent, with the X server held: no other client holds
    /// a grab of the keyboard or the pointer (it would receive the input),
    /// and no modifier or lock is on and no button is down (typed text
    /// would arrive altered, a click would mean something else).
    fn input_is_safe(&self, top: XWindow) -> Result<(), Refusal> {
        use x11rb::protocol::xproto::{EventMask, GrabMode, GrabStatus, KeyButMask};
        let failed =
            |e: &dyn std::fmt::Display| Refusal::plain(format!("the grab check failed: {e}"));
        let keyboard = self
            .conn
            .grab_keyboard(
                false,
                top,
                x11rb::CURRENT_TIME,
                GrabMode::ASYNC,
                GrabMode::ASYNC,
            )
            .map_err(|e| failed(&e))?
            .reply()
            .map_err(|e| failed(&e))?;
        if keyboard.status == GrabStatus::SUCCESS {
            self.conn
                .ungrab_keyboard(x11rb::CURRENT_TIME)
                .map_err(|e| failed(&e))?;
        }
        let pointer = self
            .conn
            .grab_pointer(
                false,
                top,
                EventMask::NO_EVENT,
                GrabMode::ASYNC,
                GrabMode::ASYNC,
                x11rb::NONE,
                x11rb::NONE,
                x11rb::CURRENT_TIME,
            )
            .map_err(|e| failed(&e))?
            .reply()
            .map_err(|e| failed(&e))?;
        if pointer.status == GrabStatus::SUCCESS {
            self.conn
                .ungrab_pointer(x11rb::CURRENT_TIME)
                .map_err(|e| failed(&e))?;
        }
        if keyboard.status != GrabStatus::SUCCESS || pointer.status != GrabStatus::SUCCESS {
            return Err(stale(
                "another client holds the keyboard or the pointer (a grab): input would go to it",
            ));
        }
        let now = self
            .conn
            .query_pointer(self.root)
            .map_err(|e| failed(&e))?
            .reply()
            .map_err(|e| failed(&e))?;
        let held = KeyButMask::SHIFT
            | KeyButMask::LOCK
            | KeyButMask::CONTROL
            | KeyButMask::MOD1
            | KeyButMask::MOD2
            | KeyButMask::MOD3
            | KeyButMask::MOD4
            | KeyButMask::MOD5
            | KeyButMask::BUTTON1
            | KeyButMask::BUTTON2
            | KeyButMask::BUTTON3
            | KeyButMask::BUTTON4
            | KeyButMask::BUTTON5;
        // Bits 13 and 14 of the state are the keyboard group (XKB): a
        // locked second layout changes every typed character too.
        const GROUP: u16 = 0x6000;
        if u16::from(now.mask) & (u16::from(held) | GROUP) != 0 {
            return Err(stale(&format!(
                "a modifier, lock, layout group or button is held ({:#06x}): input would arrive altered",
                u16::from(now.mask)
            )));
        }
        Ok(())
    }

    /// Where keys go, once the target has the focus (the deepest window
    /// under the pointer, when the pointer is over the target) belongs to
    /// the target's client.
    fn keys_reach_target(
        &self,
        window: &windows::WindowRecord,
        top: XWindow,
    ) -> Result<(), Refusal> {
        let now = self
            .conn
            .query_pointer(self.root)
            .map_err(|e| Refusal::plain(format!("QueryPointer failed: {e}")))?
            .reply()
            .map_err(|e| Refusal::plain(format!("QueryPointer failed: {e}")))?;
        let pointer = (now.root_x, now.root_y);
        let under = windows::deepest_at(&self.conn, self.root, pointer)?;
        let over_target = match under {
            Some(under) => windows::top_level(&self.conn, self.root, under)? == top,
            None => false,
        };
        if over_target {
            self.owned_by_target(window, under, pointer)?;
        }
        Ok(())
    }

    /// The events of an input tool, every point checked; nothing is sent.
    fn plan(
        &self,
        tool: &str,
        args: &Value,
        window: &windows::WindowRecord,
        top: XWindow,
    ) -> Result<Vec<Event>, Refusal> {
        let keymap = || input::Keymap::read(&self.conn);
        let moved = |key: &str| -> Result<Event, Refusal> {
            let point = input::point(args, key)?;
            self.check_point(window, point, top)?;
            let (x, y) = input::on_screen(point)?;
            Ok(Event::Move(x, y))
        };
        let click = |button: u8, times: usize| -> Result<Vec<Event>, Refusal> {
            let mut events = vec![moved("coordinate")?];
            for _ in 0..times {
                events.push(Event::Button(button, true));
                events.push(Event::Button(button, false));
            }
            Ok(events)
        };
        match tool {
            tool::LEFT_CLICK => click(1, 1),
            tool::RIGHT_CLICK => click(3, 1),
            tool::DOUBLE_CLICK => click(1, 2),
            tool::MOUSE_MOVE | "move_cursor" => Ok(vec![moved("coordinate")?]),
            tool::LEFT_CLICK_DRAG => Ok(vec![
                moved("start_coordinate")?,
                Event::Button(1, true),
                moved("coordinate")?,
                Event::Button(1, false),
            ]),
            tool::SCROLL => {
                let mut events = vec![moved("coordinate")?];
                events.extend(input::wheel(args)?);
                Ok(events)
            }
            tool::TYPE => keymap()?.type_text(text(args, "text")?),
            tool::KEY => keymap()?.chord(text(args, "text")?),
            other => Err(Refusal::new(
                "tool_outside_host_profile",
                format!("the X11 desktop does not perform {other}"),
            )),
        }
    }

    /// The input of `tool`, checked and sent (with the server held).
    fn send_checked(
        &self,
        tool: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<Value, ApplyError> {
        let refused = ApplyError::NothingSent;
        let window = self.target_window(target).map_err(refused)?;
        let top = windows::top_level(&self.conn, self.root, window.id).map_err(refused)?;
        let events = self.plan(tool, args, &window, top).map_err(refused)?;
        self.input_is_safe(top).map_err(refused)?;
        self.focus(window.id, top).map_err(refused)?;
        self.keys_reach_target(&window, top).map_err(refused)?;
        input::send(&self.conn, self.root, &events)?;
        Ok(json!({ "sent": events.len(), "windowId": window.id }))
    }

    /// Raises the window and gives it the input focus, then waits until
    /// the server has done both.
    fn focus(&self, window: XWindow, top: XWindow) -> Result<(), Refusal> {
        let failed = |e: &dyn std::fmt::Display| Refusal::plain(format!("focusing failed: {e}"));
        self.conn
            .configure_window(top, &ConfigureWindowAux::new().stack_mode(StackMode::ABOVE))
            .map_err(|e| failed(&e))?;
        self.conn
            .set_input_focus(InputFocus::PARENT, window, x11rb::CURRENT_TIME)
            .map_err(|e| failed(&e))?;
        windows::focus(&self.conn)?;
        Ok(())
    }

    fn clipboard_check(&self, args: &Value, postcondition: Option<&Value>) -> EffectCheck {
        let wanted = args.get("text").and_then(Value::as_str);
        // The owner's thread takes the selection on its own connection; the
        // X server may answer this reader before it has seen that, so the
        // read is repeated, briefly, until the text is served.
        let deadline = Instant::now() + CLIPBOARD_WAIT;
        let mut read = self.reader.read().ok();
        while read.as_deref() != wanted && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
            read = self.reader.read().ok();
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
        // A read-back proves what every client gets only while this
        // process owns the selection: an owner may answer each requestor
        // differently. The X server names the owning client's process.
        let ours = self.selection_is_ours();
        EffectCheck {
            verified: ours && wanted.is_some() && read.as_deref() == wanted && digest_holds,
            method: "x11_selection_readback",
            checks: 2,
        }
    }

    /// Whether the CLIPBOARD selection's owner is a client of this very
    /// process, as the X server records the owner's process.
    fn selection_is_ours(&self) -> bool {
        let owner = self
            .conn
            .get_selection_owner(self.atoms.clipboard)
            .ok()
            .and_then(|c| c.reply().ok())
            .map(|r| r.owner)
            .filter(|owner| *owner != x11rb::NONE);
        owner
            .and_then(|owner| windows::owner_pid(&self.conn, owner))
            .is_some_and(|pid| pid == std::process::id())
    }

    fn postcondition_check(&self, postcondition: &Value) -> EffectCheck {
        let unobservable = EffectCheck {
            verified: false,
            method: "x11_unobservable",
            checks: 0,
        };
        let Ok(postcondition) =
            serde_json::from_value::<ActionPostcondition>(postcondition.clone())
        else {
            return unobservable;
        };
        match postcondition.fields() {
            PostconditionFields::Window { window_id, exists } => {
                let listed = u32::try_from(*window_id).ok().and_then(|id| {
                    let focus = windows::focus(&self.conn).ok()?;
                    windows::record(&self.conn, self.root, &self.atoms, id, focus).ok()
                });
                EffectCheck {
                    verified: listed.is_some_and(|r| r.is_some() == *exists),
                    method: "x11_window_list",
                    checks: 1,
                }
            }
            PostconditionFields::Filesystem {
                path,
                exists,
                content_digest,
            } => {
                let holds = || {
                    let content = std::fs::read(path).ok();
                    content.is_some() == *exists
                        && content_digest.as_ref().is_none_or(|d| {
                            content.as_ref().map(sha256_prefixed).as_ref() == Some(d)
                        })
                };
                let deadline = Instant::now() + FILE_WAIT;
                let mut verified = holds();
                while !verified && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(25));
                    verified = holds();
                }
                EffectCheck {
                    verified,
                    method: "x11_filesystem_read",
                    checks: 1,
                }
            }
            _ => unobservable,
        }
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
    }

    fn is_current(&self, target: &TargetEvidence, round: Revalidation) -> bool {
        // A display that cannot be asked cannot confirm anything.
        self.current(target, round).unwrap_or(false)
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
            _ if !self.performs(tool) => Err(Refusal::new(
                "tool_outside_host_profile",
                format!("the X11 desktop does not perform {tool}"),
            )),
            "read_clipboard" | "snapshot" | "list_windows" | "get_ui_tree" => Ok(()),
            _ => {
                let window = self.target_window(target)?;
                let top = windows::top_level(&self.conn, self.root, window.id)?;
                self.plan(tool, args, &window, top).map(drop)
            }
        }
    }

    fn snapshot(&self, window: Option<u64>) -> Result<Frame, Refusal> {
        let capture = screen::capture(&self.conn, self.root, self.region(window)?)?;
        self.frames().frame(&capture, self.layout)
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

    fn ui_tree(&self, app_id: Option<&str>, window_id: Option<u64>) -> Result<Value, Refusal> {
        let records = windows::all(&self.conn, self.root, &self.atoms)?;
        let record = records
            .iter()
            .filter(|r| app_id.is_none_or(|a| a == r.app_id))
            .find(|r| window_id.is_none_or(|w| w == u64::from(r.id)))
            .ok_or_else(|| stale("no such window"))?;
        let (revision, nodes) = self.tree_revision(record.id)?;
        Ok(json!({
            "appId": record.app_id,
            "windowId": record.id,
            "window": record.to_json(self.display_id(), self.size),
            "uiTreeRevision": revision,
            "treeKind": "x11_window_geometry",
            "accessibility": "unavailable",
            "elements": [],
            "nodes": nodes,
        }))
    }

    fn elements(&self, _app_id: &str, _window_id: u64) -> Option<Vec<Element>> {
        None
    }

    fn read_clipboard(&self) -> Result<String, Refusal> {
        self.reader.read()
    }

    fn clipboard_written(&self) -> Option<String> {
        self.written.clone()
    }

    fn apply(
        &mut self,
        tool: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<Value, ApplyError> {
        if tool == "write_clipboard" {
            let text = text(args, "text").map_err(ApplyError::NothingSent)?;
            self.owner.write(text)?;
            self.written = Some(text.to_owned());
            return Ok(json!({ "written": text.chars().count() }));
        }
        // From the checks to the last event, no other client's request is
        // served: nothing can move, cover, grab or reach into the target
        // in between.
        self.conn.grab_server().map_err(|e| {
            ApplyError::NothingSent(Refusal::plain(format!("GrabServer failed: {e}")))
        })?;
        let sent = self.send_checked(tool, args, target);
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
        if tool == "write_clipboard" && postcondition.is_none_or(clipboard_form) {
            return self.clipboard_check(args, postcondition);
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

    fn restore(&mut self, before: PointerAndFocus) -> Value {
        let (pointer, focus) = before;
        let cursor = input::on_screen(pointer)
            .ok()
            .is_some_and(|(x, y)| input::send(&self.conn, self.root, &[Event::Move(x, y)]).is_ok());
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
