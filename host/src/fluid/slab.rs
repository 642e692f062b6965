//! The fluid on several ranks: the lattice cut into slabs along its longest axis, each rank
//! owning a slab with one ghost layer on either side, the populations that cross a slab face
//! exchanged after every step ([`murmur_common::lbm::halo`]).
//!
//! - [`SlabPlan`]: the cut (equal work per slab: its fluid cells, and [`SAMPLE_WEIGHT`] cells'
//!   worth per immersed-boundary sample starting in it; every slab at least one layer) and each rank's own [`Setup`]: its lattice with the ghost layers, the scene's cell
//!   bytes of those layers (ghost fluid cells as [`GHOST`], the owned face layers pinned to the
//!   boundary path with [`SLAB_FACE`]), the parameters with every coordinate shifted to the
//!   slab's origin. A rank's cells then update exactly as in the whole lattice: the same
//!   neighbours, the same bytes, the same positions, bit for bit.
//! - [`CpuHalo`] and [`CudaHalo`]: the exchange, on the CPU through any [`Comm`] (the N ranks
//!   of one process in CI), on the GPU through NCCL: the face layers update first, their
//!   crossing populations travel on their own stream while the interior updates.
//! - [`SlabFluid`]: a rank's backend seen as the whole lattice: the health check is collective
//!   (every rank stops at the same step), fields and populations are gathered in the global
//!   cell order.

use super::{Fields, FluidBackend, FluidError, Setup};
use crate::ranks::Comm;
use crate::timing::StageTimes;
use murmur_common::lbm::abi::{BandHalo, Halo};
use murmur_common::lbm::boundary::{FLUID, GHOST, KIND_MASK, SLAB_FACE};
use murmur_common::lbm::halo::{self, face_cells, BAND_VALUES, CROSSING};
use murmur_common::lbm::health::{Bounds, Report};
use murmur_common::lbm::ib::band::BandMut;
use murmur_common::lbm::ib::stencil::Domain;
use murmur_common::lbm::{CollisionModel, Lattice, Layout, Populations, Storage};
use murmur_common::lbm::{StorageKind, Streaming, Q};
use std::ops::Range;
use std::sync::Arc;

/// Axis names for messages.
const AXES: [&str; 3] = ["x", "y", "z"];

/// What one immersed-boundary sample's work per step weighs in the cut, in fluid cells'
/// updates: on one H200 the rotating torus with the flow along z (`fluid scale --scene
/// assets/fluid/rotating-torus-z.toml`, ACM-MRT FP32) spent 0.54 ms per step in the
/// immersed-boundary stages for 79,332 samples and 2.76 ms in stream-collide and boundary for
/// 34.2M cells: a sample costs about 85 cells.
pub const SAMPLE_WEIGHT: u64 = 85;

/// How the lattice is cut among the ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct SlabPlan {
    /// The axis the slabs are stacked along.
    pub axis: usize,
    /// The whole lattice.
    pub global: Lattice,
    /// Owned layers of each rank along `axis`.
    pub ranges: Vec<Range<u32>>,
    /// The immersed boundary's periodic axes (for [`SlabPlan::ib_domain`]).
    pub ib_periodic: [bool; 3],
}

fn extent(l: &Lattice, axis: usize) -> u32 {
    [l.nx, l.ny, l.nz][axis]
}

impl SlabPlan {
    /// The cut of `setup` into `ranks` slabs along its longest axis (of equal lengths, the
    /// last: its layers are contiguous in memory), with equal work: fluid cells, and
    /// [`SAMPLE_WEIGHT`] per immersed-boundary sample at the start.
    pub fn new(setup: &Setup, ranks: usize) -> Result<SlabPlan, FluidError> {
        let global = setup.lattice();
        let dims = [global.nx, global.ny, global.nz];
        let longest = *dims.iter().max().unwrap_or(&0);
        let axis = (0..3).rev().find(|&a| dims[a] == longest).unwrap_or(2);
        if !setup.immersed.is_empty()
            && setup.immersed.spread != super::ib::spread::IbSpread::Scatter
        {
            return Err(FluidError::Invalid(format!(
                "on several ranks the immersed boundary spreads by scatter: set spread = \
                 \"scatter\" in the scene's [immersed] table (it has \"{}\")",
                setup.immersed.spread.name()
            )));
        }
        if setup.streaming == Some(Streaming::InPlace) {
            return Err(FluidError::Invalid(
                "several ranks stream with pull (two copies per rank): leave out --streaming \
                 in-place"
                    .into(),
            ));
        }
        let mut weights = vec![0u64; longest as usize];
        for (cell, &b) in setup.flags.iter().enumerate() {
            if b & KIND_MASK == FLUID {
                let (x, y, z) = global.coords(cell);
                weights[[x, y, z][axis] as usize] += 1;
            }
        }
        // The immersed boundary's work lands on the slabs its samples start in.
        if let Some(ib) = super::ib::plan::IbPlan::new(global, &setup.immersed) {
            for p in ib.positions(1) {
                let k = (p[axis].floor() as i64).rem_euclid(longest as i64) as usize;
                weights[k] += SAMPLE_WEIGHT;
            }
        }
        let ranges = crate::ranks::balanced_ranges(&weights, ranks).ok_or_else(|| {
            FluidError::Invalid(format!(
                "{ranks} ranks need at least {ranks} layers along {} (the longest axis), the \
                 lattice has {longest}",
                AXES[axis]
            ))
        })?;
        Ok(SlabPlan {
            axis,
            global,
            ib_periodic: setup.immersed.periodic,
            ranges: ranges
                .into_iter()
                .map(|r| r.start as u32..r.end as u32)
                .collect(),
        })
    }

    /// Ranks.
    pub fn size(&self) -> usize {
        self.ranges.len()
    }

    /// Owned layers of `rank`.
    pub fn owned(&self, rank: usize) -> u32 {
        self.ranges[rank].len() as u32
    }

    /// `rank`'s lattice: its owned layers and a ghost layer on each side.
    pub fn local_lattice(&self, rank: usize) -> Lattice {
        let mut d = [self.global.nx, self.global.ny, self.global.nz];
        d[self.axis] = self.owned(rank) + 2;
        Lattice::new(d[0], d[1], d[2])
    }

    /// The global layer of `rank`'s local layer `k` (0 and `owned + 1` are the ghosts; the
    /// axis wraps).
    pub fn global_layer(&self, rank: usize, k: u32) -> u32 {
        let n = extent(&self.global, self.axis) as i64;
        (self.ranges[rank].start as i64 - 1 + k as i64).rem_euclid(n) as u32
    }

    /// The global cell of `rank`'s local cell.
    pub fn global_cell(&self, rank: usize, local: usize) -> usize {
        let l = self.local_lattice(rank);
        let (x, y, z) = l.coords(local);
        let mut c = [x, y, z];
        c[self.axis] = self.global_layer(rank, c[self.axis]);
        self.global.index(c[0], c[1], c[2])
    }

    /// The immersed boundary's domain on `rank`'s slab.
    pub fn ib_domain(&self, rank: usize) -> Domain {
        Domain::new(self.local_lattice(rank), self.ib_periodic).slab(
            self.axis as u32,
            self.ranges[rank].start as i32 - 1,
            extent(&self.global, self.axis),
        )
    }

    /// Whether the face layers' fluid cells are pinned to the boundary list (slabs along x or
    /// y); slabs along z update their face layers as contiguous layer ranges instead.
    pub fn pins_faces(&self) -> bool {
        self.axis != 2
    }

    /// `rank`'s setup: its lattice, the cell bytes of its layers (ghost fluid cells
    /// [`GHOST`], owned face-layer fluid cells pinned with [`SLAB_FACE`] unless the slabs lie
    /// along z, [`SlabPlan::pins_faces`]), the parameters and
    /// the initial fields shifted so that every local position means the global one.
    pub fn local_setup(&self, setup: &Setup, rank: usize) -> Setup {
        let local = self.local_lattice(rank);
        let owned = self.owned(rank);
        let a = self.axis;
        let mut flags = vec![0u8; local.cells()];
        for (cell, b) in flags.iter_mut().enumerate() {
            let (x, y, z) = local.coords(cell);
            let k = [x, y, z][a];
            let byte = setup.flags[self.global_cell(rank, cell)];
            let fluid = byte & KIND_MASK == FLUID;
            *b = if !fluid {
                byte
            } else if k == 0 || k == owned + 1 {
                GHOST
            } else if (k == 1 || k == owned) && self.pins_faces() {
                byte | SLAB_FACE
            } else {
                byte
            };
        }
        // Local coordinate k along the axis is global k + shift.
        let shift = self.ranges[rank].start as f32 - 1.0;
        let mut params = setup.params;
        params.lattice = local;
        if params.sponge_axis as usize == a {
            params.sponge_start -= shift;
        }
        for face in params.faces.iter_mut() {
            face.center[a] -= shift;
        }
        let mut initial = setup.initial;
        if a < 2 {
            initial.offset[a] -= shift;
        }
        let mut immersed = setup.immersed.clone();
        let d = self.ib_domain(rank);
        immersed.slab = Some((d.slab_axis, d.slab_origin, d.slab_extent));
        Setup {
            params,
            flags,
            initial,
            immersed,
            streaming: Some(Streaming::Pull),
            ..setup.clone()
        }
    }
}

/// Views a slice of plain values as bytes (population values: `f32` or `u16`).
fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: plain-data elements without padding; the byte view covers the same memory.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// The values of a byte message (the inverse of [`as_bytes`]); `None` when the length is off.
fn from_bytes<T: Copy + Default>(b: &[u8], n: usize) -> Option<Vec<T>> {
    if b.len() != n * std::mem::size_of::<T>() {
        return None;
    }
    let mut v = vec![T::default(); n];
    // SAFETY: `v` holds exactly `b.len()` bytes of plain data.
    unsafe {
        std::ptr::copy_nonoverlapping(b.as_ptr(), v.as_mut_ptr() as *mut u8, b.len());
    }
    Some(v)
}

/// Adds every rank's fixed-point force records into `records` (the same slots on every rank;
/// collective). Integer sums: the totals equal one rank's over the whole lattice, whatever the
/// order. Each sample's reaction is counted by one rank only ([`murmur_common::lbm::ib::stencil::Domain::owns`]).
pub fn sum_records(comm: &dyn Comm, records: &mut [u64]) -> Result<(), FluidError> {
    let all = comm
        .all_gather(as_bytes(records))
        .map_err(|e| FluidError::Invalid(e.to_string()))?;
    let mut total = vec![0u64; records.len()];
    for m in &all {
        let v: Vec<u64> = from_bytes(m, records.len()).ok_or_else(|| {
            FluidError::Invalid("a rank's force records have the wrong size".into())
        })?;
        for (t, x) in total.iter_mut().zip(v) {
            *t = t.wrapping_add(x);
        }
    }
    records.copy_from_slice(&total);
    Ok(())
}

/// What arrives for the lower and the upper ghost layer (`None`: that face took no part).
type FaceMessages = (Option<Vec<u8>>, Option<Vec<u8>>);

/// The CPU's exchange: pack the face layers, one message to each neighbour, unpack into the
/// ghost layers.
pub struct CpuHalo {
    pub comm: Arc<dyn Comm>,
    pub axis: u32,
}

impl CpuHalo {
    /// Sends `up` (this slab's upper face) to the next rank and `down` to the previous one;
    /// returns what arrives for the lower and the upper ghost layer, each checked to hold
    /// `len` bytes.
    /// `faces` says which of the lower and upper face take part (the neighbour across a face
    /// must say the same of it); a face left out sends and receives nothing (`None`).
    fn swap_faces(
        &self,
        up: &[u8],
        down: &[u8],
        len: usize,
        faces: [bool; 2],
    ) -> Result<FaceMessages, FluidError> {
        let (prev, next) = crate::ranks::ring(self.comm.rank(), self.comm.size());
        let [lower, upper] = faces;
        let mut sends = Vec::new();
        let mut from = Vec::new();
        if upper {
            sends.push((next, up));
        }
        if lower {
            sends.push((prev, down));
            from.push(prev);
        }
        if upper {
            from.push(next);
        }
        let mut got = self
            .comm
            .send_recv(&sends, &from)
            .map_err(|e| FluidError::Invalid(e.to_string()))?;
        if got.len() != from.len() || got.iter().any(|m| m.len() != len) {
            return Err(FluidError::Invalid(
                "a slab message has the wrong size".into(),
            ));
        }
        let hi = if upper { got.pop() } else { None };
        let lo = if lower { got.pop() } else { None };
        Ok((lo, hi))
    }

    /// Exchanges the band values (`rho, u*`) of the face layers into the ghost layers' band
    /// cells, before a multi-direct-forcing pass ([`halo::band_pack`]), across the faces a
    /// solid reaches (`faces`: lower, upper; [`super::ib::plan::IbPlan::faces_reached`]).
    pub fn exchange_band(&self, band: BandMut, faces: [bool; 2]) -> Result<(), FluidError> {
        if faces == [false; 2] {
            return Ok(());
        }
        let l = band.bricks.lattice;
        let n = face_cells(&l, self.axis);
        let owned = extent(&l, self.axis as usize) - 2;
        let args = |buf: &mut [f32], layer: u32| BandHalo {
            band,
            buf: super::cpu::view_mut(buf),
            axis: self.axis,
            layer,
        };
        let mut up = vec![0.0f32; BAND_VALUES * n];
        let mut down = vec![0.0f32; BAND_VALUES * n];
        {
            let (a, b) = (args(&mut up, owned), args(&mut down, 1));
            for i in 0..n {
                // SAFETY: the buffers hold `4 n` values, the band its plan's sizes.
                unsafe {
                    halo::band_pack(&a, i);
                    halo::band_pack(&b, i);
                }
            }
        }
        let bytes = BAND_VALUES * n * 4;
        let got = self.swap_faces(as_bytes(&up), as_bytes(&down), bytes, faces)?;
        for (m, layer) in [(got.0, 0), (got.1, owned + 1)] {
            let Some(m) = m else { continue };
            let mut v: Vec<f32> = from_bytes(&m, BAND_VALUES * n)
                .ok_or_else(|| FluidError::Invalid("a slab message has the wrong size".into()))?;
            let a = args(&mut v, layer);
            for i in 0..n {
                // SAFETY: as above.
                unsafe { halo::band_unpack(&a, i) };
            }
        }
        Ok(())
    }

    /// Exchanges the crossing populations of `f` (the copy the next step reads).
    pub fn exchange<S: Storage>(
        &self,
        pops: &Populations<S>,
        f: &mut [S::Elem],
    ) -> Result<(), FluidError> {
        let l = pops.lattice;
        let n = face_cells(&l, self.axis);
        let owned = extent(&l, self.axis as usize) - 2;
        let halo = |f: &mut [S::Elem], buf: &mut [S::Elem], layer: u32, sign: i32| Halo {
            pops: *pops,
            f: super::cpu::view_mut(f),
            buf: super::cpu::view_mut(buf),
            axis: self.axis,
            layer,
            sign,
            _pad: 0,
        };
        let mut up = vec![S::Elem::default(); CROSSING * n];
        let mut down = vec![S::Elem::default(); CROSSING * n];
        {
            let (a, b) = (halo(f, &mut up, owned, 1), halo(f, &mut down, 1, -1));
            for i in 0..n {
                // SAFETY: the buffers hold `9 n` values, `f` the lattice's populations.
                unsafe {
                    halo::pack(&a, i);
                    halo::pack(&b, i);
                }
            }
        }
        let bytes = std::mem::size_of_val(up.as_slice());
        let (lo, hi) = self.swap_faces(as_bytes(&up), as_bytes(&down), bytes, [true; 2])?;
        let bad = || FluidError::Invalid("a slab message has the wrong size".into());
        let mut lo: Vec<S::Elem> =
            from_bytes(&lo.unwrap_or_default(), CROSSING * n).ok_or_else(bad)?;
        let mut hi: Vec<S::Elem> =
            from_bytes(&hi.unwrap_or_default(), CROSSING * n).ok_or_else(bad)?;
        let (a, b) = (halo(f, &mut lo, 0, 1), halo(f, &mut hi, owned + 1, -1));
        for i in 0..n {
            // SAFETY: as above.
            unsafe {
                halo::unpack(&a, i);
                halo::unpack(&b, i);
            }
        }
        Ok(())
    }
}

/// One half of the exchange on the GPU (pack and send, or unpack).
type CudaHaloStage<S> = fn(
    &mut CudaHalo<S>,
    &crate::gpu::Gpu,
    &Populations<S>,
    &mut cudarc::driver::CudaSlice<<S as Storage>::Elem>,
) -> Result<(), FluidError>;

/// What the CUDA backend needs for the exchange: the communicator and the device buffers (on
/// the communicator's stream: packed faces out, received faces in), and the two halves of the
/// exchange for this storage (chosen where the storage's kernels are known to exist).
pub struct CudaHalo<S: Storage> {
    pub comm: Arc<crate::ranks::nccl::NcclComm>,
    pub axis: u32,
    pub up: cudarc::driver::CudaSlice<S::Elem>,
    pub down: cudarc::driver::CudaSlice<S::Elem>,
    pub lo: cudarc::driver::CudaSlice<S::Elem>,
    pub hi: cudarc::driver::CudaSlice<S::Elem>,
    send: CudaHaloStage<S>,
    receive: CudaHaloStage<S>,
    /// The band exchange's buffers (up, down, lo, hi), from its first use.
    band: Option<[cudarc::driver::CudaSlice<f32>; 4]>,
}

impl<S: Storage> CudaHalo<S> {
    /// Packs the face layers of `f` and enqueues the transfers on the exchange stream, after
    /// the work queued on `f`'s stream so far; that stream goes on at once (the middle layers
    /// update meanwhile: they touch neither the face layers nor the ghost layers).
    pub fn send(
        &mut self,
        gpu: &crate::gpu::Gpu,
        pops: &Populations<S>,
        f: &mut cudarc::driver::CudaSlice<S::Elem>,
    ) -> Result<(), FluidError> {
        (self.send)(self, gpu, pops, f)
    }

    /// Unpacks the received faces into the ghost layers of `f` on the exchange stream, as soon
    /// as they arrive (not after the work queued on `f`'s stream since the send, which touches
    /// no ghost layer); `f`'s stream then waits for it.
    pub fn receive(
        &mut self,
        gpu: &crate::gpu::Gpu,
        pops: &Populations<S>,
        f: &mut cudarc::driver::CudaSlice<S::Elem>,
    ) -> Result<(), FluidError> {
        (self.receive)(self, gpu, pops, f)
    }
}

impl<S: Storage> CudaHalo<S>
where
    S::Elem: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits,
    murmur_common::lbm::abi::HaloPack<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    murmur_common::lbm::abi::HaloUnpack<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
{
    /// Buffers for the faces of `lattice` across `axis`.
    pub fn new(
        comm: Arc<crate::ranks::nccl::NcclComm>,
        lattice: &Lattice,
        axis: u32,
    ) -> Result<CudaHalo<S>, FluidError> {
        use crate::gpu::DriverContext;
        let n = CROSSING * face_cells(lattice, axis);
        let alloc = || {
            comm.stream
                .alloc_zeros::<S::Elem>(n)
                .ctx("slab exchange buffers")
        };
        Ok(CudaHalo {
            up: alloc()?,
            down: alloc()?,
            lo: alloc()?,
            hi: alloc()?,
            axis,
            comm,
            send: Self::pack_and_send,
            receive: Self::unpack,
            band: None,
        })
    }

    fn pack_and_send(
        &mut self,
        gpu: &crate::gpu::Gpu,
        pops: &Populations<S>,
        f: &mut cudarc::driver::CudaSlice<S::Elem>,
    ) -> Result<(), FluidError> {
        use crate::gpu::DriverContext;
        let l = pops.lattice;
        let owned = extent(&l, self.axis as usize) - 2;
        let stream = self.comm.stream.clone();
        // The fork: the exchange stream waits for the face layers' update.
        stream
            .join(&gpu.stream)
            .ctx("ordering the exchange after the faces")?;
        let faces = [(owned, 1, &mut self.up), (1, -1, &mut self.down)];
        launch_faces(gpu, &stream, pops, f, self.axis, faces, |halo| {
            murmur_common::lbm::abi::HaloPack { halo }
        })?;
        let (prev, next) = crate::ranks::ring(self.comm.rank(), self.comm.size());
        let count = CROSSING * face_cells(&l, self.axis);
        self.comm
            .exchange_device(
                &[(next, &self.up, count), (prev, &self.down, count)],
                &mut [(prev, &mut self.lo, count), (next, &mut self.hi, count)],
            )
            .map_err(|e| FluidError::Invalid(e.to_string()))
    }

    fn unpack(
        &mut self,
        gpu: &crate::gpu::Gpu,
        pops: &Populations<S>,
        f: &mut cudarc::driver::CudaSlice<S::Elem>,
    ) -> Result<(), FluidError> {
        use crate::gpu::DriverContext;
        let owned = extent(&pops.lattice, self.axis as usize) - 2;
        let stream = self.comm.stream.clone();
        let faces = [(0, 1, &mut self.lo), (owned + 1, -1, &mut self.hi)];
        launch_faces(gpu, &stream, pops, f, self.axis, faces, |halo| {
            murmur_common::lbm::abi::HaloUnpack { halo }
        })?;
        // The join: the next step's face layers read the ghost layers.
        gpu.stream
            .join(&stream)
            .ctx("ordering the next step after the exchange")?;
        Ok(())
    }
}

impl<S: Storage> CudaHalo<S> {
    /// Exchanges the band values (`rho, u*`) of the face layers into the ghost layers' band
    /// cells, before a multi-direct-forcing pass ([`halo::band_pack`]): packed, sent and
    /// unpacked on the exchange stream, after the work queued on the band so far (the next
    /// stage that reads the band waits for it). `band` gives the band's views in a launch.
    pub fn exchange_band(
        &mut self,
        gpu: &crate::gpu::Gpu,
        lattice: &Lattice,
        faces: [bool; 2],
        mut band: impl FnMut(&mut crate::gpu::Launch<'_>) -> BandMut,
    ) -> Result<(), FluidError> {
        use crate::gpu::DriverContext;
        if faces == [false; 2] {
            return Ok(());
        }
        let [lower, upper] = faces;
        let n = face_cells(lattice, self.axis);
        let count = BAND_VALUES * n;
        if self.band.is_none() {
            let alloc = || {
                self.comm
                    .stream
                    .alloc_zeros::<f32>(count)
                    .ctx("band exchange buffers")
            };
            self.band = Some([alloc()?, alloc()?, alloc()?, alloc()?]);
        }
        let Some([up, down, lo, hi]) = self.band.as_mut() else {
            return Ok(());
        };
        let owned = extent(lattice, self.axis as usize) - 2;
        let stream = self.comm.stream.clone();
        let shape = crate::gpu::Shape::per_item(n as u64, 128);
        for (layer, buf, on) in [(owned, &mut *up, upper), (1, &mut *down, lower)] {
            if !on {
                continue;
            }
            let mut l = gpu.launch_on(&stream);
            let halo = BandHalo {
                band: band(&mut l),
                buf: l.write(buf),
                axis: self.axis,
                layer,
            };
            // SAFETY: one thread per face cell, reading its band values into its own buffer
            // entries; the buffer holds 4 values per face cell.
            unsafe { l.run(murmur_common::lbm::abi::BandPack { halo }, shape) }?;
        }
        let (prev, next) = crate::ranks::ring(self.comm.rank(), self.comm.size());
        let mut sends = Vec::new();
        let mut recvs = Vec::new();
        if upper {
            sends.push((next, &*up, count));
        }
        if lower {
            sends.push((prev, &*down, count));
            recvs.push((prev, &mut *lo, count));
        }
        if upper {
            recvs.push((next, &mut *hi, count));
        }
        self.comm
            .exchange_device(&sends, &mut recvs)
            .map_err(|e| FluidError::Invalid(e.to_string()))?;
        for (layer, buf, on) in [(0, &mut *lo, lower), (owned + 1, &mut *hi, upper)] {
            if !on {
                continue;
            }
            let mut l = gpu.launch_on(&stream);
            let halo = BandHalo {
                band: band(&mut l),
                buf: l.write(buf),
                axis: self.axis,
                layer,
            };
            // SAFETY: one thread per ghost-layer cell, writing only its own band values.
            unsafe { l.run(murmur_common::lbm::abi::BandUnpack { halo }, shape) }?;
        }
        Ok(())
    }
}

/// Launches `wrap(halo)` on `stream` for two face layers `(layer, sign, buffer)` of `f`: one
/// thread per face cell, moving its 9 crossing populations between the lattice and the buffer.
/// Beside `f`'s stream: the pack between the fork after the face layers' update and the join
/// before the next step; the unpack before that join. Meanwhile `f`'s stream updates the middle
/// layers: it writes neither the face layers nor the ghost layers of `f`, which the pack reads
/// and the unpack writes.
fn launch_faces<S: Storage, K>(
    gpu: &crate::gpu::Gpu,
    stream: &Arc<cudarc::driver::CudaStream>,
    pops: &Populations<S>,
    f: &mut cudarc::driver::CudaSlice<S::Elem>,
    axis: u32,
    faces: [(u32, i32, &mut cudarc::driver::CudaSlice<S::Elem>); 2],
    wrap: fn(Halo<S>) -> K,
) -> Result<(), FluidError>
where
    K: murmur_common::Kernel + cudarc::driver::DeviceRepr,
{
    let n = face_cells(&pops.lattice, axis);
    for (layer, sign, buf) in faces {
        // SAFETY: ordered by the fork and the join (above).
        let mut launch = unsafe { gpu.launch_beside(stream) };
        let args = wrap(Halo {
            pops: *pops,
            f: launch.write(f),
            buf: launch.write(buf),
            axis,
            layer,
            sign,
            _pad: 0,
        });
        // SAFETY: one thread per face cell, touching its own 9 slots and buffer entries; the
        // buffer holds 9 values per face cell.
        unsafe { launch.run(args, crate::gpu::Shape::per_item(n as u64, 128)) }?;
    }
    Ok(())
}

/// The layers along the slab axis of a rank's output piece ([`super::pieces`]): the fields of
/// its owned layers with up to two layers of each neighbouring slab around them (for the
/// velocity gradients), of which the owned layers and, except on the last rank, the next
/// slab's first layer are written (point-data pieces meet on a shared layer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Global layer of the piece's first layer (below 0 or past the end: wrapped).
    pub first: i64,
    /// Layers of the previous slab before the owned ones.
    pub below: u32,
    pub owned: u32,
    /// Layers of the next slab after the owned ones.
    pub above: u32,
    /// Layers written, from layer `below`.
    pub written: u32,
}

impl Piece {
    /// `rank`'s piece; `periodic`: whether the slab axis wraps (then the first and last ranks
    /// also take their wrapped neighbours' layers, as the single-rank gradients do).
    pub fn of(plan: &SlabPlan, rank: usize, periodic: bool) -> Piece {
        let n = plan.size();
        let owned = plan.owned(rank);
        let prev = plan.owned((rank + n - 1) % n);
        let next = plan.owned((rank + 1) % n);
        let below = if rank > 0 || periodic { prev.min(2) } else { 0 };
        let above = if rank + 1 < n || periodic {
            next.min(2)
        } else {
            0
        };
        Piece {
            first: plan.ranges[rank].start as i64 - below as i64,
            below,
            owned,
            above,
            written: owned + (rank + 1 < n) as u32,
        }
    }
}

/// One rank's backend seen as the whole lattice.
pub struct SlabFluid {
    inner: Box<dyn FluidBackend>,
    comm: Arc<dyn Comm>,
    plan: SlabPlan,
    /// `Some(periodic)`: [`FluidBackend::fields`] gives this rank's output piece (the slab
    /// axis wrapping or not) instead of the whole lattice gathered on every rank.
    pieces: Option<bool>,
}

/// A health report as a message: 3 floats, a flag, the global first bad cell (or `u64::MAX`).
fn encode_report(r: Option<Report>, global_bad: Option<u64>) -> Vec<u8> {
    let mut m = Vec::with_capacity(24);
    let r = r.unwrap_or(Report {
        min_rho: f32::INFINITY,
        max_rho: f32::NEG_INFINITY,
        max_mach: f32::NEG_INFINITY,
        first_bad: None,
    });
    m.extend_from_slice(&r.min_rho.to_le_bytes());
    m.extend_from_slice(&r.max_rho.to_le_bytes());
    m.extend_from_slice(&r.max_mach.to_le_bytes());
    m.extend_from_slice(&global_bad.unwrap_or(u64::MAX).to_le_bytes());
    m
}

fn f32_at(m: &[u8], i: usize) -> f32 {
    f32::from_le_bytes([m[4 * i], m[4 * i + 1], m[4 * i + 2], m[4 * i + 3]])
}

impl SlabFluid {
    pub fn new(inner: Box<dyn FluidBackend>, comm: Arc<dyn Comm>, plan: SlabPlan) -> SlabFluid {
        SlabFluid {
            inner,
            comm,
            plan,
            pieces: None,
        }
    }

    /// From now on [`FluidBackend::fields`] gives this rank's output piece ([`Piece`]; the
    /// slab axis wraps when `periodic`), for [`super::pieces::PieceSink`].
    pub fn write_pieces(&mut self, periodic: bool) {
        self.pieces = Some(periodic);
    }

    /// The communicator and the cut.
    pub fn comm(&self) -> &Arc<dyn Comm> {
        &self.comm
    }

    pub fn plan(&self) -> &SlabPlan {
        &self.plan
    }

    /// This rank's local fields with every rank's face layers exchanged: the fields of
    /// [`Piece::of`] (rank, `periodic`), a lattice of `below + owned + above` layers along the
    /// slab axis.
    fn piece(&mut self, periodic: bool) -> Result<Fields, FluidError> {
        let r = self.rank();
        let p = Piece::of(&self.plan, r, periodic);
        self.comm.set_busy(true);
        let local = self.inner.fields();
        self.comm.set_busy(false);
        let local = local?;
        let l = local.lattice;
        let axis = self.plan.axis as u32;
        let face = face_cells(&l, axis);
        let n = l.cells();
        // Layer k of the local lattice: the four fields of its face cells.
        let layer = |k: u32| -> Vec<f32> {
            let mut v = Vec::with_capacity(4 * face);
            for a in 0..4 {
                for i in 0..face {
                    v.push(local.data[a * n + halo::face_cell(&l, axis, k, i)]);
                }
            }
            v
        };
        let owned = p.owned;
        let lo: Vec<f32> = (1..=owned.min(2)).flat_map(layer).collect();
        let hi: Vec<f32> = (owned + 1 - owned.min(2)..=owned).flat_map(layer).collect();
        let (prev, next) = crate::ranks::ring(r, self.comm.size());
        // To the next rank first, then the previous (the halo's order: with two ranks both are
        // the same peer and the messages pair up in order).
        let got = self.comm.send_recv(
            &[(next, as_bytes(&hi)), (prev, as_bytes(&lo))],
            &[prev, next],
        )?;
        let bad = || FluidError::Invalid("a field layer message has the wrong size".into());
        let from_prev: Vec<f32> = from_bytes(&got[0], got[0].len() / 4).ok_or_else(bad)?;
        let from_next: Vec<f32> = from_bytes(&got[1], got[1].len() / 4).ok_or_else(bad)?;
        let mut dims = [l.nx, l.ny, l.nz];
        dims[axis as usize] = p.below + owned + p.above;
        let ext = Lattice::new(dims[0], dims[1], dims[2]);
        let m = ext.cells();
        let mut data = vec![0f32; 4 * m];
        let mut put = |e: u32, values: &[f32]| {
            for a in 0..4 {
                for i in 0..face {
                    data[a * m + halo::face_cell(&ext, axis, e, i)] = values[a * face + i];
                }
            }
        };
        // The previous rank's last `below` layers, the owned layers, the next rank's first
        // `above` layers.
        let prev_layers = from_prev.len() / (4 * face);
        for j in 0..p.below {
            let k = prev_layers - p.below as usize + j as usize;
            put(j, &from_prev[4 * face * k..4 * face * (k + 1)]);
        }
        for k in 0..owned {
            put(p.below + k, &layer(k + 1));
        }
        for j in 0..p.above {
            let k = j as usize;
            put(
                p.below + owned + j,
                &from_next[4 * face * k..4 * face * (k + 1)],
            );
        }
        Ok(Fields { lattice: ext, data })
    }

    fn rank(&self) -> usize {
        self.comm.rank()
    }

    /// The communicator's error as a fluid error.
    fn comm_err(e: crate::ranks::CommError) -> FluidError {
        FluidError::Invalid(e.to_string())
    }

    /// Gathers `values` arrays of per-cell data (`arrays` arrays of the local lattice's cells)
    /// into the global cell order, on every rank.
    fn gather(&self, local: &[f32], arrays: usize) -> Result<Vec<f32>, FluidError> {
        let r = self.rank();
        let l = self.plan.local_lattice(r);
        let a = self.plan.axis;
        let owned = self.plan.owned(r);
        let n = l.cells();
        let mine: Vec<f32> = (0..arrays)
            .flat_map(|k| {
                (0..n)
                    .filter(move |&c| {
                        let (x, y, z) = l.coords(c);
                        (1..=owned).contains(&[x, y, z][a])
                    })
                    .map(move |c| local[k * n + c])
            })
            .collect();
        let all = self
            .comm
            .all_gather(as_bytes(&mine))
            .map_err(Self::comm_err)?;
        let g = self.plan.global.cells();
        let mut out = vec![0f32; arrays * g];
        for (peer, msg) in all.iter().enumerate() {
            let pl = self.plan.local_lattice(peer);
            let po = self.plan.owned(peer);
            let cells: Vec<usize> = (0..pl.cells())
                .filter(|&c| {
                    let (x, y, z) = pl.coords(c);
                    (1..=po).contains(&[x, y, z][a])
                })
                .map(|c| self.plan.global_cell(peer, c))
                .collect();
            let vals: Vec<f32> = from_bytes(msg, arrays * cells.len()).ok_or_else(|| {
                FluidError::Invalid(format!("rank {peer} sent a piece of the wrong size"))
            })?;
            for k in 0..arrays {
                for (i, &c) in cells.iter().enumerate() {
                    out[k * g + c] = vals[k * cells.len() + i];
                }
            }
        }
        Ok(out)
    }
}

impl FluidBackend for SlabFluid {
    fn describe(&self) -> String {
        format!(
            "{} x {} ranks (slabs along {})",
            self.inner.describe(),
            self.plan.size(),
            AXES[self.plan.axis]
        )
    }

    fn lattice(&self) -> Lattice {
        self.plan.global
    }

    fn model(&self) -> CollisionModel {
        self.inner.model()
    }

    fn storage(&self) -> StorageKind {
        self.inner.storage()
    }

    fn layout(&self) -> Layout {
        self.inner.layout()
    }

    fn streaming(&self) -> Streaming {
        self.inner.streaming()
    }

    fn step(&mut self) -> Result<(), FluidError> {
        self.comm.set_busy(true);
        let r = self.inner.step();
        self.comm.set_busy(false);
        r
    }

    fn fields(&mut self) -> Result<Fields, FluidError> {
        if let Some(periodic) = self.pieces {
            return self.piece(periodic);
        }
        self.comm.set_busy(true);
        let local = self.inner.fields();
        self.comm.set_busy(false);
        let data = self.gather(&local?.data, 4)?;
        Ok(Fields {
            lattice: self.plan.global,
            data,
        })
    }

    /// Collective: the rank owning `cell` (a global cell) reads it, every rank gets it.
    fn cell_state(&mut self, cell: usize) -> Result<(f32, [f32; 3]), FluidError> {
        let r = self.rank();
        let g = self.plan.global;
        let (x, y, z) = g.coords(cell);
        let layer = [x, y, z][self.plan.axis];
        let mut mine = Vec::new();
        if self.plan.ranges[r].contains(&layer) {
            self.comm.set_busy(true);
            let local = self.inner.fields();
            self.comm.set_busy(false);
            let local = local?;
            let mut c = [x, y, z];
            c[self.plan.axis] = layer - self.plan.ranges[r].start + 1;
            let lc = local.lattice.index(c[0], c[1], c[2]);
            let u = local.u(lc);
            mine = as_bytes(&[local.rho(lc), u[0], u[1], u[2]]).to_vec();
        }
        let all = self.comm.all_gather(&mine)?;
        let m = all
            .iter()
            .find(|m| m.len() == 16)
            .ok_or_else(|| FluidError::Invalid(format!("no rank owns cell {cell}")))?;
        Ok((f32_at(m, 0), [f32_at(m, 1), f32_at(m, 2), f32_at(m, 3)]))
    }

    fn populations(&mut self) -> Result<Vec<f32>, FluidError> {
        self.comm.set_busy(true);
        let local = self.inner.populations();
        self.comm.set_busy(false);
        self.gather(&local?, Q)
    }

    fn memory_bandwidth(&mut self) -> Result<f64, FluidError> {
        self.inner.memory_bandwidth()
    }

    fn allocated_bytes(&self) -> u64 {
        self.inner.allocated_bytes()
    }

    fn device_memory(&self) -> Option<(u64, u64)> {
        self.inner.device_memory()
    }

    fn step_count(&self) -> u64 {
        self.inner.step_count()
    }

    fn take_forces(&mut self) -> Result<Vec<super::forces::ForceSample>, FluidError> {
        self.inner.take_forces()
    }

    /// Collective: each sample's force as the rank that owns it computed it (every rank runs
    /// every sample; only the owner has all of a sample's passes).
    fn samples(&mut self) -> Result<Option<super::ib::plan::SampleSnapshot>, FluidError> {
        let Some(mut snap) = self.inner.samples()? else {
            return Ok(None);
        };
        let mine: Vec<f32> = snap.force.iter().flatten().copied().collect();
        let all = self
            .comm
            .all_gather(as_bytes(&mine))
            .map_err(Self::comm_err)?;
        let forces = all
            .iter()
            .map(|m| from_bytes::<f32>(m, mine.len()))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                FluidError::Invalid("a rank's sample forces have the wrong size".into())
            })?;
        let domains: Vec<Domain> = (0..self.plan.size())
            .map(|r| self.plan.ib_domain(r))
            .collect();
        for (i, (pos, force)) in snap.positions.iter().zip(&mut snap.force).enumerate() {
            if let Some(r) = domains.iter().position(|d| d.owns(*pos)) {
                *force = [0, 1, 2].map(|c| forces[r][3 * i + c]);
            }
        }
        Ok(Some(snap))
    }

    /// Collective: every rank gets the same report (the extremes over all ranks, the lowest
    /// global cell out of bounds), so every rank stops at the same step.
    fn health(&mut self, bounds: &Bounds) -> Result<Option<Report>, FluidError> {
        self.comm.set_busy(true);
        let local = self.inner.health(bounds);
        self.comm.set_busy(false);
        let local = local?;
        let r = self.rank();
        let bad = local
            .and_then(|l| l.first_bad)
            .map(|c| self.plan.global_cell(r, c as usize) as u64);
        let all = self
            .comm
            .all_gather(&encode_report(local, bad))
            .map_err(Self::comm_err)?;
        let mut out: Option<Report> = None;
        let mut first_bad = u64::MAX;
        for m in &all {
            if m.len() != 20 {
                return Err(FluidError::Invalid(
                    "a health message has the wrong size".into(),
                ));
            }
            let (lo, hi, ma) = (f32_at(m, 0), f32_at(m, 1), f32_at(m, 2));
            let mut b = [0u8; 8];
            b.copy_from_slice(&m[12..20]);
            first_bad = first_bad.min(u64::from_le_bytes(b));
            if hi == f32::NEG_INFINITY {
                continue;
            }
            let o = out.get_or_insert(Report {
                min_rho: lo,
                max_rho: hi,
                max_mach: ma,
                first_bad: None,
            });
            // NaN-aware: a NaN anywhere stays visible.
            o.min_rho = if lo.is_nan() { lo } else { o.min_rho.min(lo) };
            o.max_rho = if hi.is_nan() { hi } else { o.max_rho.max(hi) };
            o.max_mach = if ma.is_nan() { ma } else { o.max_mach.max(ma) };
        }
        if let Some(o) = out.as_mut() {
            o.first_bad = (first_bad != u64::MAX).then_some(first_bad as u32);
        }
        Ok(out)
    }

    fn synchronize(&mut self) -> Result<(), FluidError> {
        self.comm.set_busy(true);
        let r = self.inner.synchronize();
        self.comm.set_busy(false);
        r
    }

    fn times(&mut self) -> Result<StageTimes, FluidError> {
        self.inner.times()
    }

    fn reset_times(&mut self) {
        self.inner.reset_times()
    }

    fn set_inlet_scale(&mut self, scale: f32) {
        self.inner.set_inlet_scale(scale)
    }

    fn gpu_ms_per_step(&mut self) -> Option<f64> {
        self.inner.gpu_ms_per_step()
    }

    /// Every rank must make the same change (the commands of several ranks do not change
    /// models mid-run).
    fn set_model(&mut self, model: CollisionModel) {
        self.inner.set_model(model)
    }

    fn set_rates(&mut self, rates: murmur_common::lbm::Rates) {
        self.inner.set_rates(rates)
    }

    fn rates(&self) -> murmur_common::lbm::Rates {
        self.inner.rates()
    }

    fn advect_smoke(&mut self, _: &super::SmokeSetup) -> Result<(), FluidError> {
        Err(FluidError::Invalid(
            "smoke and frames are drawn on one GPU: run the viewer without --gpus".into(),
        ))
    }

    fn smoke(&mut self) -> Result<Vec<f32>, FluidError> {
        self.advect_smoke(&super::SmokeSetup {
            sources: Vec::new(),
            every: 1,
            keep: 1.0,
            periodic: 0,
        })
        .map(|_| Vec::new())
    }

    fn render_into(
        &mut self,
        _: &murmur_common::render::fluid::FluidFrame,
        _: f32,
        _: &mut [u8],
    ) -> Result<(), FluidError> {
        self.smoke().map(|_| ())
    }
}

/// Opens `rank`'s slab of `setup` on the CPU, exchanging through `comm`.
pub fn open_cpu_rank(
    setup: &Setup,
    plan: &SlabPlan,
    comm: Arc<dyn Comm>,
) -> Result<SlabFluid, FluidError> {
    let local = plan.local_setup(setup, comm.rank());
    let halo = CpuHalo {
        comm: comm.clone(),
        axis: plan.axis as u32,
    };
    let inner = super::cpu::open_slab(&local, halo)?;
    Ok(SlabFluid::new(inner, comm, plan.clone()))
}

/// What a run of several ranks in one process gives back (rank 0's view).
pub struct RanksResult {
    /// Decoded populations in the global cell order, `f[q * n + cell]`.
    pub populations: Vec<f32>,
    pub fields: Fields,
    /// The solids' force rows of every step (summed over the ranks).
    pub forces: Vec<super::forces::ForceSample>,
    /// The samples after the last step, each force from the rank that owns it.
    pub samples: Option<super::ib::plan::SampleSnapshot>,
    pub plan: SlabPlan,
}

/// Runs `setup` for `steps` steps on `ranks` CPU ranks in this process (threads joined by
/// memory copies: the decomposition and exchange of a multi-GPU run without GPUs).
pub fn run_cpu_ranks(setup: &Setup, ranks: usize, steps: u64) -> Result<RanksResult, FluidError> {
    let plan = SlabPlan::new(setup, ranks)?;
    let mut out = crate::ranks::local::run_ranks(ranks, |comm| -> Result<_, FluidError> {
        let comm: Arc<dyn Comm> = Arc::new(comm);
        let mut b = open_cpu_rank(setup, &plan, comm)?;
        for _ in 0..steps {
            b.step()?;
        }
        let forces = b.take_forces()?;
        let samples = b.samples()?;
        Ok((b.populations()?, b.fields()?, forces, samples))
    })?;
    let (populations, fields, forces, samples) = out.swap_remove(0);
    Ok(RanksResult {
        populations,
        fields,
        forces,
        samples,
        plan,
    })
}
