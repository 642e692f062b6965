//! The CUDA backend's lattice: its device buffers and the lattice stages, one method per
//! [`FluidStage`](crate::fluid::plan::FluidStage) (the outlet layer's kernel, the interior
//! kernel over a layer range, the boundary kernel over the listed cells) and the kernels that
//! read the populations for the host (fields, plane fields, health).

use super::ib::CudaIb;
use super::{CudaFluid, BLOCK_SIZE};
use crate::fluid::plan::Layers;
use crate::fluid::{Block, FluidError, Setup};
use crate::gpu::{Gpu, Shape, Views};
use cudarc::driver::CudaSlice;
use murmur_common::lbm::abi::{
    Boundary, CellLaunch, FieldsArgs, Health, StreamCollide, StreamCollideBand, StreamCollideLayer,
    StreamCollideSponge,
};
use murmur_common::lbm::boundary::{KIND_MASK, OUTLET};
use murmur_common::lbm::health::{self, word, Report};
use murmur_common::lbm::ib::band::BandRef;
use murmur_common::lbm::{Lattice, LbmParams, Model, Populations, Storage};
use murmur_common::render::abi::PlaneFields;
use murmur_common::{DevSlice, DevSliceMut};

/// A lattice's device buffers.
pub(super) struct LatticeBuffers<S: Storage> {
    pub(super) flags: CudaSlice<u8>,
    /// Fluid cells next to non-fluid ones, handled by the boundary kernel (a one-element dummy
    /// when there are none).
    pub(super) boundary_cells: CudaSlice<u32>,
    pub(super) boundary_count: u32,
    /// The last collision velocity of each listed cell next to an outlet (three floats per
    /// list entry; one dummy value without outlets).
    pub(super) outlet_u: CudaSlice<f32>,
    pub(super) f: CudaSlice<S::Elem>,
    /// The second copy the pull scheme writes (`None` in place).
    pub(super) f_next: Option<CudaSlice<S::Elem>>,
    /// `rho, u` of every cell, allocated by the first fields call.
    pub(super) fields: Option<CudaSlice<f32>>,
    /// The step whose fields the buffer holds (the viewer asks for them more than once a step).
    pub(super) fields_step: Option<u64>,
    /// The health reduction's words.
    health: CudaSlice<u32>,
    /// WALE's velocity fields ([`murmur_common::lbm::wale`]): `velocity[steps done % 2]` holds
    /// the last step's collision velocities, the step writes the other (`None` without WALE).
    pub(super) velocity: Option<[CudaSlice<f32>; 2]>,
}

impl<S: Storage> LatticeBuffers<S>
where
    S::Elem: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits,
{
    /// The buffers of `setup`'s lattice (`prepared` its cell bytes, `list` its boundary list);
    /// the populations zero.
    pub(super) fn new(
        gpu: &Gpu,
        setup: &Setup,
        prepared: &[u8],
        list: &[u32],
        pops: &Populations<S>,
    ) -> Result<LatticeBuffers<S>, FluidError> {
        let l = setup.lattice();
        let has_outlet = prepared.iter().any(|&b| b & KIND_MASK == OUTLET);
        let outlet_u = if has_outlet && !list.is_empty() {
            let u: Vec<f32> = list
                .iter()
                .flat_map(|&c| {
                    let (x, y, z) = l.coords(c as usize);
                    setup.initial.at([x, y, z], true).1
                })
                .collect();
            gpu.upload(&u)?
        } else {
            gpu.zeros(1)?
        };
        Ok(LatticeBuffers {
            flags: gpu.upload(prepared)?,
            boundary_cells: gpu.upload(if list.is_empty() { &[0u32][..] } else { list })?,
            boundary_count: list.len() as u32,
            outlet_u,
            f: gpu.zeros::<S::Elem>(pops.len())?,
            f_next: if S::IN_PLACE {
                None
            } else {
                Some(gpu.zeros::<S::Elem>(pops.len())?)
            },
            fields: None,
            fields_step: None,
            health: gpu.zeros(word::WORDS)?,
            velocity: match setup.initial_velocity() {
                u if u.is_empty() => None,
                u => Some([gpu.upload(&u)?, gpu.upload(&u)?]),
            },
        })
    }

    /// Bytes held on the device.
    pub(super) fn bytes(&self) -> u64 {
        ((self.f.len() + self.f_next.as_ref().map_or(0, |f| f.len()))
            * std::mem::size_of::<S::Elem>()
            + self.flags.len()
            + 4 * self.boundary_cells.len()
            + 4 * self.outlet_u.len()
            + self.fields.as_ref().map_or(0, |f| 4 * f.len())
            + self.velocity.as_ref().map_or(0, |v| 8 * v[0].len())) as u64
    }
}

/// The buffers a stream-collide launch writes: the populations (both copies when pulling), the
/// outlet velocities and WALE's velocity field of this step.
pub(super) struct StepWrites<'b, S: Storage> {
    f: &'b mut CudaSlice<S::Elem>,
    f_next: Option<&'b mut CudaSlice<S::Elem>>,
    outlet_u: &'b mut CudaSlice<f32>,
    velocity_out: Option<&'b mut CudaSlice<f32>>,
}

impl<S: Storage> CudaFluid<S> {
    /// What a stream-collide launch of step `step` needs: the GPU and the side stream, what it
    /// reads, the boundary list, and the buffers it writes.
    #[allow(clippy::type_complexity)]
    fn step_parts(
        &mut self,
        step: u64,
    ) -> (
        &Gpu,
        Option<&crate::gpu::Side>,
        StepInputs<'_, S>,
        &CudaSlice<u32>,
        StepWrites<'_, S>,
    ) {
        let lat = &mut self.lat;
        // WALE reads the velocities of the step before and writes this step's into the other
        // copy (step 1-based: step 1 reads copy 0).
        let (velocity, velocity_out) = match lat.velocity.as_mut() {
            Some([v0, v1]) => {
                let (read, write) = if step & 1 == 1 { (v0, v1) } else { (v1, v0) };
                (Some(&*read), Some(write))
            }
            None => (None, None),
        };
        (
            &self.gpu,
            self.side.as_ref(),
            StepInputs {
                flags: &lat.flags,
                ib: self.ib.as_ref(),
                p: self.params,
                pops: self.pops.at_step(step),
                block: self.block,
                velocity,
            },
            &lat.boundary_cells,
            StepWrites {
                f: &mut lat.f,
                f_next: lat.f_next.as_mut(),
                outlet_u: &mut lat.outlet_u,
                velocity_out,
            },
        )
    }
}

/// What a stream-collide launch reads besides its buffers.
#[derive(Clone, Copy)]
struct StepInputs<'b, S: Storage> {
    flags: &'b CudaSlice<u8>,
    ib: Option<&'b CudaIb>,
    p: LbmParams,
    pops: Populations<S>,
    block: Block,
    /// WALE's velocity field of the step before.
    velocity: Option<&'b CudaSlice<f32>>,
}

impl<'b, S: Storage> StepInputs<'b, S> {
    /// The stream-collide arguments of model `M` in a launch: from `f` into the other copy
    /// (pull) or into `f` itself (in place), with the band's force and the outlet velocities.
    fn args<M: Model>(&self, l: &mut Views<'b>, w: StepWrites<'b, S>) -> StreamCollide<M, S> {
        let band = self.ib.map_or(BandRef::NONE, |ib| ib.band_ref(l));
        let (f, dst) = match w.f_next {
            Some(next) => (l.write(w.f), l.write(next)),
            None => {
                // SAFETY: in place, each cell reads the slots it alone writes this step
                // (esoteric pull), and no other thread reads or writes them.
                let (_, f) = unsafe { l.in_place(w.f) };
                (f, f)
            }
        };
        StreamCollide::<M, S>::new(self.p, self.pops, l.read(self.flags), f)
            .with_dst(dst)
            .with_band(band)
            .with_outlet_u(l.write(w.outlet_u))
            .with_velocity(
                self.velocity.map_or(DevSlice::empty(), |v| l.read(v)),
                w.velocity_out.map_or(DevSliceMut::empty(), |v| l.write(v)),
            )
            .with_launch(CellLaunch {
                three_d: matches!(self.block, Block::ThreeD(_)) as u32,
                ..CellLaunch::FLAT
            })
    }
}

impl<S: Storage> CudaFluid<S> {
    /// The launch shape of `layers` whole z layers of `lat` (flat, or the 3D blocks).
    fn layers_shape(&self, lat: &Lattice, layers: u32) -> Shape {
        match self.block {
            Block::Flat => {
                Shape::per_item(layers as u64 * lat.nx as u64 * lat.ny as u64, BLOCK_SIZE)
            }
            Block::ThreeD([bx, by, bz]) => Shape {
                grid: (
                    lat.nx.div_ceil(bx),
                    lat.ny.div_ceil(by),
                    layers.div_ceil(bz),
                ),
                block: (bx, by, bz),
                shared_bytes: 0,
                after_previous: false,
            },
        }
    }

    /// Stage `stream_collide_sponge`: the outlet layer's interior cells of its box in `layers`
    /// (a short launch before the interior kernel; none when the box misses the layers).
    pub(super) fn sponge<M: Model>(&mut self, layers: Layers, step: u64) -> Result<(), FluidError>
    where
        StreamCollideSponge<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    {
        let Some((lo, hi)) = self.sponge else {
            return Ok(());
        };
        let (z0, z1) = CellLaunch::FLAT
            .layers(layers.z0, layers.z1)
            .range(self.params.lattice.nz);
        let (s0, s1) = (lo[2].max(z0), hi[2].min(z1));
        if s1 <= s0 {
            return Ok(());
        }
        let dims = [hi[0] - lo[0], hi[1] - lo[1], s1 - s0];
        let shape = Shape::per_item(dims[0] as u64 * dims[1] as u64 * dims[2] as u64, BLOCK_SIZE);
        let (gpu, _, inputs, _, writes) = self.step_parts(step);
        // SAFETY: flags holds n bytes, f the populations, the band's table and pool their
        // plan's sizes; one thread per cell of the box, each touching only its own slots this
        // step (cells of other bytes return at once).
        unsafe {
            gpu.launch().run(shape, writes, |l, w| StreamCollideSponge {
                step: inputs.args::<M>(l, w),
                lo: [lo[0], lo[1], s0],
                dims,
            })
        }?;
        Ok(())
    }

    /// Stage `stream_collide`: the interior kernel (plain, or adding the band's force) over
    /// `layers` (clamped to the lattice; nothing when empty).
    pub(super) fn interior<M: Model>(&mut self, layers: Layers, step: u64) -> Result<(), FluidError>
    where
        StreamCollide<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        StreamCollideBand<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        StreamCollideLayer<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    {
        let lattice = self.params.lattice;
        let (z0, z1) = CellLaunch::FLAT
            .layers(layers.z0, layers.z1)
            .range(lattice.nz);
        if z1 == z0 {
            return Ok(());
        }
        let shape = self.layers_shape(&lattice, z1 - z0);
        let layer = self.layer;
        let (gpu, _, inputs, _, writes) = self.step_parts(step);
        let launch = gpu.launch();
        // SAFETY: flags holds n bytes, f the populations, the band's table and pool their
        // plan's sizes; one thread per cell of the layers; each fluid cell is updated by one
        // kernel (its byte decides which).
        unsafe {
            if layer {
                launch.run(shape, writes, |l, w| StreamCollideLayer {
                    step: inputs.args::<M>(l, w).with_layers(z0, z1),
                })
            } else if inputs.ib.is_some() {
                launch.run(shape, writes, |l, w| StreamCollideBand {
                    step: inputs.args::<M>(l, w).with_layers(z0, z1),
                })
            } else {
                launch.run(shape, writes, |l, w| {
                    inputs.args::<M>(l, w).with_layers(z0, z1)
                })
            }
        }?;
        Ok(())
    }

    /// Stage `boundary`, part `part` of `parts`: the boundary kernel over that part of the
    /// listed cells, on the side stream when `beside` (between its fork and its join), else on
    /// the GPU's own stream.
    pub(super) fn boundary<M: Model>(
        &mut self,
        step: u64,
        part: u32,
        parts: u32,
        beside: bool,
    ) -> Result<(), FluidError>
    where
        Boundary<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    {
        let count = self.lat.boundary_count as u64;
        let size = if parts > 1 {
            self.boundary_part_len()
        } else {
            count
        };
        let start = part as u64 * size;
        if start >= count {
            return Ok(());
        }
        let len = size.min(count - start);
        let (gpu, side, inputs, cells, writes) = self.step_parts(step);
        let launch = match side.filter(|_| beside) {
            // SAFETY: until the join, the GPU's own stream runs only the interior kernel and
            // the outlet layer's, which write the slots of interior cells alone (the
            // destination copy's, or in place the slots those cells own this step) and read no
            // slot a listed cell writes; both only read the cell bytes, the band and the source
            // populations, and the outlet velocities belong to listed cells. WALE's field:
            // every kernel reads the step before's copy and writes its own cells' entries of
            // the other.
            Some(side) => unsafe { side.launch(gpu) },
            None => gpu.launch(),
        };
        // SAFETY: cells holds distinct fluid cell numbers < n (those the interior kernel
        // skips), `start + len <= count` of them; outlet_u three floats per entry when outlets
        // exist.
        unsafe {
            launch.run(Shape::per_item(len, BLOCK_SIZE), writes, |l, w| {
                let args = inputs.args::<M>(l, w);
                // Outlet velocities are kept per list entry when the scene has outlets.
                let per_entry_u = args.outlet_u.len() >= 3 * count;
                Boundary {
                    step: if per_entry_u {
                        args.with_outlet_u(args.outlet_u.range(3 * start, 3 * len))
                    } else {
                        args
                    },
                    cells: l.read(cells).offset(start).prefix(len),
                }
            })
        }?;
        Ok(())
    }

    /// Listed cells per boundary launch beside the interior kernel: `blocks_per_sm` blocks
    /// per SM (a fixed share of each SM at a time).
    pub(super) fn boundary_part_len(&self) -> u64 {
        match self.boundary_launch {
            crate::fluid::BoundaryLaunch::Beside { blocks_per_sm } => {
                blocks_per_sm as u64 * self.gpu.sm_count as u64 * BLOCK_SIZE as u64
            }
            _ => self.lat.boundary_count as u64,
        }
    }
}

impl<S: Storage> CudaFluid<S>
where
    S::Elem: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits,
    FieldsArgs<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    PlaneFields<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    Health<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
{
    /// The fields buffer, allocated by the first call.
    fn fields_buffer(&mut self) -> Result<(), FluidError> {
        if self.lat.fields.is_none() {
            let n = self.params.lattice.cells();
            self.gpu
                .check_fits("the output fields (16 bytes per cell)", 16 * n as u64)?;
            self.lat.fields = Some(self.gpu.zeros::<f32>(4 * n)?);
        }
        Ok(())
    }

    /// `rho, u` of every cell into the device fields buffer (allocated by the first call),
    /// by `lbm_fields_*`, without copying them back.
    pub(super) fn compute_fields(&mut self) -> Result<(), FluidError> {
        if self.lat.fields_step == Some(self.step) {
            return Ok(());
        }
        self.fields_buffer()?;
        let Some(mut fields) = self.lat.fields.take() else {
            unreachable!("allocated above")
        };
        let written = self.write_fields(&mut fields);
        self.lat.fields = Some(fields);
        written?;
        self.lat.fields_step = Some(self.step);
        Ok(())
    }

    /// `rho, u` of every cell into `dst` (4 values per cell, the fields' layout), by
    /// `lbm_fields_*` on the fluid's stream.
    pub(super) fn write_fields(&self, dst: &mut CudaSlice<f32>) -> Result<(), FluidError> {
        let n = self.params.lattice.cells();
        if dst.len() != 4 * n {
            return Err(FluidError::Invalid(format!(
                "a fields buffer of {} values for {n} cells",
                dst.len()
            )));
        }
        let (p, pops) = (self.params, self.now());
        let (lat, ib) = (&self.lat, &self.ib);
        // SAFETY: one thread per cell, reading the populations and writing its own fields
        // (`dst` holds 4 values per cell, checked above).
        unsafe {
            self.gpu
                .launch()
                .run(Shape::per_item(n as u64, BLOCK_SIZE), dst, |l, fields| {
                    FieldsArgs {
                        p,
                        pops,
                        flags: l.read(&lat.flags),
                        f: l.read(&lat.f),
                        band: ib.as_ref().map_or(BandRef::NONE, |ib| ib.band_ref(l)),
                        fields: l.write(fields),
                    }
                })
        }?;
        Ok(())
    }

    /// `rho, u` of the cells of `planes` alone (a slice frame's), by `fluid_plane_fields_*`,
    /// unless the buffer holds this step's fields of every cell; the buffer keeps the step of
    /// its last full computation (its other cells are older).
    pub(super) fn compute_plane_fields(
        &mut self,
        planes: murmur_common::render::fluid::Planes,
    ) -> Result<(), FluidError> {
        if self.lat.fields_step == Some(self.step) {
            return Ok(());
        }
        self.fields_buffer()?;
        let lattice = self.params.lattice;
        let (p, pops) = (self.params, self.now());
        let shape = Shape::per_item(planes.cells(&lattice) as u64, BLOCK_SIZE);
        let Self { gpu, lat, ib, .. } = self;
        let LatticeBuffers {
            flags, f, fields, ..
        } = lat;
        let Some(fields) = fields.as_mut() else {
            unreachable!("allocated above")
        };
        // SAFETY: one thread per cell of the planes, reading the populations and writing its
        // own fields.
        unsafe {
            gpu.launch().run(shape, fields, |l, fields| PlaneFields {
                fields: FieldsArgs {
                    p,
                    pops,
                    flags: l.read(flags),
                    f: l.read(f),
                    band: ib.as_ref().map_or(BandRef::NONE, |ib| ib.band_ref(l)),
                    fields: l.write(fields),
                },
                planes,
            })
        }?;
        Ok(())
    }

    /// The health reduction over every cell (NaN, Mach, density bounds), read back.
    pub(super) fn health_report(
        &mut self,
        bounds: &health::Bounds,
    ) -> Result<Option<Report>, FluidError> {
        use crate::gpu::DriverContext;
        if let Some(ib) = self.ib.as_ref() {
            ib.check_overflow(&self.gpu)?;
        }
        self.gpu
            .stream
            .memset_zeros(&mut self.lat.health)
            .ctx("clearing the health words")?;
        let pops = self.now();
        let n = self.params.lattice.cells() as u64;
        let p = self.params;
        let Self { gpu, lat, ib, .. } = self;
        let LatticeBuffers {
            flags, f, health, ..
        } = lat;
        // SAFETY: one thread per cell, reading the populations; the words are reduced with
        // atomic maxima.
        unsafe {
            gpu.launch()
                .run(Shape::per_item(n, BLOCK_SIZE), health, |l, out| Health {
                    p,
                    pops,
                    bounds: *bounds,
                    flags: l.read(flags),
                    f: l.read(f),
                    band: ib.as_ref().map_or(BandRef::NONE, |ib| ib.band_ref(l)),
                    out: l.write(out),
                })
        }?;
        let w = self.gpu.download(&self.lat.health)?;
        let w: [u32; word::WORDS] = w.try_into().map_err(|_| FluidError::WrongSize {
            what: "the health words".into(),
        })?;
        Ok(Report::decode(w))
    }
}
