//! The element observations of the Linux desktops, beside the actions of
//! `actions`: `find_element`, `get_focused_element`, and the texts a
//! window shows for `wait_for_text`. Each reads the whole tree the actions
//! resolve in, answers upstream's flat shape, marks an application's text
//! as untrusted, and never reads a password's value.

use serde_json::{Value, json};

use super::Refusal;
use super::actions::ElementHost;
use super::resolve::invalid;
use adk_computer_use::contracts::labels;

/// The observations, for every desktop whose windows the element tools
/// act in.
pub(crate) trait ElementObservations: ElementHost {
    /// `find_element`: the nodes of a window whose role is `role`, whose
    /// label matches `label` by the one rule of [`labels`] (the exact
    /// matches when any, else every partial one, each marked `match`), and
    /// whose value holds `value` (a case-insensitive substring), all given
    /// criteria at once, at most `max_results`, in the tree's order, each
    /// in upstream's flat shape with its `path`. The whole tree is
    /// searched, not what `get_ui_tree` shows. A password's value is never
    /// read, so never matched.
    fn find_elements(&self, args: &Value) -> Result<Value, Refusal> {
        let window = args
            .get("window_id")
            .and_then(Value::as_u64)
            .ok_or_else(|| invalid("find_element needs a window_id (an integer)"))?;
        let criterion = |key: &str| -> Result<Option<String>, Refusal> {
            match args.get(key) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(labels::normalise(s))),
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
        let tree = self.element_tree(&record)?;
        let candidates = tree
            .nodes
            .iter()
            .filter(|n| {
                role.as_ref().is_none_or(|r| {
                    n.role.to_lowercase() == *r || n.atspi_role.to_lowercase() == *r
                })
            })
            .filter(|n| {
                value.as_ref().is_none_or(|v| {
                    !n.secure
                        && n.value
                            .as_ref()
                            .is_some_and(|now| labels::normalise(now).contains(v.as_str()))
                })
            })
            .filter_map(|n| match &label {
                None => Some((n, None)),
                Some(l) => n.label_match(l).map(|m| (n, Some(m))),
            });
        let found = super::resolve::shown_first(&tree, candidates.collect(), label.is_some());
        let found: Vec<Value> = found
            .into_iter()
            .take(usize::try_from(most).unwrap_or(100))
            .map(|(n, matched)| {
                let mut shown = n.to_flat_json();
                // The application's text, untrusted (it may be written to
                // steer whoever reads it).
                shown["contentOrigin"] = json!("application_untrusted");
                if let Some(matched) = matched {
                    shown["match"] = json!(matched.as_str());
                }
                shown["actionable"] = json!(tree.toolkit.enabled(n) && tree.toolkit.shown(n));
                if tree.truncated {
                    // Matches from part of a tree: there may be more.
                    shown["truncated"] = json!(true);
                }
                shown
            })
            .collect();
        Ok(Value::Array(found))
    }

    /// `find_element` or `get_focused_element` on the desktop named
    /// `desktop` (any other tool is not an element observation there).
    fn observe_element(&self, tool: &str, args: &Value, desktop: &str) -> Result<Value, Refusal> {
        use adk_computer_use::contracts::catalogue::tool;
        match tool {
            tool::FIND_ELEMENT => self.find_elements(args),
            tool::GET_FOCUSED_ELEMENT => self.focused_element(),
            other => Err(Refusal::new(
                "tool_outside_host_profile",
                format!("the {desktop} desktop does not perform {other}"),
            )),
        }
    }

    /// Every text the window `id` shows through its elements: each node's
    /// name and label, and its value unless a password's (never read).
    fn shown_texts(&self, id: u64) -> Result<Vec<String>, Refusal> {
        let record = self.element_window(id)?;
        let tree = self.element_tree(&record)?;
        Ok(tree
            .nodes
            .iter()
            .flat_map(|n| {
                let value = if n.secure { None } else { n.value.clone() };
                [Some(n.name.clone()), Some(n.label.clone()), value]
            })
            .flatten()
            .filter(|t| !t.is_empty())
            .collect())
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
}

impl<T: ElementHost + ?Sized> ElementObservations for T {}
