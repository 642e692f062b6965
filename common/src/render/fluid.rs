//! Fluid rasterisation, written once for the CPU twin (`host/src/raster/fluid.rs`) and the
//! `fluid_*` kernels: per pixel, a ray from the orbit camera's eye through the lattice's box,
//! which either meets a slice plane (coloured by a field through a colour map) or marches
//! through a volume (vorticity magnitude or Q-criterion through a transfer function, or the
//! smoke lit from a per-frame light-transmittance volume), composited over the immersed
//! solids' samples (splatted first as depth+colour keys, `fluid_splat`, exactly like boids) or
//! the background.
//!
//! Coordinates are lattice coordinates: cell centres at integers, the box `[-0.5, n - 0.5]` per
//! axis. Fields are sampled trilinearly between cell centres (clamped to the outer centres).
//! Every operation is a plain `f32` add, multiply, divide or the correctly rounded square root
//! of `math::sqrt`, never fused and never reordered, and no pixel depends on another's order:
//! the CPU and the GPU give the same bytes. Opacity uses `k / (1 + k)` (`1 - exp(-k)` to first
//! order) so no `exp` is needed.

// Index loops over the three axes read like the formulas.
#![allow(clippy::needless_range_loop)]

use super::occupancy::Bricks;
use super::{clamp01, ordered_bits, rgba, unit_to_u8, View, EMPTY_KEY};
use crate::kernel::DevSlice;
use crate::lbm::Lattice;
use crate::math::{floor_i32, sqrt, Vec3};

/// What a frame shows.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ViewKind {
    /// A plane across the box, coloured by a quantity.
    Slice = 0,
    /// Ray-marched vorticity magnitude or Q-criterion through a transfer function.
    Volume = 1,
    /// The passive scalar (smoke), ray-marched and lit.
    Smoke = 2,
}

/// The field a slice or a volume shows.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Quantity {
    /// `|u|`, lattice units.
    Speed = 0,
    Ux = 1,
    Uy = 2,
    Uz = 3,
    /// `|curl u|`, 1/step.
    Vorticity = 4,
    /// Q-criterion, 1/step^2.
    #[cfg_attr(feature = "clap", value(name = "q"))]
    #[cfg_attr(feature = "serde", serde(rename = "q"))]
    Q = 5,
    /// `p - p0 = (rho - 1) / 3`, lattice units.
    Pressure = 6,
    /// The smoke's density.
    Smoke = 7,
}

impl Quantity {
    pub const ALL: [Quantity; 8] = [
        Quantity::Speed,
        Quantity::Ux,
        Quantity::Uy,
        Quantity::Uz,
        Quantity::Vorticity,
        Quantity::Q,
        Quantity::Pressure,
        Quantity::Smoke,
    ];

    /// Whether it needs the derived arrays (vorticity and Q).
    pub const fn derived(self) -> bool {
        matches!(self, Quantity::Vorticity | Quantity::Q)
    }

    /// Whether its values take both signs (a diverging colour map, centred on zero).
    pub const fn signed(self) -> bool {
        matches!(
            self,
            Quantity::Ux | Quantity::Uy | Quantity::Uz | Quantity::Q | Quantity::Pressure
        )
    }

    pub const fn name(self) -> &'static str {
        match self {
            Quantity::Speed => "speed",
            Quantity::Ux => "ux",
            Quantity::Uy => "uy",
            Quantity::Uz => "uz",
            Quantity::Vorticity => "vorticity",
            Quantity::Q => "q",
            Quantity::Pressure => "pressure",
            Quantity::Smoke => "smoke",
        }
    }

    pub fn from_u32(v: u32) -> Quantity {
        Quantity::ALL[if (v as usize) < 8 { v as usize } else { 0 }]
    }
}

/// Colour maps: [`MAP_SEQUENTIAL`] (dark violet, blue, teal, green, yellow) for magnitudes,
/// [`MAP_DIVERGING`] (blue, grey, red) for signed quantities centred on zero.
pub const MAP_SEQUENTIAL: u32 = 0;
pub const MAP_DIVERGING: u32 = 1;

const SEQUENTIAL: [[f32; 3]; 5] = [
    [0.267, 0.005, 0.329],
    [0.229, 0.322, 0.546],
    [0.128, 0.567, 0.551],
    [0.369, 0.789, 0.383],
    [0.993, 0.906, 0.144],
];
const DIVERGING: [[f32; 3]; 5] = [
    [0.230, 0.299, 0.754],
    [0.552, 0.690, 0.996],
    [0.866, 0.866, 0.866],
    [0.958, 0.604, 0.483],
    [0.706, 0.016, 0.150],
];

/// Colour of `t` in `[0, 1]` (clamped) on map `map`, piecewise linear between five stops.
#[inline(always)]
pub fn colour_map(map: u32, t: f32) -> [f32; 3] {
    let stops = if map == MAP_DIVERGING {
        &DIVERGING
    } else {
        &SEQUENTIAL
    };
    let t = clamp01(t) * 4.0;
    let i = if t >= 4.0 { 3 } else { t as usize };
    let f = t - i as f32;
    let (a, b) = (stops[i], stops[i + 1]);
    [
        a[0] + (b[0] - a[0]) * f,
        a[1] + (b[1] - a[1]) * f,
        a[2] + (b[2] - a[2]) * f,
    ]
}

/// `RGBA8` of `t` on `map`, opaque.
#[inline(always)]
pub fn colour_map_rgba(map: u32, t: f32) -> u32 {
    let c = colour_map(map, t);
    rgba(unit_to_u8(c[0]), unit_to_u8(c[1]), unit_to_u8(c[2]), 255)
}

/// Colour of cells that are not fluid (walls, inlets, outlets) in a slice.
pub const WALL: [f32; 3] = [0.42, 0.42, 0.42];
/// Colour of the immersed solids' samples (dimmed with depth).
pub const SOLID: [f32; 3] = [0.86, 0.84, 0.80];
/// Colour of lit smoke.
pub const SMOKE: [f32; 3] = [0.95, 0.95, 0.97];

/// Everything one frame needs besides its buffers, by value into `fluid_shade`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FluidFrame {
    /// The camera (eye, basis, focal length, frame size; `fade_*` dims the solids with depth).
    pub view: View,
    pub lattice: Lattice,
    /// A [`ViewKind`].
    pub kind: u32,
    /// A [`Quantity`] (slice and volume).
    pub quantity: u32,
    /// Slice: the axis across which the plane lies (0 x, 1 y, 2 z) and its cell index.
    pub axis: u32,
    pub slice_at: u32,
    /// Colour range: `lo` maps to the map's start, `hi` to its end.
    pub lo: f32,
    pub hi: f32,
    /// [`MAP_SEQUENTIAL`] or [`MAP_DIVERGING`].
    pub map: u32,
    /// Ray-march step, cells.
    pub step: f32,
    /// Volume: opacity per cell of a sample at the top of the range.
    pub opacity: f32,
    /// Smoke: opacity per cell per unit density (the extinction `sigma`).
    pub sigma: f32,
    /// Smoke: light that reaches shadowed smoke (0..1).
    pub ambient: f32,
    /// `RGBA8` where nothing is hit.
    pub background: u32,
}

impl FluidFrame {
    /// The planes whose fields (`rho, u`) the frame reads: none for the smoke (view or
    /// quantity), a slice's plane (and [`GRADIENT_REACH`] planes on each side when it shows
    /// vorticity or Q, whose gradients reach that far), every cell for a volume.
    pub fn field_planes(&self) -> Option<Planes> {
        let q = Quantity::from_u32(self.quantity);
        if self.kind == ViewKind::Smoke as u32 || q == Quantity::Smoke {
            return None;
        }
        let l = &self.lattice;
        Some(if self.kind == ViewKind::Slice as u32 {
            let reach = if q.derived() { GRADIENT_REACH } else { 0 };
            Planes::around(l, self.axis, self.slice_at, reach)
        } else {
            Planes::all(l)
        })
    }

    /// The planes whose derived values (vorticity magnitude, Q) the frame reads: a slice's
    /// plane or every cell, when it shows one of them.
    pub fn derived_planes(&self) -> Option<Planes> {
        let q = Quantity::from_u32(self.quantity);
        if self.kind == ViewKind::Smoke as u32 || !q.derived() {
            return None;
        }
        let l = &self.lattice;
        Some(if self.kind == ViewKind::Slice as u32 {
            Planes::around(l, self.axis, self.slice_at, 0)
        } else {
            Planes::all(l)
        })
    }
}

/// How far a velocity gradient reaches along an axis (`common::lbm::derived`: central
/// differences one cell, one-sided second-order ones two).
pub const GRADIENT_REACH: u32 = 2;

/// The planes `first, first + 1, .., first + count - 1` across `axis` (0 x, 1 y, 2 z), wrapped
/// around the lattice: the cells a slice frame computes. Its cells are numbered plane by
/// plane, x fastest where x lies in the plane (consecutive threads, consecutive cells);
/// [`Planes::all`] numbers every cell as the lattice does.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Planes {
    pub axis: u32,
    pub first: u32,
    pub count: u32,
}

impl Planes {
    /// Every cell: the planes across z from 0.
    #[inline(always)]
    pub const fn all(l: &Lattice) -> Planes {
        Planes {
            axis: 2,
            first: 0,
            count: l.nz,
        }
    }

    /// Plane `at` across `axis` and `reach` planes on each side, wrapped (every plane once
    /// when the lattice is thinner than that); `at` past the last plane is the last, as
    /// [`shade`] clamps it.
    #[inline(always)]
    pub fn around(l: &Lattice, axis: u32, at: u32, reach: u32) -> Planes {
        let n = Self::size(l, axis);
        let at = if at < n { at } else { n - 1 };
        let count = 2 * reach + 1;
        if count >= n {
            return Planes {
                axis,
                first: 0,
                count: n,
            };
        }
        // reach < n / 2 here, so `at + n - reach` neither wraps below zero nor past 2 n.
        let first = (at + n - reach) % n;
        Planes { axis, first, count }
    }

    /// Cells along `axis`.
    #[inline(always)]
    fn size(l: &Lattice, axis: u32) -> u32 {
        match axis {
            0 => l.nx,
            1 => l.ny,
            _ => l.nz,
        }
    }

    /// Whether they are every plane of the axis (every cell).
    #[inline(always)]
    pub fn is_all(&self, l: &Lattice) -> bool {
        self.count >= Self::size(l, self.axis)
    }

    /// Cells of one plane.
    #[inline(always)]
    fn plane_cells(&self, l: &Lattice) -> usize {
        l.cells() / Self::size(l, self.axis) as usize
    }

    /// Cells in all of them.
    #[inline(always)]
    pub fn cells(&self, l: &Lattice) -> usize {
        self.count as usize * self.plane_cells(l)
    }

    /// Cell number of their `i`-th cell (`i < cells`). 32-bit arithmetic, like
    /// `Lattice::coords`.
    #[inline(always)]
    pub fn cell(&self, l: &Lattice, i: usize) -> usize {
        let per = self.plane_cells(l) as u32;
        let (j, r) = (i as u32 / per, i as u32 % per);
        let n = Self::size(l, self.axis);
        // first < n and j < count <= n: one subtraction wraps.
        let k = self.first + j;
        let k = if k >= n { k - n } else { k };
        match self.axis {
            0 => l.index(k, r % l.ny, r / l.ny),
            1 => l.index(r % l.nx, k, r / l.nx),
            _ => l.index(r % l.nx, r / l.nx, k),
        }
    }

    /// Whether cell `(x, y, z)` lies in one of them.
    pub fn contains(&self, l: &Lattice, x: u32, y: u32, z: u32) -> bool {
        let k = [x, y, z][self.axis as usize];
        let n = Self::size(l, self.axis);
        (k + n - self.first) % n < self.count
    }
}

/// The lattice-sized buffers a frame reads (empty views for what its kind does not need).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Volumes {
    /// `rho, ux, uy, uz` as `[rho; n] ++ [ux; n] ++ [uy; n] ++ [uz; n]` (`FluidBackend::fields`).
    pub fields: DevSlice<f32>,
    /// `[|curl u|; n] ++ [Q; n]` (`fluid_derived`).
    pub derived: DevSlice<f32>,
    /// Smoke density per cell.
    pub smoke: DevSlice<f32>,
    /// Light transmittance per cell (`smoke_light`).
    pub light: DevSlice<f32>,
    /// Cell bytes.
    pub flags: DevSlice<u8>,
    /// The volume marches' occupancy: one byte per brick, non-zero where the brick holds
    /// something drawn (`occupancy::brick_occupied`); empty: no skipping.
    pub occupancy: DevSlice<u8>,
}

impl Volumes {
    /// The value of `q` at `cell`.
    ///
    /// # Safety
    /// `cell < n` and the views `q` needs hold the lattice (fields `4 n`, derived `2 n`, smoke
    /// `n`).
    #[inline(always)]
    pub unsafe fn value(&self, q: Quantity, n: usize, cell: usize) -> f32 {
        match q {
            Quantity::Speed => {
                let (x, y, z) = (
                    self.fields.read(n + cell),
                    self.fields.read(2 * n + cell),
                    self.fields.read(3 * n + cell),
                );
                sqrt(x * x + y * y + z * z)
            }
            Quantity::Ux => self.fields.read(n + cell),
            Quantity::Uy => self.fields.read(2 * n + cell),
            Quantity::Uz => self.fields.read(3 * n + cell),
            Quantity::Vorticity => self.derived.read(cell),
            Quantity::Q => self.derived.read(n + cell),
            Quantity::Pressure => (self.fields.read(cell) - 1.0) * (1.0 / 3.0),
            Quantity::Smoke => self.smoke.read(cell),
        }
    }
}

/// The eight cells around a point and their trilinear weights' fractions: `x0, x1` per axis
/// (cell coordinates) and the fraction toward `x1`. Outside the outer centres the point is
/// clamped; `periodic` bit `a` wraps axis `a` instead.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Corners {
    pub lo: [u32; 3],
    pub hi: [u32; 3],
    pub frac: [f32; 3],
}

impl Corners {
    #[inline(always)]
    pub fn new(l: &Lattice, p: [f32; 3], periodic: u32) -> Corners {
        let dims = [l.nx, l.ny, l.nz];
        let mut c = Corners {
            lo: [0; 3],
            hi: [0; 3],
            frac: [0.0; 3],
        };
        for a in 0..3 {
            let n = dims[a];
            let x = p[a];
            if periodic & (1 << a) != 0 {
                let i = floor_i32(x);
                let f = x - i as f32;
                let i = i.rem_euclid(n as i32) as u32;
                c.lo[a] = i;
                c.hi[a] = if i + 1 == n { 0 } else { i + 1 };
                c.frac[a] = clamp01(f);
            } else {
                let top = (n - 1) as f32;
                let x = if x > top {
                    top
                } else if x > 0.0 {
                    x
                } else {
                    0.0
                };
                let i = x as u32; // x >= 0: truncation is floor
                c.lo[a] = i;
                c.hi[a] = if i + 1 < n { i + 1 } else { i };
                c.frac[a] = x - i as f32;
            }
        }
        c
    }

    /// Cell number of corner `k` (bit 0: x high, bit 1: y high, bit 2: z high).
    #[inline(always)]
    pub fn cell(&self, l: &Lattice, k: u32) -> usize {
        let pick = |a: usize| {
            if k & (1 << a) != 0 {
                self.hi[a]
            } else {
                self.lo[a]
            }
        };
        l.index(pick(0), pick(1), pick(2))
    }

    /// `sum w_k v(corner k)`, interpolated along x, then y, then z (a fixed order).
    #[inline(always)]
    pub fn interpolate(&self, l: &Lattice, v: impl Fn(usize) -> f32) -> f32 {
        let lerp = |a: f32, b: f32, t: f32| a + (b - a) * t;
        let [fx, fy, fz] = self.frac;
        let c = |k: u32| v(self.cell(l, k));
        let x00 = lerp(c(0), c(1), fx);
        let x10 = lerp(c(2), c(3), fx);
        let x01 = lerp(c(4), c(5), fx);
        let x11 = lerp(c(6), c(7), fx);
        lerp(lerp(x00, x10, fy), lerp(x01, x11, fy), fz)
    }
}

/// The ray of pixel `(px, py)` (through its centre): origin and a direction whose component
/// along the view is 1, so the ray parameter is the depth of the boids' keys.
#[inline(always)]
pub fn pixel_ray(v: &View, px: u32, py: u32) -> (Vec3, Vec3) {
    let sx = (px as f32 + 0.5 - v.centre_x) / v.focal_px;
    let sy = (py as f32 + 0.5 - v.centre_y) / v.focal_px;
    (v.eye, v.forward + v.right * sx - v.up * sy)
}

/// Depth range `(t0, t1)` of the ray inside the box `[-0.5, n - 0.5]^3` (`t0 < t1`), if any.
#[inline(always)]
pub fn box_span(l: &Lattice, o: Vec3, d: Vec3) -> Option<(f32, f32)> {
    let (mut t0, mut t1) = (0.0f32, f32::MAX);
    // The slab of one axis (called per axis: no arrays indexed by a loop's axis, which the
    // kernels would keep in local memory); false when the ray misses it.
    let mut slab = |n: u32, o: f32, d: f32| -> bool {
        let (lo, hi) = (-0.5f32, n as f32 - 0.5);
        if d == 0.0 {
            return !(o < lo || o > hi);
        }
        let inv = 1.0 / d;
        let (mut ta, mut tb) = ((lo - o) * inv, (hi - o) * inv);
        if ta > tb {
            core::mem::swap(&mut ta, &mut tb);
        }
        if ta > t0 {
            t0 = ta;
        }
        if tb < t1 {
            t1 = tb;
        }
        true
    };
    if !(slab(l.nx, o.x, d.x) && slab(l.ny, o.y, d.y) && slab(l.nz, o.z, d.z)) {
        return None;
    }
    if t0 < t1 {
        Some((t0, t1))
    } else {
        None
    }
}

/// The depth of a solid key (inverse of [`ordered_bits`] on its high word).
#[inline(always)]
pub fn key_depth(key: u64) -> f32 {
    let b = (key >> 32) as u32;
    f32::from_bits(if b & 0x8000_0000 != 0 {
        b & 0x7fff_ffff
    } else {
        !b
    })
}

/// The key of a solid sample at `p` (or `None` when it is behind the eye) and its disc radius
/// in pixels: `radius` cells seen through the lens, capped like a boid's.
#[inline(always)]
pub fn solid_key(v: &View, p: Vec3, radius: f32) -> Option<(super::Projected, f32, u64)> {
    point_key(v, p, radius, SOLID)
}

/// The key of a point of colour `base` at `p` drawn over the fluid (a solid's sample, a
/// coupled flock's boid): as [`solid_key`], the colour dimmed with depth alike.
#[inline(always)]
pub fn point_key(
    v: &View,
    p: Vec3,
    radius: f32,
    base: [f32; 3],
) -> Option<(super::Projected, f32, u64)> {
    let pr = v.project(p)?;
    let r = radius * v.focal_px / pr.depth;
    let r = if r > super::MAX_RADIUS_PX {
        super::MAX_RADIUS_PX
    } else {
        r
    };
    let f = 1.0 - 0.55 * clamp01((pr.depth - v.fade_start) * v.inv_fade_len);
    let colour = rgba(
        unit_to_u8(base[0] * f),
        unit_to_u8(base[1] * f),
        unit_to_u8(base[2] * f),
        255,
    );
    Some((
        pr,
        r,
        ((ordered_bits(pr.depth) as u64) << 32) | colour as u64,
    ))
}

/// Splats one solid sample at `p` (`radius` in cells): `write(pixel, key)` over its disc; the
/// caller keeps the minimum per pixel.
#[inline(always)]
pub fn splat_solid(v: &View, p: Vec3, radius: f32, write: impl FnMut(u32, u64)) {
    if let Some((pr, r, key)) = solid_key(v, p, radius) {
        v.disc(&pr, r, key, write);
    }
}

/// Splats one point of packed colour `colour` (`0xAABBGGRR`, as [`colour_map_rgba`]) at `p`:
/// as [`splat_solid`].
#[inline(always)]
pub fn splat_point(v: &View, p: Vec3, radius: f32, colour: u32, write: impl FnMut(u32, u64)) {
    if let Some((pr, r, key)) = point_key(v, p, radius, unpack(colour)) {
        v.disc(&pr, r, key, write);
    }
}

/// `t` of `v` in the frame's range (0 at `lo`, 1 at `hi`; any `hi == lo` gives 0).
#[inline(always)]
pub fn normalise(f: &FluidFrame, v: f32) -> f32 {
    let span = f.hi - f.lo;
    if span == 0.0 || span.is_nan() {
        return 0.0;
    }
    clamp01((v - f.lo) / span)
}

#[inline(always)]
fn unpack(c: u32) -> [f32; 3] {
    let k = 1.0 / 255.0;
    [
        (c & 0xff) as f32 * k,
        ((c >> 8) & 0xff) as f32 * k,
        ((c >> 16) & 0xff) as f32 * k,
    ]
}

/// Most samples one ray takes (a 2048^3 box's diagonal at step 1 is 3548).
pub const MAX_SAMPLES: u32 = 4096;

/// The colour of pixel `(px, py)`: `key` is the nearest solid sample's key there ([`EMPTY_KEY`]
/// for none).
///
/// # Safety
/// The views of `vol` that `f.kind` and `f.quantity` read hold the lattice (see [`Volumes`]).
#[inline(always)]
pub unsafe fn shade(f: &FluidFrame, vol: &Volumes, px: u32, py: u32, key: u64) -> u32 {
    let (behind, t_solid) = if key == EMPTY_KEY {
        (f.background, f32::MAX)
    } else {
        (key as u32, key_depth(key))
    };
    let (o, d) = pixel_ray(&f.view, px, py);
    let Some((t0, t1)) = box_span(&f.lattice, o, d) else {
        return behind;
    };
    let near = f.view.near;
    let t0 = if t0 > near { t0 } else { near };
    let t1 = if t1 < t_solid { t1 } else { t_solid };
    if t0 >= t1 {
        return behind;
    }
    let l = f.lattice;
    let n = l.cells();
    if f.kind == ViewKind::Slice as u32 {
        let axis = f.axis as usize;
        let (oa, da) = match axis {
            0 => (o.x, d.x),
            1 => (o.y, d.y),
            _ => (o.z, d.z),
        };
        if da == 0.0 {
            return behind;
        }
        let t = (f.slice_at as f32 - oa) / da;
        if !(t >= t0 && t < t1) {
            return behind;
        }
        let p = o + d * t;
        let at = f.slice_at as f32;
        // Constant indices throughout (the kernel keeps the corners in registers).
        let mut c = match axis {
            0 => Corners::new(&l, [at, p.y, p.z], 0),
            1 => Corners::new(&l, [p.x, at, p.z], 0),
            _ => Corners::new(&l, [p.x, p.y, at], 0),
        };
        // The plane's own cells only: across it the far corners weigh nothing, and their
        // fields need not be current (a slice frame computes its plane's alone).
        match axis {
            0 => c.hi[0] = c.lo[0],
            1 => c.hi[1] = c.lo[1],
            _ => c.hi[2] = c.lo[2],
        }
        // A wall's colour where the nearest cell is not fluid.
        let nearest = |a: usize| if c.frac[a] >= 0.5 { c.hi[a] } else { c.lo[a] };
        let cell = l.index(nearest(0), nearest(1), nearest(2));
        if vol.flags.read(cell) & crate::lbm::boundary::KIND_MASK != 0 {
            return rgba(
                unit_to_u8(WALL[0]),
                unit_to_u8(WALL[1]),
                unit_to_u8(WALL[2]),
                255,
            );
        }
        let q = Quantity::from_u32(f.quantity);
        let v = c.interpolate(&l, |cell| vol.value(q, n, cell));
        return colour_map_rgba(f.map, normalise(f, v));
    }
    // Volumes: march front to back from t0 to t1 in steps of `f.step` cells.
    let len = sqrt(d.x * d.x + d.y * d.y + d.z * d.z);
    let dt = f.step / len;
    let mut count = ((t1 - t0) / dt) as u32 + 1;
    if count > MAX_SAMPLES {
        count = MAX_SAMPLES;
    }
    let smoke = f.kind == ViewKind::Smoke as u32;
    let q = Quantity::from_u32(f.quantity);
    let bricks = Bricks::of(&l);
    let skipping = !vol.occupancy.is_empty();
    let (mut acc, mut trans) = ([0.0f32; 3], 1.0f32);
    let mut i = 0;
    while i < count {
        let t = t0 + (i as f32 + 0.5) * dt;
        if t >= t1 {
            break;
        }
        let p = o + d * t;
        let c = Corners::new(&l, [p.x, p.y, p.z], 0);
        if skipping {
            let b = Bricks::of_corner(c.lo);
            if vol.occupancy.read(bricks.index(b)) == 0 {
                // On to the last sample before the ray leaves the brick (whole samples at
                // least a step inside it are skipped: rounding cannot reach that far).
                let next = ((bricks.exit(b, o, d) - t0) / dt - 0.5) as u32;
                i = if next > i + 1 { next } else { i + 1 };
                continue;
            }
        }
        i += 1;
        let (k, colour) = if smoke {
            let density = c.interpolate(&l, |cell| vol.smoke.read(cell));
            if density <= 0.0 {
                continue;
            }
            let light = c.interpolate(&l, |cell| vol.light.read(cell));
            let lit = f.ambient + (1.0 - f.ambient) * light;
            (
                f.sigma * f.step * density,
                [SMOKE[0] * lit, SMOKE[1] * lit, SMOKE[2] * lit],
            )
        } else {
            let s = normalise(f, c.interpolate(&l, |cell| vol.value(q, n, cell)));
            if s <= 0.0 {
                continue;
            }
            (f.opacity * f.step * s * s, colour_map(f.map, s))
        };
        let a = k / (1.0 + k);
        let w = trans * a;
        acc[0] += w * colour[0];
        acc[1] += w * colour[1];
        acc[2] += w * colour[2];
        trans *= 1.0 - a;
        if trans < 0.004 {
            break;
        }
    }
    let b = unpack(behind);
    rgba(
        unit_to_u8(acc[0] + trans * b[0]),
        unit_to_u8(acc[1] + trans * b[1]),
        unit_to_u8(acc[2] + trans * b[2]),
        255,
    )
}

/// The light transmittance of one column `(x, z)` of the smoke, lit from `+y` (above): walking
/// down from the top cell, each cell gets the light that reaches it, and its own smoke lets
/// `1 / (1 + sigma s)` of it through to the cell below.
///
/// # Safety
/// `smoke` and `light` hold the lattice; no other thread writes this column.
#[inline(always)]
pub unsafe fn light_column(
    l: &Lattice,
    x: u32,
    z: u32,
    sigma: f32,
    smoke: &DevSlice<f32>,
    write: impl Fn(usize, f32),
) {
    let mut t = 1.0f32;
    let mut y = l.ny;
    while y > 0 {
        y -= 1;
        let c = l.index(x, y, z);
        write(c, t);
        t /= 1.0 + sigma * smoke.read(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::Camera;

    #[test]
    fn colour_maps_end_at_their_stops() {
        assert_eq!(colour_map(MAP_SEQUENTIAL, -1.0), SEQUENTIAL[0]);
        let top = colour_map(MAP_SEQUENTIAL, 2.0);
        assert!((0..3).all(|k| (top[k] - SEQUENTIAL[4][k]).abs() < 1e-6));
        assert_eq!(colour_map(MAP_DIVERGING, 0.5), DIVERGING[2]);
        let mid = colour_map(MAP_SEQUENTIAL, 0.125);
        for k in 0..3 {
            assert!((mid[k] - 0.5 * (SEQUENTIAL[0][k] + SEQUENTIAL[1][k])).abs() < 1e-6);
        }
    }

    #[test]
    fn corners_clamp_and_wrap() {
        let l = Lattice::new(4, 3, 2);
        let c = Corners::new(&l, [-3.0, 1.25, 9.0], 0);
        assert_eq!((c.lo, c.hi), ([0, 1, 1], [1, 2, 1]));
        assert_eq!(c.frac, [0.0, 0.25, 0.0]);
        let c = Corners::new(&l, [3.5, -0.5, 0.0], 0b011);
        assert_eq!((c.lo, c.hi), ([3, 2, 0], [0, 0, 1]));
        assert_eq!(c.frac, [0.5, 0.5, 0.0]);
        // A linear field is interpolated exactly.
        let v = |cell: usize| {
            let (x, y, z) = l.coords(cell);
            x as f32 + 10.0 * y as f32 + 100.0 * z as f32
        };
        let c = Corners::new(&l, [1.5, 0.25, 0.75], 0);
        assert!((c.interpolate(&l, v) - (1.5 + 2.5 + 75.0)).abs() < 1e-4);
    }

    #[test]
    fn rays_cross_the_box_and_keys_keep_their_depth() {
        let l = Lattice::new(8, 8, 8);
        let cam = Camera {
            yaw: 0.0,
            pitch: 0.0,
            distance: 20.0,
            target: Vec3::new(3.5, 3.5, 3.5),
            fov_y: 0.8,
            width: 32,
            height: 32,
        };
        let style = crate::render::Style {
            boid_radius: 0.5,
            colour: crate::render::ColourMode::Speed,
            max_speed: 1.0,
            scale: 4.0,
        };
        let v = cam.view(&style);
        let (o, d) = pixel_ray(&v, 16, 16);
        let (t0, t1) = box_span(&l, o, d).unwrap();
        // The eye is at z = 23.5; the box spans z = -0.5 .. 7.5.
        assert!(
            (t0 - 16.0).abs() < 1e-3 && (t1 - 24.0).abs() < 1e-3,
            "{t0} {t1}"
        );
        assert!(box_span(&l, o, Vec3::new(0.0, 1.0, 0.0)).is_none());
        let (_, _, key) = solid_key(&v, Vec3::new(3.5, 3.5, 3.5), 0.5).unwrap();
        assert!((key_depth(key) - 20.0).abs() < 1e-4);
    }
}
