//! The colour bar and labels drawn onto an RGBA frame: the map's strip across the bottom, its
//! range and the quantity's name in white (DejaVu Sans through plotters), for the fluid viewer's
//! frames and the slice pictures of `fluid run` (`crate::fluid::slice_png`).

use murmur_common::render::fluid::colour_map;

/// Height of the colour bar's strip, pixels, and its margin.
pub const BAR_HEIGHT: u32 = 12;
pub const BAR_MARGIN: u32 = 10;
/// Label height, pixels.
pub const LABEL_PX: u32 = 14;

/// Draws the colour bar of `map` from `lo` to `hi` across the bottom of the frame with its
/// range and `label` (frames at least 160 x 60 pixels; smaller ones are left alone).
pub fn colour_bar(
    rgba: &mut [u8],
    width: u32,
    height: u32,
    map: u32,
    lo: f32,
    hi: f32,
    label: &str,
) {
    if width < 160 || height < 60 {
        return;
    }
    let bar_w = (width / 3).max(100);
    let (x0, y0) = (BAR_MARGIN, height - BAR_MARGIN - BAR_HEIGHT);
    // One row of the bar, then copied down its height.
    let row: Vec<u8> = (0..bar_w)
        .flat_map(|x| {
            let c = colour_map(map, x as f32 / (bar_w - 1) as f32);
            [
                (c[0] * 255.0 + 0.5) as u8,
                (c[1] * 255.0 + 0.5) as u8,
                (c[2] * 255.0 + 0.5) as u8,
                255,
            ]
        })
        .collect();
    for y in y0..y0 + BAR_HEIGHT {
        let i = ((y * width + x0) * 4) as usize;
        rgba[i..i + row.len()].copy_from_slice(&row);
    }
    let y_text = (y0 - LABEL_PX - 2) as i32;
    text(rgba, width, height, x0 as i32, y_text, &format!("{lo:.3e}"));
    let right = format!("{hi:.3e}");
    let rx = (x0 + bar_w) as i32 - 7 * right.len() as i32;
    text(rgba, width, height, rx, y_text, &right);
    text(
        rgba,
        width,
        height,
        (x0 + bar_w + 8) as i32,
        (y0 - 2) as i32,
        label,
    );
}

/// Writes `s` in white at `(x, y)` (top-left, pixels) into the frame (DejaVu Sans, 14 px,
/// drawn by plotters at `(x, 2)` in a band of the frame's width and `LABEL_PX + 6` rows): the
/// pixels plotters' bitmap backend would draw, in its order and with its blending, from a
/// cache of each label's glyph coverage (laying out and rasterising a label takes longer than
/// the rest of the colour bar; a frame's labels repeat from frame to frame).
pub fn text(rgba: &mut [u8], width: u32, height: u32, x: i32, y: i32, s: &str) {
    let rows = LABEL_PX + 6;
    if y < 0 || y as u32 + rows > height || rgba.len() != (width * height * 4) as usize {
        return;
    }
    LABELS.with(|cache| {
        let mut cache = cache.borrow_mut();
        let key = (s.to_string(), width, x);
        let at = match cache.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                if cache.len() >= LABEL_CACHE {
                    cache.remove(0);
                }
                cache.push((key, coverage(s, width, rows, x)));
                cache.len() - 1
            }
        };
        let start = (y as u32 * width * 4) as usize;
        for &(i, alpha) in &cache[at].1 {
            let px = &mut rgba[start + 4 * i as usize..start + 4 * i as usize + 3];
            // plotters-bitmap's `draw_pixel` and `blend` for white.
            if alpha >= 1.0 - 1.0 / 256.0 {
                px.fill(255);
            } else if alpha > 0.0 {
                let a = (alpha * 256.0).floor() as u64;
                for c in px {
                    *c += (u64::from(255 - *c) * a / 256) as u8;
                }
            }
        }
    });
}

/// Labels whose coverage is kept (a frame has three, a comparison a few more).
const LABEL_CACHE: usize = 16;

/// A label as drawn: `(text, frame width, x)`.
type LabelKey = (String, u32, i32);
/// The pixels a label covers (offsets in its band) and their coverage, in drawing order.
type Coverage = Vec<(u32, f64)>;

thread_local! {
    /// The labels drawn last and their coverage.
    static LABELS: std::cell::RefCell<Vec<(LabelKey, Coverage)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The pixels label `s` covers in a band of `width x rows` pixels, drawn at `(x, 2)`, and
/// their coverage, in drawing order: what plotters' default `draw_text` hands its bitmap
/// backend's `draw_pixel` (laid out from the label's box, clipped to the band).
fn coverage(s: &str, width: u32, rows: u32, x: i32) -> Coverage {
    use plotters::prelude::*;
    crate::flock::bench::plot::register_font();
    let font: FontDesc = ("sans-serif", LABEL_PX).into_font();
    let Ok(((min_x, min_y), _)) = font.layout_box(s) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let _ = font.draw(s, (0, 0), |px, py, a| {
        let (px, py) = (x + px - min_x, 2 + py - min_y);
        if px >= 0 && (px as u32) < width && py >= 0 && (py as u32) < rows {
            // The white text colour's alpha (1) times the glyph's coverage (`Color::mix`).
            out.push((py as u32 * width + px as u32, f64::from(a)));
        }
        Ok::<(), ()>(())
    });
    out
}
