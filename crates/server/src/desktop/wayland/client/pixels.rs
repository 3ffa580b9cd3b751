//! A frame's pixels in the format the compositor chose, made RGBA: the
//! one conversion screencopy needs before a frame is encoded.

use super::*;

/// The frame's bytes as RGBA rows, in the formats compositors give
/// screencopy clients (32-bit little-endian ARGB/XRGB and ABGR/XBGR).
pub(super) fn to_rgba(
    raw: &[u8],
    format: wl_shm::Format,
    width: u32,
    height: u32,
    stride: u32,
    y_invert: bool,
) -> Result<Pixels, Refusal> {
    use wl_shm::Format;
    let bgr = match format {
        Format::Argb8888 | Format::Xrgb8888 => true,
        Format::Abgr8888 | Format::Xbgr8888 => false,
        other => {
            return Err(Refusal::plain(format!(
                "the compositor's frame format {other:?} is not one this desktop reads"
            )));
        }
    };
    let (w, h, stride) = (width as usize, height as usize, stride as usize);
    if stride < w * 4 || raw.len() < stride * h {
        return Err(Refusal::plain(
            "the compositor's frame is shorter than it said",
        ));
    }
    let mut rgba = Vec::with_capacity(w * h * 4);
    for row in 0..h {
        let source = if y_invert { h - 1 - row } else { row };
        let line = &raw[source * stride..source * stride + w * 4];
        for px in line.chunks_exact(4) {
            let (r, g, b) = if bgr {
                (px[2], px[1], px[0])
            } else {
                (px[0], px[1], px[2])
            };
            rgba.extend_from_slice(&[r, g, b, 0xff]);
        }
    }
    Ok(Pixels {
        width,
        height,
        rgba,
    })
}
