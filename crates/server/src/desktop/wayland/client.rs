//! The server's own Wayland connection: the globals the compositor
//! offers, and the three things this desktop asks of them (a frame through
//! wlr-screencopy, keys through a virtual keyboard, pointer events through
//! a virtual pointer), each waited for with a deadline so a compositor
//! that stops answering refuses instead of hanging the server.

mod events;
mod pixels;

use pixels::to_rgba;
use std::collections::HashMap;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use wayland_client::backend::ObjectId;
use wayland_client::globals::{GlobalListContents, registry_queue_init};
use wayland_client::protocol::{
    wl_buffer, wl_callback, wl_output, wl_pointer, wl_registry, wl_seat, wl_shm, wl_shm_pool,
};
use wayland_client::{
    Connection, Dispatch, EventQueue, Proxy, QueueHandle, WEnum, event_created_child,
};
use wayland_protocols_misc::zwp_virtual_keyboard_v1::client::{
    zwp_virtual_keyboard_manager_v1, zwp_virtual_keyboard_v1,
};
use wayland_protocols_wlr::foreign_toplevel::v1::client::{
    zwlr_foreign_toplevel_handle_v1, zwlr_foreign_toplevel_manager_v1,
};
use wayland_protocols_wlr::screencopy::v1::client::{
    zwlr_screencopy_frame_v1, zwlr_screencopy_manager_v1,
};
use wayland_protocols_wlr::virtual_pointer::v1::client::{
    zwlr_virtual_pointer_manager_v1, zwlr_virtual_pointer_v1,
};

use crate::engine::Refusal;

/// How long one request to the compositor (a frame, a round trip) may
/// take before it is refused.
pub(super) const DEADLINE: Duration = Duration::from_secs(3);

/// The protocols this desktop uses, by interface name, and what each
/// gives it.
pub(super) const USED: [(&str, &str); 6] = [
    (
        "zwlr_screencopy_manager_v1",
        "frames (snapshot, and the pixels revalidation compares)",
    ),
    (
        "zwlr_foreign_toplevel_manager_v1",
        "the compositor's list of toplevel windows (app id, title, activation)",
    ),
    ("zwp_virtual_keyboard_manager_v1", "keys (type, key)"),
    (
        "zwlr_virtual_pointer_manager_v1",
        "the pointer (clicks, moves, drags, scrolls)",
    ),
    (
        "zwlr_data_control_manager_v1",
        "the clipboard (write_clipboard, read_clipboard, the read-back)",
    ),
    (
        "wl_seat",
        "the seat the virtual devices and the clipboard belong to",
    ),
];

/// One toplevel as wlr-foreign-toplevel-management describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Toplevel {
    pub app_id: String,
    pub title: String,
    pub activated: bool,
    /// The compositor said `done` at least once: the fields are whole.
    pub complete: bool,
}

/// What a screencopy frame reported.
#[derive(Debug, Default)]
struct FrameState {
    buffer: Option<(wl_shm::Format, u32, u32, u32)>,
    buffer_done: bool,
    ready: bool,
    failed: bool,
    y_invert: bool,
}

/// The event side of the connection.
#[derive(Debug, Default)]
pub(super) struct State {
    frame: FrameState,
    output_size: Option<(i32, i32)>,
    synced: bool,
    toplevels: HashMap<ObjectId, Toplevel>,
}

/// Pixels read from the compositor, RGBA, row by row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pixels {
    pub width: u32,
    pub height: u32,
    pub rgba: Vec<u8>,
}

/// The connection, the globals bound, and the virtual devices.
pub(super) struct Compositor {
    conn: Connection,
    queue: EventQueue<State>,
    qh: QueueHandle<State>,
    state: State,
    /// Every global the compositor offers: `(interface, version)`.
    pub globals: Vec<(String, u32)>,
    shm: Option<wl_shm::WlShm>,
    output: Option<wl_output::WlOutput>,
    screencopy: Option<zwlr_screencopy_manager_v1::ZwlrScreencopyManagerV1>,
    keyboard: Option<zwp_virtual_keyboard_v1::ZwpVirtualKeyboardV1>,
    pointer: Option<zwlr_virtual_pointer_v1::ZwlrVirtualPointerV1>,
    toplevels: Option<zwlr_foreign_toplevel_manager_v1::ZwlrForeignToplevelManagerV1>,
    /// The keymap the virtual keyboard was last given.
    keymap_sent: Option<String>,
    started: Instant,
}

/// The largest frame buffer taken (an 8K output at 4 bytes a pixel).
const MOST_FRAME_BYTES: u64 = 7680 * 4320 * 4;

/// How long a changed keymap is given to reach the focused client before
/// a key of it is sent.
const KEYMAP_SETTLE: Duration = Duration::from_millis(150);

fn failed(what: &str, e: impl std::fmt::Display) -> Refusal {
    Refusal::plain(format!("the compositor did not answer {what}: {e}"))
}

/// A needed protocol the compositor does not offer.
pub(super) fn missing(interface: &str, tool: &str) -> Refusal {
    Refusal::new(
        "protocol_unavailable",
        format!("the compositor offers no {interface}, which {tool} needs on Wayland"),
    )
}

impl Compositor {
    /// Connects to the compositor `$WAYLAND_DISPLAY` names and binds what
    /// it offers of [`USED`].
    pub(super) fn connect() -> Result<Self, String> {
        let conn = Connection::connect_to_env().map_err(|e| {
            format!(
                "{e} (WAYLAND_DISPLAY={:?}, XDG_RUNTIME_DIR={:?})",
                std::env::var("WAYLAND_DISPLAY").unwrap_or_default(),
                std::env::var("XDG_RUNTIME_DIR").unwrap_or_default()
            )
        })?;
        let (list, queue) =
            registry_queue_init::<State>(&conn).map_err(|e| format!("the registry: {e}"))?;
        let qh = queue.handle();
        let globals: Vec<(String, u32)> = list
            .contents()
            .with_list(|l| l.iter().map(|g| (g.interface.clone(), g.version)).collect());
        let shm = list.bind::<wl_shm::WlShm, _, _>(&qh, 1..=1, ()).ok();
        let output = list.bind::<wl_output::WlOutput, _, _>(&qh, 1..=2, ()).ok();
        let seat = list.bind::<wl_seat::WlSeat, _, _>(&qh, 1..=5, ()).ok();
        let screencopy = list
            .bind::<zwlr_screencopy_manager_v1::ZwlrScreencopyManagerV1, _, _>(&qh, 1..=3, ())
            .ok();
        let keyboard = seat.as_ref().and_then(|seat| {
            list.bind::<zwp_virtual_keyboard_manager_v1::ZwpVirtualKeyboardManagerV1, _, _>(
                &qh,
                1..=1,
                (),
            )
            .ok()
            .map(|m| m.create_virtual_keyboard(seat, &qh, ()))
        });
        let pointer = list
            .bind::<zwlr_virtual_pointer_manager_v1::ZwlrVirtualPointerManagerV1, _, _>(
                &qh,
                1..=2,
                (),
            )
            .ok()
            .map(|m| m.create_virtual_pointer(seat.as_ref(), &qh, ()));
        let toplevels = list
            .bind::<zwlr_foreign_toplevel_manager_v1::ZwlrForeignToplevelManagerV1, _, _>(
                &qh,
                1..=3,
                (),
            )
            .ok();
        let mut compositor = Self {
            conn,
            queue,
            qh,
            state: State::default(),
            globals,
            shm,
            output,
            screencopy,
            keyboard,
            pointer,
            toplevels,
            keymap_sent: None,
            started: Instant::now(),
        };
        compositor
            .roundtrip()
            .map_err(|r| format!("the first round trip: {}", r.message))?;
        Ok(compositor)
    }

    /// Whether the compositor offers `interface`.
    pub(super) fn offers(&self, interface: &str) -> bool {
        self.globals.iter().any(|(name, _)| name == interface)
    }

    /// The output's size in pixels, as its mode says.
    pub(super) fn output_size(&self) -> Option<(i32, i32)> {
        self.state.output_size
    }

    /// Reads and dispatches events until `done` holds, or refuses at the
    /// deadline.
    fn wait_until(&mut self, what: &str, done: impl Fn(&State) -> bool) -> Result<(), Refusal> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            self.queue
                .dispatch_pending(&mut self.state)
                .map_err(|e| failed(what, e))?;
            if done(&self.state) {
                return Ok(());
            }
            self.queue.flush().map_err(|e| failed(what, e))?;
            let Some(guard) = self.queue.prepare_read() else {
                continue;
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Refusal::new(
                    "compositor_timeout",
                    format!("the compositor did not answer {what} within {DEADLINE:?}"),
                ));
            }
            let timeout = rustix::event::Timespec {
                tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
                tv_nsec: i64::from(left.subsec_nanos()),
            };
            let ready = {
                let fd = guard.connection_fd();
                let mut fds = [rustix::event::PollFd::new(
                    &fd,
                    rustix::event::PollFlags::IN,
                )];
                rustix::event::poll(&mut fds, Some(&timeout)).map_err(|e| failed(what, e))?
            };
            if ready > 0 {
                guard.read().map_err(|e| failed(what, e))?;
            }
        }
    }

    /// Every request so far has been handled by the compositor.
    pub(super) fn roundtrip(&mut self) -> Result<(), Refusal> {
        self.state.synced = false;
        self.conn.display().sync(&self.qh, ());
        self.wait_until("a round trip", |s| s.synced)
    }

    /// The toplevels the compositor lists now (after a round trip).
    pub(super) fn toplevels(&mut self) -> Result<Option<Vec<Toplevel>>, Refusal> {
        if self.toplevels.is_none() {
            return Ok(None);
        }
        self.roundtrip()?;
        Ok(Some(
            self.state
                .toplevels
                .values()
                .filter(|t| t.complete)
                .cloned()
                .collect(),
        ))
    }

    /// Milliseconds since connecting, as input events' times.
    fn now_ms(&self) -> u32 {
        u32::try_from(self.started.elapsed().as_millis() % u128::from(u32::MAX)).unwrap_or(0)
    }

    /// The pixels of the output, or of `region` of it (`x, y, w, h` in the
    /// output's coordinates), through wlr-screencopy into shared memory.
    pub(super) fn capture(
        &mut self,
        region: Option<(i32, i32, i32, i32)>,
    ) -> Result<Pixels, Refusal> {
        let (Some(manager), Some(output), Some(shm)) = (
            self.screencopy.clone(),
            self.output.clone(),
            self.shm.clone(),
        ) else {
            return Err(missing(
                "zwlr_screencopy_manager_v1 (with wl_shm and an output)",
                "snapshot",
            ));
        };
        self.state.frame = FrameState::default();
        let frame = match region {
            Some((x, y, w, h)) => {
                manager.capture_output_region(0, &output, x, y, w, h, &self.qh, ())
            }
            None => manager.capture_output(0, &output, &self.qh, ()),
        };
        let buffered = frame.version() >= 3;
        let expected = region.map(|(_, _, w, h)| (w, h));
        let result = self.copy(&frame, &shm, buffered, expected);
        frame.destroy();
        result
    }

    fn copy(
        &mut self,
        frame: &zwlr_screencopy_frame_v1::ZwlrScreencopyFrameV1,
        shm: &wl_shm::WlShm,
        buffered: bool,
        expected: Option<(i32, i32)>,
    ) -> Result<Pixels, Refusal> {
        self.wait_until("a frame's buffer", |s| {
            s.frame.failed || (s.frame.buffer.is_some() && (!buffered || s.frame.buffer_done))
        })?;
        let Some((format, width, height, stride)) =
            self.state.frame.buffer.filter(|_| !self.state.frame.failed)
        else {
            return Err(Refusal::plain("the compositor refused the frame"));
        };
        // The buffer the compositor asks for is the region asked for (or an
        // output's worth), never empty, and its rows hold its pixels.
        let sized = width > 0
            && height > 0
            && u64::from(stride) >= u64::from(width) * 4
            && u64::from(stride) * u64::from(height) <= MOST_FRAME_BYTES
            && expected.is_none_or(|(w, h)| {
                u32::try_from(w).ok() == Some(width) && u32::try_from(h).ok() == Some(height)
            });
        if !sized {
            return Err(Refusal::plain(format!(
                "the compositor offered a frame of {width}x{height} (stride {stride}) for a capture of {expected:?}"
            )));
        }
        let size = u64::from(stride) * u64::from(height);
        let size_i32 = i32::try_from(size)
            .map_err(|_| Refusal::plain(format!("a frame of {size} bytes is too large")))?;
        let file = tempfile::tempfile().map_err(|e| failed("shared memory", e))?;
        file.set_len(size).map_err(|e| failed("shared memory", e))?;
        let pool = shm.create_pool(file.as_fd(), size_i32, &self.qh, ());
        let buffer = pool.create_buffer(
            0,
            i32::try_from(width).unwrap_or(0),
            i32::try_from(height).unwrap_or(0),
            i32::try_from(stride).unwrap_or(0),
            format,
            &self.qh,
            (),
        );
        frame.copy(&buffer);
        let copied = self.wait_until("a frame's copy", |s| s.frame.ready || s.frame.failed);
        buffer.destroy();
        pool.destroy();
        copied?;
        if self.state.frame.failed {
            return Err(Refusal::plain("the compositor failed to copy the frame"));
        }
        let mut raw = vec![0u8; usize::try_from(size).unwrap_or(0)];
        file.read_exact_at(&mut raw, 0)
            .map_err(|e| failed("the frame's pixels", e))?;
        to_rgba(
            &raw,
            format,
            width,
            height,
            stride,
            self.state.frame.y_invert,
        )
    }

    /// Sends `keys` (evdev key codes, pressed or released, each with the
    /// modifier mask held after it) with `keymap` (an XKB keymap the
    /// compositor compiles), then waits until the compositor has taken them.
    pub(super) fn send_keys(
        &mut self,
        keymap: &str,
        keys: &[(u32, bool, u32)],
    ) -> Result<(), Refusal> {
        self.set_keymap(keymap)?;
        let keyboard = self
            .keyboard
            .clone()
            .ok_or_else(|| missing("zwp_virtual_keyboard_manager_v1 (and a seat)", "keys"))?;
        for &(code, pressed, mods) in keys {
            let time = self.now_ms();
            keyboard.key(time, code, u32::from(pressed));
            keyboard.modifiers(mods, 0, 0, 0);
        }
        self.roundtrip()
    }

    /// Gives the virtual keyboard `keymap` (an XKB keymap the compositor
    /// compiles), unless it has it already, and waits for it to settle.
    pub(super) fn set_keymap(&mut self, keymap: &str) -> Result<(), Refusal> {
        if self.keymap_sent.as_deref() == Some(keymap) {
            return Ok(());
        }
        let keyboard = self
            .keyboard
            .clone()
            .ok_or_else(|| missing("zwp_virtual_keyboard_manager_v1 (and a seat)", "keys"))?;
        let mut file = tempfile::tempfile().map_err(|e| failed("the keymap's file", e))?;
        let mut bytes = keymap.as_bytes().to_vec();
        bytes.push(0);
        std::io::Write::write_all(&mut file, &bytes).map_err(|e| failed("the keymap's file", e))?;
        let size =
            u32::try_from(bytes.len()).map_err(|_| Refusal::plain("the keymap is too large"))?;
        keyboard.keymap(1, file.as_fd(), size);
        self.roundtrip()?;
        // The compositor has handed the keymap on; the focused client
        // compiles it in its own time, and drops a key that comes first.
        // No protocol says when it has: a pause, once per change of keymap
        // (see `keymap`).
        std::thread::sleep(KEYMAP_SETTLE);
        self.keymap_sent = Some(keymap.to_owned());
        Ok(())
    }

    /// Sends pointer events on an output of `extent` pixels.
    pub(super) fn send_pointer(
        &mut self,
        events: &[Pointer],
        extent: (u32, u32),
    ) -> Result<(), Refusal> {
        let pointer = self
            .pointer
            .clone()
            .ok_or_else(|| missing("zwlr_virtual_pointer_manager_v1", "pointer input"))?;
        for event in events {
            let time = self.now_ms();
            match *event {
                Pointer::Move(x, y) => pointer.motion_absolute(time, x, y, extent.0, extent.1),
                Pointer::Button(button, pressed) => pointer.button(
                    time,
                    button,
                    if pressed {
                        wl_pointer::ButtonState::Pressed
                    } else {
                        wl_pointer::ButtonState::Released
                    },
                ),
                Pointer::Wheel(axis, steps) => {
                    let axis = if axis {
                        wl_pointer::Axis::HorizontalScroll
                    } else {
                        wl_pointer::Axis::VerticalScroll
                    };
                    pointer.axis_source(wl_pointer::AxisSource::Wheel);
                    pointer.axis_discrete(time, axis, 15.0 * f64::from(steps), steps);
                }
            }
            pointer.frame();
        }
        self.roundtrip()
    }
}

/// One pointer event for [`Compositor::send_pointer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pointer {
    /// To `(x, y)` on the output.
    Move(u32, u32),
    /// An evdev button code, pressed or released.
    Button(u32, bool),
    /// Wheel steps: horizontal when `true`; negative is up or left.
    Wheel(bool, i32),
}
