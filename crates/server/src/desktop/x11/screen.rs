//! The screen's pixels: a `GetImage` of the root window (all of it, or the
//! part a window covers), encoded as PNG.
//!
//! The frame digest is upstream's: `sha256:` and the hex of the PNG's
//! bytes. Revalidation must tell whether the pixels changed since a frame
//! was taken without encoding a PNG each time, so every frame handed out
//! is remembered with the region it shows and the digest of its raw
//! pixels: pixels that hash the same give the same PNG (the encoder is
//! deterministic), so a fresh capture of the same region is current
//! exactly when its raw digest is the frame's.
//!
//! The newest frames also keep their pixels (up to [`KEPT_BYTES`] in all),
//! so that a pointer action can be judged by where its window changed
//! (see [`super::tolerance`]); an older frame is compared by digest alone.

use std::collections::VecDeque;

use base64::Engine as _;
use sha2::{Digest, Sha256};
use x11rb::protocol::xproto::{ConnectionExt as _, ImageFormat, Window as XWindow};
use x11rb::rust_connection::RustConnection;

use crate::engine::{Frame, Refusal};
use adk_computer_use::digest::sha256_prefixed;

/// Frames remembered for revalidation.
const REMEMBERED: usize = 32;

/// The most bytes of pixels kept for the newest frames, in all: a dozen
/// frames of a 1920x1080 screen, far more of single windows.
pub(super) const KEPT_BYTES: usize = 96 << 20;

/// A rectangle of the screen: `(x, y, width, height)`.
pub(super) type Region = (i16, i16, u16, u16);

/// The raw pixels of a region of the screen, as the X server gave them.
pub(super) struct Capture {
    /// `sha256` of the raw bytes.
    pub raw_digest: [u8; 32],
    region: Region,
    pixels: Vec<u8>,
}

/// The pixel layout of the root window's visual, read from the setup.
#[derive(Debug, Clone, Copy)]
pub(super) struct Layout {
    bytes_per_pixel: usize,
    shifts: [u32; 3],
}

impl Layout {
    /// The layout of a TrueColor root visual with 8 bits per channel, or
    /// why the backend cannot read it.
    pub(super) fn of(conn: &RustConnection, screen: usize) -> Result<Self, String> {
        let setup = x11rb::connection::Connection::setup(conn);
        let root = setup
            .roots
            .get(screen)
            .ok_or_else(|| format!("the display has no screen {screen}"))?;
        let depth = root.root_depth;
        let bits = setup
            .pixmap_formats
            .iter()
            .find(|f| f.depth == depth)
            .map(|f| f.bits_per_pixel)
            .ok_or_else(|| format!("no pixmap format for depth {depth}"))?;
        let visual = root
            .allowed_depths
            .iter()
            .flat_map(|d| d.visuals.iter())
            .find(|v| v.visual_id == root.root_visual)
            .ok_or_else(|| "the root visual is not listed".to_owned())?;
        let shift = |mask: u32| -> Result<u32, String> {
            if mask.count_ones() == 8 && (mask >> mask.trailing_zeros()) == 0xff {
                Ok(mask.trailing_zeros())
            } else {
                Err(format!(
                    "a colour mask of {mask:#x} (8-bit channels are supported)"
                ))
            }
        };
        if bits != 32 || setup.image_byte_order != x11rb::protocol::xproto::ImageOrder::LSB_FIRST {
            return Err(format!(
                "{bits} bits per pixel in {:?} order (32, least significant first, is supported)",
                setup.image_byte_order
            ));
        }
        Ok(Self {
            bytes_per_pixel: 4,
            shifts: [
                shift(visual.red_mask)?,
                shift(visual.green_mask)?,
                shift(visual.blue_mask)?,
            ],
        })
    }
}

/// The part of a `size` screen that `bounds` (`(x, y, width, height)`)
/// covers, or `None` when it is off the screen.
pub(super) fn clip(bounds: (i64, i64, u32, u32), size: (u16, u16)) -> Option<Region> {
    let (x, y, width, height) = bounds;
    let left = x.max(0);
    let top = y.max(0);
    let right = (x + i64::from(width)).min(i64::from(size.0));
    let bottom = (y + i64::from(height)).min(i64::from(size.1));
    if right <= left || bottom <= top {
        return None;
    }
    Some((
        i16::try_from(left).ok()?,
        i16::try_from(top).ok()?,
        u16::try_from(right - left).ok()?,
        u16::try_from(bottom - top).ok()?,
    ))
}

/// Takes the pixels of `region` of the screen.
pub(super) fn capture(
    conn: &RustConnection,
    root: XWindow,
    region: Region,
) -> Result<Capture, Refusal> {
    let (x, y, width, height) = region;
    let image = conn
        .get_image(ImageFormat::Z_PIXMAP, root, x, y, width, height, !0)
        .map_err(|e| Refusal::plain(format!("GetImage was not sent: {e}")))?
        .reply()
        .map_err(|e| Refusal::plain(format!("GetImage failed: {e}")))?;
    Ok(Capture {
        raw_digest: Sha256::digest(&image.data).into(),
        region,
        pixels: image.data,
    })
}

impl Capture {
    /// The PNG of these pixels (RGB, 8 bits a channel).
    pub(super) fn encode(&self, layout: Layout) -> Result<Vec<u8>, Refusal> {
        let (_, _, width, height) = self.region;
        let (width, height) = (usize::from(width), usize::from(height));
        if self.pixels.len() < width * height * layout.bytes_per_pixel {
            return Err(Refusal::plain(format!(
                "GetImage returned {} bytes for a {width}x{height} screen",
                self.pixels.len()
            )));
        }
        let mut rgb = Vec::with_capacity(width * height * 3);
        for pixel in self
            .pixels
            .chunks_exact(layout.bytes_per_pixel)
            .take(width * height)
        {
            let value = u32::from_le_bytes([pixel[0], pixel[1], pixel[2], pixel[3]]);
            for shift in layout.shifts {
                rgb.push(((value >> shift) & 0xff) as u8);
            }
        }
        let (_, _, png_width, png_height) = self.region;
        crate::desktop::real::png_of_rgb(&rgb, u32::from(png_width), u32::from(png_height))
    }
}

/// A frame handed out: what it shows, its digests and, while it is among
/// the newest, its pixels.
struct Seen {
    region: Region,
    raw_digest: [u8; 32],
    digest: String,
    pixels: Option<Vec<u8>>,
    /// Where the window's application said its caret was when the frame
    /// was taken (see [`super::tolerance`]).
    caret: Option<Changed>,
}

/// How a fresh capture compares with a frame handed out.
pub(super) struct Since {
    /// The box around every pixel that changed, `None` when none did.
    pub changed: Option<Changed>,
    /// The caret the frame was taken with.
    pub caret: Option<Changed>,
}

/// The smallest box holding every pixel that differs between two captures
/// of one region, in screen coordinates: `(left, top, right, bottom)`,
/// right and bottom inclusive.
pub(super) type Changed = (i64, i64, i64, i64);

/// The frames handed out, newest last.
#[derive(Default)]
pub(super) struct Frames {
    seen: VecDeque<Seen>,
}

impl Frames {
    /// A frame of `capture`, remembered.
    pub(super) fn frame(
        &mut self,
        capture: Capture,
        layout: Layout,
        caret: Option<Changed>,
    ) -> Result<Frame, Refusal> {
        let png = capture.encode(layout)?;
        let digest = sha256_prefixed(&png);
        // Two regions can look the same (two identical dialogs): each is
        // remembered, so a frame is always checked against what it showed.
        if let Some(seen) = self
            .seen
            .iter_mut()
            .find(|s| s.digest == digest && s.region == capture.region)
        {
            // The same pixels with the caret said to be elsewhere: which
            // caret they show is not known, so none is tolerated.
            if seen.caret != caret {
                seen.caret = None;
            }
        } else {
            self.seen.push_back(Seen {
                region: capture.region,
                raw_digest: capture.raw_digest,
                digest: digest.clone(),
                pixels: Some(capture.pixels),
                caret,
            });
            while self.seen.len() > REMEMBERED {
                self.seen.pop_front();
            }
            // The newest keep their pixels; older ones their digests only.
            let mut kept = 0usize;
            for seen in self.seen.iter_mut().rev() {
                let size = seen.pixels.as_ref().map_or(0, Vec::len);
                if kept + size > KEPT_BYTES {
                    seen.pixels = None;
                } else {
                    kept += size;
                }
            }
        }
        Ok(Frame {
            png_base64: base64::engine::general_purpose::STANDARD.encode(&png),
            digest,
        })
    }

    /// Whether a frame was handed out under `digest`, of any region.
    pub(super) fn known(&self, digest: &str) -> bool {
        self.seen.iter().any(|s| s.digest == digest)
    }

    /// The digest of the raw pixels of the frame handed out under `digest`
    /// that showed `region`, if one did.
    pub(super) fn raw_of(&self, digest: &str, region: Region) -> Option<[u8; 32]> {
        self.seen
            .iter()
            .find(|s| s.digest == digest && s.region == region)
            .map(|s| s.raw_digest)
    }

    /// Where `now`, a fresh capture of `region`, differs from the frame
    /// handed out under `digest` for that region, and the caret that frame
    /// was taken with; `None` when that frame's pixels are no longer kept
    /// (or it never showed `region`).
    pub(super) fn changed_since(
        &self,
        digest: &str,
        region: Region,
        now: &Capture,
    ) -> Option<Since> {
        let seen = self
            .seen
            .iter()
            .find(|s| s.digest == digest && s.region == region)?;
        let before = seen.pixels.as_deref()?;
        if now.region != region {
            return None;
        }
        Some(Since {
            changed: changed_box(before, &now.pixels, region),
            caret: seen.caret,
        })
    }
}

/// The box around every pixel that differs between `before` and `after`,
/// two captures (4 bytes a pixel, row after row) of `region`. Pixels one
/// capture lacks (a short reply) count as changed.
fn changed_box(before: &[u8], after: &[u8], region: Region) -> Option<Changed> {
    let (x, y, width, height) = region;
    let (width, height) = (usize::from(width), usize::from(height));
    let row = width * 4;
    let mut changed: Option<(usize, usize, usize, usize)> = None;
    for line in 0..height {
        let span = line * row..(line + 1) * row;
        let (a, b) = (before.get(span.clone()), after.get(span));
        if a.is_some() && a == b {
            continue;
        }
        let columns = match (a, b) {
            (Some(a), Some(b)) => {
                let differs =
                    |column: &usize| a[column * 4..column * 4 + 4] != b[column * 4..column * 4 + 4];
                let first = (0..width).find(differs);
                let last = (0..width).rev().find(differs);
                first.zip(last)
            }
            _ => Some((0, width.saturating_sub(1))),
        };
        if let Some((first, last)) = columns {
            changed = Some(match changed {
                None => (first, line, last, line),
                Some((left, top, right, _)) => (left.min(first), top, right.max(last), line),
            });
        }
    }
    changed.map(|(left, top, right, bottom)| {
        let at = |origin: i16, offset: usize| {
            i64::from(origin) + i64::try_from(offset).unwrap_or(i64::MAX)
        };
        (at(x, left), at(y, top), at(x, right), at(y, bottom))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(width: u16, height: u16) -> Vec<u8> {
        vec![0; usize::from(width) * usize::from(height) * 4]
    }

    #[test]
    fn the_changed_box_holds_every_changed_pixel_and_no_more() {
        let region = (100, 50, 40, 30);
        let before = frame(40, 30);
        assert_eq!(changed_box(&before, &before, region), None);
        let mut after = before.clone();
        // Pixels (3, 4) and (10, 20) of the region.
        after[(4 * 40 + 3) * 4] = 1;
        after[(20 * 40 + 10) * 4 + 2] = 9;
        assert_eq!(
            changed_box(&before, &after, region),
            Some((103, 54, 110, 70))
        );
        // A reply that came back short changed what it lacks.
        assert_eq!(
            changed_box(&before, &after[..40 * 4 * 25], region),
            Some((100, 54, 139, 79))
        );
    }
}
