//! What `fluid run`, `render` and `view` may change in a scene file before it is built:
//! `--coarsen K` (the scene at `1/K` of its resolution, with the same `tau`) and
//! `--check-every N` (the health check's interval).
//!
//! Coarsening divides the cells per length (`lattice.resolution`, and `domain.cells` when the
//! scene gives its domain in cells) by `K` and multiplies the viscosity by `K`, so the Reynolds
//! number drops by `K` while the lattice viscosity `nu_lb = u_lb N / Re`, hence `tau`, and the
//! lattice Mach number stay; a body force is multiplied by `K` too, so a force-driven flow keeps
//! its velocity. Everything else given in metres or seconds (the domain's size, solids, smoke,
//! ramps) stays where it was; steps cover `K` times the physical time.

use super::file::SceneFile;
use crate::fluid::FluidError;

/// The scene overrides of `fluid run | render | view`.
#[derive(clap::Args, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SceneOverrides {
    /// Run the scene at 1/K of its resolution with the same tau: lattice.resolution (and
    /// domain.cells) divided by K, the viscosity (and a body force) multiplied by K, so Re
    /// drops by K; sizes in metres stay.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
    pub coarsen: Option<u32>,
    /// Check the flow's health every N steps [default: the scene's run.check_every].
    #[arg(long, value_name = "N")]
    pub check_every: Option<u64>,
}

impl SceneOverrides {
    /// `file` with these overrides; the warnings they raise (a domain in cells that `K` does
    /// not divide).
    pub fn apply(&self, file: &mut SceneFile) -> Result<Vec<String>, FluidError> {
        if let Some(n) = self.check_every {
            file.run.check_every = n;
        }
        match self.coarsen {
            None | Some(1) => Ok(Vec::new()),
            Some(k) => coarsen(file, k),
        }
    }
}

/// `file` at `1/k` of its resolution (the module's rule); warnings for cell counts `k` does
/// not divide (rounded, at least 1 cell: a 2D scene's one cell of depth stays).
pub fn coarsen(file: &mut SceneFile, k: u32) -> Result<Vec<String>, FluidError> {
    let n = file.lattice.resolution;
    if !n.is_multiple_of(k) {
        return Err(FluidError::Invalid(format!(
            "--coarsen {k}: lattice.resolution {n} is not a multiple of {k}"
        )));
    }
    if n / k < 4 {
        return Err(FluidError::Invalid(format!(
            "--coarsen {k} leaves {} cells across physical.length (lattice.resolution {n}); \
             at least 4 are needed",
            n / k
        )));
    }
    file.lattice.resolution = n / k;
    file.physical.viscosity *= k as f64;
    file.body_force.acceleration = file.body_force.acceleration.map(|a| a * k as f64);
    let mut warnings = Vec::new();
    if let Some(cells) = file.domain.cells.as_mut() {
        for (a, c) in cells.iter_mut().enumerate() {
            let coarse = ((*c as f64 / k as f64).round() as u32).max(1);
            if coarse * k != *c && *c != 1 {
                warnings.push(format!(
                    "--coarsen {k}: domain.cells {} = {} is {:.2} coarse cells; using {coarse}",
                    ["x", "y", "z"][a],
                    *c,
                    *c as f64 / k as f64
                ));
            }
            *c = coarse;
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn asset(name: &str) -> SceneFile {
        SceneFile::load(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../assets/fluid")
                .join(name),
        )
        .unwrap()
    }

    #[test]
    fn coarsening_keeps_tau_mach_and_the_physical_size() {
        for (name, k) in [
            ("trefoil.toml", 2),
            ("smoke-256.toml", 4),
            ("cavity-re100.toml", 4),
        ] {
            let fine = asset(name).build().unwrap();
            let mut file = asset(name);
            SceneOverrides {
                coarsen: Some(k),
                check_every: Some(7),
            }
            .apply(&mut file)
            .unwrap();
            let coarse = file.build().unwrap();
            let (a, b) = (
                fine.setup.params.rates.shear,
                coarse.setup.params.rates.shear,
            );
            assert!((a - b).abs() <= 1e-6 * a, "{name}: {a} vs {b}");
            assert_eq!(fine.units.dx * k as f64, coarse.units.dx, "{name}");
            assert_eq!(coarse.file.run.check_every, 7);
            let (lf, lc) = (fine.setup.lattice(), coarse.setup.lattice());
            // Fluid cells along x: 1/k of the fine ones (rounded where k does not divide).
            let (fx, cx) = (lf.nx - 2, lc.nx - 2);
            assert!(
                (cx as f64 - fx as f64 / k as f64).abs() <= 0.5,
                "{name}: {fx} {cx}"
            );
            let re = |s: &crate::fluid::scene::Scene| {
                s.file.physical.velocity * s.file.physical.length / s.file.physical.viscosity
            };
            assert!((re(&fine) / re(&coarse) - k as f64).abs() < 1e-9, "{name}");
        }
        // The 2D cavity keeps its one cell of depth.
        let mut file = asset("cavity-re100.toml");
        assert!(coarsen(&mut file, 2).unwrap().is_empty());
        assert_eq!(file.domain.cells, Some([64, 64, 1]));
        // A body force grows with the viscosity: the driven flow keeps its velocity.
        let mut p = asset("poiseuille.toml");
        let a = p.body_force.acceleration[0];
        coarsen(&mut p, 2).unwrap();
        assert_eq!(p.body_force.acceleration[0], 2.0 * a);
    }

    #[test]
    fn coarsening_refuses_what_it_cannot_keep() {
        let mut file = asset("trefoil.toml");
        let e = coarsen(&mut file, 5).unwrap_err().to_string();
        assert!(
            e.contains("lattice.resolution 24 is not a multiple of 5"),
            "{e}"
        );
        let e = coarsen(&mut file, 8).unwrap_err().to_string();
        assert!(e.contains("leaves 3 cells"), "{e}");
        let mut file = asset("smoke-256.toml");
        let w = coarsen(&mut file, 4).unwrap();
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(
            w[0].contains("254 is 63.50 coarse cells; using 64"),
            "{}",
            w[0]
        );
    }
}
