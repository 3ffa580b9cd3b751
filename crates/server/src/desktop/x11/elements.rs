//! The X11 desktop as a host of the element tools
//! ([`crate::desktop::atspi::actions`]): a window is found on the bus by
//! the process the X server records for it, its title, and its place on
//! the screen (AT-SPI reports X11 frames in screen coordinates).

use super::{X11Desktop, windows};
use crate::desktop::atspi::Accessibility;
use crate::desktop::atspi::Node;
use crate::desktop::atspi::actions::{ElementHost, Window};
use crate::engine::Refusal;
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
}

impl X11Desktop {
    /// The window `id` of the display now, or `stale_target`.
    pub(super) fn window_record(&self, id: u64) -> Result<windows::WindowRecord, Refusal> {
        windows::all(&self.conn, self.root, &self.atoms)?
            .into_iter()
            .find(|r| u64::from(r.id) == id)
            .ok_or_else(|| super::stale("no such window"))
    }
}
