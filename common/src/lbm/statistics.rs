//! Turbulence statistics: running sums, in FP64, of each fluid cell's density, velocity and
//! velocity products, one sample every K steps, from which the host forms the mean velocity and
//! pressure, the RMS velocities and the Reynolds shear stresses.
//!
//! A sample adds [`VALUES`] numbers per fluid cell (`rho`, `u` and the velocity products of
//! [`cell_values`], and a count of 1) into `sums`, a structure of arrays of `VALUES x keys`
//! `f64`s (value `v` of key `k` at `v * keys + k`). The key of a cell is given by [`Reduce`]:
//! every cell its own key (whole fields), or the cell's coordinates along the axes kept, the
//! others summed over (profiles along the periodic axes, reduced inside the kernel). The
//! velocity is the fields' own ([`super::stream::cell_fields`]: half the cell's force added).
//!
//! Sums of a few hundred samples of values of order 0.1 keep fifteen digits in FP64, so the
//! variance `<u^2> - <u>^2` of fluctuations a tenth of the mean keeps more than ten: no
//! Welford update is needed. A profile's sums meet in atomic adds, whose order varies from
//! run to run on the GPU: a profile agrees with the CPU's to the last few bits, a field's bit
//! for bit.

use super::access::{Populations, Storage};
use super::boundary::{FLUID, KIND_MASK};
use super::ib::band::BandRef;
use super::layout::Lattice;
use super::params::LbmParams;
use super::stream::cell_fields;
use crate::kernel::{DevSlice, DevSliceMut};

/// Numbers one sample adds per key: count, `rho`, `u` (3), `u_i u_i` (3), `ux uy`, `ux uz`,
/// `uy uz`.
pub const VALUES: usize = 11;

/// Where each value sits among the [`VALUES`].
pub mod value {
    /// The number of cell samples summed.
    pub const COUNT: usize = 0;
    /// The density.
    pub const RHO: usize = 1;
    /// `ux`, `uy`, `uz` from here.
    pub const U: usize = 2;
    /// `ux^2`, `uy^2`, `uz^2` from here.
    pub const UU: usize = 5;
    /// `ux uy`.
    pub const UV: usize = 8;
    /// `ux uz`.
    pub const UW: usize = 9;
    /// `uy uz`.
    pub const VW: usize = 10;
}

/// The key that marks a cell without a sample (not fluid, or beyond the lattice).
pub const NO_KEY: u32 = u32::MAX;

/// Which axes a sample keeps: a cell's key is its coordinates along the kept axes (x fastest),
/// the others summed over. `#[repr(C)]`, 24 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reduce {
    /// 1 where the axis is kept, 0 where it is summed over.
    pub keep: [u32; 3],
    /// The lattice's extent along each axis.
    pub n: [u32; 3],
}

impl Reduce {
    /// Every cell its own key: whole fields.
    pub const fn fields(l: Lattice) -> Reduce {
        Reduce {
            keep: [1; 3],
            n: [l.nx, l.ny, l.nz],
        }
    }

    /// Profiles along the axes not in `summed` (`summed[a]`: axis `a` summed over).
    pub const fn profile(l: Lattice, summed: [bool; 3]) -> Reduce {
        Reduce {
            keep: [!summed[0] as u32, !summed[1] as u32, !summed[2] as u32],
            n: [l.nx, l.ny, l.nz],
        }
    }

    /// Whether every axis is kept (each cell its own key).
    #[inline(always)]
    pub const fn is_fields(&self) -> bool {
        self.keep[0] != 0 && self.keep[1] != 0 && self.keep[2] != 0
    }

    /// The extent of the keys along axis `a` (1 where summed over).
    #[inline(always)]
    pub const fn extent(&self, a: usize) -> u32 {
        if self.keep[a] != 0 {
            self.n[a]
        } else {
            1
        }
    }

    /// How many keys there are.
    #[inline(always)]
    pub const fn keys(&self) -> usize {
        self.extent(0) as usize * self.extent(1) as usize * self.extent(2) as usize
    }

    /// The key of the cell at `(x, y, z)`.
    #[inline(always)]
    pub const fn key(&self, x: u32, y: u32, z: u32) -> u32 {
        let (x, y, z) = (x * self.keep[0], y * self.keep[1], z * self.keep[2]);
        (z * self.extent(1) + y) * self.extent(0) + x
    }
}

/// The numbers a cell of density `rho` and velocity `u` adds to its key's sums.
#[inline(always)]
pub fn cell_values(rho: f32, u: [f32; 3]) -> [f64; VALUES] {
    let (r, x, y, z) = (rho as f64, u[0] as f64, u[1] as f64, u[2] as f64);
    [1.0, r, x, y, z, x * x, y * y, z * z, x * y, x * z, y * z]
}

/// `lbm_statistics_*`: one thread per cell adds its sample into `sums` (module docs).
/// `#[repr(C)]`: the kernel's one argument.
#[repr(C)]
pub struct Statistics<S: Storage> {
    pub p: LbmParams,
    pub pops: Populations<S>,
    pub reduce: Reduce,
    pub flags: DevSlice<u8>,
    pub f: DevSlice<S::Elem>,
    pub band: BandRef,
    /// `VALUES x reduce.keys()` sums, value-major.
    pub sums: DevSliceMut<f64>,
}

super::abi::lattice_args! {
    Statistics [S: Storage] [S];
}

/// The key and the values of `cell`'s sample ([`NO_KEY`] and zeros for a cell that is not
/// fluid).
///
/// # Safety
/// The buffers of `a` hold the lattice's cells and `cell` is one of them.
#[inline(always)]
pub unsafe fn cell_sample<S: Storage>(a: &Statistics<S>, cell: usize) -> (u32, [f64; VALUES]) {
    if a.flags.read(cell) & KIND_MASK != FLUID {
        return (NO_KEY, [0.0; VALUES]);
    }
    let (rho, u) = cell_fields(&a.p, &a.pops, a.flags, a.f, &a.band, cell);
    let (x, y, z) = a.p.lattice.coords(cell);
    (a.reduce.key(x, y, z), cell_values(rho, u))
}

/// Adds `values` to the sums of `key` without atomics (fields: no other thread has the key).
///
/// # Safety
/// `key < a.reduce.keys()`, and no other thread touches its sums meanwhile.
#[inline(always)]
pub unsafe fn add_own<S: Storage>(a: &Statistics<S>, key: u32, values: &[f64; VALUES]) {
    let keys = a.reduce.keys();
    let mut v = 0;
    while v < VALUES {
        let i = v * keys + key as usize;
        a.sums.write(i, a.sums.read(i) + values[v]);
        v += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_fields_and_profiles() {
        let l = Lattice::new(5, 4, 3);
        let f = Reduce::fields(l);
        assert!(f.is_fields());
        assert_eq!(f.keys(), 60);
        assert_eq!(f.key(2, 3, 1) as usize, l.index(2, 3, 1));
        // Profiles across y (x and z summed over), and the x-y planes (z summed over).
        let y = Reduce::profile(l, [true, false, true]);
        assert!(!y.is_fields());
        assert_eq!(y.keys(), 4);
        assert_eq!(y.key(4, 2, 2), 2);
        let xy = Reduce::profile(l, [false, false, true]);
        assert_eq!(xy.keys(), 20);
        assert_eq!(xy.key(3, 2, 2), 2 * 5 + 3);
    }

    #[test]
    fn values_of_a_cell() {
        let v = cell_values(1.0, [0.5, -0.25, 2.0]);
        assert_eq!(v[value::COUNT], 1.0);
        assert_eq!(v[value::U + 1], -0.25);
        assert_eq!(v[value::UU + 2], 4.0);
        assert_eq!(v[value::UV], -0.125);
        assert_eq!(v[value::UW], 1.0);
        assert_eq!(v[value::VW], -0.5);
    }
}
