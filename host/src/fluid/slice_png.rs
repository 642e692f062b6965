//! The slice picture of a run's output folder: the speed in one z plane, shaded as `fluid render`
//! shades a slice (`murmur_common::render::fluid`'s colour map, wall and solid colours), scaled
//! up by a whole factor to at least [`LONG_SIDE`] pixels on its long side (nearest neighbour:
//! each cell a square of pixels), over a strip with the colour bar, its range and the
//! quantity's name (`crate::raster::bar`). PNG, written atomically.

use super::output::write_error;
use super::Fields;
use crate::atomic_file::write_atomic;
use crate::raster::bar::{colour_bar, BAR_HEIGHT, BAR_MARGIN, LABEL_PX};
use image::imageops::{self, FilterType};
use image::{Rgba, RgbaImage};
use murmur_common::lbm::boundary::KIND_MASK;
use murmur_common::render::fluid::{colour_map_rgba, MAP_SEQUENTIAL, SOLID, WALL};
use murmur_common::render::{unit_to_u8, BACKGROUND};
use std::io::Write;
use std::path::Path;

/// The picture's long side is at least this many pixels (a larger lattice keeps one pixel per
/// cell).
pub const LONG_SIDE: u32 = 512;
/// The narrowest picture: room for the colour bar and its labels.
pub const MIN_WIDTH: u32 = 320;
/// Rows of the strip under the plane that holds the colour bar and its labels.
pub const STRIP: u32 = BAR_MARGIN + BAR_HEIGHT + LABEL_PX + 14;
/// The quantity's name on the bar.
pub const LABEL: &str = "speed |u| (lattice units)";

/// The whole factor each cell is scaled by: the smallest that brings the long side of a
/// `w x h` plane to [`LONG_SIDE`] pixels or more (1 for a plane already that large).
pub fn scale(w: u32, h: u32) -> u32 {
    LONG_SIDE.div_ceil(w.max(h).max(1)).max(1)
}

/// `[r, g, b, 255]` of a colour in `[0, 1]`, rounded as the render kernels round.
fn opaque(c: [f32; 3]) -> Rgba<u8> {
    let [r, g, b] = c.map(unit_to_u8);
    Rgba([r, g, b, 255])
}

/// Writes the picture of the plane `z = z_index` of `fields` (`flags`: the cell bytes): the
/// speed `|u|` from 0 to the plane's largest fluid speed on the sequential map, non-fluid cells
/// in the wall colour, the solids' `samples` within half a cell of the plane in the solid
/// colour, `+y` up. Returns the picture's size in pixels.
pub fn write_slice_png(
    path: &Path,
    fields: &Fields,
    flags: &[u8],
    z_index: u32,
    samples: &[[f32; 3]],
) -> Result<(u32, u32), super::FluidError> {
    let l = fields.lattice;
    let z = z_index.min(l.nz.saturating_sub(1));
    let (w, h) = (l.nx, l.ny);
    let fluid = |x: u32, y: u32| {
        flags
            .get(l.index(x, y, z))
            .is_some_and(|f| f & KIND_MASK == 0)
    };
    let speed = |x: u32, y: u32| {
        let v = fields.u(l.index(x, y, z));
        (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
    };
    let top = (0..h)
        .flat_map(|y| (0..w).map(move |x| (x, y)))
        .filter(|&(x, y)| fluid(x, y))
        .map(|(x, y)| speed(x, y))
        .filter(|v| v.is_finite())
        .fold(0.0f32, f32::max);
    // A plane at rest still gets a range.
    let hi = if top > 0.0 { top } else { 1.0 };
    let mut cells = RgbaImage::new(w, h);
    for y in 0..h {
        for x in 0..w {
            let px = if fluid(x, y) {
                Rgba(colour_map_rgba(MAP_SEQUENTIAL, speed(x, y) / hi).to_le_bytes())
            } else {
                opaque(WALL)
            };
            cells.put_pixel(x, h - 1 - y, px);
        }
    }
    for p in samples {
        if (p[2] - z as f32).abs() <= 0.5 {
            let (x, y) = (p[0].round(), p[1].round());
            if x >= 0.0 && y >= 0.0 && (x as u32) < w && (y as u32) < h {
                cells.put_pixel(x as u32, h - 1 - y as u32, opaque(SOLID));
            }
        }
    }
    let k = scale(w, h);
    let plane = imageops::resize(&cells, w * k, h * k, FilterType::Nearest);
    let (pw, ph) = (plane.width().max(MIN_WIDTH), plane.height() + STRIP);
    let mut img = RgbaImage::from_pixel(pw, ph, Rgba(BACKGROUND.to_le_bytes()));
    imageops::replace(&mut img, &plane, ((pw - plane.width()) / 2) as i64, 0);
    colour_bar(&mut img, pw, ph, MAP_SEQUENTIAL, 0.0, hi, LABEL);
    let mut png = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .map_err(|e| write_error(path, e))?;
    write_atomic(path, |f| f.write_all(&png)).map_err(|e| write_error(path, e))?;
    Ok((pw, ph))
}

#[cfg(test)]
mod tests {
    use super::*;
    use murmur_common::lbm::Lattice;
    use murmur_common::render::fluid::colour_map;

    #[test]
    fn factors_reach_the_long_side_and_keep_the_aspect() {
        assert_eq!(scale(64, 64), 8);
        assert_eq!(scale(100, 30), 6);
        assert_eq!(scale(513, 2), 1);
        assert_eq!(scale(0, 0), LONG_SIDE);
    }

    #[test]
    fn the_picture_is_scaled_up_and_its_bar_is_the_colour_map() {
        // A 64 x 40 plane: speed growing along x, a wall row at y = 0.
        let l = Lattice::new(64, 40, 3);
        let mut f = Fields::rest(l);
        let mut flags = vec![0u8; l.cells()];
        for (c, flag) in flags.iter_mut().enumerate() {
            let (x, y, _) = l.coords(c);
            f.set(c, 1.0, [0.001 * x as f32, 0.0, 0.0]);
            if y == 0 {
                *flag = 1;
            }
        }
        let dir = std::env::temp_dir().join(format!("murmur-slice-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.png");
        let size = write_slice_png(&p, &f, &flags, 1, &[[10.0, 20.0, 1.2]]).unwrap();
        let img = image::open(&p).unwrap().to_rgba8();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(img.dimensions(), size);
        // 8 pixels per cell: 512 x 320 and the strip.
        assert_eq!(size, (512, 320 + STRIP));
        assert!(size.0.max(size.1) >= LONG_SIDE);
        let rgb = |x, y| {
            let p: &Rgba<u8> = img.get_pixel(x, y);
            [p[0], p[1], p[2]]
        };
        let bytes = |c: [f32; 3]| c.map(|v| (v * 255.0 + 0.5) as u8);
        // The bar's ends are the map's ends.
        let bar_y = size.1 - BAR_MARGIN - BAR_HEIGHT / 2;
        let bar_w = (size.0 / 3).max(100);
        assert_eq!(
            rgb(BAR_MARGIN, bar_y),
            bytes(colour_map(MAP_SEQUENTIAL, 0.0))
        );
        assert_eq!(
            rgb(BAR_MARGIN + bar_w - 1, bar_y),
            bytes(colour_map(MAP_SEQUENTIAL, 1.0))
        );
        // The plane: the fastest column (x = 63) is the map's end, the slowest its start, each
        // cell 8 x 8 pixels; the wall row at the bottom; the sample at cell (10, 20).
        let px = |cx: u32, cy: u32| rgb(8 * cx + 3, 8 * (39 - cy) + 4);
        let map = |t| colour_map_rgba(MAP_SEQUENTIAL, t).to_le_bytes()[..3].to_vec();
        assert_eq!(px(63, 5).to_vec(), map(1.0));
        assert_eq!(px(0, 5).to_vec(), map(0.0));
        assert_eq!(rgb(8 * 63, 8 * 30), rgb(8 * 63 + 7, 8 * 30 + 7));
        assert_eq!(px(30, 0), opaque(WALL).0[..3]);
        assert_eq!(px(10, 20), opaque(SOLID).0[..3]);
    }
}
