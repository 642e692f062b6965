//! The fluid viewer's CPU twin: the stages of the `fluid_*` and `smoke_*` kernels over host
//! buffers (rayon), calling the same `murmur_common::render::{fluid, smoke}` and
//! `murmur_common::lbm::derived` functions, so that the CPU and the CUDA frames of the same
//! state are the same bytes. `CpuFluid` draws through it; the tests drive it on known fields.

use super::{check_frame, RasterError};
use murmur_common::lbm::derived::{curl, q_criterion, velocity_gradient, LATTICE_PERIODIC};
use murmur_common::lbm::Lattice;
use murmur_common::math::sqrt;
use murmur_common::render::fluid::{self, FluidFrame, Planes, Quantity, ViewKind, Volumes};
use murmur_common::render::occupancy::{self, Bricks};
use murmur_common::render::smoke::{self, SmokeParams, SmokeSource};
use murmur_common::render::EMPTY_KEY;
use murmur_common::{DevSlice, Vec3};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// Cells per rayon task.
const CHUNK: usize = 4096;

/// Views over host buffers that rayon tasks share: they only read them, and each task writes
/// its own elements of the output.
#[derive(Clone, Copy)]
struct Shared<A>(A);
// SAFETY: see above; the buffers outlive the parallel loop that uses the views.
unsafe impl<A> Send for Shared<A> {}
unsafe impl<A> Sync for Shared<A> {}

fn view<T>(v: &[T]) -> DevSlice<T> {
    // SAFETY: the slice's memory, for as long as the caller keeps it borrowed.
    unsafe { DevSlice::from_raw(v.as_ptr(), v.len() as u64) }
}

/// What a frame is drawn from: the state's fields and cell bytes, the smoke (if any) and the
/// solids' sample positions (lattice coordinates).
pub struct FrameInput<'a> {
    pub fields: &'a [f32],
    pub flags: &'a [u8],
    pub smoke: &'a [f32],
    pub solids: &'a [[f32; 3]],
    /// Radius of a solid sample's disc, cells.
    pub solid_radius: f32,
    /// Coloured points drawn over the fluid (a coupled flock's boids).
    pub points: crate::fluid::Points<'a>,
}

/// Stage `fluid_derived`: `[|curl u|; n] ++ [Q; n]` of `fields` (lattice units) at the cells
/// of `planes` (the others untouched).
pub fn derived(
    l: Lattice,
    periodic: [bool; 3],
    planes: Planes,
    fields: &[f32],
    flags: &[u8],
    out: &mut [f32],
) {
    let n = l.cells();
    assert!(fields.len() == 4 * n && flags.len() == n && out.len() == 2 * n);
    let out_ptr = Shared(out.as_mut_ptr());
    (0..planes.cells(&l))
        .into_par_iter()
        .with_min_len(CHUNK)
        .for_each(|i| {
            let out = &out_ptr;
            let cell = planes.cell(&l, i);
            let u = |c: usize| [fields[n + c], fields[2 * n + c], fields[3 * n + c]];
            let (w, q) = match velocity_gradient(&l, periodic, cell, |c| flags[c], u) {
                Some(g) => {
                    let v = curl(&g);
                    (
                        sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]),
                        q_criterion(&g),
                    )
                }
                None => (0.0, 0.0),
            };
            // SAFETY: `out` holds `2 n` values (checked above) and each cell of the planes is
            // one `i`'s alone.
            unsafe {
                *out.0.add(cell) = w;
                *out.0.add(n + cell) = q;
            }
        });
}

/// Stage `smoke_light`: the light transmittance of every cell, column by column.
pub fn light(l: Lattice, sigma: f32, smoke: &[f32], out: &mut [f32]) {
    let (nx, nz) = (l.nx as usize, l.nz as usize);
    let out_ptr = Shared(out.as_mut_ptr());
    let s = Shared(view(smoke));
    (0..nx * nz).into_par_iter().for_each(|i| {
        let (s, out) = (&s, &out_ptr);
        let (x, z) = ((i % nx) as u32, (i / nx) as u32);
        // SAFETY: `smoke` and `out` hold the lattice; each column writes only its own cells.
        unsafe { fluid::light_column(&l, x, z, sigma, &s.0, |c, t| *out.0.add(c) = t) };
    });
}

/// The smoke on the host: the density, BFECC's forward step (then the next density) and its
/// compensated field, and the sources.
#[derive(Clone, Debug, Default)]
pub struct CpuSmoke {
    pub s: Vec<f32>,
    hat: Vec<f32>,
    e: Vec<f32>,
    pub sources: Vec<SmokeSource>,
}

impl CpuSmoke {
    /// No smoke yet in a lattice of `cells` cells.
    pub fn new(cells: usize, sources: Vec<SmokeSource>) -> CpuSmoke {
        CpuSmoke {
            s: vec![0.0; cells],
            hat: vec![0.0; cells],
            e: vec![0.0; cells],
            sources,
        }
    }

    /// One advection (`smoke_forward`, `smoke_backward`, `smoke_correct`) by the velocity of
    /// `fields`.
    pub fn advect(&mut self, p: &SmokeParams, fields: &[f32], flags: &[u8]) {
        let n = p.lattice.cells();
        assert!(fields.len() == 4 * n && flags.len() == n && self.s.len() == n);
        let p = SmokeParams {
            sources: self.sources.len() as u32,
            ..*p
        };
        let a = Shared((view(fields), view(flags), view(&self.s)));
        self.hat
            .par_iter_mut()
            .enumerate()
            .with_min_len(CHUNK)
            .for_each(|(cell, out)| {
                let a = &a;
                let (fields, flags, s) = &a.0;
                // SAFETY: the buffers hold the lattice (checked above).
                *out = unsafe { smoke::forward(&p, fields, flags, s, cell) };
            });
        let b = Shared((view(fields), view(flags), view(&self.s), view(&self.hat)));
        self.e
            .par_iter_mut()
            .enumerate()
            .with_min_len(CHUNK)
            .for_each(|(cell, out)| {
                let b = &b;
                let (fields, flags, s, hat) = &b.0;
                // SAFETY: as above.
                *out = unsafe { smoke::backward(&p, fields, flags, s, hat, cell) };
            });
        let c = Shared((
            view(fields),
            view(flags),
            view(&self.sources),
            view(&self.s),
            view(&self.e),
        ));
        self.hat
            .par_iter_mut()
            .enumerate()
            .with_min_len(CHUNK)
            .for_each(|(cell, out)| {
                let c = &c;
                let (fields, flags, sources, s, e) = &c.0;
                // SAFETY: as above; `sources` holds `p.sources` entries.
                *out = unsafe { smoke::correct(&p, fields, flags, sources, s, e, cell) };
            });
        std::mem::swap(&mut self.s, &mut self.hat);
    }
}

/// Stage `fluid_occupancy`: one byte per brick of the frame's lattice, 1 where the brick holds
/// a cell the march of `frame` draws (`occupancy::brick_occupied`).
///
/// # Safety
/// The views of `vol` that the frame's kind and quantity read hold the lattice.
pub unsafe fn occupancy(frame: &FluidFrame, vol: &Volumes, out: &mut [u8]) {
    let bricks = Bricks::of(&frame.lattice);
    assert_eq!(out.len(), bricks.count());
    let vol = Shared(*vol);
    out.par_iter_mut().enumerate().for_each(|(i, o)| {
        let vol = &vol;
        // SAFETY: as the caller promises.
        *o = unsafe { occupancy::brick_occupied(frame, &vol.0, bricks.coords(i)) } as u8;
    });
}

/// The per-pixel keys and the lattice-sized scratch of the CPU frames, kept between frames.
#[derive(Default)]
pub struct CpuFluidRaster {
    keys: Vec<AtomicU64>,
    derived: Vec<f32>,
    light: Vec<f32>,
    occupancy: Vec<u8>,
    /// Marches every sample, without the empty-space skipping (the tests' reference: the
    /// frames must be the same bytes either way).
    pub no_skipping: bool,
}

impl CpuFluidRaster {
    /// Draws `frame` of `input` into `rgba` (`width * height * 4` bytes).
    pub fn draw(
        &mut self,
        frame: &FluidFrame,
        input: &FrameInput<'_>,
        rgba: &mut [u8],
    ) -> Result<(), RasterError> {
        let v = &frame.view;
        check_frame(v, rgba)?;
        let l = frame.lattice;
        let n = l.cells();
        if input.fields.len() != 4 * n || input.flags.len() != n {
            return Err(RasterError::Lengths {
                pos: input.fields.len() / 4,
                vel: input.flags.len(),
            });
        }
        let kind = frame.kind;
        let q = Quantity::from_u32(frame.quantity);
        let smoke_view = kind == ViewKind::Smoke as u32 || q == Quantity::Smoke;
        let zeros;
        let smoke = if input.smoke.len() == n {
            input.smoke
        } else {
            zeros = vec![0.0f32; if smoke_view { n } else { 0 }];
            &zeros[..]
        };
        // Stage `fluid_derived`, when the frame shows vorticity or Q: a slice's plane or
        // every cell.
        if let Some(planes) = frame.derived_planes() {
            self.derived.resize(2 * n, 0.0);
            derived(
                l,
                LATTICE_PERIODIC,
                planes,
                input.fields,
                input.flags,
                &mut self.derived,
            );
        }
        // Stage `smoke_light`.
        if kind == ViewKind::Smoke as u32 {
            self.light.resize(n, 0.0);
            light(l, frame.sigma, smoke, &mut self.light);
        }
        let pixels = v.width as usize * v.height as usize;
        if self.keys.len() != pixels {
            self.keys = (0..pixels).map(|_| AtomicU64::new(EMPTY_KEY)).collect();
        }
        let keys = &self.keys;
        // Stages `render_clear` and `fluid_splat` (order-independent minimum).
        keys.par_iter()
            .for_each(|k| k.store(EMPTY_KEY, Ordering::Relaxed));
        input.solids.par_iter().for_each(|p| {
            fluid::splat_solid(v, Vec3::from_array(*p), input.solid_radius, |pixel, key| {
                keys[pixel as usize].fetch_min(key, Ordering::Relaxed);
            })
        });
        let pts = &input.points;
        (pts.pos, pts.colour).into_par_iter().for_each(|(p, &c)| {
            let p = Vec3::from_array(*p);
            fluid::splat_point(v, p, pts.radius, c, |pixel, key| {
                keys[pixel as usize].fetch_min(key, Ordering::Relaxed);
            })
        });
        let mut volumes = Volumes {
            fields: view(input.fields),
            derived: view(&self.derived),
            smoke: view(smoke),
            light: view(&self.light),
            flags: view(input.flags),
            occupancy: DevSlice::empty(),
        };
        // Stage `fluid_occupancy` (the marches: volume and smoke).
        if kind != ViewKind::Slice as u32 && !self.no_skipping {
            self.occupancy.resize(Bricks::of(&l).count(), 0);
            // SAFETY: every view the frame reads holds the lattice (checked and sized above).
            unsafe { occupancy(frame, &volumes, &mut self.occupancy) };
            volumes.occupancy = view(&self.occupancy);
        }
        // Stage `fluid_shade`.
        let vol = Shared(volumes);
        let w = v.width as usize;
        rgba.par_chunks_exact_mut(4)
            .zip(keys.par_iter())
            .enumerate()
            .for_each(|(i, (px, k))| {
                let vol = &vol;
                let (x, y) = ((i % w) as u32, (i / w) as u32);
                // SAFETY: every view the frame reads holds the lattice (checked and sized above).
                let c = unsafe { fluid::shade(frame, &vol.0, x, y, k.load(Ordering::Relaxed)) };
                px.copy_from_slice(&c.to_le_bytes());
            });
        Ok(())
    }
}
