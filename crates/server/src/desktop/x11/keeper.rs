//! The clipboard after the server exits.
//!
//! An X11 selection lives only as long as the client that owns it: when
//! the server that wrote the clipboard exits, the text is gone, though the
//! person asked for it "on my clipboard". Two things keep it:
//!
//! - a **clipboard manager** (ICCCM's `CLIPBOARD_MANAGER` selection, which
//!   desktop sessions run): `arboard` hands it the text (`SAVE_TARGETS`)
//!   when its last clipboard is dropped, so nothing else is needed;
//! - otherwise a **keeper**: a small process of its own
//!   (`computer-use-clipboard`, a binary of this crate) that takes the
//!   selection with the same text and serves it until another client takes
//!   the selection or the X server goes away, as `xclip` does. It is
//!   started with its standard output and error on `/dev/null` and its
//!   input closed once the text is read, in a process group of its own: a
//!   caller that reads the exiting program's output reaches its end at
//!   once, and a Ctrl-C meant for that program does not reach the keeper.
//!
//! The hand-off happens when the X11 desktop is dropped (the server's end)
//! and only while the selection is still this process's: text another
//! program copied since is not taken back.

use std::path::Path;
use std::time::{Duration, Instant};

use x11rb::connection::Connection;
use x11rb::protocol::xproto::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;

use super::windows;

/// The keeper's binary name.
pub const KEEPER_BINARY: &str = "computer-use-clipboard";
/// Names the keeper's path, or `off` to keep nothing after exit.
pub const KEEPER_ENV: &str = "COMPUTER_USE_CLIPBOARD_KEEPER";
/// How long the exiting server waits for the keeper to own the selection.
const TAKE_WAIT: Duration = Duration::from_secs(3);
/// How often the keeper looks whether the selection is still its own.
const LOOK_EVERY: Duration = Duration::from_millis(200);

/// What became of the clipboard's text at the server's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum HandOff {
    /// A clipboard manager runs: `arboard` hands the text to it.
    Manager,
    /// A keeper (this process id) now owns the selection.
    Keeper(u32),
}

/// The process id of the CLIPBOARD selection's owner, as the X server
/// records it.
fn owner_pid(conn: &RustConnection, clipboard: u32) -> Option<u32> {
    let owner = conn
        .get_selection_owner(clipboard)
        .ok()?
        .reply()
        .ok()?
        .owner;
    (owner != x11rb::NONE)
        .then(|| windows::owner_pid(conn, owner))
        .flatten()
}

/// Whether a clipboard manager owns `CLIPBOARD_MANAGER`.
fn manager_runs(conn: &RustConnection) -> bool {
    conn.intern_atom(true, b"CLIPBOARD_MANAGER")
        .ok()
        .and_then(|c| c.reply().ok())
        .map(|r| r.atom)
        .filter(|atom| *atom != x11rb::NONE)
        .and_then(|atom| conn.get_selection_owner(atom).ok()?.reply().ok())
        .is_some_and(|r| r.owner != x11rb::NONE)
}

/// Hands `text`, which this process serves on CLIPBOARD now, to whatever
/// keeps it after exit: the clipboard manager, or a keeper started here.
pub(super) fn hand_off(
    conn: &RustConnection,
    clipboard: u32,
    text: &str,
) -> Result<HandOff, String> {
    if manager_runs(conn) {
        return Ok(HandOff::Manager);
    }
    let path = crate::desktop::real::keeper_path(KEEPER_BINARY, "x11")?;
    start_keeper(&path, conn, clipboard, text)
}

fn start_keeper(
    path: &Path,
    conn: &RustConnection,
    clipboard: u32,
    text: &str,
) -> Result<HandOff, String> {
    // The keeper gets the display and nothing else of this process's
    // environment (which may hold an embedding program's keys).
    let mut child =
        crate::desktop::real::start_keeper(path, &["DISPLAY", "XAUTHORITY"], text, false)?;
    let pid = child.id();
    let deadline = Instant::now() + TAKE_WAIT;
    while Instant::now() < deadline {
        if owner_pid(conn, clipboard) == Some(pid) {
            // The keeper outlives this process; a thread waits for it, so a
            // long-lived embedding process leaves no zombie.
            std::thread::spawn(move || {
                let _ = child.wait();
            });
            return Ok(HandOff::Keeper(pid));
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "the keeper exited before owning the clipboard ({status})"
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    Err(format!(
        "the keeper did not own the clipboard within {} ms",
        TAKE_WAIT.as_millis()
    ))
}

/// The keeper itself: reads the text from standard input (to its end, at
/// most 64 KiB), takes CLIPBOARD with it, and serves it until another
/// client owns the selection or the display goes away.
pub fn keep_from_stdin() -> Result<(), String> {
    let text = crate::desktop::real::keeper_text_from_stdin()?;
    let (conn, _) = x11rb::connect(None).map_err(|e| e.to_string())?;
    let clipboard = conn
        .intern_atom(false, b"CLIPBOARD")
        .map_err(|e| e.to_string())?
        .reply()
        .map_err(|e| e.to_string())?
        .atom;
    let mut owner = arboard::Clipboard::new().map_err(|e| e.to_string())?;
    owner.set_text(text).map_err(|e| e.to_string())?;
    let me = std::process::id();
    // Serve (arboard's thread answers requests) while the selection is
    // ours; a lost connection reads as not ours, and ends the keeper.
    let deadline = Instant::now() + TAKE_WAIT;
    while owner_pid(&conn, clipboard) != Some(me) {
        if Instant::now() > deadline {
            return Err("the selection was not ours after taking it".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    while owner_pid(&conn, clipboard) == Some(me) {
        std::thread::sleep(LOOK_EVERY);
    }
    drop(conn.flush());
    Ok(())
}
