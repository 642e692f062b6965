//! The statistics' averages in SI units from their sums, and their files: a CSV of profiles,
//! or `.npz` / `.vti` fields.

use crate::atomic_file::write_atomic;
use crate::fluid::output::{write_error, write_vti_arrays};
use crate::fluid::FluidError;
use murmur_common::lbm::statistics::{value, Reduce, VALUES};
use murmur_common::lbm::{Lattice, Units};
use ndarray::{Array1, Array3, Array4};
use ndarray_npy::NpzWriter;
use std::io::Write;
use std::path::Path;

/// The averages of every key, SI units (velocities m/s, pressure Pa as the fields' deviation
/// from the reference, stresses m^2/s^2).
#[derive(Clone, Debug, PartialEq)]
pub struct Averages {
    pub reduce: Reduce,
    pub units: Units,
    /// Cell samples summed into each key (0: a key without fluid).
    pub count: Vec<f64>,
    pub pressure: Vec<f64>,
    /// Mean velocity, three per key.
    pub mean: Vec<[f64; 3]>,
    /// RMS of the velocity fluctuations, three per key.
    pub rms: Vec<[f64; 3]>,
    /// Reynolds shear stresses `<u'v'>`, `<u'w'>`, `<v'w'>`, three per key.
    pub shear: Vec<[f64; 3]>,
}

impl Averages {
    /// The averages of `sums` (`VALUES x reduce.keys()`, lattice units).
    pub fn of(sums: &[f64], reduce: Reduce, units: Units) -> Averages {
        let keys = reduce.keys();
        debug_assert_eq!(sums.len(), VALUES * keys);
        let s = |v: usize, k: usize| sums[v * keys + k];
        let u_si = units.velocity_to_si(1.0);
        let uu_si = u_si * u_si;
        let mut a = Averages {
            reduce,
            units,
            count: Vec::with_capacity(keys),
            pressure: Vec::with_capacity(keys),
            mean: Vec::with_capacity(keys),
            rms: Vec::with_capacity(keys),
            shear: Vec::with_capacity(keys),
        };
        for k in 0..keys {
            let c = s(value::COUNT, k);
            let per = if c > 0.0 { 1.0 / c } else { f64::NAN };
            let m = [0, 1, 2].map(|i| s(value::U + i, k) * per);
            let var = [0, 1, 2].map(|i| (s(value::UU + i, k) * per - m[i] * m[i]).max(0.0));
            let cov = |v: usize, i: usize, j: usize| s(v, k) * per - m[i] * m[j];
            a.count.push(c);
            a.pressure
                .push(units.pressure_to_si(s(value::RHO, k) * per));
            a.mean.push(m.map(|x| x * u_si));
            a.rms.push(var.map(|x| x.sqrt() * u_si));
            a.shear.push([
                cov(value::UV, 0, 1) * uu_si,
                cov(value::UW, 0, 2) * uu_si,
                cov(value::VW, 1, 2) * uu_si,
            ]);
        }
        a
    }

    /// The axes kept (the CSV's coordinate columns).
    fn kept(&self) -> Vec<usize> {
        (0..3).filter(|&a| self.reduce.keep[a] != 0).collect()
    }

    /// The coordinates (cells) of key `k` along each axis (0 along the summed ones).
    fn coords(&self, k: usize) -> [usize; 3] {
        let e = [0, 1, 2].map(|a| self.reduce.extent(a) as usize);
        [k % e[0], (k / e[0]) % e[1], k / (e[0] * e[1])]
    }

    /// Writes the profiles as CSV: the kept axes' cell index and position (m, the cell's
    /// centre as in the fields' files: cell `i` at `i dx`), the samples, the mean velocity and
    /// pressure, the RMS velocities and the Reynolds shear stresses; one row per key with fluid.
    pub fn write_csv(&self, path: &Path, samples: u64, step: u64) -> Result<(), FluidError> {
        let axes = ["x", "y", "z"];
        let kept = self.kept();
        write_atomic(path, |w| {
            writeln!(
                w,
                "# murmur turbulence statistics: {samples} samples up to step {step}; SI units \
                 (m, m/s, Pa as the deviation from the reference pressure, m^2/s^2)"
            )?;
            let mut head: Vec<String> = kept.iter().map(|&a| format!("{}_cell", axes[a])).collect();
            head.extend(kept.iter().map(|&a| format!("{}_m", axes[a])));
            head.extend(
                [
                    "cell_samples",
                    "mean_ux",
                    "mean_uy",
                    "mean_uz",
                    "mean_p",
                    "rms_ux",
                    "rms_uy",
                    "rms_uz",
                    "uv",
                    "uw",
                    "vw",
                ]
                .map(String::from),
            );
            writeln!(w, "{}", head.join(","))?;
            for k in 0..self.count.len() {
                if self.count[k] == 0.0 {
                    continue;
                }
                let c = self.coords(k);
                let mut row: Vec<String> = kept.iter().map(|&a| c[a].to_string()).collect();
                row.extend(
                    kept.iter()
                        .map(|&a| format!("{:.9e}", self.units.length_to_si(c[a] as f64))),
                );
                row.push(format!("{}", self.count[k]));
                let m = self.mean[k];
                let r = self.rms[k];
                let s = self.shear[k];
                for v in [
                    m[0],
                    m[1],
                    m[2],
                    self.pressure[k],
                    r[0],
                    r[1],
                    r[2],
                    s[0],
                    s[1],
                    s[2],
                ] {
                    row.push(format!("{v:.9e}"));
                }
                writeln!(w, "{}", row.join(","))?;
            }
            Ok(())
        })
        .map_err(|e| write_error(path, e))
    }

    fn lattice(&self) -> Lattice {
        let n = self.reduce.n;
        Lattice::new(n[0], n[1], n[2])
    }

    /// Flattened `f32` arrays of the fields (0 where a cell has no fluid).
    fn arrays(&self) -> [(&'static str, u32, Vec<f32>); 5] {
        let flat3 = |v: &[[f64; 3]]| v.iter().flat_map(|x| x.map(|c| c as f32)).collect();
        [
            ("mean_velocity", 3, flat3(&self.mean)),
            (
                "mean_pressure",
                1,
                self.pressure.iter().map(|&p| p as f32).collect(),
            ),
            ("rms_velocity", 3, flat3(&self.rms)),
            ("reynolds_shear", 3, flat3(&self.shear)),
            (
                "cell_samples",
                1,
                self.count.iter().map(|&c| c as f32).collect(),
            ),
        ]
        .map(|(n, c, v): (&str, u32, Vec<f32>)| {
            (
                n,
                c,
                v.into_iter()
                    .map(|x| if x.is_finite() { x } else { 0.0 })
                    .collect(),
            )
        })
    }

    /// Writes whole fields as `.npz`: `mean_velocity`, `rms_velocity` (uu, vv, ww),
    /// `reynolds_shear` (uv, uw, vw), each (nz, ny, nx, 3); `mean_pressure`, `cell_samples`
    /// (nz, ny, nx); `samples`, `spacing` [dx] m, `time` [t] s.
    pub fn write_npz(&self, path: &Path, samples: u64, time_s: f64) -> Result<(), FluidError> {
        let l = self.lattice();
        let shape = (l.nz as usize, l.ny as usize, l.nx as usize);
        let bad = |e: ndarray::ShapeError| write_error(path, e);
        let mut three = Vec::new();
        let mut one = Vec::new();
        for (name, comps, v) in self.arrays() {
            if comps == 3 {
                three.push((
                    name,
                    Array4::from_shape_vec((shape.0, shape.1, shape.2, 3), v).map_err(bad)?,
                ));
            } else {
                one.push((name, Array3::from_shape_vec(shape, v).map_err(bad)?));
            }
        }
        write_atomic(path, |w| {
            let mut npz = NpzWriter::new(w);
            let e = |e: ndarray_npy::WriteNpzError| std::io::Error::other(e.to_string());
            for (name, a) in &three {
                npz.add_array(*name, a).map_err(e)?;
            }
            for (name, a) in &one {
                npz.add_array(*name, a).map_err(e)?;
            }
            npz.add_array("samples", &Array1::from_vec(vec![samples]))
                .map_err(e)?;
            npz.add_array("spacing", &Array1::from_vec(vec![self.units.dx]))
                .map_err(e)?;
            npz.add_array("time", &Array1::from_vec(vec![time_s]))
                .map_err(e)?;
            npz.finish().map_err(e)?;
            Ok(())
        })
        .map_err(|e| write_error(path, e))
    }

    /// Writes whole fields as `.vti` (the arrays of [`Averages::write_npz`], as point data).
    pub fn write_vti(&self, path: &Path, time_s: f64) -> Result<(), FluidError> {
        let arrays = self.arrays();
        let views: Vec<(&str, u32, &[f32])> = arrays
            .iter()
            .map(|(n, c, v)| (*n, *c, v.as_slice()))
            .collect();
        write_vti_arrays(path, self.lattice(), self.units.dx, time_s, &views)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn averages_of_two_samples() {
        // One key (everything summed), two cell samples: u = (1, 0, 0) and (3, 2, 0) lattice.
        let l = Lattice::new(2, 1, 1);
        let reduce = Reduce::profile(l, [true, true, true]);
        let mut sums = vec![0.0; VALUES];
        for (rho, u) in [(1.0f32, [1.0f32, 0.0, 0.0]), (1.0, [3.0, 2.0, 0.0])] {
            for (s, v) in sums
                .iter_mut()
                .zip(murmur_common::lbm::statistics::cell_values(rho, u))
            {
                *s += v;
            }
        }
        let units = Units::from_scales(1.0, 1.0, 1.0, 1.0, 1.0);
        let a = Averages::of(&sums, reduce, units);
        assert_eq!(a.count, vec![2.0]);
        assert_eq!(a.mean[0], [2.0, 1.0, 0.0]);
        // Var(ux) = (1 + 9) / 2 - 4 = 1, var(uy) = 4 / 2 - 1 = 1, <u'v'> = 6 / 2 - 2 = 1.
        assert_eq!(a.rms[0], [1.0, 1.0, 0.0]);
        assert_eq!(a.shear[0], [1.0, 0.0, 0.0]);
        assert_eq!(a.pressure[0], 0.0);
    }
}
