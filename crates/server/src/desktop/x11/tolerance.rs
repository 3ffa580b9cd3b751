//! The one change a window may show between the preview and the action
//! and still be the window the person approved: its blinking caret.
//!
//! A real application repaints by itself: a GTK entry's caret is drawn for
//! 0.8 s and hidden for 0.4 s, for ten seconds after each key, so a frame
//! compared pixel for pixel goes stale on its own in about one action in
//! three, and each retry costs the person another approval. The caret says
//! nothing about what an action means. So the pixels that changed since
//! the frame are tolerated when every one of them lies where the
//! application says its caret is: the left edge of the character at the
//! caret's offset in the focused text element, as the application reports
//! it over the accessibility bus, widened by [`SLACK`] pixels. Any other
//! change (a toggled box, a character typed, a repainted label, however
//! small) is a changed window: `stale_target`.
//!
//! The caret is asked for when a window's frame is taken and again at the
//! check: a caret that moved in between (any client on the bus may move
//! it, or move the focus) is no caret to tolerate, nor one taller than
//! [`MOST_HEIGHT`] or outside its element or window. An application that
//! is not on the bus tells nothing of a caret, and a frame of the whole
//! screen has none: those frames are compared whole.

use super::screen::Changed;

/// How far around the caret's line a change is taken for the caret, in
/// pixels on each side: carets are drawn one or two pixels wide, to either
/// side of the character's edge.
pub(super) const SLACK: i64 = 2;

/// The tallest caret believed, in pixels: a line of very large text. An
/// application that says its caret is taller is not believed.
pub(super) const MOST_HEIGHT: i64 = 96;

/// The box in which a change is the caret's, from the screen extents of
/// the character at the caret (`(x, y, width, height)`).
pub(super) fn caret_box(extents: (i32, i32, i32, i32)) -> Changed {
    let (x, y, _, height) = extents;
    let (x, y, height) = (i64::from(x), i64::from(y), i64::from(height));
    (x - SLACK, y - SLACK, x + SLACK, y + height - 1 + SLACK)
}

/// [`caret_box`], for a caret no taller than [`MOST_HEIGHT`] whose line
/// lies inside its `element` and its `window` (boxes as
/// `(left, top, right, bottom)`); `None` for any other claim.
pub(super) fn caret_within(
    extents: (i32, i32, i32, i32),
    element: Changed,
    window: Changed,
) -> Option<Changed> {
    let (x, y, _, height) = extents;
    let (x, y, height) = (i64::from(x), i64::from(y), i64::from(height));
    let line = (x, y, x, y + height - 1);
    let inside = |outer: Changed| tolerable(line, widened(outer));
    (height > 0 && height <= MOST_HEIGHT && inside(element) && inside(window))
        .then(|| caret_box(extents))
}

/// `outer`, [`SLACK`] pixels larger on every side (a caret at the end of
/// a field's text may sit on its edge).
fn widened(outer: Changed) -> Changed {
    let (left, top, right, bottom) = outer;
    (left - SLACK, top - SLACK, right + SLACK, bottom + SLACK)
}

/// Whether every changed pixel (all inside `changed`) lies in `caret`.
pub(super) fn tolerable(changed: Changed, caret: Changed) -> bool {
    let (left, top, right, bottom) = changed;
    let (c_left, c_top, c_right, c_bottom) = caret;
    left >= c_left && right <= c_right && top >= c_top && bottom <= c_bottom
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The caret of zenity's Name field after "Ada", as Xvfb showed it
    /// (one pixel wide, 17 tall) and as GTK reported it (the extents of
    /// the character at the caret: at the end of the text, 0 wide).
    const DRAWN: Changed = (617, 476, 617, 492);
    const REPORTED: (i32, i32, i32, i32) = (617, 476, 0, 17);

    #[test]
    fn the_caret_where_the_application_says_it_is_is_tolerated() {
        assert!(tolerable(DRAWN, caret_box(REPORTED)));
        // Two pixels wide, either side of the edge.
        assert!(tolerable((615, 476, 619, 492), caret_box(REPORTED)));
    }

    #[test]
    fn a_caret_is_believed_only_where_a_caret_could_be() {
        // zenity's Name field, and its window.
        let field = (583, 468, 750, 501);
        let window = (514, 431, 934, 630);
        assert_eq!(
            caret_within(REPORTED, field, window),
            Some(caret_box(REPORTED))
        );
        // Taller than any line.
        assert_eq!(caret_within((617, 0, 0, 10_000), field, window), None);
        // Outside its field, or its window.
        assert_eq!(caret_within((300, 476, 0, 17), field, window), None);
        assert_eq!(
            caret_within((617, 476, 0, 17), field, (0, 0, 100, 100)),
            None
        );
        assert_eq!(caret_within((617, 476, 0, 0), field, window), None);
    }

    #[test]
    fn a_change_beside_or_beyond_the_caret_is_not_tolerated() {
        let caret = caret_box(REPORTED);
        // The glyph typed before the caret.
        assert!(!tolerable((609, 476, 617, 492), caret));
        // A caret that moved: the old place and the new span both.
        assert!(!tolerable((617, 476, 625, 492), caret));
        // Taller than the line.
        assert!(!tolerable((617, 470, 617, 492), caret));
        // A box toggled elsewhere.
        assert!(!tolerable((100, 100, 115, 115), caret));
    }
}
