//! The macroscopic fields a backend hands the host.

use murmur_common::lbm::Lattice;

/// Macroscopic fields, lattice units, structure of arrays like the GPU buffer:
/// `data = [rho; n] ++ [ux; n] ++ [uy; n] ++ [uz; n]` (16 B per cell).
#[derive(Clone, Debug, PartialEq)]
pub struct Fields {
    pub lattice: Lattice,
    pub data: Vec<f32>,
}

impl Fields {
    /// Density 1, velocity 0 everywhere.
    pub fn rest(lattice: Lattice) -> Fields {
        let n = lattice.cells();
        let mut data = vec![0.0; 4 * n];
        data[..n].fill(1.0);
        Fields { lattice, data }
    }

    pub fn n(&self) -> usize {
        self.lattice.cells()
    }

    pub fn rho(&self, cell: usize) -> f32 {
        self.data[cell]
    }

    pub fn u(&self, cell: usize) -> [f32; 3] {
        let n = self.n();
        [
            self.data[n + cell],
            self.data[2 * n + cell],
            self.data[3 * n + cell],
        ]
    }

    pub fn set(&mut self, cell: usize, rho: f32, u: [f32; 3]) {
        let n = self.n();
        self.data[cell] = rho;
        self.data[n + cell] = u[0];
        self.data[2 * n + cell] = u[1];
        self.data[3 * n + cell] = u[2];
    }

    /// Largest difference to `other` relative to the largest magnitude of `other`, for density
    /// deviation `rho - 1` and for velocity: `max |a - b| / max |b|` over all cells.
    pub fn max_relative_difference(&self, other: &Fields) -> (f64, f64) {
        let n = self.n().min(other.n());
        let (mut drho, mut rho_scale, mut du, mut u_scale) = (0f64, 0f64, 0f64, 0f64);
        for c in 0..n {
            drho = drho.max((self.data[c] as f64 - other.data[c] as f64).abs());
            rho_scale = rho_scale.max((other.data[c] as f64 - 1.0).abs());
            for a in 1..4 {
                let (x, y) = (self.data[a * n + c] as f64, other.data[a * n + c] as f64);
                du = du.max((x - y).abs());
                u_scale = u_scale.max(y.abs());
            }
        }
        (drho / rho_scale.max(1e-30), du / u_scale.max(1e-30))
    }
}
