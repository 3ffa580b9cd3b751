//! What each tool the simulated desktop performs does to its state; a
//! refusal here comes before any change.

use super::*;
use adk_computer_use::contracts::catalogue::tool;

impl SimulatedDesktop {
    pub(super) fn set_clipboard(&mut self, text: &str) {
        self.clipboard = text.to_owned();
        if let Some(window) =
            self.window_mut(CLIPBOARD_APP, Some(&WindowId::Number(CLIPBOARD_WINDOW)))
        {
            for element in &mut window.elements {
                element.value = text.to_owned();
            }
        }
    }

    /// Performs a mutating tool on the target. Returns the tool's output.
    pub fn apply(
        &mut self,
        tool: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<Value, Refusal> {
        let output = match tool {
            // An approved, governed read of the clipboard.
            tool::READ_CLIPBOARD => json!({ "text": self.clipboard }),
            tool::WRITE_CLIPBOARD => {
                let text = text_arg(args, "text")?;
                self.set_clipboard(text);
                json!({ "written": text.chars().count() })
            }
            tool::SET_VALUE | tool::FILL_FORM => {
                let target = target.ok_or_else(|| invalid("set_value needs a target"))?;
                let value = text_arg(args, "value")?;
                let id = text_arg(args, "element_id")?;
                let window = self
                    .window_mut(&target.app_id, target.window_id.as_ref())
                    .ok_or_else(|| Refusal::new("stale_target", "the target window is gone"))?;
                let element = window
                    .elements
                    .iter_mut()
                    .find(|e| e.id == id)
                    .ok_or_else(|| Refusal::new("stale_target", format!("no element {id}")))?;
                element.value = value.to_owned();
                json!({ "elementId": id })
            }
            tool::FOCUS_WINDOW => {
                let target = target.ok_or_else(|| invalid("focus_window needs a target"))?;
                let window_id = self
                    .window(&target.app_id, target.window_id.as_ref())
                    .ok_or_else(|| Refusal::new("stale_target", "the target window is gone"))?
                    .id;
                self.focus = Some((target.app_id.clone(), window_id));
                json!({ "focused": window_id })
            }
            tool::LEFT_CLICK | tool::MOVE_CURSOR => {
                // Upstream's `coordinate: [x, y]`, or the simulator's older
                // `x` and `y`.
                let pair = args.get("coordinate").and_then(Value::as_array);
                let at = |i: usize, key: &str| {
                    pair.and_then(|p| p.get(i))
                        .or_else(|| args.get(key))
                        .and_then(Value::as_i64)
                        .ok_or_else(|| {
                            invalid(format!(
                                "arguments.coordinate must be [x, y] (missing {key})"
                            ))
                        })
                };
                let (x, y) = (at(0, "x")?, at(1, "y")?);
                self.cursor = (x, y);
                json!({ "cursor": [x, y] })
            }
            tool::WRITE_FILE => {
                let path = text_arg(args, "path")?;
                let content = text_arg(args, "content")?;
                self.files.insert(path.to_owned(), content.to_owned());
                json!({ "bytes": content.len() })
            }
            tool::DELETE_FILE => {
                let path = text_arg(args, "path")?;
                let existed = self.files.remove(path).is_some();
                json!({ "deleted": existed })
            }
            other => {
                return Err(Refusal::new(
                    "tool_outside_host_profile",
                    format!("{other} is not a mutating tool here"),
                ));
            }
        };
        self.revision += 1;
        Ok(output)
    }
}
