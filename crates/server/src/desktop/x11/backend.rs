//! The X11 desktop as the engine sees it: the `DesktopBackend`
//! implementation, a dispatch to the parts of this module (windows,
//! screen, input, clipboard, elements, revalidation, checks).

use super::*;

impl DesktopBackend for X11Desktop {
    fn kind(&self) -> &'static str {
        "x11"
    }

    fn performs(&self, tool: &str) -> bool {
        PERFORMS.contains(&tool)
            || (self.accessibility.is_some()
                && (elements::ELEMENT_TOOLS.contains(&tool)
                    || elements::OBSERVE_TOOLS.contains(&tool)))
    }

    fn reads_values_back(&self) -> bool {
        self.accessibility.is_some()
    }

    fn acts_unfocused(&self, tool: &str) -> bool {
        self.accessibility.is_some() && elements::ELEMENT_TOOLS.contains(&tool)
    }

    fn is_current(&self, target: &TargetEvidence, round: Revalidation) -> bool {
        // A display that cannot be asked cannot confirm anything.
        self.current(target, round).unwrap_or(false)
    }

    fn what_changed(&self, target: &TargetEvidence, round: Revalidation) -> Option<Value> {
        self.what_changed(target, round, revalidate::Tree::Whole)
            .unwrap_or_else(|_| {
                Some(json!({ "changed": "unknown", "what": "the display did not answer" }))
            })
    }

    fn prepare(
        &self,
        tool: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<(), Refusal> {
        match tool {
            tool::WRITE_CLIPBOARD => {
                if text(args, "text")?.len() > clipboard::MOST_BYTES {
                    return Err(Refusal::new(
                        "invalid_arguments",
                        format!(
                            "arguments.text is longer than {} bytes",
                            clipboard::MOST_BYTES
                        ),
                    ));
                }
                Ok(())
            }
            _ if elements::ELEMENT_TOOLS.contains(&tool) && self.performs(tool) => {
                self.prepare_elements(tool, args, target)
            }
            _ if !self.performs(tool) => Err(Refusal::new(
                "tool_outside_host_profile",
                format!("the X11 desktop does not perform {tool}"),
            )),
            tool::READ_CLIPBOARD
            | tool::SNAPSHOT
            | tool::LIST_WINDOWS
            | tool::GET_UI_TREE
            | tool::FIND_ELEMENT
            | tool::GET_FOCUSED_ELEMENT => Ok(()),
            _ => {
                let window = self.target_window(target)?;
                let top = windows::top_level(&self.conn, self.root, window.id)?;
                self.plan(tool, args, &window, top).map(drop)
            }
        }
    }

    fn snapshot(&self, window: Option<u64>) -> Result<Frame, Refusal> {
        // A window's frame remembers where its application says the caret
        // is: the one change tolerated later (see `tolerance`). Only the
        // focused window draws a caret, so only its application is asked
        // (a walk of its element tree, as long as the capture itself).
        let caret = window
            .and_then(|id| self.window_record(id).ok())
            .filter(|record| record.focused)
            .and_then(|record| self.caret_now(&record));
        let capture = screen::capture(&self.conn, self.root, self.region(window)?)?;
        self.frames().frame(capture, self.layout, caret)
    }

    fn snapshot_fields(&self, window: Option<u64>) -> Value {
        let pointer = self
            .conn
            .query_pointer(self.root)
            .ok()
            .and_then(|c| c.reply().ok())
            .map(|p| json!([p.root_x, p.root_y]));
        json!({
            "cursor": pointer,
            "display": std::env::var("DISPLAY").unwrap_or_default(),
            "size": { "width": self.size.0, "height": self.size.1 },
            "scope": if window.is_some() { "window" } else { "screen" },
        })
    }

    fn list_windows(&self) -> Result<Value, Refusal> {
        let records = windows::all(&self.conn, self.root, &self.atoms)?;
        let display = self.display_id();
        let windows: Vec<Value> = records
            .iter()
            .map(|r| r.to_json(display, self.size))
            .collect();
        Ok(json!({ "windows": windows }))
    }

    fn ui_tree(
        &self,
        app_id: Option<&str>,
        window_id: Option<u64>,
        max_depth: Option<usize>,
    ) -> Result<Value, Refusal> {
        let records = windows::all(&self.conn, self.root, &self.atoms)?;
        let record = crate::desktop::real::window_named(&records, app_id, window_id, |r| {
            (r.app_id.as_str(), u64::from(r.id))
        })?;
        // The tree the revision was taken from: one walk, the whole tree,
        // of which the answer shows the part asked for.
        let (revision, nodes, tree) = self.window_revision(record)?;
        Ok(crate::desktop::real::ui_tree_answer(
            &record.app_id,
            u64::from(record.id),
            record.to_json(self.display_id(), self.size),
            &revision,
            "x11_window_geometry",
            json!(nodes),
            tree.as_ref().map_err(Clone::clone),
            max_depth,
        ))
    }

    fn observe_elements(&self, tool: &str, args: &Value) -> Result<Value, Refusal> {
        if self.accessibility.is_none() {
            return Err(Refusal::new(
                "accessibility_unavailable",
                self.accessibility_note.clone(),
            ));
        }
        self.observe_element(tool, args, "X11")
    }

    fn window_texts(&self, window_id: u64) -> Result<Vec<String>, Refusal> {
        if self.accessibility.is_none() {
            return Err(Refusal::new(
                "accessibility_unavailable",
                self.accessibility_note.clone(),
            ));
        }
        self.shown_texts(window_id)
    }

    fn elements(&self, app_id: &str, window_id: u64) -> Result<Vec<Element>, &'static str> {
        let records =
            windows::all(&self.conn, self.root, &self.atoms).map_err(|_| "invalid_field")?;
        let record = records
            .iter()
            .find(|r| r.app_id == app_id && u64::from(r.id) == window_id)
            .ok_or("invalid_field")?;
        self.elements_of(&record.for_elements())
    }

    fn read_clipboard(&self) -> Result<String, Refusal> {
        self.reader.read()
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
        if elements::ELEMENT_TOOLS.contains(&tool) {
            self.notes.get().acted_by_element = true;
            return self.apply_elements(tool, args, target);
        }
        // A pointer or key action is put back by its restore, whatever the
        // last action was.
        self.notes.get().acted_by_element = false;
        if tool == tool::WRITE_CLIPBOARD {
            let text = text(args, "text").map_err(ApplyError::NothingSent)?;
            self.owner
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .write(text)?;
            let mut notes = self.notes.get();
            notes.written = Some(text.to_owned());
            notes.written_secret = notes.writing_secret;
            return Ok(json!({ "written": text.chars().count() }));
        }
        // From the checks to the last event, no other client's request is
        // served: nothing can move, cover, grab or reach into the target
        // in between.
        self.with_server_held(|| {
            self.still_current(target)
                .and_then(|()| self.send_checked(tool, args, target))
        })
    }

    fn before_effect(&self, _tool: &str, envelope: &Value) -> Result<(), Refusal> {
        // Text labelled as a secret is never kept past this process.
        let mut notes = self.notes.get();
        notes.writing_secret = labels_a_secret(envelope);
        notes.foreground = envelope["requestedMode"] == "foreground";
        Ok(())
    }

    fn window_shown_now(&self, window_id: u64) -> Option<bool> {
        windows::shown_by_server(&self.conn, u32::try_from(window_id).ok()?)
    }

    fn file_holds_now(&self, path: &str, exists: bool, content_digest: Option<&str>) -> bool {
        checks::file_holds(path, exists, content_digest)
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

    fn foreign_input(&self) -> Option<u64> {
        self.watch.as_ref().map(|watch| watch.foreign())
    }

    fn capture(&self) -> PointerAndFocus {
        let pointer = self
            .conn
            .query_pointer(self.root)
            .ok()
            .and_then(|c| c.reply().ok())
            .map_or((0, 0), |p| (i64::from(p.root_x), i64::from(p.root_y)));
        let focus = windows::focus(&self.conn)
            .ok()
            .map(|w| (String::new(), u64::from(w)));
        (pointer, focus)
    }

    fn restore(&self, before: PointerAndFocus) -> Value {
        if std::mem::take(&mut self.notes.get().acted_by_element) {
            // An element action sent no input and took no focus: there is
            // nothing to put back, and nothing is sent.
            return json!({ "restored": true, "cursorRestored": true, "focusRestored": true, "inputSent": false });
        }
        let (pointer, focus) = before;
        // A pointer still where it was is left alone: no input is sent
        // that a person's watch (this server's or another's) must explain.
        let cursor = self.capture().0 == pointer
            || input::on_screen(pointer).ok().is_some_and(|(x, y)| {
                input::send(
                    &self.conn,
                    self.root,
                    &[Event::Move(x, y)],
                    self.watch.as_ref(),
                )
                .is_ok()
            });
        let focused = focus
            .and_then(|(_, w)| u32::try_from(w).ok())
            .filter(|w| *w != x11rb::NONE)
            .is_some_and(|w| {
                self.conn
                    .set_input_focus(InputFocus::POINTER_ROOT, w, x11rb::CURRENT_TIME)
                    .is_ok()
                    && windows::focus(&self.conn).is_ok()
            });
        json!({ "restored": cursor && focused, "cursorRestored": cursor, "focusRestored": focused })
    }
}
