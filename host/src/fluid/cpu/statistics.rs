//! The CPU's turbulence statistics: the kernel's per-cell sample
//! ([`murmur_common::lbm::statistics`]) over the thread pool. Whole fields add each cell into
//! its own sums; profiles sum fixed chunks of cells into partial sums, added in chunk order,
//! so a run gives the same bits on any number of threads.

use super::{view, view_mut, CpuFluid, Shared, CHUNK};
use crate::fluid::statistics::Accumulate;
use crate::fluid::FluidError;
use murmur_common::lbm::statistics::{add_own, cell_sample, Reduce, Statistics, NO_KEY, VALUES};
use murmur_common::lbm::Storage;
use rayon::prelude::*;

/// The keys and the sums (`VALUES x keys`, value-major).
pub(super) struct CpuStats {
    reduce: Reduce,
    sums: Vec<f64>,
}

impl<S: Storage> Accumulate for CpuFluid<S> {
    fn begin(&mut self, reduce: Reduce, from: Option<&[f64]>) -> Result<(), FluidError> {
        let n = VALUES * reduce.keys();
        let sums = match from {
            Some(v) if v.len() == n => v.to_vec(),
            Some(v) => {
                return Err(FluidError::WrongSize {
                    what: format!("statistics sums: {} values, expected {n}", v.len()),
                })
            }
            None => vec![0.0; n],
        };
        self.stats = Some(CpuStats { reduce, sums });
        Ok(())
    }

    fn sample(&mut self) -> Result<(), FluidError> {
        let pops = self.now();
        let band = self.band_ref();
        let Some(st) = self.stats.as_mut() else {
            return Err(FluidError::Invalid(
                "statistics sampled before begin".into(),
            ));
        };
        let reduce = st.reduce;
        let keys = reduce.keys();
        let a = Shared(Statistics {
            p: self.params,
            pops,
            reduce,
            flags: view(&self.flags),
            f: view(&self.f),
            band,
            sums: view_mut(&mut st.sums),
        });
        let n = self.params.lattice.cells();
        if reduce.is_fields() {
            (0..n).into_par_iter().with_min_len(CHUNK).for_each(|c| {
                let a = &a;
                // SAFETY: the buffers hold the lattice's cells; each cell writes its own key's
                // sums (the key is the cell), nothing else writes meanwhile.
                unsafe {
                    let (key, values) = cell_sample(&a.0, c);
                    if key != NO_KEY {
                        add_own(&a.0, key, &values);
                    }
                }
            });
            return Ok(());
        }
        // Fixed chunks, at most about 256 of them (each holds a partial sum of every key).
        let chunk = CHUNK.max(n.div_ceil(256));
        let partials: Vec<Vec<f64>> = (0..n.div_ceil(chunk))
            .into_par_iter()
            .map(|i| {
                let a = &a;
                let mut part = vec![0.0; VALUES * keys];
                for c in i * chunk..((i + 1) * chunk).min(n) {
                    // SAFETY: as above; the sample only reads.
                    let (key, values) = unsafe { cell_sample(&a.0, c) };
                    if key != NO_KEY {
                        for (v, x) in values.iter().enumerate() {
                            part[v * keys + key as usize] += x;
                        }
                    }
                }
                part
            })
            .collect();
        for part in partials {
            for (s, p) in st.sums.iter_mut().zip(part) {
                *s += p;
            }
        }
        Ok(())
    }

    fn sums(&mut self) -> Result<Vec<f64>, FluidError> {
        match &self.stats {
            Some(st) => Ok(st.sums.clone()),
            None => Err(FluidError::Invalid("statistics read before begin".into())),
        }
    }
}
