//! The CPU reference fluid: the GPU's stage, one for one, on all cores (rayon), calling the same
//! `murmur_common::lbm::stream_collide_cell` the kernels call. Results equal the GPU's up to
//! floating-point contraction and summation order (the same order is used on both).

use super::{Fields, FluidBackend, FluidError, Setup};
use crate::timing::{stage, StageTimes};
use murmur_common::lbm::abi::{Init, StreamCollide};
use murmur_common::lbm::{
    init_cell, stream_collide_cell, CollisionModel, Lattice, LbmParams, Model, Populations,
};
use murmur_common::{with_model, DevSlice, DevSliceMut};
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

/// Kernel arguments over host buffers that rayon tasks may share: every task writes disjoint
/// cells (the contract of `stream_collide_cell` and `init_cell`).
#[derive(Clone, Copy)]
struct Shared<A>(A);
// SAFETY: see above; the buffers outlive the parallel loop that uses the arguments.
unsafe impl<A> Send for Shared<A> {}
unsafe impl<A> Sync for Shared<A> {}

fn view<T>(v: &[T]) -> DevSlice<T> {
    // SAFETY: the slice's memory, for as long as the caller keeps it borrowed.
    unsafe { DevSlice::from_raw(v.as_ptr(), v.len() as u64) }
}

fn view_mut<T>(v: &mut [T]) -> DevSliceMut<T> {
    // SAFETY: as `view`, written only through the returned view meanwhile.
    unsafe { DevSliceMut::from_raw(v.as_mut_ptr(), v.len() as u64) }
}

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
        let lattice = setup.lattice();
        let mut f = vec![0.0f32; Populations::new(lattice).len()];
        let init = Shared(Init {
            lattice,
            _pad: 0,
            fields: view(&setup.init.data),
            f: view_mut(&mut f),
        });
        (0..n).into_par_iter().with_min_len(CHUNK).for_each(|cell| {
            let a = &init;
            // SAFETY: the buffers are sized for the lattice (checked above); each cell writes
            // only its own slots.
            unsafe { init_cell(&a.0, cell) };
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

    /// Stage `stream_collide` of model `M` over every cell: the same arguments and cell
    /// function as the GPU's kernels.
    fn stream_collide<M: Model>(&mut self, params: LbmParams) {
        let n = params.lattice.cells();
        let step = Shared(StreamCollide::<M>::new(
            params,
            view(&self.flags),
            view(&self.f_src),
            view_mut(&mut self.f_dst),
            view_mut(&mut self.fields),
        ));
        (0..n.div_ceil(CHUNK)).into_par_iter().for_each(|chunk| {
            let a = &step;
            for cell in chunk * CHUNK..((chunk + 1) * CHUNK).min(n) {
                // SAFETY: buffers are sized for the lattice (checked in `new`), `src` and `dst`
                // are different buffers, each cell writes only its own slots.
                unsafe { stream_collide_cell(&a.0, cell) };
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
        stage(
            &mut times,
            "stream_collide",
            || with_model!(self.model, M => self.stream_collide::<M>(p)),
        );
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

    fn set_inlet_scale(&mut self, scale: f32) {
        self.params.inlet_scale = scale;
    }
}
