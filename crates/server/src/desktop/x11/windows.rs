//! The windows of an X11 display, read from the X server: which windows a
//! person sees (the mapped children of the root, or for a window manager's
//! frame the client inside it, found by `QueryTree`, never from a list a
//! client could write), and for each its app id (`WM_CLASS`), the process
//! that owns it (the X server's own record, through the X-Resource
//! extension, not the window's `_NET_WM_PID` claim), its title
//! (`_NET_WM_NAME`, else `WM_NAME`), bounds and focus.
//!
//! X11 gives no trusted app identity: any client may set `WM_CLASS` on any
//! window. What the server itself knows (which client owns a window, that
//! client's process, the window tree) is what the checks rest on; what a
//! client claims is shown, bounded in size, and never trusted for more.

use serde_json::{Value, json};
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{
    Atom, AtomEnum, ConnectionExt as _, MapState, Window as XWindow, WindowClass,
};
use x11rb::rust_connection::RustConnection;

use crate::engine::Refusal;
use adk_computer_use::digest::sha256_hex;

/// The atoms this backend reads, interned once.
#[derive(Debug, Clone, Copy)]
pub(super) struct Atoms {
    pub net_wm_name: Atom,
    pub utf8_string: Atom,
    pub clipboard: Atom,
    pub incr: Atom,
    pub readback: Atom,
}

impl Atoms {
    pub(super) fn intern(conn: &RustConnection) -> Result<Self, String> {
        let atom = |name: &str| -> Result<Atom, String> {
            conn.intern_atom(false, name.as_bytes())
                .map_err(|e| e.to_string())?
                .reply()
                .map(|r| r.atom)
                .map_err(|e| e.to_string())
        };
        Ok(Self {
            net_wm_name: atom("_NET_WM_NAME")?,
            utf8_string: atom("UTF8_STRING")?,
            clipboard: atom("CLIPBOARD")?,
            incr: atom("INCR")?,
            readback: atom("ADK_COMPUTER_USE_READBACK")?,
        })
    }
}

/// One window as the display shows it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct WindowRecord {
    /// The client window's id.
    pub id: u32,
    /// The class part of `WM_CLASS` (`XTerm`, `Xmessage`).
    pub app_id: String,
    /// The instance part of `WM_CLASS` (`xterm`, `xmessage`).
    pub instance: String,
    /// The process of the client that owns the window, as the X server
    /// records it (local clients only).
    pub pid: Option<u32>,
    /// `_NET_WM_NAME`, else `WM_NAME`.
    pub title: String,
    /// Position on the screen and size.
    pub bounds: (i64, i64, u32, u32),
    /// The window that holds the input focus is this one or inside it.
    pub focused: bool,
}

impl WindowRecord {
    /// Upstream's window record (what any X client can set is marked as
    /// the application's words).
    pub(super) fn to_json(&self, display_id: u64, screen: (u16, u16)) -> Value {
        crate::desktop::real::WindowRecordJson {
            id: u64::from(self.id),
            app_id: &self.app_id,
            display_name: &self.instance,
            title: &self.title,
            bounds: self.bounds,
            on_screen: super::screen::clip(self.bounds, screen).is_some(),
            focused: self.focused,
            pid: self.pid,
        }
        .to_json(json!(display_id))
    }

    /// The title's digest, as evidence states it (bare hex).
    pub(super) fn title_digest(&self) -> String {
        sha256_hex(&self.title)
    }
}

fn failed(what: &str, err: impl std::fmt::Display) -> Refusal {
    Refusal::plain(format!("the X server did not answer {what}: {err}"))
}

/// Most windows listed, topmost first: a display with more is cut off there.
pub(super) const MOST_WINDOWS: usize = 256;

/// Most children of the root looked at for one listing, topmost first.
const MOST_EXAMINED: usize = 2048;

/// Most bytes of a text property read (a class or a title); the rest is
/// not read.
const MOST_TEXT_BYTES: u32 = 1024;

/// A text property's raw bytes and type (at most [`MOST_TEXT_BYTES`]), or
/// `None` when the window has none.
fn property(
    conn: &RustConnection,
    window: XWindow,
    name: Atom,
) -> Result<Option<(Atom, u8, Vec<u8>)>, Refusal> {
    let reply = conn
        .get_property(false, window, name, AtomEnum::ANY, 0, MOST_TEXT_BYTES / 4)
        .map_err(|e| failed("GetProperty", e))?
        .reply()
        .map_err(|e| failed("GetProperty", e))?;
    if reply.type_ == u32::from(AtomEnum::NONE) {
        return Ok(None);
    }
    Ok(Some((reply.type_, reply.format, reply.value)))
}

/// The process of the client that owns `window`, as the X server records
/// it (X-Resource `QueryClientIds`); `None` for a remote client or a server
/// without the extension.
pub(super) fn owner_pid(conn: &RustConnection, window: XWindow) -> Option<u32> {
    use x11rb::protocol::res::{ClientIdMask, ClientIdSpec, ConnectionExt as _};
    let spec = ClientIdSpec {
        client: window,
        mask: ClientIdMask::LOCAL_CLIENT_PID,
    };
    let reply = conn.res_query_client_ids(&[spec]).ok()?.reply().ok()?;
    reply
        .ids
        .iter()
        .find(|id| id.spec.mask == ClientIdMask::LOCAL_CLIENT_PID)
        .and_then(|id| id.value.first().copied())
}

/// The client that owns `window`: the resource-id base its ids share.
pub(super) fn owner(conn: &RustConnection, window: XWindow) -> u32 {
    window & !conn.setup().resource_id_mask
}

/// The deepest window under `point` (root coordinates), walking the tree
/// down from the root; `None` when the point is over the root alone.
pub(super) fn deepest_at(
    conn: &RustConnection,
    root: XWindow,
    point: (i16, i16),
) -> Result<Option<XWindow>, Refusal> {
    let mut found = None;
    let mut parent = root;
    // Windows nest only a few levels deep; the bound stops a hostile tree.
    for _ in 0..32 {
        let child = conn
            .translate_coordinates(root, parent, point.0, point.1)
            .map_err(|e| failed("TranslateCoordinates", e))?
            .reply()
            .map_err(|e| failed("TranslateCoordinates", e))?
            .child;
        if child == x11rb::NONE {
            return Ok(found);
        }
        found = Some(child);
        parent = child;
    }
    Ok(found)
}

/// The top-level windows that have a `WM_CLASS`: the root's mapped
/// children (and, for a child that is a frame, the client inside it), at
/// most [`MOST_WINDOWS`].
pub(super) fn client_windows(
    conn: &RustConnection,
    root: XWindow,
) -> Result<Vec<XWindow>, Refusal> {
    let children = conn
        .query_tree(root)
        .map_err(|e| failed("QueryTree", e))?
        .reply()
        .map_err(|e| failed("QueryTree", e))?
        .children;
    let mut clients = Vec::new();
    // Topmost first (QueryTree lists bottom to top), and a bounded number
    // of them looked at: what a person sees is on top, and a display
    // crowded with tens of thousands of windows costs no more than this.
    for child in children.into_iter().rev().take(MOST_EXAMINED) {
        if clients.len() >= MOST_WINDOWS {
            break;
        }
        if !viewable(conn, child)? {
            continue;
        }
        if wm_class(conn, child)?.is_some() {
            clients.push(child);
            continue;
        }
        let inner = conn
            .query_tree(child)
            .map_err(|e| failed("QueryTree", e))?
            .reply()
            .map_err(|e| failed("QueryTree", e))?
            .children;
        for grandchild in inner {
            if wm_class(conn, grandchild)?.is_some() {
                clients.push(grandchild);
                break;
            }
        }
    }
    Ok(clients)
}

/// Whether `window` still exists on the X server.
fn exists(conn: &RustConnection, window: XWindow) -> bool {
    conn.get_window_attributes(window)
        .ok()
        .is_some_and(|cookie| cookie.reply().is_ok())
}

fn viewable(conn: &RustConnection, window: XWindow) -> Result<bool, Refusal> {
    // A window that went away between the listing and this call is simply
    // not shown.
    let Ok(cookie) = conn.get_window_attributes(window) else {
        return Ok(false);
    };
    Ok(cookie.reply().is_ok_and(|attributes| {
        attributes.map_state == MapState::VIEWABLE && attributes.class == WindowClass::INPUT_OUTPUT
    }))
}

/// Whether the X server itself shows `window`, by what only it keeps: the
/// window exists, is viewable (mapped, under mapped ancestors) and can be
/// drawn in (not input-only).
/// `Some(false)` when it was destroyed or is not viewable, `None` when the
/// X server could not be asked. No property enters: any client may delete
/// another's `WM_CLASS` or title, but the window stays on the screen.
pub(super) fn shown_by_server(conn: &RustConnection, window: XWindow) -> Option<bool> {
    use x11rb::errors::ReplyError;
    use x11rb::protocol::ErrorKind;
    let cookie = conn.get_window_attributes(window).ok()?;
    match cookie.reply() {
        Ok(attributes) => Some(
            attributes.map_state == MapState::VIEWABLE
                && attributes.class == WindowClass::INPUT_OUTPUT,
        ),
        Err(ReplyError::X11Error(error)) if error.error_kind == ErrorKind::Window => Some(false),
        Err(_) => None,
    }
}

/// `WM_CLASS` as (instance, class).
fn wm_class(conn: &RustConnection, window: XWindow) -> Result<Option<(String, String)>, Refusal> {
    let Some((_, 8, bytes)) = property(conn, window, AtomEnum::WM_CLASS.into())? else {
        return Ok(None);
    };
    let mut parts = bytes
        .split(|b| *b == 0)
        .map(|p| String::from_utf8_lossy(p).into_owned());
    let instance = parts.next().unwrap_or_default();
    let class = parts.next().unwrap_or_default();
    Ok((!class.is_empty() || !instance.is_empty()).then_some((instance, class)))
}

/// The window's record, or `None` when it is gone, unmapped or has no
/// `WM_CLASS`.
pub(super) fn record(
    conn: &RustConnection,
    root: XWindow,
    atoms: &Atoms,
    window: XWindow,
    focus: XWindow,
) -> Result<Option<WindowRecord>, Refusal> {
    if !viewable(conn, window)? {
        return Ok(None);
    }
    let Some((instance, class)) = wm_class(conn, window)? else {
        return Ok(None);
    };
    let Ok(Ok(geometry)) = conn.get_geometry(window).map(|c| c.reply()) else {
        return Ok(None);
    };
    let Ok(Ok(origin)) = conn
        .translate_coordinates(window, root, 0, 0)
        .map(|c| c.reply())
    else {
        return Ok(None);
    };
    let pid = owner_pid(conn, window);
    let title = match property(conn, window, atoms.net_wm_name)? {
        Some((_, 8, bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
        _ => match property(conn, window, AtomEnum::WM_NAME.into())? {
            Some((_, 8, bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
            _ => String::new(),
        },
    };
    let focused = focus == window || is_inside(conn, root, focus, window)?;
    Ok(Some(WindowRecord {
        id: window,
        app_id: if class.is_empty() {
            instance.clone()
        } else {
            class
        },
        instance,
        pid,
        title,
        bounds: (
            i64::from(origin.dst_x),
            i64::from(origin.dst_y),
            u32::from(geometry.width),
            u32::from(geometry.height),
        ),
        focused,
    }))
}

/// Whether `inner` is a descendant of `outer`.
fn is_inside(
    conn: &RustConnection,
    root: XWindow,
    mut inner: XWindow,
    outer: XWindow,
) -> Result<bool, Refusal> {
    // Windows nest only a few levels deep; the bound keeps a hostile tree
    // from looping.
    for _ in 0..32 {
        if inner == outer {
            return Ok(true);
        }
        if inner == root || inner == x11rb::NONE {
            return Ok(false);
        }
        let Ok(Ok(tree)) = conn.query_tree(inner).map(|c| c.reply()) else {
            return Ok(false);
        };
        inner = tree.parent;
    }
    Ok(false)
}

/// The root's child that holds `window` (its frame under a window manager,
/// itself without one).
pub(super) fn top_level(
    conn: &RustConnection,
    root: XWindow,
    window: XWindow,
) -> Result<XWindow, Refusal> {
    let mut current = window;
    for _ in 0..32 {
        let tree = conn
            .query_tree(current)
            .map_err(|e| failed("QueryTree", e))?
            .reply()
            .map_err(|e| failed("QueryTree", e))?;
        if tree.parent == root || tree.parent == x11rb::NONE {
            return Ok(current);
        }
        current = tree.parent;
    }
    Err(Refusal::plain(
        "the window nests deeper than any X11 client does",
    ))
}

/// The window holding the input focus now.
pub(super) fn focus(conn: &RustConnection) -> Result<XWindow, Refusal> {
    Ok(conn
        .get_input_focus()
        .map_err(|e| failed("GetInputFocus", e))?
        .reply()
        .map_err(|e| failed("GetInputFocus", e))?
        .focus)
}

/// Every client window's record, in stacking order.
pub(super) fn all(
    conn: &RustConnection,
    root: XWindow,
    atoms: &Atoms,
) -> Result<Vec<WindowRecord>, Refusal> {
    let focus = focus(conn)?;
    let mut records = Vec::new();
    for window in client_windows(conn, root)? {
        match record(conn, root, atoms, window, focus) {
            Ok(Some(record)) => records.push(record),
            Ok(None) => {}
            // A window that went away while it was being read (a dialog
            // closing) is simply not listed; any other failure is said.
            Err(_) if !exists(conn, window) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(records)
}

/// The window's geometry tree: its subwindows, their bounds relative to it
/// and whether they are mapped, depth first, a bounded number of them.
pub(super) fn geometry_tree(conn: &RustConnection, window: XWindow) -> Result<Vec<Value>, Refusal> {
    const MOST: usize = 256;
    let mut nodes = Vec::new();
    let mut stack = vec![(window, 0u32)];
    while let Some((current, depth)) = stack.pop() {
        if nodes.len() >= MOST {
            break;
        }
        let Ok(Ok(tree)) = conn.query_tree(current).map(|c| c.reply()) else {
            continue;
        };
        for child in tree.children.into_iter().rev() {
            if nodes.len() >= MOST {
                break;
            }
            let Ok(Ok(geometry)) = conn.get_geometry(child).map(|c| c.reply()) else {
                continue;
            };
            let mapped = conn
                .get_window_attributes(child)
                .ok()
                .and_then(|c| c.reply().ok())
                .is_some_and(|a| a.map_state != MapState::UNMAPPED);
            nodes.push(json!({
                "id": child,
                "parent": current,
                "depth": depth + 1,
                "bounds": { "x": geometry.x, "y": geometry.y, "width": geometry.width, "height": geometry.height },
                "mapped": mapped,
            }));
            if depth < 8 {
                stack.push((child, depth + 1));
            }
        }
    }
    conn.flush().map_err(|e| failed("flush", e))?;
    Ok(nodes)
}
