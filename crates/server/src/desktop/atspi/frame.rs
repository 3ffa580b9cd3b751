//! Which accessible frame is a window of the display, and a node found
//! again in it: a frame is named by its process and its place, never by
//! its title alone (any X client may set another's), and where two frames
//! could be the window the lookup fails closed.

use atspi::proxy::accessible::{AccessibleProxy, ObjectRefExt};
use atspi::proxy::proxy_ext::ProxyExt;
use atspi::{AccessibilityConnection, ObjectRefOwned, zbus};

use super::{Node, Toolkit, failed, tree, unavailable, unreadable};
use crate::engine::Refusal;

/// A window's bounds on the display: `(x, y, width, height)`.
pub type Bounds = (i64, i64, u32, u32);

/// How far a frame's extents may lie from the display's bounds for its
/// window (a window manager's decorations), in pixels.
const FRAME_TOLERANCE_PX: i64 = 64;

/// Whether a frame's extents are the display's window: the title a client
/// sets on a window is not enough to name a frame (any X client may set
/// it), so the frame must also be where the window is.
fn same_place(extents: (i32, i32, i32, i32), bounds: Bounds) -> bool {
    let (x, y, w, h) = extents;
    let (bx, by, bw, bh) = bounds;
    let near = |a: i64, b: i64| (a - b).abs() <= FRAME_TOLERANCE_PX;
    near(i64::from(x), bx)
        && near(i64::from(y), by)
        && near(i64::from(w), i64::from(bw))
        && near(i64::from(h), i64::from(bh))
}

/// The frame of the application whose process is `pid`, titled `title`,
/// where the display shows that window (`bounds`), and the application's
/// toolkit: exactly one, or a refusal.
///
/// The title alone names nothing (any X client may set another's), so a
/// frame is found by its place first: every frame of the process at the
/// window's place is a candidate, whatever its name. Two or more there
/// (two windows of one size at one place) cannot be told apart by
/// anything another client cannot set, and the lookup fails closed; the
/// one candidate must then also carry the window's title.
pub(super) async fn frame(
    bus: &AccessibilityConnection,
    pid: u32,
    title: &str,
    bounds: Bounds,
) -> Result<(ObjectRefOwned, Toolkit), Refusal> {
    let conn = bus.connection();
    let root = bus
        .root_accessible_on_registry()
        .await
        .map_err(|e| failed("the accessibility registry", e))?;
    let dbus = zbus::fdo::DBusProxy::new(conn)
        .await
        .map_err(|e| failed("the session bus", e))?;
    let mut frames: Vec<(ObjectRefOwned, bool, Toolkit)> = Vec::new();
    for app in root
        .get_children()
        .await
        .map_err(|e| failed("the applications", e))?
    {
        let Some(name) = app.name().map(|n| n.to_string()) else {
            continue;
        };
        let Ok(bus_name) = zbus::names::BusName::try_from(name.as_str()) else {
            continue;
        };
        match dbus.get_connection_unix_process_id(bus_name).await {
            Ok(owner) if owner == pid => {}
            _ => continue,
        }
        let Ok(app) = app.into_accessible_proxy(conn).await else {
            continue;
        };
        let toolkit = match app.proxies().await {
            Ok(proxies) => match proxies.application().await {
                Ok(application) => {
                    let (name, version) =
                        tokio::join!(application.toolkit_name(), application.version());
                    Toolkit::from_names(&name.unwrap_or_default(), &version.unwrap_or_default())
                }
                Err(_) => Toolkit::Other(String::new()),
            },
            Err(_) => Toolkit::Other(String::new()),
        };
        for window in app.get_children().await.unwrap_or_default() {
            let Ok(proxy) = window.as_accessible_proxy(conn).await else {
                continue;
            };
            // A window not shown (a dialog hidden for later, a closed
            // popover) is no candidate: a person sees none of it.
            let shown = proxy.get_state().await.is_ok_and(|states| {
                states.contains(atspi::State::Showing) || states.contains(atspi::State::Visible)
            });
            if !shown {
                continue;
            }
            let Ok(proxies) = proxy.proxies().await else {
                continue;
            };
            let Ok(component) = proxies.component().await else {
                continue;
            };
            if component
                .get_extents(atspi::CoordType::Screen)
                .await
                .is_ok_and(|extents| same_place(extents, bounds))
            {
                // A frame with no name (gtk3-widget-factory's) has no title
                // to compare: its place names it, as for every frame.
                let titled = proxy.name().await.is_ok_and(|n| n == title || n.is_empty());
                frames.push((window, titled, toolkit.clone()));
            }
        }
    }
    match frames.len() {
        1 => match frames.remove(0) {
            (frame, true, toolkit) => Ok((frame, toolkit)),
            (_, false, _) => Err(Refusal::with_details(
                "ambiguous_target",
                format!(
                    "the accessible window of process {pid} at the window's place does not carry the window's title: the title was changed by another client, or the window is not the one the application shows there"
                ),
                serde_json::json!({ "cause": "title_differs" }),
            )),
        },
        0 => Err(unavailable(format!(
            "no accessible window of process {pid} at the window's place"
        ))),
        n => Err(Refusal::with_details(
            "ambiguous_target",
            format!(
                "{n} accessible windows of process {pid} are at the window's place: nothing another client cannot set tells them apart, so none is acted on"
            ),
            serde_json::json!({ "cause": "windows_at_one_place", "count": n }),
        )),
    }
}

/// The node `expected` names, found again by its path below the window,
/// with the same AT-SPI role and (unless its label came from the layout)
/// the same name.
pub(super) async fn found_again<'c>(
    bus: &'c AccessibilityConnection,
    pid: u32,
    title: &str,
    bounds: Bounds,
    expected: &Node,
) -> Result<AccessibleProxy<'c>, Refusal> {
    found_again_under(bus, pid, title, bounds, expected)
        .await
        .map(|(_, node)| node)
}

/// [`found_again`], with the node's ancestors from the frame down (the
/// frame first, its parent last).
pub(super) async fn found_again_under<'c>(
    bus: &'c AccessibilityConnection,
    pid: u32,
    title: &str,
    bounds: Bounds,
    expected: &Node,
) -> Result<(Vec<AccessibleProxy<'c>>, AccessibleProxy<'c>), Refusal> {
    let conn = bus.connection();
    let gone = || Refusal::new("stale_target", "the element is gone");
    let mut node = frame(bus, pid, title, bounds)
        .await?
        .0
        .into_accessible_proxy(conn)
        .await
        .map_err(|_| unreadable("the window"))?;
    let mut above = Vec::with_capacity(expected.path.len());
    for index in &expected.path {
        let child = i32::try_from(*index).map_err(|_| gone())?;
        let next = node.get_child_at_index(child).await.map_err(|_| gone())?;
        let next = next.into_accessible_proxy(conn).await.map_err(|_| gone())?;
        above.push(std::mem::replace(&mut node, next));
    }
    let role = node.get_role_name().await.map_err(|_| gone())?;
    let name = tree::capped(node.name().await.unwrap_or_default(), tree::MAX_LABEL_CHARS);
    // The node's own name as the walk read it (a label taken from a
    // relation, the layout or its content was checked on that walk).
    if role != expected.atspi_role || name != expected.name {
        let what = if role != expected.atspi_role {
            "role"
        } else {
            "name"
        };
        return Err(Refusal::with_details(
            "stale_target",
            format!(
                "the element changed: the {} {} has another {what} than when it was resolved",
                expected.role,
                expected.id()
            ),
            serde_json::json!({ "changed": "element", "elementId": expected.id(), "what": what }),
        ));
    }
    Ok((above, node))
}

/// Chromium (and Electron) keeps its window's contents from the bus
/// until an assistive technology reads one of its objects' attributes, as
/// a screen reader does; a Chromium started without
/// `--force-renderer-accessibility` then exposes its pages like one
/// started with it (measured on Debian 12's Chromium: the frame's only
/// child is a null reference before `GetAttributes` and the browser's
/// view after it). The server reads the frame's attributes before each
/// walk of a Chromium window and says so in the tree's answer
/// (`accessibilityTurnedOn`); the browser keeps its accessibility on for
/// as long as it runs, so a read changes it, as any screen reader's does.
/// Nothing it answers is used, and it is given [`ANNOUNCE_WAIT`] at most
/// (a frame that does not answer is then walked, and refused
/// `accessibility_off` if it shows no page).
pub(super) async fn announce(conn: &zbus::Connection, frame: &ObjectRefOwned, toolkit: &Toolkit) {
    if *toolkit != Toolkit::Chromium {
        return;
    }
    if let Ok(proxy) = frame.clone().into_accessible_proxy(conn).await {
        let _ = tokio::time::timeout(ANNOUNCE_WAIT, proxy.get_attributes()).await;
    }
}

/// How long the frame's attributes are waited for before a walk of a
/// Chromium window (it answers in a few milliseconds).
const ANNOUNCE_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Announces the reader to the frame's application ([`announce`]) and
/// walks its window. Chromium builds its page's tree a moment after the
/// first read turns its accessibility on (measured on Chromium 156 and
/// this 2-core machine: the walk right after the read found the
/// browser's 227 nodes and no page; the next, 0.8 s after the read, the
/// page's 2,212), so a Chromium window that shows no page is walked
/// again every [`PAGE_POLL`] for [`PAGE_WAIT`] at most before its tree is
/// taken as it is (and then refused `accessibility_off` by its
/// toolkit). Any other toolkit is walked once.
pub(super) async fn walk_announced(
    conn: &zbus::Connection,
    frame: &ObjectRefOwned,
    toolkit: &Toolkit,
    asking: super::basics::Asking,
) -> Result<super::walk::Walked, Refusal> {
    use super::{WALK_MAX_DEPTH, WALK_MAX_NODES, walk::walk};
    announce(conn, frame, toolkit).await;
    // The application's root: a window opened or closed is announced on
    // it (a tree without it is never kept, see `cache`).
    let root = match frame.clone().into_accessible_proxy(conn).await {
        Ok(proxy) => proxy.parent().await.ok().map(|r| r.path().to_string()),
        Err(_) => None,
    };
    let started = tokio::time::Instant::now();
    loop {
        let mut walked = walk(conn, frame.clone(), asking, WALK_MAX_DEPTH, WALK_MAX_NODES).await?;
        let hidden = toolkit.contents_hidden(&walked.nodes).is_some();
        if !hidden || started.elapsed() >= PAGE_WAIT {
            let root = root.unwrap_or_else(|| super::events::LONG_OBJECT.to_owned());
            walked.objects.entry(root).or_insert(None);
            return Ok(walked);
        }
        tokio::time::sleep(PAGE_POLL).await;
    }
}

/// How long a just-announced Chromium window is read again for its page.
const PAGE_WAIT: std::time::Duration = std::time::Duration::from_secs(3);
/// How often a Chromium window without its page is read again.
const PAGE_POLL: std::time::Duration = std::time::Duration::from_millis(150);
