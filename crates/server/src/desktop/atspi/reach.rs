//! Whether an element of a web page is one a person can see and reach.
//!
//! A page's author decides what a person sees, and a page can show one
//! button while its tree holds another. A button clipped by its container
//! or placed off the page reads as not `showing` and is refused already;
//! but a button covered by another element, or shrunk to a pixel, still
//! reads `showing` in Chromium and in Firefox (measured), and pressing it
//! through the bus would act on something no one saw. So before an element
//! inside a web document is pressed or written, it must be at least
//! [`MIN_SIDE_PX`] on each side, and the browser's own hit test at its
//! centre (what a person's pointer would reach there) must land on it or
//! on something inside it. Otherwise nothing is sent.
//!
//! Extents and the hit test are both in the window's own coordinates:
//! on Wayland a client knows no screen coordinates (Firefox answers -1
//! there), and the window's are the same on X11.
//!
//! Not seen by this: an element made transparent (`opacity: 0`), which
//! neither browser reports on the bus (its alpha reads 1.0); and elements
//! outside web documents, whose toolkits draw what their tree says.

use atspi::CoordType;
use atspi::proxy::accessible::{AccessibleProxy, ObjectRefExt};
use atspi::proxy::proxy_ext::{Proxies, ProxyExt};
use atspi::{AccessibilityConnection, Role, zbus};

use super::frame::{Bounds, found_again_under};
use super::{Node, unreadable};
use crate::engine::Refusal;

/// The smallest side of an element a person can be said to see, in
/// pixels.
pub const MIN_SIDE_PX: i32 = 3;

/// How many steps down a hit test is followed (each asks the element hit
/// for what is at the point inside it).
const MAX_HITS: usize = 64;

/// How far up from the element hit its owner is looked for.
const MAX_ANCESTORS: usize = 32;

/// How many times a hit test that reached only the document is asked
/// again, and how long apart (a second in all).
const BLANK_RETRIES: usize = 20;
const BLANK_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// Refuses an element of a web document (one of `above`, its ancestors
/// from the frame down, is the document) that is too small to see or
/// whose centre another element covers. Elements outside web documents
/// pass unchecked.
pub(super) async fn reachable(
    conn: &zbus::Connection,
    above: &[AccessibleProxy<'_>],
    node: &AccessibleProxy<'_>,
    expected: &Node,
) -> Result<(), Refusal> {
    let mut document = None;
    for ancestor in above.iter().rev() {
        if matches!(
            ancestor.get_role().await,
            Ok(Role::DocumentWeb | Role::DocumentFrame)
        ) {
            document = Some(ancestor);
            break;
        }
    }
    let Some(document) = document else {
        return Ok(());
    };
    let unseen = |cause: &str, message: String, details: serde_json::Value| {
        let mut details = details;
        details["cause"] = cause.into();
        details["elementId"] = expected.id().into();
        Refusal::with_details("element_not_actionable", message, details)
    };
    let (x, y, width, height) = component(node)
        .await?
        .get_extents(CoordType::Window)
        .await
        .map_err(|_| unreadable("the element's extents"))?;
    if width < 0 || height < 0 {
        // Firefox answers -1 for an element its layout has not placed yet.
        return Err(Refusal::with_details(
            "stale_target",
            format!(
                "the page has not placed the {} {} yet (it is still laying out): nothing was sent; observe again",
                expected.role,
                expected.id()
            ),
            serde_json::json!({ "changed": "element", "elementId": expected.id(), "what": "extents" }),
        ));
    }
    if width < MIN_SIDE_PX || height < MIN_SIDE_PX {
        return Err(unseen(
            "too_small",
            format!(
                "the {} {} is {width} × {height} px on the page, too small for a person to see: nothing was sent",
                expected.role,
                expected.id()
            ),
            serde_json::json!({ "width": width, "height": height }),
        ));
    }
    let (cx, cy) = (x + width / 2, y + height / 2);
    // Firefox's hit test can answer the document itself for a while
    // after the page is laid out (measured on a text field, and on a
    // button just scrolled to): nothing at all is asked again, briefly;
    // an element answered is taken at once.
    let mut hit = deepest_at(conn, document, cx, cy).await?;
    for _ in 0..BLANK_RETRIES {
        if !same(&hit, document) {
            break;
        }
        tokio::time::sleep(BLANK_PAUSE).await;
        hit = deepest_at(conn, document, cx, cy).await?;
    }
    if !within(conn, &hit, node, document).await {
        let role = hit.get_role_name().await.unwrap_or_default();
        return Err(unseen(
            "covered",
            format!(
                "the {} {} is covered at its centre by another element of the page (a {role}), so a person does not see it there: nothing was sent",
                expected.role,
                expected.id()
            ),
            serde_json::json!({ "coveredBy": role }),
        ));
    }
    Ok(())
}

async fn component<'a>(
    node: &AccessibleProxy<'a>,
) -> Result<atspi::proxy::component::ComponentProxy<'a>, Refusal> {
    node.proxies()
        .await
        .map_err(|_| unreadable("the element"))?
        .component()
        .await
        .map_err(|_| unreadable("the element's extents"))
}

/// What the browser's hit test reaches at `(x, y)` in the window, from the
/// document down: each element hit is asked again for what is at the
/// point inside it, until it answers nothing or itself.
async fn deepest_at<'c>(
    conn: &'c zbus::Connection,
    document: &AccessibleProxy<'c>,
    x: i32,
    y: i32,
) -> Result<AccessibleProxy<'c>, Refusal> {
    let mut current = document.clone();
    for _ in 0..MAX_HITS {
        let Ok(component) = component(&current).await else {
            break;
        };
        let hit = component
            .get_accessible_at_point(x, y, CoordType::Window)
            .await
            .map_err(|_| unreadable("what the page shows at the element"))?;
        if nothing(&hit) {
            break;
        }
        let next = hit
            .into_accessible_proxy(conn)
            .await
            .map_err(|_| unreadable("what the page shows at the element"))?;
        if same(&next, &current) {
            break;
        }
        current = next;
    }
    Ok(current)
}

/// Whether `hit` is `node` or inside it: its ancestors are followed up to
/// the `document` at most.
async fn within(
    conn: &zbus::Connection,
    hit: &AccessibleProxy<'_>,
    node: &AccessibleProxy<'_>,
    document: &AccessibleProxy<'_>,
) -> bool {
    let mut current = hit.clone();
    for _ in 0..MAX_ANCESTORS {
        if same(&current, node) {
            return true;
        }
        if same(&current, document) {
            return false;
        }
        let Ok(parent) = current.parent().await else {
            return false;
        };
        if nothing(&parent) {
            return false;
        }
        match parent.into_accessible_proxy(conn).await {
            Ok(next) => current = next,
            Err(_) => return false,
        }
    }
    false
}

/// A reference to no object: AT-SPI's null path (which some applications
/// send with a bus name), or no bus name. A proxy to either is never
/// built: a call with an empty destination is a protocol error, for which
/// the bus drops the whole connection.
fn nothing(object: &atspi::ObjectRefOwned) -> bool {
    object.is_null()
        || object.path_as_str() == "/org/a11y/atspi/null"
        || object.name_as_str().is_none_or(str::is_empty)
}

/// The same accessible object: the same bus name and object path.
fn same(a: &AccessibleProxy<'_>, b: &AccessibleProxy<'_>) -> bool {
    let (a, b) = (a.inner(), b.inner());
    a.destination() == b.destination() && a.path() == b.path()
}

/// The element `expected` names, found again under its window (see
/// `frame::found_again_under`) and reachable there (see [`reachable`]),
/// with the proxies of its interfaces: where every element action that
/// acts on one element starts.
pub(super) struct Reached<'c> {
    /// Its ancestors, the window's frame first.
    pub above: Vec<AccessibleProxy<'c>>,
    /// The element.
    pub node: AccessibleProxy<'c>,
    /// Its interfaces, ready to act through.
    pub proxies: Proxies<'c>,
}

/// Finds `expected` again and checks it reachable (see [`Reached`]).
pub(super) async fn reached<'c>(
    bus: &'c AccessibilityConnection,
    pid: u32,
    title: &str,
    bounds: Bounds,
    expected: &Node,
) -> Result<Reached<'c>, Refusal> {
    let (above, node) = found_again_under(bus, pid, title, bounds, expected).await?;
    reachable(bus.connection(), &above, &node, expected).await?;
    let proxies = node
        .proxies()
        .await
        .map_err(|_| unreadable("the element"))?;
    Ok(Reached {
        above,
        node,
        proxies,
    })
}
