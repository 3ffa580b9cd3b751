//! Where Qt 5 finds the accessibility bus on X11: the root window's
//! `AT_SPI_BUS` property, which at-spi's launcher writes when it starts the
//! bus. An X server that resets (Xvfb without `-noreset`, once its last
//! client has gone) loses it, and then Debian's Qt 5.15 asks the session
//! bus instead, asynchronously: its bridge may start before the answer
//! comes and never register, so the application shows no tree (measured:
//! a third of the starts of a PyQt5 form). Qt 6 and GTK are not affected.
//!
//! When the property is missing, the server writes the address the
//! session's launcher gave it (and the `trusted` module checked), as the
//! launcher itself does, so a Qt 5 application started afterwards
//! registers. A property already there is never changed: it is the
//! launcher's (or the person's), and the server does not judge it.

use x11rb::connection::Connection;
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _, PropMode, Window as XWindow};
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

/// What became of the root window's `AT_SPI_BUS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BusProperty {
    /// It was there already (left as it was).
    Present,
    /// It was missing and has been written.
    Written,
    /// It could not be read or written (the display refused).
    Failed,
}

/// Writes `address` as the root window's `AT_SPI_BUS` when it has none.
pub(super) fn publish(conn: &RustConnection, root: XWindow, address: &str) -> BusProperty {
    let Ok(atom) = conn
        .intern_atom(false, b"AT_SPI_BUS")
        .map_err(|_| ())
        .and_then(|c| c.reply().map_err(|_| ()))
        .map(|r| r.atom)
    else {
        return BusProperty::Failed;
    };
    let present = conn
        .get_property(false, root, atom, AtomEnum::ANY, 0, 1)
        .map_err(|_| ())
        .and_then(|c| c.reply().map_err(|_| ()));
    match present {
        Err(()) => return BusProperty::Failed,
        Ok(reply) if reply.type_ != u32::from(AtomEnum::NONE) => return BusProperty::Present,
        Ok(_) => {}
    }
    let written = conn
        .change_property8(
            PropMode::REPLACE,
            root,
            atom,
            AtomEnum::STRING,
            address.as_bytes(),
        )
        .map_err(|_| ())
        .and_then(|c| c.check().map_err(|_| ()))
        .and_then(|()| conn.flush().map_err(|_| ()));
    match written {
        Ok(()) => BusProperty::Written,
        Err(()) => BusProperty::Failed,
    }
}
