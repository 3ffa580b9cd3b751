//! AT-SPI's role names mapped to the role vocabulary upstream's shapes use
//! (macOS accessibility roles), so that a plan written for upstream's server
//! (`find_element role=AXButton label=OK`) finds the same element here.
//!
//! The mapping, by what a person sees:
//!
//! | AT-SPI role | role here |
//! | --- | --- |
//! | `push button`, `toggle button` | `AXButton` |
//! | `text`, `entry` | `AXTextField` (`AXTextArea` when multi-line) |
//! | `password text` | `AXSecureTextField` |
//! | `label`, `static` | `AXStaticText` |
//! | `check box` / `radio button` | `AXCheckBox` / `AXRadioButton` |
//! | `combo box` | `AXComboBox` |
//! | `menu bar` / `menu` / `menu item` | `AXMenuBar` / `AXMenu` / `AXMenuItem` |
//! | `list` / `list item` | `AXList` / `AXCell` |
//! | `table` / `table cell` | `AXTable` / `AXCell` |
//! | `slider` / `spin button` | `AXSlider` / `AXIncrementor` |
//! | `scroll bar` / `tool bar` | `AXScrollBar` / `AXToolbar` |
//! | `page tab list` / `page tab` | `AXTabGroup` / `AXRadioButton` |
//! | `link` / `image` / `progress bar` | `AXLink` / `AXImage` / `AXProgressIndicator` |
//! | `frame`, `dialog`, `window`, `alert` | `AXWindow` |
//! | `panel`, `filler`, `scroll pane`, `viewport`, others | `AXGroup` |
//!
//! Every node also keeps its AT-SPI role name (`atspiRole`), so nothing is
//! lost by the mapping.

/// The role shown for AT-SPI's `role` name; `multi_line` tells a text area
/// from a field.
pub fn ax_role(role: &str, multi_line: bool) -> &'static str {
    match role {
        "push button" | "toggle button" | "button" => "AXButton",
        "text" | "entry" if multi_line => "AXTextArea",
        "text" | "entry" => "AXTextField",
        "password text" => "AXSecureTextField",
        "label" | "static" => "AXStaticText",
        "check box" => "AXCheckBox",
        "radio button" | "page tab" => "AXRadioButton",
        "combo box" => "AXComboBox",
        "menu bar" => "AXMenuBar",
        "menu" => "AXMenu",
        "menu item" | "check menu item" | "radio menu item" => "AXMenuItem",
        "list" | "list box" => "AXList",
        "list item" | "table cell" => "AXCell",
        "table" => "AXTable",
        "slider" => "AXSlider",
        "spin button" => "AXIncrementor",
        "scroll bar" => "AXScrollBar",
        "tool bar" => "AXToolbar",
        "page tab list" => "AXTabGroup",
        "link" => "AXLink",
        "image" | "icon" => "AXImage",
        "progress bar" => "AXProgressIndicator",
        "frame" | "dialog" | "window" | "alert" | "file chooser" => "AXWindow",
        _ => "AXGroup",
    }
}

/// Whether the role holds a secret whose value is never shown.
pub fn is_secret(role: &str) -> bool {
    role == "password text"
}

/// Whether the role is an editable field whose label a person reads from
/// the layout when it has no name of its own.
pub fn is_field(role: &str) -> bool {
    matches!(
        role,
        "text" | "entry" | "password text" | "combo box" | "spin button" | "slider"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_maps_to_upstreams_vocabulary() {
        assert_eq!(ax_role("push button", false), "AXButton");
        assert_eq!(ax_role("text", false), "AXTextField");
        assert_eq!(ax_role("text", true), "AXTextArea");
        assert_eq!(ax_role("password text", false), "AXSecureTextField");
        assert_eq!(ax_role("label", false), "AXStaticText");
        assert_eq!(ax_role("dialog", false), "AXWindow");
        assert_eq!(ax_role("something new", false), "AXGroup");
        assert!(is_secret("password text") && !is_secret("text"));
    }
}
