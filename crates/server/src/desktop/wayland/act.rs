//! Input: what one input action sends (keys, or pointer steps), checked
//! point by point against the target and every other shown window, then
//! sent to a target sway has given the focus.

use super::*;

pub(super) use crate::desktop::real::{point, text};

/// The evdev codes of the pointer's buttons.
pub(super) const BTN_LEFT: u32 = 0x110;
pub(super) const BTN_RIGHT: u32 = 0x111;

/// What one input action sends.
pub(super) enum Plan {
    Keys(keymap::Keys),
    Pointer(Vec<Pointer>),
}

impl WaylandDesktop {
    /// Every point the plan touches lies inside the target, on the output,
    /// and outside every other shown window.
    pub(super) fn check_point(
        &self,
        target: &sway::Window,
        all: &[sway::Window],
        at: (i64, i64),
    ) -> Result<(u32, u32), Refusal> {
        if !target.contains(at) {
            return Err(Refusal::new(
                "point_outside_target",
                format!("the point {at:?} is outside the target window"),
            ));
        }
        let on_output = u32::try_from(at.0)
            .ok()
            .zip(u32::try_from(at.1).ok())
            .filter(|(x, y)| *x < self.size.0 && *y < self.size.1)
            .ok_or_else(|| {
                Refusal::new(
                    "point_outside_target",
                    format!("the point {at:?} is off the output"),
                )
            })?;
        if let Some(other) = all
            .iter()
            .find(|w| w.id != target.id && w.visible && w.takes_pointer_at(at))
        {
            // The other window's app_id is its client's own choice (it may
            // read as an instruction): in the details, marked, never in the
            // message.
            return Err(Refusal::with_details(
                "target_covered",
                format!(
                    "the point {at:?} is also inside window {}: which one would take it is not known",
                    other.id
                ),
                json!({
                    "windowId": other.id,
                    "appId": other.app_id,
                    "contentOrigin": "application_untrusted",
                }),
            ));
        }
        Ok(on_output)
    }

    /// The whole of what `tool` sends, checked before anything is.
    pub(super) fn plan(
        &self,
        tool: &str,
        args: &Value,
        target: &sway::Window,
    ) -> Result<Plan, Refusal> {
        if !matches!(tool, tool::TYPE | tool::KEY) {
            // Points are checked in sway's layout and sent on the output.
            self.sway()?.plain_output(self.size)?;
        }
        let all = self.windows()?;
        let moved = |key: &str| -> Result<Pointer, Refusal> {
            let (x, y) = self.check_point(target, &all, point(args, key)?)?;
            Ok(Pointer::Move(x, y))
        };
        let click = |button: u32, times: usize| -> Result<Plan, Refusal> {
            let mut events = vec![moved("coordinate")?];
            for _ in 0..times {
                events.push(Pointer::Button(button, true));
                events.push(Pointer::Button(button, false));
            }
            Ok(Plan::Pointer(events))
        };
        match tool {
            tool::LEFT_CLICK => click(BTN_LEFT, 1),
            tool::RIGHT_CLICK => click(BTN_RIGHT, 1),
            tool::DOUBLE_CLICK => click(BTN_LEFT, 2),
            tool::MOUSE_MOVE | tool::MOVE_CURSOR => Ok(Plan::Pointer(vec![moved("coordinate")?])),
            tool::LEFT_CLICK_DRAG => Ok(Plan::Pointer(vec![
                moved("start_coordinate")?,
                Pointer::Button(BTN_LEFT, true),
                moved("coordinate")?,
                Pointer::Button(BTN_LEFT, false),
            ])),
            tool::SCROLL => {
                use crate::desktop::real::Wheel;
                let (direction, steps) = crate::desktop::real::wheel(args)?;
                let (axis, sign) = match direction {
                    Wheel::Up => (false, -1),
                    Wheel::Down => (false, 1),
                    Wheel::Left => (true, -1),
                    Wheel::Right => (true, 1),
                };
                // The wheel goes where the pointer is, which this desktop
                // cannot know: it is moved to a checked point first.
                if args.get("coordinate").is_none() {
                    return Err(invalid(
                        "arguments.coordinate is needed to scroll on Wayland (where the pointer is now is not known)",
                    ));
                }
                let mut events = vec![moved("coordinate")?];
                events.push(Pointer::Wheel(
                    axis,
                    sign * i32::try_from(steps).unwrap_or(1),
                ));
                Ok(Plan::Pointer(events))
            }
            tool::TYPE => keymap::type_text(text(args, "text")?).map(Plan::Keys),
            tool::KEY => keymap::chord(text(args, "text")?).map(Plan::Keys),
            other => Err(Refusal::new(
                "tool_outside_host_profile",
                format!("the Wayland desktop does not perform {other}"),
            )),
        }
    }

    /// Types `text` into the window `record`'s focused field, replacing
    /// what it holds (see `ElementHost::type_into_field`): the window is
    /// given the focus, `focus` gives the field its own, and the keys are
    /// sent only while the window still holds the focus, unchanged.
    pub(super) fn type_replacing(
        &self,
        record: &Window,
        text: &str,
        focus: &dyn Fn() -> Result<(), Refusal>,
    ) -> Result<(), ApplyError> {
        let refused = ApplyError::NothingSent;
        let keys = keymap::replace_text(text).map_err(refused)?;
        // Handed over before the checks, so nothing waits between the
        // last check and the keys.
        self.compositor()
            .set_keymap(&keys.keymap)
            .map_err(refused)?;
        let sway = self.sway().map_err(refused)?;
        let same = |w: &sway::Window| {
            let seen = self.for_elements(w);
            seen.title == record.title && seen.bounds == record.bounds
        };
        match sway.window(record.id).map_err(refused)? {
            Some(window) if same(&window) => {
                if !window.focused {
                    sway.focus(record.id).map_err(refused)?;
                }
            }
            _ => return Err(refused(stale("the window changed since its tree was read"))),
        }
        // Keys will be sent and the focus was taken: the restore puts it
        // back.
        self.notes.get().acted_by_element = false;
        focus().map_err(refused)?;
        match sway.window(record.id).map_err(refused)? {
            Some(now) if now.focused && same(&now) => {}
            _ => {
                return Err(refused(stale(
                    "the window did not keep the focus, or changed while the field took it",
                )));
            }
        }
        self.compositor().send_keys(&keys.keymap, &keys.events)?;
        Ok(())
    }

    /// Checks the target again, gives it the focus, checks that it holds
    /// it (and is still where it was), then sends.
    pub(super) fn send_checked(
        &self,
        tool: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<Value, ApplyError> {
        let refused = ApplyError::NothingSent;
        if let Some(evidence) = target
            && !self
                .current(evidence, Revalidation::BeforeEffect)
                .map_err(refused)?
        {
            return Err(refused(Refusal::with_details(
                "stale_target",
                "target evidence no longer matches the desktop",
                json!({ "observationId": evidence.observation_id }),
            )));
        }
        let window = self.target_record(target).map_err(refused)?;
        let plan = self.plan(tool, args, &window).map_err(refused)?;
        // A new keymap takes a while to reach the client; it is handed over
        // before the focus is checked, so that nothing waits between the
        // last check and the keys.
        if let Plan::Keys(keys) = &plan {
            self.compositor()
                .set_keymap(&keys.keymap)
                .map_err(refused)?;
        }
        let sway = self.sway().map_err(refused)?;
        if !window.focused {
            sway.focus(window.id).map_err(refused)?;
        }
        // The focus is the target's, and it did not move while taking it.
        let now = sway.window(window.id).map_err(refused)?;
        let now = match now {
            Some(now)
                if now.focused && now.bounds == window.bounds && now.title == window.title =>
            {
                now
            }
            Some(_) => {
                return Err(refused(stale(
                    "the target did not take the focus, or changed while taking it",
                )));
            }
            None => return Err(refused(stale("the target window is gone"))),
        };
        // Taking the focus raises the target and may have moved others:
        // every point is checked again on the layout as it is now.
        let plan = match plan {
            Plan::Pointer(_) => self.plan(tool, args, &now).map_err(refused)?,
            keys => keys,
        };
        let sent = match plan {
            Plan::Keys(keys) => {
                let count = keys.events.len();
                self.compositor().send_keys(&keys.keymap, &keys.events)?;
                count
            }
            Plan::Pointer(events) => {
                self.compositor().send_pointer(&events, self.size)?;
                events.len()
            }
        };
        Ok(json!({ "sent": sent, "windowId": window.id }))
    }
}
