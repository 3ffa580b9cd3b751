//! The revisions a window's tree is bound by: its structure (roles,
//! labels, bounds, actions and lasting states of every acted-on node), and
//! apart from it what its elements hold (values and toggle states), which
//! only a press is bound to; and the window's whole revision as the
//! desktops state it, `{geometry}+{elements}+{values}`.

use serde_json::{Value, json};

use super::Node;
#[cfg(any(feature = "x11", feature = "wayland"))]
use super::Tree;
#[cfg(any(feature = "x11", feature = "wayland"))]
use crate::engine::Refusal;
#[cfg(any(feature = "x11", feature = "wayland"))]
use adk_computer_use::contracts::TargetEvidence;
#[cfg(any(feature = "x11", feature = "wayland"))]
use adk_computer_use::contracts::catalogue::tool;
use adk_computer_use::digest::sha256_hex;

/// A press submits what the form holds: the values and toggles the person
/// saw (the third part of the evidence's revision) must still be `tree`'s,
/// or the press is refused, nothing pressed. A write is not bound to them
/// (it sets its own fields).
#[cfg(any(feature = "x11", feature = "wayland"))]
pub(super) fn press_bound(
    tool_name: &str,
    target: Option<&TargetEvidence>,
    tree: &Tree,
) -> Result<(), Refusal> {
    if matches!(tool_name, tool::PRESS_BUTTON | tool::CLICK_ELEMENT)
        && let Some(stated) = target.and_then(|t| t.ui_tree_revision.as_deref())
        && stated
            .split('+')
            .nth(1)
            .is_some_and(|r| r.starts_with("atspi-"))
        && stated.split('+').nth(2) != Some(tree.values.as_str())
    {
        return Err(Refusal::with_details(
            "stale_target",
            "a value or a toggle in the window changed since the evidence was taken: the press would submit what was not approved",
            json!({ "changed": "tree", "what": "element_values" }),
        ));
    }
    Ok(())
}

/// The part of a window's revision (`{geometry}+{elements}+{values}`)
/// every action is bound to: its geometry and its elements' structure,
/// not what the elements hold.
#[cfg(any(feature = "x11", feature = "wayland"))]
pub(crate) fn structure_of(revision: &str) -> &str {
    match revision.match_indices('+').nth(1) {
        Some((at, _)) => &revision[..at],
        None => revision,
    }
}

/// A window's revision as the desktops state it: the geometry's, and,
/// when the application answers on the bus, its elements' structure and
/// what they hold.
#[cfg(any(feature = "x11", feature = "wayland"))]
pub(crate) fn window_revision(geometry: &str, tree: Option<&Tree>) -> String {
    match tree {
        Some(tree) => format!("{geometry}+{}+{}", tree.revision, tree.values),
        None => format!("{geometry}+no-elements"),
    }
}

/// What a press submits, beyond the structure [`structure`] covers: each
/// field's value (a password's is never read, so its changes are not
/// seen) and each toggle's state (`checked`, `indeterminate`, `pressed`,
/// `selected`). Kept apart from the structure's revision because a value
/// changes under typing (the typing's own echo must not make the next key
/// stale, nor one field of a form being filled the next): only a press or
/// a click of an element compares it, since what it submits is the form
/// as the person approved it.
pub(super) fn values(nodes: &[Node]) -> String {
    let toggles = |s: &&String| {
        matches!(
            s.as_str(),
            "checked" | "indeterminate" | "pressed" | "selected"
        )
    };
    let parts: Vec<Value> = nodes
        .iter()
        .filter(|n| n.value.is_some() || n.states.iter().any(|s| toggles(&s)))
        .map(|n| {
            let value = if n.secure { None } else { n.value.as_deref() };
            json!([
                n.path,
                value,
                n.states.iter().filter(toggles).collect::<Vec<_>>()
            ])
        })
        .collect();
    format!(
        "values-{}",
        &sha256_hex(Value::Array(parts).to_string())[..24]
    )
}

/// [`structure`] of the nodes at or below the path `within` that are not
/// inside one of `written` (the written nodes themselves are kept): a
/// field typed into may gain or lose nodes of its own while the rest of
/// the window stays as it was.
#[cfg(any(feature = "x11", feature = "wayland"))]
pub(super) fn structure_outside(nodes: &[Node], written: &[Node], within: &[u32]) -> String {
    let kept: Vec<Node> = nodes
        .iter()
        .filter(|n| n.path.starts_with(within))
        .filter(|n| {
            !written
                .iter()
                .any(|w| n.path.len() > w.path.len() && n.path.starts_with(&w.path))
        })
        .cloned()
        .collect();
    structure(&kept)
}

/// The digest of what identifies the tree: every node's path and role,
/// and for each node an action can reach (all but `tree::CONTENT_ROLES`) the
/// one text it is matched by (its label), its bounds, actions and the
/// states that decide whether it can be acted on; not values, not focus,
/// not the text of content. A renamed, relabelled, moved, added or removed
/// element moves it; typed text, a blinking caret
/// or a status bar's count does not.
pub(super) fn structure(nodes: &[Node]) -> String {
    let lasting = |s: &&String| {
        matches!(
            s.as_str(),
            "enabled" | "sensitive" | "showing" | "visible" | "editable"
        )
    };
    let parts: Vec<Value> = nodes
        .iter()
        .map(|n| {
            if n.acted_on() {
                json!([
                    n.path,
                    n.atspi_role,
                    n.label,
                    [n.bounds.0, n.bounds.1, n.bounds.2, n.bounds.3],
                    n.actions,
                    n.states.iter().filter(lasting).collect::<Vec<_>>(),
                ])
            } else {
                json!([n.path, n.atspi_role])
            }
        })
        .collect();
    format!(
        "atspi-{}",
        &sha256_hex(Value::Array(parts).to_string())[..24]
    )
}
