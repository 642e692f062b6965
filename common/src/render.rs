//! Boid rasterisation, written once for the CPU viewer and the `render_*` GPU kernels: an orbit
//! camera, a pinhole projection to pixel coordinates and depth, colour by heading or by speed, a
//! depth-aware disc per boid, and the packed depth+colour key whose per-pixel minimum is the
//! nearest boid.
//!
//! The frame is `width * height` `u64` keys, row-major, `y` down. A key holds the depth (distance
//! along the view direction, scene units) as order-preserving bits in its high 32 bits and the
//! colour (`RGBA8`, R in the lowest byte) in its low 32 bits, so `min` over keys keeps the nearest
//! boid and, at equal depth, the smaller colour: the result does not depend on the order in which
//! boids are drawn (an `atomicMin` per pixel on the GPU, `AtomicU64::fetch_min` on the CPU).
//!
//! The camera's trigonometry (`Camera::view`) is host-only; kernels receive the finished [`View`],
//! which needs only multiplies, adds and one divide per boid.

pub mod abi;
pub mod fluid;
pub mod occupancy;
pub mod smoke;

use crate::math::{floor_i32, length, sqrt, Vec3};

/// Key of an empty pixel: larger than every boid's key (depth bits of `+inf` and above).
pub const EMPTY_KEY: u64 = u64::MAX;

/// Largest disc radius in pixels, whatever the depth: bounds the work of one boid to
/// `(2 * 6 + 1)^2 = 169` pixels.
pub const MAX_RADIUS_PX: f32 = 6.0;

/// Default background colour, `RGBA8` packed as in the keys (a dark blue-grey, opaque).
pub const BACKGROUND: u32 = rgba(12, 14, 20, 255);

/// Packs four bytes into a `u32` whose little-endian bytes are `r, g, b, a` (the pixel format of
/// the frames, `wgpu::TextureFormat::Rgba8UnormSrgb` and PNG RGBA8).
#[inline(always)]
pub const fn rgba(r: u8, g: u8, b: u8, a: u8) -> u32 {
    r as u32 | (g as u32) << 8 | (b as u32) << 16 | (a as u32) << 24
}

/// What a boid's colour shows.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ColourMode {
    /// Hue from the horizontal (x, z) direction of the velocity; climbing boids are lighter,
    /// diving ones darker; boids at rest are grey.
    Heading = 0,
    /// A dark-blue, cyan, yellow, orange ramp over `|v| / max_speed`.
    Speed = 1,
}

/// An orbit camera: it looks at `target` from `distance` away, turned by `yaw` about the vertical
/// (`y`) axis and raised by `pitch`. Angles in radians, lengths in scene units, sizes in pixels.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    /// Rotation about `+y`; 0 looks from `+z` toward `-z`.
    pub yaw: f32,
    /// Elevation above the `x`-`z` plane, kept inside `±PITCH_LIMIT`.
    pub pitch: f32,
    /// Distance from the eye to `target`.
    pub distance: f32,
    /// The point the camera orbits and looks at.
    pub target: Vec3,
    /// Vertical field of view.
    pub fov_y: f32,
    /// Frame width in pixels.
    pub width: u32,
    /// Frame height in pixels.
    pub height: u32,
}

/// Largest |pitch| (radians): just short of straight up or down, where `right` is undefined.
pub const PITCH_LIMIT: f32 = 1.55;

/// How boids are drawn: their size and colouring.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Style {
    /// Boid radius in scene units (its disc shrinks with depth).
    pub boid_radius: f32,
    pub colour: ColourMode,
    /// Speed that maps to the top of the speed ramp (the flock's `max_speed`).
    pub max_speed: f32,
    /// Half-width of the flock's domain: depth fading runs over `distance ± scale`.
    pub scale: f32,
}

/// A camera made ready for rasterising: the eye's basis and everything per-frame, by value into
/// the `render_splat` kernel. Build it with [`Camera::view`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    /// Eye position (scene units).
    pub eye: Vec3,
    /// Unit vectors of the eye: image right, image up, into the screen.
    pub right: Vec3,
    pub up: Vec3,
    pub forward: Vec3,
    /// Focal length in pixels: `(height / 2) / tan(fov_y / 2)`.
    pub focal_px: f32,
    /// Image centre in pixels (`width / 2`, `height / 2`).
    pub centre_x: f32,
    pub centre_y: f32,
    pub width: u32,
    pub height: u32,
    /// Boids nearer than this depth are not drawn (scene units).
    pub near: f32,
    /// Boid radius (scene units).
    pub boid_radius: f32,
    /// A [`ColourMode`] as `u32`.
    pub colour_mode: u32,
    /// `1 / max_speed` for the speed ramp (0 when `max_speed` is 0).
    pub inv_max_speed: f32,
    /// Depth where fading starts and `1 / (fade_end - fade_start)`; colours dim to 45 % at the end.
    pub fade_start: f32,
    pub inv_fade_len: f32,
}

#[cfg(not(target_arch = "nvptx64"))]
impl Camera {
    /// A camera on a domain `[-scale, scale]^3`: the whole cube in view, seen from above a corner.
    pub fn framing(scale: f32, width: u32, height: u32) -> Camera {
        Camera {
            yaw: 0.65,
            pitch: 0.4,
            distance: 4.2 * scale,
            target: Vec3::ZERO,
            fov_y: 50f32.to_radians(),
            width,
            height,
        }
    }

    /// Eye position: `target + distance * (cos p sin y, sin p, cos p cos y)`.
    pub fn eye(&self) -> Vec3 {
        let (sy, cy) = self.yaw.sin_cos();
        let (sp, cp) = self.pitch.clamp(-PITCH_LIMIT, PITCH_LIMIT).sin_cos();
        self.target + Vec3::new(cp * sy, sp, cp * cy) * self.distance
    }

    /// The [`View`] the rasterisers use (host-only: needs `sin`, `cos`, `tan`).
    pub fn view(&self, style: &Style) -> View {
        let eye = self.eye();
        let forward = normalise(self.target - eye);
        let right = normalise(cross(forward, Vec3::new(0.0, 1.0, 0.0)));
        let up = cross(right, forward);
        let focal_px = 0.5 * self.height as f32 / (0.5 * self.fov_y).tan();
        let fade_start = (self.distance - style.scale).max(0.0);
        let fade_len = (2.0 * style.scale).max(1e-6);
        View {
            eye,
            right,
            up,
            forward,
            focal_px,
            centre_x: 0.5 * self.width as f32,
            centre_y: 0.5 * self.height as f32,
            width: self.width,
            height: self.height,
            near: 1e-3 * self.distance.max(1e-3),
            boid_radius: style.boid_radius,
            colour_mode: style.colour as u32,
            inv_max_speed: if style.max_speed > 0.0 {
                1.0 / style.max_speed
            } else {
                0.0
            },
            fade_start,
            inv_fade_len: 1.0 / fade_len,
        }
    }

    /// Turns the camera by a mouse drag of `(dx, dy)` pixels (`radians_per_px` each).
    pub fn orbit(&mut self, dx: f32, dy: f32, radians_per_px: f32) {
        self.yaw -= dx * radians_per_px;
        self.pitch = (self.pitch + dy * radians_per_px).clamp(-PITCH_LIMIT, PITCH_LIMIT);
    }

    /// Moves the eye toward (`steps > 0`) or away from the target, 10 % of the distance a step.
    pub fn zoom(&mut self, steps: f32) {
        self.distance = (self.distance * 0.9f32.powf(steps)).clamp(1e-2, 1e6);
    }
}

/// Where a point lands: pixel coordinates (`x` right, `y` down, continuous) and depth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Projected {
    pub x: f32,
    pub y: f32,
    /// Distance along the view direction (scene units), > `near`.
    pub depth: f32,
}

impl View {
    /// Projects `p` (pinhole camera); `None` when it is not in front of the near plane.
    #[inline(always)]
    pub fn project(&self, p: Vec3) -> Option<Projected> {
        let d = p - self.eye;
        let depth = d.dot(self.forward);
        // Written so that a NaN depth (a NaN position) is rejected too.
        if depth.is_nan() || depth <= self.near {
            return None;
        }
        let s = self.focal_px / depth;
        Some(Projected {
            x: self.centre_x + d.dot(self.right) * s,
            y: self.centre_y - d.dot(self.up) * s,
            depth,
        })
    }

    /// Disc radius in pixels of a boid at `depth`: its scene radius seen through the lens, capped
    /// at [`MAX_RADIUS_PX`]. Below 1 the disc is the single pixel under the boid.
    #[inline(always)]
    pub fn radius_px(&self, depth: f32) -> f32 {
        let r = self.boid_radius * self.focal_px / depth;
        if r > MAX_RADIUS_PX {
            MAX_RADIUS_PX
        } else {
            r
        }
    }

    /// Colour of a boid with velocity `vel` at `depth`, as packed `RGBA8`.
    #[inline(always)]
    pub fn colour(&self, vel: Vec3, depth: f32) -> u32 {
        let [r, g, b] = if self.colour_mode == ColourMode::Speed as u32 {
            speed_colour(length(vel) * self.inv_max_speed)
        } else {
            heading_colour(vel)
        };
        let f = 1.0 - 0.55 * clamp01((depth - self.fade_start) * self.inv_fade_len);
        rgba(unit_to_u8(r * f), unit_to_u8(g * f), unit_to_u8(b * f), 255)
    }

    /// Rasterises one boid: calls `write(pixel_index, key)` for every pixel of its disc inside
    /// the frame (`pixel_index = y * width + x`). The caller keeps the minimum key per pixel.
    #[inline(always)]
    pub fn splat(&self, pos: Vec3, vel: Vec3, write: impl FnMut(u32, u64)) {
        let Some(p) = self.project(pos) else {
            return;
        };
        let r = self.radius_px(p.depth);
        let reach = r as i32; // r >= 0: truncation is floor
        let (cx, cy) = (floor_i32(p.x), floor_i32(p.y));
        let (w, h) = (self.width as i32, self.height as i32);
        if cx + reach < 0 || cy + reach < 0 || cx - reach >= w || cy - reach >= h {
            return;
        }
        self.disc(&p, r, pack(p.depth, self.colour(vel, p.depth)), write);
    }

    /// Writes `key` into every pixel of the disc of radius `r` pixels around `p` that lies in
    /// the frame (`write(pixel_index, key)`); a radius below 1 is the single pixel under `p`.
    #[inline(always)]
    pub fn disc(&self, p: &Projected, r: f32, key: u64, mut write: impl FnMut(u32, u64)) {
        let reach = r as i32; // r >= 0: truncation is floor
        let (cx, cy) = (floor_i32(p.x), floor_i32(p.y));
        let (w, h) = (self.width as i32, self.height as i32);
        if cx + reach < 0 || cy + reach < 0 || cx - reach >= w || cy - reach >= h {
            return;
        }
        let r2 = r * r;
        let mut dy = -reach;
        while dy <= reach {
            let y = cy + dy;
            let mut dx = -reach;
            while dx <= reach {
                let x = cx + dx;
                if x >= 0 && x < w && y >= 0 && y < h && (dx * dx + dy * dy) as f32 <= r2 {
                    write((y * w + x) as u32, key);
                }
                dx += 1;
            }
            dy += 1;
        }
    }
}

/// The key of a boid at `depth` (> 0) with colour `rgba`: see the module documentation.
#[inline(always)]
pub fn pack(depth: f32, rgba: u32) -> u64 {
    ((ordered_bits(depth) as u64) << 32) | rgba as u64
}

/// The pixel colour of a key: its colour, or `background` for [`EMPTY_KEY`].
#[inline(always)]
pub fn resolve(key: u64, background: u32) -> u32 {
    if key == EMPTY_KEY {
        background
    } else {
        key as u32
    }
}

/// Bits of `x` whose unsigned order is the order of the floats (negative below positive).
#[inline(always)]
pub fn ordered_bits(x: f32) -> u32 {
    let b = x.to_bits();
    if b & 0x8000_0000 != 0 {
        !b
    } else {
        b | 0x8000_0000
    }
}

/// Hue wheel over the horizontal heading, lightness from the vertical one, without `atan2`:
/// three cosine lobes 120 degrees apart (red toward `+x`).
#[inline(always)]
pub fn heading_colour(vel: Vec3) -> [f32; 3] {
    let len = length(vel);
    if len.is_nan() || len <= 0.0 {
        return [0.55, 0.55, 0.55];
    }
    let d = vel * (1.0 / len);
    let h = sqrt(d.x * d.x + d.z * d.z);
    // Unit horizontal direction (or none for a vertical heading).
    let (hx, hz) = if h > 1e-6 {
        (d.x / h, d.z / h)
    } else {
        (0.0, 0.0)
    };
    // cos(120°) = -1/2, sin(120°) = sqrt(3)/2.
    const S: f32 = 0.866_025_4;
    let lobe = |c: f32| 0.5 + 0.5 * c;
    let r = lobe(hx);
    let g = lobe(-0.5 * hx + S * hz);
    let b = lobe(-0.5 * hx - S * hz);
    // Saturation follows how horizontal the heading is; climbing mixes toward white, diving
    // toward black.
    let mix = |c: f32| {
        let c = 0.5 + (c - 0.5) * h;
        if d.y > 0.0 {
            c + (1.0 - c) * 0.6 * d.y
        } else {
            c * (1.0 + 0.6 * d.y)
        }
    };
    [mix(r), mix(g), mix(b)]
}

/// Speed ramp: `t = |v| / max_speed` in `[0, 1]` through dark blue, cyan, yellow, orange (boids
/// at the speed limit, most of a CIS 565 flock, are orange rather than a washed-out white).
#[inline(always)]
pub fn speed_colour(t: f32) -> [f32; 3] {
    const STOPS: [[f32; 3]; 4] = [
        [0.10, 0.15, 0.55],
        [0.10, 0.75, 0.90],
        [0.98, 0.85, 0.20],
        [1.00, 0.50, 0.12],
    ];
    let t = clamp01(t) * 3.0;
    let i = if t >= 3.0 { 2 } else { t as usize };
    let f = t - i as f32;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    [
        a[0] + (b[0] - a[0]) * f,
        a[1] + (b[1] - a[1]) * f,
        a[2] + (b[2] - a[2]) * f,
    ]
}

#[inline(always)]
pub fn clamp01(x: f32) -> f32 {
    if x > 1.0 {
        1.0
    } else if x > 0.0 {
        x
    } else {
        0.0
    }
}

/// `[0, 1]` to `0..=255`, rounding to nearest.
#[inline(always)]
pub fn unit_to_u8(x: f32) -> u8 {
    (clamp01(x) * 255.0 + 0.5) as u8
}

#[cfg(not(target_arch = "nvptx64"))]
fn cross(a: Vec3, b: Vec3) -> Vec3 {
    Vec3::new(
        a.y * b.z - a.z * b.y,
        a.z * b.x - a.x * b.z,
        a.x * b.y - a.y * b.x,
    )
}

#[cfg(not(target_arch = "nvptx64"))]
fn normalise(v: Vec3) -> Vec3 {
    v * (1.0 / length(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn style() -> Style {
        Style {
            boid_radius: 0.5,
            colour: ColourMode::Heading,
            max_speed: 1.0,
            scale: 100.0,
        }
    }

    fn splat_all(v: &View, boids: &[(Vec3, Vec3)]) -> std::vec::Vec<u64> {
        let mut frame = std::vec![EMPTY_KEY; (v.width * v.height) as usize];
        for &(p, u) in boids {
            v.splat(p, u, |i, k| {
                let px = &mut frame[i as usize];
                *px = (*px).min(k);
            });
        }
        frame
    }

    #[test]
    fn target_lands_at_the_centre() {
        for (yaw, pitch) in [(0.0, 0.0), (0.65, 0.4), (-2.0, -1.2), (3.0, 1.5)] {
            let cam = Camera {
                yaw,
                pitch,
                ..Camera::framing(100.0, 64, 48)
            };
            let v = cam.view(&style());
            let p = v.project(Vec3::ZERO).unwrap();
            assert!(
                (p.x - 32.0).abs() < 1e-3 && (p.y - 24.0).abs() < 1e-3,
                "{p:?}"
            );
            assert!((p.depth - cam.distance).abs() < 1e-2 * cam.distance);
        }
    }

    #[test]
    fn axes_go_where_they_should() {
        // yaw 0, pitch 0: the eye is on +z looking at -z, so +x is right and +y is up.
        let cam = Camera {
            yaw: 0.0,
            pitch: 0.0,
            ..Camera::framing(100.0, 64, 48)
        };
        let v = cam.view(&style());
        let right = v.project(Vec3::new(10.0, 0.0, 0.0)).unwrap();
        let up = v.project(Vec3::new(0.0, 10.0, 0.0)).unwrap();
        let near = v.project(Vec3::new(0.0, 0.0, 10.0)).unwrap();
        assert!(right.x > 32.5 && (right.y - 24.0).abs() < 1e-3);
        assert!(up.y < 23.5 && (up.x - 32.0).abs() < 1e-3);
        assert!(near.depth < cam.distance);
        // Behind the eye: not drawn.
        assert!(v.project(Vec3::new(0.0, 0.0, 2.0 * cam.distance)).is_none());
        assert!(v.project(Vec3::new(f32::NAN, 0.0, 0.0)).is_none());
    }

    #[test]
    fn keys_order_by_depth_then_colour() {
        assert!(pack(1.0, 0xffff_ffff) < pack(2.0, 0));
        assert!(pack(0.001, 5) < pack(0.001, 6));
        assert!(pack(1e30, 0xffff_ffff) < EMPTY_KEY);
        assert!(ordered_bits(-1.0) < ordered_bits(0.0));
        assert!(ordered_bits(0.0) < ordered_bits(f32::MIN_POSITIVE));
        assert_eq!(resolve(EMPTY_KEY, BACKGROUND), BACKGROUND);
        assert_eq!(resolve(pack(3.0, 0x1234_5678), BACKGROUND), 0x1234_5678);
        assert_eq!(rgba(1, 2, 3, 4).to_le_bytes(), [1, 2, 3, 4]);
    }

    #[test]
    fn nearer_boid_wins_whatever_the_order() {
        let cam = Camera {
            yaw: 0.0,
            pitch: 0.0,
            ..Camera::framing(100.0, 64, 48)
        };
        let v = cam.view(&style());
        // Both on the view axis; the one at z = +50 is nearer the eye (on +z). Different
        // headings so their colours differ.
        let near = (Vec3::new(0.0, 0.0, 50.0), Vec3::new(1.0, 0.0, 0.0));
        let far = (Vec3::new(0.0, 0.0, -50.0), Vec3::new(-1.0, 0.0, 0.0));
        let a = splat_all(&v, &[near, far]);
        let b = splat_all(&v, &[far, near]);
        assert_eq!(a, b);
        let centre = (24 * 64 + 32) as usize;
        let d = v.project(near.0).unwrap().depth;
        assert_eq!(a[centre], pack(d, v.colour(near.1, d)));
        assert_ne!(v.colour(near.1, d), v.colour(far.1, d));
    }

    #[test]
    fn discs_shrink_with_depth_and_stay_in_the_frame() {
        let cam = Camera {
            yaw: 0.0,
            pitch: 0.0,
            distance: 100.0,
            ..Camera::framing(100.0, 64, 48)
        };
        let v = cam.view(&Style {
            boid_radius: 3.0,
            ..style()
        });
        let count = |p: Vec3| {
            splat_all(&v, &[(p, Vec3::ZERO)])
                .iter()
                .filter(|&&k| k != EMPTY_KEY)
                .count()
        };
        let near = count(Vec3::new(0.0, 0.0, 60.0));
        let mid = count(Vec3::ZERO);
        let far = count(Vec3::new(0.0, 0.0, -400.0));
        assert!(near > mid && mid > far && far >= 1, "{near} {mid} {far}");
        // Capped radius: at most the (2 * 6 + 1)^2 box.
        assert!(count(Vec3::new(0.0, 0.0, 99.0)) <= 169);
        // A corner boid is clipped, not wrapped to the other side.
        let corner = v.project(Vec3::new(-1000.0, 1000.0, -500.0));
        assert!(corner.is_some_and(|p| p.x < 0.0 && p.y < 0.0));
        assert_eq!(count(Vec3::new(-1000.0, 1000.0, -500.0)), 0);
    }

    #[test]
    fn colours() {
        let v = Camera::framing(100.0, 8, 8).view(&style());
        let red = heading_colour(Vec3::new(1.0, 0.0, 0.0));
        assert!(red[0] > 0.99 && red[1] < 0.3 && red[2] < 0.3, "{red:?}");
        let up = heading_colour(Vec3::new(0.0, 1.0, 0.0));
        let down = heading_colour(Vec3::new(0.0, -1.0, 0.0));
        assert!(up[0] > 0.7 && down[0] < 0.3);
        assert_eq!(heading_colour(Vec3::ZERO), [0.55; 3]);
        assert_eq!(speed_colour(0.0), [0.10, 0.15, 0.55]);
        assert_eq!(speed_colour(7.0), [1.00, 0.50, 0.12]);
        // Farther is dimmer, never brighter.
        let c = |d: f32| v.colour(Vec3::new(0.0, 0.0, 1.0), d).to_le_bytes();
        assert!(c(1000.0)[2] < c(10.0)[2]);
        assert_eq!(c(1000.0)[3], 255);
    }

    #[test]
    fn orbit_and_zoom_keep_the_camera_valid() {
        let mut cam = Camera::framing(100.0, 64, 48);
        cam.orbit(0.0, 1e6, 0.01);
        assert_eq!(cam.pitch, PITCH_LIMIT);
        let d = cam.distance;
        cam.zoom(1.0);
        assert!(cam.distance < d);
        let v = cam.view(&style());
        assert!(v.right.is_finite() && v.up.is_finite());
        assert!((length(v.forward) - 1.0).abs() < 1e-5);
    }
}
