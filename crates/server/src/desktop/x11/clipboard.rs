//! The CLIPBOARD selection: written by owning it (through `arboard`, whose
//! thread serves the text to any client that asks, for as long as this
//! server lives), and read back the way any other client reads it, by a
//! `ConvertSelection` to a window of our own on a connection of our own,
//! so a read-back proves what other programs now get.

use std::time::{Duration, Instant};

use x11rb::connection::Connection;
use x11rb::protocol::Event;
use x11rb::protocol::xproto::{
    AtomEnum, ConnectionExt as _, CreateWindowAux, EventMask, Window as XWindow, WindowClass,
};
use x11rb::rust_connection::RustConnection;

use super::windows::Atoms;
use crate::engine::Refusal;

/// Longest text written at once (a larger one would need the INCR
/// protocol to read back).
pub(super) const MOST_BYTES: usize = crate::desktop::real::MOST_CLIPBOARD_BYTES;
/// How long a read-back waits for the owner's answer.
const READ_WAIT: Duration = Duration::from_secs(2);

/// The selection's reader: a connection and an unmapped window of its own.
pub(super) struct Reader {
    conn: RustConnection,
    window: XWindow,
    atoms: Atoms,
}

fn failed(what: &str, err: impl std::fmt::Display) -> Refusal {
    Refusal::plain(format!("reading the clipboard failed at {what}: {err}"))
}

impl Reader {
    /// Opens the reader on the display `$DISPLAY` names.
    pub(super) fn open() -> Result<Self, String> {
        let (conn, screen) = x11rb::connect(None).map_err(|e| e.to_string())?;
        let root = conn
            .setup()
            .roots
            .get(screen)
            .map(|s| s.root)
            .ok_or_else(|| format!("the display has no screen {screen}"))?;
        let atoms = Atoms::intern(&conn)?;
        let window = conn.generate_id().map_err(|e| e.to_string())?;
        conn.create_window(
            0,
            window,
            root,
            0,
            0,
            1,
            1,
            0,
            WindowClass::INPUT_ONLY,
            0,
            &CreateWindowAux::new().event_mask(EventMask::PROPERTY_CHANGE),
        )
        .map_err(|e| e.to_string())?;
        conn.flush().map_err(|e| e.to_string())?;
        Ok(Self {
            conn,
            window,
            atoms,
        })
    }

    /// The selection's text as its owner serves it now.
    pub(super) fn read(&self) -> Result<String, Refusal> {
        let (conn, atoms) = (&self.conn, &self.atoms);
        conn.delete_property(self.window, atoms.readback)
            .map_err(|e| failed("DeleteProperty", e))?;
        conn.convert_selection(
            self.window,
            atoms.clipboard,
            atoms.utf8_string,
            atoms.readback,
            x11rb::CURRENT_TIME,
        )
        .map_err(|e| failed("ConvertSelection", e))?;
        conn.flush().map_err(|e| failed("flush", e))?;
        let deadline = Instant::now() + READ_WAIT;
        let property = loop {
            match conn.poll_for_event().map_err(|e| failed("events", e))? {
                Some(Event::SelectionNotify(notify))
                    if notify.requestor == self.window && notify.selection == atoms.clipboard =>
                {
                    break notify.property;
                }
                Some(_) => continue,
                None if Instant::now() >= deadline => {
                    return Err(Refusal::plain(
                        "the clipboard's owner did not answer within 2 s",
                    ));
                }
                None => std::thread::sleep(Duration::from_millis(2)),
            }
        };
        if property == u32::from(AtomEnum::NONE) {
            return Err(Refusal::plain(
                "the clipboard has no owner, or its owner refused to give text",
            ));
        }
        let reply = conn
            .get_property(
                true,
                self.window,
                property,
                AtomEnum::ANY,
                0,
                (MOST_BYTES as u32) / 4 + 1,
            )
            .map_err(|e| failed("GetProperty", e))?
            .reply()
            .map_err(|e| failed("GetProperty", e))?;
        if reply.type_ == atoms.incr {
            return Err(Refusal::plain(format!(
                "the clipboard holds more than {MOST_BYTES} bytes"
            )));
        }
        String::from_utf8(reply.value)
            .map_err(|_| Refusal::plain("the clipboard's text is not UTF-8"))
    }
}

/// The selection's owner.
pub(super) struct Owner {
    clipboard: arboard::Clipboard,
}

impl Owner {
    /// Starts owning nothing yet, on the display `$DISPLAY` names.
    pub(super) fn open() -> Result<Self, String> {
        arboard::Clipboard::new()
            .map(|clipboard| Self { clipboard })
            .map_err(|e| e.to_string())
    }

    /// Takes the selection with `text`.
    pub(super) fn write(&mut self, text: &str) -> Result<(), Refusal> {
        if text.len() > MOST_BYTES {
            return Err(Refusal::new(
                "invalid_arguments",
                format!("arguments.text is longer than {MOST_BYTES} bytes"),
            ));
        }
        self.clipboard
            .set_text(text)
            .map_err(|e| Refusal::plain(format!("taking the clipboard failed: {e}")))
    }
}
