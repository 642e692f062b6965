//! From a scene file to a [`Scene`]: units, the domain and its faces, parameters, the initial
//! state, force output, health bounds and the immersed solids, every value checked on the way.

use super::file::{FaceConfig, Profile, SceneFile, SolidBoundary, FACE_KEYS};
use super::geometry::{Boundary, Geometry};
use super::{
    check_rates, check_stability, solids, ForceSettings, Health, Scene, MAX_MACH, WARN_MACH,
};
use crate::fluid::ib::shapes::{norm, unit};
use crate::fluid::ib::Motion;
use crate::fluid::walls::Walls;
use crate::fluid::FluidError;
use murmur_common::lbm::init::ChannelStart;
use murmur_common::lbm::{Initial, Rates, Units};

const AXES: [&str; 3] = ["x", "y", "z"];

fn invalid(message: String) -> FluidError {
    FluidError::Invalid(message)
}

fn finite_vec<const N: usize>(what: &str, v: [f64; N]) -> Result<(), FluidError> {
    if v.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(invalid(format!("{what} must be finite, got {v:?}")))
    }
}

/// Refuses a boundary or initial speed (m/s) whose lattice Mach number exceeds [`MAX_MACH`];
/// warns above [`WARN_MACH`].
fn check_speed(
    what: &str,
    speed: f64,
    units: &Units,
    warnings: &mut Vec<String>,
) -> Result<(), FluidError> {
    let mach = Units::mach(units.velocity_to_lattice(speed));
    if mach > MAX_MACH {
        return Err(invalid(format!(
            "{what}: {speed:.4} m/s is lattice Mach {mach:.3} > {MAX_MACH}: compressibility \
             errors and instability; lower it or lattice.velocity"
        )));
    }
    if mach > WARN_MACH {
        warnings.push(format!(
            "{what}: {speed:.4} m/s is lattice Mach {mach:.3} > {WARN_MACH}: expect \
             compressibility errors"
        ));
    }
    Ok(())
}

impl SceneFile {
    #[doc(hidden)]
    /// The unit conversion, after checking the physical scales and the resolution.
    pub fn units(&self) -> Result<Units, FluidError> {
        let ph = &self.physical;
        for (name, v) in [
            ("physical.length", ph.length),
            ("physical.velocity", ph.velocity),
            ("physical.viscosity", ph.viscosity),
            ("physical.density", ph.density),
            ("lattice.velocity", self.lattice.velocity),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(invalid(format!(
                    "{name} must be a finite number > 0, got {v}"
                )));
            }
        }
        let n = self.lattice.resolution;
        if n < 4 {
            return Err(invalid(format!(
                "lattice.resolution must be at least 4 cells, got {n}"
            )));
        }
        Ok(Units::from_scales(
            ph.length,
            n as f64,
            ph.velocity,
            self.lattice.velocity,
            ph.density,
        ))
    }

    /// The inlets' gust in lattice time (none when no inlet gusts); every gusting inlet must
    /// have the same one.
    pub fn gust(&self, units: &Units) -> Result<Option<crate::fluid::inlet::Gust>, FluidError> {
        let f = &self.faces;
        let faces = [&f.x_min, &f.x_max, &f.y_min, &f.y_max, &f.z_min, &f.z_max];
        let mut found: Option<(usize, &super::file::GustConfig)> = None;
        for (i, face) in faces.into_iter().enumerate() {
            let FaceConfig::Inlet { gust: Some(g), .. } = face else {
                continue;
            };
            let key = format!("faces.{}.gust", FACE_KEYS[i]);
            let fine = |v: f64| v.is_finite() && v >= 0.0;
            if !(fine(g.intensity) && g.intensity <= 1.0) {
                return Err(invalid(format!(
                    "{key}.intensity must be within 0..=1, got {}",
                    g.intensity
                )));
            }
            if !(fine(g.time_scale) && g.time_scale > 0.0) {
                return Err(invalid(format!(
                    "{key}.time_scale must be a time > 0 s, got {}",
                    g.time_scale
                )));
            }
            match found {
                Some((other, h)) if h != g => {
                    return Err(invalid(format!(
                        "{key} differs from faces.{}.gust: every inlet gusts together",
                        FACE_KEYS[other]
                    )))
                }
                _ => found = Some((i, g)),
            }
        }
        Ok(found.map(|(_, g)| crate::fluid::inlet::Gust {
            intensity: g.intensity,
            time_scale: units.time_to_steps(g.time_scale),
            seed: g.seed,
        }))
    }

    #[doc(hidden)]
    /// The domain and its faces in lattice units, the warnings they raise, and the inlet ramp
    /// (seconds, 0 for none).
    pub fn geometry(&self, units: &Units) -> Result<(Geometry, Vec<String>, f64), FluidError> {
        let mut warnings = Vec::new();
        let fluid = match (self.domain.size, self.domain.cells) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "domain: give its size (m) or its cells, not both".into(),
                ))
            }
            (None, None) => return Err(invalid("domain: give its size (m) or its cells".into())),
            (None, Some(cells)) => cells,
            (Some(size), None) => {
                let mut n = [0u32; 3];
                for a in 0..3 {
                    let cells = size[a] / units.dx;
                    if !(cells.is_finite() && cells >= 0.5 && cells < u32::MAX as f64 / 2.0) {
                        return Err(invalid(format!(
                            "domain.size: {} = {} m is {cells} cells of dx = {:.4e} m; it must \
                             hold at least one cell",
                            AXES[a], size[a], units.dx
                        )));
                    }
                    let rounded = cells.round();
                    if (cells - rounded).abs() > 1e-3 {
                        warnings.push(format!(
                            "domain.size: {} = {} m is {cells:.3} cells of dx = {:.4e} m; using \
                             {rounded}",
                            AXES[a], size[a], units.dx
                        ));
                    }
                    n[a] = rounded as u32;
                }
                n
            }
        };
        let configs = self.faces.all();
        let periodic = [0, 1, 2].map(|a| matches!(configs[2 * a], FaceConfig::Periodic {}));
        for a in 0..3 {
            if periodic[a] != matches!(configs[2 * a + 1], FaceConfig::Periodic {}) {
                let (p, other) = if periodic[a] {
                    (2 * a, 2 * a + 1)
                } else {
                    (2 * a + 1, 2 * a)
                };
                return Err(invalid(format!(
                    "faces.{} is periodic but faces.{} is not: periodic must be on both faces \
                     of an axis or on neither",
                    FACE_KEYS[p], FACE_KEYS[other]
                )));
            }
        }
        let mut faces = [Boundary::Wall; 6];
        let mut ramp: Option<(usize, f64)> = None;
        for (i, config) in configs.into_iter().enumerate() {
            let key = format!("faces.{}", FACE_KEYS[i]);
            let axis = i / 2;
            let inward = if i % 2 == 0 { 1.0 } else { -1.0 };
            let lattice = |v: [f64; 3]| v.map(|c| units.velocity_to_lattice(c) as f32);
            faces[i] = match config {
                FaceConfig::Periodic {} => Boundary::Periodic,
                FaceConfig::Wall {} => Boundary::Wall,
                FaceConfig::FreeSlip {} => Boundary::FreeSlip,
                FaceConfig::MovingWall { velocity } => {
                    finite_vec(&format!("{key}.velocity"), *velocity)?;
                    if velocity[axis] != 0.0 {
                        return Err(invalid(format!(
                            "{key}: a moving wall moves in its own plane, but its velocity has \
                             {} component {} m/s",
                            AXES[axis], velocity[axis]
                        )));
                    }
                    check_speed(&key, norm(*velocity), units, &mut warnings)?;
                    Boundary::Moving(lattice(*velocity))
                }
                FaceConfig::Inlet {
                    velocity,
                    profile,
                    ramp: seconds,
                    ..
                } => {
                    let mut v = [0.0; 3];
                    v[axis] = inward * self.physical.velocity;
                    let v = velocity.unwrap_or(v);
                    finite_vec(&format!("{key}.velocity"), v)?;
                    if v[axis] * inward <= 0.0 {
                        return Err(invalid(format!(
                            "{key}: an inlet's velocity must point into the domain ({}{} here), \
                             got {v:?} m/s",
                            if inward > 0.0 { "+" } else { "-" },
                            AXES[axis]
                        )));
                    }
                    check_speed(&key, norm(v), units, &mut warnings)?;
                    let across: Vec<usize> =
                        (0..3).filter(|&t| t != axis && !periodic[t]).collect();
                    let bits = across.iter().fold(0u32, |b, &t| b | 1 << t);
                    let names = || {
                        (0..3)
                            .filter(|&t| t != axis)
                            .map(|t| AXES[t])
                            .collect::<Vec<_>>()
                            .join(" and ")
                    };
                    let parabolic = match profile {
                        Profile::Uniform => 0,
                        Profile::Parabolic if bits == 0 => {
                            return Err(invalid(format!(
                                "{key}: a parabolic profile needs walls across the face, but {} \
                                 are periodic",
                                names()
                            )))
                        }
                        Profile::Dfg3d if across.len() != 2 => {
                            return Err(invalid(format!(
                                "{key}: the dfg-3d profile needs walls on both axes across the \
                                 face ({}), but one is periodic",
                                names()
                            )))
                        }
                        Profile::Parabolic | Profile::Dfg3d => bits,
                    };
                    if !(seconds.is_finite() && *seconds >= 0.0) {
                        return Err(invalid(format!(
                            "{key}.ramp must be a time >= 0 s, got {seconds}"
                        )));
                    }
                    match ramp {
                        Some((other, r)) if r != *seconds => {
                            return Err(invalid(format!(
                                "{key}.ramp = {seconds} s differs from faces.{}.ramp = {r} s: \
                                 every inlet ramps up together",
                                FACE_KEYS[other]
                            )))
                        }
                        _ => ramp = Some((i, *seconds)),
                    }
                    Boundary::Inlet {
                        velocity: lattice(v),
                        parabolic,
                    }
                }
                FaceConfig::Outlet { density, .. } => {
                    let rho = density.unwrap_or(self.physical.density);
                    if !(rho.is_finite() && rho > 0.0) {
                        return Err(invalid(format!(
                            "{key}.density must be a finite number > 0, got {rho}"
                        )));
                    }
                    Boundary::Outlet((rho / self.physical.density) as f32)
                }
            };
        }
        let geometry = Geometry { fluid, faces };
        geometry.check()?;
        Ok((geometry, warnings, ramp.map_or(0.0, |(_, r)| r)))
    }

    /// Marks the outlet layer (`faces.*.sponge`): the fluid cells within the thickness of the
    /// outlet's boundary layer get [`SPONGE`](murmur_common::lbm::boundary::SPONGE), and the parameters its axis and ramp.
    fn outlet_layer(
        &self,
        units: &Units,
        setup: &mut crate::fluid::Setup,
    ) -> Result<(), FluidError> {
        let mut found = None;
        for (i, face) in self.faces.all().iter().enumerate() {
            if let FaceConfig::Outlet {
                sponge: Some(t), ..
            } = face
            {
                if !(t.is_finite() && *t > 0.0) {
                    return Err(invalid(format!(
                        "faces.{}.sponge must be a finite thickness > 0 (m), got {t}",
                        FACE_KEYS[i]
                    )));
                }
                if found.is_some() {
                    return Err(invalid(
                        "only one outlet may have an outlet layer (sponge)".to_string(),
                    ));
                }
                found = Some((i, *t));
            }
        }
        let Some((face, thickness)) = found else {
            return Ok(());
        };
        let l = setup.lattice();
        let axis = face / 2;
        let n = [l.nx, l.ny, l.nz][axis];
        let cells = (thickness / units.dx).round().max(1.0) as u32;
        if cells + 2 >= n {
            return Err(invalid(format!(
                "faces.{}.sponge = {thickness} m is {cells} cells, more than the domain holds",
                FACE_KEYS[face]
            )));
        }
        setup.mark_outlet_layer(face, cells);
        Ok(())
    }

    #[doc(hidden)]
    /// The lattice's size in cells (x, y, z), without building anything: what the memory
    /// checks count before the setup's arrays exist.
    pub fn dims(&self) -> Result<[u32; 3], FluidError> {
        let units = self.units()?;
        self.geometry(&units)?.0.dims()
    }

    #[doc(hidden)]
    /// Converts to lattice units, checks stability and every value, and builds the setup and
    /// its solids.
    pub fn build(&self) -> Result<Scene, FluidError> {
        let units = self.units()?;
        let ph = &self.physical;
        let u = units.velocity_to_lattice(ph.velocity);
        let nu = units.viscosity_to_lattice(ph.viscosity);
        let mut rates = Rates::from_viscosity(nu as f32);
        rates.bulk = self.lattice.bulk_rate;
        rates.high = self.lattice.high_rate;
        rates.lambda = self.lattice.acm_lambda;
        let mut warnings = check_stability(nu, u, self.collision)?;
        check_rates(&rates)?;
        let (geometry, w, ramp) = self.geometry(&units)?;
        warnings.extend(w);
        let mut setup = geometry.setup(rates, self.collision)?;
        (setup.params.smagorinsky, setup.params.wale) = self.les_factors()?;

        let a = self.body_force.acceleration;
        finite_vec("body_force.acceleration", a)?;
        let force = a.map(|c| units.acceleration_to_lattice(c) as f32);
        if force != [0.0; 3] {
            setup.params.force = force;
            setup.params.has_force = 1;
        }
        self.initial_state(&units, &geometry, &mut setup, &mut warnings)?;
        self.outlet_layer(&units, &mut setup)?;

        let forces = self.force_settings(&units)?;
        let health = Health {
            max_density_deviation: self.health.max_density_deviation,
            max_mach: self.health.max_mach,
        };
        for (name, v) in [
            ("health.max_density_deviation", health.max_density_deviation),
            ("health.max_mach", health.max_mach),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(invalid(format!(
                    "{name} must be a finite number > 0, got {v}"
                )));
            }
        }

        self.immersed
            .tuning()
            .check()
            .map_err(|e| invalid(format!("immersed: {e}")))?;
        let built = solids::build(self, &units, &geometry, &forces)?;
        let mut info = Vec::new();
        let mut fixed = Vec::new();
        for (i, (solid, line)) in built.solids.into_iter().zip(built.info).enumerate() {
            match self.solids[i].boundary {
                SolidBoundary::Immersed => {
                    setup.immersed.solids.push(solid);
                    info.push(line);
                }
                SolidBoundary::InterpolatedBounceBack => {
                    if !matches!(solid.motion, Motion::Fixed) {
                        return Err(invalid(format!(
                            "solids[{i}] ({}): boundary = \"interpolated-bounce-back\" is for \
                             fixed solids; a moving solid takes boundary = \"immersed\"",
                            solid.name
                        )));
                    }
                    fixed.push((i, solid));
                }
            }
        }
        if !fixed.is_empty() {
            let (index, solids): (Vec<usize>, Vec<_>) = fixed.into_iter().unzip();
            let names: Vec<String> = solids.iter().map(|s| s.name.clone()).collect();
            let periodic = geometry.periodic();
            let walls = Walls::build(solids, setup.lattice(), periodic, &mut setup.flags)
                .map_err(|(k, e)| invalid(format!("solids[{}] ({}): {e}", index[k], names[k])))?;
            info.extend(walls.info());
            warnings.extend(walls.warnings());
            setup.walls = walls;
        }
        setup.immersed.spread = self.spread()?;
        setup.immersed.passes = self.immersed.tuning().passes();
        warnings.extend(built.warnings);

        if self.run.output_every == Some(0) {
            return Err(invalid(
                "run.output_every must be at least 1 (leave it out to write only at the end)"
                    .into(),
            ));
        }
        if self.run.check_every == 0 {
            warnings.push("run.check_every = 0: the health check runs on output steps only".into());
        }
        Ok(Scene {
            file: self.clone(),
            units,
            setup,
            warnings,
            info,
            forces,
            health,
            inlet: crate::fluid::inlet::InletSchedule {
                ramp_steps: units.time_to_steps(ramp),
                gust: self.gust(&units)?,
            },
        })
    }

    /// The subgrid models' factors for the kernels, Smagorinsky's and WALE's
    /// ([`murmur_common::lbm::les::factor`], [`murmur_common::lbm::wale::factor`]; 0 for a model
    /// not chosen).
    fn les_factors(&self) -> Result<(f32, f32), FluidError> {
        use super::file::Les;
        let (cs, cw) = (self.lattice.smagorinsky, self.lattice.wale);
        match self.lattice.les {
            Les::None => Ok((0.0, 0.0)),
            Les::Smagorinsky if cs.is_finite() && cs > 0.0 && cs <= 0.5 => {
                Ok((murmur_common::lbm::les::factor(cs), 0.0))
            }
            Les::Smagorinsky => Err(invalid(format!(
                "lattice.smagorinsky must be a number in (0, 0.5] (0.1 to 0.2 are usual), got {cs}"
            ))),
            Les::Wale if cw.is_finite() && cw > 0.0 && cw <= 1.0 => {
                Ok((0.0, murmur_common::lbm::wale::factor(cw)))
            }
            Les::Wale => Err(invalid(format!(
                "lattice.wale must be a number in (0, 1] (0.325 to 0.6 are usual), got {cw}"
            ))),
        }
    }

    /// Writes the initial velocity (uniform plus the Taylor-Green vortex) into the fluid cells.
    fn initial_state(
        &self,
        units: &Units,
        geometry: &Geometry,
        setup: &mut crate::fluid::Setup,
        warnings: &mut Vec<String>,
    ) -> Result<(), FluidError> {
        let init = &self.initial;
        finite_vec("initial.velocity", init.velocity)?;
        let mut peak = norm(init.velocity);
        let vortex = match &init.taylor_green {
            None => None,
            Some(tg) => {
                let wavelength = tg.wavelength.unwrap_or(self.physical.length);
                if !(tg.amplitude.is_finite() && wavelength.is_finite() && wavelength > 0.0) {
                    return Err(invalid(format!(
                        "initial.taylor_green: amplitude must be finite and wavelength > 0, got \
                         {} m/s and {wavelength} m",
                        tg.amplitude
                    )));
                }
                peak += tg.amplitude.abs();
                let k = 2.0 * std::f64::consts::PI / wavelength;
                Some((units.velocity_to_lattice(tg.amplitude), k))
            }
        };
        let channel = match &init.channel {
            None => ChannelStart::NONE,
            Some(c) => self.channel_start(c, units, geometry)?,
        };
        peak += units.velocity_to_si(channel.peak() as f64);
        check_speed("initial velocity", peak, units, warnings)?;
        if peak == 0.0 {
            return Ok(());
        }
        let v = init.velocity.map(|c| units.velocity_to_lattice(c) as f32);
        setup.initial = match vortex {
            None => Initial::uniform(v),
            // The vortex's phase is measured from the domain's origin: lattice coordinate
            // `offset` along each axis.
            Some((amp, k)) => Initial {
                velocity: v,
                amplitude: amp as f32,
                k: (k * units.dx) as f32,
                offset: [geometry.offset(0) as f32, geometry.offset(1) as f32],
                _pad: 0,
                channel: ChannelStart::NONE,
            },
        };
        setup.initial.channel = channel;
        Ok(())
    }

    /// `initial.channel` in lattice units: the flow along x between no-slip walls across y,
    /// periodic along x and z (one line on error). The streaks' wavenumbers are the whole
    /// multiples of the box's nearest to spacings of 100 wall units across the span and 500
    /// along the flow.
    fn channel_start(
        &self,
        c: &super::choices::ChannelStartConfig,
        units: &Units,
        geometry: &Geometry,
    ) -> Result<ChannelStart, FluidError> {
        let walls = matches!(
            (&self.faces.y_min, &self.faces.y_max),
            (FaceConfig::Wall {}, FaceConfig::Wall {})
        );
        let periodic = geometry.periodic();
        if !(walls && periodic[0] && periodic[2]) {
            return Err(invalid(
                "initial.channel: the channel runs along x between no-slip walls at y_min and                  y_max, periodic along x and z: set those faces"
                    .into(),
            ));
        }
        let centre = c.centre_velocity.unwrap_or(18.3 * c.friction_velocity);
        let ok = |v: f64| v.is_finite() && v >= 0.0;
        if !(c.friction_velocity.is_finite()
            && c.friction_velocity > 0.0
            && centre.is_finite()
            && centre > 0.0
            && ok(c.streaks)
            && ok(c.sway)
            && ok(c.noise))
        {
            return Err(invalid(format!(
                "initial.channel: friction_velocity and centre_velocity must be positive,                  streaks, sway and noise finite and not negative, got {} m/s, {centre} m/s, {}, \
                 {}, {}",
                c.friction_velocity, c.streaks, c.sway, c.noise
            )));
        }
        let u_tau = units.velocity_to_lattice(c.friction_velocity);
        // The viscous length in cells.
        let nu = units.viscosity_to_lattice(self.physical.viscosity);
        let (lo, hi) = geometry.walls(1);
        let span = |axis: usize| (geometry.walls(axis).1 - geometry.walls(axis).0).max(1.0);
        // Whole periods of about `plus` wall units along `axis`.
        let periods = |axis: usize, plus: f64| (span(axis) / (plus * nu / u_tau)).round().max(1.0);
        let wave = |axis: usize, plus: f64| {
            (2.0 * std::f64::consts::PI * periods(axis, plus) / span(axis)) as f32
        };
        // The noise's nodes about 20 wall units (at least 2 cells) apart.
        let node = (20.0 * nu / u_tau).max(2.0);
        let nodes = [0, 2].map(|a| (span(a) / node).round().max(1.0));
        Ok(ChannelStart {
            centre: units.velocity_to_lattice(centre) as f32,
            half: ((hi - lo) / 2.0) as f32,
            wall: lo as f32,
            streak: (c.streaks * u_tau) as f32,
            sway: (c.sway * u_tau) as f32,
            beta: wave(2, 100.0),
            alpha: wave(0, 500.0),
            noise: (c.noise * u_tau) as f32,
            spacing: [
                (span(0) / nodes[0]) as f32,
                node as f32,
                (span(2) / nodes[1]) as f32,
            ],
            nodes: nodes.map(|n| n as u32),
        })
    }

    /// The force output in lattice units.
    fn force_settings(&self, units: &Units) -> Result<ForceSettings, FluidError> {
        let f = &self.forces;
        let reference = f.reference_velocity.unwrap_or(self.physical.velocity);
        if !(reference.is_finite() && reference > 0.0) {
            return Err(invalid(format!(
                "forces.reference_velocity must be a finite number > 0, got {reference}"
            )));
        }
        let drag = unit("forces.drag_axis", f.drag_axis).map_err(invalid)?;
        let lift = unit("forces.lift_axis", f.lift_axis).map_err(invalid)?;
        let dot: f64 = (0..3).map(|a| drag[a] * lift[a]).sum();
        if dot.abs() > 1e-6 {
            return Err(invalid(format!(
                "forces.lift_axis {:?} must be perpendicular to forces.drag_axis {:?}",
                f.lift_axis, f.drag_axis
            )));
        }
        if f.every == 0 {
            return Err(invalid("forces.every must be at least 1".into()));
        }
        Ok(ForceSettings {
            reference_velocity: units.velocity_to_lattice(reference),
            drag_axis: drag,
            lift_axis: lift,
            every: f.every,
        })
    }
}

impl SceneFile {
    #[doc(hidden)]
    /// The immersed boundary's spreading of `[immersed]` (the default when it names none).
    pub fn spread(&self) -> Result<crate::fluid::ib::spread::IbSpread, FluidError> {
        use super::file::SpreadName;
        use crate::fluid::ib::spread::IbSpread;
        let c = &self.immersed;
        let name = match c.spread {
            None if c.block.is_some() => "blocks",
            None => return Ok(IbSpread::default()),
            Some(SpreadName::Scatter) => "scatter",
            Some(SpreadName::Binned) => "binned",
            Some(SpreadName::Gather) => "gather",
            Some(SpreadName::Blocks) => "blocks",
        };
        IbSpread::parse(name, c.block).map_err(|e| invalid(format!("immersed: {e}")))
    }
}
