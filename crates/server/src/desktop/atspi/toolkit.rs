//! Toolkits read their states differently, and an element is acted on only
//! when it can be, as its own toolkit says so.
//!
//! | toolkit (`ToolkitName`) | enabled when | shown when |
//! | --- | --- | --- |
//! | GTK 3 (`GTK`, version 3) | `enabled` or `sensitive` | `showing` |
//! | GTK 4 (`GTK`, version 4) | `sensitive` (GTK 4 never reports `enabled`) | `visible` (GTK 4 never reports `showing`) |
//! | Qt 5 and 6 (`Qt`) | `enabled` or `sensitive` | `showing` |
//! | Chromium and Electron (`Chromium`) | `enabled` or `sensitive` | `showing` |
//! | Firefox (`Gecko`) | `enabled` or `sensitive` | `showing` |
//!
//! A browser reports a page's element below the fold `visible` but not
//! `showing`, and so it reports an element placed off the page, clipped to
//! nothing, or in a background tab (Firefox): `visible` is no sign a
//! person can see it (a hostile review pressed all three through it). Only
//! `showing` counts, so an element below the fold is refused as not shown
//! until the page is scrolled to it.

//! Any other toolkit is not one this server has mapped: an element of it
//! that does not read as enabled and shown by the common states is refused
//! as `toolkit_unsupported`, naming the toolkit, never as "disabled".
//!
//! Chromium (and Electron) keeps its window's contents from the bus until
//! an assistive technology reads one of its objects' attributes, as a
//! screen reader does; Debian 12's Chromium ignores every other signal an
//! assistive technology can give on the bus (the bus's `IsEnabled` and
//! `ScreenReaderEnabled`, a registered event listener; measured, as were
//! `ACCESSIBILITY_ENABLED=1` and `GNOME_ACCESSIBILITY=1`). The server
//! reads the frame's attributes before each walk of a Chromium window (see
//! `frame::announce`) and says so in the tree's answer, so a Chromium
//! started without `--force-renderer-accessibility` is read like one
//! started with it. A window that still shows no page is refused as
//! `accessibility_off`, naming the switch, never as "not found".
//!
//! Neither browser writes a page's field through the bus. Chromium's page
//! fields offer no EditableText. Firefox's offer it and answer `true` to
//! `SetTextContents` and `InsertText` while the field stays empty, focused
//! or not (Firefox ESR 153, measured by reading the field back and on the
//! screen). A value written there would be a success reported for nothing.
//! So in the background writing a browser page's field is refused before
//! anything is done (`element_not_editable`, naming why); in the
//! foreground the field is given the focus and typed into (see `focus`),
//! and read back like any other. The page's check boxes, buttons and links
//! are acted on through their actions like any other element.
//!
//! Qt 5 (Debian's 5.15) finds the accessibility bus by the X root window's
//! `AT_SPI_BUS`, and without it registers only when a race goes its way;
//! the X11 desktop writes the launcher's address there when it is missing
//! (see `x11::bus_address`). Qt 6 registers either way.

use serde_json::json;

use super::Node;
use crate::engine::Refusal;

/// A toolkit, as the application names itself on the bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Toolkit {
    /// GTK 3 (its AT-SPI bridge is at-spi2-atk).
    Gtk3,
    /// GTK 4 (its own AT-SPI implementation).
    Gtk4,
    /// Qt 5 or 6.
    Qt,
    /// Chromium, Chrome and Electron applications.
    Chromium,
    /// Firefox and other Gecko applications.
    Gecko,
    /// Another toolkit: its name as reported (at most 32 characters of
    /// letters, digits, `.`, `-` and `_`; it is the application's word).
    Other(String),
}

impl Toolkit {
    /// Whether it answers `Properties.GetAll` with a node's name,
    /// description and child count (GTK 3, Chromium and Firefox through
    /// at-spi2-atk, GTK 4 through GDBus; not Qt, see `basics`).
    pub fn answers_get_all(&self) -> bool {
        matches!(self, Self::Gtk3 | Self::Gtk4 | Self::Chromium | Self::Gecko)
    }

    /// Which nodes a walk of its windows asks for their extents (see
    /// `basics::BoundsOf`).
    pub(super) fn bounds_of(&self) -> super::basics::BoundsOf {
        use super::basics::BoundsOf;
        match self {
            Self::Gtk3 => BoundsOf::Showing,
            Self::Gtk4 => BoundsOf::ShowingOrVisible,
            _ => BoundsOf::Every,
        }
    }

    /// Whether its events are sent as its tree changes, from the thread
    /// that changes it, so that an event sent before the application
    /// answers a ping is one of a change made before (GTK 3 and GTK 4
    /// through their in-process bridges, Qt through its own). A browser's
    /// page lives in another process than the one that speaks on the bus,
    /// and its events follow its changes late: measured on Firefox 153,
    /// a field typed into and read right after still sent no event, so a
    /// tree kept by them would be the page as it was. A browser's tree is
    /// always read from the bus (see `cache`).
    pub fn events_keep_pace(&self) -> bool {
        matches!(self, Self::Gtk3 | Self::Gtk4 | Self::Qt)
    }

    /// The toolkit an application's `ToolkitName` and `Version` name.
    pub fn from_names(name: &str, version: &str) -> Self {
        let lower = name.to_ascii_lowercase();
        if lower.starts_with("gtk") {
            if version.trim_start().starts_with('4') {
                Self::Gtk4
            } else {
                Self::Gtk3
            }
        } else if lower == "qt" || lower.starts_with("qt") {
            Self::Qt
        } else if lower.contains("chrom") || lower.contains("electron") {
            Self::Chromium
        } else if lower.contains("gecko") || lower.contains("mozilla") {
            Self::Gecko
        } else {
            let kept: String = name
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
                .take(32)
                .collect();
            Self::Other(kept)
        }
    }

    /// Its name in answers and refusals.
    pub fn name(&self) -> &str {
        match self {
            Self::Gtk3 => "gtk3",
            Self::Gtk4 => "gtk4",
            Self::Qt => "qt",
            Self::Chromium => "chromium",
            Self::Gecko => "gecko",
            Self::Other(_) => "other",
        }
    }

    /// A refusal when the window's application hides its contents from
    /// assistive technologies: a Chromium window with no page in its tree.
    pub fn contents_hidden(&self, nodes: &[Node]) -> Option<Refusal> {
        let page = |n: &Node| matches!(n.atspi_role.as_str(), "document web" | "document frame");
        (*self == Self::Chromium && !nodes.iter().any(page)).then(|| {
            Refusal::with_details(
                "accessibility_off",
                "this Chromium window exposes no page to assistive technologies, so none of its elements can be read: the server read its window's attributes, which turns a Chromium's accessibility on, and it still shows none; start Chromium (or the Electron application) with --force-renderer-accessibility",
                json!({ "toolkit": self.name(), "switch": "--force-renderer-accessibility" }),
            )
        })
    }

    /// A refusal when `node` is a field this toolkit does not let an
    /// assistive technology write: a browser page's (`nodes` is the tree it
    /// is in, whose paths say which document holds it).
    pub fn refuses_text(&self, nodes: &[Node], node: &Node) -> Option<Refusal> {
        if !matches!(self, Self::Chromium | Self::Gecko) {
            return None;
        }
        page_of(nodes, node).map(|_| {
            Refusal::with_details(
                "element_not_editable",
                format!(
                    "the {} {} is a field of a web page, which {} does not let an assistive technology write (it offers no EditableText, or accepts the call and writes nothing): nothing was written; in the foreground (`ExecutionMode::Foreground`) the server types into it instead, after giving it the focus",
                    node.role,
                    node.id(),
                    if *self == Self::Chromium { "Chromium" } else { "Firefox" }
                ),
                json!({ "toolkit": self.name() }),
            )
        })
    }

    /// Whether the node may be acted on now (not greyed out).
    pub fn enabled(&self, node: &Node) -> bool {
        node.has("enabled") || node.has("sensitive")
    }

    /// Whether the node is on screen for a person to see.
    pub fn shown(&self, node: &Node) -> bool {
        match self {
            Self::Gtk4 => node.has("visible") || node.has("showing"),
            _ => node.has("showing"),
        }
    }

    /// Whether the node is enabled and shown, or a refusal that says which
    /// it is not (`named` says which element, in this server's words).
    pub fn actionable(&self, node: &Node, named: &str) -> Result<(), Refusal> {
        let (enabled, shown) = (self.enabled(node), self.shown(node));
        if enabled && shown {
            return Ok(());
        }
        if let Self::Other(toolkit) = self {
            return Err(Refusal::with_details(
                "toolkit_unsupported",
                format!(
                    "the {named} does not read as enabled and shown, and its application's toolkit is not one this server maps (GTK 3, GTK 4, Qt, Chromium, Gecko): its states cannot be read as a person sees them"
                ),
                json!({ "toolkit": toolkit, "contentOrigin": "application_untrusted" }),
            ));
        }
        let why = match (enabled, shown) {
            (false, false) => "disabled and not shown",
            (false, true) => "disabled (its toolkit reports it insensitive)",
            _ => "not shown (hidden, or scrolled out of view)",
        };
        Err(Refusal::with_details(
            "element_not_actionable",
            format!("the {named} is {why}"),
            json!({ "toolkit": self.name(), "enabled": enabled, "shown": shown }),
        ))
    }
}

/// The web page (`document web` or `document frame`) among `nodes` that
/// holds `node`, the innermost when pages nest; `None` outside any.
pub(super) fn page_of<'a>(nodes: &'a [Node], node: &Node) -> Option<&'a Node> {
    nodes
        .iter()
        .filter(|n| matches!(n.atspi_role.as_str(), "document web" | "document frame"))
        .filter(|n| node.path.len() > n.path.len() && node.path.starts_with(&n.path))
        .max_by_key(|n| n.path.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(states: &[&str]) -> Node {
        Node {
            label: "1".into(),
            ..Node::sample(vec![0], "push button", "1 1", states)
        }
    }

    #[test]
    fn gtk4_reads_sensitive_and_visible() {
        let gtk4 = Toolkit::from_names("GTK", "4.8.3");
        assert_eq!(gtk4, Toolkit::Gtk4);
        assert!(
            gtk4.actionable(
                &node(&["focusable", "sensitive", "visible"]),
                "AXButton \"1\""
            )
            .is_ok()
        );
        let gtk3 = Toolkit::from_names("GTK", "3.24.38");
        let refused = gtk3
            .actionable(
                &node(&["focusable", "sensitive", "visible"]),
                "AXButton \"1\"",
            )
            .err();
        assert_eq!(
            refused.map(|r| r.code),
            Some("element_not_actionable".into())
        );
    }

    #[test]
    fn a_chromium_window_without_its_page_is_named_accessibility_off() {
        let chromium = Toolkit::from_names("Chromium", "1.0");
        let frame = node(&["enabled", "showing"]);
        let refused = chromium.contents_hidden(std::slice::from_ref(&frame));
        assert_eq!(refused.map(|r| r.code), Some("accessibility_off".into()));
        let mut page = node(&["enabled", "showing"]);
        page.atspi_role = "document web".into();
        assert!(chromium.contents_hidden(&[frame.clone(), page]).is_none());
        // Other toolkits expose their windows without a page.
        assert!(Toolkit::Gtk3.contents_hidden(&[frame]).is_none());
    }

    #[test]
    fn a_browser_pages_field_is_refused_for_writing_and_its_own_bar_is_not() {
        let mut page = node(&["enabled", "showing"]);
        page.atspi_role = "document web".into();
        page.path = vec![0, 3];
        let mut field = node(&["editable", "enabled", "showing"]);
        field.path = vec![0, 3, 1, 2];
        let mut bar = node(&["editable", "enabled", "showing"]);
        bar.path = vec![0, 1, 4];
        let tree = [page, field.clone(), bar.clone()];
        for browser in [Toolkit::Chromium, Toolkit::Gecko] {
            let refused = browser.refuses_text(&tree, &field);
            assert_eq!(refused.map(|r| r.code), Some("element_not_editable".into()));
            assert!(browser.refuses_text(&tree, &bar).is_none());
        }
        assert!(Toolkit::Gtk3.refuses_text(&tree, &field).is_none());
    }

    #[test]
    fn an_unknown_toolkit_is_named_not_called_disabled() {
        let other = Toolkit::from_names("Fancy UI <script>", "1");
        assert_eq!(other, Toolkit::Other("FancyUIscript".into()));
        let refused = other
            .actionable(&node(&["visible"]), "AXButton \"1\"")
            .err();
        assert_eq!(refused.map(|r| r.code), Some("toolkit_unsupported".into()));
        assert!(
            other
                .actionable(&node(&["enabled", "showing"]), "AXButton \"1\"")
                .is_ok()
        );
    }
}
