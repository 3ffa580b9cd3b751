//! What a real desktop's action notes for its own next steps: the text it
//! put on the clipboard, whether that text is a secret, the elements it
//! wrote (for the read-back) and whether it acted by element (so there is
//! no pointer to put back).
//!
//! The X11 and Wayland desktops keep it the same way, behind a lock of its
//! own, because the engine calls a desktop with `&self` from any thread
//! (see [`crate::DesktopBackend`]). The engine runs one mutation at a time
//! on a desktop, so the notes of two actions never mix.

use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::desktop::atspi::Node;

/// One action's notes, as its steps (before the effect, the effect, the
/// check, the restore) leave them.
#[derive(Debug, Default)]
pub(crate) struct Notes {
    /// The clipboard text this process wrote last.
    pub written: Option<String>,
    /// That text was labelled credential or payment: it goes with this
    /// process, never to a keeper or a clipboard manager.
    pub written_secret: bool,
    /// The action about to be sent is labelled credential or payment.
    pub writing_secret: bool,
    /// The elements the last element action wrote, for its read-back.
    pub written_elements: Vec<Node>,
    /// The last mutation was an element action (nothing to restore).
    pub acted_by_element: bool,
    /// The action about to be sent was asked for in the foreground: it
    /// may take the focus and send keys (a web page's field is typed
    /// into).
    pub foreground: bool,
}

/// [`Notes`] behind their lock.
#[derive(Debug, Default)]
pub(crate) struct Noted(Mutex<Notes>);

impl Noted {
    /// The notes, for reading or writing. A step that panicked left them
    /// as they were at that point, which is still what was done.
    pub(crate) fn get(&self) -> MutexGuard<'_, Notes> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The notes, on a desktop being dropped (no other thread has it).
    pub(crate) fn take(&mut self) -> Notes {
        std::mem::take(self.0.get_mut().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Whether an envelope's data labels name a secret (credential, payment).
pub(crate) fn labels_a_secret(envelope: &serde_json::Value) -> bool {
    use adk_computer_use::contracts::DataLabel;
    envelope
        .get("dataLabels")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|labels| {
            labels
                .iter()
                .any(|l| l == DataLabel::Credential.as_str() || l == DataLabel::Payment.as_str())
        })
}
