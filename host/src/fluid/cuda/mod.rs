//! The CUDA fluid backend: the CPU reference's stages as Rust kernels (`kernels-gpu/src/lbm.rs`),
//! launched through `crate::gpu`, a step walking its [`FluidPlan`] over the GPU's own stream, the
//! side stream of the boundary kernel and a slab's exchange stream, the populations streamed by
//! pull (two copies) or in place (one), timed with CUDA events.
//!
//! The lattice's buffers and stages are in `lattice.rs`, the immersed boundary's in `ib.rs`, the
//! viewer's and the bench's hooks in `hooks.rs`.

mod graph;
mod hooks;
mod ib;
mod lattice;
mod push;
mod state;
mod statistics;
mod walls;

pub(crate) use self::ib::BandBuffers;
use self::ib::{CudaIb, LatticeRef};
use self::lattice::LatticeBuffers;
use super::forces::ForceSample;
use super::ib::plan::{IbPlan, SampleSnapshot};
use super::plan::{BoundaryLane, FluidPlan, FluidStage, IbShape, Lane, PlanInputs, SlabShape};
use super::{BenchHooks, Fields, FluidBackend, FluidError, Setup, ViewHooks};
use crate::gpu::{DriverContext, Gpu, Shape, Side, StageClock};
use crate::ranks::Comm;
use crate::timing::StageTimes;
use murmur_common::lbm::abi::{
    Boundary, FieldsArgs, Health, IbVelocity, Init, StreamCollide, StreamCollideBand,
    StreamCollideLayer, StreamCollideSponge,
};
use murmur_common::lbm::health::{self, Report};
use murmur_common::lbm::links::WallLinks;
use murmur_common::lbm::{
    AcmMrt, Bgk, CollisionModel, Lattice, LbmParams, Model, Populations, RmMrt, Storage,
    StorageKind, Streaming,
};
use murmur_common::render::abi::PlaneFields;
use murmur_common::{with_model, with_storage};
use std::sync::Arc;

/// Threads per block of the lattice kernels (one thread per cell, x fastest: coalesced). 128:
/// at the interior kernels' 56-72 registers (sm_90, ptxas) it fits 7-9 blocks per SM.
pub const BLOCK_SIZE: u32 = 128;

/// A lattice on the GPU, populations stored as `S`.
pub struct CudaFluid<S: Storage> {
    gpu: Gpu,
    model: CollisionModel,
    params: LbmParams,
    /// The populations' layout (at step 0; each step sets its parity).
    pops: Populations<S>,
    layout: murmur_common::lbm::Layout,
    block: super::Block,
    lat: LatticeBuffers<S>,
    /// The box (`lo`, `hi` exclusive) of the outlet layer's interior cells, which the sponge
    /// kernel updates just before the interior kernel (`None`: no such cells, or they run in
    /// the interior kernel: `layer`).
    sponge: Option<([u32; 3], [u32; 3])>,
    /// The interior kernel runs the outlet layer's interior cells too
    /// (`lbm_stream_collide_layer_*`).
    layer: bool,
    /// Where the boundary kernel runs with respect to the interior kernel.
    boundary_launch: super::BoundaryLaunch,
    /// The second stream it runs on (a launch other than `Serial`, with listed cells, and not a
    /// slab's).
    side: Option<Side>,
    /// The stages of one step.
    plan: FluidPlan,
    clock: StageClock,
    /// Steps done.
    step: u64,
    ib: Option<CudaIb>,
    /// Fixed solids with interpolated bounce-back (`None`: none).
    walls: Option<walls::CudaWalls>,
    /// The force record slot of the step being issued (walls).
    walls_slot: u64,
    /// Pushes from a layer above the fluid (with room made: [`FluidBackend::enable_pushes`]).
    pushes: Option<push::CudaPushes>,
    /// The immersed boundary's stencils' domain (the scene's periodic faces; a rank's slab):
    /// where pushes spread.
    push_domain: murmur_common::lbm::ib::stencil::Domain,
    /// The band's force a restore put back, until the next step (a band made for pushes after
    /// the restore takes it).
    kept_band: Vec<crate::fluid::ib::plan::BandForce>,
    /// The slab exchange of a rank among several (None: the whole lattice).
    halo: Option<super::slab::CudaHalo<S>>,
    /// A restore wrote a slab's owned cells: the next step exchanges the ghost layers first.
    stale_ghosts: bool,
    /// Whether each step of one lattice (not a slab) is launched as one CUDA graph
    /// ([`graph`]).
    graph: bool,
    graphs: graph::StepGraphs,
    /// A step is being captured (its stages are recorded, not timed one by one).
    capturing: bool,
    /// Whether the pull scheme's two buffers are swapped against their first order.
    swapped: bool,
    /// The turbulence statistics' keys and sums (from their first `begin`).
    stats: Option<statistics::CudaStats>,
    /// The viewer's smoke (from the first advection) and frame buffers.
    smoke: Option<crate::raster::fluid_cuda::CudaSmoke>,
    raster: crate::raster::fluid_cuda::CudaFluidRaster,
}

impl<S: Storage> CudaFluid<S> {
    /// A slab's communicator (`None`: the whole lattice).
    fn comm(&self) -> Option<Arc<dyn Comm>> {
        self.halo.as_ref().map(|h| h.comm.clone() as Arc<dyn Comm>)
    }

    /// The populations as the next step finds them (for stages that write none).
    fn now(&self) -> Populations<S> {
        self.pops.at_step(self.step + 1)
    }

    /// The plan of this lattice's step.
    fn plan_inputs(&self) -> PlanInputs {
        let count = self.lat.boundary_count as u64;
        let boundary = match (self.side.as_ref(), self.boundary_launch) {
            _ if count == 0 => BoundaryLane::None,
            (None, _) | (_, super::BoundaryLaunch::Serial) => BoundaryLane::After,
            (Some(_), super::BoundaryLaunch::Tail) => BoundaryLane::SideAfter,
            (Some(_), super::BoundaryLaunch::Beside { .. }) => BoundaryLane::SideFirst {
                parts: count.div_ceil(self.boundary_part_len().max(1)) as u32,
            },
        };
        PlanInputs {
            target: super::plan::Target::Cuda,
            ib: self.ib.as_ref().map(|ib| IbShape {
                samples: ib.plan.has_samples(),
                pushes: self.pushes.is_some(),
                passes: ib.plan.passes,
                bins: ib.plan.bins.is_some(),
                gather: ib.plan.spread.gathers(),
            }),
            slab: self.halo.as_ref().map(|h| SlabShape {
                axis: h.axis,
                owned: [
                    self.params.lattice.nx,
                    self.params.lattice.ny,
                    self.params.lattice.nz,
                ][h.axis as usize]
                    - 2,
            }),
            boundary,
            sponge: self.sponge.is_some(),
            walls: self.walls.is_some(),
        }
    }
}

impl<S: Storage> CudaFluid<S>
where
    S::Elem: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits,
    Init<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
{
    /// The lattice of `setup` on `gpu`, stored and streamed as `S` says.
    pub fn new(gpu: Gpu, setup: &Setup) -> Result<CudaFluid<S>, FluidError> {
        let l = setup.lattice();
        let n = l.cells();
        if setup.flags.len() != n {
            return Err(FluidError::Invalid(
                "setup sizes disagree with the lattice".into(),
            ));
        }
        let prepared = setup.prepared_flags();
        let list = setup.boundary_list(&prepared);
        let streaming = super::cpu::streaming_of::<S>();
        let what = format!(
            "a {} x {} x {} lattice ({} storage, {} streaming)",
            l.nx,
            l.ny,
            l.nz,
            S::NAME,
            streaming.name()
        );
        gpu.check_fits(&what, setup.lattice_bytes(streaming, list.len()))?;
        let pops = Populations::<S>::new(l, setup.layout, 0);
        let mut lat = LatticeBuffers::new(&gpu, setup, &prepared, &list, &pops)?;
        let initial = setup.initial;
        let flags = &lat.flags;
        // SAFETY: flags holds n bytes, f the populations; one thread per cell, each writing
        // only its own slots.
        unsafe {
            gpu.launch()
                .run(Shape::per_item(n as u64, BLOCK_SIZE), &mut lat.f, |l, f| {
                    Init {
                        pops,
                        initial,
                        flags: l.read(flags),
                        f: l.write(f),
                    }
                })
        }?;
        // Both copies start as the initial state, as on the CPU: the slots of cells that never
        // run then hold the same values in both, whatever the step's parity.
        if let Some(next) = lat.f_next.as_mut() {
            gpu.stream
                .memcpy_dtod(&lat.f, next)
                .ctx("copying the initial populations")?;
        }
        let clock = StageClock::new(&gpu.ctx);
        let ib = match IbPlan::new(l, &setup.immersed) {
            Some(plan) => Some(CudaIb::new(&gpu, plan)?),
            None => None,
        };
        let side = match setup.boundary_launch {
            _ if list.is_empty() => None,
            super::BoundaryLaunch::Serial => None,
            super::BoundaryLaunch::Tail => Some(Side::new(&gpu, false)?),
            super::BoundaryLaunch::Beside { .. } => Some(Side::new(&gpu, true)?),
        };
        let sponge = setup.sponge_box(&prepared);
        let walls = walls::CudaWalls::new(&gpu, setup)?;
        let mut fluid = CudaFluid {
            step: 0,
            ib,
            walls,
            walls_slot: 0,
            pushes: None,
            push_domain: setup.immersed.domain(setup.params.lattice),
            kept_band: Vec::new(),
            stats: None,
            smoke: None,
            raster: Default::default(),
            gpu,
            model: setup.model,
            params: setup.params,
            pops,
            layout: setup.layout,
            block: setup.block,
            lat,
            sponge: sponge.filter(|_| setup.layer_kernel),
            layer: !setup.layer_kernel && sponge.is_some(),
            boundary_launch: setup.boundary_launch,
            side,
            plan: FluidPlan { stages: Vec::new() },
            clock,
            halo: None,
            stale_ghosts: false,
            graph: setup.graph,
            graphs: Default::default(),
            capturing: false,
            swapped: false,
        };
        fluid.plan = FluidPlan::new(&fluid.plan_inputs());
        Ok(fluid)
    }

    /// This lattice as one rank's slab ([`super::slab`]), exchanging its faces through
    /// `comm`: the ghost layers are filled now and after every step.
    pub fn with_halo(
        mut self,
        comm: std::sync::Arc<crate::ranks::nccl::NcclComm>,
        axis: u32,
    ) -> Result<CudaFluid<S>, FluidError>
    where
        murmur_common::lbm::abi::HaloPack<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        murmur_common::lbm::abi::HaloUnpack<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    {
        if S::IN_PLACE {
            return Err(FluidError::Invalid(
                "slabs stream with pull, not in place".into(),
            ));
        }
        self.halo = Some(super::slab::CudaHalo::<S>::new(
            comm,
            &self.params.lattice,
            axis,
        )?);
        self.exchange_ghosts()?;
        // A slab orders its boundary kernel (the face cells) before the exchange itself.
        self.side = None;
        self.plan = FluidPlan::new(&self.plan_inputs());
        Ok(self)
    }
}

impl<S: Storage> CudaFluid<S>
where
    IbVelocity<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    WallLinks<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
{
    /// Runs `entry` of step `step` with model `M`, `repeat` being the entry's repeat index.
    fn run_entry<M: Model>(
        &mut self,
        stage: FluidStage,
        lane: Lane,
        repeat: u32,
        repeats: u32,
        step: u64,
    ) -> Result<(), FluidError>
    where
        StreamCollide<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        StreamCollideBand<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        StreamCollideSponge<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        Boundary<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        StreamCollideLayer<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    {
        let gpu = &self.gpu;
        match stage {
            FluidStage::WallLinks => match self.walls.as_mut() {
                Some(walls) => walls.fill(
                    gpu,
                    self.pops.at_step(step),
                    &mut self.lat.f,
                    self.walls_slot,
                ),
                None => Ok(()),
            },
            FluidStage::Sponge(layers) => self.sponge::<M>(layers, step),
            FluidStage::StreamCollide(layers) => self.interior::<M>(layers, step),
            FluidStage::Boundary => self.boundary::<M>(step, repeat, repeats, lane == Lane::Side),
            FluidStage::Fork(Lane::Side) => match self.side.as_ref() {
                Some(side) => Ok(side.fork(gpu)?),
                None => Ok(()),
            },
            FluidStage::Join(Lane::Side) => match self.side.as_ref() {
                Some(side) => Ok(side.join(gpu)?),
                None => Ok(()),
            },
            FluidStage::Fork(_) => match self.halo.as_ref() {
                Some(halo) => halo.fork(gpu),
                None => Ok(()),
            },
            FluidStage::Join(_) => match self.halo.as_ref() {
                Some(halo) => halo.join(gpu),
                None => Ok(()),
            },
            FluidStage::HaloSend | FluidStage::HaloReceive => {
                let pops = self.pops.at_step(step + 1);
                let (Some(halo), Some(dst)) = (self.halo.as_mut(), self.lat.f_next.as_mut()) else {
                    return Ok(());
                };
                if stage == FluidStage::HaloSend {
                    halo.send(gpu, &pops, dst)
                } else {
                    halo.receive(gpu, &pops, dst)
                }
            }
            _ => self.run_immersed(stage, step),
        }
    }

    /// Runs immersed-boundary stage `stage` of step `step`.
    fn run_immersed(&mut self, stage: FluidStage, step: u64) -> Result<(), FluidError> {
        let Some(ib) = self.ib.as_mut() else {
            return Ok(());
        };
        let gpu = &self.gpu;
        let flags = &self.lat.flags;
        match stage {
            FluidStage::IbClear => ib.clear(gpu),
            FluidStage::IbMark => ib.mark(gpu, flags),
            FluidStage::IbBin => ib.bin(gpu),
            FluidStage::IbScan => ib.scan(gpu),
            FluidStage::IbPlace => ib.place(gpu),
            FluidStage::IbVelocity => ib.velocity(
                gpu,
                LatticeRef {
                    p: &self.params,
                    pops: self.pops.at_step(step),
                    flags,
                    f: &self.lat.f,
                },
            ),
            FluidStage::IbBandHalo => match self.halo.as_mut() {
                Some(halo) => ib.band_halo(gpu, halo, &self.params, step),
                None => Ok(()),
            },
            FluidStage::IbForce { pass } => ib.force(gpu, flags, pass),
            FluidStage::IbGather => ib.gather(gpu),
            FluidStage::IbUpdate => ib.update(gpu),
            FluidStage::PushMark | FluidStage::PushSpread => {
                let Some(pushes) = self.pushes.as_mut() else {
                    return Ok(());
                };
                let domain = ib.plan.domain;
                match stage {
                    FluidStage::PushMark => pushes.mark(gpu, domain, flags, &mut ib.band),
                    _ => pushes.spread(gpu, domain, flags, &mut ib.band),
                }
            }
            _ => unreachable!("lattice stages run in run_entry"),
        }
    }

    /// One step of model `M`: the plan's entries in order, each timed entry marked.
    fn step_with<M: Model>(&mut self, step: u64) -> Result<(), FluidError>
    where
        StreamCollide<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        StreamCollideBand<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        StreamCollideSponge<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        Boundary<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        StreamCollideLayer<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    {
        for i in 0..self.plan.stages.len() {
            let entry = self.plan.stages[i];
            for r in 0..entry.repeat {
                self.run_entry::<M>(entry.stage, entry.lane, r, entry.repeat, step)?;
            }
            if let (Some(name), false) = (entry.timed(), self.capturing) {
                self.clock.mark(&self.gpu.stream, name)?;
            }
        }
        Ok(())
    }
}

impl<S: Storage> FluidBackend for CudaFluid<S>
where
    S::Elem: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits,
    FieldsArgs<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    PlaneFields<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    Health<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    IbVelocity<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    WallLinks<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    murmur_common::lbm::statistics::Statistics<S>:
        murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollide<Bgk, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollideBand<Bgk, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollideSponge<Bgk, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    Boundary<Bgk, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollideLayer<Bgk, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollide<RmMrt, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollideBand<RmMrt, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollideSponge<RmMrt, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    Boundary<RmMrt, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollideLayer<RmMrt, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollide<AcmMrt, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollideBand<AcmMrt, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollideSponge<AcmMrt, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    Boundary<AcmMrt, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollideLayer<AcmMrt, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
{
    fn describe(&self) -> String {
        format!("cuda ({})", self.gpu.name)
    }

    fn lattice(&self) -> Lattice {
        self.params.lattice
    }

    fn model(&self) -> CollisionModel {
        self.model
    }

    fn storage(&self) -> StorageKind {
        S::KIND
    }

    fn layout(&self) -> murmur_common::lbm::Layout {
        self.layout
    }

    fn streaming(&self) -> Streaming {
        super::cpu::streaming_of::<S>()
    }

    fn plan(&self) -> &FluidPlan {
        &self.plan
    }

    fn step(&mut self) -> Result<(), FluidError> {
        if std::mem::take(&mut self.stale_ghosts) {
            self.exchange_ghosts()?;
        }
        self.kept_band.clear();
        let step = self.step + 1;
        if let Some(walls) = self.walls.as_mut() {
            self.walls_slot = walls.begin(&self.gpu)?;
        }
        if self.graph && self.halo.is_none() {
            with_model!(self.model, M => self.graphed_step::<M>(step))?;
        } else {
            self.clock.begin(&self.gpu.stream)?;
            let comm = self.comm();
            if let Some(ib) = self.ib.as_mut() {
                ib.begin(&self.gpu, step, comm.as_deref())?;
            }
            with_model!(self.model, M => self.step_with::<M>(step))?;
            if let Some(ib) = self.ib.as_mut() {
                ib.end(step);
            }
            self.clock.end();
        }
        if let Some(walls) = self.walls.as_mut() {
            walls.end(step);
        }
        self.step = step;
        if let Some(next) = self.lat.f_next.as_mut() {
            std::mem::swap(&mut self.lat.f, next);
            self.swapped = !self.swapped;
        }
        Ok(())
    }

    fn step_count(&self) -> u64 {
        self.step
    }

    fn take_forces(&mut self) -> Result<Vec<ForceSample>, FluidError> {
        let mut rows = Vec::new();
        if let Some(ib) = self.ib.as_mut() {
            let comm = self.halo.as_ref().map(|h| h.comm.clone() as Arc<dyn Comm>);
            ib.drain(&self.gpu, comm.as_deref())?;
            ib.check_overflow(&self.gpu)?;
            rows = std::mem::take(&mut ib.taken);
        }
        if let Some(walls) = self.walls.as_mut() {
            rows.extend(walls.take(&self.gpu)?);
        }
        Ok(rows)
    }

    fn enable_pushes(&mut self, most: u32) -> Result<(), FluidError> {
        match self.ib.as_mut() {
            Some(ib) => ib.enable_pushes(&self.gpu, most)?,
            None => {
                let plan = IbPlan::pushes_only(self.push_domain).with_pushes(most);
                self.ib = Some(CudaIb::new(&self.gpu, plan)?);
            }
        }
        if let Some(ib) = self.ib.as_mut() {
            ib.set_band(&self.gpu, &self.kept_band)?;
        }
        self.pushes = Some(push::CudaPushes::new(&self.gpu, most)?);
        self.plan = FluidPlan::new(&self.plan_inputs());
        Ok(())
    }

    fn push(&mut self, pos: &[[f32; 3]], total: &[u64]) -> Result<(), FluidError> {
        match self.pushes.as_mut() {
            Some(p) => p.upload(&self.gpu, pos, total),
            None => Err(FluidError::Invalid(
                "this fluid takes no pushes (enable_pushes first)".into(),
            )),
        }
    }

    fn push_device(
        &mut self,
        pos: &crate::gpu::exposed::RawBuffer,
        total: &crate::gpu::exposed::RawBuffer,
    ) -> Result<(), FluidError> {
        match self.pushes.as_mut() {
            Some(p) => p.copy_from(&self.gpu, pos, total),
            None => Err(FluidError::Invalid(
                "this fluid takes no pushes (enable_pushes first)".into(),
            )),
        }
    }

    fn samples(&mut self) -> Result<Option<SampleSnapshot>, FluidError> {
        let Some(ib) = self.ib.as_ref().filter(|ib| ib.plan.has_samples()) else {
            return Ok(None);
        };
        let force = self.gpu.download(&ib.sample_force)?;
        Ok(Some(ib.plan.snapshot(self.step, &force)))
    }

    fn band(&mut self) -> Result<Option<crate::fluid::ib::plan::BandStats>, FluidError> {
        match self.ib.as_ref() {
            Some(ib) => Ok(Some(ib.band_stats(&self.gpu)?)),
            None => Ok(None),
        }
    }

    fn health(&mut self, bounds: &health::Bounds) -> Result<Option<Report>, FluidError> {
        self.health_report(bounds)
    }

    fn fields(&mut self) -> Result<Fields, FluidError> {
        self.compute_fields()?;
        let Some(fields) = self.lat.fields.as_ref() else {
            unreachable!("computed above")
        };
        Ok(Fields {
            lattice: self.params.lattice,
            data: self.gpu.download(fields)?,
        })
    }

    fn device_fields(&mut self) -> Result<Option<crate::gpu::exposed::RawBuffer>, FluidError> {
        self.compute_fields()?;
        let Some(fields) = self.lat.fields.as_ref() else {
            unreachable!("computed above")
        };
        Ok(Some(crate::gpu::exposed::RawBuffer::of(
            fields,
            &self.gpu.stream,
        )))
    }

    fn fields_into(
        &mut self,
        dst: &mut cudarc::driver::CudaSlice<f32>,
    ) -> Result<Option<std::sync::Arc<cudarc::driver::CudaStream>>, FluidError> {
        let theirs = dst.stream().context().ordinal();
        if theirs != self.gpu.ctx.ordinal() {
            return Err(FluidError::Invalid(format!(
                "a fields buffer on GPU {theirs}, the fluid on GPU {}",
                self.gpu.ctx.ordinal()
            )));
        }
        let owner = dst.stream().clone();
        if !std::sync::Arc::ptr_eq(&owner, &self.gpu.stream) {
            self.gpu
                .stream
                .join(&owner)
                .ctx("waiting for the fields buffer's readers")?;
        }
        self.write_fields(dst)?;
        Ok(Some(self.gpu.stream.clone()))
    }

    fn populations(&mut self) -> Result<Vec<f32>, FluidError> {
        let raw = self.gpu.download(&self.lat.f)?;
        Ok(super::cpu::canonical(&self.now(), &raw))
    }

    fn device_memory(&self) -> Option<(u64, u64)> {
        self.gpu.memory().ok()
    }

    fn allocated_bytes(&self) -> u64 {
        let ib = self.ib.as_ref().map_or(0, |ib| ib.plan.bytes());
        let walls = self.walls.as_ref().map_or(0, |w| w.bytes());
        self.lat.bytes() + ib + walls
    }

    fn synchronize(&mut self) -> Result<(), FluidError> {
        Ok(self.gpu.synchronize()?)
    }

    fn times(&mut self) -> Result<StageTimes, FluidError> {
        Ok(self.clock.times()?)
    }

    fn reset_times(&mut self) {
        // A failed read of old events only loses figures, never state.
        let _ = self.clock.reset();
        let _ = self.raster.reset_times();
    }

    fn set_inlet_scale(&mut self, scale: f32) {
        self.params.inlet_scale = scale;
    }

    fn gpu_ms_per_step(&mut self) -> Option<f64> {
        self.clock.mean_step_ms().ok().flatten()
    }

    fn read_state_piece(
        &mut self,
        cells: std::ops::Range<usize>,
        out: &mut [u8],
    ) -> Result<(), FluidError> {
        self.read_piece(cells, out)
    }

    fn write_state_piece(
        &mut self,
        cells: std::ops::Range<usize>,
        data: &[u8],
    ) -> Result<(), FluidError> {
        self.write_piece(cells, data)
    }

    fn snapshot(&mut self) -> Result<Option<super::state::snapshot::Snapshot>, FluidError> {
        self.snapshot_copy()
    }

    fn capture_small_state(&mut self) -> Result<super::state::SmallState, FluidError> {
        self.capture_small()
    }

    fn restore_small_state(&mut self, small: &super::state::SmallState) -> Result<(), FluidError> {
        self.restore_small(small)
    }

    fn view_hooks(&mut self) -> Option<&mut dyn ViewHooks> {
        Some(self)
    }

    fn statistics(&mut self) -> Option<&mut dyn super::statistics::Accumulate> {
        match self.halo {
            Some(_) => None,
            None => Some(self),
        }
    }

    fn bench_hooks(&mut self) -> Option<&mut dyn BenchHooks> {
        Some(self)
    }
}

/// Opens one rank's slab on `gpu` (`setup` from [`super::slab::SlabPlan::local_setup`], pull
/// streaming), exchanging its faces through `comm`.
pub fn open_slab(
    gpu: Gpu,
    setup: &Setup,
    comm: std::sync::Arc<crate::ranks::nccl::NcclComm>,
    axis: u32,
) -> Result<Box<dyn FluidBackend>, FluidError> {
    use murmur_common::lbm::{Fp16C, Fp16S, Fp32};
    Ok(match setup.storage {
        StorageKind::Fp32 => Box::new(CudaFluid::<Fp32>::new(gpu, setup)?.with_halo(comm, axis)?),
        StorageKind::Fp16s => Box::new(CudaFluid::<Fp16S>::new(gpu, setup)?.with_halo(comm, axis)?),
        StorageKind::Fp16c => Box::new(CudaFluid::<Fp16C>::new(gpu, setup)?.with_halo(comm, axis)?),
    })
}

/// Opens the CUDA backend on GPU 0 with `setup` uploaded and initialised, in its storage.
pub fn open(setup: &Setup) -> Result<Box<dyn FluidBackend>, FluidError> {
    open_on(Gpu::open()?, setup)
}

/// [`open`] on a given GPU.
pub fn open_on(gpu: Gpu, setup: &Setup) -> Result<Box<dyn FluidBackend>, FluidError> {
    let streaming = match setup.streaming {
        Some(st) => st,
        // Pull (two copies, the faster scheme) when both fit (the boundary list is small
        // beside the populations: counted as every cell's worth would be far too much, so
        // it is left to the exact check in `new`).
        None => {
            let pull = setup.lattice_bytes(Streaming::Pull, 0);
            if gpu.check_fits("the lattice", pull).is_ok() {
                Streaming::Pull
            } else {
                Streaming::InPlace
            }
        }
    };
    with_storage!(setup.storage, streaming, S => Ok(Box::new(CudaFluid::<S>::new(gpu, setup)?)))
}
