//! The CPU reference fluid: the GPU's stage, one for one, on all cores (rayon), calling the same
//! `murmur_common::lbm::stream_collide_cell` the kernels call. Results equal the GPU's up to
//! floating-point contraction and summation order (the same order is used on both).

use super::{Fields, FluidBackend, FluidError, Setup};
use crate::timing::{stage, StageTimes};
use murmur_common::lbm::{
    initial_populations, store_populations, stream_collide_cell, CollisionModel, Lattice,
    LbmParams, ACM_MRT, BGK, Q, RM_MRT,
};
use rayon::prelude::*;

/// Cells per rayon task (a few z-rows: big enough to amortise scheduling).
const CHUNK: usize = 4096;

/// CPU fluid with two population buffers (pull scheme, ping-pong) allocated once.
pub struct CpuFluid {
    model: CollisionModel,
    params: LbmParams,
    flags: Vec<u8>,
    f_src: Vec<f32>,
    f_dst: Vec<f32>,
    fields: Vec<f32>,
    times: StageTimes,
}

/// A raw pointer that rayon tasks may share: every task writes disjoint cells.
#[derive(Clone, Copy)]
struct SharedMut(*mut f32);
// SAFETY: used only for writes to disjoint cells (see `stream_collide_cell`'s contract).
unsafe impl Send for SharedMut {}
unsafe impl Sync for SharedMut {}

impl CpuFluid {
    pub fn new(setup: &Setup) -> Result<CpuFluid, FluidError> {
        let n = setup.lattice().cells();
        if setup.flags.len() != n || setup.init.data.len() != 4 * n {
            return Err(FluidError::Invalid(format!(
                "setup sizes disagree: {} cells, {} flags, {} field values",
                n,
                setup.flags.len(),
                setup.init.data.len()
            )));
        }
        let mut f = vec![0.0f32; Q * n];
        let ptr = SharedMut(f.as_mut_ptr());
        let init = &setup.init;
        (0..n).into_par_iter().with_min_len(CHUNK).for_each(|cell| {
            let eq = initial_populations(init.rho(cell), init.u(cell));
            let p = ptr;
            // SAFETY: `f` holds 27 n floats; each cell writes only its own slots.
            unsafe { store_populations(p.0, n, cell, &eq) };
        });
        Ok(CpuFluid {
            model: setup.model,
            params: setup.params,
            flags: setup.prepared_flags(),
            f_dst: f.clone(),
            f_src: f,
            fields: setup.init.data.clone(),
            times: StageTimes::default(),
        })
    }

    fn stream_collide<const MODEL: u32>(&mut self, params: &LbmParams) {
        let n = params.lattice.cells();
        let flags = self.flags.as_ptr() as usize;
        let src = self.f_src.as_ptr() as usize;
        let dst = SharedMut(self.f_dst.as_mut_ptr());
        let fields = SharedMut(self.fields.as_mut_ptr());
        (0..n.div_ceil(CHUNK)).into_par_iter().for_each(|chunk| {
            let (dst, fields) = (dst, fields);
            for cell in chunk * CHUNK..((chunk + 1) * CHUNK).min(n) {
                // SAFETY: buffers are sized for the lattice (checked in `new`), `src` and `dst`
                // are different buffers, each cell writes only its own slots.
                unsafe {
                    stream_collide_cell::<MODEL>(
                        params,
                        cell,
                        flags as *const u8,
                        src as *const f32,
                        dst.0,
                        fields.0,
                    )
                };
            }
        });
    }
}

impl FluidBackend for CpuFluid {
    fn describe(&self) -> String {
        format!("cpu (rayon, {} threads)", rayon::current_num_threads())
    }

    fn lattice(&self) -> Lattice {
        self.params.lattice
    }

    fn model(&self) -> CollisionModel {
        self.model
    }

    fn step(&mut self, store_fields: bool) -> Result<(), FluidError> {
        let mut p = self.params;
        p.store_fields = store_fields as u32;
        let mut times = std::mem::take(&mut self.times);
        stage(&mut times, "stream_collide", || match self.model {
            CollisionModel::Bgk => self.stream_collide::<BGK>(&p),
            CollisionModel::RmMrt => self.stream_collide::<RM_MRT>(&p),
            CollisionModel::AcmMrt => self.stream_collide::<ACM_MRT>(&p),
        });
        times.steps += 1;
        self.times = times;
        std::mem::swap(&mut self.f_src, &mut self.f_dst);
        Ok(())
    }

    fn fields(&mut self) -> Result<Fields, FluidError> {
        Ok(Fields {
            lattice: self.params.lattice,
            data: self.fields.clone(),
        })
    }

    fn populations(&mut self) -> Result<Vec<f32>, FluidError> {
        Ok(self.f_src.clone())
    }

    fn memory_bandwidth(&mut self) -> Result<f64, FluidError> {
        let bytes = 2.0 * 4.0 * self.f_src.len() as f64;
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let t0 = std::time::Instant::now();
            self.f_dst
                .par_chunks_mut(1 << 16)
                .zip(self.f_src.par_chunks(1 << 16))
                .for_each(|(d, s)| d.copy_from_slice(s));
            best = best.min(t0.elapsed().as_secs_f64());
        }
        Ok(bytes / best)
    }

    fn times(&mut self) -> Result<StageTimes, FluidError> {
        Ok(self.times.clone())
    }

    fn reset_times(&mut self) {
        self.times.reset();
    }
}
