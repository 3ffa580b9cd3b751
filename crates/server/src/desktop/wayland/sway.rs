//! The layout, from sway's own interface (IPC): no Wayland protocol tells
//! a client where other clients' windows are, which one holds the focus,
//! or which process owns each. Sway knows, and says so over the socket
//! `$SWAYSOCK` names (the process it records is the Wayland client's own,
//! from the socket's credentials, so a client cannot claim another's).

use serde_json::{Value, json};
use swayipc::{Connection, Node, NodeType};

use crate::engine::Refusal;
use adk_computer_use::digest::sha256_hex;

/// Most windows listed: a layout with more is cut off there.
pub(super) const MOST_WINDOWS: usize = 256;

/// One window as sway shows it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Window {
    /// Sway's container id: stable for the window's life, never reused
    /// while sway runs.
    pub id: u64,
    /// The Wayland app id (`xdg_toplevel.set_app_id`).
    pub app_id: String,
    /// The client's process.
    pub pid: Option<u32>,
    /// The title.
    pub title: String,
    /// Position on the output and size (the content, no decorations).
    pub bounds: (i64, i64, u32, u32),
    /// The whole container: the content with its border and title bar,
    /// where a pointer also reaches the window (to move or resize it).
    pub outer: (i64, i64, u32, u32),
    /// It holds the seat's focus.
    pub focused: bool,
    /// It is shown (on the visible workspace, not hidden behind a tab).
    pub visible: bool,
    /// Floating windows stack above tiled ones; among floating windows,
    /// later is higher.
    pub floating: bool,
}

impl Window {
    /// Upstream's window record.
    pub(super) fn to_json(&self, display_id: &str) -> Value {
        crate::desktop::real::WindowRecordJson {
            id: self.id,
            app_id: &self.app_id,
            display_name: &self.app_id,
            title: &self.title,
            bounds: self.bounds,
            on_screen: self.visible,
            focused: self.focused,
            pid: self.pid,
        }
        .to_json(json!(display_id))
    }

    /// The title's digest, as evidence states it (bare hex).
    pub(super) fn title_digest(&self) -> String {
        sha256_hex(&self.title)
    }

    /// Whether `(x, y)` lies inside the window's content.
    pub(super) fn contains(&self, at: (i64, i64)) -> bool {
        inside(self.bounds, at)
    }

    /// Whether `(x, y)` lies where the pointer reaches this window: its
    /// container, decorations and a margin around a floating one (a
    /// client-drawn frame takes input in its resize margin, outside the
    /// content).
    pub(super) fn takes_pointer_at(&self, at: (i64, i64)) -> bool {
        let (x, y, w, h) = self.outer;
        let margin = if self.floating { FLOATING_MARGIN } else { 0 };
        let grown = (
            x - i64::from(margin),
            y - i64::from(margin),
            w.saturating_add(2 * margin),
            h.saturating_add(2 * margin),
        );
        inside(grown, at)
    }
}

/// Around a floating window, where its client may still take the pointer.
const FLOATING_MARGIN: u32 = 16;

fn inside((wx, wy, w, h): (i64, i64, u32, u32), (x, y): (i64, i64)) -> bool {
    x >= wx && y >= wy && x < wx + i64::from(w) && y < wy + i64::from(h)
}

fn failed(what: &str, e: impl std::fmt::Display) -> Refusal {
    Refusal::new(
        "layout_unavailable",
        format!("sway's IPC did not answer {what}: {e}"),
    )
}

/// The connection to sway's IPC socket.
pub(super) struct Sway {
    conn: std::sync::Mutex<Connection>,
}

impl Sway {
    /// Connects to the socket `$SWAYSOCK` names.
    pub(super) fn connect() -> Result<Self, String> {
        let conn = Connection::new().map_err(|e| {
            format!(
                "{e} (SWAYSOCK={:?}); without sway's IPC the layout cannot be known",
                std::env::var("SWAYSOCK").unwrap_or_default()
            )
        })?;
        Ok(Self {
            conn: std::sync::Mutex::new(conn),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every window, topmost first as far as sway's tree says (floating
    /// above tiled, later floating above earlier).
    pub(super) fn windows(&self) -> Result<Vec<Window>, Refusal> {
        let tree = self.conn().get_tree().map_err(|e| failed("get_tree", e))?;
        let mut found = Vec::new();
        collect(&tree, false, &mut found);
        // Topmost first: floating before tiled, later floating first.
        let (mut floating, tiled): (Vec<Window>, Vec<Window>) =
            found.into_iter().partition(|w| w.floating);
        floating.reverse();
        floating.extend(tiled);
        floating.truncate(MOST_WINDOWS);
        Ok(floating)
    }

    /// The window `id`, if sway shows it.
    pub(super) fn window(&self, id: u64) -> Result<Option<Window>, Refusal> {
        Ok(self.windows()?.into_iter().find(|w| w.id == id))
    }

    /// Gives the window `id` the seat's focus, and raises it.
    pub(super) fn focus(&self, id: u64) -> Result<(), Refusal> {
        let outcomes = self
            .conn()
            .run_command(format!("[con_id={id}] focus"))
            .map_err(|e| failed("focus", e))?;
        for outcome in outcomes {
            outcome.map_err(|e| failed("focus", e))?;
        }
        Ok(())
    }

    /// The one plain output coordinates are sent on: sway's layout
    /// coordinates are the output's pixels, and the virtual pointer's
    /// extent is the whole layout, only when there is exactly one active
    /// output, at the origin, unscaled and unrotated, of `size` pixels.
    /// Any other layout is refused (`output_layout_unsupported`) rather
    /// than a point sent somewhere else than where it was checked.
    pub(super) fn plain_output(&self, size: (u32, u32)) -> Result<(), Refusal> {
        let outputs = self
            .conn()
            .get_outputs()
            .map_err(|e| failed("get_outputs", e))?;
        let active: Vec<_> = outputs.iter().filter(|o| o.active).collect();
        let unsupported = |why: String| {
            Refusal::new(
                "output_layout_unsupported",
                format!(
                    "{why}: points are checked in sway's layout and sent on one output, which agree only on a single output at the origin, unscaled and unrotated"
                ),
            )
        };
        let [output] = active.as_slice() else {
            return Err(unsupported(format!("{} active outputs", active.len())));
        };
        let rect = output.rect;
        let scale = output.scale.unwrap_or(1.0);
        let transform = output.transform.as_deref().unwrap_or("normal");
        let fits = rect.x == 0
            && rect.y == 0
            && u32::try_from(rect.width).ok() == Some(size.0)
            && u32::try_from(rect.height).ok() == Some(size.1);
        #[allow(clippy::float_cmp)] // sway reports an unscaled output as exactly 1.0
        if !fits || scale != 1.0 || transform != "normal" {
            return Err(unsupported(format!(
                "output {} is {}x{} at {},{}, scale {scale}, transform {transform}, and frames are {}x{}",
                output.name, rect.width, rect.height, rect.x, rect.y, size.0, size.1
            )));
        }
        Ok(())
    }

    /// The focused window's id, if any.
    pub(super) fn focused(&self) -> Result<Option<u64>, Refusal> {
        Ok(self
            .windows()?
            .into_iter()
            .find(|w| w.focused)
            .map(|w| w.id))
    }
}

fn collect(node: &Node, floating: bool, out: &mut Vec<Window>) {
    let is_window = matches!(node.node_type, NodeType::Con | NodeType::FloatingCon)
        && (node.app_id.is_some() || node.pid.is_some())
        && node.nodes.is_empty();
    if is_window {
        let rect = node.rect;
        let size = |w: i32, h: i32| Some((u32::try_from(w).ok()?, u32::try_from(h).ok()?));
        // A node with a negative id or size is no window this desktop
        // can reason about: it is listed as filling the layout (it covers
        // every point), and has no id an agent could bind to.
        let content = size(node.window_rect.width, node.window_rect.height);
        let container = size(rect.width, rect.height);
        let id = u64::try_from(node.id).ok();
        let (id, bounds, outer) = match (id, content, container) {
            (Some(id), Some((w, h)), Some((ow, oh))) => (
                id,
                (
                    i64::from(rect.x) + i64::from(node.window_rect.x),
                    i64::from(rect.y) + i64::from(node.window_rect.y),
                    w,
                    h,
                ),
                (i64::from(rect.x), i64::from(rect.y), ow, oh),
            ),
            _ => {
                let all = (i64::from(i32::MIN), i64::from(i32::MIN), u32::MAX, u32::MAX);
                (u64::MAX, (0, 0, 0, 0), all)
            }
        };
        out.push(Window {
            id,
            app_id: node.app_id.clone().unwrap_or_default(),
            pid: node.pid.and_then(|p| u32::try_from(p).ok()),
            title: node.name.clone().unwrap_or_default(),
            bounds,
            outer,
            focused: node.focused,
            visible: node.visible.unwrap_or(false),
            floating: floating || node.node_type == NodeType::FloatingCon,
        });
    }
    // The scratchpad's windows are not shown.
    if node.node_type == NodeType::Workspace && node.name.as_deref() == Some("__i3_scratch") {
        return;
    }
    for child in &node.nodes {
        collect(child, floating, out);
    }
    for child in &node.floating_nodes {
        collect(child, true, out);
    }
}
