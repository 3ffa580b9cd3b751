//! Applications, not pixels: the element tools of the Linux desktops (X11
//! and Wayland) through the accessibility layer. A window of the display
//! is the application's frame with the same process and title; an element
//! is named by role and label (upstream's argument shapes) and must be found
//! exactly once, enabled and shown, before anything is done; the effect goes
//! through the application's own interfaces (no input event, no focus
//! taken), and a written value is read back through the same bus.

use serde_json::{Value, json};

use super::{Accessibility, Bounds, DEFAULT_DEPTH, MAX_DEPTH, Node, Tree};
use crate::desktop::simulated::Element;
use crate::engine::{ApplyError, EffectCheck, Refusal};
use adk_computer_use::contracts::TargetEvidence;
use adk_computer_use::contracts::catalogue::tool;
use adk_computer_use::digest::sha256_prefixed;

/// The element tools a Linux desktop performs when the accessibility bus
/// is reachable.
pub(crate) const ELEMENT_TOOLS: [&str; 5] = [
    tool::SET_VALUE,
    tool::FILL_FORM,
    tool::PRESS_BUTTON,
    tool::CLICK_ELEMENT,
    tool::SELECT_MENU_ITEM,
];

/// How long one element action may take, whole (each call has its own
/// deadline as well): past it a form stops being filled, and the outcome is
/// unknown.
const ACTION_BUDGET: std::time::Duration = std::time::Duration::from_secs(30);

/// AT-SPI's roles of a menu's entries.
const MENU_ITEM_ROLES: [&str; 4] = ["menu item", "check menu item", "radio menu item", "menu"];

/// The menu item `select_menu_item` names (upstream's shape: `bundle_id`,
/// `menu`, `item`, `submenu`): walked from the window's menu bar by title,
/// each step found exactly once, the item enabled and shown.
fn menu_item<'t>(
    tree: &'t Tree,
    args: &Value,
    target: Option<&TargetEvidence>,
) -> Result<&'t Node, Refusal> {
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let bundle = text("bundle_id").ok_or_else(|| invalid("select_menu_item needs a bundle_id"))?;
    if target.is_some_and(|t| t.app_id != bundle) {
        return Err(invalid(format!(
            "arguments.bundle_id is {bundle:?}, but the action's target is another application"
        )));
    }
    let menu = text("menu").ok_or_else(|| invalid("select_menu_item needs a menu (a string)"))?;
    let item = text("item").ok_or_else(|| invalid("select_menu_item needs an item (a string)"))?;
    let submenu = match args.get("submenu") {
        None => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return Err(invalid("select_menu_item's submenu must be a string")),
    };
    if tree.truncated {
        return Err(Refusal::new(
            "ambiguous_match",
            "the window's tree is larger than the walk's caps, so no menu in it is known to be unique",
        ));
    }
    // One step down: the one child of `parents` with a menu's role titled
    // `title`.
    let step = |parents: Vec<&'t Node>, title: &str| -> Result<&'t Node, Refusal> {
        let found: Vec<&Node> = parents
            .iter()
            .flat_map(|p| p.children.iter().filter_map(|&c| tree.nodes.get(c)))
            .filter(|n| MENU_ITEM_ROLES.contains(&n.atspi_role.as_str()) && n.label == title)
            .collect();
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(Refusal::new(
                "element_not_found",
                format!("no menu entry {title:?} where the path leads"),
            )),
            many => Err(Refusal::new(
                "ambiguous_match",
                format!("{} menu entries are titled {title:?}", many.len()),
            )),
        }
    };
    let bars: Vec<&Node> = tree
        .nodes
        .iter()
        .filter(|n| n.atspi_role == "menu bar")
        .collect();
    if bars.is_empty() {
        return Err(Refusal::new(
            "element_not_found",
            "the window exposes no menu bar",
        ));
    }
    let mut node = step(bars, menu)?;
    if let Some(submenu) = submenu {
        node = step(vec![node], submenu)?;
    }
    let chosen = step(vec![node], item)?;
    // An item of a closed menu is not shown; it must be enabled, as must
    // every menu on the way to it.
    let enabled = |n: &Node| {
        ["enabled", "sensitive"]
            .iter()
            .all(|s| n.states.iter().any(|t| t == s))
    };
    if !enabled(node) || !enabled(chosen) {
        return Err(Refusal::new(
            "element_not_actionable",
            format!("the menu item {item:?} is disabled"),
        ));
    }
    if chosen.atspi_role == "menu" {
        return Err(invalid(format!(
            "{item:?} opens a submenu: name it as the submenu and an item in it"
        )));
    }
    Ok(chosen)
}

/// The element observations a Linux desktop answers when the
/// accessibility bus is reachable.
pub(crate) const OBSERVE_TOOLS: [&str; 2] = [tool::FIND_ELEMENT, tool::GET_FOCUSED_ELEMENT];

/// One field or button an action names, as its arguments name it.
struct Wanted<'a> {
    role: Option<&'a str>,
    label: &'a str,
    value: Option<&'a str>,
}

fn invalid(message: impl Into<String>) -> Refusal {
    Refusal::new("invalid_arguments", message)
}

fn wanted<'a>(tool_name: &str, args: &'a Value) -> Result<Vec<Wanted<'a>>, Refusal> {
    // Upstream's shapes name an element by role and label only. An id
    // beside them could steer the server's sensitivity check to another
    // element than the one written: it is refused, whole.
    let carries_id = |v: &Value| v.get("element_id").is_some();
    if carries_id(args)
        || args
            .get("fields")
            .and_then(Value::as_array)
            .is_some_and(|fields| fields.iter().any(carries_id))
    {
        return Err(invalid(
            "element_id is not part of upstream's shape here: name each element by its role and label",
        ));
    }
    let text = |v: &'a Value, key: &str| v.get(key).and_then(Value::as_str);
    let one = |v: &'a Value| -> Result<Wanted<'a>, Refusal> {
        let label = text(v, "label")
            .ok_or_else(|| invalid(format!("{tool_name} needs a label (a string)")))?;
        Ok(Wanted {
            role: text(v, "role"),
            label,
            value: text(v, "value"),
        })
    };
    match tool_name {
        tool::FILL_FORM => {
            let fields = args
                .get("fields")
                .and_then(Value::as_array)
                .filter(|f| (1..=100).contains(&f.len()))
                .ok_or_else(|| invalid("fill_form needs 1 to 100 fields"))?;
            let fields: Vec<Wanted<'a>> = fields.iter().map(one).collect::<Result<_, _>>()?;
            if fields.iter().any(|f| f.role.is_none() || f.value.is_none()) {
                return Err(invalid(
                    "each field of fill_form needs a role, a label and a value",
                ));
            }
            Ok(fields)
        }
        tool::SET_VALUE => {
            let field = one(args)?;
            if field.role.is_none() || field.value.is_none() {
                return Err(invalid("set_value needs a role, a label and a value"));
            }
            Ok(vec![field])
        }
        tool::PRESS_BUTTON => Ok(vec![Wanted {
            role: Some("AXButton"),
            ..one(args)?
        }]),
        _ => {
            let element = one(args)?;
            match element.role {
                None => Err(invalid("click_element needs a role and a label")),
                // A field's "activate" is Enter, which presses the dialog's
                // default button: not a click on the field.
                Some("AXTextField" | "AXTextArea" | "AXSecureTextField") => Err(invalid(
                    "click_element does not press a text field (its action is Enter); use set_value",
                )),
                Some(_) => Ok(vec![element]),
            }
        }
    }
}

/// Whether a declared postcondition is the `ui_element` check of what the
/// action writes: for `set_value`, its element by role and label with the
/// digest of its value; for `fill_form`, the form's role and no label, with
/// the digest of every field's role, label and value in the action's order.
fn names_what_was_written(tool_name: &str, fields: &[Wanted<'_>], postcondition: &Value) -> bool {
    let text = |key: &str| postcondition.get(key).and_then(Value::as_str);
    if text("kind") != Some("ui_element") || postcondition.get("exists") != Some(&Value::Bool(true))
    {
        return false;
    }
    let digest = text("valueDigest");
    match (tool_name, fields) {
        (tool::SET_VALUE, [field]) => {
            text("role") == field.role
                && text("label") == Some(field.label)
                && field
                    .value
                    .is_some_and(|v| digest == Some(sha256_prefixed(v).as_str()))
        }
        (tool::FILL_FORM, _) => {
            let all: Option<Vec<(&str, &str, &str)>> = fields
                .iter()
                .map(|f| Some((f.role?, f.label, f.value?)))
                .collect();
            text("role") == Some(adk_computer_use::runtime::FORM_CHECK_ROLE)
                && text("label").is_none()
                && all.is_some_and(|all| {
                    digest == Some(adk_computer_use::runtime::form_values_digest(all).as_str())
                })
        }
        _ => false,
    }
}

/// An element action's `window_id` (upstream's shapes name the window in
/// the arguments) must be the window the target evidence names: the
/// effect goes to the target, so arguments naming another window would
/// show a person one window and act on another.
fn window_agrees(args: &Value, target: Option<&TargetEvidence>) -> Result<(), Refusal> {
    let Some(named) = args.get("window_id") else {
        return Ok(());
    };
    let target = target.and_then(|t| match t.window_id {
        Some(adk_computer_use::contracts::WindowId::Number(id)) => Some(id),
        _ => None,
    });
    match (named.as_u64(), target) {
        (Some(named), Some(target)) if named == target => Ok(()),
        (Some(named), Some(target)) => Err(invalid(format!(
            "arguments.window_id is {named}, but the action's target is window {target}"
        ))),
        (None, _) => Err(invalid("arguments.window_id must be an integer")),
        (Some(_), None) => Err(invalid(
            "arguments.window_id names a window, but the action's target names none",
        )),
    }
}

/// The one node `wanted` names in `tree`, acted on.
fn resolve<'t>(tree: &'t Tree, wanted: &Wanted<'_>) -> Result<&'t Node, Refusal> {
    if tree.truncated {
        // A match in part of a tree is not known to be the only one.
        return Err(Refusal::new(
            "ambiguous_match",
            "the window's tree is larger than the walk's caps (500 nodes, 10 levels), so no element in it is known to be unique",
        ));
    }
    let found: Vec<&Node> = tree
        .nodes
        .iter()
        .filter(|n| wanted.role.is_none_or(|r| r == n.role) && n.label == wanted.label)
        .collect();
    let named = || format!("{} {:?}", wanted.role.unwrap_or("element"), wanted.label);
    match found.as_slice() {
        [] => Err(Refusal::new(
            "element_not_found",
            format!("no {} in the window", named()),
        )),
        [node] if !node.is_actionable() => Err(Refusal::new(
            "element_not_actionable",
            format!("the {} is disabled or hidden", named()),
        )),
        [node] => Ok(node),
        many => Err(Refusal::new(
            "ambiguous_match",
            format!("{} elements match {}", many.len(), named()),
        )),
    }
}

fn stale(message: &str) -> Refusal {
    Refusal::new("stale_target", message)
}

/// A window of the display as the element tools see it: which process
/// owns it (the application is found on the bus by it), its title, and
/// its place in the coordinates its application reports its frame in
/// (the screen's on X11, the window's own on Wayland).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Window {
    /// The display's id of the window.
    pub id: u64,
    /// The application's id as the display reports it.
    pub app_id: String,
    /// The owning process, as the display records it.
    pub pid: Option<u32>,
    /// The title.
    pub title: String,
    /// Where the application's frame for this window must be.
    pub bounds: Bounds,
    /// The window holds the input focus.
    pub focused: bool,
}

/// A desktop whose windows the element tools act in: it names the
/// windows, the bus and what was last written; the tools themselves are
/// the provided methods, the same on every desktop.
pub(crate) trait ElementHost {
    /// The accessibility bus, when it was reached.
    fn accessibility(&self) -> Option<&Accessibility>;
    /// Why there is no bus, when there is none.
    fn accessibility_note(&self) -> &str;
    /// Every window of the display now.
    fn element_windows(&self) -> Result<Vec<Window>, Refusal>;
    /// The window the evidence names, as the display shows it now.
    fn element_target(&self, target: Option<&TargetEvidence>) -> Result<Window, Refusal>;
    /// The elements the last element action wrote.
    fn written_elements(&self) -> &[Node];
    /// Replaces them.
    fn set_written_elements(&mut self, nodes: Vec<Node>);

    /// The accessible tree of the window `record`, walked
    /// [`DEFAULT_DEPTH`] deep: the tree targets are resolved in and
    /// revisions taken of.
    fn element_tree(&self, record: &Window) -> Result<Tree, Refusal> {
        self.element_tree_to(record, DEFAULT_DEPTH)
    }

    /// The accessible tree of the window `record`, `depth` deep (at most
    /// [`crate::desktop::atspi::MAX_DEPTH`]).
    fn element_tree_to(&self, record: &Window, depth: usize) -> Result<Tree, Refusal> {
        let bus = self.accessibility().ok_or_else(|| {
            Refusal::new(
                "accessibility_unavailable",
                self.accessibility_note().to_owned(),
            )
        })?;
        let pid = record.pid.ok_or_else(|| {
            Refusal::new(
                "accessibility_unavailable",
                "the window's process is not known, so its application cannot be found",
            )
        })?;
        bus.tree(pid, &record.title, record.bounds, depth)
    }

    /// `find_element`: the nodes of a window whose role is `role` and
    /// whose label and value hold `label` and `value` (case-insensitive
    /// substrings), all given criteria at once, at most `max_results`, in
    /// the tree's order, each in upstream's flat shape with its `path`. A
    /// password's value is never read, so never matched.
    fn find_elements(&self, args: &Value) -> Result<Value, Refusal> {
        let window = args
            .get("window_id")
            .and_then(Value::as_u64)
            .ok_or_else(|| invalid("find_element needs a window_id (an integer)"))?;
        let criterion = |key: &str| -> Result<Option<String>, Refusal> {
            match args.get(key) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.to_lowercase())),
                Some(_) => Err(invalid(format!("find_element's {key} must be a string"))),
            }
        };
        let (role, label, value) = (criterion("role")?, criterion("label")?, criterion("value")?);
        let most = match args.get("max_results") {
            None => 25,
            Some(n) => n
                .as_u64()
                .filter(|n| (1..=100).contains(n))
                .ok_or_else(|| {
                    invalid("find_element's max_results must be an integer from 1 to 100")
                })?,
        };
        let record = self.element_window(window)?;
        let tree = self.element_tree_to(&record, MAX_DEPTH)?;
        let found: Vec<Value> = tree
            .nodes
            .iter()
            .filter(|n| {
                role.as_ref().is_none_or(|r| {
                    n.role.to_lowercase() == *r || n.atspi_role.to_lowercase() == *r
                })
            })
            .filter(|n| {
                label
                    .as_ref()
                    .is_none_or(|l| n.label.to_lowercase().contains(l))
            })
            .filter(|n| {
                value.as_ref().is_none_or(|v| {
                    !n.secure
                        && n.value
                            .as_ref()
                            .is_some_and(|now| now.to_lowercase().contains(v))
                })
            })
            .take(usize::try_from(most).unwrap_or(100))
            .map(|n| {
                let mut shown = n.to_flat_json();
                // The application's text, untrusted (it may be written to
                // steer whoever reads it).
                shown["contentOrigin"] = json!("application_untrusted");
                if tree.truncated {
                    // Matches from part of a tree: there may be more.
                    shown["truncated"] = json!(true);
                }
                shown
            })
            .collect();
        Ok(Value::Array(found))
    }

    /// `get_focused_element`: the element holding the focus in the window
    /// that holds the display's input focus, in upstream's flat shape with
    /// the window's id and app id beside it; `null` when no element of an
    /// accessible window has the focus.
    fn focused_element(&self) -> Result<Value, Refusal> {
        let records = self.element_windows()?;
        let Some(record) = records.iter().find(|r| r.focused) else {
            return Ok(Value::Null);
        };
        let tree = match self.element_tree(record) {
            Ok(tree) => tree,
            // A focused window whose application is not on the bus has no
            // element to name; a bus that does not answer is an error.
            Err(refusal) if refusal.code == "accessibility_unavailable" => {
                return Ok(Value::Null);
            }
            Err(refusal) => return Err(refusal),
        };
        // The deepest focused node: a window and its field may both say
        // they are focused; typed text goes to the field.
        let Some(node) = tree
            .nodes
            .iter()
            .filter(|n| n.states.iter().any(|s| s == "focused"))
            .max_by_key(|n| n.path.len())
        else {
            return Ok(Value::Null);
        };
        let mut shown = node.to_flat_json();
        shown["windowId"] = json!(record.id);
        shown["appId"] = json!(record.app_id);
        shown["contentOrigin"] = json!("application_untrusted");
        Ok(shown)
    }

    /// The window `id` of the display now, or `stale_target`.
    fn element_window(&self, id: u64) -> Result<Window, Refusal> {
        self.element_windows()?
            .into_iter()
            .find(|r| r.id == id)
            .ok_or_else(|| stale("no such window"))
    }

    /// The target window and its tree, for an element tool.
    fn target_tree(&self, target: Option<&TargetEvidence>) -> Result<(Window, Tree), Refusal> {
        let record = self.element_target(target)?;
        let tree = self.element_tree(&record)?;
        Ok((record, tree))
    }

    /// Before the effect: every element the action names is found once,
    /// enabled and shown, in the target window's tree now.
    fn prepare_elements(
        &self,
        tool_name: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<(), Refusal> {
        if tool_name == tool::SELECT_MENU_ITEM {
            let (_, tree) = self.target_tree(target)?;
            return menu_item(&tree, args, target).map(drop);
        }
        let fields = wanted(tool_name, args)?;
        window_agrees(args, target)?;
        let (_, tree) = self.target_tree(target)?;
        for field in &fields {
            let node = resolve(&tree, field)?;
            if field.value.is_some() && !node.states.iter().any(|s| s == "editable") {
                return Err(Refusal::new(
                    "element_not_editable",
                    format!("{} {:?} is not editable", node.role, node.label),
                ));
            }
        }
        Ok(())
    }

    /// The effect, through the application's own interfaces.
    fn apply_elements(
        &mut self,
        tool_name: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<Value, ApplyError> {
        self.set_written_elements(Vec::new());
        if tool_name == tool::SELECT_MENU_ITEM {
            let (record, tree) = self.target_tree(target).map_err(ApplyError::NothingSent)?;
            let node = menu_item(&tree, args, target).map_err(ApplyError::NothingSent)?;
            let bus = self
                .accessibility()
                .ok_or_else(|| ApplyError::NothingSent(stale("the accessibility bus is gone")))?;
            let pid = record.pid.unwrap_or_default();
            return match bus.press(pid, &record.title, record.bounds, node) {
                Ok(()) => Ok(json!({
                    "elements": [{ "elementId": node.id(), "role": node.role, "label": node.label }],
                    "backend": "atspi",
                })),
                Err(refusal)
                    if !matches!(
                        refusal.code.as_str(),
                        "accessibility_timeout" | "accessibility_call_failed"
                    ) =>
                {
                    Err(ApplyError::NothingSent(refusal))
                }
                Err(refusal) => Err(ApplyError::Failed(refusal)),
            };
        }
        let fields = wanted(tool_name, args).map_err(ApplyError::NothingSent)?;
        window_agrees(args, target).map_err(ApplyError::NothingSent)?;
        let (record, tree) = self.target_tree(target).map_err(ApplyError::NothingSent)?;
        let bus = self
            .accessibility()
            .ok_or_else(|| ApplyError::NothingSent(stale("the accessibility bus is gone")))?;
        let pid = record.pid.unwrap_or_default();
        // Every element is resolved before the first is touched: a field
        // missing at the end leaves the first ones as they were.
        let nodes: Vec<&Node> = fields
            .iter()
            .map(|f| resolve(&tree, f))
            .collect::<Result<_, _>>()
            .map_err(ApplyError::NothingSent)?;
        let mut done = Vec::new();
        let mut written = Vec::new();
        let started = std::time::Instant::now();
        for (field, node) in fields.iter().zip(&nodes) {
            if !done.is_empty() && started.elapsed() > ACTION_BUDGET {
                // Every call has its own deadline; the action has one too,
                // so a slow application cannot hold the server's state for
                // a hundred of them.
                return Err(ApplyError::Failed(Refusal::new(
                    "accessibility_timeout",
                    format!(
                        "the action passed its budget of {} s; the fields before this one were written",
                        ACTION_BUDGET.as_secs()
                    ),
                )));
            }
            if !done.is_empty() {
                // A form that changed under the first writes (a row added,
                // fields reordered) would shift the next paths: the tree
                // must still be the one resolved, or the action stops here.
                let now = self.element_tree(&record).map_err(ApplyError::Failed)?;
                if now.revision != tree.revision {
                    return Err(ApplyError::Failed(stale(
                        "the form changed while it was being filled; the fields before this one were written",
                    )));
                }
            }
            let acted = match field.value {
                Some(value) => bus.set_text(pid, &record.title, record.bounds, node, value),
                None => bus.press(pid, &record.title, record.bounds, node),
            };
            if let Err(refusal) = acted {
                // Refused before the call reached the application (the
                // window or the element not found again, changed, not
                // editable) on the first element: nothing was done. Once
                // the call was made, or past the first element, the
                // outcome is unknown.
                let before_the_call = done.is_empty()
                    && !matches!(
                        refusal.code.as_str(),
                        "accessibility_timeout" | "accessibility_call_failed"
                    );
                return Err(if before_the_call {
                    ApplyError::NothingSent(refusal)
                } else {
                    ApplyError::Failed(refusal)
                });
            }
            written.push((*node).clone());
            done.push(json!({ "elementId": node.id(), "role": node.role, "label": node.label }));
        }
        self.set_written_elements(written);
        Ok(json!({ "elements": done, "backend": "atspi" }))
    }

    /// After `set_value` or `fill_form`: each written element's value, read
    /// back through the application, is the value asked for (a value the
    /// application trimmed, reformatted or refused fails the check). A
    /// declared postcondition must be the `ui_element` check of what the
    /// action wrote: for `set_value` the element it wrote, expecting the
    /// digest of its value; for `fill_form` no one element, expecting the
    /// digest of all the fields' values
    /// ([`adk_computer_use::runtime::form_values_digest`]). Anything else is
    /// not observed here, and not claimed. The method names upstream's
    /// checks: `postcondition.ui_element` for a declared one,
    /// `postcondition.auto_ui_value` and `postcondition.auto_fill_form`
    /// for the server's own when none was declared.
    fn verify_elements(
        &self,
        tool_name: &str,
        args: &Value,
        postcondition: Option<&Value>,
        target: Option<&TargetEvidence>,
    ) -> EffectCheck {
        let method = match (postcondition, tool_name) {
            (Some(_), _) => "postcondition.ui_element",
            (None, tool::FILL_FORM) => "postcondition.auto_fill_form",
            (None, _) => "postcondition.auto_ui_value",
        };
        let failed = |checks| EffectCheck {
            verified: false,
            method,
            checks,
        };
        if tool_name == tool::SELECT_MENU_ITEM {
            // The application took the choice; what it does next is for a
            // declared postcondition to show, and none is observed here.
            return EffectCheck {
                verified: postcondition.is_none(),
                method: if postcondition.is_none() {
                    "atspi_action_performed"
                } else {
                    "atspi_unobservable"
                },
                checks: 0,
            };
        }
        let Ok(fields) = wanted(tool_name, args) else {
            return failed(0);
        };
        if let Some(postcondition) = postcondition
            && !names_what_was_written(tool_name, &fields, postcondition)
        {
            return EffectCheck {
                verified: false,
                method: "atspi_unobservable",
                checks: 0,
            };
        }
        if fields.iter().all(|f| f.value.is_none()) {
            // A press: the application took it; what it does next is for a
            // declared postcondition to show.
            return EffectCheck {
                verified: true,
                method: "atspi_action_performed",
                checks: 0,
            };
        }
        let Ok(record) = self.element_target(target) else {
            return failed(0);
        };
        let Some(bus) = self.accessibility() else {
            return failed(0);
        };
        let pid = record.pid.unwrap_or_default();
        if self.written_elements().len() != fields.len() {
            return failed(0);
        }
        let mut checks = 0;
        let mut skipped_a_secret = false;
        // The nodes written, each read again where it was written (not
        // looked up by label a third time).
        for (field, node) in fields.iter().zip(self.written_elements()) {
            let Some(value) = field.value else {
                return failed(checks);
            };
            if node.secure {
                // A secret's field is never read, not even to compare: a
                // check declared on it is not observed here, and with none
                // declared nothing is claimed about it.
                if postcondition.is_some() {
                    return EffectCheck {
                        verified: false,
                        method: "atspi_secret_not_read",
                        checks: 0,
                    };
                }
                skipped_a_secret = true;
                continue;
            }
            checks += 1;
            match bus.read_text(pid, &record.title, record.bounds, node) {
                Ok(now) if now == value => {}
                _ => return failed(checks),
            }
        }
        EffectCheck {
            verified: true,
            // The record says what was read: a secret's field was written
            // and not read (upstream's rule would make a failed automatic
            // check an unknown outcome, so it is not reported failed).
            method: if skipped_a_secret {
                "atspi_secret_not_read"
            } else {
                method
            },
            checks,
        }
    }

    /// The elements of a window, for the server's sensitivity check:
    /// every labelled node, a password's value never read.
    fn elements_of(&self, record: &Window) -> Option<Vec<Element>> {
        let tree = self.element_tree(record).ok()?;
        Some(
            tree.nodes
                .iter()
                .filter(|n| !n.label.is_empty())
                .map(|n| Element {
                    id: n.id(),
                    role: n.role.to_owned(),
                    label: n.label.clone(),
                    value: if n.secure {
                        String::new()
                    } else {
                        n.value.clone().unwrap_or_default()
                    },
                    secure: n.secure,
                })
                .collect(),
        )
    }
}
