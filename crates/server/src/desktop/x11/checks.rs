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
        let wanted = args.get("text").and_then(Value::as_str);
        // The owner's thread takes the selection on its own connection; the
        // X server may answer this reader before it has seen that, so the
        // read is repeated, briefly, until the text is served.
        let deadline = Instant::now() + CLIPBOARD_WAIT;
        let mut read = self.reader.read().ok();
        while read.as_deref() != wanted && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
            read = self.reader.read().ok();
        }
        let digest_holds = match postcondition {
            None => true,
            Some(p) => match serde_json::from_value::<ActionPostcondition>(p.clone()) {
                Ok(p) => p
                    .expected_digest()
                    .is_none_or(|d| read.as_deref().map(sha256_prefixed).as_deref() == Some(d)),
                Err(_) => false,
            },
        };
        // A read-back proves what every client gets only while this
        // process owns the selection: an owner may answer each requestor
        // differently. The X server names the owning client's process.
        let ours = self.selection_is_ours();
        EffectCheck {
            verified: ours && wanted.is_some() && read.as_deref() == wanted && digest_holds,
            method: "x11_selection_readback",
            checks: 2,
        }
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
