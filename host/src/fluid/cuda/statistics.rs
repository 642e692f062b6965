//! The GPU's turbulence statistics: `lbm_statistics_*` adds a sample of every fluid cell into
//! the sums on the device ([`murmur_common::lbm::statistics`]); the host reads them back for
//! the outputs and the checkpoints only.

use super::{CudaFluid, BLOCK_SIZE};
use crate::fluid::statistics::Accumulate;
use crate::fluid::FluidError;
use crate::gpu::Shape;
use cudarc::driver::CudaSlice;
use murmur_common::lbm::ib::band::BandRef;
use murmur_common::lbm::statistics::{Reduce, Statistics, VALUES};
use murmur_common::lbm::Storage;

/// The keys and the device sums (`VALUES x keys`, value-major).
pub(super) struct CudaStats {
    reduce: Reduce,
    sums: CudaSlice<f64>,
}

impl<S: Storage> Accumulate for CudaFluid<S>
where
    S::Elem: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits,
    Statistics<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
{
    fn begin(&mut self, reduce: Reduce, from: Option<&[f64]>) -> Result<(), FluidError> {
        let n = VALUES * reduce.keys();
        let sums = match from {
            Some(v) if v.len() == n => self.gpu.upload(v)?,
            Some(v) => {
                return Err(FluidError::WrongSize {
                    what: format!("statistics sums: {} values, expected {n}", v.len()),
                })
            }
            None => self.gpu.zeros(n)?,
        };
        self.stats = Some(CudaStats { reduce, sums });
        Ok(())
    }

    fn sample(&mut self) -> Result<(), FluidError> {
        let (p, pops) = (self.params, self.now());
        let n = p.lattice.cells() as u64;
        let Self {
            gpu,
            lat,
            ib,
            stats,
            ..
        } = self;
        let Some(st) = stats.as_mut() else {
            return Err(FluidError::Invalid(
                "statistics sampled before begin".into(),
            ));
        };
        let reduce = st.reduce;
        // SAFETY: one thread per cell reading the populations; a field's cell writes its own
        // sums, a profile's sums are added atomically.
        unsafe {
            gpu.launch()
                .run(Shape::per_item(n, BLOCK_SIZE), &mut st.sums, |l, sums| {
                    Statistics {
                        p,
                        pops,
                        reduce,
                        flags: l.read(&lat.flags),
                        f: l.read(&lat.f),
                        band: ib.as_ref().map_or(BandRef::NONE, |ib| ib.band_ref(l)),
                        sums: l.write(sums),
                    }
                })
        }?;
        Ok(())
    }

    fn sums(&mut self) -> Result<Vec<f64>, FluidError> {
        match &self.stats {
            Some(st) => Ok(self.gpu.download(&st.sums)?),
            None => Err(FluidError::Invalid("statistics read before begin".into())),
        }
    }
}
