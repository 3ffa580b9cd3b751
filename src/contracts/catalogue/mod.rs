//! The one catalogue of the low-level desktop tools an action names: each
//! tool once, with how it reaches the desktop, whether it mutates, whether
//! it acts at a point, and (for the tools whose shapes upstream publishes)
//! its argument schema.
//!
//! The library's argument check and model action formats, and the desktop
//! server's rules and desktops, all read this table; a tool's name is
//! spelled only in [`tool`]. The protocol's own tools (`preview_action`,
//! `acquire_control_lease`, ...) are named in [`protocol`], with their
//! groups; the server publishes their schemas.

mod arguments;
pub mod protocol;

pub use arguments::known_schema;

/// The name of each low-level tool, spelled once.
pub mod tool {
    /// `doctor`.
    pub const DOCTOR: &str = "doctor";
    /// `policy_status`.
    pub const POLICY_STATUS: &str = "policy_status";
    /// `agent_pointer`.
    pub const AGENT_POINTER: &str = "agent_pointer";
    /// `openai_computer`.
    pub const OPENAI_COMPUTER: &str = "openai_computer";
    /// `screenshot`.
    pub const SCREENSHOT: &str = "screenshot";
    /// `zoom`.
    pub const ZOOM: &str = "zoom";
    /// `left_click`.
    pub const LEFT_CLICK: &str = "left_click";
    /// `right_click`.
    pub const RIGHT_CLICK: &str = "right_click";
    /// `middle_click`.
    pub const MIDDLE_CLICK: &str = "middle_click";
    /// `double_click`.
    pub const DOUBLE_CLICK: &str = "double_click";
    /// `triple_click`.
    pub const TRIPLE_CLICK: &str = "triple_click";
    /// `mouse_move`.
    pub const MOUSE_MOVE: &str = "mouse_move";
    /// `left_click_drag`.
    pub const LEFT_CLICK_DRAG: &str = "left_click_drag";
    /// `cursor_position`.
    pub const CURSOR_POSITION: &str = "cursor_position";
    /// `left_mouse_down`.
    pub const LEFT_MOUSE_DOWN: &str = "left_mouse_down";
    /// `left_mouse_up`.
    pub const LEFT_MOUSE_UP: &str = "left_mouse_up";
    /// `scroll`.
    pub const SCROLL: &str = "scroll";
    /// `type`.
    pub const TYPE: &str = "type";
    /// `key`.
    pub const KEY: &str = "key";
    /// `hold_key`.
    pub const HOLD_KEY: &str = "hold_key";
    /// `read_clipboard`.
    pub const READ_CLIPBOARD: &str = "read_clipboard";
    /// `write_clipboard`.
    pub const WRITE_CLIPBOARD: &str = "write_clipboard";
    /// `open_application`.
    pub const OPEN_APPLICATION: &str = "open_application";
    /// `get_frontmost_app`.
    pub const GET_FRONTMOST_APP: &str = "get_frontmost_app";
    /// `list_windows`.
    pub const LIST_WINDOWS: &str = "list_windows";
    /// `list_running_apps`.
    pub const LIST_RUNNING_APPS: &str = "list_running_apps";
    /// `hide_app`.
    pub const HIDE_APP: &str = "hide_app";
    /// `unhide_app`.
    pub const UNHIDE_APP: &str = "unhide_app";
    /// `get_display_size`.
    pub const GET_DISPLAY_SIZE: &str = "get_display_size";
    /// `list_displays`.
    pub const LIST_DISPLAYS: &str = "list_displays";
    /// `get_window`.
    pub const GET_WINDOW: &str = "get_window";
    /// `get_cursor_window`.
    pub const GET_CURSOR_WINDOW: &str = "get_cursor_window";
    /// `activate_app`.
    pub const ACTIVATE_APP: &str = "activate_app";
    /// `activate_window`.
    pub const ACTIVATE_WINDOW: &str = "activate_window";
    /// `resize_window`.
    pub const RESIZE_WINDOW: &str = "resize_window";
    /// `wait`.
    pub const WAIT: &str = "wait";
    /// `snapshot`.
    pub const SNAPSHOT: &str = "snapshot";
    /// `get_ui_tree`.
    pub const GET_UI_TREE: &str = "get_ui_tree";
    /// `get_focused_element`.
    pub const GET_FOCUSED_ELEMENT: &str = "get_focused_element";
    /// `find_element`.
    pub const FIND_ELEMENT: &str = "find_element";
    /// `click_element`.
    pub const CLICK_ELEMENT: &str = "click_element";
    /// `set_value`.
    pub const SET_VALUE: &str = "set_value";
    /// `press_button`.
    pub const PRESS_BUTTON: &str = "press_button";
    /// `select_menu_item`.
    pub const SELECT_MENU_ITEM: &str = "select_menu_item";
    /// `fill_form`.
    pub const FILL_FORM: &str = "fill_form";
    /// `run_script`.
    pub const RUN_SCRIPT: &str = "run_script";
    /// `get_app_dictionary`.
    pub const GET_APP_DICTIONARY: &str = "get_app_dictionary";
    /// `list_menu_bar`.
    pub const LIST_MENU_BAR: &str = "list_menu_bar";
    /// `get_tool_guide`.
    pub const GET_TOOL_GUIDE: &str = "get_tool_guide";
    /// `get_app_capabilities`.
    pub const GET_APP_CAPABILITIES: &str = "get_app_capabilities";
    /// `list_spaces`.
    pub const LIST_SPACES: &str = "list_spaces";
    /// `get_active_space`.
    pub const GET_ACTIVE_SPACE: &str = "get_active_space";
    /// `create_agent_space`.
    pub const CREATE_AGENT_SPACE: &str = "create_agent_space";
    /// `move_window_to_space`.
    pub const MOVE_WINDOW_TO_SPACE: &str = "move_window_to_space";
    /// `remove_window_from_space`.
    pub const REMOVE_WINDOW_FROM_SPACE: &str = "remove_window_from_space";
    /// `destroy_space`.
    pub const DESTROY_SPACE: &str = "destroy_space";
    /// `get_tool_metadata`.
    pub const GET_TOOL_METADATA: &str = "get_tool_metadata";
    /// `filesystem`.
    pub const FILESYSTEM: &str = "filesystem";
    /// `process_kill`.
    pub const PROCESS_KILL: &str = "process_kill";
    /// `registry`.
    pub const REGISTRY: &str = "registry";
    /// `notification`.
    pub const NOTIFICATION: &str = "notification";
    /// `multi_select`.
    pub const MULTI_SELECT: &str = "multi_select";
    /// `multi_edit`.
    pub const MULTI_EDIT: &str = "multi_edit";
    /// `scrape`.
    pub const SCRAPE: &str = "scrape";
    /// `focus_window`.
    pub const FOCUS_WINDOW: &str = "focus_window";
    /// `move_cursor`.
    pub const MOVE_CURSOR: &str = "move_cursor";
    /// `write_file`.
    pub const WRITE_FILE: &str = "write_file";
    /// `delete_file`.
    pub const DELETE_FILE: &str = "delete_file";
    /// `send_email`.
    pub const SEND_EMAIL: &str = "send_email";
    /// `wait_for_window`: waits until a window of an application (with a
    /// title) is shown, or is gone (upstream's released server, 7.5).
    pub const WAIT_FOR_WINDOW: &str = "wait_for_window";
    /// `wait_for_text`: waits until a window's elements show a text, or no
    /// longer do (upstream's released server, 7.6).
    pub const WAIT_FOR_TEXT: &str = "wait_for_text";
    /// `wait_for_stable`: waits until a window's tree stays unchanged for a
    /// quiet time (upstream's released server, 7.6).
    pub const WAIT_FOR_STABLE: &str = "wait_for_stable";
}

/// How a tool reaches the desktop (upstream's `focusRequired`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Needs no focus and sends no input.
    None,
    /// Through the accessibility API.
    Accessibility,
    /// Through synthetic input events.
    Input,
    /// Through a scripting bridge.
    Scripting,
}

/// How a tool involves the pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pointer {
    /// It does not act where the pointer is.
    None,
    /// It acts at a point its arguments name (each must be hit-tested).
    AtAPoint,
    /// It draws a virtual pointer only (upstream's `agent_pointer`).
    Overlay,
    /// A provider's whole computer action (upstream's `openai_computer`),
    /// to be translated into one low-level action first.
    Provider,
}

/// One low-level tool of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LowLevelTool {
    /// Its name (one of [`tool`]).
    pub name: &'static str,
    /// How it reaches the desktop.
    pub reach: Reach,
    /// Whether it changes the desktop.
    pub mutates: bool,
    /// Upstream's `destructiveHint`.
    pub destructive: bool,
    /// How it involves the pointer.
    pub pointer: Pointer,
    /// For the desktop server's own tools (not upstream's 64): the upstream
    /// tool whose capability rule it follows.
    pub counterpart: Option<&'static str>,
}

const fn entry(name: &'static str, reach: Reach, mutates: bool, destructive: bool) -> LowLevelTool {
    LowLevelTool {
        name,
        reach,
        mutates,
        destructive,
        pointer: Pointer::None,
        counterpart: None,
    }
}
const fn read(name: &'static str) -> LowLevelTool {
    entry(name, Reach::None, false, false)
}
const fn write(name: &'static str) -> LowLevelTool {
    entry(name, Reach::None, true, false)
}
const fn destroy(name: &'static str) -> LowLevelTool {
    entry(name, Reach::None, true, true)
}
const fn input(name: &'static str) -> LowLevelTool {
    entry(name, Reach::Input, true, false)
}
const fn ax_read(name: &'static str) -> LowLevelTool {
    entry(name, Reach::Accessibility, false, false)
}
const fn ax_write(name: &'static str) -> LowLevelTool {
    entry(name, Reach::Accessibility, true, false)
}
const fn script_read(name: &'static str) -> LowLevelTool {
    entry(name, Reach::Scripting, false, false)
}
const fn script_write(name: &'static str) -> LowLevelTool {
    entry(name, Reach::Scripting, true, true)
}
const fn overlay(name: &'static str) -> LowLevelTool {
    LowLevelTool {
        pointer: Pointer::Overlay,
        ..write(name)
    }
}
const fn provider(name: &'static str) -> LowLevelTool {
    LowLevelTool {
        pointer: Pointer::Provider,
        ..input(name)
    }
}

impl LowLevelTool {
    const fn at_a_point(self) -> Self {
        Self {
            pointer: Pointer::AtAPoint,
            ..self
        }
    }

    const fn ours(self, counterpart: &'static str) -> Self {
        Self {
            counterpart: Some(counterpart),
            ..self
        }
    }

    /// Whether it is one of upstream's 64 catalogue tools (not one of the
    /// desktop server's own eight).
    pub fn is_upstream(&self) -> bool {
        self.counterpart.is_none()
    }

    /// The upstream tool whose capability rule it follows: itself, or its
    /// counterpart.
    pub fn rule_of(&self) -> &'static str {
        self.counterpart.unwrap_or(self.name)
    }

    /// Its argument schema (JSON Schema), where upstream publishes one.
    pub fn arguments(&self) -> Option<&'static serde_json::Value> {
        known_schema(self.name)
    }
}

/// Upstream's 64 low-level tools, each with its entry, then the desktop
/// server's own eight, which follow the rule of an upstream counterpart:
/// five that rename one of upstream's, and the three waits of upstream's
/// released server (7.5/7.6, past the v8 facade), read-only observations
/// that follow the rule of what they poll.
pub const LOW_LEVEL_TOOLS: &[LowLevelTool] = &[
    read(tool::DOCTOR),
    read(tool::POLICY_STATUS),
    overlay(tool::AGENT_POINTER),
    provider(tool::OPENAI_COMPUTER),
    read(tool::SCREENSHOT),
    read(tool::ZOOM),
    input(tool::LEFT_CLICK).at_a_point(),
    input(tool::RIGHT_CLICK).at_a_point(),
    input(tool::MIDDLE_CLICK).at_a_point(),
    input(tool::DOUBLE_CLICK).at_a_point(),
    input(tool::TRIPLE_CLICK).at_a_point(),
    input(tool::MOUSE_MOVE).at_a_point(),
    input(tool::LEFT_CLICK_DRAG).at_a_point(),
    read(tool::CURSOR_POSITION),
    input(tool::LEFT_MOUSE_DOWN),
    input(tool::LEFT_MOUSE_UP),
    input(tool::SCROLL).at_a_point(),
    input(tool::TYPE),
    input(tool::KEY),
    input(tool::HOLD_KEY),
    read(tool::READ_CLIPBOARD),
    write(tool::WRITE_CLIPBOARD),
    ax_write(tool::OPEN_APPLICATION),
    ax_read(tool::GET_FRONTMOST_APP),
    ax_read(tool::LIST_WINDOWS),
    ax_read(tool::LIST_RUNNING_APPS),
    ax_write(tool::HIDE_APP),
    ax_write(tool::UNHIDE_APP),
    read(tool::GET_DISPLAY_SIZE),
    read(tool::LIST_DISPLAYS),
    ax_read(tool::GET_WINDOW),
    ax_read(tool::GET_CURSOR_WINDOW),
    ax_write(tool::ACTIVATE_APP),
    ax_write(tool::ACTIVATE_WINDOW),
    ax_write(tool::RESIZE_WINDOW),
    read(tool::WAIT),
    read(tool::SNAPSHOT),
    ax_read(tool::GET_UI_TREE),
    ax_read(tool::GET_FOCUSED_ELEMENT),
    ax_read(tool::FIND_ELEMENT),
    ax_write(tool::CLICK_ELEMENT),
    ax_write(tool::SET_VALUE),
    ax_write(tool::PRESS_BUTTON),
    ax_write(tool::SELECT_MENU_ITEM),
    ax_write(tool::FILL_FORM),
    script_write(tool::RUN_SCRIPT),
    script_read(tool::GET_APP_DICTIONARY),
    ax_read(tool::LIST_MENU_BAR),
    read(tool::GET_TOOL_GUIDE),
    ax_read(tool::GET_APP_CAPABILITIES),
    read(tool::LIST_SPACES),
    read(tool::GET_ACTIVE_SPACE),
    ax_write(tool::CREATE_AGENT_SPACE),
    ax_write(tool::MOVE_WINDOW_TO_SPACE),
    ax_write(tool::REMOVE_WINDOW_FROM_SPACE),
    ax_write(tool::DESTROY_SPACE),
    read(tool::GET_TOOL_METADATA),
    destroy(tool::FILESYSTEM),
    destroy(tool::PROCESS_KILL),
    destroy(tool::REGISTRY),
    write(tool::NOTIFICATION),
    input(tool::MULTI_SELECT),
    input(tool::MULTI_EDIT),
    read(tool::SCRAPE),
    ax_write(tool::FOCUS_WINDOW).ours(tool::ACTIVATE_WINDOW),
    input(tool::MOVE_CURSOR).ours(tool::MOUSE_MOVE),
    destroy(tool::WRITE_FILE).ours(tool::FILESYSTEM),
    destroy(tool::DELETE_FILE).ours(tool::FILESYSTEM),
    write(tool::SEND_EMAIL).ours(tool::NOTIFICATION),
    ax_read(tool::WAIT_FOR_WINDOW).ours(tool::LIST_WINDOWS),
    ax_read(tool::WAIT_FOR_TEXT).ours(tool::FIND_ELEMENT),
    ax_read(tool::WAIT_FOR_STABLE).ours(tool::GET_UI_TREE),
];

/// The catalogue's entry for `name`.
///
/// ```
/// use adk_computer_use::contracts::catalogue::{self, Pointer, tool};
///
/// let drag = catalogue::low_level_tool(tool::LEFT_CLICK_DRAG).unwrap();
/// assert!(drag.mutates);
/// assert_eq!(drag.pointer, Pointer::AtAPoint);
/// assert!(catalogue::low_level_tool("a_tool_of_your_own").is_none());
/// ```
pub fn low_level_tool(name: &str) -> Option<&'static LowLevelTool> {
    LOW_LEVEL_TOOLS.iter().find(|t| t.name == name)
}

/// The tools that act where the pointer is: each must name a point.
pub fn pointer_tools() -> impl Iterator<Item = &'static str> {
    LOW_LEVEL_TOOLS
        .iter()
        .filter(|t| t.pointer == Pointer::AtAPoint)
        .map(|t| t.name)
}

/// Whether `name` acts where the pointer is.
pub fn is_pointer_tool(name: &str) -> bool {
    low_level_tool(name).is_some_and(|t| t.pointer == Pointer::AtAPoint)
}
