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
//! Any other toolkit is not one this server has mapped: an element of it
//! that does not read as enabled and shown by the common states is refused
//! as `toolkit_unsupported`, naming the toolkit, never as "disabled".

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

#[cfg(test)]
mod tests {
    use super::*;

    fn node(states: &[&str]) -> Node {
        Node {
            path: vec![0],
            atspi_role: "push button".into(),
            role: "AXButton",
            name: "1 1".into(),
            label: "1".into(),
            labelled_apart: false,
            description: String::new(),
            value: None,
            secure: false,
            bounds: (0, 0, 10, 10),
            actions: vec!["click".into()],
            states: states.iter().map(|s| (*s).to_owned()).collect(),
            children: Vec::new(),
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
