//! What an application's events say of a kept tree: whether they leave it
//! as it was read.
//!
//! Reading an application makes some of them talk. gedit re-announces
//! each of its menu's check items as `state-changed:checked` with the
//! value it already had whenever anything asks it for its states (two
//! events per item per read: 14 for one walk of its 534 nodes), and at
//! its bridge creates and drops helper objects outside its window's tree
//! (each with its own `defunct`, `widget` and `accessible-parent`
//! events), and the cells of its file browser's table are objects made
//! when they are read and dropped after (`defunct`), though the table's
//! rows stay. Counting every event as a change made every read of gedit a
//! walk. An event changes a kept tree only when it is about one of the
//! tree's objects (its nodes, and the labels its fields are
//! `labelled-by`) and is not a state announced at the value the tree
//! already holds (the latest announcement of a state is its value now).
//! A state announced otherwise is asked of its node again, since the
//! announcement and the node's own answer may differ: gedit announces its
//! "Tab width 8" item `checked` and answers `GetState` without it. So is
//! a node that announces its bounds: gtk3-widget-factory's spinners and
//! progress bar announce them without end while they animate in place
//! (466 announcements during one round of the `trees` benchmark). The node's answers (its states and extents, as a walk reads
//! them) are what a walk would read, so the tree stays only when every
//! such node answers what the tree holds. Any other event on those
//! objects, including one this server cannot read, changes it; in a tree
//! the walk's limits cut short, every event does. An object outside the
//! tree cannot change it without an event on one of the tree's own (a
//! child added or removed is announced on its parent), and an object's
//! life (its `defunct` state, its `widget` and `accessible-parent`
//! properties) is not what the tree holds of it: a node that is removed
//! is announced on its parent, and an action finds its node again by its
//! path, role and label, never by its object.

use std::collections::HashMap;

use atspi::State;
use atspi::zbus::Message;
use atspi::zbus::zvariant::OwnedValue;

use super::Tree;
use super::walk::state_name;

/// One event as the watcher keeps it.
#[derive(Clone, Debug)]
pub(super) struct Event {
    /// Its place in the application's count of events.
    pub seq: u64,
    /// The object it is about (its D-Bus path).
    pub object: String,
    /// What it says.
    pub change: Change,
}

/// What an event says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Change {
    /// A state (in the walk's naming) is now on or off.
    State { name: String, on: bool },
    /// An object's life: made, bound to its widget or parent, or dropped.
    Life,
    /// Its bounds (`bounds-changed`), asked again rather than read from
    /// the event.
    Bounds,
    /// Anything else, or an event that could not be read.
    Other,
}

impl Change {
    /// Reads an AT-SPI event signal: `state-changed` with a state this
    /// server names, an object's life, else [`Change::Other`].
    pub(super) fn of(message: &Message) -> Self {
        let header = message.header();
        let member = header.member().map(|m| m.as_str().to_owned());
        if member.as_deref() == Some("BoundsChanged") {
            return Self::Bounds;
        }
        if !matches!(member.as_deref(), Some("StateChanged" | "PropertyChange")) {
            return Self::Other;
        }
        type Body = (String, i32, i32, OwnedValue, HashMap<String, OwnedValue>);
        let Ok((kind, detail1, ..)) = message.body().deserialize::<Body>() else {
            return Self::Other;
        };
        if member.as_deref() == Some("PropertyChange") {
            return match kind.as_str() {
                "accessible-parent" | "widget" => Self::Life,
                _ => Self::Other,
            };
        }
        match State::from(kind.as_str()) {
            State::Invalid => Self::Other,
            State::Defunct => Self::Life,
            state => Self::State {
                name: state_name(state),
                on: detail1 != 0,
            },
        }
    }
}

/// The objects a kept tree was read from: each node's object with its
/// index in [`Tree::nodes`], and the objects its labels were read from
/// (`None`: any event on one changes the tree).
pub(super) type Objects = HashMap<String, Option<usize>>;

/// What events say of a kept tree.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// They leave it as it was read.
    Unchanged,
    /// They change it: it is read again.
    Changed,
    /// They leave it as it was read if these nodes (object, index in
    /// [`Tree::nodes`]) still answer the states and extents the tree
    /// holds.
    Ask(Vec<(String, usize)>),
}

/// What `events` (every event of the tree's application since it was
/// read, in order) say of `tree` (see the module's doc).
pub(super) fn judge(tree: &Tree, objects: &Objects, events: &[Event]) -> Verdict {
    if tree.truncated {
        return if events.is_empty() {
            Verdict::Unchanged
        } else {
            Verdict::Changed
        };
    }
    let mut latest: HashMap<(usize, &str), (bool, &str)> = HashMap::new();
    let mut ask: Vec<(String, usize)> = Vec::new();
    for event in events {
        let Some(at) = objects.get(&event.object) else {
            continue;
        };
        match (&event.change, at) {
            (Change::Life, _) => {}
            (Change::Bounds, Some(index)) => {
                if !ask.iter().any(|(_, i)| i == index) {
                    ask.push((event.object.clone(), *index));
                }
            }
            (Change::State { name, on }, Some(index)) => {
                latest.insert((*index, name.as_str()), (*on, event.object.as_str()));
            }
            _ => return Verdict::Changed,
        }
    }
    for ((index, name), (on, object)) in latest {
        let Some(node) = tree.nodes.get(index) else {
            return Verdict::Changed;
        };
        if node.states.iter().any(|s| s == name) != on && !ask.iter().any(|(_, i)| *i == index) {
            ask.push((object.to_owned(), index));
        }
    }
    if ask.is_empty() {
        Verdict::Unchanged
    } else {
        ask.sort_by_key(|(_, index)| *index);
        Verdict::Ask(ask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desktop::atspi::{Node, Toolkit};

    fn tree(states: &[&str], truncated: bool) -> (Tree, Objects) {
        let node = Node::sample(vec![], "check menu item", "Overwrite mode", states);
        let objects = Objects::from([("/a/1".into(), Some(0)), ("/a/label".into(), None)]);
        (Tree::new(vec![node], truncated, Toolkit::Gtk3), objects)
    }

    fn state(object: &str, name: &str, on: bool) -> Event {
        Event {
            seq: 1,
            object: object.into(),
            change: Change::State {
                name: name.into(),
                on,
            },
        }
    }

    #[test]
    fn a_state_announced_at_the_value_held_leaves_the_tree() {
        let (tree, objects) = tree(&["enabled", "checked"], false);
        let said = [
            state("/a/1", "checked", true),
            state("/a/1", "checked", true),
        ];
        assert_eq!(judge(&tree, &objects, &said), Verdict::Unchanged);
        // Unchecked then checked again: the latest is what it is now.
        let flipped = [
            state("/a/1", "checked", false),
            state("/a/1", "checked", true),
        ];
        assert_eq!(judge(&tree, &objects, &flipped), Verdict::Unchanged);
    }

    #[test]
    fn a_state_that_differs_from_the_tree_is_asked_of_its_node() {
        let (tree, objects) = tree(&["enabled", "checked"], false);
        let ask = Verdict::Ask(vec![("/a/1".into(), 0)]);
        assert_eq!(
            judge(&tree, &objects, &[state("/a/1", "checked", false)]),
            ask
        );
        assert_eq!(
            judge(&tree, &objects, &[state("/a/1", "focused", true)]),
            ask
        );
        let back = [
            state("/a/1", "checked", true),
            state("/a/1", "checked", false),
        ];
        assert_eq!(judge(&tree, &objects, &back), ask);
        // Two states of one node: the node is asked once.
        let two = [
            state("/a/1", "checked", false),
            state("/a/1", "focused", true),
        ];
        assert_eq!(judge(&tree, &objects, &two), ask);
    }

    #[test]
    fn any_other_event_on_the_trees_objects_changes_it() {
        let (tree, objects) = tree(&["enabled"], false);
        let other = |object: &str| Event {
            seq: 1,
            object: object.into(),
            change: Change::Other,
        };
        let checked = state("/a/1", "checked", true);
        assert_eq!(
            judge(&tree, &objects, &[checked.clone(), other("/a/1")]),
            Verdict::Changed
        );
        // A label a field is named by: even its states count.
        assert_eq!(
            judge(&tree, &objects, &[other("/a/label")]),
            Verdict::Changed
        );
        let label = state("/a/label", "enabled", false);
        assert_eq!(judge(&tree, &objects, &[label]), Verdict::Changed);
        // Its bounds are asked of it; a label's change it.
        let bounds = |object: &str| Event {
            seq: 1,
            object: object.into(),
            change: Change::Bounds,
        };
        let moved = [bounds("/a/1"), bounds("/a/1"), checked.clone()];
        let ask = Verdict::Ask(vec![("/a/1".into(), 0)]);
        assert_eq!(judge(&tree, &objects, &moved), ask);
        assert_eq!(
            judge(&tree, &objects, &[bounds("/a/label")]),
            Verdict::Changed
        );
        // Its life does not.
        let life = |object: &str| Event {
            seq: 1,
            object: object.into(),
            change: Change::Life,
        };
        let lives = [life("/a/1"), life("/a/label")];
        assert_eq!(judge(&tree, &objects, &lives), Verdict::Unchanged);
        // An object outside the tree does not.
        let elsewhere = [other("/a/elsewhere")];
        assert_eq!(judge(&tree, &objects, &elsewhere), Verdict::Unchanged);
    }

    #[test]
    fn in_a_tree_cut_short_every_event_changes_it() {
        let (tree, objects) = tree(&["enabled", "checked"], true);
        let elsewhere = [state("/a/elsewhere", "checked", true)];
        assert_eq!(judge(&tree, &objects, &elsewhere), Verdict::Changed);
        assert_eq!(judge(&tree, &objects, &[]), Verdict::Unchanged);
    }
}
