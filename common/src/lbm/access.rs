//! The population-access layer: the one place that knows where population `q` of a cell lives.
//!
//! Every CPU and GPU path reads and writes populations through [`Populations`]: the CPU
//! reference, the kernels, initialisation and the backends' downloads. Storage today is one
//! structure-of-arrays buffer per time level (`f[q * cells + cell]`, see [`super::layout`]),
//! read by the pull scheme from the previous step's buffer and written to the other one; a
//! different layout or an in-place streaming scheme changes this file, not its callers.

use super::d3q27::{opposite, velocity, Q};
use super::Lattice;
use crate::kernel::{DevSlice, DevSliceMut};

/// How the populations of a lattice are stored. `#[repr(C)]`: kernels receive it inside their
/// parameters.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Populations {
    pub lattice: Lattice,
}

impl Populations {
    #[inline(always)]
    pub const fn new(lattice: Lattice) -> Self {
        Populations { lattice }
    }

    /// Floats one time level holds: `27 * cells`.
    #[inline(always)]
    pub const fn len(&self) -> usize {
        Q * self.lattice.cells()
    }

    /// Whether the lattice has no cells.
    #[inline(always)]
    pub const fn is_empty(&self) -> bool {
        self.lattice.cells() == 0
    }

    /// Index of population `q` of `cell` within a time level.
    #[inline(always)]
    pub const fn index(&self, q: usize, cell: usize) -> usize {
        q * self.lattice.cells() + cell
    }

    /// Population `q` that `cell` itself holds (its post-collision value of the last step).
    ///
    /// # Safety
    /// `f` holds [`Populations::len`] floats and `cell < cells`.
    #[inline(always)]
    pub unsafe fn own(&self, f: DevSlice<f32>, q: usize, cell: usize) -> f32 {
        f.read(self.index(q, cell))
    }

    /// All 27 populations `cell` holds.
    ///
    /// # Safety
    /// As [`Populations::own`].
    #[inline(always)]
    pub unsafe fn own_all(&self, f: DevSlice<f32>, cell: usize) -> [f32; Q] {
        let mut out = [0.0f32; Q];
        for_q!(q => {
            out[q] = self.own(f, q, cell);
        });
        out
    }

    /// The population arriving at `cell` along `c_q` when its neighbour `x - c_q` is fluid: the
    /// value that neighbour (cell number `from`) holds.
    ///
    /// # Safety
    /// As [`Populations::own`], with `from < cells`.
    #[inline(always)]
    pub unsafe fn streamed(&self, f: DevSlice<f32>, q: usize, from: usize) -> f32 {
        f.read(self.index(q, from))
    }

    /// The population leaving `cell` toward a wall along `-c_q`, which bounce-back turns into
    /// the one arriving along `c_q`.
    ///
    /// # Safety
    /// As [`Populations::own`].
    #[inline(always)]
    pub unsafe fn reflected(&self, f: DevSlice<f32>, q: usize, cell: usize) -> f32 {
        self.own(f, opposite(q), cell)
    }

    /// The 27 populations arriving at `cell` when every neighbour is fluid (pull scheme, periodic
    /// wrap).
    ///
    /// # Safety
    /// As [`Populations::own`].
    #[inline(always)]
    pub unsafe fn pull(&self, f: DevSlice<f32>, cell: usize) -> [f32; Q] {
        let o = self.lattice.pull_offsets(cell);
        let mut out = [0.0f32; Q];
        for_q!(q => {
            out[q] = self.streamed(f, q, neighbour(&o, q));
        });
        out
    }

    /// Stores the 27 post-collision populations of `cell`.
    ///
    /// # Safety
    /// `f` holds [`Populations::len`] floats, `cell < cells`, and no other thread writes
    /// `cell`'s populations meanwhile (calls for different cells may run concurrently).
    #[inline(always)]
    pub unsafe fn store(&self, f: DevSliceMut<f32>, cell: usize, values: &[f32; Q]) {
        for_q!(q => {
            f.write(self.index(q, cell), values[q]);
        });
    }
}

/// Cell number of `x - c_q` from the per-axis offsets of [`Lattice::pull_offsets`].
#[inline(always)]
pub fn neighbour(o: &[[u32; 3]; 3], q: usize) -> usize {
    let c = velocity(q);
    (o[0][(c[0] + 1) as usize] + o[1][(c[1] + 1) as usize] + o[2][(c[2] + 1) as usize]) as usize
}

/// Cell number of `x - c_q` without the components of `c_q` along the axes of bit mask `axes`
/// (bit `a` for axis `a`): the cell a reflection off walls of those normals sends a population
/// to `x` from.
#[inline(always)]
pub fn neighbour_without(o: &[[u32; 3]; 3], q: usize, axes: u32) -> usize {
    let c = velocity(q);
    let pick = |a: usize| {
        if axes >> a & 1 != 0 {
            1
        } else {
            (c[a] + 1) as usize
        }
    };
    (o[0][pick(0)] + o[1][pick(1)] + o[2][pick(2)]) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_reads_each_direction_from_the_upstream_cell() {
        let l = Lattice::new(4, 3, 5);
        let pops = Populations::new(l);
        // f[q, cell] = q * 1000 + cell: the pulled value names the cell it came from.
        let data: std::vec::Vec<f32> = (0..pops.len())
            .map(|i| ((i / l.cells()) * 1000 + i % l.cells()) as f32)
            .collect();
        // SAFETY: `data` holds `pops.len()` floats and outlives the view.
        let f = unsafe { DevSlice::from_raw(data.as_ptr(), data.len() as u64) };
        let (x, y, z) = (0u32, 2u32, 1u32);
        let cell = l.index(x, y, z);
        let got = unsafe { pops.pull(f, cell) };
        for (q, &v) in got.iter().enumerate() {
            let c = velocity(q);
            let wrap = |a: u32, d: i32, n: u32| ((a as i32 - d).rem_euclid(n as i32)) as u32;
            let from = l.index(wrap(x, c[0], 4), wrap(y, c[1], 3), wrap(z, c[2], 5));
            assert_eq!(v, (q * 1000 + from) as f32, "q = {q}");
        }
        assert_eq!(
            unsafe { pops.reflected(f, 1, cell) },
            (opposite(1) * 1000 + cell) as f32
        );
    }
}
