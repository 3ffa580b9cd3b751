//! Whether a target is still the one the evidence names (revalidation), and
//! the checks of an effect after it (the clipboard's read-back, a declared
//! postcondition).

use super::backend::encode;
use super::*;

impl WaylandDesktop {
    /// Whether the compositor's own toplevel list shows a window with this
    /// app id and title (where the compositor offers that list).
    pub(super) fn listed_as_toplevel(&self, record: &sway::Window) -> Result<bool, Refusal> {
        Ok(match self.compositor().toplevels()? {
            None => true,
            Some(list) => list
                .iter()
                .any(|t| t.app_id == record.app_id && t.title == record.title),
        })
    }

    pub(super) fn current(
        &self,
        target: &TargetEvidence,
        round: Revalidation,
    ) -> Result<bool, Refusal> {
        let Some(now) = self.window_now(target)? else {
            // Gone. An action may close its own window (a dialog's button).
            return Ok(round == Revalidation::AfterEffect);
        };
        let identity = target.app_id == now.app_id
            && target.pid.is_none_or(|pid| Some(pid) == now.pid)
            && stated_or_same(target.display_id.as_ref(), &self.display)
            && target.platform == std::env::consts::OS;
        if round == Revalidation::AfterEffect || !identity {
            return Ok(identity);
        }
        if !now.visible
            || !bounds_agree(target.bounds.as_ref(), now.bounds)
            || !stated_or_same(target.window_title_digest.as_ref(), &now.title_digest())
            || !self.listed_as_toplevel(&now)?
        {
            return Ok(false);
        }
        // The structure only: what the elements hold is bound by a press,
        // which checks it itself.
        if let Some(revision) = &target.ui_tree_revision
            && structure_of(revision) != structure_of(&self.window_revision(&now).0)
        {
            return Ok(false);
        }
        if let Some(stated) = &target.screenshot_hash
            && round == Revalidation::BeforeEffect
        {
            // The frame must show the target: the whole output, or the
            // window's own part of it, captured again and compared by its
            // raw pixels. A frame of another region does not vouch for the
            // target; a digest never handed out is compared with the whole
            // output, encoded.
            let regions = [Some(self.whole()), self.clip(now.bounds)];
            let handed_out = {
                let frames = self.frames();
                regions.into_iter().flatten().find_map(|region| {
                    frames
                        .iter()
                        .find(|s| s.digest == *stated && s.region == region)
                        .map(|s| (region, s.raw))
                })
            };
            let known = self.frames().iter().any(|s| s.digest == *stated);
            let same = match handed_out {
                Some((region, raw)) => {
                    let region = (region != self.whole()).then_some(region);
                    self.capture(region)?.1 == raw
                }
                None if known => false,
                None => {
                    let (pixels, _) = self.capture(None)?;
                    sha256_prefixed(encode(&pixels)?) == *stated
                }
            };
            if !same {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

impl crate::desktop::real::Checks for WaylandDesktop {
    const INPUT_SENT: &'static str = "wayland_input_sent";

    fn clipboard_check(&self, args: &Value, postcondition: Option<&Value>) -> EffectCheck {
        // The offer is set on another connection; it is read until served,
        // and proves anything only while the offer is this process's own.
        crate::desktop::real::clipboard_readback(
            args,
            postcondition,
            Duration::from_millis(5),
            &|| clipboard::read().ok(),
            &|| {
                self.offer
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .stands()
            },
            "wayland_data_control_readback",
        )
    }

    fn postcondition_check(&self, postcondition: &Value) -> EffectCheck {
        // A window is judged by sway's tree, as `window_shown_now` reads it.
        crate::desktop::real::postcondition_check(
            postcondition,
            &crate::desktop::real::CheckNames {
                unobservable: "wayland_unobservable",
                window: "wayland_window_state",
                filesystem: "wayland_filesystem_read",
            },
            &|window_id| self.window_shown_now(window_id),
        )
    }
}
