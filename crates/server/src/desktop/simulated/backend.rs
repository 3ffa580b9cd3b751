//! The simulated desktop behind the rules engine's one seam: each question
//! the engine asks a desktop, answered from the simulated state.

use super::*;
use adk_computer_use::contracts::catalogue::tool;

impl crate::engine::DesktopBackend for SimulatedDesktop {
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
        Some(
            self.apps
                .iter()
                .any(|app| app.windows.iter().any(|w| w.id == window_id)),
        )
    }

    fn file_holds_now(&self, path: &str, exists: bool, content_digest: Option<&str>) -> bool {
        let content = self.files.get(path);
        content.is_some() == exists
            && content_digest.is_none_or(|d| content.map(sha256_prefixed).as_deref() == Some(d))
    }

    fn simulated(&self) -> Option<&SimulatedDesktop> {
        Some(self)
    }

    fn is_current(&self, target: &TargetEvidence, _round: Revalidation) -> bool {
        SimulatedDesktop::is_current(self, target)
    }

    fn snapshot(&self, _window: Option<u64>) -> Result<Frame, Refusal> {
        Ok(Frame {
            png_base64: SNAPSHOT_PNG.to_owned(),
            digest: self.screenshot_hash(),
        })
    }

    fn snapshot_fields(&self, _window: Option<u64>) -> Value {
        json!({
            "revision": self.revision,
            "cursor": [self.cursor.0, self.cursor.1],
            "focus": self.focus,
        })
    }

    fn list_windows(&self) -> Result<Value, Refusal> {
        Ok(SimulatedDesktop::list_windows(self))
    }

    fn ui_tree(
        &self,
        app_id: Option<&str>,
        window_id: Option<u64>,
        _max_depth: Option<usize>,
    ) -> Result<Value, Refusal> {
        SimulatedDesktop::ui_tree(self, app_id, window_id)
    }

    fn elements(&self, app_id: &str, window_id: u64) -> Result<Vec<Element>, &'static str> {
        self.window(app_id, Some(&WindowId::Number(window_id)))
            .map(|w| w.elements.clone())
            .ok_or("invalid_field")
    }

    fn read_clipboard(&self) -> Result<String, Refusal> {
        Ok(self.clipboard.clone())
    }

    fn clipboard_written(&self) -> Option<String> {
        Some(self.clipboard.clone())
    }

    fn apply(
        &mut self,
        tool: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<Value, ApplyError> {
        // Every refusal of the simulated desktop (a malformed argument, a
        // window gone) comes before it changes anything: nothing was sent,
        // so the caller gets a refusal, never an unknown outcome.
        SimulatedDesktop::apply(self, tool, args, target).map_err(ApplyError::NothingSent)
    }

    fn verify(
        &self,
        tool: &str,
        args: &Value,
        postcondition: Option<&Value>,
        target: Option<&TargetEvidence>,
    ) -> EffectCheck {
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
                == Some(sha256_prefixed(&self.clipboard).as_str())
                && args.get("text").and_then(Value::as_str) == Some(self.clipboard.as_str());
            return EffectCheck {
                verified: holds,
                method: "simulated_clipboard_readback",
                checks: 1,
            };
        }
        EffectCheck {
            verified: self.observe_postcondition(&postcondition, target).0,
            method: "simulated_state",
            checks: 1,
        }
    }

    fn capture(&self) -> PointerAndFocus {
        (self.cursor, self.focus.clone())
    }

    fn restore(&mut self, before: PointerAndFocus) -> Value {
        let (cursor, focus) = before;
        self.cursor = cursor;
        self.focus = focus;
        json!({ "restored": true, "cursorRestored": true, "focusRestored": true })
    }
}
