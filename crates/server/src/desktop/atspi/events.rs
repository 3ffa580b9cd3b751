//! What an application's events say of a kept tree: whether they leave it
//! as it was read.
//!
//! Reading an application makes some of them talk. gedit re-announces
//! each of its menu's check items as `state-changed:checked` whenever
//! anything asks it for its states (two events per item per read: 14 for
//! one walk of its 534 nodes), its bridge creates and drops helper objects
//! outside its window's tree (each with its own `defunct`, `widget` and
//! `accessible-parent` events), and the cells of its file browser's table
//! are objects made when they are read and dropped after (`defunct`),
//! though the table's rows stay. gtk3-widget-factory's spinners and
//! progress bar announce their bounds without end while they animate in
//! place (466 announcements during one round of the `trees` benchmark).
//! Counting every event as a change made every read of them a walk.
//!
//! So an event is judged by what it is about:
//! - an object outside the tree is not the tree's: a child added or
//!   removed is announced on its parent, which is in it;
//! - a node's life (its `defunct` state, its `widget` and
//!   `accessible-parent` properties) is not what the tree holds of it,
//!   and an action finds its node again by its path, role and label,
//!   never by its object;
//! - a node that announces a state or its bounds is asked again (its
//!   states and extents, as a walk reads them), whatever value the
//!   announcement gives: an announcement and the node's answer may
//!   differ (gedit announces its "Tab width 8" item `checked` and answers
//!   `GetState` without it), and the answer is what a walk would read;
//!   the tree stays only if every such node answers what it holds;
//! - any other event on one of the tree's objects (its nodes, the
//!   application's root, the labels its fields are `labelled-by` or were
//!   asked for), including one this server cannot read, and any window
//!   event of the application (a window opened, closed, raised), changes
//!   it; in a tree the walk's limits cut short, every event does.
//!
//! An application that changes its tree and announces none of it, or
//! announces it only as a node's life, is read as it was: the same holds
//! of one that sends no event at all, and an application can always
//! leave an element out of what it reports.

use std::collections::HashMap;

use atspi::State;
use atspi::zbus::Message;
use atspi::zbus::zvariant::OwnedValue;

use super::Tree;

/// One event as the watcher keeps it.
#[derive(Clone, Debug)]
pub(super) struct Event {
    /// Its place in the application's count of events.
    pub seq: u64,
    /// The object it is about (its D-Bus path; see [`MAX_OBJECT`]).
    pub object: String,
    /// What it says.
    pub change: Change,
}

/// The longest object path an event is kept with; a longer one is kept
/// as [`LONG_OBJECT`], which names no object of a kept tree (a walk that
/// meets such a path keeps nothing, see `cache`).
pub(super) const MAX_OBJECT: usize = 256;
/// What an event about an object with a longer path is kept as.
pub(super) const LONG_OBJECT: &str = "";

/// What an event says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Change {
    /// A state changed, or was announced again.
    State,
    /// Its bounds (`bounds-changed`).
    Bounds,
    /// An object's life: made, bound to its widget or parent, or dropped.
    Life,
    /// A window of the application (`org.a11y.atspi.Event.Window`).
    Window,
    /// Anything else, or an event that could not be read.
    Other,
}

impl Change {
    /// Reads an AT-SPI event signal by its interface, its member and, for
    /// a state or a property, its kind.
    pub(super) fn of(message: &Message) -> Self {
        let header = message.header();
        let interface = header.interface().map(|i| i.as_str().to_owned());
        match interface.as_deref() {
            Some("org.a11y.atspi.Event.Object") => {}
            Some("org.a11y.atspi.Event.Window") => return Self::Window,
            _ => return Self::Other,
        }
        let member = header.member().map(|m| m.as_str().to_owned());
        let property = match member.as_deref() {
            Some("BoundsChanged") => return Self::Bounds,
            Some("StateChanged") => false,
            Some("PropertyChange") => true,
            _ => return Self::Other,
        };
        type Body = (String, i32, i32, OwnedValue, HashMap<String, OwnedValue>);
        let Ok((kind, ..)) = message.body().deserialize::<Body>() else {
            return Self::Other;
        };
        match (property, kind.as_str()) {
            (true, "accessible-parent" | "widget") => Self::Life,
            (true, _) => Self::Other,
            (false, kind) => match State::from(kind) {
                State::Defunct => Self::Life,
                _ => Self::State,
            },
        }
    }
}

/// The objects a kept tree was read from: each node's object with its
/// index in [`Tree::nodes`], and the objects its labels were read or
/// asked from and its application's root (`None`: any event on one but a
/// life changes the tree).
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
    let mut ask: Vec<(String, usize)> = Vec::new();
    for event in events {
        if event.change == Change::Window {
            return Verdict::Changed;
        }
        let Some(at) = objects.get(&event.object) else {
            continue;
        };
        match (&event.change, at) {
            (Change::Life, _) => {}
            (Change::State | Change::Bounds, Some(index)) => {
                if !ask.iter().any(|(_, i)| i == index) {
                    ask.push((event.object.clone(), *index));
                }
            }
            _ => return Verdict::Changed,
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

    fn tree(truncated: bool) -> (Tree, Objects) {
        let states = &["enabled", "checked"];
        let node = Node::sample(vec![], "check menu item", "Overwrite mode", states);
        let objects = Objects::from([("/a/1".into(), Some(0)), ("/a/label".into(), None)]);
        (Tree::new(vec![node], truncated, Toolkit::Gtk3), objects)
    }

    fn event(object: &str, change: Change) -> Event {
        Event {
            seq: 1,
            object: object.into(),
            change,
        }
    }

    #[test]
    fn a_node_that_announces_a_state_or_its_bounds_is_asked_once() {
        let (tree, objects) = tree(false);
        let ask = Verdict::Ask(vec![("/a/1".into(), 0)]);
        // Whatever the announcement says, even the value the tree holds.
        let said = [event("/a/1", Change::State)];
        assert_eq!(judge(&tree, &objects, &said), ask);
        let moved = [
            event("/a/1", Change::Bounds),
            event("/a/1", Change::State),
            event("/a/1", Change::Bounds),
        ];
        assert_eq!(judge(&tree, &objects, &moved), ask);
    }

    #[test]
    fn any_other_event_on_the_trees_objects_changes_it() {
        let (tree, objects) = tree(false);
        let then_other = [event("/a/1", Change::State), event("/a/1", Change::Other)];
        assert_eq!(judge(&tree, &objects, &then_other), Verdict::Changed);
        // A label a field is named by (or the application's root): even
        // its states and bounds count.
        for change in [Change::Other, Change::State, Change::Bounds] {
            let label = [event("/a/label", change)];
            assert_eq!(judge(&tree, &objects, &label), Verdict::Changed);
        }
        // A window of the application, wherever it is.
        let window = [event("/a/elsewhere", Change::Window)];
        assert_eq!(judge(&tree, &objects, &window), Verdict::Changed);
    }

    #[test]
    fn a_nodes_life_and_an_object_outside_the_tree_leave_it() {
        let (tree, objects) = tree(false);
        let lives = [event("/a/1", Change::Life), event("/a/label", Change::Life)];
        assert_eq!(judge(&tree, &objects, &lives), Verdict::Unchanged);
        let elsewhere = [
            event("/a/elsewhere", Change::Other),
            event("/a/elsewhere", Change::State),
            event(LONG_OBJECT, Change::Other),
        ];
        assert_eq!(judge(&tree, &objects, &elsewhere), Verdict::Unchanged);
    }

    #[test]
    fn in_a_tree_cut_short_every_event_changes_it() {
        let (tree, objects) = tree(true);
        let elsewhere = [event("/a/elsewhere", Change::Life)];
        assert_eq!(judge(&tree, &objects, &elsewhere), Verdict::Changed);
        assert_eq!(judge(&tree, &objects, &[]), Verdict::Unchanged);
    }
}
