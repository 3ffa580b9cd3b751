//! The accessibility layer of the Linux desktops: applications, not pixels.
//!
//! AT-SPI2 is D-Bus, not X: the same layer serves the X11 desktop and, later,
//! a Wayland one. A window of the display is mapped to its AT-SPI
//! application by process id and to its frame by title; where either is
//! ambiguous the lookup fails closed. Every call runs under one deadline, so
//! a modal dialog or a hung application makes an observation or an action
//! fail with a typed refusal (`accessibility_timeout`), never hang the
//! server.
//!
//! Actions go through the application's own interfaces (EditableText for
//! text, Action for presses): no input event is sent and no focus is taken.
//! A node is addressed by its path of child indices from the frame, and
//! found again by that path at execute, where its role and label must still
//! be what the preview saw.

// The element tools a desktop serves; only a desktop (X11, Wayland) uses them.
#[cfg(any(feature = "x11", feature = "wayland"))]
pub(crate) mod actions;
mod roles;
mod tree;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use atspi::proxy::accessible::{AccessibleProxy, ObjectRefExt};
use atspi::proxy::proxy_ext::ProxyExt;
use atspi::{AccessibilityConnection, ObjectRefOwned, zbus};

use crate::engine::Refusal;

pub use roles::{ax_role, is_field, is_secret};
pub use tree::{Node, Tree};

/// How long one observation or action may take, whole.
pub const DEADLINE: Duration = Duration::from_secs(10);
/// The deepest tree `get_ui_tree` walks (upstream's cap).
pub const MAX_DEPTH: usize = 20;
/// How deep a tree is walked when no depth is asked for (upstream's
/// default), and always for the tree a revision and a target are taken
/// from.
pub const DEFAULT_DEPTH: usize = 10;
/// The most nodes one tree holds (upstream's cap).
pub const MAX_NODES: usize = 500;

/// A connection to the accessibility bus, on a runtime of its own that runs
/// on a thread of its own: the desktops call it from any thread (a blocking
/// pool's, or an async one at start), and every call is bounded.
pub struct Accessibility {
    handle: tokio::runtime::Handle,
    bus: Arc<AccessibilityConnection>,
    /// Ends the runtime's thread when this is dropped.
    _stop: tokio::sync::oneshot::Sender<()>,
}

fn unavailable(message: impl Into<String>) -> Refusal {
    Refusal::new("accessibility_unavailable", message)
}

fn failed(what: &str, err: impl std::fmt::Display) -> Refusal {
    Refusal::new("accessibility_unavailable", format!("{what}: {err}"))
}

/// An application's object could not be read (its interfaces, actions,
/// text): the application's own error text is not repeated, since it is
/// the application's words and could be anything.
fn unreadable(what: &str) -> Refusal {
    Refusal::new(
        "accessibility_unavailable",
        format!("{what}: the application did not answer as AT-SPI describes"),
    )
}

/// The call reached the application and failed there (or its answer was
/// lost): the effect may have happened.
fn call_failed(what: &str, _err: impl std::fmt::Display) -> Refusal {
    // The application's own error text is not repeated: it is the
    // application's words, not this server's.
    Refusal::new(
        "accessibility_call_failed",
        format!("{what}: the application answered with an error; the effect may have happened"),
    )
}

fn timed_out(what: &str) -> Refusal {
    Refusal::new(
        "accessibility_timeout",
        format!(
            "{what}: the application did not answer within {} ms",
            DEADLINE.as_millis()
        ),
    )
}

/// Runs `work` on `handle`'s runtime and waits for it, at most
/// [`DEADLINE`]; the caller's thread only waits on a channel, so this may be
/// called from inside another runtime.
fn run_bounded<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    what: &str,
    work: impl Future<Output = Result<T, Refusal>> + Send + 'static,
) -> Result<T, Refusal> {
    let (tx, rx) = std::sync::mpsc::channel();
    handle.spawn(async move {
        let answer = tokio::time::timeout(DEADLINE, work).await;
        let _ = tx.send(answer);
    });
    match rx.recv_timeout(DEADLINE + Duration::from_millis(500)) {
        Ok(Ok(answer)) => answer,
        Ok(Err(_)) | Err(_) => Err(timed_out(what)),
    }
}

impl Accessibility {
    /// Connects to the accessibility bus of this session (the session bus
    /// names it). Fails when there is no session bus or no accessibility
    /// bus, within [`DEADLINE`].
    pub fn connect() -> Result<Self, Refusal> {
        let (handle_tx, handle_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("atspi".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(err) => {
                        let _ = handle_tx
                            .send(Err(failed("cannot start the accessibility runtime", err)));
                        return;
                    }
                };
                let _ = handle_tx.send(Ok(runtime.handle().clone()));
                runtime.block_on(async {
                    let _ = stopped.await;
                });
            })
            .map_err(|e| failed("cannot start the accessibility thread", e))?;
        let handle = handle_rx
            .recv_timeout(DEADLINE)
            .map_err(|_| timed_out("start the accessibility runtime"))??;
        let bus = run_bounded(&handle, "connect to the accessibility bus", async {
            AccessibilityConnection::new()
                .await
                .map_err(|e| failed("the accessibility bus cannot be reached", e))
        })?;
        Ok(Self {
            handle,
            bus: Arc::new(bus),
            _stop: stop,
        })
    }

    /// The tree of the window of process `pid` titled `title` whose
    /// frame has the display's `bounds` for that window.
    pub fn tree(
        &self,
        pid: u32,
        title: &str,
        bounds: Bounds,
        max_depth: usize,
    ) -> Result<Tree, Refusal> {
        let bus = Arc::clone(&self.bus);
        let title = title.to_owned();
        run_bounded(&self.handle, "get_ui_tree", async move {
            let frame = frame(&bus, pid, &title, bounds).await?;
            tree::walk(bus.connection(), frame, max_depth.min(MAX_DEPTH), MAX_NODES).await
        })
    }

    /// Sets the text of the editable node `expected` names (found again by
    /// its path; it must still have its role and label) through
    /// EditableText: no key is sent and focus is not taken.
    pub fn set_text(
        &self,
        pid: u32,
        title: &str,
        bounds: Bounds,
        expected: &Node,
        text: &str,
    ) -> Result<(), Refusal> {
        let bus = Arc::clone(&self.bus);
        let (title, expected, text) = (title.to_owned(), expected.clone(), text.to_owned());
        run_bounded(&self.handle, "set_value", async move {
            let node = found_again(&bus, pid, &title, bounds, &expected).await?;
            let proxies = node
                .proxies()
                .await
                .map_err(|_| unreadable("the element"))?;
            let editable = proxies.editable_text().await.map_err(|_| {
                Refusal::new(
                    "element_not_editable",
                    format!(
                        "{} {:?} offers no editable text",
                        expected.role, expected.label
                    ),
                )
            })?;
            match editable.set_text_contents(&text).await {
                Ok(true) => Ok(()),
                Ok(false) => Err(Refusal::new(
                    "element_not_editable",
                    format!("{} {:?} refused the text", expected.role, expected.label),
                )),
                Err(e) => Err(call_failed("set the text", e)),
            }
        })
    }

    /// Performs the node's press (its first action named `click`, `press`
    /// or `activate`) through Action: no pointer event is sent.
    pub fn press(
        &self,
        pid: u32,
        title: &str,
        bounds: Bounds,
        expected: &Node,
    ) -> Result<(), Refusal> {
        let bus = Arc::clone(&self.bus);
        let (title, expected) = (title.to_owned(), expected.clone());
        run_bounded(&self.handle, "press_button", async move {
            let node = found_again(&bus, pid, &title, bounds, &expected).await?;
            let proxies = node
                .proxies()
                .await
                .map_err(|_| unreadable("the element"))?;
            let action = proxies.action().await.map_err(|_| no_press(&expected))?;
            let actions = action
                .get_actions()
                .await
                .map_err(|_| unreadable("the element's actions"))?;
            let index = actions
                .iter()
                .position(|a| tree::is_press(&a.name))
                .ok_or_else(|| no_press(&expected))?;
            let index = i32::try_from(index).map_err(|_| no_press(&expected))?;
            match action.do_action(index).await {
                Ok(true) => Ok(()),
                Ok(false) => Err(Refusal::new(
                    "element_action_failed",
                    format!("{} {:?} refused the press", expected.role, expected.label),
                )),
                Err(e) => Err(call_failed("press the element", e)),
            }
        })
    }

    /// The text of the node `expected` names, read back through its own
    /// application: what the application now holds, not what was sent.
    pub fn read_text(
        &self,
        pid: u32,
        title: &str,
        bounds: Bounds,
        expected: &Node,
    ) -> Result<String, Refusal> {
        let bus = Arc::clone(&self.bus);
        let (title, expected) = (title.to_owned(), expected.clone());
        run_bounded(&self.handle, "read the value back", async move {
            let node = found_again(&bus, pid, &title, bounds, &expected).await?;
            let proxies = node
                .proxies()
                .await
                .map_err(|_| unreadable("the element"))?;
            let text = proxies
                .text()
                .await
                .map_err(|_| unreadable("the element's text"))?;
            text.get_text(0, -1)
                .await
                .map_err(|_| unreadable("the element's text"))
        })
    }
}

impl Accessibility {
    /// Where the caret of the text node `expected` is drawn, as its own
    /// application reports it: the screen extents of the character at the
    /// caret's offset (`(x, y, width, height)`; the caret is drawn at its
    /// left edge, and at the end of the text the width is 0). `None` when
    /// the node has no text or no caret.
    pub fn caret(
        &self,
        pid: u32,
        title: &str,
        bounds: Bounds,
        expected: &Node,
    ) -> Result<Option<(i32, i32, i32, i32)>, Refusal> {
        let bus = Arc::clone(&self.bus);
        let (title, expected) = (title.to_owned(), expected.clone());
        run_bounded(&self.handle, "find the caret", async move {
            let node = found_again(&bus, pid, &title, bounds, &expected).await?;
            let Ok(proxies) = node.proxies().await else {
                return Ok(None);
            };
            let Ok(text) = proxies.text().await else {
                return Ok(None);
            };
            let Ok(offset) = text.caret_offset().await else {
                return Ok(None);
            };
            if offset < 0 {
                return Ok(None);
            }
            Ok(text
                .get_character_extents(offset, atspi::CoordType::Screen)
                .await
                .ok()
                .filter(|&(_, _, width, height)| width >= 0 && height > 0))
        })
    }
}

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
/// where the display shows that window (`bounds`): exactly one, or a
/// refusal.
async fn frame(
    bus: &AccessibilityConnection,
    pid: u32,
    title: &str,
    bounds: Bounds,
) -> Result<ObjectRefOwned, Refusal> {
    let conn = bus.connection();
    let root = bus
        .root_accessible_on_registry()
        .await
        .map_err(|e| failed("the accessibility registry", e))?;
    let dbus = zbus::fdo::DBusProxy::new(conn)
        .await
        .map_err(|e| failed("the session bus", e))?;
    let mut frames = Vec::new();
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
        for window in app.get_children().await.unwrap_or_default() {
            let Ok(proxy) = window.as_accessible_proxy(conn).await else {
                continue;
            };
            if !proxy.name().await.is_ok_and(|n| n == title) {
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
                frames.push(window);
            }
        }
    }
    match frames.len() {
        1 => Ok(frames.remove(0)),
        0 => Err(unavailable(format!(
            "no accessible window of process {pid} with the window's title and place"
        ))),
        n => Err(Refusal::new(
            "ambiguous_target",
            format!("{n} accessible windows of process {pid} have the window's title and place"),
        )),
    }
}

/// The node `expected` names, found again by its path below the window,
/// with the same AT-SPI role and (unless its label came from the layout)
/// the same name.
async fn found_again<'c>(
    bus: &'c AccessibilityConnection,
    pid: u32,
    title: &str,
    bounds: Bounds,
    expected: &Node,
) -> Result<AccessibleProxy<'c>, Refusal> {
    let conn = bus.connection();
    let gone = || Refusal::new("stale_target", "the element is gone");
    let mut node = frame(bus, pid, title, bounds)
        .await?
        .into_accessible_proxy(conn)
        .await
        .map_err(|_| unreadable("the window"))?;
    for index in &expected.path {
        let child = i32::try_from(*index).map_err(|_| gone())?;
        let next = node.get_child_at_index(child).await.map_err(|_| gone())?;
        node = next.into_accessible_proxy(conn).await.map_err(|_| gone())?;
    }
    let role = node.get_role_name().await.map_err(|_| gone())?;
    let name = node.name().await.unwrap_or_default();
    // A label taken from a relation or the layout was checked on the walk
    // just before; the node itself must still be unnamed.
    let name_holds = if expected.labelled_apart {
        name.is_empty()
    } else {
        name == expected.label
    };
    if role != expected.atspi_role || !name_holds {
        return Err(Refusal::new(
            "stale_target",
            format!(
                "the element changed: expected {} {:?}, found another",
                expected.role, expected.label
            ),
        ));
    }
    Ok(node)
}

fn no_press(expected: &Node) -> Refusal {
    Refusal::new(
        "element_not_pressable",
        format!(
            "{} {:?} offers no click, press or activate action",
            expected.role, expected.label
        ),
    )
}
