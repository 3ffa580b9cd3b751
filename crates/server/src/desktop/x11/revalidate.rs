//! At execute, before anything is sent: is the target still the window the
//! preview saw (identity, title, process, bounds, pixels), and is input
//! safe to send to it (the point inside it, not covered, owned by the
//! target's process, the keyboard reaching it)?

use x11rb::protocol::xproto::{ConnectionExt as _, Window as XWindow};

use super::*;

/// A window's element tree, or why it could not be read.
type ElementTree = Result<crate::desktop::atspi::Tree, Refusal>;
use crate::desktop::atspi::revision::structure_of;

/// How much of the window's revision a check reads.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Tree {
    /// Its geometry tree and the application's element tree.
    Whole,
    /// Its geometry tree only: inside the server grab, where an
    /// application asked for its elements could not answer (GTK asks the X
    /// server where its widgets are, and the grab holds every other
    /// client's request). The element tree was compared just before.
    Geometry,
}

impl X11Desktop {
    pub(super) fn current(
        &self,
        target: &TargetEvidence,
        round: Revalidation,
    ) -> Result<bool, Refusal> {
        self.current_reading(target, round, Tree::Whole)
    }

    /// [`Self::current`], reading as much of the window's revision as
    /// `tree` says.
    pub(super) fn current_reading(
        &self,
        target: &TargetEvidence,
        round: Revalidation,
        tree: Tree,
    ) -> Result<bool, Refusal> {
        Ok(self.what_changed(target, round, tree)?.is_none())
    }

    /// What no longer matches the evidence, named for a refusal (never in
    /// the application's words: no title, no label): `None` when the
    /// evidence still describes the window.
    pub(super) fn what_changed(
        &self,
        target: &TargetEvidence,
        round: Revalidation,
        tree: Tree,
    ) -> Result<Option<Value>, Refusal> {
        let now = match self.window_now(target) {
            Ok(now) => now,
            // After the effect, a window the X server stops answering for
            // mid-read (destroyed between the lookup and its properties) is
            // a window the action closed.
            Err(_) if round == Revalidation::AfterEffect => return Ok(None),
            Err(refusal) => return Err(refusal),
        };
        let Some(now) = now else {
            // Gone. An action may close its own window (a dialog's button).
            return Ok((round != Revalidation::AfterEffect)
                .then(|| json!({ "changed": "window", "what": "gone" })));
        };
        if round == Revalidation::AfterEffect && (now.pid.is_none() || now.app_id.is_empty()) {
            // Going away: the action closed its window and the process that
            // owned it has exited (the X server no longer names it) while
            // the window is still being torn down. The same id with
            // another owner named would be another window; this is not.
            return Ok(None);
        }
        let identity = target.app_id == now.app_id
            && target.pid.is_none_or(|pid| Some(pid) == now.pid)
            && stated_or_same(target.display_id.as_ref(), &self.display_id().to_string())
            && target.platform == std::env::consts::OS;
        if !identity {
            return Ok(Some(
                json!({ "changed": "window", "what": "identity (application, process or display)" }),
            ));
        }
        if round == Revalidation::AfterEffect {
            return Ok(None);
        }
        if !bounds_agree(target.bounds.as_ref(), now.bounds) {
            let (x, y, width, height) = now.bounds;
            return Ok(Some(json!({
                "changed": "bounds",
                "now": { "x": x, "y": y, "width": width, "height": height },
            })));
        }
        if !stated_or_same(target.window_title_digest.as_ref(), &now.title_digest()) {
            return Ok(Some(json!({ "changed": "title" })));
        }
        if let Some(revision) = &target.ui_tree_revision {
            // `{geometry}+{elements}`: which part changed is named.
            let stated_geometry = revision.split('+').next();
            let changed = match tree {
                Tree::Whole => {
                    // The structure only: what the elements hold is bound
                    // by a press, which checks it itself.
                    let now_revision = self.window_revision(&now)?.0;
                    if structure_of(revision) == structure_of(&now_revision) {
                        None
                    } else if stated_geometry != now_revision.split('+').next() {
                        Some("window_geometry")
                    } else {
                        Some("element_tree")
                    }
                }
                Tree::Geometry => (stated_geometry != Some(self.tree_revision(now.id)?.0.as_str()))
                    .then_some("window_geometry"),
            };
            if let Some(changed) = changed {
                return Ok(Some(json!({ "changed": "tree", "what": changed })));
            }
        }
        if let Some(stated) = &target.screenshot_hash
            && round == Revalidation::BeforeEffect
        {
            // The frame must show the target: the whole screen, or the
            // target window's own part of it. A frame this server handed
            // out of one of those regions is captured again and compared
            // by its raw pixels; a frame of another region (another
            // window's, even one that looks the same) does not vouch for
            // the target; a digest it never handed out is compared with
            // the whole screen, encoded. A change only where the
            // application says its caret is does not make the window
            // another (see `tolerance`).
            let regions = [Some(self.whole()), screen::clip(now.bounds, self.size)];
            let handed_out = regions
                .into_iter()
                .flatten()
                .find_map(|region| Some((region, self.frames().raw_of(stated, region)?)));
            let mut changed_box = None;
            let same = match handed_out {
                Some((region, raw)) => {
                    let capture = screen::capture(&self.conn, self.root, region)?;
                    capture.raw_digest == raw || {
                        let since = self.frames().changed_since(stated, region, &capture);
                        changed_box = since.as_ref().and_then(|s| s.changed);
                        match since {
                            Some(screen::Since {
                                changed: Some(changed),
                                caret: Some(caret),
                            }) => self.only_the_caret(&now, changed, caret, tree),
                            _ => false,
                        }
                    }
                }
                None if self.frames().known(stated) => false,
                None => {
                    let capture = screen::capture(&self.conn, self.root, self.whole())?;
                    sha256_prefixed(capture.encode(self.layout)?) == *stated
                }
            };
            if !same {
                // Where the pixels changed, as the box around them, when
                // the frame is known.
                let at = changed_box.map(|(x0, y0, x1, y1)| {
                    json!({ "x": x0, "y": y0, "width": x1 - x0 + 1, "height": y1 - y0 + 1 })
                });
                return Ok(Some(json!({ "changed": "pixels", "where": at })));
            }
        }
        Ok(None)
    }

    /// Whether `changed` (the box around every pixel of `record` that
    /// changed since the frame) lies in `caret`, where the application
    /// said its caret was when the frame was taken, and the caret has not
    /// moved since: a full check asks the application again, and a caret
    /// now elsewhere (moved by any client on the accessibility bus) is no
    /// caret to tolerate. Inside the server grab the application cannot
    /// be asked; the full check just before did.
    fn only_the_caret(
        &self,
        record: &windows::WindowRecord,
        changed: screen::Changed,
        caret: screen::Changed,
        tree: Tree,
    ) -> bool {
        let unmoved = match tree {
            Tree::Whole => self.caret_now(record) == Some(caret),
            Tree::Geometry => true,
        };
        let tolerated = unmoved && tolerance::tolerable(changed, caret);
        if tolerated {
            tracing::debug!(?changed, ?caret, "only the caret changed: tolerated");
        }
        tolerated
    }

    /// Where the caret of the window's focused text element is drawn, as
    /// its application reports it; `None` when it reports none (or is not
    /// on the accessibility bus), or reports one no caret could be: taller
    /// than [`tolerance::MOST_HEIGHT`], or outside its element or window.
    pub(super) fn caret_now(&self, record: &windows::WindowRecord) -> Option<screen::Changed> {
        let bus = self.accessibility()?;
        let pid = record.pid?;
        let tree = self.element_tree(&record.for_elements()).ok()?;
        // The deepest focused node: typed text, and the caret, are there.
        let node = tree
            .nodes
            .iter()
            .filter(|n| n.states.iter().any(|s| s == "focused"))
            .max_by_key(|n| n.path.len())?;
        let extents = bus.caret(pid, &record.title, record.bounds, node).ok()??;
        let (nx, ny, nw, nh) = node.bounds;
        let element = (
            i64::from(nx),
            i64::from(ny),
            i64::from(nx) + i64::from(nw) - 1,
            i64::from(ny) + i64::from(nh) - 1,
        );
        let (wx, wy, ww, wh) = record.bounds;
        let window = (wx, wy, wx + i64::from(ww) - 1, wy + i64::from(wh) - 1);
        tolerance::caret_within(extents, element, window)
    }

    /// The window the evidence names, as the display shows it now; a
    /// window that is gone is a stale target.
    pub(super) fn target_window(
        &self,
        target: Option<&TargetEvidence>,
    ) -> Result<windows::WindowRecord, Refusal> {
        let target = target
            .ok_or_else(|| Refusal::new("invalid_arguments", "input needs a target window"))?;
        self.window_now(target)?
            .ok_or_else(|| stale("the target window is gone"))
    }

    /// `point` is inside `window` and no other window covers it there.
    pub(super) fn check_point(
        &self,
        window: &windows::WindowRecord,
        point: (i64, i64),
        top: XWindow,
    ) -> Result<(), Refusal> {
        let (x, y, width, height) = window.bounds;
        let inside = point.0 >= x
            && point.1 >= y
            && point.0 < x + i64::from(width)
            && point.1 < y + i64::from(height);
        if !inside {
            return Err(Refusal::new(
                "invalid_arguments",
                format!(
                    "the point {point:?} is outside the target window ({x}, {y}, {width}x{height})"
                ),
            ));
        }
        // XTEST moves the pointer no further than the screen's edge: a
        // point beyond it would land somewhere else.
        let on_screen = point.0 >= 0
            && point.1 >= 0
            && point.0 < i64::from(self.size.0)
            && point.1 < i64::from(self.size.1);
        if !on_screen {
            return Err(Refusal::new(
                "invalid_arguments",
                format!(
                    "the point {point:?} is off the {}x{} screen",
                    self.size.0, self.size.1
                ),
            ));
        }
        let point = input::on_screen(point)?;
        let under = windows::deepest_at(&self.conn, self.root, point)?;
        let top_under = match under {
            Some(under) => Some(windows::top_level(&self.conn, self.root, under)?),
            None => None,
        };
        if top_under != Some(top) {
            return Err(stale(&format!(
                "the point {point:?} is covered by another window"
            )));
        }
        self.owned_by_target(window, under, point)
    }

    /// The deepest window at `point` belongs to the target's client: no
    /// other client's window (a child it made inside the target, say)
    /// would take the input there.
    pub(super) fn owned_by_target(
        &self,
        window: &windows::WindowRecord,
        under: Option<XWindow>,
        point: (i16, i16),
    ) -> Result<(), Refusal> {
        let owner = windows::owner(&self.conn, window.id);
        match under {
            Some(under) if windows::owner(&self.conn, under) != owner => Err(stale(&format!(
                "at {point:?} a window of another client lies inside the target"
            ))),
            _ => Ok(()),
        }
    }

    /// Before input is sent, with the X server held: no other client holds
    /// a grab of the keyboard or the pointer (it would receive the input),
    /// and no modifier or lock is on and no button is down (typed text
    /// would arrive altered, a click would mean something else).
    pub(super) fn input_is_safe(&self, top: XWindow) -> Result<(), Refusal> {
        use x11rb::protocol::xproto::{EventMask, GrabMode, GrabStatus, KeyButMask};
        let failed =
            |e: &dyn std::fmt::Display| Refusal::plain(format!("the grab check failed: {e}"));
        let keyboard = self
            .conn
            .grab_keyboard(
                false,
                top,
                x11rb::CURRENT_TIME,
                GrabMode::ASYNC,
                GrabMode::ASYNC,
            )
            .map_err(|e| failed(&e))?
            .reply()
            .map_err(|e| failed(&e))?;
        if keyboard.status == GrabStatus::SUCCESS {
            self.conn
                .ungrab_keyboard(x11rb::CURRENT_TIME)
                .map_err(|e| failed(&e))?;
        }
        let pointer = self
            .conn
            .grab_pointer(
                false,
                top,
                EventMask::NO_EVENT,
                GrabMode::ASYNC,
                GrabMode::ASYNC,
                x11rb::NONE,
                x11rb::NONE,
                x11rb::CURRENT_TIME,
            )
            .map_err(|e| failed(&e))?
            .reply()
            .map_err(|e| failed(&e))?;
        if pointer.status == GrabStatus::SUCCESS {
            self.conn
                .ungrab_pointer(x11rb::CURRENT_TIME)
                .map_err(|e| failed(&e))?;
        }
        if keyboard.status != GrabStatus::SUCCESS || pointer.status != GrabStatus::SUCCESS {
            return Err(stale(
                "another client holds the keyboard or the pointer (a grab): input would go to it",
            ));
        }
        let now = self
            .conn
            .query_pointer(self.root)
            .map_err(|e| failed(&e))?
            .reply()
            .map_err(|e| failed(&e))?;
        let held = KeyButMask::SHIFT
            | KeyButMask::LOCK
            | KeyButMask::CONTROL
            | KeyButMask::MOD1
            | KeyButMask::MOD2
            | KeyButMask::MOD3
            | KeyButMask::MOD4
            | KeyButMask::MOD5
            | KeyButMask::BUTTON1
            | KeyButMask::BUTTON2
            | KeyButMask::BUTTON3
            | KeyButMask::BUTTON4
            | KeyButMask::BUTTON5;
        // Bits 13 and 14 of the state are the keyboard group (XKB): a
        // locked second layout changes every typed character too.
        const GROUP: u16 = 0x6000;
        if u16::from(now.mask) & (u16::from(held) | GROUP) != 0 {
            return Err(stale(&format!(
                "a modifier, lock, layout group or button is held ({:#06x}): input would arrive altered",
                u16::from(now.mask)
            )));
        }
        Ok(())
    }

    /// Where keys go, once the target has the focus (the deepest window
    /// under the pointer, when the pointer is over the target) belongs to
    /// the target's client.
    pub(super) fn keys_reach_target(
        &self,
        window: &windows::WindowRecord,
        top: XWindow,
    ) -> Result<(), Refusal> {
        let now = self
            .conn
            .query_pointer(self.root)
            .map_err(|e| Refusal::plain(format!("QueryPointer failed: {e}")))?
            .reply()
            .map_err(|e| Refusal::plain(format!("QueryPointer failed: {e}")))?;
        let pointer = (now.root_x, now.root_y);
        let under = windows::deepest_at(&self.conn, self.root, pointer)?;
        let over_target = match under {
            Some(under) => windows::top_level(&self.conn, self.root, under)? == top,
            None => false,
        };
        if over_target {
            self.owned_by_target(window, under, pointer)?;
        }
        Ok(())
    }

    /// The revision of a window's geometry tree: it moves when the
    /// window's subwindows change, not when it moves as a whole.
    pub(super) fn tree_revision(&self, window: XWindow) -> Result<(String, Vec<Value>), Refusal> {
        let nodes = windows::geometry_tree(&self.conn, window)?;
        let digest = sha256_hex(Value::Array(nodes.clone()).to_string());
        Ok((format!("x11-tree-{window}-{}", &digest[..16]), nodes))
    }

    /// The revision the evidence binds: the window's geometry tree and,
    /// where the application answers on the accessibility bus, its element
    /// tree (structure, roles, labels, bounds, actions; not values, not
    /// focus). A changed element changes it; a typed value or a blinking
    /// caret does not. An element tree that cannot be read now but could be
    /// then (or the reverse) changes it too: that fails closed.
    pub(super) fn window_revision(
        &self,
        record: &windows::WindowRecord,
    ) -> Result<(String, Vec<Value>, ElementTree), Refusal> {
        let (geometry, nodes) = self.tree_revision(record.id)?;
        let tree = self.element_tree(&record.for_elements());
        let revision =
            crate::desktop::atspi::revision::window_revision(&geometry, tree.as_ref().ok());
        Ok((revision, nodes, tree))
    }
}
