//! The desktop as the engine and the element layer see it: the
//! `DesktopBackend` and `ElementHost` implementations, each a thin
//! dispatch to the parts of this module.

use super::act::text;
use super::*;

/// The PNG of RGBA pixels, as RGB (8 bits a channel), as on X11.
pub(super) fn encode(pixels: &client::Pixels) -> Result<Vec<u8>, Refusal> {
    let mut rgb = Vec::with_capacity(pixels.rgba.len() / 4 * 3);
    for px in pixels.rgba.chunks_exact(4) {
        rgb.extend_from_slice(&px[..3]);
    }
    crate::desktop::real::png_of_rgb(&rgb, pixels.width, pixels.height)
}

impl ElementHost for WaylandDesktop {
    fn accessibility(&self) -> Option<&Accessibility> {
        self.accessibility.as_ref()
    }

    fn accessibility_note(&self) -> &str {
        &self.accessibility_note
    }

    fn element_windows(&self) -> Result<Vec<Window>, Refusal> {
        Ok(self
            .windows()?
            .iter()
            .map(|w| self.for_elements(w))
            .collect())
    }

    fn element_target(&self, target: Option<&TargetEvidence>) -> Result<Window, Refusal> {
        self.target_record(target).map(|w| self.for_elements(&w))
    }

    fn written_elements(&self) -> Vec<Node> {
        self.notes.get().written_elements.clone()
    }

    fn set_written_elements(&self, nodes: Vec<Node>) {
        self.notes.get().written_elements = nodes;
    }

    fn can_type(&self, text: &str) -> Result<(), Refusal> {
        super::keymap::replace_text(text).map(drop)
    }

    fn in_foreground(&self) -> bool {
        self.notes.get().foreground
    }

    fn type_into_field(
        &self,
        record: &Window,
        text: &str,
        focus: &dyn Fn() -> Result<(), Refusal>,
    ) -> Result<(), ApplyError> {
        self.type_replacing(record, text, focus)
    }
}

impl DesktopBackend for WaylandDesktop {
    fn kind(&self) -> &'static str {
        "wayland"
    }

    fn performs(&self, tool: &str) -> bool {
        self.lacks(tool).is_none()
    }

    fn reads_values_back(&self) -> bool {
        self.accessibility.is_some()
    }

    fn acts_unfocused(&self, tool: &str) -> bool {
        self.accessibility.is_some() && ELEMENT_TOOLS.contains(&tool)
    }

    fn report(&self) -> Option<Value> {
        Some(self.protocols())
    }

    fn is_current(&self, target: &TargetEvidence, round: Revalidation) -> bool {
        self.current(target, round).unwrap_or(false)
    }

    fn prepare(
        &self,
        tool: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<(), Refusal> {
        if let Some(refusal) = self.lacks(tool) {
            return Err(refusal);
        }
        match tool {
            tool::WRITE_CLIPBOARD => {
                if text(args, "text")?.len() > clipboard::MOST_BYTES {
                    return Err(invalid(format!(
                        "arguments.text is longer than {} bytes",
                        clipboard::MOST_BYTES
                    )));
                }
                Ok(())
            }
            _ if ELEMENT_TOOLS.contains(&tool) => self.prepare_elements(tool, args, target),
            tool::READ_CLIPBOARD
            | tool::SNAPSHOT
            | tool::LIST_WINDOWS
            | tool::GET_UI_TREE
            | tool::FIND_ELEMENT
            | tool::GET_FOCUSED_ELEMENT => Ok(()),
            _ => {
                let window = self.target_record(target)?;
                self.plan(tool, args, &window).map(drop)
            }
        }
    }

    fn snapshot(&self, window: Option<u64>) -> Result<Frame, Refusal> {
        if let Some(refusal) = self.lacks(tool::SNAPSHOT) {
            return Err(refusal);
        }
        let region = self.region(window)?;
        let (pixels, raw) = self.capture(region)?;
        let png = encode(&pixels)?;
        let digest = sha256_prefixed(&png);
        let region = region.unwrap_or_else(|| self.whole());
        let mut frames = self.frames();
        if !frames
            .iter()
            .any(|s| s.digest == digest && s.region == region)
        {
            frames.push_back(Seen {
                digest: digest.clone(),
                region,
                raw,
            });
            while frames.len() > REMEMBERED {
                frames.pop_front();
            }
        }
        Ok(Frame {
            png_base64: base64::engine::general_purpose::STANDARD.encode(&png),
            digest,
        })
    }

    fn snapshot_fields(&self, window: Option<u64>) -> Value {
        json!({
            // No Wayland protocol tells a client where the cursor is.
            "cursor": null,
            "display": self.display,
            "size": { "width": self.size.0, "height": self.size.1 },
            "scope": if window.is_some() { "window" } else { "screen" },
        })
    }

    fn list_windows(&self) -> Result<Value, Refusal> {
        let windows: Vec<Value> = self
            .windows()?
            .iter()
            .map(|w| w.to_json(&self.display))
            .collect();
        Ok(json!({ "windows": windows }))
    }

    fn ui_tree(
        &self,
        app_id: Option<&str>,
        window_id: Option<u64>,
        max_depth: Option<usize>,
    ) -> Result<Value, Refusal> {
        let record = crate::desktop::real::window_named(self.windows()?, app_id, window_id, |r| {
            (r.app_id.as_str(), r.id)
        })?;
        // One walk, the whole tree: the revision's and the answer's.
        let (revision, node, tree) = self.window_revision(&record);
        Ok(crate::desktop::real::ui_tree_answer(
            &record.app_id,
            record.id,
            node.clone(),
            &revision,
            "wayland_layout",
            json!([node]),
            tree.as_ref().map_err(Clone::clone),
            max_depth,
        ))
    }

    fn observe_elements(&self, tool: &str, args: &Value) -> Result<Value, Refusal> {
        if let Some(refusal) = self.lacks(tool) {
            return Err(refusal);
        }
        self.observe_element(tool, args, "Wayland")
    }

    fn window_texts(&self, window_id: u64) -> Result<Vec<String>, Refusal> {
        if let Some(refusal) = self.lacks(tool::FIND_ELEMENT) {
            return Err(refusal);
        }
        self.shown_texts(window_id)
    }

    fn elements(&self, app_id: &str, window_id: u64) -> Result<Vec<Element>, &'static str> {
        let record = self
            .windows()
            .map_err(|_| "invalid_field")?
            .into_iter()
            .find(|r| r.app_id == app_id && r.id == window_id)
            .ok_or("invalid_field")?;
        self.elements_of(&self.for_elements(&record))
    }

    fn read_clipboard(&self) -> Result<String, Refusal> {
        if let Some(refusal) = self.lacks(tool::READ_CLIPBOARD) {
            return Err(refusal);
        }
        clipboard::read()
    }

    fn clipboard_written(&self) -> Option<String> {
        self.notes.get().written.clone()
    }

    fn apply(
        &self,
        tool: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<Value, ApplyError> {
        if let Some(refusal) = self.lacks(tool) {
            return Err(ApplyError::NothingSent(refusal));
        }
        if ELEMENT_TOOLS.contains(&tool) {
            self.notes.get().acted_by_element = true;
            return self.apply_elements(tool, args, target);
        }
        self.notes.get().acted_by_element = false;
        if tool == tool::WRITE_CLIPBOARD {
            let text = text(args, "text").map_err(ApplyError::NothingSent)?;
            let secret = self.notes.get().writing_secret;
            self.offer
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .write(text, secret)?;
            let mut notes = self.notes.get();
            notes.written = Some(text.to_owned());
            notes.written_secret = secret;
            return Ok(json!({ "written": text.chars().count() }));
        }
        self.send_checked(tool, args, target)
    }

    fn before_effect(&self, _tool: &str, envelope: &Value) -> Result<(), Refusal> {
        // Text labelled as a secret is never kept past this process.
        let mut notes = self.notes.get();
        notes.writing_secret = labels_a_secret(envelope);
        notes.foreground = envelope["requestedMode"] == "foreground";
        Ok(())
    }

    fn window_shown_now(&self, window_id: u64) -> Option<bool> {
        let windows = self.windows().ok()?;
        Some(windows.iter().any(|w| w.id == window_id && w.visible))
    }

    fn file_holds_now(&self, path: &str, exists: bool, content_digest: Option<&str>) -> bool {
        crate::desktop::files::file_holds(path, exists, content_digest)
    }

    fn verify(
        &self,
        tool: &str,
        args: &Value,
        postcondition: Option<&Value>,
        target: Option<&TargetEvidence>,
    ) -> EffectCheck {
        crate::desktop::real::verify(self, tool, args, postcondition, target)
    }

    fn capture(&self) -> PointerAndFocus {
        // The cursor's place is not known to a Wayland client.
        let focus = self
            .sway
            .as_ref()
            .and_then(|s| s.focused().ok().flatten())
            .map(|id| (String::new(), id));
        ((0, 0), focus)
    }

    fn restore(&self, before: PointerAndFocus) -> Value {
        if std::mem::take(&mut self.notes.get().acted_by_element) {
            return json!({ "restored": true, "cursorRestored": true, "focusRestored": true, "inputSent": false });
        }
        let (_, focus) = before;
        let focused = match (focus, self.sway.as_ref()) {
            (Some((_, id)), Some(sway)) => {
                sway.focused().ok().flatten() == Some(id)
                    || (sway.focus(id).is_ok() && sway.focused().ok().flatten() == Some(id))
            }
            (None, _) => true,
            (Some(_), None) => false,
        };
        // The cursor's place before is not known, so it is not put back.
        json!({ "restored": false, "cursorRestored": false, "cursorKnown": false, "focusRestored": focused })
    }
}
