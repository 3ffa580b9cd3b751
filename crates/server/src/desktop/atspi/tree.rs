//! One window's accessibility tree, as a person reads it: each node's role,
//! label, value, bounds, actions and states, a field labelled by its
//! `labelled-by` relation or else by the label beside it in the layout, a
//! password's value never read, and a revision digest of everything but
//! values and focus (so a typed value or a blinking caret does not move it;
//! a renamed, moved, added or removed element does).

use atspi::proxy::accessible::ObjectRefExt;
use atspi::proxy::proxy_ext::ProxyExt;
use atspi::{CoordType, ObjectRefOwned, RelationType, State, zbus};
use serde_json::{Value, json};

use super::{ax_role, is_field, is_secret, unreadable};
use crate::engine::Refusal;
use adk_computer_use::digest::sha256_hex;

/// One node of a window's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Child indices from the window down to this node.
    pub path: Vec<u32>,
    /// AT-SPI's role name (`push button`, `password text`, ...).
    pub atspi_role: String,
    /// The role in upstream's vocabulary (`AXButton`, ...).
    pub role: &'static str,
    /// Its label: its name, else its `labelled-by` label, else the label
    /// beside it in the layout.
    pub label: String,
    /// The label came from a `labelled-by` relation or the layout, not
    /// from the node's own name.
    pub labelled_apart: bool,
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
    /// Whether it is shown and may be acted on.
    pub fn is_actionable(&self) -> bool {
        ["enabled", "sensitive", "showing", "visible"]
            .iter()
            .all(|s| self.states.iter().any(|t| t == s))
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
    /// Whether the caps (depth, nodes) cut the walk short.
    pub truncated: bool,
    /// The digest of the tree's structure and labels.
    pub revision: String,
}

/// The longest label kept, in characters (an application's text is
/// untrusted, and bounded).
const MAX_LABEL_CHARS: usize = 256;
/// The longest value kept, in characters.
const MAX_VALUE_CHARS: usize = 4096;

/// `text`, cut at `most` characters.
fn capped(text: String, most: usize) -> String {
    match text.char_indices().nth(most) {
        Some((at, _)) => text[..at].to_owned(),
        None => text,
    }
}

/// Whether an action name is a press (`click`, `press`, `activate`).
pub fn is_press(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "click" | "press" | "activate"
    )
}

fn state_name(state: State) -> String {
    let debug = format!("{state:?}");
    let mut out = String::new();
    for (i, c) in debug.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// Walks the tree below `frame`, `max_depth` deep and `max_nodes` wide.
pub(super) async fn walk(
    conn: &zbus::Connection,
    frame: ObjectRefOwned,
    max_depth: usize,
    max_nodes: usize,
) -> Result<Tree, Refusal> {
    let mut nodes: Vec<Node> = Vec::new();
    let mut truncated = false;
    // Depth-first, children in order: (object, path, parent index).
    let mut stack: Vec<(ObjectRefOwned, Vec<u32>, Option<usize>)> = vec![(frame, Vec::new(), None)];
    while let Some((object, path, parent)) = stack.pop() {
        if nodes.len() >= max_nodes {
            truncated = true;
            break;
        }
        let proxy = object
            .into_accessible_proxy(conn)
            .await
            .map_err(|_| unreadable("an element"))?;
        let atspi_role = capped(proxy.get_role_name().await.unwrap_or_default(), 64);
        let name = proxy.name().await.unwrap_or_default();
        let states: Vec<String> = proxy
            .get_state()
            .await
            .map(|set| set.iter().map(state_name).collect())
            .unwrap_or_default();
        let multi_line = states.iter().any(|s| s == "multi_line");
        let secure = is_secret(&atspi_role);
        let mut bounds = (0, 0, 0, 0);
        let mut actions = Vec::new();
        let mut value = None;
        if let Ok(proxies) = proxy.proxies().await {
            if let Ok(component) = proxies.component().await {
                bounds = component
                    .get_extents(CoordType::Screen)
                    .await
                    .unwrap_or(bounds);
            }
            if let Ok(action) = proxies.action().await {
                actions = action
                    .get_actions()
                    .await
                    .map(|list| {
                        list.into_iter()
                            .map(|a| a.name.to_ascii_lowercase())
                            .collect()
                    })
                    .unwrap_or_default();
            }
            if !secure
                && is_field(&atspi_role)
                && let Ok(text) = proxies.text().await
            {
                value = text
                    .get_text(0, MAX_VALUE_CHARS as i32)
                    .await
                    .ok()
                    .map(|v| capped(v, MAX_VALUE_CHARS));
            }
        }
        let mut label = capped(name, MAX_LABEL_CHARS);
        let mut labelled_apart = false;
        if label.is_empty() && is_field(&atspi_role) {
            label = capped(
                labelled_by(conn, &proxy).await.unwrap_or_default(),
                MAX_LABEL_CHARS,
            );
            labelled_apart = !label.is_empty();
        }
        let index = nodes.len();
        nodes.push(Node {
            path: path.clone(),
            role: ax_role(&atspi_role, multi_line),
            atspi_role,
            labelled_apart,
            label,
            value,
            secure,
            bounds,
            actions,
            states,
            children: Vec::new(),
        });
        if let Some(parent) = parent
            && let Some(p) = nodes.get_mut(parent)
        {
            p.children.push(index);
        }
        if path.len() >= max_depth {
            if proxy.child_count().await.unwrap_or(0) > 0 {
                truncated = true;
            }
            continue;
        }
        let children = proxy.get_children().await.unwrap_or_default();
        for (i, child) in children.into_iter().enumerate().rev() {
            let mut child_path = path.clone();
            child_path.push(u32::try_from(i).unwrap_or(u32::MAX));
            stack.push((child, child_path, Some(index)));
        }
    }
    label_from_layout(&mut nodes);
    let revision = revision(&nodes);
    Ok(Tree {
        nodes,
        truncated,
        revision,
    })
}

/// The name of the first node a field is `labelled-by`.
async fn labelled_by(
    conn: &zbus::Connection,
    field: &atspi::proxy::accessible::AccessibleProxy<'_>,
) -> Option<String> {
    let relations = field.get_relation_set().await.ok()?;
    for (kind, targets) in relations {
        if kind != RelationType::LabelledBy {
            continue;
        }
        for target in targets {
            if let Ok(label) = target.into_accessible_proxy(conn).await
                && let Ok(name) = label.name().await
                && !name.is_empty()
            {
                return Some(name);
            }
        }
    }
    None
}

/// A field still without a label takes the label beside it, as a person
/// reads a form: a label of the same parent on the same line, ending left
/// of the field, the nearest one.
fn label_from_layout(nodes: &mut [Node]) {
    let parents: Vec<(usize, Vec<usize>)> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (i, n.children.clone()))
        .collect();
    for (_, children) in parents {
        for &field in &children {
            let Some(f) = nodes.get(field) else { continue };
            if !f.label.is_empty() || !is_field(&f.atspi_role) {
                continue;
            }
            let (fx, fy, _, fh) = f.bounds;
            let middle = fy + fh / 2;
            let beside = children
                .iter()
                .filter_map(|&i| nodes.get(i).map(|n| (i, n)))
                .filter(|(_, n)| n.atspi_role == "label" && !n.label.is_empty())
                .filter(|(_, n)| {
                    ["showing", "visible"]
                        .iter()
                        .all(|s| n.states.iter().any(|t| t == s))
                })
                .filter(|(_, n)| {
                    let (x, y, w, h) = n.bounds;
                    // On the field's line, ending left of it, and near it.
                    y <= middle && middle <= y + h && x + w <= fx + 2 && fx - (x + w) <= 200
                })
                .max_by_key(|(_, n)| n.bounds.0 + n.bounds.2)
                .map(|(_, n)| n.label.clone());
            if let Some(label) = beside
                && let Some(f) = nodes.get_mut(field)
            {
                f.label = label;
                f.labelled_apart = true;
            }
        }
    }
}

/// The digest of what identifies the tree: paths, roles, labels, bounds,
/// actions and the states that decide whether a node can be acted on; not
/// values, not focus.
fn revision(nodes: &[Node]) -> String {
    let lasting = |s: &&String| {
        matches!(
            s.as_str(),
            "enabled" | "sensitive" | "showing" | "visible" | "editable"
        )
    };
    let parts: Vec<Value> = nodes
        .iter()
        .map(|n| {
            json!([
                n.path,
                n.atspi_role,
                n.label,
                [n.bounds.0, n.bounds.1, n.bounds.2, n.bounds.3],
                n.actions,
                n.states.iter().filter(lasting).collect::<Vec<_>>(),
            ])
        })
        .collect();
    format!(
        "atspi-{}",
        &sha256_hex(Value::Array(parts).to_string())[..24]
    )
}

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
            "value": value,
            "secure": self.secure,
            "bounds": { "x": x, "y": y, "width": w, "height": h },
            "actions": self.actions,
            "states": self.states,
        })
    }
}

impl Tree {
    /// The tree in upstream's node shape (`role`, `label`, `value`,
    /// `bounds`, `actions`, `children`), with `states`, `id` and
    /// `atspiRole` beside them. A password's value is never included, and
    /// every text is marked as the application's, not this server's.
    pub fn to_json(&self) -> Value {
        fn node(tree: &Tree, index: usize) -> Value {
            let Some(n) = tree.nodes.get(index) else {
                return Value::Null;
            };
            let mut shown = n.to_flat_json();
            if let Value::Object(map) = &mut shown {
                map.remove("path");
                map.insert(
                    "children".into(),
                    n.children.iter().map(|&c| node(tree, c)).collect(),
                );
            }
            shown
        }
        node(self, 0)
    }
}
