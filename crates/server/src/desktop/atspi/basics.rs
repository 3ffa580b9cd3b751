//! What a walk asks of each node first: its role, name, description,
//! states and interfaces, and whether it has children at all.
//!
//! A walk is bound by the application answering one call at a time, so a
//! tree is read faster only by asking fewer calls. GTK 3, Chromium and
//! Firefox (through at-spi2-atk) and GTK 4 (through GDBus) answer
//! `Properties.GetAll` on the Accessible interface with the name, the
//! description and the child count in one answer, so a node costs one
//! call where it cost two, and a node without children (about half of
//! gedit's) is not asked for them. Qt is asked a call for each, as before:
//! a PyQt 6 form dropped off the bus without answering a `GetAll`
//! (measured once), and so are toolkits this server has not mapped.
//!
//! Measured with the `trees` benchmark (2026-12-07, this 2-core machine,
//! quiet, 3 rounds a run): gedit's 534 nodes cold in 51–56 ms against
//! 57–79 ms before; a GTK 3 grid of 10,008 nodes in 4.7–5.4 s. The
//! application's own cache (`Cache.GetItems`) was tried as well and is not
//! used: at-spi2-atk computes each item's index in its parent, so its
//! answer takes quadratic time in a wide container (4 s for that grid,
//! before the walk starts: 8.2–9.0 s in all), and Chromium's held only 236
//! of a page's 2,202 objects.
//! `tests/x11_tree_reads.rs` checks that a tree read this way is the tree
//! read node by node, on gedit, gnome-calculator, a Chromium page and a
//! Firefox page.

use std::collections::HashMap;

use atspi::proxy::accessible::AccessibleProxy;
use atspi::zbus::zvariant::OwnedValue;
use atspi::{InterfaceSet, ObjectRefOwned, StateSet, zbus};

use super::walk::proxy_of;

/// What a walk asks of a node first.
pub(super) struct Basics {
    pub role: String,
    pub name: String,
    pub description: String,
    pub states: StateSet,
    pub interfaces: InterfaceSet,
    /// `Some(0)` when the node says it has no children (they are then not
    /// asked); `None` when it did not say.
    pub child_count: Option<i32>,
}

/// How a walk asks: `all` when the toolkit answers `GetAll` as at-spi2-atk
/// does; `bounds` says of which nodes it asks the extents.
#[derive(Clone, Copy)]
pub(super) struct Asking {
    pub all: bool,
    pub bounds: BoundsOf,
}

/// Which nodes a walk asks for their extents.
///
/// A node GTK does not show has no place on the screen a person could
/// reach, and nothing acts on it (an action on it is refused as not
/// shown, see [`super::Toolkit::shown`]), so a GTK window's hidden nodes
/// are not asked for their extents and read as `(0, 0, 0, 0)`. Most of a
/// GTK window is hidden: of gedit's 536 nodes 31 are `showing` (the rest
/// are its menus' popovers and its side panel's other pages, counted with
/// pyatspi), so this is one call in six of a walk of gedit. A browser's
/// hidden elements (below the fold) keep their extents: where a page
/// element is, shown or not, is what a model needs to scroll to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BoundsOf {
    /// Every node with a Component.
    Every,
    /// Only those reading `showing` (GTK 3).
    Showing,
    /// Only those reading `showing` or `visible` (GTK 4, which never
    /// reports `showing`).
    ShowingOrVisible,
}

impl BoundsOf {
    /// Whether a node with `states` (named as the walk names them) is asked
    /// for its extents.
    pub(super) fn asks(self, states: &[String]) -> bool {
        let has = |name: &str| states.iter().any(|s| s == name);
        match self {
            Self::Every => true,
            Self::Showing => has("showing"),
            Self::ShowingOrVisible => has("showing") || has("visible"),
        }
    }
}

impl Asking {
    /// The node's basics: its role, states and interfaces asked, with its
    /// name, description and child count in one `GetAll` where the toolkit
    /// answers it; else (or when `GetAll` did not answer them) its name
    /// and description asked apart, and its child count not known.
    pub(super) async fn basics(
        self,
        conn: &zbus::Connection,
        proxy: &AccessibleProxy<'_>,
        object: &ObjectRefOwned,
    ) -> Basics {
        let all = async {
            if !self.all {
                return None;
            }
            let props: zbus::fdo::PropertiesProxy<'_> = proxy_of(conn, object).await?;
            let interface =
                zbus::names::InterfaceName::try_from("org.a11y.atspi.Accessible").ok()?;
            props.get_all(interface).await.ok()
        };
        let (all, role, states, interfaces) = tokio::join!(
            all,
            proxy.get_role_name(),
            proxy.get_state(),
            proxy.get_interfaces(),
        );
        let role = role.unwrap_or_default();
        let states = states.unwrap_or_default();
        let interfaces = interfaces.unwrap_or_default();
        if let Some(all) = all
            && let (Some(name), Some(description)) =
                (text_of(&all, "Name"), text_of(&all, "Description"))
        {
            return Basics {
                role,
                name,
                description,
                states,
                interfaces,
                child_count: all.get("ChildCount").and_then(|v| i32::try_from(v).ok()),
            };
        }
        let (name, description) = tokio::join!(proxy.name(), proxy.description());
        Basics {
            role,
            name: name.unwrap_or_default(),
            description: description.unwrap_or_default(),
            states,
            interfaces,
            child_count: None,
        }
    }
}

fn text_of(all: &HashMap<String, OwnedValue>, key: &str) -> Option<String> {
    all.get(key).and_then(|v| String::try_from(v.clone()).ok())
}
