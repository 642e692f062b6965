//! Physical <-> lattice unit conversion: the one place where metres, seconds and kilograms meet
//! lattice units (`dx = dt = rho_0 = 1`). Krüger et al. 2017, Ch. 7 ("Non-dimensionalisation and
//! choice of simulation parameters").
//!
//! A scene fixes a length `L` resolved by `N` cells (`dx = L / N`), a velocity `U` represented by
//! the lattice velocity `u_lb` (`dt = u_lb dx / U`, chosen for a small Mach number) and a
//! reference density `rho_0`. Everything else follows: `nu_lb = nu dt / dx^2`,
//! `tau = 3 nu_lb + 1/2`, `a_lb = a dt^2 / dx`, `p = c_s^2 (rho_lb - 1) rho_0 dx^2 / dt^2`.

/// Conversion factors of one simulation (SI units; `f64` so repeated conversions stay exact).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Units {
    /// Cell size, metres.
    pub dx: f64,
    /// Time step, seconds.
    pub dt: f64,
    /// Reference density, kg/m^3 (lattice density 1).
    pub rho0: f64,
}

impl Units {
    /// `L` metres resolved by `cells` cells; velocity `U` m/s represented by `u_lb`.
    pub fn from_scales(length_m: f64, cells: f64, velocity_m_s: f64, u_lb: f64, rho0: f64) -> Self {
        let dx = length_m / cells;
        Units {
            dx,
            dt: u_lb * dx / velocity_m_s,
            rho0,
        }
    }

    /// Lattice units as SI (`dx = dt = 1` m, s).
    pub const LATTICE: Units = Units {
        dx: 1.0,
        dt: 1.0,
        rho0: 1.0,
    };

    /// m/s to lattice velocity.
    pub fn velocity_to_lattice(&self, u: f64) -> f64 {
        u * self.dt / self.dx
    }

    /// Lattice velocity to m/s.
    pub fn velocity_to_si(&self, u: f64) -> f64 {
        u * self.dx / self.dt
    }

    /// Kinematic viscosity m^2/s to lattice units.
    pub fn viscosity_to_lattice(&self, nu: f64) -> f64 {
        nu * self.dt / (self.dx * self.dx)
    }

    /// Acceleration m/s^2 to lattice units (times the lattice density: a force density).
    pub fn acceleration_to_lattice(&self, a: f64) -> f64 {
        a * self.dt * self.dt / self.dx
    }

    /// Seconds to (fractional) steps.
    pub fn time_to_steps(&self, t: f64) -> f64 {
        t / self.dt
    }

    /// Lattice density to kg/m^3.
    pub fn density_to_si(&self, rho: f64) -> f64 {
        rho * self.rho0
    }

    /// Lattice density to the pressure deviation `c_s^2 (rho - 1)`, in Pa.
    pub fn pressure_to_si(&self, rho: f64) -> f64 {
        (rho - 1.0) / 3.0 * self.rho0 * self.dx * self.dx / (self.dt * self.dt)
    }

    /// BGK relaxation time of a lattice viscosity: `tau = 3 nu + 1/2`.
    pub fn tau(nu_lb: f64) -> f64 {
        3.0 * nu_lb + 0.5
    }

    /// Lattice Mach number of a lattice velocity: `u / c_s` (`1 / c_s = sqrt 3`).
    pub fn mach(u_lb: f64) -> f64 {
        u_lb * 1.732_050_807_568_877_2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cavity_units() {
        // 1 m cavity, 1 m/s lid, 64 cells, u_lb = 0.1, nu = 0.01 m^2/s (Re 100).
        let u = Units::from_scales(1.0, 64.0, 1.0, 0.1, 1000.0);
        assert!((u.velocity_to_lattice(1.0) - 0.1).abs() < 1e-12);
        let nu = u.viscosity_to_lattice(0.01);
        assert!((nu - 0.1 * 64.0 / 100.0).abs() < 1e-12, "Re = u N / nu");
        assert!((Units::tau(nu) - (3.0 * 0.064 + 0.5)).abs() < 1e-12);
        assert!((u.velocity_to_si(0.1) - 1.0).abs() < 1e-12);
    }
}
