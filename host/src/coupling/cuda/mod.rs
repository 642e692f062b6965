//! The coupled flock on the GPU: [`CudaBoids`], the CPU reference's substep ([`CpuBoids`]) as
//! the kernels of `kernels-gpu/src/coupling.rs`, which call the same `common` functions in the
//! same order, so both backends keep the boids in the same order and differ only where the two
//! machines round differently.
//!
//! A substep is a flat list of stages: `coupling_keys` (each boid's cell key), the device radix
//! sort of (key, index) pairs (stable, as the CPU's counting sort), `coupling_starts` (the
//! cells' first entries), `coupling_gather` (the boids into cell order), `coupling_rules` (the
//! new relative velocities, every boid reading the old ones), `coupling_move` (the air, the
//! box, the projection out of the obstacles). The air comes as [`AirFields`]: the fluid's
//! fields before and after its step on the device, interpolated in time as `Riding` does.

mod air;

pub use air::{AirFields, Level};

use super::{checked_avoidance, state_si, BoidsError, CpuBoids};
use crate::flock::snapshot::SnapshotError;
use crate::flock::FlockState;
use crate::gpu::sort::{RadixSort, MAX_SORT_PAIRS};
use crate::gpu::{DriverContext, Gpu, GpuError, Shape};
use cudarc::driver::CudaSlice;
use murmur_common::coupling::abi::{
    CouplingGather, CouplingKeys, CouplingMove, CouplingRules, CouplingStarts, DeviceAir,
};
use murmur_common::coupling::grid::BoxGrid;
use murmur_common::coupling::sdf::{Avoidance, Obstacle};
use murmur_common::coupling::substep::SubstepTime;
use murmur_common::coupling::{BoidBox, Motion, Rates};
use murmur_common::flock::params::FlockParams;
use murmur_common::kernel::DevSlice;
use murmur_common::lbm::ib::stencil::Domain;
use murmur_common::lbm::Units;
use murmur_common::Vec3;

/// Threads per block of every coupling kernel (one thread per boid).
pub const BLOCK: u32 = 256;

/// Device bytes per boid besides the sort's: position, ground and relative velocity (12 B
/// each) and id (4 B), twice; a cell key and a sorted index (4 B each). A two-way flock adds
/// [`PUSH_BYTES_PER_BOID`].
pub const BYTES_PER_BOID: u64 = 2 * (3 * 12 + 4) + 2 * 4;

/// Device bytes per boid of a two-way flock's impulse sums (three `u64`, twice).
pub const PUSH_BYTES_PER_BOID: u64 = 2 * 24;

/// Why a CUDA flock cannot be set up or step, one line each.
#[derive(Debug, thiserror::Error)]
pub enum CudaBoidsError {
    /// What the CPU flock refuses too.
    #[error(transparent)]
    Boids(#[from] BoidsError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error("a flock of {0} boids: the GPU flock takes at most {MAX_SORT_PAIRS}")]
    TooMany(usize),
    #[error("the flock's grid has {0} cells: the GPU flock takes fewer than 2^32")]
    TooManyCells(u64),
    #[error("substep {k} of {n}: a fluid step takes at least one substep, numbered from 0")]
    Time { k: u32, n: u32 },
    #[error("the air's fields hold {got} bytes, {want} for a lattice of {cells} cells")]
    FieldsSize {
        got: usize,
        want: usize,
        cells: usize,
    },
    #[error("the air's fluid mask has {got} cells, the lattice {cells}")]
    MaskSize { got: usize, cells: usize },
    #[error("the air's fields are on GPU {fields}, the flock on GPU {boids}")]
    Device { fields: usize, boids: usize },
    #[error("the air has no fields before or after the fluid step yet")]
    NoFields,
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
}

/// The air of one substep: the fields of the fluid step and the substep's place in it.
#[derive(Clone, Copy)]
pub struct Air<'a> {
    pub fields: &'a AirFields,
    pub time: SubstepTime,
}

/// The boids copied back, in the order the flock keeps them (the cell order of the last
/// substep's sort, as [`CpuBoids`] keeps them; ids in order before the first substep).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BoidArrays {
    pub pos: Vec<Vec3>,
    pub vel: Vec<Vec3>,
    pub rel: Vec<Vec3>,
    pub id: Vec<u32>,
    /// Two-way: the pending impulse sums, three per boid (empty one-way).
    pub push: Vec<u64>,
}

/// One copy of the boids' arrays on the device (vectors as `[f32; 3]`: glam's `Vec3` cannot
/// carry cudarc's traits; kernels see them as `Vec3` through `read_cast` / `write_cast`).
struct Arrays {
    pos: CudaSlice<[f32; 3]>,
    vel: CudaSlice<[f32; 3]>,
    rel: CudaSlice<[f32; 3]>,
    id: CudaSlice<u32>,
    /// Two-way: three impulse sums per boid (one word when one-way: never read).
    push: CudaSlice<u64>,
}

impl Arrays {
    fn zeros(gpu: &Gpu, n: usize, two_way: bool) -> Result<Arrays, GpuError> {
        Ok(Arrays {
            pos: gpu.zeros(n)?,
            vel: gpu.zeros(n)?,
            rel: gpu.zeros(n)?,
            id: gpu.zeros(n)?,
            push: gpu.zeros(if two_way { 3 * n } else { 1 })?,
        })
    }
}

/// A coupled flock on the GPU (module docs): the same inputs, checks and substep as
/// [`CpuBoids`].
pub struct CudaBoids {
    gpu: Gpu,
    n: u32,
    params: FlockParams,
    motion: Motion,
    bounds: BoidBox,
    grid: BoxGrid,
    avoidance: Avoidance,
    /// Mass of a boid (lattice units; 0: one-way).
    mass: f32,
    /// The boids (after a substep: in the cell order of its sort).
    state: Arrays,
    /// What the gather permutes into and the rules write the new relative velocities to.
    spare: Arrays,
    /// Each boid's cell key and, after the sort, the sorted keys and the boids' old indices.
    keys: CudaSlice<u32>,
    values: CudaSlice<u32>,
    sort: RadixSort,
    /// Per cell plus one: the first sorted entry of each cell, then `n`.
    starts: CudaSlice<u32>,
    /// The obstacles of the current substep (grown as needed).
    obstacles: CudaSlice<Obstacle>,
    /// The samples of their sampled distances ([`CpuBoids::seeing`]; one unused value when
    /// there are none).
    samples: CudaSlice<f32>,
}

/// Bits of the largest key of a grid of `cells` cells (at least 1): the sort's width.
pub fn key_bits(cells: u32) -> u32 {
    (32 - cells.saturating_sub(1).leading_zeros()).max(1)
}

/// Device bytes of a flock of `n` boids over a grid of `cells` cells (the air not counted:
/// [`AirFields::bytes`]).
pub fn device_bytes(n: u32, cells: u32) -> u64 {
    n as u64 * BYTES_PER_BOID + RadixSort::bytes_needed(n) + (cells as u64 + 1) * 4
}

/// The CPU flock of these inputs, with every refusal of [`CpuBoids::new`] and the GPU's own
/// (a grid of `2^32` cells or more, more boids than the device sort takes).
fn checked_cpu(
    pos: Vec<Vec3>,
    rel: Vec<Vec3>,
    rates: Rates,
    dt: f64,
    tau_p: f64,
    bounds: BoidBox,
) -> Result<CpuBoids, CudaBoidsError> {
    if pos.len() > MAX_SORT_PAIRS as usize {
        return Err(CudaBoidsError::TooMany(pos.len()));
    }
    if dt > 0.0 {
        // The grid CpuBoids would allocate, refused before it does.
        let grid = BoxGrid::new(&bounds, rates.scales(dt as f32).max_distance());
        let cells = grid
            .dims
            .iter()
            .fold(1u64, |c, &d| c.saturating_mul(d as u64));
        if cells >= u32::MAX as u64 {
            return Err(CudaBoidsError::TooManyCells(cells));
        }
    }
    Ok(CpuBoids::new(pos, rel, rates, dt, tau_p, bounds)?)
}

impl CudaBoids {
    /// A flock on `gpu` from the same inputs as [`CpuBoids::new`] (and the same refusals).
    pub fn new(
        gpu: Gpu,
        pos: Vec<Vec3>,
        rel: Vec<Vec3>,
        rates: Rates,
        dt: f64,
        tau_p: f64,
        bounds: BoidBox,
    ) -> Result<CudaBoids, CudaBoidsError> {
        let cpu = checked_cpu(pos, rel, rates, dt, tau_p, bounds)?;
        CudaBoids::from_cpu(gpu, &cpu)
    }

    /// The CPU flock `cpu` (its boids in its order, its settings and avoidance) on `gpu`.
    pub fn from_cpu(gpu: Gpu, cpu: &CpuBoids) -> Result<CudaBoids, CudaBoidsError> {
        let len = cpu.pos.len();
        if len > MAX_SORT_PAIRS as usize {
            return Err(CudaBoidsError::TooMany(len));
        }
        let n = len as u32;
        let cells = cpu.grid.cell_count();
        gpu.check_fits(
            &format!("a coupled flock of {n} boids over {cells} grid cells"),
            device_bytes(n, cells)
                + if cpu.mass > 0.0 {
                    n as u64 * PUSH_BYTES_PER_BOID
                } else {
                    0
                },
        )?;
        let z = n as usize;
        let vecs = |v: &[Vec3]| v.iter().map(|p| p.to_array()).collect::<Vec<_>>();
        let two_way = cpu.mass > 0.0;
        let mut state = Arrays::zeros(&gpu, z, two_way)?;
        let s = &gpu.stream;
        if z > 0 {
            s.memcpy_htod(&vecs(&cpu.pos), &mut state.pos)
                .ctx("uploading positions")?;
            s.memcpy_htod(&vecs(&cpu.vel), &mut state.vel)
                .ctx("uploading velocities")?;
            s.memcpy_htod(&vecs(&cpu.rel), &mut state.rel)
                .ctx("uploading relative velocities")?;
            s.memcpy_htod(&cpu.id, &mut state.id).ctx("uploading ids")?;
            if two_way {
                let push: Vec<u64> = cpu.push.iter().flatten().copied().collect();
                s.memcpy_htod(&push, &mut state.push)
                    .ctx("uploading the pending impulses")?;
            }
        }
        Ok(CudaBoids {
            n,
            params: cpu.params,
            motion: cpu.motion,
            bounds: cpu.bounds,
            grid: cpu.grid,
            avoidance: cpu.avoidance,
            mass: cpu.mass,
            state,
            spare: Arrays::zeros(&gpu, z, two_way)?,
            keys: gpu.zeros(z)?,
            values: gpu.zeros(z)?,
            sort: RadixSort::new(&gpu, n)?,
            starts: gpu.zeros(cells as usize + 1)?,
            obstacles: gpu.zeros(1)?,
            samples: match cpu.samples() {
                [] => gpu.zeros(1)?,
                samples => gpu.upload(samples)?,
            },
            gpu,
        })
    }

    /// The flock with avoidance `a` ([`CpuBoids::avoiding`], the same refusals).
    pub fn avoiding(mut self, a: Avoidance) -> Result<CudaBoids, CudaBoidsError> {
        self.avoidance = checked_avoidance(&self.bounds, a)?;
        Ok(self)
    }

    /// The GPU the flock lives on (its air is allocated there: [`AirFields::new`]).
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Boids in the flock.
    pub fn len(&self) -> usize {
        self.n as usize
    }

    /// Whether the flock has no boids.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// One substep among no obstacles ([`CudaBoids::substep_among`]).
    pub fn substep(&mut self, air: Option<Air<'_>>) -> Result<(), CudaBoidsError> {
        self.substep_among(air, &[])
    }

    /// One substep, as [`CpuBoids::substep_among`]: the boids sorted by cell, the rules (all
    /// read before any is written) with the avoidance of `obstacles` (their states at the end
    /// of the substep), the motion in `air` (`None`: no air, the boids move with their relative
    /// velocities), the box and the projection out of the obstacles.
    pub fn substep_among(
        &mut self,
        air: Option<Air<'_>>,
        obstacles: &[Obstacle],
    ) -> Result<(), CudaBoidsError> {
        let air = self.checked_air(air)?;
        if self.n == 0 {
            return Ok(());
        }
        self.set_obstacles(obstacles)?;
        self.keys()?;
        self.sort.sort(
            &self.gpu,
            self.n,
            key_bits(self.grid.cell_count()),
            &mut self.keys,
            &mut self.values,
        )?;
        self.starts()?;
        self.gather()?;
        self.rules(obstacles.len())?;
        self.advance(air, obstacles.len())?;
        Ok(())
    }

    /// The boids copied back, in the flock's order ([`BoidArrays`]).
    pub fn download(&self) -> Result<BoidArrays, CudaBoidsError> {
        let vecs = |b: &CudaSlice<[f32; 3]>| -> Result<Vec<Vec3>, GpuError> {
            let v = self.gpu.download(b)?;
            Ok(v[..self.len()]
                .iter()
                .map(|&p| Vec3::from_array(p))
                .collect())
        };
        let id = self.gpu.download(&self.state.id)?;
        let push = if self.mass > 0.0 {
            self.gpu.download(&self.state.push)?[..3 * self.len()].to_vec()
        } else {
            Vec::new()
        };
        Ok(BoidArrays {
            pos: vecs(&self.state.pos)?,
            vel: vecs(&self.state.vel)?,
            rel: vecs(&self.state.rel)?,
            id: id[..self.len()].to_vec(),
            push,
        })
    }

    /// Mass of a boid (0: one-way).
    pub fn mass(&self) -> f32 {
        self.mass
    }

    /// The pending impulses applied (the fluid took its step): the sums start from zero.
    pub fn clear_pushes(&mut self) -> Result<(), CudaBoidsError> {
        if self.mass > 0.0 {
            self.gpu
                .stream
                .memset_zeros(&mut self.state.push)
                .ctx("clearing the impulses")?;
        }
        Ok(())
    }

    /// The device views of the boids' positions and pending impulse sums, for the fluid's
    /// pushes (two-way flocks only).
    pub fn push_buffers(
        &self,
    ) -> Option<(
        crate::gpu::exposed::RawBuffer,
        crate::gpu::exposed::RawBuffer,
    )> {
        if self.mass <= 0.0 || self.n == 0 {
            return None;
        }
        let s = &self.gpu.stream;
        Some((
            crate::gpu::exposed::RawBuffer::of(&self.state.pos, s),
            crate::gpu::exposed::RawBuffer::of(&self.state.push, s),
        ))
    }

    /// The boids in SI units ([`CpuBoids::state_si`]), copied back.
    pub fn state_si(&self, units: &Units) -> Result<FlockState, CudaBoidsError> {
        let b = self.download()?;
        Ok(state_si(&b.pos, &b.vel, &b.id, units))
    }

    /// Writes the boids to `path` as a flock snapshot ([`CpuBoids::save`]). Atomic.
    pub fn save(&self, path: &std::path::Path, units: &Units) -> Result<(), CudaBoidsError> {
        crate::flock::snapshot::save(path, &self.state_si(units)?)?;
        Ok(())
    }

    /// The air's arguments-to-be, checked: its substep in range, both levels filled, on this
    /// GPU.
    fn checked_air<'a>(&self, air: Option<Air<'a>>) -> Result<Option<Air<'a>>, CudaBoidsError> {
        if let Some(a) = air {
            let SubstepTime { k, n } = a.time;
            if n == 0 || k >= n {
                return Err(CudaBoidsError::Time { k, n });
            }
            if !a.fields.is_ready() {
                return Err(CudaBoidsError::NoFields);
            }
            let ours = self.gpu.ctx.ordinal();
            if a.fields.ordinal() != ours {
                return Err(CudaBoidsError::Device {
                    fields: a.fields.ordinal(),
                    boids: ours,
                });
            }
        }
        Ok(air)
    }

    /// The obstacles onto the device (the buffer grown when they do not fit).
    fn set_obstacles(&mut self, obstacles: &[Obstacle]) -> Result<(), GpuError> {
        if obstacles.is_empty() {
            return Ok(());
        }
        if obstacles.len() > self.obstacles.len() {
            self.obstacles = self.gpu.zeros(obstacles.len())?;
        }
        self.gpu
            .stream
            .memcpy_htod(obstacles, &mut self.obstacles)
            .ctx("uploading the obstacles")
    }

    /// One thread per boid.
    fn per_boid(&self) -> Result<Shape, GpuError> {
        Shape::try_per_item(self.n as u64, BLOCK)
    }

    /// Stage `coupling_keys`.
    fn keys(&mut self) -> Result<(), GpuError> {
        let shape = self.per_boid()?;
        let (n, grid, pos) = (self.n, self.grid, &self.state.pos);
        let buffers = (&mut self.keys, &mut self.values);
        // SAFETY: pos, keys and values hold n entries; one thread per boid.
        unsafe {
            self.gpu
                .launch()
                .run(shape, buffers, |l, (keys, values)| CouplingKeys {
                    n,
                    grid,
                    pos: l.read_cast(pos),
                    keys: l.write(keys),
                    values: l.write(values),
                })
        }
    }

    /// Stage `coupling_starts` (after the sort: `keys` ascending).
    fn starts(&mut self) -> Result<(), GpuError> {
        let shape = self.per_boid()?;
        let (n, cell_count, keys) = (self.n, self.grid.cell_count(), &self.keys);
        // SAFETY: keys holds n sorted keys below cell_count, starts cell_count + 1 entries;
        // one thread per sorted entry, n >= 1.
        unsafe {
            self.gpu
                .launch()
                .run(shape, &mut self.starts, |l, starts| CouplingStarts {
                    n,
                    cell_count,
                    keys: l.read(keys),
                    starts: l.write(starts),
                })
        }
    }

    /// Stage `coupling_gather`: the boids into cell order, into the spare arrays, which then
    /// become the state.
    fn gather(&mut self) -> Result<(), GpuError> {
        let shape = self.per_boid()?;
        let (n, values, from) = (self.n, &self.values, &self.state);
        let two_way = self.mass > 0.0;
        let to = &mut self.spare;
        let buffers = (
            &mut to.pos,
            &mut to.vel,
            &mut to.rel,
            &mut to.id,
            &mut to.push,
        );
        // SAFETY: values holds a permutation of 0..n; every array n entries; one thread per
        // boid.
        unsafe {
            self.gpu
                .launch()
                .run(shape, buffers, |l, (pos, vel, rel, id, push)| {
                    CouplingGather {
                        n,
                        values: l.read(values),
                        pos_in: l.read_cast(&from.pos),
                        vel_in: l.read_cast(&from.vel),
                        rel_in: l.read_cast(&from.rel),
                        id_in: l.read(&from.id),
                        pos_out: l.write_cast(pos),
                        vel_out: l.write_cast(vel),
                        rel_out: l.write_cast(rel),
                        id_out: l.write(id),
                        push_in: if two_way {
                            l.read(&from.push)
                        } else {
                            DevSlice::empty()
                        },
                        push_out: if two_way {
                            l.write(push)
                        } else {
                            murmur_common::DevSliceMut::empty()
                        },
                    }
                })
        }?;
        std::mem::swap(&mut self.state, &mut self.spare);
        Ok(())
    }

    /// Stage `coupling_rules`: the new relative velocities into the spare, which then becomes
    /// the state's.
    fn rules(&mut self, obstacles: usize) -> Result<(), GpuError> {
        let shape = self.per_boid()?;
        let (n, grid, params, avoidance) = (self.n, self.grid, self.params, self.avoidance);
        let (starts, state, list) = (&self.starts, &self.state, &self.obstacles);
        let samples = &self.samples;
        // SAFETY: the state holds n boids in cell order, starts its cells' entries, the list
        // `obstacles` obstacles; rel_out n entries; one thread per boid.
        unsafe {
            self.gpu
                .launch()
                .run(shape, &mut self.spare.rel, |l, rel_out| CouplingRules {
                    n,
                    grid,
                    params,
                    avoidance,
                    starts: l.read(starts),
                    pos: l.read_cast(&state.pos),
                    rel: l.read_cast(&state.rel),
                    obstacles: l.read(list).prefix(obstacles as u64),
                    samples: l.read(samples),
                    rel_out: l.write_cast(rel_out),
                })
        }?;
        std::mem::swap(&mut self.state.rel, &mut self.spare.rel);
        Ok(())
    }

    /// Stage `coupling_move`, in place.
    fn advance(&mut self, air: Option<Air<'_>>, obstacles: usize) -> Result<(), GpuError> {
        let shape = self.per_boid()?;
        let (n, motion, bounds, avoidance) = (self.n, self.motion, self.bounds, self.avoidance);
        let mass = self.mass;
        let (list, samples) = (&self.obstacles, &self.samples);
        let s = &mut self.state;
        let buffers = (&mut s.pos, &mut s.vel, &mut s.rel, &mut s.push);
        // SAFETY: every array holds n boids, each thread reads and writes its own entry only;
        // the air's fields hold 4 values per cell of its domain and its mask a byte per cell
        // (checked when they were filled), or are empty; one thread per boid.
        unsafe {
            self.gpu
                .launch()
                .run(shape, buffers, |l, (pos, vel, rel, push)| {
                    let air = match air {
                        Some(a) => DeviceAir {
                            domain: a.fields.domain,
                            time: a.time,
                            fluid: l.read(&a.fields.fluid),
                            before: l.read(&a.fields.fields[0]),
                            after: l.read(&a.fields.fields[1]),
                        },
                        None => DeviceAir {
                            domain: Domain::default(),
                            time: SubstepTime { k: 0, n: 1 },
                            fluid: DevSlice::empty(),
                            before: DevSlice::empty(),
                            after: DevSlice::empty(),
                        },
                    };
                    CouplingMove {
                        n,
                        mass,
                        motion,
                        bounds,
                        avoidance,
                        air,
                        obstacles: l.read(list).prefix(obstacles as u64),
                        samples: l.read(samples),
                        pos: l.write_cast(pos),
                        vel: l.write_cast(vel),
                        rel: l.write_cast(rel),
                        push: l.write(push),
                    }
                })
        }
    }
}

#[cfg(test)]
mod tests;
