//! Giving a web page's field the focus, for the keys that write it.
//!
//! Neither browser writes a page's field over AT-SPI (see `toolkit`), so in
//! the foreground such a field is written by typing into it. Keys go where
//! the focus is, so before the first key the field must hold it, as the
//! browser itself says: the field reads `focused` and its window's frame
//! reads `active`. A browser whose window does not hold the display's
//! input focus answers `GrabFocus` with `true` and moves nothing (Firefox,
//! measured), and a field may keep reading `focused` from before while its
//! window is inactive: hence both states, looked at after the call, and
//! the desktop gives the window the input focus first.
//!
//! A page can make a field read `focused` while the keys go elsewhere: an
//! element that takes the focus and names the field its
//! `aria-activedescendant` (a combo box's way) makes both browsers report
//! the field `focused` too (a hostile review typed into such a decoy). So
//! `focused` alone proves nothing. What the decoy cannot move is the
//! caret: the field that really holds the focus has it (its
//! `Text.CaretOffset` is 0 or more), the field the decoy points at answers
//! -1 in both browsers (measured). So the caret must be in the field, and
//! the field must be the only element of its window that reads `focused`
//! (asked of the whole window at once, `Collection.GetMatches`).

use std::time::{Duration, Instant};

use atspi::State;
use atspi::proxy::proxy_ext::ProxyExt;

use super::frame::Bounds;
use super::{Accessibility, Node, Refusal, reach, run_bounded, unreadable};

/// How long the field is given to read `focused` (both browsers take
/// 10 to 70 ms, measured).
const FOCUS_WAIT: Duration = Duration::from_millis(1500);

impl Accessibility {
    /// Gives the field `expected` names (found again by its path, with its
    /// role and name, and reachable by a person's pointer) the focus
    /// through `Component.GrabFocus`, and waits until it reads `focused`,
    /// its window's frame `active`, the caret is in it and no other
    /// element of the window reads `focused`. Nothing is written;
    /// `stale_target` when the focus did not come.
    pub fn focus_field(
        &self,
        pid: u32,
        title: &str,
        bounds: Bounds,
        expected: &Node,
    ) -> Result<(), Refusal> {
        let bus = std::sync::Arc::clone(&self.bus);
        let (title, expected) = (title.to_owned(), expected.clone());
        run_bounded(&self.handle, "focus the field", async move {
            let reach::Reached {
                above,
                node,
                proxies,
            } = reach::reached(&bus, pid, &title, bounds, &expected).await?;
            let component = proxies
                .component()
                .await
                .map_err(|_| unreadable("the element's place"))?;
            // The answer says nothing (Firefox answers `true` and does
            // nothing when its window is inactive): the states say.
            let _ = component.grab_focus().await;
            let text = proxies.text().await.ok();
            let frame = above.first();
            let deadline = Instant::now() + FOCUS_WAIT;
            loop {
                let field_focused = node
                    .get_state()
                    .await
                    .is_ok_and(|states| states.contains(State::Focused));
                let window_active = match frame {
                    Some(frame) => frame
                        .get_state()
                        .await
                        .is_ok_and(|states| states.contains(State::Active)),
                    None => false,
                };
                // The caret is where the keys go (see above).
                let caret_in = match &text {
                    Some(text) => text.caret_offset().await.is_ok_and(|at| at >= 0),
                    None => false,
                };
                if field_focused && window_active && caret_in {
                    match only_focused(frame, &node).await {
                        Some(true) => return Ok(()),
                        Some(false) => {}
                        None => {
                            return Err(Refusal::new(
                                "stale_target",
                                format!(
                                    "which element of the window holds the focus could not be asked, so the {} {} is not known to hold it: no key was sent",
                                    expected.role,
                                    expected.id()
                                ),
                            ));
                        }
                    }
                }
                if Instant::now() >= deadline {
                    return Err(Refusal::with_details(
                        "stale_target",
                        format!(
                            "the {} {} did not take the focus within {} ms (its window {} active; or the caret is not in it, or another element reads focused too): no key was sent",
                            expected.role,
                            expected.id(),
                            FOCUS_WAIT.as_millis(),
                            if window_active { "is" } else { "is not" }
                        ),
                        serde_json::json!({ "changed": "focus", "elementId": expected.id() }),
                    ));
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    }
}

/// Whether `field` is the only element of the window (`frame` and all
/// below it) that reads `focused`; `None` when the window cannot be
/// asked.
async fn only_focused(
    frame: Option<&atspi::proxy::accessible::AccessibleProxy<'_>>,
    field: &atspi::proxy::accessible::AccessibleProxy<'_>,
) -> Option<bool> {
    use atspi::{MatchType, ObjectMatchRule, SortOrder};
    let collection = frame?.proxies().await.ok()?.collection().await.ok()?;
    let rule = ObjectMatchRule::builder()
        .states([State::Focused], MatchType::All)
        .attributes(std::collections::HashMap::new(), MatchType::All)
        .roles(&[], MatchType::All)
        .interfaces(std::iter::empty::<atspi::Interface>(), MatchType::All)
        .build();
    let focused = collection
        .get_matches(rule, SortOrder::Canonical, 0, true)
        .await
        .ok()?;
    let field = field.inner();
    Some(
        !focused.is_empty()
            && focused.iter().all(|object| {
                object.name_as_str() == Some(field.destination().as_str())
                    && object.path_as_str() == field.path().as_str()
            }),
    )
}
