//! Reading a window's tree over the bus, many requests in flight at once.
//!
//! A node costs several calls (its role, name, description, states and
//! interfaces, then its children, extents, actions and text; fewer where
//! `GetAll` already said some of it, see `basics`), and a
//! walk that waits for each answer before asking the next is bound by
//! round trips, not by the application. This walk asks about every node
//! as soon as its parent's children are known, with no level waiting for
//! the one before it (at most [`IN_FLIGHT`] nodes at a time, on the one
//! connection, as D-Bus allows), and a node's own calls are asked
//! together. What comes back is assembled in
//! the tree's order (pre-order, children in index order), so the result is
//! the same tree a one-call-at-a-time walk reads.

use atspi::proxy::accessible::{AccessibleProxy, ObjectRefExt};
use atspi::proxy::action::ActionProxy;
use atspi::proxy::component::ComponentProxy;
use atspi::proxy::text::TextProxy;
use atspi::{CoordType, Interface, ObjectRefOwned, RelationType, State, zbus};
use futures_util::stream::{FuturesUnordered, StreamExt};

use super::basics::Asking;
use super::events;
use super::tree::{MAX_LABEL_CHARS, MAX_VALUE_CHARS, Node, capped};
use super::{ax_role, is_field, is_secret, unreadable};
use crate::engine::Refusal;

/// How many nodes are asked about at once.
pub(super) const IN_FLIGHT: usize = 128;

/// What a walk reads: the nodes in pre-order, and whether a limit cut it.
pub(super) struct Walked {
    pub nodes: Vec<Node>,
    pub truncated: bool,
    /// The objects the nodes were read from (see [`events::Objects`]).
    pub objects: events::Objects,
}

/// One node as read, before the tree is put in order.
struct Read {
    node: Node,
    children: Vec<ObjectRefOwned>,
    /// The objects its label was read or asked from (its `labelled-by`
    /// targets looked at), each `(connection, path)`.
    label_objects: Vec<(String, String)>,
}

/// A state as the walk names it (`multi_line`, `focused`).
pub(super) fn state_name(state: State) -> String {
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

/// A proxy of interface `P` on the object `object` names (no call made).
pub(super) async fn proxy_of<'c, P>(
    conn: &'c zbus::Connection,
    object: &ObjectRefOwned,
) -> Option<P>
where
    P: From<zbus::Proxy<'c>> + zbus::proxy::Defaults,
{
    proxy_at(conn, object.name()?.as_str(), object.path().as_str()).await
}

/// A proxy of interface `P` on the object at `path` of the connection
/// `name` (no call made).
pub(super) async fn proxy_at<'c, P>(conn: &'c zbus::Connection, name: &str, path: &str) -> Option<P>
where
    P: From<zbus::Proxy<'c>> + zbus::proxy::Defaults,
{
    zbus::proxy::Builder::<P>::new(conn)
        .destination(name.to_owned())
        .ok()?
        .path(path.to_owned())
        .ok()?
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await
        .ok()
}

/// Reads one node: its own calls asked together, then the calls its
/// interfaces allow, together.
async fn read(
    conn: &zbus::Connection,
    asking: Asking,
    object: ObjectRefOwned,
    path: Vec<u32>,
) -> Result<Read, Refusal> {
    let proxy: AccessibleProxy<'_> = object
        .as_accessible_proxy(conn)
        .await
        .map_err(|_| unreadable("an element"))?;
    let basics = asking.basics(conn, &proxy, &object).await;
    let atspi_role = capped(basics.role, 64);
    let states: Vec<String> = basics.states.iter().map(state_name).collect();
    let interfaces = basics.interfaces;
    let secure = is_secret(&atspi_role);
    let name = capped(basics.name, MAX_LABEL_CHARS);
    let wants_text = !secure && is_field(&atspi_role) && interfaces.contains(Interface::Text);
    let wants_relation = name.is_empty() && is_field(&atspi_role);
    let extents = async {
        if !interfaces.contains(Interface::Component) || !asking.bounds.asks(&states) {
            return None;
        }
        let component: ComponentProxy<'_> = proxy_of(conn, &object).await?;
        component.get_extents(CoordType::Screen).await.ok()
    };
    let actions = async {
        if !interfaces.contains(Interface::Action) {
            return Vec::new();
        }
        let Some(action) = proxy_of::<ActionProxy<'_>>(conn, &object).await else {
            return Vec::new();
        };
        action_names(&action).await.unwrap_or_default()
    };
    let value = async {
        if !wants_text {
            return None;
        }
        let text: TextProxy<'_> = proxy_of(conn, &object).await?;
        text.get_text(0, MAX_VALUE_CHARS as i32)
            .await
            .ok()
            .map(|v| capped(v, MAX_VALUE_CHARS))
    };
    let relation = async {
        if wants_relation {
            labelled_by(conn, &proxy).await
        } else {
            (None, Vec::new())
        }
    };
    let children = async {
        if basics.child_count == Some(0) {
            return Vec::new();
        }
        proxy.get_children().await.unwrap_or_default()
    };
    let (extents, actions, value, relation, children) =
        tokio::join!(extents, actions, value, relation, children);
    let multi_line = states.iter().any(|s| s == "multi_line");
    let (relation, label_objects) = relation;
    let (label, labelled_apart) = match relation {
        Some(label) if !label.is_empty() => (capped(label, MAX_LABEL_CHARS), true),
        _ => (name.clone(), false),
    };
    Ok(Read {
        node: Node {
            path,
            role: ax_role(&atspi_role, multi_line),
            atspi_role,
            name,
            label,
            labelled_apart,
            description: capped(basics.description, MAX_LABEL_CHARS),
            value,
            secure,
            bounds: extents.unwrap_or((0, 0, 0, 0)),
            actions,
            states,
            children: Vec::new(),
        },
        children,
        label_objects,
    })
}

/// The name of the first node a field is `labelled-by` that has one, and
/// every target looked at up to it, `(connection, path)` (one without a
/// name yet may take one, and then be the label).
async fn labelled_by(
    conn: &zbus::Connection,
    field: &AccessibleProxy<'_>,
) -> (Option<String>, Vec<(String, String)>) {
    let mut looked_at = Vec::new();
    let Ok(relations) = field.get_relation_set().await else {
        return (None, looked_at);
    };
    for (kind, targets) in relations {
        if kind != RelationType::LabelledBy {
            continue;
        }
        for target in targets {
            let owner = target.name().map(|n| n.to_string()).unwrap_or_default();
            looked_at.push((owner, target.path().to_string()));
            if let Ok(label) = target.into_accessible_proxy(conn).await
                && let Ok(name) = label.name().await
                && !name.is_empty()
            {
                return (Some(name), looked_at);
            }
        }
    }
    (None, looked_at)
}

/// Walks the tree below `frame`, at most `max_depth` levels below it and
/// `max_nodes` nodes in all.
pub(super) async fn walk(
    conn: &zbus::Connection,
    frame: ObjectRefOwned,
    asking: Asking,
    max_depth: usize,
    max_nodes: usize,
) -> Result<Walked, Refusal> {
    // Every node is asked about as soon as its parent's children are known
    // (no level waits for the one before it to finish), at most
    // `IN_FLIGHT` at once. `slots[i]` is the i-th node found; `kids[i]`
    // its children's slots, in index order.
    // Only the application's own objects, each once: a child named on
    // another connection (another application's object) or met a second
    // time (a node listing itself, or a cycle) is not followed.
    let owner = frame.name().map(|n| n.to_string());
    let mut seen: std::collections::HashSet<String> =
        std::collections::HashSet::from([frame.path().to_string()]);
    let mut slots: Vec<Option<Node>> = vec![None];
    // The object each slot's node is read from, and the labels' objects.
    let mut slot_objects: Vec<String> = vec![frame.path().to_string()];
    let mut label_objects: Vec<(String, String)> = Vec::new();
    let mut kids: Vec<Vec<usize>> = vec![Vec::new()];
    let mut truncated = false;
    let mut waiting: std::collections::VecDeque<(ObjectRefOwned, Vec<u32>, usize)> =
        std::collections::VecDeque::from([(frame, Vec::new(), 0)]);
    let mut asked = FuturesUnordered::new();
    loop {
        while asked.len() < IN_FLIGHT
            && let Some((object, path, slot)) = waiting.pop_front()
        {
            asked.push(async move { (read(conn, asking, object, path).await, slot) });
        }
        let Some((answer, slot)) = asked.next().await else {
            break;
        };
        let Read {
            node,
            children,
            label_objects: labels,
        } = answer?;
        label_objects.extend(labels);
        if node.path.len() >= max_depth {
            truncated |= !children.is_empty();
        } else {
            for (i, child) in children.into_iter().enumerate() {
                if child.name().map(|n| n.to_string()) != owner
                    || !seen.insert(child.path().to_string())
                {
                    continue;
                }
                if slots.len() >= max_nodes {
                    truncated = true;
                    break;
                }
                let child_slot = slots.len();
                slots.push(None);
                slot_objects.push(child.path().to_string());
                kids.push(Vec::new());
                if let Some(siblings) = kids.get_mut(slot) {
                    siblings.push(child_slot);
                }
                let mut child_path = node.path.clone();
                child_path.push(u32::try_from(i).unwrap_or(u32::MAX));
                waiting.push_back((child, child_path, child_slot));
            }
        }
        if let Some(place) = slots.get_mut(slot) {
            *place = Some(node);
        }
    }
    let (nodes, order) = pre_order(slots, &kids);
    // A label of another application's is not in this one's events: the
    // tree names an object the watcher cannot follow, and is not kept.
    let mut objects: events::Objects = label_objects
        .into_iter()
        .map(|(connection, path)| {
            let own = owner.as_deref() == Some(connection.as_str());
            (
                if own {
                    path
                } else {
                    events::LONG_OBJECT.to_owned()
                },
                None,
            )
        })
        .collect();
    for (index, slot) in order.into_iter().enumerate() {
        if let Some(object) = slot_objects.get(slot) {
            objects.insert(object.clone(), Some(index));
        }
    }
    Ok(Walked {
        nodes,
        truncated,
        objects,
    })
}

/// The nodes read in the order they were found, put in pre-order with
/// their children's indices, and the slot each came from.
fn pre_order(mut slots: Vec<Option<Node>>, kids: &[Vec<usize>]) -> (Vec<Node>, Vec<usize>) {
    let mut out: Vec<Node> = Vec::with_capacity(slots.len());
    let mut order: Vec<usize> = Vec::with_capacity(slots.len());
    // (index in `slots`, parent's index in `out`)
    let mut stack: Vec<(usize, Option<usize>)> = vec![(0, None)];
    while let Some((at, parent)) = stack.pop() {
        let Some(mut node) = slots.get_mut(at).and_then(Option::take) else {
            continue;
        };
        node.children.clear();
        let index = out.len();
        out.push(node);
        order.push(at);
        if let Some(parent) = parent
            && let Some(p) = out.get_mut(parent)
        {
            p.children.push(index);
        }
        for &child in kids
            .get(at)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .rev()
        {
            stack.push((child, Some(index)));
        }
    }
    (out, order)
}

/// An element's action names, lower-cased: its `GetActions` list, or,
/// where that names none (Chromium answers every name empty) or lists
/// every name as `;;` (Firefox), each name by its index (`GetName`, at
/// most 16, asked together). The walk and the press read them the same
/// way.
pub(super) async fn action_names(action: &ActionProxy<'_>) -> zbus::Result<Vec<String>> {
    let listed: Vec<String> = action
        .get_actions()
        .await?
        .into_iter()
        .map(|a| a.name.to_ascii_lowercase())
        .collect();
    if listed.iter().all(|n| !n.is_empty() && !n.contains(';')) {
        return Ok(listed);
    }
    // A list of empty names counts the actions itself; a list of `;;`
    // may not, so its count is asked.
    let count = if listed.iter().all(String::is_empty) {
        i32::try_from(listed.len()).unwrap_or(i32::MAX)
    } else {
        action.n_actions().await?
    };
    let names =
        futures_util::future::try_join_all((0..count.clamp(0, 16)).map(|i| action.get_name(i)))
            .await?;
    Ok(names.into_iter().map(|n| n.to_ascii_lowercase()).collect())
}
