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

    /// Steps to seconds.
    pub fn time_to_si(&self, steps: f64) -> f64 {
        steps * self.dt
    }

    /// Cells to metres.
    pub fn length_to_si(&self, cells: f64) -> f64 {
        cells * self.dx
    }

    /// Metres to cells.
    pub fn length_to_lattice(&self, m: f64) -> f64 {
        m / self.dx
    }

    /// Cells^2 to m^2.
    pub fn area_to_si(&self, cells2: f64) -> f64 {
        cells2 * self.dx * self.dx
    }

    /// m^2 to cells^2.
    pub fn area_to_lattice(&self, m2: f64) -> f64 {
        m2 / (self.dx * self.dx)
    }

    /// Lattice force (lattice density x `dx^4 / dt^2`: a force density `rho dx / dt^2` times a
    /// volume in cells) to newtons: `F rho_0 dx^4 / dt^2`.
    pub fn force_to_si(&self, f: f64) -> f64 {
        f * self.rho0 * self.dx * self.dx * self.dx * self.dx / (self.dt * self.dt)
    }

    /// Newtons to lattice force (the inverse of [`Units::force_to_si`]).
    pub fn force_to_lattice(&self, f: f64) -> f64 {
        f * self.dt * self.dt / (self.rho0 * self.dx * self.dx * self.dx * self.dx)
    }

    /// Lattice torque (lattice force times cells, `rho dx^5 / dt^2`) to N m:
    /// `T rho_0 dx^5 / dt^2`.
    pub fn torque_to_si(&self, t: f64) -> f64 {
        self.force_to_si(t) * self.dx
    }

    /// A rate in 1/step (a velocity gradient or vorticity in lattice units) to 1/s.
    pub fn rate_to_si(&self, r: f64) -> f64 {
        r / self.dt
    }

    /// A squared rate in 1/step^2 (e.g. the Q-criterion in lattice units) to 1/s^2.
    pub fn rate_squared_to_si(&self, r2: f64) -> f64 {
        r2 / (self.dt * self.dt)
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

    #[test]
    fn force_torque_and_rate_conversions_by_hand() {
        // dx = 0.01 m, dt = 0.001 s, rho0 = 1000 kg/m^3:
        // one lattice force unit = 1000 * 1e-8 / 1e-6 = 10 N; torque unit = 10 N * 0.01 m.
        let u = Units {
            dx: 0.01,
            dt: 0.001,
            rho0: 1000.0,
        };
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1.0);
        assert!(close(u.force_to_si(1.0), 10.0));
        assert!(close(u.force_to_si(-0.25), -2.5));
        assert!(close(u.force_to_lattice(10.0), 1.0));
        assert!(close(u.torque_to_si(2.0), 0.2));
        assert!(close(u.area_to_si(100.0), 0.01));
        assert!(close(u.area_to_lattice(0.01), 100.0));
        assert!(close(u.length_to_si(50.0), 0.5));
        assert!(close(u.length_to_lattice(0.5), 50.0));
        assert!(close(u.time_to_si(2000.0), 2.0));
        assert!(close(u.rate_to_si(0.01), 10.0));
        assert!(close(u.rate_squared_to_si(1e-4), 100.0));
        // Lattice units convert to themselves.
        let l = Units::LATTICE;
        assert_eq!(l.force_to_si(0.3), 0.3);
        assert_eq!(l.torque_to_si(0.3), 0.3);
    }
}
