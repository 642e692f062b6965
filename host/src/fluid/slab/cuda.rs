//! A slab's face exchange on the GPU: the face layers packed and unpacked by kernels on the
//! communicator's stream, the transfers through NCCL, beside the middle layers' update.

use crate::fluid::FluidError;
use crate::ranks::Comm;
use murmur_common::lbm::abi::{BandHalo, Halo};
use murmur_common::lbm::halo::{face_cells, BAND_VALUES, CROSSING};
use murmur_common::lbm::{Lattice, Populations, Storage};
use std::sync::Arc;

use super::*;

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
    /// The fork: the exchange stream waits for the work queued on `gpu`'s stream so far (the
    /// face layers' update).
    pub fn fork(&self, gpu: &crate::gpu::Gpu) -> Result<(), FluidError> {
        use crate::gpu::DriverContext;
        Ok(self
            .comm
            .stream
            .join(&gpu.stream)
            .ctx("ordering the exchange after the faces")?)
    }

    /// The join: `gpu`'s stream waits for the exchange (the next step's face layers read the
    /// ghost layers).
    pub fn join(&self, gpu: &crate::gpu::Gpu) -> Result<(), FluidError> {
        use crate::gpu::DriverContext;
        Ok(gpu
            .stream
            .join(&self.comm.stream)
            .ctx("ordering the next step after the exchange")?)
    }

    /// Packs the face layers of `f` and enqueues the transfers on the exchange stream (after
    /// the fork); `f`'s stream goes on at once (the middle layers update meanwhile: they touch
    /// neither the face layers nor the ghost layers).
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
    /// no ghost layer); the join orders `f`'s stream after it.
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
        let l = pops.lattice;
        let owned = extent(&l, self.axis as usize) - 2;
        let stream = self.comm.stream.clone();
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
            .map_err(FluidError::from)
    }

    fn unpack(
        &mut self,
        gpu: &crate::gpu::Gpu,
        pops: &Populations<S>,
        f: &mut cudarc::driver::CudaSlice<S::Elem>,
    ) -> Result<(), FluidError> {
        let owned = extent(&pops.lattice, self.axis as usize) - 2;
        let stream = self.comm.stream.clone();
        let faces = [(0, 1, &mut self.lo), (owned + 1, -1, &mut self.hi)];
        launch_faces(gpu, &stream, pops, f, self.axis, faces, |halo| {
            murmur_common::lbm::abi::HaloUnpack { halo }
        })
    }
}

impl<S: Storage> CudaHalo<S> {
    /// Exchanges the band values (`rho, u*`) of the face layers into the ghost layers' band
    /// cells, before a multi-direct-forcing pass ([`halo::band_pack`]): packed, sent and
    /// unpacked on the exchange stream, after the work queued on the band so far (the next
    /// stage that reads the band waits for it).
    pub(crate) fn exchange_band(
        &mut self,
        gpu: &crate::gpu::Gpu,
        lattice: &Lattice,
        faces: [bool; 2],
        band: &mut crate::fluid::cuda::BandBuffers,
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
        let axis = self.axis;
        for (layer, buf, on) in [(owned, &mut *up, upper), (1, &mut *down, lower)] {
            if on {
                // SAFETY: one thread per face cell, reading its band values into its own
                // buffer entries; the buffer holds 4 values per face cell.
                unsafe {
                    band_face(gpu, &stream, shape, band, buf, axis, layer, |halo| {
                        murmur_common::lbm::abi::BandPack { halo }
                    })
                }?;
            }
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
            .map_err(FluidError::from)?;
        for (layer, buf, on) in [(0, &mut *lo, lower), (owned + 1, &mut *hi, upper)] {
            if on {
                // SAFETY: one thread per ghost-layer cell, writing only its own band values.
                unsafe {
                    band_face(gpu, &stream, shape, band, buf, axis, layer, |halo| {
                        murmur_common::lbm::abi::BandUnpack { halo }
                    })
                }?;
            }
        }
        Ok(())
    }
}

/// Launches `wrap` of the band halo of face `layer` on `stream` (the band's values packed into
/// `buf`, or unpacked from it).
///
/// # Safety
/// As the kernel `wrap` makes: one thread per face cell, `buf` 4 values per face cell.
#[allow(clippy::too_many_arguments)]
unsafe fn band_face<K: murmur_common::Kernel + cudarc::driver::DeviceRepr>(
    gpu: &crate::gpu::Gpu,
    stream: &Arc<cudarc::driver::CudaStream>,
    shape: crate::gpu::Shape,
    band: &mut crate::fluid::cuda::BandBuffers,
    buf: &mut cudarc::driver::CudaSlice<f32>,
    axis: u32,
    layer: u32,
    wrap: fn(BandHalo) -> K,
) -> Result<(), FluidError> {
    // SAFETY: the caller's contract.
    unsafe {
        gpu.launch_on(stream)
            .run(shape, (band, buf), |l, (band, buf)| {
                wrap(BandHalo {
                    band: band.views(l),
                    buf: l.write(buf),
                    axis,
                    layer,
                })
            })
    }?;
    Ok(())
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
        let pops = *pops;
        // SAFETY: ordered by the fork and the join (above); one thread per face cell, touching
        // its own 9 slots and buffer entries; the buffer holds 9 values per face cell.
        unsafe {
            gpu.launch_beside(stream).run(
                crate::gpu::Shape::per_item(n as u64, 128),
                (&mut *f, buf),
                |l, (f, buf)| {
                    wrap(Halo {
                        pops,
                        f: l.write(f),
                        buf: l.write(buf),
                        axis,
                        layer,
                        sign,
                        _pad: 0,
                    })
                },
            )
        }?;
    }
    Ok(())
}
