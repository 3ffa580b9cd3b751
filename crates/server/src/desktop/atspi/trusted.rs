//! Which accessibility bus the server trusts: the one this session's
//! launcher started, in a directory of this user's own that no other
//! session shares.
//!
//! The session bus names the accessibility bus (`org.a11y.Bus.GetAddress`).
//! Without `XDG_RUNTIME_DIR`, at-spi puts that bus's socket under the home
//! directory (`~/.cache/at-spi`), which every session of the user shares:
//! two sessions of one machine were seen to collide there, each one's
//! applications on the other's bus, and any process of the user can stand
//! a bus of its own at that path. So the server trusts the bus only when
//!
//! - the name `org.a11y.Bus` on the session bus is owned by a process of
//!   this server's user (the session's launcher, not a stranger's),
//! - its address is a socket file (never an abstract socket, whose name
//!   anyone on the machine can take first), not under the home directory,
//! - the socket and its directory are this user's, and the directory is
//!   closed to everyone else (no access for group or others),
//!
//! and refuses the accessibility layer otherwise (`accessibility_untrusted`,
//! naming which condition failed). Element tools then answer
//! `accessibility_unavailable` with that reason; the desktop's other tools
//! are unaffected. The bus's runtime directory need not be the server's own
//! `XDG_RUNTIME_DIR`: a server for a compositor of another user points
//! that at the compositor's directory while its session bus is its own.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use atspi::zbus;

use crate::engine::Refusal;

fn untrusted(why: impl Into<String>) -> Refusal {
    Refusal::new("accessibility_untrusted", why)
}

/// The user this server runs as: the owner of its own process entry.
fn own_uid() -> Result<u32, Refusal> {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .map_err(|_| untrusted("this server's own user cannot be read from /proc/self"))
}

/// The socket file an address names, when it names one plainly
/// (`unix:path=…`, with no escaped characters).
fn socket_path(address: &str) -> Option<PathBuf> {
    let keys = address.strip_prefix("unix:")?;
    let path = keys.split(',').find_map(|k| k.strip_prefix("path="))?;
    (!path.is_empty() && !path.contains('%')).then(|| PathBuf::from(path))
}

/// Whether `socket` passes the rules above for `uid`, with `home` the
/// user's home directory; the reason when it does not.
pub(super) fn check_socket(socket: &Path, home: Option<&Path>, uid: u32) -> Result<(), Refusal> {
    let socket = socket
        .canonicalize()
        .map_err(|_| untrusted("the accessibility bus's socket file cannot be found"))?;
    if let Some(home) = home.and_then(|h| h.canonicalize().ok())
        && socket.starts_with(&home)
    {
        return Err(untrusted(
            "the accessibility bus's socket is under the home directory, which every session of this user shares (at-spi puts it there when its session has no XDG_RUNTIME_DIR): start the session's bus with an XDG_RUNTIME_DIR of its own",
        ));
    }
    let dir = socket
        .parent()
        .ok_or_else(|| untrusted("the accessibility bus's socket has no directory"))?;
    let meta = std::fs::metadata(dir)
        .map_err(|_| untrusted("the accessibility bus's directory cannot be read"))?;
    if meta.uid() != uid || meta.mode() & 0o077 != 0 {
        return Err(untrusted(format!(
            "the accessibility bus's directory is not this user's own closed directory (owner {}, mode {:o}; it must be owned by user {uid} with no access for group or others)",
            meta.uid(),
            meta.mode() & 0o777
        )));
    }
    let owner = std::fs::metadata(&socket)
        .map_err(|_| untrusted("the accessibility bus's socket file cannot be read"))?
        .uid();
    if owner != uid {
        return Err(untrusted(format!(
            "the accessibility bus's socket belongs to user {owner}, not to this server's user {uid}"
        )));
    }
    Ok(())
}

/// The address of the accessibility bus this session's launcher started,
/// once every rule holds.
pub(super) async fn trusted_address() -> Result<String, Refusal> {
    let uid = own_uid()?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let session = zbus::Connection::session()
        .await
        .map_err(|_| untrusted("the session bus cannot be reached"))?;
    // Asking for the address starts the session's launcher when it is
    // not running yet; then who runs it is asked.
    let reply = session
        .call_method(
            Some("org.a11y.Bus"),
            "/org/a11y/bus",
            Some("org.a11y.Bus"),
            "GetAddress",
            &(),
        )
        .await
        .map_err(|_| untrusted("the launcher did not give the accessibility bus's address"))?;
    let address: String = reply
        .body()
        .deserialize()
        .map_err(|_| untrusted("the launcher's answer is not an address"))?;
    let launcher = zbus::names::BusName::try_from("org.a11y.Bus")
        .map_err(|_| untrusted("the launcher's bus name is malformed"))?;
    let dbus = zbus::fdo::DBusProxy::new(&session)
        .await
        .map_err(|_| untrusted("the session bus cannot be asked who runs the launcher"))?;
    let owner = dbus
        .get_connection_unix_user(launcher)
        .await
        .map_err(|_| untrusted("no accessibility bus launcher runs on the session bus"))?;
    if owner != uid {
        return Err(untrusted(format!(
            "the session bus's accessibility launcher runs as user {owner}, not as this server's user {uid}"
        )));
    }
    let socket = socket_path(&address).ok_or_else(|| {
        untrusted(
            "the accessibility bus is not at a plain socket file (an abstract socket's name can be taken by anyone on the machine)",
        )
    })?;
    check_socket(&socket, home.as_deref(), uid)?;
    announce(&session).await;
    Ok(address)
}

/// Announces an assistive technology on this session, as a screen reader
/// does: the launcher's `org.a11y.Status.IsEnabled` is set. Browsers
/// (Firefox, Chromium) expose their windows on the bus only when it is
/// set; GTK and Qt follow it too. A launcher that refuses leaves those
/// browsers' windows unexposed, which their trees then say; nothing else
/// depends on it.
///
/// It outlives the server: at-spi's launcher keeps it in the person's
/// settings (`org.gnome.desktop.interface toolkit-accessibility`), as it
/// does for a screen reader, and the server does not put it back.
/// `COMPUTER_USE_ANNOUNCE_AT=0` leaves it alone.
async fn announce(session: &zbus::Connection) {
    if std::env::var("COMPUTER_USE_ANNOUNCE_AT").is_ok_and(|v| v == "0") {
        return;
    }
    let announced = async {
        atspi::proxy::bus::StatusProxy::new(session)
            .await?
            .set_is_enabled(true)
            .await
    };
    if announced.await.is_err() {
        tracing::debug!("the accessibility launcher did not take IsEnabled");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_a_plain_socket_file_is_an_address_kept() {
        assert_eq!(
            socket_path("unix:path=/run/user/1000/at-spi/bus_0,guid=ab12"),
            Some(PathBuf::from("/run/user/1000/at-spi/bus_0"))
        );
        assert_eq!(socket_path("unix:abstract=/tmp/dbus-x,guid=1"), None);
        assert_eq!(socket_path("tcp:host=127.0.0.1,port=4000"), None);
        assert_eq!(socket_path("unix:path=/run/user/1%2Fx"), None);
    }

    #[test]
    fn a_socket_under_home_or_in_an_open_or_strange_directory_is_refused() {
        let uid = own_uid().unwrap();
        let code = |r: Result<(), Refusal>| r.err().map(|r| r.code);
        let closed = |dir: &Path| {
            std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .unwrap();
        };
        let runtime = tempfile::tempdir().unwrap();
        closed(runtime.path());
        let socket = runtime.path().join("bus");
        std::fs::write(&socket, "").unwrap();
        assert!(check_socket(&socket, None, uid).is_ok());

        // The same closed directory, under the home directory.
        let home = tempfile::tempdir().unwrap();
        let cache = home.path().join(".cache/at-spi");
        std::fs::create_dir_all(&cache).unwrap();
        closed(&cache);
        let shared = cache.join("bus");
        std::fs::write(&shared, "").unwrap();
        assert!(check_socket(&shared, None, uid).is_ok());
        let untrusted = Some("accessibility_untrusted".to_owned());
        assert_eq!(
            code(check_socket(&shared, Some(home.path()), uid)),
            untrusted
        );

        std::fs::set_permissions(
            runtime.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        assert_eq!(code(check_socket(&socket, None, uid)), untrusted);
        closed(runtime.path());
        // Another user's directory and socket (as this user sees them).
        assert_eq!(code(check_socket(&socket, None, uid + 1)), untrusted);
    }
}
