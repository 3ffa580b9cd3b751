//! The simulated desktop: applications, windows, elements, a clipboard, a
//! small filesystem, a cursor and focus. Deterministic: the same calls give
//! the same state, so digests computed from it are stable.

mod apply;
mod backend;
mod faults;

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::engine::Refusal;
use crate::engine::{
    ApplyError, EffectCheck, Frame, PointerAndFocus, Revalidation, bounds_agree, stated_or_same,
};
use adk_computer_use::contracts::catalogue::tool;
use adk_computer_use::contracts::{
    ActionPostcondition, PostconditionFields, TargetEvidence, WindowId,
};
use adk_computer_use::digest::{sha256_hex, sha256_prefixed};

pub use backend::SimulatedBackend;
pub use faults::{Fault, Faults};

/// One accessibility element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    /// Stable id.
    pub id: String,
    /// Accessibility role (`AXTextField`, ...).
    pub role: String,
    /// Label.
    pub label: String,
    /// Current value.
    pub value: String,
    /// A password field: its value is never shown.
    pub secure: bool,
}

impl Element {
    /// How it matches `wanted` (normalised) by the one label rule.
    pub fn label_match(
        &self,
        wanted: &str,
    ) -> Option<adk_computer_use::contracts::labels::LabelMatch> {
        adk_computer_use::contracts::labels::label_match(&self.label, wanted)
    }
}

/// One window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// Numeric id.
    pub id: u64,
    /// Title.
    pub title: String,
    /// Position and size on the display: `(x, y, width, height)`.
    pub bounds: (i64, i64, u32, u32),
    /// Revision of the window's UI tree: it moves when the window's
    /// structure or title changes, not when a value is typed into it.
    pub tree_revision: u64,
    /// Elements, in order.
    pub elements: Vec<Element>,
}

/// One application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct App {
    /// Bundle-style id.
    pub id: String,
    /// Name shown to people.
    pub name: String,
    /// Its process id.
    pub pid: u32,
    /// Windows.
    pub windows: Vec<Window>,
}

/// The whole desktop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimulatedDesktop {
    /// Running applications.
    pub apps: Vec<App>,
    /// Clipboard text.
    pub clipboard: String,
    /// Files by path.
    pub files: BTreeMap<String, String>,
    /// Pointer position.
    pub cursor: (i64, i64),
    /// Focused application and window.
    pub focus: Option<(String, u64)>,
    /// Bumped on every change; observations carry it.
    pub revision: u64,
    /// The faults its server injects (see [`SimulatedDesktop::with_faults`]).
    faults: Faults,
}

/// The clipboard viewer application, whose text area mirrors the clipboard.
pub const CLIPBOARD_APP: &str = "org.example.Clipboard";
/// The clipboard viewer's window.
pub const CLIPBOARD_WINDOW: u64 = 1;
/// The one display of the simulated desktop.
pub const DISPLAY_ID: u64 = 1;
/// The frame `snapshot` returns: a 1x1 PNG, base64.
pub const SNAPSHOT_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
/// The clipboard check both desktops announce to clients
/// (`capabilities.experimental["adk/effect-checks"]`): for
/// `write_clipboard`, the clipboard viewer's text area, which mirrors the
/// clipboard. The client adds the digest of the text it writes.
pub fn announced_effect_checks() -> serde_json::Map<String, Value> {
    let mut checks = serde_json::Map::new();
    checks.insert(
        tool::WRITE_CLIPBOARD.into(),
        json!({ "kind": "ui_element", "role": CLIPBOARD_ROLE, "label": CLIPBOARD_LABEL }),
    );
    checks
}

/// Whether `postcondition` is the announced clipboard check: both desktops
/// judge only this form of a clipboard write's postcondition on the
/// clipboard itself.
pub(crate) fn is_clipboard_check(postcondition: &ActionPostcondition) -> bool {
    matches!(
        postcondition.fields(),
        PostconditionFields::UiElement { role: Some(role), label: Some(label), exists: true, .. }
            if role == CLIPBOARD_ROLE && label == CLIPBOARD_LABEL
    )
}

/// Role of the clipboard viewer's text area.
pub const CLIPBOARD_ROLE: &str = "AXTextArea";
/// Label of the clipboard viewer's text area.
pub const CLIPBOARD_LABEL: &str = "Clipboard contents";

fn element(id: &str, role: &str, label: &str, secure: bool) -> Element {
    Element {
        id: id.into(),
        role: role.into(),
        label: label.into(),
        value: String::new(),
        secure,
    }
}

impl Default for SimulatedDesktop {
    fn default() -> Self {
        Self {
            apps: vec![
                App {
                    id: CLIPBOARD_APP.into(),
                    name: "Clipboard".into(),
                    pid: 4101,
                    windows: vec![Window {
                        id: CLIPBOARD_WINDOW,
                        title: "Clipboard".into(),
                        bounds: (40, 40, 480, 320),
                        tree_revision: 1,
                        elements: vec![element(
                            "clipboard-text",
                            CLIPBOARD_ROLE,
                            CLIPBOARD_LABEL,
                            false,
                        )],
                    }],
                },
                App {
                    id: "com.example.Notes".into(),
                    name: "Notes".into(),
                    pid: 4102,
                    windows: vec![Window {
                        id: 7,
                        title: "Notes".into(),
                        bounds: (560, 40, 640, 480),
                        tree_revision: 1,
                        elements: vec![
                            element("notes-title", "AXTextField", "Title", false),
                            element("notes-body", "AXTextArea", "Body", false),
                            element("notes-status", "AXStaticText", "Status", false),
                        ],
                    }],
                },
                App {
                    id: "com.example.Login".into(),
                    name: "Login".into(),
                    pid: 4103,
                    windows: vec![Window {
                        id: 9,
                        title: "Sign in".into(),
                        bounds: (40, 400, 400, 240),
                        tree_revision: 1,
                        elements: vec![
                            element("login-user", "AXTextField", "User", false),
                            element("login-password", "AXSecureTextField", "Password", true),
                        ],
                    }],
                },
            ],
            clipboard: String::new(),
            files: BTreeMap::new(),
            cursor: (0, 0),
            focus: Some((CLIPBOARD_APP.into(), CLIPBOARD_WINDOW)),
            revision: 1,
            faults: Faults::default(),
        }
    }
}

impl Window {
    /// The tree revision as observations state it.
    pub fn tree_label(&self) -> String {
        format!("tree-{}-{}", self.id, self.tree_revision)
    }
}

fn invalid(message: impl Into<String>) -> Refusal {
    Refusal::new("invalid_arguments", message)
}

fn text_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, Refusal> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("arguments.{key} must be a string")))
}

impl SimulatedDesktop {
    /// The same desktop, its server injecting `faults`: the one way to make
    /// a server lie, and only over the simulated desktop.
    pub fn with_faults(mut self, faults: Faults) -> Self {
        self.faults = faults;
        self
    }

    /// The faults its server injects.
    pub fn injected(&self) -> &Faults {
        &self.faults
    }

    /// The window `window_id` of `app_id`, if it exists.
    pub fn window(&self, app_id: &str, window_id: Option<&WindowId>) -> Option<&Window> {
        let (app, window) = self.locate(app_id, window_id)?;
        Some(&self.apps[app].windows[window])
    }

    fn window_mut(&mut self, app_id: &str, window_id: Option<&WindowId>) -> Option<&mut Window> {
        let (app, window) = self.locate(app_id, window_id)?;
        Some(&mut self.apps[app].windows[window])
    }

    /// Positions of the application and of its window (its first window when
    /// none is named; a textual id names no window here).
    fn locate(&self, app_id: &str, window_id: Option<&WindowId>) -> Option<(usize, usize)> {
        let app = self.apps.iter().position(|a| a.id == app_id)?;
        let windows = &self.apps[app].windows;
        let window = match window_id {
            Some(WindowId::Number(id)) => windows.iter().position(|w| w.id == *id)?,
            Some(WindowId::Name(_)) => return None,
            None if windows.is_empty() => return None,
            None => 0,
        };
        Some((app, window))
    }

    /// Whether the evidence still describes a window on this desktop, as
    /// upstream revalidates it: every field the evidence states must equal
    /// the desktop's (bounds within 4 px); a field it leaves out is not
    /// compared. The simulated desktop has no platform of its own, so
    /// `platform` is not compared.
    pub fn is_current(&self, target: &TargetEvidence) -> bool {
        let Some((app, window)) = self.locate(&target.app_id, target.window_id.as_ref()) else {
            return false;
        };
        let (app, window) = (&self.apps[app], &self.apps[app].windows[window]);
        let same = stated_or_same;
        target.pid.is_none_or(|pid| pid == app.pid)
            && same(
                target.window_title_digest.as_ref(),
                &sha256_hex(&window.title),
            )
            && same(target.display_id.as_ref(), &DISPLAY_ID.to_string())
            && same(target.screenshot_hash.as_ref(), &self.screenshot_hash())
            && same(target.ui_tree_revision.as_ref(), &window.tree_label())
            && bounds_agree(target.bounds.as_ref(), window.bounds)
    }

    /// The digest of what `snapshot` shows: `sha256:` + hex of the PNG's
    /// bytes (upstream's evidence-frame digest).
    pub fn screenshot_hash(&self) -> String {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(SNAPSHOT_PNG)
            .unwrap_or_default();
        sha256_prefixed(bytes)
    }

    /// Changes a window's title and tree, as a window that navigated away
    /// would: evidence taken before no longer matches it.
    pub fn drift_window(&mut self, app_id: &str, window_id: Option<&WindowId>) -> bool {
        let Some(window) = self.window_mut(app_id, window_id) else {
            return false;
        };
        window.title.push_str(" (changed)");
        window.tree_revision += 1;
        self.revision += 1;
        true
    }

    /// Whether the element the target points at is a password field.
    pub fn targets_secure_field(&self, target: Option<&TargetEvidence>, args: &Value) -> bool {
        let Some(target) = target else { return false };
        let Some(window) = self.window(&target.app_id, target.window_id.as_ref()) else {
            return false;
        };
        let wanted = args.get("element_id").and_then(Value::as_str);
        window.elements.iter().any(|e| {
            e.secure && (wanted == Some(e.id.as_str()) || target.role.as_deref() == Some(&e.role))
        })
    }

    /// The windows, as `list_windows` shows them (upstream's window
    /// records: `bundleId`, `pid`, `bounds`, `displayId`, ...).
    pub fn list_windows(&self) -> Value {
        let windows: Vec<Value> = self
            .apps
            .iter()
            .flat_map(|app| app.windows.iter().map(move |w| self.window_record(app, w)))
            .collect();
        json!({ "windows": windows, "revision": self.revision })
    }

    fn window_record(&self, app: &App, window: &Window) -> Value {
        let (x, y, width, height) = window.bounds;
        let focused = self
            .focus
            .as_ref()
            .is_some_and(|(a, w)| *a == app.id && *w == window.id);
        json!({
            "windowId": window.id,
            "bundleId": app.id,
            "displayName": app.name,
            "pid": app.pid,
            "title": window.title,
            "bounds": { "x": x, "y": y, "width": width, "height": height },
            "isOnScreen": true,
            "isFocused": focused,
            "displayId": DISPLAY_ID,
        })
    }

    /// A window's elements, with secure values withheld.
    pub fn ui_tree(&self, app_id: Option<&str>, window_id: Option<u64>) -> Result<Value, Refusal> {
        let window = self
            .apps
            .iter()
            .filter(|a| app_id.is_none_or(|id| a.id == id))
            .find_map(|app| {
                app.windows
                    .iter()
                    .find(|w| window_id.is_none_or(|id| w.id == id))
                    .map(|w| (app, w))
            });
        let (app, window) = window.ok_or_else(|| Refusal::new("stale_target", "no such window"))?;
        let elements: Vec<Value> = window
            .elements
            .iter()
            .map(|e| {
                let value = if e.secure { Value::Null } else { Value::String(e.value.clone()) };
                json!({ "id": e.id, "role": e.role, "label": e.label, "value": value, "secure": e.secure })
            })
            .collect();
        Ok(json!({
            "appId": app.id,
            "windowId": window.id,
            "window": self.window_record(app, window),
            "uiTreeRevision": window.tree_label(),
            "elements": elements,
            "revision": self.revision,
        }))
    }

    /// What the desktop shows for a postcondition: `(satisfied, observedDigest)`.
    pub fn observe_postcondition(
        &self,
        postcondition: &ActionPostcondition,
        target: Option<&TargetEvidence>,
    ) -> (bool, Option<String>) {
        match postcondition.fields() {
            PostconditionFields::UiElement {
                role,
                label,
                exists,
                value_digest,
            } => {
                let scope: Vec<&Window> = match target {
                    Some(t) => self
                        .window(&t.app_id, t.window_id.as_ref())
                        .into_iter()
                        .collect(),
                    None => self.apps.iter().flat_map(|a| a.windows.iter()).collect(),
                };
                // The one label rule: the one exact match, or the one
                // partial match when none is exact.
                let wanted = label
                    .as_deref()
                    .map(adk_computer_use::contracts::labels::normalise);
                let found = adk_computer_use::contracts::labels::resolve_one(
                    scope
                        .iter()
                        .flat_map(|w| w.elements.iter())
                        .filter(|e| role.as_ref().is_none_or(|r| r == &e.role))
                        .filter_map(|e| match &wanted {
                            None => {
                                Some((e, adk_computer_use::contracts::labels::LabelMatch::Exact))
                            }
                            Some(w) => e.label_match(w).map(|m| (e, m)),
                        }),
                )
                .ok();
                let observed = found
                    .filter(|e| !e.secure)
                    .map(|e| sha256_prefixed(&e.value));
                let satisfied = found.is_some() == *exists
                    && value_digest
                        .as_ref()
                        .is_none_or(|d| observed.as_deref() == Some(d.as_str()));
                (satisfied, observed)
            }
            PostconditionFields::Filesystem {
                path,
                exists,
                content_digest,
            } => {
                let content = self.files.get(path);
                let observed = content.map(sha256_prefixed);
                let satisfied = content.is_some() == *exists
                    && content_digest
                        .as_ref()
                        .is_none_or(|d| observed.as_deref() == Some(d.as_str()));
                (satisfied, observed)
            }
            PostconditionFields::Window { window_id, exists } => {
                let found = self
                    .apps
                    .iter()
                    .flat_map(|a| a.windows.iter())
                    .any(|w| w.id == *window_id);
                (found == *exists, None)
            }
            // The simulated desktop runs no processes and has no registry.
            PostconditionFields::Process { .. } => (true, None),
            PostconditionFields::Registry { exists, .. } => (!*exists, None),
        }
    }
}
