//! One window's accessibility tree, as a person reads it: each node's role,
//! label, value, bounds, actions and states, a field labelled by its
//! `labelled-by` relation or else by the label beside it in the layout, a
//! password's value never read, and its revisions (see `revision`): one of
//! everything but values and focus (so a typed value or a blinking caret
//! does not move it; a renamed, moved, added or removed element does), and
//! one of what the elements hold, which only a press is bound to.

use serde_json::{Value, json};

use super::is_field;
use super::toolkit::Toolkit;
use adk_computer_use::contracts::labels::{self, LabelMatch};

/// One node of a window's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Child indices from the window down to this node.
    pub path: Vec<u32>,
    /// AT-SPI's role name (`push button`, `password text`, ...).
    pub atspi_role: String,
    /// The role in upstream's vocabulary (`AXButton`, ...).
    pub role: &'static str,
    /// Its accessible name, as the application reports it (what the node
    /// is checked against when it is found again).
    pub name: String,
    /// Its label, as a person reads it: its name; else its `labelled-by`
    /// label; else the text of the labels inside it (a GTK 4 button
    /// whose name is its widget's class, or its text twice); else, for a
    /// field, the label beside it in the layout.
    pub label: String,
    /// The label came from a `labelled-by` relation or the layout, not
    /// from the node's own name.
    pub labelled_apart: bool,
    /// Its description (a tooltip, a longer name), when it has one.
    pub description: String,
    /// Its text, when it has one; never for a password field.
    pub value: Option<String>,
    /// A password field.
    pub secure: bool,
    /// Screen bounds: `(x, y, width, height)`.
    pub bounds: (i32, i32, i32, i32),
    /// Its action names.
    pub actions: Vec<String>,
    /// Its states (`enabled`, `focused`, `editable`, ...).
    pub states: Vec<String>,
    /// Indices of its children in [`Tree::nodes`].
    pub children: Vec<usize>,
}

impl Node {
    /// Whether an action may act on it: every node but static text
    /// (the label and static roles), which an action never resolves to.
    pub fn acted_on(&self) -> bool {
        !CONTENT_ROLES.contains(&self.atspi_role.as_str())
    }

    /// Whether it has the state `name`.
    pub fn has(&self, name: &str) -> bool {
        self.states.iter().any(|s| s == name)
    }

    /// How its label matches `wanted` (normalised), by the one rule of
    /// [`labels`]. The label alone: it is what the revision digests, so
    /// nothing an element is matched by can change between a preview and
    /// its execution without the revision moving (a description, a tooltip,
    /// is shown but never matched).
    pub fn label_match(&self, wanted: &str) -> Option<LabelMatch> {
        labels::label_match(&self.label, wanted)
    }

    /// Its id: the path, as `p0.2.1`.
    pub fn id(&self) -> String {
        let parts: Vec<String> = self.path.iter().map(u32::to_string).collect();
        format!("p{}", parts.join("."))
    }
}

/// A window's tree, in pre-order (the window first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// Every node walked.
    pub nodes: Vec<Node>,
    /// Whether the walk's limits (depth, nodes) cut it short.
    pub truncated: bool,
    /// Whether the labels beside fields were not all read: the layout
    /// pass stopped at its count of pairs (see `layout`), so a field may
    /// lack the label a person reads beside it.
    pub labels_cut: bool,
    /// The digest of the tree's structure and labels.
    pub revision: String,
    /// The digest of what the tree's elements hold: every value (never a
    /// password's, which is never read) and every toggle's state. Bound
    /// by a press only (see `values_revision`).
    pub values: String,
    /// The toolkit the application is built with, which decides how its
    /// states read.
    pub toolkit: Toolkit,
    /// Where this reading came from.
    pub source: Source,
}

/// Where a tree's reading came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Read from the application over the bus, node by node.
    Walk,
    /// Kept in memory from an earlier walk: the application has sent no
    /// event since that changes it (checked just now; see `events`).
    Events,
}

impl Source {
    /// Its name in answers (`walk`, `events`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Walk => "walk",
            Self::Events => "events",
        }
    }
}

/// The longest label kept, in characters (an application's text is
/// untrusted, and bounded).
pub(super) const MAX_LABEL_CHARS: usize = 256;
/// The longest value kept, in characters.
pub(super) const MAX_VALUE_CHARS: usize = 4096;

/// `text`, cut at `most` characters.
pub(super) fn capped(text: String, most: usize) -> String {
    match text.char_indices().nth(most) {
        Some((at, _)) => text[..at].to_owned(),
        None => text,
    }
}

/// Whether an action name is a press: `click`, `press` or `activate`
/// (GTK, Qt, a browser's buttons), `check`, `uncheck` or `toggle` (a
/// browser's check boxes, which offer no other), `jump` (a browser's
/// links).
pub fn is_press(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "click" | "press" | "activate" | "check" | "uncheck" | "toggle" | "jump"
    )
}

/// Whether `name` is no name a person reads: GTK 4 names a widget without
/// one by its class (`GtkButton`, `AdwLeaflet`), or gives a button its
/// text twice (`"1 1"` for the button that shows `1`, when `content` is
/// its text).
fn placeholder(name: &str, content: &str, toolkit: &Toolkit) -> bool {
    if name.is_empty() {
        return true;
    }
    if *toolkit != Toolkit::Gtk4 {
        return false;
    }
    let class = ["Gtk", "Adw", "Gdk"].iter().any(|prefix| {
        name.strip_prefix(prefix).is_some_and(|rest| {
            rest.starts_with(|c: char| c.is_ascii_uppercase())
                && rest.chars().all(|c| c.is_ascii_alphanumeric())
        })
    });
    class || (!content.is_empty() && name == format!("{content} {content}"))
}

/// A node whose name is no name a person reads takes the text of the
/// labels directly inside it, as a person reads a button by what it shows.
fn label_from_content(nodes: &mut [Node], toolkit: &Toolkit) {
    for i in 0..nodes.len() {
        let Some(node) = nodes.get(i) else { continue };
        if is_field(&node.atspi_role) || node.labelled_apart {
            continue;
        }
        let content: Vec<&str> = node
            .children
            .iter()
            .filter_map(|&c| nodes.get(c))
            .filter(|c| c.atspi_role == "label" && !c.name.is_empty())
            .map(|c| c.name.as_str())
            .collect();
        let content = content.join(" ");
        if !placeholder(&node.name, &content, toolkit) {
            continue;
        }
        let label = if content.is_empty() && *toolkit == Toolkit::Gtk4 && !node.name.is_empty() {
            // A class name is no label; the description (a tooltip) may be
            // matched, but is not shown as the label.
            String::new()
        } else if content.is_empty() {
            continue;
        } else {
            content
        };
        if let Some(node) = nodes.get_mut(i) {
            node.label = label;
        }
    }
}

/// The roles whose text is content, not structure: a status bar's
/// "Ln 2, Col 15", a calculator's history. No action acts on one
/// ([`Node::acted_on`]), and their text changes as the application works:
/// a field they name carries their text as its label, which is digested.
pub(super) const CONTENT_ROLES: [&str; 2] = ["label", "static"];

impl Node {
    /// The node alone, as `find_element` answers it (upstream's flat shape:
    /// no children, the `path` from the window). A password's value is
    /// never included.
    pub fn to_flat_json(&self) -> Value {
        let (x, y, w, h) = self.bounds;
        let value = if self.secure {
            Value::Null
        } else {
            self.value.clone().map_or(Value::Null, Value::String)
        };
        json!({
            "id": self.id(),
            "path": self.path,
            "role": self.role,
            "atspiRole": self.atspi_role,
            "label": self.label,
            "name": self.name,
            "description": self.description,
            "value": value,
            "secure": self.secure,
            "bounds": { "x": x, "y": y, "width": w, "height": h },
            "actions": self.actions,
            "states": self.states,
        })
    }
}

impl Tree {
    /// The tree a walk read: fields without a label take the one beside
    /// them, and the revision is taken of the whole.
    pub(super) fn new(mut nodes: Vec<Node>, truncated: bool, toolkit: Toolkit) -> Self {
        label_from_content(&mut nodes, &toolkit);
        let labels_cut = super::layout::label_from_layout(&mut nodes, &toolkit);
        let revision = super::revision::structure(&nodes);
        let values = super::revision::values(&nodes);
        Self {
            nodes,
            truncated,
            labels_cut,
            revision,
            values,
            toolkit,
            source: Source::Walk,
        }
    }

    /// The tree as shown to a model: at most `depth` levels below the
    /// window and `most` nodes (in the tree's order), and whether anything
    /// was left out (by these limits or by the walk's).
    pub fn to_json_within(&self, depth: usize, most: usize) -> (Value, bool) {
        let mut shown = 0usize;
        let mut cut = self.truncated;
        fn node(
            tree: &Tree,
            index: usize,
            depth: usize,
            most: usize,
            shown: &mut usize,
            cut: &mut bool,
        ) -> Value {
            let Some(n) = tree.nodes.get(index) else {
                return Value::Null;
            };
            *shown += 1;
            let mut out = n.to_flat_json();
            let mut children = Vec::new();
            if n.path.len() >= depth {
                *cut |= !n.children.is_empty();
            } else {
                for &c in &n.children {
                    if *shown >= most {
                        *cut = true;
                        break;
                    }
                    children.push(node(tree, c, depth, most, shown, cut));
                }
            }
            if let Value::Object(map) = &mut out {
                map.remove("path");
                map.insert("children".into(), Value::Array(children));
            }
            out
        }
        let json = node(self, 0, depth, most.max(1), &mut shown, &mut cut);
        (json, cut)
    }
}

#[cfg(test)]
impl Node {
    /// A node for unit tests: named and labelled `name`, at 0, 0, 10, 10,
    /// with a `click` action and `states`.
    pub(crate) fn sample(path: Vec<u32>, atspi_role: &str, name: &str, states: &[&str]) -> Self {
        Self {
            path,
            atspi_role: atspi_role.into(),
            role: super::ax_role(atspi_role, false),
            name: name.into(),
            label: name.into(),
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(path: Vec<u32>, role: &str, name: &str, bounds: (i32, i32, i32, i32)) -> Node {
        Node {
            bounds,
            actions: Vec::new(),
            ..Node::sample(path, role, name, &["enabled", "sensitive", "showing"])
        }
    }

    fn form(fields: usize) -> Vec<Node> {
        let mut nodes = vec![node(vec![], "frame", "Form", (0, 0, 400, 400))];
        for i in 0..fields {
            let at = i32::try_from(i).unwrap_or(i32::MAX).saturating_mul(30);
            nodes.push(node(
                vec![0, 2 * i as u32],
                "label",
                "Field",
                (0, at, 50, 20),
            ));
            nodes.push(node(
                vec![0, 2 * i as u32 + 1],
                "text",
                "",
                (60, at, 100, 20),
            ));
        }
        let children: Vec<usize> = (1..nodes.len()).collect();
        nodes[0].children = children;
        nodes
    }

    #[test]
    fn a_description_given_after_the_preview_does_not_retarget_an_action() {
        // The review's case: "account" matched Accounts alone; the
        // application then gives Backup the description "Account". The
        // revision does not digest descriptions, so nothing may match by
        // one.
        let mut nodes = form(0);
        nodes.push(node(vec![1], "push button", "Accounts", (0, 300, 50, 20)));
        nodes.push(node(vec![2], "push button", "Backup", (0, 330, 50, 20)));
        nodes[0].children = vec![1, 2];
        nodes[2].description = "Account".into();
        let tree = Tree::new(nodes, false, Toolkit::Gtk3);
        let wanted = labels::normalise("account");
        let matched: Vec<&str> = tree
            .nodes
            .iter()
            .filter(|n| n.label_match(&wanted).is_some())
            .map(|n| n.label.as_str())
            .collect();
        assert_eq!(matched, ["Accounts"]);
    }

    #[test]
    fn bounds_an_application_chooses_do_not_overflow() {
        let mut nodes = form(1);
        nodes[1].bounds = (i32::MAX, i32::MAX, i32::MAX, i32::MAX);
        nodes[2].bounds = (i32::MAX, i32::MAX, i32::MAX, i32::MAX);
        let tree = Tree::new(nodes, false, Toolkit::Gtk3);
        assert_eq!(tree.nodes.len(), 3);
    }

    #[test]
    fn a_flat_list_of_thousands_is_not_searched_pair_by_pair() {
        // 20,000 siblings: searched pairwise, this took seconds to minutes,
        // on the accessibility thread, past every deadline. By rows (see
        // `layout`), every field takes its own row's label, and the pass
        // is not cut.
        let tree = Tree::new(form(10_000), false, Toolkit::Gtk3);
        assert_eq!(tree.nodes.len(), 20_001);
        assert!(!tree.labels_cut);
        assert!(
            tree.nodes
                .iter()
                .skip(1)
                .filter(|n| n.atspi_role == "text")
                .all(|n| n.label == "Field" && n.labelled_apart)
        );
    }
}
