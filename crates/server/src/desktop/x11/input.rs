//! Input through XTEST: the pointer moved, buttons pressed and released,
//! keys typed by keycode, as if from the devices themselves.
//!
//! Every action is planned in full before anything is sent: each character
//! of a text must have a key on the current keyboard map, each key name
//! must be known, every point must lie inside the target window and not be
//! covered by another window. A plan that cannot be carried out whole is
//! refused, and then nothing at all reaches the display.

use serde_json::Value;
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{
    BUTTON_PRESS_EVENT, BUTTON_RELEASE_EVENT, ConnectionExt as _, KEY_PRESS_EVENT,
    KEY_RELEASE_EVENT, Keycode, Keysym, MOTION_NOTIFY_EVENT, Window as XWindow,
};
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;

use crate::engine::Refusal;

/// Longest text `type` takes at once.
pub(super) const MOST_TYPED: usize = 4096;
/// Most wheel steps one `scroll` sends.
use crate::desktop::keys::{SHIFT_L, char_keysym, named_keysym};

/// One event to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Event {
    Move(i16, i16),
    Button(u8, bool),
    Key(Keycode, bool),
}

fn invalid(message: impl Into<String>) -> Refusal {
    Refusal::new("invalid_arguments", message)
}

/// The keyboard map: for each keysym, a keycode and whether Shift is held.
pub(super) struct Keymap {
    entries: Vec<(Keysym, Keycode, bool)>,
    shift: Option<Keycode>,
}

impl Keymap {
    /// Reads the server's keyboard map.
    pub(super) fn read(conn: &RustConnection) -> Result<Self, Refusal> {
        let setup = conn.setup();
        let (min, max) = (setup.min_keycode, setup.max_keycode);
        let reply = conn
            .get_keyboard_mapping(min, max - min + 1)
            .map_err(|e| Refusal::plain(format!("GetKeyboardMapping was not sent: {e}")))?
            .reply()
            .map_err(|e| Refusal::plain(format!("GetKeyboardMapping failed: {e}")))?;
        let per = usize::from(reply.keysyms_per_keycode);
        let mut entries = Vec::new();
        if per > 0 {
            for (i, syms) in reply.keysyms.chunks(per).enumerate() {
                let Ok(code) = Keycode::try_from(usize::from(min) + i) else {
                    break;
                };
                for (level, sym) in syms.iter().take(2).enumerate() {
                    if *sym != 0 {
                        entries.push((*sym, code, level == 1));
                    }
                }
            }
        }
        let shift = entries
            .iter()
            .find(|(sym, _, _)| *sym == SHIFT_L)
            .map(|(_, code, _)| *code);
        Ok(Self { entries, shift })
    }

    /// The key and Shift state that give `sym`, preferring no Shift.
    fn find(&self, sym: Keysym) -> Option<(Keycode, bool)> {
        let mut found = self.entries.iter().filter(|(s, _, _)| *s == sym);
        let first = found.next()?;
        let best = std::iter::once(first)
            .chain(found)
            .min_by_key(|(_, _, shifted)| *shifted)?;
        Some((best.1, best.2))
    }

    /// Presses and releases that give `sym`.
    fn stroke(&self, sym: Keysym, what: &str) -> Result<Vec<Event>, Refusal> {
        let (code, shifted) = self
            .find(sym)
            .ok_or_else(|| invalid(format!("{what} has no key on this keyboard map")))?;
        let mut events = Vec::new();
        let shift = match (shifted, self.shift) {
            (false, _) => None,
            (true, Some(shift)) => Some(shift),
            (true, None) => {
                return Err(invalid(format!(
                    "{what} needs Shift, which this keyboard map lacks"
                )));
            }
        };
        if let Some(shift) = shift {
            events.push(Event::Key(shift, true));
        }
        events.push(Event::Key(code, true));
        events.push(Event::Key(code, false));
        if let Some(shift) = shift {
            events.push(Event::Key(shift, false));
        }
        Ok(events)
    }

    /// The events that type `text`.
    pub(super) fn type_text(&self, text: &str) -> Result<Vec<Event>, Refusal> {
        if text.chars().count() > MOST_TYPED {
            return Err(invalid(format!(
                "arguments.text is longer than {MOST_TYPED} characters"
            )));
        }
        let mut events = Vec::new();
        for ch in text.chars() {
            events.extend(self.stroke(char_keysym(ch), &format!("the character {ch:?}"))?);
        }
        Ok(events)
    }

    /// The events of a chord such as `ctrl+shift+t` or `Return`.
    pub(super) fn chord(&self, chord: &str) -> Result<Vec<Event>, Refusal> {
        let names: Vec<&str> = chord.split('+').map(str::trim).collect();
        if names.is_empty() || names.iter().any(|n| n.is_empty()) || names.len() > 5 {
            return Err(invalid(format!(
                "arguments.text {chord:?} is not a key chord"
            )));
        }
        let mut codes = Vec::new();
        for name in &names {
            let sym = named_keysym(name)
                .ok_or_else(|| invalid(format!("unknown key name {name:?} in {chord:?}")))?;
            let (code, _) = self
                .find(sym)
                .ok_or_else(|| invalid(format!("the key {name:?} is not on this keyboard map")))?;
            codes.push(code);
        }
        let mut events: Vec<Event> = codes.iter().map(|c| Event::Key(*c, true)).collect();
        events.extend(codes.iter().rev().map(|c| Event::Key(*c, false)));
        Ok(events)
    }
}

pub(super) use crate::desktop::real::point;

/// Wheel presses for `scroll`: the button and how many steps.
pub(super) fn wheel(args: &Value) -> Result<Vec<Event>, Refusal> {
    use crate::desktop::real::Wheel;
    let (direction, steps) = crate::desktop::real::wheel(args)?;
    let button = match direction {
        Wheel::Up => 4,
        Wheel::Down => 5,
        Wheel::Left => 6,
        Wheel::Right => 7,
    };
    let mut events = Vec::new();
    for _ in 0..steps {
        events.push(Event::Button(button, true));
        events.push(Event::Button(button, false));
    }
    Ok(events)
}

/// A point as the protocol's 16-bit coordinates.
pub(super) fn on_screen(point: (i64, i64)) -> Result<(i16, i16), Refusal> {
    match (i16::try_from(point.0), i16::try_from(point.1)) {
        (Ok(x), Ok(y)) => Ok((x, y)),
        _ => Err(invalid(format!(
            "the point {point:?} is off any X11 screen"
        ))),
    }
}

/// Sends `events` and waits until the server has processed them, marked
/// as this server's own for the person's `watch`.
pub(super) fn send(
    conn: &RustConnection,
    root: XWindow,
    events: &[Event],
    watch: Option<&std::sync::Arc<super::watch::Watch>>,
) -> Result<(), Refusal> {
    let _ours = watch.map(super::watch::Watch::sending);
    let failed = |e: &dyn std::fmt::Display| Refusal::plain(format!("XTEST input failed: {e}"));
    for event in events {
        let (kind, detail, x, y) = match *event {
            Event::Move(x, y) => (MOTION_NOTIFY_EVENT, 0, x, y),
            Event::Button(button, true) => (BUTTON_PRESS_EVENT, button, 0, 0),
            Event::Button(button, false) => (BUTTON_RELEASE_EVENT, button, 0, 0),
            Event::Key(code, true) => (KEY_PRESS_EVENT, code, 0, 0),
            Event::Key(code, false) => (KEY_RELEASE_EVENT, code, 0, 0),
        };
        conn.xtest_fake_input(kind, detail, x11rb::CURRENT_TIME, root, x, y, 0)
            .map_err(|e| failed(&e))?;
    }
    // A round trip: every event above has been processed when it answers.
    conn.get_input_focus()
        .map_err(|e| failed(&e))?
        .reply()
        .map_err(|e| failed(&e))?;
    Ok(())
}
