//! What an element action's arguments name, and the one node they name in
//! a window's tree: upstream's argument shapes read (`wanted`), the label
//! rule applied over the whole tree (`resolve`), a menu's path walked
//! (`menu_item`), a declared check recognised as the check of what was
//! written, and what a model is shown of the tree.

use serde_json::{Value, json};

use super::{Bounds, Node, Toolkit, Tree, WALK_MAX_DEPTH, WALK_MAX_NODES};
use crate::engine::Refusal;
use adk_computer_use::contracts::TargetEvidence;
use adk_computer_use::contracts::catalogue::tool;
use adk_computer_use::contracts::labels;
use adk_computer_use::digest::sha256_prefixed;

/// AT-SPI's roles of a menu's entries.
const MENU_ITEM_ROLES: [&str; 4] = ["menu item", "check menu item", "radio menu item", "menu"];

/// The menu item `select_menu_item` names (upstream's shape: `bundle_id`,
/// `menu`, `item`, `submenu`): walked from the window's menu bar by title,
/// each step found exactly once, the item enabled and shown.
pub(super) fn menu_item<'t>(
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
    whole(tree)?;
    // One step down: the one child of `parents` with a menu's role titled
    // `title`, by the label rule.
    let step = |parents: Vec<&'t Node>, title: &str| -> Result<&'t Node, Refusal> {
        let wanted = labels::normalise(title);
        let candidates = parents
            .iter()
            .flat_map(|p| p.children.iter().filter_map(|&c| tree.nodes.get(c)))
            .filter(|n| MENU_ITEM_ROLES.contains(&n.atspi_role.as_str()))
            .filter_map(|n| n.label_match(&wanted).map(|m| (n, m)));
        match labels::resolve_one(candidates) {
            Ok(one) => Ok(one),
            Err(0) => Err(Refusal::new(
                "element_not_found",
                format!("no menu entry {title:?} where the path leads"),
            )),
            Err(n) => Err(Refusal::new(
                "ambiguous_match",
                format!("{n} menu entries match {title:?}"),
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
    let enabled = |n: &Node| tree.toolkit.enabled(n);
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

/// One field or button an action names, as its arguments name it.
pub(super) struct Wanted<'a> {
    pub(super) role: Option<&'a str>,
    pub(super) label: &'a str,
    pub(super) value: Option<&'a str>,
}

pub(super) fn invalid(message: impl Into<String>) -> Refusal {
    Refusal::new("invalid_arguments", message)
}

pub(super) fn wanted<'a>(tool_name: &str, args: &'a Value) -> Result<Vec<Wanted<'a>>, Refusal> {
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
pub(super) fn names_what_was_written(
    tool_name: &str,
    fields: &[Wanted<'_>],
    postcondition: &Value,
) -> bool {
    let text = |key: &str| postcondition.get(key).and_then(Value::as_str);
    if text("kind") != Some("ui_element") || postcondition.get("exists") != Some(&Value::Bool(true))
    {
        return false;
    }
    let digest = text("valueDigest");
    match (tool_name, fields) {
        (tool::SET_VALUE, [field]) => {
            text("role") == field.role
                // The empty label is sent as no label (the wire's label is
                // never empty).
                && text("label").unwrap_or_default() == field.label
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
pub(super) fn window_agrees(args: &Value, target: Option<&TargetEvidence>) -> Result<(), Refusal> {
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

/// Refuses a tree the walk's limits cut short (an element found in part
/// of a tree is not known to be the only one) and a window whose
/// application hides its contents (Chromium without its switch).
pub(super) fn whole(tree: &Tree) -> Result<(), Refusal> {
    if let Some(refusal) = tree.toolkit.contents_hidden(&tree.nodes) {
        return Err(refusal);
    }
    if tree.truncated {
        return Err(Refusal::with_details(
            "tree_too_large",
            format!(
                "the window's tree is larger than this server reads for an action ({WALK_MAX_NODES} nodes, {WALK_MAX_DEPTH} levels), so no element in it is known to be unique: act in a smaller window, or name the element another way"
            ),
            json!({ "maxNodes": WALK_MAX_NODES, "maxDepth": WALK_MAX_DEPTH }),
        ));
    }
    if tree.labels_cut {
        return Err(Refusal::with_details(
            "tree_too_large",
            "the window's layout is too costly to read for the labels beside its fields (more label and field pairs than this server compares for one window), so a field is not known by the label a person reads: name the element another way, or act in a smaller window",
            json!({ "cause": "layout_pairs" }),
        ));
    }
    Ok(())
}

/// The one node `wanted` names in `tree`, by the label rule
/// ([`labels`]): its one exact match, or its one partial match when none
/// is exact; enabled and shown as its toolkit reads them.
pub(super) fn resolve<'t>(tree: &'t Tree, wanted: &Wanted<'_>) -> Result<&'t Node, Refusal> {
    whole(tree)?;
    let label = labels::normalise(wanted.label);
    // The empty label names the one unlabelled text area of an editor; a
    // button with no name is named by nothing a person reads.
    if label.is_empty()
        && !wanted
            .role
            .is_some_and(|r| matches!(r, "AXTextField" | "AXTextArea"))
    {
        return Err(invalid(
            "an empty label names only a text field or text area (role AXTextField or AXTextArea)",
        ));
    }
    let matching = |shown: bool| {
        tree.nodes
            .iter()
            // Static text is never acted on.
            .filter(|n| n.acted_on())
            .filter(|n| wanted.role.is_none_or(|r| r == n.role))
            .filter(move |n| tree.toolkit.shown(n) == shown)
            .filter_map(|n| n.label_match(&label).map(|m| (n, m)))
    };
    let named = || format!("{} {:?}", wanted.role.unwrap_or("element"), wanted.label);
    // The elements a person sees are matched first; a hidden element (a
    // second header bar for full screen, a closed menu's item) counts only
    // when no shown one matches, and is then refused as hidden.
    let found = match labels::resolve_one(matching(true)) {
        Err(0) => labels::resolve_one(matching(false)),
        other => other,
    };
    match found {
        Ok(node) => {
            tree.toolkit.actionable(node, &named())?;
            Ok(node)
        }
        Err(0) => Err(Refusal::new(
            "element_not_found",
            format!("no {} in the window", named()),
        )),
        Err(n) => Err(Refusal::new(
            "ambiguous_match",
            format!("{n} elements match {}", named()),
        )),
    }
}

/// What `find_element` finds among `candidates` (each with how its label
/// matched, when a label was asked for), as an action resolves: the shown
/// elements first, the hidden ones only when no shown one matches, each
/// set by the label rule.
pub(super) fn shown_first<'t>(
    tree: &Tree,
    candidates: Vec<(&'t Node, Option<labels::LabelMatch>)>,
    by_label: bool,
) -> Vec<(&'t Node, Option<labels::LabelMatch>)> {
    let by_rule = |set: Vec<(&'t Node, Option<labels::LabelMatch>)>| {
        if !by_label {
            return set;
        }
        labels::search(
            set.into_iter()
                .map(|(n, m)| ((n, m), m.unwrap_or(labels::LabelMatch::Partial))),
        )
        .into_iter()
        .map(|(pair, _)| pair)
        .collect()
    };
    let (shown, hidden): (Vec<_>, Vec<_>) = candidates
        .into_iter()
        .partition(|(n, _)| tree.toolkit.shown(n));
    match by_rule(shown) {
        found if found.is_empty() => by_rule(hidden),
        found => found,
    }
}

/// Puts what a model is shown of `tree` into a `get_ui_tree` answer: at
/// most `max_depth` levels (the default when `None`, at most
/// [`super::MAX_DEPTH`]) and [`super::MAX_NODES`] nodes, with how many the
/// whole tree has, whether the shown part was cut, and the toolkit. The
/// tree an action resolves in is the whole one, not this.
pub(crate) fn show_tree(answer: &mut Value, tree: &Tree, max_depth: Option<usize>) {
    let depth = max_depth
        .unwrap_or(super::DEFAULT_DEPTH)
        .min(super::MAX_DEPTH);
    let (shown, cut) = tree.to_json_within(depth, super::MAX_NODES);
    answer["accessibility"] = json!("atspi");
    answer["elementTreeTruncated"] = json!(cut);
    answer["elementTreeNodes"] = json!(tree.nodes.len());
    answer["elementTreeShown"] = json!({ "maxDepth": depth, "maxNodes": super::MAX_NODES });
    answer["toolkit"] = json!(tree.toolkit.name());
    // Read from the bus now, or kept since a walk and current as of now by
    // the application's events.
    answer["elementTreeSource"] = json!(tree.source.as_str());
    // Text in the tree comes from the application: untrusted, and possibly
    // written to steer whoever reads it.
    answer["contentOrigin"] = json!("application_untrusted");
    answer["tree"] = shown;
    if let Some(refusal) = tree.toolkit.contents_hidden(&tree.nodes) {
        answer["accessibilityNote"] = json!(refusal.message);
    } else if tree.toolkit == Toolkit::Chromium {
        // Not a warning (`accessibilityNote` says why a tree is missing):
        // what the server did to the browser by reading it.
        answer["accessibilityTurnedOn"] = json!(CHROMIUM_TURNED_ON);
    }
}

/// What the tree's answer says of a Chromium window whose page is read
/// (see `frame::announce`).
const CHROMIUM_TURNED_ON: &str = "Chromium exposes its pages once an assistive technology reads its window's attributes, as a screen reader does; the server reads them before it walks a Chromium window, which turns the browser's accessibility on for as long as it runs, so a Chromium started without --force-renderer-accessibility is read like one started with it";

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desktop::atspi::Toolkit;

    fn node(path: Vec<u32>, role: &str, name: &str, description: &str) -> Node {
        Node {
            path,
            atspi_role: role.into(),
            role: crate::desktop::atspi::ax_role(role, role == "text"),
            name: name.into(),
            label: name.into(),
            labelled_apart: false,
            description: description.into(),
            value: None,
            secure: false,
            bounds: (0, 0, 10, 10),
            actions: vec!["click".into()],
            states: vec![
                "enabled".into(),
                "sensitive".into(),
                "showing".into(),
                "multi_line".into(),
            ],
            children: Vec::new(),
        }
    }

    fn tree(nodes: Vec<Node>) -> Tree {
        let mut nodes = nodes;
        nodes[0].children = (1..nodes.len()).collect();
        Tree::new(nodes, false, Toolkit::Gtk3)
    }

    #[test]
    fn the_empty_label_never_presses_an_unnamed_button() {
        let window = tree(vec![
            node(vec![], "frame", "Editor", ""),
            node(vec![0], "push button", "", "Delete everything"),
            node(vec![1], "text", "", ""),
        ]);
        let press = Wanted {
            role: Some("AXButton"),
            label: "",
            value: None,
        };
        assert_eq!(
            resolve(&window, &press).err().map(|r| r.code),
            Some("invalid_arguments".into())
        );
        let write = Wanted {
            role: Some("AXTextArea"),
            label: "",
            value: Some("x"),
        };
        assert_eq!(
            resolve(&window, &write).ok().map(Node::id),
            Some("p1".into())
        );
    }

    #[test]
    fn static_text_is_never_acted_on() {
        let window = tree(vec![
            node(vec![], "frame", "Status", ""),
            node(vec![0], "label", "Ln 2, Col 15", ""),
        ]);
        let click = Wanted {
            role: None,
            label: "Ln 2",
            value: None,
        };
        assert_eq!(
            resolve(&window, &click).err().map(|r| r.code),
            Some("element_not_found".into())
        );
    }
}
