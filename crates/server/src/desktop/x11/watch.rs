//! The person at the machine: input this server did not send.
//!
//! The seeds make the server the authority for a physical user's
//! interruption. A person who moves the mouse or types while an agent
//! works has taken the machine back, and the agent must stop before its
//! next step. X11 reports every input event to a client that selects
//! XInput2's raw events on the root window, whatever window has focus, so
//! a thread on a connection of its own counts them.
//!
//! Each raw event names the device it came from. Input from a device
//! that is not an XTEST device (a keyboard, a mouse, a tablet) is a
//! person's, always. XTEST input (ours, and any other client's) comes from
//! the XTEST devices, and nothing in it tells clients apart; so for those
//! the attribution is by time, as upstream's backends do it when they
//! cannot tell injected input from a device's: while this server sends
//! input, and for a grace period after ([`GRACE`]), XTEST events are taken
//! as ours; every other one counts as a person's. Another program's XTEST
//! input inside that window is missed; outside it (another agent's server
//! on the same display, `xdotool`) it counts as a person's, which fails
//! closed. A watch that stops (the connection broke) counts as a takeover
//! for good.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use x11rb::connection::Connection as _;
use x11rb::protocol::Event;
use x11rb::protocol::xinput::{ConnectionExt as _, EventMask, XIEventMask};

/// How long after this server's own input ends raw events are still taken
/// as its own: the time they may take to reach the watching thread.
pub const GRACE: Duration = Duration::from_millis(750);

/// XInput2's "all devices" (raw events come from the physical, slave, devices).
const ALL_DEVICES: u16 = 0;

/// What the watching thread and the input path share.
#[derive(Debug)]
pub(super) struct Watch {
    started: Instant,
    /// Input sends in flight.
    sending: AtomicUsize,
    /// Until when (ms since `started`) raw events are taken as ours.
    ours_until_ms: AtomicU64,
    /// Raw events seen that were not ours: the person's.
    foreign: AtomicU64,
    /// The XTEST devices' ids, as the display listed them at start.
    xtest: Vec<u16>,
    /// The watching thread ended: nothing is watched any more.
    stopped: std::sync::atomic::AtomicBool,
}

impl Watch {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Marks this server's input as being sent until the returned guard
    /// is dropped, and for [`GRACE`] after.
    pub(super) fn sending(self: &Arc<Self>) -> Sending {
        self.sending.fetch_add(1, Ordering::SeqCst);
        Sending(Arc::clone(self))
    }

    fn saw_event(&self, source: u16) {
        let injected = self.xtest.contains(&source);
        let ours = injected
            && (self.sending.load(Ordering::SeqCst) > 0
                || self.now_ms() <= self.ours_until_ms.load(Ordering::SeqCst));
        if !ours {
            self.foreign.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// How many raw input events came from someone else so far; the
    /// largest count once the watch stopped (a takeover for good).
    pub(super) fn foreign(&self) -> u64 {
        if self.stopped.load(Ordering::SeqCst) {
            return u64::MAX;
        }
        self.foreign.load(Ordering::SeqCst)
    }
}

/// This server's input in flight (see [`Watch::sending`]).
pub(super) struct Sending(Arc<Watch>);

impl Drop for Sending {
    fn drop(&mut self) {
        let grace = u64::try_from(GRACE.as_millis()).unwrap_or(u64::MAX);
        let until = self.0.now_ms().saturating_add(grace);
        self.0.ours_until_ms.fetch_max(until, Ordering::SeqCst);
        self.0.sending.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Starts watching the display `$DISPLAY` names on a thread of its own.
/// Fails when the display has no XInput 2 (nothing could be watched).
pub(super) fn start() -> Result<Arc<Watch>, String> {
    let (conn, screen) = x11rb::connect(None).map_err(|e| e.to_string())?;
    let root = conn
        .setup()
        .roots
        .get(screen)
        .map(|s| s.root)
        .ok_or_else(|| format!("the display has no screen {screen}"))?;
    // From XInput 2.1 on, raw events reach the root window even while
    // another client holds a grab (an open menu, a drag); 2.0 would lose
    // them then.
    let version = conn
        .xinput_xi_query_version(2, 2)
        .map_err(|e| e.to_string())?
        .reply()
        .map_err(|e| format!("the display has no XInput 2: {e}"))?;
    if (version.major_version, version.minor_version) < (2, 1) {
        return Err(format!(
            "the display offers XInput {}.{}, and raw events need 2.1 or later",
            version.major_version, version.minor_version
        ));
    }
    let xtest = conn
        .xinput_xi_query_device(ALL_DEVICES)
        .map_err(|e| e.to_string())?
        .reply()
        .map_err(|e| format!("the display's input devices cannot be listed: {e}"))?
        .infos
        .iter()
        .filter(|device| String::from_utf8_lossy(&device.name).contains("XTEST"))
        .map(|device| device.deviceid)
        .collect();
    conn.xinput_xi_select_events(
        root,
        &[EventMask {
            deviceid: ALL_DEVICES,
            mask: vec![
                XIEventMask::RAW_MOTION
                    | XIEventMask::RAW_KEY_PRESS
                    | XIEventMask::RAW_BUTTON_PRESS,
            ],
        }],
    )
    .map_err(|e| e.to_string())?
    .check()
    .map_err(|e| format!("raw input events cannot be selected: {e}"))?;
    let watch = Arc::new(Watch {
        started: Instant::now(),
        sending: AtomicUsize::new(0),
        ours_until_ms: AtomicU64::new(0),
        foreign: AtomicU64::new(0),
        xtest,
        stopped: std::sync::atomic::AtomicBool::new(false),
    });
    let seen = Arc::clone(&watch);
    std::thread::Builder::new()
        .name("x11-input-watch".into())
        .spawn(move || {
            // Ends when the display goes away (the connection fails): then
            // the watch reports a takeover for good.
            while let Ok(event) = conn.wait_for_event() {
                match event {
                    Event::XinputRawMotion(raw) | Event::XinputRawButtonPress(raw) => {
                        seen.saw_event(raw.sourceid);
                    }
                    Event::XinputRawKeyPress(raw) => seen.saw_event(raw.sourceid),
                    _ => {}
                }
            }
            seen.stopped.store(true, Ordering::SeqCst);
        })
        .map_err(|e| format!("the watching thread could not start: {e}"))?;
    Ok(watch)
}
