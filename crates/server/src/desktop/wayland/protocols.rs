//! What the compositor offers, and which tools it lets this desktop run:
//! each tool needs one Wayland global (or sway's layout), and a tool whose
//! need is missing is refused `protocol_unavailable` before anything is
//! sent.

use super::*;

/// Observation tools, and the protocol each needs.
pub(super) const OBSERVE: [(&str, Need); 4] = [
    (tool::SNAPSHOT, Need::Protocol("zwlr_screencopy_manager_v1")),
    (tool::LIST_WINDOWS, Need::Layout),
    (tool::GET_UI_TREE, Need::Layout),
    (
        tool::READ_CLIPBOARD,
        Need::Protocol("zwlr_data_control_manager_v1"),
    ),
];

/// Mutating tools, and the protocol each needs.
pub(super) const ACT: [(&str, Need); 10] = [
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
pub(super) enum Need {
    /// A Wayland global, by interface name.
    Protocol(&'static str),
    /// The layout (sway's IPC).
    Layout,
}

impl WaylandDesktop {
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
    pub(super) fn lacks(&self, tool: &str) -> Option<Refusal> {
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

    pub(super) fn no_layout(&self, tool: &str) -> Refusal {
        Refusal::new(
            "layout_unavailable",
            format!(
                "{tool} needs the compositor's layout (which window is where, and whose), which only sway's IPC gives here: {}",
                self.layout_note
            ),
        )
    }
}
