//! The air a CUDA flock rides: the fluid's velocity fields before and after a fluid step, on the
//! flock's GPU, and which cells are fluid. Filled from host [`Fields`] or straight from a CUDA
//! fluid's device fields ([`RawBuffer`], `FluidBackend::device_fields`), copied on the device, or
//! computed by a CUDA fluid straight into a level (`FluidBackend::fields_into`, [`AirFields::level_mut`]).

use super::CudaBoidsError;
use crate::fluid::{Fields, Setup};
use crate::gpu::exposed::RawBuffer;
use crate::gpu::{DriverContext, Gpu};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtrMut};
use murmur_common::lbm::boundary::CellKind;
use murmur_common::lbm::ib::stencil::Domain;
use std::sync::Arc;

/// Which of the two time levels of a fluid step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// The fields at the start of the fluid step.
    Before,
    /// The fields at its end.
    After,
}

impl Level {
    fn index(self) -> usize {
        match self {
            Level::Before => 0,
            Level::After => 1,
        }
    }
}

/// The fields of one fluid step on the GPU (16 B per cell each, the fluid's `Fields` layout
/// `[rho; n] ++ [ux; n] ++ [uy; n] ++ [uz; n]`) and a byte per cell, 1 where the cell is fluid:
/// 33 B per cell in all.
pub struct AirFields {
    pub(super) domain: Domain,
    pub(super) fluid: CudaSlice<u8>,
    /// Before and after the fluid step.
    pub(super) fields: [CudaSlice<f32>; 2],
    /// Whether each level has been filled.
    filled: [bool; 2],
}

impl AirFields {
    /// Device bytes of the air over `cells` cells.
    pub fn bytes(cells: u64) -> u64 {
        cells * (2 * 16 + 1)
    }

    /// The air over `domain` (its lattice and which axes wrap), `fluid[cell]` true at the fluid
    /// nodes, on `gpu` (the flock's: [`super::CudaBoids::gpu`]); both levels unset.
    pub fn new(gpu: &Gpu, domain: Domain, fluid: &[bool]) -> Result<AirFields, CudaBoidsError> {
        let cells = domain.lattice.cells();
        if fluid.len() != cells {
            return Err(CudaBoidsError::MaskSize {
                got: fluid.len(),
                cells,
            });
        }
        gpu.check_fits(
            &format!("the air of a flock over {cells} cells"),
            AirFields::bytes(cells as u64),
        )?;
        let mask: Vec<u8> = fluid.iter().map(|&f| f as u8).collect();
        Ok(AirFields {
            domain,
            fluid: gpu.upload(&mask)?,
            fields: [gpu.zeros(4 * cells)?, gpu.zeros(4 * cells)?],
            filled: [false; 2],
        })
    }

    /// The air of the fluid of `setup`, as the CPU ride takes it (`Riding`): its lattice and
    /// periodic axes, its fluid cells.
    pub fn for_setup(gpu: &Gpu, setup: &Setup) -> Result<AirFields, CudaBoidsError> {
        let fluid: Vec<bool> = setup
            .flags
            .iter()
            .map(|&b| CellKind::from_u8(b) == CellKind::Fluid)
            .collect();
        AirFields::new(
            gpu,
            Domain::new(setup.lattice(), setup.immersed.periodic),
            &fluid,
        )
    }

    /// The domain the fields cover.
    pub fn domain(&self) -> Domain {
        self.domain
    }

    /// Whether both levels hold fields.
    pub fn is_ready(&self) -> bool {
        self.filled == [true; 2]
    }

    /// Copies host `fields` into `level`.
    pub fn upload(&mut self, level: Level, fields: &Fields) -> Result<(), CudaBoidsError> {
        let cells = self.domain.lattice.cells();
        if fields.lattice != self.domain.lattice || fields.data.len() != 4 * cells {
            return Err(CudaBoidsError::FieldsSize {
                got: fields.data.len() * 4,
                want: 16 * cells,
                cells,
            });
        }
        let buf = &mut self.fields[level.index()];
        let stream = buf.stream().clone();
        stream
            .memcpy_htod(&fields.data, buf)
            .ctx("uploading the air's fields")?;
        self.filled[level.index()] = true;
        Ok(())
    }

    /// Copies a CUDA fluid's device fields (`FluidBackend::device_fields`) into `level` on the
    /// GPU: the copy waits for the fluid's writes queued so far, and the fluid's later work
    /// waits for the copy (its next step may overwrite the buffer).
    pub fn copy_from(&mut self, level: Level, raw: &RawBuffer) -> Result<(), CudaBoidsError> {
        let cells = self.domain.lattice.cells();
        if raw.bytes != 16 * cells {
            return Err(CudaBoidsError::FieldsSize {
                got: raw.bytes,
                want: 16 * cells,
                cells,
            });
        }
        let buf = &mut self.fields[level.index()];
        let stream: Arc<CudaStream> = buf.stream().clone();
        let ours = stream.context().ordinal();
        if raw.device() != ours {
            return Err(CudaBoidsError::Device {
                fields: raw.device(),
                boids: ours,
            });
        }
        let foreign = !Arc::ptr_eq(&raw.stream, &stream);
        if foreign {
            stream
                .join(&raw.stream)
                .ctx("waiting for the fluid's fields")?;
        }
        stream
            .context()
            .bind_to_thread()
            .ctx("binding the flock's context")?;
        {
            let (dst, _record) = buf.device_ptr_mut(&stream);
            // SAFETY: `dst` holds `16 * cells` bytes (allocated so in `new`), `raw` as many (checked
            // above) on the same device, valid until the fluid's next step, which the join below
            // orders after this copy.
            unsafe {
                cudarc::driver::result::memcpy_dtod_async(
                    dst,
                    raw.ptr,
                    raw.bytes,
                    stream.cu_stream(),
                )
            }
            .ctx("copying the fluid's fields")?;
        }
        if foreign {
            raw.stream
                .join(&stream)
                .ctx("ordering the fluid after the copy")?;
        }
        self.filled[level.index()] = true;
        Ok(())
    }

    /// The buffer of `level`, for a CUDA fluid to compute its fields into
    /// (`FluidBackend::fields_into`); [`AirFields::written`] then.
    pub fn level_mut(&mut self, level: Level) -> &mut CudaSlice<f32> {
        &mut self.fields[level.index()]
    }

    /// `level` was written on `writer` (a CUDA fluid's stream, on the flock's GPU): the
    /// flock's work queued later waits for it.
    pub fn written(
        &mut self,
        level: Level,
        writer: &Arc<CudaStream>,
    ) -> Result<(), CudaBoidsError> {
        let stream = self.fields[level.index()].stream().clone();
        if writer.context().ordinal() != stream.context().ordinal() {
            return Err(CudaBoidsError::Device {
                fields: writer.context().ordinal(),
                boids: stream.context().ordinal(),
            });
        }
        if !Arc::ptr_eq(writer, &stream) {
            stream.join(writer).ctx("waiting for the fluid's fields")?;
        }
        self.filled[level.index()] = true;
        Ok(())
    }

    /// The next fluid step: the fields after this one become those before it (the after level
    /// is then unset until filled again).
    pub fn advance(&mut self) {
        self.fields.swap(0, 1);
        self.filled = [self.filled[1], false];
    }

    /// The GPU ordinal the fields live on.
    pub(super) fn ordinal(&self) -> usize {
        self.fluid.stream().context().ordinal()
    }
}
