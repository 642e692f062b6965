//! The CUDA backend's pushes (impulses from a layer above the fluid,
//! `murmur_common::lbm::ib::push`): their device buffers, filled from the host or from other
//! device buffers (the GPU flock's), and the stages `push_mark`, `push_spread` and `push_apply`
//! on the immersed boundary's band.

use super::ib::BandBuffers;
use super::BLOCK_SIZE;
use crate::fluid::FluidError;
use crate::gpu::exposed::RawBuffer;
use crate::gpu::{DriverContext, Gpu, Shape, Views};
use cudarc::driver::CudaSlice;
use murmur_common::lbm::ib::push::{PushPoints, PushSpread, Pushes};
use murmur_common::lbm::ib::stencil::Domain;

/// `raw` copied to the start of `buf` on `stream` (after it joined the writer's stream).
fn copy_raw<T>(
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    buf: &mut CudaSlice<T>,
    raw: &RawBuffer,
) -> Result<(), FluidError> {
    use cudarc::driver::DevicePtrMut;
    let (dst, _record) = buf.device_ptr_mut(stream);
    // SAFETY: `buf` holds at least `raw.bytes` (the room was checked by the caller), `raw` as
    // many on the same device; the writer's stream was joined, and the writer waits for the
    // fluid's step before it writes them again.
    unsafe {
        cudarc::driver::result::memcpy_dtod_async(dst, raw.ptr, raw.bytes, stream.cu_stream())
    }
    .ctx("copying the pushes")?;
    Ok(())
}

/// The pushes of the next step on the device.
pub(super) struct CudaPushes {
    /// Positions (lattice coordinates) and three fixed-point totals per push.
    pos: CudaSlice<[f32; 3]>,
    total: CudaSlice<u64>,
    /// Pushes the next step applies (0 after it).
    count: u32,
    /// Room.
    most: u32,
}

impl CudaPushes {
    pub(super) fn new(gpu: &Gpu, most: u32) -> Result<CudaPushes, FluidError> {
        Ok(CudaPushes {
            pos: gpu.zeros(most as usize)?,
            total: gpu.zeros(3 * most as usize)?,
            count: 0,
            most,
        })
    }

    /// Pushes the next step applies.
    pub(super) fn count(&self) -> u32 {
        self.count
    }

    fn check(&self, n: usize, totals: usize) -> Result<(), FluidError> {
        if totals != 3 * n || n > self.most as usize {
            return Err(FluidError::Invalid(format!(
                "{n} pushes with {totals} totals for room of {}",
                self.most
            )));
        }
        Ok(())
    }

    /// The next step's pushes from the host.
    pub(super) fn upload(
        &mut self,
        gpu: &Gpu,
        pos: &[[f32; 3]],
        total: &[u64],
    ) -> Result<(), FluidError> {
        self.check(pos.len(), total.len())?;
        if !pos.is_empty() {
            let s = &gpu.stream;
            s.memcpy_htod(pos, &mut self.pos.slice_mut(..pos.len()))
                .ctx("uploading the pushes' positions")?;
            s.memcpy_htod(total, &mut self.total.slice_mut(..total.len()))
                .ctx("uploading the pushes' totals")?;
        }
        self.count = pos.len() as u32;
        Ok(())
    }

    /// The next step's pushes copied on the device from `pos` (12 bytes per push) and `total`
    /// (24 bytes per push), written on their own stream, which this copy waits for.
    pub(super) fn copy_from(
        &mut self,
        gpu: &Gpu,
        pos: &RawBuffer,
        total: &RawBuffer,
    ) -> Result<(), FluidError> {
        let n = pos.bytes / 12;
        if pos.bytes != 12 * n || total.bytes != 24 * n {
            return Err(FluidError::Invalid(format!(
                "pushes of {} position bytes and {} total bytes",
                pos.bytes, total.bytes
            )));
        }
        self.check(n, 3 * n)?;
        if pos.device() != gpu.ctx.ordinal() || total.device() != gpu.ctx.ordinal() {
            return Err(FluidError::Invalid(
                "the pushes are on another GPU than the fluid".into(),
            ));
        }
        let stream = &gpu.stream;
        for raw in [pos, total] {
            if !std::sync::Arc::ptr_eq(&raw.stream, stream) {
                stream
                    .join(&raw.stream)
                    .ctx("waiting for the pushes' writer")?;
            }
        }
        stream
            .context()
            .bind_to_thread()
            .ctx("binding the fluid's context")?;
        copy_raw(stream, &mut self.pos, pos)?;
        copy_raw(stream, &mut self.total, total)?;
        self.count = n as u32;
        Ok(())
    }

    /// The views of `push_mark` and `push_spread` in a launch: the pushes of the next step and
    /// the band they join.
    fn points<'b>(
        &'b self,
        l: &mut Views<'b>,
        domain: Domain,
        flags: &'b CudaSlice<u8>,
        band: &'b mut BandBuffers,
    ) -> PushPoints {
        let n = self.count as u64;
        PushPoints {
            domain,
            flags: l.read(flags),
            pushes: Pushes {
                pos: l.read_cast(&self.pos).prefix(n),
                total: l.read(&self.total).prefix(3 * n),
            },
            band: band.views(l),
        }
    }

    /// Stage `push_mark`.
    pub(super) fn mark(
        &mut self,
        gpu: &Gpu,
        domain: Domain,
        flags: &CudaSlice<u8>,
        band: &mut BandBuffers,
    ) -> Result<(), FluidError> {
        if self.count == 0 {
            return Ok(());
        }
        let shape = Shape::per_item(self.count as u64, BLOCK_SIZE);
        // SAFETY: one thread per push; claims are atomic.
        unsafe {
            gpu.launch()
                .run(shape, band, |l, band| self.points(l, domain, flags, band))
        }?;
        Ok(())
    }

    /// Stage `push_spread`.
    pub(super) fn spread(
        &mut self,
        gpu: &Gpu,
        domain: Domain,
        flags: &CudaSlice<u8>,
        band: &mut BandBuffers,
    ) -> Result<(), FluidError> {
        if self.count == 0 {
            return Ok(());
        }
        let shape = Shape::per_item(self.count as u64, BLOCK_SIZE);
        // SAFETY: one thread per push; the band's sums take atomic adds.
        unsafe {
            gpu.launch().run(shape, band, |l, band| PushSpread {
                points: self.points(l, domain, flags, band),
            })
        }?;
        // The pushes are spent: the band's sums hold them for the stream-collide step.
        self.count = 0;
        Ok(())
    }
}
