//! The fluid viewer: what a frame shows ([`Look`]: slice, volume or smoke, the quantity, the
//! slice, the colour range, the transfer function), its camera, the scene's smoke sources in
//! lattice units ([`smoke_setup`]), and what the host adds to a frame the backend drew (the
//! colour bar with its range and labels, `crate::raster::bar`; the nearest-pixel upscale of a
//! downsampled frame).
//! Frames are drawn by the backend that holds the lattice (`FluidBackend::render_into`: the
//! `fluid_*` kernels or their CPU twin, `crate::raster::fluid`); the window (`window.rs`) and
//! the headless frames (`headless.rs`) show them.

pub mod cli;
pub mod headless;
pub mod panel;
pub mod window;

pub use crate::raster::bar::{colour_bar, text};

use crate::backend::BackendChoice;
use crate::fluid::scene::file::{SmokeSourceConfig, ViewConfig, FACE_KEYS};
use crate::fluid::scene::{FaceConfig, Scene};
use crate::fluid::{FluidBackend, FluidError, SmokeSetup};
use murmur_common::lbm::Lattice;
use murmur_common::render::fluid::{FluidFrame, Quantity, ViewKind, MAP_DIVERGING, MAP_SEQUENTIAL};
use murmur_common::render::smoke::{
    SmokeSource, MAX_SOURCES, SOURCE_DISC, SOURCE_INLET, SOURCE_POINT,
};
use murmur_common::render::{Camera, ColourMode, Style};
use murmur_common::Vec3;
use std::path::Path;

/// Vertical field of view of the fluid camera, degrees.
pub const FOV_DEG: f32 = 40.0;
/// Radius of a solid sample's disc, cells (samples sit about half a cell apart).
pub const SOLID_RADIUS: f32 = 0.6;

/// What a frame shows and how.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Look {
    pub kind: ViewKind,
    pub quantity: Quantity,
    /// Slice axis (0 x, 1 y, 2 z).
    pub axis: usize,
    /// Slice cell index along the axis (`None`: the middle).
    pub at: Option<u32>,
    /// Colour range (`None`: from the scene's velocity and length, [`Look::range_for`]).
    pub range: Option<(f32, f32)>,
    /// Ray-march step, cells.
    pub step: f32,
    /// Volume: opacity per cell at the top of the range.
    pub opacity: f32,
    /// Smoke: opacity per cell per unit density.
    pub sigma: f32,
    /// Smoke: light in full shadow.
    pub ambient: f32,
}

impl Default for Look {
    fn default() -> Look {
        Look {
            kind: ViewKind::Slice,
            quantity: Quantity::Speed,
            axis: 2,
            at: None,
            range: None,
            step: 1.0,
            opacity: 0.5,
            sigma: 0.3,
            ambient: 0.3,
        }
    }
}

/// `x`, `y`, `z` to 0, 1, 2.
pub fn parse_axis(c: char) -> Result<usize, String> {
    match c.to_ascii_lowercase() {
        'x' => Ok(0),
        'y' => Ok(1),
        'z' => Ok(2),
        _ => Err(format!("axis must be x, y or z, got `{c}`")),
    }
}

/// The lattice coordinate of a physical position along `axis` (the scene's convention: `phys /
/// dx + 0.5` on a non-periodic axis, `- 0.5` on a periodic one).
fn to_lattice(scene: &Scene, axis: usize, m: f64) -> f64 {
    let periodic = matches!(scene.file.faces.all()[2 * axis], FaceConfig::Periodic {});
    m / scene.units.dx + if periodic { -0.5 } else { 0.5 }
}

impl Look {
    /// The scene's `[view]` table over `self`; positions checked against the lattice.
    pub fn with_scene(mut self, scene: &Scene) -> Result<Look, FluidError> {
        let v: &ViewConfig = &scene.file.view;
        let bad = |m: String| FluidError::Invalid(format!("view.{m}"));
        if let Some(k) = v.view {
            self.kind = k;
        }
        if let Some(q) = v.quantity {
            self.quantity = q;
        }
        if let Some(c) = v.axis {
            self.axis = parse_axis(c).map_err(|e| bad(format!("axis: {e}")))?;
        }
        if let Some(m) = v.at {
            let c = to_lattice(scene, self.axis, m).round();
            let n = dims(scene.setup.lattice())[self.axis];
            if !(c >= 0.0 && c < n as f64) {
                return Err(bad(format!("at = {m} m is outside the domain")));
            }
            self.at = Some(c as u32);
        }
        if let Some([lo, hi]) = v.range {
            self.range =
                Some(check_range(lo as f32, hi as f32).map_err(|e| bad(format!("range: {e}")))?);
        }
        Ok(self)
    }

    /// The slice's cell index on `l`.
    pub fn slice_index(&self, l: Lattice) -> u32 {
        let n = dims(l)[self.axis];
        self.at.unwrap_or(n / 2).min(n - 1)
    }

    /// The camera that frames `l` for this look at `width x height`: head-on for a slice (along
    /// its axis: +z, +x or from above), from above a corner for the volumes.
    pub fn camera(&self, l: Lattice, width: u32, height: u32) -> Camera {
        let d = dims(l).map(|n| n as f32);
        let target = Vec3::new((d[0] - 1.0) / 2.0, (d[1] - 1.0) / 2.0, (d[2] - 1.0) / 2.0);
        let fov_y = FOV_DEG.to_radians();
        let tan = (0.5 * fov_y).tan();
        let aspect = width as f32 / height as f32;
        let (yaw, pitch, across, up, depth) = match (self.kind, self.axis) {
            (ViewKind::Slice, 0) => (std::f32::consts::FRAC_PI_2, 0.0, d[2], d[1], d[0]),
            (ViewKind::Slice, 1) => (0.0, 1.5, d[0], d[2], d[1]),
            (ViewKind::Slice, _) => (0.0, 0.0, d[0], d[1], d[2]),
            _ => {
                let r = 0.5 * (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                let fit = (r / tan).max(r / (tan * aspect));
                return Camera {
                    yaw: 0.55,
                    pitch: 0.35,
                    distance: 0.8 * fit,
                    target,
                    fov_y,
                    width,
                    height,
                };
            }
        };
        let fit = (0.5 * up / tan).max(0.5 * across / (tan * aspect));
        Camera {
            yaw,
            pitch,
            distance: 1.06 * fit + 0.5 * depth,
            target,
            fov_y,
            width,
            height,
        }
    }

    /// The colour range: the look's own, or a default from the scene's lattice velocity `U`
    /// and the cells across its length `L`: speed `0..1.6 U`, components `+-1.6 U`, pressure
    /// `+-U^2`, vorticity `0..2 U / L`, Q `+-(U / L)^2` (the volume shows `Q > 0`: `0..(U /
    /// L)^2`), smoke `0..1`.
    pub fn range_for(&self, scene: &Scene) -> (f32, f32) {
        if let Some(r) = self.range {
            return r;
        }
        let u = scene.file.lattice.velocity as f32;
        let rate = u / scene.file.lattice.resolution.max(1) as f32;
        match self.quantity {
            Quantity::Speed => (0.0, 1.6 * u),
            Quantity::Ux | Quantity::Uy | Quantity::Uz => (-1.6 * u, 1.6 * u),
            Quantity::Pressure => (-u * u, u * u),
            Quantity::Vorticity => (0.0, 2.0 * rate),
            Quantity::Q if self.kind == ViewKind::Volume => (0.0, rate * rate),
            Quantity::Q => (-rate * rate, rate * rate),
            Quantity::Smoke => (0.0, 1.0),
        }
    }

    /// The colour map of the quantity.
    pub fn map(&self) -> u32 {
        if self.quantity.signed() && !(self.kind == ViewKind::Volume) {
            MAP_DIVERGING
        } else {
            MAP_SEQUENTIAL
        }
    }

    /// The frame for `camera` over `l`, colours over `range`.
    pub fn frame(
        &self,
        camera: &Camera,
        l: Lattice,
        range: (f32, f32),
        background: u32,
    ) -> FluidFrame {
        let d = dims(l).map(|n| n as f32);
        let half = 0.5 * (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let style = Style {
            boid_radius: SOLID_RADIUS,
            colour: ColourMode::Speed,
            max_speed: 1.0,
            scale: half,
        };
        FluidFrame {
            view: camera.view(&style),
            lattice: l,
            kind: self.kind as u32,
            quantity: self.quantity as u32,
            axis: self.axis as u32,
            slice_at: self.slice_index(l),
            lo: range.0,
            hi: range.1,
            map: self.map(),
            step: self.step,
            opacity: self.opacity,
            sigma: self.sigma,
            ambient: self.ambient,
            background,
        }
    }

    /// A short description: `slice z = 64: speed`, `volume: vorticity`, `smoke`.
    pub fn describe(&self, l: Lattice) -> String {
        match self.kind {
            ViewKind::Slice => format!(
                "slice {} = {}: {}",
                ["x", "y", "z"][self.axis],
                self.slice_index(l),
                self.quantity.name()
            ),
            ViewKind::Volume => format!("volume: {}", self.quantity.name()),
            ViewKind::Smoke => "smoke".into(),
        }
    }
}

fn dims(l: Lattice) -> [u32; 3] {
    [l.nx, l.ny, l.nz]
}

/// A colour range: finite, `lo < hi`.
pub fn check_range(lo: f32, hi: f32) -> Result<(f32, f32), String> {
    if lo.is_finite() && hi.is_finite() && lo < hi {
        Ok((lo, hi))
    } else {
        Err(format!("expected LO,HI with LO < HI, got {lo},{hi}"))
    }
}

/// The scene's `[smoke]` in lattice units (sources, steps per advection, fading).
pub fn smoke_setup(scene: &Scene) -> Result<SmokeSetup, FluidError> {
    let c = &scene.file.smoke;
    let bad = |m: String| FluidError::Invalid(format!("smoke.{m}"));
    if c.every == 0 {
        return Err(bad("every must be at least 1".into()));
    }
    if c.sources.len() > MAX_SOURCES {
        return Err(bad(format!(
            "sources: at most {MAX_SOURCES}, got {}",
            c.sources.len()
        )));
    }
    if !(c.half_life.is_finite() && c.half_life >= 0.0) {
        return Err(bad(format!(
            "half_life must be >= 0 s, got {}",
            c.half_life
        )));
    }
    let units = &scene.units;
    let l = scene.setup.lattice();
    let faces = scene.file.faces.all();
    let mut periodic = 0;
    for a in 0..3 {
        if matches!(faces[2 * a], FaceConfig::Periodic {}) {
            periodic |= 1 << a;
        }
    }
    let cells = |m: f64| (m / units.dx) as f32;
    let position = |p: [f64; 3]| [0, 1, 2].map(|a| to_lattice(scene, a, p[a]) as f32);
    let mut sources = Vec::new();
    for (i, s) in c.sources.iter().enumerate() {
        let at = |m: String| bad(format!("sources[{i}]: {m}"));
        let positive = |name: &str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(at(format!("{name} must be a finite number >= 0, got {v}")))
            }
        };
        let src = match s {
            SmokeSourceConfig::Point {
                position: p,
                radius,
                amount,
            } => {
                positive("radius", *radius)?;
                SmokeSource {
                    kind: SOURCE_POINT,
                    centre: position(*p),
                    radius: cells(*radius).max(0.5),
                    amount: *amount as f32,
                    ..SmokeSource::default()
                }
            }
            SmokeSourceConfig::Disc {
                position: p,
                normal,
                radius,
                amount,
            } => {
                positive("radius", *radius)?;
                let len = normal.iter().map(|v| v * v).sum::<f64>().sqrt();
                if !(len.is_finite() && len > 0.0) {
                    return Err(at(format!(
                        "normal must be a non-zero vector, got {normal:?}"
                    )));
                }
                SmokeSource {
                    kind: SOURCE_DISC,
                    centre: position(*p),
                    normal: normal.map(|v| (v / len) as f32),
                    radius: cells(*radius).max(0.5),
                    amount: *amount as f32,
                    ..SmokeSource::default()
                }
            }
            SmokeSourceConfig::Inlet {
                face,
                spacing,
                radius,
                amount,
            } => {
                positive("spacing", *spacing)?;
                positive("radius", *radius)?;
                let index = match face {
                    Some(name) => FACE_KEYS.iter().position(|k| k == name).ok_or_else(|| {
                        at(format!(
                            "face `{name}` is not one of {}",
                            FACE_KEYS.join(", ")
                        ))
                    })?,
                    None => faces
                        .iter()
                        .position(|f| matches!(f, FaceConfig::Inlet { .. }))
                        .ok_or_else(|| at("the scene has no inlet".into()))?,
                };
                if !matches!(faces[index], FaceConfig::Inlet { .. }) {
                    return Err(at(format!("faces.{} is not an inlet", FACE_KEYS[index])));
                }
                let axis = index / 2;
                let n = dims(l)[axis];
                // The first fluid layer: cell 1 behind a low face, n - 2 before a high one.
                let layer = if index % 2 == 0 {
                    1
                } else {
                    n.saturating_sub(2)
                };
                let mut centre = [0, 1, 2].map(|a| (dims(l)[a] as f32 - 1.0) / 2.0);
                centre[axis] = layer as f32;
                SmokeSource {
                    kind: SOURCE_INLET,
                    axis: axis as u32,
                    centre,
                    radius: cells(*radius).max(0.5),
                    spacing: cells(*spacing),
                    amount: *amount as f32,
                    ..SmokeSource::default()
                }
            }
        };
        if !(src.amount.is_finite() && src.amount >= 0.0) {
            return Err(at(format!("amount must be >= 0, got {}", src.amount)));
        }
        sources.push(src);
    }
    let keep = if c.half_life > 0.0 {
        let per = units.time_to_steps(c.half_life) / c.every as f64;
        0.5f64.powf(1.0 / per.max(1e-9)) as f32
    } else {
        1.0
    };
    Ok(SmokeSetup {
        sources,
        every: c.every,
        keep,
        periodic,
    })
}

/// Nearest-pixel upscale of a `sw x sh` frame by `k` into `dst` (`w x h`, at most `k sw x k sh`).
pub fn upscale(src: &[u8], sw: u32, k: u32, dst: &mut [u8], w: u32, h: u32) {
    for y in 0..h {
        let sy = y / k;
        for x in 0..w {
            let sx = x / k;
            let (i, j) = (((y * w + x) * 4) as usize, ((sy * sw + sx) * 4) as usize);
            dst[i..i + 4].copy_from_slice(&src[j..j + 4]);
        }
    }
}

/// The CPU backend's downsampling of large lattices: the smallest factor (1, 2, 3, 4...) at which
/// `pixels / k^2` rays across the lattice's longest side stay within a budget of about 2e8
/// samples per frame (a few frames per second on a few cores).
pub fn cpu_downsample(l: Lattice, width: u32, height: u32) -> u32 {
    let side = l.nx.max(l.ny).max(l.nz) as f64;
    let work = |k: u32| (width as f64 / k as f64) * (height as f64 / k as f64) * side;
    (1..=8).find(|&k| work(k) <= 2e8).unwrap_or(8)
}

/// Everything the viewer's figures need from a frame: the downsampled size.
pub fn scaled(width: u32, height: u32, k: u32) -> (u32, u32) {
    (width.div_ceil(k).max(1), height.div_ceil(k).max(1))
}

/// Opens a backend on `scene` (from the file `path`) as `choice` says (auto falls back to the
/// CPU with a note), with the knobs `fluid run` takes: the tuning cache's, else the device
/// defaults. Returns the tuning line too.
pub fn open(
    choice: BackendChoice,
    scene: &mut Scene,
    path: &Path,
) -> Result<(Box<dyn FluidBackend>, String), FluidError> {
    let (b, note, line) = crate::fluid::run::open::open_picked(choice, scene, path)?;
    if let Some(note) = note {
        eprintln!("murmur: {note}");
    }
    Ok((b, line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upscale_repeats_pixels() {
        let src = [1u8, 2, 3, 4, 5, 6, 7, 8];
        let mut dst = vec![0u8; 3 * 2 * 4];
        upscale(&src, 2, 2, &mut dst, 3, 2);
        assert_eq!(&dst[..12], &[1, 2, 3, 4, 1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&dst[12..], &dst[..12]);
    }

    #[test]
    fn downsampling_follows_the_work() {
        assert_eq!(cpu_downsample(Lattice::new(32, 32, 32), 1280, 720), 1);
        assert!(cpu_downsample(Lattice::new(256, 128, 128), 1280, 720) >= 2);
    }
}
