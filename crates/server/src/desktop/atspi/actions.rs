//! Applications, not pixels: the element tools of the Linux desktops (X11
//! and Wayland) through the accessibility layer. A window of the display
//! is the application's frame with the same process and title; an element
//! is named by role and label (upstream's argument shapes) and must be found
//! exactly once, enabled and shown, before anything is done; the effect goes
//! through the application's own interfaces (no input event, no focus
//! taken), and a written value is read back through the same bus. The one
//! exception is a web page's field, which no browser lets an assistive
//! technology write: in the foreground it is given the focus and typed
//! into (see `focus`), and read back the same way.

use serde_json::{Value, json};

use super::resolve::{menu_item, resolve, wanted, window_agrees};
use super::{Accessibility, Node, Tree};
use crate::desktop::simulated::Element;
use crate::engine::{ApplyError, EffectCheck, Refusal};
use adk_computer_use::contracts::TargetEvidence;
use adk_computer_use::contracts::catalogue::tool;

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

pub(crate) use super::resolve::{Window, show_tree};

/// The element observations a Linux desktop answers when the
/// accessibility bus is reachable.
pub(crate) const OBSERVE_TOOLS: [&str; 2] = [tool::FIND_ELEMENT, tool::GET_FOCUSED_ELEMENT];

fn stale(message: &str) -> Refusal {
    Refusal::new("stale_target", message)
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
    fn written_elements(&self) -> Vec<Node>;
    /// Replaces them.
    fn set_written_elements(&self, nodes: Vec<Node>);

    /// Whether the action being performed was asked for in the foreground
    /// (it may take the focus and send keys). Nothing is, unless the
    /// desktop says so.
    fn in_foreground(&self) -> bool {
        false
    }

    /// Types `text` into the window `record`, replacing what its focused
    /// field holds (all of it selected first): the window is given the
    /// input focus, `focus` gives the field the focus and checks it holds
    /// it, and the keys are sent only while the window still holds the
    /// input focus. A desktop that sends no keys refuses, sending nothing.
    fn type_into_field(
        &self,
        record: &Window,
        text: &str,
        focus: &dyn Fn() -> Result<(), Refusal>,
    ) -> Result<(), ApplyError> {
        let _ = (record, text, focus);
        Err(ApplyError::NothingSent(Refusal::new(
            "element_not_editable",
            "this desktop sends no keys, so a web page's field cannot be written here",
        )))
    }

    /// Whether `text` can be typed here (every character has a key), so a
    /// form is refused before its first field rather than half typed. A
    /// desktop that sends no keys refuses.
    fn can_type(&self, text: &str) -> Result<(), Refusal> {
        let _ = text;
        Err(Refusal::new(
            "element_not_editable",
            "this desktop sends no keys, so a web page's field cannot be written here",
        ))
    }

    /// Whether a web page's field `node` is written by typing (the action
    /// is in the foreground), or the refusal when it cannot be written:
    /// `Ok(false)` for a field written through the bus.
    fn typed(&self, tree: &Tree, node: &Node, value: &str) -> Result<bool, Refusal> {
        let Some(refusal) = tree.toolkit.refuses_text(&tree.nodes, node) else {
            return Ok(false);
        };
        if !self.in_foreground() {
            return Err(refusal);
        }
        // Keys go where the page sends them, and a page may send them to
        // another field (a handler that moves the focus on the first
        // key): a secret typed there would be shown by every later read
        // of that field. A page's password field is not typed into.
        if node.secure {
            return Err(Refusal::new(
                "element_not_editable",
                format!(
                    "the {} {} is a web page's password field: its text would be typed as keys, which the page may send to another field where the secret would be read back and shown, so it is not typed; nothing was written",
                    node.role,
                    node.id()
                ),
            ));
        }
        // A Tab is the key that moves to the next field, and a line break
        // in a one-line field the key that sends its form: only the text
        // of a multi-line field may hold line breaks, and no other
        // control character is typed.
        let multi_line = node.states.iter().any(|s| s == "multi_line");
        if value
            .chars()
            .any(|c| c.is_control() && !(multi_line && matches!(c, '\n' | '\r')))
        {
            return Err(Refusal::new(
                "invalid_arguments",
                format!(
                    "the value for the {} {} holds a control character (a Tab moves to the next field; a line break {}): a page's field is written by typing, so nothing was written",
                    node.role,
                    node.id(),
                    if multi_line {
                        "is typed only as a line break"
                    } else {
                        "sends a one-line field's form"
                    }
                ),
            ));
        }
        self.can_type(value)?;
        Ok(true)
    }

    /// The whole accessible tree of the window `record` (up to the walk's
    /// limits): the tree targets are resolved in and revisions taken of;
    /// what a model is shown of it is cut from it.
    fn element_tree(&self, record: &Window) -> Result<Tree, Refusal> {
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
        bus.tree(pid, &record.title, record.bounds)
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
                    format!("the {} {} is not editable", node.role, node.id()),
                ));
            }
            if let Some(value) = field.value {
                self.typed(&tree, node, value)?;
            }
        }
        Ok(())
    }

    /// The effect, through the application's own interfaces.
    fn apply_elements(
        &self,
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
                    // The label is the application's text.
                    "contentOrigin": "application_untrusted",
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
        // The tree written into is the tree the evidence was taken of: the
        // element part of its revision (`{geometry}+{elements}`) must be
        // this tree's, read just now, or nothing is written.
        if let Some(stated) = target
            .and_then(|t| t.ui_tree_revision.as_deref())
            .and_then(|r| r.split('+').nth(1))
            .filter(|r| r.starts_with("atspi-"))
            && stated != tree.revision
        {
            return Err(ApplyError::NothingSent(Refusal::with_details(
                "stale_target",
                "the window's element tree changed since the evidence was taken",
                json!({ "changed": "tree", "what": "element_tree" }),
            )));
        }
        super::revision::press_bound(tool_name, target, &tree).map_err(ApplyError::NothingSent)?;
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
        // Every field typed into is checked before the first is touched:
        // the mode, a control character, a character with no key. Once,
        // here: a keyboard map changed since is caught by the typing
        // itself, which reads the map it sends with.
        let typed: Vec<bool> = fields
            .iter()
            .zip(&nodes)
            .map(|(field, node)| match field.value {
                Some(value) => self.typed(&tree, node, value),
                None => Ok(false),
            })
            .collect::<Result<_, _>>()
            .map_err(ApplyError::NothingSent)?;
        let mut done = Vec::new();
        let mut written = Vec::new();
        let started = std::time::Instant::now();
        for ((field, node), typed) in fields.iter().zip(&nodes).zip(typed) {
            if crate::desktop::deadline::ended() {
                // The lease this action spent ended (a stop, a pause, a
                // release answered): nothing more is written.
                let refusal = Refusal::new(
                    "interrupted",
                    "the action's lease ended during it; no field after that was written",
                );
                return Err(if done.is_empty() {
                    ApplyError::NothingSent(refusal)
                } else {
                    ApplyError::Failed(refusal)
                });
            }
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
                // A field typed into may gain nodes of its own (Chromium
                // shows a field's text as a child): what lies inside the
                // fields written so far is not compared. Nor, for a web
                // page's fields, the browser around the page (a tab's name
                // changes when the pointer rests on it): only the page.
                let now = self.element_tree(&record).map_err(ApplyError::Failed)?;
                let page = nodes
                    .first()
                    .and_then(|node| super::toolkit::page_of(&tree.nodes, node))
                    .map(|page| page.path.clone())
                    .unwrap_or_default();
                let outside =
                    |nodes: &[Node]| super::revision::structure_outside(nodes, &written, &page);
                if now.revision != tree.revision && outside(&now.nodes) != outside(&tree.nodes) {
                    return Err(ApplyError::Failed(stale(
                        "the form changed while it was being filled; the fields before this one were written",
                    )));
                }
            }
            if let (true, Some(value)) = (typed, field.value) {
                let focus = || bus.focus_field(pid, &record.title, record.bounds, node);
                match self.type_into_field(&record, value, &focus) {
                    Ok(()) => {}
                    Err(ApplyError::NothingSent(refusal)) if done.is_empty() => {
                        return Err(ApplyError::NothingSent(refusal));
                    }
                    Err(ApplyError::NothingSent(refusal) | ApplyError::Failed(refusal)) => {
                        return Err(ApplyError::Failed(refusal));
                    }
                }
                written.push((*node).clone());
                done.push(json!({ "elementId": node.id(), "role": node.role, "label": node.label, "typed": true }));
                continue;
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
        // The labels are the application's text.
        Ok(json!({
            "elements": done,
            "backend": "atspi",
            "contentOrigin": "application_untrusted",
        }))
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
        super::readback::verify(self, tool_name, args, postcondition, target)
    }

    /// The elements of a window, for the server's sensitivity check: every
    /// node a person sees, a password's value never read; or why there are
    /// none to check (the cause the check reports).
    fn elements_of(&self, record: &Window) -> Result<Vec<Element>, &'static str> {
        let tree = self
            .element_tree(record)
            .map_err(|refusal| match refusal.code.as_str() {
                "accessibility_timeout" => "accessibility_timeout",
                "ambiguous_target" => "ambiguous_target",
                _ => "accessibility_unavailable",
            })?;
        if tree.truncated {
            return Err("tree_too_large");
        }
        Ok(tree
            .nodes
            .iter()
            // What an action may resolve: the nodes a person sees, not
            // static text.
            .filter(|n| tree.toolkit.shown(n) && n.acted_on())
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
            .collect())
    }
}
