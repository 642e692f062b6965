//! Validation of the immersed boundary: cylindrical Couette flow (the independent case the
//! coupling's fixed choices were made on) and, in `validate`, the DFG cylinder benchmarks.

use super::plan::IbTuning;
use super::{Immersed, Motion, Primitive, Solid};
use crate::fluid::scene::file::SolidBoundary;
use crate::fluid::{scene, FluidBackend, FluidError, Setup};
use murmur_common::lbm::CollisionModel;

/// Cylindrical Couette flow between an inner cylinder of radius `r1` turning at `omega` and a
/// fixed outer cylinder of radius `r2` (cells), both immersed solids spanning a periodic
/// `n x n x 1` box: the steady azimuthal velocity is `u(r) = A r + B / r`,
/// `A = -omega r1^2 / (r2^2 - r1^2)`, `B = omega r1^2 r2^2 / (r2^2 - r1^2)`.
#[derive(Clone, Copy, Debug)]
pub struct Couette {
    pub r1: f64,
    pub r2: f64,
    /// Surface speed of the inner cylinder, lattice units.
    pub speed: f64,
    pub nu: f64,
    pub steps: u64,
    pub passes: u32,
    /// Samples placed this far (cells) inside each solid: at `r1 - retraction` and
    /// `r2 + retraction`.
    pub retraction: f64,
}

impl Couette {
    /// The study's case: radii 8 and 20 cells, surface speed 0.02, `nu = 1/6`.
    pub const STUDY: Couette = Couette {
        r1: 8.0,
        r2: 20.0,
        speed: 0.02,
        nu: 1.0 / 6.0,
        steps: 6000,
        passes: 0,
        retraction: super::plan::RETRACTION,
    };

    /// [`Couette::STUDY`] at relaxation time `tau`: viscosity `(tau - 1/2) / 3` and
    /// `1000 / nu` steps (6000 at `tau = 1`: the same number of diffusion times across the gap).
    pub fn at_tau(tau: f64) -> Couette {
        let nu = (tau - 0.5) / 3.0;
        Couette {
            nu,
            steps: (1000.0 / nu).round() as u64,
            ..Couette::STUDY
        }
    }

    fn n(&self) -> u32 {
        (2.0 * self.r2).ceil() as u32 + 8
    }

    fn center(&self) -> f64 {
        0.5 * (self.n() as f64 - 1.0)
    }

    /// The setup: a periodic box at rest with the two cylinders.
    pub fn setup(&self, model: CollisionModel) -> Result<Setup, FluidError> {
        let n = self.n();
        let mut setup = scene::taylor_green(n, 1, 0.0, self.nu as f32, model)?;
        let c = self.center();
        // `retraction` along the tube's outward normal: the inner cylinder's solid lies inside
        // it (positive), the outer one's outside (negative).
        let cylinder =
            |r: f64, motion: Motion, name: &str, retraction: f64| -> Result<Solid, FluidError> {
                let mesh = Primitive::Cylinder {
                    radius: r,
                    length: 1.0,
                    caps: false,
                }
                .mesh(0.25)
                .map_err(|e| FluidError::Invalid(e.to_string()))?;
                let (s, _) = Solid::sampled(
                    name,
                    &mesh,
                    [c, c, 0.0],
                    [1.0, 0.0, 0.0, 0.0],
                    motion,
                    0.5,
                    3,
                    [n as f64, n as f64, 1.0],
                    1 << 22,
                    retraction,
                )
                .map_err(|e| FluidError::Invalid(e.to_string()))?;
                Ok(s)
            };
        let inner = cylinder(
            self.r1,
            Motion::Rotate {
                axis: [0.0, 0.0, 1.0],
                rate: self.speed / self.r1,
                ramp: 0.0,
            },
            "inner",
            self.retraction,
        )?;
        let outer = cylinder(self.r2, Motion::Fixed, "outer", -self.retraction)?;
        setup.immersed = Immersed {
            solids: vec![inner, outer],
            periodic: [true; 3],
            passes: self.passes,
            ..Immersed::default()
        };
        Ok(setup)
    }

    /// The analytic azimuthal velocity at radius `r`.
    pub fn exact(&self, r: f64) -> f64 {
        let omega = self.speed / self.r1;
        let (a2, b2) = (self.r1 * self.r1, self.r2 * self.r2);
        let a = -omega * a2 / (b2 - a2);
        let b = omega * a2 * b2 / (b2 - a2);
        a * r + b / r
    }

    /// Runs the case and returns the relative L2 error of the azimuthal velocity over the cells
    /// at least one cell inside the gap, and the largest radial velocity relative to the inner
    /// surface speed.
    pub fn run(&self, backend: &mut dyn FluidBackend) -> Result<(f64, f64), FluidError> {
        for _ in 0..self.steps {
            backend.step()?;
        }
        let f = backend.fields()?;
        let c = self.center();
        let (mut num, mut den, mut radial) = (0.0, 0.0, 0.0f64);
        for cell in 0..f.n() {
            let (x, y, _) = f.lattice.coords(cell);
            let (dx, dy) = (x as f64 - c, y as f64 - c);
            let r = (dx * dx + dy * dy).sqrt();
            if r < self.r1 + 1.0 || r > self.r2 - 1.0 {
                continue;
            }
            let u = f.u(cell);
            let ut = (-dy * u[0] as f64 + dx * u[1] as f64) / r;
            let ur = (dx * u[0] as f64 + dy * u[1] as f64) / r;
            let e = self.exact(r);
            num += (ut - e).powi(2);
            den += e * e;
            radial = radial.max(ur.abs() / self.speed);
        }
        Ok(((num / den).sqrt(), radial))
    }
}

/// The DFG benchmark cases of Schaefer & Turek, "Benchmark computations of laminar flow around a
/// cylinder", Notes on Numerical Fluid Mechanics 52 (1996) 547-566: a cylinder of diameter
/// `D = 0.1 m` in a channel of height `H = 0.41 m`, `nu = 1e-3 m^2/s`, `rho = 1 kg/m^3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dfg {
    /// 2D-1: Re 20, steady, parabolic inflow with `U_m = 0.3 m/s`.
    TwoD1,
    /// 2D-2: Re 100, periodic shedding, `U_m = 1.5 m/s`.
    TwoD2,
    /// 3D-1Z: Re 20, square channel, `U_m = 0.45 m/s`, the cylinder spanning it along z.
    ThreeD1Z,
}

/// A DFG run: the case, cells per diameter, lattice velocity of `U_m`, steps, collision model.
#[derive(Clone, Copy, Debug)]
pub struct DfgRun {
    pub case: Dfg,
    pub cells_per_d: u32,
    pub u_lb: f64,
    /// Physical time simulated (s).
    pub seconds: f64,
    pub model: CollisionModel,
    /// The cylinder's centre moved by this much along x and y (cells): where it sits between
    /// the nodes.
    pub offset: [f64; 2],
    /// How the cylinder meets the fluid.
    pub boundary: SolidBoundary,
    /// The immersed boundary's retraction and passes (the defaults unless a study sets them).
    pub tuning: IbTuning,
}

/// What a DFG run measured.
#[derive(Clone, Debug)]
pub struct DfgResult {
    pub run: DfgRun,
    pub steps: u64,
    pub wall_s: f64,
    /// Mean drag and lift coefficients over the last quarter of the run.
    pub cd: f64,
    pub cl: f64,
    pub max_cd: f64,
    pub max_cl: f64,
    pub strouhal: Option<f64>,
    /// Pressure difference between the cylinder's front and back points (Pa).
    pub dp: f64,
}

impl Dfg {
    pub fn name(self) -> &'static str {
        match self {
            Dfg::TwoD1 => "DFG 2D-1",
            Dfg::TwoD2 => "DFG 2D-2",
            Dfg::ThreeD1Z => "DFG 3D-1Z",
        }
    }

    /// Peak inflow `U_m` (m/s).
    fn u_max(self) -> f64 {
        match self {
            Dfg::TwoD1 => 0.3,
            Dfg::TwoD2 => 1.5,
            Dfg::ThreeD1Z => 0.45,
        }
    }

    /// The BGK relaxation time at `cells_per_d` cells per diameter and lattice velocity `u_lb`
    /// for `U_m`: `3 nu + 1/2`, `nu = Ubar D / Re` in lattice units (Re 100 for 2D-2, else 20).
    pub fn tau(self, cells_per_d: u32, u_lb: f64) -> f64 {
        let re = if self == Dfg::TwoD2 { 100.0 } else { 20.0 };
        let nu = u_lb * self.u_mean() / self.u_max() * cells_per_d as f64 / re;
        murmur_common::lbm::Units::tau(nu)
    }

    /// Mean inflow velocity, the coefficients' reference: `2/3 U_m` in 2D, `4/9 U_m` in 3D.
    fn u_mean(self) -> f64 {
        match self {
            Dfg::ThreeD1Z => 4.0 / 9.0 * self.u_max(),
            _ => 2.0 / 3.0 * self.u_max(),
        }
    }

    /// The scene file of this case at `cells_per_d` cells per diameter, lattice velocity `u_lb`
    /// for `U_m`, collision `model`. 2D cases are one periodic cell deep.
    pub fn scene(self, cells_per_d: u32, u_lb: f64, model: CollisionModel) -> String {
        self.scene_at(cells_per_d, u_lb, model, [0.0; 2], SolidBoundary::Immersed)
    }

    /// [`Dfg::scene`] with the cylinder's centre moved by `offset` cells along x and y, its
    /// surface meeting the fluid by `boundary`.
    pub fn scene_at(
        self,
        cells_per_d: u32,
        u_lb: f64,
        model: CollisionModel,
        offset: [f64; 2],
        boundary: SolidBoundary,
    ) -> String {
        let dx = 0.1 / cells_per_d as f64;
        let (size, profile, depth_faces, length, center_z) = match self {
            Dfg::ThreeD1Z => (
                "[2.5, 0.41, 0.41]".to_string(),
                "dfg-3d",
                String::new(),
                0.41,
                0.205,
            ),
            _ => (
                format!("[2.2, 0.41, {dx}]"),
                "parabolic",
                "z_min = { type = \"periodic\" }\nz_max = { type = \"periodic\" }\n".to_string(),
                dx,
                0.5 * dx,
            ),
        };
        let x = if self == Dfg::ThreeD1Z { 0.5 } else { 0.2 } + offset[0] * dx;
        let y = 0.2 + offset[1] * dx;
        format!(
            "name = \"{name}\"\ncollision = \"{model}\"\n\
             [physical]\nlength = 0.1\nvelocity = {um}\nviscosity = 1e-3\ndensity = 1.0\n\
             [lattice]\nresolution = {cells_per_d}\nvelocity = {u_lb}\n\
             [domain]\nsize = {size}\n\
             [faces]\nx_min = {{ type = \"inlet\", profile = \"{profile}\", ramp = {ramp} }}\n\
             x_max = {{ type = \"outlet\" }}\n{depth_faces}\
             [[solids]]\nname = \"cylinder\"\n\
             shape = {{ type = \"cylinder\", radius = 0.05, length = {length}, caps = false }}\n\
             position = [{x}, {y}, {center_z}]\nboundary = \"{boundary}\"\n\
             [forces]\nreference_velocity = {umean}\nevery = 1000\n",
            name = self.name().replace(' ', "-").to_lowercase(),
            model = model.name(),
            um = self.u_max(),
            umean = self.u_mean(),
            ramp = 1.0,
            boundary = boundary.name(),
        )
    }
}

/// Bilinear-in-x-y (trilinear) interpolation of the density at a point (lattice coordinates),
/// periodic wrap of the cell indices.
fn density_at(f: &crate::fluid::Fields, p: [f64; 3]) -> f64 {
    let l = f.lattice;
    let i0 = p.map(|c| c.floor());
    let t = [0, 1, 2].map(|a| p[a] - i0[a]);
    let dims = [l.nx as i64, l.ny as i64, l.nz as i64];
    let mut s = 0.0;
    for corner in 0..8 {
        let o = [corner & 1, corner >> 1 & 1, corner >> 2 & 1];
        let mut w = 1.0;
        let mut idx = [0u32; 3];
        for a in 0..3 {
            w *= if o[a] == 1 { t[a] } else { 1.0 - t[a] };
            idx[a] = (i0[a] as i64 + o[a] as i64).rem_euclid(dims[a]) as u32;
        }
        if w != 0.0 {
            s += w * f.rho(l.index(idx[0], idx[1], idx[2])) as f64;
        }
    }
    s
}

/// Runs a validation scene for `steps` steps through the run driver (health checked and forces
/// read every 1000 steps): the solids' force series and the final fields.
fn run_case(
    scene: &crate::fluid::scene::Scene,
    steps: u64,
    open: &mut crate::fluid::validate::Opener,
) -> Result<(crate::fluid::forces::ForceSeries, crate::fluid::Fields), FluidError> {
    struct Keep {
        series: crate::fluid::forces::ForceSeries,
        last: Option<crate::fluid::Fields>,
    }
    impl crate::fluid::driver::Sink for Keep {
        fn fields(
            &mut self,
            _: u64,
            f: &crate::fluid::Fields,
            _: Option<&super::plan::SampleSnapshot>,
        ) -> Result<(), FluidError> {
            self.last = Some(f.clone());
            Ok(())
        }
        fn forces(&mut self, rows: &[crate::fluid::forces::ForceSample]) -> Result<(), FluidError> {
            self.series.record(rows)
        }
    }
    let mut keep = Keep {
        series: crate::fluid::sink::force_series(scene, None)?
            .ok_or_else(|| FluidError::Invalid("the validation scene has no solid".into()))?,
        last: None,
    };
    let mut backend = open(&scene.setup)?;
    let opts = crate::fluid::driver::RunOptions {
        steps,
        check_every: 1000,
        output_every: steps,
        forces_every: 1000,
        health: scene.bounds(),
        progress: false,
        inlet: scene.inlet,
    };
    crate::fluid::driver::run(backend.as_mut(), opts, &mut None, &mut keep)?;
    let fields = keep
        .last
        .ok_or_else(|| FluidError::Invalid("no fields after the run".into()))?;
    Ok((keep.series, fields))
}

/// Runs a DFG case on a backend from `open`.
pub fn dfg(
    run: DfgRun,
    open: &mut crate::fluid::validate::Opener,
) -> Result<DfgResult, FluidError> {
    let mut text = run.case.scene_at(
        run.cells_per_d,
        run.u_lb,
        run.model,
        run.offset,
        run.boundary,
    );
    if !run.tuning.is_default() {
        text += &format!("[immersed]\n{}", run.tuning.scene_keys());
    }
    let file = crate::fluid::scene::SceneFile::parse(&text).map_err(FluidError::Invalid)?;
    let scene = file.build()?;
    let units = scene.units;
    let steps = units.time_to_steps(run.seconds).ceil() as u64;
    let (geometry, _, _) = file.geometry(&units)?;
    let t0 = std::time::Instant::now();
    let (mut series, fields) = run_case(&scene, steps, open)?;
    series.set_window_fraction(if run.case == Dfg::TwoD2 { 0.3 } else { 0.25 });
    let summary = series.summary().remove(0);
    // Front and back points: along the x axis through the centre, 1.5 and 2.5 cells outside
    // the surface, extrapolated linearly to it.
    let c = [
        (if run.case == Dfg::ThreeD1Z { 0.5 } else { 0.2 }) / units.dx
            + run.offset[0]
            + geometry.offset(0),
        0.2 / units.dx + run.offset[1] + geometry.offset(1),
        0.0,
    ];
    let cz = fields.lattice.nz as f64 / 2.0 - 0.5;
    let r = 0.05 / units.dx;
    let p = |dxs: f64| {
        let rho = density_at(&fields, [c[0] + dxs, c[1], cz]);
        units.pressure_to_si(rho)
    };
    let front = p(-(r + 1.5)) + 1.5 * (p(-(r + 1.5)) - p(-(r + 2.5)));
    let back = p(r + 1.5) + 1.5 * (p(r + 1.5) - p(r + 2.5));
    Ok(DfgResult {
        run,
        steps,
        wall_s: t0.elapsed().as_secs_f64(),
        cd: summary.mean_cd,
        cl: summary.mean_cl,
        max_cd: summary.max_cd,
        max_cl: summary.max_cl,
        strouhal: summary.strouhal.as_ref().ok().map(|s| s.value),
        dp: front - back,
    })
}

/// The Galilean check: a cylinder moving at `U` through fluid at rest must feel the drag of the
/// fixed cylinder in a uniform flow `U`, in the same box (lateral faces periodic, `width`
/// diameters apart; one periodic cell deep), Re 20 on `U`.
#[derive(Clone, Copy, Debug)]
pub struct Galilean {
    pub cells_per_d: u32,
    pub u_lb: f64,
    /// Lateral period (diameters).
    pub width: f64,
    /// Travel (diameters) before the averaging window, after the ramp.
    pub travel: f64,
    /// Averaging window (diameters travelled, a whole number of cells).
    pub window: f64,
    pub model: CollisionModel,
}

/// Mean drag coefficients of the two frames.
#[derive(Clone, Debug)]
pub struct GalileanResult {
    pub run: Galilean,
    pub steps: u64,
    pub moving_cd: f64,
    pub fixed_cd: f64,
    pub wall_s: f64,
}

impl Galilean {
    /// The scene of one frame: the moving cylinder starts `4 D` from the `-x` free-slip wall
    /// of a box `travel + window + 14 D` long and crosses it at `U` (ramped over `2 D` of
    /// travel); the fixed one sits where the moving one is in the middle of the averaging
    /// window, behind a uniform inlet, before a pressure outlet, the fluid starting at `U`.
    fn scene(&self, moving: bool) -> String {
        let d = 1.0;
        let length = self.travel + self.window + 14.0;
        let dx = d / self.cells_per_d as f64;
        // Linear ramp over T: the solid travels U T / 2 = 2 D meanwhile.
        let ramp_time = 4.0 * d;
        let (faces, x, motion) = if moving {
            (
                "x_min = { type = \"free-slip\" }\nx_max = { type = \"free-slip\" }\n",
                4.0,
                format!(
                    "motion = {{ type = \"translate\", velocity = [1.0, 0, 0], ramp = {ramp_time} }}\n"
                ),
            )
        } else {
            // Both x faces impose the velocity U, as the moving frame's walls do relative to
            // the cylinder; it sits where the moving one is in the middle of the window.
            // The fluid starts at U everywhere, as the moving frame's fluid at rest is seen
            // from the cylinder: a velocity inlet ramped up from rest sets off a slow
            // oscillation of the whole channel between inlet and outlet.
            (
                "x_min = { type = \"inlet\" }\nx_max = { type = \"outlet\" }\n",
                4.0 + 2.0 + self.travel + 0.5 * self.window,
                "[initial]\nvelocity = [1.0, 0, 0]\n".to_string(),
            )
        };
        format!(
            "name = \"galilean-{frame}\"\ncollision = \"{model}\"\n\
             [physical]\nlength = 1.0\nvelocity = 1.0\nviscosity = 0.05\ndensity = 1.0\n\
             [lattice]\nresolution = {n}\nvelocity = {u}\n\
             [domain]\nsize = [{length}, {width}, {dx}]\n\
             [faces]\n{faces}y_min = {{ type = \"periodic\" }}\ny_max = {{ type = \"periodic\" }}\n\
             z_min = {{ type = \"periodic\" }}\nz_max = {{ type = \"periodic\" }}\n\
             [[solids]]\nname = \"cylinder\"\n\
             shape = {{ type = \"cylinder\", radius = 0.5, length = {dx}, caps = false }}\n\
             position = [{x}, {y}, {z}]\n{motion}\
             [forces]\ndrag_axis = [{sign}1, 0, 0]\n",
            sign = if moving { "-" } else { "" },
            frame = if moving { "moving" } else { "fixed" },
            model = self.model.name(),
            n = self.cells_per_d,
            u = self.u_lb,
            width = self.width,
            y = 0.5 * self.width,
            z = 0.5 * dx,
        )
    }

    /// Runs both frames; the mean drag over the last `window` diameters of travel.
    pub fn run(
        &self,
        open: &mut crate::fluid::validate::Opener,
    ) -> Result<GalileanResult, FluidError> {
        let t0 = std::time::Instant::now();
        // Steps for 2 D of ramp (travelled in 4 D / U), `travel` and `window` diameters.
        let per_d = self.cells_per_d as f64 / self.u_lb;
        let window_steps = (self.window * per_d).round() as u64;
        let steps = ((4.0 + self.travel) * per_d).round() as u64 + window_steps;
        let mut cd = [0.0; 2];
        for (i, moving) in [true, false].into_iter().enumerate() {
            let file = crate::fluid::scene::SceneFile::parse(&self.scene(moving))
                .map_err(FluidError::Invalid)?;
            let scene = file.build()?;
            let (mut series, _) = run_case(&scene, steps, open)?;
            series.set_window_fraction(window_steps as f64 / (steps - 1) as f64);
            cd[i] = series.summary()[0].mean_cd;
        }
        Ok(GalileanResult {
            run: *self,
            steps,
            moving_cd: cd[0],
            fixed_cd: cd[1],
            wall_s: t0.elapsed().as_secs_f64(),
        })
    }
}

/// Reference values of the DFG benchmark (Schaefer & Turek 1996, the middle of each range).
pub const DFG_2D1_CD: f64 = 5.58;
pub const DFG_2D1_DP: f64 = 0.1174;
pub const DFG_2D2_CD_MAX: f64 = 3.23;
pub const DFG_2D2_CL_MAX: f64 = 1.00;
pub const DFG_2D2_ST: (f64, f64) = (0.295, 0.305);
pub const DFG_3D1Z_CD: f64 = 6.15;
/// The sharper drag coefficients of Bayraktar, Mierka & Turek, "Benchmark computations of 3D
/// laminar flow around a cylinder with CFX, OpenFOAM and FeatFlow", Int. J. Comput. Sci. Eng.
/// 7 (2012) 253-266: what the drag ladders converge to.
pub const REFERENCE_2D_1: f64 = 5.57954;
pub const REFERENCE_3D_1Z: f64 = 6.18533;

/// The immersed-boundary rows of `murmur fluid validate`: `quick` is the CPU subset (coarser
/// grids, looser targets, see docs/fluid/validation.md), otherwise the full set meant for a GPU. Every
/// row runs ACM-MRT.
pub fn run_all(
    open: &mut crate::fluid::validate::Opener,
    quick: bool,
    mut progress: impl FnMut(&crate::fluid::validate::CaseResult),
) -> Result<Vec<crate::fluid::validate::CaseResult>, FluidError> {
    use super::plan::{retraction_for, PASSES, RETRACTION};
    use crate::fluid::validate::CaseResult;
    let model = CollisionModel::AcmMrt;
    let mut out = Vec::new();
    let mut push = |r: CaseResult, out: &mut Vec<CaseResult>| {
        progress(&r);
        out.push(r);
    };
    // The immersed boundary's choices at the run's relaxation time, or the cut links.
    let grid = |d: u32, u: f64, tau: Option<f64>| match tau {
        Some(t) => format!(
            "D {d} cells, k {PASSES}, retraction {:.3}, u {u}",
            retraction_for(t)
        ),
        None => format!("D {d} cells, cut links, u {u}"),
    };
    let rel = |x: f64, want: f64| (x / want - 1.0).abs();

    // Couette flow (the case the fixed choices were made on).
    let c = Couette::STUDY;
    let t0 = std::time::Instant::now();
    let setup = c.setup(model)?;
    let mut b = open(&setup)?;
    let (l2, _) = c.run(b.as_mut())?;
    push(
        CaseResult {
            case: "Couette (immersed cylinders)".into(),
            model,
            grid: format!("radii 8, 20 cells, k {PASSES}, retraction {RETRACTION}, u 0.02"),
            steps: c.steps,
            metric: "L2 of u_theta",
            error: l2,
            target: 0.01,
            seconds: t0.elapsed().as_secs_f64(),
        },
        &mut out,
    );

    // DFG 2D-1.
    let (d, u, (t_cd, t_dp)) = if quick {
        (20, 0.05, (0.03, 0.05))
    } else {
        (40, 0.05, (0.02, 0.03))
    };
    let r = dfg(
        DfgRun {
            case: Dfg::TwoD1,
            cells_per_d: d,
            u_lb: u,
            seconds: 30.0,
            model,
            offset: [0.0; 2],
            boundary: SolidBoundary::Immersed,
            tuning: IbTuning::default(),
        },
        open,
    )?;
    push(
        CaseResult {
            case: "DFG 2D-1 C_D (5.58)".into(),
            model,
            grid: grid(d, u, Some(Dfg::TwoD1.tau(d, u))),
            steps: r.steps,
            metric: "|C_D / 5.58 - 1|",
            error: rel(r.cd, DFG_2D1_CD),
            target: t_cd,
            seconds: r.wall_s,
        },
        &mut out,
    );
    push(
        CaseResult {
            case: "DFG 2D-1 dp (0.1174 Pa)".into(),
            model,
            grid: grid(d, u, Some(Dfg::TwoD1.tau(d, u))),
            steps: r.steps,
            metric: "|dp / 0.1174 - 1|",
            error: rel(r.dp, DFG_2D1_DP),
            target: t_dp,
            seconds: 0.0,
        },
        &mut out,
    );

    // DFG 2D-1 with interpolated bounce-back at D 20.
    let ibb = |case: Dfg, open: &mut crate::fluid::validate::Opener| {
        dfg(
            DfgRun {
                case,
                cells_per_d: 20,
                u_lb: 0.05,
                seconds: 30.0,
                model,
                offset: [0.0; 2],
                boundary: SolidBoundary::InterpolatedBounceBack,
                tuning: IbTuning::default(),
            },
            open,
        )
    };
    let r = ibb(Dfg::TwoD1, open)?;
    push(
        CaseResult {
            case: format!("DFG 2D-1 C_D, bounce-back links ({REFERENCE_2D_1})"),
            model,
            grid: grid(20, 0.05, None),
            steps: r.steps,
            metric: "|C_D / 5.57954 - 1|",
            error: rel(r.cd, REFERENCE_2D_1),
            target: 0.01,
            seconds: r.wall_s,
        },
        &mut out,
    );

    // The Galilean check.
    let g = Galilean {
        cells_per_d: if quick { 8 } else { 16 },
        u_lb: 0.05,
        width: 20.0,
        travel: 30.0,
        window: 10.0,
        model,
    };
    let gr = g.run(open)?;
    push(
        CaseResult {
            case: format!(
                "Galilean: C_D moving {:.4}, fixed {:.4}",
                gr.moving_cd, gr.fixed_cd
            ),
            model,
            grid: grid(
                g.cells_per_d,
                g.u_lb,
                Some(murmur_common::lbm::Units::tau(
                    g.u_lb * g.cells_per_d as f64 / 20.0,
                )),
            ),
            steps: gr.steps,
            metric: "|C_D,moving / C_D,fixed - 1|",
            error: rel(gr.moving_cd, gr.fixed_cd),
            target: if quick { 0.05 } else { 0.02 },
            seconds: gr.wall_s,
        },
        &mut out,
    );
    if quick {
        return Ok(out);
    }

    // DFG 2D-2.
    let (d, u) = (40, 0.05);
    let r = dfg(
        DfgRun {
            case: Dfg::TwoD2,
            cells_per_d: d,
            u_lb: u,
            seconds: 12.0,
            model,
            offset: [0.0; 2],
            boundary: SolidBoundary::Immersed,
            tuning: IbTuning::default(),
        },
        open,
    )?;
    let st = r.strouhal.unwrap_or(f64::NAN);
    let st_err = if st >= DFG_2D2_ST.0 && st <= DFG_2D2_ST.1 {
        0.0
    } else {
        (st - 0.5 * (DFG_2D2_ST.0 + DFG_2D2_ST.1)).abs()
    };
    push(
        CaseResult {
            case: format!("DFG 2D-2 St {st:.4} (0.295-0.305)"),
            model,
            grid: grid(d, u, Some(Dfg::TwoD2.tau(d, u))),
            steps: r.steps,
            metric: "distance outside 0.295-0.305",
            error: st_err,
            target: 0.0,
            seconds: r.wall_s,
        },
        &mut out,
    );
    push(
        CaseResult {
            case: "DFG 2D-2 max C_D (3.23)".into(),
            model,
            grid: grid(d, u, Some(Dfg::TwoD2.tau(d, u))),
            steps: r.steps,
            metric: "|max C_D / 3.23 - 1|",
            error: rel(r.max_cd, DFG_2D2_CD_MAX),
            target: 0.03,
            seconds: 0.0,
        },
        &mut out,
    );
    push(
        CaseResult {
            case: "DFG 2D-2 max C_L (1.00)".into(),
            model,
            grid: grid(d, u, Some(Dfg::TwoD2.tau(d, u))),
            steps: r.steps,
            metric: "|max C_L / 1.00 - 1|",
            error: rel(r.max_cl, DFG_2D2_CL_MAX),
            target: 0.05,
            seconds: 0.0,
        },
        &mut out,
    );

    // DFG 3D-1Z.
    let (d, u) = (20, 0.05);
    let r = dfg(
        DfgRun {
            case: Dfg::ThreeD1Z,
            cells_per_d: d,
            u_lb: u,
            seconds: 30.0,
            model,
            offset: [0.0; 2],
            boundary: SolidBoundary::Immersed,
            tuning: IbTuning::default(),
        },
        open,
    )?;
    push(
        CaseResult {
            case: "DFG 3D-1Z C_D (6.15)".into(),
            model,
            grid: grid(d, u, Some(Dfg::ThreeD1Z.tau(d, u))),
            steps: r.steps,
            metric: "|C_D / 6.15 - 1|",
            error: rel(r.cd, DFG_3D1Z_CD),
            target: 0.03,
            seconds: r.wall_s,
        },
        &mut out,
    );
    let r = ibb(Dfg::ThreeD1Z, open)?;
    push(
        CaseResult {
            case: format!("DFG 3D-1Z C_D, bounce-back links ({REFERENCE_3D_1Z})"),
            model,
            grid: grid(20, 0.05, None),
            steps: r.steps,
            metric: "|C_D / 6.18533 - 1|",
            error: rel(r.cd, REFERENCE_3D_1Z),
            target: 0.01,
            seconds: r.wall_s,
        },
        &mut out,
    );
    Ok(out)
}
