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
mod basics;
mod cache;
mod direct;
mod events;
mod focus;
mod frame;
mod layout;
#[cfg(any(feature = "x11", feature = "wayland"))]
pub(crate) mod observe;
mod reach;
#[cfg(any(feature = "x11", feature = "wayland"))]
mod readback;
#[cfg(any(feature = "x11", feature = "wayland"))]
mod resolve;
pub(crate) mod revision;
mod roles;
mod toolkit;
mod tree;
mod trusted;
mod walk;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use atspi::AccessibilityConnection;
use atspi::proxy::proxy_ext::ProxyExt;

use crate::engine::Refusal;

pub use roles::{ax_role, is_field, is_secret};
pub use toolkit::Toolkit;
pub use tree::{Node, Source, Tree};

/// How long one observation or action may take, whole.
pub const DEADLINE: Duration = Duration::from_secs(10);
/// How long one whole read of a window's tree may take: the walk's limit
/// of time, sized for [`WALK_MAX_NODES`] (a cold 10,000-node GTK window
/// read in 5.3 s on a 2-core machine, its application answering most of
/// it), and still bounded by what the call has left of its budget.
pub const WALK_DEADLINE: Duration = Duration::from_secs(25);
/// The deepest tree `get_ui_tree` shows (upstream's cap).
pub const MAX_DEPTH: usize = 20;
/// How deep a tree is shown when no depth is asked for (upstream's
/// default).
pub const DEFAULT_DEPTH: usize = 10;
/// The most nodes one shown tree holds (upstream's cap).
pub const MAX_NODES: usize = 500;
/// The most nodes a window's tree may have for an element in it to be
/// found: every action resolves its element in the whole tree, not in
/// what is shown. A limit of memory and time (a 10,000-node tree fits),
/// not of what a model sees.
pub const WALK_MAX_NODES: usize = 20_000;
/// The deepest a window's tree is read for an action (a limit against a
/// tree that never ends, far below any real application's depth).
pub const WALK_MAX_DEPTH: usize = 96;

/// A connection to the accessibility bus, on a runtime of its own that runs
/// on a thread of its own: the desktops call it from any thread (a blocking
/// pool's, or an async one at start), and every call is bounded.
pub struct Accessibility {
    handle: tokio::runtime::Handle,
    bus: Arc<AccessibilityConnection>,
    /// The bus's address, as this session's launcher gave it.
    address: String,
    /// Trees kept while their applications send no event (`None` when the
    /// registry refused the events' registration).
    cache: Option<Arc<cache::Cache>>,
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

fn timed_out(what: &str, limit: Duration) -> Refusal {
    Refusal::new(
        "accessibility_timeout",
        format!(
            "{what}: the application did not answer within {} ms",
            limit.as_millis()
        ),
    )
}

/// Runs `work` on `handle`'s runtime and waits for it, at most
/// [`DEADLINE`] and never past the call's deadline
/// ([`crate::desktop::deadline`]); the caller's thread only waits on a channel, so this may be
/// called from inside another runtime.
fn run_bounded<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    what: &str,
    work: impl Future<Output = Result<T, Refusal>> + Send + 'static,
) -> Result<T, Refusal> {
    run_within(handle, what, DEADLINE, work)
}

/// [`run_bounded`] with the operation's own bound `per_operation`.
fn run_within<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    what: &str,
    per_operation: Duration,
    work: impl Future<Output = Result<T, Refusal>> + Send + 'static,
) -> Result<T, Refusal> {
    // The operation's own bound, or what the call has left (see
    // `deadline`): a call past its deadline starts nothing more.
    let limit = crate::desktop::deadline::bound(per_operation);
    if limit.is_zero() {
        return Err(Refusal::new(
            "accessibility_timeout",
            format!("{what}: not started, the call has used up its time"),
        ));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    handle.spawn(async move {
        let answer = tokio::time::timeout(limit, work).await;
        let _ = tx.send(answer);
    });
    match rx.recv_timeout(limit + Duration::from_millis(500)) {
        Ok(Ok(answer)) => answer,
        Ok(Err(_)) | Err(_) => Err(timed_out(what, limit)),
    }
}

impl Accessibility {
    /// Connects to the accessibility bus of this session (the session bus
    /// names it, and it must be the one the `trusted` module describes). Fails when
    /// there is no session bus, no accessibility bus or none to trust,
    /// within [`DEADLINE`].
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
            .map_err(|_| timed_out("start the accessibility runtime", DEADLINE))??;
        let bus = run_bounded(&handle, "connect to the accessibility bus", async {
            // Only the bus this session's launcher started, in a closed
            // directory of this user's own, not the home's (see `trusted`).
            let address = trusted::trusted_address().await?;
            let parsed = address
                .parse()
                .map_err(|e| failed("the accessibility bus's address cannot be read", e))?;
            AccessibilityConnection::from_address(parsed)
                .await
                .map(|bus| (bus, address))
                .map_err(|e| failed("the accessibility bus cannot be reached", e))
        })?;
        let (bus, address) = bus;
        let bus = Arc::new(bus);
        let events = Arc::clone(&bus);
        let cache = run_bounded(
            &handle,
            "register for the accessibility events",
            async move { Ok(cache::Cache::start(&events).await.map(Arc::new)) },
        )
        .ok()
        .flatten();
        Ok(Self {
            handle,
            bus,
            address,
            cache,
            _stop: stop,
        })
    }

    /// The accessibility bus's address, as this session's launcher gave it
    /// (and the `trusted` module checked it).
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The whole tree (up to [`WALK_MAX_NODES`] and [`WALK_MAX_DEPTH`]) of
    /// the window of process `pid` titled `title` whose frame has the
    /// display's `bounds` for that window.
    pub fn tree(&self, pid: u32, title: &str, bounds: Bounds) -> Result<Tree, Refusal> {
        self.read_tree(pid, title, bounds, true)
    }

    /// The same tree as [`Accessibility::tree`], each property of each node
    /// asked with a call of its own (no `GetAll`, children always asked)
    /// and no tree kept in memory used. For comparison (a test checks that
    /// both reads agree, and a benchmark may time both); an action always
    /// reads with [`Accessibility::tree`].
    pub fn tree_node_by_node(
        &self,
        pid: u32,
        title: &str,
        bounds: Bounds,
    ) -> Result<Tree, Refusal> {
        self.read_tree(pid, title, bounds, false)
    }

    fn read_tree(
        &self,
        pid: u32,
        title: &str,
        bounds: Bounds,
        fast: bool,
    ) -> Result<Tree, Refusal> {
        let bus = Arc::clone(&self.bus);
        let cache = self.cache.clone().filter(|_| fast);
        let title = title.to_owned();
        run_within(
            &self.handle,
            "read the window's tree",
            WALK_DEADLINE,
            async move {
                if let Some(cache) = &cache
                    && let Some(mut tree) =
                        cache.current(bus.connection(), pid, &title, bounds).await
                {
                    tree.source = tree::Source::Events;
                    return Ok(tree);
                }
                let (frame, toolkit) = frame(&bus, pid, &title, bounds).await?;
                let app = frame.name().map(|n| n.to_string());
                // The generation before the walk: an event during the walk makes
                // the next read walk again.
                let generation = match (&cache, &app) {
                    (Some(cache), Some(app)) => cache.generation(app).await,
                    _ => None,
                };
                let direct = direct::direct(bus.connection(), &frame, pid).await;
                let conn = direct.as_ref().unwrap_or(bus.connection());
                let asking = basics::Asking {
                    all: fast && toolkit.answers_get_all(),
                    bounds: toolkit.bounds_of(),
                };
                let walked = frame::walk_announced(conn, &frame, &toolkit, asking).await?;
                let objects = walked.objects;
                let tree = Tree::new(walked.nodes, walked.truncated, toolkit);
                if let (Some(cache), Some(app), Some(generation)) = (&cache, &app, generation) {
                    cache.keep((pid, &title, bounds), app, generation, &tree, objects);
                }
                Ok(tree)
            },
        )
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
            let proxies = reach::reached(&bus, pid, &title, bounds, &expected)
                .await?
                .proxies;
            let editable = proxies.editable_text().await.map_err(|_| {
                Refusal::new(
                    "element_not_editable",
                    format!(
                        "the {} {} offers no editable text to assistive technologies (Chromium's page fields offer none): nothing was written; write it with `type` after focusing it, which needs the foreground",
                        expected.role,
                        expected.id()
                    ),
                )
            })?;
            match editable.set_text_contents(&text).await {
                Ok(true) => Ok(()),
                // The call reached the application, which said no: what it
                // did is its own to say, so the outcome is unknown.
                Ok(false) => Err(Refusal::new(
                    "accessibility_call_failed",
                    format!(
                        "the {} {} refused the text; the effect may have happened",
                        expected.role,
                        expected.id()
                    ),
                )),
                Err(e) => Err(call_failed("set the text", e)),
            }
        })
    }

    /// Performs the node's press (its first action whose name
    /// `tree::is_press` accepts) through Action: no pointer event is
    /// sent.
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
            let proxies = reach::reached(&bus, pid, &title, bounds, &expected)
                .await?
                .proxies;
            let action = proxies.action().await.map_err(|_| no_press(&expected))?;
            let names = walk::action_names(&action)
                .await
                .map_err(|_| unreadable("the element's actions"))?;
            let index = names
                .iter()
                .position(|name| tree::is_press(name))
                .and_then(|i| i32::try_from(i).ok())
                .ok_or_else(|| no_press(&expected))?;
            match action.do_action(index).await {
                Ok(true) => Ok(()),
                Ok(false) => Err(Refusal::new(
                    "accessibility_call_failed",
                    format!(
                        "the {} {} refused the press; the effect may have happened",
                        expected.role,
                        expected.id()
                    ),
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
            // GTK 4 answers an end of -1 with no text: the end is asked as
            // the text's length.
            let length = text
                .character_count()
                .await
                .map_err(|_| unreadable("the element's text"))?;
            text.get_text(0, length)
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

pub use frame::Bounds;
use frame::{found_again, frame};

fn no_press(expected: &Node) -> Refusal {
    Refusal::new(
        "element_not_pressable",
        format!(
            "the {} {} offers no press (click, press, activate, check, uncheck, toggle or jump)",
            expected.role,
            expected.id()
        ),
    )
}
