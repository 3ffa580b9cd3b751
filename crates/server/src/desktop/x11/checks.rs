//! After the effect: what the X server itself shows (the selection and who
//! owns it, a file's content, a window's state), never what a client may
//! write.

use serde_json::Value;

use super::*;

pub(super) use crate::desktop::files::file_holds;

impl X11Desktop {
    /// Whether the CLIPBOARD selection's owner is a client of this very
    /// process, as the X server records the owner's process.
    pub(super) fn selection_is_ours(&self) -> bool {
        let owner = self
            .conn
            .get_selection_owner(self.atoms.clipboard)
            .ok()
            .and_then(|c| c.reply().ok())
            .map(|r| r.owner)
            .filter(|owner| *owner != x11rb::NONE);
        owner
            .and_then(|owner| windows::owner_pid(&self.conn, owner))
            .is_some_and(|pid| pid == std::process::id())
    }
}

impl crate::desktop::real::Checks for X11Desktop {
    const INPUT_SENT: &'static str = "x11_input_sent";

    fn clipboard_check(&self, args: &Value, postcondition: Option<&Value>) -> EffectCheck {
        // The owner's thread takes the selection on its own connection; the
        // X server may answer this reader before it has seen that. Only
        // while this process owns the selection does a read-back prove
        // anything: the X server names the owning client's process.
        crate::desktop::real::clipboard_readback(
            args,
            postcondition,
            Duration::from_millis(2),
            &|| self.reader.read().ok(),
            &|| self.selection_is_ours(),
            "x11_selection_readback",
        )
    }

    fn postcondition_check(&self, postcondition: &Value) -> EffectCheck {
        // A window is judged by what the X server keeps (destroyed, or not
        // viewable), never by a property another client could delete.
        crate::desktop::real::postcondition_check(
            postcondition,
            &crate::desktop::real::CheckNames {
                unobservable: "x11_unobservable",
                window: "x11_window_state",
                filesystem: "x11_filesystem_read",
            },
            &|window_id| {
                u32::try_from(window_id)
                    .ok()
                    .and_then(|id| windows::shown_by_server(&self.conn, id))
            },
        )
    }
}
