//! The simulated desktop behind the rules engine's one seam: each question
//! the engine asks a desktop, answered from the simulated state.

use super::*;
use adk_computer_use::contracts::catalogue::tool;

/// The simulated desktop as the engine holds it: behind a lock of its own,
/// since the engine calls its desktop from any thread with `&self`. Its
/// calls only read and write memory, so one lock for all of them holds up
/// nothing.
pub struct SimulatedBackend(std::sync::Mutex<SimulatedDesktop>);

impl SimulatedBackend {
    /// The simulated desktop, as a desktop the engine can hold.
    pub fn new(desktop: SimulatedDesktop) -> Self {
        Self(std::sync::Mutex::new(desktop))
    }

    fn world(&self) -> std::sync::MutexGuard<'_, SimulatedDesktop> {
        // A call that panicked left the desktop as it was at that point:
        // still a desktop to answer from.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl From<SimulatedDesktop> for SimulatedBackend {
    fn from(desktop: SimulatedDesktop) -> Self {
        Self::new(desktop)
    }
}

impl crate::engine::DesktopBackend for SimulatedBackend {
    fn kind(&self) -> &'static str {
        "simulated"
    }

    fn performs(&self, name: &str) -> bool {
        matches!(
            name,
            tool::SNAPSHOT
                | tool::LIST_WINDOWS
                | tool::GET_UI_TREE
                | tool::READ_CLIPBOARD
                | tool::WRITE_CLIPBOARD
                | tool::SET_VALUE
                | tool::FILL_FORM
                | tool::FOCUS_WINDOW
                | tool::LEFT_CLICK
                | tool::MOVE_CURSOR
                | tool::WRITE_FILE
                | tool::DELETE_FILE
        )
    }

    fn window_shown_now(&self, window_id: u64) -> Option<bool> {
        let d = self.world();
        Some(
            d.apps
                .iter()
                .any(|app| app.windows.iter().any(|w| w.id == window_id)),
        )
    }

    fn file_holds_now(&self, path: &str, exists: bool, content_digest: Option<&str>) -> bool {
        let d = self.world();
        let content = d.files.get(path);
        content.is_some() == exists
            && content_digest
                .is_none_or(|want| content.map(sha256_prefixed).as_deref() == Some(want))
    }

    fn simulated(&self) -> Option<SimulatedDesktop> {
        Some(self.world().clone())
    }

    fn is_current(&self, target: &TargetEvidence, _round: Revalidation) -> bool {
        let d = self.world();
        SimulatedDesktop::is_current(&d, target)
    }

    fn snapshot(&self, _window: Option<u64>) -> Result<Frame, Refusal> {
        let d = self.world();
        Ok(Frame {
            png_base64: SNAPSHOT_PNG.to_owned(),
            digest: d.screenshot_hash(),
        })
    }

    fn snapshot_fields(&self, _window: Option<u64>) -> Value {
        let d = self.world();
        json!({
            "revision": d.revision,
            "cursor": [d.cursor.0, d.cursor.1],
            "focus": d.focus,
        })
    }

    fn list_windows(&self) -> Result<Value, Refusal> {
        Ok(SimulatedDesktop::list_windows(&self.world()))
    }

    fn ui_tree(
        &self,
        app_id: Option<&str>,
        window_id: Option<u64>,
        _max_depth: Option<usize>,
    ) -> Result<Value, Refusal> {
        let d = self.world();
        SimulatedDesktop::ui_tree(&d, app_id, window_id)
    }

    fn elements(&self, app_id: &str, window_id: u64) -> Result<Vec<Element>, &'static str> {
        let d = self.world();
        d.window(app_id, Some(&WindowId::Number(window_id)))
            .map(|w| w.elements.clone())
            .ok_or("invalid_field")
    }

    fn read_clipboard(&self) -> Result<String, Refusal> {
        let d = self.world();
        Ok(d.clipboard.clone())
    }

    fn clipboard_written(&self) -> Option<String> {
        let d = self.world();
        Some(d.clipboard.clone())
    }

    fn apply(
        &self,
        tool: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<Value, ApplyError> {
        let mut d = self.world();
        // Every refusal of the simulated desktop (a malformed argument, a
        // window gone) comes before it changes anything: nothing was sent,
        // so the caller gets a refusal, never an unknown outcome.
        SimulatedDesktop::apply(&mut d, tool, args, target).map_err(ApplyError::NothingSent)
    }

    fn verify(
        &self,
        tool: &str,
        args: &Value,
        postcondition: Option<&Value>,
        target: Option<&TargetEvidence>,
    ) -> EffectCheck {
        let d = self.world();
        let Some(postcondition) = postcondition else {
            return EffectCheck {
                verified: true,
                method: "simulated_effect",
                checks: 0,
            };
        };
        let Ok(postcondition) =
            serde_json::from_value::<ActionPostcondition>(postcondition.clone())
        else {
            return EffectCheck {
                verified: false,
                method: "simulated_state",
                checks: 0,
            };
        };
        // The clipboard check the server announces (`adk/effect-checks`)
        // reads the clipboard itself, whatever window the write targeted.
        if tool == tool::WRITE_CLIPBOARD && is_clipboard_check(&postcondition) {
            let holds = postcondition.expected_digest()
                == Some(sha256_prefixed(&d.clipboard).as_str())
                && args.get("text").and_then(Value::as_str) == Some(d.clipboard.as_str());
            return EffectCheck {
                verified: holds,
                method: "simulated_clipboard_readback",
                checks: 1,
            };
        }
        EffectCheck {
            verified: d.observe_postcondition(&postcondition, target).0,
            method: "simulated_state",
            checks: 1,
        }
    }

    fn capture(&self) -> PointerAndFocus {
        let d = self.world();
        (d.cursor, d.focus.clone())
    }

    fn restore(&self, before: PointerAndFocus) -> Value {
        let mut d = self.world();
        let (cursor, focus) = before;
        d.cursor = cursor;
        d.focus = focus;
        json!({ "restored": true, "cursorRestored": true, "focusRestored": true })
    }
}
