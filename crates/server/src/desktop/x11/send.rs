//! Sending input: the events of one tool planned with every point checked
//! first, then sent with the target checked again inside a server grab, so
//! no other client can move between the check and the events.

use super::*;
use adk_computer_use::contracts::catalogue::tool;

impl X11Desktop {
    /// The events of an input tool, every point checked; nothing is sent.
    pub(super) fn plan(
        &self,
        tool: &str,
        args: &Value,
        window: &windows::WindowRecord,
        top: XWindow,
    ) -> Result<Vec<Event>, Refusal> {
        let keymap = || input::Keymap::read(&self.conn);
        let moved = |key: &str| -> Result<Event, Refusal> {
            let point = input::point(args, key)?;
            self.check_point(window, point, top)?;
            let (x, y) = input::on_screen(point)?;
            Ok(Event::Move(x, y))
        };
        let click = |button: u8, times: usize| -> Result<Vec<Event>, Refusal> {
            let mut events = vec![moved("coordinate")?];
            for _ in 0..times {
                events.push(Event::Button(button, true));
                events.push(Event::Button(button, false));
            }
            Ok(events)
        };
        match tool {
            tool::LEFT_CLICK => click(1, 1),
            tool::RIGHT_CLICK => click(3, 1),
            tool::DOUBLE_CLICK => click(1, 2),
            tool::MOUSE_MOVE | tool::MOVE_CURSOR => Ok(vec![moved("coordinate")?]),
            tool::LEFT_CLICK_DRAG => Ok(vec![
                moved("start_coordinate")?,
                Event::Button(1, true),
                moved("coordinate")?,
                Event::Button(1, false),
            ]),
            tool::SCROLL => {
                let mut events = vec![moved("coordinate")?];
                events.extend(input::wheel(args)?);
                Ok(events)
            }
            tool::TYPE => keymap()?.type_text(text(args, "text")?),
            tool::KEY => keymap()?.chord(text(args, "text")?),
            other => Err(Refusal::new(
                "tool_outside_host_profile",
                format!("the X11 desktop does not perform {other}"),
            )),
        }
    }

    /// The input of `tool`, checked and sent (with the server held).
    pub(super) fn send_checked(
        &self,
        tool: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<Value, ApplyError> {
        let refused = ApplyError::NothingSent;
        let window = self.target_window(target).map_err(refused)?;
        let top = windows::top_level(&self.conn, self.root, window.id).map_err(refused)?;
        let events = self.plan(tool, args, &window, top).map_err(refused)?;
        self.input_is_safe(top).map_err(refused)?;
        self.focus(window.id, top).map_err(refused)?;
        self.keys_reach_target(&window, top).map_err(refused)?;
        input::send(&self.conn, self.root, &events, self.watch.as_ref())?;
        Ok(json!({ "sent": events.len(), "windowId": window.id }))
    }

    /// Raises the window and gives it the input focus, then waits until
    /// the server has done both.
    pub(super) fn focus(&self, window: XWindow, top: XWindow) -> Result<(), Refusal> {
        let failed = |e: &dyn std::fmt::Display| Refusal::plain(format!("focusing failed: {e}"));
        self.conn
            .configure_window(top, &ConfigureWindowAux::new().stack_mode(StackMode::ABOVE))
            .map_err(|e| failed(&e))?;
        self.conn
            .set_input_focus(InputFocus::PARENT, window, x11rb::CURRENT_TIME)
            .map_err(|e| failed(&e))?;
        windows::focus(&self.conn)?;
        Ok(())
    }
}
