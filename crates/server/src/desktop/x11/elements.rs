//! The X11 desktop as a host of the element tools
//! ([`crate::desktop::atspi::actions`]): a window is found on the bus by
//! the process the X server records for it, its title, and its place on
//! the screen (AT-SPI reports X11 frames in screen coordinates).

use x11rb::connection::Connection as _;
use x11rb::protocol::xproto::ConnectionExt as _;

use super::{X11Desktop, input, windows};
use crate::desktop::atspi::Accessibility;
use crate::desktop::atspi::Node;
use crate::desktop::atspi::actions::{ElementHost, Window};
use crate::engine::{ApplyError, Refusal};
use adk_computer_use::contracts::TargetEvidence;

pub(super) use crate::desktop::atspi::actions::{ELEMENT_TOOLS, OBSERVE_TOOLS};

impl windows::WindowRecord {
    /// This window as the element tools see it.
    pub(super) fn for_elements(&self) -> Window {
        Window {
            id: u64::from(self.id),
            app_id: self.app_id.clone(),
            pid: self.pid,
            title: self.title.clone(),
            bounds: self.bounds,
            focused: self.focused,
        }
    }
}

impl ElementHost for X11Desktop {
    fn accessibility(&self) -> Option<&Accessibility> {
        self.accessibility.as_ref()
    }

    fn accessibility_note(&self) -> &str {
        &self.accessibility_note
    }

    fn element_windows(&self) -> Result<Vec<Window>, Refusal> {
        Ok(windows::all(&self.conn, self.root, &self.atoms)?
            .iter()
            .map(windows::WindowRecord::for_elements)
            .collect())
    }

    fn element_target(&self, target: Option<&TargetEvidence>) -> Result<Window, Refusal> {
        self.target_window(target).map(|r| r.for_elements())
    }

    fn written_elements(&self) -> Vec<Node> {
        self.notes.get().written_elements.clone()
    }

    fn set_written_elements(&self, nodes: Vec<Node>) {
        self.notes.get().written_elements = nodes;
    }

    fn can_type(&self, text: &str) -> Result<(), Refusal> {
        let keymap = input::Keymap::read(&self.conn)?;
        keymap.chord("ctrl+a")?;
        keymap.type_text(text).map(drop)
    }

    fn in_foreground(&self) -> bool {
        self.notes.get().foreground
    }

    /// As `type` is sent (see `send`): the window given the input focus,
    /// then the field its focus (`focus`), then, with the server held, the
    /// keys only while the window still holds the input focus: select all
    /// (`ctrl+a`), then the text.
    fn type_into_field(
        &self,
        record: &Window,
        text: &str,
        focus: &dyn Fn() -> Result<(), Refusal>,
    ) -> Result<(), ApplyError> {
        let refused = ApplyError::NothingSent;
        let window = self.window_record(record.id).map_err(refused)?;
        if window.title != record.title || window.bounds != record.bounds {
            return Err(refused(super::stale(
                "the window changed since its tree was read",
            )));
        }
        let top = windows::top_level(&self.conn, self.root, window.id).map_err(refused)?;
        let keymap = input::Keymap::read(&self.conn).map_err(refused)?;
        let mut events = keymap.chord("ctrl+a").map_err(refused)?;
        events.extend(keymap.type_text(text).map_err(refused)?);
        // Keys will be sent and the focus taken: the restore puts it back.
        self.notes.get().acted_by_element = false;
        self.input_is_safe(top).map_err(refused)?;
        self.focus(window.id, top).map_err(refused)?;
        focus().map_err(refused)?;
        self.with_server_held(|| {
            self.keys_reach_target(&window, top)
                .map_err(refused)
                .and_then(|()| {
                    input::send(&self.conn, self.root, &events, self.watch.as_ref())
                        .map_err(ApplyError::Failed)
                })
        })
    }
}

impl X11Desktop {
    /// `send`, with the X server held: from the checks to the last event no
    /// other client's request is served, so nothing can move, cover, grab
    /// or reach into the target in between. Not held, nothing is sent.
    pub(super) fn with_server_held<T>(
        &self,
        send: impl FnOnce() -> Result<T, ApplyError>,
    ) -> Result<T, ApplyError> {
        self.conn.grab_server().map_err(|e| {
            ApplyError::NothingSent(Refusal::plain(format!("GrabServer failed: {e}")))
        })?;
        let sent = send();
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

    /// The window `id` of the display now, or `stale_target`.
    pub(super) fn window_record(&self, id: u64) -> Result<windows::WindowRecord, Refusal> {
        windows::all(&self.conn, self.root, &self.atoms)?
            .into_iter()
            .find(|r| u64::from(r.id) == id)
            .ok_or_else(|| super::stale("no such window"))
    }
}
