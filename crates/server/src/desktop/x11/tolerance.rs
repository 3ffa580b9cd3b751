//! How much a window may change between the preview and a pointer action
//! and still be the window the person approved.
//!
//! A real application repaints by itself: a GTK entry's caret blinks
//! (drawn for 0.8 s, hidden for 0.4 s, for ten seconds after each key), so
//! a frame compared pixel for pixel goes stale on its own in about one
//! action in three, and each retry costs the person another approval.
//! What a click's meaning depends on is the window (its identity, title,
//! bounds and element tree, all still compared exactly) and what lies
//! under and around the point. So, for an action at one point, the pixels
//! that changed since the frame may be tolerated when all of them fit in
//! one box no larger than a caret ([`MOST_WIDTH`] by [`MOST_HEIGHT`]) that
//! keeps at least [`POINT_MARGIN`] pixels from the point on every side.
//! Anything wider, taller, scattered (two changes far apart span one large
//! box) or near the point is a changed window: `stale_target`.
//!
//! The keyboard's tools have no point, and a typed character is the same
//! size as a caret: their frames are still compared whole. Typing into an
//! application on the accessibility bus goes by element (`set_value`),
//! which is judged by the element tree, not by pixels.

use super::screen::Changed;

/// The widest change tolerated, in pixels: a caret, even at twice the
/// usual scale, and the glyph beside it.
pub(super) const MOST_WIDTH: i64 = 24;

/// The tallest change tolerated, in pixels: a caret in a large font.
pub(super) const MOST_HEIGHT: i64 = 48;

/// How close to the point no change is tolerated, in pixels on each side:
/// the point's button or field and its label.
pub(super) const POINT_MARGIN: i64 = 32;

/// Whether the pixels that changed (all inside `changed`) leave a pointer
/// action at `point` acting on what the person saw.
pub(super) fn tolerable(changed: Changed, point: (i64, i64)) -> bool {
    let (left, top, right, bottom) = changed;
    let small = right - left < MOST_WIDTH && bottom - top < MOST_HEIGHT;
    let far = right < point.0 - POINT_MARGIN
        || left > point.0 + POINT_MARGIN
        || bottom < point.1 - POINT_MARGIN
        || top > point.1 + POINT_MARGIN;
    small && far
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GTK caret as Xvfb showed it: one pixel wide, 17 tall.
    const CARET: Changed = (172, 120, 172, 136);

    #[test]
    fn a_caret_far_from_the_point_is_tolerated() {
        assert!(tolerable(CARET, (480, 280)));
        // Just beyond the margin, on each side.
        assert!(tolerable(CARET, (172 + POINT_MARGIN + 1, 128)));
        assert!(tolerable(CARET, (172 - POINT_MARGIN - 1, 128)));
        assert!(tolerable(CARET, (172, 136 + POINT_MARGIN + 1)));
        assert!(tolerable(CARET, (172, 120 - POINT_MARGIN - 1)));
    }

    #[test]
    fn a_change_near_the_point_is_not_tolerated_however_small() {
        assert!(!tolerable((300, 200, 300, 200), (300, 200)));
        assert!(!tolerable(CARET, (172 + POINT_MARGIN, 128)));
        assert!(!tolerable(CARET, (172, 120 - POINT_MARGIN)));
        assert!(!tolerable(CARET, (150, 150)));
    }

    #[test]
    fn a_change_larger_than_a_caret_is_not_tolerated_however_far() {
        // A word typed into another field, a button's hover, a new line.
        assert!(!tolerable((10, 10, 10 + MOST_WIDTH, 20), (900, 900)));
        assert!(!tolerable((10, 10, 12, 10 + MOST_HEIGHT), (900, 900)));
        // Two carets far apart make one large box.
        assert!(!tolerable((10, 10, 400, 26), (900, 900)));
        // The largest change tolerated.
        assert!(tolerable(
            (10, 10, 10 + MOST_WIDTH - 1, 10 + MOST_HEIGHT - 1),
            (900, 900)
        ));
    }
}
